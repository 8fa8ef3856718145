//! Teams and their repositories through the router: create, get by slug, update (a rename
//! moves the slug), delete, members and memberships, a team's repositories and the access
//! they give its members, who may do what, seeds and the tape.

mod common;
use common::*;
use pome_twin_sdk::{Method, Value, json};

fn seed() -> Value {
    json!({
        "users": [{"login": "acme", "type": "Organization"}, {"login": "alice"}, {"login": "bob"}, {"login": "carol"}, {"login": "pome-agent"}],
        "repositories": [
            {"owner": "acme", "name": "api", "collaborators": ["alice", {"login": "pome-agent", "permission": "admin"}], "files": [{"path": "README.md", "content": "# api\n"}]},
            {"owner": "acme", "name": "vault", "private": true, "agent_permission": "read", "files": [{"path": "README.md", "content": "secret\n"}]}
        ],
        "teams": [
            {"org": "acme", "name": "Security", "privacy": "secret", "members": ["bob"], "maintainers": ["bob"], "repositories": {"vault": "admin"}}
        ]
    })
}

#[test]
fn a_team_is_created_renamed_and_deleted() {
    let mut w = seeded(seed());
    let (s, t) = post(&mut w, "/orgs/acme/teams", json!({"name": "Platform Team", "description": "infra", "privacy": "closed", "maintainers": ["alice"], "repo_names": ["api"]}));
    assert_eq!(s, 201, "{t}");
    assert_eq!((t["slug"].as_str(), t["privacy"].as_str(), t["type"].as_str()), (Some("platform-team"), Some("closed"), Some("organization")));
    assert_eq!((t["members_count"].as_u64(), t["repos_count"].as_u64()), (Some(2), Some(1)), "the creator and alice maintain it");
    assert_eq!(t["organization"]["login"], "acme");
    assert_eq!(post(&mut w, "/orgs/acme/teams", json!({"name": "platform team"})).0, 422, "names are unique in an organisation");
    assert_eq!(post(&mut w, "/orgs/acme/teams", json!({"description": "no name"})).0, 422);
    assert_eq!(post(&mut w, "/orgs/acme/teams", json!({"name": "X", "repo_names": ["elsewhere/api"]})).0, 422);
    let (s, got) = get(&mut w, "/orgs/acme/teams/PLATFORM-TEAM");
    assert_eq!((s, got["id"].clone()), (200, t["id"].clone()));
    let (s, t2) = patch(&mut w, "/orgs/acme/teams/platform-team", json!({"name": "Platform", "privacy": "secret"}));
    assert_eq!((s, t2["slug"].as_str(), t2["privacy"].as_str()), (200, Some("platform"), Some("secret")));
    assert_eq!(get(&mut w, "/orgs/acme/teams/platform-team").0, 404, "the slug moved with the name");
    let names: Vec<String> = get(&mut w, "/orgs/acme/teams").1.as_array().unwrap().iter().map(|t| t["slug"].as_str().unwrap().to_string()).collect();
    assert_eq!(names, ["platform"], "the secret Security team is hidden from non-members");
    assert_eq!(get(&mut w, "/user/teams").1[0]["slug"], "platform");
    let (_, _, action) = call(&mut w, Method::Delete, "/orgs/acme/teams/platform", None);
    assert_eq!(action.as_deref(), Some("teams.delete_in_org"));
    assert_eq!(get(&mut w, "/orgs/acme/teams/platform").0, 404);
    assert_eq!(get(&mut w, "/orgs/nobody/teams").0, 404);
}

#[test]
fn memberships_have_roles_and_only_maintainers_and_owners_change_them() {
    let mut w = seeded(seed());
    post(&mut w, "/orgs/acme/teams", json!({"name": "Web", "privacy": "closed"}));
    let (s, m) = put(&mut w, "/orgs/acme/teams/web/memberships/carol", json!({}));
    assert_eq!((s, m["role"].as_str(), m["state"].as_str()), (200, Some("member"), Some("active")));
    let (_, m) = put(&mut w, "/orgs/acme/teams/web/memberships/carol", json!({"role": "maintainer"}));
    assert_eq!(m["role"], "maintainer");
    assert_eq!(put(&mut w, "/orgs/acme/teams/web/memberships/carol", json!({"role": "boss"})).0, 422);
    assert_eq!(put(&mut w, "/orgs/acme/teams/web/memberships/nobody", json!({})).0, 404);
    assert_eq!(get(&mut w, "/orgs/acme/teams/web/memberships/carol").1["role"], "maintainer");
    assert_eq!(get(&mut w, "/orgs/acme/teams/web/memberships/bob").0, 404);
    let logins = |v: &Value| v.as_array().unwrap().iter().map(|u| u["login"].as_str().unwrap().to_string()).collect::<Vec<_>>();
    assert_eq!(logins(&get(&mut w, "/orgs/acme/teams/web/members").1), ["pome-agent", "carol"]);
    assert_eq!(logins(&get(&mut w, "/orgs/acme/teams/web/members?role=maintainer").1), ["pome-agent", "carol"]);
    assert_eq!(delete(&mut w, "/orgs/acme/teams/web/memberships/carol").0, 204);
    assert_eq!(delete(&mut w, "/orgs/acme/teams/web/memberships/carol").0, 404);
    // A team member who maintains nothing and owns nothing cannot change the team.
    let mut s = seed();
    s["repositories"][0]["collaborators"] = json!(["alice", {"login": "pome-agent", "permission": "write"}]);
    s["teams"] = json!([{"org": "acme", "name": "Web", "members": ["pome-agent", "alice"], "maintainers": ["alice"]}]);
    let mut w = seeded(s);
    let (s, v) = put(&mut w, "/orgs/acme/teams/web/memberships/carol", json!({}));
    assert_eq!((s, v["message"].as_str()), (403, Some("You must be an organization owner or team maintainer to do that.")));
    assert_eq!(patch(&mut w, "/orgs/acme/teams/web", json!({"name": "Mine"})).0, 403);
}

#[test]
fn a_teams_repositories_give_its_members_access() {
    let mut w = seeded(seed());
    // The agent can read acme/vault but not administer it: it cannot give a team access.
    post(&mut w, "/orgs/acme/teams", json!({"name": "Web", "privacy": "closed"}));
    let (s, v) = put(&mut w, "/orgs/acme/teams/web/repos/acme/vault", json!({"permission": "push"}));
    assert_eq!((s, v["message"].as_str()), (403, Some("Must have admin rights to Repository.")));
    assert_eq!(put(&mut w, "/orgs/acme/teams/web/repos/acme/api", json!({"permission": "sudo"})).0, 422);
    assert_eq!(put(&mut w, "/orgs/acme/teams/web/repos/acme/api", json!({"permission": "triage"})).0, 204);
    assert_eq!(get(&mut w, "/orgs/acme/teams/web/repos/acme/api").0, 204);
    assert_eq!(get(&mut w, "/orgs/acme/teams/web/repos/acme/vault").0, 404, "no access, no answer");
    let (_, repos) = get(&mut w, "/orgs/acme/teams/web/repos");
    assert_eq!((repos[0]["full_name"].as_str(), repos[0]["role_name"].as_str()), (Some("acme/api"), Some("triage")));
    assert_eq!(repos[0]["permissions"]["push"], false);
    let (_, teams) = get(&mut w, "/repos/acme/api/teams");
    assert_eq!((teams[0]["slug"].as_str(), teams[0]["permission"].as_str()), (Some("web"), Some("triage")));
    // Carol joins the team and gets its access: triage on acme/api.
    put(&mut w, "/orgs/acme/teams/web/memberships/carol", json!({}));
    let (_, perm) = get(&mut w, "/repos/acme/api/collaborators/carol/permission");
    assert_eq!(perm["role_name"], "triage", "{perm}");
    assert_eq!(delete(&mut w, "/orgs/acme/teams/web/repos/acme/api").0, 204);
    assert_eq!(get(&mut w, "/repos/acme/api/collaborators/carol/permission").1["role_name"], "read");
    assert_eq!(delete(&mut w, "/orgs/acme/teams/web/repos/acme/api").0, 404);
}

#[test]
fn seeded_teams_give_access_and_are_checked() {
    use pome_twin_sdk::Twin;
    let w = seeded(seed());
    let vault = &w.repos["acme/vault"];
    assert_eq!(w.role_of(vault, "bob"), twin_github::model::Role::Admin, "bob administers the vault through Security");
    assert_eq!(w.role_of(vault, "carol"), twin_github::model::Role::None);
    let state = w.state_json();
    assert_eq!(state["teams"][0]["repos"]["acme/vault"], "admin");
    let bad = |team: Value| {
        let mut s = seed();
        s["teams"] = json!([team]);
        twin_github::World::init(Some(s)).unwrap_err()
    };
    assert!(bad(json!({"org": "acme", "name": "A", "repositories": {"nope": "push"}})).contains("teams[0].repositories.nope"));
    assert!(bad(json!({"org": "acme", "name": "A", "repositories": {"api": "write"}})).contains("one of pull"));
    assert!(bad(json!({"org": "acme", "name": "A", "maintainers": ["dave"]})).contains("teams[0].maintainers[0]"));
}

#[test]
fn team_changes_are_recorded() {
    let mut w = seeded(seed());
    let (_, c) = dispatch(&mut w, Method::Post, "/orgs/acme/teams", Some(json!({"name": "Web"})));
    assert_eq!(c.changes.iter().map(|x| x.entity.as_str()).collect::<Vec<_>>(), ["team"]);
    let (_, c) = dispatch(&mut w, Method::Put, "/orgs/acme/teams/web/repos/acme/api", Some(json!({})));
    assert_eq!(c.changes.iter().map(|x| x.entity.as_str()).collect::<Vec<_>>(), ["team_repository"]);
    let (_, c) = dispatch(&mut w, Method::Put, "/orgs/acme/teams/web/memberships/alice", Some(json!({})));
    assert_eq!(c.changes.iter().map(|x| x.entity.as_str()).collect::<Vec<_>>(), ["team_membership"]);
}
