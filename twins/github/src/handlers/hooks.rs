//! Repository and organisation webhooks: `/repos/{owner}/{repo}/hooks…` and
//! `/orgs/{org}/hooks…` (create, list, get, update, delete, config, pings, tests, and the
//! deliveries list, get and redeliver). What they send is `crate::webhooks`.
//!
//! Repository hooks need admin on the repository, as on GitHub. Organisation hooks need an
//! organisation owner; the twin models access per repository, so an owner is whoever is
//! admin of one of the organisation's repositories.

use pome_twin_sdk::{Call, Response, Value, json, time};
use serde::Deserialize;

use crate::World;
use crate::api::*;
use crate::model::Role;
use crate::webhooks::{EVENTS, Hook};

#[derive(Debug, Deserialize, Default)]
pub struct ConfigIn {
    pub url: Option<String>,
    pub content_type: Option<String>,
    pub secret: Option<String>,
    pub insecure_ssl: Option<Value>,
}

#[derive(Debug, Deserialize, Default)]
pub struct HookIn {
    pub name: Option<String>,
    pub config: Option<ConfigIn>,
    pub events: Option<Vec<String>>,
    pub add_events: Option<Vec<String>>,
    pub remove_events: Option<Vec<String>>,
    pub active: Option<bool>,
}

/// Where the route's hooks live: a repository (its id) or an organisation (its lower-cased
/// login).
enum Owner {
    Repo(u64),
    Org(String),
}

fn owner(w: &World, call: &Call) -> Result<Owner, ApiError> {
    if call.params.iter().any(|(k, _)| k == "org") {
        let org = call.param("org").to_ascii_lowercase();
        match w.users.get(&org) {
            Some(u) if u.kind == "Organization" => {}
            _ => return Err(ApiError::not_found()),
        }
        let owner = w.repos.values().filter(|r| r.owner.eq_ignore_ascii_case(&org)).any(|r| w.viewer_role(r) >= Role::Admin);
        if !owner {
            // GitHub hides an organisation's hooks from non-owners.
            return Err(ApiError::not_found());
        }
        Ok(Owner::Org(org))
    } else {
        let key = w.repo_key_for(call)?;
        if w.viewer_role(&w.repos[&key]) < Role::Admin {
            return Err(ApiError::not_found());
        }
        Ok(Owner::Repo(w.repos[&key].id))
    }
}

fn belongs(h: &Hook, o: &Owner) -> bool {
    match o {
        Owner::Repo(id) => h.repo == Some(*id),
        Owner::Org(l) => h.org.as_deref() == Some(l.as_str()),
    }
}

/// The route's hook, if it belongs to the route's repository or organisation.
fn hook_id(w: &World, call: &Call) -> Result<u64, ApiError> {
    let o = owner(w, call)?;
    let id = num(call, "hook_id")?;
    match w.hooks.get(&id) {
        Some(h) if belongs(h, &o) => Ok(id),
        _ => Err(ApiError::not_found()),
    }
}

fn check_events(events: &[String]) -> Result<(), ApiError> {
    match events.iter().find(|e| !EVENTS.contains(&e.as_str())) {
        Some(_) => Err(ApiError::invalid("Hook", "events", "invalid")),
        None => Ok(()),
    }
}

/// Apply a `config` body to `h`: `url` must stay a http(s) URL; `content_type` is `json`
/// or `form`.
fn apply_config(h: &mut Hook, c: ConfigIn) -> Result<(), ApiError> {
    if let Some(u) = c.url {
        if !(u.starts_with("http://") || u.starts_with("https://")) {
            return Err(ApiError::custom("Hook", "url", "url is not supported because it isn't reachable over the public Internet"));
        }
        h.url = u;
    }
    if let Some(t) = c.content_type {
        if t != "json" && t != "form" {
            return Err(ApiError::invalid("Hook", "content_type", "invalid"));
        }
        h.content_type = t;
    }
    if let Some(s) = c.secret {
        h.secret = Some(s).filter(|s| !s.is_empty());
    }
    if let Some(x) = c.insecure_ssl {
        h.insecure_ssl = match x {
            Value::Number(n) => n.to_string(),
            Value::String(s) => s,
            _ => return Err(ApiError::invalid("Hook", "insecure_ssl", "invalid")),
        };
    }
    Ok(())
}

/// `POST /repos/{owner}/{repo}/hooks` and `POST /orgs/{org}/hooks`: a `ping` goes out at once.
pub fn create(w: &mut World, call: &mut Call) -> ApiResult {
    let o = owner(w, call)?;
    let inp: HookIn = input(call)?;
    if inp.name.as_deref().is_some_and(|n| n != "web") {
        return Err(ApiError::custom("Hook", "name", &format!("Name {} is not a valid hook name", inp.name.unwrap_or_default())));
    }
    let Some(config) = inp.config else {
        return Err(ApiError::invalid("Hook", "config", "missing_field"));
    };
    if config.url.is_none() {
        return Err(ApiError::custom("Hook", "url", "url cannot be blank"));
    }
    let events = inp.events.unwrap_or_else(|| vec!["push".into()]);
    check_events(&events)?;
    let now = time::now_iso();
    let (repo, org) = match &o {
        Owner::Repo(id) => (Some(*id), None),
        Owner::Org(l) => (None, Some(l.clone())),
    };
    let mut h = Hook {
        id: 0,
        repo,
        org,
        active: inp.active.unwrap_or(true),
        events,
        url: String::new(),
        content_type: "form".into(),
        secret: None,
        insecure_ssl: "0".into(),
        created_at: now.clone(),
        updated_at: now,
    };
    apply_config(&mut h, config)?;
    if w.hooks.values().any(|x| belongs(x, &o) && x.url == h.url) {
        return Err(ApiError::custom("Hook", "", "Hook already exists on this repository"));
    }
    if w.hooks.values().filter(|x| belongs(x, &o)).count() >= crate::webhooks::MAX_HOOKS {
        return Err(ApiError::custom("Hook", "", &format!("The maximum of {} hooks is reached", crate::webhooks::MAX_HOOKS)));
    }
    h.id = w.next_id();
    let id = h.id;
    call.created("hook", id, &h);
    w.hooks.insert(id, h);
    crate::webhooks::ping(w, call, id);
    let b = call.req.base_url.clone();
    let v = w.hooks[&id].json(w, &b);
    Ok(Response::json(201, &v).with_header("location", v["url"].as_str().unwrap_or("").to_string()))
}

pub fn list(w: &mut World, call: &mut Call) -> ApiResult {
    let o = owner(w, call)?;
    let b = call.req.base_url.clone();
    let all: Vec<Value> = w.hooks.values().filter(|h| belongs(h, &o)).map(|h| h.json(w, &b)).collect();
    page_vec(call, all)
}

pub fn get(w: &mut World, call: &mut Call) -> ApiResult {
    let id = hook_id(w, call)?;
    json(200, &w.hooks[&id].json(w, &call.req.base_url))
}

/// `PATCH …/hooks/{hook_id}`: `config` replaces the whole config (a secret not given is
/// dropped, as on GitHub); `events`, `add_events`, `remove_events`, `active`.
pub fn update(w: &mut World, call: &mut Call) -> ApiResult {
    let id = hook_id(w, call)?;
    let inp: HookIn = input(call)?;
    let mut h = w.hooks[&id].clone();
    if let Some(c) = inp.config {
        h.secret = None;
        h.content_type = "form".into();
        h.insecure_ssl = "0".into();
        apply_config(&mut h, c)?;
    }
    if let Some(e) = inp.events {
        check_events(&e)?;
        h.events = e;
    }
    if let Some(add) = inp.add_events {
        check_events(&add)?;
        for e in add {
            if !h.events.contains(&e) {
                h.events.push(e);
            }
        }
    }
    if let Some(rm) = inp.remove_events {
        h.events.retain(|e| !rm.contains(e));
    }
    if let Some(a) = inp.active {
        h.active = a;
    }
    h.updated_at = time::now_iso();
    call.updated("hook", id, &w.hooks[&id], &h);
    w.hooks.insert(id, h);
    json(200, &w.hooks[&id].json(w, &call.req.base_url))
}

pub fn delete(w: &mut World, call: &mut Call) -> ApiResult {
    let id = hook_id(w, call)?;
    let h = w.hooks.remove(&id).expect("checked above");
    call.deleted("hook", id, &h);
    w.hook_deliveries.retain(|_, d| d.hook != id);
    no_content()
}

pub fn get_config(w: &mut World, call: &mut Call) -> ApiResult {
    let id = hook_id(w, call)?;
    json(200, &w.hooks[&id].config_json())
}

/// `PATCH …/hooks/{hook_id}/config`: only the fields given change.
pub fn update_config(w: &mut World, call: &mut Call) -> ApiResult {
    let id = hook_id(w, call)?;
    let inp: ConfigIn = input(call)?;
    let mut h = w.hooks[&id].clone();
    apply_config(&mut h, inp)?;
    h.updated_at = time::now_iso();
    call.updated("hook", id, &w.hooks[&id], &h);
    w.hooks.insert(id, h);
    json(200, &w.hooks[&id].config_json())
}

pub fn ping(w: &mut World, call: &mut Call) -> ApiResult {
    let id = hook_id(w, call)?;
    crate::webhooks::ping(w, call, id);
    no_content()
}

pub fn test_push(w: &mut World, call: &mut Call) -> ApiResult {
    let id = hook_id(w, call)?;
    crate::webhooks::test_push(w, call, id);
    no_content()
}

/// `GET …/hooks/{hook_id}/deliveries`: newest first, paged by `per_page` and `cursor` (the
/// last delivery id seen), as GitHub pages them.
pub fn list_deliveries(w: &mut World, call: &mut Call) -> ApiResult {
    let id = hook_id(w, call)?;
    let per_page = call.req.query("per_page").and_then(|p| p.parse::<usize>().ok()).unwrap_or(30).clamp(1, 100);
    let cursor = call.req.query("cursor").and_then(|c| c.parse::<u64>().ok());
    let all: Vec<&crate::webhooks::HookDelivery> =
        w.hook_deliveries.values().rev().filter(|d| d.hook == id).filter(|d| cursor.is_none_or(|c| d.id < c)).collect();
    let page: Vec<Value> = all.iter().take(per_page).map(|d| d.item_json()).collect();
    let mut r = Response::json(200, &Value::Array(page));
    if all.len() > per_page {
        let last = all[per_page - 1].id;
        let path = format!("{}{}", call.req.base_url, call.req.path);
        r = r.with_header("link", format!("<{path}?per_page={per_page}&cursor={last}>; rel=\"next\""));
    }
    Ok(r)
}

fn delivery_id(w: &World, call: &Call) -> Result<u64, ApiError> {
    let hook = hook_id(w, call)?;
    let id = num(call, "delivery_id")?;
    match w.hook_deliveries.get(&id) {
        Some(d) if d.hook == hook => Ok(id),
        _ => Err(ApiError::not_found()),
    }
}

pub fn get_delivery(w: &mut World, call: &mut Call) -> ApiResult {
    let id = delivery_id(w, call)?;
    json(200, &w.hook_deliveries[&id].full_json())
}

/// `POST …/deliveries/{delivery_id}/attempts`: sent again, 202 `{}` as GitHub answers.
pub fn redeliver(w: &mut World, call: &mut Call) -> ApiResult {
    let id = delivery_id(w, call)?;
    let d = w.hook_deliveries[&id].clone();
    if d.payload.is_none() {
        return Err(ApiError::new(422, "This delivery is too old to redeliver"));
    }
    let new = crate::webhooks::redeliver(w, call, &d);
    call.created("hook_delivery", new, &json!({"redelivery_of": id}));
    json(202, &json!({}))
}
