//! Linear lines of `make bench`: an `issues(filter:…, first: 50)` query with nested assignee,
//! labels and state over a team of 200 issues, and `issueCreate`, at 1 and 64 connections;
//! memory per idle sandbox on the default world, untouched and after one GraphQL request.
//!
//! The issues line sends the same request again and again on an unchanged world, so after the
//! first it is answered from the twin's answer cache: it measures a client polling a view, not
//! executing the document (which renders 50 issues in about 2 ms).

use serde_json::{Value, json};

use crate::{Server, wrk};

/// 200 issues in ENG: every state, two assignees, labels on every other issue.
fn team_seed(n: usize) -> Value {
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
        "issues": issues
    })
}

const ISSUES_QUERY: &str = "query Open($first: Int) { issues(first: $first, filter: {team: {key: {eq: \"ENG\"}}, state: {type: {nin: [\"completed\", \"canceled\"]}}}) { nodes { id identifier title priority assignee { id name email } labels { nodes { id name color } } state { id name type } } pageInfo { hasNextPage endCursor } } }";
const CREATE_QUERY: &str = "mutation Create($input: IssueCreateInput!) { issueCreate(input: $input) { success lastSyncId issue { id identifier title state { name } } } }";

fn post_script(body: &Value) -> String {
    // Lua long brackets: the JSON needs no escaping.
    format!("wrk.method = \"POST\"\nwrk.body = [==[{body}]==]\nwrk.headers[\"Content-Type\"] = \"application/json\"\n")
}

pub async fn run(server: &Server) {
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("list.lua");
    std::fs::write(&list, post_script(&json!({"query": ISSUES_QUERY, "variables": {"first": 50}, "operationName": "Open"}))).unwrap();
    let create = dir.path().join("create.lua");
    std::fs::write(&create, post_script(&json!({"query": CREATE_QUERY, "variables": {"input": {"teamId": "team_eng", "title": "Load test issue", "description": "created by wrk"}}}))).unwrap();
    let big = json!({"twins": ["linear"], "seed": team_seed(200)});
    let default = json!({"twins": ["linear"]});
    let cases = [
        ("issues(filter, first: 50) nested, of 200", &big, &list),
        ("issueCreate (default world)", &default, &create),
    ];
    for (label, body, script) in cases {
        for conns in [1u32, 64] {
            let sb = server.create(body).await;
            let id = sb["id"].as_str().unwrap();
            let r = wrk(&format!("{}/s/{id}/linear/graphql", server.url), sb["agent_token"].as_str().unwrap(), conns, Some(script));
            crate::report(&format!("linear {label}"), conns, &r);
            server.discard(id).await;
        }
    }
    memory(server, false).await;
    memory(server, true).await;
}

/// Resident memory per idle sandbox on the default world, over 1,000 sandboxes: untouched,
/// or after each answered one GraphQL query (the twin's schema and caches are then in use).
async fn memory(server: &Server, touched: bool) {
    let body = json!({"twins": ["linear"]});
    let query = json!({"query": "{ viewer { id name } issues(first: 5) { nodes { identifier title state { name } } } }"});
    let warm = server.create(&body).await;
    server.discard(warm["id"].as_str().unwrap()).await;
    let base = server.rss_kib();
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
    let rss = server.rss_kib();
    let what = if touched { "after one query" } else { "untouched" };
    println!("memory   1000 idle linear sandboxes ({what}): {:>7.1} KiB per sandbox", rss.saturating_sub(base) as f64 / 1000.0);
    for id in made {
        server.discard(&id).await;
    }
}
