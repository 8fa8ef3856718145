//! Webhook deliveries from a hosted pome (issue #32): a tenant's twin asks the host to POST
//! wherever the tenant's seed or calls say, so the host delivers only where the operator
//! allows (`pome serve --deliver-to`, nowhere by default), checks every address a URL
//! reaches however it is spelled, caps what one store may ask for, and logs outcomes a
//! tenant cannot scan a network with. Real server, real sockets, the `tickets` test twin
//! (its seed registers webhooks; every ticket change is delivered to each).

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clap::Parser as _;
use pome_e2e::{Opts, Sandbox, Server};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// The delivery policy `pome serve <flags>` builds, with retries in milliseconds.
fn serve_policy(flags: &[&str]) -> pome::outbound::Policy {
    let args = ["pome", "serve", "--delivery-backoff", "20ms"].into_iter().chain(flags.iter().copied());
    let pome::cli::Cli { command: pome::cli::Command::Serve(serve) } = pome::cli::Cli::try_parse_from(args).unwrap() else { unreachable!() };
    serve.to_config().outbound
}

async fn server(outbound: pome::outbound::Policy) -> Server {
    Server::with(Opts { outbound, ..Opts::default() }).await
}

/// How a [`Receiver`] answers.
#[derive(Clone)]
enum Answer {
    Status(u16),
    /// 200 once `release` is set.
    HoldUntil(tokio::sync::watch::Receiver<bool>),
    /// Reads the request and never answers.
    Silent,
}

/// A webhook receiver on loopback that counts every connection it accepts, as a raw socket
/// so that even a connection that never sends a request is seen.
struct Receiver {
    base: String,
    connections: Arc<AtomicUsize>,
    /// Request line of each request, in arrival order.
    requests: Arc<Mutex<Vec<String>>>,
    /// Requests being answered now, and the most there ever were at once.
    open: Arc<AtomicUsize>,
    most_open: Arc<AtomicUsize>,
}

impl Receiver {
    async fn start(answer: Answer) -> Receiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let r = Receiver {
            base: format!("http://{}", listener.local_addr().unwrap()),
            connections: Arc::default(),
            requests: Arc::default(),
            open: Arc::default(),
            most_open: Arc::default(),
        };
        let (connections, requests, open, most_open) = (r.connections.clone(), r.requests.clone(), r.open.clone(), r.most_open.clone());
        tokio::spawn(async move {
            loop {
                let Ok((mut s, _)) = listener.accept().await else { return };
                connections.fetch_add(1, SeqCst);
                let (requests, open, most_open, answer) = (requests.clone(), open.clone(), most_open.clone(), answer.clone());
                tokio::spawn(async move {
                    let Some(line) = read_request(&mut s).await else { return };
                    requests.lock().unwrap().push(line);
                    let now = open.fetch_add(1, SeqCst) + 1;
                    most_open.fetch_max(now, SeqCst);
                    let status = match answer {
                        Answer::Status(s) => s,
                        Answer::HoldUntil(mut release) => {
                            let _ = release.wait_for(|r| *r).await;
                            200
                        }
                        Answer::Silent => {
                            tokio::time::sleep(Duration::from_secs(3600)).await;
                            200
                        }
                    };
                    open.fetch_sub(1, SeqCst);
                    let _ = s.write_all(format!("HTTP/1.1 {status} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n").as_bytes()).await;
                });
            }
        });
        r
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn port(&self) -> u16 {
        self.base.rsplit(':').next().unwrap().parse().unwrap()
    }

    fn paths(&self) -> Vec<String> {
        self.requests.lock().unwrap().iter().map(|l| l.split(' ').nth(1).unwrap_or("").to_string()).collect()
    }
}

/// Read one request's head and body; its request line.
async fn read_request(s: &mut tokio::net::TcpStream) -> Option<String> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_string();
            let len: usize = head.lines().find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse().unwrap_or(0))).unwrap_or(0);
            while buf.len() < end + 4 + len {
                let n = s.read(&mut chunk).await.ok().filter(|n| *n > 0)?;
                buf.extend_from_slice(&chunk[..n]);
            }
            return Some(head.lines().next().unwrap_or("").to_string());
        }
        let n = s.read(&mut chunk).await.ok().filter(|n| *n > 0)?;
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// A sandbox of the tickets twin with a webhook registered at each URL.
async fn with_hooks(server: &Server, urls: &[String]) -> Sandbox {
    let hooks: Vec<Value> = urls.iter().enumerate().map(|(i, u)| json!({"url": u, "secret": format!("whsec_{i}")})).collect();
    server.sandbox(&["tickets"], Some(json!({"tickets": [{"id": 1, "title": "Printer on fire", "closed": false}], "webhooks": hooks}))).await
}

/// Change ticket 1, which asks for one delivery per registered webhook.
async fn change_ticket(sb: &Sandbox, closed: bool) {
    let r = sb.http.patch(format!("{}/tickets/1", sb.base("tickets"))).header("x-ticket-key", &sb.token).json(&json!({"closed": closed})).send().await.unwrap();
    assert_eq!(r.status(), 200);
}

async fn log(sb: &Sandbox) -> Vec<Value> {
    let r = sb.call_with("tickets", "GET", "/_pome/deliveries", None, Some(&format!("Bearer {}", sb.token))).await;
    assert_eq!(r.status, 200, "{}", r.text);
    serde_json::from_str(&r.text).unwrap()
}

/// The delivery log once `n` entries are there and none is pending (bounded wait).
async fn settled(sb: &Sandbox, n: usize) -> Vec<Value> {
    for _ in 0..250 {
        let log = log(sb).await;
        if log.len() >= n && log.iter().all(|d| d["state"] != "pending") {
            return log;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("deliveries not settled after 5 s: {:?}", log(sb).await);
}

/// Wait (bounded) until `f` holds.
async fn until(what: &str, f: impl Fn() -> bool) {
    for _ in 0..250 {
        if f() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{what} did not happen within 5 s");
}

fn states(log: &[Value]) -> Vec<&str> {
    log.iter().map(|d| d["state"].as_str().unwrap()).collect()
}

fn first_error(d: &Value) -> &str {
    d["attempts"][0]["error"].as_str().unwrap_or("")
}

#[tokio::test]
async fn a_server_with_no_deliver_to_delivers_nowhere_and_logs_each_delivery_refused() {
    let policy = serve_policy(&[]);
    assert!(policy.allowed.is_empty(), "`pome serve` allows no destination by default");
    let server = server(policy).await;
    let receiver = Receiver::start(Answer::Status(200)).await;
    let sb = with_hooks(&server, &[receiver.url("/hook")]).await;
    change_ticket(&sb, true).await;

    let log = settled(&sb, 1).await;
    assert_eq!(states(&log), ["refused"], "{log:?}");
    assert!(first_error(&log[0]).contains("--deliver-to"), "the refusal says how the operator allows it: {log:?}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(receiver.connections.load(SeqCst), 0, "the host's loopback was never connected to");
}

#[tokio::test]
async fn a_server_with_deliver_to_loopback_delivers_to_a_loopback_receiver() {
    let server = server(serve_policy(&["--deliver-to", "127.0.0.1/32"])).await;
    let receiver = Receiver::start(Answer::Status(200)).await;
    let sb = with_hooks(&server, &[receiver.url("/hook")]).await;
    change_ticket(&sb, true).await;

    let log = settled(&sb, 1).await;
    assert_eq!(states(&log), ["delivered"], "{log:?}");
    assert_eq!(log[0]["attempts"][0]["status"], 200);
    assert_eq!(receiver.paths(), ["/hook"]);
}

#[tokio::test]
async fn loopback_in_other_spellings_metadata_and_unspecified_addresses_are_refused_where_other_destinations_are_allowed() {
    let receiver = Receiver::start(Answer::Status(200)).await;
    let port = receiver.port();
    let urls = [
        format!("http://[::ffff:127.0.0.1]:{port}/mapped"),
        format!("http://[::ffff:7f00:1]:{port}/mapped-hex"),
        format!("http://0.0.0.0:{port}/unspecified"),
        format!("http://0x7f.1:{port}/hex-ipv4"),
        format!("http://localhost:{port}/name"),
        "http://169.254.169.254/latest/meta-data/".to_string(),
    ];
    // A private network; a host name (whose addresses are loopback); everything but the guarded.
    for flags in [&["--deliver-to", "10.0.0.0/8"][..], &["--deliver-to", "localhost"], &["--deliver-to", "0.0.0.0/0", "--deliver-to", "::/0"]] {
        let server = server(serve_policy(flags)).await;
        let sb = with_hooks(&server, &urls).await;
        change_ticket(&sb, true).await;
        let log = settled(&sb, urls.len()).await;
        assert_eq!(states(&log), ["refused"; 6], "under {flags:?}: {log:?}");
        for d in &log {
            assert!(first_error(d).contains("not an allowed delivery destination"), "{d}");
        }
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(receiver.connections.load(SeqCst), 0, "nothing reached the host's loopback");
}

#[tokio::test]
async fn the_delivery_log_shows_a_status_or_a_coarse_outcome_and_never_connection_error_text() {
    let closed_port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let silent = Receiver::start(Answer::Silent).await;
    let failing = Receiver::start(Answer::Status(503)).await;
    let policy = pome::outbound::Policy { timeout: Duration::from_millis(500), ..serve_policy(&["--deliver-to", "127.0.0.1/32", "--delivery-attempts", "1"]) };
    let server = server(policy).await;
    let urls = [
        format!("http://127.0.0.1:{closed_port}/closed"),
        silent.url("/silent"),
        failing.url("/failing"),
        "http://10.1.2.3/not-allowed".to_string(),
        "http://nowhere.invalid/does-not-resolve".to_string(),
    ];
    let sb = with_hooks(&server, &urls).await;
    change_ticket(&sb, true).await;
    let log = settled(&sb, urls.len()).await;
    let by_path = |p: &str| log.iter().find(|d| d["url"].as_str().unwrap().ends_with(p)).unwrap().clone();

    let closed = by_path("/closed");
    assert_eq!((closed["state"].as_str(), closed["attempts"][0]["status"].as_u64(), first_error(&closed)), (Some("failed"), None, "unreachable"), "{closed}");
    let silent = by_path("/silent");
    assert_eq!((silent["state"].as_str(), first_error(&silent)), (Some("failed"), "timeout"), "{silent}");
    let failing = by_path("/failing");
    assert_eq!((failing["attempts"][0]["status"].as_u64(), first_error(&failing)), (Some(503), "the receiver answered 503"), "{failing}");

    let refusal = |p: &str, host: &str| first_error(&by_path(p)).replace(host, "HOST");
    // (A name that resolves to a refused address reads the same too: `outbound.rs`'s tests,
    // as the only name that resolves here, localhost, is allowed in this test.)
    assert_eq!(refusal("/does-not-resolve", "nowhere.invalid"), refusal("/not-allowed", "10.1.2.3"), "whether a name resolves is not shown");

    let text = serde_json::to_string(&log).unwrap().to_ascii_lowercase();
    for leak in ["os error", "connection refused", "connect", "tcp", "dns", "error sending", "127.0.0.1 (", "resolves to", "lookup"] {
        assert!(!text.contains(leak), "the log says `{leak}`: {text}");
    }
    for d in &log {
        for a in d["attempts"].as_array().unwrap() {
            let mut keys: Vec<&str> = a.as_object().unwrap().keys().map(String::as_str).collect();
            keys.sort();
            assert_eq!(keys, ["at", "attempt", "error", "status"], "{a}");
        }
    }
}

#[tokio::test]
async fn deliveries_to_as_many_endpoints_as_the_cap_are_all_sent_however_often() {
    let server = server(serve_policy(&["--deliver-to", "127.0.0.1/32", "--delivery-endpoints", "2"])).await;
    let receiver = Receiver::start(Answer::Status(200)).await;
    let sb = with_hooks(&server, &[receiver.url("/a"), receiver.url("/b")]).await;
    for closed in [true, false, true] {
        change_ticket(&sb, closed).await;
    }
    let log = settled(&sb, 6).await;
    assert_eq!(states(&log), ["delivered"; 6], "the same endpoints again are not new ones: {log:?}");
    assert_eq!(receiver.requests.lock().unwrap().len(), 6);
}

#[tokio::test]
async fn a_delivery_to_an_endpoint_past_the_cap_is_refused_and_not_sent() {
    let server = server(serve_policy(&["--deliver-to", "127.0.0.1/32", "--delivery-endpoints", "2"])).await;
    let receiver = Receiver::start(Answer::Status(200)).await;
    let sb = with_hooks(&server, &[receiver.url("/a"), receiver.url("/b"), receiver.url("/c")]).await;
    change_ticket(&sb, true).await;
    let log = settled(&sb, 3).await;
    assert_eq!(states(&log), ["delivered", "delivered", "refused"], "{log:?}");
    assert!(first_error(&log[2]).contains("2 endpoint URLs"), "{log:?}");
    let mut paths = receiver.paths();
    paths.sort();
    assert_eq!(paths, ["/a", "/b"]);
}

#[tokio::test]
async fn deliveries_up_to_the_in_flight_cap_all_wait_for_a_slow_receiver() {
    let (release, held) = tokio::sync::watch::channel(false);
    let server = server(serve_policy(&["--deliver-to", "127.0.0.1/32", "--deliveries-in-flight", "3"])).await;
    let receiver = Receiver::start(Answer::HoldUntil(held)).await;
    let sb = with_hooks(&server, &[receiver.url("/a"), receiver.url("/b"), receiver.url("/c")]).await;
    change_ticket(&sb, true).await;
    until("three deliveries held by the receiver", || receiver.open.load(SeqCst) == 3).await;
    release.send(true).unwrap();
    assert_eq!(states(&settled(&sb, 3).await), ["delivered"; 3]);
}

#[tokio::test]
async fn a_delivery_past_the_in_flight_cap_is_refused_while_the_others_are_pending() {
    let (release, held) = tokio::sync::watch::channel(false);
    let server = server(serve_policy(&["--deliver-to", "127.0.0.1/32", "--deliveries-in-flight", "2"])).await;
    let receiver = Receiver::start(Answer::HoldUntil(held)).await;
    let sb = with_hooks(&server, &[receiver.url("/a"), receiver.url("/b"), receiver.url("/c")]).await;
    change_ticket(&sb, true).await;
    until("two deliveries held by the receiver", || receiver.open.load(SeqCst) == 2).await;
    let pending = log(&sb).await;
    assert_eq!(states(&pending), ["pending", "pending", "refused"], "{pending:?}");
    assert!(first_error(&pending[2]).contains("2 deliveries pending or retrying"), "{pending:?}");

    release.send(true).unwrap();
    assert_eq!(states(&settled(&sb, 3).await), ["delivered", "delivered", "refused"]);
    assert_eq!(receiver.requests.lock().unwrap().len(), 2, "the refused one was never sent");
}

#[tokio::test]
async fn attempts_across_the_server_wait_for_one_of_its_permits() {
    for (concurrency, most) in [("1", 1), ("3", 3)] {
        let (release, held) = tokio::sync::watch::channel(false);
        let server = server(serve_policy(&["--deliver-to", "127.0.0.1/32", "--delivery-concurrency", concurrency])).await;
        let receiver = Receiver::start(Answer::HoldUntil(held)).await;
        let a = with_hooks(&server, &[receiver.url("/a1"), receiver.url("/a2")]).await;
        let b = with_hooks(&server, &[receiver.url("/b1")]).await;
        change_ticket(&a, true).await;
        change_ticket(&b, true).await;
        until("the receiver holding what the permits let through", || receiver.open.load(SeqCst) == most).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(receiver.open.load(SeqCst), most, "with {concurrency} permits");
        release.send(true).unwrap();
        assert_eq!(states(&settled(&a, 2).await), ["delivered"; 2]);
        assert_eq!(states(&settled(&b, 1).await), ["delivered"]);
        assert_eq!(receiver.most_open.load(SeqCst), most, "with {concurrency} permits");
    }
}

#[tokio::test]
async fn the_delivery_log_keeps_the_newest_entries_up_to_its_cap() {
    for (cap, kept) in [(5, &["1.1", "2.1", "3.1", "4.1", "5.1"][..]), (3, &["3.1", "4.1", "5.1"])] {
        let policy = pome::outbound::Policy { log_entries: cap, ..serve_policy(&["--deliver-to", "127.0.0.1/32"]) };
        let server = server(policy).await;
        let receiver = Receiver::start(Answer::Status(200)).await;
        let sb = with_hooks(&server, &[receiver.url("/hook")]).await;
        for closed in [true, false, true, false, true] {
            change_ticket(&sb, closed).await;
        }
        until("five deliveries received", || receiver.requests.lock().unwrap().len() == 5).await;
        let log = settled(&sb, kept.len()).await;
        let ids: Vec<&str> = log.iter().map(|d| d["id"].as_str().unwrap()).collect();
        assert_eq!(ids, kept, "a log of {cap} entries");
    }
}
