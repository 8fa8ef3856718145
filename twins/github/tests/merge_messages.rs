//! The repository's merge and squash commit settings (#34, item 4: the modern repository
//! fields): answered on the repository, changed by `PATCH` in GitHub's pairs only, and
//! used to word a merge's commit when the caller gives no title or message.

mod common;
use common::*;
use pome_twin_sdk::{Value, json};
use twin_github::World;

fn admin_world() -> World {
    seeded(json!({
        "users": [{"login": "acme", "type": "Organization"}, {"login": "alice"}, {"login": "pome-agent"}],
        "repositories": [{
            "owner": "acme", "name": "api", "agent_permission": "admin", "required_status_checks": [],
            "files": [{"path": "README.md", "content": "x\n"}, {"path": "a.txt", "branch": "fix", "content": "a\n"},
                      {"path": "b.txt", "branch": "two", "content": "b\n"}],
            "pull_requests": [{"number": 1, "title": "Fix it", "body": "Because.", "head": "fix", "author": "alice"},
                              {"number": 2, "title": "Two", "body": "Body two", "head": "two", "author": "alice"}],
        }],
    }))
}

fn merged_message(w: &mut World, n: u64, method: &str) -> String {
    let (s, m) = put(w, &format!("/repos/acme/api/pulls/{n}/merge"), json!({"merge_method": method}));
    assert_eq!(s, 200, "{m}");
    let (_, c) = get(w, &format!("/repos/acme/api/git/commits/{}", m["sha"].as_str().unwrap()));
    c["message"].as_str().unwrap().to_string()
}

#[test]
fn the_defaults_are_githubs() {
    let mut w = admin_world();
    let (_, r) = get(&mut w, "/repos/acme/api");
    let got: Vec<&Value> = ["merge_commit_title", "merge_commit_message", "squash_merge_commit_title", "squash_merge_commit_message", "use_squash_pr_title_as_default"].iter().map(|k| &r[*k]).collect();
    assert_eq!(got, [&json!("MERGE_MESSAGE"), &json!("PR_TITLE"), &json!("COMMIT_OR_PR_TITLE"), &json!("COMMIT_MESSAGES"), &json!(false)]);
    // A squash of a single commit takes that commit's title by default.
    let msg = merged_message(&mut w, 1, "squash");
    assert!(msg.starts_with("Fix it (#1)") || msg.lines().next().unwrap().ends_with("(#1)"), "{msg}");
    let msg = merged_message(&mut w, 2, "merge");
    assert_eq!(msg, "Merge pull request #2 from acme/two\n\nTwo");
}

#[test]
fn settings_word_the_merge_commits() {
    let mut w = admin_world();
    let (s, r) = patch(&mut w, "/repos/acme/api", json!({"squash_merge_commit_title": "PR_TITLE", "squash_merge_commit_message": "PR_BODY",
                                                        "merge_commit_title": "PR_TITLE", "merge_commit_message": "BLANK"}));
    assert_eq!((s, &r["squash_merge_commit_message"], &r["use_squash_pr_title_as_default"]), (200, &json!("PR_BODY"), &json!(true)));
    assert_eq!(merged_message(&mut w, 1, "squash"), "Fix it (#1)\n\nBecause.");
    assert_eq!(merged_message(&mut w, 2, "merge"), "Two (#2)");
}

#[test]
fn only_githubs_pairs_are_accepted() {
    let mut w = admin_world();
    let (s, e) = patch(&mut w, "/repos/acme/api", json!({"merge_commit_title": "MERGE_MESSAGE", "merge_commit_message": "PR_BODY"}));
    assert_eq!((s, e["errors"][0]["field"].as_str(), e["errors"][0]["code"].as_str()), (422, Some("merge_commit_message"), Some("invalid")));
    let (s, _) = patch(&mut w, "/repos/acme/api", json!({"squash_merge_commit_title": "NOPE"}));
    assert_eq!(s, 422);
    let (_, r) = get(&mut w, "/repos/acme/api");
    assert_eq!((&r["merge_commit_message"], &r["squash_merge_commit_title"]), (&json!("PR_TITLE"), &json!("COMMIT_OR_PR_TITLE")), "a refused change changes nothing");
    // A title alone takes its usual message.
    let (_, r) = patch(&mut w, "/repos/acme/api", json!({"merge_commit_title": "PR_TITLE"}));
    assert_eq!(r["merge_commit_message"], "PR_BODY");
}
