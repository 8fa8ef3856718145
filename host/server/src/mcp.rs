//! The MCP door: every twin of a sandbox as an MCP server at `/s/<id>/<twin>/mcp`
//! ([`twin`]), and the team's control MCP at `/mcp` ([`control`]), both over MCP's Streamable
//! HTTP transport from the official Rust SDK (`rmcp`).
//!
//! The transport runs stateless: every POST carries one JSON-RPC message and is answered on
//! its own, so an MCP session holds no server memory and survives a restart. Which sandbox,
//! twin and team a message is for is decided by the HTTP request (path and credential) before
//! rmcp sees it, and handed to the handler as a request extension.

pub mod control;
pub mod fast;
pub mod twin;

use std::sync::Arc;

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use rmcp::model::{CallToolResult, ContentBlock, ErrorData};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::Value;

/// What a tape row made through this door says in `via` (a REST row says nothing: `rest`).
pub const VIA: &str = "mcp";

/// The two services, built once at start-up. rmcp builds a handler per message from them.
pub struct Doors {
    /// Each twin's tools, by twin name.
    pub tools: std::collections::BTreeMap<String, Arc<twin::TwinTools>>,
    twin: StreamableHttpService<twin::TwinServer, NeverSessionManager>,
    control: StreamableHttpService<control::ControlServer, NeverSessionManager>,
}

impl Doors {
    /// `max_body`: the request body cap (`--body-mib`); a larger message is refused by the
    /// transport before any JSON is parsed.
    pub fn new(max_body: usize, twins: &pome_runtime::TwinSet) -> Doors {
        let tools = twins.iter().map(|(name, image)| (name.clone(), Arc::new(twin::TwinTools::new(&image.description)))).collect();
        Doors { tools, twin: StreamableHttpService::new(|| Ok(twin::TwinServer), Default::default(), config(max_body)), control: StreamableHttpService::new(|| Ok(control::ControlServer), Default::default(), config(max_body)) }
    }

    /// Serve one HTTP request of a twin's MCP door; `target` says whose.
    pub async fn serve_twin(&self, req: axum::extract::Request, target: twin::Target) -> Response {
        let mut req = match fast::tool_call(req, &target).await {
            fast::Outcome::Answered(resp) => return resp,
            fast::Outcome::Declined(req) => req,
        };
        req.extensions_mut().insert(Arc::new(target));
        serve(self.twin.clone(), req).await
    }

    /// Serve one HTTP request of the control MCP for an authenticated team.
    pub async fn serve_control(&self, mut req: axum::extract::Request, target: control::Target) -> Response {
        req.extensions_mut().insert(Arc::new(target));
        serve(self.control.clone(), req).await
    }
}

fn config(max_body: usize) -> StreamableHttpServerConfig {
    StreamableHttpServerConfig::default()
        // Stateless: no session id, nothing kept between messages.
        .with_legacy_session_mode(false)
        // A tool call is one request and one answer: plain JSON, no event stream to hold open.
        .with_json_response(true)
        .with_sse_keep_alive(None)
        // The SDK's Host allow-list guards unauthenticated servers on loopback from DNS
        // rebinding; every message here carries a sandbox token or a team key instead, and the
        // server is reached under whatever name its operator gives it.
        .disable_allowed_hosts()
        .with_max_request_body_bytes(max_body)
}

async fn serve<S>(svc: StreamableHttpService<S, NeverSessionManager>, req: axum::extract::Request) -> Response
where
    S: rmcp::ServerHandler + Send + 'static,
{
    use tower_service::Service as _;
    let json_sent = req.headers().get(axum::http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|v| v.starts_with("application/json"));
    let mut svc = svc;
    let resp = match svc.call(req).await {
        Ok(resp) => resp.map(Body::new),
        Err(never) => match never {},
    };
    if resp.status() == axum::http::StatusCode::UNSUPPORTED_MEDIA_TYPE && json_sent {
        return not_json_rpc(resp).await;
    }
    resp.into_response()
}

/// rmcp answers a JSON body that is not a JSON-RPC message `415` in plain text, though the
/// media type was right. Answered instead as JSON-RPC asks: `400` with an error without an
/// id, "parse error" for text that is not JSON, "invalid request" for JSON that is no message.
async fn not_json_rpc(resp: Response) -> Response {
    // rmcp's text is a line; read at most a little of it.
    let text = axum::body::to_bytes(resp.into_body(), 4096).await.map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
    let (code, message) = if text.contains("unrecognized JSON-RPC message") { (-32600, "Invalid Request: the body is JSON but not a JSON-RPC message") } else { (-32700, "Parse error: the body is not JSON") };
    let body = serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    (axum::http::StatusCode::BAD_REQUEST, axum::Json(body)).into_response()
}

/// The answer of an API the door called, as a tool result: `text` as the API sent it, and its
/// JSON (`parsed`, when it is an object) as structured content; an error answer is `isError`
/// with the API's own error. Callers parse once and pass both, so no answer is read twice.
pub fn api_result(is_error: bool, text: String, parsed: Option<Value>) -> CallToolResult {
    let content = vec![ContentBlock::text(text)];
    let mut r = if is_error { CallToolResult::error(content) } else { CallToolResult::success(content) };
    r.structured_content = parsed.filter(Value::is_object);
    r
}

/// Whether an API's answer is an error: a 4xx or 5xx status, or a body that says so with a
/// success status: GraphQL's non-empty `errors`, or Slack's `ok: false` (Slack answers its
/// errors with HTTP 200). `errors` and `ok` are the body's top-level fields, if any.
pub fn answer_is_error(status: u16, errors: Option<&Value>, ok: Option<&Value>) -> bool {
    status >= 400 || errors.and_then(Value::as_array).is_some_and(|a| !a.is_empty()) || ok == Some(&Value::Bool(false))
}

/// [`api_result`] for a value the host built itself.
pub fn value_result(is_error: bool, v: Value) -> CallToolResult {
    api_result(is_error, v.to_string(), Some(v))
}

/// The arguments checked against a tool's input schema: a JSON-RPC `invalid_params` error
/// naming every mismatch, so nothing is sent to a twin for arguments the tool does not take.
pub fn check_arguments(v: &jsonschema::Validator, tool: &str, args: &Value) -> Result<(), ErrorData> {
    let errors: Vec<String> = v.iter_errors(args).map(|e| {
        let at = e.instance_path().to_string();
        if at.is_empty() { e.to_string() } else { format!("{at}: {e}") }
    }).take(10).collect();
    if errors.is_empty() {
        return Ok(());
    }
    Err(ErrorData::invalid_params(format!("the arguments of `{tool}` do not match its input schema: {}", errors.join("; ")), Some(serde_json::json!({"tool": tool, "errors": errors}))))
}

/// A tool's input schema compiled once; a schema that does not compile (a third-party twin's
/// mistake) is served as declared and not enforced, with a warning at start-up.
pub fn compile_schema(owner: &str, tool: &str, schema: &Value) -> Option<jsonschema::Validator> {
    match jsonschema::validator_for(schema) {
        Ok(v) => Some(v),
        Err(e) => {
            tracing::warn!(%owner, %tool, error = %e, "a tool's input schema does not compile; its arguments are not checked");
            None
        }
    }
}

/// The arguments of a call as an object (absent = none).
pub fn arguments(args: Option<rmcp::model::JsonObject>) -> serde_json::Map<String, Value> {
    args.unwrap_or_default()
}
