//! The tools of Slack's own MCP server (mcp.slack.com) that are not one Web API method as is:
//! they compose methods (`slack_create_conversation` creates a channel then invites), default
//! arguments the methods require (`slack_read_user_profile` reads the caller), filter
//! (`slack_list_channel_members`), search the world the way that server does, or keep state
//! no public method reaches (message drafts). Each is served at `/mcp-tools/<tool>` with the
//! tool's own argument names, built from the Web API handlers, so the world, the tape and the
//! checks are the same whichever door an agent used. Answers are Slack's envelope.

use pome_twin_sdk::{Call, json};
use serde_json::{Map, Value};

use crate::args::{Args, paginate};
use crate::canvases::{self, Change};
use crate::conversations::{self, now_secs};
use crate::model::*;
use crate::{MethodFn, Res, SlackError, chat, fail, ok, render, search, users};

/// The tools, each with its handler.
pub const TOOLS: &[(&str, MethodFn)] = &[
    ("slack_send_message", send_message),
    ("slack_send_message_draft", send_message_draft),
    ("slack_create_conversation", create_conversation),
    ("slack_create_canvas", create_canvas),
    ("slack_update_canvas", update_canvas),
    ("slack_read_canvas", read_canvas),
    ("slack_search_public", search_public),
    ("slack_search_public_and_private", search_public_and_private),
    ("slack_search_channels", search_channels),
    ("slack_search_users", search_users),
    ("slack_search_emojis", search_emojis),
    ("slack_read_channel", read_channel),
    ("slack_read_user_profile", read_user_profile),
    ("slack_list_channel_members", list_channel_members),
];

/// Arguments for a Web API handler, from `(name, value)` pairs (absent values left out).
fn args(pairs: &[(&str, Option<Value>)]) -> Args {
    let mut m = Map::new();
    for (k, v) in pairs {
        if let Some(v) = v {
            m.insert(k.to_string(), v.clone());
        }
    }
    Args(m)
}

fn val(a: &Args, key: &str) -> Option<Value> {
    a.0.get(key).filter(|v| !v.is_null()).cloned()
}

fn concise(a: &Args) -> bool {
    a.str("response_format").as_deref() == Some("concise")
}

/// `slack_send_message`: `chat.postMessage`, then the draft it came from (`draft_id`) is
/// removed. Answers with the message's link.
fn send_message(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let draft = match a.str("draft_id") {
        Some(id) => Some(w.drafts.iter().position(|d| d.id == id && d.user == w.agent).ok_or_else(|| fail("draft_not_found"))?),
        None => None,
    };
    let post = args(&[
        ("channel", val(a, "channel_id")),
        ("text", val(a, "message")),
        ("thread_ts", val(a, "thread_ts")),
        ("reply_broadcast", val(a, "reply_broadcast")),
        ("unfurl_links", val(a, "unfurl_app_links")),
    ]);
    let mut out = chat::post_message(w, call, &post)?;
    if let Some(i) = draft {
        let d = w.drafts.remove(i);
        call.deleted("draft", &d.id, &d);
    }
    let cid = out.get("channel").and_then(Value::as_str).unwrap_or_default().to_string();
    let ts = out.get("ts").and_then(Value::as_str).unwrap_or_default().to_string();
    if let Some(ci) = w.channel_idx(&cid) {
        let c = &w.channels[ci];
        if let Some(mi) = c.message(&ts) {
            out.insert("message_link".into(), json!(render::permalink(&call.req.base_url, c, &c.messages[mi])));
        }
    }
    Ok(out)
}

/// `slack_send_message_draft`: a draft in the agent's "Drafts & Sent", one per conversation
/// (and thread), never posted. `channel_id` may be a user id (the DM with them).
fn send_message_draft(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let text = a.str("message").filter(|t| !t.trim().is_empty()).ok_or_else(|| fail("no_text"))?;
    let ci = conversations::find_target(w, call, a.str("channel_id"))?;
    let thread_ts = a.str("thread_ts");
    let cid = w.channels[ci].id.clone();
    if let Some(t) = &thread_ts
        && w.channels[ci].message(t).is_none() {
            return Err(fail("thread_not_found"));
        }
    if w.drafts.iter().any(|d| d.user == w.agent && d.channel == cid && d.thread_ts == thread_ts) {
        return Err(fail("draft_already_exists"));
    }
    let d = Draft { id: w.new_id("Dr"), channel: cid.clone(), thread_ts, text, user: w.agent.clone(), date_created: now_secs() };
    call.created("draft", &d.id, &d);
    let id = d.id.clone();
    w.drafts.push(d);
    ok(json!({"draft_id": id, "channel_link": format!("{}/client/{}/{}", call.req.base_url, w.team.id, cid)}))
}

/// `slack_create_conversation`: with `channel_name`, `conversations.create` then
/// `conversations.invite` of `user_ids`; without, `conversations.open` (1 user: a DM, 2–8: a
/// group DM). Every user is checked before anything is made.
fn create_conversation(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let users = a.list("user_ids");
    for u in &users {
        match w.user(u) {
            None => return Err(fail("user_not_found").with("detail", json!(u))),
            Some(x) if x.deleted => return Err(fail("user_is_deactivated").with("detail", json!(u))),
            _ => {}
        }
    }
    let Some(name) = a.str("channel_name") else {
        if users.is_empty() {
            return Err(fail("users_list_not_supplied"));
        }
        if users.len() > 8 {
            return Err(fail("too_many_users"));
        }
        return conversations::open(w, call, &args(&[("users", Some(json!(users))), ("return_im", Some(json!(true)))]));
    };
    let others: Vec<String> = users.into_iter().filter(|u| *u != w.agent).collect();
    if others.len() > 1000 {
        return Err(fail("too_many_users"));
    }
    let created = conversations::create(w, call, &args(&[("name", Some(json!(name))), ("is_private", val(a, "is_private"))]))?;
    let id = created.get("channel").and_then(|c| c.get("id")).and_then(Value::as_str).unwrap_or_default().to_string();
    if others.is_empty() {
        return Ok(created);
    }
    conversations::invite(w, call, &args(&[("channel", Some(json!(id))), ("users", Some(json!(others)))]))
}

fn canvas_view(w: &World, base: &str, c: &Canvas) -> Value {
    let mut mapping = vec![json!({"section_id": c.title_section, "type": "title", "markdown": c.title})];
    mapping.extend(c.sections.iter().map(|s| json!({"section_id": s.id, "markdown": s.markdown})));
    json!({
        "canvas_id": c.id,
        "title": c.title,
        "markdown": c.markdown(),
        "section_id_mapping": mapping,
        "canvas_url": canvases::permalink(w, base, c),
    })
}

/// `slack_create_canvas`: a standalone canvas (`canvases.create`) from markdown.
fn create_canvas(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let title = a.str("title").filter(|t| !t.trim().is_empty()).ok_or_else(|| fail("invalid_arguments").with("detail", json!("title is required")))?;
    let content = a.str("content").filter(|t| !t.trim().is_empty()).ok_or_else(|| fail("invalid_arguments").with("detail", json!("content must be non-empty")))?;
    let id = canvases::create_canvas(w, call, title, &content, None, false);
    let c = w.canvases.iter().find(|c| c.id == id).expect("just made");
    ok(json!({"canvas": canvas_view(w, &call.req.base_url, c)}))
}

fn edit(kind: &str, section: Option<String>, content: Option<String>) -> Result<Change, SlackError> {
    let bad = |d: &str| fail("invalid_arguments").with("detail", json!(d));
    let content = || content.clone().filter(|c| !c.trim().is_empty()).ok_or_else(|| bad("content must be a non-empty string for this edit"));
    Ok(match (kind, section) {
        ("append", Some(s)) => Change::InsertAfter(s, content()?),
        ("append", None) => Change::InsertAtEnd(content()?),
        ("prepend", Some(s)) => Change::InsertBefore(s, content()?),
        ("prepend", None) => Change::InsertAtStart(content()?),
        ("replace", s) => Change::Replace(s, content()?),
        ("delete", Some(s)) => Change::Delete(s),
        ("delete", None) => return Err(bad("delete needs a section_id")),
        _ => return Err(bad("edit_type must be append, prepend, replace or delete")),
    })
}

/// `slack_update_canvas`: `sections` (or the legacy single `action`) as one `canvases.edit`,
/// all applied or none. Answers the canvas as `slack_read_canvas` does.
fn update_canvas(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let i = canvases::find(w, a.str("canvas_id"))?;
    let mut changes = Vec::new();
    match a.json("sections") {
        Ok(Some(Value::Array(list))) if !list.is_empty() => {
            if list.len() > 100 {
                return Err(fail("invalid_arguments").with("detail", json!("at most 100 operations")));
            }
            for op in &list {
                let s = |k: &str| op.get(k).and_then(Value::as_str).filter(|x| !x.is_empty()).map(str::to_string);
                changes.push(edit(&s("edit_type").unwrap_or_default(), s("section_id"), s("content"))?);
            }
        }
        _ => {
            let action = a.str("action").ok_or_else(|| fail("invalid_arguments").with("detail", json!("give sections (or action)")))?;
            changes.push(edit(&action, a.str("section_id"), a.str("content"))?);
        }
    }
    canvases::apply(w, call, i, changes)?;
    ok(json!({"canvas": canvas_view(w, &call.req.base_url, &w.canvases[i])}))
}

/// `slack_read_canvas`: the markdown and the id of every section.
fn read_canvas(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let i = canvases::find(w, a.str("canvas_id"))?;
    ok(json!({"canvas": canvas_view(w, &call.req.base_url, &w.canvases[i])}))
}

fn search_public(w: &mut World, call: &mut Call, a: &Args) -> Res {
    search::mcp_search(w, &call.req.base_url, a, true)
}

fn search_public_and_private(w: &mut World, call: &mut Call, a: &Args) -> Res {
    search::mcp_search(w, &call.req.base_url, a, false)
}

/// Query terms: words and `"phrases"` that must all occur, `-words` that must not.
fn terms(q: &str) -> (Vec<String>, Vec<String>) {
    let (mut want, mut not) = (Vec::new(), Vec::new());
    for (i, part) in q.split('"').enumerate() {
        if i % 2 == 1 {
            if !part.trim().is_empty() {
                want.push(part.trim().to_lowercase());
            }
            continue;
        }
        for word in part.split_whitespace() {
            match word.strip_prefix('-') {
                Some(x) if !x.is_empty() => not.push(x.to_lowercase()),
                _ => want.push(word.to_lowercase()),
            }
        }
    }
    (want, not)
}

fn matches(terms: &(Vec<String>, Vec<String>), hay: &str) -> bool {
    let hay = hay.to_lowercase();
    terms.0.iter().all(|t| hay.contains(t.as_str())) && !terms.1.iter().any(|t| hay.contains(t.as_str()))
}

/// `slack_search_channels`: channels whose name, topic or purpose hold every term.
fn search_channels(w: &mut World, _call: &mut Call, a: &Args) -> Res {
    let t = terms(&search::query(a)?);
    let types = a.list("channel_types");
    let want = |k: Kind| {
        let name = if k == Kind::Private { "private_channel" } else { "public_channel" };
        if types.is_empty() { k == Kind::Public } else { types.iter().any(|x| x == name) }
    };
    for x in &types {
        if x != "public_channel" && x != "private_channel" {
            return Err(fail("invalid_types"));
        }
    }
    let archived = a.flag("include_archived");
    let hits: Vec<usize> = (0..w.channels.len())
        .filter(|&i| {
            let c = &w.channels[i];
            matches!(c.kind, Kind::Public | Kind::Private)
                && want(c.kind)
                && w.visible(c)
                && (archived || !c.is_archived)
                && matches(&t, &format!("{} {} {}", c.name, c.topic.value, c.purpose.value))
        })
        .collect();
    let (page, next) = paginate(hits, a, "channels", 20, 20)?;
    let list: Vec<Value> = page
        .into_iter()
        .map(|i| {
            let c = &w.channels[i];
            if concise(a) {
                json!({"id": c.id, "name": c.name, "is_private": c.is_private, "is_archived": c.is_archived})
            } else {
                let mut v = render::conversation(w, c);
                v["num_members"] = json!(c.members.len());
                v
            }
        })
        .collect();
    ok(json!({"channels": list, "response_metadata": {"next_cursor": next}}))
}

fn user_view(w: &World, u: &User, concise: bool) -> Value {
    if concise {
        json!({"id": u.id, "name": u.name, "real_name": u.real_name, "display_name": u.display_name, "title": u.title})
    } else {
        render::user(w, u)
    }
}

/// `slack_search_users`: people whose names, email or title hold every term (deactivated
/// accounts left out).
fn search_users(w: &mut World, _call: &mut Call, a: &Args) -> Res {
    let t = terms(&search::query(a)?);
    let hits: Vec<usize> = (0..w.users.len())
        .filter(|&i| {
            let u = &w.users[i];
            let hay = format!("{} {} {} {} {} {}", u.name, u.real_name, u.display_name, u.email.as_deref().unwrap_or(""), u.title, u.id);
            !u.deleted && matches(&t, &hay)
        })
        .collect();
    let (page, next) = paginate(hits, a, "users", 20, 20)?;
    let list: Vec<Value> = page.into_iter().map(|i| user_view(w, &w.users[i], concise(a))).collect();
    ok(json!({"users": list, "response_metadata": {"next_cursor": next}}))
}

/// `slack_search_emojis`: the workspace's custom emoji whose names contain any of the
/// comma-separated terms, up to 200; an alias says what it points to.
fn search_emojis(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let q = search::query(a)?;
    let wanted: Vec<String> = q.split(',').map(|s| s.trim().trim_matches(':').to_lowercase()).filter(|s| !s.is_empty()).collect();
    let list: Vec<Value> = w
        .emoji
        .iter()
        .filter(|(name, _)| wanted.iter().any(|t| name.to_lowercase().contains(t.as_str())))
        .take(200)
        .map(|(name, v)| match v.strip_prefix("alias:") {
            Some(target) => json!({"name": name, "is_alias": true, "alias_for": target}),
            None => json!({"name": name, "is_alias": false, "url": render::emoji_url(&call.req.base_url, v)}),
        })
        .collect();
    ok(json!({"emojis": list}))
}

/// `slack_read_channel`: `conversations.history`; a user id reads the DM with that user.
fn read_channel(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let mut channel = a.str("channel_id").ok_or_else(|| fail("channel_not_found"))?;
    if w.channel_idx(&channel).is_none() && w.user(&channel).is_some() {
        let want: Vec<String> = if channel == w.agent { vec![channel.clone()] } else { vec![w.agent.clone(), channel.clone()] };
        channel = w
            .channels
            .iter()
            .find(|c| c.is_im() && c.members.len() == want.len() && want.iter().all(|u| c.has_member(u)))
            .map(|c| c.id.clone())
            .ok_or_else(|| fail("channel_not_found"))?;
    }
    let limit = a.int("limit").map(|n| n.clamp(1, 100)).unwrap_or(100);
    let h = args(&[
        ("channel", Some(json!(channel))),
        ("limit", Some(json!(limit))),
        ("cursor", val(a, "cursor")),
        ("latest", val(a, "latest")),
        ("oldest", val(a, "oldest")),
    ]);
    let mut out = conversations::history(w, call, &h)?;
    if concise(a)
        && let Some(Value::Array(msgs)) = out.get_mut("messages") {
            for m in msgs.iter_mut() {
                *m = json!({"user": m["user"], "ts": m["ts"], "text": m["text"], "thread_ts": m.get("thread_ts")});
            }
        }
    Ok(out)
}

/// `slack_read_user_profile`: `users.info`, of the caller when `user_id` is absent.
fn read_user_profile(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let user = a.str("user_id").unwrap_or_else(|| w.agent.clone());
    let mut out = users::info(w, call, &args(&[("user", Some(json!(user)))]))?;
    if concise(a) {
        let u = w.user(&user).expect("users.info found it");
        out.insert("user".into(), user_view(w, u, true));
    } else if a.flag("include_locale")
        && let Some(u) = out.get_mut("user") {
            u["locale"] = json!("en-US");
        }
    Ok(out)
}

/// `slack_list_channel_members`: `conversations.members` without deactivated people and bots
/// unless asked, 30 a page, as ids, concise or full profiles.
fn list_channel_members(w: &mut World, _call: &mut Call, a: &Args) -> Res {
    let ci = conversations::find(w, a.str("channel_id"))?;
    let deleted = a.flag("include_deleted");
    let bots = a.flag("include_bots");
    let ids: Vec<String> = w.channels[ci]
        .members
        .iter()
        .filter(|m| w.user(m).is_some_and(|u| (deleted || !u.deleted) && (bots || !u.is_bot)))
        .cloned()
        .collect();
    let (page, next) = paginate(ids, a, "members", 30, 30)?;
    let members: Vec<Value> = match a.str("response_format").as_deref() {
        Some("ids_only") => page.iter().map(|id| json!(id)).collect(),
        f => page.iter().filter_map(|id| w.user(id)).map(|u| user_view(w, u, f == Some("concise"))).collect(),
    };
    ok(json!({"members": members, "response_metadata": {"next_cursor": next}}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_terms_take_phrases_and_exclusions() {
        let t = terms("engineering \"John Smith\" -intern");
        assert_eq!(t, (vec!["engineering".to_string(), "john smith".to_string()], vec!["intern".to_string()]));
        assert!(matches(&t, "John Smith, Engineering lead"));
        assert!(!matches(&t, "John Smith, engineering intern"));
    }
}
