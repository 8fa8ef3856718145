//! Linear's schema as static tables, generated at build time by `build.rs` with the shared
//! engine ([`pome_graphql::tables`]) and read in place: they are part of the component's data,
//! shared by every instance, and a lookup copies nothing.

pub use pome_graphql::tables::{FieldRow, Kind, TypeRow};

include!(concat!(env!("OUT_DIR"), "/schema_tables.rs"));

/// A type of Linear's schema by name.
pub fn ty(name: &str) -> Option<&'static TypeRow> {
    TABLES.ty(name)
}

pub fn fields(t: &TypeRow) -> &'static [FieldRow] {
    TABLES.fields_of(t)
}

pub fn field(ty_name: &str, name: &str) -> Option<&'static FieldRow> {
    TABLES.field(ty_name, name)
}

/// The SDL of the part of Linear's schema a document can reach ([`pome_graphql::Tables::sub_schema`]).
pub fn sub_schema(doc: &str) -> String {
    TABLES.sub_schema(doc)
}
