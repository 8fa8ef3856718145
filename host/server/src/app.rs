//! What every request handler shares, built once at start-up: the runtime and its twins, the
//! check catalogue, seed snapshots, open sandboxes, storage and metrics. Handlers read it
//! through axum's `State`; nothing here depends on how requests arrive.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use pome_runtime::limits::{Lifetimes, Limits};
use pome_runtime::metrics::Metrics;
use pome_runtime::seeds::SeedCache;
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
    /// Where compiled twins are cached; `<data_dir>/cache` by default.
    pub cache_dir: Option<PathBuf>,
    /// When an answered twin call is on disk (`--durability`).
    pub durability: crate::live::Durability,
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
    /// Every twin's checks, built once at start-up.
    pub catalog: pome_grade::Catalog,
    /// Where twins' webhooks may go, and how they are retried.
    pub outbound: Arc<pome_runtime::outbound::Policy>,
    /// The twins deciding their own checks at finalize.
    pub decider: crate::twins::TwinDecider,
    /// The MCP door: each twin's tools, and the twin and control services.
    pub mcp: crate::mcp::Doors,
}


/// The team a request's API key belongs to.
pub struct Team(pub String);

impl FromRequestParts<Arc<App>> for Team {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &Arc<App>) -> Result<Team, ApiError> {
        let key = parts
            .headers
            .get("x-api-key")
            .and_then(|v| v.to_str().ok())
            .or_else(|| parts.headers.get("authorization").and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer ")))
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .ok_or_else(|| ApiError::new(ErrorType::InvalidAuth, "missing API key: send your team key as `X-API-KEY: pme_…`"))?;
        match app.storage.team_for_key(key).await? {
            Some(team) => Ok(Team(team)),
            None => Err(ApiError::new(ErrorType::InvalidAuth, "invalid API key: check POME_API_KEY; keys look like pme_…")),
        }
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
    #[error("the sandbox could not be recorded durably: {0}")]
    Storage(String),
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
        let (held, budget) = (self.rt.held.total(), self.rt.limits.memory_budget);
        if held >= budget {
            return Err(CreateError::OverBudget { held_mib: held >> 20, budget_mib: budget >> 20 });
        }
        let slot = self.sandboxes.reserve(team).map_err(|ReserveError::Quota { used, quota }| CreateError::Quota { used, quota })?;
        let identity = Identity::new(self.sandboxes.lifetimes);
        let live = self.sandboxes.live().cloned();
        let mut twins = Vec::with_capacity(names.len());
        for (name, seed) in names.iter().zip(seeds) {
            let image = self.twins[name].clone();
            let seed_image = self.seeds.get(&self.rt, &image, seed).await.map_err(|e| match e {
                pome_runtime::seeds::SeedError::Rejected(message) => CreateError::SeedRejected { twin: name.clone(), message },
                other => CreateError::TwinFailed { twin: name.clone(), message: format!("loading its seed: {other}") },
            })?;
            let journal = live.as_ref().map(|l| l.journal(&identity.id, name));
            let store = pome_runtime::store::TwinStore::resume(self.rt.clone(), image, seed_image.clone(), self.metrics.clone(), self.outbound.clone(), journal, false)
                .await
                .map_err(|e| CreateError::TwinFailed { twin: name.clone(), message: e.to_string() })?;
            twins.push(SandboxTwin { name: name.clone(), store, seed: seed_image });
        }
        if let Some(live) = &live {
            // On disk before the token is handed out: an agent never holds a token a restart forgets.
            let record = crate::live::SandboxRecord {
                id: identity.id.clone(),
                team_id: team.to_string(),
                token: identity.token.clone(),
                discard_token: identity.discard_token.clone(),
                twins: names.to_vec(),
                seeds: seeds.to_vec(),
                twin_digests: names.iter().map(|n| hex::encode(self.twins[n].digest)).collect(),
                meta: meta.clone(),
                idempotency_key: idempotency_key.clone(),
                created_at_ms: crate::sandbox::unix_ms(identity.created_at),
                expires_at_ms: crate::sandbox::unix_ms(identity.expires_at),
                idle_deadline_ms: crate::sandbox::unix_ms(identity.idle_deadline),
            };
            crate::live::wait(|done| live.put(record, done)).await.map_err(CreateError::Storage)?;
        }
        let sandbox = self.sandboxes.open(slot, identity, twins, meta, idempotency_key);
        tracing::info!(sandbox = %sandbox.id, twins = ?names, "sandbox created");
        Ok(sandbox)
    }
}

impl App {
    /// Bring back every sandbox open before a restart: the same id, token, twins and clocks,
    /// each twin's world rebuilt by replaying its tape on its seed snapshot. Sandboxes come
    /// back in parallel; one that cannot (its twin is gone, or replays differently) is
    /// logged and left on disk untouched. Returns how many came back.
    pub async fn restore(self: &Arc<Self>, restored: crate::live::Restored) -> usize {
        for (id, tombstone) in restored.closed {
            self.sandboxes.restore_tombstone(id, tombstone);
        }
        let parallel = std::thread::available_parallelism().map_or(2, |n| n.get() * 2);
        let gate = Arc::new(tokio::sync::Semaphore::new(parallel));
        let mut jobs = tokio::task::JoinSet::new();
        for record in restored.open {
            let (app, gate) = (self.clone(), gate.clone());
            jobs.spawn(async move {
                let _permit = gate.acquire().await;
                let id = record.id.clone();
                match app.restore_one(record).await {
                    Ok(()) => true,
                    Err(e) => {
                        tracing::error!(sandbox = %id, error = %e, "a live sandbox could not be restored; its record stays on disk");
                        false
                    }
                }
            });
        }
        let mut n = 0;
        while let Some(ok) = jobs.join_next().await {
            n += usize::from(ok.unwrap_or(false));
        }
        n
    }

    async fn restore_one(&self, record: crate::live::SandboxRecord) -> anyhow::Result<()> {
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
            token: record.token,
            discard_token: record.discard_token,
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
            Storage(_) => ApiError::internal(message),
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
