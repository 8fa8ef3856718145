//! Seeds in Pome's Linear shape (`organization`, `users`, `teams` with their `states`,
//! `labels`, `projects`, `cycles`, `issues`, `comments`, `documents`, `webhooks`, `tokens`,
//! `clock`, `rateLimits`), read strictly: an unknown key, a wrong type or a reference to nothing is an
//! error naming its JSON path. References are by the names people write: teams by key, users
//! by email, states and labels by name, issues by title or identifier.

use serde_json::{Map, Value, json};

use crate::model::{Entity, Inner, World, slug};
use crate::mutate::branch;

type R<T> = Result<T, String>;

fn obj<'a>(v: &'a Value, path: &str, allowed: &[&str]) -> R<&'a Map<String, Value>> {
    let m = v.as_object().ok_or_else(|| format!("{path}: expected an object"))?;
    for k in m.keys() {
        if !allowed.contains(&k.as_str()) {
            return Err(format!("{path}.{k}: unknown field (expected one of {})", allowed.join(", ")));
        }
    }
    Ok(m)
}

fn list<'a>(m: &'a Map<String, Value>, key: &str, path: &str) -> R<Vec<&'a Value>> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(a)) => Ok(a.iter().collect()),
        Some(_) => Err(format!("{path}.{key}: expected an array")),
    }
}

fn string(m: &Map<String, Value>, key: &str, path: &str) -> R<Option<String>> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("{path}.{key}: expected a string")),
    }
}

fn required(m: &Map<String, Value>, key: &str, path: &str) -> R<String> {
    string(m, key, path)?.ok_or_else(|| format!("{path}.{key}: required"))
}

fn boolean(m: &Map<String, Value>, key: &str, path: &str, default: bool) -> R<bool> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(format!("{path}.{key}: expected true or false")),
    }
}

fn number(m: &Map<String, Value>, key: &str, path: &str) -> R<Option<f64>> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(_) => Err(format!("{path}.{key}: expected a number")),
    }
}

fn time(m: &Map<String, Value>, key: &str, path: &str) -> R<Option<String>> {
    let Some(s) = string(m, key, path)? else { return Ok(None) };
    chrono::DateTime::parse_from_rfc3339(&s).map_err(|_| format!("{path}.{key}: expected an ISO 8601 time, got {s:?}"))?;
    Ok(Some(s))
}

fn ent(pairs: Value) -> Entity {
    match pairs {
        Value::Object(m) => m.into_iter().filter(|(_, v)| !v.is_null()).collect(),
        _ => Entity::new(),
    }
}

pub const DEFAULT_CLOCK: &str = "2026-01-01T00:00:00.000Z";

/// The default world: one organization, two users, an Engineering team with Linear's
/// default workflow, one label and one issue.
pub fn default_seed() -> Value {
    json!({
        "organization": {"id": "org_pome", "name": "Pome Twin", "urlKey": "pome-twin"},
        "users": [
            {"id": "user_admin", "email": "admin@pome-twin.test", "name": "Admin User", "displayName": "Admin", "admin": true},
            {"id": "user_dev", "email": "dev@pome-twin.test", "name": "Developer", "displayName": "Dev"}
        ],
        "teams": [{"id": "team_eng", "key": "ENG", "name": "Engineering", "states": [
            {"id": "state_backlog", "name": "Backlog", "type": "backlog", "position": 0},
            {"id": "state_todo", "name": "Todo", "type": "unstarted", "position": 1},
            {"id": "state_progress", "name": "In Progress", "type": "started", "position": 2},
            {"id": "state_done", "name": "Done", "type": "completed", "position": 3},
            {"id": "state_canceled", "name": "Canceled", "type": "canceled", "position": 4}
        ]}],
        "labels": [{"id": "label_bug", "name": "Bug", "color": "#eb5757"}],
        "issues": [{"id": "issue_welcome", "team": "ENG", "title": "Welcome to the Linear twin", "state": "Todo", "priority": 3, "creator": "admin@pome-twin.test"}]
    })
}

const TOP: &[&str] = &[
    "_meta", "clock", "rateLimits", "defaultSid", "baseUrl", "strictScopes", "organization", "users", "teams", "labels", "projects", "cycles",
    "issues", "comments", "documents", "oauthApps", "tokens", "webhooks", "notifications",
];

pub fn from_seed(seed: &Value) -> R<World> {
    let top = obj(seed, "seed", TOP)?;
    let mut w = Inner::default();
    let seed_clock = time(top, "clock", "seed")?;
    let clock = seed_clock.clone().unwrap_or_else(|| DEFAULT_CLOCK.to_string());
    let stamp = |e: &mut Entity, created: Option<String>, updated: Option<String>| {
        let c = created.unwrap_or_else(|| clock.clone());
        e.insert("updatedAt".into(), json!(updated.unwrap_or_else(|| c.clone())));
        e.insert("createdAt".into(), json!(c));
    };
    for k in ["defaultSid", "baseUrl"] {
        string(top, k, "seed")?;
    }
    boolean(top, "strictScopes", "seed", false)?;

    // Organization.
    let org = match top.get("organization") {
        Some(o) => obj(o, "seed.organization", &["id", "name", "urlKey"])?.clone(),
        None => Map::new(),
    };
    let org_id = string(&org, "id", "seed.organization")?.unwrap_or_else(|| "org_pome".into());
    let name = string(&org, "name", "seed.organization")?.unwrap_or_else(|| "Pome Twin".into());
    let url_key = string(&org, "urlKey", "seed.organization")?.unwrap_or_else(|| slug(&name));
    let mut o = ent(json!({"id": org_id, "name": name, "urlKey": url_key, "allowedAuthServices": [], "gitBranchFormat": null, "periodUploadVolume": 0, "roadmapEnabled": true, "samlEnabled": false, "scimEnabled": false}));
    stamp(&mut o, None, None);
    w.insert("Organization", &org_id, o);
    w.org = org_id;

    // Users.
    for (i, u) in list(top, "users", "seed")?.into_iter().enumerate() {
        let p = format!("seed.users[{i}]");
        let m = obj(u, &p, &["id", "email", "name", "displayName", "admin", "active", "guest", "avatarUrl", "description", "timezone", "createdAt"])?;
        let email = required(m, "email", &p)?;
        let id = string(m, "id", &p)?.unwrap_or_else(|| format!("user_{}", slug(&email)));
        let name = string(m, "name", &p)?.unwrap_or_else(|| email.split('@').next().unwrap_or("").to_string());
        let display = string(m, "displayName", &p)?.unwrap_or_else(|| name.split(' ').next().unwrap_or("").to_string());
        if w.all("User").any(|(_, x)| x.get("email").and_then(Value::as_str) == Some(email.as_str())) {
            return Err(format!("{p}.email: {email} is already a user"));
        }
        let mut e = ent(json!({
            "id": id, "email": email, "name": name, "displayName": display,
            "admin": boolean(m, "admin", &p, false)?, "active": boolean(m, "active", &p, true)?, "guest": boolean(m, "guest", &p, false)?,
            "avatarUrl": string(m, "avatarUrl", &p)?, "description": string(m, "description", &p)?,
            "timezone": string(m, "timezone", &p)?, "app": false, "owner": boolean(m, "admin", &p, false)?,
            "isAssignable": true, "supportsAgentSessions": false, "canAccessAnyPublicTeam": true, "initials": initials(&name), "avatarBackgroundColor": "#5e6ad2",
            "inviteHash": "", "statusEmoji": null, "createdIssueCount": 0, "isMentionable": true,
        }));
        stamp(&mut e, time(m, "createdAt", &p)?, None);
        w.insert("User", &id, e);
    }
    let user_by = |w: &Inner, key: &str, path: &str| -> R<String> {
        w.all("User")
            .find(|(id, u)| id.as_str() == key || u.get("email").and_then(Value::as_str).is_some_and(|e| e.eq_ignore_ascii_case(key)))
            .map(|(id, _)| id.clone())
            .ok_or_else(|| format!("{path}: no user {key:?} in seed.users"))
    };

    // Project statuses: Linear's defaults.
    for (i, (name, kind, color)) in [("Backlog", "backlog", "#bec2c8"), ("Planned", "planned", "#e2e2e2"), ("In Progress", "started", "#f2c94c"), ("Completed", "completed", "#5e6ad2"), ("Canceled", "canceled", "#95a2b3")].iter().enumerate() {
        let id = format!("project_status_{kind}");
        let mut e = ent(json!({"id": id, "name": name, "type": kind, "color": color, "position": i, "indefinite": false}));
        stamp(&mut e, None, None);
        w.insert("ProjectStatus", &id, e);
    }

    // Teams and their workflow states; every active user is a member.
    for (i, t) in list(top, "teams", "seed")?.into_iter().enumerate() {
        let p = format!("seed.teams[{i}]");
        let m = obj(t, &p, &["id", "key", "name", "description", "private", "states", "color", "icon", "cyclesEnabled", "timezone", "members"])?;
        let key = required(m, "key", &p)?.to_ascii_uppercase();
        if w.team_id(&key).is_some() {
            return Err(format!("{p}.key: team key {key} is used twice"));
        }
        let id = string(m, "id", &p)?.unwrap_or_else(|| format!("team_{}", key.to_ascii_lowercase()));
        let name = required(m, "name", &p)?;
        let mut e = ent(json!({
            "id": id, "key": key, "name": name, "description": string(m, "description", &p)?, "private": boolean(m, "private", &p, false)?,
            "color": string(m, "color", &p)?, "icon": string(m, "icon", &p)?, "cyclesEnabled": boolean(m, "cyclesEnabled", &p, false)?,
            "timezone": string(m, "timezone", &p)?.unwrap_or_else(|| "America/Los_Angeles".into()), "_seq": 0,
            "issueEstimationType": "notUsed", "issueEstimationAllowZero": false, "issueEstimationExtended": false,
        }));
        stamp(&mut e, None, None);
        w.insert("Team", &id, e);
        let states = list(m, "states", &p)?;
        let defaults = [("Backlog", "backlog"), ("Todo", "unstarted"), ("In Progress", "started"), ("Done", "completed"), ("Canceled", "canceled")];
        let given: Vec<Value> = if states.is_empty() && m.get("states").is_none() {
            defaults.iter().enumerate().map(|(i, (n, t))| json!({"id": format!("{id}_state_{t}"), "name": n, "type": t, "position": i})).collect()
        } else {
            states.into_iter().cloned().collect()
        };
        for (j, s) in given.iter().enumerate() {
            let sp = format!("{p}.states[{j}]");
            let sm = obj(s, &sp, &["id", "name", "type", "position", "color", "description"])?;
            let sname = required(sm, "name", &sp)?;
            let kind = required(sm, "type", &sp)?;
            if !["triage", "backlog", "unstarted", "started", "completed", "canceled"].contains(&kind.as_str()) {
                return Err(format!("{sp}.type: {kind:?} is not a workflow state type (triage, backlog, unstarted, started, completed, canceled)"));
            }
            let sid = string(sm, "id", &sp)?.unwrap_or_else(|| format!("{id}_state_{}", slug(&sname)));
            let color = string(sm, "color", &sp)?.unwrap_or_else(|| "#bec2c8".into());
            let mut se = ent(json!({"id": sid, "name": sname, "type": kind, "position": number(sm, "position", &sp)?.unwrap_or(j as f64), "color": color, "description": string(sm, "description", &sp)?, "teamId": id}));
            stamp(&mut se, None, None);
            w.insert("WorkflowState", &sid, se);
        }
        let members: Vec<String> = match m.get("members") {
            Some(_) => {
                let mut v = Vec::new();
                for (j, u) in list(m, "members", &p)?.into_iter().enumerate() {
                    let key = u.as_str().ok_or_else(|| format!("{p}.members[{j}]: expected a user email"))?;
                    v.push(user_by(&w, key, &format!("{p}.members[{j}]"))?);
                }
                v
            }
            None => w.all("User").filter(|(_, u)| u.get("active").and_then(Value::as_bool).unwrap_or(true)).map(|(id, _)| id.clone()).collect(),
        };
        for u in members {
            let mid = format!("membership_{id}_{u}");
            let mut me = ent(json!({"id": mid, "teamId": id, "userId": u, "owner": false, "sortOrder": 0}));
            stamp(&mut me, None, None);
            w.insert("TeamMembership", &mid, me);
        }
    }
    let team_by = |w: &Inner, key: &str, path: &str| -> R<String> { w.team_id(key).ok_or_else(|| format!("{path}: no team {key:?} in seed.teams")) };

    // Labels: team labels name a team by key; workspace labels name none.
    for (i, l) in list(top, "labels", "seed")?.into_iter().enumerate() {
        let p = format!("seed.labels[{i}]");
        let m = obj(l, &p, &["id", "name", "color", "team", "description", "parent", "isGroup"])?;
        let name = required(m, "name", &p)?;
        let team = match string(m, "team", &p)? {
            Some(t) => Some(team_by(&w, &t, &format!("{p}.team"))?),
            None => None,
        };
        let id = string(m, "id", &p)?.unwrap_or_else(|| format!("label_{}", slug(&name)));
        let parent = match string(m, "parent", &p)? {
            Some(par) => Some(
                w.all("IssueLabel")
                    .find(|(lid, x)| lid.as_str() == par || x.get("name").and_then(Value::as_str) == Some(par.as_str()))
                    .map(|(lid, _)| lid.clone())
                    .ok_or_else(|| format!("{p}.parent: no label {par:?} before this one"))?,
            ),
            None => None,
        };
        // A parent is a label group (Linear nests labels one level, under groups).
        if let Some(g) = parent.as_ref().and_then(|g| w.get_mut("IssueLabel", g)) {
            g.insert("isGroup".into(), json!(true));
        }
        let mut e = ent(json!({"id": id, "name": name, "color": string(m, "color", &p)?.unwrap_or_else(|| "#bec2c8".into()), "description": string(m, "description", &p)?, "teamId": team, "parentId": parent, "isGroup": boolean(m, "isGroup", &p, false)?, "creatorId": w.all("User").next().map(|(id, _)| id.clone())}));
        stamp(&mut e, None, None);
        w.insert("IssueLabel", &id, e);
    }

    // Projects with milestones.
    for (i, pr) in list(top, "projects", "seed")?.into_iter().enumerate() {
        let p = format!("seed.projects[{i}]");
        let m = obj(pr, &p, &["id", "name", "description", "state", "lead", "teams", "members", "startDate", "targetDate", "milestones", "icon", "color"])?;
        let name = required(m, "name", &p)?;
        let id = string(m, "id", &p)?.unwrap_or_else(|| format!("project_{}", slug(&name)));
        let state = string(m, "state", &p)?.unwrap_or_else(|| "backlog".into());
        let status = format!("project_status_{state}");
        if w.get("ProjectStatus", &status).is_none() {
            return Err(format!("{p}.state: {state:?} is not a project state (backlog, planned, started, completed, canceled)"));
        }
        let lead = match string(m, "lead", &p)? {
            Some(u) => Some(user_by(&w, &u, &format!("{p}.lead"))?),
            None => None,
        };
        let mut teams = Vec::new();
        for (j, t) in list(m, "teams", &p)?.into_iter().enumerate() {
            teams.push(team_by(&w, t.as_str().unwrap_or(""), &format!("{p}.teams[{j}]"))?);
        }
        let mut members = Vec::new();
        for (j, u) in list(m, "members", &p)?.into_iter().enumerate() {
            members.push(user_by(&w, u.as_str().unwrap_or(""), &format!("{p}.members[{j}]"))?);
        }
        let mut e = ent(json!({"id": id, "name": name, "description": string(m, "description", &p)?.unwrap_or_default(), "state": state, "statusId": status, "leadId": lead, "teamIds": teams, "memberIds": members, "startDate": string(m, "startDate", &p)?, "targetDate": string(m, "targetDate", &p)?, "icon": string(m, "icon", &p)?, "color": string(m, "color", &p)?.unwrap_or_else(|| "#5e6ad2".into()), "slugId": crate::model::slug_id(&id), "progress": 0, "priority": 0, "creatorId": lead}));
        stamp(&mut e, None, None);
        w.insert("Project", &id, e);
        for (j, ms) in list(m, "milestones", &p)?.into_iter().enumerate() {
            let mp = format!("{p}.milestones[{j}]");
            let mm = obj(ms, &mp, &["id", "name", "description", "targetDate"])?;
            let mname = required(mm, "name", &mp)?;
            let mid = string(mm, "id", &mp)?.unwrap_or_else(|| format!("{id}_milestone_{}", slug(&mname)));
            let mut me = ent(json!({"id": mid, "name": mname, "description": string(mm, "description", &mp)?, "targetDate": string(mm, "targetDate", &mp)?, "projectId": id, "sortOrder": j}));
            stamp(&mut me, None, None);
            w.insert("ProjectMilestone", &mid, me);
        }
    }

    // Cycles.
    for (i, c) in list(top, "cycles", "seed")?.into_iter().enumerate() {
        let p = format!("seed.cycles[{i}]");
        let m = obj(c, &p, &["id", "team", "number", "name", "startsAt", "endsAt", "description"])?;
        let team = team_by(&w, &required(m, "team", &p)?, &format!("{p}.team"))?;
        let n = number(m, "number", &p)?.unwrap_or((w.all("Cycle").filter(|(_, x)| x.get("teamId").and_then(Value::as_str) == Some(team.as_str())).count() + 1) as f64);
        let id = string(m, "id", &p)?.unwrap_or_else(|| format!("{team}_cycle_{n}"));
        let starts = time(m, "startsAt", &p)?.ok_or_else(|| format!("{p}.startsAt: required"))?;
        let ends = time(m, "endsAt", &p)?.ok_or_else(|| format!("{p}.endsAt: required"))?;
        let mut e = ent(json!({"id": id, "teamId": team, "number": n, "name": string(m, "name", &p)?, "description": string(m, "description", &p)?, "startsAt": starts, "endsAt": ends, "progress": 0}));
        stamp(&mut e, None, None);
        w.insert("Cycle", &id, e);
    }

    // Issues, numbered per team in seed order.
    let issues = list(top, "issues", "seed")?;
    let mut parents: Vec<(String, String, String)> = Vec::new();
    for (i, is) in issues.into_iter().enumerate() {
        let p = format!("seed.issues[{i}]");
        let m = obj(is, &p, &["id", "team", "title", "description", "priority", "estimate", "state", "assignee", "creator", "labels", "createdAt", "updatedAt", "parent", "project", "cycle", "dueDate", "number", "subscribers", "archivedAt"])?;
        let team = team_by(&w, &required(m, "team", &p)?, &format!("{p}.team"))?;
        let title = required(m, "title", &p)?;
        let id = string(m, "id", &p)?.unwrap_or_else(|| format!("issue_{}", i + 1));
        if w.get("Issue", &id).is_some() {
            return Err(format!("{p}.id: {id} is used twice"));
        }
        let state = match string(m, "state", &p)? {
            Some(s) => w
                .all("WorkflowState")
                .find(|(sid, st)| st.get("teamId").and_then(Value::as_str) == Some(team.as_str()) && (sid.as_str() == s || st.get("name").and_then(Value::as_str).is_some_and(|n| n.eq_ignore_ascii_case(&s))))
                .map(|(sid, _)| sid.clone())
                .ok_or_else(|| format!("{p}.state: the team has no state {s:?}"))?,
            None => crate::mutate::default_state(&w, &team).ok_or_else(|| format!("{p}.state: the team has no workflow states"))?,
        };
        let priority = number(m, "priority", &p)?.unwrap_or(0.0);
        if !(0.0..=4.0).contains(&priority) || priority.fract() != 0.0 {
            return Err(format!("{p}.priority: expected 0 (none) to 4 (low), got {priority}"));
        }
        let assignee = match string(m, "assignee", &p)? {
            Some(u) => Some(user_by(&w, &u, &format!("{p}.assignee"))?),
            None => None,
        };
        let creator = match string(m, "creator", &p)? {
            Some(u) => Some(user_by(&w, &u, &format!("{p}.creator"))?),
            None => None,
        };
        let mut labels = Vec::new();
        for (j, l) in list(m, "labels", &p)?.into_iter().enumerate() {
            let name = l.as_str().ok_or_else(|| format!("{p}.labels[{j}]: expected a label name"))?;
            let lid = w
                .all("IssueLabel")
                .filter(|(lid, x)| lid.as_str() == name || x.get("name").and_then(Value::as_str).is_some_and(|n| n.eq_ignore_ascii_case(name)))
                .find(|(_, x)| x.get("teamId").is_none_or(|t| t.as_str() == Some(team.as_str())))
                .map(|(lid, _)| lid.clone())
                .ok_or_else(|| format!("{p}.labels[{j}]: no label {name:?} for this team in seed.labels"))?;
            labels.push(lid);
        }
        let mut subscribers: Vec<String> = creator.iter().cloned().collect();
        for (j, u) in list(m, "subscribers", &p)?.into_iter().enumerate() {
            let u = user_by(&w, u.as_str().unwrap_or(""), &format!("{p}.subscribers[{j}]"))?;
            if !subscribers.contains(&u) {
                subscribers.push(u);
            }
        }
        let project = match string(m, "project", &p)? {
            Some(pr) => Some(
                w.all("Project")
                    .find(|(pid, x)| pid.as_str() == pr || x.get("name").and_then(Value::as_str) == Some(pr.as_str()))
                    .map(|(pid, _)| pid.clone())
                    .ok_or_else(|| format!("{p}.project: no project {pr:?} in seed.projects"))?,
            ),
            None => None,
        };
        let cycle = match m.get("cycle") {
            None | Some(Value::Null) => None,
            Some(c) => {
                let key = match c {
                    Value::Number(n) => n.to_string(),
                    Value::String(s) => s.clone(),
                    _ => return Err(format!("{p}.cycle: expected a cycle number or id")),
                };
                Some(
                    w.all("Cycle")
                        .find(|(cid, x)| cid.as_str() == key || (x.get("teamId").and_then(Value::as_str) == Some(team.as_str()) && x.get("number").and_then(Value::as_f64).map(|n| n.to_string()) == key.parse::<f64>().ok().map(|n| n.to_string())))
                        .map(|(cid, _)| cid.clone())
                        .ok_or_else(|| format!("{p}.cycle: no cycle {key} for this team in seed.cycles"))?,
                )
            }
        };
        let estimate = number(m, "estimate", &p)?;
        let given_number = number(m, "number", &p)?;
        let number = {
            let t = w.get_mut("Team", &team).expect("team exists");
            let n = match given_number {
                Some(n) => n as u64,
                None => t.get("_seq").and_then(Value::as_u64).unwrap_or(0) + 1,
            };
            let seq = t.get("_seq").and_then(Value::as_u64).unwrap_or(0).max(n);
            t.insert("_seq".into(), json!(seq));
            n
        };
        let key = w.str_field("Team", &team, "key").unwrap_or("").to_string();
        let identifier = format!("{key}-{number}");
        let who = assignee.as_ref().or(creator.as_ref()).and_then(|u| w.str_field("User", u, "displayName")).unwrap_or("").to_string();
        let stype = w.str_field("WorkflowState", &state, "type").unwrap_or("").to_string();
        let created = time(m, "createdAt", &p)?;
        let mut e = ent(json!({
            "id": id, "teamId": team, "title": title, "description": string(m, "description", &p)?, "priority": priority,
            "estimate": estimate, "stateId": state, "assigneeId": assignee, "creatorId": creator, "labelIds": labels,
            "subscriberIds": subscribers, "projectId": project, "cycleId": cycle, "dueDate": string(m, "dueDate", &p)?,
            "number": number, "identifier": identifier, "branchName": branch(&who, &identifier, &title), "_branchUser": who,
            "sortOrder": -(number as f64), "boardOrder": 0, "prioritySortOrder": 0, "archivedAt": time(m, "archivedAt", &p)?,
            "customerTicketCount": 0, "previousIdentifiers": [], "reactionData": [], "labelIds_": null,
        }));
        e.remove("labelIds_");
        stamp(&mut e, created.clone(), time(m, "updatedAt", &p)?);
        let at = created.unwrap_or_else(|| clock.clone());
        match stype.as_str() {
            "started" => {
                e.insert("startedAt".into(), json!(at));
            }
            "completed" => {
                e.insert("completedAt".into(), json!(at));
            }
            "canceled" => {
                e.insert("canceledAt".into(), json!(at));
            }
            _ => {}
        }
        if let Some(par) = string(m, "parent", &p)? {
            parents.push((id.clone(), par, format!("{p}.parent")));
        }
        w.insert("Issue", &id, e);
    }
    for (id, par, path) in parents {
        let pid = w
            .issue_id(&par)
            .or_else(|| w.all("Issue").find(|(_, x)| x.get("title").and_then(Value::as_str) == Some(par.as_str())).map(|(pid, _)| pid.clone()))
            .ok_or_else(|| format!("{path}: no issue {par:?} in seed.issues"))?;
        if pid == id {
            return Err(format!("{path}: an issue cannot be its own parent"));
        }
        w.get_mut("Issue", &id).expect("seeded").insert("parentId".into(), json!(pid));
    }
    let issue_by = |w: &Inner, key: &str, path: &str| -> R<String> {
        w.issue_id(key)
            .or_else(|| w.all("Issue").find(|(_, x)| x.get("title").and_then(Value::as_str) == Some(key)).map(|(id, _)| id.clone()))
            .ok_or_else(|| format!("{path}: no issue {key:?} in seed.issues"))
    };

    // Comments, threaded by `parent`.
    for (i, c) in list(top, "comments", "seed")?.into_iter().enumerate() {
        let p = format!("seed.comments[{i}]");
        let m = obj(c, &p, &["id", "issue", "body", "user", "createdAt", "updatedAt", "parent", "resolvedAt"])?;
        let issue = issue_by(&w, &required(m, "issue", &p)?, &format!("{p}.issue"))?;
        let user = match string(m, "user", &p)? {
            Some(u) => Some(user_by(&w, &u, &format!("{p}.user"))?),
            None => None,
        };
        let id = string(m, "id", &p)?.unwrap_or_else(|| format!("comment_{}", i + 1));
        let parent = match string(m, "parent", &p)? {
            Some(par) => {
                let pc = w.get("Comment", &par).ok_or_else(|| format!("{p}.parent: no comment {par:?} before this one"))?;
                if pc.get("issueId").and_then(Value::as_str) != Some(issue.as_str()) {
                    return Err(format!("{p}.parent: comment {par} is on another issue"));
                }
                Some(par)
            }
            None => None,
        };
        let mut e = ent(json!({"id": id, "issueId": issue, "body": required(m, "body", &p)?, "userId": user, "parentId": parent, "resolvedAt": time(m, "resolvedAt", &p)?, "reactionData": []}));
        stamp(&mut e, time(m, "createdAt", &p)?, time(m, "updatedAt", &p)?);
        w.insert("Comment", &id, e);
    }

    // Documents.
    for (i, d) in list(top, "documents", "seed")?.into_iter().enumerate() {
        let p = format!("seed.documents[{i}]");
        let m = obj(d, &p, &["id", "title", "content", "project", "creator", "icon", "color"])?;
        let title = required(m, "title", &p)?;
        let id = string(m, "id", &p)?.unwrap_or_else(|| format!("document_{}", i + 1));
        let project = match string(m, "project", &p)? {
            Some(pr) => Some(w.all("Project").find(|(pid, x)| pid.as_str() == pr || x.get("name").and_then(Value::as_str) == Some(pr.as_str())).map(|(pid, _)| pid.clone()).ok_or_else(|| format!("{p}.project: no project {pr:?}"))?),
            None => None,
        };
        let creator = match string(m, "creator", &p)? {
            Some(u) => Some(user_by(&w, &u, &format!("{p}.creator"))?),
            None => None,
        };
        let mut e = ent(json!({"id": id, "title": title, "content": string(m, "content", &p)?.unwrap_or_default(), "projectId": project, "creatorId": creator, "slugId": crate::model::slug_id(&id), "icon": string(m, "icon", &p)?, "color": string(m, "color", &p)?, "sortOrder": i}));
        stamp(&mut e, None, None);
        w.insert("Document", &id, e);
    }

    // Webhooks.
    for (i, h) in list(top, "webhooks", "seed")?.into_iter().enumerate() {
        let p = format!("seed.webhooks[{i}]");
        let m = obj(h, &p, &["id", "url", "secret", "enabled", "resourceTypes", "team", "label", "allPublicTeams"])?;
        let url = required(m, "url", &p)?;
        let id = string(m, "id", &p)?.unwrap_or_else(|| format!("webhook_{}", i + 1));
        let team = match string(m, "team", &p)? {
            Some(t) => Some(team_by(&w, &t, &format!("{p}.team"))?),
            None => None,
        };
        let mut types = Vec::new();
        for (j, t) in list(m, "resourceTypes", &p)?.into_iter().enumerate() {
            types.push(t.as_str().ok_or_else(|| format!("{p}.resourceTypes[{j}]: expected a resource type such as \"Issue\""))?.to_string());
        }
        let mut e = ent(json!({"id": id, "url": url, "secret": string(m, "secret", &p)?.unwrap_or_else(|| format!("lin_wh_seed_{i}")), "enabled": boolean(m, "enabled", &p, true)?, "resourceTypes": types, "teamId": team, "label": string(m, "label", &p)?, "allPublicTeams": boolean(m, "allPublicTeams", &p, team.is_none())?}));
        stamp(&mut e, None, None);
        w.insert("Webhook", &id, e);
    }

    // Notifications (issue notifications in a user's inbox).
    for (i, n) in list(top, "notifications", "seed")?.into_iter().enumerate() {
        let p = format!("seed.notifications[{i}]");
        let m = obj(n, &p, &["id", "user", "issue", "type", "actor", "comment", "readAt", "createdAt"])?;
        let user = user_by(&w, &required(m, "user", &p)?, &format!("{p}.user"))?;
        let issue = issue_by(&w, &required(m, "issue", &p)?, &format!("{p}.issue"))?;
        let actor = match string(m, "actor", &p)? {
            Some(a) => Some(user_by(&w, &a, &format!("{p}.actor"))?),
            None => None,
        };
        let comment = match string(m, "comment", &p)? {
            Some(c) if w.get("Comment", &c).is_some() => Some(c),
            Some(c) => return Err(format!("{p}.comment: no comment {c:?} in seed.comments")),
            None => None,
        };
        let id = string(m, "id", &p)?.unwrap_or_else(|| format!("notification_{}", i + 1));
        let team = w.str_field("Issue", &issue, "teamId").map(String::from);
        let title = w.str_field("Issue", &issue, "title").map(String::from);
        let kind = string(m, "type", &p)?.unwrap_or_else(|| "issueAssignedToYou".into());
        let mut e = ent(json!({"id": id, "type": kind, "userId": user, "issueId": issue, "actorId": actor, "commentId": comment, "teamId": team, "title": title, "readAt": time(m, "readAt", &p)?, "category": "assignments", "groupingKey": format!("issue-{issue}")}));
        stamp(&mut e, time(m, "createdAt", &p)?, None);
        w.insert("IssueNotification", &id, e);
    }

    // Tokens: the first token's user is the viewer.
    for (i, t) in list(top, "tokens", "seed")?.into_iter().enumerate() {
        let p = format!("seed.tokens[{i}]");
        let m = obj(t, &p, &["token", "type", "user", "actor", "sid", "scopes"])?;
        required(m, "token", &p)?;
        let user = user_by(&w, &required(m, "user", &p)?, &format!("{p}.user"))?;
        if w.viewer.is_empty() {
            w.viewer = user;
        }
        w.tokens.push(t.clone());
    }
    for (i, a) in list(top, "oauthApps", "seed")?.into_iter().enumerate() {
        a.as_object().ok_or_else(|| format!("seed.oauthApps[{i}]: expected an object"))?;
    }
    if w.viewer.is_empty() {
        let admin = w.all("User").find(|(_, u)| u.get("admin").and_then(Value::as_bool) == Some(true)).or_else(|| w.all("User").next()).map(|(id, _)| id.clone());
        w.viewer = admin.ok_or_else(|| "seed.users: at least one user is needed (the agent acts as one)".to_string())?;
    }
    // Raised limits, as Linear support grants them (a load test needs more than an hour's 5,000).
    if let Some(r) = top.get("rateLimits").filter(|v| !v.is_null()) {
        let p = "seed.rateLimits";
        let m = obj(r, p, &["requestsPerHour", "complexityPerHour"])?;
        let limit = |k: &str, default: i64| -> R<i64> {
            match number(m, k, p)? {
                None => Ok(default),
                Some(n) if n.fract() == 0.0 && (1.0..=crate::rate::MAX_RAISED as f64).contains(&n) => Ok(n as i64),
                Some(n) => Err(format!("{p}.{k}: expected a whole number from 1 to {}, got {n}", crate::rate::MAX_RAISED)),
            }
        };
        w.rate_limits = Some(crate::rate::Raised { requests: limit("requestsPerHour", 5_000)?, complexity: limit("complexityPerHour", 3_000_000)? });
    }
    w.seq = 0;
    w.clock = seed_clock;
    Ok(World(w))
}

fn initials(name: &str) -> String {
    name.split_whitespace().filter_map(|p| p.chars().next()).take(2).collect::<String>().to_uppercase()
}
