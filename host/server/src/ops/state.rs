//! The world as it stood after any row of a tape, for an open sandbox or a finished run:
//! the same state export finalize records, and the diff between two positions in the shape
//! of a run's. A position other than now is rebuilt in a store of its own on a background
//! thread, from the newest checkpoint at or before it (or the seed), so reading the past
//! never touches the live world.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::app::App;
use crate::error::ApiError;
use crate::sandbox::Sandbox;
use pome_grade::run::Run;

/// `GET …/state?twin=T&at=N` and the MCP `state_at` tool.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StateQuery {
    /// Which twin (default: the primary twin).
    pub twin: Option<String>,
    /// The world after this many rows of the twin's tape (0: its seed's world; default:
    /// now, or a run's final world).
    pub at: Option<u64>,
}

/// `GET …/diff?twin=T&from=A&to=B`.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiffQuery {
    /// Which twin (default: the primary twin).
    pub twin: Option<String>,
    /// The earlier position (default 0: the seed's world).
    pub from: Option<u64>,
    /// The later position (default: now, or a run's final world).
    pub to: Option<u64>,
}

/// Where worlds are read from.
pub enum Source {
    Sandbox(Arc<Sandbox>),
    Run(Box<Run>),
}

impl Source {
    pub fn twins(&self) -> Vec<String> {
        match self {
            Source::Sandbox(s) => s.twin_names(),
            Source::Run(r) => r.twins.clone(),
        }
    }

    /// The twin a query names, or the primary one; a name not in the sandbox is a 404.
    pub fn twin(&self, named: Option<&str>) -> Result<String, ApiError> {
        let twins = self.twins();
        match named {
            None => Ok(twins[0].clone()),
            Some(t) if twins.iter().any(|n| n == t) => Ok(t.to_string()),
            Some(t) => Err(ApiError::not_found(format!("no `{t}` twin here; there are {twins:?}")).with_details(json!({"twin": t}))),
        }
    }

    /// How many rows the twin's tape has now.
    async fn rows(&self, twin: &str) -> Result<u64, ApiError> {
        match self {
            Source::Sandbox(s) => {
                let t = s.twin(twin).expect("checked by Source::twin");
                Ok(t.store.memory().await.map_err(|e| read_failed(twin, e))?.rows)
            }
            Source::Run(r) => Ok(r.per_twin.get(twin).map_or(0, |t| t.tape.len() as u64)),
        }
    }
}

fn read_failed(twin: &str, e: impl std::fmt::Display) -> ApiError {
    ApiError::internal(format!("reading the {twin} twin: {e}"))
}

/// The twin's state export after `at` rows (`None`: now, or the run's final world).
pub async fn state_at(app: &App, team: &str, source: &Source, twin: &str, at: Option<u64>) -> Result<String, ApiError> {
    let rows = source.rows(twin).await?;
    let at = match at {
        None => return now(source, twin).await,
        Some(n) => super::fork::within(twin, n, rows)?,
    };
    let image = app.twins.get(twin).cloned().ok_or_else(|| ApiError::validation(format!("this server does not have the {twin} twin")).with_details(json!({"twin": twin})))?;
    let (seed, base, tape) = match source {
        Source::Sandbox(s) => {
            let t = s.twin(twin).expect("checked by Source::twin");
            if at == 0 {
                return Ok(t.seed.state.clone());
            }
            let from = super::inheritance(t, at).await.map_err(|e| read_failed(twin, e))?;
            (t.seed.clone(), from.base, from.rows)
        }
        Source::Run(r) => {
            let record = &r.per_twin[twin];
            if at == 0 {
                return Ok(record.initial_state.to_string());
            }
            let text = super::run_seed(r, twin)?;
            let seed = app.seeds.get(&app.rt, &image, text).await.map_err(|e| ApiError::internal(format!("the {twin} seed of run {}: {e}", r.id)))?;
            (seed, None, record.tape[..at as usize].to_vec())
        }
    };
    let _slot = super::rebuild_slot(app, team)?;
    pome_runtime::store::state_after(app.rt.clone(), image, seed, base, tape).await.map_err(|e| ApiError::internal(format!("rebuilding the {twin} world after row {at}: {e}")))
}

/// The world now: the live store's, or the run's final one.
async fn now(source: &Source, twin: &str) -> Result<String, ApiError> {
    match source {
        Source::Sandbox(s) => s.twin(twin).expect("checked by Source::twin").store.state().await.map_err(|e| read_failed(twin, e)),
        Source::Run(r) => Ok(r.per_twin[twin].final_state.to_string()),
    }
}

/// What changed in the twin's world between positions `from` and `to`.
pub async fn diff(app: &App, team: &str, source: &Source, twin: &str, q: &DiffQuery) -> Result<Value, ApiError> {
    let rows = source.rows(twin).await?;
    let (from, to) = (q.from.unwrap_or(0), q.to.unwrap_or(rows));
    if from > to {
        return Err(ApiError::validation(format!("`from` ({from}) is after `to` ({to})")).with_details(json!({"field": "from"})));
    }
    let parse = |s: String| serde_json::from_str::<Value>(&s).unwrap_or(Value::String(s));
    let before = parse(state_at(app, team, source, twin, Some(from)).await?);
    // Without `to`, the world now (the live store's, or the run's final one).
    let after = parse(state_at(app, team, source, twin, q.to).await?);
    Ok(json!({"object": "diff", "twin": twin, "from": from, "to": to, "diff": pome_grade::diff::state_diff(&before, &after)}))
}
