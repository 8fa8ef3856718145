//! Reads agents reach for while deciding whether something is safe to merge, and a few
//! writes around them (branch protection is `protection.rs`): organization membership, the pull requests a
//! commit belongs to, a review's comments, and merging one branch into another.

use pome_twin_sdk::{Call, Response, Value, json, time};
use serde::Deserialize;

use crate::World;
use crate::api::{ApiError, ApiResult, input, json, no_content, num, page_of, page_vec};
use crate::git::{Commit, Object};
use crate::handlers::pulls::{head_sha, review_comment_json};
use crate::model::*;
use crate::render::node_id;

// ---- organizations ---------------------------------------------------------------------

/// Members of an organization: everyone with write access or more to one of its
/// repositories (the twin models access per repository, not teams).
pub fn members(w: &World, org: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in w.repos.values().filter(|r| r.owner.eq_ignore_ascii_case(org)) {
        for (l, role) in &r.collaborators {
            if *role >= Role::Write && !out.iter().any(|x| x.eq_ignore_ascii_case(l)) {
                if let Some(u) = w.users.get(l) {
                    out.push(u.login.clone());
                }
            }
        }
        if w.viewer_role(r) >= Role::Write && !out.iter().any(|x| x.eq_ignore_ascii_case(&w.viewer)) {
            out.push(w.viewer.clone());
        }
    }
    // Every member of one of its teams is a member of the organisation.
    for t in w.teams.values().filter(|t| t.org.eq_ignore_ascii_case(org)) {
        for m in &t.members {
            if !out.iter().any(|x| x.eq_ignore_ascii_case(m)) {
                out.push(m.clone());
            }
        }
    }
    out.sort_by_key(|l| l.to_ascii_lowercase());
    out
}

fn org_of<'a>(w: &'a World, name: &str) -> Result<&'a User, ApiError> {
    match w.users.get(&name.to_ascii_lowercase()) {
        Some(u) if u.kind == "Organization" => Ok(u),
        _ => Err(ApiError::not_found()),
    }
}

/// `GET /orgs/{org}/members` (`orgs/list-members`).
pub fn list_members(w: &mut World, call: &mut Call) -> ApiResult {
    let org = org_of(w, call.param("org"))?.login.clone();
    let b = call.req.base_url.clone();
    let list = members(w, &org).iter().map(|l| w.user_json(&b, l)).collect();
    page_vec(call, list)
}

/// `GET /orgs/{org}/members/{username}` (`orgs/check-membership-for-user`).
pub fn check_member(w: &mut World, call: &mut Call) -> ApiResult {
    let org = org_of(w, call.param("org"))?.login.clone();
    let who = call.param("username");
    if members(w, &org).iter().any(|l| l.eq_ignore_ascii_case(who)) { no_content() } else { Err(ApiError::not_found()) }
}

pub(crate) fn org_json(b: &str, u: &User) -> Value {
    let url = format!("{b}/orgs/{}", u.login);
    json!({
        "login": u.login, "id": u.id, "node_id": node_id("Organization", u.id), "url": url,
        "repos_url": format!("{url}/repos"), "events_url": format!("{url}/events"),
        "hooks_url": format!("{url}/hooks"), "issues_url": format!("{url}/issues"),
        "members_url": format!("{url}/members{{/member}}"),
        "public_members_url": format!("{url}/public_members{{/member}}"),
        "avatar_url": format!("{b}/_avatars/{}", u.id), "description": u.bio,
    })
}

/// Organizations `login` is a member of.
pub fn orgs_of<'a>(w: &'a World, login: &str) -> Vec<&'a User> {
    w.users
        .values()
        .filter(|u| u.kind == "Organization")
        .filter(|o| members(w, &o.login).iter().any(|l| l.eq_ignore_ascii_case(login)))
        .collect()
}

/// `GET /user/orgs` (`orgs/list-for-authenticated-user`).
pub fn list_my_orgs(w: &mut World, call: &mut Call) -> ApiResult {
    let viewer = w.viewer.clone();
    list_orgs_for(w, call, &viewer)
}

/// `GET /users/{username}/orgs` (`orgs/list-for-user`).
pub fn list_user_orgs(w: &mut World, call: &mut Call) -> ApiResult {
    let login = call.param("username").to_string();
    if !w.user_exists(&login) {
        return Err(ApiError::not_found());
    }
    list_orgs_for(w, call, &login)
}

fn list_orgs_for(w: &World, call: &Call, login: &str) -> ApiResult {
    let b = call.req.base_url.clone();
    let list = orgs_of(w, login).into_iter().map(|u| org_json(&b, u)).collect();
    page_vec(call, list)
}

// ---- pulls around a commit, comments of a review ---------------------------------------

/// `GET /repos/{owner}/{repo}/commits/{commit_sha}/pulls`
/// (`repos/list-pull-requests-associated-with-commit`).
pub fn pulls_for_commit(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let given = call.param("commit_sha").to_string();
    let sha = r.git.resolve(&given).ok_or_else(|| ApiError::new(422, format!("No commit found for SHA: {given}")))?;
    // A pull request's commits: those on its head and not on its base (for a merged one,
    // not on the base as it was before the merge), plus its merge commit.
    let list: Vec<&Issue> = r
        .issues
        .values()
        .rev()
        .filter(|i| {
            let Some(p) = &i.pull else { return false };
            if p.merge_commit_sha.as_deref() == Some(sha.as_str()) {
                return true;
            }
            let head = head_sha(r, p, i.state == "open");
            let base = match (&p.merge_commit_sha, p.merged) {
                (Some(m), true) => r.git.commit(m).and_then(|c| c.parents.first().cloned()).unwrap_or_default(),
                _ => r.git.branch(&p.base_ref).cloned().unwrap_or_default(),
            };
            r.git.commits_between(&base, &head).contains(&sha)
        })
        .collect();
    let b = call.req.base_url.clone();
    let n = list.len();
    page_of(call, n, list.into_iter(), |i| w.pull_json(&b, r, i, false))
}

/// `GET …/pulls/{pull_number}/reviews/{review_id}/comments` (`pulls/list-comments-for-review`).
pub fn review_comments_for_review(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let n = num(call, "pull_number")?;
    let id = num(call, "review_id")?;
    let exists = r.issues.get(&n).and_then(|i| i.pull.as_ref()).is_some_and(|p| p.reviews.iter().any(|x| x.id == id));
    if !exists {
        return Err(ApiError::not_found());
    }
    let b = call.req.base_url.clone();
    let keep = |c: &&ReviewComment| c.pull == n && c.review_id == Some(id);
    let total = r.review_comments.values().filter(keep).count();
    page_of(call, total, r.review_comments.values().filter(keep), |c| {
        let mut v = review_comment_json(w, &b, r, c);
        let m = v.as_object_mut().unwrap();
        for k in ["line", "original_line", "side", "start_line", "original_start_line", "start_side", "subject_type", "reactions"] {
            m.remove(k);
        }
        v
    })
}

// ---- merging branches --------------------------------------------------------------------

#[derive(Debug, Deserialize, Default)]
pub struct MergeBranches {
    pub base: Option<String>,
    pub head: Option<String>,
    pub commit_message: Option<String>,
}

/// `POST /repos/{owner}/{repo}/merges` (`repos/merge`): merge `head` into the `base`
/// branch. 201 with the merge commit, 204 when there is nothing to merge, 409 on conflict.
pub fn merge_branches(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: MergeBranches = input(call)?;
    let base = inp.base.ok_or_else(|| ApiError::invalid("Merge", "base", "missing_field"))?;
    let head = inp.head.ok_or_else(|| ApiError::invalid("Merge", "head", "missing_field"))?;
    let sig = w.viewer_sig();
    let r = w.repo_mut(call, Role::Write)?;
    let bs = r.git.branch(&base).cloned().ok_or_else(|| ApiError::new(404, "Base does not exist"))?;
    let hs = r.git.resolve(&head).ok_or_else(|| ApiError::new(404, "Head does not exist"))?;
    if r.git.is_ancestor(&hs, &bs) {
        return Ok(Response::empty(204));
    }
    let mb = r.git.merge_base(&bs, &hs).unwrap_or_else(|| bs.clone());
    let (t0, t1, t2) = (tree_of(r, &mb), tree_of(r, &bs), tree_of(r, &hs));
    let tree = r.git.merge_trees(&t0, &t1, &t2).map_err(|_| ApiError::new(409, "Merge conflict"))?;
    let message = inp.commit_message.unwrap_or_else(|| format!("Merge {head} into {base}"));
    let sha = r.git.put(Object::Commit(Commit { tree, parents: vec![bs.clone(), hs], author: sig.clone(), committer: sig, message }));
    let refname = format!("refs/heads/{base}");
    call.updated("ref", format!("{}:{refname}", r.full_name()), &json!({"sha": bs}), &json!({"sha": sha}));
    r.git.refs.insert(refname, sha.clone());
    r.pushed_at = time::now_iso();
    let r = w.repo(call)?;
    let b = &call.req.base_url;
    json(201, &w.commit_json(b, r, &sha, r.git.commit(&sha).unwrap(), None))
}
