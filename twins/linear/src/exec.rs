//! Execution: apollo-compiler's executor drives the document; these resolvers answer each
//! field from the world. One resolver serves every entity type: scalars come from the
//! entity's field, relations from `<field>Id` / `<singular>Ids`, connections from children
//! whose foreign key points back (`Issue.teamId` for `Team.issues`), with Linear's
//! pagination, filters, ordering and archive rules.

use std::cell::RefCell;

use apollo_compiler::resolvers::FieldError;
use pome_graphql::exec::{Info as ResolveInfo, Out as ResolvedValue, Resolve as ObjectValue};
use pome_twin_sdk::{Change, Delivery};
use serde_json::{Map, Value, json};

use crate::filter;
use crate::gql;
use crate::model::{Entity, Inner, priority_label, slug};

/// What a request did besides its answer.
#[derive(Default)]
pub struct Effects {
    pub changes: Vec<Change>,
    pub deliveries: Vec<Delivery>,
    pub unsupported: Vec<String>,
    /// Extensions for error messages raised by resolvers.
    pub error_ext: Vec<(String, Value)>,
    pub actions: Vec<String>,
}

pub struct Ctx<'w> {
    pub w: RefCell<&'w mut Inner>,
    pub base_url: String,
    pub now: String,
    pub fx: RefCell<Effects>,
    /// Whether the answer read the clock or wrote to the world (then it is not kept).
    pub volatile: std::cell::Cell<bool>,
}

pub use pome_graphql::json::{from_json, from_json_ref, map_to_json, to_json};

fn leaf<'a>(v: Value) -> ResolvedValue<'a> {
    ResolvedValue::Leaf(v)
}

/// Numbers as the field's scalar wants them: `Float` fields answer floats, `Int` fields
/// integers (the executor checks result types strictly).
pub fn coerce(v: Value, named: &str) -> Value {
    match (v, named) {
        (Value::Array(a), _) => Value::Array(a.into_iter().map(|x| coerce(x, named)).collect()),
        (Value::Number(n), "Float") => n.as_f64().map(|f| json!(f)).unwrap_or(Value::Number(n)),
        (Value::Number(n), "Int") => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && n.as_i64().is_none() => json!(f as i64),
            _ => Value::Number(n),
        },
        (v, _) => v,
    }
}

fn typed<'a>(v: Value, ty: &apollo_compiler::schema::Type) -> ResolvedValue<'a> {
    leaf(coerce(v, ty.inner_named_type().as_str()))
}

impl Ctx<'_> {
    /// A field error with Linear's extensions.
    pub fn error(&self, message: String, ext: Value) -> FieldError {
        self.fx.borrow_mut().error_ext.push((message.clone(), ext));
        FieldError { message }
    }

    pub fn invalid_input(&self, message: String, user: &str) -> FieldError {
        self.error(
            message,
            json!({"type": "invalid input", "code": "INVALID_INPUT", "statusCode": 400, "userError": true, "userPresentableMessage": user}),
        )
    }

    pub fn not_found(&self, ty: &str) -> FieldError {
        self.invalid_input(format!("Entity not found: {ty}"), &format!("Could not find referenced {ty}."))
    }

    pub fn unsupported(&self, coord: &str) -> FieldError {
        self.fx.borrow_mut().unsupported.push(coord.to_string());
        self.error(
            format!("{coord} is not served by the pome Linear twin"),
            json!({"type": "other", "code": "UNSUPPORTED", "userError": false, "fidelity": "unsupported", "userPresentableMessage": format!("The pome Linear twin does not serve {coord}.")}),
        )
    }
}

/// A concrete type for `id` among the types `named` may be.
pub fn find_typed(w: &Inner, named: &str, id: &str) -> Option<String> {
    find_type(w, named, id).map(String::from)
}

/// [`find_typed`], naming the type by its row in the schema tables.
pub fn find_type(w: &Inner, named: &str, id: &str) -> Option<&'static str> {
    find_type_in(w, crate::tables::ty(named)?, id)
}

/// [`find_type`] for a type already found in the tables (an issue found by its `ENG-123`
/// identifier too).
pub fn find_type_in(w: &Inner, t: &'static crate::tables::TypeRow, id: &str) -> Option<&'static str> {
    if t.name() == "Issue" {
        return w.issue_id(id).map(|_| "Issue");
    }
    find_entity_in(w, t, id).map(|(t, _)| t)
}

pub use pome_graphql::exec::singular;

pub fn lcfirst(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_lowercase().chain(c).collect(),
        None => String::new(),
    }
}

/// The value a field takes on an entity: computed fields first, then the stored one.
pub fn field_value(w: &Inner, base_url: &str, ty: &str, id: &str, e: &Entity, name: &str) -> Option<Value> {
    field_ref(w, base_url, ty, id, e, name).map(std::borrow::Cow::into_owned)
}

/// [`field_value`], the stored value borrowed rather than copied.
fn field_ref<'e>(w: &Inner, base_url: &str, ty: &str, id: &str, e: &'e Entity, name: &str) -> Option<std::borrow::Cow<'e, Value>> {
    if let Some(c) = maybe_computed(name).then(|| computed_value(w, base_url, ty, id, e, name)).flatten() {
        return Some(std::borrow::Cow::Owned(c));
    }
    crate::model::field(e, name).map(std::borrow::Cow::Borrowed)
}

/// [`coerce`]d `v`, written as JSON without copying it.
pub fn write_coerced(out: &mut Vec<u8>, v: &Value, named: &str) {
    match (v, named) {
        (Value::Array(a), _) => {
            out.push(b'[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_coerced(out, x, named);
            }
            out.push(b']');
        }
        (Value::Number(_), "Float" | "Int") => serde_json::to_writer(out, &coerce(v.clone(), named)).expect("JSON values serialise"),
        _ => serde_json::to_writer(out, v).expect("JSON values serialise"),
    }
}

/// Whether [`computed_value`] may compute field `name` on some type: most fields are stored,
/// and this one comparison spares them its long match on type and name.
pub(crate) fn maybe_computed(name: &str) -> bool {
    matches!(
        name,
        "id" | "url" | "priorityLabel" | "searchableContent" | "slugId" | "isMe" | "displayName" | "progress" | "scope" | "hasBlockingRelations"
            | "hasBlockedByRelations" | "hasRelatedRelations" | "hasDuplicateRelations" | "isActive" | "isFuture" | "isPast" | "isNext" | "isPrevious"
            | "status" | "issueCount" | "createdIssueCount" | "userCount" | "reactionData" | "customerTicketCount" | "commentCount" | "customerCount"
            | "approximateNeedCount" | "modelName" | "visibility" | "ledInitiativeCount"
            | "cycleCalenderUrl" | "scopeHistory" | "completedScopeHistory" | "inProgressScopeHistory" | "issueCountHistory" | "completedIssueCountHistory" | "isStale"
    )
}

/// The fields computed from others (`url`, `priorityLabel`, `id`…), if `name` is one.
pub(crate) fn computed_value(w: &Inner, base_url: &str, ty: &str, id: &str, e: &Entity, name: &str) -> Option<Value> {
    let s = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    match (ty, name) {
        (_, "id") => Some(Value::String(id.to_string())),
        ("Issue", "url") => Some(Value::String(format!("{base_url}/{}/issue/{}/{}", w.org_url_key(), s("identifier"), slug(&s("title"))))),
        ("Issue", "priorityLabel") => Some(Value::String(priority_label(e.get("priority").and_then(Value::as_f64).unwrap_or(0.0) as i64).into())),
        ("Issue", "searchableContent") => Some(Value::String(format!("{} {}", s("title"), s("description")))),
        ("Comment", "url") => {
            let issue = s("issueId");
            let ident = w.str_field("Issue", &issue, "identifier").unwrap_or("").to_string();
            Some(Value::String(format!("{base_url}/{}/issue/{ident}#comment-{}", w.org_url_key(), &id[..id.len().min(8)])))
        }
        // `…/project/launch-5c1a3b9e2f0d`: the name's slug, then the short id.
        ("Project" | "Document" | "Initiative", "url") => {
            let kind = lcfirst(ty);
            let title = if ty == "Document" { s("title") } else { s("name") };
            let short = Some(s("slugId")).filter(|x| !x.is_empty()).unwrap_or_else(|| crate::model::slug_id(id));
            Some(Value::String(format!("{base_url}/{}/{kind}/{}", w.org_url_key(), [slug(&title), short].iter().filter(|x| !x.is_empty()).cloned().collect::<Vec<_>>().join("-"))))
        }
        // An update is shown on its project's (initiative's) updates page, anchored by its own
        // short id.
        ("ProjectUpdate" | "InitiativeUpdate", "url") => {
            let (of, kind) = if ty == "ProjectUpdate" { ("Project", "project") } else { ("Initiative", "initiative") };
            let project = s(if ty == "ProjectUpdate" { "projectId" } else { "initiativeId" });
            let p = w.get(of, &project)?;
            let name = p.get("name").and_then(Value::as_str).unwrap_or("");
            let short = p.get("slugId").and_then(Value::as_str).map(String::from).unwrap_or_else(|| crate::model::slug_id(&project));
            let update = Some(s("slugId")).filter(|x| !x.is_empty()).unwrap_or_else(|| crate::model::slug_id(id));
            Some(Value::String(format!("{base_url}/{}/{kind}/{}/updates#{kind}-update-{update}", w.org_url_key(), [slug(name), short].iter().filter(|x| !x.is_empty()).cloned().collect::<Vec<_>>().join("-"))))
        }
        ("Project" | "Document" | "Initiative", "slugId") => Some(Value::String(Some(s("slugId")).filter(|x| !x.is_empty()).unwrap_or_else(|| crate::model::slug_id(id)))),
        ("User", "isMe") => Some(Value::Bool(id == w.viewer)),
        ("User", "url") => Some(Value::String(format!("{base_url}/{}/profiles/{}", w.org_url_key(), s("displayName")))),
        ("Team", "displayName") => Some(Value::String(s("name"))),
        ("Project", "priorityLabel") => Some(Value::String(priority_label(e.get("priority").and_then(Value::as_f64).unwrap_or(0.0) as i64).into())),
        ("Project", "progress") => Some(json!(points(w, "projectId", id).0)),
        ("Project", "scope") => Some(json!(points(w, "projectId", id).1)),
        // The relation-existence filters (`hasBlockedByRelations: {eq: true}`).
        ("Issue", "hasBlockingRelations" | "hasBlockedByRelations" | "hasRelatedRelations" | "hasDuplicateRelations") => {
            let (kind, mine, theirs) = match name {
                "hasBlockingRelations" => ("blocks", "issueId", None),
                "hasBlockedByRelations" => ("blocks", "relatedIssueId", None),
                "hasRelatedRelations" => ("related", "issueId", Some("relatedIssueId")),
                _ => ("duplicate", "issueId", Some("relatedIssueId")),
            };
            let on = |r: &Entity, k: &str| r.get(k).and_then(Value::as_str) == Some(id);
            Some(Value::Bool(w.all("IssueRelation").any(|(_, r)| {
                r.get("type").and_then(Value::as_str) == Some(kind) && r.get("archivedAt").is_none_or(Value::is_null) && (on(r, mine) || theirs.is_some_and(|t| on(r, t)))
            })))
        }
        ("Cycle", "isActive" | "isFuture" | "isPast" | "isNext" | "isPrevious" | "progress") => Some(cycle_value(w, id, e, name)),
        ("ProjectMilestone", "progress") => Some(json!(points(w, "projectMilestoneId", id).0)),
        ("ProjectMilestone", "status") => Some(json!(milestone_status(w, id, e))),
        ("Team", "issueCount") => Some(json!(w.all("Issue").filter(|(_, i)| i.get("teamId").and_then(Value::as_str) == Some(id)).count())),
        ("User", "createdIssueCount") => Some(json!(w.all("Issue").filter(|(_, i)| i.get("creatorId").and_then(Value::as_str) == Some(id)).count())),
        ("Organization", "createdIssueCount") => Some(json!(w.all("Issue").count())),
        ("Organization", "userCount") => Some(json!(w.all("User").count())),
        ("Organization", "customerCount") => Some(json!(w.all("Customer").filter(|(_, c)| c.get("archivedAt").is_none_or(Value::is_null)).count())),
        // Grouped by emoji, as the schema describes it: each emoji, its count and who reacted.
        (_, "reactionData") => {
            let fk = format!("{}Id", lcfirst(ty));
            let mut groups: Vec<(String, Vec<Value>)> = Vec::new();
            for (_, r) in w.all("Reaction").filter(|(_, r)| r.get(&fk).and_then(Value::as_str) == Some(id) && r.get("archivedAt").is_none_or(Value::is_null)) {
                let emoji = r.get("emoji").and_then(Value::as_str).unwrap_or("").to_string();
                let user = r.get("userId").cloned().unwrap_or(Value::Null);
                match groups.iter_mut().find(|(e, _)| *e == emoji) {
                    Some((_, users)) => users.push(user),
                    None => groups.push((emoji, vec![user])),
                }
            }
            Some(Value::Array(groups.into_iter().map(|(emoji, users)| json!({"emoji": emoji, "count": users.len(), "userIds": users})).collect()))
        }
        ("Issue", "customerTicketCount") => Some(json!(w.all("CustomerNeed").filter(|(_, n)| n.get("issueId").and_then(Value::as_str) == Some(id) && n.get("archivedAt").is_none_or(Value::is_null)).count())),
        ("Customer", "approximateNeedCount") => Some(json!(w.all("CustomerNeed").filter(|(_, n)| n.get("customerId").and_then(Value::as_str) == Some(id) && n.get("archivedAt").is_none_or(Value::is_null)).count())),
        ("ProjectUpdate", "commentCount") => Some(json!(w.all("Comment").filter(|(_, c)| c.get("projectUpdateId").and_then(Value::as_str) == Some(id) && c.get("archivedAt").is_none_or(Value::is_null)).count())),
        ("Customer" | "ProjectUpdate" | "Roadmap" | "CustomView", "slugId") => Some(Value::String(Some(s("slugId")).filter(|x| !x.is_empty()).unwrap_or_else(|| crate::model::slug_id(id)))),
        // The schema's rule: the filter that is set names what the view shows.
        ("CustomView", "modelName") => Some(json!(match () {
            _ if e.get("projectFilterData").is_some_and(|v| !v.is_null()) => "Project",
            _ if e.get("initiativeFilterData").is_some_and(|v| !v.is_null()) => "Initiative",
            _ if e.get("feedItemFilterData").is_some_and(|v| !v.is_null()) => "FeedItem",
            _ => "Issue",
        })),
        // A team is private or public; `restricted` is a visibility the twin's teams never have.
        // Snapshots at the end of each week of a project (each day of a cycle) since it began, and
        // never before it was created: the twin keeps none, so it can answer them only before the
        // first snapshot was due, when there are none; later they are not held.
        ("Project" | "Cycle", "scopeHistory" | "completedScopeHistory" | "inProgressScopeHistory" | "issueCountHistory" | "completedIssueCountHistory") => {
            let at = |k: &str| e.get(k).and_then(Value::as_str).and_then(instant);
            let (began, period) = if ty == "Project" { (at("createdAt")?, chrono::Duration::weeks(1)) } else { (at("createdAt")?.max(at("startsAt")?), chrono::Duration::days(1)) };
            let now = crate::dates::parse_now(w.request_clock.now())?;
            (now < began + period).then(|| json!([]))
        }
        // An update is stale once its project has a newer one.
        ("ProjectUpdate", "isStale") => {
            let (project, created) = (e.get("projectId"), e.get("createdAt").and_then(Value::as_str).unwrap_or(""));
            Some(json!(w.all("ProjectUpdate").any(|(uid, u)| uid != id && u.get("projectId") == project && u.get("archivedAt").is_none_or(Value::is_null) && u.get("createdAt").and_then(Value::as_str).is_some_and(|c| (c, uid.as_str()) > (created, id)))))
        }
        // The team's cycles as a calendar feed the twin serves (`GET /calendar/{team}/cycles.ics`).
        ("Team", "cycleCalenderUrl") => Some(Value::String(format!("{base_url}/calendar/{id}/cycles.ics"))),
        // Deleting a team deletes the initiatives it leads.
        ("Team", "ledInitiativeCount") => Some(json!(w.all("Initiative").filter(|(_, i)| i.get("leadTeamId").and_then(Value::as_str) == Some(id)).count())),
        ("Team", "visibility") => Some(json!(if e.get("private") == Some(&json!(true)) { "private" } else { "public" })),
        _ => None,
    }
}

/// A cycle's fields read from the clock (where it stands now) and from its issues (progress).
fn cycle_value(w: &Inner, id: &str, e: &Entity, name: &str) -> Value {
    if name == "progress" {
        return json!(points(w, "cycleId", id).0);
    }
    let now = crate::dates::parse_now(w.request_clock.now());
    let at = |c: &Entity, k: &str| c.get(k).and_then(Value::as_str).and_then(instant);
    let (starts, ends) = (at(e, "startsAt"), at(e, "endsAt"));
    let (Some(now), Some(starts), Some(ends)) = (now, starts, ends) else { return json!(false) };
    let completed = e.get("completedAt").is_some_and(|v| !v.is_null());
    let future = starts > now;
    let past = ends <= now;
    let team = e.get("teamId");
    let siblings = || w.all("Cycle").filter(move |(_, c)| c.get("teamId") == team && c.get("archivedAt").is_none_or(Value::is_null));
    json!(match name {
        "isActive" => !future && !past && !completed,
        "isFuture" => future,
        "isPast" => past,
        // The team's first cycle still to start, and its last one ended.
        "isNext" => future && siblings().filter_map(|(cid, c)| Some((at(c, "startsAt")?, cid))).filter(|(s, _)| *s > now).min().is_some_and(|(_, cid)| cid == id),
        _ => past && siblings().filter_map(|(cid, c)| Some((at(c, "endsAt")?, cid))).filter(|(t, _)| *t <= now).max().is_some_and(|(_, cid)| cid == id),
    })
}

/// Where a project milestone stands: `done` once it has issues and all are completed or
/// canceled, `overdue` past its target date (read against the request's today), `next` as its
/// project's first milestone still open (by target date, then order), else `unstarted`.
fn milestone_status(w: &Inner, id: &str, e: &Entity) -> &'static str {
    let finished = |mid: &str| {
        let mut issues = w.all("Issue").filter(|(_, i)| i.get("projectMilestoneId").and_then(Value::as_str) == Some(mid) && i.get("archivedAt").is_none_or(Value::is_null)).peekable();
        issues.peek().is_some()
            && issues.all(|(_, i)| matches!(i.get("stateId").and_then(Value::as_str).and_then(|s| w.str_field("WorkflowState", s, "type")), Some("completed" | "canceled")))
    };
    if finished(id) {
        return "done";
    }
    let today = w.request_clock.now().get(..10).unwrap_or("").to_string();
    let target = |m: &Entity| m.get("targetDate").and_then(Value::as_str).map(|d| d.get(..10).unwrap_or(d).to_string());
    if target(e).is_some_and(|t| t < today) {
        return "overdue";
    }
    let project = e.get("projectId");
    let next = w
        .all("ProjectMilestone")
        .filter(|(mid, m)| m.get("projectId") == project && m.get("archivedAt").is_none_or(Value::is_null) && !finished(mid) && target(m).is_none_or(|t| t >= today))
        .min_by(|(a, x), (b, y)| {
            let key = |m: &Entity| (target(m).is_none(), target(m), m.get("sortOrder").and_then(Value::as_f64).unwrap_or(0.0));
            let (kx, ky) = (key(x), key(y));
            (kx.0, &kx.1).cmp(&(ky.0, &ky.1)).then(kx.2.total_cmp(&ky.2)).then_with(|| a.cmp(b))
        })
        .map(|(mid, _)| mid.as_str());
    if next == Some(id) { "next" } else { "unstarted" }
}

/// The progress and scope of the issues whose `fk` is `id`: (completed points + a quarter of
/// the started ones) / all points (0 with none), and all points, as the schema describes them.
fn points(w: &Inner, fk: &str, id: &str) -> (f64, f64) {
    let (mut done, mut started, mut all) = (0.0, 0.0, 0.0);
    for (_, i) in w.all("Issue").filter(|(_, i)| i.get(fk).and_then(Value::as_str) == Some(id) && i.get("archivedAt").is_none_or(Value::is_null)) {
        let p = i.get("estimate").and_then(Value::as_f64).unwrap_or(0.0);
        match i.get("stateId").and_then(Value::as_str).and_then(|s| w.str_field("WorkflowState", s, "type")) {
            Some("completed") => done += p,
            Some("started") => started += p,
            _ => {}
        }
        all += p;
    }
    (if all > 0.0 { (done + 0.25 * started) / all } else { 0.0 }, all)
}

/// A `DateTime` or `TimelessDate` as stored, as an instant (a date is its midnight UTC).
fn instant(s: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    crate::dates::parse_now(s).or_else(|| crate::dates::parse_now(&format!("{}T00:00:00.000Z", s.get(..10)?)))
}

/// The team's cycle running now, if any.
fn active_cycle(w: &Inner, team: &str) -> Option<String> {
    w.all("Cycle").find(|(id, c)| c.get("teamId").and_then(Value::as_str) == Some(team) && c.get("archivedAt").is_none_or(Value::is_null) && cycle_value(w, id, c, "isActive") == json!(true)).map(|(id, _)| id.clone())
}

/// What a required field the world holds no value for answers, said at its end.
pub const NOT_HELD: &str = "is not supported by the pome Linear twin: the world holds no value for it";

/// The error for required field `coord` (`Issue.sortOrder`) when the world holds no value for
/// it: never a made-up `""`, `0` or zero object. The field's null then bubbles to its nearest
/// nullable parent, as GraphQL specifies; the answer says `UNSUPPORTED` ([`crate::graphql`]).
pub fn not_held(coord: &str) -> FieldError {
    FieldError { message: format!("{coord} {NOT_HELD}") }
}

/// An entity of the world.
pub struct Ent<'c, 'w> {
    pub ctx: &'c Ctx<'w>,
    pub ty: TypeName,
    /// Borrowed from the connection that lists it, when it is listed (no copy per node).
    pub id: std::borrow::Cow<'c, str>,
}

/// A type's name: the schema tables' own copy when they have it, so naming one copies nothing.
pub type TypeName = std::borrow::Cow<'static, str>;

pub fn type_name(name: &str) -> TypeName {
    match crate::tables::ty(name) {
        Some(t) => TypeName::Borrowed(t.name()),
        None => TypeName::Owned(name.to_string()),
    }
}

impl ObjectValue for Ent<'_, '_> {
    fn type_name(&self) -> &str {
        &self.ty
    }

    /// An entity's fields depend only on the world (its type is part of the plan).
    fn identity(&self) -> Option<&str> {
        Some(&self.id)
    }

    fn resolve_field<'a>(&'a self, info: &ResolveInfo<'_>) -> Result<ResolvedValue<'a>, FieldError> {
        let w = self.ctx.w.borrow();
        let sty = crate::root::store_ty(&self.ty);
        match w.get(sty, &self.id) {
            Some(e) => self.field(&w, sty, e, info),
            None => Err(self.ctx.not_found(sty)),
        }
    }

    /// The entity is looked up once for all its fields, and stored leaves are written
    /// straight from the world, not copied out of it.
    fn resolve_all<'a>(&'a self, fields: &[pome_graphql::exec::Planned<'_>], scratch: &mut Vec<u8>) -> Option<Vec<Result<ResolvedValue<'a>, FieldError>>> {
        let w = self.ctx.w.borrow();
        let sty = crate::root::store_ty(&self.ty);
        let e = w.get(sty, &self.id);
        Some(
            fields
                .iter()
                .filter_map(|p| p.info())
                .map(|info| match e {
                    Some(_) if info.field_name() == "id" => {
                        let start = scratch.len();
                        serde_json::to_writer(&mut *scratch, &self.id).expect("strings serialise");
                        Ok(ResolvedValue::Raw(start..scratch.len()))
                    }
                    Some(e) if !info.meta.composite => {
                        let v = field_ref(&w, &self.ctx.base_url, sty, &self.id, e, info.field_name()).unwrap_or(std::borrow::Cow::Owned(Value::Null));
                        if v.is_null() {
                            return self.field(&w, sty, e, &info);
                        }
                        let start = scratch.len();
                        write_coerced(scratch, &v, info.def.ty.inner_named_type().as_str());
                        Ok(ResolvedValue::Raw(start..scratch.len()))
                    }
                    Some(e) => self.field(&w, sty, e, &info),
                    None => Err(self.ctx.not_found(sty)),
                })
                .collect(),
        )
    }
}

impl<'c, 'w> Ent<'c, 'w> {
    /// Field `info` of this entity, `e` (stored as type `sty`).
    fn field<'a>(&'a self, w: &Inner, sty: &str, e: &Entity, info: &ResolveInfo<'_>) -> Result<ResolvedValue<'a>, FieldError> {
        let ctx = self.ctx;
        let def = info.field_definition();
        let name = info.field_name();
        let named = def.ty.inner_named_type().as_str();
        let meta = info.meta;
        if !meta.composite {
            let v = field_value(w, &ctx.base_url, sty, &self.id, e, name).filter(|v| !v.is_null());
            return match v {
                Some(v) => Ok(typed(v, &def.ty)),
                None if def.ty.is_non_null() => Err(not_held(&format!("{}.{name}", self.ty))),
                None => Ok(ResolvedValue::null()),
            };
        }
        if meta.connection {
            let listed = children(w, sty, &self.id, e, name, meta).into_iter();
            return page(ctx, w, meta.named.into(), meta.node.unwrap_or_default().into(), listed, InOrder::No, info.args);
        }
        if def.ty.is_list() {
            // A list of embedded objects stored as JSON (`AgentSession.externalLinks`).
            if let Some(Value::Array(a)) = crate::model::field(e, name).filter(|v| v.as_array().and_then(|a| a.first()).is_some_and(Value::is_object)) {
                let (a, named) = (a.clone(), named.to_string());
                return Ok(ResolvedValue::list(a.into_iter().map(move |v| ResolvedValue::object(Plain { ty: named.clone(), value: v }))));
            }
            let ids: Vec<String> = match e.get(&meta.ids_key).and_then(Value::as_array) {
                Some(a) => a.iter().filter_map(|v| v.as_str().map(String::from)).collect(),
                // No list of ids kept on the entity: the members pointing back at it
                // (`Issue.reactions` are the reactions whose `issueId` is the issue).
                None => {
                    let fk = format!("{}Id", lcfirst(sty));
                    let row = crate::tables::ty(named);
                    row.map(|t| if t.possible.is_empty() { std::slice::from_ref(&named) } else { t.possible }).unwrap_or_default()
                        .iter()
                        .flat_map(|t| w.all(t).filter(|(_, c)| c.get(&fk).and_then(Value::as_str) == Some(&*self.id) && c.get("archivedAt").is_none_or(Value::is_null)).map(|(id, _)| id.clone()).collect::<Vec<_>>())
                        .collect()
                }
            };
            let items: Vec<(&'static str, String)> = ids.iter().filter_map(|id| find_type(w, named, id).map(|t| (t, id.clone()))).collect();
            return Ok(ResolvedValue::list(items.into_iter().map(move |(t, id)| ResolvedValue::object(Ent { ctx, ty: t.into(), id: id.into() }))));
        }
        if sty == "Team" && name == "membership" {
            let user = info.args.get("userId").and_then(Value::as_str).unwrap_or("");
            let found = w
                .all("TeamMembership")
                .find(|(_, m)| m.get("teamId").and_then(Value::as_str) == Some(&*self.id) && m.get("userId").and_then(Value::as_str) == Some(user) && m.get("archivedAt").is_none_or(Value::is_null))
                .map(|(id, _)| id.clone());
            return Ok(ResolvedValue::nullable_object(found.map(|id| Ent { ctx, ty: "TeamMembership".into(), id: id.into() })));
        }
        // Shared with the users `issueShare` named (src/families/work.rs). The twin's teams are
        // open to every member, so nobody's access is shared-only and no field is withheld.
        if sty == "Issue" && name == "sharedAccess" {
            let users: Vec<Value> = e.get("sharedWithUserIds").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).filter_map(|u| w.get("User", u)).map(crate::mutate::public).collect();
            return Ok(ResolvedValue::object(Plain {
                ty: "IssueSharedAccess".into(),
                value: json!({"disallowedIssueFields": [], "isShared": !users.is_empty(), "sharedWithCount": users.len(), "sharedWithUsers": users, "viewerHasOnlySharedAccess": false}),
            }));
        }
        if sty == "Team" && name == "activeCycle" {
            return Ok(ResolvedValue::nullable_object(active_cycle(w, &self.id).map(|id| Ent { ctx, ty: "Cycle".into(), id: id.into() })));
        }
        // An embedded object stored as JSON (e.g. `Issue.botActor`).
        if let Some(v @ Value::Object(_)) = e.get(name) {
            return Ok(ResolvedValue::object(Plain { ty: named.to_string(), value: v.clone() }));
        }
        let target = crate::model::field(e, &meta.id_key).and_then(Value::as_str).or_else(|| {
            // The relation back to the organization is implicit.
            (named == "Organization").then_some(w.org.as_str())
        });
        let found = target.and_then(|id| find_type_in(w, meta.row?, id).map(|t| (t, id)));
        match found {
            Some((t, id)) => {
                let id = if t == "Issue" { w.issue_id(id).unwrap_or_else(|| id.to_string()) } else { id.to_string() };
                Ok(ResolvedValue::object(Ent { ctx, ty: t.into(), id: id.into() }))
            }
            // A required object the twin does not model (`Issue.sharedAccess`).
            None if def.ty.is_non_null() => Err(not_held(&format!("{}.{name}", self.ty))),
            None => Ok(ResolvedValue::null()),
        }
    }
}

/// The children of entity `(pty, pid)` that its connection field `field` lists.
fn children<'e>(w: &'e Inner, pty: &str, pid: &str, e: &'e Entity, field: &str, meta: &pome_graphql::exec::Meta) -> Vec<(&'static str, &'e str, &'e Entity)> {
    let Some(row) = meta.node_row else { return Vec::new() };
    // A list of ids on the parent (`Issue.labelIds` for `Issue.labels`).
    if let Some(ids) = crate::model::field(e, &meta.ids_key).and_then(Value::as_array) {
        return ids.iter().filter_map(Value::as_str).filter_map(|id| find_entity_in(w, row, id).map(|(t, e)| (t, id, e))).collect();
    }
    let fk: String = match (pty, field) {
        ("Issue", "children") | ("Comment", "children") | ("IssueLabel", "children") => "parentId".into(),
        ("User", "assignedIssues") => "assigneeId".into(),
        ("User", "createdIssues") => "creatorId".into(),
        ("User", "delegatedIssues") => "delegateId".into(),
        ("Issue", "inverseRelations") => "relatedIssueId".into(),
        ("Team", "members") | ("User", "teams") => {
            let (mine, theirs) = if pty == "Team" { ("teamId", "userId") } else { ("userId", "teamId") };
            return w
                .all("TeamMembership")
                .filter(|(_, m)| m.get(mine).and_then(Value::as_str) == Some(pid) && m.get("archivedAt").is_none_or(Value::is_null))
                .filter_map(|(_, m)| m.get(theirs).and_then(Value::as_str))
                .filter_map(|id| find_entity_in(w, row, id).map(|(t, e)| (t, id, e)))
                .collect();
        }
        _ => format!("{}Id", lcfirst(pty)),
    };
    let fks = format!("{}s", fk);
    let mut out = Vec::new();
    for t in row.possible {
        for (id, c) in w.all(t) {
            let direct = crate::model::field(c, &fk).and_then(Value::as_str) == Some(pid);
            let listed = || crate::model::field(c, &fks).and_then(Value::as_array).is_some_and(|a| a.iter().any(|v| v.as_str() == Some(pid)));
            if direct || listed() {
                out.push((*t, id.as_str(), c));
            }
        }
    }
    out
}

/// The entity `id` of a type that `t` may be (an object type, or a member of an interface or
/// union), with its concrete type. Unlike [`find_type_in`], an issue is found by id only.
fn find_entity_in<'e>(w: &'e Inner, t: &'static crate::tables::TypeRow, id: &str) -> Option<(&'static str, &'e Entity)> {
    if t.kind == crate::tables::Kind::Object {
        return w.get(t.name(), id).map(|e| (t.name(), e));
    }
    t.possible.iter().find_map(|p| w.get(p, id).map(|e| (*p, e)))
}

/// Filter, order and page `items` as a `…Connection`.
pub fn connection<'a, 'c: 'a, 'w: 'a>(ctx: &'c Ctx<'w>, conn: &str, items: Vec<(String, String)>, args: &Value) -> Result<ResolvedValue<'a>, FieldError> {
    let w = ctx.w.borrow();
    let listed = items.iter().filter_map(|(t, id)| w.get(t, id).map(|e| (t.as_str(), id.as_str(), e)));
    page(ctx, &w, type_name(conn), type_name(&gql::connection_node(conn).unwrap_or_default()), listed, InOrder::No, args)
}

/// Every entity a root connection lists (each of the node's concrete types, by id),
/// filtered, ordered and paged, read in place.
pub fn connection_of_all<'a, 'c: 'a, 'w: 'a>(ctx: &'c Ctx<'w>, conn: &str, args: &Value) -> Result<ResolvedValue<'a>, FieldError> {
    let w = ctx.w.borrow();
    let node = gql::connection_node(conn).unwrap_or_default();
    let types = crate::tables::ty(&node).map(|t| t.possible).unwrap_or_default();
    // One type in its default order, on a world this request has not written to (the kept
    // order is the one before the write): walked in order, and only until the page is full.
    // (No connection of Linear's has a `totalCount`, which would need every match: only the
    // search payloads do, and they are listed by [`connection`].)
    let arg = |name: &str| arg(args, name);
    let in_order = types.len() == 1
        && arg("last").is_none()
        && arg("before").is_none()
        && arg("sort").and_then(Value::as_array).is_none_or(|s| s.is_empty())
        && !ctx.volatile.get()
        && ctx.fx.borrow().changes.is_empty();
    if in_order {
        let t = types[0];
        let key = sort_field(args);
        let all: Vec<(&String, &Entity)> = w.all(t).collect();
        let order = w.order(t, key);
        // Positions past the end cannot happen within a generation; skipped rather than trusted.
        let listed = order.iter().filter_map(|&at| all.get(at as usize)).map(|(id, e)| (t, id.as_str(), *e));
        return page(ctx, &w, type_name(conn), type_name(&node), listed, InOrder::Yes, args);
    }
    let listed = types.iter().flat_map(|t| w.all(t).map(move |(id, e)| (*t, id.as_str(), e)));
    page(ctx, &w, type_name(conn), type_name(&node), listed, InOrder::No, args)
}

/// A connection's argument `name`, unless absent or null. A handful of arguments: found by
/// comparing names, not by hashing them.
fn arg<'v>(args: &'v Value, name: &str) -> Option<&'v Value> {
    args.as_object().and_then(|m| crate::model::field(m, name)).filter(|v| !v.is_null())
}

/// Whether what a connection lists comes in the connection's order already
/// ([`Inner::order`]), so listing may stop once the page is full.
#[derive(PartialEq)]
enum InOrder {
    Yes,
    No,
}

/// The field a connection orders by (`orderBy: updatedAt`, else `createdAt`).
fn sort_field(args: &Value) -> &'static str {
    match arg(args, "orderBy").and_then(Value::as_str) {
        Some("updatedAt") => "updatedAt",
        _ => "createdAt",
    }
}

/// Two entities in the order of a `sort: [{priority: {order: Ascending}}, …]` argument
/// (`IssueSortInput` and its siblings): each key by its order, nulls last unless asked first.
fn sort_order(w: &Inner, sort: &[Value], x: &Entity, y: &Entity) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    for by in sort {
        let Some((key, how)) = by.as_object().and_then(|m| m.iter().next()) else { continue };
        let descending = how["order"] == "Descending";
        let nulls_first = how["nulls"] == "first";
        let value = |e: &Entity| -> Option<Value> {
            match key.as_str() {
                // No priority sorts after low unless `noPriorityFirst`.
                "priority" => e.get("priority").and_then(Value::as_f64).map(|p| json!(if p == 0.0 && how["noPriorityFirst"] != true { 5.0 } else { p })),
                "workflowState" => e.get("stateId").and_then(Value::as_str).and_then(|s| w.get("WorkflowState", s)).map(|s| {
                    let rank = ["triage", "backlog", "unstarted", "started", "completed", "canceled"].iter().position(|t| s.get("type").and_then(Value::as_str) == Some(*t)).unwrap_or(6);
                    json!(rank as f64 * 1000.0 + s.get("position").and_then(Value::as_f64).unwrap_or(0.0))
                }),
                "assignee" => e.get("assigneeId").and_then(Value::as_str).and_then(|u| w.str_field("User", u, "name")).map(|n| json!(n.to_lowercase())),
                "title" => e.get("title").and_then(Value::as_str).map(|t| json!(t.to_lowercase())),
                "manual" => e.get("sortOrder").cloned(),
                _ => e.get(key.as_str()).filter(|v| !v.is_null()).cloned(),
            }
        };
        let ord = match (value(x), value(y)) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => if nulls_first { Ordering::Less } else { Ordering::Greater },
            (Some(_), None) => if nulls_first { Ordering::Greater } else { Ordering::Less },
            (Some(a), Some(b)) => {
                let o = match (a.as_f64(), b.as_f64()) {
                    (Some(p), Some(q)) => p.total_cmp(&q),
                    _ => a.as_str().unwrap_or("").cmp(b.as_str().unwrap_or("")),
                };
                if descending { o.reverse() } else { o }
            }
        };
        if ord != Ordering::Equal {
            return ord;
        }
    }
    Ordering::Equal
}

/// Linear's largest page (`first`/`last`).
const MAX_PAGE: i64 = 250;

/// Filter, order and page entities (type, id, entity) as a `…Connection`.
fn page<'a, 'c: 'a, 'w: 'a, 'e>(ctx: &'c Ctx<'w>, w: &'e Inner, conn: TypeName, node: TypeName, listed: impl Iterator<Item = (&'e str, &'e str, &'e Entity)>, ordered: InOrder, args: &Value) -> Result<ResolvedValue<'a>, FieldError> {
    let arg = |name: &str| arg(args, name);
    let include_archived = arg("includeArchived").and_then(Value::as_bool).unwrap_or(false);
    let filt = arg("filter").filter(|f| f.is_object());
    // Relative dates (`createdAt: {gt: "-P1W"}`) read against this request's now.
    let absolute = filt.filter(|f| filter::has_duration(f)).and_then(|f| {
        // The answer depends on the clock: it is not kept.
        ctx.volatile.set(true);
        Some(filter::absolute_dates(&node, f, crate::dates::parse_now(&ctx.now)?))
    });
    let filt = absolute.as_ref().or(filt);
    // The filter compiled once per entity type the connection lists.
    let mut compiled: Vec<(&str, filter::Compiled<'_>)> = Vec::new();
    let key = sort_field(args);
    let first = arg("first").and_then(Value::as_i64);
    let last = arg("last").and_then(Value::as_i64);
    let after = arg("after").and_then(Value::as_str);
    // Linear validates page sizes before listing anything: at most 250, never clamped.
    for (n, v) in [("first", first), ("last", last)] {
        if v.is_some_and(|v| v < 0) {
            return Err(ctx.invalid_input(format!("Argument Validation Error - {n} must be a positive number"), &format!("{n} must be a positive number")));
        }
        if v.is_some_and(|v| v > MAX_PAGE) {
            return Err(ctx.invalid_input(format!("Argument Validation Error - {n} must not be greater than {MAX_PAGE}"), &format!("{n} must not be greater than {MAX_PAGE}")));
        }
    }
    // Listed in order: the page is full with `first` items past the cursor, and one more
    // tells whether there is a next page.
    let ordered = ordered == InOrder::Yes;
    let wanted = ordered.then(|| first.unwrap_or(50) as usize + 1);
    let mut after_at: Option<usize> = None;
    // Each kept item with its sort key, read once.
    let mut items: Vec<(&str, (&str, &str))> = Vec::new();
    for (t, id, e) in listed {
        // Both fields in one pass over the entity's (a few dozen) fields; listed in order,
        // the sort key is not needed.
        let (mut archived, mut sort_key) = (false, "");
        for (k, v) in e {
            if k == "archivedAt" {
                archived = !v.is_null();
                if ordered {
                    break;
                }
            } else if !ordered && k == key {
                sort_key = v.as_str().unwrap_or("");
            }
        }
        if archived && !include_archived {
            continue;
        }
        if let Some(f) = filt {
            let at = match compiled.iter().position(|(ct, _)| *ct == t) {
                Some(at) => at,
                None => {
                    compiled.push((t, filter::Compiled::new(t, f)));
                    compiled.len() - 1
                }
            };
            if !compiled[at].1.test(w, &ctx.base_url, t, id, e) {
                continue;
            }
        }
        items.push((sort_key, (t, id)));
        if let Some(wanted) = wanted {
            if after_at.is_none() && after == Some(id) {
                after_at = Some(items.len() - 1);
            }
            if after.is_none_or(|_| after_at.is_some()) && items.len() >= after_at.map_or(0, |a| a + 1) + wanted {
                break;
            }
        }
    }
    if !ordered {
        items.sort_by(|(ka, a), (kb, b)| {
            if a.0 == b.0 && a.1 == b.1 {
                return std::cmp::Ordering::Equal;
            }
            kb.cmp(ka).then_with(|| b.1.cmp(a.1))
        });
    }
    drop(compiled);
    if let Some(sort) = arg("sort").and_then(Value::as_array).filter(|s| !s.is_empty()) {
        // Stable: items the sort cannot tell apart keep the order above.
        items.sort_by(|(_, a), (_, b)| match (w.get(a.0, a.1), w.get(b.0, b.1)) {
            (Some(x), Some(y)) => sort_order(w, sort, x, y),
            _ => std::cmp::Ordering::Equal,
        });
    }
    let mut start = 0usize;
    let mut end = items.len();
    if let Some(after) = after {
        match items.iter().position(|(_, (_, id))| *id == after) {
            Some(i) => start = i + 1,
            None => return Err(ctx.invalid_input(format!("Invalid cursor: {after}"), "The cursor is invalid.")),
        }
    }
    if let Some(before) = arg("before").and_then(Value::as_str) {
        match items.iter().position(|(_, (_, id))| *id == before) {
            Some(i) => end = i.min(end),
            None => return Err(ctx.invalid_input(format!("Invalid cursor: {before}"), "The cursor is invalid.")),
        }
    }
    let end = end.max(start);
    let (s, e) = match (first, last) {
        (_, Some(l)) if first.is_none() => (end.saturating_sub(l as usize).max(start), end),
        (f, _) => {
            let f = f.unwrap_or(50) as usize;
            (start, (start + f).min(end))
        }
    };
    let total = items.len();
    // The items are nearly always of one type: it is named once, not once per item.
    let mut last: Option<(&'e str, TypeName)> = None;
    let mut name = |t: &'e str| -> TypeName {
        match &last {
            Some((x, n)) if *x == t => n.clone(),
            _ => last.insert((t, type_name(t))).1.clone(),
        }
    };
    let page: Vec<(TypeName, String)> = items[s..e].iter().map(|(_, (t, id))| (name(t), id.to_string())).collect();
    let info = (e < total, s > 0);
    Ok(ResolvedValue::object(Conn { ctx, ty: conn, node, items: page, info, total }))
}

pub struct Conn<'c, 'w> {
    ctx: &'c Ctx<'w>,
    ty: TypeName,
    /// The node type (`Issue` for `IssueConnection`).
    node: TypeName,
    items: Vec<(TypeName, String)>,
    /// (hasNextPage, hasPreviousPage); the cursors are the first and last ids.
    info: (bool, bool),
    total: usize,
}

impl ObjectValue for Conn<'_, '_> {
    fn type_name(&self) -> &str {
        &self.ty
    }

    fn resolve_field<'a>(&'a self, info: &ResolveInfo<'_>) -> Result<ResolvedValue<'a>, FieldError> {
        let ctx = self.ctx;
        let node_ty = &self.node;
        // Search results are issues under their own type name.
        let alias = (crate::root::store_ty(node_ty) != node_ty).then(|| node_ty.clone());
        match info.field_name() {
            "nodes" => Ok(ResolvedValue::list(self.items.iter().map(move |(t, id)| {
                ResolvedValue::object(Ent { ctx, ty: alias.clone().unwrap_or_else(|| t.clone()), id: id.as_str().into() })
            }))),
            "edges" => {
                let edge_ty = info.field_definition().ty.inner_named_type().to_string();
                Ok(ResolvedValue::list(self.items.iter().map(move |(t, id)| {
                    ResolvedValue::object(Edge { ctx, ty: edge_ty.clone(), node: (alias.clone().unwrap_or_else(|| t.clone()).into_owned(), id.clone()) })
                })))
            }
            "totalCount" => Ok(typed(json!(self.total), &info.field_definition().ty)),
            "archivePayload" => Err(not_held(&format!("{}.archivePayload", self.ty))),
            "pageInfo" => Ok(ResolvedValue::object(Plain {
                ty: "PageInfo".into(),
                value: json!({
                    "hasNextPage": self.info.0,
                    "hasPreviousPage": self.info.1,
                    "startCursor": self.items.first().map(|p| p.1.clone()),
                    "endCursor": self.items.last().map(|p| p.1.clone()),
                }),
            })),
            _ => Ok(ResolvedValue::null()),
        }
    }
}

pub struct Edge<'c, 'w> {
    ctx: &'c Ctx<'w>,
    ty: String,
    node: (String, String),
}

impl ObjectValue for Edge<'_, '_> {
    fn type_name(&self) -> &str {
        &self.ty
    }

    fn resolve_field<'a>(&'a self, info: &ResolveInfo<'_>) -> Result<ResolvedValue<'a>, FieldError> {
        match info.field_name() {
            "node" => Ok(ResolvedValue::object(Ent { ctx: self.ctx, ty: type_name(&self.node.0), id: self.node.1.as_str().into() })),
            "cursor" => Ok(leaf(Value::String(self.node.1.clone()))),
            _ => Ok(ResolvedValue::null()),
        }
    }
}

/// An object given whole as JSON (page info, rate-limit status, payload extras).
pub struct Plain {
    pub ty: String,
    pub value: Value,
}

impl ObjectValue for Plain {
    fn type_name(&self) -> &str {
        &self.ty
    }

    fn resolve_field<'a>(&'a self, info: &ResolveInfo<'_>) -> Result<ResolvedValue<'a>, FieldError> {
        let def = info.field_definition();
        let v = self.value.get(info.field_name()).cloned().unwrap_or(Value::Null);
        let named = def.ty.inner_named_type().to_string();
        if v.is_null() && def.ty.is_non_null() {
            return Err(not_held(&format!("{}.{}", self.ty, info.field_name())));
        }
        if gql::is_composite(&named) {
            return Ok(match v {
                Value::Object(_) => ResolvedValue::object(Plain { ty: named, value: v }),
                Value::Array(a) => ResolvedValue::list(a.into_iter().map(move |x| ResolvedValue::object(Plain { ty: named.clone(), value: x }))),
                _ => ResolvedValue::null(),
            });
        }
        Ok(typed(v, &def.ty))
    }
}

/// A mutation's payload: `success`, `lastSyncId`, and the entity under whatever name the
/// payload type gives it (`issue`, `entity`, `comment`…), or its id (`entityId`).
pub struct Payload<'c, 'w> {
    pub ctx: &'c Ctx<'w>,
    pub ty: String,
    pub sync: u64,
    pub entity: Option<(String, String)>,
    pub list: Vec<(String, String)>,
    pub extra: Map<String, Value>,
}

impl ObjectValue for Payload<'_, '_> {
    fn type_name(&self) -> &str {
        &self.ty
    }

    fn resolve_field<'a>(&'a self, info: &ResolveInfo<'_>) -> Result<ResolvedValue<'a>, FieldError> {
        let ctx = self.ctx;
        let def = info.field_definition();
        let name = info.field_name();
        match name {
            // Whether the mutation did what it was asked: a family says when it did not.
            "success" => return Ok(leaf(self.extra.get("success").cloned().unwrap_or(json!(true)))),
            "lastSyncId" => return Ok(typed(json!(self.sync), &def.ty)),
            "entityId" => return Ok(leaf(json!(self.entity.as_ref().map(|e| e.1.clone()).unwrap_or_default()))),
            _ => {}
        }
        if let Some(v) = self.extra.get(name) {
            let named = def.ty.inner_named_type().to_string();
            if gql::is_composite(&named) {
                return Ok(ResolvedValue::object(Plain { ty: named, value: v.clone() }));
            }
            return Ok(typed(v.clone(), &def.ty));
        }
        let named = def.ty.inner_named_type().as_str();
        if gql::is_composite(named) {
            let types = gql::possible_types(named);
            if def.ty.is_list() {
                let items: Vec<(String, String)> = self.list.iter().filter(|(t, _)| types.contains(t)).cloned().collect();
                return Ok(ResolvedValue::list(items.into_iter().map(move |(t, id)| ResolvedValue::object(Ent { ctx, ty: type_name(&t), id: id.into() }))));
            }
            if let Some((t, id)) = &self.entity {
                if types.contains(t) && ctx.w.borrow().get(t, id).is_some() {
                    return Ok(ResolvedValue::object(Ent { ctx, ty: type_name(t), id: id.as_str().into() }));
                }
            }
            return Ok(ResolvedValue::null());
        }
        if def.ty.is_non_null() {
            return Err(not_held(&format!("{}.{name}", self.ty)));
        }
        Ok(ResolvedValue::null())
    }
}
