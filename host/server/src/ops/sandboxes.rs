//! Sandboxes: create (from twins and a seed, or a task), list, show, heartbeat, stop, and
//! the team's concurrency use. How a sandbox is shown — its URLs, its token, the agent's
//! environment — is decided here once for every door.

use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{Caller, open_sandbox};
use crate::app::App;
use crate::error::{ApiError, ErrorType};
use crate::sandbox::{CloseReason, KeyClaim, Sandbox, SandboxMeta};
use pome_contract::Credential;
use pome_grade::task::Task;
use pome_runtime::limits::MAX_TWINS_PER_SANDBOX;

/// `POST /v1/sandboxes` (MCP `create_sandbox`): the sandbox's twins and seed, or the task
/// it boots from, and what to carry onto its run.
#[derive(Debug, Default, Clone, Deserialize, schemars::JsonSchema)]
pub struct CreateRequest {
    /// Twin names, primary first: one to three (github, slack, stripe, gmail, linear).
    #[schemars(with = "Option<Vec<String>>")]
    pub twins: Option<Value>,
    /// A flat seed for one twin, an envelope {twin: seed} for several, or a saved seed's name.
    pub seed: Option<Value>,
    /// A stored task to boot from instead of twins and seed.
    pub task_id: Option<String>,
    /// A task's markdown, base64-encoded, to boot from (stored under its content id).
    pub task_source: Option<String>,
    /// Repeating a create with the same key answers the same sandbox.
    pub idempotency_key: Option<String>,
    /// Groups trials of one task.
    pub group_id: Option<String>,
    /// Who is being evaluated, carried onto the run.
    pub agent_id: Option<String>,
    /// Its version, carried onto the run.
    pub agent_version: Option<String>,
}

/// Create a sandbox: the sandbox as the API shows it, with its token (201, or 200 when an
/// idempotency key answers an earlier create).
pub async fn create(app: &App, caller: &Caller, req: CreateRequest) -> Result<(StatusCode, Value), ApiError> {
    let task = crate::task_api::for_create(app, &caller.team, &req).await?;
    create_from(app, caller, req, task).await
}

/// Create a sandbox for a task the caller already holds (MCP `run_task` stored it and shows
/// its prompt): the sandbox boots exactly that version, whatever was stored since.
pub async fn create_for_task(app: &App, caller: &Caller, req: CreateRequest, task: (Task, String)) -> Result<(StatusCode, Value), ApiError> {
    create_from(app, caller, req, Some(task)).await
}

async fn create_from(app: &App, caller: &Caller, req: CreateRequest, task: Option<(Task, String)>) -> Result<(StatusCode, Value), ApiError> {
    let team = caller.team.as_str();
    if let Some(key) = &req.idempotency_key {
        // A retry waits for the create it repeats, however the two interleave.
        let give_up = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            match app.sandboxes.claim_key(team, key) {
                KeyClaim::Existing(s) => return Ok((StatusCode::OK, sandbox_json(app, &s, &caller.origin, true))),
                KeyClaim::Claimed => break,
                KeyClaim::Busy if std::time::Instant::now() > give_up => {
                    return Err(ApiError::new(ErrorType::Conflict, format!("a create with idempotency key `{key}` is still in progress")));
                }
                KeyClaim::Busy => tokio::time::sleep(std::time::Duration::from_millis(10)).await,
            }
        }
    }
    let key = req.idempotency_key.clone();
    let result = create_claimed(app, caller, req, task).await;
    if result.is_err()
        && let Some(key) = &key
    {
        app.sandboxes.release_key(team, key);
    }
    result
}

/// Create once the idempotency key (if any) is ours.
async fn create_claimed(app: &App, caller: &Caller, req: CreateRequest, task: Option<(Task, String)>) -> Result<(StatusCode, Value), ApiError> {
    let team = caller.team.as_str();
    // A task names the twins and the seed.
    let (names, seed) = match &task {
        Some((t, _)) => {
            let names = twin_names(app, Some(&json!(t.config.twins)))?;
            if req.twins.is_some() && twin_names(app, req.twins.as_ref()).ok().as_ref() != Some(&names) {
                return Err(ApiError::validation(format!("`twins` differs from the task's twins {names:?}; leave it out")).with_details(json!({"field": "twins"})));
            }
            if req.seed.as_ref().is_some_and(|v| !v.is_null()) {
                return Err(ApiError::validation("a sandbox created from a task boots from the task's seed; leave `seed` out").with_details(json!({"field": "seed"})));
            }
            (names, t.seed_for_create())
        }
        None => (twin_names(app, req.twins.as_ref())?, req.seed.clone()),
    };
    let seeds = seed_texts(app, team, &names, seed.as_ref()).await?;
    let meta = SandboxMeta {
        task_id: task.as_ref().map(|(t, _)| t.id.clone()).or(req.task_id),
        task_version: task.as_ref().map(|(_, v)| v.clone()),
        group_id: req.group_id,
        agent_id: req.agent_id,
        agent_version: req.agent_version,
        forked_from: None,
    };
    let sandbox = app.create_sandbox(team, &names, &seeds, meta, req.idempotency_key).await?;
    Ok((StatusCode::CREATED, sandbox_json(app, &sandbox, &caller.origin, true)))
}

/// The `twins` list: the count is checked before the names, so four names are
/// `too_many_twins` whatever they are.
fn twin_names(app: &App, twins: Option<&Value>) -> Result<Vec<String>, ApiError> {
    let list = match twins {
        Some(Value::Array(a)) => a,
        Some(Value::String(s)) => return twin_names(app, Some(&json!([s]))),
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
    // One twin's envelope holds its seed or a saved seed's name.
    !map.is_empty() && map.keys().all(|k| names.contains(k)) && (names.len() > 1 || map.len() == 1 && map.values().all(|v| v.is_object() || v.is_string()))
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
pub fn sandbox_json(app: &App, s: &Sandbox, origin: &str, with_token: bool) -> Value {
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

/// The team's open sandboxes (REST and MCP `list_sandboxes`): on every host, when the
/// service has several.
pub async fn list(app: &App, caller: &Caller) -> Result<Value, ApiError> {
    let (team, origin) = (caller.team.as_str(), &caller.origin);
    let list: Vec<Value> = match &app.cluster {
        Some(cluster) => cluster.live.team_records(team).await.map_err(store_busy)?.iter().map(|r| shown_json(app, &Shown::from(r), origin)).collect(),
        None => app.sandboxes.list(team).iter().map(|s| sandbox_json(app, s, origin, false)).collect(),
    };
    Ok(json!({"object": "list", "data": list}))
}

/// The shared store could not answer: 503, try again.
pub(crate) fn store_busy(e: crate::storage::StorageError) -> ApiError {
    ApiError::new(ErrorType::ServerBusy, format!("the shared store cannot be reached: {e}")).with_retry_after(1)
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

/// The team's concurrency use (REST and MCP `usage`), across every host.
pub async fn usage_of(app: &App, team: &str) -> Result<Value, ApiError> {
    let used = match &app.cluster {
        Some(cluster) => cluster.live.team_records(team).await.map_err(store_busy)?.len(),
        None => app.sandboxes.used(team),
    };
    let quota = app.sandboxes.quota;
    Ok(json!({"sessions_used": used, "sessions_quota": quota, "sessions_remaining": quota.saturating_sub(used)}))
}

/// `GET /v1/sandboxes/:id`: the team's open sandbox. The owning team sees the agent token
/// again (`pome mcp-config` builds a client configuration from it); listings never show it.
pub fn get(app: &App, caller: &Caller, id: &str) -> Result<Value, ApiError> {
    let s = open_sandbox(app, &caller.team, id)?;
    Ok(sandbox_json(app, &s, &caller.origin, true))
}
