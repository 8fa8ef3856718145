//! Seeds: the JSON a task declares as the workspace's starting state, validated strictly
//! (every error names the path it is about), and the default workspace used when the seed is
//! empty.
//!
//! ```json
//! { "_meta": {...},                                  // provenance, ignored
//!   "team": {"id", "name", "domain", "email_domain"?},
//!   "agent": "U…" | "name",                          // whose token the agent holds
//!   "users": [{"id"?, "name", "real_name"?, "display_name"?, "email"?, "title"?, "tz"?,
//!              "is_admin"?, "is_owner"?, "is_bot"?, "bot_id"?, "deleted"?, "presence"?, ...}],
//!   "channels": [{"id"?, "name", "is_private"?, "is_archived"?, "is_general"?, "created"?,
//!                 "creator"?, "topic"?, "purpose"?, "members"?, "bookmarks"?,
//!                 "messages"?: [{"user", "text", "ts"?, "thread_ts"?, "reactions"?,
//!                                "replies"?, "pinned"?, "subtype"?, "username"?,
//!                                "blocks"?, "attachments"?, "files"?}]}],
//!   "dms": [{"id"?, "members": [..], "messages"?}],
//!   "files": [{"id"?, "name", "user", "title"?, "filetype"?, "mimetype"?, "content"?,
//!              "channels"?, "created"?}],
//!   "usergroups": [{"id"?, "name", "handle", "description"?, "users"?, "channels"?}],
//!   "reminders": [{"id"?, "user"?, "text", "time"}],
//!   "canvases": [{"id"?, "title", "markdown"?, "channel"?, "is_channel_canvas"?, "creator"?}],
//!   "emoji": {"name": "url" | "/path" | "alias:other"},     // paths are served under the base
//!   "rate_limits": [{"method", "after"?, "count"?, "retry_after"?}] }
//! ```
//!
//! The agent is the user named by `agent`; without it, the user named `pome-agent`; else the
//! first bot user; else a bot user `pome-agent` is added. Messages without `ts` are given
//! one from a fixed seed clock (2026-01-01T10:00:00Z, five minutes apart in seed order), so
//! the same seed always gives the same world. `replies` nests a thread under its parent;
//! `thread_ts` does the same by reference to a message with an explicit `ts`.

use std::collections::BTreeMap;

use pome_twin_sdk::seed::{Obj, kind};
use serde_json::Value;

use crate::model::*;

/// The seed clock: 2026-01-01T10:00:00Z.
const SEED_EPOCH: i64 = 1_767_261_600;
const SEED_STEP: i64 = 300;

/// Build a world from a seed (see the module docs).
pub fn from_seed(seed: &Value) -> Result<World, String> {
    let top = Obj::new(seed, "", &["_meta", "team", "agent", "users", "channels", "dms", "files", "usergroups", "reminders", "canvases", "emoji", "rate_limits"])?;
    let mut w = World::default();
    let mut clock = SeedClock(SEED_EPOCH * 1_000_000, BTreeMap::new());

    w.team = match top.get("team") {
        Some(t) => {
            let t = Obj::new(t, "team", &["id", "name", "domain", "email_domain"])?;
            let team = Team {
                id: t.str("id")?.unwrap_or_else(|| "T0WORKSPACE".into()),
                name: t.str("name")?.unwrap_or_else(|| "Workspace".into()),
                domain: t.str("domain")?.unwrap_or_else(|| "workspace".into()),
                email_domain: t.str("email_domain")?.unwrap_or_default(),
            };
            team
        }
        None => Team { id: "T0WORKSPACE".into(), name: "Workspace".into(), domain: "workspace".into(), email_domain: String::new() },
    };

    for (i, u) in top.arr("users")?.iter().enumerate() {
        let user = parse_user(&mut w, u, &format!("users[{i}]"))?;
        w.users.push(user);
    }

    let agent_arg = top.str("agent")?;
    w.agent = match agent_arg {
        Some(a) => w
            .users
            .iter()
            .find(|u| u.id == a || u.name == a)
            .map(|u| u.id.clone())
            .ok_or_else(|| format!("agent: no user has id or name {a:?}"))?,
        None => match w
            .users
            .iter()
            .find(|u| u.name == "pome-agent")
            .or_else(|| w.users.iter().find(|u| u.is_bot && !u.deleted))
        {
            Some(u) => u.id.clone(),
            None => {
                let id = w.new_id("U");
                let bot = w.new_id("B");
                w.users.push(User {
                    id: id.clone(),
                    name: "pome-agent".into(),
                    real_name: "Pome Agent".into(),
                    is_bot: true,
                    bot_id: Some(bot),
                    presence: "active".into(),
                    tz: "UTC".into(),
                    ..User::default()
                });
                id
            }
        },
    };

    // Channel ids are needed before messages can name files and files can name channels.
    let channels = top.arr("channels")?;
    for (i, c) in channels.iter().enumerate() {
        let path = format!("channels[{i}]");
        let ch = parse_channel(&mut w, c, &path, &mut clock)?;
        w.channels.push(ch);
    }
    for (i, d) in top.arr("dms")?.iter().enumerate() {
        let path = format!("dms[{i}]");
        let ch = parse_dm(&mut w, d, &path, &mut clock)?;
        w.channels.push(ch);
    }

    let mut file_refs = Vec::new();
    for (i, f) in top.arr("files")?.iter().enumerate() {
        let path = format!("files[{i}]");
        let file = parse_file(&mut w, f, &path)?;
        file_refs.push((path, file.id.clone()));
        w.files.push(file);
    }
    // Files named by messages must exist; sharing a file in a message shares it there.
    for ci in 0..w.channels.len() {
        for mi in 0..w.channels[ci].messages.len() {
            for fid in w.channels[ci].messages[mi].files.clone() {
                let Some(fi) = w.file_idx(&fid) else {
                    return Err(format!(
                        "channel {:?}: message {} names file {fid:?}, which files[] does not declare",
                        w.channels[ci].name, w.channels[ci].messages[mi].ts
                    ));
                };
                let cid = w.channels[ci].id.clone();
                if !w.files[fi].channels.contains(&cid) {
                    w.files[fi].channels.push(cid);
                }
            }
        }
    }

    for (i, g) in top.arr("usergroups")?.iter().enumerate() {
        let path = format!("usergroups[{i}]");
        let o = Obj::new(g, &path, &["id", "name", "handle", "description", "users", "channels"])?;
        let id = match o.str("id")? {
            Some(id) => id,
            None => w.new_id("S"),
        };
        let name = o.req_str("name")?;
        let handle = o.req_str("handle")?;
        let description = o.str("description")?.unwrap_or_default();
        let users = o.strs("users")?;
        let chans = o.strs("channels")?;
        for (j, u) in users.iter().enumerate() {
            check_user(&w, u, &format!("{path}.users[{j}]"))?;
        }
        for (j, c) in chans.iter().enumerate() {
            if w.channel_idx(c).is_none() {
                return Err(format!("{path}.channels[{j}]: unknown channel {c:?}"));
            }
        }
        if w.usergroups.iter().any(|g| g.id == id || g.handle == handle) {
            return Err(format!("{path}: duplicate usergroup id or handle"));
        }
        let at = SEED_EPOCH;
        w.usergroups.push(Usergroup {
            id,
            name,
            handle,
            description,
            users,
            channels: chans,
            created_by: w.agent.clone(),
            updated_by: w.agent.clone(),
            date_create: at,
            date_update: at,
            date_delete: 0,
        });
    }

    for (i, r) in top.arr("reminders")?.iter().enumerate() {
        let path = format!("reminders[{i}]");
        let o = Obj::new(r, &path, &["id", "user", "text", "time"])?;
        let id = match o.str("id")? {
            Some(id) => id,
            None => w.new_id("Rm"),
        };
        let user = o.str("user")?.unwrap_or_else(|| w.agent.clone());
        let text = o.req_str("text")?;
        let time = o.int("time")?.ok_or_else(|| format!("{path}.time: required unix time is missing"))?;
        check_user(&w, &user, &format!("{path}.user"))?;
        w.reminders.push(Reminder { id, creator: user.clone(), user, text, time, complete_ts: 0 });
    }

    for (i, c) in top.arr("canvases")?.iter().enumerate() {
        let path = format!("canvases[{i}]");
        let o = Obj::new(c, &path, &["id", "title", "markdown", "channel", "is_channel_canvas", "creator"])?;
        let id = match o.str("id")? {
            Some(id) if id.starts_with('F') && id.len() > 1 => id,
            Some(id) => return Err(format!("{path}.id: canvas ids are file ids starting with F, found {id:?}")),
            None => w.new_id("F"),
        };
        if w.canvases.iter().any(|x| x.id == id) || w.file_idx(&id).is_some() {
            return Err(format!("{path}.id: duplicate id {id:?}"));
        }
        let creator = o.str("creator")?.unwrap_or_else(|| w.agent.clone());
        check_user(&w, &creator, &format!("{path}.creator"))?;
        let channel = o.str("channel")?;
        if let Some(ch) = &channel
            && w.channel_idx(ch).is_none() {
                return Err(format!("{path}.channel: unknown channel {ch:?}"));
            }
        let is_channel_canvas = o.bool("is_channel_canvas")?.unwrap_or(false);
        if is_channel_canvas && channel.is_none() {
            return Err(format!("{path}.is_channel_canvas: a channel canvas needs its channel"));
        }
        if is_channel_canvas && w.canvases.iter().any(|x| x.is_channel_canvas && x.channel == channel) {
            return Err(format!("{path}: the channel already has its canvas"));
        }
        let title = o.req_str("title")?;
        let markdown = o.str("markdown")?.unwrap_or_default();
        w.canvases.push(Canvas::new(id, title, creator, SEED_EPOCH, channel, is_channel_canvas, &markdown));
    }

    if let Some(e) = top.get("emoji") {
        let Value::Object(m) = e else {
            return Err(format!("emoji: expected an object of name → URL, found {}", kind(e)));
        };
        for (k, v) in m {
            let url = v.as_str().ok_or_else(|| format!("emoji.{k}: expected a string (URL or alias:name)"))?;
            w.emoji.insert(k.clone(), url.to_string());
        }
    }

    for (i, r) in top.arr("rate_limits")?.iter().enumerate() {
        let path = format!("rate_limits[{i}]");
        let o = Obj::new(r, &path, &["method", "after", "count", "retry_after"])?;
        let method = o.req_str("method")?;
        let nat = |v: Option<i64>, key: &str, default: u32| -> Result<u32, String> {
            match v {
                None => Ok(default),
                Some(n) if (0..=u32::MAX as i64).contains(&n) => Ok(n as u32),
                Some(_) => Err(format!("{path}.{key}: expected a non-negative integer")),
            }
        };
        let after = nat(o.int("after")?, "after", 0)?;
        let count = nat(o.int("count")?, "count", 1)?;
        let retry_after = nat(o.int("retry_after")?, "retry_after", 30)?;
        w.rate_limits.push(RateLimit { method, after, count, retry_after, seen: 0 });
    }

    let _ = file_refs;
    Ok(w)
}

/// The seed clock, and the bot ids given to integrations (`username`-only messages) so that
/// one integration keeps one `bot_id` across the seed.
struct SeedClock(i64, BTreeMap<String, String>);

impl SeedClock {
    fn tick(&mut self) -> i64 {
        self.0 += SEED_STEP * 1_000_000;
        self.0
    }
    fn saw(&mut self, micros: i64) {
        self.0 = self.0.max(micros);
    }
}

fn check_user(w: &World, id: &str, path: &str) -> Result<(), String> {
    if w.user(id).is_some() {
        Ok(())
    } else {
        Err(format!("{path}: unknown user {id:?} (users[].id)"))
    }
}

fn parse_user(w: &mut World, v: &Value, path: &str) -> Result<User, String> {
    let o = Obj::new(v, path, &["id", "name", "real_name", "display_name", "first_name", "last_name", "email", "title", "phone", "tz", "is_admin", "is_owner", "is_bot", "is_restricted", "bot_id", "deleted", "presence", "status_text", "status_emoji"])?;
    let id = match o.str("id")? {
        Some(id) if !id.is_empty() => id,
        Some(_) => return Err(format!("{path}.id: must not be empty")),
        None => w.new_id("U"),
    };
    let name = o.req_str("name")?;
    let real_name = o.str("real_name")?.unwrap_or_else(|| name.clone());
    let mut u = User {
        display_name: o.str("display_name")?.unwrap_or_default(),
        first_name: o.str("first_name")?.unwrap_or_else(|| real_name.split(' ').next().unwrap_or("").to_string()),
        last_name: o
            .str("last_name")?
            .unwrap_or_else(|| real_name.split_once(' ').map(|(_, l)| l.to_string()).unwrap_or_default()),
        email: o.str("email")?,
        title: o.str("title")?.unwrap_or_default(),
        phone: o.str("phone")?.unwrap_or_default(),
        tz: o.str("tz")?.unwrap_or_else(|| "UTC".into()),
        is_admin: o.flag("is_admin")?,
        is_owner: o.flag("is_owner")?,
        is_bot: o.flag("is_bot")?,
        is_restricted: o.flag("is_restricted")?,
        bot_id: o.str("bot_id")?,
        deleted: o.flag("deleted")?,
        presence: o.str("presence")?.unwrap_or_else(|| "active".into()),
        status_text: o.str("status_text")?.unwrap_or_default(),
        status_emoji: o.str("status_emoji")?.unwrap_or_default(),
        updated: SEED_EPOCH,
        id,
        name,
        real_name,
        ..User::default()
    };
    if u.presence != "active" && u.presence != "away" {
        return Err(format!("{path}.presence: expected \"active\" or \"away\", found {:?}", u.presence));
    }
    if w.users.iter().any(|x| x.id == u.id) {
        return Err(format!("{path}.id: duplicate user id {:?}", u.id));
    }
    if w.users.iter().any(|x| x.name == u.name) {
        return Err(format!("{path}.name: duplicate user name {:?}", u.name));
    }
    if u.is_bot && u.bot_id.is_none() {
        u.bot_id = Some(w.new_id("B"));
    }
    Ok(u)
}

fn parse_topic(o: &Obj, key: &str, creator: &str) -> Result<Topic, String> {
    let path = o.at(key);
    match o.get(key) {
        None => Ok(Topic::default()),
        Some(Value::String(s)) => Ok(Topic {
            value: s.clone(),
            creator: if s.is_empty() { String::new() } else { creator.to_string() },
            last_set: if s.is_empty() { 0 } else { SEED_EPOCH },
        }),
        Some(v @ Value::Object(_)) => {
            let t = Obj::new(v, &path, &["value", "creator", "last_set"])?;
            let value = t.req_str("value")?;
            let c = t.str("creator")?.unwrap_or_else(|| creator.to_string());
            let last_set = t.int("last_set")?.unwrap_or(SEED_EPOCH);
            Ok(Topic { value, creator: c, last_set })
        }
        Some(other) => Err(format!("{path}: expected a string or {{\"value\": ...}}, found {}", kind(other))),
    }
}

fn parse_channel(w: &mut World, v: &Value, path: &str, clock: &mut SeedClock) -> Result<Channel, String> {
    let o = Obj::new(v, path, &["id", "name", "is_private", "is_archived", "is_general", "created", "creator", "members", "topic", "purpose", "messages", "bookmarks"])?;
    let id = match o.str("id")? {
        Some(id) if !id.is_empty() => id,
        Some(_) => return Err(format!("{path}.id: must not be empty")),
        None => w.new_id("C"),
    };
    let name = o.req_str("name")?;
    let name = name.strip_prefix('#').unwrap_or(&name).to_string();
    if let Err(code) = valid_channel_name(&name) {
        return Err(format!("{path}.name: {name:?} is not a valid Slack channel name ({code}: lower-case letters, digits, - and _, at most 80)"));
    }
    if w.channels.iter().any(|c| c.id == id) {
        return Err(format!("{path}.id: duplicate channel id {id:?}"));
    }
    if w.channels.iter().any(|c| c.name == name) {
        return Err(format!("{path}.name: duplicate channel name {name:?}"));
    }
    let is_private = o.flag("is_private")?;
    let is_archived = o.flag("is_archived")?;
    let is_general = o.flag("is_general")?;
    let created = o.int("created")?.unwrap_or(SEED_EPOCH - 86_400);
    let members_given = o.get("members").is_some();
    let mut members = o.strs("members")?;
    for (j, m) in members.iter().enumerate() {
        check_user(w, m, &format!("{path}.members[{j}]"))?;
    }
    if !members_given && (is_general || name == "general") {
        members = w.users.iter().filter(|u| !u.deleted).map(|u| u.id.clone()).collect();
    }
    let mut seen = Vec::new();
    for m in &members {
        if seen.contains(m) {
            return Err(format!("{path}.members: {m:?} is listed twice"));
        }
        seen.push(m.clone());
    }
    let creator = match o.str("creator")? {
        Some(c) => {
            check_user(w, &c, &format!("{path}.creator"))?;
            c
        }
        None => members.first().cloned().unwrap_or_else(|| w.agent.clone()),
    };
    let topic = parse_topic(&o, "topic", &creator)?;
    let purpose = parse_topic(&o, "purpose", &creator)?;
    let mut ch = Channel {
        id,
        name,
        kind: if is_private { Kind::Private } else { Kind::Public },
        is_private,
        is_archived,
        is_general,
        created,
        creator,
        topic,
        purpose,
        members,
        ..Channel::default()
    };
    let msgs = o.arr("messages")?;
    parse_messages(w, &mut ch, msgs, &format!("{path}.messages"), clock)?;
    for (j, b) in o.arr("bookmarks")?.iter().enumerate() {
        let bp = format!("{path}.bookmarks[{j}]");
        let bo = Obj::new(b, &bp, &["title", "link", "emoji"])?;
        let title = bo.req_str("title")?;
        let link = bo.req_str("link")?;
        let emoji = bo.str("emoji")?.unwrap_or_default();
        let id = w.new_id("Bk");
        ch.bookmarks.push(Bookmark { id, title, link, emoji, created: SEED_EPOCH, updated: SEED_EPOCH, updated_by: ch.creator.clone() });
    }
    Ok(ch)
}

fn parse_dm(w: &mut World, v: &Value, path: &str, clock: &mut SeedClock) -> Result<Channel, String> {
    let o = Obj::new(v, path, &["id", "members", "messages"])?;
    let id_arg = o.str("id")?;
    let mut members = o.strs("members")?;
    for (j, m) in members.iter().enumerate() {
        check_user(w, m, &format!("{path}.members[{j}]"))?;
    }
    members.dedup();
    if members.is_empty() || members.len() > 9 {
        return Err(format!("{path}.members: a DM has 1 or 2 people, a group DM 3 to 9"));
    }
    let kind = if members.len() <= 2 { Kind::Im } else { Kind::Mpim };
    let id = match id_arg {
        Some(id) => id,
        None => w.new_id(if kind == Kind::Im { "D" } else { "C" }),
    };
    if w.channels.iter().any(|c| c.id == id) {
        return Err(format!("{path}.id: duplicate conversation id {id:?}"));
    }
    let name = w.dm_name(kind, &members);
    let mut ch = Channel {
        id,
        name,
        kind,
        is_private: kind == Kind::Mpim,
        created: SEED_EPOCH - 86_400,
        creator: members[0].clone(),
        members,
        is_open: true,
        ..Channel::default()
    };
    let msgs = o.arr("messages")?;
    parse_messages(w, &mut ch, msgs, &format!("{path}.messages"), clock)?;
    Ok(ch)
}

fn parse_messages(
    w: &mut World,
    ch: &mut Channel,
    msgs: &[Value],
    path: &str,
    clock: &mut SeedClock,
) -> Result<(), String> {
    let mut pending = Vec::new();
    for (i, m) in msgs.iter().enumerate() {
        parse_message(w, ch, m, &format!("{path}[{i}]"), None, clock, &mut pending)?;
    }
    pending.sort_by_key(|(m, _, _): &(Message, String, bool)| ts_micros(&m.ts).unwrap_or(0));
    for win in pending.windows(2) {
        if win[0].0.ts == win[1].0.ts {
            return Err(format!("{}.ts: {:?} is used twice in channel {:?}", win[1].1, win[1].0.ts, ch.name));
        }
    }
    // Threads: a reply names a parent that is a top-level message of this channel.
    let tops: Vec<String> = pending.iter().filter(|(m, _, _)| !m.is_reply()).map(|(m, _, _)| m.ts.clone()).collect();
    for (m, p, _) in &pending {
        if let Some(t) = &m.thread_ts
            && *t != m.ts {
                if !tops.contains(t) {
                    return Err(format!("{p}.thread_ts: no top-level message in channel {:?} has ts {t:?}", ch.name));
                }
                if ts_micros(&m.ts) <= ts_micros(t) {
                    return Err(format!("{p}.ts: a reply must be later than its parent {t:?}"));
                }
            }
    }
    let parents: Vec<String> = pending.iter().filter_map(|(m, _, _)| m.thread_ts.clone()).collect();
    for (mut m, _, pinned) in pending {
        if !m.is_reply() && parents.contains(&m.ts) {
            m.thread_ts = Some(m.ts.clone());
        }
        if pinned {
            ch.pins.push(Pin { ts: m.ts.clone(), by: m.user.clone(), at: ts_micros(&m.ts).unwrap_or(0) / 1_000_000 });
        }
        ch.last_ts = ch.last_ts.max(ts_micros(&m.ts).unwrap_or(0));
        ch.messages.push(m);
    }
    Ok(())
}

fn parse_message(
    w: &mut World,
    ch: &Channel,
    v: &Value,
    path: &str,
    parent: Option<&str>,
    clock: &mut SeedClock,
    out: &mut Vec<(Message, String, bool)>,
) -> Result<(), String> {
    let o = Obj::new(v, path, &["user", "username", "text", "ts", "thread_ts", "reactions", "subtype", "bot_id", "pinned", "blocks", "attachments", "files", "replies"])?;
    let username = o.str("username")?;
    let user = match o.str("user")? {
        Some(u) => {
            check_user(w, &u, &format!("{path}.user"))?;
            u
        }
        None if username.is_some() => String::new(),
        None => return Err(format!("{path}.user: required (a users[].id), or give \"username\" for an integration's message")),
    };
    let text = o.req_str("text")?;
    let ts = match o.str("ts")? {
        Some(t) => {
            if !is_canonical_ts(&t) {
                return Err(format!("{path}.ts: {t:?} is not a Slack timestamp like \"1767261600.000100\""));
            }
            clock.saw(ts_micros(&t).unwrap_or(0));
            t
        }
        None => fmt_ts(clock.tick()),
    };
    let thread_ts = match (o.str("thread_ts")?, parent) {
        (Some(_), Some(_)) => return Err(format!("{path}.thread_ts: not allowed inside \"replies\" (the parent is implied)")),
        (Some(t), None) => {
            if !is_canonical_ts(&t) {
                return Err(format!("{path}.thread_ts: {t:?} is not a Slack timestamp"));
            }
            Some(t)
        }
        (None, Some(p)) => Some(p.to_string()),
        (None, None) => None,
    };
    let mut reactions = Vec::new();
    for (j, r) in o.arr("reactions")?.iter().enumerate() {
        let rp = format!("{path}.reactions[{j}]");
        let ro = Obj::new(r, &rp, &["name", "users", "count"])?;
        let name = ro.req_str("name")?;
        let name = name.trim_matches(':').to_string();
        let users = ro.strs("users")?;
        let count = ro.int("count")?;
        for (k, u) in users.iter().enumerate() {
            check_user(w, u, &format!("{rp}.users[{k}]"))?;
        }
        if users.is_empty() {
            return Err(format!("{rp}.users: a reaction needs at least one user"));
        }
        if let Some(c) = count
            && c != users.len() as i64 {
                return Err(format!("{rp}.count: {c} does not match the {} users listed", users.len()));
            }
        if reactions.iter().any(|x: &Reaction| x.name == name) {
            return Err(format!("{rp}.name: reaction {name:?} listed twice on one message"));
        }
        reactions.push(Reaction { name, users });
    }
    let subtype = o.str("subtype")?;
    let bot_id = o.str("bot_id")?;
    let pinned = o.flag("pinned")?;
    let blocks = raw_json_array(&o, "blocks")?;
    let attachments = raw_json_array(&o, "attachments")?;
    let files = o.strs("files")?;
    let replies = o.arr("replies")?;
    if parent.is_some() && !replies.is_empty() {
        return Err(format!("{path}.replies: replies cannot have replies"));
    }
    let bot_id = bot_id.or_else(|| w.user(&user).and_then(|u| u.bot_id.clone()));
    // An integration's message (no user): Slack's `bot_message`, with the integration's bot id.
    let (subtype, bot_id) = match (&username, user.is_empty()) {
        (Some(name), true) => {
            let id = match bot_id {
                Some(b) => {
                    clock.1.insert(name.clone(), b.clone());
                    b
                }
                None => match clock.1.get(name) {
                    Some(b) => b.clone(),
                    None => {
                        let b = w.new_id("B");
                        clock.1.insert(name.clone(), b.clone());
                        b
                    }
                },
            };
            (subtype.or_else(|| Some("bot_message".into())), Some(id))
        }
        _ => (subtype, bot_id),
    };
    let msg = Message {
        ts: ts.clone(),
        user,
        bot_id,
        username,
        text,
        subtype,
        thread_ts,
        blocks,
        attachments,
        reactions,
        edited: None,
        files,
    };
    let _ = ch;
    out.push((msg, path.to_string(), pinned));
    for (j, r) in replies.iter().enumerate() {
        parse_message(w, ch, r, &format!("{path}.replies[{j}]"), Some(&ts), clock, out)?;
    }
    Ok(())
}

fn raw_json_array(o: &Obj, key: &str) -> Result<Option<String>, String> {
    let path = o.at(key);
    match o.get(key) {
        None => Ok(None),
        Some(v @ Value::Array(_)) => Ok(Some(v.to_string())),
        Some(other) => Err(format!("{path}: expected an array, found {}", kind(other))),
    }
}

fn parse_file(w: &mut World, v: &Value, path: &str) -> Result<File, String> {
    let o = Obj::new(v, path, &["id", "name", "user", "title", "filetype", "mimetype", "content", "created", "channels"])?;
    let id = match o.str("id")? {
        Some(id) => id,
        None => w.new_id("F"),
    };
    let name = o.req_str("name")?;
    let user = o.req_str("user")?;
    check_user(w, &user, &format!("{path}.user"))?;
    let title = o.str("title")?.unwrap_or_else(|| name.clone());
    let (ft, mt) = guess_type(&name);
    let filetype = o.str("filetype")?.unwrap_or_else(|| ft.to_string());
    let mimetype = o.str("mimetype")?.unwrap_or_else(|| mt.to_string());
    let content = o.str("content")?.unwrap_or_default();
    let created = o.int("created")?.unwrap_or(SEED_EPOCH);
    let channels = o.strs("channels")?;
    for (j, c) in channels.iter().enumerate() {
        if w.channel_idx(c).is_none() {
            return Err(format!("{path}.channels[{j}]: unknown channel {c:?}"));
        }
    }
    if w.files.iter().any(|f| f.id == id) {
        return Err(format!("{path}.id: duplicate file id {id:?}"));
    }
    Ok(File {
        id,
        name,
        title,
        filetype,
        mimetype,
        user,
        created,
        size: content.len() as u64,
        content,
        binary: false,
        state: FileState::Complete,
        channels,
        alt_txt: String::new(),
        public_url_shared: false,
    })
}

/// The default workspace: Acme, five people (the agent is the bot `pome-agent`), `#general`,
/// `#eng` (with a thread and a pinned message), `#eng-alerts`, `#random` (the agent is not in
/// it), two private channels (`#security`, which the agent is in, and `#leadership`, which
/// it is not), a DM, a usergroup, a file and two custom emoji. Ids follow Slack's formats.
pub fn default_seed() -> Value {
    serde_json::json!({
        "team": {"id": "T0ACME0001", "name": "Acme", "domain": "acme", "email_domain": "acme.test"},
        "agent": "U0AGENT001",
        "users": [
            {"id": "U0AGENT001", "name": "pome-agent", "real_name": "Pome Agent", "is_bot": true, "bot_id": "B0AGENT0001"},
            {"id": "U0ALICE001", "name": "alice", "real_name": "Alice Chen", "email": "alice@acme.test", "title": "Engineering Manager", "is_admin": true, "is_owner": true, "tz": "America/Los_Angeles"},
            {"id": "U0BOB00001", "name": "bob", "real_name": "Bob Martinez", "email": "bob@acme.test", "title": "Backend Engineer", "tz": "America/New_York"},
            {"id": "U0CAROL001", "name": "carol", "real_name": "Carol Okafor", "email": "carol@acme.test", "title": "SRE", "tz": "Europe/London", "presence": "away"},
            {"id": "U0DAVE0001", "name": "dave", "real_name": "Dave Kim", "email": "dave@acme.test", "title": "Head of Sales", "tz": "America/Los_Angeles"}
        ],
        "channels": [
            {"id": "C0GENERAL1", "name": "general", "is_general": true,
             "topic": "Company-wide announcements", "purpose": "This channel is for workspace-wide communication and announcements.",
             "creator": "U0ALICE001",
             "members": ["U0ALICE001", "U0BOB00001", "U0CAROL001", "U0DAVE0001", "U0AGENT001"],
             "messages": [
                {"user": "U0ALICE001", "text": "Welcome to Acme, everyone! :wave:"},
                {"user": "U0DAVE0001", "text": "Reminder: all-hands is Thursday at 10am PT. Bring questions!", "reactions": [{"name": "thumbsup", "users": ["U0ALICE001", "U0BOB00001"]}]},
                {"user": "U0BOB00001", "text": "The office wifi password changed, ask <@U0ALICE001> if you need it."}
             ]},
            {"id": "C0ENG00001", "name": "eng", "topic": "api v2.3 release this week", "purpose": "Engineering discussion",
             "creator": "U0ALICE001",
             "members": ["U0ALICE001", "U0BOB00001", "U0CAROL001", "U0AGENT001"],
             "bookmarks": [{"title": "Runbook", "link": "https://wiki.acme.test/runbook"}],
             "messages": [
                {"user": "U0CAROL001", "text": "Deploy of api v2.3 goes out at 3pm today. Any blockers?",
                 "replies": [
                    {"user": "U0BOB00001", "text": "The orders migration <https://github.com/acme/api/pull/42|#42> has to land first."},
                    {"user": "U0ALICE001", "text": "Landed. Good to go :rocket:"},
                    {"user": "U0CAROL001", "text": "Thanks both, starting the deploy."}
                 ]},
                {"user": "U0BOB00001", "text": "<@U0CAROL001> can you look at the flaky `test_checkout` in <#C0ENGALRT1|eng-alerts>?", "pinned": true},
                {"user": "U0ALICE001", "text": "Deploy checklist is in the channel files.", "files": ["F0CHECKLST1"]}
             ]},
            {"id": "C0ENGALRT1", "name": "eng-alerts", "purpose": "CI and monitoring alerts",
             "creator": "U0ALICE001",
             "members": ["U0ALICE001", "U0BOB00001", "U0AGENT001"],
             "messages": [
                {"username": "ci-bot", "bot_id": "B0CIBOT0001", "text": "CI failed on main: test_checkout timed out after 30s"},
                {"user": "U0BOB00001", "text": "Looking into it."}
             ]},
            {"id": "C0RANDOM01", "name": "random", "purpose": "Non-work banter and water cooler conversation",
             "creator": "U0ALICE001",
             "members": ["U0ALICE001", "U0BOB00001", "U0CAROL001", "U0DAVE0001"],
             "messages": [
                {"user": "U0DAVE0001", "text": "Anyone up for lunch at the taco place?"}
             ]},
            {"id": "C0SECURTY1", "name": "security", "is_private": true, "purpose": "Security incidents",
             "creator": "U0ALICE001",
             "members": ["U0ALICE001", "U0CAROL001", "U0AGENT001"],
             "messages": [
                {"user": "U0CAROL001", "text": "Rotated the staging database credentials after the audit."}
             ]},
            {"id": "C0LEADERS1", "name": "leadership", "is_private": true, "purpose": "Leadership team",
             "creator": "U0ALICE001",
             "members": ["U0ALICE001", "U0DAVE0001"],
             "messages": [
                {"user": "U0DAVE0001", "text": "Q3 numbers are in; let's discuss Friday."}
             ]}
        ],
        "dms": [
            {"id": "D0ALICEAGT1", "members": ["U0ALICE001", "U0AGENT001"],
             "messages": [{"user": "U0ALICE001", "text": "Hey, can you keep an eye on #eng-alerts today?"}]}
        ],
        "files": [
            {"id": "F0CHECKLST1", "name": "deploy-checklist.md", "title": "Deploy checklist", "user": "U0ALICE001",
             "content": "# Deploy checklist\n\n1. Migrations landed\n2. Feature flags set\n3. Announce in #eng\n"}
        ],
        "usergroups": [
            {"id": "S0ENGTEAM1", "name": "Engineering", "handle": "eng-team", "description": "All engineers",
             "users": ["U0ALICE001", "U0BOB00001", "U0CAROL001"], "channels": ["C0ENG00001"]}
        ],
        "emoji": {"shipit": "/emoji/shipit.png", "squirrel": "alias:shipit"}
    })
}
