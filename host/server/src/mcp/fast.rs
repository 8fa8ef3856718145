//! The hot path of a twin's MCP door: an ordinary `tools/call` answered without rmcp's
//! per-message machinery (a service, a spawned task, channels and cancellation tokens for
//! each stateless message) and without turning the API's answer into a `Value` only to write
//! it out again. On a 2-core machine those made a tool call cost three REST calls.
//!
//! rmcp stays the MCP server: it answers every other message, and every `tools/call` this
//! path is not certain about. The path takes a message only when everything rmcp would check
//! is plainly right (the Accept and Content-Type headers, a protocol version header naming a
//! version whose requests carry no required metadata, no session or SEP-2243 headers, a
//! single request with no fields beyond `name` and `arguments`, a known tool and arguments
//! its schema accepts); otherwise it declines and hands the request to rmcp untouched, before
//! anything reaches the twin. Its answer is byte for byte the JSON-RPC response rmcp writes
//! for the same call (`tests/python/test_mcp.py` sends each call both ways and compares).

use std::borrow::Cow;

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use http::header::{ACCEPT, CONTENT_LENGTH, CONTENT_TYPE};
use pome_contract::tools::ToolBody;
use serde::Deserialize;
use serde_json::Value;

use super::twin::{Target, call};

/// Bodies larger than this go to rmcp, which streams them against the request body cap.
const MAX_BODY: usize = 64 * 1024;

/// Protocol versions whose stateless requests this path answers as rmcp does. (2026-07-28
/// puts required metadata in each request, which rmcp checks; 2024-11-05 predates
/// structured content.)
const VERSIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];

pub enum Outcome {
    Answered(Response),
    /// Not taken: the request as it came, for rmcp.
    Declined(Request),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Message<'a> {
    #[serde(borrow)]
    jsonrpc: Cow<'a, str>,
    id: Value,
    #[serde(borrow)]
    method: Cow<'a, str>,
    params: Params,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    name: String,
    #[serde(default)]
    arguments: Option<serde_json::Map<String, Value>>,
}

/// What the error test of an answer needs, read without building the answer's tree.
#[derive(Deserialize)]
struct Probe {
    errors: Option<Value>,
    ok: Option<Value>,
}

fn media_types(req: &Request, name: http::HeaderName) -> impl Iterator<Item = &str> {
    req.headers()
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.split(';').next().unwrap_or("").trim())
}

/// Whether the headers are ones rmcp would accept without a word, for a stateless call.
fn plain_headers(req: &Request) -> bool {
    let accepts = |want: &str| media_types(req, ACCEPT).any(|t| t.eq_ignore_ascii_case(want));
    let json_body = media_types(req, CONTENT_TYPE).next().is_some_and(|t| t.eq_ignore_ascii_case("application/json"));
    let version = req.headers().get("mcp-protocol-version").and_then(|v| v.to_str().ok()).is_some_and(|v| VERSIONS.contains(&v));
    let small = req.headers().get(CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<usize>().ok()).is_some_and(|n| n <= MAX_BODY);
    let other_mcp_headers = req.headers().keys().any(|k| {
        let k = k.as_str();
        k.starts_with("mcp-") && k != "mcp-protocol-version"
    });
    req.method() == http::Method::POST && accepts("application/json") && accepts("text/event-stream") && json_body && version && small && !other_mcp_headers
}

/// Answer `req` if it is a plain `tools/call` of a tool the twin serves over REST.
pub async fn tool_call(req: Request, t: &Target) -> Outcome {
    if !plain_headers(&req) {
        return Outcome::Declined(req);
    }
    let (parts, body) = req.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_BODY).await else {
        return Outcome::Answered((http::StatusCode::BAD_REQUEST, "Bad Request: the body ended before its Content-Length").into_response());
    };
    let decline = |bytes: Bytes| Outcome::Declined(Request::from_parts(parts, Body::from(bytes)));
    let Ok(msg) = serde_json::from_slice::<Message>(&bytes) else { return decline(bytes) };
    let id_ok = msg.id.is_string() || msg.id.is_i64() || msg.id.is_u64();
    if msg.jsonrpc != "2.0" || msg.method != "tools/call" || !id_ok {
        return decline(bytes);
    }
    let args = Value::Object(msg.params.arguments.unwrap_or_default());
    let Ok((decl, request)) = t.tools.request_for(&msg.params.name, &args) else { return decline(bytes) };
    if decl.body == ToolBody::Mcp {
        // The twin answers this tool over MCP itself; rmcp passes its result on.
        return decline(bytes);
    }
    let reply = match call(t, &msg.params.name, request).await {
        Ok(r) => r,
        Err(e) => {
            let message = rmcp::model::ServerJsonRpcMessage::error(e, serde_json::from_value(msg.id).ok());
            return json_response(serde_json::to_vec(&message).unwrap_or_default());
        }
    };
    // Structured content is the answer itself when it is a JSON object.
    let object = reply.body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
    let probe = if object { serde_json::from_slice::<Probe>(&reply.body).ok() } else { None };
    let is_error = super::answer_is_error(reply.status, probe.as_ref().and_then(|p| p.errors.as_ref()), probe.as_ref().and_then(|p| p.ok.as_ref()));
    let text = String::from_utf8_lossy(&reply.body);
    let mut out = Vec::with_capacity(reply.body.len() * 2 + 128);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    serde_json::to_writer(&mut out, &msg.id).expect("an id writes");
    out.extend_from_slice(b",\"result\":{\"content\":[{\"type\":\"text\",\"text\":");
    serde_json::to_writer(&mut out, &*text).expect("a string writes");
    out.extend_from_slice(b"}]");
    if probe.is_some() {
        out.extend_from_slice(b",\"structuredContent\":");
        out.extend_from_slice(reply.body.trim_ascii());
    }
    out.extend_from_slice(if is_error { b",\"isError\":true}}" } else { b",\"isError\":false}}" });
    json_response(out)
}

fn json_response(body: Vec<u8>) -> Outcome {
    Outcome::Answered(([(CONTENT_TYPE, "application/json")], body).into_response())
}
