//! Branch and rewind (issue #37): a sandbox or a finished run forks at any tape row, and the
//! world as it stood after any row can be read back, on the real server with real twin
//! components. A twin's world is its seed plus its tape, so every position is rebuilt
//! exactly, and the parent is never touched.

use std::time::Duration;

use pome_e2e::{Opts, Sandbox, Server};
use serde_json::{Value, json};

/// A tickets call as the agent (the twin reads its key from `X-Ticket-Key`).
async fn ticket(sb: &Sandbox, method: &str, path: &str, body: Option<Value>) -> pome_e2e::Reply {
    let mut req = sb.http.request(method.parse().unwrap(), format!("{}{path}", sb.base("tickets"))).header("x-ticket-key", &sb.token);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let resp = req.send().await.unwrap();
    pome_e2e::Reply { status: resp.status().as_u16(), headers: resp.headers().clone(), text: resp.text().await.unwrap() }
}

/// `n` tickets titled `<prefix> 1…n`, each answered 201; the world after each.
async fn file_tickets(sb: &Sandbox, prefix: &str, n: usize) -> Vec<Value> {
    let mut worlds = Vec::new();
    for i in 1..=n {
        let r = ticket(sb, "POST", "/tickets", Some(json!({"title": format!("{prefix} {i}")}))).await;
        assert_eq!(r.status, 201, "{}", r.text);
        worlds.push(sb.state("tickets").await);
    }
    worlds
}

fn titles(state: &Value) -> Vec<String> {
    state["tickets"].as_array().unwrap().iter().map(|t| t["title"].as_str().unwrap().to_string()).collect()
}

/// The sandbox a fork answer describes.
fn forked(server: &Server, v: &Value) -> Sandbox {
    Sandbox { id: v["id"].as_str().unwrap().into(), token: v["agent_token"].as_str().unwrap().into(), url: server.url.clone(), http: server.http.clone(), body: v.clone() }
}

#[tokio::test]
async fn a_fork_starts_from_the_parents_world_after_the_row_it_names_and_goes_its_own_way() {
    let server = Server::start().await;
    let parent = server.sandbox(&["tickets"], None).await;
    let worlds = file_tickets(&parent, "parent", 5).await;

    let (status, v) = server.api("POST", &format!("/v1/sandboxes/{}/fork", parent.id), Some(json!({"at": {"tickets": 3}}))).await;
    assert_eq!(status, 201, "{v}");
    assert_ne!(v["id"], json!(parent.id), "a fork is a new sandbox");
    assert_ne!(v["agent_token"], json!(parent.token), "with a token of its own");
    assert_eq!(v["forked_from"], json!({"sandbox_id": parent.id, "at": {"tickets": 3}}));
    assert_eq!(v["twins"], json!(["tickets"]));
    let fork = forked(&server, &v);

    assert_eq!(fork.state("tickets").await, worlds[2], "the fork's world is the parent's after row 3");
    let inherited = fork.events("tickets").await;
    assert_eq!(inherited.len(), 3);
    assert!(inherited.iter().all(|r| r["inherited"] == true), "inherited rows say so: {inherited:?}");
    let parent_tape = parent.events("tickets").await;
    for (mine, theirs) in inherited.iter().zip(&parent_tape) {
        assert_eq!(mine["request_id"], theirs["request_id"]);
        assert_eq!(mine["ts"], theirs["ts"], "an inherited row keeps its recorded time");
    }

    let r = ticket(&fork, "POST", "/tickets", Some(json!({"title": "only in the fork"}))).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.json()["id"], 5, "the fork's world continues from ticket 4, the parent's row 3");
    let tape = fork.events("tickets").await;
    assert_eq!(tape[3]["seq"], 4, "the fork's own rows continue the inherited sequence");
    assert!(tape[3].get("inherited").is_none(), "its own rows are not inherited");
    assert!(tape[3]["ts"].as_str().unwrap() > tape[2]["ts"].as_str().unwrap(), "its clock continues after the row it forked at");

    assert_eq!(parent.state("tickets").await, worlds[4], "the parent is untouched");
    assert_eq!(parent.events("tickets").await.len(), 5);
    assert!(!titles(&parent.state("tickets").await).contains(&"only in the fork".to_string()));

    // Without `at`, a fork starts from now; at 0, from the seed's world.
    let (_, now) = server.api("POST", &format!("/v1/sandboxes/{}/fork", parent.id), Some(json!({}))).await;
    assert_eq!(forked(&server, &now).state("tickets").await, worlds[4]);
    assert_eq!(now["forked_from"]["at"], json!({"tickets": 5}));
    let (_, seed) = server.api("POST", &format!("/v1/sandboxes/{}/fork", parent.id), Some(json!({"at": {"tickets": 0}}))).await;
    let seed = forked(&server, &seed);
    assert_eq!(titles(&seed.state("tickets").await), ["Printer on fire"]);
    assert!(seed.events("tickets").await.is_empty());
}

#[tokio::test]
async fn the_world_after_every_row_is_the_world_the_agent_saw_there() {
    // A checkpoint after every request: positions before the newest are rebuilt from the
    // seed, the newest from its checkpoint, and both must agree with what was live.
    let limits = pome::limits::Limits { checkpoint_after: Duration::ZERO, ..Opts::default().limits };
    let server = Server::with(Opts { limits, ..Opts::default() }).await;
    let sb = server.sandbox(&["tickets"], None).await;
    let seed = sb.state("tickets").await;
    let mut worlds = vec![seed];
    worlds.extend(file_tickets(&sb, "row", 4).await);
    let r = ticket(&sb, "PATCH", "/tickets/1", Some(json!({"closed": true}))).await;
    assert_eq!(r.status, 200);
    worlds.push(sb.state("tickets").await);

    for (n, world) in worlds.iter().enumerate() {
        let r = sb.call("tickets", "GET", &format!("/_pome/state?at={n}"), None).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(&r.json(), world, "the agent's route: the world after row {n}");
        let (status, v) = server.api("GET", &format!("/v1/sandboxes/{}/state?twin=tickets&at={n}", sb.id), None).await;
        assert_eq!((status, &v), (200, world), "the control plane's route at {n}");
    }
    // Reads of the past are not requests of the agent: they are not on the tape.
    assert_eq!(sb.events("tickets").await.len(), 5);

    let r = sb.call("tickets", "GET", "/_pome/diff?from=4&to=5", None).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let diff = r.json();
    assert_eq!(diff["from"], 4);
    assert_eq!(diff["to"], 5);
    assert_eq!(diff["diff"], json!([{"path": "tickets[0].closed", "before": false, "after": true}]), "{diff}");
    let (_, whole) = server.api("GET", &format!("/v1/sandboxes/{}/diff", sb.id), None).await;
    assert_eq!(whole["from"], 0);
    assert_eq!(whole["to"], 5);
    assert_eq!(whole["diff"].as_array().unwrap().len(), 5, "four tickets filed and one closed: {whole}");

    // A fork at the newest row starts from its checkpoint.
    let (status, v) = server.api("POST", &format!("/v1/sandboxes/{}/fork", sb.id), None).await;
    assert_eq!(status, 201, "{v}");
    assert_eq!(forked(&server, &v).state("tickets").await, worlds[5]);
}

#[tokio::test]
async fn a_finished_run_forks_and_reads_at_any_row_and_the_fork_is_graded_with_its_history() {
    let server = Server::start().await;
    let md = "# File the report\n## Prompt\nFile a ticket titled \"report\".\n## Success Criteria\n\
        - [code:tickets] A ticket titled \"report\" exists\n## Config\ntwins: [tickets]\n";
    let (s, v) = server.api("POST", "/v1/tasks", Some(json!({"id": "report", "source": md}))).await;
    assert_eq!(s, 201, "{v}");
    let (_, sb) = server.api("POST", "/v1/sandboxes", Some(json!({"task_id": "report", "agent_id": "first"}))).await;
    let sb = forked(&server, &sb);
    let worlds = file_tickets(&sb, "draft", 3).await;
    let (s, fin) = server.api("POST", &format!("/v1/sandboxes/{}/finalize", sb.id), None).await;
    assert_eq!(s, 200, "{fin}");
    assert_eq!(fin["verdict"], "fail", "no ticket is titled `report`");
    let run = fin["run_id"].as_str().unwrap();

    let (s, at2) = server.api("GET", &format!("/v1/runs/{run}/state?twin=tickets&at=2"), None).await;
    assert_eq!((s, &at2), (200, &worlds[1]));
    let (_, end) = server.api("GET", &format!("/v1/runs/{run}/state"), None).await;
    assert_eq!(end, worlds[2], "without `at`, the run's final world");
    let (_, diff) = server.api("GET", &format!("/v1/runs/{run}/diff?from=2&to=3"), None).await;
    assert_eq!(diff["diff"][0]["path"], "tickets[3]", "{diff}");

    let (s, v) = server.api("POST", &format!("/v1/runs/{run}/fork"), Some(json!({"at": {"tickets": 1}, "agent_id": "second"}))).await;
    assert_eq!(s, 201, "{v}");
    assert_eq!(v["forked_from"], json!({"sandbox_id": sb.id, "run_id": run, "at": {"tickets": 1}}));
    assert_eq!(v["task_id"], "report", "a fork is graded against its parent's task");
    assert_eq!(v["agent_id"], "second");
    let fork = forked(&server, &v);
    assert_eq!(fork.state("tickets").await, worlds[0]);
    let r = ticket(&fork, "POST", "/tickets", Some(json!({"title": "report"}))).await;
    assert_eq!(r.status, 201);
    let (s, fin) = server.api("POST", &format!("/v1/sandboxes/{}/finalize", fork.id), None).await;
    assert_eq!(s, 200, "{fin}");
    assert_eq!(fin["verdict"], "pass", "{fin}");
    assert_eq!(fin["tape_rows"], 2, "the run holds the inherited row and the fork's own");
    let (_, forked_run) = server.api("GET", &format!("/v1/runs/{}", fin["run_id"].as_str().unwrap()), None).await;
    assert_eq!(forked_run["forked_from"]["run_id"], run);
    let tape = forked_run["per_twin"]["tickets"]["tape"].as_array().unwrap();
    assert_eq!(tape[0]["inherited"], true);
    assert!(tape[1].get("inherited").is_none());
    assert_eq!(forked_run["per_twin"]["tickets"]["seed"], "", "a run keeps the seed it booted from");
}

#[tokio::test]
async fn a_world_saved_as_a_seed_boots_exactly_that_world_again_and_again() {
    let server = Server::start().await;
    let sb = server.sandbox(&["tickets"], None).await;
    let worlds = file_tickets(&sb, "kept", 3).await;

    // The agent's route and the control plane's answer the same document.
    let r = sb.call("tickets", "GET", "/_pome/seed?at=2", None).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let seed = r.json();
    assert_eq!(seed["_meta"]["saved_from"], json!({"sandbox_id": sb.id, "twin": "tickets", "at": 2}));
    assert_eq!(seed["_meta"]["twin"], "tickets", "the twin says whose world it is");
    let (s, same) = server.api("GET", &format!("/v1/sandboxes/{}/seed?twin=tickets&at=2", sb.id), None).await;
    assert_eq!((s, &same), (200, &seed));

    // seed -> world -> seed -> world: every world the same state export.
    let first = server.sandbox(&["tickets"], Some(seed.clone())).await;
    assert_eq!(first.state("tickets").await, worlds[1], "the world after row 2");
    let again = first.call("tickets", "GET", "/_pome/seed", None).await.json();
    assert_eq!(again["_world"], seed["_world"], "a booted world writes the seed it came from");
    let second = server.sandbox(&["tickets"], Some(again)).await;
    assert_eq!(second.state("tickets").await, worlds[1]);
    // Counters come along: the next ticket is numbered as it would have been in the parent.
    let r = ticket(&second, "POST", "/tickets", Some(json!({"title": "next"}))).await;
    assert_eq!(r.json()["id"], 4, "{}", r.text);

    // Saved under a name, it starts sandboxes by that name.
    let (s, v) = server.api("POST", "/v1/seeds", Some(json!({"name": "after-two", "twin": "tickets", "seed": seed}))).await;
    assert_eq!(s, 201, "{v}");
    let named = server.sandbox(&["tickets"], Some(json!("after-two"))).await;
    assert_eq!(named.state("tickets").await, worlds[1]);

    // A finished run's worlds are saved the same way; without `at`, its final world.
    let (_, fin) = server.api("POST", &format!("/v1/sandboxes/{}/finalize", sb.id), None).await;
    let run = fin["run_id"].as_str().unwrap();
    let (s, end) = server.api("GET", &format!("/v1/runs/{run}/seed"), None).await;
    assert_eq!(s, 200, "{end}");
    assert_eq!(end["_meta"]["saved_from"], json!({"run_id": run, "twin": "tickets", "at": 3}));
    assert_eq!(server.sandbox(&["tickets"], Some(end)).await.state("tickets").await, worlds[2]);
}

#[tokio::test]
async fn a_seed_that_cannot_be_is_refused_with_where_it_went_wrong() {
    let server = Server::start().await;
    let sb = server.sandbox(&["tickets"], None).await;
    file_tickets(&sb, "t", 1).await;
    let mut seed = sb.call("tickets", "GET", "/_pome/seed", None).await.json();

    // An edit that breaks the world is named by its path, as any seed mistake is.
    let mut broken = seed.clone();
    broken["_world"]["tickets"] = json!("many");
    let (s, v) = server.api("POST", "/v1/sandboxes", Some(json!({"twins": ["tickets"], "seed": broken}))).await;
    assert_eq!(s, 422, "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("_world.tickets"), "{v}");
    seed["_meta"]["twin"] = json!("github");
    let (s, v) = server.api("POST", "/v1/seeds", Some(json!({"name": "x", "twin": "tickets", "seed": seed}))).await;
    assert_eq!(s, 422, "a world of another twin: {v}");

    let r = sb.call("tickets", "GET", "/_pome/seed?at=2", None).await;
    assert_eq!(r.status, 422, "past the tape: {}", r.text);
    let r = sb.call("tickets", "GET", "/_pome/seed?at=last", None).await;
    assert_eq!(r.status, 422, "{}", r.text);
    let (s, v) = server.api("GET", &format!("/v1/sandboxes/{}/seed?when=now", sb.id), None).await;
    assert_eq!(s, 422, "{v}");
    let (s, v) = server.api("POST", "/v1/seeds", Some(json!({"name": "", "twin": "tickets", "seed": {}}))).await;
    assert_eq!(s, 422, "{v}");

    let stranger = "pme_another_team_entirely";
    server.another_team("another", stranger).await;
    let (s, v) = server.api_as(stranger, "GET", &format!("/v1/sandboxes/{}/seed", sb.id), None).await;
    assert_eq!(s, 404, "another team's world is not there: {v}");
}

#[tokio::test]
async fn a_world_too_large_to_boot_again_or_nested_past_reason_is_refused_and_the_neighbour_serves_on() {
    // A seed limit just above the tickets twin's default world written as a seed.
    let limits = pome::limits::Limits { seed_bytes: 600, ..Opts::default().limits };
    let server = Server::with(Opts { limits, ..Opts::default() }).await;
    let sb = server.sandbox(&["tickets"], None).await;
    let neighbour = server.sandbox(&["tickets"], None).await;
    let r = sb.call("tickets", "GET", "/_pome/seed", None).await;
    assert_eq!(r.status, 200, "the default world fits: {}", r.text);
    file_tickets(&sb, "a long enough title to push the world past the limit", 6).await;

    let r = sb.call("tickets", "GET", "/_pome/seed", None).await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(r.json()["error"]["details"]["error"], "seed_too_large", "{}", r.text);

    // A world nested deeper than any parser should follow is refused before a twin sees it.
    let deep = format!("{{\"twins\": [\"tickets\"], \"seed\": {{\"_world\": {}0{}}}}}", "[".repeat(100_000), "]".repeat(100_000));
    let resp = server.http.post(format!("{}/v1/sandboxes", server.url)).header("x-api-key", pome_e2e::API_KEY).header("content-type", "application/json").body(deep).send().await.unwrap();
    let status = resp.status().as_u16();
    let body: Value = resp.json().await.unwrap();
    assert!(status == 400 || status == 413 || status == 422, "{status} {body}");
    assert!(body["error"]["message"].is_string(), "in the error envelope: {body}");

    let r = ticket(&neighbour, "POST", "/tickets", Some(json!({"title": "unaffected"}))).await;
    assert_eq!(r.status, 201, "{}", r.text);
}

#[tokio::test]
async fn forks_and_positions_that_cannot_be_are_refused_clearly() {
    let server = Server::with(Opts { quota: 2, ..Opts::default() }).await;
    let sb = server.sandbox(&["tickets"], None).await;
    file_tickets(&sb, "t", 2).await;
    let fork = |body: Value| {
        let (server, id) = (&server, sb.id.clone());
        async move { server.api("POST", &format!("/v1/sandboxes/{id}/fork"), Some(body)).await }
    };

    let (s, v) = fork(json!({"at": {"tickets": 3}})).await;
    assert_eq!((s, v["error"]["type"].as_str()), (422, Some("validation_failed")), "{v}");
    assert_eq!(v["error"]["details"], json!({"field": "at", "twin": "tickets", "rows": 2}));
    let (s, v) = fork(json!({"at": {"github": 1}})).await;
    assert_eq!(s, 422, "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("not a twin of this sandbox"), "{v}");
    let (s, v) = fork(json!({"at": {"tickets": -1}})).await;
    assert_eq!(s, 422, "{v}");
    let (s, v) = fork(json!({"when": "now"})).await;
    assert_eq!(s, 422, "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("unknown field `when`"), "{v}");
    let (s, v) = fork(json!({"task_id": "nope"})).await;
    assert_eq!(s, 422, "{v}");

    let r = sb.call("tickets", "GET", "/_pome/state?at=9", None).await;
    assert_eq!(r.status, 422, "{}", r.text);
    let r = sb.call("tickets", "GET", "/_pome/state?at=one", None).await;
    assert_eq!(r.status, 422, "{}", r.text);
    let r = sb.call("tickets", "GET", "/_pome/diff?from=2&to=1", None).await;
    assert_eq!(r.status, 422, "{}", r.text);
    let (s, v) = server.api("GET", &format!("/v1/sandboxes/{}/state?twin=github", sb.id), None).await;
    assert_eq!(s, 404, "{v}");
    let (s, v) = server.api("GET", &format!("/v1/sandboxes/{}/state?at=x", sb.id), None).await;
    assert_eq!((s, v["error"]["type"].as_str()), (422, Some("validation_failed")), "a query that does not fit is in the error envelope: {v}");

    // A fork takes a slot of its team's quota like any sandbox.
    let (s, v) = fork(json!({})).await;
    assert_eq!(s, 201, "{v}");
    let (s, v) = fork(json!({})).await;
    assert_eq!((s, v["error"]["type"].as_str()), (402, Some("quota_exceeded")), "{v}");

    // Another team's sandbox is not there; a closed one is gone.
    let stranger = "pme_another_team_entirely";
    server.another_team("another", stranger).await;
    let (s, v) = server.api_as(stranger, "POST", &format!("/v1/sandboxes/{}/fork", sb.id), None).await;
    assert_eq!(s, 404, "{v}");
    let (s, v) = server.api_as(stranger, "GET", &format!("/v1/sandboxes/{}/state?at=1", sb.id), None).await;
    assert_eq!(s, 404, "{v}");
    let (s, _) = server.api("POST", &format!("/v1/sandboxes/{}/finalize", sb.id), None).await;
    assert_eq!(s, 200);
    let (s, v) = fork(json!({})).await;
    assert_eq!((s, v["error"]["type"].as_str()), (410, Some("session_expired")), "{v}");
}

#[tokio::test]
async fn a_fork_comes_back_after_kill_9_with_its_inherited_rows_and_its_own() {
    use pome_e2e::tickets::{Sbx, create, get, new_ticket};
    let data = tempfile::tempdir().unwrap();
    let args = ["--durability", "sync", "--twins-dir", pome_e2e::hostile_dir().to_str().unwrap()].map(String::from);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let serve = pome_e2e::ServeProcess::start(data.path(), &args).await;
    let http = reqwest::Client::new();
    let parent = create(&http, &serve.url, &["tickets"]).await;
    for i in 1..=3 {
        assert_eq!(new_ticket(&http, &serve.url, &parent, &format!("parent {i}"), &format!("p{i}")).await.unwrap().0, 201);
    }
    let r = http.post(format!("{}/v1/sandboxes/{}/fork", serve.url, parent.id)).header("x-api-key", pome_e2e::API_KEY).json(&json!({"at": {"tickets": 2}})).send().await.unwrap();
    assert_eq!(r.status(), 201);
    let v: Value = r.json().await.unwrap();
    let fork = Sbx { id: v["id"].as_str().unwrap().into(), token: v["agent_token"].as_str().unwrap().into() };
    assert_eq!(new_ticket(&http, &serve.url, &fork, "fork 1", "f1").await.unwrap().0, 201);
    let (_, before) = get(&http, &serve.url, &fork, "/_pome/state").await;
    serve.kill9();

    let serve = pome_e2e::ServeProcess::start(data.path(), &args).await;
    let (status, after) = get(&http, &serve.url, &fork, "/_pome/state").await;
    assert_eq!(status, 200, "the fork is back, with its token: {after}");
    assert_eq!(after, before, "its world is the one its tape rebuilds");
    let (_, tape) = get(&http, &serve.url, &fork, "/_pome/events").await;
    let marks: Vec<(u64, bool)> = tape.as_array().unwrap().iter().map(|r| (r["seq"].as_u64().unwrap(), r["inherited"] == true)).collect();
    assert_eq!(marks, [(1, true), (2, true), (3, false)]);
    let (_, parent_state) = get(&http, &serve.url, &parent, "/_pome/state").await;
    assert_eq!(titles(&parent_state), ["Printer on fire", "parent 1", "parent 2", "parent 3"], "the parent came back untouched");
    serve.stop();
}
