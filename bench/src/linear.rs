//! Linear lines of `make bench`: an `issues(filter:…, first: 50)` query with nested assignee,
//! labels and state over a team of 200 issues, and `issueCreate`, at 1 and 64 connections;
//! memory per idle sandbox on the default world, untouched and after one GraphQL request.
//!
//! The issues line sends the same request again and again on an unchanged world, so after the
//! first it is answered from the twin's answer cache: it measures a client polling a view. The
//! "executed" line beside it sends the same document with a variable that differs on every
//! request (a state type no state has, in the filter's `nin`), so the answer is the same but no
//! answer cache can give it: every request is parsed, its variables coerced, the 200 issues
//! filtered and paged, and the answer written, with each issue's JSON copied from the twin's
//! memo of objects its earlier requests rendered (`twins/linear/src/memo.rs`). The last line,
//! "all rendered", also reads the variable inside each issue's selection (a label
//! filter that excludes nothing), so no object may be copied: the worst case, a client whose
//! every request renders every field afresh.

use serde_json::{Value, json};

use crate::{Server, wrk};

/// 200 issues in ENG: every state, two assignees, labels on every other issue.
pub(crate) fn team_seed(n: usize) -> Value {
    let states = ["Backlog", "Todo", "In Progress", "Done", "Canceled"];
    let issues: Vec<Value> = (0..n)
        .map(|i| {
            let mut issue = json!({"team": "ENG", "title": format!("Issue number {i}"), "description": "Seeded for the benchmark.",
                                   "state": states[i % 5], "priority": i % 5, "creator": "admin@pome-twin.test"});
            if i % 3 != 0 {
                issue["assignee"] = json!(if i % 2 == 0 { "dev@pome-twin.test" } else { "admin@pome-twin.test" });
            }
            if i % 2 == 0 {
                issue["labels"] = json!(if i % 4 == 0 { json!(["Bug", "Feature"]) } else { json!(["Bug"]) });
            }
            issue
        })
        .collect();
    json!({
        "organization": {"id": "org_pome", "name": "Pome Twin", "urlKey": "pome-twin"},
        "users": [
            {"id": "user_admin", "email": "admin@pome-twin.test", "name": "Admin User", "displayName": "Admin", "admin": true},
            {"id": "user_dev", "email": "dev@pome-twin.test", "name": "Developer", "displayName": "Dev"}
        ],
        "teams": [{"id": "team_eng", "key": "ENG", "name": "Engineering", "states": [
            {"id": "state_backlog", "name": "Backlog", "type": "backlog", "position": 0},
            {"id": "state_todo", "name": "Todo", "type": "unstarted", "position": 1},
            {"id": "state_progress", "name": "In Progress", "type": "started", "position": 2},
            {"id": "state_done", "name": "Done", "type": "completed", "position": 3},
            {"id": "state_canceled", "name": "Canceled", "type": "canceled", "position": 4}
        ]}],
        "labels": [{"id": "label_bug", "name": "Bug", "color": "#eb5757"}, {"id": "label_feature", "name": "Feature", "color": "#5e6ad2"}],
        "issues": issues,
        // A 5 s wrk run sends far more than Linear's 5,000 requests an hour: raised as Linear
        // support raises them for a load test, so the line measures the twin, not its limits.
        "rateLimits": {"requestsPerHour": 1_000_000_000u64, "complexityPerHour": 1_000_000_000u64}
    })
}

const ISSUES_QUERY: &str = "query Open($first: Int) { issues(first: $first, filter: {team: {key: {eq: \"ENG\"}}, state: {type: {nin: [\"completed\", \"canceled\"]}}}) { nodes { id identifier title priority assignee { id name email } labels { nodes { id name color } } state { id name type } } pageInfo { hasNextPage endCursor } } }";
const CREATE_QUERY: &str = "mutation Create($input: IssueCreateInput!) { issueCreate(input: $input) { success lastSyncId issue { id identifier title state { name } } } }";

/// The issues document with a variable in the filter that matches nothing, so a fresh value
/// changes the request but not the answer.
const ISSUES_VARIED: &str = "query Open($first: Int, $nonce: String) { issues(first: $first, filter: {team: {key: {eq: \"ENG\"}}, state: {type: {nin: [\"completed\", \"canceled\", $nonce]}}}) { nodes { id identifier title priority assignee { id name email } labels { nodes { id name color } } state { id name type } } pageInfo { hasNextPage endCursor } } }";
/// The same, with the variable read inside each issue too (no label has that name).
const ISSUES_RENDERED: &str = "query Open($first: Int, $nonce: String) { issues(first: $first, filter: {team: {key: {eq: \"ENG\"}}, state: {type: {nin: [\"completed\", \"canceled\", $nonce]}}}) { nodes { id identifier title priority assignee { id name email } labels(filter: {name: {neq: $nonce}}) { nodes { id name color } } state { id name type } } pageInfo { hasNextPage endCursor } } }";

fn post_script(body: &Value) -> String {
    // Lua long brackets: the JSON needs no escaping.
    format!("wrk.method = \"POST\"\nwrk.body = [==[{body}]==]\nwrk.headers[\"Content-Type\"] = \"application/json\"\n")
}

/// A script posting `body` with `"NONCE"` replaced by a value no other request of the run
/// has (each wrk thread numbers its requests, and the thread's number is part of it).
fn varied_script(body: &Value) -> String {
    let text = body.to_string();
    let (head, tail) = text.split_once("\"NONCE\"").expect("the body has a NONCE");
    format!(
        "local threads = 0\nfunction setup(thread)\n  thread:set(\"tid\", threads)\n  threads = threads + 1\nend\n\
         local n = 0\nwrk.method = \"POST\"\nwrk.headers[\"Content-Type\"] = \"application/json\"\n\
         function request()\n  n = n + 1\n  return wrk.format(nil, nil, nil, [==[{head}]==] .. '\"n' .. tid .. '-' .. n .. '\"' .. [==[{tail}]==])\nend\n"
    )
}

pub async fn run(server: &Server) {
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("list.lua");
    std::fs::write(&list, post_script(&json!({"query": ISSUES_QUERY, "variables": {"first": 50}, "operationName": "Open"}))).unwrap();
    let varied = dir.path().join("varied.lua");
    std::fs::write(&varied, varied_script(&json!({"query": ISSUES_VARIED, "variables": {"first": 50, "nonce": "NONCE"}, "operationName": "Open"}))).unwrap();
    let rendered = dir.path().join("rendered.lua");
    std::fs::write(&rendered, varied_script(&json!({"query": ISSUES_RENDERED, "variables": {"first": 50, "nonce": "NONCE"}, "operationName": "Open"}))).unwrap();
    let create = dir.path().join("create.lua");
    std::fs::write(&create, post_script(&json!({"query": CREATE_QUERY, "variables": {"input": {"teamId": "team_eng", "title": "Load test issue", "description": "created by wrk"}}}))).unwrap();
    let big = json!({"twins": ["linear"], "seed": team_seed(200)});
    let empty = json!({"twins": ["linear"], "seed": team_seed(0)});
    let cases = [
        ("issues(filter, first: 50) nested, of 200", &big, &list),
        ("issues(filter, first: 50) nested, of 200, executed", &big, &varied),
        ("issues(filter, first: 50) nested, of 200, all rendered", &big, &rendered),
        ("issueCreate (a team with no issues)", &empty, &create),
    ];
    for (label, body, script) in cases {
        for conns in [1u32, 64] {
            let sb = server.create(body).await;
            let id = sb["id"].as_str().unwrap();
            if script == &varied || script == &rendered {
                same_answer(server, &sb).await;
            }
            let r = wrk(&format!("{}/s/{id}/linear/graphql", server.url), sb["agent_token"].as_str().unwrap(), conns, Some(script));
            crate::report(&format!("linear {label}"), conns, &r);
            server.discard(id).await;
        }
    }
    memory(server, false).await;
    memory(server, true).await;
}

/// The varied documents answer what the issue's document answers: fifty issues, the same.
async fn same_answer(server: &Server, sb: &Value) {
    let url = format!("{}/s/{}/linear/graphql", server.url, sb["id"].as_str().unwrap());
    let mut answers = Vec::new();
    let varied = |doc: &str| json!({"query": doc, "variables": {"first": 50, "nonce": "n0-0"}});
    for body in [json!({"query": ISSUES_QUERY, "variables": {"first": 50}}), varied(ISSUES_VARIED), varied(ISSUES_RENDERED)] {
        let resp = server.http.post(&url).header("authorization", sb["agent_token"].as_str().unwrap()).json(&body).send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 200);
        answers.push(resp.json::<Value>().await.unwrap());
    }
    assert_eq!(answers[0]["data"]["issues"]["nodes"].as_array().map(Vec::len), Some(50), "{}", answers[0]);
    assert_eq!(answers[0], answers[1], "the nonce changes the request, not the answer");
    assert_eq!(answers[0], answers[2], "the nonce changes the request, not the answer");
}

/// Resident memory per idle sandbox on the default world, over 1,000 sandboxes: untouched,
/// or after each answered one GraphQL query (each instance has then read the twin's schema
/// tables: pages shared by all, which RSS counts once per sandbox and PSS once in all).
async fn memory(server: &Server, touched: bool) {
    let body = json!({"twins": ["linear"]});
    let query = json!({"query": "{ viewer { id name } issues(first: 5) { nodes { identifier title state { name } } } }"});
    let warm = server.create(&body).await;
    server.discard(warm["id"].as_str().unwrap()).await;
    let base = server.memory();
    let mut made = Vec::with_capacity(1000);
    for _ in 0..1000 {
        let sb = server.create(&body).await;
        if touched {
            let resp = server
                .http
                .post(format!("{}/s/{}/linear/graphql", server.url, sb["id"].as_str().unwrap()))
                .header("authorization", sb["agent_token"].as_str().unwrap())
                .json(&query)
                .send()
                .await
                .unwrap();
            assert_eq!(resp.status().as_u16(), 200, "{}", resp.text().await.unwrap_or_default());
        }
        made.push(sb["id"].as_str().unwrap().to_string());
    }
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let what = if touched { "after one query" } else { "untouched" };
    println!("memory   1000 idle linear sandboxes ({what}): {}", server.memory().per_sandbox(base, 1000));
    for id in made {
        server.discard(&id).await;
    }
}
