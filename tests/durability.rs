//! Durable live sandboxes, against the real `pome serve` process: a clean stop, `kill -9`
//! mid-load, and the durability modes. Every call that got an answer must come back on its
//! tape after a restart (in `sync` mode), the world must be the one its tape rebuilds, and
//! the agent continues with its token.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pome_e2e::tickets::{Ack, Sbx, create, get, new_ticket};
use pome_e2e::{API_KEY, ServeProcess, hostile_dir};
use serde_json::{Value, json};

/// `pome serve` on `data` in a durability mode, with the test twins.
async fn serve_on(data: &Path, durability: &str) -> ServeProcess {
    ServeProcess::start(data, &["--durability", durability, "--quota", "200", "--twins-dir", hostile_dir().to_str().unwrap()]).await
}

/// 8 writers creating tickets round the sandboxes until the server stops answering.
struct Load {
    acked: Arc<Mutex<Vec<Ack>>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
    writers: Vec<tokio::task::JoinHandle<()>>,
}

impl Load {
    fn start(http: &reqwest::Client, url: &str, sandboxes: &[Sbx]) -> Load {
        let acked: Arc<Mutex<Vec<Ack>>> = Arc::default();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writers = (0..8)
            .map(|w| {
                let (http, url, sandboxes, acked, stop) = (http.clone(), url.to_string(), sandboxes.to_vec(), acked.clone(), stop.clone());
                tokio::spawn(async move {
                    let mut n = 0;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        let i = (w + n) % sandboxes.len();
                        let rid = format!("w{w}n{n}");
                        match new_ticket(&http, &url, &sandboxes[i], &rid, &rid).await {
                            Ok((201, t)) => acked.lock().unwrap().push(Ack { sandbox: i, rid, id: t["id"].as_u64().unwrap(), at: Instant::now() }),
                            Ok((status, v)) => panic!("a write was refused with {status}: {v}"),
                            Err(_) => break, // the server died under us: this request was never answered
                        }
                        n += 1;
                    }
                })
            })
            .collect();
        Load { acked, stop, writers }
    }

    /// The writes answered so far.
    fn so_far(&self) -> Vec<Ack> {
        self.acked.lock().unwrap().clone()
    }

    /// Stop the writers; every write that was answered.
    async fn finish(self) -> Vec<Ack> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for w in self.writers {
            w.await.unwrap();
        }
        self.acked.lock().unwrap().clone()
    }
}

async fn list_ids(http: &reqwest::Client, url: &str) -> BTreeSet<String> {
    let v: Value = http.get(format!("{url}/v1/sandboxes")).header("x-api-key", API_KEY).send().await.unwrap().json().await.unwrap();
    let items = v["data"].as_array().or(v.as_array()).cloned().unwrap_or_default();
    items.iter().map(|s| s["id"].as_str().unwrap().to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_clean_stop_and_restart_brings_back_every_open_sandbox_as_it_was() {
    let data = tempfile::tempdir().unwrap();
    let http = reqwest::Client::new();
    let serve = serve_on(data.path(), "sync").await;
    let url = serve.url.clone();
    let mut open = Vec::new();
    for i in 0..3 {
        let s = create(&http, &url, &["tickets"]).await;
        for n in 0..=i {
            assert_eq!(new_ticket(&http, &url, &s, &format!("t{i}-{n}"), &format!("req-{i}-{n}")).await.unwrap().0, 201);
        }
        open.push(s);
    }
    let finalized = create(&http, &url, &["tickets"]).await;
    let r = http.post(format!("{url}/v1/sandboxes/{}/finalize", finalized.id)).header("x-api-key", API_KEY).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let mut before = Vec::new();
    for s in &open {
        before.push((get(&http, &url, s, "/tickets").await.1, get(&http, &url, s, "/_pome/events").await.1));
    }
    serve.stop();

    let serve = serve_on(data.path(), "sync").await;
    let url = serve.url.clone();
    assert_eq!(list_ids(&http, &url).await, open.iter().map(|s| s.id.clone()).collect(), "the same sandboxes are open, and only them");
    for (s, (tickets, events)) in open.iter().zip(&before) {
        let (status, now) = get(&http, &url, s, "/tickets").await;
        assert_eq!(status, 200, "the agent's token still works");
        assert_eq!(&now, tickets, "the world is the one before the stop");
        // The tape is the one before the stop, row for row (the read just above added one).
        // `latency_ms` is a measurement, written as a float: serde_json may read its last
        // digit back one ulp apart, so rows are compared without it.
        let timeless = |rows: &Value| -> Vec<Value> {
            rows.as_array().unwrap().iter().map(|r| { let mut r = r.clone(); r.as_object_mut().unwrap().remove("latency_ms"); r }).collect()
        };
        let (now, before) = (timeless(&get(&http, &url, s, "/_pome/events").await.1), timeless(events));
        assert_eq!(&now[..before.len()], &before[..], "the tape is the one before the stop, row for row");
    }
    // The agent continues: the next ticket follows the last, the tape goes on in sequence.
    let s = &open[2];
    let (status, t) = new_ticket(&http, &url, s, "after restart", "req-after").await.unwrap();
    assert_eq!(status, 201);
    assert_eq!(t["id"], json!(5), "tickets 1 (seed) to 4 came back, so the next is 5");
    let events = get(&http, &url, s, "/_pome/events").await.1;
    let seqs: Vec<u64> = events.as_array().unwrap().iter().map(|r| r["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>(), "the tape goes on in sequence");
    assert_eq!(events.as_array().unwrap().last().unwrap()["request_id"], "req-after");
    let ts: Vec<&str> = events.as_array().unwrap().iter().map(|r| r["ts"].as_str().unwrap()).collect();
    assert!(ts.windows(2).all(|w| w[0] < w[1]), "virtual time keeps moving forward across the restart: {ts:?}");
    // A finalized sandbox stays finalized: its agent hears 410, its run is there.
    // (The host answers for a closed sandbox; it reads the token in the bearer form.)
    let r = http.get(format!("{url}/s/{}/tickets/tickets", finalized.id)).bearer_auth(&finalized.token).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 410, "a sandbox finalized before the restart stays closed");
    serve.stop();
}

/// 8 writers on 4 sandboxes; `kill -9` while requests are in flight; restart. Every request
/// that was answered is on its tape, and the world is exactly what the tape says.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_9_mid_load_loses_no_answered_call_in_sync_mode() {
    kill_9_mid_load_loses_no_answered_call("sync").await;
}

/// The default mode makes the same promise for a crash: an answer leaves only once its row
/// has been written to the log (its fsync may follow, which only a power cut can tell).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_9_mid_load_loses_no_answered_call_in_the_default_window_mode() {
    kill_9_mid_load_loses_no_answered_call("window").await;
}

async fn kill_9_mid_load_loses_no_answered_call(mode: &str) {
    let data = tempfile::tempdir().unwrap();
    let serve = serve_on(data.path(), mode).await;
    let (serve, _) = kill_9_under_load_then_check(serve, async || serve_on(data.path(), mode).await, mode).await;
    serve.stop();
}

/// Four sandboxes under load on `serve` until `kill -9`, then the server `again` starts:
/// every sandbox is back, every answered call is on its tape, the world is what the tape
/// says, and the agents carry on with their tokens. Returns the new server and the sandboxes.
async fn kill_9_under_load_then_check(serve: ServeProcess, again: impl AsyncFnOnce() -> ServeProcess, label: &str) -> (ServeProcess, Vec<Sbx>) {
    let http = reqwest::Client::new();
    let url = serve.url.clone();
    let mut sandboxes = Vec::new();
    for _ in 0..4 {
        sandboxes.push(create(&http, &url, &["tickets"]).await);
    }
    let load = Load::start(&http, &url, &sandboxes);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    serve.kill9();
    let acked = load.finish().await;
    assert!(acked.len() > 50, "{label}: the load got going ({} answers)", acked.len());

    let serve = again().await;
    let url = serve.url.clone();
    let listed = list_ids(&http, &url).await;
    assert!(sandboxes.iter().all(|s| listed.contains(&s.id)), "{label}: every sandbox is listed");
    let mut recovered = 0;
    for (i, s) in sandboxes.iter().enumerate() {
        let (status, events) = get(&http, &url, s, "/_pome/events").await;
        assert_eq!(status, 200, "sandbox {i} came back");
        let rows = events.as_array().unwrap();
        let on_tape: BTreeSet<&str> = rows.iter().map(|r| r["request_id"].as_str().unwrap()).collect();
        let mine: Vec<&Ack> = acked.iter().filter(|a| a.sandbox == i).collect();
        for Ack { rid, .. } in &mine {
            assert!(on_tape.contains(rid.as_str()), "{label}: answered request {rid} is on sandbox {i}'s tape");
        }
        recovered += mine.len();
        // The world is what its tape says: one ticket per recorded create, besides the seed's.
        let (status, tickets) = get(&http, &url, s, "/tickets").await;
        let titles: BTreeSet<&str> = tickets.as_array().unwrap_or_else(|| panic!("{label}: sandbox {i}'s tickets: {status} {tickets}")).iter().skip(1).map(|t| t["title"].as_str().unwrap()).collect();
        assert_eq!(titles, on_tape, "sandbox {i}: every recorded create, and nothing else, is in the world");
        for Ack { rid, id, .. } in &mine {
            let (status, t) = get(&http, &url, s, &format!("/tickets/{id}")).await;
            assert_eq!((status, t["title"].as_str()), (200, Some(rid.as_str())), "the ticket answered as #{id} is #{id}");
        }
    }
    assert_eq!(recovered, acked.len(), "{label}: requests acknowledged vs rows recovered");
    // The agents continue where they were.
    assert_eq!(new_ticket(&http, &url, &sandboxes[0], "more", "more").await.unwrap().0, 201);
    (serve, sandboxes)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn window_mode_has_every_answered_row_written_and_memory_mode_keeps_nothing() {
    let http = reqwest::Client::new();

    let data = tempfile::tempdir().unwrap();
    let serve = serve_on(data.path(), "window").await;
    let s = create(&http, &serve.url, &["tickets"]).await;
    for n in 0..5 {
        assert_eq!(new_ticket(&http, &serve.url, &s, &format!("t{n}"), &format!("r{n}")).await.unwrap().0, 201);
    }
    // No wait: each answer left after its row was committed to the log.
    serve.kill9();
    let serve = serve_on(data.path(), "window").await;
    let (status, events) = get(&http, &serve.url, &s, "/_pome/events").await;
    assert_eq!(status, 200);
    assert_eq!(events.as_array().unwrap().len(), 5);
    serve.stop();

    let data = tempfile::tempdir().unwrap();
    let serve = serve_on(data.path(), "memory").await;
    let s = create(&http, &serve.url, &["tickets"]).await;
    assert_eq!(new_ticket(&http, &serve.url, &s, "t", "r").await.unwrap().0, 201);
    serve.kill9();
    let serve = serve_on(data.path(), "memory").await;
    assert_eq!(get(&http, &serve.url, &s, "/tickets").await.0, 404, "memory mode: a restart ends every sandbox");
    serve.stop();
}

/// Discard sandbox `id`, then create a one-twin sandbox until one is let in (within 5 s):
/// what the closed sandbox held is given back, as `given_back` says.
async fn discard_then_create_again(server: &pome_e2e::Server, id: &str, given_back: &str) {
    let (_, refusal) = server.api("DELETE", &format!("/v1/sandboxes/{id}"), None).await;
    let token = refusal["error"]["details"]["discard_token"].as_str().unwrap_or_default().to_string();
    server.api("DELETE", &format!("/v1/sandboxes/{id}?confirm_discard={token}"), None).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let (status, _) = server.api("POST", "/v1/sandboxes", Some(json!({"twins": ["tickets"]}))).await;
        if status == 201 {
            break;
        }
        assert!(Instant::now() < deadline, "{given_back}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Every store slot taken (`--max-stores`; the system's cap on memory mappings answers the
/// same): a new sandbox is a 503 `server_busy` with `Retry-After` naming the twin, not a 500,
/// and a closed sandbox's slot takes the next one.
#[tokio::test]
async fn with_every_store_slot_taken_a_new_sandbox_waits_with_a_503_and_retry_after() {
    use pome_e2e::{Opts, Server};
    let opts = Opts { limits: pome::limits::Limits { max_stores: 2, ..Opts::default().limits }, ..Opts::default() };
    let server = Server::with(opts).await;
    let first = server.sandbox(&["tickets"], None).await;
    let _second = server.sandbox(&["tickets"], None).await;
    let resp = server.http.post(format!("{}/v1/sandboxes", server.url)).header("x-api-key", API_KEY).json(&json!({"twins": ["tickets"]})).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 503);
    assert!(resp.headers()["retry-after"].to_str().unwrap().parse::<u64>().unwrap() >= 1);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["type"], "server_busy", "{body}");
    assert_eq!(body["error"]["details"]["twin"], "tickets", "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("--max-stores"), "{body}");
    discard_then_create_again(&server, &first.id, "a closed sandbox's store slot is given back").await;
}

/// One memory budget over every store and tape: past it a new sandbox is a 503 with
/// `Retry-After` in the one error envelope; open sandboxes keep working, and closing one
/// frees room again.
#[tokio::test]
async fn past_the_memory_budget_a_new_sandbox_waits_with_a_503_and_retry_after() {
    use pome_e2e::{Opts, Server};
    // One byte: the first sandbox fits (nothing is held yet), the second cannot.
    let opts = Opts { limits: pome::limits::Limits { memory_budget: 1, max_stores: 16, ..Opts::default().limits }, ..Opts::default() };
    let server = Server::with(opts).await;
    let first = server.sandbox(&["tickets"], None).await;
    let resp = server.http.post(format!("{}/v1/sandboxes", server.url)).header("x-api-key", API_KEY).json(&json!({"twins": ["tickets"]})).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 503);
    let retry: u64 = resp.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!(retry >= 1);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["type"], "server_busy", "{body}");
    assert!(body["error"]["request_id"].as_str().is_some_and(|r| !r.is_empty()), "{body}");
    assert!(body["error"]["details"]["held_mib"].is_u64(), "{body}");
    // The open sandbox is not affected.
    assert_eq!(first.call_with("tickets", "GET", "/tickets", None, None).await.status, 401);
    let r = server.http.get(format!("{}/tickets", first.base("tickets"))).header("x-ticket-key", &first.token).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    // Closing it gives the memory back.
    discard_then_create_again(&server, &first.id, "a closed sandbox's memory is given back").await;
}

/// Every byte of a row counts toward the tape's cap: headers too (hyper takes ~400 KB of
/// them per request), so one token cannot grow a tape without bound through them.
#[tokio::test]
async fn request_headers_count_toward_the_tape_byte_cap() {
    use pome_e2e::{Opts, Server};
    let opts = Opts { limits: pome::limits::Limits { tape_bytes: 1 << 20, max_stores: 16, ..Opts::default().limits }, ..Opts::default() };
    let server = Server::with(opts).await;
    let sb = server.sandbox(&["tickets"], None).await;
    let padding = "x".repeat(200 << 10);
    let mut served = 0;
    for _ in 0..20 {
        let r = server.http.get(format!("{}/tickets", sb.base("tickets"))).header("x-ticket-key", &sb.token).header("x-padding", &padding).send().await.unwrap();
        if r.status().as_u16() != 200 {
            assert_eq!(r.status().as_u16(), 429, "a full tape refuses in the twin's shape: {}", r.text().await.unwrap());
            break;
        }
        served += 1;
    }
    assert!((4..=6).contains(&served), "a 1 MiB tape holds about five 200 KB-header rows, not {served}");
}

/// A long-running busy sandbox keeps only its newest rows in memory once they are on disk:
/// its memory does not grow with its tape, yet every row is still served by
/// `/_pome/events`, replayed by trap recovery and graded at finalize.
#[tokio::test]
async fn a_busy_sandbox_keeps_its_newest_rows_in_memory_and_every_row_is_still_served_replayed_and_graded() {
    use pome_e2e::{Opts, Server};
    const ROWS: usize = 16;
    const BYTES: usize = 48 << 10;
    // The harness serves in the default mode (window): rows are durable in live.db.
    let opts = Opts { limits: pome::limits::Limits { tape_memory_rows: ROWS, tape_memory_bytes: BYTES, max_stores: 16, ..Opts::default().limits }, ..Opts::default() };
    let server = Server::with(opts).await;
    let md = "# Keep notes\n\n## Prompt\nWrite notes.\n\n## Success Criteria\n\
        - [code:hostile] `notes.create` was called\n\
        - [code:hostile] `notes.create_huge` was never called\n\n## Config\ntwins: [hostile]\n";
    let (s, task) = server.api("POST", "/v1/tasks", Some(json!({"id": "notes", "source": md}))).await;
    assert_eq!(s, 201, "{task}");
    let (s, created) = server.api("POST", "/v1/sandboxes", Some(json!({"task_id": "notes"}))).await;
    assert_eq!(s, 201, "{created}");
    let sb = pome_e2e::Sandbox {
        id: created["id"].as_str().unwrap().into(),
        token: created["agent_token"].as_str().unwrap().into(),
        url: server.url.clone(),
        http: server.http.clone(),
        body: created.clone(),
    };
    let store = || match server.app().sandboxes.lookup(&sb.id) {
        pome::sandbox::Lookup::Open(s) => s.twin("hostile").unwrap().store.clone(),
        _ => panic!("the sandbox is open"),
    };

    // Row 1 is the first note; the other notes are spread over the tape, among reads.
    let mut high_water = 0;
    for i in 0..400 {
        let r = if i % 50 == 0 {
            sb.call("hostile", "POST", "/notes", Some(json!({"text": format!("note {i}")}))).await
        } else {
            sb.call("hostile", "GET", "/notes", None).await
        };
        assert!(r.status < 300, "{}", r.text);
        if i % 20 == 19 {
            // Rows leave memory once committed (within the 50 ms window).
            tokio::time::sleep(Duration::from_millis(60)).await;
            high_water = high_water.max(store().memory().await.unwrap().bytes_in_memory);
        }
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(sb.call("hostile", "GET", "/notes", None).await.status, 200);
    let m = store().memory().await.unwrap();
    assert_eq!(m.rows, 401);
    assert!(m.rows_in_memory <= ROWS && m.bytes_in_memory <= BYTES, "the tape's memory is bounded: {m:?}");
    assert!(high_water <= BYTES + (8 << 10), "bounded all along, not only at the end: {high_water} bytes");
    assert!(m.bytes > 4 * BYTES, "the tape itself is much larger than what stays in memory: {m:?}");
    assert_eq!(server.app().rt.held.tapes.load(std::sync::atomic::Ordering::Relaxed), m.bytes_in_memory, "the memory budget counts what is in memory");

    // Every row is served, in order, the old ones read back from disk.
    let events = sb.events("hostile").await;
    assert_eq!(events.iter().map(|r| r["seq"].as_u64().unwrap()).collect::<Vec<_>>(), (1..=401).collect::<Vec<_>>());
    assert_eq!(events[0]["action"], "notes.create");
    assert_eq!(events[100]["action"], "notes.create", "row 101 is the third note");

    // A trap rebuilds the store from the whole tape, the rows on disk included.
    let trapped = sb.call("hostile", "GET", "/trap", None).await;
    assert!(trapped.status >= 500, "{}", trapped.text);
    let notes = sb.call("hostile", "GET", "/notes", None).await.json();
    let texts: Vec<&str> = notes["notes"].as_array().unwrap().iter().map(|n| n["text"].as_str().unwrap()).collect();
    assert_eq!(texts, (0..400).step_by(50).map(|i| format!("note {i}")).collect::<Vec<_>>(), "no note was lost by the rebuild");

    // Finalize grades the whole tape: the only `notes.create` before row 101 is row 1.
    let (s, fin) = server.api("POST", &format!("/v1/sandboxes/{}/finalize", sb.id), None).await;
    assert_eq!(s, 200, "{fin}");
    assert_eq!(fin["tape_rows"], 403, "{fin}");
    let results = fin["criteria_results"].as_array().unwrap();
    assert_eq!(results[0]["status"], "passed", "{fin}");
    assert_eq!(results[0]["evidence"]["seq"], 1, "found on the row that left memory: {fin}");
    assert_eq!(results[1]["status"], "passed", "{fin}");
    assert!(results[1]["reason"].as_str().unwrap().contains("403 calls"), "the check read every row: {fin}");
}

/// The WAL as a power cut at its last fsync leaves it: every frame up to the last complete
/// commit (SQLite fsyncs each commit before the writer acknowledges it) and nothing after —
/// a batch still being written was never synced — then half a frame of garbage, a sector
/// torn mid-write. Frames of an older WAL generation (other salts) end the walk.
fn cut_at_last_fsync(wal: &[u8]) -> Vec<u8> {
    if wal.len() < 32 {
        return Vec::new();
    }
    let page = u32::from_be_bytes(wal[8..12].try_into().unwrap()) as usize;
    let frame = 24 + page;
    let salt = &wal[16..24];
    let (mut off, mut last_commit) = (32, 32);
    while off + frame <= wal.len() {
        let header = &wal[off..off + 24];
        if &header[8..16] != salt {
            break;
        }
        off += frame;
        if u32::from_be_bytes(header[4..8].try_into().unwrap()) != 0 {
            last_commit = off;
        }
    }
    let mut out = wal[..last_commit].to_vec();
    out.extend(std::iter::repeat_n(0xA5u8, frame / 2));
    out
}

/// The row log as a power cut leaves it. In `sync` mode every answered row was fsynced, so
/// only a write never answered is torn: a frame of garbage after the last whole one. In
/// `window` mode the row log is fsynced only when commits stall, so the worst case is that
/// none of it reached the disk: the surviving rows are those the database's log holds.
fn torn_row_log(mut bytes: Vec<u8>, mode: &str) -> Vec<u8> {
    if mode == "window" {
        return Vec::new();
    }
    bytes.extend(std::iter::repeat_n(0x5Au8, 37));
    bytes
}

/// A simulated power cut: freeze the server mid-load (SIGSTOP), take its data directory as
/// the disk would hold it after losing every unsynced write (`cut_at_last_fsync`; the
/// shared-memory index is not on disk; the row log's tail torn, `torn_row_log`), kill it,
/// and start a server on that copy. In `sync` mode every acknowledged call is back; in
/// `window` mode what is lost was acknowledged within the window before the cut. In both, each world is a replay of its surviving tape.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_power_cut_loses_no_synced_answer_and_every_world_is_its_surviving_tape() {
    for mode in ["sync", "window"] {
        let data = tempfile::tempdir().unwrap();
        let http = reqwest::Client::new();
        let serve = serve_on(data.path(), mode).await;
        let url = serve.url.clone();
        let mut sandboxes = Vec::new();
        for _ in 0..4 {
            sandboxes.push(create(&http, &url, &["tickets"]).await);
        }
        let load = Load::start(&http, &url, &sandboxes);
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let pid = serve.pid().to_string();
        assert!(Command::new("kill").args(["-STOP", &pid]).status().unwrap().success());
        let cut_at = Instant::now();
        // Every answer the load holds now was sent before the freeze.
        let acked_before = load.so_far();
        let disk = tempfile::tempdir().unwrap();
        for entry in std::fs::read_dir(data.path()).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name().to_string_lossy().to_string();
            if name == "cache" || name == "serve.log" || name.ends_with("-shm") || !entry.file_type().unwrap().is_file() {
                continue;
            }
            let bytes = std::fs::read(entry.path()).unwrap();
            let bytes = if name.ends_with("-wal") {
                cut_at_last_fsync(&bytes)
            } else if name.contains("-log.") {
                torn_row_log(bytes, mode)
            } else {
                bytes
            };
            std::fs::write(disk.path().join(&name), bytes).unwrap();
        }
        serve.kill9();
        load.finish().await;
        assert!(acked_before.len() > 50, "{mode}: the load got going ({} answers)", acked_before.len());

        let serve = serve_on(disk.path(), mode).await;
        let url = serve.url.clone();
        let (mut acked_n, mut recovered) = (0, 0);
        for (i, s) in sandboxes.iter().enumerate() {
            let (status, events) = get(&http, &url, s, "/_pome/events").await;
            assert_eq!(status, 200, "{mode}: sandbox {i} came back after the power cut");
            let rows = events.as_array().unwrap();
            let on_tape: BTreeSet<&str> = rows.iter().map(|r| r["request_id"].as_str().unwrap()).collect();
            for Ack { rid, at, .. } in acked_before.iter().filter(|a| a.sandbox == i) {
                acked_n += 1;
                if on_tape.contains(rid.as_str()) {
                    recovered += 1;
                } else {
                    assert_eq!(mode, "window", "sync: answered request {rid} was lost by the power cut");
                    // The window is about 200 ms; the rest is this machine's scheduling slack.
                    assert!(cut_at.duration_since(*at) < Duration::from_millis(500), "window: {rid}, answered {:?} before the cut, was lost", cut_at.duration_since(*at));
                }
            }
            // The world is a replay of the surviving tape: one ticket per recorded create.
            let (_, tickets) = get(&http, &url, s, "/tickets").await;
            let titles: BTreeSet<&str> = tickets.as_array().unwrap().iter().skip(1).map(|t| t["title"].as_str().unwrap()).collect();
            assert_eq!(titles, on_tape, "{mode}: sandbox {i}'s world is its tape");
        }
        if mode == "sync" {
            assert_eq!(recovered, acked_n, "sync: requests acknowledged vs rows recovered");
        }
        eprintln!("{mode}: {acked_n} acknowledged before the power cut, {recovered} recovered");
        assert_eq!(new_ticket(&http, &url, &sandboxes[0], "more", "more").await.unwrap().0, 201, "{mode}: the agent continues");
        serve.stop();
    }
}

/// A small filesystem of its own for a test's data directory (tmpfs; the suite runs as
/// root, as CI does), unmounted when dropped.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    fn mount(mib: u64) -> SmallDisk {
        let dir = tempfile::tempdir().unwrap();
        let ok = Command::new("mount").args(["-t", "tmpfs", "-o", &format!("size={mib}m,mode=0700"), "tmpfs"]).arg(dir.path()).status().unwrap().success();
        assert!(ok, "mounting a {mib} MiB tmpfs at {} (the suite needs root, as CI has)", dir.path().display());
        SmallDisk { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Take every free byte with a filler file.
    fn fill(&self) {
        use std::io::Write as _;
        let mut f = std::fs::File::create(self.path().join("filler")).unwrap();
        let chunk = vec![0u8; 64 << 10];
        while f.write_all(&chunk).is_ok() {}
        for _ in 0..64 {
            let _ = f.write_all(&[0u8; 512]);
        }
        let _ = f.sync_all();
    }

    fn free(&self) {
        std::fs::remove_file(self.path().join("filler")).unwrap();
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(self.dir.path()).status();
    }
}

/// A full disk loses nothing: the rows that could not be written are held and retried, not
/// dropped; while the disk stays full the sandbox answers 503 with `Retry-After` (served
/// nothing, recorded nothing); once room frees, the held answers go out, and every call
/// answered 2xx is on the tape and in the world after a `kill -9` and a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_full_disk_holds_its_rows_answers_503_and_loses_nothing_once_room_frees() {
    let disk = SmallDisk::mount(48);
    let data = disk.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let http = reqwest::Client::new();
    let serve = serve_on(&data, "window").await;
    let s = create(&http, &serve.url, &["tickets"]).await;
    for n in 0..5 {
        assert_eq!(new_ticket(&http, &serve.url, &s, &format!("before-{n}"), &format!("before-{n}")).await.unwrap().0, 201);
    }

    disk.fill();
    // Writers that keep going while the disk is full: each answer is a 201 or a 503.
    let answers: Arc<Mutex<Vec<(String, u16)>>> = Arc::default();
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let (http, url, s, answers) = (http.clone(), serve.url.clone(), Sbx { id: s.id.clone(), token: s.token.clone() }, answers.clone());
            tokio::spawn(async move {
                for n in 0..10 {
                    let rid = format!("full-{w}-{n}");
                    let (status, body) = new_ticket(&http, &url, &s, &rid, &rid).await.unwrap();
                    assert!(status == 201 || status == 503, "{rid}: {status} {body}");
                    answers.lock().unwrap().push((rid, status));
                }
            })
        })
        .collect();
    // While the disk is full, new calls are refused at once, in the twin's shape, retryable.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut probes = Vec::new();
    let refused = loop {
        let rid = format!("probe-{}", probes.len());
        let sent = http.post(format!("{}/s/{}/tickets/tickets", serve.url, s.id)).header("x-ticket-key", &s.token).header("x-request-id", &rid).json(&json!({"title": rid}));
        // A probe served just as the disk filled waits for its row like any answer: given up
        // on here, it may still land (status 0: not asserted either way).
        match sent.timeout(Duration::from_millis(500)).send().await {
            Ok(r) if r.status() == 503 => {
                probes.push((rid, 503));
                break r;
            }
            Ok(r) => probes.push((rid, r.status().as_u16())),
            Err(e) if e.is_timeout() => probes.push((rid, 0)),
            Err(e) => panic!("{rid}: {e}"),
        }
        assert!(Instant::now() < deadline, "no 503 while the disk is full");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(refused.headers().get("retry-after").and_then(|v| v.to_str().ok()), Some("1"));
    let body: Value = refused.json().await.unwrap();
    assert!(body.is_object(), "the twin's own error shape: {body}");
    assert!(!body.to_string().contains("disk is full"), "the host's trouble is the operator's to read: {body}");

    disk.free();
    for w in writers {
        w.await.unwrap();
    }
    let mut answers = answers.lock().unwrap().clone();
    answers.extend(probes);
    // Calls carry on once room frees: the writer finds out at its next retry (backing off
    // to a second), so a client that honours `Retry-After` gets through within a few.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let rid = format!("after-{}", answers.len());
        let status = new_ticket(&http, &serve.url, &s, &rid, &rid).await.unwrap().0;
        assert!(status == 201 || status == 503, "{rid}: {status}");
        answers.push((rid, status));
        if status == 201 {
            break;
        }
        assert!(Instant::now() < deadline, "still refused 5 s after the disk has room again");
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let acked: Vec<&str> = answers.iter().filter(|(_, st)| *st == 201).map(|(rid, _)| rid.as_str()).collect();
    serve.kill9();

    let serve = serve_on(&data, "window").await;
    let (status, events) = get(&http, &serve.url, &s, "/_pome/events").await;
    assert_eq!(status, 200);
    let rows = events.as_array().unwrap();
    let seqs: Vec<u64> = rows.iter().map(|r| r["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=rows.len() as u64).collect::<Vec<_>>(), "the tape has no hole");
    let on_tape: BTreeSet<&str> = rows.iter().map(|r| r["request_id"].as_str().unwrap()).collect();
    for rid in acked.iter().copied().chain(["before-0", "before-1", "before-2", "before-3", "before-4"]) {
        assert!(on_tape.contains(rid), "answered request {rid} is on the tape after the full disk and a kill -9");
    }
    for (rid, _) in answers.iter().filter(|(_, st)| *st == 503) {
        assert!(!on_tape.contains(rid.as_str()), "{rid} was refused with 503, so it is not on the tape");
    }
    let (_, tickets) = get(&http, &serve.url, &s, "/tickets").await;
    let titles: BTreeSet<&str> = tickets.as_array().unwrap().iter().skip(1).map(|t| t["title"].as_str().unwrap()).collect();
    assert_eq!(titles, on_tape, "the world is its tape");
    serve.stop();
}

/// With `--store postgres://…` a host keeps nothing another host needs: `kill -9` under load,
/// then a new host on the same database and an empty data directory of its own, and every
/// answered call is in the world and on the tape, and the agents carry on with their tokens.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_9_mid_load_with_the_store_in_postgresql_loses_no_answered_call_and_a_new_host_carries_on() {
    let store = pome_pgtest::database().await;
    // A short lease: the new host takes the dead one's sandboxes over once it has run out.
    let serve_with_store = async |data: &Path| ServeProcess::start(data, &["--store", &store, "--lease", "2s", "--quota", "200", "--twins-dir", hostile_dir().to_str().unwrap()]).await;
    let (first_host, second_host) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    // Compiled twins are a cache, not state: shared only to spare the test a minute of compiling.
    std::fs::create_dir_all(first_host.path().join("cache")).unwrap();
    std::os::unix::fs::symlink(first_host.path().join("cache"), second_host.path().join("cache")).unwrap();
    let serve = serve_with_store(first_host.path()).await;
    let (serve, sandboxes) = kill_9_under_load_then_check(serve, async || serve_with_store(second_host.path()).await, "postgres").await;
    // Finalize on the new host: the run is in the shared store.
    let http = reqwest::Client::new();
    let r = http.post(format!("{}/v1/sandboxes/{}/finalize", serve.url, sandboxes[1].id)).header("x-api-key", API_KEY).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200, "{}", r.text().await.unwrap());
    serve.stop();
}
