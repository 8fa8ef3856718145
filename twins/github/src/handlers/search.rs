//! Search: issues and pull requests, repositories, code (over default-branch files), users
//! and commits, with the `q` grammar agents use: `qualifier:value` terms (quoted values,
//! `-` negation), quoted phrases and free words, all of which must match.

use pome_twin_sdk::{Call, Value, json};

use crate::World;
use crate::api::{ApiError, ApiResult, query_enum};
use crate::model::*;

#[derive(Debug, Clone, PartialEq)]
pub struct Term {
    pub key: Option<String>,
    pub value: String,
    pub negated: bool,
}

/// Split a query into terms. `label:"good first issue"`, `"exact phrase"`, `-label:bug`.
pub fn parse_q(q: &str) -> Vec<Term> {
    let mut out = Vec::new();
    let chars: Vec<char> = q.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        while i < chars.len() && chars[i].is_whitespace() {
            i += 1;
        }
        if i >= chars.len() {
            break;
        }
        let mut negated = false;
        if chars[i] == '-' && i + 1 < chars.len() && !chars[i + 1].is_whitespace() {
            negated = true;
            i += 1;
        }
        let mut tok = String::new();
        let mut key = None;
        while i < chars.len() && !chars[i].is_whitespace() {
            if chars[i] == '"' {
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    tok.push(chars[i]);
                    i += 1;
                }
                i += 1;
                continue;
            }
            if chars[i] == ':' && key.is_none() && !tok.is_empty() {
                key = Some(tok.to_ascii_lowercase());
                tok = String::new();
                i += 1;
                continue;
            }
            tok.push(chars[i]);
            i += 1;
        }
        if key.is_none() && (tok == "AND" || tok == "OR") {
            continue;
        }
        out.push(Term { key, value: tok, negated });
    }
    out
}

fn q_of(call: &Call) -> Result<Vec<Term>, ApiError> {
    match call.req.query("q") {
        Some(q) if !q.trim().is_empty() => Ok(parse_q(&q)),
        _ => Err(ApiError::new(422, "Validation Failed")
            .with_error(json!({"resource": "Search", "field": "q", "code": "missing"}))),
    }
}

fn results(call: &Call, items: Vec<Value>) -> ApiResult {
    results_with(call, items, None)
}

fn results_with(call: &Call, items: Vec<Value>, search_type: Option<&str>) -> ApiResult {
    let (page, per_page) = pome_twin_sdk::page::PageInfo::from_query(&call.req, 30, 100);
    let info = pome_twin_sdk::page::PageInfo::new(page, per_page, items.len());
    let total = items.len();
    let range = info.range(total);
    let page_items: Vec<Value> = items.into_iter().skip(range.start).take(range.len()).collect();
    let mut body = json!({"total_count": total, "incomplete_results": false, "items": page_items});
    if let Some(t) = search_type {
        body.as_object_mut().unwrap().insert("search_type".into(), json!(t));
    }
    let mut r = pome_twin_sdk::Response::json(200, &body);
    if let Some(link) = info.link_header(&call.req) {
        r = r.with_header("link", link);
    }
    Ok(r)
}

fn contains_ci(hay: &str, needle: &str) -> bool {
    hay.to_lowercase().contains(&needle.to_lowercase())
}

fn repo_matches(r: &Repo, t: &Term) -> Option<bool> {
    let v = t.value.to_ascii_lowercase();
    match t.key.as_deref()? {
        "repo" => Some(r.full_name().to_ascii_lowercase() == v),
        "user" | "org" | "owner" => Some(r.owner.to_ascii_lowercase() == v),
        _ => None,
    }
}

/// `GET /search/issues` (`search/issues-and-pull-requests`).
pub fn issues(w: &mut World, call: &mut Call) -> ApiResult {
    let terms = q_of(call)?;
    let sort = query_enum(call, "sort", &["comments", "reactions", "created", "updated", "interactions", "best-match"], "best-match")?;
    let order = query_enum(call, "order", &["asc", "desc"], "desc")?;
    let fields: Vec<String> = terms.iter().filter(|t| t.key.as_deref() == Some("in")).flat_map(|t| t.value.split(',').map(|s| s.to_ascii_lowercase()).collect::<Vec<_>>()).collect();
    let viewer = w.viewer.clone();
    let mut hits: Vec<(&Repo, &Issue)> = Vec::new();
    for r in w.repos.values().filter(|r| w.viewer_role(r) >= Role::Read) {
        if terms.iter().any(|t| repo_matches(r, t).is_some_and(|m| m == t.negated)) {
            continue;
        }
        for i in r.issues.values() {
            let ok = terms.iter().all(|t| {
                let v = t.value.to_ascii_lowercase();
                let m = match t.key.as_deref() {
                    Some("repo" | "user" | "org" | "owner" | "in") => true,
                    Some("is") | Some("type") | Some("state") => match v.as_str() {
                        "open" | "closed" => i.state == v,
                        "issue" => i.pull.is_none(),
                        "pr" | "pull-request" | "pull_request" => i.pull.is_some(),
                        "merged" => i.pull.as_ref().is_some_and(|p| p.merged),
                        "unmerged" => i.pull.as_ref().is_some_and(|p| !p.merged) && i.state == "closed",
                        "draft" => i.pull.as_ref().is_some_and(|p| p.draft),
                        "locked" => i.locked,
                        "unlocked" => !i.locked,
                        "public" => !r.private,
                        "private" => r.private,
                        _ => false,
                    },
                    Some("label") => v.split(',').any(|l| i.labels.iter().any(|x| x.to_ascii_lowercase() == l)),
                    Some("author") => i.user.to_ascii_lowercase() == v.trim_start_matches('@') || (v == "@me" && i.user.eq_ignore_ascii_case(&viewer)),
                    Some("assignee") => {
                        let who = if v == "@me" { viewer.to_ascii_lowercase() } else { v.clone() };
                        i.assignees.iter().any(|a| a.to_ascii_lowercase() == who)
                    }
                    Some("mentions") => i.body.as_deref().is_some_and(|b| contains_ci(b, &format!("@{v}"))),
                    Some("involves") => {
                        i.user.to_ascii_lowercase() == v
                            || i.assignees.iter().any(|a| a.to_ascii_lowercase() == v)
                            || i.body.as_deref().is_some_and(|b| contains_ci(b, &format!("@{v}")))
                    }
                    Some("no") => match v.as_str() {
                        "label" => i.labels.is_empty(),
                        "assignee" => i.assignees.is_empty(),
                        "milestone" => i.milestone.is_none(),
                        _ => false,
                    },
                    Some("milestone") => i.milestone.and_then(|n| r.milestones.get(&n)).is_some_and(|m| m.title.to_ascii_lowercase() == v),
                    Some("reason") => i.state_reason.as_deref().is_some_and(|s| s.replace('_', " ") == v.replace(['_', '"'], " ").trim()),
                    Some("review") => {
                        let reviews = i.pull.as_ref().map(|p| &p.reviews);
                        match v.as_str() {
                            "approved" => reviews.is_some_and(|rs| rs.iter().any(|x| x.state == "APPROVED")),
                            "changes_requested" => reviews.is_some_and(|rs| rs.iter().any(|x| x.state == "CHANGES_REQUESTED")),
                            "none" => reviews.is_some_and(|rs| rs.is_empty()),
                            _ => false,
                        }
                    }
                    Some("head") => i.pull.as_ref().is_some_and(|p| p.head_ref.to_ascii_lowercase() == v),
                    Some("base") => i.pull.as_ref().is_some_and(|p| p.base_ref.to_ascii_lowercase() == v),
                    Some("created") | Some("updated") | Some("closed") => {
                        let field = match t.key.as_deref() {
                            Some("created") => Some(i.created_at.as_str()),
                            Some("updated") => Some(i.updated_at.as_str()),
                            _ => i.closed_at.as_deref(),
                        };
                        field.is_some_and(|f| date_matches(f, &v))
                    }
                    Some("comments") => num_matches(i.comments, &v),
                    Some(_) => false,
                    None => {
                        let in_title = fields.is_empty() || fields.iter().any(|f| f == "title");
                        let in_body = fields.is_empty() || fields.iter().any(|f| f == "body");
                        let in_comments = fields.iter().any(|f| f == "comments");
                        (in_title && contains_ci(&i.title, &t.value))
                            || (in_body && i.body.as_deref().is_some_and(|b| contains_ci(b, &t.value)))
                            || (in_comments && r.comments.values().any(|c| c.issue == i.number && contains_ci(&c.body, &t.value)))
                    }
                };
                m != t.negated
            });
            if ok {
                hits.push((r, i));
            }
        }
    }
    match sort.as_str() {
        "comments" => hits.sort_by(|a, b| a.1.comments.cmp(&b.1.comments).then(a.1.id.cmp(&b.1.id))),
        "reactions" => hits.sort_by(|a, b| a.1.reactions.len().cmp(&b.1.reactions.len()).then(a.1.id.cmp(&b.1.id))),
        "updated" => hits.sort_by(|a, b| a.1.updated_at.cmp(&b.1.updated_at).then(a.1.id.cmp(&b.1.id))),
        _ => hits.sort_by(|a, b| a.1.created_at.cmp(&b.1.created_at).then(a.1.id.cmp(&b.1.id))),
    }
    if order == "desc" {
        hits.reverse();
    }
    let b = call.req.base_url.clone();
    let items: Vec<Value> = hits
        .into_iter()
        .map(|(r, i)| {
            let mut v = w.issue_json(&b, r, i);
            v.as_object_mut().unwrap().insert("score".into(), json!(1.0));
            v
        })
        .collect();
    results_with(call, items, Some("lexical"))
}

pub(crate) fn date_matches(field: &str, spec: &str) -> bool {
    let day = &field[..field.len().min(10)];
    if let Some((a, b)) = spec.split_once("..") {
        return (a == "*" || day >= a) && (b == "*" || day <= b);
    }
    for (op, f) in [(">=", 0), ("<=", 1), (">", 2), ("<", 3)] {
        if let Some(d) = spec.strip_prefix(op) {
            return match f {
                0 => day >= d,
                1 => day <= d,
                2 => day > d,
                _ => day < d,
            };
        }
    }
    day == spec
}

fn num_matches(n: u64, spec: &str) -> bool {
    let parse = |s: &str| s.parse::<u64>().ok();
    if let Some((a, b)) = spec.split_once("..") {
        return parse(a).is_none_or(|a| n >= a) && parse(b).is_none_or(|b| n <= b);
    }
    for op in [">=", "<=", ">", "<"] {
        if let Some(d) = spec.strip_prefix(op).and_then(parse) {
            return match op {
                ">=" => n >= d,
                "<=" => n <= d,
                ">" => n > d,
                _ => n < d,
            };
        }
    }
    parse(spec) == Some(n)
}

/// `GET /search/repositories` (`search/repos`).
pub fn repositories(w: &mut World, call: &mut Call) -> ApiResult {
    let terms = q_of(call)?;
    let b = call.req.base_url.clone();
    let items: Vec<Value> = w
        .repos
        .values()
        .filter(|r| w.viewer_role(r) >= Role::Read)
        .filter(|r| {
            terms.iter().all(|t| {
                let v = t.value.to_ascii_lowercase();
                let m = match t.key.as_deref() {
                    Some("repo" | "user" | "org" | "owner") => repo_matches(r, t).unwrap_or(false),
                    Some("is") => match v.as_str() {
                        "public" => !r.private,
                        "private" => r.private,
                        "archived" => r.archived,
                        _ => false,
                    },
                    Some("archived") => r.archived == (v == "true"),
                    Some("fork") => v == "true" || v == "only" && r.parent.is_some() || r.parent.is_none(),
                    Some("topic") => r.topics.iter().any(|x| x.to_ascii_lowercase() == v),
                    Some("in") => true,
                    Some(_) => false,
                    None => contains_ci(&r.name, &t.value) || r.description.as_deref().is_some_and(|d| contains_ci(d, &t.value)),
                };
                m != t.negated
            })
        })
        .map(|r| {
            let mut v = w.repo_json(&b, r, false);
            v.as_object_mut().unwrap().insert("score".into(), json!(1.0));
            v
        })
        .collect();
    results(call, items)
}

/// `GET /search/code` (`search/code`): text in files on each repository's default branch.
pub fn code(w: &mut World, call: &mut Call) -> ApiResult {
    let terms = q_of(call)?;
    if terms.iter().all(|t| t.key.is_some()) {
        return Err(ApiError::new(422, "Validation Failed").with_error(json!({
            "message": "Must include at least one search term.", "resource": "Search", "field": "q", "code": "invalid",
        })));
    }
    let b = call.req.base_url.clone();
    let mut items = Vec::new();
    for r in w.repos.values().filter(|r| w.viewer_role(r) >= Role::Read) {
        if terms.iter().any(|t| repo_matches(r, t).is_some_and(|m| m == t.negated)) {
            continue;
        }
        let Some(head) = r.git.branch(&r.default_branch) else { continue };
        let fname = r.full_name();
        for (path, (_, sha)) in r.git.flatten(&tree_of(r, head)) {
            let text = r.git.blob_bytes(&sha).and_then(|x| std::str::from_utf8(x).ok()).unwrap_or("");
            let name = path.rsplit('/').next().unwrap_or(&path).to_string();
            let ok = terms.iter().all(|t| {
                let v = t.value.to_ascii_lowercase();
                let m = match t.key.as_deref() {
                    Some("repo" | "user" | "org" | "owner") => true,
                    Some("path") => path.to_ascii_lowercase().starts_with(v.trim_start_matches('/')) || path.to_ascii_lowercase().contains(&v),
                    Some("filename") => name.to_ascii_lowercase() == v,
                    Some("extension") => name.to_ascii_lowercase().ends_with(&format!(".{v}")),
                    Some("language") => language_of(&name).is_some_and(|l| l == v),
                    Some("in") => true,
                    Some(_) => false,
                    None => contains_ci(text, &t.value) || (terms.iter().any(|x| x.key.as_deref() == Some("in") && x.value == "path") && contains_ci(&path, &t.value)),
                };
                m != t.negated
            });
            if ok {
                let p = crate::render::enc_path(&path);
                items.push(json!({
                    "name": name, "path": path, "sha": sha,
                    "url": format!("{b}/repos/{fname}/contents/{p}?ref={head}"),
                    "git_url": format!("{b}/repos/{fname}/git/blobs/{sha}"),
                    "html_url": format!("{b}/{fname}/blob/{head}/{p}"),
                    "repository": w.repo_json(&b, r, false), "score": 1.0,
                }));
            }
        }
    }
    results(call, items)
}

fn language_of(name: &str) -> Option<&'static str> {
    let ext = name.rsplit('.').next()?;
    Some(match ext {
        "py" => "python",
        "rs" => "rust",
        "js" | "mjs" => "javascript",
        "ts" => "typescript",
        "go" => "go",
        "rb" => "ruby",
        "java" => "java",
        "md" => "markdown",
        "json" => "json",
        "yml" | "yaml" => "yaml",
        "sh" => "shell",
        _ => return None,
    })
}

/// `GET /search/users` (`search/users`).
pub fn users(w: &mut World, call: &mut Call) -> ApiResult {
    let terms = q_of(call)?;
    let b = call.req.base_url.clone();
    let items: Vec<Value> = w
        .users
        .values()
        .filter(|u| {
            terms.iter().all(|t| {
                let v = t.value.to_ascii_lowercase();
                let m = match t.key.as_deref() {
                    Some("type") => u.kind.to_ascii_lowercase() == v || (v == "org" && u.kind == "Organization"),
                    Some("in") => true,
                    Some("user") | Some("org") => u.login.to_ascii_lowercase() == v,
                    Some(_) => false,
                    None => contains_ci(&u.login, &t.value)
                        || u.name.as_deref().is_some_and(|n| contains_ci(n, &t.value))
                        || u.email.as_deref().is_some_and(|e| contains_ci(e, &t.value)),
                };
                m != t.negated
            })
        })
        .map(|u| {
            let mut v = w.user_json(&b, &u.login);
            v.as_object_mut().unwrap().insert("score".into(), json!(1.0));
            v
        })
        .collect();
    results(call, items)
}

/// `GET /search/commits` (`search/commits`): commit messages reachable from any branch.
pub fn commits(w: &mut World, call: &mut Call) -> ApiResult {
    let terms = q_of(call)?;
    let b = call.req.base_url.clone();
    let mut items = Vec::new();
    for r in w.repos.values().filter(|r| w.viewer_role(r) >= Role::Read) {
        if terms.iter().any(|t| repo_matches(r, t).is_some_and(|m| m == t.negated)) {
            continue;
        }
        let mut seen = std::collections::BTreeSet::new();
        for (_, tip) in r.git.branches() {
            for sha in r.git.history(tip, usize::MAX) {
                if !seen.insert(sha.clone()) {
                    continue;
                }
                let c = r.git.commit(&sha).unwrap();
                let ok = terms.iter().all(|t| {
                    let v = t.value.to_ascii_lowercase();
                    let m = match t.key.as_deref() {
                        Some("repo" | "user" | "org" | "owner") => true,
                        Some("author") => w.login_for(&c.author).is_some_and(|l| l.to_ascii_lowercase() == v),
                        Some("committer") => w.login_for(&c.committer).is_some_and(|l| l.to_ascii_lowercase() == v),
                        Some("author-email") => c.author.email.to_ascii_lowercase() == v,
                        Some("author-name") => c.author.name.to_ascii_lowercase() == v,
                        Some("hash") => sha.starts_with(&v),
                        Some("author-date") => date_matches(&c.author.date, &v),
                        Some("committer-date") => date_matches(&c.committer.date, &v),
                        Some(_) => false,
                        None => contains_ci(&c.message, &t.value),
                    };
                    m != t.negated
                });
                if ok {
                    let mut v = w.commit_json(&b, r, &sha, c, None);
                    let m = v.as_object_mut().unwrap();
                    m.insert("repository".into(), w.repo_json(&b, r, false));
                    m.insert("score".into(), json!(1.0));
                    items.push(v);
                }
            }
        }
    }
    results(call, items)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_qualifiers_quotes_and_negation() {
        let t = parse_q(r#"repo:acme/api is:open label:"good first issue" -label:bug crash "null pointer""#);
        assert_eq!(t.len(), 6);
        assert_eq!(t[2], Term { key: Some("label".into()), value: "good first issue".into(), negated: false });
        assert_eq!(t[3], Term { key: Some("label".into()), value: "bug".into(), negated: true });
        assert_eq!(t[5], Term { key: None, value: "null pointer".into(), negated: false });
    }
}
