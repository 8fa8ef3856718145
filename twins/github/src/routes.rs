//! The route table: every method and path the twin serves, each a named action. The action
//! is GitHub's own operationId (`issues/create` → `issues.create`), so the tape, graders and
//! the OpenAPI description all use the same names. Anything not listed here answers the
//! loud 501 `unsupported`.
//!
//! Fidelity tiers (shown by `describe`): routes are `semantic` (state, validation and errors
//! as GitHub) unless marked `shape`: `rate_limit.get` (fixed budget), `meta.root`,
//! `repos.list_languages` (by file extension), `repos.list_contributors` (commit authors
//! that map to users), `repos.add_collaborator` (access is granted at once; GitHub sends an
//! invitation the invitee must accept), `search.code` and `search.commits` (substring
//! matching, no ranking), and the `orgs.*` membership reads (members are those with write access to
//! one of the org's repositories).

use pome_twin_sdk::{Call, Fidelity, Method, Router};

use crate::World;
use crate::api::github_headers;
use crate::cache;
use crate::handlers::*;

macro_rules! h {
    ($f:path) => {
        |w: &mut World, c: &mut Call| serve(w, c, $f)
    };
}

/// Run one handler: GETs may be answered from the cache of rendered answers; anything
/// else starts a new world generation.
fn serve(w: &mut World, c: &mut Call, f: fn(&mut World, &mut Call) -> crate::api::ApiResult) -> pome_twin_sdk::Response {
    let cacheable = cache::cacheable(c);
    if cacheable {
        if let Some(r) = cache::get(&w.cache, c) {
            return github_headers(c, r);
        }
    } else {
        w.cache.bump();
    }
    let r = match f(w, c) {
        Ok(r) => {
            if !cacheable {
                crate::webhooks::after_write(w, c);
            }
            r
        }
        Err(e) => pome_twin_sdk::Response::json(e.status, &e.body()),
    };
    if cacheable {
        cache::put(&w.cache, c, &r);
    }
    github_headers(c, r)
}

/// GraphQL, whose mutations run REST handlers and so set off the same webhooks.
fn graphql(w: &mut World, c: &mut Call) -> pome_twin_sdk::Response {
    let r = crate::graphql::endpoint(w, c);
    crate::webhooks::after_write(w, c);
    r
}

/// A REST call under GitHub Enterprise Server's `/api/v3` prefix: served by the route the
/// same path has at the root, and recorded under that route's action.
fn enterprise_rest(w: &mut World, c: &mut Call) -> pome_twin_sdk::Response {
    let rest = c.req.path.strip_prefix("/api/v3").unwrap_or_default();
    c.req.path = if rest.is_empty() { "/".to_string() } else { rest.to_string() };
    <World as pome_twin_sdk::Twin>::router().dispatch(w, c)
}

pub fn router() -> Router<World> {
    const R: &str = "/repos/{owner}/{repo}";
    let p = |s: &str| format!("{R}{s}");
    Router::new()
        // users
        .get("/user", "users.get_authenticated", h!(users::get_authenticated))
        .get("/users/{username}", "users.get_by_username", h!(users::get_by_username))
        .get("/user/repos", "repos.list_for_authenticated_user", h!(users::list_for_authenticated_user))
        .get("/users/{username}/repos", "repos.list_for_user", h!(users::list_for_user))
        .get("/orgs/{org}/repos", "repos.list_for_org", h!(users::list_for_org))
        .get("/orgs/{org}", "orgs.get", h!(users::get_org))
        .route(Some(Method::Get), "/rate_limit", "rate_limit.get", Fidelity::Shape, h!(repos::rate_limit))
        .route(Some(Method::Get), "/", "meta.root", Fidelity::Shape, h!(repos::root))
        // gists (handlers/gists.rs)
        .get("/gists", "gists.list", h!(gists::list))
        .post("/gists", "gists.create", h!(gists::create))
        .get("/gists/public", "gists.list_public", h!(gists::list_public))
        .get("/gists/starred", "gists.list_starred", h!(gists::list_starred))
        .get("/users/{username}/gists", "gists.list_for_user", h!(gists::list_for_user))
        .get("/gists/{gist_id}", "gists.get", h!(gists::get))
        .patch("/gists/{gist_id}", "gists.update", h!(gists::update))
        .delete("/gists/{gist_id}", "gists.delete", h!(gists::delete))
        .get("/gists/{gist_id}/commits", "gists.list_commits", h!(gists::list_commits))
        .get("/gists/{gist_id}/{sha}", "gists.get_revision", h!(gists::get_revision))
        .get("/gists/{gist_id}/forks", "gists.list_forks", h!(gists::list_forks))
        .post("/gists/{gist_id}/forks", "gists.fork", h!(gists::fork))
        .get("/gists/{gist_id}/star", "gists.check_is_starred", h!(gists::check_starred))
        .put("/gists/{gist_id}/star", "gists.star", h!(gists::star))
        .delete("/gists/{gist_id}/star", "gists.unstar", h!(gists::unstar))
        .get("/gists/{gist_id}/comments", "gists.list_comments", h!(gists::list_comments))
        .post("/gists/{gist_id}/comments", "gists.create_comment", h!(gists::create_comment))
        .get("/gists/{gist_id}/comments/{comment_id}", "gists.get_comment", h!(gists::get_comment))
        .patch("/gists/{gist_id}/comments/{comment_id}", "gists.update_comment", h!(gists::update_comment))
        .delete("/gists/{gist_id}/comments/{comment_id}", "gists.delete_comment", h!(gists::delete_comment))
        .get("/gist-raw/{owner}/{gist_id}/raw/{sha}/{*file}", "gists.get_raw_file", h!(gists::raw))
        // GitHub Actions (handlers/actions.rs)
        .get(&p("/actions/workflows"), "actions.list_repo_workflows", h!(actions::list_workflows))
        .get(&p("/actions/workflows/{workflow_id}"), "actions.get_workflow", h!(actions::get_workflow))
        .put(&p("/actions/workflows/{workflow_id}/enable"), "actions.enable_workflow", h!(actions::enable_workflow))
        .put(&p("/actions/workflows/{workflow_id}/disable"), "actions.disable_workflow", h!(actions::disable_workflow))
        .post(&p("/actions/workflows/{workflow_id}/dispatches"), "actions.create_workflow_dispatch", h!(actions::dispatch))
        .get(&p("/actions/workflows/{workflow_id}/runs"), "actions.list_workflow_runs", h!(actions::list_workflow_runs))
        .get(&p("/actions/runs"), "actions.list_workflow_runs_for_repo", h!(actions::list_runs))
        .get(&p("/actions/runs/{run_id}"), "actions.get_workflow_run", h!(actions::get_run))
        .delete(&p("/actions/runs/{run_id}"), "actions.delete_workflow_run", h!(actions::delete_run))
        .get(&p("/actions/runs/{run_id}/jobs"), "actions.list_jobs_for_workflow_run", h!(actions::list_jobs))
        .post(&p("/actions/runs/{run_id}/cancel"), "actions.cancel_workflow_run", h!(actions::cancel_run))
        .post(&p("/actions/runs/{run_id}/rerun"), "actions.re_run_workflow", h!(actions::rerun_run))
        .post(&p("/actions/runs/{run_id}/rerun-failed-jobs"), "actions.re_run_workflow_failed_jobs", h!(actions::rerun_failed))
        .get(&p("/actions/runs/{run_id}/logs"), "actions.download_workflow_run_logs", h!(actions::run_logs))
        .delete(&p("/actions/runs/{run_id}/logs"), "actions.delete_workflow_run_logs", h!(actions::delete_run_logs))
        .get(&p("/actions/runs/{run_id}/timing"), "actions.get_workflow_run_usage", h!(actions::run_usage))
        .get(&p("/actions/runs/{run_id}/attempts/{attempt_number}"), "actions.get_workflow_run_attempt", h!(actions::get_attempt))
        .get(&p("/actions/runs/{run_id}/attempts/{attempt_number}/jobs"), "actions.list_jobs_for_workflow_run_attempt", h!(actions::list_attempt_jobs))
        .post(&p("/actions/jobs/{job_id}/rerun"), "actions.re_run_job_for_workflow_run", h!(actions::rerun_job))
        .get(&p("/actions/runs/{run_id}/artifacts"), "actions.list_workflow_run_artifacts", h!(actions::list_run_artifacts))
        .get(&p("/actions/jobs/{job_id}"), "actions.get_job_for_workflow_run", h!(actions::get_job))
        .get(&p("/actions/jobs/{job_id}/logs"), "actions.download_job_logs_for_workflow_run", h!(actions::job_logs))
        .get(&p("/actions/artifacts"), "actions.list_artifacts_for_repo", h!(actions::list_artifacts))
        .get(&p("/actions/artifacts/{artifact_id}"), "actions.get_artifact", h!(actions::get_artifact))
        .delete(&p("/actions/artifacts/{artifact_id}"), "actions.delete_artifact", h!(actions::delete_artifact))
        .get(&p("/actions/artifacts/{artifact_id}/{archive_format}"), "actions.download_artifact", h!(actions::download_artifact))
        .get("/actions-files/{owner}/{repo}/artifacts/{artifact_id}/archive", "actions.get_artifact_file", h!(actions::artifact_file))
        .get("/actions-files/{owner}/{repo}/runs/{run_id}/attempts/{attempt}/logs", "actions.get_run_logs_file", h!(actions::run_logs_file))
        .get("/actions-files/{owner}/{repo}/jobs/{job_id}/logs", "actions.get_job_logs_file", h!(actions::job_logs_file))
        // GraphQL (`/api/graphql` is where GitHub Enterprise Server serves it)
        .post("/graphql", "graphql.post", graphql)
        .post("/api/graphql", "graphql.enterprise_post", graphql)
        // REST under `/api/v3`, where GitHub Enterprise Server serves it (`gh` with GH_HOST)
        .any("/api/v3", "enterprise.rest_root", enterprise_rest)
        .any("/api/v3/{*path}", "enterprise.rest", enterprise_rest)
        // repositories
        .get(R, "repos.get", h!(repos::get))
        .patch(R, "repos.update", h!(repos::update))
        .delete(R, "repos.delete", h!(repos::delete))
        .post("/user/repos", "repos.create_for_authenticated_user", h!(repos::create_for_user))
        .post("/orgs/{org}/repos", "repos.create_in_org", h!(repos::create_in_org))
        .post(&p("/forks"), "repos.create_fork", h!(repos::fork))
        .get(&p("/topics"), "repos.get_all_topics", h!(repos::get_topics))
        .put(&p("/topics"), "repos.replace_all_topics", h!(repos::replace_topics))
        .route(Some(Method::Get), &p("/languages"), "repos.list_languages", Fidelity::Shape, h!(repos::languages))
        .route(Some(Method::Get), &p("/contributors"), "repos.list_contributors", Fidelity::Shape, h!(repos::contributors))
        .get(&p("/collaborators"), "repos.list_collaborators", h!(repos::list_collaborators))
        .get(&p("/collaborators/{username}"), "repos.check_collaborator", h!(repos::check_collaborator))
        .route(Some(Method::Put), &p("/collaborators/{username}"), "repos.add_collaborator", Fidelity::Shape, h!(repos::add_collaborator))
        .delete(&p("/collaborators/{username}"), "repos.remove_collaborator", h!(repos::remove_collaborator))
        .get(&p("/collaborators/{username}/permission"), "repos.get_collaborator_permission_level", h!(repos::collaborator_permission))
        // contents, branches, tags
        .get(&p("/contents"), "repos.get_content_root", h!(git::get_content_root))
        .get(&p("/contents/{*path}"), "repos.get_content", h!(git::get_content))
        .put(&p("/contents/{*path}"), "repos.create_or_update_file_contents", h!(git::put_content))
        .delete(&p("/contents/{*path}"), "repos.delete_file", h!(git::delete_content))
        .get(&p("/readme"), "repos.get_readme", h!(git::get_readme))
        .get(&p("/branches"), "repos.list_branches", h!(git::list_branches))
        .get(&p("/branches/{*branch}"), "repos.get_branch", h!(git::get_branch))
        .get(&p("/tags"), "repos.list_tags", h!(git::list_tags))
        // commits and compare
        .get(&p("/commits"), "repos.list_commits", h!(git::list_commits))
        .get(&p("/commits/{ref}"), "repos.get_commit", h!(git::get_commit))
        .get(&p("/compare/{*basehead}"), "repos.compare_commits_with_basehead", h!(git::compare))
        // git data
        .get(&p("/git/ref/{*ref}"), "git.get_ref", h!(git::get_ref))
        .get(&p("/git/matching-refs/{*ref}"), "git.list_matching_refs", h!(git::matching_refs))
        .get(&p("/git/refs"), "git.list_refs", h!(git::list_refs))
        .get(&p("/git/refs/{*ref}"), "git.get_refs", h!(git::get_refs_legacy))
        .post(&p("/git/refs"), "git.create_ref", h!(git::create_ref))
        .patch(&p("/git/refs/{*ref}"), "git.update_ref", h!(git::update_ref))
        .delete(&p("/git/refs/{*ref}"), "git.delete_ref", h!(git::delete_ref))
        .post(&p("/git/blobs"), "git.create_blob", h!(git::create_blob))
        .get(&p("/git/blobs/{file_sha}"), "git.get_blob", h!(git::get_blob))
        .post(&p("/git/trees"), "git.create_tree", h!(git::create_tree))
        .get(&p("/git/trees/{tree_sha}"), "git.get_tree", h!(git::get_tree))
        .post(&p("/git/commits"), "git.create_commit", h!(git::create_commit))
        .get(&p("/git/commits/{commit_sha}"), "git.get_commit", h!(git::get_git_commit))
        .post(&p("/git/tags"), "git.create_tag", h!(git::create_tag))
        .get(&p("/git/tags/{tag_sha}"), "git.get_tag", h!(git::get_tag))
        // pull requests
        .get(&p("/pulls"), "pulls.list", h!(pulls::list))
        .post(&p("/pulls"), "pulls.create", h!(pulls::create))
        .get(&p("/pulls/{pull_number}"), "pulls.get", h!(pulls::get))
        .patch(&p("/pulls/{pull_number}"), "pulls.update", h!(pulls::update))
        .get(&p("/pulls/{pull_number}/files"), "pulls.list_files", h!(pulls::list_files))
        .get(&p("/pulls/{pull_number}/commits"), "pulls.list_commits", h!(pulls::list_commits))
        .get(&p("/pulls/{pull_number}/merge"), "pulls.check_if_merged", h!(pulls::check_merged))
        .put(&p("/pulls/{pull_number}/merge"), "pulls.merge", h!(pulls::merge))
        .put(&p("/pulls/{pull_number}/update-branch"), "pulls.update_branch", h!(pulls::update_branch))
        .get(&p("/pulls/{pull_number}/requested_reviewers"), "pulls.list_requested_reviewers", h!(pulls::list_requested_reviewers))
        .post(&p("/pulls/{pull_number}/requested_reviewers"), "pulls.request_reviewers", h!(pulls::request_reviewers))
        .delete(&p("/pulls/{pull_number}/requested_reviewers"), "pulls.remove_requested_reviewers", h!(pulls::remove_requested_reviewers))
        .get(&p("/pulls/{pull_number}/reviews"), "pulls.list_reviews", h!(pulls::list_reviews))
        .post(&p("/pulls/{pull_number}/reviews"), "pulls.create_review", h!(pulls::create_review))
        .get(&p("/pulls/{pull_number}/reviews/{review_id}"), "pulls.get_review", h!(pulls::get_review))
        .put(&p("/pulls/{pull_number}/reviews/{review_id}"), "pulls.update_review", h!(pulls::update_review))
        .delete(&p("/pulls/{pull_number}/reviews/{review_id}"), "pulls.delete_pending_review", h!(pulls::delete_pending_review))
        .post(&p("/pulls/{pull_number}/reviews/{review_id}/events"), "pulls.submit_review", h!(pulls::submit_review))
        .put(&p("/pulls/{pull_number}/reviews/{review_id}/dismissals"), "pulls.dismiss_review", h!(pulls::dismiss_review))
        .get(&p("/pulls/{pull_number}/comments"), "pulls.list_review_comments", h!(pulls::list_review_comments))
        .post(&p("/pulls/{pull_number}/comments"), "pulls.create_review_comment", h!(pulls::create_review_comment))
        .post(&p("/pulls/{pull_number}/comments/{comment_id}/replies"), "pulls.create_reply_for_review_comment", h!(pulls::reply_review_comment))
        .get(&p("/pulls/comments"), "pulls.list_review_comments_for_repo", h!(pulls::list_review_comments_for_repo))
        .get(&p("/pulls/comments/{comment_id}"), "pulls.get_review_comment", h!(pulls::get_review_comment))
        .patch(&p("/pulls/comments/{comment_id}"), "pulls.update_review_comment", h!(pulls::update_review_comment))
        .delete(&p("/pulls/comments/{comment_id}"), "pulls.delete_review_comment", h!(pulls::delete_review_comment))
        // GitHub's MCP tools that are several REST calls on its server (handlers/mcp_tools.rs)
        .post(&p("/mcp-tools/create_branch"), "mcp.create_branch", h!(mcp_tools::create_branch))
        .post(&p("/mcp-tools/create_or_update_file/{*path}"), "mcp.create_or_update_file", h!(mcp_tools::create_or_update_file))
        .post(&p("/mcp-tools/push_files"), "mcp.push_files", h!(mcp_tools::push_files))
        .get(&p("/mcp-tools/pull_request_status/{pullNumber}"), "mcp.get_pull_request_status", h!(mcp_tools::get_pull_request_status))
        // the rest of GitHub's MCP server's default tools (handlers/mcp_vendor.rs)
        .post(&p("/mcp-tools/add_issue_comment/{issue_number}"), "mcp.add_issue_comment", h!(mcp_vendor::add_issue_comment))
        .get(&p("/mcp-tools/issue_read/{issue_number}"), "mcp.issue_read", h!(mcp_vendor::issue_read))
        .post(&p("/mcp-tools/issue_write"), "mcp.issue_write", h!(mcp_vendor::issue_write))
        .get(&p("/mcp-tools/list_issues"), "mcp.list_issues", h!(mcp_vendor::list_issues))
        .post(&p("/mcp-tools/sub_issue_write/{issue_number}"), "mcp.sub_issue_write", h!(mcp_vendor::sub_issue_write))
        .post(&p("/mcp-tools/assign_copilot_to_issue/{issue_number}"), "mcp.assign_copilot_to_issue", h!(mcp_vendor::assign_copilot_to_issue))
        .post(&p("/mcp-tools/request_copilot_review/{pullNumber}"), "mcp.request_copilot_review", h!(mcp_vendor::request_copilot_review))
        .post(&p("/mcp-tools/create_pull_request"), "mcp.create_pull_request", h!(mcp_vendor::create_pull_request))
        .post(&p("/mcp-tools/update_pull_request/{pullNumber}"), "mcp.update_pull_request", h!(mcp_vendor::update_pull_request))
        .get(&p("/mcp-tools/list_pull_requests"), "mcp.list_pull_requests", h!(mcp_vendor::list_pull_requests))
        .get(&p("/mcp-tools/pull_request_read/{pullNumber}"), "mcp.pull_request_read", h!(mcp_vendor::pull_request_read))
        .post(&p("/mcp-tools/pull_request_review_write/{pullNumber}"), "mcp.pull_request_review_write", h!(mcp_vendor::pull_request_review_write))
        .post(&p("/mcp-tools/add_comment_to_pending_review/{pullNumber}"), "mcp.add_comment_to_pending_review", h!(mcp_vendor::add_comment_to_pending_review))
        .post(&p("/mcp-tools/add_reply_to_pull_request_comment/{commentId}"), "mcp.add_reply_to_pull_request_comment", h!(mcp_vendor::add_reply_to_pull_request_comment))
        .post(&p("/mcp-tools/delete_file/{*path}"), "mcp.delete_file", h!(mcp_vendor::delete_file))
        .get(&p("/mcp-tools/get_commit/{sha}"), "mcp.get_commit", h!(mcp_vendor::get_commit))
        .get(&p("/mcp-tools/get_file_contents"), "mcp.get_file_contents", h!(mcp_vendor::get_file_contents))
        .get(&p("/mcp-tools/get_tag/{tag}"), "mcp.get_tag", h!(mcp_vendor::get_tag))
        .get(&p("/mcp-tools/list_commits"), "mcp.list_commits", h!(mcp_vendor::list_commits))
        .get(&p("/mcp-tools/list_releases"), "mcp.list_releases", h!(mcp_vendor::list_releases))
        .get(&p("/mcp-tools/list_repository_collaborators"), "mcp.list_repository_collaborators", h!(mcp_vendor::list_repository_collaborators))
        .post("/mcp-tools/create_repository", "mcp.create_repository", h!(mcp_vendor::create_repository))
        .get("/mcp-tools/list_issue_types/{owner}", "mcp.list_issue_types", h!(mcp_vendor::list_issue_types))
        .get("/mcp-tools/list_issue_fields/{owner}", "mcp.list_issue_fields", h!(mcp_vendor::list_issue_fields))
        .get("/mcp-tools/search_issues", "mcp.search_issues", h!(mcp_vendor::search_issues))
        .get("/mcp-tools/search_pull_requests", "mcp.search_pull_requests", h!(mcp_vendor::search_pull_requests))
        .get("/mcp-tools/search_code", "mcp.search_code", h!(mcp_vendor::search_code))
        .get("/mcp-tools/search_repositories", "mcp.search_repositories", h!(mcp_vendor::search_repositories))
        .get("/mcp-tools/search_users", "mcp.search_users", h!(mcp_vendor::search_users))
        .get("/mcp-tools/get_teams", "mcp.get_teams", h!(mcp_vendor::get_teams))
        .get("/mcp-tools/get_team_members/{org}/{team_slug}", "mcp.get_team_members", h!(mcp_vendor::get_team_members))
        // GitHub's MCP server's `actions` and `gists` toolsets (handlers/mcp_actions.rs)
        .get(&p("/mcp-tools/actions_list"), "mcp.actions_list", h!(mcp_actions::actions_list))
        .get(&p("/mcp-tools/actions_get"), "mcp.actions_get", h!(mcp_actions::actions_get))
        .post(&p("/mcp-tools/actions_run_trigger"), "mcp.actions_run_trigger", h!(mcp_actions::actions_run_trigger))
        .get(&p("/mcp-tools/get_job_logs"), "mcp.get_job_logs", h!(mcp_actions::get_job_logs))
        .get(&p("/mcp-tools/list_workflow_jobs/{run_id}"), "mcp.list_workflow_jobs", h!(mcp_actions::list_workflow_jobs))
        .get("/mcp-tools/list_gists", "mcp.list_gists", h!(mcp_actions::list_gists))
        .post("/mcp-tools/create_gist", "mcp.create_gist", h!(mcp_actions::create_gist))
        .post("/mcp-tools/update_gist/{gist_id}", "mcp.update_gist", h!(mcp_actions::update_gist))
        // sub-issues, issue types, teams, review comment reactions
        .post(&p("/issues/{issue_number}/sub_issues"), "issues.add_sub_issue", h!(mcp_vendor::add_sub_issue))
        .delete(&p("/issues/{issue_number}/sub_issue"), "issues.remove_sub_issue", h!(mcp_vendor::remove_sub_issue))
        .patch(&p("/issues/{issue_number}/sub_issues/priority"), "issues.reprioritize_sub_issue", h!(mcp_vendor::reprioritize_sub_issue))
        .get(&p("/issues/{issue_number}/sub_issues"), "issues.list_sub_issues", h!(mcp_vendor::list_sub_issues))
        .get(&p("/issues/{issue_number}/parent"), "issues.get_parent", h!(mcp_vendor::get_parent))
        .get("/orgs/{org}/issue-types", "orgs.list_issue_types", h!(mcp_vendor::org_issue_types))
        .get(&p("/issue-types"), "issues.list_issue_types_for_repo", h!(mcp_vendor::repo_issue_types))
        // teams and their repositories (handlers/teams.rs)
        .get("/orgs/{org}/teams", "teams.list", h!(teams::list))
        .post("/orgs/{org}/teams", "teams.create", h!(teams::create))
        .get("/orgs/{org}/teams/{team_slug}", "teams.get_by_name", h!(teams::get))
        .patch("/orgs/{org}/teams/{team_slug}", "teams.update_in_org", h!(teams::update))
        .delete("/orgs/{org}/teams/{team_slug}", "teams.delete_in_org", h!(teams::delete))
        .get("/orgs/{org}/teams/{team_slug}/members", "teams.list_members_in_org", h!(teams::list_members))
        .get("/orgs/{org}/teams/{team_slug}/memberships/{username}", "teams.get_membership_for_user_in_org", h!(teams::get_membership))
        .put("/orgs/{org}/teams/{team_slug}/memberships/{username}", "teams.add_or_update_membership_for_user_in_org", h!(teams::put_membership))
        .delete("/orgs/{org}/teams/{team_slug}/memberships/{username}", "teams.remove_membership_for_user_in_org", h!(teams::delete_membership))
        .get("/orgs/{org}/teams/{team_slug}/repos", "teams.list_repos_in_org", h!(teams::list_repos))
        .get("/orgs/{org}/teams/{team_slug}/repos/{owner}/{repo}", "teams.check_permissions_for_repo_in_org", h!(teams::check_repo))
        .put("/orgs/{org}/teams/{team_slug}/repos/{owner}/{repo}", "teams.add_or_update_repo_permissions_in_org", h!(teams::put_repo))
        .delete("/orgs/{org}/teams/{team_slug}/repos/{owner}/{repo}", "teams.remove_repo_in_org", h!(teams::delete_repo))
        .get(&p("/teams"), "repos.list_teams", h!(teams::list_for_repo))
        .get("/user/teams", "teams.list_for_authenticated_user", h!(teams::list_mine))
        .get(&p("/pulls/comments/{comment_id}/reactions"), "reactions.list_for_pull_request_review_comment", h!(mcp_vendor::list_review_comment_reactions))
        .post(&p("/pulls/comments/{comment_id}/reactions"), "reactions.create_for_pull_request_review_comment", h!(mcp_vendor::create_review_comment_reaction))
        // statuses and checks
        .post(&p("/statuses/{sha}"), "repos.create_commit_status", h!(checks::create_status))
        .get(&p("/commits/{ref}/statuses"), "repos.list_commit_statuses_for_ref", h!(checks::list_statuses))
        .get(&p("/commits/{ref}/status"), "repos.get_combined_status_for_ref", h!(checks::combined_status))
        .post(&p("/check-runs"), "checks.create", h!(checks::create_check_run))
        .get(&p("/check-runs/{check_run_id}"), "checks.get", h!(checks::get_check_run))
        .patch(&p("/check-runs/{check_run_id}"), "checks.update", h!(checks::update_check_run))
        .get(&p("/commits/{ref}/check-runs"), "checks.list_for_ref", h!(checks::list_check_runs))
        .get(&p("/commits/{ref}/check-suites"), "checks.list_suites_for_ref", h!(checks::list_check_suites))
        // releases
        .get(&p("/releases"), "repos.list_releases", h!(releases::list))
        .post(&p("/releases"), "repos.create_release", h!(releases::create))
        .get(&p("/releases/latest"), "repos.get_latest_release", h!(releases::latest))
        .get(&p("/releases/tags/{tag}"), "repos.get_release_by_tag", h!(releases::by_tag))
        .get(&p("/releases/{release_id}"), "repos.get_release", h!(releases::get))
        .patch(&p("/releases/{release_id}"), "repos.update_release", h!(releases::update))
        .delete(&p("/releases/{release_id}"), "repos.delete_release", h!(releases::delete))
        .get(&p("/releases/{release_id}/assets"), "repos.list_release_assets", h!(releases::list_assets))
        .post(&p("/releases/{release_id}/assets"), "repos.upload_release_asset", h!(releases::upload_asset))
        .get(&p("/releases/assets/{asset_id}"), "repos.get_release_asset", h!(releases::get_asset))
        .patch(&p("/releases/assets/{asset_id}"), "repos.update_release_asset", h!(releases::update_asset))
        .delete(&p("/releases/assets/{asset_id}"), "repos.delete_release_asset", h!(releases::delete_asset))
        // where `browser_download_url` points (github.com/{owner}/{repo}/releases/download/…)
        .get("/{owner}/{repo}/releases/download/{tag}/{name}", "repos.download_release_asset_file", h!(releases::download_file))
        // webhooks (repository and organisation)
        .get(&p("/hooks"), "repos.list_webhooks", h!(hooks::list))
        .post(&p("/hooks"), "repos.create_webhook", h!(hooks::create))
        .get(&p("/hooks/{hook_id}"), "repos.get_webhook", h!(hooks::get))
        .patch(&p("/hooks/{hook_id}"), "repos.update_webhook", h!(hooks::update))
        .delete(&p("/hooks/{hook_id}"), "repos.delete_webhook", h!(hooks::delete))
        .get(&p("/hooks/{hook_id}/config"), "repos.get_webhook_config_for_repo", h!(hooks::get_config))
        .patch(&p("/hooks/{hook_id}/config"), "repos.update_webhook_config_for_repo", h!(hooks::update_config))
        .post(&p("/hooks/{hook_id}/pings"), "repos.ping_webhook", h!(hooks::ping))
        .post(&p("/hooks/{hook_id}/tests"), "repos.test_push_webhook", h!(hooks::test_push))
        .get(&p("/hooks/{hook_id}/deliveries"), "repos.list_webhook_deliveries", h!(hooks::list_deliveries))
        .get(&p("/hooks/{hook_id}/deliveries/{delivery_id}"), "repos.get_webhook_delivery", h!(hooks::get_delivery))
        .post(&p("/hooks/{hook_id}/deliveries/{delivery_id}/attempts"), "repos.redeliver_webhook_delivery", h!(hooks::redeliver))
        .get("/orgs/{org}/hooks", "orgs.list_webhooks", h!(hooks::list))
        .post("/orgs/{org}/hooks", "orgs.create_webhook", h!(hooks::create))
        .get("/orgs/{org}/hooks/{hook_id}", "orgs.get_webhook", h!(hooks::get))
        .patch("/orgs/{org}/hooks/{hook_id}", "orgs.update_webhook", h!(hooks::update))
        .delete("/orgs/{org}/hooks/{hook_id}", "orgs.delete_webhook", h!(hooks::delete))
        .get("/orgs/{org}/hooks/{hook_id}/config", "orgs.get_webhook_config_for_org", h!(hooks::get_config))
        .patch("/orgs/{org}/hooks/{hook_id}/config", "orgs.update_webhook_config_for_org", h!(hooks::update_config))
        .post("/orgs/{org}/hooks/{hook_id}/pings", "orgs.ping_webhook", h!(hooks::ping))
        .get("/orgs/{org}/hooks/{hook_id}/deliveries", "orgs.list_webhook_deliveries", h!(hooks::list_deliveries))
        .get("/orgs/{org}/hooks/{hook_id}/deliveries/{delivery_id}", "orgs.get_webhook_delivery", h!(hooks::get_delivery))
        .post("/orgs/{org}/hooks/{hook_id}/deliveries/{delivery_id}/attempts", "orgs.redeliver_webhook_delivery", h!(hooks::redeliver))
        // branch protection, orgs, commit ↔ pulls, review comments of a review, merges
        .get(&p("/branches/{branch}/protection"), "repos.get_branch_protection", h!(protection::get))
        .put(&p("/branches/{branch}/protection"), "repos.update_branch_protection", h!(protection::update))
        .delete(&p("/branches/{branch}/protection"), "repos.delete_branch_protection", h!(protection::delete))
        .get(&p("/branches/{branch}/protection/required_status_checks"), "repos.get_status_checks_protection", h!(protection::get_checks))
        .patch(&p("/branches/{branch}/protection/required_status_checks"), "repos.update_status_check_protection", h!(protection::update_checks))
        .delete(&p("/branches/{branch}/protection/required_status_checks"), "repos.remove_status_check_protection", h!(protection::delete_checks))
        .get(&p("/branches/{branch}/protection/required_status_checks/contexts"), "repos.get_all_status_check_contexts", h!(protection::get_contexts))
        .post(&p("/branches/{branch}/protection/required_status_checks/contexts"), "repos.add_status_check_contexts", h!(protection::add_contexts))
        .put(&p("/branches/{branch}/protection/required_status_checks/contexts"), "repos.set_status_check_contexts", h!(protection::set_contexts))
        .delete(&p("/branches/{branch}/protection/required_status_checks/contexts"), "repos.remove_status_check_contexts", h!(protection::remove_contexts))
        .get(&p("/branches/{branch}/protection/enforce_admins"), "repos.get_admin_branch_protection", h!(protection::get_admins))
        .post(&p("/branches/{branch}/protection/enforce_admins"), "repos.set_admin_branch_protection", h!(protection::set_admins))
        .delete(&p("/branches/{branch}/protection/enforce_admins"), "repos.delete_admin_branch_protection", h!(protection::delete_admins))
        .get(&p("/branches/{branch}/protection/required_signatures"), "repos.get_commit_signature_protection", h!(protection::get_signatures))
        .post(&p("/branches/{branch}/protection/required_signatures"), "repos.create_commit_signature_protection", h!(protection::set_signatures))
        .delete(&p("/branches/{branch}/protection/required_signatures"), "repos.delete_commit_signature_protection", h!(protection::delete_signatures))
        .get(&p("/branches/{branch}/protection/required_pull_request_reviews"), "repos.get_pull_request_review_protection", h!(protection::get_reviews))
        .patch(&p("/branches/{branch}/protection/required_pull_request_reviews"), "repos.update_pull_request_review_protection", h!(protection::update_reviews))
        .delete(&p("/branches/{branch}/protection/required_pull_request_reviews"), "repos.delete_pull_request_review_protection", h!(protection::delete_reviews))
        .get(&p("/branches/{branch}/protection/restrictions"), "repos.get_access_restrictions", h!(protection::get_restrictions))
        .delete(&p("/branches/{branch}/protection/restrictions"), "repos.delete_access_restrictions", h!(protection::delete_restrictions))
        .get(&p("/branches/{branch}/protection/restrictions/users"), "repos.get_users_with_access_to_protected_branch", h!(protection::get_users))
        .post(&p("/branches/{branch}/protection/restrictions/users"), "repos.add_user_access_restrictions", h!(protection::add_users))
        .put(&p("/branches/{branch}/protection/restrictions/users"), "repos.set_user_access_restrictions", h!(protection::set_users))
        .delete(&p("/branches/{branch}/protection/restrictions/users"), "repos.remove_user_access_restrictions", h!(protection::remove_users))
        .get(&p("/branches/{branch}/protection/restrictions/teams"), "repos.get_teams_with_access_to_protected_branch", h!(protection::get_teams))
        .post(&p("/branches/{branch}/protection/restrictions/teams"), "repos.add_team_access_restrictions", h!(protection::add_teams))
        .put(&p("/branches/{branch}/protection/restrictions/teams"), "repos.set_team_access_restrictions", h!(protection::set_teams))
        .delete(&p("/branches/{branch}/protection/restrictions/teams"), "repos.remove_team_access_restrictions", h!(protection::remove_teams))
        .get(&p("/branches/{branch}/protection/restrictions/apps"), "repos.get_apps_with_access_to_protected_branch", h!(protection::get_apps))
        .post(&p("/branches/{branch}/protection/restrictions/apps"), "repos.add_app_access_restrictions", h!(protection::add_apps))
        .put(&p("/branches/{branch}/protection/restrictions/apps"), "repos.set_app_access_restrictions", h!(protection::set_apps))
        .delete(&p("/branches/{branch}/protection/restrictions/apps"), "repos.remove_app_access_restrictions", h!(protection::remove_apps))
        .route(Some(Method::Get), "/orgs/{org}/members", "orgs.list_members", Fidelity::Shape, h!(misc::list_members))
        .route(Some(Method::Get), "/orgs/{org}/members/{username}", "orgs.check_membership_for_user", Fidelity::Shape, h!(misc::check_member))
        .route(Some(Method::Get), "/user/orgs", "orgs.list_for_authenticated_user", Fidelity::Shape, h!(misc::list_my_orgs))
        .route(Some(Method::Get), "/users/{username}/orgs", "orgs.list_for_user", Fidelity::Shape, h!(misc::list_user_orgs))
        .get(&p("/commits/{commit_sha}/pulls"), "repos.list_pull_requests_associated_with_commit", h!(misc::pulls_for_commit))
        .get(&p("/pulls/{pull_number}/reviews/{review_id}/comments"), "pulls.list_comments_for_review", h!(misc::review_comments_for_review))
        .post(&p("/merges"), "repos.merge", h!(misc::merge_branches))
        // search
        .get("/search/issues", "search.issues_and_pull_requests", h!(search::issues))
        .get("/search/repositories", "search.repos", h!(search::repositories))
        .route(Some(Method::Get), "/search/code", "search.code", Fidelity::Shape, h!(search::code))
        .get("/search/users", "search.users", h!(search::users))
        .route(Some(Method::Get), "/search/commits", "search.commits", Fidelity::Shape, h!(search::commits))
        // issues
        .get(&p("/issues"), "issues.list_for_repo", h!(issues::list_for_repo))
        .get("/issues", "issues.list", h!(issues::list_for_user))
        .get("/user/issues", "issues.list_for_authenticated_user", h!(issues::list_for_user))
        .post(&p("/issues"), "issues.create", h!(issues::create))
        .get(&p("/issues/{issue_number}"), "issues.get", h!(issues::get))
        .patch(&p("/issues/{issue_number}"), "issues.update", h!(issues::update))
        .put(&p("/issues/{issue_number}/lock"), "issues.lock", h!(issues::lock))
        .delete(&p("/issues/{issue_number}/lock"), "issues.unlock", h!(issues::unlock))
        // issue comments
        .get(&p("/issues/{issue_number}/comments"), "issues.list_comments", h!(issues::list_comments))
        .post(&p("/issues/{issue_number}/comments"), "issues.create_comment", h!(issues::create_comment))
        .get(&p("/issues/comments"), "issues.list_comments_for_repo", h!(issues::list_comments_for_repo))
        .get(&p("/issues/comments/{comment_id}"), "issues.get_comment", h!(issues::get_comment))
        .patch(&p("/issues/comments/{comment_id}"), "issues.update_comment", h!(issues::update_comment))
        .delete(&p("/issues/comments/{comment_id}"), "issues.delete_comment", h!(issues::delete_comment))
        // labels
        .get(&p("/labels"), "issues.list_labels_for_repo", h!(issues::list_labels_for_repo))
        .post(&p("/labels"), "issues.create_label", h!(issues::create_label))
        .get(&p("/labels/{name}"), "issues.get_label", h!(issues::get_label))
        .patch(&p("/labels/{name}"), "issues.update_label", h!(issues::update_label))
        .delete(&p("/labels/{name}"), "issues.delete_label", h!(issues::delete_label))
        .get(&p("/issues/{issue_number}/labels"), "issues.list_labels_on_issue", h!(issues::list_labels_on_issue))
        .post(&p("/issues/{issue_number}/labels"), "issues.add_labels", h!(issues::add_labels))
        .put(&p("/issues/{issue_number}/labels"), "issues.set_labels", h!(issues::set_labels_route))
        .delete(&p("/issues/{issue_number}/labels"), "issues.remove_all_labels", h!(issues::remove_all_labels))
        .delete(&p("/issues/{issue_number}/labels/{name}"), "issues.remove_label", h!(issues::remove_label))
        // assignees
        .get(&p("/assignees"), "issues.list_assignees", h!(issues::list_assignees))
        .get(&p("/assignees/{assignee}"), "issues.check_user_can_be_assigned", h!(issues::check_assignee))
        .post(&p("/issues/{issue_number}/assignees"), "issues.add_assignees", h!(issues::add_assignees))
        .delete(&p("/issues/{issue_number}/assignees"), "issues.remove_assignees", h!(issues::remove_assignees))
        // milestones
        .get(&p("/milestones"), "issues.list_milestones", h!(issues::list_milestones))
        .post(&p("/milestones"), "issues.create_milestone", h!(issues::create_milestone))
        .get(&p("/milestones/{milestone_number}"), "issues.get_milestone", h!(issues::get_milestone))
        .patch(&p("/milestones/{milestone_number}"), "issues.update_milestone", h!(issues::update_milestone))
        .delete(&p("/milestones/{milestone_number}"), "issues.delete_milestone", h!(issues::delete_milestone))
        // issue events and timeline
        .get(&p("/issues/{issue_number}/events"), "issues.list_events", h!(issues::list_events))
        .get(&p("/issues/events"), "issues.list_events_for_repo", h!(issues::list_events_for_repo))
        .get(&p("/issues/events/{event_id}"), "issues.get_event", h!(issues::get_event))
        .get(&p("/issues/{issue_number}/timeline"), "issues.list_events_for_timeline", h!(issues::timeline))
        // reactions
        .get(&p("/issues/{issue_number}/reactions"), "reactions.list_for_issue", h!(issues::list_reactions_issue))
        .post(&p("/issues/{issue_number}/reactions"), "reactions.create_for_issue", h!(issues::create_reaction_issue))
        .delete(&p("/issues/{issue_number}/reactions/{reaction_id}"), "reactions.delete_for_issue", h!(issues::delete_reaction_issue))
        .get(&p("/issues/comments/{comment_id}/reactions"), "reactions.list_for_issue_comment", h!(issues::list_reactions_comment))
        .post(&p("/issues/comments/{comment_id}/reactions"), "reactions.create_for_issue_comment", h!(issues::create_reaction_comment))
        .delete(&p("/issues/comments/{comment_id}/reactions/{reaction_id}"), "reactions.delete_for_issue_comment", h!(issues::delete_reaction_comment))
}
