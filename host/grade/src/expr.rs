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
        let seed_alone = Sizes { tape: 0, state: widest(w.seed) as u64, row: 0 };
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

/// How many items the collections of a world hold, for [`cost`]: the tape's rows, the
/// widest array or object of the states, and the widest list inside one row.
struct Sizes {
    tape: u64,
    state: u64,
    row: u64,
}

impl Sizes {
    /// Items a macro over `range` visits, at most.
    fn of(&self, range: &cel::common::ast::IdedExpr) -> u64 {
        use cel::common::ast::Expr;
        let mut e = range;
        loop {
            match &e.expr {
                Expr::Select(s) => e = &s.operand,
                Expr::Call(c) if c.target.is_some() => e = c.target.as_deref().expect("checked"),
                // `tape.filter(…).map(…)`: no longer than what the inner macro walked.
                Expr::Comprehension(c) => e = &c.iter_range,
                _ => break,
            }
        }
        match &e.expr {
            Expr::Ident(name) if name == "tape" => self.tape,
            Expr::Ident(name) if name == "state" || name == "seed" => self.state,
            // A macro's own variable (a row, an item of the state): what is inside one.
            Expr::Ident(_) => self.row.max(self.state),
            _ => self.tape.max(self.state).max(self.row),
        }
        .max(1)
    }
}

/// An upper estimate of the steps evaluating `e` takes: a macro's body runs once per item
/// of its range, so nested macros multiply.
fn cost(e: &cel::common::ast::IdedExpr, n: &Sizes) -> u64 {
    use cel::common::ast::{EntryExpr, Expr};
    let entry = |x: &cel::common::ast::IdedEntryExpr| match &x.expr {
        EntryExpr::StructField(f) => cost(&f.value, n),
        EntryExpr::MapEntry(m) => cost(&m.key, n).saturating_add(cost(&m.value, n)),
    };
    let sum = |it: &mut dyn Iterator<Item = u64>| it.fold(1u64, u64::saturating_add);
    match &e.expr {
        Expr::Comprehension(c) => {
            let body = 1u64.saturating_add(cost(&c.loop_cond, n)).saturating_add(cost(&c.loop_step, n));
            sum(&mut [cost(&c.iter_range, n), cost(&c.accu_init, n), n.of(&c.iter_range).saturating_mul(body), cost(&c.result, n)].into_iter())
        }
        Expr::Call(c) => sum(&mut c.target.iter().map(|t| cost(t, n)).chain(c.args.iter().map(|a| cost(a, n)))),
        Expr::List(l) => sum(&mut l.elements.iter().map(|x| cost(x, n))),
        Expr::Map(m) => sum(&mut m.entries.iter().map(entry)),
        Expr::Struct(st) => sum(&mut st.entries.iter().map(entry)),
        Expr::Select(sel) => cost(&sel.operand, n).saturating_add(1),
        _ => 1,
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
}
