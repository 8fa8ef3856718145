//! The seed: a JSON description of the starting world, validated strictly. Unknown fields
//! and broken references are refused with the path that is wrong
//! (`repositories[0].pull_requests[1].head: branch "fix" has no files`). A top-level
//! `_meta` object (provenance) is accepted and ignored.
//!
//! Shape (every field but the names is optional):
//!
//! ```text
//! { "viewer": "pome-agent",
//!   "users": [{login, type: User|Organization|Bot, name, email, bio, company, location}],
//!   "repositories": [{
//!     owner, name, description, homepage, private, archived, default_branch, topics[],
//!     collaborators: ["login" | {login, permission}], agent_permission,
//!     required_status_checks: ["ci/test"],   (default: the contexts seeded on PRs)
//!     labels: [{name, color, description}],
//!     milestones: [{number, title, description, state, due_on}],
//!     files: [{path, content, branch, encoding: utf-8|base64}],
//!     branches: ["name" | {name, from}],
//!     issues: [{number, title, body, state, state_reason, author, labels[], assignees[],
//!               assignee, milestone, locked, comments: [{author, body}]}],
//!     pull_requests: [{number, title, body, head, base, state: open|closed|merged, author,
//!               draft, labels[], assignees[], requested_reviewers[],
//!               reviews: [{author, state, body}], statuses: [{context, state, description,
//!               target_url}], comments: [{author, body}]}],
//!     releases: [{tag_name, name, body, draft, prerelease, target_commitish}],
//!     workflow_outcomes: {"ci.yml": "failure"},
//!     workflow_runs: [{workflow, branch, event, actor, status, conclusion,
//!                      artifacts: [{name, files: {path: content}}]}] }],
//!   "teams": [{org, name, slug, description, privacy: closed|secret, members: [login]}],
//!   "issue_fields": [{org, name, type: text|number|date|single_select, description,
//!                     options: [name]}],
//!   "gists": [{owner, description, public, files: {name: content},
//!              comments: [{author, body}], starred_by: [login]}] }
//! ```
//!
//! When `users` is absent, every login the seed mentions becomes a user. When it is
//! present, every login must be listed (repository owners that are not listed become
//! organizations; the authenticated user always exists).

use std::collections::{BTreeMap, BTreeSet};

use base64::Engine as _;
use pome_twin_sdk::seed::Obj;
use pome_twin_sdk::{Value, time};

use crate::World;
use crate::git::{Commit, Flat, Object, Signature};
use crate::model::*;

/// The default world: org `acme`, users `alice`, `bob` and `pome-agent` (the authenticated
/// user), repository `acme/api` with a README, labels, a milestone, an open issue #1, a
/// closed issue #2 and an open pull request #3 from a feature branch with a green status.
pub const DEFAULT_SEED: &str = r##"{
  "users": [
    {"login": "acme", "type": "Organization", "name": "ACME Corp"},
    {"login": "alice", "name": "Alice Chen", "email": "alice@acme.test"},
    {"login": "bob", "name": "Bob Ortiz", "email": "bob@acme.test"},
    {"login": "pome-agent", "name": "Pome Agent", "email": "agent@pome.test"}
  ],
  "repositories": [{
    "owner": "acme", "name": "api", "description": "ACME API service",
    "default_branch": "main", "topics": ["api"],
    "collaborators": [{"login": "alice", "permission": "admin"}, {"login": "bob", "permission": "write"}, {"login": "pome-agent", "permission": "write"}],
    "labels": [
      {"name": "bug", "color": "d73a4a", "description": "Something isn't working"},
      {"name": "documentation", "color": "0075ca", "description": "Improvements or additions to documentation"},
      {"name": "enhancement", "color": "a2eeef", "description": "New feature or request"},
      {"name": "good first issue", "color": "7057ff", "description": "Good for newcomers"},
      {"name": "question", "color": "d876e3", "description": "Further information is requested"}
    ],
    "milestones": [{"title": "v1.0", "description": "First stable release"}],
    "files": [
      {"path": "README.md", "content": "# api\n\nThe ACME API service.\n"},
      {"path": "src/app.py", "content": "def handler(request):\n    return {\"status\": \"ok\"}\n"},
      {"path": "src/app.py", "branch": "add-health-check", "content": "def handler(request):\n    return {\"status\": \"ok\"}\n\n\ndef health():\n    return \"ok\"\n"}
    ],
    "issues": [
      {"number": 1, "title": "Login returns 500 on wrong password", "body": "Steps: POST /login with a wrong password. Expected 401, got 500.", "author": "alice", "labels": ["bug"]},
      {"number": 2, "title": "Document the rate limits", "body": "The README should say what the limits are.", "author": "bob", "state": "closed", "state_reason": "completed", "labels": ["documentation"]}
    ],
    "pull_requests": [
      {"number": 3, "title": "Add a health check", "body": "Adds `health()` for the load balancer.", "head": "add-health-check", "base": "main", "author": "bob",
       "statuses": [{"context": "ci/test", "state": "success", "description": "all tests passed"}]}
    ]
  }]
}"##;

type R<T> = Result<T, String>;

fn valid_login(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 39
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '[' || c == ']')
}

fn valid_repo_name(s: &str) -> bool {
    !s.is_empty() && s.len() <= 100 && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

/// Logins the seed mentions, with where, so a broken reference names its path.
struct Refs {
    explicit_users: bool,
    mentioned: Vec<(String, String)>,
}

impl Refs {
    fn note(&mut self, login: &str, path: String) -> R<()> {
        if !valid_login(login) {
            return Err(format!("{path}: {login:?} is not a valid GitHub login"));
        }
        self.mentioned.push((login.to_string(), path));
        Ok(())
    }
}

pub fn build(seed: Option<Value>) -> R<World> {
    let seed = match seed {
        Some(s) => s,
        None => serde_json::from_str(DEFAULT_SEED).expect("the default seed is valid JSON"),
    };
    let top = Obj::new(&seed, "", &["_meta", "viewer", "users", "repositories", "teams", "issue_fields", "gists"])?;
    if let Some(m) = top.get("_meta") {
        if !m.is_object() {
            return Err("_meta: expected an object".into());
        }
    }
    let viewer = top.str("viewer")?.unwrap_or_else(|| "pome-agent".to_string());
    if !valid_login(&viewer) {
        return Err(format!("viewer: {viewer:?} is not a valid GitHub login"));
    }
    let now = time::now_iso();
    let mut w = World { viewer: viewer.clone(), users: BTreeMap::new(), repos: BTreeMap::new(), next_id: 0, sub_issues: BTreeMap::new(), issue_types: BTreeMap::new(), resolved_threads: BTreeMap::new(), teams: BTreeMap::new(), review_comment_reactions: BTreeMap::new(), release_assets: BTreeMap::new(), branch_protections: BTreeMap::new(), issue_fields: BTreeMap::new(), issue_field_values: BTreeMap::new(), hooks: BTreeMap::new(), hook_deliveries: BTreeMap::new(), gists: BTreeMap::new(), actions: BTreeMap::new(), cache: Default::default() };
    let mut refs = Refs { explicit_users: top.get("users").is_some(), mentioned: Vec::new() };

    for (p, v) in top.items("users")? {
        let u = Obj::new(v, &p, &["login", "type", "name", "email", "bio", "company", "location"])?;
        let login = u.nonempty_str("login")?;
        if !valid_login(&login) {
            return Err(format!("{p}.login: {login:?} is not a valid GitHub login"));
        }
        let kind = match u.one_of("type", &["User", "Organization", "Bot"], "user")?.as_str() {
            "organization" => "Organization",
            "bot" => "Bot",
            _ => "User",
        };
        if w.users.contains_key(&login.to_ascii_lowercase()) {
            return Err(format!("{p}.login: duplicate user {login:?}"));
        }
        let id = w.next_id();
        w.users.insert(
            login.to_ascii_lowercase(),
            User {
                id,
                login,
                name: u.str("name")?,
                kind: kind.to_string(),
                email: u.str("email")?,
                bio: u.str("bio")?,
                company: u.str("company")?,
                location: u.str("location")?,
                created_at: now.clone(),
            },
        );
    }
    if !w.user_exists(&viewer) {
        let id = w.next_id();
        w.users.insert(
            viewer.to_ascii_lowercase(),
            User {
                id,
                login: viewer.clone(),
                name: None,
                kind: "User".into(),
                email: None,
                bio: None,
                company: None,
                location: None,
                created_at: now.clone(),
            },
        );
    }

    let repos = top.items("repositories")?;
    // Owners first: an owner nobody listed is an organization.
    for (p, v) in &repos {
        let o = v.as_object().and_then(|m| m.get("owner")).and_then(Value::as_str).unwrap_or("");
        if !valid_login(o) {
            return Err(format!("{p}.owner: required, a valid GitHub login"));
        }
        if !w.user_exists(o) {
            let id = w.next_id();
            w.users.insert(
                o.to_ascii_lowercase(),
                User {
                    id,
                    login: o.to_string(),
                    name: None,
                    kind: "Organization".into(),
                    email: None,
                    bio: None,
                    company: None,
                    location: None,
                    created_at: now.clone(),
                },
            );
        }
    }
    // Logins mentioned anywhere, checked (or created) before repositories are built so
    // rendering always finds a user.
    for (p, v) in &repos {
        collect_logins(v, p, &mut refs)?;
    }
    for (login, path) in &refs.mentioned {
        if w.user_exists(login) {
            continue;
        }
        if refs.explicit_users {
            return Err(format!("{path}: unknown user {login:?} (add it to `users`)"));
        }
        let id = w.next_id();
        w.users.insert(
            login.to_ascii_lowercase(),
            User {
                id,
                login: login.clone(),
                name: None,
                kind: "User".into(),
                email: None,
                bio: None,
                company: None,
                location: None,
                created_at: now.clone(),
            },
        );
    }
    for (p, v) in &repos {
        build_repo(&mut w, v, p, &now)?;
    }
    for (p, v) in top.items("teams")? {
        build_team(&mut w, v, &p, &now)?;
    }
    for (p, v) in top.items("issue_fields")? {
        build_issue_field(&mut w, v, &p)?;
    }
    for (p, v) in top.items("gists")? {
        build_gist(&mut w, v, &p, refs.explicit_users, &now)?;
    }
    Ok(w)
}

/// A login a gist names: a user of the world (made one when the seed lists no `users`),
/// never an organization.
fn gist_user(w: &mut World, login: &str, path: &str, explicit_users: bool, now: &str) -> R<String> {
    if !valid_login(login) {
        return Err(format!("{path}: {login:?} is not a valid GitHub login"));
    }
    if let Some(u) = w.users.get(&login.to_ascii_lowercase()) {
        if u.kind == "Organization" {
            return Err(format!("{path}: {login:?} is an organization; gists belong to users"));
        }
        return Ok(u.login.clone());
    }
    if explicit_users {
        return Err(format!("{path}: unknown user {login:?} (add it to `users`)"));
    }
    let id = w.next_id();
    let user = User { id, login: login.to_string(), name: None, kind: "User".into(), email: None, bio: None, company: None, location: None, created_at: now.to_string() };
    w.users.insert(login.to_ascii_lowercase(), user);
    Ok(login.to_string())
}

/// A gist: `{owner, description, public, files: {name: content}, comments: [{author, body}],
/// starred_by: [login]}`; at least one file, none empty.
fn build_gist(w: &mut World, v: &Value, p: &str, explicit_users: bool, now: &str) -> R<()> {
    let g = Obj::new(v, p, &["owner", "description", "public", "files", "comments", "starred_by"])?;
    let owner = gist_user(w, &g.nonempty_str("owner")?, &g.at("owner"), explicit_users, now)?;
    let mut files = BTreeMap::new();
    match g.get("files").and_then(Value::as_object) {
        Some(m) if !m.is_empty() => {
            for (name, c) in m {
                match c.as_str() {
                    Some(text) if !text.is_empty() && !name.is_empty() => {
                        files.insert(name.clone(), text.to_string());
                    }
                    _ => return Err(format!("{p}.files.{name}: a file's content is a non-empty string")),
                }
            }
        }
        _ => return Err(format!("{p}.files: required, an object of file name → content with at least one file")),
    }
    let mut gist = crate::handlers::gists::new_gist(w, &owner, g.str("description")?, g.bool("public")?.unwrap_or(false), files, now);
    for (i, login) in g.strs("starred_by")?.into_iter().enumerate() {
        let login = gist_user(w, &login, &format!("{p}.starred_by[{i}]"), explicit_users, now)?;
        if !gist.stars.iter().any(|s| s.eq_ignore_ascii_case(&login)) {
            gist.stars.push(login);
        }
    }
    for (cp, c) in g.items("comments")? {
        let c = Obj::new(c, &cp, &["author", "body"])?;
        let author = match c.str("author")? {
            Some(a) => gist_user(w, &a, &c.at("author"), explicit_users, now)?,
            None => owner.clone(),
        };
        let id = w.next_id();
        gist.comments.insert(id, GistComment { id, user: author, body: c.nonempty_str("body")?, created_at: now.to_string(), updated_at: now.to_string() });
    }
    w.gists.insert(gist.id.clone(), gist);
    Ok(())
}

/// An organization's custom issue field: `{org, name, type: text|number|date|single_select,
/// description, options: [name]}` (options for single-select fields only, at least one).
fn build_issue_field(w: &mut World, v: &Value, p: &str) -> R<()> {
    let f = Obj::new(v, p, &["org", "name", "type", "description", "options"])?;
    let org = f.nonempty_str("org")?;
    match w.users.get(&org.to_ascii_lowercase()) {
        Some(u) if u.kind == "Organization" => {}
        _ => return Err(format!("{p}.org: {org:?} is not an organization of the world")),
    }
    let name = f.nonempty_str("name")?;
    let data_type = f.one_of("type", &["text", "number", "date", "single_select"], "text")?;
    let names = f.strs("options")?;
    if (data_type == "single_select") == names.is_empty() {
        return Err(format!("{p}.options: a single_select field needs options, and only it has them"));
    }
    let list = w.issue_fields.entry(org.to_ascii_lowercase()).or_default();
    if list.iter().any(|x| x.name.eq_ignore_ascii_case(&name)) {
        return Err(format!("{p}.name: duplicate issue field {name:?} in {org}"));
    }
    let id = w.next_id();
    let mut options = Vec::new();
    for o in names {
        if options.iter().any(|(_, x): &(u64, String)| x.eq_ignore_ascii_case(&o)) {
            return Err(format!("{p}.options: duplicate option {o:?}"));
        }
        options.push((w.next_id(), o));
    }
    let field = IssueField { id, name, data_type, description: f.str("description")?, options };
    w.issue_fields.get_mut(&org.to_ascii_lowercase()).expect("inserted above").push(field);
    Ok(())
}

/// A team: `{org, name, slug, description, privacy: closed|secret, members: [login],
/// maintainers: [login], repositories: {name: pull|triage|push|maintain|admin}}`. The
/// organization and every member must be users of the world, each repository one of the
/// organization's; maintainers are members too. The slug defaults to GitHub's slug of the
/// name (lower case, runs of other characters as `-`).
fn build_team(w: &mut World, v: &Value, p: &str, now: &str) -> R<()> {
    let t = Obj::new(v, p, &["org", "name", "slug", "description", "privacy", "members", "maintainers", "repositories"])?;
    let org = t.nonempty_str("org")?;
    let org = match w.users.get(&org.to_ascii_lowercase()) {
        Some(u) if u.kind == "Organization" => u.login.clone(),
        _ => return Err(format!("{p}.org: {org:?} is not an organization of the world")),
    };
    let name = t.nonempty_str("name")?;
    let slug = match t.str("slug")? {
        Some(s) => s,
        None => team_slug(&name),
    };
    if slug.is_empty() || !slug.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
        return Err(format!("{p}.slug: {slug:?} is not a valid team slug"));
    }
    let key = format!("{}/{}", org.to_ascii_lowercase(), slug.to_ascii_lowercase());
    if w.teams.contains_key(&key) {
        return Err(format!("{p}.slug: duplicate team {slug:?} in {org}"));
    }
    let mut members: Vec<String> = Vec::new();
    for (i, m) in t.strs("members")?.into_iter().enumerate() {
        let u = w.users.get(&m.to_ascii_lowercase()).filter(|u| u.kind != "Organization");
        let Some(u) = u else { return Err(format!("{p}.members[{i}]: unknown user {m:?}")) };
        if !members.iter().any(|x| x.eq_ignore_ascii_case(&u.login)) {
            members.push(u.login.clone());
        }
    }
    let mut maintainers: Vec<String> = Vec::new();
    for (i, m) in t.strs("maintainers")?.into_iter().enumerate() {
        let u = w.users.get(&m.to_ascii_lowercase()).filter(|u| u.kind != "Organization");
        let Some(u) = u else { return Err(format!("{p}.maintainers[{i}]: unknown user {m:?}")) };
        if !members.iter().any(|x| x.eq_ignore_ascii_case(&u.login)) {
            members.push(u.login.clone());
        }
        maintainers.push(u.login.clone());
    }
    let mut repos = BTreeMap::new();
    if let Some(m) = t.get("repositories") {
        let m = m.as_object().ok_or_else(|| format!("{p}.repositories: expected an object of repository name → permission"))?;
        for (name, perm) in m {
            let rk = format!("{}/{}", org.to_ascii_lowercase(), name.rsplit('/').next().unwrap_or(name).to_ascii_lowercase());
            if !w.repos.contains_key(&rk) || (name.contains('/') && !name.to_ascii_lowercase().starts_with(&format!("{}/", org.to_ascii_lowercase()))) {
                return Err(format!("{p}.repositories.{name}: not a repository of {org}"));
            }
            let role = match perm.as_str() {
                Some(x @ ("pull" | "triage" | "push" | "maintain" | "admin")) => Role::parse(x).expect("a role word"),
                _ => return Err(format!("{p}.repositories.{name}: one of pull, triage, push, maintain, admin")),
            };
            repos.insert(rk, role);
        }
    }
    let privacy = t.one_of("privacy", &["closed", "secret"], "closed")?;
    let id = w.next_id();
    w.teams.insert(key, Team { id, org, slug, name, description: t.str("description")?, privacy, members, maintainers, repos, created_at: now.to_string(), updated_at: now.to_string() });
    Ok(())
}

/// GitHub's slug of a team name: `Platform Team` → `platform-team`.
pub fn team_slug(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_string()
}

fn login_of(v: &Value, p: &str) -> R<String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Object(m) => m
            .get("login")
            .and_then(Value::as_str)
            .map(String::from)
            .ok_or_else(|| format!("{p}.login: required")),
        _ => Err(format!("{p}: expected a login string or {{login, permission}}")),
    }
}

fn collect_logins(v: &Value, p: &str, refs: &mut Refs) -> R<()> {
    let Some(m) = v.as_object() else { return Ok(()) };
    if let Some(Value::Array(cs)) = m.get("collaborators") {
        for (i, c) in cs.iter().enumerate() {
            let l = login_of(c, &format!("{p}.collaborators[{i}]"))?;
            refs.note(&l, format!("{p}.collaborators[{i}]"))?;
        }
    }
    for list in ["issues", "pull_requests"] {
        let Some(Value::Array(items)) = m.get(list) else { continue };
        for (i, it) in items.iter().enumerate() {
            let ip = format!("{p}.{list}[{i}]");
            let Some(im) = it.as_object() else { continue };
            for k in ["author", "user", "assignee"] {
                if let Some(Value::String(l)) = im.get(k) {
                    refs.note(l, format!("{ip}.{k}"))?;
                }
            }
            for k in ["assignees", "requested_reviewers"] {
                if let Some(Value::Array(ls)) = im.get(k) {
                    for (j, l) in ls.iter().enumerate() {
                        if let Some(l) = l.as_str() {
                            refs.note(l, format!("{ip}.{k}[{j}]"))?;
                        }
                    }
                }
            }
            for k in ["reviews", "comments"] {
                if let Some(Value::Array(rs)) = im.get(k) {
                    for (j, r) in rs.iter().enumerate() {
                        if let Some(Value::String(l)) = r.get("author") {
                            refs.note(l, format!("{ip}.{k}[{j}].author"))?;
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

struct SeedIssue {
    path: String,
    number: Option<u64>,
    pull: bool,
    value: Value,
}

fn build_repo(w: &mut World, v: &Value, p: &str, now: &str) -> R<()> {
    let o = Obj::new(
        v,
        p,
        &[
            "owner",
            "name",
            "description",
            "homepage",
            "private",
            "archived",
            "default_branch",
            "topics",
            "collaborators",
            "agent_permission",
            "required_status_checks",
            "labels",
            "milestones",
            "files",
            "branches",
            "issues",
            "pull_requests",
            "releases",
            "delete_branch_on_merge",
            "workflow_runs",
            "workflow_outcomes",
        ],
    )?;
    let owner_in = o.nonempty_str("owner")?;
    let owner = w.users[&owner_in.to_ascii_lowercase()].login.clone();
    let name = o.nonempty_str("name")?;
    if !valid_repo_name(&name) {
        return Err(format!("{}: {name:?} is not a valid repository name", o.at("name")));
    }
    let key = crate::api::repo_key(&owner, &name);
    if w.repos.contains_key(&key) {
        return Err(format!("{}: duplicate repository {owner}/{name}", o.at("name")));
    }
    let default_branch = o.str("default_branch")?.unwrap_or_else(|| "main".into());
    let mut collaborators = BTreeMap::new();
    for (cp, c) in o.items("collaborators")? {
        let (login, role) = match c {
            Value::Object(_) => {
                let co = Obj::new(c, &cp, &["login", "permission"])?;
                let role = match co.str("permission")? {
                    None => Role::Write,
                    Some(r) => Role::parse(&r).filter(|r| *r != Role::None).ok_or_else(|| {
                        format!("{}: {r:?} is not one of read, triage, write, maintain, admin", co.at("permission"))
                    })?,
                };
                (co.nonempty_str("login")?, role)
            }
            _ => (login_of(c, &cp)?, Role::Write),
        };
        collaborators.insert(login.to_ascii_lowercase(), role);
    }
    let agent_role = match o.str("agent_permission")? {
        None => Role::Write,
        Some(r) => Role::parse(&r).ok_or_else(|| {
            format!("{}: {r:?} is not one of none, read, triage, write, maintain, admin", o.at("agent_permission"))
        })?,
    };
    let id = w.next_id();
    let mut repo = Repo {
        id,
        owner: owner.clone(),
        name: name.clone(),
        description: o.str("description")?,
        homepage: o.str("homepage")?,
        private: o.bool("private")?.unwrap_or(false),
        default_branch: default_branch.clone(),
        topics: o.strs("topics")?,
        archived: false,
        has_issues: true,
        allow_merge_commit: true,
        allow_squash_merge: true,
        allow_rebase_merge: true,
        delete_branch_on_merge: o.bool("delete_branch_on_merge")?.unwrap_or(false),
        merge_messages: Default::default(),
        security: Default::default(),
        parent: None,
        created_at: now.to_string(),
        updated_at: now.to_string(),
        pushed_at: now.to_string(),
        collaborators,
        agent_role,
        required_contexts: o.strs("required_status_checks")?,
        labels: Vec::new(),
        milestones: BTreeMap::new(),
        issues: BTreeMap::new(),
        comments: BTreeMap::new(),
        review_comments: BTreeMap::new(),
        events: Vec::new(),
        statuses: Vec::new(),
        check_runs: BTreeMap::new(),
        releases: BTreeMap::new(),
        git: Default::default(),
        next_number: 1,
        open_issues: 0,
    };

    for (lp, l) in o.items("labels")? {
        let lo = Obj::new(l, &lp, &["name", "color", "description"])?;
        let lname = lo.nonempty_str("name")?;
        if repo.label(&lname).is_some() {
            return Err(format!("{lp}.name: duplicate label {lname:?}"));
        }
        let color = lo.str("color")?.unwrap_or_else(|| "ededed".into()).trim_start_matches('#').to_lowercase();
        if color.len() != 6 || !color.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!("{lp}.color: {color:?} is not a 6-digit hex colour"));
        }
        let id = w.next_id();
        repo.labels.push(Label { id, name: lname, color, description: lo.str("description")?, default: false });
    }

    for (mp, m) in o.items("milestones")? {
        let mo = Obj::new(m, &mp, &["number", "title", "description", "state", "due_on"])?;
        let number = mo.positive("number")?.unwrap_or(repo.milestones.len() as u64 + 1);
        if repo.milestones.contains_key(&number) {
            return Err(format!("{mp}.number: duplicate milestone {number}"));
        }
        let state = mo.one_of("state", &["open", "closed"], "open")?;
        let id = w.next_id();
        repo.milestones.insert(
            number,
            Milestone {
                id,
                number,
                title: mo.nonempty_str("title")?,
                description: mo.str("description")?,
                closed_at: (state == "closed").then(|| now.to_string()),
                state,
                due_on: mo.str("due_on")?,
                creator: owner.clone(),
                created_at: now.to_string(),
                updated_at: now.to_string(),
                open_issues: 0,
                closed_issues: 0,
            },
        );
    }

    // Files, by branch. Other branches start from the default branch's files.
    let mut branch_files: BTreeMap<String, Vec<(String, Vec<u8>, String)>> = BTreeMap::new();
    for (fp, f) in o.items("files")? {
        let fo = Obj::new(f, &fp, &["path", "content", "branch", "encoding", "executable"])?;
        let path = fo.nonempty_str("path")?.trim_matches('/').to_string();
        if path.split('/').any(|s| s.is_empty() || s == "." || s == "..") {
            return Err(format!("{}: {path:?} is not a valid file path", fo.at("path")));
        }
        let content = fo.str("content")?.unwrap_or_default();
        let bytes = match fo.one_of("encoding", &["utf-8", "base64"], "utf-8")?.as_str() {
            "base64" => base64::engine::general_purpose::STANDARD
                .decode(content.replace('\n', ""))
                .map_err(|e| format!("{}: not valid base64: {e}", fo.at("content")))?,
            _ => content.into_bytes(),
        };
        let mode = if fo.bool("executable")?.unwrap_or(false) { "100755" } else { "100644" };
        let branch = fo.str("branch")?.unwrap_or_else(|| default_branch.clone());
        branch_files.entry(branch).or_default().push((path, bytes, mode.to_string()));
    }
    let mut extra_branches: Vec<(String, Option<String>)> = Vec::new();
    for (bp, b) in o.items("branches")? {
        match b {
            Value::String(s) => extra_branches.push((s.clone(), None)),
            _ => {
                let bo = Obj::new(b, &bp, &["name", "from"])?;
                extra_branches.push((bo.nonempty_str("name")?, bo.str("from")?));
            }
        }
    }

    let seed_author = |login: &str, w: &World| -> Signature {
        let u = w.users.get(&login.to_ascii_lowercase());
        Signature {
            name: u.and_then(|u| u.name.clone()).unwrap_or_else(|| login.to_string()),
            email: u
                .and_then(|u| u.email.clone())
                .unwrap_or_else(|| format!("{}@users.noreply.github.com", login.to_ascii_lowercase())),
            date: now.to_string(),
        }
    };
    let default_author = {
        let owner_is_user = w.users.get(&owner.to_ascii_lowercase()).is_some_and(|u| u.kind != "Organization");
        if owner_is_user {
            owner.clone()
        } else {
            repo.collaborators
                .keys()
                .next()
                .map(|k| w.users.get(k).map(|u| u.login.clone()).unwrap_or_else(|| k.clone()))
                .unwrap_or_else(|| w.viewer.clone())
        }
    };

    // The default branch: one initial commit with its files (an empty tree if none).
    let mut base_flat = Flat::new();
    for (path, bytes, mode) in branch_files.remove(&default_branch).unwrap_or_default() {
        let sha = repo.git.blob(&bytes);
        base_flat.insert(path, (mode, sha));
    }
    let tree = repo.git.write_flat(&base_flat);
    let sig = seed_author(&default_author, w);
    let base_commit = repo.git.put(Object::Commit(Commit {
        tree,
        parents: vec![],
        author: sig.clone(),
        committer: sig,
        message: "Initial commit".into(),
    }));
    repo.git.refs.insert(format!("refs/heads/{default_branch}"), base_commit.clone());

    // Which pull request uses which head (for commit authorship and messages).
    let prs = o.items("pull_requests")?;
    let mut pr_heads: BTreeMap<String, (String, String)> = BTreeMap::new();
    for (_, pr) in &prs {
        if let (Some(h), Some(t)) = (pr.get("head").and_then(Value::as_str), pr.get("title").and_then(Value::as_str)) {
            let author = pr
                .get("author")
                .or_else(|| pr.get("user"))
                .and_then(Value::as_str)
                .unwrap_or(&default_author)
                .to_string();
            pr_heads.entry(h.to_string()).or_insert((author, t.to_string()));
        }
    }
    for (branch, files) in branch_files {
        if branch.is_empty() || branch.contains("..") || branch.starts_with('/') || branch.ends_with('/') {
            return Err(format!("{p}.files: {branch:?} is not a valid branch name"));
        }
        let mut flat = base_flat.clone();
        let mut names = Vec::new();
        for (path, bytes, mode) in files {
            let sha = repo.git.blob(&bytes);
            names.push(path.clone());
            flat.insert(path, (mode, sha));
        }
        let tree = repo.git.write_flat(&flat);
        let (author, message) = match pr_heads.get(&branch) {
            Some((a, t)) => (a.clone(), t.clone()),
            None => (default_author.clone(), format!("Update {}", names.join(", "))),
        };
        let sig = seed_author(&author, w);
        let c = repo.git.put(Object::Commit(Commit {
            tree,
            parents: vec![base_commit.clone()],
            author: sig.clone(),
            committer: sig,
            message,
        }));
        repo.git.refs.insert(format!("refs/heads/{branch}"), c);
    }
    for (b, from) in extra_branches {
        if repo.git.branch(&b).is_some() {
            continue;
        }
        let from = from.unwrap_or_else(|| default_branch.clone());
        let sha = repo
            .git
            .branch(&from)
            .cloned()
            .ok_or_else(|| format!("{p}.branches: branch {b:?} starts from unknown branch {from:?}"))?;
        repo.git.refs.insert(format!("refs/heads/{b}"), sha);
    }

    // Issues and pull requests share one number space: explicit numbers first.
    let mut items: Vec<SeedIssue> = Vec::new();
    for (ip, it) in o.items("issues")? {
        let n = it.get("number").and_then(Value::as_u64);
        items.push(SeedIssue { path: ip, number: n, pull: false, value: it.clone() });
    }
    for (ip, it) in prs {
        let n = it.get("number").and_then(Value::as_u64);
        items.push(SeedIssue { path: ip, number: n, pull: true, value: it.clone() });
    }
    let mut used = BTreeSet::new();
    for it in &items {
        if let Some(n) = it.number {
            if !used.insert(n) {
                return Err(format!("{}.number: number {n} is already used by another issue or pull request", it.path));
            }
        }
    }
    let mut next = 1;
    for it in &mut items {
        if it.number.is_none() {
            while used.contains(&next) {
                next += 1;
            }
            it.number = Some(next);
            used.insert(next);
        }
    }
    for it in &items {
        if it.pull {
            seed_pull(w, &mut repo, it, &default_author, now)?;
        } else {
            seed_issue(w, &mut repo, it, &default_author, now)?;
        }
    }
    // Without an explicit `required_status_checks`, the contexts seeded on pull requests are
    // the required checks of the default branch: a seeded red check gates the merge (the
    // behaviour tasks written for this product family rely on). `[]` turns the gate off.
    if o.get("required_status_checks").is_none() {
        for s in &repo.statuses {
            if !repo.required_contexts.contains(&s.context) {
                repo.required_contexts.push(s.context.clone());
            }
        }
    }
    repo.next_number = used.iter().max().map(|m| m + 1).unwrap_or(1);
    repo.recount();

    for (rp, r) in o.items("releases")? {
        let ro = Obj::new(r, &rp, &["tag_name", "name", "body", "draft", "prerelease", "target_commitish"])?;
        let tag = ro.nonempty_str("tag_name")?;
        let target = ro.str("target_commitish")?.unwrap_or_else(|| default_branch.clone());
        let sha = repo
            .git
            .resolve(&target)
            .ok_or_else(|| format!("{}: unknown branch or commit {target:?}", ro.at("target_commitish")))?;
        let draft = ro.bool("draft")?.unwrap_or(false);
        if !draft {
            repo.git.refs.entry(format!("refs/tags/{tag}")).or_insert(sha);
        }
        let id = w.next_id();
        repo.releases.insert(
            id,
            Release {
                id,
                tag_name: tag,
                target_commitish: target,
                name: ro.str("name")?,
                body: ro.str("body")?,
                draft,
                prerelease: ro.bool("prerelease")?.unwrap_or(false),
                author: default_author.clone(),
                created_at: now.to_string(),
                published_at: (!draft).then(|| now.to_string()),
            },
        );
    }
    repo.archived = o.bool("archived")?.unwrap_or(false);
    w.repos.insert(key.clone(), repo);
    crate::handlers::actions::seed(w, &key, &o, p, now, &default_author)?;
    Ok(())
}

fn check_labels(repo: &Repo, labels: &[String], path: &str) -> R<Vec<String>> {
    labels
        .iter()
        .map(|l| {
            repo.label(l)
                .map(|x| x.name.clone())
                .ok_or_else(|| format!("{path}: unknown label {l:?} (add it to the repository's `labels`)"))
        })
        .collect()
}

fn seed_common(
    w: &mut World,
    repo: &mut Repo,
    it: &SeedIssue,
    o: &Obj,
    default_author: &str,
    now: &str,
) -> R<Issue> {
    let number = it.number.expect("numbered above");
    let author = match (o.str("author")?, o.str("user")?) {
        (Some(a), _) | (None, Some(a)) => w.users[&a.to_ascii_lowercase()].login.clone(),
        _ => default_author.to_string(),
    };
    let labels = check_labels(repo, &o.strs("labels")?, &o.at("labels"))?;
    let mut assignees: Vec<String> = Vec::new();
    if let Some(a) = o.str("assignee")? {
        assignees.push(a);
    }
    for a in o.strs("assignees")? {
        if !assignees.iter().any(|x| x.eq_ignore_ascii_case(&a)) {
            assignees.push(a);
        }
    }
    let assignees = assignees.into_iter().map(|a| w.users[&a.to_ascii_lowercase()].login.clone()).collect();
    let milestone = match o.get("milestone") {
        None => None,
        Some(Value::Number(n)) => {
            let n = n.as_u64().unwrap_or(0);
            if !repo.milestones.contains_key(&n) {
                return Err(format!("{}: unknown milestone {n}", o.at("milestone")));
            }
            Some(n)
        }
        Some(Value::String(t)) => Some(
            repo.milestones
                .values()
                .find(|m| &m.title == t)
                .map(|m| m.number)
                .ok_or_else(|| format!("{}: unknown milestone {t:?}", o.at("milestone")))?,
        ),
        Some(_) => return Err(format!("{}: expected a milestone number or title", o.at("milestone"))),
    };
    let id = w.next_id();
    let mut issue = Issue {
        id,
        number,
        title: o.nonempty_str("title")?,
        body: o.str("body")?,
        user: author,
        state: "open".into(),
        state_reason: None,
        labels,
        assignees,
        milestone,
        locked: o.bool("locked")?.unwrap_or(false),
        active_lock_reason: None,
        comments: 0,
        created_at: now.to_string(),
        updated_at: now.to_string(),
        closed_at: None,
        closed_by: None,
        reactions: Vec::new(),
        pull: None,
    };
    for (cp, c) in o.items("comments")? {
        let co = Obj::new(c, &cp, &["author", "body"])?;
        let user = match co.str("author")? {
            Some(a) => w.users[&a.to_ascii_lowercase()].login.clone(),
            None => default_author.to_string(),
        };
        let id = w.next_id();
        repo.comments.insert(
            id,
            IssueComment {
                id,
                issue: number,
                user,
                body: co.nonempty_str("body")?,
                created_at: now.to_string(),
                updated_at: now.to_string(),
                reactions: Vec::new(),
            },
        );
        issue.comments += 1;
    }
    Ok(issue)
}

fn seed_issue(w: &mut World, repo: &mut Repo, it: &SeedIssue, default_author: &str, now: &str) -> R<()> {
    let o = Obj::new(
        &it.value,
        &it.path,
        &["number", "title", "body", "state", "state_reason", "author", "user", "labels", "assignees", "assignee", "milestone", "locked", "comments"],
    )?;
    let mut issue = seed_common(w, repo, it, &o, default_author, now)?;
    issue.state = o.one_of("state", &["open", "closed"], "open")?;
    if issue.state == "closed" {
        issue.state_reason =
            Some(o.one_of("state_reason", &["completed", "not_planned", "duplicate"], "completed")?);
        issue.closed_at = Some(now.to_string());
        issue.closed_by = Some(issue.user.clone());
    } else if o.get("state_reason").is_some() {
        o.one_of("state_reason", &["reopened"], "reopened")?;
        issue.state_reason = Some("reopened".into());
    }
    repo.issues.insert(issue.number, issue);
    Ok(())
}

fn seed_pull(w: &mut World, repo: &mut Repo, it: &SeedIssue, default_author: &str, now: &str) -> R<()> {
    let o = Obj::new(
        &it.value,
        &it.path,
        &[
            "number",
            "title",
            "body",
            "head",
            "base",
            "state",
            "author",
            "user",
            "draft",
            "labels",
            "assignees",
            "assignee",
            "milestone",
            "locked",
            "requested_reviewers",
            "reviews",
            "statuses",
            "comments",
        ],
    )?;
    let mut issue = seed_common(w, repo, it, &o, default_author, now)?;
    let head = o.nonempty_str("head")?;
    let base = o.str("base")?.unwrap_or_else(|| repo.default_branch.clone());
    let Some(head_sha) = repo.git.branch(&head).cloned() else {
        return Err(format!(
            "{}: head branch {head:?} does not exist: give it at least one file in `files` with \"branch\": {head:?}",
            o.at("head")
        ));
    };
    let Some(base_sha) = repo.git.branch(&base).cloned() else {
        return Err(format!("{}: base branch {base:?} does not exist", o.at("base")));
    };
    if head == base {
        return Err(format!("{}: head and base are the same branch {head:?}", o.at("head")));
    }
    let head_tree = repo.git.commit(&head_sha).map(|c| c.tree.clone());
    let base_tree = repo.git.commit(&base_sha).map(|c| c.tree.clone());
    if head_tree == base_tree && repo.git.is_ancestor(&head_sha, &base_sha) {
        return Err(format!("{}: head branch {head:?} has no changes against {base:?}", o.at("head")));
    }
    let state = o.one_of("state", &["open", "closed", "merged"], "open")?;
    let pid = w.next_id();
    let mut pull = Pull {
        id: pid,
        head_ref: head.clone(),
        head_sha: head_sha.clone(),
        base_ref: base.clone(),
        draft: o.bool("draft")?.unwrap_or(false),
        merged: false,
        merged_at: None,
        merged_by: None,
        merge_commit_sha: None,
        maintainer_can_modify: false,
        requested_reviewers: o
            .strs("requested_reviewers")?
            .iter()
            .map(|l| w.users[&l.to_ascii_lowercase()].login.clone())
            .collect(),
        reviews: Vec::new(),
    };
    for (rp, r) in o.items("reviews")? {
        let ro = Obj::new(r, &rp, &["author", "state", "body"])?;
        let user = match ro.str("author")? {
            Some(a) => w.users[&a.to_ascii_lowercase()].login.clone(),
            None => return Err(format!("{}: required", ro.at("author"))),
        };
        let state = ro
            .one_of("state", &["APPROVED", "CHANGES_REQUESTED", "COMMENTED", "DISMISSED", "PENDING"], "commented")?
            .to_ascii_uppercase();
        let id = w.next_id();
        pull.reviews.push(Review {
            id,
            user,
            body: ro.str("body")?.unwrap_or_default(),
            submitted_at: (state != "PENDING").then(|| now.to_string()),
            state,
            commit_id: head_sha.clone(),
        });
    }
    for (sp, s) in o.items("statuses")? {
        let so = Obj::new(s, &sp, &["context", "state", "description", "target_url"])?;
        let id = w.next_id();
        repo.statuses.push(Status {
            id,
            sha: head_sha.clone(),
            state: so.one_of("state", &["error", "failure", "pending", "success"], "pending")?,
            context: so.str("context")?.unwrap_or_else(|| "default".into()),
            description: so.str("description")?,
            target_url: so.str("target_url")?,
            creator: default_author.to_string(),
            created_at: now.to_string(),
            updated_at: now.to_string(),
        });
    }
    match state.as_str() {
        "closed" => {
            issue.state = "closed".into();
            issue.closed_at = Some(now.to_string());
            issue.closed_by = Some(issue.user.clone());
        }
        "merged" => {
            let merged_by = repo
                .collaborators
                .keys()
                .next()
                .and_then(|k| w.users.get(k))
                .map(|u| u.login.clone())
                .unwrap_or_else(|| issue.user.clone());
            let sig = Signature {
                name: merged_by.clone(),
                email: format!("{}@users.noreply.github.com", merged_by.to_ascii_lowercase()),
                date: now.to_string(),
            };
            let mb = repo.git.merge_base(&base_sha, &head_sha).unwrap_or_else(|| base_sha.clone());
            let trees = (
                repo.git.commit(&mb).map(|c| c.tree.clone()).unwrap_or_default(),
                base_tree.clone().unwrap_or_default(),
                head_tree.clone().unwrap_or_default(),
            );
            let tree = repo.git.merge_trees(&trees.0, &trees.1, &trees.2).map_err(|c| {
                format!("{}: state \"merged\" but {head:?} conflicts with {base:?} in {}", o.at("state"), c.join(", "))
            })?;
            let mc = repo.git.put(Object::Commit(Commit {
                tree,
                parents: vec![base_sha.clone(), head_sha.clone()],
                author: sig.clone(),
                committer: sig,
                message: format!("Merge pull request #{} from {}/{head}\n\n{}", issue.number, repo.owner, issue.title),
            }));
            repo.git.refs.insert(format!("refs/heads/{base}"), mc.clone());
            pull.merged = true;
            pull.merged_at = Some(now.to_string());
            pull.merged_by = Some(merged_by.clone());
            pull.merge_commit_sha = Some(mc);
            issue.state = "closed".into();
            issue.closed_at = Some(now.to_string());
            issue.closed_by = Some(merged_by);
        }
        _ => {}
    }
    issue.pull = Some(pull);
    repo.issues.insert(issue.number, issue);
    Ok(())
}
