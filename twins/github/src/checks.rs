//! The checks this twin declares for graders: sentence templates a task's `[code:github]`
//! criteria bind to. The host evaluates them over the state export (`World::state_json`),
//! the seed's state and the tape; `id`s are stable names the grader keys its predicates by.

use pome_twin_sdk::CheckDecl;

fn check(id: &str, template: &str, substrate: &str, polarity: &str) -> CheckDecl {
    CheckDecl::new(id, template, substrate, polarity)
}

pub fn declared() -> Vec<CheckDecl> {
    vec![
        check("github.issue_exists", "Issue #{issue} exists in `{repo}`", "final", "positive"),
        check("github.issue_state", "Issue #{issue} in `{repo}` is in state {state}", "final", "positive"),
        check("github.issue_has_label", "Issue #{issue} in `{repo}` has the `{label}` label applied", "final", "positive"),
        check(
            "github.issue_single_classification_label",
            "Issue #{issue} in `{repo}` has exactly one classification label, and it is `{label}`",
            "final",
            "positive",
        ),
        check("github.issue_assigned", "Issue #{issue} in `{repo}` is assigned to `{login}`", "final", "positive"),
        check("github.issue_comment_contains", "A comment containing \"{needle}\" exists on issue #{issue} in `{repo}`", "final", "positive"),
        check("github.pull_state", "Pull request #{pr} in `{repo}` is {state}", "final", "positive"),
        check("github.pull_has_comment", "Pull request #{pr} in `{repo}` has at least one comment", "final", "positive"),
        check("github.review_exists", "A {review} review exists on pull request #{pr} in `{repo}`", "final", "positive"),
        check("github.no_new_labels", "No new labels were created in `{repo}`", "seed+final", "negative"),
        check("github.no_new_issues", "No new issues were created in `{repo}`", "seed+final", "negative"),
        check("github.file_exists", "File `{path}` exists in `{repo}`", "final", "positive"),
        check("github.commit_status", "Commit status \"{context}\" in `{repo}` is {state}", "final", "positive"),
        check("github.no_unsupported", "No unsupported endpoint was called", "tape", "negative"),
        check("github.tool_never_called", "`{tool}` was never called", "tape", "negative"),
        check("github.tool_called", "`{tool}` was called", "tape", "positive"),
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
