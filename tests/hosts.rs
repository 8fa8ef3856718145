//! Several hosts, one service (issue #33): three `pome serve` processes sharing one
//! PostgreSQL, behind a real haproxy doing round robin, under load from clients that behave
//! like the vendors' SDKs (a 503 or a dropped connection is retried as a new request). The
//! faults: `kill -9` of a host, `SIGSTOP` of a host past its lease and then `SIGCONT`, a
//! drain (SIGTERM), and PostgreSQL restarting. Through all of it:
//! - every call a client saw answered 2xx is on its sandbox's tape, and the world is exactly
//!   what the tape says (a rebuilt sandbox is its tape replayed);
//! - each tape's sequence numbers run from 1 without a gap, and each epoch (one owner's
//!   claim) wrote one unbroken range of them, so no two hosts ever wrote one tape at once;
//! - creates on several hosts at once never pass the team's quota.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pome_e2e::tickets::{Ack, Sbx, create, get, new_ticket};
use pome_e2e::{API_KEY, ServeProcess, hostile_dir};
use serde_json::{Value, json};

const LEASE: &str = "2s";
const QUOTA: usize = 16;

/// haproxy in front of the hosts: round robin, health checks on `/healthz`, a connection
/// that fails is retried on another host (the configuration README's example uses).
struct Haproxy {
    child: std::process::Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Haproxy {
    fn start(backends: &[String]) -> Haproxy {
        Haproxy::start_on(free_port(), backends)
    }

    fn start_on(port: u16, backends: &[String]) -> Haproxy {
        let dir = tempfile::tempdir().unwrap();
        let servers: String = backends
            .iter()
            .enumerate()
            .map(|(i, b)| format!("    server host{i} {} check inter 250ms fall 1 rise 2\n", b.trim_start_matches("http://")))
            .collect();
        let config = format!(
            "global\n    maxconn 2000\n\
             defaults\n    mode http\n    timeout connect 1s\n    timeout client 60s\n    timeout server 60s\n    retries 3\n    option redispatch\n    retry-on conn-failure\n\
             frontend front\n    bind 127.0.0.1:{port}\n    default_backend hosts\n\
             backend hosts\n    balance roundrobin\n    option httpchk GET /healthz\n{servers}"
        );
        let path = dir.path().join("haproxy.cfg");
        std::fs::write(&path, config).unwrap();
        let check = std::process::Command::new(haproxy_bin()).arg("-c").arg("-f").arg(&path).output().expect("haproxy is installed (make test installs it)");
        assert!(check.status.success(), "haproxy refused the configuration: {}", String::from_utf8_lossy(&check.stdout));
        let log = std::fs::File::create(dir.path().join("haproxy.log")).unwrap();
        let child = std::process::Command::new(haproxy_bin()).arg("-db").arg("-f").arg(&path).stdout(log.try_clone().unwrap()).stderr(log).spawn().unwrap();
        Haproxy { child, url: format!("http://127.0.0.1:{port}"), _dir: dir }
    }
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Debian puts haproxy in /usr/sbin, which not every PATH holds.
fn haproxy_bin() -> &'static str {
    if Path::new("/usr/sbin/haproxy").exists() { "/usr/sbin/haproxy" } else { "haproxy" }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// One host of the service, on its own data directory (only the compiled-twin cache is
/// shared, to spare the test the compiling).
async fn host(store: &str, data: &Path) -> ServeProcess {
    let (quota, twins) = (QUOTA.to_string(), hostile_dir());
    let args = ["--store", store, "--lease", LEASE, "--drain-wait", "1s", "--quota", &quota, "--twins-dir", twins.to_str().unwrap()];
    ServeProcess::start(data, &args).await
}

/// Writers creating tickets round the sandboxes through `url`, retrying what failed as a
/// new request, as an SDK does. Counts what was not answered 2xx, by phase.
struct Load {
    acked: Arc<Mutex<Vec<Ack>>>,
    refused: Arc<Mutex<Vec<(Instant, String)>>>,
    stop: Arc<AtomicBool>,
    writers: Vec<tokio::task::JoinHandle<()>>,
}

impl Load {
    fn start(url: &str, sandboxes: &[Sbx], writers: usize) -> Load {
        let (acked, refused, stop): (Arc<Mutex<Vec<Ack>>>, Arc<Mutex<Vec<(Instant, String)>>>, Arc<AtomicBool>) = Default::default();
        let http = reqwest::Client::builder().timeout(Duration::from_secs(4)).build().unwrap();
        let writers = (0..writers)
            .map(|w| {
                let (http, url, sandboxes, acked, refused, stop) = (http.clone(), url.to_string(), sandboxes.to_vec(), acked.clone(), refused.clone(), stop.clone());
                tokio::spawn(async move {
                    let mut n = 0;
                    while !stop.load(Ordering::Relaxed) {
                        let i = (w + n) % sandboxes.len();
                        let rid = format!("w{w}n{n}");
                        match new_ticket(&http, &url, &sandboxes[i], &rid, &rid).await {
                            Ok((201, t)) => acked.lock().unwrap().push(Ack { sandbox: i, rid, id: t["id"].as_u64().unwrap(), at: Instant::now() }),
                            Ok((status, v)) => {
                                refused.lock().unwrap().push((Instant::now(), format!("{status} on sandbox {i}: {v}")));
                                tokio::time::sleep(Duration::from_millis(50)).await;
                            }
                            Err(e) => {
                                refused.lock().unwrap().push((Instant::now(), format!("no answer on sandbox {i}: {e}")));
                                tokio::time::sleep(Duration::from_millis(50)).await;
                            }
                        }
                        n += 1;
                    }
                })
            })
            .collect();
        Load { acked, refused, stop, writers }
    }

    fn acked(&self) -> Vec<Ack> {
        self.acked.lock().unwrap().clone()
    }

    fn refused_since(&self, since: Instant) -> Vec<String> {
        self.refused.lock().unwrap().iter().filter(|(at, _)| *at >= since).map(|(_, why)| why.clone()).collect()
    }

    async fn finish(self) -> Vec<Ack> {
        self.stop.store(true, Ordering::Relaxed);
        for w in self.writers {
            w.await.unwrap();
        }
        self.acked.lock().unwrap().clone()
    }
}

/// A connection to the shared database, to read what the hosts wrote.
async fn db(url: &str) -> tokio_postgres::Client {
    let (c, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(conn);
    c
}

/// Which host (by its index in `urls`) owns the sandbox now.
async fn owner(c: &tokio_postgres::Client, urls: &[String], sandbox: &str) -> Option<usize> {
    let row = c.query_opt("SELECT h.url FROM live_sandboxes s JOIN live_hosts h ON h.id = s.owner WHERE s.id = $1", &[&sandbox]).await.unwrap()?;
    let url: String = row.get(0);
    urls.iter().position(|u| *u == url)
}

/// Wait until every sandbox in `which` has answered 2xx after `since`; how long each took.
async fn served_again(load: &Load, which: &[usize], since: Instant, within: Duration) -> Vec<Duration> {
    loop {
        let acked = load.acked();
        let firsts: Vec<Option<Duration>> = which.iter().map(|&i| acked.iter().filter(|a| a.sandbox == i && a.at > since).map(|a| a.at - since).min()).collect();
        if firsts.iter().all(Option::is_some) {
            return firsts.into_iter().flatten().collect();
        }
        assert!(since.elapsed() < within, "sandboxes {which:?} did not serve again within {within:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn urls_of(hosts: &[ServeProcess]) -> Vec<String> {
    hosts.iter().map(|h| h.url.clone()).collect()
}

fn signal(pid: u32, sig: i32) {
    // SAFETY: kill only sends a signal to the test's own child process.
    assert_eq!(unsafe { libc::kill(pid as i32, sig) }, 0);
}

/// Every answered call is on its sandbox's tape, the world is the tape, and the tape was
/// written in one unbroken range per epoch.
async fn check_tapes(c: &tokio_postgres::Client, front: &str, sandboxes: &[Sbx], acked: &[Ack]) {
    let http = reqwest::Client::new();
    for (i, s) in sandboxes.iter().enumerate() {
        let (status, events) = get(&http, front, s, "/_pome/events").await;
        assert_eq!(status, 200, "sandbox {i}'s tape reads through the front door: {events}");
        let rows = events.as_array().unwrap();
        let seqs: Vec<u64> = rows.iter().map(|r| r["seq"].as_u64().unwrap()).collect();
        assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>(), "sandbox {i}'s tape has no gap");
        // Read before the checks below, which are twin calls and so rows of the tape too.
        let segments = c.query("SELECT first_seq, last_seq, epoch FROM live_segments WHERE sandbox_id = $1 AND twin = 'tickets' ORDER BY first_seq", &[&s.id]).await.unwrap();
        let (mut next, mut epoch) = (1i64, 0i64);
        for seg in &segments {
            let (first, last, e): (i64, i64, i64) = (seg.get(0), seg.get(1), seg.get(2));
            assert_eq!(first, next, "sandbox {i}: stored rows run on from {next}");
            assert!(e >= epoch, "sandbox {i}: rows {first}..={last} were written under epoch {e} after epoch {epoch}'s");
            (next, epoch) = (last + 1, e);
        }
        assert_eq!(next - 1, seqs.len() as i64, "sandbox {i}: the store holds every row of its tape");
        let on_tape: BTreeSet<&str> = rows.iter().filter(|r| r["status"] == 201).map(|r| r["request_id"].as_str().unwrap()).collect();
        for a in acked.iter().filter(|a| a.sandbox == i) {
            assert!(on_tape.contains(a.rid.as_str()), "answered request {} is on sandbox {i}'s tape", a.rid);
            let (status, t) = get(&http, front, s, &format!("/tickets/{}", a.id)).await;
            assert_eq!((status, t["title"].as_str()), (200, Some(a.rid.as_str())), "the ticket answered as #{} is #{}", a.id, a.id);
        }
        let (status, tickets) = get(&http, front, s, "/tickets").await;
        let titles: BTreeSet<&str> = tickets.as_array().unwrap_or_else(|| panic!("sandbox {i}'s tickets: {status} {tickets}")).iter().skip(1).map(|t| t["title"].as_str().unwrap()).collect();
        assert_eq!(titles, on_tape, "sandbox {i}: every recorded create, and nothing else, is in the world");

    }
}

fn percentile(mut d: Vec<Duration>, p: usize) -> Duration {
    d.sort();
    d[(d.len() * p / 100).min(d.len() - 1)]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_hosts_behind_haproxy_are_one_service_through_kill_9_sigstop_a_drain_and_a_database_restart() {
    let pg = pome_pgtest::Server::start();
    let store = pg.database().await;
    let c = db(&store).await;
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let mut hosts: Vec<Option<ServeProcess>> = Vec::new();
    for d in &dirs {
        hosts.push(Some(host(&store, d.path()).await));
    }
    let urls: Vec<String> = hosts.iter().map(|h| h.as_ref().unwrap().url.clone()).collect();
    let lb = Haproxy::start(&urls);
    let http = reqwest::Client::new();
    let started = Instant::now();
    while http.get(format!("{}/healthz", lb.url)).send().await.map(|r| r.status().as_u16()).ok() != Some(200) {
        assert!(started.elapsed() < Duration::from_secs(10), "haproxy came up");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Sandboxes made through the front door land on every host; every host answers for each.
    let mut sandboxes = Vec::new();
    for _ in 0..6 {
        sandboxes.push(create(&http, &lb.url, &["tickets"]).await);
    }
    let mut owners = BTreeSet::new();
    for s in &sandboxes {
        owners.insert(owner(&c, &urls, &s.id).await.expect("every sandbox has a live owner"));
    }
    assert_eq!(owners.len(), 3, "round robin spread the creates over the three hosts");
    let mut direct = Vec::new();
    for (i, s) in sandboxes.iter().enumerate() {
        for (h, u) in urls.iter().enumerate() {
            let rid = format!("direct{i}h{h}");
            let (status, t) = new_ticket(&http, u, s, &rid, &rid).await.unwrap();
            assert_eq!(status, 201, "host {h} answers for sandbox {i}, whichever host owns it: {t}");
            direct.push(Ack { sandbox: i, rid, id: t["id"].as_u64().unwrap(), at: Instant::now() });
        }
    }
    let listed: Value = http.get(format!("{}/v1/sandboxes", urls[0])).header("x-api-key", API_KEY).send().await.unwrap().json().await.unwrap();
    assert_eq!(listed["data"].as_array().unwrap().len(), 6, "any host lists the team's sandboxes on every host");

    // Creates on the three hosts at once keep to the quota: 6 open, 10 left.
    let mut creates = tokio::task::JoinSet::new();
    for i in 0..16 {
        let (http, url) = (http.clone(), urls[i % 3].clone());
        creates.spawn(async move { http.post(format!("{url}/v1/sandboxes")).header("x-api-key", API_KEY).json(&json!({"twins": ["tickets"]})).send().await.unwrap().status().as_u16() });
    }
    let mut statuses = Vec::new();
    while let Some(s) = creates.join_next().await {
        statuses.push(s.unwrap());
    }
    assert_eq!(statuses.iter().filter(|&&s| s == 201).count(), QUOTA - 6, "exactly the quota's worth of creates succeed across hosts: {statuses:?}");
    assert!(statuses.iter().all(|&s| s == 201 || s == 402), "the rest are refused for the quota (402 quota_exceeded): {statuses:?}");
    let usage: Value = http.get(format!("{}/v1/usage", urls[2])).header("x-api-key", API_KEY).send().await.unwrap().json().await.unwrap();
    assert_eq!(usage["sessions_used"], QUOTA, "{usage}");

    // kill -9 of a host under load: its sandboxes serve again from the others.
    let load = Load::start(&lb.url, &sandboxes, 6);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let victim = owner(&c, &urls, &sandboxes[0].id).await.unwrap();
    let moved: Vec<usize> = {
        let mut m = Vec::new();
        for (i, s) in sandboxes.iter().enumerate() {
            if owner(&c, &urls, &s.id).await == Some(victim) {
                m.push(i);
            }
        }
        m
    };
    hosts[victim].take().unwrap().kill9();
    let killed_at = Instant::now();
    let failover = served_again(&load, &moved, killed_at, Duration::from_secs(30)).await;
    eprintln!("failover after kill -9 (lease {LEASE}): first 2xx on a moved sandbox after p50 {:?}, max {:?}", percentile(failover.clone(), 50), percentile(failover, 100));
    for &i in &moved {
        let now = owner(&c, &urls, &sandboxes[i].id).await;
        assert!(now.is_some() && now != Some(victim), "sandbox {i} moved to a live host ({now:?})");
    }

    // SIGSTOP of an owner past its lease: the others take its sandboxes over; once it
    // wakes, it serves and commits nothing for them.
    let paused = (0..3).find(|&h| h != victim).unwrap();
    let mut lost = Vec::new();
    for (i, s) in sandboxes.iter().enumerate() {
        if owner(&c, &urls, &s.id).await == Some(paused) {
            lost.push(i);
        }
    }
    assert!(!lost.is_empty(), "the host to pause owns sandboxes");
    let paused_pid = hosts[paused].as_ref().unwrap().pid();
    signal(paused_pid, libc::SIGSTOP);
    let stopped_at = Instant::now();
    let taken = served_again(&load, &lost, stopped_at, Duration::from_secs(30)).await;
    eprintln!("takeover after SIGSTOP: first 2xx after p50 {:?}, max {:?}", percentile(taken.clone(), 50), percentile(taken, 100));
    signal(paused_pid, libc::SIGCONT);
    // Straight at the woken host: whatever it answers for a sandbox it lost is either a
    // refusal or a forward to the new owner, and in that case on the tape.
    let mut woke = Vec::new();
    for n in 0..30 {
        let i = lost[n % lost.len()];
        let rid = format!("woke{n}");
        if let Ok((201, t)) = new_ticket(&http, &urls[paused], &sandboxes[i], &rid, &rid).await {
            woke.push(Ack { sandbox: i, rid, id: t["id"].as_u64().unwrap(), at: Instant::now() });
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!woke.is_empty(), "the woken host answers again (through the new owner)");

    // A drain: SIGTERM hands the host's sandboxes over without failing a request.
    let drained = (0..3).find(|&h| h != victim && h != paused).unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let drain_started = Instant::now();
    let leaving = hosts[drained].take().unwrap();
    tokio::task::spawn_blocking(move || leaving.stop()).await.unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let during_drain = load.refused_since(drain_started);
    assert!(during_drain.is_empty(), "no request failed while a host drained: {during_drain:?}");

    // PostgreSQL restarts under load: refusals meanwhile, and the service carries on.
    pg.down();
    tokio::time::sleep(Duration::from_secs(1)).await;
    pg.up();
    let back = Instant::now();
    served_again(&load, &(0..sandboxes.len()).collect::<Vec<_>>(), back, Duration::from_secs(30)).await;

    let mut acked = load.finish().await;
    acked.extend(woke);
    acked.extend(direct);
    assert!(acked.len() > 100, "the load got going ({} answers)", acked.len());
    // The restart cut the test's own connection too.
    let c = db(&store).await;
    check_tapes(&c, &lb.url, &sandboxes, &acked).await;

    // Each tape, replayed on a fresh store, gives back every answer it recorded: the worlds
    // rebuilt on other hosts along the way were exact.
    let scratch = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(pome_e2e::workspace().join("target/pome-test-cache"), scratch.path().join("cache")).unwrap();
    for (i, s) in sandboxes.iter().enumerate() {
        let r = http.post(format!("{}/v1/sandboxes/{}/finalize", lb.url, s.id)).header("x-api-key", API_KEY).send().await.unwrap();
        assert_eq!(r.status().as_u16(), 200, "sandbox {i} finalizes through the front door");
        let run: Value = r.json().await.unwrap();
        let out = std::process::Command::new(pome_e2e::pome_bin())
            .args(["replay", run["run_id"].as_str().unwrap(), "--twins-dir", hostile_dir().to_str().unwrap()])
            .arg("--data")
            .arg(scratch.path())
            .env("POME_API_URL", &lb.url)
            .env("POME_API_KEY", API_KEY)
            .output()
            .unwrap();
        let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success() && said.contains(" 0 differ"), "sandbox {i}'s tape replays identically: {said}");
    }
    for h in hosts.into_iter().flatten() {
        h.stop();
    }
}


/// `make bench`'s failover line: three hosts behind haproxy under load, `kill -9` of one,
/// and the time from the kill to the first 2xx on each sandbox it owned, over three rounds
/// (the killed host comes back empty each time). Prints figures; asserts only that every
/// moved sandbox served again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "a benchmark: `make bench` runs it"]
async fn bench_failover_after_kill_9() {
    let store = pome_pgtest::database().await;
    let c = db(&store).await;
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let mut hosts = Vec::new();
    for d in &dirs {
        hosts.push(host(&store, d.path()).await);
    }
    let lb = Haproxy::start(&urls_of(&hosts));
    let http = reqwest::Client::new();
    while http.get(format!("{}/healthz", lb.url)).send().await.map(|r| r.status().as_u16()).ok() != Some(200) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut sandboxes = Vec::new();
    for _ in 0..12 {
        sandboxes.push(create(&http, &lb.url, &["tickets"]).await);
    }
    let load = Load::start(&lb.url, &sandboxes, 12);
    let mut samples = Vec::new();
    let mut lb = lb;
    let port: u16 = lb.url.rsplit(':').next().unwrap().parse().unwrap();
    let mut spare_dirs = Vec::new();
    for round in 0..3 {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let victim = round % 3;
        let mut moved = Vec::new();
        for (i, s) in sandboxes.iter().enumerate() {
            if owner(&c, &urls_of(&hosts), &s.id).await == Some(victim) {
                moved.push(i);
            }
        }
        let spare = tempfile::tempdir().unwrap();
        let replacement = host(&store, spare.path()).await;
        spare_dirs.push(spare);
        let dead = std::mem::replace(&mut hosts[victim], replacement);
        dead.kill9();
        let killed_at = Instant::now();
        samples.extend(served_again(&load, &moved, killed_at, Duration::from_secs(60)).await);
        // The replacement joins the balancer (on the same front port) for the next round.
        drop(lb);
        lb = Haproxy::start_on(port, &urls_of(&hosts));
    }
    let acked = load.finish().await.len();
    eprintln!(
        "failover after kill -9 (lease {LEASE}, 3 hosts, haproxy): first 2xx on a moved sandbox p50 {:?}, p99 {:?}, over {} moves; {acked} calls answered 2xx",
        percentile(samples.clone(), 50),
        percentile(samples.clone(), 99),
        samples.len()
    );
}
