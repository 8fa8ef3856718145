//! A run: the graded, persisted result of one sandbox (DESIGN §2), as one type from where
//! finalize makes it to storage, the API, `pome run`'s run directory and `pome eval`. JSON is
//! written once on the way out and read once on the way in.

use std::collections::BTreeMap;

use pome_tape::TapeRow;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{CriterionResult, Grade, RunData, TwinRun};

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Run {
    pub id: String,
    #[serde(default = "run_object")]
    pub object: String,
    pub session_id: String,
    pub twins: Vec<String>,
    pub primary_twin: String,
    pub task_id: Option<String>,
    /// The version of the task the sandbox booted from (and was graded with).
    #[serde(default)]
    pub task_version: Option<String>,
    pub group_id: Option<String>,
    pub agent_id: Option<String>,
    pub agent_version: Option<String>,
    pub created_at: String,
    pub finalized_at: String,
    /// Set when the sandbox had a task: what it was graded against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskRef>,
    /// `pass`, `fail`, `incomplete`; null when there was no task to grade against.
    pub verdict: Option<String>,
    #[serde(default)]
    pub score: Option<u32>,
    #[serde(default)]
    pub pass_threshold: Option<u32>,
    #[serde(default)]
    pub criteria_results: Vec<CriterionResult>,
    pub per_twin: BTreeMap<String, TwinRecord>,
    /// Where the sandbox began, when it was a fork: its tapes start with the rows it
    /// inherited from there (marked `inherited`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<ForkedFrom>,
}

/// The sandbox or run a fork began from, and the tape position per twin it began at (the
/// world after that many rows).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForkedFrom {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    pub at: BTreeMap<String, u64>,
}

fn run_object() -> String {
    "run".into()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRef {
    pub id: String,
    pub version: String,
    pub title: String,
    pub pass_threshold: u32,
}

/// One twin's side of a run.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct TwinRecord {
    pub initial_state: Value,
    /// Null when it could not be read ([`TwinRecord::state_error`]).
    pub final_state: Value,
    /// Why the final state could not be read (the twin's world outgrew what its store may
    /// hold while writing it out): criteria that read it are errored with this reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_error: Option<String>,
    /// Paths that differ between the two, with before and after.
    #[serde(default)]
    pub diff: Vec<crate::diff::Change>,
    pub tape: Vec<TapeRow>,
    /// The webhooks the twin asked for, with every delivery attempt.
    #[serde(default)]
    pub deliveries: Vec<pome_tape::DeliveryLog>,
    /// The seed text the twin booted from ("" = its default world), for `pome replay`.
    #[serde(default)]
    pub seed: Option<String>,
}

impl Run {
    /// What the grader reads: per twin, seed state, final state and tape.
    pub fn data(&self) -> RunData {
        self.per_twin
            .iter()
            .map(|(k, t)| {
                (k.clone(), TwinRun { initial_state: t.initial_state.clone(), final_state: t.final_state.clone(), state_error: t.state_error.clone(), tape: t.tape.clone() })
            })
            .collect()
    }

    /// Write a grade into the run.
    pub fn set_grade(&mut self, task: TaskRef, g: Grade) {
        self.score = g.score;
        self.verdict = Some(g.verdict);
        self.pass_threshold = Some(g.pass_threshold);
        self.criteria_results = g.criteria_results;
        self.task = Some(task);
    }

    pub fn tape_rows(&self) -> usize {
        self.per_twin.values().map(|t| t.tape.len()).sum()
    }

    /// The run as markdown: verdict, criteria with their evidence, each twin's calls and
    /// state changes.
    pub fn report(&self) -> String {
        let mut md = String::new();
        let title = self.task.as_ref().map_or("(no task)", |t| t.title.as_str());
        md.push_str(&format!("# Run {} — {}\n\n", cell(&self.id), title));
        let verdict = self.verdict.as_deref().map_or("ungraded".to_string(), str::to_uppercase);
        let opt = |v: &Option<String>| v.as_deref().map_or("—".to_string(), cell);
        let num = |v: Option<u32>| v.map_or("—".to_string(), |n| n.to_string());
        md.push_str(&format!(
            "**{verdict}** · score {} (threshold {}) · sandbox `{}` · twins {} · agent {} {} · finalized {}\n\n",
            num(self.score),
            num(self.pass_threshold),
            cell(&self.session_id),
            self.twins.join(", "),
            opt(&self.agent_id),
            opt(&self.agent_version),
            cell(&self.finalized_at),
        ));
        if !self.criteria_results.is_empty() {
            md.push_str("## Criteria\n\n| # | status | criterion | reason | evidence |\n|---|---|---|---|---|\n");
            for r in &self.criteria_results {
                let ev = &r.evidence;
                let twin = ev["twin"].as_str().unwrap_or("");
                let ev = match (ev["state"].as_str(), ev["seq"].as_u64()) {
                    (Some(p), _) => format!("{twin} state `{}`", cell(p)),
                    (_, Some(s)) => format!("{twin} tape seq {s}"),
                    _ if ev.is_null() => "—".to_string(),
                    _ => cell(&ev.to_string()),
                };
                let status = r.status.as_str();
                md.push_str(&format!("| {} | {status} | {} | {} | {ev} |\n", r.index, cell(&r.text), cell(&r.reason)));
            }
            md.push('\n');
        }
        for (twin, pt) in &self.per_twin {
            md.push_str(&format!("## {twin}\n\n### Calls ({})\n\n", pt.tape.len()));
            if !pt.tape.is_empty() {
                md.push_str("| seq | method | path | status | action | fidelity |\n|---|---|---|---|---|---|\n");
                for r in &pt.tape {
                    let fidelity = if r.fidelity == pome_tape::Fidelity::Unsupported { "unsupported" } else { "semantic" };
                    md.push_str(&format!(
                        "| {} | {} | {} | {} | {} | {fidelity} |\n",
                        r.seq,
                        cell(&r.method),
                        cell(&r.path),
                        r.status,
                        r.action.as_deref().map_or("—".to_string(), cell)
                    ));
                }
                md.push('\n');
            }
            md.push_str(&format!("### State changes ({})\n\n", pt.diff.len()));
            for d in &pt.diff {
                md.push_str(&format!("- `{}`: {} → {}\n", cell(&d.path), json_cell(&d.before), json_cell(&d.after)));
            }
            md.push('\n');
        }
        md
    }
}

fn json_cell(v: &Value) -> String {
    match v {
        Value::String(s) => cell(s),
        Value::Null => "—".to_string(),
        other => cell(&other.to_string()),
    }
}

/// Text fit for one markdown table cell: one line, no pipes, at most 120 characters.
fn cell(s: &str) -> String {
    let s = s.replace('|', "\\|").replace('\n', " ");
    if s.chars().count() > 120 { format!("{}…", s.chars().take(120).collect::<String>()) } else { s }
}
