//! Real MIME: messages are kept as their RFC 5322 bytes; this module parses them with
//! `mail-parser` (the payload tree Gmail returns, the fields search and checks read) and builds
//! them with `mail-builder` (seeded messages, headers a sent message gains).

use base64::Engine as _;
use base64::engine::general_purpose::{URL_SAFE, URL_SAFE_NO_PAD};
use mail_builder::MessageBuilder;
use mail_builder::headers::content_type::ContentType;
use mail_builder::mime::{BodyPart, MimePart};
use mail_parser::{HeaderValue, MessageParser, MimeHeaders, PartType};
use serde_json::{Value, json};

use crate::limits::{MAX_MIME_DEPTH, MAX_MIME_PARTS};

/// base64url with padding, as Gmail writes `raw` and `body.data`.
pub fn b64url(bytes: &[u8]) -> String {
    URL_SAFE.encode(bytes)
}

/// Decode base64 in either alphabet, padded or not, ignoring whitespace (what Gmail accepts).
pub fn b64_decode_any(s: &str) -> Option<Vec<u8>> {
    let cleaned: String = s
        .chars()
        .filter(|c| !c.is_ascii_whitespace() && *c != '=')
        .map(|c| match c {
            '+' => '-',
            '/' => '_',
            c => c,
        })
        .collect();
    URL_SAFE_NO_PAD.decode(cleaned.as_bytes()).ok()
}

/// What the rest of the twin reads from a message: addresses lower-cased, ids without `<>`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    pub from: String,
    pub to: Vec<String>,
    pub cc: Vec<String>,
    pub bcc: Vec<String>,
    pub subject: String,
    pub message_id: String,
    pub in_reply_to: String,
    pub references: Vec<String>,
    pub date_ms: Option<i64>,
    pub text: String,
    pub snippet: String,
    pub filenames: Vec<String>,
    pub has_attachment: bool,
    pub category: Option<String>,
    /// Top-level header names as written, in order.
    pub header_names: Vec<String>,
}

fn addrs(v: Option<&mail_parser::Address<'_>>) -> Vec<String> {
    v.map(|a| a.iter().filter_map(|x| x.address()).map(|s| s.to_ascii_lowercase()).collect()).unwrap_or_default()
}

fn id_list(v: &HeaderValue<'_>) -> Vec<String> {
    match v {
        HeaderValue::Text(t) => vec![t.to_string()],
        HeaderValue::TextList(l) => l.iter().map(|t| t.to_string()).collect(),
        _ => Vec::new(),
    }
}

/// The deepest multipart nesting of a parsed message and its number of parts, counted
/// without recursion (the parser keeps parts in one flat list, children by index).
pub fn shape(msg: &mail_parser::Message<'_>) -> (usize, usize) {
    let mut deepest = 0;
    let mut stack = vec![(0u32, 0usize)];
    let mut seen = vec![false; msg.parts.len()];
    while let Some((idx, depth)) = stack.pop() {
        // A part reached twice would be a cycle: the parser never writes one, but a walk
        // over agent bytes does not rely on it.
        let Some(done) = seen.get_mut(idx as usize) else { continue };
        if std::mem::replace(done, true) {
            continue;
        }
        deepest = deepest.max(depth);
        if let PartType::Multipart(children) = &msg.parts[idx as usize].body {
            stack.extend(children.iter().map(|c| (*c, depth + 1)));
        }
    }
    (deepest, msg.parts.len())
}

/// Parse a message an agent or a seed gives, refusing one nested past [`MAX_MIME_DEPTH`] or
/// with more than [`MAX_MIME_PARTS`] parts, as Gmail refuses what it cannot store.
pub fn accept(raw: &[u8]) -> Result<Summary, String> {
    let msg = MessageParser::default().parse(raw).ok_or_else(|| "Invalid RFC 5322 message".to_string())?;
    let (depth, parts) = shape(&msg);
    if depth > MAX_MIME_DEPTH {
        return Err(format!("Invalid MIME message: multipart parts nest {depth} levels deep; at most {MAX_MIME_DEPTH} are allowed"));
    }
    if parts > MAX_MIME_PARTS {
        return Err(format!("Invalid MIME message: {parts} parts; at most {MAX_MIME_PARTS} are allowed"));
    }
    summary_of(raw, &msg)
}

/// Parse `raw` or say why it is not a message. Any message it was given: reading never
/// refuses what was stored (see [`accept`] for what an agent may store).
pub fn summarize(raw: &[u8]) -> Result<Summary, String> {
    let msg = MessageParser::default().parse(raw).ok_or_else(|| "Invalid RFC 5322 message".to_string())?;
    summary_of(raw, &msg)
}

/// The summary of `raw`, parsed once as `msg`.
fn summary_of(raw: &[u8], msg: &mail_parser::Message<'_>) -> Result<Summary, String> {
    if msg.headers().is_empty() {
        return Err("Invalid RFC 5322 message: no headers".into());
    }
    let text = match msg.body_text(0) {
        Some(t) => t.to_string(),
        None => msg.body_html(0).map(|h| strip_html(&h)).unwrap_or_default(),
    };
    let mut filenames = Vec::new();
    for p in msg.attachments() {
        if let Some(n) = p.attachment_name() {
            filenames.push(n.to_string());
        }
    }
    Ok(Summary {
        from: addrs(msg.from()).into_iter().next().unwrap_or_default(),
        to: addrs(msg.to()),
        cc: addrs(msg.cc()),
        bcc: addrs(msg.bcc()),
        subject: msg.subject().unwrap_or("").to_string(),
        message_id: msg.message_id().unwrap_or("").to_string(),
        in_reply_to: id_list(msg.in_reply_to()).into_iter().next().unwrap_or_default(),
        references: id_list(msg.references()),
        date_ms: msg.date().map(|d| d.to_timestamp() * 1000),
        snippet: snippet(&text),
        text,
        has_attachment: !filenames.is_empty(),
        filenames,
        category: None,
        header_names: msg.root_part().headers.iter().map(|h| header_name(raw, h)).collect(),
    })
}

/// Gmail's snippet: the text collapsed to single spaces, about 200 characters, HTML-escaped.
pub fn snippet(text: &str) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let cut: String = collapsed.chars().take(200).collect();
    let mut out = String::with_capacity(cut.len());
    for c in cut.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn strip_html(h: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in h.chars() {
        match c {
            '<' => in_tag = true,
            '>' => {
                in_tag = false;
                out.push(' ');
            }
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}

/// The header's value as written, unfolded; encoded words decoded (Gmail shows them so).
fn header_value(raw: &[u8], h: &mail_parser::Header<'_>) -> String {
    let s = (h.offset_start as usize).min(raw.len());
    let e = (h.offset_end as usize).min(raw.len()).max(s);
    let text = String::from_utf8_lossy(&raw[s..e]);
    let unfolded: String = text.replace("\r\n", "").replace('\n', "");
    let trimmed = unfolded.trim().to_string();
    if !trimmed.contains("=?") {
        return trimmed;
    }
    match &h.value {
        HeaderValue::Text(t) => t.to_string(),
        HeaderValue::Address(a) => a
            .iter()
            .map(|x| match (x.name(), x.address()) {
                (Some(n), Some(ad)) => format!("{n} <{ad}>"),
                (None, Some(ad)) => ad.to_string(),
                (Some(n), None) => n.to_string(),
                _ => String::new(),
            })
            .collect::<Vec<_>>()
            .join(", "),
        _ => trimmed,
    }
}

fn header_name(raw: &[u8], h: &mail_parser::Header<'_>) -> String {
    let s = (h.offset_field as usize).min(raw.len());
    let e = (h.offset_start as usize).min(raw.len()).max(s);
    String::from_utf8_lossy(&raw[s..e]).trim().trim_end_matches(':').trim().to_string()
}

/// `(name, value)` of every header of a part, in order.
fn headers_of(raw: &[u8], part: &mail_parser::MessagePart<'_>) -> Vec<(String, String)> {
    part.headers.iter().map(|h| (header_name(raw, h), header_value(raw, h))).collect()
}

/// Every top-level header of a message, for `format=metadata`.
pub fn top_headers(raw: &[u8]) -> Vec<(String, String)> {
    match MessageParser::default().parse(raw) {
        Some(m) => headers_of(raw, m.root_part()),
        None => Vec::new(),
    }
}

pub fn attachment_id(message_id: &str, part_id: &str) -> String {
    format!("ANGjdJ{}", URL_SAFE_NO_PAD.encode(format!("{message_id}:{part_id}")))
}

fn mime_type(part: &mail_parser::MessagePart<'_>) -> String {
    match part.content_type() {
        Some(ct) => match ct.subtype() {
            Some(st) => format!("{}/{}", ct.ctype(), st).to_ascii_lowercase(),
            None => ct.ctype().to_ascii_lowercase(),
        },
        None => match &part.body {
            PartType::Html(_) => "text/html".into(),
            PartType::Multipart(_) => "multipart/mixed".into(),
            PartType::Message(_) => "message/rfc822".into(),
            PartType::Binary(_) | PartType::InlineBinary(_) => "application/octet-stream".into(),
            PartType::Text(_) => "text/plain".into(),
        },
    }
}

/// The `payload` Gmail returns for `format=full`: the MIME tree with part ids, headers,
/// `body.size` and `body.data` or `body.attachmentId`.
pub fn payload(raw: &[u8], message_id: &str) -> Value {
    let Some(msg) = MessageParser::default().parse(raw) else {
        return json!({"partId": "", "mimeType": "text/plain", "filename": "", "headers": [], "body": {"size": 0}});
    };
    let mut budget = MAX_MIME_PARTS;
    part_json(raw, &msg, 0, String::new(), message_id, 0, &mut budget)
}

/// One part of the payload tree. Past [`MAX_MIME_DEPTH`] levels or [`MAX_MIME_PARTS`] parts a
/// multipart is answered as a leaf without its children, so a message stored before these
/// limits (or by a seed that predates them) still reads.
fn part_json(raw: &[u8], msg: &mail_parser::Message<'_>, idx: u32, part_id: String, message_id: &str, depth: usize, budget: &mut usize) -> Value {
    *budget = budget.saturating_sub(1);
    let part = &msg.parts[idx as usize];
    let headers: Vec<Value> = headers_of(raw, part).into_iter().map(|(n, v)| json!({"name": n, "value": v})).collect();
    let filename = part.attachment_name().unwrap_or("").to_string();
    let mut out = serde_json::Map::new();
    out.insert("partId".into(), json!(part_id));
    out.insert("mimeType".into(), json!(mime_type(part)));
    out.insert("filename".into(), json!(filename));
    out.insert("headers".into(), Value::Array(headers));
    match &part.body {
        PartType::Multipart(children) => {
            out.insert("body".into(), json!({"size": 0}));
            if depth < MAX_MIME_DEPTH {
                let mut parts = Vec::with_capacity(children.len().min(*budget));
                for (i, c) in children.iter().enumerate() {
                    if *budget == 0 {
                        break;
                    }
                    let pid = if part_id.is_empty() { i.to_string() } else { format!("{part_id}.{i}") };
                    parts.push(part_json(raw, msg, *c, pid, message_id, depth + 1, budget));
                }
                out.insert("parts".into(), Value::Array(parts));
            }
        }
        _ => {
            let bytes = part.contents();
            let is_attachment = !filename.is_empty() || matches!(part.body, PartType::Message(_));
            if is_attachment {
                out.insert(
                    "body".into(),
                    json!({"attachmentId": attachment_id(message_id, &part_id), "size": bytes.len()}),
                );
            } else {
                out.insert("body".into(), json!({"size": bytes.len(), "data": b64url(bytes)}));
            }
        }
    }
    Value::Object(out)
}

/// The decoded bytes of the part an attachment id names.
pub fn attachment(raw: &[u8], message_id: &str, att_id: &str) -> Option<Vec<u8>> {
    let msg = MessageParser::default().parse(raw)?;
    let mut found = None;
    walk(&msg, 0, String::new(), 0, &mut |pid, part| {
        if found.is_none() && attachment_id(message_id, pid) == att_id {
            found = Some(part.contents().to_vec());
        }
    });
    found
}

/// Every part the payload tree shows, with its part id: the same bounds as [`payload`].
fn walk<'a>(msg: &'a mail_parser::Message<'a>, idx: u32, pid: String, depth: usize, f: &mut dyn FnMut(&str, &mail_parser::MessagePart<'a>)) {
    let part = &msg.parts[idx as usize];
    f(&pid, part);
    if let PartType::Multipart(children) = &part.body
        && depth < MAX_MIME_DEPTH
    {
        for (i, c) in children.iter().enumerate().take(MAX_MIME_PARTS) {
            let p = if pid.is_empty() { i.to_string() } else { format!("{pid}.{i}") };
            walk(msg, *c, p, depth + 1, f);
        }
    }
}

/// A message to build from a seed or a draft's fields.
#[derive(Debug, Clone, Default)]
pub struct Compose {
    pub from: String,
    pub from_name: String,
    pub to: Vec<String>,
    pub cc: Vec<String>,
    pub bcc: Vec<String>,
    pub subject: String,
    pub text: Option<String>,
    pub html: Option<String>,
    pub date_unix: i64,
    pub message_id: String,
    pub in_reply_to: Option<String>,
    pub references: Vec<String>,
    /// (filename, mime type, bytes)
    pub attachments: Vec<(String, String, Vec<u8>)>,
    /// Seed for deterministic MIME boundaries.
    pub boundary_seed: String,
}

/// RFC 5322 bytes for `c`, with deterministic boundaries.
pub fn build(c: &Compose) -> Vec<u8> {
    let mut b = MessageBuilder::new();
    b = if c.from_name.is_empty() { b.from(c.from.as_str()) } else { b.from((c.from_name.as_str(), c.from.as_str())) };
    if !c.to.is_empty() {
        b = b.to(c.to.iter().map(|s| s.as_str()).collect::<Vec<&str>>());
    }
    if !c.cc.is_empty() {
        b = b.cc(c.cc.iter().map(|s| s.as_str()).collect::<Vec<&str>>());
    }
    if !c.bcc.is_empty() {
        b = b.bcc(c.bcc.iter().map(|s| s.as_str()).collect::<Vec<&str>>());
    }
    b = b.subject(c.subject.as_str()).date(c.date_unix).message_id(c.message_id.as_str());
    if let Some(r) = &c.in_reply_to {
        b = b.in_reply_to(r.as_str());
    }
    if !c.references.is_empty() {
        b = b.references(c.references.iter().map(|s| s.as_str()).collect::<Vec<&str>>());
    }
    let boundary = |n: u32| format!("{:0>28}", format!("{:x}", fnv(&format!("{}:{n}", c.boundary_seed))));
    let text = c.text.as_ref().map(|t| MimePart::new(ContentType::new("text/plain").attribute("charset", "UTF-8"), BodyPart::Text(t.clone().into())));
    let html = c.html.as_ref().map(|t| MimePart::new(ContentType::new("text/html").attribute("charset", "UTF-8"), BodyPart::Text(t.clone().into())));
    let body = match (text, html) {
        (Some(t), Some(h)) => MimePart::new(
            ContentType::new("multipart/alternative").attribute("boundary", boundary(1)),
            BodyPart::Multipart(vec![t, h]),
        ),
        (Some(t), None) => t,
        (None, Some(h)) => h,
        (None, None) => MimePart::new(ContentType::new("text/plain").attribute("charset", "UTF-8"), BodyPart::Text("".into())),
    };
    let body = if c.attachments.is_empty() {
        body
    } else {
        let mut parts = vec![body];
        for (name, mt, bytes) in &c.attachments {
            parts.push(MimePart::new(ContentType::new(mt.clone()), BodyPart::Binary(bytes.clone().into())).attachment(name.clone()));
        }
        MimePart::new(ContentType::new("multipart/mixed").attribute("boundary", boundary(2)), BodyPart::Multipart(parts))
    };
    b.body(body).write_to_vec().unwrap_or_default()
}

/// 64-bit FNV-1a, for deterministic boundaries and ids.
pub fn fnv(s: &str) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in s.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

/// RFC 2822 date for a header.
pub fn rfc2822(unix: i64) -> String {
    chrono::DateTime::from_timestamp(unix, 0).unwrap_or_default().format("%a, %d %b %Y %H:%M:%S +0000").to_string()
}

/// Prepend the headers a sent message gains when it lacks them (Message-ID, Date, From,
/// MIME-Version), keeping the rest byte for byte.
pub fn complete(raw: &[u8], summary: &mut Summary, from: &str, date_unix: i64, message_id: &str) -> Vec<u8> {
    let names = std::mem::take(&mut summary.header_names);
    let have = |name: &str| names.iter().any(|n| n.eq_ignore_ascii_case(name));
    let mut pre = String::new();
    if !have("MIME-Version") {
        pre.push_str("MIME-Version: 1.0\r\n");
    }
    if !have("Date") {
        pre.push_str(&format!("Date: {}\r\n", rfc2822(date_unix)));
    }
    if summary.message_id.is_empty() {
        pre.push_str(&format!("Message-ID: <{message_id}>\r\n"));
        summary.message_id = message_id.to_string();
    }
    if summary.from.is_empty() && !have("From") {
        pre.push_str(&format!("From: {from}\r\n"));
        summary.from = from.rsplit('<').next().unwrap_or(from).trim_end_matches('>').trim().to_ascii_lowercase();
    }
    let mut out = pre.into_bytes();
    out.extend_from_slice(raw);
    out
}

/// `raw` without a top-level header (and its folded continuation lines): what a recipient's
/// copy loses of `Bcc`.
pub fn strip_header(raw: &[u8], name: &str) -> Vec<u8> {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 2).or_else(|| raw.windows(2).position(|w| w == b"\n\n").map(|p| p + 1)).unwrap_or(raw.len());
    let mut out = Vec::with_capacity(raw.len());
    let mut skipping = false;
    let mut i = 0;
    while i < end {
        let line_end = raw[i..end].iter().position(|&b| b == b'\n').map(|p| i + p + 1).unwrap_or(end);
        let line = &raw[i..line_end];
        let continuation = matches!(line.first(), Some(b' ' | b'\t'));
        if !continuation {
            let n = name.len();
            skipping = line.len() > n && line[..n].eq_ignore_ascii_case(name.as_bytes()) && line[n] == b':';
        }
        if !skipping {
            out.extend_from_slice(line);
        }
        i = line_end;
    }
    out.extend_from_slice(&raw[end..]);
    out
}

/// The trace headers a message delivered to a mailbox carries, above the sender's headers.
pub fn delivered(raw: &[u8], to: &str, from: &str, date_unix: i64, id: &str) -> Vec<u8> {
    let d = rfc2822(date_unix);
    let mut out = format!(
        "Delivered-To: {to}\r\nReceived: by 2002:a05:6a10:{:x} with SMTP id {id};\r\n        {d}\r\nX-Received: by 2002:a17:90a:{:x} with SMTP id {id}-v6mr;\r\n        {d}\r\nReturn-Path: <{from}>\r\nReceived-SPF: pass (google.com: domain of {from} designates 209.85.220.41 as permitted sender) client-ip=209.85.220.41;\r\nAuthentication-Results: mx.google.com;\r\n       spf=pass (google.com: domain of {from} designates 209.85.220.41 as permitted sender) smtp.mailfrom={from}\r\n",
        fnv(id) & 0xffff,
        fnv(to) & 0xffff
    )
    .into_bytes();
    out.extend_from_slice(raw);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bcc_is_stripped_with_its_folded_lines_and_nothing_else() {
        let raw = b"To: a@x.test\r\nBcc: b@x.test,\r\n c@x.test\r\nSubject: Bcc: not a header\r\n\r\nBcc: body line\r\n";
        let out = strip_header(raw, "Bcc");
        assert_eq!(out, b"To: a@x.test\r\nSubject: Bcc: not a header\r\n\r\nBcc: body line\r\n".to_vec());
    }

    #[test]
    fn a_built_message_parses_back_with_its_attachment_and_alternative_bodies() {
        let c = Compose {
            from: "a@x.test".into(),
            to: vec!["b@y.test".into()],
            subject: "Héllo".into(),
            text: Some("plain body".into()),
            html: Some("<p>html body</p>".into()),
            date_unix: 1_780_000_000,
            message_id: "m1@x.test".into(),
            attachments: vec![("log.txt".into(), "text/plain".into(), b"LOG".to_vec())],
            boundary_seed: "s".into(),
            ..Default::default()
        };
        let raw = build(&c);
        assert_eq!(raw, build(&c), "building is deterministic");
        let s = summarize(&raw).unwrap();
        assert_eq!(s.subject, "Héllo");
        assert_eq!(s.filenames, vec!["log.txt"]);
        assert_eq!(s.text.trim(), "plain body");
        let p = payload(&raw, "m1");
        assert_eq!(p["mimeType"], "multipart/mixed");
        assert_eq!(p["parts"][0]["mimeType"], "multipart/alternative");
        assert_eq!(p["parts"][0]["parts"][1]["partId"], "0.1");
        assert_eq!(p["parts"][1]["filename"], "log.txt");
        let att = p["parts"][1]["body"]["attachmentId"].as_str().unwrap();
        assert_eq!(attachment(&raw, "m1", att).unwrap(), b"LOG");
        let subject = p["headers"].as_array().unwrap().iter().find(|h| h["name"] == "Subject").unwrap();
        assert_eq!(subject["value"], "Héllo");
    }
}
