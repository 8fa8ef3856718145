//! `expr:` criteria: a CEL expression (https://cel.dev) over one twin's world, for what no
//! declared check covers: `- [code:github] expr: state.repositories.exists(r, r.issues.size() > 2)`.
//!
//! Variables: `state` (the final state export), `seed` (the state right after the seed
//! loaded) and `tape` (the rows, each with `seq`, `method`, `path`, `status`, `action`,
//! `fidelity`, `state_delta`, …). JSON integers become CEL `int`, so `i.number == 1` works.
//! The expression must yield a bool. Evidence: the first tape row the expression names
//! through `tape` is unknowable in general, so an expression's evidence is the substrate it
//! read (`{expr: "state"}` or `{expr: "tape"}`).

use std::collections::HashMap;
use std::sync::Arc;

use cel::objects::{Key, Map};
use cel::{Context, Program, Value as Cel};
use serde_json::{Value, json};

use super::{Outcome, World};
use pome_tape::TapeRow;

/// Longest `expr:` source accepted.
const MAX_SOURCE: usize = 4096;
/// Deepest nesting of brackets accepted.
const MAX_NESTING: usize = 24;
/// Steps an expression may take over one world, estimated before it runs (see [`cost`]):
/// about a second of evaluation. Past it the criterion is `errored`, never a hung finalize.
const MAX_COST: u64 = 20_000_000;

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
        // multiply, and a few nested over a long tape would run for hours.
        let sizes = Sizes {
            tape: w.tape.len() as u64,
            state: widest(w.state).max(widest(w.seed)) as u64,
            row: w.tape.iter().map(|r| r.request_headers.len().max(r.response_headers.len()).max(r.state_delta.len()).max(r.deliveries.len())).max().unwrap_or(0) as u64,
        };
        let steps = cost(self.program.expression(), &sizes);
        if steps > MAX_COST {
            return Err(format!("the expression would take about {steps} steps over this world, over the bound of {MAX_COST}; nest fewer macros"));
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
        ctx.add_variable_from_value("tape", Cel::List(Arc::new(w.tape.iter().map(row_to_cel).collect())));
        let refs = self.program.references();
        let substrate = if refs.has_variable("tape") { "tape" } else { "state" };
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

    #[test]
    fn an_expression_too_costly_for_its_world_is_an_error_before_it_runs() {
        let s = json!({"items": [1, 2, 3]});
        let row = |seq: u64| TapeRow { seq, status: 200, ..TapeRow::default() };
        let tape: Vec<TapeRow> = (1..=5000).map(row).collect();
        let w = World { seed: &s, state: &s, tape: &tape };
        // Three macros nested over 5,000 rows: 125 billion steps, hours of CPU.
        let cubic = Expr::compile("tape.all(a, tape.all(b, tape.exists(c, a.seq + b.seq == c.seq)))").unwrap();
        let started = std::time::Instant::now();
        let err = cubic.evaluate(&w).unwrap_err();
        assert!(err.contains("over the bound"), "{err}");
        assert!(started.elapsed() < std::time::Duration::from_secs(1), "refused before running");
        // One macro per level of the data is linear in it, and runs.
        let linear = Expr::compile("tape.all(r, r.status == 200 && r.state_delta.all(d, d.entity != 'refund')) && state.items.exists(i, i == 3)").unwrap();
        assert!(linear.evaluate(&w).unwrap().holds);
        // The same cubic expression over a short tape is cheap, and runs.
        let short = World { seed: &s, state: &s, tape: &tape[..10] };
        assert!(cubic.evaluate(&short).is_ok());
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
