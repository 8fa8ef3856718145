//! The resolvers: GitHub's GraphQL objects over the REST twin's world. An object is an
//! [`Ent`] (what it stands for, by key) and the request's [`Ctx`]; each field borrows the world
//! for as long as it reads it, so a mutation resolved earlier in the same request is seen by
//! the fields after it. Global ids are the REST answers' `node_id`s ([`node_id`]).
//!
//! A field of GitHub's schema the world does not model answers null (an empty connection for
//! a connection) and marks the call `unsupported` on the tape; a non-null one is a field error
//! naming it, never an invented value.

use std::cell::RefCell;

use base64::Engine as _;
use pome_graphql::apollo_compiler::resolvers::FieldError;
use pome_graphql::exec::{Info, Out, Resolve};
use pome_twin_sdk::{Change, Value, json, time};

use crate::World;
use crate::model::{Issue, Repo, Role};
use crate::render::node_id;

/// What resolving one request did besides answering: the error types of its field errors
/// (by message), the REST actions its mutations ran and their changes.
#[derive(Default)]
pub struct Effects {
    pub types: Vec<(String, &'static str)>,
    pub actions: Vec<String>,
    pub changes: Vec<Change>,
    pub unsupported: bool,
}

/// One request's context: the world, the client's base URL, the query's cost, the request's
/// headers (for the REST calls mutations make) and the effects.
pub struct Ctx<'w> {
    pub w: RefCell<&'w mut World>,
    pub base: String,
    pub cost: u64,
    pub headers: Vec<(String, String)>,
    pub fx: RefCell<Effects>,
}

impl<'w> Ctx<'w> {
    pub fn new(w: &'w mut World, base: String, cost: u64, headers: Vec<(String, String)>) -> Ctx<'w> {
        Ctx { w: RefCell::new(w), base, cost, headers, fx: RefCell::default() }
    }

    /// A field error of GitHub's `type`.
    pub fn fail(&self, ty: &'static str, message: String) -> FieldError {
        self.fx.borrow_mut().types.push((message.clone(), ty));
        FieldError { message }
    }
}

/// What a GraphQL object stands for. Repositories are keyed as the world keys them
/// (lower-cased `owner/name`), users by lower-cased login.
#[derive(Clone, Debug)]
pub enum Ent {
    Query,
    Mutation,
    User(String),
    Org(String),
    Repo(String),
    Issue(String, u64),
    Pull(String, u64),
    Label(String, u64),
    Milestone(String, u64),
    Comment(String, u64),
    Ref(String, String),
    Release(String, u64),
    /// A commit of a repository, by sha.
    Commit(String, String),
    /// A commit as one of a pull request's (`PullRequest.commits`).
    PullCommit(String, u64, String),
    /// The statuses and check runs of a commit, together.
    Rollup(String, String),
    /// A commit status, by id.
    StatusContext(String, u64),
    CheckRun(String, u64),
    /// The suite of a check run (the twin keeps no suites apart from their runs).
    CheckSuite(String, u64),
    /// A review of a pull request: repository, pull request number, review id.
    Review(String, u64, u64),
    /// A reviewer asked of a pull request: repository, number, login.
    ReviewRequest(String, u64, String),
    RateLimit,
    /// A page of a connection: its type, the page's items with their offsets in the whole
    /// list, the whole list's length, and whether items lie beyond the page either side.
    Conn { ty: &'static str, items: Vec<(usize, Ent)>, total: usize, next: bool, prev: bool },
    Edge { ty: String, at: usize, node: Box<Ent> },
    PageInfo { start: Option<usize>, end: Option<usize>, next: bool, prev: bool },
    /// A mutation's payload: its type and its object fields.
    Payload { ty: &'static str, fields: Vec<(&'static str, Ent)>, client_id: Value },
}

pub struct Obj<'c, 'w> {
    pub c: &'c Ctx<'w>,
    pub e: Ent,
}

type R<'a> = Result<Out<'a>, FieldError>;

fn leaf<'a>(v: Value) -> R<'a> {
    Ok(Out::Leaf(v))
}

/// A connection's cursor: the item's offset in the whole list, opaque as GitHub's are.
pub fn cursor(at: usize) -> String {
    base64::engine::general_purpose::STANDARD.encode(format!("cursor:v2:{at}"))
}

fn decode_cursor(s: &str) -> Option<usize> {
    let raw = base64::engine::general_purpose::STANDARD.decode(s).ok()?;
    String::from_utf8(raw).ok()?.strip_prefix("cursor:v2:")?.parse().ok()
}

/// A global id's kind and database id: `node_id` encodes `0{len}:{Kind}{id}` in base64.
pub fn decode_node_id(id: &str) -> Option<(String, u64)> {
    let raw = String::from_utf8(base64::engine::general_purpose::STANDARD.decode(id).ok()?).ok()?;
    let rest = raw.strip_prefix('0')?;
    let (len, rest) = rest.split_once(':')?;
    let len: usize = len.parse().ok()?;
    let kind = rest.get(..len)?;
    let n = rest.get(len..)?.parse().ok()?;
    Some((kind.to_string(), n))
}

fn upper(s: &str) -> String {
    s.to_ascii_uppercase()
}

impl<'c, 'w> Obj<'c, 'w> {
    fn obj<'a>(&'a self, e: Ent) -> Out<'a> {
        Out::object(Obj { c: self.c, e })
    }

    fn w(&self) -> std::cell::Ref<'_, &'w mut World> {
        self.c.w.borrow()
    }

    /// A field of GitHub's schema the world does not model (see the module's comment).
    fn unmodelled<'a>(&'a self, info: &Info<'_>) -> R<'a> {
        self.c.fx.borrow_mut().unsupported = true;
        if info.meta.connection {
            return Ok(self.obj(Ent::Conn { ty: info.meta.named, items: Vec::new(), total: 0, next: false, prev: false }));
        }
        if info.def.ty.is_non_null() {
            let ty = self.type_name();
            return Err(self.c.fail("NOT_IMPLEMENTED", format!("pome's GitHub twin does not model `{ty}.{}`", info.def.name)));
        }
        Ok(Out::Null)
    }

    fn arg_str<'i>(&self, info: &'i Info<'_>, name: &str) -> Option<&'i str> {
        info.args.get(name).and_then(Value::as_str)
    }

    /// A page of `all` as the connection's arguments ask (`after`/`before` cursors, then
    /// `first` or `last`; the static check has bounded them).
    fn page<'a>(&'a self, info: &Info<'_>, all: Vec<Ent>) -> R<'a> {
        let total = all.len();
        let after = self.arg_str(info, "after").map(|c| decode_cursor(c).map(|n| n + 1).ok_or(c));
        let before = self.arg_str(info, "before").map(|c| decode_cursor(c).ok_or(c));
        let bad = |c: &str| Err(self.c.fail("INVALID_CURSOR_ARGUMENTS", format!("`{c}` does not appear to be a valid cursor.")));
        let lo = match after {
            Some(Err(c)) => return bad(c),
            Some(Ok(n)) => n.min(total),
            None => 0,
        };
        let hi = match before {
            Some(Err(c)) => return bad(c),
            Some(Ok(n)) => n.min(total).max(lo),
            None => total,
        };
        let first = info.args.get("first").and_then(Value::as_u64).map(|n| n as usize);
        let last = info.args.get("last").and_then(Value::as_u64).map(|n| n as usize);
        let (start, end) = match (first, last) {
            (Some(n), _) => (lo, lo.saturating_add(n).min(hi)),
            (None, Some(n)) => (hi.saturating_sub(n).max(lo), hi),
            (None, None) => (lo, hi),
        };
        let items = all.into_iter().enumerate().skip(start).take(end - start).collect();
        Ok(self.obj(Ent::Conn { ty: info.meta.named, items, total, next: end < total, prev: start > 0 }))
    }

    fn repo_visible(&self, key: &str) -> bool {
        let w = self.w();
        w.repos.get(key).is_some_and(|r| w.viewer_role(r) >= Role::Read)
    }

    /// The user or organization entity for a login, if it exists.
    fn owner_ent(&self, login: &str) -> Option<Ent> {
        let w = self.w();
        let u = w.users.get(&login.to_ascii_lowercase())?;
        let l = u.login.to_ascii_lowercase();
        Some(if u.kind == "Organization" { Ent::Org(l) } else { Ent::User(l) })
    }

    /// The entity a global id names, if the viewer can see it.
    pub fn by_node_id(&self, id: &str) -> Option<Ent> {
        let (kind, n) = decode_node_id(id)?;
        let w = self.w();
        let visible = |r: &Repo| w.viewer_role(r) >= Role::Read;
        let key = |r: &Repo| r.full_name().to_ascii_lowercase();
        match kind.as_str() {
            "User" | "Organization" | "Bot" => {
                let u = w.users.values().find(|u| u.id == n)?;
                let l = u.login.to_ascii_lowercase();
                Some(if u.kind == "Organization" { Ent::Org(l) } else { Ent::User(l) })
            }
            "Repository" => w.repos.values().find(|r| r.id == n && visible(r)).map(|r| Ent::Repo(key(r))),
            "Issue" => w.repos.values().filter(|r| visible(r)).find_map(|r| r.issues.values().find(|i| i.id == n).map(|i| if i.pull.is_some() { Ent::Pull(key(r), i.number) } else { Ent::Issue(key(r), i.number) })),
            "PullRequest" => w.repos.values().filter(|r| visible(r)).find_map(|r| r.issues.values().find(|i| i.pull.as_ref().is_some_and(|p| p.id == n)).map(|i| Ent::Pull(key(r), i.number))),
            "Label" => w.repos.values().filter(|r| visible(r)).find_map(|r| r.labels.iter().find(|l| l.id == n).map(|l| Ent::Label(key(r), l.id))),
            "Milestone" => w.repos.values().filter(|r| visible(r)).find_map(|r| r.milestones.values().find(|m| m.id == n).map(|m| Ent::Milestone(key(r), m.number))),
            "IssueComment" => w.repos.values().filter(|r| visible(r)).find_map(|r| r.comments.get(&n).map(|c| Ent::Comment(key(r), c.id))),
            _ => None,
        }
    }

    fn query<'a>(&'a self, info: &Info<'_>) -> R<'a> {
        let name = info.field_name();
        match name {
            "viewer" => {
                let v = self.w().viewer.to_ascii_lowercase();
                Ok(self.obj(Ent::User(v)))
            }
            "user" | "organization" | "repositoryOwner" => {
                let login = self.arg_str(info, "login").unwrap_or("");
                match self.owner_ent(login) {
                    Some(Ent::Org(l)) if name != "user" => Ok(self.obj(Ent::Org(l))),
                    Some(Ent::User(l)) if name != "organization" => Ok(self.obj(Ent::User(l))),
                    _ if name == "repositoryOwner" => Ok(Out::Null),
                    _ if name == "user" => Err(self.c.fail("NOT_FOUND", format!("Could not resolve to a User with the login of '{login}'."))),
                    _ => Err(self.c.fail("NOT_FOUND", format!("Could not resolve to an Organization with the login of '{login}'."))),
                }
            }
            "repository" => {
                let (o, n) = (self.arg_str(info, "owner").unwrap_or(""), self.arg_str(info, "name").unwrap_or(""));
                let key = crate::api::repo_key(o, n);
                if self.repo_visible(&key) {
                    Ok(self.obj(Ent::Repo(key)))
                } else {
                    Err(self.c.fail("NOT_FOUND", format!("Could not resolve to a Repository with the name '{o}/{n}'.")))
                }
            }
            "node" => {
                let id = self.arg_str(info, "id").unwrap_or("");
                match self.by_node_id(id) {
                    Some(e) => Ok(self.obj(e)),
                    None => Err(self.c.fail("NOT_FOUND", format!("Could not resolve to a node with the global id of '{id}'"))),
                }
            }
            "nodes" => {
                let ids: Vec<String> = info.args.get("ids").and_then(Value::as_array).map(|a| a.iter().filter_map(|x| x.as_str().map(String::from)).collect()).unwrap_or_default();
                let found: Vec<Option<Ent>> = ids.iter().map(|id| self.by_node_id(id)).collect();
                Ok(Out::list(found.into_iter().map(|e| e.map(|e| self.obj(e)).unwrap_or(Out::Null))))
            }
            "rateLimit" => Ok(self.obj(Ent::RateLimit)),
            "search" => self.search(info),
            _ => self.unmodelled(info),
        }
    }

    /// `search(query:, type: ISSUE)`: the REST search's query language and matching
    /// (`GET /search/issues`), paged as a connection.
    fn search<'a>(&'a self, info: &Info<'_>) -> R<'a> {
        let ty = self.arg_str(info, "type").unwrap_or("");
        let q = self.arg_str(info, "query").unwrap_or("").to_string();
        if ty != "ISSUE" {
            return self.unmodelled(info);
        }
        let mut hits = Vec::new();
        let mut page = 1;
        loop {
            let path = format!("/search/issues?q={}&per_page=100&page={page}", crate::graphql::mutate::enc(&q));
            let mut call = pome_twin_sdk::Call::new(pome_twin_sdk::Request::new(pome_twin_sdk::Method::Get, &path));
            call.req.base_url = self.c.base.clone();
            let r = {
                let mut w = self.c.w.borrow_mut();
                crate::handlers::search::issues(&mut w, &mut call)
            };
            let body: Value = match r {
                Ok(resp) => serde_json::from_slice(&resp.body).unwrap_or(Value::Null),
                Err(e) => return Err(self.c.fail("UNPROCESSABLE", e.body()["message"].as_str().unwrap_or("Invalid search query").to_string())),
            };
            let items = body["items"].as_array().cloned().unwrap_or_default();
            let n = items.len();
            for it in items {
                let repo_url = it["repository_url"].as_str().unwrap_or("");
                let full = repo_url.rsplit("/repos/").next().unwrap_or("").to_ascii_lowercase();
                let number = it["number"].as_u64().unwrap_or(0);
                hits.push(if it.get("pull_request").is_some() { Ent::Pull(full, number) } else { Ent::Issue(full, number) });
            }
            if n < 100 || hits.len() >= 1000 {
                break;
            }
            page += 1;
        }
        self.page(info, hits)
    }

    fn user<'a>(&'a self, login: &str, info: &Info<'_>) -> R<'a> {
        let name = info.field_name();
        let (u, viewer) = {
            let w = self.w();
            match w.users.get(login) {
                Some(u) => (u.clone(), w.viewer.eq_ignore_ascii_case(login)),
                None => return Ok(Out::Null),
            }
        };
        let b = &self.c.base;
        let org = u.kind == "Organization";
        match name {
            "id" => leaf(json!(node_id(if org { "Organization" } else { "User" }, u.id))),
            "databaseId" => leaf(json!(u.id)),
            "login" => leaf(json!(u.login)),
            "name" => leaf(json!(u.name)),
            "email" => leaf(json!(if org { json!(u.email) } else { json!(u.email.clone().unwrap_or_default()) })),
            "bio" => leaf(json!(u.bio)),
            "company" => leaf(json!(u.company)),
            "createdAt" => leaf(json!(u.created_at)),
            "updatedAt" => leaf(json!(u.created_at)),
            "url" => leaf(json!(format!("{b}/{}", u.login))),
            "resourcePath" => leaf(json!(format!("/{}", u.login))),
            "avatarUrl" => leaf(json!(format!("{b}/_avatars/{}", u.id))),
            "isViewer" | "viewerIsAMember" => leaf(json!(viewer)),
            "repository" => {
                let key = crate::api::repo_key(&u.login, self.arg_str(info, "name").unwrap_or(""));
                Ok(if self.repo_visible(&key) { self.obj(Ent::Repo(key)) } else { Out::Null })
            }
            "repositories" => {
                let all: Vec<Ent> = {
                    let w = self.w();
                    w.repos.values().filter(|r| r.owner.eq_ignore_ascii_case(&u.login) && w.viewer_role(r) >= Role::Read).map(|r| Ent::Repo(r.full_name().to_ascii_lowercase())).collect()
                };
                self.page(info, all)
            }
            _ => self.unmodelled(info),
        }
    }

    fn repo<'a>(&'a self, key: &str, info: &Info<'_>) -> R<'a> {
        let name = info.field_name();
        let w = self.w();
        let Some(r) = w.repos.get(key) else { return Ok(Out::Null) };
        let b = &self.c.base;
        let fname = r.full_name();
        let k = key.to_string();
        let v = match name {
            "id" => json!(node_id("Repository", r.id)),
            "databaseId" => json!(r.id),
            "name" => json!(r.name),
            "nameWithOwner" => json!(fname),
            "description" => json!(r.description),
            "homepageUrl" => json!(r.homepage),
            "url" => json!(format!("{b}/{fname}")),
            "resourcePath" => json!(format!("/{fname}")),
            "sshUrl" => json!(format!("git@{}:{fname}.git", b.split("://").nth(1).unwrap_or(b).split('/').next().unwrap_or(""))),
            "isPrivate" => json!(r.private),
            "visibility" => json!(if r.private { "PRIVATE" } else { "PUBLIC" }),
            "isArchived" => json!(r.archived),
            "isFork" => json!(r.parent.is_some()),
            "isEmpty" => json!(r.git.branches().next().is_none()),
            "hasIssuesEnabled" => json!(r.has_issues),
            // As REST answers `has_wiki` and `has_projects`: the twin keeps neither apart.
            "hasWikiEnabled" | "hasProjectsEnabled" => json!(true),
            "hasDiscussionsEnabled" => json!(false),
            "mergeCommitAllowed" => json!(r.allow_merge_commit),
            "squashMergeAllowed" => json!(r.allow_squash_merge),
            "rebaseMergeAllowed" => json!(r.allow_rebase_merge),
            "deleteBranchOnMerge" => json!(r.delete_branch_on_merge),
            "createdAt" => json!(r.created_at),
            "updatedAt" => json!(r.updated_at),
            "pushedAt" => json!(r.pushed_at),
            "viewerPermission" => json!(match w.viewer_role(r) {
                Role::Admin => "ADMIN",
                Role::Maintain => "MAINTAIN",
                Role::Write => "WRITE",
                Role::Triage => "TRIAGE",
                Role::Read => "READ",
                _ => return Ok(Out::Null),
            }),
            _ => {
                let owner = r.owner.clone();
                drop(w);
                return self.repo_object(&k, &owner, info);
            }
        };
        leaf(v)
    }

    fn repo_object<'a>(&'a self, key: &str, owner: &str, info: &Info<'_>) -> R<'a> {
        let k = key.to_string();
        let num = || info.args.get("number").and_then(Value::as_u64).unwrap_or(0);
        match info.field_name() {
            "owner" => Ok(self.owner_ent(owner).map(|e| self.obj(e)).unwrap_or(Out::Null)),
            "parent" => {
                let parent = self.w().repos[key].parent.as_ref().map(|p| p.to_ascii_lowercase());
                Ok(parent.filter(|p| self.repo_visible(p)).map(|p| self.obj(Ent::Repo(p))).unwrap_or(Out::Null))
            }
            "releases" => {
                let w = self.w();
                let mut list: Vec<&crate::model::Release> = w.repos[key].releases.values().filter(|rel| !rel.draft || w.viewer_role(&w.repos[key]) >= Role::Write).collect();
                // GitHub's default and `CREATED_AT` order by creation; `NAME` by tag name.
                match info.args.get("orderBy").and_then(|o| o["field"].as_str()) {
                    Some("NAME") => list.sort_by(|a, b| (&a.tag_name, a.id).cmp(&(&b.tag_name, b.id))),
                    _ => list.sort_by(|a, b| (&a.created_at, a.id).cmp(&(&b.created_at, b.id))),
                }
                if info.args.get("orderBy").and_then(|o| o["direction"].as_str()) != Some("ASC") {
                    list.reverse();
                }
                let all = list.into_iter().map(|rel| Ent::Release(k.clone(), rel.id)).collect();
                drop(w);
                self.page(info, all)
            }
            "latestRelease" => Ok(latest_release(&self.w().repos[key]).map(|id| self.obj(Ent::Release(k, id))).unwrap_or(Out::Null)),
            "release" => {
                let tag = self.arg_str(info, "tagName").unwrap_or("");
                let id = self.w().repos[key].releases.values().find(|rel| rel.tag_name == tag).map(|rel| rel.id);
                Ok(id.map(|id| self.obj(Ent::Release(k, id))).unwrap_or(Out::Null))
            }
            "defaultBranchRef" => {
                let branch = self.w().repos[key].default_branch.clone();
                Ok(self.obj(Ent::Ref(k, branch)))
            }
            "issues" | "pullRequests" => {
                let pulls = info.field_name() == "pullRequests";
                let all = self.issue_list(key, pulls, info);
                self.page(info, all)
            }
            "issue" | "pullRequest" | "issueOrPullRequest" => {
                let n = num();
                let found = self.w().repos[key].issues.get(&n).map(|i| i.pull.is_some());
                match (info.field_name(), found) {
                    ("issue", Some(false)) | ("issueOrPullRequest", Some(false)) => Ok(self.obj(Ent::Issue(k, n))),
                    ("pullRequest", Some(true)) | ("issueOrPullRequest", Some(true)) => Ok(self.obj(Ent::Pull(k, n))),
                    ("pullRequest", _) => Err(self.c.fail("NOT_FOUND", format!("Could not resolve to a PullRequest with the number of {n}."))),
                    ("issue", _) => Err(self.c.fail("NOT_FOUND", format!("Could not resolve to an Issue with the number of {n}."))),
                    _ => Err(self.c.fail("NOT_FOUND", format!("Could not resolve to an issue or pull request with the number of {n}."))),
                }
            }
            "labels" => {
                let q = self.arg_str(info, "query").map(str::to_ascii_lowercase);
                let all = self.w().repos[key].labels.iter().filter(|l| q.as_ref().is_none_or(|q| l.name.to_ascii_lowercase().contains(q.as_str()))).map(|l| Ent::Label(k.clone(), l.id)).collect();
                self.page(info, all)
            }
            "label" => {
                let name = self.arg_str(info, "name").unwrap_or("");
                let id = self.w().repos[key].label(name).map(|l| l.id);
                Ok(id.map(|id| self.obj(Ent::Label(k, id))).unwrap_or(Out::Null))
            }
            "milestones" => {
                let states: Option<Vec<String>> = list_arg(info, "states").map(|a| a.iter().map(|s| s.to_ascii_lowercase()).collect());
                let all = self.w().repos[key].milestones.values().filter(|m| states.as_ref().is_none_or(|s| s.contains(&m.state))).map(|m| Ent::Milestone(k.clone(), m.number)).collect();
                self.page(info, all)
            }
            "milestone" => {
                let n = num();
                let ok = self.w().repos[key].milestones.contains_key(&n);
                Ok(if ok { self.obj(Ent::Milestone(k, n)) } else { Out::Null })
            }
            _ => self.unmodelled(info),
        }
    }

    /// A repository's issues or pull requests as `states`, `labels` and `orderBy` ask
    /// (oldest first by default, as GitHub lists them).
    fn issue_list(&self, key: &str, pulls: bool, info: &Info<'_>) -> Vec<Ent> {
        let w = self.w();
        let r = &w.repos[key];
        let states: Option<Vec<String>> = list_arg(info, "states");
        let labels: Option<Vec<String>> = list_arg(info, "labels").map(|a| a.iter().map(|s| s.to_ascii_lowercase()).collect());
        let head = self.arg_str(info, "headRefName");
        let base = self.arg_str(info, "baseRefName");
        let mut list: Vec<&Issue> = r
            .issues
            .values()
            .filter(|i| i.pull.is_some() == pulls)
            .filter(|i| states.as_ref().is_none_or(|s| s.contains(&issue_state(i))))
            .filter(|i| labels.as_ref().is_none_or(|ls| i.labels.iter().any(|l| ls.contains(&l.to_ascii_lowercase()))))
            .filter(|i| head.is_none_or(|h| i.pull.as_ref().is_some_and(|p| p.head_ref == h)))
            .filter(|i| base.is_none_or(|h| i.pull.as_ref().is_some_and(|p| p.base_ref == h)))
            .collect();
        if let Some(order) = info.args.get("orderBy").filter(|o| o.is_object()) {
            match order["field"].as_str() {
                Some("UPDATED_AT") => list.sort_by(|a, b| (&a.updated_at, a.number).cmp(&(&b.updated_at, b.number))),
                Some("COMMENTS") => list.sort_by_key(|i| (i.comments, i.number)),
                _ => list.sort_by(|a, b| (&a.created_at, a.number).cmp(&(&b.created_at, b.number))),
            }
            if order["direction"] == "DESC" {
                list.reverse();
            }
        }
        list.into_iter().map(|i| if pulls { Ent::Pull(key.to_string(), i.number) } else { Ent::Issue(key.to_string(), i.number) }).collect()
    }

    fn issue<'a>(&'a self, key: &str, number: u64, info: &Info<'_>) -> R<'a> {
        let name = info.field_name();
        let w = self.w();
        let Some(r) = w.repos.get(key) else { return Ok(Out::Null) };
        let Some(i) = r.issues.get(&number) else { return Ok(Out::Null) };
        let b = &self.c.base;
        let fname = r.full_name();
        let p = i.pull.as_ref();
        let k = key.to_string();
        let v = match name {
            "id" => json!(match p {
                Some(p) => node_id("PullRequest", p.id),
                None => node_id("Issue", i.id),
            }),
            "databaseId" => json!(p.map(|p| p.id).unwrap_or(i.id)),
            "number" => json!(i.number),
            "title" => json!(i.title),
            "body" => json!(i.body.clone().unwrap_or_default()),
            "state" => json!(issue_state(i)),
            "stateReason" => match &i.state_reason {
                Some(s) => json!(upper(s)),
                None => Value::Null,
            },
            "closed" => json!(i.state == "closed"),
            "closedAt" => json!(i.closed_at),
            "createdAt" => json!(i.created_at),
            "updatedAt" => json!(i.updated_at),
            "locked" => json!(i.locked),
            "url" => json!(format!("{b}/{fname}/{}/{}", if p.is_some() { "pull" } else { "issues" }, i.number)),
            "resourcePath" => json!(format!("/{fname}/{}/{}", if p.is_some() { "pull" } else { "issues" }, i.number)),
            "isDraft" if p.is_some() => json!(p.unwrap().draft),
            "merged" if p.is_some() => json!(p.unwrap().merged),
            "mergedAt" if p.is_some() => json!(p.unwrap().merged_at),
            "headRefName" if p.is_some() => json!(p.unwrap().head_ref),
            "baseRefName" if p.is_some() => json!(p.unwrap().base_ref),
            "headRefOid" if p.is_some() => json!(p.unwrap().head_sha),
            "maintainerCanModify" if p.is_some() => json!(p.unwrap().maintainer_can_modify),
            // Pull requests come from branches of the same repository: the twin has no forks'
            // branches to open them from, and no merge queue.
            "isCrossRepository" | "isInMergeQueue" | "isMergeQueueEnabled" if p.is_some() => json!(false),
            "baseRefOid" if p.is_some() => json!(crate::handlers::pulls::base_sha(r, p.unwrap())),
            "mergeable" | "mergeStateStatus" | "additions" | "deletions" | "changedFiles" if p.is_some() => {
                // What REST's pull request answers, in GraphQL's words.
                let rest = w.pull_json(b, r, i, true);
                match name {
                    "mergeable" => json!(match rest["mergeable"].as_bool() {
                        Some(true) => "MERGEABLE",
                        Some(false) => "CONFLICTING",
                        None => "UNKNOWN",
                    }),
                    "mergeStateStatus" => json!(upper(rest["mergeable_state"].as_str().unwrap_or("unknown"))),
                    "changedFiles" => rest["changed_files"].clone(),
                    other => rest[other].clone(),
                }
            }
            "authorAssociation" => json!(w.author_association(r, &i.user)),
            _ => {
                let (user, labels, assignees, milestone, merged_by) = (i.user.clone(), i.labels.clone(), i.assignees.clone(), i.milestone, p.and_then(|p| p.merged_by.clone()));
                let label_ids: Vec<u64> = labels.iter().filter_map(|l| r.label(l).map(|x| x.id)).collect();
                let comments: Vec<u64> = r.comments.values().filter(|c| c.issue == number).map(|c| c.id).collect();
                let open = i.state == "open";
                let commits: Vec<String> = p.map(|p| r.git.commits_between(&crate::handlers::pulls::base_sha(r, p), &crate::handlers::pulls::head_sha(r, p, open))).unwrap_or_default();
                let reviews: Vec<u64> = p.map(|p| p.reviews.iter().filter(|x| x.state != "PENDING" || x.user.eq_ignore_ascii_case(&w.viewer)).map(|x| x.id).collect()).unwrap_or_default();
                let requested: Vec<String> = p.map(|p| p.requested_reviewers.clone()).unwrap_or_default();
                let is_pull = p.is_some();
                drop(w);
                return match name {
                    "headRepositoryOwner" | "headRepository" | "baseRepository" if is_pull => {
                        let owner = k.split('/').next().unwrap_or("").to_string();
                        Ok(match name {
                            "headRepositoryOwner" => self.owner_ent(&owner).map(|e| self.obj(e)).unwrap_or(Out::Null),
                            _ => self.obj(Ent::Repo(k)),
                        })
                    }
                    "commits" if is_pull => self.page(info, commits.into_iter().map(|sha| Ent::PullCommit(k.clone(), number, sha)).collect()),
                    "reviews" if is_pull => {
                        let states: Option<Vec<String>> = list_arg(info, "states");
                        let all = reviews
                            .into_iter()
                            .filter(|id| states.as_ref().is_none_or(|s| self.review(&k, number, *id).is_some_and(|x| s.contains(&x.state))))
                            .map(|id| Ent::Review(k.clone(), number, id))
                            .collect();
                        self.page(info, all)
                    }
                    "reviewRequests" if is_pull => self.page(info, requested.into_iter().map(|l| Ent::ReviewRequest(k.clone(), number, l)).collect()),
                    "author" => Ok(self.owner_ent(&user).map(|e| self.obj(e)).unwrap_or(Out::Null)),
                    "mergedBy" => Ok(merged_by.and_then(|u| self.owner_ent(&u)).map(|e| self.obj(e)).unwrap_or(Out::Null)),
                    "repository" => Ok(self.obj(Ent::Repo(k))),
                    "milestone" => Ok(milestone.map(|m| self.obj(Ent::Milestone(k, m))).unwrap_or(Out::Null)),
                    "labels" => self.page(info, label_ids.into_iter().map(|id| Ent::Label(k.clone(), id)).collect()),
                    "assignees" => self.page(info, assignees.iter().filter_map(|a| self.owner_ent(a)).collect()),
                    "comments" => self.page(info, comments.into_iter().map(|id| Ent::Comment(k.clone(), id)).collect()),
                    _ => self.unmodelled(info),
                };
            }
        };
        leaf(v)
    }

    fn label<'a>(&'a self, key: &str, id: u64, info: &Info<'_>) -> R<'a> {
        let w = self.w();
        let Some(r) = w.repos.get(key) else { return Ok(Out::Null) };
        let Some(l) = r.labels.iter().find(|l| l.id == id) else { return Ok(Out::Null) };
        let v = match info.field_name() {
            "id" => json!(node_id("Label", l.id)),
            "name" => json!(l.name),
            "color" => json!(l.color),
            "description" => json!(l.description),
            "isDefault" => json!(l.default),
            "url" => json!(format!("{}/{}/labels/{}", self.c.base, r.full_name(), crate::render::enc(&l.name))),
            "resourcePath" => json!(format!("/{}/labels/{}", r.full_name(), crate::render::enc(&l.name))),
            "repository" => {
                let k = key.to_string();
                drop(w);
                return Ok(self.obj(Ent::Repo(k)));
            }
            "issues" | "pullRequests" => {
                let pulls = info.field_name() == "pullRequests";
                let name = l.name.to_ascii_lowercase();
                let all: Vec<Ent> = r.issues.values().filter(|i| i.pull.is_some() == pulls && i.labels.iter().any(|x| x.to_ascii_lowercase() == name)).map(|i| if pulls { Ent::Pull(key.to_string(), i.number) } else { Ent::Issue(key.to_string(), i.number) }).collect();
                drop(w);
                return self.page(info, all);
            }
            _ => {
                drop(w);
                return self.unmodelled(info);
            }
        };
        leaf(v)
    }

    fn milestone<'a>(&'a self, key: &str, number: u64, info: &Info<'_>) -> R<'a> {
        let w = self.w();
        let Some(r) = w.repos.get(key) else { return Ok(Out::Null) };
        let Some(m) = r.milestones.get(&number) else { return Ok(Out::Null) };
        let total = m.open_issues + m.closed_issues;
        let v = match info.field_name() {
            "id" => json!(node_id("Milestone", m.id)),
            "number" => json!(m.number),
            "title" => json!(m.title),
            "description" => json!(m.description),
            "state" => json!(upper(&m.state)),
            "closed" => json!(m.state == "closed"),
            "dueOn" => json!(m.due_on),
            "closedAt" => json!(m.closed_at),
            "createdAt" => json!(m.created_at),
            "updatedAt" => json!(m.updated_at),
            "progressPercentage" => json!(if total == 0 { 0.0 } else { m.closed_issues as f64 * 100.0 / total as f64 }),
            "url" => json!(format!("{}/{}/milestone/{}", self.c.base, r.full_name(), m.number)),
            "resourcePath" => json!(format!("/{}/milestone/{}", r.full_name(), m.number)),
            other => {
                let (k, creator) = (key.to_string(), m.creator.clone());
                let issues: Vec<(u64, bool)> = r.issues.values().filter(|i| i.milestone == Some(number)).map(|i| (i.number, i.pull.is_some())).collect();
                drop(w);
                return match other {
                    "creator" => Ok(self.owner_ent(&creator).map(|e| self.obj(e)).unwrap_or(Out::Null)),
                    "repository" => Ok(self.obj(Ent::Repo(k))),
                    "issues" => {
                        let all = issues.into_iter().filter(|(_, p)| !p).map(|(n, _)| Ent::Issue(k.clone(), n)).collect();
                        self.page(info, all)
                    }
                    "pullRequests" => {
                        let all = issues.into_iter().filter(|(_, p)| *p).map(|(n, _)| Ent::Pull(k.clone(), n)).collect();
                        self.page(info, all)
                    }
                    _ => self.unmodelled(info),
                };
            }
        };
        leaf(v)
    }

    fn comment<'a>(&'a self, key: &str, id: u64, info: &Info<'_>) -> R<'a> {
        let w = self.w();
        let Some(r) = w.repos.get(key) else { return Ok(Out::Null) };
        let Some(c) = r.comments.get(&id) else { return Ok(Out::Null) };
        let is_pull = r.issues.get(&c.issue).is_some_and(|i| i.pull.is_some());
        let v = match info.field_name() {
            "id" => json!(node_id("IssueComment", c.id)),
            "databaseId" => json!(c.id),
            "body" => json!(c.body),
            "bodyText" => json!(c.body),
            "createdAt" => json!(c.created_at),
            "updatedAt" => json!(c.updated_at),
            "lastEditedAt" => if c.updated_at != c.created_at { json!(c.updated_at) } else { Value::Null },
            "includesCreatedEdit" => json!(c.updated_at != c.created_at),
            "viewerDidAuthor" => json!(c.user.eq_ignore_ascii_case(&w.viewer)),
            "authorAssociation" => json!(w.author_association(r, &c.user)),
            // The twin hides no comments.
            "isMinimized" => json!(false),
            "minimizedReason" => Value::Null,
            "url" => json!(format!("{}/{}/{}/{}#issuecomment-{}", self.c.base, r.full_name(), if is_pull { "pull" } else { "issues" }, c.issue, c.id)),
            other => {
                let (k, user, issue) = (key.to_string(), c.user.clone(), c.issue);
                drop(w);
                return match other {
                    "author" => Ok(self.owner_ent(&user).map(|e| self.obj(e)).unwrap_or(Out::Null)),
                    "repository" => Ok(self.obj(Ent::Repo(k))),
                    "issue" => Ok(self.obj(if is_pull { Ent::Pull(k, issue) } else { Ent::Issue(k, issue) })),
                    "pullRequest" => Ok(if is_pull { self.obj(Ent::Pull(k, issue)) } else { Out::Null }),
                    _ => self.unmodelled(info),
                };
            }
        };
        leaf(v)
    }

    fn conn<'a>(&'a self, ty: &'static str, items: &[(usize, Ent)], total: usize, next: bool, prev: bool, info: &Info<'_>) -> R<'a> {
        match info.field_name() {
            "totalCount" => leaf(json!(total)),
            "issueCount" => leaf(json!(if ty == "SearchResultItemConnection" { total } else { 0 })),
            "repositoryCount" | "userCount" | "codeCount" | "discussionCount" | "wikiCount" => leaf(json!(0)),
            "nodes" => Ok(Out::list(items.iter().map(|(_, e)| self.obj(e.clone())))),
            "edges" => {
                let edge = ty.strip_suffix("Connection").map(|s| format!("{s}Edge")).unwrap_or_default();
                Ok(Out::list(items.iter().map(|(at, e)| self.obj(Ent::Edge { ty: edge.clone(), at: *at, node: Box::new(e.clone()) }))))
            }
            "pageInfo" => Ok(self.obj(Ent::PageInfo { start: items.first().map(|x| x.0), end: items.last().map(|x| x.0), next, prev })),
            _ => self.unmodelled(info),
        }
    }

    fn release<'a>(&'a self, key: &str, id: u64, info: &Info<'_>) -> R<'a> {
        let w = self.w();
        let Some(r) = w.repos.get(key) else { return Ok(Out::Null) };
        let Some(rel) = r.releases.get(&id) else { return Ok(Out::Null) };
        let url = format!("{}/{}/releases/tag/{}", self.c.base, r.full_name(), crate::render::enc(&rel.tag_name));
        let v = match info.field_name() {
            "id" => json!(node_id("Release", rel.id)),
            "databaseId" => json!(rel.id),
            "name" => json!(rel.name),
            "tagName" => json!(rel.tag_name),
            "description" => json!(rel.body),
            "isDraft" => json!(rel.draft),
            "isPrerelease" => json!(rel.prerelease),
            "isLatest" => json!(latest_release(r) == Some(rel.id)),
            "createdAt" => json!(rel.created_at),
            "publishedAt" => json!(rel.published_at),
            "updatedAt" => json!(rel.published_at.as_ref().unwrap_or(&rel.created_at)),
            "url" => json!(url),
            "resourcePath" => json!(url.strip_prefix(&self.c.base).unwrap_or(&url)),
            other => {
                let (k, author) = (key.to_string(), rel.author.clone());
                drop(w);
                return match other {
                    "author" => Ok(self.owner_ent(&author).map(|e| self.obj(e)).unwrap_or(Out::Null)),
                    "repository" => Ok(self.obj(Ent::Repo(k))),
                    _ => self.unmodelled(info),
                };
            }
        };
        leaf(v)
    }

    fn commit<'a>(&'a self, key: &str, sha: &str, info: &Info<'_>) -> R<'a> {
        let w = self.w();
        let Some(r) = w.repos.get(key) else { return Ok(Out::Null) };
        let Some(c) = r.git.commit(sha) else { return Ok(Out::Null) };
        let v = match info.field_name() {
            "id" => json!(node_id("Commit", crate::render::short_id(sha))),
            "oid" => json!(sha),
            "abbreviatedOid" => json!(&sha[..sha.len().min(7)]),
            "message" => json!(c.message),
            "messageHeadline" => json!(c.message.lines().next().unwrap_or("")),
            "messageBody" => json!(c.message.split_once('\n').map(|(_, b)| b.trim_start_matches('\n')).unwrap_or("")),
            "committedDate" => json!(c.committer.date),
            "authoredDate" => json!(c.author.date),
            "url" => json!(format!("{}/{}/commit/{sha}", self.c.base, r.full_name())),
            "statusCheckRollup" => {
                let any = r.statuses.iter().any(|s| s.sha == sha) || r.check_runs.values().any(|c| c.head_sha == sha);
                let k = key.to_string();
                drop(w);
                return Ok(if any { self.obj(Ent::Rollup(k, sha.to_string())) } else { Out::Null });
            }
            "repository" => {
                let k = key.to_string();
                drop(w);
                return Ok(self.obj(Ent::Repo(k)));
            }
            _ => {
                drop(w);
                return self.unmodelled(info);
            }
        };
        leaf(v)
    }

    /// A commit's statuses (the newest of each context, as the combined status counts them)
    /// and check runs, as GitHub's `StatusCheckRollup`.
    fn rollup<'a>(&'a self, key: &str, sha: &str, info: &Info<'_>) -> R<'a> {
        let (state, contexts) = {
            let w = self.w();
            let Some(r) = w.repos.get(key) else { return Ok(Out::Null) };
            let (combined, statuses) = crate::handlers::pulls::combined_state(r, sha);
            let runs: Vec<&crate::model::CheckRun> = r.check_runs.values().filter(|c| c.head_sha == sha).collect();
            let failed = runs.iter().any(|c| matches!(c.conclusion.as_deref(), Some("failure" | "timed_out" | "action_required" | "cancelled" | "startup_failure")));
            let pending = runs.iter().any(|c| c.status != "completed");
            let state = match (combined.as_str(), failed, pending) {
                ("failure" | "error", _, _) | (_, true, _) => "FAILURE",
                ("pending", _, _) if !statuses.is_empty() => "PENDING",
                (_, _, true) => "PENDING",
                _ => "SUCCESS",
            };
            let mut contexts: Vec<Ent> = statuses.iter().map(|s| Ent::StatusContext(key.to_string(), s.id)).collect();
            contexts.extend(runs.iter().map(|c| Ent::CheckRun(key.to_string(), c.id)));
            (state, contexts)
        };
        match info.field_name() {
            "id" => leaf(json!(node_id("StatusCheckRollup", crate::render::short_id(sha)))),
            "state" => leaf(json!(state)),
            "commit" => Ok(self.obj(Ent::Commit(key.to_string(), sha.to_string()))),
            "contexts" => self.page(info, contexts),
            _ => self.unmodelled(info),
        }
    }

    /// Whether branch protection requires the status or check named `name`.
    fn required(&self, key: &str, name: &str) -> bool {
        self.w().repos.get(key).is_some_and(|r| r.required_contexts.iter().any(|c| c == name))
    }

    fn status_context<'a>(&'a self, key: &str, id: u64, info: &Info<'_>) -> R<'a> {
        let w = self.w();
        let Some(r) = w.repos.get(key) else { return Ok(Out::Null) };
        let Some(s) = r.statuses.iter().find(|s| s.id == id) else { return Ok(Out::Null) };
        let v = match info.field_name() {
            "id" => json!(node_id("StatusContext", s.id)),
            "context" => json!(s.context),
            "state" => json!(upper(&s.state)),
            "description" => json!(s.description),
            "targetUrl" => json!(s.target_url),
            "createdAt" => json!(s.created_at),
            "isRequired" => {
                let name = s.context.clone();
                drop(w);
                return leaf(json!(self.required(key, &name)));
            }
            "creator" => {
                let creator = s.creator.clone();
                drop(w);
                return Ok(self.owner_ent(&creator).map(|e| self.obj(e)).unwrap_or(Out::Null));
            }
            _ => {
                drop(w);
                return self.unmodelled(info);
            }
        };
        leaf(v)
    }

    fn check_run<'a>(&'a self, key: &str, id: u64, info: &Info<'_>) -> R<'a> {
        let w = self.w();
        let Some(r) = w.repos.get(key) else { return Ok(Out::Null) };
        let Some(c) = r.check_runs.get(&id) else { return Ok(Out::Null) };
        let v = match info.field_name() {
            "id" => json!(node_id("CheckRun", c.id)),
            "databaseId" => json!(c.id),
            "name" => json!(c.name),
            "status" => json!(upper(&c.status)),
            "conclusion" => json!(c.conclusion.as_deref().map(upper)),
            "startedAt" => json!(c.started_at),
            "completedAt" => json!(c.completed_at),
            "detailsUrl" => json!(c.details_url),
            "externalId" => json!(c.external_id),
            "title" => json!(c.title),
            "summary" => json!(c.summary),
            "text" => json!(c.text),
            "permalink" | "url" => json!(format!("{}/{}/runs/{}", self.c.base, r.full_name(), c.id)),
            "isRequired" => {
                let name = c.name.clone();
                drop(w);
                return leaf(json!(self.required(key, &name)));
            }
            "checkSuite" => {
                drop(w);
                return Ok(self.obj(Ent::CheckSuite(key.to_string(), id)));
            }
            _ => {
                drop(w);
                return self.unmodelled(info);
            }
        };
        leaf(v)
    }

    fn review(&self, key: &str, number: u64, id: u64) -> Option<crate::model::Review> {
        let w = self.w();
        w.repos.get(key)?.issues.get(&number)?.pull.as_ref()?.reviews.iter().find(|x| x.id == id).cloned()
    }

    fn review_field<'a>(&'a self, key: &str, number: u64, id: u64, info: &Info<'_>) -> R<'a> {
        let Some(rv) = self.review(key, number, id) else { return Ok(Out::Null) };
        let (assoc, fname) = {
            let w = self.w();
            let r = &w.repos[key];
            (w.author_association(r, &rv.user), r.full_name())
        };
        match info.field_name() {
            "id" => leaf(json!(node_id("PullRequestReview", rv.id))),
            "databaseId" => leaf(json!(rv.id)),
            "body" => leaf(json!(rv.body)),
            "state" => leaf(json!(rv.state)),
            "submittedAt" => leaf(json!(rv.submitted_at)),
            "createdAt" => leaf(json!(rv.submitted_at)),
            "authorAssociation" => leaf(json!(assoc)),
            "url" => leaf(json!(format!("{}/{fname}/pull/{number}#pullrequestreview-{}", self.c.base, rv.id))),
            "author" => Ok(self.owner_ent(&rv.user).map(|e| self.obj(e)).unwrap_or(Out::Null)),
            "commit" => Ok(self.obj(Ent::Commit(key.to_string(), rv.commit_id.clone()))),
            "pullRequest" => Ok(self.obj(Ent::Pull(key.to_string(), number))),
            "repository" => Ok(self.obj(Ent::Repo(key.to_string()))),
            _ => self.unmodelled(info),
        }
    }

    fn rate_limit<'a>(&'a self, info: &Info<'_>) -> R<'a> {
        let limit = crate::graphql::POINTS_PER_HOUR;
        let cost = self.c.cost;
        let reset = (time::now_unix() / 3600 + 1) * 3600;
        match info.field_name() {
            "limit" => leaf(json!(limit)),
            "cost" => leaf(json!(cost)),
            "used" => leaf(json!(cost)),
            "remaining" => leaf(json!(limit - cost)),
            "resetAt" => leaf(json!(chrono_iso(reset))),
            "nodeCount" => leaf(json!(0)),
            _ => self.unmodelled(info),
        }
    }
}

/// Unix seconds as ISO 8601 (`2026-01-01T00:00:00Z`), by the civil calendar.
fn chrono_iso(unix: i64) -> String {
    let ((y, m, d), secs) = (time::civil_date(unix), unix.rem_euclid(86_400));
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", secs / 3600, secs % 3600 / 60, secs % 60)
}

/// A list argument's strings; a single value stands for a list of one, as GraphQL's input
/// coercion says (`states: OPEN`).
fn list_arg(info: &Info<'_>, name: &str) -> Option<Vec<String>> {
    match info.args.get(name)? {
        Value::Array(a) => Some(a.iter().filter_map(|s| s.as_str().map(String::from)).collect()),
        Value::String(s) => Some(vec![s.clone()]),
        _ => None,
    }
}

/// The release GitHub calls latest: the newest published one that is neither a draft nor a
/// prerelease.
fn latest_release(r: &Repo) -> Option<u64> {
    r.releases.values().filter(|rel| !rel.draft && !rel.prerelease).max_by(|a, b| (&a.published_at, &a.created_at, a.id).cmp(&(&b.published_at, &b.created_at, b.id))).map(|rel| rel.id)
}

/// GraphQL's state of an issue or pull request (`OPEN`, `CLOSED`, `MERGED`).
pub fn issue_state(i: &Issue) -> String {
    if i.pull.as_ref().is_some_and(|p| p.merged) { "MERGED".into() } else { upper(&i.state) }
}

impl Resolve for Obj<'_, '_> {
    fn type_name(&self) -> &str {
        match &self.e {
            Ent::Query => "Query",
            Ent::Mutation => "Mutation",
            Ent::User(l) => {
                if self.w().users.get(l).is_some_and(|u| u.kind == "Bot") {
                    "Bot"
                } else {
                    "User"
                }
            }
            Ent::Org(_) => "Organization",
            Ent::Repo(_) => "Repository",
            Ent::Issue(..) => "Issue",
            Ent::Pull(..) => "PullRequest",
            Ent::Label(..) => "Label",
            Ent::Milestone(..) => "Milestone",
            Ent::Comment(..) => "IssueComment",
            Ent::Ref(..) => "Ref",
            Ent::Release(..) => "Release",
            Ent::Commit(..) => "Commit",
            Ent::PullCommit(..) => "PullRequestCommit",
            Ent::Rollup(..) => "StatusCheckRollup",
            Ent::StatusContext(..) => "StatusContext",
            Ent::CheckRun(..) => "CheckRun",
            Ent::CheckSuite(..) => "CheckSuite",
            Ent::Review(..) => "PullRequestReview",
            Ent::ReviewRequest(..) => "ReviewRequest",
            Ent::RateLimit => "RateLimit",
            Ent::Conn { ty, .. } => ty,
            Ent::Edge { ty, .. } => ty,
            Ent::PageInfo { .. } => "PageInfo",
            Ent::Payload { ty, .. } => ty,
        }
    }

    fn resolve_field<'a>(&'a self, info: &Info<'_>) -> Result<Out<'a>, FieldError> {
        match &self.e {
            Ent::Query => self.query(info),
            Ent::Mutation => crate::graphql::mutate::run(self, info),
            Ent::User(l) | Ent::Org(l) => self.user(l, info),
            Ent::Repo(k) => self.repo(k, info),
            Ent::Issue(k, n) | Ent::Pull(k, n) => self.issue(k, *n, info),
            Ent::Label(k, id) => self.label(k, *id, info),
            Ent::Milestone(k, n) => self.milestone(k, *n, info),
            Ent::Comment(k, id) => self.comment(k, *id, info),
            Ent::Ref(k, name) => match info.field_name() {
                "name" => leaf(json!(name)),
                "prefix" => leaf(json!("refs/heads/")),
                "id" => leaf(json!(node_id("Ref", self.w().repos.get(k).and_then(|r| r.git.branch(name).map(|s| crate::render::short_id(s))).unwrap_or(0)))),
                "repository" => Ok(self.obj(Ent::Repo(k.clone()))),
                _ => self.unmodelled(info),
            },
            Ent::Release(k, id) => self.release(k, *id, info),
            Ent::Commit(k, sha) => self.commit(k, sha, info),
            Ent::PullCommit(k, n, sha) => match info.field_name() {
                "id" => leaf(json!(node_id("PullRequestCommit", crate::render::short_id(sha)))),
                "commit" => Ok(self.obj(Ent::Commit(k.clone(), sha.clone()))),
                "pullRequest" => Ok(self.obj(Ent::Pull(k.clone(), *n))),
                "url" => leaf(json!(format!("{}/{}/pull/{n}/commits/{sha}", self.c.base, self.w().repos.get(k).map(|r| r.full_name()).unwrap_or_default()))),
                _ => self.unmodelled(info),
            },
            Ent::Rollup(k, sha) => self.rollup(k, sha, info),
            Ent::StatusContext(k, id) => self.status_context(k, *id, info),
            Ent::CheckRun(k, id) => self.check_run(k, *id, info),
            Ent::CheckSuite(k, id) => match info.field_name() {
                "id" => leaf(json!(node_id("CheckSuite", *id))),
                "repository" => Ok(self.obj(Ent::Repo(k.clone()))),
                // Check runs made through the API belong to no workflow run.
                "workflowRun" => Ok(Out::Null),
                _ => self.unmodelled(info),
            },
            Ent::Review(k, n, id) => self.review_field(k, *n, *id, info),
            Ent::ReviewRequest(k, n, login) => match info.field_name() {
                "requestedReviewer" => Ok(self.owner_ent(login).map(|e| self.obj(e)).unwrap_or(Out::Null)),
                "pullRequest" => Ok(self.obj(Ent::Pull(k.clone(), *n))),
                "asCodeOwner" => leaf(json!(false)),
                _ => self.unmodelled(info),
            },
            Ent::RateLimit => self.rate_limit(info),
            Ent::Conn { ty, items, total, next, prev } => self.conn(ty, items, *total, *next, *prev, info),
            Ent::Edge { at, node, .. } => match info.field_name() {
                "cursor" => leaf(json!(cursor(*at))),
                "node" => Ok(self.obj((**node).clone())),
                _ => self.unmodelled(info),
            },
            Ent::PageInfo { start, end, next, prev } => match info.field_name() {
                "startCursor" => leaf(json!(start.map(cursor))),
                "endCursor" => leaf(json!(end.map(cursor))),
                "hasNextPage" => leaf(json!(next)),
                "hasPreviousPage" => leaf(json!(prev)),
                _ => self.unmodelled(info),
            },
            Ent::Payload { fields, client_id, .. } => match info.field_name() {
                "clientMutationId" => leaf(client_id.clone()),
                f => match fields.iter().find(|(n, _)| *n == f) {
                    Some((_, e)) => Ok(self.obj(e.clone())),
                    None => self.unmodelled(info),
                },
            },
        }
    }
}
