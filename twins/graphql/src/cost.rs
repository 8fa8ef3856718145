//! What a document's operation costs before it runs: its depth and its complexity points
//! (Linear's point system; GitHub's node count is a sum of the same kind). Each fragment's share is counted once and reused wherever it is spread, so a
//! document whose fragments spread each other many times (40 fragments, each spreading the
//! next twice, is 2^40 paths) is counted in time linear in its text. The executor and the
//! validator already merge repeated spreads; this makes the limits' arithmetic do the same.
//!
//! The counts are kept with the prepared document ([`crate::doc::Doc`]): a document's depth
//! never changes, and its complexity only when a page size comes from a variable, so the
//! hot path reads two numbers instead of walking the document.

use std::collections::HashMap;

use apollo_compiler::executable::{Selection, SelectionSet};
use apollo_compiler::{ExecutableDocument, Name};
use serde_json::{Map, Value};

use crate::limits::MAX_NESTING;

/// What one operation of a prepared document costs.
#[derive(Debug, Clone, PartialEq)]
pub struct OpCost {
    /// The operation's name (`None`: the anonymous one).
    pub op: Option<Name>,
    /// Levels of nested fields (a twin's bound: Linear's is 24); `usize::MAX`
    /// when the selections nest past [`MAX_NESTING`] sets, fragments included.
    pub depth: usize,
    /// Complexity points when no page size comes from a variable, else `None` (counted per
    /// request with its variables).
    pub complexity: Option<f64>,
}

/// One walk over a document, remembering each fragment's depth and points.
struct Counter<'a> {
    doc: &'a ExecutableDocument,
    /// The request's variables; `None` while counting what holds for every request.
    vars: Option<&'a Map<String, Value>>,
    depths: HashMap<&'a Name, usize>,
    points: HashMap<&'a Name, f64>,
    /// Each fragment's nodes per node it is spread on ([`nodes`] scales them).
    units: HashMap<&'a Name, f64>,
    /// Selection sets open around the current one; the walk recurses once per set.
    nesting: usize,
    /// Set when a page size came from a variable (and `vars` was `None`).
    read_vars: bool,
}

impl<'a> Counter<'a> {
    fn new(doc: &'a ExecutableDocument, vars: Option<&'a Map<String, Value>>) -> Self {
        Counter { doc, vars, depths: HashMap::new(), points: HashMap::new(), units: HashMap::new(), nesting: 0, read_vars: false }
    }

    /// Levels of fields with selections under `set`.
    fn depth(&mut self, set: &'a SelectionSet) -> usize {
        if self.nesting >= MAX_NESTING {
            return usize::MAX;
        }
        self.nesting += 1;
        let mut deepest = 0usize;
        for s in &set.selections {
            let d = match s {
                Selection::Field(f) if f.selection_set.selections.is_empty() => 0,
                Selection::Field(f) => self.depth(&f.selection_set).saturating_add(1),
                Selection::InlineFragment(i) => self.depth(&i.selection_set),
                Selection::FragmentSpread(sp) => self.fragment_depth(&sp.fragment_name),
            };
            deepest = deepest.max(d);
        }
        self.nesting -= 1;
        deepest
    }

    fn fragment_depth(&mut self, name: &'a Name) -> usize {
        if let Some(d) = self.depths.get(name) {
            return *d;
        }
        let Some(f) = self.doc.fragments.get(name) else { return 0 };
        // Validation refuses cycles; were one here, its second visit would count nothing.
        self.depths.insert(name, 0);
        let d = self.depth(&f.selection_set);
        self.depths.insert(name, d);
        d
    }

    /// Linear's documented point system: 0.1 per scalar field, 1 per object, and a
    /// connection's selection counted once per item it may return (`first`/`last`, 50 by
    /// default).
    fn points(&mut self, set: &'a SelectionSet) -> f64 {
        if self.nesting >= MAX_NESTING {
            return f64::INFINITY;
        }
        self.nesting += 1;
        let mut sum = 0.0;
        for s in &set.selections {
            sum += match s {
                Selection::Field(f) if f.selection_set.selections.is_empty() => 0.1,
                Selection::Field(f) => {
                    let inner = 1.0 + self.points(&f.selection_set);
                    if f.selection_set.ty.as_str().ends_with("Connection") { inner * self.page_size(f).max(1.0) } else { inner }
                }
                Selection::InlineFragment(i) => self.points(&i.selection_set),
                Selection::FragmentSpread(sp) => self.fragment_points(&sp.fragment_name),
            };
        }
        self.nesting -= 1;
        sum
    }

    fn fragment_points(&mut self, name: &'a Name) -> f64 {
        if let Some(p) = self.points.get(name) {
            return *p;
        }
        let Some(f) = self.doc.fragments.get(name) else { return 0.0 };
        self.points.insert(name, 0.0);
        let p = self.points(&f.selection_set);
        self.points.insert(name, p);
        p
    }

    /// Nodes under `set` for one node it is selected on: each connection asks for its page
    /// size of nodes, and what it selects once per node.
    fn units(&mut self, set: &'a SelectionSet) -> f64 {
        if self.nesting >= MAX_NESTING {
            return f64::INFINITY;
        }
        self.nesting += 1;
        let mut sum = 0.0;
        for s in &set.selections {
            sum += match s {
                Selection::Field(f) if f.selection_set.selections.is_empty() => 0.0,
                Selection::Field(f) if f.selection_set.ty.as_str().ends_with("Connection") => {
                    let n = self.page_size(f).max(1.0);
                    n + n * self.units(&f.selection_set)
                }
                Selection::Field(f) => self.units(&f.selection_set),
                Selection::InlineFragment(i) => self.units(&i.selection_set),
                Selection::FragmentSpread(sp) => {
                    if let Some(u) = self.units.get(&sp.fragment_name) {
                        *u
                    } else if let Some(f) = self.doc.fragments.get(&sp.fragment_name) {
                        self.units.insert(&sp.fragment_name, 0.0);
                        let u = self.units(&f.selection_set);
                        self.units.insert(&sp.fragment_name, u);
                        u
                    } else {
                        0.0
                    }
                }
            };
        }
        self.nesting -= 1;
        sum
    }

    /// `first` or `last` of a connection field, literal or from a variable; 50 when neither.
    fn page_size(&mut self, f: &apollo_compiler::executable::Field) -> f64 {
        for a in ["first", "last"] {
            let Some(arg) = f.arguments.iter().find(|x| x.name == a) else { continue };
            match arg.value.as_ref() {
                apollo_compiler::ast::Value::Int(i) => {
                    if let Ok(n) = i.as_str().parse::<f64>() {
                        return n;
                    }
                }
                apollo_compiler::ast::Value::Variable(v) => match self.vars {
                    Some(vars) => {
                        if let Some(n) = vars.get(v.as_str()).and_then(Value::as_f64) {
                            return n;
                        }
                    }
                    None => self.read_vars = true,
                },
                _ => {}
            }
        }
        50.0
    }
}

/// The depth of an operation, and its points when they hold for every request.
pub fn count(doc: &ExecutableDocument, op: &apollo_compiler::executable::Operation) -> OpCost {
    let mut c = Counter::new(doc, None);
    let depth = c.depth(&op.selection_set);
    let points = c.points(&op.selection_set);
    OpCost { op: op.name.clone(), depth, complexity: (!c.read_vars).then_some(points) }
}

/// The points of `set` with a request's variables.
pub fn complexity(set: &SelectionSet, doc: &ExecutableDocument, vars: &Map<String, Value>) -> f64 {
    Counter::new(doc, Some(vars)).points(set)
}

/// GitHub's node count of `set` with a request's variables: each connection's page size
/// (`first`/`last`; 50 when neither, which GitHub then refuses) times the page sizes of the
/// connections around it, summed. Each fragment is counted once and scaled where spread.
pub fn nodes(set: &SelectionSet, doc: &ExecutableDocument, vars: &Map<String, Value>) -> f64 {
    Counter::new(doc, Some(vars)).units(set)
}

/// The depth of `set` (levels of fields with selections).
pub fn depth(set: &SelectionSet, doc: &ExecutableDocument) -> usize {
    Counter::new(doc, None).depth(set)
}
