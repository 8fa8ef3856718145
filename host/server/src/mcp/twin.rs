//! One twin as an MCP server. Its tools are the twin's declared tools plus one per action no
//! declared tool reaches ([`pome_contract::Description::tools_with_actions`]). A tool call
//! becomes the request the tool declares and runs through the sandbox's store like a REST
//! call: same world, same tape (the row says `via: "mcp"` and names the tool), same grading.

use std::collections::HashMap;
use std::sync::Arc;

use pome_contract::Description;
use pome_contract::tools::{ToolBody, ToolDecl, ToolRequest};
use pome_runtime::engine::Auth;
use pome_runtime::store::{TwinRequest, TwinStore};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ErrorData, Implementation, InitializeRequestParams, InitializeResult, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler};
use serde_json::Value;

/// A twin's tools, built once at start-up.
pub struct TwinTools {
    pub twin: String,
    pub version: String,
    pub list: Vec<Tool>,
    by_name: HashMap<String, (ToolDecl, Option<jsonschema::Validator>)>,
}

impl TwinTools {
    pub fn new(d: &Description) -> TwinTools {
        let decls = d.tools_with_actions();
        let mut list = Vec::with_capacity(decls.len());
        let mut by_name = HashMap::with_capacity(decls.len());
        for t in decls {
            let schema = match &t.input_schema {
                Value::Object(m) if !m.is_empty() => m.clone(),
                _ => serde_json::json!({"type": "object", "properties": {}}).as_object().cloned().unwrap_or_default(),
            };
            let validator = super::compile_schema(&d.name, &t.name, &Value::Object(schema.clone()));
            let annotations = ToolAnnotations::new().read_only(t.read_only);
            list.push(Tool::new(t.name.clone(), t.description.clone(), Arc::new(schema)).with_annotations(annotations));
            by_name.insert(t.name.clone(), (t, validator));
        }
        TwinTools { twin: d.name.clone(), version: d.version.clone(), list, by_name }
    }

    /// The request a call of tool `name` with `args` makes, with its declaration; or the
    /// JSON-RPC error for an unknown tool or arguments the tool does not take.
    /// `args` is the arguments object.
    pub fn request_for(&self, name: &str, args: &Value) -> Result<(&ToolDecl, ToolRequest), ErrorData> {
        let Some((decl, validator)) = self.by_name.get(name) else {
            // MCP's own example answers an unknown tool with invalid params (-32602).
            return Err(ErrorData::invalid_params(format!("unknown tool `{name}` on the {} twin; tools/list names its tools", self.twin), Some(serde_json::json!({"tool": name}))));
        };
        if let Some(v) = validator {
            super::check_arguments(v, name, args)?;
        }
        let empty = serde_json::Map::new();
        let mut req = decl.request(args.as_object().unwrap_or(&empty)).map_err(|e| ErrorData::invalid_params(format!("`{name}`: {e}"), Some(serde_json::json!({"tool": name}))))?;
        if req.method == "*" {
            // A route that takes any method (Slack's Web API methods): sent as its clients do.
            req.method = "POST".into();
        }
        Ok((decl, req))
    }
}

/// Whose door a message came through, decided by the HTTP request (path and token).
pub struct Target {
    pub store: TwinStore,
    /// The sandbox's agent token, redacted from what the tape records.
    pub token: String,
    pub base_url: String,
    pub tools: Arc<TwinTools>,
    /// The HTTP request's id, for the tape row.
    pub request_id: String,
}

/// The handler rmcp builds for each message; everything it needs is in the message's [`Target`].
pub struct TwinServer;

fn target(ctx: &RequestContext<RoleServer>) -> Result<Arc<Target>, ErrorData> {
    ctx.extensions
        .get::<http::request::Parts>()
        .and_then(|p| p.extensions.get::<Arc<Target>>())
        .cloned()
        .ok_or_else(|| ErrorData::internal_error("the twin door was reached without a sandbox", None))
}

impl ServerHandler for TwinServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build()).with_server_info(Implementation::new("pome-twin", env!("CARGO_PKG_VERSION")))
    }

    async fn initialize(&self, request: InitializeRequestParams, context: RequestContext<RoleServer>) -> Result<InitializeResult, ErrorData> {
        let t = target(&context)?;
        context.peer.set_peer_info(request.clone());
        let info = self.negotiate_initialize(&request)?;
        Ok(info
            .with_server_info(Implementation::new(format!("pome-{}", t.tools.twin), t.tools.version.clone()))
            .with_instructions(format!("The {} twin of a pome sandbox: tools named as the vendor's own MCP server names them, each served by the twin's REST API.", t.tools.twin)))
    }

    async fn list_tools(&self, _request: Option<PaginatedRequestParams>, context: RequestContext<RoleServer>) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(target(&context)?.tools.list.clone()))
    }

    async fn call_tool(&self, request: CallToolRequestParams, context: RequestContext<RoleServer>) -> Result<CallToolResponse, ErrorData> {
        let t = target(&context)?;
        let name = request.name.to_string();
        let args = Value::Object(super::arguments(request.arguments));
        let (decl, req) = t.tools.request_for(&name, &args)?;
        let reply = call(&t, &name, req).await?;
        if decl.body == ToolBody::Mcp && reply.status < 400 {
            // The twin answered the tool over MCP itself: its result is the tool's result.
            return Ok(match pome_contract::tools::mcp_result(&reply.body) {
                Ok(result) => serde_json::from_value::<CallToolResult>(Value::Object(result)).map_err(|e| ErrorData::internal_error(format!("the {} twin's tool result does not read: {e}", t.tools.twin), None))?,
                Err(error) => super::value_result(true, serde_json::json!({"error": error})),
            }
            .into());
        }
        let parsed = serde_json::from_slice::<Value>(&reply.body).ok();
        let is_error = super::answer_is_error(reply.status, parsed.as_ref().and_then(|v| v.get("errors")), parsed.as_ref().and_then(|v| v.get("ok")));
        Ok(super::api_result(is_error, String::from_utf8_lossy(&reply.body).into_owned(), parsed).into())
    }
}

/// Run a tool's request through the twin's store, recorded as coming through MCP.
pub async fn call(t: &Target, tool: &str, req: ToolRequest) -> Result<pome_runtime::store::TwinReply, ErrorData> {
    let secrets = [t.token.as_str()];
    let mut headers = vec![
        ("accept".to_string(), "application/json".to_string()),
        ("authorization".to_string(), format!("Bearer {}", t.token)),
        ("user-agent".to_string(), "pome-mcp".to_string()),
    ];
    if !req.content_type.is_empty() {
        headers.push(("content-type".to_string(), req.content_type.to_string()));
    }
    let twin_req = TwinRequest {
        request_id: t.request_id.clone(),
        method: req.method,
        path: req.path,
        query: pome_tape::redact_text(&req.query, &secrets),
        headers: pome_tape::redact_headers(headers, &secrets),
        body: pome_tape::redact_bytes(req.body, &secrets),
        base_url: t.base_url.clone(),
        auth: Auth::Agent,
        via: Some(crate::mcp::VIA.to_string()),
        tool: Some(tool.to_string()),
    };
    t.store.handle(twin_req).await.map_err(|e| ErrorData::internal_error(format!("the {} twin is unavailable: {e}", t.tools.twin), None))
}
