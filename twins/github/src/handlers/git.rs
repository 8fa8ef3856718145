//! Code: contents (get, create/update with the `sha` guard, delete, readme), branches,
//! tags, refs (with the fast-forward check), commits (list, get, compare) and the git data
//! API (blobs, trees, commits, annotated tags), so multi-file commits work as on GitHub.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use pome_twin_sdk::{Call, Response, Value, json, time};
use serde::Deserialize;

use crate::World;
use crate::api::{ApiError, ApiResult, input, json, no_content, page_of, page_vec, text_response};
use crate::diff::{diff_trees, entry_json};
use crate::git::{Commit, Flat, Object, Signature, Tag, TreeEntry};
use crate::model::*;
use crate::render::{enc_path, node_id, short_id};

// ---- shared helpers --------------------------------------------------------------------

impl World {
    pub fn viewer_sig(&self) -> Signature {
        let u = &self.users[&self.viewer.to_ascii_lowercase()];
        Signature {
            name: u.name.clone().unwrap_or_else(|| u.login.clone()),
            email: u
                .email
                .clone()
                .unwrap_or_else(|| format!("{}@users.noreply.github.com", u.login.to_ascii_lowercase())),
            date: time::now_iso(),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct SigInput {
    pub name: Option<String>,
    pub email: Option<String>,
    pub date: Option<String>,
}

fn sig_from(inp: Option<SigInput>, default: &Signature, field: &str) -> Result<Signature, ApiError> {
    match inp {
        None => Ok(default.clone()),
        Some(s) => {
            let (Some(name), Some(email)) = (s.name, s.email) else {
                return Err(ApiError::custom("Commit", field, &format!("{field} name and email are required")));
            };
            Ok(Signature { name, email, date: s.date.unwrap_or_else(|| default.date.clone()) })
        }
    }
}

/// Resolve `?ref=` (or the default branch) to a commit sha; 404 with GitHub's message.
pub fn resolve_ref(r: &Repo, reference: Option<&str>) -> Result<String, ApiError> {
    let reference = reference.unwrap_or(&r.default_branch);
    r.git
        .resolve(reference)
        .ok_or_else(|| ApiError::new(404, format!("No commit found for the ref {reference}")))
}

/// A path an agent writes, refused with GitHub's 422 when it nests past
/// [`crate::git::MAX_PATH_DEPTH`].
pub fn check_path(path: &str) -> Result<(), ApiError> {
    use crate::git::MAX_PATH_DEPTH;
    let depth = path.split('/').count();
    if depth > MAX_PATH_DEPTH {
        return Err(ApiError::new(422, format!("path nests {depth} directories deep; at most {MAX_PATH_DEPTH} are allowed")));
    }
    Ok(())
}

/// Commit `flat` on `branch` (creating the branch for an empty repository); returns the
/// new commit sha. Records the ref change.
pub fn commit_on_branch(
    w: &mut World,
    call: &mut Call,
    key: &str,
    branch: &str,
    flat: &Flat,
    message: &str,
    author: Signature,
    committer: Signature,
) -> String {
    let r = w.repos.get_mut(key).unwrap();
    let parent = r.git.branch(branch).cloned();
    let tree = r.git.write_flat(flat);
    let sha = r.git.put(Object::Commit(Commit {
        tree,
        parents: parent.iter().cloned().collect(),
        author,
        committer,
        message: message.to_string(),
    }));
    let refname = format!("refs/heads/{branch}");
    match &parent {
        Some(p) => call.updated("ref", format!("{}:{refname}", r.full_name()), &json!({"sha": p}), &json!({"sha": sha})),
        None => call.created("ref", format!("{}:{refname}", r.full_name()), &json!({"sha": sha})),
    }
    r.git.refs.insert(refname, sha.clone());
    let now = time::now_iso();
    r.pushed_at = now.clone();
    r.updated_at = now;
    sha
}

fn content_json(w: &World, b: &str, r: &Repo, path: &str, e: &TreeEntry, reference: &str, with_content: bool) -> Value {
    let fname = r.full_name();
    let p = enc_path(path);
    let url = format!("{b}/repos/{fname}/contents/{p}?ref={}", crate::render::enc(reference));
    let (kind, size) = if e.is_tree() {
        ("dir", 0)
    } else if e.mode == "160000" {
        ("submodule", 0)
    } else if e.mode == "120000" {
        ("symlink", r.git.blob_bytes(&e.sha).map(|x| x.len()).unwrap_or(0))
    } else {
        ("file", r.git.blob_bytes(&e.sha).map(|x| x.len()).unwrap_or(0))
    };
    let git_url = if e.is_tree() {
        format!("{b}/repos/{fname}/git/trees/{}", e.sha)
    } else {
        format!("{b}/repos/{fname}/git/blobs/{}", e.sha)
    };
    let html = format!("{b}/{fname}/{}/{reference}/{p}", if e.is_tree() { "tree" } else { "blob" });
    let download = (kind == "file").then(|| format!("{b}/{fname}/raw/{reference}/{p}"));
    let name = path.rsplit('/').next().unwrap_or(path);
    let mut v = json!({
        "type": kind, "size": size, "name": name, "path": path, "sha": e.sha, "url": url,
        "git_url": git_url, "html_url": html, "download_url": download,
        "_links": {"self": url, "git": git_url, "html": html},
    });
    if with_content && kind != "dir" {
        let bytes = r.git.blob_bytes(&e.sha).unwrap_or_default();
        let m = v.as_object_mut().unwrap();
        m.insert("content".into(), json!(wrap_base64(bytes)));
        m.insert("encoding".into(), json!("base64"));
        if kind == "symlink" {
            m.insert("target".into(), json!(String::from_utf8_lossy(bytes)));
        }
    }
    let _ = w;
    v
}

/// Base64 with a newline every 60 characters, as GitHub sends file contents.
fn wrap_base64(bytes: &[u8]) -> String {
    let s = B64.encode(bytes);
    let mut out = String::with_capacity(s.len() + s.len() / 60 + 1);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && i % 60 == 0 {
            out.push('\n');
        }
        out.push(c);
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out
}

fn decode_b64(s: &str) -> Option<Vec<u8>> {
    let clean: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    B64.decode(clean).ok()
}

// ---- contents --------------------------------------------------------------------------

fn get_content_at(w: &World, call: &Call, path: &str) -> ApiResult {
    let r = w.repo(call)?;
    let reference = call.req.query("ref");
    if r.git.refs.is_empty() {
        return Err(ApiError::new(404, "This repository is empty."));
    }
    let sha = resolve_ref(r, reference.as_deref())?;
    let refname = reference.unwrap_or_else(|| r.default_branch.clone());
    let tree = tree_of(r, &sha);
    let path = path.trim_matches('/');
    let e = r.git.entry_at(&tree, path).ok_or_else(ApiError::not_found)?;
    let b = &call.req.base_url;
    if e.is_tree() {
        let entries = r.git.tree(&e.sha).cloned().unwrap_or_default();
        let mut list: Vec<Value> = entries
            .iter()
            .map(|x| {
                let p = if path.is_empty() { x.name.clone() } else { format!("{path}/{}", x.name) };
                content_json(w, b, r, &p, x, &refname, false)
            })
            .collect();
        list.sort_by(|a, b| {
            let ka = (a["type"] != "dir", a["name"].as_str().unwrap_or("").to_string());
            let kb = (b["type"] != "dir", b["name"].as_str().unwrap_or("").to_string());
            ka.cmp(&kb)
        });
        return json(200, &Value::Array(list));
    }
    json(200, &content_json(w, b, r, path, &e, &refname, true))
}

/// `GET /repos/{owner}/{repo}/contents/{path}` (`repos/get-content`).
pub fn get_content(w: &mut World, call: &mut Call) -> ApiResult {
    let path = call.param("path").to_string();
    get_content_at(w, call, &path)
}

/// `GET /repos/{owner}/{repo}/contents` (the root directory).
pub fn get_content_root(w: &mut World, call: &mut Call) -> ApiResult {
    get_content_at(w, call, "")
}

/// `GET /repos/{owner}/{repo}/readme` (`repos/get-readme`).
pub fn get_readme(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let reference = call.req.query("ref");
    let sha = resolve_ref(r, reference.as_deref()).map_err(|_| ApiError::not_found())?;
    let tree = tree_of(r, &sha);
    let entries = r.git.tree(&tree).cloned().unwrap_or_default();
    let e = entries
        .iter()
        .find(|e| !e.is_tree() && e.name.to_ascii_lowercase().starts_with("readme"))
        .ok_or_else(ApiError::not_found)?;
    let refname = reference.unwrap_or_else(|| r.default_branch.clone());
    json(200, &content_json(w, &call.req.base_url, r, &e.name.clone(), e, &refname, true))
}

#[derive(Debug, Deserialize)]
pub struct PutFile {
    pub message: Option<String>,
    pub content: Option<String>,
    pub sha: Option<String>,
    pub branch: Option<String>,
    pub committer: Option<SigInput>,
    pub author: Option<SigInput>,
}

fn file_commit_response(w: &World, call: &Call, key: &str, path: Option<&str>, branch: &str, sha: &str, status: u16) -> ApiResult {
    let r = &w.repos[key];
    let b = &call.req.base_url;
    let c = r.git.commit(sha).unwrap();
    let content = match path {
        Some(p) => {
            let e = r.git.entry_at(&c.tree, p).unwrap();
            content_json(w, b, r, p, &e, branch, false)
        }
        None => Value::Null,
    };
    json(status, &json!({"content": content, "commit": w.git_commit_json(b, r, sha, c)}))
}

fn branch_for_write(r: &Repo, branch: &Option<String>) -> Result<String, ApiError> {
    let b = branch.clone().unwrap_or_else(|| r.default_branch.clone());
    if r.git.branch(&b).is_none() && !(r.git.refs.is_empty() && b == r.default_branch) {
        return Err(ApiError::new(404, format!("Branch {b} not found")));
    }
    Ok(b)
}

/// `PUT /repos/{owner}/{repo}/contents/{path}` (`repos/create-or-update-file-contents`).
pub fn put_content(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: PutFile = input(call)?;
    let path = call.param("path").trim_matches('/').to_string();
    check_path(&path)?;
    let key = w.repo_key_for(call)?;
    w.repo_mut(call, Role::Write)?;
    let message = inp.message.clone().ok_or_else(|| ApiError::invalid("Commit", "message", "missing_field"))?;
    let content = inp.content.as_deref().ok_or_else(|| ApiError::invalid("Commit", "content", "missing_field"))?;
    let bytes = decode_b64(content).ok_or_else(|| ApiError::new(422, "content is not valid Base64"))?;
    let r = &w.repos[&key];
    let branch = branch_for_write(r, &inp.branch)?;
    let mut flat = r.git.branch(&branch).map(|s| r.git.flatten(&tree_of(r, s))).unwrap_or_default();
    let existing = flat.get(&path).cloned();
    if let Some(e) = r.git.branch(&branch).and_then(|s| r.git.entry_at(&tree_of(r, s), &path)) {
        if e.is_tree() {
            return Err(ApiError::new(422, format!("{path} is a directory")));
        }
    }
    let status = match (&existing, &inp.sha) {
        (Some(_), None) => return Err(ApiError::new(422, "Invalid request.\n\n\"sha\" wasn't supplied.")),
        (Some((_, cur)), Some(given)) if cur != given => {
            return Err(ApiError::new(409, format!("{path} does not match {given}")));
        }
        (Some(_), Some(_)) => 200,
        (None, _) => 201,
    };
    if flat.keys().any(|k| path.starts_with(&format!("{k}/"))) {
        return Err(ApiError::new(422, format!("A file exists where a directory is needed for {path}")));
    }
    let default = w.viewer_sig();
    let committer = sig_from(inp.committer, &default, "committer")?;
    let author = sig_from(inp.author, &committer, "author")?;
    let blob = w.repos.get_mut(&key).unwrap().git.blob(&bytes);
    let mode = existing.as_ref().map(|e| e.0.clone()).unwrap_or_else(|| "100644".into());
    flat.insert(path.clone(), (mode, blob));
    let sha = commit_on_branch(w, call, &key, &branch, &flat, &message, author, committer);
    let r = &w.repos[&key];
    let fid = format!("{}:{branch}:{path}", r.full_name());
    let before = json!({"path": path});
    call.record("file", fid, existing.as_ref().map(|_| &before), Some(&json!({"path": path, "commit": sha})));
    file_commit_response(w, call, &key, Some(&path), &branch, &sha, status)
}

#[derive(Debug, Deserialize)]
pub struct DeleteFile {
    pub message: Option<String>,
    pub sha: Option<String>,
    pub branch: Option<String>,
    pub committer: Option<SigInput>,
    pub author: Option<SigInput>,
}

/// `DELETE /repos/{owner}/{repo}/contents/{path}` (`repos/delete-file`).
pub fn delete_content(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: DeleteFile = input(call)?;
    let path = call.param("path").trim_matches('/').to_string();
    check_path(&path)?;
    let key = w.repo_key_for(call)?;
    w.repo_mut(call, Role::Write)?;
    let message = inp.message.clone().ok_or_else(|| ApiError::invalid("Commit", "message", "missing_field"))?;
    let given = inp.sha.clone().ok_or_else(|| ApiError::invalid("Commit", "sha", "missing_field"))?;
    let r = &w.repos[&key];
    let branch = branch_for_write(r, &inp.branch)?;
    let mut flat = r.git.branch(&branch).map(|s| r.git.flatten(&tree_of(r, s))).unwrap_or_default();
    let Some((_, cur)) = flat.get(&path).cloned() else {
        return Err(ApiError::not_found());
    };
    if cur != given {
        return Err(ApiError::new(409, format!("{path} does not match {given}")));
    }
    flat.remove(&path);
    let default = w.viewer_sig();
    let committer = sig_from(inp.committer, &default, "committer")?;
    let author = sig_from(inp.author, &committer, "author")?;
    let sha = commit_on_branch(w, call, &key, &branch, &flat, &message, author, committer);
    let fid = format!("{}:{branch}:{path}", w.repos[&key].full_name());
    call.deleted("file", fid, &json!({"path": path}));
    file_commit_response(w, call, &key, None, &branch, &sha, 200)
}

// ---- branches and tags -----------------------------------------------------------------

/// `GET /repos/{owner}/{repo}/branches` (`repos/list-branches`).
pub fn list_branches(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let protected = call.req.query("protected").map(|p| p == "true");
    let b = call.req.base_url.clone();
    let list: Vec<(&str, &String)> = r
        .git
        .branches()
        .filter(|(n, _)| protected.is_none_or(|p| w.is_protected(r, n) == p))
        .collect();
    let n = list.len();
    page_of(call, n, list.into_iter(), |(name, sha)| w.branch_short_json(&b, r, name, sha))
}

/// `GET /repos/{owner}/{repo}/branches/{branch}` (`repos/get-branch`).
pub fn get_branch(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let name = call.param("branch").to_string();
    let sha = r.git.branch(&name).ok_or_else(|| ApiError::new(404, "Branch not found"))?;
    let b = &call.req.base_url;
    let fname = r.full_name();
    let c = r.git.commit(sha).unwrap();
    let protected = w.is_protected(r, &name);
    json(
        200,
        &json!({
            "name": name, "commit": w.commit_json(b, r, sha, c, None),
            "_links": {"self": format!("{b}/repos/{fname}/branches/{name}"), "html": format!("{b}/{fname}/tree/{name}")},
            "protected": protected,
            "protection": {"enabled": protected, "required_status_checks": {
                "enforcement_level": if protected { "non_admins" } else { "off" },
                "contexts": if protected { r.required_contexts.clone() } else { vec![] }, "checks": [],
            }},
            "protection_url": format!("{b}/repos/{fname}/branches/{name}/protection"),
        }),
    )
}

/// `GET /repos/{owner}/{repo}/tags` (`repos/list-tags`).
pub fn list_tags(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let b = call.req.base_url.clone();
    let fname = r.full_name();
    let mut list: Vec<(String, String)> = r.git.tags().map(|(n, s)| (n.to_string(), r.git.peel(s))).collect();
    list.reverse();
    let n = list.len();
    page_of(call, n, list.into_iter(), |(name, sha)| {
        json!({
            "name": name, "commit": {"sha": sha, "url": format!("{b}/repos/{fname}/commits/{sha}")},
            "zipball_url": format!("{b}/repos/{fname}/zipball/refs/tags/{name}"),
            "tarball_url": format!("{b}/repos/{fname}/tarball/refs/tags/{name}"),
            "node_id": node_id("Tag", short_id(&sha)),
        })
    })
}

// ---- refs ------------------------------------------------------------------------------

pub fn ref_json(b: &str, r: &Repo, name: &str, sha: &str) -> Value {
    let kind = r.git.get(sha).map(|o| o.kind()).unwrap_or("commit");
    let fname = r.full_name();
    let kind_path = match kind {
        "tag" => "tags",
        "tree" => "trees",
        "blob" => "blobs",
        _ => "commits",
    };
    json!({
        "ref": name, "node_id": node_id("Ref", short_id(sha)),
        "url": format!("{b}/repos/{fname}/git/{}", enc_path(name)),
        "object": {"type": kind, "sha": sha, "url": format!("{b}/repos/{fname}/git/{kind_path}/{sha}")},
    })
}

fn full_ref(s: &str) -> String {
    let s = s.trim_matches('/');
    if s.starts_with("refs/") { s.to_string() } else { format!("refs/{s}") }
}

/// `GET /repos/{owner}/{repo}/git/ref/{ref}` (`git/get-ref`).
pub fn get_ref(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let name = full_ref(call.param("ref"));
    let sha = r.git.refs.get(&name).ok_or_else(ApiError::not_found)?;
    json(200, &ref_json(&call.req.base_url, r, &name, sha))
}

/// `GET /repos/{owner}/{repo}/git/matching-refs/{ref}` (`git/list-matching-refs`).
pub fn matching_refs(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let prefix = full_ref(call.param("ref"));
    let b = call.req.base_url.clone();
    let list: Vec<Value> =
        r.git.refs.iter().filter(|(k, _)| k.starts_with(&prefix)).map(|(k, s)| ref_json(&b, r, k, s)).collect();
    page_vec(call, list)
}

/// `GET /repos/{owner}/{repo}/git/refs/{ref}` (legacy form PyGithub uses): the exact ref,
/// or every ref under the prefix.
pub fn get_refs_legacy(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let name = full_ref(call.param("ref"));
    let b = call.req.base_url.clone();
    if let Some(sha) = r.git.refs.get(&name) {
        return json(200, &ref_json(&b, r, &name, sha));
    }
    let prefix = format!("{name}/");
    let list: Vec<Value> =
        r.git.refs.iter().filter(|(k, _)| k.starts_with(&prefix)).map(|(k, s)| ref_json(&b, r, k, s)).collect();
    if list.is_empty() {
        return Err(ApiError::not_found());
    }
    json(200, &Value::Array(list))
}

/// `GET /repos/{owner}/{repo}/git/refs` (every ref).
pub fn list_refs(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let b = call.req.base_url.clone();
    let list: Vec<Value> = r.git.refs.iter().map(|(k, s)| ref_json(&b, r, k, s)).collect();
    page_vec(call, list)
}

#[derive(Debug, Deserialize)]
pub struct CreateRef {
    #[serde(rename = "ref")]
    pub reference: Option<String>,
    pub sha: Option<String>,
}

/// `POST /repos/{owner}/{repo}/git/refs` (`git/create-ref`).
pub fn create_ref(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: CreateRef = input(call)?;
    let name = inp.reference.ok_or_else(|| ApiError::invalid("Reference", "ref", "missing_field"))?;
    let sha = inp.sha.ok_or_else(|| ApiError::invalid("Reference", "sha", "missing_field"))?;
    if !name.starts_with("refs/") || name.matches('/').count() < 2 {
        return Err(ApiError::new(422, "Reference name must start with 'refs/' and have at least two slashes."));
    }
    if name.contains("..") || name.ends_with('/') || name.ends_with(".lock") || name.contains(' ') {
        return Err(ApiError::new(422, format!("{name} is not a valid ref name.")));
    }
    let r = w.repo_mut(call, Role::Write)?;
    if r.git.get(&sha).is_none() {
        return Err(ApiError::new(422, "Object does not exist"));
    }
    if r.git.refs.contains_key(&name) {
        return Err(ApiError::new(422, "Reference already exists"));
    }
    call.created("ref", format!("{}:{name}", r.full_name()), &json!({"sha": sha}));
    r.git.refs.insert(name.clone(), sha.clone());
    let r = w.repo(call)?;
    let b = &call.req.base_url;
    let v = ref_json(b, r, &name, &sha);
    Ok(Response::json(201, &v).with_header("location", v["url"].as_str().unwrap_or("").to_string()))
}

#[derive(Debug, Deserialize)]
pub struct UpdateRef {
    pub sha: Option<String>,
    #[serde(default)]
    pub force: bool,
}

/// `PATCH /repos/{owner}/{repo}/git/refs/{ref}` (`git/update-ref`): refuses a move that
/// is not a fast-forward unless `force`.
pub fn update_ref(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: UpdateRef = input(call)?;
    let name = full_ref(call.param("ref"));
    let sha = inp.sha.ok_or_else(|| ApiError::invalid("Reference", "sha", "missing_field"))?;
    let r = w.repo_mut(call, Role::Write)?;
    let cur = r.git.refs.get(&name).cloned().ok_or_else(|| ApiError::new(422, "Reference does not exist"))?;
    if r.git.get(&sha).is_none() {
        return Err(ApiError::new(422, "Object does not exist"));
    }
    if !inp.force && name.starts_with("refs/heads/") && cur != sha && !r.git.is_ancestor(&cur, &sha) {
        return Err(ApiError::new(422, "Update is not a fast forward"));
    }
    call.updated("ref", format!("{}:{name}", r.full_name()), &json!({"sha": cur}), &json!({"sha": sha}));
    r.git.refs.insert(name.clone(), sha.clone());
    r.pushed_at = time::now_iso();
    let r = w.repo(call)?;
    json(200, &ref_json(&call.req.base_url, r, &name, &sha))
}

/// `DELETE /repos/{owner}/{repo}/git/refs/{ref}` (`git/delete-ref`).
pub fn delete_ref(w: &mut World, call: &mut Call) -> ApiResult {
    let name = full_ref(call.param("ref"));
    let r = w.repo_mut(call, Role::Write)?;
    if name == format!("refs/heads/{}", r.default_branch) {
        return Err(ApiError::new(422, "Cannot delete the default branch"));
    }
    let sha = r.git.refs.remove(&name).ok_or_else(|| ApiError::new(422, "Reference does not exist"))?;
    call.deleted("ref", format!("{}:{name}", r.full_name()), &json!({"sha": sha}));
    // Deleting the head branch of an open pull request closes it, as on GitHub.
    if let Some(branch) = name.strip_prefix("refs/heads/") {
        let open: Vec<u64> = r
            .issues
            .values()
            .filter(|i| i.state == "open" && i.pull.as_ref().is_some_and(|p| p.head_ref == branch))
            .map(|i| i.number)
            .collect();
        for n in &open {
            if let Some(p) = r.issues.get_mut(n).and_then(|i| i.pull.as_mut()) {
                p.head_sha = sha.clone();
            }
        }
        let key = w.repo_key_for(call)?;
        for n in open {
            let before = w.repos[&key].issues[&n].clone();
            crate::handlers::issues::push_event(w, &key, n, "head_ref_deleted", None, None);
            crate::handlers::issues::set_state(w, &key, n, "closed", None);
            let r = &w.repos[&key];
            let after = r.issues[&n].clone();
            call.updated("pull_request", crate::handlers::issues::issue_ref(r, n), &before, &after);
        }
    }
    no_content()
}

// ---- commits and compare ---------------------------------------------------------------

/// Files changed by a commit against its first parent.
pub fn commit_files(b: &str, r: &Repo, sha: &str) -> Vec<Value> {
    let Some(c) = r.git.commit(sha) else { return Vec::new() };
    let parent_tree = c.parents.first().map(|p| tree_of(r, p)).unwrap_or_default();
    diff_trees(&r.git, &parent_tree, &c.tree).iter().map(|f| entry_json(b, &r.full_name(), sha, f)).collect()
}

/// `GET /repos/{owner}/{repo}/commits` (`repos/list-commits`).
pub fn list_commits(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    if r.git.refs.is_empty() {
        return Err(ApiError::new(409, "Git Repository is empty."));
    }
    let start = resolve_ref(r, call.req.query("sha").as_deref())?;
    let path = call.req.query("path").map(|p| p.trim_matches('/').to_string());
    let author = call.req.query("author").map(|a| a.to_ascii_lowercase());
    let committer = call.req.query("committer").map(|a| a.to_ascii_lowercase());
    let since = call.req.query("since");
    let until = call.req.query("until");
    let sig_matches = |s: &Signature, who: &str| {
        s.email.to_ascii_lowercase() == who
            || s.name.to_ascii_lowercase() == who
            || w.login_for(s).is_some_and(|l| l.to_ascii_lowercase() == who)
    };
    let list: Vec<String> = r
        .git
        .history(&start, usize::MAX)
        .into_iter()
        .filter(|sha| {
            let c = r.git.commit(sha).unwrap();
            if let Some(a) = &author {
                if !sig_matches(&c.author, a) {
                    return false;
                }
            }
            if let Some(a) = &committer {
                if !sig_matches(&c.committer, a) {
                    return false;
                }
            }
            if since.as_deref().is_some_and(|s| c.committer.date.as_str() < s) {
                return false;
            }
            if until.as_deref().is_some_and(|u| c.committer.date.as_str() > u) {
                return false;
            }
            if let Some(p) = &path {
                let here = r.git.entry_at(&c.tree, p).map(|e| e.sha);
                let before = c.parents.first().and_then(|pp| r.git.entry_at(&tree_of(r, pp), p)).map(|e| e.sha);
                if here == before {
                    return false;
                }
            }
            true
        })
        .collect();
    let b = call.req.base_url.clone();
    let n = list.len();
    page_of(call, n, list.into_iter(), |sha| {
        let c = r.git.commit(&sha).unwrap();
        w.commit_json(&b, r, &sha, c, None)
    })
}

/// `GET /repos/{owner}/{repo}/commits/{ref}` (`repos/get-commit`).
pub fn get_commit(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let reference = call.param("ref").to_string();
    let sha = r
        .git
        .resolve(&reference)
        .ok_or_else(|| ApiError::new(422, format!("No commit found for SHA: {reference}")))?;
    let b = &call.req.base_url;
    let c = r.git.commit(&sha).unwrap();
    if let Some(kind) = crate::diff::wants(call.req.header("accept")) {
        let parent_tree = c.parents.first().map(|p| tree_of(r, p)).unwrap_or_default();
        let (old, new) = (r.git.flatten(&parent_tree), r.git.flatten(&c.tree));
        let files = crate::diff::diff_flat(&r.git, &old, &new);
        return Ok(text_response(kind, crate::diff::unified(&files, &old, &new)));
    }
    json(200, &w.commit_json(b, r, &sha, c, Some(commit_files(b, r, &sha))))
}

/// `GET /repos/{owner}/{repo}/compare/{basehead}` (`repos/compare-commits-with-basehead`).
pub fn compare(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let spec = call.param("basehead").to_string();
    let (base, head) = spec
        .split_once("...")
        .or_else(|| spec.split_once(".."))
        .ok_or_else(ApiError::not_found)?;
    // `owner:branch` names a branch in this repository (or a fork of it).
    let strip = |s: &str| s.split_once(':').map(|(_, b)| b.to_string()).unwrap_or_else(|| s.to_string());
    let (base, head) = (strip(base), strip(head));
    let bs = r.git.resolve(&base).ok_or_else(ApiError::not_found)?;
    let hs = r.git.resolve(&head).ok_or_else(ApiError::not_found)?;
    let mb = r.git.merge_base(&bs, &hs).unwrap_or_else(|| bs.clone());
    let ahead = r.git.commits_between(&bs, &hs);
    let behind = r.git.commits_between(&hs, &bs);
    let status = match (ahead.len(), behind.len()) {
        (0, 0) => "identical",
        (_, 0) => "ahead",
        (0, _) => "behind",
        _ => "diverged",
    };
    if let Some(kind) = crate::diff::wants(call.req.header("accept")) {
        let (old, new) = (r.git.flatten(&tree_of(r, &mb)), r.git.flatten(&tree_of(r, &hs)));
        let files = crate::diff::diff_flat(&r.git, &old, &new);
        return Ok(text_response(kind, crate::diff::unified(&files, &old, &new)));
    }
    let b = call.req.base_url.clone();
    let fname = r.full_name();
    let files: Vec<Value> = diff_trees(&r.git, &tree_of(r, &mb), &tree_of(r, &hs))
        .iter()
        .map(|f| entry_json(&b, &fname, &hs, f))
        .collect();
    let commit_of = |s: &str| w.commit_json(&b, r, s, r.git.commit(s).unwrap(), None);
    let (page, per_page) = pome_twin_sdk::page::PageInfo::from_query(&call.req, 250, 250);
    let commits: Vec<Value> = ahead.iter().skip((page - 1) * per_page).take(per_page).map(|s| commit_of(s)).collect();
    json(
        200,
        &json!({
            "url": format!("{b}/repos/{fname}/compare/{spec}"),
            "html_url": format!("{b}/{fname}/compare/{spec}"),
            "permalink_url": format!("{b}/{fname}/compare/{}...{}", &bs[..7], &hs[..7]),
            "diff_url": format!("{b}/{fname}/compare/{spec}.diff"),
            "patch_url": format!("{b}/{fname}/compare/{spec}.patch"),
            "base_commit": commit_of(&bs),
            "merge_base_commit": commit_of(&mb),
            "status": status, "ahead_by": ahead.len(), "behind_by": behind.len(),
            "total_commits": ahead.len(), "commits": commits, "files": files,
        }),
    )
}

// ---- git data --------------------------------------------------------------------------

#[derive(Debug, Deserialize)]
pub struct CreateBlob {
    pub content: Option<String>,
    pub encoding: Option<String>,
}

/// `POST /repos/{owner}/{repo}/git/blobs` (`git/create-blob`).
pub fn create_blob(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: CreateBlob = input(call)?;
    let content = inp.content.ok_or_else(|| ApiError::invalid("Blob", "content", "missing_field"))?;
    let bytes = match inp.encoding.as_deref().unwrap_or("utf-8") {
        "utf-8" | "utf8" => content.into_bytes(),
        "base64" => decode_b64(&content).ok_or_else(|| ApiError::new(422, "content is not valid Base64"))?,
        _ => return Err(ApiError::invalid("Blob", "encoding", "invalid")),
    };
    let r = w.repo_mut(call, Role::Write)?;
    let sha = r.git.blob(&bytes);
    call.created("git_blob", format!("{}:{sha}", r.full_name()), &json!({"sha": sha, "size": bytes.len()}));
    let url = format!("{}/repos/{}/git/blobs/{sha}", call.req.base_url, r.full_name());
    Ok(Response::json(201, &json!({"url": url, "sha": sha})).with_header("location", url))
}

/// `GET /repos/{owner}/{repo}/git/blobs/{file_sha}` (`git/get-blob`).
pub fn get_blob(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let sha = call.param("file_sha").to_ascii_lowercase();
    let bytes = r.git.blob_bytes(&sha).ok_or_else(ApiError::not_found)?;
    json(
        200,
        &json!({
            "sha": sha, "node_id": node_id("Blob", short_id(&sha)), "size": bytes.len(),
            "url": format!("{}/repos/{}/git/blobs/{sha}", call.req.base_url, r.full_name()),
            "content": wrap_base64(bytes), "encoding": "base64",
        }),
    )
}

/// Entries a recursive tree answer lists at most before it says `truncated`: GitHub's
/// documented limit. Trees are content-addressed, so an agent can build a tree whose subtrees
/// share children (each tree naming the previous one twice): 40 requests make 2^40 paths.
const TREE_ENTRIES: usize = 100_000;

/// Bytes of entries a recursive tree answer holds at most before it says `truncated`:
/// GitHub's documented 7 MB, under the host's response cap.
const TREE_BYTES: usize = 7_000_000;

fn tree_json(b: &str, r: &Repo, sha: &str, recursive: bool) -> Value {
    let fname = r.full_name();
    let mut items = Vec::new();
    let mut bytes = 0usize;
    let mut truncated = false;
    // Depth first in git's order (a subtree's entries right after the subtree), with a stack
    // of its own: a chain of trees as deep as an agent cares to build never deepens the
    // guest's call stack. Each level: its entries, the next to list, and its path.
    let mut stack = vec![(r.git.tree(sha).cloned().unwrap_or_default(), 0usize, String::new())];
    while let Some((entries, next, prefix)) = stack.last_mut() {
        let Some(e) = entries.get(*next).cloned() else {
            stack.pop();
            continue;
        };
        *next += 1;
        if items.len() >= TREE_ENTRIES || bytes >= TREE_BYTES {
            truncated = true;
            break;
        }
        let path = if prefix.is_empty() { e.name.clone() } else { format!("{prefix}/{}", e.name) };
        // The entry's size as written: its path, its URL and about 160 bytes of the rest.
        bytes += path.len() + b.len() + fname.len() + 160;
        if e.is_tree() {
            items.push(json!({"path": path, "mode": "040000", "type": "tree", "sha": e.sha,
                "url": format!("{b}/repos/{fname}/git/trees/{}", e.sha)}));
            if recursive {
                stack.push((r.git.tree(&e.sha).cloned().unwrap_or_default(), 0, path));
            }
        } else {
            let kind = if e.mode == "160000" { "commit" } else { "blob" };
            let size = r.git.blob_bytes(&e.sha).map(|x| x.len()).unwrap_or(0);
            items.push(json!({"path": path, "mode": e.mode, "type": kind, "sha": e.sha, "size": size,
                "url": format!("{b}/repos/{fname}/git/blobs/{}", e.sha)}));
        }
    }
    json!({"sha": sha, "url": format!("{b}/repos/{fname}/git/trees/{sha}"), "tree": items, "truncated": truncated})
}

/// `GET /repos/{owner}/{repo}/git/trees/{tree_sha}` (`git/get-tree`); a branch name or a
/// commit sha is accepted and peeled to its tree, as GitHub does.
pub fn get_tree(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let given = call.param("tree_sha").to_string();
    let sha = if r.git.tree(&given).is_some() {
        given
    } else {
        let c = r.git.resolve(&given).ok_or_else(ApiError::not_found)?;
        tree_of(r, &c)
    };
    if r.git.tree(&sha).is_none() {
        return Err(ApiError::not_found());
    }
    let recursive = call.req.query("recursive").is_some_and(|v| !v.is_empty() && v != "0" && v != "false");
    json(200, &tree_json(&call.req.base_url, r, &sha, recursive))
}

#[derive(Debug, Deserialize)]
pub struct TreeItem {
    pub path: Option<String>,
    pub mode: Option<String>,
    #[serde(rename = "type")]
    pub kind: Option<String>,
    #[serde(default, deserialize_with = "nullable")]
    pub sha: Option<Option<String>>,
    pub content: Option<String>,
}

fn nullable<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Ok(Some(Option::<String>::deserialize(d)?))
}

#[derive(Debug, Deserialize)]
pub struct CreateTree {
    pub tree: Option<Vec<TreeItem>>,
    pub base_tree: Option<String>,
}

/// `POST /repos/{owner}/{repo}/git/trees` (`git/create-tree`). Paths may be nested; a
/// `sha: null` entry deletes the path from `base_tree`.
pub fn create_tree(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: CreateTree = input(call)?;
    let items = inp.tree.ok_or_else(|| ApiError::invalid("Tree", "tree", "missing_field"))?;
    let r = w.repo_mut(call, Role::Write)?;
    let mut flat = match &inp.base_tree {
        None => Flat::new(),
        Some(bt) => {
            let t = if r.git.tree(bt).is_some() {
                bt.clone()
            } else {
                let c = r.git.resolve(bt).ok_or_else(|| ApiError::new(422, "base_tree is not a valid tree oid"))?;
                tree_of(r, &c)
            };
            r.git.flatten(&t)
        }
    };
    for (i, it) in items.iter().enumerate() {
        let path = it
            .path
            .as_deref()
            .map(|p| p.trim_matches('/').to_string())
            .filter(|p| !p.is_empty())
            .ok_or_else(|| ApiError::new(422, format!("tree.path is missing for item {i}")))?;
        if path.split('/').any(|s| s.is_empty() || s == "." || s == ".." || s == ".git") {
            return Err(ApiError::new(422, format!("tree.path contains a malformed path component: {path}")));
        }
        check_path(&path)?;
        let mode = it.mode.clone().unwrap_or_else(|| "100644".into());
        if !["100644", "100755", "040000", "160000", "120000"].contains(&mode.as_str()) {
            return Err(ApiError::new(422, format!("tree.mode {mode:?} is invalid")));
        }
        match (&it.sha, &it.content) {
            (Some(None), _) => {
                let prefix = format!("{path}/");
                flat.retain(|k, _| k != &path && !k.starts_with(&prefix));
            }
            (Some(Some(sha)), _) => {
                if mode == "040000" || it.kind.as_deref() == Some("tree") {
                    let sub = r.git.flatten(sha);
                    if r.git.tree(sha).is_none() {
                        return Err(ApiError::new(422, format!("tree.sha {sha} is not a valid tree")));
                    }
                    for (k, v) in sub {
                        let full = format!("{path}/{k}");
                        check_path(&full)?;
                        flat.insert(full, v);
                        // Subtrees may share children: a tree naming the previous one twice
                        // doubles the files with each request. GitHub stops at its limit.
                        if flat.len() > TREE_ENTRIES {
                            return Err(ApiError::new(422, format!("A tree may hold at most {TREE_ENTRIES} entries")));
                        }
                    }
                } else {
                    if r.git.get(sha).is_none() && mode != "160000" {
                        return Err(ApiError::new(422, format!("tree.sha {sha} is not a valid blob")));
                    }
                    flat.insert(path, (mode, sha.clone()));
                }
            }
            (None, Some(content)) => {
                let sha = r.git.blob(content.as_bytes());
                flat.insert(path, (mode, sha));
            }
            (None, None) => return Err(ApiError::new(422, "Must supply either tree.sha or tree.content")),
        }
    }
    let sha = r.git.write_flat(&flat);
    call.created("git_tree", format!("{}:{sha}", r.full_name()), &json!({"sha": sha, "files": flat.len()}));
    let r = w.repo(call)?;
    json(201, &tree_json(&call.req.base_url, r, &sha, false))
}

#[derive(Debug, Deserialize)]
pub struct CreateCommit {
    pub message: Option<String>,
    pub tree: Option<String>,
    #[serde(default)]
    pub parents: Vec<String>,
    pub author: Option<SigInput>,
    pub committer: Option<SigInput>,
}

/// `POST /repos/{owner}/{repo}/git/commits` (`git/create-commit`).
pub fn create_commit(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: CreateCommit = input(call)?;
    let message = inp.message.ok_or_else(|| ApiError::invalid("Commit", "message", "missing_field"))?;
    let tree = inp.tree.ok_or_else(|| ApiError::invalid("Commit", "tree", "missing_field"))?;
    let default = w.viewer_sig();
    let author = sig_from(inp.author, &default, "author")?;
    let committer = sig_from(inp.committer, &author, "committer")?;
    let r = w.repo_mut(call, Role::Write)?;
    if r.git.tree(&tree).is_none() {
        return Err(ApiError::new(422, "Tree SHA does not exist"));
    }
    for p in &inp.parents {
        if r.git.commit(p).is_none() {
            return Err(ApiError::new(422, "Parent SHA does not exist or is not a commit object"));
        }
    }
    let sha = r.git.put(Object::Commit(Commit { tree, parents: inp.parents, author, committer, message }));
    call.created("git_commit", format!("{}:{sha}", r.full_name()), &json!({"sha": sha}));
    let r = w.repo(call)?;
    let b = &call.req.base_url;
    let v = w.git_commit_json(b, r, &sha, r.git.commit(&sha).unwrap());
    Ok(Response::json(201, &v).with_header("location", v["url"].as_str().unwrap_or("").to_string()))
}

/// `GET /repos/{owner}/{repo}/git/commits/{commit_sha}` (`git/get-commit`).
pub fn get_git_commit(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let sha = call.param("commit_sha").to_ascii_lowercase();
    let c = r.git.commit(&sha).ok_or_else(ApiError::not_found)?;
    json(200, &w.git_commit_json(&call.req.base_url, r, &sha, c))
}

#[derive(Debug, Deserialize)]
pub struct CreateTag {
    pub tag: Option<String>,
    pub message: Option<String>,
    pub object: Option<String>,
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub tagger: Option<SigInput>,
}

pub fn tag_json(b: &str, r: &Repo, sha: &str, t: &Tag) -> Value {
    let fname = r.full_name();
    let kind_path = match t.kind.as_str() {
        "tree" => "trees",
        "blob" => "blobs",
        "tag" => "tags",
        _ => "commits",
    };
    json!({
        "node_id": node_id("Tag", short_id(sha)), "tag": t.tag, "sha": sha,
        "url": format!("{b}/repos/{fname}/git/tags/{sha}"), "message": t.message,
        "tagger": World::signature_json(&t.tagger),
        "object": {"type": t.kind, "sha": t.object, "url": format!("{b}/repos/{fname}/git/{kind_path}/{}", t.object)},
        "verification": {"verified": false, "reason": "unsigned", "signature": null, "payload": null, "verified_at": null},
    })
}

/// `POST /repos/{owner}/{repo}/git/tags` (`git/create-tag`): the tag object only; the
/// `refs/tags/…` ref is created separately, as on GitHub.
pub fn create_tag(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: CreateTag = input(call)?;
    let tag = inp.tag.ok_or_else(|| ApiError::invalid("Tag", "tag", "missing_field"))?;
    let object = inp.object.ok_or_else(|| ApiError::invalid("Tag", "object", "missing_field"))?;
    let default = w.viewer_sig();
    let tagger = sig_from(inp.tagger, &default, "tagger")?;
    let r = w.repo_mut(call, Role::Write)?;
    let kind = r.git.get(&object).map(|o| o.kind()).ok_or_else(|| ApiError::new(422, "Object does not exist"))?;
    if inp.kind.as_deref().is_some_and(|k| k != kind) {
        return Err(ApiError::new(422, format!("Object is a {kind}, not a {}", inp.kind.unwrap())));
    }
    let t = Tag { tag, object, kind: kind.to_string(), tagger, message: inp.message.unwrap_or_default() };
    let sha = r.git.put(Object::Tag(t.clone()));
    call.created("git_tag", format!("{}:{sha}", r.full_name()), &json!({"sha": sha, "tag": t.tag}));
    let r = w.repo(call)?;
    json(201, &tag_json(&call.req.base_url, r, &sha, &t))
}

/// `GET /repos/{owner}/{repo}/git/tags/{tag_sha}` (`git/get-tag`).
pub fn get_tag(w: &mut World, call: &mut Call) -> ApiResult {
    let r = w.repo(call)?;
    let sha = call.param("tag_sha").to_ascii_lowercase();
    match r.git.get(&sha) {
        Some(Object::Tag(t)) => json(200, &tag_json(&call.req.base_url, r, &sha, t)),
        _ => Err(ApiError::not_found()),
    }
}
