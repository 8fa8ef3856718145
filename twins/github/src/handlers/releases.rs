//! Releases: list, create (tagging the target), get, latest, by tag, update, delete.

use pome_twin_sdk::{Call, Response, Value, json, time};
use serde::Deserialize;

use crate::World;
use crate::api::{ApiError, ApiResult, input, json, no_content, num, page_of};
use crate::model::*;
use crate::render::node_id;

pub(crate) fn release_json(w: &World, b: &str, r: &Repo, x: &Release) -> Value {
    let fname = r.full_name();
    let u = format!("{b}/repos/{fname}/releases/{}", x.id);
    json!({
        "url": u, "html_url": format!("{b}/{fname}/releases/tag/{}", x.tag_name),
        "assets_url": format!("{u}/assets"), "upload_url": format!("{b}/repos/{fname}/releases/{}/assets{{?name,label}}", x.id),
        "tarball_url": format!("{b}/repos/{fname}/tarball/{}", x.tag_name),
        "zipball_url": format!("{b}/repos/{fname}/zipball/{}", x.tag_name),
        "id": x.id, "node_id": node_id("Release", x.id), "tag_name": x.tag_name,
        "target_commitish": x.target_commitish, "name": x.name, "body": x.body, "draft": x.draft,
        "prerelease": x.prerelease, "created_at": x.created_at, "published_at": x.published_at,
        "author": w.user_json(b, &x.author), "assets": [],
    })
}

fn visible(w: &World, r: &Repo, x: &Release) -> bool {
    !x.draft || w.viewer_role(r) >= Role::Write
}

/// `GET /repos/{owner}/{repo}/releases` (`repos/list-releases`).
pub fn list(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let list: Vec<&Release> = r.releases.values().rev().filter(|x| visible(w, r, x)).collect();
    let b = call.req.base_url.clone();
    let n = list.len();
    page_of(call, n, list.into_iter(), |x| release_json(w, &b, r, x))
}

/// `GET /repos/{owner}/{repo}/releases/{release_id}` (`repos/get-release`).
pub fn get(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let x = r.releases.get(&num(call, "release_id")?).filter(|x| visible(w, r, x)).ok_or_else(ApiError::not_found)?;
    json(200, &release_json(w, &call.req.base_url, r, x))
}

/// `GET /repos/{owner}/{repo}/releases/latest` (`repos/get-latest-release`).
pub fn latest(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let x = r
        .releases
        .values()
        .filter(|x| !x.draft && !x.prerelease)
        .max_by(|a, b| a.published_at.cmp(&b.published_at).then(a.id.cmp(&b.id)))
        .ok_or_else(ApiError::not_found)?;
    json(200, &release_json(w, &call.req.base_url, r, x))
}

/// `GET /repos/{owner}/{repo}/releases/tags/{tag}` (`repos/get-release-by-tag`).
pub fn by_tag(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let tag = call.param("tag").to_string();
    let x = r.releases.values().find(|x| x.tag_name == tag && !x.draft).ok_or_else(ApiError::not_found)?;
    json(200, &release_json(w, &call.req.base_url, r, x))
}

#[derive(Debug, Deserialize, Default)]
pub struct ReleaseInput {
    pub tag_name: Option<String>,
    pub target_commitish: Option<String>,
    pub name: Option<String>,
    pub body: Option<String>,
    pub draft: Option<bool>,
    pub prerelease: Option<bool>,
    #[serde(default)]
    pub generate_release_notes: bool,
}

/// Create the tag ref for a published release if it does not exist yet.
fn ensure_tag(r: &mut Repo, call: &mut Call, tag: &str, target: &str) -> Result<(), ApiError> {
    let refname = format!("refs/tags/{tag}");
    if r.git.refs.contains_key(&refname) {
        return Ok(());
    }
    let sha = r
        .git
        .resolve(target)
        .ok_or_else(|| ApiError::custom("Release", "target_commitish", "target_commitish is invalid"))?;
    call.created("ref", format!("{}:{refname}", r.full_name()), &json!({"sha": sha}));
    r.git.refs.insert(refname, sha);
    Ok(())
}

/// `POST /repos/{owner}/{repo}/releases` (`repos/create-release`).
pub fn create(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: ReleaseInput = input(call)?;
    let tag = inp.tag_name.clone().filter(|t| !t.trim().is_empty()).ok_or_else(|| ApiError::invalid("Release", "tag_name", "missing_field"))?;
    let id = w.next_id();
    let viewer = w.viewer.clone();
    let r = w.repo_mut(call, Role::Write)?;
    if r.releases.values().any(|x| x.tag_name == tag) {
        return Err(ApiError::invalid("Release", "tag_name", "already_exists"));
    }
    let target = inp.target_commitish.clone().unwrap_or_else(|| r.default_branch.clone());
    if r.git.resolve(&target).is_none() && !r.git.refs.contains_key(&format!("refs/tags/{tag}")) {
        return Err(ApiError::custom("Release", "target_commitish", "target_commitish is invalid"));
    }
    let draft = inp.draft.unwrap_or(false);
    if !draft {
        ensure_tag(r, call, &tag, &target)?;
    }
    let now = time::now_iso();
    let body = match (&inp.body, inp.generate_release_notes) {
        (Some(b), _) => Some(b.clone()),
        (None, true) => Some(format!("**Full Changelog**: {}/{}/commits/{tag}", call.req.base_url, r.full_name())),
        _ => None,
    };
    let x = Release {
        id,
        tag_name: tag.clone(),
        target_commitish: target,
        name: inp.name.or(Some(tag)),
        body,
        draft,
        prerelease: inp.prerelease.unwrap_or(false),
        author: viewer,
        created_at: now.clone(),
        published_at: (!draft).then_some(now),
    };
    call.created("release", format!("{}:{id}", r.full_name()), &x);
    r.releases.insert(id, x.clone());
    let r = w.repo(call)?;
    let v = release_json(w, &call.req.base_url, r, &x);
    Ok(Response::json(201, &v).with_header("location", v["url"].as_str().unwrap_or("").to_string()))
}

/// `PATCH /repos/{owner}/{repo}/releases/{release_id}` (`repos/update-release`).
pub fn update(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: ReleaseInput = input(call)?;
    let id = num(call, "release_id")?;
    let r = w.repo_mut(call, Role::Write)?;
    let full = r.full_name();
    let mut x = r.releases.get(&id).cloned().ok_or_else(ApiError::not_found)?;
    let before = x.clone();
    if let Some(t) = inp.tag_name.filter(|t| !t.trim().is_empty()) {
        if r.releases.values().any(|o| o.id != id && o.tag_name == t) {
            return Err(ApiError::invalid("Release", "tag_name", "already_exists"));
        }
        x.tag_name = t;
    }
    if let Some(t) = inp.target_commitish {
        x.target_commitish = t;
    }
    if let Some(n) = inp.name {
        x.name = Some(n);
    }
    if let Some(b) = inp.body {
        x.body = Some(b);
    }
    if let Some(p) = inp.prerelease {
        x.prerelease = p;
    }
    if let Some(d) = inp.draft {
        if x.draft && !d {
            x.published_at = Some(time::now_iso());
        }
        x.draft = d;
    }
    if !x.draft {
        let (t, c) = (x.tag_name.clone(), x.target_commitish.clone());
        ensure_tag(r, call, &t, &c)?;
    }
    call.updated("release", format!("{full}:{id}"), &before, &x);
    r.releases.insert(id, x.clone());
    let r = w.repo(call)?;
    json(200, &release_json(w, &call.req.base_url, r, &x))
}

/// `DELETE /repos/{owner}/{repo}/releases/{release_id}` (`repos/delete-release`). The tag
/// stays, as on GitHub.
pub fn delete(w: &mut World, call: &mut Call) -> ApiResult {
    let id = num(call, "release_id")?;
    let r = w.repo_mut(call, Role::Write)?;
    let x = r.releases.remove(&id).ok_or_else(ApiError::not_found)?;
    call.deleted("release", format!("{}:{id}", r.full_name()), &x);
    no_content()
}
