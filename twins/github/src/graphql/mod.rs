//! GitHub's GraphQL API (`POST /graphql`, and `/api/graphql` as GitHub Enterprise Server
//! serves it) on the shared engine ([`pome_graphql`]), validated against GitHub's published
//! public schema (`schema/schema.graphql`, from `@octokit/graphql-schema`). The resolvers
//! ([`resolve`]) read the same world the REST routes read; mutations ([`mutate`]) run the
//! REST handler that makes the same change, so the world, the tape's action and its changes
//! are those of the equivalent REST call.
//!
//! Errors are GitHub's: field errors carry a `type` (`NOT_FOUND`, `FORBIDDEN`,
//! `MISSING_PAGINATION_BOUNDARIES`, `EXCESSIVE_PAGINATION`, `ARGUMENT_LIMIT`), validation
//! errors GitHub's `extensions.code`, and a document whose connections could return more than
//! 500,000 nodes is refused before it runs (`MAX_NODE_LIMIT_EXCEEDED`).

mod limits;
mod mutate;
mod resolve;

use pome_graphql::apollo_compiler;
use pome_graphql::request::{Executed, Request, RequestError};
use pome_twin_sdk::{Call, Response, Value, json};

use crate::World;

pub mod tables {
    //! GitHub's schema as static tables, generated at build time by `build.rs`.
    include!(concat!(env!("OUT_DIR"), "/schema_tables.rs"));
}

pub use tables::TABLES;

/// GitHub's GraphQL budget: 5,000 points an hour for a user ([`limits`] counts a query's cost).
pub const POINTS_PER_HOUR: u64 = 5000;

/// `POST /graphql`. The route names the tape's action (`graphql.post`) unless a mutation ran
/// a REST action; a mutation's REST call starts a new generation of REST's response cache.
pub fn endpoint(w: &mut World, call: &mut Call) -> Response {
    let resp = match execute(w, call) {
        Ok(r) | Err(r) => r,
    };
    crate::api::github_headers(call, resp)
}

fn answer(status: u16, body: &Value) -> Response {
    Response::json(status, body)
}

/// A request-level error as GitHub words it: `{"message": …, "documentation_url": …}`.
fn request_error(status: u16, message: &str) -> Response {
    answer(status, &json!({"message": message, "documentation_url": "https://docs.github.com/graphql"}))
}

fn execute(w: &mut World, call: &mut Call) -> Result<Response, Response> {
    let request = match Request::read(false, call.req.query_pairs(), &call.req.body) {
        Ok(r) => r,
        Err(RequestError::NotAnObject) => return Err(request_error(400, "Problems parsing JSON")),
        Err(RequestError::NoQuery { .. }) => return Err(answer(200, &json!({"errors": [{"message": "A query attribute must be specified and must be a string."}]}))),
        Err(RequestError::VariablesNotObject) => return Err(answer(200, &json!({"errors": [{"message": "Variables are invalid JSON."}]}))),
    };
    let query = request.query();
    if query.len() > pome_graphql::limits::MAX_DOCUMENT_BYTES {
        return Err(answer(200, &json!({"errors": [{"message": format!("Query is too large ({} bytes); the maximum is {} bytes.", query.len(), pome_graphql::limits::MAX_DOCUMENT_BYTES)}]})));
    }
    let prepared = match TABLES.document_merging_leaf_types(query) {
        Ok(d) => d,
        Err(errs) => return Err(answer(200, &json!({"errors": validation_errors(&errs)}))),
    };
    let doc = &prepared.doc;
    let operation = match doc.operations.get(request.operation_name()) {
        Ok(op) => op,
        Err(e) => return Err(answer(200, &json!({"errors": [{"message": e.message().to_string()}]}))),
    };
    let is_mutation = operation.operation_type == apollo_compiler::executable::OperationType::Mutation;
    let plain_vars = request.plain_vars();
    let checked = limits::check(doc, &operation.selection_set, plain_vars);
    if !checked.errors.is_empty() {
        return Err(answer(200, &json!({"data": null, "errors": checked.errors})));
    }
    if let Some(e) = checked.node_limit {
        return Err(answer(200, &json!({"errors": [e]})));
    }
    let p = prepared.prepared();
    let coerced = match apollo_compiler::request::coerce_variable_values(&p.schema, operation, &request.vars) {
        Ok(v) => v,
        Err(e) => return Err(answer(200, &json!({"errors": [{"message": e.message().to_string()}]}))),
    };
    let ctx = resolve::Ctx::new(w, call.req.base_url.clone(), checked.cost, call.req.headers.clone());
    let root = resolve::Obj { c: &ctx, e: if is_mutation { resolve::Ent::Mutation } else { resolve::Ent::Query } };
    let introspection = pome_graphql::doc::introspects(query);
    let never = || false;
    let Executed { data, errors, .. } = pome_graphql::request::execute(&prepared, operation, &coerced, &root, introspection, None, &never);
    let fx = ctx.fx.into_inner();
    if let Some(a) = fx.actions.first() {
        call.action = Some(a.clone());
    }
    call.changes.extend(fx.changes);
    call.unsupported = fx.unsupported;
    let typed = |mut v: Value| {
        let msg = v.get("message").and_then(Value::as_str).unwrap_or("").to_string();
        if let Some((_, ty)) = fx.types.iter().find(|(m, _)| *m == msg) {
            // GitHub writes `type` first, then `path`, `locations` and `message`.
            let mut m = serde_json::Map::new();
            m.insert("type".into(), json!(ty));
            for k in ["path", "locations", "message"] {
                if let Some(x) = v.get(k) {
                    m.insert(k.into(), x.clone());
                }
            }
            v = Value::Object(m);
        }
        v
    };
    let list: Vec<Value> = errors.into_iter().map(typed).collect();
    Ok(Response { status: 200, headers: vec![("content-type".into(), "application/json; charset=utf-8".into())], body: pome_graphql::request::body(&data, &list) })
}

/// Validation errors as GitHub answers them: the message in GitHub's (graphql-ruby's) words
/// where the kind is known, with its `extensions.code`; one error per field for missing
/// required arguments, naming them all. An unknown field also makes apollo-compiler call its
/// parent empty ("must have a selection of subfields"), which GitHub does not say.
fn validation_errors(errs: &[apollo_compiler::response::GraphQLError]) -> Vec<Value> {
    let unknown_field = errs.iter().any(|e| e.message.starts_with("Cannot query field"));
    let mut out: Vec<Value> = Vec::new();
    for e in errs {
        if unknown_field && e.message.contains("must have a selection of subfields") {
            continue;
        }
        let locations = serde_json::to_value(&e.locations).unwrap_or(json!([]));
        let (message, ext) = github_wording(&e.message);
        if let Some(Value::String(arg)) = ext.as_ref().and_then(|x| x.get("arguments")).cloned() {
            // Several missing arguments of one field are one error.
            if let Some(prev) = out.iter_mut().find(|p| p["locations"] == locations && p["extensions"]["code"] == "missingRequiredArguments") {
                let all = format!("{}, {arg}", prev["extensions"]["arguments"].as_str().unwrap_or(""));
                let name = prev["extensions"]["name"].as_str().unwrap_or("").to_string();
                prev["extensions"]["arguments"] = json!(all);
                prev["message"] = json!(format!("Field '{name}' is missing required arguments: {all}"));
                continue;
            }
        }
        let mut m = serde_json::Map::new();
        m.insert("path".into(), json!(["query"]));
        if let Some(x) = ext {
            m.insert("extensions".into(), x);
        }
        m.insert("locations".into(), locations);
        m.insert("message".into(), json!(message));
        out.push(Value::Object(m));
    }
    out
}

/// Text between the first pair of double quotes after `from` in `s`, and what follows it.
fn quoted<'s>(s: &'s str, from: &str) -> Option<(&'s str, &'s str)> {
    let rest = &s[s.find(from)? + from.len()..];
    let rest = rest.strip_prefix('"')?;
    let end = rest.find('"')?;
    Some((&rest[..end], &rest[end + 1..]))
}

/// apollo-compiler's message (graphql-js wording) turned into GitHub's where the kind is known.
fn github_wording(msg: &str) -> (String, Option<Value>) {
    // Cannot query field "foo" on type "Repository".
    if let Some((field, rest)) = quoted(msg, "Cannot query field ") {
        if let Some((ty, _)) = quoted(rest, " on type ") {
            return (format!("Field '{field}' doesn't exist on type '{ty}'"), Some(json!({"code": "undefinedField", "typeName": ty, "fieldName": field})));
        }
    }
    // Field "repository" argument "name" of type "String!" is required, but it was not provided.
    if msg.contains("is required, but it was not provided") {
        if let Some((field, rest)) = quoted(msg, "Field ") {
            if let Some((arg, _)) = quoted(rest, " argument ") {
                return (format!("Field '{field}' is missing required arguments: {arg}"), Some(json!({"code": "missingRequiredArguments", "className": "Field", "name": field, "arguments": arg})));
            }
        }
    }
    // Unknown argument "foo" on field "Query.repository".
    if let Some((arg, rest)) = quoted(msg, "Unknown argument ") {
        if let Some((field, _)) = quoted(rest, " on field ") {
            let name = field.rsplit('.').next().unwrap_or(field);
            return (format!("Field '{name}' doesn't accept argument '{arg}'"), Some(json!({"code": "argumentNotAccepted", "name": name, "typeName": "Field", "argumentName": arg})));
        }
    }
    (msg.to_string(), None)
}
