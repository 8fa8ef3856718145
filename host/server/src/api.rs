//! The control plane (`X-API-KEY: pme_…`): sandboxes (also spelled sessions), usage, runs
//! and named seeds. Every error leaves through [`ApiError`], in one shape.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::{get, post};
use axum::{Json, Router};
use bytes::Bytes;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::error::{ApiError, ErrorType};
use pome_contract::Credential;
use pome_runtime::limits::MAX_TWINS_PER_SANDBOX;
use crate::sandbox::{CloseReason, KeyClaim, Sandbox, SandboxMeta};
use crate::ops::open_sandbox;
use pome_runtime::seeds::SeedError;
use crate::app::{ApiBody, ApiQuery, App, Team, origin};
use crate::ops::state::{DiffQuery, Source, StateQuery};
use crate::ops::{Caller, fork::ForkRequest};

pub fn routes() -> Router<Arc<App>> {
    let sandbox_routes = || {
        Router::new()
            .route("/", post(create_sandbox).get(list_sandboxes))
            .route("/{id}", get(get_sandbox).delete(delete_sandbox))
            .route("/{id}/heartbeat", post(heartbeat))
            .route("/{id}/finalize", post(crate::finalize::finalize))
            .route("/{id}/fork", post(fork_sandbox))
            .route("/{id}/state", get(sandbox_state))
            .route("/{id}/diff", get(sandbox_diff))
    };
    Router::new()
        .nest("/v1/sandboxes", sandbox_routes())
        .nest("/v1/sessions", sandbox_routes())
        .route("/v1/usage", get(usage))
        .route("/v1/keys", post(create_key).get(list_keys))
        .route("/v1/keys/{id}", axum::routing::delete(revoke_key))
        .route("/v1/runs", get(list_runs))
        .route("/v1/runs/{id}", get(get_run))
        .route("/v1/runs/{id}/report", get(crate::task_api::report))
        .route("/v1/runs/{id}/fork", post(fork_run))
        .route("/v1/runs/{id}/state", get(run_state))
        .route("/v1/runs/{id}/diff", get(run_diff))
        .route("/v1/seeds", post(put_seed).get(list_seeds))
        .route("/v1/twins", get(list_twins))
        .route("/v1/tasks", post(crate::task_api::create).get(crate::task_api::list))
        .route("/v1/tasks/validate", post(crate::task_api::validate))
        .route("/v1/tasks/{id}", get(crate::task_api::show))
}

fn parse_json(body: &Bytes) -> Result<Value, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(json!({}));
    }
    serde_json::from_slice(body).map_err(|e| {
        ApiError::validation(format!("request body is not valid JSON: {e}")).with_status(StatusCode::BAD_REQUEST)
    })
}

fn opt_string(body: &Value, key: &str) -> Result<Option<String>, ApiError> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(ApiError::validation(format!("`{key}` must be a string")).with_details(json!({"field": key}))),
    }
}

async fn create_sandbox(State(app): State<Arc<App>>, Team(team): Team, headers: HeaderMap, ApiBody(body): ApiBody) -> Result<(StatusCode, Json<Value>), ApiError> {
    let body = parse_json(&body)?;
    let (status, v) = create(&app, &team, &headers, &body).await?;
    Ok((status, Json(v)))
}

/// Create a sandbox from a create body (REST `POST /v1/sandboxes`, MCP `create_sandbox` and
/// `run_task`): the sandbox as the API shows it, with its token.
pub async fn create(app: &Arc<App>, team: &str, headers: &HeaderMap, body: &Value) -> Result<(StatusCode, Value), ApiError> {
    let team = team.to_string();
    let idempotency_key = opt_string(body, "idempotency_key")?;
    if let Some(key) = &idempotency_key {
        // A retry waits for the create it repeats, however the two interleave.
        let give_up = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            match app.sandboxes.claim_key(&team, key) {
                KeyClaim::Existing(s) => return Ok((StatusCode::OK, sandbox_json(app, &s, &origin(app, headers), true))),
                KeyClaim::Claimed => break,
                KeyClaim::Busy if std::time::Instant::now() > give_up => {
                    return Err(ApiError::new(ErrorType::Conflict, format!("a create with idempotency key `{key}` is still in progress")));
                }
                KeyClaim::Busy => tokio::time::sleep(std::time::Duration::from_millis(10)).await,
            }
        }
    }
    let result = create_claimed(app, &team, headers, body, idempotency_key.clone()).await;
    if result.is_err()
        && let Some(key) = &idempotency_key
    {
        app.sandboxes.release_key(&team, key);
    }
    result
}

/// Create once the idempotency key (if any) is ours.
async fn create_claimed(app: &Arc<App>, team: &str, headers: &HeaderMap, body: &Value, idempotency_key: Option<String>) -> Result<(StatusCode, Value), ApiError> {

    // A task (`task_id` or `task_source`) names the twins and the seed.
    let task = crate::task_api::for_create(app, team, body).await?;
    let (names, seed) = match &task {
        Some((t, _)) => {
            let names = twin_names(app, &json!({"twins": t.config.twins}))?;
            if body.get("twins").is_some_and(|_| twin_names(app, body).ok().as_ref() != Some(&names)) {
                return Err(ApiError::validation(format!("`twins` differs from the task's twins {names:?}; leave it out")).with_details(json!({"field": "twins"})));
            }
            if body.get("seed").is_some_and(|v| !v.is_null()) {
                return Err(ApiError::validation("a sandbox created from a task boots from the task's seed; leave `seed` out").with_details(json!({"field": "seed"})));
            }
            (names, t.seed_for_create())
        }
        None => (twin_names(app, body)?, body.get("seed").cloned()),
    };
    let seeds = seed_texts(app, team, &names, seed.as_ref()).await?;
    let meta = SandboxMeta {
        task_id: task.as_ref().map(|(t, _)| t.id.clone()).or(opt_string(body, "task_id")?),
        task_version: task.as_ref().map(|(_, v)| v.clone()),
        group_id: opt_string(body, "group_id")?,
        agent_id: opt_string(body, "agent_id")?,
        agent_version: opt_string(body, "agent_version")?,
        forked_from: None,
    };

    let sandbox = app.create_sandbox(team, &names, &seeds, meta, idempotency_key).await?;
    Ok((StatusCode::CREATED, sandbox_json(app, &sandbox, &origin(app, headers), true)))
}

/// The `twins` list: the count is checked before the names, so four names are
/// `too_many_twins` whatever they are.
fn twin_names(app: &App, body: &Value) -> Result<Vec<String>, ApiError> {
    let list = match body.get("twins") {
        Some(Value::Array(a)) => a,
        Some(Value::String(s)) => return twin_names(app, &json!({"twins": [s]})),
        _ => return Err(ApiError::validation("`twins` is required: a list of one to three twin names, primary first").with_details(json!({"field": "twins"}))),
    };
    if list.len() > MAX_TWINS_PER_SANDBOX {
        return Err(ApiError::validation(format!(
            "a sandbox holds at most {MAX_TWINS_PER_SANDBOX} twins; {} were requested (this is fixed on every plan)",
            list.len()
        ))
        .with_details(json!({"error": "too_many_twins", "max": MAX_TWINS_PER_SANDBOX, "requested": list.len()})));
    }
    if list.is_empty() {
        return Err(ApiError::validation("`twins` is empty: name one to three twins").with_details(json!({"field": "twins"})));
    }
    let mut names = Vec::new();
    for v in list {
        let name = v.as_str().ok_or_else(|| ApiError::validation("`twins` must be a list of names"))?;
        if !app.twins.contains_key(name) {
            let available: Vec<&String> = app.twins.keys().collect();
            return Err(ApiError::validation(format!("unknown twin `{name}`; this server has {available:?}"))
                .with_details(json!({"error": "unknown_twin", "twin": name, "available": available})));
        }
        if names.iter().any(|n| n == name) {
            return Err(ApiError::validation(format!("twin `{name}` is named twice")).with_details(json!({"error": "duplicate_twin", "twin": name})));
        }
        names.push(name.to_string());
    }
    Ok(names)
}

/// One seed text per twin ("" = the twin's default world). With one twin the seed is flat
/// (or an envelope naming just that twin); with several it is an envelope `{twin: seed}`.
/// A string seed names a seed saved with `POST /v1/seeds`.
async fn seed_texts(app: &App, team: &str, names: &[String], seed: Option<&Value>) -> Result<Vec<String>, ApiError> {
    let mut per_twin: Vec<Option<Value>> = vec![None; names.len()];
    match seed {
        None | Some(Value::Null) => {}
        Some(Value::Object(map)) if is_envelope(map, names) => {
            for (k, v) in map {
                let i = names.iter().position(|n| n == k).expect("envelope keys are twin names");
                per_twin[i] = Some(v.clone());
            }
        }
        Some(Value::Object(map)) if names.len() > 1 => {
            let bad: Vec<&String> = map.keys().filter(|k| !names.contains(k)).collect();
            return Err(ApiError::validation(format!(
                "with several twins, `seed` is an envelope {{twin: seed}}; {bad:?} are not twins of this sandbox ({names:?})"
            ))
            .with_details(json!({"field": "seed"})));
        }
        Some(other) => per_twin[0] = Some(other.clone()),
    }
    let mut out = Vec::with_capacity(names.len());
    for (name, seed) in names.iter().zip(per_twin) {
        out.push(match seed {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(seed_name)) => match app.storage.seed(team, &seed_name).await? {
                Some((twin, text)) if twin == *name => text,
                Some((twin, _)) => {
                    return Err(ApiError::validation(format!("seed `{seed_name}` is for the {twin} twin, not {name}")).with_details(json!({"twin": name})));
                }
                None => return Err(ApiError::validation(format!("no saved seed named `{seed_name}`")).with_details(json!({"twin": name}))),
            },
            Some(v @ Value::Object(_)) => v.to_string(),
            Some(_) => return Err(ApiError::validation(format!("the seed for {name} must be a JSON object")).with_details(json!({"twin": name}))),
        });
    }
    Ok(out)
}

fn is_envelope(map: &Map<String, Value>, names: &[String]) -> bool {
    !map.is_empty() && map.keys().all(|k| names.contains(k)) && (names.len() > 1 || map.len() == 1 && map.values().all(Value::is_object))
}

fn rfc3339(t: std::time::SystemTime) -> String {
    humantime::format_rfc3339_seconds(t).to_string()
}

/// What a listing shows of a sandbox: held here, or (with several hosts) its record in the
/// shared store.
struct Shown<'a> {
    id: &'a str,
    twins: Vec<String>,
    created_at: std::time::SystemTime,
    expires_at: std::time::SystemTime,
    idle_expires_at: std::time::SystemTime,
    meta: &'a crate::sandbox::SandboxMeta,
}

impl<'a> From<&'a Sandbox> for Shown<'a> {
    fn from(s: &'a Sandbox) -> Shown<'a> {
        Shown { id: &s.id, twins: s.twin_names(), created_at: s.created_at, expires_at: s.expires_at(), idle_expires_at: s.idle_expires_at(), meta: &s.meta }
    }
}

impl<'a> From<&'a crate::live::SandboxRecord> for Shown<'a> {
    fn from(r: &'a crate::live::SandboxRecord) -> Shown<'a> {
        use crate::sandbox::from_unix_ms;
        Shown {
            id: &r.id,
            twins: r.twins.clone(),
            created_at: from_unix_ms(r.created_at_ms),
            expires_at: from_unix_ms(r.expires_at_ms),
            idle_expires_at: from_unix_ms(r.idle_deadline_ms.min(r.expires_at_ms)),
            meta: &r.meta,
        }
    }
}

fn shown_json(app: &App, s: &Shown, origin: &str) -> Value {
    let mut per_twin = Map::new();
    for t in &s.twins {
        let base = format!("{origin}/s/{}/{}", s.id, t);
        let client_path = app.twins.get(t).map_or("", |i| i.description.client_base_path.as_str());
        per_twin.insert(
            t.clone(),
            json!({
                "api_url": format!("{base}{client_path}"),
                "base_url": base,
                "events_url": format!("{base}/_pome/events"),
                "state_url": format!("{base}/_pome/state"),
                "health_url": format!("{base}/_pome/health"),
                "mcp_url": format!("{base}/mcp"),
            }),
        );
        // The twin at the root of a host name of its own, for clients that take a host.
        if let Some(url) = crate::app::host_url(app, origin, s.id, t) {
            per_twin[t]["host_url"] = json!(url);
        }
    }
    json!({
        "id": s.id,
        "session_id": s.id,
        "object": "sandbox",
        "state": "open",
        "twins": s.twins,
        "primary_twin": s.twins.first(),
        "created_at": rfc3339(s.created_at),
        "expires_at": rfc3339(s.expires_at),
        "idle_expires_at": rfc3339(s.idle_expires_at),
        "per_twin": per_twin,
        "task_id": s.meta.task_id,
        "task_version": s.meta.task_version,
        "group_id": s.meta.group_id,
        "agent_id": s.meta.agent_id,
        "agent_version": s.meta.agent_version,
        "forked_from": s.meta.forked_from,
    })
}

/// The sandbox as the API shows it, with both spellings of its id, its URLs on `origin`.
pub(crate) fn sandbox_json(app: &App, s: &Sandbox, origin: &str, with_token: bool) -> Value {
    let mut v = shown_json(app, &Shown::from(s), origin);
    // Only the hash of a sandbox's token outlives a restart: until its agent presents it
    // again, a restored sandbox cannot show it.
    if with_token && let Some(token) = crate::auth::AgentSecret::clear(&s.token) {
        v["agent_token"] = json!(token);
        // Twins whose clients expect a key of a vendor's shape get it ready-made.
        for t in &s.twins {
            let prefix = app.twins.get(&t.name).and_then(|i| Credential::prefix_of(&i.description.credentials));
            if let Some(p) = prefix {
                v["per_twin"][&t.name]["api_key"] = json!(format!("{p}{token}"));
            }
        }
        v["agent_env"] = agent_env(app, s, token, &v["per_twin"]);
    }
    v
}

/// The environment an agent gets for this sandbox (DESIGN §9): the host's own names, and for
/// each twin its URLs plus whatever its description declares (`POME_STRIPE_API_KEY`, …).
fn agent_env(app: &App, s: &Sandbox, token: &str, per_twin: &Value) -> Value {
    let mut env = Map::new();
    let mut put = |k: String, v: String| {
        env.insert(k, Value::String(v));
    };
    put("POME_SANDBOX_ID".into(), s.id.clone());
    put("POME_SESSION_ID".into(), s.id.clone());
    put("POME_AUTH_TOKEN".into(), token.to_string());
    put("POME_TWIN_NAMES".into(), s.twin_names().join(","));
    for t in &s.twins {
        let up = t.name.to_uppercase().replace('-', "_");
        let api_url = per_twin[&t.name]["api_url"].as_str().unwrap_or_default();
        let base_url = per_twin[&t.name]["base_url"].as_str().unwrap_or_default();
        put(format!("POME_{up}_REST_URL"), api_url.to_string());
        put(format!("POME_{up}_BASE_URL"), base_url.to_string());
        put(format!("POME_{up}_MCP_URL"), format!("{base_url}/mcp"));
        for var in app.twins.get(&t.name).map(|i| i.description.agent_env.as_slice()).unwrap_or_default() {
            put(var.name.clone(), var.render(api_url, base_url, token, &s.id));
        }
    }
    Value::Object(env)
}


async fn list_sandboxes(State(app): State<Arc<App>>, Team(team): Team, headers: HeaderMap) -> Result<Json<Value>, ApiError> {
    list(&app, &team, &headers).await.map(Json)
}

/// The team's open sandboxes (REST and MCP `list_sandboxes`): on every host, when the
/// service has several.
pub async fn list(app: &App, team: &str, headers: &HeaderMap) -> Result<Value, ApiError> {
    let origin = origin(app, headers);
    let list: Vec<Value> = match &app.cluster {
        Some(cluster) => cluster.live.team_records(team).await.map_err(store_busy)?.iter().map(|r| shown_json(app, &Shown::from(r), &origin)).collect(),
        None => app.sandboxes.list(team).iter().map(|s| sandbox_json(app, s, &origin, false)).collect(),
    };
    Ok(json!({"object": "list", "data": list}))
}

/// The shared store could not answer: 503, try again.
fn store_busy(e: crate::storage::StorageError) -> ApiError {
    ApiError::new(ErrorType::ServerBusy, format!("the shared store cannot be reached: {e}")).with_retry_after(1)
}

async fn get_sandbox(State(app): State<Arc<App>>, Team(team): Team, Path(id): Path<String>, headers: HeaderMap) -> Result<Json<Value>, ApiError> {
    let s = open_sandbox(&app, &team, &id)?;
    // The owning team sees the agent token again (`pome mcp-config` builds a client
    // configuration from it); listings never show tokens.
    Ok(Json(sandbox_json(&app, &s, &origin(&app, &headers), true)))
}

async fn heartbeat(State(app): State<Arc<App>>, Team(team): Team, Path(id): Path<String>) -> Result<Json<Value>, ApiError> {
    beat(&app, &team, &id).map(Json)
}

/// Reset a sandbox's idle timer (REST and MCP `heartbeat`).
pub fn beat(app: &App, team: &str, id: &str) -> Result<Value, ApiError> {
    let s = open_sandbox(app, team, id)?;
    s.touch();
    Ok(json!({
        "id": s.id, "session_id": s.id, "state": "open",
        "idle_expires_at": rfc3339(s.idle_expires_at()),
        "expires_at": rfc3339(s.expires_at()),
    }))
}

#[derive(Deserialize)]
struct DeleteQuery {
    confirm_discard: Option<String>,
}

async fn delete_sandbox(State(app): State<Arc<App>>, Team(team): Team, Path(id): Path<String>, ApiQuery(q): ApiQuery<DeleteQuery>) -> Result<Json<Value>, ApiError> {
    stop(&app, &team, &id, q.confirm_discard).await.map(Json)
}

/// Stop a sandbox (REST `DELETE`, MCP `stop_sandbox`): an ungraded one only with its discard
/// token, since stopping it loses its run. The close is committed before the answer, so a
/// discarded sandbox stays discarded across a crash.
pub async fn stop(app: &App, team: &str, id: &str, confirm_discard: Option<String>) -> Result<Value, ApiError> {
    let s = open_sandbox(app, team, id)?;
    match confirm_discard {
        Some(t) if crate::auth::same(&t, &s.discard_token) => {
            app.sandboxes.close(&s, CloseReason::Discarded, None);
            app.sandboxes.durable().await.map_err(|e| ApiError::internal(format!("sandbox {id} is discarded but its close could not be committed: {e}")))?;
            Ok(json!({"id": s.id, "session_id": s.id, "state": "closed", "discarded": true}))
        }
        Some(_) => Err(ApiError::new(ErrorType::Conflict, "confirm_discard does not match this sandbox's discard token")
            .with_details(json!({"reason": "bad_discard_token"}))),
        None => Err(ApiError::new(
            ErrorType::Conflict,
            format!("sandbox {id} has not been finalized, so stopping it discards its run; finalize it, or repeat with ?confirm_discard=<discard_token>"),
        )
        .with_details(json!({"reason": "ungraded_session", "discard_token": s.discard_token}))),
    }
}

/// Read every twin's tape and state, persist the run, then close the sandbox. The run is
/// committed before the answer; if it cannot be, the sandbox stays open and nothing is lost.
/// `POST /v1/keys`: a new key for the caller's team. The key is in this answer and nowhere
/// else: only its hash is stored.
async fn create_key(State(app): State<Arc<App>>, Team(team): Team) -> Result<(StatusCode, Json<Value>), ApiError> {
    let key = crate::auth::new_api_key();
    let id = app.storage.add_api_key(&team, &key).await?;
    Ok((StatusCode::CREATED, Json(json!({"id": id, "key": key, "prefix": &key[..12], "object": "api_key"}))))
}

async fn list_keys(State(app): State<Arc<App>>, Team(team): Team) -> Result<Json<Value>, ApiError> {
    Ok(Json(json!({"object": "list", "data": app.storage.api_keys(&team).await?})))
}

/// `DELETE /v1/keys/:id`: revoke a key; it stops working at once (no request with it
/// authenticates once this answers, and its live tape streams end). The key making the
/// request, however it was sent, cannot revoke itself, so a team cannot lock itself out by
/// accident.
async fn revoke_key(State(app): State<Arc<App>>, caller: crate::app::Caller, Path(id): Path<String>) -> Result<Json<Value>, ApiError> {
    let team = caller.team;
    if caller.key_id == id {
        return Err(ApiError::new(ErrorType::Conflict, "a key cannot revoke itself; revoke it with another of your team's keys"));
    }
    if !app.storage.revoke_api_key(&team, &id).await? {
        return Err(ApiError::not_found(format!("no live key {id} in your team")));
    }
    Ok(Json(json!({"id": id, "revoked": true})))
}

async fn usage(State(app): State<Arc<App>>, Team(team): Team) -> Result<Json<Value>, ApiError> {
    usage_of(&app, &team).await.map(Json)
}

/// The team's concurrency use (REST and MCP `usage`), across every host.
pub async fn usage_of(app: &App, team: &str) -> Result<Value, ApiError> {
    let used = match &app.cluster {
        Some(cluster) => cluster.live.team_records(team).await.map_err(store_busy)?.len(),
        None => app.sandboxes.used(team),
    };
    let quota = app.sandboxes.quota;
    Ok(json!({"sessions_used": used, "sessions_quota": quota, "sessions_remaining": quota.saturating_sub(used)}))
}

#[derive(Deserialize, Default)]
pub struct RunsQuery {
    pub group_id: Option<String>,
    pub task: Option<String>,
    /// `pass`, `fail`, `incomplete` or `ungraded`.
    pub verdict: Option<String>,
    /// Runs per page: 100 unless set, at most 1,000.
    pub limit: Option<usize>,
    /// The id of the last run of the previous page (the answer's `next_cursor`).
    pub starting_after: Option<String>,
}

/// The most runs one page holds, so a listing never loads a team's whole history.
const MAX_RUNS_PAGE: usize = 1_000;

async fn list_runs(State(app): State<Arc<App>>, Team(team): Team, ApiQuery(q): ApiQuery<RunsQuery>) -> Result<Json<Value>, ApiError> {
    runs(&app, &team, q).await.map(Json)
}

/// A page of the team's runs (REST and MCP `list_runs`).
pub async fn runs(app: &App, team: &str, q: RunsQuery) -> Result<Value, ApiError> {
    if let Some(v) = q.verdict.as_deref()
        && !["pass", "fail", "incomplete", "ungraded"].contains(&v)
    {
        return Err(ApiError::validation(format!("`verdict` is `{v}`; use pass, fail, incomplete or ungraded")).with_details(json!({"field": "verdict"})));
    }
    let limit = match q.limit {
        Some(n) if n == 0 || n > MAX_RUNS_PAGE => {
            return Err(ApiError::validation(format!("`limit` must be 1 to {MAX_RUNS_PAGE}")).with_details(json!({"field": "limit"})));
        }
        Some(n) => n,
        None => 100,
    };
    let filter = crate::storage::RunFilter { group_id: q.group_id, task_id: q.task, verdict: q.verdict };
    let page = crate::storage::RunPage { limit, starting_after: q.starting_after.clone() };
    let Some((runs, has_more)) = app.storage.runs(team, filter, page).await? else {
        let id = q.starting_after.unwrap_or_default();
        return Err(ApiError::validation(format!("`starting_after` names no run of your team: {id}")).with_details(json!({"field": "starting_after"})));
    };
    let next_cursor = if has_more { runs.last().map(|r| r.id.clone()) } else { None };
    Ok(json!({"object": "list", "data": runs, "has_more": has_more, "next_cursor": next_cursor}))
}

/// `GET /v1/runs/:id`: the run as stored, streamed a chunk at a time (a run holds its tapes
/// and worlds: it is never loaded whole to be served).
async fn get_run(State(app): State<Arc<App>>, Team(team): Team, Path(id): Path<String>) -> Result<Response, ApiError> {
    let row = app.storage.run_row(&team, &id).await?.ok_or_else(|| ApiError::not_found(format!("no run {id} in your team")))?;
    let storage = app.storage.clone();
    Ok(crate::proxy::bulk_stream(app.gates.bulk_streams.clone(), move |out| {
        use std::io::Write as _;
        let mut buf = vec![0u8; crate::proxy::STREAM_CHUNK];
        let mut offset = 0;
        loop {
            let n = storage.read_run(row, offset, &mut buf).map_err(std::io::Error::other)?;
            if n == 0 {
                return Ok(());
            }
            out.write_all(&buf[..n])?;
            offset += n;
        }
    }))
}

/// One of the team's runs (REST and MCP `get_run`).
pub async fn run(app: &App, team: &str, id: &str) -> Result<Value, ApiError> {
    match app.storage.run(team, id).await? {
        Some(run) => Ok(run),
        None => Err(ApiError::not_found(format!("no run {id} in your team"))),
    }
}

/// Save a named seed after the twin's own `init` accepted it.
async fn put_seed(State(app): State<Arc<App>>, Team(team): Team, ApiBody(body): ApiBody) -> Result<(StatusCode, Json<Value>), ApiError> {
    let body = parse_json(&body)?;
    let name = opt_string(&body, "name")?.ok_or_else(|| ApiError::validation("`name` is required"))?;
    let twin = opt_string(&body, "twin")?.ok_or_else(|| ApiError::validation("`twin` is required"))?;
    let image = app.twins.get(&twin).cloned().ok_or_else(|| ApiError::validation(format!("unknown twin `{twin}`")).with_details(json!({"error": "unknown_twin", "twin": twin})))?;
    let seed = match body.get("seed") {
        Some(v @ Value::Object(_)) => v.to_string(),
        _ => return Err(ApiError::validation("`seed` must be a JSON object")),
    };
    let (stored, cap) = (app.storage.seed_bytes(&team, &name).await?, app.rt.limits.team_seed_bytes);
    if stored + seed.len() > cap {
        return Err(ApiError::new(crate::error::ErrorType::QuotaExceeded, format!("your team's named seeds would hold {} MiB, over its {} MiB; delete or replace one", (stored + seed.len()) >> 20, cap >> 20))
            .with_details(json!({"error": "seed_storage_full", "stored_bytes": stored, "limit_bytes": cap})));
    }
    app.seeds.get(&app.rt, &image, &seed).await.map_err(|e| match e {
        SeedError::Rejected(msg) => ApiError::validation(format!("the {twin} twin refused the seed: {msg}")).with_details(json!({"twin": twin, "error": "invalid_seed", "message": msg})),
        other => ApiError::internal(format!("the {twin} twin failed while loading the seed: {other}")),
    })?;
    app.storage.put_seed(&team, &name, &twin, &seed).await?;
    Ok((StatusCode::CREATED, Json(json!({"name": name, "twin": twin}))))
}

async fn list_seeds(State(app): State<Arc<App>>, Team(team): Team) -> Result<Json<Value>, ApiError> {
    let seeds = app.storage.seeds(&team).await?;
    let data: Vec<Value> = seeds.into_iter().map(|(name, twin, _)| json!({"name": name, "twin": twin})).collect();
    Ok(Json(json!({"object": "list", "data": data})))
}

/// The twins this server hosts, with their descriptions.
async fn list_twins(State(app): State<Arc<App>>, Team(_): Team) -> Json<Value> {
    let data: Vec<Value> = app.twins.values().map(|t| json!({"name": t.name, "origin": t.origin, "description": t.description_json})).collect();
    Json(json!({"object": "list", "data": data}))
}

/// A request body read into an operation's typed request; what does not fit is a 422 naming
/// the field.
fn typed_body<T: serde::de::DeserializeOwned>(body: &Bytes) -> Result<T, ApiError> {
    serde_json::from_value(parse_json(body)?).map_err(|e| ApiError::validation(format!("the request body does not fit this route: {e}")))
}

/// `POST /v1/sandboxes/:id/fork`: a new sandbox whose worlds are this one's after the rows
/// `at` names (default: now).
async fn fork_sandbox(State(app): State<Arc<App>>, Team(team): Team, Path(id): Path<String>, headers: HeaderMap, ApiBody(body): ApiBody) -> Result<(StatusCode, Json<Value>), ApiError> {
    let caller = Caller::new(&app, team, &headers);
    let v = crate::ops::fork::fork_sandbox(&app, &caller, &id, typed_body::<ForkRequest>(&body)?).await?;
    Ok((StatusCode::CREATED, Json(v)))
}

/// `POST /v1/runs/:id/fork`: a new sandbox whose worlds are the run's after the rows `at`
/// names (default: its end).
async fn fork_run(State(app): State<Arc<App>>, Team(team): Team, Path(id): Path<String>, headers: HeaderMap, ApiBody(body): ApiBody) -> Result<(StatusCode, Json<Value>), ApiError> {
    let caller = Caller::new(&app, team, &headers);
    let v = crate::ops::fork::fork_run(&app, &caller, &id, typed_body::<ForkRequest>(&body)?).await?;
    Ok((StatusCode::CREATED, Json(v)))
}

/// A state export, as the twin wrote it.
fn state_answer(state: String) -> Response {
    use axum::response::IntoResponse;
    ([("content-type", "application/json")], state).into_response()
}

async fn sandbox_state(State(app): State<Arc<App>>, Team(team): Team, Path(id): Path<String>, ApiQuery(q): ApiQuery<StateQuery>) -> Result<Response, ApiError> {
    let source = Source::Sandbox(open_sandbox(&app, &team, &id)?);
    let twin = source.twin(q.twin.as_deref())?;
    crate::ops::state::state_at(&app, &team, &source, &twin, q.at).await.map(state_answer)
}

async fn sandbox_diff(State(app): State<Arc<App>>, Team(team): Team, Path(id): Path<String>, ApiQuery(q): ApiQuery<DiffQuery>) -> Result<Json<Value>, ApiError> {
    let source = Source::Sandbox(open_sandbox(&app, &team, &id)?);
    let twin = source.twin(q.twin.as_deref())?;
    crate::ops::state::diff(&app, &team, &source, &twin, &q).await.map(Json)
}

async fn run_state(State(app): State<Arc<App>>, Team(team): Team, Path(id): Path<String>, ApiQuery(q): ApiQuery<StateQuery>) -> Result<Response, ApiError> {
    let source = Source::Run(Box::new(crate::ops::whole_run(&app, &team, &id).await?));
    let twin = source.twin(q.twin.as_deref())?;
    crate::ops::state::state_at(&app, &team, &source, &twin, q.at).await.map(state_answer)
}

async fn run_diff(State(app): State<Arc<App>>, Team(team): Team, Path(id): Path<String>, ApiQuery(q): ApiQuery<DiffQuery>) -> Result<Json<Value>, ApiError> {
    let source = Source::Run(Box::new(crate::ops::whole_run(&app, &team, &id).await?));
    let twin = source.twin(q.twin.as_deref())?;
    crate::ops::state::diff(&app, &team, &source, &twin, &q).await.map(Json)
}
