//! Fork: a new sandbox whose worlds are another's (or a finished run's) as they stood after
//! a chosen row of each tape. The fork's tapes start with the rows it inherited, marked
//! `inherited`, so grading sees the whole history; each twin's world is rebuilt from the
//! newest checkpoint at or before its row (or its seed) by replaying the rows after it, and
//! its virtual clock continues from that row. The parent is only read.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Value, json};

use super::Caller;
use crate::app::{App, Inheritance, TwinBoot};
use crate::error::ApiError;
use crate::sandbox::SandboxMeta;
use pome_grade::run::ForkedFrom;

/// `POST /v1/sandboxes/:id/fork`, `POST /v1/runs/:id/fork`, MCP `fork_sandbox`/`fork_run`.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForkRequest {
    /// Where to fork each twin: the world after that many rows of its tape (0: its seed's
    /// world). A twin not named forks at its newest row.
    #[serde(default)]
    pub at: BTreeMap<String, u64>,
    /// Who acts in the fork, carried onto its run (default: the parent's).
    pub agent_id: Option<String>,
    pub agent_version: Option<String>,
    /// The trial group the fork belongs to (default: the parent's).
    pub group_id: Option<String>,
    /// A stored task to grade the fork against instead of the parent's (another agent
    /// starting a task from this position); its twins must be the parent's, in order.
    pub task_id: Option<String>,
}

/// Fork the team's open sandbox `id`. The answer is the new sandbox, as a create answers it.
pub async fn fork_sandbox(app: &App, caller: &Caller, id: &str, req: ForkRequest) -> Result<Value, ApiError> {
    let parent = super::open_sandbox(app, &caller.team, id)?;
    let _slot = super::rebuild_slot(app, &caller.team)?;
    check_twins(&req.at, &parent.twin_names())?;
    let mut boots = Vec::with_capacity(parent.twins.len());
    let mut at = BTreeMap::new();
    for t in &parent.twins {
        let failed = |e: pome_runtime::store::StoreError| ApiError::internal(format!("reading the {} twin of sandbox {id}: {e}", t.name));
        let rows = t.store.memory().await.map_err(failed)?.rows;
        let n = position(&req.at, &t.name, rows)?;
        let inherit = super::inheritance(t, n).await.map_err(failed)?;
        boots.push(TwinBoot { name: t.name.clone(), seed: t.seed.text.clone(), image: Some(t.seed.clone()), inherit: Some(inherit) });
        at.insert(t.name.clone(), n);
    }
    let from = ForkedFrom { sandbox_id: Some(parent.id.clone()), run_id: None, at };
    let meta = fork_meta(app, &caller.team, &parent.meta, &parent.twin_names(), req, from).await?;
    let sandbox = app.open_sandbox(&caller.team, boots, meta, None).await?;
    Ok(super::sandboxes::sandbox_json(app, &sandbox, &caller.origin, true))
}

/// Fork the team's finished run `id`, from its recorded seeds and tapes.
pub async fn fork_run(app: &App, caller: &Caller, id: &str, req: ForkRequest) -> Result<Value, ApiError> {
    let run = super::whole_run(app, &caller.team, id).await?;
    let _slot = super::rebuild_slot(app, &caller.team)?;
    check_twins(&req.at, &run.twins)?;
    let mut boots = Vec::with_capacity(run.twins.len());
    let mut at = BTreeMap::new();
    for name in &run.twins {
        let record = run.per_twin.get(name).ok_or_else(|| ApiError::internal(format!("run {id} names the {name} twin but holds no record of it")))?;
        if !app.twins.contains_key(name) {
            return Err(ApiError::validation(format!("run {id} used the {name} twin, which this server does not have")).with_details(json!({"twin": name})));
        }
        let seed = super::run_seed(&run, name)?.to_string();
        let n = position(&req.at, name, record.tape.len() as u64)?;
        let rows = record.tape[..n as usize].to_vec();
        boots.push(TwinBoot { name: name.clone(), seed, image: None, inherit: Some(Inheritance { base: None, rows }) });
        at.insert(name.clone(), n);
    }
    let parent = SandboxMeta {
        task_id: run.task_id.clone(),
        task_version: run.task_version.clone(),
        group_id: run.group_id.clone(),
        agent_id: run.agent_id.clone(),
        agent_version: run.agent_version.clone(),
        forked_from: None,
    };
    let from = ForkedFrom { sandbox_id: Some(run.session_id.clone()), run_id: Some(run.id.clone()), at };
    let meta = fork_meta(app, &caller.team, &parent, &run.twins, req, from).await?;
    let sandbox = app.open_sandbox(&caller.team, boots, meta, None).await?;
    Ok(super::sandboxes::sandbox_json(app, &sandbox, &caller.origin, true))
}

/// A fork keeps its parent's task (it is graded against the same one) unless the request
/// names another over the same twins, and its agent and trial group unless the request says
/// otherwise.
async fn fork_meta(app: &App, team: &str, parent: &SandboxMeta, twins: &[String], req: ForkRequest, from: ForkedFrom) -> Result<SandboxMeta, ApiError> {
    let (task_id, task_version) = match &req.task_id {
        None => (parent.task_id.clone(), parent.task_version.clone()),
        Some(id) => {
            let (task, version) = crate::task_api::for_create(app, team, &super::sandboxes::CreateRequest { task_id: Some(id.clone()), ..Default::default() }).await?.expect("a task id names a task or is refused");
            if task.config.twins != twins {
                return Err(ApiError::validation(format!("task `{id}` runs on {:?}, and the world forked here holds {twins:?}", task.config.twins))
                    .with_details(json!({"field": "task_id", "task_twins": task.config.twins, "twins": twins})));
            }
            (Some(id.clone()), Some(version))
        }
    };
    Ok(SandboxMeta {
        task_id,
        task_version,
        group_id: req.group_id.or_else(|| parent.group_id.clone()),
        agent_id: req.agent_id.or_else(|| parent.agent_id.clone()),
        agent_version: req.agent_version.or_else(|| parent.agent_version.clone()),
        forked_from: Some(from),
    })
}

/// Every twin `at` names is one of the parent's.
fn check_twins(at: &BTreeMap<String, u64>, twins: &[String]) -> Result<(), ApiError> {
    match at.keys().find(|k| !twins.contains(k)) {
        Some(k) => Err(ApiError::validation(format!("`at` names `{k}`, which is not a twin of this sandbox ({twins:?})")).with_details(json!({"field": "at", "twin": k}))),
        None => Ok(()),
    }
}

/// The position to fork `twin` at: the one asked for, which its tape of `rows` must reach,
/// or its newest row.
fn position(at: &BTreeMap<String, u64>, twin: &str, rows: u64) -> Result<u64, ApiError> {
    at.get(twin).map_or(Ok(rows), |&n| within(twin, n, rows))
}

/// Position `n` of `twin`'s tape of `rows`, which it must not pass.
pub(super) fn within(twin: &str, n: u64, rows: u64) -> Result<u64, ApiError> {
    if n > rows {
        return Err(ApiError::validation(format!("the {twin} tape has {rows} rows; a position is 0 to {rows}")).with_details(json!({"field": "at", "twin": twin, "rows": rows})));
    }
    Ok(n)
}
