//! MCP tools a twin declares: a name an agent calls and how a call becomes an ordinary request
//! to the twin. A tool call therefore runs through the same router, store and tape as a REST
//! call, and grading cannot tell which door an agent used.
//!
//! A twin names its tools after the vendor's own MCP server (GitHub's `get_issue`, Stripe's
//! `create_customer`) so an agent configured for the real server works by changing its URL.
//! Every action the twin serves that no declared tool reaches becomes a tool too
//! ([`Description::tools_with_actions`]), so the MCP door covers the whole REST surface.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::describe::{ActionDecl, Description};

/// Where a tool's arguments go, beyond the ones its path takes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolBody {
    /// In the query string (`?state=open&labels=bug,ui`): arrays are joined with commas.
    Query,
    /// As a JSON object body.
    #[default]
    Json,
    /// As an urlencoded form with nested brackets (`metadata[tier]=gold`,
    /// `items[0][price]=price_1`), the way Stripe reads bodies.
    Form,
    /// A GraphQL document posted as `{"query": …, "variables": <the arguments>}`.
    Graphql { query: String },
    /// The twin serves this tool itself over MCP at `path` (Gmail's own `/mcp/v1`): the call
    /// is posted there as a JSON-RPC `tools/call` of the same name, and the JSON-RPC result is
    /// the tool's result as is ([`mcp_result`]).
    Mcp,
}

/// One tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDecl {
    /// As the vendor's MCP server names it, else after the action (`issues_create`).
    pub name: String,
    pub description: String,
    /// A JSON Schema object for the arguments.
    pub input_schema: Value,
    pub method: String,
    /// The twin's own route path; `{arg}` holes are filled from the arguments of that name
    /// (percent-encoded; `{*arg}` keeps its slashes), which are then not sent again.
    pub path: String,
    #[serde(default)]
    pub body: ToolBody,
    /// Argument → the API's field, where the vendor's tool names one differently
    /// (`perPage` → `per_page`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub rename: BTreeMap<String, String>,
    /// Fields always sent besides the arguments (a fixed `state=closed`); an argument of the
    /// same name wins.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub fixed: Map<String, Value>,
    /// The tool only reads (MCP's `readOnlyHint`).
    #[serde(default)]
    pub read_only: bool,
}

/// A tool call as the request the twin serves.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolRequest {
    pub method: String,
    pub path: String,
    pub query: String,
    /// Empty when there is no body.
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

impl ToolDecl {
    /// The tool an action becomes when the twin declares none for it: its path parameters
    /// and any other field, sent as the twin's default body (or the query for reads).
    pub fn from_action(a: &ActionDecl, body: &ToolBody) -> ToolDecl {
        let read = matches!(a.method.as_str(), "GET" | "HEAD" | "DELETE");
        ToolDecl {
            name: tool_name(&a.name),
            description: a.summary.clone(),
            input_schema: a.input_schema.clone(),
            method: a.method.clone(),
            path: a.path.clone(),
            body: if read { ToolBody::Query } else { body.clone() },
            rename: BTreeMap::new(),
            fixed: Map::new(),
            read_only: a.method == "GET" || a.method == "HEAD",
        }
    }

    /// The request a call with `args` makes. An error names the argument that is wrong.
    pub fn request(&self, args: &Map<String, Value>) -> Result<ToolRequest, String> {
        let mut rest: Map<String, Value> = self.fixed.clone();
        for (k, v) in args {
            rest.insert(self.rename.get(k).cloned().unwrap_or_else(|| k.clone()), v.clone());
        }
        let mut path = String::with_capacity(self.path.len());
        for (i, seg) in self.path.split('/').enumerate() {
            if i > 0 {
                path.push('/');
            }
            let Some(hole) = seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')) else {
                path.push_str(seg);
                continue;
            };
            let (name, keep_slashes) = match hole.strip_prefix('*') {
                Some(n) => (n, true),
                None => (hole, false),
            };
            let arg = args.get(name).or_else(|| rest.get(name)).cloned();
            rest.remove(name);
            let value = match arg {
                Some(Value::String(s)) if !s.is_empty() => s,
                Some(Value::Number(n)) => n.to_string(),
                Some(Value::Bool(b)) => b.to_string(),
                _ => return Err(format!("argument `{name}` is required (a string or number): the path {} takes it", self.path)),
            };
            if keep_slashes {
                let parts: Vec<String> = value.split('/').map(percent_encode).collect();
                path.push_str(&parts.join("/"));
            } else {
                path.push_str(&percent_encode(&value));
            }
        }
        let (query, content_type, body) = match &self.body {
            ToolBody::Query => (query_string(&rest), "", Vec::new()),
            ToolBody::Json => ("".to_string(), "application/json", serde_json::to_vec(&Value::Object(rest)).expect("JSON serialises")),
            ToolBody::Form => {
                let mut pairs = Vec::new();
                for (k, v) in &rest {
                    flatten_form(k, v, &mut pairs);
                }
                ("".to_string(), "application/x-www-form-urlencoded", join_pairs(&pairs).into_bytes())
            }
            ToolBody::Graphql { query } => {
                let body = serde_json::json!({"query": query, "variables": Value::Object(rest)});
                ("".to_string(), "application/json", serde_json::to_vec(&body).expect("JSON serialises"))
            }
            ToolBody::Mcp => {
                let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": self.name, "arguments": Value::Object(rest)}});
                ("".to_string(), "application/json", serde_json::to_vec(&body).expect("JSON serialises"))
            }
        };
        Ok(ToolRequest { method: self.method.clone(), path, query, content_type, body })
    }
}

/// The tool result in a twin's own MCP answer (for [`ToolBody::Mcp`] tools): the JSON-RPC
/// `result` object, or an `Err` with the JSON-RPC `error` object (or the whole answer when it
/// is not JSON-RPC).
pub fn mcp_result(answer: &[u8]) -> Result<Map<String, Value>, Value> {
    match serde_json::from_slice::<Value>(answer) {
        Ok(Value::Object(mut m)) => match (m.remove("result"), m.remove("error")) {
            (Some(Value::Object(r)), _) => Ok(r),
            (_, Some(e)) => Err(e),
            _ => Err(Value::Object(m)),
        },
        Ok(other) => Err(other),
        Err(_) => Err(Value::String(String::from_utf8_lossy(answer).into_owned())),
    }
}

impl ToolDecl {
    /// Whether a route of `surface` serves this tool's request (a `*` method serves any).
    pub fn reaches(&self, surface: &[crate::describe::RouteDecl]) -> bool {
        surface.iter().any(|r| (r.method == "*" || r.method.eq_ignore_ascii_case(&self.method)) && same_route(&r.path, &self.path))
    }
}

impl Description {
    /// The declared tools, then one per action that no declared tool reaches (by method and
    /// path), named after the action. Names are unique: a generated name that a declared tool
    /// already uses is suffixed with `_action`.
    pub fn tools_with_actions(&self) -> Vec<ToolDecl> {
        let mut out = self.tools.clone();
        for a in &self.actions {
            let covered = self.tools.iter().any(|t| t.method == a.method && same_route(&t.path, &a.path));
            if covered {
                continue;
            }
            let mut tool = ToolDecl::from_action(a, &self.tool_body);
            if out.iter().any(|t| t.name == tool.name) {
                tool.name.push_str("_action");
            }
            if out.iter().all(|t| t.name != tool.name) {
                out.push(tool);
            }
        }
        out
    }
}

/// An action name as an MCP tool name: letters, digits, `_` and `-` only.
pub fn tool_name(action: &str) -> String {
    action.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect()
}

/// Two route paths are the same route when they differ only in the names of their holes.
fn same_route(a: &str, b: &str) -> bool {
    let hole = |s: &str| s.starts_with('{') && s.ends_with('}');
    let (mut x, mut y) = (a.split('/'), b.split('/'));
    loop {
        match (x.next(), y.next()) {
            (None, None) => return true,
            (Some(p), Some(q)) if p == q || (hole(p) && hole(q)) => {}
            _ => return false,
        }
    }
}

fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

fn query_string(fields: &Map<String, Value>) -> String {
    let mut pairs = Vec::new();
    for (k, v) in fields {
        match v {
            Value::Array(items) => {
                let joined: Vec<String> = items.iter().filter_map(scalar).collect();
                pairs.push((k.clone(), joined.join(",")));
            }
            Value::Null => {}
            other => pairs.extend(scalar(other).map(|s| (k.clone(), s))),
        }
    }
    join_pairs(&pairs)
}

/// `metadata[tier]=gold`, `items[0][price]=p`: Stripe's nesting of objects and arrays, as
/// `(key, value)` pairs for [`join_pairs`].
pub fn flatten_form(key: &str, v: &Value, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                flatten_form(&format!("{key}[{k}]"), v, out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                flatten_form(&format!("{key}[{i}]"), v, out);
            }
        }
        Value::Null => {}
        other => out.extend(scalar(other).map(|s| (key.to_string(), s))),
    }
}

/// `k=v&k2=v2`, each side percent-encoded.
pub fn join_pairs(pairs: &[(String, String)]) -> String {
    let mut s = String::new();
    for (k, v) in pairs {
        if !s.is_empty() {
            s.push('&');
        }
        s.push_str(&percent_encode(k));
        s.push('=');
        s.push_str(&percent_encode(v));
    }
    s
}

/// RFC 3986 unreserved characters stay; every other byte is `%XX`.
pub fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(path: &str, body: ToolBody) -> ToolDecl {
        ToolDecl {
            name: "t".into(),
            description: String::new(),
            input_schema: json!({"type": "object"}),
            method: "POST".into(),
            path: path.into(),
            body,
            rename: BTreeMap::new(),
            fixed: Map::new(),
            read_only: false,
        }
    }

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn path_holes_take_their_arguments_which_are_not_sent_again() {
        let t = tool("/repos/{owner}/{repo}/issues/{issue_number}", ToolBody::Json);
        let r = t.request(&args(json!({"owner": "acme", "repo": "a b", "issue_number": 7, "body": "hi"}))).unwrap();
        assert_eq!(r.path, "/repos/acme/a%20b/issues/7");
        assert_eq!(r.body, br#"{"body":"hi"}"#);
    }

    #[test]
    fn a_missing_path_argument_is_named() {
        let t = tool("/repos/{owner}/{repo}", ToolBody::Query);
        assert!(t.request(&args(json!({"owner": "acme"}))).unwrap_err().contains("`repo`"));
    }

    #[test]
    fn forms_nest_objects_and_arrays_with_brackets() {
        let t = tool("/v1/subscriptions", ToolBody::Form);
        let r = t.request(&args(json!({"customer": "cus_1", "items": [{"price": "price_1"}], "metadata": {"tier": "gold"}}))).unwrap();
        assert_eq!(String::from_utf8(r.body).unwrap(), "customer=cus_1&items%5B0%5D%5Bprice%5D=price_1&metadata%5Btier%5D=gold");
    }

    #[test]
    fn renamed_and_fixed_fields_reach_the_query() {
        let mut t = tool("/repos/{owner}/{repo}/issues", ToolBody::Query);
        t.rename.insert("perPage".into(), "per_page".into());
        t.fixed.insert("state".into(), json!("open"));
        let r = t.request(&args(json!({"owner": "o", "repo": "r", "perPage": 5, "labels": ["bug", "ui"]}))).unwrap();
        // Fixed fields first, then the arguments in the order given.
        assert_eq!(r.query, "state=open&labels=bug%2Cui&per_page=5");
    }

    #[test]
    fn graphql_tools_send_their_arguments_as_variables() {
        let t = tool("/graphql", ToolBody::Graphql { query: "query($id: String!) { issue(id: $id) { id } }".into() });
        let r = t.request(&args(json!({"id": "ENG-1"}))).unwrap();
        let body: Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(body["variables"], json!({"id": "ENG-1"}));
    }

    #[test]
    fn mcp_tools_post_a_tools_call_of_their_own_name_and_read_its_result() {
        let mut t = tool("/mcp/v1", ToolBody::Mcp);
        t.name = "get_thread".into();
        let r = t.request(&args(json!({"threadId": "t1"}))).unwrap();
        let body: Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/mcp/v1"));
        assert_eq!(body["method"], "tools/call");
        assert_eq!(body["params"], json!({"name": "get_thread", "arguments": {"threadId": "t1"}}));
        let ok = mcp_result(br#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":false}}"#).unwrap();
        assert_eq!(ok["isError"], false);
        let err = mcp_result(br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}}"#).unwrap_err();
        assert_eq!(err["code"], -32602);
    }

    #[test]
    fn every_action_no_declared_tool_reaches_becomes_a_tool() {
        let mut d = Description::from_json(r#"{"name": "acme", "version": "1"}"#).unwrap();
        let action = |name: &str, method: &str, path: &str| ActionDecl {
            name: name.into(),
            method: method.into(),
            path: path.into(),
            summary: String::new(),
            input_schema: json!({"type": "object"}),
        };
        d.actions = vec![action("issues.get", "GET", "/issues/{n}"), action("issues.create", "POST", "/issues")];
        let mut declared = tool("/issues/{number}", ToolBody::Query);
        declared.method = "GET".into();
        declared.name = "get_issue".into();
        d.tools = vec![declared];
        let names: Vec<String> = d.tools_with_actions().into_iter().map(|t| t.name).collect();
        assert_eq!(names, ["get_issue", "issues_create"]);
    }
}
