//! The graded cannot move its grade, and finalize loses nothing (issue #32), against the real
//! server: a tape padded with thousands of cheap calls leaves a failing criterion failed;
//! every call answered while finalize runs is in the run; one run per sandbox however often
//! and however concurrently it is finalized; and a finalize or a discard that answered
//! survives `kill -9` of the real `pome serve`.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pome_e2e::{API_KEY, ServeProcess, Server, hostile_dir};
use serde_json::{Value, json};

/// A task over the tickets twin whose two criteria the agent below never meets: one its
/// twin decides, one a CEL expression whose cost grows with the square of the tape.
const FAILING: &str = "# Delete and close\n## Prompt\nDelete a ticket, then close ticket 1.\n## Success Criteria\n\
    - [code:tickets] Ticket 1 is closed\n\
    - [code:tickets] expr: tape.exists(a, a.method == 'DELETE' && tape.exists(b, b.seq > a.seq))\n\
    ## Config\ntwins: [tickets]\n";

/// A sandbox's id and agent token.
#[derive(Clone)]
struct Agent {
    url: String,
    id: String,
    token: String,
}

impl Agent {
    fn of(url: &str, created: &Value) -> Agent {
        Agent { url: url.into(), id: created["id"].as_str().unwrap().into(), token: created["agent_token"].as_str().unwrap().into() }
    }

    /// A tickets call as the agent, with a request id of our choosing; its status and body.
    async fn call(&self, http: &reqwest::Client, method: &str, path: &str, body: Option<Value>, rid: &str) -> Result<(u16, Value), reqwest::Error> {
        let mut req = http
            .request(method.parse().unwrap(), format!("{}/s/{}/tickets{path}", self.url, self.id))
            .header("x-ticket-key", &self.token)
            .header("x-request-id", rid);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let r = req.send().await?;
        let status = r.status().as_u16();
        Ok((status, r.json().await.unwrap_or(Value::Null)))
    }
}

async fn api(http: &reqwest::Client, url: &str, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let mut req = http.request(method.parse().unwrap(), format!("{url}{path}")).header("x-api-key", API_KEY);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let r = req.send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

/// The runs the team has of sandbox `id`.
async fn runs_of(http: &reqwest::Client, url: &str, id: &str) -> Vec<Value> {
    let (status, v) = api(http, url, "GET", "/v1/runs?limit=1000", None).await;
    assert_eq!(status, 200, "{v}");
    v["data"].as_array().unwrap().iter().filter(|r| r["session_id"] == id).cloned().collect()
}

/// `calls` cheap reads of the ticket list, 16 at a time.
async fn pad(http: &reqwest::Client, agent: &Agent, calls: usize) {
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let workers: Vec<_> = (0..16)
        .map(|_| {
            let (http, agent, next) = (http.clone(), agent.clone(), next.clone());
            tokio::spawn(async move {
                loop {
                    let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if n >= calls {
                        return;
                    }
                    let (status, v) = agent.call(&http, "GET", "/tickets", None, &format!("pad{n}")).await.unwrap();
                    assert_eq!(status, 200, "{v}");
                }
            })
        })
        .collect();
    for w in workers {
        w.await.unwrap();
    }
}

async fn finalize_failing_task_after(calls: usize) -> Value {
    let server = Server::start().await;
    let (status, v) = server.api("POST", "/v1/tasks", Some(json!({"id": "failing", "source": FAILING}))).await;
    assert_eq!(status, 201, "{v}");
    let (status, created) = server.api("POST", "/v1/sandboxes", Some(json!({"task_id": "failing"}))).await;
    assert_eq!(status, 201, "{created}");
    let agent = Agent::of(&server.url, &created);
    pad(&server.http, &agent, calls).await;
    let (status, fin) = server.api("POST", &format!("/v1/sandboxes/{}/finalize", agent.id), None).await;
    assert_eq!(status, 200, "{fin}");
    assert_eq!(fin["tape_rows"], calls, "{fin}");
    fin
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failing_criterion_over_a_short_tape_is_failed_on_its_merits_obeyed() {
    let fin = finalize_failing_task_after(5).await;
    assert_eq!((fin["verdict"].as_str(), fin["score"].as_u64()), (Some("fail"), Some(0)), "{fin}");
    let c = &fin["criteria_results"];
    assert_eq!((c[0]["status"].as_str(), c[0]["reason"].as_str()), (Some("failed"), Some("ticket 1 is open")), "{fin}");
    assert_eq!(c[1]["status"], "failed", "{fin}");
    assert!(c[1]["reason"].as_str().unwrap().ends_with("is false"), "{fin}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn padding_the_tape_with_thousands_of_cheap_calls_cannot_turn_a_failing_criterion_into_incomplete_or_pass_violated() {
    let fin = finalize_failing_task_after(4000).await;
    assert_eq!((fin["verdict"].as_str(), fin["score"].as_u64()), (Some("fail"), Some(0)), "{fin}");
    let c = &fin["criteria_results"];
    assert_eq!((c[0]["status"].as_str(), c[0]["reason"].as_str()), (Some("failed"), Some("ticket 1 is open")), "the twin still decides: {fin}");
    assert_eq!(c[1]["status"], "failed", "{fin}");
    let reason = c[1]["reason"].as_str().unwrap();
    assert!(reason.starts_with("the tape (4000 rows)") && reason.ends_with("the agent's own calls reached the bound"), "{reason}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_call_answered_while_finalize_runs_is_in_the_run_and_every_other_is_refused_410() {
    let server = Server::start().await;
    let (status, created) = server.api("POST", "/v1/sandboxes", Some(json!({"twins": ["tickets"]}))).await;
    assert_eq!(status, 201, "{created}");
    let agent = Agent::of(&server.url, &created);
    let answered: Arc<Mutex<Vec<String>>> = Arc::default();
    let refused: Arc<Mutex<Vec<u16>>> = Arc::default();
    // 16 writers creating tickets until the sandbox answers that it closed.
    let writers: Vec<_> = (0..16)
        .map(|w| {
            let (http, agent, answered, refused) = (server.http.clone(), agent.clone(), answered.clone(), refused.clone());
            tokio::spawn(async move {
                for n in 0.. {
                    let rid = format!("w{w}n{n}");
                    let (status, v) = agent.call(&http, "POST", "/tickets", Some(json!({"title": rid})), &rid).await.unwrap();
                    if (200..300).contains(&status) {
                        answered.lock().unwrap().push(rid);
                    } else {
                        assert_eq!((status, v["error"]["type"].as_str()), (410, Some("session_expired")), "{v}");
                        refused.lock().unwrap().push(status);
                        return;
                    }
                }
            })
        })
        .collect();
    while answered.lock().unwrap().len() < 200 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let (status, fin) = server.api("POST", &format!("/v1/sandboxes/{}/finalize", agent.id), None).await;
    assert_eq!(status, 200, "{fin}");
    for w in writers {
        w.await.unwrap();
    }
    let (status, run) = server.api("GET", &format!("/v1/runs/{}", fin["run_id"].as_str().unwrap()), None).await;
    assert_eq!(status, 200, "{run}");
    let on_tape: BTreeSet<String> = run["per_twin"]["tickets"]["tape"].as_array().unwrap().iter().map(|r| r["request_id"].as_str().unwrap().to_string()).collect();
    let answered = answered.lock().unwrap().clone();
    let missing: Vec<&String> = answered.iter().filter(|rid| !on_tape.contains(*rid)).collect();
    assert!(missing.is_empty(), "{} of {} answered calls are not in the run: {missing:?}", missing.len(), answered.len());
    assert_eq!(on_tape.len(), answered.len(), "the run holds the answered calls and nothing else");
    assert_eq!(refused.lock().unwrap().len(), 16, "every writer was told the sandbox closed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn finalizing_twice_and_concurrently_gives_one_run_per_sandbox() {
    let server = Server::start().await;
    let (_, created) = server.api("POST", "/v1/sandboxes", Some(json!({"twins": ["tickets"]}))).await;
    let agent = Agent::of(&server.url, &created);
    assert_eq!(agent.call(&server.http, "POST", "/tickets", Some(json!({"title": "one"})), "only").await.unwrap().0, 201);
    let racers: Vec<_> = (0..8)
        .map(|_| {
            let (http, url, id) = (server.http.clone(), server.url.clone(), agent.id.clone());
            tokio::spawn(async move { api(&http, &url, "POST", &format!("/v1/sandboxes/{id}/finalize"), None).await })
        })
        .collect();
    let mut run_ids = BTreeSet::new();
    for r in racers {
        let (status, fin) = r.await.unwrap();
        assert_eq!(status, 200, "{fin}");
        assert_eq!(fin["tape_rows"], 1, "{fin}");
        run_ids.insert(fin["run_id"].as_str().unwrap().to_string());
    }
    let (status, again) = server.api("POST", &format!("/v1/sandboxes/{}/finalize", agent.id), None).await;
    assert_eq!(status, 200, "{again}");
    run_ids.insert(again["run_id"].as_str().unwrap().to_string());
    assert_eq!(run_ids.len(), 1, "one run answered to every finalize: {run_ids:?}");
    let stored = runs_of(&server.http, &server.url, &agent.id).await;
    assert_eq!(stored.len(), 1, "the runs table has one row for the sandbox: {stored:?}");
    assert_eq!(stored[0]["id"].as_str(), run_ids.first().map(String::as_str));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_finalize_and_a_discard_that_answered_survive_kill_9_and_a_restart() {
    let data = tempfile::tempdir().unwrap();
    let args = ["--quota", "20", "--twins-dir", hostile_dir().to_str().unwrap().to_string().leak()];
    let serve = ServeProcess::start(data.path(), &args).await;
    let http = reqwest::Client::new();
    let (_, created) = api(&http, &serve.url, "POST", "/v1/sandboxes", Some(json!({"twins": ["tickets"]}))).await;
    let finalized = Agent::of(&serve.url, &created);
    let (_, created) = api(&http, &serve.url, "POST", "/v1/sandboxes", Some(json!({"twins": ["tickets"]}))).await;
    let discarded = Agent::of(&serve.url, &created);
    for a in [&finalized, &discarded] {
        assert_eq!(a.call(&http, "POST", "/tickets", Some(json!({"title": "kept"})), "before").await.unwrap().0, 201);
    }
    let (status, fin) = api(&http, &serve.url, "POST", &format!("/v1/sandboxes/{}/finalize", finalized.id), None).await;
    assert_eq!(status, 200, "{fin}");
    let run_id = fin["run_id"].as_str().unwrap().to_string();
    let (status, refusal) = api(&http, &serve.url, "DELETE", &format!("/v1/sandboxes/{}", discarded.id), None).await;
    assert_eq!(status, 409, "{refusal}");
    let token = refusal["error"]["details"]["discard_token"].as_str().unwrap();
    let (status, stopped) = api(&http, &serve.url, "DELETE", &format!("/v1/sandboxes/{}?confirm_discard={token}", discarded.id), None).await;
    assert_eq!(status, 200, "{stopped}");
    // At once, before any timer of the server's could have written anything more.
    serve.kill9();

    let serve = ServeProcess::start(data.path(), &args).await;
    let (finalized, discarded) = (Agent { url: serve.url.clone(), ..finalized }, Agent { url: serve.url.clone(), ..discarded });
    for (a, reason) in [(&finalized, "finalized"), (&discarded, "discarded")] {
        let (status, v) = a.call(&http, "GET", "/tickets", None, "after").await.unwrap();
        assert_eq!((status, v["error"]["details"]["reason"].as_str()), (410, Some(reason)), "{v}");
    }
    let (status, run) = api(&http, &serve.url, "GET", &format!("/v1/runs/{run_id}"), None).await;
    assert_eq!((status, run["session_id"].as_str()), (200, Some(finalized.id.as_str())), "{run}");
    let (status, again) = api(&http, &serve.url, "POST", &format!("/v1/sandboxes/{}/finalize", finalized.id), None).await;
    assert_eq!((status, again["run_id"].as_str()), (200, Some(run_id.as_str())), "{again}");
    assert_eq!(runs_of(&http, &serve.url, &finalized.id).await.len(), 1);
    assert!(runs_of(&http, &serve.url, &discarded.id).await.is_empty(), "a discarded sandbox has no run");
}
