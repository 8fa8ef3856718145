//! Messages, threads, labels, drafts, history and the profile: Gmail's core resources.

use std::collections::BTreeSet;

use pome_twin_sdk::{Call, Response, Value, json};
use serde_json::Map;

use crate::mime::{self, Summary};
use crate::model::{Draft, HistKind, Label, Mailbox, Message, World};
use crate::search;
use crate::{gerr, ok, ok_empty};

// ---------------------------------------------------------------------------------------
// Shared helpers

/// The mailbox `userId` names (`me` or the primary address), after any seeded fault.
pub fn mbox(w: &mut World, call: &Call) -> Result<usize, Response> {
    if let Some(r) = crate::fault(w, call) {
        crate::fields::set(None).ok();
        return Err(r);
    }
    if let Err(e) = crate::fields::set(call.req.query("fields").as_deref()) {
        crate::fields::set(None).ok();
        return Err(gerr(400, "invalidParameter", &e));
    }
    let user = call.param("userId");
    let p = w.primary;
    if user == "me" || user.eq_ignore_ascii_case(&w.mailboxes[p].email) {
        return Ok(p);
    }
    Err(gerr(403, "forbidden", &format!("Delegation denied for {}", w.mailboxes[p].email)))
}

pub fn query_list(call: &Call, key: &str) -> Vec<String> {
    call.req.query_pairs().into_iter().filter(|(k, _)| k == key).map(|(_, v)| v).collect()
}

fn body(call: &Call) -> Result<Value, Response> {
    match call.req.json_value() {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err(gerr(400, "badRequest", "Invalid JSON payload received. Expected an object.")),
        Err(e) => Err(gerr(400, "badRequest", &format!("Invalid JSON payload received. {}", e.0))),
    }
}

fn str_list(v: &Value, key: &str) -> Vec<String> {
    v.get(key).and_then(Value::as_array).map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect()).unwrap_or_default()
}

fn max_results(call: &Call, default: usize, cap: usize) -> Result<usize, Response> {
    match call.req.query("maxResults") {
        None => Ok(default),
        Some(s) => s
            .parse::<usize>()
            .map(|n| n.min(cap))
            .map_err(|_| gerr(400, "invalidArgument", &format!("Invalid value for maxResults: {s}"))),
    }
}

/// Page tokens are opaque and tied to the query they came from.
fn page_start(call: &Call, kind: &str) -> Result<usize, Response> {
    let Some(tok) = call.req.query("pageToken").filter(|t| !t.is_empty()) else { return Ok(0) };
    let bytes = mime::b64_decode_any(&tok).unwrap_or_default();
    let text = String::from_utf8(bytes).unwrap_or_default();
    let want = format!("{kind}:{:x}:", query_fingerprint(call));
    text.strip_prefix(&want)
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| gerr(400, "invalidArgument", "Invalid pageToken"))
}

fn page_token(call: &Call, kind: &str, next: usize) -> String {
    mime::b64url(format!("{kind}:{:x}:{next}", query_fingerprint(call)).as_bytes()).trim_end_matches('=').to_string()
}

fn query_fingerprint(call: &Call) -> u64 {
    let mut pairs: Vec<(String, String)> = call
        .req
        .query_pairs()
        .into_iter()
        .filter(|(k, _)| !matches!(k.as_str(), "pageToken" | "maxResults" | "alt" | "prettyPrint" | "fields" | "key"))
        .collect();
    pairs.sort();
    mime::fnv(&format!("{}?{pairs:?}", call.req.path))
}

pub fn next_id(w: &mut World) -> String {
    w.seq += 1;
    format!("{:016x}", 0x1980_0000_0000_0000u64 + w.seq)
}

/// What a change looks like on the tape: the message's identity and labels.
pub fn tape_view(m: &Message) -> Value {
    json!({"id": m.id, "threadId": m.thread_id, "labelIds": m.label_ids, "subject": m.subject, "to": m.to, "from": m.from})
}

pub fn normalize_subject(s: &str) -> String {
    let mut t = s.trim();
    loop {
        let lower = t.to_ascii_lowercase();
        let cut = ["re:", "fwd:", "fw:", "aw:"].iter().find(|p| lower.starts_with(*p)).map(|p| p.len());
        match cut {
            Some(n) => t = t[n..].trim_start(),
            None => break,
        }
    }
    t.to_lowercase()
}

/// The thread a message joins by `In-Reply-To`/`References` when the subject agrees, as Gmail
/// threads.
pub fn find_thread(mb: &mut Mailbox, s: &Summary) -> Option<String> {
    let mut refs: Vec<&String> = Vec::new();
    if !s.in_reply_to.is_empty() {
        refs.push(&s.in_reply_to);
    }
    refs.extend(s.references.iter().rev());
    let subj = normalize_subject(&s.subject);
    for r in refs {
        let key = mb.idx().rfc_ids.get(r.as_str()).copied();
        if let Some(k) = key {
            let m = &mb.messages[&k];
            if normalize_subject(&m.subject) == subj {
                return Some(m.thread_id.clone());
            }
        }
    }
    None
}

fn check_labels(mb: &Mailbox, ids: &[String], adding: bool) -> Result<(), Response> {
    for l in ids {
        if mb.label_by_id(l).is_none() {
            return Err(gerr(400, "invalidArgument", &format!("Invalid label: {l}")));
        }
        if adding && (l == "DRAFT" || l == "SENT") {
            return Err(gerr(400, "invalidArgument", &format!("Invalid label {l} in AddLabelIds")));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Rendering

#[derive(Clone, Copy, PartialEq)]
pub enum Format {
    Minimal,
    Full,
    Raw,
    Metadata,
}

pub fn format_of(call: &Call) -> Result<Format, Response> {
    match call.req.query("format").as_deref().map(str::to_ascii_lowercase).as_deref() {
        None | Some("full") => Ok(Format::Full),
        Some("minimal") => Ok(Format::Minimal),
        Some("raw") => Ok(Format::Raw),
        Some("metadata") => Ok(Format::Metadata),
        Some(o) => Err(gerr(400, "invalidArgument", &format!("Invalid value for format: {o}"))),
    }
}

pub fn render(m: &Message, f: Format, metadata_headers: &[String]) -> Value {
    let mut o = Map::new();
    o.insert("id".into(), json!(m.id));
    o.insert("threadId".into(), json!(m.thread_id));
    if !m.label_ids.is_empty() {
        o.insert("labelIds".into(), json!(m.label_ids));
    }
    o.insert("snippet".into(), json!(m.snippet));
    match f {
        Format::Full => {
            o.insert("payload".into(), mime::payload(&m.raw, &m.id));
        }
        Format::Metadata => {
            let p = mime::payload(&m.raw, &m.id);
            let headers: Vec<Value> = mime::top_headers(&m.raw)
                .into_iter()
                .filter(|(n, _)| metadata_headers.is_empty() || metadata_headers.iter().any(|h| h.eq_ignore_ascii_case(n)))
                .map(|(n, v)| json!({"name": n, "value": v}))
                .collect();
            o.insert("payload".into(), json!({"partId": "", "mimeType": p["mimeType"], "filename": "", "headers": headers}));
        }
        Format::Raw => {
            o.insert("raw".into(), json!(mime::b64url(&m.raw)));
        }
        Format::Minimal => {}
    }
    o.insert("sizeEstimate".into(), json!(m.size()));
    o.insert("historyId".into(), json!(m.history_id.to_string()));
    o.insert("internalDate".into(), json!(m.internal_date.to_string()));
    Value::Object(o)
}

fn minimal_labels(m: &Message) -> Value {
    let mut o = Map::new();
    o.insert("id".into(), json!(m.id));
    o.insert("threadId".into(), json!(m.thread_id));
    if !m.label_ids.is_empty() {
        o.insert("labelIds".into(), json!(m.label_ids));
    }
    Value::Object(o)
}

// ---------------------------------------------------------------------------------------
// Profile, watch

pub fn get_profile(w: &mut World, call: &mut Call) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let mb = &mut w.mailboxes[b];
    let threads = mb.idx().threads.len();
    ok(&json!({
        "emailAddress": mb.email,
        "messagesTotal": mb.messages.len(),
        "threadsTotal": threads,
        "historyId": mb.history_id.to_string(),
    }))
}

pub fn watch(w: &mut World, call: &mut Call) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let req = match body(call) { Ok(v) => v, Err(r) => return r };
    let topic = req.get("topicName").and_then(Value::as_str).unwrap_or_default();
    if !crate::push::is_name(topic, "topics") {
        return gerr(400, "invalidArgument", "Invalid topicName does not match projects/SOME-PROJECT/topics/SOME-TOPIC");
    }
    if !w.pubsub.topic_exists(topic) {
        let short = topic.rsplit('/').next().unwrap_or(topic);
        return gerr(404, "notFound", &format!("Resource not found (resource={short})."));
    }
    for k in ["labelFilterBehavior", "labelFilterAction"] {
        if let Some(v) = req.get(k).and_then(Value::as_str)
            && v != "include" && v != "exclude" {
                return gerr(400, "invalidArgument", &format!("Invalid value at '{k}' ({v})"));
            }
    }
    let labels = str_list(&req, "labelIds");
    if let Err(r) = check_labels(&w.mailboxes[b], &labels, false) {
        return r;
    }
    // A watch lasts a week unless renewed (Gmail: "call watch at least every 7 days").
    let expiration = pome_twin_sdk::time::now().timestamp_millis() + crate::limits::WATCH_LIFETIME_MS;
    let mb = &mut w.mailboxes[b];
    let before = mb.settings.watch.clone();
    let after = json!({"topicName": topic, "labelIds": labels, "labelFilterBehavior": req.get("labelFilterBehavior"),
                       "labelFilterAction": req.get("labelFilterAction"), "expiration": expiration.to_string()});
    mb.settings.watch = Some(after.clone());
    call.record("watch", &mb.email, before.as_ref(), Some(&after));
    ok(&json!({"historyId": mb.history_id.to_string(), "expiration": expiration.to_string()}))
}

pub fn stop(w: &mut World, call: &mut Call) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let mb = &mut w.mailboxes[b];
    if let Some(before) = mb.settings.watch.take() {
        call.deleted("watch", &mb.email, &before);
    }
    ok_empty()
}

// ---------------------------------------------------------------------------------------
// Messages

pub fn messages_list(w: &mut World, call: &mut Call) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let max = match max_results(call, 100, 500) { Ok(n) => n, Err(r) => return r };
    let start = match page_start(call, "m") { Ok(n) => n, Err(r) => return r };
    let keys = match matching(&mut w.mailboxes[b], call) { Ok(k) => k, Err(r) => return r };
    let mb = &w.mailboxes[b];
    let page: Vec<Value> = keys.iter().skip(start).take(max).map(|k| {
        let m = &mb.messages[k];
        json!({"id": m.id, "threadId": m.thread_id})
    }).collect();
    let mut out = Map::new();
    if !page.is_empty() {
        out.insert("messages".into(), Value::Array(page));
    }
    if start + max < keys.len() {
        out.insert("nextPageToken".into(), json!(page_token(call, "m", start + max)));
    }
    out.insert("resultSizeEstimate".into(), json!(keys.len()));
    ok(&Value::Object(out))
}

/// Message keys matching the request's `q`, `labelIds` and `includeSpamTrash`, newest first.
fn matching(mb: &mut Mailbox, call: &Call) -> Result<Vec<u64>, Response> {
    let q = call.req.query("q").unwrap_or_default();
    let label_ids = query_list(call, "labelIds");
    let include = call.req.query("includeSpamTrash").map(|v| v == "true").unwrap_or(false);
    for l in &label_ids {
        if mb.label_by_id(l).is_none() {
            return Err(gerr(400, "invalidArgument", &format!("Invalid label: {l}")));
        }
    }
    search::run(mb, &q, &label_ids, include).map_err(|e| gerr(400, "invalidArgument", &e))
}

pub fn messages_get(w: &mut World, call: &mut Call) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let f = match format_of(call) { Ok(f) => f, Err(r) => return r };
    let mh = query_list(call, "metadataHeaders");
    match w.mailboxes[b].get(call.param("id")) {
        Some(m) => ok(&render(m, f, &mh)),
        None => not_found(),
    }
}

pub fn not_found() -> Response {
    gerr(404, "notFound", "Requested entity was not found.")
}

/// Read the message a request carries: `raw` in the JSON body, or the uploaded bytes.
pub fn raw_of(meta: &Value, media: Option<Vec<u8>>) -> Result<Vec<u8>, Response> {
    if let Some(m) = media {
        return Ok(m);
    }
    let raw = meta.get("raw").and_then(Value::as_str).filter(|s| !s.is_empty()).ok_or_else(|| {
        gerr(400, "invalidArgument", "'raw' RFC822 payload message string or uploading message via /upload/* URL required")
    })?;
    mime::b64_decode_any(raw).ok_or_else(|| gerr(400, "invalidArgument", "Invalid value for ByteString: raw"))
}

/// Send a message: parse it, add the headers a sent message carries, thread it, label it
/// SENT and, with `seeded-mailboxes`, deliver it to seeded recipients.
pub fn send_raw(w: &mut World, b: usize, call: &mut Call, raw: Vec<u8>, thread_hint: Option<String>, id: Option<String>) -> Response {
    let summary = match mime::accept(&raw) {
        Ok(s) => s,
        Err(e) => return gerr(400, "invalidArgument", &e),
    };
    if summary.to.is_empty() && summary.cc.is_empty() && summary.bcc.is_empty() {
        return gerr(400, "invalidArgument", "Recipient address required");
    }
    // Gmail sends only as the account or one of its send-as aliases: any other From is
    // replaced by the account's own address.
    let (raw, summary) = {
        let mb = &w.mailboxes[b];
        let allowed = summary.from.is_empty()
            || summary.from.eq_ignore_ascii_case(&mb.email)
            || mb.settings.send_as.iter().any(|a| a["sendAsEmail"].as_str().is_some_and(|e| e.eq_ignore_ascii_case(&summary.from)));
        if allowed {
            (raw, summary)
        } else {
            let mut s = summary;
            s.from = String::new();
            s.header_names.retain(|n| !n.eq_ignore_ascii_case("From"));
            (mime::strip_header(&raw, "From"), s)
        }
    };
    let id = id.unwrap_or_else(|| next_id(w));
    let now = pome_twin_sdk::time::now();
    let rfc = format!("CAPome{}@mail.gmail.com", id.to_ascii_uppercase());
    let from = {
        let mb = &w.mailboxes[b];
        if mb.display_name.is_empty() { mb.email.clone() } else { format!("{} <{}>", mb.display_name, mb.email) }
    };
    let mut summary = summary;
    let full = mime::complete(&raw, &mut summary, &from, now.timestamp(), &rfc);
    let mb = &mut w.mailboxes[b];
    let thread = thread_hint
        .filter(|t| {
            let keys = mb.thread(t);
            keys.iter().any(|k| normalize_subject(&mb.messages[k].subject) == normalize_subject(&summary.subject))
        })
        .or_else(|| find_thread(mb, &summary))
        .unwrap_or_else(|| id.clone());
    let to_self = summary.to.iter().chain(&summary.cc).chain(&summary.bcc).any(|a| a.eq_ignore_ascii_case(&mb.email));
    let mut labels = vec!["SENT".to_string()];
    if to_self {
        labels.push("INBOX".into());
        labels.push("UNREAD".into());
    }
    let msg = Message::new(id.clone(), thread, labels, now.timestamp_millis(), full.clone(), summary.clone());
    let out = render(&msg, Format::Minimal, &[]);
    let view = tape_view(&msg);
    mb.insert(msg, false);
    call.created("message", &id, &view);
    if w.delivery_mode == "seeded-mailboxes" {
        let sender = w.mailboxes[b].email.clone();
        let recipients: BTreeSet<String> = summary.to.iter().chain(&summary.cc).chain(&summary.bcc).cloned().collect();
        for r in recipients {
            let Some(t) = w.mailboxes.iter().position(|m| m.email.eq_ignore_ascii_case(&r)) else { continue };
            if t == b {
                continue;
            }
            let did = next_id(w);
            // Recipients never see the Bcc list.
            let copy = mime::delivered(&mime::strip_header(&full, "Bcc"), &r, &sender, now.timestamp(), &did);
            let s = mime::summarize(&copy).unwrap_or_else(|_| summary.clone());
            let tb = &mut w.mailboxes[t];
            let thread = find_thread(tb, &s).unwrap_or_else(|| did.clone());
            let m = Message::new(did.clone(), thread, vec!["INBOX".into(), "UNREAD".into()], now.timestamp_millis(), copy, s);
            let view = tape_view(&m);
            tb.insert(m, false);
            call.created("message", format!("{r}/{did}"), &view);
        }
    }
    let mut out = out;
    if let Some(o) = out.as_object_mut() {
        o.remove("snippet");
        o.remove("sizeEstimate");
        o.remove("historyId");
        o.remove("internalDate");
    }
    ok(&out)
}

pub fn messages_send(w: &mut World, call: &mut Call) -> Response {
    let meta = match body(call) { Ok(v) => v, Err(r) => return r };
    send_with(w, call, meta, None)
}

pub fn send_with(w: &mut World, call: &mut Call, meta: Value, media: Option<Vec<u8>>) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let raw = match raw_of(&meta, media) { Ok(r) => r, Err(r) => return r };
    let hint = meta.get("threadId").and_then(Value::as_str).map(str::to_string);
    send_raw(w, b, call, raw, hint, None)
}

pub fn messages_insert(w: &mut World, call: &mut Call) -> Response {
    let meta = match body(call) { Ok(v) => v, Err(r) => return r };
    insert_with(w, call, meta, None)
}

pub fn messages_import(w: &mut World, call: &mut Call) -> Response {
    let meta = match body(call) { Ok(v) => v, Err(r) => return r };
    insert_with(w, call, meta, None)
}

/// `insert` and `import`: store the message as given, with the request's labels.
pub fn insert_with(w: &mut World, call: &mut Call, meta: Value, media: Option<Vec<u8>>) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let raw = match raw_of(&meta, media) { Ok(r) => r, Err(r) => return r };
    let summary = match mime::accept(&raw) {
        Ok(s) => s,
        Err(e) => return gerr(400, "invalidArgument", &e),
    };
    let labels = str_list(&meta, "labelIds");
    if let Err(r) = check_labels(&w.mailboxes[b], &labels, false) {
        return r;
    }
    let import = call.action.as_deref().is_some_and(|a| a.ends_with("import"));
    let source = call.req.query("internalDateSource").unwrap_or_else(|| if import { "dateHeader".into() } else { "receivedTime".into() });
    let now = pome_twin_sdk::time::now().timestamp_millis();
    let date = if source == "dateHeader" { summary.date_ms.unwrap_or(now) } else { now };
    let id = next_id(w);
    let mb = &mut w.mailboxes[b];
    let hint = meta.get("threadId").and_then(Value::as_str).filter(|t| mb.idx().threads.contains_key(*t)).map(str::to_string);
    let thread = hint.or_else(|| find_thread(mb, &summary)).unwrap_or_else(|| id.clone());
    let msg = Message::new(id.clone(), thread, labels, date, raw, summary);
    let out = minimal_labels(&msg);
    let view = tape_view(&msg);
    mb.insert(msg, false);
    call.created("message", &id, &view);
    ok(&out)
}

fn modify_one(mb: &mut Mailbox, call: &mut Call, id: &str, add: &[String], remove: &[String]) -> bool {
    let Some(before) = mb.get(id).map(tape_view) else { return false };
    if mb.relabel(id, add, remove) {
        let after = tape_view(mb.get(id).unwrap());
        call.updated("message", id, &before, &after);
    }
    true
}

pub fn messages_modify(w: &mut World, call: &mut Call) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let req = match body(call) { Ok(v) => v, Err(r) => return r };
    let (add, remove) = (str_list(&req, "addLabelIds"), str_list(&req, "removeLabelIds"));
    if let Err(r) = check_labels(&w.mailboxes[b], &add, true).and_then(|_| check_labels(&w.mailboxes[b], &remove, false)) {
        return r;
    }
    let id = call.param("id").to_string();
    let mb = &mut w.mailboxes[b];
    if !modify_one(mb, call, &id, &add, &remove) {
        return not_found();
    }
    ok(&minimal_labels(mb.get(&id).unwrap()))
}

/// The most ids `batchModify` and `batchDelete` take in one request (Gmail's documented limit).
pub const MAX_BATCH_IDS: usize = 1000;

/// Whether `id` could be a Gmail message id: Gmail's are hexadecimal numbers (`18c1f2a3b4d5e6f7`).
fn id_shaped(id: &str) -> bool {
    !id.is_empty() && id.len() <= 16 && id.bytes().all(|c| c.is_ascii_hexdigit())
}

/// The ids of a batch request, refused as Gmail refuses them before anything changes: more
/// than [`MAX_BATCH_IDS`], or one that neither names a message here nor has a message id's
/// form ("Invalid id value"). A well-formed id of no message is passed over, as Gmail does.
fn batch_ids(mb: &Mailbox, req: &Value) -> Result<Vec<String>, Response> {
    let ids = str_list(req, "ids");
    if ids.len() > MAX_BATCH_IDS {
        return Err(gerr(400, "invalidArgument", &format!("Number of ids cannot exceed {MAX_BATCH_IDS}")));
    }
    if ids.iter().any(|id| mb.key(id).is_none() && !id_shaped(id)) {
        return Err(gerr(400, "invalidArgument", "Invalid id value"));
    }
    Ok(ids)
}

pub fn messages_batch_modify(w: &mut World, call: &mut Call) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let req = match body(call) { Ok(v) => v, Err(r) => return r };
    let ids = match batch_ids(&w.mailboxes[b], &req) { Ok(ids) => ids, Err(r) => return r };
    let (add, remove) = (str_list(&req, "addLabelIds"), str_list(&req, "removeLabelIds"));
    if let Err(r) = check_labels(&w.mailboxes[b], &add, true).and_then(|_| check_labels(&w.mailboxes[b], &remove, false)) {
        return r;
    }
    let mb = &mut w.mailboxes[b];
    for id in &ids {
        modify_one(mb, call, id, &add, &remove);
    }
    ok_empty()
}

pub fn messages_batch_delete(w: &mut World, call: &mut Call) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let req = match body(call) { Ok(v) => v, Err(r) => return r };
    let ids = match batch_ids(&w.mailboxes[b], &req) { Ok(ids) => ids, Err(r) => return r };
    let mb = &mut w.mailboxes[b];
    for id in ids {
        delete_message(mb, call, &id);
    }
    ok_empty()
}

fn delete_message(mb: &mut Mailbox, call: &mut Call, id: &str) -> bool {
    match mb.remove(id) {
        Some(m) => {
            if let Some(p) = mb.drafts.iter().position(|d| d.message_id == id) {
                let d = mb.drafts.remove(p);
                call.deleted("draft", &d.id, &json!({"id": d.id}));
            }
            call.deleted("message", id, &tape_view(&m));
            true
        }
        None => false,
    }
}

pub fn messages_delete(w: &mut World, call: &mut Call) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let id = call.param("id").to_string();
    if delete_message(&mut w.mailboxes[b], call, &id) { ok_empty() } else { not_found() }
}

fn trash_one(mb: &mut Mailbox, call: &mut Call, id: &str) -> bool {
    modify_one(mb, call, id, &["TRASH".to_string()], &["INBOX".to_string(), "SPAM".to_string()])
}

fn untrash_one(mb: &mut Mailbox, call: &mut Call, id: &str) -> bool {
    let Some(m) = mb.get(id) else { return false };
    let back_to_inbox = !m.has("SENT") && !m.has("DRAFT") && m.has("TRASH");
    let add: Vec<String> = if back_to_inbox { vec!["INBOX".into()] } else { vec![] };
    modify_one(mb, call, id, &add, &["TRASH".to_string()])
}

pub fn messages_trash(w: &mut World, call: &mut Call) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let id = call.param("id").to_string();
    let mb = &mut w.mailboxes[b];
    if !trash_one(mb, call, &id) {
        return not_found();
    }
    ok(&minimal_labels(mb.get(&id).unwrap()))
}

pub fn messages_untrash(w: &mut World, call: &mut Call) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let id = call.param("id").to_string();
    let mb = &mut w.mailboxes[b];
    if !untrash_one(mb, call, &id) {
        return not_found();
    }
    ok(&minimal_labels(mb.get(&id).unwrap()))
}

pub fn attachments_get(w: &mut World, call: &mut Call) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let Some(m) = w.mailboxes[b].get(call.param("messageId")) else { return not_found() };
    match mime::attachment(&m.raw, &m.id, call.param("id")) {
        Some(bytes) => ok(&json!({"attachmentId": call.param("id"), "size": bytes.len(), "data": mime::b64url(&bytes)})),
        None => gerr(400, "invalidArgument", "Invalid attachment token"),
    }
}

// ---------------------------------------------------------------------------------------
// Threads

pub fn threads_list(w: &mut World, call: &mut Call) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let max = match max_results(call, 100, 500) { Ok(n) => n, Err(r) => return r };
    let start = match page_start(call, "t") { Ok(n) => n, Err(r) => return r };
    let keys = match matching(&mut w.mailboxes[b], call) { Ok(k) => k, Err(r) => return r };
    let mb = &mut w.mailboxes[b];
    let mut seen = BTreeSet::new();
    let mut threads = Vec::new();
    for k in keys {
        let t = mb.messages[&k].thread_id.clone();
        if seen.insert(t.clone()) {
            threads.push(t);
        }
    }
    let total = threads.len();
    let page: Vec<Value> = threads
        .iter()
        .skip(start)
        .take(max)
        .map(|t| {
            let keys = mb.thread(t);
            let last = &mb.messages[keys.last().unwrap()];
            let hid = keys.iter().map(|k| mb.messages[k].history_id).max().unwrap_or(0);
            json!({"id": t, "snippet": last.snippet, "historyId": hid.to_string()})
        })
        .collect();
    let mut out = Map::new();
    if !page.is_empty() {
        out.insert("threads".into(), Value::Array(page));
    }
    if start + max < total {
        out.insert("nextPageToken".into(), json!(page_token(call, "t", start + max)));
    }
    out.insert("resultSizeEstimate".into(), json!(total));
    ok(&Value::Object(out))
}

pub fn threads_get(w: &mut World, call: &mut Call) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let f = match format_of(call) { Ok(f) => f, Err(r) => return r };
    let mh = query_list(call, "metadataHeaders");
    let id = call.param("id").to_string();
    let mb = &mut w.mailboxes[b];
    let keys = mb.thread(&id);
    if keys.is_empty() {
        return not_found();
    }
    let hid = keys.iter().map(|k| mb.messages[k].history_id).max().unwrap_or(0);
    let msgs: Vec<Value> = keys.iter().map(|k| render(&mb.messages[k], f, &mh)).collect();
    ok(&json!({"id": id, "historyId": hid.to_string(), "messages": msgs}))
}

fn thread_ids(mb: &mut Mailbox, id: &str) -> Vec<String> {
    mb.thread(id).iter().map(|k| mb.messages[k].id.clone()).collect()
}

fn thread_minimal(mb: &mut Mailbox, id: &str) -> Value {
    let keys = mb.thread(id);
    let hid = keys.iter().map(|k| mb.messages[k].history_id).max().unwrap_or(0);
    let msgs: Vec<Value> = keys.iter().map(|k| render(&mb.messages[k], Format::Minimal, &[])).collect();
    json!({"id": id, "historyId": hid.to_string(), "messages": msgs})
}

pub fn threads_modify(w: &mut World, call: &mut Call) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let req = match body(call) { Ok(v) => v, Err(r) => return r };
    let (add, remove) = (str_list(&req, "addLabelIds"), str_list(&req, "removeLabelIds"));
    if let Err(r) = check_labels(&w.mailboxes[b], &add, true).and_then(|_| check_labels(&w.mailboxes[b], &remove, false)) {
        return r;
    }
    let id = call.param("id").to_string();
    let mb = &mut w.mailboxes[b];
    let ids = thread_ids(mb, &id);
    if ids.is_empty() {
        return not_found();
    }
    for m in &ids {
        modify_one(mb, call, m, &add, &remove);
    }
    ok(&thread_minimal(mb, &id))
}

pub fn threads_trash(w: &mut World, call: &mut Call) -> Response {
    thread_each(w, call, trash_one)
}

pub fn threads_untrash(w: &mut World, call: &mut Call) -> Response {
    thread_each(w, call, untrash_one)
}

fn thread_each(w: &mut World, call: &mut Call, f: fn(&mut Mailbox, &mut Call, &str) -> bool) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let id = call.param("id").to_string();
    let mb = &mut w.mailboxes[b];
    let ids = thread_ids(mb, &id);
    if ids.is_empty() {
        return not_found();
    }
    for m in &ids {
        f(mb, call, m);
    }
    ok(&thread_minimal(mb, &id))
}

pub fn threads_delete(w: &mut World, call: &mut Call) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let id = call.param("id").to_string();
    let mb = &mut w.mailboxes[b];
    let ids = thread_ids(mb, &id);
    if ids.is_empty() {
        return not_found();
    }
    for m in &ids {
        delete_message(mb, call, m);
    }
    ok_empty()
}

// ---------------------------------------------------------------------------------------
// Labels

pub fn label_json(mb: &mut Mailbox, l: &Label, counts: bool) -> Value {
    let mut o = Map::new();
    o.insert("id".into(), json!(l.id));
    o.insert("name".into(), json!(l.name));
    if let Some(v) = &l.message_list_visibility {
        o.insert("messageListVisibility".into(), json!(v));
    }
    if let Some(v) = &l.label_list_visibility {
        o.insert("labelListVisibility".into(), json!(v));
    }
    o.insert("type".into(), json!(if l.system { "system" } else { "user" }));
    if let Some(c) = &l.color {
        o.insert("color".into(), c.clone());
    }
    if counts {
        let keys: Vec<u64> = mb.idx().labels.get(&l.id).map(|s| s.iter().copied().collect()).unwrap_or_default();
        let mut threads = BTreeSet::new();
        let mut unread_threads = BTreeSet::new();
        let mut unread = 0;
        for k in &keys {
            let m = &mb.messages[k];
            threads.insert(m.thread_id.clone());
            if m.has("UNREAD") {
                unread += 1;
                unread_threads.insert(m.thread_id.clone());
            }
        }
        o.insert("messagesTotal".into(), json!(keys.len()));
        o.insert("messagesUnread".into(), json!(unread));
        o.insert("threadsTotal".into(), json!(threads.len()));
        o.insert("threadsUnread".into(), json!(unread_threads.len()));
    }
    Value::Object(o)
}

pub fn labels_list(w: &mut World, call: &mut Call) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let mb = &mut w.mailboxes[b];
    let labels = mb.labels.clone();
    let out: Vec<Value> = labels.iter().map(|l| label_json(mb, l, false)).collect();
    ok(&json!({"labels": out}))
}

pub fn labels_get(w: &mut World, call: &mut Call) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let mb = &mut w.mailboxes[b];
    match mb.label_by_id(call.param("id")).cloned() {
        Some(l) => ok(&label_json(mb, &l, true)),
        None => not_found(),
    }
}

fn label_conflict(mb: &Mailbox, name: &str, except: Option<&str>) -> bool {
    mb.labels.iter().any(|l| Some(l.id.as_str()) != except && l.name.eq_ignore_ascii_case(name))
}

fn apply_label_fields(l: &mut Label, req: &Value) {
    if let Some(n) = req.get("name").and_then(Value::as_str) {
        l.name = n.to_string();
    }
    if let Some(v) = req.get("messageListVisibility").and_then(Value::as_str) {
        l.message_list_visibility = Some(v.to_string());
    }
    if let Some(v) = req.get("labelListVisibility").and_then(Value::as_str) {
        l.label_list_visibility = Some(v.to_string());
    }
    if let Some(c) = req.get("color").filter(|c| c.is_object()) {
        l.color = Some(c.clone());
    }
}

fn validate_label_req(req: &Value) -> Result<(), Response> {
    for (k, allowed) in [
        ("messageListVisibility", &["show", "hide"][..]),
        ("labelListVisibility", &["labelShow", "labelShowIfUnread", "labelHide"][..]),
    ] {
        if let Some(v) = req.get(k).and_then(Value::as_str)
            && !allowed.contains(&v) {
                return Err(gerr(400, "invalidArgument", &format!("Invalid value for {k}: {v}")));
            }
    }
    Ok(())
}

pub fn labels_create(w: &mut World, call: &mut Call) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let req = match body(call) { Ok(v) => v, Err(r) => return r };
    if let Err(r) = validate_label_req(&req) {
        return r;
    }
    let Some(name) = req.get("name").and_then(Value::as_str).map(str::trim).filter(|n| !n.is_empty()) else {
        return gerr(400, "invalidArgument", "Invalid label name");
    };
    let mb = &mut w.mailboxes[b];
    if label_conflict(mb, name, None) {
        return gerr(409, "aborted", "Label name exists or conflicts");
    }
    let id = format!("Label_{}", mb.label_seq);
    mb.label_seq += 1;
    let mut l = Label { id: id.clone(), name: name.to_string(), system: false, message_list_visibility: None, label_list_visibility: None, color: None };
    apply_label_fields(&mut l, &req);
    l.name = name.to_string();
    mb.labels.push(l.clone());
    let out = label_json(mb, &l, false);
    call.created("label", &id, &out);
    ok(&out)
}

fn labels_write(w: &mut World, call: &mut Call, replace: bool) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let req = match body(call) { Ok(v) => v, Err(r) => return r };
    if let Err(r) = validate_label_req(&req) {
        return r;
    }
    let id = call.param("id").to_string();
    let mb = &mut w.mailboxes[b];
    let Some(pos) = mb.labels.iter().position(|l| l.id == id) else { return not_found() };
    if mb.labels[pos].system {
        return gerr(400, "invalidArgument", "Invalid update request");
    }
    if replace && req.get("name").and_then(Value::as_str).is_none_or(|n| n.trim().is_empty()) {
        return gerr(400, "invalidArgument", "Invalid label name");
    }
    if let Some(n) = req.get("name").and_then(Value::as_str)
        && label_conflict(mb, n, Some(&id)) {
            return gerr(409, "aborted", "Label name exists or conflicts");
        }
    let before = mb.labels[pos].clone();
    let mut l = before.clone();
    if replace {
        l.message_list_visibility = None;
        l.label_list_visibility = None;
        l.color = None;
    }
    apply_label_fields(&mut l, &req);
    mb.labels[pos] = l.clone();
    let out = label_json(mb, &l, false);
    call.updated("label", &id, &label_json(mb, &before, false), &out);
    ok(&out)
}

pub fn labels_update(w: &mut World, call: &mut Call) -> Response {
    labels_write(w, call, true)
}

pub fn labels_patch(w: &mut World, call: &mut Call) -> Response {
    labels_write(w, call, false)
}

pub fn labels_delete(w: &mut World, call: &mut Call) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let id = call.param("id").to_string();
    let mb = &mut w.mailboxes[b];
    let Some(pos) = mb.labels.iter().position(|l| l.id == id) else { return not_found() };
    if mb.labels[pos].system {
        return gerr(400, "invalidArgument", "Invalid delete request");
    }
    let keys: Vec<u64> = mb.idx().labels.get(&id).map(|s| s.iter().copied().collect()).unwrap_or_default();
    for k in keys {
        let mid = mb.messages[&k].id.clone();
        modify_one(mb, call, &mid, &[], std::slice::from_ref(&id));
    }
    let l = mb.labels.remove(pos);
    call.deleted("label", &id, &json!({"id": l.id, "name": l.name}));
    ok_empty()
}

// ---------------------------------------------------------------------------------------
// Drafts

fn draft_json(mb: &Mailbox, d: &Draft, f: Format, mh: &[String]) -> Value {
    match mb.get(&d.message_id) {
        Some(m) => json!({"id": d.id, "message": render(m, f, mh)}),
        None => json!({"id": d.id}),
    }
}

fn draft_message(w: &mut World, b: usize, meta: &Value, media: Option<Vec<u8>>, id: String, keep_thread: Option<String>) -> Result<Message, Response> {
    let msg = meta.get("message").cloned().unwrap_or(Value::Null);
    if media.is_none() && !msg.is_object() {
        return Err(gerr(400, "invalidArgument", "Missing draft message"));
    }
    let raw = raw_of(&msg, media)?;
    let summary = mime::accept(&raw).map_err(|e| gerr(400, "invalidArgument", &e))?;
    let now = pome_twin_sdk::time::now();
    let rfc = format!("CAPome{}@mail.gmail.com", id.to_ascii_uppercase());
    let from = w.mailboxes[b].email.clone();
    let mut summary = summary;
    let full = mime::complete(&raw, &mut summary, &from, now.timestamp(), &rfc);
    let mb = &mut w.mailboxes[b];
    let hint = msg.get("threadId").and_then(Value::as_str).filter(|t| mb.idx().threads.contains_key(*t)).map(str::to_string);
    let thread = hint.or(keep_thread).or_else(|| find_thread(mb, &summary)).unwrap_or_else(|| id.clone());
    Ok(Message::new(id, thread, vec!["DRAFT".into()], now.timestamp_millis(), full, summary))
}

pub fn drafts_create(w: &mut World, call: &mut Call) -> Response {
    let meta = match body(call) { Ok(v) => v, Err(r) => return r };
    drafts_create_with(w, call, meta, None)
}

pub fn drafts_create_with(w: &mut World, call: &mut Call, meta: Value, media: Option<Vec<u8>>) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let mid = next_id(w);
    let msg = match draft_message(w, b, &meta, media, mid.clone(), None) { Ok(m) => m, Err(r) => return r };
    w.seq += 1;
    let did = format!("r{}", 7_000_000_000_000_000_000u64 + w.seq);
    let mb = &mut w.mailboxes[b];
    let view = tape_view(&msg);
    mb.insert(msg, false);
    let d = Draft { id: did.clone(), message_id: mid.clone() };
    mb.drafts.push(d.clone());
    call.created("draft", &did, &json!({"id": did, "message": view}));
    ok(&draft_json(mb, &d, Format::Minimal, &[]))
}

pub fn drafts_get(w: &mut World, call: &mut Call) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let f = match format_of(call) { Ok(f) => f, Err(r) => return r };
    let mh = query_list(call, "metadataHeaders");
    let mb = &w.mailboxes[b];
    match mb.drafts.iter().find(|d| d.id == call.param("id")) {
        Some(d) => ok(&draft_json(mb, d, f, &mh)),
        None => not_found(),
    }
}

pub fn drafts_list(w: &mut World, call: &mut Call) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let max = match max_results(call, 100, 500) { Ok(n) => n, Err(r) => return r };
    let start = match page_start(call, "d") { Ok(n) => n, Err(r) => return r };
    let q = call.req.query("q").unwrap_or_default();
    let include = call.req.query("includeSpamTrash").map(|v| v == "true").unwrap_or(false);
    let mb = &mut w.mailboxes[b];
    let keys = match search::run(mb, &q, &["DRAFT".to_string()], include) { Ok(k) => k, Err(e) => return gerr(400, "invalidArgument", &e) };
    let ids: Vec<String> = keys.iter().map(|k| mb.messages[k].id.clone()).collect();
    let drafts: Vec<Value> = ids
        .iter()
        .filter_map(|mid| mb.drafts.iter().find(|d| &d.message_id == mid))
        .map(|d| {
            let m = mb.get(&d.message_id).unwrap();
            json!({"id": d.id, "message": {"id": m.id, "threadId": m.thread_id}})
        })
        .collect();
    let total = drafts.len();
    let page: Vec<Value> = drafts.into_iter().skip(start).take(max).collect();
    let mut out = Map::new();
    if !page.is_empty() {
        out.insert("drafts".into(), Value::Array(page));
    }
    if start + max < total {
        out.insert("nextPageToken".into(), json!(page_token(call, "d", start + max)));
    }
    out.insert("resultSizeEstimate".into(), json!(total));
    ok(&Value::Object(out))
}

pub fn drafts_update(w: &mut World, call: &mut Call) -> Response {
    let meta = match body(call) { Ok(v) => v, Err(r) => return r };
    drafts_update_with(w, call, meta, None)
}

/// Replace a draft's message: the draft keeps its id, its message gets a new one (as live
/// Gmail does), in the same thread.
pub fn drafts_update_with(w: &mut World, call: &mut Call, meta: Value, media: Option<Vec<u8>>) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let did = call.param("id").to_string();
    let Some(pos) = w.mailboxes[b].drafts.iter().position(|d| d.id == did) else { return not_found() };
    let old_mid = w.mailboxes[b].drafts[pos].message_id.clone();
    let old_thread = w.mailboxes[b].get(&old_mid).map(|m| m.thread_id.clone());
    let mid = next_id(w);
    let msg = match draft_message(w, b, &meta, media, mid.clone(), old_thread) { Ok(m) => m, Err(r) => return r };
    let mb = &mut w.mailboxes[b];
    let before = mb.get(&old_mid).map(tape_view);
    mb.remove(&old_mid);
    let view = tape_view(&msg);
    mb.insert(msg, false);
    mb.drafts[pos].message_id = mid;
    call.updated("draft", &did, &json!({"id": did, "message": before}), &json!({"id": did, "message": view}));
    let d = mb.drafts[pos].clone();
    ok(&draft_json(mb, &d, Format::Minimal, &[]))
}

pub fn drafts_delete(w: &mut World, call: &mut Call) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let did = call.param("id").to_string();
    let mb = &mut w.mailboxes[b];
    let Some(pos) = mb.drafts.iter().position(|d| d.id == did) else { return not_found() };
    let d = mb.drafts.remove(pos);
    if let Some(m) = mb.remove(&d.message_id) {
        call.deleted("message", &d.message_id, &tape_view(&m));
    }
    call.deleted("draft", &did, &json!({"id": did}));
    ok_empty()
}

pub fn drafts_send(w: &mut World, call: &mut Call) -> Response {
    let meta = match body(call) { Ok(v) => v, Err(r) => return r };
    drafts_send_with(w, call, meta, None)
}

/// Send a draft: its message (or the one given beside its id) leaves DRAFT for SENT.
pub fn drafts_send_with(w: &mut World, call: &mut Call, meta: Value, media: Option<Vec<u8>>) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let Some(did) = meta.get("id").and_then(Value::as_str).map(str::to_string) else {
        return gerr(400, "invalidArgument", "Invalid draft");
    };
    let mb = &mut w.mailboxes[b];
    let Some(pos) = mb.drafts.iter().position(|d| d.id == did) else { return not_found() };
    let mid = mb.drafts[pos].message_id.clone();
    let Some(old) = mb.get(&mid).cloned() else { return not_found() };
    let given = meta.get("message").filter(|m| m.get("raw").is_some()).cloned();
    let raw = match (media, given) {
        (Some(m), _) => m,
        (None, Some(m)) => match raw_of(&m, None) { Ok(r) => r, Err(r) => return r },
        (None, None) => old.raw.clone(),
    };
    // Everything that can refuse the send is checked before the draft is touched: a send
    // that fails leaves the draft as it was.
    match mime::accept(&raw) {
        Err(e) => return gerr(400, "invalidArgument", &e),
        Ok(s) if s.to.is_empty() && s.cc.is_empty() && s.bcc.is_empty() => {
            return gerr(400, "invalidArgument", "Recipient address required");
        }
        Ok(_) => {}
    }
    mb.drafts.remove(pos);
    mb.remove(&mid);
    call.deleted("draft", &did, &json!({"id": did, "message": tape_view(&old)}));
    send_raw(w, b, call, raw, Some(old.thread_id.clone()), Some(mid))
}

// ---------------------------------------------------------------------------------------
// History

pub fn history_list(w: &mut World, call: &mut Call) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let Some(start) = call.req.query("startHistoryId") else {
        return gerr(400, "invalidArgument", "Missing startHistoryId");
    };
    let Ok(start) = start.parse::<u64>() else {
        return gerr(400, "invalidArgument", &format!("Invalid value for startHistoryId: {start}"));
    };
    let max = match max_results(call, 100, 500) { Ok(n) => n, Err(r) => return r };
    let types = query_list(call, "historyTypes");
    for t in &types {
        if !["messageAdded", "messageDeleted", "labelAdded", "labelRemoved"].contains(&t.as_str()) {
            return gerr(400, "invalidArgument", &format!("Invalid value for historyTypes: {t}"));
        }
    }
    let label = call.req.query("labelId");
    let mb = &w.mailboxes[b];
    if start < mb.history_floor {
        return gerr(404, "notFound", "Requested entity was not found.");
    }
    let page_from = match call.req.query("pageToken").filter(|t| !t.is_empty()) {
        Some(t) => match t.parse::<u64>() {
            Ok(n) => n,
            Err(_) => return gerr(400, "invalidArgument", "Invalid pageToken"),
        },
        None => start,
    };
    let mut out = Vec::new();
    let mut next = None;
    // Records are in id order: start where the page does, not at the oldest kept.
    let from = mb.history.partition_point(|r| r.id <= page_from);
    for r in &mb.history[from..] {
        let (ty, changed): (&str, &[String]) = match &r.kind {
            HistKind::Added => ("messageAdded", &r.label_ids),
            HistKind::Deleted => ("messageDeleted", &r.label_ids),
            HistKind::LabelsAdded(l) => ("labelAdded", l),
            HistKind::LabelsRemoved(l) => ("labelRemoved", l),
        };
        if !types.is_empty() && !types.iter().any(|t| t == ty) {
            continue;
        }
        if let Some(l) = &label
            && !r.label_ids.contains(l) && !changed.contains(l) {
                continue;
            }
        if out.len() == max {
            next = Some(out.last().map(|v: &Value| v["id"].as_str().unwrap_or("0").to_string()).unwrap_or_default());
            break;
        }
        let mref = json!({"id": r.message_id, "threadId": r.thread_id, "labelIds": r.label_ids});
        let mut rec = Map::new();
        rec.insert("id".into(), json!(r.id.to_string()));
        rec.insert("messages".into(), json!([{"id": r.message_id, "threadId": r.thread_id}]));
        match &r.kind {
            HistKind::Added => {
                rec.insert("messagesAdded".into(), json!([{"message": mref}]));
            }
            HistKind::Deleted => {
                rec.insert("messagesDeleted".into(), json!([{"message": mref}]));
            }
            HistKind::LabelsAdded(l) => {
                rec.insert("labelsAdded".into(), json!([{"message": mref, "labelIds": l}]));
            }
            HistKind::LabelsRemoved(l) => {
                rec.insert("labelsRemoved".into(), json!([{"message": mref, "labelIds": l}]));
            }
        }
        out.push(Value::Object(rec));
    }
    let mut o = Map::new();
    if !out.is_empty() {
        o.insert("history".into(), Value::Array(out));
    }
    if let Some(n) = next {
        o.insert("nextPageToken".into(), json!(n));
    }
    o.insert("historyId".into(), json!(mb.history_id.to_string()));
    ok(&Value::Object(o))
}
