//! Linear's MCP server (`https://mcp.linear.app/mcp`) as the twin serves it at `/mcp/v1`:
//! JSON-RPC (`initialize`, `tools/list`, `tools/call`, `ping`) listing the vendor's tools as
//! captured (`mcp/tools.json`, schemas and descriptions verbatim).
//!
//! A tool resolves names the way Linear's server does (a team by id, key or name; a user by
//! id, name, email or `me`; a state by id, name or type; an issue by identifier; a project or
//! initiative by id, name or slug), then reads and writes through the twin's own GraphQL
//! executor: every write is the same mutation an SDK call makes (`issueCreate`,
//! `commentCreate`, `projectMilestoneUpdate`, …), so the call's recorded changes, webhooks and
//! action are the ones the GraphQL API would record. Results are JSON objects in the shape of
//! Linear's server: names beside ids (`status`, `assignee`/`assigneeId`, `labels` as names),
//! lists as `{<things>: [...], hasNextPage, cursor}`.

use std::sync::OnceLock;

use pome_twin_sdk::{Call, Method, Request, Response, Value, json};
use serde_json::Map;

use crate::World;

pub const PATH: &str = "/mcp/v1";

/// The served tools as Linear lists them.
pub fn listing() -> &'static [Value] {
    static T: OnceLock<Vec<Value>> = OnceLock::new();
    T.get_or_init(|| {
        let v: Value = serde_json::from_str(include_str!("../mcp/tools.json")).expect("mcp/tools.json is JSON");
        v["tools"].as_array().cloned().unwrap_or_default()
    })
}

/// `POST /mcp/v1`: one JSON-RPC message or a batch.
pub fn endpoint(w: &mut World, call: &mut Call) -> Response {
    let server = pome_twin_sdk::mcp::Server { name: "Linear", version: "1.0.0", protocol_version: "2025-06-18", tools: listing() };
    pome_twin_sdk::mcp::serve(&server, w, call, call_tool)
}

/// Run tool `name` as part of `call`: its GraphQL requests' changes and deliveries join the
/// call's, and the call takes the first mutation's name as its action (else the tool's name).
pub fn call_tool(w: &mut World, call: &mut Call, name: &str, args: &Value) -> Result<Value, String> {
    let mut m = Mcp { w, call, action: None, wrote: false };
    let out = m.tool(name, args);
    let action = m.action.take();
    call.action = Some(action.unwrap_or_else(|| name.to_string()));
    out
}

struct Mcp<'a> {
    w: &'a mut World,
    call: &'a mut Call,
    action: Option<String>,
    /// `action` names a write.
    wrote: bool,
}

type R<T = Value> = Result<T, String>;

fn s<'v>(args: &'v Value, k: &str) -> Option<&'v str> {
    args.get(k).and_then(Value::as_str)
}

fn flag(args: &Value, k: &str, default: bool) -> bool {
    args.get(k).and_then(Value::as_bool).unwrap_or(default)
}

fn strs(args: &Value, k: &str) -> Option<Vec<String>> {
    args.get(k).and_then(Value::as_array).map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect())
}

fn eq_ci(a: Option<&Value>, b: &str) -> bool {
    a.and_then(Value::as_str).is_some_and(|x| x.eq_ignore_ascii_case(b))
}

fn names(v: &Value) -> Value {
    Value::Array(v["nodes"].as_array().into_iter().flatten().map(|n| n["name"].clone()).collect())
}

fn nodes(v: &Value) -> Vec<Value> {
    v["nodes"].as_array().cloned().unwrap_or_default()
}

/// A text given whole as `arg`, or as `patch` edits of the entity's `current` text (`None`
/// when creating, where there is nothing to edit): the new text, when either was given.
fn text_or_patch(a: &Value, arg: &str, current: Option<&str>, what: &str) -> R<Option<String>> {
    match (s(a, arg), a.get("patch").and_then(Value::as_array)) {
        (Some(_), Some(_)) => Err(format!("pass either {arg} or patch, not both")),
        (Some(t), None) => Ok(Some(t.to_string())),
        (None, Some(ops)) => {
            let text = current.ok_or_else(|| format!("patch is only valid when updating {what}"))?;
            apply_patch(text, ops).map(Some)
        }
        (None, None) => Ok(None),
    }
}

/// A reference the tool may set (`arg` a name or id, which `resolve` turns into the id) or
/// clear (`arg` null), written to `input` as `field`.
fn set_ref(input: &mut Map<String, Value>, a: &Value, arg: &str, field: &str, resolve: impl FnOnce(&str) -> R<String>) -> R<()> {
    match a.get(arg) {
        Some(Value::Null) => {
            input.insert(field.into(), Value::Null);
        }
        Some(Value::String(v)) => {
            input.insert(field.into(), json!(resolve(v)?));
        }
        _ => {}
    }
    Ok(())
}

/// Keep `id` and the fields asked for, when `fields` names any.
fn pick(v: Value, args: &Value) -> Value {
    let Some(fields) = strs(args, "fields").filter(|f| !f.is_empty()) else { return v };
    let Value::Object(m) = v else { return v };
    Value::Object(m.into_iter().filter(|(k, _)| k == "id" || fields.iter().any(|f| f == k)).collect())
}

/// A whole number the schema types as Float (`priority: 2`), as Linear writes it.
fn whole(v: &Value) -> Value {
    match v.as_f64() {
        Some(f) if f.fract() == 0.0 && f.abs() < 1e15 => json!(f as i64),
        _ => v.clone(),
    }
}

fn priority(v: &Value) -> Value {
    let p = whole(v);
    json!({"value": p, "name": crate::model::priority_label(p.as_i64().unwrap_or(0))})
}

fn named(v: &Value) -> Value {
    if v.is_null() { Value::Null } else { json!({"id": v["id"], "name": v["name"]}) }
}

// --- what each entity reads, and how Linear's server shapes it ----------------------------------

const ISSUE: &str = "id identifier title description priority priorityLabel estimate url branchName createdAt updatedAt archivedAt completedAt startedAt canceledAt dueDate \
slaStartedAt slaMediumRiskAt slaHighRiskAt slaBreachesAt slaType state { id name type } labelIds creator { id name } assignee { id name } \
delegate { id name } project { id name } projectMilestone { id name } parent { id identifier } team { id key name } cycle { id number name }";

/// An issue as Linear's server shapes it. Label names come from the world by `labelIds`: a
/// nested labels connection per issue would put a 250-issue page past the complexity limit.
fn issue_out(v: &Value, w: &crate::model::Inner) -> Value {
    let labels: Vec<Value> = v["labelIds"].as_array().into_iter().flatten().filter_map(|id| w.get("IssueLabel", id.as_str()?)?.get("name").cloned()).collect();
    json!({
        "id": v["id"], "identifier": v["identifier"], "title": v["title"], "description": v["description"],
        "priority": priority(&v["priority"]), "estimate": whole(&v["estimate"]), "url": v["url"],
        "gitBranchName": v["branchName"], "createdAt": v["createdAt"], "updatedAt": v["updatedAt"], "archivedAt": v["archivedAt"],
        "completedAt": v["completedAt"], "startedAt": v["startedAt"], "canceledAt": v["canceledAt"], "dueDate": v["dueDate"],
        "slaStartedAt": v["slaStartedAt"], "slaMediumRiskAt": v["slaMediumRiskAt"], "slaHighRiskAt": v["slaHighRiskAt"],
        "slaBreachesAt": v["slaBreachesAt"], "slaType": v["slaType"],
        "status": v["state"]["name"], "statusType": v["state"]["type"], "labels": labels,
        "createdBy": v["creator"]["name"], "createdById": v["creator"]["id"], "assignee": v["assignee"]["name"], "assigneeId": v["assignee"]["id"],
        "delegate": v["delegate"]["name"], "delegateId": v["delegate"]["id"], "project": v["project"]["name"], "projectId": v["project"]["id"],
        "projectMilestone": named(&v["projectMilestone"]), "parentId": v["parent"]["id"], "team": v["team"]["name"], "teamId": v["team"]["id"],
        "cycleId": v["cycle"]["id"],
    })
}

const COMMENT: &str = "id body createdAt updatedAt editedAt resolvedAt url quotedText user { id name } parent { id } issue { id identifier } project { id } initiative { id } projectUpdate { id } initiativeUpdate { id }";

fn comment_out(v: &Value) -> Value {
    json!({
        "id": v["id"], "body": v["body"], "createdAt": v["createdAt"], "updatedAt": v["updatedAt"], "editedAt": v["editedAt"],
        "resolvedAt": v["resolvedAt"], "url": v["url"], "quotedText": v["quotedText"], "author": v["user"]["name"], "authorId": v["user"]["id"],
        "parentId": v["parent"]["id"], "issueId": v["issue"]["id"], "projectId": v["project"]["id"], "initiativeId": v["initiative"]["id"],
        "statusUpdateId": if v["projectUpdate"].is_null() { v["initiativeUpdate"]["id"].clone() } else { v["projectUpdate"]["id"].clone() },
    })
}

const PROJECT: &str = "id name description content url slugId icon color trashed createdAt updatedAt startedAt completedAt canceledAt startDate startDateResolution targetDate \
targetDateResolution priority priorityLabel state status { id name type } labels { nodes { id name } } lead { id name } \
teams { nodes { id key name } } members { nodes { id name } }";

/// A project as Linear's server shapes it; its initiatives by the world's links.
fn project_out(v: &Value, w: &crate::model::Inner) -> Value {
    let id = v["id"].as_str().unwrap_or("");
    let initiatives: Vec<Value> = w
        .all("InitiativeToProject")
        .filter(|(_, e)| e.get("projectId").and_then(Value::as_str) == Some(id))
        .filter_map(|(_, e)| {
            let i = e.get("initiativeId")?.as_str()?;
            Some(json!({"id": i, "name": w.get("Initiative", i)?.get("name")}))
        })
        .collect();
    json!({
        "id": v["id"], "name": v["name"], "summary": v["description"], "description": v["content"], "url": v["url"], "slugId": v["slugId"],
        "icon": v["icon"], "color": v["color"], "trashed": v["trashed"], "createdAt": v["createdAt"], "updatedAt": v["updatedAt"],
        "startedAt": v["startedAt"], "completedAt": v["completedAt"], "canceledAt": v["canceledAt"], "startDate": v["startDate"],
        "startDateResolution": v["startDateResolution"], "targetDate": v["targetDate"], "targetDateResolution": v["targetDateResolution"],
        "priority": priority(&v["priority"]), "labels": names(&v["labels"]),
        "initiatives": initiatives, "lead": named(&v["lead"]),
        "status": if v["status"].is_null() { json!({"name": v["state"], "type": v["state"]}) } else { json!({"id": v["status"]["id"], "name": v["status"]["name"], "type": v["status"]["type"]}) },
        "teams": nodes(&v["teams"]).iter().map(|t| json!({"id": t["id"], "key": t["key"], "name": t["name"]})).collect::<Vec<_>>(),
        "members": nodes(&v["members"]).iter().map(named).collect::<Vec<_>>(),
    })
}

const MILESTONE: &str = "id name description targetDate progress sortOrder createdAt updatedAt project { id name }";

fn milestone_out(v: &Value) -> Value {
    json!({"id": v["id"], "name": v["name"], "description": v["description"], "targetDate": v["targetDate"], "progress": v["progress"],
           "sortOrder": v["sortOrder"], "createdAt": v["createdAt"], "updatedAt": v["updatedAt"], "project": named(&v["project"])})
}

const DOCUMENT: &str = "id title content url slugId icon color createdAt updatedAt archivedAt creator { id name } updatedBy { id name } project { id name } \
initiative { id name } team { id name } issue { id identifier } cycle { id number name }";

fn document_out(v: &Value) -> Value {
    json!({
        "id": v["id"], "title": v["title"], "content": v["content"], "url": v["url"], "slugId": v["slugId"], "icon": v["icon"], "color": v["color"],
        "createdAt": v["createdAt"], "updatedAt": v["updatedAt"], "archivedAt": v["archivedAt"], "creator": named(&v["creator"]),
        "updatedBy": named(&v["updatedBy"]), "project": named(&v["project"]), "initiative": named(&v["initiative"]), "team": named(&v["team"]),
        "issue": if v["issue"].is_null() { Value::Null } else { json!({"id": v["issue"]["id"], "identifier": v["issue"]["identifier"]}) },
        "cycle": if v["cycle"].is_null() { Value::Null } else { json!({"id": v["cycle"]["id"], "number": v["cycle"]["number"], "name": v["cycle"]["name"]}) },
    })
}

const INITIATIVE: &str = "id name description content url slugId icon color status priority targetDate health createdAt updatedAt owner { id name } \
creator { id name } parentInitiatives { nodes { id name } } labels { nodes { id name } }";

fn initiative_out(v: &Value) -> Value {
    json!({
        "id": v["id"], "name": v["name"], "summary": v["description"], "description": v["content"], "url": v["url"], "slugId": v["slugId"],
        "icon": v["icon"], "color": v["color"], "status": v["status"], "priority": priority(&v["priority"]),
        "targetDate": v["targetDate"], "health": v["health"], "createdAt": v["createdAt"], "updatedAt": v["updatedAt"],
        "owner": named(&v["owner"]), "creator": named(&v["creator"]),
        "parentInitiatives": nodes(&v["parentInitiatives"]).iter().map(named).collect::<Vec<_>>(), "labels": names(&v["labels"]),
    })
}

const UPDATE: &str = "id body health url createdAt updatedAt editedAt isDiffHidden user { id name }";

fn update_out(v: &Value, kind: &str) -> Value {
    let parent = if kind == "project" { named(&v["project"]) } else { named(&v["initiative"]) };
    json!({"id": v["id"], "type": kind, "body": v["body"], "health": v["health"], "url": v["url"], "createdAt": v["createdAt"],
           "updatedAt": v["updatedAt"], "editedAt": v["editedAt"], "isDiffHidden": v["isDiffHidden"], "user": named(&v["user"]), kind: parent})
}

const LABEL: &str = "id name description color isGroup createdAt updatedAt parent { id name }";

fn label_out(v: &Value) -> Value {
    let mut o = json!({"id": v["id"], "name": v["name"], "description": v["description"], "color": v["color"], "isGroup": v["isGroup"],
                       "createdAt": v["createdAt"], "updatedAt": v["updatedAt"], "parent": named(&v["parent"])});
    if v.get("team").is_some() {
        o["team"] = named(&v["team"]);
    }
    o
}

const ATTACHMENT: &str = "id title subtitle url metadata sourceType createdAt updatedAt creator { id name } issue { id identifier }";

fn attachment_out(v: &Value) -> Value {
    json!({"id": v["id"], "title": v["title"], "subtitle": v["subtitle"], "url": v["url"], "metadata": v["metadata"], "sourceType": v["sourceType"],
           "createdAt": v["createdAt"], "updatedAt": v["updatedAt"], "creator": named(&v["creator"]),
           "issue": if v["issue"].is_null() { Value::Null } else { json!({"id": v["issue"]["id"], "identifier": v["issue"]["identifier"]}) }})
}

const SKILL: &str = "id title description body slugId icon color shared createdAt updatedAt lastUsedAt creator { id name }";

fn skill_out(v: &Value, body: bool) -> Value {
    let mut o = json!({"id": v["id"], "title": v["title"], "description": v["description"], "slugId": v["slugId"], "icon": v["icon"], "color": v["color"],
                       "shared": v["shared"], "createdAt": v["createdAt"], "updatedAt": v["updatedAt"], "lastUsedAt": v["lastUsedAt"], "creator": named(&v["creator"])});
    if body {
        o["body"] = v["body"].clone();
    }
    o
}

// No `url`: the twin does not know where Linear shows a pipeline (`ReleasePipeline.url`), and
// answers it as not supported rather than make one up.
const PIPELINE: &str = "id name slugId type isProduction createdAt updatedAt";

// No `url` either (`Release.url`), for the same reason.
const RELEASE: &str = "id name description version slugId commitSha startDate targetDate startedAt completedAt canceledAt createdAt updatedAt \
pipeline { id name } stage { id name type }";

const TEAM: &str = "id key name description icon color private createdAt updatedAt cyclesEnabled";

fn team_out(v: &Value) -> Value {
    json!({"id": v["id"], "key": v["key"], "name": v["name"], "description": v["description"], "icon": v["icon"], "color": v["color"],
           "private": v["private"], "cyclesEnabled": v["cyclesEnabled"], "createdAt": v["createdAt"], "updatedAt": v["updatedAt"]})
}

const USER: &str = "id name displayName email avatarUrl active admin guest isMe createdAt updatedAt";

fn user_out(v: &Value) -> Value {
    json!({"id": v["id"], "name": v["name"], "displayName": v["displayName"], "email": v["email"], "avatarUrl": v["avatarUrl"],
           "isActive": v["active"], "isAdmin": v["admin"], "isGuest": v["guest"], "isMe": v["isMe"], "createdAt": v["createdAt"], "updatedAt": v["updatedAt"]})
}

const STATE: &str = "id name type color position description team { id key name }";

fn state_out(v: &Value) -> Value {
    json!({"id": v["id"], "name": v["name"], "type": v["type"], "color": v["color"], "position": v["position"], "description": v["description"]})
}

const CYCLE: &str = "id number name description startsAt endsAt completedAt progress isActive isNext isPrevious isFuture isPast team { id key name }";

fn cycle_out(v: &Value) -> Value {
    json!({"id": v["id"], "number": v["number"], "name": v["name"], "description": v["description"], "startsAt": v["startsAt"], "endsAt": v["endsAt"],
           "completedAt": v["completedAt"], "progress": v["progress"], "isActive": v["isActive"], "isNext": v["isNext"], "isPrevious": v["isPrevious"],
           "teamId": v["team"]["id"]})
}

/// Apply `save_*`'s `patch` operations to `text`, in order; one that does not apply aborts.
pub fn apply_patch(text: &str, ops: &[Value]) -> R<String> {
    fn once(text: &str, needle: &str, what: &str) -> R<usize> {
        let mut found = text.match_indices(needle);
        match (found.next(), found.next()) {
            (Some((i, _)), None) => Ok(i),
            (None, _) => Err(format!("patch: the {what} {needle:?} is not in the current content")),
            (Some(_), Some(_)) => Err(format!("patch: the {what} {needle:?} matches the current content more than once")),
        }
    }
    let mut out = text.to_string();
    for (n, op) in ops.iter().enumerate() {
        let str_of = |k: &str| op.get(k).and_then(Value::as_str).ok_or_else(|| format!("patch[{n}]: `{k}` is required"));
        out = match op.get("op").and_then(Value::as_str).unwrap_or("") {
            "replace" => {
                let old = str_of("old_string")?;
                let new = str_of("new_string")?;
                if op.get("replace_all").and_then(Value::as_bool) == Some(true) {
                    if !out.contains(old) {
                        return Err(format!("patch[{n}]: {old:?} is not in the current content"));
                    }
                    out.replace(old, new)
                } else {
                    let i = once(&out, old, "old_string").map_err(|e| format!("patch[{n}]: {e}"))?;
                    format!("{}{new}{}", &out[..i], &out[i + old.len()..])
                }
            }
            "insert_before" | "insert_after" => {
                let anchor = str_of("anchor")?;
                let t = str_of("text")?;
                let i = once(&out, anchor, "anchor").map_err(|e| format!("patch[{n}]: {e}"))?;
                let at = if op["op"] == "insert_before" { i } else { i + anchor.len() };
                format!("{}{t}{}", &out[..at], &out[at..])
            }
            "prepend" => format!("{}{out}", str_of("text")?),
            "append" => format!("{out}{}", str_of("text")?),
            "replace_range" => {
                let from = str_of("from")?;
                let to = str_of("to")?;
                let new = str_of("new_string")?;
                let i = once(&out, from, "from").map_err(|e| format!("patch[{n}]: {e}"))?;
                let j = i + once(&out[i..], to, "to").map_err(|e| format!("patch[{n}]: {e}"))?;
                format!("{}{new}{}", &out[..i], &out[j..])
            }
            other => return Err(format!("patch[{n}]: unknown op {other:?}")),
        };
    }
    Ok(out)
}

/// Image references in markdown: `![alt](url "title")` and `<img src="url">`, in order, once each.
pub fn images(markdown: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut rest = markdown;
    while let Some(i) = rest.find("![") {
        rest = &rest[i + 2..];
        let Some(close) = rest.find("](") else { break };
        let alt = rest[..close].to_string();
        let after = &rest[close + 2..];
        let Some(end) = after.find(')') else { break };
        let url = after[..end].split_whitespace().next().unwrap_or("").trim_matches(|c| c == '<' || c == '>').to_string();
        if !url.is_empty() && !out.iter().any(|(u, _)| *u == url) {
            out.push((url, alt));
        }
        rest = &after[end..];
    }
    let mut rest = markdown;
    while let Some(i) = rest.find("<img") {
        rest = &rest[i + 4..];
        let tag = &rest[..rest.find('>').unwrap_or(rest.len())];
        if let Some(j) = tag.find("src=") {
            let v = &tag[j + 4..];
            let q = v.chars().next().unwrap_or(' ');
            let url = if q == '"' || q == '\'' { v[1..].split(q).next().unwrap_or("") } else { v.split_whitespace().next().unwrap_or("") };
            let alt = tag.find("alt=\"").map(|k| tag[k + 5..].split('"').next().unwrap_or("").to_string()).unwrap_or_default();
            if !url.is_empty() && !out.iter().any(|(u, _)| u == url) {
                out.push((url.to_string(), alt));
            }
        }
    }
    out
}

/// `-P1D`, `P2W`, `-PT12H` (before now, whichever the sign), or a date or timestamp as given.
fn since(now: chrono::DateTime<chrono::Utc>, s: &str) -> R<String> {
    let t = s.trim();
    match crate::dates::duration_secs(t) {
        Some(secs) => Ok((now - chrono::Duration::seconds(secs?.abs())).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
        None if t.len() == 10 => Ok(format!("{t}T00:00:00.000Z")),
        None => Ok(t.to_string()),
    }
}

impl Mcp<'_> {
    /// A GraphQL request served by the twin's executor as part of this call.
    fn gql(&mut self, query: &str, vars: Value) -> R {
        let mut req = Request::new(Method::Post, "/graphql").with_json(&json!({"query": query, "variables": vars}));
        req.base_url = self.call.req.base_url.clone();
        req.auth = self.call.req.auth;
        let mut inner = Call::new(req);
        // Linear's MCP server is metered apart from the GraphQL API: nothing is spent here.
        let resp = match crate::execute(self.w, &mut inner, &mut |_, _| true) {
            Ok((r, _)) => r,
            Err(r) => r,
        };
        self.call.changes.append(&mut inner.changes);
        self.call.deliveries.append(&mut inner.deliveries);
        self.call.unsupported |= inner.unsupported;
        // The call is named after its first write, else its first read.
        if let Some(a) = inner.action.filter(|a| a != "graphql") {
            let write = query.trim_start().starts_with("mutation");
            if self.action.is_none() || (write && !self.wrote) {
                self.action = Some(a);
                self.wrote |= write;
            }
        }
        let v: Value = serde_json::from_slice(&resp.body).unwrap_or(Value::Null);
        if let Some(e) = v["errors"].as_array().and_then(|e| e.first()) {
            return Err(e["extensions"]["userPresentableMessage"].as_str().or(e["message"].as_str()).unwrap_or("request failed").to_string());
        }
        Ok(v["data"].clone())
    }

    fn now(&mut self) -> chrono::DateTime<chrono::Utc> {
        crate::request_time(self.w)
    }

    /// One entity by id through `root(id:)`, read with `sel`.
    fn get(&mut self, root: &str, id: &str, sel: &str) -> R {
        let d = self.gql(&format!("query($id: String!) {{ {root}(id: $id) {{ {sel} }} }}"), json!({"id": id}))?;
        Ok(d[root].clone())
    }

    /// A page of `root` with Linear's paging arguments (`limit`, `cursor`, `orderBy`,
    /// `includeArchived`) and `filter`: the nodes and the next page's cursor.
    fn page(&mut self, root: &str, filter_ty: Option<&str>, filter: Value, sel: &str, args: &Value, archived: bool) -> R<(Vec<Value>, Value)> {
        let limit = args.get("limit").and_then(Value::as_f64).unwrap_or(50.0).clamp(1.0, 250.0) as i64;
        let (decl, pass) = match filter_ty {
            Some(t) => (format!(", $filter: {t}"), ", filter: $filter"),
            None => (String::new(), ""),
        };
        let q = format!(
            "query($first: Int, $after: String, $orderBy: PaginationOrderBy, $includeArchived: Boolean{decl}) {{ {root}(first: $first, after: $after, orderBy: $orderBy, includeArchived: $includeArchived{pass}) {{ nodes {{ {sel} }} pageInfo {{ hasNextPage endCursor }} }} }}"
        );
        let mut vars = json!({"first": limit, "orderBy": s(args, "orderBy").unwrap_or("updatedAt"), "includeArchived": flag(args, "includeArchived", archived)});
        if let Some(c) = s(args, "cursor") {
            vars["after"] = json!(c);
        }
        if filter_ty.is_some() {
            vars["filter"] = filter;
        }
        let d = self.gql(&q, vars)?;
        let conn = &d[root];
        let next = if conn["pageInfo"]["hasNextPage"] == true { conn["pageInfo"]["endCursor"].clone() } else { Value::Null };
        Ok((nodes(conn), next))
    }

    fn listed(key: &str, items: Vec<Value>, next: Value) -> Value {
        json!({key: items, "hasNextPage": !next.is_null(), "cursor": next})
    }

    /// `createdAt`/`updatedAt` arguments as "after" comparators on `filter`.
    fn dates(&mut self, args: &Value, filter: &mut Map<String, Value>) -> R<()> {
        for k in ["createdAt", "updatedAt"] {
            if let Some(v) = s(args, k) {
                let now = self.now();
                filter.insert(k.into(), json!({"gt": since(now, v)?}));
            }
        }
        Ok(())
    }

    // --- names to ids ------------------------------------------------------------------------

    fn find(&self, ty: &str, key: &str, fields: &[&str]) -> Option<String> {
        let w = &self.w.0;
        if w.get(ty, key).is_some() {
            return Some(key.to_string());
        }
        fields.iter().find_map(|f| w.all(ty).find(|(_, e)| e.get("archivedAt").is_none_or(Value::is_null) && eq_ci(e.get(*f), key)).map(|(id, _)| id.clone()))
    }

    fn team(&self, key: &str) -> R<String> {
        self.find("Team", key, &["key", "name"]).ok_or_else(|| format!("Team not found: {key}"))
    }

    fn user(&self, key: &str) -> R<String> {
        if key.eq_ignore_ascii_case("me") {
            return Ok(self.w.0.viewer.clone());
        }
        self.find("User", key, &["email", "name", "displayName"]).ok_or_else(|| format!("User not found: {key}"))
    }

    fn issue(&self, key: &str) -> R<String> {
        self.w.0.issue_id(key).ok_or_else(|| format!("Issue not found: {key}"))
    }

    /// An entity of `ty` by `fields`, else by its URL or URL slug, which ends with its slug id
    /// (`…/project/apollo-3f2a9c01b7de`).
    fn by_slug(&self, ty: &str, key: &str, fields: &[&str]) -> Option<String> {
        self.find(ty, key, fields).or_else(|| {
            let key = key.trim_end_matches('/');
            self.w.0.all(ty).find(|(_, e)| e.get("slugId").and_then(Value::as_str).is_some_and(|sl| !sl.is_empty() && key.ends_with(sl))).map(|(id, _)| id.clone())
        })
    }

    fn project(&self, key: &str) -> R<String> {
        self.by_slug("Project", key, &["name", "slugId"]).ok_or_else(|| format!("Project not found: {key}"))
    }

    fn initiative(&self, key: &str) -> R<String> {
        self.by_slug("Initiative", key, &["name", "slugId", "identifier"]).ok_or_else(|| format!("Initiative not found: {key}"))
    }

    fn document(&self, key: &str) -> R<String> {
        self.by_slug("Document", key, &["slugId"]).ok_or_else(|| format!("Document not found: {key}"))
    }

    fn state(&self, team: &str, key: &str) -> R<String> {
        let w = &self.w.0;
        if w.get("WorkflowState", key).is_some() {
            return Ok(key.to_string());
        }
        let of_team = |e: &crate::model::Entity| e.get("teamId").and_then(Value::as_str) == Some(team);
        w.all("WorkflowState")
            .find(|(_, e)| of_team(e) && eq_ci(e.get("name"), key))
            .or_else(|| w.all("WorkflowState").filter(|(_, e)| of_team(e) && eq_ci(e.get("type"), key)).min_by(|a, b| pos(a.1).total_cmp(&pos(b.1))))
            .map(|(id, _)| id.clone())
            .ok_or_else(|| format!("Status not found in team: {key}"))
    }

    fn cycle(&self, team: Option<&str>, key: &str) -> R<String> {
        let w = &self.w.0;
        if w.get("Cycle", key).is_some() {
            return Ok(key.to_string());
        }
        w.all("Cycle")
            .find(|(_, e)| {
                team.is_none_or(|t| e.get("teamId").and_then(Value::as_str) == Some(t))
                    && (eq_ci(e.get("name"), key) || e.get("number").and_then(Value::as_f64).is_some_and(|n| key.parse::<f64>().ok() == Some(n)))
            })
            .map(|(id, _)| id.clone())
            .ok_or_else(|| format!("Cycle not found: {key}"))
    }

    fn milestone(&self, project: Option<&str>, key: &str) -> R<String> {
        let w = &self.w.0;
        if w.get("ProjectMilestone", key).is_some() {
            return Ok(key.to_string());
        }
        w.all("ProjectMilestone")
            .find(|(_, e)| project.is_none_or(|p| e.get("projectId").and_then(Value::as_str) == Some(p)) && eq_ci(e.get("name"), key))
            .map(|(id, _)| id.clone())
            .ok_or_else(|| format!("Milestone not found: {key}"))
    }

    /// Issue labels by id or name: the team's own first, then the workspace's.
    fn issue_labels(&self, team: Option<&str>, keys: &[String]) -> R<Vec<String>> {
        let w = &self.w.0;
        keys.iter()
            .map(|k| {
                if w.get("IssueLabel", k).is_some() {
                    return Ok(k.clone());
                }
                let matching = |want_team: Option<&str>| w.all("IssueLabel").find(|(_, e)| eq_ci(e.get("name"), k) && e.get("teamId").and_then(Value::as_str) == want_team).map(|(id, _)| id.clone());
                team.and_then(|t| matching(Some(t))).or_else(|| matching(None)).ok_or_else(|| format!("Label not found: {k}"))
            })
            .collect()
    }

    fn labels_of(&self, ty: &str, keys: &[String]) -> R<Vec<String>> {
        keys.iter().map(|k| self.find(ty, k, &["name"]).ok_or_else(|| format!("Label not found: {k}"))).collect()
    }

    fn release(&self, key: &str) -> R<String> {
        self.find("Release", key, &["slugId"]).ok_or_else(|| format!("Release not found: {key}"))
    }

    fn pipeline(&self, key: &str) -> R<String> {
        self.find("ReleasePipeline", key, &["slugId", "name"]).ok_or_else(|| format!("Release pipeline not found: {key}"))
    }

    fn release_note(&self, key: &str) -> R<String> {
        self.find("ReleaseNote", key, &["slugId"]).ok_or_else(|| format!("Release notes not found: {key}"))
    }

    /// A stage of `pipeline` by id, exact name, or lifecycle type (its first of that type).
    fn stage(&self, pipeline: &str, key: &str) -> R<String> {
        let w = &self.w.0;
        let of = |e: &crate::model::Entity| e.get("pipelineId").and_then(Value::as_str) == Some(pipeline);
        if w.get("ReleaseStage", key).is_some_and(|e| of(e)) {
            return Ok(key.to_string());
        }
        w.all("ReleaseStage")
            .find(|(_, e)| of(e) && e.get("name").and_then(Value::as_str) == Some(key))
            .or_else(|| w.all("ReleaseStage").filter(|(_, e)| of(e) && eq_ci(e.get("type"), key)).min_by(|x, y| pos(x.1).total_cmp(&pos(y.1))))
            .map(|(id, _)| id.clone())
            .ok_or_else(|| format!("Release stage not found in the pipeline: {key}"))
    }

    /// Release notes that cover `release` (listed, or within their range).
    fn notes_of(&self, release: &str) -> Vec<String> {
        self.w
            .0
            .all("ReleaseNote")
            .filter(|(_, n)| {
                n.get("releaseIds").and_then(Value::as_array).is_some_and(|l| l.iter().any(|x| x.as_str() == Some(release)))
                    || [n.get("rangeFromReleaseId"), n.get("rangeToReleaseId")].into_iter().flatten().any(|x| x.as_str() == Some(release))
            })
            .map(|(id, _)| id.clone())
            .collect()
    }

    // --- tools ---------------------------------------------------------------------------------

    fn tool(&mut self, name: &str, a: &Value) -> R {
        match name {
            "list_issues" => self.list_issues(a),
            "get_issue" => self.get_issue(a),
            "save_issue" => self.save_issue(a),
            "list_issue_statuses" => {
                let team = self.team(s(a, "team").unwrap_or(""))?;
                let d = self.gql(&format!("query($f: WorkflowStateFilter) {{ workflowStates(first: 250, filter: $f) {{ nodes {{ {STATE} }} }} }}"), json!({"f": {"team": {"id": {"eq": team}}}}))?;
                let mut list = nodes(&d["workflowStates"]);
                list.sort_by(|x, y| x["position"].as_f64().unwrap_or(0.0).total_cmp(&y["position"].as_f64().unwrap_or(0.0)));
                Ok(Value::Array(list.iter().map(state_out).collect()))
            }
            "get_issue_status" => {
                let team = self.team(s(a, "team").unwrap_or(""))?;
                let id = s(a, "id").filter(|i| self.w.0.get("WorkflowState", i).is_some()).map(str::to_string);
                let id = match id {
                    Some(id) => id,
                    None => self.state(&team, s(a, "name").unwrap_or(""))?,
                };
                let v = self.get("workflowState", &id, STATE)?;
                Ok(state_out(&v))
            }
            "list_issue_labels" => {
                let mut f = Map::new();
                if let Some(n) = s(a, "name") {
                    f.insert("name".into(), json!({"containsIgnoreCase": n}));
                }
                if let Some(t) = s(a, "team") {
                    let t = self.team(t)?;
                    f.insert("team".into(), json!({"id": {"eq": t}}));
                }
                let (items, next) = self.page("issueLabels", Some("IssueLabelFilter"), Value::Object(f), &format!("{LABEL} team {{ id name }}"), a, false)?;
                Ok(Self::listed("labels", items.iter().map(label_out).collect(), next))
            }
            "create_issue_label" => {
                let mut input = json!({"name": s(a, "name").unwrap_or("")});
                for k in ["description", "color"] {
                    if let Some(v) = s(a, k) {
                        input[k] = json!(v);
                    }
                }
                if let Some(t) = s(a, "teamId") {
                    input["teamId"] = json!(self.team(t)?);
                }
                if let Some(p) = s(a, "parent") {
                    let team = input["teamId"].as_str().map(str::to_string);
                    input["parentId"] = json!(self.issue_labels(team.as_deref(), &[p.to_string()])?[0]);
                }
                if flag(a, "isGroup", false) {
                    input["isGroup"] = json!(true);
                }
                let d = self.gql(&format!("mutation($i: IssueLabelCreateInput!) {{ issueLabelCreate(input: $i) {{ issueLabel {{ {LABEL} team {{ id name }} }} }} }}"), json!({"i": input}))?;
                Ok(label_out(&d["issueLabelCreate"]["issueLabel"]))
            }
            "list_comments" => self.list_comments(a),
            "save_comment" => self.save_comment(a),
            "delete_comment" => {
                let id = s(a, "id").unwrap_or("");
                let d = self.gql("mutation($id: String!) { commentDelete(id: $id) { success } }", json!({"id": id}))?;
                Ok(json!({"id": id, "success": d["commentDelete"]["success"]}))
            }
            "list_cycles" => {
                let team = self.team(s(a, "teamId").unwrap_or(""))?;
                let mut f = json!({"team": {"id": {"eq": team}}});
                match s(a, "type") {
                    Some("current") => f["isActive"] = json!({"eq": true}),
                    Some("previous") => f["isPrevious"] = json!({"eq": true}),
                    Some("next") => f["isNext"] = json!({"eq": true}),
                    _ => {}
                }
                let d = self.gql(&format!("query($f: CycleFilter) {{ cycles(first: 250, filter: $f) {{ nodes {{ {CYCLE} }} }} }}"), json!({"f": f}))?;
                let mut list = nodes(&d["cycles"]);
                list.sort_by_key(|c| c["number"].as_i64().unwrap_or(0));
                Ok(Value::Array(list.iter().map(cycle_out).collect()))
            }
            "get_document" => {
                let id = self.document(s(a, "id").unwrap_or(""))?;
                Ok(document_out(&self.get("document", &id, DOCUMENT)?))
            }
            "list_documents" => {
                let mut f = Map::new();
                if let Some(q) = s(a, "query") {
                    f.insert("title".into(), json!({"containsIgnoreCase": q}));
                }
                for (arg, rel) in [("projectId", "project"), ("initiativeId", "initiative"), ("teamId", "team"), ("creatorId", "creator")] {
                    if let Some(v) = s(a, arg) {
                        let id = match rel {
                            "project" => self.project(v)?,
                            "initiative" => self.initiative(v)?,
                            "team" => self.team(v)?,
                            _ => self.user(v)?,
                        };
                        f.insert(rel.into(), json!({"id": {"eq": id}}));
                    }
                }
                self.dates(a, &mut f)?;
                let (items, next) = self.page("documents", Some("DocumentFilter"), Value::Object(f), DOCUMENT, a, false)?;
                Ok(Self::listed("documents", items.iter().map(|d| pick(document_out(d), a)).collect(), next))
            }
            "save_document" => self.save_document(a),
            "extract_images" => {
                let found = images(s(a, "markdown").unwrap_or(""));
                let mut content = Vec::new();
                for (url, alt) in &found {
                    content.push(json!({"url": url, "alt": alt}));
                }
                Ok(json!({"images": content}))
            }
            "list_projects" => self.list_projects(a),
            "get_project" => {
                let id = self.project(s(a, "query").unwrap_or(""))?;
                let mut sel = PROJECT.to_string();
                if flag(a, "includeMilestones", false) {
                    sel.push_str(&format!(" projectMilestones {{ nodes {{ {MILESTONE} }} }}"));
                }
                if flag(a, "includeResources", false) {
                    sel.push_str(" documents { nodes { id title url } } externalLinks { nodes { id label url } } attachments { nodes { id title url } }");
                }
                let v = self.get("project", &id, &sel)?;
                let mut o = project_out(&v, &self.w.0);
                if !flag(a, "includeMembers", false) {
                    o.as_object_mut().map(|m| m.remove("members"));
                }
                if flag(a, "includeMilestones", false) {
                    o["milestones"] = Value::Array(nodes(&v["projectMilestones"]).iter().map(milestone_out).collect());
                }
                if flag(a, "includeResources", false) {
                    o["documents"] = json!(nodes(&v["documents"]));
                    o["links"] = json!(nodes(&v["externalLinks"]));
                    o["attachments"] = json!(nodes(&v["attachments"]));
                }
                Ok(o)
            }
            "save_project" => self.save_project(a),
            "list_project_labels" => {
                let mut f = Map::new();
                if let Some(n) = s(a, "name") {
                    f.insert("name".into(), json!({"containsIgnoreCase": n}));
                }
                let (items, next) = self.page("projectLabels", Some("ProjectLabelFilter"), Value::Object(f), LABEL, a, false)?;
                Ok(Self::listed("labels", items.iter().map(label_out).collect(), next))
            }
            "list_milestones" => {
                let p = self.project(s(a, "project").unwrap_or(""))?;
                let d = self.gql(&format!("query($f: ProjectMilestoneFilter) {{ projectMilestones(first: 250, filter: $f) {{ nodes {{ {MILESTONE} }} }} }}"), json!({"f": {"project": {"id": {"eq": p}}}}))?;
                let mut list = nodes(&d["projectMilestones"]);
                list.sort_by(|x, y| x["sortOrder"].as_f64().unwrap_or(0.0).total_cmp(&y["sortOrder"].as_f64().unwrap_or(0.0)));
                Ok(json!({"milestones": list.iter().map(milestone_out).collect::<Vec<_>>()}))
            }
            "get_milestone" => {
                let p = self.project(s(a, "project").unwrap_or(""))?;
                let id = self.milestone(Some(&p), s(a, "query").unwrap_or(""))?;
                Ok(milestone_out(&self.get("projectMilestone", &id, MILESTONE)?))
            }
            "save_milestone" => self.save_milestone(a),
            "list_teams" => {
                let mut f = Map::new();
                if let Some(q) = s(a, "query") {
                    f.insert("or".into(), json!([{"name": {"containsIgnoreCase": q}}, {"key": {"containsIgnoreCase": q}}]));
                }
                self.dates(a, &mut f)?;
                let (items, next) = self.page("teams", Some("TeamFilter"), Value::Object(f), TEAM, a, false)?;
                Ok(Self::listed("teams", items.iter().map(team_out).collect(), next))
            }
            "get_team" => {
                let id = self.team(s(a, "query").unwrap_or(""))?;
                let v = self.get("team", &id, &format!("{TEAM} states {{ nodes {{ {STATE} }} }}"))?;
                let mut o = team_out(&v);
                let mut states = nodes(&v["states"]);
                states.sort_by(|x, y| x["position"].as_f64().unwrap_or(0.0).total_cmp(&y["position"].as_f64().unwrap_or(0.0)));
                o["statuses"] = Value::Array(states.iter().map(state_out).collect());
                Ok(o)
            }
            "list_users" => {
                let mut f = Map::new();
                if let Some(q) = s(a, "query") {
                    f.insert("or".into(), json!([{"name": {"containsIgnoreCase": q}}, {"displayName": {"containsIgnoreCase": q}}, {"email": {"containsIgnoreCase": q}}]));
                }
                let (items, next) = match s(a, "team") {
                    Some(t) => {
                        // A team's members: its memberships' users, filtered the same way.
                        let team = self.team(t)?;
                        let members: Vec<Value> = self.w.0.all("TeamMembership").filter(|(_, m)| m.get("teamId").and_then(Value::as_str) == Some(team.as_str())).filter_map(|(_, m)| m.get("userId").cloned()).collect();
                        f.insert("id".into(), json!({"in": members}));
                        self.page("users", Some("UserFilter"), Value::Object(f), USER, a, false)?
                    }
                    None => self.page("users", Some("UserFilter"), Value::Object(f), USER, a, false)?,
                };
                Ok(Self::listed("users", items.iter().map(user_out).collect(), next))
            }
            "get_user" => {
                let id = self.user(s(a, "query").unwrap_or(""))?;
                Ok(user_out(&self.get("user", &id, USER)?))
            }
            "get_workspace" => {
                let d = self.gql("{ organization { id name urlKey logoUrl createdAt userCount teams(first: 250) { nodes { id key name } } } }", json!({}))?;
                let o = &d["organization"];
                Ok(json!({"id": o["id"], "name": o["name"], "urlKey": o["urlKey"], "logoUrl": o["logoUrl"], "createdAt": o["createdAt"], "userCount": o["userCount"],
                          "teams": nodes(&o["teams"]).iter().map(|t| json!({"id": t["id"], "key": t["key"], "name": t["name"]})).collect::<Vec<_>>()}))
            }
            "list_initiatives" => self.list_initiatives(a),
            "get_initiative" => {
                let id = self.initiative(s(a, "query").unwrap_or(""))?;
                self.initiative_full(&id, a)
            }
            "save_initiative" => self.save_initiative(a),
            "list_initiative_labels" => {
                let mut f = Map::new();
                if let Some(n) = s(a, "name") {
                    f.insert("name".into(), json!({"containsIgnoreCase": n}));
                }
                let (items, next) = self.page("initiativeLabels", Some("InitiativeLabelFilter"), Value::Object(f), LABEL, a, false)?;
                Ok(Self::listed("labels", items.iter().map(label_out).collect(), next))
            }
            "create_initiative_label" => {
                let mut input = json!({"name": s(a, "name").unwrap_or("")});
                for k in ["description", "color"] {
                    if let Some(v) = s(a, k) {
                        input[k] = json!(v);
                    }
                }
                if let Some(p) = s(a, "parent") {
                    input["parentId"] = json!(self.labels_of("InitiativeLabel", &[p.to_string()])?[0]);
                }
                if flag(a, "isGroup", false) {
                    input["isGroup"] = json!(true);
                }
                let d = self.gql(&format!("mutation($i: InitiativeLabelCreateInput!) {{ initiativeLabelCreate(input: $i) {{ initiativeLabel {{ {LABEL} }} }} }}"), json!({"i": input}))?;
                Ok(label_out(&d["initiativeLabelCreate"]["initiativeLabel"]))
            }
            "get_status_updates" => self.get_status_updates(a),
            "save_status_update" => self.save_status_update(a),
            "delete_status_update" => {
                let kind = s(a, "type").unwrap_or("project");
                let root = if kind == "project" { "projectUpdateArchive" } else { "initiativeUpdateArchive" };
                let id = s(a, "id").unwrap_or("");
                let d = self.gql(&format!("mutation($id: String!) {{ {root}(id: $id) {{ success }} }}"), json!({"id": id}))?;
                Ok(json!({"id": id, "type": kind, "success": d[root]["success"]}))
            }
            "get_attachment" => Ok(attachment_out(&self.get("attachment", s(a, "id").unwrap_or(""), ATTACHMENT)?)),
            "delete_attachment" => {
                let id = s(a, "id").unwrap_or("");
                let d = self.gql("mutation($id: String!) { attachmentDelete(id: $id) { success } }", json!({"id": id}))?;
                Ok(json!({"id": id, "success": d["attachmentDelete"]["success"]}))
            }
            "prepare_attachment_upload" => {
                let issue = self.issue(s(a, "issue").unwrap_or(""))?;
                let (file, ctype, size) = (s(a, "filename").unwrap_or(""), s(a, "contentType").unwrap_or(""), a.get("size").and_then(Value::as_i64).unwrap_or(0));
                if size >= 2 << 30 {
                    return Err("size must be smaller than 2 GB".into());
                }
                let d = self.gql(
                    "mutation($f: String!, $c: String!, $s: Int!) { fileUpload(filename: $f, contentType: $c, size: $s) { success uploadFile { uploadUrl assetUrl contentType filename size headers { key value } } } }",
                    json!({"f": file, "c": ctype, "s": size}),
                )?;
                let u = &d["fileUpload"]["uploadFile"];
                let mut headers = Map::new();
                headers.insert("content-type".into(), json!(ctype));
                for h in u["headers"].as_array().into_iter().flatten() {
                    if let Some(k) = h["key"].as_str() {
                        headers.insert(k.to_string(), h["value"].clone());
                    }
                }
                Ok(json!({"issueId": issue, "assetUrl": u["assetUrl"], "uploadRequest": {"method": "PUT", "url": u["uploadUrl"], "headers": headers},
                          "filename": file, "contentType": ctype, "size": size, "title": a.get("title").cloned().unwrap_or(json!(file)), "subtitle": a.get("subtitle")}))
            }
            "create_attachment_from_upload" => {
                let issue = self.issue(s(a, "issue").unwrap_or(""))?;
                let url = s(a, "assetUrl").unwrap_or("");
                let title = s(a, "title").map(str::to_string).unwrap_or_else(|| url.rsplit('/').next().filter(|t| !t.is_empty()).unwrap_or(url).to_string());
                let mut input = json!({"issueId": issue, "url": url, "title": title});
                if let Some(st) = s(a, "subtitle") {
                    input["subtitle"] = json!(st);
                }
                let d = self.gql(&format!("mutation($i: AttachmentCreateInput!) {{ attachmentCreate(input: $i) {{ attachment {{ {ATTACHMENT} }} }} }}"), json!({"i": input}))?;
                Ok(attachment_out(&d["attachmentCreate"]["attachment"]))
            }
            "create_attachment" => {
                // The bytes are checked as Linear's worker checks them, then uploaded and linked
                // the way the two-step flow does (the twin keeps no file contents).
                let issue = self.issue(s(a, "issue").unwrap_or(""))?;
                let bytes = base64_decode(s(a, "base64Content").unwrap_or("")).ok_or("base64Content is not valid base64")?;
                let digest = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&bytes));
                if !digest.eq_ignore_ascii_case(s(a, "sha256").unwrap_or("")) {
                    return Err(format!("SHA-256 mismatch: the decoded content hashes to {digest}"));
                }
                if let Some(size) = a.get("size").and_then(Value::as_u64) {
                    if size != bytes.len() as u64 {
                        return Err(format!("Size mismatch: the decoded content is {} bytes, not {size}", bytes.len()));
                    }
                }
                let file = s(a, "filename").unwrap_or("file").to_string();
                let prepared = self.tool("prepare_attachment_upload", &json!({"issue": issue, "filename": file, "contentType": s(a, "contentType").unwrap_or(""), "size": bytes.len()}))?;
                let mut args = json!({"issue": issue, "assetUrl": prepared["assetUrl"], "title": s(a, "title").unwrap_or(&file)});
                if let Some(st) = s(a, "subtitle") {
                    args["subtitle"] = json!(st);
                }
                self.tool("create_attachment_from_upload", &args)
            }
            "list_agent_skills" => {
                let (items, next) = self.page("agentSkills", Some("AgentSkillFilter"), json!({}), SKILL, a, false)?;
                Ok(Self::listed("skills", items.iter().map(|k| skill_out(k, false)).collect(), next))
            }
            "get_agent_skill" => {
                let id = self.find("AgentSkill", s(a, "id").unwrap_or(""), &["slugId"]).ok_or_else(|| format!("Agent skill not found: {}", s(a, "id").unwrap_or("")))?;
                Ok(skill_out(&self.get("agentSkill", &id, SKILL)?, true))
            }
            "list_release_pipelines" => self.list_release_pipelines(a),
            "list_releases" => self.list_releases(a),
            "get_release" => {
                let id = self.release(s(a, "id").unwrap_or(""))?;
                self.release_full(&id, flag(a, "includeReleaseNotes", false))
            }
            "save_release" => self.save_release(a),
            "list_release_notes" => self.list_release_notes(a),
            "get_release_note" => {
                let id = self.release_note(s(a, "id").unwrap_or(""))?;
                self.release_note_full(&id, true, flag(a, "includeReleases", false))
            }
            "save_release_note" => self.save_release_note(a),
            other => Err(format!("Unknown tool: {other}")),
        }
    }

    fn issue_filter(&mut self, a: &Value) -> R<Value> {
        let mut f = Map::new();
        if let Some(q) = s(a, "query") {
            f.insert("or".into(), json!([{"title": {"containsIgnoreCase": q}}, {"description": {"containsIgnoreCase": q}}]));
        }
        let team = match s(a, "team") {
            Some(t) => Some(self.team(t)?),
            None => None,
        };
        if let Some(t) = &team {
            f.insert("team".into(), json!({"id": {"eq": t}}));
        }
        if let Some(st) = s(a, "state") {
            let w = &self.w.0;
            let ids: Vec<String> = w
                .all("WorkflowState")
                .filter(|(id, e)| team.as_deref().is_none_or(|t| e.get("teamId").and_then(Value::as_str) == Some(t)) && (id.as_str() == st || eq_ci(e.get("name"), st) || eq_ci(e.get("type"), st)))
                .map(|(id, _)| id.clone())
                .collect();
            f.insert("state".into(), json!({"id": {"in": ids}}));
        }
        if let Some(c) = s(a, "cycle") {
            let w = &self.w.0;
            let ids: Vec<String> = w
                .all("Cycle")
                .filter(|(id, e)| {
                    team.as_deref().is_none_or(|t| e.get("teamId").and_then(Value::as_str) == Some(t))
                        && (id.as_str() == c || eq_ci(e.get("name"), c) || e.get("number").and_then(Value::as_f64).is_some_and(|n| c.parse::<f64>().ok() == Some(n)))
                })
                .map(|(id, _)| id.clone())
                .collect();
            f.insert("cycle".into(), json!({"id": {"in": ids}}));
        }
        if let Some(l) = s(a, "label") {
            f.insert("labels".into(), json!({"some": {"or": [{"id": {"eq": l}}, {"name": {"eqIgnoreCase": l}}]}}));
        }
        match a.get("assignee") {
            Some(Value::Null) => {
                f.insert("assignee".into(), json!({"null": true}));
            }
            Some(Value::String(u)) if u.eq_ignore_ascii_case("null") => {
                f.insert("assignee".into(), json!({"null": true}));
            }
            Some(Value::String(u)) => {
                let id = self.user(u)?;
                f.insert("assignee".into(), json!({"id": {"eq": id}}));
            }
            _ => {}
        }
        if let Some(d) = s(a, "delegate") {
            let id = self.user(d)?;
            f.insert("delegate".into(), json!({"id": {"eq": id}}));
        }
        if let Some(p) = s(a, "project") {
            let id = self.project(p)?;
            f.insert("project".into(), json!({"id": {"eq": id}}));
        }
        if let Some(r) = s(a, "release") {
            let id = self.release(r)?;
            f.insert("releases".into(), json!({"some": {"id": {"eq": id}}}));
        }
        if let Some(p) = a.get("priority").and_then(Value::as_f64) {
            f.insert("priority".into(), json!({"eq": p}));
        }
        if let Some(p) = s(a, "parentId") {
            let id = self.issue(p)?;
            f.insert("parent".into(), json!({"id": {"eq": id}}));
        }
        self.dates(a, &mut f)?;
        Ok(Value::Object(f))
    }

    fn list_issues(&mut self, a: &Value) -> R {
        let f = self.issue_filter(a)?;
        let (items, next) = self.page("issues", Some("IssueFilter"), f, ISSUE, a, true)?;
        let w = &self.w.0;
        Ok(Self::listed("issues", items.iter().map(|i| pick(issue_out(i, w), a)).collect(), next))
    }

    fn get_issue(&mut self, a: &Value) -> R {
        let id = self.issue(s(a, "id").unwrap_or(""))?;
        let mut sel = format!("{ISSUE} attachments {{ nodes {{ {ATTACHMENT} }} }} documents {{ nodes {{ id title url }} }}");
        if flag(a, "includeRelations", false) {
            sel.push_str(" relations { nodes { id type relatedIssue { id identifier title } } } inverseRelations { nodes { id type issue { id identifier title } } }");
        }
        if flag(a, "includeCustomerNeeds", false) {
            sel.push_str(" needs { nodes { id body priority customer { id name } } }");
        }
        if flag(a, "includeReleases", false) {
            sel.push_str(" releases { nodes { id name version slugId } }");
        }
        let v = self.get("issue", &id, &sel)?;
        let mut o = issue_out(&v, &self.w.0);
        o["attachments"] = Value::Array(nodes(&v["attachments"]).iter().map(attachment_out).collect());
        o["documents"] = json!(nodes(&v["documents"]));
        if flag(a, "includeRelations", false) {
            let brief = |i: &Value| json!({"id": i["id"], "identifier": i["identifier"], "title": i["title"]});
            let (mut blocks, mut blocked_by, mut related, mut duplicate_of, mut duplicates) = (vec![], vec![], vec![], Value::Null, vec![]);
            for r in nodes(&v["relations"]) {
                match r["type"].as_str() {
                    Some("blocks") => blocks.push(brief(&r["relatedIssue"])),
                    Some("duplicate") => duplicate_of = brief(&r["relatedIssue"]),
                    _ => related.push(brief(&r["relatedIssue"])),
                }
            }
            for r in nodes(&v["inverseRelations"]) {
                match r["type"].as_str() {
                    Some("blocks") => blocked_by.push(brief(&r["issue"])),
                    Some("duplicate") => duplicates.push(brief(&r["issue"])),
                    _ => related.push(brief(&r["issue"])),
                }
            }
            o["relations"] = json!({"blocks": blocks, "blockedBy": blocked_by, "relatedTo": related, "duplicateOf": duplicate_of, "duplicates": duplicates});
        }
        if flag(a, "includeCustomerNeeds", false) {
            o["customerNeeds"] = json!(nodes(&v["needs"]));
        }
        if flag(a, "includeReleases", false) {
            o["releases"] = json!(nodes(&v["releases"]));
        }
        Ok(o)
    }

    fn save_issue(&mut self, a: &Value) -> R {
        let existing = match s(a, "id") {
            Some(id) => Some(self.issue(id)?),
            None => None,
        };
        let current = existing.as_ref().and_then(|id| self.w.0.get("Issue", id).cloned());
        let mut input = Map::new();
        let team = match s(a, "team") {
            Some(t) => Some(self.team(t)?),
            None => current.as_ref().and_then(|c| c.get("teamId").and_then(Value::as_str).map(str::to_string)),
        };
        if existing.is_none() {
            if s(a, "title").is_none_or(str::is_empty) {
                return Err("title is required when creating an issue".into());
            }
            if team.is_none() {
                return Err("team is required when creating an issue".into());
            }
        }
        if let Some(t) = s(a, "title") {
            input.insert("title".into(), json!(t));
        }
        if s(a, "team").is_some() {
            input.insert("teamId".into(), json!(team));
        }
        let text = current.as_ref().map(|c| c.get("description").and_then(Value::as_str).unwrap_or(""));
        if let Some(t) = text_or_patch(a, "description", text, "an issue")? {
            input.insert("description".into(), json!(t));
        }
        if let Some(p) = a.get("priority").and_then(Value::as_f64) {
            input.insert("priority".into(), json!(p as i64));
        }
        if let Some(e) = a.get("estimate") {
            input.insert("estimate".into(), if e.is_null() { Value::Null } else { json!(e.as_f64().unwrap_or(0.0) as i64) });
        }
        for (arg, field) in [("dueDate", "dueDate"), ("slaBreachesAt", "slaBreachesAt"), ("slaType", "slaType")] {
            if let Some(v) = a.get(arg) {
                input.insert(field.into(), v.clone());
            }
        }
        if let Some(st) = s(a, "state") {
            let t = team.clone().ok_or("team is required to resolve a state")?;
            input.insert("stateId".into(), json!(self.state(&t, st)?));
        }
        for (arg, field) in [("assignee", "assigneeId"), ("delegate", "delegateId")] {
            set_ref(&mut input, a, arg, field, |u| self.user(u))?;
        }
        set_ref(&mut input, a, "project", "projectId", |p| self.project(p))?;
        set_ref(&mut input, a, "cycle", "cycleId", |c| self.cycle(team.as_deref(), c))?;
        if let Some(m) = s(a, "milestone") {
            let project = input.get("projectId").and_then(Value::as_str).map(str::to_string).or_else(|| current.as_ref().and_then(|c| c.get("projectId").and_then(Value::as_str).map(str::to_string)));
            input.insert("projectMilestoneId".into(), json!(self.milestone(project.as_deref(), m)?));
        }
        set_ref(&mut input, a, "parentId", "parentId", |p| self.issue(p))?;
        if let Some(l) = strs(a, "labels") {
            input.insert("labelIds".into(), json!(self.issue_labels(team.as_deref(), &l)?));
        }
        if a.get("setReleases").is_some() && (a.get("addReleases").is_some() || a.get("removeReleases").is_some()) {
            return Err("setReleases cannot be combined with addReleases/removeReleases".into());
        }
        if existing.is_none() && a.get("removeReleases").is_some() {
            return Err("removeReleases is only valid when updating an existing issue".into());
        }
        if let Some(r) = strs(a, "setReleases") {
            let ids: R<Vec<String>> = r.iter().map(|x| self.release(x)).collect();
            input.insert("releaseIds".into(), json!(ids?));
        }
        for (arg, field) in [("addReleases", "addedReleaseIds"), ("removeReleases", "removedReleaseIds")] {
            let Some(r) = strs(a, arg) else { continue };
            let ids: R<Vec<String>> = r.iter().map(|x| self.release(x)).collect();
            let ids = ids?;
            if existing.is_some() {
                input.insert(field.into(), json!(ids));
            } else {
                // A new issue starts with these releases (appended to any set ones).
                let mut all: Vec<Value> = input.get("releaseIds").and_then(Value::as_array).cloned().unwrap_or_default();
                all.extend(ids.into_iter().map(Value::String));
                input.insert("releaseIds".into(), Value::Array(all));
            }
        }
        // Every name resolves before anything is written.
        let mut relate: Vec<(String, bool, &str)> = Vec::new();
        for (arg, inverse, kind) in [("blocks", false, "blocks"), ("blockedBy", true, "blocks"), ("relatedTo", false, "related")] {
            for other in strs(a, arg).unwrap_or_default() {
                relate.push((self.issue(&other)?, inverse, kind));
            }
        }
        let duplicate = match a.get("duplicateOf") {
            Some(Value::String(d)) => Some(Some(self.issue(d)?)),
            Some(Value::Null) => Some(None),
            _ => None,
        };
        let mut unrelate: Vec<(String, bool, &str)> = Vec::new();
        for (arg, inverse, kind) in [("removeBlocks", false, "blocks"), ("removeBlockedBy", true, "blocks"), ("removeRelatedTo", false, "related")] {
            for other in strs(a, arg).unwrap_or_default() {
                unrelate.push((self.issue(&other)?, inverse, kind));
            }
        }
        let id = match &existing {
            None => {
                let d = self.gql("mutation($i: IssueCreateInput!) { issueCreate(input: $i) { issue { id } } }", json!({"i": input}))?;
                d["issueCreate"]["issue"]["id"].as_str().unwrap_or("").to_string()
            }
            Some(id) => {
                if !input.is_empty() {
                    self.gql("mutation($id: String!, $i: IssueUpdateInput!) { issueUpdate(id: $id, input: $i) { success } }", json!({"id": id, "i": input}))?;
                }
                id.clone()
            }
        };
        for (other, inverse, kind) in relate {
            let (from, to) = if inverse { (other.clone(), id.clone()) } else { (id.clone(), other.clone()) };
            if self.relation(&from, &to, kind).is_none() {
                self.gql("mutation($i: IssueRelationCreateInput!) { issueRelationCreate(input: $i) { success } }", json!({"i": {"issueId": from, "relatedIssueId": to, "type": kind}}))?;
            }
        }
        match duplicate {
            Some(Some(other)) => {
                if self.relation(&id, &other, "duplicate").is_none() {
                    self.gql("mutation($i: IssueRelationCreateInput!) { issueRelationCreate(input: $i) { success } }", json!({"i": {"issueId": id, "relatedIssueId": other, "type": "duplicate"}}))?;
                }
            }
            Some(None) => {
                let dups: Vec<String> = self.w.0.all("IssueRelation").filter(|(_, e)| e.get("issueId").and_then(Value::as_str) == Some(id.as_str()) && e.get("type").and_then(Value::as_str) == Some("duplicate")).map(|(rid, _)| rid.clone()).collect();
                for r in dups {
                    self.gql("mutation($id: String!) { issueRelationDelete(id: $id) { success } }", json!({"id": r}))?;
                }
            }
            None => {}
        }
        for (other, inverse, kind) in unrelate {
            let (from, to) = if inverse { (other.clone(), id.clone()) } else { (id.clone(), other.clone()) };
            let found = self.relation(&from, &to, kind).or_else(|| if kind == "related" { self.relation(&to, &from, kind) } else { None });
            if let Some(r) = found {
                self.gql("mutation($id: String!) { issueRelationDelete(id: $id) { success } }", json!({"id": r}))?;
            }
        }
        for l in a.get("links").and_then(Value::as_array).into_iter().flatten() {
            self.gql("mutation($i: String!, $u: String!, $t: String) { attachmentLinkURL(issueId: $i, url: $u, title: $t) { success } }", json!({"i": id, "u": l["url"], "t": l["title"]}))?;
        }
        self.get_issue(&json!({"id": id}))
    }

    fn relation(&self, from: &str, to: &str, kind: &str) -> Option<String> {
        self.w
            .0
            .all("IssueRelation")
            .find(|(_, e)| e.get("issueId").and_then(Value::as_str) == Some(from) && e.get("relatedIssueId").and_then(Value::as_str) == Some(to) && e.get("type").and_then(Value::as_str) == Some(kind))
            .map(|(id, _)| id.clone())
    }

    /// The one parent `list_comments`/`save_comment` name: (input field, id).
    fn comment_parent(&mut self, a: &Value) -> R<(&'static str, String)> {
        let given: Vec<&str> = ["issueId", "projectId", "initiativeId", "documentId", "milestoneId", "statusUpdateId"].into_iter().filter(|k| s(a, k).is_some()).collect();
        if given.len() != 1 {
            return Err("Provide exactly one of issueId, projectId, initiativeId, documentId, milestoneId, or statusUpdateId".into());
        }
        if a.get("statusUpdateType").is_some() && given[0] != "statusUpdateId" {
            return Err("statusUpdateType is only valid together with statusUpdateId".into());
        }
        let key = s(a, given[0]).unwrap_or("");
        Ok(match given[0] {
            "issueId" => ("issueId", self.issue(key)?),
            "projectId" => ("projectId", self.project(key)?),
            "initiativeId" => ("initiativeId", self.initiative(key)?),
            "statusUpdateId" => {
                let kind = s(a, "statusUpdateType");
                if kind != Some("initiative") && self.w.0.get("ProjectUpdate", key).is_some() {
                    ("projectUpdateId", key.to_string())
                } else if kind != Some("project") && self.w.0.get("InitiativeUpdate", key).is_some() {
                    ("initiativeUpdateId", key.to_string())
                } else {
                    return Err(format!("Status update not found: {key}"));
                }
            }
            // Linear keeps document and milestone descriptions as document contents, which
            // the twin does not model: their comments cannot be placed.
            "documentId" => return Err(format!("Comments on documents are not supported by this workspace (document {key})")),
            _ => return Err(format!("Comments on milestones are not supported by this workspace (milestone {key})")),
        })
    }

    fn list_comments(&mut self, a: &Value) -> R {
        let (field, id) = self.comment_parent(a)?;
        let rel = field.trim_end_matches("Id");
        let (items, next) = self.page("comments", Some("CommentFilter"), json!({rel: {"id": {"eq": id}}}), COMMENT, a, false)?;
        Ok(Self::listed("comments", items.iter().map(comment_out).collect(), next))
    }

    fn save_comment(&mut self, a: &Value) -> R {
        let body = s(a, "body").unwrap_or("");
        if let Some(id) = s(a, "id") {
            if a.get("statusUpdateType").is_some() {
                return Err("statusUpdateType is not valid when updating a comment".into());
            }
            let d = self.gql(&format!("mutation($id: String!, $b: String!) {{ commentUpdate(id: $id, input: {{body: $b}}) {{ comment {{ {COMMENT} }} }} }}"), json!({"id": id, "b": body}))?;
            return Ok(comment_out(&d["commentUpdate"]["comment"]));
        }
        let mut input = json!({"body": body});
        if let Some(p) = s(a, "parentId") {
            if a.get("statusUpdateType").is_some() {
                return Err("statusUpdateType is not valid with parentId".into());
            }
            // A reply joins its parent's thread, on whatever the parent is on.
            let parent = self.w.0.get("Comment", p).cloned().ok_or_else(|| format!("Comment not found: {p}"))?;
            for k in ["issueId", "projectId", "initiativeId", "projectUpdateId", "initiativeUpdateId", "documentContentId"] {
                if let Some(v) = parent.get(k).filter(|v| !v.is_null()) {
                    input[k] = v.clone();
                }
            }
            input["parentId"] = json!(p);
        } else {
            let (field, id) = self.comment_parent(a)?;
            input[field] = json!(id);
            if field.ends_with("UpdateId") {
                // A status update holds one thread: a second comment is a reply in it.
                let root = self.w.0.all("Comment").find(|(_, c)| c.get(field).and_then(Value::as_str) == Some(id.as_str()) && c.get("parentId").is_none_or(Value::is_null)).map(|(cid, _)| cid.clone());
                if let Some(r) = root {
                    input["parentId"] = json!(r);
                }
            }
        }
        let d = self.gql(&format!("mutation($i: CommentCreateInput!) {{ commentCreate(input: $i) {{ comment {{ {COMMENT} }} }} }}"), json!({"i": input}))?;
        Ok(comment_out(&d["commentCreate"]["comment"]))
    }

    fn save_document(&mut self, a: &Value) -> R {
        let existing = match s(a, "id") {
            Some(id) => Some(self.document(id)?),
            None => None,
        };
        let mut input = Map::new();
        for k in ["title", "icon", "color"] {
            if let Some(v) = s(a, k) {
                input.insert(k.into(), json!(v));
            }
        }
        let text = existing.as_ref().map(|id| self.w.0.str_field("Document", id, "content").unwrap_or(""));
        if let Some(t) = text_or_patch(a, "content", text, "a document")? {
            input.insert("content".into(), json!(t));
        }
        let team = match s(a, "team") {
            Some(t) => Some(self.team(t)?),
            None => None,
        };
        let mut parents = 0;
        if let Some(p) = s(a, "project") {
            input.insert("projectId".into(), json!(self.project(p)?));
            parents += 1;
        }
        if let Some(i) = s(a, "issue") {
            input.insert("issueId".into(), json!(self.issue(i)?));
            parents += 1;
        }
        if let Some(i) = s(a, "initiative") {
            input.insert("initiativeId".into(), json!(self.initiative(i)?));
            parents += 1;
        }
        if let Some(c) = s(a, "cycle") {
            input.insert("cycleId".into(), json!(self.cycle(team.as_deref(), c)?));
            parents += 1;
        } else if let Some(t) = &team {
            input.insert("teamId".into(), json!(t));
            parents += 1;
        }
        if parents > 1 {
            return Err("Specify exactly one parent: project, issue, initiative, cycle, or team".into());
        }
        let id = match existing {
            None => {
                if s(a, "title").is_none_or(str::is_empty) {
                    return Err("title is required when creating a document".into());
                }
                if parents == 0 {
                    return Err("Specify exactly one parent: project, issue, initiative, cycle, or team".into());
                }
                let d = self.gql("mutation($i: DocumentCreateInput!) { documentCreate(input: $i) { document { id } } }", json!({"i": input}))?;
                d["documentCreate"]["document"]["id"].as_str().unwrap_or("").to_string()
            }
            Some(id) => {
                if parents == 1 {
                    // Reparenting: the other parents go.
                    for k in ["projectId", "issueId", "initiativeId", "cycleId", "teamId"] {
                        input.entry(k).or_insert(Value::Null);
                    }
                }
                self.gql("mutation($id: String!, $i: DocumentUpdateInput!) { documentUpdate(id: $id, input: $i) { success } }", json!({"id": id, "i": input}))?;
                id
            }
        };
        Ok(document_out(&self.get("document", &id, DOCUMENT)?))
    }

    fn list_projects(&mut self, a: &Value) -> R {
        let mut f = Map::new();
        if let Some(q) = s(a, "query") {
            f.insert("name".into(), json!({"containsIgnoreCase": q}));
        }
        if let Some(st) = s(a, "state") {
            let ids: Vec<String> = self.w.0.all("ProjectStatus").filter(|(id, e)| id.as_str() == st || eq_ci(e.get("name"), st) || eq_ci(e.get("type"), st)).map(|(id, _)| id.clone()).collect();
            f.insert("or".into(), json!([{"status": {"id": {"in": ids}}}, {"state": {"eqIgnoreCase": st}}]));
        }
        // Initiatives, teams and members by the world's links, each narrowing the ids.
        let mut and = Vec::new();
        if let Some(i) = s(a, "initiative") {
            let id = self.initiative(i)?;
            let ids: Vec<String> = self.w.0.all("InitiativeToProject").filter(|(_, e)| e.get("initiativeId").and_then(Value::as_str) == Some(id.as_str())).filter_map(|(_, e)| e.get("projectId").and_then(Value::as_str).map(str::to_string)).collect();
            and.push(json!({"id": {"in": ids}}));
        }
        for (arg, field) in [("team", "teamIds"), ("member", "memberIds")] {
            if let Some(k) = s(a, arg) {
                let id = if arg == "team" { self.team(k)? } else { self.user(k)? };
                let has = |e: &crate::model::Entity| e.get(field).and_then(Value::as_array).is_some_and(|l| l.iter().any(|x| x.as_str() == Some(id.as_str())));
                let ids: Vec<String> = self.w.0.all("Project").filter(|(_, e)| has(e)).map(|(pid, _)| pid.clone()).collect();
                and.push(json!({"id": {"in": ids}}));
            }
        }
        if !and.is_empty() {
            f.insert("and".into(), Value::Array(and));
        }
        if let Some(l) = s(a, "label") {
            f.insert("labels".into(), json!({"some": {"or": [{"id": {"eq": l}}, {"name": {"eqIgnoreCase": l}}]}}));
        }
        self.dates(a, &mut f)?;
        let limit = a.get("limit").and_then(Value::as_f64).unwrap_or(50.0).min(50.0);
        let mut paged = a.clone();
        paged["limit"] = json!(limit);
        let mut sel = PROJECT.to_string();
        if flag(a, "includeMilestones", false) {
            sel.push_str(&format!(" projectMilestones {{ nodes {{ {MILESTONE} }} }}"));
        }
        // A page of ids, then each project whole: its nested connections on a page of 50
        // would pass the complexity limit.
        let (ids, next) = self.page("projects", Some("ProjectFilter"), Value::Object(f), "id", &paged, false)?;
        let mut items = Vec::new();
        for p in ids {
            items.push(self.get("project", p["id"].as_str().unwrap_or(""), &sel)?);
        }
        let out = items
            .iter()
            .map(|p| {
                let mut o = project_out(p, &self.w.0);
                if flag(a, "includeMilestones", false) {
                    o["milestones"] = Value::Array(nodes(&p["projectMilestones"]).iter().map(milestone_out).collect());
                }
                if !flag(a, "includeMembers", false) && !strs(a, "fields").is_some_and(|f| f.iter().any(|x| x == "members")) {
                    o.as_object_mut().map(|m| m.remove("members"));
                }
                pick(o, a)
            })
            .collect();
        Ok(Self::listed("projects", out, next))
    }

    fn save_project(&mut self, a: &Value) -> R {
        let existing = match s(a, "id") {
            Some(id) => Some(self.project(id)?),
            None => None,
        };
        let current = existing.as_ref().and_then(|id| self.w.0.get("Project", id).cloned());
        let mut input = Map::new();
        for k in ["name", "icon", "color", "startDate", "startDateResolution", "targetDate", "targetDateResolution"] {
            if let Some(v) = s(a, k) {
                input.insert(k.into(), json!(v));
            }
        }
        if let Some(v) = s(a, "summary") {
            if v.chars().count() > 255 {
                return Err("summary must be at most 255 characters".into());
            }
            input.insert("description".into(), json!(v));
        }
        let text = current.as_ref().map(|c| c.get("content").and_then(Value::as_str).unwrap_or(""));
        if let Some(t) = text_or_patch(a, "description", text, "a project")? {
            input.insert("content".into(), json!(t));
        }
        if let Some(p) = a.get("priority").and_then(Value::as_i64) {
            input.insert("priority".into(), json!(p));
        }
        if let Some(st) = s(a, "state") {
            let status = self.w.0.all("ProjectStatus").find(|(id, e)| id.as_str() == st || eq_ci(e.get("name"), st)).or_else(|| self.w.0.all("ProjectStatus").find(|(_, e)| eq_ci(e.get("type"), st))).map(|(id, _)| id.clone());
            match status {
                Some(id) => {
                    input.insert("statusId".into(), json!(id));
                }
                None => return Err(format!("Project status not found: {st}")),
            }
        }
        set_ref(&mut input, a, "lead", "leadId", |u| self.user(u))?;
        if let Some(l) = strs(a, "labels") {
            input.insert("labelIds".into(), json!(self.labels_of("ProjectLabel", &l)?));
        }
        if a.get("setTeams").is_some() && (a.get("addTeams").is_some() || a.get("removeTeams").is_some()) {
            return Err("setTeams cannot be combined with addTeams/removeTeams".into());
        }
        let mut teams: Vec<String> = current.as_ref().and_then(|c| c.get("teamIds")).and_then(Value::as_array).map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect()).unwrap_or_default();
        let teams_given = ["setTeams", "addTeams", "removeTeams"].iter().any(|k| a.get(*k).is_some());
        if let Some(set) = strs(a, "setTeams") {
            teams = set.iter().map(|t| self.team(t)).collect::<R<Vec<_>>>()?;
        }
        for t in strs(a, "addTeams").unwrap_or_default() {
            let id = self.team(&t)?;
            if !teams.contains(&id) {
                teams.push(id);
            }
        }
        for t in strs(a, "removeTeams").unwrap_or_default() {
            let id = self.team(&t)?;
            teams.retain(|x| *x != id);
        }
        if teams_given {
            if teams.is_empty() {
                return Err("A project needs at least one team".into());
            }
            input.insert("teamIds".into(), json!(teams));
        }
        if a.get("setInitiatives").is_some() && (a.get("addInitiatives").is_some() || a.get("removeInitiatives").is_some()) {
            return Err("setInitiatives cannot be combined with addInitiatives/removeInitiatives".into());
        }
        let resolve_all = |m: &Self, k: &str| -> R<Option<Vec<String>>> { strs(a, k).map(|v| v.iter().map(|i| m.initiative(i)).collect()).transpose() };
        let set_init = resolve_all(self, "setInitiatives")?;
        let add_init = resolve_all(self, "addInitiatives")?.unwrap_or_default();
        let remove_init = resolve_all(self, "removeInitiatives")?.unwrap_or_default();
        let id = match &existing {
            None => {
                if s(a, "name").is_none_or(str::is_empty) {
                    return Err("name is required when creating a project".into());
                }
                if !teams_given || teams.is_empty() {
                    return Err("At least one team (addTeams or setTeams) is required when creating a project".into());
                }
                let d = self.gql("mutation($i: ProjectCreateInput!) { projectCreate(input: $i) { project { id } } }", json!({"i": input}))?;
                d["projectCreate"]["project"]["id"].as_str().unwrap_or("").to_string()
            }
            Some(id) => {
                if !input.is_empty() {
                    self.gql("mutation($id: String!, $i: ProjectUpdateInput!) { projectUpdate(id: $id, input: $i) { success } }", json!({"id": id, "i": input}))?;
                }
                id.clone()
            }
        };
        let links: Vec<(String, String)> = self.w.0.all("InitiativeToProject").filter(|(_, e)| e.get("projectId").and_then(Value::as_str) == Some(id.as_str())).filter_map(|(lid, e)| Some((lid.clone(), e.get("initiativeId")?.as_str()?.to_string()))).collect();
        let (mut add, mut remove) = (add_init, remove_init);
        if let Some(set) = set_init {
            remove = links.iter().filter(|(_, i)| !set.contains(i)).map(|(_, i)| i.clone()).collect();
            add = set;
        }
        for i in add {
            if !links.iter().any(|(_, x)| *x == i) {
                self.gql("mutation($i: InitiativeToProjectCreateInput!) { initiativeToProjectCreate(input: $i) { success } }", json!({"i": {"initiativeId": i, "projectId": id}}))?;
            }
        }
        for i in remove {
            for (lid, _) in links.iter().filter(|(_, x)| *x == i) {
                self.gql("mutation($id: String!) { initiativeToProjectDelete(id: $id) { success } }", json!({"id": lid}))?;
            }
        }
        for l in a.get("links").and_then(Value::as_array).into_iter().flatten() {
            self.gql("mutation($i: EntityExternalLinkCreateInput!) { entityExternalLinkCreate(input: $i) { success } }", json!({"i": {"projectId": id, "url": l["url"], "label": l["title"]}}))?;
        }
        let v = self.get("project", &id, PROJECT)?;
        let mut o = project_out(&v, &self.w.0);
        o.as_object_mut().map(|m| m.remove("members"));
        Ok(o)
    }

    fn save_milestone(&mut self, a: &Value) -> R {
        let project = self.project(s(a, "project").unwrap_or(""))?;
        let existing = match s(a, "id") {
            Some(m) => Some(self.milestone(Some(&project), m)?),
            None => None,
        };
        let mut input = Map::new();
        for k in ["name", "description"] {
            if let Some(v) = s(a, k) {
                input.insert(k.into(), json!(v));
            }
        }
        if let Some(t) = a.get("targetDate") {
            input.insert("targetDate".into(), t.clone());
        }
        let id = match existing {
            None => {
                if s(a, "name").is_none_or(str::is_empty) {
                    return Err("name is required when creating a milestone".into());
                }
                input.insert("projectId".into(), json!(project));
                let d = self.gql("mutation($i: ProjectMilestoneCreateInput!) { projectMilestoneCreate(input: $i) { projectMilestone { id } } }", json!({"i": input}))?;
                d["projectMilestoneCreate"]["projectMilestone"]["id"].as_str().unwrap_or("").to_string()
            }
            Some(id) => {
                self.gql("mutation($id: String!, $i: ProjectMilestoneUpdateInput!) { projectMilestoneUpdate(id: $id, input: $i) { success } }", json!({"id": id, "i": input}))?;
                id
            }
        };
        Ok(milestone_out(&self.get("projectMilestone", &id, MILESTONE)?))
    }

    fn list_initiatives(&mut self, a: &Value) -> R {
        let mut f = Map::new();
        if let Some(q) = s(a, "query") {
            f.insert("name".into(), json!({"containsIgnoreCase": q}));
        }
        if let Some(st) = s(a, "status") {
            f.insert("status".into(), json!({"eqIgnoreCase": st}));
        }
        if let Some(o) = s(a, "owner") {
            let id = self.user(o)?;
            f.insert("owner".into(), json!({"id": {"eq": id}}));
        }
        if let Some(p) = s(a, "parentInitiative") {
            let id = self.initiative(p)?;
            let children: Vec<String> = self.w.0.all("InitiativeRelation").filter(|(_, e)| e.get("initiativeId").and_then(Value::as_str) == Some(id.as_str())).filter_map(|(_, e)| e.get("relatedInitiativeId").and_then(Value::as_str).map(str::to_string)).collect();
            f.insert("id".into(), json!({"in": children}));
        }
        if let Some(l) = s(a, "label") {
            f.insert("labels".into(), json!({"some": {"or": [{"id": {"eq": l}}, {"name": {"eqIgnoreCase": l}}]}}));
        }
        self.dates(a, &mut f)?;
        let (items, next) = self.page("initiatives", Some("InitiativeFilter"), Value::Object(f), "id", a, false)?;
        let mut out = Vec::new();
        for i in items {
            let id = i["id"].as_str().unwrap_or("").to_string();
            out.push(pick(self.initiative_full(&id, a)?, a));
        }
        Ok(Self::listed("initiatives", out, next))
    }

    fn initiative_full(&mut self, id: &str, a: &Value) -> R {
        let mut sel = INITIATIVE.to_string();
        if flag(a, "includeProjects", false) {
            sel.push_str(" projects { nodes { id name url } }");
        }
        if flag(a, "includeSubInitiatives", false) {
            sel.push_str(" subInitiatives { nodes { id name url } }");
        }
        let v = self.get("initiative", id, &sel)?;
        let mut o = initiative_out(&v);
        // Linear keeps the initiative tree as relations (parent → child).
        let parents: Vec<String> = self.w.0.all("InitiativeRelation").filter(|(_, e)| e.get("relatedInitiativeId").and_then(Value::as_str) == Some(id)).filter_map(|(_, e)| e.get("initiativeId").and_then(Value::as_str).map(str::to_string)).collect();
        o["parentInitiatives"] = Value::Array(parents.iter().filter_map(|p| self.w.0.get("Initiative", p).map(|e| json!({"id": p, "name": e.get("name")}))).collect());
        if flag(a, "includeProjects", false) {
            let ids: Vec<String> = self.w.0.all("InitiativeToProject").filter(|(_, e)| e.get("initiativeId").and_then(Value::as_str) == Some(id)).filter_map(|(_, e)| e.get("projectId").and_then(Value::as_str).map(str::to_string)).collect();
            o["projects"] = Value::Array(ids.iter().filter_map(|p| self.w.0.get("Project", p).map(|e| json!({"id": p, "name": e.get("name")}))).collect());
        }
        if flag(a, "includeSubInitiatives", false) {
            let ids: Vec<String> = self.w.0.all("InitiativeRelation").filter(|(_, e)| e.get("initiativeId").and_then(Value::as_str) == Some(id)).filter_map(|(_, e)| e.get("relatedInitiativeId").and_then(Value::as_str).map(str::to_string)).collect();
            o["subInitiatives"] = Value::Array(ids.iter().filter_map(|p| self.w.0.get("Initiative", p).map(|e| json!({"id": p, "name": e.get("name")}))).collect());
        }
        Ok(o)
    }

    fn save_initiative(&mut self, a: &Value) -> R {
        let existing = match s(a, "id") {
            Some(id) => Some(self.initiative(id)?),
            None => None,
        };
        let mut input = Map::new();
        for k in ["name", "color", "icon", "targetDate"] {
            if let Some(v) = s(a, k) {
                input.insert(k.into(), json!(v));
            }
        }
        if let Some(v) = s(a, "summary") {
            if v.chars().count() > 255 {
                return Err("summary must be at most 255 characters".into());
            }
            input.insert("description".into(), json!(v));
        }
        let text = existing.as_ref().map(|id| self.w.0.str_field("Initiative", id, "content").unwrap_or(""));
        if let Some(t) = text_or_patch(a, "description", text, "an initiative")? {
            input.insert("content".into(), json!(t));
        }
        if let Some(st) = s(a, "status") {
            let canonical = ["Planned", "Active", "Completed"].into_iter().find(|c| c.eq_ignore_ascii_case(st)).ok_or_else(|| format!("Unknown initiative status: {st} (Planned, Active or Completed)"))?;
            input.insert("status".into(), json!(canonical));
        }
        if let Some(p) = a.get("priority").and_then(Value::as_i64) {
            input.insert("priority".into(), json!(p));
        }
        set_ref(&mut input, a, "owner", "ownerId", |u| self.user(u))?;
        if let Some(l) = strs(a, "labels") {
            input.insert("labelIds".into(), json!(self.labels_of("InitiativeLabel", &l)?));
        }
        let parents: Vec<String> = strs(a, "parentInitiatives").unwrap_or_default().iter().map(|p| self.initiative(p)).collect::<R<Vec<_>>>()?;
        let id = match existing {
            None => {
                if s(a, "name").is_none_or(str::is_empty) {
                    return Err("name is required when creating an initiative".into());
                }
                let d = self.gql("mutation($i: InitiativeCreateInput!) { initiativeCreate(input: $i) { initiative { id } } }", json!({"i": input}))?;
                d["initiativeCreate"]["initiative"]["id"].as_str().unwrap_or("").to_string()
            }
            Some(id) => {
                if !input.is_empty() {
                    self.gql("mutation($id: String!, $i: InitiativeUpdateInput!) { initiativeUpdate(id: $id, input: $i) { success } }", json!({"id": id, "i": input}))?;
                }
                id
            }
        };
        for p in parents {
            let linked = self.w.0.all("InitiativeRelation").any(|(_, e)| e.get("initiativeId").and_then(Value::as_str) == Some(p.as_str()) && e.get("relatedInitiativeId").and_then(Value::as_str) == Some(id.as_str()));
            if !linked {
                self.gql("mutation($i: InitiativeRelationCreateInput!) { initiativeRelationCreate(input: $i) { success } }", json!({"i": {"initiativeId": p, "relatedInitiativeId": id}}))?;
            }
        }
        self.initiative_full(&id, &json!({}))
    }

    fn list_release_pipelines(&mut self, a: &Value) -> R {
        let mut f = Map::new();
        if let Some(q) = s(a, "query") {
            f.insert("name".into(), json!({"containsIgnoreCase": q}));
        }
        if let Some(ty) = s(a, "type") {
            f.insert("type".into(), json!({"eq": ty}));
        }
        if let Some(p) = a.get("isProduction").and_then(Value::as_bool) {
            f.insert("isProduction".into(), json!({"eq": p}));
        }
        if let Some(t) = s(a, "team") {
            let team = self.team(t)?;
            let ids: Vec<String> = self.w.0.all("ReleasePipeline").filter(|(_, e)| e.get("teamIds").and_then(Value::as_array).is_some_and(|l| l.iter().any(|x| x.as_str() == Some(team.as_str())))).map(|(id, _)| id.clone()).collect();
            f.insert("id".into(), json!({"in": ids}));
        }
        self.dates(a, &mut f)?;
        let (items, next) = self.page("releasePipelines", Some("ReleasePipelineFilter"), Value::Object(f), PIPELINE, a, false)?;
        let mut out = Vec::new();
        for p in &items {
            let mut o = json!({"id": p["id"], "name": p["name"], "slugId": p["slugId"], "type": p["type"], "isProduction": p["isProduction"], "url": p["url"], "createdAt": p["createdAt"], "updatedAt": p["updatedAt"]});
            let id = p["id"].as_str().unwrap_or("");
            if flag(a, "includeStages", false) {
                let mut stages: Vec<(f64, Value)> = self.w.0.all("ReleaseStage").filter(|(_, e)| e.get("pipelineId").and_then(Value::as_str) == Some(id)).map(|(sid, e)| (pos(e), json!({"id": sid, "name": e.get("name"), "type": e.get("type"), "position": e.get("position")}))).collect();
                stages.sort_by(|x, y| x.0.total_cmp(&y.0));
                o["stages"] = Value::Array(stages.into_iter().map(|(_, v)| v).collect());
            }
            if flag(a, "includeTeams", false) {
                let teams: Vec<Value> = self.w.0.get("ReleasePipeline", id).and_then(|e| e.get("teamIds")).and_then(Value::as_array).into_iter().flatten().filter_map(|t| t.as_str()).filter_map(|t| self.w.0.get("Team", t).map(|e| json!({"id": t, "key": e.get("key"), "name": e.get("name")}))).collect();
                o["teams"] = Value::Array(teams);
            }
            out.push(o);
        }
        Ok(Self::listed("releasePipelines", out, next))
    }

    fn list_releases(&mut self, a: &Value) -> R {
        let mut f = Map::new();
        if let Some(q) = s(a, "query") {
            f.insert("or".into(), json!([{"name": {"containsIgnoreCase": q}}, {"version": {"containsIgnoreCase": q}}]));
        }
        let pipeline = match s(a, "pipeline") {
            Some(p) => Some(self.pipeline(p)?),
            None => None,
        };
        if let Some(p) = &pipeline {
            f.insert("pipeline".into(), json!({"id": {"eq": p}}));
        }
        let mut stage_ids: Option<Vec<String>> = None;
        if let Some(st) = s(a, "stage") {
            let ids = self.w.0.all("ReleaseStage").filter(|(id, e)| pipeline.as_deref().is_none_or(|p| e.get("pipelineId").and_then(Value::as_str) == Some(p)) && (id.as_str() == st || e.get("name").and_then(Value::as_str) == Some(st))).map(|(id, _)| id.clone()).collect();
            stage_ids = Some(ids);
        }
        if let Some(ty) = s(a, "stageType") {
            let ids: Vec<String> = self.w.0.all("ReleaseStage").filter(|(_, e)| eq_ci(e.get("type"), ty)).map(|(id, _)| id.clone()).collect();
            stage_ids = Some(match stage_ids {
                Some(prev) => prev.into_iter().filter(|x| ids.contains(x)).collect(),
                None => ids,
            });
        }
        if let Some(ids) = stage_ids {
            f.insert("stage".into(), json!({"id": {"in": ids}}));
        }
        if let Some(v) = s(a, "version") {
            f.insert("version".into(), json!({"eq": v}));
        }
        if let Some(has) = a.get("hasReleaseNotes").and_then(Value::as_bool) {
            let with: Vec<String> = self.w.0.all("Release").map(|(id, _)| id.clone()).filter(|id| !self.notes_of(id).is_empty()).collect();
            f.insert("id".into(), if has { json!({"in": with}) } else { json!({"nin": with}) });
        }
        self.dates(a, &mut f)?;
        let (items, next) = self.page("releases", Some("ReleaseFilter"), Value::Object(f), "id", a, false)?;
        let mut out = Vec::new();
        for r in items {
            out.push(self.release_full(r["id"].as_str().unwrap_or(""), flag(a, "includeReleaseNotes", false))?);
        }
        Ok(Self::listed("releases", out, next))
    }

    fn release_full(&mut self, id: &str, notes: bool) -> R {
        let v = self.get("release", id, RELEASE)?;
        let mut o = json!({
            "id": v["id"], "name": v["name"], "description": v["description"], "version": v["version"], "slugId": v["slugId"],
            "commitSha": v["commitSha"], "startDate": v["startDate"], "targetDate": v["targetDate"], "startedAt": v["startedAt"],
            "completedAt": v["completedAt"], "canceledAt": v["canceledAt"], "createdAt": v["createdAt"], "updatedAt": v["updatedAt"],
            "pipeline": named(&v["pipeline"]),
            "stage": if v["stage"].is_null() || v["stage"]["id"].as_str().unwrap_or("").is_empty() { Value::Null } else { json!({"id": v["stage"]["id"], "name": v["stage"]["name"], "type": v["stage"]["type"]}) },
        });
        if notes {
            let list: Vec<Value> = self.notes_of(id).iter().filter_map(|n| self.w.0.get("ReleaseNote", n).map(|e| json!({"id": n, "title": e.get("title"), "slugId": e.get("slugId")}))).collect();
            o["releaseNotes"] = Value::Array(list);
        }
        Ok(o)
    }

    fn save_release(&mut self, a: &Value) -> R {
        let existing = match s(a, "id") {
            Some(id) => Some(self.release(id)?),
            None => None,
        };
        let pipeline = match s(a, "pipeline") {
            Some(p) => Some(self.pipeline(p)?),
            None => existing.as_ref().and_then(|id| self.w.0.str_field("Release", id, "pipelineId").map(str::to_string)),
        };
        let mut input = Map::new();
        for k in ["name", "description", "version", "commitSha"] {
            if let Some(v) = s(a, k) {
                input.insert(k.into(), json!(v));
            }
        }
        for k in ["startDate", "targetDate", "startedAt", "completedAt"] {
            if let Some(v) = a.get(k) {
                input.insert(k.into(), v.clone());
            }
        }
        if let Some(st) = s(a, "stage") {
            let p = pipeline.clone().ok_or("pipeline is required to resolve a stage")?;
            input.insert("stageId".into(), json!(self.stage(&p, st)?));
        }
        let id = match existing {
            None => {
                if s(a, "name").is_none_or(str::is_empty) {
                    return Err("name is required when creating a release".into());
                }
                let Some(p) = pipeline else { return Err("pipeline is required when creating a release".into()) };
                input.insert("pipelineId".into(), json!(p));
                if let Some(c) = s(a, "createdAt") {
                    input.insert("createdAt".into(), json!(c));
                }
                let d = self.gql("mutation($i: ReleaseCreateInput!) { releaseCreate(input: $i) { release { id } } }", json!({"i": input}))?;
                d["releaseCreate"]["release"]["id"].as_str().unwrap_or("").to_string()
            }
            Some(id) => {
                if s(a, "pipeline").is_some_and(|_| pipeline.as_deref() != self.w.0.str_field("Release", &id, "pipelineId")) {
                    return Err("a release cannot move to another pipeline".into());
                }
                if !input.is_empty() {
                    self.gql("mutation($id: String!, $i: ReleaseUpdateInput!) { releaseUpdate(id: $id, input: $i) { success } }", json!({"id": id, "i": input}))?;
                }
                id
            }
        };
        self.release_full(&id, false)
    }

    fn list_release_notes(&mut self, a: &Value) -> R {
        let mut f = Map::new();
        if let Some(q) = s(a, "query") {
            f.insert("title".into(), json!({"containsIgnoreCase": q}));
        }
        if let Some(p) = s(a, "pipeline") {
            let id = self.pipeline(p)?;
            f.insert("pipeline".into(), json!({"id": {"eq": id}}));
        }
        if let Some(r) = s(a, "release") {
            let id = self.release(r)?;
            f.insert("id".into(), json!({"in": self.notes_of(&id)}));
        }
        self.dates(a, &mut f)?;
        let (items, next) = self.page("releaseNotes", Some("ReleaseNoteFilter"), Value::Object(f), "id", a, false)?;
        let mut out = Vec::new();
        for n in items {
            out.push(self.release_note_full(n["id"].as_str().unwrap_or(""), flag(a, "includeContent", false), flag(a, "includeReleases", false))?);
        }
        Ok(Self::listed("releaseNotes", out, next))
    }

    /// Release notes; their markdown is kept on the notes (Linear keeps it in a document
    /// content, which the twin does not model).
    fn release_note_full(&mut self, id: &str, content: bool, releases: bool) -> R {
        let v = self.get("releaseNote", id, "id title slugId createdAt updatedAt archivedAt pipeline { id name }")?;
        let e = self.w.0.get("ReleaseNote", id).cloned().unwrap_or_default();
        let mut o = json!({"id": v["id"], "title": v["title"], "slugId": v["slugId"], "createdAt": v["createdAt"], "updatedAt": v["updatedAt"],
                           "archivedAt": v["archivedAt"], "pipeline": named(&v["pipeline"])});
        if content {
            o["content"] = e.get("content").cloned().unwrap_or(Value::Null);
        }
        if releases {
            let mut ids: Vec<String> = e.get("releaseIds").and_then(Value::as_array).into_iter().flatten().filter_map(|x| x.as_str().map(str::to_string)).collect();
            for k in ["rangeFromReleaseId", "rangeToReleaseId"] {
                if let Some(r) = e.get(k).and_then(Value::as_str) {
                    if !ids.iter().any(|x| x == r) {
                        ids.push(r.to_string());
                    }
                }
            }
            o["releases"] = Value::Array(ids.iter().filter_map(|r| self.w.0.get("Release", r).map(|x| json!({"id": r, "name": x.get("name"), "version": x.get("version")}))).collect());
        }
        Ok(o)
    }

    fn save_release_note(&mut self, a: &Value) -> R {
        let existing = match s(a, "id") {
            Some(id) => Some(self.release_note(id)?),
            None => None,
        };
        let mut input = Map::new();
        if let Some(t) = s(a, "title") {
            input.insert("title".into(), json!(t));
        }
        let text = existing.as_ref().map(|id| self.w.0.str_field("ReleaseNote", id, "content").unwrap_or(""));
        if let Some(t) = text_or_patch(a, "content", text, "release notes")? {
            input.insert("content".into(), json!(t));
        }
        if let Some(r) = strs(a, "releases") {
            let ids: R<Vec<String>> = r.iter().map(|x| self.release(x)).collect();
            input.insert("releaseIds".into(), json!(ids?));
        }
        for (arg, field) in [("rangeFromRelease", "rangeFromReleaseId"), ("rangeToRelease", "rangeToReleaseId")] {
            if let Some(r) = s(a, arg) {
                input.insert(field.into(), json!(self.release(r)?));
            }
        }
        let id = match existing {
            None => {
                let Some(p) = s(a, "pipeline") else { return Err("pipeline is required when creating release notes".into()) };
                let ranged = input.contains_key("rangeFromReleaseId") && input.contains_key("rangeToReleaseId");
                if !input.contains_key("releaseIds") && !ranged {
                    return Err("releases or a release range (rangeFromRelease and rangeToRelease) is required when creating release notes".into());
                }
                input.insert("pipelineId".into(), json!(self.pipeline(p)?));
                let d = self.gql("mutation($i: ReleaseNoteCreateInput!) { releaseNoteCreate(input: $i) { releaseNote { id } } }", json!({"i": input}))?;
                d["releaseNoteCreate"]["releaseNote"]["id"].as_str().unwrap_or("").to_string()
            }
            Some(id) => {
                if !input.is_empty() {
                    self.gql("mutation($id: String!, $i: ReleaseNoteUpdateInput!) { releaseNoteUpdate(id: $id, input: $i) { success } }", json!({"id": id, "i": input}))?;
                }
                id
            }
        };
        self.release_note_full(&id, true, true)
    }

    fn get_status_updates(&mut self, a: &Value) -> R {
        let kind = s(a, "type").unwrap_or("project");
        let (root, one, parent_rel, filter_ty) = if kind == "project" { ("projectUpdates", "projectUpdate", "project", "ProjectUpdateFilter") } else { ("initiativeUpdates", "initiativeUpdate", "initiative", "InitiativeUpdateFilter") };
        let sel = format!("{UPDATE} {parent_rel} {{ id name }}");
        if let Some(id) = s(a, "id") {
            return Ok(update_out(&self.get(one, id, &sel)?, kind));
        }
        let mut f = Map::new();
        if let Some(p) = s(a, "project") {
            if kind != "project" {
                return Err("project is only valid with type project".into());
            }
            let id = self.project(p)?;
            f.insert("project".into(), json!({"id": {"eq": id}}));
        }
        if let Some(i) = s(a, "initiative") {
            if kind != "initiative" {
                return Err("initiative is only valid with type initiative".into());
            }
            let id = self.initiative(i)?;
            f.insert("initiative".into(), json!({"id": {"eq": id}}));
        }
        if let Some(u) = s(a, "user") {
            let id = self.user(u)?;
            f.insert("user".into(), json!({"id": {"eq": id}}));
        }
        self.dates(a, &mut f)?;
        let (items, next) = self.page(root, Some(filter_ty), Value::Object(f), &sel, a, false)?;
        Ok(Self::listed("statusUpdates", items.iter().map(|u| update_out(u, kind)).collect(), next))
    }

    fn save_status_update(&mut self, a: &Value) -> R {
        let kind = s(a, "type").unwrap_or("project");
        let (ty, parent_rel) = if kind == "project" { ("ProjectUpdate", "project") } else { ("InitiativeUpdate", "initiative") };
        let lc = if kind == "project" { "projectUpdate" } else { "initiativeUpdate" };
        let mut input = Map::new();
        if let Some(b) = s(a, "body") {
            input.insert("body".into(), json!(b));
        }
        if let Some(h) = s(a, "health") {
            input.insert("health".into(), json!(h));
        }
        let id = match s(a, "id") {
            Some(id) => {
                if self.w.0.get(ty, id).is_none() {
                    return Err(format!("Status update not found: {id}"));
                }
                self.gql(&format!("mutation($id: String!, $i: {ty}UpdateInput!) {{ {lc}Update(id: $id, input: $i) {{ success }} }}"), json!({"id": id, "i": input}))?;
                id.to_string()
            }
            None => {
                let parent = match (kind, s(a, "project"), s(a, "initiative")) {
                    ("project", Some(p), _) => self.project(p)?,
                    ("initiative", _, Some(i)) => self.initiative(i)?,
                    _ => return Err(format!("{parent_rel} is required when creating a {kind} status update")),
                };
                input.insert(format!("{parent_rel}Id"), json!(parent));
                if let Some(h) = a.get("isDiffHidden").and_then(Value::as_bool) {
                    input.insert("isDiffHidden".into(), json!(h));
                }
                let d = self.gql(&format!("mutation($i: {ty}CreateInput!) {{ {lc}Create(input: $i) {{ {lc} {{ id }} }} }}"), json!({"i": input}))?;
                d[format!("{lc}Create")][lc]["id"].as_str().unwrap_or("").to_string()
            }
        };
        Ok(update_out(&self.get(lc, &id, &format!("{UPDATE} {parent_rel} {{ id name }}"))?, kind))
    }
}

/// Standard base64 (padding optional, whitespace ignored).
fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in s.bytes().filter(|c| !c.is_ascii_whitespace()) {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            b'=' => continue,
            _ => return None,
        };
        acc = (acc << 6) | v as u32;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

fn pos(e: &crate::model::Entity) -> f64 {
    e.get("position").and_then(Value::as_f64).unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patches_apply_in_order_and_a_bad_anchor_aborts() {
        let ops = json!([{"op": "replace", "old_string": "red", "new_string": "blue"}, {"op": "append", "text": "!"}, {"op": "insert_before", "anchor": "sky", "text": "big "}]);
        assert_eq!(apply_patch("the red sky", ops.as_array().unwrap()).unwrap(), "the blue big sky!");
        let twice = json!([{"op": "replace", "old_string": "a", "new_string": "b"}]);
        assert!(apply_patch("a a", twice.as_array().unwrap()).unwrap_err().contains("more than once"));
        let all = json!([{"op": "replace", "old_string": "a", "new_string": "b", "replace_all": true}]);
        assert_eq!(apply_patch("a a", all.as_array().unwrap()).unwrap(), "b b");
        let range = json!([{"op": "replace_range", "from": "<!--x-->", "to": "<!--y-->", "new_string": ""}, {"op": "prepend", "text": "> "}]);
        assert_eq!(apply_patch("keep<!--x-->drop<!--y-->end", range.as_array().unwrap()).unwrap(), "> keep<!--y-->end");
        let missing = json!([{"op": "insert_after", "anchor": "nowhere", "text": "x"}]);
        assert!(apply_patch("text", missing.as_array().unwrap()).is_err());
    }

    #[test]
    fn images_are_found_in_markdown_and_html_once_each() {
        let md = "See ![shot](https://uploads.linear.app/a.png \"t\") and <img alt=\"d\" src=\"https://x.test/b.jpg\"> and ![shot](https://uploads.linear.app/a.png)";
        assert_eq!(images(md), vec![("https://uploads.linear.app/a.png".to_string(), "shot".to_string()), ("https://x.test/b.jpg".to_string(), "d".to_string())]);
        assert!(images("no pictures [link](https://x.test)").is_empty());
    }

    #[test]
    fn base64_decodes_with_and_without_padding() {
        assert_eq!(base64_decode("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(base64_decode("aGVsbG8").unwrap(), b"hello");
        assert!(base64_decode("a*b").is_none());
    }

    #[test]
    fn durations_count_back_from_now() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-03-10T12:00:00Z").unwrap().with_timezone(&chrono::Utc);
        assert_eq!(since(now, "-P1D").unwrap(), "2026-03-09T12:00:00.000Z");
        assert_eq!(since(now, "-PT2H").unwrap(), "2026-03-10T10:00:00.000Z");
        assert_eq!(since(now, "2026-01-01").unwrap(), "2026-01-01T00:00:00.000Z");
        assert!(since(now, "-PXD").is_err());
    }
}
