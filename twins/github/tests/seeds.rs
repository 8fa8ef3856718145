//! Seeds: every task seed users already have must init; broken ones are refused by path.

mod common;
use std::path::PathBuf;

use pome_twin_sdk::{CheckDecl, Twin, Value, json};
use twin_github::World;

/// The repository's copy of the task files users already have.
fn compat_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/tasks-compat");
    assert!(dir.is_dir(), "{} is missing: the task files are part of the repository", dir.display());
    dir
}

/// The github part of a seed file: a flat seed with `repositories`, or the `github` key
/// of a multi-twin envelope.
fn github_part(seed: &Value) -> Option<Value> {
    if seed.get("repositories").is_some() { Some(seed.clone()) } else { seed.get("github").cloned() }
}

/// The task files (`*.md`) of the bundled and cross-twin sets, in name order.
fn task_files() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = ["bundled", "cross-twin"]
        .iter()
        .filter_map(|sub| std::fs::read_dir(compat_dir().join(sub)).ok())
        .flat_map(|rd| rd.flatten().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    out.sort();
    assert!(!out.is_empty(), "no task files under {}", compat_dir().display());
    out
}

/// The github part of every `*.seed.json`.
fn github_seeds() -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let mut dirs = vec![compat_dir()];
    while let Some(d) = dirs.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        let mut entries: Vec<_> = rd.flatten().map(|e| e.path()).collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                dirs.push(p);
            } else if p.to_string_lossy().ends_with(".seed.json") {
                let v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
                if let Some(g) = github_part(&v) {
                    out.push((p.display().to_string(), g));
                }
            }
        }
    }
    out
}

#[test]
fn every_compat_seed_inits() {
    let seeds = github_seeds();
    assert!(seeds.len() >= 15, "found only {} github seeds", seeds.len());
    for (path, seed) in seeds {
        let w = World::init(Some(seed)).unwrap_or_else(|e| panic!("{path}: {e}"));
        // Snapshots round-trip through postcard.
        let bytes = postcard::to_stdvec(&w).unwrap();
        let back: World = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(back.state(), w.state(), "{path}");
    }
}

#[test]
fn the_default_world_round_trips() {
    let w = World::init(None).unwrap();
    let bytes = postcard::to_stdvec(&w).unwrap();
    let back: World = postcard::from_bytes(&bytes).unwrap();
    assert_eq!(back.state(), w.state());
    assert_eq!(w.state()["repositories"][0]["branches"]["main"]["files"]["README.md"], "# api\n\nThe ACME API service.\n");
}

fn refused(seed: Value) -> String {
    World::init(Some(seed)).err().expect("seed must be refused")
}

#[test]
fn strict_validation_names_the_path() {
    let e = refused(json!({"repositories": [{"owner": "a", "name": "b", "colour": 1}]}));
    assert!(e.starts_with("repositories[0].colour: unknown field"), "{e}");
    let e = refused(json!({"repositories": [{"owner": "a", "name": "b", "issues": [{"title": "t", "state": "weird"}]}]}));
    assert!(e.starts_with("repositories[0].issues[0].state:"), "{e}");
    let e = refused(json!({"users": [{"login": "alice"}], "repositories": [{"owner": "a", "name": "b", "collaborators": ["zed"]}]}));
    assert!(e.contains("repositories[0].collaborators[0]") && e.contains("zed"), "{e}");
    let e = refused(json!({"repositories": [{"owner": "a", "name": "b", "issues": [{"title": "t", "labels": ["nope"]}]}]}));
    assert!(e.contains("repositories[0].issues[0].labels") && e.contains("nope"), "{e}");
    let e = refused(json!({"repositories": [{"owner": "a", "name": "b", "pull_requests": [{"title": "t", "head": "feature"}]}]}));
    assert!(e.contains("repositories[0].pull_requests[0].head") && e.contains("feature"), "{e}");
    let e = refused(json!({"repositories": [{"owner": "a", "name": "b",
        "issues": [{"number": 1, "title": "t"}],
        "files": [{"path": "x", "content": "1", "branch": "f"}],
        "pull_requests": [{"number": 1, "title": "t", "head": "f"}]}]}));
    assert!(e.contains("repositories[0].pull_requests[0].number"), "{e}");
    // `_meta` is accepted and ignored.
    World::init(Some(json!({"_meta": {"version": 1}, "repositories": []}))).unwrap();
}

#[test]
fn issues_and_pulls_share_numbers() {
    let w = World::init(Some(json!({"repositories": [{"owner": "a", "name": "b",
        "files": [{"path": "x", "content": "1"}, {"path": "x", "content": "2", "branch": "f"}],
        "pull_requests": [{"title": "p", "head": "f"}],
        "issues": [{"title": "i"}, {"number": 2, "title": "j"}]}]}))).unwrap();
    let s = w.state();
    let repo = &s["repositories"][0];
    assert_eq!(repo["issues"][0]["number"], 1);
    assert_eq!(repo["issues"][1]["number"], 2);
    assert_eq!(repo["pull_requests"][0]["number"], 3);
}

/// Every `[code]` criterion a task grades on GitHub: (task file, sentence).
fn github_criteria() -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for p in task_files() {
        let text = std::fs::read_to_string(&p).unwrap();
        let github_task = text.contains("twins: [github") || text.contains("twins: github") || text.contains("- github");
        for line in text.lines() {
            let Some(rest) = line.trim().strip_prefix("- [code") else { continue };
            let (tag, sentence) = rest.split_once(']').unwrap();
            let ours = tag.contains("github") || (tag.trim().is_empty() || tag.trim() == "always-scored") && github_task;
            if ours {
                out.push((p.clone(), sentence.trim().to_string()));
            }
        }
    }
    out
}

/// The tape-level checks the host gives every twin, by their templates.
fn host_tape_checks() -> [CheckDecl; 3] {
    [
        CheckDecl::new("tape.no_unsupported", "No unsupported endpoint was called", "tape", "negative"),
        CheckDecl::new("tape.tool_never_called", "`{tool}` was never called", "tape", "negative"),
        CheckDecl::new("tape.tool_called", "`{tool}` was called", "tape", "positive"),
    ]
}

#[test]
fn every_github_criterion_in_the_task_files_fits_a_declared_check() {
    let checks = World::checks();
    let host = host_tape_checks();
    let aliases = World::tool_aliases();
    let (mut seen, mut tape) = (0, 0);
    for (p, sentence) in github_criteria() {
        seen += 1;
        // Tape-level sentences are the host's; a tool they name must be one of this twin's
        // tool aliases so the host can find its action on the tape.
        if let Some(h) = host.iter().find(|h| h.fits(&sentence)) {
            if let Some(tool) = h.bind(&sentence).unwrap().get("tool") {
                assert!(aliases.iter().any(|(t, _)| t == tool), "{}: `{tool}` is not a tool alias", p.display());
            }
            tape += 1;
            continue;
        }
        let decl = checks.iter().find(|c| c.fits(&sentence)).unwrap_or_else(|| panic!("{}: no declared check fits {sentence:?}", p.display()));
        decl.validate(&decl.bind(&sentence).unwrap()).unwrap_or_else(|e| panic!("{}: {sentence:?}: {e}", p.display()));
    }
    assert!(seen >= 10, "only {seen} github criteria found");
    assert!(tape >= 10, "only {tape} tape-level criteria found");
}

/// Each task's GitHub checks can be decided on its own seed (the host's "already true in
/// the seed" test): every repository, issue and pull request a criterion names exists, so a
/// run is graded, not errored. The one exception is an issue the task expects the agent to
/// open, which the task says with ``Issue #N exists in `repo` ``.
#[test]
fn every_github_criterion_is_decided_on_its_seed() {
    let checks = World::checks();
    let (mut decided, mut to_be_opened) = (0, 0);
    for (p, sentence) in github_criteria() {
        let Some(decl) = checks.iter().find(|c| c.fits(&sentence)) else { continue };
        let params = decl.bind(&sentence).unwrap();
        let v: Value = serde_json::from_str(&std::fs::read_to_string(p.with_extension("seed.json")).unwrap()).unwrap();
        let seed = World::init(github_part(&v)).unwrap().state();
        let world = pome_twin_sdk::CheckWorld { seed: &seed, state: &seed, tape: &[] };
        match World::evaluate_check(&decl.id, &params, &world) {
            Ok(_) => decided += 1,
            Err(e) => {
                let expected = format!("Issue #{} exists in `{}`", params.get("issue").map_or("", |s| s.as_str()), params["repo"]);
                let task = std::fs::read_to_string(&p).unwrap();
                assert!(e.starts_with("there is no issue") && task.contains(&expected), "{}: {sentence:?}: {e}", p.display());
                to_be_opened += 1;
            }
        }
    }
    assert!(decided >= 10, "only {decided} criteria decided");
    assert!(to_be_opened <= 2, "{to_be_opened} criteria name issues the seed lacks");
}

/// Every pull request a task expects merged can be merged by the agent, and every one a
/// task expects left alone is still open in the seed.
#[test]
fn pull_requests_tasks_expect_merged_are_mergeable() {
    let mut merged = 0;
    let mut blocked = 0;
    for p in task_files() {
        let seed_path = p.with_extension("seed.json");
        let Ok(text) = std::fs::read_to_string(&seed_path) else { continue };
        let v: Value = serde_json::from_str(&text).unwrap();
        let Some(seed) = github_part(&v) else { continue };
        let md = std::fs::read_to_string(&p).unwrap();
        for line in md.lines() {
            if !line.trim_start().starts_with("- [code") {
                continue;
            }
            let Some(rest) = line.split("Pull request #").nth(1) else { continue };
            let n: u64 = rest.split_whitespace().next().unwrap().parse().unwrap();
            let repo = rest.split('`').nth(1).unwrap();
            let mut w = World::init(Some(seed.clone())).unwrap();
            if line.trim_end().ends_with("is not merged") {
                // A red seeded check gates the merge (task 18, cross-twin 03).
                let red = seed.to_string().contains("\"failure\"");
                let (_, pr) = common::get(&mut w, &format!("/repos/{repo}/pulls/{n}"));
                let (s, _) = common::put(&mut w, &format!("/repos/{repo}/pulls/{n}/merge"), json!({}));
                if red && pr["mergeable_state"] == "blocked" {
                    assert_eq!(s, 405, "{}", p.display());
                    blocked += 1;
                }
                continue;
            }
            if !line.trim_end().ends_with("is merged") {
                continue;
            }
            let (s, body) = common::put(&mut w, &format!("/repos/{repo}/pulls/{n}/merge"), json!({}));
            assert_eq!(s, 200, "{}: merging #{n} in {repo}: {body}", p.display());
            merged += 1;
        }
    }
    assert!(merged >= 3, "only {merged} merge criteria found");
    assert!(blocked >= 2, "only {blocked} red-check merges refused");
}
