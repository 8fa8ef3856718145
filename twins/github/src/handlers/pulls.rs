//! Pull requests: list, create, get (with `mergeable`/`mergeable_state`), update, files,
//! commits, merge (merge/squash/rebase with the `sha` guard, required status checks and
//! permissions), update-branch, requested reviewers, reviews and review comments.

use pome_twin_sdk::{Call, Response, Value, json, time};
use serde::Deserialize;

use crate::World;
use crate::api::{ApiError, ApiResult, input, json, no_content, num, page_of, page_vec, query_enum, text_response};
use crate::diff::{diff_trees, entry_json};
use crate::git::{Commit, Object, Signature};
use crate::handlers::issues::{self, Patch, UpdateIssue, issue_ref, push_event};
use crate::model::*;
use crate::render::{node_id, review_json};

/// The head commit a pull request shows now: its branch's tip while the branch exists and
/// the pull request is open, else the sha it had.
pub fn head_sha(r: &Repo, p: &Pull, open: bool) -> String {
    if open {
        if let Some(s) = r.git.branch(&p.head_ref) {
            return s.clone();
        }
    }
    p.head_sha.clone()
}

pub fn base_sha(r: &Repo, p: &Pull) -> String {
    r.git.branch(&p.base_ref).cloned().unwrap_or_default()
}

/// The commits of pull request `i`, oldest first: from its base (the merge commit's first
/// parent once merged) to its head.
pub fn commits_of(r: &Repo, i: &Issue) -> Vec<String> {
    let Some(p) = &i.pull else { return Vec::new() };
    let head = head_sha(r, p, i.state == "open");
    let base = match (&p.merge_commit_sha, p.merged) {
        (Some(m), true) => r.git.commit(m).and_then(|c| c.parents.first().cloned()).unwrap_or_else(|| base_sha(r, p)),
        _ => base_sha(r, p),
    };
    r.git.commits_between(&base, &head)
}

/// Latest state per status context, and check runs, for a commit.
pub fn combined_state<'a>(r: &'a Repo, sha: &str) -> (String, Vec<&'a Status>) {
    let mut latest: Vec<&Status> = Vec::new();
    for s in r.statuses.iter().rev().filter(|s| s.sha == sha) {
        if !latest.iter().any(|x| x.context == s.context) {
            latest.push(s);
        }
    }
    let state = if latest.iter().any(|s| s.state == "error" || s.state == "failure") {
        "failure"
    } else if latest.is_empty() || latest.iter().any(|s| s.state == "pending") {
        "pending"
    } else {
        "success"
    };
    (state.to_string(), latest)
}

/// Whether every required context of the default branch is green on `sha` (statuses or
/// check runs).
fn required_failures(r: &Repo, sha: &str) -> Option<String> {
    contexts_failing(r, &r.required_contexts, sha)
}

/// The first of `contexts` not green on `sha`, as the merge refusal names it.
pub(crate) fn contexts_failing(r: &Repo, contexts: &[String], sha: &str) -> Option<String> {
    let (_, latest) = combined_state(r, sha);
    for ctx in contexts {
        let status_ok = latest.iter().find(|s| &s.context == ctx).map(|s| s.state == "success");
        let check_ok = r
            .check_runs
            .values()
            .rev()
            .find(|c| c.head_sha == sha && &c.name == ctx)
            .map(|c| c.status == "completed" && matches!(c.conclusion.as_deref(), Some("success" | "neutral" | "skipped")));
        match status_ok.or(check_ok) {
            Some(true) => {}
            Some(false) => return Some(format!("Required status check \"{ctx}\" is failing.")),
            None => return Some(format!("Required status check \"{ctx}\" is expected.")),
        }
    }
    None
}

fn conflicts(r: &Repo, p: &Pull, head: &str) -> Vec<String> {
    let base = base_sha(r, p);
    let mb = r.git.merge_base(&base, head).unwrap_or_else(|| base.clone());
    let (bt, ot, tt) = (tree_of(r, &mb), tree_of(r, &base), tree_of(r, head));
    let (b, o, t) = (r.git.flatten(&bt), r.git.flatten(&ot), r.git.flatten(&tt));
    let mut out = Vec::new();
    for (path, tv) in &t {
        let (bv, ov) = (b.get(path), o.get(path));
        if Some(tv) != bv && ov != bv && ov != Some(tv) {
            out.push(path.clone());
        }
    }
    for (path, bv) in &b {
        if !t.contains_key(path) && o.get(path).is_some_and(|ov| ov != bv) {
            out.push(path.clone());
        }
    }
    out
}

impl World {
    pub fn pull_json(&self, b: &str, r: &Repo, i: &Issue, full: bool) -> Value {
        let p = i.pull.as_ref().expect("a pull request");
        let fname = r.full_name();
        let u = format!("{b}/repos/{fname}/pulls/{}", i.number);
        let iu = format!("{b}/repos/{fname}/issues/{}", i.number);
        let html = format!("{b}/{fname}/pull/{}", i.number);
        let open = i.state == "open";
        let head = head_sha(r, p, open);
        let base = base_sha(r, p);
        let branch_json = |name: &str, sha: &str| {
            json!({
                "label": format!("{}:{name}", r.owner), "ref": name, "sha": sha,
                "user": self.user_json(b, &r.owner), "repo": self.repo_json(b, r, false),
            })
        };
        let issue = self.issue_json(b, r, i);
        let mut v = json!({
            "url": u, "id": p.id, "node_id": node_id("PullRequest", p.id), "html_url": html,
            "diff_url": format!("{html}.diff"), "patch_url": format!("{html}.patch"), "issue_url": iu,
            "commits_url": format!("{u}/commits"), "review_comments_url": format!("{u}/comments"),
            "review_comment_url": format!("{b}/repos/{fname}/pulls/comments{{/number}}"),
            "comments_url": format!("{iu}/comments"), "statuses_url": format!("{b}/repos/{fname}/statuses/{head}"),
            "number": i.number, "state": i.state, "locked": i.locked, "title": i.title,
            "user": self.user_json(b, &i.user), "body": i.body, "labels": issue["labels"],
            "milestone": issue["milestone"], "active_lock_reason": i.active_lock_reason,
            "created_at": i.created_at, "updated_at": i.updated_at, "closed_at": i.closed_at,
            "merged_at": p.merged_at, "merge_commit_sha": p.merge_commit_sha,
            "assignee": issue["assignee"], "assignees": issue["assignees"],
            "requested_reviewers": p.requested_reviewers.iter().map(|l| self.user_json(b, l)).collect::<Vec<_>>(),
            "requested_teams": [],
            "head": branch_json(&p.head_ref, &head), "base": branch_json(&p.base_ref, &base),
            "_links": {
                "self": {"href": u}, "html": {"href": html}, "issue": {"href": iu},
                "comments": {"href": format!("{iu}/comments")},
                "review_comments": {"href": format!("{u}/comments")},
                "review_comment": {"href": format!("{b}/repos/{fname}/pulls/comments{{/number}}")},
                "commits": {"href": format!("{u}/commits")},
                "statuses": {"href": format!("{b}/repos/{fname}/statuses/{head}")},
            },
            "author_association": self.author_association(r, &i.user), "auto_merge": null,
            "draft": p.draft,
        });
        if full {
            let mb = r.git.merge_base(&base, &head).unwrap_or_else(|| base.clone());
            let files = diff_trees(&r.git, &tree_of(r, &mb), &tree_of(r, &head));
            let commits = r.git.commits_between(&base, &head).len();
            let (mergeable, state) = if p.merged || !open {
                (Value::Null, "unknown")
            } else if !conflicts(r, p, &head).is_empty() {
                (json!(false), "dirty")
            } else if p.draft {
                (json!(true), "draft")
            } else if required_failures(r, &head).is_some() || crate::handlers::protection::merge_blocker(self, r, &p.base_ref, p, &head, &i.user).is_some() {
                (json!(true), "blocked")
            } else if combined_state(r, &head).0 == "failure"
                || r.check_runs.values().any(|c| {
                    c.head_sha == head && matches!(c.conclusion.as_deref(), Some("failure" | "timed_out" | "action_required"))
                })
            {
                (json!(true), "unstable")
            } else if !r.git.is_ancestor(&base, &head) {
                (json!(true), "behind")
            } else {
                (json!(true), "clean")
            };
            let m = v.as_object_mut().unwrap();
            for (k, x) in [
                ("merged", json!(p.merged)),
                ("mergeable", mergeable),
                ("rebaseable", json!(open && state != "dirty")),
                ("mergeable_state", json!(state)),
                ("merged_by", self.opt_user_json(b, p.merged_by.as_deref())),
                ("comments", json!(i.comments)),
                ("review_comments", json!(r.review_comments.values().filter(|c| c.pull == i.number).count())),
                ("maintainer_can_modify", json!(p.maintainer_can_modify)),
                ("commits", json!(commits)),
                ("additions", json!(files.iter().map(|f| f.additions).sum::<u64>())),
                ("deletions", json!(files.iter().map(|f| f.deletions).sum::<u64>())),
                ("changed_files", json!(files.len())),
            ] {
                m.insert(k.into(), x);
            }
        }
        v
    }
}

fn pull_of<'a>(r: &'a Repo, call: &Call) -> Result<&'a Issue, ApiError> {
    let n = num(call, "pull_number")?;
    r.issues.get(&n).filter(|i| i.pull.is_some()).ok_or_else(ApiError::not_found)
}

/// `GET /repos/{owner}/{repo}/pulls` (`pulls/list`).
pub fn list(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let state = query_enum(call, "state", &["open", "closed", "all"], "open")?;
    let sort = query_enum(call, "sort", &["created", "updated", "popularity", "long-running"], "created")?;
    let dir = query_enum(call, "direction", &["asc", "desc"], if sort == "long-running" { "asc" } else { "desc" })?;
    let head = call.req.query("head").map(|h| h.split_once(':').map(|(_, b)| b.to_string()).unwrap_or(h));
    let base = call.req.query("base");
    let keep = |i: &&Issue| {
        let Some(p) = &i.pull else { return false };
        (state == "all" || i.state == state)
            && head.as_deref().is_none_or(|h| p.head_ref == h)
            && base.as_deref().is_none_or(|b| p.base_ref == b)
    };
    let mut list: Vec<&Issue> = r.issues.values().filter(keep).collect();
    match sort.as_str() {
        "updated" => list.sort_by(|a, b| a.updated_at.cmp(&b.updated_at).then(a.number.cmp(&b.number))),
        "popularity" => list.sort_by(|a, b| a.comments.cmp(&b.comments).then(a.number.cmp(&b.number))),
        _ => {}
    }
    if dir == "desc" {
        list.reverse();
    }
    let b = call.req.base_url.clone();
    let n = list.len();
    page_of(call, n, list.into_iter(), |i| w.pull_json(&b, r, i, false))
}

/// `GET /repos/{owner}/{repo}/pulls/{pull_number}` (`pulls/get`).
pub fn get(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let i = pull_of(r, call)?;
    if let Some(kind) = crate::diff::wants(call.req.header("accept")) {
        let p = i.pull.as_ref().unwrap();
        let head = head_sha(r, p, i.state == "open");
        let base = base_sha(r, p);
        let mb = r.git.merge_base(&base, &head).unwrap_or(base);
        let (old, new) = (r.git.flatten(&tree_of(r, &mb)), r.git.flatten(&tree_of(r, &head)));
        let files = crate::diff::diff_flat(&r.git, &old, &new);
        return Ok(text_response(kind, crate::diff::unified(&files, &old, &new)));
    }
    json(200, &w.pull_json(&call.req.base_url, r, i, true))
}

#[derive(Debug, Deserialize)]
pub struct CreatePull {
    pub title: Option<String>,
    pub head: Option<String>,
    pub base: Option<String>,
    pub body: Option<String>,
    #[serde(default)]
    pub draft: bool,
    pub maintainer_can_modify: Option<bool>,
    pub issue: Option<u64>,
}

/// `POST /repos/{owner}/{repo}/pulls` (`pulls/create`).
pub fn create(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: CreatePull = input(call)?;
    let key = w.repo_key_for(call)?;
    let r = &w.repos[&key];
    if r.archived {
        return Err(ApiError::forbidden("Repository was archived so is read-only."));
    }
    let head_in = inp.head.clone().ok_or_else(|| ApiError::invalid("PullRequest", "head", "missing_field"))?;
    let base = inp.base.clone().ok_or_else(|| ApiError::invalid("PullRequest", "base", "missing_field"))?;
    let head = match head_in.split_once(':') {
        Some((owner, b)) => {
            if !owner.eq_ignore_ascii_case(&r.owner) {
                return Err(ApiError::invalid("PullRequest", "head", "invalid"));
            }
            b.to_string()
        }
        None => head_in.clone(),
    };
    let Some(head_sha) = r.git.branch(&head).cloned() else {
        return Err(ApiError::invalid("PullRequest", "head", "invalid"));
    };
    let Some(base_sha) = r.git.branch(&base).cloned() else {
        return Err(ApiError::invalid("PullRequest", "base", "invalid"));
    };
    if r.git.commits_between(&base_sha, &head_sha).is_empty() {
        return Err(ApiError::new(422, "Validation Failed").with_error(json!({
            "resource": "PullRequest", "code": "custom", "message": format!("No commits between {base} and {head}"),
        })));
    }
    if r.issues.values().any(|i| i.state == "open" && i.pull.as_ref().is_some_and(|p| p.head_ref == head && p.base_ref == base)) {
        return Err(ApiError::new(422, "Validation Failed").with_error(json!({
            "resource": "PullRequest", "code": "custom",
            "message": format!("A pull request already exists for {}:{head}.", r.owner),
        })));
    }
    let now = time::now_iso();
    let viewer = w.viewer.clone();
    let pid = w.next_id();
    let pull = Pull {
        id: pid,
        head_ref: head.clone(),
        head_sha: head_sha.clone(),
        base_ref: base.clone(),
        draft: inp.draft,
        merged: false,
        merged_at: None,
        merged_by: None,
        merge_commit_sha: None,
        maintainer_can_modify: inp.maintainer_can_modify.unwrap_or(false),
        requested_reviewers: Vec::new(),
        reviews: Vec::new(),
    };
    let number = if let Some(n) = inp.issue {
        // Convert an existing issue into a pull request.
        let r = w.repos.get_mut(&key).unwrap();
        let id = issue_ref(r, n);
        let i = r.issues.get_mut(&n).filter(|i| i.pull.is_none()).ok_or_else(|| ApiError::invalid("PullRequest", "issue", "invalid"))?;
        call.update("pull_request", id, i, |i| {
            i.pull = Some(pull);
            i.updated_at = now;
        });
        n
    } else {
        let title = inp.title.filter(|t| !t.trim().is_empty()).ok_or_else(|| ApiError::invalid("PullRequest", "title", "missing_field"))?;
        let id = w.next_id();
        let r = w.repos.get_mut(&key).unwrap();
        let n = r.next_number;
        r.next_number += 1;
        let issue = Issue {
            id,
            number: n,
            title,
            body: inp.body,
            user: viewer,
            state: "open".into(),
            state_reason: None,
            labels: Vec::new(),
            assignees: Vec::new(),
            milestone: None,
            locked: false,
            active_lock_reason: None,
            comments: 0,
            created_at: now.clone(),
            updated_at: now,
            closed_at: None,
            closed_by: None,
            reactions: Vec::new(),
            pull: Some(pull),
        };
        call.created("pull_request", issue_ref(r, n), &issue);
        r.issues.insert(n, issue);
        r.track(None, Some((true, None)));
        n
    };
    let r = &w.repos[&key];
    let b = &call.req.base_url;
    let v = w.pull_json(b, r, &r.issues[&number], true);
    Ok(Response::json(201, &v).with_header("location", v["url"].as_str().unwrap_or("").to_string()))
}

#[derive(Debug, Deserialize)]
pub struct UpdatePull {
    pub title: Option<Value>,
    #[serde(default)]
    pub body: Patch<String>,
    pub state: Option<String>,
    pub base: Option<String>,
    pub maintainer_can_modify: Option<bool>,
}

/// `PATCH /repos/{owner}/{repo}/pulls/{pull_number}` (`pulls/update`).
pub fn update(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: UpdatePull = input(call)?;
    let key = w.repo_key_for(call)?;
    let number = pull_of(&w.repos[&key], call)?.number;
    if let Some(base) = &inp.base {
        let r = &w.repos[&key];
        if r.git.branch(base).is_none() {
            return Err(ApiError::invalid("PullRequest", "base", "invalid"));
        }
    }
    if inp.state.as_deref() == Some("open") {
        let r = &w.repos[&key];
        let p = r.issues[&number].pull.as_ref().unwrap();
        if r.issues[&number].state == "closed" && r.git.branch(&p.head_ref).is_none() {
            return Err(ApiError::custom("PullRequest", "state", "state cannot be changed. The head branch has been deleted."));
        }
    }
    let upd = UpdateIssue { title: inp.title, body: inp.body, state: inp.state, ..Default::default() };
    issues::apply_update(w, call, &key, number, upd)?;
    let r = w.repos.get_mut(&key).unwrap();
    let i = r.issues.get_mut(&number).unwrap();
    let p = i.pull.as_mut().unwrap();
    if let Some(base) = inp.base {
        p.base_ref = base;
    }
    if let Some(m) = inp.maintainer_can_modify {
        p.maintainer_can_modify = m;
    }
    if i.state == "closed" && !p.merged {
        // Remember the head as it was at close time.
        if let Some(s) = r.git.branch(&p.head_ref) {
            p.head_sha = s.clone();
        }
    }
    let r = &w.repos[&key];
    json(200, &w.pull_json(&call.req.base_url, r, &r.issues[&number], true))
}

/// `GET /repos/{owner}/{repo}/pulls/{pull_number}/files` (`pulls/list-files`).
pub fn list_files(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let i = pull_of(r, call)?;
    let p = i.pull.as_ref().unwrap();
    let head = head_sha(r, p, i.state == "open");
    let base = if p.merged {
        r.git.commit(&head).and_then(|_| {
            p.merge_commit_sha.as_ref().and_then(|m| r.git.commit(m)).and_then(|c| c.parents.first().cloned())
        })
        .unwrap_or_else(|| base_sha(r, p))
    } else {
        base_sha(r, p)
    };
    let mb = r.git.merge_base(&base, &head).unwrap_or(base);
    let b = call.req.base_url.clone();
    let fname = r.full_name();
    let files: Vec<Value> =
        diff_trees(&r.git, &tree_of(r, &mb), &tree_of(r, &head)).iter().map(|f| entry_json(&b, &fname, &head, f)).collect();
    page_vec(call, files)
}

/// `GET /repos/{owner}/{repo}/pulls/{pull_number}/commits` (`pulls/list-commits`).
pub fn list_commits(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let list = commits_of(r, pull_of(r, call)?);
    let b = call.req.base_url.clone();
    let n = list.len();
    page_of(call, n, list.into_iter(), |s| w.commit_json(&b, r, &s, r.git.commit(&s).unwrap(), None))
}

/// `GET /repos/{owner}/{repo}/pulls/{pull_number}/merge` (`pulls/check-if-merged`).
pub fn check_merged(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let i = pull_of(r, call)?;
    if i.pull.as_ref().unwrap().merged { no_content() } else { Err(ApiError::not_found()) }
}

#[derive(Debug, Deserialize, Default)]
pub struct MergeInput {
    pub commit_title: Option<String>,
    pub commit_message: Option<String>,
    pub sha: Option<String>,
    pub merge_method: Option<String>,
}

/// Issues a merged pull request closes: `fixes #n`, `closes #n`, `resolves #n` in its body
/// or title, when merged into the default branch.
pub fn closing_refs(text: &str) -> Vec<u64> {
    let lower = text.to_ascii_lowercase();
    let mut out = Vec::new();
    for kw in ["close", "closes", "closed", "fix", "fixes", "fixed", "resolve", "resolves", "resolved"] {
        let mut from = 0;
        while let Some(pos) = lower[from..].find(kw) {
            let start = from + pos;
            from = start + kw.len();
            let before_ok = start == 0 || !lower.as_bytes()[start - 1].is_ascii_alphanumeric();
            let rest = lower[from..].trim_start_matches(':').trim_start();
            if before_ok && rest.starts_with('#') {
                let digits: String = rest[1..].chars().take_while(|c| c.is_ascii_digit()).collect();
                if let Ok(n) = digits.parse() {
                    if !out.contains(&n) {
                        out.push(n);
                    }
                }
            }
        }
    }
    out
}

/// `PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge` (`pulls/merge`).
pub fn merge(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: MergeInput = input(call)?;
    let key = w.repo_key_for(call)?;
    let r = &w.repos[&key];
    let i = pull_of(r, call)?;
    let number = i.number;
    if w.viewer_role(r) < Role::Write {
        return Err(ApiError::forbidden("Must have admin rights to Repository."));
    }
    let method = inp.merge_method.clone().unwrap_or_else(|| "merge".into());
    if !["merge", "squash", "rebase"].contains(&method.as_str()) {
        return Err(ApiError::invalid("PullRequest", "merge_method", "invalid"));
    }
    let allowed = match method.as_str() {
        "merge" => r.allow_merge_commit,
        "squash" => r.allow_squash_merge,
        _ => r.allow_rebase_merge,
    };
    if !allowed {
        return Err(ApiError::new(405, format!("{} merges are not allowed on this repository.", method)));
    }
    let p = i.pull.as_ref().unwrap();
    if p.merged {
        return Err(ApiError::new(405, "Pull Request is not mergeable"));
    }
    if i.state != "open" {
        return Err(ApiError::new(405, "Pull Request is not mergeable"));
    }
    let head = head_sha(r, p, true);
    if let Some(sha) = &inp.sha {
        if sha != &head {
            return Err(ApiError::new(409, "Head branch was modified. Review and try the merge again."));
        }
    }
    if p.draft {
        return Err(ApiError::new(405, "Pull Request is still a draft"));
    }
    if !conflicts(r, p, &head).is_empty() {
        return Err(ApiError::new(405, "Pull Request is not mergeable"));
    }
    if p.base_ref == r.default_branch {
        if let Some(msg) = required_failures(r, &head) {
            return Err(ApiError::new(405, msg));
        }
    }
    if let Some(msg) = crate::handlers::protection::merge_blocker(w, r, &p.base_ref, p, &head, &i.user) {
        return Err(ApiError::new(405, msg));
    }
    let base = base_sha(r, p);
    let base_ref = p.base_ref.clone();
    let head_ref = p.head_ref.clone();
    let title = i.title.clone();
    let body = i.body.clone().unwrap_or_default();
    let owner = r.owner.clone();
    let is_default = base_ref == r.default_branch;
    let delete_head = r.delete_branch_on_merge;
    let mb = r.git.merge_base(&base, &head).unwrap_or_else(|| base.clone());
    let ahead = r.git.commits_between(&base, &head);
    let sig = w.viewer_sig();
    let r = w.repos.get_mut(&key).unwrap();
    let (mb_tree, base_tree, head_tree) = (tree_of(r, &mb), tree_of(r, &base), tree_of(r, &head));
    let merged_tree = r
        .git
        .merge_trees(&mb_tree, &base_tree, &head_tree)
        .map_err(|_| ApiError::new(405, "Pull Request is not mergeable"))?;
    let new_sha = match method.as_str() {
        "merge" => {
            // Unless the caller words it, the repository's merge commit settings do.
            let mm = &r.merge_messages;
            let title_line = inp.commit_title.clone().unwrap_or_else(|| match mm.merge_title.as_str() {
                "PR_TITLE" => format!("{title} (#{number})"),
                _ => format!("Merge pull request #{number} from {owner}/{head_ref}"),
            });
            let text = inp.commit_message.clone().unwrap_or_else(|| match mm.merge_message.as_str() {
                "PR_BODY" => body.clone(),
                "BLANK" => String::new(),
                _ => title.clone(),
            });
            let msg = if text.is_empty() { title_line } else { format!("{title_line}\n\n{text}") };
            r.git.put(Object::Commit(Commit {
                tree: merged_tree,
                parents: vec![base.clone(), head.clone()],
                author: sig.clone(),
                committer: sig.clone(),
                message: msg,
            }))
        }
        "squash" => {
            let mm = &r.merge_messages;
            // COMMIT_OR_PR_TITLE: a single commit's own title, else the pull request's.
            let only_commit = match ahead.as_slice() {
                [one] if mm.squash_title == "COMMIT_OR_PR_TITLE" => r.git.commit(one).map(|c| c.message.lines().next().unwrap_or("").to_string()),
                _ => None,
            };
            let title_line = inp.commit_title.clone().unwrap_or_else(|| format!("{} (#{number})", only_commit.unwrap_or_else(|| title.clone())));
            let details = inp.commit_message.clone().unwrap_or_else(|| match mm.squash_message.as_str() {
                "PR_BODY" => body.clone(),
                "BLANK" => String::new(),
                _ => ahead
                    .iter()
                    .filter_map(|s| r.git.commit(s))
                    .map(|c| format!("* {}", c.message.lines().next().unwrap_or("")))
                    .collect::<Vec<_>>()
                    .join("\n\n"),
            });
            let author = ahead.first().and_then(|s| r.git.commit(s)).map(|c| c.author.clone()).unwrap_or_else(|| sig.clone());
            let author = Signature { date: sig.date.clone(), ..author };
            r.git.put(Object::Commit(Commit {
                tree: merged_tree,
                parents: vec![base.clone()],
                author,
                committer: sig.clone(),
                message: if details.is_empty() { title_line } else { format!("{title_line}\n\n{details}") },
            }))
        }
        _ => {
            // Replay each commit's change on top of the base.
            let mut tip = base.clone();
            for s in &ahead {
                let c = r.git.commit(s).cloned().unwrap();
                let parent_tree = c.parents.first().map(|pp| tree_of(r, pp)).unwrap_or_default();
                let tip_tree = tree_of(r, &tip);
                let t = r
                    .git
                    .merge_trees(&parent_tree, &tip_tree, &c.tree)
                    .map_err(|_| ApiError::new(405, "Pull Request is not mergeable"))?;
                tip = r.git.put(Object::Commit(Commit {
                    tree: t,
                    parents: vec![tip.clone()],
                    author: c.author.clone(),
                    committer: sig.clone(),
                    message: c.message.clone(),
                }));
            }
            tip
        }
    };
    let refname = format!("refs/heads/{base_ref}");
    call.updated("ref", format!("{}:{refname}", r.full_name()), &json!({"sha": base}), &json!({"sha": new_sha}));
    r.git.refs.insert(refname, new_sha.clone());
    let now = time::now_iso();
    r.pushed_at = now.clone();
    let viewer = w.viewer.clone();
    let r = w.repos.get_mut(&key).unwrap();
    let i = r.issues.get_mut(&number).unwrap();
    let before = i.clone();
    let p = i.pull.as_mut().unwrap();
    p.merged = true;
    p.merged_at = Some(now.clone());
    p.merged_by = Some(viewer.clone());
    p.merge_commit_sha = Some(new_sha.clone());
    p.head_sha = head.clone();
    i.state = "closed".into();
    i.closed_at = Some(now.clone());
    i.closed_by = Some(viewer);
    i.updated_at = now;
    let after = i.clone();
    r.track(Some((true, after.milestone)), Some((false, after.milestone)));
    call.updated("pull_request", issue_ref(r, number), &before, &after);
    push_event(w, &key, number, "merged", None, Some(new_sha.clone()));
    push_event(w, &key, number, "closed", None, Some(new_sha.clone()));
    if delete_head {
        let r = w.repos.get_mut(&key).unwrap();
        if let Some(s) = r.git.refs.remove(&format!("refs/heads/{head_ref}")) {
            call.deleted("ref", format!("{}:refs/heads/{head_ref}", r.full_name()), &json!({"sha": s}));
        }
        push_event(w, &key, number, "head_ref_deleted", None, None);
    }
    if is_default {
        for n in closing_refs(&format!("{title}\n{body}")) {
            let open_issue = w.repos[&key].issues.get(&n).is_some_and(|x| x.pull.is_none() && x.state == "open");
            if open_issue {
                let before = w.repos[&key].issues[&n].clone();
                issues::set_state(w, &key, n, "closed", Some("completed".into()));
                let r = &w.repos[&key];
                let after = r.issues[&n].clone();
                call.updated("issue", issue_ref(r, n), &before, &after);
            }
        }
    }
    json(200, &json!({"sha": new_sha, "merged": true, "message": "Pull Request successfully merged"}))
}

#[derive(Debug, Deserialize, Default)]
pub struct UpdateBranch {
    pub expected_head_sha: Option<String>,
}

/// `PUT /repos/{owner}/{repo}/pulls/{pull_number}/update-branch` (`pulls/update-branch`):
/// merge the base into the head branch.
pub fn update_branch(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: UpdateBranch = input(call)?;
    let key = w.repo_key_for(call)?;
    let r = &w.repos[&key];
    if w.viewer_role(r) < Role::Write {
        return Err(ApiError::forbidden("Resource not accessible by integration"));
    }
    let i = pull_of(r, call)?;
    let p = i.pull.as_ref().unwrap();
    if i.state != "open" || r.git.branch(&p.head_ref).is_none() {
        return Err(ApiError::new(422, "Pull request is not open"));
    }
    let head = head_sha(r, p, true);
    if inp.expected_head_sha.as_deref().is_some_and(|e| e != head) {
        return Err(ApiError::new(422, "expected_head_sha does not match the pull request head"));
    }
    let base = base_sha(r, p);
    if r.git.is_ancestor(&base, &head) {
        return Err(ApiError::new(422, "There are no new commits on the base branch."));
    }
    let head_ref = p.head_ref.clone();
    let base_ref = p.base_ref.clone();
    let mb = r.git.merge_base(&base, &head).unwrap_or_else(|| base.clone());
    let sig = w.viewer_sig();
    let r = w.repos.get_mut(&key).unwrap();
    let (t0, t1, t2) = (tree_of(r, &mb), tree_of(r, &head), tree_of(r, &base));
    let tree = r.git.merge_trees(&t0, &t1, &t2).map_err(|_| ApiError::new(422, "merge conflict between base and head"))?;
    let sha = r.git.put(Object::Commit(Commit {
        tree,
        parents: vec![head.clone(), base],
        author: sig.clone(),
        committer: sig,
        message: format!("Merge branch '{base_ref}' into {head_ref}"),
    }));
    let refname = format!("refs/heads/{head_ref}");
    call.updated("ref", format!("{}:{refname}", r.full_name()), &json!({"sha": head}), &json!({"sha": sha}));
    r.git.refs.insert(refname, sha);
    let url = format!("{}/repos/{}/pulls/{}", call.req.base_url, r.full_name(), num(call, "pull_number")?);
    json(202, &json!({"message": "Updating pull request branch.", "url": url}))
}

// ---- requested reviewers ---------------------------------------------------------------

/// `GET /repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers`.
pub fn list_requested_reviewers(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let p = pull_of(r, call)?.pull.as_ref().unwrap();
    let b = &call.req.base_url;
    json(200, &json!({"users": p.requested_reviewers.iter().map(|l| w.user_json(b, l)).collect::<Vec<_>>(), "teams": []}))
}

#[derive(Debug, Deserialize, Default)]
pub struct ReviewersInput {
    #[serde(default)]
    pub reviewers: Vec<String>,
    #[serde(default)]
    pub team_reviewers: Vec<String>,
}

/// `POST …/requested_reviewers` (`pulls/request-reviewers`).
pub fn request_reviewers(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: ReviewersInput = input(call)?;
    let key = w.repo_key_for(call)?;
    let r = &w.repos[&key];
    if w.viewer_role(r) < Role::Triage {
        return Err(ApiError::forbidden("Resource not accessible by integration"));
    }
    let i = pull_of(r, call)?;
    let number = i.number;
    if !inp.team_reviewers.is_empty() {
        return Err(ApiError::custom("PullRequest", "team_reviewers", "Could not resolve to a node with the global id of the team"));
    }
    let mut add = Vec::new();
    for l in &inp.reviewers {
        if l.eq_ignore_ascii_case(&i.user) {
            return Err(ApiError::new(422, "Review cannot be requested from pull request author."));
        }
        if !issues::assignable(w, r, l) {
            return Err(ApiError::new(422, "Reviews may only be requested from collaborators. One or more of the users or teams you specified is not a collaborator of the repository."));
        }
        add.push(w.users[&l.to_ascii_lowercase()].login.clone());
    }
    let r = w.repos.get_mut(&key).unwrap();
    let id = issue_ref(r, number);
    let i = r.issues.get_mut(&number).unwrap();
    let new = call.update("pull_request", id, i, |i| {
        let p = i.pull.as_mut().unwrap();
        let mut new = Vec::new();
        for l in add {
            if !p.requested_reviewers.iter().any(|x| x.eq_ignore_ascii_case(&l)) {
                p.requested_reviewers.push(l.clone());
                new.push(l);
            }
        }
        new
    });
    for l in new {
        push_event(w, &key, number, "review_requested", Some(l), None);
    }
    let r = &w.repos[&key];
    json(201, &w.pull_json(&call.req.base_url, r, &r.issues[&number], false))
}

/// `DELETE …/requested_reviewers` (`pulls/remove-requested-reviewers`).
pub fn remove_requested_reviewers(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: ReviewersInput = input(call)?;
    let key = w.repo_key_for(call)?;
    let r = &w.repos[&key];
    if w.viewer_role(r) < Role::Triage {
        return Err(ApiError::forbidden("Resource not accessible by integration"));
    }
    let number = pull_of(r, call)?.number;
    let r = w.repos.get_mut(&key).unwrap();
    let id = issue_ref(r, number);
    let i = r.issues.get_mut(&number).unwrap();
    call.update("pull_request", id, i, |i| {
        i.pull.as_mut().unwrap().requested_reviewers.retain(|x| !inp.reviewers.iter().any(|l| l.eq_ignore_ascii_case(x)));
    });
    for l in inp.reviewers {
        push_event(w, &key, number, "review_request_removed", Some(l), None);
    }
    let r = &w.repos[&key];
    json(200, &w.pull_json(&call.req.base_url, r, &r.issues[&number], false))
}

// ---- reviews ---------------------------------------------------------------------------

/// `GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews` (`pulls/list-reviews`).
pub fn list_reviews(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let i = pull_of(r, call)?;
    let b = call.req.base_url.clone();
    let viewer = w.viewer.clone();
    let list: Vec<&Review> = i
        .pull
        .as_ref()
        .unwrap()
        .reviews
        .iter()
        .filter(|x| x.state != "PENDING" || x.user.eq_ignore_ascii_case(&viewer))
        .collect();
    let n = list.len();
    page_of(call, n, list.into_iter(), |x| review_json(w, &b, r, i.number, x))
}

/// `GET …/reviews/{review_id}` (`pulls/get-review`).
pub fn get_review(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let i = pull_of(r, call)?;
    let id = num(call, "review_id")?;
    let x = i.pull.as_ref().unwrap().reviews.iter().find(|x| x.id == id).ok_or_else(ApiError::not_found)?;
    json(200, &review_json(w, &call.req.base_url, r, i.number, x))
}

#[derive(Debug, Deserialize)]
pub struct ReviewCommentDraft {
    pub path: Option<String>,
    pub position: Option<u64>,
    pub line: Option<u64>,
    pub side: Option<String>,
    pub body: Option<String>,
}

#[derive(Debug, Deserialize, Default)]
pub struct CreateReview {
    pub commit_id: Option<String>,
    pub body: Option<String>,
    pub event: Option<String>,
    #[serde(default)]
    pub comments: Vec<ReviewCommentDraft>,
}

fn event_state(event: &str) -> Result<&'static str, ApiError> {
    match event {
        "APPROVE" => Ok("APPROVED"),
        "REQUEST_CHANGES" => Ok("CHANGES_REQUESTED"),
        "COMMENT" => Ok("COMMENTED"),
        _ => Err(ApiError::invalid("PullRequestReview", "event", "invalid")),
    }
}

/// Check an event against who is reviewing (GitHub refuses approving or requesting changes
/// on your own pull request) and the body it needs.
fn check_review(author: &str, viewer: &str, state: &str, body: &str, has_comments: bool) -> Result<(), ApiError> {
    if author.eq_ignore_ascii_case(viewer) && (state == "APPROVED" || state == "CHANGES_REQUESTED") {
        let what = if state == "APPROVED" { "approve" } else { "request changes on" };
        return Err(ApiError::new(422, "Unprocessable Entity").with_error(json!(format!("Review Can not {what} your own pull request"))));
    }
    if (state == "CHANGES_REQUESTED" || state == "COMMENTED") && body.trim().is_empty() && !has_comments {
        let ev = if state == "COMMENTED" { "COMMENT" } else { "REQUEST_CHANGES" };
        return Err(ApiError::new(422, "Unprocessable Entity").with_error(json!(format!("Review Body is required when using {ev}"))));
    }
    Ok(())
}

/// `POST /repos/{owner}/{repo}/pulls/{pull_number}/reviews` (`pulls/create-review`).
pub fn create_review(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: CreateReview = input(call)?;
    let key = w.repo_key_for(call)?;
    let r = &w.repos[&key];
    let i = pull_of(r, call)?;
    let number = i.number;
    let p = i.pull.as_ref().unwrap();
    let head = head_sha(r, p, i.state == "open");
    let viewer = w.viewer.clone();
    let state = match inp.event.as_deref() {
        None | Some("") | Some("PENDING") => "PENDING",
        Some(e) => event_state(e)?,
    };
    let body = inp.body.clone().unwrap_or_default();
    check_review(&i.user, &viewer, state, &body, !inp.comments.is_empty())?;
    if state == "PENDING" && p.reviews.iter().any(|x| x.state == "PENDING" && x.user.eq_ignore_ascii_case(&viewer)) {
        return Err(ApiError::new(422, "Unprocessable Entity").with_error(json!("User can only have one pending review per pull request")));
    }
    if i.state != "open" && state != "COMMENTED" && state != "PENDING" {
        return Err(ApiError::new(422, "Unprocessable Entity").with_error(json!("Can not approve or request changes on a closed pull request")));
    }
    let commit_id = match &inp.commit_id {
        Some(c) => r.git.resolve(c).ok_or_else(|| ApiError::new(422, "Unprocessable Entity").with_error(json!("Commit SHA does not exist")))?,
        None => head.clone(),
    };
    // Draft comments must land on files the pull request changes.
    let base = base_sha(r, p);
    let mb = r.git.merge_base(&base, &head).unwrap_or(base);
    let changed = diff_trees(&r.git, &tree_of(r, &mb), &tree_of(r, &head));
    let mut drafts = Vec::new();
    for (n, c) in inp.comments.iter().enumerate() {
        let path = c.path.clone().ok_or_else(|| ApiError::custom("PullRequestReviewComment", "path", &format!("comments[{n}].path is missing")))?;
        let f = changed.iter().find(|f| f.filename == path).ok_or_else(|| {
            ApiError::new(422, "Unprocessable Entity").with_error(json!(format!("Path could not be resolved: {path}")))
        })?;
        let body = c.body.clone().ok_or_else(|| ApiError::custom("PullRequestReviewComment", "body", "body is missing"))?;
        drafts.push((path, c.line.or(c.position), c.side.clone().unwrap_or_else(|| "RIGHT".into()), body, f.patch.clone().unwrap_or_default()));
    }
    let id = w.next_id();
    let now = time::now_iso();
    let review = Review {
        id,
        user: viewer.clone(),
        body,
        state: state.to_string(),
        commit_id: commit_id.clone(),
        submitted_at: (state != "PENDING").then(|| now.clone()),
    };
    let mut comment_ids = Vec::new();
    for _ in &drafts {
        comment_ids.push(w.next_id());
    }
    let r = w.repos.get_mut(&key).unwrap();
    for ((path, line, side, body, hunk), cid) in drafts.into_iter().zip(comment_ids) {
        let c = ReviewComment {
            id: cid,
            pull: number,
            review_id: Some(id),
            in_reply_to: None,
            user: viewer.clone(),
            body,
            path,
            line,
            side,
            commit_id: commit_id.clone(),
            diff_hunk: hunk.lines().take(4).collect::<Vec<_>>().join("\n"),
            created_at: now.clone(),
            updated_at: now.clone(),
        };
        call.created("review_comment", cid, &c);
        r.review_comments.insert(cid, c);
    }
    call.created("review", format!("{}#{number}:{id}", r.full_name()), &review);
    let i = r.issues.get_mut(&number).unwrap();
    let p = i.pull.as_mut().unwrap();
    if state != "PENDING" {
        p.requested_reviewers.retain(|x| !x.eq_ignore_ascii_case(&viewer));
    }
    p.reviews.push(review.clone());
    i.updated_at = now;
    let r = &w.repos[&key];
    json(200, &review_json(w, &call.req.base_url, r, number, &review))
}

fn review_mut(r: &mut Repo, number: u64, id: u64) -> Result<&mut Review, ApiError> {
    r.issues
        .get_mut(&number)
        .and_then(|i| i.pull.as_mut())
        .and_then(|p| p.reviews.iter_mut().find(|x| x.id == id))
        .ok_or_else(ApiError::not_found)
}

#[derive(Debug, Deserialize, Default)]
pub struct ReviewBody {
    pub body: Option<String>,
    pub event: Option<String>,
    pub message: Option<String>,
}

/// `PUT …/reviews/{review_id}` (`pulls/update-review`): change a review's body.
pub fn update_review(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: ReviewBody = input(call)?;
    let body = inp.body.ok_or_else(|| ApiError::invalid("PullRequestReview", "body", "missing_field"))?;
    let key = w.repo_key_for(call)?;
    let number = pull_of(&w.repos[&key], call)?.number;
    let id = num(call, "review_id")?;
    let viewer = w.viewer.clone();
    let r = w.repos.get_mut(&key).unwrap();
    let full = r.full_name();
    let x = review_mut(r, number, id)?;
    if !x.user.eq_ignore_ascii_case(&viewer) {
        return Err(ApiError::forbidden("You can only update your own reviews."));
    }
    call.update("review", format!("{full}#{number}:{id}"), x, |x| x.body = body);
    let after = x.clone();
    let r = &w.repos[&key];
    json(200, &review_json(w, &call.req.base_url, r, number, &after))
}

/// `POST …/reviews/{review_id}/events` (`pulls/submit-review`): submit a pending review.
pub fn submit_review(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: ReviewBody = input(call)?;
    let event = inp.event.ok_or_else(|| ApiError::invalid("PullRequestReview", "event", "missing_field"))?;
    let state = event_state(&event)?;
    let key = w.repo_key_for(call)?;
    let i = pull_of(&w.repos[&key], call)?;
    let (number, author) = (i.number, i.user.clone());
    let id = num(call, "review_id")?;
    let viewer = w.viewer.clone();
    let now = time::now_iso();
    let r = w.repos.get_mut(&key).unwrap();
    let full = r.full_name();
    let x = review_mut(r, number, id)?;
    if x.state != "PENDING" {
        return Err(ApiError::new(422, "Unprocessable Entity").with_error(json!("Can not submit a review that is not pending")));
    }
    let body = inp.body.unwrap_or_else(|| x.body.clone());
    check_review(&author, &viewer, state, &body, false)?;
    call.update("review", format!("{full}#{number}:{id}"), x, |x| {
        x.state = state.to_string();
        x.body = body;
        x.submitted_at = Some(now);
    });
    let after = x.clone();
    if let Some(p) = r.issues.get_mut(&number).and_then(|i| i.pull.as_mut()) {
        p.requested_reviewers.retain(|x| !x.eq_ignore_ascii_case(&viewer));
    }
    let r = &w.repos[&key];
    json(200, &review_json(w, &call.req.base_url, r, number, &after))
}

/// `PUT …/reviews/{review_id}/dismissals` (`pulls/dismiss-review`).
pub fn dismiss_review(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: ReviewBody = input(call)?;
    let message = inp.message.ok_or_else(|| ApiError::invalid("PullRequestReview", "message", "missing_field"))?;
    let key = w.repo_key_for(call)?;
    if w.viewer_role(&w.repos[&key]) < Role::Write {
        return Err(ApiError::forbidden("Resource not accessible by integration"));
    }
    let number = pull_of(&w.repos[&key], call)?.number;
    let id = num(call, "review_id")?;
    let r = w.repos.get_mut(&key).unwrap();
    let full = r.full_name();
    let x = review_mut(r, number, id)?;
    if x.state == "PENDING" {
        return Err(ApiError::new(422, "Unprocessable Entity").with_error(json!("Can not dismiss a pending review")));
    }
    call.update("review", format!("{full}#{number}:{id}"), x, |x| x.state = "DISMISSED".into());
    let after = x.clone();
    push_event(w, &key, number, "review_dismissed", Some(message), None);
    let r = &w.repos[&key];
    json(200, &review_json(w, &call.req.base_url, r, number, &after))
}

/// `DELETE …/reviews/{review_id}` (`pulls/delete-pending-review`).
pub fn delete_pending_review(w: &mut World, call: &mut Call) -> ApiResult {
    let key = w.repo_key_for(call)?;
    let number = pull_of(&w.repos[&key], call)?.number;
    let id = num(call, "review_id")?;
    let viewer = w.viewer.clone();
    let r = w.repos.get_mut(&key).unwrap();
    let full = r.full_name();
    let p = r.issues.get_mut(&number).unwrap().pull.as_mut().unwrap();
    let idx = p.reviews.iter().position(|x| x.id == id).ok_or_else(ApiError::not_found)?;
    if p.reviews[idx].state != "PENDING" || !p.reviews[idx].user.eq_ignore_ascii_case(&viewer) {
        return Err(ApiError::new(422, "Unprocessable Entity").with_error(json!("Can not delete a non-pending review")));
    }
    let x = p.reviews.remove(idx);
    r.review_comments.retain(|_, c| c.review_id != Some(id));
    call.deleted("review", format!("{full}#{number}:{id}"), &x);
    let r = &w.repos[&key];
    json(200, &review_json(w, &call.req.base_url, r, number, &x))
}

// ---- review comments -------------------------------------------------------------------

pub fn review_comment_json(w: &World, b: &str, r: &Repo, c: &ReviewComment) -> Value {
    let fname = r.full_name();
    let u = format!("{b}/repos/{fname}/pulls/comments/{}", c.id);
    let html = format!("{b}/{fname}/pull/{}#discussion_r{}", c.pull, c.id);
    let pr = format!("{b}/repos/{fname}/pulls/{}", c.pull);
    let mut v = json!({
        "url": u, "id": c.id, "node_id": node_id("PullRequestReviewComment", c.id),
        "pull_request_review_id": c.review_id, "diff_hunk": c.diff_hunk, "path": c.path,
        "position": c.line, "original_position": c.line,
        "commit_id": c.commit_id, "original_commit_id": c.commit_id,
        "user": w.user_json(b, &c.user), "body": c.body,
        "created_at": c.created_at, "updated_at": c.updated_at,
        "html_url": html, "pull_request_url": pr,
        "author_association": w.author_association(r, &c.user),
        "_links": {"self": {"href": u}, "html": {"href": html}, "pull_request": {"href": pr}},
        "line": c.line, "original_line": c.line, "side": c.side, "start_line": null,
        "original_start_line": null, "start_side": null, "subject_type": "line",
        "reactions": w.reactions_json(format!("{u}/reactions"), &[]),
    });
    if let Some(to) = c.in_reply_to {
        v.as_object_mut().unwrap().insert("in_reply_to_id".into(), json!(to));
    }
    v
}

/// `GET /repos/{owner}/{repo}/pulls/{pull_number}/comments` (`pulls/list-review-comments`).
pub fn list_review_comments(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let n = pull_of(r, call)?.number;
    let b = call.req.base_url.clone();
    let keep = |c: &&ReviewComment| c.pull == n;
    let total = r.review_comments.values().filter(keep).count();
    page_of(call, total, r.review_comments.values().filter(keep), |c| review_comment_json(w, &b, r, c))
}

/// `GET /repos/{owner}/{repo}/pulls/comments` (`pulls/list-review-comments-for-repo`).
pub fn list_review_comments_for_repo(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let b = call.req.base_url.clone();
    page_of(call, r.review_comments.len(), r.review_comments.values(), |c| review_comment_json(w, &b, r, c))
}

/// `GET /repos/{owner}/{repo}/pulls/comments/{comment_id}` (`pulls/get-review-comment`).
pub fn get_review_comment(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let c = r.review_comments.get(&num(call, "comment_id")?).ok_or_else(ApiError::not_found)?;
    json(200, &review_comment_json(w, &call.req.base_url, r, c))
}

#[derive(Debug, Deserialize, Default)]
pub struct CreateReviewComment {
    pub body: Option<String>,
    pub commit_id: Option<String>,
    pub path: Option<String>,
    pub position: Option<u64>,
    pub line: Option<u64>,
    pub side: Option<String>,
    pub in_reply_to: Option<u64>,
}

fn add_review_comment(w: &mut World, call: &mut Call, key: &str, number: u64, inp: CreateReviewComment) -> ApiResult {
    let body = inp.body.clone().filter(|b| !b.trim().is_empty()).ok_or_else(|| ApiError::invalid("PullRequestReviewComment", "body", "missing_field"))?;
    let r = &w.repos[key];
    let i = r.issues.get(&number).ok_or_else(ApiError::not_found)?;
    let p = i.pull.as_ref().ok_or_else(ApiError::not_found)?;
    let head = head_sha(r, p, i.state == "open");
    let (path, line, side, commit_id, hunk) = if let Some(to) = inp.in_reply_to {
        let parent = r.review_comments.get(&to).filter(|c| c.pull == number).ok_or_else(ApiError::not_found)?;
        (parent.path.clone(), parent.line, parent.side.clone(), parent.commit_id.clone(), parent.diff_hunk.clone())
    } else {
        let path = inp.path.clone().ok_or_else(|| ApiError::invalid("PullRequestReviewComment", "path", "missing_field"))?;
        let commit_id = inp.commit_id.clone().ok_or_else(|| ApiError::invalid("PullRequestReviewComment", "commit_id", "missing_field"))?;
        if r.git.commit(&commit_id).is_none() {
            return Err(ApiError::custom("PullRequestReviewComment", "commit_id", "commit_id is not part of the pull request"));
        }
        let base = base_sha(r, p);
        let mb = r.git.merge_base(&base, &head).unwrap_or(base);
        let changed = diff_trees(&r.git, &tree_of(r, &mb), &tree_of(r, &head));
        let f = changed
            .iter()
            .find(|f| f.filename == path)
            .ok_or_else(|| ApiError::custom("PullRequestReviewComment", "path", "pull_request_review_thread.path diff does not exist"))?;
        let hunk = f.patch.clone().unwrap_or_default().lines().take(4).collect::<Vec<_>>().join("\n");
        (path, inp.line.or(inp.position), inp.side.clone().unwrap_or_else(|| "RIGHT".into()), commit_id, hunk)
    };
    let id = w.next_id();
    let rid = w.next_id();
    let now = time::now_iso();
    let viewer = w.viewer.clone();
    let c = ReviewComment {
        id,
        pull: number,
        review_id: Some(rid),
        in_reply_to: inp.in_reply_to,
        user: viewer.clone(),
        body,
        path,
        line,
        side,
        commit_id: commit_id.clone(),
        diff_hunk: hunk,
        created_at: now.clone(),
        updated_at: now.clone(),
    };
    let r = w.repos.get_mut(key).unwrap();
    call.created("review_comment", id, &c);
    r.review_comments.insert(id, c.clone());
    // A lone review comment comes with its own COMMENTED review, as on GitHub.
    let i = r.issues.get_mut(&number).unwrap();
    let review = Review { id: rid, user: viewer, body: String::new(), state: "COMMENTED".into(), commit_id, submitted_at: Some(now.clone()) };
    i.pull.as_mut().unwrap().reviews.push(review);
    i.updated_at = now;
    let r = &w.repos[key];
    json(201, &review_comment_json(w, &call.req.base_url, r, &c))
}

/// `POST /repos/{owner}/{repo}/pulls/{pull_number}/comments` (`pulls/create-review-comment`).
pub fn create_review_comment(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: CreateReviewComment = input(call)?;
    let key = w.repo_key_for(call)?;
    let number = pull_of(&w.repos[&key], call)?.number;
    add_review_comment(w, call, &key, number, inp)
}

/// `POST …/pulls/{pull_number}/comments/{comment_id}/replies` (`pulls/create-reply-for-review-comment`).
pub fn reply_review_comment(w: &mut World, call: &mut Call) -> ApiResult {
    let mut inp: CreateReviewComment = input(call)?;
    let key = w.repo_key_for(call)?;
    let number = pull_of(&w.repos[&key], call)?.number;
    inp.in_reply_to = Some(num(call, "comment_id")?);
    add_review_comment(w, call, &key, number, inp)
}

/// `PATCH /repos/{owner}/{repo}/pulls/comments/{comment_id}` (`pulls/update-review-comment`).
pub fn update_review_comment(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: CreateReviewComment = input(call)?;
    let body = inp.body.filter(|b| !b.trim().is_empty()).ok_or_else(|| ApiError::invalid("PullRequestReviewComment", "body", "missing_field"))?;
    let key = w.repo_key_for(call)?;
    let id = num(call, "comment_id")?;
    let viewer = w.viewer.clone();
    let role = w.viewer_role(&w.repos[&key]);
    let r = w.repos.get_mut(&key).unwrap();
    let c = r.review_comments.get_mut(&id).ok_or_else(ApiError::not_found)?;
    if !c.user.eq_ignore_ascii_case(&viewer) && role < Role::Triage {
        return Err(ApiError::forbidden("You do not have permission to update this comment."));
    }
    call.update("review_comment", id, c, |c| {
        c.body = body;
        c.updated_at = time::now_iso();
    });
    let after = c.clone();
    let r = &w.repos[&key];
    json(200, &review_comment_json(w, &call.req.base_url, r, &after))
}

/// `DELETE /repos/{owner}/{repo}/pulls/comments/{comment_id}` (`pulls/delete-review-comment`).
pub fn delete_review_comment(w: &mut World, call: &mut Call) -> ApiResult {
    let key = w.repo_key_for(call)?;
    let id = num(call, "comment_id")?;
    let viewer = w.viewer.clone();
    let role = w.viewer_role(&w.repos[&key]);
    let r = w.repos.get_mut(&key).unwrap();
    let c = r.review_comments.get(&id).ok_or_else(ApiError::not_found)?;
    if !c.user.eq_ignore_ascii_case(&viewer) && role < Role::Triage {
        return Err(ApiError::forbidden("You do not have permission to delete this comment."));
    }
    let c = r.review_comments.remove(&id).unwrap();
    call.deleted("review_comment", id, &c);
    no_content()
}

#[cfg(test)]
mod tests {
    use super::closing_refs;

    #[test]
    fn closing_keywords() {
        assert_eq!(closing_refs("Fixes #12 and closes: #3, see #4"), vec![3, 12]);
        assert!(closing_refs("prefix#1 suffixes #2").is_empty());
    }
}
