//! Linear's schema as static tables, generated at build time by `build.rs` and read in place:
//! they are part of the component's data, shared by every instance, and a lookup copies
//! nothing. [`sub_schema`] writes, for one document, the SDL of just the types and fields the
//! document can reach, which apollo-compiler then parses to validate and run it.

use std::collections::BTreeSet;

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
    /// Where its name is in [`TYPE_NAMES`].
    pub name_at: (usize, usize),
    pub kind: Kind,
    /// Objects and interfaces: `type X implements Y`; every other kind: its whole definition.
    pub head: &'static str,
    /// Objects and interfaces: the range of their fields in [`FIELDS`], sorted by name.
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
    /// Where its name is in [`FIELD_NAMES`].
    pub name_at: (usize, usize),
    /// The named type, without list or non-null wrappers.
    pub ty: &'static str,
    pub list: bool,
    pub non_null: bool,
    /// `name(args): Type @directives`.
    pub sdl: &'static str,
    /// Arguments: name, named type, and whether the type is non-null.
    pub args: &'static [(&'static str, &'static str, bool)],
}

include!(concat!(env!("OUT_DIR"), "/schema_tables.rs"));

impl TypeRow {
    pub fn name(&self) -> &'static str {
        &TYPE_NAMES[self.name_at.0..self.name_at.1]
    }
}

impl FieldRow {
    pub fn name(&self) -> &'static str {
        &FIELD_NAMES[self.name_at.0..self.name_at.1]
    }
}

/// A type by name: its name's hash picks a slot of [`TYPE_SLOTS`], and one name comparison
/// (rarely two) confirms it. The executor asks this thousands of times per request.
pub fn ty(name: &str) -> Option<&'static TypeRow> {
    let mask = TYPE_SLOTS.len() - 1;
    let mut at = crate::sdl::name_hash(name) as usize & mask;
    loop {
        let t = &TYPES[usize::from(TYPE_SLOTS[at]).checked_sub(1)?];
        if t.name() == name {
            return Some(t);
        }
        at = (at + 1) & mask;
    }
}

pub fn fields(t: &TypeRow) -> &'static [FieldRow] {
    &FIELDS[t.fields.0..t.fields.0 + t.fields.1]
}

pub fn field(ty_name: &str, name: &str) -> Option<&'static FieldRow> {
    let fs = fields(ty(ty_name)?);
    fs.binary_search_by(|f| f.name().cmp(name)).ok().map(|i| &fs[i])
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

/// The SDL of the part of Linear's schema a document can reach: the root types and every type
/// the document names, closed over the types of the fields it names (and of the arguments it names),
/// interfaces with their implementers, unions with their members and input objects with all
/// their fields (variables may set any of them). Objects and interfaces keep only the fields
/// the document names, so validating it against this schema gives exactly what validating it
/// against the whole schema gives.
pub fn sub_schema(doc: &str) -> String {
    let names = names(doc);
    // A type is either declared (an interface an included object implements: its name and the
    // fields the document names) or reached (a value of it may be returned or given: an
    // interface then brings every object implementing it, a union its members).
    let mut declared: BTreeSet<&'static str> = BTreeSet::new();
    let mut reached: BTreeSet<&'static str> = BTreeSet::new();
    let mut queue: Vec<(&'static str, bool)> = vec![("Query", true), ("Mutation", true), ("Subscription", true)];
    queue.extend(names.iter().filter_map(|n| ty(n).map(|t| (t.name(), true))));
    while let Some((name, reach)) = queue.pop() {
        let fresh = if reach { reached.insert(name) } else { !reached.contains(name) && declared.insert(name) };
        if !fresh {
            continue;
        }
        declared.insert(name);
        let Some(t) = ty(name) else { continue };
        match t.kind {
            Kind::Object | Kind::Interface => {
                queue.extend(t.related.iter().map(|i| (*i, false)));
                if reach && t.kind == Kind::Interface {
                    queue.extend(t.possible.iter().map(|o| (*o, true)));
                }
                for f in fields(t).iter().filter(|f| names.contains(f.name())) {
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
    sdl.push_str("schema { query: Query mutation: Mutation subscription: Subscription }\n");
    sdl.push_str(DIRECTIVES);
    for t in declared.iter().filter_map(|n| ty(n)) {
        sdl.push_str(t.head);
        if matches!(t.kind, Kind::Object | Kind::Interface) {
            let mut open = false;
            for f in fields(t).iter().filter(|f| names.contains(f.name())) {
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
