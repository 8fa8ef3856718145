//! `make bench`: runs the release `pome serve` binary as a separate process and measures it
//! from outside, over real sockets, the way users meet it. Prints figures; asserts nothing.
//!
//! - sandbox create latency, end to end over HTTP (1 twin, 3 twins, a 1 MB seed)
//! - twin request throughput and latency with `wrk` at 1 and 64 connections
//! - the cheapest calls beside a bare axum handler in the same run (`cheap.rs`)
//! - resident memory per idle sandbox at 1,000 and 10,000 sandboxes
//! - 1,000 and 5,000 open sandboxes each called by an agent about once a second (`agents.rs`)
//! - fork and state-at-a-row latency on a tape of 10,000 rows (`fork.rs`)

mod agents;
mod bare;
mod cheap;
mod durability;
mod fork;
mod gmail;
mod growth;
mod linear;
mod mcp;
mod stripe;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const KEY: &str = "pme_bench_key_for_this_machine";

struct Server {
    url: String,
    child: Child,
    http: reqwest::Client,
    _data: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `pome serve` on a free loopback port over `data`, with room for the bench's sandboxes and
/// `args` besides; answers once it listens, with its URL. POME_BENCH_POME names the host
/// binary to measure (default: the release build).
fn spawn_pome(data: &Path, args: impl IntoIterator<Item = OsString>) -> (Child, String) {
    let pome = std::env::var_os("POME_BENCH_POME").map(PathBuf::from).unwrap_or_else(|| root().join("target/release/pome"));
    let mut child = Command::new(pome)
        .args(["serve", "--listen", "127.0.0.1:0", "--quota", "20000", "--max-stores", "12000", "--data"])
        .arg(data)
        .args(args)
        .env("POME_API_KEY", KEY)
        .env("POME_LOG", "warn")
        .stdout(Stdio::piped())
        .spawn()
        .expect("target/release/pome exists (make bench builds it)");
    use std::io::BufRead;
    let mut url = String::new();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    for line in lines.by_ref() {
        if let Some(u) = line.unwrap().strip_prefix("pome listening on ") {
            url = u.trim().to_string();
            break;
        }
    }
    // Keep reading, so the server never writes into a closed pipe.
    std::thread::spawn(move || lines.for_each(drop));
    (child, url)
}

impl Server {
    fn start() -> Server {
        let data = tempfile::tempdir().unwrap();
        // POME_BENCH_TWINS_DIR: components to load over the embedded ones (an engineer's own
        // build of one twin); POME_BENCH_POME: the host binary to measure.
        let twins = match std::env::var_os("POME_BENCH_TWINS_DIR") {
            Some(d) => PathBuf::from(d),
            None => {
                let twins = root().join("target/bench-twins");
                std::fs::create_dir_all(&twins).unwrap();
                std::fs::copy(root().join("target/wasm32-wasip2/release/twin_hostile.wasm"), twins.join("twin_hostile.wasm")).unwrap();
                twins
            }
        };
        let mut args = vec![OsString::from("--twins-dir"), twins.into_os_string()];
        // A throughput line writes tens of thousands of requests into one sandbox in seconds,
        // far past what an agent writes: room for them, so the line measures serving requests
        // and not a full tape or store. (A Linear store reaches its default 128 MiB at about
        // 45,000 issues, which `issueCreate` at 64 connections makes in five seconds.)
        // The memory budget counts each store's whole linear memory (about 3.4 MiB for a
        // fresh store, nearly all of it untouched copy-on-write pages), so the default (three
        // quarters of this machine's memory) admits about 5,000 sandboxes; the memory lines
        // hold 10,000, and measure what they take with RSS and PSS instead.
        args.extend(["--tape-rows", "2000000", "--tape-mib", "65536", "--store-memory-mib", "512", "--memory-budget", "96GiB"].map(OsString::from));
        let (child, url) = spawn_pome(data.path(), args);
        Server { url, child, http: reqwest::Client::new(), _data: data }
    }

    async fn api(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut req = self.http.request(method, format!("{}{path}", self.url)).header("x-api-key", KEY);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.unwrap();
        (resp.status().as_u16(), resp.json().await.unwrap_or(Value::Null))
    }

    async fn create(&self, body: &Value) -> Value {
        let (status, v) = self.api(reqwest::Method::POST, "/v1/sandboxes", Some(body.clone())).await;
        assert_eq!(status, 201, "{v}");
        v
    }

    async fn discard(&self, id: &str) {
        let (_, refusal) = self.api(reqwest::Method::DELETE, &format!("/v1/sandboxes/{id}"), None).await;
        let token = refusal["error"]["details"]["discard_token"].as_str().unwrap_or_default();
        self.api(reqwest::Method::DELETE, &format!("/v1/sandboxes/{id}?confirm_discard={token}"), None).await;
    }

    fn memory(&self) -> Memory {
        let text = std::fs::read_to_string(format!("/proc/{}/smaps_rollup", self.child.id())).unwrap();
        let kib = |name: &str| -> u64 {
            text.lines().find_map(|l| l.strip_prefix(name)).and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok()).unwrap_or(0)
        };
        Memory { rss: kib("Rss:"), pss: kib("Pss:") }
    }
}

/// The server's resident memory, in KiB. RSS counts a page once per mapping of it, and every
/// twin instance maps its component's data: a page of a twin's read-only tables that 1,000
/// sandboxes have read counts 1,000 times, though the machine holds it once. PSS shares each
/// page out among its mappings, so it adds up to what the machine spends.
#[derive(Clone, Copy)]
struct Memory {
    rss: u64,
    pss: u64,
}

impl Memory {
    /// What each of `n` sandboxes made since `before`.
    fn per_sandbox(self, before: Memory, n: usize) -> String {
        let each = |now: u64, then: u64| now.saturating_sub(then) as f64 / n as f64;
        format!("RSS {:>6.1} KiB, PSS {:>6.1} KiB per sandbox", each(self.rss, before.rss), each(self.pss, before.pss))
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

async fn create_latency(server: &Server, label: &str, body: Value, n: usize) {
    // The first create on a new seed runs the twin's init; report it apart.
    let t = Instant::now();
    let first = server.create(&body).await;
    let cold = t.elapsed();
    server.discard(first["id"].as_str().unwrap()).await;
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let sb = server.create(&body).await;
        times.push(t.elapsed());
        server.discard(sb["id"].as_str().unwrap()).await;
    }
    times.sort();
    println!(
        "create {label:<34} p50 {:>8.3} ms   p99 {:>8.3} ms   (first, with init: {:.1} ms; n={n})",
        percentile(&times, 0.5).as_secs_f64() * 1e3,
        percentile(&times, 0.99).as_secs_f64() * 1e3,
        cold.as_secs_f64() * 1e3
    );
}

/// A GitHub seed with `n` open issues whose bodies make it about `bytes` long.
fn github_seed(issues: usize, body_bytes: usize) -> Value {
    let issues: Vec<Value> = (0..issues)
        .map(|i| json!({"title": format!("Issue number {i}"), "body": "x".repeat(body_bytes), "state": "open", "labels": [], "assignees": []}))
        .collect();
    json!({
        "users": [{"login": "acme", "type": "Organization"}, {"login": "pome-agent", "type": "User"}],
        "repositories": [{"owner": "acme", "name": "api", "description": "bench", "private": false, "default_branch": "main",
                          "files": [{"path": "README.md", "content": "# api\n"}], "issues": issues}]
    })
}

struct WrkResult {
    rps: f64,
    p50_ms: f64,
    p99_ms: f64,
    non_2xx: u64,
    /// Requests that got no answer at all: connections refused or reset, timeouts.
    socket_errors: u64,
}

impl WrkResult {
    /// Every request got a 2xx answer, so its figures count.
    fn all_succeeded(&self) -> bool {
        self.non_2xx == 0 && self.socket_errors == 0
    }
}

/// One throughput line. Only answers that succeeded count: with any non-2xx answer, or any
/// request that got no answer, the line says how many and prints no figure (a refusal is
/// cheaper than an answer, and a dropped connection cheaper still).
fn report(label: &str, conns: u32, r: &WrkResult) {
    if !r.all_succeeded() {
        println!("{label:<64} c={conns:<3} NO FIGURE: {} non-2xx answers, {} requests unanswered", r.non_2xx, r.socket_errors);
    } else {
        println!("{label:<64} c={conns:<3} {:>9.0} req/s   p50 {:>7.3} ms   p99 {:>7.3} ms", r.rps, r.p50_ms, r.p99_ms);
    }
}

fn wrk(url: &str, token: &str, conns: u32, script: Option<&Path>) -> WrkResult {
    wrk_for(url, token, conns, script, 5)
}

fn wrk_for(url: &str, token: &str, conns: u32, script: Option<&Path>, secs: u32) -> WrkResult {
    let threads = conns.min(2).to_string();
    let mut cmd = Command::new("wrk");
    cmd.args(["-t", &threads, "-c", &conns.to_string(), "-d", &format!("{secs}s"), "--latency", "-H", &format!("Authorization: Bearer {token}")]);
    if let Some(s) = script {
        cmd.arg("-s").arg(s);
    }
    let out = cmd.arg(url).output().expect("wrk is installed (make bench installs it)");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let field = |prefix: &str| -> Option<String> {
        text.lines().find(|l| l.trim_start().starts_with(prefix)).map(|l| l.trim_start()[prefix.len()..].trim().split_whitespace().next().unwrap_or("").to_string())
    };
    let ms = |s: Option<String>| -> f64 {
        let s = s.unwrap_or_default();
        if let Some(v) = s.strip_suffix("us") { v.parse::<f64>().unwrap_or(0.0) / 1000.0 }
        else if let Some(v) = s.strip_suffix("ms") { v.parse().unwrap_or(0.0) }
        else if let Some(v) = s.strip_suffix('s') { v.parse::<f64>().unwrap_or(0.0) * 1000.0 }
        else { 0.0 }
    };
    WrkResult {
        rps: field("Requests/sec:").and_then(|v| v.parse().ok()).unwrap_or(0.0),
        p50_ms: ms(field("50%")),
        p99_ms: ms(field("99%")),
        non_2xx: field("Non-2xx or 3xx responses:").and_then(|v| v.parse().ok()).unwrap_or(0),
        socket_errors: socket_errors(&text),
    }
}

/// The sum of wrk's `Socket errors: connect 0, read 0, write 0, timeout 0` (absent when none).
fn socket_errors(wrk_output: &str) -> u64 {
    let Some(line) = wrk_output.lines().find_map(|l| l.trim_start().strip_prefix("Socket errors:")) else { return 0 };
    line.split(',').filter_map(|part| part.split_whitespace().last()?.parse::<u64>().ok()).sum()
}

/// What one throughput case asks of the twin.
enum Load {
    /// The same GET again and again.
    Get(&'static str),
    /// `POST` of the same new issue.
    CreateIssue,
    /// GET pages 1..=n of the issue list in turn, so no answer repeats back to back.
    PagesInTurn(u32),
}

async fn throughput(server: &Server) {
    let script_dir = tempfile::tempdir().unwrap();
    let default = json!({"twins": ["github"]});
    let big = json!({"twins": ["github"], "seed": github_seed(1000, 200)});
    let cases = [
        ("list issues (default world)", &default, Load::Get("/repos/acme/api/issues")),
        ("list issues, page of 30 of 1,000", &big, Load::Get("/repos/acme/api/issues?per_page=30&page=7")),
        ("create issue", &default, Load::CreateIssue),
        // Neither the twin's answer cache (16 answers) nor an unchanged world helps here:
        // every page is rendered, and 34 distinct bodies go onto the tape.
        ("list issues, pages 1-34 in turn", &big, Load::PagesInTurn(34)),
    ];
    for (label, body, load) in &cases {
        for conns in [1u32, 64] {
            // A fresh sandbox per run, discarded after: every run starts with an empty tape.
            let sb = server.create(body).await;
            let id = sb["id"].as_str().unwrap();
            let base = format!("/s/{id}/github");
            let script = script_dir.path().join(format!("{id}.lua"));
            let path = match load {
                Load::Get(path) => {
                    std::fs::write(&script, "").unwrap();
                    path.to_string()
                }
                Load::CreateIssue => {
                    std::fs::write(&script, "wrk.method = \"POST\"\nwrk.body = '{\"title\": \"Load test issue\", \"body\": \"created by wrk\"}'\nwrk.headers[\"Content-Type\"] = \"application/json\"\n").unwrap();
                    "/repos/acme/api/issues".to_string()
                }
                Load::PagesInTurn(n) => {
                    let prefix = format!("{base}/repos/acme/api/issues?per_page=30&page=");
                    std::fs::write(&script, format!("local n = 0\nrequest = function()\n  n = n % {n} + 1\n  return wrk.format(nil, \"{prefix}\" .. n)\nend\n")).unwrap();
                    "/".to_string()
                }
            };
            let r = wrk(&format!("{}{base}{path}", server.url), sb["agent_token"].as_str().unwrap(), conns, Some(&script));
            report(&format!("github {label}"), conns, &r);
            server.discard(id).await;
        }
    }
}

/// 64 connections spread over `n` sandboxes of one seed: each sandbox serves its requests
/// in order on one store, different sandboxes in parallel.
async fn spread(server: &Server, n: usize) {
    let mut entries = Vec::new();
    for _ in 0..n {
        let sb = server.create(&json!({"twins": ["github"]})).await;
        entries.push(format!("{{p=\"/s/{}/github/repos/acme/api/issues\", a=\"Bearer {}\"}}", sb["id"].as_str().unwrap(), sb["agent_token"].as_str().unwrap()));
    }
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("spread.lua");
    std::fs::write(&script, format!(
        "local s = {{{}}}\nlocal i = 0\nrequest = function()\n  i = i % #s + 1\n  return wrk.format(\"GET\", s[i].p, {{Authorization = s[i].a}})\nend\n",
        entries.join(",")
    )).unwrap();
    let r = wrk(&format!("{}/", server.url), "unused", 64, Some(&script));
    report(&format!("github list issues over {n} sandboxes"), 64, &r);
}

async fn memory(server: &Server) {
    let body = json!({"twins": ["github"]});
    // Warm the seed snapshot and the allocator first.
    let warm = server.create(&body).await;
    server.discard(warm["id"].as_str().unwrap()).await;
    let base = server.memory();
    let mut ids = Vec::new();
    for target in [1_000usize, 10_000] {
        while ids.len() < target {
            ids.push(server.create(&body).await["id"].as_str().unwrap().to_string());
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = server.memory();
        println!("memory {target:>6} idle github sandboxes: RSS {:>7.1} MiB in all; {}", now.rss as f64 / 1024.0, now.per_sandbox(base, ids.len()));
    }
    // The lines after hold sandboxes of their own; ten thousand idle ones besides would
    // bring the server near the kernel's cap on memory mappings (vm.max_map_count).
    for id in ids {
        server.discard(&id).await;
    }
}

#[tokio::main]
async fn main() {
    // `bench -- stripe` (or `gmail`, `linear`, `mcp`, `cheap`, `durability`, `modes`, `soak`, `agents`, `growth`, `fork`) runs those lines alone.
    let only = std::env::args().nth(1);
    // Durability runs servers of its own (several modes, kill -9, restarts), and the shared
    // server must not start beside them: it compiles the twins of target/bench-twins, which
    // takes a core for tens of seconds in the middle of the figures.
    match only.as_deref() {
        Some("durability") => return durability::run().await,
        // The modes' throughput lines alone: what a change to the write path is judged by.
        Some("modes") => return durability::modes().await,
        Some("soak") => return durability::soak().await,
        // Thousands of sandboxes each called about once a second, on a server of its own.
        Some("agents") => return agents::run().await,
        // Sustained writes on one sandbox as its world grows, each case on a server of its own.
        Some("growth") => return growth::run().await,
        // Forks and states at tape positions on a long tape, on a server of its own.
        Some("fork") => return fork::run().await,
        _ => {}
    }
    let server = Server::start();
    println!("pome bench on {} cores; server at {}", std::thread::available_parallelism().map_or(0, |n| n.get()), server.url);
    match only.as_deref() {
        Some("stripe") => return stripe::run(&server).await,
        Some("gmail") => return gmail::run(&server).await,
        Some("linear") => return linear::run(&server).await,
        Some("mcp") => return mcp::run(&server).await,
        Some("cheap") => return cheap::run(&server).await,
        _ => {}
    }
    create_latency(&server, "1 twin (github, default)", json!({"twins": ["github"]}), 300).await;
    create_latency(&server, "3 twins (github+slack+hostile)", json!({"twins": ["github", "slack", "hostile"]}), 300).await;
    let seed = github_seed(1000, 900);
    println!("       (1 MB seed = {} bytes of JSON)", seed.to_string().len());
    create_latency(&server, "1 twin, 1 MB github seed", json!({"twins": ["github"], "seed": seed}), 100).await;
    throughput(&server).await;
    cheap::run(&server).await;
    mcp::run(&server).await;
    spread(&server, 8).await;
    gmail::run(&server).await;
    linear::run(&server).await;
    memory(&server).await;
    durability::run().await;
    // Last: the Stripe lines leave busy sandboxes with thousands of objects behind, whose
    // memory must not be counted against the idle sandboxes measured above.
    stripe::run(&server).await;
    // Its own server, with the shared one (and its 11,000 idle sandboxes) gone first.
    drop(server);
    agents::run().await;
    growth::run().await;
    fork::run().await;
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_wrk_run_with_unanswered_requests_counts_every_kind_and_one_without_counts_none() {
        let with = "  2 threads and 64 connections\n  Socket errors: connect 3, read 2, write 0, timeout 7\nRequests/sec:   1234.50\n";
        assert_eq!(super::socket_errors(with), 12);
        assert_eq!(super::socket_errors("Requests/sec:   1234.50\n"), 0);
    }
}
