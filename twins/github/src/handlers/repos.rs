//! Repositories: get, create, update, fork, collaborators and permissions.

use pome_twin_sdk::Call;

use crate::World;
use crate::api::{ApiResult, json};

/// `GET /repos/{owner}/{repo}` (`repos/get`).
pub fn get(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    json(200, &w.repo_json(&call.req.base_url, r, true))
}
