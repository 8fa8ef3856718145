//! The control plane's task routes (`POST/GET /v1/tasks`, `POST /v1/tasks/validate`), the
//! task a sandbox is created from (`task_id` or `task_source`), and grading at finalize.
//!
//! Tasks are stored per team in the `tasks` table: the markdown and its sidecar seed.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use base64::Engine as _;
use bytes::Bytes;
use serde_json::{Value, json};

use crate::api::Team;
use crate::error::ApiError;
use crate::grade::{self, Catalog};
use crate::server::App;
use crate::task::{self, Task};

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
pub async fn put(app: &App, team: &str, id: &str, source: &str, sidecar: Option<&Value>) -> Result<(), ApiError> {
    let stored = json!({"source": source, "seed": sidecar});
    app.storage.put_task(team, id, &stored.to_string()).await?;
    Ok(())
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

/// The task a create request names, if any: (task, its id).
pub async fn for_create(app: &App, team: &str, body: &Value) -> Result<Option<Task>, ApiError> {
    if let Some(id) = body.get("task_id").and_then(Value::as_str) {
        return match get(app, team, id).await? {
            Some((t, _)) => Ok(Some(t)),
            None => Err(ApiError::validation(format!("no task `{id}` in your team; store it with POST /v1/tasks first")).with_details(json!({"field": "task_id"}))),
        };
    }
    let Some(source) = (match body.get("task_source") {
        Some(_) => source_of(&json!({"task_source": body["task_source"]}))?,
        None => None,
    }) else {
        return Ok(None);
    };
    let id = content_id(&source);
    let t = task::parse("task_source", &id, &source, None).map_err(invalid)?;
    put(app, team, &id, &source, None).await?;
    Ok(Some(t))
}

/// `POST /v1/tasks` `{id?, source | source_base64, seed?}`: validate, store, and report
/// bindings. `seed` is the task's sidecar seed (`<task>.seed.json`), when it has one.
pub async fn create(State(app): State<Arc<App>>, Team(team): Team, body: Bytes) -> Result<(StatusCode, Json<Value>), ApiError> {
    let body = parse_body(&body)?;
    let source = source_of(&body)?.ok_or_else(|| ApiError::validation("`source` (markdown) or `source_base64` is required").with_details(json!({"field": "source"})))?;
    let id = match body.get("id").and_then(Value::as_str) {
        Some(id) if valid_id(id) => id.to_string(),
        Some(id) => return Err(ApiError::validation(format!("task id `{id}` must be 1–128 letters, digits, `-`, `_` or `.`")).with_details(json!({"field": "id"}))),
        None => content_id(&source),
    };
    let sidecar = body.get("seed").filter(|s| !s.is_null()).cloned();
    let t = task::parse(&format!("task {id}"), &id, &source, sidecar.as_ref().map(Value::to_string).as_deref()).map_err(invalid)?;
    for twin in &t.config.twins {
        if !app.twins.contains_key(twin) {
            return Err(ApiError::validation(format!("task `{id}` needs the `{twin}` twin, which this server does not have"))
                .with_details(json!({"error": "unknown_twin", "twin": twin})));
        }
    }
    put(&app, &team, &id, &source, sidecar.as_ref()).await?;
    Ok((StatusCode::CREATED, Json(describe(&t, &Catalog::from_app(&app)))))
}

fn describe(t: &Task, catalog: &Catalog) -> Value {
    let criteria = grade::bindings(t, catalog);
    let unbound: Vec<&Value> = criteria.iter().filter(|c| c["kind"] == "code" && c["binding"].is_null()).collect();
    json!({
        "id": t.id, "object": "task", "title": t.title, "twins": t.config.twins,
        "timeout": t.config.timeout, "runs": t.config.runs, "pass_threshold": t.config.pass_threshold,
        "class": t.config.class, "criteria": criteria, "unbound": unbound.len(),
    })
}

pub async fn list(State(app): State<Arc<App>>, Team(team): Team) -> Result<Json<Value>, ApiError> {
    let catalog = Catalog::from_app(&app);
    let mut data = Vec::new();
    for (id, stored) in app.storage.tasks(&team).await? {
        if let Ok((t, _)) = parse_stored(&id, &stored) {
            data.push(describe(&t, &catalog));
        }
    }
    Ok(Json(json!({"object": "list", "data": data})))
}

pub async fn show(State(app): State<Arc<App>>, Team(team): Team, Path(id): Path<String>) -> Result<Json<Value>, ApiError> {
    match get(&app, &team, &id).await? {
        Some((t, source)) => {
            let mut v = describe(&t, &Catalog::from_app(&app));
            v["source"] = json!(source);
            Ok(Json(v))
        }
        None => Err(ApiError::not_found(format!("no task {id} in your team"))),
    }
}

/// `POST /v1/tasks/validate` `{source | source_base64, file?}`: parse and bind, store nothing.
/// Always 200 with `valid`; a task that does not parse has `errors`.
pub async fn validate(State(app): State<Arc<App>>, Team(_): Team, body: Bytes) -> Result<Json<Value>, ApiError> {
    let body = parse_body(&body)?;
    let source = source_of(&body)?.ok_or_else(|| ApiError::validation("`source` (markdown) or `source_base64` is required").with_details(json!({"field": "source"})))?;
    let file = body.get("file").and_then(Value::as_str).unwrap_or("task.md");
    let stem = file.rsplit('/').next().unwrap_or(file).trim_end_matches(".md");
    let sidecar = body.get("seed").map(Value::to_string);
    match task::parse(file, stem, &source, sidecar.as_deref()) {
        Ok(t) => {
            let d = describe(&t, &Catalog::from_app(&app));
            let ok = d["unbound"] == 0;
            Ok(Json(json!({"valid": ok, "task": d, "errors": if ok { json!([]) } else { json!(["some [code] criteria bind to no declared check"]) }})))
        }
        Err(e) => Ok(Json(json!({"valid": false, "errors": [e.to_string()]}))),
    }
}

/// Grade a collected run against its task (when the sandbox has one) and write the results
/// into the run body: `task`, `score`, `verdict`, `pass_threshold`, `criteria_results`, and
/// each twin's seed text (what `pome replay` boots from).
pub async fn grade_into(app: &App, team: &str, task_id: Option<&str>, run: &mut Value) -> Result<(), ApiError> {
    let Some(id) = task_id else { return Ok(()) };
    let Some((t, _)) = get(app, team, id).await? else { return Ok(()) };
    let catalog = Catalog::from_app(app);
    let g = grade::grade(&t, &grade::run_data(run), &catalog, grade::Judge::from_env().as_ref()).await;
    run["task"] = json!({"id": t.id, "title": t.title, "pass_threshold": t.config.pass_threshold});
    run["score"] = json!(g.score);
    run["verdict"] = json!(g.verdict);
    run["pass_threshold"] = json!(g.pass_threshold);
    run["criteria_results"] = serde_json::to_value(&g.criteria_results).unwrap_or_default();
    for (twin, seed) in &t.seeds {
        if let Some(pt) = run["per_twin"].get_mut(twin) {
            pt["seed"] = json!(seed.to_string());
        }
    }
    Ok(())
}

/// `GET /v1/runs/:id/report`: the run as a markdown report (verdict, criteria with their
/// evidence, each twin's calls and state changes).
pub async fn report(State(app): State<Arc<App>>, Team(team): Team, Path(id): Path<String>) -> Result<axum::response::Response, ApiError> {
    use axum::response::IntoResponse as _;
    let run = app.storage.run(&team, &id).await?.ok_or_else(|| ApiError::not_found(format!("no run {id} in your team")))?;
    Ok(([("content-type", "text/markdown; charset=utf-8")], markdown(&run)).into_response())
}

fn cell(v: &Value) -> String {
    let s = match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    let s = s.replace('|', "\\|").replace('\n', " ");
    if s.chars().count() > 120 { format!("{}…", s.chars().take(120).collect::<String>()) } else { s }
}

/// A run body as markdown.
pub fn markdown(run: &Value) -> String {
    let mut md = String::new();
    let title = run["task"]["title"].as_str().unwrap_or("(no task)");
    md.push_str(&format!("# Run {} — {}\n\n", cell(&run["id"]), title));
    let verdict = run["verdict"].as_str().map_or("ungraded".to_string(), str::to_uppercase);
    md.push_str(&format!(
        "**{verdict}** · score {} (threshold {}) · sandbox `{}` · twins {} · agent {} {} · finalized {}\n\n",
        cell(&run["score"]), cell(&run["pass_threshold"]), cell(&run["session_id"]),
        run["twins"].as_array().into_iter().flatten().filter_map(Value::as_str).collect::<Vec<_>>().join(", "),
        cell(&run["agent_id"]), cell(&run["agent_version"]), cell(&run["finalized_at"]),
    ));
    if let Some(results) = run["criteria_results"].as_array() {
        md.push_str("## Criteria\n\n| # | status | criterion | reason | evidence |\n|---|---|---|---|---|\n");
        for r in results {
            let ev = &r["evidence"];
            let ev = match (ev["state"].as_str(), ev["seq"].as_u64()) {
                (Some(p), _) => format!("{} state `{p}`", cell(&ev["twin"])),
                (_, Some(s)) => format!("{} tape seq {s}", cell(&ev["twin"])),
                _ => cell(ev),
            };
            md.push_str(&format!("| {} | {} | {} | {} | {} |\n", cell(&r["index"]), cell(&r["status"]), cell(&r["text"]), cell(&r["reason"]), ev));
        }
        md.push('\n');
    }
    for (twin, pt) in run["per_twin"].as_object().into_iter().flatten() {
        md.push_str(&format!("## {twin}\n\n"));
        let tape = pt["tape"].as_array().cloned().unwrap_or_default();
        md.push_str(&format!("### Calls ({})\n\n", tape.len()));
        if !tape.is_empty() {
            md.push_str("| seq | method | path | status | action | fidelity |\n|---|---|---|---|---|---|\n");
            for r in &tape {
                md.push_str(&format!("| {} | {} | {} | {} | {} | {} |\n", cell(&r["seq"]), cell(&r["method"]), cell(&r["path"]), cell(&r["status"]), cell(&r["action"]), cell(&r["fidelity"])));
            }
            md.push('\n');
        }
        let diff = pt["diff"].as_array().cloned().unwrap_or_default();
        md.push_str(&format!("### State changes ({})\n\n", diff.len()));
        for d in &diff {
            md.push_str(&format!("- `{}`: {} → {}\n", cell(&d["path"]), cell(&d["before"]), cell(&d["after"])));
        }
        md.push('\n');
    }
    md
}
