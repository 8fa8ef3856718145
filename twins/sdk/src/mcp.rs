//! The MCP endpoint of a twin that serves its vendor's MCP server itself (its tools declared
//! with [`ToolBody::Mcp`](crate::ToolBody::Mcp), as Gmail's and Linear's are): JSON-RPC over
//! HTTP (`initialize`, `ping`, `tools/list`, `tools/call`), one message or a batch. The twin
//! supplies the vendor's listing and a function that runs one tool; everything else about the
//! protocol is here, so every such twin answers it the same way.

use crate::{Call, Method, Response, Value, json};

/// Who the server says it is and what it lists.
pub struct Server<'a> {
    /// `serverInfo.name` and `serverInfo.version`, as the vendor's server answers them.
    pub name: &'a str,
    pub version: &'a str,
    /// The protocol version answered to an `initialize` that names none.
    pub protocol_version: &'a str,
    /// The tools, as the vendor's `tools/list` gives them.
    pub tools: &'a [Value],
}

/// Runs the listed tool `name` with `args` (always an object) as part of `call`: `Ok` is the
/// tool's structured answer, `Err` the text of a tool error. The call's action is the tool's
/// name unless the tool names another.
pub type Tool<W> = fn(&mut W, &mut Call, &str, &Value) -> Result<Value, String>;

/// Serve `call`, a `POST` of one JSON-RPC message or a batch: `200` with the answers, `202`
/// when every message was a notification, `400` with a parse error for a body that is not JSON.
pub fn serve<W>(server: &Server, w: &mut W, call: &mut Call, tool: Tool<W>) -> Response {
    if call.req.method != Method::Post {
        return Response::empty(405).with_header("allow", "POST");
    }
    let body: Value = match serde_json::from_slice(&call.req.body) {
        Ok(v) => v,
        Err(e) => return Response::json(400, &rpc_error(&Value::Null, -32700, &format!("Parse error: {e}"))),
    };
    call.action = Some("mcp".into());
    let answer = match body {
        Value::Array(items) => {
            let out: Vec<Value> = items.iter().filter_map(|m| one(server, w, call, tool, m)).collect();
            if out.is_empty() { None } else { Some(Value::Array(out)) }
        }
        m => one(server, w, call, tool, &m),
    };
    match answer {
        Some(v) => Response::json(200, &v),
        None => Response::empty(202),
    }
}

fn rpc_result(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

fn rpc_error(id: &Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// One message's answer; a notification (no `id`) gets none.
fn one<W>(server: &Server, w: &mut W, call: &mut Call, tool: Tool<W>, m: &Value) -> Option<Value> {
    let id = m.get("id").cloned()?;
    let method = m.get("method").and_then(Value::as_str).unwrap_or("");
    let params = m.get("params").cloned().unwrap_or(json!({}));
    Some(match method {
        "initialize" => rpc_result(
            &id,
            json!({
                "protocolVersion": params.get("protocolVersion").and_then(Value::as_str).unwrap_or(server.protocol_version),
                "capabilities": {"tools": {"listChanged": false}},
                "serverInfo": {"name": server.name, "version": server.version}
            }),
        ),
        "ping" => rpc_result(&id, json!({})),
        "tools/list" => {
            call.action = Some("mcp.tools.list".into());
            rpc_result(&id, json!({"tools": server.tools}))
        }
        "tools/call" => {
            let name = params.get("name").and_then(Value::as_str).unwrap_or("").to_string();
            let args = params.get("arguments").cloned().filter(Value::is_object).unwrap_or(json!({}));
            if !server.tools.iter().any(|t| t["name"] == name.as_str()) {
                return Some(rpc_error(&id, -32602, &format!("Unknown tool: {name}")));
            }
            call.action = Some(name.clone());
            let result = match tool(w, call, &name, &args) {
                Ok(v) => json!({"content": [{"type": "text", "text": v.to_string()}], "structuredContent": v, "isError": false}),
                Err(msg) => json!({"content": [{"type": "text", "text": msg}], "isError": true}),
            };
            rpc_result(&id, result)
        }
        other => rpc_error(&id, -32601, &format!("Method not found: {other}")),
    })
}
