//! GitHub's static limits on a query, checked before it runs: every connection whose nodes or
//! edges are selected needs `first` or `last` between 1 and 100 (`MISSING_PAGINATION_BOUNDARIES`,
//! `EXCESSIVE_PAGINATION`), `nodes(ids:)` takes at most 100 ids (`ARGUMENT_LIMIT`), and the
//! nodes all connections could return together may not pass 500,000
//! (`MAX_NODE_LIMIT_EXCEEDED`). The same walk counts the query's cost as GitHub documents it:
//! one request per connection page (a nested connection once per parent node), divided by 100
//! and rounded up, at least 1.

use apollo_compiler::ExecutableDocument;
use apollo_compiler::ast::Value as AstValue;
use apollo_compiler::executable::{Field, Selection, SelectionSet};
use pome_graphql::apollo_compiler;
use serde_json::{Map, Value, json};

/// GitHub's ceiling on the nodes one query may ask for.
pub const MAX_NODES: f64 = 500_000.0;
/// The largest page a connection returns (`first`/`last`), and the most ids `nodes` takes.
pub const MAX_PAGE: i64 = 100;
/// Selections the walk visits at most: fragments spread inside fragments multiply paths, and
/// a bound keeps a hostile document from spending the request's time here (the engine's own
/// cost walk already bounds what may run).
const MAX_VISITS: usize = 100_000;

pub struct Checked {
    /// Pagination and argument errors, each with `type`, `path`, `locations` and `message`.
    pub errors: Vec<Value>,
    /// The node-limit error, when the query could return more than [`MAX_NODES`].
    pub node_limit: Option<Value>,
    /// The query's cost in points (`rateLimit { cost }`).
    pub cost: u64,
}

struct Walk<'a> {
    doc: &'a ExecutableDocument,
    vars: &'a Map<String, Value>,
    errors: Vec<Value>,
    nodes: f64,
    requests: f64,
    over: Option<String>,
    visits: usize,
    path: Vec<String>,
}

pub fn check(doc: &ExecutableDocument, set: &SelectionSet, vars: &Map<String, Value>) -> Checked {
    let mut w = Walk { doc, vars, errors: Vec::new(), nodes: 0.0, requests: 1.0, over: None, visits: 0, path: Vec::new() };
    w.set(set, 1.0);
    let node_limit = w.over.as_ref().map(|conn| {
        json!({"type": "MAX_NODE_LIMIT_EXCEEDED", "message": format!("By the time this query traverses to the {conn} connection, it is requesting up to {} possible nodes which exceeds the maximum limit of 500,000.", thousands(w.nodes as u64))})
    });
    let cost = ((w.requests - 1.0).max(0.0) / 100.0).ceil().max(1.0) as u64;
    Checked { errors: w.errors, node_limit, cost }
}

/// `1000000` → `1,000,000`, as GitHub writes counts in its messages.
fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

impl Walk<'_> {
    fn set(&mut self, set: &SelectionSet, parents: f64) {
        for s in &set.selections {
            self.visits += 1;
            if self.visits > MAX_VISITS {
                return;
            }
            match s {
                Selection::Field(f) => self.field(f, parents),
                Selection::InlineFragment(i) => self.set(&i.selection_set, parents),
                Selection::FragmentSpread(sp) => {
                    if let Some(fr) = self.doc.fragments.get(&sp.fragment_name) {
                        // Validation refuses cycles; the visit bound ends any other blow-up.
                        self.set(&fr.selection_set, parents);
                    }
                }
            }
        }
    }

    fn field(&mut self, f: &Field, parents: f64) {
        if f.selection_set.selections.is_empty() {
            return;
        }
        self.path.push(f.response_key().to_string());
        let is_connection = f.selection_set.ty.as_str().ends_with("Connection") && f.definition.arguments.iter().any(|a| a.name == "first");
        if f.name == "nodes" && self.path.len() == 1 {
            if let Some(n) = self.list_len(f, "ids").filter(|n| *n > MAX_PAGE as usize) {
                self.error(f, "ARGUMENT_LIMIT", format!("You may not provide more than 100 node ids; you provided {n}."));
            }
        }
        if is_connection {
            let first = self.int(f, "first");
            let last = self.int(f, "last");
            let name = f.name.as_str();
            let wants_items = selects(self.doc, &f.selection_set, 0);
            let page = match (first, last) {
                (Some(_), Some(_)) => {
                    self.error(f, "EXCESSIVE_PAGINATION", format!("Passing both `first` and `last` to paginate the `{name}` connection is not supported."));
                    None
                }
                (None, None) if wants_items => {
                    self.error(f, "MISSING_PAGINATION_BOUNDARIES", format!("You must provide a `first` or `last` value to properly paginate the `{name}` connection."));
                    None
                }
                (None, None) => Some(0),
                (Some(n), None) | (None, Some(n)) => {
                    let which = if first.is_some() { "first" } else { "last" };
                    if n > MAX_PAGE {
                        self.error(f, "EXCESSIVE_PAGINATION", format!("Requesting {n} records on the `{name}` connection exceeds the `{which}` limit of 100 records."));
                        None
                    } else if n < 0 {
                        self.error(f, "INVALID_PAGINATION", format!("`{which}` on the `{name}` connection cannot be less than zero."));
                        None
                    } else {
                        Some(n)
                    }
                }
            };
            let page = page.unwrap_or(0) as f64;
            self.requests += parents;
            self.nodes += parents * page;
            if self.nodes > MAX_NODES && self.over.is_none() {
                self.over = Some(name.to_string());
            }
            self.set(&f.selection_set, parents * page.max(1.0));
        } else {
            self.set(&f.selection_set, parents);
        }
        self.path.pop();
    }

    fn arg<'f>(&self, f: &'f Field, name: &str) -> Option<&'f AstValue> {
        f.arguments.iter().find(|a| a.name == name).map(|a| a.value.as_ref())
    }

    fn int(&self, f: &Field, name: &str) -> Option<i64> {
        match self.arg(f, name)? {
            AstValue::Int(i) => i.as_str().parse().ok(),
            AstValue::Variable(v) => self.vars.get(v.as_str()).and_then(Value::as_i64),
            _ => None,
        }
    }

    fn list_len(&self, f: &Field, name: &str) -> Option<usize> {
        match self.arg(f, name)? {
            AstValue::List(l) => Some(l.len()),
            AstValue::Variable(v) => self.vars.get(v.as_str()).and_then(Value::as_array).map(Vec::len),
            _ => None,
        }
    }

    fn error(&mut self, f: &Field, ty: &str, message: String) {
        let loc = f.name.location().and_then(|l| l.line_column_range(&self.doc.sources)).map(|r| json!([{"line": r.start.line, "column": r.start.column}]));
        self.errors.push(json!({"type": ty, "path": self.path, "locations": loc.unwrap_or(json!([])), "message": message}));
    }
}

/// Whether a connection's selection asks for its items (`nodes` or `edges`), not only counts.
fn selects(doc: &ExecutableDocument, set: &SelectionSet, nesting: usize) -> bool {
    if nesting > pome_graphql::limits::MAX_NESTING {
        return false;
    }
    set.selections.iter().any(|s| match s {
        Selection::Field(f) => f.name == "nodes" || f.name == "edges",
        Selection::InlineFragment(i) => selects(doc, &i.selection_set, nesting + 1),
        Selection::FragmentSpread(sp) => doc.fragments.get(&sp.fragment_name).is_some_and(|fr| selects(doc, &fr.selection_set, nesting + 1)),
    })
}
