//! Repositories: get, create (for the user and for an org), update (rename, default
//! branch, archive, merge settings), delete, fork, topics, collaborators and permissions,
//! contributors and languages; plus `GET /rate_limit`.

use pome_twin_sdk::{Call, Response, Value, json, time};
use serde::Deserialize;
use std::collections::BTreeMap;

use crate::World;
use crate::api::{ApiError, ApiResult, input, json, no_content, page_vec, repo_key};
use crate::git::{Commit, Flat, Object};
use crate::model::*;
use crate::render::node_id;

/// `GET /repos/{owner}/{repo}` (`repos/get`).
pub fn get(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    json(200, &w.repo_json(&call.req.base_url, r, true))
}

#[derive(Debug, Deserialize, Default)]
pub struct CreateRepo {
    pub name: Option<String>,
    pub description: Option<String>,
    pub homepage: Option<String>,
    pub private: Option<bool>,
    pub visibility: Option<String>,
    pub has_issues: Option<bool>,
    #[serde(default)]
    pub auto_init: bool,
    pub default_branch: Option<String>,
    pub allow_merge_commit: Option<bool>,
    pub allow_squash_merge: Option<bool>,
    pub allow_rebase_merge: Option<bool>,
    pub delete_branch_on_merge: Option<bool>,
    pub use_squash_pr_title_as_default: Option<bool>,
    pub merge_commit_title: Option<String>,
    pub merge_commit_message: Option<String>,
    pub squash_merge_commit_title: Option<String>,
    pub squash_merge_commit_message: Option<String>,
    pub archived: Option<bool>,
    pub topics: Option<Vec<String>>,
    pub security_and_analysis: Option<BTreeMap<String, SecurityStatus>>,
}

#[derive(Debug, Deserialize)]
pub struct SecurityStatus {
    pub status: Option<String>,
}

/// The merge and squash commit settings after `inp`, checked as GitHub checks them: each
/// title and message pair must be one GitHub offers (a message given alone pairs with the
/// current title), else 422. `use_squash_pr_title_as_default` is the older spelling of
/// `squash_merge_commit_title: PR_TITLE` (and `false` of `COMMIT_OR_PR_TITLE`).
pub(crate) fn merge_messages_in(cur: &MergeMessages, inp: &CreateRepo) -> Result<MergeMessages, ApiError> {
    let mut m = cur.clone();
    if let Some(v) = inp.use_squash_pr_title_as_default {
        m.squash_title = if v { "PR_TITLE" } else { "COMMIT_OR_PR_TITLE" }.into();
        if !v {
            m.squash_message = "COMMIT_MESSAGES".into();
        }
    }
    if let Some(t) = &inp.merge_commit_title {
        m.merge_title = t.clone();
        if inp.merge_commit_message.is_none() {
            m.merge_message = if t == "MERGE_MESSAGE" { "PR_TITLE" } else { "PR_BODY" }.into();
        }
    }
    if let Some(x) = &inp.merge_commit_message {
        m.merge_message = x.clone();
    }
    if let Some(t) = &inp.squash_merge_commit_title {
        m.squash_title = t.clone();
        if inp.squash_merge_commit_message.is_none() {
            m.squash_message = if t == "COMMIT_OR_PR_TITLE" { "COMMIT_MESSAGES" } else { "PR_BODY" }.into();
        }
    }
    if let Some(x) = &inp.squash_merge_commit_message {
        m.squash_message = x.clone();
    }
    let merge_ok = matches!((m.merge_title.as_str(), m.merge_message.as_str()), ("MERGE_MESSAGE", "PR_TITLE") | ("PR_TITLE", "PR_BODY" | "BLANK"));
    if !merge_ok {
        let field = if inp.merge_commit_message.is_some() { "merge_commit_message" } else { "merge_commit_title" };
        return Err(ApiError::invalid("Repository", field, "invalid"));
    }
    let squash_ok = matches!((m.squash_title.as_str(), m.squash_message.as_str()), ("COMMIT_OR_PR_TITLE", "COMMIT_MESSAGES") | ("PR_TITLE", "PR_BODY" | "BLANK" | "COMMIT_MESSAGES"));
    if !squash_ok {
        let field = if inp.squash_merge_commit_message.is_some() { "squash_merge_commit_message" } else { "squash_merge_commit_title" };
        return Err(ApiError::invalid("Repository", field, "invalid"));
    }
    Ok(m)
}

fn valid_name(s: &str) -> bool {
    !s.is_empty() && s.len() <= 100 && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

fn new_repo(w: &mut World, call: &mut Call, owner: &str, inp: CreateRepo) -> ApiResult {
    let name = inp.name.clone().ok_or_else(|| ApiError::invalid("Repository", "name", "missing_field"))?;
    if !valid_name(&name) {
        return Err(ApiError::custom("Repository", "name", "name is invalid"));
    }
    let key = repo_key(owner, &name);
    if w.repos.contains_key(&key) {
        return Err(ApiError::custom("Repository", "name", "name already exists on this account"));
    }
    let id = w.next_id();
    let now = time::now_iso();
    let owner_login = w.users[&owner.to_ascii_lowercase()].login.clone();
    let default_branch = inp.default_branch.clone().unwrap_or_else(|| "main".into());
    let mut collaborators = std::collections::BTreeMap::new();
    if !owner_login.eq_ignore_ascii_case(&w.viewer) {
        collaborators.insert(w.viewer.to_ascii_lowercase(), Role::Admin);
    }
    let private = inp.private.unwrap_or(false) || inp.visibility.as_deref().is_some_and(|v| v != "public");
    let mut repo = Repo {
        id,
        owner: owner_login,
        name,
        description: inp.description,
        homepage: inp.homepage,
        private,
        default_branch: default_branch.clone(),
        topics: inp.topics.unwrap_or_default(),
        archived: false,
        has_issues: inp.has_issues.unwrap_or(true),
        allow_merge_commit: inp.allow_merge_commit.unwrap_or(true),
        allow_squash_merge: inp.allow_squash_merge.unwrap_or(true),
        allow_rebase_merge: inp.allow_rebase_merge.unwrap_or(true),
        delete_branch_on_merge: inp.delete_branch_on_merge.unwrap_or(false),
        parent: None,
        created_at: now.clone(),
        updated_at: now.clone(),
        pushed_at: now,
        collaborators,
        agent_role: Role::Admin,
        required_contexts: Vec::new(),
        merge_messages: Default::default(),
        security: Default::default(),
        labels: Vec::new(),
        milestones: Default::default(),
        issues: Default::default(),
        comments: Default::default(),
        review_comments: Default::default(),
        events: Vec::new(),
        statuses: Vec::new(),
        check_runs: Default::default(),
        releases: Default::default(),
        git: Default::default(),
        next_number: 1,
        open_issues: 0,
    };
    for (n, c, d) in [
        ("bug", "d73a4a", "Something isn't working"),
        ("documentation", "0075ca", "Improvements or additions to documentation"),
        ("duplicate", "cfd3d7", "This issue or pull request already exists"),
        ("enhancement", "a2eeef", "New feature or request"),
        ("good first issue", "7057ff", "Good for newcomers"),
        ("help wanted", "008672", "Extra attention is needed"),
        ("invalid", "e4e669", "This doesn't seem right"),
        ("question", "d876e3", "Further information is requested"),
        ("wontfix", "ffffff", "This will not be worked on"),
    ] {
        let lid = w.next_id();
        repo.labels.push(Label { id: lid, name: n.into(), color: c.into(), description: Some(d.into()), default: true });
    }
    if inp.auto_init {
        let sig = w.viewer_sig();
        let blob = repo.git.blob(format!("# {}\n{}", repo.name, repo.description.clone().map(|d| format!("{d}\n")).unwrap_or_default()).as_bytes());
        let mut flat = Flat::new();
        flat.insert("README.md".into(), ("100644".into(), blob));
        let tree = repo.git.write_flat(&flat);
        let sha = repo.git.put(Object::Commit(Commit { tree, parents: vec![], author: sig.clone(), committer: sig, message: "Initial commit".into() }));
        repo.git.refs.insert(format!("refs/heads/{default_branch}"), sha);
    }
    call.created("repository", repo.full_name(), &json!({"full_name": repo.full_name(), "private": repo.private}));
    w.repos.insert(key.clone(), repo);
    let r = &w.repos[&key];
    let b = &call.req.base_url;
    let v = w.repo_json(b, r, true);
    Ok(Response::json(201, &v).with_header("location", v["url"].as_str().unwrap_or("").to_string()))
}

/// `POST /user/repos` (`repos/create-for-authenticated-user`).
pub fn create_for_user(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: CreateRepo = input(call)?;
    let owner = w.viewer.clone();
    new_repo(w, call, &owner, inp)
}

/// `POST /orgs/{org}/repos` (`repos/create-in-org`): the viewer must already work in the
/// org (write on one of its repositories).
pub fn create_in_org(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: CreateRepo = input(call)?;
    let org = call.param("org").to_string();
    match w.users.get(&org.to_ascii_lowercase()) {
        Some(u) if u.kind == "Organization" => {}
        _ => return Err(ApiError::not_found()),
    }
    let member = w.repos.values().any(|r| r.owner.eq_ignore_ascii_case(&org) && w.viewer_role(r) >= Role::Write);
    if !member {
        return Err(ApiError::forbidden("You need admin access to the organization before adding a repository to it."));
    }
    new_repo(w, call, &org, inp)
}

/// `PATCH /repos/{owner}/{repo}` (`repos/update`).
pub fn update(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: CreateRepo = input(call)?;
    let key = w.repo_key_for(call)?;
    if w.viewer_role(&w.repos[&key]) < Role::Admin {
        return Err(ApiError::forbidden("Must have admin rights to Repository."));
    }
    let r = &w.repos[&key];
    if r.archived && inp.archived != Some(false) {
        return Err(ApiError::forbidden("Repository was archived so is read-only."));
    }
    if let Some(b) = &inp.default_branch {
        if r.git.branch(b).is_none() {
            return Err(ApiError::custom("Repository", "default_branch", &format!("Cannot update default branch for this repository to {b}")));
        }
    }
    let mut new_key = key.clone();
    if let Some(n) = &inp.name {
        if !valid_name(n) {
            return Err(ApiError::custom("Repository", "name", "name is invalid"));
        }
        new_key = repo_key(&r.owner, n);
        if new_key != key && w.repos.contains_key(&new_key) {
            return Err(ApiError::custom("Repository", "name", "name already exists on this account"));
        }
    }
    let merge_messages = merge_messages_in(&r.merge_messages, &inp)?;
    let mut security = r.security.clone();
    for (feature, s) in inp.security_and_analysis.iter().flatten() {
        if !crate::render::SECURITY_FEATURES.contains(&feature.as_str()) {
            return Err(ApiError::invalid("Repository", "security_and_analysis", "invalid"));
        }
        match s.status.as_deref() {
            Some("enabled") => security.insert(feature.clone(), true),
            Some("disabled") => security.insert(feature.clone(), false),
            _ => return Err(ApiError::invalid("Repository", "security_and_analysis", "invalid")),
        };
    }
    let mut repo = w.repos.remove(&key).unwrap();
    repo.merge_messages = merge_messages;
    repo.security = security;
    let before = json!({"full_name": repo.full_name(), "description": repo.description, "private": repo.private, "default_branch": repo.default_branch, "archived": repo.archived});
    if let Some(n) = inp.name {
        repo.name = n;
    }
    if let Some(d) = inp.description {
        repo.description = Some(d);
    }
    if let Some(h) = inp.homepage {
        repo.homepage = Some(h);
    }
    if let Some(p) = inp.private {
        repo.private = p;
    }
    if let Some(v) = inp.visibility {
        repo.private = v != "public";
    }
    if let Some(b) = inp.default_branch {
        repo.default_branch = b;
    }
    if let Some(v) = inp.has_issues {
        repo.has_issues = v;
    }
    if let Some(v) = inp.allow_merge_commit {
        repo.allow_merge_commit = v;
    }
    if let Some(v) = inp.allow_squash_merge {
        repo.allow_squash_merge = v;
    }
    if let Some(v) = inp.allow_rebase_merge {
        repo.allow_rebase_merge = v;
    }
    if let Some(v) = inp.delete_branch_on_merge {
        repo.delete_branch_on_merge = v;
    }
    if let Some(v) = inp.archived {
        repo.archived = v;
    }
    if let Some(t) = inp.topics {
        repo.topics = t;
    }
    repo.updated_at = time::now_iso();
    let after = json!({"full_name": repo.full_name(), "description": repo.description, "private": repo.private, "default_branch": repo.default_branch, "archived": repo.archived});
    call.updated("repository", before["full_name"].as_str().unwrap_or_default().to_string(), &before, &after);
    w.repos.insert(new_key.clone(), repo);
    let r = &w.repos[&new_key];
    json(200, &w.repo_json(&call.req.base_url, r, true))
}

/// `DELETE /repos/{owner}/{repo}` (`repos/delete`).
pub fn delete(w: &mut World, call: &mut Call) -> ApiResult {
    let key = w.repo_key_for(call)?;
    if w.viewer_role(&w.repos[&key]) < Role::Admin {
        return Err(ApiError::forbidden("Must have admin rights to Repository."));
    }
    let r = w.repos.remove(&key).unwrap();
    call.deleted("repository", r.full_name(), &json!({"full_name": r.full_name()}));
    w.release_assets.retain(|_, s| s.asset.repo != r.id);
    no_content()
}

#[derive(Debug, Deserialize, Default)]
pub struct ForkInput {
    pub organization: Option<String>,
    pub name: Option<String>,
    #[serde(default)]
    pub default_branch_only: bool,
}

/// `POST /repos/{owner}/{repo}/forks` (`repos/create-fork`): copies the code (every
/// branch, or only the default one), not the issues.
pub fn fork(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: ForkInput = input(call)?;
    let key = w.repo_key_for(call)?;
    let src = w.repos[&key].clone();
    let owner = match &inp.organization {
        Some(o) => {
            let u = w.users.get(&o.to_ascii_lowercase()).filter(|u| u.kind == "Organization").ok_or_else(|| ApiError::invalid("Fork", "organization", "invalid"))?;
            u.login.clone()
        }
        None => w.viewer.clone(),
    };
    let name = inp.name.unwrap_or_else(|| src.name.clone());
    let fkey = repo_key(&owner, &name);
    if let Some(existing) = w.repos.get(&fkey) {
        if existing.parent.as_deref().is_some_and(|p| p.eq_ignore_ascii_case(&src.full_name())) {
            return json(202, &w.repo_json(&call.req.base_url, existing, true));
        }
        return Err(ApiError::custom("Repository", "name", "name already exists on this account"));
    }
    let id = w.next_id();
    let now = time::now_iso();
    let mut git = src.git.clone();
    if inp.default_branch_only {
        let keep = format!("refs/heads/{}", src.default_branch);
        git.refs.retain(|k, _| k == &keep || k.starts_with("refs/tags/"));
    }
    let repo = Repo {
        id,
        owner: owner.clone(),
        name,
        parent: Some(src.full_name()),
        created_at: now.clone(),
        updated_at: now.clone(),
        pushed_at: now,
        collaborators: Default::default(),
        agent_role: Role::Admin,
        required_contexts: Vec::new(),
        merge_messages: Default::default(),
        security: Default::default(),
        milestones: Default::default(),
        issues: Default::default(),
        comments: Default::default(),
        review_comments: Default::default(),
        events: Vec::new(),
        statuses: Vec::new(),
        check_runs: Default::default(),
        releases: Default::default(),
        git,
        next_number: 1,
        open_issues: 0,
        has_issues: false,
        ..src
    };
    call.created("repository", repo.full_name(), &json!({"full_name": repo.full_name(), "parent": repo.parent}));
    w.repos.insert(fkey.clone(), repo);
    json(202, &w.repo_json(&call.req.base_url, &w.repos[&fkey], true))
}

/// `GET /repos/{owner}/{repo}/topics` (`repos/get-all-topics`).
pub fn get_topics(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    json(200, &json!({"names": r.topics}))
}

#[derive(Debug, Deserialize, Default)]
pub struct TopicsInput {
    pub names: Option<Vec<String>>,
}

/// `PUT /repos/{owner}/{repo}/topics` (`repos/replace-all-topics`).
pub fn replace_topics(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: TopicsInput = input(call)?;
    let names = inp.names.ok_or_else(|| ApiError::invalid("Repository", "names", "missing_field"))?;
    if w.viewer_role(w.repo(call)?) < Role::Admin {
        return Err(ApiError::forbidden("Must have admin rights to Repository."));
    }
    let r = w.repo_mut(call, Role::Admin)?;
    let full = r.full_name();
    call.update("repository_topics", full, &mut r.topics, |t| *t = names.iter().map(|n| n.to_ascii_lowercase()).collect());
    json(200, &json!({"names": r.topics}))
}

/// `GET /repos/{owner}/{repo}/languages` (`repos/list-languages`): bytes per language
/// over the default branch.
pub fn languages(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let mut out = serde_json::Map::new();
    if let Some(head) = r.git.branch(&r.default_branch) {
        let tree = tree_of(r, head);
        let mut counts: std::collections::BTreeMap<&str, u64> = Default::default();
        for (path, (_, sha)) in r.git.flatten(&tree) {
            let lang = match path.rsplit('.').next().unwrap_or("") {
                "py" => "Python",
                "rs" => "Rust",
                "js" | "mjs" => "JavaScript",
                "ts" => "TypeScript",
                "go" => "Go",
                "rb" => "Ruby",
                "java" => "Java",
                "sh" => "Shell",
                "c" | "h" => "C",
                _ => continue,
            };
            *counts.entry(lang).or_default() += r.git.blob_bytes(&sha).map(|b| b.len() as u64).unwrap_or(0);
        }
        let mut v: Vec<_> = counts.into_iter().collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        for (k, n) in v {
            out.insert(k.to_string(), json!(n));
        }
    }
    json(200, &Value::Object(out))
}

/// `GET /repos/{owner}/{repo}/contributors` (`repos/list-contributors`): commit authors on
/// the default branch that map to users.
pub fn contributors(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let mut counts: Vec<(String, u64)> = Vec::new();
    if let Some(head) = r.git.branch(&r.default_branch) {
        for sha in r.git.history(head, usize::MAX) {
            if let Some(l) = r.git.commit(&sha).and_then(|c| w.login_for(&c.author)) {
                match counts.iter_mut().find(|(x, _)| *x == l) {
                    Some((_, n)) => *n += 1,
                    None => counts.push((l, 1)),
                }
            }
        }
    }
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let b = call.req.base_url.clone();
    let list = counts
        .into_iter()
        .map(|(l, n)| {
            let mut v = w.user_json(&b, &l);
            v.as_object_mut().unwrap().insert("contributions".into(), json!(n));
            v
        })
        .collect();
    page_vec(call, list)
}

// ---- collaborators ---------------------------------------------------------------------

fn permissions_json(role: Role) -> Value {
    json!({
        "admin": role >= Role::Admin, "maintain": role >= Role::Maintain, "push": role >= Role::Write,
        "triage": role >= Role::Triage, "pull": role >= Role::Read,
    })
}

/// Everyone with explicit access: the owner (when a user) and collaborators.
fn collaborator_list(w: &World, r: &Repo) -> Vec<(String, Role)> {
    let mut out = Vec::new();
    if w.users.get(&r.owner.to_ascii_lowercase()).is_some_and(|u| u.kind != "Organization") {
        out.push((r.owner.clone(), Role::Admin));
    }
    for (l, role) in &r.collaborators {
        let login = w.users.get(l).map(|u| u.login.clone()).unwrap_or_else(|| l.clone());
        if !out.iter().any(|(x, _)| x.eq_ignore_ascii_case(&login)) {
            out.push((login, *role));
        }
    }
    out
}

/// `GET /repos/{owner}/{repo}/collaborators` (`repos/list-collaborators`).
pub fn list_collaborators(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    if w.viewer_role(r) < Role::Write {
        return Err(ApiError::forbidden("Must have push access to view repository collaborators."));
    }
    let perm = call.req.query("permission");
    let b = call.req.base_url.clone();
    let list: Vec<Value> = collaborator_list(w, r)
        .into_iter()
        .filter(|(_, role)| perm.as_deref().and_then(Role::parse).is_none_or(|p| *role >= p))
        .map(|(l, role)| {
            let mut v = w.user_json(&b, &l);
            let m = v.as_object_mut().unwrap();
            m.insert("permissions".into(), permissions_json(role));
            m.insert("role_name".into(), json!(role.as_str()));
            v
        })
        .collect();
    page_vec(call, list)
}

/// `GET /repos/{owner}/{repo}/collaborators/{username}` (`repos/check-collaborator`).
pub fn check_collaborator(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let login = call.param("username");
    if collaborator_list(w, r).iter().any(|(l, _)| l.eq_ignore_ascii_case(login)) {
        no_content()
    } else {
        Err(ApiError::not_found())
    }
}

/// `GET /repos/{owner}/{repo}/collaborators/{username}/permission`
/// (`repos/get-collaborator-permission-level`).
pub fn collaborator_permission(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let login = call.param("username").to_string();
    if !w.user_exists(&login) {
        return Err(ApiError::not_found());
    }
    let role = w.role_of(r, &login);
    let b = &call.req.base_url;
    let mut user = w.user_json(b, &login);
    let m = user.as_object_mut().unwrap();
    m.insert("permissions".into(), permissions_json(role));
    m.insert("role_name".into(), json!(role.as_str()));
    json(200, &json!({"permission": role.legacy(), "role_name": role.as_str(), "user": user}))
}

#[derive(Debug, Deserialize, Default)]
pub struct AddCollaborator {
    pub permission: Option<String>,
}

/// `PUT /repos/{owner}/{repo}/collaborators/{username}` (`repos/add-collaborator`). GitHub
/// sends an invitation; the twin answers with the invitation and grants access at once
/// (there is no invitee to accept it).
pub fn add_collaborator(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: AddCollaborator = input(call)?;
    let login = call.param("username").to_string();
    let role = match inp.permission.as_deref() {
        None => Role::Write,
        Some(p) => Role::parse(p).filter(|r| *r != Role::None).ok_or_else(|| ApiError::invalid("Repository", "permission", "invalid"))?,
    };
    let user = w.users.get(&login.to_ascii_lowercase()).cloned().ok_or_else(ApiError::not_found)?;
    if user.kind == "Organization" {
        return Err(ApiError::custom("Repository", "collaborator", "Organizations cannot be collaborators"));
    }
    let id = w.next_id();
    let viewer = w.viewer.clone();
    let r = w.repo_mut(call, Role::Admin)?;
    let key = user.login.to_ascii_lowercase();
    let existed = r.collaborators.insert(key.clone(), role);
    let full = r.full_name();
    match existed {
        Some(old) if old == role => return no_content(),
        Some(old) => call.updated("collaborator", format!("{full}:{}", user.login), &json!({"role": old}), &json!({"role": role})),
        None => call.created("collaborator", format!("{full}:{}", user.login), &json!({"role": role})),
    }
    if existed.is_some() {
        return no_content();
    }
    let r = w.repo(call)?;
    let b = &call.req.base_url;
    json(
        201,
        &json!({
            "id": id, "node_id": node_id("RepositoryInvitation", id), "repository": w.repo_json(b, r, false),
            "invitee": w.user_json(b, &user.login), "inviter": w.user_json(b, &viewer),
            "permissions": role.as_str(), "created_at": time::now_iso(), "expired": false,
            "url": format!("{b}/user/repository_invitations/{id}"),
            "html_url": format!("{b}/{}/invitations", r.full_name()),
        }),
    )
}

/// `DELETE /repos/{owner}/{repo}/collaborators/{username}` (`repos/remove-collaborator`).
pub fn remove_collaborator(w: &mut World, call: &mut Call) -> ApiResult {
    let login = call.param("username").to_ascii_lowercase();
    let self_removal = login == w.viewer.to_ascii_lowercase();
    let r = w.repo_mut(call, if self_removal { Role::Read } else { Role::Admin })?;
    if let Some(old) = r.collaborators.remove(&login) {
        call.deleted("collaborator", format!("{}:{login}", r.full_name()), &json!({"role": old}));
    }
    no_content()
}

/// `GET /rate_limit` (`rate-limit/get`).
pub fn rate_limit(_w: &mut World, _call: &mut Call) -> ApiResult {
    let reset = (time::now_unix() / 3600 + 1) * 3600;
    let res = |limit: u64, used: u64| json!({"limit": limit, "used": used, "remaining": limit - used, "reset": reset});
    // Every bucket GitHub answers a user's token with, at its limits; this call is the one use
    // of `core`.
    json(
        200,
        &json!({
            "resources": {
                "core": res(5000, 1), "search": res(30, 0), "graphql": res(5000, 0), "integration_manifest": res(5000, 0),
                "source_import": res(100, 0), "code_scanning_upload": res(1000, 0), "code_scanning_autofix": res(10, 0),
                "actions_runner_registration": res(10000, 0), "scim": res(15000, 0), "dependency_snapshots": res(100, 0),
                "dependency_sbom": res(100, 0), "audit_log": res(1750, 0), "audit_log_streaming": res(15, 0), "code_search": res(10, 0),
            },
            "rate": res(5000, 1),
        }),
    )
}

/// `GET /meta`-style liveness for clients that probe the API root (`GET /`).
pub fn root(_w: &mut World, call: &mut Call) -> ApiResult {
    let b = &call.req.base_url;
    json(
        200,
        &json!({
            "current_user_url": format!("{b}/user"),
            "repository_url": format!("{b}/repos/{{owner}}/{{repo}}"),
            "issue_search_url": format!("{b}/search/issues?q={{query}}{{&page,per_page,sort,order}}"),
            "rate_limit_url": format!("{b}/rate_limit"),
        }),
    )
}
