//! The hosted API: opens storage, loads twins, binds the listener, serves the control plane
//! and twin traffic, sweeps expired sandboxes, and shuts down gracefully.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use cap_std::ambient_authority;
use cap_std::fs::Dir;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tracing::Instrument as _;

use crate::error::{ApiError, REQUEST_ID};
use pome_runtime::limits::Limits;
use pome_runtime::metrics::Metrics;
use pome_runtime::engine::Runtime;
use crate::sandbox::Registry;
use pome_runtime::seeds::SeedCache;
use crate::storage::Storage;

pub use crate::app::{App, ServeConfig};

/// A server that is running; dropping it does not stop it, `shutdown` does.
pub struct Running {
    pub addr: SocketAddr,
    /// A key created on this start (first start with an empty data dir), to show the user.
    pub new_api_key: Option<String>,
    pub app: Arc<App>,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Running {
    /// Stop accepting, let in-flight requests finish, close every sandbox. With a drain
    /// wait (`--drain-wait`), `/healthz` first answers 503 for that long while everything
    /// else is served as before, so a load balancer stops sending requests here before the
    /// listener closes.
    pub async fn shutdown(self) {
        let wait = self.app.drain_wait;
        if !wait.is_zero() {
            self.app.draining.store(true, std::sync::atomic::Ordering::Relaxed);
            tracing::info!(wait = ?wait, "draining: /healthz answers 503 so load balancers stop sending requests here");
            tokio::time::sleep(wait).await;
        }
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }

    /// Wait until the server stops (it stops on `shutdown` or a signal).
    pub async fn wait(self) {
        let _ = self.task.await;
    }
}

/// Open a directory as a capability: nothing reached through it can escape it.
pub fn open_dir(path: &std::path::Path) -> anyhow::Result<Dir> {
    // Made private when made: the data directory's cache, a twins directory.
    if !path.exists() {
        use std::os::unix::fs::DirBuilderExt as _;
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(path).with_context(|| format!("creating {}", path.display()))?;
    }
    Dir::open_ambient_dir(path, ambient_authority()).with_context(|| format!("opening {}", path.display()))
}

/// The runtime, with its compiled-component cache (`<data_dir>/cache` by default).
pub fn runtime(limits: Limits, data_dir: &std::path::Path) -> anyhow::Result<Arc<Runtime>> {
    Runtime::new(limits, Some(open_dir(&data_dir.join("cache"))?))
}

pub async fn start(cfg: ServeConfig) -> anyhow::Result<Running> {
    let rt = match &cfg.cache_dir {
        Some(dir) => Runtime::new(cfg.limits.clone(), Some(open_dir(dir)?))?,
        None => runtime(cfg.limits.clone(), &cfg.data_dir)?,
    };
    let twins_dir = cfg.twins_dir.as_deref().map(open_dir).transpose()?;
    let twins = crate::twins::load_all(&rt, twins_dir.as_ref()).await?;
    if twins.is_empty() {
        anyhow::bail!("no twins to serve: build them with `make twins`, or pass --twins-dir DIR with twin components");
    }
    for (name, image) in &twins {
        let d = &image.description;
        tracing::info!(twin = %name, version = %d.version, contract = %d.contract, routes = d.surface.len(), checks = d.checks.len(), from = %image.origin, "serving twin");
    }
    let catalog = pome_grade::Catalog::new(twins.values().map(|i| &i.description));
    let decider = crate::twins::TwinDecider { rt: rt.clone(), twins: twins.clone() };
    if let Some(key) = &cfg.api_key
        && !crate::auth::is_api_key_shaped(key)
    {
        anyhow::bail!("POME_API_KEY must look like `pme_` followed by at least 16 letters, digits, `_` or `-`; unset it to have pome make one");
    }
    // Keys' hashes, tapes and seeds are the tenants' own: only this user may read them,
    // whatever the umask.
    private_dir(&cfg.data_dir)?;
    let gates = crate::limits::Gates::new(cfg.host_limits);
    let storage = match &cfg.store {
        Some(url) => Storage::connect(url).await.with_context(|| format!("opening the store at {}", redact_password(url)))?,
        None => {
            private_file(&cfg.data_dir.join("pome.db"))?;
            Storage::open(&cfg.data_dir.join("pome.db")).context("opening the database")?
        }
    };
    let storage = storage.with_whole_runs(gates.whole_runs.clone());
    let (team, _) = storage.ensure_default_team().await?;
    let new_api_key = match &cfg.api_key {
        Some(key) => {
            storage.add_api_key(&team, key).await?;
            None
        }
        None if !storage.team_has_keys(&team).await? => {
            let key = crate::auth::new_api_key();
            storage.add_api_key(&team, &key).await?;
            Some(key)
        }
        None => None,
    };

    // Live sandboxes from before this start: their records are read now (quick), their
    // worlds are rebuilt in the background once the server listens; a request for one that
    // is not back yet waits for it. On PostgreSQL these are the sandboxes no live host owns,
    // claimed for this one.
    let mut cluster = None;
    let (live, restored) = match (cfg.durability, &cfg.store) {
        (crate::live::Durability::Memory, _) => (None, None),
        (mode, Some(url)) => {
            let pg = crate::live::PgLive::connect(url, mode, cfg.lease).await.with_context(|| format!("opening the live sandboxes at {}", redact_password(url)))?;
            cluster = Some(Arc::new(crate::cluster::Cluster::new(pg.clone())));
            let live: Arc<dyn crate::live::LiveStore> = Arc::new(crate::live::PgLiveStore(pg));
            let restored = live.load()?;
            (Some(live), Some(restored))
        }
        (mode, None) => {
            let (live, restored) = open_live(&cfg.data_dir.join("live.db"), mode)?;
            (Some(live), Some(restored))
        }
    };

    let metrics = Arc::new(Metrics::default());
    let mcp = crate::mcp::Doors::new(cfg.limits.request_body_bytes, &twins);
    let app = Arc::new(App {
        rt: rt.clone(),
        twins,
        seeds: SeedCache::new(cfg.limits.seed_cache_entries),
        sandboxes: Registry::new(cfg.quota, cfg.lifetimes, metrics.clone()),
        storage,
        metrics,
        public_url: cfg.public_url.clone(),
        public_host: cfg.public_host.as_deref().map(|h| h.trim().trim_end_matches('/').to_ascii_lowercase()).filter(|h| !h.is_empty()),
        catalog,
        decider,
        outbound: Arc::new(cfg.outbound.clone()),
        mcp,
        auth_failures: crate::auth::AuthLimiter::new(cfg.auth_failures_allowed),
        metrics_public: cfg.metrics_public,
        restoring: Default::default(),
        gates,
        cluster: cluster.clone(),
        draining: Default::default(),
        drain_wait: cfg.drain_wait,
    });

    let mut restoring = None;
    if let (Some(live), Some(restored)) = (&live, restored) {
        app.sandboxes.set_live(live.clone());
        if !restored.quarantined.is_empty() {
            tracing::error!(
                records = restored.quarantined.len(),
                sandboxes = ?restored.quarantined,
                "the live store held malformed records; they were moved to its quarantine table and those sandboxes are not restored"
            );
        }
        let open = app.admit_restored(restored);
        if !open.is_empty() {
            let app = app.clone();
            restoring = Some(tokio::spawn(async move {
                let (started, found) = (std::time::Instant::now(), open.len());
                let back = app.restore(open).await;
                tracing::info!(restored = back, found, ms = started.elapsed().as_millis() as u64, "live sandboxes restored");
            }));
        }
    }

    // Every connection is a file descriptor: take what the system allows, and say so when the
    // cap cannot be reached.
    let files = rlimit::increase_nofile_limit(u64::MAX).unwrap_or(0);
    if files < cfg.limits.max_connections as u64 + 256 {
        tracing::warn!(open_files = files, max_connections = cfg.limits.max_connections, "the open-file limit is below the connection cap; raise it (ulimit -n) or lower --max-connections");
    }
    let listener = TcpListener::bind(cfg.listen).await.with_context(|| format!("binding {}", cfg.listen))?;
    let addr = listener.local_addr()?;
    let (stop, stopped) = watch::channel(false);
    let cluster_task = match &cluster {
        Some(c) => {
            let url = advertised(&cfg, addr);
            c.live.advertise(&url).await.with_context(|| "recording this host's address in the store")?;
            tracing::info!(host = %c.live.ownership.host, %url, "serving as one host of several; other hosts forward this host's sandboxes' requests to it here");
            Some(crate::cluster::start(&app, c, stop.subscribe()))
        }
        None => None,
    };

    // Expired sandboxes free their memory and slots even if nobody calls them again.
    let sweeper = {
        let registry = app.sandboxes.clone();
        let mut stopped = stop.subscribe();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(250));
            loop {
                tokio::select! {
                    _ = tick.tick() => { registry.sweep(); }
                    _ = stopped.changed() => break,
                }
            }
        })
    };

    let entry = entry(app.clone());
    let registry = app.sandboxes.clone();
    let conn_limits = crate::listener::ConnLimits::from(&cfg.limits);
    let tls = cfg.tls.clone();
    let task = tokio::spawn(async move {
        let mut stopping = stopped.clone();
        let closing = tokio::spawn(async move {
            // Long answers (the dashboard's live tape) end when the server stops.
            let _ = stopping.changed().await;
            crate::ui::shutting_down();
        });
        crate::listener::serve_with(listener, entry, conn_limits, tls, stopped).await;
        closing.abort();
        sweeper.abort();
        // Sandboxes still coming back are closed with the rest once they are.
        if let Some(restoring) = restoring {
            let _ = restoring.await;
        }
        registry.close_all();
        // Every row written so far is on disk before the process may exit.
        if let Some(live) = live {
            let _ = crate::live::wait(|done| live.flush(done)).await;
        }
        // Hand the sandboxes over: other hosts claim them on their next request at once,
        // instead of waiting out this host's lease.
        if let Some(task) = cluster_task {
            task.abort();
        }
        if let Some(cluster) = cluster
            && let Err(e) = cluster.live.release().await
        {
            tracing::warn!(error = %e, "handing this host's sandboxes back failed; other hosts take them over once its lease runs out");
        }
    });
    tracing::info!(%addr, twins = ?app.twins.keys().collect::<Vec<_>>(), "pome listening");
    Ok(Running { addr, new_api_key, app, stop, task })
}

/// Where every request enters: [`Entry`] over the router of everything but twin calls.
pub fn entry(app: Arc<App>) -> Entry {
    let routes = Router::new()
        .merge(crate::api::routes())
        .merge(crate::ui::routes())
        .route("/mcp", any(crate::mcp::control::door))
        .route("/metrics", get(metrics))
        .route("/healthz", get(healthz))
        .fallback(|| async { ApiError::not_found("no such route; the API lives under /v1 and twins under /s/<sandbox>/<twin>/") })
        .method_not_allowed_fallback(|| async { ApiError::not_found("this route does not take that method") })
        .with_state(app.clone())
        .layer(middleware::from_fn_with_state(app.clone(), before_routing))
        // Inside the request context, so a panic's answer carries the request id.
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(panic_answer))
        .layer(middleware::from_fn(request_context));
    Entry { app, routes }
}

/// Every request's first stop. A twin call (`/s/<sandbox>/<twin>/…`: nearly all of a busy
/// server's traffic) goes to the proxy through the same steps, in the same order, that the
/// router's layers give every other request (request id and span, panic guard, restore wait
/// and cluster routing), written out once: as layers they cost each call a route match and
/// a boxed future apiece. A request by host name is first rewritten to its `/s/` path.
#[derive(Clone)]
pub struct Entry {
    app: Arc<App>,
    routes: Router,
}

impl tower_service::Service<Request> for Entry {
    type Response = Response;
    type Error = std::convert::Infallible;
    type Future = std::pin::Pin<Box<dyn std::future::Future<Output = Result<Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, _: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut req: Request) -> Self::Future {
        if self.app.public_host.is_some()
            && let Err(answer) = by_host(&self.app, &mut req)
        {
            return Box::pin(std::future::ready(Ok(answer)));
        }
        // `/s/{*rest}`: the rest may not be empty.
        let path = req.uri().path();
        if path.len() > 3 && path.starts_with("/s/") {
            let app = self.app.clone();
            return Box::pin(async move { Ok(twin_call(app, req).await) });
        }
        let call = self.routes.call(req);
        Box::pin(call)
    }
}

/// A twin call, as [`Entry`] says.
async fn twin_call(app: Arc<App>, req: Request) -> Response {
    use futures_util::FutureExt as _;
    in_request_context(req, |req| async move {
        let served = arrive(app.clone(), req, |req| crate::proxy::sandbox_twin(State(app), req));
        std::panic::AssertUnwindSafe(served).catch_unwind().await.unwrap_or_else(panic_answer)
    })
    .await
}

/// A request to a sandbox's twin by host name, `<sandbox>.<twin>.<public host>`: served as
/// `/s/<sandbox>/<twin>` followed by its path. Clients that take a host and not a URL (`gh`
/// pointed at an Enterprise host, `@googleapis/gmail`) reach a sandbox this way.
pub struct HostRoute {
    /// What the client called the twin's root (`https://ses_….github.example.com:8443`):
    /// the base of the URLs the twin hands out.
    pub origin: String,
    /// The request's URI as the client sent it (before it was rewritten to `/s/…`).
    pub uri: axum::http::Uri,
}

/// Rewrite a request by host name (see [`HostRoute`]) to its `/s/` path; `Err` is the answer
/// when no such path can be made. Any other request is left as it is.
fn by_host(app: &App, req: &mut Request) -> Result<(), Response> {
    let public = host_name(app.public_host.as_deref().unwrap_or_default());
    // HTTP/2 names the host in the URI (`:authority`), HTTP/1.1 in `Host`.
    let host = req.uri().authority().map(|a| a.as_str().to_string()).or_else(|| req.headers().get("host").and_then(|v| v.to_str().ok()).map(String::from));
    let Some(host) = host else { return Ok(()) };
    let name = host_name(&host).to_ascii_lowercase();
    let Some((sandbox, twin)) = name.strip_suffix(public).and_then(|n| n.strip_suffix('.')).and_then(|n| n.split_once('.')) else {
        return Ok(());
    };
    if sandbox.is_empty() || twin.is_empty() || twin.contains('.') {
        return Ok(());
    }
    let path = req.uri().path_and_query().map_or("/", |p| p.as_str());
    let Ok(uri) = format!("/s/{sandbox}/{twin}{path}").parse() else {
        return Err(ApiError::not_found("no such route").into_response());
    };
    let proto = req.headers().get("x-forwarded-proto").and_then(|v| v.to_str().ok()).unwrap_or("http").to_string();
    let sent = std::mem::replace(req.uri_mut(), uri);
    req.extensions_mut().insert(std::sync::Arc::new(HostRoute { origin: format!("{proto}://{host}"), uri: sent }));
    Ok(())
}

/// `host[:port]` without its port and trailing dot.
fn host_name(host: &str) -> &str {
    let name = match host.rsplit_once(':') {
        Some((name, port)) if !name.contains(':') && port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    };
    name.trim_end_matches('.')
}

/// What every request naming a sandbox passes before it is served: while sandboxes come back
/// after a start, a request that names one waits until it is back, and one about every
/// sandbox (a listing, usage, a create) until all are, at most `RESTORE_WAIT` (everything
/// else is served at once); then, on a cluster, a request for a sandbox another host holds
/// goes there ([`crate::cluster::route`]). `then` serves it here.
async fn arrive<F: std::future::Future<Output = Response>>(app: Arc<App>, req: Request, then: impl FnOnce(Request) -> F) -> Response {
    let path = req.uri().path();
    match crate::cluster::sandbox_in_path(path) {
        Some(id) => app.restoring.wait_for(id).await,
        _ if matches!(path, "/v1/sandboxes" | "/v1/sessions" | "/v1/usage" | "/mcp") => app.restoring.wait_all().await,
        _ => {}
    }
    crate::cluster::route(app, req, then).await
}

/// [`arrive`] as the router's layer.
async fn before_routing(State(app): State<Arc<App>>, req: Request, next: Next) -> Response {
    arrive(app, req, |req| next.run(req)).await
}

/// `/healthz`: 200 while this host takes requests, 503 once it is draining.
async fn healthz(State(app): State<Arc<App>>) -> Response {
    if app.draining.load(std::sync::atomic::Ordering::Relaxed) {
        return (axum::http::StatusCode::SERVICE_UNAVAILABLE, "draining").into_response();
    }
    "ok".into_response()
}

/// A handler that panicked still answers: 500 in the one envelope, logged with its request id.
fn panic_answer(cause: Box<dyn std::any::Any + Send + 'static>) -> Response {
    let what = cause.downcast_ref::<String>().map(String::as_str).or_else(|| cause.downcast_ref::<&str>().copied()).unwrap_or("a panic");
    tracing::error!(request_id = %crate::error::current_request_id(), panic = %what, "a handler panicked");
    ApiError::internal("the server failed while answering; the request id identifies it in the server's log").into_response()
}

/// `/metrics`: Prometheus text. It tells how busy the server is and which twins run, so it
/// needs a team key unless `pome serve --metrics-public`.
async fn metrics(State(app): State<Arc<App>>, req: Request) -> Response {
    if !app.metrics_public
        && let Err(e) = app.authenticate(crate::app::presented_key(req.headers()), crate::app::client_addr(req.extensions()))
    {
        return e.into_response();
    }
    let mut text = app.metrics.render();
    // The host's own counters, before the exposition's end marker.
    let end = text.rfind("# EOF").unwrap_or(text.len());
    let ordering = std::sync::atomic::Ordering::Relaxed;
    let mut ours = String::new();
    for (name, help, value) in [
        ("pome_auth_failures", "Failed authentications (a missing or wrong key or token)", app.auth_failures.failures.load(ordering)),
        ("pome_auth_rate_limited", "Attempts refused with 429 after too many failed authentications from one address", app.auth_failures.refusals.load(ordering)),
        ("pome_live_records_quarantined", "Malformed records found in live.db at start and moved to its quarantine table", app.restoring.quarantined.load(ordering)),
        ("pome_live_expired_at_start", "Sandboxes found expired at start and closed without replay", app.restoring.expired.load(ordering)),
    ] {
        ours.push_str(&format!("# HELP {name} {help}.\n# TYPE {name} counter\n{name}_total {value}\n"));
    }
    text.insert_str(end, &ours);
    ([("content-type", "text/plain; version=0.0.4")], text).into_response()
}

/// How other hosts reach this one: `--advertise-url`, else this host's name (or the address
/// it listens on, when that names one) and port.
fn advertised(cfg: &ServeConfig, addr: SocketAddr) -> String {
    if let Some(url) = &cfg.advertise_url {
        return url.trim_end_matches('/').to_string();
    }
    let scheme = if cfg.tls.is_some() { "https" } else { "http" };
    let host = if addr.ip().is_unspecified() {
        hostname().unwrap_or_else(|| "localhost".into())
    } else {
        match addr.ip() {
            std::net::IpAddr::V6(ip) => format!("[{ip}]"),
            ip => ip.to_string(),
        }
    };
    format!("{scheme}://{host}:{}", addr.port())
}

fn hostname() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most `buf.len()` bytes into `buf`.
    let r = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let end = buf.iter().position(|&b| b == 0)?;
    (r == 0 && end > 0).then(|| String::from_utf8_lossy(&buf[..end]).into_owned())
}

/// Create `dir` (and its parents) if needed, and make it this user's alone (0700), however
/// it was created before.
fn private_dir(dir: &std::path::Path) -> anyhow::Result<()> {
    use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).with_context(|| format!("creating {}", dir.display()))?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).with_context(|| format!("making {} private (0700)", dir.display()))
}

/// A connection string as it may be logged: without its password.
fn redact_password(url: &str) -> String {
    match url.parse::<tokio_postgres::Config>() {
        Ok(c) => {
            let hosts: Vec<String> = c.get_hosts().iter().map(|h| match h {
                tokio_postgres::config::Host::Tcp(name) => name.clone(),
                tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
            }).collect();
            format!("database {} on {} as {}", c.get_dbname().unwrap_or("(default)"), hosts.join(","), c.get_user().unwrap_or("(default)"))
        }
        Err(_) => "the given connection string".into(),
    }
}

/// Create the database file `path` as this user's alone (0600) before SQLite opens it, and
/// tighten it and its write-ahead log and shared-memory files if they exist (SQLite gives
/// those the database file's mode).
fn private_file(path: &std::path::Path) -> anyhow::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
    std::fs::OpenOptions::new().create(true).append(true).mode(0o600).open(path).with_context(|| format!("creating {}", path.display()))?;
    for suffix in ["", "-wal", "-shm"] {
        let file = std::path::PathBuf::from(format!("{}{suffix}", path.display()));
        if file.exists() {
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).with_context(|| format!("making {} private (0600)", file.display()))?;
        }
    }
    Ok(())
}

/// Open live.db and read its sandboxes. A file that is not a database (or one SQLite finds
/// corrupt) does not stop the start: it is renamed `live.db.corrupt-<unix seconds>`, beside
/// its log files, and a fresh one is made. The sandboxes it held are lost, so this is logged
/// as an error.
fn open_live(path: &std::path::Path, mode: crate::live::Durability) -> anyhow::Result<(Arc<dyn crate::live::LiveStore>, crate::live::Restored)> {
    let attempt = || -> Result<(Arc<dyn crate::live::LiveStore>, crate::live::Restored), crate::storage::StorageError> {
        private_file(path).map_err(|e| crate::storage::StorageError::Corrupt(format!("{e:#}")))?;
        let live: Arc<dyn crate::live::LiveStore> = Arc::new(crate::live::Live(crate::live::SqliteLive::open(path, mode)?));
        let restored = live.load()?;
        Ok((live, restored))
    };
    match attempt() {
        Ok(opened) => Ok(opened),
        Err(crate::storage::StorageError::Sql(rusqlite::Error::SqliteFailure(e, _)))
            if matches!(e.code, rusqlite::ErrorCode::NotADatabase | rusqlite::ErrorCode::DatabaseCorrupt) =>
        {
            let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
            let aside = std::path::PathBuf::from(format!("{}.corrupt-{stamp}", path.display()));
            for from in std::iter::once(path.to_path_buf()).chain(crate::live::files_beside(path)) {
                let suffix = from.to_string_lossy()[path.as_os_str().len()..].to_string();
                let to = format!("{}{suffix}", aside.display());
                if from.exists() {
                    std::fs::rename(&from, &to).with_context(|| format!("moving the corrupt {} aside", from.display()))?;
                }
            }
            tracing::error!(
                error = %e,
                moved_to = %aside.display(),
                "live.db is not a database SQLite can read; it was moved aside and a fresh one made. The open sandboxes it held are not restored"
            );
            attempt().context("opening a fresh live.db")
        }
        Err(e) => Err(anyhow::Error::new(e).context("opening live.db")),
    }
}

/// `req_<process prefix><counter>`: unique across restarts (random prefix) without a
/// syscall per request.
fn next_request_id() -> String {
    static PREFIX: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let prefix = PREFIX.get_or_init(|| crate::auth::new_id("req"));
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{}{n:08x}", &prefix[..12])
}

/// Give every request an id (the caller's `x-request-id` when it is sane) and a span that
/// carries it, the sandbox and the twin, while `serve` answers it.
async fn in_request_context<F: std::future::Future<Output = Response>>(req: Request, serve: impl FnOnce(Request) -> F) -> Response {
    let rid = req
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 64 && v.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'))
        .map(String::from)
        .unwrap_or_else(next_request_id);
    let span = tracing::info_span!("request", request_id = %rid, method = %req.method(), path = %req.uri().path(), sandbox = tracing::field::Empty, twin = tracing::field::Empty);
    let mut resp = REQUEST_ID.scope(rid.clone(), serve(req)).instrument(span).await;
    if let Ok(v) = rid.parse() {
        resp.headers_mut().insert("x-request-id", v);
    }
    resp
}

/// [`in_request_context`] as the router's layer.
async fn request_context(req: Request, next: Next) -> Response {
    in_request_context(req, |req| next.run(req)).await
}
