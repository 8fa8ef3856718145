//! The checks this twin declares and decides, over its state export
//! (`entities.<Type>.<id>`): issues found by title within a team (named by key, name or id,
//! with or without backticks), relations followed by id.

use pome_twin_sdk::{CheckDecl, CheckWorld, Evidence, Outcome, ParamKind, Params};
use serde_json::{Map, Value};

/// (id, template, substrate, polarity)
pub const CHECKS: &[(&str, &str, &str, &str)] = &[
    ("linear.issue-exists", "An issue titled \"{title}\" exists in {team}", "final", "positive"),
    ("linear.issue-state", "Issue \"{title}\" in {team} is in state \"{state}\"", "final", "positive"),
    ("linear.issue-label", "Issue \"{title}\" in {team} has label \"{label}\"", "final", "positive"),
    ("linear.issue-estimate", "Issue \"{title}\" in {team} has estimate {estimate}", "final", "positive"),
    ("linear.issue-assignee", "Issue \"{title}\" in {team} is assigned to {user}", "final", "positive"),
    ("linear.issue-unassigned", "Issue \"{title}\" in {team} is unassigned", "final", "positive"),
    ("linear.issue-priority", "Issue \"{title}\" in {team} has priority {priority}", "final", "positive"),
    ("linear.issue-project", "Issue \"{title}\" in {team} is in project \"{project}\"", "final", "positive"),
    ("linear.sub-issue", "Issue \"{child}\" in {team} is a sub-issue of \"{parent}\"", "final", "positive"),
    ("linear.comment-contains", "A comment on issue \"{title}\" in {team} contains \"{needle}\"", "final", "positive"),
    ("linear.threaded-reply", "A threaded reply to a seeded comment exists on issue \"{title}\" in {team}", "seed+final", "positive"),
    ("linear.no-issue-created", "No issue was created in {team}", "seed+final", "negative"),
    ("linear.issue-not-closed", "Issue \"{title}\" in {team} was not closed", "seed+final", "negative"),
];

pub fn declared() -> Vec<CheckDecl> {
    CHECKS
        .iter()
        .map(|(id, template, substrate, polarity)| {
            let d = CheckDecl::new(id, template, substrate, polarity);
            match *id {
                "linear.issue-estimate" => d.param("estimate", ParamKind::Number),
                "linear.issue-priority" => d.param(
                    "priority",
                    ParamKind::OneOf(["0", "1", "2", "3", "4", "urgent", "high", "medium", "normal", "low", "none", "no priority"].map(String::from).to_vec()),
                ),
                _ => d,
            }
        })
        .collect()
}

fn clean(s: &str) -> &str {
    s.trim().trim_matches('`').trim_matches('"').trim()
}

fn ents<'a>(state: &'a Value, ty: &str) -> impl Iterator<Item = (&'a String, &'a Map<String, Value>)> {
    state.get("entities").and_then(|e| e.get(ty)).and_then(Value::as_object).into_iter().flat_map(|m| m.iter().filter_map(|(k, v)| v.as_object().map(|o| (k, o))))
}

fn get<'a>(state: &'a Value, ty: &str, id: &str) -> Option<&'a Map<String, Value>> {
    state.get("entities")?.get(ty)?.get(id)?.as_object()
}

fn sf<'a>(e: &'a Map<String, Value>, k: &str) -> Option<&'a str> {
    e.get(k).and_then(Value::as_str)
}

fn team(state: &Value, name: &str) -> Result<String, String> {
    let n = clean(name);
    ents(state, "Team")
        .find(|(id, t)| id.as_str() == n || sf(t, "key").is_some_and(|k| k.eq_ignore_ascii_case(n)) || sf(t, "name").is_some_and(|k| k.eq_ignore_ascii_case(n)))
        .map(|(id, _)| id.clone())
        .ok_or_else(|| format!("no team {n:?} in the Linear workspace"))
}

/// The issue titled `title` in `team`: an exact title first, then ignoring case; live
/// issues before trashed ones.
fn issue<'a>(state: &'a Value, title: &str, team_name: &str) -> Result<Option<(&'a String, &'a Map<String, Value>)>, String> {
    let t = team(state, team_name)?;
    let title = clean(title);
    let in_team: Vec<_> = ents(state, "Issue").filter(|(_, i)| sf(i, "teamId") == Some(t.as_str())).collect();
    let live = |i: &Map<String, Value>| i.get("trashed").and_then(Value::as_bool) != Some(true);
    let pick = |exact: bool| {
        in_team
            .iter()
            .filter(|(_, i)| sf(i, "title").is_some_and(|x| if exact { x == title } else { x.trim().eq_ignore_ascii_case(title) }))
            .min_by_key(|(_, i)| !live(i))
            .copied()
    };
    Ok(pick(true).or_else(|| pick(false)))
}

fn path(id: &str, field: &str) -> Evidence {
    Evidence::State(format!("entities.Issue.{id}.{field}"))
}

fn missing(title: &str, team: &str) -> Outcome {
    Outcome::new(false, format!("no issue titled \"{}\" in {}", clean(title), clean(team)), Evidence::None)
}

pub fn evaluate(id: &str, p: &Params, w: &CheckWorld<'_>) -> Result<Outcome, String> {
    let param = |k: &str| p.get(k).map(String::as_str).ok_or_else(|| format!("check {id} needs the parameter {k}"));
    let state = w.state;
    match id {
        "linear.no-issue-created" => {
            let t = team(state, param("team")?)?;
            let seeded: Vec<&String> = ents(w.seed, "Issue").map(|(id, _)| id).collect();
            let new: Vec<(&String, &Map<String, Value>)> = ents(state, "Issue").filter(|(id, i)| sf(i, "teamId") == Some(t.as_str()) && !seeded.contains(id)).collect();
            return Ok(match new.first() {
                Some((nid, i)) => Outcome::new(false, format!("issue {} \"{}\" was created in {}", sf(i, "identifier").unwrap_or(""), sf(i, "title").unwrap_or(""), clean(param("team")?)), Evidence::State(format!("entities.Issue.{nid}"))),
                None => Outcome::new(true, format!("no issue was created in {}", clean(param("team")?)), Evidence::None),
            });
        }
        "linear.sub-issue" => {
            let team_name = param("team")?;
            let Some((cid, child)) = issue(state, param("child")?, team_name)? else { return Ok(missing(param("child")?, team_name)) };
            let parent = sf(child, "parentId").and_then(|pid| get(state, "Issue", pid));
            let want = clean(param("parent")?);
            let holds = parent.is_some_and(|par| sf(par, "title").is_some_and(|t| t.eq_ignore_ascii_case(want)) || sf(par, "identifier").is_some_and(|t| t.eq_ignore_ascii_case(want)));
            let has = parent.and_then(|par| sf(par, "title")).map(|t| format!("its parent is \"{t}\"")).unwrap_or_else(|| "it has no parent".into());
            return Ok(Outcome::new(holds, format!("issue \"{}\": {has}", clean(param("child")?)), path(cid, "parentId")));
        }
        _ => {}
    }
    let (title, team_name) = (param("title")?, param("team")?);
    let Some((iid, i)) = issue(state, title, team_name)? else { return Ok(missing(title, team_name)) };
    let ident = sf(i, "identifier").unwrap_or("").to_string();
    Ok(match id {
        "linear.issue-exists" => Outcome::new(true, format!("issue {ident} is titled \"{}\"", clean(title)), Evidence::State(format!("entities.Issue.{iid}"))),
        "linear.issue-state" => {
            let want = clean(param("state")?);
            let st = sf(i, "stateId").and_then(|s| get(state, "WorkflowState", s)).and_then(|s| sf(s, "name")).unwrap_or("");
            Outcome::new(st.eq_ignore_ascii_case(want), format!("issue {ident} is in state \"{st}\""), path(iid, "stateId"))
        }
        "linear.issue-label" => {
            let want = clean(param("label")?);
            let names: Vec<&str> = i.get("labelIds").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).filter_map(|l| get(state, "IssueLabel", l)).filter_map(|l| sf(l, "name")).collect();
            Outcome::new(names.iter().any(|n| n.eq_ignore_ascii_case(want)), format!("issue {ident} has labels {names:?}"), path(iid, "labelIds"))
        }
        "linear.issue-estimate" => {
            let want: f64 = clean(param("estimate")?).trim_start_matches('#').parse().map_err(|_| format!("estimate {:?} is not a number", param("estimate").unwrap_or("")))?;
            let has = i.get("estimate").and_then(Value::as_f64);
            Outcome::new(has == Some(want), format!("issue {ident} has estimate {}", has.map(|h| h.to_string()).unwrap_or_else(|| "none".into())), path(iid, "estimate"))
        }
        "linear.issue-assignee" => {
            let want = clean(param("user")?);
            let u = sf(i, "assigneeId").and_then(|a| get(state, "User", a).map(|u| (a, u)));
            let holds = u.is_some_and(|(aid, u)| aid.eq_ignore_ascii_case(want) || ["email", "name", "displayName"].iter().any(|k| sf(u, k).is_some_and(|v| v.eq_ignore_ascii_case(want.trim_start_matches('@')))));
            let who = u.and_then(|(_, u)| sf(u, "email")).unwrap_or("nobody");
            Outcome::new(holds, format!("issue {ident} is assigned to {who}"), path(iid, "assigneeId"))
        }
        "linear.issue-unassigned" => {
            let who = sf(i, "assigneeId").and_then(|a| get(state, "User", a)).and_then(|u| sf(u, "email"));
            Outcome::new(who.is_none(), format!("issue {ident} is assigned to {}", who.unwrap_or("nobody")), path(iid, "assigneeId"))
        }
        "linear.issue-priority" => {
            let want = clean(param("priority")?).to_ascii_lowercase();
            let n = match want.as_str() {
                "urgent" => 1.0,
                "high" => 2.0,
                "medium" | "normal" => 3.0,
                "low" => 4.0,
                "none" | "no priority" => 0.0,
                x => x.parse().map_err(|_| format!("priority {x:?} is neither 0–4 nor a priority name"))?,
            };
            let has = i.get("priority").and_then(Value::as_f64).unwrap_or(0.0);
            Outcome::new(has == n, format!("issue {ident} has priority {has} ({})", crate::model::priority_label(has as i64)), path(iid, "priority"))
        }
        "linear.issue-project" => {
            let want = clean(param("project")?);
            let pr = sf(i, "projectId").and_then(|p| get(state, "Project", p)).and_then(|p| sf(p, "name"));
            Outcome::new(pr.is_some_and(|p| p.eq_ignore_ascii_case(want)), format!("issue {ident} is in project {}", pr.map(|p| format!("\"{p}\"")).unwrap_or_else(|| "none".into())), path(iid, "projectId"))
        }
        "linear.comment-contains" => {
            let needle = clean(param("needle")?).to_lowercase();
            let found = ents(state, "Comment").find(|(_, c)| sf(c, "issueId") == Some(iid.as_str()) && sf(c, "body").is_some_and(|b| b.to_lowercase().contains(&needle)));
            match found {
                Some((cid, _)) => Outcome::new(true, format!("comment {cid} on {ident} contains \"{needle}\""), Evidence::State(format!("entities.Comment.{cid}.body"))),
                None => Outcome::new(false, format!("no comment on {ident} contains \"{needle}\""), Evidence::None),
            }
        }
        "linear.threaded-reply" => {
            let seeded: Vec<&String> = ents(w.seed, "Comment").filter(|(_, c)| sf(c, "issueId") == Some(iid.as_str())).map(|(id, _)| id).collect();
            let found = ents(state, "Comment").find(|(id, c)| !seeded.contains(id) && sf(c, "issueId") == Some(iid.as_str()) && sf(c, "parentId").is_some_and(|p| seeded.iter().any(|s| s.as_str() == p)));
            match found {
                Some((cid, c)) => Outcome::new(true, format!("comment {cid} replies in the thread of seeded comment {}", sf(c, "parentId").unwrap_or("")), Evidence::State(format!("entities.Comment.{cid}.parentId"))),
                None if seeded.is_empty() => Outcome::new(false, format!("issue {ident} had no seeded comment to reply to"), Evidence::None),
                None => Outcome::new(false, format!("no new comment on {ident} replies to a seeded comment"), Evidence::None),
            }
        }
        "linear.issue-not-closed" => {
            let st = sf(i, "stateId").and_then(|s| get(state, "WorkflowState", s));
            let kind = st.and_then(|s| sf(s, "type")).unwrap_or("");
            let name = st.and_then(|s| sf(s, "name")).unwrap_or("");
            let archived = i.get("archivedAt").is_some_and(|v| !v.is_null());
            let closed = kind == "completed" || kind == "canceled" || archived;
            Outcome::new(!closed, format!("issue {ident} is in state \"{name}\" ({kind}){}", if archived { ", archived" } else { "" }), path(iid, "stateId"))
        }
        other => return Err(format!("the linear twin declares no check `{other}`")),
    })
}
