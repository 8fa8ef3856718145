//! Files: the current upload flow (`files.getUploadURLExternal` → POST the bytes to the
//! pre-signed `upload_url` → `files.completeUploadExternal`, which is what slack_sdk's
//! `files_upload_v2` does), `files.info/list/delete`, and downloads from `url_private`.
//!
//! Upload and download URLs live under the request's own base URL
//! (`…/s/<sandbox>/slack/upload/v1/<file>`, `…/slack/files-pri/<team>-<file>/<name>`), so
//! clients never leave the sandbox.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use pome_twin_sdk::{Call, Response, json};
use serde_json::Value;

use crate::args::Args;
use crate::conversations::{check_writable, find, message_entity, message_id, now_micros, now_secs};
use crate::model::*;
use crate::render;
use crate::{Res, SlackError, fail, ok};

/// Uploads above this are refused (Slack's own limit is 1 GB; the host caps bodies lower).
const MAX_FILE: i64 = 1 << 30;

fn file_entity(f: &File) -> Value {
    json!({
        "id": f.id, "name": f.name, "title": f.title, "filetype": f.filetype, "user": f.user,
        "size": f.size, "state": f.state, "channels": f.channels,
        "content": if f.binary { format!("<{} bytes, binary>", f.size) } else { f.content.clone() },
    })
}

fn change_file(w: &mut World, call: &mut Call, fi: usize, f: impl FnOnce(&mut File)) {
    let before = file_entity(&w.files[fi]);
    f(&mut w.files[fi]);
    call.updated("file", w.files[fi].id.clone(), &before, &file_entity(&w.files[fi]));
}

pub fn get_upload_url(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let name = a.str("filename").ok_or_else(|| fail("invalid_arguments"))?;
    let length = a.int("length").ok_or_else(|| fail("invalid_arguments"))?;
    if length <= 0 {
        return Err(fail("invalid_arguments"));
    }
    if length > MAX_FILE {
        return Err(fail("file_too_large"));
    }
    let id = w.new_id("F");
    let (filetype, mimetype) = guess_type(&name);
    let f = File {
        id: id.clone(),
        title: name.clone(),
        name,
        filetype: filetype.into(),
        mimetype: mimetype.into(),
        user: w.agent.clone(),
        created: now_secs(),
        size: length as u64,
        state: FileState::Pending,
        alt_txt: a.str("alt_txt").unwrap_or_default(),
        ..File::default()
    };
    call.created("file", &id, &file_entity(&f));
    w.files.push(f);
    ok(json!({"upload_url": format!("{}/upload/v1/{id}", call.req.base_url), "file_id": id}))
}

/// The body of a `multipart/form-data` upload's first part, or the raw body.
fn upload_payload(call: &Call) -> Vec<u8> {
    let ct = call.req.content_type().to_string();
    let Some(boundary) = ct.split(';').map(str::trim).find_map(|p| p.strip_prefix("boundary=")) else {
        return call.req.body.clone();
    };
    let boundary = format!("--{}", boundary.trim_matches('"'));
    let body = &call.req.body;
    let find = |hay: &[u8], needle: &[u8], from: usize| -> Option<usize> {
        (from..=hay.len().saturating_sub(needle.len())).find(|&i| hay[i..].starts_with(needle))
    };
    let Some(start) = find(body, boundary.as_bytes(), 0) else { return body.clone() };
    let Some(head_end) = find(body, b"\r\n\r\n", start) else { return body.clone() };
    let data_start = head_end + 4;
    let end = find(body, format!("\r\n{boundary}").as_bytes(), data_start).unwrap_or(body.len());
    body[data_start..end].to_vec()
}

/// `POST <upload_url>`: the bytes of a file reserved by `files.getUploadURLExternal`.
/// Answers like Slack's upload host: `200 OK - <length>` as plain text.
pub fn upload_bytes(w: &mut World, call: &mut Call) -> Response {
    let id = call.param("file").to_string();
    let text = |status: u16, s: String| Response { status, headers: vec![("content-type".into(), "text/plain; charset=utf-8".into())], body: s.into_bytes() };
    let Some(fi) = w.file_idx(&id).filter(|&i| w.files[i].state != FileState::Complete) else {
        return text(404, "404 Not Found".into());
    };
    let bytes = upload_payload(call);
    let len = bytes.len();
    let (content, binary) = match String::from_utf8(bytes) {
        Ok(s) => (s, false),
        Err(e) => (STANDARD.encode(e.into_bytes()), true),
    };
    change_file(w, call, fi, |f| {
        f.content = content;
        f.binary = binary;
        f.size = len as u64;
        f.state = FileState::Uploaded;
    });
    text(200, format!("OK - {len}"))
}

pub fn complete_upload(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let list = match a.json("files") {
        Ok(Some(Value::Array(v))) if !v.is_empty() => v,
        _ => return Err(fail("invalid_arguments")),
    };
    let mut picked = Vec::new();
    for item in &list {
        let id = item.get("id").and_then(Value::as_str).ok_or_else(|| fail("invalid_arguments"))?;
        let fi = w.file_idx(id).filter(|&i| w.files[i].user == w.agent).ok_or_else(|| fail("file_not_found"))?;
        if w.files[fi].state != FileState::Uploaded {
            return Err(fail("file_not_found"));
        }
        let title = item.get("title").and_then(Value::as_str).filter(|t| !t.is_empty()).map(String::from);
        picked.push((fi, title));
    }
    let mut targets = Vec::new();
    if let Some(c) = a.str("channel_id") {
        targets.push(c);
    }
    targets.extend(a.list("channels"));
    let mut cis = Vec::new();
    for t in targets {
        let ci = find(w, Some(t))?;
        check_writable(w, ci)?;
        if !cis.contains(&ci) {
            cis.push(ci);
        }
    }
    let thread = a.str("thread_ts");
    if let (Some(t), Some(&ci)) = (&thread, cis.first())
        && w.channels[ci].message(t).is_none() {
            return Err(fail("thread_not_found"));
        }
    for (fi, title) in &picked {
        let shared: Vec<String> = cis.iter().map(|&ci| w.channels[ci].id.clone()).collect();
        change_file(w, call, *fi, |f| {
            if let Some(t) = title {
                f.title = t.clone();
            }
            f.state = FileState::Complete;
            f.channels = shared;
        });
    }
    let ids: Vec<String> = picked.iter().map(|(fi, _)| w.files[*fi].id.clone()).collect();
    let comment = a.str("initial_comment").unwrap_or_default();
    for &ci in &cis {
        let now = now_micros();
        let agent = w.agent_user().clone();
        let c = &mut w.channels[ci];
        let ts = c.next_ts(now);
        let thread_ts = thread.clone().map(|t| {
            let pi = c.message(&t).expect("checked above");
            let parent = c.messages[pi].thread_ts.clone().filter(|_| c.messages[pi].is_reply()).unwrap_or(t);
            if let Some(p) = c.message(&parent) {
                c.messages[p].thread_ts.get_or_insert_with(|| parent.clone());
            }
            parent
        });
        let m = Message {
            ts: ts.clone(),
            user: agent.id.clone(),
            bot_id: agent.bot_id.clone(),
            text: comment.clone(),
            thread_ts,
            files: ids.clone(),
            ..Message::default()
        };
        call.created("message", message_id(&c.id, &ts), &message_entity(&c.id, &m));
        c.insert_message(m);
    }
    let base = call.req.base_url.clone();
    let files: Vec<Value> = picked.iter().map(|(fi, _)| render::file(w, &w.files[*fi], &base)).collect();
    ok(json!({"files": files}))
}

/// A live file the agent may see: its own, or one shared somewhere it can see.
fn visible_file(w: &World, id: Option<String>) -> Result<usize, SlackError> {
    let id = id.ok_or_else(|| fail("file_not_found"))?;
    let fi = w.file_idx(&id).filter(|&i| w.files[i].state == FileState::Complete).ok_or_else(|| fail("file_not_found"))?;
    let f = &w.files[fi];
    let seen = f.user == w.agent || f.channels.iter().any(|c| w.channel_idx(c).is_some_and(|i| w.visible(&w.channels[i])));
    if seen { Ok(fi) } else { Err(fail("file_not_found")) }
}

pub fn info(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let fi = visible_file(w, a.str("file"))?;
    let mut file = render::file(w, &w.files[fi], &call.req.base_url);
    let f = &w.files[fi];
    if !f.binary && f.mimetype.starts_with("text/") {
        file["preview"] = json!(f.content.chars().take(1000).collect::<String>());
    }
    ok(json!({"file": file, "comments": [], "response_metadata": {"next_cursor": ""}}))
}

pub fn list(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let user = a.str("user");
    let channel = match a.str("channel") {
        Some(c) => Some(w.channels[find(w, Some(c))?].id.clone()),
        None => None,
    };
    let from = a.int("ts_from").unwrap_or(0);
    let to = a.int("ts_to").unwrap_or(i64::MAX);
    let types = a.list("types");
    let type_ok = |f: &File| {
        types.is_empty()
            || types.iter().any(|t| match t.as_str() {
                "all" => true,
                "snippets" => f.filetype == "text" || f.filetype == "markdown",
                "images" => f.mimetype.starts_with("image/"),
                "pdfs" => f.filetype == "pdf",
                "zips" => f.filetype == "zip",
                _ => false,
            })
    };
    let mut picked: Vec<usize> = (0..w.files.len())
        .filter(|&i| visible_file(w, Some(w.files[i].id.clone())).is_ok())
        .filter(|&i| {
            let f = &w.files[i];
            user.as_ref().is_none_or(|u| *u == f.user)
                && channel.as_ref().is_none_or(|c| f.channels.contains(c))
                && f.created >= from
                && f.created <= to
                && type_ok(f)
        })
        .collect();
    picked.sort_by(|x, y| w.files[*y].created.cmp(&w.files[*x].created).then(y.cmp(x)));
    let count = match a.int("count") {
        Some(n) if n > 0 => (n as usize).min(1000),
        _ => 100,
    };
    let page = match a.int("page") {
        Some(n) if n > 0 => (n as usize).min(1_000_000),
        _ => 1,
    };
    let total = picked.len();
    let base = call.req.base_url.clone();
    let files: Vec<Value> =
        picked.iter().skip((page - 1) * count).take(count).map(|&i| render::file(w, &w.files[i], &base)).collect();
    ok(json!({"files": files, "paging": {"count": count, "total": total, "page": page, "pages": total.div_ceil(count).max(1)}}))
}

pub fn delete(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let fi = visible_file(w, a.str("file"))?;
    let me = w.agent_user();
    if w.files[fi].user != w.agent && !me.moderates() {
        return Err(fail("cant_delete_file"));
    }
    let f = w.files.remove(fi);
    call.deleted("file", f.id.clone(), &file_entity(&f));
    for c in &mut w.channels {
        let cid = c.id.clone();
        for m in c.messages.iter_mut().filter(|m| m.files.contains(&f.id)) {
            let before = message_entity(&cid, m);
            m.files.retain(|x| *x != f.id);
            call.updated("message", message_id(&cid, &m.ts), &before, &message_entity(&cid, m));
        }
    }
    ok(json!({}))
}

/// `GET url_private` / `url_private_download`: the file's bytes, for the agent's token only.
pub fn download(w: &mut World, call: &mut Call) -> Response {
    let team_file = call.param("team_file").to_string();
    let id = team_file.rsplit('-').next().unwrap_or("").to_string();
    let not_found = || Response { status: 404, headers: vec![("content-type".into(), "text/plain".into())], body: b"File not found".to_vec() };
    let Ok(fi) = visible_file(w, Some(id)) else { return not_found() };
    let f = &w.files[fi];
    let body = if f.binary { STANDARD.decode(&f.content).unwrap_or_default() } else { f.content.clone().into_bytes() };
    Response { status: 200, headers: vec![("content-type".into(), f.mimetype.clone())], body }
}

pub fn shared_public_url(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let fi = visible_file(w, a.str("file"))?;
    if w.files[fi].user != w.agent {
        return Err(fail("not_allowed"));
    }
    if w.files[fi].public_url_shared {
        return Err(fail("already_public"));
    }
    change_file(w, call, fi, |f| f.public_url_shared = true);
    ok(json!({"file": render::file(w, &w.files[fi], &call.req.base_url)}))
}

pub fn revoke_public_url(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let fi = visible_file(w, a.str("file"))?;
    if w.files[fi].user != w.agent {
        return Err(fail("not_allowed"));
    }
    if w.files[fi].public_url_shared {
        change_file(w, call, fi, |f| f.public_url_shared = false);
    }
    ok(json!({"file": render::file(w, &w.files[fi], &call.req.base_url)}))
}

/// `GET permalink_public`: the bytes of a publicly shared file, no token needed.
pub fn download_public(w: &mut World, call: &mut Call) -> Response {
    let key = call.param("key").to_string();
    let not_found = || Response { status: 404, headers: vec![("content-type".into(), "text/plain".into())], body: b"File not found".to_vec() };
    let mut parts = key.rsplitn(2, '-');
    let (Some(secret), Some(rest)) = (parts.next(), parts.next()) else { return not_found() };
    let id = rest.rsplit('-').next().unwrap_or("");
    let Some(f) = w.files.iter().find(|f| f.id == id && f.state == FileState::Complete) else { return not_found() };
    if !f.public_url_shared || render::public_secret(f) != secret {
        return not_found();
    }
    let body = if f.binary { STANDARD.decode(&f.content).unwrap_or_default() } else { f.content.clone().into_bytes() };
    Response { status: 200, headers: vec![("content-type".into(), f.mimetype.clone())], body }
}
