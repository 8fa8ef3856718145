//! What one sandbox, team or token can see of another: nothing.

use pome_e2e::Server;
use serde_json::json;

#[tokio::test]
async fn another_teams_sandbox_is_404_and_its_runs_are_invisible() {
    let server = Server::start().await;
    server.another_team("other", "pme_other_team").await;

    let sb = server.sandbox(&["hostile"], None).await;
    for (method, path) in [("GET", String::new()), ("POST", "/heartbeat".into()), ("POST", "/finalize".into()), ("DELETE", String::new())] {
        let (status, v) = server.api_as("pme_other_team", method, &format!("/v1/sandboxes/{}{path}", sb.id), None).await;
        assert_eq!(status, 404, "{method} {path}: {v}");
    }
    let (_, list) = server.api_as("pme_other_team", "GET", "/v1/sandboxes", None).await;
    assert_eq!(list["data"], json!([]));
    let (_, usage) = server.api_as("pme_other_team", "GET", "/v1/usage", None).await;
    assert_eq!(usage["sessions_used"], 0, "quota is counted per team");

    let (_, fin) = server.api("POST", &format!("/v1/sandboxes/{}/finalize", sb.id), None).await;
    let run = fin["run_id"].as_str().unwrap();
    let (status, _) = server.api_as("pme_other_team", "GET", &format!("/v1/runs/{run}"), None).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn a_sandbox_token_only_opens_its_own_sandbox() {
    let server = Server::start().await;
    let a = server.sandbox(&["hostile"], None).await;
    let b = server.sandbox(&["hostile"], None).await;

    let bearer_a = format!("Bearer {}", a.token);
    let r = b.call_with("hostile", "GET", "/notes", None, Some(&bearer_a)).await;
    assert_eq!(r.status, 401, "A's token on B: {}", r.text);
    assert_eq!(r.json(), json!({"error": "unauthorized"}), "refused in the twin's own shape");
    let r = b.call_with("hostile", "GET", "/notes", None, None).await;
    assert_eq!(r.status, 401);
    let r = b.call_with("hostile", "GET", "/notes", None, Some(&format!("Bearer {}", pome_e2e::API_KEY))).await;
    assert_eq!(r.status, 401, "the team key is not an agent token");
    assert!(b.events("hostile").await.is_empty(), "refused requests are not tape rows");

    // Every form the twin declares (this one declares all that real clients send) is accepted.
    for style in [format!("Bearer {}", b.token), format!("token {}", b.token), b.token.clone()] {
        assert_eq!(b.call_with("hostile", "GET", "/notes", None, Some(&style)).await.status, 200, "{style}");
    }

    // The token dies with its sandbox.
    server.api("POST", &format!("/v1/sandboxes/{}/finalize", b.id), None).await;
    assert_eq!(b.call("hostile", "GET", "/notes", None).await.status, 410);
}

#[tokio::test]
async fn state_never_crosses_sandboxes_and_the_same_seed_is_the_same_world() {
    let server = Server::start().await;
    let seed = json!({"greeting": "hi there", "_meta": {"version": 1}});
    let a = server.sandbox(&["hostile"], Some(seed.clone())).await;
    let b = server.sandbox(&["hostile"], Some(seed)).await;
    assert_eq!(a.state("hostile").await, b.state("hostile").await, "same seed, same world");
    assert_eq!(a.state("hostile").await["greeting"], "hi there");

    a.call("hostile", "POST", "/notes", Some(json!({"text": "only in A"}))).await;
    assert_eq!(a.state("hostile").await["notes"].as_array().unwrap().len(), 1);
    assert_eq!(b.state("hostile").await["notes"], json!([]), "a write in A is invisible in B");

    let c = server.sandbox(&["hostile"], None).await;
    assert_eq!(c.state("hostile").await["greeting"], "hello", "the default world");
}
