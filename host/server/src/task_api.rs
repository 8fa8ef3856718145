//! The control plane's task routes (`POST/GET /v1/tasks`, `POST /v1/tasks/validate`), the
//! task a sandbox is created from (`task_id` or `task_source`), and grading at finalize.
//!
//! Tasks are stored per team in the `tasks` table: the markdown and its sidecar seed.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use base64::Engine as _;
use bytes::Bytes;
use serde_json::{Value, json};

use crate::app::{ApiBody, Team};
use crate::openapi::{self as doc, Answer, IdPath, Markdown, Passed};
use crate::error::ApiError;
use pome_grade::Catalog;
use pome_grade::run::{Run, TaskRef};
use crate::app::App;
use pome_grade::task::{self, Task};

/// The markdown a request carries: `source` (markdown text) or `source_base64`/`task_source`
/// (base64 markdown).
fn source_of(body: &Value) -> Result<Option<String>, ApiError> {
    if let Some(s) = body.get("source").and_then(Value::as_str) {
        return Ok(Some(s.to_string()));
    }
    for key in ["source_base64", "task_source"] {
        if let Some(b) = body.get(key).and_then(Value::as_str) {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(b.trim())
                .map_err(|e| ApiError::validation(format!("`{key}` is not base64: {e}")).with_details(json!({"field": key})))?;
            let text = String::from_utf8(bytes).map_err(|_| ApiError::validation(format!("`{key}` is not UTF-8 markdown")).with_details(json!({"field": key})))?;
            return Ok(Some(text));
        }
    }
    Ok(None)
}

fn parse_body(body: &Bytes) -> Result<Value, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(json!({}));
    }
    serde_json::from_slice(body).map_err(|e| ApiError::validation(format!("request body is not valid JSON: {e}")).with_status(StatusCode::BAD_REQUEST))
}

fn invalid(e: task::TaskError) -> ApiError {
    ApiError::validation(e.to_string()).with_details(json!({"error": "invalid_task", "file": e.file, "what": e.what}))
}

/// A content-derived id for a task given inline.
fn content_id(source: &str) -> String {
    use sha2::{Digest, Sha256};
    format!("task_{}", &hex::encode(Sha256::digest(source.as_bytes()))[..16])
}

fn valid_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 128 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
}

/// Store a task: its markdown and, when its seed lives in a sidecar, that seed.
pub async fn put(app: &App, team: &str, id: &str, source: &str, sidecar: Option<&Value>) -> Result<String, ApiError> {
    let stored = json!({"source": source, "seed": sidecar});
    Ok(app.storage.put_task(team, id, &stored.to_string()).await?)
}

fn parse_stored(id: &str, stored: &str) -> Result<(Task, String), task::TaskError> {
    let v: Value = serde_json::from_str(stored).unwrap_or(Value::Null);
    let source = v["source"].as_str().unwrap_or_default().to_string();
    let sidecar = v.get("seed").filter(|s| !s.is_null()).map(Value::to_string);
    let t = task::parse(&format!("task {id}"), id, &source, sidecar.as_deref())?;
    Ok((t, source))
}

/// A stored task, parsed.
pub async fn get(app: &App, team: &str, id: &str) -> Result<Option<(Task, String)>, ApiError> {
    match app.storage.task(team, id).await? {
        Some(stored) => Ok(Some(parse_stored(id, &stored).map_err(invalid)?)),
        None => Ok(None),
    }
}

/// One version of a stored task, parsed.
pub async fn get_version(app: &App, team: &str, id: &str, version: &str) -> Result<Option<Task>, ApiError> {
    match app.storage.task_version(team, id, version).await? {
        Some(stored) => Ok(Some(parse_stored(id, &stored).map_err(invalid)?.0)),
        None => Ok(None),
    }
}

/// The task a create request names, if any: the task and the version the sandbox boots from.
pub async fn for_create(app: &App, team: &str, req: &crate::ops::sandboxes::CreateRequest) -> Result<Option<(Task, String)>, ApiError> {
    if let Some(id) = &req.task_id {
        let stored = app.storage.task(team, id).await?;
        return match stored {
            Some(stored) => {
                let t = parse_stored(id, &stored).map_err(invalid)?.0;
                Ok(Some((t, crate::storage::task_version(&stored))))
            }
            None => Err(ApiError::validation(format!("no task `{id}` in your team; store it with POST /v1/tasks first")).with_details(json!({"field": "task_id"}))),
        };
    }
    let Some(source) = (match &req.task_source {
        Some(b64) => source_of(&json!({"task_source": b64}))?,
        None => None,
    }) else {
        return Ok(None);
    };
    let id = content_id(&source);
    let t = task::parse("task_source", &id, &source, None).map_err(invalid)?;
    let version = put(app, team, &id, &source, None).await?;
    Ok(Some((t, version)))
}

/// `POST /v1/tasks` `{id?, source | source_base64, seed?}`: validate, store, and report
/// bindings. `seed` is the task's sidecar seed (`<task>.seed.json`), when it has one.
pub async fn create(State(app): State<Arc<App>>, Team(team): Team, ApiBody(body): ApiBody) -> Result<Answer<doc::Task, 201>, ApiError> {
    let body = parse_body(&body)?;
    let source = source_of(&body)?.ok_or_else(|| ApiError::validation("`source` (markdown) or `source_base64` is required").with_details(json!({"field": "source"})))?;
    let id = match body.get("id").and_then(Value::as_str) {
        Some(id) if valid_id(id) => id.to_string(),
        Some(id) => return Err(ApiError::validation(format!("task id `{id}` must be 1–128 letters, digits, `-`, `_` or `.`")).with_details(json!({"field": "id"}))),
        None => content_id(&source),
    };
    let sidecar = body.get("seed").filter(|s| !s.is_null()).cloned();
    let (t, version) = store(&app, &team, &id, &source, sidecar.as_ref()).await?;
    let mut described = describe(&t, &app.catalog);
    described["version"] = json!(version);
    Ok(Answer::new(described))
}

/// Parse a task, check this server has its twins, and store it under `id`: the task and its stored version. REST `POST /v1/tasks` and MCP `run_task`.
pub async fn store(app: &App, team: &str, id: &str, source: &str, sidecar: Option<&Value>) -> Result<(Task, String), ApiError> {
    let t = task::parse(&format!("task {id}"), id, source, sidecar.map(Value::to_string).as_deref()).map_err(invalid)?;
    for twin in &t.config.twins {
        if !app.twins.contains_key(twin) {
            return Err(ApiError::validation(format!("task `{id}` needs the `{twin}` twin, which this server does not have"))
                .with_details(json!({"error": "unknown_twin", "twin": twin})));
        }
    }
    let version = put(app, team, id, source, sidecar).await?;
    Ok((t, version))
}

/// The id a task given inline is stored under: derived from its markdown.
pub fn inline_id(source: &str) -> String {
    content_id(source)
}

fn describe(t: &Task, catalog: &Catalog) -> Value {
    let criteria = pome_grade::bindings(t, catalog);
    let unbound: Vec<&Value> = criteria.iter().filter(|c| c["kind"] == "code" && c["binding"].is_null()).collect();
    json!({
        "id": t.id, "object": "task", "title": t.title, "twins": t.config.twins,
        "timeout": t.config.timeout, "runs": t.config.runs, "pass_threshold": t.config.pass_threshold,
        "class": t.config.class, "criteria": criteria, "unbound": unbound.len(),
    })
}

pub async fn list(State(app): State<Arc<App>>, Team(team): Team) -> Result<Answer<doc::List<doc::Task>>, ApiError> {
    tasks(&app, &team).await.map(Answer::new)
}

/// The team's stored tasks (REST and MCP `list_tasks`).
pub async fn tasks(app: &App, team: &str) -> Result<Value, ApiError> {
    let catalog = &app.catalog;
    let mut data = Vec::new();
    for (id, stored) in app.storage.tasks(team).await? {
        if let Ok((t, _)) = parse_stored(&id, &stored) {
            data.push(describe(&t, catalog));
        }
    }
    Ok(json!({"object": "list", "data": data}))
}

pub async fn show(State(app): State<Arc<App>>, Team(team): Team, Path(IdPath { id }): Path<IdPath>) -> Result<Answer<doc::Task>, ApiError> {
    match get(&app, &team, &id).await? {
        Some((t, source)) => {
            let mut v = describe(&t, &app.catalog);
            v["source"] = json!(source);
            Ok(Answer::new(v))
        }
        None => Err(ApiError::not_found(format!("no task {id} in your team"))),
    }
}

/// `POST /v1/tasks/validate` `{source | source_base64, file?}`: parse and bind, store nothing.
/// Always 200 with `valid`; a task that does not parse has `errors`.
pub async fn validate(State(app): State<Arc<App>>, Team(_): Team, ApiBody(body): ApiBody) -> Result<Answer<doc::Validation>, ApiError> {
    validate_body(&app, &parse_body(&body)?).map(Answer::new)
}

/// Parse and bind a task given in a request body (REST and MCP `validate_task`).
pub fn validate_body(app: &App, body: &Value) -> Result<Value, ApiError> {
    let source = source_of(body)?.ok_or_else(|| ApiError::validation("`source` (markdown) or `source_base64` is required").with_details(json!({"field": "source"})))?;
    let file = body.get("file").and_then(Value::as_str).unwrap_or("task.md");
    let stem = file.rsplit('/').next().unwrap_or(file).trim_end_matches(".md");
    let sidecar = body.get("seed").map(Value::to_string);
    match task::parse(file, stem, &source, sidecar.as_deref()) {
        Ok(t) => {
            let d = describe(&t, &app.catalog);
            let ok = d["unbound"] == 0;
            Ok(json!({"valid": ok, "task": d, "errors": if ok { json!([]) } else { json!(["some [code] criteria bind to no declared check"]) }}))
        }
        Err(e) => Ok(json!({"valid": false, "errors": [e.to_string()]})),
    }
}

/// Grade a collected run against its task (when the sandbox has one) and write the results
/// into the run body: `task`, `score`, `verdict`, `pass_threshold`, `criteria_results`, and
/// each twin's seed text (what `pome replay` boots from).
pub async fn grade_into(app: &App, team: &str, task: Option<(&str, &str)>, run: &mut Run) -> Result<(), ApiError> {
    let Some((id, version)) = task else { return Ok(()) };
    // The version the sandbox booted from, whatever the task says now.
    let Some(t) = get_version(app, team, id, version).await? else {
        return Err(ApiError::internal(format!("version {version} of task `{id}` is missing from storage")));
    };
    let (data, judge) = (run.data(), pome_grade::Judge::from_env());
    let grading = pome_grade::grade(&t, &data, &app.catalog, &app.decider, judge.as_ref());
    // Grading converts whole states and tapes and evaluates CEL: CPU work that must not hold
    // an async worker (and every connection queued on it). On the multi-threaded runtime the
    // worker hands its other tasks to the pool and grades in place; a current-thread
    // runtime (tests, embedders) has no pool to hand them to.
    let g = match tokio::runtime::Handle::current().runtime_flavor() {
        tokio::runtime::RuntimeFlavor::MultiThread => tokio::task::block_in_place(|| tokio::runtime::Handle::current().block_on(grading)),
        _ => grading.await,
    };
    run.set_grade(TaskRef { id: t.id.clone(), version: version.to_string(), title: t.title.clone(), pass_threshold: t.config.pass_threshold }, g);
    for (twin, seed) in &t.seeds {
        if let Some(pt) = run.per_twin.get_mut(twin) {
            pt.seed = Some(seed.to_string());
        }
    }
    Ok(())
}

/// `GET /v1/runs/:id/report`: the run as a markdown report (verdict, criteria with their
/// evidence, each twin's calls and state changes).
pub async fn report(State(app): State<Arc<App>>, Team(team): Team, Path(IdPath { id }): Path<IdPath>) -> Result<Passed<doc::Report, Markdown>, ApiError> {
    use axum::response::IntoResponse as _;
    let run = app.storage.run(&team, &id).await?.ok_or_else(|| ApiError::not_found(format!("no run {id} in your team")))?;
    let run: Run = serde_json::from_value(run).map_err(|e| ApiError::internal(format!("run {id} does not read back: {e}")))?;
    Ok(Passed::new(([("content-type", "text/markdown; charset=utf-8")], run.report()).into_response()))
}
