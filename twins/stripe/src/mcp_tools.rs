//! The tools of Stripe's MCP servers that are not one REST call as is, each served at
//! `/mcp-tools/<tool>` with the tool's own JSON arguments:
//!
//! - mcp.stripe.com's generic tools over the operations the twin serves (`operations.json`,
//!   copied from Stripe's OpenAPI by `scripts/operations.py`): `stripe_api_search` and
//!   `stripe_api_details` describe them; `stripe_api_read` and `stripe_api_write` become the
//!   operation's own request and are dispatched to the twin's route, so the world, the tape
//!   and the checks are the same as for the REST call.
//! - `search_stripe_documentation`: a search over the same operations as the API reference,
//!   answered as Stripe's search answers (`sources` of type, url, title, content), with a
//!   snippet in the asked language.
//! - The account tools, against the sandbox's one test-mode account; `stripe_context` and
//!   `livemode` are checked against it wherever a tool takes them.
//! - `send_stripe_mcp_feedback`: kept in the world as an `mcp_feedback` object.
//! - `create_payment_link` (the agent toolkit's): a payment link with the toolkit's
//!   `redirect_url` as `after_completion`.

use std::sync::OnceLock;

use pome_twin_sdk::describe::{flatten_form, join_pairs, percent_encode};
use pome_twin_sdk::{Call, Method, Response, Router, Twin, Value, json};
use serde::{Deserialize, Serialize};
use serde_json::Map;

use crate::World;
use crate::core::{Params, Res, StripeError, error_response, invalid, missing, next_request_id, run};

/// One API operation the twin serves, as Stripe's OpenAPI describes it.
#[derive(Debug, Deserialize)]
pub struct Operation {
    pub operation_id: String,
    pub method: String,
    /// Stripe's path, holes named after their parameter (`/v1/customers/{customer}`).
    pub path: String,
    /// The twin's route for it.
    pub route: String,
    pub action: String,
    pub summary: String,
    pub description: String,
    pub parameters: Vec<Parameter>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Parameter {
    pub name: String,
    /// `path`, `query` or `body`.
    #[serde(rename = "in")]
    pub location: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub required: bool,
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "enum")]
    pub values: Option<Vec<Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// A hash's (or a list of hashes') own fields, by name and type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fields: Option<Vec<Value>>,
}

pub fn operations() -> &'static [Operation] {
    static OPS: OnceLock<Vec<Operation>> = OnceLock::new();
    OPS.get_or_init(|| serde_json::from_str(include_str!("operations.json")).expect("operations.json is a list of operations"))
}

fn operation(id: &str) -> Result<&'static Operation, StripeError> {
    operations()
        .iter()
        .find(|o| o.operation_id == id)
        .ok_or_else(|| invalid(format!("Unknown stripe_api_operation_id `{id}`: use stripe_api_search to find one this account serves.")).param("stripe_api_operation_id"))
}

macro_rules! h {
    ($f:path) => {
        |w: &mut World, c: &mut Call| run(w, c, $f)
    };
}

pub fn routes(r: Router<World>) -> Router<World> {
    r.post("/mcp-tools/stripe_api_search", "mcp.stripe_api_search", h!(api_search))
        .post("/mcp-tools/stripe_api_details", "mcp.stripe_api_details", h!(api_details))
        .post("/mcp-tools/stripe_api_read", "mcp.stripe_api_read", |w: &mut World, c: &mut Call| forward(w, c, api_read))
        .post("/mcp-tools/stripe_api_write", "mcp.stripe_api_write", |w: &mut World, c: &mut Call| forward(w, c, api_write))
        .post("/mcp-tools/create_payment_link", "mcp.create_payment_link", |w: &mut World, c: &mut Call| forward(w, c, payment_link))
        .post("/mcp-tools/get_stripe_account_info", "mcp.get_stripe_account_info", h!(account_info))
        .post("/mcp-tools/list_available_accounts_or_orgs", "mcp.list_available_accounts_or_orgs", h!(list_accounts))
        .post("/mcp-tools/send_stripe_mcp_feedback", "mcp.send_stripe_mcp_feedback", h!(feedback))
        .post("/mcp-tools/search_stripe_documentation", "mcp.search_stripe_documentation", h!(search_documentation))
}

/// The tool's arguments: the JSON object posted.
fn args(call: &Call) -> Result<Map<String, Value>, StripeError> {
    match call.req.json_value() {
        Ok(Value::Object(m)) => Ok(m),
        _ if call.req.body.is_empty() => Ok(Map::new()),
        _ => Err(invalid("A tool's arguments are a JSON object.")),
    }
}

fn arg_str<'a>(a: &'a Map<String, Value>, k: &str) -> Option<&'a str> {
    a.get(k).and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// `stripe_context` must name the sandbox's account, and `livemode` be false: a sandbox is
/// test mode only.
fn check_account(w: &World, a: &Map<String, Value>) -> Result<(), StripeError> {
    let ctx = arg_str(a, "stripe_context").ok_or_else(|| missing("stripe_context"))?;
    if ctx != w.account_id {
        return Err(invalid(format!("stripe_context `{ctx}` is not an account of this session; list_available_accounts_or_orgs lists `{}`.", w.account_id)).param("stripe_context"));
    }
    if a.get("livemode").and_then(Value::as_bool) == Some(true) {
        return Err(invalid(format!("Account {ctx} is in test mode: livemode must be false.")).param("livemode"));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Search and details.

/// Lower-case words of a text, plural `s` dropped, so `intents` finds `intent`.
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let flush = |cur: &mut String, out: &mut Vec<String>| {
        if !cur.is_empty() {
            let w = std::mem::take(cur).to_lowercase();
            let w = w.strip_suffix("ies").map(|s| format!("{s}y")).or_else(|| w.strip_suffix("sses").map(|s| format!("{s}ss"))).unwrap_or(w);
            let w = if w.len() > 3 && w.ends_with('s') && !w.ends_with("ss") { w[..w.len() - 1].to_string() } else { w };
            out.push(w);
        }
    };
    let mut prev_lower = false;
    for c in text.chars() {
        if c.is_alphanumeric() {
            // `PostPaymentIntents` splits at its capitals like `payment_intents` at `_`.
            if c.is_uppercase() && prev_lower {
                flush(&mut cur, &mut out);
            }
            prev_lower = c.is_lowercase() || c.is_ascii_digit();
            cur.push(c);
        } else {
            flush(&mut cur, &mut out);
            prev_lower = false;
        }
    }
    flush(&mut cur, &mut out);
    out
}

const STOP: &[&str] = &["a", "an", "the", "to", "of", "in", "on", "for", "and", "or", "with", "how", "do", "i", "is", "my", "can", "what", "me", "by", "it", "be", "are", "from", "that", "this", "you", "v1"];

/// How well an operation's method and path shape fit an intent verb: the CRUD verbs by
/// shape (`create` is a POST to a collection); any other verb (`refund`, `capture`, `cancel`)
/// names the action, so an operation whose path holds it fits best, a POST above a read.
fn intent_fit(intent: &str, op: &Operation) -> i64 {
    let last = op.path.rsplit('/').next().unwrap_or_default();
    let on_one = last.starts_with('{');
    let fits = match intent {
        "create" | "add" | "new" | "make" => op.method == "POST" && !op.path[4..].contains('{'),
        "list" | "all" | "browse" => op.method == "GET" && !on_one && last != "search",
        "retrieve" | "get" | "fetch" | "read" | "show" | "view" => op.method == "GET" && on_one,
        "update" | "modify" | "edit" | "change" | "set" => op.method == "POST" && on_one,
        "delete" | "remove" | "destroy" => op.method == "DELETE",
        "search" | "find" | "query" => last == "search",
        verb => {
            // The verb as the path's last word (`/refunds`, `/{intent}/cancel`) is the action
            // itself; elsewhere in the path it is a neighbour (`/refunds/{refund}/cancel`).
            let last_is_verb = words(last).first().is_some_and(|l| l == verb);
            let fit = match (words(&op.path).iter().any(|p| p == verb), op.method.as_str()) {
                (true, "POST") => 10,
                (true, _) => 5,
                _ => 0,
            };
            return fit + if last_is_verb && fit > 0 { 2 } else { 0 };
        }
    };
    if fits { 4 } else { 0 }
}

/// Operations ranked for an intent and a resource: resource words found in the path count
/// most, then in the summary and description; an operation whose method and shape fit the
/// intent ranks first among equals.
fn rank(intent: &str, resource: &str) -> Vec<&'static Operation> {
    let want: Vec<String> = words(resource).into_iter().filter(|w| !STOP.contains(&w.as_str())).collect();
    let verb = words(intent).into_iter().next().unwrap_or_default();
    let mut scored: Vec<(i64, usize, &Operation)> = Vec::new();
    for (i, op) in operations().iter().enumerate() {
        let path = words(&op.path);
        let text = words(&format!("{} {}", op.summary, op.description));
        let in_path = want.iter().filter(|w| path.contains(w)).count() as i64;
        let in_text = want.iter().filter(|w| text.contains(w)).count() as i64;
        let fits = intent_fit(&verb, op);
        // An action verb (`refund`) names its operation even when the resource does not.
        if in_path + in_text == 0 && fits < 10 {
            continue;
        }
        let all_in_path = if !want.is_empty() && in_path == want.len() as i64 { 6 } else { 0 };
        // A path naming more than was asked for (`subscription_schedules` for `subscription`,
        // `charges/{charge}/refund` for `refund`) ranks below the one naming just that.
        let mut literal: Vec<String> = op.path.split('/').filter(|s| !s.is_empty() && *s != "v1" && !s.starts_with('{')).flat_map(words).collect();
        literal.dedup();
        let extra = literal.iter().filter(|w| !want.contains(w) && **w != verb).count() as i64;
        scored.push((in_path * 3 + in_text + all_in_path + fits - extra, i, op));
    }
    scored.sort_by_key(|(s, i, _)| (std::cmp::Reverse(*s), *i));
    scored.into_iter().map(|(_, _, op)| op).collect()
}

fn api_search(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let a = args(call)?;
    check_account(w, &a)?;
    let intent = arg_str(&a, "intent").ok_or_else(|| missing("intent"))?;
    let resource = arg_str(&a, "resource").ok_or_else(|| missing("resource"))?;
    let limit = a.get("limit").and_then(Value::as_i64).unwrap_or(5);
    if !(1..=20).contains(&limit) {
        return Err(invalid("limit must be between 1 and 20.").param("limit"));
    }
    let results: Vec<Value> = rank(intent, resource)
        .into_iter()
        .take(limit as usize)
        .map(|op| {
            let params: Vec<Value> = op.parameters.iter().map(|p| json!({"name": p.name, "in": p.location, "type": p.kind, "required": p.required})).collect();
            json!({"stripe_api_operation_id": op.operation_id, "method": op.method, "path": op.path, "summary": summary(op), "parameters": params})
        })
        .collect();
    Ok(json!({"intent": intent, "resource": resource, "results": results}))
}

fn summary(op: &Operation) -> &str {
    if op.summary.is_empty() { &op.description } else { &op.summary }
}

fn api_details(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let a = args(call)?;
    check_account(w, &a)?;
    let op = operation(arg_str(&a, "stripe_api_operation_id").ok_or_else(|| missing("stripe_api_operation_id"))?)?;
    let execute_with = if op.method == "GET" { "stripe_api_read" } else { "stripe_api_write" };
    Ok(json!({
        "stripe_api_operation_id": op.operation_id,
        "method": op.method,
        "path": op.path,
        "summary": op.summary,
        "description": op.description,
        "parameters": op.parameters,
        "execute_with": execute_with,
    }))
}

// ---------------------------------------------------------------------------------------
// Read, write and the payment link: the operation's own request, dispatched.

/// A request to send on to a route of the twin.
struct Target {
    method: Method,
    path: String,
    /// Form pairs: the query for reads and deletes, the body for posts.
    pairs: Vec<(String, String)>,
}

/// Serve a tool by rewriting its call into the request it stands for and dispatching that
/// through the twin's router; a refusal before that is answered as Stripe's error.
fn forward(w: &mut World, call: &mut Call, build: fn(&World, &Map<String, Value>) -> Result<Target, StripeError>) -> Response {
    let t = match args(call).and_then(|a| build(w, &a)) {
        Ok(t) => t,
        Err(e) => {
            let id = next_request_id(w);
            return error_response(&e, &id);
        }
    };
    let encoded = join_pairs(&t.pairs);
    call.req.method = t.method;
    call.req.path = t.path;
    call.req.headers.retain(|(k, _)| k != "content-type");
    if t.method == Method::Post {
        call.req.query = String::new();
        call.req.body = encoded.into_bytes();
        call.req.headers.push(("content-type".into(), "application/x-www-form-urlencoded".into()));
    } else {
        call.req.query = encoded;
        call.req.body = Vec::new();
    }
    World::router().dispatch(w, call)
}

fn api_read(w: &World, a: &Map<String, Value>) -> Result<Target, StripeError> {
    operation_request(w, a, true)
}

fn api_write(w: &World, a: &Map<String, Value>) -> Result<Target, StripeError> {
    operation_request(w, a, false)
}

fn operation_request(w: &World, a: &Map<String, Value>, read: bool) -> Result<Target, StripeError> {
    check_account(w, a)?;
    let op = operation(arg_str(a, "stripe_api_operation_id").ok_or_else(|| missing("stripe_api_operation_id"))?)?;
    if read != (op.method == "GET") {
        let other = if read { "stripe_api_write" } else { "stripe_api_read" };
        return Err(invalid(format!("{} is a {} operation: use {other}.", op.operation_id, op.method)).param("stripe_api_operation_id"));
    }
    let mut params = match a.get("parameters") {
        Some(Value::Object(m)) => m.clone(),
        None | Some(Value::Null) => Map::new(),
        Some(_) => return Err(invalid("parameters must be an object.").param("parameters")),
    };
    let mut path = String::new();
    for seg in op.path.split('/').skip(1) {
        path.push('/');
        match seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            Some(name) => match params.remove(name) {
                Some(Value::String(s)) if !s.is_empty() => path.push_str(&percent_encode(&s)),
                Some(Value::Number(n)) => path.push_str(&n.to_string()),
                _ => return Err(missing(name)),
            },
            None => path.push_str(seg),
        }
    }
    let mut pairs = Vec::new();
    for (k, v) in &params {
        flatten_form(k, v, &mut pairs);
    }
    let method = match op.method.as_str() {
        "GET" => Method::Get,
        "DELETE" => Method::Delete,
        _ => Method::Post,
    };
    Ok(Target { method, path, pairs })
}

/// The agent toolkit's `create_payment_link`: one line item, and `redirect_url` as a
/// redirect after completion.
fn payment_link(_w: &World, a: &Map<String, Value>) -> Result<Target, StripeError> {
    let scalar = |k: &str| a.get(k).and_then(scalar_text);
    let mut pairs = vec![
        ("line_items[0][price]".to_string(), scalar("price").ok_or_else(|| missing("price"))?),
        ("line_items[0][quantity]".to_string(), scalar("quantity").ok_or_else(|| missing("quantity"))?),
    ];
    if let Some(url) = scalar("redirect_url") {
        pairs.push(("after_completion[type]".into(), "redirect".into()));
        pairs.push(("after_completion[redirect][url]".into(), url));
    }
    Ok(Target { method: Method::Post, path: "/v1/payment_links".into(), pairs })
}

fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------
// Accounts and feedback.

fn account(w: &World) -> Value {
    json!({"stripe_context": w.account_id, "livemode": false, "id": w.account_id, "object": "account", "type": "standard"})
}

fn account_info(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let a = args(call)?;
    check_account(w, &a)?;
    Ok(json!({"id": w.account_id, "object": "account", "livemode": false, "dashboard_url": format!("https://dashboard.stripe.com/{}/test/dashboard", w.account_id)}))
}

fn list_accounts(w: &mut World, _call: &mut Call, _p: &Params) -> Res {
    Ok(json!({"accounts": [account(w)]}))
}

fn feedback(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let a = args(call)?;
    let pick = |k: &str, allowed: &[&str]| -> Result<String, StripeError> {
        let v = arg_str(&a, k).ok_or_else(|| missing(k))?;
        if allowed.contains(&v) { Ok(v.to_string()) } else { Err(invalid(format!("{k} must be one of {}.", allowed.join(", "))).param(k)) }
    };
    let sentiment = pick("sentiment", &["positive", "negative", "neutral"])?;
    let source = pick("source", &["user", "agent"])?;
    let quote = arg_str(&a, "quote").ok_or_else(|| missing("quote"))?;
    if quote.chars().count() > 1000 {
        return Err(invalid("quote is at most 1000 characters.").param("quote"));
    }
    let context = arg_str(&a, "context").ok_or_else(|| missing("context"))?;
    let id = w.new_id("mcpfb");
    let o = json!({
        "id": id, "object": "mcp_feedback", "created": w.now(), "sentiment": sentiment, "quote": quote,
        "context": context, "tool_name": arg_str(&a, "tool_name"), "source": source,
    });
    w.insert(Some(call), o);
    Ok(json!({"id": id, "object": "mcp_feedback", "received": true}))
}

// ---------------------------------------------------------------------------------------
// Documentation search.

/// The API reference page of an operation, as docs.stripe.com names them.
fn reference_url(op: &Operation) -> String {
    let mut parts = op.action.split('.').collect::<Vec<_>>();
    let verb = parts.pop().unwrap_or_default();
    format!("https://docs.stripe.com/api/{}/{}", parts.join("/"), verb)
}

fn camel(s: &str, upper_first: bool) -> String {
    let mut out = String::new();
    for (i, part) in s.split('_').enumerate() {
        let mut cs = part.chars();
        if let Some(c) = cs.next() {
            if i == 0 && !upper_first { out.push(c) } else { out.extend(c.to_uppercase()) }
            out.push_str(cs.as_str());
        }
    }
    out
}

/// How the operation is called in `language` (Stripe's official SDKs, or curl).
fn snippet(op: &Operation, language: &str) -> String {
    let parts: Vec<&str> = op.action.split('.').collect();
    let (verb, res) = parts.split_last().map(|(v, r)| (*v, r.to_vec())).unwrap_or(("", Vec::new()));
    let required: Vec<&str> = op.parameters.iter().filter(|p| p.required && p.location == "body").map(|p| p.name.as_str()).collect();
    let ids: Vec<&str> = op.parameters.iter().filter(|p| p.location == "path").map(|p| p.name.as_str()).collect();
    match language {
        "node" => {
            let chain: Vec<String> = res.iter().map(|r| camel(r, false)).collect();
            let mut a: Vec<String> = ids.iter().map(|i| format!("'{i}_id'")).collect();
            a.push(format!("{{{}}}", required.iter().map(|r| format!("{r}: ...")).collect::<Vec<_>>().join(", ")));
            format!("const result = await stripe.{}.{}({});", chain.join("."), camel(verb, false), a.join(", "))
        }
        "python" => format!("result = client.v1.{}.{}({})", res.join("."), verb, ids.iter().map(|i| format!("\"{i}_id\"")).chain([format!("params={{{}}}", required.iter().map(|r| format!("\"{r}\": ...")).collect::<Vec<_>>().join(", "))]).collect::<Vec<_>>().join(", ")),
        "ruby" => format!("result = client.v1.{}.{}({})", res.join("."), verb, ids.iter().map(|i| format!("'{i}_id'")).chain([format!("{{{}}}", required.iter().map(|r| format!("{r}: ...")).collect::<Vec<_>>().join(", "))]).collect::<Vec<_>>().join(", ")),
        "php" => format!("$result = $stripe->{}->{}({});", res.iter().map(|r| camel(r, false)).collect::<Vec<_>>().join("->"), camel(verb, false), ids.iter().map(|i| format!("'{i}_id'")).chain([format!("[{}]", required.iter().map(|r| format!("'{r}' => ...")).collect::<Vec<_>>().join(", "))]).collect::<Vec<_>>().join(", ")),
        "go" => format!("result, err := sc.V1{}.{}(context.TODO(), {}params)", res.iter().map(|r| camel(r, true)).collect::<String>(), camel(verb, true), ids.iter().map(|i| format!("\"{i}_id\", ")).collect::<String>()),
        "java" => format!("var result = client.v1().{}.{}({}params);", res.iter().map(|r| format!("{}()", camel(r, false))).collect::<Vec<_>>().join("."), camel(verb, false), ids.iter().map(|i| format!("\"{i}_id\", ")).collect::<String>()),
        "dotnet" => format!("var result = await client.V1.{}.{}Async({}options);", res.iter().map(|r| camel(r, true)).collect::<Vec<_>>().join("."), camel(verb, true), ids.iter().map(|i| format!("\"{i}_id\", ")).collect::<String>()),
        _ => {
            let path: String = op.path.split('/').map(|s| if s.starts_with('{') { format!("{}_id", &s[1..s.len() - 1]) } else { s.to_string() }).collect::<Vec<_>>().join("/");
            let mut s = format!("curl{} https://api.stripe.com{path} \\\n  -u \"sk_test_...:\"", if op.method == "DELETE" { " -X DELETE" } else if op.method == "GET" { " -G" } else { "" });
            for r in &required {
                s.push_str(&format!(" \\\n  -d {r}=..."));
            }
            s
        }
    }
}

fn search_documentation(_w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let a = args(call)?;
    let question = arg_str(&a, "question").ok_or_else(|| missing("question"))?;
    if question.chars().count() > 1000 {
        return Err(invalid("question is at most 1000 characters.").param("question"));
    }
    let language = arg_str(&a, "language").unwrap_or("curl");
    let want: Vec<String> = words(question).into_iter().filter(|w| !STOP.contains(&w.as_str())).collect();
    let mut scored: Vec<(i64, usize, &Operation)> = Vec::new();
    for (i, op) in operations().iter().enumerate() {
        let title = words(&format!("{} {} {}", op.operation_id, op.path, op.summary));
        let body = words(&op.description);
        let params: Vec<String> = op.parameters.iter().flat_map(|p| words(&p.name)).collect();
        // The path's last word is what the operation acts on or does (`/refunds`, `/cancel`).
        let last = words(op.path.rsplit('/').next().unwrap_or_default());
        let score: usize = want
            .iter()
            .map(|w| 3 * title.contains(w) as usize + 2 * body.contains(w) as usize + params.contains(w) as usize + 3 * last.contains(w) as usize)
            .sum();
        if score > 0 {
            // A path naming more than was asked about ranks below the one naming just that
            // (`/v1/charges/{charge}/refund` below `/v1/refunds` for a refund).
            let mut literal: Vec<String> = op.path.split('/').filter(|s| !s.is_empty() && *s != "v1" && !s.starts_with('{')).flat_map(words).collect();
            literal.dedup();
            let extra = literal.iter().filter(|w| !want.contains(w)).count() as i64;
            scored.push((score as i64 - 2 * extra, i, op));
        }
    }
    scored.sort_by_key(|(s, i, _)| (std::cmp::Reverse(*s), *i));
    // The twin carries only the API reference, so `search_only_api_ref` narrows nothing.
    let sources: Vec<Value> = scored
        .into_iter()
        .take(5)
        .map(|(_, _, op)| {
            let params: Vec<String> = op.parameters.iter().filter(|p| p.location != "query" || p.required).take(12).map(|p| format!("- `{}` ({}{}){}", p.name, p.kind, if p.required { ", required" } else { "" }, p.description.as_deref().map(|d| format!(": {d}")).unwrap_or_default())).collect();
            let title = if op.summary.is_empty() { format!("{} {}", op.method, op.path) } else { op.summary.clone() };
            let content = format!("{}\n\n{} {}\n\nParameters:\n{}\n\n```{}\n{}\n```", op.description, op.method, op.path, params.join("\n"), language, snippet(op, language));
            json!({"type": "api_reference", "url": reference_url(op), "title": title, "content": content})
        })
        .collect();
    Ok(Value::Array(sources))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_is_a_route_the_twin_serves() {
        let routes = <World as Twin>::router().surface();
        for op in operations() {
            assert!(
                routes.iter().any(|r| r.method.eq_ignore_ascii_case(&op.method) && r.path == op.route),
                "{} {} ({}) is no route of the twin",
                op.method,
                op.route,
                op.operation_id
            );
        }
        assert!(operations().len() > 100);
    }

    #[test]
    fn intent_and_resource_find_the_operation() {
        let first = |i: &str, r: &str| rank(i, r).first().map(|o| o.operation_id.clone()).unwrap_or_default();
        assert_eq!(first("create", "customer"), "PostCustomers");
        assert_eq!(first("list", "payment intents"), "GetPaymentIntents");
        assert_eq!(first("retrieve", "subscription"), "GetSubscriptionsSubscriptionExposedId");
        assert_eq!(first("refund", "payment"), "PostRefunds");
        assert_eq!(first("cancel", "payment intent"), "PostPaymentIntentsIntentCancel");
        assert_eq!(first("search", "customers"), "GetCustomersSearch");
    }

    #[test]
    fn words_split_ids_paths_and_plurals() {
        assert_eq!(words("PostPaymentIntents /v1/payment_intents"), ["post", "payment", "intent", "v1", "payment", "intent"]);
        assert_eq!(words("Invoices and addresses"), ["invoice", "and", "address"]);
    }
}
