//! `expr:` criteria: a CEL expression (https://cel.dev) over one twin's world, for what no
//! declared check covers: `- [code:github] expr: state.repositories.exists(r, r.issues.size() > 2)`.
//!
//! Variables: `state` (the final state export), `seed` (the state right after the seed
//! loaded) and `tape` (the rows, each with `seq`, `method`, `path`, `status`, `action`,
//! `fidelity`, `state_delta`, …). JSON integers become CEL `int`, so `i.number == 1` works.
//! The expression must yield a bool. Evidence: the first tape row the expression names
//! through `tape` is unknowable in general, so an expression's evidence is the substrate it
//! read (`{expr: "state"}` or `{expr: "tape"}`).
//!
//! Bounds (crate::limits): the steps an expression would take are estimated before it runs,
//! once over the seed world alone and once over the world the agent left. Over the bound on
//! the seed alone, the criterion is an error of the task; over it only with what the agent
//! added (tape rows, a wider state, a tape over [`CRITERION_TAPE_BYTES`]), it fails.

use std::collections::HashMap;
use std::sync::Arc;

use cel::objects::{Key, Map};
use cel::{Context, Program, Value as Cel};
use serde_json::{Value, json};

use super::{Outcome, World};
use crate::limits::{CRITERION_STEPS, CRITERION_TAPE_BYTES, tape_bytes, tape_too_large};
use pome_tape::TapeRow;

/// Longest `expr:` source accepted.
const MAX_SOURCE: usize = 4096;
/// Deepest nesting of brackets accepted.
const MAX_NESTING: usize = 24;
#[derive(Clone)]
pub struct Expr {
    source: String,
    program: Arc<Program>,
}

impl std::fmt::Debug for Expr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Expr({:?})", self.source)
    }
}

impl Expr {
    pub fn compile(source: &str) -> Result<Expr, String> {
        if source.is_empty() {
            return Err("empty expression".into());
        }
        // Bounds before the parser sees it: the parser recurses on nesting, and a criterion
        // is a sentence, not a program.
        if source.len() > MAX_SOURCE {
            return Err(format!("the expression is {} bytes; criteria take at most {MAX_SOURCE}", source.len()));
        }
        let mut depth = 0usize;
        for c in source.chars() {
            match c {
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' => depth = depth.saturating_sub(1),
                _ => {}
            }
            if depth > MAX_NESTING {
                return Err(format!("the expression nests deeper than {MAX_NESTING} levels"));
            }
        }
        // The CEL parser can panic on some malformed input; a criterion must not take the
        // grader down with it.
        let src = source.to_string();
        let compiled = std::panic::catch_unwind(move || Program::compile(&src));
        match compiled {
            Ok(Ok(p)) => Ok(Expr { source: source.to_string(), program: Arc::new(p) }),
            Ok(Err(e)) => Err(e.to_string().lines().next().unwrap_or("syntax error").to_string()),
            Err(_) => Err("the CEL parser rejected it".into()),
        }
    }

    pub fn evaluate(&self, w: &World) -> Result<Outcome, String> {
        self.evaluate_with(w, &std::collections::BTreeMap::new())
    }

    /// Evaluate with a check's template parameters bound too: each as a string variable of
    /// its own name (unless it would shadow `state`, `seed` or `tape`) and all as `params`.
    pub fn evaluate_with(&self, w: &World, params: &std::collections::BTreeMap<String, String>) -> Result<Outcome, String> {
        // The CEL interpreter has no step counter to stop it midway, so the bound is checked
        // before it starts: macros (`all`, `exists`, `map`, `filter`) nested in each other
        // multiply, and a few nested over a long tape would run for hours. The bound is
        // fixed; whose doing it is to reach it decides the outcome (crate::limits).
        let refs = self.program.references();
        let reads_tape = refs.has_variable("tape");
        let substrate = if reads_tape { "tape" } else { "state" };
        let seed_alone = Sizes { tape: 0, state: widest(w.seed) as u64, row: 0, text: longest(w.seed) as u64 };
        let steps = cost(self.program.expression(), &seed_alone);
        if steps > CRITERION_STEPS {
            return Err(format!(
                "the expression would take about {steps} steps over the seed world alone, over the bound of {CRITERION_STEPS}: the task's criterion is too costly for its world; nest fewer macros"
            ));
        }
        if reads_tape {
            let bytes = tape_bytes(w.tape);
            if bytes > CRITERION_TAPE_BYTES {
                return Ok(Outcome::new(false, tape_too_large(w.tape.len(), bytes), json!({"tape": w.tape.len()})));
            }
        }
        let sizes = Sizes {
            tape: w.tape.len() as u64,
            state: widest(w.state).max(widest(w.seed)) as u64,
            row: w.tape.iter().map(|r| r.request_headers.len().max(r.response_headers.len()).max(r.state_delta.len()).max(r.deliveries.len())).max().unwrap_or(0) as u64,
            // A row's longest text is at most its weight (its bodies and headers as JSON).
            text: longest(w.state).max(longest(w.seed)).max(if reads_tape { w.tape.iter().map(TapeRow::weight).max().unwrap_or(0) } else { 0 }) as u64,
        };
        let steps = cost(self.program.expression(), &sizes);
        if steps > CRITERION_STEPS {
            return Ok(Outcome::new(
                false,
                format!(
                    "the tape ({} rows) and the world the agent left (its widest collection {} items) are larger than this criterion may read: about {steps} steps, over its bound of {CRITERION_STEPS}; the agent's own calls reached the bound",
                    sizes.tape, sizes.state
                ),
                json!({"expr": substrate}),
            ));
        }
        let mut ctx = Context::default();
        for (k, v) in params {
            if !["state", "seed", "tape", "params"].contains(&k.as_str()) {
                ctx.add_variable_from_value(k.as_str(), Cel::String(Arc::new(v.clone())));
            }
        }
        let map: HashMap<Key, Cel> = params.iter().map(|(k, v)| (Key::String(Arc::new(k.clone())), Cel::String(Arc::new(v.clone())))).collect();
        ctx.add_variable_from_value("params", Cel::Map(Map { map: Arc::new(map) }));
        ctx.add_variable_from_value("state", to_cel(w.state));
        ctx.add_variable_from_value("seed", to_cel(w.seed));
        // A tape the expression never names is not converted.
        let rows = if reads_tape { w.tape.iter().map(row_to_cel).collect() } else { Vec::new() };
        ctx.add_variable_from_value("tape", Cel::List(Arc::new(rows)));
        match self.program.execute(&ctx) {
            Ok(Cel::Bool(b)) => Ok(Outcome::new(b, format!("`{}` is {b}", self.source), json!({"expr": substrate}))),
            Ok(other) => Err(format!("the expression gave {other:?}, not a bool")),
            Err(e) => Err(format!("the expression failed: {e}")),
        }
    }
}

/// The most items any one array or object in `v` holds.
fn widest(v: &Value) -> usize {
    match v {
        Value::Array(a) => a.iter().map(widest).fold(a.len(), usize::max),
        Value::Object(o) => o.values().map(widest).fold(o.len(), usize::max),
        _ => 0,
    }
}

/// How large the collections and strings of a world are, for [`cost`]: the tape's rows, the
/// widest array or object of the states, the widest list inside one row, and the longest
/// string anywhere in them (bodies included).
struct Sizes {
    tape: u64,
    state: u64,
    row: u64,
    text: u64,
}

/// What [`cost`] knows of a value: the steps to compute it, and upper bounds on its length
/// (`items` of a list or map, `bytes` of a string) and on the length of anything inside it
/// (`in_items`, `in_bytes`). A macro's body runs once per item of its range; a `+` copies
/// what it joins. Counting both bounds the time and the memory of an expression whose
/// lists and strings it builds itself (`[1,…,99].map(a, [1,…,99].map(b, …))`,
/// `[s + s].map(t, [t + t].map(…))`), not only of those it reads from the world.
#[derive(Clone, Copy, Default)]
struct Est {
    steps: u64,
    items: u64,
    bytes: u64,
    in_items: u64,
    in_bytes: u64,
}

impl Est {
    /// A value of these bounds, computed in one step.
    fn leaf(items: u64, bytes: u64, in_items: u64, in_bytes: u64) -> Est {
        Est { steps: 1, items, bytes, in_items, in_bytes }
    }

    /// One item of this value (a macro's variable, a field, an index): as large as anything inside.
    fn item(&self) -> Est {
        Est::leaf(self.in_items, self.in_bytes, self.in_items, self.in_bytes)
    }

    /// The bound on anything inside a collection holding values like `self`.
    fn holding(self, other: Est) -> Est {
        Est {
            in_items: other.in_items.max(other.items).max(self.in_items),
            in_bytes: other.in_bytes.max(other.bytes).max(self.in_bytes),
            steps: self.steps.saturating_add(other.steps),
            ..self
        }
    }
}

/// An upper estimate of the steps evaluating `e` takes; see [`Est`].
fn cost(e: &cel::common::ast::IdedExpr, n: &Sizes) -> u64 {
    estimate(e, n, &mut Vec::new()).steps
}

/// [`cost`] with the macro variables in scope (innermost last) and what each stands for.
fn estimate(e: &cel::common::ast::IdedExpr, n: &Sizes, scope: &mut Vec<(String, Est)>) -> Est {
    use cel::common::ast::{EntryExpr, Expr, LiteralValue};
    match &e.expr {
        Expr::Literal(LiteralValue::String(s)) => Est::leaf(0, s.inner().len() as u64, 0, 0),
        Expr::Literal(LiteralValue::Bytes(b)) => Est::leaf(0, b.inner().len() as u64, 0, 0),
        Expr::Literal(_) => Est::leaf(0, 0, 0, 0),
        Expr::Ident(name) => match scope.iter().rev().find(|(v, _)| v == name) {
            Some((_, bound)) => Est { steps: 1, ..*bound },
            None if name == "tape" => Est::leaf(n.tape, 0, n.row.max(n.state), n.text),
            None if name == "state" || name == "seed" => Est::leaf(n.state, n.text, n.state, n.text),
            // `params`, a template parameter, or a name nothing binds (an error when run).
            None => Est::leaf(n.state, n.text, n.state, n.text),
        },
        Expr::Select(sel) => {
            let of = estimate(&sel.operand, n, scope);
            Est { steps: of.steps.saturating_add(1), ..of.item() }
        }
        Expr::List(l) => l.elements.iter().fold(Est::leaf(l.elements.len() as u64, 0, 0, 0), |acc, x| acc.holding(estimate(x, n, scope))),
        Expr::Map(m) => m.entries.iter().fold(Est::leaf(m.entries.len() as u64, 0, 0, 0), |acc, x| match &x.expr {
            EntryExpr::MapEntry(en) => acc.holding(estimate(&en.key, n, scope)).holding(estimate(&en.value, n, scope)),
            EntryExpr::StructField(f) => acc.holding(estimate(&f.value, n, scope)),
        }),
        Expr::Struct(st) => st.entries.iter().fold(Est::leaf(st.entries.len() as u64, 0, 0, 0), |acc, x| match &x.expr {
            EntryExpr::MapEntry(en) => acc.holding(estimate(&en.key, n, scope)).holding(estimate(&en.value, n, scope)),
            EntryExpr::StructField(f) => acc.holding(estimate(&f.value, n, scope)),
        }),
        Expr::Comprehension(c) => {
            let range = estimate(&c.iter_range, n, scope);
            let init = estimate(&c.accu_init, n, scope);
            let runs = range.items.max(1);
            // The body sees one item of the range and the accumulator; what one run adds to
            // the accumulator (`map` and `filter` append one item; cel appends in place) is
            // added once per run.
            scope.push((c.iter_var.clone(), range.item()));
            if let Some(v) = &c.iter_var2 {
                scope.push((v.clone(), range.item()));
            }
            scope.push((c.accu_var.clone(), Est { steps: 0, ..init }));
            let cond = estimate(&c.loop_cond, n, scope);
            let step = estimate(&c.loop_step, n, scope);
            let accu = Est { steps: 0, items: init.items.saturating_add(runs.saturating_mul(step.items.saturating_sub(init.items).max(1))), ..step };
            scope.pop();
            scope.push((c.accu_var.clone(), accu));
            let result = estimate(&c.result, n, scope);
            scope.truncate(scope.len() - if c.iter_var2.is_some() { 3 } else { 2 });
            let body = 1u64.saturating_add(cond.steps).saturating_add(step.steps);
            Est { steps: range.steps.saturating_add(init.steps).saturating_add(runs.saturating_mul(body)).saturating_add(result.steps), ..result }
        }
        Expr::Call(c) => {
            let args: Vec<Est> = c.target.iter().map(|t| &**t).chain(c.args.iter()).map(|a| estimate(a, n, scope)).collect();
            let steps = args.iter().map(|a| a.steps).fold(1u64, u64::saturating_add);
            let inside = args.iter().fold(Est::default(), |acc, a| acc.holding(Est { items: a.in_items, bytes: a.in_bytes, ..Default::default() }));
            match c.func_name.as_str() {
                // Indexing is a field of the target.
                "_[_]" if c.target.is_none() && args.len() == 2 => Est { steps, ..args[0].item() },
                // Joining lists or strings copies both into a new one (but a macro's own
                // accumulator grows in place, so it is not counted as copied).
                "_+_" if c.target.is_none() => {
                    let accu = |a: &cel::common::ast::IdedExpr| matches!(&a.expr, Expr::Ident(v) if v.starts_with('@') || v == "__result__");
                    let items = args.iter().map(|a| a.items).fold(0, u64::saturating_add);
                    let bytes = args.iter().map(|a| a.bytes).fold(0, u64::saturating_add);
                    let copied = c.args.iter().zip(&args).filter(|(e, _)| !accu(e)).map(|(_, a)| a.items.saturating_add(a.bytes)).fold(0, u64::saturating_add);
                    Est { steps: steps.saturating_add(copied), items, bytes, in_items: inside.items, in_bytes: inside.bytes }
                }
                // Any other function: a result no larger than its arguments side by side, or
                // a list of their parts (`split`), or their items joined (`join`).
                _ => {
                    let items = args.iter().map(|a| a.items.max(a.bytes)).fold(0, u64::max);
                    let bytes = args.iter().map(|a| a.bytes.saturating_add(a.items.saturating_mul(a.in_bytes))).fold(0, u64::saturating_add);
                    Est { steps, items, bytes, in_items: inside.items, in_bytes: inside.bytes.max(bytes) }
                }
            }
        }
        Expr::Unspecified => Est::leaf(0, 0, 0, 0),
    }
}

/// The longest string anywhere in `v`.
fn longest(v: &Value) -> usize {
    match v {
        Value::String(s) => s.len(),
        Value::Array(a) => a.iter().map(longest).max().unwrap_or(0),
        Value::Object(o) => o.iter().map(|(k, v)| k.len().max(longest(v))).max().unwrap_or(0),
        _ => 0,
    }
}

fn row_to_cel(row: &TapeRow) -> Cel {
    to_cel(&serde_json::to_value(row).unwrap_or_default())
}

fn to_cel(v: &Value) -> Cel {
    match v {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Cel::Int(i),
            None => Cel::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => Cel::String(Arc::new(s.clone())),
        Value::Array(a) => Cel::List(Arc::new(a.iter().map(to_cel).collect())),
        Value::Object(m) => {
            let map: HashMap<Key, Cel> = m.iter().map(|(k, v)| (Key::String(Arc::new(k.clone())), to_cel(v))).collect();
            Cel::Map(Map { map: Arc::new(map) })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_expression_holds_in_one_world_and_not_in_another() {
        let e = Expr::compile("state.repositories.exists(r, r.full_name == 'acme/api' && r.issues.exists(i, i.number == 1 && 'bug' in i.labels))").unwrap();
        let seed = json!({"repositories": [{"full_name": "acme/api", "issues": [{"number": 1, "labels": []}]}]});
        let good = json!({"repositories": [{"full_name": "acme/api", "issues": [{"number": 1, "labels": ["bug"]}]}]});
        assert!(e.evaluate(&World { seed: &seed, state: &good, tape: &[] }).unwrap().holds);
        assert!(!e.evaluate(&World { seed: &seed, state: &seed, tape: &[] }).unwrap().holds);

        let t = Expr::compile("tape.all(r, r.status < 400)").unwrap();
        let row = |seq: u64, status: u16| TapeRow { seq, status, ..TapeRow::default() };
        let ok = [row(1, 200)];
        let bad = [row(1, 200), row(2, 404)];
        let o = t.evaluate(&World { seed: &seed, state: &seed, tape: &ok }).unwrap();
        assert!(o.holds);
        assert_eq!(o.evidence, json!({"expr": "tape"}));
        assert!(!t.evaluate(&World { seed: &seed, state: &seed, tape: &bad }).unwrap().holds);
    }

    fn padded(rows: u64) -> Vec<TapeRow> {
        (1..=rows).map(|seq| TapeRow { seq, status: 200, ..TapeRow::default() }).collect()
    }

    #[test]
    fn a_costly_expression_over_a_short_tape_runs_within_its_bound_obeyed() {
        let s = json!({"items": [1, 2, 3]});
        let tape = padded(10);
        let cubic = Expr::compile("tape.all(a, tape.all(b, tape.exists(c, a.seq + b.seq == c.seq)))").unwrap();
        let o = cubic.evaluate(&World { seed: &s, state: &s, tape: &tape }).unwrap();
        assert!(!o.holds, "1 + 10 is no row's seq");
        assert_eq!(o.reason, "`tape.all(a, tape.all(b, tape.exists(c, a.seq + b.seq == c.seq)))` is false");
        // One macro per level of the data is linear in it, and runs over a long tape too.
        let tape = padded(5000);
        let linear = Expr::compile("tape.all(r, r.status == 200 && r.state_delta.all(d, d.entity != 'refund')) && state.items.exists(i, i == 3)").unwrap();
        assert!(linear.evaluate(&World { seed: &s, state: &s, tape: &tape }).unwrap().holds);
    }

    #[test]
    fn a_tape_padded_past_the_step_bound_fails_the_criterion_and_says_the_agent_reached_it_violated() {
        let s = json!({"items": [1, 2, 3]});
        let tape = padded(5000);
        // Three macros nested over 5,000 rows: 125 billion steps, hours of CPU. The same
        // expression holds over a short tape; the agent's padding must not make it an error.
        let cubic = Expr::compile("tape.all(a, tape.all(b, tape.exists(c, a.seq + b.seq == c.seq)))").unwrap();
        let started = std::time::Instant::now();
        let o = cubic.evaluate(&World { seed: &s, state: &s, tape: &tape }).expect("a bound the agent reached is an outcome, not an error");
        assert!(started.elapsed() < std::time::Duration::from_secs(1), "refused before running");
        assert!(!o.holds);
        assert!(o.reason.starts_with("the tape (5000 rows) and the world the agent left"), "{}", o.reason);
        assert!(o.reason.ends_with("the agent's own calls reached the bound"), "{}", o.reason);
        assert_eq!(o.evidence, json!({"expr": "tape"}));
    }

    #[test]
    fn an_expression_too_costly_for_the_seed_alone_is_an_error_of_the_task_violated() {
        let items: Vec<u64> = (0..1000).collect();
        let s = json!({"items": items});
        let cubic = Expr::compile("state.items.all(a, state.items.all(b, state.items.exists(c, a + b >= c)))").unwrap();
        let err = cubic.evaluate(&World { seed: &s, state: &s, tape: &[] }).unwrap_err();
        assert!(err.contains("over the seed world alone") && err.contains("too costly"), "{err}");
        // The same expression over a small seed runs, and a state the agent grew past the
        // bound fails it instead.
        let small = json!({"items": [1, 2, 3]});
        assert!(cubic.evaluate(&World { seed: &small, state: &small, tape: &[] }).unwrap().holds);
        let o = cubic.evaluate(&World { seed: &small, state: &s, tape: &[] }).unwrap();
        assert!(!o.holds && o.reason.contains("its widest collection 1000 items"), "{}", o.reason);
    }

    #[test]
    fn a_tape_over_the_byte_bound_fails_a_criterion_that_reads_it_and_not_one_that_does_not_violated() {
        let s = json!({"items": [1, 2, 3]});
        let body = pome_tape::Body(vec![b'x'; 1 << 20].into());
        let tape: Vec<TapeRow> = (1..=17).map(|seq| TapeRow { seq, status: 200, request_body: body.clone(), ..TapeRow::default() }).collect();
        let w = World { seed: &s, state: &s, tape: &tape };
        let o = Expr::compile("tape.all(r, r.status == 200)").unwrap().evaluate(&w).unwrap();
        assert!(!o.holds);
        assert!(o.reason.starts_with("the tape is larger than this criterion may read (17 rows,"), "{}", o.reason);
        assert_eq!(o.evidence, json!({"tape": 17}));
        assert!(Expr::compile("state.items.exists(i, i == 3)").unwrap().evaluate(&w).unwrap().holds, "a state criterion never reads the tape");
        let w = World { seed: &s, state: &s, tape: &tape[..15] };
        assert!(Expr::compile("tape.all(r, r.status == 200)").unwrap().evaluate(&w).unwrap().holds, "15 MiB is within the bound");
    }

    #[test]
    fn bad_expressions_say_why() {
        assert!(Expr::compile("state.(").is_err());
        assert!(Expr::compile(&format!("{}true{}", "(".repeat(100), ")".repeat(100))).unwrap_err().contains("nests deeper"));
        assert!(Expr::compile(&"state.a || ".repeat(1000)).unwrap_err().contains("at most"));
        let e = Expr::compile("state.repositories").unwrap();
        let s = json!({"repositories": []});
        assert!(e.evaluate(&World { seed: &s, state: &s, tape: &[] }).unwrap_err().contains("not a bool"));
    }

    /// Found while writing the property tests (#32, item 8): a macro over a list the expression writes
    /// out counted as one item, so five nested over sixty numbers (780 million steps) ran
    /// for minutes instead of being refused.
    #[test]
    fn regression_32_a_macro_over_a_literal_list_counts_its_items() {
        let sixty = format!("[{}]", (0..60).map(|i| i.to_string()).collect::<Vec<_>>().join(","));
        let src = format!("{sixty}.all(a, {sixty}.all(b, {sixty}.all(c, {sixty}.all(d, {sixty}.exists(e, a + b + c + d + e < 0)))))");
        let s = json!({});
        let started = std::time::Instant::now();
        let err = Expr::compile(&src).unwrap().evaluate(&World { seed: &s, state: &s, tape: &[] }).unwrap_err();
        assert!(err.contains("over the seed world alone"), "{err}");
        assert!(started.elapsed() < std::time::Duration::from_secs(1), "refused before running");
        let small = format!("{sixty}.exists(a, {sixty}.exists(b, a + b == 118))");
        assert!(Expr::compile(&small).unwrap().evaluate(&World { seed: &s, state: &s, tape: &[] }).unwrap().holds, "3,600 steps run");
    }

    /// Found while writing the property tests (#32, item 8): a string doubled at each level of nested
    /// macros counted one step per join, so ten levels built gigabytes.
    #[test]
    fn regression_32_strings_joined_in_nested_macros_count_their_bytes() {
        let mut src = "true".to_string();
        for level in (0..10).rev() {
            let v = format!("v{level}");
            let from = if level == 0 { "'abcdefghabcdefgh'".to_string() } else { format!("v{}", level - 1) };
            src = format!("[{}].all({v}, {src})", vec![from; 8].join(" + "));
        }
        let s = json!({});
        let err = Expr::compile(&src).unwrap().evaluate(&World { seed: &s, state: &s, tape: &[] }).unwrap_err();
        assert!(err.contains("over the seed world alone"), "{err}");
        // Built from the agent's bodies instead, the same growth fails the criterion.
        let body = pome_tape::Body(vec![b'x'; 4096].into());
        let tape: Vec<TapeRow> = (1..=300).map(|seq| TapeRow { seq, status: 200, response_body: body.clone(), ..TapeRow::default() }).collect();
        let joined = Expr::compile("tape.all(a, tape.all(b, (string(a.response_body) + string(b.response_body)).size() > 0))").unwrap();
        let o = joined.evaluate(&World { seed: &s, state: &s, tape: &tape }).unwrap();
        assert!(!o.holds && o.reason.ends_with("the agent's own calls reached the bound"), "{}", o.reason);
        assert!(joined.evaluate(&World { seed: &s, state: &s, tape: &tape[..3] }).unwrap().holds);
    }

    /// Properties over hostile expressions (issue #32, item 8): a task file may carry any
    /// expression, and whatever it is, grading answers a verdict or an error within the
    /// criterion's bound: no panic, no hang, no unbounded memory.
    mod properties {
        use super::*;
        use proptest::prelude::*;

        /// Counts the bytes each thread holds, so a property can bound one evaluation's
        /// memory; a watched thread past [`CAP`] is refused memory (the test binary aborts
        /// instead of taking the machine down).
        mod counting {
            use std::alloc::{GlobalAlloc, Layout, System};
            use std::cell::Cell;

            pub const CAP: usize = 2 << 30;

            thread_local! {
                static LIVE: Cell<usize> = const { Cell::new(0) };
                static PEAK: Cell<usize> = const { Cell::new(0) };
                static WATCHED: Cell<bool> = const { Cell::new(false) };
            }

            pub struct Counting;

            fn grow(n: usize) -> bool {
                LIVE.try_with(|live| {
                    let v = live.get().saturating_add(n);
                    live.set(v);
                    PEAK.with(|p| p.set(p.get().max(v)));
                    !(WATCHED.with(Cell::get) && v > CAP)
                })
                .unwrap_or(true)
            }

            fn shrink(n: usize) {
                let _ = LIVE.try_with(|live| live.set(live.get().saturating_sub(n)));
            }

            unsafe impl GlobalAlloc for Counting {
                unsafe fn alloc(&self, l: Layout) -> *mut u8 {
                    if grow(l.size()) { unsafe { System.alloc(l) } } else { std::ptr::null_mut() }
                }
                unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
                    if grow(l.size()) { unsafe { System.alloc_zeroed(l) } } else { std::ptr::null_mut() }
                }
                unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
                    shrink(l.size());
                    unsafe { System.dealloc(p, l) }
                }
                unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
                    if new > l.size() {
                        if !grow(new - l.size()) {
                            return std::ptr::null_mut();
                        }
                    } else {
                        shrink(l.size() - new);
                    }
                    unsafe { System.realloc(p, l, new) }
                }
            }

            /// Count this thread's bytes from zero, with the cap.
            pub fn watch() {
                LIVE.with(|l| l.set(0));
                PEAK.with(|p| p.set(0));
                WATCHED.with(|w| w.set(true));
            }

            /// The most bytes this thread held at once since [`watch`].
            pub fn peak() -> usize {
                PEAK.with(Cell::get)
            }
        }

        #[global_allocator]
        static COUNTING: counting::Counting = counting::Counting;

        fn numbers(k: usize) -> String {
            format!("[{}]", (0..k).map(|i| i.to_string()).collect::<Vec<_>>().join(","))
        }

        /// Any expression: CEL's operators, functions and macros over leaves that reach the
        /// edges (the largest and smallest integers, unicode, empty and long strings, the
        /// world's variables, names nothing binds), nested at random.
        fn expression() -> impl Strategy<Value = String> {
            let leaf = prop_oneof![
                prop::sample::select(vec![
                    "0", "1", "-1", "9223372036854775807", "-9223372036854775808", "18446744073709551615u", "0u", "1.5", "1e308", "-0.0",
                    "'a'", "''", "'é☃𝄞'", "'\\u0000'", "b'\\xff'", "true", "null", "state", "seed", "tape", "state.items", "tape[0]",
                    "tape[0].path", "tape[999]", "params", "nobody", "state.repositories[0].issues", "seed.text", "'(a+)+$'",
                    "duration('1h')", "timestamp('2024-01-01T00:00:00Z')",
                ])
                .prop_map(String::from),
                (0usize..80).prop_map(numbers),
            ];
            let expr = leaf.prop_recursive(5, 40, 3, |inner| {
                let var = prop::sample::select(vec!["v", "w", "x"]);
                let op = prop::sample::select(vec!["+", "-", "*", "/", "%", "==", "!=", "<", "<=", ">", ">=", "&&", "||", "in"]);
                let method = prop::sample::select(vec![
                    "size()", "contains('a')", "startsWith('é')", "endsWith('')", "matches('^(a+)+$')", "matches('(x+x+)+y')", "matches('[')",
                    "lowerAscii()", "upperAscii()", "getFullYear()", "f",
                ]);
                let macro_ = prop::sample::select(vec!["all", "exists", "exists_one", "map", "filter"]);
                let conv = prop::sample::select(vec!["size", "int", "uint", "double", "string", "bytes", "type", "duration", "timestamp", "dyn"]);
                prop_oneof![
                    (inner.clone(), op, inner.clone()).prop_map(|(a, o, b)| format!("({a} {o} {b})")),
                    inner.clone().prop_map(|a| format!("!{a}")),
                    inner.clone().prop_map(|a| format!("-{a}")),
                    (inner.clone(), inner.clone(), inner.clone()).prop_map(|(a, b, c)| format!("({a} ? {b} : {c})")),
                    (inner.clone(), method).prop_map(|(a, m)| format!("{a}.{m}")),
                    (conv, inner.clone()).prop_map(|(f, a)| format!("{f}({a})")),
                    (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("[{a}, {b}]")),
                    (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{{{a}: {b}}}")),
                    (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{a}[{b}]")),
                    (inner.clone(), macro_, var.clone(), inner.clone()).prop_map(|(r, m, v, b)| format!("{r}.{m}({v}, {b})")),
                    (inner.clone(), var, inner.clone(), inner).prop_map(|(r, v, c, b)| format!("{r}.map({v}, {c}, {b})")),
                ]
            });
            prop_oneof![
                6 => expr,
                // Macros nested over lists the expression writes out.
                2 => (2usize..40, 2usize..6, prop::sample::select(vec!["all", "exists", "map", "filter"])).prop_map(|(k, depth, m)| {
                    let list = numbers(k);
                    (0..depth).rev().fold("true".to_string(), |body, d| format!("{list}.{m}(a{d}, {body})"))
                }),
                // Strings and lists joined with themselves at each level of nested macros.
                2 => (1usize..9, 1usize..12, any::<bool>()).prop_map(|(copies, depth, list)| {
                    let start = if list { "[1, 2, 3, 4]" } else { "'é☃abcdefgh'" };
                    (0..depth).rev().fold("true".to_string(), |body, d| {
                        let from = if d == 0 { start.to_string() } else { format!("s{}", d - 1) };
                        format!("[{}].exists(s{d}, {body})", vec![from; copies].join(" + "))
                    })
                }),
                // Macros nested over the tape and the state.
                1 => (1usize..6, prop::sample::select(vec!["tape", "state.items", "seed.repositories"])).prop_map(|(depth, over)| {
                    (0..depth).rev().fold("true".to_string(), |body, d| format!("{over}.exists(r{d}, {body})"))
                }),
                // Nesting near and past the parser's bound, and sources near and past its length.
                1 => (0usize..40).prop_map(|n| format!("{}1 == 1{}", "(".repeat(n), ")".repeat(n))),
                1 => (0usize..40).prop_map(|n| format!("{}1{}.size() > 0", "[".repeat(n), "]".repeat(n))),
                1 => (3000usize..5000).prop_map(|n| format!("'{}'.matches('^(a|aa)*$')", "a".repeat(n))),
                // Arithmetic at the edges.
                1 => prop::sample::select(vec![
                    "9223372036854775807 + 1 > 0", "-9223372036854775808 / -1 > 0", "-9223372036854775808 % -1 == 0", "1 / 0 == 1",
                    "1 % 0 == 1", "1u - 2u > 0u", "18446744073709551615u * 2u > 0u", "-(-9223372036854775808) > 0", "int(1e300) > 0",
                    "uint(-1) > 0u", "int('99999999999999999999') > 0", "duration('9223372036854775807s') > duration('0s')",
                    "timestamp('9999-12-31T23:59:59Z') + duration('876000h') > timestamp('2024-01-01T00:00:00Z')",
                    "timestamp('0001-01-01T00:00:00Z') - duration('1h') < timestamp('2024-01-01T00:00:00Z')",
                    "double(9223372036854775807) == 1.0", "int(-9.3e18) < 0", "1.0 / 0.0 > 0.0", "'é'.size() == 1", "b'\\xff'.size() == 1",
                    "string(b'\\xff') == ''", "size('𝄞') == 1",
                ])
                .prop_map(String::from),
            ]
        }

        fn world() -> (Value, Value, Vec<TapeRow>) {
            let seed = json!({"items": [1, 2, 3], "text": "é☃𝄞", "repositories": [{"name": "api", "issues": [{"number": 1, "labels": ["bug"]}]}]});
            let mut state = seed.clone();
            state["items"] = json!((0..40).collect::<Vec<_>>());
            let body = pome_tape::Body(b"{\"id\":\"cus_1\",\"note\":\"caf\xc3\xa9\"}".repeat(32).into());
            let tape = (1..=25)
                .map(|seq| TapeRow { seq, status: if seq % 5 == 0 { 404 } else { 200 }, method: "POST".into(), path: format!("/v1/customers/{seq}"), response_body: body.clone(), ..TapeRow::default() })
                .collect();
            (seed, state, tape)
        }

        /// Time one criterion may take here: its step bound is about a second of evaluation
        /// on the 2-core machine; the rest is room for a machine shared with other builds.
        const TIME: std::time::Duration = std::time::Duration::from_secs(5);
        /// Memory one evaluation may hold: the bound of steps times what one step may keep.
        const MEMORY: usize = 1 << 30;

        proptest! {
            #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::with_cases(256) })]

            #[test]
            fn any_expression_gets_a_verdict_or_an_error_within_its_bound(src in expression()) {
                let (seed, state, tape) = world();
                let params: std::collections::BTreeMap<String, String> = [("repo".to_string(), "api".to_string())].into();
                let started = std::time::Instant::now();
                let (tx, rx) = std::sync::mpsc::channel();
                let source = src.clone();
                std::thread::spawn(move || {
                    counting::watch();
                    let outcome = std::panic::catch_unwind(|| match Expr::compile(&source) {
                        Ok(e) => e.evaluate_with(&World { seed: &seed, state: &state, tape: &tape }, &params).map(|o| o.holds),
                        Err(e) => Err(e),
                    });
                    let _ = tx.send((outcome.map_err(|_| ()), counting::peak()));
                });
                let (outcome, peak) = rx.recv_timeout(TIME).map_err(|_| TestCaseError::fail(format!("no verdict within {TIME:?}: {src}")))?;
                prop_assert!(outcome.is_ok(), "evaluating `{}` panicked", src);
                prop_assert!(peak < MEMORY, "`{}` held {} bytes", src, peak);
                prop_assert!(started.elapsed() < TIME, "`{}` took {:?}", src, started.elapsed());
            }
        }
    }
}
