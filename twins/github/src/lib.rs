//! The GitHub twin: a stateful replica of GitHub's REST API (`api.github.com`), faithful
#![recursion_limit = "512"]
//! enough that PyGithub and Octokit work against it unmodified.
//!
//! Layout: `model` (the world's types), `git` (a real content-addressed object store),
//! `seed` (strict seed validation and the default world), `render` (GitHub's JSON shapes),
//! `api` (errors, headers, pagination, permissions) and one module per API area, each
//! handler a named action. `routes` is the one table of every route the twin serves;
//! anything else answers the loud 501 `unsupported`.

pub mod api;
pub mod cache;
pub mod checks;
pub mod diff;
pub mod fast;
pub mod git;
pub mod graphql;
pub mod limits;
pub mod model;
pub mod render;
pub mod routes;
pub mod seed;
pub mod tools;
pub mod webhooks;

mod handlers;

use std::collections::BTreeMap;

use pome_twin_sdk::{Call, CheckDecl, CheckWorld, Credential, HostError, Outcome, Params, Response, Router, Twin, Value, json};
use serde::{Deserialize, Serialize};

use crate::api::{ApiError, DOCS, github_headers};
use crate::model::{Repo, User};

/// The whole replica. `viewer` is the authenticated user every request acts as.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct World {
    pub viewer: String,
    /// Lower-cased login → user (organizations too).
    pub users: BTreeMap<String, User>,
    /// Lower-cased `owner/name` → repository.
    pub repos: BTreeMap<String, Repo>,
    /// Last id handed out; ids are unique across every kind of entity.
    pub next_id: u64,
    /// Sub-issues: a parent issue's id → its sub-issues' ids, in priority order. An issue
    /// has at most one parent (GitHub's rule), so the reverse lookup is a scan of this map.
    pub sub_issues: BTreeMap<u64, Vec<u64>>,
    /// Issue id → the name of its issue type (one of its organization's types).
    pub issue_types: BTreeMap<u64, String>,
    /// Resolved pull request review threads: the thread's first comment id → who resolved it.
    pub resolved_threads: BTreeMap<u64, String>,
    /// Teams: lower-cased `org/slug` → team.
    pub teams: BTreeMap<String, model::Team>,
    /// Custom issue fields: lower-cased organization login → its fields.
    pub issue_fields: BTreeMap<String, Vec<model::IssueField>>,
    /// Issue id → field id → the value set (text, a number's or date's text, an option name).
    pub issue_field_values: BTreeMap<u64, BTreeMap<u64, String>>,
    /// Reactions on pull request review comments: comment id → reactions.
    pub review_comment_reactions: BTreeMap<u64, Vec<model::Reaction>>,
    /// Webhooks of repositories and organisations, by id.
    #[serde(default)]
    pub hooks: BTreeMap<u64, webhooks::Hook>,
    /// Every delivery sent (and redelivered), by id: what the deliveries routes answer.
    #[serde(default)]
    pub hook_deliveries: BTreeMap<u64, webhooks::HookDelivery>,
    /// Gists by id (`handlers/gists.rs`).
    #[serde(default)]
    pub gists: BTreeMap<String, model::Gist>,
    /// GitHub Actions per repository id (`handlers/actions.rs`).
    #[serde(default)]
    pub actions: BTreeMap<u64, model::RepoActions>,
    /// Release assets by id, with their bytes (`handlers/releases.rs`; bounded by
    /// `limits::MAX_ASSET_BYTES` each and `limits::MAX_ASSET_BYTES_PER_SANDBOX` together).
    #[serde(default)]
    pub release_assets: BTreeMap<u64, model::StoredAsset>,
    /// Branch protection rules: repository id → branch → rule (`handlers/protection.rs`).
    #[serde(default)]
    pub branch_protections: BTreeMap<u64, BTreeMap<String, model::Protection>>,
    /// Which world this is for the response cache (never serialised: a restored world is a
    /// new one to the cache).
    #[serde(skip)]
    pub cache: cache::Generation,
}

impl Twin for World {
    const NAME: &'static str = "github";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    fn init(seed: Option<Value>) -> Result<Self, String> {
        seed::build(seed)
    }

    fn router() -> &'static Router<Self> {
        static R: std::sync::OnceLock<Router<World>> = std::sync::OnceLock::new();
        R.get_or_init(routes::router)
    }

    fn tools() -> Vec<pome_twin_sdk::describe::ToolDecl> {
        tools::tools()
    }

    fn unsupported(call: &Call) -> Response {
        let body = json!({
            "message": format!(
                "{} {} is not implemented by the pome GitHub twin",
                call.req.method.as_str(),
                call.req.path
            ),
            "fidelity": "unsupported",
            "documentation_url": DOCS,
        });
        github_headers(call, Response::json(501, &body))
    }

    fn auth_error(call: &Call) -> Response {
        let message = match call.req.auth {
            pome_twin_sdk::Auth::Missing => "Requires authentication",
            _ => "Bad credentials",
        };
        github_headers(call, Response::json(401, &ApiError::new(401, message).body()))
    }

    fn host_error(err: &HostError) -> Response {
        Response::json(err.kind.status(), &json!({"message": err.message, "documentation_url": DOCS}))
    }

    fn state(&self) -> Value {
        self.state_json()
    }

    fn checks() -> Vec<CheckDecl> {
        checks::declared()
    }

    fn evaluate_check(id: &str, params: &Params, world: &CheckWorld<'_>) -> Result<Outcome, String> {
        checks::evaluate(id, params, world)
    }

    fn tool_aliases() -> Vec<(&'static str, &'static str)> {
        checks::TOOL_ALIASES.to_vec()
    }

    /// PyGithub and Octokit send `Authorization: token <t>`; `gh` and curl users send Bearer.
    fn credentials() -> Vec<Credential> {
        vec![Credential::Bearer, Credential::TokenScheme]
    }

    fn agent_env() -> Vec<(&'static str, &'static str)> {
        vec![("POME_GITHUB_TOKEN", "{token}")]
    }
}

impl World {
    /// The world for graders: users, and per repository its settings, labels, milestones,
    /// issues, pull requests (with reviews and merge state), comments, statuses, check runs,
    /// releases and, per branch, the head sha and every file's text.
    pub fn state_json(&self) -> Value {
        let repos: Vec<Value> = self
            .repos
            .values()
            .map(|r| {
                let branches: serde_json::Map<String, Value> = r
                    .git
                    .branches()
                    .map(|(name, sha)| {
                        let tree = r.git.commit(sha).map(|c| c.tree.clone()).unwrap_or_default();
                        let files: serde_json::Map<String, Value> = r
                            .git
                            .flatten(&tree)
                            .into_iter()
                            .map(|(p, (_, blob))| {
                                let text = r.git.blob_bytes(&blob).map(|b| String::from_utf8_lossy(b).into_owned());
                                (p, json!(text))
                            })
                            .collect();
                        (name.to_string(), json!({"sha": sha, "files": files}))
                    })
                    .collect();
                let issue_view = |i: &model::Issue| {
                    json!({
                        "id": i.id, "number": i.number, "title": i.title, "body": i.body, "author": i.user,
                        "state": i.state, "state_reason": i.state_reason, "labels": i.labels,
                        "assignees": i.assignees,
                        "milestone": i.milestone.and_then(|n| r.milestones.get(&n)).map(|m| m.title.clone()),
                        "locked": i.locked, "comments": i.comments,
                        "created_at": i.created_at, "updated_at": i.updated_at, "closed_at": i.closed_at,
                        "closed_by": i.closed_by,
                        "reactions": i.reactions.iter().map(|x| json!({"user": x.user, "content": x.content})).collect::<Vec<_>>(),
                        "type": self.issue_types.get(&i.id),
                        "field_values": handlers::mcp_vendor::field_values(self, r, i.id),
                        "parent": handlers::mcp_vendor::parent_of(self, i.id).and_then(|p| handlers::mcp_vendor::issue_by_id(self, p)).map(|(k, n)| format!("{}#{n}", self.repos[&k].full_name())),
                        "sub_issues": self.sub_issues.get(&i.id).into_iter().flatten().filter_map(|c| handlers::mcp_vendor::issue_by_id(self, *c)).map(|(k, n)| format!("{}#{n}", self.repos[&k].full_name())).collect::<Vec<_>>(),
                    })
                };
                let issues: Vec<Value> = r.issues.values().filter(|i| i.pull.is_none()).map(issue_view).collect();
                let pulls: Vec<Value> = r
                    .issues
                    .values()
                    .filter_map(|i| i.pull.as_ref().map(|p| (i, p)))
                    .map(|(i, p)| {
                        let mut v = issue_view(i);
                        let m = v.as_object_mut().unwrap();
                        m.insert("head".into(), json!(p.head_ref));
                        m.insert("head_sha".into(), json!(p.head_sha));
                        m.insert("base".into(), json!(p.base_ref));
                        m.insert("draft".into(), json!(p.draft));
                        m.insert("merged".into(), json!(p.merged));
                        m.insert("merged_at".into(), json!(p.merged_at));
                        m.insert("merged_by".into(), json!(p.merged_by));
                        m.insert("merge_commit_sha".into(), json!(p.merge_commit_sha));
                        m.insert("requested_reviewers".into(), json!(p.requested_reviewers));
                        m.insert("reviews".into(), serde_json::to_value(&p.reviews).unwrap());
                        m.insert(
                            "review_comments".into(),
                            json!(r.review_comments.values().filter(|c| c.pull == i.number).count()),
                        );
                        v
                    })
                    .collect();
                json!({
                    "id": r.id, "full_name": r.full_name(), "owner": r.owner, "name": r.name,
                    "description": r.description, "private": r.private, "archived": r.archived,
                    "default_branch": r.default_branch, "topics": r.topics, "parent": r.parent,
                    "collaborators": r.collaborators, "agent_permission": r.agent_role,
                    "required_status_checks": r.required_contexts,
                    "labels": serde_json::to_value(&r.labels).unwrap(),
                    "milestones": r.milestones.values().collect::<Vec<_>>(),
                    "issues": issues,
                    "pull_requests": pulls,
                    "comments": r.comments.values().collect::<Vec<_>>(),
                    "review_comments": r.review_comments.values().map(|c| {
                        let mut v = serde_json::to_value(c).unwrap();
                        v["resolved"] = json!(c.in_reply_to.is_none() && self.resolved_threads.contains_key(&c.id));
                        v["reactions"] = json!(self.review_comment_reactions.get(&c.id).into_iter().flatten().map(|x| json!({"user": x.user, "content": x.content})).collect::<Vec<_>>());
                        v
                    }).collect::<Vec<_>>(),
                    "events": r.events,
                    "statuses": r.statuses,
                    "check_runs": r.check_runs.values().collect::<Vec<_>>(),
                    "releases": r.releases.values().map(|x| {
                        let mut v = serde_json::to_value(x).unwrap();
                        v["assets"] = handlers::releases::assets_state(self, r, x.id);
                        v
                    }).collect::<Vec<_>>(),
                    "branches": branches,
                    "tags": r.git.tags().map(|(n, s)| (n.to_string(), json!(s))).collect::<serde_json::Map<_, _>>(),
                    "workflow_runs": handlers::actions::state_of(self, r),
                    "branch_protections": self.branch_protections.get(&r.id).cloned().unwrap_or_default(),
                    "hooks": self.hooks.values().filter(|h| h.repo == Some(r.id)).map(|h| json!({
                        "id": h.id, "url": h.url, "events": h.events, "active": h.active, "content_type": h.content_type,
                    })).collect::<Vec<_>>(),
                    // Every delivery sent about this repository, by its own or its organisation's hooks.
                    "webhook_deliveries": self.hook_deliveries.values().filter(|d| d.repository_id == Some(r.id)).map(|d| json!({
                        "id": d.id, "hook": d.hook, "guid": d.guid, "event": d.event, "action": d.action,
                        "redelivery": d.redelivery, "url": d.url, "delivered_at": d.delivered_at,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        json!({
            "viewer": self.viewer,
            "users": self.users.values().collect::<Vec<_>>(),
            "repositories": repos,
            "teams": self.teams.values().collect::<Vec<_>>(),
            "gists": self.gists.values().map(|g| json!({
                "id": g.id, "owner": g.owner, "description": g.description, "public": g.public,
                "files": g.current().files, "revisions": g.history.len(), "fork_of": g.fork_of,
                "stars": g.stars, "comments": g.comments.values().map(|c| json!({"id": c.id, "user": c.user, "body": c.body})).collect::<Vec<_>>(),
                "created_at": g.created_at, "updated_at": g.updated_at,
            })).collect::<Vec<_>>(),
            "issue_fields": self.issue_fields.iter().map(|(o, f)| (o.clone(), serde_json::to_value(f).unwrap())).collect::<serde_json::Map<_, _>>(),
        })
    }
}

// The component export only exists on wasm: a native cdylib cannot link the WIT export
// names, and native builds are for tests.
#[cfg(target_arch = "wasm32")]
pome_twin_sdk::export_twin!(World);
