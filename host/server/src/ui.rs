//! The dashboard: one static page (HTML, CSS, JS embedded in the binary, no build step) that
//! signs in with the team's API key and reads everything through the same `/v1` API a script
//! uses, plus the one thing `/v1` has no route for: a sandbox's tape as a live stream.
//!
//! Every answer from here carries a strict Content-Security-Policy (`default-src 'self'`, no
//! inline script or style): tapes hold text an agent or a seed wrote, and the page renders it
//! with `textContent` only, so even a slip in the page would not run it.
//!
//! The live tape is server-sent events over `fetch()` (the page reads the body with a
//! `ReadableStream`), so the team key travels in the `X-API-KEY` header as on `/v1` and never
//! in a URL; `EventSource` cannot set headers, which is why the page does not use it.

use std::collections::{BTreeMap, VecDeque};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderValue, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use pome_tape::TapeRow;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::app::{App, Caller};
use crate::error::ApiError;
use crate::sandbox::Lookup;

/// The page's policy: only this origin's files and API; no inline code, no frames, no
/// plugins, no forms posting elsewhere.
pub const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; \
font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// How often the stream reads the twins' tapes for new rows.
const TAPE_POLL: Duration = Duration::from_millis(250);
/// Rows read per twin per poll, so a 100,000-row tape arrives as a stream rather than one
/// write the browser must swallow whole; a backlog is read again at once.
const ROWS_PER_POLL: usize = 64;
/// And at most about this much JSON per twin per poll (one row always goes): a stream holds
/// what it has queued, and rows can be megabytes each.
const BYTES_PER_POLL: usize = 1 << 20;
/// A row whose JSON is larger goes out with its bodies cut to [`TRIMMED_BODY_BYTES`], larger
/// entities of its state delta named by their size, and `"trimmed": true` (an event is one
/// string in memory); the whole row is on
/// `GET /s/:id/:twin/_pome/events`, which streams.
const SSE_ROW_BYTES: usize = 1 << 20;
const TRIMMED_BODY_BYTES: usize = 64 << 10;

/// Bumped when a server starts shutting down. Graceful shutdown waits for every connection to
/// end, and a live tape of an open sandbox never ends by itself, so streams watch this and end.
static SHUTDOWN: std::sync::LazyLock<tokio::sync::watch::Sender<u64>> = std::sync::LazyLock::new(|| tokio::sync::watch::Sender::new(0));

/// End every live stream (called when the server starts its graceful shutdown; a stream of
/// another server in the same process reconnects).
pub fn shutting_down() {
    SHUTDOWN.send_modify(|n| *n += 1);
}

const INDEX_HTML: &str = include_str!("../ui/index.html");
const APP_JS: &str = include_str!("../ui/app.js");
const APP_CSS: &str = include_str!("../ui/app.css");
const ICON_SVG: &str = include_str!("../ui/icon.svg");

pub fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/", get(|| async { Redirect::to("/ui/") }))
        .route("/ui", get(|| async { Redirect::to("/ui/") }))
        .route("/ui/", get(|| async { asset("text/html; charset=utf-8", INDEX_HTML) }))
        .route("/ui/app.js", get(|| async { asset("text/javascript; charset=utf-8", APP_JS) }))
        .route("/ui/app.css", get(|| async { asset("text/css; charset=utf-8", APP_CSS) }))
        .route("/ui/icon.svg", get(|| async { asset("image/svg+xml", ICON_SVG) }))
        .route("/ui/stream/{id}", get(tape_stream))
}

/// A static asset with the page's security headers.
fn asset(content_type: &'static str, body: &'static str) -> Response {
    let mut resp = body.into_response();
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    secure(h);
    resp
}

fn secure(h: &mut axum::http::HeaderMap) {
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
}

#[derive(Deserialize)]
struct StreamQuery {
    /// Resume after this seq on every twin (a reconnect sends what it last saw).
    after: Option<u64>,
}

/// What the stream task carries between polls.
struct Tail {
    app: Arc<App>,
    id: String,
    /// Last seq sent, per twin.
    sent: BTreeMap<String, u64>,
    /// Events made but not yet yielded.
    queue: VecDeque<Event>,
    first: bool,
    /// Changes when the server starts shutting down.
    shutdown: tokio::sync::watch::Receiver<u64>,
    /// The hash of the key that opened the stream, and a receiver that changes when any key
    /// is revoked: the stream ends with its key.
    key_hash: String,
    revocations: tokio::sync::watch::Receiver<u64>,
    /// Whether the page has been told the stream is live.
    announced: bool,
    done: bool,
    _slot: crate::limits::TeamSlot,
}

/// `GET /ui/stream/:id`: the sandbox's tape as server-sent events. `row` events carry one
/// tape row each (with its twin); `closed` says the sandbox closed (and its run, if any) and
/// ends the stream. Authenticated with the team key, like `/v1`; another team's sandbox is 404.
async fn tape_stream(State(app): State<Arc<App>>, caller: Caller, Path(id): Path<String>, Query(q): Query<StreamQuery>) -> Result<Response, ApiError> {
    let team = caller.team;
    let twins = match app.sandboxes.lookup(&id) {
        Lookup::Open(s) if s.team_id == team => s.twin_names(),
        Lookup::Closed(t) if t.team_id == team => Vec::new(),
        _ => return Err(ApiError::not_found(format!("no sandbox {id} in your team"))),
    };
    // Live streams one team may hold open at once (`--team-streams`); more are refused.
    let limit = app.gates.team_streams.limit;
    let slot = app.gates.team_streams.take(&team).ok_or_else(|| {
        ApiError::new(crate::error::ErrorType::RateLimited, format!("your team has {limit} live tape streams open, the most it may; close one and try again"))
            .with_details(json!({"error": "too_many_streams", "limit": limit}))
            .with_retry_after(1)
    })?;
    let after = q.after.unwrap_or(0);
    let revocations = app.storage.revocations();
    let tail = Tail {
        app,
        id,
        sent: twins.into_iter().map(|t| (t, after)).collect(),
        queue: VecDeque::new(),
        first: true,
        shutdown: SHUTDOWN.subscribe(),
        key_hash: caller.key_hash,
        revocations,
        announced: false,
        done: false,
        _slot: slot,
    };
    let stream = futures_util::stream::unfold(tail, |mut tail| async move {
        loop {
            if let Some(ev) = tail.queue.pop_front() {
                return Some((Ok::<Event, Infallible>(ev), tail));
            }
            if tail.done {
                return None;
            }
            if !tail.first {
                tokio::select! {
                    _ = tokio::time::sleep(TAPE_POLL) => {}
                    _ = tail.shutdown.changed() => return None,
                    _ = tail.revocations.changed() => {}
                }
            }
            if tail.app.storage.live_key_by_hash(&tail.key_hash).is_none() {
                // The key was revoked: what it opened ends with it.
                return None;
            }
            tail.first = false;
            tail.poll().await;
        }
    });
    let mut resp = Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))).into_response();
    secure(resp.headers_mut());
    // Proxies must not buffer a live stream.
    resp.headers_mut().insert("x-accel-buffering", HeaderValue::from_static("no"));
    Ok(resp)
}

impl Tail {
    /// Read every twin's tape once and queue the rows not sent yet; queue `closed` when the
    /// sandbox has closed. The sandbox is looked up afresh each time, so the stream never
    /// keeps a closed sandbox's stores alive.
    async fn poll(&mut self) {
        let sandbox = match self.app.sandboxes.lookup(&self.id) {
            Lookup::Open(s) => s,
            Lookup::Closed(t) => {
                let ev = Event::default().event("closed").data(json!({"reason": t.reason.as_str(), "run_id": t.run_id}).to_string());
                self.queue.push_back(ev);
                self.done = true;
                return;
            }
            Lookup::Unknown => {
                self.queue.push_back(Event::default().event("closed").data(json!({"reason": "unknown", "run_id": null}).to_string()));
                self.done = true;
                return;
            }
        };
        for twin in &sandbox.twins {
            let last = self.sent.get(&twin.name).copied().unwrap_or(0);
            // One more than is sent, to tell a backlog from a tape that has caught up.
            let Ok(rows) = twin.store.rows_after(last, ROWS_PER_POLL + 1).await else { continue };
            let (mut newest, mut queued) = (last, 0);
            for (n, row) in rows.iter().enumerate() {
                if n == ROWS_PER_POLL || (n > 0 && queued + row.weight() > BYTES_PER_POLL) {
                    // A backlog (a long tape, or a page opened late): send the rest without waiting.
                    self.first = true;
                    break;
                }
                queued += row.weight().min(SSE_ROW_BYTES);
                match row_event(row) {
                    Ok(text) => self.queue.push_back(Event::default().event("row").data(text)),
                    Err(e) => tracing::warn!(error = %e, "a tape row did not serialize"),
                }
                newest = newest.max(row.seq);
            }
            self.sent.insert(twin.name.clone(), newest);
        }
        if !self.announced {
            // Tells the page the stream is live even when the tape is still empty.
            self.queue.push_back(Event::default().event("live").data("{}"));
            self.announced = true;
        }
    }
}

/// A row as its `row` event carries it: whole, or trimmed when its JSON is over
/// [`SSE_ROW_BYTES`].
fn row_event(row: &TapeRow) -> serde_json::Result<String> {
    if row.weight() <= SSE_ROW_BYTES {
        return serde_json::to_string(row);
    }
    let cut = |b: &pome_tape::Body| pome_tape::Body(b.0.slice(..b.0.len().min(TRIMMED_BODY_BYTES)));
    // An entity larger than a cut body is named by its size instead (a JSON string, where
    // the entity's JSON would be).
    let entity = |e: &Option<pome_tape::EntityText>| match e {
        Some(text) if text.0.len() > TRIMMED_BODY_BYTES => Some(pome_tape::EntityText::from(json!(format!("trimmed: {} bytes", text.0.len())).to_string())),
        other => other.clone(),
    };
    let state_delta = row.state_delta.iter().map(|c| pome_tape::StateChange { before: entity(&c.before), after: entity(&c.after), ..c.clone() }).collect();
    let trimmed = TapeRow { request_body: cut(&row.request_body), response_body: cut(&row.response_body), state_delta, ..row.clone() };
    let mut v = serde_json::to_value(&trimmed)?;
    v["trimmed"] = Value::Bool(true);
    serde_json::to_string(&v)
}
