//! `pome-bench agents`: thousands of open sandboxes, each driven by a simulated agent that
//! calls its twin about once a second, for 60 s (issue #36, item 2). This is what a hosted
//! pome sees — many sandboxes each calling now and then, not one agent hammering one — where
//! wake-ups, timers per sandbox, memory per sandbox and the journal's batching decide the
//! figures.
//!
//! The sandboxes are a mix of all five twins, one twin each, in turn. Each agent makes three
//! reads to one write, real API calls its twin answers with 2xx on the default world, with a
//! think time drawn uniformly from 0.5–1.5 s by a seeded RNG (so a run's schedule repeats).
//! Each sandbox makes its first call while being set up (timed and printed apart): the first
//! call into a fresh sandbox first touches its memory and costs a few times a later one, and
//! five thousand of them in the minute's first second would measure a stampede of new
//! sandboxes, not open ones.
//! The load comes from one current-thread runtime, a timer per agent, and a keep-alive pool
//! of at most `CONNECTIONS` sockets however many agents there are, so the generator stays
//! cheap beside the server on a 2-core machine; its own CPU is printed beside the server's.
//! It writes each agent's requests as HTTP/1.1 bytes made once, and reads the answers with
//! `httparse`, as wrk does: through reqwest it cost 60–70 µs of CPU a call, a third of a
//! core at 5,000 agents taken from the server it measures (35–40 µs now, most of it the
//! socket calls).
//!
//! `POME_BENCH_AGENTS_N` (e.g. `200,1000`; default `1000,5000`) and `POME_BENCH_AGENTS_SECS`
//! (default 60) shorten a try-out. The sizes grow one server: the second size adds
//! sandboxes to the first's, so the earlier ones have a minute of calls behind them.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::sync::Semaphore;
use tokio::time::Instant as TokioInstant;

use crate::{KEY, Memory, Server, percentile};

const TWINS: [&str; 5] = ["github", "stripe", "slack", "gmail", "linear"];
/// Sockets the generator holds at most, whatever N: 5,000 calls a second at 25 ms each fit,
/// and a fronting proxy would hold about as many. Opening one per agent would measure the
/// kernel's socket tables, not pome.
const CONNECTIONS: usize = 128;
/// Sandboxes created at once while setting up.
const CREATE_AT_ONCE: usize = 16;
const RNG_SEED: u64 = 36;
/// A call that starts this much after its agent's timer was due counts as late: the
/// generator, not the server, fell behind.
const LATE: Duration = Duration::from_millis(10);

/// One API call, relative to the twin's base URL (`/s/<id>/<twin>`).
struct Call {
    method: reqwest::Method,
    path: &'static str,
    body: Body,
}

enum Body {
    None,
    Json(String),
    Form(&'static str),
}

/// What an agent of one twin calls: three reads it picks among, and one write.
struct Calls {
    reads: [Call; 3],
    write: Call,
}

fn get(path: &'static str) -> Call {
    Call { method: reqwest::Method::GET, path, body: Body::None }
}

fn post_json(path: &'static str, body: Value) -> Call {
    Call { method: reqwest::Method::POST, path, body: Body::Json(body.to_string()) }
}

fn graphql(query: &str) -> Call {
    post_json("/graphql", serde_json::json!({ "query": query }))
}

/// The calls of each twin in `TWINS` order, all answered 2xx by the default world.
fn calls() -> Vec<Calls> {
    let raw = "From: pome-agent@pome-twin.test\r\nTo: bob@example.com\r\nSubject: Agent update\r\n\r\nSent by a simulated agent.\r\n";
    vec![
        Calls {
            reads: [get("/repos/acme/api/issues"), get("/repos/acme/api/issues/1"), get("/repos/acme/api")],
            write: post_json("/repos/acme/api/issues", serde_json::json!({"title": "Agent issue", "body": "filed by a simulated agent"})),
        },
        Calls {
            reads: [get("/v1/customers?limit=3"), get("/v1/balance"), get("/v1/products?limit=3")],
            write: Call { method: reqwest::Method::POST, path: "/v1/customers", body: Body::Form("email=agent%40example.com&name=Agent") },
        },
        Calls {
            reads: [
                Call { method: reqwest::Method::POST, path: "/api/auth.test", body: Body::None },
                Call { method: reqwest::Method::POST, path: "/api/conversations.list", body: Body::None },
                get("/api/conversations.history?channel=C0ENGALRT1&limit=5"),
            ],
            write: post_json("/api/chat.postMessage", serde_json::json!({"channel": "eng-alerts", "text": "status from a simulated agent"})),
        },
        Calls {
            reads: [get("/gmail/v1/users/me/messages?maxResults=10"), get("/gmail/v1/users/me/labels"), get("/gmail/v1/users/me/messages/msg_welcome")],
            write: post_json("/gmail/v1/users/me/messages/send", serde_json::json!({"raw": crate::gmail::base64_url(raw.as_bytes())})),
        },
        Calls {
            reads: [
                graphql("{ viewer { id name email } }"),
                graphql("{ issues(first: 5) { nodes { identifier title state { name } } } }"),
                graphql("{ teams { nodes { id key name } } }"),
            ],
            write: graphql("mutation { issueCreate(input: {teamId: \"team_eng\", title: \"Agent issue\"}) { success issue { identifier } } }"),
        },
    ]
}

/// One open sandbox and the calls its agent makes, authenticated.
struct Agent {
    twin: usize,
    base: String,
    /// Its calls as they go on the wire: its twin's three reads, then its write.
    wire: [Vec<u8>; 4],
}

impl Agent {
    fn new(twin: usize, base: String, auth: String, calls: &Calls) -> Agent {
        let url: reqwest::Url = base.parse().expect("a sandbox's base URL");
        let host = format!("{}:{}", url.host_str().unwrap_or_default(), url.port_or_known_default().unwrap_or(80));
        let wire = |call: &Call| {
            let (kind, body) = match &call.body {
                Body::None => (None, ""),
                Body::Json(b) => (Some("application/json"), b.as_str()),
                Body::Form(b) => (Some("application/x-www-form-urlencoded"), *b),
            };
            let mut head = format!("{} {}{} HTTP/1.1\r\nhost: {host}\r\nauthorization: {auth}\r\naccept: */*\r\n", call.method, url.path(), call.path);
            if let Some(kind) = kind {
                head.push_str(&format!("content-type: {kind}\r\n"));
            }
            if call.method != reqwest::Method::GET {
                head.push_str(&format!("content-length: {}\r\n", body.len()));
            }
            head.push_str("\r\n");
            head.push_str(body);
            head.into_bytes()
        };
        let wire = [wire(&calls.reads[0]), wire(&calls.reads[1]), wire(&calls.reads[2]), wire(&calls.write)];
        Agent { twin, base, wire }
    }
}

/// The generator's keep-alive sockets: at most `CONNECTIONS`, opened when none is idle,
/// put back after a whole answer, dropped after a failed one. They are taken in turn, so
/// none sits idle past the server's header timeout (which closes idle keep-alive
/// connections), and one the server closed anyway is dropped before use, as any client's
/// pool does.
struct Connections {
    addr: std::net::SocketAddr,
    permits: Semaphore,
    idle: std::sync::Mutex<std::collections::VecDeque<Conn>>,
}

struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Connections {
    fn new(url: &str) -> Connections {
        let url: reqwest::Url = url.parse().expect("the server's URL");
        let addr = url.socket_addrs(|| None).expect("the server's address")[0];
        Connections { addr, permits: Semaphore::new(CONNECTIONS), idle: Default::default() }
    }

    /// Send `request` on an idle socket (or a new one) and read the whole answer; `queued`
    /// is how long the call waited for a socket.
    async fn call(&self, request: &[u8]) -> (Duration, std::io::Result<(u16, Vec<u8>)>) {
        let began = Instant::now();
        let _permit = self.permits.acquire().await.unwrap();
        let queued = began.elapsed();
        let mut conn = loop {
            let idle = self.idle.lock().unwrap().pop_front();
            match idle {
                Some(c) if c.open() => break c,
                Some(_) => continue,
                None => match TcpStream::connect(self.addr).await.and_then(|s| s.set_nodelay(true).map(|_| s)) {
                    Ok(stream) => break Conn { stream, buf: Vec::with_capacity(16 << 10) },
                    Err(e) => return (queued, Err(e)),
                },
            }
        };
        let answer = conn.exchange(request).await;
        if let Ok((_, _, reusable)) = &answer
            && *reusable
        {
            // The body was copied out, so the socket goes back with an empty buffer.
            self.idle.lock().unwrap().push_back(conn);
        }
        (queued, answer.map(|(status, body, _)| (status, body)))
    }
}

impl Conn {
    /// Whether the server still holds the socket open: nothing to read yet, not even its end.
    fn open(&self) -> bool {
        matches!(self.stream.try_read(&mut [0u8; 1]), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
    }

    /// Write `request`, then read one answer: its status, its body (by `content-length`;
    /// the twins' answers all have one) and whether the socket stays open.
    async fn exchange(&mut self, request: &[u8]) -> std::io::Result<(u16, Vec<u8>, bool)> {
        use std::io::{Error, ErrorKind};
        self.stream.write_all(request).await?;
        self.buf.clear();
        loop {
            if self.stream.read_buf(&mut self.buf).await? == 0 {
                return Err(Error::new(ErrorKind::UnexpectedEof, "the server closed the connection mid-answer"));
            }
            let mut headers = [httparse::EMPTY_HEADER; 64];
            let mut head = httparse::Response::new(&mut headers);
            let at = match head.parse(&self.buf).map_err(|e| Error::new(ErrorKind::InvalidData, e))? {
                httparse::Status::Complete(at) => at,
                httparse::Status::Partial => continue,
            };
            let status = head.code.unwrap_or(0);
            let header = |name: &str| head.headers.iter().find(|h| h.name.eq_ignore_ascii_case(name)).map(|h| String::from_utf8_lossy(h.value).to_ascii_lowercase());
            let len: usize = header("content-length")
                .and_then(|v| v.trim().parse().ok())
                .ok_or_else(|| Error::new(ErrorKind::InvalidData, "an answer without content-length"))?;
            let reusable = header("connection").is_none_or(|v| v != "close");
            while self.buf.len() < at + len {
                if self.stream.read_buf(&mut self.buf).await? == 0 {
                    return Err(Error::new(ErrorKind::UnexpectedEof, "the server closed the connection mid-body"));
                }
            }
            return Ok((status, self.buf[at..at + len].to_vec(), reusable && self.buf.len() == at + len));
        }
    }
}

/// splitmix64: enough randomness for think times, and the same schedule every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// What one agent saw.
#[derive(Default)]
struct Tally {
    /// (when it was answered, from the run's start; how long it took; the twin), for answers
    /// that succeeded.
    answered: Vec<(Duration, Duration, usize)>,
    /// How long each answered call waited for one of the `CONNECTIONS` before it was sent:
    /// the part of its latency spent queued in the generator.
    queued: Vec<Duration>,
    writes: usize,
    /// Answered, but not with success: non-2xx, Slack's `ok: false`, GraphQL `errors`.
    refused: usize,
    /// No answer at all: a connection error, a body cut short.
    failed: usize,
    late: usize,
    examples: Vec<String>,
}

impl Tally {
    fn merge(&mut self, other: Tally) {
        self.answered.extend(other.answered);
        self.queued.extend(other.queued);
        self.writes += other.writes;
        self.refused += other.refused;
        self.failed += other.failed;
        self.late += other.late;
        for e in other.examples {
            if self.examples.len() < 5 {
                self.examples.push(e);
            }
        }
    }
}

/// User and system CPU time of process `pid` so far.
fn cpu(pid: &str) -> Duration {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command's closing parenthesis start at the third, `state`.
    let rest = text.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    Duration::from_secs_f64((ticks(11) + ticks(12)) as f64 / clock_ticks())
}

/// How long the threads of process `pid` alive now have waited for a CPU while runnable
/// (`/proc/<pid>/task/*/schedstat`, second field): on a machine shared with builds, the
/// part of the latency that is not the server's doing.
fn run_delay(pid: &str) -> Duration {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return Duration::ZERO };
    let nanos: u64 = tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .sum();
    Duration::from_nanos(nanos)
}

fn clock_ticks() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
            .unwrap_or(100.0)
    })
}

fn sizes() -> Vec<usize> {
    let text = std::env::var("POME_BENCH_AGENTS_N").unwrap_or_else(|_| "1000,5000".into());
    let mut sizes: Vec<usize> = text.split(',').map(|s| s.trim().parse().expect("POME_BENCH_AGENTS_N is a list of counts, e.g. 200,1000")).collect();
    sizes.sort();
    sizes
}

/// Creates sandboxes `from..to`, `CREATE_AT_ONCE` at a time, the twin of sandbox i being
/// `TWINS[i % 5]`, and makes each one's first call (its twin's first read), which first
/// touches the sandbox's memory: an open sandbox of a hosted pome has made it, and its cost
/// (printed apart, with how long each took) belongs to starting a sandbox, not to the
/// minute of calls measured after.
async fn create(server: &Server, calls: &Arc<Vec<Calls>>, from: usize, to: usize) -> (Vec<Agent>, Vec<Duration>) {
    let next = Arc::new(AtomicUsize::new(from));
    let pool = Arc::new(Connections::new(&server.url));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..CREATE_AT_ONCE {
        let (next, http, url, calls, pool) = (next.clone(), server.http.clone(), server.url.clone(), calls.clone(), pool.clone());
        tasks.spawn(async move {
            let mut made = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= to {
                    return made;
                }
                let twin = i % TWINS.len();
                let resp = http
                    .post(format!("{url}/v1/sandboxes"))
                    .header("x-api-key", KEY)
                    .json(&serde_json::json!({"twins": [TWINS[twin]]}))
                    .send()
                    .await
                    .expect("the server answers a create");
                let status = resp.status().as_u16();
                let sb: Value = resp.json().await.unwrap_or(Value::Null);
                assert_eq!(status, 201, "creating sandbox {i} ({}): {sb}", TWINS[twin]);
                let token = sb["agent_token"].as_str().unwrap();
                // Linear takes its API key bare, as Linear does; the others a bearer token.
                let auth = if TWINS[twin] == "linear" { token.to_string() } else { format!("Bearer {token}") };
                let agent = Agent::new(twin, format!("{url}/s/{}/{}", sb["id"].as_str().unwrap(), TWINS[twin]), auth, &calls[twin]);
                let t = Instant::now();
                let (status, body) = pool.call(&agent.wire[0]).await.1.expect("the server answers a first call");
                assert!((200..300).contains(&status), "the first call into sandbox {i} ({}): {status} {}", TWINS[twin], String::from_utf8_lossy(&body));
                made.push((i, agent, t.elapsed()));
            }
        });
    }
    let mut made = Vec::with_capacity(to - from);
    while let Some(part) = tasks.join_next().await {
        made.extend(part.unwrap());
    }
    made.sort_by_key(|(i, _, _)| *i);
    let mut firsts: Vec<Duration> = made.iter().map(|m| m.2).collect();
    firsts.sort();
    (made.into_iter().map(|(_, a, _)| a).collect(), firsts)
}

/// One agent until `end`: wait, call, record, think again.
async fn agent(
    pool: Arc<Connections>,
    calls: Arc<Vec<Calls>>,
    agent: Arc<Agent>,
    mut rng: Rng,
    start: TokioInstant,
    end: TokioInstant,
) -> Tally {
    let mut tally = Tally::default();
    let think = |rng: &mut Rng| Duration::from_secs_f64(0.5 + rng.unit());
    // The first calls spread over the first second, so the agents do not start in step.
    let mut due = start + Duration::from_secs_f64(rng.unit());
    while due < end {
        tokio::time::sleep_until(due).await;
        let began = Instant::now();
        if TokioInstant::now() - due > LATE {
            tally.late += 1;
        }
        let twin = &calls[agent.twin];
        let write = rng.next() % 4 == 0;
        let which = if write { 3 } else { (rng.next() % 3) as usize };
        let call = if write { &twin.write } else { &twin.reads[which] };
        let (queued, answer) = pool.call(&agent.wire[which]).await;
        let took = began.elapsed();
        match answer {
            Ok((status, body)) => {
                // A 200 can still be a refusal in Slack's and GraphQL's shapes.
                let ok = (200..300).contains(&status)
                    && match TWINS[agent.twin] {
                        "slack" => body.starts_with(b"{\"ok\":true"),
                        "linear" => !body.windows(9).any(|w| w == b"\"errors\":"),
                        _ => true,
                    };
                if ok {
                    tally.answered.push((start.elapsed(), took, agent.twin));
                    tally.queued.push(queued);
                    tally.writes += write as usize;
                } else {
                    tally.refused += 1;
                    if tally.examples.len() < 2 {
                        let body = String::from_utf8_lossy(&body[..body.len().min(200)]).to_string();
                        tally.examples.push(format!("{} {} -> {status}: {body}", call.method, call.path));
                    }
                }
            }
            Err(e) => {
                tally.failed += 1;
                if tally.examples.len() < 2 {
                    tally.examples.push(format!("{} {} -> no answer: {e}", call.method, call.path));
                }
            }
        }
        due = (due + think(&mut rng)).max(TokioInstant::now());
    }
    tally
}

/// Drives every agent for `secs` from one current-thread runtime on a thread of its own.
fn drive(agents: Arc<Vec<Arc<Agent>>>, calls: Arc<Vec<Calls>>, secs: u64) -> Tally {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async move {
        let pool = Arc::new(Connections::new(&agents[0].base));
        let start = TokioInstant::now();
        let end = start + Duration::from_secs(secs);
        let mut tasks = tokio::task::JoinSet::new();
        for (i, a) in agents.iter().enumerate() {
            let rng = Rng(RNG_SEED ^ (i as u64).wrapping_mul(0x2545_F491_4F6C_DD1D));
            tasks.spawn(agent(pool.clone(), calls.clone(), a.clone(), rng, start, end));
        }
        let mut all = Tally::default();
        while let Some(t) = tasks.join_next().await {
            all.merge(t.unwrap());
        }
        all
    })
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

pub async fn run() {
    let secs: u64 = std::env::var("POME_BENCH_AGENTS_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(60);
    let server = Server::start();
    let pid = server.child.id().to_string();
    println!("agents: pome at {}; one call per agent every 0.5-1.5 s (3 reads : 1 write), {secs} s per size, {CONNECTIONS} connections at most", server.url);
    let calls = Arc::new(calls());
    // Warm each twin's seed snapshot and the allocator, so the baseline holds what any
    // server holds once and the figure per sandbox only what each sandbox adds.
    for twin in TWINS {
        let sb = server.create(&serde_json::json!({"twins": [twin]})).await;
        server.discard(sb["id"].as_str().unwrap()).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let base = server.memory();
    println!("agents: server before any sandbox: RSS {:.1} MiB, PSS {:.1} MiB", mib(base.rss), mib(base.pss));
    let mut agents: Vec<Arc<Agent>> = Vec::new();
    for n in sizes() {
        let t = Instant::now();
        let (made, firsts) = create(&server, &calls, agents.len(), n).await;
        let added = made.len();
        agents.extend(made.into_iter().map(Arc::new));
        println!(
            "agents {n:>5}: created {added} sandboxes and made each one's first call in {:.1} s ({CREATE_AT_ONCE} at a time); the first call p50 {:.3} ms, p99 {:.3} ms",
            t.elapsed().as_secs_f64(),
            ms(percentile(&firsts, 0.5)),
            ms(percentile(&firsts, 0.99)),
        );
        let settled = settle(&pid).await;
        println!("agents {n:>5}: the server settled {:.1} s after the last first call", settled.as_secs_f64());
        let idle = server.memory();
        line(n, secs, &pid, &server, base, idle, agents.clone(), calls.clone()).await;
    }
}

/// Wait until the server is idle after setting up (a tenth of a second in which it used
/// under 5 % of a core, after at least half a second; at most 20 s): the sandboxes' creation
/// leaves work behind (their rows and deadlines on their way to disk), and the minute
/// measures open sandboxes being called, not the tail of their creation.
async fn settle(pid: &str) -> Duration {
    let started = Instant::now();
    tokio::time::sleep(Duration::from_millis(500)).await;
    while started.elapsed() < Duration::from_secs(20) {
        let before = cpu(pid);
        tokio::time::sleep(Duration::from_millis(100)).await;
        if cpu(pid) - before < Duration::from_millis(5) {
            break;
        }
    }
    started.elapsed()
}

#[allow(clippy::too_many_arguments)]
async fn line(n: usize, secs: u64, pid: &str, server: &Server, base: Memory, idle: Memory, agents: Vec<Arc<Agent>>, calls: Arc<Vec<Calls>>) {
    let agents = Arc::new(agents);
    let (server_cpu, own_cpu, wall) = (cpu(pid), cpu("self"), Instant::now());
    let (server_delay, own_delay) = (run_delay(pid), run_delay("self"));
    let tally = {
        let agents = agents.clone();
        tokio::task::spawn_blocking(move || drive(agents, calls, secs)).await.unwrap()
    };
    let wall = wall.elapsed();
    let (server_cpu, own_cpu) = (cpu(pid) - server_cpu, cpu("self") - own_cpu);
    let (server_delay, own_delay) = (run_delay(pid).saturating_sub(server_delay), run_delay("self").saturating_sub(own_delay));
    let after = server.memory();
    if tally.refused > 0 || tally.failed > 0 {
        println!("agents {n:>5}: NO FIGURE: {} non-2xx, {} failed (of {} calls)", tally.refused, tally.failed, tally.refused + tally.failed + tally.answered.len());
        for e in &tally.examples {
            println!("    e.g. {e}");
        }
        return;
    }
    let calls = tally.answered.len();
    let mut all: Vec<Duration> = tally.answered.iter().map(|a| a.1).collect();
    all.sort();
    // The worst second: the p99 of the one-second window whose answers were slowest.
    let mut windows: Vec<Vec<Duration>> = vec![Vec::new(); wall.as_secs() as usize + 1];
    let last = windows.len() - 1;
    for (at, took, _) in &tally.answered {
        windows[(at.as_secs() as usize).min(last)].push(*took);
    }
    let by_second: Vec<Duration> = windows
        .iter_mut()
        .filter(|w| w.len() >= 100)
        .map(|w| {
            w.sort();
            percentile(w, 0.99)
        })
        .collect();
    let worst = by_second.iter().max().copied().unwrap_or_default();
    let per_call = |d: Duration| d.as_secs_f64() * 1e6 / calls.max(1) as f64;
    let per_sandbox = |m: Memory| m.pss.saturating_sub(base.pss) as f64 / n as f64;
    println!(
        "agents {n:>5} sandboxes, {secs} s: {calls} calls answered ({:.0}/s, {:.0} % writes); p50 {:.3} ms, p99 {:.3} ms, p99.9 {:.1} ms, max {:.1} ms, worst second's p99 {:.1} ms",
        calls as f64 / wall.as_secs_f64(),
        tally.writes as f64 * 100.0 / calls.max(1) as f64,
        ms(percentile(&all, 0.5)),
        ms(percentile(&all, 0.99)),
        ms(percentile(&all, 0.999)),
        ms(*all.last().unwrap()),
        ms(worst),
    );
    let seconds: Vec<String> = by_second.iter().map(|d| format!("{:.1}", ms(*d))).collect();
    println!("agents {n:>5}: p99 by second, ms: {}", seconds.join(" "));
    let mut queued = tally.queued.clone();
    queued.sort();
    println!(
        "agents {n:>5}: of that, queued in the generator for a connection: p50 {:.3} ms, p99 {:.3} ms",
        ms(percentile(&queued, 0.5)),
        ms(percentile(&queued, 0.99)),
    );
    println!(
        "agents {n:>5}: server CPU {:.0} µs a call ({:.0} % of a core; its threads waited {:.1} s for a CPU); generator CPU {:.0} µs a call ({:.0} % of a core; waited {:.1} s; {} calls started > {} ms late)",
        per_call(server_cpu),
        server_cpu.as_secs_f64() * 100.0 / wall.as_secs_f64(),
        server_delay.as_secs_f64(),
        per_call(own_cpu),
        own_cpu.as_secs_f64() * 100.0 / wall.as_secs_f64(),
        own_delay.as_secs_f64(),
        tally.late,
        LATE.as_millis(),
    );
    println!(
        "agents {n:>5}: server RSS {:.1} MiB, PSS {:.1} MiB; PSS per open sandbox {:.1} KiB after the load ({:.1} KiB idle, before it)",
        mib(after.rss),
        mib(after.pss),
        per_sandbox(after),
        per_sandbox(idle),
    );
    // By twin: which one is slow, if any.
    let mut twins = Vec::new();
    for (t, name) in TWINS.iter().enumerate() {
        let mut mine: Vec<Duration> = tally.answered.iter().filter(|a| a.2 == t).map(|a| a.1).collect();
        if mine.is_empty() {
            continue;
        }
        mine.sort();
        twins.push(format!("{name} p50 {:.2} / p99 {:.1} ms", ms(percentile(&mine, 0.5)), ms(percentile(&mine, 0.99))));
    }
    println!("agents {n:>5}: by twin: {}", twins.join(", "));
}
