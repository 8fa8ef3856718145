//! The root operation types. Query fields that return an entity by `id`, or a connection of
//! entities, are served generically for every modeled entity type; a few (viewer, search,
//! priority values, rate-limit status) have their own code. Every other root field answers a
//! GraphQL error naming it as not served, and the call is marked unsupported.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use apollo_compiler::resolvers::FieldError;
use pome_graphql::exec::{Info as ResolveInfo, Out as ResolvedValue, Resolve as ObjectValue};
use serde_json::{Value, json};

use crate::exec::{self, Ctx, Ent, Plain, find_typed};
use crate::gql;
use crate::mutate;

/// Entity types the twin models: the core ones, and every type with a generic create.
pub fn modeled() -> &'static BTreeSet<String> {
    static M: OnceLock<BTreeSet<String>> = OnceLock::new();
    M.get_or_init(|| {
        let mut m: BTreeSet<String> = [
            "Issue", "Comment", "IssueLabel", "WorkflowState", "Team", "User", "Organization", "Project", "ProjectStatus", "ProjectMilestone",
            "ProjectUpdate", "Cycle", "Document", "Attachment", "Reaction", "Favorite", "IssueHistory", "IssueRelation", "TeamMembership",
            "CustomView", "Template", "Webhook", "IssueSearchResult", "DocumentSearchResult", "ProjectSearchResult",
        ]
        .into_iter()
        .map(String::from)
        .collect();
        m.extend(gql::possible_types("Notification"));
        m.extend(gql::possible_types("NotificationSubscription"));
        m.insert("UserSettings".into());
        // Kept as the world holds them: a seedless world has none, and nothing the twin
        // serves makes them (integrations connect through providers the sandbox cannot reach).
        m.insert("Integration".into());
        m.insert("ExternalUser".into());
        // Made by oauthApplicationCreate (src/families/apps.rs).
        m.insert("OAuthApplication".into());
        for f in crate::tables::ty("Mutation").map(crate::tables::fields).unwrap_or_default() {
            if let Some((ty, "Create")) = mutate::generic(f.name()) {
                m.insert(ty);
            }
        }
        m
    })
}

const SPECIAL_QUERIES: &[&str] = &[
    "viewer", "organization", "issueSearch", "searchIssues", "searchDocuments", "searchProjects", "issuePriorityValues",
    "issueVcsBranchSearch", "attachmentsForURL", "notificationsUnreadCount", "rateLimitStatus", "organizationExists",
    "attachmentIssue", "userSettings", "archivedTeams", "semanticSearch", "customViewHasSubscribers", "projectStatusProjectCount",
    "partnerOfferDetails", "agentSessionSandbox", "authenticationSessions", "userSessions", "slaConfigurations",
];

/// Whether the twin serves root query field `name` (with its schema return type).
pub fn query_served(name: &str) -> bool {
    if SPECIAL_QUERIES.contains(&name) || crate::lookups::QUERIES.contains(&name) {
        return true;
    }
    let Some(f) = crate::tables::field("Query", name) else { return false };
    let named = f.ty;
    if let Some(node) = gql::connection_node(named) {
        return gql::possible_types(&node).iter().all(|t| modeled().contains(t)) && !gql::possible_types(&node).is_empty();
    }
    let types = gql::possible_types(named);
    if f.list {
        // A plain list of every entity of a type (`templates`).
        return !types.is_empty() && types.iter().all(|t| modeled().contains(t)) && f.args.iter().all(|(_, _, non_null)| !non_null);
    }
    types.iter().any(|t| modeled().contains(t)) && f.args.iter().any(|(a, _, _)| *a == "id")
}

/// Storage type of a type the schema gives its own name for search results.
pub fn store_ty(ty: &str) -> &str {
    match ty {
        "IssueSearchResult" => "Issue",
        "DocumentSearchResult" => "Document",
        "ProjectSearchResult" => "Project",
        t => t,
    }
}

pub struct Root<'c, 'w> {
    pub ctx: &'c Ctx<'w>,
    pub ty: &'static str,
}

impl ObjectValue for Root<'_, '_> {
    fn type_name(&self) -> &str {
        self.ty
    }

    fn resolve_field<'a>(&'a self, info: &ResolveInfo<'_>) -> Result<ResolvedValue<'a>, FieldError> {
        let ctx = self.ctx;
        let name = info.field_name();
        let def = info.field_definition();
        let named = def.ty.inner_named_type().as_str();
        let args = info.args.clone();
        if self.ty == "Mutation" {
            if !mutate::served(name) {
                return Err(ctx.unsupported(&format!("Mutation.{name}")));
            }
            return Ok(ResolvedValue::object(mutate::run(ctx, name, &args, named)?));
        }
        if !query_served(name) {
            return Err(ctx.unsupported(&format!("Query.{name}")));
        }
        ctx.fx.borrow_mut().actions.push(name.to_string());
        if crate::lookups::QUERIES.contains(&name) {
            return crate::lookups::answer(ctx, name, named, &args);
        }
        match name {
            "viewer" => {
                let id = ctx.w.borrow().viewer.clone();
                return Ok(ResolvedValue::object(Ent { ctx, ty: "User".into(), id: id.into() }));
            }
            "organization" => {
                let id = ctx.w.borrow().org.clone();
                return Ok(ResolvedValue::object(Ent { ctx, ty: "Organization".into(), id: id.into() }));
            }
            "userSettings" => {
                ctx.volatile.set(true);
                let id = crate::mutate::user_settings(&mut ctx.w.borrow_mut(), &ctx.now);
                return Ok(ResolvedValue::object(Ent { ctx, ty: "UserSettings".into(), id: id.into() }));
            }
            "archivedTeams" => {
                let ids: Vec<String> = ctx.w.borrow().all("Team").filter(|(_, t)| t.get("archivedAt").is_some_and(|v| !v.is_null())).map(|(id, _)| id.clone()).collect();
                return Ok(ResolvedValue::list(ids.into_iter().map(move |id| ResolvedValue::object(Ent { ctx, ty: "Team".into(), id: id.into() }))));
            }
            "organizationExists" => {
                let key = args.get("urlKey").and_then(Value::as_str).unwrap_or("");
                let exists = ctx.w.borrow().org_url_key() == key;
                return Ok(ResolvedValue::object(Plain { ty: named.into(), value: json!({"exists": exists, "success": true}) }));
            }
            "issuePriorityValues" => {
                let list: Vec<Value> = (0..5).map(|p| json!({"priority": p, "label": crate::model::priority_label(p)})).collect();
                return Ok(ResolvedValue::list(list.into_iter().map(|v| ResolvedValue::object(Plain { ty: "IssuePriorityValue".into(), value: v }))));
            }
            "notificationsUnreadCount" => {
                let w = ctx.w.borrow();
                let n = gql::possible_types("Notification")
                    .iter()
                    .flat_map(|t| w.all(t).map(|(_, n)| n.clone()).collect::<Vec<_>>())
                    .filter(|n| n.get("userId").and_then(Value::as_str) == Some(w.viewer.as_str()) && n.get("readAt").is_none_or(Value::is_null) && n.get("archivedAt").is_none_or(Value::is_null))
                    .count();
                return Ok(ResolvedValue::Leaf(exec::coerce(json!(n), named)));
            }
            // The levels this request left, as its headers give them (never kept: they change
            // with every request).
            "rateLimitStatus" => {
                ctx.volatile.set(true);
                let Some(s) = ctx.w.borrow().rate_status else { return Err(ctx.unsupported("Query.rateLimitStatus outside a GraphQL request")) };
                let limit = |ty: &str, l: crate::rate::Level, asked: i64| {
                    json!({"type": ty, "allowedAmount": l.limit as f64, "period": crate::rate::PERIOD_MS as f64, "remainingAmount": l.remaining as f64, "requestedAmount": asked as f64, "reset": l.reset_ms as f64})
                };
                let v = json!({"identifier": null, "kind": s.kind.name(), "limits": [limit("requestLimit", s.requests, 1), limit("complexityLimit", s.complexity, s.points)]});
                return Ok(ResolvedValue::object(Plain { ty: named.into(), value: v }));
            }
            "issueVcsBranchSearch" => {
                let branch = args.get("branchName").and_then(Value::as_str).unwrap_or("").to_ascii_lowercase();
                let w = ctx.w.borrow();
                let found = w.all("Issue").find(|(_, e)| e.get("branchName").and_then(Value::as_str).is_some_and(|b| b.eq_ignore_ascii_case(&branch)) || e.get("identifier").and_then(Value::as_str).is_some_and(|i| branch.contains(&i.to_ascii_lowercase()))).map(|(id, _)| id.clone());
                drop(w);
                return Ok(ResolvedValue::nullable_object(found.map(|id| Ent { ctx, ty: "Issue".into(), id: id.into() })));
            }
            "attachmentIssue" => {
                let id = args.get("id").and_then(Value::as_str).unwrap_or("");
                let w = ctx.w.borrow();
                let issue = w.get("Attachment", id).or_else(|| w.all("Attachment").find(|(_, a)| a.get("url").and_then(Value::as_str) == Some(id)).map(|(_, a)| a)).and_then(|a| a.get("issueId")).and_then(Value::as_str).map(String::from);
                drop(w);
                return match issue {
                    Some(id) => Ok(ResolvedValue::object(Ent { ctx, ty: "Issue".into(), id: id.into() })),
                    None => Err(ctx.not_found("Attachment")),
                };
            }
            "attachmentsForURL" => {
                let url = args.get("url").and_then(Value::as_str).unwrap_or("").to_string();
                let items: Vec<(String, String)> = ctx.w.borrow().all("Attachment").filter(|(_, a)| a.get("url").and_then(Value::as_str) == Some(url.as_str())).map(|(id, _)| ("Attachment".to_string(), id.clone())).collect();
                return exec::connection(ctx, named, items, &args);
            }
            // The viewer's own inbox, not everyone's.
            "notifications" => {
                let w = ctx.w.borrow();
                let items: Vec<(String, String)> = gql::possible_types("Notification")
                    .iter()
                    .flat_map(|t| w.all(t).filter(|(_, n)| n.get("userId").and_then(Value::as_str) == Some(w.viewer.as_str())).map(|(id, _)| (t.clone(), id.clone())).collect::<Vec<_>>())
                    .collect();
                drop(w);
                return exec::connection(ctx, named, items, &args);
            }
            // Natural-language search over issues, projects, initiatives and documents: the
            // twin ranks by the words of the query each one's text holds (no vectors), most
            // words first, then newest.
            "semanticSearch" => {
                let words: Vec<String> = args.get("query").and_then(Value::as_str).unwrap_or("").to_lowercase().split(|c: char| !c.is_alphanumeric()).filter(|w| w.len() > 1).map(String::from).collect();
                let types: Vec<String> = args.get("types").and_then(Value::as_array).map(|a| a.iter().filter_map(|t| t.as_str().map(String::from)).collect()).unwrap_or_else(|| ["issue", "project", "initiative", "document"].map(String::from).to_vec());
                let max = args.get("maxResults").and_then(Value::as_i64).unwrap_or(crate::limits::DEFAULT_SEMANTIC_RESULTS).clamp(1, crate::limits::MAX_SEMANTIC_RESULTS) as usize;
                let archived = args.get("includeArchived").and_then(Value::as_bool).unwrap_or(false);
                let w = ctx.w.borrow();
                let mut hits: Vec<(usize, String, &'static str, String)> = Vec::new();
                for (kind, ty) in [("issue", "Issue"), ("project", "Project"), ("initiative", "Initiative"), ("document", "Document")] {
                    if !types.iter().any(|t| t == kind) {
                        continue;
                    }
                    for (id, e) in w.all(ty) {
                        if !archived && e.get("archivedAt").is_some_and(|a| !a.is_null()) {
                            continue;
                        }
                        let text = ["title", "name", "description", "content", "identifier"].iter().filter_map(|k| e.get(*k).and_then(Value::as_str)).collect::<Vec<_>>().join("\n").to_lowercase();
                        let score = words.iter().filter(|w| text.contains(w.as_str())).count();
                        if score > 0 {
                            hits.push((score, e.get("createdAt").and_then(Value::as_str).unwrap_or("").to_string(), kind, id.clone()));
                        }
                    }
                }
                drop(w);
                hits.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| b.1.cmp(&a.1)).then_with(|| a.3.cmp(&b.3)));
                hits.truncate(max);
                let results: Vec<ResolvedValue<'_>> = hits.into_iter().map(|(_, _, kind, id)| ResolvedValue::object(SemanticHit { ctx, kind, id })).collect();
                return Ok(ResolvedValue::object(SemanticPayload { results: std::cell::RefCell::new(Some(results)) }));
            }
            // Whether anyone but the viewer is subscribed to the view's notifications.
            "customViewHasSubscribers" => {
                let id = args.get("id").and_then(Value::as_str).unwrap_or("");
                let w = ctx.w.borrow();
                if w.get("CustomView", id).is_none() {
                    return Err(ctx.not_found("CustomView"));
                }
                let has = gql::possible_types("NotificationSubscription").iter().any(|t| {
                    w.all(t).any(|(_, n)| n.get("customViewId").and_then(Value::as_str) == Some(id) && n.get("active").and_then(Value::as_bool) != Some(false) && n.get("userId").and_then(Value::as_str) != Some(w.viewer.as_str()) && n.get("archivedAt").is_none_or(Value::is_null))
                });
                return Ok(ResolvedValue::object(Plain { ty: named.into(), value: json!({"hasSubscribers": has}) }));
            }
            // Projects in the status: all of them, those only private teams see, and those
            // whose teams are all archived.
            "projectStatusProjectCount" => {
                let id = args.get("id").and_then(Value::as_str).unwrap_or("");
                let w = ctx.w.borrow();
                if w.get("ProjectStatus", id).is_none() {
                    return Err(ctx.not_found("ProjectStatus"));
                }
                let team_is = |t: &str, k: &str| w.get("Team", t).and_then(|t| t.get(k)).is_some_and(|v| !v.is_null() && v != &json!(false));
                let (mut count, mut private, mut archived) = (0, 0, 0);
                for (_, p) in w.all("Project").filter(|(_, p)| p.get("statusId").and_then(Value::as_str) == Some(id)) {
                    count += 1;
                    let teams: Vec<String> = p.get("teamIds").and_then(Value::as_array).map(|a| a.iter().filter_map(|t| t.as_str().map(String::from)).collect()).unwrap_or_default();
                    private += usize::from(!teams.is_empty() && teams.iter().all(|t| team_is(t, "private")));
                    archived += usize::from(!teams.is_empty() && teams.iter().all(|t| team_is(t, "archivedAt")));
                }
                return Ok(ResolvedValue::object(Plain { ty: named.into(), value: json!({"count": count as f64, "privateCount": private as f64, "archivedTeamCount": archived as f64}) }));
            }
            // No partner offer is active in a sandbox.
            "partnerOfferDetails" => return Ok(ResolvedValue::null()),
            // The twin runs no coding agents: a session has no sandbox.
            "agentSessionSandbox" => {
                let id = args.get("agentSessionId").and_then(Value::as_str).unwrap_or("");
                if ctx.w.borrow().get("AgentSession", id).is_none() {
                    return Err(ctx.not_found("AgentSession"));
                }
                return Ok(ResolvedValue::null());
            }
            // Agents call with API keys: nobody holds a browser or app session in a sandbox.
            "authenticationSessions" => return Ok(ResolvedValue::list(Vec::new())),
            "userSessions" => {
                let id = args.get("id").and_then(Value::as_str).unwrap_or("");
                if ctx.w.borrow().get("User", id).is_none() {
                    return Err(ctx.not_found("User"));
                }
                return Ok(ResolvedValue::list(Vec::new()));
            }
            // The twin's teams have no SLA rules.
            "slaConfigurations" => {
                let id = args.get("teamId").and_then(Value::as_str).unwrap_or("");
                if ctx.w.borrow().team_id(id).is_none() {
                    return Err(ctx.not_found("Team"));
                }
                return Ok(ResolvedValue::list(Vec::new()));
            }
            "issueSearch" | "searchIssues" | "searchDocuments" | "searchProjects" => {
                let term = args.get("term").or_else(|| args.get("query")).and_then(Value::as_str).unwrap_or("").to_lowercase();
                let ty = match name {
                    "searchDocuments" => "Document",
                    "searchProjects" => "Project",
                    _ => "Issue",
                };
                let with_comments = args.get("includeComments").and_then(Value::as_bool).unwrap_or(false);
                let team = args.get("teamId").and_then(Value::as_str).map(String::from);
                let w = ctx.w.borrow();
                // The issues whose comments match, found in one pass over the comments (not one
                // pass per issue).
                let commented: std::collections::BTreeSet<&str> = if with_comments && ty == "Issue" && !term.is_empty() {
                    w.all("Comment")
                        .filter(|(_, c)| c.get("archivedAt").is_none_or(Value::is_null) && c.get("body").and_then(Value::as_str).is_some_and(|b| b.to_lowercase().contains(&term)))
                        .filter_map(|(_, c)| c.get("issueId").and_then(Value::as_str))
                        .collect()
                } else {
                    Default::default()
                };
                let items: Vec<(String, String)> = w
                    .all(ty)
                    .filter(|(id, e)| {
                        let text = ["title", "name", "description", "content", "identifier"].iter().filter_map(|k| e.get(*k).and_then(Value::as_str)).collect::<Vec<_>>().join("\n").to_lowercase();
                        (term.is_empty() || text.contains(&term) || commented.contains(id.as_str())) && team.as_deref().is_none_or(|t| e.get("teamId").and_then(Value::as_str) == Some(t))
                    })
                    .map(|(id, _)| (ty.to_string(), id.clone()))
                    .collect();
                drop(w);
                return exec::connection(ctx, named, items, &args);
            }
            _ => {}
        }
        if gql::is_connection(named) {
            return exec::connection_of_all(ctx, named, &args);
        }
        if def.ty.is_list() {
            let w = ctx.w.borrow();
            let items: Vec<(String, String)> = gql::possible_types(named)
                .into_iter()
                .flat_map(|t| w.all(&t).filter(|(_, e)| e.get("archivedAt").is_none_or(Value::is_null)).map(|(id, _)| (t.clone(), id.clone())).collect::<Vec<_>>())
                .collect();
            drop(w);
            return Ok(ResolvedValue::list(items.into_iter().map(move |(t, id)| ResolvedValue::object(Ent { ctx, ty: exec::type_name(&t), id: id.into() }))));
        }
        let id = args.get("id").and_then(Value::as_str).unwrap_or("").to_string();
        let w = ctx.w.borrow();
        let found = match named {
            "Team" => w.team_id(&id).map(|id| ("Team".to_string(), id)),
            "User" if id == "me" => Some(("User".to_string(), w.viewer.clone())),
            // Projects, documents and initiatives are found by their slug id too.
            "Project" | "Document" | "Initiative" if w.get(named, &id).is_none() => {
                w.all(named).find(|(_, e)| e.get("slugId").and_then(Value::as_str) == Some(id.as_str())).map(|(real, _)| (named.to_string(), real.clone()))
            }
            _ => find_typed(&w, store_ty(named), &id).map(|t| {
                let id = if t == "Issue" { w.issue_id(&id).unwrap_or(id.clone()) } else { id.clone() };
                (t, id)
            }),
        };
        drop(w);
        match found {
            Some((t, id)) => {
                let t = if store_ty(named) != named { named.to_string() } else { t };
                Ok(ResolvedValue::object(Ent { ctx, ty: exec::type_name(&t), id: id.into() }))
            }
            None => Err(ctx.not_found(store_ty(named))),
        }
    }
}

/// `semanticSearch`'s answer: `enabled` (always true, as Linear says) and the results.
struct SemanticPayload<'a> {
    results: std::cell::RefCell<Option<Vec<ResolvedValue<'a>>>>,
}

impl<'a> ObjectValue for SemanticPayload<'a> {
    fn type_name(&self) -> &str {
        "SemanticSearchPayload"
    }

    fn resolve_field<'b>(&'b self, info: &ResolveInfo<'_>) -> Result<ResolvedValue<'b>, FieldError> {
        match info.field_name() {
            "enabled" => Ok(ResolvedValue::Leaf(json!(true))),
            _ => Ok(ResolvedValue::list(self.results.borrow_mut().take().unwrap_or_default())),
        }
    }
}

/// One `semanticSearch` result: its type and the entity under that type's field.
struct SemanticHit<'c, 'w> {
    ctx: &'c Ctx<'w>,
    kind: &'static str,
    id: String,
}

impl ObjectValue for SemanticHit<'_, '_> {
    fn type_name(&self) -> &str {
        "SemanticSearchResult"
    }

    fn resolve_field<'a>(&'a self, info: &ResolveInfo<'_>) -> Result<ResolvedValue<'a>, FieldError> {
        let ctx = self.ctx;
        match info.field_name() {
            "id" => Ok(ResolvedValue::Leaf(json!(self.id))),
            "type" => Ok(ResolvedValue::Leaf(json!(self.kind))),
            f if f == self.kind => {
                let ty = match self.kind {
                    "issue" => "Issue",
                    "project" => "Project",
                    "initiative" => "Initiative",
                    _ => "Document",
                };
                Ok(ResolvedValue::object(Ent { ctx, ty: exec::type_name(ty), id: self.id.as_str().into() }))
            }
            _ => Ok(ResolvedValue::null()),
        }
    }
}
