//! Objects rendered by earlier requests of the same document, kept while the world does not
//! change. A client that sends one query again and again with other variables (a filter's
//! value, a page's cursor) is still filtered and paged afresh every time, but each issue on
//! the page is rendered once and copied after.
//!
//! An entity's JSON under one selection is a pure function of the entity, the world around it,
//! the acting user (`isMe`, `viewerDidAuthor`), the base URL (`url`) and, when the selection reads one, the
//! variables. So a memo is kept per document ([`crate::doc::Doc`]: a selection set's address
//! is stable only while its document lives), holds objects of one [`Scope`] at a time, keeps
//! no object whose selection reads a variable, and takes objects only from requests that read
//! neither the clock nor wrote (the rule of a twin's answer cache).

use std::cell::Cell;
use std::collections::BTreeMap;
use std::ops::Range;

use apollo_compiler::ast::Value as AstValue;
use apollo_compiler::executable::{DirectiveList, Selection, SelectionSet};
use apollo_compiler::ExecutableDocument;

use crate::exec::PlanKey;

/// What the memos of one instance hold together at most; past it, new objects are not kept.
const MAX_BYTES: usize = 1 << 20;

thread_local! {
    static HELD: Cell<usize> = const { Cell::new(0) };
}

/// What an object's JSON depends on besides its entity and its selection.
#[derive(PartialEq)]
struct Scope {
    /// The world's identity and generation (a twin's `Generation::key`).
    world: (u64, u64),
    viewer: String,
    base_url: String,
}

#[derive(Default)]
pub struct Memo {
    scope: Option<Scope>,
    plans: Vec<Plan>,
    /// Every kept object's JSON, back to back.
    bytes: Vec<u8>,
}

/// One selection on one concrete type: the objects rendered under it, by entity id.
struct Plan {
    key: PlanKey,
    /// Whether objects may be kept: the selection reads no variable.
    keeps: bool,
    objects: BTreeMap<Box<str>, Range<usize>>,
}

/// An object a request rendered afresh: its plan, its entity's id, and where its JSON is in
/// the request's `data`.
pub struct Fresh {
    pub plan: usize,
    pub id: Box<str>,
    pub at: Range<usize>,
}

impl Memo {
    /// Serve a request of world `world` acting as `viewer` at `base_url`: objects kept for
    /// another scope are dropped.
    pub fn enter(&mut self, world: (u64, u64), viewer: &str, base_url: &str) {
        if self.scope.as_ref().is_some_and(|s| s.world == world && s.viewer == viewer && s.base_url == base_url) {
            return;
        }
        self.release();
        self.scope = Some(Scope { world, viewer: viewer.to_string(), base_url: base_url.to_string() });
    }

    /// The plan for type `ty` over `sets`, when its objects may be kept.
    pub fn plan(&mut self, ty: &str, sets: &[&SelectionSet], doc: &ExecutableDocument) -> Option<usize> {
        let found = self.plans.iter().position(|p| p.key.is(ty, sets));
        let at = found.unwrap_or_else(|| {
            let keeps = !sets.iter().any(|s| reads_variable(s, doc, &mut Vec::new()));
            self.plans.push(Plan { key: PlanKey::new(ty, sets), keeps, objects: BTreeMap::new() });
            self.plans.len() - 1
        });
        self.plans[at].keeps.then_some(at)
    }

    /// The JSON of entity `id` under `plan`, when an earlier request rendered it.
    pub fn get(&self, plan: usize, id: &str) -> Option<&[u8]> {
        let at = self.plans[plan].objects.get(id)?;
        Some(&self.bytes[at.clone()])
    }

    /// Keep the objects a request rendered, from its `data`, as far as the budget allows.
    pub fn keep(&mut self, data: &[u8], fresh: Vec<Fresh>) {
        for r in fresh {
            let len = r.at.len();
            if HELD.get() + len > MAX_BYTES {
                return;
            }
            let objects = &mut self.plans[r.plan].objects;
            if objects.contains_key(&r.id) {
                continue;
            }
            let start = self.bytes.len();
            self.bytes.extend_from_slice(&data[r.at]);
            objects.insert(r.id, start..start + len);
            HELD.set(HELD.get() + len);
        }
    }

    /// What the memos of this instance hold together (twins' tests read it).
    pub fn held() -> usize {
        HELD.get()
    }

    fn release(&mut self) {
        HELD.set(HELD.get() - self.bytes.len());
        self.bytes = Vec::new();
        for p in &mut self.plans {
            p.objects.clear();
        }
    }
}

impl Drop for Memo {
    fn drop(&mut self) {
        self.release();
    }
}

/// Whether anything under `set` (arguments, directives, fragments) reads a variable.
fn reads_variable<'d>(set: &'d SelectionSet, doc: &'d ExecutableDocument, seen: &mut Vec<&'d str>) -> bool {
    let directives = |d: &DirectiveList| d.iter().any(|d| d.arguments.iter().any(|a| has_variable(&a.value)));
    set.selections.iter().any(|sel| match sel {
        Selection::Field(f) => directives(&f.directives) || f.arguments.iter().any(|a| has_variable(&a.value)) || reads_variable(&f.selection_set, doc, seen),
        Selection::InlineFragment(i) => directives(&i.directives) || reads_variable(&i.selection_set, doc, seen),
        Selection::FragmentSpread(s) => {
            if directives(&s.directives) {
                return true;
            }
            if seen.contains(&s.fragment_name.as_str()) {
                return false;
            }
            seen.push(s.fragment_name.as_str());
            doc.fragments.get(&s.fragment_name).is_some_and(|f| reads_variable(&f.selection_set, doc, seen))
        }
    })
}

fn has_variable(v: &AstValue) -> bool {
    match v {
        AstValue::Variable(_) => true,
        AstValue::List(l) => l.iter().any(|x| has_variable(x)),
        AstValue::Object(o) => o.iter().any(|(_, x)| has_variable(x)),
        _ => false,
    }
}
