//! Issue #32, item 4: twins parse hostile input in bounded time and answer in their vendor's
//! shape. Each hostile body found by an agent holding only its sandbox token goes through the
//! real server to the real components; each answer is the vendor's error (never a 500 with a
//! wasm backtrace), and the world stays usable after it.

use std::time::Instant;

use base64::Engine as _;
use pome_e2e::{Reply, Sandbox, Server};
use serde_json::{Value, json};

/// A form POST to a twin with the agent token.
async fn form(sb: &Sandbox, twin: &str, path: &str, body: String) -> Reply {
    let resp = sb
        .http
        .post(format!("{}{path}", sb.base(twin)))
        .bearer_auth(&sb.token)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .unwrap();
    Reply { status: resp.status().as_u16(), headers: resp.headers().clone(), text: resp.text().await.unwrap() }
}

/// No trace of a trap: not a 5xx, and no wasm backtrace in the text.
fn assert_no_trap(r: &Reply) {
    assert!(r.status < 500, "answered {}: {}", r.status, r.text);
    assert!(!r.text.contains("wasm backtrace") && !r.text.contains("wasm trap"), "{}", r.text);
}

/// Google's error shape: `{error: {code, message, status: "INVALID_ARGUMENT"}}`.
fn assert_google_400(r: &Reply) {
    assert_no_trap(r);
    let v = r.json();
    assert_eq!((r.status, v["error"]["code"].as_u64(), v["error"]["status"].as_str()), (400, Some(400), Some("INVALID_ARGUMENT")), "{}", r.text);
    assert!(v["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{}", r.text);
}

/// Linear's error shape: `{errors: [{message, extensions: {code}}]}`.
fn assert_linear_error(r: &Reply, code: &str) {
    assert_no_trap(r);
    let v = r.json();
    assert_eq!((r.status, v["errors"][0]["extensions"]["code"].as_str()), (400, Some(code)), "{}", r.text);
    assert!(v["errors"][0]["message"].as_str().is_some_and(|m| !m.is_empty()), "{}", r.text);
}

fn pct(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

#[tokio::test]
async fn stripe_metadata_nested_fifty_thousand_deep_is_a_400_invalid_request_error() {
    let server = Server::start().await;
    let sb = server.sandbox(&["stripe"], None).await;
    let key = format!("metadata{}", "[a]".repeat(50_000));
    let started = Instant::now();
    let r = form(&sb, "stripe", "/v1/customers", format!("email=deep%40x.test&{}=x", pct(&key))).await;
    println!("Stripe: {} KB of nested brackets answered in {:?}", key.len() / 1024, started.elapsed());
    assert_no_trap(&r);
    let v = r.json();
    assert_eq!((r.status, v["error"]["type"].as_str(), v["error"]["param"].as_str()), (400, Some("invalid_request_error"), Some("metadata")), "{}", r.text);
    assert!(r.text.len() < 2_000, "the answer does not repeat the hostile name: {} bytes", r.text.len());
    // The same through the query string of a GET (a URL holds at most 64 KiB).
    let r = sb.call("stripe", "GET", &format!("/v1/customers?created{}=1", "[a]".repeat(15_000)), None).await;
    assert_eq!((r.status, r.json()["error"]["type"].as_str()), (400, Some("invalid_request_error")), "{}", r.text);
    // The world serves on, and nothing was created.
    let r = sb.call("stripe", "GET", "/v1/customers?email=deep%40x.test", None).await;
    assert_eq!((r.status, r.json()["data"].as_array().map(Vec::len)), (200, Some(0)), "{}", r.text);
    let rows = sb.events("stripe").await;
    assert!(rows.iter().all(|row| row["error"].is_null()), "no row records a twin failure: {rows:?}");
}

fn nested_mime(depth: usize) -> String {
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

/// Every message of the mailbox lists and reads, in every format.
async fn every_message_reads(sb: &Sandbox) {
    let list = sb.call("gmail", "GET", "/gmail/v1/users/me/messages?maxResults=500&includeSpamTrash=true", None).await;
    assert_eq!(list.status, 200, "{}", list.text);
    let list = list.json();
    for m in list["messages"].as_array().into_iter().flatten() {
        for format in ["full", "metadata", "minimal", "raw"] {
            let r = sb.call("gmail", "GET", &format!("/gmail/v1/users/me/messages/{}?format={format}", m["id"].as_str().unwrap()), None).await;
            assert_eq!(r.status, 200, "{}", r.text);
        }
    }
}

#[tokio::test]
async fn gmail_deep_mime_is_refused_at_every_way_in_and_the_mailbox_stays_readable() {
    let server = Server::start().await;
    let sb = server.sandbox(&["gmail"], None).await;
    let raw = base64::engine::general_purpose::URL_SAFE.encode(nested_mime(50_000));
    for (path, body) in [
        ("/gmail/v1/users/me/messages/send", json!({"raw": raw})),
        ("/gmail/v1/users/me/messages", json!({"raw": raw})),
        ("/gmail/v1/users/me/messages/import", json!({"raw": raw})),
        ("/gmail/v1/users/me/drafts", json!({"message": {"raw": raw}})),
    ] {
        let started = Instant::now();
        let r = sb.call("gmail", "POST", path, Some(body)).await;
        println!("Gmail {path}: {} KB of MIME nested 50,000 deep answered in {:?}", raw.len() / 1024, started.elapsed());
        assert_google_400(&r);
    }
    // Media upload: the message as the body.
    let resp = sb
        .http
        .post(format!("{}/upload/gmail/v1/users/me/messages/send?uploadType=media", sb.base("gmail")))
        .bearer_auth(&sb.token)
        .header("content-type", "message/rfc822")
        .body(nested_mime(50_000))
        .send()
        .await
        .unwrap();
    let r = Reply { status: resp.status().as_u16(), headers: resp.headers().clone(), text: resp.text().await.unwrap() };
    assert_google_400(&r);
    // A message at the limit is accepted and reads back.
    let ok = base64::engine::general_purpose::URL_SAFE.encode(nested_mime(32));
    let r = sb.call("gmail", "POST", "/gmail/v1/users/me/messages/send", Some(json!({"raw": ok}))).await;
    assert_eq!(r.status, 200, "{}", r.text);
    every_message_reads(&sb).await;
}

#[tokio::test]
async fn gmail_deep_q_fields_and_nested_batches_answer_400_and_the_mailbox_serves_on() {
    let server = Server::start().await;
    let sb = server.sandbox(&["gmail"], None).await;
    let q = format!("{}from:alice{}", "(".repeat(10_000), ")".repeat(10_000));
    let started = Instant::now();
    // Parentheses need no escaping in a query string: 10,000 levels fit a URL.
    let r = sb.call("gmail", "GET", &format!("/gmail/v1/users/me/messages?q={q}"), None).await;
    println!("Gmail: q with 10,000 nested parentheses answered in {:?}", started.elapsed());
    assert_google_400(&r);
    let r = sb.call("gmail", "GET", &format!("/gmail/v1/users/me/threads?q={}", pct(&format!("{}x", "-".repeat(10_000)))), None).await;
    assert_google_400(&r);
    let fields = format!("{}c{}", "a(b".repeat(10_000), ")".repeat(10_000));
    let started = Instant::now();
    let r = sb.call("gmail", "GET", &format!("/gmail/v1/users/me/messages?fields={fields}"), None).await;
    println!("Gmail: fields nested 10,000 deep answered in {:?}", started.elapsed());
    assert_google_400(&r);

    // A batch whose second part is itself a batch: that part is refused, the others served.
    let inner = "POST /batch/gmail/v1 HTTP/1.1\r\nContent-Type: multipart/mixed; boundary=in\r\n\r\n--in\r\nContent-Type: application/http\r\n\r\nGET /gmail/v1/users/me/profile HTTP/1.1\r\n\r\n--in--";
    let part = |req: &str| format!("--out\r\nContent-Type: application/http\r\n\r\n{req}\r\n");
    let body = format!("{}{}{}--out--\r\n", part("GET /gmail/v1/users/me/profile HTTP/1.1\r\n"), part(inner), part("GET /gmail/v1/users/me/labels HTTP/1.1\r\n"));
    let resp = sb.http.post(format!("{}/batch/gmail/v1", sb.base("gmail"))).bearer_auth(&sb.token).header("content-type", "multipart/mixed; boundary=out").body(body).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let text = resp.text().await.unwrap();
    let statuses: Vec<&str> = text.lines().filter(|l| l.starts_with("HTTP/1.1 ")).collect();
    assert_eq!(statuses, ["HTTP/1.1 200 OK", "HTTP/1.1 400 Bad Request", "HTTP/1.1 200 OK"], "{text}");
    assert!(text.contains("\"INVALID_ARGUMENT\""), "{text}");
    every_message_reads(&sb).await;
}

/// `n` fragments on `ty`, each spreading the next twice; the last selects `leaf`.
fn doubling_fragments(n: usize, ty: &str, leaf: &str) -> String {
    let mut d = String::new();
    for i in 0..n {
        d.push_str(&format!("fragment F{i} on {ty} {{ ...F{} ...F{} }}\n", i + 1, i + 1));
    }
    d.push_str(&format!("fragment F{n} on {ty} {{ {leaf} }}\n"));
    d
}

#[tokio::test]
async fn linear_forty_doubling_fragments_answer_query_too_complex_not_the_deadline() {
    let server = Server::start().await;
    let sb = server.sandbox(&["linear"], None).await;
    let doc = format!("query {{ ...F0 }}\n{}", doubling_fragments(40, "Query", "viewer { id }"));
    assert!(doc.len() < 2_000);
    for _ in 0..3 {
        let started = Instant::now();
        let r = sb.call("linear", "POST", "/graphql", Some(json!({"query": doc}))).await;
        println!("Linear: a {}-byte document of 40 doubling fragments answered in {:?}", doc.len(), started.elapsed());
        assert_linear_error(&r, "QUERY_TOO_COMPLEX");
        assert!(r.json()["errors"][0]["message"].as_str().unwrap().starts_with("Query too complex"), "{}", r.text);
    }
    let r = sb.call("linear", "POST", "/graphql", Some(json!({"query": "{ viewer { id } }"}))).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let rows = sb.events("linear").await;
    assert!(rows.iter().all(|row| row["error"].is_null() && row["status"].as_u64() != Some(500)), "no deadline, no trap: {rows:?}");
}

#[tokio::test]
async fn linear_documents_past_the_twins_bounds_answer_linears_error() {
    let server = Server::start().await;
    let sb = server.sandbox(&["linear"], None).await;
    let deep = format!("{{ {}viewer {{ id }}{} }}", "... on Query { ".repeat(5_000), " }".repeat(5_000));
    let r = sb.call("linear", "POST", "/graphql", Some(json!({"query": deep}))).await;
    assert_no_trap(&r);
    assert_eq!(r.status, 400, "{}", r.text);
    assert!(r.json()["errors"][0]["message"].as_str().is_some(), "{}", r.text);
    let huge = format!("{{ viewer {{ id }} }}{}", " ".repeat(1 << 20));
    let r = sb.call("linear", "POST", "/graphql", Some(json!({"query": huge}))).await;
    assert_linear_error(&r, "QUERY_TOO_COMPLEX");
    let r = sb.call("linear", "POST", "/graphql", Some(json!({"query": "{ viewer { id } }"}))).await;
    assert_eq!(r.status, 200, "{}", r.text);
}

/// The agent token and a seeded API key send the same query; the host redacts both keys.
/// Each caller gets its own viewer however often they alternate (the answer cache included).
#[tokio::test]
async fn linear_callers_never_get_each_others_cached_answers() {
    let server = Server::start().await;
    let mut seed: Value = serde_json::from_str(include_str!("tasks-compat/bundled/24-linear-issue-triage.seed.json")).unwrap();
    seed["tokens"].as_array_mut().unwrap().push(json!({"token": "lin_api_dev_e2e", "user": "user_dev"}));
    let sb = server.sandbox(&["linear"], Some(seed)).await;
    let q = json!({"query": "{ viewer { id isMe } }"});
    for _ in 0..3 {
        let agent = sb.call("linear", "POST", "/graphql", Some(q.clone())).await;
        assert_eq!(agent.json()["data"]["viewer"]["id"], "user_admin", "{}", agent.text);
        let dev = sb.call_with("linear", "POST", "/graphql", Some(q.clone()), Some("lin_api_dev_e2e")).await;
        assert_eq!(dev.json()["data"]["viewer"]["id"], "user_dev", "{}", dev.text);
    }
}
