//! Rewind on every real twin (issue #37, item 7): for GitHub, Slack, Stripe, Gmail and Linear,
//! a sandbox that really wrote to its world is forked at a middle row, and the world the host
//! serves at every position is checked against a replay computed here, outside the server.
//! A twin's world is its seed plus its tape: if that is true of a twin, a fork at row N is the
//! parent's world after N, the parent's remaining rows replayed on the fork give the same
//! bytes the parent got, and the world at N written as a seed boots that world again.

use base64::Engine as _;
use pome::tape::TapeRow;
use pome_e2e::{Reply, Sandbox, Server};
use serde_json::{Value, json};

/// A request body as the twin's official clients send it.
enum Body {
    None,
    Json(Value),
    /// `application/x-www-form-urlencoded` (Stripe reads forms).
    Form(Vec<(&'static str, &'static str)>),
}

/// One call of a script. `{{k/pointer}}` anywhere in the path or the body is replaced by the
/// value at that JSON pointer in the answer to call `k` (0-based): ids the twin made up.
struct Call {
    method: &'static str,
    path: &'static str,
    body: Body,
    /// Whether the call changes the world (its tape row says `state_mutation`).
    writes: bool,
}

fn read(method: &'static str, path: &'static str, body: Body) -> Call {
    Call { method, path, body, writes: false }
}

fn write(method: &'static str, path: &'static str, body: Body) -> Call {
    Call { method, path, body, writes: true }
}

/// A message as Gmail's `messages.send` takes it: RFC 822 bytes, base64url.
fn raw_mail(to: &str, subject: &str, text: &str) -> String {
    let mail = format!("From: pome-agent@pome-twin.test\r\nTo: {to}\r\nSubject: {subject}\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n{text}\r\n");
    base64::engine::general_purpose::URL_SAFE.encode(mail)
}

/// Linear's GraphQL: a query and its variables.
fn gql(query: &str, variables: Value) -> Body {
    Body::Json(json!({"query": query, "variables": variables}))
}

/// What an agent does on each twin's default world: six calls, most of them writes, some on
/// what an earlier write made.
fn script(twin: &str) -> Vec<Call> {
    use Body::{Form, Json, None};
    match twin {
        "github" => vec![
            write("POST", "/repos/acme/api/issues", Json(json!({"title": "Checkout test is flaky", "body": "Timed out twice today.", "labels": ["bug"]}))),
            write("POST", "/repos/acme/api/issues", Json(json!({"title": "The rate limits changed"}))),
            write("POST", "/repos/acme/api/issues/{{0/number}}/comments", Json(json!({"body": "Reproduced on main."}))),
            read("GET", "/repos/acme/api/issues?state=all", None),
            write("PATCH", "/repos/acme/api/issues/{{0/number}}", Json(json!({"state": "closed", "state_reason": "completed"}))),
            write("POST", "/repos/acme/api/issues/{{1/number}}/labels", Json(json!({"labels": ["documentation"]}))),
        ],
        "slack" => vec![
            write("POST", "/api/chat.postMessage", Json(json!({"channel": "C0GENERAL1", "text": "Deploy at 3pm"}))),
            write("POST", "/api/conversations.create", Json(json!({"name": "release-2-3"}))),
            write("POST", "/api/chat.postMessage", Json(json!({"channel": "{{1/channel/id}}", "text": "Release notes go here"}))),
            write("POST", "/api/reactions.add", Json(json!({"channel": "C0GENERAL1", "timestamp": "{{0/ts}}", "name": "eyes"}))),
            read("GET", "/api/conversations.history?channel=C0GENERAL1", None),
            write("POST", "/api/chat.update", Json(json!({"channel": "C0GENERAL1", "ts": "{{0/ts}}", "text": "Deploy at 4pm"}))),
        ],
        "stripe" => vec![
            write("POST", "/v1/customers", Form(vec![("email", "ada@example.test"), ("name", "Ada Lovelace")])),
            write("POST", "/v1/products", Form(vec![("name", "Pro plan")])),
            write("POST", "/v1/prices", Form(vec![("product", "{{1/id}}"), ("unit_amount", "2000"), ("currency", "usd")])),
            read("GET", "/v1/customers?limit=3", None),
            write("POST", "/v1/customers/{{0/id}}", Form(vec![("metadata[tier]", "gold")])),
            write("POST", "/v1/customers", Form(vec![("email", "grace@example.test"), ("name", "Grace Hopper")])),
        ],
        "gmail" => vec![
            write("POST", "/gmail/v1/users/me/labels", Json(json!({"name": "Escalated", "labelListVisibility": "labelShow", "messageListVisibility": "show"}))),
            write("POST", "/gmail/v1/users/me/messages/send", Json(json!({"raw": raw_mail("bob@example.com", "Quarterly report", "The numbers are in.")}))),
            write("POST", "/gmail/v1/users/me/messages/{{1/id}}/modify", Json(json!({"addLabelIds": ["{{0/id}}"]}))),
            read("GET", "/gmail/v1/users/me/messages", None),
            write("POST", "/gmail/v1/users/me/messages/msg_support/modify", Json(json!({"addLabelIds": ["{{0/id}}"], "removeLabelIds": ["UNREAD"]}))),
            write("PATCH", "/gmail/v1/users/me/labels/{{0/id}}", Json(json!({"name": "Escalated/P1"}))),
        ],
        "linear" => vec![
            read("POST", "/graphql", gql("{ teams { nodes { id } } }", json!({}))),
            write(
                "POST",
                "/graphql",
                gql(
                    "mutation($t: String!) { issueCreate(input: {teamId: $t, title: \"Orders 500 after deploy\", priority: 1}) { success issue { id identifier } } }",
                    json!({"t": "{{0/data/teams/nodes/0/id}}"}),
                ),
            ),
            write(
                "POST",
                "/graphql",
                gql(
                    "mutation($t: String!) { issueCreate(input: {teamId: $t, title: \"Flaky login test\"}) { success issue { id identifier } } }",
                    json!({"t": "{{0/data/teams/nodes/0/id}}"}),
                ),
            ),
            write(
                "POST",
                "/graphql",
                gql("mutation($i: String!) { commentCreate(input: {issueId: $i, body: \"Rolling back now.\"}) { success comment { id } } }", json!({"i": "{{1/data/issueCreate/issue/id}}"})),
            ),
            write("POST", "/graphql", gql("mutation($i: String!) { issueUpdate(id: $i, input: {title: \"Flaky login test (CI only)\"}) { success } }", json!({"i": "{{2/data/issueCreate/issue/id}}"}))),
            read("POST", "/graphql", gql("{ issues { nodes { id title } } }", json!({}))),
        ],
        other => panic!("no script written for the {other} twin"),
    }
}

/// `text` with every `{{k/pointer}}` replaced by that value of answer `k`.
fn fill(text: &str, answers: &[Value]) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let end = start + rest[start..].find("}}").expect("an unclosed {{");
        let (k, pointer) = rest[start + 2..end].split_once('/').expect("{{k/pointer}}");
        let k: usize = k.parse().unwrap();
        let v = answers[k].pointer(&format!("/{pointer}")).unwrap_or_else(|| panic!("answer {k} has no /{pointer}: {}", answers[k]));
        out.push_str(&rest[..start]);
        out.push_str(&v.as_str().map_or_else(|| v.to_string(), str::to_string));
        rest = &rest[end + 2..];
    }
    out + rest
}

/// Send `call` as the agent, with the token in the form the twin declares first.
async fn send(server: &Server, sb: &Sandbox, twin: &str, call: &Call, answers: &[Value]) -> Reply {
    let url = format!("{}{}", sb.base(twin), fill(call.path, answers));
    let mut req = sb.http.request(call.method.parse().unwrap(), url);
    req = match server.app().twins[twin].description.credentials.first() {
        Some(pome_contract::Credential::Header(name)) => req.header(name.as_str(), &sb.token),
        _ => req.bearer_auth(&sb.token),
    };
    req = match &call.body {
        Body::None => req,
        Body::Json(v) => req.header("content-type", "application/json").body(fill(&v.to_string(), answers)),
        Body::Form(pairs) => {
            let mut form = form_urlencoded::Serializer::new(String::new());
            for (k, v) in pairs {
                form.append_pair(k, &fill(v, answers));
            }
            req.header("content-type", "application/x-www-form-urlencoded").body(form.finish())
        }
    };
    let resp = req.send().await.unwrap();
    Reply { status: resp.status().as_u16(), headers: resp.headers().clone(), text: resp.text().await.unwrap() }
}

/// Run `calls` on `twin` of `sb`, asserting each one succeeded (in the vendor's own terms too:
/// Slack answers its errors with 200 and `ok: false`, GraphQL with 200 and `errors`).
async fn run_script(server: &Server, sb: &Sandbox, twin: &str, calls: &[Call]) {
    let mut answers = Vec::new();
    for (i, call) in calls.iter().enumerate() {
        let r = send(server, sb, twin, call, &answers).await;
        let what = format!("{twin} call {i} ({} {})", call.method, call.path);
        assert!((200..300).contains(&r.status), "{what} answered {}: {}", r.status, r.text);
        let v = r.json();
        match twin {
            "slack" => assert_eq!(v["ok"], true, "{what}: {}", r.text),
            "linear" => assert!(v.get("errors").is_none() && v["data"].is_object(), "{what}: {}", r.text),
            _ => {}
        }
        answers.push(v);
    }
    let rows = tape(sb, twin).await;
    assert_eq!(rows.len(), calls.len(), "{twin}: one row per call");
    let mutations: Vec<bool> = rows.iter().map(|r| r.state_mutation).collect();
    let writes: Vec<bool> = calls.iter().map(|c| c.writes).collect();
    assert_eq!(mutations, writes, "{twin}: the writes, and only they, changed the world");
}

/// A twin's tape as rows.
async fn tape(sb: &Sandbox, twin: &str) -> Vec<TapeRow> {
    serde_json::from_value(Value::Array(sb.events(twin).await)).unwrap()
}

/// The world the host serves after `at` rows of the twin's tape.
async fn state_at(sb: &Sandbox, twin: &str, at: usize) -> Value {
    let r = sb.call(twin, "GET", &format!("/_pome/state?at={at}"), None).await;
    assert_eq!(r.status, 200, "{twin} state at {at}: {}", r.text);
    r.json()
}

/// The world after `rows`, rebuilt here from the default seed on a fresh store (no checkpoint,
/// none of the server's bookkeeping).
async fn fresh_replay(server: &Server, twin: &str, rows: &[TapeRow]) -> Value {
    let app = server.app();
    let image = app.twins[twin].clone();
    let seed = app.seeds.get(&app.rt, &image, "").await.unwrap();
    let text = pome::store::state_after(app.rt.clone(), image, seed, None, rows.to_vec()).await.unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The sandbox a fork answer describes.
fn forked(server: &Server, v: &Value) -> Sandbox {
    Sandbox { id: v["id"].as_str().unwrap().into(), token: v["agent_token"].as_str().unwrap().into(), url: server.url.clone(), http: server.http.clone(), body: v.clone() }
}

async fn fork(server: &Server, parent: &Sandbox, at: Value) -> (Value, Sandbox) {
    let (status, v) = server.api("POST", &format!("/v1/sandboxes/{}/fork", parent.id), Some(json!({"at": at}))).await;
    assert_eq!(status, 201, "fork at {at}: {v}");
    let sb = forked(server, &v);
    (v, sb)
}

/// The whole rewind story on one twin, from its default seed.
async fn rewinds_exactly(twin: &str) {
    let server = Server::start().await;
    let parent = server.sandbox(&[twin], None).await;
    let calls = script(twin);
    run_script(&server, &parent, twin, &calls).await;
    let rows = tape(&parent, twin).await;
    let (m, n) = (rows.len(), rows.len() / 2);

    // A fork at the middle row is the parent's world after it, as the host reads the past
    // and as a replay from the seed makes it.
    let (v, fork) = fork(&server, &parent, json!({twin: n})).await;
    assert_eq!(v["forked_from"], json!({"sandbox_id": parent.id, "at": {twin: n}}));
    let fork_world = fork.state(twin).await;
    assert_eq!(fork_world, state_at(&parent, twin, n).await, "{twin}: the fork's world is the parent's at row {n}");
    assert_eq!(fork_world, fresh_replay(&server, twin, &rows[..n]).await, "{twin}: and what rows 1..={n} make of the seed");
    assert_ne!(fork_world, parent.state(twin).await, "{twin}: the parent's rows after {n} wrote too, so the fork is not simply now");

    // The fork's tape begins with the parent's first N rows, marked as inherited: the same
    // requests, answers and times.
    let inherited = tape(&fork, twin).await;
    assert_eq!(inherited.len(), n, "{twin}: the fork inherits {n} rows");
    for (mine, theirs) in inherited.iter().zip(&rows) {
        assert!(mine.inherited, "{twin}: row {} is marked inherited", mine.seq);
        assert_eq!((&mine.request_id, mine.ts, mine.seq), (&theirs.request_id, theirs.ts, theirs.seq), "{twin}: an inherited row keeps its id, time and place");
        assert_eq!(&TapeRow { inherited: false, ..mine.clone() }, theirs, "{twin}: row {} is the parent's row", mine.seq);
    }

    // The rest of the parent's tape, replayed after the fork's inherited rows, is answered
    // byte for byte as the parent was answered: the fork really is the parent at row N.
    let mut continued = inherited.clone();
    continued.extend_from_slice(&rows[n..]);
    let app = server.app();
    let image = app.twins[twin].clone();
    let seed = app.seeds.get(&app.rt, &image, "").await.unwrap();
    let mismatches = pome::store::replay(app.rt.clone(), image, seed, &continued).await.unwrap();
    assert!(mismatches.is_empty(), "{twin}: the parent's rows {}..={m} answered differently after the fork's: {mismatches:#?}", n + 1);

    // Every position of the parent, 0 (the seed) to M (now), is the world a fresh replay of
    // that many rows makes; the newest is the live world.
    for k in 0..=m {
        assert_eq!(state_at(&parent, twin, k).await, fresh_replay(&server, twin, &rows[..k]).await, "{twin}: the world after row {k}");
    }
    assert_eq!(state_at(&parent, twin, m).await, parent.state(twin).await, "{twin}: the newest position is now");
    assert_ne!(state_at(&parent, twin, 0).await, parent.state(twin).await, "{twin}: the script changed the world");

    // The world at row N written as a seed boots a new sandbox into that world, and that
    // sandbox's own seed boots it again: a seed is another way to stand at row N.
    let r = parent.call(twin, "GET", &format!("/_pome/seed?at={n}"), None).await;
    assert_eq!(r.status, 200, "{twin}: seed at {n}: {}", r.text);
    let seed = r.json();
    assert_eq!(seed["_meta"]["saved_from"], json!({"sandbox_id": parent.id, "twin": twin, "at": n}));
    let first = server.sandbox(&[twin], Some(seed.clone())).await;
    assert_eq!(first.state(twin).await, fork_world, "{twin}: a sandbox from the seed at {n} is the world at {n}");
    let r = first.call(twin, "GET", "/_pome/seed", None).await;
    assert_eq!(r.status, 200, "{twin}: the seed of a sandbox booted from a seed: {}", r.text);
    let again = r.json();
    assert_eq!(again["_world"], seed["_world"], "{twin}: a world booted from a seed writes that seed back");
    let second = server.sandbox(&[twin], Some(again)).await;
    assert_eq!(second.state(twin).await, fork_world, "{twin}: and that seed boots the same world");

    // Reading the past and forking left the parent as it was.
    assert_eq!(tape(&parent, twin).await, rows, "{twin}: the parent's tape is untouched");
}

#[tokio::test]
async fn a_github_sandbox_forked_mid_script_is_the_parent_at_that_row_replays_the_rest_identically_and_seeds_that_world() {
    rewinds_exactly("github").await;
}

#[tokio::test]
async fn a_slack_sandbox_forked_mid_script_is_the_parent_at_that_row_replays_the_rest_identically_and_seeds_that_world() {
    rewinds_exactly("slack").await;
}

#[tokio::test]
async fn a_stripe_sandbox_forked_mid_script_is_the_parent_at_that_row_replays_the_rest_identically_and_seeds_that_world() {
    rewinds_exactly("stripe").await;
}

#[tokio::test]
async fn a_gmail_sandbox_forked_mid_script_is_the_parent_at_that_row_replays_the_rest_identically_and_seeds_that_world() {
    rewinds_exactly("gmail").await;
}

#[tokio::test]
async fn a_linear_sandbox_forked_mid_script_is_the_parent_at_that_row_replays_the_rest_identically_and_seeds_that_world() {
    rewinds_exactly("linear").await;
}

#[tokio::test]
async fn a_three_twin_sandbox_forks_each_twin_at_its_own_row() {
    let server = Server::start().await;
    let twins = ["github", "slack", "stripe"];
    let parent = server.sandbox(&twins, None).await;
    // Three calls on each twin, interleaved by twin: each tape counts its own rows.
    for twin in twins {
        run_script(&server, &parent, twin, &script(twin)[..3]).await;
    }

    let at = json!({"github": 2, "slack": 1, "stripe": 0});
    let (v, fork) = fork(&server, &parent, at.clone()).await;
    assert_eq!(v["forked_from"], json!({"sandbox_id": parent.id, "at": at}));
    assert_eq!(v["twins"], json!(twins));
    for twin in twins {
        let n = at[twin].as_u64().unwrap() as usize;
        let rows = tape(&parent, twin).await;
        assert_eq!(fork.state(twin).await, state_at(&parent, twin, n).await, "{twin}: the fork's world is the parent's at row {n}");
        assert_eq!(fork.state(twin).await, fresh_replay(&server, twin, &rows[..n]).await, "{twin}: and a replay of its first {n} rows");
        let inherited = tape(&fork, twin).await;
        assert_eq!(inherited.iter().map(|r| (r.request_id.clone(), r.inherited)).collect::<Vec<_>>(), rows[..n].iter().map(|r| (r.request_id.clone(), true)).collect::<Vec<_>>(), "{twin}: the fork inherits exactly rows 1..={n}");
    }
    assert_eq!(fork.state("stripe").await, state_at(&parent, "stripe", 0).await, "stripe at 0 is its seed's world");

    // A twin the fork does not name forks at its newest row.
    let (v, partial) = self::fork(&server, &parent, json!({"github": 1})).await;
    assert_eq!(v["forked_from"]["at"], json!({"github": 1, "slack": 3, "stripe": 3}));
    assert_eq!(partial.state("github").await, state_at(&parent, "github", 1).await);
    for twin in ["slack", "stripe"] {
        assert_eq!(partial.state(twin).await, parent.state(twin).await, "{twin}: not named, so as it is now");
    }
}
