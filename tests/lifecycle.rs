//! A sandbox's life: create, use, finalize or stop, expire — and the answers on either side
//! of every limit the product page sets.

use std::time::Duration;

use pome::limits::Lifetimes;
use pome_e2e::{Opts, Server};
use serde_json::json;

#[tokio::test]
async fn create_call_finalize_then_every_call_is_410() {
    let server = Server::start().await;
    let sb = server.sandbox(&["hostile"], None).await;
    assert!(sb.id.starts_with("ses_"));
    assert_eq!(sb.body["session_id"], sb.body["id"], "both spellings of the id");
    assert_eq!(sb.body["per_twin"]["hostile"]["api_url"], format!("{}/s/{}/hostile", server.url, sb.id));

    let created = sb.call("hostile", "POST", "/notes", Some(json!({"text": "first"}))).await;
    assert_eq!(created.status, 201, "{}", created.text);

    let (status, fin) = server.api("POST", &format!("/v1/sandboxes/{}/finalize", sb.id), None).await;
    assert_eq!(status, 200, "{fin}");
    let run_id = fin["run_id"].as_str().unwrap().to_string();

    // Closed: twin routes and heartbeats answer 410 session_expired.
    assert_eq!(sb.call("hostile", "GET", "/notes", None).await.status, 410);
    let (status, body) = server.api("POST", &format!("/v1/sandboxes/{}/heartbeat", sb.id), None).await;
    assert_eq!(status, 410, "{body}");
    assert_eq!(body["error"]["type"], "session_expired");
    assert!(body["error"]["request_id"].as_str().unwrap().starts_with("req_"));
    // Finalizing again is not an error: it answers the run the first finalize wrote.
    let (status, again) = server.api("POST", &format!("/v1/sandboxes/{}/finalize", sb.id), None).await;
    assert_eq!((status, again["run_id"].as_str()), (200, Some(run_id.as_str())), "{again}");

    // The run kept the tape, the seed state and the final state.
    let (status, run) = server.api("GET", &format!("/v1/runs/{run_id}"), None).await;
    assert_eq!(status, 200, "{run}");
    let twin = &run["per_twin"]["hostile"];
    assert_eq!(twin["tape"].as_array().unwrap().len(), 1);
    assert_eq!(twin["initial_state"]["notes"], json!([]));
    assert_eq!(twin["final_state"]["notes"][0]["text"], "first");
    let (_, runs) = server.api("GET", "/v1/runs", None).await;
    assert_eq!(runs["data"][0]["id"], run_id.as_str());
}

#[tokio::test]
async fn the_sessions_spelling_works_too() {
    let server = Server::start().await;
    let (status, v) = server.api("POST", "/v1/sessions", Some(json!({"twins": ["hostile"]}))).await;
    assert_eq!(status, 201, "{v}");
    let id = v["session_id"].as_str().unwrap();
    let (status, got) = server.api("GET", &format!("/v1/sessions/{id}"), None).await;
    assert_eq!(status, 200);
    assert_eq!(got["id"], id);
    let (_, list) = server.api("GET", "/v1/sandboxes", None).await;
    assert_eq!(list["data"][0]["id"], id);
}

#[tokio::test]
async fn lifetime_is_a_hard_ceiling_that_heartbeats_do_not_move() {
    let server = Server::with(Opts {
        lifetimes: Lifetimes { lifetime: Duration::from_millis(1500), idle: Duration::from_secs(60) },
        ..Opts::default()
    })
    .await;
    let sb = server.sandbox(&["hostile"], None).await;
    tokio::time::sleep(Duration::from_millis(700)).await;
    let (status, hb) = server.api("POST", &format!("/v1/sandboxes/{}/heartbeat", sb.id), None).await;
    assert_eq!(status, 200);
    assert_eq!(hb["expires_at"], sb.body["expires_at"], "heartbeat never extends the lifetime");
    assert_eq!(sb.call("hostile", "GET", "/notes", None).await.status, 200);
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let r = sb.call("hostile", "GET", "/notes", None).await;
    assert_eq!(r.status, 410, "{}", r.text);
    assert_eq!(r.json()["error"]["details"]["reason"], "lifetime_expired");
    let (_, usage) = server.api("GET", "/v1/usage", None).await;
    assert_eq!(usage["sessions_used"], 0, "an expired sandbox frees its slot");
}

#[tokio::test]
async fn idle_timer_is_reset_by_twin_calls_and_heartbeats() {
    let server = Server::with(Opts {
        lifetimes: Lifetimes { lifetime: Duration::from_secs(60), idle: Duration::from_millis(800) },
        ..Opts::default()
    })
    .await;
    let sb = server.sandbox(&["hostile"], None).await;
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(450)).await;
        assert_eq!(sb.call("hostile", "GET", "/notes", None).await.status, 200, "a twin call resets idle");
    }
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(450)).await;
        let (status, _) = server.api("POST", &format!("/v1/sandboxes/{}/heartbeat", sb.id), None).await;
        assert_eq!(status, 200, "a heartbeat resets idle");
    }
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let r = sb.call("hostile", "GET", "/notes", None).await;
    assert_eq!(r.status, 410);
    assert_eq!(r.json()["error"]["details"]["reason"], "idle_expired");
}

#[tokio::test]
async fn quota_is_a_ceiling_and_finalize_or_stop_frees_a_slot() {
    let server = Server::with(Opts { quota: 2, ..Opts::default() }).await;
    let a = server.sandbox(&["hostile"], None).await;
    let b = server.sandbox(&["hostile"], None).await;
    let (status, err) = server.api("POST", "/v1/sandboxes", Some(json!({"twins": ["hostile"]}))).await;
    assert_eq!(status, 402);
    assert_eq!(err["error"]["type"], "quota_exceeded");
    let (_, usage) = server.api("GET", "/v1/usage", None).await;
    assert_eq!(usage, json!({"sessions_used": 2, "sessions_quota": 2, "sessions_remaining": 0}));

    server.api("POST", &format!("/v1/sandboxes/{}/finalize", a.id), None).await;
    let c = server.sandbox(&["hostile"], None).await;

    // Stop refuses an ungraded sandbox until the discard is confirmed.
    let (status, refusal) = server.api("DELETE", &format!("/v1/sandboxes/{}", b.id), None).await;
    assert_eq!(status, 409);
    assert_eq!(refusal["error"]["type"], "conflict");
    assert_eq!(refusal["error"]["details"]["reason"], "ungraded_session");
    let token = refusal["error"]["details"]["discard_token"].as_str().unwrap();
    let (status, _) = server.api("DELETE", &format!("/v1/sandboxes/{}?confirm_discard={token}", b.id), None).await;
    assert_eq!(status, 200);
    assert_eq!(b.call("hostile", "GET", "/notes", None).await.status, 410);
    let _d = server.sandbox(&["hostile"], None).await;
    let (_, usage) = server.api("GET", "/v1/usage", None).await;
    assert_eq!(usage["sessions_used"], 2);
    drop(c);
}

#[tokio::test]
async fn more_than_three_twins_is_too_many_whatever_their_names() {
    let server = Server::start().await;
    let (status, err) = server.api("POST", "/v1/sandboxes", Some(json!({"twins": ["a", "b", "c", "d"]}))).await;
    assert_eq!(status, 422);
    assert_eq!(err["error"]["type"], "validation_failed");
    assert_eq!(err["error"]["details"]["error"], "too_many_twins");

    let (status, err) = server.api("POST", "/v1/sandboxes", Some(json!({"twins": ["hostile", "nope"]}))).await;
    assert_eq!(status, 422);
    assert_eq!(err["error"]["details"]["twin"], "nope");
    assert!(err["error"]["message"].as_str().unwrap().contains("nope"));
}

#[tokio::test]
async fn a_refused_seed_creates_nothing() {
    let server = Server::start().await;
    let (status, err) = server.api("POST", "/v1/sandboxes", Some(json!({"twins": ["hostile"], "seed": {"greeting": 42}}))).await;
    assert_eq!(status, 422, "{err}");
    assert_eq!(err["error"]["type"], "validation_failed");
    assert_eq!(err["error"]["details"]["twin"], "hostile");
    assert!(err["error"]["message"].as_str().unwrap().contains("greeting"), "the twin's own message: {err}");
    let (_, usage) = server.api("GET", "/v1/usage", None).await;
    assert_eq!(usage["sessions_used"], 0);
    let (_, list) = server.api("GET", "/v1/sandboxes", None).await;
    assert_eq!(list["data"], json!([]));
}

#[tokio::test]
async fn a_multi_twin_envelope_with_one_bad_seed_creates_nothing() {
    let server = Server::start().await;
    // The tickets test twin boots fine; the hostile one refuses its seed.
    let other = "tickets";
    assert!(server.app().twins.contains_key(other), "the test twins are loaded");
    let seed = json!({"hostile": {"greeting": 42}});
    let (status, err) = server.api("POST", "/v1/sandboxes", Some(json!({"twins": [other, "hostile"], "seed": seed}))).await;
    assert_eq!(status, 422, "{err}");
    assert_eq!(err["error"]["details"]["twin"], "hostile");
    let (_, usage) = server.api("GET", "/v1/usage", None).await;
    assert_eq!(usage["sessions_used"], 0);
}

#[tokio::test]
async fn errors_have_one_shape_everywhere() {
    let server = Server::start().await;
    let resp = server.http.post(format!("{}/v1/sandboxes", server.url)).header("x-api-key", pome_e2e::API_KEY).body("{not json").send().await.unwrap();
    assert_eq!(resp.status(), 400);
    let v: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(v["error"]["type"], "validation_failed");

    let (status, v) = server.api_as("pme_wrong", "GET", "/v1/usage", None).await;
    assert_eq!((status, v["error"]["type"].as_str()), (401, Some("invalid_auth")));

    let (status, v) = server.api("GET", "/v1/nothing-here", None).await;
    assert_eq!((status, v["error"]["type"].as_str()), (404, Some("not_found")));

    let (status, v) = server.api("GET", "/v1/sandboxes/ses_doesnotexist", None).await;
    assert_eq!((status, v["error"]["type"].as_str()), (404, Some("not_found")));
    for key in ["type", "message", "request_id"] {
        assert!(v["error"].get(key).is_some(), "{key} missing from {v}");
    }
}

#[tokio::test]
async fn metrics_count_sandboxes_and_requests() {
    let server = Server::start().await;
    let sb = server.sandbox(&["hostile"], None).await;
    sb.call("hostile", "GET", "/notes", None).await;
    let text = server.metrics().await;
    assert!(text.contains("pome_sandboxes_open 1"), "{text}");
    assert!(text.contains("pome_twin_requests_total{twin=\"hostile\"} 1"), "{text}");
}

#[tokio::test]
async fn two_finalizes_at_once_write_one_run_and_both_get_it() {
    let server = Server::start().await;
    let sb = server.sandbox(&["hostile"], None).await;
    sb.call("hostile", "POST", "/notes", Some(json!({"text": "x"}))).await;
    let path = format!("/v1/sandboxes/{}/finalize", sb.id);
    let (a, b) = tokio::join!(server.api("POST", &path, None), server.api("POST", &path, None));
    assert_eq!((a.0, b.0), (200, 200), "{a:?} {b:?}");
    assert_eq!(a.1["run_id"], b.1["run_id"]);
    let (_, runs) = server.api("GET", "/v1/runs", None).await;
    assert_eq!(runs["data"].as_array().unwrap().len(), 1, "one run, not two: {runs}");
}

#[tokio::test]
async fn only_the_agents_own_calls_keep_a_sandbox_alive() {
    let server = Server::with(Opts {
        lifetimes: Lifetimes { lifetime: Duration::from_secs(60), idle: Duration::from_millis(600) },
        ..Opts::default()
    })
    .await;
    let sb = server.sandbox(&["hostile"], None).await;
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(150)).await;
        let r = sb.call_with("hostile", "GET", "/notes", None, Some("Bearer tok_not_the_token")).await;
        assert_eq!(r.status, 401, "a stranger who knows the id is refused");
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let r = sb.call("hostile", "GET", "/notes", None).await;
    assert_eq!(r.status, 410, "a stranger's calls did not reset the idle clock: {}", r.text);
}

#[tokio::test]
async fn a_seed_up_to_the_seed_limit_is_taken_and_past_it_is_refused_in_the_envelope() {
    let server = Server::with(Opts { limits: pome::limits::Limits { seed_bytes: 4 << 20, max_stores: 16, ..Default::default() }, ..Opts::default() }).await;
    // 3 MB: past the HTTP framework's own 2 MB default, within the server's limit.
    let big = json!({"twins": ["hostile"], "seed": {"greeting": "hi", "padding": "x".repeat(3 << 20)}});
    let (status, v) = server.api("POST", "/v1/sandboxes", Some(big)).await;
    assert_eq!(status, 201, "{}", v.to_string().chars().take(300).collect::<String>());
    let huge = json!({"twins": ["hostile"], "seed": {"greeting": "hi", "padding": "x".repeat(5 << 20)}});
    let (status, v) = server.api("POST", "/v1/sandboxes", Some(huge)).await;
    assert_eq!(status, 413);
    assert_eq!(v["error"]["type"], "validation_failed", "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("--seed-mib"));
}

#[tokio::test]
async fn concurrent_creates_with_one_idempotency_key_make_one_sandbox() {
    let server = Server::start().await;
    let body = || Some(json!({"twins": ["hostile"], "idempotency_key": "retry-me"}));
    let (a, b, c) = tokio::join!(
        server.api("POST", "/v1/sandboxes", body()),
        server.api("POST", "/v1/sandboxes", body()),
        server.api("POST", "/v1/sandboxes", body())
    );
    let ids: std::collections::BTreeSet<String> = [&a, &b, &c].iter().map(|(_, v)| v["id"].as_str().unwrap().to_string()).collect();
    assert_eq!(ids.len(), 1, "{a:?} {b:?} {c:?}");
    let mut statuses = [a.0, b.0, c.0];
    statuses.sort();
    assert_eq!(statuses, [200, 200, 201], "one created, the others repeated it");
    let (_, usage) = server.api("GET", "/v1/usage", None).await;
    assert_eq!(usage["sessions_used"], 1);
}

#[tokio::test]
async fn a_stranger_learns_nothing_about_a_sandbox_from_its_id() {
    let server = Server::start().await;
    let sb = server.sandbox(&["hostile"], None).await;
    let stranger = Some("Bearer tok_guess");
    assert_eq!(sb.call_with("hostile", "GET", "/_pome/health", None, stranger).await.status, 401, "health needs the token");
    assert_eq!(sb.call("hostile", "GET", "/_pome/health", None).await.status, 200);
    server.api("POST", &format!("/v1/sandboxes/{}/finalize", sb.id), None).await;
    let r = sb.call_with("hostile", "GET", "/notes", None, stranger).await;
    assert_eq!(r.status, 404, "a closed sandbox looks like no sandbox to a stranger: {}", r.text);
    assert_eq!(sb.call("hostile", "GET", "/notes", None).await.status, 410, "its agent is told it closed");
}

#[tokio::test]
async fn keys_are_made_listed_and_revoked_and_a_key_cannot_revoke_itself() {
    let server = Server::start().await;
    let (status, made) = server.api("POST", "/v1/keys", None).await;
    assert_eq!(status, 201, "{made}");
    let (key, id) = (made["key"].as_str().unwrap().to_string(), made["id"].as_str().unwrap().to_string());
    assert!(key.starts_with("pme_"));
    let (status, _) = server.api_as(&key, "GET", "/v1/usage", None).await;
    assert_eq!(status, 200, "the new key works at once");
    let (_, list) = server.api("GET", "/v1/keys", None).await;
    assert!(list.to_string().contains(&id) && !list.to_string().contains(&key), "listed by id and prefix, never in full: {list}");
    let (status, v) = server.api_as(&key, "DELETE", &format!("/v1/keys/{id}"), None).await;
    assert_eq!((status, v["error"]["type"].as_str()), (409, Some("conflict")), "{v}");
    let (status, _) = server.api("DELETE", &format!("/v1/keys/{id}"), None).await;
    assert_eq!(status, 200);
    let (status, v) = server.api_as(&key, "GET", "/v1/usage", None).await;
    assert_eq!((status, v["error"]["type"].as_str()), (401, Some("invalid_auth")), "a revoked key stops working at once");
}
