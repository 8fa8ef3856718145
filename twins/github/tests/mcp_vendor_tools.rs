//! GitHub's MCP server's tools, called exactly as the host calls them: the tool's declaration
//! (`tools.json`) turns the arguments into a request, which goes through the real router.
//! Each test checks the answer and what the call changed in the world.

mod common;
use common::*;
use pome_twin_sdk::{Call, Method, Request, Twin, Value, json};
use twin_github::World;

fn rest_changes(w: &mut World, method: Method, path: &str, body: Value) -> Vec<String> {
    let mut req = Request::new(method, path).with_json(&body);
    req.base_url = "http://h/s/ses_1/github".into();
    let mut c = Call::new(req);
    let r = World::router().dispatch(w, &mut c);
    assert!(r.status < 300, "{}", String::from_utf8_lossy(&r.body));
    c.changes.iter().map(|x| x.entity.clone()).collect()
}

fn fields_seed() -> Value {
    let mut seed: Value = serde_json::from_str(twin_github::seed::DEFAULT_SEED).unwrap();
    seed["issue_fields"] = json!([
        {"org": "acme", "name": "Priority", "type": "single_select", "options": ["P0", "P1", "P2"]},
        {"org": "acme", "name": "Estimate", "type": "number"},
        {"org": "acme", "name": "Due", "type": "date"}
    ]);
    seed["teams"] = json!([
        {"org": "acme", "name": "Platform Team", "members": ["alice", "pome-agent"]},
        {"org": "acme", "name": "Security", "privacy": "secret", "members": ["bob"]}
    ]);
    seed
}

#[test]
fn issue_write_creates_and_updates_as_the_rest_calls_do() {
    let mut w = world();
    let (s, v, changes) = tool(&mut w, "issue_write", json!({"method": "create", "owner": "acme", "repo": "api", "title": "Flaky test", "body": "It fails", "labels": ["bug"], "assignees": ["alice"], "type": "Bug"}));
    assert_eq!(s, 201, "{v}");
    assert_eq!(v["url"], "http://h/s/ses_1/github/acme/api/issues/4");
    // The same entities change as through `POST /issues` (plus the issue type it sets).
    let mut twin = world();
    let rest = rest_changes(&mut twin, Method::Post, "/repos/acme/api/issues", json!({"title": "Flaky test", "body": "It fails", "labels": ["bug"], "assignees": ["alice"], "type": "Bug"}));
    assert_eq!(changes, rest);
    assert_eq!(w.state_json()["repositories"][0], twin.state_json()["repositories"][0]);
    let (_, got, _) = tool(&mut w, "issue_read", json!({"method": "get", "owner": "acme", "repo": "api", "issue_number": 4}));
    assert_eq!((got["title"].as_str(), got["issue_type"].as_str()), (Some("Flaky test"), Some("Bug")));
    assert_eq!((got["assignees"].clone(), got["labels"].clone(), got["state"].as_str()), (json!(["alice"]), json!(["bug"]), Some("open")));
    assert_eq!(got["user"]["login"], "pome-agent");
    assert_eq!(got["closed_by_pull_requests"], json!({"total_count": 0, "references": []}));
    // An unknown type is refused; null clears it.
    let (s, _, _) = tool(&mut w, "issue_write", json!({"method": "update", "owner": "acme", "repo": "api", "issue_number": 4, "type": "Epic"}));
    assert_eq!(s, 422);
    let (s, _, _) = tool(&mut w, "issue_write", json!({"method": "update", "owner": "acme", "repo": "api", "issue_number": 4, "type": null}));
    assert_eq!(s, 200);
    assert_eq!(w.state_json()["repositories"][0]["issues"][2]["type"], Value::Null);
    // Closing as a duplicate needs duplicate_of, and records the marker.
    let (s, _, _) = tool(&mut w, "issue_write", json!({"method": "update", "owner": "acme", "repo": "api", "issue_number": 4, "state": "closed", "state_reason": "duplicate"}));
    assert_eq!(s, 422);
    let (s, v, _) = tool(&mut w, "issue_write", json!({"method": "update", "owner": "acme", "repo": "api", "issue_number": 4, "state": "closed", "state_reason": "duplicate", "duplicate_of": 1}));
    assert_eq!(s, 200, "{v}");
    let st = w.state_json();
    let issue = &st["repositories"][0]["issues"][2];
    assert_eq!((issue["state"].as_str(), issue["state_reason"].as_str()), (Some("closed"), Some("duplicate")));
    assert!(st["repositories"][0]["events"].as_array().unwrap().iter().any(|e| e["event"] == "marked_as_duplicate" && e["detail"] == "acme/api#1"));
    // Creating needs a title.
    let (s, _, _) = tool(&mut w, "issue_write", json!({"method": "create", "owner": "acme", "repo": "api"}));
    assert_eq!(s, 422);
}

#[test]
fn issue_fields_are_validated_set_cleared_listed_and_filtered() {
    let mut w = seeded(fields_seed());
    let (s, fields, _) = tool(&mut w, "list_issue_fields", json!({"owner": "acme", "repo": "api"}));
    assert_eq!(s, 200);
    let names: Vec<&str> = fields.as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["Priority", "Estimate", "Due"]);
    assert_eq!(fields[0]["options"][1]["name"], "P1");
    let set = |n: u64, f: Value| json!({"method": "update", "owner": "acme", "repo": "api", "issue_number": n, "issue_fields": f});
    for bad in [
        json!([{"field_name": "Severity", "value": "x"}]),
        json!([{"field_name": "Priority", "field_option_name": "P9"}]),
        json!([{"field_name": "Estimate", "value": "lots"}]),
        json!([{"field_name": "Due", "value": "2026-13-01"}]),
        json!([{"field_name": "Priority", "field_option_name": "P1", "delete": true}]),
        json!([{"field_name": "Estimate", "field_option_name": "P1"}]),
    ] {
        let (s, v, changes) = tool(&mut w, "issue_write", set(1, bad.clone()));
        assert_eq!(s, 422, "{bad}: {v}");
        assert!(changes.is_empty(), "a refused call changes nothing");
    }
    let (s, v, changes) = tool(&mut w, "issue_write", set(1, json!([{"field_name": "priority", "field_option_name": "p1"}, {"field_name": "Estimate", "value": 3}, {"field_name": "Due", "value": "2026-12-24"}])));
    assert_eq!(s, 200, "{v}");
    assert_eq!(changes, ["issue_field_value", "issue_field_value", "issue_field_value"]);
    let (_, got, _) = tool(&mut w, "issue_read", json!({"method": "get", "owner": "acme", "repo": "api", "issue_number": 1}));
    assert_eq!(got["field_values"], json!([
        {"field": "Priority", "value": "P1"},
        {"field": "Estimate", "value": "3"},
        {"field": "Due", "value": "2026-12-24"}
    ]));
    let (_, list, _) = tool(&mut w, "list_issues", json!({"owner": "acme", "repo": "api", "field_filters": [{"field_name": "Priority", "value": "P1"}], "fields": ["number", "field_values"]}));
    assert_eq!(list["totalCount"], 1);
    assert_eq!(list["issues"][0]["number"], 1);
    assert_eq!(list["issues"][0].as_object().unwrap().len(), 2);
    let (_, none, _) = tool(&mut w, "list_issues", json!({"owner": "acme", "repo": "api", "field_filters": [{"field_name": "Priority", "value": "P0"}]}));
    assert_eq!(none["totalCount"], 0);
    let (s, _, _) = tool(&mut w, "list_issues", json!({"owner": "acme", "repo": "api", "field_filters": [{"field_name": "Nope", "value": "1"}]}));
    assert_eq!(s, 422);
    // Clearing removes the value.
    let (s, _, changes) = tool(&mut w, "issue_write", set(1, json!([{"field_name": "Priority", "delete": true}])));
    assert_eq!((s, changes.len()), (200, 1));
    let (_, got, _) = tool(&mut w, "issue_read", json!({"method": "get", "owner": "acme", "repo": "api", "issue_number": 1}));
    assert_eq!(got["field_values"].as_array().unwrap().len(), 2);
    // A user's repositories have neither issue types nor issue fields.
    let (s, _, _) = tool(&mut w, "list_issue_fields", json!({"owner": "alice"}));
    assert_eq!(s, 422);
    let (s, types, _) = tool(&mut w, "list_issue_types", json!({"owner": "acme"}));
    assert_eq!(s, 200);
    assert_eq!(types.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect::<Vec<_>>(), ["Task", "Bug", "Feature"]);
    assert_eq!(tool(&mut w, "list_issue_types", json!({"owner": "acme", "repo": "api"})).1, types);
    assert_eq!(tool(&mut w, "list_issue_types", json!({"owner": "alice"})).0, 404, "a user has no organization issue types");
}

#[test]
fn sub_issues_are_added_ordered_moved_and_removed() {
    let mut w = world();
    let mk = |w: &mut World, t: &str| {
        let (_, v, _) = tool(w, "issue_write", json!({"method": "create", "owner": "acme", "repo": "api", "title": t}));
        v["id"].as_str().unwrap().parse::<u64>().unwrap()
    };
    let (a, b, c) = (mk(&mut w, "a"), mk(&mut w, "b"), mk(&mut w, "c"));
    let add = |n: u64, id: u64| json!({"method": "add", "owner": "acme", "repo": "api", "issue_number": n, "sub_issue_id": id});
    for id in [a, b, c] {
        let (s, v, changes) = tool(&mut w, "sub_issue_write", add(1, id));
        assert_eq!(s, 201, "{v}");
        assert_eq!(changes, ["sub_issue"]);
    }
    let titles = |w: &mut World| {
        let (_, v, _) = tool(w, "issue_read", json!({"method": "get_sub_issues", "owner": "acme", "repo": "api", "issue_number": 1}));
        v.as_array().unwrap().iter().map(|i| i["title"].as_str().unwrap().to_string()).collect::<Vec<_>>()
    };
    assert_eq!(titles(&mut w), ["a", "b", "c"]);
    let (s, _, _) = tool(&mut w, "sub_issue_write", json!({"method": "reprioritize", "owner": "acme", "repo": "api", "issue_number": 1, "sub_issue_id": c, "before_id": a}));
    assert_eq!(s, 200);
    assert_eq!(titles(&mut w), ["c", "a", "b"]);
    let (s, _, _) = tool(&mut w, "sub_issue_write", json!({"method": "reprioritize", "owner": "acme", "repo": "api", "issue_number": 1, "sub_issue_id": c, "after_id": b}));
    assert_eq!(s, 200);
    assert_eq!(titles(&mut w), ["a", "b", "c"]);
    // One parent only, unless replaced; no cycles.
    let (s, _, _) = tool(&mut w, "sub_issue_write", add(2, a));
    assert_eq!(s, 422);
    let issue1 = w.repos["acme/api"].issues[&1].id;
    let (s, _, _) = tool(&mut w, "sub_issue_write", add(4, issue1));
    assert_eq!(s, 422, "issue 4 is a sub-issue of 1, so 1 cannot go under it");
    let (s, _, changes) = tool(&mut w, "sub_issue_write", json!({"method": "add", "owner": "acme", "repo": "api", "issue_number": 2, "sub_issue_id": a, "replace_parent": true}));
    assert_eq!((s, changes), (201, vec!["sub_issue".to_string(), "sub_issue".to_string()]));
    let (_, p, _) = tool(&mut w, "issue_read", json!({"method": "get_parent", "owner": "acme", "repo": "api", "issue_number": 4}));
    assert_eq!(p["parent"]["number"], 2);
    assert_eq!(p["parent"]["repository"], "acme/api");
    let (_, none, _) = tool(&mut w, "issue_read", json!({"method": "get_parent", "owner": "acme", "repo": "api", "issue_number": 1}));
    assert_eq!(none, json!({"parent": null}));
    assert_eq!(tool(&mut w, "issue_read", json!({"method": "get_parent", "owner": "acme", "repo": "api", "issue_number": 99})).0, 404);
    let (_, got, _) = tool(&mut w, "issue_read", json!({"method": "get", "owner": "acme", "repo": "api", "issue_number": 1}));
    assert_eq!((got["has_children"].as_bool(), got["sub_issues_summary"]["total"].as_u64()), (Some(true), Some(2)));
    let (s, _, _) = tool(&mut w, "sub_issue_write", json!({"method": "remove", "owner": "acme", "repo": "api", "issue_number": 1, "sub_issue_id": b}));
    assert_eq!(s, 200);
    assert_eq!(titles(&mut w), ["c"]);
    assert_eq!(w.state_json()["repositories"][0]["issues"][0]["sub_issues"], json!(["acme/api#6"]));
    // A pull request cannot be a sub-issue.
    let pr = w.repos["acme/api"].issues[&3].id;
    let (s, _, _) = tool(&mut w, "sub_issue_write", add(1, pr));
    assert_eq!(s, 422);
}

#[test]
fn pending_reviews_comments_threads_and_replies() {
    let mut w = world();
    let pr = |m: &str| json!({"method": m, "owner": "acme", "repo": "api", "pullNumber": 3});
    let (s, _, _) = tool(&mut w, "add_comment_to_pending_review", json!({"owner": "acme", "repo": "api", "pullNumber": 3, "path": "src/app.py", "body": "x", "subjectType": "FILE"}));
    assert_eq!(s, 422, "no pending review yet");
    let (s, rv, _) = tool(&mut w, "pull_request_review_write", pr("create"));
    assert_eq!((s, rv.as_str()), (200, Some("pending pull request created")));
    let reviews = |w: &World| w.repos["acme/api"].issues[&3].pull.as_ref().unwrap().reviews.iter().map(|r| (r.state.clone(), r.body.clone())).collect::<Vec<_>>();
    assert_eq!(reviews(&w), [("PENDING".to_string(), String::new())]);
    let (s, c, changes) = tool(&mut w, "add_comment_to_pending_review", json!({"owner": "acme", "repo": "api", "pullNumber": 3, "path": "src/app.py", "body": "Return a dict?", "subjectType": "LINE", "line": 6, "side": "RIGHT"}));
    assert_eq!((s, changes), (200, vec!["review_comment".to_string()]), "{c}");
    assert_eq!(c, "pull request review comment successfully added to pending review");
    // A pending review's comments are the viewer's own until it is submitted.
    assert_eq!(w.repos["acme/api"].review_comments.values().next().unwrap().review_id, w.repos["acme/api"].issues[&3].pull.as_ref().unwrap().reviews[0].id.into());
    let (s, _, _) = tool(&mut w, "add_comment_to_pending_review", json!({"owner": "acme", "repo": "api", "pullNumber": 3, "path": "README.md", "body": "x", "subjectType": "FILE"}));
    assert_eq!(s, 422, "README.md is not changed by the pull request");
    let mut submit = pr("submit_pending");
    submit["event"] = json!("COMMENT");
    submit["body"] = json!("One question");
    let (s, rv, _) = tool(&mut w, "pull_request_review_write", submit.clone());
    assert_eq!((s, rv.as_str()), (200, Some("pending pull request review successfully submitted")), "{rv}");
    assert_eq!(reviews(&w), [("COMMENTED".to_string(), "One question".to_string())]);
    let (s, _, _) = tool(&mut w, "pull_request_review_write", submit);
    assert_eq!(s, 422, "nothing is pending any more");
    let (_, threads, _) = tool(&mut w, "pull_request_read", pr("get_review_comments"));
    assert_eq!(threads["totalCount"], 1);
    let t = &threads["reviewThreads"][0];
    assert_eq!((t["isResolved"].as_bool(), t["comments"][0]["body"].as_str()), (Some(false), Some("Return a dict?")));
    let thread = t["id"].as_str().unwrap().to_string();
    assert!(thread.starts_with("PRRT_"));
    let cid = t["comments"][0]["id"].as_u64().unwrap();
    let (s, v, _) = tool(&mut w, "add_reply_to_pull_request_comment", json!({"owner": "acme", "repo": "api", "pullNumber": 3, "commentId": cid, "body": "Yes", "reaction": "+1"}));
    assert_eq!(s, 201, "{v}");
    let reply_id: u64 = v["comment"]["id"].as_str().unwrap().parse().unwrap();
    assert_eq!(w.repos["acme/api"].review_comments[&reply_id].in_reply_to, Some(cid));
    assert!(v["reaction"]["url"].as_str().unwrap().ends_with(&format!("/repos/acme/api/pulls/comments/{cid}/reactions/{}", v["reaction"]["id"].as_str().unwrap())));
    assert_eq!(w.state_json()["repositories"][0]["review_comments"][0]["reactions"], json!([{"user": "pome-agent", "content": "+1"}]));
    let (s, _, _) = tool(&mut w, "add_reply_to_pull_request_comment", json!({"owner": "acme", "repo": "api", "commentId": cid, "body": "no pull number"}));
    assert_eq!(s, 422);
    let (_, threads, _) = tool(&mut w, "pull_request_read", pr("get_review_comments"));
    assert_eq!(threads["reviewThreads"][0]["totalCount"], 2);
    let mut resolve = pr("resolve_thread");
    resolve["threadId"] = json!(thread);
    let (s, _, changes) = tool(&mut w, "pull_request_review_write", resolve.clone());
    assert_eq!((s, changes.len()), (200, 1));
    let (_, _, changes) = tool(&mut w, "pull_request_review_write", resolve.clone());
    assert!(changes.is_empty(), "resolving a resolved thread is a no-op");
    let (_, threads, _) = tool(&mut w, "pull_request_read", pr("get_review_comments"));
    assert_eq!(threads["reviewThreads"][0]["isResolved"], true);
    resolve["method"] = json!("unresolve_thread");
    let (s, _, changes) = tool(&mut w, "pull_request_review_write", resolve);
    assert_eq!((s, changes.len()), (200, 1));
    let mut bad = pr("resolve_thread");
    bad["threadId"] = json!("PRRT_nope");
    assert_eq!(tool(&mut w, "pull_request_review_write", bad).0, 404);
    // A pending review can be deleted with its comments.
    tool(&mut w, "pull_request_review_write", pr("create"));
    let (s, _, changes) = tool(&mut w, "pull_request_review_write", pr("delete_pending"));
    assert_eq!((s, changes), (200, vec!["review".to_string()]));
}

#[test]
fn pull_request_read_methods() {
    let mut w = world();
    let read = |w: &mut World, m: &str| tool(w, "pull_request_read", json!({"method": m, "owner": "acme", "repo": "api", "pullNumber": 3}));
    assert_eq!(read(&mut w, "get").1["title"], "Add a health check");
    let diff = read(&mut w, "get_diff").1;
    assert!(diff.as_str().unwrap().contains("+def health():"), "{diff}");
    assert_eq!(read(&mut w, "get_status").1["state"], "success");
    assert_eq!(read(&mut w, "get_files").1[0]["filename"], "src/app.py");
    assert_eq!(read(&mut w, "get_commits").1.as_array().unwrap().len(), 1);
    assert_eq!(read(&mut w, "get_reviews").1, json!([]));
    assert_eq!(read(&mut w, "get_comments").1, json!([]));
    assert_eq!(read(&mut w, "get_check_runs").1["total_count"], 0);
}

#[test]
fn list_issues_pages_with_cursors_and_projects_fields() {
    let mut w = world();
    for t in ["c1", "c2", "c3"] {
        tool(&mut w, "issue_write", json!({"method": "create", "owner": "acme", "repo": "api", "title": t}));
    }
    let page = |w: &mut World, after: Option<&str>| {
        let mut a = json!({"owner": "acme", "repo": "api", "perPage": 2, "fields": ["number", "title"], "orderBy": "CREATED_AT", "direction": "ASC"});
        if let Some(c) = after {
            a["after"] = json!(c);
        }
        tool(w, "list_issues", a).1
    };
    let p1 = page(&mut w, None);
    assert_eq!(p1["totalCount"], 5);
    assert_eq!(p1["issues"], json!([{"number": 1, "title": "Login returns 500 on wrong password"}, {"number": 2, "title": "Document the rate limits"}]));
    assert_eq!(p1["pageInfo"]["hasNextPage"], true);
    let p2 = page(&mut w, p1["pageInfo"]["endCursor"].as_str());
    assert_eq!(p2["issues"].as_array().unwrap().iter().map(|i| i["number"].as_u64().unwrap()).collect::<Vec<_>>(), [4, 5]);
    let p3 = page(&mut w, p2["pageInfo"]["endCursor"].as_str());
    assert_eq!((p3["issues"][0]["number"].as_u64(), p3["pageInfo"]["hasNextPage"].as_bool()), (Some(6), Some(false)));
    let closed = tool(&mut w, "list_issues", json!({"owner": "acme", "repo": "api", "state": "CLOSED"})).1;
    assert_eq!((closed["totalCount"].as_u64(), closed["issues"][0]["number"].as_u64()), (Some(1), Some(2)));
    assert_eq!(tool(&mut w, "list_issues", json!({"owner": "acme", "repo": "api", "after": "junk"})).0, 422);
}

#[test]
fn teams_and_copilot() {
    let mut w = seeded(fields_seed());
    let (s, teams, _) = tool(&mut w, "get_teams", json!({}));
    assert_eq!(s, 200);
    assert_eq!(teams, json!([{"org": "acme", "teams": [{"name": "Platform Team", "slug": "platform-team", "description": ""}]}]));
    assert_eq!(tool(&mut w, "get_team_members", json!({"org": "acme", "team_slug": "platform-team"})).1, json!(["alice", "pome-agent"]));
    // A secret team the viewer is not in is hidden.
    assert_eq!(tool(&mut w, "get_team_members", json!({"org": "acme", "team_slug": "security"})).0, 404);
    // bob is in acme and in its secret Security team, which the viewer is not in.
    assert_eq!(tool(&mut w, "get_teams", json!({"user": "bob"})).1, json!([{"org": "acme", "teams": []}]));
    assert_eq!(tool(&mut w, "get_teams", json!({"user": "nobody-here"})).0, 404);
    let (s, v, changes) = tool(&mut w, "assign_copilot_to_issue", json!({"owner": "acme", "repo": "api", "issue_number": 1}));
    assert_eq!(s, 200, "{v}");
    assert_eq!(changes, ["user", "issue"]);
    assert_eq!(w.repos["acme/api"].issues[&1].assignees, ["Copilot"]);
    assert_eq!(tool(&mut w, "assign_copilot_to_issue", json!({"owner": "acme", "repo": "api", "issue_number": 1, "base_ref": "nope"})).0, 422);
    let (s, v, changes) = tool(&mut w, "request_copilot_review", json!({"owner": "acme", "repo": "api", "pullNumber": 3}));
    assert_eq!((s, v), (200, json!("")), "GitHub's server answers nothing");
    assert_eq!(changes, ["pull_request"], "the bot exists now");
    let (_, pr) = get(&mut w, "/repos/acme/api/pulls/3");
    assert_eq!((pr["requested_reviewers"][0]["login"].as_str(), pr["requested_reviewers"][0]["type"].as_str()), (Some("Copilot"), Some("Bot")));
}

#[test]
fn repositories_files_commits_and_tags() {
    let mut w = world();
    let (s, v, _) = tool(&mut w, "create_repository", json!({"name": "tools", "organization": "acme", "autoInit": true}));
    assert_eq!(s, 201, "{v}");
    assert_eq!(v["url"], "http://h/s/ses_1/github/acme/tools");
    assert_eq!(w.repos["acme/tools"].private, true, "private unless told otherwise");
    let (s, _, _) = tool(&mut w, "create_repository", json!({"name": "mine", "private": false}));
    assert_eq!(s, 201);
    assert!(!w.repos["pome-agent/mine"].private);
    let (s, _, changes) = tool(&mut w, "delete_repository", json!({"owner": "pome-agent", "repo": "mine"}));
    assert_eq!(s, 204);
    assert!(!changes.is_empty() && !w.repos.contains_key("pome-agent/mine"));
    // delete_file finds the blob itself.
    let (s, v, _) = tool(&mut w, "delete_file", json!({"owner": "acme", "repo": "api", "path": "src/app.py", "message": "Drop app", "branch": "main"}));
    assert_eq!(s, 200, "{v}");
    let (s, _) = get(&mut w, "/repos/acme/api/contents/src/app.py");
    assert_eq!(s, 404);
    let (_, f, _) = tool(&mut w, "get_file_contents", json!({"owner": "acme", "repo": "api", "path": "README.md"}));
    assert_eq!((f["content"].as_str(), f["encoding"].as_str()), (Some("# api\n\nThe ACME API service.\n"), Some("utf-8")));
    let (_, dir, _) = tool(&mut w, "get_file_contents", json!({"owner": "acme", "repo": "api", "fields": ["name", "type"]}));
    assert_eq!(dir, json!([{"name": "README.md", "type": "file"}]));
    let (_, f, _) = tool(&mut w, "get_file_contents", json!({"owner": "acme", "repo": "api", "path": "src/app.py", "ref": "refs/pull/3/head"}));
    assert!(f["content"].as_str().unwrap().contains("def health"));
    // get_commit's detail levels.
    let (_, head) = get(&mut w, "/repos/acme/api/branches/main");
    let sha = head["commit"]["sha"].as_str().unwrap().to_string();
    let c = |w: &mut World, d: &str| tool(w, "get_commit", json!({"owner": "acme", "repo": "api", "sha": sha, "detail": d})).1;
    assert!(c(&mut w, "none").get("files").is_none());
    let stats = c(&mut w, "stats");
    assert_eq!((stats["files"][0]["filename"].as_str(), stats["files"][0].get("patch")), (Some("src/app.py"), None));
    assert!(c(&mut w, "full_patch")["files"][0]["patch"].is_string());
    // get_tag reads annotated tags and says so for lightweight ones.
    let (_, t) = post(&mut w, "/repos/acme/api/git/tags", json!({"tag": "v1", "message": "First", "object": sha, "type": "commit"}));
    let tag_sha = t["sha"].as_str().unwrap().to_string();
    post(&mut w, "/repos/acme/api/git/refs", json!({"ref": "refs/tags/v1", "sha": tag_sha}));
    post(&mut w, "/repos/acme/api/git/refs", json!({"ref": "refs/tags/light", "sha": sha}));
    let (s, v, _) = tool(&mut w, "get_tag", json!({"owner": "acme", "repo": "api", "tag": "v1"}));
    assert_eq!((s, v["message"].as_str(), v["object"]["sha"].as_str()), (200, Some("First"), Some(sha.as_str())));
    assert_eq!(tool(&mut w, "get_tag", json!({"owner": "acme", "repo": "api", "tag": "light"})).0, 404);
}

#[test]
fn pull_requests_with_reviewers_drafts_and_search() {
    let mut w = world();
    let head = w.repos["acme/api"].git.branch("add-health-check").unwrap().clone();
    post(&mut w, "/repos/acme/api/git/refs", json!({"ref": "refs/heads/docs", "sha": head}));
    let (s, v, changes) = tool(&mut w, "create_pull_request", json!({"owner": "acme", "repo": "api", "title": "Docs", "head": "docs", "base": "main", "reviewers": ["alice"], "draft": true}));
    assert_eq!(s, 201, "{v}");
    assert!(changes.contains(&"pull_request".to_string()));
    let pr = &w.repos["acme/api"].issues[&4];
    assert_eq!(pr.pull.as_ref().unwrap().requested_reviewers, ["alice"]);
    assert!(pr.pull.as_ref().unwrap().draft);
    let (s, v, _) = tool(&mut w, "update_pull_request", json!({"owner": "acme", "repo": "api", "pullNumber": 4, "draft": false, "reviewers": ["bob"], "title": "Docs!"}));
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["url"], "http://h/s/ses_1/github/acme/api/pull/4");
    let pr = &w.repos["acme/api"].issues[&4];
    assert_eq!((pr.title.as_str(), pr.pull.as_ref().unwrap().draft), ("Docs!", false));
    assert_eq!(pr.pull.as_ref().unwrap().requested_reviewers, ["alice", "bob"]);
    assert_eq!(tool(&mut w, "update_pull_request", json!({"owner": "acme", "repo": "api", "pullNumber": 4})).0, 422);
    let (_, found, _) = tool(&mut w, "search_pull_requests", json!({"query": "Docs", "owner": "acme", "repo": "api", "fields": ["number", "title"]}));
    assert_eq!(found["items"], json!([{"number": 4, "title": "Docs!"}]));
    // search_issues is scoped to is:issue: the pull request titled Docs! is not found.
    let (_, issues, _) = tool(&mut w, "search_issues", json!({"query": "Docs"}));
    assert_eq!(issues["total_count"], 0, "{issues}");
    let (_, issues, _) = tool(&mut w, "search_issues", json!({"query": "rate limits", "fields": ["number"]}));
    assert_eq!(issues["items"], json!([{"number": 2}]));
    let (_, prs, _) = tool(&mut w, "list_pull_requests", json!({"owner": "acme", "repo": "api", "fields": ["number"], "state": "open"}));
    assert_eq!(prs, json!([{"number": 4}, {"number": 3}]));
    let (_, repos, _) = tool(&mut w, "search_repositories", json!({"query": "api"}));
    assert!(repos["items"][0].get("owner").is_none(), "minimal output by default");
    let (_, repos, _) = tool(&mut w, "search_repositories", json!({"query": "api", "minimal_output": false}));
    assert!(repos["items"][0].get("owner").is_some());
    let (_, users, _) = tool(&mut w, "search_users", json!({"query": "alice"}));
    assert_eq!(users["items"][0]["login"], "alice");
    // add_issue_comment: a comment, a reaction on it, never both on a comment id.
    let (s, c, _) = tool(&mut w, "add_issue_comment", json!({"owner": "acme", "repo": "api", "issue_number": 1, "body": "On it"}));
    assert_eq!(s, 200);
    let cid: u64 = c["id"].as_str().unwrap().parse().unwrap();
    assert_eq!(c["url"], format!("http://h/s/ses_1/github/acme/api/issues/1#issuecomment-{cid}"));
    let (s, r, _) = tool(&mut w, "add_issue_comment", json!({"owner": "acme", "repo": "api", "issue_number": 1, "comment_id": cid, "reaction": "rocket"}));
    assert_eq!(s, 200);
    assert_eq!(r["url"], format!("http://h/s/ses_1/github/repos/acme/api/issues/comments/{cid}/reactions/{}", r["id"].as_str().unwrap()));
    assert_eq!(tool(&mut w, "add_issue_comment", json!({"owner": "acme", "repo": "api", "issue_number": 1, "comment_id": cid, "body": "x"})).0, 422);
    assert_eq!(tool(&mut w, "add_issue_comment", json!({"owner": "acme", "repo": "api", "issue_number": 2, "comment_id": cid, "reaction": "eyes"})).0, 422, "the comment is not issue 2's");
    let (_, both, changes) = tool(&mut w, "add_issue_comment", json!({"owner": "acme", "repo": "api", "issue_number": 1, "body": "Done", "reaction": "hooray"}));
    assert_eq!((both["comment"]["url"].is_string(), both["reaction"]["url"].is_string()), (true, true));
    assert_eq!(changes.first().map(String::as_str), Some("reaction"), "the reaction is made first");
    assert_eq!(w.repos["acme/api"].comments.values().next().unwrap().reactions.len(), 1);
}
