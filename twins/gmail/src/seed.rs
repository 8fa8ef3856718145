//! Seeds in Pome's Gmail shape, read strictly: an unknown key or a wrong type names its path.
//!
//! ```json
//! {"primaryMailbox": {"email", "displayName", "labels": [{"id", "name"}], "messages": [...],
//!   "drafts": [...]}, "mailboxes": [...], "deliveryMode": "sender-only" | "seeded-mailboxes",
//!   "clock": "2026-07-20T00:00:00Z", "faults": [{"type": "rateLimit", "method", "after",
//!   "count", "retryAfter"}], "pubsub": {"topics": [...], "subscriptions": [{"name", "topic",
//!   "pushConfig": {"pushEndpoint"}}]}, "_meta": {...}}
//! ```
//! A message is `{id, threadId, from, to, cc, bcc, subject, text, html, date, messageId,
//! inReplyTo, references, labels, attachments: [{filename, mimeType, data}]}` (built into
//! real MIME) or `{id, threadId, raw, labels}` with base64url RFC 5322 bytes.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::mime::{self, Compose};
use crate::model::{Draft, Fault, Label, Mailbox, Message, World};

type Obj = Map<String, Value>;

fn obj<'a>(v: &'a Value, path: &str) -> Result<&'a Obj, String> {
    v.as_object().ok_or_else(|| format!("{path}: expected an object"))
}

fn only(o: &Obj, path: &str, keys: &[&str]) -> Result<(), String> {
    for k in o.keys() {
        if !keys.contains(&k.as_str()) {
            return Err(format!("{path}.{k}: unknown field (expected one of {})", keys.join(", ")));
        }
    }
    Ok(())
}

fn s(o: &Obj, path: &str, key: &str) -> Result<Option<String>, String> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(x)) => Ok(Some(x.clone())),
        Some(_) => Err(format!("{path}.{key}: expected a string")),
    }
}

fn req(o: &Obj, path: &str, key: &str) -> Result<String, String> {
    s(o, path, key)?.ok_or_else(|| format!("{path}.{key}: required"))
}

fn strings(o: &Obj, path: &str, key: &str) -> Result<Vec<String>, String> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(x)) => Ok(vec![x.clone()]),
        Some(Value::Array(a)) => a
            .iter()
            .enumerate()
            .map(|(i, v)| v.as_str().map(str::to_string).ok_or_else(|| format!("{path}.{key}[{i}]: expected a string")))
            .collect(),
        Some(_) => Err(format!("{path}.{key}: expected a string or a list of strings")),
    }
}

fn num(o: &Obj, path: &str, key: &str, default: u64) -> Result<u64, String> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(v) => v.as_u64().ok_or_else(|| format!("{path}.{key}: expected a non-negative whole number")),
    }
}

fn date_ms(o: &Obj, path: &str, key: &str) -> Result<Option<i64>, String> {
    match s(o, path, key)? {
        None => Ok(None),
        Some(d) => pome_twin_sdk::time::parse_iso(&d)
            .map(|t| Some(t.timestamp_millis()))
            .ok_or_else(|| format!("{path}.{key}: expected an ISO 8601 timestamp, got {d:?}")),
    }
}

/// The default world: a small inbox, kept small so an idle sandbox stays light.
pub fn default_seed() -> Value {
    json!({
        "primaryMailbox": {
            "email": "pome-agent@pome-twin.test",
            "displayName": "Pome Agent",
            "labels": [{"id": "Label_follow_up", "name": "Follow Up"}],
            "messages": [
                {"id": "msg_welcome", "threadId": "thread_welcome", "from": "welcome@pome-twin.test",
                 "to": ["pome-agent@pome-twin.test"], "subject": "Welcome to your Pome Gmail twin",
                 "text": "Your deterministic inbox is ready for agent testing.",
                 "date": "2026-07-18T09:00:00.000Z", "messageId": "welcome@pome-twin.test", "labels": ["INBOX"]},
                {"id": "msg_support", "threadId": "thread_support", "from": "alice@example.com",
                 "to": ["pome-agent@pome-twin.test"], "subject": "Production export is stuck",
                 "text": "Our production export has been stuck for an hour. Can you investigate?",
                 "date": "2026-07-19T12:00:00.000Z", "messageId": "support-001@example.com", "labels": ["INBOX", "UNREAD"]}
            ],
            "drafts": []
        },
        "deliveryMode": "sender-only",
        "clock": "2026-07-20T00:00:00.000Z"
    })
}

pub fn from_seed(v: &Value) -> Result<World, String> {
    let top = obj(v, "seed")?;
    only(top, "seed", &["primaryMailbox", "mailboxes", "deliveryMode", "clock", "faults", "pubsub", "_meta"])?;
    let delivery_mode = s(top, "seed", "deliveryMode")?.unwrap_or_else(|| "sender-only".into());
    if delivery_mode != "sender-only" && delivery_mode != "seeded-mailboxes" {
        return Err(format!("seed.deliveryMode: expected \"sender-only\" or \"seeded-mailboxes\", got {delivery_mode:?}"));
    }
    let clock = s(top, "seed", "clock")?;
    let clock_ms = date_ms(top, "seed", "clock")?.unwrap_or(1_784_505_600_000);
    let primary = top.get("primaryMailbox").ok_or("seed.primaryMailbox: required")?;
    let mut mailboxes = vec![mailbox(primary, "seed.primaryMailbox", clock_ms)?];
    if let Some(list) = top.get("mailboxes") {
        let arr = list.as_array().ok_or("seed.mailboxes: expected a list")?;
        for (i, m) in arr.iter().enumerate() {
            let mb = mailbox(m, &format!("seed.mailboxes[{i}]"), clock_ms)?;
            if mailboxes.iter().any(|x: &Mailbox| x.email.eq_ignore_ascii_case(&mb.email)) {
                return Err(format!("seed.mailboxes[{i}].email: {} is already a mailbox", mb.email));
            }
            mailboxes.push(mb);
        }
    }
    let mut faults = Vec::new();
    if let Some(f) = top.get("faults") {
        let arr = f.as_array().ok_or("seed.faults: expected a list")?;
        for (i, f) in arr.iter().enumerate() {
            let p = format!("seed.faults[{i}]");
            let o = obj(f, &p)?;
            only(o, &p, &["type", "method", "after", "count", "retryAfter"])?;
            let ty = req(o, &p, "type")?;
            if ty != "rateLimit" {
                return Err(format!("{p}.type: expected \"rateLimit\", got {ty:?}"));
            }
            faults.push(Fault {
                method: s(o, &p, "method")?.unwrap_or_else(|| "*".into()),
                after: num(o, &p, "after", 0)?,
                count: num(o, &p, "count", 1)?,
                retry_after: num(o, &p, "retryAfter", 1)?,
                seen: 0,
            });
        }
    }
    let pubsub = match top.get("pubsub") {
        None | Some(Value::Null) => crate::push::PubSub::default(),
        Some(v) => crate::push::from_seed(v)?,
    };
    Ok(World { primary: 0, mailboxes, delivery_mode, clock, faults, uploads: BTreeMap::new(), seq: 0, pubsub })
}

fn mailbox(v: &Value, path: &str, clock_ms: i64) -> Result<Mailbox, String> {
    let o = obj(v, path)?;
    only(o, path, &["email", "displayName", "labels", "messages", "drafts"])?;
    let email = req(o, path, "email")?;
    if !email.contains('@') {
        return Err(format!("{path}.email: {email:?} is not an address"));
    }
    let name = s(o, path, "displayName")?.unwrap_or_default();
    let mut mb = Mailbox::new(&email, &name);
    if let Some(ls) = o.get("labels") {
        let arr = ls.as_array().ok_or_else(|| format!("{path}.labels: expected a list"))?;
        for (i, l) in arr.iter().enumerate() {
            let p = format!("{path}.labels[{i}]");
            let lo = obj(l, &p)?;
            only(lo, &p, &["id", "name", "type", "messageListVisibility", "labelListVisibility", "color"])?;
            let lname = req(lo, &p, "name")?;
            let id = match s(lo, &p, "id")? {
                Some(id) => id,
                None => {
                    let id = format!("Label_{}", mb.label_seq);
                    mb.label_seq += 1;
                    id
                }
            };
            if mb.labels.iter().any(|x| x.id == id || x.name.eq_ignore_ascii_case(&lname)) {
                return Err(format!("{p}: a label with id {id:?} or name {lname:?} already exists"));
            }
            mb.labels.push(Label {
                id,
                name: lname,
                system: false,
                message_list_visibility: s(lo, &p, "messageListVisibility")?,
                label_list_visibility: s(lo, &p, "labelListVisibility")?,
                color: lo.get("color").cloned(),
            });
        }
    }
    if let Some(ms) = o.get("messages") {
        let arr = ms.as_array().ok_or_else(|| format!("{path}.messages: expected a list"))?;
        for (i, m) in arr.iter().enumerate() {
            let p = format!("{path}.messages[{i}]");
            let msg = message(&mut mb, m, &p, clock_ms, false)?;
            mb.insert(msg, true);
        }
    }
    if let Some(ds) = o.get("drafts") {
        let arr = ds.as_array().ok_or_else(|| format!("{path}.drafts: expected a list"))?;
        for (i, d) in arr.iter().enumerate() {
            let p = format!("{path}.drafts[{i}]");
            let did = match obj(d, &p)?.get("id") {
                Some(Value::String(x)) => x.clone(),
                None => format!("r{}", 1000 + i),
                Some(_) => return Err(format!("{p}.id: expected a string")),
            };
            if mb.drafts.iter().any(|x| x.id == did) {
                return Err(format!("{p}.id: draft {did:?} appears twice"));
            }
            let msg = message(&mut mb, d, &p, clock_ms, true)?;
            let mid = msg.id.clone();
            mb.insert(msg, true);
            mb.drafts.push(Draft { id: did, message_id: mid });
        }
    }
    Ok(mb)
}

fn message(mb: &mut Mailbox, v: &Value, p: &str, clock_ms: i64, draft: bool) -> Result<Message, String> {
    let o = obj(v, p)?;
    only(
        o,
        p,
        &[
            "id", "threadId", "from", "fromName", "to", "cc", "bcc", "subject", "text", "html", "date", "messageId",
            "inReplyTo", "references", "labels", "labelIds", "attachments", "raw", "snippet",
        ],
    )?;
    let id = if draft {
        // A draft's own id is the draft's; its message gets one of its own.
        let n = mb.next_key;
        format!("{:016x}", 0x1900_0000_0000_0000u64 + n)
    } else {
        req(o, p, "id")?
    };
    if mb.ids.contains_key(&id) {
        return Err(format!("{p}.id: message {id:?} appears twice"));
    }
    let date = date_ms(o, p, "date")?.unwrap_or(clock_ms);
    let raw = match s(o, p, "raw")? {
        Some(r) => mime::b64_decode_any(&r).ok_or_else(|| format!("{p}.raw: not base64url"))?,
        None => {
            let mut attachments = Vec::new();
            if let Some(a) = o.get("attachments") {
                let arr = a.as_array().ok_or_else(|| format!("{p}.attachments: expected a list"))?;
                for (j, at) in arr.iter().enumerate() {
                    let ap = format!("{p}.attachments[{j}]");
                    let ao = obj(at, &ap)?;
                    only(ao, &ap, &["filename", "mimeType", "data"])?;
                    let data = req(ao, &ap, "data")?;
                    let bytes = mime::b64_decode_any(&data).ok_or_else(|| format!("{ap}.data: not base64"))?;
                    attachments.push((
                        req(ao, &ap, "filename")?,
                        s(ao, &ap, "mimeType")?.unwrap_or_else(|| "application/octet-stream".into()),
                        bytes,
                    ));
                }
            }
            let from = if draft { s(o, p, "from")?.unwrap_or_else(|| mb.email.clone()) } else { req(o, p, "from")? };
            let from_name = match s(o, p, "fromName")? {
                Some(n) => n,
                None if from.eq_ignore_ascii_case(&mb.email) => mb.display_name.clone(),
                None => String::new(),
            };
            let rfc = s(o, p, "messageId")?.unwrap_or_else(|| format!("{id}@pome-twin.test"));
            mime::build(&Compose {
                from,
                from_name,
                to: strings(o, p, "to")?,
                cc: strings(o, p, "cc")?,
                bcc: strings(o, p, "bcc")?,
                subject: s(o, p, "subject")?.unwrap_or_default(),
                text: s(o, p, "text")?,
                html: s(o, p, "html")?,
                date_unix: date.div_euclid(1000),
                message_id: rfc.trim_matches(|c| c == '<' || c == '>').to_string(),
                in_reply_to: s(o, p, "inReplyTo")?,
                references: strings(o, p, "references")?,
                attachments,
                boundary_seed: id.clone(),
            })
        }
    };
    let summary = mime::accept(&raw).map_err(|e| format!("{p}.raw: {e}"))?;
    let mut labels = Vec::new();
    let mut names = strings(o, p, "labels")?;
    names.extend(strings(o, p, "labelIds")?);
    for (j, l) in names.iter().enumerate() {
        let lab = mb
            .resolve_label(l)
            .ok_or_else(|| format!("{p}.labels[{j}]: no label with id or name {l:?}"))?
            .id
            .clone();
        if !labels.contains(&lab) {
            labels.push(lab);
        }
    }
    if draft && !labels.iter().any(|l| l == "DRAFT") {
        labels.push("DRAFT".into());
    }
    let thread_id = match s(o, p, "threadId")? {
        Some(t) => t,
        None => crate::api::find_thread(mb, &summary).unwrap_or_else(|| id.clone()),
    };
    Ok(Message::new(id, thread_id, labels, date, raw, summary))
}

/// Rate-limit faults seen so far, by method: for tests.
pub fn fault_counts(w: &World) -> BTreeMap<String, u64> {
    w.faults.iter().map(|f| (f.method.clone(), f.seen)).collect()
}
