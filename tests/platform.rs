//! A twin is a plug-in (issue 9). A third party's twin, built against the published contract
//! with the SDK and dropped into `--twins-dir`, gets every host feature with no host change:
//! it is served under its own name, accepts only the credential form it declares, gives the
//! agent the environment it declares, has its tasks graded by its own checks, and has its
//! signed webhooks delivered — only where the operator allows.

use std::sync::{Arc, Mutex};

use hmac::{Hmac, Mac};
use pome_e2e::{Server, workspace};
use serde_json::{Value, json};

/// A webhook receiver on loopback that records what it is sent and answers `status`.
async fn receiver(status: u16) -> (String, Arc<Mutex<Vec<(axum::http::HeaderMap, String)>>>) {
    let got: Arc<Mutex<Vec<(axum::http::HeaderMap, String)>>> = Arc::default();
    let seen = got.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: axum::http::HeaderMap, body: String| {
            let seen = seen.clone();
            async move {
                seen.lock().unwrap().push((headers, body));
                axum::http::StatusCode::from_u16(status).unwrap()
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, got)
}

fn sign(secret: &str, body: &str) -> String {
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(body.as_bytes());
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// Wait (bounded) until the twin's delivery log settles: no delivery still pending.
async fn settled(sb: &pome_e2e::Sandbox) -> Vec<Value> {
    for _ in 0..200 {
        let r = sb.call_with("tickets", "GET", "/_pome/deliveries", None, Some(&format!("Bearer {}", sb.token))).await;
        let log: Vec<Value> = serde_json::from_str(&r.text).unwrap();
        if log.iter().all(|d| d["state"] != "pending") {
            return log;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("deliveries still pending after 4 s");
}

#[tokio::test]
async fn a_third_party_twin_accepts_only_the_credential_form_it_declares_and_gives_the_agent_its_environment() {
    let server = Server::start().await;
    let sb = server.sandbox(&["tickets"], None).await;
    let env = &sb.body["agent_env"];
    assert_eq!(env["TICKETS_KEY"], json!(sb.token), "{env}");
    assert_eq!(env["TICKETS_URL"], json!(sb.base("tickets")));
    assert_eq!(env["POME_TICKETS_REST_URL"], json!(sb.base("tickets")), "the host's own names come for every twin");

    let bearer = sb.call("tickets", "GET", "/tickets", None).await;
    assert_eq!(bearer.status, 401, "Bearer is not a form this twin declares: {}", bearer.text);
    let keyed = sb.http.get(format!("{}/tickets", sb.base("tickets"))).header("x-ticket-key", &sb.token).send().await.unwrap();
    assert_eq!(keyed.status(), 200);
    let wrong = sb.http.get(format!("{}/tickets", sb.base("tickets"))).header("x-ticket-key", "tok_guess").send().await.unwrap();
    assert_eq!(wrong.status(), 401);
    assert_eq!(sb.events("tickets").await.len(), 1, "refused calls are not on the tape");
}

#[tokio::test]
async fn a_third_party_twins_webhooks_are_signed_by_it_delivered_by_the_host_and_logged() {
    // The receivers are on loopback, which the operator must allow (`--deliver-to`).
    let outbound = pome::outbound::Policy { allowed: pome::outbound::loopback(), ..pome_e2e::Opts::default().outbound };
    let server = Server::with(pome_e2e::Opts { outbound, ..pome_e2e::Opts::default() }).await;
    let (ok_url, got) = receiver(200).await;
    let (down_url, down_got) = receiver(503).await;
    let seed = json!({
        "tickets": [{"id": 1, "title": "Printer on fire", "closed": false}],
        "webhooks": [
            {"url": ok_url, "secret": "whsec_1"},
            {"url": down_url, "secret": "whsec_2"},
            {"url": "http://10.9.9.9/hook", "secret": "whsec_3"}
        ]
    });
    let sb = server.sandbox(&["tickets"], Some(seed)).await;
    let close = sb.http.patch(format!("{}/tickets/1", sb.base("tickets"))).header("x-ticket-key", &sb.token).json(&json!({"closed": true})).send().await.unwrap();
    assert_eq!(close.status(), 200);

    let log = settled(&sb).await;
    assert_eq!(log.len(), 3, "{log:?}");
    let by_url = |u: &str| log.iter().find(|d| d["url"] == u).unwrap().clone();

    let ok = by_url(&ok_url);
    assert_eq!((ok["state"].as_str(), ok["event"].as_str(), ok["seq"].as_u64()), (Some("delivered"), Some("ticket.closed"), Some(1)));
    assert_eq!(ok["attempts"].as_array().unwrap().len(), 1);
    let (headers, body) = got.lock().unwrap()[0].clone();
    assert_eq!(headers["x-tickets-signature"].to_str().unwrap(), sign("whsec_1", &body), "the receiver can verify the twin's signature");
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["ticket"]["closed"], true);

    let down = by_url(&down_url);
    assert_eq!(down["state"], "failed");
    assert_eq!(down["attempts"].as_array().unwrap().len(), 3, "retried up to the policy's attempts: {down}");
    assert_eq!(down_got.lock().unwrap().len(), 3);
    assert_eq!(down["attempts"][0]["status"], 503);

    let refused = by_url("http://10.9.9.9/hook");
    assert_eq!(refused["state"], "refused", "only loopback is allowed: {refused}");
    assert!(refused["attempts"][0]["error"].as_str().unwrap().contains("--deliver-to"));

    let tape = sb.events("tickets").await;
    assert_eq!(tape[0]["deliveries"].as_array().unwrap().len(), 3, "the tape row carries what the twin asked to send");
    assert_eq!(tape[0]["deliveries"][0]["event"], "ticket.closed");
}

#[tokio::test]
async fn a_task_on_a_third_party_twin_is_graded_by_the_twins_own_checks() {
    let server = Server::start().await;
    let md = "# Close the fire ticket\n\n## Prompt\nClose ticket 1.\n\n## Success Criteria\n\
        - [code:tickets] Ticket 1 is closed\n\
        - [code:tickets] A ticket titled \"Printer on fire\" exists\n\
        - [code:tickets always-scored] `tickets.create` was never called\n\
        - [code:tickets] Ticket one is closed\n\n## Config\ntwins: [tickets]\n";
    let (s, stored) = server.api("POST", "/v1/tasks", Some(json!({"id": "fire", "source": md}))).await;
    assert_eq!(s, 201, "{stored}");
    let bindings: Vec<&str> = stored["criteria"].as_array().unwrap().iter().map(|c| c["binding"].as_str().unwrap_or("UNBOUND")).collect();
    assert_eq!(bindings, ["tickets.closed", "tickets.titled", "tape.tool_never_called", "UNBOUND"], "{stored}");

    for close in [true, false] {
        let (s, sb) = server.api("POST", "/v1/sandboxes", Some(json!({"task_id": "fire"}))).await;
        assert_eq!(s, 201, "{sb}");
        let url = format!("{}/s/{}/tickets/tickets/1", server.url, sb["id"].as_str().unwrap());
        let r = server.http.patch(url).header("x-ticket-key", sb["agent_token"].as_str().unwrap()).json(&json!({"closed": close})).send().await.unwrap();
        assert_eq!(r.status(), 200);
        let (s, fin) = server.api("POST", &format!("/v1/sandboxes/{}/finalize", sb["id"].as_str().unwrap()), None).await;
        assert_eq!(s, 200, "{fin}");
        let results = fin["criteria_results"].as_array().unwrap();
        assert_eq!(results[0]["check_id"], "tickets.closed");
        assert_eq!(results[0]["evidence"], json!({"twin": "tickets", "state": "tickets[0].closed"}), "the twin names its evidence");
        assert_eq!(results[0]["status"], if close { "passed" } else { "failed" }, "{fin}");
        assert!(results[1]["reason"].as_str().unwrap().starts_with("already_true_in_seed"), "{fin}");
        assert_eq!(results[2]["status"], "passed", "the host's tape checks work for any twin");
        assert_eq!(results[3]["status"], "unmatched", "`one` is not a number, so nothing decides it");
        assert_eq!(fin["verdict"], "incomplete", "an unmatched criterion leaves the run incomplete");
        assert_eq!(fin["score"], if close { json!(100) } else { json!(50) }, "{fin}");
    }
}

#[tokio::test]
async fn components_built_against_older_contracts_keep_loading_and_serving() {
    let rt = pome::runtime::Runtime::new(pome::limits::Limits { max_stores: 4, ..Default::default() }, None).unwrap();
    for version in ["0.1.0", "0.2.0"] {
        let file = format!("hostile-contract-{version}.wasm");
        let bytes = std::fs::read(workspace().join("tests/fixtures").join(&file)).expect("the fixture is in the repository");
        let image = rt.load(&bytes, &file).await.unwrap_or_else(|e| panic!("a {version} twin loads: {e:#}"));
        assert_eq!(image.description.contract, format!("pome:twin@{version}"));
        let mut store = rt.new_store();
        let twin = rt.instantiate(&mut store, &image).await.unwrap();
        rt.call(&mut store, async |s| twin.init(s, "").await).await.unwrap().unwrap();
        let req = pome::runtime::HttpRequest {
            method: "POST".into(),
            path: "/notes".into(),
            query: String::new(),
            headers: vec![("content-type".into(), "application/json".into())],
            body: br#"{"text": "still here"}"#.to_vec(),
            base_url: "http://h".into(),
            auth: pome::runtime::Auth::Agent,
        };
        let resp = rt.call(&mut store, async |s| twin.handle(s, &req).await).await.unwrap();
        assert_eq!(resp.status, 201, "{version}: {}", String::from_utf8_lossy(&resp.body));
        let state = rt.call(&mut store, async |s| twin.state(s).await).await.unwrap();
        assert!(state.contains("still here"), "{version}: {state}");
        // Writing a world as a seed came with 0.3.0: an older twin says it cannot.
        assert!(rt.call(&mut store, async |s| twin.export_seed(s).await).await.unwrap().is_none(), "{version}");
    }
}

#[tokio::test]
async fn a_sandbox_is_graded_by_the_task_version_it_booted_from_even_after_an_edit() {
    let server = Server::start().await;
    let v1 = "# T\n## Prompt\nClose 1.\n## Success Criteria\n- [code:tickets] Ticket 1 is closed\n## Config\ntwins: [tickets]\n";
    let (_, stored) = server.api("POST", "/v1/tasks", Some(json!({"id": "edit-me", "source": v1}))).await;
    let version = stored["version"].as_str().unwrap().to_string();
    let (_, sb) = server.api("POST", "/v1/sandboxes", Some(json!({"task_id": "edit-me"}))).await;
    let id = sb["id"].as_str().unwrap();

    let v2 = v1.replace("Ticket 1 is closed", "A ticket titled \"Nope\" exists");
    let (_, stored2) = server.api("POST", "/v1/tasks", Some(json!({"id": "edit-me", "source": v2}))).await;
    assert_ne!(stored2["version"], json!(version), "an edit is a new version");

    let url = format!("{}/s/{id}/tickets/tickets/1", server.url);
    server.http.patch(url).header("x-ticket-key", sb["agent_token"].as_str().unwrap()).json(&json!({"closed": true})).send().await.unwrap();
    let (_, fin) = server.api("POST", &format!("/v1/sandboxes/{id}/finalize"), None).await;
    assert_eq!(fin["verdict"], "pass", "graded by the version it booted from: {fin}");
    assert_eq!(fin["criteria_results"][0]["check_id"], "tickets.closed");
    let (_, run) = server.api("GET", &format!("/v1/runs/{}", fin["run_id"].as_str().unwrap()), None).await;
    assert_eq!(run["task"]["version"], json!(version));
}
