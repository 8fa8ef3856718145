//! Native tests for issue #35's Linear items: limits that limit, no invented values, accents.

use pome_twin_sdk::{Auth, Call, Method, Request, Response, Twin, Value, json};

use crate::World;

const TASK24: &str = include_str!("../../../tests/tasks-compat/bundled/24-linear-issue-triage.seed.json");

fn world() -> World {
    let mut v: Value = serde_json::from_str(TASK24).unwrap();
    v["tokens"].as_array_mut().unwrap().push(json!({"token": "lin_oauth_app", "type": "oauth", "user": "admin@pome-twin.test"}));
    World::init(Some(v)).unwrap()
}

/// A request as the agent (`key: None`) or with a seeded key.
fn ask(w: &mut World, query: &str, vars: Value, key: Option<&str>) -> Response {
    let mut req = Request::new(Method::Post, "/graphql").with_json(&json!({"query": query, "variables": vars}));
    if let Some(k) = key {
        req.auth = Auth::Invalid;
        req.headers.push(("authorization".into(), k.into()));
    }
    World::router().dispatch(w, &mut Call::new(req))
}

fn header(r: &Response, name: &str) -> i64 {
    r.headers.iter().find(|(k, _)| k == name).unwrap_or_else(|| panic!("no {name}")).1.parse().unwrap()
}

#[test]
fn requests_run_out_at_linears_limit_and_are_refused_ratelimited_issue_35() {
    let mut w = world();
    let mut last = i64::MAX;
    let mut refused = None;
    for n in 0..5_100 {
        let r = ask(&mut w, "{ viewer { id } }", json!({}), None);
        if r.status != 200 {
            refused = Some((n, r));
            break;
        }
        assert_eq!(header(&r, "x-ratelimit-requests-limit"), 5_000);
        let left = header(&r, "x-ratelimit-requests-remaining");
        // Each request spends one; the clock drips one back every 720 ms (at most a couple here).
        assert!(left <= last, "remaining {left} after {last}");
        last = left;
    }
    let (n, r) = refused.expect("the 5,001st request in an hour is refused");
    assert!((5_000..5_003).contains(&n), "refused after {n} requests");
    assert_eq!(r.status, 400);
    let body = r.json_body();
    assert_eq!(body["errors"][0]["extensions"]["code"], "RATELIMITED", "{body}");
    assert_eq!(body["errors"][0]["extensions"]["type"], "ratelimited");
    assert_eq!(header(&r, "x-ratelimit-requests-remaining"), 0);
    assert!(header(&r, "x-ratelimit-requests-reset") > pome_twin_sdk::time::now().timestamp_millis());
    // Mutations are refused too, and change nothing.
    let r = ask(&mut w, "mutation { issueUpdate(id: \"ENG-2\", input: {priority: 1}) { success } }", json!({}), None);
    assert_eq!(r.json_body()["errors"][0]["extensions"]["code"], "RATELIMITED");
    // Another credential has its own buckets.
    let r = ask(&mut w, "{ viewer { id } }", json!({}), Some("lin_test_admin"));
    assert_eq!((r.status, header(&r, "x-ratelimit-requests-remaining")), (200, 4_999));
}

#[test]
fn complexity_is_counted_from_the_query_and_spent_until_refused_issue_35() {
    let mut w = world();
    let heavy = "{ teams(first: 16) { nodes { id issues(first: 250) { nodes { id title priority } } } } }";
    let light = "{ viewer { id name } }";
    let r = ask(&mut w, light, json!({}), None);
    assert_eq!(header(&r, "x-complexity"), 2, "an object (1) and two fields (0.2), rounded up");
    let r = ask(&mut w, heavy, json!({}), None);
    let points = header(&r, "x-complexity");
    assert!(points > 5_000 && points <= 10_000, "{points}");
    assert_eq!(header(&r, "x-ratelimit-complexity-limit"), 3_000_000);
    let mut left = header(&r, "x-ratelimit-complexity-remaining");
    assert!((3_000_000 - 2 - points..3_000_000 - 2 - points + 5).contains(&left), "{left}");
    let mut refused = None;
    for n in 0..700 {
        let r = ask(&mut w, heavy, json!({}), None);
        if r.status != 200 {
            refused = Some((n, r));
            break;
        }
        let now = header(&r, "x-ratelimit-complexity-remaining");
        assert!(now < left, "{now} after {left}");
        left = now;
    }
    let (_, r) = refused.expect("points run out");
    assert_eq!(r.json_body()["errors"][0]["extensions"]["code"], "RATELIMITED");
    assert!(header(&r, "x-ratelimit-complexity-remaining") < points);
    // A query that fits what is left still runs.
    assert_eq!(ask(&mut w, light, json!({}), None).status, 200);
}

#[test]
fn rate_limit_status_agrees_with_the_headers_and_knows_the_credential_kind_issue_35() {
    let mut w = world();
    let q = "{ rateLimitStatus { kind limits { type allowedAmount remainingAmount requestedAmount reset period } } }";
    for (key, kind, complexity) in [(None, "api key", 3_000_000), (Some("lin_oauth_app"), "oauth app", 2_000_000)] {
        for _ in 0..3 {
            let r = ask(&mut w, q, json!({}), key);
            let body = r.json_body();
            let s = &body["data"]["rateLimitStatus"];
            assert_eq!(s["kind"], kind, "{body}");
            let by = |t: &str| s["limits"].as_array().unwrap().iter().find(|l| l["type"] == t).unwrap().clone();
            let (req, cx) = (by("requestLimit"), by("complexityLimit"));
            assert_eq!(req["remainingAmount"], json!(header(&r, "x-ratelimit-requests-remaining") as f64));
            assert_eq!(req["reset"], json!(header(&r, "x-ratelimit-requests-reset") as f64));
            assert_eq!(cx["allowedAmount"], json!(complexity as f64));
            assert_eq!(cx["remainingAmount"], json!(header(&r, "x-ratelimit-complexity-remaining") as f64));
            assert_eq!(cx["requestedAmount"], json!(header(&r, "x-complexity") as f64));
            assert_eq!(req["period"], json!(3_600_000.0));
        }
    }
}

#[test]
fn a_page_larger_than_250_is_refused_as_linear_refuses_it_issue_35() {
    let mut w = world();
    let r = ask(&mut w, "{ issues(first: 251) { nodes { id } } }", json!({}), None);
    let body = r.json_body();
    assert_eq!(body["errors"][0]["message"], "Argument Validation Error - first must not be greater than 250", "{body}");
    assert_eq!(body["errors"][0]["extensions"]["code"], "INVALID_INPUT");
    let body = ask(&mut w, "query($n: Int) { issue(id: \"ENG-2\") { children(last: $n) { nodes { id } } } }", json!({"n": 300}), None).json_body();
    assert_eq!(body["errors"][0]["extensions"]["code"], "INVALID_INPUT", "{body}");
    let body = ask(&mut w, "{ issues(first: 250) { nodes { id } } }", json!({}), None).json_body();
    assert!(body.get("errors").is_none(), "{body}");
}

#[test]
fn a_seed_may_raise_the_limits_as_linear_support_does_issue_35() {
    let mut v: Value = serde_json::from_str(TASK24).unwrap();
    v["rateLimits"] = json!({"requestsPerHour": 2, "complexityPerHour": 1_000_000});
    let mut w = World::init(Some(v.clone())).unwrap();
    let r = ask(&mut w, "{ viewer { id } }", json!({}), None);
    assert_eq!((header(&r, "x-ratelimit-requests-limit"), header(&r, "x-ratelimit-complexity-limit")), (2, 1_000_000));
    ask(&mut w, "{ viewer { id } }", json!({}), None);
    assert_eq!(ask(&mut w, "{ viewer { id } }", json!({}), None).json_body()["errors"][0]["extensions"]["code"], "RATELIMITED");
    v["rateLimits"] = json!({"requestsPerHour": 0});
    assert!(World::init(Some(v)).unwrap_err().contains("seed.rateLimits.requestsPerHour"));
}
