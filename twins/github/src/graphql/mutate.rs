//! Mutations, each run as the REST call that makes the same change (`addComment` is
//! `POST /repos/{o}/{r}/issues/{n}/comments`): the REST handler validates, writes the world
//! and records its changes, and the tape shows the REST action's name, so checks and grading
//! see one history whichever API the agent used. GraphQL's global ids are turned into the
//! names and numbers REST takes first.

use pome_graphql::apollo_compiler::resolvers::FieldError;
use pome_graphql::exec::{Info, Out};
use pome_twin_sdk::{Call, Method, Request, Value, json};

use super::resolve::{Ent, Obj, decode_node_id};
use crate::World;
use crate::api::ApiResult;
use crate::handlers::{issues, pulls};

pub use crate::render::enc;

type Handler = fn(&mut World, &mut Call) -> ApiResult;

pub fn run<'a>(o: &'a Obj<'_, '_>, info: &Info<'_>) -> Result<Out<'a>, FieldError> {
    let input = info.args.get("input").cloned().unwrap_or(json!({}));
    let client_id = input.get("clientMutationId").cloned().unwrap_or(Value::Null);
    let payload = |ty: &'static str, fields: Vec<(&'static str, Ent)>| Ok(Out::object(Obj { c: o.c, e: Ent::Payload { ty, fields, client_id: client_id.clone() } }));
    let s = |k: &str| input.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    match info.field_name() {
        "addComment" => {
            let (key, number) = issue_of(o, &s("subjectId"))?;
            let body = json!({"body": input.get("body")});
            let v = rest(o, Method::Post, "issues.create_comment", issues::create_comment, &key, Some(number), body)?;
            let id = v["id"].as_u64().unwrap_or(0);
            let subject = subject(o, &key, number);
            let edge = Ent::Edge { ty: "IssueCommentEdge".into(), at: 0, node: Box::new(Ent::Comment(key.clone(), id)) };
            payload("AddCommentPayload", vec![("commentEdge", edge), ("subject", subject)])
        }
        "createIssue" => {
            let key = repo_of(o, &s("repositoryId"))?;
            let mut body = json!({"title": input.get("title"), "body": input.get("body")});
            if let Some(ids) = input.get("assigneeIds").and_then(Value::as_array) {
                body["assignees"] = json!(logins(o, ids)?);
            }
            if let Some(ids) = input.get("labelIds").and_then(Value::as_array) {
                body["labels"] = json!(label_names(o, &key, ids)?);
            }
            if let Some(m) = input.get("milestoneId").and_then(Value::as_str) {
                body["milestone"] = json!(milestone_number(o, &key, m)?);
            }
            let v = rest(o, Method::Post, "issues.create", issues::create, &key, None, body)?;
            let n = v["number"].as_u64().unwrap_or(0);
            payload("CreateIssuePayload", vec![("issue", Ent::Issue(key, n))])
        }
        "updateIssue" => {
            let (key, number) = issue_of(o, &s("id"))?;
            let mut body = json!({});
            for (from, to) in [("title", "title"), ("body", "body")] {
                if let Some(x) = input.get(from).filter(|x| !x.is_null()) {
                    body[to] = x.clone();
                }
            }
            if let Some(st) = input.get("state").and_then(Value::as_str) {
                body["state"] = json!(st.to_ascii_lowercase());
            }
            if let Some(ids) = input.get("assigneeIds").and_then(Value::as_array) {
                body["assignees"] = json!(logins(o, ids)?);
            }
            if let Some(ids) = input.get("labelIds").and_then(Value::as_array) {
                body["labels"] = json!(label_names(o, &key, ids)?);
            }
            match input.get("milestoneId") {
                Some(Value::String(m)) => body["milestone"] = json!(milestone_number(o, &key, m)?),
                Some(Value::Null) => body["milestone"] = Value::Null,
                _ => {}
            }
            rest(o, Method::Patch, "issues.update", issues::update, &key, Some(number), body)?;
            payload("UpdateIssuePayload", vec![("issue", subject(o, &key, number))])
        }
        "closeIssue" | "reopenIssue" => {
            let (key, number) = issue_of(o, &s("issueId"))?;
            let close = info.field_name() == "closeIssue";
            let mut body = json!({"state": if close { "closed" } else { "open" }});
            if let Some(r) = input.get("stateReason").and_then(Value::as_str).filter(|_| close) {
                body["state_reason"] = json!(r.to_ascii_lowercase());
            }
            rest(o, Method::Patch, "issues.update", issues::update, &key, Some(number), body)?;
            let ty = if close { "CloseIssuePayload" } else { "ReopenIssuePayload" };
            payload(ty, vec![("issue", subject(o, &key, number))])
        }
        "addLabelsToLabelable" => {
            let (key, number) = issue_of(o, &s("labelableId"))?;
            let ids = input.get("labelIds").and_then(Value::as_array).cloned().unwrap_or_default();
            let names = label_names(o, &key, &ids)?;
            rest(o, Method::Post, "issues.add_labels", issues::add_labels, &key, Some(number), json!({"labels": names}))?;
            payload("AddLabelsToLabelablePayload", vec![("labelable", subject(o, &key, number))])
        }
        "createPullRequest" => {
            let key = repo_of(o, &s("repositoryId"))?;
            let mut body = json!({"title": input.get("title"), "head": input.get("headRefName"), "base": input.get("baseRefName"), "body": input.get("body")});
            if let Some(d) = input.get("draft").and_then(Value::as_bool) {
                body["draft"] = json!(d);
            }
            if let Some(m) = input.get("maintainerCanModify").and_then(Value::as_bool) {
                body["maintainer_can_modify"] = json!(m);
            }
            let v = rest_at(o, Method::Post, "pulls.create", pulls::create, &key, None, "/pulls", body)?;
            let n = v["number"].as_u64().unwrap_or(0);
            payload("CreatePullRequestPayload", vec![("pullRequest", Ent::Pull(key, n))])
        }
        "addPullRequestReview" => {
            let (key, number) = pull_of(o, &s("pullRequestId"))?;
            let mut body = json!({"body": input.get("body"), "event": input.get("event")});
            if let Some(c) = input.get("commitOID").and_then(Value::as_str) {
                body["commit_id"] = json!(c);
            }
            let v = rest_at(o, Method::Post, "pulls.create_review", pulls::create_review, &key, Some(number), "/reviews", body)?;
            let id = v["id"].as_u64().unwrap_or(0);
            payload("AddPullRequestReviewPayload", vec![("pullRequestReview", Ent::Review(key.clone(), number, id))])
        }
        "mergePullRequest" => {
            let (key, number) = pull_of(o, &s("pullRequestId"))?;
            let mut body = json!({"merge_method": input.get("mergeMethod").and_then(Value::as_str).unwrap_or("MERGE").to_ascii_lowercase()});
            for (from, to) in [("commitHeadline", "commit_title"), ("commitBody", "commit_message"), ("expectedHeadOid", "sha")] {
                if let Some(x) = input.get(from).filter(|x| !x.is_null()) {
                    body[to] = x.clone();
                }
            }
            rest_at(o, Method::Put, "pulls.merge", pulls::merge, &key, Some(number), "/merge", body)?;
            payload("MergePullRequestPayload", vec![("pullRequest", Ent::Pull(key, number))])
        }
        _ => {
            o.c.fx.borrow_mut().unsupported = true;
            Err(o.c.fail("NOT_IMPLEMENTED", format!("pome's GitHub twin does not serve the `{}` mutation", info.field_name())))
        }
    }
}

/// The issue or pull request a global id names, as `(repository key, number)`.
fn issue_of(o: &Obj<'_, '_>, id: &str) -> Result<(String, u64), FieldError> {
    match o.by_node_id(id) {
        Some(Ent::Issue(k, n) | Ent::Pull(k, n)) => Ok((k, n)),
        _ => Err(not_found(o, id)),
    }
}

/// The pull request a global id names, as `(repository key, number)`.
fn pull_of(o: &Obj<'_, '_>, id: &str) -> Result<(String, u64), FieldError> {
    match o.by_node_id(id) {
        Some(Ent::Pull(k, n)) => Ok((k, n)),
        _ => Err(not_found(o, id)),
    }
}

fn repo_of(o: &Obj<'_, '_>, id: &str) -> Result<String, FieldError> {
    match o.by_node_id(id) {
        Some(Ent::Repo(k)) => Ok(k),
        _ => Err(not_found(o, id)),
    }
}

fn not_found(o: &Obj<'_, '_>, id: &str) -> FieldError {
    o.c.fail("NOT_FOUND", format!("Could not resolve to a node with the global id of '{id}'"))
}

fn subject(o: &Obj<'_, '_>, key: &str, number: u64) -> Ent {
    let pull = o.c.w.borrow().repos.get(key).and_then(|r| r.issues.get(&number)).is_some_and(|i| i.pull.is_some());
    if pull { Ent::Pull(key.to_string(), number) } else { Ent::Issue(key.to_string(), number) }
}

fn logins(o: &Obj<'_, '_>, ids: &[Value]) -> Result<Vec<String>, FieldError> {
    ids.iter()
        .map(|id| {
            let id = id.as_str().unwrap_or("");
            match o.by_node_id(id) {
                Some(Ent::User(l)) => Ok(o.c.w.borrow().users[&l].login.clone()),
                _ => Err(not_found(o, id)),
            }
        })
        .collect()
}

fn label_names(o: &Obj<'_, '_>, key: &str, ids: &[Value]) -> Result<Vec<String>, FieldError> {
    ids.iter()
        .map(|id| {
            let id = id.as_str().unwrap_or("");
            match decode_node_id(id) {
                Some((kind, n)) if kind == "Label" => o.c.w.borrow().repos[key].labels.iter().find(|l| l.id == n).map(|l| l.name.clone()).ok_or_else(|| not_found(o, id)),
                _ => Err(not_found(o, id)),
            }
        })
        .collect()
}

fn milestone_number(o: &Obj<'_, '_>, key: &str, id: &str) -> Result<u64, FieldError> {
    match decode_node_id(id) {
        Some((kind, n)) if kind == "Milestone" => o.c.w.borrow().repos[key].milestones.values().find(|m| m.id == n).map(|m| m.number).ok_or_else(|| not_found(o, id)),
        _ => Err(not_found(o, id)),
    }
}

/// Run a REST handler as the request's client would call it, keeping its action and changes
/// for the tape; a REST error becomes the field error GitHub's GraphQL answers for it.
fn rest(o: &Obj<'_, '_>, method: Method, action: &str, f: Handler, key: &str, number: Option<u64>, body: Value) -> Result<Value, FieldError> {
    rest_at(o, method, action, f, key, number, "", body)
}

/// As [`rest`], for a route of the repository's pull requests (`/pulls`, or `/pulls/{n}` and
/// then `tail`) when `tail` is not empty.
#[allow(clippy::too_many_arguments)]
fn rest_at(o: &Obj<'_, '_>, method: Method, action: &str, f: Handler, key: &str, number: Option<u64>, tail: &str, body: Value) -> Result<Value, FieldError> {
    let (owner, name) = {
        let w = o.c.w.borrow();
        let r = &w.repos[key];
        (r.owner.clone(), r.name.clone())
    };
    let mut path = format!("/repos/{owner}/{name}");
    match (number, tail.is_empty()) {
        (Some(n), true) => path.push_str(&format!("/issues/{n}")),
        (Some(n), false) => path.push_str(&format!("/pulls/{n}{tail}")),
        (None, _) => path.push_str(tail),
    }
    let mut req = Request::new(method, &path);
    req.base_url = o.c.base.clone();
    req.headers = o.c.headers.clone();
    req.body = serde_json::to_vec(&body).expect("a JSON body");
    let mut call = Call::new(req);
    call.params = vec![("owner".into(), owner), ("repo".into(), name)];
    if let Some(n) = number {
        call.params.push((if tail.is_empty() { "issue_number" } else { "pull_number" }.into(), n.to_string()));
    }
    call.action = Some(action.to_string());
    let result = {
        let mut w = o.c.w.borrow_mut();
        w.cache.bump();
        f(&mut w, &mut call)
    };
    match result {
        Ok(resp) => {
            let mut fx = o.c.fx.borrow_mut();
            fx.actions.push(action.to_string());
            fx.changes.append(&mut call.changes);
            Ok(serde_json::from_slice(&resp.body).unwrap_or(Value::Null))
        }
        Err(e) => {
            let body = e.body();
            let msg = body["message"].as_str().unwrap_or("").to_string();
            let ty = match e.status {
                404 => "NOT_FOUND",
                403 => "FORBIDDEN",
                _ => "UNPROCESSABLE",
            };
            let detail = body["errors"].as_array().and_then(|a| a.first()).map(|x| x["message"].as_str().map(String::from).unwrap_or_else(|| format!("{} {}", x["field"].as_str().unwrap_or(""), x["code"].as_str().unwrap_or("")))).filter(|s| !s.trim().is_empty());
            Err(o.c.fail(ty, detail.unwrap_or(msg)))
        }
    }
}
