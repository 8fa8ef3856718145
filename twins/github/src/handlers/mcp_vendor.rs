//! The rest of GitHub's MCP server's default tools (github/github-mcp-server, MIT) that are
//! not one REST call: a `method` argument that picks one of several calls (`issue_read`,
//! `pull_request_read`, `issue_write`, `pull_request_review_write`, `sub_issue_write`), an
//! answer the server reshapes (`fields` projections, `minimal_output`, `detail`, cursor
//! pages), or several calls in a row (`create_pull_request` with `reviewers`).
//!
//! Each tool is one route under `…/mcp-tools/`. Whatever it changes, it changes by running
//! the REST handlers themselves on the same call ([`rest`]), so the world, the recorded
//! changes and the checks are those of the REST calls the vendor's server would have made.
//! A read tool is a GET whose arguments arrive in the query (arrays comma-joined, as the
//! host sends them); a write tool is a POST with the arguments as its JSON body.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use pome_twin_sdk::describe::join_pairs;
use pome_twin_sdk::{Call, Method, Value, json, time};
use serde_json::Map;

use crate::World;
use crate::api::{ApiError, ApiResult, json};
use crate::handlers::issues::{self, issue_ref, push_event};
use crate::handlers::{checks, git, misc, pulls, releases, repos, search};
use crate::model::*;
use crate::render::node_id;

/// A tool's arguments: the query of a read, the JSON body of a write.
pub struct Args(Map<String, Value>);

impl Args {
    pub fn of(call: &Call) -> Result<Args, ApiError> {
        if call.req.method == Method::Get {
            return Ok(Args(call.req.query_pairs().into_iter().map(|(k, v)| (k, Value::String(v))).collect()));
        }
        if call.req.body.iter().all(u8::is_ascii_whitespace) {
            return Ok(Args(Map::new()));
        }
        match serde_json::from_slice::<Value>(&call.req.body) {
            Ok(Value::Object(m)) => Ok(Args(m)),
            _ => Err(ApiError::new(400, "Problems parsing JSON")),
        }
    }

    pub fn get(&self, k: &str) -> Option<&Value> {
        self.0.get(k).filter(|v| !v.is_null())
    }

    pub fn has(&self, k: &str) -> bool {
        self.0.contains_key(k)
    }

    pub fn str(&self, k: &str) -> Option<String> {
        match self.get(k)? {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            _ => None,
        }
    }

    /// A whole number (JSON numbers arrive as floats from some clients: `3.0`).
    pub fn num(&self, k: &str) -> Result<Option<u64>, ApiError> {
        let bad = || ApiError::new(422, format!("{k} must be a positive whole number"));
        match self.get(k) {
            None => Ok(None),
            Some(Value::Number(n)) => n.as_u64().or_else(|| n.as_f64().filter(|f| f.fract() == 0.0 && *f >= 0.0).map(|f| f as u64)).map(Some).ok_or_else(bad),
            Some(Value::String(s)) => s.parse::<f64>().ok().filter(|f| f.fract() == 0.0 && *f >= 0.0).map(|f| Some(f as u64)).ok_or_else(bad),
            Some(_) => Err(bad()),
        }
    }

    pub fn req_num(&self, k: &str) -> Result<u64, ApiError> {
        self.num(k)?.ok_or_else(|| ApiError::new(422, format!("missing required parameter: {k}")))
    }

    pub fn req_str(&self, k: &str) -> Result<String, ApiError> {
        self.str(k).filter(|s| !s.is_empty()).ok_or_else(|| ApiError::new(422, format!("missing required parameter: {k}")))
    }

    pub fn bool(&self, k: &str) -> Option<bool> {
        match self.get(k)? {
            Value::Bool(b) => Some(*b),
            Value::String(s) => Some(s == "true"),
            _ => None,
        }
    }

    /// A list of strings: a JSON array, or the comma-joined query form.
    pub fn list(&self, k: &str) -> Vec<String> {
        match self.get(k) {
            Some(Value::Array(a)) => a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect(),
            Some(Value::String(s)) if !s.is_empty() => s.split(',').map(str::to_string).collect(),
            _ => Vec::new(),
        }
    }

    /// `page`/`perPage` as the REST query's `page`/`per_page`.
    fn paging(&self, q: &mut Vec<(String, String)>) -> Result<(), ApiError> {
        if let Some(p) = self.num("page")? {
            q.push(("page".into(), p.to_string()));
        }
        if let Some(p) = self.num("perPage")? {
            q.push(("per_page".into(), p.to_string()));
        }
        Ok(())
    }
}

/// Run the REST handler `f` on this call as if it were that REST request: its path
/// parameters (`owner`/`repo` kept), query and body replaced; headers, changes and
/// deliveries shared. The call is restored afterwards.
pub fn rest(w: &mut World, call: &mut Call, f: fn(&mut World, &mut Call) -> ApiResult, params: &[(&str, String)], query: &[(String, String)], body: Option<Value>) -> ApiResult {
    let saved_params = std::mem::take(&mut call.params);
    let saved_query = std::mem::take(&mut call.req.query);
    let saved_body = std::mem::take(&mut call.req.body);
    let mut ps: Vec<(String, String)> = saved_params.iter().filter(|(k, _)| k == "owner" || k == "repo").cloned().collect();
    for (k, v) in params {
        ps.retain(|(x, _)| x != k);
        ps.push((k.to_string(), v.clone()));
    }
    call.params = ps;
    call.req.query = join_pairs(query);
    call.req.body = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
    let out = f(w, call);
    call.params = saved_params;
    call.req.query = saved_query;
    call.req.body = saved_body;
    out
}

/// [`rest`], answering the REST answer's JSON.
pub(crate) fn rest_json(w: &mut World, call: &mut Call, f: fn(&mut World, &mut Call) -> ApiResult, params: &[(&str, String)], query: &[(String, String)], body: Option<Value>) -> Result<Value, ApiError> {
    let r = rest(w, call, f, params, query, body)?;
    if r.status >= 400 {
        let v: Value = serde_json::from_slice(&r.body).unwrap_or(Value::Null);
        let msg = v.get("message").and_then(Value::as_str).unwrap_or("request failed").to_string();
        return Err(ApiError::new(r.status, msg));
    }
    Ok(serde_json::from_slice(&r.body).unwrap_or(Value::Null))
}

/// Keep only `fields` of every object in `items` (all of them when `fields` is empty).
fn project(items: &mut Value, fields: &[String]) {
    if fields.is_empty() {
        return;
    }
    if let Some(list) = items.as_array_mut() {
        for it in list {
            if let Some(m) = it.as_object_mut() {
                m.retain(|k, _| fields.iter().any(|f| f == k));
            }
        }
    }
}

fn ok(v: Value) -> ApiResult {
    json(200, &v)
}

/// A plain-text answer, where GitHub's server answers with a sentence.
fn text(s: &str) -> ApiResult {
    Ok(pome_twin_sdk::Response { status: 200, headers: vec![("content-type".into(), "text/plain; charset=utf-8".into())], body: s.as_bytes().to_vec() })
}

/// The vendor's `MinimalResponse` for a created or updated object: its id and web address.
fn minimal(v: &Value) -> Value {
    json!({"id": v.get("id").map(|i| i.to_string()).unwrap_or_default(), "url": v.get("html_url").cloned().unwrap_or(Value::Null)})
}

/// Opaque page cursors (`after`): the offset of the next item.
fn cursor(offset: usize) -> String {
    B64.encode(format!("cursor:{offset}"))
}

fn offset_of(after: Option<String>) -> Result<usize, ApiError> {
    match after.filter(|a| !a.is_empty()) {
        None => Ok(0),
        Some(a) => B64
            .decode(a.as_bytes())
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .and_then(|s| s.strip_prefix("cursor:").and_then(|n| n.parse().ok()))
            .ok_or_else(|| ApiError::new(422, format!("`{a}` does not appear to be a valid cursor."))),
    }
}

fn page_info(offset: usize, shown: usize, total: usize) -> Value {
    json!({
        "hasNextPage": offset + shown < total, "hasPreviousPage": offset > 0,
        "startCursor": if shown > 0 { json!(cursor(offset)) } else { Value::Null },
        "endCursor": if shown > 0 { json!(cursor(offset + shown)) } else { Value::Null },
    })
}

/// The issue with GitHub id `id`, anywhere in the world: its repository key and number.
pub fn issue_by_id(w: &World, id: u64) -> Option<(String, u64)> {
    w.repos.iter().find_map(|(k, r)| r.issues.values().find(|i| i.id == id).map(|i| (k.clone(), i.number)))
}

/// The parent of issue `id`, if it is a sub-issue.
pub fn parent_of(w: &World, id: u64) -> Option<u64> {
    w.sub_issues.iter().find(|(_, kids)| kids.contains(&id)).map(|(p, _)| *p)
}

// ---- issues ----------------------------------------------------------------------------

/// `add_issue_comment`: a comment, a reaction (on the issue, or on `comment_id`), or both.
pub fn add_issue_comment(w: &mut World, call: &mut Call) -> ApiResult {
    let a = Args::of(call)?;
    let n = call.param("issue_number").to_string();
    let body = a.str("body");
    let reaction = a.str("reaction");
    let comment_id = a.num("comment_id")?;
    if body.is_none() && reaction.is_none() {
        return Err(ApiError::new(422, "at least one of body or reaction is required"));
    }
    if body.is_some() && comment_id.is_some() {
        return Err(ApiError::new(422, "comment_id cannot be combined with body: it only picks the comment to react to"));
    }
    if comment_id.is_some() && reaction.is_none() {
        return Err(ApiError::new(422, "comment_id needs a reaction"));
    }
    // As GitHub's server: the reaction first (on a comment only if it is this issue's), then
    // the comment; each answered as `{id, url}`.
    let api = format!("{}/repos/{}/{}", call.req.base_url, call.param("owner"), call.param("repo"));
    let reaction = match (reaction, comment_id) {
        (Some(r), Some(c)) => {
            let comment = rest_json(w, call, issues::get_comment, &[("comment_id", c.to_string())], &[], None)?;
            if !comment["issue_url"].as_str().is_some_and(|u| u.ends_with(&format!("/issues/{n}"))) {
                return Err(ApiError::new(422, format!("comment_id does not belong to issue_number {n}")));
            }
            let x = rest_json(w, call, issues::create_reaction_comment, &[("comment_id", c.to_string())], &[], Some(json!({"content": r})))?;
            Some(json!({"id": x["id"].to_string(), "url": format!("{api}/issues/comments/{c}/reactions/{}", x["id"])}))
        }
        (Some(r), None) => {
            let x = rest_json(w, call, issues::create_reaction_issue, &[("issue_number", n.clone())], &[], Some(json!({"content": r})))?;
            Some(json!({"id": x["id"].to_string(), "url": format!("{api}/issues/{n}/reactions/{}", x["id"])}))
        }
        _ => None,
    };
    let comment = match body {
        Some(b) => Some(minimal(&rest_json(w, call, issues::create_comment, &[("issue_number", n)], &[], Some(json!({"body": b})))?)),
        None => None,
    };
    match (comment, reaction) {
        (Some(c), Some(r)) => ok(json!({"comment": c, "reaction": r})),
        (Some(c), None) => ok(c),
        (None, r) => ok(r.unwrap_or(Value::Null)),
    }
}

/// `issue_read`: one issue (`get`, with its hierarchy and closing pull requests), its
/// comments, sub-issues, parent or labels.
pub fn issue_read(w: &mut World, call: &mut Call) -> ApiResult {
    let a = Args::of(call)?;
    let n = call.param("issue_number").to_string();
    let mut q = Vec::new();
    a.paging(&mut q)?;
    let p = [("issue_number", n.clone())];
    match a.req_str("method")?.as_str() {
        "get" => {
            // The REST read first: it is what GitHub's server calls, and it answers 404/410.
            rest_json(w, call, issues::get, &p, &[], None)?;
            let key = w.repo_key_for(call)?;
            let r = &w.repos[&key];
            let number: u64 = n.parse().map_err(|_| ApiError::not_found())?;
            let i = &r.issues[&number];
            let b = &call.req.base_url;
            let summary = |id: u64| -> Value {
                issue_by_id(w, id)
                    .map(|(k, num)| {
                        let rr = &w.repos[&k];
                        let x = &rr.issues[&num];
                        json!({"number": x.number, "title": x.title, "state": x.state.to_ascii_uppercase(), "url": format!("{b}/{}/issues/{}", rr.full_name(), x.number), "repository": rr.full_name()})
                    })
                    .unwrap_or(Value::Null)
            };
            let parent = parent_of(w, i.id).map(summary);
            let kids = w.sub_issues.get(&i.id).cloned().unwrap_or_default();
            let completed = kids.iter().filter(|k| issue_by_id(w, **k).is_some_and(|(kk, num)| w.repos[&kk].issues[&num].state == "closed")).count();
            let closing: Vec<Value> = r
                .issues
                .values()
                .filter(|x| x.pull.is_some() && x.state == "open")
                .filter(|x| pulls::closing_refs(&format!("{}\n{}", x.title, x.body.clone().unwrap_or_default())).contains(&number))
                .map(|x| json!({"number": x.number, "title": x.title, "state": "OPEN", "url": format!("{b}/{}/pull/{}", r.full_name(), x.number), "repository": r.full_name()}))
                .collect();
            let mut m = minimal_issue(w, b, r, i, false);
            m.insert("has_parent".into(), json!(parent.is_some()));
            m.insert("has_children".into(), json!(!kids.is_empty()));
            if let Some(p) = parent {
                m.insert("parent".into(), p);
            }
            if !kids.is_empty() {
                let pct = completed * 100 / kids.len();
                m.insert("sub_issues_summary".into(), json!({"total": kids.len(), "completed": completed, "percent_completed": pct}));
            }
            m.insert("closed_by_pull_requests".into(), json!({"total_count": closing.len(), "references": closing.into_iter().take(5).collect::<Vec<_>>()}));
            ok(Value::Object(m))
        }
        "get_comments" => ok(rest_json(w, call, issues::list_comments, &p, &q, None)?),
        "get_sub_issues" => ok(rest_json(w, call, list_sub_issues, &p, &q, None)?),
        "get_parent" => {
            let v = match rest(w, call, get_parent, &p, &[], None) {
                Ok(r) => serde_json::from_slice::<Value>(&r.body).unwrap_or(Value::Null),
                // No parent: `{"parent": null}`, unless the issue itself is missing.
                Err(e) if e.status == 404 => {
                    rest_json(w, call, issues::get, &p, &[], None)?;
                    Value::Null
                }
                Err(e) => return Err(e),
            };
            let parent = if v.is_null() {
                Value::Null
            } else {
                let repo = v["repository_url"].as_str().and_then(|u| u.split("/repos/").nth(1)).unwrap_or_default().to_string();
                json!({"number": v["number"], "title": v["title"], "state": v["state"].as_str().unwrap_or_default().to_ascii_uppercase(), "url": v["html_url"], "repository": repo})
            };
            ok(json!({"parent": parent}))
        }
        "get_labels" => {
            let v = rest_json(w, call, issues::list_labels_on_issue, &p, &[("per_page".into(), "100".into())], None)?;
            let labels: Vec<Value> = v
                .as_array()
                .into_iter()
                .flatten()
                .map(|l| json!({"id": l["node_id"], "name": l["name"], "color": l["color"], "description": l["description"].as_str().unwrap_or_default()}))
                .collect();
            ok(json!({"totalCount": labels.len(), "labels": labels}))
        }
        m => Err(ApiError::new(422, format!("unknown method: {m}"))),
    }
}

/// The issue types of `org` (GitHub's defaults for every organization).
pub fn issue_type_json(w: &World, org: &str, name: &str) -> Value {
    let base = w.users.get(&org.to_ascii_lowercase()).map(|u| u.id).unwrap_or(0) * 100;
    DEFAULT_ISSUE_TYPES
        .iter()
        .enumerate()
        .find(|(_, t)| t.0.eq_ignore_ascii_case(name))
        .map(|(k, (n, d, c))| {
            let id = base + k as u64 + 1;
            json!({"id": id, "node_id": node_id("IssueType", id), "name": n, "description": d, "color": c, "is_enabled": true})
        })
        .unwrap_or(Value::Null)
}

/// `issue_write`: create (`POST …/issues`) or update (`PATCH …/issues/{n}`, plus the
/// duplicate marker); answers the vendor's `{id, url}`.
pub fn issue_write(w: &mut World, call: &mut Call) -> ApiResult {
    let a = Args::of(call)?;
    let owner = call.param("owner").to_string();
    let field_changes = match a.get("issue_fields") {
        Some(f) => parse_field_changes(w, &owner, f)?,
        None => Vec::new(),
    };
    let mut body = Map::new();
    for k in ["title", "body", "state", "state_reason"] {
        if let Some(v) = a.str(k) {
            body.insert(k.into(), json!(v));
        }
    }
    for k in ["labels", "assignees"] {
        if a.get(k).is_some() {
            body.insert(k.into(), json!(a.list(k)));
        }
    }
    if let Some(m) = a.num("milestone")? {
        body.insert("milestone".into(), json!(m));
    }
    if a.has("type") {
        body.insert("type".into(), a.0["type"].clone());
    }
    match a.req_str("method")?.as_str() {
        "create" => {
            if a.str("title").is_none_or(|t| t.is_empty()) {
                return Err(ApiError::new(422, "missing required parameter: title"));
            }
            let v = rest_json(w, call, issues::create, &[], &[], Some(Value::Object(body)))?;
            let n = v["number"].as_u64().expect("a created issue has a number");
            apply_field_changes(w, call, n, field_changes)?;
            json(201, &minimal(&v))
        }
        "update" => {
            let n = a.req_num("issue_number")?;
            let dup = a.num("duplicate_of")?;
            if a.str("state_reason").as_deref() == Some("duplicate") && dup.is_none() {
                return Err(ApiError::new(422, "duplicate_of is required when state_reason is 'duplicate'"));
            }
            if let Some(d) = dup {
                let key = w.repo_key_for(call)?;
                if d == n || !w.repos[&key].issues.contains_key(&d) {
                    return Err(ApiError::new(422, format!("duplicate_of: issue #{d} is not another issue of this repository")));
                }
                body.insert("state".into(), json!("closed"));
                body.insert("state_reason".into(), json!("duplicate"));
            }
            let v = if body.is_empty() && !field_changes.is_empty() {
                rest_json(w, call, issues::get, &[("issue_number", n.to_string())], &[], None)?
            } else {
                rest_json(w, call, issues::update, &[("issue_number", n.to_string())], &[], Some(Value::Object(body)))?
            };
            apply_field_changes(w, call, n, field_changes)?;
            if let Some(d) = dup {
                let key = w.repo_key_for(call)?;
                let canonical = issue_ref(&w.repos[&key], d);
                push_event(w, &key, n, "marked_as_duplicate", Some(canonical), None);
                let r = &w.repos[&key];
                let ev = r.events.last().expect("just pushed").clone();
                call.created("issue_event", ev.id, &ev);
            }
            ok(minimal(&v))
        }
        m => Err(ApiError::new(422, format!("unknown method: {m}"))),
    }
}

/// The custom issue fields of `owner` (none for a user account).
fn fields_of<'a>(w: &'a World, owner: &str) -> &'a [IssueField] {
    w.issue_fields.get(&owner.to_ascii_lowercase()).map(Vec::as_slice).unwrap_or(&[])
}

fn field_named<'a>(w: &'a World, owner: &str, name: &str) -> Result<&'a IssueField, ApiError> {
    fields_of(w, owner)
        .iter()
        .find(|f| f.name.eq_ignore_ascii_case(name))
        .ok_or_else(|| ApiError::new(422, format!("issue field {name:?} not found for {owner}: use list_issue_fields for the valid names")))
}

/// `value` as field `f` stores it: a number's or a date's canonical text, an option's name.
fn coerce(f: &IssueField, value: &str) -> Result<String, ApiError> {
    let bad = |what: &str| ApiError::new(422, format!("issue field {:?} takes {what}, not {value:?}", f.name));
    match f.data_type.as_str() {
        "number" => value.trim().parse::<f64>().map(|n| n.to_string()).map_err(|_| bad("a number")),
        "date" => {
            let ok = value.len() == 10
                && value.bytes().enumerate().all(|(i, b)| if i == 4 || i == 7 { b == b'-' } else { b.is_ascii_digit() })
                && (1..=12).contains(&value[5..7].parse::<u32>().unwrap_or(0))
                && (1..=31).contains(&value[8..10].parse::<u32>().unwrap_or(0));
            if ok { Ok(value.to_string()) } else { Err(bad("a date (YYYY-MM-DD)")) }
        }
        "single_select" => f
            .options
            .iter()
            .find(|(_, o)| o.eq_ignore_ascii_case(value))
            .map(|(_, o)| o.clone())
            .ok_or_else(|| bad(&format!("one of its options ({})", f.options.iter().map(|(_, o)| o.as_str()).collect::<Vec<_>>().join(", ")))),
        _ => Ok(value.to_string()),
    }
}

/// `issue_fields` of `issue_write`, validated before anything is written: each a field id
/// and the value to set, or `None` to clear it.
fn parse_field_changes(w: &World, owner: &str, v: &Value) -> Result<Vec<(u64, Option<String>)>, ApiError> {
    let items = v.as_array().ok_or_else(|| ApiError::new(422, "issue_fields must be an array"))?;
    let mut out = Vec::new();
    for it in items {
        let name = it.get("field_name").and_then(Value::as_str).ok_or_else(|| ApiError::new(422, "each issue_fields item needs a field_name"))?;
        let f = field_named(w, owner, name)?;
        let delete = it.get("delete").and_then(Value::as_bool).unwrap_or(false);
        let value = it.get("value").filter(|v| !v.is_null()).map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        });
        let option = it.get("field_option_name").and_then(Value::as_str);
        let given = usize::from(delete) + usize::from(value.is_some()) + usize::from(option.is_some());
        if given != 1 {
            return Err(ApiError::new(422, format!("issue field {name:?}: give exactly one of value, field_option_name or delete: true")));
        }
        if option.is_some() && f.data_type != "single_select" {
            return Err(ApiError::new(422, format!("issue field {:?} is a {} field: field_option_name is for single_select fields", f.name, f.data_type)));
        }
        let set = match (delete, value, option) {
            (true, _, _) => None,
            (_, Some(v), _) => Some(coerce(f, &v)?),
            (_, _, Some(o)) => Some(coerce(f, o)?),
            _ => unreachable!("exactly one is given"),
        };
        out.push((f.id, set));
    }
    Ok(out)
}

/// Write validated field changes on issue `number`, recording each.
fn apply_field_changes(w: &mut World, call: &mut Call, number: u64, changes: Vec<(u64, Option<String>)>) -> Result<(), ApiError> {
    if changes.is_empty() {
        return Ok(());
    }
    let key = w.repo_key_for(call)?;
    let r = &w.repos[&key];
    let i = r.issues.get(&number).ok_or_else(ApiError::not_found)?;
    let (id, iref) = (i.id, issue_ref(r, number));
    for (field, value) in changes {
        let before = w.issue_field_values.get(&id).and_then(|m| m.get(&field)).cloned();
        if before == value {
            continue;
        }
        call.record("issue_field_value", format!("{iref}:{field}"), before.as_ref(), value.as_ref());
        let m = w.issue_field_values.entry(id).or_default();
        match value {
            Some(v) => m.insert(field, v),
            None => m.remove(&field),
        };
        if m.is_empty() {
            w.issue_field_values.remove(&id);
        }
    }
    Ok(())
}

/// An issue's field values as GitHub's MCP server shows them: `[{field, value}]`, in the
/// organization's field order.
pub fn field_values(w: &World, r: &Repo, issue: u64) -> Value {
    let Some(vals) = w.issue_field_values.get(&issue) else { return json!([]) };
    let fields = fields_of(w, &r.owner);
    Value::Array(fields.iter().filter_map(|f| vals.get(&f.id).map(|v| json!({"field": f.name, "value": v}))).collect())
}

/// `list_issue_fields`: the organization's custom issue fields (a repository's are its
/// owner organization's).
pub fn list_issue_fields(w: &mut World, call: &mut Call) -> ApiResult {
    let a = Args::of(call)?;
    let owner = call.param("owner").to_string();
    let org = org_for_types(w, call, &owner, a.str("repo"))?.login.clone();
    let list: Vec<Value> = fields_of(w, &org)
        .iter()
        .map(|f| {
            let mut v = json!({"id": f.id, "node_id": node_id("IssueField", f.id), "name": f.name, "data_type": f.data_type, "description": f.description});
            if f.data_type == "single_select" {
                v["options"] = Value::Array(f.options.iter().map(|(id, n)| json!({"id": id, "name": n})).collect());
            }
            v
        })
        .collect();
    ok(Value::Array(list))
}

fn org_for_types<'a>(w: &'a World, call: &Call, owner: &str, repo: Option<String>) -> Result<&'a User, ApiError> {
    if let Some(repo) = repo {
        let key = crate::api::repo_key(owner, &repo);
        match w.repos.get(&key) {
            Some(r) if w.viewer_role(r) >= Role::Read => {}
            _ => return Err(ApiError::not_found()),
        }
    }
    let _ = call;
    match w.users.get(&owner.to_ascii_lowercase()) {
        Some(u) if u.kind == "Organization" => Ok(u),
        Some(u) => Err(ApiError::new(422, format!("{} is a user account: issue types and issue fields belong to organizations, so its repositories have none", u.login))),
        None => Err(ApiError::not_found()),
    }
}

/// `list_issue_types`: `GET /repos/{owner}/{repo}/issue-types` when a repository is named,
/// else `GET /orgs/{owner}/issue-types`, as GitHub's server calls them.
pub fn list_issue_types(w: &mut World, call: &mut Call) -> ApiResult {
    let a = Args::of(call)?;
    let owner = call.param("owner").to_string();
    match a.str("repo").filter(|r| !r.is_empty()) {
        Some(repo) => rest(w, call, repo_issue_types, &[("owner", owner), ("repo", repo)], &[], None),
        None => rest(w, call, org_issue_types, &[("org", owner)], &[], None),
    }
}

/// `GET /repos/{owner}/{repo}/issue-types` (`issues.list_issue_types_for_repo`): the types its
/// issues can take, its owner organization's (none for a user's repository).
pub fn repo_issue_types(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let owner = r.owner.clone();
    let org = w.users.get(&owner.to_ascii_lowercase()).is_some_and(|u| u.kind == "Organization");
    let list: Vec<Value> = if org { DEFAULT_ISSUE_TYPES.iter().map(|t| issue_type_json(w, &owner, t.0)).collect() } else { Vec::new() };
    ok(Value::Array(list))
}

/// `GET /orgs/{org}/issue-types` (`orgs.list_issue_types`).
pub fn org_issue_types(w: &mut World, call: &mut Call) -> ApiResult {
    let org = call.param("org").to_string();
    let org = match w.users.get(&org.to_ascii_lowercase()) {
        Some(u) if u.kind == "Organization" => u.login.clone(),
        _ => return Err(ApiError::not_found()),
    };
    ok(Value::Array(DEFAULT_ISSUE_TYPES.iter().map(|t| issue_type_json(w, &org, t.0)).collect()))
}

/// GitHub's MCP server's `MinimalUser`.
fn minimal_user(w: &World, b: &str, login: &str) -> Value {
    let u = w.user_json(b, login);
    json!({"login": u["login"], "id": u["id"], "profile_url": u["html_url"], "avatar_url": u["avatar_url"]})
}

/// GitHub's MCP server's `MinimalIssue`: empty fields left out as it leaves them out. The
/// GraphQL listing (`list_issues`) spells states in capitals.
fn minimal_issue(w: &World, b: &str, r: &Repo, i: &Issue, graphql: bool) -> Map<String, Value> {
    let mut m = Map::new();
    let case = |s: &str| if graphql { s.to_ascii_uppercase() } else { s.to_string() };
    m.insert("number".into(), json!(i.number));
    m.insert("title".into(), json!(i.title));
    if let Some(body) = i.body.as_ref().filter(|b| !b.is_empty()) {
        m.insert("body".into(), json!(body));
    }
    m.insert("state".into(), json!(case(&i.state)));
    if let Some(reason) = &i.state_reason {
        m.insert("state_reason".into(), json!(case(reason)));
    }
    if i.pull.as_ref().is_some_and(|p| p.draft) {
        m.insert("draft".into(), json!(true));
    }
    if i.locked {
        m.insert("locked".into(), json!(true));
    }
    let kind = if i.pull.is_some() { "pull" } else { "issues" };
    m.insert("html_url".into(), json!(format!("{b}/{}/{kind}/{}", r.full_name(), i.number)));
    m.insert("user".into(), minimal_user(w, b, &i.user));
    m.insert("author_association".into(), json!(w.author_association(r, &i.user)));
    if !i.labels.is_empty() {
        m.insert("labels".into(), json!(i.labels));
    }
    m.insert("assignees".into(), json!(i.assignees));
    if let Some(ms) = i.milestone.and_then(|n| r.milestones.get(&n)) {
        m.insert("milestone".into(), json!(ms.title));
    }
    if i.comments > 0 {
        m.insert("comments".into(), json!(i.comments));
    }
    let mut reactions = w.reactions_json(String::new(), &i.reactions);
    reactions.as_object_mut().expect("reactions are an object").remove("url");
    m.insert("reactions".into(), reactions);
    m.insert("created_at".into(), json!(i.created_at));
    m.insert("updated_at".into(), json!(i.updated_at));
    if let Some(c) = &i.closed_at {
        m.insert("closed_at".into(), json!(c));
    }
    if let Some(c) = &i.closed_by {
        m.insert("closed_by".into(), json!(c));
    }
    if let Some(t) = w.issue_types.get(&i.id) {
        m.insert("issue_type".into(), json!(t));
    }
    let fv = field_values(w, r, i.id);
    if fv.as_array().is_some_and(|a| !a.is_empty()) {
        m.insert("field_values".into(), fv);
    }
    m
}

/// The issue a `list_issues` page shows.
fn issue_item(w: &World, b: &str, r: &Repo, i: &Issue) -> Value {
    Value::Object(minimal_issue(w, b, r, i, true))
}

/// `list_issues`: the repository's issues (not pull requests) as GitHub's GraphQL
/// `issues` connection: `state`, `labels`, `since`, `orderBy`/`direction`, cursor pages.
pub fn list_issues(w: &mut World, call: &mut Call) -> ApiResult {
    let a = Args::of(call)?;
    let owner = call.param("owner").to_string();
    // Arrays of objects arrive in the query as their JSON texts joined by commas.
    let filters: Vec<Value> = match a.get("field_filters") {
        Some(Value::String(t)) if !t.is_empty() => serde_json::from_str::<Vec<Value>>(&format!("[{}]", t.trim_start_matches('[').trim_end_matches(']')))
            .map_err(|_| ApiError::new(422, "field_filters must be a list of {field_name, value}"))?,
        Some(Value::Array(v)) => v.clone(),
        _ => Vec::new(),
    };
    let mut wanted: Vec<(u64, String)> = Vec::new();
    for f in &filters {
        let name = f.get("field_name").and_then(Value::as_str).ok_or_else(|| ApiError::new(422, "each field_filters item needs a field_name"))?;
        let value = f.get("value").and_then(Value::as_str).ok_or_else(|| ApiError::new(422, "each field_filters item needs a value"))?;
        let field = field_named(w, &owner, name)?;
        wanted.push((field.id, coerce(field, value)?));
    }
    let key = w.repo_key_for(call)?;
    let r = &w.repos[&key];
    let state = a.str("state").map(|s| s.to_ascii_lowercase());
    let labels = a.list("labels");
    let since = a.str("since");
    let order = a.str("orderBy").unwrap_or_else(|| "CREATED_AT".into());
    let dir = a.str("direction").unwrap_or_else(|| "DESC".into());
    let mut list: Vec<&Issue> = r
        .issues
        .values()
        .filter(|i| i.pull.is_none())
        .filter(|i| state.as_deref().is_none_or(|s| i.state == s))
        .filter(|i| labels.iter().all(|l| i.labels.iter().any(|x| x.eq_ignore_ascii_case(l))))
        .filter(|i| since.as_deref().is_none_or(|s| i.updated_at.as_str() >= s))
        .filter(|i| wanted.iter().all(|(f, v)| w.issue_field_values.get(&i.id).and_then(|m| m.get(f)).is_some_and(|x| x.eq_ignore_ascii_case(v))))
        .collect();
    match order.as_str() {
        "UPDATED_AT" => list.sort_by(|x, y| (x.updated_at.as_str(), x.number).cmp(&(y.updated_at.as_str(), y.number))),
        "COMMENTS" => list.sort_by_key(|i| (i.comments, i.number)),
        _ => list.sort_by_key(|i| (i.created_at.clone(), i.number)),
    }
    if dir != "ASC" {
        list.reverse();
    }
    let per = a.num("perPage")?.unwrap_or(30).clamp(1, 100) as usize;
    let offset = offset_of(a.str("after"))?;
    let total = list.len();
    let b = call.req.base_url.clone();
    let mut items = Value::Array(list.iter().skip(offset).take(per).map(|i| issue_item(w, &b, r, i)).collect());
    let shown = items.as_array().map_or(0, Vec::len);
    project(&mut items, &a.list("fields"));
    ok(json!({"issues": items, "pageInfo": page_info(offset, shown, total), "totalCount": total}))
}

/// `search_issues` and `search_pull_requests`: `GET /search/issues` scoped to `is:issue` or
/// `is:pr` (and to `owner`/`repo` when both are given), with the `fields` projection.
fn search_scoped(w: &mut World, call: &mut Call, kind: &str) -> ApiResult {
    let a = Args::of(call)?;
    let mut q = a.req_str("query")?;
    if !q.split_whitespace().any(|t| t == format!("is:{kind}")) {
        q = format!("is:{kind} {q}");
    }
    if let (Some(o), Some(r)) = (a.str("owner"), a.str("repo")) {
        if !q.contains("repo:") {
            q = format!("repo:{o}/{r} {q}");
        }
    }
    let mut query = vec![("q".to_string(), q)];
    for k in ["sort", "order"] {
        if let Some(v) = a.str(k) {
            query.push((k.into(), v));
        }
    }
    a.paging(&mut query)?;
    let mut v = rest_json(w, call, search::issues, &[], &query, None)?;
    if let Some(items) = v.get_mut("items") {
        project(items, &a.list("fields"));
    }
    ok(v)
}

pub fn search_issues(w: &mut World, call: &mut Call) -> ApiResult {
    search_scoped(w, call, "issue")
}

pub fn search_pull_requests(w: &mut World, call: &mut Call) -> ApiResult {
    search_scoped(w, call, "pr")
}

// ---- sub-issues (REST) -------------------------------------------------------------------

fn sub_issue_arg(call: &Call) -> Result<(Args, u64), ApiError> {
    let a = Args::of(call)?;
    let id = a.num("sub_issue_id")?.ok_or_else(|| ApiError::invalid("Issue", "sub_issue_id", "missing_field"))?;
    Ok((a, id))
}

/// The parent issue of the route (`{issue_number}`), with write access: its key and id.
fn parent_for_write(w: &World, call: &Call) -> Result<(String, u64, u64), ApiError> {
    let key = w.repo_key_for(call)?;
    let r = &w.repos[&key];
    if w.viewer_role(r) < Role::Triage {
        return Err(ApiError::forbidden("Resource not accessible by integration"));
    }
    let n: u64 = call.param("issue_number").parse().map_err(|_| ApiError::not_found())?;
    let i = r.issues.get(&n).ok_or_else(ApiError::not_found)?;
    Ok((key, n, i.id))
}

fn sub_ref(w: &World, parent: u64, child: u64) -> String {
    let name = |id: u64| issue_by_id(w, id).map(|(k, n)| issue_ref(&w.repos[&k], n)).unwrap_or_default();
    format!("{}>{}", name(parent), name(child))
}

fn issue_json_by_id(w: &World, b: &str, id: u64) -> Value {
    let (k, n) = issue_by_id(w, id).expect("sub-issue ids name issues");
    let r = &w.repos[&k];
    serde_json::to_value(w.issue_out(b, r, &r.issues[&n])).expect("issues render")
}

/// `POST /repos/{owner}/{repo}/issues/{issue_number}/sub_issues` (`issues.add_sub_issue`).
pub fn add_sub_issue(w: &mut World, call: &mut Call) -> ApiResult {
    let (a, child) = sub_issue_arg(call)?;
    let replace = a.bool("replace_parent").unwrap_or(false);
    let (key, _, parent) = parent_for_write(w, call)?;
    let (ck, cn) = issue_by_id(w, child).ok_or_else(|| ApiError::custom("Issue", "sub_issue_id", "Sub issue not found"))?;
    let owner = &w.repos[&key].owner;
    if !w.repos[&ck].owner.eq_ignore_ascii_case(owner) || w.viewer_role(&w.repos[&ck]) < Role::Read {
        return Err(ApiError::custom("Issue", "sub_issue_id", "Sub issue must belong to a repository of the same owner"));
    }
    if w.repos[&ck].issues[&cn].pull.is_some() {
        return Err(ApiError::custom("Issue", "sub_issue_id", "Pull requests cannot be sub-issues"));
    }
    // No cycles: the child may not be the parent or one of its ancestors.
    let mut up = Some(parent);
    while let Some(p) = up {
        if p == child {
            return Err(ApiError::custom("Issue", "sub_issue_id", "An issue cannot be a sub-issue of itself or of its own sub-issues"));
        }
        up = parent_of(w, p);
    }
    if let Some(old) = parent_of(w, child) {
        if old == parent {
            return Err(ApiError::custom("Issue", "sub_issue_id", "Issue is already a sub-issue of this issue"));
        }
        if !replace {
            return Err(ApiError::custom("Issue", "sub_issue_id", "Issue may not contain duplicate sub-issues and the sub-issue may only have one parent"));
        }
        let id = sub_ref(w, old, child);
        call.deleted("sub_issue", id, &json!({"parent": old, "sub_issue": child}));
        if let Some(kids) = w.sub_issues.get_mut(&old) {
            kids.retain(|k| *k != child);
            if kids.is_empty() {
                w.sub_issues.remove(&old);
            }
        }
    }
    if w.sub_issues.get(&parent).map_or(0, Vec::len) >= 100 {
        return Err(ApiError::custom("Issue", "sub_issue_id", "Parent cannot have more than 100 sub-issues"));
    }
    let id = sub_ref(w, parent, child);
    call.created("sub_issue", id, &json!({"parent": parent, "sub_issue": child}));
    w.sub_issues.entry(parent).or_default().push(child);
    json(201, &issue_json_by_id(w, &call.req.base_url, child))
}

/// `DELETE /repos/{owner}/{repo}/issues/{issue_number}/sub_issue` (`issues.remove_sub_issue`).
pub fn remove_sub_issue(w: &mut World, call: &mut Call) -> ApiResult {
    let (_, child) = sub_issue_arg(call)?;
    let (_, _, parent) = parent_for_write(w, call)?;
    if !w.sub_issues.get(&parent).is_some_and(|k| k.contains(&child)) {
        return Err(ApiError::not_found());
    }
    let id = sub_ref(w, parent, child);
    call.deleted("sub_issue", id, &json!({"parent": parent, "sub_issue": child}));
    let kids = w.sub_issues.get_mut(&parent).expect("checked above");
    kids.retain(|k| *k != child);
    if kids.is_empty() {
        w.sub_issues.remove(&parent);
    }
    ok(issue_json_by_id(w, &call.req.base_url, child))
}

/// `PATCH /repos/{owner}/{repo}/issues/{issue_number}/sub_issues/priority`
/// (`issues.reprioritize_sub_issue`): move a sub-issue after `after_id` or before `before_id`.
pub fn reprioritize_sub_issue(w: &mut World, call: &mut Call) -> ApiResult {
    let (a, child) = sub_issue_arg(call)?;
    let (key, n, parent) = parent_for_write(w, call)?;
    let (after, before) = (a.num("after_id")?, a.num("before_id")?);
    if after.is_some() == before.is_some() {
        return Err(ApiError::new(422, "Validation Failed").with_error(json!({"resource": "Issue", "code": "custom", "message": "Exactly one of after_id or before_id must be given"})));
    }
    let kids = w.sub_issues.get(&parent).cloned().unwrap_or_default();
    if !kids.contains(&child) {
        return Err(ApiError::not_found());
    }
    let anchor = after.or(before).expect("one is given");
    if anchor == child || !kids.contains(&anchor) {
        return Err(ApiError::custom("Issue", if after.is_some() { "after_id" } else { "before_id" }, "is not another sub-issue of this issue"));
    }
    let mut new: Vec<u64> = kids.iter().copied().filter(|k| *k != child).collect();
    let at = new.iter().position(|k| *k == anchor).expect("anchor is a sub-issue") + usize::from(after.is_some());
    new.insert(at, child);
    let id = format!("{}:sub_issues", issue_ref(&w.repos[&key], n));
    call.updated("sub_issue_order", id, &kids, &new);
    w.sub_issues.insert(parent, new);
    ok(issue_json_by_id(w, &call.req.base_url, parent))
}

/// `GET /repos/{owner}/{repo}/issues/{issue_number}/sub_issues` (`issues.list_sub_issues`).
pub fn list_sub_issues(w: &mut World, call: &mut Call) -> ApiResult {
    let key = w.repo_key_for(call)?;
    let n: u64 = call.param("issue_number").parse().map_err(|_| ApiError::not_found())?;
    let id = w.repos[&key].issues.get(&n).ok_or_else(ApiError::not_found)?.id;
    let b = call.req.base_url.clone();
    let kids = w.sub_issues.get(&id).cloned().unwrap_or_default();
    // Each item names its repository (a sub-issue may live in another one).
    let list: Vec<Value> = kids
        .into_iter()
        .map(|k| {
            let mut v = issue_json_by_id(w, &b, k);
            let (rk, _) = issue_by_id(w, k).expect("sub-issue ids name issues");
            v["repository"] = w.repo_json(&b, &w.repos[&rk], false);
            v
        })
        .collect();
    crate::api::page_vec(call, list)
}

/// `GET /repos/{owner}/{repo}/issues/{issue_number}/parent` (`issues.get_parent`).
pub fn get_parent(w: &mut World, call: &mut Call) -> ApiResult {
    let key = w.repo_key_for(call)?;
    let n: u64 = call.param("issue_number").parse().map_err(|_| ApiError::not_found())?;
    let id = w.repos[&key].issues.get(&n).ok_or_else(ApiError::not_found)?.id;
    let p = parent_of(w, id).ok_or_else(ApiError::not_found)?;
    ok(issue_json_by_id(w, &call.req.base_url, p))
}

/// `sub_issue_write`: add, remove or reprioritize through the REST routes above.
pub fn sub_issue_write(w: &mut World, call: &mut Call) -> ApiResult {
    let a = Args::of(call)?;
    let n = call.param("issue_number").to_string();
    let child = a.req_num("sub_issue_id")?;
    let p = [("issue_number", n)];
    match a.req_str("method")?.as_str() {
        "add" => {
            let body = json!({"sub_issue_id": child, "replace_parent": a.bool("replace_parent").unwrap_or(false)});
            json(201, &rest_json(w, call, add_sub_issue, &p, &[], Some(body))?)
        }
        "remove" => ok(rest_json(w, call, remove_sub_issue, &p, &[], Some(json!({"sub_issue_id": child})))?),
        "reprioritize" => {
            let mut body = json!({"sub_issue_id": child});
            for k in ["after_id", "before_id"] {
                if let Some(v) = a.num(k)? {
                    body[k] = json!(v);
                }
            }
            ok(rest_json(w, call, reprioritize_sub_issue, &p, &[], Some(body))?)
        }
        m => Err(ApiError::new(422, format!("unknown method: {m}"))),
    }
}

// ---- Copilot -----------------------------------------------------------------------------

/// The Copilot bot as GitHub shows it (`login: Copilot`, `type: Bot`), added to the world the
/// first time something is handed to it.
fn copilot(w: &mut World, call: &mut Call) -> String {
    if let Some(u) = w.users.get("copilot") {
        return u.login.clone();
    }
    let id = w.next_id();
    let u = User { id, login: "Copilot".into(), name: None, kind: "Bot".into(), email: None, bio: None, company: None, location: None, created_at: time::now_iso() };
    call.created("user", "Copilot", &u);
    w.users.insert("copilot".into(), u);
    "Copilot".into()
}

/// `assign_copilot_to_issue`: Copilot becomes an assignee of the issue (GitHub's cloud agent
/// then works from `base_ref`, by default the default branch).
pub fn assign_copilot_to_issue(w: &mut World, call: &mut Call) -> ApiResult {
    let a = Args::of(call)?;
    let key = w.repo_key_for(call)?;
    let n: u64 = call.param("issue_number").parse().map_err(|_| ApiError::not_found())?;
    let r = &w.repos[&key];
    if w.viewer_role(r) < Role::Write {
        return Err(ApiError::forbidden("copilot cloud agent needs write access to the repository"));
    }
    let i = r.issues.get(&n).filter(|i| i.pull.is_none()).ok_or_else(ApiError::not_found)?;
    if i.state != "open" {
        return Err(ApiError::new(422, format!("issue #{n} is closed")));
    }
    let base = a.str("base_ref").unwrap_or_else(|| r.default_branch.clone());
    if r.git.branch(&base).is_none() {
        return Err(ApiError::new(422, format!("base_ref: no branch {base}")));
    }
    let bot = copilot(w, call);
    let r = w.repos.get_mut(&key).unwrap();
    let id = issue_ref(r, n);
    let i = r.issues.get_mut(&n).unwrap();
    let added = call.update("issue", id, i, |i| {
        if i.assignees.iter().any(|x| x.eq_ignore_ascii_case(&bot)) {
            return false;
        }
        i.assignees.push(bot.clone());
        i.updated_at = time::now_iso();
        true
    });
    if added {
        push_event(w, &key, n, "assigned", Some(bot.clone()), None);
    }
    let r = &w.repos[&key];
    let b = &call.req.base_url;
    // No agent runs in the twin, so no pull request follows: GitHub's "pending" answer.
    ok(json!({
        "message": "successfully assigned copilot to issue - pull request pending",
        "issue_number": n, "issue_url": format!("{b}/{}/issues/{n}", r.full_name()),
        "owner": call.param("owner"), "repo": call.param("repo"),
        "note": "The pull request may still be in progress. Once created, the PR number can be used to check job status, or check the issue timeline for updates.",
    }))
}

/// `request_copilot_review`: Copilot is requested as a reviewer of the pull request.
pub fn request_copilot_review(w: &mut World, call: &mut Call) -> ApiResult {
    let key = w.repo_key_for(call)?;
    let n: u64 = call.param("pullNumber").parse().map_err(|_| ApiError::not_found())?;
    let r = &w.repos[&key];
    if w.viewer_role(r) < Role::Triage {
        return Err(ApiError::forbidden("Resource not accessible by integration"));
    }
    let i = r.issues.get(&n).filter(|i| i.pull.is_some()).ok_or_else(ApiError::not_found)?;
    if i.state != "open" {
        return Err(ApiError::new(422, "Reviews can only be requested on open pull requests"));
    }
    let bot = copilot(w, call);
    let r = w.repos.get_mut(&key).unwrap();
    let id = issue_ref(r, n);
    let i = r.issues.get_mut(&n).unwrap();
    let added = call.update("pull_request", id, i, |i| {
        let p = i.pull.as_mut().unwrap();
        if p.requested_reviewers.iter().any(|x| x.eq_ignore_ascii_case(&bot)) {
            return false;
        }
        p.requested_reviewers.push(bot.clone());
        true
    });
    if added {
        push_event(w, &key, n, "review_requested", Some(bot), None);
    }
    // GitHub's server answers nothing on success.
    text("")
}

// ---- pull requests -----------------------------------------------------------------------

fn reviewer_body(list: Vec<String>) -> Value {
    let (teams, users): (Vec<String>, Vec<String>) = list.into_iter().partition(|r| r.contains('/'));
    let teams: Vec<String> = teams.into_iter().map(|t| t.rsplit('/').next().unwrap_or_default().to_string()).collect();
    json!({"reviewers": users, "team_reviewers": teams})
}

/// `create_pull_request`: `POST …/pulls`, then `POST …/requested_reviewers` for `reviewers`.
pub fn create_pull_request(w: &mut World, call: &mut Call) -> ApiResult {
    let a = Args::of(call)?;
    let mut body = Map::new();
    for k in ["title", "head", "base", "body"] {
        if let Some(v) = a.str(k) {
            body.insert(k.into(), json!(v));
        }
    }
    for k in ["draft", "maintainer_can_modify"] {
        if let Some(v) = a.bool(k) {
            body.insert(k.into(), json!(v));
        }
    }
    let v = rest_json(w, call, pulls::create, &[], &[], Some(Value::Object(body)))?;
    let reviewers = a.list("reviewers");
    if !reviewers.is_empty() {
        let n = v["number"].to_string();
        rest_json(w, call, pulls::request_reviewers, &[("pull_number", n)], &[], Some(reviewer_body(reviewers)))?;
    }
    json(201, &minimal(&v))
}

/// `update_pull_request`: `PATCH …/pulls/{n}`, the draft flag (GitHub's GraphQL
/// `convertPullRequestToDraft`/`markPullRequestReadyForReview`), then requested reviewers.
pub fn update_pull_request(w: &mut World, call: &mut Call) -> ApiResult {
    let a = Args::of(call)?;
    let n = call.param("pullNumber").to_string();
    let p = [("pull_number", n.clone())];
    let mut body = Map::new();
    for k in ["title", "body", "state", "base"] {
        if let Some(v) = a.str(k) {
            body.insert(k.into(), json!(v));
        }
    }
    if let Some(v) = a.bool("maintainer_can_modify") {
        body.insert("maintainer_can_modify".into(), json!(v));
    }
    let draft = a.bool("draft");
    let reviewers = a.list("reviewers");
    if body.is_empty() && draft.is_none() && reviewers.is_empty() {
        return Err(ApiError::new(422, "No update parameters provided."));
    }
    if !body.is_empty() {
        rest_json(w, call, pulls::update, &p, &[], Some(Value::Object(body)))?;
    }
    if let Some(d) = draft {
        let key = w.repo_key_for(call)?;
        let number: u64 = n.parse().map_err(|_| ApiError::not_found())?;
        let r = &w.repos[&key];
        if w.viewer_role(r) < Role::Write && !r.issues.get(&number).is_some_and(|i| i.user.eq_ignore_ascii_case(&w.viewer)) {
            return Err(ApiError::forbidden("Resource not accessible by integration"));
        }
        let r = w.repos.get_mut(&key).unwrap();
        let id = issue_ref(r, number);
        let i = r.issues.get_mut(&number).filter(|i| i.pull.is_some()).ok_or_else(ApiError::not_found)?;
        if i.pull.as_ref().unwrap().draft != d {
            call.update("pull_request", id, i, |i| i.pull.as_mut().unwrap().draft = d);
            push_event(w, &key, number, if d { "convert_to_draft" } else { "ready_for_review" }, None, None);
        }
    }
    if !reviewers.is_empty() {
        rest_json(w, call, pulls::request_reviewers, &p, &[], Some(reviewer_body(reviewers)))?;
    }
    ok(minimal(&rest_json(w, call, pulls::get, &p, &[], None)?))
}

/// `list_pull_requests`: `GET …/pulls` with the `fields` projection.
pub fn list_pull_requests(w: &mut World, call: &mut Call) -> ApiResult {
    let a = Args::of(call)?;
    let mut q = Vec::new();
    for k in ["state", "head", "base", "sort", "direction"] {
        if let Some(v) = a.str(k) {
            q.push((k.to_string(), v));
        }
    }
    a.paging(&mut q)?;
    let mut v = rest_json(w, call, pulls::list, &[], &q, None)?;
    project(&mut v, &a.list("fields"));
    ok(v)
}

fn thread_node(root: u64) -> String {
    format!("PRRT_{}", node_id("PullRequestReviewThread", root))
}

/// The review threads of a pull request: each first comment with its replies, in order.
fn threads(w: &World, b: &str, r: &Repo, number: u64) -> Vec<Value> {
    let visible = |c: &ReviewComment| {
        let pending = c.review_id.is_some_and(|rid| {
            r.issues[&number].pull.as_ref().is_some_and(|p| p.reviews.iter().any(|x| x.id == rid && x.state == "PENDING"))
        });
        !pending || c.user.eq_ignore_ascii_case(&w.viewer)
    };
    let comments: Vec<&ReviewComment> = r.review_comments.values().filter(|c| c.pull == number && visible(c)).collect();
    let root_of = |c: &ReviewComment| {
        let mut cur = c;
        while let Some(up) = cur.in_reply_to.and_then(|id| r.review_comments.get(&id)) {
            cur = up;
        }
        cur.id
    };
    let mut out = Vec::new();
    for root in comments.iter().filter(|c| c.in_reply_to.is_none()) {
        let members: Vec<Value> = comments
            .iter()
            .filter(|c| root_of(c) == root.id)
            .map(|c| {
                json!({
                    "id": c.id, "body": c.body, "path": c.path, "line": c.line,
                    "author": {"login": c.user}, "created_at": c.created_at, "updated_at": c.updated_at,
                    "url": format!("{b}/{}/pull/{number}#discussion_r{}", r.full_name(), c.id),
                })
            })
            .collect();
        let resolved = w.resolved_threads.contains_key(&root.id);
        out.push(json!({
            "id": thread_node(root.id), "isResolved": resolved, "isOutdated": false, "isCollapsed": resolved,
            "resolvedBy": w.resolved_threads.get(&root.id).map(|l| json!({"login": l})),
            "path": root.path, "line": root.line,
            "comments": members, "totalCount": comments.iter().filter(|c| root_of(c) == root.id).count(),
        }));
    }
    out
}

/// `pull_request_read`: the pull request, its diff, combined status, files, commits, review
/// threads (cursor pages), reviews, comments or the head commit's check runs.
pub fn pull_request_read(w: &mut World, call: &mut Call) -> ApiResult {
    let a = Args::of(call)?;
    let n = call.param("pullNumber").to_string();
    let p = [("pull_number", n.clone())];
    let mut q = Vec::new();
    a.paging(&mut q)?;
    let number: u64 = n.parse().map_err(|_| ApiError::not_found())?;
    match a.req_str("method")?.as_str() {
        "get" => ok(rest_json(w, call, pulls::get, &p, &[], None)?),
        "get_diff" => {
            // The diff media type, whatever the MCP request accepted.
            let saved = call.req.headers.clone();
            call.req.headers.retain(|(k, _)| k != "accept");
            call.req.headers.push(("accept".into(), "application/vnd.github.diff".into()));
            let out = rest(w, call, pulls::get, &p, &[], None);
            call.req.headers = saved;
            out
        }
        "get_status" => rest(w, call, super::mcp_tools::get_pull_request_status, &[("pullNumber", n)], &[], None),
        "get_files" => ok(rest_json(w, call, pulls::list_files, &p, &q, None)?),
        "get_commits" => ok(rest_json(w, call, pulls::list_commits, &p, &q, None)?),
        "get_reviews" => ok(rest_json(w, call, pulls::list_reviews, &p, &q, None)?),
        "get_comments" => ok(rest_json(w, call, issues::list_comments, &[("issue_number", n)], &q, None)?),
        "get_check_runs" => {
            let key = w.repo_key_for(call)?;
            let r = &w.repos[&key];
            let i = r.issues.get(&number).filter(|i| i.pull.is_some()).ok_or_else(ApiError::not_found)?;
            let head = pulls::head_sha(r, i.pull.as_ref().unwrap(), i.state == "open");
            ok(rest_json(w, call, checks::list_check_runs, &[("ref", head)], &q, None)?)
        }
        "get_review_comments" => {
            let key = w.repo_key_for(call)?;
            let r = &w.repos[&key];
            r.issues.get(&number).filter(|i| i.pull.is_some()).ok_or_else(ApiError::not_found)?;
            let all = threads(w, &call.req.base_url, r, number);
            let per = a.num("perPage")?.unwrap_or(30).clamp(1, 100) as usize;
            let offset = offset_of(a.str("after"))?;
            let total = all.len();
            let page: Vec<Value> = all.into_iter().skip(offset).take(per).collect();
            let shown = page.len();
            ok(json!({"reviewThreads": page, "pageInfo": page_info(offset, shown, total), "totalCount": total}))
        }
        m => Err(ApiError::new(422, format!("unknown method: {m}"))),
    }
}

/// The viewer's pending review on pull request `number`.
fn pending_review(w: &World, r: &Repo, number: u64) -> Option<u64> {
    let p = r.issues.get(&number)?.pull.as_ref()?;
    p.reviews.iter().rev().find(|x| x.state == "PENDING" && x.user.eq_ignore_ascii_case(&w.viewer)).map(|x| x.id)
}

/// The review thread whose node id is `thread` (`PRRT_…`): its first comment's id.
fn thread_root(w: &World, thread: &str) -> Result<u64, ApiError> {
    let bad = || ApiError::new(404, format!("Could not resolve to a PullRequestReviewThread with the global id of '{thread}'."));
    let inner = thread.strip_prefix("PRRT_").ok_or_else(bad)?;
    let text = B64.decode(inner.as_bytes()).ok().and_then(|b| String::from_utf8(b).ok()).ok_or_else(bad)?;
    let id: u64 = text.rsplit("PullRequestReviewThread").next().and_then(|n| n.parse().ok()).ok_or_else(bad)?;
    let found = w.repos.values().any(|r| r.review_comments.get(&id).is_some_and(|c| c.in_reply_to.is_none()) && w.viewer_role(r) >= Role::Read);
    if found { Ok(id) } else { Err(bad()) }
}

/// `pull_request_review_write`: create (pending without `event`), submit or delete the
/// viewer's pending review, or resolve/unresolve a review thread.
pub fn pull_request_review_write(w: &mut World, call: &mut Call) -> ApiResult {
    let a = Args::of(call)?;
    let n = call.param("pullNumber").to_string();
    let p = [("pull_number", n.clone())];
    let number: u64 = n.parse().map_err(|_| ApiError::not_found())?;
    match a.req_str("method")?.as_str() {
        "create" => {
            let mut body = Map::new();
            if let Some(b) = a.str("body") {
                body.insert("body".into(), json!(b));
            }
            if let Some(e) = a.str("event") {
                body.insert("event".into(), json!(e));
            }
            if let Some(c) = a.str("commitID") {
                body.insert("commit_id".into(), json!(c));
            }
            rest_json(w, call, pulls::create_review, &p, &[], Some(Value::Object(body)))?;
            text(if a.str("event").is_some() { "pull request review submitted successfully" } else { "pending pull request created" })
        }
        m @ ("submit_pending" | "delete_pending") => {
            let key = w.repo_key_for(call)?;
            let id = pending_review(w, &w.repos[&key], number).ok_or_else(|| ApiError::new(422, "No pending review found for the viewer"))?;
            let ps = [("pull_number", n), ("review_id", id.to_string())];
            if m == "delete_pending" {
                rest_json(w, call, pulls::delete_pending_review, &ps, &[], None)?;
                return text("pending pull request review successfully deleted");
            }
            let event = a.req_str("event")?;
            let mut body = json!({"event": event});
            if let Some(b) = a.str("body") {
                body["body"] = json!(b);
            }
            rest_json(w, call, pulls::submit_review, &ps, &[], Some(body))?;
            text("pending pull request review successfully submitted")
        }
        m @ ("resolve_thread" | "unresolve_thread") => {
            let thread = a.req_str("threadId")?;
            let root = thread_root(w, &thread)?;
            let key = w.repos.iter().find(|(_, r)| r.review_comments.contains_key(&root)).map(|(k, _)| k.clone()).expect("found above");
            if w.viewer_role(&w.repos[&key]) < Role::Write && !w.repos[&key].review_comments[&root].user.eq_ignore_ascii_case(&w.viewer) {
                return Err(ApiError::forbidden("Resource not accessible by integration"));
            }
            let resolve = m == "resolve_thread";
            let was = w.resolved_threads.get(&root).cloned();
            if resolve && was.is_none() {
                let viewer = w.viewer.clone();
                call.created("review_thread_resolution", &thread, &json!({"thread": thread, "resolved_by": viewer}));
                w.resolved_threads.insert(root, viewer);
            } else if !resolve && was.is_some() {
                call.deleted("review_thread_resolution", &thread, &json!({"thread": thread, "resolved_by": was}));
                w.resolved_threads.remove(&root);
            }
            text(if resolve { "review thread resolved successfully" } else { "review thread unresolved successfully" })
        }
        m => Err(ApiError::new(422, format!("unknown method: {m}"))),
    }
}

/// `add_comment_to_pending_review`: a review comment inside the viewer's pending review
/// (GitHub's GraphQL `addPullRequestReviewThread`); it stays invisible to others until the
/// review is submitted.
pub fn add_comment_to_pending_review(w: &mut World, call: &mut Call) -> ApiResult {
    let a = Args::of(call)?;
    let key = w.repo_key_for(call)?;
    let number: u64 = call.param("pullNumber").parse().map_err(|_| ApiError::not_found())?;
    let path = a.req_str("path")?;
    let body = a.req_str("body")?;
    let subject = a.req_str("subjectType")?;
    let line = a.num("line")?;
    let start = a.num("startLine")?;
    if subject == "LINE" && line.is_none() {
        return Err(ApiError::new(422, "line is required when subjectType is LINE"));
    }
    if let (Some(s), Some(l)) = (start, line) {
        if s > l {
            return Err(ApiError::new(422, "startLine must not be after line"));
        }
    }
    let r = &w.repos[&key];
    let i = r.issues.get(&number).filter(|i| i.pull.is_some()).ok_or_else(ApiError::not_found)?;
    let rid = pending_review(w, r, number).ok_or_else(|| ApiError::new(422, "No pending review found for the viewer: create one with pull_request_review_write (method create, no event) first"))?;
    let pr = i.pull.as_ref().unwrap();
    let head = pulls::head_sha(r, pr, i.state == "open");
    let base = pulls::base_sha(r, pr);
    let mb = r.git.merge_base(&base, &head).unwrap_or(base);
    let changed = crate::diff::diff_trees(&r.git, &tree_of(r, &mb), &tree_of(r, &head));
    let f = changed.iter().find(|f| f.filename == path).ok_or_else(|| ApiError::new(422, format!("Path could not be resolved: {path}")))?;
    let hunk = f.patch.clone().unwrap_or_default().lines().take(4).collect::<Vec<_>>().join("\n");
    let commit_id = pr.reviews.iter().find(|x| x.id == rid).map(|x| x.commit_id.clone()).unwrap_or(head);
    let id = w.next_id();
    let now = time::now_iso();
    let c = ReviewComment {
        id,
        pull: number,
        review_id: Some(rid),
        in_reply_to: None,
        user: w.viewer.clone(),
        body,
        path,
        line: if subject == "FILE" { None } else { line },
        side: a.str("side").unwrap_or_else(|| "RIGHT".into()),
        commit_id,
        diff_hunk: hunk,
        created_at: now.clone(),
        updated_at: now,
    };
    call.created("review_comment", id, &c);
    let r = w.repos.get_mut(&key).unwrap();
    r.review_comments.insert(id, c);
    text("pull request review comment successfully added to pending review")
}

/// `add_reply_to_pull_request_comment`: a reply (`POST …/comments/{id}/replies`) and/or a
/// reaction (`POST …/pulls/comments/{id}/reactions`).
pub fn add_reply_to_pull_request_comment(w: &mut World, call: &mut Call) -> ApiResult {
    let a = Args::of(call)?;
    let cid = call.param("commentId").to_string();
    let body = a.str("body");
    let reaction = a.str("reaction");
    if body.is_none() && reaction.is_none() {
        return Err(ApiError::new(422, "at least one of body or reaction is required"));
    }
    let pull = match body {
        Some(_) => Some(a.num("pullNumber")?.ok_or_else(|| ApiError::new(422, "missing required parameter: pullNumber"))?),
        None => None,
    };
    // As GitHub's server: the reaction first, then the reply; each answered as `{id, url}`.
    let api = format!("{}/repos/{}/{}", call.req.base_url, call.param("owner"), call.param("repo"));
    let reaction = match reaction {
        Some(r) => {
            let x = rest_json(w, call, create_review_comment_reaction, &[("comment_id", cid.clone())], &[], Some(json!({"content": r})))?;
            Some(json!({"id": x["id"].to_string(), "url": format!("{api}/pulls/comments/{cid}/reactions/{}", x["id"])}))
        }
        None => None,
    };
    let reply = match (body, pull) {
        (Some(b), Some(n)) => Some(minimal(&rest_json(w, call, pulls::reply_review_comment, &[("pull_number", n.to_string()), ("comment_id", cid)], &[], Some(json!({"body": b})))?)),
        _ => None,
    };
    match (reply, reaction) {
        (Some(c), Some(r)) => json(201, &json!({"comment": c, "reaction": r})),
        (Some(c), None) => json(201, &c),
        (None, r) => json(201, &r.unwrap_or(Value::Null)),
    }
}

const REACTIONS: [&str; 8] = ["+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"];

/// `POST /repos/{owner}/{repo}/pulls/comments/{comment_id}/reactions`
/// (`reactions.create_for_pull_request_review_comment`): 201 new, 200 when the viewer had
/// already reacted so.
pub fn create_review_comment_reaction(w: &mut World, call: &mut Call) -> ApiResult {
    let a = Args::of(call)?;
    let content = a.str("content").ok_or_else(|| ApiError::invalid("Reaction", "content", "missing_field"))?;
    if !REACTIONS.contains(&content.as_str()) {
        return Err(ApiError::invalid("Reaction", "content", "invalid"));
    }
    let key = w.repo_key_for(call)?;
    let cid: u64 = call.param("comment_id").parse().map_err(|_| ApiError::not_found())?;
    if !w.repos[&key].review_comments.contains_key(&cid) {
        return Err(ApiError::not_found());
    }
    let viewer = w.viewer.clone();
    let b = call.req.base_url.clone();
    if let Some(x) = w.review_comment_reactions.get(&cid).and_then(|l| l.iter().find(|x| x.user.eq_ignore_ascii_case(&viewer) && x.content == content)) {
        return json(200, &w.reaction_json(&b, x));
    }
    let x = Reaction { id: w.next_id(), user: viewer, content, created_at: time::now_iso() };
    call.created("reaction", x.id, &json!({"review_comment": cid, "user": x.user, "content": x.content}));
    w.review_comment_reactions.entry(cid).or_default().push(x.clone());
    json(201, &w.reaction_json(&b, &x))
}

/// `GET /repos/{owner}/{repo}/pulls/comments/{comment_id}/reactions`.
pub fn list_review_comment_reactions(w: &mut World, call: &mut Call) -> ApiResult {
    let key = w.repo_key_for(call)?;
    let cid: u64 = call.param("comment_id").parse().map_err(|_| ApiError::not_found())?;
    if !w.repos[&key].review_comments.contains_key(&cid) {
        return Err(ApiError::not_found());
    }
    let b = call.req.base_url.clone();
    let list: Vec<Value> = w.review_comment_reactions.get(&cid).into_iter().flatten().map(|x| w.reaction_json(&b, x)).collect();
    crate::api::page_vec(call, list)
}

// ---- repositories ------------------------------------------------------------------------

/// `create_repository`: `POST /user/repos` or `POST /orgs/{organization}/repos`, private
/// unless told otherwise; answers `{id, url}`.
pub fn create_repository(w: &mut World, call: &mut Call) -> ApiResult {
    let a = Args::of(call)?;
    let mut body = json!({"name": a.req_str("name")?, "private": a.bool("private").unwrap_or(true), "auto_init": a.bool("autoInit").unwrap_or(false)});
    if let Some(d) = a.str("description") {
        body["description"] = json!(d);
    }
    let v = match a.str("organization") {
        Some(org) => rest_json(w, call, repos::create_in_org, &[("org", org)], &[], Some(body))?,
        None => rest_json(w, call, repos::create_for_user, &[], &[], Some(body))?,
    };
    json(201, &minimal(&v))
}

/// `delete_file`: the file at `path` removed from `branch` in one commit (the server reads
/// the file's sha itself, so the agent does not pass one).
pub fn delete_file(w: &mut World, call: &mut Call) -> ApiResult {
    let a = Args::of(call)?;
    let path = call.param("path").trim_matches('/').to_string();
    let branch = a.req_str("branch")?;
    let message = a.req_str("message")?;
    let r = w.repo(call)?;
    let head = r.git.branch(&branch).cloned().ok_or_else(|| ApiError::new(404, format!("Branch {branch} not found")))?;
    let (_, sha) = r.git.flatten(&tree_of(r, &head)).get(&path).cloned().ok_or_else(|| ApiError::new(404, format!("{path} not found on {branch}")))?;
    rest(w, call, git::delete_content, &[("path", path)], &[], Some(json!({"message": message, "branch": branch, "sha": sha})))
}

/// `create_or_update_file`'s symlink guard: a symbolic link is only rewritten (to a new
/// target) when `allow_symlink_write` is set.
pub fn symlink_guard(w: &World, call: &Call, a: &Args) -> Result<(), ApiError> {
    let path = call.param("path").trim_matches('/').to_string();
    let r = w.repo(call)?;
    let branch = a.str("branch").unwrap_or_else(|| r.default_branch.clone());
    let Some(head) = r.git.branch(&branch) else { return Ok(()) };
    let is_link = r.git.flatten(&tree_of(r, head)).get(&path).is_some_and(|(mode, _)| mode == "120000");
    if is_link && !a.bool("allow_symlink_write").unwrap_or(false) {
        return Err(ApiError::new(422, format!("{path} is a symbolic link: set allow_symlink_write to true to rewrite the link itself (content is its new target)")));
    }
    Ok(())
}

/// `get_commit`: `GET …/commits/{sha}` with `detail` (`none`, `stats` without patches,
/// `full_patch`) and the changed files paged by `page`/`perPage`.
pub fn get_commit(w: &mut World, call: &mut Call) -> ApiResult {
    let a = Args::of(call)?;
    let sha = call.param("sha").to_string();
    let mut v = rest_json(w, call, git::get_commit, &[("ref", sha)], &[], None)?;
    let detail = a.str("detail").unwrap_or_else(|| "stats".into());
    let m = v.as_object_mut().expect("a commit is an object");
    match detail.as_str() {
        "none" => {
            m.remove("files");
            m.remove("stats");
        }
        "stats" | "full_patch" => {
            if let Some(Value::Array(files)) = m.get_mut("files") {
                let per = a.num("perPage")?.unwrap_or(30).clamp(1, 100) as usize;
                let page = a.num("page")?.unwrap_or(1).max(1) as usize;
                let kept: Vec<Value> = files.drain(..).skip((page - 1) * per).take(per).collect();
                *files = kept;
                if detail == "stats" {
                    for f in files.iter_mut() {
                        if let Some(o) = f.as_object_mut() {
                            o.remove("patch");
                        }
                    }
                }
            }
        }
        d => return Err(ApiError::new(422, format!("detail must be none, stats or full_patch, not {d}"))),
    }
    ok(v)
}

/// `get_file_contents`: a file (its text decoded) or a directory listing (with `fields`), at
/// `sha`, else `ref` (`refs/heads/…`, `refs/tags/…`, `refs/pull/{n}/head`), else the default
/// branch.
pub fn get_file_contents(w: &mut World, call: &mut Call) -> ApiResult {
    let a = Args::of(call)?;
    let path = a.str("path").unwrap_or_else(|| "/".into());
    let reference = match (a.str("sha"), a.str("ref")) {
        (Some(s), _) => Some(s),
        (None, Some(r)) => {
            if let Some(n) = r.strip_prefix("refs/pull/").and_then(|x| x.strip_suffix("/head")).and_then(|n| n.parse::<u64>().ok()) {
                let r = w.repo(call)?;
                let i = r.issues.get(&n).filter(|i| i.pull.is_some()).ok_or_else(ApiError::not_found)?;
                Some(pulls::head_sha(r, i.pull.as_ref().unwrap(), i.state == "open"))
            } else {
                Some(r.strip_prefix("refs/heads/").or_else(|| r.strip_prefix("refs/tags/")).unwrap_or(&r).to_string())
            }
        }
        (None, None) => None,
    };
    let q: Vec<(String, String)> = reference.map(|r| vec![("ref".to_string(), r)]).unwrap_or_default();
    let trimmed = path.trim_matches('/').to_string();
    let mut v = if trimmed.is_empty() {
        rest_json(w, call, git::get_content_root, &[], &q, None)?
    } else {
        rest_json(w, call, git::get_content, &[("path", trimmed)], &q, None)?
    };
    if v.is_array() {
        project(&mut v, &a.list("fields"));
        return ok(v);
    }
    if let (Some("file"), Some(Value::String(c))) = (v.get("type").and_then(Value::as_str), v.get("content")) {
        let bytes = B64.decode(c.replace('\n', "").as_bytes()).unwrap_or_default();
        if let Ok(text) = String::from_utf8(bytes) {
            v["content"] = json!(text);
            v["encoding"] = json!("utf-8");
        }
    }
    ok(v)
}

/// `get_tag`: the annotated tag object `refs/tags/{tag}` points at.
pub fn get_tag(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let tag = call.param("tag").to_string();
    let sha = r.git.tags().find(|(n, _)| *n == tag).map(|(_, s)| s.clone()).ok_or_else(|| ApiError::new(404, format!("failed to get tag reference: tags/{tag} not found")))?;
    match r.git.get(&sha) {
        Some(crate::git::Object::Tag(t)) => ok(git::tag_json(&call.req.base_url, r, &sha, t)),
        _ => Err(ApiError::new(404, format!("failed to get tag object: tags/{tag} is a lightweight tag (it points at {sha}, not at a tag object)"))),
    }
}

/// `list_commits`, `list_releases`: the REST list with the `fields` projection.
pub fn list_commits(w: &mut World, call: &mut Call) -> ApiResult {
    let a = Args::of(call)?;
    let mut q = Vec::new();
    for k in ["sha", "path", "author", "since", "until"] {
        if let Some(v) = a.str(k) {
            q.push((k.to_string(), v));
        }
    }
    a.paging(&mut q)?;
    let mut v = rest_json(w, call, git::list_commits, &[], &q, None)?;
    project(&mut v, &a.list("fields"));
    ok(v)
}

pub fn list_releases(w: &mut World, call: &mut Call) -> ApiResult {
    let a = Args::of(call)?;
    let mut q = Vec::new();
    a.paging(&mut q)?;
    let mut v = rest_json(w, call, releases::list, &[], &q, None)?;
    project(&mut v, &a.list("fields"));
    ok(v)
}

/// `list_repository_collaborators`: filtered by `affiliation` (`outside`: neither the owner
/// nor a member of the owner organization), paged with `nextPage`/`prevPage`/`firstPage`/
/// `lastPage`.
pub fn list_repository_collaborators(w: &mut World, call: &mut Call) -> ApiResult {
    let a = Args::of(call)?;
    let all = rest_json(w, call, repos::list_collaborators, &[], &[("per_page".into(), "100".into())], None)?;
    let r = w.repo(call)?;
    let members = if w.users.get(&r.owner.to_ascii_lowercase()).is_some_and(|u| u.kind == "Organization") { misc::members(w, &r.owner) } else { Vec::new() };
    let affiliation = a.str("affiliation").unwrap_or_else(|| "all".into());
    let list: Vec<Value> = all
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|u| {
            let login = u["login"].as_str().unwrap_or("");
            affiliation != "outside" || (!login.eq_ignore_ascii_case(&r.owner) && !members.iter().any(|m| m.eq_ignore_ascii_case(login)))
        })
        .collect();
    let per = a.num("perPage")?.unwrap_or(30).clamp(1, 100) as usize;
    let page = a.num("page")?.unwrap_or(1).max(1) as usize;
    let last = list.len().div_ceil(per).max(1);
    let items: Vec<Value> = list.into_iter().skip((page - 1) * per).take(per).collect();
    let mut out = json!({"collaborators": items});
    let m = out.as_object_mut().unwrap();
    if page < last {
        m.insert("nextPage".into(), json!(page + 1));
        m.insert("lastPage".into(), json!(last));
    }
    if page > 1 {
        m.insert("prevPage".into(), json!(page - 1));
        m.insert("firstPage".into(), json!(1));
    }
    ok(out)
}

// ---- search --------------------------------------------------------------------------------

fn search_query(a: &Args, extra: Option<&str>) -> Result<Vec<(String, String)>, ApiError> {
    let mut q = a.req_str("query")?;
    if let Some(e) = extra {
        let key = e.split(':').next().unwrap_or(e);
        if !q.split_whitespace().any(|t| t.starts_with(&format!("{key}:"))) {
            q = format!("{e} {q}");
        }
    }
    let mut out = vec![("q".to_string(), q)];
    for k in ["sort", "order"] {
        if let Some(v) = a.str(k) {
            out.push((k.into(), v));
        }
    }
    a.paging(&mut out)?;
    Ok(out)
}

/// `search_code` with the `fields` projection.
pub fn search_code(w: &mut World, call: &mut Call) -> ApiResult {
    let a = Args::of(call)?;
    let q = search_query(&a, None)?;
    let mut v = rest_json(w, call, search::code, &[], &q, None)?;
    if let Some(items) = v.get_mut("items") {
        project(items, &a.list("fields"));
    }
    ok(v)
}

/// `search_repositories`: minimal repositories unless `minimal_output` is false.
pub fn search_repositories(w: &mut World, call: &mut Call) -> ApiResult {
    let a = Args::of(call)?;
    let q = search_query(&a, None)?;
    let mut v = rest_json(w, call, search::repositories, &[], &q, None)?;
    if a.bool("minimal_output").unwrap_or(true) {
        let keep = [
            "id", "name", "full_name", "description", "html_url", "language", "stargazers_count", "forks_count",
            "open_issues_count", "updated_at", "created_at", "topics", "private", "fork", "archived", "default_branch",
        ];
        if let Some(items) = v.get_mut("items") {
            project(items, &keep.map(String::from));
        }
    }
    ok(v)
}

/// `search_users`: scoped to `type:user`, each user as login, id, profile and avatar.
pub fn search_users(w: &mut World, call: &mut Call) -> ApiResult {
    let a = Args::of(call)?;
    let q = search_query(&a, Some("type:user"))?;
    let v = rest_json(w, call, search::users, &[], &q, None)?;
    let items: Vec<Value> = v["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|u| json!({"login": u["login"], "id": u["id"], "profile_url": u["html_url"], "avatar_url": u["avatar_url"]}))
        .collect();
    ok(json!({"total_count": v["total_count"], "incomplete_results": v["incomplete_results"], "items": items}))
}

// ---- teams ---------------------------------------------------------------------------------

/// `get_teams`: every organization `user` (default: the viewer) belongs to, each with the
/// teams of it that the user is in (GitHub's GraphQL `organizations { teams(userLogins) }`).
pub fn get_teams(w: &mut World, call: &mut Call) -> ApiResult {
    let a = Args::of(call)?;
    let user = a.str("user").filter(|u| !u.is_empty()).unwrap_or_else(|| w.viewer.clone());
    if !w.user_exists(&user) {
        return Err(ApiError::new(404, format!("Could not resolve to a User with the login of '{user}'.")));
    }
    let in_team = |t: &Team| t.members.iter().any(|m| m.eq_ignore_ascii_case(&user));
    let mut orgs: Vec<String> = misc::orgs_of(w, &user).into_iter().map(|o| o.login.clone()).collect();
    for t in w.teams.values().filter(|t| in_team(t)) {
        if !orgs.iter().any(|o| o.eq_ignore_ascii_case(&t.org)) {
            orgs.push(t.org.clone());
        }
    }
    orgs.sort_by_key(|o| o.to_ascii_lowercase());
    let out: Vec<Value> = orgs
        .iter()
        .map(|o| {
            let teams: Vec<Value> = w
                .teams
                .values()
                .filter(|t| t.org.eq_ignore_ascii_case(o) && in_team(t) && crate::handlers::teams::team_visible(w, t))
                .map(|t| json!({"name": t.name, "slug": t.slug, "description": t.description.clone().unwrap_or_default()}))
                .collect();
            json!({"org": o, "teams": teams})
        })
        .collect();
    // The server marshals an empty Go slice of organizations as `null`.
    ok(if out.is_empty() { Value::Null } else { Value::Array(out) })
}

/// `get_team_members`: the member logins of `org`'s team `team_slug`.
pub fn get_team_members(w: &mut World, call: &mut Call) -> ApiResult {
    let key = format!("{}/{}", call.param("org").to_ascii_lowercase(), call.param("team_slug").to_ascii_lowercase());
    let t = w.teams.get(&key).filter(|t| crate::handlers::teams::team_visible(w, t)).ok_or_else(ApiError::not_found)?;
    ok(if t.members.is_empty() { Value::Null } else { json!(t.members) })
}

