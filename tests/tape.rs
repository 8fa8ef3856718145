//! The tape: what each row holds, what it hides, and that replaying it reproduces every
//! response byte for byte.

use pome_e2e::Server;
use serde_json::json;

#[tokio::test]
async fn rows_record_the_request_the_response_and_what_changed() {
    let server = Server::start().await;
    let sb = server.sandbox(&["hostile"], None).await;
    sb.call("hostile", "POST", "/notes?x=1", Some(json!({"text": "hello"}))).await;
    sb.call("hostile", "GET", "/notes", None).await;
    let unsupported = sb.call("hostile", "GET", "/no/such/route", None).await;
    assert_eq!(unsupported.status, 501);

    let rows = sb.events("hostile").await;
    assert_eq!(rows.len(), 3);
    let seqs: Vec<u64> = rows.iter().map(|r| r["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, [1, 2, 3]);
    let create = &rows[0];
    assert_eq!(create["method"], "POST");
    assert_eq!(create["path"], "/notes");
    assert_eq!(create["query"], "x=1");
    assert_eq!(create["status"], 201);
    assert_eq!(create["action"], "notes.create");
    assert_eq!(create["fidelity"], "semantic");
    assert_eq!(create["state_mutation"], true);
    assert_eq!(create["state_delta"], json!([{"entity": "note", "id": "1", "before": null, "after": {"id": 1, "text": "hello"}}]));
    assert!(create["ts"].as_str().unwrap().ends_with('Z'));
    assert!(create["request_id"].as_str().unwrap().starts_with("req_"));
    assert_eq!(rows[1]["state_mutation"], false);
    assert_eq!(rows[2]["fidelity"], "unsupported");
    assert!(rows[0]["ts"].as_str() < rows[1]["ts"].as_str(), "virtual time moves forward");
}

#[tokio::test]
async fn a_twin_call_answers_with_its_request_id_and_its_row_carries_it() {
    let server = Server::start().await;
    let sb = server.sandbox(&["hostile"], None).await;
    let call = |rid: Option<&str>| {
        let mut req = server.http.get(format!("{}/notes", sb.base("hostile"))).bearer_auth(&sb.token);
        if let Some(rid) = rid {
            req = req.header("x-request-id", rid);
        }
        req.send()
    };
    let answered = |r: &reqwest::Response| r.headers()["x-request-id"].to_str().unwrap().to_string();
    let given = call(Some("trace-42")).await.unwrap();
    assert_eq!(given.status(), 200);
    assert_eq!(answered(&given), "trace-42", "the caller's own id comes back");
    let fresh = call(None).await.unwrap();
    let made = answered(&fresh);
    assert!(made.starts_with("req_"), "{made}");
    let rows = sb.events("hostile").await;
    assert_eq!(rows[0]["request_id"], "trace-42");
    assert_eq!(rows[1]["request_id"], made.as_str());
    // `/s/` names no sandbox: the router's answer, not a twin's.
    let bare = server.http.get(format!("{}/s/", server.url)).send().await.unwrap();
    assert_eq!(bare.status(), 404);
    assert!(answered(&bare).starts_with("req_"));
}

#[tokio::test]
async fn credentials_never_reach_the_twin_or_the_tape() {
    let server = Server::start().await;
    let sb = server.sandbox(&["hostile"], None).await;
    let resp = server
        .http
        .post(format!("{}/notes?token={}", sb.base("hostile"), sb.token))
        .header("authorization", format!("Bearer {}", sb.token))
        .header("x-api-key", pome_e2e::API_KEY)
        .header("cookie", "session=abc")
        .header("x-echo", format!("my token is {}", sb.token))
        .json(&json!({"text": format!("leak {}", sb.token)}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 201);
    let state = sb.state("hostile").await;
    assert_eq!(state["notes"][0]["text"], "leak [redacted]", "the twin saw the redacted body");

    let rows = serde_json::to_string(&sb.events("hostile").await).unwrap();
    assert!(!rows.contains(&sb.token), "the token appears on the tape: {rows}");
    assert!(!rows.contains(pome_e2e::API_KEY));
    assert!(!rows.contains("session=abc"));
    assert!(rows.contains("[redacted]"));
}

#[tokio::test]
async fn replaying_a_tape_on_a_fresh_store_gives_identical_bytes() {
    let server = Server::start().await;
    let twins: Vec<String> = server.app().twins.keys().cloned().collect();
    for twin in twins {
        let sb = server.sandbox(&[&twin], None).await;
        // A mix of reads, writes and unknown routes; the hostile twin's notes carry the
        // virtual time, so a replay at other times would differ.
        let calls: &[(&str, &str, Option<serde_json::Value>)] = match twin.as_str() {
            "hostile" => &[("POST", "/notes", Some(json!({"text": "a"}))), ("GET", "/notes", None), ("POST", "/notes", Some(json!({"text": "b"}))), ("GET", "/nope", None)],
            "github" => &[
                ("GET", "/repos/acme/api/issues", None),
                ("POST", "/repos/acme/api/issues", Some(json!({"title": "Replay me", "body": "x"}))),
                ("POST", "/repos/acme/api/issues/1/comments", Some(json!({"body": "noted"}))),
                ("GET", "/repos/acme/api/issues?state=all&per_page=1", None),
            ],
            "slack" => &[
                ("POST", "/api/conversations.list", None),
                ("POST", "/api/chat.postMessage", Some(json!({"channel": "general", "text": "hi"}))),
                ("POST", "/api/conversations.history", Some(json!({"channel": "general"}))),
            ],
            "tickets" => &[("POST", "/tickets", Some(json!({"title": "Replay me"}))), ("PATCH", "/tickets/1", Some(json!({"closed": true}))), ("GET", "/tickets", None)],
            "stripe" => &[("GET", "/v1/customers", None), ("GET", "/v1/balance", None), ("GET", "/v1/nope", None)],
            "gmail" => &[("GET", "/gmail/v1/users/me/profile", None), ("GET", "/gmail/v1/users/me/labels", None), ("GET", "/gmail/v1/users/me/messages", None)],
            "linear" => &[("POST", "/graphql", Some(json!({"query": "{ viewer { id name } }"}))), ("POST", "/graphql", Some(json!({"query": "{ teams { nodes { id key } } }"})))],
            other => panic!("no calls written for the {other} twin: add some above"),
        };
        // Each twin takes the token in the form it declares.
        let credentials = &server.app().twins[&twin].description.credentials;
        for (method, path, body) in calls {
            let mut req = sb.http.request(method.parse().unwrap(), format!("{}{path}", sb.base(&twin)));
            req = match credentials.first() {
                Some(pome_contract::Credential::Header(name)) => req.header(name.as_str(), &sb.token),
                _ => req.bearer_auth(&sb.token),
            };
            if let Some(b) = body {
                req = req.json(b);
            }
            req.send().await.unwrap();
        }
        let rows: Vec<pome::tape::TapeRow> = serde_json::from_value(serde_json::Value::Array(sb.events(&twin).await)).unwrap();
        assert_eq!(rows.len(), calls.len());

        let app = server.app();
        let image = app.twins[&twin].clone();
        let seed = app.seeds.get(&app.rt, &image, "").await.unwrap();
        // The tape recorded what was answered: the statuses the calls got, in order.
        assert!(rows.iter().all(|r| r.status >= 200), "{twin}: {rows:?}");
        assert!(rows.iter().any(|r| r.status < 300), "{twin}: some call succeeded");
        let mismatches = pome::store::replay(app.rt.clone(), image, seed, &rows).await.unwrap();
        assert!(mismatches.is_empty(), "{twin}: replay differs: {mismatches:#?}");
    }
}
