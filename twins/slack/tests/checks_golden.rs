//! Grading did not change when the checks moved into the twin. Each file in `tests/golden/`
//! holds, for one task in `tests/tasks-compat`, its seeded world, a world after an agent
//! worked on it, and what the host's grader (`host/src/grade/checks.rs` as of contract
//! 0.2.0, commit c945bb9) decided for each of the task's Slack criteria in each world. The
//! twin must decide every one the same way: same outcome, same reason, same evidence.

use std::path::PathBuf;

use pome_twin_sdk::{CheckWorld, Evidence, Twin, Value};
use twin_slack::World;

#[test]
fn every_task_criterion_is_decided_as_the_hosts_grader_decided_it() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    let checks = World::checks();
    let (mut decided, mut held) = (0, 0);
    for f in &files {
        let g: Value = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
        for o in g["outcomes"].as_array().unwrap() {
            let sentence = o["sentence"].as_str().unwrap();
            let decl = checks.iter().find(|c| c.fits(sentence)).unwrap_or_else(|| panic!("{}: {sentence:?} fits no check", f.display()));
            let world = CheckWorld { seed: &g["seed"], state: &g[o["world"].as_str().unwrap()], tape: &[] };
            let got = World::evaluate_check(&decl.id, &decl.bind(sentence).unwrap(), &world);
            let at = format!("{} ({} world): {sentence:?}", f.display(), o["world"]);
            match got {
                Ok(got) => {
                    assert!(o["error"].is_null(), "{at}: the host's grader errored ({}), the twin decided {got:?}", o["error"]);
                    assert_eq!(got.holds, o["holds"].as_bool().unwrap(), "{at}: {}", got.reason);
                    assert_eq!(got.reason, o["reason"].as_str().unwrap(), "{at}");
                    assert_eq!(got.evidence, Evidence::state(o["evidence"].as_str().unwrap()), "{at}");
                    held += got.holds as usize;
                }
                Err(e) => assert!(!o["error"].is_null(), "{at}: the twin errored ({e}), the host's grader decided {o}"),
            }
            decided += 1;
        }
    }
    assert!(files.len() >= 8 && decided >= 30, "{} files, {decided} outcomes", files.len());
    assert!(held >= 8 && held <= decided - 8, "the golden worlds should both pass and fail criteria: {held} of {decided} held");
}
