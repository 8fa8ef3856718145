//! The world the GitHub twin keeps: users, repositories and everything inside them.
//!
//! Every collection is ordered (BTreeMap/Vec) so that the same seed and the same requests
//! give the same bytes. Keys that GitHub treats case-insensitively (logins, repository
//! names, label names) are stored lower-cased in map keys; the display spelling lives in
//! the value. Snapshots are postcard, so nothing here uses untagged enums, flattening or
//! skipped fields.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::git::GitStore;

/// A repository role, weakest first, so `role >= Role::Write` reads as GitHub's checks do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    None,
    Read,
    Triage,
    Write,
    Maintain,
    Admin,
}

impl Role {
    pub fn parse(s: &str) -> Option<Role> {
        Some(match s.to_ascii_lowercase().as_str() {
            "none" => Role::None,
            "read" | "pull" => Role::Read,
            "triage" => Role::Triage,
            "write" | "push" => Role::Write,
            "maintain" => Role::Maintain,
            "admin" => Role::Admin,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Role::None => "none",
            Role::Read => "read",
            Role::Triage => "triage",
            Role::Write => "write",
            Role::Maintain => "maintain",
            Role::Admin => "admin",
        }
    }

    /// The word a team's `permission` on a repository uses (`pull` … `admin`).
    pub fn team_word(self) -> &'static str {
        match self {
            Role::None | Role::Read => "pull",
            Role::Triage => "triage",
            Role::Write => "push",
            Role::Maintain => "maintain",
            Role::Admin => "admin",
        }
    }

    /// The legacy `permission` word of `GET /collaborators/{u}/permission`.
    pub fn legacy(self) -> &'static str {
        match self {
            Role::None => "none",
            Role::Read | Role::Triage => "read",
            Role::Write | Role::Maintain => "write",
            Role::Admin => "admin",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct User {
    pub id: u64,
    pub login: String,
    pub name: Option<String>,
    /// `User`, `Organization` or `Bot`.
    pub kind: String,
    pub email: Option<String>,
    pub bio: Option<String>,
    pub company: Option<String>,
    /// Where the account says it is (its public profile).
    pub location: Option<String>,
    pub created_at: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Label {
    pub id: u64,
    pub name: String,
    pub color: String,
    pub description: Option<String>,
    pub default: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Milestone {
    pub id: u64,
    pub number: u64,
    pub title: String,
    pub description: Option<String>,
    pub state: String,
    pub due_on: Option<String>,
    pub creator: String,
    pub created_at: String,
    pub updated_at: String,
    pub closed_at: Option<String>,
    /// Issue counts, kept current by `Repo::recount` after every write.
    pub open_issues: u64,
    pub closed_issues: u64,
}

/// An issue or a pull request: they share one number space, and every pull request is an
/// issue (comments, labels, assignees) with `pull` set.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Issue {
    pub id: u64,
    pub number: u64,
    pub title: String,
    pub body: Option<String>,
    pub user: String,
    pub state: String,
    pub state_reason: Option<String>,
    pub labels: Vec<String>,
    pub assignees: Vec<String>,
    pub milestone: Option<u64>,
    pub locked: bool,
    pub active_lock_reason: Option<String>,
    pub comments: u64,
    pub created_at: String,
    pub updated_at: String,
    pub closed_at: Option<String>,
    pub closed_by: Option<String>,
    pub reactions: Vec<Reaction>,
    pub pull: Option<Pull>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Pull {
    /// Pull requests have their own id beside the issue's.
    pub id: u64,
    pub head_ref: String,
    /// The head's tip when the pull request was last looked at (kept when the branch goes).
    pub head_sha: String,
    pub base_ref: String,
    pub draft: bool,
    pub merged: bool,
    pub merged_at: Option<String>,
    pub merged_by: Option<String>,
    pub merge_commit_sha: Option<String>,
    pub maintainer_can_modify: bool,
    pub requested_reviewers: Vec<String>,
    pub reviews: Vec<Review>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Review {
    pub id: u64,
    pub user: String,
    pub body: String,
    /// `APPROVED`, `CHANGES_REQUESTED`, `COMMENTED`, `PENDING` or `DISMISSED`.
    pub state: String,
    pub commit_id: String,
    pub submitted_at: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Reaction {
    pub id: u64,
    pub user: String,
    pub content: String,
    pub created_at: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IssueComment {
    pub id: u64,
    pub issue: u64,
    pub user: String,
    pub body: String,
    pub created_at: String,
    pub updated_at: String,
    pub reactions: Vec<Reaction>,
}

/// A comment on a pull request's diff.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReviewComment {
    pub id: u64,
    pub pull: u64,
    pub review_id: Option<u64>,
    pub in_reply_to: Option<u64>,
    pub user: String,
    pub body: String,
    pub path: String,
    pub line: Option<u64>,
    pub side: String,
    pub commit_id: String,
    pub diff_hunk: String,
    pub created_at: String,
    pub updated_at: String,
}

/// One entry of an issue's event log (`GET …/issues/{n}/events`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IssueEvent {
    pub id: u64,
    pub issue: u64,
    pub actor: String,
    /// `closed`, `reopened`, `labeled`, `unlabeled`, `assigned`, `unassigned`, `milestoned`,
    /// `demilestoned`, `renamed`, `locked`, `unlocked`, `merged`, `head_ref_deleted`,
    /// `review_requested`, `referenced`.
    pub event: String,
    /// Event-specific detail: label name, assignee login, milestone title, old title.
    pub detail: Option<String>,
    pub commit_id: Option<String>,
    pub created_at: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Status {
    pub id: u64,
    pub sha: String,
    pub state: String,
    pub context: String,
    pub description: Option<String>,
    pub target_url: Option<String>,
    pub creator: String,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckRun {
    pub id: u64,
    pub name: String,
    pub head_sha: String,
    pub status: String,
    pub conclusion: Option<String>,
    pub external_id: Option<String>,
    pub details_url: Option<String>,
    pub started_at: Option<String>,
    pub completed_at: Option<String>,
    pub title: Option<String>,
    pub summary: Option<String>,
    pub text: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Release {
    pub id: u64,
    pub tag_name: String,
    pub target_commitish: String,
    pub name: Option<String>,
    pub body: Option<String>,
    pub draft: bool,
    pub prerelease: bool,
    pub author: String,
    pub created_at: String,
    pub published_at: Option<String>,
}

/// A repository's `merge_commit_title`/`merge_commit_message` and
/// `squash_merge_commit_title`/`squash_merge_commit_message` settings, with GitHub's
/// defaults (`MERGE_MESSAGE`/`PR_TITLE`, `COMMIT_OR_PR_TITLE`/`COMMIT_MESSAGES`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MergeMessages {
    pub merge_title: String,
    pub merge_message: String,
    pub squash_title: String,
    pub squash_message: String,
}

impl Default for MergeMessages {
    fn default() -> Self {
        MergeMessages {
            merge_title: "MERGE_MESSAGE".into(),
            merge_message: "PR_TITLE".into(),
            squash_title: "COMMIT_OR_PR_TITLE".into(),
            squash_message: "COMMIT_MESSAGES".into(),
        }
    }
}

/// A branch's protection rule (`handlers/protection.rs`), GitHub's settings one to one. For
/// the default branch the required contexts are `Repo::required_contexts` (what the seed's
/// `required_status_checks` sets and the merge gate reads); `status_checks.contexts` is then
/// kept equal to them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Protection {
    pub status_checks: Option<StatusChecks>,
    pub enforce_admins: bool,
    pub reviews: Option<ReviewRule>,
    /// Who may push (organisation repositories only); `None`: anyone with write access.
    pub restrictions: Option<Restrictions>,
    pub signatures: bool,
    pub linear_history: bool,
    pub force_pushes: bool,
    pub deletions: bool,
    pub block_creations: bool,
    pub conversation_resolution: bool,
    pub lock_branch: bool,
    pub fork_syncing: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StatusChecks {
    /// The head must be up to date with the branch before a merge.
    pub strict: bool,
    pub contexts: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReviewRule {
    pub dismiss_stale_reviews: bool,
    pub require_code_owner_reviews: bool,
    /// 0..=6, as GitHub allows.
    pub required_approving_review_count: u64,
    pub require_last_push_approval: bool,
    /// Who may dismiss reviews (organisation repositories); `None`: anyone with write access.
    pub dismissal: Option<Restrictions>,
}

/// Users (logins as spelled), teams (slugs) and apps (slugs) a restriction lets through.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Restrictions {
    pub users: Vec<String>,
    pub teams: Vec<String>,
    pub apps: Vec<String>,
}

/// A file attached to a release (`handlers/releases.rs`). What the asset routes answer and
/// the tape records; the bytes are kept beside it in [`ReleaseAsset::content`], which the
/// tape and the state export leave out (the `digest` names them).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReleaseAsset {
    pub id: u64,
    /// The repository's id and the release's id this asset belongs to.
    pub repo: u64,
    pub release: u64,
    pub name: String,
    pub label: Option<String>,
    pub content_type: String,
    pub size: u64,
    /// `sha256:<hex>` of the bytes, as GitHub reports it.
    pub digest: String,
    /// Downloads through `browser_download_url` (the file the twin serves).
    pub download_count: u64,
    pub uploader: String,
    pub created_at: String,
    pub updated_at: String,
}

/// A release asset's bytes, in snapshots only.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StoredAsset {
    pub asset: ReleaseAsset,
    pub content: crate::git::Bytes,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Repo {
    pub id: u64,
    pub owner: String,
    pub name: String,
    pub description: Option<String>,
    pub homepage: Option<String>,
    pub private: bool,
    pub default_branch: String,
    pub topics: Vec<String>,
    pub archived: bool,
    pub has_issues: bool,
    pub allow_merge_commit: bool,
    pub allow_squash_merge: bool,
    pub allow_rebase_merge: bool,
    pub delete_branch_on_merge: bool,
    /// `owner/name` of the repository this one was forked from.
    pub parent: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub pushed_at: String,
    /// Lower-cased login → role. The owner (a user) is an implicit admin.
    pub collaborators: BTreeMap<String, Role>,
    /// The authenticated user's role when it is neither the owner nor a listed
    /// collaborator (seed `agent_permission`, default `write`: the agent was brought in to
    /// work on the seeded repositories).
    pub agent_role: Role,
    /// Status contexts that must be `success` before a merge into the default branch.
    pub required_contexts: Vec<String>,
    /// How merges and squashes word their commits when the caller gives no title or message.
    pub merge_messages: MergeMessages,
    /// Security features an admin turned on or off (`security_and_analysis`); the rest stay
    /// at GitHub's defaults for the repository's visibility.
    pub security: BTreeMap<String, bool>,
    pub labels: Vec<Label>,
    pub milestones: BTreeMap<u64, Milestone>,
    pub issues: BTreeMap<u64, Issue>,
    pub comments: BTreeMap<u64, IssueComment>,
    pub review_comments: BTreeMap<u64, ReviewComment>,
    pub events: Vec<IssueEvent>,
    pub statuses: Vec<Status>,
    pub check_runs: BTreeMap<u64, CheckRun>,
    pub releases: BTreeMap<u64, Release>,
    pub git: GitStore,
    /// Next issue/pull request number.
    pub next_number: u64,
    /// Count of open issues and pull requests (GitHub's `open_issues_count`), kept current
    /// so rendering a repository costs nothing.
    pub open_issues: u64,
}

/// The tree of commit `commit` in `r` (empty when there is no such commit).
pub fn tree_of(r: &Repo, commit: &str) -> String {
    r.git.commit(commit).map(|c| c.tree.clone()).unwrap_or_default()
}

impl Repo {
    pub fn full_name(&self) -> String {
        format!("{}/{}", self.owner, self.name)
    }

    pub fn label(&self, name: &str) -> Option<&Label> {
        self.labels.iter().find(|l| l.name.eq_ignore_ascii_case(name))
    }

    /// Move one issue's contribution to the counts from `before` to `after` (each `(open,
    /// milestone)`, `None` = not counted). Called wherever an issue is created, changes state
    /// or changes milestone, so reads never count and writes cost O(1).
    pub fn track(&mut self, before: Option<(bool, Option<u64>)>, after: Option<(bool, Option<u64>)>) {
        for (entry, sign) in [(before, -1i64), (after, 1i64)] {
            let Some((open, milestone)) = entry else { continue };
            let add = |n: &mut u64| *n = n.saturating_add_signed(sign);
            if open {
                add(&mut self.open_issues);
            }
            if let Some(m) = milestone.and_then(|n| self.milestones.get_mut(&n)) {
                if open {
                    add(&mut m.open_issues);
                } else {
                    add(&mut m.closed_issues);
                }
            }
        }
    }

    /// Recount open issues and milestone progress from scratch (seeds; tests compare it with
    /// the tracked counts).
    pub fn recount(&mut self) {
        let mut open = 0;
        for m in self.milestones.values_mut() {
            m.open_issues = 0;
            m.closed_issues = 0;
        }
        for i in self.issues.values() {
            let is_open = i.state == "open";
            if is_open {
                open += 1;
            }
            if let Some(m) = i.milestone.and_then(|n| self.milestones.get_mut(&n)) {
                if is_open {
                    m.open_issues += 1;
                } else {
                    m.closed_issues += 1;
                }
            }
        }
        self.open_issues = open;
    }
}

/// A team of an organization (`GET /orgs/{org}/teams/{team_slug}`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Team {
    pub id: u64,
    /// The organization's login as spelled.
    pub org: String,
    pub slug: String,
    pub name: String,
    pub description: Option<String>,
    /// `closed` (visible to the organization) or `secret`.
    pub privacy: String,
    /// Member logins as spelled, in the order they joined.
    pub members: Vec<String>,
    /// The members who maintain the team (each also in `members`).
    pub maintainers: Vec<String>,
    /// The organisation's repositories the team has access to (lower-cased `owner/name`) and
    /// the role its members have there.
    pub repos: BTreeMap<String, Role>,
    pub created_at: String,
    pub updated_at: String,
}

/// The issue types every organization starts with on GitHub: name, description, colour.
pub const DEFAULT_ISSUE_TYPES: [(&str, &str, &str); 3] = [
    ("Task", "A specific piece of work", "yellow"),
    ("Bug", "An unexpected problem or behavior", "red"),
    ("Feature", "A request, idea, or new functionality", "blue"),
];

/// A custom issue field of an organization (`Priority`, `Due date`): every repository of the
/// organization can set it on its issues.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IssueField {
    pub id: u64,
    pub name: String,
    /// `text`, `number`, `date` or `single_select`.
    pub data_type: String,
    pub description: Option<String>,
    /// A single-select field's options: id and name, in order.
    pub options: Vec<(u64, String)>,
}

/// A gist: a few files with a history of their own, owned by a user. Secret gists
/// (`public: false`) are unlisted, not private: anyone with the id can read them.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Gist {
    /// GitHub's 32-hex-digit id, derived from `num` so replays repeat it.
    pub id: String,
    /// The world id (for `node_id`).
    pub num: u64,
    pub owner: String,
    pub description: Option<String>,
    pub public: bool,
    pub created_at: String,
    pub updated_at: String,
    /// The id of the gist this one was forked from.
    pub fork_of: Option<String>,
    /// Revisions, oldest first; the last holds the current files. Never empty.
    pub history: Vec<GistRevision>,
    /// Logins (as spelled) that starred the gist, in the order they did.
    pub stars: Vec<String>,
    pub comments: BTreeMap<u64, GistComment>,
}

/// One revision of a gist: every file's text as of that commit.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GistRevision {
    /// The revision's commit sha (`version`).
    pub version: String,
    pub user: String,
    pub committed_at: String,
    /// File name → content; ordered by name, as GitHub lists a gist's files.
    pub files: BTreeMap<String, String>,
    /// Lines added and deleted against the previous revision.
    pub additions: u64,
    pub deletions: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GistComment {
    pub id: u64,
    pub user: String,
    pub body: String,
    pub created_at: String,
    pub updated_at: String,
}

impl Gist {
    pub fn current(&self) -> &GistRevision {
        self.history.last().expect("a gist has at least one revision")
    }
}

/// A repository's GitHub Actions: which workflows were disabled, and the runs. The workflows
/// themselves are the `.github/workflows/*.yml` files on the default branch.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RepoActions {
    /// Paths of workflows disabled with `PUT …/disable`.
    pub disabled: Vec<String>,
    /// Runs by id.
    pub runs: BTreeMap<u64, WorkflowRun>,
    /// Workflow path → the last run number handed out.
    pub run_numbers: BTreeMap<String, u64>,
    /// Workflow file name or path → the conclusion its new runs reach (seed
    /// `workflow_outcomes`; `success` when absent).
    pub outcomes: BTreeMap<String, String>,
}

/// A workflow run. Its status is not stored: it follows from its jobs' schedules and the
/// virtual clock (`handlers/actions.rs`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkflowRun {
    pub id: u64,
    pub workflow_path: String,
    pub name: String,
    pub run_number: u64,
    pub run_attempt: u64,
    pub event: String,
    pub head_branch: Option<String>,
    pub head_sha: String,
    pub display_title: String,
    pub actor: String,
    pub triggering_actor: String,
    /// Unix seconds the run was created and its latest attempt started.
    pub created: i64,
    pub attempt_started: i64,
    /// Every job of every attempt, in order.
    pub jobs: Vec<WorkflowJob>,
    pub artifacts: Vec<Artifact>,
    /// Attempts up to this one had their logs deleted (`DELETE …/runs/{id}/logs`); 0: none.
    #[serde(default)]
    pub logs_deleted_through: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkflowJob {
    pub id: u64,
    pub name: String,
    pub attempt: u64,
    pub steps: Vec<String>,
    /// The conclusion it reaches when it runs to the end.
    pub plan: String,
    /// Unix seconds it was queued.
    pub start: i64,
    /// Unix seconds it was cancelled, if it was before completing.
    pub cancelled_at: Option<i64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Artifact {
    pub id: u64,
    pub name: String,
    /// Path → content of the files in the archive.
    pub files: BTreeMap<String, String>,
    pub created: i64,
}
