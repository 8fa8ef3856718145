//! A vendor's schema as static tables, generated at build time ([`crate::build::tables`]) and
//! read in place: they are part of the component's data, shared by every instance, and a
//! lookup copies nothing. [`Tables::sub_schema`] writes, for one document, the SDL of just the
//! types and fields the document can reach, which apollo-compiler then parses to validate and
//! run it.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use crate::doc::Prepared;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Object,
    Interface,
    Union,
    Enum,
    Input,
    Scalar,
}

pub struct TypeRow {
    /// Its name: a slice of one blob of every type name, so a lookup's comparisons read a few
    /// pages rather than the SDL strings that would otherwise sit between the names.
    pub name: &'static str,
    pub kind: Kind,
    /// Objects and interfaces: `type X implements Y`; every other kind: its whole definition.
    pub head: &'static str,
    /// Objects and interfaces: the range of their fields in [`Tables::fields`], sorted by name.
    pub fields: (usize, usize),
    /// Objects and interfaces: the interfaces they implement; unions: their members.
    pub related: &'static [&'static str],
    /// The concrete object types a value of this type may be.
    pub possible: &'static [&'static str],
    /// Input objects: the types of their fields.
    pub refs: &'static [&'static str],
    /// Enums: the first value.
    pub enum_first: &'static str,
}

pub struct FieldRow {
    /// Its name, a slice of one blob of every field name (as [`TypeRow::name`]).
    pub name: &'static str,
    /// The named type, without list or non-null wrappers.
    pub ty: &'static str,
    pub list: bool,
    pub non_null: bool,
    /// `name(args): Type @directives`.
    pub sdl: &'static str,
    /// Arguments: name, named type, and whether the type is non-null.
    pub args: &'static [(&'static str, &'static str, bool)],
}

/// One schema's tables, as the build script writes them (`static TABLES: Tables`).
pub struct Tables {
    /// Types by the hash of their name ([`crate::sdl::name_hash`]), open-addressed: each slot
    /// is a type's index plus one, zero is empty; a quarter full or less.
    pub slots: &'static [u16],
    /// Every type but the built-in ones, sorted by name.
    pub types: &'static [TypeRow],
    /// Every field of every object and interface, each type's run sorted by name.
    pub fields: &'static [FieldRow],
    /// The schema's directive definitions, as SDL.
    pub directives: &'static str,
    /// The root operation types (`schema { query: Query mutation: Mutation }`).
    pub schema_def: &'static str,
    /// The root type names the schema has.
    pub roots: &'static [&'static str],
    /// The whole SDL, descriptions included: parsed only for introspection.
    pub text: &'static str,
    /// The whole schema, parsed on first use ([`Tables::prepared_full`]).
    pub full: OnceLock<Prepared>,
}

impl TypeRow {
    pub fn name(&self) -> &'static str {
        self.name
    }
}

impl FieldRow {
    pub fn name(&self) -> &'static str {
        self.name
    }
}

impl Tables {
    /// A type by name: its name's hash picks a slot of [`Tables::slots`], and one name
    /// comparison (rarely two) confirms it. The executor asks this thousands of times per
    /// request.
    pub fn ty(&self, name: &str) -> Option<&'static TypeRow> {
        let mask = self.slots.len() - 1;
        let mut at = crate::sdl::name_hash(name) as usize & mask;
        loop {
            let t = &self.types[usize::from(self.slots[at]).checked_sub(1)?];
            if t.name == name {
                return Some(t);
            }
            at = (at + 1) & mask;
        }
    }

    /// The fields of an object or interface, sorted by name.
    pub fn fields_of(&self, t: &TypeRow) -> &'static [FieldRow] {
        &self.fields[t.fields.0..t.fields.0 + t.fields.1]
    }

    pub fn field(&self, ty_name: &str, name: &str) -> Option<&'static FieldRow> {
        let fs = self.fields_of(self.ty(ty_name)?);
        fs.binary_search_by(|f| f.name.cmp(name)).ok().map(|i| &fs[i])
    }

    pub fn is_object(&self, name: &str) -> bool {
        self.ty(name).is_some_and(|t| t.kind == Kind::Object)
    }

    pub fn is_composite(&self, name: &str) -> bool {
        self.ty(name).is_some_and(|t| matches!(t.kind, Kind::Object | Kind::Interface | Kind::Union))
    }

    /// The concrete object types a named output type may be (itself when it is an object;
    /// an interface's implementers sorted, a union's members in order).
    pub fn possible_types(&self, name: &str) -> Vec<String> {
        self.ty(name).map(|t| t.possible.iter().map(|s| s.to_string()).collect()).unwrap_or_default()
    }

    /// The node type of a `…Connection` type (the type of its `nodes` list).
    pub fn connection_node(&self, conn: &str) -> Option<String> {
        self.field(conn, "pageInfo")?;
        self.field(conn, "nodes").map(|f| f.ty.to_string())
    }

    /// Whether a type is a connection (has `nodes` and `pageInfo`), without allocating.
    pub fn is_connection(&self, name: &str) -> bool {
        self.field(name, "pageInfo").is_some() && self.field(name, "nodes").is_some()
    }

    /// Whether object type `ty` has field `f`.
    pub fn has_field(&self, ty: &str, f: &str) -> bool {
        self.is_object(ty) && self.field(ty, f).is_some()
    }
}
/// The names a document mentions: every GraphQL name outside strings and comments. Any
/// field, type or argument the document can refer to is among them.
fn names(doc: &str) -> BTreeSet<&str> {
    let b = doc.as_bytes();
    let mut out = BTreeSet::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'#' {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if c == b'"' {
            // Strings (block strings included) are skipped; a name inside one is harmless
            // anyway, it only widens the schema.
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
        } else if c == b'_' || c.is_ascii_alphabetic() {
            let start = i;
            while i < b.len() && (b[i] == b'_' || b[i].is_ascii_alphanumeric()) {
                i += 1;
            }
            out.insert(&doc[start..i]);
        } else {
            i += 1;
        }
    }
    out
}

impl Tables {
/// The SDL of the part of the schema a document can reach: the root types and every type
/// the document names, closed over the types of the fields it names (and of the arguments it names),
/// interfaces with their implementers, unions with their members and input objects with all
/// their fields (variables may set any of them). Objects and interfaces keep only the fields
/// the document names, so validating it against this schema gives exactly what validating it
/// against the whole schema gives.
    pub fn sub_schema(&self, doc: &str) -> String {
        let names = names(doc);
    // A type is either declared (an interface an included object implements: its name and the
    // fields the document names) or reached (a value of it may be returned or given: an
    // interface then brings every object implementing it, a union its members).
    let mut declared: BTreeSet<&'static str> = BTreeSet::new();
    let mut reached: BTreeSet<&'static str> = BTreeSet::new();
    let mut queue: Vec<(&'static str, bool)> = self.roots.iter().map(|r| (*r, true)).collect();
    queue.extend(names.iter().filter_map(|n| self.ty(n).map(|t| (t.name(), true))));
    while let Some((name, reach)) = queue.pop() {
        let fresh = if reach { reached.insert(name) } else { !reached.contains(name) && declared.insert(name) };
        if !fresh {
            continue;
        }
        declared.insert(name);
        let Some(t) = self.ty(name) else { continue };
        match t.kind {
            Kind::Object | Kind::Interface => {
                queue.extend(t.related.iter().map(|i| (*i, false)));
                if reach && t.kind == Kind::Interface {
                    queue.extend(t.possible.iter().map(|o| (*o, true)));
                }
                for f in self.fields_of(t).iter().filter(|f| names.contains(f.name())) {
                    queue.push((f.ty, true));
                    // An argument the document never names needs no type: nothing coerces it.
                    queue.extend(f.args.iter().filter(|(a, _, _)| names.contains(a)).map(|(_, t, _)| (*t, true)));
                }
            }
            Kind::Union => queue.extend(t.related.iter().map(|m| (*m, true))),
            Kind::Input => queue.extend(t.refs.iter().map(|r| (*r, true))),
            Kind::Enum | Kind::Scalar => {}
        }
    }
    let mut sdl = String::with_capacity(16 * 1024);
    sdl.push_str(self.schema_def);
    sdl.push('\n');
    sdl.push_str(self.directives);
    for t in declared.iter().filter_map(|n| self.ty(n)) {
        sdl.push_str(t.head);
        if matches!(t.kind, Kind::Object | Kind::Interface) {
            let mut open = false;
            for f in self.fields_of(t).iter().filter(|f| names.contains(f.name())) {
                sdl.push_str(if open { "\n  " } else { " {\n  " });
                open = true;
                sdl.push_str(f.sdl);
            }
            if open {
                sdl.push_str("\n}");
            }
        }
        sdl.push('\n');
    }
    sdl
}
}
