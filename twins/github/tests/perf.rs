//! List cost must not grow with total data: a 30-item page out of 1,000 issues stays cheap.
//! Run with `--release -- --nocapture` for figures; the assertions are loose bounds.

mod common;
use common::*;
use pome_twin_sdk::json;

fn per_call_us(w: &mut twin_github::World, path: &str, n: u32) -> f64 {
    let t = std::time::Instant::now();
    for _ in 0..n {
        let (s, _) = get(w, path);
        assert_eq!(s, 200);
    }
    t.elapsed().as_secs_f64() * 1e6 / n as f64
}

#[test]
fn a_page_of_thirty_out_of_a_thousand_issues() {
    let mut w = world();
    let small = per_call_us(&mut w, "/repos/acme/api/issues", 200);
    for i in 0..1000 {
        post(&mut w, "/repos/acme/api/issues", json!({"title": format!("issue {i}"), "labels": ["bug"], "milestone": 1, "assignees": ["alice"]}));
    }
    let big = per_call_us(&mut w, "/repos/acme/api/issues", 200);
    let one = per_call_us(&mut w, "/repos/acme/api/issues/500", 200);
    eprintln!("list default world: {small:.1} µs; list page of 30/1000: {big:.1} µs; get one: {one:.1} µs");
    // Loose bound (debug builds are slow): the page must not cost like the whole list.
    assert!(big < small * 40.0 + 20_000.0, "{big} vs {small}");
}

#[test]
#[ignore]
/// Figures per route for a world with 1,000 issues: `cargo test --release --test perf -- --ignored --nocapture`.
fn profile_dispatch_only() {
    use pome_twin_sdk::{Call, Method, Request, Twin};
    let mut w = world();
    for i in 0..1000 {
        post(&mut w, "/repos/acme/api/issues", json!({"title": format!("issue {i}"), "labels": ["bug"], "milestone": 1, "assignees": ["alice"]}));
    }
    for path in ["/rate_limit", "/user", "/repos/acme/api/issues/500", "/repos/acme/api/issues", "/repos/acme/api"] {
        let n = 3000;
        let t = std::time::Instant::now();
        let mut bytes = 0;
        for _ in 0..n {
            let mut req = Request::new(Method::Get, path);
            req.base_url = "http://h/s/ses_1/github".into();
            let mut c = Call::new(req);
            let r = twin_github::World::router().dispatch(&mut w, &mut c);
            bytes += r.body.len();
        }
        eprintln!("{path}: {:?} ({} bytes)", t.elapsed() / n, bytes / n as usize);
    }
}


#[test]
fn cached_answers_follow_every_write() {
    let mut w = world();
    let (_, a) = get(&mut w, "/repos/acme/api/issues/1");
    let (_, b) = get(&mut w, "/repos/acme/api/issues/1");
    assert_eq!(a, b);
    patch(&mut w, "/repos/acme/api/issues/1", json!({"title": "changed"}));
    let (_, c) = get(&mut w, "/repos/acme/api/issues/1");
    assert_eq!(c["title"], "changed");
    // A restored world is a new world to the cache.
    let bytes = postcard::to_stdvec(&w).unwrap();
    let mut restored: twin_github::World = postcard::from_bytes(&bytes).unwrap();
    let (_, d) = get(&mut restored, "/repos/acme/api/issues/1");
    assert_eq!(d["title"], "changed");
}

#[test]
#[ignore]
/// `perf stat` target: 20,000 issue creations (no response parsing).
fn profile_create() {
    use pome_twin_sdk::{Call, Method, Request, Twin};
    let mut w = world();
    let body = json!({"title": "A bug", "body": "It broke", "labels": ["bug"], "assignees": ["alice"]});
    let t = std::time::Instant::now();
    for _ in 0..20000 {
        let mut req = Request::new(Method::Post, "/repos/acme/api/issues").with_json(&body);
        req.base_url = "http://h/s/ses_1/github".into();
        let mut c = Call::new(req);
        let r = twin_github::World::router().dispatch(&mut w, &mut c);
        assert_eq!(r.status, 201);
    }
    eprintln!("create: {:?}", t.elapsed() / 20000);
}

#[test]
#[ignore]
/// `perf` target: the cheapest route, to see the fixed cost of a call.
fn profile_rate_limit() {
    use pome_twin_sdk::{Call, Method, Request, Twin};
    let mut w = world();
    let t = std::time::Instant::now();
    for _ in 0..20000 {
        let mut req = Request::new(Method::Get, "/rate_limit");
        req.base_url = "http://h/s/ses_1/github".into();
        let mut c = Call::new(req);
        let _ = twin_github::World::router().dispatch(&mut w, &mut c);
    }
    eprintln!("rate_limit: {:?}", t.elapsed() / 20000);
}
