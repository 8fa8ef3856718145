//! Teams of an organisation and their repositories: `/orgs/{org}/teams` (list, create, get by
//! slug, update, delete), members and memberships, `/orgs/{org}/teams/{team_slug}/repos`
//! (list, check, add or update the permission, remove), `/repos/{owner}/{repo}/teams` and
//! `/user/teams`.
//!
//! A team's members have the team's permission on each of its repositories (the strongest of
//! theirs wins, `World::role_of`). Who may do what, as GitHub: any member of the organisation
//! may create a team (and maintains it); organisation owners and the team's maintainers change
//! it, its memberships and its repositories; giving a team a repository also needs admin on
//! the repository. Secret teams are seen by their members only; closed ones by the whole
//! organisation. The twin models organisation roles through repositories (as the hooks do): an
//! owner is an admin of one of its repositories, a member has write on one or is in a team.

use pome_twin_sdk::{Call, Value, json, time};
use serde::Deserialize;

use crate::World;
use crate::api::{ApiError, ApiResult, input, json, no_content, page_vec, repo_key};
use crate::handlers::misc;
use crate::model::{Role, Team};
use crate::render::node_id;

fn key(org: &str, slug: &str) -> String {
    format!("{}/{}", org.to_ascii_lowercase(), slug.to_ascii_lowercase())
}

/// Whether the viewer may see `t`: a closed team by every member of its organisation, a
/// secret one by its own members only.
pub(crate) fn team_visible(w: &World, t: &Team) -> bool {
    let member = t.members.iter().any(|m| m.eq_ignore_ascii_case(&w.viewer));
    member || (t.privacy == "closed" && misc::members(w, &t.org).iter().any(|m| m.eq_ignore_ascii_case(&w.viewer)))
}

/// Whether the viewer owns organisation `org` (is admin of one of its repositories).
fn org_owner(w: &World, org: &str) -> bool {
    w.repos.values().filter(|r| r.owner.eq_ignore_ascii_case(org)).any(|r| w.viewer_role(r) >= Role::Admin)
}

fn org_login(w: &World, org: &str) -> Result<String, ApiError> {
    match w.users.get(&org.to_ascii_lowercase()) {
        Some(u) if u.kind == "Organization" => Ok(u.login.clone()),
        _ => Err(ApiError::not_found()),
    }
}

/// The team the route names, if the viewer can see it: its key.
fn team_key(w: &World, call: &Call) -> Result<String, ApiError> {
    let k = key(call.param("org"), call.param("team_slug"));
    match w.teams.get(&k) {
        Some(t) if team_visible(w, t) => Ok(k),
        _ => Err(ApiError::not_found()),
    }
}

/// The team the route names, for a change: organisation owners and its maintainers only.
fn team_to_manage(w: &World, call: &Call) -> Result<String, ApiError> {
    let k = team_key(w, call)?;
    let t = &w.teams[&k];
    if !org_owner(w, &t.org) && !t.maintainers.iter().any(|m| m.eq_ignore_ascii_case(&w.viewer)) {
        return Err(ApiError::forbidden("You must be an organization owner or team maintainer to do that."));
    }
    Ok(k)
}

/// A team as lists and restrictions embed it (GitHub's `team`).
pub(crate) fn team_json(w: &World, b: &str, t: &Team) -> Value {
    let u = format!("{b}/orgs/{}/teams/{}", t.org, t.slug);
    let org_id = w.users.get(&t.org.to_ascii_lowercase()).map(|o| o.id);
    json!({
        "id": t.id, "node_id": node_id("Team", t.id), "url": u, "html_url": format!("{b}/orgs/{}/teams/{}", t.org, t.slug),
        "name": t.name, "slug": t.slug, "description": t.description, "privacy": t.privacy,
        "notification_setting": "notifications_enabled", "permission": "pull",
        "members_url": format!("{u}/members{{/member}}"), "repositories_url": format!("{u}/repos"),
        "parent": Value::Null, "type": "organization", "organization_id": org_id,
    })
}

/// A team on its own (GitHub's `team-full`): with its counts, times and organisation.
fn team_full_json(w: &World, b: &str, t: &Team) -> Value {
    let mut v = team_json(w, b, t);
    let m = v.as_object_mut().expect("a team is an object");
    m.insert("members_count".into(), json!(t.members.len()));
    m.insert("repos_count".into(), json!(t.repos.len()));
    m.insert("created_at".into(), json!(t.created_at));
    m.insert("updated_at".into(), json!(t.updated_at));
    if let Some(o) = w.users.get(&t.org.to_ascii_lowercase()) {
        m.insert("organization".into(), crate::handlers::users::org_json(w, b, o));
    }
    v
}

fn membership_json(b: &str, t: &Team, login: &str) -> Value {
    let role = if t.maintainers.iter().any(|m| m.eq_ignore_ascii_case(login)) { "maintainer" } else { "member" };
    json!({"url": format!("{b}/orgs/{}/teams/{}/memberships/{login}", t.org, t.slug), "role": role, "state": "active"})
}

// ---- teams ---------------------------------------------------------------------------------

/// `GET /orgs/{org}/teams` (`teams/list`).
pub fn list(w: &mut World, call: &mut Call) -> ApiResult {
    let org = org_login(w, call.param("org"))?;
    let b = call.req.base_url.clone();
    let list: Vec<Value> = w.teams.values().filter(|t| t.org.eq_ignore_ascii_case(&org) && team_visible(w, t)).map(|t| team_json(w, &b, t)).collect();
    page_vec(call, list)
}

/// `GET /orgs/{org}/teams/{team_slug}` (`teams/get-by-name`).
pub fn get(w: &mut World, call: &mut Call) -> ApiResult {
    let k = team_key(w, call)?;
    json(200, &team_full_json(w, &call.req.base_url, &w.teams[&k]))
}

#[derive(Deserialize)]
struct TeamInput {
    name: Option<String>,
    description: Option<String>,
    privacy: Option<String>,
    #[serde(default)]
    maintainers: Vec<String>,
    #[serde(default)]
    repo_names: Vec<String>,
    parent_team_id: Option<u64>,
}

fn check_privacy(p: &Option<String>) -> Result<(), ApiError> {
    match p.as_deref() {
        None | Some("secret" | "closed") => Ok(()),
        Some(_) => Err(ApiError::invalid("Team", "privacy", "invalid")),
    }
}

/// `POST /orgs/{org}/teams` (`teams/create`): the creator maintains it, with `maintainers`;
/// `repo_names` (the organisation's, by name or full name) get `pull` access.
pub fn create(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: TeamInput = input(call)?;
    let org = org_login(w, call.param("org"))?;
    if !misc::members(w, &org).iter().any(|m| m.eq_ignore_ascii_case(&w.viewer)) {
        return Err(ApiError::forbidden("You must be a member of this organization to create a team."));
    }
    let name = inp.name.filter(|n| !n.trim().is_empty()).ok_or_else(|| ApiError::invalid("Team", "name", "missing_field"))?;
    check_privacy(&inp.privacy)?;
    if inp.parent_team_id.is_some() {
        return Err(ApiError::custom("Team", "parent_team_id", "Nested teams are not supported by this twin"));
    }
    let slug = crate::seed::team_slug(&name);
    if slug.is_empty() || w.teams.contains_key(&key(&org, &slug)) || w.teams.values().any(|t| t.org.eq_ignore_ascii_case(&org) && t.name.eq_ignore_ascii_case(&name)) {
        return Err(ApiError::custom("Team", "name", "Name must be unique for this org"));
    }
    let mut maintainers = vec![w.viewer.clone()];
    for m in &inp.maintainers {
        let u = w.users.get(&m.to_ascii_lowercase()).filter(|u| u.kind != "Organization").ok_or_else(|| ApiError::custom("Team", "maintainers", &format!("{m} is not a user")))?;
        if !maintainers.iter().any(|x| x.eq_ignore_ascii_case(&u.login)) {
            maintainers.push(u.login.clone());
        }
    }
    let mut repos = std::collections::BTreeMap::new();
    for r in &inp.repo_names {
        let name = r.rsplit('/').next().unwrap_or(r);
        let rk = repo_key(&org, name);
        if !w.repos.get(&rk).is_some_and(|x| w.viewer_role(x) >= Role::Read) || (r.contains('/') && !r.to_ascii_lowercase().starts_with(&format!("{}/", org.to_ascii_lowercase()))) {
            return Err(ApiError::custom("Team", "repo_names", &format!("{r} is not a repository of {org}")));
        }
        repos.insert(rk, Role::Read);
    }
    let now = time::now_iso();
    // GitHub makes a team secret unless it is asked for a closed one.
    let privacy = inp.privacy.unwrap_or_else(|| "secret".into());
    let t = Team { id: w.next_id(), org: org.clone(), slug: slug.clone(), name, description: inp.description, privacy, members: maintainers.clone(), maintainers, repos, created_at: now.clone(), updated_at: now };
    let k = key(&org, &slug);
    call.created("team", k.clone(), &t);
    w.teams.insert(k.clone(), t);
    json(201, &team_full_json(w, &call.req.base_url, &w.teams[&k]))
}

/// `PATCH /orgs/{org}/teams/{team_slug}` (`teams/update-in-org`): name (and with it the
/// slug), description, privacy.
pub fn update(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: TeamInput = input(call)?;
    let k = team_to_manage(w, call)?;
    check_privacy(&inp.privacy)?;
    if inp.parent_team_id.is_some() {
        return Err(ApiError::custom("Team", "parent_team_id", "Nested teams are not supported by this twin"));
    }
    let before = w.teams[&k].clone();
    let mut t = before.clone();
    if let Some(name) = inp.name.filter(|n| !n.trim().is_empty()) {
        let slug = crate::seed::team_slug(&name);
        let clash = w.teams.iter().any(|(x, o)| *x != k && o.org.eq_ignore_ascii_case(&t.org) && (o.slug.eq_ignore_ascii_case(&slug) || o.name.eq_ignore_ascii_case(&name)));
        if slug.is_empty() || clash {
            return Err(ApiError::custom("Team", "name", "Name must be unique for this org"));
        }
        t.name = name;
        t.slug = slug;
    }
    if inp.description.is_some() {
        t.description = inp.description;
    }
    if let Some(p) = inp.privacy {
        t.privacy = p;
    }
    t.updated_at = time::now_iso();
    let new_key = key(&t.org, &t.slug);
    call.updated("team", new_key.clone(), &before, &t);
    w.teams.remove(&k);
    w.teams.insert(new_key.clone(), t);
    json(200, &team_full_json(w, &call.req.base_url, &w.teams[&new_key]))
}

/// `DELETE /orgs/{org}/teams/{team_slug}` (`teams/delete-in-org`).
pub fn delete(w: &mut World, call: &mut Call) -> ApiResult {
    let k = team_to_manage(w, call)?;
    let t = w.teams.remove(&k).expect("found above");
    call.deleted("team", k, &t);
    no_content()
}

// ---- members -------------------------------------------------------------------------------

/// `GET /orgs/{org}/teams/{team_slug}/members` (`teams/list-members-in-org`): `role` is `all`
/// (the default), `member` or `maintainer`.
pub fn list_members(w: &mut World, call: &mut Call) -> ApiResult {
    let k = team_key(w, call)?;
    let role = crate::api::query_enum(call, "role", &["all", "member", "maintainer"], "all")?;
    let t = &w.teams[&k];
    let b = call.req.base_url.clone();
    let maintains = |m: &str| t.maintainers.iter().any(|x| x.eq_ignore_ascii_case(m));
    let list: Vec<Value> = t.members.iter().filter(|m| role == "all" || (role == "maintainer") == maintains(m)).map(|m| w.user_json(&b, m)).collect();
    page_vec(call, list)
}

/// `GET …/memberships/{username}` (`teams/get-membership-for-user-in-org`).
pub fn get_membership(w: &mut World, call: &mut Call) -> ApiResult {
    let k = team_key(w, call)?;
    let t = &w.teams[&k];
    let login = call.param("username");
    match t.members.iter().find(|m| m.eq_ignore_ascii_case(login)) {
        Some(m) => json(200, &membership_json(&call.req.base_url, t, m)),
        None => Err(ApiError::not_found()),
    }
}

#[derive(Deserialize)]
struct MembershipInput {
    role: Option<String>,
}

/// `PUT …/memberships/{username}` (`teams/add-or-update-membership-for-user-in-org`): adds the
/// user at once (GitHub invites someone outside the organisation first) or changes the role.
pub fn put_membership(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: MembershipInput = input(call)?;
    let k = team_to_manage(w, call)?;
    let role = inp.role.unwrap_or_else(|| "member".into());
    if role != "member" && role != "maintainer" {
        return Err(ApiError::invalid("TeamMember", "role", "invalid"));
    }
    let login = match w.users.get(&call.param("username").to_ascii_lowercase()) {
        Some(u) if u.kind != "Organization" => u.login.clone(),
        _ => return Err(ApiError::not_found()),
    };
    let before = w.teams[&k].clone();
    let t = w.teams.get_mut(&k).expect("found above");
    if !t.members.iter().any(|m| m.eq_ignore_ascii_case(&login)) {
        t.members.push(login.clone());
    }
    t.maintainers.retain(|m| !m.eq_ignore_ascii_case(&login));
    if role == "maintainer" {
        t.maintainers.push(login.clone());
    }
    let t = &w.teams[&k];
    let out = membership_json(&call.req.base_url, t, &login);
    call.updated("team_membership", format!("{k}:{}", login.to_ascii_lowercase()), &membership_json("", &before, &login), &out);
    json(200, &out)
}

/// `DELETE …/memberships/{username}` (`teams/remove-membership-for-user-in-org`).
pub fn delete_membership(w: &mut World, call: &mut Call) -> ApiResult {
    let k = team_to_manage(w, call)?;
    let login = call.param("username").to_string();
    let t = w.teams.get_mut(&k).expect("found above");
    let Some(i) = t.members.iter().position(|m| m.eq_ignore_ascii_case(&login)) else { return Err(ApiError::not_found()) };
    let who = t.members.remove(i);
    t.maintainers.retain(|m| !m.eq_ignore_ascii_case(&who));
    call.deleted("team_membership", format!("{k}:{}", who.to_ascii_lowercase()), &json!({"login": who}));
    no_content()
}

// ---- repositories --------------------------------------------------------------------------

/// A repository as a team's lists show it: the repository with the team's `role_name` and
/// `permissions`.
fn team_repo_json(w: &World, b: &str, rk: &str, role: Role) -> Option<Value> {
    let r = w.repos.get(rk)?;
    let mut v = w.repo_json(b, r, false);
    v["role_name"] = json!(role.as_str());
    v["permissions"] = json!({"admin": role >= Role::Admin, "maintain": role >= Role::Maintain, "push": role >= Role::Write, "triage": role >= Role::Triage, "pull": role >= Role::Read});
    Some(v)
}

/// `GET /orgs/{org}/teams/{team_slug}/repos` (`teams/list-repos-in-org`).
pub fn list_repos(w: &mut World, call: &mut Call) -> ApiResult {
    let k = team_key(w, call)?;
    let b = call.req.base_url.clone();
    let list: Vec<Value> = w.teams[&k].repos.iter().filter_map(|(rk, role)| team_repo_json(w, &b, rk, *role)).collect();
    page_vec(call, list)
}

/// `GET …/repos/{owner}/{repo}` (`teams/check-permissions-for-repo-in-org`): 204, or the
/// repository with the team's permission when asked for `application/vnd.github.v3.repository+json`;
/// 404 when the team has no access.
pub fn check_repo(w: &mut World, call: &mut Call) -> ApiResult {
    let k = team_key(w, call)?;
    let rk = repo_key(call.param("owner"), call.param("repo"));
    let role = *w.teams[&k].repos.get(&rk).ok_or_else(ApiError::not_found)?;
    if call.req.header("accept").is_some_and(|a| a.contains("repository+json")) {
        let v = team_repo_json(w, &call.req.base_url, &rk, role).ok_or_else(ApiError::not_found)?;
        return json(200, &v);
    }
    no_content()
}

#[derive(Deserialize)]
struct RepoPermissionInput {
    permission: Option<String>,
}

/// `PUT …/repos/{owner}/{repo}` (`teams/add-or-update-repo-permissions-in-org`): `pull`,
/// `triage`, `push` (the default), `maintain` or `admin`, on a repository of the team's
/// organisation that the viewer administers.
pub fn put_repo(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: RepoPermissionInput = input(call)?;
    let k = team_to_manage(w, call)?;
    let role = match inp.permission.as_deref().unwrap_or("push") {
        p @ ("pull" | "triage" | "push" | "maintain" | "admin") => Role::parse(p).expect("a role word"),
        _ => return Err(ApiError::invalid("Team", "permission", "invalid")),
    };
    let rk = repo_key(call.param("owner"), call.param("repo"));
    let org = w.teams[&k].org.clone();
    let r = match w.repos.get(&rk) {
        Some(r) if w.viewer_role(r) >= Role::Read => r,
        _ => return Err(ApiError::not_found()),
    };
    if !r.owner.eq_ignore_ascii_case(&org) {
        return Err(ApiError::new(422, "Validation Failed").with_error(json!({"resource": "Team", "field": "repo", "code": "custom", "message": format!("{} is not owned by {org}", r.full_name())})));
    }
    if w.viewer_role(r) < Role::Admin {
        return Err(ApiError::forbidden("Must have admin rights to Repository."));
    }
    let t = w.teams.get_mut(&k).expect("found above");
    let before = t.repos.insert(rk.clone(), role);
    call.updated("team_repository", format!("{k}:{rk}"), &json!({"permission": before.map(Role::as_str)}), &json!({"permission": role.as_str()}));
    no_content()
}

/// `DELETE …/repos/{owner}/{repo}` (`teams/remove-repo-in-org`).
pub fn delete_repo(w: &mut World, call: &mut Call) -> ApiResult {
    let k = team_to_manage(w, call)?;
    let rk = repo_key(call.param("owner"), call.param("repo"));
    let t = w.teams.get_mut(&k).expect("found above");
    let Some(role) = t.repos.remove(&rk) else { return Err(ApiError::not_found()) };
    call.deleted("team_repository", format!("{k}:{rk}"), &json!({"permission": role.as_str()}));
    no_content()
}

/// `GET /repos/{owner}/{repo}/teams` (`repos/list-teams`): the teams with access, each with
/// its permission there.
pub fn list_for_repo(w: &mut World, call: &mut Call) -> ApiResult {
    let rk = w.repo_key_for(call)?;
    let b = call.req.base_url.clone();
    let list: Vec<Value> = w
        .teams
        .values()
        .filter(|t| team_visible(w, t))
        .filter_map(|t| t.repos.get(&rk).map(|role| (t, role)))
        .map(|(t, role)| {
            let mut v = team_json(w, &b, t);
            v["permission"] = json!(role.team_word());
            v
        })
        .collect();
    page_vec(call, list)
}

/// `GET /user/teams` (`teams/list-for-authenticated-user`): the viewer's teams, in full.
pub fn list_mine(w: &mut World, call: &mut Call) -> ApiResult {
    let b = call.req.base_url.clone();
    let list: Vec<Value> = w.teams.values().filter(|t| t.members.iter().any(|m| m.eq_ignore_ascii_case(&w.viewer))).map(|t| team_full_json(w, &b, t)).collect();
    page_vec(call, list)
}
