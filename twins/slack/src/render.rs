//! The JSON shapes Slack answers with: users, conversations, messages, files, usergroups,
//! reminders. Field names and presence follow the Web API (and its published schema where it
//! agrees with what Slack actually sends).

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::model::*;

/// The `team` field on messages and users.
fn team_id(w: &World) -> &str {
    &w.team.id
}

pub fn profile(w: &World, u: &User) -> Value {
    let mut p = json!({
        "title": u.title,
        "phone": u.phone,
        "skype": "",
        "real_name": u.real_name,
        "real_name_normalized": u.real_name,
        "display_name": u.display_name,
        "display_name_normalized": u.display_name,
        "fields": {},
        "status_text": u.status_text,
        "status_emoji": u.status_emoji,
        "status_expiration": u.status_expiration,
        "avatar_hash": avatar_hash(&u.id),
        "first_name": u.first_name,
        "last_name": u.last_name,
        "team": team_id(w),
    });
    let m = p.as_object_mut().expect("object");
    if let Some(e) = &u.email {
        m.insert("email".into(), json!(e));
    }
    if let Some(b) = &u.bot_id {
        m.insert("bot_id".into(), json!(b));
        m.insert("always_active".into(), json!(false));
    }
    p
}

/// A stable, Slack-looking avatar hash derived from the user id.
fn avatar_hash(id: &str) -> String {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in id.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    format!("g{:011x}", h & 0xfff_ffff_ffff)
}

pub fn tz_offset(tz: &str) -> (i64, &'static str) {
    match tz {
        "America/Los_Angeles" => (-28800, "Pacific Standard Time"),
        "America/Denver" => (-25200, "Mountain Standard Time"),
        "America/Chicago" => (-21600, "Central Standard Time"),
        "America/New_York" => (-18000, "Eastern Standard Time"),
        "Europe/London" => (0, "Greenwich Mean Time"),
        "Europe/Berlin" | "Europe/Paris" | "Europe/Amsterdam" => (3600, "Central European Time"),
        "Asia/Kolkata" => (19800, "India Standard Time"),
        "Asia/Tokyo" => (32400, "Japan Standard Time"),
        _ => (0, "Coordinated Universal Time"),
    }
}

pub fn user(w: &World, u: &User) -> Value {
    let (off, label) = tz_offset(&u.tz);
    json!({
        "id": u.id,
        "team_id": team_id(w),
        "name": u.name,
        "deleted": u.deleted,
        "color": "9f69e7",
        "real_name": u.real_name,
        "tz": u.tz,
        "tz_label": label,
        "tz_offset": off,
        "profile": profile(w, u),
        "is_admin": u.is_admin,
        "is_owner": u.is_owner,
        "is_primary_owner": u.is_owner,
        "is_restricted": u.is_restricted,
        "is_ultra_restricted": false,
        "is_bot": u.is_bot,
        "is_app_user": false,
        "updated": u.updated,
        "has_2fa": false,
    })
}

fn topic(t: &Topic) -> Value {
    json!({"value": t.value, "creator": t.creator, "last_set": t.last_set})
}

/// A conversation object as `conversations.*` returns it, seen by the agent.
pub fn conversation(w: &World, c: &Channel) -> Value {
    match c.kind {
        Kind::Im => {
            let other = c.members.iter().find(|m| **m != w.agent).unwrap_or(&c.members[0]);
            json!({
                "id": c.id,
                "created": c.created,
                "is_archived": c.is_archived,
                "is_im": true,
                "is_org_shared": false,
                "user": other,
                "is_user_deleted": w.user(other).is_some_and(|u| u.deleted),
                "priority": 0,
            })
        }
        _ => {
            let mut v = json!({
                "id": c.id,
                "name": c.name,
                "is_channel": c.kind != Kind::Mpim,
                "is_group": c.kind == Kind::Mpim,
                "is_im": false,
                "is_mpim": c.kind == Kind::Mpim,
                "is_private": c.is_restricted(),
                "created": c.created,
                "is_archived": c.is_archived,
                "is_general": c.is_general,
                "unlinked": 0,
                "name_normalized": c.name,
                "is_shared": false,
                "is_org_shared": false,
                "is_pending_ext_shared": false,
                "pending_shared": [],
                "parent_conversation": null,
                "creator": c.creator,
                "is_ext_shared": false,
                "shared_team_ids": [team_id(w)],
                "pending_connected_team_ids": [],
                "is_member": c.has_member(&w.agent),
                "topic": topic(&c.topic),
                "purpose": topic(&c.purpose),
                "previous_names": c.previous_names,
            });
            if c.kind == Kind::Mpim {
                v["is_open"] = json!(c.is_open);
            }
            v
        }
    }
}

/// Per-thread statistics for one channel: parent ts → (reply count, reply users in first-reply
/// order, latest reply ts).
pub struct Threads(BTreeMap<String, (usize, Vec<String>, String)>);

impl Threads {
    pub fn of(c: &Channel) -> Threads {
        let mut t: BTreeMap<String, (usize, Vec<String>, String)> = BTreeMap::new();
        for m in c.messages.iter().filter(|m| m.is_reply()) {
            let e = t.entry(m.thread_ts.clone().unwrap_or_default()).or_default();
            e.0 += 1;
            if !m.user.is_empty() && !e.1.contains(&m.user) {
                e.1.push(m.user.clone());
            }
            e.2 = m.ts.clone();
        }
        Threads(t)
    }
}

/// How a message is being shown.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// In history, search, pins: replies carry `thread_ts` and `parent_user_id`.
    Plain,
    /// The first item of `conversations.replies`: the parent with `subscribed`.
    ThreadParent,
}

pub fn message(w: &World, base: &str, c: &Channel, m: &Message, threads: &Threads, view: View) -> Value {
    let mut o = Map::new();
    let author = w.user(&m.user);
    if let Some(u) = author {
        if let Some(b) = &u.bot_id {
            o.insert("bot_id".into(), json!(b));
        }
    } else if let Some(b) = &m.bot_id {
        o.insert("bot_id".into(), json!(b));
    }
    o.insert("type".into(), json!("message"));
    if let Some(s) = &m.subtype {
        o.insert("subtype".into(), json!(s));
    }
    o.insert("text".into(), json!(m.text));
    if !m.user.is_empty() {
        o.insert("user".into(), json!(m.user));
    }
    if let Some(n) = &m.username {
        o.insert("username".into(), json!(n));
    }
    o.insert("ts".into(), json!(m.ts));
    o.insert("team".into(), json!(team_id(w)));
    if let Some(e) = &m.edited {
        o.insert("edited".into(), json!({"user": e.user, "ts": e.ts}));
    }
    if let Some(b) = &m.blocks {
        o.insert("blocks".into(), serde_json::from_str(b).unwrap_or(Value::Array(vec![])));
    }
    if let Some(a) = &m.attachments {
        o.insert("attachments".into(), serde_json::from_str(a).unwrap_or(Value::Array(vec![])));
    }
    if !m.files.is_empty() {
        let files: Vec<Value> = m
            .files
            .iter()
            .filter_map(|id| w.files.iter().find(|f| &f.id == id))
            .map(|f| file(w, f, base))
            .collect();
        if !files.is_empty() {
            o.insert("files".into(), Value::Array(files));
            o.insert("upload".into(), json!(true));
            o.insert("display_as_bot".into(), json!(false));
        }
    }
    if let Some(t) = &m.thread_ts {
        o.insert("thread_ts".into(), json!(t));
        if m.is_reply() {
            let parent_user = c.messages.iter().find(|p| &p.ts == t).map(|p| p.user.clone()).unwrap_or_default();
            if !parent_user.is_empty() {
                o.insert("parent_user_id".into(), json!(parent_user));
            }
        } else {
            let (count, users, latest) = threads.0.get(&m.ts).cloned().unwrap_or_default();
            o.insert("reply_count".into(), json!(count));
            o.insert("reply_users_count".into(), json!(users.len()));
            if !latest.is_empty() {
                o.insert("latest_reply".into(), json!(latest));
            }
            if !users.is_empty() {
                o.insert("reply_users".into(), json!(users));
            }
            if view == View::ThreadParent {
                o.insert("subscribed".into(), json!(false));
            }
        }
    }
    if !m.reactions.is_empty() {
        let r: Vec<Value> = m
            .reactions
            .iter()
            .map(|r| json!({"name": r.name, "users": r.users, "count": r.users.len()}))
            .collect();
        o.insert("reactions".into(), Value::Array(r));
    }
    if c.pins.iter().any(|p| p.ts == m.ts) {
        o.insert("pinned_to".into(), json!([c.id]));
    }
    if let Some(u) = author.filter(|u| u.bot_id.is_some()) {
        o.insert("bot_profile".into(), bot_profile(w, base, u));
    }
    Value::Object(o)
}

/// The app id Slack pairs with a bot id (`B…` → `A…`).
pub fn app_id(bot_id: &str) -> String {
    format!("A{}", bot_id.get(1..).unwrap_or(""))
}

pub fn bot_icons(base: &str, bot_id: &str) -> Value {
    let icon = |n: u32| format!("{base}/bot-icons/{bot_id}_{n}.png");
    json!({"image_36": icon(36), "image_48": icon(48), "image_72": icon(72)})
}

/// `bot_profile` on messages a bot user posted.
fn bot_profile(w: &World, base: &str, u: &User) -> Value {
    let bot = u.bot_id.clone().unwrap_or_default();
    json!({
        "id": bot,
        "deleted": u.deleted,
        "name": u.real_name,
        "updated": u.updated,
        "app_id": app_id(&bot),
        "icons": bot_icons(base, &bot),
        "team_id": w.team.id,
    })
}

/// Emoji URLs stored as paths (`/emoji/shipit.png`) are served under the request's base.
pub fn emoji_url(base: &str, v: &str) -> String {
    if v.starts_with('/') { format!("{base}{v}") } else { v.to_string() }
}

pub fn file(w: &World, f: &File, base: &str) -> Value {
    let (ims, channels): (Vec<&String>, Vec<&String>) = f.channels.iter().partition(|c| c.starts_with('D'));
    let is_public = f
        .channels
        .iter()
        .any(|c| w.channels.iter().any(|ch| &ch.id == c && !ch.is_restricted()));
    let mut v = json!({
        "id": f.id,
        "created": f.created,
        "timestamp": f.created,
        "name": f.name,
        "title": f.title,
        "mimetype": f.mimetype,
        "filetype": f.filetype,
        "pretty_type": pretty_type(&f.filetype),
        "user": f.user,
        "user_team": w.team.id,
        "editable": f.filetype == "text" || f.filetype == "markdown",
        "size": f.size,
        "mode": if f.filetype == "text" || f.filetype == "markdown" { "snippet" } else { "hosted" },
        "is_external": false,
        "external_type": "",
        "is_public": is_public,
        "public_url_shared": f.public_url_shared,
        "display_as_bot": false,
        "username": "",
        "url_private": format!("{base}/files-pri/{}-{}/{}", w.team.id, f.id, url_segment(&f.name)),
        "url_private_download": format!("{base}/files-pri/{}-{}/download/{}", w.team.id, f.id, url_segment(&f.name)),
        "permalink": format!("{base}/files/{}/{}/{}", f.user, f.id, url_segment(&f.name)),
        "comments_count": 0,
        "channels": channels,
        "groups": [],
        "ims": ims,
        "has_rich_preview": false,
    });
    if f.public_url_shared {
        v["permalink_public"] = json!(public_url(w, base, f));
    }
    v
}

/// `files.sharedPublicURL`'s link: readable without a token while the share lasts. The
/// secret is derived from the file, so the same world gives the same link.
pub fn public_url(w: &World, base: &str, f: &File) -> String {
    format!("{base}/files-pub/{}-{}-{}/{}", w.team.id, f.id, public_secret(f), url_segment(&f.name))
}

pub fn public_secret(f: &File) -> String {
    let mut h: u64 = 0x9e3779b97f4a7c15;
    for b in f.id.bytes().chain(f.name.bytes()).chain(f.created.to_le_bytes()) {
        h = (h ^ b as u64).wrapping_mul(0x100000001b3).rotate_left(7);
    }
    format!("{:010x}", h & 0xff_ffff_ffff)
}

pub fn url_segment(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn pretty_type(ft: &str) -> &'static str {
    match ft {
        "text" => "Plain Text",
        "markdown" => "Markdown (raw)",
        "json" => "JSON",
        "csv" => "CSV",
        "pdf" => "PDF",
        "png" => "PNG",
        "jpg" => "JPEG",
        "gif" => "GIF",
        "python" => "Python",
        "javascript" => "JavaScript",
        "yaml" => "YAML",
        "zip" => "Zip",
        "html" => "HTML",
        _ => "Binary",
    }
}

pub fn usergroup(w: &World, g: &Usergroup, include_users: bool) -> Value {
    let mut v = json!({
        "id": g.id,
        "team_id": w.team.id,
        "is_usergroup": true,
        "is_subteam": true,
        "name": g.name,
        "description": g.description,
        "handle": g.handle,
        "is_external": false,
        "date_create": g.date_create,
        "date_update": g.date_update,
        "date_delete": g.date_delete,
        "auto_type": null,
        "auto_provision": false,
        "enterprise_subteam_id": "",
        "created_by": g.created_by,
        "updated_by": g.updated_by,
        "deleted_by": null,
        "prefs": {"channels": g.channels, "groups": []},
        "user_count": g.users.len(),
    });
    if include_users {
        v["users"] = json!(g.users);
    }
    v
}

pub fn reminder(r: &Reminder) -> Value {
    let mut v = json!({
        "id": r.id,
        "creator": r.creator,
        "user": r.user,
        "text": r.text,
        "recurring": false,
        "time": r.time,
    });
    v["complete_ts"] = json!(r.complete_ts);
    v
}

pub fn bookmark(w: &World, c: &Channel, b: &Bookmark) -> Value {
    json!({
        "id": b.id,
        "channel_id": c.id,
        "title": b.title,
        "link": b.link,
        "emoji": b.emoji,
        "icon_url": null,
        "type": "link",
        "entity_id": null,
        "date_created": b.created,
        "date_updated": b.updated,
        "rank": "U",
        "last_updated_by_user_id": b.updated_by,
        "last_updated_by_team_id": w.team.id,
        "shortcut_id": null,
        "app_id": null,
    })
}

/// The permalink Slack gives a message: `<base>/archives/<channel>/p<ts without dot>`, with
/// `thread_ts` and `cid` for replies.
pub fn permalink(base: &str, c: &Channel, m: &Message) -> String {
    let p = format!("{base}/archives/{}/p{}", c.id, m.ts.replace('.', ""));
    match &m.thread_ts {
        Some(t) if m.is_reply() => format!("{p}?thread_ts={t}&cid={}", c.id),
        _ => p,
    }
}
