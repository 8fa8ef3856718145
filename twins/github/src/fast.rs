//! Typed renderings of the shapes served most (issues with their users, labels and
//! milestone), serialised straight to bytes. Building a `serde_json::Value` tree for these
//! costs an allocation and a hash insert per field; issue lists and issue writes are the
//! twin's hottest paths, so they skip the tree. `render.rs` builds the same shapes as
//! `Value`s for the places that extend them (search scores, pull requests).

use std::fmt;

use serde::ser::{SerializeStruct as _, Serializer};
use serde::Serialize;

use crate::World;
use crate::model::*;
use crate::render::{enc, node_id};

/// A user as GitHub embeds one in every issue, comment and milestone. Its dozen URLs are
/// written straight into the output rather than built as strings first: an issue list
/// embeds several users per issue.
pub struct UserOut<'a> {
    base: &'a str,
    login: &'a str,
    id: u64,
    kind: &'a str,
}

/// Text written by a closure: serialised in place, with no intermediate `String`.
struct Text<F: Fn(&mut fmt::Formatter) -> fmt::Result>(F);

impl<F: Fn(&mut fmt::Formatter) -> fmt::Result> fmt::Display for Text<F> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        (self.0)(f)
    }
}

impl<F: Fn(&mut fmt::Formatter) -> fmt::Result> Serialize for Text<F> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl Serialize for UserOut<'_> {
    /// Written from the memo of rendered users: a page of issues embeds the same few users
    /// over and over.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        USERS.with(|memo| {
            let mut memo = memo.borrow_mut();
            if let Some(m) = memo.iter().find(|m| m.id == self.id && m.login == self.login && m.kind == self.kind && m.base == self.base) {
                return m.json.serialize(s);
            }
            let json = serde_json::value::to_raw_value(&Fields(self)).map_err(serde::ser::Error::custom)?;
            let out = json.serialize(s);
            if memo.len() >= MEMO_USERS {
                memo.clear();
            }
            memo.push(Rendered { id: self.id, login: self.login.to_string(), kind: self.kind.to_string(), base: self.base.to_string(), json });
            out
        })
    }
}

/// A user's JSON is a function of these four alone, so a memo entry never goes stale.
struct Rendered {
    id: u64,
    login: String,
    kind: String,
    base: String,
    json: Box<serde_json::value::RawValue>,
}

const MEMO_USERS: usize = 256;

thread_local! {
    static USERS: std::cell::RefCell<Vec<Rendered>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The fields themselves.
struct Fields<'a, 'b>(&'b UserOut<'a>);

impl Serialize for Fields<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (b, login, id) = (self.0.base, self.0.login, self.0.id);
        // `{u}<suffix>` for the URLs under the user's API URL.
        let under = |suffix: &'static str| Text(move |f: &mut fmt::Formatter| write!(f, "{b}/users/{login}{suffix}"));
        let mut m = s.serialize_struct("UserOut", 19)?;
        m.serialize_field("login", login)?;
        m.serialize_field("id", &id)?;
        m.serialize_field("node_id", &node_id("User", id))?;
        m.serialize_field("avatar_url", &Text(|f: &mut fmt::Formatter| write!(f, "{b}/_avatars/{id}")))?;
        m.serialize_field("gravatar_id", "")?;
        m.serialize_field("url", &under(""))?;
        m.serialize_field("html_url", &Text(|f: &mut fmt::Formatter| write!(f, "{b}/{login}")))?;
        m.serialize_field("followers_url", &under("/followers"))?;
        m.serialize_field("following_url", &under("/following{/other_user}"))?;
        m.serialize_field("gists_url", &under("/gists{/gist_id}"))?;
        m.serialize_field("starred_url", &under("/starred{/owner}{/repo}"))?;
        m.serialize_field("subscriptions_url", &under("/subscriptions"))?;
        m.serialize_field("organizations_url", &under("/orgs"))?;
        m.serialize_field("repos_url", &under("/repos"))?;
        m.serialize_field("events_url", &under("/events{/privacy}"))?;
        m.serialize_field("received_events_url", &under("/received_events"))?;
        m.serialize_field("type", self.0.kind)?;
        m.serialize_field("user_view_type", "public")?;
        m.serialize_field("site_admin", &false)?;
        m.end()
    }
}

#[derive(Serialize)]
pub struct LabelOut<'a> {
    id: u64,
    node_id: String,
    url: String,
    name: &'a str,
    color: &'a str,
    default: bool,
    description: &'a Option<String>,
}

#[derive(Serialize)]
pub struct MilestoneOut<'a> {
    url: String,
    html_url: String,
    labels_url: String,
    id: u64,
    node_id: String,
    number: u64,
    state: &'a str,
    title: &'a str,
    description: &'a Option<String>,
    creator: UserOut<'a>,
    open_issues: u64,
    closed_issues: u64,
    created_at: &'a str,
    updated_at: &'a str,
    closed_at: &'a Option<String>,
    due_on: &'a Option<String>,
}

#[derive(Serialize)]
pub struct ReactionsOut {
    url: String,
    total_count: usize,
    #[serde(rename = "+1")]
    plus_one: usize,
    #[serde(rename = "-1")]
    minus_one: usize,
    laugh: usize,
    confused: usize,
    heart: usize,
    hooray: usize,
    eyes: usize,
    rocket: usize,
}

#[derive(Serialize)]
pub struct PullRef<'a> {
    url: String,
    html_url: String,
    diff_url: String,
    patch_url: String,
    merged_at: &'a Option<String>,
}

/// A URL under a repository, `{base}/repos/{owner}/{name}{path}{number}{suffix}` for the API
/// (`{base}/{owner}/{name}…` for the web), written straight into the output.
#[derive(Clone, Copy)]
pub struct RepoUrl<'a> {
    base: &'a str,
    api: bool,
    owner: &'a str,
    name: &'a str,
    path: &'static str,
    number: Option<u64>,
    suffix: &'static str,
}

impl<'a> RepoUrl<'a> {
    fn api(base: &'a str, r: &'a Repo) -> RepoUrl<'a> {
        RepoUrl { base, api: true, owner: &r.owner, name: &r.name, path: "", number: None, suffix: "" }
    }
    fn web(base: &'a str, r: &'a Repo) -> RepoUrl<'a> {
        RepoUrl { api: false, ..RepoUrl::api(base, r) }
    }
    fn at(self, path: &'static str, number: u64) -> RepoUrl<'a> {
        RepoUrl { path, number: Some(number), ..self }
    }
    fn then(self, suffix: &'static str) -> RepoUrl<'a> {
        RepoUrl { suffix, ..self }
    }
}

impl fmt::Display for RepoUrl<'_> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let root = if self.api { "/repos/" } else { "/" };
        write!(f, "{}{root}{}/{}{}", self.base, self.owner, self.name, self.path)?;
        if let Some(n) = self.number {
            write!(f, "{n}")?;
        }
        f.write_str(self.suffix)
    }
}

impl Serialize for RepoUrl<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[derive(Serialize)]
pub struct IssueOut<'a> {
    url: RepoUrl<'a>,
    repository_url: RepoUrl<'a>,
    labels_url: RepoUrl<'a>,
    comments_url: RepoUrl<'a>,
    events_url: RepoUrl<'a>,
    html_url: RepoUrl<'a>,
    id: u64,
    node_id: String,
    number: u64,
    title: &'a str,
    user: UserOut<'a>,
    labels: Vec<LabelOut<'a>>,
    state: &'a str,
    locked: bool,
    assignee: Option<UserOut<'a>>,
    assignees: Vec<UserOut<'a>>,
    milestone: Option<MilestoneOut<'a>>,
    comments: u64,
    created_at: &'a str,
    updated_at: &'a str,
    closed_at: &'a Option<String>,
    author_association: &'static str,
    active_lock_reason: &'a Option<String>,
    body: &'a Option<String>,
    closed_by: Option<UserOut<'a>>,
    reactions: ReactionsOut,
    timeline_url: RepoUrl<'a>,
    performed_via_github_app: Option<()>,
    state_reason: &'a Option<String>,
    /// Its organisation's issue type, when one is set.
    #[serde(rename = "type")]
    issue_type: Option<serde_json::Value>,
    sub_issues_summary: SubIssuesSummary,
    /// Issue dependencies are not modelled: none is blocked or blocking.
    issue_dependencies_summary: DependenciesSummary,
    parent_issue_url: Option<String>,
    /// Pinning a comment is not modelled.
    pinned_comment: Option<()>,
    #[serde(skip_serializing_if = "Option::is_none")]
    draft: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pull_request: Option<PullRef<'a>>,
}

#[derive(Serialize)]
pub struct SubIssuesSummary {
    total: usize,
    completed: usize,
    percent_completed: usize,
}

#[derive(Serialize, Default)]
pub struct DependenciesSummary {
    blocked_by: u64,
    blocking: u64,
    total_blocked_by: u64,
    total_blocking: u64,
}

pub fn reactions(url: String, rs: &[Reaction]) -> ReactionsOut {
    let count = |c: &str| rs.iter().filter(|r| r.content == c).count();
    ReactionsOut {
        url,
        total_count: rs.len(),
        plus_one: count("+1"),
        minus_one: count("-1"),
        laugh: count("laugh"),
        confused: count("confused"),
        heart: count("heart"),
        hooray: count("hooray"),
        eyes: count("eyes"),
        rocket: count("rocket"),
    }
}

impl World {
    pub fn user_out<'a>(&'a self, b: &'a str, login: &'a str) -> UserOut<'a> {
        let (id, login, kind) = match self.users.get(&login.to_ascii_lowercase()) {
            Some(u) => (u.id, u.login.as_str(), u.kind.as_str()),
            None => (0, login, "User"),
        };
        UserOut { base: b, login, id, kind }
    }

    pub fn label_out<'a>(&self, b: &str, fname: &str, l: &'a Label) -> LabelOut<'a> {
        LabelOut {
            id: l.id,
            node_id: node_id("Label", l.id),
            url: format!("{b}/repos/{fname}/labels/{}", enc(&l.name)),
            name: &l.name,
            color: &l.color,
            default: l.default,
            description: &l.description,
        }
    }

    pub fn milestone_out<'a>(&'a self, b: &'a str, fname: &str, m: &'a Milestone) -> MilestoneOut<'a> {
        let u = format!("{b}/repos/{fname}/milestones/{}", m.number);
        MilestoneOut {
            html_url: format!("{b}/{fname}/milestone/{}", m.number),
            labels_url: format!("{u}/labels"),
            url: u,
            id: m.id,
            node_id: node_id("Milestone", m.id),
            number: m.number,
            state: &m.state,
            title: &m.title,
            description: &m.description,
            creator: self.user_out(b, &m.creator),
            open_issues: m.open_issues,
            closed_issues: m.closed_issues,
            created_at: &m.created_at,
            updated_at: &m.updated_at,
            closed_at: &m.closed_at,
            due_on: &m.due_on,
        }
    }

    pub fn issue_out<'a>(&'a self, b: &'a str, r: &'a Repo, i: &'a Issue) -> IssueOut<'a> {
        let fname = r.full_name();
        let u = RepoUrl::api(b, r).at("/issues/", i.number);
        let kind = if i.pull.is_some() { "/pull/" } else { "/issues/" };
        let assignees: Vec<UserOut<'a>> = i.assignees.iter().map(|a| self.user_out(b, a)).collect();
        let assignee = i.assignees.first().map(|a| self.user_out(b, a));
        // Sub-issues: how many its children are and how many of them are closed; its parent.
        let kids = self.sub_issues.get(&i.id).map(Vec::as_slice).unwrap_or(&[]);
        let completed = kids
            .iter()
            .filter_map(|k| crate::handlers::mcp_vendor::issue_by_id(self, *k))
            .filter(|(rk, n)| self.repos[rk].issues[n].state == "closed")
            .count();
        let parent_issue_url = if self.sub_issues.is_empty() {
            None
        } else {
            crate::handlers::mcp_vendor::parent_of(self, i.id)
                .and_then(|p| crate::handlers::mcp_vendor::issue_by_id(self, p))
                .map(|(rk, n)| format!("{b}/repos/{}/issues/{n}", self.repos[&rk].full_name()))
        };
        IssueOut {
            issue_type: self.issue_types.get(&i.id).map(|t| crate::handlers::mcp_vendor::issue_type_json(self, &r.owner, t)),
            sub_issues_summary: SubIssuesSummary { total: kids.len(), completed, percent_completed: if kids.is_empty() { 0 } else { completed * 100 / kids.len() } },
            issue_dependencies_summary: DependenciesSummary::default(),
            parent_issue_url,
            pinned_comment: None,
            labels_url: u.then("/labels{/name}"),
            comments_url: u.then("/comments"),
            events_url: u.then("/events"),
            html_url: RepoUrl::web(b, r).at(kind, i.number),
            timeline_url: u.then("/timeline"),
            reactions: reactions(u.then("/reactions").to_string(), &i.reactions),
            url: u,
            id: i.id,
            node_id: node_id("Issue", i.id),
            number: i.number,
            title: &i.title,
            user: self.user_out(b, &i.user),
            labels: i.labels.iter().filter_map(|n| r.label(n)).map(|l| self.label_out(b, &fname, l)).collect(),
            state: &i.state,
            locked: i.locked,
            assignee,
            assignees,
            milestone: i.milestone.and_then(|n| r.milestones.get(&n)).map(|m| self.milestone_out(b, &fname, m)),
            comments: i.comments,
            created_at: &i.created_at,
            updated_at: &i.updated_at,
            closed_at: &i.closed_at,
            author_association: self.author_association(r, &i.user),
            active_lock_reason: &i.active_lock_reason,
            body: &i.body,
            closed_by: i.closed_by.as_deref().map(|l| self.user_out(b, l)),
            performed_via_github_app: None,
            state_reason: &i.state_reason,
            draft: i.pull.as_ref().map(|p| p.draft),
            pull_request: i.pull.as_ref().map(|p| PullRef {
                url: RepoUrl::api(b, r).at("/pulls/", i.number).to_string(),
                html_url: format!("{b}/{fname}/pull/{}", i.number),
                diff_url: format!("{b}/{fname}/pull/{}.diff", i.number),
                patch_url: format!("{b}/{fname}/pull/{}.patch", i.number),
                merged_at: &p.merged_at,
            }),
            repository_url: RepoUrl::api(b, r),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_memoised_user_is_the_same_json_as_a_fresh_one_and_the_same_value_as_render() {
        use pome_twin_sdk::Twin as _;
        let w = World::init(None).unwrap();
        let b = "http://h/s/ses_1/github";
        let fresh = serde_json::to_string(&Fields(&w.user_out(b, "alice"))).unwrap();
        let first = serde_json::to_string(&w.user_out(b, "alice")).unwrap();
        let memoised = serde_json::to_string(&w.user_out(b, "alice")).unwrap();
        assert_eq!(fresh, first);
        assert_eq!(fresh, memoised);
        // Another base URL is another user object.
        assert!(serde_json::to_string(&w.user_out("http://other", "alice")).unwrap().contains("http://other/users/alice"));
        // The `Value` form, used where answers are extended, parses the memo's text.
        let v = w.user_json(b, "alice");
        assert_eq!(v["url"], "http://h/s/ses_1/github/users/alice");
        assert_eq!(v["starred_url"], "http://h/s/ses_1/github/users/alice/starred{/owner}{/repo}");
        assert_eq!(serde_json::to_string(&v).unwrap(), fresh);
    }
}
