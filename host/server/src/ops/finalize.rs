//! Finalize: the end of a sandbox's life as one service — shut the door to twin calls, let
//! the calls already in finish, collect every twin's tape and state, grade against the task
//! version the sandbox booted from, persist the run with its verdict in one transaction,
//! close the sandbox and free its slot. It either completes or leaves the sandbox as it was
//! (door open again); it runs detached from the request that asked for it.
//!
//! Nothing answered is lost (issue #32): every call the agent was answered is on the tapes
//! the run holds (the door, [`Sandbox::admit`]), and the run and the close are both committed
//! before finalize answers, so a crash after the answer finds the sandbox finalized with its
//! run. A sandbox has one run: the database refuses a second, and a finalize that finds one
//! stored (another finalize's, or one that stored it and crashed before its close was
//! committed) answers that one.

use std::sync::Arc;

use std::collections::BTreeMap;

use pome_grade::run::{Run, TwinRecord};
use serde_json::{Value, json};

use crate::app::App;
use crate::error::ApiError;
use crate::sandbox::{CloseReason, Lookup, Sandbox};

/// Finalize the team's sandbox `id` (REST `POST /v1/sandboxes/:id/finalize`, MCP
/// `finalize`): collect → grade → persist → close, as one job that either completes or leaves
/// the sandbox as it was. The job runs detached from the request, so a client that hangs up
/// mid-way cannot leave the sandbox half closed with its slot held. Finalizing again answers
/// the same run; a second caller during the first waits for it. The answer is the verdict,
/// with each criterion's evidence.
pub async fn finalize_sandbox(app: &Arc<App>, team: &str, id: &str) -> Result<Value, ApiError> {
    let (team, id) = (team.to_string(), id.to_string());
    // Judges may take minutes per `[model]` criterion; a waiting caller gives up well after.
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(30 * 60);
    loop {
        // Armed before looking, so a close between the look and the wait is not missed.
        let changed = app.sandboxes.changes.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        match app.sandboxes.lookup(&id) {
            Lookup::Open(s) if s.team_id == team => {
                if app.sandboxes.begin_close(&s, CloseReason::Finalized) {
                    let (app, team) = (app.clone(), team.clone());
                    let job = tokio::spawn(async move { finalize_job(&app, &team, &s).await });
                    return job.await.map_err(|e| ApiError::internal(format!("finalize stopped: {e}")))?;
                }
            }
            Lookup::Closed(t) if t.team_id == team && t.reason == CloseReason::Finalized => {
                if let Some(run_id) = t.run_id {
                    let run = app.storage.run(&team, &run_id).await?.ok_or_else(|| ApiError::internal(format!("run {run_id} of sandbox {id} is missing")))?;
                    let run: Run = serde_json::from_value(run).map_err(|e| ApiError::internal(format!("run {run_id} does not read back: {e}")))?;
                    return Ok(finalize_answer(&id, &run));
                }
                // Another finalize is at work on it: wait for its run.
            }
            Lookup::Closed(t) if t.team_id == team => return Err(ApiError::expired(&id, t.reason.as_str())),
            _ => return Err(ApiError::not_found(format!("no sandbox {id} in your team"))),
        }
        if std::time::Instant::now() > give_up {
            return Err(ApiError::new(crate::error::ErrorType::Conflict, format!("sandbox {id} is still being finalized; ask again later")));
        }
        // Woken when the finalize at work closes the sandbox (or gives up); the timeout only
        // re-checks the clocks of a sandbox nobody closes.
        let _ = tokio::time::timeout(std::time::Duration::from_secs(1), changed).await;
    }
}

/// The finalize job proper, on a sandbox whose door `begin_close` has shut; on any failure
/// the sandbox is reopened untouched.
async fn finalize_job(app: &App, team: &str, s: &Sandbox) -> Result<Value, ApiError> {
    // Calls let in before the door shut are answered first, so the tapes read below hold
    // every answer the agent was given.
    s.drained().await;
    // A run in the making holds its tapes, worlds and grading copies: a few at once across
    // the server, so many sandboxes finalized together cannot hold them all.
    let Ok(_permit) = app.gates.finalize_jobs.acquire().await else {
        app.sandboxes.abort_close(s);
        return Err(ApiError::internal("the server is shutting down"));
    };
    let result = async {
        if let Some(stored) = app.storage.run_of_sandbox(team, &s.id).await? {
            return read_run(&s.id, stored).map(Arc::new);
        }
        let mut run = collect_run(s).await?;
        // Graded before it is written: the verdict is in the same row, the same transaction.
        let task = s.meta.task_id.as_deref().zip(s.meta.task_version.as_deref());
        crate::task_api::grade_into(app, team, task, &mut run).await?;
        let run = Arc::new(run);
        if app.storage.insert_run(team, run.clone()).await? {
            return Ok(run);
        }
        // Another finalize stored this sandbox's run first: that one is the run.
        let stored = app.storage.run_of_sandbox(team, &s.id).await?.ok_or_else(|| ApiError::internal(format!("the run of sandbox {} is neither new nor stored", s.id)))?;
        read_run(&s.id, stored).map(Arc::new)
    }
    .await;
    match result {
        Ok(run) => {
            app.sandboxes.close(s, CloseReason::Finalized, Some(run.id.clone()));
            // The close is committed before the answer leaves: a crash after it cannot bring
            // the sandbox back open. (The run already is: it was written with FULL sync.)
            app.sandboxes
                .durable()
                .await
                .map_err(|e| ApiError::internal(format!("sandbox {} is finalized as run {} but its close could not be committed ({e}); finalize it again", s.id, run.id)))?;
            Ok(finalize_answer(&s.id, &run))
        }
        Err(e) => {
            app.sandboxes.abort_close(s);
            Err(e)
        }
    }
}

fn read_run(id: &str, stored: Value) -> Result<Run, ApiError> {
    serde_json::from_value(stored).map_err(|e| ApiError::internal(format!("the run of sandbox {id} does not read back: {e}")))
}

fn finalize_answer(id: &str, run: &Run) -> Value {
    json!({
        "run_id": run.id,
        "id": id,
        "session_id": id,
        "state": "closed",
        "verdict": run.verdict,
        "score": run.score,
        "pass_threshold": run.pass_threshold,
        "criteria_results": run.criteria_results,
        "tape_rows": run.tape_rows(),
    })
}

/// Every twin's tape, states and deliveries, read off its store (which serves nothing else
/// meanwhile: the sandbox is closing).
async fn collect_run(s: &Sandbox) -> Result<Run, ApiError> {
    let mut per_twin = BTreeMap::new();
    for t in &s.twins {
        let tape = t.store.tape().await.map_err(|e| ApiError::internal(format!("reading the {} tape: {e}", t.name)))?;
        // A twin that cannot write its world out (it traps, or outgrows its memory cap doing
        // it: a world that fills the cap needs several times that to export) would fail the
        // same way on every retry. The run is recorded without that state, saying why, and the
        // criteria that read it are errored; the tape is still graded.
        let (final_state, state_error) = match t.store.state().await {
            Ok(s) => (Some(s), None),
            Err(e @ pome_runtime::store::StoreError::Guest(_)) => (None, Some(e.to_string())),
            Err(e) => return Err(ApiError::internal(format!("reading the {} state: {e}", t.name))),
        };
        let parse = |s: &str| serde_json::from_str::<Value>(s).unwrap_or(Value::String(s.to_string()));
        let initial = parse(&t.seed.state);
        let fin = final_state.as_deref().map(parse).unwrap_or(Value::Null);
        per_twin.insert(t.name.clone(), TwinRecord {
            diff: if state_error.is_none() { pome_grade::diff::state_diff(&initial, &fin) } else { Vec::new() },
            initial_state: initial,
            final_state: fin,
            state_error,
            tape: tape.iter().map(|r| (**r).clone()).collect(),
            deliveries: t.store.deliveries.lock().unwrap().clone(),
            seed: Some(t.seed.text.clone()),
        });
    }
    Ok(Run {
        id: crate::auth::new_id("run"),
        object: "run".into(),
        session_id: s.id.clone(),
        twins: s.twin_names(),
        primary_twin: s.twins[0].name.clone(),
        task_id: s.meta.task_id.clone(),
        task_version: s.meta.task_version.clone(),
        group_id: s.meta.group_id.clone(),
        agent_id: s.meta.agent_id.clone(),
        agent_version: s.meta.agent_version.clone(),
        created_at: humantime::format_rfc3339_seconds(s.created_at).to_string(),
        finalized_at: crate::storage::now(),
        per_twin,
        forked_from: s.meta.forked_from.clone(),
        ..Run::default()
    })
}
