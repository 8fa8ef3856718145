//! GitHub Actions: workflows (list, get, enable, disable, `workflow_dispatch`), runs (list for
//! the repository and per workflow with filters, get, jobs with steps, re-run, re-run failed
//! jobs, cancel, delete), artifacts (list, get, delete, download) and logs.
//!
//! Workflows are the `.github/workflows/*.yml` (or `.yaml`) files on the default branch: the
//! name is the file's top-level `name:`, the jobs its `jobs:` keys with their `name:` and
//! `steps` (each step's `name`, else `Run <uses|run>`, between GitHub's `Set up job` and
//! `Complete job`). A workflow's id is derived from the repository and the path, so it is the
//! same in every replay.
//!
//! How runs progress (no wall clock; the sandbox's virtual clock, recorded on the tape): every
//! job is `queued` for [`QUEUED_SECS`] after its attempt starts, then `in_progress` for
//! [`RUN_SECS`] (its steps completing one after another), then `completed` with its planned
//! conclusion. A run's status and conclusion are its jobs' (any `failure` fails it, then
//! `cancelled`, else `success`). New runs plan `success`, or the conclusion the seed's
//! `workflow_outcomes` names for the workflow (then the last job carries it). Cancelling
//! completes every unfinished job as `cancelled` at once; a re-run is a new attempt of every
//! job (or of the failed and cancelled ones, the others carried over as they ended), with the
//! same plan. Status reads depend on the clock, so these routes are never cached.

use std::collections::BTreeMap;

use pome_twin_sdk::{Call, Response, Value, json, time};
use serde::Deserialize;

use crate::World;
use crate::api::{ApiError, ApiResult, input, json, no_content, num};
use crate::model::{Artifact, Repo, RepoActions, Role, WorkflowJob, WorkflowRun};
use crate::render::node_id;

/// Seconds a job waits in the queue before it starts.
pub const QUEUED_SECS: i64 = 3;
/// Seconds a job runs (its steps share them evenly).
pub const RUN_SECS: i64 = 12;
/// Days an artifact is kept (GitHub's default retention).
const RETENTION_DAYS: i64 = 90;

// ---- workflows -----------------------------------------------------------------------------

/// A workflow as read from its file.
pub struct Workflow {
    pub id: u64,
    pub path: String,
    pub name: String,
    pub dispatchable: bool,
    /// Job name → its steps.
    pub jobs: Vec<(String, Vec<String>)>,
}

fn unquote(s: &str) -> String {
    let s = s.trim();
    let s = s.split(" #").next().unwrap_or(s).trim();
    s.trim_matches(|c| c == '"' || c == '\'').to_string()
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// The jobs and steps of a workflow file: enough of YAML for workflow files as people write
/// them (block style, `jobs:` at the top level, one key per line).
fn parse_jobs(text: &str) -> Vec<(String, Vec<String>)> {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#')).collect();
    let Some(start) = lines.iter().position(|l| l.trim_end() == "jobs:") else { return Vec::new() };
    let mut jobs: Vec<(String, Vec<String>)> = Vec::new();
    let mut job_indent = None;
    let mut i = start + 1;
    while i < lines.len() && indent(lines[i]) > 0 {
        let l = lines[i];
        let ind = indent(l);
        let t = l.trim();
        if job_indent.is_none() {
            job_indent = Some(ind);
        }
        if Some(ind) == job_indent && t.ends_with(':') {
            jobs.push((t.trim_end_matches(':').to_string(), Vec::new()));
        } else if job_indent.is_some_and(|j| ind == j + 2) && t.starts_with("name:") {
            if let Some(j) = jobs.last_mut() {
                j.0 = unquote(&t[5..]);
            }
        } else if let Some(item) = t.strip_prefix("- ") {
            // A step: its keys are on this line and the following deeper ones.
            let mut keys: BTreeMap<String, String> = BTreeMap::new();
            let mut note = |kv: &str| {
                if let Some((k, v)) = kv.split_once(':') {
                    keys.entry(k.trim().to_string()).or_insert_with(|| unquote(v));
                }
            };
            note(item);
            while i + 1 < lines.len() && indent(lines[i + 1]) > ind && !lines[i + 1].trim().starts_with("- ") {
                i += 1;
                if indent(lines[i]) == ind + 2 {
                    note(lines[i].trim());
                }
            }
            let name = match (keys.get("name"), keys.get("uses"), keys.get("run")) {
                (Some(n), _, _) if !n.is_empty() => n.clone(),
                (_, Some(u), _) => format!("Run {u}"),
                (_, _, Some(r)) if !r.is_empty() && r != "|" && r != ">" => format!("Run {r}"),
                _ => "Run a step".to_string(),
            };
            if let Some(j) = jobs.last_mut() {
                j.1.push(name);
            }
        }
        i += 1;
    }
    jobs
}

fn workflow_id(r: &Repo, path: &str) -> u64 {
    let mut h = sha1_smol::Sha1::new();
    h.update(format!("workflow\0{}\0{path}", r.id).as_bytes());
    u64::from_str_radix(&h.digest().to_string()[..8], 16).unwrap_or(0)
}

fn read_workflow(r: &Repo, path: &str, text: &str) -> Workflow {
    let name = text
        .lines()
        .find_map(|l| l.strip_prefix("name:"))
        .map(unquote)
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| path.to_string());
    let mut jobs = parse_jobs(text);
    if jobs.is_empty() {
        jobs.push(("build".into(), Vec::new()));
    }
    for j in &mut jobs {
        j.1.insert(0, "Set up job".into());
        j.1.push("Complete job".into());
    }
    Workflow { id: workflow_id(r, path), path: path.to_string(), name, dispatchable: text.contains("workflow_dispatch"), jobs }
}

/// The repository's workflows, by path.
pub fn workflows(r: &Repo) -> Vec<Workflow> {
    let Some(head) = r.git.branch(&r.default_branch) else { return Vec::new() };
    let tree = crate::model::tree_of(r, head);
    r.git
        .flatten(&tree)
        .into_iter()
        .filter(|(p, _)| p.strip_prefix(".github/workflows/").is_some_and(|f| !f.contains('/') && (f.ends_with(".yml") || f.ends_with(".yaml"))))
        .map(|(p, (_, blob))| {
            let text = r.git.blob_bytes(&blob).map(|b| String::from_utf8_lossy(b).into_owned()).unwrap_or_default();
            read_workflow(r, &p, &text)
        })
        .collect()
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The workflow `{workflow_id}` names: its id or its file name.
fn find_workflow(r: &Repo, call: &Call) -> Result<Workflow, ApiError> {
    let key = call.param("workflow_id");
    workflows(r)
        .into_iter()
        .find(|wf| wf.id.to_string() == key || file_name(&wf.path) == key)
        .ok_or_else(ApiError::not_found)
}

fn workflow_state(w: &World, r: &Repo, path: &str) -> &'static str {
    match w.actions.get(&r.id) {
        Some(a) if a.disabled.iter().any(|d| d == path) => "disabled_manually",
        _ => "active",
    }
}

fn workflow_json(w: &World, b: &str, r: &Repo, wf: &Workflow) -> Value {
    let f = r.full_name();
    let at = &r.created_at;
    json!({
        "id": wf.id, "node_id": node_id("Workflow", wf.id), "name": wf.name, "path": wf.path,
        "state": workflow_state(w, r, &wf.path), "created_at": at, "updated_at": at,
        "url": format!("{b}/repos/{f}/actions/workflows/{}", wf.id),
        "html_url": format!("{b}/{f}/blob/{}/{}", r.default_branch, wf.path),
        "badge_url": format!("{b}/{f}/workflows/{}/badge.svg", crate::render::enc(&wf.name)),
    })
}

/// `GET /repos/{owner}/{repo}/actions/workflows` (`actions/list-repo-workflows`).
pub fn list_workflows(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let all: Vec<Value> = workflows(r).iter().map(|wf| workflow_json(w, &call.req.base_url, r, wf)).collect();
    let (total, page) = paged(call, all);
    json(200, &json!({"total_count": total, "workflows": page}))
}

/// `GET /repos/{owner}/{repo}/actions/workflows/{workflow_id}` (`actions/get-workflow`).
pub fn get_workflow(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let wf = find_workflow(r, call)?;
    json(200, &workflow_json(w, &call.req.base_url, r, &wf))
}

fn set_enabled(w: &mut World, call: &mut Call, enabled: bool) -> ApiResult {
    let r = w.repo_mut(call, Role::Write)?;
    let (rid, full) = (r.id, r.full_name());
    let wf = find_workflow(r, call)?;
    let a = w.actions.entry(rid).or_default();
    let was = !a.disabled.contains(&wf.path);
    if was != enabled {
        if enabled {
            a.disabled.retain(|d| d != &wf.path);
        } else {
            a.disabled.push(wf.path.clone());
        }
        let state = |on: bool| json!({"path": wf.path, "state": if on { "active" } else { "disabled_manually" }});
        call.updated("workflow", format!("{full}:{}", wf.id), &state(was), &state(enabled));
    }
    no_content()
}

/// `PUT …/actions/workflows/{workflow_id}/enable` (`actions/enable-workflow`).
pub fn enable_workflow(w: &mut World, call: &mut Call) -> ApiResult {
    set_enabled(w, call, true)
}

/// `PUT …/actions/workflows/{workflow_id}/disable` (`actions/disable-workflow`).
pub fn disable_workflow(w: &mut World, call: &mut Call) -> ApiResult {
    set_enabled(w, call, false)
}

// ---- how runs progress ---------------------------------------------------------------------

/// A job's status, conclusion, start and end at `now`.
struct JobState {
    status: &'static str,
    conclusion: Option<String>,
    started_at: i64,
    completed_at: Option<i64>,
}

fn job_state(j: &WorkflowJob, now: i64) -> JobState {
    let started_at = j.start + QUEUED_SECS;
    let end = started_at + RUN_SECS;
    if let Some(c) = j.cancelled_at.filter(|c| *c < end && *c <= now) {
        return JobState { status: "completed", conclusion: Some("cancelled".into()), started_at: started_at.min(c), completed_at: Some(c) };
    }
    if now < started_at {
        JobState { status: "queued", conclusion: None, started_at, completed_at: None }
    } else if now < end {
        JobState { status: "in_progress", conclusion: None, started_at, completed_at: None }
    } else {
        JobState { status: "completed", conclusion: Some(j.plan.clone()), started_at, completed_at: Some(end) }
    }
}

/// When step `i` of `n` of a job that started at `started` finishes.
fn step_end(started: i64, i: usize, n: usize) -> i64 {
    started + RUN_SECS * (i as i64 + 1) / n.max(1) as i64
}

fn latest_jobs(run: &WorkflowRun) -> impl Iterator<Item = &WorkflowJob> {
    run.jobs.iter().filter(move |j| j.attempt == run.run_attempt)
}

/// The run's status and conclusion at `now`, from its latest attempt's jobs.
fn run_state(run: &WorkflowRun, now: i64) -> (&'static str, Option<String>, i64) {
    let states: Vec<JobState> = latest_jobs(run).map(|j| job_state(j, now)).collect();
    let updated = states.iter().map(|s| s.completed_at.unwrap_or(if s.status == "queued" { run.attempt_started } else { s.started_at })).max().unwrap_or(run.created);
    if states.iter().all(|s| s.status == "queued") {
        return ("queued", None, updated);
    }
    if states.iter().any(|s| s.status != "completed") {
        return ("in_progress", None, updated);
    }
    let has = |c: &str| states.iter().any(|s| s.conclusion.as_deref() == Some(c));
    let conclusion = if has("failure") {
        "failure"
    } else if has("cancelled") {
        "cancelled"
    } else {
        "success"
    };
    ("completed", Some(conclusion.into()), updated)
}

fn iso(t: i64) -> String {
    let (y, m, d) = time::civil_date(t);
    let s = t.rem_euclid(86_400);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", s / 3600, s % 3600 / 60, s % 60)
}

/// The jobs a new attempt of `wf` runs, planned to end as `outcome` (on the last job).
fn plan_jobs(w: &mut World, wf_jobs: &[(String, Vec<String>)], attempt: u64, start: i64, outcome: &str) -> Vec<WorkflowJob> {
    let n = wf_jobs.len();
    wf_jobs
        .iter()
        .enumerate()
        .map(|(i, (name, steps))| WorkflowJob {
            id: w.next_id(),
            name: name.clone(),
            attempt,
            steps: steps.clone(),
            plan: if i + 1 == n { outcome.to_string() } else { "success".into() },
            start,
            cancelled_at: None,
        })
        .collect()
}

fn outcome_for(a: Option<&RepoActions>, path: &str) -> String {
    a.and_then(|a| a.outcomes.get(path).or_else(|| a.outcomes.get(file_name(path)))).cloned().unwrap_or_else(|| "success".into())
}

/// A new run of `wf` on `sha` (branch `branch`), made by a dispatch or a seed. Returns its id.
#[allow(clippy::too_many_arguments)]
pub fn new_run(w: &mut World, rkey: &str, wf: &Workflow, event: &str, branch: Option<String>, sha: &str, actor: &str, created: i64, outcome: Option<String>) -> u64 {
    let rid = w.repos[rkey].id;
    let message = w.repos[rkey].git.commit(sha).map(|c| c.message.lines().next().unwrap_or("").to_string()).unwrap_or_default();
    let id = w.next_id();
    let outcome = outcome.unwrap_or_else(|| outcome_for(w.actions.get(&rid), &wf.path));
    let jobs = plan_jobs(w, &wf.jobs, 1, created, &outcome);
    let a = w.actions.entry(rid).or_default();
    let number = a.run_numbers.entry(wf.path.clone()).or_insert(0);
    *number += 1;
    let run = WorkflowRun {
        id,
        workflow_path: wf.path.clone(),
        name: wf.name.clone(),
        run_number: *number,
        run_attempt: 1,
        event: event.to_string(),
        head_branch: branch,
        head_sha: sha.to_string(),
        display_title: if event == "push" && !message.is_empty() { message } else { wf.name.clone() },
        actor: actor.to_string(),
        triggering_actor: actor.to_string(),
        created,
        attempt_started: created,
        jobs,
        artifacts: Vec::new(),
        logs_deleted_through: 0,
    };
    a.runs.insert(id, run);
    id
}

// ---- rendering -----------------------------------------------------------------------------

fn runs_base(b: &str, r: &Repo) -> String {
    format!("{b}/repos/{}/actions", r.full_name())
}

fn run_json(w: &World, b: &str, r: &Repo, run: &WorkflowRun, now: i64) -> Value {
    let a = runs_base(b, r);
    let u = format!("{a}/runs/{}", run.id);
    let (status, conclusion, updated) = run_state(run, now);
    let suite = run.id + 1_000_000_000;
    let head_commit = r.git.commit(&run.head_sha).map(|c| {
        json!({
            "id": run.head_sha, "tree_id": c.tree, "message": c.message, "timestamp": c.committer.date,
            "author": {"name": c.author.name, "email": c.author.email},
            "committer": {"name": c.committer.name, "email": c.committer.email},
        })
    });
    let repo = w.repo_json(b, r, false);
    let wf_id = workflow_id(r, &run.workflow_path);
    json!({
        "id": run.id, "name": run.name, "node_id": node_id("WorkflowRun", run.id),
        "check_suite_id": suite, "check_suite_node_id": node_id("CheckSuite", suite),
        "head_branch": run.head_branch, "head_sha": run.head_sha, "path": run.workflow_path,
        "display_title": run.display_title, "run_number": run.run_number, "run_attempt": run.run_attempt,
        "referenced_workflows": [], "event": run.event, "status": status, "conclusion": conclusion,
        "workflow_id": wf_id, "url": u, "html_url": format!("{b}/{}/actions/runs/{}", r.full_name(), run.id),
        "pull_requests": [], "created_at": iso(run.created), "updated_at": iso(updated.max(run.created)),
        "actor": w.user_json(b, &run.actor), "triggering_actor": w.user_json(b, &run.triggering_actor),
        "run_started_at": iso(run.attempt_started),
        "jobs_url": format!("{u}/jobs"), "logs_url": format!("{u}/logs"),
        "check_suite_url": format!("{b}/repos/{}/check-suites/{suite}", r.full_name()),
        "artifacts_url": format!("{u}/artifacts"), "cancel_url": format!("{u}/cancel"), "rerun_url": format!("{u}/rerun"),
        "previous_attempt_url": (run.run_attempt > 1).then(|| format!("{u}/attempts/{}", run.run_attempt - 1)),
        "workflow_url": format!("{a}/workflows/{wf_id}"),
        "head_commit": head_commit, "repository": repo, "head_repository": repo,
    })
}

fn job_json(b: &str, r: &Repo, run: &WorkflowRun, j: &WorkflowJob, now: i64) -> Value {
    let a = runs_base(b, r);
    let s = job_state(j, now);
    let n = j.steps.len();
    let steps: Vec<Value> = j
        .steps
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let begin = if i == 0 { s.started_at } else { step_end(s.started_at, i - 1, n) };
            let end = step_end(s.started_at, i, n);
            let (status, conclusion, started, completed) = match (s.status, &s.conclusion) {
                ("queued", _) => ("queued", None, None, None),
                ("completed", Some(c)) if c == "cancelled" => {
                    let stop = s.completed_at.unwrap_or(now);
                    if end <= stop {
                        ("completed", Some("success".to_string()), Some(begin), Some(end))
                    } else {
                        ("completed", Some(if begin <= stop { "cancelled" } else { "skipped" }.to_string()), (begin <= stop).then_some(begin), Some(stop))
                    }
                }
                ("completed", c) => {
                    // A failing job fails on its last step before `Complete job`.
                    let failed = c.as_deref() == Some("failure") && i + 2 == n.max(2);
                    ("completed", Some(if failed { "failure".to_string() } else { "success".to_string() }), Some(begin), Some(end))
                }
                _ if now >= end => ("completed", Some("success".to_string()), Some(begin), Some(end)),
                _ if now >= begin => ("in_progress", None, Some(begin), None),
                _ => ("queued", None, None, None),
            };
            json!({"name": name, "status": status, "conclusion": conclusion, "number": i + 1,
                   "started_at": started.map(iso), "completed_at": completed.map(iso)})
        })
        .collect();
    let ran = s.status != "queued";
    json!({
        "id": j.id, "run_id": run.id, "run_url": format!("{a}/runs/{}", run.id), "run_attempt": j.attempt,
        "node_id": node_id("CheckRun", j.id), "head_sha": run.head_sha, "url": format!("{a}/jobs/{}", j.id),
        "html_url": format!("{b}/{}/actions/runs/{}/job/{}", r.full_name(), run.id, j.id),
        "status": s.status, "conclusion": s.conclusion, "created_at": iso(j.start), "started_at": iso(s.started_at),
        "completed_at": s.completed_at.map(iso), "name": j.name, "steps": steps,
        "check_run_url": format!("{b}/repos/{}/check-runs/{}", r.full_name(), j.id),
        "labels": ["ubuntu-latest"], "runner_id": ran.then_some(1), "runner_name": ran.then_some("GitHub Actions 1"),
        "runner_group_id": ran.then_some(1), "runner_group_name": ran.then_some("GitHub Actions"),
        "workflow_name": run.name, "head_branch": run.head_branch,
    })
}

fn artifact_size(x: &Artifact) -> usize {
    zip(&x.files).len()
}

fn artifact_json(b: &str, r: &Repo, run: &WorkflowRun, x: &Artifact) -> Value {
    use sha2::Digest as _;
    let a = runs_base(b, r);
    let archive = zip(&x.files);
    let digest: String = sha2::Sha256::digest(&archive).iter().map(|b| format!("{b:02x}")).collect();
    json!({
        "id": x.id, "node_id": node_id("Artifact", x.id), "name": x.name, "size_in_bytes": artifact_size(x),
        "url": format!("{a}/artifacts/{}", x.id), "archive_download_url": format!("{a}/artifacts/{}/zip", x.id),
        "expired": false, "created_at": iso(x.created), "updated_at": iso(x.created),
        "expires_at": iso(x.created + RETENTION_DAYS * 86_400), "digest": format!("sha256:{digest}"),
        "workflow_run": {"id": run.id, "repository_id": r.id, "head_repository_id": r.id,
                         "head_branch": run.head_branch, "head_sha": run.head_sha},
    })
}

/// GitHub's `per_page`/`page` over a built list: the total and the page.
fn paged(call: &Call, all: Vec<Value>) -> (usize, Vec<Value>) {
    let (page, per_page) = pome_twin_sdk::page::PageInfo::from_query(&call.req, 30, 100);
    let total = all.len();
    let info = pome_twin_sdk::page::PageInfo::new(page, per_page, total);
    let range = info.range(total);
    (total, all.into_iter().skip(range.start).take(range.len()).collect())
}

// ---- runs ----------------------------------------------------------------------------------

fn actions_of<'a>(w: &'a World, r: &Repo) -> Option<&'a RepoActions> {
    w.actions.get(&r.id)
}

fn list_runs_where(w: &World, call: &Call, r: &Repo, path: Option<&str>) -> ApiResult {
    let now = time::now_unix();
    let q = |k: &str| call.req.query(k);
    let (actor, branch, event, status, sha) = (q("actor"), q("branch"), q("event"), q("status"), q("head_sha"));
    let created = q("created");
    let runs: Vec<&WorkflowRun> = actions_of(w, r).map(|a| a.runs.values().rev().collect()).unwrap_or_default();
    let mut out = Vec::new();
    for run in runs {
        if path.is_some_and(|p| p != run.workflow_path) {
            continue;
        }
        if actor.as_deref().is_some_and(|x| !x.eq_ignore_ascii_case(&run.actor)) || branch.as_deref().is_some_and(|x| run.head_branch.as_deref() != Some(x)) {
            continue;
        }
        if event.as_deref().is_some_and(|x| x != run.event) || sha.as_deref().is_some_and(|x| x != run.head_sha) {
            continue;
        }
        let (st, concl, _) = run_state(run, now);
        if status.as_deref().is_some_and(|s| s != st && concl.as_deref() != Some(s)) {
            continue;
        }
        if created.as_deref().is_some_and(|c| !crate::handlers::search::date_matches(&iso(run.created), c)) {
            continue;
        }
        out.push(run_json(w, &call.req.base_url, r, run, now));
    }
    let (total, page) = paged(call, out);
    json(200, &json!({"total_count": total, "workflow_runs": page}))
}

/// `GET /repos/{owner}/{repo}/actions/runs` (`actions/list-workflow-runs-for-repo`): newest
/// first; `actor`, `branch`, `event`, `status` (a status or a conclusion), `head_sha`, `created`.
pub fn list_runs(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    list_runs_where(w, call, r, None)
}

/// `GET …/actions/workflows/{workflow_id}/runs` (`actions/list-workflow-runs`).
pub fn list_workflow_runs(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let wf = find_workflow(r, call)?;
    list_runs_where(w, call, r, Some(&wf.path))
}

fn find_run<'a>(w: &'a World, call: &Call) -> Result<(&'a Repo, &'a WorkflowRun), ApiError> {
    let r = w.repo(call)?;
    let id = num(call, "run_id")?;
    let run = actions_of(w, r).and_then(|a| a.runs.get(&id)).ok_or_else(ApiError::not_found)?;
    Ok((r, run))
}

/// `GET …/actions/runs/{run_id}` (`actions/get-workflow-run`).
pub fn get_run(w: &mut World, call: &mut Call) -> ApiResult {
    let (r, run) = find_run(w, call)?;
    json(200, &run_json(w, &call.req.base_url, r, run, time::now_unix()))
}

/// `GET …/actions/runs/{run_id}/jobs` (`actions/list-jobs-for-workflow-run`): the latest
/// attempt's jobs, or every attempt's with `filter=all`.
pub fn list_jobs(w: &mut World, call: &mut Call) -> ApiResult {
    let (r, run) = find_run(w, call)?;
    let all = match call.req.query("filter").as_deref() {
        None | Some("latest") => false,
        Some("all") => true,
        Some(_) => return Err(ApiError::invalid("Job", "filter", "invalid")),
    };
    let now = time::now_unix();
    let jobs: Vec<Value> = run.jobs.iter().filter(|j| all || j.attempt == run.run_attempt).map(|j| job_json(&call.req.base_url, r, run, j, now)).collect();
    let (total, page) = paged(call, jobs);
    json(200, &json!({"total_count": total, "jobs": page}))
}

fn find_job<'a>(w: &'a World, call: &Call) -> Result<(&'a Repo, &'a WorkflowRun, &'a WorkflowJob), ApiError> {
    let r = w.repo(call)?;
    let id = num(call, "job_id")?;
    actions_of(w, r)
        .into_iter()
        .flat_map(|a| a.runs.values())
        .find_map(|run| run.jobs.iter().find(|j| j.id == id).map(|j| (r, run, j)))
        .ok_or_else(ApiError::not_found)
}

/// `GET …/actions/jobs/{job_id}` (`actions/get-job-for-workflow-run`).
pub fn get_job(w: &mut World, call: &mut Call) -> ApiResult {
    let (r, run, j) = find_job(w, call)?;
    json(200, &job_json(&call.req.base_url, r, run, j, time::now_unix()))
}

fn run_mut<'a>(w: &'a mut World, call: &Call) -> Result<(String, &'a mut WorkflowRun), ApiError> {
    let id = num(call, "run_id")?;
    run_mut_by_id(w, call, id)
}

fn run_mut_by_id<'a>(w: &'a mut World, call: &Call, id: u64) -> Result<(String, &'a mut WorkflowRun), ApiError> {
    let r = w.repo_mut(call, Role::Write)?;
    let (rid, full) = (r.id, r.full_name());
    let run = w.actions.get_mut(&rid).and_then(|a| a.runs.get_mut(&id)).ok_or_else(ApiError::not_found)?;
    Ok((full, run))
}

/// What the tape records of a run, and the state export's view of it.
pub(crate) fn run_change(run: &WorkflowRun, now: i64) -> Value {
    let (status, conclusion, _) = run_state(run, now);
    json!({"id": run.id, "workflow": run.workflow_path, "name": run.name, "run_number": run.run_number, "run_attempt": run.run_attempt,
           "event": run.event, "actor": run.actor, "head_branch": run.head_branch, "head_sha": run.head_sha, "status": status, "conclusion": conclusion})
}

/// `POST …/actions/runs/{run_id}/cancel` (`actions/cancel-workflow-run`): 202, or 409 for a
/// run that has completed.
pub fn cancel_run(w: &mut World, call: &mut Call) -> ApiResult {
    let now = time::now_unix();
    let (full, run) = run_mut(w, call)?;
    if run_state(run, now).0 == "completed" {
        return Err(ApiError::new(409, "Cannot cancel a workflow run that is completed."));
    }
    let before = run_change(run, now);
    let attempt = run.run_attempt;
    for j in run.jobs.iter_mut().filter(|j| j.attempt == attempt) {
        if job_state(j, now).status != "completed" {
            j.cancelled_at = Some(now);
        }
    }
    let after = run_change(run, now);
    call.updated("workflow_run", format!("{full}:{}", run.id), &before, &after);
    json(202, &json!({}))
}

/// Which jobs a re-run starts again.
#[derive(Clone, Copy)]
enum Rerun {
    All,
    Failed,
    Job(u64),
}

fn failed_or_cancelled(j: &WorkflowJob, now: i64) -> bool {
    matches!(job_state(j, now).conclusion.as_deref(), Some("failure" | "cancelled"))
}

fn rerun(w: &mut World, call: &mut Call, run_id: u64, which: Rerun) -> ApiResult {
    let now = time::now_unix();
    let viewer = w.viewer.clone();
    let (full, run) = run_mut_by_id(w, call, run_id)?;
    if run_state(run, now).0 != "completed" {
        return Err(ApiError::forbidden("This workflow run is not completed"));
    }
    let before = run_change(run, now);
    let latest: Vec<WorkflowJob> = latest_jobs(run).cloned().collect();
    let again = |j: &WorkflowJob| match which {
        Rerun::All => true,
        Rerun::Failed => failed_or_cancelled(j, now),
        Rerun::Job(id) => j.id == id,
    };
    if matches!(which, Rerun::Failed) && !latest.iter().any(again) {
        return Err(ApiError::forbidden("This workflow run has no failed jobs to re-run."));
    }
    if matches!(which, Rerun::Job(_)) && !latest.iter().any(again) {
        return Err(ApiError::forbidden("Only a job of the run's latest attempt can be re-run."));
    }
    let (key, rid) = (full.clone(), run.id);
    let attempt = run.run_attempt + 1;
    let mut jobs = Vec::new();
    for j in latest {
        let again = again(&j);
        jobs.push(WorkflowJob { id: 0, attempt, start: if again { now } else { j.start }, cancelled_at: if again { None } else { j.cancelled_at }, ..j });
    }
    for j in &mut jobs {
        j.id = w.next_id();
    }
    let (_, run) = run_mut_by_id(w, call, rid)?;
    run.run_attempt = attempt;
    run.attempt_started = now;
    run.triggering_actor = viewer;
    run.jobs.extend(jobs);
    let after = run_change(run, now);
    call.updated("workflow_run", format!("{key}:{rid}"), &before, &after);
    json(201, &json!({}))
}

/// `POST …/actions/runs/{run_id}/rerun` (`actions/re-run-workflow`): every job again, as a
/// new attempt; 403 while the run has not completed.
pub fn rerun_run(w: &mut World, call: &mut Call) -> ApiResult {
    rerun(w, call, num(call, "run_id")?, Rerun::All)
}

/// `POST …/actions/runs/{run_id}/rerun-failed-jobs` (`actions/re-run-workflow-failed-jobs`).
pub fn rerun_failed(w: &mut World, call: &mut Call) -> ApiResult {
    rerun(w, call, num(call, "run_id")?, Rerun::Failed)
}

/// `POST …/actions/jobs/{job_id}/rerun` (`actions/re-run-job-for-workflow-run`): a new attempt
/// that runs this job again, the others carried over as they ended.
pub fn rerun_job(w: &mut World, call: &mut Call) -> ApiResult {
    let (run_id, job_id) = {
        let (_, run, j) = find_job(w, call)?;
        (run.id, j.id)
    };
    rerun(w, call, run_id, Rerun::Job(job_id))
}

/// The run as it was at attempt `attempt_number` (its jobs, its status).
fn attempt_view(call: &Call, run: &WorkflowRun) -> Result<WorkflowRun, ApiError> {
    let n = num(call, "attempt_number")?;
    if n == 0 || n > run.run_attempt {
        return Err(ApiError::not_found());
    }
    let started = run.jobs.iter().filter(|j| j.attempt == n).map(|j| j.start).max().unwrap_or(run.created);
    Ok(WorkflowRun { run_attempt: n, attempt_started: started, ..run.clone() })
}

/// `GET …/actions/runs/{run_id}/attempts/{attempt_number}` (`actions/get-workflow-run-attempt`).
pub fn get_attempt(w: &mut World, call: &mut Call) -> ApiResult {
    let (r, run) = find_run(w, call)?;
    let view = attempt_view(call, run)?;
    json(200, &run_json(w, &call.req.base_url, r, &view, time::now_unix()))
}

/// `GET …/actions/runs/{run_id}/attempts/{attempt_number}/jobs`
/// (`actions/list-jobs-for-workflow-run-attempt`).
pub fn list_attempt_jobs(w: &mut World, call: &mut Call) -> ApiResult {
    let (r, run) = find_run(w, call)?;
    let view = attempt_view(call, run)?;
    let now = time::now_unix();
    let jobs: Vec<Value> = latest_jobs(&view).map(|j| job_json(&call.req.base_url, r, &view, j, now)).collect();
    let (total, page) = paged(call, jobs);
    json(200, &json!({"total_count": total, "jobs": page}))
}

/// `DELETE …/actions/runs/{run_id}` (`actions/delete-workflow-run`).
pub fn delete_run(w: &mut World, call: &mut Call) -> ApiResult {
    let now = time::now_unix();
    let (full, run) = run_mut(w, call)?;
    let (id, change) = (run.id, run_change(run, now));
    let rid = w.repo(call)?.id;
    w.actions.get_mut(&rid).expect("found above").runs.remove(&id);
    call.deleted("workflow_run", format!("{full}:{id}"), &change);
    no_content()
}

#[derive(Deserialize)]
struct DispatchInput {
    #[serde(rename = "ref")]
    git_ref: Option<String>,
    #[serde(default)]
    inputs: BTreeMap<String, Value>,
    #[serde(default)]
    return_run_details: bool,
}

/// `POST …/actions/workflows/{workflow_id}/dispatches` (`actions/create-workflow-dispatch`):
/// a `queued` run of the workflow on the ref's head commit. 204, or 200 with the run's id and
/// URLs when `return_run_details` is true.
pub fn dispatch(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: DispatchInput = input(call)?;
    let git_ref = inp.git_ref.filter(|r| !r.is_empty()).ok_or_else(|| ApiError::invalid("Workflow", "ref", "missing_field"))?;
    if inp.inputs.len() > 25 {
        return Err(ApiError::new(422, "inputs are too large (at most 25 properties)."));
    }
    let viewer = w.viewer.clone();
    let r = w.repo_mut(call, Role::Write)?;
    let rkey = crate::api::repo_key(&r.owner, &r.name);
    let wf = find_workflow(r, call)?;
    let short = git_ref.strip_prefix("refs/heads/").or_else(|| git_ref.strip_prefix("refs/tags/")).unwrap_or(&git_ref).to_string();
    let (branch, sha) = match (r.git.branch(&short), r.git.refs.get(&format!("refs/tags/{short}"))) {
        (Some(s), _) => (Some(short.clone()), s.clone()),
        (None, Some(t)) => (Some(short.clone()), r.git.peel(t)),
        _ => return Err(ApiError::new(422, format!("No ref found for: {git_ref}"))),
    };
    if !wf.dispatchable {
        return Err(ApiError::new(422, "Workflow does not have 'workflow_dispatch' trigger"));
    }
    if workflow_state(w, &w.repos[&rkey], &wf.path) != "active" {
        return Err(ApiError::new(422, "Cannot trigger a 'workflow_dispatch' on a disabled workflow"));
    }
    let now = time::now_unix();
    let id = new_run(w, &rkey, &wf, "workflow_dispatch", branch, &sha, &viewer, now, None);
    let r = &w.repos[&rkey];
    let run = &w.actions[&r.id].runs[&id];
    call.created("workflow_run", format!("{}:{id}", r.full_name()), &run_change(run, now));
    if inp.return_run_details {
        let b = &call.req.base_url;
        return json(200, &json!({"workflow_run_id": id, "run_url": format!("{}/runs/{id}", runs_base(b, r)),
                                  "html_url": format!("{b}/{}/actions/runs/{id}", r.full_name())}));
    }
    no_content()
}

// ---- artifacts and logs --------------------------------------------------------------------

fn artifacts_where(w: &World, call: &Call, r: &Repo, run: Option<u64>) -> ApiResult {
    let name = call.req.query("name");
    let mut out = Vec::new();
    for x in actions_of(w, r).into_iter().flat_map(|a| a.runs.values()).filter(|x| run.is_none_or(|id| x.id == id)) {
        for a in &x.artifacts {
            if name.as_deref().is_none_or(|n| n == a.name) {
                out.push((a.id, artifact_json(&call.req.base_url, r, x, a)));
            }
        }
    }
    out.sort_by_key(|x| std::cmp::Reverse(x.0));
    let (total, page) = paged(call, out.into_iter().map(|(_, v)| v).collect());
    json(200, &json!({"total_count": total, "artifacts": page}))
}

/// `GET …/actions/artifacts` (`actions/list-artifacts-for-repo`): newest first; `name`.
pub fn list_artifacts(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    artifacts_where(w, call, r, None)
}

/// `GET …/actions/runs/{run_id}/artifacts` (`actions/list-workflow-run-artifacts`).
pub fn list_run_artifacts(w: &mut World, call: &mut Call) -> ApiResult {
    let (r, run) = find_run(w, call)?;
    artifacts_where(w, call, r, Some(run.id))
}

fn find_artifact<'a>(w: &'a World, call: &Call) -> Result<(&'a Repo, &'a WorkflowRun, &'a Artifact), ApiError> {
    let r = w.repo(call)?;
    let id = num(call, "artifact_id")?;
    actions_of(w, r)
        .into_iter()
        .flat_map(|a| a.runs.values())
        .find_map(|run| run.artifacts.iter().find(|x| x.id == id).map(|x| (r, run, x)))
        .ok_or_else(ApiError::not_found)
}

/// `GET …/actions/artifacts/{artifact_id}` (`actions/get-artifact`).
pub fn get_artifact(w: &mut World, call: &mut Call) -> ApiResult {
    let (r, run, x) = find_artifact(w, call)?;
    json(200, &artifact_json(&call.req.base_url, r, run, x))
}

/// `DELETE …/actions/artifacts/{artifact_id}` (`actions/delete-artifact`).
pub fn delete_artifact(w: &mut World, call: &mut Call) -> ApiResult {
    let (full, run_id, id) = {
        let (r, run, x) = find_artifact(w, call)?;
        (r.full_name(), run.id, x.id)
    };
    let r = w.repo_mut(call, Role::Write)?;
    let rid = r.id;
    let run = w.actions.get_mut(&rid).and_then(|a| a.runs.get_mut(&run_id)).expect("found above");
    let i = run.artifacts.iter().position(|x| x.id == id).expect("found above");
    let x = run.artifacts.remove(i);
    call.deleted("artifact", format!("{full}:{id}"), &json!({"id": x.id, "name": x.name, "run": run_id}));
    no_content()
}

fn redirect(to: String) -> ApiResult {
    Ok(Response { status: 302, headers: vec![("location".into(), to)], body: Vec::new() })
}

fn files_base(b: &str, r: &Repo) -> String {
    format!("{b}/actions-files/{}", r.full_name())
}

/// `GET …/actions/artifacts/{artifact_id}/{archive_format}` (`actions/download-artifact`): a
/// 302 to the zip the twin serves (`zip` is the only format).
pub fn download_artifact(w: &mut World, call: &mut Call) -> ApiResult {
    let (r, _, x) = find_artifact(w, call)?;
    if call.param("archive_format") != "zip" {
        return Err(ApiError::not_found());
    }
    redirect(format!("{}/artifacts/{}/archive", files_base(&call.req.base_url, r), x.id))
}

/// `GET …/actions/runs/{run_id}/logs` (`actions/download-workflow-run-logs`): a 302 to the
/// zip of the latest attempt's job logs (404 once they were deleted).
pub fn run_logs(w: &mut World, call: &mut Call) -> ApiResult {
    let (r, run) = find_run(w, call)?;
    if run.run_attempt <= run.logs_deleted_through {
        return Err(ApiError::not_found());
    }
    redirect(format!("{}/runs/{}/attempts/{}/logs", files_base(&call.req.base_url, r), run.id, run.run_attempt))
}

/// `GET …/actions/jobs/{job_id}/logs` (`actions/download-job-logs-for-workflow-run`): a 302
/// to the job's plain-text log (404 once its run's logs were deleted).
pub fn job_logs(w: &mut World, call: &mut Call) -> ApiResult {
    let (r, run, j) = find_job(w, call)?;
    if j.attempt <= run.logs_deleted_through {
        return Err(ApiError::not_found());
    }
    redirect(format!("{}/jobs/{}/logs", files_base(&call.req.base_url, r), j.id))
}

/// `DELETE …/actions/runs/{run_id}/logs` (`actions/delete-workflow-run-logs`): every attempt's
/// logs so far; 403 while the run has not completed (its logs are still being written).
pub fn delete_run_logs(w: &mut World, call: &mut Call) -> ApiResult {
    let now = time::now_unix();
    let (full, run) = run_mut(w, call)?;
    if run_state(run, now).0 != "completed" {
        return Err(ApiError::forbidden("Cannot delete logs of a workflow run that is not completed."));
    }
    let before = run.logs_deleted_through;
    run.logs_deleted_through = run.run_attempt;
    call.updated("workflow_run_logs", format!("{full}:{}", run.id), &json!({"deleted_through_attempt": before}), &json!({"deleted_through_attempt": run.run_attempt}));
    no_content()
}

/// Milliseconds a job is billed: what it ran, rounded up to whole minutes as GitHub bills.
fn billed_ms(j: &WorkflowJob, now: i64) -> Option<i64> {
    let s = job_state(j, now);
    let ran = s.completed_at? - s.started_at;
    Some((ran.max(1) + 59) / 60 * 60_000)
}

/// `GET …/actions/runs/{run_id}/timing` (`actions/get-workflow-run-usage`): the completed jobs
/// of every attempt, all on `ubuntu-latest` (Linux) runners, and the run's duration so far.
pub fn run_usage(w: &mut World, call: &mut Call) -> ApiResult {
    let (_, run) = find_run(w, call)?;
    let now = time::now_unix();
    let runs: Vec<Value> = run.jobs.iter().filter_map(|j| billed_ms(j, now).map(|ms| json!({"job_id": j.id, "duration_ms": ms}))).collect();
    let total: i64 = runs.iter().filter_map(|r| r["duration_ms"].as_i64()).sum();
    let (status, _, updated) = run_state(run, now);
    let end = if status == "completed" { updated } else { now };
    json(200, &json!({
        "billable": {"UBUNTU": {"total_ms": total, "jobs": runs.len(), "job_runs": runs}},
        "run_duration_ms": (end - run.created).max(0) * 1000,
    }))
}

/// A job's log as of `now`: one group per step that has begun.
fn log_text(run: &WorkflowRun, j: &WorkflowJob, now: i64) -> String {
    let s = job_state(j, now);
    let mut out = String::new();
    if s.status == "queued" {
        return out;
    }
    let n = j.steps.len();
    let stop = s.completed_at.unwrap_or(now);
    for (i, step) in j.steps.iter().enumerate() {
        let begin = if i == 0 { s.started_at } else { step_end(s.started_at, i - 1, n) };
        if begin > stop {
            break;
        }
        out.push_str(&format!("{}.0000000Z ##[group]{step}\n", &iso(begin)[..19]));
        if i == 0 {
            out.push_str(&format!("{}.0000000Z Job {} of run {} on {} ({})\n", &iso(begin)[..19], j.name, run.id, run.head_sha, run.head_branch.as_deref().unwrap_or("")));
        }
        out.push_str(&format!("{}.0000000Z ##[endgroup]\n", &iso(begin)[..19]));
        if s.conclusion.as_deref() == Some("failure") && i + 2 == n.max(2) {
            out.push_str(&format!("{}.0000000Z ##[error]Process completed with exit code 1.\n", &iso(step_end(s.started_at, i, n))[..19]));
        }
    }
    if s.conclusion.as_deref() == Some("cancelled") {
        out.push_str(&format!("{}.0000000Z ##[error]The operation was canceled.\n", &iso(stop)[..19]));
    }
    out
}

fn zip_response(bytes: Vec<u8>) -> ApiResult {
    Ok(Response { status: 200, headers: vec![("content-type".into(), "application/zip".into())], body: bytes })
}

/// `GET /actions-files/{owner}/{repo}/artifacts/{artifact_id}/archive`: where a download
/// redirects (GitHub serves it from its blob storage).
pub fn artifact_file(w: &mut World, call: &mut Call) -> ApiResult {
    let (_, _, x) = find_artifact(w, call)?;
    zip_response(zip(&x.files))
}

/// `GET /actions-files/{owner}/{repo}/runs/{run_id}/attempts/{attempt}/logs`: a zip with a
/// `{n}_{job}.txt` per job of that attempt.
pub fn run_logs_file(w: &mut World, call: &mut Call) -> ApiResult {
    let (_, run) = find_run(w, call)?;
    let attempt = num(call, "attempt")?;
    if attempt <= run.logs_deleted_through {
        return Err(ApiError::not_found());
    }
    let now = time::now_unix();
    let files: BTreeMap<String, String> = run
        .jobs
        .iter()
        .filter(|j| j.attempt == attempt)
        .enumerate()
        .map(|(i, j)| (format!("{}_{}.txt", i, j.name.replace('/', "_")), log_text(run, j, now)))
        .collect();
    if files.is_empty() {
        return Err(ApiError::not_found());
    }
    zip_response(zip(&files))
}

/// `GET /actions-files/{owner}/{repo}/jobs/{job_id}/logs`: a job's log as text.
pub fn job_logs_file(w: &mut World, call: &mut Call) -> ApiResult {
    let (_, run, j) = find_job(w, call)?;
    if j.attempt <= run.logs_deleted_through {
        return Err(ApiError::not_found());
    }
    Ok(Response { status: 200, headers: vec![("content-type".into(), "text/plain; charset=utf-8".into())], body: log_text(run, j, time::now_unix()).into_bytes() })
}

// ---- zip -----------------------------------------------------------------------------------

fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

/// A zip archive of `files`, stored (not compressed), with a fixed date so the same files
/// always make the same bytes.
pub fn zip(files: &BTreeMap<String, String>) -> Vec<u8> {
    let mut out = Vec::new();
    let mut central = Vec::new();
    let (date, tm) = (((2026 - 1980) << 9 | 1 << 5 | 1) as u16, 0u16);
    for (name, text) in files {
        let (n, d) = (name.as_bytes(), text.as_bytes());
        let (crc, offset) = (crc32(d), out.len() as u32);
        let head = |sig: u32, central: bool| {
            let mut h = Vec::new();
            h.extend(sig.to_le_bytes());
            if central {
                h.extend(20u16.to_le_bytes());
            }
            for v in [20u16, 0x0800, 0, tm, date] {
                h.extend(v.to_le_bytes());
            }
            for v in [crc, d.len() as u32, d.len() as u32] {
                h.extend(v.to_le_bytes());
            }
            h.extend((n.len() as u16).to_le_bytes());
            h.extend(0u16.to_le_bytes());
            h
        };
        out.extend(head(0x0403_4b50, false));
        out.extend(n);
        out.extend(d);
        let mut c = head(0x0201_4b50, true);
        for v in [0u16, 0, 0] {
            c.extend(v.to_le_bytes());
        }
        c.extend(0u32.to_le_bytes());
        c.extend(offset.to_le_bytes());
        c.extend(n);
        central.extend(c);
    }
    let (at, size, count) = (out.len() as u32, central.len() as u32, files.len() as u16);
    out.extend(central);
    out.extend(0x0605_4b50u32.to_le_bytes());
    for v in [0u16, 0, count, count] {
        out.extend(v.to_le_bytes());
    }
    out.extend(size.to_le_bytes());
    out.extend(at.to_le_bytes());
    out.extend(0u16.to_le_bytes());
    out
}

/// The state export's `workflow_runs` of a repository, oldest first, as they stand now.
pub fn state_of(w: &World, r: &Repo) -> Vec<Value> {
    let now = time::now_unix();
    actions_of(w, r).into_iter().flat_map(|a| a.runs.values()).map(|run| {
        let mut v = run_change(run, now);
        v["artifacts"] = json!(run.artifacts.iter().map(|x| json!({"id": x.id, "name": x.name, "files": x.files})).collect::<Vec<_>>());
        v
    }).collect()
}

// ---- seeds ---------------------------------------------------------------------------------

/// A repository's seeded Actions: `workflow_outcomes: {"ci.yml": "failure"}` (the conclusion
/// new runs of a workflow reach) and `workflow_runs: [{workflow, branch, event, actor, status:
/// queued|in_progress|completed, conclusion, artifacts: [{name, files: {path: content}}]}]`,
/// each run on its branch's head commit (default branch by default). A seeded run's jobs are
/// its workflow's; its `status` is where it stands at seed time (it goes on from there on the
/// same schedule), its `conclusion` (default `success`) where it ends.
pub fn seed(w: &mut World, rkey: &str, o: &pome_twin_sdk::seed::Obj, p: &str, now: &str, default_actor: &str) -> Result<(), String> {
    const CONCLUSIONS: [&str; 6] = ["success", "failure", "cancelled", "neutral", "skipped", "timed_out"];
    let rid = w.repos[rkey].id;
    if let Some(m) = o.get("workflow_outcomes") {
        let m = m.as_object().ok_or_else(|| format!("{p}.workflow_outcomes: expected an object of workflow file → conclusion"))?;
        let a = w.actions.entry(rid).or_default();
        for (k, v) in m {
            match v.as_str() {
                Some(c) if CONCLUSIONS.contains(&c) => {
                    a.outcomes.insert(k.clone(), c.to_string());
                }
                _ => return Err(format!("{p}.workflow_outcomes.{k}: one of {}", CONCLUSIONS.join(", "))),
            }
        }
    }
    let now = time::parse_iso(now).map(|t| t.timestamp()).unwrap_or(0);
    for (rp, v) in o.items("workflow_runs")? {
        let x = pome_twin_sdk::seed::Obj::new(v, &rp, &["workflow", "branch", "event", "actor", "status", "conclusion", "artifacts"])?;
        let r = &w.repos[rkey];
        let name = x.nonempty_str("workflow")?;
        let wf = workflows(r)
            .into_iter()
            .find(|wf| wf.path == name || file_name(&wf.path) == name)
            .ok_or_else(|| format!("{rp}.workflow: no workflow file {name:?} in .github/workflows on the default branch"))?;
        let branch = x.str("branch")?.unwrap_or_else(|| r.default_branch.clone());
        let sha = r.git.branch(&branch).cloned().ok_or_else(|| format!("{rp}.branch: no branch {branch:?}"))?;
        let event = x.one_of("event", &["push", "pull_request", "workflow_dispatch", "schedule"], "push")?;
        let actor = match x.str("actor")? {
            Some(a) => w.users.get(&a.to_ascii_lowercase()).map(|u| u.login.clone()).ok_or_else(|| format!("{rp}.actor: unknown user {a:?}"))?,
            None => default_actor.to_string(),
        };
        let status = x.one_of("status", &["queued", "in_progress", "completed"], "completed")?;
        let conclusion = match x.str("conclusion")? {
            Some(c) if CONCLUSIONS.contains(&c.as_str()) => c,
            Some(_) => return Err(format!("{rp}.conclusion: one of {}", CONCLUSIONS.join(", "))),
            None => "success".into(),
        };
        let created = match status.as_str() {
            "completed" => now - QUEUED_SECS - RUN_SECS,
            "in_progress" => now - QUEUED_SECS,
            _ => now,
        };
        let plan = if conclusion == "cancelled" { "success".to_string() } else { conclusion.clone() };
        let id = new_run(w, rkey, &wf, &event, Some(branch), &sha, &actor, created, Some(plan));
        let mut artifacts = Vec::new();
        for (ap, av) in x.items("artifacts")? {
            let ao = pome_twin_sdk::seed::Obj::new(av, &ap, &["name", "files"])?;
            let name = ao.nonempty_str("name")?;
            let files: BTreeMap<String, String> = match ao.get("files") {
                None => BTreeMap::new(),
                Some(f) => serde_json::from_value(f.clone()).map_err(|_| format!("{ap}.files: expected an object of path → text"))?,
            };
            artifacts.push(Artifact { id: w.next_id(), name, files, created: created + QUEUED_SECS + RUN_SECS });
        }
        let run = w.actions.get_mut(&rid).and_then(|a| a.runs.get_mut(&id)).expect("made above");
        if conclusion == "cancelled" {
            for j in &mut run.jobs {
                j.cancelled_at = Some(created + QUEUED_SECS + 1);
            }
        }
        run.artifacts = artifacts;
    }
    Ok(())
}
