//! The control MCP at `/mcp`, for a team (its `pme_` key as `Authorization: Bearer` or
//! `X-API-KEY`): tasks, sandboxes, finalize and runs as tools. Every tool calls the same
//! function the REST route calls, so both doors answer alike; an API error is a tool result
//! with `isError: true` carrying the REST door's own error envelope.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use axum::extract::{FromRequestParts, Request, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ErrorData, Implementation, ListToolsResult, PaginatedRequestParams, ServerCapabilities,
    ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler};
use serde_json::{Map, Value, json};

use crate::app::{App, Team};
use crate::error::ApiError;
use crate::ops::sandboxes;

/// The team a control message acts for.
pub struct Target {
    pub app: Arc<App>,
    pub team: String,
    /// The HTTP request's headers, for the URLs handed out (Host, X-Forwarded-Proto).
    pub headers: HeaderMap,
}

impl Target {
    fn caller(&self) -> crate::ops::Caller {
        crate::ops::Caller::new(&self.app, self.team.clone(), &self.headers)
    }
}

/// `/mcp`: authenticate the team, then hand the message to the control server.
pub async fn door(State(app): State<Arc<App>>, req: Request) -> Response {
    let (mut parts, body) = req.into_parts();
    let team = match Team::from_request_parts(&mut parts, &app).await {
        Ok(Team(team)) => team,
        Err(e) => return e.into_response(),
    };
    let headers = parts.headers.clone();
    let req = Request::from_parts(parts, body);
    app.mcp.serve_control(req, Target { app: app.clone(), team, headers }).await
}

pub struct ControlServer;

struct ToolDef {
    tool: Tool,
    validator: Option<jsonschema::Validator>,
}

fn tools() -> &'static (Vec<Tool>, HashMap<String, ToolDef>) {
    static TOOLS: OnceLock<(Vec<Tool>, HashMap<String, ToolDef>)> = OnceLock::new();
    TOOLS.get_or_init(|| {
        let id = |what: &str| json!({"type": "string", "description": what});
        let sandbox_id = || json!({"type": "object", "properties": {"sandbox_id": id("The sandbox id, `ses_…`.")}, "required": ["sandbox_id"], "additionalProperties": false});
        let defs: Vec<(&str, &str, Value, bool)> = vec![
            ("run_task", "Provision a sandbox for a task: by the id of a stored task, or by its markdown source (stored under its content id). Boots the task's twins on its seed and answers the sandbox id, the agent token, the task's prompt and, per twin, its REST and MCP URLs. Finalize the sandbox when the agent is done.", json!({
                "type": "object",
                "properties": {
                    "task_id": id("A stored task's id (see list_tasks)."),
                    "source": id("The task's markdown, when it is not stored."),
                    "seed": {"type": "object", "description": "The task's sidecar seed (`<task>.seed.json`), when its markdown describes the seed in prose."},
                    "agent_id": id("Who is being evaluated, carried onto the run."),
                    "agent_version": id("Its version, carried onto the run."),
                    "group_id": id("Groups trials of one task."),
                },
                "additionalProperties": false,
            }), false),
            ("list_tasks", "The team's stored tasks, each with its twins and criteria bindings.", json!({"type": "object", "properties": {}, "additionalProperties": false}), true),
            ("validate_task", "Parse a task's markdown and bind each [code] criterion to a check its twin declares; stores nothing.", json!({
                "type": "object",
                "properties": {"source": id("The task's markdown."), "seed": {"type": "object", "description": "Its sidecar seed, if any."}, "file": id("A file name for messages (task.md).")},
                "required": ["source"],
                "additionalProperties": false,
            }), true),
            ("list_sandboxes", "The team's open sandboxes.", json!({"type": "object", "properties": {}, "additionalProperties": false}), true),
            ("heartbeat", "Reset a sandbox's idle timer; answers the new idle_expires_at.", sandbox_id(), false),
            ("finalize", "Grade a sandbox and close it: reads every twin's tape and state, grades against the task the sandbox booted from and writes the run. Answers the verdict, the score and each criterion's result with its evidence.", sandbox_id(), false),
            ("stop_sandbox", "Stop a sandbox without grading it. An ungraded sandbox is refused (its run would be lost) with a discard token; repeat with confirm_discard set to it to discard.", json!({
                "type": "object",
                "properties": {"sandbox_id": id("The sandbox id, `ses_…`."), "confirm_discard": id("The discard token a refusal answered.")},
                "required": ["sandbox_id"],
                "additionalProperties": false,
            }), false),
            ("get_run", "A persisted run: verdict, criteria results with evidence, tapes and each twin's initial and final state.", json!({
                "type": "object", "properties": {"run_id": id("The run id, `run_…`.")}, "required": ["run_id"], "additionalProperties": false,
            }), true),
            ("usage", "The team's concurrency: sandboxes open now against its quota.", json!({"type": "object", "properties": {}, "additionalProperties": false}), true),
        ];
        let mut defs = defs;
        defs.extend(typed_tools());
        let mut list = Vec::new();
        let mut by_name = HashMap::new();
        for (name, description, schema, read_only) in defs {
            let validator = super::compile_schema("control", name, &schema);
            let Value::Object(schema) = schema else { unreachable!("every schema above is an object") };
            let tool = Tool::new(name, description, Arc::new(schema)).with_annotations(ToolAnnotations::new().read_only(read_only));
            list.push(tool.clone());
            by_name.insert(name.to_string(), ToolDef { tool, validator });
        }
        (list, by_name)
    })
}

/// The tools whose arguments are an operation's typed request (plus the id it acts on): their
/// schemas come from the request types, so this door and REST cannot disagree on a name.
fn typed_tools() -> Vec<(&'static str, &'static str, Value, bool)> {
    use crate::ops::{fork::ForkRequest, runs::RunsQuery, sandboxes::CreateRequest, seeds::SaveWorld, state::StateQuery};
    let with = |schema: schemars::Schema, ids: &[(&str, &str)], required: &[&str]| -> Value {
        let mut v = schema.to_value();
        if let Some(o) = v.as_object_mut() {
            o.remove("$schema");
            o.remove("title");
            o.insert("additionalProperties".into(), json!(false));
            o.insert("required".into(), json!(required));
            let props = o.entry("properties").or_insert_with(|| json!({}));
            for (id, what) in ids {
                props[*id] = json!({"type": "string", "description": what});
            }
        }
        v
    };
    let sandbox = ("sandbox_id", "The sandbox id, `ses_…`.");
    let run = ("run_id", "The run id, `run_…`.");
    vec![
        ("create_sandbox", "Create a sandbox of one to three twins (primary first), on a seed or the twins' default worlds, or from a stored task. Answers the sandbox id, agent token and per-twin REST and MCP URLs.", with(schemars::schema_for!(CreateRequest), &[], &[]), false),
        ("list_runs", "The team's runs, newest first, a page at a time.", with(schemars::schema_for!(RunsQuery), &[], &[]), true),
        ("fork_sandbox", "Fork an open sandbox: a new sandbox (new id and agent token, its own lifetime and quota slot) whose worlds are this one's after the tape rows `at` names per twin (default: now). Its tapes start with the inherited rows; the parent is untouched.", with(schemars::schema_for!(ForkRequest), &[sandbox], &["sandbox_id"]), false),
        ("fork_run", "Fork a finished run: a new sandbox whose worlds are the run's after the tape rows `at` names per twin (default: its end), graded against the same task.", with(schemars::schema_for!(ForkRequest), &[run], &["run_id"]), false),
        ("state_at", "A twin's world (its state export) as it stood after `at` rows of its tape, in an open sandbox (`sandbox_id`) or a finished run (`run_id`); without `at`, now or the run's final world.", with(schemars::schema_for!(StateQuery), &[sandbox, run], &[]), true),
        ("save_seed", "Save a twin's world, as it stood after `at` rows of its tape in an open sandbox (`sandbox_id`) or a finished run (`run_id`), as a named seed: a document its twin wrote that boots exactly that world. New sandboxes and tasks start from it by name.", with(schemars::schema_for!(SaveWorld), &[], &["name"]), false),
    ]
}

/// An operation's typed request from a tool's arguments, with the id it acts on taken out.
fn typed_args<T: serde::de::DeserializeOwned>(args: &Map<String, Value>, ids: &[&str]) -> Result<T, ApiError> {
    let mut rest = args.clone();
    for id in ids {
        rest.remove(*id);
    }
    serde_json::from_value(Value::Object(rest)).map_err(|e| ApiError::validation(format!("the arguments do not fit the tool: {e}")))
}

fn target(ctx: &RequestContext<RoleServer>) -> Result<Arc<Target>, ErrorData> {
    ctx.extensions
        .get::<http::request::Parts>()
        .and_then(|p| p.extensions.get::<Arc<Target>>())
        .cloned()
        .ok_or_else(|| ErrorData::internal_error("the control door was reached without a team", None))
}

impl ServerHandler for ControlServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("pome", env!("CARGO_PKG_VERSION")))
            .with_instructions("pome's control plane: run_task provisions a sandbox for a task and hands back each twin's REST and MCP URLs; finalize grades it.")
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tools().1.get(name).map(|d| d.tool.clone())
    }

    async fn list_tools(&self, _request: Option<PaginatedRequestParams>, _context: RequestContext<RoleServer>) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools().0.clone()))
    }

    async fn call_tool(&self, request: CallToolRequestParams, context: RequestContext<RoleServer>) -> Result<CallToolResponse, ErrorData> {
        let t = target(&context)?;
        let name = request.name.to_string();
        let Some(def) = tools().1.get(&name) else {
            return Err(ErrorData::invalid_params(format!("unknown tool `{name}`; tools/list names the control tools"), Some(json!({"tool": name}))));
        };
        let args = super::arguments(request.arguments);
        if let Some(v) = &def.validator {
            super::check_arguments(v, &name, &Value::Object(args.clone()))?;
        }
        let answer = run(&t, &name, &args).await;
        Ok(match answer {
            Ok(v) => super::value_result(false, v),
            Err(e) => error_result(e).await,
        }
        .into())
    }
}

fn text(args: &Map<String, Value>, key: &str) -> Option<String> {
    args.get(key).and_then(Value::as_str).map(str::to_string)
}

/// One control tool: the REST door's function for it.
async fn run(t: &Target, name: &str, args: &Map<String, Value>) -> Result<Value, ApiError> {
    let (app, team) = (&t.app, t.team.as_str());
    let sandbox = || text(args, "sandbox_id").unwrap_or_default();
    match name {
        "run_task" => run_task(t, args).await,
        "list_tasks" => crate::task_api::tasks(app, team).await,
        "validate_task" => crate::task_api::validate_body(app, &Value::Object(args.clone())),
        "create_sandbox" => Ok(sandboxes::create(app, &t.caller(), typed_args(args, &[])?).await?.1),
        "list_sandboxes" => sandboxes::list(app, &t.caller()).await,
        "heartbeat" => sandboxes::beat(app, team, &sandbox()),
        "finalize" => crate::ops::finalize::finalize_sandbox(app, team, &sandbox()).await,
        "stop_sandbox" => sandboxes::stop(app, team, &sandbox(), text(args, "confirm_discard")).await,
        "get_run" => crate::ops::runs::run(app, team, &text(args, "run_id").unwrap_or_default()).await,
        "list_runs" => crate::ops::runs::runs(app, team, typed_args(args, &[])?).await,
        "usage" => sandboxes::usage_of(app, team).await,
        "fork_sandbox" => crate::ops::fork::fork_sandbox(app, &t.caller(), &sandbox(), typed_args(args, &["sandbox_id"])?).await,
        "fork_run" => crate::ops::fork::fork_run(app, &t.caller(), &text(args, "run_id").unwrap_or_default(), typed_args(args, &["run_id"])?).await,
        "state_at" => state_at(t, args).await,
        "save_seed" => crate::ops::seeds::save_world(app, team, typed_args(args, &[])?).await,
        other => Err(ApiError::not_found(format!("no control tool `{other}`"))),
    }
}

/// Provision a sandbox for a task: stored by id, or given as markdown (stored first, under
/// its content id, so finalize grades the version the sandbox booted from).
async fn run_task(t: &Target, args: &Map<String, Value>) -> Result<Value, ApiError> {
    let (app, team) = (&t.app, t.team.as_str());
    let (task, version) = match (text(args, "task_id"), text(args, "source")) {
        (_, Some(source)) => crate::task_api::store(app, team, &crate::task_api::inline_id(&source), &source, args.get("seed").filter(|s| !s.is_null())).await?,
        (Some(id), None) => crate::task_api::get(app, team, &id)
            .await?
            .ok_or_else(|| ApiError::validation(format!("no task `{id}` in your team; store it with POST /v1/tasks, or pass its markdown as `source`")).with_details(json!({"field": "task_id"})))?,
        (None, None) => return Err(ApiError::validation("run_task needs `task_id` or `source`")),
    };
    // The sandbox boots the version stored here, whose prompt this answer shows.
    let req = sandboxes::CreateRequest { task_id: Some(task.id.clone()), agent_id: text(args, "agent_id"), agent_version: text(args, "agent_version"), group_id: text(args, "group_id"), ..Default::default() };
    let (_, mut sandbox) = sandboxes::create_for_task(app, &t.caller(), req, (task.clone(), version)).await?;
    sandbox["sandbox_id"] = sandbox["id"].clone();
    sandbox["task"] = json!({"id": task.id, "title": task.title, "prompt": task.prompt});
    Ok(sandbox)
}

/// A world at a tape position, of a sandbox or a run: the state export as JSON.
async fn state_at(t: &Target, args: &Map<String, Value>) -> Result<Value, ApiError> {
    use crate::ops::state::{Source, StateQuery};
    let q: StateQuery = typed_args(args, &["sandbox_id", "run_id"])?;
    let source = Source::named(&t.app, &t.team, text(args, "sandbox_id").as_deref(), text(args, "run_id").as_deref()).await?;
    let twin = source.twin(q.twin.as_deref())?;
    let state = crate::ops::state::state_at(&t.app, &t.team, &source, &twin, q.at).await?;
    Ok(serde_json::from_str(&state).unwrap_or(Value::String(state)))
}

/// An API error as a tool result: the REST door's envelope with its HTTP status.
async fn error_result(e: ApiError) -> CallToolResult {
    let status = e.status.unwrap_or_else(|| e.kind.status()).as_u16();
    let resp = e.into_response();
    let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX).await.unwrap_or_default();
    let mut v: Value = serde_json::from_slice(&bytes).unwrap_or_else(|_| json!({"error": {"message": String::from_utf8_lossy(&bytes)}}));
    v["status"] = json!(status);
    super::value_result(true, v)
}
