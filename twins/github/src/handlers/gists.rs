//! Gists: create, list (own, public, starred, a user's), get, update (rename a file, delete
//! one with `null`), delete; revisions (`history`, `GET …/commits`, `GET /gists/{id}/{sha}`);
//! forks; stars; comments; and the raw files their `raw_url`s point at.
//!
//! Every revision is a commit of its own whose `version` is a SHA-1 over the gist's id, the
//! previous version, the author, the time and every file, so replays repeat it. A file's text
//! in an answer stops at 1 MB with `truncated: true` (GitHub's limit; `raw_url` serves it
//! whole), and a gist shows its first 300 files with the gist's `truncated: true`. Lists leave
//! file contents out, as GitHub's do.

use std::collections::BTreeMap;

use pome_twin_sdk::{Call, Response, Value, json, time};
use serde::Deserialize;

use crate::World;
use crate::api::{ApiError, ApiResult, input, json, no_content, num, page_of};
use crate::model::{Gist, GistComment, GistRevision};
use crate::render::{enc_path, node_id};

/// GitHub answers at most this much of a file's text in the API (`truncated` beyond it).
pub const MAX_FILE_CONTENT: usize = 1024 * 1024;
/// GitHub lists at most this many of a gist's files (the gist's `truncated` beyond it).
pub const MAX_FILES_SHOWN: usize = 300;

fn sha1_hex(parts: &[&str]) -> String {
    let mut h = sha1_smol::Sha1::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update(b"\0");
    }
    h.digest().to_string()
}

/// A new gist's id: 32 hex digits from the world's id counter.
fn gist_id(num: u64) -> String {
    sha1_hex(&["gist", &num.to_string()])[..32].to_string()
}

/// GitHub's media type and linguist language for a file name (by extension).
fn file_kind(name: &str) -> (&'static str, &'static str) {
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    match ext.as_str() {
        "md" | "markdown" => ("text/markdown", "Markdown"),
        "py" => ("application/x-python", "Python"),
        "js" | "mjs" => ("application/javascript", "JavaScript"),
        "ts" => ("application/typescript", "TypeScript"),
        "json" => ("application/json", "JSON"),
        "rb" => ("application/x-ruby", "Ruby"),
        "rs" => ("text/rust", "Rust"),
        "go" => ("text/x-go", "Go"),
        "sh" => ("application/x-sh", "Shell"),
        "yml" | "yaml" => ("application/x-yaml", "YAML"),
        "html" | "htm" => ("text/html", "HTML"),
        "css" => ("text/css", "CSS"),
        "toml" => ("application/toml", "TOML"),
        _ => ("text/plain", "Text"),
    }
}

/// The revision made from `files` on top of `prev` (`None` for a new gist).
pub fn revision(id: &str, prev: Option<&GistRevision>, user: &str, now: &str, files: BTreeMap<String, String>) -> GistRevision {
    let (mut additions, mut deletions) = (0, 0);
    let empty = BTreeMap::new();
    let old = prev.map(|p| &p.files).unwrap_or(&empty);
    let names: std::collections::BTreeSet<&String> = old.keys().chain(files.keys()).collect();
    for n in names {
        let a = old.get(n).map(String::as_str).unwrap_or("");
        let b = files.get(n).map(String::as_str).unwrap_or("");
        for c in similar::TextDiff::from_lines(a, b).iter_all_changes() {
            match c.tag() {
                similar::ChangeTag::Insert => additions += 1,
                similar::ChangeTag::Delete => deletions += 1,
                similar::ChangeTag::Equal => {}
            }
        }
    }
    let mut parts: Vec<&str> = vec!["gist-commit", id, prev.map(|p| p.version.as_str()).unwrap_or(""), user, now];
    for (n, c) in &files {
        parts.push(n);
        parts.push(c);
    }
    GistRevision { version: sha1_hex(&parts), user: user.to_string(), committed_at: now.to_string(), files, additions, deletions }
}

/// A new gist with one revision (creates, forks and seeds).
pub fn new_gist(w: &mut World, owner: &str, description: Option<String>, public: bool, files: BTreeMap<String, String>, now: &str) -> Gist {
    let num = w.next_id();
    let id = gist_id(num);
    let rev = revision(&id, None, owner, now, files);
    Gist {
        id,
        num,
        owner: owner.to_string(),
        description,
        public,
        created_at: now.to_string(),
        updated_at: now.to_string(),
        fork_of: None,
        history: vec![rev],
        stars: Vec::new(),
        comments: BTreeMap::new(),
    }
}

/// What the tape records of a gist: its settings and current files.
fn change(g: &Gist) -> Value {
    json!({"id": g.id, "owner": g.owner, "description": g.description, "public": g.public,
           "fork_of": g.fork_of, "version": g.current().version, "files": g.current().files})
}

fn raw_url(b: &str, g: &Gist, version: &str, name: &str) -> String {
    format!("{b}/gist-raw/{}/{}/raw/{version}/{}", g.owner, g.id, enc_path(name))
}

/// The `files` object of a gist at revision `rev`; `content` only for single-gist answers.
fn files_json(b: &str, g: &Gist, rev: &GistRevision, content: bool) -> Value {
    let mut m = serde_json::Map::new();
    for (name, text) in rev.files.iter().take(MAX_FILES_SHOWN) {
        let (kind, language) = file_kind(name);
        let mut f = json!({
            "filename": name, "type": kind, "language": language,
            "raw_url": raw_url(b, g, &rev.version, name), "size": text.len(),
        });
        if content {
            let mut cut = text.len().min(MAX_FILE_CONTENT);
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            let o = f.as_object_mut().unwrap();
            o.insert("truncated".into(), json!(cut < text.len()));
            o.insert("content".into(), json!(&text[..cut]));
            o.insert("encoding".into(), json!("utf-8"));
        }
        m.insert(name.clone(), f);
    }
    Value::Object(m)
}

fn history_json(w: &World, b: &str, g: &Gist) -> Vec<Value> {
    g.history
        .iter()
        .rev()
        .map(|h| {
            json!({
                "url": format!("{b}/gists/{}/{}", g.id, h.version), "version": h.version,
                "user": w.user_json(b, &h.user), "committed_at": h.committed_at,
                "change_status": {"total": h.additions + h.deletions, "additions": h.additions, "deletions": h.deletions},
            })
        })
        .collect()
}

/// A gist as GitHub answers it: `full` (a single gist) adds file contents, `history`,
/// `forks` and `fork_of`; lists answer the summary.
pub fn gist_json(w: &World, b: &str, g: &Gist, rev: &GistRevision, full: bool) -> Value {
    let u = format!("{b}/gists/{}", g.id);
    let mut v = json!({
        "url": u, "forks_url": format!("{u}/forks"), "commits_url": format!("{u}/commits"),
        "id": g.id, "node_id": node_id("Gist", g.num),
        "git_pull_url": format!("{b}/gist/{}.git", g.id), "git_push_url": format!("{b}/gist/{}.git", g.id),
        "html_url": format!("{b}/gist/{}", g.id),
        "files": files_json(b, g, rev, full), "public": g.public,
        "created_at": g.created_at, "updated_at": g.updated_at, "description": g.description,
        "comments": g.comments.len(), "comments_enabled": true, "user": null,
        "comments_url": format!("{u}/comments"), "owner": w.user_json(b, &g.owner),
        "truncated": rev.files.len() > MAX_FILES_SHOWN,
    });
    if full {
        let forks: Vec<Value> = w
            .gists
            .values()
            .filter(|f| f.fork_of.as_deref() == Some(g.id.as_str()))
            .map(|f| {
                let user = w.users.get(&f.owner.to_ascii_lowercase()).map(|u| w.full_user_json(b, u, false)).unwrap_or_else(|| w.user_json(b, &f.owner));
                json!({"id": f.id, "url": format!("{b}/gists/{}", f.id), "user": user, "created_at": f.created_at, "updated_at": f.updated_at})
            })
            .collect();
        let fork_of = g.fork_of.as_ref().and_then(|id| w.gists.get(id)).map(|p| gist_json(w, b, p, p.current(), false));
        let o = v.as_object_mut().unwrap();
        o.insert("history".into(), json!(history_json(w, b, g)));
        o.insert("forks".into(), json!(forks));
        o.insert("fork_of".into(), fork_of.unwrap_or(Value::Null));
    }
    v
}

fn comment_json(w: &World, b: &str, g: &Gist, c: &GistComment) -> Value {
    json!({
        "id": c.id, "node_id": node_id("GistComment", c.id),
        "url": format!("{b}/gists/{}/comments/{}", g.id, c.id), "body": c.body,
        "user": w.user_json(b, &c.user), "created_at": c.created_at, "updated_at": c.updated_at,
        "author_association": if c.user.eq_ignore_ascii_case(&g.owner) { "OWNER" } else { "NONE" },
    })
}

fn gist<'a>(w: &'a World, call: &Call) -> Result<&'a Gist, ApiError> {
    w.gists.get(call.param("gist_id")).ok_or_else(ApiError::not_found)
}

/// The gist for a change only its owner may make: anyone else gets GitHub's 404.
fn own_gist<'a>(w: &'a mut World, call: &Call) -> Result<&'a mut Gist, ApiError> {
    let viewer = w.viewer.clone();
    match w.gists.get_mut(call.param("gist_id")) {
        Some(g) if g.owner.eq_ignore_ascii_case(&viewer) => Ok(g),
        _ => Err(ApiError::not_found()),
    }
}

/// Newest first (by creation, then by id), from `since` on when given.
fn list_where(w: &World, call: &Call, keep: impl Fn(&Gist) -> bool) -> ApiResult {
    let since = call.req.query("since");
    if since.as_deref().is_some_and(|s| time::parse_iso(s).is_none()) {
        return Err(ApiError::invalid("Gist", "since", "invalid"));
    }
    let since = since.and_then(|s| time::parse_iso(&s));
    let mut list: Vec<&Gist> = w
        .gists
        .values()
        .filter(|g| keep(g))
        .filter(|g| since.is_none_or(|s| time::parse_iso(&g.updated_at).is_some_and(|u| u >= s)))
        .collect();
    list.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(b.num.cmp(&a.num)));
    let b = call.req.base_url.clone();
    let n = list.len();
    page_of(call, n, list.into_iter(), |g| gist_json(w, &b, g, g.current(), false))
}

/// `GET /gists` (`gists/list`): the viewer's gists, secret ones too.
pub fn list(w: &mut World, call: &mut Call) -> ApiResult {
    let viewer = w.viewer.clone();
    list_where(w, call, |g| g.owner.eq_ignore_ascii_case(&viewer))
}

/// `GET /gists/public` (`gists/list-public`).
pub fn list_public(w: &mut World, call: &mut Call) -> ApiResult {
    list_where(w, call, |g| g.public)
}

/// `GET /gists/starred` (`gists/list-starred`).
pub fn list_starred(w: &mut World, call: &mut Call) -> ApiResult {
    let viewer = w.viewer.clone();
    list_where(w, call, |g| g.stars.iter().any(|s| s.eq_ignore_ascii_case(&viewer)))
}

/// `GET /users/{username}/gists` (`gists/list-for-user`): public gists, and secret ones too
/// when the user is the viewer.
pub fn list_for_user(w: &mut World, call: &mut Call) -> ApiResult {
    let login = call.param("username").to_string();
    if !w.user_exists(&login) {
        return Err(ApiError::not_found());
    }
    let mine = login.eq_ignore_ascii_case(&w.viewer);
    list_where(w, call, |g| g.owner.eq_ignore_ascii_case(&login) && (g.public || mine))
}

#[derive(Deserialize)]
struct FileInput {
    content: Option<String>,
    filename: Option<String>,
}

#[derive(Deserialize)]
struct CreateInput {
    description: Option<String>,
    files: Option<BTreeMap<String, FileInput>>,
    public: Option<PublicFlag>,
}

/// `public` is a boolean, or the strings `"true"`/`"false"` (GitHub's description allows both).
#[derive(Deserialize)]
#[serde(untagged)]
enum PublicFlag {
    Bool(bool),
    Text(String),
}

fn missing_files() -> ApiError {
    ApiError::invalid("Gist", "files", "missing_field")
}

fn empty_content(name: &str) -> ApiError {
    ApiError::custom("Gist", "files", &format!("contents of {name} can't be empty"))
}

/// `POST /gists` (`gists/create`).
pub fn create(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: CreateInput = input(call)?;
    let files = inp.files.filter(|f| !f.is_empty()).ok_or_else(missing_files)?;
    let mut out = BTreeMap::new();
    for (name, f) in files {
        let name = f.filename.filter(|n| !n.is_empty()).unwrap_or(name);
        match f.content {
            Some(c) if !c.is_empty() => {
                out.insert(name, c);
            }
            _ => return Err(empty_content(&name)),
        }
    }
    let public = match inp.public {
        None => false,
        Some(PublicFlag::Bool(p)) => p,
        Some(PublicFlag::Text(t)) if t == "true" || t == "false" => t == "true",
        Some(PublicFlag::Text(_)) => return Err(ApiError::invalid("Gist", "public", "invalid")),
    };
    let viewer = w.viewer.clone();
    let g = new_gist(w, &viewer, inp.description, public, out, &time::now_iso());
    call.created("gist", &g.id, &change(&g));
    let b = call.req.base_url.clone();
    let v = gist_json(w, &b, &g, g.current(), true);
    w.gists.insert(g.id.clone(), g);
    let loc = v["url"].as_str().unwrap_or("").to_string();
    Ok(Response::json(201, &v).with_header("location", loc))
}

/// `GET /gists/{gist_id}` (`gists/get`).
pub fn get(w: &mut World, call: &mut Call) -> ApiResult {
    let g = gist(w, call)?;
    json(200, &gist_json(w, &call.req.base_url, g, g.current(), true))
}

/// `GET /gists/{gist_id}/{sha}` (`gists/get-revision`): the gist with its files as of that
/// revision.
pub fn get_revision(w: &mut World, call: &mut Call) -> ApiResult {
    let g = gist(w, call)?;
    let sha = call.param("sha");
    let rev = g.history.iter().find(|h| h.version == sha).ok_or_else(ApiError::not_found)?;
    json(200, &gist_json(w, &call.req.base_url, g, rev, true))
}

#[derive(Deserialize)]
struct UpdateInput {
    description: Option<String>,
    /// File name → new content and/or name, or `null` to delete the file.
    files: Option<BTreeMap<String, Option<FileInput>>>,
}

/// `PATCH /gists/{gist_id}` (`gists/update`): a new revision when the files change.
pub fn update(w: &mut World, call: &mut Call) -> ApiResult {
    let inp: UpdateInput = input(call)?;
    if inp.description.is_none() && inp.files.is_none() {
        return Err(missing_files());
    }
    let viewer = w.viewer.clone();
    let now = time::now_iso();
    let g = own_gist(w, call)?;
    let before = change(g);
    let mut files = g.current().files.clone();
    for (name, f) in inp.files.unwrap_or_default() {
        match f {
            None => {
                if files.remove(&name).is_none() {
                    return Err(ApiError::custom("Gist", "files", &format!("{name} is not a file of this gist")));
                }
            }
            Some(f) => {
                let old = files.remove(&name);
                let content = match (f.content, old) {
                    (Some(c), _) if !c.is_empty() => c,
                    (Some(_), _) => return Err(empty_content(&name)),
                    (None, Some(old)) => old,
                    (None, None) => return Err(empty_content(&name)),
                };
                let new_name = f.filename.filter(|n| !n.is_empty()).unwrap_or(name);
                if files.contains_key(&new_name) {
                    return Err(ApiError::custom("Gist", "files", &format!("{new_name} already exists in this gist")));
                }
                files.insert(new_name, content);
            }
        }
    }
    if files.is_empty() {
        return Err(missing_files());
    }
    if let Some(d) = inp.description {
        g.description = Some(d);
    }
    if files != g.current().files {
        let rev = revision(&g.id.clone(), Some(g.current()), &viewer, &now, files);
        g.history.push(rev);
    }
    g.updated_at = now;
    let after = change(g);
    let id = g.id.clone();
    call.updated("gist", &id, &before, &after);
    let g = &w.gists[&id];
    json(200, &gist_json(w, &call.req.base_url, g, g.current(), true))
}

/// `DELETE /gists/{gist_id}` (`gists/delete`). Its forks stay, no longer `fork_of` anything
/// that answers.
pub fn delete(w: &mut World, call: &mut Call) -> ApiResult {
    let id = own_gist(w, call)?.id.clone();
    let g = w.gists.remove(&id).expect("found above");
    call.deleted("gist", &id, &change(&g));
    no_content()
}

/// `GET /gists/{gist_id}/commits` (`gists/list-commits`): newest first.
pub fn list_commits(w: &mut World, call: &mut Call) -> ApiResult {
    let g = gist(w, call)?;
    let all = history_json(w, &call.req.base_url, g);
    crate::api::page_vec(call, all)
}

/// `POST /gists/{gist_id}/forks` (`gists/fork`): a copy owned by the viewer, keeping the
/// history. Your own gist cannot be forked, nor one you have forked already.
pub fn fork(w: &mut World, call: &mut Call) -> ApiResult {
    let viewer = w.viewer.clone();
    let src = gist(w, call)?.clone();
    if src.owner.eq_ignore_ascii_case(&viewer) {
        return Err(ApiError::custom("Gist", "forks", "You cannot fork your own gist"));
    }
    if w.gists.values().any(|f| f.fork_of.as_deref() == Some(src.id.as_str()) && f.owner.eq_ignore_ascii_case(&viewer)) {
        return Err(ApiError::invalid("Gist", "forks", "already_exists"));
    }
    let now = time::now_iso();
    let mut g = new_gist(w, &viewer, src.description.clone(), src.public, BTreeMap::new(), &now);
    g.history = src.history.clone();
    g.fork_of = Some(src.id.clone());
    call.created("gist", &g.id, &change(&g));
    let b = call.req.base_url.clone();
    let v = gist_json(w, &b, &g, g.current(), false);
    w.gists.insert(g.id.clone(), g);
    let loc = v["url"].as_str().unwrap_or("").to_string();
    Ok(Response::json(201, &v).with_header("location", loc))
}

/// `GET /gists/{gist_id}/forks` (`gists/list-forks`): oldest first.
pub fn list_forks(w: &mut World, call: &mut Call) -> ApiResult {
    let id = gist(w, call)?.id.clone();
    let mut list: Vec<&Gist> = w.gists.values().filter(|f| f.fork_of.as_deref() == Some(id.as_str())).collect();
    list.sort_by_key(|g| g.num);
    let b = call.req.base_url.clone();
    let n = list.len();
    page_of(call, n, list.into_iter(), |g| gist_json(w, &b, g, g.current(), false))
}

/// `GET /gists/{gist_id}/star` (`gists/check-is-starred`): 204 when starred, else 404 with an
/// empty object (GitHub's description of this answer), unlike a missing gist's `Not Found`.
pub fn check_starred(w: &mut World, call: &mut Call) -> ApiResult {
    let g = gist(w, call)?;
    if g.stars.iter().any(|s| s.eq_ignore_ascii_case(&w.viewer)) { no_content() } else { json(404, &json!({})) }
}

/// `PUT /gists/{gist_id}/star` (`gists/star`); starring twice changes nothing.
pub fn star(w: &mut World, call: &mut Call) -> ApiResult {
    let viewer = w.viewer.clone();
    let g = w.gists.get_mut(call.param("gist_id")).ok_or_else(ApiError::not_found)?;
    if !g.stars.iter().any(|s| s.eq_ignore_ascii_case(&viewer)) {
        g.stars.push(viewer.clone());
        call.created("gist_star", format!("{}:{viewer}", g.id), &json!({"gist": g.id, "user": viewer}));
    }
    no_content()
}

/// `DELETE /gists/{gist_id}/star` (`gists/unstar`).
pub fn unstar(w: &mut World, call: &mut Call) -> ApiResult {
    let viewer = w.viewer.clone();
    let g = w.gists.get_mut(call.param("gist_id")).ok_or_else(ApiError::not_found)?;
    if let Some(i) = g.stars.iter().position(|s| s.eq_ignore_ascii_case(&viewer)) {
        g.stars.remove(i);
        call.deleted("gist_star", format!("{}:{viewer}", g.id), &json!({"gist": g.id, "user": viewer}));
    }
    no_content()
}

/// `GET /gists/{gist_id}/comments` (`gists/list-comments`): oldest first.
pub fn list_comments(w: &mut World, call: &mut Call) -> ApiResult {
    let g = gist(w, call)?;
    let b = call.req.base_url.clone();
    page_of(call, g.comments.len(), g.comments.values(), |c| comment_json(w, &b, g, c))
}

#[derive(Deserialize)]
struct CommentInput {
    body: Option<String>,
}

fn comment_body(call: &Call) -> Result<String, ApiError> {
    let inp: CommentInput = input(call)?;
    inp.body.filter(|b| !b.trim().is_empty()).ok_or_else(|| ApiError::invalid("GistComment", "body", "missing_field"))
}

/// `POST /gists/{gist_id}/comments` (`gists/create-comment`).
pub fn create_comment(w: &mut World, call: &mut Call) -> ApiResult {
    let body = comment_body(call)?;
    gist(w, call)?;
    let id = w.next_id();
    let now = time::now_iso();
    let c = GistComment { id, user: w.viewer.clone(), body, created_at: now.clone(), updated_at: now };
    let g = w.gists.get_mut(call.param("gist_id")).expect("found above");
    call.created("gist_comment", id, &c);
    g.comments.insert(id, c.clone());
    let g = gist(w, call)?;
    let v = comment_json(w, &call.req.base_url, g, &c);
    let loc = v["url"].as_str().unwrap_or("").to_string();
    Ok(Response::json(201, &v).with_header("location", loc))
}

/// `GET /gists/{gist_id}/comments/{comment_id}` (`gists/get-comment`).
pub fn get_comment(w: &mut World, call: &mut Call) -> ApiResult {
    let g = gist(w, call)?;
    let c = g.comments.get(&num(call, "comment_id")?).ok_or_else(ApiError::not_found)?;
    json(200, &comment_json(w, &call.req.base_url, g, c))
}

/// `PATCH /gists/{gist_id}/comments/{comment_id}` (`gists/update-comment`): its author only.
pub fn update_comment(w: &mut World, call: &mut Call) -> ApiResult {
    let body = comment_body(call)?;
    let cid = num(call, "comment_id")?;
    let viewer = w.viewer.clone();
    let g = w.gists.get_mut(call.param("gist_id")).ok_or_else(ApiError::not_found)?;
    let c = g.comments.get_mut(&cid).ok_or_else(ApiError::not_found)?;
    if !c.user.eq_ignore_ascii_case(&viewer) {
        return Err(ApiError::forbidden("You cannot edit another user's comment"));
    }
    let now = time::now_iso();
    call.update("gist_comment", cid, c, |c| {
        c.body = body;
        c.updated_at = now;
    });
    let c = c.clone();
    let g = gist(w, call)?;
    json(200, &comment_json(w, &call.req.base_url, g, &c))
}

/// `DELETE /gists/{gist_id}/comments/{comment_id}` (`gists/delete-comment`): its author or
/// the gist's owner.
pub fn delete_comment(w: &mut World, call: &mut Call) -> ApiResult {
    let cid = num(call, "comment_id")?;
    let viewer = w.viewer.clone();
    let g = w.gists.get_mut(call.param("gist_id")).ok_or_else(ApiError::not_found)?;
    let c = g.comments.get(&cid).ok_or_else(ApiError::not_found)?;
    if !c.user.eq_ignore_ascii_case(&viewer) && !g.owner.eq_ignore_ascii_case(&viewer) {
        return Err(ApiError::forbidden("You cannot delete another user's comment"));
    }
    let c = g.comments.remove(&cid).expect("found above");
    call.deleted("gist_comment", cid, &c);
    no_content()
}

/// `GET /gist-raw/{owner}/{gist_id}/raw/{sha}/{file}`: a file's whole text at a revision, where
/// the answers' `raw_url`s point (GitHub serves them from `gist.githubusercontent.com`).
pub fn raw(w: &mut World, call: &mut Call) -> ApiResult {
    let g = gist(w, call)?;
    if !g.owner.eq_ignore_ascii_case(call.param("owner")) {
        return Err(ApiError::not_found());
    }
    let rev = g.history.iter().find(|h| h.version == call.param("sha")).ok_or_else(ApiError::not_found)?;
    let text = rev.files.get(call.param("file")).ok_or_else(ApiError::not_found)?;
    Ok(Response { status: 200, headers: vec![("content-type".into(), "text/plain; charset=utf-8".into())], body: text.clone().into_bytes() })
}
