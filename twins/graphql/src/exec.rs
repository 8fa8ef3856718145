//! The executor. apollo-compiler parses and validates every document; this module executes
//! the validated document over the twin's resolvers, as the GraphQL spec's "ExecuteQuery"
//! describes it: fields collected per concrete type (fragments, inline fragments on
//! interfaces and unions, `@skip`/`@include`), arguments coerced with their defaults,
//! aliases, `__typename`, field errors with their paths, and null propagation up to the
//! nearest nullable field. Writing answers straight into JSON keeps a request in the tens
//! of microseconds, where apollo's general executor (boxed futures per field) took ten times
//! that. Introspection documents (`__schema`, `__type`) run on apollo's executor, through
//! [`Apollo`], over the same resolvers.

use apollo_compiler::ast::Value as AstValue;
use apollo_compiler::executable::{Field, Selection, SelectionSet};
use apollo_compiler::resolvers::{FieldError, ObjectValue, ResolveInfo, ResolvedValue};
use apollo_compiler::schema::{ExtendedType, FieldDefinition, Type};
use apollo_compiler::validation::Valid;
use apollo_compiler::{ExecutableDocument, Schema};
use serde_json::{Map, Value, json};

use crate::doc::Prepared;
use crate::json::{from_json, to_json};
use crate::tables::{Tables, TypeRow};

/// What a resolver gets: the field's definition, its coerced arguments, and what the schema
/// tables say about its type.
pub struct Info<'a> {
    pub def: &'a FieldDefinition,
    pub args: &'a Value,
    pub meta: &'a Meta,
}

/// A field's type as the resolvers ask about it, looked up in the schema tables once per
/// document's field rather than once per object.
pub struct Meta {
    /// The named type (no list or non-null wrappers), and its row in the tables.
    pub named: &'static str,
    pub row: Option<&'static TypeRow>,
    pub composite: bool,
    pub connection: bool,
    /// A connection's node type, and its row in the tables.
    pub node: Option<&'static str>,
    pub node_row: Option<&'static TypeRow>,
    /// Where an entity kept as a flat record keeps the relation's id (`assigneeId`) and a
    /// list's ids (`labelIds`), by the naming convention of such records.
    pub id_key: String,
    pub ids_key: String,
}

impl Meta {
    pub fn of(tables: &Tables, def: &FieldDefinition) -> Meta {
        let name = def.ty.inner_named_type().as_str();
        let row = tables.ty(name);
        let named = row.map(|t| t.name()).unwrap_or(match name {
            "String" => "String",
            "Int" => "Int",
            "Float" => "Float",
            "Boolean" => "Boolean",
            "ID" => "ID",
            _ => "",
        });
        let connection = tables.is_connection(named);
        let node = connection.then(|| tables.field(named, "nodes").map(|f| f.ty)).flatten();
        Meta {
            named,
            row,
            composite: tables.is_composite(named),
            connection,
            node,
            node_row: node.and_then(|n| tables.ty(n)),
            id_key: format!("{}Id", def.name),
            ids_key: format!("{}Ids", singular(&def.name)),
        }
    }
}

impl Info<'_> {
    pub fn field_definition(&self) -> &FieldDefinition {
        self.def
    }
    pub fn field_name(&self) -> &str {
        self.def.name.as_str()
    }
}

/// A resolved value: a leaf (JSON, lists of leaves included), an object, a list, or null.
pub enum Out<'a> {
    Leaf(Value),
    /// A leaf already written as JSON, at this range of the scratch buffer that
    /// [`Resolve::resolve_all`] was given (never `null`).
    Raw(std::ops::Range<usize>),
    Obj(Box<dyn Resolve + 'a>),
    List(Vec<Out<'a>>),
    Null,
}

impl<'a> Out<'a> {
    pub fn null() -> Out<'a> {
        Out::Null
    }
    pub fn object(o: impl Resolve + 'a) -> Out<'a> {
        Out::Obj(Box::new(o))
    }
    pub fn nullable_object(o: Option<impl Resolve + 'a>) -> Out<'a> {
        o.map(Out::object).unwrap_or(Out::Null)
    }
    pub fn list<I: IntoIterator<Item = Out<'a>>>(items: I) -> Out<'a> {
        Out::List(items.into_iter().collect())
    }
}

/// An object the executor can ask for fields.
pub trait Resolve {
    fn type_name(&self) -> &str;
    fn resolve_field<'a>(&'a self, info: &Info<'_>) -> Result<Out<'a>, FieldError>;
    /// Every planned field at once, one answer per field that has an [`Planned::info`], in
    /// order, for objects that can share work between their fields (an entity looked up once
    /// rather than once per field). `None`: each field is resolved when it is completed.
    /// Leaves may be written as JSON to the end of `scratch` and answered as [`Out::Raw`].
    /// The entity this object stands for (its type and id), when its fields depend on
    /// nothing else: then one answer renders it once per selection, however often it recurs.
    fn identity(&self) -> Option<&str> {
        None
    }
    fn resolve_all<'a>(&'a self, fields: &[Planned<'_>], scratch: &mut Vec<u8>) -> Option<Vec<Result<Out<'a>, FieldError>>> {
        let _ = (fields, scratch);
        None
    }
}

pub struct Exec<'d> {
    pub schema: &'d Valid<Schema>,
    pub prepared: &'d Prepared,
    pub doc: &'d Valid<ExecutableDocument>,
    /// The document's field metadata, shared by its requests ([`crate::doc::Doc::metas`]).
    pub metas: &'d std::cell::RefCell<Vec<(usize, std::rc::Rc<Meta>)>>,
    pub vars: Map<String, Value>,
    pub errors: Vec<Value>,
    /// Collected fields by concrete type and selection sets: a list of fifty issues collects
    /// its fields once. A handful per document: a list scanned in order beats hashing the key
    /// every object.
    pub collected: Vec<Collected<'d>>,
    /// The `data` JSON being written.
    pub out: Vec<u8>,
    /// Leaves resolved ahead of being written ([`Out::Raw`]): each object appends to it and
    /// truncates it back when its fields are written, so enclosing objects' ranges stay valid.
    pub scratch: Vec<u8>,
    /// Objects already written, by plan and [`Resolve::identity`]: where in `out` their JSON
    /// is (fifty issues of two assignees write each assignee once and copy it). Emptied when
    /// a root field begins (a mutation changes the world) and on any error (a failed field
    /// truncates `out`, and its path differs at every place).
    pub rendered: Vec<Rendered>,
    /// Objects earlier requests of this document rendered ([`crate::memo`]); `None` for a
    /// mutation. Read only while `unchanged` says this request has not changed the world.
    pub memo: Option<&'d std::cell::RefCell<crate::memo::Memo>>,
    pub unchanged: &'d dyn Fn() -> bool,
    /// Objects this request rendered that the memo may keep, if the request ends as one
    /// whose objects may be kept.
    pub fresh: Vec<crate::memo::Fresh>,
}

/// The objects of one plan already written: where in `out` each one's JSON is, by identity.
pub struct Rendered {
    plan: usize,
    spans: std::collections::BTreeMap<String, std::ops::Range<usize>>,
    /// Objects found here rather than written again.
    hits: usize,
}

impl Rendered {
    /// Whether this plan lists distinct entities: its first [`DISTINCT`] objects all differed.
    fn distinct(&self) -> bool {
        self.hits == 0 && self.spans.len() >= DISTINCT
    }
}

/// A plan whose first this many objects were all different is listing distinct entities
/// (the issues of a page), not repeating a few (their assignees): its objects are no longer
/// recorded, since keeping each one's identity cost more than the rare repeat saves.
const DISTINCT: usize = 8;

/// Null propagates from a failed non-null field to its parent.
struct Propagate;

/// One step of a response path, materialised only when an error names it.
#[derive(Clone, Copy)]
enum Seg<'s> {
    Key(&'s str),
    Index(usize),
}

/// One response key of an object's collected fields.
pub struct Planned<'d> {
    key: &'d str,
    /// The fields merged under the key (their selection sets merge too).
    group: Vec<&'d Field>,
    /// Its definition on the object type; `None` for `__typename` and unknown fields.
    def: Option<&'d FieldDefinition>,
    args: Value,
    meta: Option<std::rc::Rc<Meta>>,
    subs: Vec<&'d SelectionSet>,
    typename: bool,
}

impl Planned<'_> {
    /// What the resolver gets, for a field it resolves (not `__typename`).
    pub fn info(&self) -> Option<Info<'_>> {
        Some(Info { def: self.def?, args: &self.args, meta: self.meta.as_deref()? })
    }
}

type Fields<'s> = std::rc::Rc<Vec<Planned<'s>>>;

/// What tells one plan from another: a concrete type and the selection sets merged for it
/// (one, or several under a response key), by address. The same field merged with other
/// partners elsewhere is another plan.
pub struct PlanKey {
    ty: Box<str>,
    sets: Vec<usize>,
}

impl PlanKey {
    pub fn new(ty: &str, sets: &[&SelectionSet]) -> PlanKey {
        PlanKey { ty: ty.into(), sets: sets.iter().map(|s| *s as *const SelectionSet as usize).collect() }
    }

    /// The selection sets first: integers, and nearly always enough to tell plans apart.
    pub fn is(&self, ty: &str, sets: &[&SelectionSet]) -> bool {
        self.sets.len() == sets.len() && self.sets.iter().zip(sets).all(|(a, s)| *a == *s as *const SelectionSet as usize) && *self.ty == *ty
    }
}

/// The fields collected for one plan, with the plan in [`Exec::memo`] when its objects may be
/// kept there.
pub struct Collected<'d> {
    key: PlanKey,
    fields: Fields<'d>,
    kept: Option<usize>,
}

impl<'d> Exec<'d> {
    /// Execute an operation's selection set on its root object, writing the `data` JSON.
    pub fn run(&mut self, root: &dyn Resolve, set: &'d SelectionSet) -> Vec<u8> {
        let mut path = Vec::new();
        if self
            .object(root, set.ty.as_str(), &[set], &mut path)
            .is_err()
        {
            self.out.clear();
            self.out.extend_from_slice(b"null");
        }
        std::mem::take(&mut self.out)
    }

    /// The plan of an object's fields for concrete type `ty`: collected once per request
    /// for each (type, selection sets), with each field's definition and coerced arguments
    /// (constant for the request: they depend only on the document and the variables).
    fn plan(&mut self, ty: &str, sets: &[&'d SelectionSet]) -> (Fields<'d>, Option<usize>) {
        if let Some(c) = self.collected.iter().find(|c| c.key.is(ty, sets)) {
            return (c.fields.clone(), c.kept);
        }
        let mut grouped: Vec<(&'d str, Vec<&'d Field>)> = Vec::new();
        for set in sets {
            self.collect(ty, set, &mut grouped, &mut Vec::new());
        }
        let schema: &'d Valid<Schema> = self.schema;
        let object_def = match schema.types.get(ty) {
            Some(ExtendedType::Object(o)) => Some(o),
            _ => None,
        };
        let planned: Vec<Planned<'d>> = grouped
            .into_iter()
            .map(|(key, group)| {
                let field = group[0];
                let typename = field.name == "__typename";
                let def = if typename { None } else { object_def.and_then(|o| o.fields.get(&field.name)).map(|d| &***d) };
                let args = def.map(|d| self.arguments(field, d)).unwrap_or(Value::Null);
                let meta = def.map(|d| self.meta(d));
                let subs = group.iter().map(|f| &f.selection_set).collect();
                Planned { key, group, def, args, meta, subs, typename }
            })
            .collect();
        let f = std::rc::Rc::new(planned);
        let kept = self.memo.and_then(|m| m.borrow_mut().plan(ty, sets, self.doc));
        self.collected.push(Collected { key: PlanKey::new(ty, sets), fields: f.clone(), kept });
        (f, kept)
    }

    fn meta(&self, def: &FieldDefinition) -> std::rc::Rc<Meta> {
        let at = def as *const FieldDefinition as usize;
        if let Some((_, m)) = self.metas.borrow().iter().find(|(a, _)| *a == at) {
            return m.clone();
        }
        let m = std::rc::Rc::new(Meta::of(self.prepared.tables, def));
        self.metas.borrow_mut().push((at, m.clone()));
        m
    }

    fn object(
        &mut self,
        obj: &dyn Resolve,
        ty: &str,
        sets: &[&'d SelectionSet],
        path: &mut Vec<Seg<'d>>,
    ) -> Result<(), Propagate> {
        let (fields, kept) = self.plan(ty, sets);
        let plan_at = std::rc::Rc::as_ptr(&fields) as usize;
        let identity = obj.identity().filter(|_| !path.is_empty());
        if let (Some(id), Some(plan), Some(memo)) = (identity, kept, self.memo) {
            if let Some(json) = memo.borrow().get(plan, id).filter(|_| (self.unchanged)()) {
                self.out.extend_from_slice(json);
                return Ok(());
            }
        }
        if let Some(id) = identity {
            // A plan of distinct entities is not looked in: it rarely repeats one.
            let memo = self.rendered.iter_mut().find(|m| m.plan == plan_at).filter(|m| !m.distinct());
            if let Some(m) = memo {
                if let Some(r) = m.spans.get(id).cloned() {
                    m.hits += 1;
                    self.out.extend_from_within(r);
                    return Ok(());
                }
            }
        }
        let start = self.out.len();
        let errors = self.errors.len();
        // Objects that resolve their fields together do it before any is completed.
        let base = self.scratch.len();
        let mut together = obj.resolve_all(&fields, &mut self.scratch).map(Vec::into_iter);
        self.out.push(b'{');
        for (n, p) in fields.iter().enumerate() {
            let key = p.key;
            let field = p.group[0];
            if n > 0 {
                self.out.push(b',');
            }
            // Response keys are GraphQL names: nothing to escape.
            self.out.push(b'"');
            self.out.extend_from_slice(key.as_bytes());
            self.out.extend_from_slice(b"\":");
            if p.typename {
                self.out.push(b'"');
                self.out.extend_from_slice(ty.as_bytes());
                self.out.push(b'"');
                continue;
            }
            let Some(info) = p.info() else {
                self.out.extend_from_slice(b"null");
                continue;
            };
            let def = info.def;
            if path.is_empty() {
                self.rendered.clear();
            }
            path.push(Seg::Key(key));
            let mark = self.out.len();
            let resolved = match together.as_mut() {
                Some(all) => all.next().unwrap_or(Ok(Out::Null)),
                None => obj.resolve_field(&info),
            };
            let value = match resolved {
                Ok(resolved) => self.complete(resolved, &def.ty, &p.subs, field, path),
                Err(e) => {
                    self.error(e.message, field, path);
                    Err(Propagate)
                }
            };
            path.pop();
            if value.is_err() {
                if def.ty.is_non_null() {
                    self.scratch.truncate(base);
                    return Err(Propagate);
                }
                self.out.truncate(mark);
                self.out.extend_from_slice(b"null");
            }
        }
        self.out.push(b'}');
        self.scratch.truncate(base);
        if let Some(id) = identity.filter(|_| self.errors.len() == errors) {
            let end = self.out.len();
            if let Some(plan) = kept {
                self.fresh.push(crate::memo::Fresh { plan, id: id.into(), at: start..end });
            }
            match self.rendered.iter_mut().find(|m| m.plan == plan_at) {
                Some(m) if m.distinct() => {}
                Some(m) => {
                    m.spans.insert(id.to_string(), start..end);
                }
                None => self.rendered.push(Rendered { plan: plan_at, spans: [(id.to_string(), start..end)].into(), hits: 0 }),
            }
        }
        Ok(())
    }

    fn complete(
        &mut self,
        out: Out<'_>,
        ty: &Type,
        subs: &[&'d SelectionSet],
        field: &Field,
        path: &mut Vec<Seg<'d>>,
    ) -> Result<(), Propagate> {
        match (out, ty) {
            (Out::Null, _) | (Out::Leaf(Value::Null), _) => {
                if ty.is_non_null() {
                    self.error(
                        format!("Cannot return null for non-nullable field {}.", field.name),
                        field,
                        path,
                    );
                    Err(Propagate)
                } else {
                    self.out.extend_from_slice(b"null");
                    Ok(())
                }
            }
            (Out::Raw(r), _) => {
                self.out.extend_from_slice(&self.scratch[r]);
                Ok(())
            }
            (Out::Leaf(v), _) => {
                serde_json::to_writer(&mut self.out, &v).expect("JSON values serialise");
                Ok(())
            }
            (Out::List(items), Type::List(inner) | Type::NonNullList(inner)) => {
                self.out.push(b'[');
                for (i, item) in items.into_iter().enumerate() {
                    if i > 0 {
                        self.out.push(b',');
                    }
                    path.push(Seg::Index(i));
                    let mark = self.out.len();
                    let v = self.complete(item, inner, subs, field, path);
                    path.pop();
                    if v.is_err() {
                        if inner.is_non_null() {
                            return Err(Propagate);
                        }
                        self.out.truncate(mark);
                        self.out.extend_from_slice(b"null");
                    }
                }
                self.out.push(b']');
                Ok(())
            }
            (Out::Obj(o), _) => {
                let mark = self.out.len();
                match self.object(o.as_ref(), o.type_name(), subs, path) {
                    Ok(()) => Ok(()),
                    Err(Propagate) if ty.is_non_null() => Err(Propagate),
                    Err(Propagate) => {
                        self.out.truncate(mark);
                        self.out.extend_from_slice(b"null");
                        Ok(())
                    }
                }
            }
            (Out::List(_), _) => {
                self.error(format!("{} resolved to a list", field.name), field, path);
                if ty.is_non_null() {
                    return Err(Propagate);
                }
                self.out.extend_from_slice(b"null");
                Ok(())
            }
        }
    }

    fn error(&mut self, message: String, field: &Field, path: &[Seg<'_>]) {
        self.rendered.clear();
        let mut e = Map::new();
        e.insert("message".into(), Value::String(message));
        if let Some(loc) = field
            .name
            .location()
            .and_then(|l| l.line_column_range(&self.doc.sources))
        {
            e.insert(
                "locations".into(),
                json!([{"line": loc.start.line, "column": loc.start.column}]),
            );
        }
        e.insert(
            "path".into(),
            Value::Array(
                path.iter()
                    .map(|s| match s {
                        Seg::Key(k) => json!(k),
                        Seg::Index(i) => json!(i),
                    })
                    .collect(),
            ),
        );
        self.errors.push(Value::Object(e));
    }

    /// CollectFields: group by response key, in document order.
    fn collect<'s>(
        &self,
        ty: &str,
        set: &'s SelectionSet,
        out: &mut Vec<(&'s str, Vec<&'s Field>)>,
        visited: &mut Vec<&'s str>,
    ) where
        'd: 's,
    {
        for sel in &set.selections {
            let directives = match sel {
                Selection::Field(f) => &f.directives,
                Selection::InlineFragment(i) => &i.directives,
                Selection::FragmentSpread(s) => &s.directives,
            };
            if !self.included(directives) {
                continue;
            }
            match sel {
                Selection::Field(f) => {
                    let key = f.response_key().as_str();
                    match out.iter_mut().find(|(k, _)| *k == key) {
                        Some((_, g)) => g.push(f),
                        None => out.push((key, vec![f])),
                    }
                }
                Selection::InlineFragment(i) => {
                    if i.type_condition
                        .as_ref()
                        .is_none_or(|c| self.applies(ty, c.as_str()))
                    {
                        self.collect(ty, &i.selection_set, out, visited);
                    }
                }
                Selection::FragmentSpread(s) => {
                    let name = s.fragment_name.as_str();
                    if visited.contains(&name) {
                        continue;
                    }
                    visited.push(name);
                    if let Some(frag) = self.doc.fragments.get(&s.fragment_name) {
                        if self.applies(ty, frag.type_condition().as_str()) {
                            self.collect(ty, &frag.selection_set, out, visited);
                        }
                    }
                }
            }
        }
    }

    fn applies(&self, concrete: &str, cond: &str) -> bool {
        if concrete == cond {
            return true;
        }
        match self.schema.types.get(cond) {
            Some(ExtendedType::Interface(_)) => self
                .prepared
                .implementers
                .get(cond)
                .is_some_and(|i| i.objects.iter().any(|o| o == concrete)),
            Some(ExtendedType::Union(u)) => u.members.iter().any(|m| m.name == concrete),
            _ => false,
        }
    }

    fn included(&self, directives: &apollo_compiler::executable::DirectiveList) -> bool {
        for d in directives.iter() {
            let cond = d
                .specified_argument_by_name("if")
                .map(|v| self.value(v))
                .and_then(|v| v.as_bool())
                .unwrap_or(false);
            match d.name.as_str() {
                "skip" if cond => return false,
                "include" if !cond => return false,
                _ => {}
            }
        }
        true
    }

    /// A field's arguments: given values (variables substituted), else the defaults.
    fn arguments(&self, field: &Field, def: &FieldDefinition) -> Value {
        let mut out = Map::new();
        for a in &def.arguments {
            match field.arguments.iter().find(|x| x.name == a.name) {
                Some(given) => {
                    if let AstValue::Variable(v) = given.value.as_ref() {
                        if !self.vars.contains_key(v.as_str()) {
                            if let Some(d) = &a.default_value {
                                out.insert(a.name.to_string(), self.value(d));
                            }
                            continue;
                        }
                    }
                    out.insert(a.name.to_string(), self.value(&given.value));
                }
                None => {
                    if let Some(d) = &a.default_value {
                        out.insert(a.name.to_string(), self.value(d));
                    }
                }
            }
        }
        Value::Object(out)
    }

    fn value(&self, v: &AstValue) -> Value {
        match v {
            AstValue::Null => Value::Null,
            AstValue::Enum(n) => Value::String(n.to_string()),
            AstValue::Variable(n) => self.vars.get(n.as_str()).cloned().unwrap_or(Value::Null),
            AstValue::String(s) => Value::String(s.clone()),
            AstValue::Boolean(b) => Value::Bool(*b),
            AstValue::Int(i) => i
                .as_str()
                .parse::<i64>()
                .map(Value::from)
                .unwrap_or_else(|_| i.try_to_f64().map(Value::from).unwrap_or(Value::Null)),
            AstValue::Float(f) => f.try_to_f64().map(Value::from).unwrap_or(Value::Null),
            AstValue::List(l) => Value::Array(l.iter().map(|x| self.value(x)).collect()),
            // A field whose value is a variable the request did not give is absent, as the
            // spec's input coercion says (not null: an update must not clear it).
            AstValue::Object(o) => Value::Object(
                o.iter()
                    .filter(|(_, x)| !matches!(x.as_ref(), AstValue::Variable(v) if !self.vars.contains_key(v.as_str())))
                    .map(|(k, x)| (k.to_string(), self.value(x)))
                    .collect(),
            ),
        }
    }
}

/// A resolver as apollo's executor sees it (introspection documents).
pub struct Apollo<'a>(pub Box<dyn Resolve + 'a>, pub &'static Tables);

impl ObjectValue for Apollo<'_> {
    fn type_name(&self) -> &str {
        self.0.type_name()
    }

    fn resolve_field<'a>(
        &'a self,
        info: &'a ResolveInfo<'a>,
    ) -> Result<ResolvedValue<'a>, FieldError> {
        let args = to_json(&apollo_compiler::response::JsonValue::Object(
            info.arguments().clone(),
        ));
        let def = info.field_definition();
        let meta = Meta::of(self.1, def);
        let out = self.0.resolve_field(&Info { def, args: &args, meta: &meta })?;
        Ok(convert(out, &def.ty, self.1))
    }
}

fn convert<'a>(out: Out<'a>, ty: &Type, tables: &'static Tables) -> ResolvedValue<'a> {
    match (out, ty) {
        (Out::Null, _) => ResolvedValue::null(),
        (Out::Leaf(Value::Array(a)), Type::List(inner) | Type::NonNullList(inner)) => {
            let inner = (**inner).clone();
            ResolvedValue::list(a.into_iter().map(move |x| convert(Out::Leaf(x), &inner, tables)))
        }
        (Out::Leaf(v), _) => ResolvedValue::Leaf(from_json(v)),
        // Only `resolve_all` answers written leaves, and apollo's executor never calls it.
        (Out::Raw(_), _) => ResolvedValue::null(),
        (Out::Obj(o), _) => ResolvedValue::object(Apollo(o, tables)),
        (Out::List(items), Type::List(inner) | Type::NonNullList(inner)) => {
            let inner = (**inner).clone();
            ResolvedValue::list(items.into_iter().map(move |x| convert(x, &inner, tables)))
        }
        (Out::List(_), _) => ResolvedValue::null(),
    }
}

/// The singular of a plural field name (`labels` → `label`, `children` → `child`), as flat
/// records name a list's ids ([`Meta::ids_key`]).
pub fn singular(field: &str) -> String {
    if field == "children" {
        "child".into()
    } else if let Some(s) = field.strip_suffix("ies") {
        format!("{s}y")
    } else if let Some(s) = field.strip_suffix('s') {
        s.to_string()
    } else {
        field.to_string()
    }
}
