//! Prepared documents, cached by hash, each with the schema it runs against.
//!
//! Vendors' SDLs are large (Linear's 1.2 MB, GitHub's more; several MB once parsed), so no
//! instance parses one whole for ordinary requests: the build turns it into static tables
//! ([`crate::tables`]), and each new document is validated and run against the part of the
//! schema it can reach, built from them (tens of kilobytes). Only introspection (`__schema`,
//! `__type`) parses the whole schema, descriptions included. Snapshots carry only the world;
//! the cache is rebuilt the same way from the same embedded text, so it is deterministic.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::rc::Rc;

use apollo_compiler::collections::HashMap as AHashMap;
use apollo_compiler::schema::Implementers;
use apollo_compiler::validation::Valid;
use apollo_compiler::{ExecutableDocument, Name, Schema};

use crate::cost::OpCost;
use crate::limits::{DOC_CACHE_BYTES, DOC_CACHE_ENTRIES};
use crate::tables::Tables;

pub struct Prepared {
    pub schema: Valid<Schema>,
    pub implementers: AHashMap<Name, Implementers>,
    /// The tables the schema was cut from: what the executor asks about types.
    pub tables: &'static Tables,
}

fn build(text: &str, tables: &'static Tables) -> Prepared {
    // The embedded SDL is the vendor's own and is validated by the twin's tests; at run time
    // it is only parsed.
    let schema = Valid::assume_valid(Schema::parse(text, "schema.graphql").unwrap_or_else(|e| e.partial));
    let implementers = schema.implementers_map();
    Prepared { schema, implementers, tables }
}

impl Tables {
    /// The whole schema, descriptions included: built only for introspection (`__schema`,
    /// `__type`), which codegen tools run and which must show the vendor's documentation.
    pub fn prepared_full(&'static self) -> &'static Prepared {
        self.full.get_or_init(|| build(self.text, self))
    }

    /// Parse and validate `text` against the schema, or take it from the cache.
    pub fn document(&'static self, text: &str) -> DocResult {
        self.document_with(text, false)
    }

    /// As [`Tables::document`], except that same-named fields of different object types may
    /// return different leaf types (`... on Issue { state } ... on PullRequest { state }`,
    /// `IssueState!` and `PullRequestState!`): graphql-ruby, which GitHub runs, lets such a
    /// document through and `gh` sends them; graphql-js and apollo-compiler refuse them. A
    /// twin uses one of the two for all its documents (they share the cache).
    pub fn document_merging_leaf_types(&'static self, text: &str) -> DocResult {
        self.document_with(text, true)
    }

    fn document_with(&'static self, text: &str, merge_leaf_types: bool) -> DocResult {
        let key = hash(self, text);
        if let Some(hit) = DOCS.with(|d| d.borrow().map.get(&key).filter(|(t, _)| &**t == text).map(|(_, r)| r.clone())) {
            return hit;
        }
        let sub = (!introspects(text)).then(|| build(&self.sub_schema(text), self));
        let schema = &sub.as_ref().unwrap_or_else(|| self.prepared_full()).schema;
        let result: DocResult = match ExecutableDocument::parse_and_validate(schema, text, "query.graphql") {
            Ok(doc) => Ok(Rc::new(Doc { tables: self, sub, doc, metas: RefCell::default(), memo: RefCell::default(), costs: RefCell::default() })),
            Err(with) if merge_leaf_types && with.errors.iter().all(|d| d.error.unstable_error_name() == Some("ConflictingFieldType")) => {
                Ok(Rc::new(Doc { tables: self, sub, doc: Valid::assume_valid(with.partial), metas: RefCell::default(), memo: RefCell::default(), costs: RefCell::default() }))
            }
            Err(with) => Err(Rc::new(with.errors.iter().map(|d| d.unstable_to_json_compat()).collect())),
        };
        DOCS.with(|d| {
            let mut d = d.borrow_mut();
            // Bounded in entries and in bytes of text (a prepared document costs a multiple of
            // its text): when either would pass its bound, the cache starts over.
            if d.map.len() >= DOC_CACHE_ENTRIES || d.bytes + text.len() > DOC_CACHE_BYTES {
                d.map.clear();
                d.bytes = 0;
            }
            if let Some((old, _)) = d.map.insert(key, (Rc::from(text), result.clone())) {
                d.bytes -= old.len();
            }
            d.bytes += text.len();
        });
        result
    }
}

/// A validated document and the schema it runs against: the part of the vendor's schema it
/// can reach ([`Tables::sub_schema`]), or the whole schema for introspection.
pub struct Doc {
    tables: &'static Tables,
    sub: Option<Prepared>,
    pub doc: Valid<ExecutableDocument>,
    /// What the executor learns about each field definition it meets (by address in `sub`),
    /// kept with the document so later requests do not look it up again.
    pub metas: RefCell<Vec<(usize, Rc<crate::exec::Meta>)>>,
    /// Objects its requests rendered, for the next ones ([`crate::memo`]).
    pub memo: RefCell<crate::memo::Memo>,
    /// Each operation's depth and complexity, counted the first time it runs ([`crate::cost`]).
    pub costs: RefCell<Vec<Rc<OpCost>>>,
}

impl Doc {
    pub fn prepared(&self) -> &Prepared {
        self.sub.as_ref().unwrap_or_else(|| self.tables.prepared_full())
    }

    /// What `op` (an operation of this document) costs, counted once.
    pub fn cost(&self, op: &apollo_compiler::executable::Operation) -> Rc<OpCost> {
        if let Some(c) = self.costs.borrow().iter().find(|c| c.op == op.name) {
            return c.clone();
        }
        let c = Rc::new(crate::cost::count(&self.doc, op));
        self.costs.borrow_mut().push(c.clone());
        c
    }
}

/// Whether a document introspects the schema (beyond `__typename`).
pub fn introspects(text: &str) -> bool {
    text.contains("__schema") || text.match_indices("__type").any(|(i, _)| !text[i..].starts_with("__typename"))
}

/// A prepared document, or the validation errors for it.
pub type DocResult = Result<Rc<Doc>, Rc<Vec<apollo_compiler::response::GraphQLError>>>;

/// Prepared documents by the hash of their schema and text, and the bytes of text they hold.
#[derive(Default)]
struct Docs {
    map: HashMap<u64, (Rc<str>, DocResult)>,
    bytes: usize,
}

thread_local! {
    static DOCS: RefCell<Docs> = RefCell::new(Docs::default());
}

fn hash(tables: &'static Tables, text: &str) -> u64 {
    // SipHash with fixed keys: the same text hashes the same in every instance. The schema's
    // address tells two schemas' documents apart where one process serves both (tests).
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (tables as *const Tables as usize).hash(&mut h);
    text.hash(&mut h);
    h.finish()
}
