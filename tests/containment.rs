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
    assert!(msg.contains("empty.wasm") && msg.contains("pome:twin@0.2.0"), "{msg}");
    let err = rt.load(b"not wasm at all", "junk.wasm").await.err().expect("refused");
    assert!(format!("{err:#}").contains("junk.wasm"));
}

