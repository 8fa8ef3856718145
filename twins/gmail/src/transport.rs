//! Ways in besides a plain JSON request: the upload paths (`uploadType=media`, `multipart`,
//! `resumable`), the batch endpoint (multipart/mixed of HTTP requests, as
//! google-api-python-client's `BatchHttpRequest` and the Node client send it), and the
//! discovery document.

use pome_twin_sdk::{Call, Method, Request, Response, Twin, Value, json};

use crate::api;
use crate::mime;
use crate::model::{Upload, World};
use crate::gerr;
use crate::limits::{MAX_BATCH_PARTS, MAX_BOUNDARY_CHARS};

pub const DISCOVERY: &str = include_str!("../discovery/gmail.v1.json");

/// The discovery document, with its root URLs pointing at this twin.
pub fn discovery(_w: &mut World, call: &mut Call) -> Response {
    let base = format!("{}/", call.req.base_url);
    let text = DISCOVERY.replace("https://gmail.mtls.googleapis.com/", &base).replace("https://gmail.googleapis.com/", &base);
    Response { status: 200, headers: vec![("content-type".into(), "application/json; charset=UTF-8".into())], body: text.into_bytes() }
}

/// A percent-decoded path segment.
pub fn decode(s: &str) -> String {
    pome_twin_sdk::http::decode_segment(s)
}

/// The boundary parameter of a multipart content type.
pub fn boundary(ct: &str) -> Option<String> {
    ct.split(';').map(str::trim).find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim().eq_ignore_ascii_case("boundary").then(|| v.trim().trim_matches('"').to_string())
    })
}

/// One part of a multipart body: its headers (names lower-cased) and its bytes.
pub type Part = (Vec<(String, String)>, Vec<u8>);

/// Split a multipart body into its parts.
pub fn split_multipart(body: &[u8], boundary: &str) -> Vec<Part> {
    let delim = format!("--{boundary}");
    let d = delim.as_bytes();
    let mut positions = Vec::new();
    let mut i = 0;
    while i + d.len() <= body.len() {
        // The line start first: the boundary is compared only where a line begins, so the
        // scan costs the body's length once, whatever the boundary and the body hold.
        if (i == 0 || body[i - 1] == b'\n') && &body[i..i + d.len()] == d {
            positions.push(i);
            i += d.len();
        } else {
            i += 1;
        }
    }
    let mut out = Vec::new();
    for w in positions.windows(2) {
        let mut part = &body[w[0] + d.len()..w[1]];
        if part.starts_with(b"--") {
            break;
        }
        // Strip the line break after the delimiter and the one before the next.
        part = part.strip_prefix(b"\r\n").or_else(|| part.strip_prefix(b"\n")).unwrap_or(part);
        part = part.strip_suffix(b"\r\n").or_else(|| part.strip_suffix(b"\n")).unwrap_or(part);
        let (head, content) = split_head(part);
        out.push((parse_headers(head), content.to_vec()));
    }
    out
}

fn split_head(part: &[u8]) -> (&[u8], &[u8]) {
    for (sep, n) in [(&b"\r\n\r\n"[..], 4), (&b"\n\n"[..], 2)] {
        if let Some(p) = part.windows(n).position(|x| x == sep) {
            return (&part[..p], &part[p + n..]);
        }
    }
    if part.starts_with(b"\r\n") {
        return (&[], &part[2..]);
    }
    (part, &[])
}

fn parse_headers(head: &[u8]) -> Vec<(String, String)> {
    String::from_utf8_lossy(head)
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            Some((k.trim().to_ascii_lowercase(), v.trim().to_string()))
        })
        .collect()
}

type WithMedia = fn(&mut World, &mut Call, Value, Option<Vec<u8>>) -> Response;

fn target(call: &Call) -> Option<WithMedia> {
    let action = call.action.as_deref()?;
    Some(match action {
        "messages.send" => api::send_with,
        "messages.insert" | "messages.import" => api::insert_with,
        "drafts.create" => api::drafts_create_with,
        "drafts.update" => api::drafts_update_with,
        "drafts.send" => api::drafts_send_with,
        _ => return None,
    })
}

/// Serve an upload path: the message arrives as bytes, with or without JSON metadata.
pub fn upload(w: &mut World, call: &mut Call) -> Response {
    let Some(f) = target(call) else { return World::unsupported(call) };
    let kind = call.req.query("uploadType").unwrap_or_default();
    match kind.as_str() {
        "media" => {
            let bytes = call.req.body.clone();
            f(w, call, json!({}), Some(bytes))
        }
        "multipart" => {
            let Some(b) = boundary(call.req.content_type()) else {
                return gerr(400, "badRequest", "Multipart upload needs a multipart/related body with a boundary");
            };
            let parts = split_multipart(&call.req.body, &b);
            if parts.len() != 2 {
                return gerr(400, "badRequest", "Multipart upload needs exactly two parts: metadata and media");
            }
            let meta: Value = match serde_json::from_slice(&parts[0].1) {
                Ok(v @ Value::Object(_)) => v,
                _ if parts[0].1.iter().all(u8::is_ascii_whitespace) => json!({}),
                _ => return gerr(400, "badRequest", "Invalid JSON payload in the metadata part"),
            };
            let media = decode_part(&parts[1]);
            f(w, call, meta, Some(media))
        }
        "resumable" => resumable(w, call, f),
        "" => gerr(400, "badRequest", "Upload requests need an uploadType parameter"),
        other => gerr(400, "badRequest", &format!("Invalid uploadType: {other}")),
    }
}

fn decode_part(part: &Part) -> Vec<u8> {
    let b64 = part.0.iter().any(|(k, v)| k == "content-transfer-encoding" && v.eq_ignore_ascii_case("base64"));
    if b64 {
        mime::b64_decode_any(&String::from_utf8_lossy(&part.1)).unwrap_or_default()
    } else {
        part.1.clone()
    }
}

/// How long a resumable upload session lives, in milliseconds of the sandbox clock: Google's
/// session URIs expire after a week, and a chunk sent later is answered 404.
pub const UPLOAD_SESSION_MS: i64 = 7 * 24 * 3600 * 1000;

/// A chunk's `Content-Range`: `bytes FIRST-LAST/TOTAL`, `bytes FIRST-LAST/*`, or
/// `bytes */TOTAL` (a status query, no bytes).
#[derive(Debug, PartialEq)]
pub struct ChunkRange {
    pub first: Option<usize>,
    pub total: Option<usize>,
}

pub fn chunk_range(header: &str) -> Option<ChunkRange> {
    let spec = header.trim().strip_prefix("bytes")?.trim();
    let (range, total) = spec.split_once('/')?;
    let total = match total.trim() {
        "*" => None,
        t => Some(t.parse().ok()?),
    };
    let first = match range.trim() {
        "*" => None,
        r => {
            let (a, b) = r.split_once('-')?;
            let (a, b): (usize, usize) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
            if b < a {
                return None;
            }
            Some(a)
        }
    };
    Some(ChunkRange { first, total })
}

/// Google's answer to an unfinished upload: `308` with the bytes it holds (no `Range` when
/// it holds none).
fn incomplete(have: usize) -> Response {
    let r = Response::empty(308);
    if have == 0 { r } else { r.with_header("range", format!("bytes=0-{}", have - 1)) }
}

fn resumable(w: &mut World, call: &mut Call, f: WithMedia) -> Response {
    let now = pome_twin_sdk::time::now().timestamp_millis();
    // Sessions past their week are let go whenever one begins or continues, so abandoned
    // uploads do not pile up in the world.
    w.uploads.retain(|_, u| now - u.created_ms < UPLOAD_SESSION_MS);
    match call.req.query("upload_id") {
        None => {
            w.seq += 1;
            let id = format!("AHxI1nP{:x}", mime::fnv(&format!("upload:{}", w.seq)));
            let meta = String::from_utf8_lossy(&call.req.body).to_string();
            let path_id = call.params.iter().find(|(k, _)| k == "id").map(|(_, v)| v.clone());
            w.uploads.insert(
                id.clone(),
                Upload {
                    action: call.action.clone().unwrap_or_default(),
                    user: call.param("userId").to_string(),
                    path_id,
                    metadata: meta,
                    bytes: Vec::new(),
                    created_ms: now,
                },
            );
            let location = format!("{}{}?uploadType=resumable&upload_id={id}", call.req.base_url, call.req.path);
            Response::empty(200).with_header("location", location).with_header("x-guploader-uploadid", id)
        }
        Some(id) => {
            let Some(up) = w.uploads.get_mut(&id) else { return gerr(404, "notFound", "No such upload session") };
            let header = call.req.header("content-range").unwrap_or("").to_string();
            let range = if header.is_empty() {
                // One request with the whole media: it starts at the beginning.
                ChunkRange { first: Some(0), total: Some(call.req.body.len()) }
            } else {
                match chunk_range(&header) {
                    Some(r) => r,
                    None => return gerr(400, "badRequest", &format!("Failed to parse Content-Range header: {header}")),
                }
            };
            match range.first {
                // A status query: the bytes held so far.
                None => {}
                // A chunk is placed where its range says: a re-sent chunk replaces what it
                // covers (the client never heard the 308), one past the end would leave a hole.
                Some(first) if first > up.bytes.len() => {
                    return gerr(
                        400,
                        "badRequest",
                        &format!(
                            "Invalid request.  According to the Content-Range header, the upload offset is {first} byte(s), which exceeds already uploaded size of {} byte(s).",
                            up.bytes.len()
                        ),
                    );
                }
                Some(first) => {
                    up.bytes.truncate(first);
                    up.bytes.extend_from_slice(&call.req.body);
                }
            }
            match range.total {
                Some(total) if up.bytes.len() >= total => {}
                _ => return incomplete(up.bytes.len()),
            }
            let up = w.uploads.remove(&id).unwrap();
            let meta: Value = serde_json::from_str(&up.metadata).unwrap_or(json!({}));
            f(w, call, meta, Some(up.bytes))
        }
    }
}

/// The batch endpoint: each part is an HTTP request served as if it came alone; the answer
/// is a multipart/mixed of HTTP responses with `Content-ID: <response-…>`.
pub fn batch(w: &mut World, call: &mut Call) -> Response {
    // A batch inside a batch (a part that routes here, however its path is spelt) would serve
    // itself recursively: each part is one API call, never another batch.
    if IN_BATCH.get() {
        return gerr(400, "badRequest", "A batch request cannot contain another batch request");
    }
    IN_BATCH.set(true);
    let r = batch_parts(w, call);
    IN_BATCH.set(false);
    r
}

thread_local! {
    /// Set while a batch's parts are served.
    static IN_BATCH: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn batch_parts(w: &mut World, call: &mut Call) -> Response {
    let Some(b) = boundary(call.req.content_type()) else {
        return gerr(400, "badRequest", "Batch requests need a multipart/mixed body with a boundary");
    };
    if b.is_empty() || b.chars().count() > MAX_BOUNDARY_CHARS {
        return gerr(400, "badRequest", &format!("A multipart boundary has 1 to {MAX_BOUNDARY_CHARS} characters"));
    }
    let parts = split_multipart(&call.req.body, &b);
    if parts.len() > MAX_BATCH_PARTS {
        return gerr(400, "badRequest", &format!("A batch holds at most {MAX_BATCH_PARTS} requests"));
    }
    let out_boundary = format!("batch_{:016x}", mime::fnv(&String::from_utf8_lossy(&call.req.body)));
    let mut out = Vec::new();
    for (headers, body) in parts {
        let content_id = headers.iter().find(|(k, _)| k == "content-id").map(|(_, v)| v.clone()).unwrap_or_default();
        let resp = match parse_inner(&body, &call.req) {
            Some(req) => {
                let mut inner = Call::new(req);
                let r = World::router().dispatch(w, &mut inner);
                call.changes.extend(inner.changes);
                call.deliveries.extend(inner.deliveries);
                // An unsupported request inside a batch is an unsupported call all the same.
                call.unsupported |= inner.unsupported;
                r
            }
            None => gerr(400, "badRequest", "Invalid HTTP request in a batch part"),
        };
        out.extend_from_slice(format!("--{out_boundary}\r\nContent-Type: application/http\r\n").as_bytes());
        if !content_id.is_empty() {
            let inner_id = content_id.trim_start_matches('<').trim_end_matches('>');
            out.extend_from_slice(format!("Content-ID: <response-{inner_id}>\r\n").as_bytes());
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(format!("HTTP/1.1 {} {}\r\n", resp.status, reason(resp.status)).as_bytes());
        for (k, v) in &resp.headers {
            out.extend_from_slice(format!("{}: {v}\r\n", title_case(k)).as_bytes());
        }
        out.extend_from_slice(format!("Content-Length: {}\r\n\r\n", resp.body.len()).as_bytes());
        out.extend_from_slice(&resp.body);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(format!("--{out_boundary}--\r\n").as_bytes());
    Response { status: 200, headers: vec![("content-type".into(), format!("multipart/mixed; boundary={out_boundary}"))], body: out }
}

fn title_case(k: &str) -> String {
    k.split('-')
        .map(|w| {
            let mut c = w.chars();
            match c.next() {
                Some(f) => f.to_ascii_uppercase().to_string() + c.as_str(),
                None => String::new(),
            }
        })
        .collect::<Vec<_>>()
        .join("-")
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        409 => "Conflict",
        429 => "Too Many Requests",
        501 => "Not Implemented",
        _ => "Error",
    }
}

fn parse_inner(body: &[u8], outer: &Request) -> Option<Request> {
    let (head, content) = split_head(body);
    let head = String::from_utf8_lossy(head);
    let mut lines = head.lines();
    let first = lines.next()?;
    let mut it = first.split_whitespace();
    let method = match it.next()? {
        "GET" => Method::Get,
        "POST" => Method::Post,
        "PUT" => Method::Put,
        "PATCH" => Method::Patch,
        "DELETE" => Method::Delete,
        _ => return None,
    };
    let target = it.next()?;
    let target = target.split_once("://").map(|(_, rest)| rest.find('/').map(|i| &rest[i..]).unwrap_or("/")).unwrap_or(target);
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let path = match path.find("/gmail/v1/") {
        Some(i) => path[i..].to_string(),
        None => path.to_string(),
    };
    let headers = lines
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            Some((k.trim().to_ascii_lowercase(), v.trim().to_string()))
        })
        .collect();
    Some(Request {
        method,
        path,
        query: query.to_string(),
        headers,
        body: content.to_vec(),
        base_url: outer.base_url.clone(),
        auth: outer.auth,
    })
}
