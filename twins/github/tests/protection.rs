//! Branch protection and its sub-routes through the router (#34, item 4): the whole rule
//! (put, get, delete), required status checks and their contexts, enforce_admins,
//! required signatures, required reviews, restrictions (users, teams, apps), who may read
//! and change them, the limits, and the merge gate the rule makes.

mod common;
use common::*;
use pome_twin_sdk::{Method, Value, json};
use twin_github::World;
use twin_github::limits::MAX_PROTECTION_LIST as MAX_LIST;

const P: &str = "/repos/acme/api/branches/main/protection";

fn admin_world() -> World {
    seeded(json!({
        "users": [{"login": "acme", "type": "Organization"}, {"login": "alice"}, {"login": "bob"}, {"login": "pome-agent"}],
        "teams": [{"org": "acme", "name": "Core", "slug": "core", "members": ["alice"]}],
        "repositories": [{
            "owner": "acme", "name": "api", "required_status_checks": [],
            "collaborators": ["alice", "bob", {"login": "pome-agent", "permission": "admin"}],
            "files": [{"path": "README.md", "content": "x\n"}, {"path": "a.txt", "branch": "fix", "content": "a\n"}],
            "pull_requests": [{"number": 1, "title": "Fix", "head": "fix", "author": "alice"}],
        }],
    }))
}

fn full_rule() -> Value {
    json!({
        "required_status_checks": {"strict": false, "contexts": ["ci/test"]},
        "enforce_admins": true,
        "required_pull_request_reviews": {"required_approving_review_count": 1, "dismiss_stale_reviews": true,
                                          "dismissal_restrictions": {"users": ["alice"], "teams": ["core"]}},
        "restrictions": {"users": ["alice"], "teams": [], "apps": []},
        "required_linear_history": true,
    })
}

#[test]
fn a_rule_is_put_read_in_parts_and_deleted() {
    let mut w = admin_world();
    assert_eq!(get(&mut w, P), (404, json!({"message": "Branch not protected", "documentation_url": "https://docs.github.com/rest"})));
    let (s, v) = put(&mut w, P, full_rule());
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["required_status_checks"]["contexts"], json!(["ci/test"]));
    assert_eq!(v["enforce_admins"]["enabled"], true);
    assert_eq!(v["required_linear_history"]["enabled"], true);
    assert_eq!(v["required_pull_request_reviews"]["dismissal_restrictions"]["teams"][0]["slug"], "core");
    assert_eq!(v["restrictions"]["users"][0]["login"], "alice");
    assert_eq!(get(&mut w, P), (200, v.clone()));
    // The default branch's contexts are the merge gate's.
    assert_eq!(w.repos["acme/api"].required_contexts, vec!["ci/test".to_string()]);
    let (_, b) = get(&mut w, "/repos/acme/api/branches/main");
    assert_eq!(b["protected"], true);

    assert_eq!(get(&mut w, &format!("{P}/required_status_checks/contexts")), (200, json!(["ci/test"])));
    assert_eq!(post(&mut w, &format!("{P}/required_status_checks/contexts"), json!({"contexts": ["lint", "ci/test"]})), (200, json!(["ci/test", "lint"])));
    assert_eq!(dispatch_body(&mut w, Method::Delete, &format!("{P}/required_status_checks/contexts"), json!(["ci/test"])), (200, json!(["lint"])));
    assert_eq!(put(&mut w, &format!("{P}/required_status_checks/contexts"), json!({"contexts": ["build"]})), (200, json!(["build"])));
    let (s, sc) = patch(&mut w, &format!("{P}/required_status_checks"), json!({"strict": true}));
    assert_eq!((s, &sc["strict"], &sc["contexts"]), (200, &json!(true), &json!(["build"])));
    assert_eq!(w.repos["acme/api"].required_contexts, vec!["build".to_string()]);

    assert_eq!(delete(&mut w, &format!("{P}/enforce_admins")).0, 204);
    assert_eq!(get(&mut w, &format!("{P}/enforce_admins")).1["enabled"], false);
    assert_eq!(post(&mut w, &format!("{P}/enforce_admins"), json!({})).1["enabled"], true);
    assert_eq!(get(&mut w, &format!("{P}/required_signatures")).1["enabled"], false);
    assert_eq!(post(&mut w, &format!("{P}/required_signatures"), json!({})).1["enabled"], true);
    assert_eq!(delete(&mut w, &format!("{P}/required_signatures")).0, 204);

    let (s, rv) = patch(&mut w, &format!("{P}/required_pull_request_reviews"), json!({"required_approving_review_count": 2}));
    assert_eq!((s, &rv["required_approving_review_count"], &rv["dismiss_stale_reviews"]), (200, &json!(2), &json!(true)));
    let (s, e) = patch(&mut w, &format!("{P}/required_pull_request_reviews"), json!({"required_approving_review_count": 7}));
    assert_eq!((s, e["errors"][0]["field"].as_str()), (422, Some("required_approving_review_count")));

    assert_eq!(post(&mut w, &format!("{P}/restrictions/users"), json!({"users": ["bob"]})).1.as_array().unwrap().len(), 2);
    assert_eq!(dispatch_body(&mut w, Method::Delete, &format!("{P}/restrictions/users"), json!({"users": ["alice"]})).1[0]["login"], "bob");
    assert_eq!(put(&mut w, &format!("{P}/restrictions/teams"), json!({"teams": ["core"]})).1[0]["slug"], "core");
    let (s, e) = post(&mut w, &format!("{P}/restrictions/teams"), json!({"teams": ["nope"]}));
    assert_eq!((s, e["errors"][0]["message"].as_str()), (422, Some("Team nope could not be found")));
    let (s, _) = post(&mut w, &format!("{P}/restrictions/apps"), json!({"apps": ["octoapp"]}));
    assert_eq!(s, 422, "no app is installed in a sandbox");
    assert_eq!(get(&mut w, &format!("{P}/restrictions/apps")), (200, json!([])));
    assert_eq!(delete(&mut w, &format!("{P}/restrictions")).0, 204);
    assert_eq!(get(&mut w, &format!("{P}/restrictions")).0, 404);

    assert_eq!(delete(&mut w, &format!("{P}/required_status_checks")).0, 204);
    assert_eq!(get(&mut w, &format!("{P}/required_status_checks")).0, 404);
    assert!(w.repos["acme/api"].required_contexts.is_empty());
    assert_eq!(get(&mut w, P).0, 200, "still protected by its other settings");
    assert_eq!(delete(&mut w, P).0, 204);
    assert_eq!(get(&mut w, P).0, 404);
    assert_eq!(delete(&mut w, P).0, 404);
    assert!(w.branch_protections.is_empty());
}

fn dispatch_body(w: &mut World, m: Method, path: &str, body: Value) -> (u16, Value) {
    let (r, _) = dispatch(w, m, path, Some(body));
    (r.status, r.json_body())
}

#[test]
fn a_seeded_gate_is_a_rule_and_the_put_needs_its_four_keys() {
    let mut w = world();
    // The default world's agent has write access: reading protection needs more.
    assert_eq!(get(&mut w, "/repos/acme/api/branches/main/protection").0, 403);
    let mut w = admin_world();
    let (s, e) = put(&mut w, P, json!({"required_status_checks": null, "enforce_admins": null}));
    assert_eq!((s, e["message"].as_str()), (422, Some("Invalid request.\n\n\"required_pull_request_reviews\" wasn't supplied.")));
    let (s, e) = put(&mut w, "/repos/acme/api/branches/nope/protection", full_rule());
    assert_eq!((s, e["message"].as_str()), (404, Some("Branch not found")));
    let mut seeded_gate = seeded(json!({
        "users": [{"login": "acme", "type": "Organization"}, {"login": "pome-agent"}],
        "repositories": [{"owner": "acme", "name": "api", "required_status_checks": ["ci"], "agent_permission": "admin",
                          "files": [{"path": "README.md", "content": "x\n"}]}],
    }));
    let (s, v) = get(&mut seeded_gate, P);
    assert_eq!((s, &v["required_status_checks"]["contexts"]), (200, &json!(["ci"])));
}

#[test]
fn required_reviews_gate_the_merge() {
    let mut w = admin_world();
    let (s, _) = put(&mut w, P, json!({"required_status_checks": null, "enforce_admins": false,
                                       "required_pull_request_reviews": {"required_approving_review_count": 1}, "restrictions": null}));
    assert_eq!(s, 200);
    let (_, pr) = get(&mut w, "/repos/acme/api/pulls/1");
    assert_eq!(pr["mergeable_state"], "blocked");
    let (s, e) = put(&mut w, "/repos/acme/api/pulls/1/merge", json!({}));
    assert_eq!((s, e["message"].as_str()), (405, Some("At least 1 approving review is required by reviewers with write access.")));
    let (s, _) = post(&mut w, "/repos/acme/api/pulls/1/reviews", json!({"event": "APPROVE"}));
    assert_eq!(s, 200);
    assert_eq!(put(&mut w, "/repos/acme/api/pulls/1/merge", json!({})).0, 200);
}

#[test]
fn a_list_at_the_limit_is_kept_and_one_more_is_refused() {
    let mut w = admin_world();
    put(&mut w, P, json!({"required_status_checks": {"strict": false, "contexts": []}, "enforce_admins": null,
                          "required_pull_request_reviews": null, "restrictions": null}));
    let at: Vec<String> = (0..MAX_LIST).map(|i| format!("c{i}")).collect();
    let (s, v) = put(&mut w, &format!("{P}/required_status_checks/contexts"), json!(at));
    assert_eq!((s, v.as_array().map(Vec::len)), (200, Some(MAX_LIST)));
    let (s, e) = post(&mut w, &format!("{P}/required_status_checks/contexts"), json!(["one-more"]));
    assert_eq!((s, e["errors"][0]["code"].as_str()), (422, Some("custom")));
    assert_eq!(get(&mut w, &format!("{P}/required_status_checks/contexts")).1.as_array().map(Vec::len), Some(MAX_LIST));
}

#[test]
fn restrictions_are_for_organisation_repositories() {
    let mut w = seeded(json!({
        "users": [{"login": "pome-agent"}, {"login": "alice"}],
        "repositories": [{"owner": "pome-agent", "name": "mine", "files": [{"path": "README.md", "content": "x\n"}]}],
    }));
    let (s, e) = put(&mut w, "/repos/pome-agent/mine/branches/main/protection", full_rule());
    assert_eq!((s, e["message"].as_str()), (422, Some("Only organization repositories can have users and team restrictions")));
    assert!(w.branch_protections.is_empty());
}
