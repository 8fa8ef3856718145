//! The issue-2 slice: users, repositories, issues, comments and labels.

mod common;
use common::*;
use pome_twin_sdk::{Method, json};

#[test]
fn authenticated_user_is_the_agent() {
    let mut w = world();
    let (s, v) = get(&mut w, "/user");
    assert_eq!(s, 200);
    assert_eq!(v["login"], "pome-agent");
    assert_eq!(v["url"], "http://h/s/ses_1/github/users/pome-agent");
}

#[test]
fn repo_get_and_missing_repo() {
    let mut w = world();
    let (s, v) = get(&mut w, "/repos/acme/api");
    assert_eq!(s, 200);
    assert_eq!(v["full_name"], "acme/api");
    assert_eq!(v["default_branch"], "main");
    assert_eq!(v["owner"]["type"], "Organization");
    let (s, v) = get(&mut w, "/repos/acme/nope");
    assert_eq!(s, 404);
    assert_eq!(v, json!({"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}));
}

#[test]
fn issue_one_is_open_and_headers_are_githubs() {
    let mut w = world();
    let (r, v, action) = call(&mut w, Method::Get, "/repos/acme/api/issues/1", None);
    assert_eq!(r.status, 200);
    assert_eq!(action.as_deref(), Some("issues.get"));
    assert_eq!(v["state"], "open");
    assert_eq!(v["number"], 1);
    for h in ["x-github-request-id", "x-ratelimit-limit", "x-ratelimit-remaining", "x-github-media-type"] {
        assert!(r.header(h).is_some(), "missing {h}");
    }
}

#[test]
fn create_update_close_with_reason() {
    let mut w = world();
    let (s, v) = post(&mut w, "/repos/acme/api/issues", json!({"title": "New", "body": "b", "labels": ["bug"], "assignees": ["alice"]}));
    assert_eq!(s, 201, "{v}");
    let n = v["number"].as_u64().unwrap();
    assert_eq!(n, 4);
    assert_eq!(v["labels"][0]["name"], "bug");
    assert_eq!(v["assignee"]["login"], "alice");
    let (s, v) = patch(&mut w, &format!("/repos/acme/api/issues/{n}"), json!({"state": "closed", "state_reason": "not_planned"}));
    assert_eq!(s, 200);
    assert_eq!(v["state"], "closed");
    assert_eq!(v["state_reason"], "not_planned");
    assert_eq!(v["closed_by"]["login"], "pome-agent");
    let (s, v) = post(&mut w, "/repos/acme/api/issues", json!({"body": "no title"}));
    assert_eq!(s, 422);
    assert_eq!(v["message"], "Validation Failed");
    assert_eq!(v["errors"][0], json!({"resource": "Issue", "field": "title", "code": "missing_field"}));
    let (s, v) = post(&mut w, "/repos/acme/api/issues", json!({"title": "x", "assignees": ["nobody-here"]}));
    assert_eq!(s, 422, "{v}");
}

#[test]
fn list_filters_and_link_pagination() {
    let mut w = world();
    for i in 0..40 {
        post(&mut w, "/repos/acme/api/issues", json!({"title": format!("t{i}")}));
    }
    let (r, v, _) = call(&mut w, Method::Get, "/repos/acme/api/issues", None);
    assert_eq!(v.as_array().unwrap().len(), 30);
    assert_eq!(v[0]["title"], "t39");
    let link = r.header("link").unwrap();
    assert!(link.contains("<http://h/s/ses_1/github/repos/acme/api/issues?page=2>; rel=\"next\""), "{link}");
    let (_, v) = get(&mut w, "/repos/acme/api/issues?page=2");
    // 40 new + #1 + PR #3 open = 42 open.
    assert_eq!(v.as_array().unwrap().len(), 12);
    let (_, v) = get(&mut w, "/repos/acme/api/issues?state=closed");
    assert_eq!(v.as_array().unwrap().len(), 1);
    let (_, v) = get(&mut w, "/repos/acme/api/issues?labels=bug&state=all");
    assert_eq!(v.as_array().unwrap().len(), 1);
    let (_, v) = get(&mut w, "/repos/acme/api/issues?per_page=500");
    assert_eq!(v.as_array().unwrap().len(), 42);
    let (s, _) = get(&mut w, "/repos/acme/api/issues?state=bogus");
    assert_eq!(s, 422);
}

#[test]
fn comments_and_labels() {
    let mut w = world();
    let (s, v) = post(&mut w, "/repos/acme/api/issues/1/comments", json!({"body": "on it"}));
    assert_eq!(s, 201);
    assert_eq!(v["user"]["login"], "pome-agent");
    let (_, v) = get(&mut w, "/repos/acme/api/issues/1/comments");
    assert_eq!(v.as_array().unwrap().len(), 1);
    let (_, v) = get(&mut w, "/repos/acme/api/issues/1");
    assert_eq!(v["comments"], 1);
    // PyGithub sends a bare array.
    let (s, v) = post(&mut w, "/repos/acme/api/issues/1/labels", json!(["question"]));
    assert_eq!(s, 200);
    assert_eq!(v.as_array().unwrap().len(), 2);
    let (s, _) = delete(&mut w, "/repos/acme/api/issues/1/labels/bug");
    assert_eq!(s, 200);
    let (s, v) = delete(&mut w, "/repos/acme/api/issues/1/labels/bug");
    assert_eq!(s, 404);
    assert_eq!(v["message"], "Label does not exist");
    let (_, v) = get(&mut w, "/repos/acme/api/issues/1/labels");
    assert_eq!(v[0]["name"], "question");
    let (s, _) = delete(&mut w, "/repos/acme/api/labels/good%20first%20issue");
    assert_eq!(s, 204);
}

#[test]
fn unsupported_route_is_a_loud_501() {
    let mut w = world();
    let (r, v, _) = call(&mut w, Method::Get, "/repos/acme/api/pages", None);
    assert_eq!(r.status, 501);
    assert_eq!(v["fidelity"], "unsupported");
}

#[test]
fn milestone_progress_and_open_count_follow_writes() {
    let mut w = world();
    let (_, v) = post(&mut w, "/repos/acme/api/issues", json!({"title": "m", "milestone": 1}));
    assert_eq!(v["milestone"]["open_issues"], 1);
    let n = v["number"].as_u64().unwrap();
    let (_, v) = patch(&mut w, &format!("/repos/acme/api/issues/{n}"), json!({"state": "closed"}));
    assert_eq!(v["milestone"]["open_issues"], 0);
    assert_eq!(v["milestone"]["closed_issues"], 1);
    let (_, r) = get(&mut w, "/repos/acme/api");
    assert_eq!(r["open_issues_count"], 2); // issue #1 and pull request #3
}

#[test]
fn auth_and_host_errors_are_githubs() {
    use pome_twin_sdk::{Auth, Call, HostError, HostErrorKind, Method, Request, Twin};
    let mut req = Request::new(Method::Get, "/user");
    req.auth = Auth::Missing;
    let r = twin_github::World::auth_error(&Call::new(req.clone()));
    assert_eq!((r.status, r.json_body()["message"].as_str()), (401, Some("Requires authentication")));
    req.auth = Auth::Invalid;
    let r = twin_github::World::auth_error(&Call::new(req));
    assert_eq!((r.status, r.json_body()["message"].as_str()), (401, Some("Bad credentials")));
    let r = twin_github::World::host_error(&HostError { kind: HostErrorKind::RateLimited, message: "slow down".into() });
    assert_eq!(r.status, 429);
    assert_eq!(r.json_body(), json!({"message": "slow down", "documentation_url": "https://docs.github.com/rest"}));
}

#[test]
fn tracked_counts_match_a_recount() {
    let mut w = world();
    for i in 0..5 {
        post(&mut w, "/repos/acme/api/issues", json!({"title": format!("t{i}"), "milestone": 1}));
    }
    patch(&mut w, "/repos/acme/api/issues/4", json!({"state": "closed"}));
    patch(&mut w, "/repos/acme/api/issues/5", json!({"milestone": null}));
    patch(&mut w, "/repos/acme/api/issues/6", json!({"state": "closed", "milestone": null}));
    patch(&mut w, "/repos/acme/api/issues/4", json!({"state": "open"}));
    patch(&mut w, "/repos/acme/api/issues/1", json!({"milestone": 1, "state": "closed"}));
    put(&mut w, "/repos/acme/api/pulls/3/merge", json!({}));
    let repo = &w.repos["acme/api"];
    let mut fresh = repo.clone();
    fresh.recount();
    assert_eq!(repo.open_issues, fresh.open_issues);
    let counts = |r: &twin_github::model::Repo| r.milestones.values().map(|m| (m.open_issues, m.closed_issues)).collect::<Vec<_>>();
    assert_eq!(counts(repo), counts(&fresh));
    assert_eq!(fresh.open_issues, 4);
}
