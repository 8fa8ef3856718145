//! Keys, tokens and start-up against a hostile tenant (issue #32): credentials are checked
//! before a body is read, failed authentication is rate-limited per address, revocation takes
//! effect at once, no token is on disk in clear, the data files are the server's alone, and a
//! damaged live.db never stops a start.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pome_e2e::{API_KEY, Opts, ServeProcess, Server, hostile_dir};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

const ALLOWED: u32 = pome::limits::AUTH_FAILURES_ALLOWED;

/// The in-process server with the failure limiter at its default.
async fn limited_server() -> Server {
    Server::with(Opts { auth_failures_allowed: ALLOWED, ..Opts::default() }).await
}

/// Send `head` and then `sent` bytes of a body the head declares much longer, and read what
/// the server answers within five seconds while the rest of the body is still unsent.
async fn answer_to_a_body_cut_short(url: &str, head: &str, sent: usize) -> String {
    let addr = url.trim_start_matches("http://");
    let mut conn = tokio::net::TcpStream::connect(addr).await.unwrap();
    conn.write_all(head.as_bytes()).await.unwrap();
    let chunk = vec![b'x'; 16 << 10];
    let mut written = 0;
    while written < sent {
        // The server may stop reading once it has answered: a write that blocks is fine.
        match tokio::time::timeout(Duration::from_millis(500), conn.write_all(&chunk)).await {
            Ok(Ok(())) => written += chunk.len(),
            _ => break,
        }
    }
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = Instant::now() + Duration::from_secs(5);
    while !answer.windows(4).any(|w| w == b"\r\n\r\n") {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, conn.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => answer.extend_from_slice(&buf[..n]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test]
async fn a_16_mib_body_with_a_bad_key_is_refused_before_the_client_has_sent_it() {
    let server = Server::start().await;
    let sb = server.sandbox(&["github"], None).await;
    let big = 16 << 20;
    let head = format!("POST /v1/sandboxes HTTP/1.1\r\nhost: x\r\nx-api-key: pme_wrong_key_0123456789\r\ncontent-type: application/json\r\ncontent-length: {big}\r\n\r\n");
    let answer = answer_to_a_body_cut_short(&server.url, &head, 64 << 10).await;
    assert!(answer.starts_with("HTTP/1.1 401"), "the control plane answers 401 with 64 KiB of 16 MiB sent: {answer:?}");

    // A twin route: a stranger's body is read only as far as a form credential could need.
    let head = format!(
        "POST /s/{}/github/repos/acme/api/issues HTTP/1.1\r\nhost: x\r\nauthorization: Bearer tok_wrong\r\ncontent-type: application/json\r\ncontent-length: {big}\r\n\r\n",
        sb.id
    );
    let answer = answer_to_a_body_cut_short(&server.url, &head, 512 << 10).await;
    let status: u16 = answer.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    assert!(matches!(status, 401 | 413), "a twin refuses with 512 KiB of 16 MiB sent: {answer:?}");
    assert!(sb.events("github").await.is_empty(), "nothing reached the tape");
    // The agent's own large body is still read whole (up to the cap).
    let body = json!({"title": "big", "body": "y".repeat(1 << 20)});
    assert_eq!(sb.call("github", "POST", "/repos/acme/api/issues", Some(body)).await.status, 201);
}

#[tokio::test]
async fn failed_authentications_within_the_allowance_are_each_answered_401_obeyed() {
    let server = limited_server().await;
    for _ in 0..ALLOWED {
        let (status, v) = server.api_as("pme_wrong_key_0123456789", "GET", "/v1/usage", None).await;
        assert_eq!(status, 401, "{v}");
        assert_eq!(v["error"]["type"], "invalid_auth");
    }
}

#[tokio::test]
async fn failed_authentications_past_the_allowance_are_answered_429_with_retry_after_violated() {
    let server = limited_server().await;
    let sb = server.sandbox(&["github"], None).await;
    for _ in 0..ALLOWED {
        assert_eq!(server.api_as("pme_wrong_key_0123456789", "GET", "/v1/usage", None).await.0, 401);
    }
    let r = server.http.get(format!("{}/v1/usage", server.url)).header("x-api-key", "pme_wrong_key_0123456789").send().await.unwrap();
    assert_eq!(r.status().as_u16(), 429);
    let wait: u64 = r.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=10).contains(&wait), "Retry-After is the rest of the window: {wait}");
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["type"], "rate_limited", "{v}");
    assert!(v["error"]["request_id"].as_str().is_some_and(|s| !s.is_empty()), "{v}");
    assert_eq!(v["error"]["details"]["retry_after"], json!(wait));

    // A valid key from the same address is not refused; nor is the agent's token.
    assert_eq!(server.api("GET", "/v1/usage", None).await.0, 200);
    assert_eq!(sb.call("github", "GET", "/repos/acme/api/issues", None).await.status, 200);
    // A wrong token on a twin route hears 429 in the twin's own shape (GitHub's `message`).
    let r = sb.call_with("github", "GET", "/repos/acme/api/issues", None, Some("Bearer tok_wrong")).await;
    assert_eq!(r.status, 429, "{}", r.text);
    assert!(r.headers.contains_key("retry-after"));
    assert!(r.json()["message"].is_string(), "GitHub's error shape: {}", r.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_revoked_key_fails_on_every_request_sent_after_its_revocation_was_answered() {
    let server = Server::start().await;
    let (status, created) = server.api("POST", "/v1/keys", None).await;
    assert_eq!(status, 201);
    let (key, id) = (created["key"].as_str().unwrap().to_string(), created["id"].as_str().unwrap().to_string());
    // Four clients use the key in a loop: (when the request was sent, its status).
    let seen: Arc<Mutex<Vec<(Instant, u16)>>> = Arc::default();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut loops = Vec::new();
    for _ in 0..4 {
        let (http, url, key, seen, stop) = (server.http.clone(), server.url.clone(), key.clone(), seen.clone(), stop.clone());
        loops.push(tokio::spawn(async move {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let sent = Instant::now();
                let r = http.get(format!("{url}/v1/sandboxes")).header("x-api-key", &key).send().await.unwrap();
                seen.lock().unwrap().push((sent, r.status().as_u16()));
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (status, v) = server.api("DELETE", &format!("/v1/keys/{id}"), None).await;
    let answered = Instant::now();
    assert_eq!(status, 200, "{v}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for l in loops {
        l.await.unwrap();
    }
    let seen = seen.lock().unwrap();
    assert!(seen.iter().any(|(_, s)| *s == 200), "the key worked before");
    let after: Vec<u16> = seen.iter().filter(|(sent, _)| *sent > answered).map(|(_, s)| *s).collect();
    assert!(!after.is_empty());
    assert!(after.iter().all(|s| *s == 401), "after the DELETE answered, nothing succeeds: {after:?}");
}

#[tokio::test]
async fn no_key_can_revoke_itself_in_either_header_form() {
    let server = Server::start().await;
    let (_, created) = server.api("POST", "/v1/keys", None).await;
    let (key, id) = (created["key"].as_str().unwrap(), created["id"].as_str().unwrap());
    let (status, v) = server.api_as(key, "DELETE", &format!("/v1/keys/{id}"), None).await;
    assert_eq!(status, 409, "X-API-KEY: {v}");
    let r = server.http.delete(format!("{}/v1/keys/{id}", server.url)).bearer_auth(key).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 409, "Authorization: Bearer");
    assert_eq!(server.api_as(key, "GET", "/v1/usage", None).await.0, 200, "the key still works");
}

#[tokio::test]
async fn a_live_tape_stream_ends_when_its_key_is_revoked() {
    let server = Server::start().await;
    let (_, created) = server.api("POST", "/v1/keys", None).await;
    let (key, id) = (created["key"].as_str().unwrap().to_string(), created["id"].as_str().unwrap().to_string());
    let sb = server.sandbox(&["github"], None).await;
    let mut stream = server.http.get(format!("{}/ui/stream/{}", server.url, sb.id)).header("x-api-key", &key).send().await.unwrap();
    assert_eq!(stream.status().as_u16(), 200);
    let first = tokio::time::timeout(Duration::from_secs(5), stream.chunk()).await.unwrap().unwrap().unwrap();
    assert!(String::from_utf8_lossy(&first).contains("event: live"), "{first:?}");
    assert_eq!(server.api("DELETE", &format!("/v1/keys/{id}"), None).await.0, 200);
    // The stream ends (keep-alives aside) well before its 15 s keep-alive would say anything.
    let ended = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(chunk) = stream.chunk().await.unwrap() {
            assert!(!String::from_utf8_lossy(&chunk).contains("event: row"), "no row after the key is revoked");
        }
    })
    .await;
    assert!(ended.is_ok(), "the stream ended when its key was revoked");
}

/// `pome serve` on `data` with the test twins, in sync mode (records on disk before answers).
async fn serve_on(data: &Path, extra: &[&str]) -> ServeProcess {
    let twins = hostile_dir();
    let mut args = vec!["--durability", "sync", "--twins-dir", twins.to_str().unwrap()];
    args.extend_from_slice(extra);
    ServeProcess::start(data, &args).await
}

async fn create(http: &reqwest::Client, url: &str) -> (String, String) {
    let r = http.post(format!("{url}/v1/sandboxes")).header("x-api-key", API_KEY).json(&json!({"twins": ["tickets"]})).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 201);
    let v: Value = r.json().await.unwrap();
    (v["id"].as_str().unwrap().into(), v["agent_token"].as_str().unwrap().into())
}

async fn new_ticket(http: &reqwest::Client, url: &str, id: &str, token: &str) -> u16 {
    let r = http.post(format!("{url}/s/{id}/tickets/tickets")).header("x-ticket-key", token).json(&json!({"title": "t"})).send().await.unwrap();
    r.status().as_u16()
}

async fn metrics(http: &reqwest::Client, url: &str) -> String {
    http.get(format!("{url}/metrics")).header("x-api-key", API_KEY).send().await.unwrap().text().await.unwrap()
}

fn bytes_of(data: &Path, prefix: &str) -> Vec<u8> {
    let mut all = Vec::new();
    for e in std::fs::read_dir(data).unwrap() {
        let e = e.unwrap();
        if e.file_name().to_string_lossy().starts_with(prefix) {
            all.extend(std::fs::read(e.path()).unwrap());
        }
    }
    all
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

#[tokio::test]
async fn live_db_holds_no_agent_or_discard_token_in_clear_and_a_restored_agent_still_gets_in() {
    let data = tempfile::tempdir().unwrap();
    let http = reqwest::Client::new();
    let serve = serve_on(data.path(), &[]).await;
    let (id, token) = create(&http, &serve.url).await;
    assert_eq!(new_ticket(&http, &serve.url, &id, &token).await, 201);
    let r = http.delete(format!("{}/v1/sandboxes/{id}", serve.url)).header("x-api-key", API_KEY).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 409);
    let discard = r.json::<Value>().await.unwrap()["error"]["details"]["discard_token"].as_str().unwrap().to_string();
    let db = bytes_of(data.path(), "live.db");
    assert!(!contains(&db, &token), "live.db and its log hold no agent token in clear");
    assert!(!contains(&db, &discard), "nor the discard token");
    let conn = rusqlite::Connection::open(data.path().join("live.db")).unwrap();
    let record: String = conn.query_row("SELECT record FROM sandboxes WHERE id = ?1", [&id], |r| r.get(0)).unwrap();
    assert!(!record.contains(&token) && !record.contains(&discard), "{record}");
    drop(conn);
    serve.stop();

    let serve = serve_on(data.path(), &[]).await;
    assert_eq!(new_ticket(&http, &serve.url, &id, &token).await, 201, "the agent is known by its token's hash");
    assert_eq!(new_ticket(&http, &serve.url, &id, "tok_wrong").await, 401);
    serve.stop();
}

#[tokio::test]
async fn an_old_record_with_clear_tokens_is_hashed_at_load_and_its_agent_still_gets_in() {
    let data = tempfile::tempdir().unwrap();
    let http = reqwest::Client::new();
    let serve = serve_on(data.path(), &[]).await;
    let (id, token) = create(&http, &serve.url).await;
    serve.stop();
    // Rewrite the record as an older pome wrote it: the tokens in clear, no hash.
    let conn = rusqlite::Connection::open(data.path().join("live.db")).unwrap();
    let record: String = conn.query_row("SELECT record FROM sandboxes WHERE id = ?1", [&id], |r| r.get(0)).unwrap();
    let mut old: Value = serde_json::from_str(&record).unwrap();
    old.as_object_mut().unwrap().remove("token_hash");
    old["token"] = json!(token);
    old["discard_token"] = json!("dsc_old_discard_token");
    conn.execute("UPDATE sandboxes SET record = ?2 WHERE id = ?1", [&id, &old.to_string()]).unwrap();
    drop(conn);

    let serve = serve_on(data.path(), &[]).await;
    assert_eq!(new_ticket(&http, &serve.url, &id, &token).await, 201, "the old record's agent gets in");
    let db = bytes_of(data.path(), "live.db");
    assert!(!contains(&db, &token), "the clear token is gone from the file");
    assert!(!contains(&db, "dsc_old_discard_token"));
    serve.stop();
}

#[tokio::test]
async fn the_data_directory_is_0700_and_its_databases_0600_whatever_they_were() {
    let parent = tempfile::tempdir().unwrap();
    let data = parent.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o777)).unwrap();
    // An empty file is a new database to SQLite: left world-readable by an older start.
    std::fs::write(data.join("pome.db"), b"").unwrap();
    std::fs::set_permissions(data.join("pome.db"), std::fs::Permissions::from_mode(0o666)).unwrap();
    let serve = serve_on(&data, &[]).await;
    let http = reqwest::Client::new();
    create(&http, &serve.url).await;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&data), 0o700);
    for name in ["pome.db", "pome.db-wal", "live.db", "live.db-wal", "live.db-shm"] {
        let path = data.join(name);
        assert!(path.exists(), "{name}");
        assert_eq!(mode(&path), 0o600, "{name}");
    }
    serve.stop();
}

#[tokio::test]
async fn metrics_need_the_key_unless_the_server_says_they_are_public() {
    let server = Server::start().await;
    let r = server.http.get(format!("{}/metrics", server.url)).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 401);
    assert_eq!(r.json::<Value>().await.unwrap()["error"]["type"], "invalid_auth");
    let r = server.http.get(format!("{}/metrics", server.url)).header("x-api-key", API_KEY).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert!(r.text().await.unwrap().contains("pome_auth_failures_total 1"));

    let data = tempfile::tempdir().unwrap();
    let serve = serve_on(data.path(), &["--metrics-public"]).await;
    let r = reqwest::get(format!("{}/metrics", serve.url)).await.unwrap();
    assert_eq!(r.status().as_u16(), 200, "--metrics-public");
    assert!(r.text().await.unwrap().contains("pome_sandboxes_open"));
    serve.stop();
}

#[tokio::test]
async fn a_live_db_with_malformed_records_starts_and_brings_back_the_good_sandboxes() {
    let data = tempfile::tempdir().unwrap();
    let http = reqwest::Client::new();
    let serve = serve_on(data.path(), &[]).await;
    let good = [create(&http, &serve.url).await, create(&http, &serve.url).await];
    for (id, token) in &good {
        assert_eq!(new_ticket(&http, &serve.url, id, token).await, 201);
    }
    serve.stop();
    let conn = rusqlite::Connection::open(data.path().join("live.db")).unwrap();
    conn.execute("INSERT INTO sandboxes (id, record, idle_deadline_ms) VALUES ('ses_notjson', '{\"id\": ', 0)", []).unwrap();
    conn.execute("INSERT INTO sandboxes (id, record, idle_deadline_ms) VALUES ('ses_blob', x'00ff', 0)", []).unwrap();
    conn.execute("INSERT INTO sandboxes (id, record, closed, closed_seq) VALUES ('ses_badtomb', NULL, '[1, 2]', 99)", []).unwrap();
    drop(conn);

    let serve = serve_on(data.path(), &[]).await;
    for (id, token) in &good {
        assert_eq!(new_ticket(&http, &serve.url, id, token).await, 201, "{id} came back");
    }
    let text = metrics(&http, &serve.url).await;
    assert!(text.contains("pome_live_records_quarantined_total 3"), "{text}");
    let log = std::fs::read_to_string(data.path().join("serve.log")).unwrap();
    assert!(log.contains("quarantine"), "the operator is told: {log}");
    serve.stop();
    let conn = rusqlite::Connection::open(data.path().join("live.db")).unwrap();
    let moved: i64 = conn.query_row("SELECT COUNT(*) FROM quarantine", [], |r| r.get(0)).unwrap();
    assert_eq!(moved, 3, "the bad records are kept aside, not lost");
    // And the next start finds nothing wrong.
    drop(conn);
    let serve = serve_on(data.path(), &[]).await;
    assert!(metrics(&http, &serve.url).await.contains("pome_live_records_quarantined_total 0"));
    serve.stop();
}

#[tokio::test]
async fn a_live_db_that_is_not_a_database_is_moved_aside_and_the_server_starts() {
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("live.db"), vec![0x5a; 8192]).unwrap();
    let serve = serve_on(data.path(), &[]).await;
    let http = reqwest::Client::new();
    let (id, token) = create(&http, &serve.url).await;
    assert_eq!(new_ticket(&http, &serve.url, &id, &token).await, 201);
    let aside: Vec<String> = std::fs::read_dir(data.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).filter(|n| n.starts_with("live.db.corrupt-")).collect();
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert_eq!(std::fs::read(data.path().join(&aside[0])).unwrap(), vec![0x5a; 8192], "kept as it was");
    let log = std::fs::read_to_string(data.path().join("serve.log")).unwrap();
    assert!(log.contains("moved aside"), "{log}");
    serve.stop();
}

#[tokio::test]
async fn a_sandbox_that_expired_while_the_server_was_down_is_closed_at_start_without_replay() {
    let data = tempfile::tempdir().unwrap();
    let http = reqwest::Client::new();
    let serve = serve_on(data.path(), &[]).await;
    let (expired, token) = create(&http, &serve.url).await;
    let (open, open_token) = create(&http, &serve.url).await;
    for _ in 0..3 {
        assert_eq!(new_ticket(&http, &serve.url, &expired, &token).await, 201);
    }
    serve.stop();
    let conn = rusqlite::Connection::open(data.path().join("live.db")).unwrap();
    let record: String = conn.query_row("SELECT record FROM sandboxes WHERE id = ?1", [&expired], |r| r.get(0)).unwrap();
    let mut record: Value = serde_json::from_str(&record).unwrap();
    record["expires_at_ms"] = json!(1);
    conn.execute("UPDATE sandboxes SET record = ?2 WHERE id = ?1", [&expired, &record.to_string()]).unwrap();
    drop(conn);

    let serve = serve_on(data.path(), &[]).await;
    let r = http.post(format!("{}/s/{expired}/tickets/tickets", serve.url)).bearer_auth(&token).json(&json!({"title": "late"})).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 410);
    assert_eq!(r.json::<Value>().await.unwrap()["error"]["details"]["reason"], "lifetime_expired");
    assert_eq!(new_ticket(&http, &serve.url, &open, &open_token).await, 201, "the other one is back");
    let text = metrics(&http, &serve.url).await;
    assert!(text.contains("pome_live_expired_at_start_total 1"), "{text}");
    assert!(!text.contains("pome_twin_replayed_rows_total{twin=\"tickets\"} 3"), "its three rows were not replayed: {text}");
    serve.stop();
    let conn = rusqlite::Connection::open(data.path().join("live.db")).unwrap();
    let rows: i64 = conn.query_row("SELECT COUNT(*) FROM tape_segments WHERE sandbox_id = ?1", [&expired], |r| r.get(0)).unwrap();
    assert_eq!(rows, 0, "its tape left the disk with it");
}
