//! Google's Gmail MCP server (`https://gmailmcp.googleapis.com/mcp/v1`) as the twin serves it
//! at `/mcp/v1`: JSON-RPC over streamable HTTP (`initialize`, `tools/list`, `tools/call`,
//! `ping`), listing the vendor's 13 tools as captured (`mcp/tools.json`), each answered in
//! its declared output shape. Writes go through the REST handlers, so the tape and the checks
//! see the same actions (`threads.modify`, `drafts.create`, …) whichever door an agent used.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use pome_twin_sdk::{Call, Method, Request, Response, Twin, Value, json, mcp};
use serde_json::Map;

use crate::mime::{self, Compose};
use crate::model::{Message, World};
use crate::search;

const TOOLS: &str = include_str!("../mcp/tools.json");

fn tools() -> &'static [Value] {
    static T: OnceLock<Vec<Value>> = OnceLock::new();
    T.get_or_init(|| serde_json::from_str::<Value>(TOOLS).ok().and_then(|v| v["tools"].as_array().cloned()).unwrap_or_default())
}

/// `POST /mcp/v1`: one JSON-RPC message or a batch of them.
pub fn endpoint(w: &mut World, call: &mut Call) -> Response {
    let server = mcp::Server { name: "gmailmcp.googleapis.com", version: "v1", protocol_version: "2025-03-26", tools: tools() };
    mcp::serve(&server, w, call, tool)
}

/// Serve `method path` through the REST router as part of this call: its changes join the
/// call's, and the call takes its action name. An error answer becomes the tool's error text.
fn rest(w: &mut World, call: &mut Call, method: Method, path: &str, body: Option<Value>) -> Result<Value, String> {
    let mut req = Request::new(method, path);
    req.base_url = call.req.base_url.clone();
    req.auth = call.req.auth;
    if let Some(b) = body {
        req = req.with_json(&b);
    }
    let mut inner = Call::new(req);
    let resp = World::router().dispatch(w, &mut inner);
    call.changes.extend(inner.changes);
    call.deliveries.extend(inner.deliveries);
    call.action = inner.action.or(call.action.take());
    let v: Value = serde_json::from_slice(&resp.body).unwrap_or(json!({}));
    if resp.status >= 400 {
        return Err(v["error"]["message"].as_str().unwrap_or("request failed").to_string());
    }
    Ok(v)
}

fn s<'a>(args: &'a Value, k: &str) -> Option<&'a str> {
    args.get(k).and_then(Value::as_str).filter(|x| !x.is_empty())
}

fn strs(args: &Value, k: &str) -> Vec<String> {
    args.get(k).and_then(Value::as_array).map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect()).unwrap_or_default()
}

fn page(args: &Value) -> Result<(usize, usize), String> {
    let size = args.get("pageSize").and_then(Value::as_u64).unwrap_or(20).clamp(1, 50) as usize;
    let start = match s(args, "pageToken") {
        Some(t) => t.parse::<usize>().map_err(|_| "Invalid page token".to_string())?,
        None => 0,
    };
    Ok((start, size))
}

fn tool(w: &mut World, call: &mut Call, name: &str, args: &Value) -> Result<Value, String> {
    let p = w.primary;
    match name {
        "list_labels" => {
            call.action = Some("labels.list".into());
            let mb = &mut w.mailboxes[p];
            let labels = mb.labels.clone();
            Ok(json!({"labels": labels.iter().map(|l| label_out(mb, l)).collect::<Vec<_>>()}))
        }
        "create_label" => {
            let name = s(args, "displayName").ok_or("displayName is required")?;
            let mut body = json!({"name": name});
            if let Some(c) = args.get("color").filter(|c| c.is_object()) {
                body["color"] = c.clone();
            }
            let l = rest(w, call, Method::Post, "/gmail/v1/users/me/labels", Some(body))?;
            let mb = &mut w.mailboxes[p];
            let label = mb.label_by_id(l["id"].as_str().unwrap_or("")).cloned().ok_or("label vanished")?;
            Ok(label_out(mb, &label))
        }
        "label_message" | "unlabel_message" | "label_thread" | "unlabel_thread" => {
            let (kind, key) = if name.ends_with("message") { ("messages", "messageId") } else { ("threads", "threadId") };
            let id = s(args, key).ok_or(format!("{key} is required"))?;
            let labels = strs(args, "labelIds");
            if labels.is_empty() {
                return Err("labelIds is required".into());
            }
            let field = if name.starts_with("label") { "addLabelIds" } else { "removeLabelIds" };
            rest(w, call, Method::Post, &format!("/gmail/v1/users/me/{kind}/{id}/modify"), Some(json!({ field: labels })))?;
            Ok(json!({}))
        }
        "apply_sensitive_message_label" | "apply_sensitive_thread_label" => {
            let (kind, key) = if name.contains("message") { ("messages", "messageId") } else { ("threads", "threadId") };
            let id = s(args, key).ok_or(format!("{key} is required"))?;
            match s(args, "labelOption") {
                Some("TRASH") => rest(w, call, Method::Post, &format!("/gmail/v1/users/me/{kind}/{id}/trash"), None)?,
                Some("SPAM") => rest(
                    w,
                    call,
                    Method::Post,
                    &format!("/gmail/v1/users/me/{kind}/{id}/modify"),
                    Some(json!({"addLabelIds": ["SPAM"], "removeLabelIds": ["INBOX"]})),
                )?,
                _ => return Err("labelOption must be TRASH or SPAM".into()),
            };
            Ok(json!({}))
        }
        "get_message" => {
            call.action = Some("messages.get".into());
            let id = s(args, "messageId").ok_or("messageId is required")?;
            let m = w.mailboxes[p].get(id).ok_or("Requested entity was not found.")?;
            Ok(message_out(m, s(args, "messageFormat").unwrap_or("FULL_CONTENT")))
        }
        "get_thread" => {
            call.action = Some("threads.get".into());
            let id = s(args, "threadId").ok_or("threadId is required")?;
            let mb = &mut w.mailboxes[p];
            let keys = mb.thread(id);
            if keys.is_empty() {
                return Err("Requested entity was not found.".into());
            }
            let f = s(args, "messageFormat").unwrap_or("FULL_CONTENT");
            Ok(json!({"id": id, "messages": keys.iter().map(|k| message_out(&mb.messages[k], f)).collect::<Vec<_>>()}))
        }
        "search_threads" => {
            call.action = Some("threads.list".into());
            let (start, size) = page(args)?;
            let mb = &mut w.mailboxes[p];
            let q = s(args, "query").unwrap_or("");
            let include = args.get("includeTrash").and_then(Value::as_bool).unwrap_or(false);
            let keys = search::run(mb, q, &[], include)?;
            let mut seen = BTreeSet::new();
            let threads: Vec<String> = keys.iter().map(|k| mb.messages[k].thread_id.clone()).filter(|t| seen.insert(t.clone())).collect();
            let out: Vec<Value> = threads
                .iter()
                .skip(start)
                .take(size)
                .map(|t| {
                    let ks = mb.thread(t);
                    json!({"id": t, "messages": ks.iter().map(|k| message_out(&mb.messages[k], "MINIMAL")).collect::<Vec<_>>()})
                })
                .collect();
            let mut o = Map::new();
            o.insert("threads".into(), Value::Array(out));
            if start + size < threads.len() {
                o.insert("nextPageToken".into(), json!((start + size).to_string()));
            }
            o.insert("resultCountEstimate".into(), json!(threads.len().to_string()));
            Ok(Value::Object(o))
        }
        "list_drafts" => {
            call.action = Some("drafts.list".into());
            let (start, size) = page(args)?;
            let mb = &mut w.mailboxes[p];
            let keys = search::run(mb, s(args, "query").unwrap_or(""), &["DRAFT".to_string()], false)?;
            let drafts: Vec<Value> = keys
                .iter()
                .filter_map(|k| {
                    let m = &mb.messages[k];
                    mb.drafts.iter().find(|d| d.message_id == m.id).map(|d| draft_out(&d.id, m))
                })
                .collect();
            let mut o = Map::new();
            o.insert("drafts".into(), Value::Array(drafts.iter().skip(start).take(size).cloned().collect()));
            if start + size < drafts.len() {
                o.insert("nextPageToken".into(), json!((start + size).to_string()));
            }
            Ok(Value::Object(o))
        }
        "create_draft" => {
            let mb = &w.mailboxes[p];
            let mut c = Compose {
                from: mb.email.clone(),
                from_name: mb.display_name.clone(),
                to: strs(args, "to"),
                cc: strs(args, "cc"),
                bcc: strs(args, "bcc"),
                subject: s(args, "subject").unwrap_or("").to_string(),
                text: Some(s(args, "body").unwrap_or("").to_string()),
                html: s(args, "htmlBody").map(str::to_string),
                date_unix: pome_twin_sdk::time::now_unix(),
                message_id: format!("CAPomeDraft{}@mail.gmail.com", w.seq + 1),
                boundary_seed: format!("draft-{}", w.seq + 1),
                ..Default::default()
            };
            let mut thread = None;
            if let Some(rid) = s(args, "replyToMessageId") {
                let m = mb.get(rid).ok_or("replyToMessageId names no message")?;
                let mut refs = m.references.clone();
                if !m.rfc_id.is_empty() {
                    refs.push(m.rfc_id.clone());
                    c.in_reply_to = Some(m.rfc_id.clone());
                }
                c.references = refs;
                if c.subject.is_empty() {
                    c.subject = if m.subject.to_ascii_lowercase().starts_with("re:") { m.subject.clone() } else { format!("Re: {}", m.subject) };
                }
                thread = Some(m.thread_id.clone());
            }
            for (i, a) in args.get("attachments").and_then(Value::as_array).into_iter().flatten().enumerate() {
                let bytes = mime::b64_decode_any(a["content"].as_str().unwrap_or("")).ok_or(format!("attachments[{i}].content is not base64"))?;
                let name = a["filename"].as_str().unwrap_or("attachment").to_string();
                let mt = a["mimeType"].as_str().unwrap_or("application/octet-stream").to_string();
                c.attachments.push((name, mt, bytes));
            }
            let raw = mime::build(&c);
            let mut message = json!({"raw": mime::b64url(&raw)});
            if let Some(t) = thread {
                message["threadId"] = json!(t);
            }
            let d = rest(w, call, Method::Post, "/gmail/v1/users/me/drafts", Some(json!({"message": message})))?;
            let mb = &w.mailboxes[p];
            let m = mb.get(d["message"]["id"].as_str().unwrap_or("")).ok_or("draft vanished")?;
            Ok(draft_out(d["id"].as_str().unwrap_or(""), m))
        }
        _ => Err(format!("Unknown tool: {name}")),
    }
}

fn label_out(mb: &mut crate::model::Mailbox, l: &crate::model::Label) -> Value {
    let counts = crate::api::label_json(mb, l, true);
    let mut o = json!({"labelId": l.id, "name": l.name, "messagesTotal": counts["messagesTotal"], "messagesUnread": counts["messagesUnread"],
        "threadsTotal": counts["threadsTotal"], "threadsUnread": counts["threadsUnread"]});
    if let Some(c) = &l.color {
        o["color"] = c.clone();
    }
    o
}

/// Plain and HTML bodies and attachment metadata, from the MIME tree.
fn contents(m: &Message) -> (String, String, Vec<Value>) {
    let payload = mime::payload(&m.raw, &m.id);
    let (mut text, mut html, mut atts) = (None, None, Vec::new());
    fn walk(p: &Value, text: &mut Option<String>, html: &mut Option<String>, atts: &mut Vec<Value>) {
        let decode = |p: &Value| p["body"]["data"].as_str().and_then(mime::b64_decode_any).map(|b| String::from_utf8_lossy(&b).into_owned());
        if let Some(id) = p["body"]["attachmentId"].as_str() {
            atts.push(json!({"id": id, "filename": p["filename"], "mimeType": p["mimeType"]}));
        } else if p["mimeType"] == "text/plain" && text.is_none() {
            *text = decode(p);
        } else if p["mimeType"] == "text/html" && html.is_none() {
            *html = decode(p);
        }
        for c in p["parts"].as_array().into_iter().flatten() {
            walk(c, text, html, atts);
        }
    }
    walk(&payload, &mut text, &mut html, &mut atts);
    (text.unwrap_or_default(), html.unwrap_or_default(), atts)
}

fn date_of(m: &Message) -> String {
    chrono::DateTime::from_timestamp_millis(m.internal_date).map(pome_twin_sdk::time::iso).unwrap_or_default()
}

fn message_out(m: &Message, format: &str) -> Value {
    let sender = mime::top_headers(&m.raw).into_iter().find(|(n, _)| n.eq_ignore_ascii_case("From")).map(|(_, v)| v).unwrap_or_else(|| m.from.clone());
    let sender = match sender.strip_prefix('<').and_then(|x| x.strip_suffix('>')) {
        Some(bare) => bare.to_string(),
        None => sender,
    };
    let mut o = json!({"id": m.id, "sender": sender, "toRecipients": m.to, "ccRecipients": m.cc, "bccRecipients": m.bcc,
        "date": date_of(m), "labelIds": m.label_ids});
    if format != "METADATA_ONLY" {
        o["snippet"] = json!(m.snippet);
        o["subject"] = json!(m.subject);
    }
    if format == "FULL_CONTENT" || format == "MESSAGE_FORMAT_UNSPECIFIED" {
        let (text, html, atts) = contents(m);
        o["plaintextBody"] = json!(text);
        o["htmlBody"] = json!(html);
        o["attachmentIds"] = json!(atts.iter().map(|a| a["id"].clone()).collect::<Vec<_>>());
        o["attachments"] = Value::Array(atts);
    }
    o
}

fn draft_out(id: &str, m: &Message) -> Value {
    let (text, html, _) = contents(m);
    json!({"id": id, "threadId": m.thread_id, "subject": m.subject, "toRecipients": m.to, "ccRecipients": m.cc,
        "bccRecipients": m.bcc, "date": date_of(m), "plaintextBody": text, "htmlBody": html})
}
