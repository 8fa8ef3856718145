//! The control plane (`X-API-KEY: pme_…`): sandboxes (also spelled sessions), usage, runs
//! and named seeds. Every error leaves through [`ApiError`], in one shape.

use std::sync::Arc;

use axum::extract::{FromRequestParts, Path, Query, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use axum::{Json, Router};
use bytes::Bytes;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::error::{ApiError, ErrorType};
use crate::limits::MAX_TWINS_PER_SANDBOX;
use crate::sandbox::{CloseReason, Lookup, ReserveError, Sandbox, SandboxMeta, SandboxTwin};
use crate::seeds::SeedError;
use crate::server::App;
use crate::store::TwinStore;

pub fn routes() -> Router<Arc<App>> {
    let sandbox_routes = || {
        Router::new()
            .route("/", post(create_sandbox).get(list_sandboxes))
            .route("/{id}", get(get_sandbox).delete(delete_sandbox))
            .route("/{id}/heartbeat", post(heartbeat))
            .route("/{id}/finalize", post(finalize))
    };
    Router::new()
        .nest("/v1/sandboxes", sandbox_routes())
        .nest("/v1/sessions", sandbox_routes())
        .route("/v1/usage", get(usage))
        .route("/v1/runs", get(list_runs))
        .route("/v1/runs/{id}", get(get_run))
        .route("/v1/runs/{id}/report", get(crate::task_api::report))
        .route("/v1/seeds", post(put_seed).get(list_seeds))
        .route("/v1/twins", get(list_twins))
        .route("/v1/tasks", post(crate::task_api::create).get(crate::task_api::list))
        .route("/v1/tasks/validate", post(crate::task_api::validate))
        .route("/v1/tasks/{id}", get(crate::task_api::show))
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

async fn create_sandbox(State(app): State<Arc<App>>, Team(team): Team, headers: HeaderMap, body: Bytes) -> Result<(StatusCode, Json<Value>), ApiError> {
    if body.len() > app.rt.limits.seed_bytes {
        return Err(ApiError::validation(format!("request body is over the {} MiB limit", app.rt.limits.seed_bytes >> 20))
            .with_status(StatusCode::PAYLOAD_TOO_LARGE));
    }
    let body = parse_json(&body)?;
    let idempotency_key = opt_string(&body, "idempotency_key")?;
    if let Some(key) = &idempotency_key {
        if let Some(existing) = app.sandboxes.by_idempotency_key(&team, key) {
            return Ok((StatusCode::OK, Json(sandbox_json(&app, &existing, &headers, true))));
        }
    }

    // A task (`task_id` or `task_source`) names the twins and the seed.
    let task = crate::task_api::for_create(&app, &team, &body).await?;
    let (names, seed) = match &task {
        Some(t) => {
            let names = twin_names(&app, &json!({"twins": t.config.twins}))?;
            if body.get("twins").is_some_and(|_| twin_names(&app, &body).ok().as_ref() != Some(&names)) {
                return Err(ApiError::validation(format!("`twins` differs from the task's twins {names:?}; leave it out")).with_details(json!({"field": "twins"})));
            }
            if body.get("seed").is_some_and(|v| !v.is_null()) {
                return Err(ApiError::validation("a sandbox created from a task boots from the task's seed; leave `seed` out").with_details(json!({"field": "seed"})));
            }
            (names, t.seed_for_create())
        }
        None => (twin_names(&app, &body)?, body.get("seed").cloned()),
    };
    let seeds = seed_texts(&app, &team, &names, seed.as_ref()).await?;
    let meta = SandboxMeta {
        task_id: task.as_ref().map(|t| t.id.clone()).or(opt_string(&body, "task_id")?),
        group_id: opt_string(&body, "group_id")?,
        agent_id: opt_string(&body, "agent_id")?,
        agent_version: opt_string(&body, "agent_version")?,
    };

    let slot = app.sandboxes.reserve(&team).map_err(|ReserveError::Quota { used, quota }| {
        ApiError::new(
            ErrorType::QuotaExceeded,
            format!("your team has {used} of {quota} concurrent sandboxes open; finalize or stop one and the slot frees immediately"),
        )
        .with_details(json!({"sessions_used": used, "sessions_quota": quota}))
    })?;

    // All or nothing: every twin comes up, or the stores built so far are dropped (ending
    // their tasks) with the slot, and the caller learns which twin failed and why.
    let mut twins = Vec::with_capacity(names.len());
    for (name, seed) in names.iter().zip(&seeds) {
        let image = app.twins[name].clone();
        let seed_image = app.seeds.get(&app.rt, &image, seed).await.map_err(|e| match e {
            SeedError::Rejected(msg) => ApiError::validation(format!("the {name} twin refused its seed: {msg}"))
                .with_details(json!({"twin": name, "error": "invalid_seed", "message": msg})),
            other => ApiError::internal(format!("the {name} twin failed while loading its seed: {other}"))
                .with_details(json!({"twin": name})),
        })?;
        let store = TwinStore::start(app.rt.clone(), image, seed_image.clone(), app.metrics.clone())
            .await
            .map_err(|e| ApiError::internal(format!("the {name} twin could not start: {e}")).with_details(json!({"twin": name})))?;
        twins.push(SandboxTwin { name: name.clone(), store, seed: seed_image });
    }
    let sandbox = app.sandboxes.open(slot, twins, meta, idempotency_key);
    tracing::info!(sandbox = %sandbox.id, twins = ?names, "sandbox created");
    Ok((StatusCode::CREATED, Json(sandbox_json(&app, &sandbox, &headers, true))))
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

/// The sandbox as the API shows it, with both spellings of its id.
fn sandbox_json(app: &App, s: &Sandbox, headers: &HeaderMap, with_token: bool) -> Value {
    let origin = origin(app, headers);
    let mut per_twin = Map::new();
    for t in &s.twins {
        let base = format!("{origin}/s/{}/{}", s.id, t.name);
        let client_path = app.twins.get(&t.name).map_or("", |i| i.description.client_base_path.as_str());
        per_twin.insert(
            t.name.clone(),
            json!({
                "api_url": format!("{base}{client_path}"),
                "base_url": base,
                "events_url": format!("{base}/_pome/events"),
                "state_url": format!("{base}/_pome/state"),
                "health_url": format!("{base}/_pome/health"),
            }),
        );
    }
    let mut v = json!({
        "id": s.id,
        "session_id": s.id,
        "object": "sandbox",
        "state": "open",
        "twins": s.twin_names(),
        "primary_twin": s.twins[0].name,
        "created_at": rfc3339(s.created_at),
        "expires_at": rfc3339(s.expires_at()),
        "idle_expires_at": rfc3339(s.idle_expires_at()),
        "per_twin": per_twin,
        "task_id": s.meta.task_id,
        "group_id": s.meta.group_id,
        "agent_id": s.meta.agent_id,
        "agent_version": s.meta.agent_version,
    });
    if with_token {
        v["agent_token"] = json!(s.token);
    }
    v
}

/// The team's open sandbox `id`: another team's id is 404, a closed one 410.
fn open_sandbox(app: &App, team: &str, id: &str) -> Result<Arc<Sandbox>, ApiError> {
    match app.sandboxes.lookup(id) {
        Lookup::Open(s) if s.team_id == team => Ok(s),
        Lookup::Closed(t) if t.team_id == team => Err(ApiError::expired(id, t.reason.as_str())),
        _ => Err(ApiError::not_found(format!("no sandbox {id} in your team"))),
    }
}

async fn list_sandboxes(State(app): State<Arc<App>>, Team(team): Team, headers: HeaderMap) -> Json<Value> {
    let list: Vec<Value> = app.sandboxes.list(&team).iter().map(|s| sandbox_json(&app, s, &headers, false)).collect();
    Json(json!({"object": "list", "data": list}))
}

async fn get_sandbox(State(app): State<Arc<App>>, Team(team): Team, Path(id): Path<String>, headers: HeaderMap) -> Result<Json<Value>, ApiError> {
    let s = open_sandbox(&app, &team, &id)?;
    Ok(Json(sandbox_json(&app, &s, &headers, false)))
}

async fn heartbeat(State(app): State<Arc<App>>, Team(team): Team, Path(id): Path<String>) -> Result<Json<Value>, ApiError> {
    let s = open_sandbox(&app, &team, &id)?;
    s.touch();
    Ok(Json(json!({
        "id": s.id, "session_id": s.id, "state": "open",
        "idle_expires_at": rfc3339(s.idle_expires_at()),
        "expires_at": rfc3339(s.expires_at()),
    })))
}

#[derive(Deserialize)]
struct DeleteQuery {
    confirm_discard: Option<String>,
}

async fn delete_sandbox(State(app): State<Arc<App>>, Team(team): Team, Path(id): Path<String>, Query(q): Query<DeleteQuery>) -> Result<Json<Value>, ApiError> {
    let s = open_sandbox(&app, &team, &id)?;
    match q.confirm_discard {
        Some(t) if crate::auth::same(&t, &s.discard_token) => {
            app.sandboxes.close(&s, CloseReason::Discarded, None);
            Ok(Json(json!({"id": s.id, "session_id": s.id, "state": "closed", "discarded": true})))
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
async fn finalize(State(app): State<Arc<App>>, Team(team): Team, Path(id): Path<String>) -> Result<Json<Value>, ApiError> {
    let s = open_sandbox(&app, &team, &id)?;
    if !app.sandboxes.begin_close(&s, CloseReason::Finalized) {
        return Err(ApiError::expired(&id, s.closing().map_or("closing", CloseReason::as_str)));
    }
    let mut run = match collect_run(&s).await {
        Ok(run) => run,
        Err(e) => {
            app.sandboxes.abort_close(&s);
            return Err(e);
        }
    };
    // Graded before it is written: the verdict is in the same row, the same transaction.
    if let Err(e) = crate::task_api::grade_into(&app, &team, s.meta.task_id.as_deref(), &mut run).await {
        app.sandboxes.abort_close(&s);
        return Err(e);
    }
    if let Err(e) = app.storage.insert_run(&team, &run).await {
        app.sandboxes.abort_close(&s);
        return Err(e.into());
    }
    let run_id = run["id"].as_str().unwrap_or_default().to_string();
    app.sandboxes.close(&s, CloseReason::Finalized, Some(run_id.clone()));
    let tape_rows: usize = run["per_twin"].as_object().map_or(0, |m| m.values().map(|t| t["tape"].as_array().map_or(0, Vec::len)).sum());
    Ok(Json(json!({
        "run_id": run_id,
        "id": s.id,
        "session_id": s.id,
        "state": "closed",
        "verdict": run["verdict"],
        "score": run["score"],
        "pass_threshold": run["pass_threshold"],
        "criteria_results": run.get("criteria_results").cloned().unwrap_or(json!([])),
        "tape_rows": tape_rows,
    })))
}

async fn collect_run(s: &Sandbox) -> Result<Value, ApiError> {
    let mut per_twin = Map::new();
    for t in &s.twins {
        let tape = t.store.tape().await.map_err(|e| ApiError::internal(format!("reading the {} tape: {e}", t.name)))?;
        let final_state = t.store.state().await.map_err(|e| ApiError::internal(format!("reading the {} state: {e}", t.name)))?;
        let parse = |s: &str| serde_json::from_str::<Value>(s).unwrap_or(Value::String(s.to_string()));
        let (initial, fin) = (parse(&t.seed.state), parse(&final_state));
        per_twin.insert(
            t.name.clone(),
            json!({
                "diff": crate::grade::diff::state_diff(&initial, &fin),
                "initial_state": initial,
                "final_state": fin,
                "tape": tape.iter().map(|r| serde_json::to_value(&**r).unwrap_or(Value::Null)).collect::<Vec<_>>(),
            }),
        );
    }
    Ok(json!({
        "id": crate::auth::new_id("run"),
        "object": "run",
        "session_id": s.id,
        "twins": s.twin_names(),
        "primary_twin": s.twins[0].name,
        "task_id": s.meta.task_id,
        "group_id": s.meta.group_id,
        "agent_id": s.meta.agent_id,
        "agent_version": s.meta.agent_version,
        "created_at": rfc3339(s.created_at),
        "finalized_at": crate::storage::now(),
        "verdict": Value::Null,
        "per_twin": per_twin,
    }))
}

async fn usage(State(app): State<Arc<App>>, Team(team): Team) -> Json<Value> {
    let used = app.sandboxes.used(&team);
    let quota = app.sandboxes.quota;
    Json(json!({"sessions_used": used, "sessions_quota": quota, "sessions_remaining": quota.saturating_sub(used)}))
}

#[derive(Deserialize)]
struct RunsQuery {
    group_id: Option<String>,
    task: Option<String>,
    /// `pass`, `fail`, `incomplete` or `ungraded`.
    verdict: Option<String>,
    /// Runs per page: 100 unless set, at most 1,000.
    limit: Option<usize>,
    /// The id of the last run of the previous page (the answer's `next_cursor`).
    starting_after: Option<String>,
}

/// The most runs one page holds, so a listing never loads a team's whole history.
const MAX_RUNS_PAGE: usize = 1_000;

async fn list_runs(State(app): State<Arc<App>>, Team(team): Team, Query(q): Query<RunsQuery>) -> Result<Json<Value>, ApiError> {
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
    let Some((runs, has_more)) = app.storage.runs(&team, filter, page).await? else {
        let id = q.starting_after.unwrap_or_default();
        return Err(ApiError::validation(format!("`starting_after` names no run of your team: {id}")).with_details(json!({"field": "starting_after"})));
    };
    let next_cursor = if has_more { runs.last().map(|r| r.id.clone()) } else { None };
    Ok(Json(json!({"object": "list", "data": runs, "has_more": has_more, "next_cursor": next_cursor})))
}

async fn get_run(State(app): State<Arc<App>>, Team(team): Team, Path(id): Path<String>) -> Result<Json<Value>, ApiError> {
    match app.storage.run(&team, &id).await? {
        Some(run) => Ok(Json(run)),
        None => Err(ApiError::not_found(format!("no run {id} in your team"))),
    }
}

/// Save a named seed after the twin's own `init` accepted it.
async fn put_seed(State(app): State<Arc<App>>, Team(team): Team, body: Bytes) -> Result<(StatusCode, Json<Value>), ApiError> {
    let body = parse_json(&body)?;
    let name = opt_string(&body, "name")?.ok_or_else(|| ApiError::validation("`name` is required"))?;
    let twin = opt_string(&body, "twin")?.ok_or_else(|| ApiError::validation("`twin` is required"))?;
    let image = app.twins.get(&twin).cloned().ok_or_else(|| ApiError::validation(format!("unknown twin `{twin}`")).with_details(json!({"error": "unknown_twin", "twin": twin})))?;
    let seed = match body.get("seed") {
        Some(v @ Value::Object(_)) => v.to_string(),
        _ => return Err(ApiError::validation("`seed` must be a JSON object")),
    };
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
