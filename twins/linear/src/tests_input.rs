//! Hostile documents: depth and complexity are counted with each fragment once, so a document
//! of fragments spreading each other many times is refused in milliseconds; documents past the
//! twin's bounds answer Linear's error shape; the answer cache tells callers apart by the user
//! they act as, never by the redacted `Authorization` header.

use std::time::{Duration, Instant};

use pome_twin_sdk::{Auth, Call, Method, Request, Twin, Value, json};

use crate::World;
use crate::limits::{MAX_COMPLEXITY, MAX_DEPTH, MAX_DOCUMENT_BYTES, MAX_NESTING};

fn post(w: &mut World, query: &str) -> (u16, Value) {
    let req = Request::new(Method::Post, "/graphql").with_json(&json!({"query": query}));
    let mut call = Call::new(req);
    let resp = World::router().dispatch(w, &mut call);
    (resp.status, resp.json_body())
}

/// `n` fragments on `ty`, each spreading the next twice; the last selects `leaf`.
pub fn doubling_fragments(n: usize, ty: &str, leaf: &str) -> String {
    let mut d = String::new();
    for i in 0..n {
        d.push_str(&format!("fragment F{i} on {ty} {{ ...F{} ...F{} }}\n", i + 1, i + 1));
    }
    d.push_str(&format!("fragment F{n} on {ty} {{ {leaf} }}\n"));
    d
}

/// Linear's error shape: `{errors: [{message, extensions: {code}}]}` and no data.
fn assert_linear_error(status: u16, body: &Value, code: &str) {
    assert_eq!(status, 400, "{body}");
    let e = &body["errors"][0];
    assert!(e["message"].as_str().is_some_and(|m| !m.is_empty()), "{body}");
    assert_eq!(e["extensions"]["code"], code, "{body}");
}

#[test]
fn forty_fragments_each_spreading_the_next_twice_answer_too_complex_in_milliseconds() {
    let mut w = World::init(None).unwrap();
    // Each spread counts its fragment's points (2^40 of them here), but each fragment is
    // walked once: the shape that ran to the host's deadline when every path was walked.
    let doc = format!("query {{ ...F0 }}\n{}", doubling_fragments(40, "Query", "viewer { id }"));
    assert!(doc.len() < 2_000, "{} bytes", doc.len());
    let started = Instant::now();
    let (status, body) = post(&mut w, &doc);
    let took = started.elapsed();
    println!("a {}-byte document of 40 doubling fragments answered in {took:?}", doc.len());
    assert!(took < Duration::from_secs(5), "answered, not stuck: {took:?}");
    assert_linear_error(status, &body, "QUERY_TOO_COMPLEX");
    assert!(body["errors"][0]["message"].as_str().unwrap().starts_with("Query too complex"), "{body}");
    assert_eq!(post(&mut w, "{ viewer { id } }").0, 200, "the world serves on");
}

#[test]
fn a_few_doubling_fragments_within_the_complexity_limit_are_served_once() {
    let mut w = World::init(None).unwrap();
    let doc = format!("query {{ ...F0 }}\n{}", doubling_fragments(3, "Query", "viewer { id }"));
    let (status, body) = post(&mut w, &doc);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["viewer"]["id"], "user_admin", "one viewer however many paths reach it");
}

#[test]
fn doubling_fragments_under_a_connection_are_refused_as_too_complex() {
    let mut w = World::init(None).unwrap();
    let doc = format!("query {{ issues(first: 50) {{ nodes {{ ...F0 }} }} }}\n{}", doubling_fragments(40, "Issue", "id title assignee { id name }"));
    let started = Instant::now();
    let (status, body) = post(&mut w, &doc);
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_linear_error(status, &body, "QUERY_TOO_COMPLEX");
    assert!(body["errors"][0]["message"].as_str().unwrap().starts_with("Query too complex"), "{body}");
    assert!(body.get("data").is_none_or(Value::is_null), "{body}");
    // The world serves on.
    assert_eq!(post(&mut w, "{ viewer { id } }").0, 200);
}

#[test]
fn a_document_at_the_depth_limit_is_served_obeyed() {
    let mut w = World::init(None).unwrap();
    // An issue's `parent` nests as deep as a document likes.
    let depth = MAX_DEPTH;
    let doc = format!("{{ issues(first: 1) {{ nodes {{ {}id{} }} }} }}", "parent { ".repeat(depth - 2), " }".repeat(depth - 2));
    let parsed = apollo_compiler::ExecutableDocument::parse(&crate::gql::prepared_full().schema, &doc, "q").unwrap();
    assert_eq!(crate::cost::depth(&parsed.operations.anonymous.as_ref().unwrap().selection_set, &parsed), depth);
    let (status, body) = post(&mut w, &doc);
    assert_eq!(status, 200, "{body}");
}

#[test]
fn a_document_past_the_depth_limit_is_refused_violated() {
    let mut w = World::init(None).unwrap();
    let doc = format!("{{ issues(first: 1) {{ nodes {{ {}id{} }} }} }}", "parent { ".repeat(MAX_DEPTH - 1), " }".repeat(MAX_DEPTH - 1));
    let (status, body) = post(&mut w, &doc);
    assert_linear_error(status, &body, "QUERY_TOO_COMPLEX");
    assert!(body["errors"][0]["message"].as_str().unwrap().contains(&format!("maximum of {MAX_DEPTH}")), "{body}");
}

#[test]
fn inline_fragments_nested_past_the_walks_bound_are_refused_as_too_deep() {
    let mut w = World::init(None).unwrap();
    let n = MAX_NESTING + 1;
    let doc = format!("{{ {}viewer {{ id }}{} }}", "... on Query { ".repeat(n), " }".repeat(n));
    let (status, body) = post(&mut w, &doc);
    assert_linear_error(status, &body, "QUERY_TOO_COMPLEX");
}

#[test]
fn a_complexity_read_from_variables_is_counted_per_request() {
    let mut w = World::init(None).unwrap();
    let q = "query Q($n: Int) { teams(first: $n) { nodes { issues(first: $n) { nodes { id title } } } } }";
    let req = |n: i64| Request::new(Method::Post, "/graphql").with_json(&json!({"query": q, "variables": {"n": n}}));
    for (n, ok) in [(5, true), (250, false), (5, true)] {
        let mut call = Call::new(req(n));
        let resp = World::router().dispatch(&mut w, &mut call);
        assert_eq!(resp.status == 200, ok, "first: {n}: {}", String::from_utf8_lossy(&resp.body));
    }
    let parsed = apollo_compiler::ExecutableDocument::parse(&crate::gql::prepared_full().schema, q, "q").unwrap();
    let op = parsed.operations.named.values().next().unwrap();
    assert!(crate::complexity(&op.selection_set, &parsed, json!({"n": 250}).as_object().unwrap()) > MAX_COMPLEXITY);
}

#[test]
fn a_document_of_the_largest_size_is_prepared_obeyed_and_a_larger_one_is_refused_violated() {
    let mut w = World::init(None).unwrap();
    let head = "{ viewer { id } }";
    let at_limit = format!("{head}{}", " ".repeat(MAX_DOCUMENT_BYTES - head.len()));
    assert_eq!(post(&mut w, &at_limit).0, 200);
    let past = format!("{head}{}", " ".repeat(MAX_DOCUMENT_BYTES + 1 - head.len()));
    let (status, body) = post(&mut w, &past);
    assert_linear_error(status, &body, "QUERY_TOO_COMPLEX");
}

#[test]
fn the_document_cache_is_bounded_by_bytes_and_serves_on_after_it_starts_over() {
    let mut w = World::init(None).unwrap();
    // Twenty documents of nearly the largest size: far more text than the cache keeps.
    for i in 0..20 {
        let head = format!("query Q{i} {{ viewer {{ id }} }}");
        let doc = format!("{head}{}", " ".repeat(MAX_DOCUMENT_BYTES - head.len() - 10));
        assert_eq!(post(&mut w, &doc).0, 200);
    }
    assert_eq!(post(&mut w, "{ viewer { id } }").1["data"]["viewer"]["id"], "user_admin");
}

/// The agent token and a seeded key send the very same request; the host redacts the
/// `Authorization` of both. Each must get its own `viewer`, from the cache or not.
#[test]
fn the_answer_cache_never_gives_one_users_answer_to_another() {
    let mut seed = crate::seed::default_seed();
    seed["tokens"] = json!([{"token": "lin_api_admin", "user": "user_admin"}, {"token": "lin_api_dev", "user": "user_dev"}]);
    let mut w = World::init(Some(seed)).unwrap();
    let ask = |w: &mut World, auth: Auth, digest: Option<&str>| -> Value {
        let mut req = Request::new(Method::Post, "/graphql").with_json(&json!({"query": "{ viewer { id isMe } }"}));
        req.auth = auth;
        req.headers.push(("authorization".into(), "[redacted]".into()));
        if let Some(d) = digest {
            req.headers.push((crate::CREDENTIAL_DIGEST_HEADER.into(), hex::encode(<sha2::Sha256 as sha2::Digest>::digest(d.as_bytes()))));
        }
        let mut call = Call::new(req);
        World::router().dispatch(w, &mut call).json_body()
    };
    for _ in 0..2 {
        assert_eq!(ask(&mut w, Auth::Agent, None)["data"]["viewer"]["id"], "user_admin");
        assert_eq!(ask(&mut w, Auth::Invalid, Some("lin_api_dev"))["data"]["viewer"]["id"], "user_dev");
        assert_eq!(ask(&mut w, Auth::Invalid, Some("lin_api_admin"))["data"]["viewer"]["id"], "user_admin");
    }
}
