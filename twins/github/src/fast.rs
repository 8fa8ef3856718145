//! Typed renderings of the shapes served most (issues with their users, labels and
//! milestone), serialised straight to bytes. Building a `serde_json::Value` tree for these
//! costs an allocation and a hash insert per field; issue lists and issue writes are the
//! twin's hottest paths, so they skip the tree. `render.rs` builds the same shapes as
//! `Value`s for the places that extend them (search scores, pull requests).

use serde::Serialize;

use crate::World;
use crate::model::*;
use crate::render::{enc, node_id};

#[derive(Serialize)]
pub struct UserOut<'a> {
    login: &'a str,
    id: u64,
    node_id: String,
    avatar_url: String,
    gravatar_id: &'static str,
    url: String,
    html_url: String,
    followers_url: String,
    following_url: String,
    gists_url: String,
    starred_url: String,
    subscriptions_url: String,
    organizations_url: String,
    repos_url: String,
    events_url: String,
    received_events_url: String,
    #[serde(rename = "type")]
    kind: &'a str,
    user_view_type: &'static str,
    site_admin: bool,
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

#[derive(Serialize)]
pub struct IssueOut<'a> {
    url: String,
    repository_url: String,
    labels_url: String,
    comments_url: String,
    events_url: String,
    html_url: String,
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
    timeline_url: String,
    performed_via_github_app: Option<()>,
    state_reason: &'a Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    draft: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pull_request: Option<PullRef<'a>>,
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
    pub fn user_out<'a>(&'a self, b: &str, login: &'a str) -> UserOut<'a> {
        let (id, login, kind) = match self.users.get(&login.to_ascii_lowercase()) {
            Some(u) => (u.id, u.login.as_str(), u.kind.as_str()),
            None => (0, login, "User"),
        };
        let u = format!("{b}/users/{login}");
        UserOut {
            login,
            id,
            node_id: node_id("User", id),
            avatar_url: format!("{b}/_avatars/{id}"),
            gravatar_id: "",
            html_url: format!("{b}/{login}"),
            followers_url: format!("{u}/followers"),
            following_url: format!("{u}/following{{/other_user}}"),
            gists_url: format!("{u}/gists{{/gist_id}}"),
            starred_url: format!("{u}/starred{{/owner}}{{/repo}}"),
            subscriptions_url: format!("{u}/subscriptions"),
            organizations_url: format!("{u}/orgs"),
            repos_url: format!("{u}/repos"),
            events_url: format!("{u}/events{{/privacy}}"),
            received_events_url: format!("{u}/received_events"),
            url: u,
            kind,
            user_view_type: "public",
            site_admin: false,
        }
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

    pub fn milestone_out<'a>(&'a self, b: &str, fname: &str, m: &'a Milestone) -> MilestoneOut<'a> {
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

    pub fn issue_out<'a>(&'a self, b: &str, r: &'a Repo, i: &'a Issue) -> IssueOut<'a> {
        let fname = r.full_name();
        let ru = format!("{b}/repos/{fname}");
        let u = format!("{ru}/issues/{}", i.number);
        let kind = if i.pull.is_some() { "pull" } else { "issues" };
        let assignees: Vec<UserOut<'a>> = i.assignees.iter().map(|a| self.user_out(b, a)).collect();
        let assignee = i.assignees.first().map(|a| self.user_out(b, a));
        IssueOut {
            labels_url: format!("{u}/labels{{/name}}"),
            comments_url: format!("{u}/comments"),
            events_url: format!("{u}/events"),
            html_url: format!("{b}/{fname}/{kind}/{}", i.number),
            timeline_url: format!("{u}/timeline"),
            reactions: reactions(format!("{u}/reactions"), &i.reactions),
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
                url: format!("{ru}/pulls/{}", i.number),
                html_url: format!("{b}/{fname}/pull/{}", i.number),
                diff_url: format!("{b}/{fname}/pull/{}.diff", i.number),
                patch_url: format!("{b}/{fname}/pull/{}.patch", i.number),
                merged_at: &p.merged_at,
            }),
            repository_url: ru,
        }
    }
}
