//! `search.messages`, `search.files`, `search.all` with Slack's query language: words (all
//! must match, case-insensitively), `"exact phrases"`, `-excluded` words, and the modifiers
//! `in:#channel` / `in:@user` / `in:<#C…>`, `from:@user` / `from:<@U…>` / `from:me`,
//! `has:link|pin|reaction|file|:emoji:`, `is:thread`, `before:`/`after:`/`on:`/`during:`
//! (dates `YYYY-MM-DD`, `YYYY-MM`, `YYYY`, `today`, `yesterday`).
//!
//! Only what the agent may see is searched: public channels and the private channels and DMs
//! it belongs to. Results are ranked by time (`sort=score` is accepted and ranks the same).
//! Slack lets only user tokens search; the twin lets the agent search whatever its token
//! type, because a task hands the agent a single token and search is part of its work.

use pome_twin_sdk::{Call, json, time};
use serde_json::Value;

use crate::args::Args;
use crate::conversations::now_secs;
use crate::model::*;
use crate::render;
use crate::{Res, SlackError, fail, ok};

/// Subtypes Slack leaves out of search results.
const UNSEARCHABLE: &[&str] = &[
    "channel_join", "channel_leave", "channel_topic", "channel_purpose", "channel_name",
    "channel_archive", "channel_unarchive", "tombstone",
];

#[derive(Default, Debug)]
struct Query {
    words: Vec<String>,
    phrases: Vec<String>,
    excluded: Vec<String>,
    /// Conversation ids from `in:`; an `in:` naming nothing matches nothing.
    in_: Option<Vec<String>>,
    from: Option<Vec<String>>,
    has: Vec<String>,
    is_thread: bool,
    /// Unix seconds, inclusive lower and exclusive upper bounds.
    after: Option<i64>,
    before: Option<i64>,
}

fn tokens(q: &str) -> Vec<(String, bool)> {
    // (token, was quoted)
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for ch in q.chars() {
        match ch {
            '"' if quoted => {
                out.push((std::mem::take(&mut cur), true));
                quoted = false;
            }
            '"' if cur.is_empty() => quoted = true,
            c if c.is_whitespace() && !quoted => {
                if !cur.is_empty() {
                    out.push((std::mem::take(&mut cur), false));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push((cur, quoted));
    }
    out
}

fn day_start(date: &str) -> Option<i64> {
    time::parse_iso(&format!("{date}T00:00:00Z")).map(|t| t.timestamp())
}

/// A date expression → [start, end) in unix seconds.
fn date_range(s: &str) -> Option<(i64, i64)> {
    let today = now_secs() - now_secs().rem_euclid(86_400);
    match s {
        "today" => return Some((today, today + 86_400)),
        "yesterday" => return Some((today - 86_400, today)),
        _ => {}
    }
    let parts: Vec<&str> = s.split('-').collect();
    match parts.as_slice() {
        [y, m, d] if y.len() == 4 && m.len() == 2 && d.len() == 2 => {
            let start = day_start(s)?;
            Some((start, start + 86_400))
        }
        [y, m] if y.len() == 4 && m.len() == 2 => {
            let start = day_start(&format!("{y}-{m}-01"))?;
            let (ny, nm) = if *m == "12" { (y.parse::<i32>().ok()? + 1, 1) } else { (y.parse().ok()?, m.parse::<u32>().ok()? + 1) };
            Some((start, day_start(&format!("{ny:04}-{nm:02}-01"))?))
        }
        [y] if y.len() == 4 => {
            let n: i32 = y.parse().ok()?;
            Some((day_start(&format!("{n:04}-01-01"))?, day_start(&format!("{:04}-01-01", n + 1))?))
        }
        _ => None,
    }
}

fn resolve_user(w: &World, s: &str) -> Option<String> {
    let s = s.trim_start_matches('@');
    let s = s.strip_prefix("<@").and_then(|x| x.strip_suffix('>')).map(|x| x.split('|').next().unwrap_or(x)).unwrap_or(s);
    if s == "me" {
        return Some(w.agent.clone());
    }
    w.users
        .iter()
        .find(|u| u.id == s || u.name.eq_ignore_ascii_case(s) || u.display_name.eq_ignore_ascii_case(s))
        .map(|u| u.id.clone())
}

fn resolve_in(w: &World, s: &str) -> Vec<String> {
    if s.starts_with('@') || s.starts_with("<@") {
        let Some(u) = resolve_user(w, s) else { return Vec::new() };
        return w
            .channels
            .iter()
            .filter(|c| c.is_im() && c.has_member(&u) && c.has_member(&w.agent))
            .map(|c| c.id.clone())
            .collect();
    }
    let s = s.strip_prefix("<#").and_then(|x| x.strip_suffix('>')).map(|x| x.split('|').next().unwrap_or(x)).unwrap_or(s);
    let s = s.trim_start_matches('#');
    w.channels
        .iter()
        .filter(|c| c.id == s || (!c.is_im() && c.name.eq_ignore_ascii_case(s)))
        .map(|c| c.id.clone())
        .collect()
}

fn parse(w: &World, q: &str) -> Query {
    let mut out = Query::default();
    for (t, quoted) in tokens(q) {
        if quoted {
            out.phrases.push(t.to_lowercase());
            continue;
        }
        let (key, val) = t.split_once(':').unwrap_or(("", &t));
        match key.to_ascii_lowercase().as_str() {
            "in" => out.in_.get_or_insert_with(Vec::new).extend(resolve_in(w, val)),
            "from" => {
                let ids = out.from.get_or_insert_with(Vec::new);
                if let Some(u) = resolve_user(w, val) {
                    ids.push(u);
                }
            }
            "has" => out.has.push(val.to_lowercase()),
            "is" if val.eq_ignore_ascii_case("thread") => out.is_thread = true,
            "before" | "after" | "on" | "during" => match date_range(val) {
                Some((s, e)) => match key {
                    "before" => out.before = Some(out.before.map_or(s, |b| b.min(s))),
                    "after" => out.after = Some(out.after.map_or(e, |a| a.max(e))),
                    _ => {
                        out.after = Some(out.after.map_or(s, |a| a.max(s)));
                        out.before = Some(out.before.map_or(e, |b| b.min(e)));
                    }
                },
                None => out.words.push(t.to_lowercase()),
            },
            _ => {
                let word = t.trim_matches('*').to_lowercase();
                if let Some(x) = word.strip_prefix('-').filter(|x| !x.is_empty()) {
                    out.excluded.push(x.to_string());
                } else if !word.is_empty() {
                    out.words.push(word);
                }
            }
        }
    }
    out
}

fn text_matches(q: &Query, hay: &str) -> bool {
    let hay = hay.to_lowercase();
    q.words.iter().all(|x| hay.contains(x.as_str()))
        && q.phrases.iter().all(|x| hay.contains(x.as_str()))
        && !q.excluded.iter().any(|x| hay.contains(x.as_str()))
}

fn in_time(q: &Query, secs: i64) -> bool {
    q.after.is_none_or(|a| secs >= a) && q.before.is_none_or(|b| secs < b)
}

/// The message's searchable text: its text plus block and attachment text.
fn searchable(m: &Message) -> String {
    let mut s = m.text.clone();
    for raw in [&m.blocks, &m.attachments].into_iter().flatten() {
        s.push(' ');
        s.push_str(raw);
    }
    s
}

fn message_hits(w: &World, q: &Query) -> Vec<(usize, usize)> {
    let mut hits = Vec::new();
    for (ci, c) in w.channels.iter().enumerate() {
        if !w.visible(c) || q.in_.as_ref().is_some_and(|ids| !ids.contains(&c.id)) {
            continue;
        }
        for (mi, m) in c.messages.iter().enumerate() {
            if m.subtype.as_deref().is_some_and(|s| UNSEARCHABLE.contains(&s)) {
                continue;
            }
            if q.from.as_ref().is_some_and(|ids| !ids.contains(&m.user)) {
                continue;
            }
            if q.is_thread && m.thread_ts.is_none() {
                continue;
            }
            let secs = ts_micros(&m.ts).unwrap_or(0) / 1_000_000;
            if !in_time(q, secs) || !text_matches(q, &searchable(m)) {
                continue;
            }
            let has_ok = q.has.iter().all(|h| match h.as_str() {
                "link" => m.text.contains("http://") || m.text.contains("https://"),
                "pin" => c.pins.iter().any(|p| p.ts == m.ts),
                "reaction" => !m.reactions.is_empty(),
                "file" => !m.files.is_empty(),
                e if e.starts_with(':') => m.reactions.iter().any(|r| r.name == e.trim_matches(':')),
                _ => false,
            });
            if has_ok {
                hits.push((ci, mi));
            }
        }
    }
    hits
}

struct Paging {
    page: usize,
    count: usize,
}

fn paging(a: &Args) -> Paging {
    let count = match a.int("count") {
        Some(n) if n > 0 => (n as usize).min(100),
        _ => 20,
    };
    let page = match a.int("page") {
        Some(n) if n > 0 => (n as usize).min(100),
        _ => 1,
    };
    Paging { page, count }
}

fn envelope(total: usize, p: &Paging, matches: Vec<Value>) -> Value {
    let pages = total.div_ceil(p.count).max(1);
    let first = ((p.page - 1) * p.count + 1).min(total.max(1));
    let last = (p.page * p.count).min(total);
    json!({
        "total": total,
        "pagination": {"total_count": total, "page": p.page, "per_page": p.count, "page_count": pages, "first": first, "last": last},
        "paging": {"count": p.count, "total": total, "page": p.page, "pages": pages},
        "matches": matches,
    })
}

fn ordered<T>(hits: Vec<(i64, T)>, a: &Args) -> Vec<T> {
    ranked(hits, a.str("sort").as_deref() == Some("timestamp") && a.str("sort_dir").as_deref() == Some("asc"))
}

fn iid(cid: &str, ts: &str) -> String {
    let mut h: u64 = 0x84222325cbf29ce4;
    for b in cid.bytes().chain(ts.bytes()) {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    let s = format!("{h:016x}{:016x}", h.rotate_left(17) ^ 0x9e3779b97f4a7c15);
    format!("{}-{}-{}-{}-{}", &s[0..8], &s[8..12], &s[12..16], &s[16..20], &s[20..32])
}

/// A message as search answers it.
fn message_match(w: &World, base: &str, ci: usize, mi: usize) -> Value {
    let c = &w.channels[ci];
    let m = &c.messages[mi];
    let mut v = json!({
        "iid": iid(&c.id, &m.ts),
        "team": w.team.id,
        "channel": {
            "id": c.id, "is_channel": c.kind == Kind::Public || c.kind == Kind::Private,
            "is_group": false, "is_im": c.is_im(), "is_mpim": c.is_mpim(),
            "is_shared": false, "is_org_shared": false, "is_ext_shared": false,
            "is_private": c.is_restricted(), "name": c.name,
            "pending_shared": [], "is_pending_ext_shared": false,
        },
        "type": "message",
        "user": m.user,
        "username": w.user(&m.user).map(|u| u.name.clone()).or_else(|| m.username.clone()).unwrap_or_default(),
        "ts": m.ts,
        "text": m.text,
        "permalink": render::permalink(base, c, m),
    });
    if let Some(b) = &m.blocks {
        v["blocks"] = serde_json::from_str(b).unwrap_or(Value::Null);
    }
    if let Some(t) = m.thread_ts.as_ref().filter(|_| m.is_reply()) {
        v["thread_ts"] = json!(t);
    }
    v
}

fn messages_block(w: &World, base: &str, a: &Args, q: &Query) -> Value {
    let hits = message_hits(w, q);
    let keyed = hits.into_iter().map(|(ci, mi)| (ts_micros(&w.channels[ci].messages[mi].ts).unwrap_or(0), (ci, mi))).collect();
    let all = ordered(keyed, a);
    let p = paging(a);
    let total = all.len();
    let matches: Vec<Value> = all
        .into_iter()
        .skip((p.page - 1) * p.count)
        .take(p.count)
        .map(|(ci, mi)| message_match(w, base, ci, mi))
        .collect();
    envelope(total, &p, matches)
}

fn files_block(w: &World, base: &str, a: &Args, q: &Query) -> Value {
    let mut keyed = Vec::new();
    for f in w.files.iter().filter(|f| f.state == FileState::Complete) {
        let visible = f.user == w.agent
            || f.channels.iter().any(|c| w.channel_idx(c).is_some_and(|i| w.visible(&w.channels[i])));
        if !visible {
            continue;
        }
        if q.in_.as_ref().is_some_and(|ids| !f.channels.iter().any(|c| ids.contains(c))) {
            continue;
        }
        if q.from.as_ref().is_some_and(|ids| !ids.contains(&f.user)) {
            continue;
        }
        if !in_time(q, f.created) {
            continue;
        }
        let hay = format!("{} {} {}", f.name, f.title, if f.binary { "" } else { &f.content });
        if text_matches(q, &hay) {
            keyed.push((f.created, f));
        }
    }
    let all = ordered(keyed, a);
    let p = paging(a);
    let total = all.len();
    let matches: Vec<Value> =
        all.into_iter().skip((p.page - 1) * p.count).take(p.count).map(|f| render::file(w, f, base)).collect();
    envelope(total, &p, matches)
}

/// The search's `query`, which every search needs.
pub fn query(a: &Args) -> Result<String, SlackError> {
    a.str("query").filter(|q| !q.trim().is_empty()).ok_or_else(|| fail("no_query"))
}

pub fn messages(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let text = query(a)?;
    let q = parse(w, &text);
    ok(json!({"query": text, "messages": messages_block(w, &call.req.base_url, a, &q)}))
}

pub fn files(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let text = query(a)?;
    let q = parse(w, &text);
    ok(json!({"query": text, "files": files_block(w, &call.req.base_url, a, &q)}))
}

pub fn all(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let text = query(a)?;
    let q = parse(w, &text);
    let base = call.req.base_url.clone();
    ok(json!({
        "query": text,
        "messages": messages_block(w, &base, a, &q),
        "files": files_block(w, &base, a, &q),
        "posts": {"total": 0, "matches": []},
    }))
}

/// The searches of Slack's MCP server (`slack_search_public`, `slack_search_public_and_private`):
/// the same query language over messages and files (canvases among them), narrowed by
/// conversation type (`channel_types`; only public channels when `public_only`), membership
/// (`only_my_channels`), bots (left out unless `include_bots`) and `after`/`before` (unix
/// seconds, inclusive). At most 20 results a page, with an opaque `cursor`.
pub fn mcp_search(w: &World, base: &str, a: &Args, public_only: bool) -> Res {
    let text = query(a)?;
    let q = parse(w, &text);
    let kinds: Vec<Kind> = if public_only {
        vec![Kind::Public]
    } else {
        let listed = a.list("channel_types");
        let names = if listed.is_empty() { vec!["public_channel".into(), "private_channel".into(), "mpim".into(), "im".into()] } else { listed };
        let mut kinds = Vec::new();
        for n in names {
            kinds.push(match n.as_str() {
                "public_channel" => Kind::Public,
                "private_channel" => Kind::Private,
                "mpim" => Kind::Mpim,
                "im" => Kind::Im,
                _ => return Err(fail("invalid_types")),
            });
        }
        kinds
    };
    let contents = a.list("content_types");
    let (want_messages, want_files) = if contents.is_empty() {
        (true, true)
    } else {
        for c in &contents {
            if c != "messages" && c != "files" {
                return Err(fail("invalid_arguments").with("detail", json!("content_types: messages, files")));
            }
        }
        (contents.iter().any(|c| c == "messages"), contents.iter().any(|c| c == "files"))
    };
    let bound = |key: &str| -> Result<Option<i64>, SlackError> {
        match a.str(key) {
            None => Ok(None),
            Some(s) => ts_micros(s.trim()).map(|m| Some(m / 1_000_000)).ok_or_else(|| fail("invalid_arguments").with("detail", json!(format!("{key} must be a unix timestamp")))),
        }
    };
    let (after, before) = (bound("after")?, bound("before")?);
    let in_range = |secs: i64| after.is_none_or(|x| secs >= x) && before.is_none_or(|x| secs <= x);
    let mine = a.flag("only_my_channels");
    let bots = a.flag("include_bots");
    let channel_ok = |c: &Channel| kinds.contains(&c.kind) && (!mine || c.has_member(&w.agent));

    let mut messages = Vec::new();
    if want_messages {
        for (ci, mi) in message_hits(w, &q) {
            let c = &w.channels[ci];
            let m = &c.messages[mi];
            let by_bot = m.bot_id.is_some() || w.user(&m.user).is_some_and(|u| u.is_bot);
            if channel_ok(c) && (bots || !by_bot) && in_range(ts_micros(&m.ts).unwrap_or(0) / 1_000_000) {
                messages.push((ts_micros(&m.ts).unwrap_or(0), (ci, mi)));
            }
        }
    }
    let shared_ok = |chs: &[String]| chs.iter().any(|id| w.channel_idx(id).is_some_and(|i| w.visible(&w.channels[i]) && channel_ok(&w.channels[i])));
    let mut files: Vec<(i64, Value)> = Vec::new();
    if want_files {
        for f in w.files.iter().filter(|f| f.state == FileState::Complete) {
            let ok_here = shared_ok(&f.channels) || (!public_only && !mine && f.user == w.agent);
            if !ok_here || q.from.as_ref().is_some_and(|ids| !ids.contains(&f.user)) || !in_time(&q, f.created) || !in_range(f.created) {
                continue;
            }
            let hay = format!("{} {} {}", f.name, f.title, if f.binary { "" } else { &f.content });
            if text_matches(&q, &hay) {
                files.push((f.created, render::file(w, f, base)));
            }
        }
        for c in &w.canvases {
            let chans: Vec<String> = c.channel.iter().cloned().collect();
            let ok_here = shared_ok(&chans) || (!public_only && !mine && c.creator == w.agent);
            if !ok_here || q.from.as_ref().is_some_and(|ids| !ids.contains(&c.creator)) || !in_time(&q, c.updated) || !in_range(c.updated) {
                continue;
            }
            if text_matches(&q, &format!("{} {}", c.title, c.markdown())) {
                files.push((c.updated, json!({
                    "id": c.id, "title": c.title, "name": c.title, "filetype": "canvas", "user": c.creator,
                    "created": c.created, "updated": c.updated, "permalink": crate::canvases::permalink(w, base, c),
                })));
            }
        }
    }
    let by_time = a.str("sort").as_deref() == Some("timestamp");
    let asc = a.str("sort_dir").as_deref() == Some("asc");
    let messages: Vec<(usize, usize)> = ranked(messages, by_time && asc);
    let files: Vec<Value> = ranked(files, by_time && asc);
    let start = match crate::args::read_cursor(a, "search")? {
        None => 0,
        Some(p) => p.parse::<usize>().map_err(|_| fail("invalid_cursor"))?,
    };
    let limit = a.limit(20, 20);
    let more = messages.len().max(files.len()) > start + limit;
    let concise = a.str("response_format").as_deref() == Some("concise");
    let max_len = a.int("max_context_length").filter(|n| *n > 0).map(|n| n as usize);
    let msgs: Vec<Value> = messages
        .into_iter()
        .skip(start)
        .take(limit)
        .map(|(ci, mi)| {
            let mut v = message_match(w, base, ci, mi);
            if concise {
                v = json!({"channel": v["channel"]["id"], "user": v["user"], "ts": v["ts"], "text": v["text"], "permalink": v["permalink"]});
            }
            if a.bool("include_context") != Some(false) {
                v["context"] = json!(context(w, ci, mi, max_len));
            }
            v
        })
        .collect();
    let files: Vec<Value> = files.into_iter().skip(start).take(limit).collect();
    let mut out = json!({"query": text});
    if want_messages {
        out["messages"] = json!(msgs);
    }
    if want_files {
        out["files"] = json!(files);
    }
    out["response_metadata"] = json!({"next_cursor": if more { crate::args::cursor("search", start + limit) } else { String::new() }});
    ok(out)
}

/// Newest first (relevance is ranked by time too until scoring is modelled), or oldest first.
fn ranked<T>(mut v: Vec<(i64, T)>, oldest_first: bool) -> Vec<T> {
    v.sort_by_key(|x| std::cmp::Reverse(x.0));
    if oldest_first {
        v.reverse();
    }
    v.into_iter().map(|(_, x)| x).collect()
}

/// The messages either side of a hit in its conversation (or thread), texts cut to `max_len`.
fn context(w: &World, ci: usize, mi: usize, max_len: Option<usize>) -> Vec<Value> {
    let c = &w.channels[ci];
    let m = &c.messages[mi];
    let same_thread = |x: &Message| if m.is_reply() { x.thread_ts == m.thread_ts } else { x.in_history() };
    let around: Vec<&Message> = c.messages.iter().filter(|x| same_thread(x)).collect();
    let at = around.iter().position(|x| x.ts == m.ts).unwrap_or(0);
    let lo = at.saturating_sub(1);
    let hi = (at + 2).min(around.len());
    around[lo..hi]
        .iter()
        .filter(|x| x.ts != m.ts)
        .map(|x| {
            let text: String = match max_len {
                Some(n) => x.text.chars().take(n).collect(),
                None => x.text.clone(),
            };
            json!({"user": x.user, "ts": x.ts, "text": text})
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_language_splits_modifiers_phrases_and_exclusions() {
        let w = <World as pome_twin_sdk::Twin>::init(None).unwrap();
        let q = parse(&w, "deploy \"go out\" -flaky in:#eng from:@carol has:link after:2026-01-01");
        assert_eq!(q.words, vec!["deploy"]);
        assert_eq!(q.phrases, vec!["go out"]);
        assert_eq!(q.excluded, vec!["flaky"]);
        assert_eq!(q.in_, Some(vec!["C0ENG00001".to_string()]));
        assert_eq!(q.from, Some(vec!["U0CAROL001".to_string()]));
        assert_eq!(q.has, vec!["link"]);
        assert_eq!(q.after, Some(1_767_312_000));
    }
}
