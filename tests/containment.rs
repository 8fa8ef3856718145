//! A hostile twin (infinite loop, trap, memory balloon, oversized response) is contained
//! with a clear error, loses no state, and no other sandbox notices.

use std::time::{Duration, Instant};

use pome_e2e::{Opts, Server};
use serde_json::{Value, json};

#[tokio::test]
async fn an_infinite_loop_hits_the_deadline_and_the_sandbox_keeps_its_state() {
    let server = Server::start().await;
    let sb = server.sandbox(&["hostile"], None).await;
    sb.call("hostile", "POST", "/notes", Some(json!({"text": "keep me"}))).await;

    let started = Instant::now();
    let r = sb.call("hostile", "GET", "/loop", None).await;
    assert_eq!(r.status, 500, "{}", r.text);
    assert!(r.json()["error"].as_str().unwrap().contains("deadline"), "{}", r.text);
    assert!(started.elapsed() < Duration::from_secs(5));

    let notes = sb.call("hostile", "GET", "/notes", None).await.json();
    assert_eq!(notes["notes"][0]["text"], "keep me", "rebuilt from snapshot + tape");
    let rows = sb.events("hostile").await;
    assert_eq!(rows.len(), 3);
    assert!(rows[1]["error"].as_str().unwrap().contains("deadline"));
    assert_eq!(rows[1]["status"], 500);
}

// Multi-threaded like the `pome` binary: a spinning guest yields at every epoch tick, and
// the other worker serves the good sandbox meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_sandboxes_keep_serving_while_one_spins() {
    let server = Server::with(Opts { limits: pome::limits::Limits { call_deadline: Duration::from_secs(2), max_stores: 64, ..Default::default() }, ..Opts::default() }).await;
    let bad = server.sandbox(&["hostile"], None).await;
    let good = server.sandbox(&["hostile"], None).await;
    let spinning = tokio::spawn(async move { bad.call("hostile", "GET", "/loop", None).await.status });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    for _ in 0..20 {
        assert_eq!(good.call("hostile", "GET", "/notes", None).await.status, 200);
    }
    assert!(started.elapsed() < Duration::from_millis(1500), "the good sandbox waited on the bad one: {:?}", started.elapsed());
    assert_eq!(spinning.await.unwrap(), 500);
}

#[tokio::test]
async fn a_trap_is_answered_recorded_and_survived() {
    let server = Server::start().await;
    let sb = server.sandbox(&["hostile"], None).await;
    sb.call("hostile", "POST", "/notes", Some(json!({"text": "before"}))).await;
    let r = sb.call("hostile", "GET", "/trap", None).await;
    assert_eq!(r.status, 500);
    assert!(r.json()["error"].as_str().unwrap().contains("trapped"), "{}", r.text);
    sb.call("hostile", "POST", "/notes", Some(json!({"text": "after"}))).await;
    let notes = sb.call("hostile", "GET", "/notes", None).await.json();
    assert_eq!(notes["notes"].as_array().unwrap().len(), 2);
    // The failed request is on the tape with its error, between the two that succeeded.
    let tape = sb.events("hostile").await;
    let statuses: Vec<u64> = tape.iter().map(|r| r["status"].as_u64().unwrap()).collect();
    assert_eq!(statuses[..3], [201, 500, 201], "{tape:?}");
    assert!(tape[1]["error"].as_str().unwrap().contains("trapped"), "{}", tape[1]);
    assert!(tape[0]["error"].is_null() && tape[2]["error"].is_null());
}

/// The hostile twin's counter `pome_<name>_total` in a `/metrics` text (0 before its first).
fn hostile_counter(text: &str, name: &str) -> u64 {
    let line = format!("pome_{name}_total{{twin=\"hostile\"}} ");
    text.lines().find_map(|l| l.strip_prefix(&line)).map_or(0, |v| v.parse().unwrap())
}

/// A store checkpoints its world once it has spent `checkpoint_after` of guest time since the
/// last checkpoint (a small world between requests, a large one in a store of its own off the
/// path), and a trap rebuilds it from the newest one: only the rows after it are replayed,
/// however long the tape (its older rows on disk, not in memory), and nothing is lost.
/// Without a checkpoint the whole tape is replayed.
#[tokio::test]
async fn a_rebuild_replays_only_the_rows_after_the_newest_checkpoint() {
    let (here, off_the_path) = (usize::MAX, 0);
    for (checkpoint_after, checkpoint_inline_bytes) in [(Duration::ZERO, here), (Duration::ZERO, off_the_path), (Duration::from_secs(3600), here)] {
        let limits = pome::limits::Limits { checkpoint_after, checkpoint_inline_bytes, tape_memory_rows: 4, max_stores: 64, ..Default::default() };
        let server = Server::with(Opts { limits, ..Opts::default() }).await;
        let sb = server.sandbox(&["hostile"], None).await;
        for i in 0..30 {
            assert_eq!(sb.call("hostile", "POST", "/notes", Some(json!({"text": format!("note {i}")}))).await.status, 201);
        }
        if checkpoint_after.is_zero() {
            // One built off the path comes when the host has a spare moment (its threads run
            // at the lowest priority): wait for it, as a trap much later would find it.
            let waited = std::time::Instant::now();
            while hostile_counter(&server.metrics().await, "twin_checkpoints") == 0 && waited.elapsed() < Duration::from_secs(60) {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        assert_eq!(sb.call("hostile", "GET", "/trap", None).await.status, 500);
        assert_eq!(sb.call("hostile", "POST", "/notes", Some(json!({"text": "after"}))).await.status, 201);

        let texts: Vec<String> = sb.state("hostile").await["notes"].as_array().unwrap().iter().map(|n| n["text"].as_str().unwrap().to_string()).collect();
        let mut want: Vec<String> = (0..30).map(|i| format!("note {i}")).collect();
        want.push("after".into());
        assert_eq!(texts, want, "checkpoint_after {checkpoint_after:?}, inline up to {checkpoint_inline_bytes} bytes");
        // The rebuilt store answered what the seed and the whole tape give.
        let rows: Vec<pome::tape::TapeRow> = serde_json::from_value(Value::Array(sb.events("hostile").await)).unwrap();
        let app = server.app();
        let image = app.twins["hostile"].clone();
        let seed = app.seeds.get(&app.rt, &image, "").await.unwrap();
        assert_eq!(pome::store::replay(app.rt.clone(), image, seed, &rows).await.unwrap().len(), 0);

        let text = server.metrics().await;
        let (taken, replayed) = (hostile_counter(&text, "twin_checkpoints"), hostile_counter(&text, "twin_replayed_rows"));
        if checkpoint_after.is_zero() {
            assert!(taken >= 1 && replayed < 30, "checkpoints {taken}, rows replayed {replayed}, inline up to {checkpoint_inline_bytes} bytes");
        } else {
            assert_eq!((taken, replayed), (0, 30), "no checkpoint: the whole tape");
        }
    }
}

/// Whether a checkpoint is taken in its store or built off the path is judged by how much
/// the world may have grown: the rows that changed it. A world only read stays small
/// however long its tape, so it is snapshotted between requests and nothing is replayed to
/// checkpoint it; a world written as much grows past the line and is built off the path.
#[tokio::test]
async fn a_world_only_read_is_checkpointed_in_its_store_however_long_its_tape() {
    let limits = pome::limits::Limits { checkpoint_after: Duration::ZERO, checkpoint_inline_bytes: 1 << 10, tape_memory_rows: 4, max_stores: 64, ..Default::default() };
    let server = Server::with(Opts { limits, ..Opts::default() }).await;
    let read = server.sandbox(&["hostile"], None).await;
    assert_eq!(read.call("hostile", "POST", "/notes", Some(json!({"text": "the only note"}))).await.status, 201);
    for _ in 0..200 {
        assert_eq!(read.call("hostile", "GET", "/notes", None).await.status, 200);
    }
    let tape: usize = read.events("hostile").await.iter().map(|r| r.to_string().len()).sum();
    assert!(tape > 32 * (1 << 10), "the reads' tape ({tape} bytes) is well past the line");
    let text = server.metrics().await;
    assert!(hostile_counter(&text, "twin_checkpoints") > 1, "checkpoints were taken along the reads: {text}");
    assert_eq!(hostile_counter(&text, "twin_checkpoint_replayed_rows"), 0, "none was built by replaying: {text}");

    let written = server.sandbox(&["hostile"], None).await;
    for i in 0..200 {
        let text = format!("note {i}: {}", "x".repeat(200));
        assert_eq!(written.call("hostile", "POST", "/notes", Some(json!({ "text": text }))).await.status, 201);
    }
    // Built when the host has a spare moment (its threads run at the lowest priority).
    let waited = Instant::now();
    while hostile_counter(&server.metrics().await, "twin_checkpoint_replayed_rows") == 0 && waited.elapsed() < Duration::from_secs(60) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(hostile_counter(&server.metrics().await, "twin_checkpoint_replayed_rows") > 0, "a world grown past the line is checkpointed off the path");
    // Either way the world is whole after a rebuild.
    assert_eq!(written.call("hostile", "GET", "/trap", None).await.status, 500);
    assert_eq!(written.state("hostile").await["notes"].as_array().unwrap().len(), 200);
}

#[tokio::test]
async fn a_memory_balloon_stops_at_the_cap() {
    let server = Server::with(Opts { limits: pome::limits::Limits { store_memory_bytes: 32 << 20, max_stores: 64, ..Default::default() }, ..Opts::default() }).await;
    let sb = server.sandbox(&["hostile"], None).await;
    sb.call("hostile", "POST", "/notes", Some(json!({"text": "x"}))).await;
    let r = sb.call("hostile", "GET", "/balloon", None).await;
    assert_eq!(r.status, 500);
    assert!(r.json()["error"].as_str().unwrap().contains("memory cap"), "{}", r.text);
    assert_eq!(sb.call("hostile", "GET", "/notes", None).await.json()["notes"][0]["text"], "x");
}

#[tokio::test]
async fn a_world_that_outgrows_the_memory_cap_is_refused_at_once_and_finalized_on_its_tape() {
    let server = Server::with(Opts { limits: pome::limits::Limits { store_memory_bytes: 32 << 20, max_stores: 64, ..Default::default() }, ..Opts::default() }).await;
    let sb = server.sandbox(&["hostile"], None).await;
    let megabyte = json!({"text": "n".repeat(1 << 20)});
    // Notes of a MiB each, until one no longer fits.
    let mut kept = 0;
    let failed = loop {
        let r = sb.call("hostile", "POST", "/notes", Some(megabyte.clone())).await;
        if r.status != 201 {
            break r;
        }
        kept += 1;
        assert!(kept < 32, "32 MiB of notes fit under a 32 MiB cap");
    };
    assert_eq!(failed.status, 500, "{}", failed.text);
    assert!(failed.json()["error"].as_str().unwrap().contains("memory cap"), "{}", failed.text);
    let rows = sb.events("hostile").await.len();
    // The rebuilt world is most of the cap: later requests, reads included, are refused in
    // the twin's shape, say why and what to do, and are not recorded.
    for (method, body) in [("POST", Some(json!({"text": "small"}))), ("GET", None)] {
        let r = sb.call("hostile", method, "/notes", body).await;
        assert_eq!(r.status, 429, "{}", r.text);
        let error = r.json()["error"].as_str().unwrap().to_string();
        assert!(error.contains("store is full") && error.contains("32 MiB") && error.contains("start a new one"), "{error}");
    }
    assert_eq!(sb.events("hostile").await.len(), rows, "refusals are not tape rows");
    // Writing the full world out needs several times the cap, so its state cannot be read:
    // finalize still closes the sandbox and records the run, with the tape and the reason.
    let (s, fin) = server.api("POST", &format!("/v1/sandboxes/{}/finalize", sb.id), None).await;
    assert_eq!(s, 200, "{fin}");
    assert_eq!(fin["state"], "closed", "{fin}");
    let (s, run) = server.api("GET", &format!("/v1/runs/{}", fin["run_id"].as_str().unwrap()), None).await;
    assert_eq!(s, 200, "{run}");
    let twin = &run["per_twin"]["hostile"];
    assert!(twin["state_error"].as_str().unwrap_or_default().contains("memory cap"), "{}", twin["state_error"]);
    assert!(twin["final_state"].is_null());
    assert_eq!(twin["tape"].as_array().map(Vec::len), Some(rows), "the whole tape is kept");
}

/// Guard pages behind every store's memory take 4 GiB of address space each: a host whose
/// process may not have that (here `ulimit -v` of 100 GiB for 100 stores) starts anyway on
/// bounds checks, says so in its log, and its twins serve and stop at their memory cap.
#[tokio::test]
async fn a_host_without_address_space_for_guard_pages_serves_on_bounds_checks() {
    let data = tempfile::tempdir().unwrap();
    let twins = pome_e2e::hostile_dir();
    let args = ["--max-stores", "100", "--store-memory-mib", "32", "--twins-dir", twins.to_str().unwrap()];
    let server = pome_e2e::ServeProcess::start_limited(data.path(), &args, Some(100 << 20)).await;
    let http = reqwest::Client::new();
    let sb: Value = http
        .post(format!("{}/v1/sandboxes", server.url))
        .header("x-api-key", pome_e2e::API_KEY)
        .json(&json!({"twins": ["hostile"]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let call = async |method: reqwest::Method, path: &str| {
        let url = format!("{}/s/{}/hostile{path}", server.url, sb["id"].as_str().unwrap());
        let r = http.request(method, url).bearer_auth(sb["agent_token"].as_str().unwrap()).json(&json!({"text": "x"})).send().await.unwrap();
        (r.status().as_u16(), r.text().await.unwrap())
    };
    assert_eq!(call(reqwest::Method::POST, "/notes").await.0, 201, "{sb}");
    let (status, text) = call(reqwest::Method::GET, "/balloon").await;
    assert!(status == 500 && text.contains("memory cap"), "{status} {text}");
    assert!(call(reqwest::Method::GET, "/notes").await.1.contains("\"x\""));
    let log = std::fs::read_to_string(data.path().join("serve.log")).unwrap();
    assert!(log.contains("explicit bounds checks"), "the host says it runs without guard pages: {log}");
}

#[tokio::test]
async fn an_oversized_response_is_refused_not_truncated() {
    let server = Server::with(Opts { limits: pome::limits::Limits { response_body_bytes: 1 << 20, max_stores: 64, ..Default::default() }, ..Opts::default() }).await;
    let sb = server.sandbox(&["hostile"], None).await;
    let r = sb.call("hostile", "GET", "/huge", None).await;
    assert_eq!(r.status, 500);
    assert!(r.json()["error"].as_str().unwrap().contains("response cap"), "{}", r.text);
    assert_eq!(sb.call("hostile", "GET", "/notes", None).await.status, 200);
}

#[tokio::test]
async fn request_bodies_over_the_cap_are_refused_in_the_twins_shape() {
    let server = Server::with(Opts { limits: pome::limits::Limits { request_body_bytes: 1 << 10, max_stores: 64, ..Default::default() }, ..Opts::default() }).await;
    let sb = server.sandbox(&["hostile"], None).await;
    let r = sb.call("hostile", "POST", "/notes", Some(json!({"text": "y".repeat(4096)}))).await;
    assert_eq!(r.status, 413, "{}", r.text);
    assert!(r.json()["error"].as_str().unwrap().contains("limit"));
}

#[tokio::test]
async fn a_write_whose_answer_was_refused_survives_a_later_trap() {
    let server = Server::with(Opts { limits: pome::limits::Limits { response_body_bytes: 1 << 20, max_stores: 64, ..Default::default() }, ..Opts::default() }).await;
    let sb = server.sandbox(&["hostile"], None).await;
    let r = sb.call("hostile", "POST", "/notes/huge", None).await;
    assert_eq!(r.status, 500, "the answer is refused");
    assert_eq!(sb.state("hostile").await["notes"].as_array().unwrap().len(), 1, "but the write happened");
    assert_eq!(sb.call("hostile", "GET", "/trap", None).await.status, 500);
    let notes = sb.state("hostile").await["notes"].as_array().unwrap().len();
    assert_eq!(notes, 1, "the rebuild replayed the write whose answer was refused");
    let tape = sb.events("hostile").await;
    assert_eq!(tape[0]["applied"], Value::Null, "an applied row says nothing extra");
    assert_eq!(tape[1]["applied"], false, "the trapped request is marked as having had no effect");
}

#[tokio::test]
async fn a_full_tape_refuses_rather_than_serving_unrecorded() {
    let server = Server::with(Opts { limits: pome::limits::Limits { tape_rows: 3, max_stores: 64, ..Default::default() }, ..Opts::default() }).await;
    let sb = server.sandbox(&["hostile"], None).await;
    for _ in 0..3 {
        assert_eq!(sb.call("hostile", "POST", "/notes", Some(json!({"text": "n"}))).await.status, 201);
    }
    let r = sb.call("hostile", "POST", "/notes", Some(json!({"text": "n"}))).await;
    assert_eq!(r.status, 429, "{}", r.text);
    assert!(r.json()["error"].as_str().unwrap().contains("tape is full"));
    assert_eq!(sb.events("hostile").await.len(), 3);
    assert_eq!(sb.state("hostile").await["notes"].as_array().unwrap().len(), 3, "the refused request changed nothing");
}

#[tokio::test]
async fn a_component_that_is_not_a_twin_is_refused_at_load_naming_what_is_missing() {
    let rt = pome::runtime::Runtime::new(pome::limits::Limits { max_stores: 4, ..Default::default() }, None).unwrap();
    let err = rt.load(b"(component)", "empty.wasm").await.err().expect("refused");
    let msg = format!("{err:#}");
    assert!(msg.contains("empty.wasm") && msg.contains("pome:twin@0.3.0"), "{msg}");
    let err = rt.load(b"not wasm at all", "junk.wasm").await.err().expect("refused");
    assert!(format!("{err:#}").contains("junk.wasm"));
}

/// Grading is bounded per criterion: a twin check that loops runs into the call deadline and
/// a CEL expression too costly for the tape is refused before it runs; each is `errored`
/// with its reason, the other criteria are still decided, and finalize answers.
#[tokio::test]
async fn a_criterion_past_its_bound_is_errored_and_the_others_are_still_graded() {
    let server = Server::start().await;
    let md = "# Spin\n\n## Prompt\nWrite a note.\n\n## Success Criteria\n\
        - [code:hostile] A note says \"hello there\"\n\
        - [code:hostile] The twin spins deciding this\n\
        - [code:hostile] expr: tape.exists(a, tape.exists(b, tape.exists(c, tape.exists(d, a.seq + b.seq + c.seq == d.seq + 1000))))\n\
        - [code:hostile] expr: tape.exists(r, r.action == 'notes.create')\n\n## Config\ntwins: [hostile]\n";
    let (s, task) = server.api("POST", "/v1/tasks", Some(json!({"id": "spin", "source": md}))).await;
    assert_eq!(s, 201, "{task}");
    let bindings: Vec<&str> = task["criteria"].as_array().unwrap().iter().map(|c| c["binding"].as_str().unwrap_or("UNBOUND")).collect();
    assert_eq!(bindings[..2], ["hostile.noted", "hostile.spins"], "{task}");
    let (s, created) = server.api("POST", "/v1/sandboxes", Some(json!({"task_id": "spin"}))).await;
    assert_eq!(s, 201, "{created}");
    let (id, token) = (created["id"].as_str().unwrap(), created["agent_token"].as_str().unwrap());
    let notes = format!("{}/s/{id}/hostile/notes", server.url);
    let r = server.http.post(&notes).bearer_auth(token).json(&json!({"text": "hello there"})).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 201);
    // A tape of 80 rows: four nested macros over it are 40 million steps.
    for _ in 0..79 {
        assert_eq!(server.http.get(&notes).bearer_auth(token).send().await.unwrap().status().as_u16(), 200);
    }
    let started = Instant::now();
    let path = format!("/v1/sandboxes/{id}/finalize");
    let finalize = server.api("POST", &path, None);
    let (s, fin) = tokio::time::timeout(Duration::from_secs(60), finalize).await.expect("finalize answers");
    assert_eq!(s, 200, "{fin}");
    let results = fin["criteria_results"].as_array().unwrap();
    let status: Vec<&str> = results.iter().map(|r| r["status"].as_str().unwrap()).collect();
    // The twin's spinning check is the twin's failure (errored); the expression is over its
    // bound only because of the agent's own 80 calls, so it fails, never `incomplete` by
    // the agent's doing.
    assert_eq!(status, ["passed", "errored", "failed", "passed"], "{fin}");
    assert!(results[1]["reason"].as_str().unwrap().contains("deadline"), "{fin}");
    assert!(results[2]["reason"].as_str().unwrap().contains("the agent's own calls reached the bound"), "{fin}");
    assert_ne!(fin["verdict"], "pass", "an errored or failed criterion is never a pass");
    assert!(started.elapsed() < Duration::from_secs(30), "bounded: {:?}", started.elapsed());
}
