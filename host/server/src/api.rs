//! The control plane's REST door (`X-API-KEY: pme_…`): each route reads its request into an
//! operation's typed request and calls the operation (`crate::ops`), for sandboxes (also
//! spelled sessions), forks, states, seeds, usage and runs; keys and the twin list are
//! answered here. Every error leaves through [`ApiError`], in one shape.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::{get, post};
use axum::{Json, Router};
use bytes::Bytes;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::{ApiError, ErrorType};
use crate::app::{ApiBody, ApiQuery, App, Team};
use crate::ops::state::{DiffQuery, Source, StateQuery};
use crate::ops::{Caller, fork::ForkRequest, open_sandbox, sandboxes};

pub fn routes() -> Router<Arc<App>> {
    let sandbox_routes = || {
        Router::new()
            .route("/", post(create_sandbox).get(list_sandboxes))
            .route("/{id}", get(get_sandbox).delete(delete_sandbox))
            .route("/{id}/heartbeat", post(heartbeat))
            .route("/{id}/finalize", post(finalize))
            .route("/{id}/fork", post(fork_sandbox))
            .route("/{id}/state", get(sandbox_state))
            .route("/{id}/diff", get(sandbox_diff))
            .route("/{id}/seed", get(sandbox_seed))
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
        .route("/v1/runs/{id}/seed", get(run_seed))
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

async fn create_sandbox(State(app): State<Arc<App>>, Team(team): Team, headers: HeaderMap, ApiBody(body): ApiBody) -> Result<(StatusCode, Json<Value>), ApiError> {
    let caller = Caller::new(&app, team, &headers);
    let (status, v) = sandboxes::create(&app, &caller, typed_body(&body)?).await?;
    Ok((status, Json(v)))
}



async fn list_sandboxes(State(app): State<Arc<App>>, Team(team): Team, headers: HeaderMap) -> Result<Json<Value>, ApiError> {
    sandboxes::list(&app, &Caller::new(&app, team, &headers)).await.map(Json)
}


async fn get_sandbox(State(app): State<Arc<App>>, Team(team): Team, Path(id): Path<String>, headers: HeaderMap) -> Result<Json<Value>, ApiError> {
    sandboxes::get(&app, &Caller::new(&app, team, &headers), &id).map(Json)
}

async fn finalize(State(app): State<Arc<App>>, Team(team): Team, Path(id): Path<String>) -> Result<Json<Value>, ApiError> {
    crate::ops::finalize::finalize_sandbox(&app, &team, &id).await.map(Json)
}

async fn heartbeat(State(app): State<Arc<App>>, Team(team): Team, Path(id): Path<String>) -> Result<Json<Value>, ApiError> {
    sandboxes::beat(&app, &team, &id).map(Json)
}


#[derive(Deserialize)]
struct DeleteQuery {
    confirm_discard: Option<String>,
}

async fn delete_sandbox(State(app): State<Arc<App>>, Team(team): Team, Path(id): Path<String>, ApiQuery(q): ApiQuery<DeleteQuery>) -> Result<Json<Value>, ApiError> {
    sandboxes::stop(&app, &team, &id, q.confirm_discard).await.map(Json)
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
    sandboxes::usage_of(&app, &team).await.map(Json)
}



async fn list_runs(State(app): State<Arc<App>>, Team(team): Team, ApiQuery(q): ApiQuery<crate::ops::runs::RunsQuery>) -> Result<Json<Value>, ApiError> {
    crate::ops::runs::runs(&app, &team, q).await.map(Json)
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


/// `POST /v1/seeds`: a named seed, after the twin's own `init` accepted it.
async fn put_seed(State(app): State<Arc<App>>, Team(team): Team, ApiBody(body): ApiBody) -> Result<(StatusCode, Json<Value>), ApiError> {
    let v = crate::ops::seeds::save(&app, &team, typed_body(&body)?).await?;
    Ok((StatusCode::CREATED, Json(v)))
}

async fn list_seeds(State(app): State<Arc<App>>, Team(team): Team) -> Result<Json<Value>, ApiError> {
    crate::ops::seeds::list(&app, &team).await.map(Json)
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

/// `GET /v1/sandboxes/:id/seed?twin=T&at=N`: the world after row N as a seed document.
async fn sandbox_seed(State(app): State<Arc<App>>, Team(team): Team, Path(id): Path<String>, ApiQuery(q): ApiQuery<StateQuery>) -> Result<Json<Value>, ApiError> {
    let source = Source::Sandbox(open_sandbox(&app, &team, &id)?);
    let twin = source.twin(q.twin.as_deref())?;
    crate::ops::seeds::seed_at(&app, &team, &source, &twin, q.at).await.map(Json)
}

/// `GET /v1/runs/:id/seed?twin=T&at=N`: the same for a finished run.
async fn run_seed(State(app): State<Arc<App>>, Team(team): Team, Path(id): Path<String>, ApiQuery(q): ApiQuery<StateQuery>) -> Result<Json<Value>, ApiError> {
    let source = Source::Run(Box::new(crate::ops::whole_run(&app, &team, &id).await?));
    let twin = source.twin(q.twin.as_deref())?;
    crate::ops::seeds::seed_at(&app, &team, &source, &twin, q.at).await.map(Json)
}
