//! Durable live sandboxes (`pome serve --durability`), measured from outside:
//! - the throughput cost of each durability mode against memory-only, 64 connections of
//!   mixed reads and writes spread over sandboxes (every twin call is a tape row);
//! - 100 sandboxes under mixed load at 64 connections with creates and finalizes churning,
//!   then `kill -9` and a restart: requests acknowledged vs. rows recovered;
//! - restart time with 1,000 live sandboxes;
//! - resident memory over a soak (60 s; `POME_BENCH_SOAK_SECS=600` for the ten minutes the
//!   issue asks for) of the same load on a world that does not grow: its writes edit an
//!   issue, so the tapes grow all along and nothing else should.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::Path;
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::KEY;

struct Proc {
    child: Child,
    url: String,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `pome serve` on `data` in `mode`; returns once it listens.
fn serve(data: &Path, mode: &str) -> (Proc, Duration) {
    serve_with(data, mode, &[])
}

fn serve_with(data: &Path, mode: &str, args: &[&str]) -> (Proc, Duration) {
    // Compiled twins shared by every server of the bench: each starts on a fresh data
    // directory, and compiling every twin (tens of CPU seconds) would otherwise run beside
    // the load being measured.
    let cache = crate::root().join("target/pome-bench-cache");
    std::fs::create_dir_all(&cache).unwrap();
    if !data.join("cache").exists() {
        std::os::unix::fs::symlink(&cache, data.join("cache")).unwrap();
    }
    let started = Instant::now();
    let (child, url) = crate::spawn_pome(data, ["--durability", mode].iter().chain(args).map(OsString::from));
    (Proc { child, url }, started.elapsed())
}

fn rss_mib(p: &Proc) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", p.child.id())).unwrap_or_default();
    let kib: u64 = status.lines().find_map(|l| l.strip_prefix("VmRSS:")).and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok()).unwrap_or(0);
    kib as f64 / 1024.0
}

#[derive(Clone)]
struct Sbx {
    id: String,
    token: String,
}

async fn create(http: &reqwest::Client, url: &str) -> Option<Sbx> {
    let r = http.post(format!("{url}/v1/sandboxes")).header("x-api-key", KEY).json(&json!({"twins": ["github"]})).send().await.ok()?;
    if r.status().as_u16() != 201 {
        return None;
    }
    let v: Value = r.json().await.ok()?;
    Some(Sbx { id: v["id"].as_str()?.into(), token: v["agent_token"].as_str()?.into() })
}

/// What the writes of a mixed load do.
#[derive(Clone, Copy, PartialEq)]
enum Writes {
    /// Open a new issue: the world grows with the load.
    Create,
    /// Edit issue #1's body: the world stays the size it is, the tape grows.
    Edit,
}

/// One call of the mixed load: every fourth a write, the rest reads.
async fn call(http: &reqwest::Client, url: &str, s: &Sbx, n: u64, rid: &str, writes: Writes) -> Result<u16, reqwest::Error> {
    let base = format!("{url}/s/{}/github/repos/acme/api/issues", s.id);
    let req = match (n % 4 == 0, writes) {
        (true, Writes::Create) => http.post(base).json(&json!({"title": format!("load {rid}"), "body": "durability bench"})),
        (true, Writes::Edit) => http.patch(format!("{base}/1")).json(&json!({"body": format!("edited by {rid}")})),
        (false, _) => http.get(format!("{base}?per_page=5")),
    };
    Ok(req.bearer_auth(&s.token).header("x-request-id", rid).send().await?.status().as_u16())
}

/// What a mixed load saw.
#[derive(Default)]
struct Load {
    /// (sandbox index, request id) of every call answered 2xx.
    acked: Mutex<Vec<(usize, String)>>,
    answered: AtomicU64,
    non_2xx: AtomicU64,
    churned: AtomicU64,
}

/// 64 connections of mixed calls over `sandboxes` until `stop`; one more task creates and
/// finalizes sandboxes all along.
fn mixed_load(http: &reqwest::Client, url: &str, sandboxes: &[Sbx], stop: Arc<AtomicBool>, load: Arc<Load>, record: bool, writes: Writes) -> Vec<tokio::task::JoinHandle<()>> {
    let mut tasks = Vec::new();
    for c in 0..64usize {
        let (http, url, sandboxes, stop, load) = (http.clone(), url.to_string(), sandboxes.to_vec(), stop.clone(), load.clone());
        tasks.push(tokio::spawn(async move {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let i = (c + n as usize * 7) % sandboxes.len();
                let rid = format!("c{c}n{n}");
                match call(&http, &url, &sandboxes[i], n, &rid, writes).await {
                    Ok(s) if (200..300).contains(&s) => {
                        load.answered.fetch_add(1, Ordering::Relaxed);
                        if record {
                            load.acked.lock().unwrap().push((i, rid));
                        }
                    }
                    Ok(_) => {
                        load.non_2xx.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(_) => break, // the server is gone: this call was never answered
                }
                n += 1;
            }
        }));
    }
    let (http, url) = (http.clone(), url.to_string());
    tasks.push(tokio::spawn(async move {
        while !stop.load(Ordering::Relaxed) {
            let Some(s) = create(&http, &url).await else { break };
            let _ = call(&http, &url, &s, 0, "churn", writes).await;
            if http.post(format!("{url}/v1/sandboxes/{}/finalize", s.id)).header("x-api-key", KEY).send().await.is_err() {
                break;
            }
            load.churned.fetch_add(1, Ordering::Relaxed);
        }
    }));
    tasks
}

async fn sandboxes(http: &reqwest::Client, url: &str, n: usize) -> Vec<Sbx> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(create(http, url).await.expect("create"));
    }
    out
}

/// CPU time the process `pid` has used, user and system, from /proc (in USER_HZ ticks,
/// which Linux fixes at 100 a second).
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat.rsplit_once(')').map_or("", |(_, rest)| rest).split_whitespace().collect();
    let ticks: u64 = fields.get(11..13).map_or(0, |f| f.iter().filter_map(|t| t.parse::<u64>().ok()).sum());
    Duration::from_millis(ticks * 10)
}

/// One mode's run: calls per second, non-2xx answers, and the server's CPU per answered call
/// (whether a mode's cost is work or waiting: a mode that only waits longer uses no more).
struct Rate {
    calls: f64,
    bad: u64,
    cpu_per_call: Duration,
    /// With `--store`: PostgreSQL transactions committed per answered call.
    commits_per_call: f64,
}

/// Calls per second of the mixed load at 64 connections over 100 sandboxes, for 5 s.
async fn rate(mode: &str) -> Rate {
    let data = tempfile::tempdir().unwrap();
    // `postgres`: the default durability with everything in a PostgreSQL server of the
    // bench's own (a database each run), on this machine's sockets.
    let store = if mode == "postgres" { Some(pome_pgtest::database().await) } else { None };
    let (p, _) = match &store {
        Some(url) => serve_with(data.path(), "window", &["--store", url]),
        None => serve(data.path(), mode),
    };
    let http = reqwest::Client::new();
    let sbx = sandboxes(&http, &p.url, 100).await;
    let stop = Arc::new(AtomicBool::new(false));
    let load = Arc::new(Load::default());
    let tasks = mixed_load(&http, &p.url, &sbx, stop.clone(), load.clone(), false, Writes::Create);
    tokio::time::sleep(Duration::from_secs(1)).await; // warm up
    let commits0 = match &store {
        Some(url) => commits(url).await,
        None => 0,
    };
    let (n0, t0, cpu0) = (load.answered.load(Ordering::Relaxed), Instant::now(), cpu_time(p.child.id()));
    tokio::time::sleep(Duration::from_secs(5)).await;
    let answered = load.answered.load(Ordering::Relaxed) - n0;
    let cpu = cpu_time(p.child.id()).saturating_sub(cpu0);
    let commits = match &store {
        Some(url) => (commits(url).await - commits0) as f64 / answered.max(1) as f64,
        None => 0.0,
    };
    let calls = answered as f64 / t0.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        let _ = t.await;
    }
    Rate { calls, bad: load.non_2xx.load(Ordering::Relaxed), cpu_per_call: cpu / answered.max(1) as u32, commits_per_call: commits }
}

/// Transactions committed so far in the database `url` (PostgreSQL's own count).
async fn commits(url: &str) -> i64 {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.expect("connecting to the bench's PostgreSQL");
    tokio::spawn(connection);
    // The statistics a backend reads are a snapshot; a fresh one for each reading.
    client.batch_execute("SELECT pg_stat_clear_snapshot()").await.unwrap();
    client.query_one("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()", &[]).await.unwrap().get(0)
}

/// The throughput cost of each durability mode against memory-only.
pub async fn modes() {
    // This machine's own speed drifts from run to run by as much as the cost being
    // measured, so the modes take turns, round after round (each round in a rotated order,
    // so no mode always runs first), and a mode's cost is the median of its per-round
    // ratios to the base run of the same round: drift between rounds cancels out.
    // POME_BENCH_MODES=memory,window narrows the comparison (the first named is the base);
    // POME_BENCH_ROUNDS sets the rounds (5). `postgres` is the default mode with `--store`
    // on a local PostgreSQL, compared with SQLite's default (`window`) as well.
    let named = std::env::var("POME_BENCH_MODES").unwrap_or_else(|_| "memory,sync,window,postgres".into());
    let modes: Vec<&'static str> = named.split(',').filter_map(|m| ["memory", "sync", "window", "postgres"].into_iter().find(|k| *k == m.trim())).collect();
    let rounds = std::env::var("POME_BENCH_ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(5usize).max(1);
    let mut runs = BTreeMap::<&str, Vec<Rate>>::new();
    for round in 0..rounds {
        for k in 0..modes.len() {
            let mode = modes[(round + k) % modes.len()];
            runs.entry(mode).or_default().push(rate(mode).await);
        }
    }
    let median = |v: Vec<f64>| {
        let mut v = v;
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let clean = |mode: &str| runs.get(mode).is_some_and(|r| r.iter().all(|r| r.bad == 0));
    // The median of the per-round ratios of `mode` to `base`, as a signed percentage.
    let cost = |mode: &str, base: &str| {
        let ratios = runs[mode].iter().zip(&runs[base]).map(|(m, b)| m.calls / b.calls).collect();
        (median(ratios) - 1.0) * 100.0
    };
    let base = modes.first().copied().unwrap_or("memory");
    for &mode in &modes {
        let label = format!("durability {mode:<8} mixed calls, 100 sandboxes, churn      c=64");
        let bad: u64 = runs[mode].iter().map(|r| r.bad).sum();
        if bad > 0 {
            println!("{label}  refused: {bad} non-2xx answers");
            continue;
        }
        let r = median(runs[mode].iter().map(|r| r.calls).collect());
        let each = runs[mode].iter().map(|r| format!("{:.0}", r.calls)).collect::<Vec<_>>().join(", ");
        let mut vs = match clean(base) {
            _ if mode == base => String::new(),
            true => format!("  {:+.1}% vs {base} (median of per-round ratios)", cost(mode, base)),
            false => format!("  (no {base} figure to compare)"),
        };
        if mode == "postgres" && base != "window" && clean("window") {
            vs += &format!(", {:+.1}% vs window on SQLite", cost(mode, "window"));
        }
        let commits = if mode == "postgres" { format!(", {:.3} PostgreSQL transactions a call (each one round trip unless it creates or closes a sandbox)", median(runs[mode].iter().map(|r| r.commits_per_call).collect())) } else { String::new() };
        let cpu = median(runs[mode].iter().map(|r| r.cpu_per_call.as_secs_f64() * 1e6).collect());
        println!("{label}  {r:>8.0} calls/s  (median of {each}){vs}; server CPU {cpu:.0} µs a call{commits}");
    }
}

pub async fn run() {
    modes().await;
    let http = reqwest::Client::new();

    // kill -9 mid-load, restart: every answered call must be on its tape.
    let data = tempfile::tempdir().unwrap();
    let (p, _) = serve(data.path(), "sync");
    let sbx = sandboxes(&http, &p.url, 100).await;
    let stop = Arc::new(AtomicBool::new(false));
    let load = Arc::new(Load::default());
    let tasks = mixed_load(&http, &p.url, &sbx, stop.clone(), load.clone(), true, Writes::Create);
    tokio::time::sleep(Duration::from_secs(5)).await;
    drop(p); // SIGKILL, mid-load
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        let _ = t.await;
    }
    let (p, _) = serve(data.path(), "sync");
    let acked = load.acked.lock().unwrap().clone();
    let mut by_sandbox: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for (i, rid) in acked {
        by_sandbox.entry(i).or_default().push(rid);
    }
    let (mut acked_n, mut recovered, mut extra) = (0usize, 0usize, 0usize);
    for (i, s) in sbx.iter().enumerate() {
        let tape: Vec<Value> = match http.get(format!("{}/s/{}/github/_pome/events", p.url, s.id)).bearer_auth(&s.token).send().await {
            Ok(r) => r.json().await.unwrap_or_default(),
            Err(_) => vec![],
        };
        let on_tape: BTreeSet<String> = tape.iter().filter_map(|r| r["request_id"].as_str().map(String::from)).collect();
        let mine = by_sandbox.remove(&i).unwrap_or_default();
        acked_n += mine.len();
        recovered += mine.iter().filter(|r| on_tape.contains(*r)).count();
        extra += on_tape.len().saturating_sub(mine.len());
    }
    println!(
        "kill -9 under load (sync, 100 sandboxes, 64 conns, {} churned): requests acknowledged {acked_n} vs rows recovered {recovered}{}  (+{extra} rows of calls in flight at the kill)",
        load.churned.load(Ordering::Relaxed),
        if acked_n == recovered { "  EQUAL" } else { "  LOST ROWS" }
    );
    drop(p);

    // Restart time with 1,000 live sandboxes (three calls each).
    let data = tempfile::tempdir().unwrap();
    let (p, _) = serve(data.path(), "sync");
    let many = sandboxes(&http, &p.url, 1000).await;
    for (n, s) in many.iter().enumerate() {
        for k in 0..3u64 {
            let _ = call(&http, &p.url, s, k + n as u64, &format!("s{n}k{k}"), Writes::Create).await;
        }
    }
    let _ = Command::new("kill").args(["-TERM", &p.child.id().to_string()]).status();
    drop(p);
    let (p, took) = serve(data.path(), "sync");
    let back = http.get(format!("{}/v1/sandboxes", p.url)).header("x-api-key", KEY).send().await.unwrap().json::<Value>().await.unwrap()["data"]
        .as_array()
        .map_or(0, Vec::len);
    println!("restart with 1,000 live sandboxes (3 calls each): {:.2} s until listening, {back} sandboxes back", took.as_secs_f64());
    drop(p);
    soak().await;
}

/// Resident memory over a soak in the default mode, on the same 100 sandboxes all along
/// (their tapes grow for the whole soak; their worlds do not).
pub async fn soak() {
    let http = reqwest::Client::new();
    let soak = std::env::var("POME_BENCH_SOAK_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(60u64).max(10);
    let data = tempfile::tempdir().unwrap();
    // Tape caps raised past what ten minutes of this load records (about 40,000 rows and
    // 250 MiB a tape), so every call is answered and the tapes keep growing on disk.
    let (p, _) = serve_with(data.path(), "window", &["--tape-rows", "10000000", "--tape-mib", "65536"]);
    let sbx = sandboxes(&http, &p.url, 100).await;
    let stop = Arc::new(AtomicBool::new(false));
    let load = Arc::new(Load::default());
    let tasks = mixed_load(&http, &p.url, &sbx, stop.clone(), load.clone(), false, Writes::Edit);
    // The first tenth warms up (stores grow to their working size); RSS is read from there.
    let tenth = Duration::from_secs(soak) / 10;
    tokio::time::sleep(tenth).await;
    let mut samples = vec![rss_mib(&p)];
    for _ in 0..9 {
        tokio::time::sleep(tenth).await;
        samples.push(rss_mib(&p));
    }
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        let _ = t.await;
    }
    let (start, middle, end) = (samples[0], samples[samples.len() / 2], samples[samples.len() - 1]);
    let max = samples.iter().copied().fold(0.0, f64::max);
    let bad = load.non_2xx.load(Ordering::Relaxed);
    if bad > 0 {
        println!("soak {soak} s (window, 100 sandboxes, 64 conns, edits, churn): refused: {bad} non-2xx answers");
        return;
    }
    println!(
        "soak {soak} s (window, 100 sandboxes, 64 conns, edits, churn): RSS start {start:.0} / middle {middle:.0} / end {end:.0} MiB (max {max:.0}; {:+.1}% middle to end); {} calls, {} sandboxes churned",
        (end / middle - 1.0) * 100.0,
        load.answered.load(Ordering::Relaxed),
        load.churned.load(Ordering::Relaxed)
    );
}
