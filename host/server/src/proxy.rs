//! Twin traffic: `/s/<sandbox>/<twin>/<the API's own path>` into the sandbox's twin store.
//! The agent authenticates with the sandbox token; refusals come in the twin's own error
//! shape. `/_pome/events`, `/_pome/state`, `/_pome/seed`, `/_pome/diff` and `/_pome/health`
//! under a twin are the host's.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::error::{ApiError, current_request_id};
use pome_runtime::limits::{Limits, UNAUTHENTICATED_BODY_BYTES};
use pome_runtime::engine::{Auth, Held, HostErrorKind};
use crate::sandbox::Lookup;
use crate::app::App;
use pome_runtime::store::{TwinReply, TwinRequest, TwinStore};

/// The header carrying the SHA-256 (hex) of a credential the host did not recognise.
pub const CREDENTIAL_DIGEST: &str = "x-pome-credential-sha256";

/// Headers that describe one hop, not the request; never passed to a twin.
const HOP_HEADERS: &[&str] = &["connection", "keep-alive", "transfer-encoding", "te", "upgrade", "host", "content-length", "proxy-connection"];

/// `/s/{id}/{twin}/…`
pub async fn sandbox_twin(State(app): State<Arc<App>>, req: Request) -> Response {
    let path = req.uri().path().to_string();
    let mut parts = path.trim_start_matches("/s/").splitn(3, '/');
    let id = parts.next().unwrap_or_default().to_string();
    let twin = parts.next().unwrap_or_default().to_string();
    let rest = format!("/{}", parts.next().unwrap_or_default());
    let addr = crate::app::client_addr(req.extensions());
    let span = tracing::Span::current();
    span.record("sandbox", id.as_str());
    span.record("twin", twin.as_str());

    // Who is asking: the agent's token (in any form) or the owning team's key. Nothing about a
    // sandbox — that it closed, that it is healthy — is told to anyone else.
    let credential = crate::auth::twin_credential(req.headers(), req.uri().query().unwrap_or(""), None, crate::auth::ANY_FORM);
    // The token as the twin reads it, with a prefix it declares (`sk_test_`) removed.
    let prefix = app.twins.get(&twin).and_then(|i| pome_contract::Credential::prefix_of(&i.description.credentials));
    let credential = credential.map(|c| prefix.and_then(|p| c.strip_prefix(p)).map(str::to_string).unwrap_or(c));
    // The team key is looked up only when the agent token does not already settle it (most
    // twin calls carry the token; an SDK may send X-API-KEY besides).
    let key = req.headers().get("x-api-key").and_then(|v| v.to_str().ok()).map(String::from);
    let team_of_key = async |app: &App| match &key {
        Some(k) => app.storage.team_for_key(k).await.ok().flatten(),
        None => None,
    };
    let sandbox = match app.sandboxes.lookup(&id) {
        Lookup::Open(s) => s,
        Lookup::Closed(t) => {
            // In any form, or in a form of the twin's own (a header of its own, say).
            let declared = app.twins.get(&twin).and_then(|i| crate::auth::twin_credential(req.headers(), req.uri().query().unwrap_or(""), None, &i.description.credentials));
            let agent = [credential.as_deref(), declared.as_deref()].into_iter().flatten().any(|c| crate::auth::same(&crate::auth::hash_key(c), &t.token_hash));
            if agent || team_of_key(&app).await.as_deref() == Some(t.team_id.as_str()) {
                return ApiError::expired(&id, t.reason.as_str()).into_response();
            }
            return ApiError::not_found(format!("no sandbox {id}")).into_response();
        }
        Lookup::Unknown => {
            // Guessing sandbox ids counts like guessing tokens.
            if let Some(wait) = app.auth_failures.refused(addr) {
                return crate::app::rate_limited(wait).into_response();
            }
            app.auth_failures.failed(addr);
            return ApiError::not_found(format!("no sandbox {id}")).into_response();
        }
    };
    let Some(t) = sandbox.twin(&twin) else {
        return ApiError::not_found(format!("sandbox {id} has no `{twin}` twin; it has {:?}", sandbox.twin_names())).into_response();
    };
    // The agent's token settles it at once; anything else is a stranger until the twin says
    // otherwise, and a stranger past its allowance of failures is refused before its body is
    // read or the twin is asked (in the twin's own shape, with Retry-After).
    let verify = |c: &str| crate::auth::AgentSecret::verify(&sandbox.token, c);
    let agent = credential.as_deref().is_some_and(verify)
        || crate::auth::twin_credential(req.headers(), req.uri().query().unwrap_or(""), None, &t.store.credentials).as_deref().is_some_and(verify);
    let owner = !agent && key.is_some() && team_of_key(&app).await.as_deref() == Some(sandbox.team_id.as_str());
    if !agent && !owner && let Some(wait) = app.auth_failures.refused(addr) {
        return rate_limited_by_twin(&t.store, wait).await;
    }
    let origin = crate::app::origin(&app, req.headers());
    // Reached by host name, the twin's root is that host's.
    let base_url = match req.extensions().get::<Arc<crate::server::HostRoute>>() {
        Some(route) => route.origin.clone(),
        None => format!("{origin}/s/{id}/{twin}"),
    };

    if let Some(reserved) = rest.strip_prefix("/_pome/") {
        // Readable with the agent token or the owning team's API key.
        if !agent && !owner {
            app.auth_failures.failed(addr);
            return ApiError::new(crate::error::ErrorType::InvalidAuth, "the host's routes under a twin need the sandbox's agent token or its team's API key").into_response();
        }
        let query = req.uri().query().unwrap_or("");
        if let Some(answer) = past_route(&app, &sandbox, &twin, reserved, query).await {
            return answer;
        }
        return reserved_route(&t.store, reserved, query, &app.rt.held, &app.gates.bulk_streams).await;
    }

    if rest == "/mcp" {
        // The MCP door takes the agent token alone: a team key grades, it does not act.
        if !agent {
            app.auth_failures.failed(addr);
            return ApiError::new(crate::error::ErrorType::InvalidAuth, format!("the MCP door of sandbox {id} needs its agent token as `Authorization: Bearer <agent_token>`")).into_response();
        }
        sandbox.touch();
        let target = crate::mcp::twin::Target { store: t.store.clone(), token: crate::auth::AgentSecret::clear(&sandbox.token).unwrap_or_default().to_string(), base_url, tools: app.mcp.tools[&twin].clone(), request_id: current_request_id() };
        let Some(_admitted) = sandbox.admit() else { return Box::pin(sandbox_twin(State(app.clone()), req)).await };
        return app.mcp.serve_twin(req, target).await;
    }

    // Finalize may have closed the door since the lookup: a call let in is on the tapes it
    // reads (held until the answer is built); one not let in is answered as the closed
    // sandbox answers, by looking again.
    let Some(_admitted) = sandbox.admit() else { return Box::pin(sandbox_twin(State(app.clone()), req)).await };
    // Only the agent's own calls keep a sandbox alive: knowing its id is not enough.
    let resp = forward(&t.store, &sandbox.token, base_url, &app.rt.limits, req, rest, || sandbox.touch()).await;
    if resp.extensions().get::<Refused>().is_some() {
        app.auth_failures.failed(addr);
    }
    resp
}

/// `/_pome/state?at=N`, `/_pome/seed[?at=N]` and `/_pome/diff?from=A&to=B`: the twin's world
/// as it stood after a row of its tape, the same written as a seed, and what changed between
/// two rows (`None` for the other host routes).
async fn past_route(app: &App, sandbox: &Arc<crate::sandbox::Sandbox>, twin: &str, route: &str, query: &str) -> Option<Response> {
    use crate::ops::state::{DiffQuery, Source};
    let number = |name: &str| -> Result<Option<u64>, ApiError> {
        form_urlencoded::parse(query.as_bytes()).find(|(k, _)| k == name).map(|(_, v)| v.parse().map_err(|_| ApiError::validation(format!("`{name}` must be a whole number, not `{v}`")))).transpose()
    };
    let source = Source::Sandbox(sandbox.clone());
    let answer = match route {
        "state" => match number("at") {
            Ok(None) => return None,
            Ok(at) => crate::ops::state::state_at(app, &sandbox.team_id, &source, twin, at).await.map(|state| ([("content-type", "application/json")], state).into_response()),
            Err(e) => Err(e),
        },
        "seed" => match number("at") {
            Ok(at) => crate::ops::seeds::seed_at(app, &sandbox.team_id, &source, twin, at).await.map(|doc| axum::Json(doc).into_response()),
            Err(e) => Err(e),
        },
        "diff" => match (number("from"), number("to")) {
            (Ok(from), Ok(to)) => crate::ops::state::diff(app, &sandbox.team_id, &source, twin, &DiffQuery { twin: None, from, to }).await.map(|v| axum::Json(v).into_response()),
            (Err(e), _) | (_, Err(e)) => Err(e),
        },
        _ => return None,
    };
    Some(answer.unwrap_or_else(IntoResponse::into_response))
}

/// Marks an answer the twin gave as a refusal of the request's credential.
#[derive(Clone, Copy)]
struct Refused;

/// The twin's own 429 for a client past its allowance of failed authentications.
async fn rate_limited_by_twin(store: &TwinStore, wait: std::time::Duration) -> Response {
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    let msg = format!("too many failed authentications from your address; try again in {secs} s");
    let mut resp = reply(store.render_error(HostErrorKind::RateLimited, msg).await);
    resp.headers_mut().insert("retry-after", secs.into());
    resp
}

/// The host's own routes under a twin.
pub async fn reserved_route(store: &TwinStore, route: &str, query: &str, held: &Arc<Held>, streams: &Arc<tokio::sync::Semaphore>) -> Response {
    match route {
        "events" => match TapeRange::parse(query) {
            Ok(range) => stream_tape(store.clone(), range, held.clone(), streams.clone()),
            Err(e) => e.into_response(),
        },
        "state" => match store.state().await {
            Ok(state) => ([("content-type", "application/json")], state).into_response(),
            Err(e) => ApiError::internal(e.to_string()).into_response(),
        },
        "health" => axum::Json(json!({"ok": true, "twin": store.twin})).into_response(),
        "deliveries" => axum::Json(store.deliveries.lock().unwrap().clone()).into_response(),
        other => ApiError::not_found(format!("no host route /_pome/{other}; there are events, state, deliveries and health (and seed and diff, in a sandbox)")).into_response(),
    }
}

/// Which rows of a tape to serve: `?after=SEQ` (rows after it; default 0) and `?limit=N`
/// (default: all), so a client can page through a long tape.
pub struct TapeRange {
    pub after: u64,
    pub limit: usize,
}

impl TapeRange {
    pub fn parse(query: &str) -> Result<TapeRange, ApiError> {
        let mut range = TapeRange { after: 0, limit: usize::MAX };
        for (k, v) in form_urlencoded::parse(query.as_bytes()) {
            let bad = || ApiError::new(crate::error::ErrorType::ValidationFailed, format!("`{k}` must be a whole number, not `{v}`"));
            match &*k {
                "after" => range.after = v.parse().map_err(|_| bad())?,
                "limit" => range.limit = v.parse().map_err(|_| bad())?,
                _ => {}
            }
        }
        Ok(range)
    }
}

/// Rows taken from a store at a time while streaming: few, since one row may carry two
/// bodies at the body caps.
const STREAM_PAGE: usize = 16;
/// A stream's JSON goes out in chunks of this size; the next is written only once the
/// client has taken the one before (the channel holds one), so a slow reader holds no more.
pub const STREAM_CHUNK: usize = 64 << 10;

/// A tape as a JSON array, written a row at a time and sent a chunk at a time: never one
/// buffer of the whole tape. The rows a page holds are counted in the memory budget while
/// they are written.
pub fn stream_tape(store: TwinStore, range: TapeRange, held: Arc<Held>, gate: Arc<tokio::sync::Semaphore>) -> Response {
    let rt = tokio::runtime::Handle::current();
    bulk_stream(gate, move |out| {
        use std::io::Write as _;
        out.write_all(b"[")?;
        let (mut after, mut left, mut first) = (range.after, range.limit, true);
        while left > 0 {
            let rows = rt.block_on(store.rows_after(after, STREAM_PAGE.min(left))).map_err(std::io::Error::other)?;
            let Some(last) = rows.last() else { break };
            after = last.seq;
            left -= rows.len();
            let _held = held.hold(rows.iter().map(|r| r.weight()).sum());
            for row in &rows {
                if !std::mem::take(&mut first) {
                    out.write_all(b",")?;
                }
                serde_json::to_writer(&mut *out, &**row)?;
            }
        }
        out.write_all(b"]")
    })
}

/// A JSON answer that `write` produces a piece at a time, on a thread of its own at a lower
/// priority, sent a chunk at a time as the client takes them. It waits for a permit of
/// `gate` (the server's `--bulk-streams`; more wait their turn): each holds at most a page
/// of rows (or a chunk of stored text) and a chunk of output, so together they hold a
/// bounded amount however long the tapes and however many readers ask. A `write` that
/// fails ends the body early (the connection is reset), so a client never sees a truncated
/// document that parses.
pub fn bulk_stream(gate: Arc<tokio::sync::Semaphore>, write: impl FnOnce(&mut std::io::BufWriter<ChunkSender>) -> std::io::Result<()> + Send + 'static) -> Response {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Result<bytes::Bytes, std::io::Error>>(1);
    tokio::spawn(async move {
        let Ok(_permit) = gate.acquire().await else {
            return;
        };
        let failed = tx.clone();
        let (done_tx, done_rx) = tokio::sync::oneshot::channel();
        // Bulk work: the kernel should serve every tenant's calls before it.
        let thread = std::thread::Builder::new().name("pome-bulk-stream".into()).spawn(move || {
            lower_priority();
            BULK_THREAD.with(|b| b.set(true));
            let mut out = std::io::BufWriter::with_capacity(STREAM_CHUNK, ChunkSender(tx));
            let _ = done_tx.send(write(&mut out).and_then(|()| std::io::Write::flush(&mut out)));
        });
        let written = match thread {
            Ok(_) => done_rx.await.unwrap_or_else(|_| Err(std::io::Error::other("the stream's thread stopped"))),
            Err(e) => Err(e),
        };
        if let Err(e) = written {
            tracing::warn!(error = %e, "a streamed answer stopped");
            let _ = failed.send(Err(e)).await;
        }
    });
    let body = Body::from_stream(futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx)));
    ([("content-type", "application/json")], body).into_response()
}

thread_local! {
    static BULK_THREAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether this is a bulk stream's thread: blocking work done for it (reading older rows
/// from disk) runs here, at its low priority, instead of on the blocking pool at the
/// server's, so one tenant's downloads cannot take CPU from another's calls.
pub fn on_bulk_thread() -> bool {
    BULK_THREAD.with(|b| b.get())
}

/// Lower the calling thread's scheduling priority: its CPU goes to other work first.
fn lower_priority() {
    // SCHED_IDLE, not only a higher nice value: a niced thread still runs out its time slice
    // (milliseconds) before a woken request handler gets the CPU, an idle-class thread gives
    // it up at once. Any thread may move itself to it; nice is the fallback.
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: both calls only read their arguments; `0` names the calling thread.
    unsafe {
        if libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) != 0 {
            libc::setpriority(libc::PRIO_PROCESS, 0, 10);
        }
    }
}

/// Hands each buffer it is given to the stream's channel, waiting while the client has not
/// taken the last one.
pub struct ChunkSender(tokio::sync::mpsc::Sender<Result<bytes::Bytes, std::io::Error>>);

impl std::io::Write for ChunkSender {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.blocking_send(Ok(bytes::Bytes::copy_from_slice(buf))).map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the client went away"))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Authenticate, bound, redact and hand one request to a twin store; turn its reply into
/// the HTTP response. Shared by sandboxes and local twins.
pub async fn forward<T: crate::auth::AgentSecret + ?Sized>(store: &TwinStore, token: &T, base_url: String, limits: &Limits, req: Request, path: String, on_agent: impl FnOnce()) -> Response {
    let (parts, body) = req.into_parts();
    let query = parts.uri.query().unwrap_or("").to_string();
    // The credential in the headers or the query decides how much body is read: up to the
    // cap for the agent; for anyone else only what a credential in a form body (Slack's
    // `token=`) or a request the twin serves without the agent token (a seeded key) needs,
    // so a stranger cannot make the host read 16 MiB to refuse it.
    let head = crate::auth::twin_credential(&parts.headers, &query, None, &store.credentials);
    let agent_by_head = head.as_deref().is_some_and(|c| token.verify(c));
    let limit = if agent_by_head { limits.request_body_bytes } else { UNAUTHENTICATED_BODY_BYTES.min(limits.request_body_bytes) };
    let body = match axum::body::to_bytes(body, limit).await {
        Ok(b) => b,
        Err(_) if agent_by_head => {
            let msg = format!("request body is over the {} MiB limit", limits.request_body_bytes >> 20);
            return reply(store.render_error(HostErrorKind::PayloadTooLarge, msg).await);
        }
        Err(_) => {
            let msg = format!(
                "a request without this sandbox's agent token may carry at most {} KiB of body; send the agent token (Authorization: Bearer <agent_token>)",
                limit >> 10
            );
            let mut resp = reply(store.render_error(HostErrorKind::PayloadTooLarge, msg).await);
            if head.is_some() {
                resp.extensions_mut().insert(Refused);
            }
            return resp;
        }
    };
    let form = parts
        .headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("application/x-www-form-urlencoded"))
        .then_some(&body[..]);
    let presented = crate::auth::twin_credential(&parts.headers, &query, form, &store.credentials);
    let auth = match &presented {
        None => Auth::Missing,
        Some(c) if token.verify(c) => Auth::Agent,
        Some(_) => Auth::Invalid,
    };
    if auth == Auth::Agent {
        on_agent();
    }
    let secrets: Vec<&str> = token.clear().into_iter().collect();
    let mut headers: Vec<(String, String)> = parts
        .headers
        .iter()
        .filter(|(k, _)| !HOP_HEADERS.contains(&k.as_str()) && k.as_str() != CREDENTIAL_DIGEST)
        .map(|(k, v)| (k.as_str().to_string(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
        .collect();
    // A credential that is not the agent token may still be one the twin's world knows (an
    // API key in its seed). The twin gets its digest, never the key: the key is redacted
    // like every credential, and a client cannot send the digest itself.
    if auth == Auth::Invalid
        && let Some(c) = &presented
    {
        headers.push((CREDENTIAL_DIGEST.to_string(), crate::auth::hash_key(c)));
    }
    let twin_req = TwinRequest {
        request_id: current_request_id(),
        method: parts.method.as_str().to_string(),
        path,
        query: pome_tape::redact_text(&query, &secrets),
        headers: pome_tape::redact_headers(headers, &secrets),
        body: pome_tape::redact_bytes(body.to_vec(), &secrets),
        base_url,
        auth,
        via: None,
        tool: None,
    };
    reply(store.handle(twin_req).await)
}

fn reply(result: Result<TwinReply, pome_runtime::store::StoreError>) -> Response {
    let r = match result {
        Ok(r) => r,
        Err(e) => return ApiError::internal(format!("the twin is unavailable: {e}")).into_response(),
    };
    if r.refused {
        let mut resp = reply(Ok(TwinReply { refused: false, ..r }));
        resp.extensions_mut().insert(Refused);
        return resp;
    }
    let status = StatusCode::from_u16(r.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut headers = HeaderMap::with_capacity(r.headers.len());
    for (k, v) in r.headers.iter() {
        if HOP_HEADERS.contains(&k.as_str()) {
            continue;
        }
        if let (Ok(k), Ok(v)) = (HeaderName::from_bytes(k.as_bytes()), HeaderValue::from_str(v)) {
            headers.append(k, v);
        }
    }
    (status, headers, Body::from(r.body)).into_response()
}
