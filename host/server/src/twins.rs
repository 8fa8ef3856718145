//! The twins this server has: the first-party twins embedded in the binary at build time
//! (see `build.rs`: every twin crate under `twins/` that was built), plus any third-party
//! components in `--twins-dir`; and the decider that lets them grade their own checks.

use std::sync::Arc;

use cap_std::fs::Dir;
use pome_runtime::{Runtime, TwinSet};

include!(concat!(env!("OUT_DIR"), "/embedded_twins.rs"));

/// Load the embedded twins and those in `twins_dir` (a twin there replaces an embedded one of
/// the same name).
pub async fn load_all(rt: &Runtime, twins_dir: Option<&Dir>) -> anyhow::Result<TwinSet> {
    pome_runtime::twins::load_all(rt, EMBEDDED, twins_dir).await
}

/// Twins decide their own checks: the grader asks through this, and each batch runs on a
/// fresh instance of the twin's component (checks are pure functions of their inputs).
pub struct TwinDecider {
    pub rt: Arc<Runtime>,
    pub twins: TwinSet,
}

impl pome_grade::Decider for TwinDecider {
    async fn decide(
        &self,
        twin: &str,
        world: &pome_grade::CheckInput,
        calls: &[(String, pome_grade::Params)],
    ) -> Result<Vec<Result<pome_contract::Outcome, String>>, String> {
        use pome_runtime::engine::{CheckCall, CheckWorld, Evidence};
        let image = self.twins.get(twin).ok_or_else(|| format!("this host has no `{twin}` twin to decide its checks"))?;
        let input = CheckWorld { seed: world.seed.clone(), state: world.state.clone(), tape: world.tape.clone() };
        let calls: Vec<CheckCall> = calls.iter().map(|(id, p)| CheckCall { id: id.clone(), params: p.clone().into_iter().collect() }).collect();
        let answers = self
            .rt
            .evaluate_checks(image, &input, &calls)
            .await
            .map_err(|e| format!("the {twin} twin failed while deciding its checks: {e:#}"))?
            .ok_or_else(|| format!("the {twin} twin (contract 0.1.0) cannot decide its own checks"))?;
        Ok(answers
            .into_iter()
            .map(|a| {
                a.map(|o| pome_contract::Outcome {
                    holds: o.holds,
                    reason: o.reason,
                    evidence: match o.evidence {
                        Evidence::None => pome_contract::Evidence::None,
                        Evidence::State(p) => pome_contract::Evidence::State(p),
                        Evidence::Tape(s) => pome_contract::Evidence::Tape(s),
                    },
                })
            })
            .collect())
    }
}
