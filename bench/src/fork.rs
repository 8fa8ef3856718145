//! `pome-bench fork`: branch and rewind on a long tape (issue #37, item 7). One github
//! sandbox on a server of its own gets a tape of 10,000 issue creates (only 2xx answers
//! count toward them); then, one request at a time, so the team's rebuild limit
//! (`--team-rebuilds`, 2) never refuses one:
//!
//! - `POST /v1/sandboxes/:id/fork` at 200 positions drawn over the tape (seeded, the same
//!   every run), each fork stopped after its answer so the quota never fills;
//! - the same at now (no position named), 50 times, and at row 0 (nothing inherited: the
//!   floor under the others), 50 times;
//! - `GET /v1/sandboxes/:id/state?twin=github&at=N` at the same 200 positions.
//!
//! Each line is the wall time to the whole answer, p50 and p99, over answers that
//! succeeded; with any non-2xx answer (or none) it says how many and prints no figure. The
//! goal the issue states is a fork p50 under 50 ms, through checkpoints. A rebuild starts
//! from the parent's newest checkpoint only when that is at or before the position, so the
//! lines by fifth of the tape show what a position before it costs. A fork stopped at once
//! may log `building a checkpoint failed … not all on disk`: its store had begun a checkpoint
//! from rows its stop then deleted.
//!
//! `POME_BENCH_FORK_ROWS` (default 10000) and `POME_BENCH_FORK_N` (default 200) size it.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};

use crate::{Server, percentile, spawn_pome};

/// Concurrent writers filling the tape: the store serves them one at a time, so more only
/// queue; enough to keep it busy between answers.
const FILL_CONNS: usize = 16;
const AT_NOW: usize = 50;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Positions 1..=rows, drawn by a fixed-seed xorshift so every run measures the same ones.
fn positions(rows: u64, n: usize) -> Vec<u64> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % rows + 1
        })
        .collect()
}

/// Wall times of answers that succeeded, and how many did not.
#[derive(Default)]
struct Times {
    ok: Vec<Duration>,
    failed: usize,
    /// The first refusal's status and body, to show what went wrong.
    first_failure: Option<String>,
}

impl Times {
    fn note(&mut self, status: u16, took: Duration, body: &str) {
        if (200..300).contains(&status) {
            self.ok.push(took);
        } else {
            self.failed += 1;
            self.first_failure.get_or_insert_with(|| format!("{status} {}", body.chars().take(200).collect::<String>()));
        }
    }

    /// One line: p50 and p99 over the answers that succeeded, or no figure at all.
    fn report(&mut self, label: &str, note: &str) {
        let n = self.ok.len() + self.failed;
        if self.failed > 0 {
            println!("fork {label:<44} NO FIGURE: {} of {n} answers non-2xx (first: {})", self.failed, self.first_failure.as_deref().unwrap_or(""));
            return;
        }
        if self.ok.is_empty() {
            println!("fork {label:<44} NO FIGURE: no answers");
            return;
        }
        self.ok.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        println!(
            "fork {label:<44} p50 {:>8.3} ms   p99 {:>8.3} ms   (max {:.1} ms; n={n}{note})",
            ms(percentile(&self.ok, 0.5)),
            ms(percentile(&self.ok, 0.99)),
            ms(*self.ok.last().unwrap()),
        );
    }
}

/// A metric's value for the github twin, from the server's `/metrics` text.
async fn metric(server: &Server, name: &str) -> f64 {
    let text = server.http.get(format!("{}/metrics", server.url)).header("x-api-key", crate::KEY).send().await.unwrap().text().await.unwrap();
    text.lines().find(|l| l.starts_with(name) && l.contains("twin=\"github\"")).and_then(|l| l.rsplit(' ').next()?.parse().ok()).unwrap_or(0.0)
}

/// `rows` successful issue creates on the sandbox, at `FILL_CONNS` at once; answers that
/// were not 2xx are retried and counted apart.
async fn fill(server: &Server, id: &str, token: &str, rows: usize) -> usize {
    let (claimed, failed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let url = format!("{}/s/{id}/github/repos/acme/api/issues", server.url);
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..FILL_CONNS {
        let (claimed, failed, http, url, token) = (claimed.clone(), failed.clone(), server.http.clone(), url.clone(), token.to_string());
        workers.spawn(async move {
            loop {
                let i = claimed.fetch_add(1, Ordering::SeqCst);
                if i >= rows {
                    break;
                }
                let body = json!({"title": format!("Fork bench issue {i}"), "body": "written to make a long tape"});
                let ok = match http.post(&url).bearer_auth(&token).json(&body).send().await {
                    Ok(r) => {
                        let ok = r.status().is_success();
                        let _ = r.bytes().await;
                        ok
                    }
                    Err(_) => false,
                };
                if !ok {
                    failed.fetch_add(1, Ordering::SeqCst);
                    // Give the claim back: it is written again.
                    claimed.fetch_sub(1, Ordering::SeqCst);
                    if failed.load(Ordering::SeqCst) > rows {
                        break;
                    }
                }
            }
        });
    }
    while workers.join_next().await.is_some() {}
    failed.load(Ordering::SeqCst)
}

/// One fork of `id` with `body`, timed to its whole answer; the fork is stopped after.
async fn fork_once(server: &Server, id: &str, body: &Value, times: &mut Times) -> Option<Value> {
    let req = server.http.post(format!("{}/v1/sandboxes/{id}/fork", server.url)).header("x-api-key", crate::KEY).json(body);
    let t = Instant::now();
    let (status, text) = match req.send().await {
        Ok(r) => {
            let status = r.status().as_u16();
            (status, r.text().await.unwrap_or_default())
        }
        Err(e) => (0, e.to_string()),
    };
    times.note(status, t.elapsed(), &text);
    let v: Value = serde_json::from_str(&text).ok()?;
    if let Some(fork) = v["id"].as_str().filter(|_| (200..300).contains(&status)) {
        server.discard(fork).await;
    }
    Some(v)
}

pub async fn run() {
    let started = Instant::now();
    let (rows, n) = (env_usize("POME_BENCH_FORK_ROWS", 10_000).max(1), env_usize("POME_BENCH_FORK_N", 200).max(1));
    let data = tempfile::tempdir().unwrap();
    // The default caps (100,000 rows, 256 MiB of tape, 128 MiB per store) hold this tape and
    // world; the default rebuild limit (2 per team) holds one request at a time.
    // POME_BENCH_FORK_CHECKPOINT_AFTER (e.g. 20ms) passes `--checkpoint-after` on, to see
    // what more checkpoints buy.
    let checkpoint_after = std::env::var("POME_BENCH_FORK_CHECKPOINT_AFTER").ok();
    let args = checkpoint_after.iter().flat_map(|d| ["--checkpoint-after".into(), d.into()]).collect::<Vec<std::ffi::OsString>>();
    let (child, url) = spawn_pome(data.path(), args);
    let server = Server { url, child, http: reqwest::Client::new(), _data: data };
    println!(
        "fork: one github sandbox, a tape of {rows} issue creates, then forks and states one at a time (server of its own, --team-rebuilds 2, --checkpoint-after {})",
        checkpoint_after.as_deref().unwrap_or("250ms (default)")
    );
    let sb = server.create(&json!({"twins": ["github"]})).await;
    let (id, token) = (sb["id"].as_str().unwrap().to_string(), sb["agent_token"].as_str().unwrap().to_string());

    let t = Instant::now();
    let failed = fill(&server, &id, &token, rows).await;
    let filled = t.elapsed();
    // A checkpoint built off the store's path is taken in a moment later.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let checkpoints = metric(&server, "pome_twin_checkpoints_total").await;
    let guest = metric(&server, "pome_twin_guest_seconds_sum").await;
    // Learn the tape's length from a fork at now (unmeasured; it warms the path too).
    let warm = fork_once(&server, &id, &json!({}), &mut Times::default()).await.unwrap_or_default();
    let tape = warm["forked_from"]["at"]["github"].as_u64().unwrap_or(0);
    println!(
        "fork tape filled: {rows} creates answered 2xx in {:.1} s at {FILL_CONNS} connections ({failed} non-2xx, written again); tape {tape} rows; {:.0} ms in the twin's code; {checkpoints} checkpoints taken (only the newest serves a rebuild, at or before its position)",
        filled.as_secs_f64(),
        guest * 1e3
    );
    if tape == 0 {
        println!("fork NO FIGURE: the warm-up fork did not answer with its position: {warm}");
        return;
    }

    let at = positions(tape, n);
    let heartbeat = async || {
        server.api(Method::POST, &format!("/v1/sandboxes/{id}/heartbeat"), None).await;
    };

    // Forks at positions over the tape, and by fifth of it.
    let mut all = Times::default();
    let mut fifths: Vec<Times> = (0..5).map(|_| Times::default()).collect();
    for (i, &pos) in at.iter().enumerate() {
        if i % 25 == 0 {
            heartbeat().await;
        }
        let mut one = Times::default();
        fork_once(&server, &id, &json!({"at": {"github": pos}}), &mut one).await;
        let fifth = (((pos - 1) * 5) / tape) as usize;
        for t in &one.ok {
            all.ok.push(*t);
            fifths[fifth].ok.push(*t);
        }
        if one.failed > 0 {
            all.failed += 1;
            fifths[fifth].failed += 1;
            all.first_failure = all.first_failure.take().or(one.first_failure.clone());
            fifths[fifth].first_failure = fifths[fifth].first_failure.take().or(one.first_failure);
        }
    }
    let taken = |before: f64, after: f64| format!("; {} checkpoints taken meanwhile, by forks' stores", after - before);
    let after_positions = metric(&server, "pome_twin_checkpoints_total").await;
    all.report(&format!("sandbox at a row of {tape} (seeded positions)"), &taken(checkpoints, after_positions));
    for (k, f) in fifths.iter_mut().enumerate() {
        f.report(&format!("  rows {}..={}", k as u64 * tape / 5 + 1, (k as u64 + 1) * tape / 5), "");
    }

    // Forks at now.
    heartbeat().await;
    let mut now = Times::default();
    for _ in 0..AT_NOW {
        fork_once(&server, &id, &json!({}), &mut now).await;
    }
    now.report(&format!("sandbox at now (row {tape})"), &taken(after_positions, metric(&server, "pome_twin_checkpoints_total").await));
    // What a fork costs with nothing to inherit: the floor under the lines above.
    let mut seed = Times::default();
    for _ in 0..AT_NOW {
        fork_once(&server, &id, &json!({"at": {"github": 0}}), &mut seed).await;
    }
    seed.report("sandbox at row 0 (the seed's world)", "");

    // The world at the same positions.
    heartbeat().await;
    let mut state = Times::default();
    let mut bytes = 0usize;
    for (i, &pos) in at.iter().enumerate() {
        if i % 25 == 0 {
            heartbeat().await;
        }
        let req = server.http.get(format!("{}/v1/sandboxes/{id}/state?twin=github&at={pos}", server.url)).header("x-api-key", crate::KEY);
        let t = Instant::now();
        match req.send().await {
            Ok(r) => {
                let status = r.status().as_u16();
                let body = r.bytes().await.unwrap_or_default();
                let took = t.elapsed();
                if status == 200 {
                    bytes = bytes.max(body.len());
                }
                state.note(status, took, &String::from_utf8_lossy(&body));
            }
            Err(e) => state.note(0, t.elapsed(), &e.to_string()),
        }
    }
    state.report("state?twin=github&at=N, same positions", &format!("; largest answer {:.1} MB", bytes as f64 / 1e6));
    println!("fork section took {:.1} s", started.elapsed().as_secs_f64());
}
