//! `conversations.*`: channels, private channels, DMs and group DMs, their membership,
//! history and threads. Also the helpers every method family uses to find a conversation
//! the way Slack does (ids only, except where Slack accepts names) and to enforce who may see
//! and write what.

use pome_twin_sdk::{Call, json, time};
use serde_json::Value;

use crate::args::{Args, cursor, paginate, read_cursor};
use crate::model::*;
use crate::render::{self, Threads, View};
use crate::{Res, SlackError, fail, ok};

pub fn now_micros() -> i64 {
    time::now().timestamp_micros()
}

pub fn now_secs() -> i64 {
    time::now_unix()
}

/// A conversation by id that the agent can see; anything else is `channel_not_found`.
pub fn find(w: &World, id: Option<String>) -> Result<usize, SlackError> {
    let id = id.ok_or_else(|| fail("channel_not_found"))?;
    w.channel_idx(&id).filter(|&i| w.visible(&w.channels[i])).ok_or_else(|| fail("channel_not_found"))
}

/// Where a message goes, as `chat.postMessage` reads `channel`: an id, `#name` or `name`, or
/// a user id (the DM with that user, opened if need be).
pub fn find_target(w: &mut World, call: &mut Call, arg: Option<String>) -> Result<usize, SlackError> {
    let arg = arg.ok_or_else(|| fail("channel_not_found"))?;
    if let Some(i) = w.channel_idx(&arg) {
        return if w.visible(&w.channels[i]) { Ok(i) } else { Err(fail("channel_not_found")) };
    }
    if w.user(&arg).is_some() && (arg.starts_with('U') || arg.starts_with('W')) {
        return Ok(open_im(w, call, &arg).0);
    }
    let name = arg.strip_prefix('#').unwrap_or(&arg);
    w.channels
        .iter()
        .position(|c| !c.is_im() && c.name == name && w.visible(c))
        .ok_or_else(|| fail("channel_not_found"))
}

/// Reading history: bots only read conversations they are in; people read any public one.
pub fn check_readable(w: &World, ci: usize) -> Result<(), SlackError> {
    let c = &w.channels[ci];
    if !c.has_member(&w.agent) && w.agent_user().is_bot {
        return Err(fail("not_in_channel"));
    }
    Ok(())
}

/// Writing: the agent must be in the conversation and it must not be archived.
pub fn check_writable(w: &World, ci: usize) -> Result<(), SlackError> {
    let c = &w.channels[ci];
    if c.is_archived {
        return Err(fail("is_archived"));
    }
    if !c.has_member(&w.agent) {
        return Err(fail("not_in_channel"));
    }
    Ok(())
}

/// The channel as the tape records it (without its messages).
pub fn channel_entity(c: &Channel) -> Value {
    json!({
        "id": c.id, "name": c.name, "kind": c.kind, "is_private": c.is_private,
        "is_archived": c.is_archived, "creator": c.creator, "topic": c.topic.value,
        "purpose": c.purpose.value, "members": c.members,
    })
}

pub fn message_entity(cid: &str, m: &Message) -> Value {
    let mut v = serde_json::to_value(m).expect("messages serialise");
    v["channel"] = json!(cid);
    v
}

pub fn message_id(cid: &str, ts: &str) -> String {
    format!("{cid}/{ts}")
}

/// Post a system message (`channel_join`, `channel_topic`, ...) as `user`.
pub fn system_message(w: &mut World, call: &mut Call, ci: usize, user: &str, subtype: &str, text: String) {
    let now = now_micros();
    let c = &mut w.channels[ci];
    let ts = c.next_ts(now);
    let m = Message { ts: ts.clone(), user: user.to_string(), text, subtype: Some(subtype.into()), ..Message::default() };
    call.created("message", message_id(&c.id, &ts), &message_entity(&c.id, &m));
    c.insert_message(m);
}

fn update_channel(w: &mut World, call: &mut Call, ci: usize, f: impl FnOnce(&mut Channel)) {
    let before = channel_entity(&w.channels[ci]);
    f(&mut w.channels[ci]);
    let after = channel_entity(&w.channels[ci]);
    call.updated("channel", w.channels[ci].id.clone(), &before, &after);
}

fn conv_with_count(w: &World, c: &Channel) -> Value {
    let mut v = render::conversation(w, c);
    if !c.is_im() {
        v["num_members"] = json!(c.members.len());
    }
    v
}

fn parse_types(a: &Args) -> Result<Vec<Kind>, SlackError> {
    let raw = a.list("types");
    if raw.is_empty() {
        return Ok(vec![Kind::Public]);
    }
    raw.iter()
        .map(|t| match t.as_str() {
            "public_channel" => Ok(Kind::Public),
            "private_channel" => Ok(Kind::Private),
            "im" => Ok(Kind::Im),
            "mpim" => Ok(Kind::Mpim),
            _ => Err(fail("invalid_types")),
        })
        .collect()
}

/// Conversations of `kinds` the agent can see, optionally only those `member` is in.
pub fn listing(w: &World, a: &Args, member: Option<&str>) -> Result<Vec<usize>, SlackError> {
    let kinds = parse_types(a)?;
    let exclude_archived = a.flag("exclude_archived");
    Ok((0..w.channels.len())
        .filter(|&i| {
            let c = &w.channels[i];
            kinds.contains(&c.kind)
                && w.visible(c)
                && !(exclude_archived && c.is_archived)
                && member.is_none_or(|u| c.has_member(u))
        })
        .collect())
}

pub fn list(w: &mut World, _call: &mut Call, a: &Args) -> Res {
    let idx = listing(w, a, None)?;
    let (page, next) = paginate(idx, a, "list", 100, 1000)?;
    let channels: Vec<Value> = page.iter().map(|&i| conv_with_count(w, &w.channels[i])).collect();
    ok(json!({"channels": channels, "response_metadata": {"next_cursor": next}}))
}

pub fn info(w: &mut World, _call: &mut Call, a: &Args) -> Res {
    let ci = find(w, a.str("channel"))?;
    let c = &w.channels[ci];
    let mut v = render::conversation(w, c);
    if a.flag("include_num_members") && !c.is_im() {
        v["num_members"] = json!(c.members.len());
    }
    if !c.last_read.is_empty() {
        v["last_read"] = json!(c.last_read);
    }
    ok(json!({"channel": v}))
}

pub fn create(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let name = a.str("name").ok_or_else(|| fail("invalid_name_required"))?;
    valid_channel_name(&name).map_err(fail)?;
    if w.channels.iter().any(|c| !c.is_im() && c.name == name) {
        return Err(fail("name_taken"));
    }
    let is_private = a.flag("is_private");
    let id = w.new_id("C");
    let now = now_secs();
    let agent = w.agent.clone();
    let ch = Channel {
        id: id.clone(),
        name,
        kind: if is_private { Kind::Private } else { Kind::Public },
        is_private,
        created: now,
        creator: agent.clone(),
        members: vec![agent.clone()],
        ..Channel::default()
    };
    call.created("channel", &id, &channel_entity(&ch));
    w.channels.push(ch);
    let ci = w.channels.len() - 1;
    system_message(w, call, ci, &agent, "channel_join", format!("<@{agent}> has joined the channel"));
    ok(json!({"channel": conv_with_count(w, &w.channels[ci])}))
}

fn ts_bound(a: &Args, key: &str, code: &str) -> Result<Option<i64>, SlackError> {
    match a.str(key) {
        None => Ok(None),
        Some(s) => ts_micros(&s).map(Some).ok_or_else(|| fail(code)),
    }
}

pub fn history(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let ci = find(w, a.str("channel"))?;
    check_readable(w, ci)?;
    let latest = ts_bound(a, "latest", "invalid_ts_latest")?;
    let oldest = ts_bound(a, "oldest", "invalid_ts_oldest")?.unwrap_or(0);
    let inclusive = a.flag("inclusive");
    let below = match read_cursor(a, "next_ts")? {
        Some(p) => Some(p.parse::<i64>().map_err(|_| fail("invalid_cursor"))?),
        None => None,
    };
    let limit = a.limit(100, 999);
    let c = &w.channels[ci];
    let threads = Threads::of(c);
    let mut picked = Vec::new();
    let mut has_more = false;
    for m in c.messages.iter().rev().filter(|m| m.in_history()) {
        let t = ts_micros(&m.ts).unwrap_or(0);
        let under_latest = match latest {
            Some(l) => t < l || (inclusive && t == l),
            None => true,
        };
        let over_oldest = t > oldest || (inclusive && t == oldest);
        if !under_latest || !over_oldest || below.is_some_and(|b| t >= b) {
            continue;
        }
        if picked.len() == limit {
            has_more = true;
            break;
        }
        picked.push(m);
    }
    let base = call.req.base_url.clone();
    let messages: Vec<Value> = picked.iter().map(|m| render::message(w, &base, c, m, &threads, View::Plain)).collect();
    let mut out = json!({
        "messages": messages,
        "has_more": has_more,
        "pin_count": c.pins.len(),
        "channel_actions_ts": null,
        "channel_actions_count": 0,
    });
    if has_more {
        let last = picked.last().map(|m| ts_micros(&m.ts).unwrap_or(0)).unwrap_or(0);
        out["response_metadata"] = json!({"next_cursor": cursor("next_ts", last)});
    }
    ok(out)
}

pub fn replies(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let ci = find(w, a.str("channel"))?;
    check_readable(w, ci)?;
    let ts = a.str("ts").ok_or_else(|| fail("thread_not_found"))?;
    let c = &w.channels[ci];
    let mi = c.message(&ts).ok_or_else(|| fail("thread_not_found"))?;
    let parent_ts = c.messages[mi].thread_ts.clone().unwrap_or_else(|| ts.clone());
    let pi = c.message(&parent_ts).ok_or_else(|| fail("thread_not_found"))?;
    let latest = ts_bound(a, "latest", "invalid_ts_latest")?;
    let oldest = ts_bound(a, "oldest", "invalid_ts_oldest")?.unwrap_or(0);
    let inclusive = a.flag("inclusive");
    let after = match read_cursor(a, "next_ts")? {
        Some(p) => Some(p.parse::<i64>().map_err(|_| fail("invalid_cursor"))?),
        None => None,
    };
    let limit = a.limit(1000, 1000);
    let threads = Threads::of(c);
    let base = call.req.base_url.clone();
    let mut messages = Vec::new();
    if after.is_none() {
        messages.push(render::message(w, &base, c, &c.messages[pi], &threads, View::ThreadParent));
    }
    let mut last = 0;
    let mut has_more = false;
    for m in c.messages.iter().filter(|m| m.is_reply() && m.thread_ts.as_deref() == Some(parent_ts.as_str())) {
        let t = ts_micros(&m.ts).unwrap_or(0);
        let ok_latest = latest.is_none_or(|l| t < l || (inclusive && t == l));
        let ok_oldest = t > oldest || (inclusive && t == oldest);
        if !ok_latest || !ok_oldest || after.is_some_and(|x| t <= x) {
            continue;
        }
        if messages.len() >= limit {
            has_more = true;
            break;
        }
        last = t;
        messages.push(render::message(w, &base, c, m, &threads, View::Plain));
    }
    let mut out = json!({"messages": messages, "has_more": has_more});
    if has_more {
        out["response_metadata"] = json!({"next_cursor": cursor("next_ts", last)});
    }
    ok(out)
}

pub fn invite(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let ci = find(w, a.str("channel"))?;
    if w.channels[ci].is_im() {
        return Err(fail("method_not_supported_for_channel_type"));
    }
    let users = a.list("users");
    if users.is_empty() {
        return Err(fail("no_user"));
    }
    check_writable(w, ci)?;
    for u in &users {
        let Some(user) = w.user(u) else { return Err(fail("user_not_found")) };
        if user.deleted {
            return Err(fail("user_is_deactivated"));
        }
        if *u == w.agent {
            return Err(fail("cant_invite_self"));
        }
        if w.channels[ci].has_member(u) {
            return Err(fail("already_in_channel"));
        }
    }
    let agent = w.agent.clone();
    update_channel(w, call, ci, |c| c.members.extend(users.iter().cloned()));
    for u in &users {
        system_message(w, call, ci, u, "channel_join", format!("<@{u}> has joined the channel"));
    }
    let _ = agent;
    ok(json!({"channel": render::conversation(w, &w.channels[ci])}))
}

pub fn join(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let ci = find(w, a.str("channel"))?;
    let c = &w.channels[ci];
    if c.is_restricted() {
        return Err(fail("method_not_supported_for_channel_type"));
    }
    if c.is_archived {
        return Err(fail("is_archived"));
    }
    if c.has_member(&w.agent) {
        let mut out = serde_json::Map::new();
        out.insert("channel".into(), render::conversation(w, c));
        crate::add_warning(&mut out, "already_in_channel");
        return Ok(out);
    }
    let agent = w.agent.clone();
    update_channel(w, call, ci, |c| c.members.push(agent.clone()));
    system_message(w, call, ci, &agent, "channel_join", format!("<@{agent}> has joined the channel"));
    ok(json!({"channel": render::conversation(w, &w.channels[ci])}))
}

pub fn leave(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let ci = find(w, a.str("channel"))?;
    let c = &w.channels[ci];
    if c.is_im() {
        return Err(fail("method_not_supported_for_channel_type"));
    }
    if c.is_general {
        return Err(fail("cant_leave_general"));
    }
    if c.is_archived {
        return Err(fail("is_archived"));
    }
    if !c.has_member(&w.agent) {
        return ok(json!({"not_in_channel": true}));
    }
    if c.is_private && c.members.len() == 1 {
        return Err(fail("last_member"));
    }
    let agent = w.agent.clone();
    system_message(w, call, ci, &agent, "channel_leave", format!("<@{agent}> has left the channel"));
    update_channel(w, call, ci, |c| c.members.retain(|m| *m != agent));
    ok(json!({}))
}

pub fn kick(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let ci = find(w, a.str("channel"))?;
    let c = &w.channels[ci];
    if c.is_im() {
        return Err(fail("method_not_supported_for_channel_type"));
    }
    let user = a.str("user").ok_or_else(|| fail("user_not_found"))?;
    if w.user(&user).is_none() {
        return Err(fail("user_not_found"));
    }
    if user == w.agent {
        return Err(fail("cant_kick_self"));
    }
    if c.is_general {
        return Err(fail("cant_kick_from_general"));
    }
    if !c.has_member(&w.agent) || !c.has_member(&user) {
        return Err(fail("not_in_channel"));
    }
    update_channel(w, call, ci, |c| c.members.retain(|m| *m != user));
    ok(json!({}))
}

pub fn archive(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let ci = find(w, a.str("channel"))?;
    let c = &w.channels[ci];
    if c.is_im() || c.is_mpim() {
        return Err(fail("method_not_supported_for_channel_type"));
    }
    if c.is_general {
        return Err(fail("cant_archive_general"));
    }
    if c.is_archived {
        return Err(fail("already_archived"));
    }
    if !c.has_member(&w.agent) {
        return Err(fail("not_in_channel"));
    }
    let agent = w.agent.clone();
    system_message(w, call, ci, &agent, "channel_archive", format!("<@{agent}> archived the channel"));
    update_channel(w, call, ci, |c| c.is_archived = true);
    ok(json!({}))
}

pub fn unarchive(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let ci = find(w, a.str("channel"))?;
    let c = &w.channels[ci];
    if c.is_im() || c.is_mpim() {
        return Err(fail("method_not_supported_for_channel_type"));
    }
    if !c.is_archived {
        return Err(fail("not_archived"));
    }
    let agent = w.agent.clone();
    update_channel(w, call, ci, |c| {
        c.is_archived = false;
        if !c.members.contains(&agent) {
            c.members.push(agent.clone());
        }
    });
    system_message(w, call, ci, &agent, "channel_unarchive", format!("<@{agent}> un-archived the channel"));
    ok(json!({}))
}

pub fn rename(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let ci = find(w, a.str("channel"))?;
    let c = &w.channels[ci];
    if c.is_im() || c.is_mpim() {
        return Err(fail("method_not_supported_for_channel_type"));
    }
    let name = a.str("name").ok_or_else(|| fail("invalid_name_required"))?;
    if !c.has_member(&w.agent) {
        return Err(fail("not_in_channel"));
    }
    let me = w.agent_user();
    if c.creator != w.agent && !me.is_admin && !me.is_owner {
        return Err(fail("not_authorized"));
    }
    valid_channel_name(&name).map_err(fail)?;
    if w.channels.iter().enumerate().any(|(i, x)| i != ci && !x.is_im() && x.name == name) {
        return Err(fail("name_taken"));
    }
    let old = c.name.clone();
    if old == name {
        return ok(json!({"channel": render::conversation(w, c)}));
    }
    update_channel(w, call, ci, |c| {
        c.previous_names.insert(0, old.clone());
        c.name = name.clone();
    });
    let agent = w.agent.clone();
    system_message(w, call, ci, &agent, "channel_name", format!("<@{agent}> renamed the channel from \"{old}\" to \"{name}\""));
    ok(json!({"channel": render::conversation(w, &w.channels[ci])}))
}

pub fn members(w: &mut World, _call: &mut Call, a: &Args) -> Res {
    let ci = find(w, a.str("channel"))?;
    let list = w.channels[ci].members.clone();
    let (page, next) = paginate(list, a, "members", 100, 1000)?;
    ok(json!({"members": page, "response_metadata": {"next_cursor": next}}))
}

/// The agent's DM with `user`, created if it does not exist yet: (index, existed before).
pub fn open_im(w: &mut World, call: &mut Call, user: &str) -> (usize, bool) {
    let agent = w.agent.clone();
    let want: Vec<String> = if user == agent { vec![agent.clone()] } else { vec![agent.clone(), user.to_string()] };
    if let Some(i) = w.channels.iter().position(|c| {
        c.is_im() && c.members.len() == want.len() && want.iter().all(|u| c.has_member(u))
    }) {
        return (i, true);
    }
    let id = w.new_id("D");
    let name = w.dm_name(Kind::Im, &want);
    let ch = Channel {
        id: id.clone(),
        name,
        kind: Kind::Im,
        created: now_secs(),
        creator: agent,
        members: want,
        is_open: true,
        ..Channel::default()
    };
    call.created("channel", &id, &channel_entity(&ch));
    w.channels.push(ch);
    (w.channels.len() - 1, false)
}

pub fn open(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let return_im = a.flag("return_im");
    let (ci, existed) = if let Some(id) = a.str("channel") {
        let ci = find(w, Some(id))?;
        if !matches!(w.channels[ci].kind, Kind::Im | Kind::Mpim) {
            return Err(fail("method_not_supported_for_channel_type"));
        }
        (ci, true)
    } else {
        let mut users = a.list("users");
        if users.is_empty() {
            return Err(fail("users_list_not_supplied"));
        }
        let mut seen = Vec::new();
        users.retain(|u| {
            let fresh = !seen.contains(u);
            seen.push(u.clone());
            fresh
        });
        if users.len() > 8 {
            return Err(fail("too_many_users"));
        }
        for u in &users {
            match w.user(u) {
                None => return Err(fail("user_not_found")),
                Some(x) if x.deleted => return Err(fail("user_disabled")),
                _ => {}
            }
        }
        let others: Vec<String> = users.iter().filter(|u| **u != w.agent).cloned().collect();
        if others.len() <= 1 {
            let target = others.first().cloned().unwrap_or_else(|| w.agent.clone());
            open_im(w, call, &target)
        } else {
            let mut members = vec![w.agent.clone()];
            members.extend(others);
            match w.channels.iter().position(|c| {
                c.is_mpim() && c.members.len() == members.len() && members.iter().all(|u| c.has_member(u))
            }) {
                Some(i) => (i, true),
                None => {
                    let id = w.new_id("C");
                    let name = w.dm_name(Kind::Mpim, &members);
                    let ch = Channel {
                        id: id.clone(),
                        name,
                        kind: Kind::Mpim,
                        is_private: true,
                        created: now_secs(),
                        creator: w.agent.clone(),
                        members,
                        is_open: true,
                        ..Channel::default()
                    };
                    call.created("channel", &id, &channel_entity(&ch));
                    w.channels.push(ch);
                    (w.channels.len() - 1, false)
                }
            }
        }
    };
    let was_open = w.channels[ci].is_open;
    if !was_open {
        update_channel(w, call, ci, |c| c.is_open = true);
    }
    let c = &w.channels[ci];
    let channel = if return_im { render::conversation(w, c) } else { json!({"id": c.id}) };
    if existed && was_open {
        ok(json!({"no_op": true, "already_open": true, "channel": channel}))
    } else {
        ok(json!({"channel": channel}))
    }
}

pub fn close(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let ci = find(w, a.str("channel"))?;
    if !matches!(w.channels[ci].kind, Kind::Im | Kind::Mpim) {
        return Err(fail("method_not_supported_for_channel_type"));
    }
    if !w.channels[ci].is_open {
        return ok(json!({"no_op": true, "already_closed": true}));
    }
    update_channel(w, call, ci, |c| c.is_open = false);
    ok(json!({}))
}

fn set_topic_or_purpose(w: &mut World, call: &mut Call, a: &Args, purpose: bool) -> Res {
    let ci = find(w, a.str("channel"))?;
    if w.channels[ci].is_im() {
        return Err(fail("method_not_supported_for_channel_type"));
    }
    let value = a.str(if purpose { "purpose" } else { "topic" }).unwrap_or_default();
    if value.chars().count() > 250 {
        return Err(fail("too_long"));
    }
    check_writable(w, ci)?;
    let agent = w.agent.clone();
    let now = now_secs();
    update_channel(w, call, ci, |c| {
        let t = Topic { value: value.clone(), creator: agent.clone(), last_set: now };
        if purpose { c.purpose = t } else { c.topic = t }
    });
    let (sub, what) = if purpose { ("channel_purpose", "purpose") } else { ("channel_topic", "topic") };
    let text = if value.is_empty() {
        format!("<@{agent}> cleared the channel {what}")
    } else {
        format!("<@{agent}> set the channel {what}: {value}")
    };
    system_message(w, call, ci, &agent, sub, text);
    ok(json!({"channel": render::conversation(w, &w.channels[ci])}))
}

pub fn set_topic(w: &mut World, call: &mut Call, a: &Args) -> Res {
    set_topic_or_purpose(w, call, a, false)
}

pub fn set_purpose(w: &mut World, call: &mut Call, a: &Args) -> Res {
    set_topic_or_purpose(w, call, a, true)
}

pub fn mark(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let ci = find(w, a.str("channel"))?;
    let ts = a.str("ts").ok_or_else(|| fail("invalid_timestamp"))?;
    if ts_micros(&ts).is_none() {
        return Err(fail("invalid_timestamp"));
    }
    if !w.channels[ci].has_member(&w.agent) {
        return Err(fail("not_in_channel"));
    }
    let before = w.channels[ci].last_read.clone();
    if before != ts {
        w.channels[ci].last_read = ts.clone();
        call.updated("last_read", w.channels[ci].id.clone(), &json!({"ts": before}), &json!({"ts": ts}));
    }
    ok(json!({}))
}
