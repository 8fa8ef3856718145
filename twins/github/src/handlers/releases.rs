//! Releases: list, create (tagging the target), get, latest, by tag, update, delete.

use pome_twin_sdk::{Call, Response, Value, json, time};
use serde::Deserialize;

use crate::World;
use crate::api::{ApiError, ApiResult, input, json, no_content, num, page_of};
use crate::model::*;
use crate::render::{enc, node_id};

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
        "author": w.user_json(b, &x.author), "assets": assets_json(w, b, r, x.id),
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
    let rid = r.id;
    drop_assets(w, rid, id);
    no_content()
}

// ---- release assets -------------------------------------------------------------------

fn asset_json(w: &World, b: &str, r: &Repo, a: &ReleaseAsset) -> Value {
    let fname = r.full_name();
    json!({
        "url": format!("{b}/repos/{fname}/releases/assets/{}", a.id),
        "browser_download_url": download_url(b, r, a),
        "id": a.id, "node_id": node_id("ReleaseAsset", a.id), "name": a.name, "label": a.label,
        "state": "uploaded", "content_type": a.content_type, "size": a.size, "digest": a.digest,
        "download_count": a.download_count, "created_at": a.created_at, "updated_at": a.updated_at,
        "uploader": w.user_json(b, &a.uploader),
    })
}

/// GitHub's `https://github.com/{owner}/{repo}/releases/download/{tag}/{name}`, under the
/// client's base and served by the twin ([`download_file`]).
fn download_url(b: &str, r: &Repo, a: &ReleaseAsset) -> String {
    let tag = r.releases.get(&a.release).map(|x| x.tag_name.as_str()).unwrap_or("");
    format!("{b}/{}/releases/download/{}/{}", r.full_name(), enc(tag), enc(&a.name))
}

/// The assets of release `id` of `r`, oldest first.
fn assets_of<'a>(w: &'a World, r: &Repo, id: u64) -> impl Iterator<Item = &'a ReleaseAsset> {
    let rid = r.id;
    w.release_assets.values().map(|s| &s.asset).filter(move |a| a.repo == rid && a.release == id)
}

/// The release's `assets` array.
fn assets_json(w: &World, b: &str, r: &Repo, id: u64) -> Value {
    Value::Array(assets_of(w, r, id).map(|a| asset_json(w, b, r, a)).collect())
}

/// The asset `{asset_id}` of the route's repository, if its release is visible.
fn find_asset<'a>(w: &'a World, call: &Call) -> Result<(&'a Repo, &'a StoredAsset), ApiError> {
    let r = w.repo(call)?;
    let id = num(call, "asset_id")?;
    let s = w.release_assets.get(&id).filter(|s| s.asset.repo == r.id).ok_or_else(ApiError::not_found)?;
    match r.releases.get(&s.asset.release) {
        Some(x) if visible(w, r, x) => Ok((r, s)),
        _ => Err(ApiError::not_found()),
    }
}

/// GitHub renames a file whose name has characters it does not keep: each becomes `.`, and
/// leading and trailing periods go.
fn asset_name(raw: &str) -> String {
    let kept: String = raw.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.+@".contains(c) { c } else { '.' }).collect();
    kept.trim_matches('.').to_string()
}

/// The tape's record of an asset (its bytes are on the tape already, as the upload's body).
fn record(a: &ReleaseAsset) -> Value {
    serde_json::to_value(a).unwrap_or_default()
}

/// `GET /repos/{owner}/{repo}/releases/{release_id}/assets` (`repos/list-release-assets`).
pub fn list_assets(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let id = num(call, "release_id")?;
    r.releases.get(&id).filter(|x| visible(w, r, x)).ok_or_else(ApiError::not_found)?;
    let b = call.req.base_url.clone();
    let n = assets_of(w, r, id).count();
    page_of(call, n, assets_of(w, r, id), |a| asset_json(w, &b, r, a))
}

/// `POST /repos/{owner}/{repo}/releases/{release_id}/assets?name=…&label=…`
/// (`repos/upload-release-asset`, at the release's `upload_url`): the body is the file.
pub fn upload_asset(w: &mut World, call: &mut Call) -> ApiResult {
    let id = num(call, "release_id")?;
    let raw_name = call.req.query("name").unwrap_or_default();
    let label = call.req.query("label").filter(|l| !l.is_empty());
    let content_type = match call.req.header("content-type") {
        Some(t) if !t.trim().is_empty() => t.trim().to_string(),
        _ => "application/octet-stream".to_string(),
    };
    let size = call.req.body.len();
    let held: usize = w.release_assets.values().map(|s| s.content.0.len()).sum();
    let viewer = w.viewer.clone();
    let r = w.repo_mut(call, Role::Write)?;
    let rid = r.id;
    let full = r.full_name();
    r.releases.get(&id).ok_or_else(ApiError::not_found)?;
    let name = asset_name(&raw_name);
    if name.is_empty() {
        return Err(ApiError::invalid("ReleaseAsset", "name", "missing_field"));
    }
    if size > crate::limits::MAX_ASSET_BYTES {
        return Err(ApiError::custom("ReleaseAsset", "size", &format!("size is {size} bytes; the pome GitHub twin keeps assets up to {} bytes", crate::limits::MAX_ASSET_BYTES)));
    }
    if held + size > crate::limits::MAX_ASSET_BYTES_PER_SANDBOX {
        return Err(ApiError::custom("ReleaseAsset", "size", &format!("this sandbox already holds {held} bytes of release assets; the pome GitHub twin keeps at most {} bytes in all", crate::limits::MAX_ASSET_BYTES_PER_SANDBOX)));
    }
    let siblings: Vec<&ReleaseAsset> = w.release_assets.values().map(|s| &s.asset).filter(|a| a.repo == rid && a.release == id).collect();
    if siblings.iter().any(|a| a.name == name) {
        return Err(ApiError::invalid("ReleaseAsset", "name", "already_exists"));
    }
    if siblings.len() >= crate::limits::MAX_ASSETS_PER_RELEASE {
        return Err(ApiError::custom("ReleaseAsset", "release_id", &format!("a release has at most {} assets", crate::limits::MAX_ASSETS_PER_RELEASE)));
    }
    let digest = {
        use sha2::Digest;
        let d = sha2::Sha256::digest(&call.req.body);
        let hex: String = d.iter().map(|b| format!("{b:02x}")).collect();
        format!("sha256:{hex}")
    };
    // The id is taken only once the upload is accepted, so a refused one leaves the world as it was.
    let asset_id = w.next_id();
    let now = time::now_iso();
    let asset = ReleaseAsset {
        id: asset_id,
        repo: rid,
        release: id,
        name,
        label,
        content_type,
        size: size as u64,
        digest,
        download_count: 0,
        uploader: viewer,
        created_at: now.clone(),
        updated_at: now,
    };
    call.created("release_asset", format!("{full}:{asset_id}"), &record(&asset));
    let content = crate::git::Bytes(std::mem::take(&mut call.req.body));
    w.release_assets.insert(asset_id, StoredAsset { asset: asset.clone(), content });
    let r = w.repo(call)?;
    json(201, &asset_json(w, &call.req.base_url, r, &asset))
}

/// `GET /repos/{owner}/{repo}/releases/assets/{asset_id}` (`repos/get-release-asset`). With
/// `Accept: application/octet-stream` GitHub answers 302 to the file; so does the twin, to
/// the `browser_download_url` it serves.
pub fn get_asset(w: &mut World, call: &mut Call) -> ApiResult {
    let (r, s) = find_asset(w, call)?;
    let b = call.req.base_url.clone();
    if call.req.header("accept").is_some_and(|a| a.contains("application/octet-stream")) {
        let to = download_url(&b, r, &s.asset);
        return Ok(Response { status: 302, headers: vec![("location".into(), to)], body: Vec::new() });
    }
    json(200, &asset_json(w, &b, r, &s.asset))
}

#[derive(Debug, Deserialize, Default)]
pub struct AssetInput {
    pub name: Option<String>,
    pub label: Option<String>,
    pub state: Option<String>,
}

/// `PATCH /repos/{owner}/{repo}/releases/assets/{asset_id}` (`repos/update-release-asset`):
/// rename or relabel (`state` is accepted as GitHub's description has it; an uploaded asset
/// stays `uploaded`).
pub fn update_asset(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: AssetInput = input(call)?;
    let _ = inp.state;
    w.repo_mut(call, Role::Write)?;
    let (r, s) = find_asset(w, call)?;
    let (rid, full) = (r.id, r.full_name());
    let before = s.asset.clone();
    let mut a = before.clone();
    if let Some(n) = inp.name {
        let n = asset_name(&n);
        if n.is_empty() {
            return Err(ApiError::invalid("ReleaseAsset", "name", "invalid"));
        }
        if w.release_assets.values().any(|o| o.asset.id != a.id && o.asset.repo == rid && o.asset.release == a.release && o.asset.name == n) {
            return Err(ApiError::invalid("ReleaseAsset", "name", "already_exists"));
        }
        a.name = n;
    }
    if let Some(l) = inp.label {
        a.label = Some(l).filter(|l| !l.is_empty());
    }
    a.updated_at = time::now_iso();
    call.updated("release_asset", format!("{full}:{}", a.id), &record(&before), &record(&a));
    if let Some(s) = w.release_assets.get_mut(&a.id) {
        s.asset = a.clone();
    }
    let r = w.repo(call)?;
    json(200, &asset_json(w, &call.req.base_url, r, &a))
}

/// `DELETE /repos/{owner}/{repo}/releases/assets/{asset_id}` (`repos/delete-release-asset`).
pub fn delete_asset(w: &mut World, call: &mut Call) -> ApiResult {
    w.repo_mut(call, Role::Write)?;
    let (r, s) = find_asset(w, call)?;
    let (full, id) = (r.full_name(), s.asset.id);
    let gone = w.release_assets.remove(&id).expect("found above");
    call.deleted("release_asset", format!("{full}:{id}"), &record(&gone.asset));
    no_content()
}

/// `GET /{owner}/{repo}/releases/download/{tag}/{name}`: the asset's bytes, where its
/// `browser_download_url` points (github.com redirects to its object storage; the twin
/// answers the file), counted in `download_count`. Never cached (`cache::cacheable`), so
/// every download counts; like every uncached request it starts a new generation of the
/// cache, so no cached answer shows the old count.
pub fn download_file(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let (tag, name) = (call.param("tag").to_string(), call.param("name").to_string());
    let x = r.releases.values().find(|x| x.tag_name == tag && visible(w, r, x)).ok_or_else(ApiError::not_found)?;
    let (rid, rel) = (r.id, x.id);
    let id = w
        .release_assets
        .values()
        .find(|s| s.asset.repo == rid && s.asset.release == rel && s.asset.name == name)
        .map(|s| s.asset.id)
        .ok_or_else(ApiError::not_found)?;
    let s = w.release_assets.get_mut(&id).expect("found above");
    s.asset.download_count += 1;
    let disposition = format!("attachment; filename={}", s.asset.name);
    Ok(Response {
        status: 200,
        headers: vec![("content-type".into(), s.asset.content_type.clone()), ("content-disposition".into(), disposition)],
        body: s.content.0.clone(),
    })
}

/// Every asset of release `id` goes with it (GitHub deletes a release's assets with it).
fn drop_assets(w: &mut World, repo: u64, id: u64) {
    w.release_assets.retain(|_, s| !(s.asset.repo == repo && s.asset.release == id));
}

/// A release's assets for the state export: everything but the bytes (named by `digest`).
pub(crate) fn assets_state(w: &World, r: &Repo, id: u64) -> Value {
    Value::Array(assets_of(w, r, id).map(record).collect())
}
