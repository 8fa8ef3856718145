//! Grading did not change when the checks moved into the twin. Each file in `tests/golden/`
//! holds, for one task in `tests/tasks-compat`, its seeded world, a world after an agent
//! worked on it, and what the host's grader (`host/src/grade/checks.rs` as of contract
//! 0.2.0, commit c945bb9) decided for each of the task's Slack criteria in each world. The
//! twin must decide every one the same way: same outcome, same reason, same evidence.

use std::path::PathBuf;

use pome_twin_sdk::checks::golden;
use twin_slack::World;

#[test]
fn every_task_criterion_is_decided_as_the_hosts_grader_decided_it() {
    let t = golden::assert_decided_as_recorded::<World>(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden"));
    assert!(t.files >= 8 && t.decided >= 30, "{t:?}");
    assert!(t.held >= 8 && t.held <= t.decided - 8, "the golden worlds should both pass and fail criteria: {t:?}");
}
