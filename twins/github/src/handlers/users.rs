//! Users: the authenticated user, profiles, and repository listings per user and org.

use pome_twin_sdk::{Call, Value, json};

use crate::World;
use crate::api::{ApiError, ApiResult, json, page_of, query_enum};
use crate::model::{Repo, Role, User};

/// `GET /user` (`users/get-authenticated`).
pub fn get_authenticated(w: &mut World, call: &mut Call) -> ApiResult {
    let u = &w.users[&w.viewer.to_ascii_lowercase()];
    json(200, &w.full_user_json(&call.req.base_url, u, true))
}

/// `GET /users/{username}` (`users/get-by-username`).
pub fn get_by_username(w: &mut World, call: &mut Call) -> ApiResult {
    let u = w.users.get(&call.param("username").to_ascii_lowercase()).ok_or_else(ApiError::not_found)?;
    let private = u.login.eq_ignore_ascii_case(&w.viewer);
    json(200, &w.full_user_json(&call.req.base_url, u, private))
}

fn sorted_repos<'a>(w: &'a World, call: &Call, mut list: Vec<&'a Repo>) -> Result<Vec<&'a Repo>, ApiError> {
    let sort = query_enum(call, "sort", &["created", "updated", "pushed", "full_name"], "full_name")?;
    let default_dir = if sort == "full_name" { "asc" } else { "desc" };
    let dir = query_enum(call, "direction", &["asc", "desc"], default_dir)?;
    match sort.as_str() {
        "full_name" => list.sort_by_key(|r| r.full_name().to_ascii_lowercase()),
        "created" => list.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id))),
        "updated" => list.sort_by(|a, b| a.updated_at.cmp(&b.updated_at).then(a.id.cmp(&b.id))),
        _ => list.sort_by(|a, b| a.pushed_at.cmp(&b.pushed_at).then(a.id.cmp(&b.id))),
    }
    if dir == "desc" {
        list.reverse();
    }
    let _ = w;
    Ok(list)
}

fn render_repos(w: &World, call: &Call, list: Vec<&Repo>) -> ApiResult {
    let b = call.req.base_url.clone();
    let n = list.len();
    page_of(call, n, list.into_iter(), |r| w.repo_json(&b, r, false))
}

/// `GET /user/repos` (`repos/list-for-authenticated-user`): repositories the viewer owns,
/// collaborates on, or belongs to through an organization.
pub fn list_for_authenticated_user(w: &mut World, call: &mut Call) -> ApiResult {
    let vis = query_enum(call, "visibility", &["all", "public", "private"], "all")?;
    let affiliation = call.req.query("affiliation").unwrap_or_else(|| "owner,collaborator,organization_member".into());
    let kind = call.req.query("type");
    let viewer = w.viewer.to_ascii_lowercase();
    let list: Vec<&Repo> = w
        .repos
        .values()
        .filter(|r| {
            let owner = r.owner.eq_ignore_ascii_case(&viewer);
            let collab = r.collaborators.contains_key(&viewer);
            let member = !owner && !collab && w.viewer_role(r) >= Role::Write;
            let by_type = match kind.as_deref() {
                Some("owner") => owner,
                Some("public") => !r.private,
                Some("private") => r.private,
                Some("member") => !owner,
                _ => true,
            };
            let by_aff = (owner && affiliation.contains("owner"))
                || (collab && affiliation.contains("collaborator"))
                || (member && affiliation.contains("organization_member"));
            let by_vis = match vis.as_str() {
                "public" => !r.private,
                "private" => r.private,
                _ => true,
            };
            by_type && by_aff && by_vis && w.viewer_role(r) >= Role::Read
        })
        .collect();
    let list = sorted_repos(w, call, list)?;
    render_repos(w, call, list)
}

/// `GET /users/{username}/repos` (`repos/list-for-user`).
pub fn list_for_user(w: &mut World, call: &mut Call) -> ApiResult {
    let login = call.param("username").to_string();
    if !w.user_exists(&login) {
        return Err(ApiError::not_found());
    }
    let list: Vec<&Repo> = w
        .repos
        .values()
        .filter(|r| r.owner.eq_ignore_ascii_case(&login) && w.viewer_role(r) >= Role::Read)
        .collect();
    let list = sorted_repos(w, call, list)?;
    render_repos(w, call, list)
}

/// `GET /orgs/{org}/repos` (`repos/list-for-org`).
pub fn list_for_org(w: &mut World, call: &mut Call) -> ApiResult {
    let org = call.param("org").to_string();
    match w.users.get(&org.to_ascii_lowercase()) {
        Some(u) if u.kind == "Organization" => {}
        _ => return Err(ApiError::not_found()),
    }
    let kind = call.req.query("type").unwrap_or_else(|| "all".into());
    let list: Vec<&Repo> = w
        .repos
        .values()
        .filter(|r| r.owner.eq_ignore_ascii_case(&org) && w.viewer_role(r) >= Role::Read)
        .filter(|r| match kind.as_str() {
            "public" => !r.private,
            "private" => r.private,
            "forks" => r.parent.is_some(),
            "sources" => r.parent.is_none(),
            _ => true,
        })
        .collect();
    let mut list = list;
    if call.req.query("sort").is_none() {
        list.sort_by_key(|r| std::cmp::Reverse(r.created_at.clone()));
        list.sort_by_key(|r| r.id);
    }
    let list = if call.req.query("sort").is_some() { sorted_repos(w, call, list)? } else { list };
    render_repos(w, call, list)
}

/// `GET /orgs/{org}` (`orgs/get`).
pub fn get_org(w: &mut World, call: &mut Call) -> ApiResult {
    let u = match w.users.get(&call.param("org").to_ascii_lowercase()) {
        Some(u) if u.kind == "Organization" => u,
        _ => return Err(ApiError::not_found()),
    };
    json(200, &org_json(w, &call.req.base_url, u))
}

/// An organisation's profile (`GET /orgs/{org}`; a team's `organization`).
pub fn org_json(w: &World, b: &str, u: &User) -> Value {
    let url = format!("{b}/orgs/{}", u.login);
    let repos = w.repos.values().filter(|r| r.owner.eq_ignore_ascii_case(&u.login) && !r.private).count();
    let mut v = json!({
            "login": u.login, "id": u.id, "node_id": crate::render::node_id("Organization", u.id),
            "url": url, "repos_url": format!("{url}/repos"), "events_url": format!("{url}/events"),
            "hooks_url": format!("{url}/hooks"), "issues_url": format!("{url}/issues"),
            "members_url": format!("{url}/members{{/member}}"),
            "public_members_url": format!("{url}/public_members{{/member}}"),
            "avatar_url": format!("{b}/_avatars/{}", u.id), "description": u.bio, "blog": "",
            "is_verified": false, "has_organization_projects": true, "has_repository_projects": true,
            "public_repos": repos, "public_gists": 0, "followers": 0, "following": 0,
            "html_url": format!("{b}/{}", u.login), "created_at": u.created_at, "updated_at": u.created_at,
            "type": "Organization", "archived_at": null, "twitter_username": null,
    });
    // Optional profile fields are absent, not null, when unset (GitHub's schema types them
    // as plain strings).
    let m = v.as_object_mut().unwrap();
    for (k, x) in [("name", &u.name), ("company", &u.company), ("email", &u.email), ("location", &u.location)] {
        if let Some(x) = x {
            m.insert(k.into(), json!(x));
        }
    }
    // Its owners (admins of one of its repositories) see its settings, at GitHub's defaults.
    if w.repos.values().filter(|r| r.owner.eq_ignore_ascii_case(&u.login)).any(|r| w.viewer_role(r) >= Role::Admin) {
        let private = w.repos.values().filter(|r| r.owner.eq_ignore_ascii_case(&u.login) && r.private).count();
        for (k, x) in [
            ("total_private_repos", json!(private)), ("owned_private_repos", json!(private)), ("private_gists", json!(0)),
            ("disk_usage", json!(0)), ("collaborators", json!(0)), ("billing_email", json!(u.email)),
            ("plan", json!({"name": "free", "space": 976562499, "private_repos": 10000, "filled_seats": 1, "seats": 1})),
            ("default_repository_permission", json!("read")), ("default_repository_branch", json!("main")),
            ("members_can_create_repositories", json!(true)), ("two_factor_requirement_enabled", json!(false)),
            ("members_allowed_repository_creation_type", json!("all")), ("members_can_create_public_repositories", json!(true)),
            ("members_can_create_private_repositories", json!(true)), ("members_can_create_internal_repositories", json!(false)),
            ("members_can_create_pages", json!(true)), ("members_can_create_public_pages", json!(true)),
            ("members_can_create_private_pages", json!(true)), ("members_can_delete_repositories", json!(true)),
            ("members_can_change_repo_visibility", json!(true)), ("members_can_invite_outside_collaborators", json!(true)),
            ("members_can_delete_issues", json!(false)), ("display_commenter_full_name_setting_enabled", json!(false)),
            ("readers_can_create_discussions", json!(true)), ("members_can_create_teams", json!(true)),
            ("members_can_view_dependency_insights", json!(true)), ("members_can_fork_private_repositories", json!(false)),
            ("web_commit_signoff_required", json!(false)), ("deploy_keys_enabled_for_repositories", json!(true)),
        ] {
            m.insert(k.into(), x);
        }
    }
    v
}
