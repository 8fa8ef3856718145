//! The control plane's operations: each is one function with a typed request and answer,
//! and every door adapts it — the REST routes (`api.rs`), the control MCP
//! (`mcp/control.rs`) and the dashboard (`ui.rs`); the CLI reaches them through REST. A door
//! turns what it received into the operation's request, calls it for a [`Caller`], and
//! renders the answer, or the [`ApiError`], in its own way.
//!
//! [`sandboxes`] creates, shows, lists and stops sandboxes; [`finalize`] grades one into a
//! run; [`runs`] pages through runs; [`fork`] branches a sandbox or a finished run at any
//! tape position; [`state`] rebuilds the world as it stood after any row, and diffs two
//! positions; [`seeds`] stores named seeds and saves any of those worlds as one.

pub mod finalize;
pub mod fork;
pub mod runs;
pub mod sandboxes;
pub mod seeds;
pub mod state;

use std::sync::Arc;

use axum::http::HeaderMap;

use crate::app::App;
use crate::error::{ApiError, ErrorType};
use crate::sandbox::{Lookup, Sandbox};

/// Who an operation acts for: the team whose key was presented, and the origin the URLs it
/// hands out are built on (what the client reached this server at).
pub struct Caller {
    pub team: String,
    pub origin: String,
}

impl Caller {
    pub fn new(app: &App, team: String, headers: &HeaderMap) -> Caller {
        Caller { team, origin: crate::app::origin(app, headers) }
    }
}

/// The team's open sandbox `id`: another team's id is 404, a closed one 410.
pub fn open_sandbox(app: &App, team: &str, id: &str) -> Result<Arc<Sandbox>, ApiError> {
    match app.sandboxes.lookup(id) {
        Lookup::Open(s) if s.team_id == team => Ok(s),
        Lookup::Closed(t) if t.team_id == team => Err(ApiError::expired(id, t.reason.as_str())),
        _ => Err(ApiError::not_found(format!("no sandbox {id} in your team"))),
    }
}

/// One of the team's runs, read whole (its tapes and worlds): at most a few at once across
/// the server, since a run at the tape caps is hundreds of megabytes.
pub async fn whole_run(app: &App, team: &str, id: &str) -> Result<pome_grade::run::Run, ApiError> {
    let _permit = app.gates.whole_runs.acquire().await.map_err(|_| ApiError::internal("the server is shutting down"))?;
    let run = app.storage.run(team, id).await?.ok_or_else(|| ApiError::not_found(format!("no run {id} in your team")))?;
    serde_json::from_value(run).map_err(|e| ApiError::internal(format!("run {id} does not read back: {e}")))
}

/// A world rebuild (a fork, a state at a position) for `team`: each replays up to a whole
/// tape on a background thread, so a team runs a few at once and is told to wait past them.
pub fn rebuild_slot(app: &App, team: &str) -> Result<crate::limits::TeamSlot, ApiError> {
    let limit = app.gates.team_rebuilds.limit;
    app.gates.team_rebuilds.take(team).ok_or_else(|| {
        ApiError::new(ErrorType::RateLimited, format!("your team has {limit} worlds being rebuilt (forks, states at a position); wait for one to finish"))
            .with_details(serde_json::json!({"limit": limit, "retry_after": 1}))
            .with_retry_after(1)
    })
}

/// Where rebuilding `t`'s world after row `n` starts: its newest checkpoint at or before row
/// `n` (taken first: a checkpoint only moves forward, so the rows read next reach at least as
/// far), and rows 1..=n of its tape, which a fork inherits. (A look at row `n` reads only
/// the rows after that checkpoint: `state::read_at`.)
pub async fn inheritance(t: &crate::sandbox::SandboxTwin, n: u64) -> Result<crate::app::Inheritance, pome_runtime::store::StoreError> {
    let base = t.store.checkpoint_at_or_before(n).await?;
    let rows = t.store.rows_after(0, n as usize).await?.iter().map(|r| (**r).clone()).collect();
    Ok(crate::app::Inheritance { base, rows })
}

/// The seed text a run's `twin` booted from, which rebuilding any of its worlds starts from.
pub fn run_seed<'a>(run: &'a pome_grade::run::Run, twin: &str) -> Result<&'a str, ApiError> {
    run.per_twin.get(twin).and_then(|t| t.seed.as_deref()).ok_or_else(|| {
        ApiError::validation(format!("run {} was recorded before runs kept their seeds, so its {twin} world cannot be rebuilt; fork or read a newer run", run.id))
            .with_details(serde_json::json!({"twin": twin, "error": "no_seed"}))
    })
}
