//! GitHub's MCP server's `actions` and `gists` toolsets, called as the host calls them: the
//! tool's declaration (`tools.json`) turns the arguments into a request through the real
//! router. Each test checks the answer (the vendor's shape) and that the world changed as the
//! REST calls change it.

mod common;
use common::*;
use pome_twin_sdk::{Method, Value, json};
use twin_github::World;

const CI: &str = "name: CI\non: [push, workflow_dispatch]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - run: make test\n  lint:\n    runs-on: ubuntu-latest\n    steps:\n      - run: make lint\n";

fn seed() -> Value {
    json!({
        "users": [{"login": "acme", "type": "Organization"}, {"login": "alice"}, {"login": "pome-agent"}],
        "repositories": [{
            "owner": "acme", "name": "api", "collaborators": ["alice"],
            "files": [{"path": "README.md", "content": "# api\n"}, {"path": ".github/workflows/ci.yml", "content": CI}],
            "workflow_runs": [{"workflow": "ci.yml", "actor": "alice", "conclusion": "failure",
                               "artifacts": [{"name": "report", "files": {"report.txt": "1 failed\n"}}]}]
        }],
        "gists": [{"owner": "alice", "description": "notes", "public": true, "files": {"notes.md": "# notes\n"}}]
    })
}

fn args(extra: Value) -> Value {
    let mut v = json!({"owner": "acme", "repo": "api"});
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

fn seeded_run(w: &mut World) -> u64 {
    get(w, "/repos/acme/api/actions/runs").1["workflow_runs"][0]["id"].as_u64().unwrap()
}

#[test]
fn actions_list_answers_minimal_runs_and_jobs_and_the_rest_lists() {
    let mut w = seeded(seed());
    let (s, v, _) = tool(&mut w, "actions_list", args(json!({"method": "list_workflows"})));
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["workflows"][0]["path"], ".github/workflows/ci.yml");
    let (s, v, _) = tool(&mut w, "actions_list", args(json!({"method": "list_workflow_runs", "resource_id": "ci.yml", "workflow_runs_filter": {"status": "completed", "actor": "alice"}})));
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["total_count"], 1);
    let run = &v["workflow_runs"][0];
    assert_eq!((run["conclusion"].as_str(), run["actor"]["login"].as_str()), (Some("failure"), Some("alice")));
    assert!(run.get("repository").is_none() && run.get("jobs_url").is_none(), "minimal: {run}");
    assert_eq!(run["actor"].as_object().unwrap().keys().collect::<Vec<_>>(), ["login", "id", "profile_url", "avatar_url"], "the vendor's MinimalUser");
    let id = run["id"].as_u64().unwrap();
    // A filter that matches nothing, over the whole repository.
    let (_, v, _) = tool(&mut w, "actions_list", args(json!({"method": "list_workflow_runs", "workflow_runs_filter": {"branch": "nope"}})));
    assert_eq!(v, json!({"total_count": 0, "workflow_runs": []}));
    let (s, v, _) = tool(&mut w, "actions_list", args(json!({"method": "list_workflow_jobs", "resource_id": id.to_string()})));
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["jobs"]["total_count"], 2, "the vendor's server nests the minimal list under `jobs`: {v}");
    let job = &v["jobs"]["jobs"][1];
    assert_eq!((job["name"].as_str(), job["conclusion"].as_str()), (Some("lint"), Some("failure")));
    assert!(job["steps"].as_array().unwrap().iter().all(|s| s.get("conclusion").is_some()));
    let (_, v, _) = tool(&mut w, "actions_list", args(json!({"method": "list_workflow_run_artifacts", "resource_id": id.to_string()})));
    assert_eq!(v["artifacts"][0]["name"], "report");
    // The vendor's refusals.
    let (s, v, _) = tool(&mut w, "actions_list", args(json!({"method": "list_workflow_jobs"})));
    assert_eq!((s, v["message"].as_str()), (422, Some("missing required parameter for method list_workflow_jobs: resource_id")));
    let (s, _, _) = tool(&mut w, "actions_list", args(json!({"method": "list_workflow_jobs", "resource_id": "ci.yml"})));
    assert_eq!(s, 422);
    let (s, v, _) = tool(&mut w, "actions_list", args(json!({"method": "list_secrets"})));
    assert_eq!((s, v["message"].as_str()), (422, Some("unknown method: list_secrets")));
    assert_eq!(tool(&mut w, "actions_list", json!({"owner": "acme", "repo": "nope", "method": "list_workflows"})).0, 404);
}

#[test]
fn actions_get_answers_each_resource_and_the_download_urls() {
    let mut w = seeded(seed());
    let run = seeded_run(&mut w);
    let (_, wf, _) = tool(&mut w, "actions_get", args(json!({"method": "get_workflow", "resource_id": "ci.yml"})));
    assert_eq!(wf["name"], "CI");
    let (_, v, _) = tool(&mut w, "actions_get", args(json!({"method": "get_workflow_run", "resource_id": run.to_string()})));
    assert_eq!((v["id"].as_u64(), v["workflow_id"].clone()), (Some(run), wf["id"].clone()));
    assert!(v.get("head_commit").is_some_and(|c| c.as_object().unwrap().len() == 1), "{v}");
    let jobs = get(&mut w, &format!("/repos/acme/api/actions/runs/{run}/jobs")).1;
    let job = jobs["jobs"][0]["id"].as_u64().unwrap();
    let (_, v, _) = tool(&mut w, "actions_get", args(json!({"method": "get_workflow_job", "resource_id": job.to_string()})));
    assert_eq!(v["id"], job);
    let art = get(&mut w, "/repos/acme/api/actions/artifacts").1["artifacts"][0]["id"].as_u64().unwrap();
    let (_, v, _) = tool(&mut w, "actions_get", args(json!({"method": "download_workflow_run_artifact", "resource_id": art.to_string()})));
    assert_eq!(v["download_url"], format!("http://h/s/ses_1/github/actions-files/acme/api/artifacts/{art}/archive"));
    assert_eq!(v["artifact_id"], art);
    let (_, v, _) = tool(&mut w, "actions_get", args(json!({"method": "get_workflow_run_logs_url", "resource_id": run.to_string()})));
    assert_eq!(v["logs_url"], format!("http://h/s/ses_1/github/actions-files/acme/api/runs/{run}/attempts/1/logs"));
    assert!(v["optimization_tip"].as_str().unwrap().contains(&format!("run_id: {run}")));
    // Two completed jobs of 12 s, billed a minute each.
    let (_, v, _) = tool(&mut w, "actions_get", args(json!({"method": "get_workflow_run_usage", "resource_id": run.to_string()})));
    assert_eq!(v["billable"]["UBUNTU"]["total_ms"], 120_000, "{v}");
    assert_eq!(v["billable"]["UBUNTU"]["jobs"], 2);
    let (s, _, _) = tool(&mut w, "actions_get", args(json!({"method": "get_workflow_run", "resource_id": "latest"})));
    assert_eq!(s, 422);
    assert_eq!(tool(&mut w, "actions_get", args(json!({"method": "get_workflow_run", "resource_id": "999999"}))).0, 404);
}

#[test]
fn actions_run_trigger_runs_reruns_cancels_and_deletes_logs_as_rest_does() {
    let mut w = seeded(seed());
    let (s, v, changes) = tool(&mut w, "actions_run_trigger", args(json!({"method": "run_workflow", "workflow_id": "ci.yml", "ref": "main", "inputs": {"reason": "check"}})));
    assert_eq!(s, 200, "{v}");
    assert_eq!(v, json!({"message": "Workflow run has been queued", "workflow_type": "workflow_file", "workflow_id": "ci.yml", "ref": "main",
                         "inputs": {"reason": "check"}, "status": "204 No Content", "status_code": 204}));
    assert_eq!(changes, ["workflow_run"]);
    let (_, runs) = get(&mut w, "/repos/acme/api/actions/runs?event=workflow_dispatch");
    let queued = runs["workflow_runs"][0]["id"].as_u64().unwrap();
    let (s, v, _) = tool(&mut w, "actions_run_trigger", args(json!({"method": "delete_workflow_run_logs", "run_id": queued})));
    assert_eq!(s, 403, "a run still going keeps its logs: {v}");
    let (s, v, _) = tool(&mut w, "actions_run_trigger", args(json!({"method": "cancel_workflow_run", "run_id": queued})));
    assert_eq!((s, v["status"].as_str(), v["message"].as_str()), (200, Some("202 Accepted"), Some("Workflow run has been cancelled")));
    assert_eq!(get(&mut w, &format!("/repos/acme/api/actions/runs/{queued}")).1["conclusion"], "cancelled");
    let (s, v, _) = tool(&mut w, "actions_run_trigger", args(json!({"method": "cancel_workflow_run", "run_id": queued})));
    assert_eq!(s, 409, "{v}");
    let failed = seeded_run(&mut w);
    let failed = if failed == queued { get(&mut w, "/repos/acme/api/actions/runs").1["workflow_runs"][1]["id"].as_u64().unwrap() } else { failed };
    let (_, v, _) = tool(&mut w, "actions_run_trigger", args(json!({"method": "delete_workflow_run_logs", "run_id": failed})));
    assert_eq!(v["status_code"], 204);
    assert_eq!(get(&mut w, &format!("/repos/acme/api/actions/runs/{failed}/logs")).0, 404, "the logs are gone");
    let (_, v, _) = tool(&mut w, "actions_run_trigger", args(json!({"method": "rerun_failed_jobs", "run_id": failed})));
    assert_eq!((v["status"].as_str(), v["run_id"].as_u64()), (Some("201 Created"), Some(failed)));
    assert_eq!(get(&mut w, &format!("/repos/acme/api/actions/runs/{failed}")).1["run_attempt"], 2);
    assert_eq!(call(&mut w, Method::Get, &format!("/repos/acme/api/actions/runs/{failed}/logs"), None).0.status, 302, "a new attempt writes new logs");
    // The vendor's own checks of the arguments.
    let (s, v, _) = tool(&mut w, "actions_run_trigger", args(json!({"method": "run_workflow", "workflow_id": "ci.yml"})));
    assert_eq!((s, v["message"].as_str()), (422, Some("ref is required for run_workflow action")));
    let (s, v, _) = tool(&mut w, "actions_run_trigger", args(json!({"method": "rerun_workflow_run"})));
    assert_eq!((s, v["message"].as_str()), (422, Some("missing required parameter: run_id")));
}

#[test]
fn the_earlier_single_purpose_tools_reach_the_same_handlers() {
    let mut w = seeded(seed());
    let run = seeded_run(&mut w);
    let (_, v, _) = tool(&mut w, "list_workflows", args(json!({"perPage": 1})));
    assert_eq!(v["total_count"], 1);
    let (_, v, _) = tool(&mut w, "list_workflow_runs", args(json!({"workflow_id": "ci.yml", "status": "failure"})));
    assert_eq!(v["workflow_runs"][0]["id"], run);
    assert!(v["workflow_runs"][0].get("repository").is_some(), "the earlier tool answered the REST run");
    let (_, v, _) = tool(&mut w, "list_workflow_jobs", args(json!({"run_id": run})));
    assert_eq!(v["jobs"]["total_count"], 2);
    assert!(v["optimization_tip"].as_str().unwrap().contains(&format!("run_id={run}")));
    let (_, v, _) = tool(&mut w, "get_workflow_run_logs", args(json!({"run_id": run})));
    assert!(v["logs_url"].as_str().unwrap().ends_with("/attempts/1/logs"));
    let (_, v, _) = tool(&mut w, "get_workflow_run_usage", args(json!({"run_id": run})));
    assert_eq!(v["billable"]["UBUNTU"]["jobs"], 2);
    let (_, v, _) = tool(&mut w, "list_workflow_run_artifacts", args(json!({"run_id": run})));
    let art = v["artifacts"][0]["id"].as_u64().unwrap();
    let (_, v, _) = tool(&mut w, "download_workflow_run_artifact", args(json!({"artifact_id": art})));
    assert_eq!(v["artifact_id"], art);
    let (_, v, changes) = tool(&mut w, "run_workflow", args(json!({"workflow_id": "ci.yml", "ref": "main"})));
    assert_eq!((v["status_code"].as_u64(), changes), (Some(204), vec!["workflow_run".to_string()]));
    let (_, v, _) = tool(&mut w, "rerun_workflow_run", args(json!({"run_id": run})));
    assert_eq!(v["message"], "Workflow run has been queued for re-run");
}

#[test]
fn get_job_logs_answers_urls_contents_and_failed_jobs() {
    let mut w = seeded(seed());
    let run = seeded_run(&mut w);
    let (s, v, _) = tool(&mut w, "get_job_logs", args(json!({"run_id": run, "failed_only": true})));
    assert_eq!(s, 200, "{v}");
    assert_eq!((v["total_jobs"].as_u64(), v["failed_jobs"].as_u64()), (Some(2), Some(1)));
    assert_eq!(v["logs"][0]["job_name"], "lint");
    assert!(v["logs"][0]["logs_url"].as_str().unwrap().contains("/actions-files/acme/api/jobs/"));
    assert_eq!(v["return_format"], json!({"content": false, "urls": true}));
    let (_, v, _) = tool(&mut w, "get_job_logs", args(json!({"run_id": run, "failed_only": true, "return_content": true, "tail_lines": 2})));
    let log = &v["logs"][0];
    assert_eq!(log["logs_content"].as_str().unwrap().lines().count(), 2);
    assert!(log["original_length"].as_u64().unwrap() > 2);
    let job = log["job_id"].as_u64().unwrap();
    let (_, v, _) = tool(&mut w, "get_job_logs", args(json!({"job_id": job, "return_content": true})));
    assert!(v["logs_content"].as_str().unwrap().contains("##[error]"), "{v}");
    assert!(v.get("job_name").is_none(), "a single job is answered without its name, as the vendor's server does");
    let (s, v, _) = tool(&mut w, "get_job_logs", args(json!({"failed_only": true})));
    assert_eq!((s, v["message"].as_str()), (422, Some("run_id is required when failed_only is true")));
    let (s, v, _) = tool(&mut w, "get_job_logs", args(json!({})));
    assert_eq!((s, v["message"].as_str()), (422, Some("job_id is required when failed_only is false")));
}

#[test]
fn gist_tools_create_update_list_and_get_as_the_rest_routes_do() {
    let mut w = seeded(seed());
    let (s, v, changes) = tool(&mut w, "create_gist", json!({"filename": "plan.md", "content": "# plan\n", "description": "release plan"}));
    assert_eq!(s, 201, "{v}");
    let id = v["id"].as_str().unwrap().to_string();
    assert_eq!(v, json!({"id": id, "url": get(&mut w, &format!("/gists/{id}")).1["html_url"]}), "the vendor's minimal answer");
    assert_eq!(changes, ["gist"]);
    let (_, g) = get(&mut w, &format!("/gists/{id}"));
    assert_eq!((g["public"].as_bool(), g["description"].as_str()), (Some(false), Some("release plan")), "secret unless public");
    assert_eq!(g["files"]["plan.md"]["content"], "# plan\n");
    let (_, v, _) = tool(&mut w, "update_gist", json!({"gist_id": id, "filename": "plan.md", "content": "# plan v2\n"}));
    assert_eq!(v["id"], id);
    let (_, g, _) = tool(&mut w, "get_gist", json!({"gist_id": id}));
    assert_eq!((g["files"]["plan.md"]["content"].as_str(), g["description"].as_str()), (Some("# plan v2\n"), Some("release plan")), "no description given: kept");
    assert_eq!(g["history"].as_array().unwrap().len(), 2);
    let (_, mine, _) = tool(&mut w, "list_gists", json!({}));
    assert_eq!(mine.as_array().unwrap().len(), 1);
    let (_, alices, _) = tool(&mut w, "list_gists", json!({"username": "alice", "perPage": 10}));
    assert_eq!(alices[0]["description"], "notes");
    let (s, _, _) = tool(&mut w, "list_gists", json!({"since": "yesterday"}));
    assert_eq!(s, 422);
    // Someone else's gist cannot be updated; a missing file name is refused before any call.
    let (s, _, changes) = tool(&mut w, "update_gist", json!({"gist_id": alices[0]["id"], "filename": "notes.md", "content": "mine now"}));
    assert_eq!((s, changes.len()), (404, 0));
    let (s, _, _) = tool(&mut w, "create_gist", json!({"content": "x"}));
    assert_eq!(s, 422);
    let state = w.state_json();
    assert_eq!(state["gists"].as_array().unwrap().len(), 2);
}
