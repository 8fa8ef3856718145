//! Branch protection and its sub-routes (`/repos/{o}/{r}/branches/{branch}/protection/…`):
//! one [`Protection`] per protected branch in `World::branch_protections`. The default
//! branch's required contexts stay in `Repo::required_contexts` (the seed's
//! `required_status_checks`, read by the merge gate, GraphQL and the state export), so a
//! seeded gate is a protection rule here and a rule written here is the gate there.
//! Reading needs maintain or admin, writing admin (GitHub's `Must have admin rights`).

use pome_twin_sdk::{Call, Value, json};

use crate::World;
use crate::api::{ApiError, ApiResult, input, json, no_content};
use crate::limits::MAX_PROTECTION_LIST as MAX_LIST;
use crate::model::*;

/// The rule of `branch`: the stored one, or for the default branch the one its required
/// contexts make, with the contexts taken from the repository.
pub(crate) fn rule_of(w: &World, r: &Repo, branch: &str) -> Option<Protection> {
    let stored = w.branch_protections.get(&r.id).and_then(|m| m.get(branch)).cloned();
    if branch != r.default_branch {
        return stored;
    }
    let implicit = (!r.required_contexts.is_empty())
        .then(|| Protection { status_checks: Some(StatusChecks::default()), ..Default::default() });
    let mut p = stored.or(implicit)?;
    if let Some(sc) = &mut p.status_checks {
        sc.contexts = r.required_contexts.clone();
    }
    Some(p)
}

/// What keeps a pull request into `base` with head `head` from merging under the branch's
/// rule, beyond the default branch's required contexts (which `pulls::required_failures`
/// decides): another branch's contexts, `strict`, and the approving reviews it asks for.
pub(crate) fn merge_blocker(w: &World, r: &Repo, base: &str, p: &Pull, head: &str, author: &str) -> Option<String> {
    let rule = rule_of(w, r, base)?;
    if let Some(sc) = &rule.status_checks {
        if base != r.default_branch {
            if let Some(msg) = crate::handlers::pulls::contexts_failing(r, &sc.contexts, head) {
                return Some(msg);
            }
        }
        let tip = r.git.branch(base).cloned().unwrap_or_default();
        if sc.strict && !r.git.is_ancestor(&tip, head) {
            return Some("Head branch is not up to date with the base branch (the branch's required status checks are strict).".into());
        }
    }
    if let Some(rv) = &rule.reviews {
        let need = rv.required_approving_review_count;
        if need > 0 {
            // Each reviewer's latest decisive review counts, from those with write access.
            let mut latest: Vec<(&str, &str)> = Vec::new();
            for x in &p.reviews {
                if !matches!(x.state.as_str(), "APPROVED" | "CHANGES_REQUESTED" | "DISMISSED") || x.user.eq_ignore_ascii_case(author) {
                    continue;
                }
                match latest.iter_mut().find(|(u, _)| u.eq_ignore_ascii_case(&x.user)) {
                    Some(slot) => slot.1 = &x.state,
                    None => latest.push((&x.user, &x.state)),
                }
            }
            if latest.iter().any(|(_, s)| *s == "CHANGES_REQUESTED") {
                return Some("Changes were requested by a reviewer with write access.".into());
            }
            let approvals = latest.iter().filter(|(u, s)| *s == "APPROVED" && w.role_of(r, u) >= Role::Write).count() as u64;
            if approvals < need {
                let s = if need == 1 { "" } else { "s" };
                return Some(format!("At least {need} approving review{s} is required by reviewers with write access."));
            }
        }
    }
    None
}

// ---- rendering -------------------------------------------------------------------------

fn base_url(call: &Call, r: &Repo, branch: &str) -> String {
    format!("{}/repos/{}/branches/{branch}/protection", call.req.base_url, r.full_name())
}

fn checks_json(u: &str, sc: &StatusChecks) -> Value {
    let u = format!("{u}/required_status_checks");
    json!({
        "url": u, "strict": sc.strict, "contexts": sc.contexts, "contexts_url": format!("{u}/contexts"),
        "checks": sc.contexts.iter().map(|c| json!({"context": c, "app_id": null})).collect::<Vec<_>>(),
    })
}

fn users_json(w: &World, b: &str, logins: &[String]) -> Value {
    Value::Array(logins.iter().map(|l| w.user_json(b, l)).collect())
}

fn teams_json(w: &World, b: &str, org: &str, slugs: &[String]) -> Value {
    Value::Array(
        slugs
            .iter()
            .filter_map(|s| w.teams.get(&format!("{org}/{s}").to_ascii_lowercase()))
            .map(|t| crate::handlers::teams::team_json(w, b, t))
            .collect(),
    )
}

fn restrictions_json(w: &World, b: &str, r: &Repo, u: &str, x: &Restrictions) -> Value {
    let u = format!("{u}/restrictions");
    json!({
        "url": u, "users_url": format!("{u}/users"), "teams_url": format!("{u}/teams"), "apps_url": format!("{u}/apps"),
        "users": users_json(w, b, &x.users), "teams": teams_json(w, b, &r.owner, &x.teams), "apps": [],
    })
}

fn reviews_json(w: &World, b: &str, r: &Repo, u: &str, rv: &ReviewRule) -> Value {
    let u = format!("{u}/required_pull_request_reviews");
    let mut v = json!({
        "url": u, "dismiss_stale_reviews": rv.dismiss_stale_reviews, "require_code_owner_reviews": rv.require_code_owner_reviews,
        "required_approving_review_count": rv.required_approving_review_count, "require_last_push_approval": rv.require_last_push_approval,
    });
    if let Some(d) = &rv.dismissal {
        let du = format!("{u}/dismissal_restrictions");
        v["dismissal_restrictions"] = json!({
            "url": du, "users_url": format!("{du}/users"), "teams_url": format!("{du}/teams"),
            "users": users_json(w, b, &d.users), "teams": teams_json(w, b, &r.owner, &d.teams), "apps": [],
        });
    }
    v
}

fn rule_json(w: &World, call: &Call, r: &Repo, branch: &str, p: &Protection) -> Value {
    let b = &call.req.base_url;
    let u = base_url(call, r, branch);
    let on = |e: bool| json!({"enabled": e});
    let mut v = json!({
        "url": u,
        "required_signatures": {"url": format!("{u}/required_signatures"), "enabled": p.signatures},
        "enforce_admins": {"url": format!("{u}/enforce_admins"), "enabled": p.enforce_admins},
        "required_linear_history": on(p.linear_history), "allow_force_pushes": on(p.force_pushes),
        "allow_deletions": on(p.deletions), "block_creations": on(p.block_creations),
        "required_conversation_resolution": on(p.conversation_resolution), "lock_branch": on(p.lock_branch),
        "allow_fork_syncing": on(p.fork_syncing),
    });
    if let Some(sc) = &p.status_checks {
        v["required_status_checks"] = checks_json(&u, sc);
    }
    if let Some(rv) = &p.reviews {
        v["required_pull_request_reviews"] = reviews_json(w, b, r, &u, rv);
    }
    if let Some(x) = &p.restrictions {
        v["restrictions"] = restrictions_json(w, b, r, &u, x);
    }
    v
}

// ---- access ----------------------------------------------------------------------------

/// The branch of the route, checked to exist, with the viewer's right to read (maintain) or
/// change (admin) its protection.
fn branch_of<'a>(w: &'a World, call: &Call, write: bool) -> Result<(&'a Repo, String), ApiError> {
    let r = w.repo(call)?;
    let branch = call.param("branch").to_string();
    let role = w.viewer_role(r);
    if role < Role::Maintain || (write && role < Role::Admin) {
        return Err(ApiError::forbidden("Must have admin rights to Repository."));
    }
    if r.git.branch(&branch).is_none() {
        return Err(ApiError::new(404, "Branch not found"));
    }
    Ok((r, branch))
}

/// The branch's rule, or 404 `Branch not protected`.
fn protected<'a>(w: &'a World, call: &Call, write: bool) -> Result<(&'a Repo, String, Protection), ApiError> {
    let (r, branch) = branch_of(w, call, write)?;
    let p = rule_of(w, r, &branch).ok_or_else(|| ApiError::new(404, "Branch not protected"))?;
    Ok((r, branch, p))
}

/// Store `p` as the rule of the route's branch (`None` removes it), keeping the default
/// branch's required contexts in step, and record the change.
fn store(w: &mut World, call: &mut Call, branch: &str, before: Option<&Protection>, p: Option<Protection>) -> Result<(), ApiError> {
    let r = w.repo_mut(call, Role::Admin)?;
    let (id, key) = (r.id, format!("{}:{branch}", r.full_name()));
    if branch == r.default_branch {
        r.required_contexts = p.as_ref().and_then(|p| p.status_checks.as_ref()).map(|sc| sc.contexts.clone()).unwrap_or_default();
    }
    match &p {
        Some(p) => {
            match before {
                Some(b) => call.updated("branch_protection", key, b, p),
                None => call.created("branch_protection", key, p),
            }
            w.branch_protections.entry(id).or_default().insert(branch.to_string(), p.clone());
        }
        None => {
            if let Some(b) = before {
                call.deleted("branch_protection", key, b);
            }
            if let Some(m) = w.branch_protections.get_mut(&id) {
                m.remove(branch);
                if m.is_empty() {
                    w.branch_protections.remove(&id);
                }
            }
        }
    }
    Ok(())
}

// ---- input -----------------------------------------------------------------------------

fn bounded(list: Vec<String>, field: &str) -> Result<Vec<String>, ApiError> {
    if list.len() > MAX_LIST {
        return Err(ApiError::custom("Branch", field, &format!("at most {MAX_LIST} entries")));
    }
    let mut out: Vec<String> = Vec::new();
    for x in list {
        if !out.iter().any(|o| o.eq_ignore_ascii_case(&x)) {
            out.push(x);
        }
    }
    Ok(out)
}

fn strings(v: &Value, field: &str) -> Result<Vec<String>, ApiError> {
    match v {
        Value::Null => Ok(Vec::new()),
        Value::Array(a) => {
            let list = a.iter().map(|x| x.as_str().map(str::to_string).ok_or_else(|| ApiError::invalid("Branch", field, "invalid"))).collect::<Result<Vec<_>, _>>()?;
            bounded(list, field)
        }
        _ => Err(ApiError::invalid("Branch", field, "invalid")),
    }
}

/// Users (that exist) and teams (of the repository's organisation) and apps (none are
/// installed in a sandbox, so any app is refused as GitHub refuses one not installed).
fn restrictions_in(w: &World, r: &Repo, v: &Value, field: &str) -> Result<Restrictions, ApiError> {
    if !v.is_object() {
        return Err(ApiError::invalid("Branch", field, "invalid"));
    }
    let mut x = Restrictions { users: strings(&v["users"], field)?, teams: strings(&v["teams"], field)?, apps: strings(&v["apps"], field)? };
    for u in &mut x.users {
        let user = w.users.get(&u.to_ascii_lowercase()).ok_or_else(|| ApiError::custom("Branch", field, &format!("User {u} could not be found")))?;
        *u = user.login.clone();
    }
    for t in &mut x.teams {
        let team = w.teams.get(&format!("{}/{t}", r.owner).to_ascii_lowercase()).ok_or_else(|| ApiError::custom("Branch", field, &format!("Team {t} could not be found")))?;
        *t = team.slug.clone();
    }
    if let Some(a) = x.apps.first() {
        return Err(ApiError::custom("Branch", field, &format!("App {a} is not installed on this repository")));
    }
    Ok(x)
}

fn org_only(w: &World, r: &Repo) -> Result<(), ApiError> {
    let org = w.users.get(&r.owner.to_ascii_lowercase()).is_some_and(|u| u.kind == "Organization");
    if org { Ok(()) } else { Err(ApiError::new(422, "Only organization repositories can have users and team restrictions")) }
}

fn checks_in(v: &Value) -> Result<StatusChecks, ApiError> {
    if !v.is_object() {
        return Err(ApiError::invalid("Branch", "required_status_checks", "invalid"));
    }
    let strict = match &v["strict"] {
        Value::Bool(b) => *b,
        _ => return Err(ApiError::invalid("Branch", "required_status_checks.strict", "missing_field")),
    };
    let contexts = match (&v["contexts"], &v["checks"]) {
        (Value::Null, Value::Array(cs)) => cs.iter().map(|c| c["context"].as_str().map(str::to_string).ok_or_else(|| ApiError::invalid("Branch", "required_status_checks.checks", "invalid"))).collect::<Result<Vec<_>, _>>()?,
        (c @ Value::Array(_), _) => strings(c, "required_status_checks.contexts")?,
        _ => return Err(ApiError::invalid("Branch", "required_status_checks.contexts", "missing_field")),
    };
    Ok(StatusChecks { strict, contexts: bounded(contexts, "required_status_checks.contexts")? })
}

fn reviews_in(w: &World, r: &Repo, v: &Value, mut rv: ReviewRule) -> Result<ReviewRule, ApiError> {
    if !v.is_object() {
        return Err(ApiError::invalid("Branch", "required_pull_request_reviews", "invalid"));
    }
    let flag = |k: &str, cur: bool| -> Result<bool, ApiError> {
        match &v[k] {
            Value::Null => Ok(cur),
            Value::Bool(b) => Ok(*b),
            _ => Err(ApiError::invalid("Branch", k, "invalid")),
        }
    };
    rv.dismiss_stale_reviews = flag("dismiss_stale_reviews", rv.dismiss_stale_reviews)?;
    rv.require_code_owner_reviews = flag("require_code_owner_reviews", rv.require_code_owner_reviews)?;
    rv.require_last_push_approval = flag("require_last_push_approval", rv.require_last_push_approval)?;
    match &v["required_approving_review_count"] {
        Value::Null => {}
        n => match n.as_u64() {
            Some(n) if n <= 6 => rv.required_approving_review_count = n,
            _ => return Err(ApiError::custom("Branch", "required_approving_review_count", "must be between 0 and 6")),
        },
    }
    let d = &v["dismissal_restrictions"];
    if !d.is_null() {
        org_only(w, r)?;
        let x = restrictions_in(w, r, d, "dismissal_restrictions")?;
        // An empty object turns the restriction off.
        rv.dismissal = (!(x.users.is_empty() && x.teams.is_empty() && x.apps.is_empty())).then_some(x);
    }
    Ok(rv)
}

fn flag_in(v: &Value, k: &str) -> Result<bool, ApiError> {
    match &v[k] {
        Value::Null => Ok(false),
        Value::Bool(b) => Ok(*b),
        _ => Err(ApiError::invalid("Branch", k, "invalid")),
    }
}

// ---- the whole rule --------------------------------------------------------------------

/// `GET …/branches/{branch}/protection` (`repos/get-branch-protection`).
pub fn get(w: &mut World, call: &mut Call) -> ApiResult {
    let (r, branch, p) = protected(w, call, false)?;
    json(200, &rule_json(w, call, r, &branch, &p))
}

/// `PUT …/branches/{branch}/protection` (`repos/update-branch-protection`): the whole rule.
/// GitHub requires the four keys `required_status_checks`, `enforce_admins`,
/// `required_pull_request_reviews` and `restrictions` (each may be `null`: off).
pub fn update(w: &mut World, call: &mut Call) -> ApiResult {
    let v: Value = input(call)?;
    let (r, branch) = branch_of(w, call, true)?;
    for k in ["required_status_checks", "enforce_admins", "required_pull_request_reviews", "restrictions"] {
        if v.get(k).is_none() {
            return Err(ApiError::new(422, format!("Invalid request.\n\n\"{k}\" wasn't supplied.")));
        }
    }
    let before = rule_of(w, r, &branch);
    let mut p = Protection {
        status_checks: if v["required_status_checks"].is_null() { None } else { Some(checks_in(&v["required_status_checks"])?) },
        enforce_admins: flag_in(&v, "enforce_admins")?,
        reviews: if v["required_pull_request_reviews"].is_null() {
            None
        } else {
            let mut rv = reviews_in(w, r, &v["required_pull_request_reviews"], ReviewRule::default())?;
            if v["required_pull_request_reviews"]["required_approving_review_count"].is_null() {
                rv.required_approving_review_count = 1;
            }
            Some(rv)
        },
        restrictions: None,
        signatures: before.as_ref().is_some_and(|b| b.signatures),
        linear_history: flag_in(&v, "required_linear_history")?,
        force_pushes: flag_in(&v, "allow_force_pushes")?,
        deletions: flag_in(&v, "allow_deletions")?,
        block_creations: flag_in(&v, "block_creations")?,
        conversation_resolution: flag_in(&v, "required_conversation_resolution")?,
        lock_branch: flag_in(&v, "lock_branch")?,
        fork_syncing: flag_in(&v, "allow_fork_syncing")?,
    };
    if !v["restrictions"].is_null() {
        org_only(w, r)?;
        p.restrictions = Some(restrictions_in(w, r, &v["restrictions"], "restrictions")?);
    }
    let r = w.repo(call)?;
    let out = rule_json(w, call, r, &branch, &p);
    store(w, call, &branch, before.as_ref(), Some(p))?;
    json(200, &out)
}

/// `DELETE …/branches/{branch}/protection` (`repos/delete-branch-protection`).
pub fn delete(w: &mut World, call: &mut Call) -> ApiResult {
    let (_, branch, p) = protected(w, call, true)?;
    store(w, call, &branch, Some(&p), None)?;
    no_content()
}

/// Change one part of the branch's rule (404 when it has none) and answer `answer` of it.
fn change<F, A>(w: &mut World, call: &mut Call, status: u16, edit: F, answer: A) -> ApiResult
where
    F: FnOnce(&World, &Repo, &mut Protection) -> Result<(), ApiError>,
    A: FnOnce(&World, &Call, &Repo, &str, &Protection) -> Option<Value>,
{
    let (r, branch, before) = protected(w, call, true)?;
    let mut p = before.clone();
    edit(w, r, &mut p)?;
    let out = answer(w, call, r, &branch, &p);
    if p != before {
        store(w, call, &branch, Some(&before), Some(p))?;
    }
    match out {
        Some(v) => json(status, &v),
        None => no_content(),
    }
}

// ---- required status checks ------------------------------------------------------------

fn checks_answer(_: &World, call: &Call, r: &Repo, branch: &str, p: &Protection) -> Option<Value> {
    p.status_checks.as_ref().map(|sc| checks_json(&base_url(call, r, branch), sc))
}

fn has_checks(p: &Protection) -> Result<&StatusChecks, ApiError> {
    p.status_checks.as_ref().ok_or_else(|| ApiError::new(404, "Required status checks not enabled"))
}

/// `GET …/protection/required_status_checks` (`repos/get-status-checks-protection`).
pub fn get_checks(w: &mut World, call: &mut Call) -> ApiResult {
    let (r, branch, p) = protected(w, call, false)?;
    let sc = has_checks(&p)?;
    json(200, &checks_json(&base_url(call, r, &branch), sc))
}

/// `PATCH …/protection/required_status_checks` (`repos/update-status-check-protection`).
pub fn update_checks(w: &mut World, call: &mut Call) -> ApiResult {
    let v: Value = input(call)?;
    change(
        w,
        call,
        200,
        |_, _, p| {
            let cur = has_checks(p)?.clone();
            let mut obj = json!({"strict": v.get("strict").cloned().unwrap_or(json!(cur.strict))});
            obj["contexts"] = match (v.get("contexts"), v.get("checks")) {
                (None, None) => json!(cur.contexts),
                (c, k) => {
                    obj["checks"] = k.cloned().unwrap_or(Value::Null);
                    c.cloned().unwrap_or(Value::Null)
                }
            };
            p.status_checks = Some(checks_in(&obj)?);
            Ok(())
        },
        checks_answer,
    )
}

/// `DELETE …/protection/required_status_checks` (`repos/remove-status-check-protection`).
pub fn delete_checks(w: &mut World, call: &mut Call) -> ApiResult {
    change(w, call, 204, |_, _, p| {
        p.status_checks = None;
        Ok(())
    }, |_, _, _, _, _| None)
}

/// A body that may be an object or (as these list routes also take) a bare array; an empty
/// body is `{}`.
fn object_or_array(call: &Call) -> Result<Value, ApiError> {
    if call.req.body.iter().all(u8::is_ascii_whitespace) {
        return Ok(json!({}));
    }
    match serde_json::from_slice::<Value>(&call.req.body) {
        Ok(v @ (Value::Object(_) | Value::Array(_))) => Ok(v),
        _ => Err(ApiError::new(400, "Problems parsing JSON")),
    }
}

/// The body of a contexts route: `{"contexts": [...]}` or the bare array.
fn contexts_body(call: &Call) -> Result<Vec<String>, ApiError> {
    let v = object_or_array(call)?;
    let list = if v.is_array() { v } else { v.get("contexts").cloned().unwrap_or(Value::Null) };
    if !list.is_array() {
        return Err(ApiError::invalid("Branch", "contexts", "missing_field"));
    }
    strings(&list, "contexts")
}

fn contexts_answer(_: &World, _: &Call, _: &Repo, _: &str, p: &Protection) -> Option<Value> {
    Some(json!(p.status_checks.as_ref().map(|s| s.contexts.clone()).unwrap_or_default()))
}

/// `GET …/required_status_checks/contexts` (`repos/get-all-status-check-contexts`).
pub fn get_contexts(w: &mut World, call: &mut Call) -> ApiResult {
    let (_, _, p) = protected(w, call, false)?;
    json(200, &json!(has_checks(&p)?.contexts))
}

fn edit_contexts(w: &mut World, call: &mut Call, op: fn(&mut Vec<String>, Vec<String>)) -> ApiResult {
    let given = contexts_body(call)?;
    change(
        w,
        call,
        200,
        move |_, _, p| {
            has_checks(p)?;
            let sc = p.status_checks.as_mut().expect("checked");
            op(&mut sc.contexts, given);
            sc.contexts = bounded(std::mem::take(&mut sc.contexts), "contexts")?;
            Ok(())
        },
        contexts_answer,
    )
}

/// `POST …/required_status_checks/contexts` (`repos/add-status-check-contexts`).
pub fn add_contexts(w: &mut World, call: &mut Call) -> ApiResult {
    edit_contexts(w, call, |cur, given| cur.extend(given))
}

/// `PUT …/required_status_checks/contexts` (`repos/set-status-check-contexts`).
pub fn set_contexts(w: &mut World, call: &mut Call) -> ApiResult {
    edit_contexts(w, call, |cur, given| *cur = given)
}

/// `DELETE …/required_status_checks/contexts` (`repos/remove-status-check-contexts`).
pub fn remove_contexts(w: &mut World, call: &mut Call) -> ApiResult {
    edit_contexts(w, call, |cur, given| cur.retain(|c| !given.iter().any(|g| g == c)))
}

// ---- enforce admins, signatures --------------------------------------------------------

fn admins_answer(_: &World, call: &Call, r: &Repo, branch: &str, p: &Protection) -> Option<Value> {
    Some(json!({"url": format!("{}/enforce_admins", base_url(call, r, branch)), "enabled": p.enforce_admins}))
}

fn signatures_answer(_: &World, call: &Call, r: &Repo, branch: &str, p: &Protection) -> Option<Value> {
    Some(json!({"url": format!("{}/required_signatures", base_url(call, r, branch)), "enabled": p.signatures}))
}

/// `GET …/protection/enforce_admins` (`repos/get-admin-branch-protection`).
pub fn get_admins(w: &mut World, call: &mut Call) -> ApiResult {
    let (r, branch, p) = protected(w, call, false)?;
    json(200, &admins_answer(w, call, r, &branch, &p).expect("always"))
}

/// `POST …/protection/enforce_admins` (`repos/set-admin-branch-protection`).
pub fn set_admins(w: &mut World, call: &mut Call) -> ApiResult {
    change(w, call, 200, |_, _, p| {
        p.enforce_admins = true;
        Ok(())
    }, admins_answer)
}

/// `DELETE …/protection/enforce_admins` (`repos/delete-admin-branch-protection`).
pub fn delete_admins(w: &mut World, call: &mut Call) -> ApiResult {
    change(w, call, 204, |_, _, p| {
        p.enforce_admins = false;
        Ok(())
    }, |_, _, _, _, _| None)
}

/// `GET …/protection/required_signatures` (`repos/get-commit-signature-protection`).
pub fn get_signatures(w: &mut World, call: &mut Call) -> ApiResult {
    let (r, branch, p) = protected(w, call, false)?;
    json(200, &signatures_answer(w, call, r, &branch, &p).expect("always"))
}

/// `POST …/protection/required_signatures` (`repos/create-commit-signature-protection`).
pub fn set_signatures(w: &mut World, call: &mut Call) -> ApiResult {
    change(w, call, 200, |_, _, p| {
        p.signatures = true;
        Ok(())
    }, signatures_answer)
}

/// `DELETE …/protection/required_signatures` (`repos/delete-commit-signature-protection`).
pub fn delete_signatures(w: &mut World, call: &mut Call) -> ApiResult {
    change(w, call, 204, |_, _, p| {
        p.signatures = false;
        Ok(())
    }, |_, _, _, _, _| None)
}

// ---- required pull request reviews -----------------------------------------------------

fn reviews_answer(w: &World, call: &Call, r: &Repo, branch: &str, p: &Protection) -> Option<Value> {
    p.reviews.as_ref().map(|rv| reviews_json(w, &call.req.base_url, r, &base_url(call, r, branch), rv))
}

fn has_reviews(p: &Protection) -> Result<(), ApiError> {
    p.reviews.as_ref().map(|_| ()).ok_or_else(|| ApiError::new(404, "Pull request reviews not enabled"))
}

/// `GET …/protection/required_pull_request_reviews` (`repos/get-pull-request-review-protection`).
pub fn get_reviews(w: &mut World, call: &mut Call) -> ApiResult {
    let (r, branch, p) = protected(w, call, false)?;
    has_reviews(&p)?;
    json(200, &reviews_answer(w, call, r, &branch, &p).expect("enabled"))
}

/// `PATCH …/protection/required_pull_request_reviews` (`repos/update-pull-request-review-protection`).
pub fn update_reviews(w: &mut World, call: &mut Call) -> ApiResult {
    let v: Value = input(call)?;
    change(
        w,
        call,
        200,
        |w, r, p| {
            has_reviews(p)?;
            p.reviews = Some(reviews_in(w, r, &v, p.reviews.clone().unwrap_or_default())?);
            Ok(())
        },
        reviews_answer,
    )
}

/// `DELETE …/protection/required_pull_request_reviews` (`repos/delete-pull-request-review-protection`).
pub fn delete_reviews(w: &mut World, call: &mut Call) -> ApiResult {
    change(w, call, 204, |_, _, p| {
        has_reviews(p)?;
        p.reviews = None;
        Ok(())
    }, |_, _, _, _, _| None)
}

// ---- restrictions ----------------------------------------------------------------------

fn has_restrictions(p: &Protection) -> Result<&Restrictions, ApiError> {
    p.restrictions.as_ref().ok_or_else(|| ApiError::new(404, "Push restrictions not enabled"))
}

/// `GET …/protection/restrictions` (`repos/get-access-restrictions`).
pub fn get_restrictions(w: &mut World, call: &mut Call) -> ApiResult {
    let (r, branch, p) = protected(w, call, false)?;
    let x = has_restrictions(&p)?;
    json(200, &restrictions_json(w, &call.req.base_url, r, &base_url(call, r, &branch), x))
}

/// `DELETE …/protection/restrictions` (`repos/delete-access-restrictions`).
pub fn delete_restrictions(w: &mut World, call: &mut Call) -> ApiResult {
    change(w, call, 204, |_, _, p| {
        p.restrictions = None;
        Ok(())
    }, |_, _, _, _, _| None)
}

/// Which list of a restriction a route names.
#[derive(Clone, Copy)]
enum Who {
    Users,
    Teams,
    Apps,
}

impl Who {
    fn key(self) -> &'static str {
        match self {
            Who::Users => "users",
            Who::Teams => "teams",
            Who::Apps => "apps",
        }
    }
    fn list(self, x: &mut Restrictions) -> &mut Vec<String> {
        match self {
            Who::Users => &mut x.users,
            Who::Teams => &mut x.teams,
            Who::Apps => &mut x.apps,
        }
    }
}

fn who_json(w: &World, call: &Call, r: &Repo, x: &Restrictions, who: Who) -> Value {
    let b = &call.req.base_url;
    match who {
        Who::Users => users_json(w, b, &x.users),
        Who::Teams => teams_json(w, b, &r.owner, &x.teams),
        Who::Apps => json!([]),
    }
}

fn get_who(w: &mut World, call: &mut Call, who: Who) -> ApiResult {
    let (r, _, p) = protected(w, call, false)?;
    let x = has_restrictions(&p)?;
    json(200, &who_json(w, call, r, x, who))
}

/// POST adds, PUT replaces, DELETE removes; the body is `{"users": [...]}` (or `teams`,
/// `apps`) or the bare array. Answers the list as it now is.
fn edit_who(w: &mut World, call: &mut Call, who: Who, op: fn(&mut Vec<String>, Vec<String>)) -> ApiResult {
    let v = object_or_array(call)?;
    let list = if v.is_array() { v } else { v.get(who.key()).cloned().unwrap_or(Value::Null) };
    if !list.is_array() {
        return Err(ApiError::invalid("Branch", who.key(), "missing_field"));
    }
    change(
        w,
        call,
        200,
        move |w, r, p| {
            let cur = has_restrictions(p)?;
            let given = restrictions_in(w, r, &json!({ who.key(): list }), "restrictions")?;
            let mut next = cur.clone();
            let mut g = given.clone();
            op(who.list(&mut next), std::mem::take(who.list(&mut g)));
            let l = std::mem::take(who.list(&mut next));
            *who.list(&mut next) = bounded(l, who.key())?;
            p.restrictions = Some(next);
            Ok(())
        },
        move |w, call, r, _, p| p.restrictions.as_ref().map(|x| who_json(w, call, r, x, who)),
    )
}

fn add(cur: &mut Vec<String>, given: Vec<String>) {
    cur.extend(given)
}
fn set(cur: &mut Vec<String>, given: Vec<String>) {
    *cur = given
}
fn remove(cur: &mut Vec<String>, given: Vec<String>) {
    cur.retain(|c| !given.iter().any(|g| g.eq_ignore_ascii_case(c)))
}

/// `GET …/restrictions/users` (`repos/get-users-with-access-to-protected-branch`).
pub fn get_users(w: &mut World, call: &mut Call) -> ApiResult {
    get_who(w, call, Who::Users)
}
/// `POST …/restrictions/users` (`repos/add-user-access-restrictions`).
pub fn add_users(w: &mut World, call: &mut Call) -> ApiResult {
    edit_who(w, call, Who::Users, add)
}
/// `PUT …/restrictions/users` (`repos/set-user-access-restrictions`).
pub fn set_users(w: &mut World, call: &mut Call) -> ApiResult {
    edit_who(w, call, Who::Users, set)
}
/// `DELETE …/restrictions/users` (`repos/remove-user-access-restrictions`).
pub fn remove_users(w: &mut World, call: &mut Call) -> ApiResult {
    edit_who(w, call, Who::Users, remove)
}
/// `GET …/restrictions/teams` (`repos/get-teams-with-access-to-protected-branch`).
pub fn get_teams(w: &mut World, call: &mut Call) -> ApiResult {
    get_who(w, call, Who::Teams)
}
/// `POST …/restrictions/teams` (`repos/add-team-access-restrictions`).
pub fn add_teams(w: &mut World, call: &mut Call) -> ApiResult {
    edit_who(w, call, Who::Teams, add)
}
/// `PUT …/restrictions/teams` (`repos/set-team-access-restrictions`).
pub fn set_teams(w: &mut World, call: &mut Call) -> ApiResult {
    edit_who(w, call, Who::Teams, set)
}
/// `DELETE …/restrictions/teams` (`repos/remove-team-access-restrictions`).
pub fn remove_teams(w: &mut World, call: &mut Call) -> ApiResult {
    edit_who(w, call, Who::Teams, remove)
}
/// `GET …/restrictions/apps` (`repos/get-apps-with-access-to-protected-branch`).
pub fn get_apps(w: &mut World, call: &mut Call) -> ApiResult {
    get_who(w, call, Who::Apps)
}
/// `POST …/restrictions/apps` (`repos/add-app-access-restrictions`).
pub fn add_apps(w: &mut World, call: &mut Call) -> ApiResult {
    edit_who(w, call, Who::Apps, add)
}
/// `PUT …/restrictions/apps` (`repos/set-app-access-restrictions`).
pub fn set_apps(w: &mut World, call: &mut Call) -> ApiResult {
    edit_who(w, call, Who::Apps, set)
}
/// `DELETE …/restrictions/apps` (`repos/remove-app-access-restrictions`).
pub fn remove_apps(w: &mut World, call: &mut Call) -> ApiResult {
    edit_who(w, call, Who::Apps, remove)
}
