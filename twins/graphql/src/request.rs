//! One GraphQL request from the wire to its `data` and `errors`: the body read (a POST's JSON
//! or a GET's query string), variables coerced, and the operation executed on the engine's
//! executor ([`crate::exec`]), or on apollo-compiler's for introspection. What a twin answers
//! around it (its vendor's error shapes, limits and status codes) stays the twin's.

use std::cell::RefCell;

use apollo_compiler::executable::Operation;
use apollo_compiler::resolvers::Execution;
use apollo_compiler::response::{JsonMap, JsonValue};
use serde_json::{Map, Value, json};

use crate::doc::Doc;
use crate::exec::{Apollo, Exec, Info, Out, Planned, Resolve};
use crate::json::{from_json_ref, map_to_json, to_json};
use crate::memo::{Fresh, Memo};

/// A request's parameters as the client sent them.
pub struct Request {
    /// The body (or the query string's pairs) as a JSON object.
    pub body: Value,
    /// `variables`, as the executor takes them.
    pub vars: JsonMap,
}

/// Why a request's parameters cannot be read, for the twin to answer in its vendor's words.
#[derive(Debug, PartialEq)]
pub enum RequestError {
    /// The POST body is not a JSON object.
    NotAnObject,
    /// No `query` string; `persisted` when the client sent an automatic persisted query's hash.
    NoQuery { persisted: bool },
    /// `variables` is neither an object nor null.
    VariablesNotObject,
}

impl Request {
    /// A GET's query string (`query`, `operationName` as text, the rest as JSON) or a POST's
    /// JSON body.
    pub fn read(is_get: bool, query_pairs: impl IntoIterator<Item = (String, String)>, body: &[u8]) -> Result<Request, RequestError> {
        let body: Value = if is_get {
            let mut m = Map::new();
            for (k, v) in query_pairs {
                let parsed = if k == "query" || k == "operationName" { Value::String(v) } else { serde_json::from_str(&v).unwrap_or(Value::String(v)) };
                m.insert(k, parsed);
            }
            Value::Object(m)
        } else {
            match serde_json::from_slice(body) {
                Ok(v @ Value::Object(_)) => v,
                _ => return Err(RequestError::NotAnObject),
            }
        };
        if body.get("query").and_then(Value::as_str).is_none() {
            return Err(RequestError::NoQuery { persisted: body.pointer("/extensions/persistedQuery").is_some() });
        }
        let vars = match body.get("variables") {
            None | Some(Value::Null) => JsonMap::new(),
            Some(v @ Value::Object(_)) => match from_json_ref(v) {
                JsonValue::Object(m) => m,
                _ => JsonMap::new(),
            },
            Some(_) => return Err(RequestError::VariablesNotObject),
        };
        Ok(Request { body, vars })
    }

    pub fn query(&self) -> &str {
        self.body.get("query").and_then(Value::as_str).unwrap_or("")
    }

    pub fn operation_name(&self) -> Option<&str> {
        self.body.get("operationName").and_then(Value::as_str)
    }

    /// The variables as JSON (what the cost walk reads page sizes from).
    pub fn plain_vars(&self) -> &Map<String, Value> {
        static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
        self.body.get("variables").and_then(Value::as_object).unwrap_or_else(|| EMPTY.get_or_init(Map::new))
    }
}

/// What executing an operation wrote.
pub struct Executed {
    /// The `data` JSON (`null` when a non-null root field failed).
    pub data: Vec<u8>,
    /// Field errors, each with `message`, `locations` and `path`; the message is the
    /// resolver's own, without apollo's `resolver error: ` prefix.
    pub errors: Vec<Value>,
    /// Objects rendered afresh, for the document's memo ([`Memo::keep`]).
    pub fresh: Vec<Fresh>,
}

/// Execute `operation` of `doc` with coerced variables on `root`. `memo` (queries only) lends
/// objects earlier requests rendered while `unchanged` says this request has not changed the
/// world. Introspection documents run on apollo-compiler's executor.
pub fn execute(doc: &Doc, operation: &Operation, coerced: &apollo_compiler::validation::Valid<JsonMap>, root: &dyn Resolve, introspection: bool, memo: Option<&RefCell<Memo>>, unchanged: &dyn Fn() -> bool) -> Executed {
    let p = doc.prepared();
    let (data, errors, fresh) = if introspection {
        let top = Apollo(Box::new(ByRef(root)), p.tables);
        match Execution::new(&p.schema, &doc.doc).operation(operation).implementers_map(&p.implementers).coerced_variable_values(coerced).enable_schema_introspection(true).execute_sync(&top) {
            Ok(resp) => (
                serde_json::to_vec(&resp.data.map(|d| to_json(&JsonValue::Object(d))).unwrap_or(Value::Null)).unwrap_or_default(),
                resp.errors.iter().map(|e| serde_json::to_value(e).unwrap_or(json!({}))).collect(),
                Vec::new(),
            ),
            Err(e) => (b"null".to_vec(), vec![json!({"message": e.message().to_string()})], Vec::new()),
        }
    } else {
        let vars = map_to_json(coerced);
        let mut ex = Exec { schema: &p.schema, prepared: p, doc: &doc.doc, metas: &doc.metas, vars, errors: Vec::new(), collected: Default::default(), out: Vec::with_capacity(4096), scratch: Vec::new(), rendered: Vec::new(), memo, unchanged, fresh: Vec::new() };
        let data = ex.run(root, &operation.selection_set);
        (data, ex.errors, ex.fresh)
    };
    let errors = errors
        .into_iter()
        .map(|mut v| {
            if let Some(m) = v.get("message").and_then(Value::as_str).and_then(|m| m.strip_prefix("resolver error: ")) {
                v["message"] = json!(m);
            }
            v
        })
        .collect();
    Executed { data, errors, fresh }
}

/// `{"errors": […], "data": …}` (errors only when there are any), the data copied as written.
pub fn body(data: &[u8], errors: &[Value]) -> Vec<u8> {
    let mut body = Vec::with_capacity(data.len() + 64);
    body.push(b'{');
    if !errors.is_empty() {
        body.extend_from_slice(b"\"errors\":");
        serde_json::to_writer(&mut body, errors).expect("errors serialise");
        body.push(b',');
    }
    body.extend_from_slice(b"\"data\":");
    body.extend_from_slice(data);
    body.push(b'}');
    body
}

/// A borrowed resolver where an owned one is wanted (apollo's executor takes its root boxed).
struct ByRef<'a>(&'a dyn Resolve);

impl Resolve for ByRef<'_> {
    fn type_name(&self) -> &str {
        self.0.type_name()
    }
    fn resolve_field<'a>(&'a self, info: &Info<'_>) -> Result<Out<'a>, apollo_compiler::resolvers::FieldError> {
        self.0.resolve_field(info)
    }
    fn identity(&self) -> Option<&str> {
        self.0.identity()
    }
    fn resolve_all<'a>(&'a self, fields: &[Planned<'_>], scratch: &mut Vec<u8>) -> Option<Vec<Result<Out<'a>, apollo_compiler::resolvers::FieldError>>> {
        self.0.resolve_all(fields, scratch)
    }
}
