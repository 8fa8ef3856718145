//! The schema, built once per instance, and prepared documents cached by hash.
//!
//! Linear's SDL is large (1.2 MB); it is parsed and validated lazily, on the first GraphQL
//! request an instance serves, never at init, so an idle sandbox does not carry it. Snapshots
//! carry only the world, so after a restore the schema is rebuilt the same way from the same
//! embedded text: the cache is deterministic.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::rc::Rc;
use std::sync::OnceLock;

use apollo_compiler::collections::HashMap as AHashMap;
use apollo_compiler::schema::{ExtendedType, Implementers};
use apollo_compiler::validation::Valid;
use apollo_compiler::{ExecutableDocument, Name, Schema};

pub const SCHEMA_TEXT: &str = include_str!("../schema/schema.graphql");

pub struct Prepared {
    pub schema: Valid<Schema>,
    pub implementers: AHashMap<Name, Implementers>,
}

fn build(text: &str) -> Prepared {
    // The embedded SDL is Linear's own and is validated by this crate's tests; at run time
    // it is only parsed (validation would add a few milliseconds per instance).
    let schema = apollo_compiler::validation::Valid::assume_valid(Schema::parse(text, "schema.graphql").unwrap_or_else(|e| e.partial));
    let implementers = schema.implementers_map();
    Prepared { schema, implementers }
}

/// The schema without its descriptions (a quarter of the text): what validation and
/// execution need, built once per instance on its first request.
pub fn prepared() -> &'static Prepared {
    static P: OnceLock<Prepared> = OnceLock::new();
    P.get_or_init(|| build(&strip_descriptions(SCHEMA_TEXT)))
}

/// The whole schema, descriptions included: built only for introspection (`__schema`,
/// `__type`), which codegen tools run and which must show Linear's documentation.
pub fn prepared_full() -> &'static Prepared {
    static P: OnceLock<Prepared> = OnceLock::new();
    P.get_or_init(|| build(SCHEMA_TEXT))
}

/// The SDL without its `"""` block-string descriptions.
pub fn strip_descriptions(text: &str) -> String {
    let mut out = String::with_capacity(text.len() / 3);
    let mut rest = text;
    while let Some(i) = rest.find("\"\"\"") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 3..];
        match after.find("\"\"\"") {
            Some(j) => rest = after[j + 3..].trim_start_matches([' ', '\n', '\r', '\t']),
            None => {
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// Whether a document introspects the schema (beyond `__typename`).
pub fn introspects(text: &str) -> bool {
    text.contains("__schema") || text.match_indices("__type").any(|(i, _)| !text[i..].starts_with("__typename"))
}

pub fn schema() -> &'static Valid<Schema> {
    &prepared().schema
}

/// A prepared document, or Linear's validation errors for it (as `(message, locations)`).
pub type DocResult = Result<Rc<Valid<ExecutableDocument>>, Rc<Vec<apollo_compiler::response::GraphQLError>>>;

/// The schema a document runs against: the full one for introspection, else the lean one.
pub fn schema_for(text: &str) -> &'static Prepared {
    if introspects(text) { prepared_full() } else { prepared() }
}

const CACHE_CAP: usize = 512;

thread_local! {
    static DOCS: RefCell<HashMap<u64, (Rc<str>, DocResult)>> = RefCell::new(HashMap::new());
}

fn hash(text: &str) -> u64 {
    // SipHash with fixed keys: the same text hashes the same in every instance.
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}

/// Parse and validate `text` against the schema, or take it from the cache.
pub fn document(text: &str) -> DocResult {
    let key = hash(text);
    if let Some(hit) = DOCS.with(|d| d.borrow().get(&key).filter(|(t, _)| &**t == text).map(|(_, r)| r.clone())) {
        return hit;
    }
    let result: DocResult = match ExecutableDocument::parse_and_validate(&schema_for(text).schema, text, "query.graphql") {
        Ok(doc) => Ok(Rc::new(doc)),
        Err(with) => Err(Rc::new(with.errors.iter().map(|d| d.unstable_to_json_compat()).collect())),
    };
    DOCS.with(|d| {
        let mut d = d.borrow_mut();
        if d.len() >= CACHE_CAP {
            d.clear();
        }
        d.insert(key, (Rc::from(text), result.clone()));
    });
    result
}

pub fn is_object(name: &str) -> bool {
    matches!(schema().types.get(name), Some(ExtendedType::Object(_)))
}

pub fn is_composite(name: &str) -> bool {
    matches!(schema().types.get(name), Some(ExtendedType::Object(_) | ExtendedType::Interface(_) | ExtendedType::Union(_)))
}

/// The concrete object types a named output type may be (itself when it is an object).
pub fn possible_types(name: &str) -> Vec<String> {
    match schema().types.get(name) {
        Some(ExtendedType::Object(_)) => vec![name.to_string()],
        Some(ExtendedType::Interface(_)) => {
            let mut v: Vec<String> = prepared().implementers.get(name).map(|i| i.objects.iter().map(|n| n.to_string()).collect()).unwrap_or_default();
            v.sort();
            v
        }
        Some(ExtendedType::Union(u)) => u.members.iter().map(|m| m.name.to_string()).collect(),
        _ => Vec::new(),
    }
}

/// The node type of a `…Connection` type (the type of its `nodes` list).
pub fn connection_node(conn: &str) -> Option<String> {
    match schema().types.get(conn) {
        Some(ExtendedType::Object(o)) if o.fields.contains_key("pageInfo") => o.fields.get("nodes").map(|f| f.ty.inner_named_type().to_string()),
        _ => None,
    }
}

/// Whether a type is a connection (has `nodes` and `pageInfo`), without allocating.
pub fn is_connection(name: &str) -> bool {
    matches!(schema().types.get(name), Some(ExtendedType::Object(o)) if o.fields.contains_key("pageInfo") && o.fields.contains_key("nodes"))
}
