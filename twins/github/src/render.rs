//! GitHub's JSON shapes, built from the world. Every absolute URL starts with the client's
//! own base URL (`b`), so PyGithub and Octokit stay inside the sandbox. `html_url`s point
//! under the same base (`{b}/{owner}/{repo}/pull/1`), which keeps GitHub's path shape.

use base64::Engine as _;
use pome_twin_sdk::{Value, json};

use crate::World;
use crate::git::{Commit, Signature};
use crate::model::*;

/// The features `security_and_analysis` reports and an admin may switch (GitHub's names).
pub const SECURITY_FEATURES: [&str; 5] = [
    "dependabot_security_updates",
    "secret_scanning",
    "secret_scanning_push_protection",
    "secret_scanning_non_provider_patterns",
    "secret_scanning_validity_checks",
];

pub fn node_id(kind: &str, id: u64) -> String {
    base64::engine::general_purpose::STANDARD.encode(format!("0{}:{kind}{id}", kind.len()))
}

/// A pull request review as GitHub answers it.
pub fn review_json(w: &World, b: &str, r: &Repo, number: u64, rv: &Review) -> Value {
    let fname = r.full_name();
    let html = format!("{b}/{fname}/pull/{number}#pullrequestreview-{}", rv.id);
    let pr = format!("{b}/repos/{fname}/pulls/{number}");
    let mut v = json!({
        "id": rv.id, "node_id": node_id("PullRequestReview", rv.id), "user": w.user_json(b, &rv.user),
        "body": rv.body, "state": rv.state, "html_url": html, "pull_request_url": pr,
        "_links": {"html": {"href": html}, "pull_request": {"href": pr}},
        "commit_id": rv.commit_id, "author_association": w.author_association(r, &rv.user),
    });
    if let Some(s) = &rv.submitted_at {
        v.as_object_mut().unwrap().insert("submitted_at".into(), json!(s));
    }
    v
}

impl World {
    pub fn user_json(&self, b: &str, login: &str) -> Value {
        serde_json::to_value(self.user_out(b, login)).expect("users render")
    }

    pub fn opt_user_json(&self, b: &str, login: Option<&str>) -> Value {
        login.map(|l| self.user_json(b, l)).unwrap_or(Value::Null)
    }

    /// `GET /users/{u}` and `GET /user`: the public (or private, for the viewer) profile.
    pub fn full_user_json(&self, b: &str, u: &User, private: bool) -> Value {
        let mut v = self.user_json(b, &u.login);
        let public_repos = self
            .repos
            .values()
            .filter(|r| r.owner.eq_ignore_ascii_case(&u.login) && !r.private)
            .count();
        let m = v.as_object_mut().unwrap();
        for (k, x) in [
            ("name", json!(u.name)),
            ("company", json!(u.company)),
            ("blog", json!("")),
            ("location", json!(u.location)),
            ("email", json!(u.email)),
            ("hireable", Value::Null),
            ("bio", json!(u.bio)),
            ("twitter_username", Value::Null),
            ("public_repos", json!(public_repos)),
            ("public_gists", json!(self.gists.values().filter(|g| g.public && g.owner.eq_ignore_ascii_case(&u.login)).count())),
            ("followers", json!(0)),
            ("following", json!(0)),
            ("created_at", json!(u.created_at)),
            ("updated_at", json!(u.created_at)),
        ] {
            m.insert(k.into(), x);
        }
        if private {
            let owned_private = self
                .repos
                .values()
                .filter(|r| r.owner.eq_ignore_ascii_case(&u.login) && r.private)
                .count();
            for (k, x) in [
                ("private_gists", json!(self.gists.values().filter(|g| !g.public && g.owner.eq_ignore_ascii_case(&u.login)).count())),
                ("total_private_repos", json!(owned_private)),
                ("owned_private_repos", json!(owned_private)),
                ("disk_usage", json!(0)),
                ("collaborators", json!(0)),
                ("two_factor_authentication", json!(true)),
                ("plan", json!({"name": "pro", "space": 976562499, "private_repos": 9999, "collaborators": 0})),
            ] {
                m.insert(k.into(), x);
            }
        }
        v
    }

    pub fn repo_json(&self, b: &str, r: &Repo, full: bool) -> Value {
        let fname = r.full_name();
        let u = format!("{b}/repos/{fname}");
        let html = format!("{b}/{fname}");
        let role = self.viewer_role(r);
        let mut v = json!({
            "id": r.id, "node_id": node_id("Repository", r.id), "name": r.name, "full_name": fname,
            "private": r.private, "owner": self.user_json(b, &r.owner), "html_url": html,
            "description": r.description, "fork": r.parent.is_some(), "url": u,
            "archive_url": format!("{u}/{{archive_format}}{{/ref}}"),
            "assignees_url": format!("{u}/assignees{{/user}}"),
            "blobs_url": format!("{u}/git/blobs{{/sha}}"),
            "branches_url": format!("{u}/branches{{/branch}}"),
            "collaborators_url": format!("{u}/collaborators{{/collaborator}}"),
            "comments_url": format!("{u}/comments{{/number}}"),
            "commits_url": format!("{u}/commits{{/sha}}"),
            "compare_url": format!("{u}/compare/{{base}}...{{head}}"),
            "contents_url": format!("{u}/contents/{{+path}}"),
            "contributors_url": format!("{u}/contributors"),
            "deployments_url": format!("{u}/deployments"),
            "downloads_url": format!("{u}/downloads"),
            "events_url": format!("{u}/events"),
            "forks_url": format!("{u}/forks"),
            "git_commits_url": format!("{u}/git/commits{{/sha}}"),
            "git_refs_url": format!("{u}/git/refs{{/sha}}"),
            "git_tags_url": format!("{u}/git/tags{{/sha}}"),
            "git_url": format!("{html}.git"),
            "issue_comment_url": format!("{u}/issues/comments{{/number}}"),
            "issue_events_url": format!("{u}/issues/events{{/number}}"),
            "issues_url": format!("{u}/issues{{/number}}"),
            "keys_url": format!("{u}/keys{{/key_id}}"),
            "labels_url": format!("{u}/labels{{/name}}"),
            "languages_url": format!("{u}/languages"),
            "merges_url": format!("{u}/merges"),
            "milestones_url": format!("{u}/milestones{{/number}}"),
            "notifications_url": format!("{u}/notifications{{?since,all,participating}}"),
            "pulls_url": format!("{u}/pulls{{/number}}"),
            "releases_url": format!("{u}/releases{{/id}}"),
            "ssh_url": format!("{html}.git"),
            "stargazers_url": format!("{u}/stargazers"),
            "statuses_url": format!("{u}/statuses/{{sha}}"),
            "subscribers_url": format!("{u}/subscribers"),
            "subscription_url": format!("{u}/subscription"),
            "tags_url": format!("{u}/tags"),
            "teams_url": format!("{u}/teams"),
            "trees_url": format!("{u}/git/trees{{/sha}}"),
            "clone_url": format!("{html}.git"),
            "mirror_url": null,
            "hooks_url": format!("{u}/hooks"),
            "svn_url": html,
            "homepage": r.homepage,
            "language": null,
            "forks_count": 0, "stargazers_count": 0, "watchers_count": 0,
            "size": 0,
            "default_branch": r.default_branch,
            "open_issues_count": r.open_issues,
            "is_template": false,
            "topics": r.topics,
            "has_issues": r.has_issues, "has_projects": true, "has_wiki": true, "has_pages": false,
            "has_downloads": true, "has_discussions": false,
            "archived": r.archived, "disabled": false,
            "visibility": if r.private { "private" } else { "public" },
            "pushed_at": r.pushed_at, "created_at": r.created_at, "updated_at": r.updated_at,
            "permissions": {
                "admin": role >= Role::Admin, "maintain": role >= Role::Maintain,
                "push": role >= Role::Write, "triage": role >= Role::Triage, "pull": role >= Role::Read,
            },
            "allow_forking": true, "web_commit_signoff_required": false,
            "license": null,
            "forks": 0, "open_issues": r.open_issues, "watchers": 0,
        });
        if full {
            let m = v.as_object_mut().unwrap();
            for (k, x) in [
                ("allow_merge_commit", json!(r.allow_merge_commit)),
                ("allow_squash_merge", json!(r.allow_squash_merge)),
                ("allow_rebase_merge", json!(r.allow_rebase_merge)),
                ("allow_auto_merge", json!(false)),
                ("allow_update_branch", json!(true)),
                ("delete_branch_on_merge", json!(r.delete_branch_on_merge)),
                ("use_squash_pr_title_as_default", json!(r.merge_messages.squash_title == "PR_TITLE")),
                ("merge_commit_title", json!(r.merge_messages.merge_title)),
                ("merge_commit_message", json!(r.merge_messages.merge_message)),
                ("squash_merge_commit_title", json!(r.merge_messages.squash_title)),
                ("squash_merge_commit_message", json!(r.merge_messages.squash_message)),
                // No organisation in a sandbox defines custom properties, so none has a value.
                ("custom_properties", json!({})),
                ("network_count", json!(0)),
                ("subscribers_count", json!(0)),
            ] {
                m.insert(k.into(), x);
            }
            let owner_is_org = self
                .users
                .get(&r.owner.to_ascii_lowercase())
                .is_some_and(|u| u.kind == "Organization");
            if owner_is_org {
                m.insert("organization".into(), self.user_json(b, &r.owner));
            }
            // Admins see the security features: on github.com secret scanning and push
            // protection are on by default for public repositories, everything else is off.
            if role >= Role::Admin {
                let features: serde_json::Map<String, Value> = SECURITY_FEATURES
                    .iter()
                    .map(|f| {
                        let default = !r.private && matches!(*f, "secret_scanning" | "secret_scanning_push_protection");
                        let on = r.security.get(*f).copied().unwrap_or(default);
                        (f.to_string(), json!({"status": if on { "enabled" } else { "disabled" }}))
                    })
                    .collect();
                m.insert("security_and_analysis".into(), Value::Object(features));
            }
            if let Some(p) = r.parent.as_ref().and_then(|p| self.repos.get(&p.to_ascii_lowercase())) {
                let pj = self.repo_json(b, p, false);
                m.insert("parent".into(), pj.clone());
                m.insert("source".into(), pj);
            }
        }
        v
    }

    pub fn label_json(&self, b: &str, r: &Repo, l: &Label) -> Value {
        json!({
            "id": l.id, "node_id": node_id("Label", l.id),
            "url": format!("{b}/repos/{}/labels/{}", r.full_name(), enc(&l.name)),
            "name": l.name, "color": l.color, "default": l.default, "description": l.description,
        })
    }

    pub fn milestone_json(&self, b: &str, r: &Repo, m: &Milestone) -> Value {
        let (open, closed) = (m.open_issues, m.closed_issues);
        let u = format!("{b}/repos/{}/milestones/{}", r.full_name(), m.number);
        json!({
            "url": u, "html_url": format!("{b}/{}/milestone/{}", r.full_name(), m.number),
            "labels_url": format!("{u}/labels"), "id": m.id, "node_id": node_id("Milestone", m.id),
            "number": m.number, "state": m.state, "title": m.title, "description": m.description,
            "creator": self.user_json(b, &m.creator), "open_issues": open, "closed_issues": closed,
            "created_at": m.created_at, "updated_at": m.updated_at, "closed_at": m.closed_at,
            "due_on": m.due_on,
        })
    }

    pub fn author_association(&self, r: &Repo, login: &str) -> &'static str {
        if r.owner.eq_ignore_ascii_case(login) {
            "OWNER"
        } else if r.collaborators.contains_key(&login.to_ascii_lowercase()) {
            "COLLABORATOR"
        } else if login.eq_ignore_ascii_case(&self.viewer) && r.agent_role >= Role::Write {
            "MEMBER"
        } else {
            "NONE"
        }
    }

    pub fn reactions_json(&self, url: String, rs: &[Reaction]) -> Value {
        let count = |c: &str| rs.iter().filter(|r| r.content == c).count();
        json!({
            "url": url, "total_count": rs.len(),
            "+1": count("+1"), "-1": count("-1"), "laugh": count("laugh"), "confused": count("confused"),
            "heart": count("heart"), "hooray": count("hooray"), "eyes": count("eyes"), "rocket": count("rocket"),
        })
    }

    pub fn issue_json(&self, b: &str, r: &Repo, i: &Issue) -> Value {
        serde_json::to_value(self.issue_out(b, r, i)).expect("issues render")
    }

    pub fn comment_json(&self, b: &str, r: &Repo, c: &IssueComment) -> Value {
        let fname = r.full_name();
        let u = format!("{b}/repos/{fname}/issues/comments/{}", c.id);
        let kind = match r.issues.get(&c.issue).map(|i| i.pull.is_some()) {
            Some(true) => "pull",
            _ => "issues",
        };
        json!({
            "url": u, "html_url": format!("{b}/{fname}/{kind}/{}#issuecomment-{}", c.issue, c.id),
            "issue_url": format!("{b}/repos/{fname}/issues/{}", c.issue),
            "id": c.id, "node_id": node_id("IssueComment", c.id),
            "user": self.user_json(b, &c.user), "created_at": c.created_at, "updated_at": c.updated_at,
            "author_association": self.author_association(r, &c.user), "body": c.body,
            "reactions": self.reactions_json(format!("{u}/reactions"), &c.reactions),
            "performed_via_github_app": null,
        })
    }

    pub fn reaction_json(&self, b: &str, x: &Reaction) -> Value {
        json!({
            "id": x.id, "node_id": node_id("Reaction", x.id), "user": self.user_json(b, &x.user),
            "content": x.content, "created_at": x.created_at,
        })
    }

    pub fn event_json(&self, b: &str, r: &Repo, e: &IssueEvent, with_issue: bool) -> Value {
        let fname = r.full_name();
        let mut v = json!({
            "id": e.id, "node_id": node_id("Event", e.id),
            "url": format!("{b}/repos/{fname}/issues/events/{}", e.id),
            "actor": self.user_json(b, &e.actor), "event": e.event,
            "commit_id": e.commit_id,
            "commit_url": e.commit_id.as_ref().map(|s| format!("{b}/repos/{fname}/commits/{s}")),
            "created_at": e.created_at, "performed_via_github_app": null,
        });
        let m = v.as_object_mut().unwrap();
        let d = e.detail.clone().unwrap_or_default();
        match e.event.as_str() {
            "labeled" | "unlabeled" => {
                let color = r.label(&d).map(|l| l.color.clone()).unwrap_or_else(|| "ededed".into());
                m.insert("label".into(), json!({"name": d, "color": color}));
            }
            "assigned" | "unassigned" => {
                m.insert("assignee".into(), self.user_json(b, &d));
                m.insert("assigner".into(), self.user_json(b, &e.actor));
            }
            "milestoned" | "demilestoned" => {
                m.insert("milestone".into(), json!({"title": d}));
            }
            "renamed" => {
                let (from, to) = d.split_once('\u{0}').unwrap_or((&d, ""));
                m.insert("rename".into(), json!({"from": from, "to": to}));
            }
            "review_requested" | "review_request_removed" => {
                m.insert("requested_reviewer".into(), self.user_json(b, &d));
                m.insert("review_requester".into(), self.user_json(b, &e.actor));
            }
            "closed" => {
                m.insert("state_reason".into(), if d.is_empty() { Value::Null } else { json!(d) });
            }
            _ => {}
        }
        if with_issue {
            if let Some(i) = r.issues.get(&e.issue) {
                m.insert("issue".into(), self.issue_json(b, r, i));
            }
        }
        v
    }

    pub fn status_json(&self, b: &str, r: &Repo, s: &Status) -> Value {
        json!({
            "url": format!("{b}/repos/{}/statuses/{}", r.full_name(), s.sha),
            "avatar_url": format!("{b}/_avatars/{}", s.id),
            "id": s.id, "node_id": node_id("StatusContext", s.id), "state": s.state,
            "description": s.description, "target_url": s.target_url, "context": s.context,
            "created_at": s.created_at, "updated_at": s.updated_at,
            "creator": self.user_json(b, &s.creator),
        })
    }

    pub fn signature_json(s: &Signature) -> Value {
        json!({"name": s.name, "email": s.email, "date": s.date})
    }

    /// The login a commit signature belongs to, when one of our users matches it.
    pub fn login_for(&self, s: &Signature) -> Option<String> {
        let email = s.email.to_ascii_lowercase();
        self.users
            .values()
            .find(|u| {
                u.email.as_deref().is_some_and(|e| e.eq_ignore_ascii_case(&email))
                    || email == format!("{}@users.noreply.github.com", u.login.to_ascii_lowercase())
                    || u.login.eq_ignore_ascii_case(&s.name)
            })
            .map(|u| u.login.clone())
    }

    /// The `git-commit` shape (`GET /git/commits/{sha}`).
    pub fn git_commit_json(&self, b: &str, r: &Repo, sha: &str, c: &Commit) -> Value {
        let fname = r.full_name();
        json!({
            "sha": sha, "node_id": node_id("Commit", short_id(sha)),
            "url": format!("{b}/repos/{fname}/git/commits/{sha}"),
            "html_url": format!("{b}/{fname}/commit/{sha}"),
            "author": Self::signature_json(&c.author), "committer": Self::signature_json(&c.committer),
            "message": c.message,
            "tree": {"sha": c.tree, "url": format!("{b}/repos/{fname}/git/trees/{}", c.tree)},
            "parents": c.parents.iter().map(|p| json!({
                "sha": p, "url": format!("{b}/repos/{fname}/git/commits/{p}"),
                "html_url": format!("{b}/{fname}/commit/{p}"),
            })).collect::<Vec<_>>(),
            "verification": {"verified": false, "reason": "unsigned", "signature": null, "payload": null, "verified_at": null},
        })
    }

    /// The `commit` shape (`GET /commits/{sha}`); `files` only when asked.
    pub fn commit_json(&self, b: &str, r: &Repo, sha: &str, c: &Commit, files: Option<Vec<Value>>) -> Value {
        let fname = r.full_name();
        let u = format!("{b}/repos/{fname}/commits/{sha}");
        let mut v = json!({
            "url": u, "sha": sha, "node_id": node_id("Commit", short_id(sha)),
            "html_url": format!("{b}/{fname}/commit/{sha}"), "comments_url": format!("{u}/comments"),
            "commit": {
                "url": format!("{b}/repos/{fname}/git/commits/{sha}"),
                "author": Self::signature_json(&c.author), "committer": Self::signature_json(&c.committer),
                "message": c.message, "comment_count": 0,
                "tree": {"sha": c.tree, "url": format!("{b}/repos/{fname}/git/trees/{}", c.tree)},
                "verification": {"verified": false, "reason": "unsigned", "signature": null, "payload": null, "verified_at": null},
            },
            "author": self.opt_user_json(b, self.login_for(&c.author).as_deref()),
            "committer": self.opt_user_json(b, self.login_for(&c.committer).as_deref()),
            "parents": c.parents.iter().map(|p| json!({
                "sha": p, "url": format!("{b}/repos/{fname}/commits/{p}"),
                "html_url": format!("{b}/{fname}/commit/{p}"),
            })).collect::<Vec<_>>(),
        });
        if let Some(files) = files {
            let (add, del) = files.iter().fold((0u64, 0u64), |(a, d), f| {
                (a + f["additions"].as_u64().unwrap_or(0), d + f["deletions"].as_u64().unwrap_or(0))
            });
            let m = v.as_object_mut().unwrap();
            m.insert("stats".into(), json!({"total": add + del, "additions": add, "deletions": del}));
            m.insert("files".into(), Value::Array(files));
        }
        v
    }

    pub fn branch_short_json(&self, b: &str, r: &Repo, name: &str, sha: &str) -> Value {
        json!({
            "name": name,
            "commit": {"sha": sha, "url": format!("{b}/repos/{}/commits/{sha}", r.full_name())},
            "protected": self.is_protected(r, name),
        })
    }

    pub fn is_protected(&self, r: &Repo, branch: &str) -> bool {
        (branch == r.default_branch && !r.required_contexts.is_empty())
            || self.branch_protections.get(&r.id).is_some_and(|m| m.contains_key(branch))
    }
}

/// A stable small integer for node ids of objects named by sha.
pub fn short_id(sha: &str) -> u64 {
    u64::from_str_radix(sha.get(0..12).unwrap_or("0"), 16).unwrap_or(0)
}

/// Percent-encode a path segment (label names with spaces, file paths keep `/`).
pub fn enc(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

pub fn enc_path(s: &str) -> String {
    s.split('/').map(enc).collect::<Vec<_>>().join("/")
}
