//! `pome run`, `pome eval`, `pome replay`, `pome tasks validate`, `pome checks`: from a task
//! file to a verdict, with every artefact of the run on disk.
//!
//! `pome run` talks to a server over HTTP (`--local` starts one in this process on
//! 127.0.0.1:0 first, so the local and hosted paths are the same code): it stores the task,
//! creates a sandbox from it, runs the agent with the connection details in its environment
//! (DESIGN §9) under the task's timeout (TERM, then KILL), finalizes (which grades), and
//! writes `runs/<task>/<run-id>/`. `pome eval` regrades such a directory offline with the same
//! grader; `pome replay` re-executes its tapes on fresh stores.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::client::{ClientArgs, exit};
use crate::client::{Client, Failure, fail, finish};
use pome_grade::{Catalog, Grade, TwinRun};
use pome_runtime::limits::{Lifetimes, Limits};
use pome_grade::task::{self, Task};

/// `pome run` arguments, already validated by clap.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// Task files (markdown; a `<task>.seed.json` beside one is its seed), or directories of
    /// them: every `*.md` but README.md, at any depth. Several make a suite.
    #[arg(required = true, num_args = 1.., value_name = "TASK|DIR")]
    pub tasks: Vec<PathBuf>,
    /// Trials of each task (one trial group per task); each task's `runs` by default.
    #[arg(short = 'n', long = "trials")]
    pub trials: Option<u32>,
    /// The k of pass^k (the chance that k fresh trials all pass, estimated without bias from
    /// the n trials run); n by default.
    #[arg(short = 'k', long = "pass-k")]
    pub pass_k: Option<u32>,
    /// Trials at once, each in its own sandbox and process group. Default: what the team's
    /// quota leaves, at most twice the machine's cores.
    #[arg(short = 'j', long = "jobs")]
    pub jobs: Option<usize>,
    /// Write a report when the suite ends: `junit=FILE` (a test case per task, a failure per
    /// failed trial) or `json=FILE` (the summary table as data). Repeat for both.
    #[arg(long = "report", value_name = "junit=FILE|json=FILE", value_parser = crate::report::Spec::parse)]
    pub reports: Vec<crate::report::Spec>,
    /// Run everything in this process: a server on 127.0.0.1:0, no account needed.
    #[arg(long)]
    pub local: bool,
    /// Recorded on the run, to compare agent versions.
    #[arg(long)]
    pub agent_version: Option<String>,
    #[arg(long)]
    pub agent_id: Option<String>,
    /// Where run directories go.
    #[arg(long, default_value = "runs")]
    pub runs_dir: PathBuf,
    /// Override the task's timeout (seconds).
    #[arg(long)]
    pub timeout: Option<u64>,
    /// Third-party twins for `--local`.
    #[arg(long, env = "POME_TWINS_DIR")]
    pub twins_dir: Option<PathBuf>,
    /// Where `--local` caches compiled twins.
    #[arg(long, env = "POME_DATA", default_value = "pome-data")]
    pub data: PathBuf,
    #[command(flatten)]
    pub client: ClientArgs,
    /// Start each trial from another run's world instead of the task's seed:
    /// `RUN_ID[@TWIN=N,…]`, the run's worlds after N rows of each twin's tape (default: its
    /// end). The task's prompt and criteria grade it; its twins must be the run's.
    #[arg(long, value_name = "RUN_ID[@TWIN=N,…]")]
    pub from: Option<String>,
    /// The agent command, after `--`.
    #[arg(last = true, required = true)]
    pub agent: Vec<String>,
}

/// One task of a run, read and stored on the server, with what its trials share.
pub struct LoadedTask {
    pub file: PathBuf,
    pub task: Task,
    pub source: String,
    pub sidecar: Option<String>,
    pub catalog: Catalog,
    /// Its trials' group on the server (`group_id` on each run).
    pub group_id: String,
}

/// A trial that ran to a verdict, its run directory written.
#[derive(Debug, Clone)]
pub struct Finished {
    pub run_id: String,
    pub dir: PathBuf,
    pub grade: Grade,
    pub duration_ms: u64,
    pub timed_out: bool,
}

pub async fn run(args: RunArgs) -> i32 {
    finish(run_inner(args).await)
}

async fn run_inner(args: RunArgs) -> Result<i32, Failure> {
    watch_for_ctrl_c();
    // Every file is read before anything runs: a broken task found after an hour of trials
    // would waste the hour.
    let files = crate::suite::task_files(&args.tasks)?;
    let mut read = Vec::new();
    for file in files {
        let t = task::load(&file).map_err(|e| fail(exit::USAGE, e.to_string()))?;
        let source = std::fs::read_to_string(&file).map_err(|e| fail(exit::USAGE, format!("reading {}: {e}", file.display())))?;
        let sidecar = std::fs::read_to_string(file.with_file_name(format!("{}.seed.json", t.id))).ok();
        read.push((file, t, source, sidecar));
    }
    crate::suite::refuse_duplicate_ids(read.iter().map(|(f, t, ..)| (f.as_path(), t.id.as_str())))?;
    if args.from.is_some() && args.local {
        return Err(fail(exit::USAGE, "--from forks a run the server holds; a --local run starts a server of its own with no runs"));
    }
    if args.from.is_some() && read.len() > 1 {
        return Err(fail(exit::USAGE, "--from forks one run's world: give it one task, not a suite"));
    }
    if args.jobs == Some(0) {
        return Err(fail(exit::USAGE, "-j 0 runs nothing: give at least 1"));
    }

    // --local: the same server, in this process, on a private port and a throwaway database.
    let mut local = None;
    let mut _local_data = None;
    let api = if args.local {
        let data = std::env::temp_dir().join(format!("pome-local-{}-{}", std::process::id(), pome_server::auth::new_id("d")));
        std::fs::create_dir_all(&data).map_err(|e| fail(exit::ORCHESTRATION, format!("creating {}: {e}", data.display())))?;
        let key = pome_server::auth::new_api_key();
        let cfg = pome_server::server::ServeConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            data_dir: data.clone(),
            quota: LOCAL_QUOTA,
            lifetimes: Lifetimes::default(),
            limits: Limits::default(),
            twins_dir: args.twins_dir.clone(),
            // A local run's receivers are on this machine; `pome serve` allows none by default.
            outbound: pome_runtime::outbound::Policy { allowed: pome_runtime::outbound::loopback(), ..Default::default() },
            api_key: Some(key.clone()),
            public_url: None,
            public_host: None,
            tls: None,
            cache_dir: Some(args.data.join("cache")),
            // A local run's sandboxes end with it: nothing to bring back.
            durability: pome_server::live::Durability::Memory,
            store: None,
            lease: std::time::Duration::from_secs(10),
            advertise_url: None,
            drain_wait: std::time::Duration::ZERO,
            metrics_public: false,
            auth_failures_allowed: pome_runtime::limits::AUTH_FAILURES_ALLOWED,
            host_limits: Default::default(),
        };
        let running = pome_server::server::start(cfg).await.map_err(|e| fail(exit::ORCHESTRATION, format!("starting the local server: {e:#}")))?;
        eprintln!("pome: local run: webhooks are delivered to loopback only (127.0.0.0/8, ::1)");
        let base = format!("http://{}", running.addr);
        local = Some(running);
        _local_data = Some(TempDir(data));
        Client::at(&base, key)
    } else {
        let key = args.client.api_key.clone().filter(|k| !k.is_empty()).ok_or_else(|| {
            fail(exit::AUTH, "no API key: set POME_API_KEY (printed by `pome serve` on first start), or use --local")
        })?;
        Client::at(&args.client.api_url, key)
    };

    let twins_v = api.call(reqwest::Method::GET, "/v1/twins", None).await?;
    let descriptions: Vec<pome_contract::Description> =
        twins_v["data"].as_array().into_iter().flatten().filter_map(|d| serde_json::from_value(d["description"].clone()).ok()).collect();
    let mut tasks = Vec::new();
    for (file, t, source, sidecar) in read {
        let sidecar_json: Option<Value> = sidecar.as_deref().and_then(|s| serde_json::from_str(s).ok());
        let stored = api.call(reqwest::Method::POST, "/v1/tasks", Some(json!({"id": t.id, "source": source, "seed": sidecar_json}))).await?;
        for c in stored["criteria"].as_array().into_iter().flatten().filter(|c| c["kind"] == "code" && c["binding"].is_null()) {
            eprintln!("pome: warning: {}: criterion {} binds to no check: {} ({})", t.id, c["index"], c["text"].as_str().unwrap_or(""), c["unmatched"].as_str().unwrap_or(""));
        }
        let catalog = Catalog::new(descriptions.iter().filter(|d| t.config.twins.contains(&d.name)));
        tasks.push(LoadedTask { file, task: t, source, sidecar, catalog, group_id: pome_server::auth::new_id("grp") });
    }

    let pairs: usize = tasks.iter().map(|t| args.trials.unwrap_or(t.task.config.runs).max(1) as usize).sum();
    let jobs = match args.jobs {
        Some(j) => j,
        None => default_jobs(&api).await.min(pairs).max(1),
    };
    let code = if pairs == 1 {
        // One trial: its criteria, verdict and directory, as the run's own report.
        let t = &tasks[0];
        let done = trial_once(&api, t, &args).await?;
        if done.timed_out {
            println!("agent timed out after {}s and was stopped", args.timeout.unwrap_or(t.task.config.timeout));
        }
        print_grade(&done.grade);
        println!("run {}  →  {}", done.run_id, done.dir.display());
        let summary = crate::suite::summarize(&tasks, &[crate::suite::Trial { task: 0, number: 1, outcome: Ok(done) }], &args);
        crate::report::write_all(&args.reports, &summary)?;
        summary.exit_code()
    } else {
        let summary = crate::suite::run(&api, &tasks, &args, jobs).await;
        crate::report::write_all(&args.reports, &summary)?;
        summary.exit_code()
    };
    if let Some(r) = local {
        r.shutdown().await;
    }
    Ok(if interrupted() { exit::INTERRUPTED } else { code })
}

/// Ctrl-C, once pressed: seen by every running agent (which is stopped, group and all) and by
/// the suite (which starts nothing more). Without it the agents, each in a process group of
/// its own, would outlive `pome run` and go on calling their sandboxes.
static INTERRUPT: std::sync::LazyLock<tokio::sync::watch::Sender<bool>> = std::sync::LazyLock::new(|| tokio::sync::watch::channel(false).0);

fn watch_for_ctrl_c() {
    tokio::spawn(async {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("pome: interrupted: stopping the running agents (Ctrl-C again to quit at once)");
            INTERRUPT.send_replace(true);
            if tokio::signal::ctrl_c().await.is_ok() {
                std::process::exit(exit::INTERRUPTED);
            }
        }
    });
}

/// Whether Ctrl-C was pressed.
pub fn interrupted() -> bool {
    *INTERRUPT.borrow()
}

async fn until_interrupted() {
    let mut rx = INTERRUPT.subscribe();
    let _ = rx.wait_for(|stop| *stop).await;
}

/// The sandboxes a `--local` run's private server allows at once.
const LOCAL_QUOTA: usize = 64;

/// `-j` unset: as many trials as the team's quota leaves open, and no more than twice the
/// machine's cores (an agent mostly waits on its model, so a core serves about two).
async fn default_jobs(api: &Client) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let remaining = match api.call(reqwest::Method::GET, "/v1/usage", None).await {
        Ok(u) => u["sessions_remaining"].as_u64().map_or(1, |n| n as usize),
        Err(_) => 1,
    };
    remaining.min(2 * cores).max(1)
}

/// `--from RUN_ID[@TWIN=N,…]`: the run, and the positions as a fork request's `at`.
fn from_run(from: &str) -> Result<(String, Value), Failure> {
    let (run, positions) = from.split_once('@').unwrap_or((from, ""));
    let mut at = serde_json::Map::new();
    for p in positions.split(',').filter(|p| !p.is_empty()) {
        let bad = || fail(exit::USAGE, format!("--from {from}: `{p}` is not TWIN=N (github=17)"));
        let (twin, n) = p.split_once('=').ok_or_else(bad)?;
        at.insert(twin.to_string(), json!(n.parse::<u64>().map_err(|_| bad())?));
    }
    Ok((run.to_string(), Value::Object(at)))
}

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One trial: a sandbox from the task's seed (or `--from`), the agent, finalize, and the run
/// directory. Prints nothing: the caller decides how a trial is shown.
pub async fn trial_once(api: &Client, lt: &LoadedTask, args: &RunArgs) -> Result<Finished, Failure> {
    let (t, source, sidecar, catalog, group_id) = (&lt.task, lt.source.as_str(), lt.sidecar.as_deref(), &lt.catalog, lt.group_id.as_str());
    let who = json!({"task_id": t.id, "group_id": group_id, "agent_id": args.agent_id, "agent_version": args.agent_version});
    let sb = match &args.from {
        None => api.call(reqwest::Method::POST, "/v1/sandboxes", Some(who)).await?,
        Some(from) => {
            let (run, at) = from_run(from)?;
            let mut body = who;
            body["at"] = at;
            api.call(reqwest::Method::POST, &format!("/v1/runs/{run}/fork"), Some(body)).await?
        }
    };
    let sid = sb["id"].as_str().unwrap_or_default().to_string();

    let task_dir = args.runs_dir.join(&t.id);
    let pending = task_dir.join(format!(".{sid}"));
    std::fs::create_dir_all(&pending).map_err(|e| fail(exit::ORCHESTRATION, format!("creating {}: {e}", pending.display())))?;

    let mut env: Vec<(String, String)> = vec![
        ("POME_TASK".into(), t.prompt.clone()),
        ("POME_TASK_ID".into(), t.id.clone()),
        ("POME_TASK_FILE".into(), lt.file.display().to_string()),
        ("POME_RUN_ID".into(), sid.clone()),
    ];
    // The sandbox's own environment: ids, token, and per twin what the twin declares.
    for (k, v) in sb["agent_env"].as_object().into_iter().flatten() {
        env.push((k.clone(), v.as_str().unwrap_or_default().to_string()));
    }

    let timeout = Duration::from_secs(args.timeout.unwrap_or(t.config.timeout));
    let started = Instant::now();
    let started_at = pome_server::storage::now();
    let agent = match run_agent(&args.agent, &env, &pending, timeout).await {
        Ok(a) => a,
        Err(f) => {
            // Interrupted (or never started): not a run to grade. Its sandbox is thrown away
            // rather than left open until it idles out.
            discard(api, &sid).await;
            let _ = std::fs::remove_dir_all(&pending);
            return Err(f);
        }
    };
    let elapsed = started.elapsed();

    let fin = api.call(reqwest::Method::POST, &format!("/v1/sandboxes/{sid}/finalize"), None).await?;
    let run_id = fin["run_id"].as_str().unwrap_or_default().to_string();
    let run = api.call(reqwest::Method::GET, &format!("/v1/runs/{run_id}"), None).await?;

    // Everything `pome eval` and `pome replay` need, offline.
    let mut events = String::new();
    let (mut initial, mut fin_state, mut seeds) = (serde_json::Map::new(), serde_json::Map::new(), serde_json::Map::new());
    for twin in &t.config.twins {
        let pt = &run["per_twin"][twin];
        for row in pt["tape"].as_array().into_iter().flatten() {
            events.push_str(&row.to_string());
            events.push('\n');
        }
        initial.insert(twin.clone(), pt["initial_state"].clone());
        fin_state.insert(twin.clone(), pt["final_state"].clone());
        seeds.insert(twin.clone(), pt.get("seed").cloned().unwrap_or(json!("")));
    }
    let verdict = json!({
        "run_id": run_id, "task": t.id, "score": fin["score"], "verdict": fin["verdict"],
        "pass_threshold": fin["pass_threshold"], "criteria_results": fin["criteria_results"],
    });
    let meta = json!({
        "run_id": run_id, "task": t.id, "title": t.title, "task_file": lt.file.display().to_string(),
        "sandbox_id": sid, "group_id": group_id, "agent_id": args.agent_id, "agent_version": args.agent_version,
        "agent_command": args.agent, "agent_exit": agent.exit, "timed_out": agent.timed_out,
        "started_at": started_at, "finished_at": pome_server::storage::now(), "duration_ms": elapsed.as_millis() as u64,
        "twins": t.config.twins, "server": if args.local { "local".to_string() } else { api.base.clone() },
    });
    let write = |name: &str, text: String| -> Result<(), Failure> {
        std::fs::write(pending.join(name), text).map_err(|e| fail(exit::ORCHESTRATION, format!("writing {name}: {e}")))
    };
    let pretty = |v: &Value| serde_json::to_string_pretty(v).unwrap_or_default() + "\n";
    write("meta.json", pretty(&meta))?;
    write("events.jsonl", events)?;
    write("state_initial.json", pretty(&Value::Object(initial)))?;
    write("state_final.json", pretty(&Value::Object(fin_state)))?;
    write("verdict.json", pretty(&verdict))?;
    write("task.md", source.to_string())?;
    if let Some(s) = sidecar {
        write("task.seed.json", s.to_string())?;
    }
    write("seed.json", pretty(&Value::Object(seeds)))?;
    write("checks.json", pretty(&serde_json::to_value(catalog).unwrap_or_default()))?;
    let typed: pome_grade::run::Run = serde_json::from_value(run.clone()).map_err(|e| fail(exit::ORCHESTRATION, format!("run {run_id} is not a run: {e}")))?;
    write("report.md", typed.report())?;
    let dir = task_dir.join(&run_id);
    std::fs::rename(&pending, &dir).map_err(|e| fail(exit::ORCHESTRATION, format!("moving the run to {}: {e}", dir.display())))?;

    Ok(Finished { run_id, dir, grade: grade_from_verdict(&verdict), duration_ms: elapsed.as_millis() as u64, timed_out: agent.timed_out })
}

fn grade_from_verdict(v: &Value) -> Grade {
    Grade {
        score: v["score"].as_u64().map(|s| s as u32),
        verdict: v["verdict"].as_str().unwrap_or("incomplete").to_string(),
        pass_threshold: v["pass_threshold"].as_u64().unwrap_or(100) as u32,
        criteria_results: serde_json::from_value(v["criteria_results"].clone()).unwrap_or_default(),
    }
}

pub fn print_grade(g: &Grade) {
    for r in &g.criteria_results {
        let status = r.status.as_str();
        let ev = match &r.evidence {
            Value::Null => String::new(),
            e => format!("  [{}]", evidence_text(e)),
        };
        let tag = match (&r.kind[..], &r.twin) {
            ("code", Some(tw)) => format!("code:{tw}"),
            (k, _) => k.to_string(),
        };
        println!("  {status:<9} [{tag}] {}", r.text);
        println!("            {}{ev}", r.reason);
    }
    let score = g.score.map_or("–".to_string(), |s| s.to_string());
    println!("verdict {}  score {score} (threshold {})", g.verdict.to_uppercase(), g.pass_threshold);
}

pub(crate) fn evidence_text(e: &Value) -> String {
    let twin = e["twin"].as_str().unwrap_or("");
    if let Some(p) = e["state"].as_str() {
        format!("{twin} state {p}")
    } else if let Some(s) = e["seq"].as_u64() {
        format!("{twin} tape seq {s}")
    } else if let Some(n) = e["tape"].as_u64() {
        format!("{twin} tape ({n} rows)")
    } else if let Some(x) = e["expr"].as_str() {
        format!("{twin} {x} (expression)")
    } else {
        e.to_string()
    }
}

struct AgentResult {
    exit: Option<i32>,
    timed_out: bool,
}

/// Run the agent with `env`, its output to `dir/{stdout.txt,stderr.log}`; past `timeout`,
/// SIGTERM, then SIGKILL after a grace period.
async fn run_agent(cmd: &[String], env: &[(String, String)], dir: &Path, timeout: Duration) -> Result<AgentResult, Failure> {
    let out = std::fs::File::create(dir.join("stdout.txt")).map_err(|e| fail(exit::ORCHESTRATION, e.to_string()))?;
    let err = std::fs::File::create(dir.join("stderr.log")).map_err(|e| fail(exit::ORCHESTRATION, e.to_string()))?;
    let mut child = tokio::process::Command::new(&cmd[0])
        .args(&cmd[1..])
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err))
        .kill_on_drop(true)
        // Its own process group, so a timeout stops the agent and everything it started.
        .process_group(0)
        .spawn()
        .map_err(|e| fail(exit::USAGE, format!("cannot start the agent `{}`: {e}", cmd[0])))?;
    let waited = tokio::select! {
        status = tokio::time::timeout(timeout, child.wait()) => Some(status),
        _ = until_interrupted() => None,
    };
    match waited {
        Some(Ok(status)) => Ok(AgentResult { exit: status.ok().and_then(|s| s.code()), timed_out: false }),
        Some(Err(_)) => {
            let code = stop_group(&mut child, Duration::from_secs(5)).await;
            Ok(AgentResult { exit: code, timed_out: true })
        }
        None => {
            stop_group(&mut child, Duration::from_secs(2)).await;
            Err(fail(exit::INTERRUPTED, "interrupted: the agent was stopped"))
        }
    }
}

/// SIGTERM to the agent's process group, SIGKILL to whatever of it outlives `grace` (the agent
/// may have exited and left its children behind); the agent's exit code, if it had one.
async fn stop_group(child: &mut tokio::process::Child, grace: Duration) -> Option<i32> {
    let group = child.id().map(|pid| format!("-{pid}"));
    let signal = |sig: &str| {
        if let Some(g) = &group {
            let _ = std::process::Command::new("kill").args([sig, "--", g]).status();
        }
    };
    signal("-TERM");
    let _ = tokio::time::timeout(grace, child.wait()).await;
    signal("-KILL");
    let _ = child.kill().await;
    child.try_wait().ok().flatten().and_then(|s| s.code())
}

/// Throws an unfinished sandbox away (best effort: it idles out if the server is gone).
async fn discard(api: &Client, sid: &str) {
    if let Err(f) = api.call(reqwest::Method::DELETE, &format!("/v1/sandboxes/{sid}"), None).await
        && let Some(token) = f.error["details"]["discard_token"].as_str()
    {
        let _ = api.call(reqwest::Method::DELETE, &format!("/v1/sandboxes/{sid}?confirm_discard={token}"), None).await;
    }
}

/// Regrade a run directory offline: the task, states and tape it holds, the checks recorded
/// with it, the same grader. Returns the fresh grade and the recorded one.
pub async fn eval_dir(dir: &Path, twins_dir: Option<&Path>, data_dir: &Path) -> Result<(Grade, Grade), Failure> {
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).map_err(|e| fail(exit::USAGE, format!("{}: {e}", dir.join(name).display())));
    let json_of = |name: &str| -> Result<Value, Failure> { serde_json::from_str(&read(name)?).map_err(|e| fail(exit::USAGE, format!("{name}: {e}"))) };
    let meta = json_of("meta.json")?;
    let id = meta["task"].as_str().unwrap_or("task");
    let t = task::parse(&dir.join("task.md").display().to_string(), id, &read("task.md")?, read("task.seed.json").ok().as_deref())
        .map_err(|e| fail(exit::USAGE, e.to_string()))?;
    let catalog: Catalog = serde_json::from_value(json_of("checks.json")?).map_err(|e| fail(exit::USAGE, format!("checks.json: {e}")))?;
    let (initial, fin) = (json_of("state_initial.json")?, json_of("state_final.json")?);
    let mut data: pome_grade::RunData = t
        .config
        .twins
        .iter()
        .map(|tw| (tw.clone(), TwinRun { initial_state: initial[tw].clone(), final_state: fin[tw].clone(), tape: Vec::new(), ..TwinRun::default() }))
        .collect();
    for (n, line) in read("events.jsonl")?.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let row: pome_tape::TapeRow = serde_json::from_str(line).map_err(|e| fail(exit::USAGE, format!("events.jsonl line {}: {e}", n + 1)))?;
        if let Some(tr) = data.get_mut(&row.twin) {
            tr.tape.push(row);
        }
    }
    // The twins decide their own checks, offline too: the components are in this binary (or
    // the twins directory), so no server is needed.
    let decider = local_twins(twins_dir, data_dir).await?;
    let g = pome_grade::grade(&t, &data, &catalog, &decider, pome_grade::Judge::from_env().as_ref()).await;
    Ok((g, grade_from_verdict(&json_of("verdict.json")?)))
}

pub async fn eval(dir: PathBuf, twins_dir: Option<PathBuf>, data: PathBuf) -> i32 {
    finish(async {
        let (g, recorded) = eval_dir(&dir, twins_dir.as_deref(), &data).await?;
        print_grade(&g);
        if g.verdict != recorded.verdict || g.score != recorded.score {
            println!("differs from the recorded verdict: {} score {:?}", recorded.verdict, recorded.score);
        } else {
            println!("same as the recorded verdict");
        }
        Ok(if g.verdict == "pass" { exit::OK } else { 1 })
    }
    .await)
}

/// Re-execute a run's tapes on fresh stores from its seeds; every differing response is
/// reported. `target` is a run directory or a run id on the server.
pub async fn replay(target: String, client: ClientArgs, twins_dir: Option<PathBuf>, data: PathBuf) -> i32 {
    finish(async {
        // Rows that cannot be read, and rows missing from a tape, are differences too: a replay
        // that skipped them could report "0 differ" on a tape it never checked.
        let mut problems: Vec<String> = Vec::new();
        let per_twin: Vec<(String, String, Vec<Value>)> = if Path::new(&target).is_dir() {
            let dir = Path::new(&target);
            let seeds: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("seed.json")).map_err(|e| fail(exit::USAGE, format!("seed.json: {e}")))?)
                .map_err(|e| fail(exit::USAGE, format!("seed.json: {e}")))?;
            let events = std::fs::read_to_string(dir.join("events.jsonl")).map_err(|e| fail(exit::USAGE, format!("events.jsonl: {e}")))?;
            let mut rows: Vec<Value> = Vec::new();
            for (n, line) in events.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
                match serde_json::from_str(line) {
                    Ok(v) => rows.push(v),
                    Err(e) => problems.push(format!("events.jsonl line {}: not a tape row ({e})", n + 1)),
                }
            }
            seeds
                .as_object()
                .into_iter()
                .flatten()
                .map(|(tw, s)| (tw.clone(), s.as_str().unwrap_or("").to_string(), rows.iter().filter(|r| r["twin"] == *tw).cloned().collect()))
                .collect()
        } else {
            let key = client.api_key.clone().filter(|k| !k.is_empty()).ok_or_else(|| fail(exit::AUTH, "no API key: set POME_API_KEY"))?;
            let api = Client::at(&client.api_url, key);
            let run = api.call(reqwest::Method::GET, &format!("/v1/runs/{target}"), None).await?;
            if run.get("task").is_none() {
                eprintln!("pome: warning: run {target} has no task, so its seeds are unknown; replaying on default worlds");
            }
            run["per_twin"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(tw, pt)| (tw.clone(), pt["seed"].as_str().unwrap_or("").to_string(), pt["tape"].as_array().cloned().unwrap_or_default()))
                .collect()
        };
        let rt = pome_server::server::runtime(Limits::default(), &data).map_err(|e| fail(exit::ORCHESTRATION, format!("{e:#}")))?;
        let dir = twins_dir.as_deref().map(pome_server::server::open_dir).transpose().map_err(|e| fail(exit::ORCHESTRATION, format!("{e:#}")))?;
        let twins = pome_server::twins::load_all(&rt, dir.as_ref()).await.map_err(|e| fail(exit::ORCHESTRATION, format!("{e:#}")))?;
        let seeds = pome_runtime::seeds::SeedCache::new(8);
        let mut differ = 0;
        for (twin, seed, rows) in per_twin {
            let image = twins.get(&twin).cloned().ok_or_else(|| fail(exit::ORCHESTRATION, format!("this binary has no `{twin}` twin")))?;
            let seed_image = seeds.get(&rt, &image, &seed).await.map_err(|e| fail(exit::ORCHESTRATION, format!("the {twin} seed: {e}")))?;
            let mut parsed: Vec<pome_tape::TapeRow> = Vec::new();
            let mut bad = Vec::new();
            for row in rows {
                let seq = row["seq"].clone();
                match serde_json::from_value(row) {
                    Ok(r) => parsed.push(r),
                    Err(e) => bad.push(format!("{twin} row seq {seq}: unreadable ({e})")),
                }
            }
            parsed.sort_by_key(|r| r.seq);
            // Sequence numbers run 1, 2, 3…; a gap is a row the tape lost.
            let mut expect = 1;
            for r in &parsed {
                for missing in expect..r.seq {
                    bad.push(format!("{twin} row seq {missing}: missing from the tape"));
                }
                expect = r.seq + 1;
            }
            let mismatches = pome_runtime::store::replay(rt.clone(), image, seed_image, &parsed).await.map_err(|e| fail(exit::ORCHESTRATION, format!("replaying {twin}: {e}")))?;
            println!("{twin}: {} rows replayed, {} differ, {} unreadable or missing", parsed.len(), mismatches.len(), bad.len());
            for m in &mismatches {
                println!("  seq {}: status {} → {}\n    expected {}\n    actual   {}", m.seq, m.expected_status, m.actual_status, m.expected_body, m.actual_body);
            }
            for b in &bad {
                println!("  {b}");
            }
            differ += mismatches.len() + bad.len();
        }
        for p in &problems {
            println!("{p}");
        }
        differ += problems.len();
        Ok(if differ == 0 { exit::OK } else { 1 })
    }
    .await)
}

/// The twins this binary has (embedded plus `--twins-dir`), ready to decide their checks.
async fn local_twins(twins_dir: Option<&Path>, data: &Path) -> Result<pome_server::twins::TwinDecider, Failure> {
    let rt = pome_server::server::runtime(Limits::default(), data).map_err(|e| fail(exit::ORCHESTRATION, format!("{e:#}")))?;
    let dir = twins_dir.map(pome_server::server::open_dir).transpose().map_err(|e| fail(exit::ORCHESTRATION, format!("{e:#}")))?;
    let twins = pome_server::twins::load_all(&rt, dir.as_ref()).await.map_err(|e| fail(exit::ORCHESTRATION, format!("{e:#}")))?;
    Ok(pome_server::twins::TwinDecider { rt, twins })
}

/// The catalog of the twins this binary has.
async fn local_catalog(twins_dir: Option<&Path>, data: &Path) -> Result<Catalog, Failure> {
    let twins = local_twins(twins_dir, data).await?;
    Ok(Catalog::new(twins.twins.values().map(|i| &i.description)))
}

/// `pome tasks validate FILE…`: 0 when every file parses and every `[code]` criterion of a
/// twin this binary has binds; 1 when some criterion is unbound; 5 when a file is invalid.
pub async fn validate(files: Vec<PathBuf>, twins_dir: Option<PathBuf>, data: PathBuf) -> i32 {
    finish(async {
        let catalog = local_catalog(twins_dir.as_deref(), &data).await?;
        let mut code = exit::OK;
        for f in files {
            match task::load(&f) {
                Err(e) => {
                    println!("{e}");
                    code = exit::USAGE;
                }
                Ok(t) => {
                    let rows = pome_grade::bindings(&t, &catalog);
                    let missing: Vec<&Value> = rows.iter().filter(|r| r["kind"] == "code" && r["binding"].is_null()).collect();
                    let absent: Vec<&String> = t.config.twins.iter().filter(|tw| !catalog.twins.contains_key(*tw)).collect();
                    println!("{}: {} criteria, twins {:?}{}", f.display(), rows.len(), t.config.twins, if absent.is_empty() { String::new() } else { format!(" (not in this binary: {absent:?})") });
                    for r in &rows {
                        let b = r["binding"].as_str().unwrap_or("UNBOUND");
                        println!("  {:>2}. {b:<40} {}", r["index"], r["text"].as_str().unwrap_or(""));
                        if let Some(why) = r["unmatched"].as_str() {
                            println!("      {why}");
                        }
                    }
                    let bound_missing = missing.iter().any(|r| r["twin"].as_str().is_some_and(|tw| catalog.twins.contains_key(tw)));
                    if bound_missing && code == exit::OK {
                        code = 1;
                    }
                }
            }
        }
        Ok(code)
    }
    .await)
}

/// `pome checks [twin]`: the checks each twin declares.
pub async fn checks(twin: Option<String>, twins_dir: Option<PathBuf>, data: PathBuf) -> i32 {
    finish(async {
        let loaded = local_twins(twins_dir.as_deref(), &data).await?;
        let catalog = Catalog::new(loaded.twins.values().map(|i| &i.description));
        for (name, decls) in &catalog.twins {
            if twin.as_ref().is_some_and(|t| t != name) {
                continue;
            }
            println!("{name}");
            // What the twin declares it serves, so a route that only stores what it is sent
            // (shape-only) is never read as fully served.
            if let Some(image) = loaded.twins.get(name) {
                let surface = &image.description.surface;
                let shape: Vec<_> = surface.iter().filter(|r| r.fidelity == pome_contract::describe::Fidelity::Shape).collect();
                println!("  surface: {} routes, {} served, {} shape-only", surface.len(), surface.len() - shape.len(), shape.len());
                for r in shape {
                    println!("    shape-only  {:<7} {:<60} {}", r.method, r.path, r.action);
                }
            }
            for d in decls.checks.iter().cloned().chain(catalog.checks_of(name).into_iter().flatten().skip(decls.checks.len())) {
                let mark = if decls.decides || d.id.starts_with("tape.") {
                    ""
                } else if d.predicate.is_some() {
                    "  (the twin's CEL predicate)"
                } else {
                    "  (no predicate: criteria bound to it are unmatched)"
                };
                println!("  {:<44} {:<10} {:<8} {}{mark}", d.id, d.substrate, d.polarity, d.template);
            }
        }
        if let Some(t) = twin.filter(|t| !catalog.twins.contains_key(t)) {
            return Err(fail(exit::USAGE, format!("no twin `{t}`; this binary has {:?}", catalog.twins.keys().collect::<Vec<_>>())));
        }
        Ok(exit::OK)
    }
    .await)
}
