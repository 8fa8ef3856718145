//! What every GitHub handler shares: the error type and GitHub's error bodies, the response
//! headers GitHub sends on every answer, typed bodies, pagination, repository lookup with
//! visibility, and permission checks.

use pome_twin_sdk::page::PageInfo;
use pome_twin_sdk::{Call, Response, Value, json};
use serde::de::DeserializeOwned;

use crate::World;
use crate::model::{Repo, Role};

pub const DOCS: &str = "https://docs.github.com/rest";

/// An error answer in GitHub's shape: `{message, documentation_url}` plus `errors` for 422.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: u16,
    pub message: String,
    pub errors: Vec<Value>,
    pub extra: Vec<(String, Value)>,
}

pub type ApiResult = Result<Response, ApiError>;

impl ApiError {
    pub fn new(status: u16, message: impl Into<String>) -> ApiError {
        ApiError { status, message: message.into(), errors: Vec::new(), extra: Vec::new() }
    }
    pub fn not_found() -> ApiError {
        ApiError::new(404, "Not Found")
    }
    /// 422 `Validation Failed` with one `{resource, field, code}` error.
    pub fn invalid(resource: &str, field: &str, code: &str) -> ApiError {
        ApiError::new(422, "Validation Failed")
            .with_error(json!({"resource": resource, "field": field, "code": code}))
    }
    /// 422 with a custom error message inside `errors` (GitHub's `code: custom`).
    pub fn custom(resource: &str, field: &str, message: &str) -> ApiError {
        ApiError::new(422, "Validation Failed").with_error(
            json!({"resource": resource, "field": field, "code": "custom", "message": message}),
        )
    }
    pub fn forbidden(message: impl Into<String>) -> ApiError {
        ApiError::new(403, message)
    }
    pub fn with_error(mut self, e: Value) -> ApiError {
        self.errors.push(e);
        self
    }
    pub fn body(&self) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("message".into(), Value::String(self.message.clone()));
        if !self.errors.is_empty() {
            m.insert("errors".into(), Value::Array(self.errors.clone()));
        }
        for (k, v) in &self.extra {
            m.insert(k.clone(), v.clone());
        }
        m.insert("documentation_url".into(), Value::String(DOCS.into()));
        Value::Object(m)
    }
}

/// The headers GitHub puts on every REST answer. The request id is derived from the
/// request and the virtual clock, so replays reproduce it.
pub fn github_headers(call: &Call, mut r: Response) -> Response {
    let now = pome_twin_sdk::time::now_unix();
    let mut h = sha1_smol::Sha1::new();
    h.update(call.req.method.as_str().as_bytes());
    h.update(call.req.path.as_bytes());
    h.update(call.req.query.as_bytes());
    h.update(&call.req.body);
    h.update(now.to_string().as_bytes());
    // GitHub's shape: upper-case hex in groups of 4:5:7:7:8.
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut rid = String::with_capacity(35);
    for (i, b) in h.digest().bytes().iter().flat_map(|b| [b >> 4, b & 15]).take(31).enumerate() {
        if matches!(i, 4 | 9 | 16 | 23) {
            rid.push(':');
        }
        rid.push(HEX[b as usize] as char);
    }
    let reset = ((now / 3600 + 1) * 3600).to_string();
    r.headers.reserve(10);
    for (k, v) in [
        ("x-github-request-id", rid.as_str()),
        ("x-github-media-type", "github.v3; format=json"),
        ("x-github-api-version-selected", "2022-11-28"),
        ("x-ratelimit-limit", "5000"),
        ("x-ratelimit-remaining", "4999"),
        ("x-ratelimit-reset", reset.as_str()),
        ("x-ratelimit-used", "1"),
        ("x-ratelimit-resource", "core"),
        ("x-oauth-scopes", "repo, read:org, workflow"),
        ("x-accepted-oauth-scopes", "repo"),
    ] {
        r.headers.push((k.into(), v.into()));
    }
    r
}

/// Turn a handler's result into the wire answer.
pub fn finish(call: &Call, result: ApiResult) -> Response {
    let r = match result {
        Ok(r) => r,
        Err(e) => Response::json(e.status, &e.body()),
    };
    github_headers(call, r)
}

pub fn json(status: u16, v: &Value) -> ApiResult {
    Ok(Response::json(status, v))
}

pub fn no_content() -> ApiResult {
    Ok(Response::empty(204))
}

/// The body as a typed input. A body that is not JSON is GitHub's 400; a field of the
/// wrong type is its 422 `Invalid request`.
pub fn input<T: DeserializeOwned>(call: &Call) -> Result<T, ApiError> {
    let body = &call.req.body;
    // Straight from the bytes (no intermediate tree): writes are hot paths.
    match body.iter().find(|b| !b.is_ascii_whitespace()) {
        None => serde_json::from_str("{}"),
        Some(b'{') => serde_json::from_slice(body),
        Some(_) => return Err(ApiError::new(400, "Problems parsing JSON")),
    }
    .map_err(|e| match e.classify() {
        // A field of the wrong type in a document that is JSON all through.
        serde_json::error::Category::Data if serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok() => {
            // The message without serde's position suffix, as from a parsed document.
            let text = e.to_string();
            let text = text.split(" at line ").next().unwrap_or(&text);
            ApiError::new(422, format!("Invalid request.\n\n{text}"))
        }
        _ => ApiError::new(400, "Problems parsing JSON"),
    })
}

/// A number from a path parameter; anything else is 404 like GitHub.
pub fn num(call: &Call, name: &str) -> Result<u64, ApiError> {
    call.param(name).parse().map_err(|_| ApiError::not_found())
}

/// One page of an already-filtered list, with GitHub's `Link` header. `items` is an
/// iterator so callers never materialise more than the page.
pub fn page_of<I, F>(call: &Call, total: usize, items: I, render: F) -> ApiResult
where
    I: Iterator,
    F: Fn(I::Item) -> Value,
{
    let (page, per_page) = PageInfo::from_query(&call.req, 30, 100);
    let info = PageInfo::new(page, per_page, total);
    let range = info.range(total);
    let body: Vec<Value> = items.skip(range.start).take(range.len()).map(render).collect();
    let mut r = Response::json(200, &Value::Array(body));
    if let Some(link) = info.link_header(&call.req) {
        r = r.with_header("link", link);
    }
    Ok(r)
}

/// Like [`page_of`], for typed items serialised straight to bytes (no `Value` tree).
pub fn page_typed<I, T, F>(call: &Call, total: usize, items: I, render: F) -> ApiResult
where
    I: Iterator,
    T: serde::Serialize,
    F: Fn(I::Item) -> T,
{
    let (page, per_page) = PageInfo::from_query(&call.req, 30, 100);
    let info = PageInfo::new(page, per_page, total);
    let range = info.range(total);
    let body: Vec<T> = items.skip(range.start).take(range.len()).map(render).collect();
    let mut r = Response::json(200, &body);
    if let Some(link) = info.link_header(&call.req) {
        r = r.with_header("link", link);
    }
    Ok(r)
}

/// Page a fully built list.
pub fn page_vec(call: &Call, all: Vec<Value>) -> ApiResult {
    let n = all.len();
    page_of(call, n, all.into_iter(), |v| v)
}

pub fn repo_key(owner: &str, name: &str) -> String {
    format!("{}/{}", owner.to_ascii_lowercase(), name.to_ascii_lowercase())
}

impl World {
    /// The role `login` has on `repo`.
    pub fn role_of(&self, repo: &Repo, login: &str) -> Role {
        let l = login.to_ascii_lowercase();
        if repo.owner.eq_ignore_ascii_case(login) {
            return Role::Admin;
        }
        let base = if let Some(r) = repo.collaborators.get(&l) {
            *r
        } else if l == self.viewer.to_ascii_lowercase() {
            repo.agent_role
        } else if repo.private {
            Role::None
        } else {
            Role::Read
        };
        // A team's members have the team's role on its repositories (the strongest wins).
        if self.teams.is_empty() {
            return base;
        }
        let rk = repo_key(&repo.owner, &repo.name);
        self.teams
            .values()
            .filter(|t| t.members.iter().any(|m| m.eq_ignore_ascii_case(login)))
            .filter_map(|t| t.repos.get(&rk).copied())
            .fold(base, Role::max)
    }

    pub fn viewer_role(&self, repo: &Repo) -> Role {
        self.role_of(repo, &self.viewer)
    }

    /// The repository named by the route's `{owner}/{repo}`, if the viewer can see it.
    pub fn repo_key_for(&self, call: &Call) -> Result<String, ApiError> {
        let key = repo_key(call.param("owner"), call.param("repo"));
        match self.repos.get(&key) {
            Some(r) if self.viewer_role(r) >= Role::Read => Ok(key),
            _ => Err(ApiError::not_found()),
        }
    }

    pub fn repo(&self, call: &Call) -> Result<&Repo, ApiError> {
        let k = self.repo_key_for(call)?;
        Ok(&self.repos[&k])
    }

    /// The repository for a write that needs `need`; 403 with GitHub's message otherwise.
    pub fn repo_mut(&mut self, call: &Call, need: Role) -> Result<&mut Repo, ApiError> {
        let k = self.repo_key_for(call)?;
        let role = self.viewer_role(&self.repos[&k]);
        if role < need {
            return Err(ApiError::forbidden(denied_message(need)));
        }
        let repo = self.repos.get_mut(&k).expect("checked above");
        if repo.archived && need >= Role::Triage {
            return Err(ApiError::forbidden("Repository was archived so is read-only."));
        }
        Ok(repo)
    }

    pub fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    pub fn user_exists(&self, login: &str) -> bool {
        self.users.contains_key(&login.to_ascii_lowercase())
    }
}

pub fn denied_message(need: Role) -> &'static str {
    match need {
        Role::Admin => "Must have admin rights to Repository.",
        _ => "Resource not accessible by integration",
    }
}

/// `?state=` style enum query parameters: invalid values are GitHub's 422.
pub fn query_enum(call: &Call, key: &str, allowed: &[&str], default: &str) -> Result<String, ApiError> {
    match call.req.query(key) {
        None => Ok(default.to_string()),
        Some(v) if allowed.contains(&v.as_str()) => Ok(v),
        Some(_) => Err(ApiError::invalid("Issue", key, "invalid")),
    }
}

pub fn bool_query(call: &Call, key: &str) -> Option<bool> {
    call.req.query(key).map(|v| v == "true" || v == "1")
}

/// A diff or patch answer (`Accept: application/vnd.github.diff`).
pub fn text_response(kind: &str, body: String) -> Response {
    Response {
        status: 200,
        headers: vec![("content-type".into(), format!("application/vnd.github.{kind}; charset=utf-8"))],
        body: body.into_bytes(),
    }
}
