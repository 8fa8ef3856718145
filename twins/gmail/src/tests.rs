//! Native tests: handlers called directly, the way the host calls them.

use pome_twin_sdk::{Call, Method, Request, Response, Twin, Value, json};

use crate::World;

pub fn world() -> World {
    World::init(Some(serde_json::from_str(include_str!("../../../tests/tasks-compat/bundled/22-gmail-inbox-triage.seed.json")).unwrap())).unwrap()
}

pub fn call(w: &mut World, method: Method, path: &str, body: Option<Value>) -> (Response, Call) {
    let mut req = Request::new(method, path);
    if let Some(b) = body {
        req = req.with_json(&b);
    }
    let mut c = Call::new(req);
    let r = World::router().dispatch(w, &mut c);
    (r, c)
}

pub fn get(w: &mut World, path: &str) -> Value {
    let (r, _) = call(w, Method::Get, path, None);
    assert_eq!(r.status, 200, "{path}: {}", String::from_utf8_lossy(&r.body));
    r.json_body()
}

#[test]
fn the_task_seed_loads_and_lists_newest_first() {
    let mut w = world();
    let v = get(&mut w, "/gmail/v1/users/me/messages");
    let ids: Vec<&str> = v["messages"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap()).collect();
    // Draft messages are messages too, as in Gmail; the seeded draft is the newest.
    assert_eq!(ids, ["1900000000000005", "msg_support", "msg_build_reply", "msg_build", "msg_welcome"]);
    assert_eq!(v["resultSizeEstimate"], json!(5));
}
