//! Commit statuses (create, list, combined) and check runs (create, get, update, list for
//! a ref). Both feed pull request `mergeable_state` and required status checks.

use pome_twin_sdk::{Call, Response, Value, json, time};
use serde::Deserialize;

use crate::World;
use crate::api::{ApiError, ApiResult, input, json, num, page_of};
use crate::handlers::pulls::combined_state;
use crate::model::*;
use crate::render::node_id;

#[derive(Debug, Deserialize)]
pub struct CreateStatus {
    pub state: Option<String>,
    pub target_url: Option<String>,
    pub description: Option<String>,
    pub context: Option<String>,
}

/// `POST /repos/{owner}/{repo}/statuses/{sha}` (`repos/create-commit-status`).
pub fn create_status(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: CreateStatus = input(call)?;
    let state = inp.state.ok_or_else(|| ApiError::invalid("Status", "state", "missing_field"))?;
    if !["error", "failure", "pending", "success"].contains(&state.as_str()) {
        return Err(ApiError::invalid("Status", "state", "custom").pipe_msg("State is not included in the list"));
    }
    let given = call.param("sha").to_string();
    let id = w.next_id();
    let viewer = w.viewer.clone();
    let r = w.repo_mut(call, Role::Write)?;
    let sha = r
        .git
        .resolve(&given)
        .ok_or_else(|| ApiError::new(422, format!("No commit found for SHA: {given}")))?;
    let now = time::now_iso();
    let s = Status {
        id,
        sha,
        state,
        context: inp.context.unwrap_or_else(|| "default".into()),
        description: inp.description,
        target_url: inp.target_url,
        creator: viewer,
        created_at: now.clone(),
        updated_at: now,
    };
    call.created("status", format!("{}:{}", r.full_name(), id), &s);
    r.statuses.push(s.clone());
    let r = w.repo(call)?;
    let b = &call.req.base_url;
    let v = w.status_json(b, r, &s);
    Ok(Response::json(201, &v).with_header("location", v["url"].as_str().unwrap_or("").to_string()))
}

trait Msg {
    fn pipe_msg(self, m: &str) -> Self;
}
impl Msg for ApiError {
    fn pipe_msg(mut self, m: &str) -> Self {
        if let Some(Value::Object(e)) = self.errors.first_mut() {
            e.insert("message".into(), json!(m));
        }
        self
    }
}

fn resolve(r: &Repo, call: &Call) -> Result<String, ApiError> {
    let given = call.param("ref");
    r.git.resolve(given).ok_or_else(|| ApiError::new(422, format!("No commit found for SHA: {given}")))
}

/// `GET /repos/{owner}/{repo}/commits/{ref}/statuses` (`repos/list-commit-statuses-for-ref`).
pub fn list_statuses(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let sha = resolve(r, call).map_err(|_| ApiError::not_found())?;
    let b = call.req.base_url.clone();
    let list: Vec<&Status> = r.statuses.iter().rev().filter(|s| s.sha == sha).collect();
    let n = list.len();
    page_of(call, n, list.into_iter(), |s| w.status_json(&b, r, s))
}

/// `GET /repos/{owner}/{repo}/commits/{ref}/status` (`repos/get-combined-status-for-ref`).
pub fn combined_status(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let sha = resolve(r, call).map_err(|_| ApiError::not_found())?;
    json(200, &combined_status_json(w, &call.req.base_url, r, &sha))
}

/// The combined status of a commit, as `GET …/commits/{ref}/status` answers it.
pub fn combined_status_json(w: &World, b: &str, r: &Repo, sha: &str) -> Value {
    let (state, latest) = combined_state(r, sha);
    let fname = r.full_name();
    let statuses: Vec<Value> = latest.iter().map(|s| w.status_json(b, r, s)).collect();
    json!({
        "state": state, "statuses": statuses, "sha": sha, "total_count": latest.len(),
        "repository": w.repo_json(b, r, false),
        "commit_url": format!("{b}/repos/{fname}/commits/{sha}"),
        "url": format!("{b}/repos/{fname}/commits/{sha}/status"),
    })
}

pub(crate) fn check_run_json(w: &World, b: &str, r: &Repo, c: &CheckRun) -> Value {
    let fname = r.full_name();
    let u = format!("{b}/repos/{fname}/check-runs/{}", c.id);
    let pulls: Vec<Value> = r
        .issues
        .values()
        .filter_map(|i| i.pull.as_ref().map(|p| (i, p)))
        .filter(|(i, p)| crate::handlers::pulls::head_sha(r, p, i.state == "open") == c.head_sha)
        .map(|(i, p)| {
            json!({
                "url": format!("{b}/repos/{fname}/pulls/{}", i.number), "id": p.id, "number": i.number,
                "head": {"ref": p.head_ref, "sha": c.head_sha, "repo": {"id": r.id, "url": format!("{b}/repos/{fname}"), "name": r.name}},
                "base": {"ref": p.base_ref, "sha": crate::handlers::pulls::base_sha(r, p), "repo": {"id": r.id, "url": format!("{b}/repos/{fname}"), "name": r.name}},
            })
        })
        .collect();
    let annotations = format!("{u}/annotations");
    json!({
        "id": c.id, "node_id": node_id("CheckRun", c.id), "head_sha": c.head_sha, "external_id": c.external_id,
        "url": u, "html_url": format!("{b}/{fname}/runs/{}", c.id), "details_url": c.details_url,
        "status": c.status, "conclusion": c.conclusion, "started_at": c.started_at, "completed_at": c.completed_at,
        "output": {"title": c.title, "summary": c.summary, "text": c.text, "annotations_count": 0, "annotations_url": annotations},
        "name": c.name,
        "check_suite": {"id": suite_id(r, &c.head_sha)},
        "app": app_json(w, b, r),
        "pull_requests": pulls,
    })
}

/// The app every check run belongs to (the twin has one: checks created through the API).
fn app_json(w: &World, b: &str, r: &Repo) -> Value {
    json!({
        "id": 1, "slug": "pome-ci", "node_id": node_id("App", 1), "name": "pome CI",
        "owner": w.user_json(b, &r.owner), "description": "Checks created through the API",
        "external_url": b, "html_url": format!("{b}/apps/pome-ci"),
        "created_at": r.created_at, "updated_at": r.created_at,
        "permissions": {"checks": "write"}, "events": [],
    })
}

/// One check suite per head commit (one app), named by its first run's id.
fn suite_id(r: &Repo, sha: &str) -> u64 {
    r.check_runs.values().filter(|c| c.head_sha == sha).map(|c| c.id).min().unwrap_or(0)
}

/// `GET /repos/{owner}/{repo}/commits/{ref}/check-suites` (`checks.list_suites_for_ref`):
/// the suite of the commit's check runs, if it has any.
pub fn list_check_suites(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let sha = resolve(r, call).map_err(|_| ApiError::not_found())?;
    match suite_json(w, &call.req.base_url, r, &sha) {
        Some(suite) => json(200, &json!({"total_count": 1, "check_suites": [suite]})),
        None => json(200, &json!({"total_count": 0, "check_suites": []})),
    }
}

/// The check suite of commit `sha` (its runs' summary), if it has runs; webhooks send it too.
pub(crate) fn suite_json(w: &World, b: &str, r: &Repo, sha: &str) -> Option<Value> {
    let runs: Vec<&CheckRun> = r.check_runs.values().filter(|c| c.head_sha == sha).collect();
    if runs.is_empty() {
        return None;
    }
    let fname = r.full_name();
    let id = suite_id(r, sha);
    let done = runs.iter().all(|c| c.status == "completed");
    let conclusion = if !done {
        None
    } else {
        ["action_required", "timed_out", "failure", "cancelled", "stale", "neutral", "skipped", "success"]
            .into_iter()
            .find(|k| runs.iter().any(|c| c.conclusion.as_deref() == Some(*k)))
    };
    let status = if done { "completed" } else if runs.iter().any(|c| c.status == "in_progress") { "in_progress" } else { "queued" };
    let commit = r.git.commit(sha)?;
    let branch = r.git.branches().find(|(_, s)| **s == sha).map(|(n, _)| n.to_string());
    let first = runs.iter().filter_map(|c| c.started_at.clone()).min();
    let last = runs.iter().filter_map(|c| c.completed_at.clone().or(c.started_at.clone())).max();
    let suite = json!({
        "id": id, "node_id": node_id("CheckSuite", id), "head_branch": branch, "head_sha": sha,
        "status": status, "conclusion": conclusion,
        "url": format!("{b}/repos/{fname}/check-suites/{id}"),
        "before": commit.parents.first(), "after": sha,
        "pull_requests": [], "app": app_json(w, b, r),
        "repository": w.repo_json(b, r, false),
        "created_at": first, "updated_at": last,
        "head_commit": {
            "id": sha, "tree_id": commit.tree, "message": commit.message, "timestamp": commit.committer.date,
            "author": {"name": commit.author.name, "email": commit.author.email},
            "committer": {"name": commit.committer.name, "email": commit.committer.email},
        },
        "latest_check_runs_count": runs.len(),
        "check_runs_url": format!("{b}/repos/{fname}/check-suites/{id}/check-runs"),
        "rerequestable": false, "runs_rerequestable": false,
    });
    Some(suite)
}

#[derive(Debug, Deserialize, Default)]
pub struct CheckOutput {
    pub title: Option<String>,
    pub summary: Option<String>,
    pub text: Option<String>,
}

#[derive(Debug, Deserialize, Default)]
pub struct CheckInput {
    pub name: Option<String>,
    pub head_sha: Option<String>,
    pub details_url: Option<String>,
    pub external_id: Option<String>,
    pub status: Option<String>,
    pub started_at: Option<String>,
    pub conclusion: Option<String>,
    pub completed_at: Option<String>,
    pub output: Option<CheckOutput>,
}

const CONCLUSIONS: [&str; 8] = ["action_required", "cancelled", "failure", "neutral", "success", "skipped", "stale", "timed_out"];
const STATUSES: [&str; 6] = ["queued", "in_progress", "completed", "waiting", "requested", "pending"];

fn apply_check(c: &mut CheckRun, inp: CheckInput) -> Result<(), ApiError> {
    if let Some(s) = inp.status {
        if !STATUSES.contains(&s.as_str()) {
            return Err(ApiError::invalid("CheckRun", "status", "invalid"));
        }
        c.status = s;
    }
    if let Some(k) = inp.conclusion {
        if !CONCLUSIONS.contains(&k.as_str()) {
            return Err(ApiError::invalid("CheckRun", "conclusion", "invalid"));
        }
        c.conclusion = Some(k);
        c.status = "completed".into();
    }
    if c.status == "completed" {
        if c.conclusion.is_none() {
            return Err(ApiError::custom("CheckRun", "conclusion", "Conclusion is required when status is completed"));
        }
        if c.completed_at.is_none() {
            c.completed_at = Some(inp.completed_at.clone().unwrap_or_else(time::now_iso));
        }
    }
    if let Some(v) = inp.name {
        c.name = v;
    }
    if let Some(v) = inp.details_url {
        c.details_url = Some(v);
    }
    if let Some(v) = inp.external_id {
        c.external_id = Some(v);
    }
    if let Some(v) = inp.started_at {
        c.started_at = Some(v);
    }
    if let Some(v) = inp.completed_at {
        c.completed_at = Some(v);
    }
    if let Some(o) = inp.output {
        c.title = o.title.or(c.title.take());
        c.summary = o.summary.or(c.summary.take());
        c.text = o.text.or(c.text.take());
    }
    Ok(())
}

/// `POST /repos/{owner}/{repo}/check-runs` (`checks.create`).
pub fn create_check_run(w: &mut World, call: &mut Call) -> ApiResult {
    let mut inp: CheckInput = input(call)?;
    let name = inp.name.take().filter(|n| !n.trim().is_empty()).ok_or_else(|| ApiError::invalid("CheckRun", "name", "missing_field"))?;
    let head = inp.head_sha.take().ok_or_else(|| ApiError::invalid("CheckRun", "head_sha", "missing_field"))?;
    let id = w.next_id();
    let r = w.repo_mut(call, Role::Write)?;
    let head_sha = r.git.resolve(&head).filter(|s| s == &head).ok_or_else(|| ApiError::new(422, "No commit found for SHA: ".to_string() + &head))?;
    let mut c = CheckRun {
        id,
        name,
        head_sha,
        status: "queued".into(),
        conclusion: None,
        external_id: None,
        details_url: None,
        started_at: Some(time::now_iso()),
        completed_at: None,
        title: None,
        summary: None,
        text: None,
    };
    apply_check(&mut c, inp)?;
    call.created("check_run", format!("{}:{id}", r.full_name()), &c);
    r.check_runs.insert(id, c.clone());
    let r = w.repo(call)?;
    json(201, &check_run_json(w, &call.req.base_url, r, &c))
}

/// `GET /repos/{owner}/{repo}/check-runs/{check_run_id}` (`checks.get`).
pub fn get_check_run(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let c = r.check_runs.get(&num(call, "check_run_id")?).ok_or_else(ApiError::not_found)?;
    json(200, &check_run_json(w, &call.req.base_url, r, c))
}

/// `PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}` (`checks.update`).
pub fn update_check_run(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: CheckInput = input(call)?;
    let id = num(call, "check_run_id")?;
    let r = w.repo_mut(call, Role::Write)?;
    let full = r.full_name();
    let c = r.check_runs.get_mut(&id).ok_or_else(ApiError::not_found)?;
    let before = c.clone();
    apply_check(c, inp)?;
    let after = c.clone();
    call.updated("check_run", format!("{full}:{id}"), &before, &after);
    let r = w.repo(call)?;
    json(200, &check_run_json(w, &call.req.base_url, r, &after))
}

/// `GET /repos/{owner}/{repo}/commits/{ref}/check-runs` (`checks.list_for_ref`).
pub fn list_check_runs(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let sha = resolve(r, call).map_err(|_| ApiError::not_found())?;
    let name = call.req.query("check_name");
    let status = call.req.query("status");
    let list: Vec<&CheckRun> = r
        .check_runs
        .values()
        .rev()
        .filter(|c| c.head_sha == sha)
        .filter(|c| name.as_deref().is_none_or(|n| c.name == n))
        .filter(|c| status.as_deref().is_none_or(|s| c.status == s))
        .collect();
    let (page, per_page) = pome_twin_sdk::page::PageInfo::from_query(&call.req, 30, 100);
    let b = &call.req.base_url;
    let items: Vec<Value> =
        list.iter().skip((page - 1) * per_page).take(per_page).map(|c| check_run_json(w, b, r, c)).collect();
    json(200, &json!({"total_count": list.len(), "check_runs": items}))
}
