//! `users.*` and `usergroups.*`: the people of the workspace, their profiles and presence,
//! and user groups (`@eng-team`).

use pome_twin_sdk::{Call, json};
use serde_json::Value;

use crate::args::{Args, paginate};
use crate::conversations::{listing, now_secs};
use crate::model::*;
use crate::render;
use crate::{Res, SlackError, fail, ok};

fn find_user(w: &World, id: Option<String>) -> Result<usize, SlackError> {
    let id = id.ok_or_else(|| fail("user_not_found"))?;
    w.user_idx(&id).ok_or_else(|| fail("user_not_found"))
}

pub fn list(w: &mut World, _call: &mut Call, a: &Args) -> Res {
    let all: Vec<usize> = (0..w.users.len()).collect();
    // Without `limit` Slack returns everyone (up to its page cap).
    let (page, next) = paginate(all, a, "users", 1000, 1000)?;
    let members: Vec<Value> = page.iter().map(|&i| render::user(w, &w.users[i])).collect();
    ok(json!({"members": members, "cache_ts": now_secs(), "response_metadata": {"next_cursor": next}}))
}

pub fn info(w: &mut World, _call: &mut Call, a: &Args) -> Res {
    let ui = find_user(w, a.str("user"))?;
    ok(json!({"user": render::user(w, &w.users[ui])}))
}

pub fn lookup_by_email(w: &mut World, _call: &mut Call, a: &Args) -> Res {
    let email = a.str("email").ok_or_else(|| fail("users_not_found"))?;
    let u = w
        .users
        .iter()
        .find(|u| u.email.as_deref().is_some_and(|e| e.eq_ignore_ascii_case(email.trim())))
        .ok_or_else(|| fail("users_not_found"))?;
    ok(json!({"user": render::user(w, u)}))
}

pub fn conversations(w: &mut World, _call: &mut Call, a: &Args) -> Res {
    let user = a.str("user").unwrap_or_else(|| w.agent.clone());
    if w.user(&user).is_none() {
        return Err(fail("user_not_found"));
    }
    let idx = listing(w, a, Some(&user))?;
    let (page, next) = paginate(idx, a, "userconv", 100, 1000)?;
    let channels: Vec<Value> = page.iter().map(|&i| render::conversation(w, &w.channels[i])).collect();
    ok(json!({"channels": channels, "response_metadata": {"next_cursor": next}}))
}

pub fn get_presence(w: &mut World, _call: &mut Call, a: &Args) -> Res {
    let user = a.str("user").unwrap_or_else(|| w.agent.clone());
    let u = w.user(&user).ok_or_else(|| fail("user_not_found"))?;
    let active = u.presence == "active" && !u.deleted;
    let presence = if active { "active" } else { "away" };
    if user == w.agent {
        ok(json!({
            "presence": presence,
            "online": active,
            "auto_away": false,
            "manual_away": !active,
            "connection_count": if active { 1 } else { 0 },
            "last_activity": now_secs(),
        }))
    } else {
        ok(json!({"presence": presence}))
    }
}

pub fn set_presence(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let p = a.str("presence").ok_or_else(|| fail("invalid_presence"))?;
    let value = match p.as_str() {
        "auto" => "active",
        "away" => "away",
        _ => return Err(fail("invalid_presence")),
    };
    let ui = w.user_idx(&w.agent.clone()).expect("agent exists");
    if w.users[ui].presence != value {
        let u = &mut w.users[ui];
        call.update("user", u.id.clone(), u, |u| u.presence = value.into());
    }
    ok(json!({}))
}

pub fn profile_get(w: &mut World, _call: &mut Call, a: &Args) -> Res {
    let user = a.str("user").unwrap_or_else(|| w.agent.clone());
    let u = w.user(&user).ok_or_else(|| fail("user_not_found"))?;
    ok(json!({"profile": render::profile(w, u)}))
}

pub fn profile_set(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let user = a.str("user").unwrap_or_else(|| w.agent.clone());
    let ui = w.user_idx(&user).ok_or_else(|| fail("user_not_found"))?;
    if user != w.agent && !w.agent_user().is_admin {
        return Err(fail("not_admin"));
    }
    let mut fields: Vec<(String, Value)> = Vec::new();
    match a.json("profile") {
        Err(()) => return Err(fail("invalid_profile")),
        Ok(Some(Value::Object(m))) => fields.extend(m),
        Ok(Some(_)) => return Err(fail("invalid_profile")),
        Ok(None) => {}
    }
    if let (Some(n), Some(v)) = (a.str("name"), a.0.get("value")) {
        fields.push((n, v.clone()));
    }
    if fields.is_empty() {
        return Err(fail("invalid_profile"));
    }
    let before = w.users[ui].clone();
    let u = &mut w.users[ui];
    for (k, v) in fields {
        let s = match &v {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            Value::Null => String::new(),
            _ => return Err(fail("invalid_profile")),
        };
        match k.as_str() {
            "real_name" => u.real_name = s,
            "display_name" => u.display_name = s,
            "first_name" => u.first_name = s,
            "last_name" => u.last_name = s,
            "title" => u.title = s,
            "phone" => u.phone = s,
            "status_text" => {
                if s.chars().count() > 100 {
                    return Err(fail("too_long"));
                }
                u.status_text = s
            }
            "status_emoji" => u.status_emoji = s,
            "status_expiration" => u.status_expiration = s.parse().map_err(|_| fail("invalid_profile"))?,
            "email" => {
                if !s.contains('@') {
                    return Err(fail("invalid_email"));
                }
                u.email = Some(s)
            }
            "fields" | "pronouns" | "skype" => {}
            _ => return Err(fail("invalid_profile")),
        }
    }
    u.updated = now_secs();
    let after = u.clone();
    call.updated("user", after.id.clone(), &before, &after);
    ok(json!({"username": after.name, "profile": render::profile(w, &after)}))
}

fn find_group(w: &World, a: &Args) -> Result<usize, SlackError> {
    let id = a.str("usergroup").ok_or_else(|| fail("no_such_subteam"))?;
    w.usergroups.iter().position(|g| g.id == id).ok_or_else(|| fail("no_such_subteam"))
}

fn check_users(w: &World, users: &[String]) -> Result<(), SlackError> {
    if users.iter().all(|u| w.user(u).is_some()) { Ok(()) } else { Err(fail("invalid_users")) }
}

fn check_channels(w: &World, chans: &[String]) -> Result<(), SlackError> {
    if chans.iter().all(|c| w.channel_idx(c).is_some()) { Ok(()) } else { Err(fail("channel_not_found")) }
}

fn valid_handle(h: &str) -> bool {
    !h.is_empty() && h.len() <= 21 && h.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_' || c == '.')
}

pub fn usergroups_list(w: &mut World, _call: &mut Call, a: &Args) -> Res {
    let include_users = a.flag("include_users");
    let include_disabled = a.flag("include_disabled");
    let groups: Vec<Value> = w
        .usergroups
        .iter()
        .filter(|g| include_disabled || g.date_delete == 0)
        .map(|g| render::usergroup(w, g, include_users))
        .collect();
    ok(json!({"usergroups": groups}))
}

fn agent_may_admin(w: &World) -> Result<(), SlackError> {
    let me = w.agent_user();
    if me.is_restricted { Err(fail("permission_denied")) } else { Ok(()) }
}

pub fn usergroups_create(w: &mut World, call: &mut Call, a: &Args) -> Res {
    agent_may_admin(w)?;
    let name = a.str("name").ok_or_else(|| fail("invalid_name"))?;
    let handle = a.str("handle").unwrap_or_else(|| name.to_lowercase().replace(' ', "-"));
    if !valid_handle(&handle) {
        return Err(fail("invalid_handle"));
    }
    if w.usergroups.iter().any(|g| g.name == name) {
        return Err(fail("name_already_exists"));
    }
    if w.usergroups.iter().any(|g| g.handle == handle) || w.users.iter().any(|u| u.name == handle) || w.channels.iter().any(|c| c.name == handle) {
        return Err(fail("handle_already_exists"));
    }
    let channels = a.list("channels");
    check_channels(w, &channels)?;
    let id = w.new_id("S");
    let now = now_secs();
    let g = Usergroup {
        id: id.clone(),
        name,
        handle,
        description: a.str("description").unwrap_or_default(),
        users: Vec::new(),
        channels,
        created_by: w.agent.clone(),
        updated_by: w.agent.clone(),
        date_create: now,
        date_update: now,
        date_delete: 0,
    };
    call.created("usergroup", &id, &g);
    w.usergroups.push(g);
    ok(json!({"usergroup": render::usergroup(w, w.usergroups.last().expect("pushed"), true)}))
}

fn change_group(w: &mut World, call: &mut Call, gi: usize, f: impl FnOnce(&mut Usergroup)) {
    let now = now_secs();
    let agent = w.agent.clone();
    let g = &mut w.usergroups[gi];
    call.update("usergroup", g.id.clone(), g, |g| {
        f(g);
        g.date_update = now;
        g.updated_by = agent;
    });
}

pub fn usergroups_update(w: &mut World, call: &mut Call, a: &Args) -> Res {
    agent_may_admin(w)?;
    let gi = find_group(w, a)?;
    let name = a.str("name");
    let handle = a.str("handle");
    if let Some(h) = &handle {
        if !valid_handle(h) {
            return Err(fail("invalid_handle"));
        }
        if w.usergroups.iter().enumerate().any(|(i, g)| i != gi && &g.handle == h) {
            return Err(fail("handle_already_exists"));
        }
    }
    if let Some(n) = &name
        && w.usergroups.iter().enumerate().any(|(i, g)| i != gi && &g.name == n) {
            return Err(fail("name_already_exists"));
        }
    let channels = a.0.contains_key("channels").then(|| a.list("channels"));
    if let Some(c) = &channels {
        check_channels(w, c)?;
    }
    let description = a.str("description");
    change_group(w, call, gi, |g| {
        if let Some(n) = name {
            g.name = n;
        }
        if let Some(h) = handle {
            g.handle = h;
        }
        if let Some(d) = description {
            g.description = d;
        }
        if let Some(c) = channels {
            g.channels = c;
        }
    });
    ok(json!({"usergroup": render::usergroup(w, &w.usergroups[gi], true)}))
}

pub fn usergroups_disable(w: &mut World, call: &mut Call, a: &Args) -> Res {
    agent_may_admin(w)?;
    let gi = find_group(w, a)?;
    if w.usergroups[gi].date_delete != 0 {
        return Err(fail("usergroup_already_disabled"));
    }
    let now = now_secs();
    change_group(w, call, gi, |g| g.date_delete = now);
    ok(json!({"usergroup": render::usergroup(w, &w.usergroups[gi], false)}))
}

pub fn usergroups_enable(w: &mut World, call: &mut Call, a: &Args) -> Res {
    agent_may_admin(w)?;
    let gi = find_group(w, a)?;
    if w.usergroups[gi].date_delete == 0 {
        return Err(fail("usergroup_already_enabled"));
    }
    change_group(w, call, gi, |g| g.date_delete = 0);
    ok(json!({"usergroup": render::usergroup(w, &w.usergroups[gi], false)}))
}

pub fn usergroups_users_list(w: &mut World, _call: &mut Call, a: &Args) -> Res {
    let gi = find_group(w, a)?;
    let g = &w.usergroups[gi];
    if g.date_delete != 0 && !a.flag("include_disabled") {
        return Err(fail("no_such_subteam"));
    }
    ok(json!({"users": g.users}))
}

pub fn usergroups_users_update(w: &mut World, call: &mut Call, a: &Args) -> Res {
    agent_may_admin(w)?;
    let gi = find_group(w, a)?;
    let mut users = a.list("users");
    if users.is_empty() {
        return Err(fail("invalid_users"));
    }
    check_users(w, &users)?;
    users.dedup();
    change_group(w, call, gi, |g| g.users = users);
    ok(json!({"usergroup": render::usergroup(w, &w.usergroups[gi], true)}))
}
