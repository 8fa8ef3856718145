//! The control plane's REST door (`X-API-KEY: pme_…`): each route reads its request into an
//! operation's typed request and calls the operation (`crate::ops`), for sandboxes (also
//! spelled sessions), forks, states, seeds, usage and runs; keys and the twin list are
//! answered here. Every error leaves through [`ApiError`], in one shape.

use std::sync::Arc;

use aide::axum::ApiRouter;
use aide::axum::routing::{delete_with, get_with, post_with};
use aide::transform::TransformOperation;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::Router;
use bytes::Bytes;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::{ApiError, ErrorType};
use crate::app::{ApiBody, ApiQuery, App, Team};
use crate::openapi::{self as doc, Answer, Created, IdPath, List, Passed};
use crate::ops::state::{DiffQuery, Source, StateQuery};
use crate::ops::{Caller, fork::ForkRequest, open_sandbox, sandboxes};

/// The control plane's routes. Each is mounted and described in one step (`api_route`), so
/// `/v1/openapi.json` describes every route this mounts.
pub fn routes() -> Router<Arc<App>> {
    described().0
}

/// The routes and their OpenAPI description, built together.
pub fn described() -> (Router<Arc<App>>, aide::openapi::OpenApi) {
    let mut api = aide::openapi::OpenApi::default();
    let router = api_router().finish_api_with(&mut api, doc::describe_api);
    (router, api)
}

/// An operation's id, summary and tag; the sandbox routes' ids name their spelling, since
/// both `/v1/sandboxes` and `/v1/sessions` are described.
fn op(tag: &str, id: &str, summary: &str) -> impl for<'t> FnOnce(TransformOperation<'t>) -> TransformOperation<'t> + use<> {
    let (tag, id, summary) = (tag.to_string(), id.to_string(), summary.to_string());
    move |o| o.id(&id).summary(&summary).tag(&tag)
}

fn api_router() -> ApiRouter<Arc<App>> {
    // `spelling` is `sandbox` or `session`: the same routes under both prefixes.
    let sandbox_routes = |spelling: &str, tag: &str| {
        let tagged = |verb: &str, summary: &str| op(tag, &format!("{verb}_{spelling}"), summary);
        ApiRouter::new()
            .api_route(
                "/",
                post_with(create_sandbox, tagged("create", "Create a sandbox of one to three twins, from twins and a seed or from a task"))
                    .get_with(list_sandboxes, tagged("list", "The team's open sandboxes")),
            )
            .api_route(
                "/{id}",
                get_with(get_sandbox, tagged("get", "One open sandbox, with its agent token"))
                    .delete_with(delete_sandbox, tagged("stop", "Stop a sandbox; an unfinalized one only with `?confirm_discard=` from the 409")),
            )
            .api_route("/{id}/heartbeat", post_with(heartbeat, tagged("heartbeat", "Reset the sandbox's idle timer")))
            .api_route("/{id}/finalize", post_with(finalize, tagged("finalize", "Grade the sandbox into a run and close it (again: the same run)")))
            .api_route("/{id}/fork", post_with(fork_sandbox, tagged("fork", "A new sandbox from this one's worlds after the rows `at` names")))
            .api_route("/{id}/state", get_with(sandbox_state, tagged("state", "A twin's world after a row of its tape (default: now)")))
            .api_route("/{id}/diff", get_with(sandbox_diff, tagged("diff", "What changed in a twin's world between two rows")))
            .api_route("/{id}/seed", get_with(sandbox_seed, tagged("seed", "A twin's world after a row, as a seed document")))
    };
    ApiRouter::new()
        .nest("/v1/sandboxes", sandbox_routes("sandbox", "sandboxes"))
        .nest("/v1/sessions", sandbox_routes("session", "sessions (the older spelling of sandboxes)"))
        .api_route("/v1/openapi.json", get_with(doc::serve, op("meta", "openapi", "This document (no key needed)")))
        .api_route("/v1/usage", get_with(usage, op("usage", "usage", "The team's concurrency use")))
        .api_route("/v1/keys", post_with(create_key, op("keys", "create_key", "A new key for the team (shown once)")).get_with(list_keys, op("keys", "list_keys", "The team's keys")))
        .api_route("/v1/keys/{id}", delete_with(revoke_key, op("keys", "revoke_key", "Revoke a key (not the one making the request)")))
        .api_route("/v1/runs", get_with(list_runs, op("runs", "list_runs", "The team's runs, a page at a time, newest first")))
        .api_route("/v1/runs/{id}", get_with(get_run, op("runs", "get_run", "A run whole: tapes, worlds, deliveries, grading")))
        .api_route("/v1/runs/{id}/report", get_with(crate::task_api::report, op("runs", "run_report", "A run as a markdown report")))
        .api_route("/v1/runs/{id}/fork", post_with(fork_run, op("runs", "fork_run", "A new sandbox from a run's worlds after the rows `at` names")))
        .api_route("/v1/runs/{id}/state", get_with(run_state, op("runs", "run_state", "A twin's world in a run after a row of its tape (default: its end)")))
        .api_route("/v1/runs/{id}/diff", get_with(run_diff, op("runs", "run_diff", "What changed in a run's twin's world between two rows")))
        .api_route("/v1/runs/{id}/seed", get_with(run_seed, op("runs", "run_seed", "A run's twin's world after a row, as a seed document")))
        .api_route("/v1/seeds", post_with(put_seed, op("seeds", "save_seed", "Store a named seed, after its twin's `init` accepted it")).get_with(list_seeds, op("seeds", "list_seeds", "The team's named seeds")))
        .api_route("/v1/twins", get_with(list_twins, op("twins", "list_twins", "The twins this server hosts")))
        .api_route(
            "/v1/tasks",
            post_with(crate::task_api::create, |o| op("tasks", "create_task", "Validate and store a task")(o).input::<ApiJson<doc::TaskSource>>())
                .get_with(crate::task_api::list, op("tasks", "list_tasks", "The team's stored tasks")),
        )
        .api_route(
            "/v1/tasks/validate",
            post_with(crate::task_api::validate, |o| op("tasks", "validate_task", "Parse and bind a task, storing nothing")(o).input::<ApiJson<doc::TaskSource>>()),
        )
        .api_route("/v1/tasks/{id}", get_with(crate::task_api::show, op("tasks", "get_task", "A stored task, with its markdown")))
}

/// A control-plane JSON body read into an operation's typed request: at most the seed limit
/// ([`ApiBody`]), whitespace read as `{}`, not JSON a 400, not fitting `T` a 422 naming the
/// field. Its type is what `/v1/openapi.json` says the route takes.
pub struct ApiJson<T>(pub T);

impl<T: serde::de::DeserializeOwned> axum::extract::FromRequest<Arc<App>> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: axum::extract::Request, app: &Arc<App>) -> Result<ApiJson<T>, ApiError> {
        let ApiBody(body) = ApiBody::from_request(req, app).await?;
        typed_body(&body).map(ApiJson)
    }
}

fn parse_json(body: &Bytes) -> Result<Value, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(json!({}));
    }
    serde_json::from_slice(body).map_err(|e| {
        ApiError::validation(format!("request body is not valid JSON: {e}")).with_status(StatusCode::BAD_REQUEST)
    })
}

async fn create_sandbox(State(app): State<Arc<App>>, Team(team): Team, headers: HeaderMap, ApiJson(req): ApiJson<sandboxes::CreateRequest>) -> Result<Created<doc::Sandbox>, ApiError> {
    let caller = Caller::new(&app, team, &headers);
    let (status, v) = sandboxes::create(&app, &caller, req).await?;
    Ok(Created::new(status, v))
}



async fn list_sandboxes(State(app): State<Arc<App>>, Team(team): Team, headers: HeaderMap) -> Result<Answer<List<doc::Sandbox>>, ApiError> {
    sandboxes::list(&app, &Caller::new(&app, team, &headers)).await.map(Answer::new)
}


async fn get_sandbox(State(app): State<Arc<App>>, Team(team): Team, Path(IdPath { id }): Path<IdPath>, headers: HeaderMap) -> Result<Answer<doc::Sandbox>, ApiError> {
    sandboxes::get(&app, &Caller::new(&app, team, &headers), &id).map(Answer::new)
}

async fn finalize(State(app): State<Arc<App>>, Team(team): Team, Path(IdPath { id }): Path<IdPath>) -> Result<Answer<doc::Finalized>, ApiError> {
    crate::ops::finalize::finalize_sandbox(&app, &team, &id).await.map(Answer::new)
}

async fn heartbeat(State(app): State<Arc<App>>, Team(team): Team, Path(IdPath { id }): Path<IdPath>) -> Result<Answer<doc::Heartbeat>, ApiError> {
    sandboxes::beat(&app, &team, &id).map(Answer::new)
}


#[derive(Deserialize, schemars::JsonSchema)]
struct DeleteQuery {
    /// The `discard_token` of the 409 that refused a stop without it: stopping a sandbox
    /// that was not finalized discards its run.
    confirm_discard: Option<String>,
}

async fn delete_sandbox(State(app): State<Arc<App>>, Team(team): Team, Path(IdPath { id }): Path<IdPath>, ApiQuery(q): ApiQuery<DeleteQuery>) -> Result<Answer<doc::Stopped>, ApiError> {
    sandboxes::stop(&app, &team, &id, q.confirm_discard).await.map(Answer::new)
}


/// `POST /v1/keys`: a new key for the caller's team. The key is in this answer and nowhere
/// else: only its hash is stored.
async fn create_key(State(app): State<Arc<App>>, Team(team): Team) -> Result<Answer<doc::NewKey, 201>, ApiError> {
    let key = crate::auth::new_api_key();
    let id = app.storage.add_api_key(&team, &key).await?;
    Ok(Answer::new(json!({"id": id, "key": key, "prefix": &key[..12], "object": "api_key"})))
}

async fn list_keys(State(app): State<Arc<App>>, Team(team): Team) -> Result<Answer<List<doc::Key>>, ApiError> {
    Ok(Answer::new(json!({"object": "list", "data": app.storage.api_keys(&team).await?})))
}

/// `DELETE /v1/keys/:id`: revoke a key; it stops working at once (no request with it
/// authenticates once this answers, and its live tape streams end). The key making the
/// request, however it was sent, cannot revoke itself, so a team cannot lock itself out by
/// accident.
async fn revoke_key(State(app): State<Arc<App>>, caller: crate::app::Caller, Path(IdPath { id }): Path<IdPath>) -> Result<Answer<doc::Revoked>, ApiError> {
    let team = caller.team;
    if caller.key_id == id {
        return Err(ApiError::new(ErrorType::Conflict, "a key cannot revoke itself; revoke it with another of your team's keys"));
    }
    if !app.storage.revoke_api_key(&team, &id).await? {
        return Err(ApiError::not_found(format!("no live key {id} in your team")));
    }
    Ok(Answer::new(json!({"id": id, "revoked": true})))
}

async fn usage(State(app): State<Arc<App>>, Team(team): Team) -> Result<Answer<doc::Usage>, ApiError> {
    sandboxes::usage_of(&app, &team).await.map(Answer::new)
}



async fn list_runs(State(app): State<Arc<App>>, Team(team): Team, ApiQuery(q): ApiQuery<crate::ops::runs::RunsQuery>) -> Result<Answer<doc::Page<doc::RunSummary>>, ApiError> {
    crate::ops::runs::runs(&app, &team, q).await.map(Answer::new)
}


/// `GET /v1/runs/:id`: the run as stored, streamed a chunk at a time (a run holds its tapes
/// and worlds: it is never loaded whole to be served).
async fn get_run(State(app): State<Arc<App>>, Team(team): Team, Path(IdPath { id }): Path<IdPath>) -> Result<Passed<doc::Run>, ApiError> {
    let row = app.storage.run_row(&team, &id).await?.ok_or_else(|| ApiError::not_found(format!("no run {id} in your team")))?;
    let storage = app.storage.clone();
    Ok(Passed::new(crate::proxy::bulk_stream(app.gates.bulk_streams.clone(), move |out| {
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
    })))
}


/// `POST /v1/seeds`: a named seed, after the twin's own `init` accepted it.
async fn put_seed(State(app): State<Arc<App>>, Team(team): Team, ApiJson(req): ApiJson<crate::ops::seeds::SaveSeed>) -> Result<Answer<doc::SeedSaved, 201>, ApiError> {
    crate::ops::seeds::save(&app, &team, req).await.map(Answer::new)
}

async fn list_seeds(State(app): State<Arc<App>>, Team(team): Team) -> Result<Answer<List<doc::SeedListed>>, ApiError> {
    crate::ops::seeds::list(&app, &team).await.map(Answer::new)
}

/// The twins this server hosts, with their descriptions.
async fn list_twins(State(app): State<Arc<App>>, Team(_): Team) -> Answer<List<doc::Twin>> {
    let data: Vec<Value> = app.twins.values().map(|t| json!({"name": t.name, "origin": t.origin, "description": t.description_json})).collect();
    Answer::new(json!({"object": "list", "data": data}))
}

/// A request body read into an operation's typed request; what does not fit is a 422 naming
/// the field.
fn typed_body<T: serde::de::DeserializeOwned>(body: &Bytes) -> Result<T, ApiError> {
    serde_json::from_value(parse_json(body)?).map_err(|e| ApiError::validation(format!("the request body does not fit this route: {e}")))
}

/// `POST /v1/sandboxes/:id/fork`: a new sandbox whose worlds are this one's after the rows
/// `at` names (default: now).
async fn fork_sandbox(State(app): State<Arc<App>>, Team(team): Team, Path(IdPath { id }): Path<IdPath>, headers: HeaderMap, ApiJson(req): ApiJson<ForkRequest>) -> Result<Answer<doc::Sandbox, 201>, ApiError> {
    let caller = Caller::new(&app, team, &headers);
    crate::ops::fork::fork_sandbox(&app, &caller, &id, req).await.map(Answer::new)
}

/// `POST /v1/runs/:id/fork`: a new sandbox whose worlds are the run's after the rows `at`
/// names (default: its end).
async fn fork_run(State(app): State<Arc<App>>, Team(team): Team, Path(IdPath { id }): Path<IdPath>, headers: HeaderMap, ApiJson(req): ApiJson<ForkRequest>) -> Result<Answer<doc::Sandbox, 201>, ApiError> {
    let caller = Caller::new(&app, team, &headers);
    crate::ops::fork::fork_run(&app, &caller, &id, req).await.map(Answer::new)
}

/// A state export, as the twin wrote it.
fn state_answer(state: String) -> Passed<doc::World> {
    use axum::response::IntoResponse;
    Passed::new(([("content-type", "application/json")], state).into_response())
}

async fn sandbox_state(State(app): State<Arc<App>>, Team(team): Team, Path(IdPath { id }): Path<IdPath>, ApiQuery(q): ApiQuery<StateQuery>) -> Result<Passed<doc::World>, ApiError> {
    let source = Source::Sandbox(open_sandbox(&app, &team, &id)?);
    let twin = source.twin(q.twin.as_deref())?;
    crate::ops::state::state_at(&app, &team, &source, &twin, q.at).await.map(state_answer)
}

async fn sandbox_diff(State(app): State<Arc<App>>, Team(team): Team, Path(IdPath { id }): Path<IdPath>, ApiQuery(q): ApiQuery<DiffQuery>) -> Result<Answer<doc::Diff>, ApiError> {
    let source = Source::Sandbox(open_sandbox(&app, &team, &id)?);
    let twin = source.twin(q.twin.as_deref())?;
    crate::ops::state::diff(&app, &team, &source, &twin, &q).await.map(Answer::new)
}

async fn run_state(State(app): State<Arc<App>>, Team(team): Team, Path(IdPath { id }): Path<IdPath>, ApiQuery(q): ApiQuery<StateQuery>) -> Result<Passed<doc::World>, ApiError> {
    let source = Source::Run(Box::new(crate::ops::whole_run(&app, &team, &id).await?));
    let twin = source.twin(q.twin.as_deref())?;
    crate::ops::state::state_at(&app, &team, &source, &twin, q.at).await.map(state_answer)
}

async fn run_diff(State(app): State<Arc<App>>, Team(team): Team, Path(IdPath { id }): Path<IdPath>, ApiQuery(q): ApiQuery<DiffQuery>) -> Result<Answer<doc::Diff>, ApiError> {
    let source = Source::Run(Box::new(crate::ops::whole_run(&app, &team, &id).await?));
    let twin = source.twin(q.twin.as_deref())?;
    crate::ops::state::diff(&app, &team, &source, &twin, &q).await.map(Answer::new)
}

/// `GET /v1/sandboxes/:id/seed?twin=T&at=N`: the world after row N as a seed document.
async fn sandbox_seed(State(app): State<Arc<App>>, Team(team): Team, Path(IdPath { id }): Path<IdPath>, ApiQuery(q): ApiQuery<StateQuery>) -> Result<Answer<doc::SeedDocument>, ApiError> {
    let source = Source::Sandbox(open_sandbox(&app, &team, &id)?);
    let twin = source.twin(q.twin.as_deref())?;
    crate::ops::seeds::seed_at(&app, &team, &source, &twin, q.at).await.map(Answer::new)
}

/// `GET /v1/runs/:id/seed?twin=T&at=N`: the same for a finished run.
async fn run_seed(State(app): State<Arc<App>>, Team(team): Team, Path(IdPath { id }): Path<IdPath>, ApiQuery(q): ApiQuery<StateQuery>) -> Result<Answer<doc::SeedDocument>, ApiError> {
    let source = Source::Run(Box::new(crate::ops::whole_run(&app, &team, &id).await?));
    let twin = source.twin(q.twin.as_deref())?;
    crate::ops::seeds::seed_at(&app, &team, &source, &twin, q.at).await.map(Answer::new)
}
