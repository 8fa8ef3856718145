//! Hostile input: every parser of what an agent sends stops at its bound in `limits` and
//! answers Stripe's 400 `invalid_request_error`; the world serves on after it.

use pome_twin_sdk::{Method, Value};

use crate::World;
use crate::limits::{MAX_EXPAND_PATHS, MAX_PARAM_DEPTH};
use crate::tests::call;

fn world() -> World {
    <World as pome_twin_sdk::Twin>::init(None).unwrap()
}

/// `head` then `depth` levels of `[a]`.
fn nested(head: &str, depth: usize) -> String {
    format!("{head}{}", "[a]".repeat(depth))
}

fn is_invalid_request(v: &Value) -> bool {
    v["error"]["type"] == "invalid_request_error" && v["error"]["message"].as_str().is_some_and(|m| !m.is_empty())
}

#[test]
fn a_parameter_nested_to_the_depth_limit_is_parsed_obeyed() {
    let pairs = vec![(nested("shipping", MAX_PARAM_DEPTH), "v".to_string())];
    let m = crate::core::nest(&pairs).expect("the limit itself is allowed");
    let mut v = &m["shipping"];
    for _ in 0..MAX_PARAM_DEPTH {
        v = &v["a"];
    }
    assert_eq!(v, "v");
}

#[test]
fn a_parameter_nested_past_the_depth_limit_is_a_400_naming_it_violated() {
    let pairs = vec![(nested("metadata", MAX_PARAM_DEPTH + 1), "v".to_string())];
    let e = crate::core::nest(&pairs).unwrap_err();
    assert_eq!((e.status, e.kind, e.param.as_deref()), (400, "invalid_request_error", Some("metadata")));
    assert!(e.message.contains(&format!("more than {MAX_PARAM_DEPTH} levels")), "{}", e.message);
}

#[test]
fn metadata_nested_fifty_thousand_deep_is_a_400_and_the_world_serves_on() {
    let mut w = world();
    let key = nested("metadata", 50_000);
    let (r, v) = call(&mut w, Method::Post, "/v1/customers", &[(key.as_str(), "x"), ("email", "deep@x.test")]);
    assert_eq!(r.status, 400, "{v}");
    assert!(is_invalid_request(&v), "{v}");
    assert_eq!(v["error"]["param"], "metadata");
    assert!(v["error"]["message"].as_str().unwrap().len() < 400, "the message does not repeat the hostile name whole");
    let (r, list) = call(&mut w, Method::Get, "/v1/customers?email=deep@x.test", &[]);
    assert_eq!((r.status, list["data"].as_array().map(Vec::len)), (200, Some(0)), "nothing was created: {list}");
    let (r, c) = call(&mut w, Method::Post, "/v1/customers", &[("email", "ok@x.test"), ("metadata[k]", "v")]);
    assert_eq!((r.status, c["metadata"]["k"].as_str()), (200, Some("v")), "{c}");
}

#[test]
fn a_query_string_nested_fifty_thousand_deep_is_a_400() {
    let mut w = world();
    let (r, v) = call(&mut w, Method::Get, &format!("/v1/customers?{}=1", nested("created", 50_000)), &[]);
    assert_eq!(r.status, 400, "{v}");
    assert!(is_invalid_request(&v), "{v}");
}

#[test]
fn expand_paths_up_to_the_limit_are_served_and_repeats_count_once_obeyed() {
    let mut w = world();
    // The same path a hundred thousand times is one path.
    let mut form: Vec<(&str, &str)> = vec![("email", "e@x.test")];
    form.extend(std::iter::repeat_n(("expand[]", "test_clock"), 100_000));
    let (r, v) = call(&mut w, Method::Post, "/v1/customers", &form);
    assert_eq!(r.status, 200, "{v}");
}

#[test]
fn more_distinct_expand_paths_than_the_limit_is_a_400_before_anything_is_written_violated() {
    let mut w = world();
    let paths: Vec<String> = (0..=MAX_EXPAND_PATHS).map(|i| format!("metadata.k{i}")).collect();
    let mut form: Vec<(&str, &str)> = vec![("email", "many@x.test")];
    form.extend(paths.iter().map(|p| ("expand[]", p.as_str())));
    let (r, v) = call(&mut w, Method::Post, "/v1/customers", &form);
    assert_eq!((r.status, v["error"]["param"].as_str()), (400, Some("expand")), "{v}");
    assert!(is_invalid_request(&v), "{v}");
    let (_, list) = call(&mut w, Method::Get, "/v1/customers?email=many@x.test", &[]);
    assert_eq!(list["data"].as_array().map(Vec::len), Some(0), "refused before the handler ran: {list}");
}

#[test]
fn an_unclosed_bracket_of_any_length_is_a_400() {
    let mut w = world();
    let key = format!("metadata{}", "[a".repeat(20_000));
    let (r, v) = call(&mut w, Method::Post, "/v1/customers", &[(key.as_str(), "x")]);
    assert_eq!(r.status, 400, "{v}");
    assert!(is_invalid_request(&v), "{v}");
}
