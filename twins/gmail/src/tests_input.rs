//! Hostile input: deep MIME, deep search queries, deep `fields` selections and nested batches
//! each stop at their bound in `limits` with Google's 400 `INVALID_ARGUMENT`, and the mailbox
//! stays readable, every message in it, even one stored before the bounds existed.

use std::time::{Duration, Instant};

use pome_twin_sdk::{Call, Method, Request, Twin, Value, json};

use crate::World;
use crate::limits::{MAX_BATCH_PARTS, MAX_FIELDS_DEPTH, MAX_MIME_DEPTH, MAX_MIME_PARTS, MAX_QUERY_DEPTH};
use crate::tests::{call, get, world};

/// A message whose multipart tree nests `depth` levels, a text part at the bottom.
pub fn nested_mime(depth: usize) -> String {
    let mut m = String::from("From: a@example.com\r\nTo: bob@example.com\r\nSubject: deep\r\n");
    for i in 0..depth {
        m.push_str(&format!("Content-Type: multipart/mixed; boundary=\"b{i}\"\r\n\r\n--b{i}\r\n"));
    }
    m.push_str("Content-Type: text/plain\r\n\r\nbottom\r\n");
    for i in (0..depth).rev() {
        m.push_str(&format!("--b{i}--\r\n"));
    }
    m
}

/// A message with `n` text parts side by side.
fn wide_mime(n: usize) -> String {
    let mut m = String::from("From: a@example.com\r\nTo: bob@example.com\r\nSubject: wide\r\nContent-Type: multipart/mixed; boundary=\"w\"\r\n\r\n");
    for i in 0..n {
        m.push_str(&format!("--w\r\nContent-Type: text/plain\r\n\r\npart {i}\r\n"));
    }
    m.push_str("--w--\r\n");
    m
}

fn assert_invalid_argument(status: u16, v: &Value) {
    assert_eq!(status, 400, "{v}");
    assert_eq!((v["error"]["code"].as_u64(), v["error"]["status"].as_str()), (Some(400), Some("INVALID_ARGUMENT")), "{v}");
    assert!(v["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{v}");
}

fn send_raw(w: &mut World, raw: &str) -> (u16, Value) {
    let (r, _) = call(w, Method::Post, "/gmail/v1/users/me/messages/send", Some(json!({"raw": crate::mime::b64url(raw.as_bytes())})));
    (r.status, r.json_body())
}

/// Every message of the mailbox lists and reads in every format.
fn every_message_reads(w: &mut World) {
    let list = get(w, "/gmail/v1/users/me/messages?maxResults=500&includeSpamTrash=true");
    for m in list["messages"].as_array().unwrap() {
        let id = m["id"].as_str().unwrap();
        for format in ["full", "metadata", "minimal", "raw"] {
            get(w, &format!("/gmail/v1/users/me/messages/{id}?format={format}"));
        }
    }
}

#[test]
fn a_message_nested_to_the_mime_depth_limit_is_sent_and_reads_back_obeyed() {
    let mut w = world();
    let (s, v) = send_raw(&mut w, &nested_mime(MAX_MIME_DEPTH));
    assert_eq!(s, 200, "{v}");
    let full = get(&mut w, &format!("/gmail/v1/users/me/messages/{}?format=full", v["id"].as_str().unwrap()));
    let mut part = &full["payload"];
    for _ in 0..MAX_MIME_DEPTH {
        part = &part["parts"][0];
    }
    assert_eq!(part["mimeType"], "text/plain", "the whole tree is shown: {part}");
}

#[test]
fn a_message_nested_past_the_mime_depth_limit_is_refused_by_every_way_in_violated() {
    let mut w = world();
    let raw = nested_mime(MAX_MIME_DEPTH + 1);
    let b64 = crate::mime::b64url(raw.as_bytes());
    for (path, body) in [
        ("/gmail/v1/users/me/messages/send", json!({"raw": b64})),
        ("/gmail/v1/users/me/messages", json!({"raw": b64})),
        ("/gmail/v1/users/me/messages/import", json!({"raw": b64})),
        ("/gmail/v1/users/me/drafts", json!({"message": {"raw": b64}})),
    ] {
        let (r, _) = call(&mut w, Method::Post, path, Some(body));
        assert_invalid_argument(r.status, &r.json_body());
    }
    every_message_reads(&mut w);
}

#[test]
fn fifty_thousand_nested_parts_are_refused_quickly() {
    let mut w = world();
    let raw = nested_mime(50_000);
    let started = Instant::now();
    let (s, v) = send_raw(&mut w, &raw);
    println!("refusing {} bytes of MIME nested 50,000 deep took {:?}", raw.len(), started.elapsed());
    assert_invalid_argument(s, &v);
    every_message_reads(&mut w);
}

#[test]
fn a_message_with_the_most_parts_is_sent_obeyed_and_one_more_is_refused_violated() {
    let mut w = world();
    // The root multipart counts as a part.
    let (s, v) = send_raw(&mut w, &wide_mime(MAX_MIME_PARTS - 1));
    assert_eq!(s, 200, "{v}");
    let (s, v) = send_raw(&mut w, &wide_mime(MAX_MIME_PARTS));
    assert_invalid_argument(s, &v);
}

#[test]
fn a_deep_message_stored_before_the_limits_still_reads_and_its_mailbox_lists() {
    let mut w = world();
    let raw = nested_mime(5_000).into_bytes();
    let summary = crate::mime::summarize(&raw).expect("reading never refuses a stored message");
    let m = crate::model::Message::new("poison".into(), "poison".into(), vec!["INBOX".into()], 1_800_000_000_000, raw, summary);
    let p = w.primary;
    w.mailboxes[p].insert(m, false);
    let full = get(&mut w, "/gmail/v1/users/me/messages/poison?format=full");
    let mut part = &full["payload"];
    let mut depth = 0;
    while let Some(next) = part["parts"].get(0) {
        part = next;
        depth += 1;
    }
    assert_eq!(depth, MAX_MIME_DEPTH, "the tree is shown to the depth limit");
    get(&mut w, "/gmail/v1/users/me/threads/poison?format=full");
    every_message_reads(&mut w);
    // And after a snapshot and restore, as after a host restart.
    let bytes = postcard::to_allocvec(&w).unwrap();
    let mut back: World = postcard::from_bytes(&bytes).unwrap();
    every_message_reads(&mut back);
}

#[test]
fn a_search_nested_to_the_query_depth_limit_is_answered_obeyed() {
    let mut w = world();
    let q = format!("{}from:alice{}", "(".repeat(MAX_QUERY_DEPTH - 1), ")".repeat(MAX_QUERY_DEPTH - 1));
    let (r, _) = call(&mut w, Method::Get, &format!("/gmail/v1/users/me/messages?q={}", urlencode(&q)), None);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
}

#[test]
fn a_search_nested_past_the_query_depth_limit_is_a_400_violated() {
    let mut w = world();
    for q in [
        format!("{}from:alice{}", "(".repeat(MAX_QUERY_DEPTH + 1), ")".repeat(MAX_QUERY_DEPTH + 1)),
        format!("{}x{}", "(".repeat(10_000), ")".repeat(10_000)),
        format!("{}x", "-".repeat(10_000)),
        format!("{}x{}", "{".repeat(10_000), "}".repeat(10_000)),
        "(".repeat(10_000),
    ] {
        let started = Instant::now();
        let (r, _) = call(&mut w, Method::Get, &format!("/gmail/v1/users/me/messages?q={}", urlencode(&q)), None);
        assert!(started.elapsed() < Duration::from_secs(5), "answered, not stuck");
        assert_invalid_argument(r.status, &r.json_body());
        let (r, _) = call(&mut w, Method::Get, &format!("/gmail/v1/users/me/drafts?q={}", urlencode(&q)), None);
        assert_invalid_argument(r.status, &r.json_body());
    }
}

#[test]
fn a_fields_selection_nested_to_the_limit_is_answered_obeyed() {
    let mut w = world();
    let deep = format!("{}id{}", "a(".repeat(MAX_FIELDS_DEPTH), ")".repeat(MAX_FIELDS_DEPTH));
    let (r, _) = call(&mut w, Method::Get, &format!("/gmail/v1/users/me/messages?fields=messages,{}", urlencode(&deep)), None);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let slashes = format!("{}id", "a/".repeat(MAX_FIELDS_DEPTH));
    let (r, _) = call(&mut w, Method::Get, &format!("/gmail/v1/users/me/messages?fields={}", urlencode(&slashes)), None);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
}

#[test]
fn a_fields_selection_nested_past_the_limit_is_a_400_violated() {
    let mut w = world();
    for f in [
        format!("{}id{}", "a(".repeat(MAX_FIELDS_DEPTH + 1), ")".repeat(MAX_FIELDS_DEPTH + 1)),
        format!("{}c{}", "a(b".repeat(10_000), ")".repeat(10_000)),
        format!("{}id", "a/".repeat(10_000)),
    ] {
        let (r, _) = call(&mut w, Method::Get, &format!("/gmail/v1/users/me/messages?fields={}", urlencode(&f)), None);
        assert_invalid_argument(r.status, &r.json_body());
    }
    get(&mut w, "/gmail/v1/users/me/messages");
}

fn batch(w: &mut World, boundary: &str, body: String) -> (u16, String) {
    let mut req = Request::new(Method::Post, "/batch/gmail/v1");
    req.headers.push(("content-type".into(), format!("multipart/mixed; boundary={boundary}")));
    req.body = body.into_bytes();
    let mut c = Call::new(req);
    let r = <World as Twin>::router().dispatch(w, &mut c);
    (r.status, String::from_utf8_lossy(&r.body).into_owned())
}

fn part(inner: &str) -> String {
    format!("--b\r\nContent-Type: application/http\r\n\r\n{inner}\r\n")
}

#[test]
fn a_batch_inside_a_batch_is_refused_in_its_part_and_the_other_parts_are_served() {
    let mut w = world();
    let inner_batch = "POST /batch/gmail/v1 HTTP/1.1\r\nContent-Type: multipart/mixed; boundary=c\r\n\r\n--c\r\nContent-Type: application/http\r\n\r\nGET /gmail/v1/users/me/profile HTTP/1.1\r\n\r\n--c--";
    let body = format!("{}{}{}--b--\r\n", part("GET /gmail/v1/users/me/profile HTTP/1.1\r\n"), part(inner_batch), part("POST /batch HTTP/1.1\r\n"));
    let (s, text) = batch(&mut w, "b", body);
    assert_eq!(s, 200, "{text}");
    let statuses: Vec<&str> = text.lines().filter(|l| l.starts_with("HTTP/1.1 ")).collect();
    assert_eq!(statuses, ["HTTP/1.1 200 OK", "HTTP/1.1 400 Bad Request", "HTTP/1.1 400 Bad Request"], "{text}");
    assert!(text.contains("\"INVALID_ARGUMENT\""), "{text}");
    // The flag is cleared: the next batch is served.
    let (s, text) = batch(&mut w, "b", format!("{}--b--\r\n", part("GET /gmail/v1/users/me/profile HTTP/1.1\r\n")));
    assert_eq!((s, text.matches("HTTP/1.1 200 OK").count()), (200, 1), "{text}");
}

#[test]
fn a_batch_of_the_most_parts_is_served_obeyed_and_one_more_is_a_400_violated() {
    let mut w = world();
    let one = part("GET /gmail/v1/users/me/profile HTTP/1.1\r\n");
    let (s, text) = batch(&mut w, "b", format!("{}--b--\r\n", one.repeat(MAX_BATCH_PARTS)));
    assert_eq!((s, text.matches("HTTP/1.1 200 OK").count()), (200, MAX_BATCH_PARTS));
    let (s, text) = batch(&mut w, "b", format!("{}--b--\r\n", one.repeat(MAX_BATCH_PARTS + 1)));
    assert_invalid_argument(s, &serde_json::from_str(&text).unwrap());
}

#[test]
fn a_batch_boundary_longer_than_rfc_2046_allows_is_a_400() {
    let mut w = world();
    let long = "x".repeat(100_000);
    let body = format!("--{long}\r\nContent-Type: application/http\r\n\r\nGET /gmail/v1/users/me/profile HTTP/1.1\r\n\r\n--{long}--\r\n");
    let (s, text) = batch(&mut w, &long, body);
    assert_invalid_argument(s, &serde_json::from_str(&text).unwrap());
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

