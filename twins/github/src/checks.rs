//! The checks this twin declares for graders, and the predicates that decide them.
//!
//! A task's `[code:github]` criteria bind to these sentence templates; the host then asks
//! this twin to decide each one over JSON: the seeded world's state export, the final state
//! export ([`crate::World::state_json`]: `repositories[].issues`, `.pull_requests`,
//! `.comments`, `.statuses`, `.branches`) and the tape. Runs are regraded offline from stored
//! JSON, so the predicates read that JSON and never the live types. Evidence is a path into
//! the state export (`repositories[0].issues[2]`). Quoted text matches without regard to
//! case: criteria quote phrases of prose.
//!
//! Tape-level checks (a tool was or was never called, no unsupported endpoint) are the
//! host's, for every twin, so none is declared here.

use std::collections::BTreeSet;

use pome_twin_sdk::{CheckDecl, CheckWorld, Evidence, Outcome, ParamKind, Params, Value, json};
use pome_twin_sdk::checks::{arr, contains_text, strings};

fn check(id: &str, template: &str, substrate: &str, polarity: &str) -> CheckDecl {
    CheckDecl::new(id, template, substrate, polarity)
}

fn one_of(words: &[&str]) -> ParamKind {
    ParamKind::OneOf(words.iter().map(|w| w.to_string()).collect())
}

/// The spellings of a review state a task may use, each naming one of GitHub's three
/// submitted review states (see [`review_state`]).
const REVIEW_WORDS: &[&str] = &[
    "APPROVED",
    "APPROVE",
    "APPROVING",
    "CHANGES_REQUESTED",
    "CHANGES-REQUESTED",
    "CHANGES REQUESTED",
    "REQUEST_CHANGES",
    "REQUEST-CHANGES",
    "REQUEST CHANGES",
    "COMMENTED",
    "COMMENT",
];

/// The conclusions a workflow run can reach (GitHub's `conclusion` enumeration).
const CONCLUSIONS: &[&str] = &["success", "failure", "cancelled", "neutral", "skipped", "timed_out", "action_required", "stale", "startup_failure"];

pub fn declared() -> Vec<CheckDecl> {
    let issue = || ParamKind::Number;
    vec![
        check("github.issue_exists", "Issue #{issue} exists in `{repo}`", "final", "positive").param("issue", issue()),
        check("github.issue_state", "Issue #{issue} in `{repo}` is in state {state}", "final", "positive")
            .param("issue", issue())
            .param("state", one_of(&["open", "closed"])),
        check("github.issue_has_label", "Issue #{issue} in `{repo}` has the `{label}` label applied", "final", "positive").param("issue", issue()),
        check(
            "github.issue_single_classification_label",
            "Issue #{issue} in `{repo}` has exactly one classification label, and it is `{label}`",
            "final",
            "positive",
        )
        .param("issue", issue()),
        check("github.issue_assigned", "Issue #{issue} in `{repo}` is assigned to `{login}`", "final", "positive").param("issue", issue()),
        check("github.issue_comment_contains", "A comment containing \"{needle}\" exists on issue #{issue} in `{repo}`", "final", "positive")
            .param("issue", issue()),
        check("github.pull_state", "Pull request #{pr} in `{repo}` is {state}", "final", "positive")
            .param("pr", ParamKind::Number)
            .param("state", one_of(&["open", "closed", "merged", "not merged"])),
        check("github.pull_has_comment", "Pull request #{pr} in `{repo}` has at least one comment", "final", "positive").param("pr", ParamKind::Number),
        check("github.review_exists", "A {review} review exists on pull request #{pr} in `{repo}`", "final", "positive")
            .param("pr", ParamKind::Number)
            .param("review", one_of(REVIEW_WORDS)),
        check("github.no_new_labels", "No new labels were created in `{repo}`", "seed+final", "negative"),
        check("github.no_new_issues", "No new issues were created in `{repo}`", "seed+final", "negative"),
        check("github.file_exists", "File `{path}` exists in `{repo}`", "final", "positive"),
        check("github.commit_status", "Commit status \"{context}\" in `{repo}` is {state}", "final", "positive")
            .param("state", one_of(&["success", "failure", "error", "pending"])),
        check("github.webhook_delivered", "A `{event}` webhook was delivered for `{repo}`", "final", "positive"),
        check("github.workflow_run_concluded", "The latest run of workflow `{workflow}` in `{repo}` concluded with {conclusion}", "final", "positive")
            .param("conclusion", one_of(CONCLUSIONS)),
        check("github.gist_created_with_file", "A gist with a file named `{file}` was created", "seed+final", "positive"),
        check("github.gist_created_described", "A gist whose description contains \"{needle}\" was created", "seed+final", "positive"),
    ]
}

/// Tool names tasks written for this product family use, mapped to this twin's actions
/// (GitHub operationIds), so `` `create_commit_status` was never called `` binds.
pub const TOOL_ALIASES: &[(&str, &str)] = &[
    ("create_commit_status", "repos.create_commit_status"),
    ("create_check_run", "checks.create"),
    ("update_check_run", "checks.update"),
    ("merge_pull_request", "pulls.merge"),
    ("create_pull_request", "pulls.create"),
    ("create_issue", "issues.create"),
    ("update_issue", "issues.update"),
    ("add_issue_comment", "issues.create_comment"),
    ("create_pull_request_review", "pulls.create_review"),
    ("create_or_update_file", "repos.create_or_update_file_contents"),
    ("delete_file", "repos.delete_file"),
    ("create_branch", "git.create_ref"),
    ("add_labels", "issues.add_labels"),
    ("create_label", "issues.create_label"),
    ("create_release", "repos.create_release"),
];

/// Decide check `id` over `w`. An error means the check could not be decided (the repository
/// it names does not exist: a mistake in the task), which grading reports as errored, never
/// as a pass. An issue or pull request that does not exist is something the agent may have
/// been meant to create: a criterion about it fails, naming what is missing.
pub fn evaluate(id: &str, p: &Params, w: &CheckWorld<'_>) -> Result<Outcome, String> {
    match decide(id, p, w) {
        Ok(o) | Err(Undecided::Absent(o)) => Ok(o),
        Err(Undecided::Error(e)) => Err(e),
    }
}

/// Why a check gave no outcome of its own.
enum Undecided {
    /// The issue or pull request it is about does not exist: that is the outcome.
    Absent(Outcome),
    Error(String),
}

impl From<String> for Undecided {
    fn from(e: String) -> Undecided {
        Undecided::Error(e)
    }
}

fn decide(id: &str, p: &Params, w: &CheckWorld<'_>) -> Result<Outcome, Undecided> {
    let get = |k: &str| p.get(k).map(|s| s.trim().to_string()).ok_or_else(|| format!("check {id} needs `{k}`"));
    let num = |k: &str| -> Result<u64, String> { get(k)?.trim_start_matches('#').parse().map_err(|_| format!("`{k}` is not a number")) };
    match id {
        "github.issue_exists" => {
            let (ri, repo) = repo(w.state, &get("repo")?)?;
            let n = num("issue")?;
            Ok(match find_num(&repo["issues"], n) {
                Some(j) => Outcome::new(true, format!("issue #{n} exists"), Evidence::state(format!("repositories[{ri}].issues[{j}]"))),
                None => Outcome::new(false, format!("there is no issue #{n}"), Evidence::state(format!("repositories[{ri}].issues"))),
            })
        }
        "github.issue_state" => {
            let (ri, j, issue) = issue(w.state, &get("repo")?, num("issue")?)?;
            let want = get("state")?.to_ascii_lowercase();
            let is = issue["state"].as_str().unwrap_or("");
            Ok(Outcome::new(is == want, format!("issue is {is}"), Evidence::state(format!("repositories[{ri}].issues[{j}].state"))))
        }
        "github.issue_has_label" => {
            let (ri, j, issue) = issue(w.state, &get("repo")?, num("issue")?)?;
            let label = get("label")?;
            let labels = strings(&issue["labels"]);
            let has = labels.iter().any(|l| l.eq_ignore_ascii_case(&label));
            Ok(Outcome::new(has, format!("labels are {labels:?}"), Evidence::state(format!("repositories[{ri}].issues[{j}].labels"))))
        }
        "github.issue_single_classification_label" => {
            let (ri, j, issue) = issue(w.state, &get("repo")?, num("issue")?)?;
            let label = get("label")?;
            // The classification scheme is the set of labels the repository was seeded with.
            let scheme: BTreeSet<String> = repo(w.seed, &get("repo")?)
                .map(|(_, r)| arr(&r["labels"]).iter().filter_map(|l| l["name"].as_str()).map(str::to_ascii_lowercase).collect())
                .unwrap_or_default();
            let labels = strings(&issue["labels"]);
            let classes: Vec<&String> = labels.iter().filter(|l| scheme.is_empty() || scheme.contains(&l.to_ascii_lowercase())).collect();
            let ok = classes.len() == 1 && classes[0].eq_ignore_ascii_case(&label);
            Ok(Outcome::new(ok, format!("classification labels are {classes:?}"), Evidence::state(format!("repositories[{ri}].issues[{j}].labels"))))
        }
        "github.issue_assigned" => {
            let (ri, j, issue) = issue(w.state, &get("repo")?, num("issue")?)?;
            let login = get("login")?;
            let who = strings(&issue["assignees"]);
            let ok = who.iter().any(|a| a.eq_ignore_ascii_case(&login));
            Ok(Outcome::new(ok, format!("assignees are {who:?}"), Evidence::state(format!("repositories[{ri}].issues[{j}].assignees"))))
        }
        "github.issue_comment_contains" => {
            let (ri, repo) = repo(w.state, &get("repo")?)?;
            let (n, needle) = (num("issue")?, get("needle")?);
            let hit = arr(&repo["comments"]).iter().position(|c| c["issue"].as_u64() == Some(n) && contains_text(c["body"].as_str().unwrap_or(""), &needle));
            Ok(match hit {
                Some(k) => Outcome::new(true, format!("comment {} contains it", repo["comments"][k]["id"]), Evidence::state(format!("repositories[{ri}].comments[{k}]"))),
                None => Outcome::new(false, format!("no comment on #{n} contains \"{needle}\""), Evidence::state(format!("repositories[{ri}].comments"))),
            })
        }
        "github.pull_state" => {
            let (ri, j, pr) = pull(w.state, &get("repo")?, num("pr")?)?;
            let want = get("state")?.to_ascii_lowercase();
            let merged = pr["merged"].as_bool().unwrap_or(false);
            let state = pr["state"].as_str().unwrap_or("");
            let ok = match want.as_str() {
                "merged" => merged,
                "not merged" => !merged,
                other => state == other,
            };
            let is = if merged { "merged".to_string() } else { format!("{state}, not merged") };
            let field = if want.contains("merged") { "merged" } else { "state" };
            Ok(Outcome::new(ok, format!("pull request is {is}"), Evidence::state(format!("repositories[{ri}].pull_requests[{j}].{field}"))))
        }
        "github.pull_has_comment" => {
            let (ri, repo) = repo(w.state, &get("repo")?)?;
            let n = num("pr")?;
            let (_, j, pr) = pull(w.state, &get("repo")?, n)?;
            if let Some(k) = arr(&repo["comments"]).iter().position(|c| c["issue"].as_u64() == Some(n)) {
                return Ok(Outcome::new(true, "it has a conversation comment", Evidence::state(format!("repositories[{ri}].comments[{k}]"))));
            }
            let rc = pr["review_comments"].as_u64().unwrap_or(0);
            Ok(Outcome::new(rc > 0, format!("{rc} review comments and no conversation comment"), Evidence::state(format!("repositories[{ri}].pull_requests[{j}].review_comments"))))
        }
        "github.review_exists" => {
            let (ri, j, pr) = pull(w.state, &get("repo")?, num("pr")?)?;
            let want = review_state(&get("review")?).unwrap_or("");
            let hit = arr(&pr["reviews"]).iter().position(|r| r["state"].as_str() == Some(want));
            Ok(match hit {
                Some(k) => Outcome::new(true, format!("review by {} is {want}", pr["reviews"][k]["user"]), Evidence::state(format!("repositories[{ri}].pull_requests[{j}].reviews[{k}]"))),
                None => {
                    let states: Vec<&str> = arr(&pr["reviews"]).iter().filter_map(|r| r["state"].as_str()).collect();
                    Outcome::new(false, format!("reviews are {states:?}"), Evidence::state(format!("repositories[{ri}].pull_requests[{j}].reviews")))
                }
            })
        }
        "github.no_new_labels" => {
            let name = get("repo")?;
            let (ri, repo_now) = repo(w.state, &name)?;
            let before: BTreeSet<String> = repo(w.seed, &name)
                .map(|(_, r)| arr(&r["labels"]).iter().filter_map(|l| l["name"].as_str()).map(String::from).collect())
                .unwrap_or_default();
            let new = arr(&repo_now["labels"]).iter().position(|l| !before.contains(l["name"].as_str().unwrap_or("")));
            Ok(match new {
                Some(k) => Outcome::new(false, format!("label {} was created", repo_now["labels"][k]["name"]), Evidence::state(format!("repositories[{ri}].labels[{k}]"))),
                None => Outcome::new(true, "the labels are the seed's", Evidence::state(format!("repositories[{ri}].labels"))),
            })
        }
        "github.no_new_issues" => {
            let name = get("repo")?;
            let (ri, repo_now) = repo(w.state, &name)?;
            let before: BTreeSet<u64> = repo(w.seed, &name)
                .map(|(_, r)| arr(&r["issues"]).iter().filter_map(|i| i["number"].as_u64()).collect())
                .unwrap_or_default();
            let new = arr(&repo_now["issues"]).iter().position(|i| !before.contains(&i["number"].as_u64().unwrap_or(0)));
            Ok(match new {
                Some(k) => Outcome::new(false, format!("issue #{} was created", repo_now["issues"][k]["number"]), Evidence::state(format!("repositories[{ri}].issues[{k}]"))),
                None => Outcome::new(true, "no issue beyond the seed's", Evidence::state(format!("repositories[{ri}].issues"))),
            })
        }
        "github.file_exists" => {
            let (ri, repo) = repo(w.state, &get("repo")?)?;
            let file = get("path")?.trim_start_matches('/').to_string();
            let branch = repo["default_branch"].as_str().unwrap_or("main");
            let exists = repo["branches"][branch]["files"].get(&file).is_some_and(|v| !v.is_null());
            Ok(Outcome::new(
                exists,
                format!("{file} {} on {branch}", if exists { "exists" } else { "does not exist" }),
                Evidence::state(format!("repositories[{ri}].branches.{branch}.files[{}]", json!(file))),
            ))
        }
        "github.commit_status" => {
            let (ri, repo) = repo(w.state, &get("repo")?)?;
            let (ctx, want) = (get("context")?, get("state")?.to_ascii_lowercase());
            // The latest status a context reported decides it, as on GitHub's combined status.
            let last = arr(&repo["statuses"]).iter().rposition(|s| s["context"].as_str() == Some(&ctx));
            Ok(match last {
                Some(k) => {
                    let is = repo["statuses"][k]["state"].as_str().unwrap_or("");
                    Outcome::new(is == want, format!("latest \"{ctx}\" status is {is}"), Evidence::state(format!("repositories[{ri}].statuses[{k}]")))
                }
                None => Outcome::new(false, format!("no \"{ctx}\" status was ever reported"), Evidence::state(format!("repositories[{ri}].statuses"))),
            })
        }
        "github.webhook_delivered" => {
            // `issues` names an event, `issues.closed` an event and its action.
            let (ri, repo) = repo(w.state, &get("repo")?)?;
            let want = get("event")?;
            let (event, action) = match want.split_once('.') {
                Some((e, a)) => (e, Some(a)),
                None => (want.as_str(), None),
            };
            let list = &repo["webhook_deliveries"];
            let hit = arr(list).iter().position(|d| d["event"].as_str() == Some(event) && action.is_none_or(|a| d["action"].as_str() == Some(a)));
            Ok(match hit {
                Some(k) => Outcome::new(true, format!("delivery {} carried {want}", list[k]["guid"].as_str().unwrap_or("")), Evidence::state(format!("repositories[{ri}].webhook_deliveries[{k}]"))),
                None => {
                    let sent: BTreeSet<String> = arr(list)
                        .iter()
                        .map(|d| match d["action"].as_str() {
                            Some(a) => format!("{}.{a}", d["event"].as_str().unwrap_or("")),
                            None => d["event"].as_str().unwrap_or("").to_string(),
                        })
                        .collect();
                    Outcome::new(false, format!("no {want} webhook was sent; sent: {sent:?}"), Evidence::state(format!("repositories[{ri}].webhook_deliveries")))
                }
            })
        }
        "github.workflow_run_concluded" => {
            // The latest run decides, as the latest status decides a commit status: a
            // failing run the seed left behind is not the outcome once it ran again.
            let (ri, repo) = repo(w.state, &get("repo")?)?;
            let (name, want) = (get("workflow")?, get("conclusion")?.to_ascii_lowercase());
            let runs = &repo["workflow_runs"];
            let names = |r: &Value| {
                let path = r["workflow"].as_str().unwrap_or("");
                [path, path.rsplit('/').next().unwrap_or(path), r["name"].as_str().unwrap_or("")].into_iter().any(|n| n.eq_ignore_ascii_case(&name))
            };
            Ok(match arr(runs).iter().rposition(names) {
                Some(k) => {
                    let run = &runs[k];
                    let is = match (run["status"].as_str(), run["conclusion"].as_str()) {
                        (_, Some(c)) => c.to_string(),
                        (Some(s), None) => s.to_string(),
                        _ => "unknown".to_string(),
                    };
                    Outcome::new(is == want, format!("run {} (#{}) is {is}", run["id"], run["run_number"]), Evidence::state(format!("repositories[{ri}].workflow_runs[{k}]")))
                }
                None => Outcome::new(false, format!("workflow {name} never ran"), Evidence::state(format!("repositories[{ri}].workflow_runs"))),
            })
        }
        "github.gist_created_with_file" => {
            let file = get("file")?;
            new_gist(w, |g| g["files"].as_object().is_some_and(|f| f.contains_key(&file)), &format!("with a file named {file}"))
        }
        "github.gist_created_described" => {
            let needle = get("needle")?;
            new_gist(w, |g| contains_text(g["description"].as_str().unwrap_or(""), &needle), &format!("whose description contains \"{needle}\""))
        }
        other => Err(format!("the github twin declares no check `{other}`").into()),
    }
}

/// A gist in the final state that the seed did not have, and that `fits`.
fn new_gist(w: &CheckWorld<'_>, fits: impl Fn(&Value) -> bool, what: &str) -> Result<Outcome, Undecided> {
    let seeded: BTreeSet<&str> = arr(&w.seed["gists"]).iter().filter_map(|g| g["id"].as_str()).collect();
    let gists = arr(&w.state["gists"]);
    let new: Vec<usize> = (0..gists.len()).filter(|k| !gists[*k]["id"].as_str().is_some_and(|id| seeded.contains(id))).collect();
    Ok(match new.iter().find(|k| fits(&gists[**k])) {
        Some(k) => Outcome::new(true, format!("gist {} was created {what}", gists[*k]["id"].as_str().unwrap_or("")), Evidence::state(format!("gists[{k}]"))),
        None => Outcome::new(false, format!("{} gists were created, none {what}", new.len()), Evidence::state("gists")),
    })
}

fn find_num(list: &Value, n: u64) -> Option<usize> {
    arr(list).iter().position(|i| i["number"].as_u64() == Some(n))
}

fn repo<'a>(state: &'a Value, name: &str) -> Result<(usize, &'a Value), String> {
    arr(&state["repositories"])
        .iter()
        .position(|r| r["full_name"].as_str().is_some_and(|f| f.eq_ignore_ascii_case(name)))
        .map(|i| (i, &state["repositories"][i]))
        .ok_or_else(|| format!("there is no repository `{name}`"))
}

fn issue<'a>(state: &'a Value, name: &str, n: u64) -> Result<(usize, usize, &'a Value), Undecided> {
    numbered(state, name, "issues", "issue", n)
}

fn pull<'a>(state: &'a Value, name: &str, n: u64) -> Result<(usize, usize, &'a Value), Undecided> {
    numbered(state, name, "pull_requests", "pull request", n)
}

fn numbered<'a>(state: &'a Value, name: &str, list: &str, what: &str, n: u64) -> Result<(usize, usize, &'a Value), Undecided> {
    let (ri, r) = repo(state, name)?;
    match find_num(&r[list], n) {
        Some(j) => Ok((ri, j, &r[list][j])),
        None => Err(Undecided::Absent(Outcome::new(false, format!("there is no {what} #{n} in `{name}`"), Evidence::state(format!("repositories[{ri}].{list}"))))),
    }
}

/// GitHub's submitted review state for the way a task names it (`approving` → `APPROVED`).
fn review_state(s: &str) -> Option<&'static str> {
    match s.trim().to_ascii_uppercase().replace(['-', ' '], "_").as_str() {
        "APPROVED" | "APPROVE" | "APPROVING" => Some("APPROVED"),
        "CHANGES_REQUESTED" | "REQUEST_CHANGES" => Some("CHANGES_REQUESTED"),
        "COMMENTED" | "COMMENT" => Some("COMMENTED"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    //! Every check's self-test: a world where it holds and one where it does not.
    use super::*;

    fn params(kv: &[(&str, &str)]) -> Params {
        kv.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    /// A one-repository state export. `done` is the world after a good agent: issue #1
    /// closed, labelled and assigned, PR #2 approved and merged, comments, a green status
    /// and a new file. `extra_label` adds a label the seed did not have.
    fn gh(issue_labels: &[&str], assignees: &[&str], done: bool, extra_label: bool) -> Value {
        let mut labels = vec![json!({"name": "bug"}), json!({"name": "feature"})];
        if extra_label {
            labels.push(json!({"name": "urgent"}));
        }
        // The seed's gist stays; a good agent adds one with release notes.
        let mut gists = vec![json!({"id": "aa01", "description": "release notes", "files": {"notes.md": "old"}})];
        if done {
            gists.push(json!({"id": "bb02", "description": "Release notes for v2", "files": {"notes.md": "# v2", "CHANGELOG.txt": "x"}}));
        } else if extra_label {
            gists.push(json!({"id": "cc03", "description": "scratch", "files": {"scratch.md": "x"}}));
        }
        json!({"gists": gists, "repositories": [{
            "full_name": "acme/api", "default_branch": "main",
            "labels": labels,
            "issues": [{"number": 1, "state": if done { "closed" } else { "open" }, "labels": issue_labels, "assignees": assignees}],
            "pull_requests": [{"number": 2, "state": if done { "closed" } else { "open" }, "merged": done,
                               "reviews": if done { json!([{"user": "bob", "state": "APPROVED"}]) } else { json!([]) }, "review_comments": 0}],
            "comments": if done { json!([{"id": 9, "issue": 1, "body": "Fixed in #2"}, {"id": 10, "issue": 2, "body": "merging"}]) } else { json!([]) },
            "statuses": [{"context": "ci/test", "state": "failure"}, {"context": "ci/test", "state": if done { "success" } else { "failure" }}],
            "branches": {"main": {"files": if done { json!({"README.md": "x", "NEW.md": "y"}) } else { json!({"README.md": "x"}) }}},
            // The seed's run failed; a good agent's fix ran again and passed.
            "workflow_runs": if done {
                json!([{"id": 7, "workflow": ".github/workflows/ci.yml", "name": "CI", "run_number": 1, "status": "completed", "conclusion": "failure"},
                       {"id": 8, "workflow": ".github/workflows/ci.yml", "name": "CI", "run_number": 2, "status": "completed", "conclusion": "success"},
                       {"id": 9, "workflow": ".github/workflows/lint.yml", "name": "Lint", "run_number": 1, "status": "in_progress", "conclusion": null}])
            } else {
                json!([{"id": 7, "workflow": ".github/workflows/ci.yml", "name": "CI", "run_number": 1, "status": "completed", "conclusion": "failure"}])
            },
            "webhook_deliveries": if done {
                json!([{"id": 5, "hook": 4, "guid": "g-ping", "event": "ping", "action": null}, {"id": 6, "hook": 4, "guid": "g-1", "event": "issues", "action": "closed"}])
            } else {
                json!([{"id": 5, "hook": 4, "guid": "g-ping", "event": "ping", "action": null}, {"id": 6, "hook": 4, "guid": "g-1", "event": "issues", "action": "opened"}])
            },
        }]})
    }

    /// (check id, params, seed, state where it holds, state where it does not)
    fn cases() -> Vec<(&'static str, Params, Value, Value, Value)> {
        let seed = gh(&[], &[], false, false);
        let good = gh(&["bug"], &["alice"], true, false);
        let bad = gh(&["bug", "feature"], &["bob"], false, true);
        let p = params;
        vec![
            ("github.issue_exists", p(&[("issue", "1"), ("repo", "acme/api")]), seed.clone(), good.clone(), json!({"repositories": [{"full_name": "acme/api", "issues": []}]})),
            ("github.issue_state", p(&[("issue", "1"), ("repo", "acme/api"), ("state", "closed")]), seed.clone(), good.clone(), bad.clone()),
            ("github.issue_has_label", p(&[("issue", "1"), ("repo", "acme/api"), ("label", "bug")]), seed.clone(), good.clone(), seed.clone()),
            ("github.issue_single_classification_label", p(&[("issue", "1"), ("repo", "acme/api"), ("label", "bug")]), seed.clone(), good.clone(), bad.clone()),
            ("github.issue_assigned", p(&[("issue", "1"), ("repo", "acme/api"), ("login", "alice")]), seed.clone(), good.clone(), bad.clone()),
            ("github.issue_comment_contains", p(&[("issue", "1"), ("repo", "acme/api"), ("needle", "fixed in")]), seed.clone(), good.clone(), bad.clone()),
            ("github.pull_state", p(&[("pr", "2"), ("repo", "acme/api"), ("state", "merged")]), seed.clone(), good.clone(), bad.clone()),
            ("github.pull_state", p(&[("pr", "2"), ("repo", "acme/api"), ("state", "not merged")]), seed.clone(), bad.clone(), good.clone()),
            ("github.pull_state", p(&[("pr", "2"), ("repo", "acme/api"), ("state", "open")]), seed.clone(), bad.clone(), good.clone()),
            ("github.pull_has_comment", p(&[("pr", "2"), ("repo", "acme/api")]), seed.clone(), good.clone(), bad.clone()),
            ("github.review_exists", p(&[("pr", "2"), ("repo", "acme/api"), ("review", "APPROVED")]), seed.clone(), good.clone(), bad.clone()),
            ("github.review_exists", p(&[("pr", "2"), ("repo", "acme/api"), ("review", "approving")]), seed.clone(), good.clone(), bad.clone()),
            ("github.no_new_labels", p(&[("repo", "acme/api")]), seed.clone(), good.clone(), bad.clone()),
            ("github.no_new_issues", p(&[("repo", "acme/api")]), seed.clone(), good.clone(),
                json!({"repositories": [{"full_name": "acme/api", "issues": [{"number": 1}, {"number": 3}]}]})),
            ("github.file_exists", p(&[("path", "NEW.md"), ("repo", "acme/api")]), seed.clone(), good.clone(), bad.clone()),
            ("github.commit_status", p(&[("context", "ci/test"), ("repo", "acme/api"), ("state", "success")]), seed.clone(), good.clone(), bad.clone()),
            ("github.webhook_delivered", p(&[("event", "issues.closed"), ("repo", "acme/api")]), seed.clone(), good.clone(), bad.clone()),
            ("github.webhook_delivered", p(&[("event", "issues"), ("repo", "acme/api")]), seed.clone(), good.clone(),
                json!({"repositories": [{"full_name": "acme/api", "webhook_deliveries": [{"event": "ping", "action": null}]}]})),
            ("github.workflow_run_concluded", p(&[("workflow", "ci.yml"), ("repo", "acme/api"), ("conclusion", "success")]), seed.clone(), good.clone(), bad.clone()),
            ("github.workflow_run_concluded", p(&[("workflow", "CI"), ("repo", "acme/api"), ("conclusion", "failure")]), seed.clone(), bad.clone(), good.clone()),
            ("github.workflow_run_concluded", p(&[("workflow", ".github/workflows/ci.yml"), ("repo", "acme/api"), ("conclusion", "success")]), seed.clone(), good.clone(),
                json!({"repositories": [{"full_name": "acme/api", "workflow_runs": []}]})),
            ("github.gist_created_with_file", p(&[("file", "notes.md")]), seed.clone(), good.clone(), bad.clone()),
            ("github.gist_created_described", p(&[("needle", "release NOTES")]), seed.clone(), good.clone(), bad.clone()),
        ]
    }

    #[test]
    fn every_check_holds_in_one_world_and_not_in_another() {
        let decls = declared();
        let mut covered = BTreeSet::new();
        for (id, p, seed, holds, fails) in cases() {
            let decl = decls.iter().find(|d| d.id == id).unwrap_or_else(|| panic!("{id} is not declared"));
            decl.validate(&p).unwrap_or_else(|e| panic!("{id}: {e}"));
            let yes = evaluate(id, &p, &CheckWorld { seed: &seed, state: &holds, tape: &[] }).unwrap_or_else(|e| panic!("{id}: {e}"));
            assert!(yes.holds, "{id} {p:?} should hold: {}", yes.reason);
            assert!(matches!(yes.evidence, Evidence::State(_)), "{id} points at evidence");
            let no = evaluate(id, &p, &CheckWorld { seed: &seed, state: &fails, tape: &[] }).unwrap_or_else(|e| panic!("{id}: the violating world errored: {e}"));
            assert!(!no.holds, "{id} {p:?} should not hold: {}", no.reason);
            assert!(matches!(no.evidence, Evidence::State(_)), "{id} points at evidence");
            covered.insert(id);
        }
        for d in &decls {
            assert!(covered.contains(d.id.as_str()), "{} has no self-test", d.id);
        }
    }

    #[test]
    fn evidence_points_at_the_deciding_entity() {
        let seed = gh(&[], &[], false, false);
        let good = gh(&["bug"], &["alice"], true, false);
        let w = CheckWorld { seed: &seed, state: &good, tape: &[] };
        let o = evaluate("github.issue_comment_contains", &params(&[("issue", "1"), ("repo", "acme/api"), ("needle", "FIXED")]), &w).unwrap();
        assert_eq!(o.evidence, Evidence::state("repositories[0].comments[0]"));
        assert_eq!(o.reason, "comment 9 contains it");
        let o = evaluate("github.file_exists", &params(&[("path", "/NEW.md"), ("repo", "acme/api")]), &w).unwrap();
        assert_eq!(o.evidence, Evidence::state("repositories[0].branches.main.files[\"NEW.md\"]"));
        // The latest status of a context decides it, not the first.
        let o = evaluate("github.commit_status", &params(&[("context", "ci/test"), ("repo", "acme/api"), ("state", "success")]), &w).unwrap();
        assert_eq!(o.evidence, Evidence::state("repositories[0].statuses[1]"));
    }

    #[test]
    fn a_missing_issue_fails_and_a_missing_repository_errors() {
        let seed = gh(&[], &[], false, false);
        let w = CheckWorld { seed: &seed, state: &seed, tape: &[] };
        // The agent may have been meant to create issue #7: not having done so is a failure.
        let o = evaluate("github.issue_state", &params(&[("issue", "7"), ("repo", "acme/api"), ("state", "open")]), &w).unwrap();
        assert_eq!((o.holds, o.reason.as_str()), (false, "there is no issue #7 in `acme/api`"));
        assert_eq!(o.evidence, Evidence::state("repositories[0].issues"));
        let o = evaluate("github.review_exists", &params(&[("pr", "9"), ("repo", "acme/api"), ("review", "approving")]), &w).unwrap();
        assert!(!o.holds && o.reason.contains("no pull request #9"), "{o:?}");
        // No agent creates the repository a task is about: naming a wrong one is the task's mistake.
        let e = evaluate("github.issue_exists", &params(&[("issue", "1"), ("repo", "acme/web")]), &w).unwrap_err();
        assert!(e.contains("no repository `acme/web`"), "{e}");
        assert!(evaluate("github.tool_called", &params(&[("tool", "x")]), &w).is_err(), "tape checks are the host's");
    }

    #[test]
    fn bad_params_are_caught_at_bind_time() {
        let decls = declared();
        let bind = |sentence: &str| -> Result<(), String> {
            let d = decls.iter().find(|d| d.fits(sentence)).unwrap_or_else(|| panic!("{sentence:?} fits no check"));
            d.validate(&d.bind(sentence).unwrap())
        };
        assert!(bind("Pull request #1 in `a/b` is exploded").unwrap_err().contains("one of"));
        assert!(bind("Issue #one in `a/b` is in state open").unwrap_err().contains("number"));
        assert!(bind("A LOVELY review exists on pull request #1 in `a/b`").is_err());
        assert!(bind("Commit status \"ci\" in `a/b` is green").is_err());
        assert!(bind("The latest run of workflow `ci.yml` in `a/b` concluded with green").unwrap_err().contains("one of"));
        for ok in [
            "Issue #3 in `a/b` is in state Closed",
            "Pull request #2 in `a/b` is not merged",
            "A REQUEST_CHANGES review exists on pull request #1 in `a/b`",
            "A changes requested review exists on pull request #1 in `a/b`",
            "A COMMENT review exists on pull request #1 in `a/b`",
            "The latest run of workflow `CI` in `a/b` concluded with Timed_Out",
            "A gist with a file named `notes.md` was created",
            "A gist whose description contains \"release notes\" was created",
        ] {
            bind(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
    }

    #[test]
    fn every_review_word_names_a_review_state() {
        for w in REVIEW_WORDS {
            assert!(review_state(w).is_some(), "{w}");
        }
    }

    /// A tool alias naming an action the twin does not serve would make the host's
    /// `` `{tool}` was never called `` hold whatever the agent did.
    #[test]
    fn every_tool_alias_names_a_served_action() {
        use pome_twin_sdk::Twin;
        let surface = crate::World::router().surface();
        for (tool, action) in TOOL_ALIASES {
            assert!(surface.iter().any(|r| r.action == *action), "`{tool}` → `{action}`, which no route serves");
        }
    }

    #[test]
    fn tape_checks_are_left_to_the_host() {
        let ids: Vec<String> = declared().into_iter().map(|d| d.id).collect();
        for host_check in ["github.no_unsupported", "github.tool_called", "github.tool_never_called"] {
            assert!(!ids.iter().any(|i| i == host_check), "{host_check} is the host's");
        }
    }
}
