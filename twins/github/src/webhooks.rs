//! Webhooks: repository and organisation hooks, the events the REST handlers' changes set
//! off, and the deliveries the host sends out of the sandbox.
//!
//! Events are derived in one place, after a write handler returns, from the changes it
//! recorded on the tape (an issue's before and after, a ref's old and new sha…), so every
//! route that makes a change, whichever handler it is, sets off the event GitHub would. Each
//! delivery is signed, queued with [`Call::deliver`] and recorded in the world, so the
//! deliveries routes list what was sent. The host never reports an outcome back into the
//! world (replays stay exact), so a delivery shows as GitHub shows one still pending.

use std::collections::{BTreeMap, BTreeSet};

use pome_twin_sdk::{Call, Delivery, Value, json, time};
use serde::{Deserialize, Serialize};

use crate::World;
use crate::model::{Issue, Repo};

/// One hook: a repository's (`repo` set) or an organisation's (`org` set).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Hook {
    pub id: u64,
    /// The id of a repository hook's repository (ids survive a rename; keys do not).
    pub repo: Option<u64>,
    /// Lower-cased login of an organisation hook.
    pub org: Option<String>,
    pub active: bool,
    /// Event names, or `*` for all.
    pub events: Vec<String>,
    pub url: String,
    /// `json` or `form`.
    pub content_type: String,
    pub secret: Option<String>,
    pub insecure_ssl: String,
    pub created_at: String,
    pub updated_at: String,
}

/// One delivery as sent: what the deliveries routes answer and a redelivery re-sends.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HookDelivery {
    pub id: u64,
    pub hook: u64,
    pub guid: String,
    pub delivered_at: String,
    pub redelivery: bool,
    pub event: String,
    pub action: Option<String>,
    pub repository_id: Option<u64>,
    pub url: String,
    /// Sent as `payload=<url-encoded JSON>` rather than as JSON.
    pub form: bool,
    /// The request's headers and payload (JSON text), kept for the newest
    /// [`MAX_DELIVERIES_PER_HOOK`] of each hook; older deliveries keep only what they were.
    pub headers: Vec<(String, String)>,
    pub payload: Option<String>,
}

/// GitHub's limit of hooks on one repository or organisation (per event; the twin counts
/// hooks, which is never more permissive).
pub const MAX_HOOKS: usize = 20;

/// Deliveries per hook whose request (headers and payload) is kept for the deliveries routes
/// and redelivery: payloads are a few KB each, and a store has 128 MiB, so a long session's
/// hooks must not keep them all (GitHub itself keeps 3 days' worth).
pub const MAX_DELIVERIES_PER_HOOK: usize = 100;

/// Deliveries remembered at all (event, action, GUID: what the state export and its check
/// read), oldest forgotten first; about 200 bytes each.
pub const MAX_DELIVERY_RECORDS: usize = 10_000;

/// The events a hook may name (GitHub refuses others with 422).
pub const EVENTS: &[&str] = &[
    "*", "check_run", "check_suite", "create", "delete", "issue_comment", "issues", "label", "milestone", "pull_request", "pull_request_review",
    "pull_request_review_comment", "pull_request_review_thread", "push", "release", "status", "commit_comment", "deployment", "deployment_status",
    "fork", "gollum", "member", "public", "repository", "star", "watch", "workflow_run", "workflow_job", "sub_issues",
];

impl Hook {
    pub fn wants(&self, event: &str) -> bool {
        self.active && self.events.iter().any(|e| e == "*" || e == event)
    }

    fn owner_path(&self, w: &World) -> String {
        match (&self.repo, &self.org) {
            (Some(id), _) => format!("repos/{}", repo_key_by_id(w, *id).map(|k| w.repos[&k].full_name()).unwrap_or_default()),
            (_, Some(o)) => format!("orgs/{}", w.users.get(o).map(|u| u.login.clone()).unwrap_or_else(|| o.clone())),
            _ => unreachable!("a hook belongs to a repository or an organisation"),
        }
    }

    /// `config` as GitHub answers it: the secret is never shown.
    pub fn config_json(&self) -> Value {
        let mut c = json!({"content_type": self.content_type, "insecure_ssl": self.insecure_ssl, "url": self.url});
        if self.secret.is_some() {
            c["secret"] = json!("********");
        }
        c
    }

    pub fn json(&self, w: &World, b: &str) -> Value {
        let u = format!("{b}/{}/hooks/{}", self.owner_path(w), self.id);
        let last = w.hook_deliveries.values().rev().find(|d| d.hook == self.id);
        let mut v = json!({
            "type": if self.repo.is_some() { "Repository" } else { "Organization" },
            "id": self.id, "name": "web", "active": self.active, "events": self.events,
            "config": self.config_json(), "updated_at": self.updated_at, "created_at": self.created_at,
            "url": u, "ping_url": format!("{u}/pings"), "deliveries_url": format!("{u}/deliveries"),
        });
        if self.repo.is_some() {
            v["test_url"] = json!(format!("{u}/test"));
            // Nothing comes back from the host: a hook that was sent something is pending.
            v["last_response"] = match last {
                Some(_) => json!({"code": null, "status": "pending", "message": null}),
                None => json!({"code": null, "status": "unused", "message": null}),
            };
        }
        v
    }
}

impl HookDelivery {
    pub fn item_json(&self) -> Value {
        json!({
            "id": self.id, "guid": self.guid, "delivered_at": self.delivered_at, "redelivery": self.redelivery,
            "duration": 0, "status": "pending", "status_code": 0, "event": self.event, "action": self.action,
            "installation_id": null, "repository_id": self.repository_id, "throttled_at": null,
        })
    }

    pub fn full_json(&self) -> Value {
        let mut v = self.item_json();
        let headers: Option<serde_json::Map<String, Value>> =
            self.payload.as_ref().map(|_| self.headers.iter().map(|(k, x)| (k.clone(), json!(x))).collect());
        let payload = self.payload.as_deref().and_then(|p| serde_json::from_str::<Value>(p).ok());
        v["url"] = json!(self.url);
        v["request"] = json!({"headers": headers, "payload": payload});
        v["response"] = json!({"headers": null, "payload": null});
        v
    }
}

/// The key of the repository with id `id`, if it still exists.
pub fn repo_key_by_id(w: &World, id: u64) -> Option<String> {
    w.repos.iter().find(|(_, r)| r.id == id).map(|(k, _)| k.clone())
}

// ---------------------------------------------------------------------------------------
// Signing and sending.

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn hmac_sha256(key: &[u8], body: &[u8]) -> String {
    use hmac::{Hmac, Mac};
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(key).expect("any key length");
    mac.update(body);
    hex(&mac.finalize().into_bytes())
}

/// HMAC-SHA1 (RFC 2104) over `sha1_smol`, which has no `Digest` impl for the `hmac` crate.
pub fn hmac_sha1(key: &[u8], body: &[u8]) -> String {
    let mut k = [0u8; 64];
    if key.len() > 64 {
        k[..20].copy_from_slice(&sha1_smol::Sha1::from(key).digest().bytes());
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let mut inner = sha1_smol::Sha1::new();
    inner.update(&k.map(|b| b ^ 0x36));
    inner.update(body);
    let mut outer = sha1_smol::Sha1::new();
    outer.update(&k.map(|b| b ^ 0x5c));
    outer.update(&inner.digest().bytes());
    hex(&outer.digest().bytes())
}

/// A GUID for delivery `id`: derived from the world's own counter, so replays repeat it.
fn guid(id: u64, hook: u64) -> String {
    let h = sha1_smol::Sha1::from(format!("github-delivery:{hook}:{id}")).digest().to_string();
    format!("{}-{}-4{}-8{}-{}", &h[0..8], &h[8..12], &h[13..16], &h[17..20], &h[20..32])
}

/// `application/x-www-form-urlencoded` escaping (space as `+`).
fn form_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 2);
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => out.push(b as char),
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Sign, queue and record one delivery of `payload` to `hook`.
pub fn send(w: &mut World, call: &mut Call, hook_id: u64, event: &str, payload: &Value) {
    let Some(hook) = w.hooks.get(&hook_id).cloned() else { return };
    let id = w.next_id();
    let payload_text = serde_json::to_string(payload).expect("payloads serialise");
    let guid = guid(id, hook.id);
    let (target_type, target_id) = match (&hook.repo, &hook.org) {
        (Some(id), _) => ("repository", *id),
        (_, Some(o)) => ("organization", w.users.get(o).map(|u| u.id).unwrap_or(0)),
        _ => unreachable!("a hook belongs to a repository or an organisation"),
    };
    let form = hook.content_type == "form";
    let content_type = if form { "application/x-www-form-urlencoded" } else { "application/json" };
    let body = body_of(form, &payload_text);
    let mut headers: Vec<(String, String)> = vec![
        ("Accept".into(), "*/*".into()),
        ("Content-Type".into(), content_type.into()),
        ("User-Agent".into(), "GitHub-Hookshot/pome".into()),
        ("X-GitHub-Delivery".into(), guid.clone()),
        ("X-GitHub-Event".into(), event.into()),
        ("X-GitHub-Hook-ID".into(), hook.id.to_string()),
        ("X-GitHub-Hook-Installation-Target-ID".into(), target_id.to_string()),
        ("X-GitHub-Hook-Installation-Target-Type".into(), target_type.into()),
    ];
    if let Some(secret) = hook.secret.as_deref().filter(|s| !s.is_empty()) {
        headers.push(("X-Hub-Signature".into(), format!("sha1={}", hmac_sha1(secret.as_bytes(), &body))));
        headers.push(("X-Hub-Signature-256".into(), format!("sha256={}", hmac_sha256(secret.as_bytes(), &body))));
    }
    let d = HookDelivery {
        id,
        hook: hook.id,
        guid,
        delivered_at: time::now_iso(),
        redelivery: false,
        event: event.into(),
        action: payload.get("action").and_then(Value::as_str).map(String::from),
        repository_id: payload.pointer("/repository/id").and_then(Value::as_u64),
        url: hook.url.clone(),
        form,
        headers,
        payload: Some(payload_text),
    };
    queue(call, &d);
    keep_delivery(w, d);
}

/// Record `d`: past [`MAX_DELIVERIES_PER_HOOK`] its hook's oldest kept request is dropped,
/// past [`MAX_DELIVERY_RECORDS`] the oldest delivery is forgotten.
fn keep_delivery(w: &mut World, d: HookDelivery) {
    let hook = d.hook;
    w.hook_deliveries.insert(d.id, d);
    let kept: Vec<u64> = w.hook_deliveries.values().rev().filter(|x| x.hook == hook && x.payload.is_some()).map(|x| x.id).collect();
    for id in kept.into_iter().skip(MAX_DELIVERIES_PER_HOOK) {
        let old = w.hook_deliveries.get_mut(&id).expect("listed above");
        old.payload = None;
        old.headers = Vec::new();
    }
    while w.hook_deliveries.len() > MAX_DELIVERY_RECORDS {
        w.hook_deliveries.pop_first();
    }
}

/// The body as sent: the JSON itself, or `payload=<url-encoded JSON>` for a form hook.
fn body_of(form: bool, payload: &str) -> Vec<u8> {
    if form { format!("payload={}", form_escape(payload)).into_bytes() } else { payload.as_bytes().to_vec() }
}

/// Hand one recorded delivery (one that still has its payload) to the host.
pub fn queue(call: &mut Call, d: &HookDelivery) {
    let Some(payload) = &d.payload else { return };
    let label = match &d.action {
        Some(a) => format!("{}.{a}", d.event),
        None => d.event.clone(),
    };
    call.deliver(Delivery { url: d.url.clone(), method: "POST".into(), headers: d.headers.clone(), body: body_of(d.form, payload), event: label });
}

/// Redeliver `d` as GitHub does: same GUID and payload, a new delivery id, `redelivery`.
pub fn redeliver(w: &mut World, call: &mut Call, d: &HookDelivery) -> u64 {
    let id = w.next_id();
    let again = HookDelivery { id, redelivery: true, delivered_at: time::now_iso(), ..d.clone() };
    queue(call, &again);
    keep_delivery(w, again);
    id
}

// ---------------------------------------------------------------------------------------
// Payload shapes: GitHub's webhook objects are the REST objects less a few keys (and plus
// one or two); these lists are the keys GitHub's webhook payloads carry.

const USER: &[&str] = &[
    "login", "id", "node_id", "name", "email", "avatar_url", "gravatar_id", "url", "html_url", "followers_url", "following_url", "gists_url", "starred_url",
    "subscriptions_url", "organizations_url", "repos_url", "events_url", "received_events_url", "type", "site_admin",
];
const REPO: &[&str] = &[
    "id", "node_id", "name", "full_name", "private", "owner", "html_url", "description", "fork", "url", "forks_url", "keys_url", "collaborators_url", "teams_url",
    "hooks_url", "issue_events_url", "events_url", "assignees_url", "branches_url", "tags_url", "blobs_url", "git_tags_url", "git_refs_url", "trees_url",
    "statuses_url", "languages_url", "stargazers_url", "contributors_url", "subscribers_url", "subscription_url", "commits_url", "git_commits_url",
    "comments_url", "issue_comment_url", "contents_url", "compare_url", "merges_url", "archive_url", "downloads_url", "issues_url", "pulls_url",
    "milestones_url", "notifications_url", "labels_url", "releases_url", "deployments_url", "created_at", "updated_at", "pushed_at", "git_url", "ssh_url",
    "clone_url", "svn_url", "homepage", "size", "stargazers_count", "watchers_count", "language", "has_issues", "has_projects", "has_downloads", "has_wiki",
    "has_pages", "has_discussions", "forks_count", "mirror_url", "archived", "disabled", "open_issues_count", "license", "forks", "open_issues", "watchers",
    "default_branch", "allow_squash_merge", "allow_merge_commit", "allow_rebase_merge", "allow_auto_merge", "allow_forking", "allow_update_branch",
    "use_squash_pr_title_as_default", "is_template", "web_commit_signoff_required", "topics", "visibility", "delete_branch_on_merge", "custom_properties",
];
const LABEL: &[&str] = &["id", "node_id", "url", "name", "description", "color", "default"];
const MILESTONE: &[&str] = &[
    "url", "html_url", "labels_url", "id", "node_id", "number", "title", "description", "creator", "open_issues", "closed_issues", "state", "created_at",
    "updated_at", "due_on", "closed_at",
];
const ISSUE: &[&str] = &[
    "url", "repository_url", "labels_url", "comments_url", "events_url", "html_url", "id", "node_id", "number", "title", "user", "labels", "state", "locked",
    "assignee", "assignees", "milestone", "comments", "created_at", "updated_at", "closed_at", "author_association", "active_lock_reason", "draft",
    "performed_via_github_app", "pull_request", "body", "reactions", "timeline_url", "state_reason",
];
const COMMENT: &[&str] =
    &["url", "html_url", "issue_url", "id", "node_id", "user", "created_at", "updated_at", "author_association", "body", "reactions", "performed_via_github_app"];
const PULL: &[&str] = &[
    "url", "id", "node_id", "html_url", "diff_url", "patch_url", "issue_url", "number", "state", "locked", "title", "user", "body", "created_at", "updated_at",
    "closed_at", "merged_at", "merge_commit_sha", "assignee", "assignees", "requested_reviewers", "requested_teams", "labels", "milestone", "commits_url",
    "review_comments_url", "review_comment_url", "comments_url", "statuses_url", "head", "base", "_links", "author_association", "auto_merge",
    "active_lock_reason", "draft", "merged", "mergeable", "rebaseable", "mergeable_state", "merged_by", "comments", "review_comments",
    "maintainer_can_modify", "commits", "additions", "deletions", "changed_files",
];
/// The pull request of review and review comment events: without the merge details.
const SIMPLE_PULL: &[&str] = &[
    "url", "id", "node_id", "html_url", "diff_url", "patch_url", "issue_url", "number", "state", "locked", "title", "user", "body", "created_at", "updated_at",
    "closed_at", "merged_at", "merge_commit_sha", "assignee", "assignees", "requested_reviewers", "requested_teams", "labels", "milestone", "draft",
    "commits_url", "review_comments_url", "review_comment_url", "comments_url", "statuses_url", "head", "base", "_links", "author_association",
    "auto_merge", "active_lock_reason",
];
const REVIEW: &[&str] =
    &["id", "node_id", "user", "body", "commit_id", "submitted_at", "state", "html_url", "pull_request_url", "author_association", "_links"];
const REVIEW_COMMENT: &[&str] = &[
    "url", "pull_request_review_id", "id", "node_id", "diff_hunk", "path", "position", "original_position", "commit_id", "original_commit_id", "user", "body",
    "created_at", "updated_at", "html_url", "pull_request_url", "author_association", "_links", "reactions", "start_line", "original_start_line",
    "start_side", "line", "original_line", "side", "in_reply_to_id", "subject_type",
];
const RELEASE: &[&str] = &[
    "url", "assets_url", "upload_url", "html_url", "id", "node_id", "tag_name", "target_commitish", "name", "draft", "author", "prerelease", "created_at",
    "published_at", "assets", "tarball_url", "zipball_url", "body",
];
const APP: &[&str] = &["id", "slug", "node_id", "owner", "name", "description", "external_url", "html_url", "created_at", "updated_at", "permissions", "events"];
const RUN: &[&str] = &[
    "id", "node_id", "head_sha", "external_id", "url", "html_url", "details_url", "status", "conclusion", "started_at", "completed_at", "output", "name",
    "check_suite", "app", "pull_requests",
];
const RUN_SUITE: &[&str] =
    &["id", "node_id", "head_branch", "head_sha", "status", "conclusion", "url", "before", "after", "pull_requests", "app", "created_at", "updated_at"];
const SUITE: &[&str] = &[
    "id", "node_id", "head_branch", "head_sha", "status", "conclusion", "url", "before", "after", "pull_requests", "app", "created_at", "updated_at",
    "rerequestable", "runs_rerequestable", "latest_check_runs_count", "check_runs_url", "head_commit",
];

fn keep(v: &mut Value, keys: &[&str]) {
    if let Some(m) = v.as_object_mut() {
        m.retain(|k, _| keys.contains(&k.as_str()));
    }
}

fn user(v: &mut Value) {
    keep(v, USER);
}

fn each(v: &mut Value, key: &str, f: fn(&mut Value)) {
    match v.get_mut(key) {
        Some(Value::Array(a)) => a.iter_mut().for_each(f),
        Some(x @ Value::Object(_)) => f(x),
        _ => {}
    }
}

fn repo_shape(v: &mut Value) {
    keep(v, REPO);
    each(v, "owner", user);
    if v.get("custom_properties").is_none() {
        v["custom_properties"] = json!({});
    }
}

fn milestone_shape(v: &mut Value) {
    keep(v, MILESTONE);
    each(v, "creator", user);
}

fn issue_shape(v: &mut Value) {
    keep(v, ISSUE);
    each(v, "user", user);
    each(v, "assignee", user);
    each(v, "assignees", user);
    each(v, "labels", |l| keep(l, LABEL));
    each(v, "milestone", milestone_shape);
}

fn pull_shape(v: &mut Value) {
    keep(v, PULL);
    for k in ["user", "assignee", "assignees", "requested_reviewers", "merged_by"] {
        each(v, k, user);
    }
    each(v, "labels", |l| keep(l, LABEL));
    each(v, "milestone", milestone_shape);
    for side in ["head", "base"] {
        if let Some(s) = v.get_mut(side) {
            each(s, "user", user);
            each(s, "repo", repo_shape);
        }
    }
}

impl World {
    fn hook_repo(&self, b: &str, r: &Repo) -> Value {
        let mut v = self.repo_json(b, r, true);
        repo_shape(&mut v);
        v
    }

    fn hook_user(&self, b: &str, login: &str) -> Value {
        let mut v = self.user_json(b, login);
        user(&mut v);
        v
    }

    /// The issue or pull request `n` of `r` as a webhook payload carries it.
    fn hook_issue(&self, b: &str, r: &Repo, i: &Issue) -> Value {
        let mut v = self.issue_json(b, r, i);
        issue_shape(&mut v);
        v
    }

    fn hook_pull(&self, b: &str, r: &Repo, i: &Issue) -> Value {
        let mut v = self.pull_json(b, r, i, true);
        pull_shape(&mut v);
        v
    }

    fn hook_simple_pull(&self, b: &str, r: &Repo, i: &Issue) -> Value {
        let mut v = self.hook_pull(b, r, i);
        keep(&mut v, SIMPLE_PULL);
        v
    }
}

// ---------------------------------------------------------------------------------------
// Events.

/// One event to send: its name, the repository it happened in and its own fields (the
/// common `repository`, `organization` and `sender` are added when it is sent).
struct Event {
    name: &'static str,
    repo: String,
    body: Value,
}

/// The hooks that hear about events in repository `key`: its own and its organisation's.
fn hooks_for(w: &World, key: &str, event: &str) -> Vec<u64> {
    let Some(r) = w.repos.get(key) else { return Vec::new() };
    let owner = Some(r.owner.to_ascii_lowercase());
    w.hooks
        .values()
        .filter(|h| h.repo == Some(r.id) || (h.org.is_some() && h.org == owner))
        .filter(|h| h.wants(event))
        .map(|h| h.id)
        .collect()
}

/// `repository`, `organization` (for an organisation's repository) and `sender`.
fn complete(w: &World, b: &str, key: &str, mut body: Value) -> Value {
    let r = &w.repos[key];
    let m = body.as_object_mut().expect("event bodies are objects");
    m.insert("repository".into(), w.hook_repo(b, r));
    if let Some(org) = w.users.get(&r.owner.to_ascii_lowercase()).filter(|u| u.kind == "Organization") {
        m.insert("organization".into(), crate::handlers::misc::org_json(b, org));
    }
    m.insert("sender".into(), w.hook_user(b, &w.viewer));
    body
}

/// After a write: the events its recorded changes set off, sent to every hook that wants
/// them. Does nothing (and costs nothing) in a world without hooks.
pub fn after_write(w: &mut World, call: &mut Call) {
    if w.hooks.is_empty() || call.changes.is_empty() {
        return;
    }
    // A deleted repository takes its hooks and their deliveries with it, as on GitHub.
    if call.changes.iter().any(|c| c.entity == "repository" && c.after.is_none()) {
        let repos = &w.repos;
        w.hooks.retain(|_, h| h.repo.is_none_or(|id| repos.values().any(|r| r.id == id)));
        let hooks = &w.hooks;
        w.hook_deliveries.retain(|_, d| hooks.contains_key(&d.hook));
    }
    let b = call.req.base_url.clone();
    let mut events = Vec::new();
    for ch in call.changes.clone() {
        let parse = |s: &Option<String>| s.as_deref().and_then(|t| serde_json::from_str::<Value>(t).ok());
        let (before, after) = (parse(&ch.before), parse(&ch.after));
        derive(w, &b, &ch.entity, &ch.id, before.as_ref(), after.as_ref(), &mut events);
    }
    for e in events {
        let targets = hooks_for(w, &e.repo, e.name);
        if targets.is_empty() {
            continue;
        }
        let payload = complete(w, &b, &e.repo, e.body);
        for h in targets {
            send(w, call, h, e.name, &payload);
        }
    }
}

/// `owner/name` (any case) → the repository's key, if it exists.
fn key_of(w: &World, full: &str) -> Option<String> {
    let k = full.to_ascii_lowercase();
    w.repos.contains_key(&k).then_some(k)
}

fn str_list(v: Option<&Value>, key: &str) -> Vec<String> {
    v.and_then(|v| v.get(key)).and_then(Value::as_array).map(|a| a.iter().filter_map(|x| x.as_str().map(String::from)).collect()).unwrap_or_default()
}

fn added(before: &[String], after: &[String]) -> Vec<String> {
    after.iter().filter(|x| !before.iter().any(|y| y.eq_ignore_ascii_case(x))).cloned().collect()
}

fn derive(w: &World, b: &str, entity: &str, id: &str, before: Option<&Value>, after: Option<&Value>, out: &mut Vec<Event>) {
    match entity {
        "issue" | "pull_request" => issue_events(w, b, id, before, after, out),
        "issue_comment" => {
            let Ok(cid) = id.parse::<u64>() else { return };
            let Some((key, c)) = find_comment(w, cid, before.or(after)) else { return };
            let r = &w.repos[&key];
            let Some(i) = r.issues.get(&c.issue) else { return };
            let action = match (before, after) {
                (None, Some(_)) => "created",
                (Some(_), None) => "deleted",
                _ => "edited",
            };
            let mut comment = w.comment_json(b, r, &c);
            keep(&mut comment, COMMENT);
            each(&mut comment, "user", user);
            let mut body = json!({"action": action, "issue": w.hook_issue(b, r, i), "comment": comment});
            if action == "edited" {
                body["changes"] = json!({"body": {"from": before.and_then(|v| v.get("body")).cloned().unwrap_or(Value::Null)}});
            }
            out.push(Event { name: "issue_comment", repo: key, body });
        }
        "review" => {
            // `owner/name#n:id`
            let Some((full, rest)) = id.split_once('#') else { return };
            let Some((n, rid)) = rest.split_once(':') else { return };
            let (Some(key), Ok(n), Ok(rid)) = (key_of(w, full), n.parse::<u64>(), rid.parse::<u64>()) else { return };
            let r = &w.repos[&key];
            let Some(i) = r.issues.get(&n) else { return };
            let state = |v: Option<&Value>| v.and_then(|v| v.get("state")).and_then(Value::as_str).map(String::from);
            let action = match (state(before).as_deref(), state(after).as_deref()) {
                (_, Some("PENDING")) | (_, None) => return,
                (None | Some("PENDING"), _) => "submitted",
                (_, Some("DISMISSED")) => "dismissed",
                _ => "edited",
            };
            let Some(rv) = i.pull.as_ref().and_then(|p| p.reviews.iter().find(|x| x.id == rid)) else { return };
            let mut review = crate::render::review_json(w, b, r, n, rv);
            keep(&mut review, REVIEW);
            each(&mut review, "user", user);
            if review.get("submitted_at").is_none() {
                review["submitted_at"] = Value::Null;
            }
            // Webhooks spell review states in lower case (`approved`), REST in upper.
            review["state"] = json!(rv.state.to_ascii_lowercase());
            let pull = w.hook_simple_pull(b, r, i);
            let mut body = json!({"action": action, "review": review, "pull_request": pull});
            if action == "edited" {
                body["changes"] = json!({"body": {"from": before.and_then(|v| v.get("body")).cloned().unwrap_or(Value::Null)}});
            }
            out.push(Event { name: "pull_request_review", repo: key.clone(), body });
            // The comments of a pending review go out when it is submitted.
            if action == "submitted" && before.is_some() {
                for c in r.review_comments.values().filter(|c| c.review_id == Some(rid)) {
                    let mut comment = crate::handlers::pulls::review_comment_json(w, b, r, c);
                    keep(&mut comment, REVIEW_COMMENT);
                    each(&mut comment, "user", user);
                    out.push(Event { name: "pull_request_review_comment", repo: key.clone(), body: json!({"action": "created", "comment": comment, "pull_request": pull}) });
                }
            }
        }
        "review_comment" => {
            let Ok(cid) = id.parse::<u64>() else { return };
            let Some(key) = w.repos.iter().find(|(_, r)| r.review_comments.contains_key(&cid)).map(|(k, _)| k.clone()).or_else(|| {
                // A deleted comment is gone from the world: find its pull request by number.
                let n = before?.get("pull")?.as_u64()?;
                let commit = before?.get("commit_id")?.as_str()?;
                w.repos.iter().find(|(_, r)| r.issues.get(&n).is_some_and(|_| r.git.get(commit).is_some())).map(|(k, _)| k.clone())
            }) else {
                return;
            };
            let r = &w.repos[&key];
            let c: crate::model::ReviewComment = match r.review_comments.get(&cid) {
                Some(c) => c.clone(),
                None => match before.and_then(|v| serde_json::from_value(v.clone()).ok()) {
                    Some(c) => c,
                    None => return,
                },
            };
            let Some(i) = r.issues.get(&c.pull) else { return };
            // A comment of a pending review is sent when the review is.
            if c.review_id.is_some_and(|rid| i.pull.as_ref().is_some_and(|p| p.reviews.iter().any(|x| x.id == rid && x.state == "PENDING"))) {
                return;
            }
            let action = match (before, after) {
                (None, Some(_)) => "created",
                (Some(_), None) => "deleted",
                _ => "edited",
            };
            let mut comment = crate::handlers::pulls::review_comment_json(w, b, r, &c);
            keep(&mut comment, REVIEW_COMMENT);
            each(&mut comment, "user", user);
            let mut body = json!({"action": action, "comment": comment, "pull_request": w.hook_simple_pull(b, r, i)});
            if action == "edited" {
                body["changes"] = json!({"body": {"from": before.and_then(|v| v.get("body")).cloned().unwrap_or(Value::Null)}});
            }
            out.push(Event { name: "pull_request_review_comment", repo: key, body });
        }
        "label" => {
            let Some((full, _)) = id.split_once(':') else { return };
            let Some(key) = key_of(w, full) else { return };
            let r = &w.repos[&key];
            let (action, obj) = match (before, after) {
                (None, Some(a)) => ("created", a),
                (Some(bf), None) => ("deleted", bf),
                (Some(_), Some(a)) => ("edited", a),
                _ => return,
            };
            let Ok(l) = serde_json::from_value::<crate::model::Label>(obj.clone()) else { return };
            let mut label = w.label_json(b, r, &l);
            keep(&mut label, LABEL);
            let mut body = json!({"action": action, "label": label});
            if let (Some(bf), Some(a)) = (before, after) {
                let mut changes = serde_json::Map::new();
                for k in ["name", "color", "description"] {
                    if bf.get(k) != a.get(k) && bf.get(k).is_some_and(|v| !v.is_null()) {
                        changes.insert(k.into(), json!({"from": bf.get(k)}));
                    }
                }
                body["changes"] = Value::Object(changes);
            }
            out.push(Event { name: "label", repo: key, body });
        }
        "milestone" => {
            let Some((full, _)) = id.split_once(':') else { return };
            let Some(key) = key_of(w, full) else { return };
            let r = &w.repos[&key];
            let obj = after.or(before).expect("a change has a side");
            let Ok(m) = serde_json::from_value::<crate::model::Milestone>(obj.clone()) else { return };
            let st = |v: Option<&Value>| v.and_then(|v| v.get("state")).and_then(Value::as_str).map(String::from);
            let mut changes = serde_json::Map::new();
            let action = match (before, after) {
                (None, Some(_)) => "created",
                (Some(_), None) => "deleted",
                _ if st(before) != st(after) => {
                    if st(after).as_deref() == Some("closed") {
                        "closed"
                    } else {
                        "opened"
                    }
                }
                (Some(bf), Some(a)) => {
                    // A change from nothing has no `from` (GitHub leaves it out).
                    for k in ["title", "description", "due_on"] {
                        if bf.get(k) != a.get(k) && bf.get(k).is_some_and(|v| !v.is_null()) {
                            changes.insert(k.into(), json!({"from": bf.get(k)}));
                        }
                    }
                    "edited"
                }
                _ => return,
            };
            let mut milestone = w.milestone_json(b, r, &m);
            milestone_shape(&mut milestone);
            let mut body = json!({"action": action, "milestone": milestone});
            if action == "edited" {
                body["changes"] = Value::Object(changes);
            }
            out.push(Event { name: "milestone", repo: key, body });
        }
        "release" => {
            let Some((full, _)) = id.split_once(':') else { return };
            let Some(key) = key_of(w, full) else { return };
            let r = &w.repos[&key];
            let obj = after.or(before).expect("a change has a side");
            let Ok(x) = serde_json::from_value::<crate::model::Release>(obj.clone()) else { return };
            let mut release = crate::handlers::releases::release_json(w, b, r, &x);
            keep(&mut release, RELEASE);
            each(&mut release, "author", user);
            // Webhooks carry an empty body where REST answers null, and (GitHub's description
            // since immutable releases) `immutable` and `updated_at`.
            if release["body"].is_null() {
                release["body"] = json!("");
            }
            release["immutable"] = json!(false);
            release["updated_at"] = json!(x.published_at.clone().unwrap_or_else(|| x.created_at.clone()));
            let draft = |v: Option<&Value>| v.and_then(|v| v.get("draft")).and_then(Value::as_bool);
            let mut actions: Vec<&str> = match (before, after) {
                (None, Some(_)) if x.draft => vec!["created"],
                (None, Some(_)) => vec!["created", "published"],
                (Some(_), None) => vec!["deleted"],
                _ if draft(before) == Some(true) && draft(after) == Some(false) => vec!["published"],
                _ => vec!["edited"],
            };
            // GitHub also sends `released` when a published release is not a pre-release.
            if actions.contains(&"published") && !x.prerelease {
                actions.push("released");
            }
            for action in actions {
                let mut body = json!({"action": action, "release": release});
                if action == "edited" {
                    let mut changes = serde_json::Map::new();
                    for k in ["body", "name", "tag_name"] {
                        let was = before.and_then(|v| v.get(k));
                        if was != after.and_then(|v| v.get(k)) && was.is_some_and(|v| !v.is_null()) {
                            changes.insert(k.into(), json!({"from": before.and_then(|v| v.get(k))}));
                        }
                    }
                    body["changes"] = Value::Object(changes);
                }
                out.push(Event { name: "release", repo: key.clone(), body });
            }
        }
        "status" => {
            let Some((full, _)) = id.split_once(':') else { return };
            let (Some(key), Some(a)) = (key_of(w, full), after) else { return };
            let r = &w.repos[&key];
            let Ok(s) = serde_json::from_value::<crate::model::Status>(a.clone()) else { return };
            let Some(c) = r.git.commit(&s.sha) else { return };
            let fname = r.full_name();
            let branches: Vec<Value> = r
                .git
                .branches()
                .filter(|(_, sha)| **sha == s.sha)
                .map(|(n, sha)| json!({"name": n, "commit": {"sha": sha, "url": format!("{b}/repos/{fname}/commits/{sha}")}, "protected": w.is_protected(r, n)}))
                .collect();
            let mut commit = w.commit_json(b, r, &s.sha, c, None);
            for k in ["author", "committer"] {
                each(&mut commit, k, user);
            }
            let body = json!({
                "id": s.id, "sha": s.sha, "name": fname, "target_url": s.target_url, "context": s.context,
                "description": s.description, "state": s.state, "commit": commit, "branches": branches,
                "created_at": s.created_at, "updated_at": s.updated_at, "avatar_url": null,
            });
            out.push(Event { name: "status", repo: key, body });
        }
        "check_run" => {
            let Some((full, _)) = id.split_once(':') else { return };
            let (Some(key), Some(a)) = (key_of(w, full), after) else { return };
            let r = &w.repos[&key];
            let Ok(c) = serde_json::from_value::<crate::model::CheckRun>(a.clone()) else { return };
            let was = before.and_then(|v| v.get("status")).and_then(Value::as_str);
            let action = match (before, c.status.as_str()) {
                (None, _) => "created",
                (Some(_), "completed") if was != Some("completed") => "completed",
                _ => return,
            };
            let mut run = crate::handlers::checks::check_run_json(w, b, r, &c);
            keep(&mut run, RUN);
            // Webhooks carry strings where REST has nulls: an empty external id, and the
            // run's own page for details.
            if run["external_id"].is_null() {
                run["external_id"] = json!("");
            }
            if run["details_url"].is_null() {
                run["details_url"] = run["html_url"].clone();
            }
            each(&mut run, "app", |a| {
                keep(a, APP);
                each(a, "owner", user);
            });
            let suite = crate::handlers::checks::suite_json(w, b, r, &c.head_sha);
            if let Some(s) = &suite {
                let mut s = s.clone();
                keep(&mut s, RUN_SUITE);
                each(&mut s, "app", |a| {
                    keep(a, APP);
                    each(a, "owner", user);
                });
                run["check_suite"] = s;
            }
            out.push(Event { name: "check_run", repo: key.clone(), body: json!({"action": action, "check_run": run}) });
            // The suite completes when its last run does.
            if c.status == "completed" && suite.as_ref().is_some_and(|s| s["status"] == "completed") {
                let mut s = suite.unwrap();
                keep(&mut s, SUITE);
                each(&mut s, "app", |a| {
                    keep(a, APP);
                    each(a, "owner", user);
                });
                out.push(Event { name: "check_suite", repo: key, body: json!({"action": "completed", "check_suite": s}) });
            }
        }
        "ref" => {
            let Some((full, name)) = id.split_once(':') else { return };
            let Some(key) = key_of(w, full) else { return };
            let sha = |v: Option<&Value>| v.and_then(|v| v.get("sha")).and_then(Value::as_str).map(String::from);
            let (old, new) = (sha(before), sha(after));
            let (short, ref_type) = match (name.strip_prefix("refs/heads/"), name.strip_prefix("refs/tags/")) {
                (Some(s), _) => (s, "branch"),
                (_, Some(s)) => (s, "tag"),
                _ => return,
            };
            let r = &w.repos[&key];
            match (&old, &new) {
                (None, Some(_)) => out.push(Event {
                    name: "create",
                    repo: key.clone(),
                    body: json!({"ref": short, "ref_type": ref_type, "master_branch": r.default_branch, "description": r.description, "pusher_type": "user"}),
                }),
                (Some(_), None) => {
                    out.push(Event { name: "delete", repo: key.clone(), body: json!({"ref": short, "ref_type": ref_type, "pusher_type": "user"}) })
                }
                _ => {}
            }
            out.push(Event { name: "push", repo: key.clone(), body: push_body(w, b, r, name, old.as_deref(), new.as_deref()) });
            // A new head commit on an open pull request's branch is a `synchronize`.
            if let (Some(o), Some(n), "branch") = (&old, &new, ref_type) {
                for i in r.issues.values().filter(|i| i.state == "open" && i.pull.as_ref().is_some_and(|p| p.head_ref == short)) {
                    out.push(Event {
                        name: "pull_request",
                        repo: key.clone(),
                        body: json!({"action": "synchronize", "number": i.number, "before": o, "after": n, "pull_request": w.hook_pull(b, r, i)}),
                    });
                }
            }
        }
        _ => {}
    }
}

fn find_comment(w: &World, id: u64, side: Option<&Value>) -> Option<(String, crate::model::IssueComment)> {
    if let Some((k, r)) = w.repos.iter().find(|(_, r)| r.comments.contains_key(&id)) {
        return Some((k.clone(), r.comments[&id].clone()));
    }
    // A deleted comment: its issue's id names the repository.
    let c: crate::model::IssueComment = serde_json::from_value(side?.clone()).ok()?;
    let (k, _) = w.repos.iter().find(|(_, r)| r.issues.values().any(|i| i.id == c.issue || i.number == c.issue))?;
    Some((k.clone(), c))
}

/// `issues` or `pull_request` events for one issue's change.
fn issue_events(w: &World, b: &str, id: &str, before: Option<&Value>, after: Option<&Value>, out: &mut Vec<Event>) {
    let Some((full, n)) = id.split_once('#') else { return };
    let (Some(key), Ok(n)) = (key_of(w, full), n.parse::<u64>()) else { return };
    let r = &w.repos[&key];
    let Some(i) = r.issues.get(&n) else { return };
    let is_pull = i.pull.is_some();
    let name = if is_pull { "pull_request" } else { "issues" };
    let object = |w: &World| if is_pull { w.hook_pull(b, r, i) } else { w.hook_issue(b, r, i) };
    let mut push = |action: &str, extra: Value| {
        let mut body = json!({"action": action});
        if is_pull {
            body["number"] = json!(n);
            body["pull_request"] = object(w);
        } else {
            body["issue"] = object(w);
        }
        if let Value::Object(m) = extra {
            body.as_object_mut().unwrap().extend(m);
        }
        out.push(Event { name, repo: key.clone(), body });
    };
    let Some(a) = after else { return };
    // A new issue is `opened`, then (as GitHub sends them) `labeled`, `assigned`,
    // `milestoned` and `review_requested` for what it was created with.
    let created;
    let bf = match before {
        Some(bf) => bf,
        None => {
            push("opened", json!({}));
            let mut v = a.clone();
            v["labels"] = json!([]);
            v["assignees"] = json!([]);
            v["milestone"] = Value::Null;
            if v["pull"].is_object() {
                v["pull"]["requested_reviewers"] = json!([]);
            }
            created = v;
            &created
        }
    };
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(String::from);
    let mut changes = serde_json::Map::new();
    for k in ["title", "body"] {
        if bf.get(k) != a.get(k) {
            changes.insert(k.into(), json!({"from": bf.get(k).cloned().unwrap_or(Value::Null)}));
        }
    }
    if !changes.is_empty() {
        push("edited", json!({"changes": changes}));
    }
    let (lb, la) = (str_list(Some(bf), "labels"), str_list(Some(a), "labels"));
    for (action, names) in [("labeled", added(&lb, &la)), ("unlabeled", added(&la, &lb))] {
        for l in names {
            let label = r.label(&l).map(|x| w.label_json(b, r, x)).map(|mut v| {
                keep(&mut v, LABEL);
                v
            });
            push(action, json!({"label": label}));
        }
    }
    let (ab, aa) = (str_list(Some(bf), "assignees"), str_list(Some(a), "assignees"));
    for (action, logins) in [("assigned", added(&ab, &aa)), ("unassigned", added(&aa, &ab))] {
        for l in logins {
            push(action, json!({"assignee": w.hook_user(b, &l)}));
        }
    }
    let (mb, ma) = (bf.get("milestone").and_then(Value::as_u64), a.get("milestone").and_then(Value::as_u64));
    if mb != ma {
        let ms = |n: Option<u64>| {
            n.and_then(|n| r.milestones.get(&n)).map(|m| {
                let mut v = w.milestone_json(b, r, m);
                milestone_shape(&mut v);
                v
            })
        };
        if mb.is_some() {
            push("demilestoned", json!({"milestone": ms(mb)}));
        }
        if ma.is_some() {
            push("milestoned", json!({"milestone": ms(ma)}));
        }
    }
    if bf.get("locked") != a.get("locked") {
        push(if a["locked"] == true { "locked" } else { "unlocked" }, json!({}));
    }
    if is_pull {
        let p = |v: &Value, k: &str| v.get("pull").and_then(|p| p.get(k)).cloned().unwrap_or(Value::Null);
        if p(bf, "draft") != p(a, "draft") {
            push(if p(a, "draft") == true { "converted_to_draft" } else { "ready_for_review" }, json!({}));
        }
        let (rb, ra) = (str_list(bf.get("pull"), "requested_reviewers"), str_list(a.get("pull"), "requested_reviewers"));
        for l in added(&rb, &ra) {
            push("review_requested", json!({"requested_reviewer": w.hook_user(b, &l)}));
        }
        // A review also takes a reviewer off the list; that is no `review_request_removed`.
        let reviewed: BTreeSet<String> = i.pull.as_ref().map(|p| p.reviews.iter().map(|x| x.user.to_ascii_lowercase()).collect()).unwrap_or_default();
        for l in added(&ra, &rb).into_iter().filter(|l| !reviewed.contains(&l.to_ascii_lowercase())) {
            push("review_request_removed", json!({"requested_reviewer": w.hook_user(b, &l)}));
        }
    }
    match (s(bf, "state").as_deref(), s(a, "state").as_deref()) {
        (Some("open"), Some("closed")) => push("closed", json!({})),
        (Some("closed"), Some("open")) => push("reopened", json!({})),
        _ => {}
    }
}

/// A `push` event for `name` moving from `old` to `new` (either absent: created or deleted).
pub fn push_body(w: &World, b: &str, r: &Repo, name: &str, old: Option<&str>, new: Option<&str>) -> Value {
    const ZERO: &str = "0000000000000000000000000000000000000000";
    let fname = r.full_name();
    // The commits `new` has that `old` has not, oldest first (GitHub lists at most 20).
    let mut commits = Vec::new();
    if let Some(n) = new {
        let mut queue = vec![n.to_string()];
        let mut seen = BTreeSet::new();
        while let Some(sha) = queue.pop() {
            if commits.len() >= 20 || !seen.insert(sha.clone()) || old.is_some_and(|o| o == sha || r.git.is_ancestor(&sha, o)) {
                continue;
            }
            // A new branch lists only what its first commit brings, as GitHub does.
            if old.is_none() && sha != n {
                break;
            }
            let Some(c) = r.git.commit(&sha) else { continue };
            commits.push(sha.clone());
            queue.extend(c.parents.iter().rev().cloned());
        }
        commits.reverse();
    }
    let commit_json = |sha: &str| -> Value {
        let c = r.git.commit(sha).expect("listed commits exist");
        let now = r.git.flatten(&c.tree);
        let was: BTreeMap<String, (String, String)> = c.parents.first().map(|p| r.git.flatten(&crate::model::tree_of(r, p))).unwrap_or_default();
        let added: Vec<&String> = now.keys().filter(|p| !was.contains_key(*p)).collect();
        let removed: Vec<&String> = was.keys().filter(|p| !now.contains_key(*p)).collect();
        let modified: Vec<&String> = now.iter().filter(|(p, x)| was.get(*p).is_some_and(|y| y != *x)).map(|(p, _)| p).collect();
        let person = |s: &crate::git::Signature| {
            let mut v = json!({"name": s.name, "email": s.email, "date": s.date});
            if let Some(l) = w.login_for(s) {
                v["username"] = json!(l);
            }
            v
        };
        json!({
            "id": sha, "tree_id": c.tree, "distinct": true, "message": c.message, "timestamp": c.committer.date,
            "url": format!("{b}/{fname}/commit/{sha}"), "author": person(&c.author), "committer": person(&c.committer),
            "added": added, "removed": removed, "modified": modified,
        })
    };
    let list: Vec<Value> = commits.iter().map(|s| commit_json(s)).collect();
    let head = new.filter(|s| r.git.commit(s).is_some()).map(commit_json);
    let sig = w.viewer_sig();
    let (before, after) = (old.unwrap_or(ZERO), new.unwrap_or(ZERO));
    let forced = matches!((old, new), (Some(o), Some(n)) if o != n && !r.git.is_ancestor(o, n));
    json!({
        "ref": name, "before": before, "after": after, "created": old.is_none(), "deleted": new.is_none(), "forced": forced,
        "base_ref": null, "compare": format!("{b}/{fname}/compare/{}...{}", &before[..12], &after[..12]),
        "commits": list, "head_commit": head, "pusher": {"name": w.viewer, "email": sig.email},
    })
}

/// A `ping` to hook `id` (on create and on `POST …/pings`).
pub fn ping(w: &mut World, call: &mut Call, id: u64) {
    const ZEN: &[&str] = &[
        "Responsive is better than fast.",
        "It's not fully shipped until it's fast.",
        "Anything added dilutes everything else.",
        "Practicality beats purity.",
        "Approachable is better than simple.",
        "Mind your words, they are important.",
        "Speak like a human.",
        "Half measures are as bad as nothing at all.",
        "Encourage flow.",
        "Non-blocking is better than blocking.",
        "Favor focus over features.",
        "Avoid administrative distraction.",
        "Design for failure.",
        "Keep it logically awesome.",
    ];
    let b = call.req.base_url.clone();
    let Some(h) = w.hooks.get(&id).cloned() else { return };
    let mut body = json!({"zen": ZEN[(id as usize) % ZEN.len()], "hook_id": id, "hook": h.json(w, &b)});
    match (h.repo.and_then(|r| repo_key_by_id(w, r)), &h.org) {
        (Some(k), _) => body = complete(w, &b, &k, body),
        (_, Some(o)) => {
            if let Some(u) = w.users.get(o) {
                body["organization"] = crate::handlers::misc::org_json(&b, u);
            }
            body["sender"] = w.hook_user(&b, &w.viewer);
        }
        _ => {}
    }
    send(w, call, id, "ping", &body);
}

/// `POST …/hooks/{id}/tests`: the latest push to the default branch, to this hook alone
/// (and only if it subscribes to `push`).
pub fn test_push(w: &mut World, call: &mut Call, id: u64) {
    let b = call.req.base_url.clone();
    let Some(h) = w.hooks.get(&id).cloned() else { return };
    let Some(key) = h.repo.and_then(|r| repo_key_by_id(w, r)) else { return };
    if !h.wants("push") {
        return;
    }
    let r = &w.repos[&key];
    let Some(head) = r.git.branch(&r.default_branch).cloned() else { return };
    let parent = r.git.commit(&head).and_then(|c| c.parents.first().cloned());
    let body = push_body(w, &b, r, &format!("refs/heads/{}", r.default_branch), parent.as_deref(), Some(&head));
    let payload = complete(w, &b, &key, body);
    send(w, call, id, "push", &payload);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_rfc_vectors() {
        // RFC 2202 test case 2 and RFC 4231 test case 2.
        assert_eq!(hmac_sha1(b"Jefe", b"what do ya want for nothing?"), "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79");
        assert_eq!(hmac_sha256(b"Jefe", b"what do ya want for nothing?"), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
        // A key longer than the block is hashed first (RFC 2202 test case 6).
        assert_eq!(
            hmac_sha1(&[0xaa; 80], b"Test Using Larger Than Block-Size Key - Hash Key First"),
            "aa4ae5e15272d00e95705637ce8a3b55ed402112"
        );
    }

    #[test]
    fn form_bodies_escape_as_browsers_do() {
        assert_eq!(form_escape("{\"a\": \"b c&d\"}"), "%7B%22a%22%3A+%22b+c%26d%22%7D");
    }

    #[test]
    fn guids_are_uuid_shaped_and_stable() {
        let g = guid(7, 3);
        assert_eq!(g, guid(7, 3));
        assert_ne!(g, guid(8, 3));
        let parts: Vec<usize> = g.split('-').map(str::len).collect();
        assert_eq!(parts, [8, 4, 4, 4, 12]);
    }
}
