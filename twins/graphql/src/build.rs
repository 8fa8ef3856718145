//! A vendor's schema, compiled by a twin's build script into static tables: every type with
//! its kind and SDL, every field of every object and interface with its type, arguments and
//! SDL, and which types implement which interfaces. The twin reads them in place (they live
//! in the component's read-only data, shared by every instance), and builds from them, per
//! document, the small schema that validates and runs it, so no instance holds the vendor's
//! whole parsed schema.
//!
//! In a twin's `build.rs`:
//! ```ignore
//! let out = std::path::Path::new(&std::env::var("OUT_DIR").unwrap()).join("schema_tables.rs");
//! pome_graphql::build::write("schema/schema.graphql", &out);
//! ```
//! and in the crate: `include!(concat!(env!("OUT_DIR"), "/schema_tables.rs"));`, which defines
//! `pub static TABLES: pome_graphql::Tables` (and the arrays behind it).

use std::collections::BTreeSet;
use std::fmt::Write;

use apollo_compiler::Schema;
use apollo_compiler::ast::Definition;
use apollo_compiler::schema::ExtendedType;

use crate::sdl::{self, strip_descriptions};

fn lit(s: &str) -> String {
    format!("{s:?}")
}

fn list<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    let mut out = String::from("&[");
    for (i, s) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&lit(s));
    }
    out.push(']');
    out
}

/// Compile the SDL at `schema_path` (relative to the crate, as a build script sees it) into
/// tables at `dest`, and tell cargo to rebuild when the SDL changes.
pub fn write(schema_path: &str, dest: &std::path::Path) {
    println!("cargo:rerun-if-changed={schema_path}");
    println!("cargo:rerun-if-changed=build.rs");
    let text = std::fs::read_to_string(schema_path).unwrap_or_else(|e| panic!("reading the schema {schema_path}: {e}"));
    let abs = std::fs::canonicalize(schema_path).expect("the schema's path");
    std::fs::write(dest, tables(&text, abs.to_str().expect("a UTF-8 path"))).unwrap_or_else(|e| panic!("writing {}: {e}", dest.display()));
}

/// The Rust source of the tables of SDL `text`; `include_path` is where the crate's
/// `include_str!` finds the SDL itself (for introspection).
pub fn tables(text: &str, include_path: &str) -> String {
    let lean = strip_descriptions(&text);
    let schema = Schema::parse(&lean, "schema.graphql").unwrap_or_else(|e| e.partial);
    let doc = apollo_compiler::ast::Document::parse(&lean, "schema.graphql").unwrap_or_else(|e| e.partial);
    let implementers = schema.implementers_map();

    let mut out = String::new();
    let mut directives = String::new();
    for def in &doc.definitions {
        if let Definition::DirectiveDefinition(d) = def {
            let mut d = (**d).clone();
            d.description = None;
            writeln!(directives, "{d}").unwrap();
        }
    }
    writeln!(out, "pub static DIRECTIVES: &str = {};", lit(&directives)).unwrap();
    // The root operation types, as the schema names them (by default Query, Mutation and
    // Subscription, those of them it has).
    let mut roots: Vec<(&str, String)> = Vec::new();
    for (kind, root) in [("query", &schema.schema_definition.query), ("mutation", &schema.schema_definition.mutation), ("subscription", &schema.schema_definition.subscription)] {
        if let Some(r) = root {
            roots.push((kind, r.name.to_string()));
        }
    }
    let schema_def = format!("schema {{ {} }}", roots.iter().map(|(k, n)| format!("{k}: {n}")).collect::<Vec<_>>().join(" "));

    let mut names: Vec<&str> = schema.types.iter().filter(|(_, t)| !t.is_built_in()).map(|(n, _)| n.as_str()).collect();
    names.sort();
    let mut fields_out = String::new();
    // Names live in two contiguous blobs, so a binary search reads a few pages, not the
    // SDL strings that would otherwise sit between them.
    let mut type_names = String::new();
    let mut field_names = String::new();
    let mut types_out = String::new();
    let mut nfields = 0usize;
    for name in &names {
        let ty = &schema.types[*name];
        // Each row's parts, set by every arm below.
        let kind: &str;
        let head: String;
        let (start, len): (usize, usize);
        let (related, refs): (BTreeSet<&str>, BTreeSet<&str>);
        let possible: Vec<&str>;
        let enum_first: &str;
        let start_at = nfields;
        let mut field_rows = |fields: &apollo_compiler::collections::IndexMap<apollo_compiler::Name, apollo_compiler::schema::Component<apollo_compiler::schema::FieldDefinition>>| {
            let mut sorted: Vec<_> = fields.values().collect();
            sorted.sort_by(|a, b| a.name.cmp(&b.name));
            for f in sorted {
                let mut def = (***f).clone();
                def.description = None;
                let args: Vec<String> = f.arguments.iter().map(|a| format!("({},{},{})", lit(a.name.as_str()), lit(a.ty.inner_named_type().as_str()), a.ty.is_non_null())).collect();
                let at = (field_names.len(), f.name.len());
                field_names.push_str(f.name.as_str());
                writeln!(
                    fields_out,
                    "__F{{name:FIELD_NAMES.split_at({}).1.split_at({}).0,ty:{},list:{},non_null:{},sdl:{},args:&[{}]}},",
                    at.0,
                    at.1,
                    lit(f.ty.inner_named_type().as_str()),
                    f.ty.is_list(),
                    f.ty.is_non_null(),
                    lit(&def.to_string()),
                    args.join(",")
                )
                .unwrap();
                nfields += 1;
            }
            fields.len()
        };
        match ty {
            ExtendedType::Object(o) => {
                kind = "Object";
                let ifaces: Vec<&str> = o.implements_interfaces.iter().map(|i| i.name.as_str()).collect();
                head = format!("type {name}{}{}", if ifaces.is_empty() { String::new() } else { format!(" implements {}", ifaces.join(" & ")) }, o.directives);
                len = field_rows(&o.fields);
                start = start_at;
                related = ifaces.iter().copied().collect();
                possible = vec![name];
                refs = BTreeSet::new();
                enum_first = "";
            }
            ExtendedType::Interface(i) => {
                kind = "Interface";
                let ifaces: Vec<&str> = i.implements_interfaces.iter().map(|i| i.name.as_str()).collect();
                head = format!("interface {name}{}{}", if ifaces.is_empty() { String::new() } else { format!(" implements {}", ifaces.join(" & ")) }, i.directives);
                len = field_rows(&i.fields);
                start = start_at;
                let imp = implementers.get(*name);
                let mut objects: Vec<&str> = imp.map(|i| i.objects.iter().map(|n| n.as_str()).collect()).unwrap_or_default();
                objects.sort();
                related = ifaces.iter().copied().collect();
                possible = objects;
                refs = BTreeSet::new();
                enum_first = "";
            }
            ExtendedType::Union(u) => {
                kind = "Union";
                let mut u2 = (**u).clone();
                u2.description = None;
                head = u2.to_string();
                start = start_at;
                len = 0;
                possible = u.members.iter().map(|m| m.name.as_str()).collect();
                related = possible.iter().copied().collect();
                refs = BTreeSet::new();
                enum_first = "";
            }
            ExtendedType::Enum(e) => {
                kind = "Enum";
                let mut e2 = (**e).clone();
                e2.description = None;
                head = e2.to_string();
                start = start_at;
                len = 0;
                possible = Vec::new();
                related = BTreeSet::new();
                refs = BTreeSet::new();
                enum_first = e.values.keys().next().map(|k| k.as_str()).unwrap_or("");
            }
            ExtendedType::InputObject(i) => {
                kind = "Input";
                let mut i2 = (**i).clone();
                i2.description = None;
                head = i2.to_string();
                start = start_at;
                len = 0;
                possible = Vec::new();
                related = BTreeSet::new();
                refs = i.fields.values().map(|f| f.ty.inner_named_type().as_str()).filter(|t| schema.types.get(*t).is_some_and(|t| !t.is_built_in())).collect();
                enum_first = "";
            }
            ExtendedType::Scalar(s) => {
                kind = "Scalar";
                let mut s2 = (**s).clone();
                s2.description = None;
                head = s2.to_string();
                start = start_at;
                len = 0;
                possible = Vec::new();
                related = BTreeSet::new();
                refs = BTreeSet::new();
                enum_first = "";
            }
        }
        writeln!(
            types_out,
            "__T{{name:TYPE_NAMES.split_at({}).1.split_at({}).0,kind:__K::{kind},head:{},fields:({start},{len}),related:{},possible:{},refs:{},enum_first:{}}},",
            type_names.len(),
            name.len(),
            lit(&head),
            list(related.iter().copied().filter(|t| *t != *name)),
            list(possible.iter().copied()),
            list(refs.iter().copied()),
            lit(enum_first)
        )
        .unwrap();
        type_names.push_str(name);
    }
    // Types by the hash of their name, in an open-addressed table (each slot the type's index
    // plus one; zero is empty) a quarter full or less, so a lookup nearly always probes once.
    let size = (names.len() * 4).next_power_of_two();
    let mut slots = vec![0u16; size];
    for (i, n) in names.iter().enumerate() {
        let mut at = sdl::name_hash(n) as usize & (size - 1);
        while slots[at] != 0 {
            at = (at + 1) & (size - 1);
        }
        slots[at] = u16::try_from(i + 1).expect("fewer than 65,535 types");
    }
    let rows: String = slots.iter().map(|s| format!("{s},")).collect();
    writeln!(out, "pub static TYPE_SLOTS: &[u16] = &[{rows}];").unwrap();
    writeln!(out, "pub static TYPE_NAMES: &str = {};", lit(&type_names)).unwrap();
    writeln!(out, "pub static FIELD_NAMES: &str = {};", lit(&field_names)).unwrap();
    // Aliased, so the including module may import the row types under their own names.
    writeln!(out, "use ::pome_graphql::tables::{{FieldRow as __F, Kind as __K, TypeRow as __T}};").unwrap();
    writeln!(out, "pub static TYPES: &[__T] = &[\n{types_out}];").unwrap();
    writeln!(out, "pub static FIELDS: &[__F] = &[\n{fields_out}];").unwrap();
    writeln!(
        out,
        "pub static TABLES: ::pome_graphql::Tables = ::pome_graphql::Tables {{ slots: TYPE_SLOTS, types: TYPES, fields: FIELDS, directives: DIRECTIVES, schema_def: {}, roots: {}, text: include_str!({}), full: ::std::sync::OnceLock::new() }};",
        lit(&schema_def),
        list(roots.iter().map(|(_, n)| n.as_str())),
        lit(include_path)
    )
    .unwrap();
    out
}
