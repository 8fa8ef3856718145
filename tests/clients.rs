//! Slow, idle and greedy clients against the real server (host/server/src/listener.rs): each
//! gets a defined answer, and a well-behaved client beside them is served as usual.
//! - a client that never finishes its headers (slowloris) is closed at the header timeout;
//! - at the connection cap, the connection idle longest makes room for a new client, and a new
//!   client waits only while every connection is busy;
//! - ten thousand idle connections, against the real `pome serve` with its default cap, do not
//!   keep the next client out.

use std::time::{Duration, Instant};

use pome_e2e::{API_KEY, Opts, ServeProcess, Server};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const GET: &[u8] = b"GET /healthz HTTP/1.1\r\nhost: pome\r\n\r\n";

fn addr(url: &str) -> String {
    url.trim_start_matches("http://").to_string()
}

/// What the server sends next on `conn`: an answer's first bytes, or "" when it closed.
async fn next_answer(conn: &mut TcpStream) -> String {
    let mut buf = vec![0u8; 1024];
    match conn.read(&mut buf).await {
        Ok(n) => String::from_utf8_lossy(&buf[..n]).into_owned(),
        Err(_) => String::new(),
    }
}

/// A connection that has been served once and is kept alive.
async fn served_once(addr: &str) -> TcpStream {
    let mut conn = TcpStream::connect(addr).await.unwrap();
    conn.write_all(GET).await.unwrap();
    assert!(next_answer(&mut conn).await.starts_with("HTTP/1.1 200"));
    conn
}

async fn healthy(url: &str, within: Duration) {
    let http = reqwest::Client::builder().timeout(within).build().unwrap();
    let r = http.get(format!("{url}/healthz")).send().await.expect("a well-behaved client is served");
    assert_eq!(r.status().as_u16(), 200);
}

#[tokio::test]
async fn a_client_that_never_finishes_its_headers_is_closed_at_the_header_timeout() {
    let timeout = Duration::from_millis(600);
    let server = Server::with(Opts { limits: pome::limits::Limits { header_timeout: timeout, max_stores: 8, ..Default::default() }, ..Opts::default() }).await;
    let mut slow = TcpStream::connect(addr(&server.url)).await.unwrap();
    let started = Instant::now();
    slow.write_all(b"GET /healthz HTTP/1.1\r\nhost: pome\r\n").await.unwrap();
    // One more header line every 100 ms, never the blank line that ends them.
    let (mut read, mut write) = slow.into_split();
    let trickle = tokio::spawn(async move {
        for i in 0.. {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if write.write_all(format!("x-slow-{i}: 1\r\n").as_bytes()).await.is_err() {
                break;
            }
        }
    });
    // Meanwhile everyone else is served as usual.
    for _ in 0..3 {
        healthy(&server.url, Duration::from_secs(2)).await;
    }
    let mut buf = [0u8; 256];
    let closed = tokio::time::timeout(Duration::from_secs(10), read.read(&mut buf)).await.expect("closed, not left hanging");
    assert!(matches!(closed, Ok(0) | Err(_)), "the slow client got no answer, only a close: {closed:?}");
    assert!(started.elapsed() >= timeout - Duration::from_millis(100), "closed early: {:?}", started.elapsed());
    trickle.abort();
}

#[tokio::test]
async fn an_idle_kept_alive_connection_is_closed_at_the_header_timeout() {
    let timeout = Duration::from_millis(500);
    let server = Server::with(Opts { limits: pome::limits::Limits { header_timeout: timeout, max_stores: 8, ..Default::default() }, ..Opts::default() }).await;
    let mut idle = served_once(&addr(&server.url)).await;
    let closed = tokio::time::timeout(Duration::from_secs(10), next_answer(&mut idle)).await.expect("closed, not left open");
    assert_eq!(closed, "");
}

#[tokio::test]
async fn at_the_connection_cap_the_longest_idle_connection_makes_room() {
    let server = Server::with(Opts { limits: pome::limits::Limits { max_connections: 2, max_stores: 8, ..Default::default() }, ..Opts::default() }).await;
    let addr = addr(&server.url);
    let mut oldest = served_once(&addr).await;
    let mut newer = served_once(&addr).await;

    // A third client is served at once, in the place of the connection idle longest.
    let mut third = TcpStream::connect(&addr).await.unwrap();
    third.write_all(GET).await.unwrap();
    let served = tokio::time::timeout(Duration::from_secs(5), next_answer(&mut third)).await.expect("served without waiting");
    assert!(served.starts_with("HTTP/1.1 200"), "{served}");
    assert_eq!(tokio::time::timeout(Duration::from_secs(5), next_answer(&mut oldest)).await.unwrap(), "", "the oldest idle connection was closed");
    newer.write_all(GET).await.unwrap();
    assert!(next_answer(&mut newer).await.starts_with("HTTP/1.1 200"), "the newer one kept its place");
}

#[tokio::test]
async fn at_the_connection_cap_a_new_client_waits_while_every_connection_is_busy() {
    let server = Server::with(Opts { limits: pome::limits::Limits { max_connections: 3, max_stores: 8, ..Default::default() }, ..Opts::default() }).await;
    let addr = addr(&server.url);
    let sb = server.sandbox(&["github"], None).await;
    // Two connections each streaming a long answer (the dashboard's live tape): busy.
    let stream = format!("GET /ui/stream/{} HTTP/1.1\r\nhost: pome\r\nx-api-key: {API_KEY}\r\n\r\n", sb.id);
    let mut busy = Vec::new();
    for _ in 0..2 {
        let mut conn = TcpStream::connect(&addr).await.unwrap();
        conn.write_all(stream.as_bytes()).await.unwrap();
        let mut buf = [0u8; 256];
        assert!(conn.read(&mut buf).await.unwrap() > 0, "the stream started");
        busy.push(conn);
    }
    // A third connection whose request still waits for its promised body: it does no work,
    // so the cap may evict it.
    let body = br#"{"twins": ["github"]}"#;
    let mut trickling = TcpStream::connect(&addr).await.unwrap();
    let head = format!("POST /v1/sandboxes HTTP/1.1\r\nhost: pome\r\nx-api-key: {API_KEY}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n", body.len());
    trickling.write_all(head.as_bytes()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;

    // A newcomer takes the trickling connection's place.
    let mut fourth = TcpStream::connect(&addr).await.unwrap();
    fourth.write_all(GET).await.unwrap();
    let served = tokio::time::timeout(Duration::from_secs(5), next_answer(&mut fourth)).await.expect("served in the place of the trickling connection");
    assert!(served.starts_with("HTTP/1.1 200"), "{served}");
    assert_eq!(tokio::time::timeout(Duration::from_secs(5), next_answer(&mut trickling)).await.unwrap(), "", "the trickling connection was closed");

    // Now every connection is busy (two streams, and one more stream on the fourth): the
    // next client waits.
    fourth.write_all(stream.as_bytes()).await.unwrap();
    let mut buf = [0u8; 256];
    assert!(fourth.read(&mut buf).await.unwrap() > 0, "the third stream started");
    let mut fifth = TcpStream::connect(&addr).await.unwrap();
    fifth.write_all(GET).await.unwrap();
    let waited = tokio::time::timeout(Duration::from_millis(400), next_answer(&mut fifth)).await;
    assert!(waited.is_err(), "served past the cap while every connection was busy: {waited:?}");

    // No place frees: after its wait the client is told the server is full, in a complete
    // answer, and the busy connections are untouched.
    let told = tokio::time::timeout(Duration::from_secs(10), next_answer(&mut fifth)).await.expect("answered within the wait");
    assert!(told.starts_with("HTTP/1.1 503") && told.to_ascii_lowercase().contains("retry-after: 1"), "{told}");
    drop(busy);
}

// --- ten thousand idle connections, against the real process --------------------------------

const IDLE: usize = 10_000;

#[tokio::test]
async fn ten_thousand_idle_connections_do_not_keep_out_the_next_client() {
    // This process holds ten thousand sockets and the server as many: both need the room.
    let (soft, hard) = rlimit::Resource::NOFILE.get().unwrap();
    let want = IDLE as u64 + 1_000;
    assert!(hard >= want, "the open-file limit of this machine ({hard}) is below the {want} the test needs");
    if soft < want {
        rlimit::Resource::NOFILE.set(hard, hard).unwrap();
    }
    let data = tempfile::tempdir().unwrap();
    let server = ServeProcess::start(data.path(), &["--durability", "memory"]).await;
    let url = server.url.clone();

    // Half were served once and stay open; half connected and never said a word.
    let addr = addr(&url);
    let mut idle = Vec::with_capacity(IDLE);
    for i in 0..IDLE {
        let conn = if i % 2 == 0 { served_once(&addr).await } else { TcpStream::connect(&addr).await.unwrap() };
        idle.push(conn);
    }

    // The next clients are served, each within a second, and a sandbox works end to end.
    for _ in 0..5 {
        healthy(&url, Duration::from_secs(1)).await;
    }
    let http = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().unwrap();
    let r = http.post(format!("{url}/v1/sandboxes")).header("x-api-key", API_KEY).json(&serde_json::json!({"twins": ["github"]})).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 201);
    let sb: serde_json::Value = r.json().await.unwrap();
    let issue = http
        .get(format!("{url}/s/{}/github/repos/acme/api/issues/1", sb["id"].as_str().unwrap()))
        .bearer_auth(sb["agent_token"].as_str().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(issue.status().as_u16(), 200);
    drop(idle);
}
