//! Several hosts, one service (`pome serve --store postgres://…`, issue #33). Every host can
//! answer every request: a request naming a sandbox this host does not hold is sent on to the
//! host that owns it, or, when that host's lease ran out, the sandbox is claimed and rebuilt
//! here from its seed and tape. The store's directory is the authority: a host remembers
//! where it last found each sandbox, and looks again when the host there fails to answer or
//! says it no longer holds it.
//!
//! The rules that keep two hosts from serving one sandbox (leases, epochs, the fence in every
//! commit) live with the store, in `live/postgres.rs`.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderName};
use axum::response::{IntoResponse, Response};

use crate::app::App;
use crate::error::{ApiError, ErrorType};
use crate::live::postgres::Directory;
use crate::live::PgLive;
use crate::sandbox::Lookup;

/// Set on a request one host sends on to another: the receiver never sends it on again (a
/// second hop would mean the directory changed under the first; the client retries).
pub const FORWARDED_BY: &str = "x-pome-forwarded-by";

/// Set on a 503 from a host that was sent a request for a sandbox it does not hold.
const NOT_HERE: &str = "x-pome-not-here";
/// The most routes a host remembers.
const MAX_ROUTES: usize = 100_000;
/// How long a forward waits to connect to the owner.
const CONNECT_WAIT: Duration = Duration::from_secs(1);
/// How long a forwarded control-plane request waits for the owner's answer to begin.
const CONTROL_WAIT: Duration = Duration::from_secs(300);
/// How long a request waits for its sandbox to settle on a host (an owner handing it back
/// as it stops, a claim racing another) before it is answered 503.
const MOVE_WAIT: Duration = Duration::from_secs(3);

pub struct Cluster {
    pub live: Arc<PgLive>,
    http: reqwest::Client,
    /// Where other hosts' sandboxes were last found (sandbox → owner URL), so a forwarded
    /// request costs no directory read; an entry goes when a forward to it fails or the
    /// host there says it no longer holds the sandbox.
    routes: std::sync::Mutex<std::collections::HashMap<String, String>>,
}

impl Cluster {
    pub fn new(live: Arc<PgLive>) -> Cluster {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(CONNECT_WAIT)
            .pool_idle_timeout(Duration::from_secs(30))
            .build()
            .expect("an HTTP client with no TLS configuration builds");
        Cluster { live, http, routes: Default::default() }
    }

    fn cached(&self, sandbox: &str) -> Option<String> {
        self.routes.lock().unwrap().get(sandbox).cloned()
    }

    fn remember(&self, sandbox: &str, url: &str) {
        let mut routes = self.routes.lock().unwrap();
        // Bounded: a busy service forgets its routes now and then and reads them again.
        if routes.len() >= MAX_ROUTES {
            routes.clear();
        }
        routes.insert(sandbox.to_string(), url.to_string());
    }

    fn forget_route(&self, sandbox: &str) {
        self.routes.lock().unwrap().remove(sandbox);
    }

    /// Send the request to the host at `to` and relay its answer as it streams. `Err` when
    /// that host could not be reached (nothing was sent to it, or it never answered).
    async fn forward(&self, to: &str, parts: &axum::http::request::Parts, body: bytes::Bytes) -> Result<Response, String> {
        // A request routed by host name is sent on as the client made it (the owner routes
        // it by the same name); its path here is the rewritten one.
        let uri = parts.extensions.get::<Arc<crate::server::HostRoute>>().map_or(&parts.uri, |h| &h.uri);
        let url = format!("{}{}", to.trim_end_matches('/'), uri.path_and_query().map_or("/", |p| p.as_str()));
        let mut headers = end_to_end(&parts.headers);
        headers.insert(FORWARDED_BY, self.live.ownership.host.parse().expect("host ids are header-safe"));
        // An owner that does not start answering within its lease is paused or gone: by then
        // its lease has run out, and the sandbox can be claimed instead. (A twin call's answer
        // is bounded by its CPU deadline, far below a lease; control-plane work, such as
        // grading at finalize, may take longer.)
        let wait = if parts.uri.path().starts_with("/s/") { self.live.ownership.lease() } else { CONTROL_WAIT };
        let sent = self.http.request(parts.method.clone(), &url).headers(headers).body(body).send();
        let answer = match tokio::time::timeout(wait, sent).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(e)) => return Err(e.to_string()),
            Err(_) => return Err(format!("no answer within {wait:?}")),
        };
        let mut out = Response::builder().status(answer.status());
        if let Some(h) = out.headers_mut() {
            *h = end_to_end(answer.headers());
        }
        Ok(out.body(Body::from_stream(answer.bytes_stream())).unwrap_or_else(|_| busy("the sandbox's host sent an answer that could not be relayed").into_response()))
    }
}

/// The headers of a message without its hop-by-hop ones (RFC 9110 §7.6.1).
fn end_to_end(headers: &HeaderMap) -> HeaderMap {
    const HOP: [&str; 7] = ["connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade"];
    let named_by_connection: Vec<String> = headers.get_all("connection").iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(',')).map(|v| v.trim().to_ascii_lowercase()).collect();
    let mut out = HeaderMap::with_capacity(headers.len());
    for (k, v) in headers {
        let name = k.as_str();
        if HOP.contains(&name) || named_by_connection.iter().any(|c| c == name) {
            continue;
        }
        out.append(HeaderName::clone(k), v.clone());
    }
    out
}

fn busy(message: &str) -> ApiError {
    ApiError::new(ErrorType::ServerBusy, message).with_retry_after(1)
}

/// The sandbox a request path names, if any.
pub fn sandbox_in_path(path: &str) -> Option<&str> {
    ["/s/", "/ui/stream/", "/v1/sandboxes/", "/v1/sessions/"].iter().find_map(|p| path.strip_prefix(p)).map(|rest| rest.split('/').next().unwrap_or("")).filter(|id| !id.is_empty())
}

/// Before routing: a request naming a sandbox this host does not hold goes to its owner, or
/// the sandbox is claimed and rebuilt here when its owner is gone. Everything else passes.
pub async fn route<F: Future<Output = Response>>(app: Arc<App>, req: Request, next: impl FnOnce(Request) -> F) -> Response {
    let Some(cluster) = app.cluster.clone() else { return next(req).await };
    let Some(id) = sandbox_in_path(req.uri().path()).map(String::from) else { return next(req).await };
    // The request as it may be sent on, kept whole so it can be sent again: an owner that
    // is stopping refuses connections until it has handed its sandboxes back.
    let mut held: Option<(axum::http::request::Parts, bytes::Bytes)> = None;
    let mut req = Some(req);
    let deadline = tokio::time::Instant::now() + MOVE_WAIT;
    loop {
        if !matches!(app.sandboxes.lookup(&id), Lookup::Unknown) {
            break;
        }
        let owner_url = match cluster.cached(&id) {
            Some(url) => url,
            None => match cluster.live.directory(&id).await {
                Err(e) => return busy(&format!("the shared store cannot be reached: {e}")).into_response(),
                Ok(Directory::Unknown) => break,
                Ok(Directory::Closed(tombstone)) => {
                    app.sandboxes.restore_tombstone(id.clone(), tombstone);
                    break;
                }
                Ok(Directory::Open { owner, url, alive }) if alive && owner.as_deref() != Some(cluster.live.ownership.host.as_str()) => {
                    if url.is_empty() {
                        return busy("the host serving this sandbox has not said where it can be reached (pome serve --advertise-url)").into_response();
                    }
                    cluster.remember(&id, &url);
                    url
                }
                Ok(Directory::Open { .. }) => {
                    if let Err(e) = claim(&app, &cluster, &id).await {
                        return e.into_response();
                    }
                    if tokio::time::Instant::now() >= deadline {
                        return not_here();
                    }
                    continue;
                }
            },
        };
        let (parts, body) = match (&held, req.take()) {
            (Some(h), _) => h.clone(),
            (None, Some(r)) => {
                // One hop at most: the host this came from found us in the directory, and we
                // do not hold the sandbox; it looks again.
                if r.headers().contains_key(FORWARDED_BY) {
                    return not_here();
                }
                let (parts, body) = r.into_parts();
                let limit = app.rt.limits.request_body_bytes.max(app.rt.limits.seed_bytes);
                let Ok(body) = axum::body::to_bytes(body, limit).await else {
                    return ApiError::validation(format!("request body is over the {} MiB limit", limit >> 20))
                        .with_status(axum::http::StatusCode::PAYLOAD_TOO_LARGE)
                        .into_response();
                };
                held.insert((parts, body)).clone()
            }
            (None, None) => unreachable!("the request is held once taken"),
        };
        let failed = match cluster.forward(&owner_url, &parts, body).await {
            Ok(answer) if !answer.headers().contains_key(NOT_HERE) => return answer,
            Ok(answer) if tokio::time::Instant::now() >= deadline => return answer,
            Ok(_) => "the host no longer holds the sandbox".to_string(),
            Err(e) => e,
        };
        // The owner moved or is not answering: the directory says where it is now.
        cluster.forget_route(&id);
        if tokio::time::Instant::now() >= deadline {
            tracing::warn!(url = %owner_url, error = %failed, "forwarding to a sandbox's owner failed");
            return busy("the host serving this sandbox is not answering; retry in a moment (once its lease runs out, another host takes the sandbox over)").into_response();
        }
        tracing::debug!(url = %owner_url, error = %failed, "the sandbox's owner did not take the request; looking again");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let req = match (req, held) {
        (Some(req), _) => req,
        (None, Some((parts, body))) => Request::from_parts(parts, Body::from(body)),
        (None, None) => unreachable!("the request is held once taken"),
    };
    next(req).await
}

/// A 503 that tells the forwarding host to look in the directory again.
fn not_here() -> Response {
    let mut r = busy("this sandbox is moving between hosts; retry in a moment").into_response();
    r.headers_mut().insert(NOT_HERE, axum::http::HeaderValue::from_static("1"));
    r
}

/// Claim `id` and rebuild it here, once, however many requests ask at the same time.
/// Losing the claim to another host is not an error: the caller looks again.
async fn claim(app: &Arc<App>, cluster: &Cluster, id: &str) -> Result<(), ApiError> {
    if !app.restoring.try_begin(id) {
        app.restoring.wait_for(id).await;
        return Ok(());
    }
    let rebuilt = match cluster.live.claim(id).await {
        Ok(Some(record)) => app.restore_one(record).await.map_err(|e| {
            tracing::error!(sandbox = %id, error = %e, "a claimed sandbox could not be rebuilt");
            ApiError::internal(format!("the sandbox could not be rebuilt on this host: {e}"))
        }),
        Ok(None) => Ok(()),
        Err(e) => Err(busy(&format!("the sandbox could not be claimed: {e}"))),
    };
    app.restoring.finish(id);
    rebuilt
}

/// Keep the cluster's side of things going for the life of the server: drop the sandboxes
/// another host claimed, and close expired sandboxes whose hosts are gone.
pub fn start(app: &Arc<App>, cluster: &Arc<Cluster>, mut stopped: tokio::sync::watch::Receiver<bool>) -> tokio::task::JoinHandle<()> {
    let mut lost = cluster.live.take_lost();
    let (app, cluster) = (app.clone(), cluster.clone());
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(2));
        loop {
            tokio::select! {
                Some(id) = async { match lost.as_mut() { Some(l) => l.recv().await, None => std::future::pending().await } } => {
                    app.sandboxes.forget(&id);
                }
                _ = tick.tick() => {
                    match cluster.live.close_orphans_expired().await {
                        Ok(0) => {}
                        Ok(n) => tracing::info!(closed = n, "closed expired sandboxes whose hosts are gone"),
                        Err(e) => tracing::warn!(error = %e, "closing expired sandboxes of hosts that are gone failed; trying again"),
                    }
                }
                _ = stopped.changed() => break,
            }
        }
    })
}
