//! GitHub's MCP server's `actions` and `gists` toolsets (github/github-mcp-server, MIT):
//! `actions_list`, `actions_get`, `actions_run_trigger`, `get_job_logs` (and, declared in
//! `tools.json`, the fourteen single-purpose tools its earlier releases served in their place,
//! each routed to a REST route or to one of these with its `method` fixed), `list_gists`,
//! `create_gist`, `update_gist` (`get_gist` is `GET /gists/{gist_id}` itself).
//!
//! Every tool runs the REST handlers on the same call ([`rest`]), so what it changes, the tape
//! and the checks are those of the REST calls the vendor's server makes; the answer is what
//! that server answers: the REST JSON, its "minimal" reshaping of runs and jobs, or the
//! sentences it wraps around a status (`"Workflow run has been queued"`).

use pome_twin_sdk::{Call, Value, json};

use crate::World;
use crate::api::{ApiError, ApiResult};
use crate::handlers::mcp_vendor::{Args, rest, rest_json};
use crate::handlers::{actions, gists};

fn ok(v: Value) -> ApiResult {
    crate::api::json(200, &v)
}

/// A tool's refusal, as the vendor's server words it.
fn refuse(msg: impl Into<String>) -> ApiError {
    ApiError::new(422, msg)
}

/// `page` and the page size (`per_page` as the current schemas name it, `perPage` as the
/// earlier tools did) as the REST query's `page`/`per_page`.
fn paging(a: &Args) -> Result<Vec<(String, String)>, ApiError> {
    let mut q = Vec::new();
    if let Some(p) = a.num("page")? {
        q.push(("page".to_string(), p.to_string()));
    }
    if let Some(p) = a.num("per_page")?.or(a.num("perPage")?) {
        q.push(("per_page".to_string(), p.to_string()));
    }
    Ok(q)
}

/// An object argument: a JSON object in a POST body, its JSON text in a GET's query.
fn object_arg(a: &Args, k: &str) -> Result<serde_json::Map<String, Value>, ApiError> {
    match a.get(k) {
        None => Ok(serde_json::Map::new()),
        Some(Value::Object(m)) => Ok(m.clone()),
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(Value::Object(m)) => Ok(m),
            _ => Err(refuse(format!("{k} must be an object"))),
        },
        Some(_) => Err(refuse(format!("{k} must be an object"))),
    }
}

/// A resource id that must be a whole number for `method`.
fn int_id(id: &str, method: &str) -> Result<u64, ApiError> {
    id.parse::<u64>().map_err(|_| refuse(format!("invalid resource_id, must be an integer for method {method}: {id:?} is not a number")))
}

/// The `Location` a REST redirect answered.
fn location(w: &mut World, call: &mut Call, f: fn(&mut World, &mut Call) -> ApiResult, params: &[(&str, String)]) -> Result<String, ApiError> {
    let r = rest(w, call, f, params, &[], None)?;
    r.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case("location")).map(|(_, v)| v.clone()).ok_or_else(ApiError::not_found)
}

/// The status line Go's `http.Response.Status` shows.
fn status_line(code: u16) -> String {
    let reason = match code {
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        _ => "OK",
    };
    format!("{code} {reason}")
}

// ---- minimal shapes (the vendor's MinimalWorkflowRun / MinimalWorkflowJob) -----------------

fn minimal_user(u: &Value) -> Value {
    if u.is_null() {
        return Value::Null;
    }
    json!({"login": u["login"], "id": u["id"], "profile_url": u["html_url"], "avatar_url": u["avatar_url"]})
}

/// Copy `keys` of `from` into `to`, leaving out what Go's `omitempty` leaves out.
fn put_nonempty(to: &mut serde_json::Map<String, Value>, from: &Value, keys: &[&str]) {
    for k in keys {
        let v = &from[*k];
        let empty = match v {
            Value::Null => true,
            Value::String(s) => s.is_empty(),
            Value::Number(n) => n.as_u64() == Some(0),
            Value::Array(a) => a.is_empty(),
            _ => false,
        };
        if !empty {
            to.insert(k.to_string(), v.clone());
        }
    }
}

fn minimal_run(r: &Value) -> Value {
    let mut m = serde_json::Map::new();
    for k in ["id", "name"] {
        m.insert(k.into(), r[k].clone());
    }
    put_nonempty(&mut m, r, &["display_title"]);
    for k in ["workflow_id", "run_number", "run_attempt"] {
        m.insert(k.into(), r[k].clone());
    }
    put_nonempty(&mut m, r, &["event"]);
    m.insert("status".into(), r["status"].clone());
    put_nonempty(&mut m, r, &["conclusion", "head_branch", "head_sha"]);
    if let Some(msg) = r["head_commit"]["message"].as_str().filter(|s| !s.is_empty()) {
        m.insert("head_commit".into(), json!({"message": msg}));
    }
    put_nonempty(&mut m, r, &["path", "html_url"]);
    let prs: Vec<Value> = r["pull_requests"].as_array().into_iter().flatten().filter_map(|p| p["number"].as_u64()).map(Value::from).collect();
    if !prs.is_empty() {
        m.insert("pull_requests".into(), Value::Array(prs));
    }
    for k in ["actor", "triggering_actor"] {
        if !r[k].is_null() {
            m.insert(k.into(), minimal_user(&r[k]));
        }
    }
    put_nonempty(&mut m, r, &["referenced_workflows", "created_at", "updated_at", "run_started_at"]);
    Value::Object(m)
}

fn minimal_job(j: &Value) -> Value {
    let mut m = serde_json::Map::new();
    for k in ["id", "run_id", "name"] {
        m.insert(k.into(), j[k].clone());
    }
    put_nonempty(&mut m, j, &["workflow_name"]);
    m.insert("status".into(), j["status"].clone());
    put_nonempty(&mut m, j, &["conclusion", "head_branch", "head_sha", "html_url", "run_attempt", "runner_id", "runner_name", "runner_group_id", "runner_group_name", "labels"]);
    let steps: Vec<Value> = j["steps"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| {
            let mut x = serde_json::Map::new();
            x.insert("name".into(), s["name"].clone());
            x.insert("status".into(), s["status"].clone());
            put_nonempty(&mut x, s, &["conclusion"]);
            x.insert("number".into(), s["number"].clone());
            put_nonempty(&mut x, s, &["started_at", "completed_at"]);
            Value::Object(x)
        })
        .collect();
    if !steps.is_empty() {
        m.insert("steps".into(), Value::Array(steps));
    }
    put_nonempty(&mut m, j, &["created_at", "started_at", "completed_at"]);
    Value::Object(m)
}

// ---- actions_list --------------------------------------------------------------------------

/// `actions_list`: workflows, runs (of the repository, or of one workflow by id or file name,
/// with `workflow_runs_filter`), a run's jobs (`workflow_jobs_filter`) or its artifacts.
pub fn actions_list(w: &mut World, call: &mut Call) -> ApiResult {
    let a = Args::of(call)?;
    let method = a.req_str("method")?;
    let id = a.str("resource_id").filter(|s| !s.is_empty());
    let mut q = paging(&a)?;
    let needs_id = |m: &str| -> Result<u64, ApiError> {
        let id = id.clone().ok_or_else(|| refuse(format!("missing required parameter for method {m}: resource_id")))?;
        int_id(&id, m)
    };
    match method.as_str() {
        "list_workflows" => ok(rest_json(w, call, actions::list_workflows, &[], &q, None)?),
        "list_workflow_runs" => {
            for (k, v) in object_arg(&a, "workflow_runs_filter")? {
                if let Some(v) = v.as_str().filter(|s| !s.is_empty() && ["actor", "branch", "event", "status"].contains(&k.as_str())) {
                    q.push((k, v.to_string()));
                }
            }
            let v = match id {
                None => rest_json(w, call, actions::list_runs, &[], &q, None)?,
                Some(wf) => rest_json(w, call, actions::list_workflow_runs, &[("workflow_id", wf)], &q, None)?,
            };
            let runs: Vec<Value> = v["workflow_runs"].as_array().into_iter().flatten().map(minimal_run).collect();
            ok(json!({"total_count": v["total_count"], "workflow_runs": runs}))
        }
        "list_workflow_jobs" => {
            let run = needs_id("list_workflow_jobs")?;
            if let Some(f) = object_arg(&a, "workflow_jobs_filter")?.get("filter").and_then(Value::as_str).filter(|s| !s.is_empty()) {
                q.push(("filter".into(), f.to_string()));
            }
            let v = rest_json(w, call, actions::list_jobs, &[("run_id", run.to_string())], &q, None)?;
            let jobs: Vec<Value> = v["jobs"].as_array().into_iter().flatten().map(minimal_job).collect();
            // As the vendor's server answers: the minimal list, under `jobs`.
            ok(json!({"jobs": {"total_count": v["total_count"], "jobs": jobs}}))
        }
        "list_workflow_run_artifacts" => {
            let run = needs_id("list_workflow_run_artifacts")?;
            ok(rest_json(w, call, actions::list_run_artifacts, &[("run_id", run.to_string())], &q, None)?)
        }
        m => Err(refuse(format!("unknown method: {m}"))),
    }
}

/// `list_workflow_jobs` (the vendor's earlier single-purpose tool): the REST list of a run's
/// jobs under `jobs`, with its tip to fetch failed jobs' logs directly.
pub fn list_workflow_jobs(w: &mut World, call: &mut Call) -> ApiResult {
    let a = Args::of(call)?;
    let run = call.param("run_id").to_string();
    let mut q = paging(&a)?;
    if let Some(f) = a.str("filter").filter(|s| !s.is_empty()) {
        q.push(("filter".into(), f));
    }
    let jobs = rest_json(w, call, actions::list_jobs, &[("run_id", run.clone())], &q, None)?;
    ok(json!({
        "jobs": jobs,
        "optimization_tip": format!("For debugging failed jobs, consider using get_job_logs with failed_only=true and run_id={run} to get logs directly without needing to list jobs first"),
    }))
}

// ---- actions_get ---------------------------------------------------------------------------

/// `actions_get`: one workflow (by id or file name), run (minimal), job, an artifact's download
/// URL, a run's usage, or its logs' URL.
pub fn actions_get(w: &mut World, call: &mut Call) -> ApiResult {
    let a = Args::of(call)?;
    let method = a.req_str("method")?;
    let id = a.req_str("resource_id")?;
    match method.as_str() {
        "get_workflow" => ok(rest_json(w, call, actions::get_workflow, &[("workflow_id", id)], &[], None)?),
        "get_workflow_run" => {
            let run = int_id(&id, &method)?;
            ok(minimal_run(&rest_json(w, call, actions::get_run, &[("run_id", run.to_string())], &[], None)?))
        }
        "get_workflow_job" => {
            let job = int_id(&id, &method)?;
            ok(rest_json(w, call, actions::get_job, &[("job_id", job.to_string())], &[], None)?)
        }
        "download_workflow_run_artifact" => {
            let art = int_id(&id, &method)?;
            let url = location(w, call, actions::download_artifact, &[("artifact_id", art.to_string()), ("archive_format", "zip".into())])?;
            ok(json!({
                "download_url": url, "message": "Artifact is available for download",
                "note": "The download_url provides a download link for the artifact as a ZIP archive. The link is temporary and expires after a short time.",
                "artifact_id": art,
            }))
        }
        "get_workflow_run_usage" => {
            let run = int_id(&id, &method)?;
            ok(rest_json(w, call, actions::run_usage, &[("run_id", run.to_string())], &[], None)?)
        }
        "get_workflow_run_logs_url" => {
            let run = int_id(&id, &method)?;
            let url = location(w, call, actions::run_logs, &[("run_id", run.to_string())])?;
            ok(json!({
                "logs_url": url, "message": "Workflow run logs are available for download",
                "note": "The logs_url provides a download link for the complete workflow run logs as a ZIP archive. You can download this archive to extract and examine individual job logs.",
                "warning": "This downloads ALL logs as a ZIP file which can be large and expensive. For debugging failed jobs, consider using get_job_logs with failed_only=true and run_id instead.",
                "optimization_tip": format!("Use: get_job_logs with parameters {{run_id: {run}, failed_only: true}} for more efficient failed job debugging"),
            }))
        }
        m => Err(refuse(format!("unknown method: {m}"))),
    }
}

// ---- actions_run_trigger -------------------------------------------------------------------

/// `actions_run_trigger`: dispatch a workflow, re-run a run or its failed jobs, cancel a run,
/// delete its logs; each answers the REST status in the vendor's sentence.
pub fn actions_run_trigger(w: &mut World, call: &mut Call) -> ApiResult {
    let a = Args::of(call)?;
    let method = a.req_str("method")?;
    if method == "run_workflow" {
        let wf = a.str("workflow_id").filter(|s| !s.is_empty()).ok_or_else(|| refuse("workflow_id is required for run_workflow action"))?;
        let git_ref = a.str("ref").filter(|s| !s.is_empty()).ok_or_else(|| refuse("ref is required for run_workflow action"))?;
        let inputs = match a.get("inputs") {
            Some(Value::Object(m)) => Value::Object(m.clone()),
            _ => Value::Null,
        };
        let mut body = json!({"ref": git_ref});
        if !inputs.is_null() {
            body["inputs"] = inputs.clone();
        }
        let r = rest(w, call, actions::dispatch, &[("workflow_id", wf.clone())], &[], Some(body))?;
        let kind = if wf.parse::<u64>().is_ok() { "workflow_id" } else { "workflow_file" };
        return ok(json!({
            "message": "Workflow run has been queued", "workflow_type": kind, "workflow_id": wf, "ref": git_ref,
            "inputs": inputs, "status": status_line(r.status), "status_code": r.status,
        }));
    }
    let run = a.num("run_id")?.filter(|n| *n > 0).ok_or_else(|| refuse("missing required parameter: run_id"))?;
    let (f, message): (fn(&mut World, &mut Call) -> ApiResult, &str) = match method.as_str() {
        "rerun_workflow_run" => (actions::rerun_run, "Workflow run has been queued for re-run"),
        "rerun_failed_jobs" => (actions::rerun_failed, "Failed jobs have been queued for re-run"),
        "cancel_workflow_run" => (actions::cancel_run, "Workflow run has been cancelled"),
        "delete_workflow_run_logs" => (actions::delete_run_logs, "Workflow run logs have been deleted"),
        m => return Err(refuse(format!("unknown method: {m}"))),
    };
    let r = rest(w, call, f, &[("run_id", run.to_string())], &[], None)?;
    ok(json!({"message": message, "run_id": run, "status": status_line(r.status), "status_code": r.status}))
}

// ---- get_job_logs --------------------------------------------------------------------------

/// How many lines of a log the vendor's server keeps at most (its content window).
const LOG_WINDOW_LINES: u64 = 5000;

/// One job's logs: their URL, or (`return_content`) their last `tail` lines.
fn job_log(w: &mut World, call: &mut Call, job: u64, name: Option<&str>, content: bool, tail: u64) -> Result<Value, ApiError> {
    let url = location(w, call, actions::job_logs, &[("job_id", job.to_string())])?;
    let mut v = json!({"job_id": job});
    if let Some(n) = name {
        v["job_name"] = json!(n);
    }
    if content {
        let r = rest(w, call, actions::job_logs_file, &[("job_id", job.to_string())], &[], None)?;
        let text = String::from_utf8_lossy(&r.body).into_owned();
        let lines: Vec<&str> = text.lines().collect();
        let keep = tail.min(LOG_WINDOW_LINES) as usize;
        v["logs_content"] = json!(lines[lines.len().saturating_sub(keep)..].join("\n"));
        v["message"] = json!("Job logs content retrieved successfully");
        v["original_length"] = json!(lines.len());
    } else {
        v["logs_url"] = json!(url);
        v["message"] = json!("Job logs are available for download");
        v["note"] = json!("The logs_url provides a download link for the individual job logs in plain text format. Use return_content=true to get the actual log content.");
    }
    Ok(v)
}

/// `get_job_logs`: one job's logs, or (`failed_only` with `run_id`) every failed job's of the
/// run's latest attempt.
pub fn get_job_logs(w: &mut World, call: &mut Call) -> ApiResult {
    let a = Args::of(call)?;
    let job = a.num("job_id")?.unwrap_or(0);
    let run = a.num("run_id")?.unwrap_or(0);
    let failed_only = a.bool("failed_only").unwrap_or(false);
    let content = a.bool("return_content").unwrap_or(false);
    let tail = a.num("tail_lines")?.filter(|n| *n > 0).unwrap_or(500);
    if failed_only && run == 0 {
        return Err(refuse("run_id is required when failed_only is true"));
    }
    if !failed_only && job == 0 {
        return Err(refuse("job_id is required when failed_only is false"));
    }
    if !failed_only {
        return ok(job_log(w, call, job, None, content, tail)?);
    }
    let jobs = rest_json(w, call, actions::list_jobs, &[("run_id", run.to_string())], &[("filter".into(), "latest".into())], None)?;
    let all = jobs["jobs"].as_array().cloned().unwrap_or_default();
    let failed: Vec<&Value> = all.iter().filter(|j| j["conclusion"] == "failure").collect();
    if failed.is_empty() {
        return ok(json!({"message": "No failed jobs found in this workflow run", "run_id": run, "total_jobs": all.len(), "failed_jobs": 0}));
    }
    let mut logs = Vec::new();
    for j in &failed {
        let id = j["id"].as_u64().unwrap_or(0);
        logs.push(job_log(w, call, id, j["name"].as_str(), content, tail)?);
    }
    ok(json!({
        "message": format!("Retrieved logs for {} failed jobs", failed.len()), "run_id": run,
        "total_jobs": all.len(), "failed_jobs": failed.len(), "logs": logs,
        "return_format": {"content": content, "urls": !content},
    }))
}

// ---- gists ---------------------------------------------------------------------------------

/// `list_gists`: a user's gists, or the viewer's (`GET /users/{username}/gists`, `GET /gists`).
pub fn list_gists(w: &mut World, call: &mut Call) -> ApiResult {
    let a = Args::of(call)?;
    let mut q = paging(&a)?;
    if let Some(s) = a.str("since").filter(|s| !s.is_empty()) {
        if pome_twin_sdk::time::parse_iso(&s).is_none() {
            return Err(refuse(format!("invalid since timestamp: {s:?} is not an ISO 8601 time")));
        }
        q.push(("since".into(), s));
    }
    match a.str("username").filter(|s| !s.is_empty()) {
        Some(u) => ok(rest_json(w, call, gists::list_for_user, &[("username", u)], &q, None)?),
        None => ok(rest_json(w, call, gists::list, &[], &q, None)?),
    }
}

/// The vendor's `MinimalResponse` for a gist: its id and web address.
fn minimal_gist(g: &Value) -> Value {
    json!({"id": g["id"], "url": g["html_url"]})
}

/// `create_gist`: one file (`filename`, `content`), secret unless `public`.
pub fn create_gist(w: &mut World, call: &mut Call) -> ApiResult {
    let a = Args::of(call)?;
    let name = a.req_str("filename")?;
    let content = a.str("content").ok_or_else(|| refuse("missing required parameter: content"))?;
    let body = json!({
        "files": {name: {"content": content}},
        "public": a.bool("public").unwrap_or(false),
        "description": a.str("description").unwrap_or_default(),
    });
    let g = rest_json(w, call, gists::create, &[], &[], Some(body))?;
    crate::api::json(201, &minimal_gist(&g))
}

/// `update_gist`: write one file (created, or replaced) and, when given, the description.
pub fn update_gist(w: &mut World, call: &mut Call) -> ApiResult {
    let a = Args::of(call)?;
    let id = call.param("gist_id").to_string();
    let name = a.req_str("filename")?;
    let content = a.str("content").ok_or_else(|| refuse("missing required parameter: content"))?;
    let mut body = json!({"files": {name.clone(): {"filename": name, "content": content}}});
    if a.has("description") {
        body["description"] = json!(a.str("description").unwrap_or_default());
    }
    let g = rest_json(w, call, gists::update, &[("gist_id", id)], &[], Some(body))?;
    ok(minimal_gist(&g))
}
