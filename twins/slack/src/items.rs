//! Things attached to messages and channels: `reactions.*`, `pins.*`, `bookmarks.*`.

use pome_twin_sdk::{Call, json};
use serde_json::Value;

use crate::args::{Args, paginate};
use crate::conversations::{check_readable, find, message_entity, message_id, now_secs};
use crate::model::*;
use crate::render::{self, Threads, View};
use crate::{Res, SlackError, fail, ok};

/// The message an item method names with `channel` + `timestamp`.
fn item(w: &World, a: &Args) -> Result<(usize, usize), SlackError> {
    let (Some(ch), Some(ts)) = (a.str("channel"), a.str("timestamp")) else {
        return Err(fail("no_item_specified"));
    };
    let ci = find(w, Some(ch))?;
    if ts_micros(&ts).is_none() {
        return Err(fail("bad_timestamp"));
    }
    let c = &w.channels[ci];
    let mi = c
        .message(&ts)
        .filter(|&i| c.messages[i].subtype.as_deref() != Some("tombstone"))
        .ok_or_else(|| fail("message_not_found"))?;
    Ok((ci, mi))
}

/// Emoji names: `thumbsup`, `+1`, `white_check_mark`, `man-gesturing-ok::skin-tone-2`.
fn emoji_name(a: &Args) -> Result<String, SlackError> {
    let raw = a.str("name").ok_or_else(|| fail("invalid_name"))?;
    let name = raw.trim().trim_matches(':').to_string();
    let (base, tone) = name.split_once("::").unwrap_or((&name, ""));
    let ok_base = !base.is_empty()
        && base.len() <= 100
        && base.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "_+-'".contains(c));
    let ok_tone = tone.is_empty() || (tone.starts_with("skin-tone-") && tone[10..].parse::<u8>().is_ok_and(|n| (2..=6).contains(&n)));
    if ok_base && ok_tone { Ok(name) } else { Err(fail("invalid_name")) }
}

fn change_message(w: &mut World, call: &mut Call, ci: usize, mi: usize, f: impl FnOnce(&mut Message)) {
    let c = &mut w.channels[ci];
    let before = message_entity(&c.id, &c.messages[mi]);
    f(&mut c.messages[mi]);
    let after = message_entity(&c.id, &c.messages[mi]);
    call.updated("message", message_id(&c.id, &c.messages[mi].ts), &before, &after);
}

pub fn reactions_add(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let (ci, mi) = item(w, a)?;
    let name = emoji_name(a)?;
    check_readable(w, ci)?;
    if w.channels[ci].is_archived {
        return Err(fail("is_archived"));
    }
    let agent = w.agent.clone();
    let m = &w.channels[ci].messages[mi];
    if m.reactions.iter().any(|r| r.name == name && r.users.contains(&agent)) {
        return Err(fail("already_reacted"));
    }
    if !m.reactions.iter().any(|r| r.name == name) && m.reactions.len() >= 50 {
        return Err(fail("too_many_emoji"));
    }
    change_message(w, call, ci, mi, |m| match m.reactions.iter_mut().find(|r| r.name == name) {
        Some(r) => r.users.push(agent),
        None => m.reactions.push(Reaction { name, users: vec![agent] }),
    });
    ok(json!({}))
}

pub fn reactions_remove(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let (ci, mi) = item(w, a)?;
    let name = emoji_name(a)?;
    let agent = w.agent.clone();
    if !w.channels[ci].messages[mi].reactions.iter().any(|r| r.name == name && r.users.contains(&agent)) {
        return Err(fail("no_reaction"));
    }
    if w.channels[ci].is_archived {
        return Err(fail("is_archived"));
    }
    change_message(w, call, ci, mi, |m| {
        for r in &mut m.reactions {
            if r.name == name {
                r.users.retain(|u| *u != agent);
            }
        }
        m.reactions.retain(|r| !r.users.is_empty());
    });
    ok(json!({}))
}

fn message_with_permalink(w: &World, base: &str, ci: usize, mi: usize) -> Value {
    let c = &w.channels[ci];
    let m = &c.messages[mi];
    let mut v = render::message(w, base, c, m, &Threads::of(c), View::Plain);
    v["permalink"] = json!(render::permalink(base, c, m));
    v
}

pub fn reactions_get(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let (ci, mi) = item(w, a)?;
    check_readable(w, ci)?;
    let message = message_with_permalink(w, &call.req.base_url, ci, mi);
    ok(json!({"type": "message", "channel": w.channels[ci].id, "message": message}))
}

pub fn reactions_list(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let user = a.str("user").unwrap_or_else(|| w.agent.clone());
    if w.user(&user).is_none() {
        return Err(fail("user_not_found"));
    }
    let mut found: Vec<(i64, usize, usize)> = Vec::new();
    for (ci, c) in w.channels.iter().enumerate().filter(|(_, c)| w.visible(c)) {
        for (mi, m) in c.messages.iter().enumerate() {
            if m.reactions.iter().any(|r| r.users.contains(&user)) {
                found.push((ts_micros(&m.ts).unwrap_or(0), ci, mi));
            }
        }
    }
    found.sort_by_key(|x| std::cmp::Reverse(x.0));
    let (page, next) = paginate(found, a, "reactions", 100, 1000)?;
    let base = call.req.base_url.clone();
    let items: Vec<Value> = page
        .iter()
        .map(|&(_, ci, mi)| json!({"type": "message", "channel": w.channels[ci].id, "message": message_with_permalink(w, &base, ci, mi)}))
        .collect();
    ok(json!({"items": items, "response_metadata": {"next_cursor": next}}))
}

pub fn pins_add(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let (ci, mi) = item(w, a)?;
    let c = &w.channels[ci];
    if !c.has_member(&w.agent) {
        return Err(fail("not_in_channel"));
    }
    if c.is_archived {
        return Err(fail("is_archived"));
    }
    let ts = c.messages[mi].ts.clone();
    if c.pins.iter().any(|p| p.ts == ts) {
        return Err(fail("already_pinned"));
    }
    let pin = Pin { ts: ts.clone(), by: w.agent.clone(), at: now_secs() };
    let cid = c.id.clone();
    call.created("pin", message_id(&cid, &ts), &pin);
    w.channels[ci].pins.push(pin);
    ok(json!({}))
}

pub fn pins_remove(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let (ci, mi) = item(w, a)?;
    let c = &mut w.channels[ci];
    let ts = c.messages[mi].ts.clone();
    let Some(pi) = c.pins.iter().position(|p| p.ts == ts) else {
        return Err(fail("not_pinned"));
    };
    if c.is_archived {
        return Err(fail("is_archived"));
    }
    let pin = c.pins.remove(pi);
    call.deleted("pin", message_id(&c.id, &ts), &pin);
    ok(json!({}))
}

pub fn pins_list(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let ci = find(w, a.str("channel"))?;
    check_readable(w, ci)?;
    let c = &w.channels[ci];
    let base = call.req.base_url.clone();
    let mut pins: Vec<&Pin> = c.pins.iter().collect();
    pins.sort_by(|x, y| y.at.cmp(&x.at).then(y.ts.cmp(&x.ts)));
    let items: Vec<Value> = pins
        .iter()
        .filter_map(|p| c.message(&p.ts).map(|mi| (p, mi)))
        .map(|(p, mi)| {
            json!({
                "type": "message",
                "created": p.at,
                "created_by": p.by,
                "channel": c.id,
                "message": message_with_permalink(w, &base, ci, mi),
            })
        })
        .collect();
    ok(json!({"items": items}))
}

fn bookmark_channel(w: &World, a: &Args) -> Result<usize, SlackError> {
    find(w, a.str("channel_id"))
}

fn check_link(link: &str) -> Result<(), SlackError> {
    if link.starts_with("http://") || link.starts_with("https://") { Ok(()) } else { Err(fail("invalid_link")) }
}

fn check_emoji(e: &str) -> Result<(), SlackError> {
    let ok = e.is_empty() || (e.len() > 2 && e.starts_with(':') && e.ends_with(':'));
    if ok { Ok(()) } else { Err(fail("invalid_emoji")) }
}

pub fn bookmarks_add(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let ci = bookmark_channel(w, a)?;
    let title = a.str("title").ok_or_else(|| fail("invalid_title"))?;
    if a.str("type").as_deref() != Some("link") {
        return Err(fail("invalid_bookmark_type"));
    }
    let link = a.str("link").ok_or_else(|| fail("invalid_link"))?;
    check_link(&link)?;
    let emoji = a.str("emoji").unwrap_or_default();
    check_emoji(&emoji)?;
    if !w.channels[ci].has_member(&w.agent) {
        return Err(fail("not_in_channel"));
    }
    if w.channels[ci].is_archived {
        return Err(fail("is_archived"));
    }
    let id = w.new_id("Bk");
    let now = now_secs();
    let b = Bookmark { id: id.clone(), title, link, emoji, created: now, updated: now, updated_by: w.agent.clone() };
    call.created("bookmark", &id, &b);
    w.channels[ci].bookmarks.push(b);
    let c = &w.channels[ci];
    ok(json!({"bookmark": render::bookmark(w, c, c.bookmarks.last().expect("pushed"))}))
}

fn find_bookmark(w: &World, ci: usize, a: &Args) -> Result<usize, SlackError> {
    let id = a.str("bookmark_id").ok_or_else(|| fail("not_found"))?;
    w.channels[ci].bookmarks.iter().position(|b| b.id == id).ok_or_else(|| fail("not_found"))
}

pub fn bookmarks_edit(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let ci = bookmark_channel(w, a)?;
    let bi = find_bookmark(w, ci, a)?;
    if let Some(l) = a.str("link") {
        check_link(&l)?;
    }
    if let Some(e) = a.str("emoji") {
        check_emoji(&e)?;
    }
    if !w.channels[ci].has_member(&w.agent) {
        return Err(fail("not_in_channel"));
    }
    let now = now_secs();
    let agent = w.agent.clone();
    let b = &mut w.channels[ci].bookmarks[bi];
    call.update("bookmark", b.id.clone(), b, |b| {
        if let Some(t) = a.str("title") {
            b.title = t;
        }
        if let Some(l) = a.str("link") {
            b.link = l;
        }
        if let Some(e) = a.str("emoji") {
            b.emoji = e;
        }
        b.updated = now;
        b.updated_by = agent;
    });
    let c = &w.channels[ci];
    ok(json!({"bookmark": render::bookmark(w, c, &c.bookmarks[bi])}))
}

pub fn bookmarks_remove(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let ci = bookmark_channel(w, a)?;
    let bi = find_bookmark(w, ci, a)?;
    if !w.channels[ci].has_member(&w.agent) {
        return Err(fail("not_in_channel"));
    }
    let b = w.channels[ci].bookmarks.remove(bi);
    call.deleted("bookmark", b.id.clone(), &b);
    ok(json!({}))
}

pub fn bookmarks_list(w: &mut World, _call: &mut Call, a: &Args) -> Res {
    let ci = bookmark_channel(w, a)?;
    check_readable(w, ci)?;
    let c = &w.channels[ci];
    let list: Vec<Value> = c.bookmarks.iter().map(|b| render::bookmark(w, c, b)).collect();
    ok(json!({"bookmarks": list}))
}
