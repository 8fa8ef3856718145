//! Issues, issue comments, labels, assignees, milestones, issue events, timeline and
//! reactions. Pull requests are issues here too (GitHub lists them in `/issues`).

use pome_twin_sdk::{Call, Response, Value, json, time};
use serde::Deserialize;

use crate::World;
use crate::api::{ApiError, ApiResult, input, json, no_content, num, page_of, page_typed, page_vec, query_enum};
use crate::model::*;

pub fn issue_ref(r: &Repo, n: u64) -> String {
    format!("{}#{n}", r.full_name())
}

/// A nullable field in a PATCH body: absent, `null`, or a value.
#[derive(Debug, Default, Clone)]
pub enum Patch<T> {
    #[default]
    Absent,
    Null,
    Set(T),
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Patch<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match Option::<T>::deserialize(d)? {
            None => Patch::Null,
            Some(v) => Patch::Set(v),
        })
    }
}

/// A milestone given as a number or as a numeric string.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum NumOrStr {
    Num(u64),
    Str(String),
}

impl NumOrStr {
    fn number(&self) -> Option<u64> {
        match self {
            NumOrStr::Num(n) => Some(*n),
            NumOrStr::Str(s) => s.parse().ok(),
        }
    }
}

pub fn push_event(w: &mut World, key: &str, issue: u64, event: &str, detail: Option<String>, commit: Option<String>) {
    let id = w.next_id();
    let actor = w.viewer.clone();
    let r = w.repos.get_mut(key).expect("repository exists");
    r.events.push(IssueEvent {
        id,
        issue,
        actor,
        event: event.to_string(),
        detail,
        commit_id: commit,
        created_at: time::now_iso(),
    });
}

// ---- issues ----------------------------------------------------------------------------

struct IssueFilter {
    state: String,
    labels: Vec<String>,
    assignee: Option<String>,
    creator: Option<String>,
    mentioned: Option<String>,
    milestone: Option<String>,
    since: Option<String>,
    pulls: Option<bool>,
}

impl IssueFilter {
    fn from(call: &Call) -> Result<IssueFilter, ApiError> {
        Ok(IssueFilter {
            state: query_enum(call, "state", &["open", "closed", "all"], "open")?,
            labels: call
                .req
                .query("labels")
                .map(|l| l.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect())
                .unwrap_or_default(),
            assignee: call.req.query("assignee"),
            creator: call.req.query("creator"),
            mentioned: call.req.query("mentioned"),
            milestone: call.req.query("milestone"),
            since: call.req.query("since"),
            pulls: None,
        })
    }

    fn keep(&self, r: &Repo, i: &Issue) -> bool {
        if self.state != "all" && i.state != self.state {
            return false;
        }
        if let Some(p) = self.pulls {
            if i.pull.is_some() != p {
                return false;
            }
        }
        if !self.labels.iter().all(|l| i.labels.iter().any(|x| x.eq_ignore_ascii_case(l))) {
            return false;
        }
        match self.assignee.as_deref() {
            None => {}
            Some("none") => {
                if !i.assignees.is_empty() {
                    return false;
                }
            }
            Some("*") => {
                if i.assignees.is_empty() {
                    return false;
                }
            }
            Some(a) => {
                if !i.assignees.iter().any(|x| x.eq_ignore_ascii_case(a)) {
                    return false;
                }
            }
        }
        if let Some(c) = &self.creator {
            if !i.user.eq_ignore_ascii_case(c) {
                return false;
            }
        }
        if let Some(m) = &self.mentioned {
            let needle = format!("@{}", m.to_ascii_lowercase());
            let in_body = i.body.as_deref().unwrap_or("").to_ascii_lowercase().contains(&needle);
            if !in_body {
                return false;
            }
        }
        match self.milestone.as_deref() {
            None => {}
            Some("none") => {
                if i.milestone.is_some() {
                    return false;
                }
            }
            Some("*") => {
                if i.milestone.is_none() {
                    return false;
                }
            }
            Some(m) => {
                let want = m.parse::<u64>().ok().or_else(|| {
                    r.milestones.values().find(|x| x.title == m).map(|x| x.number)
                });
                if i.milestone != want || want.is_none() {
                    return false;
                }
            }
        }
        if let Some(s) = &self.since {
            if i.updated_at.as_str() < s.as_str() {
                return false;
            }
        }
        true
    }
}

/// `GET /repos/{owner}/{repo}/issues` (`issues/list-for-repo`). With the default sort
/// (newest first) nothing beyond the page is rendered or collected.
pub fn list_for_repo(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let f = IssueFilter::from(call)?;
    let sort = query_enum(call, "sort", &["created", "updated", "comments"], "created")?;
    let dir = query_enum(call, "direction", &["asc", "desc"], "desc")?;
    if let Some(m) = f.milestone.as_deref() {
        if m != "none" && m != "*" && m.parse::<u64>().is_ok_and(|n| !r.milestones.contains_key(&n)) {
            return Err(ApiError::not_found());
        }
    }
    let b = call.req.base_url.clone();
    if sort == "created" {
        let total = r.issues.values().filter(|i| f.keep(r, i)).count();
        let it: Box<dyn Iterator<Item = &Issue>> = if dir == "desc" {
            Box::new(r.issues.values().rev().filter(|i| f.keep(r, i)))
        } else {
            Box::new(r.issues.values().filter(|i| f.keep(r, i)))
        };
        return page_typed(call, total, it, |i| w.issue_out(&b, r, i));
    }
    let mut list: Vec<&Issue> = r.issues.values().filter(|i| f.keep(r, i)).collect();
    match sort.as_str() {
        "updated" => list.sort_by(|a, b| a.updated_at.cmp(&b.updated_at).then(a.number.cmp(&b.number))),
        _ => list.sort_by(|a, b| a.comments.cmp(&b.comments).then(a.number.cmp(&b.number))),
    }
    if dir == "desc" {
        list.reverse();
    }
    let n = list.len();
    page_typed(call, n, list.into_iter(), |i| w.issue_out(&b, r, i))
}

/// `GET /issues` and `GET /user/issues`: issues assigned to the viewer across repositories.
pub fn list_for_user(w: &mut World, call: &mut Call) -> ApiResult {
    let mut f = IssueFilter::from(call)?;
    let filter = query_enum(call, "filter", &["assigned", "created", "mentioned", "subscribed", "repos", "all"], "assigned")?;
    let viewer = w.viewer.clone();
    match filter.as_str() {
        "assigned" => f.assignee = Some(viewer.clone()),
        "created" => f.creator = Some(viewer.clone()),
        "mentioned" => f.mentioned = Some(viewer.clone()),
        _ => {}
    }
    let b = call.req.base_url.clone();
    let mut list: Vec<(&Repo, &Issue)> = w
        .repos
        .values()
        .filter(|r| w.viewer_role(r) >= Role::Read)
        .flat_map(|r| r.issues.values().map(move |i| (r, i)))
        .filter(|(r, i)| f.keep(r, i))
        .collect();
    list.sort_by(|a, b| b.1.created_at.cmp(&a.1.created_at).then(b.1.id.cmp(&a.1.id)));
    let n = list.len();
    page_of(call, n, list.into_iter(), |(r, i)| {
        let mut v = w.issue_json(&b, r, i);
        v.as_object_mut().unwrap().insert("repository".into(), w.repo_json(&b, r, false));
        v
    })
}

/// `GET /repos/{owner}/{repo}/issues/{issue_number}` (`issues/get`).
pub fn get(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let i = r.issues.get(&num(call, "issue_number")?).ok_or_else(ApiError::not_found)?;
    Ok(Response::json(200, &w.issue_out(&call.req.base_url, r, i)))
}

#[derive(Debug, Deserialize)]
pub struct CreateIssue {
    pub title: Option<Value>,
    pub body: Option<String>,
    pub assignee: Option<String>,
    #[serde(default)]
    pub assignees: Option<Vec<String>>,
    pub milestone: Option<NumOrStr>,
    #[serde(default)]
    pub labels: Option<Vec<LabelArg>>,
    /// The issue type's name (organizations' issue types).
    #[serde(rename = "type")]
    pub issue_type: Option<String>,
}

/// The canonical name of issue type `name` for repository `r` (its owner must be an
/// organization: issue types are theirs).
pub fn issue_type_name(w: &World, r: &Repo, name: &str) -> Result<String, ApiError> {
    let org = w.users.get(&r.owner.to_ascii_lowercase()).is_some_and(|u| u.kind == "Organization");
    DEFAULT_ISSUE_TYPES
        .iter()
        .find(|t| org && t.0.eq_ignore_ascii_case(name))
        .map(|t| t.0.to_string())
        .ok_or_else(|| ApiError::custom("Issue", "type", &format!("Issue type {name:?} does not exist for {}", r.owner)))
}

/// Set or clear an issue's type, recording the change.
pub fn set_issue_type(w: &mut World, call: &mut Call, key: &str, number: u64, t: Option<String>) {
    let r = &w.repos[key];
    let id = r.issues[&number].id;
    let before = w.issue_types.get(&id).cloned();
    if before == t {
        return;
    }
    call.record("issue_type", issue_ref(r, number), before.as_ref(), t.as_ref());
    match t {
        Some(x) => w.issue_types.insert(id, x),
        None => w.issue_types.remove(&id),
    };
}

/// A label given by name or as `{name}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum LabelArg {
    Name(String),
    Obj { name: String },
}

impl LabelArg {
    pub fn name(&self) -> &str {
        match self {
            LabelArg::Name(n) | LabelArg::Obj { name: n } => n,
        }
    }
}

/// Users that can be assigned in `r`: the owner (if a user), collaborators, and the viewer
/// when it has at least triage.
pub fn assignable(w: &World, r: &Repo, login: &str) -> bool {
    let Some(u) = w.users.get(&login.to_ascii_lowercase()) else { return false };
    if u.kind == "Organization" {
        return false;
    }
    r.owner.eq_ignore_ascii_case(login)
        || r.collaborators.contains_key(&login.to_ascii_lowercase())
        || (login.eq_ignore_ascii_case(&w.viewer) && w.viewer_role(r) >= Role::Triage)
}

/// Make sure every label exists (GitHub creates missing ones on the fly); returns the
/// canonical names.
pub fn ensure_labels(w: &mut World, key: &str, names: &[String], call: &mut Call) -> Vec<String> {
    let mut out = Vec::new();
    for n in names {
        let existing = w.repos[key].label(n).map(|l| l.name.clone());
        let name = match existing {
            Some(name) => name,
            None => {
                let id = w.next_id();
                let label = Label { id, name: n.clone(), color: "ededed".into(), description: None, default: false };
                let r = w.repos.get_mut(key).unwrap();
                call.created("label", format!("{}:{}", r.full_name(), n), &label);
                r.labels.push(label);
                n.clone()
            }
        };
        if !out.iter().any(|x: &String| x.eq_ignore_ascii_case(&name)) {
            out.push(name);
        }
    }
    out
}

fn title_of(v: &Option<Value>) -> Result<String, ApiError> {
    match v {
        None | Some(Value::Null) => Err(ApiError::invalid("Issue", "title", "missing_field")),
        Some(Value::String(s)) if s.trim().is_empty() => Err(ApiError::invalid("Issue", "title", "missing_field")),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Number(n)) => Ok(n.to_string()),
        Some(_) => Err(ApiError::new(422, "Invalid request.\n\nFor 'properties/title', it is not a string or integer.")),
    }
}

/// `POST /repos/{owner}/{repo}/issues` (`issues/create`).
pub fn create(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: CreateIssue = input(call)?;
    let key = w.repo_key_for(call)?;
    let role = w.viewer_role(&w.repos[&key]);
    if !w.repos[&key].has_issues {
        return Err(ApiError::new(410, "Issues are disabled for this repo"));
    }
    if w.repos[&key].archived {
        return Err(ApiError::forbidden("Repository was archived so is read-only."));
    }
    let title = title_of(&inp.title)?;
    let triage = role >= Role::Triage;
    let assignees = if triage {
        let list: Vec<String> = inp.assignee.iter().chain(inp.assignees.iter().flatten()).cloned().collect();
        check_assignees(w, &w.repos[&key], &list, "Issue")?
    } else {
        Vec::new()
    };
    let milestone = match (&inp.milestone, triage) {
        (Some(m), true) => {
            let n = m.number().filter(|n| w.repos[&key].milestones.contains_key(n));
            if n.is_none() {
                return Err(ApiError::invalid("Issue", "milestone", "invalid"));
            }
            n
        }
        _ => None,
    };
    let issue_type = match (&inp.issue_type, triage) {
        (Some(t), true) => Some(issue_type_name(w, &w.repos[&key], t)?),
        _ => None,
    };
    let labels = if triage {
        let names: Vec<String> = inp.labels.iter().flatten().map(|l| l.name().to_string()).collect();
        ensure_labels(w, &key, &names, call)
    } else {
        Vec::new()
    };
    let id = w.next_id();
    let now = time::now_iso();
    let viewer = w.viewer.clone();
    let r = w.repos.get_mut(&key).unwrap();
    let number = r.next_number;
    r.next_number += 1;
    let issue = Issue {
        id,
        number,
        title,
        body: inp.body,
        user: viewer,
        state: "open".into(),
        state_reason: None,
        labels,
        assignees,
        milestone,
        locked: false,
        active_lock_reason: None,
        comments: 0,
        created_at: now.clone(),
        updated_at: now.clone(),
        closed_at: None,
        closed_by: None,
        reactions: Vec::new(),
        pull: None,
    };
    r.updated_at = now;
    call.created("issue", issue_ref(r, number), &issue);
    r.track(None, Some((true, milestone)));
    r.issues.insert(number, issue);
    if issue_type.is_some() {
        set_issue_type(w, call, &key, number, issue_type);
    }
    let r = &w.repos[&key];
    let b = &call.req.base_url;
    let v = w.issue_out(b, r, &r.issues[&number]);
    Ok(Response::json(201, &v).with_header("location", format!("{b}/repos/{}/issues/{number}", r.full_name())))
}


#[derive(Debug, Deserialize, Default)]
pub struct UpdateIssue {
    pub title: Option<Value>,
    #[serde(default)]
    pub body: Patch<String>,
    pub state: Option<String>,
    #[serde(default)]
    pub state_reason: Patch<String>,
    #[serde(default)]
    pub assignee: Patch<String>,
    pub assignees: Option<Vec<String>>,
    #[serde(default)]
    pub milestone: Patch<NumOrStr>,
    pub labels: Option<Vec<LabelArg>>,
    /// The issue type's name; `null` clears it.
    #[serde(rename = "type", default)]
    pub issue_type: Patch<String>,
}

/// Close or reopen an issue/pull request, recording the event. Shared with pulls.
pub fn set_state(w: &mut World, key: &str, number: u64, state: &str, reason: Option<String>) {
    let now = time::now_iso();
    let viewer = w.viewer.clone();
    let r = w.repos.get_mut(key).unwrap();
    let i = r.issues.get_mut(&number).unwrap();
    if i.state == state {
        if let (Some(reason), "closed") = (reason, state) {
            i.state_reason = Some(reason);
        }
        return;
    }
    let (was_open, milestone) = (i.state == "open", i.milestone);
    i.state = state.to_string();
    i.updated_at = now.clone();
    let reason_detail;
    if state == "closed" {
        i.closed_at = Some(now);
        i.closed_by = Some(viewer);
        let reason = reason.unwrap_or_else(|| "completed".into());
        reason_detail = Some(reason.clone());
        if i.pull.is_none() {
            i.state_reason = Some(reason);
        }
    } else {
        i.closed_at = None;
        i.closed_by = None;
        if i.pull.is_none() {
            i.state_reason = Some("reopened".into());
        }
        reason_detail = None;
    }
    r.track(Some((was_open, milestone)), Some((state == "open", milestone)));
    let ev = if state == "closed" { "closed" } else { "reopened" };
    push_event(w, key, number, ev, reason_detail, None);
}

/// Replace an issue's labels, recording labeled/unlabeled events.
pub fn set_labels(w: &mut World, key: &str, number: u64, labels: Vec<String>) {
    let old = w.repos[key].issues[&number].labels.clone();
    for l in &labels {
        if !old.iter().any(|o| o.eq_ignore_ascii_case(l)) {
            push_event(w, key, number, "labeled", Some(l.clone()), None);
        }
    }
    for o in &old {
        if !labels.iter().any(|l| l.eq_ignore_ascii_case(o)) {
            push_event(w, key, number, "unlabeled", Some(o.clone()), None);
        }
    }
    let i = w.repos.get_mut(key).unwrap().issues.get_mut(&number).unwrap();
    i.labels = labels;
}

/// Replace an issue's assignees, recording events.
pub fn set_assignees(w: &mut World, key: &str, number: u64, assignees: Vec<String>) {
    let old = w.repos[key].issues[&number].assignees.clone();
    for a in &assignees {
        if !old.iter().any(|o| o.eq_ignore_ascii_case(a)) {
            push_event(w, key, number, "assigned", Some(a.clone()), None);
        }
    }
    for o in &old {
        if !assignees.iter().any(|a| a.eq_ignore_ascii_case(o)) {
            push_event(w, key, number, "unassigned", Some(o.clone()), None);
        }
    }
    w.repos.get_mut(key).unwrap().issues.get_mut(&number).unwrap().assignees = assignees;
}

/// Validate and canonicalise a list of assignees (422 on an unassignable login).
pub fn check_assignees(w: &World, r: &Repo, list: &[String], resource: &str) -> Result<Vec<String>, ApiError> {
    let mut out: Vec<String> = Vec::new();
    for a in list {
        if !assignable(w, r, a) {
            return Err(ApiError::new(422, "Validation Failed")
                .with_error(json!({"resource": resource, "field": "assignees", "code": "invalid", "value": a})));
        }
        let login = w.users[&a.to_ascii_lowercase()].login.clone();
        if !out.iter().any(|x| x.eq_ignore_ascii_case(&login)) {
            out.push(login);
        }
    }
    Ok(out)
}

/// Apply an issue PATCH (shared by `issues/update` and `pulls/update`).
pub fn apply_update(w: &mut World, call: &mut Call, key: &str, number: u64, inp: UpdateIssue) -> Result<(), ApiError> {
    let r = &w.repos[key];
    let i = r.issues.get(&number).ok_or_else(ApiError::not_found)?;
    let role = w.viewer_role(r);
    let author = i.user.eq_ignore_ascii_case(&w.viewer);
    if role < Role::Triage && !author {
        return Err(ApiError::forbidden("You do not have permission to update this issue."));
    }
    if r.archived {
        return Err(ApiError::forbidden("Repository was archived so is read-only."));
    }
    let triage = role >= Role::Triage;
    let before = i.clone();
    let resource = if i.pull.is_some() { "PullRequest" } else { "Issue" };
    let title = match &inp.title {
        None => None,
        Some(_) => Some(title_of(&inp.title).map_err(|_| ApiError::invalid(resource, "title", "missing_field"))?),
    };
    if let Some(s) = &inp.state {
        if s != "open" && s != "closed" {
            return Err(ApiError::invalid(resource, "state", "invalid"));
        }
    }
    let reason = match &inp.state_reason {
        Patch::Set(s) => {
            if !["completed", "not_planned", "reopened", "duplicate"].contains(&s.as_str()) {
                return Err(ApiError::invalid(resource, "state_reason", "invalid"));
            }
            Some(s.clone())
        }
        _ => None,
    };
    let assignees = if triage {
        match (&inp.assignees, &inp.assignee) {
            (Some(list), _) => Some(check_assignees(w, r, list, resource)?),
            (None, Patch::Set(a)) => Some(check_assignees(w, r, std::slice::from_ref(a), resource)?),
            (None, Patch::Null) => Some(Vec::new()),
            (None, Patch::Absent) => None,
        }
    } else {
        None
    };
    let milestone = if triage {
        match &inp.milestone {
            Patch::Absent => None,
            Patch::Null => Some(None),
            Patch::Set(m) => {
                let n = m.number().filter(|n| r.milestones.contains_key(n));
                if n.is_none() {
                    return Err(ApiError::invalid(resource, "milestone", "invalid"));
                }
                Some(n)
            }
        }
    } else {
        None
    };
    let issue_type = match (&inp.issue_type, triage) {
        (Patch::Set(t), true) => Some(Some(issue_type_name(w, r, t)?)),
        (Patch::Null, true) => Some(None),
        _ => None,
    };
    let labels = match (&inp.labels, triage) {
        (Some(ls), true) => {
            let names: Vec<String> = ls.iter().map(|l| l.name().to_string()).collect();
            Some(ensure_labels(w, key, &names, call))
        }
        _ => None,
    };
    if let Some(t) = title {
        if t != before.title {
            push_event(w, key, number, "renamed", Some(format!("{}\u{0}{t}", before.title)), None);
        }
        w.repos.get_mut(key).unwrap().issues.get_mut(&number).unwrap().title = t;
    }
    {
        let i = w.repos.get_mut(key).unwrap().issues.get_mut(&number).unwrap();
        match inp.body {
            Patch::Absent => {}
            Patch::Null => i.body = None,
            Patch::Set(b) => i.body = Some(b),
        }
    }
    if let Some(ls) = labels {
        set_labels(w, key, number, ls);
    }
    if let Some(t) = issue_type {
        set_issue_type(w, call, key, number, t);
    }
    if let Some(a) = assignees {
        set_assignees(w, key, number, a);
    }
    if let Some(m) = milestone {
        let old = w.repos[key].issues[&number].milestone;
        if old != m {
            let title_of_m = |n: Option<u64>| n.and_then(|n| w.repos[key].milestones.get(&n)).map(|m| m.title.clone());
            let (old_t, new_t) = (title_of_m(old), title_of_m(m));
            if let Some(t) = old_t {
                push_event(w, key, number, "demilestoned", Some(t), None);
            }
            if let Some(t) = new_t {
                push_event(w, key, number, "milestoned", Some(t), None);
            }
        }
        let r = w.repos.get_mut(key).unwrap();
        let i = r.issues.get_mut(&number).unwrap();
        let open = i.state == "open";
        i.milestone = m;
        r.track(Some((open, old)), Some((open, m)));
    }
    match inp.state.as_deref() {
        Some("closed") => {
            if before.pull.as_ref().is_some_and(|p| p.merged) {
                // A merged pull request is already closed for good.
            } else {
                let reason = reason.filter(|r| r != "reopened");
                set_state(w, key, number, "closed", reason);
            }
        }
        Some("open") => {
            if before.pull.as_ref().is_some_and(|p| p.merged) {
                return Err(ApiError::custom("PullRequest", "state", "state cannot be changed. The pull request has already been merged."));
            }
            set_state(w, key, number, "open", None);
        }
        _ => {
            if let (Some(reason), "closed") = (reason, before.state.as_str()) {
                if before.pull.is_none() && reason != "reopened" {
                    w.repos.get_mut(key).unwrap().issues.get_mut(&number).unwrap().state_reason = Some(reason);
                }
            }
        }
    }
    let now = time::now_iso();
    let r = w.repos.get_mut(key).unwrap();
    let i = r.issues.get_mut(&number).unwrap();
    i.updated_at = now;
    let after = i.clone();
    let entity = if after.pull.is_some() { "pull_request" } else { "issue" };
    call.updated(entity, issue_ref(r, number), &before, &after);
    Ok(())
}

/// `PATCH /repos/{owner}/{repo}/issues/{issue_number}` (`issues/update`).
pub fn update(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: UpdateIssue = input(call)?;
    let key = w.repo_key_for(call)?;
    let number = num(call, "issue_number")?;
    apply_update(w, call, &key, number, inp)?;
    let r = &w.repos[&key];
    Ok(Response::json(200, &w.issue_out(&call.req.base_url, r, &r.issues[&number])))
}

#[derive(Debug, Deserialize, Default)]
pub struct LockIssue {
    pub lock_reason: Option<String>,
}

/// `PUT /repos/{owner}/{repo}/issues/{issue_number}/lock` (`issues/lock`).
pub fn lock(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: LockIssue = input(call)?;
    if let Some(r) = &inp.lock_reason {
        if !["off-topic", "too heated", "resolved", "spam"].contains(&r.as_str()) {
            return Err(ApiError::invalid("Issue", "lock_reason", "invalid"));
        }
    }
    let number = num(call, "issue_number")?;
    let r = w.repo_mut(call, Role::Triage)?;
    let id = issue_ref(r, number);
    let i = r.issues.get_mut(&number).ok_or_else(ApiError::not_found)?;
    call.update("issue", id, i, |i| {
        i.locked = true;
        i.active_lock_reason = inp.lock_reason;
    });
    let key = w.repo_key_for(call)?;
    push_event(w, &key, number, "locked", None, None);
    no_content()
}

/// `DELETE /repos/{owner}/{repo}/issues/{issue_number}/lock` (`issues/unlock`).
pub fn unlock(w: &mut World, call: &mut Call) -> ApiResult {
    let number = num(call, "issue_number")?;
    let r = w.repo_mut(call, Role::Triage)?;
    let id = issue_ref(r, number);
    let i = r.issues.get_mut(&number).ok_or_else(ApiError::not_found)?;
    if !i.locked {
        return Err(ApiError::not_found());
    }
    call.update("issue", id, i, |i| {
        i.locked = false;
        i.active_lock_reason = None;
    });
    let key = w.repo_key_for(call)?;
    push_event(w, &key, number, "unlocked", None, None);
    no_content()
}

// ---- comments --------------------------------------------------------------------------

/// `GET /repos/{owner}/{repo}/issues/{issue_number}/comments` (`issues/list-comments`).
pub fn list_comments(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let number = num(call, "issue_number")?;
    if !r.issues.contains_key(&number) {
        return Err(ApiError::not_found());
    }
    let since = call.req.query("since");
    let b = call.req.base_url.clone();
    let keep = |c: &&IssueComment| c.issue == number && since.as_deref().is_none_or(|s| c.updated_at.as_str() >= s);
    let total = r.comments.values().filter(keep).count();
    page_of(call, total, r.comments.values().filter(keep), |c| w.comment_json(&b, r, c))
}

/// `GET /repos/{owner}/{repo}/issues/comments` (`issues/list-comments-for-repo`).
pub fn list_comments_for_repo(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let since = call.req.query("since");
    let sort = query_enum(call, "sort", &["created", "updated"], "created")?;
    let dir = query_enum(call, "direction", &["asc", "desc"], "asc")?;
    let mut list: Vec<&IssueComment> =
        r.comments.values().filter(|c| since.as_deref().is_none_or(|s| c.updated_at.as_str() >= s)).collect();
    if sort == "updated" {
        list.sort_by(|a, b| a.updated_at.cmp(&b.updated_at).then(a.id.cmp(&b.id)));
    }
    if dir == "desc" {
        list.reverse();
    }
    let b = call.req.base_url.clone();
    let n = list.len();
    page_of(call, n, list.into_iter(), |c| w.comment_json(&b, r, c))
}

/// `GET /repos/{owner}/{repo}/issues/comments/{comment_id}` (`issues/get-comment`).
pub fn get_comment(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let c = r.comments.get(&num(call, "comment_id")?).ok_or_else(ApiError::not_found)?;
    json(200, &w.comment_json(&call.req.base_url, r, c))
}

#[derive(Debug, Deserialize)]
pub struct CommentBody {
    pub body: Option<Value>,
}

fn body_of(b: &Option<Value>, resource: &str) -> Result<String, ApiError> {
    match b {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
        Some(Value::String(_)) | None | Some(Value::Null) => Err(ApiError::invalid(resource, "body", "missing_field")),
        Some(_) => Err(ApiError::new(422, "Invalid request.\n\nFor 'properties/body', it is not a string.")),
    }
}

/// Add a comment to an issue or pull request (shared with pulls). Returns the comment id.
pub fn add_comment(w: &mut World, call: &mut Call, key: &str, number: u64, body: String) -> Result<u64, ApiError> {
    let role = w.viewer_role(&w.repos[key]);
    let r = &w.repos[key];
    let i = r.issues.get(&number).ok_or_else(ApiError::not_found)?;
    if r.archived {
        return Err(ApiError::forbidden("Repository was archived so is read-only."));
    }
    if i.locked && role < Role::Write {
        return Err(ApiError::forbidden("Unable to create comment because issue is locked."));
    }
    let id = w.next_id();
    let now = time::now_iso();
    let viewer = w.viewer.clone();
    let r = w.repos.get_mut(key).unwrap();
    let c = IssueComment {
        id,
        issue: number,
        user: viewer,
        body,
        created_at: now.clone(),
        updated_at: now.clone(),
        reactions: Vec::new(),
    };
    call.created("issue_comment", id, &c);
    r.comments.insert(id, c);
    let i = r.issues.get_mut(&number).unwrap();
    i.comments += 1;
    i.updated_at = now;
    Ok(id)
}

/// `POST /repos/{owner}/{repo}/issues/{issue_number}/comments` (`issues/create-comment`).
pub fn create_comment(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: CommentBody = input(call)?;
    let body = body_of(&inp.body, "IssueComment")?;
    let key = w.repo_key_for(call)?;
    let number = num(call, "issue_number")?;
    let id = add_comment(w, call, &key, number, body)?;
    let r = &w.repos[&key];
    let b = &call.req.base_url;
    let v = w.comment_json(b, r, &r.comments[&id]);
    Ok(Response::json(201, &v).with_header("location", format!("{b}/repos/{}/issues/comments/{id}", r.full_name())))
}

/// `PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}` (`issues/update-comment`).
pub fn update_comment(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: CommentBody = input(call)?;
    let body = body_of(&inp.body, "IssueComment")?;
    let key = w.repo_key_for(call)?;
    let id = num(call, "comment_id")?;
    let role = w.viewer_role(&w.repos[&key]);
    let viewer = w.viewer.clone();
    let r = w.repos.get_mut(&key).unwrap();
    let c = r.comments.get_mut(&id).ok_or_else(ApiError::not_found)?;
    if !c.user.eq_ignore_ascii_case(&viewer) && role < Role::Triage {
        return Err(ApiError::forbidden("You do not have permission to update this comment."));
    }
    call.update("issue_comment", id, c, |c| {
        c.body = body;
        c.updated_at = time::now_iso();
    });
    let r = &w.repos[&key];
    json(200, &w.comment_json(&call.req.base_url, r, &r.comments[&id]))
}

/// `DELETE /repos/{owner}/{repo}/issues/comments/{comment_id}` (`issues/delete-comment`).
pub fn delete_comment(w: &mut World, call: &mut Call) -> ApiResult {
    let key = w.repo_key_for(call)?;
    let id = num(call, "comment_id")?;
    let role = w.viewer_role(&w.repos[&key]);
    let viewer = w.viewer.clone();
    let r = w.repos.get_mut(&key).unwrap();
    let c = r.comments.get(&id).ok_or_else(ApiError::not_found)?;
    if !c.user.eq_ignore_ascii_case(&viewer) && role < Role::Triage {
        return Err(ApiError::forbidden("You do not have permission to delete this comment."));
    }
    let c = r.comments.remove(&id).unwrap();
    if let Some(i) = r.issues.get_mut(&c.issue) {
        i.comments = i.comments.saturating_sub(1);
    }
    call.deleted("issue_comment", id, &c);
    no_content()
}

// ---- labels ----------------------------------------------------------------------------

/// `GET /repos/{owner}/{repo}/labels` (`issues/list-labels-for-repo`).
pub fn list_labels_for_repo(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let b = call.req.base_url.clone();
    page_of(call, r.labels.len(), r.labels.iter(), |l| w.label_json(&b, r, l))
}

/// `GET /repos/{owner}/{repo}/labels/{name}` (`issues/get-label`).
pub fn get_label(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let l = r.label(call.param("name")).ok_or_else(ApiError::not_found)?;
    json(200, &w.label_json(&call.req.base_url, r, l))
}

#[derive(Debug, Deserialize)]
pub struct LabelInput {
    pub name: Option<String>,
    pub new_name: Option<String>,
    pub color: Option<String>,
    #[serde(default)]
    pub description: Patch<String>,
}

fn check_color(c: &str) -> Result<String, ApiError> {
    let c = c.trim_start_matches('#').to_ascii_lowercase();
    if c.len() == 6 && c.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(c)
    } else {
        Err(ApiError::invalid("Label", "color", "invalid"))
    }
}

/// `POST /repos/{owner}/{repo}/labels` (`issues/create-label`).
pub fn create_label(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: LabelInput = input(call)?;
    let name = inp.name.filter(|n| !n.trim().is_empty()).ok_or_else(|| ApiError::invalid("Label", "name", "missing_field"))?;
    let color = check_color(inp.color.as_deref().unwrap_or("ededed"))?;
    let id = w.next_id();
    let r = w.repo_mut(call, Role::Write)?;
    if r.label(&name).is_some() {
        return Err(ApiError::invalid("Label", "name", "already_exists"));
    }
    let description = match inp.description {
        Patch::Set(d) => Some(d),
        _ => None,
    };
    let l = Label { id, name: name.clone(), color, description, default: false };
    call.created("label", format!("{}:{}", r.full_name(), name), &l);
    r.labels.push(l);
    let r = w.repo(call)?;
    let b = &call.req.base_url;
    let v = w.label_json(b, r, r.label(&name).unwrap());
    Ok(Response::json(201, &v).with_header("location", v["url"].as_str().unwrap_or_default().to_string()))
}

/// `PATCH /repos/{owner}/{repo}/labels/{name}` (`issues/update-label`).
pub fn update_label(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: LabelInput = input(call)?;
    let old = call.param("name").to_string();
    let color = inp.color.as_deref().map(check_color).transpose()?;
    let r = w.repo_mut(call, Role::Write)?;
    let idx = r.labels.iter().position(|l| l.name.eq_ignore_ascii_case(&old)).ok_or_else(ApiError::not_found)?;
    let new_name = inp.new_name.or(inp.name).filter(|n| !n.trim().is_empty());
    if let Some(n) = &new_name {
        if !n.eq_ignore_ascii_case(&old) && r.label(n).is_some() {
            return Err(ApiError::invalid("Label", "name", "already_exists"));
        }
    }
    let before = r.labels[idx].clone();
    let l = &mut r.labels[idx];
    if let Some(n) = &new_name {
        l.name = n.clone();
    }
    if let Some(c) = color {
        l.color = c;
    }
    match inp.description {
        Patch::Absent => {}
        Patch::Null => l.description = None,
        Patch::Set(d) => l.description = Some(d),
    }
    let after = l.clone();
    if let Some(n) = &new_name {
        for i in r.issues.values_mut() {
            for x in i.labels.iter_mut() {
                if x.eq_ignore_ascii_case(&old) {
                    *x = n.clone();
                }
            }
        }
    }
    call.updated("label", format!("{}:{}", r.full_name(), before.name), &before, &after);
    let r = w.repo(call)?;
    json(200, &w.label_json(&call.req.base_url, r, &r.labels[idx]))
}

/// `DELETE /repos/{owner}/{repo}/labels/{name}` (`issues/delete-label`).
pub fn delete_label(w: &mut World, call: &mut Call) -> ApiResult {
    let name = call.param("name").to_string();
    let r = w.repo_mut(call, Role::Write)?;
    let idx = r.labels.iter().position(|l| l.name.eq_ignore_ascii_case(&name)).ok_or_else(ApiError::not_found)?;
    let l = r.labels.remove(idx);
    for i in r.issues.values_mut() {
        i.labels.retain(|x| !x.eq_ignore_ascii_case(&name));
    }
    call.deleted("label", format!("{}:{}", r.full_name(), l.name), &l);
    no_content()
}

fn issue_labels_json(w: &World, call: &Call, key: &str, number: u64) -> Vec<Value> {
    let r = &w.repos[key];
    r.issues[&number]
        .labels
        .iter()
        .filter_map(|n| r.label(n))
        .map(|l| w.label_json(&call.req.base_url, r, l))
        .collect()
}

/// `GET /repos/{owner}/{repo}/issues/{issue_number}/labels` (`issues/list-labels-on-issue`).
pub fn list_labels_on_issue(w: &mut World, call: &mut Call) -> ApiResult {
    let key = w.repo_key_for(call)?;
    let number = num(call, "issue_number")?;
    if !w.repos[&key].issues.contains_key(&number) {
        return Err(ApiError::not_found());
    }
    page_vec(call, issue_labels_json(w, call, &key, number))
}

/// Label names from a body that is `["a"]`, `{"labels": ["a"]}` or `{"labels": [{"name": "a"}]}`.
fn label_names(call: &Call) -> Result<Vec<String>, ApiError> {
    let v = call.req.json_value().map_err(|_| ApiError::new(400, "Problems parsing JSON"))?;
    let list = match &v {
        Value::Array(a) => a.clone(),
        Value::Object(m) => match m.get("labels") {
            Some(Value::Array(a)) => a.clone(),
            Some(Value::String(s)) => vec![Value::String(s.clone())],
            None if m.is_empty() => Vec::new(),
            _ => return Err(ApiError::new(422, "Invalid request.\n\nFor 'properties/labels', it is not an array.")),
        },
        Value::String(s) => vec![Value::String(s.clone())],
        _ => return Err(ApiError::new(400, "Problems parsing JSON")),
    };
    list.iter()
        .map(|x| match x {
            Value::String(s) => Ok(s.clone()),
            Value::Object(o) => o
                .get("name")
                .and_then(Value::as_str)
                .map(String::from)
                .ok_or_else(|| ApiError::invalid("Label", "name", "missing_field")),
            _ => Err(ApiError::new(422, "Invalid request.\n\nFor 'items', it is not a string.")),
        })
        .filter(|r| r.as_ref().map(|s| !s.trim().is_empty()).unwrap_or(true))
        .collect()
}

fn labels_common(w: &mut World, call: &mut Call, replace: bool) -> ApiResult {
    let names = label_names(call)?;
    let key = w.repo_key_for(call)?;
    let number = num(call, "issue_number")?;
    w.repo_mut(call, Role::Triage)?;
    if !w.repos[&key].issues.contains_key(&number) {
        return Err(ApiError::not_found());
    }
    let before = w.repos[&key].issues[&number].clone();
    let names = ensure_labels(w, &key, &names, call);
    let mut labels = if replace { Vec::new() } else { before.labels.clone() };
    for n in names {
        if !labels.iter().any(|x| x.eq_ignore_ascii_case(&n)) {
            labels.push(n);
        }
    }
    set_labels(w, &key, number, labels);
    let r = w.repos.get_mut(&key).unwrap();
    let i = r.issues.get_mut(&number).unwrap();
    i.updated_at = time::now_iso();
    let after = i.clone();
    let entity = if after.pull.is_some() { "pull_request" } else { "issue" };
    call.updated(entity, issue_ref(r, number), &before, &after);
    json(200, &Value::Array(issue_labels_json(w, call, &key, number)))
}

/// `POST /repos/{owner}/{repo}/issues/{issue_number}/labels` (`issues/add-labels`).
pub fn add_labels(w: &mut World, call: &mut Call) -> ApiResult {
    labels_common(w, call, false)
}

/// `PUT /repos/{owner}/{repo}/issues/{issue_number}/labels` (`issues/set-labels`).
pub fn set_labels_route(w: &mut World, call: &mut Call) -> ApiResult {
    labels_common(w, call, true)
}

/// `DELETE /repos/{owner}/{repo}/issues/{issue_number}/labels/{name}` (`issues/remove-label`).
pub fn remove_label(w: &mut World, call: &mut Call) -> ApiResult {
    let key = w.repo_key_for(call)?;
    let number = num(call, "issue_number")?;
    let name = call.param("name").to_string();
    w.repo_mut(call, Role::Triage)?;
    let i = w.repos[&key].issues.get(&number).ok_or_else(ApiError::not_found)?;
    if !i.labels.iter().any(|l| l.eq_ignore_ascii_case(&name)) {
        return Err(ApiError::new(404, "Label does not exist"));
    }
    let before = i.clone();
    let labels: Vec<String> = before.labels.iter().filter(|l| !l.eq_ignore_ascii_case(&name)).cloned().collect();
    set_labels(w, &key, number, labels);
    let r = w.repos.get_mut(&key).unwrap();
    let i = r.issues.get_mut(&number).unwrap();
    i.updated_at = time::now_iso();
    let after = i.clone();
    let entity = if after.pull.is_some() { "pull_request" } else { "issue" };
    call.updated(entity, issue_ref(r, number), &before, &after);
    json(200, &Value::Array(issue_labels_json(w, call, &key, number)))
}

/// `DELETE /repos/{owner}/{repo}/issues/{issue_number}/labels` (`issues/remove-all-labels`).
pub fn remove_all_labels(w: &mut World, call: &mut Call) -> ApiResult {
    let key = w.repo_key_for(call)?;
    let number = num(call, "issue_number")?;
    w.repo_mut(call, Role::Triage)?;
    let before = w.repos[&key].issues.get(&number).ok_or_else(ApiError::not_found)?.clone();
    set_labels(w, &key, number, Vec::new());
    let r = w.repos.get_mut(&key).unwrap();
    let after = r.issues[&number].clone();
    call.updated("issue", issue_ref(r, number), &before, &after);
    no_content()
}

// ---- assignees -------------------------------------------------------------------------

/// `GET /repos/{owner}/{repo}/assignees` (`issues/list-assignees`).
pub fn list_assignees(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let b = call.req.base_url.clone();
    let list: Vec<Value> = w
        .users
        .values()
        .filter(|u| assignable(w, r, &u.login))
        .map(|u| w.user_json(&b, &u.login))
        .collect();
    page_vec(call, list)
}

/// `GET /repos/{owner}/{repo}/assignees/{assignee}` (`issues/check-user-can-be-assigned`).
pub fn check_assignee(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    if assignable(w, r, call.param("assignee")) { no_content() } else { Err(ApiError::not_found()) }
}

#[derive(Debug, Deserialize, Default)]
pub struct AssigneesInput {
    #[serde(default)]
    pub assignees: Vec<String>,
}

fn assignees_common(w: &mut World, call: &mut Call, add: bool) -> ApiResult {
    let inp: AssigneesInput = input(call)?;
    let key = w.repo_key_for(call)?;
    let number = num(call, "issue_number")?;
    let r = &w.repos[&key];
    let i = r.issues.get(&number).ok_or_else(ApiError::not_found)?;
    let before = i.clone();
    let mut list = before.assignees.clone();
    if w.viewer_role(r) >= Role::Triage {
        if add {
            // GitHub silently skips logins that cannot be assigned.
            for a in &inp.assignees {
                if assignable(w, r, a) && !list.iter().any(|x| x.eq_ignore_ascii_case(a)) && list.len() < 10 {
                    list.push(w.users[&a.to_ascii_lowercase()].login.clone());
                }
            }
        } else {
            list.retain(|x| !inp.assignees.iter().any(|a| a.eq_ignore_ascii_case(x)));
        }
        set_assignees(w, &key, number, list);
        let r = w.repos.get_mut(&key).unwrap();
        let i = r.issues.get_mut(&number).unwrap();
        i.updated_at = time::now_iso();
        let after = i.clone();
        let entity = if after.pull.is_some() { "pull_request" } else { "issue" };
        call.updated(entity, issue_ref(r, number), &before, &after);
    }
    let r = &w.repos[&key];
    json(if add { 201 } else { 200 }, &w.issue_json(&call.req.base_url, r, &r.issues[&number]))
}

/// `POST /repos/{owner}/{repo}/issues/{issue_number}/assignees` (`issues/add-assignees`).
pub fn add_assignees(w: &mut World, call: &mut Call) -> ApiResult {
    assignees_common(w, call, true)
}

/// `DELETE /repos/{owner}/{repo}/issues/{issue_number}/assignees` (`issues/remove-assignees`).
pub fn remove_assignees(w: &mut World, call: &mut Call) -> ApiResult {
    assignees_common(w, call, false)
}

// ---- milestones ------------------------------------------------------------------------

/// `GET /repos/{owner}/{repo}/milestones` (`issues/list-milestones`).
pub fn list_milestones(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let state = query_enum(call, "state", &["open", "closed", "all"], "open")?;
    let sort = query_enum(call, "sort", &["due_on", "completeness"], "due_on")?;
    let dir = query_enum(call, "direction", &["asc", "desc"], "asc")?;
    let mut list: Vec<&Milestone> = r.milestones.values().filter(|m| state == "all" || m.state == state).collect();
    if sort == "due_on" {
        list.sort_by(|a, b| a.due_on.is_none().cmp(&b.due_on.is_none()).then(a.due_on.cmp(&b.due_on)).then(a.number.cmp(&b.number)));
    }
    if dir == "desc" {
        list.reverse();
    }
    let b = call.req.base_url.clone();
    let n = list.len();
    page_of(call, n, list.into_iter(), |m| w.milestone_json(&b, r, m))
}

/// `GET /repos/{owner}/{repo}/milestones/{milestone_number}` (`issues/get-milestone`).
pub fn get_milestone(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let m = r.milestones.get(&num(call, "milestone_number")?).ok_or_else(ApiError::not_found)?;
    json(200, &w.milestone_json(&call.req.base_url, r, m))
}

#[derive(Debug, Deserialize)]
pub struct MilestoneInput {
    pub title: Option<String>,
    pub state: Option<String>,
    #[serde(default)]
    pub description: Patch<String>,
    #[serde(default)]
    pub due_on: Patch<String>,
}

/// `POST /repos/{owner}/{repo}/milestones` (`issues/create-milestone`).
pub fn create_milestone(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: MilestoneInput = input(call)?;
    let title = inp.title.filter(|t| !t.trim().is_empty()).ok_or_else(|| ApiError::invalid("Milestone", "title", "missing_field"))?;
    let state = inp.state.unwrap_or_else(|| "open".into());
    if state != "open" && state != "closed" {
        return Err(ApiError::invalid("Milestone", "state", "invalid"));
    }
    if let Patch::Set(d) = &inp.due_on {
        if time::parse_iso(d).is_none() {
            return Err(ApiError::invalid("Milestone", "due_on", "invalid"));
        }
    }
    let id = w.next_id();
    let viewer = w.viewer.clone();
    let now = time::now_iso();
    let r = w.repo_mut(call, Role::Write)?;
    if r.milestones.values().any(|m| m.title == title) {
        return Err(ApiError::invalid("Milestone", "title", "already_exists"));
    }
    let number = r.milestones.keys().max().copied().unwrap_or(0) + 1;
    let m = Milestone {
        id,
        number,
        title,
        description: match inp.description {
            Patch::Set(d) => Some(d),
            _ => None,
        },
        closed_at: (state == "closed").then(|| now.clone()),
        state,
        due_on: match inp.due_on {
            Patch::Set(d) => Some(d),
            _ => None,
        },
        creator: viewer,
        created_at: now.clone(),
        updated_at: now,
        open_issues: 0,
        closed_issues: 0,
    };
    call.created("milestone", format!("{}:{number}", r.full_name()), &m);
    r.milestones.insert(number, m);
    let r = w.repo(call)?;
    json(201, &w.milestone_json(&call.req.base_url, r, &r.milestones[&number]))
}

/// `PATCH /repos/{owner}/{repo}/milestones/{milestone_number}` (`issues/update-milestone`).
pub fn update_milestone(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: MilestoneInput = input(call)?;
    let number = num(call, "milestone_number")?;
    let now = time::now_iso();
    let r = w.repo_mut(call, Role::Write)?;
    let m = r.milestones.get_mut(&number).ok_or_else(ApiError::not_found)?;
    let before = m.clone();
    if let Some(t) = inp.title.filter(|t| !t.trim().is_empty()) {
        m.title = t;
    }
    if let Some(s) = inp.state {
        if s != "open" && s != "closed" {
            return Err(ApiError::invalid("Milestone", "state", "invalid"));
        }
        if s != m.state {
            m.closed_at = (s == "closed").then(|| now.clone());
        }
        m.state = s;
    }
    match inp.description {
        Patch::Absent => {}
        Patch::Null => m.description = None,
        Patch::Set(d) => m.description = Some(d),
    }
    match inp.due_on {
        Patch::Absent => {}
        Patch::Null => m.due_on = None,
        Patch::Set(d) => m.due_on = Some(d),
    }
    m.updated_at = now;
    let after = m.clone();
    call.updated("milestone", format!("{}:{number}", r.full_name()), &before, &after);
    let r = w.repo(call)?;
    json(200, &w.milestone_json(&call.req.base_url, r, &r.milestones[&number]))
}

/// `DELETE /repos/{owner}/{repo}/milestones/{milestone_number}` (`issues/delete-milestone`).
pub fn delete_milestone(w: &mut World, call: &mut Call) -> ApiResult {
    let number = num(call, "milestone_number")?;
    let r = w.repo_mut(call, Role::Write)?;
    let m = r.milestones.remove(&number).ok_or_else(ApiError::not_found)?;
    for i in r.issues.values_mut() {
        if i.milestone == Some(number) {
            i.milestone = None;
        }
    }
    call.deleted("milestone", format!("{}:{number}", r.full_name()), &m);
    no_content()
}

// ---- events, timeline ------------------------------------------------------------------

/// `GET /repos/{owner}/{repo}/issues/{issue_number}/events` (`issues/list-events`).
pub fn list_events(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let number = num(call, "issue_number")?;
    if !r.issues.contains_key(&number) {
        return Err(ApiError::not_found());
    }
    let b = call.req.base_url.clone();
    let keep = |e: &&IssueEvent| e.issue == number;
    let total = r.events.iter().filter(keep).count();
    page_of(call, total, r.events.iter().filter(keep), |e| w.event_json(&b, r, e, false))
}

/// `GET /repos/{owner}/{repo}/issues/events` (`issues/list-events-for-repo`).
pub fn list_events_for_repo(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let b = call.req.base_url.clone();
    page_of(call, r.events.len(), r.events.iter().rev(), |e| w.event_json(&b, r, e, true))
}

/// `GET /repos/{owner}/{repo}/issues/events/{event_id}` (`issues/get-event`).
pub fn get_event(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let id = num(call, "event_id")?;
    let e = r.events.iter().find(|e| e.id == id).ok_or_else(ApiError::not_found)?;
    json(200, &w.event_json(&call.req.base_url, r, e, true))
}

/// `GET /repos/{owner}/{repo}/issues/{issue_number}/timeline` (`issues/list-events-for-timeline`).
pub fn timeline(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let number = num(call, "issue_number")?;
    let issue = r.issues.get(&number).ok_or_else(ApiError::not_found)?;
    let b = call.req.base_url.clone();
    let mut items: Vec<(String, u64, Value)> = Vec::new();
    for e in r.events.iter().filter(|e| e.issue == number) {
        items.push((e.created_at.clone(), e.id, w.event_json(&b, r, e, false)));
    }
    for c in r.comments.values().filter(|c| c.issue == number) {
        let mut v = w.comment_json(&b, r, c);
        let m = v.as_object_mut().unwrap();
        m.insert("event".into(), json!("commented"));
        m.insert("actor".into(), w.user_json(&b, &c.user));
        items.push((c.created_at.clone(), c.id, v));
    }
    // Another issue or pull request of the repository that mentions this one, in its body or
    // in a comment: GitHub's `cross-referenced`, one for each mention, by its author.
    let named = format!("#{number}");
    for other in r.issues.values().filter(|o| o.number != number && o.body.as_deref().is_some_and(|t| mentions(t, &named))) {
        items.push((other.created_at.clone(), other.id, cross_referenced(w, &b, r, other, &other.user, &other.created_at)));
    }
    for c in r.comments.values().filter(|c| c.issue != number && mentions(&c.body, &named)) {
        if let Some(other) = r.issues.get(&c.issue) {
            items.push((c.created_at.clone(), c.id, cross_referenced(w, &b, r, other, &c.user, &c.created_at)));
        }
    }
    if let Some(p) = &issue.pull {
        for rv in p.reviews.iter().filter(|x| x.state != "PENDING") {
            let mut v = crate::render::review_json(w, &b, r, number, rv);
            v.as_object_mut().unwrap().insert("event".into(), json!("reviewed"));
            items.push((rv.submitted_at.clone().unwrap_or_default(), rv.id, v));
        }
        // The pull request's commits (`committed`, at their committer's date; no actor, as
        // GitHub sends them).
        for sha in crate::handlers::pulls::commits_of(r, issue) {
            if let Some(c) = r.git.commit(&sha) {
                let mut v = w.git_commit_json(&b, r, &sha, c);
                v.as_object_mut().unwrap().insert("event".into(), json!("committed"));
                items.push((c.committer.date.clone(), 0, v));
            }
        }
        // Comments on the diff, one `line-commented` per thread (a comment and its replies)
        // at its first comment's time; a pending review's comments are not out yet.
        let pending = |id: Option<u64>| id.is_some_and(|id| p.reviews.iter().any(|rv| rv.id == id && rv.state == "PENDING"));
        let root_of_thread = |c: &&ReviewComment| c.pull == number && c.in_reply_to.is_none() && !pending(c.review_id);
        for root in r.review_comments.values().filter(root_of_thread) {
            let thread: Vec<Value> = r
                .review_comments
                .values()
                .filter(|c| c.id == root.id || c.in_reply_to == Some(root.id))
                .map(|c| crate::handlers::pulls::review_comment_json(w, &b, r, c))
                .collect();
            let v = json!({"event": "line-commented", "node_id": crate::render::node_id("PullRequestReviewThread", root.id), "comments": thread});
            items.push((root.created_at.clone(), root.id, v));
        }
    }
    items.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
    page_vec(call, items.into_iter().map(|x| x.2).collect())
}

/// Whether `text` names an issue of the same repository by `want` (`#n`): not inside a word
/// and not followed by another digit (`#12` does not name 1).
fn mentions(text: &str, want: &str) -> bool {
    let bytes = text.as_bytes();
    text.match_indices(want).any(|(at, _)| {
        let before = at == 0 || !bytes[at - 1].is_ascii_alphanumeric();
        let after = bytes.get(at + want.len()).is_none_or(|c| !c.is_ascii_alphanumeric());
        before && after
    })
}

/// A `cross-referenced` timeline item: `source` mentioned the issue, written by `actor` at `at`.
fn cross_referenced(w: &World, b: &str, r: &Repo, source: &Issue, actor: &str, at: &str) -> Value {
    let mut issue = w.issue_json(b, r, source);
    issue.as_object_mut().unwrap().insert("repository".into(), w.repo_json(b, r, false));
    json!({
        "event": "cross-referenced", "actor": w.user_json(b, actor), "created_at": at, "updated_at": at,
        "source": {"type": "issue", "issue": issue},
    })
}

// ---- reactions -------------------------------------------------------------------------

const REACTIONS: [&str; 8] = ["+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"];

#[derive(Debug, Deserialize)]
pub struct ReactionInput {
    pub content: Option<String>,
}

fn reactions_of<'a>(r: &'a mut Repo, call: &Call, on_comment: bool) -> Result<&'a mut Vec<Reaction>, ApiError> {
    if on_comment {
        let id = num(call, "comment_id")?;
        Ok(&mut r.comments.get_mut(&id).ok_or_else(ApiError::not_found)?.reactions)
    } else {
        let n = num(call, "issue_number")?;
        Ok(&mut r.issues.get_mut(&n).ok_or_else(ApiError::not_found)?.reactions)
    }
}

fn list_reactions(w: &mut World, call: &mut Call, on_comment: bool) -> ApiResult {
    let r = w.repo(call)?;
    let content = call.req.query("content");
    let all: &Vec<Reaction> = if on_comment {
        &r.comments.get(&num(call, "comment_id")?).ok_or_else(ApiError::not_found)?.reactions
    } else {
        &r.issues.get(&num(call, "issue_number")?).ok_or_else(ApiError::not_found)?.reactions
    };
    let list: Vec<&Reaction> = all.iter().filter(|x| content.as_deref().is_none_or(|c| x.content == c)).collect();
    let b = call.req.base_url.clone();
    let n = list.len();
    page_of(call, n, list.into_iter(), |x| w.reaction_json(&b, x))
}

fn create_reaction(w: &mut World, call: &mut Call, on_comment: bool) -> ApiResult {
    let inp: ReactionInput = input(call)?;
    let content = inp.content.ok_or_else(|| ApiError::invalid("Reaction", "content", "missing_field"))?;
    if !REACTIONS.contains(&content.as_str()) {
        return Err(ApiError::invalid("Reaction", "content", "invalid"));
    }
    let id = w.next_id();
    let viewer = w.viewer.clone();
    let r = w.repo_mut(call, Role::Read)?;
    let full = r.full_name();
    let list = reactions_of(r, call, on_comment)?;
    if let Some(x) = list.iter().find(|x| x.user.eq_ignore_ascii_case(&viewer) && x.content == content) {
        let x = x.clone();
        return json(200, &w.reaction_json(&call.req.base_url, &x));
    }
    let x = Reaction { id, user: viewer, content, created_at: time::now_iso() };
    call.created("reaction", format!("{full}:{id}"), &x);
    list.push(x.clone());
    json(201, &w.reaction_json(&call.req.base_url, &x))
}

fn delete_reaction(w: &mut World, call: &mut Call, on_comment: bool) -> ApiResult {
    let rid = num(call, "reaction_id")?;
    let r = w.repo_mut(call, Role::Read)?;
    let full = r.full_name();
    let list = reactions_of(r, call, on_comment)?;
    let idx = list.iter().position(|x| x.id == rid).ok_or_else(ApiError::not_found)?;
    let x = list.remove(idx);
    call.deleted("reaction", format!("{full}:{rid}"), &x);
    no_content()
}

/// `GET …/issues/{issue_number}/reactions` (`reactions/list-for-issue`).
pub fn list_reactions_issue(w: &mut World, call: &mut Call) -> ApiResult {
    list_reactions(w, call, false)
}
/// `POST …/issues/{issue_number}/reactions` (`reactions/create-for-issue`).
pub fn create_reaction_issue(w: &mut World, call: &mut Call) -> ApiResult {
    create_reaction(w, call, false)
}
/// `DELETE …/issues/{issue_number}/reactions/{reaction_id}` (`reactions/delete-for-issue`).
pub fn delete_reaction_issue(w: &mut World, call: &mut Call) -> ApiResult {
    delete_reaction(w, call, false)
}
/// `GET …/issues/comments/{comment_id}/reactions` (`reactions/list-for-issue-comment`).
pub fn list_reactions_comment(w: &mut World, call: &mut Call) -> ApiResult {
    list_reactions(w, call, true)
}
/// `POST …/issues/comments/{comment_id}/reactions` (`reactions/create-for-issue-comment`).
pub fn create_reaction_comment(w: &mut World, call: &mut Call) -> ApiResult {
    create_reaction(w, call, true)
}
/// `DELETE …/issues/comments/{comment_id}/reactions/{reaction_id}` (`reactions/delete-for-issue-comment`).
pub fn delete_reaction_comment(w: &mut World, call: &mut Call) -> ApiResult {
    delete_reaction(w, call, true)
}
