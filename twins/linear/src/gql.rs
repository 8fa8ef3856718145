//! Linear's schema and its prepared documents, on the shared engine ([`pome_graphql::doc`]):
//! each document is validated and run against the part of Linear's 1.2 MB schema it can
//! reach; only introspection parses the whole schema, descriptions included.

use crate::tables::TABLES;

pub use pome_graphql::doc::{Doc, DocResult, Prepared, introspects};

/// Linear's SDL (`schema.graphql` of @linear/sdk), descriptions included.
pub static SCHEMA_TEXT: &str = TABLES.text;

/// The whole schema, built only for introspection.
pub fn prepared_full() -> &'static Prepared {
    TABLES.prepared_full()
}

/// Parse and validate `text` against Linear's schema, or take it from the cache.
pub fn document(text: &str) -> DocResult {
    TABLES.document(text)
}

pub fn is_object(name: &str) -> bool {
    TABLES.is_object(name)
}

pub fn is_composite(name: &str) -> bool {
    TABLES.is_composite(name)
}

/// The concrete object types a named output type may be.
pub fn possible_types(name: &str) -> Vec<String> {
    TABLES.possible_types(name)
}

/// The node type of a `…Connection` type (the type of its `nodes` list).
pub fn connection_node(conn: &str) -> Option<String> {
    TABLES.connection_node(conn)
}

/// Whether a type is a connection (has `nodes` and `pageInfo`), without allocating.
pub fn is_connection(name: &str) -> bool {
    TABLES.is_connection(name)
}

/// Whether object type `ty` has field `f`.
pub fn has_field(ty: &str, f: &str) -> bool {
    TABLES.has_field(ty, f)
}
