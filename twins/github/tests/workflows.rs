//! Agent workflows end to end through the router: branch → commit → PR → review → status
//! → merge; contents with the sha guard; git data multi-file commits; releases; search;
//! permissions.

mod common;
use base64::Engine as _;
use common::*;
use pome_twin_sdk::{Twin, json};
use twin_github::World;

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

#[test]
fn branch_commit_pr_review_status_merge() {
    let mut w = world();
    let (_, main) = get(&mut w, "/repos/acme/api/git/ref/heads/main");
    let main_sha = main["object"]["sha"].as_str().unwrap().to_string();
    let (s, _) = post(&mut w, "/repos/acme/api/git/refs", json!({"ref": "refs/heads/fix", "sha": main_sha}));
    assert_eq!(s, 201);
    let (s, v) = post(&mut w, "/repos/acme/api/git/refs", json!({"ref": "refs/heads/fix", "sha": main_sha}));
    assert_eq!((s, v["message"].as_str()), (422, Some("Reference already exists")));
    let (s, v) = put(&mut w, "/repos/acme/api/contents/docs/guide.md", json!({"message": "Add guide", "content": b64("hello\n"), "branch": "fix"}));
    assert_eq!(s, 201, "{v}");
    let blob = v["content"]["sha"].as_str().unwrap().to_string();
    // Updating without the sha is refused; with a stale one is a 409.
    let (s, _) = put(&mut w, "/repos/acme/api/contents/docs/guide.md", json!({"message": "m", "content": b64("x"), "branch": "fix"}));
    assert_eq!(s, 422);
    let (s, _) = put(&mut w, "/repos/acme/api/contents/docs/guide.md", json!({"message": "m", "content": b64("x"), "branch": "fix", "sha": "0".repeat(40)}));
    assert_eq!(s, 409);
    let (s, _) = put(&mut w, "/repos/acme/api/contents/docs/guide.md", json!({"message": "Edit guide", "content": b64("hello\nworld\n"), "branch": "fix", "sha": blob}));
    assert_eq!(s, 200);
    let (s, pr) = post(&mut w, "/repos/acme/api/pulls", json!({"title": "Guide", "head": "fix", "base": "main", "body": "Fixes #1"}));
    assert_eq!(s, 201, "{pr}");
    let n = pr["number"].as_u64().unwrap();
    assert_eq!(n, 4);
    assert_eq!(pr["mergeable"], true);
    assert_eq!(pr["commits"], 2);
    let (_, files) = get(&mut w, &format!("/repos/acme/api/pulls/{n}/files"));
    assert_eq!(files[0]["filename"], "docs/guide.md");
    assert_eq!(files[0]["status"], "added");
    assert_eq!(files[0]["additions"], 2);
    // The agent cannot approve its own pull request.
    let (s, _) = post(&mut w, &format!("/repos/acme/api/pulls/{n}/reviews"), json!({"event": "APPROVE"}));
    assert_eq!(s, 422);
    let (s, rv) = post(&mut w, &format!("/repos/acme/api/pulls/{n}/reviews"), json!({"event": "COMMENT", "body": "self-check done"}));
    assert_eq!(s, 200, "{rv}");
    assert_eq!(rv["state"], "COMMENTED");
    let head = pr["head"]["sha"].as_str().unwrap().to_string();
    let (s, _) = post(&mut w, &format!("/repos/acme/api/statuses/{head}"), json!({"state": "success", "context": "ci/test"}));
    assert_eq!(s, 201);
    let (_, st) = get(&mut w, &format!("/repos/acme/api/commits/{head}/status"));
    assert_eq!(st["state"], "success");
    let (s, v) = put(&mut w, &format!("/repos/acme/api/pulls/{n}/merge"), json!({"sha": "1".repeat(40)}));
    assert_eq!((s, v["message"].as_str()), (409, Some("Head branch was modified. Review and try the merge again.")));
    let (s, v) = put(&mut w, &format!("/repos/acme/api/pulls/{n}/merge"), json!({"sha": head, "merge_method": "squash"}));
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["merged"], true);
    let (_, pr) = get(&mut w, &format!("/repos/acme/api/pulls/{n}"));
    assert_eq!(pr["merged"], true);
    assert_eq!(pr["state"], "closed");
    let (s, _) = get(&mut w, &format!("/repos/acme/api/pulls/{n}/merge"));
    assert_eq!(s, 204);
    let (s, _) = put(&mut w, &format!("/repos/acme/api/pulls/{n}/merge"), json!({}));
    assert_eq!(s, 405);
    // "Fixes #1" closed the issue.
    let (_, i) = get(&mut w, "/repos/acme/api/issues/1");
    assert_eq!(i["state"], "closed");
    let (_, f) = get(&mut w, "/repos/acme/api/contents/docs/guide.md");
    assert_eq!(f["encoding"], "base64");
    let state = w.state();
    assert_eq!(state["repositories"][0]["branches"]["main"]["files"]["docs/guide.md"], "hello\nworld\n");
}

#[test]
fn git_data_multi_file_commit_and_fast_forward_check() {
    let mut w = world();
    let (_, c) = get(&mut w, "/repos/acme/api/commits/main");
    let parent = c["sha"].as_str().unwrap().to_string();
    let tree = c["commit"]["tree"]["sha"].as_str().unwrap().to_string();
    let (s, blob) = post(&mut w, "/repos/acme/api/git/blobs", json!({"content": "print(1)\n", "encoding": "utf-8"}));
    assert_eq!(s, 201);
    let (s, t) = post(&mut w, "/repos/acme/api/git/trees", json!({"base_tree": tree, "tree": [
        {"path": "a/one.py", "mode": "100644", "type": "blob", "sha": blob["sha"]},
        {"path": "a/two.py", "mode": "100644", "type": "blob", "content": "print(2)\n"},
        {"path": "README.md", "mode": "100644", "type": "blob", "sha": null},
    ]}));
    assert_eq!(s, 201, "{t}");
    let (s, nc) = post(&mut w, "/repos/acme/api/git/commits", json!({"message": "two files", "tree": t["sha"], "parents": [parent]}));
    assert_eq!(s, 201, "{nc}");
    let (s, _) = patch(&mut w, "/repos/acme/api/git/refs/heads/main", json!({"sha": nc["sha"]}));
    assert_eq!(s, 200);
    let (_, tr) = get(&mut w, "/repos/acme/api/git/trees/main?recursive=1");
    let paths: Vec<&str> = tr["tree"].as_array().unwrap().iter().map(|e| e["path"].as_str().unwrap()).collect();
    assert_eq!(paths, vec!["a", "a/one.py", "a/two.py", "src", "src/app.py"]);
    // Moving main back is not a fast-forward.
    let (s, v) = patch(&mut w, "/repos/acme/api/git/refs/heads/main", json!({"sha": parent}));
    assert_eq!((s, v["message"].as_str()), (422, Some("Update is not a fast forward")));
    let (s, _) = patch(&mut w, "/repos/acme/api/git/refs/heads/main", json!({"sha": parent, "force": true}));
    assert_eq!(s, 200);
    let (_, cmp) = get(&mut w, &format!("/repos/acme/api/compare/{parent}...{}", nc["sha"].as_str().unwrap()));
    assert_eq!(cmp["status"], "ahead");
    assert_eq!(cmp["ahead_by"], 1);
    assert_eq!(cmp["files"].as_array().unwrap().len(), 3);
}

#[test]
fn merge_needs_push_access_and_green_required_checks() {
    let seed = json!({
        "users": [{"login": "alice"}, {"login": "pome-agent"}],
        "repositories": [{
            "owner": "acme", "name": "svc", "agent_permission": "triage",
            "collaborators": ["alice"], "required_status_checks": ["ci/test"],
            "files": [{"path": "a.txt", "content": "1\n"}, {"path": "a.txt", "content": "2\n", "branch": "f"}],
            "pull_requests": [{"number": 1, "title": "t", "head": "f", "author": "alice",
                "statuses": [{"context": "ci/test", "state": "failure"}]}],
        }, {
            "owner": "acme", "name": "red", "required_status_checks": ["ci/test"],
            "collaborators": ["alice"],
            "files": [{"path": "a.txt", "content": "1\n"}, {"path": "a.txt", "content": "2\n", "branch": "f"}],
            "pull_requests": [{"number": 1, "title": "t", "head": "f", "author": "alice",
                "statuses": [{"context": "ci/test", "state": "failure"}]}],
        }],
    });
    let mut w = seeded(seed);
    let (s, _) = put(&mut w, "/repos/acme/svc/pulls/1/merge", json!({}));
    assert_eq!(s, 403);
    let (_, pr) = get(&mut w, "/repos/acme/red/pulls/1");
    assert_eq!(pr["mergeable_state"], "blocked");
    let (s, v) = put(&mut w, "/repos/acme/red/pulls/1/merge", json!({}));
    assert_eq!(s, 405, "{v}");
    // Triage can label but not write statuses.
    let (s, _) = post(&mut w, "/repos/acme/svc/issues/1/labels", json!(["x"]));
    assert_eq!(s, 200);
    let (s, _) = post(&mut w, "/repos/acme/svc/statuses/main", json!({"state": "success"}));
    assert_eq!(s, 403);
}

#[test]
fn conflicting_pull_request_is_dirty() {
    let mut w = seeded(json!({"repositories": [{"owner": "o", "name": "r",
        "files": [{"path": "a", "content": "1"}, {"path": "a", "content": "2", "branch": "x"}],
        "pull_requests": [{"number": 1, "title": "t", "head": "x"}]}]}));
    let (_, f) = get(&mut w, "/repos/o/r/contents/a");
    put(&mut w, "/repos/o/r/contents/a", json!({"message": "m", "content": b64("3"), "sha": f["sha"]}));
    let (_, pr) = get(&mut w, "/repos/o/r/pulls/1");
    assert_eq!(pr["mergeable"], false);
    assert_eq!(pr["mergeable_state"], "dirty");
    let (s, _) = put(&mut w, "/repos/o/r/pulls/1/merge", json!({}));
    assert_eq!(s, 405);
}

#[test]
fn releases_and_search() {
    let mut w = world();
    let (s, r) = post(&mut w, "/repos/acme/api/releases", json!({"tag_name": "v1.0.0", "name": "One", "body": "notes"}));
    assert_eq!(s, 201, "{r}");
    let (s, _) = post(&mut w, "/repos/acme/api/releases", json!({"tag_name": "v1.0.0"}));
    assert_eq!(s, 422);
    let (_, l) = get(&mut w, "/repos/acme/api/releases/latest");
    assert_eq!(l["tag_name"], "v1.0.0");
    let (_, t) = get(&mut w, "/repos/acme/api/tags");
    assert_eq!(t[0]["name"], "v1.0.0");
    let (_, s) = get(&mut w, "/search/issues?q=repo:acme/api+is:issue+is:open+label:bug");
    assert_eq!(s["total_count"], 1);
    let (_, s) = get(&mut w, "/search/issues?q=repo%3Aacme%2Fapi+is%3Apr");
    assert_eq!(s["total_count"], 1);
    let (_, s) = get(&mut w, "/search/issues?q=password+in:title");
    assert_eq!(s["items"][0]["number"], 1);
    let (_, s) = get(&mut w, "/search/code?q=handler+repo:acme/api");
    assert_eq!(s["items"][0]["path"], "src/app.py");
    let (_, s) = get(&mut w, "/search/repositories?q=ACME+org:acme");
    assert_eq!(s["total_count"], 1);
    let (_, s) = get(&mut w, "/search/users?q=alice");
    assert_eq!(s["items"][0]["login"], "alice");
    let (st, _) = get(&mut w, "/search/issues");
    assert_eq!(st, 422);
}

#[test]
fn surface_is_complete_and_unique() {
    let desc = pome_twin_sdk::describe::of::<World>();
    let mut actions: Vec<&str> = desc.surface.iter().map(|r| r.action.as_str()).collect();
    let n = actions.len();
    actions.sort();
    actions.dedup();
    assert_eq!(actions.len(), n, "every route has its own action");
    assert!(n >= 100, "only {n} routes");
    let json = desc.to_json();
    for r in &desc.surface {
        assert!(json.contains(&format!("\"action\":\"{}\"", r.action)));
        assert!(r.action.contains('.'), "{}", r.action);
    }
    // Every declared route is reachable: dispatching its own pattern selects its action.
    let mut w = world();
    for r in &desc.surface {
        let path = r.path.replace("{*", "{").split('/').map(|s| if s.starts_with('{') { "x1" } else { s }).collect::<Vec<_>>().join("/");
        let method = pome_twin_sdk::Method::parse(&r.method);
        let (_, _, action) = call(&mut w, method, if path.is_empty() { "/" } else { &path }, None);
        assert_eq!(action.as_deref(), Some(r.action.as_str()), "{} {}", r.method, r.path);
    }
}

#[test]
fn diff_media_type() {
    use pome_twin_sdk::{Call, Method, Request, Twin};
    let mut w = world();
    let mut req = Request::new(Method::Get, "/repos/acme/api/pulls/3");
    req.headers.push(("accept".into(), "application/vnd.github.v3.diff".into()));
    let mut c = Call::new(req);
    let r = World::router().dispatch(&mut w, &mut c);
    let text = String::from_utf8(r.body).unwrap();
    assert!(text.starts_with("diff --git a/src/app.py b/src/app.py\nindex "), "{text}");
    assert!(text.contains("+def health():"), "{text}");
    // JSON is still JSON for the same URL (the cache keys on Accept).
    let (_, v) = get(&mut w, "/repos/acme/api/pulls/3");
    assert_eq!(v["number"], 3);
}

#[test]
fn protection_membership_and_commit_pulls() {
    let mut w = seeded(json!({
        "users": [{"login": "alice"}, {"login": "pome-agent"}, {"login": "eve"}],
        "repositories": [{"owner": "acme", "name": "api", "required_status_checks": ["ci/test"],
            "collaborators": [{"login": "alice", "permission": "admin"}, {"login": "pome-agent", "permission": "admin"}],
            "files": [{"path": "a", "content": "1"}, {"path": "a", "content": "2", "branch": "f"}],
            "pull_requests": [{"number": 1, "title": "t", "head": "f", "author": "alice"}]}]}));
    let (s, v) = get(&mut w, "/repos/acme/api/branches/main/protection");
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["required_status_checks"]["contexts"][0], "ci/test");
    let (s, _) = get(&mut w, "/repos/acme/api/branches/f/protection");
    assert_eq!(s, 404);
    let (s, _) = get(&mut w, "/orgs/acme/members/alice");
    assert_eq!(s, 204);
    let (s, _) = get(&mut w, "/orgs/acme/members/eve");
    assert_eq!(s, 404);
    let (_, orgs) = get(&mut w, "/user/orgs");
    assert_eq!(orgs[0]["login"], "acme");
    let (_, pr) = get(&mut w, "/repos/acme/api/pulls/1");
    let head = pr["head"]["sha"].as_str().unwrap().to_string();
    let (_, pulls) = get(&mut w, &format!("/repos/acme/api/commits/{head}/pulls"));
    assert_eq!(pulls[0]["number"], 1);
    let (s, v) = post(&mut w, "/repos/acme/api/merges", json!({"base": "main", "head": "f"}));
    assert_eq!(s, 201, "{v}");
    let (s, _) = post(&mut w, "/repos/acme/api/merges", json!({"base": "main", "head": "f"}));
    assert_eq!(s, 204);
    let (_, runs) = get(&mut w, "/repos/acme/api/actions/runs");
    assert_eq!(runs["total_count"], 0);
}

#[test]
fn deleting_the_head_branch_closes_the_pull_request() {
    let mut w = world();
    let (s, _) = delete(&mut w, "/repos/acme/api/git/refs/heads/add-health-check");
    assert_eq!(s, 204);
    let (_, pr) = get(&mut w, "/repos/acme/api/pulls/3");
    assert_eq!(pr["state"], "closed");
    assert_eq!(pr["merged"], false);
    assert!(pr["head"]["sha"].as_str().unwrap().len() == 40);
    let (s, _) = put(&mut w, "/repos/acme/api/pulls/3/merge", json!({}));
    assert_eq!(s, 405);
}

#[test]
fn a_seeded_red_check_gates_the_merge_until_it_is_green() {
    // Task 18's shape: the PR's failing `ci/test` is a required check.
    let mut w = seeded(json!({"repositories": [{"owner": "acme", "name": "api", "collaborators": ["alice", "pome-agent"],
        "files": [{"path": "a", "content": "1"}, {"path": "a", "content": "2", "branch": "f"}],
        "pull_requests": [{"number": 1, "title": "t", "head": "f", "author": "alice",
            "statuses": [{"context": "ci/test", "state": "failure"}]}]}]}));
    let (_, pr) = get(&mut w, "/repos/acme/api/pulls/1");
    assert_eq!(pr["mergeable_state"], "blocked");
    let (s, v) = put(&mut w, "/repos/acme/api/pulls/1/merge", json!({}));
    assert_eq!(s, 405);
    assert_eq!(v["message"], "Required status check \"ci/test\" is failing.");
    let head = pr["head"]["sha"].as_str().unwrap().to_string();
    post(&mut w, &format!("/repos/acme/api/statuses/{head}"), json!({"state": "success", "context": "ci/test"}));
    let (s, _) = put(&mut w, "/repos/acme/api/pulls/1/merge", json!({}));
    assert_eq!(s, 200);
    // `required_status_checks: []` turns the gate off.
    let mut w = seeded(json!({"repositories": [{"owner": "acme", "name": "api", "required_status_checks": [],
        "files": [{"path": "a", "content": "1"}, {"path": "a", "content": "2", "branch": "f"}],
        "pull_requests": [{"number": 1, "title": "t", "head": "f", "statuses": [{"context": "ci/test", "state": "failure"}]}]}]}));
    let (s, _) = put(&mut w, "/repos/acme/api/pulls/1/merge", json!({}));
    assert_eq!(s, 200);
}

/// A tool of GitHub's MCP server, called as the MCP door calls it: its declaration turns the
/// arguments into the twin's request, which runs through the real router.
fn tool(w: &mut World, name: &str, args: serde_json::Value) -> (u16, serde_json::Value) {
    let decl = twin_github::tools::tools().into_iter().find(|t| t.name == name).unwrap_or_else(|| panic!("{name} is declared"));
    let req = decl.request(args.as_object().unwrap()).unwrap();
    let method = match req.method.as_str() {
        "GET" => pome_twin_sdk::Method::Get,
        "POST" => pome_twin_sdk::Method::Post,
        m => panic!("{name}: unexpected method {m}"),
    };
    let path = if req.query.is_empty() { req.path } else { format!("{}?{}", req.path, req.query) };
    let body = (!req.body.is_empty()).then(|| serde_json::from_slice(&req.body).unwrap());
    let (r, v, _) = call(w, method, &path, body);
    (r.status, v)
}

#[test]
fn the_mcp_servers_composite_tools_branch_write_push_and_report_status() {
    let mut w = world();
    let (s, v) = tool(&mut w, "create_branch", json!({"owner": "acme", "repo": "api", "branch": "docs"}));
    assert_eq!((s, v["ref"].as_str()), (201, Some("refs/heads/docs")), "{v}");
    let (s, v) = tool(&mut w, "create_branch", json!({"owner": "acme", "repo": "api", "branch": "x", "from_branch": "nope"}));
    assert_eq!(s, 404, "a missing source branch is named: {v}");

    // The file's text goes in as text; the twin stores what GitHub would.
    let (s, v) = tool(&mut w, "create_or_update_file", json!({"owner": "acme", "repo": "api", "path": "docs/a.md", "content": "hello\n", "message": "Add a", "branch": "docs"}));
    assert_eq!(s, 201, "{v}");
    let blob = v["content"]["sha"].as_str().unwrap().to_string();
    let (_, got) = get(&mut w, "/repos/acme/api/contents/docs/a.md?ref=docs");
    assert_eq!(got["content"].as_str().map(|c| c.replace('\n', "")), Some(b64("hello\n")));
    let (s, _) = tool(&mut w, "create_or_update_file", json!({"owner": "acme", "repo": "api", "path": "docs/a.md", "content": "bye\n", "message": "Edit a", "branch": "docs"}));
    assert_eq!(s, 422, "updating needs the blob sha, as the REST route does");
    let (s, _) = tool(&mut w, "create_or_update_file", json!({"owner": "acme", "repo": "api", "path": "docs/a.md", "content": "bye\n", "message": "Edit a", "branch": "docs", "sha": blob}));
    assert_eq!(s, 200);

    // Two files, one commit, the ref moved.
    let (_, before) = get(&mut w, "/repos/acme/api/git/ref/heads/docs");
    let (s, v) = tool(&mut w, "push_files", json!({"owner": "acme", "repo": "api", "branch": "docs", "message": "Two files",
        "files": [{"path": "docs/b.md", "content": "b"}, {"path": "src/c.rs", "content": "fn c() {}"}]}));
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["ref"], "refs/heads/docs");
    assert_ne!(v["object"]["sha"], before["object"]["sha"]);
    let (_, commit) = get(&mut w, &format!("/repos/acme/api/commits/{}", v["object"]["sha"].as_str().unwrap()));
    assert_eq!(commit["commit"]["message"], "Two files");
    assert_eq!(commit["files"].as_array().map(Vec::len), Some(2), "{commit}");
    let (s, _) = tool(&mut w, "push_files", json!({"owner": "acme", "repo": "api", "branch": "gone", "message": "m", "files": [{"path": "a", "content": "a"}]}));
    assert_eq!(s, 404);

    // The status of a pull request is its head commit's combined status.
    let (_, pr) = post(&mut w, "/repos/acme/api/pulls", json!({"title": "Docs", "head": "docs", "base": "main"}));
    let n = pr["number"].as_u64().unwrap();
    let head = pr["head"]["sha"].as_str().unwrap().to_string();
    post(&mut w, &format!("/repos/acme/api/statuses/{head}"), json!({"state": "failure", "context": "ci/test"}));
    let (s, v) = tool(&mut w, "get_pull_request_status", json!({"owner": "acme", "repo": "api", "pullNumber": n}));
    assert_eq!((s, v["state"].as_str(), v["sha"].as_str()), (200, Some("failure"), Some(head.as_str())), "{v}");
    let (s, _) = tool(&mut w, "get_pull_request_status", json!({"owner": "acme", "repo": "api", "pullNumber": 999}));
    assert_eq!(s, 404);
}
