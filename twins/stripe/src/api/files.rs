//! Files (uploaded as `multipart/form-data`, as stripe-python and stripe-node send them to
//! files.stripe.com) and file links, the public URLs that serve a file's bytes until they
//! expire. The bytes are kept in the world ([`crate::Data::file_bytes`]), within
//! [`MAX_FILE_BYTES`] a file and [`MAX_SANDBOX_FILE_BYTES`] a sandbox.

use base64::Engine;
use pome_twin_sdk::{Request, Response};

use super::*;

/// The largest file Stripe takes for most purposes is 16 MB; a sandbox keeps its files in
/// memory, so it takes up to 8 MiB, more than any dispute evidence or logo needs.
pub const MAX_FILE_BYTES: usize = 8 << 20;
/// All the files of one sandbox.
pub const MAX_SANDBOX_FILE_BYTES: usize = 32 << 20;
/// Parts one upload may have: a few fields and the file.
const MAX_PARTS: usize = 32;

/// Where file links serve their file, under the twin's base URL (no API key: the link is
/// the credential).
pub const LINKS: &str = "/links/";

/// One part of a `multipart/form-data` body.
pub struct Part {
    pub name: String,
    pub filename: Option<String>,
    pub content_type: Option<String>,
    pub data: Vec<u8>,
}

/// The parts of a `multipart/form-data` request, at most [`MAX_PARTS`].
pub fn multipart(req: &Request) -> Result<Vec<Part>, StripeError> {
    let ct = req.content_type();
    let boundary = ct
        .split(';')
        .filter_map(|p| p.trim().strip_prefix("boundary="))
        .next()
        .map(|b| b.trim_matches('"').to_string())
        .filter(|b| !b.is_empty() && b.len() <= 200)
        .ok_or_else(|| invalid("Invalid multipart/form-data body: no boundary in its Content-Type."))?;
    let delim = format!("--{boundary}").into_bytes();
    let body = &req.body;
    let find = |hay: &[u8], needle: &[u8], from: usize| -> Option<usize> { hay.get(from..)?.windows(needle.len()).position(|w| w == needle).map(|i| i + from) };
    let mut parts = Vec::new();
    let mut at = find(body, &delim, 0).ok_or_else(|| invalid("Invalid multipart/form-data body: the boundary never occurs."))? + delim.len();
    loop {
        if body.get(at..at + 2) == Some(b"--") {
            break;
        }
        // Skip the line end after the boundary.
        at += if body.get(at..at + 2) == Some(b"\r\n") { 2 } else { 1 };
        let head_end = find(body, b"\r\n\r\n", at).ok_or_else(|| invalid("Invalid multipart/form-data body: a part has no header end."))?;
        let head = String::from_utf8_lossy(&body[at..head_end]).into_owned();
        let start = head_end + 4;
        let next = find(body, &delim, start).ok_or_else(|| invalid("Invalid multipart/form-data body: a part is not closed by the boundary."))?;
        let end = if next >= 2 && &body[next - 2..next] == b"\r\n" { next - 2 } else { next };
        let mut part = Part { name: String::new(), filename: None, content_type: None, data: body[start..end].to_vec() };
        for line in head.split("\r\n") {
            let (k, v) = line.split_once(':').unwrap_or((line, ""));
            if k.eq_ignore_ascii_case("content-disposition") {
                for attr in v.split(';').map(str::trim) {
                    if let Some(n) = attr.strip_prefix("name=") {
                        part.name = n.trim_matches('"').to_string();
                    } else if let Some(f) = attr.strip_prefix("filename=") {
                        part.filename = Some(f.trim_matches('"').to_string());
                    }
                }
            } else if k.eq_ignore_ascii_case("content-type") {
                part.content_type = Some(v.trim().to_string());
            }
        }
        parts.push(part);
        if parts.len() > MAX_PARTS {
            return Err(invalid(format!("Invalid multipart/form-data body: more than {MAX_PARTS} parts.")));
        }
        at = next + delim.len();
    }
    Ok(parts)
}

/// The text fields of a multipart body as form pairs (the file part left out), for the
/// parameter pipeline.
pub fn multipart_pairs(req: &Request) -> Result<Vec<(String, String)>, StripeError> {
    Ok(multipart(req)?.into_iter().filter(|p| p.filename.is_none()).map(|p| (p.name, String::from_utf8_lossy(&p.data).into_owned())).collect())
}

/// A file's type from its first bytes, else its name's extension.
fn file_type(data: &[u8], name: Option<&str>) -> Option<&'static str> {
    let magic: &[(&[u8], &str)] = &[(b"%PDF", "pdf"), (b"\x89PNG", "png"), (b"\xFF\xD8\xFF", "jpg"), (b"GIF8", "gif")];
    if let Some((_, t)) = magic.iter().find(|(m, _)| data.starts_with(m)) {
        return Some(t);
    }
    let ext = name?.rsplit_once('.')?.1.to_ascii_lowercase();
    Some(match ext.as_str() {
        "pdf" => "pdf",
        "png" => "png",
        "jpg" | "jpeg" => "jpg",
        "gif" => "gif",
        "csv" => "csv",
        "txt" => "txt",
        "xls" => "xls",
        "xlsx" => "xlsx",
        "docx" => "docx",
        _ => return None,
    })
}

/// The types a purpose takes.
fn types_for(purpose: &str) -> &'static [&'static str] {
    match purpose {
        "dispute_evidence" | "identity_document" | "additional_verification" | "account_requirement" | "customer_signature" => &["jpg", "pdf", "png"],
        "business_icon" | "business_logo" | "terminal_reader_splashscreen" => &["gif", "jpg", "png"],
        _ => &["csv", "docx", "gif", "jpg", "pdf", "png", "txt", "xls", "xlsx"],
    }
}

/// The purposes a file may be uploaded for (the others are files Stripe makes itself).
const UPLOAD_PURPOSES: &[&str] = &[
    "account_requirement", "additional_verification", "business_icon", "business_logo", "customer_signature", "dispute_evidence",
    "identity_document", "pci_document", "tax_document_user_upload", "terminal_reader_splashscreen",
];

pub(super) fn file_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let purpose = p.req_str("purpose")?.to_string();
    if !UPLOAD_PURPOSES.contains(&purpose.as_str()) {
        return Err(invalid(format!("Invalid purpose: must be one of {}", super::tax::one_of(UPLOAD_PURPOSES))).param("purpose"));
    }
    let parts = multipart(&call.req)?;
    let file = parts.into_iter().find(|x| x.name == "file" && x.filename.is_some()).ok_or_else(|| missing("file"))?;
    if file.data.is_empty() {
        return Err(invalid("The file you uploaded is empty.").param("file"));
    }
    if file.data.len() > MAX_FILE_BYTES {
        return Err(invalid(format!("The file you uploaded is {} bytes; files may be at most {MAX_FILE_BYTES} bytes.", file.data.len())).param("file"));
    }
    if w.file_bytes_total + file.data.len() > MAX_SANDBOX_FILE_BYTES {
        return Err(invalid(format!("This account's files may take at most {MAX_SANDBOX_FILE_BYTES} bytes in a sandbox; delete nothing, start another sandbox.")).code("file_limit").param("file"));
    }
    let allowed = types_for(&purpose);
    let ty = file_type(&file.data, file.filename.as_deref()).filter(|t| allowed.contains(t)).ok_or_else(|| {
        invalid(format!("The file type is not supported for purpose `{purpose}`: upload one of {}.", super::tax::one_of(allowed))).param("file")
    })?;
    let id = w.new_id("file");
    let size = file.data.len();
    w.file_bytes_total += size;
    w.file_bytes.insert(id.clone(), base64::engine::general_purpose::STANDARD.encode(&file.data));
    let o = json!({
        "id": id, "object": "file", "created": w.now(), "expires_at": null, "filename": file.filename, "links": null,
        "purpose": purpose, "size": size, "title": null, "type": ty, "url": call.req.url(&format!("/v1/files/{id}/contents")),
    });
    let mut o = w.insert(Some(call), o);
    emit(w, call, "file.created", &o, None);
    // `file_link_data[create]=true` makes a link to the new file too.
    if let Some(d) = p.get("file_link_data") {
        if bool_at(&d["create"], "file_link_data[create]")? == Some(true) {
            let expires = int_at(&d["expires_at"], "file_link_data[expires_at]")?;
            let md = metadata_at(&d["metadata"], "file_link_data[metadata]")?;
            make_link(w, call, &id, &o, expires, md, "file_link_data[expires_at]")?;
        }
    }
    o["links"] = links_of(w, &id);
    Ok(o)
}

/// A listed object as it is: the list is then cut from decoded objects, which are finished
/// after (a file's links, a link's `expired`).
fn as_listed(v: Value) -> Value {
    v
}

/// A file's `links` as Stripe lists them: its links, newest first.
fn links_of(w: &World, file: &str) -> Value {
    let now = w.now();
    let items: Vec<Value> = w.all("file_link").filter(|l| l["file"] == file).map(|l| with_expired(l, now)).collect();
    let mut l = embedded_list(&format!("/v1/file_links?file={file}"), items);
    l.as_object_mut().expect("a list is a hash").remove("total_count");
    l
}

/// A file as answered: its links as they are now.
fn file_view(w: &World, mut f: Value) -> Value {
    let id = f["id"].as_str().unwrap_or_default().to_string();
    f["links"] = links_of(w, &id);
    f
}

pub(super) fn file_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    get_or_404(w, "file", call.param("id"), "file").map(|f| file_view(w, f))
}

pub(super) fn file_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let mut out = list_shaped(w, call, "file", p, |f| field_is(f, "purpose", p.str("purpose")), Some(as_listed))?;
    if let Some(items) = out["data"].as_array_mut() {
        for f in items.iter_mut() {
            *f = file_view(w, std::mem::take(f));
        }
    }
    Ok(out)
}

/// `GET /v1/files/{id}/contents`: the file's bytes, as files.stripe.com serves them.
pub fn file_contents(w: &mut World, call: &mut Call) -> Response {
    serve_bytes(w, call.param("id"))
}

fn serve_bytes(w: &World, id: &str) -> Response {
    let (Some(f), Some(b64)) = (w.get_kind("file", id), w.file_bytes.get(id)) else {
        return Response::json(404, &json!({"error": {"code": "resource_missing", "message": format!("No such file: '{id}'"), "param": "id", "type": "invalid_request_error"}}));
    };
    let bytes = base64::engine::general_purpose::STANDARD.decode(b64).unwrap_or_default();
    let ct = match f["type"].as_str() {
        Some("pdf") => "application/pdf",
        Some("png") => "image/png",
        Some("jpg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("csv") => "text/csv",
        Some("txt") => "text/plain",
        _ => "application/octet-stream",
    };
    let mut r = Response::empty(200).with_header("content-type", ct);
    if let Some(name) = f["filename"].as_str() {
        r = r.with_header("content-disposition", format!("inline; filename=\"{}\"", name.replace('"', "")));
    }
    r.body = bytes;
    r
}

// ---------------------------------------------------------------------------------------
// File links.

/// Purposes whose files Stripe keeps private: no link may expose them.
const UNLINKABLE: &[&str] = &["identity_document", "additional_verification", "account_requirement"];

fn with_expired(mut l: Value, now: i64) -> Value {
    l["expired"] = json!(l["expires_at"].as_i64().is_some_and(|t| t <= now));
    l
}

fn make_link(w: &mut World, call: &mut Call, file: &str, f: &Value, expires: Option<i64>, metadata: Value, param: &str) -> Res {
    let purpose = f["purpose"].as_str().unwrap_or("");
    if UNLINKABLE.contains(&purpose) {
        return Err(invalid(format!("File links cannot be created for files with purpose `{purpose}`.")).param("file"));
    }
    let now = w.now();
    if expires.is_some_and(|t| t <= now) {
        return Err(invalid("The expiry time must be in the future.").param(param));
    }
    let id = w.new_id("link");
    let token = crate::core::base62(w.seq.wrapping_mul(0x2545_F491_4F6C_DD1D), 11);
    let o = json!({
        "id": id, "object": "file_link", "created": now, "expired": false, "expires_at": expires, "file": file,
        "livemode": false, "metadata": metadata, "url": call.req.url(&format!("{LINKS}{token}{}", &id[5..])),
    });
    Ok(w.insert(Some(call), o))
}

pub(super) fn file_link_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let file = p.req_str("file")?.to_string();
    let f = w.get_kind("file", &file).ok_or_else(|| no_such_ref("file", &file, "file"))?;
    let mut md = json!({"metadata": {}});
    p.metadata_into(&mut md)?;
    make_link(w, call, &file, &f, p.int("expires_at")?, md["metadata"].take(), "expires_at")
}

pub(super) fn file_link_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let now = w.now();
    get_or_404(w, "file_link", call.param("id"), "file link").map(|l| with_expired(l, now))
}

pub(super) fn file_link_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let now = w.now();
    let mut l = with_expired(get_or_404(w, "file_link", &id, "file link")?, now);
    if l["expired"] == true && p.has("expires_at") {
        return Err(invalid("This file link has expired and can no longer be updated.").param("expires_at"));
    }
    match p.0.get("expires_at").and_then(Value::as_str) {
        Some("") => l["expires_at"] = Value::Null,
        Some("now") => l["expires_at"] = json!(now),
        Some(t) => {
            let t: i64 = t.parse().map_err(|_| invalid(format!("Invalid integer: {}", crate::core::shown(t))).param("expires_at"))?;
            if t <= now {
                return Err(invalid("The expiry time must be in the future.").param("expires_at"));
            }
            l["expires_at"] = json!(t);
        }
        None => {}
    }
    p.metadata_into(&mut l)?;
    let l = with_expired(l, now);
    Ok(w.modify(call, &id, |x| *x = l))
}

pub(super) fn file_link_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let expired = p.bool("expired")?;
    let now = w.now();
    let mut out = list_shaped(w, call, "file_link", p, |l| field_is(l, "file", p.str("file")) && expired.is_none_or(|e| l["expires_at"].as_i64().is_some_and(|t| t <= now) == e), Some(as_listed))?;
    if let Some(items) = out["data"].as_array_mut() {
        for l in items.iter_mut() {
            *l = with_expired(std::mem::take(l), now);
        }
    }
    Ok(out)
}

/// `GET {LINKS}{token}`: the linked file's bytes, while the link lasts.
pub fn link_page(w: &mut World, call: &mut Call) -> Response {
    let url_tail = call.req.path.rsplit('/').next().unwrap_or_default().to_string();
    let now = w.now();
    let link = w.all("file_link").find(|l| l["url"].as_str().is_some_and(|u| u.ends_with(&format!("{LINKS}{url_tail}"))));
    match link {
        Some(l) if l["expires_at"].as_i64().is_none_or(|t| t > now) => serve_bytes(w, l["file"].as_str().unwrap_or_default()),
        Some(_) => Response::json(410, &json!({"error": {"message": "This file link has expired.", "type": "invalid_request_error"}})),
        None => Response::json(404, &json!({"error": {"message": "This file link does not exist.", "type": "invalid_request_error"}})),
    }
}
