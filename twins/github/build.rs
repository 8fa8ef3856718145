//! GitHub's public GraphQL schema, compiled once at build time into static tables
//! (`schema_tables.rs` in `OUT_DIR`) by the shared GraphQL engine ([`pome_graphql::build`]);
//! [`crate::graphql`] includes them.

fn main() {
    let out = std::path::Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("schema_tables.rs");
    pome_graphql::build::write("schema/schema.graphql", &out);
}
