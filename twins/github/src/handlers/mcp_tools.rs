//! The tools of GitHub's MCP server (github/github-mcp-server) that are not one REST call:
//! that server composes them from several (`create_branch` reads the source branch, then
//! creates a ref; `push_files` writes a tree, a commit and moves the ref). The twin serves
//! each as one route under `/repos/{owner}/{repo}/mcp-tools/`, built from the same handlers
//! and helpers as the REST routes, so the world, the recorded changes and the checks are the
//! same whichever door an agent used; the tool's answer is what that server answers.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use pome_twin_sdk::{Call, json};
use serde::Deserialize;

use crate::World;
use crate::api::{ApiError, ApiResult, input, json};
use crate::handlers::{checks, git, pulls};
use crate::model::*;

/// Replace the body a REST handler reads with the one the tool's arguments make.
fn with_body(call: &mut Call, body: serde_json::Value) {
    call.req.body = body.to_string().into_bytes();
}

#[derive(Debug, Deserialize)]
struct CreateBranch {
    branch: Option<String>,
    from_branch: Option<String>,
}

/// `create_branch`: a branch from `from_branch` (the default branch when absent); answers the
/// new ref, as `POST …/git/refs` does.
pub fn create_branch(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: CreateBranch = input(call)?;
    let branch = inp.branch.filter(|b| !b.is_empty()).ok_or_else(|| ApiError::invalid("Reference", "branch", "missing_field"))?;
    let r = w.repo(call)?;
    let from = inp.from_branch.unwrap_or_else(|| r.default_branch.clone());
    let sha = r.git.branch(&from).cloned().ok_or_else(|| ApiError::new(404, format!("Branch not found: {from}")))?;
    with_body(call, json!({"ref": format!("refs/heads/{branch}"), "sha": sha}));
    git::create_ref(w, call)
}

#[derive(Debug, Deserialize)]
struct CreateOrUpdateFile {
    content: Option<String>,
    message: Option<String>,
    branch: Option<String>,
    sha: Option<String>,
}

/// `create_or_update_file`: the file's text as given (the tool encodes it, not the agent),
/// through `PUT …/contents/{path}` with its `sha` guard; answers what that route answers.
pub fn create_or_update_file(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: CreateOrUpdateFile = input(call)?;
    super::mcp_vendor::symlink_guard(w, call, &super::mcp_vendor::Args::of(call)?)?;
    let content = inp.content.ok_or_else(|| ApiError::invalid("Commit", "content", "missing_field"))?;
    let mut body = json!({"content": B64.encode(content.as_bytes()), "message": inp.message, "branch": inp.branch});
    if let Some(sha) = inp.sha {
        body["sha"] = json!(sha);
    }
    with_body(call, body);
    git::put_content(w, call)
}

#[derive(Debug, Deserialize)]
struct PushFile {
    path: String,
    content: String,
}

#[derive(Debug, Deserialize)]
struct PushFiles {
    branch: Option<String>,
    message: Option<String>,
    #[serde(default)]
    files: Vec<PushFile>,
}

/// `push_files`: every file in one commit on an existing branch; answers the moved ref.
pub fn push_files(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: PushFiles = input(call)?;
    let branch = inp.branch.ok_or_else(|| ApiError::invalid("Commit", "branch", "missing_field"))?;
    let message = inp.message.ok_or_else(|| ApiError::invalid("Commit", "message", "missing_field"))?;
    if inp.files.is_empty() {
        return Err(ApiError::invalid("Commit", "files", "missing_field"));
    }
    let key = w.repo_key_for(call)?;
    w.repo_mut(call, Role::Write)?;
    let r = &w.repos[&key];
    let head = r.git.branch(&branch).cloned().ok_or_else(|| ApiError::new(404, format!("Branch {branch} not found")))?;
    let mut flat = r.git.flatten(&tree_of(r, &head));
    for f in &inp.files {
        let path = f.path.trim_matches('/').to_string();
        git::check_path(&path)?;
        if path.is_empty() || flat.keys().any(|k| path.starts_with(&format!("{k}/"))) {
            return Err(ApiError::new(422, format!("{} cannot be written: a file is in its way", f.path)));
        }
        let r = w.repos.get_mut(&key).expect("the repository was found above");
        let blob = r.git.blob(f.content.as_bytes());
        let mode = flat.get(&path).map(|e| e.0.clone()).unwrap_or_else(|| "100644".into());
        flat.insert(path, (mode, blob));
    }
    let sig = w.viewer_sig();
    let sha = git::commit_on_branch(w, call, &key, &branch, &flat, &message, sig.clone(), sig);
    let r = &w.repos[&key];
    json(200, &git::ref_json(&call.req.base_url, r, &format!("refs/heads/{branch}"), &sha))
}

/// `get_pull_request_status`: the combined status of the pull request's head commit.
pub fn get_pull_request_status(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let n: u64 = call.param("pullNumber").parse().map_err(|_| ApiError::not_found())?;
    let i = r.issues.get(&n).filter(|i| i.pull.is_some()).ok_or_else(ApiError::not_found)?;
    let head = pulls::head_sha(r, i.pull.as_ref().expect("filtered to pull requests"), i.state == "open");
    json(200, &checks::combined_status_json(w, &call.req.base_url, r, &head))
}
