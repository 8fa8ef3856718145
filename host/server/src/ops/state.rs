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
use pome_runtime::store::{Export, StoreError};

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
    /// The team's open sandbox or finished run a door named by id: exactly one of the two.
    pub async fn named(app: &App, team: &str, sandbox_id: Option<&str>, run_id: Option<&str>) -> Result<Source, ApiError> {
        match (sandbox_id, run_id) {
            (Some(id), None) => Ok(Source::Sandbox(super::open_sandbox(app, team, id)?)),
            (None, Some(id)) => Ok(Source::Run(Box::new(super::whole_run(app, team, id).await?))),
            _ => Err(ApiError::validation("give exactly one of `sandbox_id` and `run_id`").with_details(json!({"field": "sandbox_id"}))),
        }
    }

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
    // The world now and the seed's are at hand; any other position is rebuilt.
    match (at, source) {
        (None, _) => return now(source, twin).await,
        (Some(0), Source::Sandbox(s)) => return Ok(s.twin(twin).expect("checked by Source::twin").seed.state.clone()),
        (Some(0), Source::Run(r)) => return Ok(r.per_twin[twin].initial_state.to_string()),
        _ => {}
    }
    read_at(app, team, source, twin, at, Export::State).await.map(|(state, _)| state)
}

/// What `what` reads out of the twin's world after `at` rows (`None`: now, or a run's final
/// world), and the position that is. The live world now is read in place; every other
/// position is rebuilt from the newest checkpoint at or before it, or from the seed.
pub(super) async fn read_at(app: &App, team: &str, source: &Source, twin: &str, at: Option<u64>, what: Export) -> Result<(String, u64), ApiError> {
    let rows = source.rows(twin).await?;
    let live = at.is_none();
    let at = super::fork::within(twin, at.unwrap_or(rows), rows)?;
    let failed = |e: StoreError| match e {
        StoreError::CannotWriteSeed | StoreError::SeedRefused(_) => ApiError::validation(format!("the {twin} twin: {e}")).with_details(json!({"twin": twin, "error": "cannot_write_seed"})),
        e => ApiError::internal(format!("rebuilding the {twin} world after row {at}: {e}")),
    };
    if let Source::Sandbox(s) = source
        && live
    {
        let store = &s.twin(twin).expect("checked by Source::twin").store;
        let out = match what {
            Export::State => store.state().await,
            Export::Seed => store.seed().await,
        };
        return out.map(|text| (text, at)).map_err(failed);
    }
    let image = app.twins.get(twin).cloned().ok_or_else(|| ApiError::validation(format!("this server does not have the {twin} twin")).with_details(json!({"twin": twin})))?;
    let (seed, base, tape) = match source {
        Source::Sandbox(s) => {
            let t = s.twin(twin).expect("checked by Source::twin");
            // Only the rows after the checkpoint are replayed, so only they are read.
            let base = t.store.checkpoint_at_or_before(at).await.map_err(|e| read_failed(twin, e))?;
            let after = base.as_ref().map_or(0, |c| c.seq);
            let rows = t.store.rows_after(after, (at - after) as usize).await.map_err(|e| read_failed(twin, e))?;
            (t.seed.clone(), base, rows.iter().map(|r| (**r).clone()).collect())
        }
        Source::Run(r) => {
            let text = super::run_seed(r, twin)?;
            let seed = app.seeds.get(&app.rt, &image, text).await.map_err(|e| ApiError::internal(format!("the {twin} seed of run {}: {e}", r.id)))?;
            (seed, None, r.per_twin[twin].tape[..at as usize].to_vec())
        }
    };
    let _slot = super::rebuild_slot(app, team)?;
    pome_runtime::store::export_after(app.rt.clone(), image, seed, base, tape, what).await.map(|text| (text, at)).map_err(failed)
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
