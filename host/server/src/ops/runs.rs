//! Runs: the team's runs a page at a time, and one run whole.

use serde::Deserialize;
use serde_json::{Value, json};

use crate::app::App;
use crate::error::ApiError;

/// `GET /v1/runs` (MCP `list_runs`): which runs, and which page.
#[derive(Deserialize, Default, schemars::JsonSchema)]
pub struct RunsQuery {
    /// Only this trial group.
    pub group_id: Option<String>,
    /// Only runs of this task id.
    pub task: Option<String>,
    /// Only runs recorded with this agent version (`pome run --agent-version`).
    pub agent_version: Option<String>,
    /// `pass`, `fail`, `incomplete` or `ungraded`.
    #[schemars(extend("enum" = ["pass", "fail", "incomplete", "ungraded"]))]
    pub verdict: Option<String>,
    /// Runs per page: 100 unless set, at most 1,000.
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
    /// The id of the last run of the previous page (the answer's `next_cursor`).
    pub starting_after: Option<String>,
}

/// The most runs one page holds, so a listing never loads a team's whole history.
const MAX_RUNS_PAGE: usize = 1_000;

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
    let filter = crate::storage::RunFilter { group_id: q.group_id, task_id: q.task, agent_version: q.agent_version, verdict: q.verdict };
    let page = crate::storage::RunPage { limit, starting_after: q.starting_after.clone() };
    let Some((runs, has_more)) = app.storage.runs(team, filter, page).await? else {
        let id = q.starting_after.unwrap_or_default();
        return Err(ApiError::validation(format!("`starting_after` names no run of your team: {id}")).with_details(json!({"field": "starting_after"})));
    };
    let next_cursor = if has_more { runs.last().map(|r| r.id.clone()) } else { None };
    Ok(json!({"object": "list", "data": runs, "has_more": has_more, "next_cursor": next_cursor}))
}

/// One of the team's runs (REST and MCP `get_run`).
pub async fn run(app: &App, team: &str, id: &str) -> Result<Value, ApiError> {
    match app.storage.run(team, id).await? {
        Some(run) => Ok(run),
        None => Err(ApiError::not_found(format!("no run {id} in your team"))),
    }
}
