//! Named seeds, and worlds saved as seeds. A named seed is checked by its twin's own `init`
//! before it is stored. Any world a sandbox or a run reached, after any row, can be written
//! as a seed by its twin (contract 0.3.0's `export-seed`: a document that boots exactly that
//! world) and stored under a name, to start new sandboxes and tasks from.

use serde::Deserialize;
use serde_json::{Value, json};

use super::state::Source;
use crate::app::App;
use crate::error::{ApiError, ErrorType};
use pome_runtime::seeds::SeedError;
use pome_runtime::store::Export;

/// `POST /v1/seeds`: store `seed` as `name`, replacing the team's seed of that name.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SaveSeed {
    /// The name sandboxes and tasks use to start from it.
    pub name: String,
    /// The twin whose seed it is.
    pub twin: String,
    /// The seed document (a JSON object), e.g. one `…/seed` answered.
    pub seed: Value,
}

/// MCP `save_seed`: the world a sandbox or run reached, saved under a name in one step.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SaveWorld {
    /// The name to store the seed under.
    pub name: String,
    /// An open sandbox of the team (give this or `run_id`).
    pub sandbox_id: Option<String>,
    /// A finished run of the team (give this or `sandbox_id`).
    pub run_id: Option<String>,
    /// Which twin's world (default: the primary twin).
    pub twin: Option<String>,
    /// The world after this many rows of the twin's tape (0: its seed's world; default: now,
    /// or a run's final world).
    pub at: Option<u64>,
}

/// Longest seed name: names travel in URLs and task files.
const NAME_CHARS: usize = 128;

/// Check `req.seed` with its twin's `init` and store it. Answers `{name, twin, bytes}`.
pub async fn save(app: &App, team: &str, req: SaveSeed) -> Result<Value, ApiError> {
    let SaveSeed { name, twin, seed } = req;
    if name.is_empty() || name.chars().count() > NAME_CHARS || name.chars().any(char::is_control) {
        return Err(ApiError::validation(format!("`name` must be 1 to {NAME_CHARS} printable characters")).with_details(json!({"field": "name"})));
    }
    let image = app.twins.get(&twin).cloned().ok_or_else(|| ApiError::validation(format!("unknown twin `{twin}`")).with_details(json!({"error": "unknown_twin", "twin": twin})))?;
    if !seed.is_object() {
        return Err(ApiError::validation("`seed` must be a JSON object").with_details(json!({"field": "seed"})));
    }
    let seed = seed.to_string();
    let (stored, cap) = (app.storage.seed_bytes(team, &name).await?, app.rt.limits.team_seed_bytes);
    if stored + seed.len() > cap {
        return Err(ApiError::new(ErrorType::QuotaExceeded, format!("your team's named seeds would hold {} MiB, over its {} MiB; delete or replace one", (stored + seed.len()) >> 20, cap >> 20))
            .with_details(json!({"error": "seed_storage_full", "stored_bytes": stored, "limit_bytes": cap})));
    }
    app.seeds.get(&app.rt, &image, &seed).await.map_err(|e| match e {
        SeedError::Rejected(msg) => ApiError::validation(format!("the {twin} twin refused the seed: {msg}")).with_details(json!({"twin": twin, "error": "invalid_seed", "message": msg})),
        other => ApiError::internal(format!("the {twin} twin failed while loading the seed: {other}")),
    })?;
    app.storage.put_seed(team, &name, &twin, &seed).await?;
    Ok(json!({"name": name, "twin": twin, "bytes": seed.len()}))
}

/// The team's named seeds.
pub async fn list(app: &App, team: &str) -> Result<Value, ApiError> {
    let seeds = app.storage.seeds(team).await?;
    let data: Vec<Value> = seeds.into_iter().map(|(name, twin, _)| json!({"name": name, "twin": twin})).collect();
    Ok(json!({"object": "list", "data": data}))
}

/// The twin's world after `at` rows (`None`: now, or a run's final world) written as a seed,
/// its `_meta.saved_from` naming the sandbox or run, the twin and the row.
pub async fn seed_at(app: &App, team: &str, source: &Source, twin: &str, at: Option<u64>) -> Result<Value, ApiError> {
    let (text, at) = super::state::read_at(app, team, source, twin, at, Export::Seed).await?;
    // A seed that could not be booted again is no answer: the same cap as a seed sent in.
    let cap = app.rt.limits.seed_bytes;
    if text.len() > cap {
        return Err(ApiError::validation(format!("the {twin} world after row {at} is {} MiB as a seed, over this server's {} MiB seed limit", text.len() >> 20, cap >> 20))
            .with_details(json!({"twin": twin, "error": "seed_too_large", "bytes": text.len(), "limit_bytes": cap})));
    }
    let mut doc: Value = serde_json::from_str(&text).map_err(|e| ApiError::internal(format!("the {twin} twin wrote a seed that is not JSON: {e}")))?;
    let Some(fields) = doc.as_object_mut() else {
        return Err(ApiError::internal(format!("the {twin} twin wrote a seed that is not a JSON object")));
    };
    let from = match source {
        Source::Sandbox(s) => json!({"sandbox_id": s.id, "twin": twin, "at": at}),
        Source::Run(r) => json!({"run_id": r.id, "twin": twin, "at": at}),
    };
    match fields.entry("_meta").or_insert_with(|| json!({})) {
        Value::Object(meta) => {
            meta.insert("saved_from".into(), from);
        }
        _ => return Err(ApiError::internal(format!("the {twin} twin wrote a seed whose `_meta` is not an object"))),
    }
    Ok(doc)
}

/// Save the world a sandbox or run reached under a name: [`seed_at`], then [`save`].
pub async fn save_world(app: &App, team: &str, req: SaveWorld) -> Result<Value, ApiError> {
    let source = Source::named(app, team, req.sandbox_id.as_deref(), req.run_id.as_deref()).await?;
    let twin = source.twin(req.twin.as_deref())?;
    let seed = seed_at(app, team, &source, &twin, req.at).await?;
    let saved_from = seed["_meta"]["saved_from"].clone();
    let mut answer = save(app, team, SaveSeed { name: req.name, twin, seed }).await?;
    answer["saved_from"] = saved_from;
    Ok(answer)
}
