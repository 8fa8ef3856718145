//! Pull requests: list, create, get, update, files, commits, merge, update-branch,
//! requested reviewers, reviews and review comments.

use pome_twin_sdk::{Value, json};

use crate::World;
use crate::model::*;
use crate::render::node_id;

pub fn review_json(w: &World, b: &str, r: &Repo, number: u64, rv: &Review) -> Value {
    let fname = r.full_name();
    let html = format!("{b}/{fname}/pull/{number}#pullrequestreview-{}", rv.id);
    let pr = format!("{b}/repos/{fname}/pulls/{number}");
    let mut v = json!({
        "id": rv.id, "node_id": node_id("PullRequestReview", rv.id), "user": w.user_json(b, &rv.user),
        "body": rv.body, "state": rv.state, "html_url": html, "pull_request_url": pr,
        "_links": {"html": {"href": html}, "pull_request": {"href": pr}},
        "commit_id": rv.commit_id, "author_association": w.author_association(r, &rv.user),
    });
    if let Some(s) = &rv.submitted_at {
        v.as_object_mut().unwrap().insert("submitted_at".into(), json!(s));
    }
    v
}
