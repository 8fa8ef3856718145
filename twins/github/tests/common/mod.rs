//! Helpers for native handler tests: a world, and one call through the real router.
#![allow(dead_code)]

use pome_twin_sdk::{Call, Method, Request, Response, Twin, Value};
use twin_github::World;

pub fn world() -> World {
    World::init(None).expect("the default world builds")
}

pub fn seeded(seed: Value) -> World {
    World::init(Some(seed)).expect("seed builds")
}

/// One call through the real router, with what the handler recorded on the call (its
/// action, the deliveries it asked the host for).
pub fn dispatch(w: &mut World, method: Method, path: &str, body: Option<Value>) -> (Response, Call) {
    let mut req = Request::new(method, path);
    req.base_url = "http://h/s/ses_1/github".into();
    if let Some(b) = body {
        req = req.with_json(&b);
    }
    let mut c = Call::new(req);
    let r = World::router().dispatch(w, &mut c);
    (r, c)
}

pub fn call(w: &mut World, method: Method, path: &str, body: Option<Value>) -> (Response, Value, Option<String>) {
    let (r, c) = dispatch(w, method, path, body);
    let v = r.json_body();
    (r, v, c.action)
}

pub fn get(w: &mut World, path: &str) -> (u16, Value) {
    let (r, v, _) = call(w, Method::Get, path, None);
    (r.status, v)
}
pub fn post(w: &mut World, path: &str, body: Value) -> (u16, Value) {
    let (r, v, _) = call(w, Method::Post, path, Some(body));
    (r.status, v)
}
pub fn patch(w: &mut World, path: &str, body: Value) -> (u16, Value) {
    let (r, v, _) = call(w, Method::Patch, path, Some(body));
    (r.status, v)
}
pub fn put(w: &mut World, path: &str, body: Value) -> (u16, Value) {
    let (r, v, _) = call(w, Method::Put, path, Some(body));
    (r.status, v)
}
pub fn delete(w: &mut World, path: &str) -> (u16, Value) {
    let (r, v, _) = call(w, Method::Delete, path, None);
    (r.status, v)
}
