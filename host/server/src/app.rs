//! What every request handler shares, built once at start-up: the runtime and its twins, the
//! check catalogue, seed snapshots, open sandboxes, storage and metrics. Handlers read it
//! through axum's `State`; nothing here depends on how requests arrive.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use pome_runtime::limits::{Lifetimes, Limits};
use pome_runtime::metrics::Metrics;
use pome_runtime::seeds::{SeedCache, SeedImage};
use pome_runtime::{Runtime, TwinSet};

use axum::extract::FromRequestParts;
use axum::http::HeaderMap;
use axum::http::request::Parts;

use crate::error::{ApiError, ErrorType};
use crate::sandbox::{Identity, Registry, ReserveError, Sandbox, SandboxMeta, SandboxTwin};
use crate::storage::Storage;

/// Everything `pome serve` needs, already validated.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub listen: SocketAddr,
    pub data_dir: PathBuf,
    pub quota: usize,
    pub lifetimes: Lifetimes,
    pub limits: Limits,
    pub twins_dir: Option<PathBuf>,
    /// Where twins' webhooks may be delivered (`--deliver-to`), with the retry policy.
    pub outbound: pome_runtime::outbound::Policy,
    /// Register this key for the default team (so scripts know it).
    pub api_key: Option<String>,
    /// The URL clients reach this server at, when it is not what they send as `Host`.
    pub public_url: Option<String>,
    /// The domain under which `<sandbox>.<twin>.<public host>` reaches a sandbox's twin at
    /// its root (`--public-host`), for clients that take a host and not a URL (`gh`).
    pub public_host: Option<String>,
    /// Serve HTTPS with this certificate (`--tls-cert`/`--tls-key`).
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// Where compiled twins are cached; `<data_dir>/cache` by default.
    pub cache_dir: Option<PathBuf>,
    /// When an answered twin call is on disk (`--durability`).
    pub durability: crate::live::Durability,
    /// The PostgreSQL database that holds everything durable instead of the data
    /// directory's SQLite files (`--store`).
    pub store: Option<String>,
    /// How long a host's lease on the shared store lasts (`--lease`): a dead host's
    /// sandboxes move to another host this long after its last renewal.
    pub lease: std::time::Duration,
    /// How the other hosts reach this one (`--advertise-url`).
    pub advertise_url: Option<String>,
    /// How long a stop keeps serving with `/healthz` at 503 before it closes the listener
    /// (`--drain-wait`), so the load balancer in front stops sending requests first.
    pub drain_wait: std::time::Duration,
    /// Serve `/metrics` without an API key (`--metrics-public`), for a scraper on a
    /// trusted network.
    pub metrics_public: bool,
    /// Failed authentications one address may make per window (`--auth-failures`).
    pub auth_failures_allowed: u32,
    /// What every tenant shares: streams, whole runs, finalizes, live streams per team.
    pub host_limits: crate::limits::HostLimits,
}

/// The sandboxes being brought back at start. The server listens before they are back, so a
/// request for one of them waits (at most `RESTORE_WAIT`) rather than hearing 404.
pub struct Restoring {
    pending: std::sync::Mutex<std::collections::HashSet<String>>,
    /// Bumped each time one comes back (or fails to).
    changed: tokio::sync::watch::Sender<u64>,
    /// Records found malformed in live.db at start and moved aside.
    pub quarantined: std::sync::atomic::AtomicU64,
    /// Sandboxes found past their lifetime or idle clock at start, closed without replay.
    pub expired: std::sync::atomic::AtomicU64,
}

impl Default for Restoring {
    fn default() -> Restoring {
        Restoring {
            pending: Default::default(),
            changed: tokio::sync::watch::Sender::new(0),
            quarantined: Default::default(),
            expired: Default::default(),
        }
    }
}

impl Restoring {
    pub fn begin(&self, ids: impl IntoIterator<Item = String>) {
        self.pending.lock().unwrap().extend(ids);
    }

    /// Mark `id` as being restored unless it already is; true when this caller restores it.
    pub fn try_begin(&self, id: &str) -> bool {
        self.pending.lock().unwrap().insert(id.to_string())
    }

    pub fn finish(&self, id: &str) {
        self.pending.lock().unwrap().remove(id);
        self.changed.send_modify(|n| *n += 1);
    }

    /// Wait until `id` is back (or no longer being restored), at most `RESTORE_WAIT`.
    pub async fn wait_for(&self, id: &str) {
        self.wait_until(|p| !p.contains(id)).await
    }

    /// Wait until every sandbox is back, at most `RESTORE_WAIT`.
    pub async fn wait_all(&self) {
        self.wait_until(|p| p.is_empty()).await
    }

    async fn wait_until(&self, done: impl Fn(&std::collections::HashSet<String>) -> bool) {
        let mut changed = self.changed.subscribe();
        let _ = tokio::time::timeout(pome_runtime::limits::RESTORE_WAIT, async {
            loop {
                let finished = done(&self.pending.lock().unwrap());
                if finished || changed.changed().await.is_err() {
                    return;
                }
            }
        })
        .await;
    }
}

/// Shared by every request handler.
pub struct App {
    pub rt: Arc<Runtime>,
    pub twins: TwinSet,
    pub seeds: SeedCache,
    pub sandboxes: Arc<Registry>,
    pub storage: Storage,
    pub metrics: Arc<Metrics>,
    pub public_url: Option<String>,
    /// The domain of host-name routes (`ServeConfig::public_host`), with a port if it named one.
    pub public_host: Option<String>,
    /// Every twin's checks, built once at start-up.
    pub catalog: pome_grade::Catalog,
    /// Where twins' webhooks may go, and how they are retried.
    pub outbound: Arc<pome_runtime::outbound::Policy>,
    /// The twins deciding their own checks at finalize.
    pub decider: crate::twins::TwinDecider,
    /// The MCP door: each twin's tools, and the twin and control services.
    pub mcp: crate::mcp::Doors,
    /// Failed authentications per client address.
    pub auth_failures: crate::auth::AuthLimiter,
    /// Whether `/metrics` answers without a key.
    pub metrics_public: bool,
    /// The sandboxes being brought back at start, which requests for them wait for.
    pub restoring: Restoring,
    /// The permits that bound what all tenants share (`ServeConfig::host_limits`).
    pub gates: crate::limits::Gates,
    /// The other hosts of the service, when it has several (`--store postgres://…`).
    pub cluster: Option<Arc<crate::cluster::Cluster>>,
    /// Set once a stop begins with a drain wait: `/healthz` answers 503.
    pub draining: std::sync::atomic::AtomicBool,
    pub drain_wait: std::time::Duration,
}


/// The team a request's API key belongs to.
pub struct Team(pub String);

impl FromRequestParts<Arc<App>> for Team {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &Arc<App>) -> Result<Team, ApiError> {
        Caller::from_request_parts(parts, app).await.map(|c| Team(c.team))
    }
}

/// The key a control-plane request authenticated with: its team, its id and its hash.
/// Extracted from the headers alone, so it runs (and refuses) before any body extractor
/// reads a byte of the body.
pub struct Caller {
    pub team: String,
    pub key_id: String,
    pub key_hash: String,
}

/// The team key on a request, as `X-API-KEY` or `Authorization: Bearer`.
pub fn presented_key(headers: &HeaderMap) -> Option<&str> {
    headers
        .get("x-api-key")
        .and_then(|v| v.to_str().ok())
        .or_else(|| headers.get("authorization").and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer ")))
        .map(str::trim)
        .filter(|k| !k.is_empty())
}

/// The address a request came from (the TCP peer), when the listener recorded it.
pub fn client_addr(extensions: &axum::http::Extensions) -> std::net::IpAddr {
    extensions
        .get::<axum::extract::ConnectInfo<SocketAddr>>()
        .map_or(std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED), |c| c.0.ip())
}

/// The control plane's answer to an address past its allowance of failed authentications.
pub fn rate_limited(wait: std::time::Duration) -> ApiError {
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    ApiError::new(ErrorType::RateLimited, format!("too many failed authentications from your address; try again in {secs} s"))
        .with_details(serde_json::json!({"retry_after": secs}))
        .with_retry_after(secs)
}

impl App {
    /// Check a team key: the live key, or the refusal (401, or 429 once the client's
    /// address has failed too often). A valid key is never refused for its address.
    pub fn authenticate(&self, key: Option<&str>, addr: std::net::IpAddr) -> Result<Caller, ApiError> {
        let hash = key.map(crate::auth::hash_key);
        if let Some(live) = hash.as_deref().and_then(|h| self.storage.live_key_by_hash(h)) {
            return Ok(Caller { team: live.team, key_id: live.id, key_hash: hash.unwrap_or_default() });
        }
        if let Some(wait) = self.auth_failures.refused(addr) {
            return Err(rate_limited(wait));
        }
        self.auth_failures.failed(addr);
        Err(match key {
            None => ApiError::new(ErrorType::InvalidAuth, "missing API key: send your team key as `X-API-KEY: pme_…`"),
            Some(_) => ApiError::new(ErrorType::InvalidAuth, "invalid API key: check POME_API_KEY; keys look like pme_…"),
        })
    }
}

impl FromRequestParts<Arc<App>> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &Arc<App>) -> Result<Caller, ApiError> {
        app.authenticate(presented_key(&parts.headers), client_addr(&parts.extensions))
    }
}

/// The scheme and host clients reach this server at, for the URLs we hand out.
pub fn origin(app: &App, headers: &HeaderMap) -> String {
    if let Some(url) = &app.public_url {
        return url.trim_end_matches('/').to_string();
    }
    let host = headers.get("host").and_then(|v| v.to_str().ok()).unwrap_or("localhost");
    let proto = headers.get("x-forwarded-proto").and_then(|v| v.to_str().ok()).unwrap_or("http");
    format!("{proto}://{host}")
}

/// `<sandbox>.<twin>.<public host>[:port]`, the URL of a sandbox's twin by host name, when
/// the server has a public host: the scheme and port are those of `origin` unless
/// `--public-host` names a port.
pub fn host_url(app: &App, origin: &str, sandbox: &str, twin: &str) -> Option<String> {
    let public = app.public_host.as_deref()?;
    let (scheme, authority) = origin.split_once("://").unwrap_or(("http", origin));
    let port = authority.rsplit_once(':').map(|(_, p)| p).filter(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    let host = match port {
        Some(p) if !public.contains(':') => format!("{public}:{p}"),
        _ => public.to_string(),
    };
    Some(format!("{scheme}://{sandbox}.{twin}.{host}"))
}


/// Why a sandbox could not be created. Each becomes one API error (see `error.rs`).
#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    #[error("your team has {used} of {quota} concurrent sandboxes open; finalize or stop one and the slot frees immediately")]
    Quota { used: usize, quota: usize },
    #[error("the {twin} twin refused its seed: {message}")]
    SeedRejected { twin: String, message: String },
    #[error("the {twin} twin could not start: {message}")]
    TwinFailed { twin: String, message: String },
    #[error("the server holds {held_mib} MiB of its {budget_mib} MiB memory budget; open sandboxes keep working, new ones wait until some close")]
    OverBudget { held_mib: usize, budget_mib: usize },
    #[error("the {twin} twin could not start: {message}; open sandboxes keep working, new ones wait until some close")]
    NoRoom { twin: String, message: String },
    #[error("the sandbox could not be recorded durably: {0}")]
    Storage(String),
    #[error("the shared store cannot be reached: {0}")]
    Unavailable(String),
}

/// How one twin of a new sandbox comes up.
pub struct TwinBoot {
    pub name: String,
    /// Its seed text ("" = the twin's default world), as the sandbox's record keeps it.
    pub seed: String,
    /// The seed's world when the caller holds it already (a fork's parent does).
    pub image: Option<Arc<SeedImage>>,
    /// A fork's start: the rows it inherits, and the checkpoint to rebuild their world from.
    pub inherit: Option<Inheritance>,
}

/// What a forked twin starts from: rows 1..=N of another tape, and the newest checkpoint of
/// that tape at or before row N (none: replay from the seed).
pub struct Inheritance {
    pub base: Option<Arc<pome_runtime::store::Checkpoint>>,
    pub rows: Vec<pome_tape::TapeRow>,
}

impl App {
    /// Boot a sandbox of `names`, each from its seed text, all or nothing: every twin comes
    /// up, or the stores built so far are dropped (ending their tasks) with the slot.
    pub async fn create_sandbox(
        &self,
        team: &str,
        names: &[String],
        seeds: &[String],
        meta: SandboxMeta,
        idempotency_key: Option<String>,
    ) -> Result<Arc<Sandbox>, CreateError> {
        let boots = names.iter().zip(seeds).map(|(name, seed)| TwinBoot { name: name.clone(), seed: seed.clone(), image: None, inherit: None }).collect();
        self.open_sandbox(team, boots, meta, idempotency_key).await
    }

    /// Boot a sandbox of `boots`, all or nothing. A sandbox with nothing to inherit is
    /// recorded once its twins are up; a fork is recorded first, since its twins write
    /// their inherited rows to its journal, which (with several hosts) only the sandbox's
    /// recorded owner may write. A fork whose twins then fail is closed as discarded.
    pub async fn open_sandbox(&self, team: &str, boots: Vec<TwinBoot>, meta: SandboxMeta, idempotency_key: Option<String>) -> Result<Arc<Sandbox>, CreateError> {
        let budget = self.rt.limits.memory_budget;
        if self.rt.held.total() >= budget {
            // The seed cache is the one thing held that can be given back at once.
            self.seeds.clear();
        }
        let held = self.rt.held.total();
        if held >= budget {
            return Err(CreateError::OverBudget { held_mib: held >> 20, budget_mib: budget >> 20 });
        }
        let slot = self.sandboxes.reserve(team).map_err(|ReserveError::Quota { used, quota }| CreateError::Quota { used, quota })?;
        let identity = Identity::new(self.sandboxes.lifetimes);
        let live = self.sandboxes.live().cloned();
        let names: Vec<String> = boots.iter().map(|b| b.name.clone()).collect();
        let record = crate::live::SandboxRecord {
            id: identity.id.clone(),
            team_id: team.to_string(),
            token_hash: identity.token.hash().to_string(),
            legacy_token: None,
            legacy_discard_token: None,
            twins: names.clone(),
            seeds: boots.iter().map(|b| b.seed.clone()).collect(),
            twin_digests: names.iter().map(|n| hex::encode(self.twins[n].digest)).collect(),
            meta: meta.clone(),
            idempotency_key: idempotency_key.clone(),
            created_at_ms: crate::sandbox::unix_ms(identity.created_at),
            expires_at_ms: crate::sandbox::unix_ms(identity.expires_at),
            idle_deadline_ms: crate::sandbox::unix_ms(identity.idle_deadline),
        };
        let fork = boots.iter().any(|b| b.inherit.is_some());
        if fork {
            self.record(&record).await?;
        }
        let twins = match self.boot_twins(&identity.id, boots).await {
            Ok(twins) => twins,
            Err(e) => {
                if fork && let Some(live) = &live {
                    let reason = crate::sandbox::CloseReason::Discarded;
                    live.close(&identity.id, &crate::sandbox::Tombstone { team_id: team.to_string(), token_hash: record.token_hash.clone(), reason, run_id: None });
                }
                return Err(e);
            }
        };
        if !fork {
            // On disk before the token is handed out: an agent never holds a token a restart forgets.
            self.record(&record).await?;
        }
        let sandbox = self.sandboxes.open(slot, identity, twins, meta, idempotency_key);
        tracing::info!(sandbox = %sandbox.id, twins = ?names, forked_from = ?sandbox.meta.forked_from, "sandbox created");
        Ok(sandbox)
    }

    /// Each twin's store, up on its seed (and its inheritance, for a fork).
    async fn boot_twins(&self, id: &str, boots: Vec<TwinBoot>) -> Result<Vec<SandboxTwin>, CreateError> {
        let live = self.sandboxes.live().cloned();
        let mut twins = Vec::with_capacity(boots.len());
        for TwinBoot { name, seed, image: seed_image, inherit } in boots {
            let image = self.twins[&name].clone();
            let seed_image = match seed_image {
                Some(i) => i,
                None => self.seeds.get(&self.rt, &image, &seed).await.map_err(|e| match e {
                    pome_runtime::seeds::SeedError::Rejected(message) => CreateError::SeedRejected { twin: name.clone(), message },
                    other => CreateError::TwinFailed { twin: name.clone(), message: format!("loading its seed: {other}") },
                })?,
            };
            let journal = live.as_ref().map(|l| l.journal(id, &name));
            let (rt, metrics, outbound) = (self.rt.clone(), self.metrics.clone(), self.outbound.clone());
            let store = match inherit {
                None => pome_runtime::store::TwinStore::resume(rt, image, seed_image.clone(), metrics, outbound, journal, false).await,
                Some(Inheritance { base, rows }) => pome_runtime::store::TwinStore::fork(rt, image, seed_image.clone(), metrics, outbound, journal, base, rows).await,
            }
            .map_err(|e| {
                let (twin, message) = (name.clone(), e.to_string());
                match e {
                    pome_runtime::store::StoreError::NoRoom(_) => CreateError::NoRoom { twin, message },
                    _ => CreateError::TwinFailed { twin, message },
                }
            })?;
            twins.push(SandboxTwin { name, store, seed: seed_image });
        }
        Ok(twins)
    }

    /// Write a new sandbox's record where open sandboxes are kept durable (nowhere in
    /// memory-only mode).
    async fn record(&self, record: &crate::live::SandboxRecord) -> Result<(), CreateError> {
        let Some(live) = self.sandboxes.live() else { return Ok(()) };
        match &self.cluster {
            // Counted in the store, so creates on several hosts at once keep to the quota.
            Some(cluster) => match cluster.live.create(record, self.sandboxes.quota).await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(used)) => Err(CreateError::Quota { used, quota: self.sandboxes.quota }),
                Err(crate::storage::StorageError::Unavailable(why)) => Err(CreateError::Unavailable(why)),
                Err(e) => Err(CreateError::Storage(e.to_string())),
            },
            None => crate::live::wait(|done| live.put(record.clone(), done)).await.map_err(CreateError::Storage),
        }
    }
}

impl App {
    /// Take what a start found on disk: tombstones at once, sandboxes past their lifetime
    /// or idle clock (by the recorded times) closed without replaying anything, and the
    /// rest marked as being restored, so requests for them wait. Returns the sandboxes to
    /// bring back with [`App::restore`].
    pub fn admit_restored(&self, restored: crate::live::Restored) -> Vec<crate::live::SandboxRecord> {
        use crate::sandbox::{CloseReason, Tombstone};
        self.restoring.quarantined.fetch_add(restored.quarantined.len() as u64, std::sync::atomic::Ordering::Relaxed);
        for (id, tombstone) in restored.closed {
            self.sandboxes.restore_tombstone(id, tombstone);
        }
        let now = crate::sandbox::unix_ms(std::time::SystemTime::now());
        let live = self.sandboxes.live().cloned();
        let mut open = Vec::with_capacity(restored.open.len());
        for record in restored.open {
            let reason = if record.expires_at_ms <= now {
                CloseReason::LifetimeExpired
            } else if record.idle_deadline_ms <= now {
                CloseReason::IdleExpired
            } else {
                open.push(record);
                continue;
            };
            let tombstone = Tombstone { team_id: record.team_id, token_hash: record.token_hash, reason, run_id: None };
            if let Some(live) = &live {
                live.close(&record.id, &tombstone);
            }
            tracing::info!(sandbox = %record.id, reason = reason.as_str(), "a sandbox expired while the server was down; closed without replaying its tape");
            self.restoring.expired.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.sandboxes.restore_tombstone(record.id, tombstone);
        }
        self.restoring.begin(open.iter().map(|r| r.id.clone()));
        open
    }

    /// Bring back every sandbox open before a restart: the same id, token, twins and clocks,
    /// each twin's world rebuilt by replaying its tape on its seed snapshot. Sandboxes come
    /// back in parallel; one that cannot (its twin is gone, or replays differently) is
    /// logged and left on disk untouched. Returns how many came back.
    pub async fn restore(self: &Arc<Self>, open: Vec<crate::live::SandboxRecord>) -> usize {
        let parallel = std::thread::available_parallelism().map_or(2, |n| n.get() * 2);
        let gate = Arc::new(tokio::sync::Semaphore::new(parallel));
        let mut jobs = tokio::task::JoinSet::new();
        for record in open {
            let (app, gate) = (self.clone(), gate.clone());
            jobs.spawn(async move {
                let _permit = gate.acquire().await;
                let id = record.id.clone();
                let ok = match app.restore_one(record).await {
                    Ok(()) => true,
                    Err(e) => {
                        tracing::error!(sandbox = %id, error = %e, "a live sandbox could not be restored; its record stays on disk");
                        false
                    }
                };
                app.restoring.finish(&id);
                ok
            });
        }
        let mut n = 0;
        while let Some(ok) = jobs.join_next().await {
            n += usize::from(ok.unwrap_or(false));
        }
        n
    }

    pub(crate) async fn restore_one(&self, record: crate::live::SandboxRecord) -> anyhow::Result<()> {
        let live = self.sandboxes.live().cloned();
        let mut twins = Vec::with_capacity(record.twins.len());
        for (i, (name, seed)) in record.twins.iter().zip(&record.seeds).enumerate() {
            let image = self.twins.get(name).ok_or_else(|| anyhow::anyhow!("this server has no `{name}` twin"))?.clone();
            if record.twin_digests.get(i).is_some_and(|d| *d != hex::encode(image.digest)) {
                tracing::warn!(sandbox = %record.id, twin = %name, "the twin's component changed since the sandbox was created; replaying its tape on the new one");
            }
            let seed_image = self.seeds.get(&self.rt, &image, seed).await.map_err(|e| anyhow::anyhow!("the {name} seed: {e}"))?;
            let journal = live.as_ref().map(|l| l.journal(&record.id, name));
            let store = pome_runtime::store::TwinStore::resume(self.rt.clone(), image, seed_image.clone(), self.metrics.clone(), self.outbound.clone(), journal, true)
                .await
                .map_err(|e| anyhow::anyhow!("the {name} twin: {e}"))?;
            twins.push(SandboxTwin { name: name.clone(), store, seed: seed_image });
        }
        let identity = Identity {
            id: record.id,
            token: crate::auth::AgentToken::from_hash(record.token_hash),
            // Only held in memory: a discard token handed out before the restart is replaced
            // (the next 409 hands out this one).
            discard_token: crate::auth::new_id("dsc"),
            created_at: crate::sandbox::from_unix_ms(record.created_at_ms),
            expires_at: crate::sandbox::from_unix_ms(record.expires_at_ms),
            idle_deadline: crate::sandbox::from_unix_ms(record.idle_deadline_ms),
        };
        let slot = self.sandboxes.readmit(&record.team_id);
        self.sandboxes.open(slot, identity, twins, record.meta, record.idempotency_key);
        Ok(())
    }
}

impl From<CreateError> for ApiError {
    fn from(e: CreateError) -> ApiError {
        use CreateError::*;
        let message = e.to_string();
        match e {
            Quota { used, quota } => ApiError::new(ErrorType::QuotaExceeded, message).with_details(serde_json::json!({"sessions_used": used, "sessions_quota": quota})),
            SeedRejected { twin, message: why } => {
                ApiError::validation(message).with_details(serde_json::json!({"twin": twin, "error": "invalid_seed", "message": why}))
            }
            TwinFailed { twin, .. } => ApiError::internal(message).with_details(serde_json::json!({"twin": twin})),
            OverBudget { held_mib, budget_mib } => ApiError::new(ErrorType::ServerBusy, message)
                .with_details(serde_json::json!({"held_mib": held_mib, "budget_mib": budget_mib}))
                .with_retry_after(5),
            NoRoom { twin, .. } => ApiError::new(ErrorType::ServerBusy, message).with_details(serde_json::json!({"twin": twin})).with_retry_after(5),
            Storage(_) => ApiError::internal(message),
            Unavailable(_) => ApiError::new(ErrorType::ServerBusy, message).with_retry_after(1),
        }
    }
}

/// A control-plane request body, read up to the seed limit (`--seed-mib`: seeds and tasks are
/// the large ones). Past it the answer is the API's own 413 in the one error envelope.
pub struct ApiBody(pub bytes::Bytes);

impl axum::extract::FromRequest<Arc<App>> for ApiBody {
    type Rejection = ApiError;

    async fn from_request(req: axum::extract::Request, app: &Arc<App>) -> Result<ApiBody, ApiError> {
        let limit = app.rt.limits.seed_bytes;
        axum::body::to_bytes(req.into_body(), limit).await.map(ApiBody).map_err(|_| {
            ApiError::validation(format!("request body is over the {} MiB limit (pome serve --seed-mib)", limit >> 20))
                .with_status(axum::http::StatusCode::PAYLOAD_TOO_LARGE)
        })
    }
}

/// A control-plane query string, read into `T`; one that does not fit (`?limit=abc`, an
/// unknown name where `T` denies them) is a 422 in the one error envelope, naming what is
/// wrong, not axum's plain-text 400.
pub struct ApiQuery<T>(pub T);

impl<T: serde::de::DeserializeOwned + Send> FromRequestParts<Arc<App>> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &Arc<App>) -> Result<ApiQuery<T>, ApiError> {
        axum::extract::Query::<T>::from_request_parts(parts, app)
            .await
            .map(|q| ApiQuery(q.0))
            .map_err(|e| ApiError::validation(format!("the query string does not fit this route: {}", e.body_text())))
    }
}
