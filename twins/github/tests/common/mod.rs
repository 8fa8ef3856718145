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

/// Call tool `name` with `args`; the status, the answer and the entities it recorded as
/// changed.
pub fn tool(w: &mut World, name: &str, args: Value) -> (u16, Value, Vec<String>) {
    let decl = twin_github::tools::tools().into_iter().find(|t| t.name == name).unwrap_or_else(|| panic!("no tool {name}"));
    let r = decl.request(args.as_object().expect("arguments are an object")).expect("the arguments make a request");
    let path = if r.query.is_empty() { r.path.clone() } else { format!("{}?{}", r.path, r.query) };
    let mut req = Request::new(Method::parse(&r.method), &path);
    req.base_url = "http://h/s/ses_1/github".into();
    // As the host sends every tool call.
    req.headers.push(("accept".into(), "application/json".into()));
    if !r.body.is_empty() {
        req.headers.push(("content-type".into(), r.content_type.into()));
        req.body = r.body;
    }
    let mut c = Call::new(req);
    let resp = World::router().dispatch(w, &mut c);
    let text = String::from_utf8_lossy(&resp.body).into_owned();
    let v = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (resp.status, v, c.changes.iter().map(|x| x.entity.clone()).collect())
}
