//! `pome compare A B`: two sets of trials side by side, task by task. Each side is a trial
//! group, an agent version (as `pome run --agent-version` recorded it on its runs) or run
//! directories; for each task it shows both pass rates with their 95 % intervals, the
//! difference B − A with its interval and whether it is beyond noise, and the criteria whose
//! outcome changed most; then one line saying which differences are beyond noise.
//!
//! The numbers are `pome_grade::stats`' (Wilson for a rate, Newcombe for a difference), the
//! same the dashboard's task page shows. A is the baseline and B the candidate: "better"
//! means B passes more often. Exit code: 0, or with `--fail-on-regression` 1 when B is worse
//! beyond noise on some task (for CI); 5 when a side names nothing, 2/3 when the server
//! cannot be asked.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::client::{Client, ClientArgs, Failure, exit, fail, finish};
use pome_grade::stats::{self, Difference, Rate};

/// `pome compare` arguments.
#[derive(clap::Args, Debug)]
pub struct CompareArgs {
    /// The baseline: `group:ID`, `version:V` or `dir:PATH`; without a prefix, an existing
    /// directory is run directories (every run under it, any depth), `grp_…` a trial group,
    /// anything else an agent version.
    pub a: String,
    /// The candidate, named the same ways; differences are B − A.
    pub b: String,
    /// Only this task (repeat for more); every task either side ran by default.
    #[arg(long = "task", value_name = "TASK")]
    pub tasks: Vec<String>,
    /// Criteria listed per task: those whose pass fraction changed most.
    #[arg(long, default_value_t = 3)]
    pub criteria: usize,
    /// Print the comparison as JSON.
    #[arg(long)]
    pub json: bool,
    /// Exit 1 when B is worse than A beyond noise on any task.
    #[arg(long)]
    pub fail_on_regression: bool,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// Where one side's trials come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Side {
    /// Every run directory (a `meta.json` and a `verdict.json`) under this one.
    Dir(PathBuf),
    /// The runs of one trial group on the server.
    Group(String),
    /// The runs recorded with this agent version on the server.
    Version(String),
}

impl Side {
    /// `group:X`, `version:X`, `dir:X`; bare, an existing directory, a `grp_…` id, or else a
    /// version.
    pub fn parse(s: &str) -> Result<Side, String> {
        let nonempty = |kind: &str, v: &str| if v.is_empty() { Err(format!("`{s}` names no {kind}")) } else { Ok(v.to_string()) };
        if let Some(v) = s.strip_prefix("group:") {
            return Ok(Side::Group(nonempty("trial group", v)?));
        }
        if let Some(v) = s.strip_prefix("version:") {
            return Ok(Side::Version(nonempty("agent version", v)?));
        }
        if let Some(v) = s.strip_prefix("dir:") {
            return Ok(Side::Dir(PathBuf::from(nonempty("directory", v)?)));
        }
        if s.is_empty() {
            return Err("an empty side: give a trial group, an agent version or a run directory".into());
        }
        if Path::new(s).is_dir() {
            Ok(Side::Dir(PathBuf::from(s)))
        } else if s.starts_with("grp_") {
            Ok(Side::Group(s.to_string()))
        } else {
            Ok(Side::Version(s.to_string()))
        }
    }

    /// How the side is named in the output.
    pub fn label(&self) -> String {
        match self {
            Side::Dir(p) => format!("dir:{}", p.display()),
            Side::Group(g) => format!("group:{g}"),
            Side::Version(v) => format!("version:{v}"),
        }
    }
}

/// One graded trial as a comparison sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Trial {
    pub task: String,
    pub passed: bool,
    /// Each criterion (by its text) and whether it passed.
    pub criteria: Vec<(String, bool)>,
}

impl Trial {
    /// From a verdict and its `criteria_results` (or a listing's `criteria`): `[{text, status}]`.
    pub fn from_json(task: &str, verdict: &str, criteria: &Value) -> Trial {
        let criteria = criteria
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| Some((c["text"].as_str()?.to_string(), c["status"] == "passed")))
            .collect();
        Trial { task: task.to_string(), passed: verdict == "pass", criteria }
    }
}

/// A side as the output names it.
#[derive(Debug, Clone, Serialize)]
pub struct SideSummary {
    pub label: String,
    /// Graded trials found.
    pub trials: usize,
}

/// How often one criterion passed on each side, and the change B − A of that fraction.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CriterionChange {
    pub text: String,
    pub a: Rate,
    pub b: Rate,
    pub change: f64,
}

/// One task: both rates, their difference (when both sides ran it), the criteria that moved.
#[derive(Debug, Clone, Serialize)]
pub struct TaskComparison {
    pub task: String,
    pub a: Option<Rate>,
    pub b: Option<Rate>,
    pub difference: Option<Difference>,
    pub criteria: Vec<CriterionChange>,
}

/// Which tasks differ beyond noise, and which way.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct Summary {
    /// Tasks both sides ran.
    pub compared: usize,
    pub better: Vec<String>,
    pub worse: Vec<String>,
    pub only_in_a: Vec<String>,
    pub only_in_b: Vec<String>,
    /// The line the text output ends with.
    pub line: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub a: SideSummary,
    pub b: SideSummary,
    pub tasks: Vec<TaskComparison>,
    pub summary: Summary,
}

/// Compare the trials of two sides, task by task; at most `top` changed criteria per task.
pub fn compare(a: (&str, &[Trial]), b: (&str, &[Trial]), top: usize) -> Comparison {
    let by_task = |trials: &[Trial]| {
        let mut m: BTreeMap<String, Vec<Trial>> = BTreeMap::new();
        for t in trials {
            m.entry(t.task.clone()).or_default().push(t.clone());
        }
        m
    };
    let (ta, tb) = (by_task(a.1), by_task(b.1));
    let rate = |ts: Option<&Vec<Trial>>| ts.map(|ts| Rate::of(ts.iter().filter(|t| t.passed).count() as u64, ts.len() as u64));
    let mut tasks = Vec::new();
    let mut summary = Summary::default();
    let names: std::collections::BTreeSet<&String> = ta.keys().chain(tb.keys()).collect();
    for task in names {
        let (sa, sb) = (ta.get(task), tb.get(task));
        let (ra, rb) = (rate(sa), rate(sb));
        let difference = match (ra, rb) {
            (Some(x), Some(y)) => Some(stats::difference(x, y)),
            _ => None,
        };
        match (&difference, sa, sb) {
            (Some(d), _, _) => {
                summary.compared += 1;
                if d.beyond_noise {
                    if d.delta > 0.0 { &mut summary.better } else { &mut summary.worse }.push(task.clone());
                }
            }
            (None, Some(_), None) => summary.only_in_a.push(task.clone()),
            _ => summary.only_in_b.push(task.clone()),
        }
        let criteria = match (sa, sb) {
            (Some(sa), Some(sb)) => criteria_changes(sa, sb, top),
            _ => Vec::new(),
        };
        tasks.push(TaskComparison { task: task.clone(), a: ra, b: rb, difference, criteria });
    }
    summary.line = summary_line(&summary);
    Comparison {
        a: SideSummary { label: a.0.to_string(), trials: a.1.len() },
        b: SideSummary { label: b.0.to_string(), trials: b.1.len() },
        tasks,
        summary,
    }
}

/// The criteria both sides graded whose pass fraction changed, biggest change first (then by
/// text, so the order is stable); at most `top`. A criterion is known by its text, so a task
/// edited between the sides still lines up wherever its sentences stayed.
fn criteria_changes(a: &[Trial], b: &[Trial], top: usize) -> Vec<CriterionChange> {
    let tally = |trials: &[Trial]| {
        let mut m: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        for t in trials {
            for (text, passed) in &t.criteria {
                let e = m.entry(text.clone()).or_default();
                e.0 += u64::from(*passed);
                e.1 += 1;
            }
        }
        m
    };
    let (ca, cb) = (tally(a), tally(b));
    let mut out: Vec<CriterionChange> = ca
        .iter()
        .filter_map(|(text, &(pa, na))| {
            let &(pb, nb) = cb.get(text)?;
            let (ra, rb) = (Rate::of(pa, na), Rate::of(pb, nb));
            let change = rb.rate - ra.rate;
            (change.abs() > 1e-12).then(|| CriterionChange { text: text.clone(), a: ra, b: rb, change })
        })
        .collect();
    out.sort_by(|x, y| y.change.abs().total_cmp(&x.change.abs()).then_with(|| x.text.cmp(&y.text)));
    out.truncate(top);
    out
}

fn summary_line(s: &Summary) -> String {
    let differ = s.better.len() + s.worse.len();
    let tasks = |n: usize| if n == 1 { "task" } else { "tasks" };
    if s.compared == 0 {
        return "no task was run on both sides: nothing to compare".into();
    }
    if differ == 0 {
        return format!("no difference beyond noise ({} {} compared)", s.compared, tasks(s.compared));
    }
    let mut parts = Vec::new();
    if !s.better.is_empty() {
        parts.push(format!("{} better ({})", s.better.len(), s.better.join(", ")));
    }
    if !s.worse.is_empty() {
        parts.push(format!("{} worse ({})", s.worse.len(), s.worse.join(", ")));
    }
    let verb = if differ == 1 { "differs" } else { "differ" };
    format!("{differ} of {} {} {verb} beyond noise: {}", s.compared, tasks(s.compared), parts.join(", "))
}

/// `3/3 100% [44–100]`
pub fn rate_text(r: &Rate) -> String {
    format!("{}/{} {}% [{}–{}]", r.passed, r.trials, pts(r.rate), pts(r.low), pts(r.high))
}

/// A fraction in whole percent, halves away from zero (as the dashboard rounds).
fn pts(x: f64) -> i64 {
    (100.0 * x).round() as i64
}

/// `-100 pts [-100, -21]`
pub fn difference_text(d: &Difference) -> String {
    format!("{} pts [{}, {}]", signed_pts(d.delta), signed_pts(d.low), signed_pts(d.high))
}

/// A fraction as signed percentage points, `+50`, `-21`, `0`.
fn signed_pts(x: f64) -> String {
    match pts(x) {
        0 => "0".into(),
        p => format!("{p:+}"),
    }
}

/// The comparison as the text output prints it.
pub fn render(c: &Comparison) -> String {
    let mut rows: Vec<[String; 5]> = vec![[
        "task".into(),
        format!("A {}", c.a.label),
        format!("B {}", c.b.label),
        "B − A (95%)".into(),
        String::new(),
    ]];
    for t in &c.tasks {
        let dash = || "—".to_string();
        let verdict = match &t.difference {
            Some(d) if d.beyond_noise => "beyond noise".to_string(),
            Some(_) => "noise".to_string(),
            None if t.a.is_some() => "only in A".to_string(),
            None => "only in B".to_string(),
        };
        rows.push([
            t.task.clone(),
            t.a.as_ref().map_or_else(dash, rate_text),
            t.b.as_ref().map_or_else(dash, rate_text),
            t.difference.as_ref().map_or_else(dash, difference_text),
            verdict,
        ]);
    }
    let mut out = crate::table::aligned(&rows);
    for t in c.tasks.iter().filter(|t| !t.criteria.is_empty()) {
        out.push_str(&format!("\n{}: criteria that changed most (A → B)\n", t.task));
        for ch in &t.criteria {
            out.push_str(&format!(
                "  {:>5} pts  {}/{} → {}/{}  {}\n",
                signed_pts(ch.change),
                ch.a.passed,
                ch.a.trials,
                ch.b.passed,
                ch.b.trials,
                ch.text
            ));
        }
    }
    out.push('\n');
    out.push_str(&c.summary.line);
    out.push('\n');
    out
}

pub async fn compare_cmd(args: CompareArgs) -> i32 {
    finish(compare_inner(args).await)
}

async fn compare_inner(args: CompareArgs) -> Result<i32, Failure> {
    let a = Side::parse(&args.a).map_err(|e| fail(exit::USAGE, e))?;
    let b = Side::parse(&args.b).map_err(|e| fail(exit::USAGE, e))?;
    let mut api = None;
    let mut trials = Vec::new();
    for side in [&a, &b] {
        let mut found = load(side, &args.client, &mut api).await?;
        if !args.tasks.is_empty() {
            found.retain(|t| args.tasks.contains(&t.task));
        }
        if found.is_empty() {
            let which = if args.tasks.is_empty() { String::new() } else { format!(" of {}", args.tasks.join(", ")) };
            return Err(fail(exit::USAGE, format!("{} has no graded runs{which}", side.label())));
        }
        trials.push(found);
    }
    let c = compare((&a.label(), &trials[0]), (&b.label(), &trials[1]), args.criteria);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&c).unwrap_or_default());
    } else {
        print!("{}", render(&c));
    }
    Ok(if args.fail_on_regression && !c.summary.worse.is_empty() { exit::FAIL } else { exit::OK })
}

/// Every graded trial of one side.
async fn load(side: &Side, client: &ClientArgs, api: &mut Option<Client>) -> Result<Vec<Trial>, Failure> {
    let (field, value) = match side {
        Side::Dir(dir) => return from_dirs(dir),
        Side::Group(g) => ("group_id", g),
        Side::Version(v) => ("agent_version", v),
    };
    if api.is_none() {
        let key = client.api_key.clone().filter(|k| !k.is_empty()).ok_or_else(|| {
            fail(exit::AUTH, format!("{} is on the server: set POME_API_KEY (or compare run directories)", side.label()))
        })?;
        *api = Some(Client::at(&client.api_url, key));
    }
    from_server(api.as_ref().unwrap(), field, value).await
}

/// The runs the server lists for `field=value`, page by page. Each listing carries its runs'
/// criteria outcomes; a run stored before listings did is read whole for them.
async fn from_server(api: &Client, field: &str, value: &str) -> Result<Vec<Trial>, Failure> {
    let mut trials = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let mut url = reqwest::Url::parse("http://pome/v1/runs").expect("a constant URL");
        url.query_pairs_mut().append_pair(field, value).append_pair("limit", "1000");
        if let Some(a) = &after {
            url.query_pairs_mut().append_pair("starting_after", a);
        }
        let page = api.call(reqwest::Method::GET, &format!("{}?{}", url.path(), url.query().unwrap_or("")), None).await?;
        for r in page["data"].as_array().into_iter().flatten() {
            let (Some(task), Some(verdict)) = (r["task_id"].as_str(), r["verdict"].as_str()) else {
                continue; // no task graded it
            };
            let criteria = if r["criteria"].is_array() {
                r["criteria"].clone()
            } else {
                let id = r["id"].as_str().unwrap_or_default();
                api.call(reqwest::Method::GET, &format!("/v1/runs/{id}"), None).await?["criteria_results"].clone()
            };
            trials.push(Trial::from_json(task, verdict, &criteria));
        }
        match page["next_cursor"].as_str() {
            Some(next) if page["has_more"] == true => after = Some(next.to_string()),
            _ => break,
        }
    }
    Ok(trials)
}

/// Every run directory under `root` (itself included), at any depth: a directory holding
/// `meta.json` and `verdict.json`. Hidden directories (`pome run`'s runs in progress) are
/// passed over.
pub fn from_dirs(root: &Path) -> Result<Vec<Trial>, Failure> {
    if !root.is_dir() {
        return Err(fail(exit::USAGE, format!("{} is not a directory", root.display())));
    }
    let mut trials = Vec::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        let (meta, verdict) = (dir.join("meta.json"), dir.join("verdict.json"));
        if meta.is_file() && verdict.is_file() {
            let read = |p: &Path| -> Result<Value, Failure> {
                let text = std::fs::read_to_string(p).map_err(|e| fail(exit::USAGE, format!("{}: {e}", p.display())))?;
                serde_json::from_str(&text).map_err(|e| fail(exit::USAGE, format!("{} is not JSON: {e}", p.display())))
            };
            let (m, v) = (read(&meta)?, read(&verdict)?);
            let task = m["task"].as_str().or(v["task"].as_str()).ok_or_else(|| fail(exit::USAGE, format!("{} names no task", meta.display())))?;
            if let Some(outcome) = v["verdict"].as_str() {
                trials.push(Trial::from_json(task, outcome, &v["criteria_results"]));
            }
            continue;
        }
        let entries = std::fs::read_dir(&dir).map_err(|e| fail(exit::USAGE, format!("{}: {e}", dir.display())))?;
        for e in entries.flatten() {
            let hidden = e.file_name().to_string_lossy().starts_with('.');
            if !hidden && e.file_type().is_ok_and(|t| t.is_dir()) {
                todo.push(e.path());
            }
        }
    }
    Ok(trials)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trial(task: &str, passed: bool, criteria: &[(&str, bool)]) -> Trial {
        Trial { task: task.into(), passed, criteria: criteria.iter().map(|(t, p)| (t.to_string(), *p)).collect() }
    }

    #[test]
    fn a_side_is_named_by_prefix_or_recognised_by_shape() {
        assert_eq!(Side::parse("group:abc"), Ok(Side::Group("abc".into())));
        assert_eq!(Side::parse("version:grp_x"), Ok(Side::Version("grp_x".into())), "a prefix wins over the shape");
        assert_eq!(Side::parse("dir:nowhere"), Ok(Side::Dir("nowhere".into())));
        assert_eq!(Side::parse("grp_0123"), Ok(Side::Group("grp_0123".into())));
        assert_eq!(Side::parse("v1.2"), Ok(Side::Version("v1.2".into())));
        let here = std::env::temp_dir();
        assert_eq!(Side::parse(here.to_str().unwrap()), Ok(Side::Dir(here.clone())));
        assert!(Side::parse("version:").is_err() && Side::parse("").is_err());
    }

    #[test]
    fn rates_and_the_difference_are_the_stats_modules() {
        let a: Vec<Trial> = (0..3).map(|_| trial("triage", true, &[])).collect();
        let b: Vec<Trial> = (0..3).map(|_| trial("triage", false, &[])).collect();
        let c = compare(("A", &a), ("B", &b), 3);
        let t = &c.tasks[0];
        assert_eq!(t.a, Some(Rate::of(3, 3)));
        assert_eq!(t.b, Some(Rate::of(0, 3)));
        assert_eq!(t.difference, Some(stats::difference(Rate::of(3, 3), Rate::of(0, 3))));
        assert!(t.difference.unwrap().beyond_noise);
        assert_eq!(c.summary.worse, ["triage"]);
        assert_eq!(c.summary.line, "1 of 1 task differs beyond noise: 1 worse (triage)");
    }

    #[test]
    fn the_summary_counts_only_tasks_both_sides_ran_and_says_which_way_each_moved() {
        let mut a = Vec::new();
        let mut b = Vec::new();
        for _ in 0..10 {
            a.push(trial("up", false, &[]));
            b.push(trial("up", true, &[]));
            a.push(trial("down", true, &[]));
            b.push(trial("down", false, &[]));
        }
        for i in 0..3 {
            a.push(trial("same", i < 2, &[]));
            b.push(trial("same", i < 3, &[]));
        }
        a.push(trial("gone", true, &[]));
        b.push(trial("new", true, &[]));
        let c = compare(("A", &a), ("B", &b), 3);
        assert_eq!(c.tasks.iter().map(|t| t.task.as_str()).collect::<Vec<_>>(), ["down", "gone", "new", "same", "up"]);
        let s = &c.summary;
        assert_eq!((s.compared, s.better.clone(), s.worse.clone()), (3, vec!["up".to_string()], vec!["down".to_string()]));
        assert_eq!((s.only_in_a.clone(), s.only_in_b.clone()), (vec!["gone".to_string()], vec!["new".to_string()]));
        assert_eq!(s.line, "2 of 3 tasks differ beyond noise: 1 better (up), 1 worse (down)");
        assert!(!c.tasks[3].difference.unwrap().beyond_noise, "2/3 → 3/3 is noise");
        let text = render(&c);
        assert!(text.contains("only in A") && text.contains("only in B"), "{text}");

        let same = compare(("A", &a), ("A", &a), 3);
        assert_eq!(same.summary.line, "no difference beyond noise (4 tasks compared)");
    }

    #[test]
    fn the_criteria_that_changed_most_come_first_and_unchanged_ones_are_left_out() {
        let a = vec![
            trial("t", true, &[("labelled", true), ("assigned", true), ("commented", false), ("only in a", true)]),
            trial("t", true, &[("labelled", true), ("assigned", true), ("commented", true), ("only in a", true)]),
        ];
        let b = vec![
            trial("t", false, &[("labelled", true), ("assigned", false), ("commented", true), ("only in b", true)]),
            trial("t", false, &[("labelled", true), ("assigned", false), ("commented", true), ("only in b", true)]),
        ];
        let c = compare(("A", &a), ("B", &b), 3);
        let changes: Vec<(&str, f64)> = c.tasks[0].criteria.iter().map(|ch| (ch.text.as_str(), ch.change)).collect();
        assert_eq!(changes, [("assigned", -1.0), ("commented", 0.5)]);
        assert_eq!((c.tasks[0].criteria[0].a.passed, c.tasks[0].criteria[0].a.trials), (2, 2));
        let one = compare(("A", &a), ("B", &b), 1);
        assert_eq!(one.tasks[0].criteria.len(), 1, "--criteria bounds the list");
        let text = render(&c);
        assert!(text.contains("t: criteria that changed most (A → B)\n   -100 pts  2/2 → 0/2  assigned\n    +50 pts  1/2 → 2/2  commented\n"), "{text}");
    }

    #[test]
    fn the_table_shows_each_rate_with_its_interval_and_the_difference_with_its() {
        let a: Vec<Trial> = (0..3).map(|_| trial("triage", true, &[])).collect();
        let b: Vec<Trial> = (0..3).map(|_| trial("triage", false, &[])).collect();
        let text = render(&compare(("version:v1", &a), ("version:v2", &b), 3));
        let (r3, r0) = (Rate::of(3, 3), Rate::of(0, 3));
        let d = stats::difference(r3, r0);
        let want = format!(
            "triage  3/3 100% [{}–100]  0/3 0% [0–{}]  -100 pts [-100, {}]  beyond noise",
            pts(r3.low),
            pts(r0.high),
            signed_pts(d.high)
        );
        assert!(text.lines().any(|l| l == want), "want {want:?} in\n{text}");
        assert!(text.starts_with("task    A version:v1"), "{text}");
    }

    /// The shared cases the dashboard's JavaScript is checked against too
    /// (`tests/browser/stats_cases.json`): both implementations give these numbers.
    #[test]
    fn the_stats_cases_the_dashboard_is_checked_against_hold_here() {
        let cases: Value = serde_json::from_str(include_str!("../../../tests/browser/stats_cases.json")).unwrap();
        for case in cases["cases"].as_array().unwrap() {
            let n = |k: &str| case[k].as_u64().unwrap();
            let (a, b) = (Rate::of(n("a_passed"), n("a_trials")), Rate::of(n("b_passed"), n("b_trials")));
            let d = stats::difference(a, b);
            let want = |k: &str| case[k].as_f64().unwrap();
            for (got, key) in [(a.low, "a_low"), (a.high, "a_high"), (b.low, "b_low"), (b.high, "b_high"), (d.delta, "delta"), (d.low, "low"), (d.high, "high")] {
                assert!((got - want(key)).abs() < 1e-9, "{case}: {key} is {got}");
            }
            assert_eq!(d.beyond_noise, case["beyond_noise"].as_bool().unwrap(), "{case}");
        }
    }

    #[test]
    fn run_directories_are_found_at_any_depth_and_runs_in_progress_are_not() {
        let root = std::env::temp_dir().join(format!("pome-compare-dirs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let write = |dir: &Path, verdict: &str| {
            std::fs::create_dir_all(dir).unwrap();
            std::fs::write(dir.join("meta.json"), r#"{"task": "triage"}"#).unwrap();
            let v = serde_json::json!({"verdict": verdict, "criteria_results": [{"text": "labelled", "status": if verdict == "pass" { "passed" } else { "failed" }}]});
            std::fs::write(dir.join("verdict.json"), v.to_string()).unwrap();
        };
        write(&root.join("triage/run_1"), "pass");
        write(&root.join("deeper/still/triage/run_2"), "fail");
        write(&root.join("triage/.ses_running"), "pass");
        let mut found = from_dirs(&root).unwrap();
        found.sort_by_key(|t| t.passed);
        assert_eq!(found, [trial("triage", false, &[("labelled", false)]), trial("triage", true, &[("labelled", true)])]);
        assert_eq!(from_dirs(&root.join("triage/run_1")).unwrap().len(), 1, "a run directory itself");
        assert_eq!(from_dirs(&root.join("nowhere")).unwrap_err().code, exit::USAGE);
        let _ = std::fs::remove_dir_all(&root);
    }
}
