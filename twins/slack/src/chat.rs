//! `chat.*`: posting, threading, editing and deleting messages, ephemeral and scheduled
//! messages, permalinks.

use pome_twin_sdk::{Call, json};
use serde_json::Value;

use crate::args::{Args, paginate};
use crate::conversations::{
    check_writable, find, find_target, message_entity, message_id, now_micros, now_secs,
};
use crate::model::*;
use crate::render::{self, Threads, View};
use crate::{Res, SlackError, fail, ok};

/// Slack truncates nothing: longer texts are refused.
const MAX_TEXT: usize = 40_000;
const MAX_ATTACHMENTS: usize = 100;
/// `chat.scheduleMessage` accepts up to 120 days ahead.
const MAX_SCHEDULE_SECS: i64 = 120 * 86_400;

/// The content arguments of a message: text, blocks, attachments, validated like Slack.
struct Content {
    text: String,
    blocks: Option<String>,
    attachments: Option<String>,
}

fn content(a: &Args) -> Result<Content, SlackError> {
    let raw = a.str("text").unwrap_or_default();
    let text = if a.str("parse").as_deref() == Some("none") { raw } else { linkify(&raw) };
    let blocks = match a.json("blocks") {
        Err(()) => return Err(fail("invalid_blocks_format")),
        Ok(None) => None,
        Ok(Some(Value::Array(b))) => {
            if b.iter().any(|x| !x.is_object() || x.get("type").and_then(Value::as_str).is_none()) {
                return Err(fail("invalid_blocks"));
            }
            (!b.is_empty()).then(|| Value::Array(b).to_string())
        }
        Ok(Some(_)) => return Err(fail("invalid_blocks_format")),
    };
    let attachments = match a.json("attachments") {
        Err(()) => return Err(fail("invalid_attachments")),
        Ok(None) => None,
        Ok(Some(Value::Array(v))) => {
            if v.len() > MAX_ATTACHMENTS {
                return Err(fail("too_many_attachments"));
            }
            (!v.is_empty()).then(|| Value::Array(v).to_string())
        }
        Ok(Some(_)) => return Err(fail("invalid_attachments")),
    };
    if text.trim().is_empty() && blocks.is_none() && attachments.is_none() {
        return Err(fail("no_text"));
    }
    if text.chars().count() > MAX_TEXT {
        return Err(fail("msg_too_long"));
    }
    Ok(Content { text, blocks, attachments })
}

/// Slack treats text sent to the API as already formatted but still links bare URLs:
/// `see https://x.test/a.` is stored as `see <https://x.test/a>.` Text already inside `<…>`
/// is left alone.
pub fn linkify(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    let mut i = 0;
    let b = text.as_bytes();
    while i < text.len() {
        if b[i] == b'<' {
            let end = text[i..].find('>').map(|j| i + j + 1).unwrap_or(text.len());
            out.push_str(&text[i..end]);
            i = end;
            continue;
        }
        let rest = &text[i..];
        let at_boundary = i == 0 || text[..i].ends_with(|c: char| c.is_whitespace() || "([{\"'".contains(c));
        if at_boundary && (rest.starts_with("http://") || rest.starts_with("https://")) {
            let len = rest.find(|c: char| c.is_whitespace() || c == '<' || c == '>').unwrap_or(rest.len());
            let url = rest[..len].trim_end_matches(['.', ',', ';', ':', '!', '?', ')', '\'', '"']);
            if url.len() > "https://".len() {
                out.push('<');
                out.push_str(url);
                out.push('>');
                i += url.len();
                continue;
            }
        }
        let ch = rest.chars().next().expect("in bounds");
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

/// Resolve `thread_ts` to the thread's parent in channel `ci`.
fn thread_parent(w: &World, ci: usize, a: &Args) -> Result<Option<String>, SlackError> {
    let Some(t) = a.str("thread_ts") else { return Ok(None) };
    let c = &w.channels[ci];
    let mi = c.message(&t).ok_or_else(|| fail("thread_not_found"))?;
    let m = &c.messages[mi];
    if m.subtype.as_deref() == Some("tombstone") {
        return Err(fail("thread_not_found"));
    }
    Ok(Some(m.thread_ts.clone().filter(|_| m.is_reply()).unwrap_or(t)))
}

/// Append a message by the agent to channel `ci`, marking its thread parent. Returns its `ts`.
fn post(
    w: &mut World,
    call: &mut Call,
    ci: usize,
    body: Content,
    thread: Option<String>,
    subtype: Option<&str>,
    username: Option<String>,
) -> String {
    let now = now_micros();
    let agent = w.agent_user().clone();
    let c = &mut w.channels[ci];
    let ts = c.next_ts(now);
    if let Some(parent) = &thread
        && let Some(pi) = c.message(parent)
            && c.messages[pi].thread_ts.is_none() {
                let before = message_entity(&c.id, &c.messages[pi]);
                c.messages[pi].thread_ts = Some(parent.clone());
                let after = message_entity(&c.id, &c.messages[pi]);
                call.updated("message", message_id(&c.id, parent), &before, &after);
            }
    let m = Message {
        ts: ts.clone(),
        user: agent.id.clone(),
        bot_id: agent.bot_id.clone(),
        username: username.filter(|_| agent.is_bot),
        text: body.text,
        subtype: subtype.map(String::from),
        thread_ts: thread,
        blocks: body.blocks,
        attachments: body.attachments,
        ..Message::default()
    };
    call.created("message", message_id(&c.id, &ts), &message_entity(&c.id, &m));
    c.insert_message(m);
    ts
}

fn render_at(w: &World, call: &Call, ci: usize, ts: &str) -> Value {
    let c = &w.channels[ci];
    let m = &c.messages[c.message(ts).expect("just posted")];
    render::message(w, &call.req.base_url, c, m, &Threads::of(c), View::Plain)
}

/// `link_names`: turn `@name` and `#channel` into Slack's `<@U…>` and `<#C…|name>` links,
/// as Slack does when the flag is set (`@here`/`@channel`/`@everyone` become `<!here>` etc.).
fn link_names(w: &World, text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(['@', '#']) {
        let (before, at) = rest.split_at(i);
        out.push_str(before);
        let sigil = &at[..1];
        let word_len = at[1..].find(|c: char| !(c.is_alphanumeric() || "-_.".contains(c))).unwrap_or(at.len() - 1);
        let word = at[1..1 + word_len].trim_end_matches('.');
        let boundary_ok = before.is_empty() || before.ends_with(|c: char| c.is_whitespace() || "([{,;:".contains(c));
        let link = if !boundary_ok || word.is_empty() {
            None
        } else if sigil == "@" && ["here", "channel", "everyone"].contains(&word) {
            Some(format!("<!{word}>"))
        } else if sigil == "@" {
            w.users.iter().find(|u| u.name == word).map(|u| format!("<@{}>", u.id))
        } else {
            w.channels.iter().find(|c| !c.is_im() && c.name == word && w.visible(c)).map(|c| format!("<#{}|{}>", c.id, c.name))
        };
        match link {
            Some(l) => {
                out.push_str(&l);
                rest = &at[1 + word.len()..];
            }
            None => {
                out.push_str(sigil);
                rest = &at[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

pub fn post_message(w: &mut World, call: &mut Call, a: &Args) -> Res {
    // Content first: a refused post must not open a DM on the way.
    let mut body = content(a)?;
    let ci = find_target(w, call, a.str("channel"))?;
    if a.flag("link_names") {
        body.text = link_names(w, &body.text);
    }
    check_writable(w, ci)?;
    let thread = thread_parent(w, ci, a)?;
    let broadcast = thread.is_some() && a.flag("reply_broadcast");
    let ts = post(w, call, ci, body, thread, broadcast.then_some("thread_broadcast"), a.str("username"));
    let message = render_at(w, call, ci, &ts);
    ok(json!({"channel": w.channels[ci].id, "ts": ts, "message": message}))
}

pub fn me_message(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let ci = find_target(w, call, a.str("channel"))?;
    let text = linkify(&a.str("text").ok_or_else(|| fail("no_text"))?);
    if text.chars().count() > MAX_TEXT {
        return Err(fail("msg_too_long"));
    }
    check_writable(w, ci)?;
    let ts = post(w, call, ci, Content { text, blocks: None, attachments: None }, None, Some("me_message"), None);
    ok(json!({"channel": w.channels[ci].id, "ts": ts}))
}

fn own_message(w: &World, ci: usize, a: &Args) -> Result<usize, SlackError> {
    let ts = a.str("ts").ok_or_else(|| fail("message_not_found"))?;
    let c = &w.channels[ci];
    c.message(&ts)
        .filter(|&i| c.messages[i].subtype.as_deref() != Some("tombstone"))
        .ok_or_else(|| fail("message_not_found"))
}

pub fn update(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let ci = find(w, a.str("channel"))?;
    let mi = own_message(w, ci, a)?;
    if w.channels[ci].messages[mi].user != w.agent {
        return Err(fail("cant_update_message"));
    }
    if w.channels[ci].is_archived {
        return Err(fail("is_archived"));
    }
    let text = a.str("text");
    let blocks_given = a.0.contains_key("blocks");
    let atts_given = a.0.contains_key("attachments");
    if text.is_none() && !blocks_given && !atts_given {
        return Err(fail("no_text"));
    }
    let old = w.channels[ci].messages[mi].clone();
    let merged = Args(serde_json::Map::from_iter([
        ("text".to_string(), json!(text.clone().unwrap_or(old.text.clone()))),
        (
            "blocks".to_string(),
            if blocks_given { a.0["blocks"].clone() } else { old.blocks.clone().map(Value::String).unwrap_or(Value::Null) },
        ),
        (
            "attachments".to_string(),
            if atts_given { a.0["attachments"].clone() } else { old.attachments.clone().map(Value::String).unwrap_or(Value::Null) },
        ),
    ]));
    let body = content(&merged)?;
    let now = now_micros();
    let agent = w.agent.clone();
    let c = &mut w.channels[ci];
    let edit_ts = c.next_ts(now);
    let m = &mut c.messages[mi];
    m.text = body.text;
    m.blocks = body.blocks;
    m.attachments = body.attachments;
    m.edited = Some(Edited { user: agent, ts: edit_ts });
    let (cid, ts) = (c.id.clone(), m.ts.clone());
    call.updated("message", message_id(&cid, &ts), &message_entity(&cid, &old), &message_entity(&cid, m));
    let rendered = render_at(w, call, ci, &ts);
    let mut message = json!({"type": "message", "text": rendered["text"], "user": rendered["user"], "team": rendered["team"]});
    for k in ["bot_id", "edited", "blocks", "attachments", "thread_ts"] {
        if let Some(v) = rendered.get(k) {
            message[k] = v.clone();
        }
    }
    ok(json!({"channel": cid, "ts": ts, "text": rendered["text"], "message": message}))
}

pub fn delete(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let ci = find(w, a.str("channel"))?;
    let mi = own_message(w, ci, a)?;
    let me = w.agent_user();
    let m = &w.channels[ci].messages[mi];
    if m.user != w.agent && !me.moderates() {
        return Err(fail("cant_delete_message"));
    }
    if w.channels[ci].is_archived {
        return Err(fail("is_archived"));
    }
    let c = &mut w.channels[ci];
    let old = c.messages[mi].clone();
    let has_replies = !old.is_reply() && c.messages.iter().any(|r| r.is_reply() && r.thread_ts.as_deref() == Some(old.ts.as_str()));
    let id = message_id(&c.id, &old.ts);
    if has_replies {
        // Slack keeps a deleted parent as a tombstone so its thread stays reachable.
        let m = &mut c.messages[mi];
        *m = Message {
            ts: old.ts.clone(),
            user: "USLACKBOT".into(),
            text: "This message was deleted.".into(),
            subtype: Some("tombstone".into()),
            thread_ts: old.thread_ts.clone(),
            ..Message::default()
        };
        call.updated("message", id, &message_entity(&c.id, &old), &message_entity(&c.id, m));
    } else {
        c.messages.remove(mi);
        call.deleted("message", id, &message_entity(&c.id, &old));
    }
    c.pins.retain(|p| p.ts != old.ts);
    ok(json!({"channel": c.id, "ts": old.ts}))
}

pub fn post_ephemeral(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let ci = find_target(w, call, a.str("channel"))?;
    let user = a.str("user").ok_or_else(|| fail("user_not_found"))?;
    if w.user(&user).is_none() {
        return Err(fail("user_not_found"));
    }
    let body = content(a)?;
    check_writable(w, ci)?;
    if !w.channels[ci].has_member(&user) {
        return Err(fail("user_not_in_channel"));
    }
    let now = now_micros();
    let author = w.agent.clone();
    let c = &mut w.channels[ci];
    let ts = c.next_ts(now);
    let e = Ephemeral { channel: c.id.clone(), user, ts: ts.clone(), text: body.text, author };
    call.created("ephemeral", message_id(&c.id, &ts), &e);
    w.ephemeral.push(e);
    ok(json!({"message_ts": ts}))
}

pub fn get_permalink(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let ci = find(w, a.str("channel"))?;
    let ts = a.str("message_ts").ok_or_else(|| fail("message_not_found"))?;
    let c = &w.channels[ci];
    let mi = c.message(&ts).ok_or_else(|| fail("message_not_found"))?;
    ok(json!({"channel": c.id, "permalink": render::permalink(&call.req.base_url, c, &c.messages[mi])}))
}

pub fn schedule_message(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let ci = find_target(w, call, a.str("channel"))?;
    let post_at = a.int("post_at").ok_or_else(|| fail("invalid_time"))?;
    let body = content(a)?;
    let now = now_secs();
    if post_at <= now {
        return Err(fail("time_in_past"));
    }
    if post_at > now.saturating_add(MAX_SCHEDULE_SECS) {
        return Err(fail("time_too_far"));
    }
    check_writable(w, ci)?;
    let thread = thread_parent(w, ci, a)?;
    let id = w.new_id("Q");
    let agent = w.agent_user().clone();
    let s = Scheduled {
        id: id.clone(),
        channel: w.channels[ci].id.clone(),
        post_at,
        date_created: now,
        text: body.text,
        blocks: body.blocks,
        attachments: body.attachments,
        thread_ts: thread,
        user: agent.id.clone(),
    };
    call.created("scheduled_message", &id, &s);
    let mut message = json!({"type": "delayed_message", "text": s.text, "user": agent.id, "team": w.team.id});
    if let Some(b) = &agent.bot_id {
        message["bot_id"] = json!(b);
    }
    let channel = s.channel.clone();
    w.scheduled.push(s);
    ok(json!({"channel": channel, "scheduled_message_id": id, "post_at": post_at, "message": message}))
}

pub fn scheduled_list(w: &mut World, _call: &mut Call, a: &Args) -> Res {
    let channel = match a.str("channel") {
        Some(c) => Some(w.channels[find(w, Some(c))?].id.clone()),
        None => None,
    };
    let latest = a.int("latest");
    let oldest = a.int("oldest");
    let items: Vec<Value> = w
        .scheduled
        .iter()
        .filter(|s| channel.as_ref().is_none_or(|c| *c == s.channel))
        .filter(|s| latest.is_none_or(|l| s.post_at <= l) && oldest.is_none_or(|o| s.post_at >= o))
        .map(|s| json!({"id": s.id, "channel_id": s.channel, "post_at": s.post_at, "date_created": s.date_created, "text": s.text}))
        .collect();
    let (page, next) = paginate(items, a, "scheduled", 100, 100)?;
    ok(json!({"scheduled_messages": page, "response_metadata": {"next_cursor": next}}))
}

pub fn delete_scheduled(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let ci = find(w, a.str("channel"))?;
    let id = a.str("scheduled_message_id").ok_or_else(|| fail("invalid_scheduled_message_id"))?;
    let cid = w.channels[ci].id.clone();
    let i = w
        .scheduled
        .iter()
        .position(|s| s.id == id && s.channel == cid)
        .ok_or_else(|| fail("invalid_scheduled_message_id"))?;
    let s = w.scheduled.remove(i);
    call.deleted("scheduled_message", &id, &s);
    ok(json!({}))
}

/// Post every scheduled message whose time has come (on the virtual clock), before the
/// request that noticed it is served. Messages for a conversation that has since been
/// archived or left are dropped, as Slack does.
pub fn deliver_due(w: &mut World, call: &mut Call) {
    if w.scheduled.is_empty() {
        return;
    }
    let now = now_secs();
    let mut due: Vec<Scheduled> = Vec::new();
    w.scheduled.retain(|s| {
        if s.post_at <= now {
            due.push(s.clone());
            false
        } else {
            true
        }
    });
    due.sort_by_key(|s| s.post_at);
    for s in due {
        call.deleted("scheduled_message", &s.id, &s);
        let Some(ci) = w.channel_idx(&s.channel) else { continue };
        let c = &mut w.channels[ci];
        if c.is_archived || !c.has_member(&s.user) {
            continue;
        }
        let ts = c.next_ts(s.post_at * 1_000_000);
        let bot_id = w.users.iter().find(|u| u.id == s.user).and_then(|u| u.bot_id.clone());
        let c = &mut w.channels[ci];
        let m = Message {
            ts: ts.clone(),
            user: s.user.clone(),
            bot_id,
            text: s.text.clone(),
            thread_ts: s.thread_ts.clone(),
            blocks: s.blocks.clone(),
            attachments: s.attachments.clone(),
            ..Message::default()
        };
        call.created("message", message_id(&c.id, &ts), &message_entity(&c.id, &m));
        c.insert_message(m);
        if let Some(p) = &s.thread_ts
            && let Some(pi) = c.message(p) {
                c.messages[pi].thread_ts.get_or_insert_with(|| p.clone());
            }
    }
}
