//! Grading: binds each `[code]` criterion sentence to a check its twin declares, evaluates
//! it over the twin's seed state, final state and tape, and turns the results into a score
//! and a verdict (DESIGN §8, issue 5). Plain data in, plain data out: no wasmtime, no I/O
//! beyond an optional judge call, so the server's finalize and an offline `pome eval` run the
//! very same code on the very same inputs.
//!
//! Mechanism: the check *declarations* (id, template, substrate, polarity) come from each
//! twin's `describe()`; their *predicates* are typed Rust here, keyed by check id
//! (`grade::checks`), each returning an evidence pointer (a state path or a tape `seq`).
//! What no template covers is written as `expr: <CEL>` (`grade::expr`). The README says why.

pub mod checks;
pub mod diff;
pub mod expr;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::task::{Criterion, CriterionKind, Task};

/// A check a twin declares in `describe()`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CheckDecl {
    pub id: String,
    pub template: String,
    pub substrate: String,
    pub polarity: String,
    /// A CEL predicate the twin ships with the check (over `state`, `seed`, `tape` and the
    /// template's parameters as strings), for checks this host has no typed predicate for:
    /// how a third-party twin brings its own checks with no host change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicate: Option<String>,
}

/// Every twin's declared checks, by twin name.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Catalog {
    pub twins: BTreeMap<String, Vec<CheckDecl>>,
    /// Per twin, tool names tasks use → the twin's action names (from `describe()`).
    #[serde(default)]
    pub tool_aliases: BTreeMap<String, BTreeMap<String, String>>,
}

impl Catalog {
    /// From `describe()` JSON per twin (the `checks` array).
    pub fn from_descriptions<'a>(descriptions: impl IntoIterator<Item = (&'a String, &'a Value)>) -> Catalog {
        let mut twins = BTreeMap::new();
        let mut tool_aliases = BTreeMap::new();
        for (name, d) in descriptions {
            twins.insert(name.clone(), serde_json::from_value(d.get("checks").cloned().unwrap_or(json!([]))).unwrap_or_default());
            tool_aliases.insert(name.clone(), serde_json::from_value(d.get("tool_aliases").cloned().unwrap_or(json!({}))).unwrap_or_default());
        }
        Catalog { twins, tool_aliases }
    }

    pub fn from_app(app: &crate::server::App) -> Catalog {
        let descs: Vec<(String, Value)> = app.twins.iter().map(|(n, i)| (n.clone(), i.description_json.clone())).collect();
        Catalog::from_descriptions(descs.iter().map(|(n, d)| (n, d)))
    }
}

/// What a `[code]` criterion bound to.
#[derive(Debug, Clone)]
pub enum Binding {
    /// A declared check; `declared` is the twin's own CEL predicate when the host has no
    /// typed one for this id.
    Check { decl: CheckDecl, params: BTreeMap<String, String>, declared: Option<expr::Expr> },
    Expr(expr::Expr),
    Unmatched(String),
}

/// Bind one `[code]` criterion of `twin`.
pub fn bind(catalog: &Catalog, twin: &str, text: &str) -> Binding {
    if let Some(source) = text.strip_prefix("expr:") {
        return match expr::Expr::compile(source.trim()) {
            Ok(e) => Binding::Expr(e),
            Err(e) => Binding::Unmatched(format!("the expression does not compile: {e}")),
        };
    }
    let Some(decls) = catalog.twins.get(twin) else {
        return Binding::Unmatched(format!("this host has no `{twin}` twin, so nothing can decide this"));
    };
    let text = text.trim().trim_end_matches('.');
    // The most specific template wins: the one with the most literal text.
    let mut best: Option<(usize, &CheckDecl, BTreeMap<String, String>)> = None;
    for d in decls {
        if let Some(params) = match_template(&d.template, text) {
            let literal = literal_len(&d.template);
            if best.as_ref().is_none_or(|(l, _, _)| literal > *l) {
                best = Some((literal, d, params));
            }
        }
    }
    // A tool the twin knows by another name also matches its action (`_action`).
    let best = best.map(|(l, d, mut params)| {
        let alias = params.get("tool").and_then(|t| catalog.tool_aliases.get(twin)?.get(t.trim())).cloned();
        if let Some(action) = alias {
            params.insert("_action".to_string(), action);
        }
        (l, d, params)
    });
    match best {
        Some((_, decl, params)) if checks::KNOWN.contains(&decl.id.as_str()) => match checks::validate(&decl.id, &params) {
            Ok(()) => Binding::Check { decl: decl.clone(), params, declared: None },
            Err(why) => Binding::Unmatched(format!("matches `{}` but {why}", decl.template)),
        },
        Some((_, decl, params)) => match &decl.predicate {
            Some(source) => match expr::Expr::compile(source) {
                Ok(e) => Binding::Check { decl: decl.clone(), params, declared: Some(e) },
                Err(e) => Binding::Unmatched(format!("check `{}` declares a predicate that does not compile: {e}", decl.id)),
            },
            None => Binding::Unmatched(format!(
                "matches check `{}`, which this host has no predicate for and the twin declares none; write it as `expr: <CEL>`",
                decl.id
            )),
        },
        None => Binding::Unmatched(format!("no check the {twin} twin declares has this sentence (see `pome checks {twin}`)")),
    }
}

fn literal_len(template: &str) -> usize {
    let mut n = 0;
    let mut depth = 0;
    for c in template.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            _ if depth == 0 => n += 1,
            _ => {}
        }
    }
    n
}

/// Match `sentence` against a template with `{param}` holes; each hole takes non-empty text.
/// Literals compare exactly except for letter case of the first character.
pub fn match_template(template: &str, sentence: &str) -> Option<BTreeMap<String, String>> {
    enum Part<'a> {
        Lit(&'a str),
        Hole(&'a str),
    }
    let mut parts = Vec::new();
    let mut rest = template;
    while let Some(i) = rest.find('{') {
        if i > 0 {
            parts.push(Part::Lit(&rest[..i]));
        }
        let j = rest[i..].find('}')? + i;
        parts.push(Part::Hole(&rest[i + 1..j]));
        rest = &rest[j + 1..];
    }
    if !rest.is_empty() {
        parts.push(Part::Lit(rest));
    }
    fn go<'a>(parts: &[Part<'a>], s: &str, out: &mut Vec<(&'a str, String)>) -> bool {
        match parts.split_first() {
            None => s.is_empty(),
            Some((Part::Lit(l), tail)) => s.strip_prefix(l).is_some_and(|s| go(tail, s, out)),
            Some((Part::Hole(name), tail)) => {
                // Shortest hole first; a hole never spans a backtick or a double quote that
                // the template puts right after it.
                for k in (1..=s.len()).filter(|&k| s.is_char_boundary(k)) {
                    out.push((name, s[..k].to_string()));
                    if go(tail, &s[k..], out) {
                        return true;
                    }
                    out.pop();
                }
                false
            }
        }
    }
    let mut out = Vec::new();
    let s = sentence.trim();
    let ok = go(&parts, s, &mut out) || {
        // `a Slack…`/`A Slack…`: tolerate the case of the sentence's first letter.
        let mut c = s.chars();
        let flipped: String = match c.next() {
            Some(f) if f.is_lowercase() => f.to_uppercase().chain(c).collect(),
            Some(f) => f.to_lowercase().chain(c).collect(),
            None => String::new(),
        };
        out.clear();
        go(&parts, &flipped, &mut out)
    };
    ok.then(|| out.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

/// One twin's side of a run: the three things checks may read.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct TwinRun {
    pub initial_state: Value,
    pub final_state: Value,
    /// Tape rows as JSON (`tape::TapeRow`'s serde form).
    pub tape: Vec<Value>,
}

/// What the grader reads: per twin, seed state, final state and tape.
pub type RunData = BTreeMap<String, TwinRun>;

/// The run data out of a persisted run body (`per_twin.<twin>.{initial_state, final_state, tape}`).
pub fn run_data(run: &Value) -> RunData {
    run["per_twin"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    (k.clone(), TwinRun {
                        initial_state: v["initial_state"].clone(),
                        final_state: v["final_state"].clone(),
                        tape: v["tape"].as_array().cloned().unwrap_or_default(),
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

/// What a check's predicate sees: one world (a seed, a state and the tape that led there).
pub struct World<'a> {
    pub seed: &'a Value,
    pub state: &'a Value,
    pub tape: &'a [Value],
}

/// A predicate's answer: whether it holds, why, and where the deciding evidence is.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub holds: bool,
    pub reason: String,
    pub evidence: Value,
}

impl Outcome {
    pub fn new(holds: bool, reason: impl Into<String>, evidence: Value) -> Outcome {
        Outcome { holds, reason: reason.into(), evidence }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Passed,
    Failed,
    Skipped,
    Unmatched,
    Errored,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CriterionResult {
    pub index: usize,
    pub kind: String,
    pub twin: Option<String>,
    pub text: String,
    pub status: Status,
    /// One line.
    pub reason: String,
    /// `{twin, state: "<path>"}` or `{twin, seq: N}`; null when nothing was read.
    pub evidence: Value,
    pub check_id: Option<String>,
    pub always_scored: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Grade {
    /// round(100 × passed / (passed + failed)); null when nothing was scored.
    pub score: Option<u32>,
    /// `pass`, `fail` or `incomplete`.
    pub verdict: String,
    pub pass_threshold: u32,
    pub criteria_results: Vec<CriterionResult>,
}

/// An OpenAI-compatible chat endpoint that judges `[model]` criteria.
#[derive(Debug, Clone)]
pub struct Judge {
    pub url: String,
    pub model: String,
    pub key: Option<String>,
}

impl Judge {
    /// `POME_JUDGE_URL`, `POME_JUDGE_MODEL`, `POME_JUDGE_API_KEY`; none without a URL.
    pub fn from_env() -> Option<Judge> {
        let url = std::env::var("POME_JUDGE_URL").ok().filter(|u| !u.is_empty())?;
        Some(Judge {
            url,
            model: std::env::var("POME_JUDGE_MODEL").unwrap_or_else(|_| "gpt-4o-mini".into()),
            key: std::env::var("POME_JUDGE_API_KEY").ok().filter(|k| !k.is_empty()),
        })
    }
}

/// Grade a run against a task. `judge` decides `[model]` criteria; without one they are
/// skipped and the verdict is `incomplete`, never a silent pass.
pub async fn grade(task: &Task, run: &RunData, catalog: &Catalog, judge: Option<&Judge>) -> Grade {
    let mut results: Vec<CriterionResult> = task.criteria.iter().map(|c| grade_code(c, run, catalog)).collect();
    for (c, r) in task.criteria.iter().zip(results.iter_mut()) {
        if c.kind == CriterionKind::Model {
            *r = match judge {
                None => result(c, Status::Skipped, "no_judge_configured: set POME_JUDGE_URL (an OpenAI-compatible chat endpoint) to judge [model] criteria", Value::Null, None),
                Some(j) => judge_one(j, task, c, run).await,
            };
        }
    }
    verdict(results, task.config.pass_threshold)
}

/// Score and verdict from per-criterion results (issue 5's arithmetic).
pub fn verdict(results: Vec<CriterionResult>, pass_threshold: u32) -> Grade {
    let count = |s: Status| results.iter().filter(|r| r.status == s).count();
    let (passed, failed) = (count(Status::Passed), count(Status::Failed));
    let seed_excluded = results.iter().filter(|r| r.status == Status::Skipped && r.reason.starts_with("already_true_in_seed")).count();
    let unevaluable = results.len() - passed - failed - seed_excluded;
    let score = (passed + failed > 0).then(|| ((100 * passed) as f64 / (passed + failed) as f64).round() as u32);
    let verdict = match score {
        _ if unevaluable > 0 => "incomplete",
        None => "incomplete",
        Some(s) if s >= pass_threshold => "pass",
        Some(_) => "fail",
    };
    Grade { score, verdict: verdict.into(), pass_threshold, criteria_results: results }
}

fn result(c: &Criterion, status: Status, reason: impl Into<String>, evidence: Value, check_id: Option<String>) -> CriterionResult {
    let reason: String = reason.into();
    CriterionResult {
        index: c.index,
        kind: match c.kind {
            CriterionKind::Code => "code".into(),
            CriterionKind::Model => "model".into(),
        },
        twin: c.twin.clone(),
        text: c.text.clone(),
        status,
        reason: reason.lines().next().unwrap_or_default().to_string(),
        evidence,
        check_id,
        always_scored: c.always_scored,
    }
}

fn with_twin(evidence: Value, twin: &str) -> Value {
    match evidence {
        Value::Object(mut m) => {
            m.insert("twin".into(), json!(twin));
            Value::Object(m)
        }
        Value::Null => Value::Null,
        other => json!({"twin": twin, "at": other}),
    }
}

fn grade_code(c: &Criterion, run: &RunData, catalog: &Catalog) -> CriterionResult {
    if c.kind != CriterionKind::Code {
        return result(c, Status::Skipped, "not a [code] criterion", Value::Null, None);
    }
    let twin = c.twin.as_deref().unwrap_or_default();
    let binding = bind(catalog, twin, &c.text);
    let check_id = match &binding {
        Binding::Check { decl, .. } => Some(decl.id.clone()),
        Binding::Expr(_) => Some("expr".into()),
        Binding::Unmatched(_) => None,
    };
    let eval = |w: &World| -> Result<Outcome, String> {
        match &binding {
            Binding::Check { declared: Some(e), params, .. } => e.evaluate_with(w, params),
            Binding::Check { decl, params, .. } => checks::evaluate(&decl.id, params, w),
            Binding::Expr(e) => e.evaluate(w),
            Binding::Unmatched(_) => unreachable!(),
        }
    };
    if let Binding::Unmatched(why) = &binding {
        return result(c, Status::Unmatched, why.clone(), Value::Null, None);
    }
    let Some(tr) = run.get(twin) else {
        return result(c, Status::Errored, format!("the run has no `{twin}` twin"), Value::Null, check_id);
    };
    if !c.always_scored {
        let seed_world = World { seed: &tr.initial_state, state: &tr.initial_state, tape: &[] };
        if let Ok(o) = eval(&seed_world)
            && o.holds
        {
            return result(c, Status::Skipped, format!("already_true_in_seed: {}", o.reason), with_twin(o.evidence, twin), check_id);
        }
    }
    let world = World { seed: &tr.initial_state, state: &tr.final_state, tape: &tr.tape };
    match eval(&world) {
        Ok(o) => result(c, if o.holds { Status::Passed } else { Status::Failed }, o.reason, with_twin(o.evidence, twin), check_id),
        Err(e) => result(c, Status::Errored, e, Value::Null, check_id),
    }
}

/// Ask the judge one `[model]` criterion, with the prompt, the expected behaviour and the
/// tapes (truncated) as the record of what the agent did.
async fn judge_one(j: &Judge, task: &Task, c: &Criterion, run: &RunData) -> CriterionResult {
    let mut record = String::new();
    for (twin, tr) in run {
        for row in &tr.tape {
            record.push_str(&format!(
                "[{twin} seq {}] {} {} -> {} {}\n  request: {}\n  response: {}\n",
                row["seq"], row["method"].as_str().unwrap_or(""), row["path"].as_str().unwrap_or(""), row["status"],
                row["action"].as_str().unwrap_or(""),
                truncate(row["request_body"].as_str().unwrap_or(""), 600),
                truncate(row["response_body"].as_str().unwrap_or(""), 600),
            ));
        }
    }
    let prompt = format!(
        "You grade an AI agent's run. Task prompt:\n{}\n\nExpected behaviour:\n{}\n\nEvery API call the agent made:\n{}\n\nCriterion: {}\n\nAnswer with PASS or FAIL on the first line, then one line of reason.",
        task.prompt, task.expected_behavior.as_deref().unwrap_or("(none given)"), truncate(&record, 60_000), c.text
    );
    let body = json!({"model": j.model, "temperature": 0, "messages": [{"role": "user", "content": prompt}]});
    let mut req = reqwest::Client::new().post(&j.url).json(&body).timeout(std::time::Duration::from_secs(120));
    if let Some(k) = &j.key {
        req = req.bearer_auth(k);
    }
    let answer = async {
        let resp = req.send().await.map_err(|e| e.to_string())?;
        let status = resp.status();
        let v: Value = resp.json().await.map_err(|e| e.to_string())?;
        if !status.is_success() {
            return Err(format!("HTTP {status}: {v}"));
        }
        v["choices"][0]["message"]["content"].as_str().map(String::from).ok_or_else(|| format!("no choices[0].message.content in {v}"))
    }
    .await;
    match answer {
        Ok(text) => {
            let mut lines = text.trim().lines();
            let first = lines.next().unwrap_or("").trim().to_ascii_uppercase();
            let reason = lines.next().unwrap_or("").trim().to_string();
            let ev = json!({"judge": j.model});
            if first.starts_with("PASS") {
                result(c, Status::Passed, format!("judge: {reason}"), ev, None)
            } else if first.starts_with("FAIL") {
                result(c, Status::Failed, format!("judge: {reason}"), ev, None)
            } else {
                result(c, Status::Errored, format!("the judge answered neither PASS nor FAIL: {}", truncate(&text, 200)), ev, None)
            }
        }
        Err(e) => result(c, Status::Errored, format!("the judge could not be asked: {e}"), Value::Null, None),
    }
}

fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// Binding report for `pome tasks validate` and `POST /v1/tasks/validate`: every `[code]`
/// criterion with the check it binds to, or why it binds to none.
pub fn bindings(task: &Task, catalog: &Catalog) -> Vec<Value> {
    task.criteria
        .iter()
        .map(|c| {
            let base = json!({"index": c.index, "line": c.line, "kind": c.kind, "twin": c.twin, "text": c.text});
            let mut v = base;
            match c.kind {
                CriterionKind::Model => v["binding"] = json!("judge"),
                CriterionKind::Code => match bind(catalog, c.twin.as_deref().unwrap_or_default(), &c.text) {
                    Binding::Check { decl, params, .. } => {
                        v["binding"] = json!(decl.id);
                        v["params"] = json!(params);
                    }
                    Binding::Expr(_) => v["binding"] = json!("expr"),
                    Binding::Unmatched(why) => {
                        v["binding"] = Value::Null;
                        v["unmatched"] = json!(why);
                    }
                },
            }
            v
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(status: Status, reason: &str) -> CriterionResult {
        CriterionResult { index: 1, kind: "code".into(), twin: None, text: String::new(), status, reason: reason.into(), evidence: Value::Null, check_id: None, always_scored: false }
    }

    #[test]
    fn verdict_arithmetic() {
        use Status::*;
        let g = verdict(vec![r(Passed, ""), r(Passed, ""), r(Failed, "")], 100);
        assert_eq!((g.score, g.verdict.as_str()), (Some(67), "fail"));
        let g = verdict(vec![r(Passed, ""), r(Passed, ""), r(Failed, "")], 60);
        assert_eq!((g.score, g.verdict.as_str()), (Some(67), "pass"));
        let g = verdict(vec![r(Passed, ""), r(Skipped, "already_true_in_seed: x")], 100);
        assert_eq!((g.score, g.verdict.as_str()), (Some(100), "pass"), "seed-excluded criteria do not make it incomplete");
        let g = verdict(vec![r(Passed, ""), r(Skipped, "no_judge_configured")], 100);
        assert_eq!((g.score, g.verdict.as_str()), (Some(100), "incomplete"));
        let g = verdict(vec![r(Passed, ""), r(Unmatched, "")], 100);
        assert_eq!(g.verdict, "incomplete");
        let g = verdict(vec![r(Passed, ""), r(Errored, "")], 100);
        assert_eq!(g.verdict, "incomplete");
        let g = verdict(vec![r(Skipped, "already_true_in_seed: x")], 100);
        assert_eq!((g.score, g.verdict.as_str()), (None, "incomplete"), "nothing evaluated");
        let g = verdict(vec![r(Passed, ""), r(Failed, ""), r(Failed, "")], 0);
        assert_eq!((g.score, g.verdict.as_str()), (Some(33), "pass"));
        let g = verdict(vec![r(Failed, "")], 0);
        assert_eq!((g.score, g.verdict.as_str()), (Some(0), "pass"), "score 0 meets threshold 0");
    }

    #[tokio::test]
    async fn a_twin_declared_cel_predicate_decides_its_check_with_no_host_change() {
        let desc = json!({"checks": [{
            "id": "acme.ticket_closed", "template": "Ticket {ticket} is closed", "substrate": "final", "polarity": "positive",
            "predicate": "state.tickets.exists(t, string(t.id) == ticket && t.closed)"
        }]});
        let catalog = Catalog::from_descriptions([(&"acme".to_string(), &desc)]);
        let md = "# T\n## Prompt\nClose it.\n## Success Criteria\n- [code] Ticket 7 is closed\n## Config\ntwins: [acme]\n";
        let task = crate::task::parse("t.md", "t", md, None).unwrap();
        let world = |closed: bool| {
            let mut run = RunData::new();
            run.insert("acme".into(), TwinRun {
                initial_state: json!({"tickets": [{"id": 7, "closed": false}]}),
                final_state: json!({"tickets": [{"id": 7, "closed": closed}]}),
                tape: vec![],
            });
            run
        };
        let g = grade(&task, &world(true), &catalog, None).await;
        assert_eq!((g.verdict.as_str(), g.criteria_results[0].check_id.as_deref()), ("pass", Some("acme.ticket_closed")), "{g:?}");
        let g = grade(&task, &world(false), &catalog, None).await;
        assert_eq!(g.verdict, "fail", "{g:?}");
        let broken = json!({"checks": [{"id": "acme.ticket_closed", "template": "Ticket {ticket} is closed", "substrate": "final", "polarity": "positive"}]});
        let catalog = Catalog::from_descriptions([(&"acme".to_string(), &broken)]);
        let g = grade(&task, &world(true), &catalog, None).await;
        assert_eq!(g.criteria_results[0].status, Status::Unmatched, "no predicate anywhere is never a pass");
    }

    #[tokio::test]
    async fn model_criteria_go_to_the_configured_judge() {
        use axum::{Json, Router, routing::post};
        let app = Router::new().route(
            "/v1/chat/completions",
            post(|Json(body): Json<Value>| async move {
                let prompt = body["messages"][0]["content"].as_str().unwrap_or("").to_string();
                let verdict = if prompt.contains("Criterion: It merged") { "PASS" } else { "FAIL" };
                Json(json!({"choices": [{"message": {"content": format!("{verdict}\nseen on the tape")}}]}))
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        let judge = Judge { url: format!("http://{addr}/v1/chat/completions"), model: "fake".into(), key: Some("k".into()) };
        let md = "# T\n## Prompt\nMerge.\n## Success Criteria\n- [model] It merged\n- [model] It sang\n## Config\ntwins: [github]\n";
        let task = crate::task::parse("t.md", "t", md, None).unwrap();
        let mut run = RunData::new();
        run.insert("github".into(), TwinRun::default());
        let g = grade(&task, &run, &Catalog::default(), Some(&judge)).await;
        assert_eq!(g.criteria_results[0].status, Status::Passed, "{g:?}");
        assert_eq!(g.criteria_results[0].reason, "judge: seen on the tape");
        assert_eq!(g.criteria_results[1].status, Status::Failed);
        assert_eq!((g.score, g.verdict.as_str()), (Some(50), "fail"));
        let nobody = Judge { url: "http://127.0.0.1:9/none".into(), model: "x".into(), key: None };
        let g = grade(&task, &run, &Catalog::default(), Some(&nobody)).await;
        assert_eq!(g.criteria_results[0].status, Status::Errored, "an unreachable judge is an error, not a pass");
        assert_eq!(g.verdict, "incomplete");
    }

    #[test]
    fn a_tool_named_by_its_alias_binds_to_the_twins_action() {
        let desc = json!({
            "checks": [{"id": "github.tool_called", "template": "`{tool}` was called", "substrate": "tape", "polarity": "positive"}],
            "tool_aliases": {"create_check_run": "checks.create"},
        });
        let catalog = Catalog::from_descriptions([(&"github".to_string(), &desc)]);
        match bind(&catalog, "github", "`create_check_run` was called") {
            Binding::Check { params, .. } => assert_eq!(params["_action"], "checks.create"),
            other => panic!("did not bind: {other:?}"),
        }
        match bind(&catalog, "github", "`merge_pull_request` was called") {
            Binding::Check { params, .. } => assert!(!params.contains_key("_action"), "no alias declared"),
            other => panic!("did not bind: {other:?}"),
        }
    }

    #[test]
    fn templates_match_with_params() {
        let p = match_template("Issue #{issue} in `{repo}` is in state {state}", "Issue #1 in `acme/api` is in state open").unwrap();
        assert_eq!(p["issue"], "1");
        assert_eq!(p["repo"], "acme/api");
        assert_eq!(p["state"], "open");
        assert!(match_template("`{tool}` was called", "`create_commit_status` was never called").is_none());
        let p = match_template("Pull request #{pr} in `{repo}` is {state}", "Pull request #1 in `a/b` is not merged").unwrap();
        assert_eq!(p["state"], "not merged");
    }
}
