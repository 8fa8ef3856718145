//! Native specifications of the twin's behaviour.

use pome_twin_sdk::{Call, Method, Request, Response, Twin, Value, json};

use crate::World;

pub fn call(w: &mut World, method: Method, path: &str, form: &[(&str, &str)]) -> (Response, Value) {
    let req = if form.is_empty() { Request::new(method, path) } else { Request::new(method, path).with_form(form) };
    let mut c = Call::new(req);
    let r = World::router().dispatch(w, &mut c);
    let v = r.json_body();
    (r, v)
}
