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
    fn bad_expressions_say_why() {
        assert!(Expr::compile("state.(").is_err());
        assert!(Expr::compile(&format!("{}true{}", "(".repeat(100), ")".repeat(100))).unwrap_err().contains("nests deeper"));
        assert!(Expr::compile(&"state.a || ".repeat(1000)).unwrap_err().contains("at most"));
        let e = Expr::compile("state.repositories").unwrap();
        let s = json!({"repositories": []});
        assert!(e.evaluate(&World { seed: &s, state: &s, tape: &[] }).unwrap_err().contains("not a bool"));
    }
}
