//! `pome-bench cheap`: the fixed cost of a call (issue #36, item 3). The cheapest call of three
//! twins and GitHub's issue list, each at 64 connections on a fresh sandbox of the default
//! world (Linear's with its rate limit raised), beside a bare axum handler measured in the
//! same run: the ratio says how much of the machine pome's own path (HTTP, auth, routing,
//! the store's queue, the guest, the tape row, the journal) takes for a call whose guest work
//! is nearly nothing.
//!
//! `POME_BENCH_CHEAP_SECS` (default 10) sets each line's length.

use serde_json::json;

use crate::{Server, report, wrk_for};

struct Line {
    label: &'static str,
    twin: &'static str,
    path: &'static str,
    post: bool,
    /// A JSON body to send, or "" for none.
    body: &'static str,
}

const LINES: [Line; 4] = [
    Line { label: "slack auth.test (the cheapest call)", twin: "slack", path: "/api/auth.test", post: true, body: "" },
    Line { label: "linear viewer", twin: "linear", path: "/graphql", post: true, body: r#"{"query": "{ viewer { id name email } }"}"# },
    Line { label: "github get one issue", twin: "github", path: "/repos/acme/api/issues/1", post: false, body: "" },
    Line { label: "github list issues", twin: "github", path: "/repos/acme/api/issues", post: false, body: "" },
];

impl Line {
    /// The wrk script that makes this call.
    fn script(&self) -> String {
        let mut script = String::new();
        if self.post {
            script.push_str("wrk.method = \"POST\"\n");
        }
        if !self.body.is_empty() {
            script.push_str(&format!("wrk.body = '{}'\nwrk.headers[\"Content-Type\"] = \"application/json\"\n", self.body));
        }
        script
    }
}

pub async fn run(server: &Server) {
    let secs = std::env::var("POME_BENCH_CHEAP_SECS").ok().and_then(|v| v.parse().ok()).unwrap_or(10u32).max(1);
    println!("cheap calls: each at 64 connections for {secs} s on a fresh sandbox, beside a bare handler in the same run");
    let bare = crate::bare::measure(secs);
    let dir = tempfile::tempdir().unwrap();
    for line in LINES {
        // Linear's default world keeps Linear's 5,000 requests an hour; the bench's team seed
        // has them raised, as Linear support grants a load test.
        let body = match line.twin {
            "linear" => json!({"twins": ["linear"], "seed": crate::linear::team_seed(0)}),
            twin => json!({"twins": [twin]}),
        };
        let sb = server.create(&body).await;
        let id = sb["id"].as_str().unwrap();
        let script = dir.path().join(format!("{id}.lua"));
        std::fs::write(&script, line.script()).unwrap();
        let url = format!("{}/s/{id}/{}{}", server.url, line.twin, line.path);
        check_once(&url, sb["agent_token"].as_str().unwrap(), &line).await;
        let r = wrk_for(&url, sb["agent_token"].as_str().unwrap(), 64, Some(&script), secs);
        report(line.label, 64, &r);
        if r.all_succeeded() {
            println!("    {}", bare.ratio(r.rps, line.post));
        }
        server.discard(id).await;
    }
}

/// One call before the run: a Slack `ok: false` or a GraphQL `errors` is a 200 that wrk would
/// count, so the line's call must be seen to succeed first.
async fn check_once(url: &str, token: &str, line: &Line) {
    let http = reqwest::Client::new();
    let mut req = if line.post { http.post(url) } else { http.get(url) }.bearer_auth(token);
    if !line.body.is_empty() {
        req = req.header("content-type", "application/json").body(line.body);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status();
    let body: serde_json::Value = resp.json().await.unwrap_or_default();
    let refused = !status.is_success() || body.get("ok") == Some(&json!(false)) || body.get("errors").is_some();
    assert!(!refused, "{}: the call is refused ({status}): {body}", line.label);
}
