//! GitHub Actions through the router: workflows read from `.github/workflows`, dispatch, runs
//! with jobs and steps progressing on the clock, cancel, re-runs, artifacts and logs as
//! redirects to files the twin serves, seeds and the tape.

mod common;
use common::*;
use pome_twin_sdk::{Method, Value, json};

const CI: &str = "name: CI\non:\n  push:\n  workflow_dispatch:\njobs:\n  test:\n    name: Unit tests\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n      - name: Run tests\n        run: make test\n  lint:\n    runs-on: ubuntu-latest\n    steps:\n      - run: make lint\n";
const NIGHTLY: &str = "name: Nightly\non:\n  schedule:\n    - cron: '0 3 * * *'\njobs:\n  build:\n    runs-on: ubuntu-latest\n    steps:\n      - run: make\n";

fn seed() -> Value {
    json!({
        "users": [{"login": "acme", "type": "Organization"}, {"login": "alice"}, {"login": "pome-agent"}],
        "repositories": [{
            "owner": "acme", "name": "api", "collaborators": ["alice"],
            "files": [
                {"path": "README.md", "content": "# api\n"},
                {"path": ".github/workflows/ci.yml", "content": CI},
                {"path": ".github/workflows/nightly.yaml", "content": NIGHTLY},
                {"path": "README.md", "branch": "fix", "content": "# api, fixed\n"}
            ],
            "workflow_runs": [
                {"workflow": "ci.yml", "branch": "fix", "actor": "alice", "conclusion": "failure",
                 "artifacts": [{"name": "coverage", "files": {"coverage.txt": "81%\n"}}]},
                {"workflow": "nightly.yaml", "event": "schedule", "actor": "pome-agent"}
            ]
        }]
    })
}

const A: &str = "/repos/acme/api/actions";

fn strip(url: &str) -> String {
    url.strip_prefix("http://h/s/ses_1/github").expect("urls stay under the base").to_string()
}

#[test]
fn workflows_are_the_files_in_github_workflows() {
    let mut w = seeded(seed());
    let (s, v) = get(&mut w, &format!("{A}/workflows"));
    assert_eq!(s, 200);
    assert_eq!(v["total_count"], 2);
    let names: Vec<&str> = v["workflows"].as_array().unwrap().iter().map(|x| x["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["CI", "Nightly"]);
    let id = v["workflows"][0]["id"].as_u64().unwrap();
    let (_, by_name) = get(&mut w, &format!("{A}/workflows/ci.yml"));
    assert_eq!(by_name["id"], id);
    assert_eq!(by_name["state"], "active");
    assert_eq!(get(&mut w, &format!("{A}/workflows/missing.yml")).0, 404);
    assert_eq!(put(&mut w, &format!("{A}/workflows/{id}/disable"), json!({})).0, 204);
    assert_eq!(get(&mut w, &format!("{A}/workflows/{id}")).1["state"], "disabled_manually");
    let (s, v) = post(&mut w, &format!("{A}/workflows/ci.yml/dispatches"), json!({"ref": "main"}));
    assert_eq!((s, v["message"].as_str()), (422, Some("Cannot trigger a 'workflow_dispatch' on a disabled workflow")));
    assert_eq!(put(&mut w, &format!("{A}/workflows/{id}/enable"), json!({})).0, 204);
    assert_eq!(get(&mut w, &format!("{A}/workflows/{id}")).1["state"], "active");
}

#[test]
fn seeded_runs_carry_their_commit_jobs_steps_and_outcome() {
    let mut w = seeded(seed());
    let (_, fix) = get(&mut w, "/repos/acme/api/git/ref/heads/fix");
    let (_, v) = get(&mut w, &format!("{A}/runs"));
    assert_eq!(v["total_count"], 2);
    let run = &v["workflow_runs"][1];
    assert_eq!(run["name"], "CI");
    assert_eq!(run["head_branch"], "fix");
    assert_eq!(run["head_sha"], fix["object"]["sha"]);
    assert_eq!(run["head_commit"]["id"], fix["object"]["sha"]);
    assert_eq!((run["status"].as_str(), run["conclusion"].as_str()), (Some("completed"), Some("failure")));
    assert_eq!(run["actor"]["login"], "alice");
    assert_eq!(run["run_number"], 1);
    let (_, jobs) = get(&mut w, &strip(run["jobs_url"].as_str().unwrap()));
    assert_eq!(jobs["total_count"], 2);
    let test = &jobs["jobs"][0];
    assert_eq!(test["name"], "Unit tests");
    assert_eq!(test["conclusion"], "success");
    let steps: Vec<&str> = test["steps"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(steps, ["Set up job", "Run actions/checkout@v4", "Run tests", "Complete job"]);
    let lint = &jobs["jobs"][1];
    assert_eq!((lint["name"].as_str(), lint["conclusion"].as_str()), (Some("lint"), Some("failure")));
    assert_eq!(lint["steps"][1]["conclusion"], "failure");
    // Filters.
    assert_eq!(get(&mut w, &format!("{A}/runs?status=failure")).1["total_count"], 1);
    assert_eq!(get(&mut w, &format!("{A}/runs?status=completed")).1["total_count"], 2);
    assert_eq!(get(&mut w, &format!("{A}/runs?branch=fix")).1["total_count"], 1);
    assert_eq!(get(&mut w, &format!("{A}/runs?event=schedule")).1["total_count"], 1);
    assert_eq!(get(&mut w, &format!("{A}/runs?actor=alice")).1["total_count"], 1);
    assert_eq!(get(&mut w, &format!("{A}/workflows/nightly.yaml/runs")).1["total_count"], 1);
}

#[test]
fn a_dispatch_queues_a_run_on_the_refs_head_commit() {
    let mut w = seeded(seed());
    let (_, fix) = get(&mut w, "/repos/acme/api/git/ref/heads/fix");
    let (r, c) = dispatch(&mut w, Method::Post, &format!("{A}/workflows/ci.yml/dispatches"), Some(json!({"ref": "fix", "inputs": {"level": "full"}})));
    assert_eq!(r.status, 204);
    assert_eq!(c.changes[0].entity, "workflow_run");
    let (_, v) = get(&mut w, &format!("{A}/workflows/ci.yml/runs"));
    let run = &v["workflow_runs"][0];
    assert_eq!(run["event"], "workflow_dispatch");
    assert_eq!(run["status"], "queued");
    assert_eq!(run["conclusion"], Value::Null);
    assert_eq!(run["head_sha"], fix["object"]["sha"]);
    assert_eq!(run["run_number"], 2);
    assert_eq!(run["actor"]["login"], "pome-agent");
    let (s, v) = post(&mut w, &format!("{A}/workflows/ci.yml/dispatches"), json!({"ref": "main", "return_run_details": true}));
    assert_eq!(s, 200);
    assert_eq!(get(&mut w, &strip(v["run_url"].as_str().unwrap())).1["head_branch"], "main");
    assert_eq!(post(&mut w, &format!("{A}/workflows/ci.yml/dispatches"), json!({"ref": "nope"})).0, 422);
    assert_eq!(post(&mut w, &format!("{A}/workflows/ci.yml/dispatches"), json!({})).0, 422);
    let (s, v) = post(&mut w, &format!("{A}/workflows/nightly.yaml/dispatches"), json!({"ref": "main"}));
    assert_eq!((s, v["message"].as_str()), (422, Some("Workflow does not have 'workflow_dispatch' trigger")));
}

#[test]
fn a_run_progresses_on_the_clock() {
    let mut w = seeded(seed());
    let (s, v) = post(&mut w, &format!("{A}/workflows/ci.yml/dispatches"), json!({"ref": "main", "return_run_details": true}));
    assert_eq!(s, 200);
    let run = strip(v["run_url"].as_str().unwrap());
    assert_eq!(get(&mut w, &run).1["status"], "queued");
    std::thread::sleep(std::time::Duration::from_millis(3_100));
    assert_eq!(get(&mut w, &run).1["status"], "in_progress");
}

#[test]
fn cancel_and_re_runs() {
    let mut w = seeded(seed());
    let (_, v) = post(&mut w, &format!("{A}/workflows/ci.yml/dispatches"), json!({"ref": "main", "return_run_details": true}));
    let id = v["workflow_run_id"].as_u64().unwrap();
    let run = format!("{A}/runs/{id}");
    assert_eq!(post(&mut w, &format!("{run}/rerun"), json!({})).0, 403, "not completed yet");
    assert_eq!(post(&mut w, &format!("{run}/cancel"), json!({})).0, 202);
    let (_, v) = get(&mut w, &run);
    assert_eq!((v["status"].as_str(), v["conclusion"].as_str()), (Some("completed"), Some("cancelled")));
    assert_eq!(post(&mut w, &format!("{run}/cancel"), json!({})).0, 409);
    assert_eq!(post(&mut w, &format!("{run}/rerun"), json!({})).0, 201);
    let (_, v) = get(&mut w, &run);
    assert_eq!((v["status"].as_str(), v["run_attempt"].as_u64()), (Some("queued"), Some(2)));
    assert_eq!(get(&mut w, &format!("{run}/jobs")).1["total_count"], 2);
    assert_eq!(get(&mut w, &format!("{run}/jobs?filter=all")).1["total_count"], 4);

    // Re-running the failed jobs of the seeded run re-runs only `lint`.
    let (_, runs) = get(&mut w, &format!("{A}/runs?status=failure"));
    let failed = format!("{A}/runs/{}", runs["workflow_runs"][0]["id"]);
    assert_eq!(post(&mut w, &format!("{failed}/rerun-failed-jobs"), json!({})).0, 201);
    let (_, jobs) = get(&mut w, &format!("{failed}/jobs"));
    let by_name = |n: &str| jobs["jobs"].as_array().unwrap().iter().find(|j| j["name"] == n).unwrap().clone();
    assert_eq!(by_name("Unit tests")["conclusion"], "success");
    assert_eq!(by_name("lint")["status"], "queued");
    assert_eq!(get(&mut w, &failed).1["status"], "in_progress");
    // Deleting a run.
    assert_eq!(delete(&mut w, &run).0, 204);
    assert_eq!(get(&mut w, &run).0, 404);
}

#[test]
fn artifacts_and_logs_redirect_to_files_the_twin_serves() {
    let mut w = seeded(seed());
    let (_, v) = get(&mut w, &format!("{A}/artifacts"));
    assert_eq!(v["total_count"], 1);
    let art = &v["artifacts"][0];
    assert_eq!(art["name"], "coverage");
    let (r, _) = dispatch(&mut w, Method::Get, &strip(art["archive_download_url"].as_str().unwrap()), None);
    assert_eq!(r.status, 302);
    let to = r.headers.iter().find(|(k, _)| k == "location").unwrap().1.clone();
    let (r, _) = dispatch(&mut w, Method::Get, &strip(&to), None);
    assert_eq!(r.status, 200);
    assert_eq!(&r.body[..4], b"PK\x03\x04");
    assert!(r.body.windows(4).any(|x| x == b"81%\n"));
    assert_eq!(art["size_in_bytes"], r.body.len());
    let run_id = art["workflow_run"]["id"].as_u64().unwrap();
    assert_eq!(get(&mut w, &format!("{A}/runs/{run_id}/artifacts")).1["total_count"], 1);

    let (r, _) = dispatch(&mut w, Method::Get, &format!("{A}/runs/{run_id}/logs"), None);
    assert_eq!(r.status, 302);
    let to = r.headers.iter().find(|(k, _)| k == "location").unwrap().1.clone();
    let (r, _) = dispatch(&mut w, Method::Get, &strip(&to), None);
    assert_eq!((r.status, &r.body[..2]), (200, &b"PK"[..]));
    let (_, jobs) = get(&mut w, &format!("{A}/runs/{run_id}/jobs"));
    let lint = jobs["jobs"][1]["id"].as_u64().unwrap();
    let (r, _) = dispatch(&mut w, Method::Get, &format!("{A}/jobs/{lint}/logs"), None);
    let to = r.headers.iter().find(|(k, _)| k == "location").unwrap().1.clone();
    let (r, _) = dispatch(&mut w, Method::Get, &strip(&to), None);
    let log = String::from_utf8(r.body).unwrap();
    assert!(log.contains("##[group]Run make lint"), "{log}");
    assert!(log.contains("##[error]Process completed with exit code 1."), "{log}");

    assert_eq!(delete(&mut w, &format!("{A}/artifacts/{}", art["id"])).0, 204);
    assert_eq!(get(&mut w, &format!("{A}/artifacts")).1["total_count"], 0);
}

#[test]
fn workflow_outcomes_and_the_state_export() {
    let mut s = seed();
    s["repositories"][0]["workflow_outcomes"] = json!({"ci.yml": "failure"});
    let mut w = seeded(s);
    assert_eq!(post(&mut w, &format!("{A}/workflows/ci.yml/dispatches"), json!({"ref": "main"})).0, 204);
    let state = pome_twin_sdk::Twin::state(&w);
    let runs = state["repositories"][0]["workflow_runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3);
    assert_eq!(runs[0]["conclusion"], "failure");
    assert_eq!(runs[0]["artifacts"][0]["name"], "coverage");
    assert_eq!(runs[2]["status"], "queued");
    let jobs = &w.actions.values().next().unwrap().runs.values().last().unwrap().jobs;
    assert_eq!(jobs.last().unwrap().plan, "failure", "the last job carries the workflow's outcome");
}

#[test]
fn seeds_with_broken_runs_are_refused() {
    use pome_twin_sdk::Twin;
    let bad = |run: Value| {
        let mut s = seed();
        s["repositories"][0]["workflow_runs"] = json!([run]);
        twin_github::World::init(Some(s)).unwrap_err()
    };
    assert!(bad(json!({"workflow": "deploy.yml"})).contains("no workflow file"));
    assert!(bad(json!({"workflow": "ci.yml", "branch": "nope"})).contains("workflow_runs[0].branch"));
    assert!(bad(json!({"workflow": "ci.yml", "conclusion": "great"})).contains("conclusion"));
    assert!(bad(json!({"workflow": "ci.yml", "actor": "carol"})).contains("unknown user"));
}

#[test]
fn writes_need_write_access() {
    let mut s = seed();
    s["repositories"][0]["agent_permission"] = json!("read");
    let mut w = seeded(s);
    assert_eq!(post(&mut w, &format!("{A}/workflows/ci.yml/dispatches"), json!({"ref": "main"})).0, 403);
    assert_eq!(put(&mut w, &format!("{A}/workflows/ci.yml/disable"), json!({})).0, 403);
    assert_eq!(get(&mut w, &format!("{A}/runs")).0, 200);
}

#[test]
fn attempts_and_re_running_one_job() {
    let mut w = seeded(seed());
    let (_, runs) = get(&mut w, &format!("{A}/runs?status=failure"));
    let id = runs["workflow_runs"][0]["id"].as_u64().unwrap();
    let (_, jobs) = get(&mut w, &format!("{A}/runs/{id}/jobs"));
    let lint = jobs["jobs"][1]["id"].as_u64().unwrap();
    assert_eq!(post(&mut w, &format!("{A}/jobs/{lint}/rerun"), json!({})).0, 201);
    let (_, now) = get(&mut w, &format!("{A}/runs/{id}"));
    assert_eq!((now["run_attempt"].as_u64(), now["status"].as_str()), (Some(2), Some("in_progress")));
    assert!(now["previous_attempt_url"].as_str().unwrap().ends_with(&format!("/runs/{id}/attempts/1")));
    // The first attempt still answers as it ended.
    let (s, first) = get(&mut w, &format!("{A}/runs/{id}/attempts/1"));
    assert_eq!(s, 200);
    assert_eq!((first["run_attempt"].as_u64(), first["conclusion"].as_str()), (Some(1), Some("failure")));
    let (_, jobs1) = get(&mut w, &format!("{A}/runs/{id}/attempts/1/jobs"));
    assert_eq!(jobs1["jobs"][1]["id"], lint);
    let (_, jobs2) = get(&mut w, &format!("{A}/runs/{id}/attempts/2/jobs"));
    assert_eq!(jobs2["jobs"][0]["conclusion"], "success", "the passing job is carried over");
    assert_eq!(jobs2["jobs"][1]["status"], "queued");
    assert_eq!(get(&mut w, &format!("{A}/runs/{id}/attempts/3")).0, 404);
    // A job of an earlier attempt, or of a run still going, cannot be re-run.
    assert_eq!(post(&mut w, &format!("{A}/jobs/{lint}/rerun"), json!({})).0, 403);
}

#[test]
fn the_workflow_run_concluded_check_reads_the_state_export() {
    use pome_twin_sdk::{CheckWorld, Params, Twin};
    let mut w = seeded(seed());
    let before = w.state_json();
    let decide = |state: &Value, workflow: &str, conclusion: &str| {
        let p: Params = [("workflow", workflow), ("repo", "acme/api"), ("conclusion", conclusion)].iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        twin_github::World::evaluate_check("github.workflow_run_concluded", &p, &CheckWorld { seed: &before, state, tape: &[] }).unwrap()
    };
    assert!(decide(&before, "ci.yml", "failure").holds, "the seeded run failed");
    assert!(decide(&before, "Nightly", "success").holds, "by the workflow's name");
    assert!(!decide(&before, "deploy.yml", "success").holds);
    // A new run is the latest: until it completes, nothing has concluded.
    let (_, v) = post(&mut w, &format!("{A}/workflows/ci.yml/dispatches"), json!({"ref": "main", "return_run_details": true}));
    let o = decide(&w.state_json(), "ci.yml", "failure");
    assert!(!o.holds && o.reason.ends_with("is queued"), "{}", o.reason);
    assert_eq!(post(&mut w, &format!("{A}/runs/{}/cancel", v["workflow_run_id"]), json!({})).0, 202);
    let o = decide(&w.state_json(), ".github/workflows/ci.yml", "cancelled");
    assert!(o.holds, "{}", o.reason);
    assert_eq!(o.evidence, pome_twin_sdk::Evidence::state("repositories[0].workflow_runs[2]"));
}
