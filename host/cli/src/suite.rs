//! `pome run` over a suite: several tasks, several trials each, up to `-j` at once, with live
//! progress, then one table and one exit code.
//!
//! Every (task, trial) pair is one sandbox and one agent process group (`run::trial_once`);
//! a pair that cannot run (the server refused its sandbox, the agent would not start) is an
//! errored trial, shown and reported, and the others go on: one bad trial does not lose an
//! hour of good ones. What the table says is computed once here ([`summarize`]) and read by
//! the terminal, the JUnit report and the JSON report alike.

use std::collections::BTreeMap;
use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use futures_util::StreamExt as _;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use pome_grade::Status;
use pome_grade::stats::{self, Rate};
use serde::Serialize;

use crate::client::{Client, Failure, exit, fail};
use crate::run::{Finished, LoadedTask, RunArgs, trial_once};

/// The task files `pome run` was given: files as named, directories searched at any depth
/// for `*.md` other than README.md, in name order. A path that is neither, or a directory
/// with no task in it, is a mistake to say, not to skip.
pub fn task_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, Failure> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?.map(|e| e.map(|e| e.path())).collect::<Result<_, _>>()?;
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, out)?;
            } else if p.extension().is_some_and(|e| e == "md") && !p.file_name().is_some_and(|n| n.eq_ignore_ascii_case("README.md")) {
                out.push(p);
            }
        }
        Ok(())
    }
    let mut files = Vec::new();
    for p in paths {
        if p.is_dir() {
            let before = files.len();
            walk(p, &mut files).map_err(|e| fail(exit::USAGE, format!("reading {}: {e}", p.display())))?;
            if files.len() == before {
                return Err(fail(exit::USAGE, format!("{} holds no task files (*.md other than README.md)", p.display())));
            }
        } else if p.is_file() {
            files.push(p.clone());
        } else {
            return Err(fail(exit::USAGE, format!("{}: no such task file or directory", p.display())));
        }
    }
    Ok(files)
}

/// Two files with one task id would write their runs into one `runs/<task>/` and be graded as
/// one task's trials: refuse, naming both.
pub fn refuse_duplicate_ids<'a>(tasks: impl Iterator<Item = (&'a Path, &'a str)>) -> Result<(), Failure> {
    let mut seen: BTreeMap<&str, &Path> = BTreeMap::new();
    for (file, id) in tasks {
        if let Some(first) = seen.insert(id, file) {
            return Err(fail(exit::USAGE, format!("{} and {} are both task `{id}`: rename one (its file name is its id)", first.display(), file.display())));
        }
    }
    Ok(())
}

/// The trials of a task this run makes: `-n`, or the task's own `runs`.
pub fn trials_of(t: &LoadedTask, args: &RunArgs) -> u32 {
    args.trials.unwrap_or(t.task.config.runs).max(1)
}

/// One (task, trial) pair's end.
pub struct Trial {
    /// Index into the suite's tasks.
    pub task: usize,
    /// 1-based.
    pub number: u32,
    pub outcome: Result<Finished, Failure>,
}

/// Runs every pair, at most `jobs` at once, showing progress on stderr; the summary is
/// printed to stdout.
pub async fn run(api: &Client, tasks: &[LoadedTask], args: &RunArgs, jobs: usize) -> Summary {
    let started = Instant::now();
    let pairs: Vec<(usize, u32)> = tasks.iter().enumerate().flat_map(|(i, t)| (1..=trials_of(t, args)).map(move |n| (i, n))).collect();
    let mut progress = Progress::new(tasks, args, pairs.len(), jobs);
    let (started_tx, mut started_rx) = tokio::sync::mpsc::unbounded_channel::<usize>();
    let mut running = futures_util::stream::iter(pairs)
        .map(|(task, number)| {
            let started_tx = started_tx.clone();
            async move {
                if crate::run::interrupted() {
                    return Trial { task, number, outcome: Err(fail(exit::INTERRUPTED, "not started: interrupted")) };
                }
                let _ = started_tx.send(task);
                Trial { task, number, outcome: trial_once(api, &tasks[task], args).await }
            }
        })
        .buffer_unordered(jobs);
    let mut trials = Vec::new();
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    loop {
        tokio::select! {
            next = running.next() => {
                while let Ok(t) = started_rx.try_recv() {
                    progress.started(t);
                }
                match next {
                    Some(trial) => {
                        progress.finished(&trial);
                        trials.push(trial);
                    }
                    None => break,
                }
            }
            _ = tick.tick() => {
                while let Ok(t) = started_rx.try_recv() {
                    progress.started(t);
                }
                progress.tick();
            }
        }
    }
    progress.done();
    let mut summary = summarize(tasks, &trials, args);
    summary.duration_ms = started.elapsed().as_millis() as u64;
    summary.jobs = jobs;
    print!("{}", summary.table());
    summary
}

/// A suite's outcome, as the table, the exit code and both reports read it.
#[derive(Debug, Serialize)]
pub struct Summary {
    pub agent_version: Option<String>,
    pub agent_id: Option<String>,
    pub agent_command: Vec<String>,
    pub jobs: usize,
    pub duration_ms: u64,
    pub trials: u64,
    pub passed: u64,
    pub failed: u64,
    pub errored: u64,
    /// Every task met its passThreshold in every trial, and no trial errored.
    pub ok: bool,
    pub tasks: Vec<TaskSummary>,
    /// The exit code of the first trial that could not run.
    #[serde(skip)]
    pub first_error_code: Option<i32>,
}

#[derive(Debug, Serialize)]
pub struct TaskSummary {
    pub task: String,
    pub title: String,
    pub file: String,
    pub group_id: String,
    pub pass_threshold: u32,
    pub trials: u64,
    pub passed: u64,
    /// Ran to a verdict other than pass.
    pub failed: u64,
    /// Could not run (counted as not passed in the rate).
    pub errored: u64,
    pub pass_rate: Rate,
    pub pass_k: PassK,
    /// The mean of the graded trials' scores; null when none was scored.
    pub mean_score: Option<f64>,
    pub median_duration_ms: Option<u64>,
    /// Every trial passed: the task met its passThreshold each time.
    pub met: bool,
    /// The criteria that failed most often, most first.
    pub most_missed: Vec<Missed>,
    pub runs: Vec<TrialRow>,
}

#[derive(Debug, Serialize)]
pub struct PassK {
    pub k: u64,
    pub value: f64,
}

#[derive(Debug, Serialize)]
pub struct Missed {
    pub index: usize,
    pub kind: String,
    pub twin: Option<String>,
    pub text: String,
    /// Trials in which it failed or errored, of those graded.
    pub missed: u64,
    pub of: u64,
}

#[derive(Debug, Serialize)]
pub struct TrialRow {
    pub trial: u32,
    /// `pass`, `fail`, `incomplete`, or `error` when the trial could not run.
    pub verdict: String,
    pub score: Option<u32>,
    pub run_id: Option<String>,
    pub dir: Option<String>,
    pub duration_ms: Option<u64>,
    pub timed_out: bool,
    /// Why the trial could not run.
    pub error: Option<String>,
    /// When it did not pass: the criteria it did not pass (failed, errored, unmatched, or
    /// skipped, which makes a verdict incomplete), with the grader's reasons and evidence
    /// pointers.
    pub failed_criteria: Vec<FailedCriterion>,
}

#[derive(Debug, Serialize)]
pub struct FailedCriterion {
    pub index: usize,
    pub kind: String,
    pub twin: Option<String>,
    pub status: Status,
    pub text: String,
    pub reason: String,
    /// Where the grader looked, e.g. `github tape seq 4` or `github state issues.7.labels`.
    pub evidence: Option<String>,
}

impl Summary {
    /// 0 when every trial of every task passed; the first orchestration failure's code when
    /// some trial could not run; 1 otherwise.
    pub fn exit_code(&self) -> i32 {
        match self.first_error_code {
            Some(code) => code,
            None if self.ok => exit::OK,
            None => exit::FAIL,
        }
    }

    /// The table printed at the end of a suite.
    pub fn table(&self) -> String {
        let pct = |x: f64| format!("{:.0}%", 100.0 * x);
        let mut rows: Vec<[String; 8]> = vec![[
            "task".into(),
            "trials".into(),
            "pass rate (95% CI)".into(),
            "pass^k".into(),
            "mean score".into(),
            "median".into(),
            "most missed".into(),
            "group".into(),
        ]];
        for t in &self.tasks {
            let trials = if t.errored > 0 { format!("{} ({} errored)", t.trials, t.errored) } else { t.trials.to_string() };
            let incomplete = t.runs.iter().filter(|r| r.verdict == "incomplete").count();
            let missed = match t.most_missed.first() {
                Some(m) => format!("#{} {}/{}: {}", m.index, m.missed, m.of, clip(&m.text, 48)),
                None if incomplete > 0 => format!("none; {incomplete} incomplete (criteria not decided)"),
                None => "–".to_string(),
            };
            rows.push([
                t.task.clone(),
                trials,
                format!("{}/{} {} ({}–{})", t.passed, t.trials, pct(t.pass_rate.rate), pct(t.pass_rate.low), pct(t.pass_rate.high)),
                format!("{:.2} (k={})", t.pass_k.value, t.pass_k.k),
                t.mean_score.map_or("–".into(), |s| format!("{s:.0}")),
                t.median_duration_ms.map_or("–".into(), seconds),
                missed,
                t.group_id.clone(),
            ]);
        }
        let mut out = crate::table::aligned(&rows);
        let met = self.tasks.iter().filter(|t| t.met).count();
        out.push_str(&format!(
            "{met} of {} tasks passed every trial; {} trials: {} passed, {} failed, {} errored; {} at -j {}\n",
            self.tasks.len(),
            self.trials,
            self.passed,
            self.failed,
            self.errored,
            seconds(self.duration_ms),
            self.jobs
        ));
        out
    }
}

/// The suite's numbers from its trials, in the tasks' order.
pub fn summarize(tasks: &[LoadedTask], trials: &[Trial], args: &RunArgs) -> Summary {
    let mut out = Summary {
        agent_version: args.agent_version.clone(),
        agent_id: args.agent_id.clone(),
        agent_command: args.agent.clone(),
        jobs: 1,
        duration_ms: 0,
        trials: 0,
        passed: 0,
        failed: 0,
        errored: 0,
        ok: true,
        tasks: Vec::new(),
        first_error_code: None,
    };
    for (i, lt) in tasks.iter().enumerate() {
        let mut mine: Vec<&Trial> = trials.iter().filter(|t| t.task == i).collect();
        mine.sort_by_key(|t| t.number);
        let mut rows = Vec::new();
        let (mut passed, mut failed, mut errored) = (0u64, 0u64, 0u64);
        let mut scores = Vec::new();
        let mut durations = Vec::new();
        // Per criterion index: (kind, twin, text, missed, graded).
        let mut misses: BTreeMap<usize, (String, Option<String>, String, u64, u64)> = BTreeMap::new();
        for t in &mine {
            match &t.outcome {
                Ok(f) => {
                    if f.grade.verdict == "pass" {
                        passed += 1;
                    } else {
                        failed += 1;
                    }
                    scores.extend(f.grade.score);
                    durations.push(f.duration_ms);
                    let mut failed_criteria = Vec::new();
                    for c in &f.grade.criteria_results {
                        let entry = misses.entry(c.index).or_insert_with(|| (c.kind.clone(), c.twin.clone(), c.text.clone(), 0, 0));
                        if c.status == Status::Passed {
                            entry.4 += 1;
                            continue;
                        }
                        // A skipped criterion is not a miss (the seed already held it, or no
                        // judge was set), but it is why a trial is incomplete: reported, not counted.
                        if c.status != Status::Skipped {
                            entry.3 += 1;
                            entry.4 += 1;
                        }
                        if f.grade.verdict != "pass" {
                            failed_criteria.push(FailedCriterion {
                                index: c.index,
                                kind: c.kind.clone(),
                                twin: c.twin.clone(),
                                status: c.status,
                                text: c.text.clone(),
                                reason: c.reason.clone(),
                                evidence: (!c.evidence.is_null()).then(|| crate::run::evidence_text(&c.evidence)),
                            });
                        }
                    }
                    rows.push(TrialRow {
                        trial: t.number,
                        verdict: f.grade.verdict.clone(),
                        score: f.grade.score,
                        run_id: Some(f.run_id.clone()),
                        dir: Some(f.dir.display().to_string()),
                        duration_ms: Some(f.duration_ms),
                        timed_out: f.timed_out,
                        error: None,
                        failed_criteria,
                    });
                }
                Err(e) => {
                    errored += 1;
                    out.first_error_code.get_or_insert(e.code);
                    rows.push(TrialRow {
                        trial: t.number,
                        verdict: "error".into(),
                        score: None,
                        run_id: None,
                        dir: None,
                        duration_ms: None,
                        timed_out: false,
                        error: Some(e.message.clone()),
                        failed_criteria: Vec::new(),
                    });
                }
            }
        }
        let n = mine.len() as u64;
        let k = u64::from(args.pass_k.unwrap_or(trials_of(lt, args))).clamp(1, n.max(1));
        let mut most_missed: Vec<Missed> = misses
            .into_iter()
            .filter(|(_, m)| m.3 > 0)
            .map(|(index, (kind, twin, text, missed, of))| Missed { index, kind, twin, text, missed, of })
            .collect();
        most_missed.sort_by(|a, b| b.missed.cmp(&a.missed).then(a.index.cmp(&b.index)));
        let met = n > 0 && passed == n;
        out.ok &= met;
        out.trials += n;
        out.passed += passed;
        out.failed += failed;
        out.errored += errored;
        out.tasks.push(TaskSummary {
            task: lt.task.id.clone(),
            title: lt.task.title.clone(),
            file: lt.file.display().to_string(),
            group_id: lt.group_id.clone(),
            pass_threshold: lt.task.config.pass_threshold,
            trials: n,
            passed,
            failed,
            errored,
            pass_rate: Rate::of(passed, n),
            pass_k: PassK { k, value: stats::pass_hat_k(n, passed, k) },
            mean_score: (!scores.is_empty()).then(|| scores.iter().map(|&s| f64::from(s)).sum::<f64>() / scores.len() as f64),
            median_duration_ms: stats::median(&mut durations),
            met,
            most_missed,
            runs: rows,
        });
    }
    out
}

fn seconds(ms: u64) -> String {
    if ms < 60_000 { format!("{:.1}s", ms as f64 / 1000.0) } else { format!("{}m{:02}s", ms / 60_000, (ms / 1000) % 60) }
}

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n { s.to_string() } else { s.chars().take(n - 1).collect::<String>() + "…" }
}

/// What a suite shows while it runs: on a terminal, a line per task and an overall bar with
/// the time left, redrawn in place; otherwise (a CI log, a pipe) one plain line per trial as
/// it ends, which a log keeps readable.
enum Progress {
    Live(Live),
    Plain { done: usize, total: usize, ids: Vec<String>, trials: Vec<u32> },
}

struct Live {
    multi: MultiProgress,
    lines: Vec<ProgressBar>,
    overall: ProgressBar,
    counts: Vec<Counts>,
}

#[derive(Default, Clone, Copy)]
struct Counts {
    passed: u32,
    failed: u32,
    errored: u32,
    running: u32,
}

impl Progress {
    fn new(tasks: &[LoadedTask], args: &RunArgs, total: usize, jobs: usize) -> Progress {
        let live = std::io::stderr().is_terminal() && std::env::var("TERM").map_or(true, |t| t != "dumb");
        let ids: Vec<String> = tasks.iter().map(|t| t.task.id.clone()).collect();
        let trials: Vec<u32> = tasks.iter().map(|t| trials_of(t, args)).collect();
        if !live {
            eprintln!("pome: {} tasks, {total} trials, {jobs} at a time", tasks.len());
            return Progress::Plain { done: 0, total, ids, trials };
        }
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr_with_hz(8));
        let width = ids.iter().map(|i| i.chars().count()).max().unwrap_or(4).min(40);
        let line_style = ProgressStyle::with_template(&format!("{{prefix:<{width}}} {{bar:12.cyan/blue}} {{pos:>3}}/{{len:<3}} {{msg}}"))
            .expect("a fixed template")
            .progress_chars("█▉ ");
        let lines = ids
            .iter()
            .zip(&trials)
            .map(|(id, n)| {
                let pb = multi.add(ProgressBar::new(u64::from(*n)).with_style(line_style.clone()).with_prefix(clip(id, 40)));
                pb.set_message("queued");
                pb
            })
            .collect();
        let overall = multi.add(
            ProgressBar::new(total as u64).with_style(
                ProgressStyle::with_template("{bar:40.green/white} {pos}/{len} trials  {msg}  {elapsed_precise} elapsed, about {eta_precise} left")
                    .expect("a fixed template")
                    .progress_chars("█▉ "),
            ),
        );
        Progress::Live(Live { multi, lines, overall, counts: vec![Counts::default(); ids.len()] })
    }

    fn started(&mut self, task: usize) {
        if let Progress::Live(l) = self {
            if l.counts[task].running == 0 && l.lines[task].position() == 0 {
                l.lines[task].reset_elapsed();
            }
            l.counts[task].running += 1;
            l.redraw(task);
        }
    }

    fn finished(&mut self, trial: &Trial) {
        match self {
            Progress::Plain { done, total, ids, trials } => {
                *done += 1;
                let what = match &trial.outcome {
                    Ok(f) => format!(
                        "{}  score {}  {}{}  {}",
                        f.grade.verdict,
                        f.grade.score.map_or("–".into(), |s| s.to_string()),
                        seconds(f.duration_ms),
                        if f.timed_out { " (timed out)" } else { "" },
                        f.dir.display()
                    ),
                    Err(e) => format!("error  {}", e.message),
                };
                let w = total.to_string().len();
                eprintln!("[{done:>w$}/{total}] {}  trial {}/{}  {what}", ids[trial.task], trial.number, trials[trial.task]);
            }
            Progress::Live(l) => {
                let c = &mut l.counts[trial.task];
                c.running = c.running.saturating_sub(1);
                match &trial.outcome {
                    Ok(f) if f.grade.verdict == "pass" => c.passed += 1,
                    Ok(_) => c.failed += 1,
                    Err(e) => {
                        c.errored += 1;
                        l.multi.suspend(|| eprintln!("pome: {} trial {}: {}", l.lines[trial.task].prefix(), trial.number, e.message));
                    }
                }
                l.lines[trial.task].inc(1);
                l.overall.inc(1);
                l.redraw(trial.task);
                if l.lines[trial.task].position() == l.lines[trial.task].length().unwrap_or(0) {
                    l.lines[trial.task].finish();
                }
                let (p, f, e) = l.counts.iter().fold((0, 0, 0), |(p, f, e), c| (p + c.passed, f + c.failed, e + c.errored));
                l.overall.set_message(format!("✓ {p}  ✗ {f}{}", if e > 0 { format!("  ! {e}") } else { String::new() }));
            }
        }
    }

    fn tick(&mut self) {
        if let Progress::Live(l) = self {
            for (i, c) in l.counts.iter().enumerate() {
                if c.running > 0 {
                    l.lines[i].tick();
                }
            }
            l.overall.tick();
        }
    }

    fn done(&mut self) {
        if let Progress::Live(l) = self {
            l.overall.finish();
        }
    }
}

impl Live {
    /// A task's line: passed, failed, running and, once it has started, how long it has run.
    fn redraw(&self, task: usize) {
        let c = self.counts[task];
        let pb = &self.lines[task];
        let errored = if c.errored > 0 { format!("  ! {}", c.errored) } else { String::new() };
        let running = if c.running > 0 { format!("  ▶ {}", c.running) } else { String::new() };
        pb.set_message(format!("✓ {}  ✗ {}{errored}{running}  {}", c.passed, c.failed, seconds(pb.elapsed().as_millis() as u64)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_yields_its_task_files_at_any_depth_in_name_order_without_readmes() {
        let dir = std::env::temp_dir().join(pome_server::auth::new_id("suite"));
        std::fs::create_dir_all(dir.join("b/c")).unwrap();
        for f in ["z.md", "README.md", "a.seed.json", "b/c/m.md", "b/a.md", "b/readme.md"] {
            std::fs::write(dir.join(f), "").unwrap();
        }
        let got = task_files(std::slice::from_ref(&dir)).unwrap();
        let rel: Vec<String> = got.iter().map(|p| p.strip_prefix(&dir).unwrap().display().to_string()).collect();
        assert_eq!(rel, ["b/a.md", "b/c/m.md", "z.md"]);
        std::fs::create_dir_all(dir.join("empty")).unwrap();
        let e = task_files(&[dir.join("empty")]).unwrap_err();
        assert!(e.message.contains("holds no task files"), "{}", e.message);
        let e = task_files(&[dir.join("nope.md")]).unwrap_err();
        assert!(e.message.contains("no such task file"), "{}", e.message);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn args(extra: &[&str]) -> RunArgs {
        use clap::Parser as _;
        #[derive(clap::Parser)]
        struct Wrap {
            #[command(flatten)]
            run: RunArgs,
        }
        let mut argv = vec!["pome", "t.md"];
        argv.extend(extra);
        argv.extend(["--", "agent"]);
        Wrap::try_parse_from(argv).unwrap().run
    }

    fn task(id: &str) -> LoadedTask {
        let source = "# T\n\n## Prompt\n\nDo it.\n\n## Success Criteria\n\n- [code:github] Issue #1 in `o/r` is closed\n- [code:github] Issue #2 in `o/r` is closed\n\n## Config\n\n```yaml\ntwins: [github]\nruns: 3\n```\n";
        let t = pome_grade::task::parse("t.md", id, source, None).unwrap();
        LoadedTask { file: PathBuf::from(format!("{id}.md")), task: t, source: source.into(), sidecar: None, catalog: Default::default(), group_id: "grp_1".into() }
    }

    fn trial(task: usize, number: u32, verdict: &str, missed: &[usize]) -> Trial {
        let criteria_results = [1, 2]
            .iter()
            .map(|&index| pome_grade::CriterionResult {
                index,
                kind: "code".into(),
                twin: Some("github".into()),
                text: format!("criterion {index}"),
                status: if missed.contains(&index) { Status::Failed } else { Status::Passed },
                reason: format!("reason {index}"),
                evidence: serde_json::json!({"twin": "github", "seq": index}),
                check_id: None,
                always_scored: false,
            })
            .collect();
        let score = Some(if missed.is_empty() { 100 } else { 50 });
        let grade = pome_grade::Grade { score, verdict: verdict.into(), pass_threshold: 100, criteria_results };
        Trial { task, number, outcome: Ok(Finished { run_id: format!("run_{task}{number}"), dir: PathBuf::from("runs/x"), grade, duration_ms: u64::from(number) * 1000, timed_out: false }) }
    }

    #[test]
    fn a_summary_counts_rates_misses_and_says_the_exit_code() {
        let tasks = [task("a"), task("b")];
        let trials = vec![
            trial(0, 2, "fail", &[2]),
            trial(0, 1, "pass", &[]),
            trial(0, 3, "fail", &[1, 2]),
            trial(1, 1, "pass", &[]),
            trial(1, 2, "pass", &[]),
            Trial { task: 1, number: 3, outcome: Err(fail(exit::QUOTA, "quota exceeded")) },
        ];
        let s = summarize(&tasks, &trials, &args(&["-k", "2"]));
        let a = &s.tasks[0];
        assert_eq!((a.trials, a.passed, a.failed, a.errored, a.met), (3, 1, 2, 0, false));
        assert_eq!(a.runs.iter().map(|r| r.trial).collect::<Vec<_>>(), [1, 2, 3], "trials in order, however they finished");
        assert_eq!(a.pass_k.k, 2);
        assert_eq!(a.pass_k.value, 0.0);
        assert!((a.mean_score.unwrap() - 200.0 / 3.0).abs() < 1e-9);
        assert_eq!(a.median_duration_ms, Some(2000));
        let missed: Vec<(usize, u64, u64)> = a.most_missed.iter().map(|m| (m.index, m.missed, m.of)).collect();
        assert_eq!(missed, [(2, 2, 3), (1, 1, 3)], "the most often missed first");
        assert_eq!(a.runs[1].failed_criteria[0].evidence.as_deref(), Some("github tape seq 2"));
        let b = &s.tasks[1];
        assert_eq!((b.passed, b.errored, b.met), (2, 1, false));
        assert_eq!(b.runs[2].verdict, "error");
        assert_eq!((s.trials, s.passed, s.failed, s.errored, s.ok), (6, 3, 2, 1, false));
        assert_eq!(s.exit_code(), exit::QUOTA, "a trial that could not run says why in the exit code");
        let table = s.table();
        assert!(table.contains("1/3 33% (6%–79%)") && table.contains("0.00 (k=2)"), "{table}");
        assert!(table.contains("#2 2/3: criterion 2"), "{table}");
        assert!(table.lines().nth(1).unwrap().ends_with("grp_1"), "each task's trial group: {table}");
        assert!(table.contains("0 of 2 tasks passed every trial; 6 trials: 3 passed, 2 failed, 1 errored"), "{table}");

        let all_pass = vec![trial(0, 1, "pass", &[]), trial(0, 2, "pass", &[]), trial(0, 3, "pass", &[])];
        assert_eq!(summarize(&tasks[..1], &all_pass, &args(&[])).exit_code(), exit::OK);
        let one_fails = vec![trial(0, 1, "pass", &[]), trial(0, 2, "fail", &[1]), trial(0, 3, "pass", &[])];
        assert_eq!(summarize(&tasks[..1], &one_fails, &args(&[])).exit_code(), exit::FAIL);
    }

    #[test]
    fn the_junit_report_has_a_case_per_task_and_a_failure_per_failed_trial() {
        let tasks = [task("a<b")];
        let trials = vec![trial(0, 1, "pass", &[]), trial(0, 2, "fail", &[2]), Trial { task: 0, number: 3, outcome: Err(fail(exit::ORCHESTRATION, "agent & co")) }];
        let x = crate::report::junit(&summarize(&tasks, &trials, &args(&[])));
        assert_eq!(x.matches("<testcase ").count(), 1);
        assert_eq!(x.matches("<failure ").count(), 1);
        assert_eq!(x.matches("<error ").count(), 1);
        assert!(x.contains("name=\"a&lt;b\""), "{x}");
        assert!(x.contains("message=\"trial 2 of 3: fail, score 50 (threshold 100)\""), "{x}");
        assert!(x.contains("failed #2 [code:github] criterion 2\n    reason 2\n    evidence: github tape seq 2\n"), "{x}");
        assert!(x.contains("could not run: agent &amp; co"), "{x}");
    }

    #[test]
    fn two_files_with_one_task_id_are_refused_by_name() {
        let e = refuse_duplicate_ids([(Path::new("a/x.md"), "x"), (Path::new("b/x.md"), "x")].into_iter()).unwrap_err();
        assert!(e.message.contains("a/x.md and b/x.md are both task `x`"), "{}", e.message);
        assert!(refuse_duplicate_ids([(Path::new("a/x.md"), "x"), (Path::new("a/y.md"), "y")].into_iter()).is_ok());
    }
}
