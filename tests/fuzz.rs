//! Fuzzing, bounded: property tests over everything a stranger controls. Each target runs a
//! fixed number of generated cases in `cargo test` (POME_FUZZ_CASES raises it for a longer
//! hunt); a crash found becomes a named regression test at the bottom of this file.
//!
//! The rule under every target: hostile input gets an answer (an error in the right shape),
//! never a panic, a trap that reaches other sandboxes, or a 5xx.

use std::time::{Duration, Instant};

use pome_e2e::Server;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::{Value, json};

fn cases(default: u32) -> u32 {
    std::env::var("POME_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn runner(n: u32) -> TestRunner {
    // No persistence file: a failure is printed with its minimal input, to be pasted below.
    TestRunner::new(Config { cases: cases(n), failure_persistence: None, ..Config::default() })
}

/// Any JSON value, nested a few levels.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(|f| json!(f)),
        ".{0,24}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,12}|.{0,8}", inner, 0..6).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Markdown shaped like a task (headings, criteria lists, fences) with arbitrary text in it.
fn task_markdown() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        ".{0,40}".prop_map(|s| format!("# {s}")),
        ".{0,40}".prop_map(|s| format!("## {s}")),
        prop_oneof![Just("Criteria"), Just("Prompt"), Just("Setup"), Just("Config")].prop_map(|h| format!("## {h}")),
        ".{0,60}".prop_map(|s| format!("- [code] {s}")),
        ".{0,60}".prop_map(|s| format!("- [model] {s}")),
        ".{0,60}".prop_map(|s| format!("- {s}")),
        Just("```yaml".to_string()),
        Just("```".to_string()),
        "[a-z_]{1,10}: .{0,20}".prop_map(|s| s),
        ".{0,80}",
    ];
    prop::collection::vec(line, 0..30).prop_map(|lines| lines.join("\n"))
}

#[test]
fn task_markdown_never_panics_the_parser() {
    runner(400)
        .run(&(task_markdown(), proptest::option::of(json_value())), |(text, sidecar)| {
            let sidecar = sidecar.map(|v| v.to_string());
            let started = Instant::now();
            let _ = pome::task::parse("fuzz.md", "fuzz", &text, sidecar.as_deref());
            prop_assert!(started.elapsed() < Duration::from_secs(1), "parsing {} bytes took {:?}", text.len(), started.elapsed());
            Ok(())
        })
        .unwrap();
}

#[test]
fn credentials_in_any_header_query_or_form_never_panic_the_reader() {
    use axum::http::{HeaderMap, HeaderName, HeaderValue};
    let header = (prop_oneof![Just("authorization"), Just("x-api-key"), Just("x-ticket-key"), Just("cookie")], prop::collection::vec(any::<u8>(), 0..80));
    runner(1000)
        .run(&(prop::collection::vec(header, 0..4), ".{0,80}", proptest::option::of(prop::collection::vec(any::<u8>(), 0..120))), |(headers, query, form)| {
            let mut map = HeaderMap::new();
            for (name, value) in headers {
                if let Ok(v) = HeaderValue::from_bytes(&value) {
                    map.append(HeaderName::from_static(name), v);
                }
            }
            let forms = [
                pome_contract::Credential::Bearer,
                pome_contract::Credential::BasicUser,
                pome_contract::Credential::Header("x-ticket-key".into()),
                pome_contract::Credential::Query("token".into()),
                pome_contract::Credential::FormField("token".into()),
            ];
            let _ = pome::auth::twin_credential(&map, &query, form.as_deref(), &forms);
            let _ = pome::auth::twin_credential(&map, &query, form.as_deref(), pome::auth::ANY_FORM);
            Ok(())
        })
        .unwrap();
}

#[test]
fn the_template_matcher_is_total_and_finds_what_it_rendered() {
    // Arbitrary pairs: an answer or none, quickly.
    runner(2000)
        .run(&("[a-z {}\"#.]{0,60}", ".{0,200}"), |(template, sentence)| {
            let started = Instant::now();
            let _ = pome_contract::template::match_template(&template, &sentence);
            prop_assert!(started.elapsed() < Duration::from_millis(200));
            Ok(())
        })
        .unwrap();
    // A sentence rendered from a template matches it again.
    runner(500)
        .run(&("[A-Z][a-z ]{0,12}", "[a-z0-9]{1,10}", " [a-z ]{1,12} ", "[a-z0-9-]{1,10}"), |(head, a, mid, b)| {
            let template = format!("{head} {{a}}{mid}{{b}}");
            let sentence = format!("{head} {a}{mid}{b}");
            let m = pome_contract::template::match_template(&template, &sentence);
            prop_assert!(m.is_some(), "{template:?} does not match {sentence:?}");
            Ok(())
        })
        .unwrap();
}

#[test]
fn the_tape_wire_form_reads_back_exactly_and_refuses_garbage_without_panicking() {
    use pome::tape::{Body, TapeRow};
    runner(1000)
        .run(&prop::collection::vec(any::<u8>(), 0..200), |bytes| {
            let body = Body(bytes.clone().into());
            prop_assert_eq!(Body::from_text(&body.to_text()).0.to_vec(), bytes);
            let wire = serde_json::to_string(&body).unwrap();
            let back: Body = serde_json::from_str(&wire).unwrap();
            prop_assert_eq!(back, body);
            Ok(())
        })
        .unwrap();
    let row = |seq: u64, path: String, headers: Vec<(String, String)>, req: Vec<u8>, resp: Vec<u8>| -> TapeRow {
        let text = json!({
            "seq": seq, "ts": "2026-01-01T00:00:00.000001Z", "twin": "acme", "request_id": "r", "method": "POST",
            "path": path, "query": "", "request_headers": headers, "request_body": "", "base_url": "http://h/s/x/acme",
            "auth": "agent", "status": 200, "response_headers": [], "response_body": "", "latency_ms": 0.5, "action": null,
            "fidelity": "semantic", "state_mutation": false, "state_delta": [], "error": null
        });
        let mut r: TapeRow = serde_json::from_value(text).unwrap();
        r.request_body = Body(req.into());
        r.response_body = Body(resp.into());
        r
    };
    runner(500)
        .run(
            &(any::<u64>(), ".{0,40}", prop::collection::vec(("[a-z-]{1,12}", ".{0,30}"), 0..5), prop::collection::vec(any::<u8>(), 0..64), prop::collection::vec(any::<u8>(), 0..64)),
            |(seq, path, headers, req, resp)| {
                let r = row(seq % (1 << 53), path, headers, req, resp);
                let back: TapeRow = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
                prop_assert_eq!(back, r);
                Ok(())
            },
        )
        .unwrap();
    runner(1000)
        .run(&json_value(), |v| {
            let _ = serde_json::from_value::<TapeRow>(v);
            Ok(())
        })
        .unwrap();
}

/// The runtime's side: arbitrary seeds, form bodies and JSON bodies through real stores.
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap().block_on(f)
}

#[test]
fn any_seed_is_a_sandbox_or_a_422_for_every_twin_and_nobody_else_notices() {
    block_on(async {
        let server = Server::start().await;
        let bystander = server.sandbox(&["tickets"], None).await;
        let (status, v) = server.api("GET", "/v1/twins", None).await;
        assert_eq!(status, 200);
        let twins: Vec<String> = v["data"].as_array().or(v.as_array()).unwrap().iter().filter_map(|t| t["name"].as_str().map(String::from)).collect();
        assert!(twins.len() >= 5, "{v}");
        let mut generated = Vec::new();
        let mut r = runner(12);
        for twin in &twins {
            for _ in 0..cases(12) {
                generated.push((twin.clone(), prop::collection::btree_map("[a-z_]{1,10}", json_value(), 0..4).new_tree(&mut r).unwrap().current()));
            }
        }
        for (twin, seed) in generated {
            let seed = Value::Object(seed.into_iter().collect());
            let (status, v) = server.api("POST", "/v1/sandboxes", Some(json!({"twins": [twin], "seed": seed}))).await;
            assert!(status == 201 || status == 422, "the {twin} twin answered {status} to seed {seed}: {v}");
            if status == 201 {
                // Closed at once, so the team's quota never runs out.
                let (st, run) = server.api("POST", &format!("/v1/sandboxes/{}/finalize", v["id"].as_str().unwrap()), None).await;
                assert_eq!(st, 200, "{run}");
            }
        }
        let r = bystander.call_with("tickets", "GET", "/tickets", None, None).await;
        assert_eq!(r.status, 401, "the bystander sandbox is still there, answering in its own shape");
    });
}

#[test]
fn slack_form_bodies_and_github_json_bodies_get_answers_below_500() {
    block_on(async {
        let server = Server::start().await;
        let sb = server.sandbox(&["slack", "github"], None).await;
        let mut r = runner(64);
        let form = prop::collection::vec(("[a-z_]{1,12}|.{0,6}", ".{0,40}"), 0..6);
        let method = prop_oneof![Just("chat.postMessage"), Just("conversations.create"), Just("conversations.history"), Just("reactions.add"), Just("users.info"), Just("conversations.join")];
        for _ in 0..cases(64) {
            let (m, fields) = (method.new_tree(&mut r).unwrap().current(), form.new_tree(&mut r).unwrap().current());
            let body: String = form_urlencoded::Serializer::new(String::new()).extend_pairs(fields.iter()).finish();
            let resp = sb
                .http
                .post(format!("{}/api/{m}", sb.base("slack")))
                .bearer_auth(&sb.token)
                .header("content-type", "application/x-www-form-urlencoded")
                .body(body.clone())
                .send()
                .await
                .unwrap();
            let status = resp.status().as_u16();
            assert!(status < 500 || status == 501, "slack {m} answered {status} to {body:?}: {}", resp.text().await.unwrap_or_default());
        }
        let routes = prop_oneof![
            Just(("POST", "/repos/acme/api/issues")),
            Just(("PATCH", "/repos/acme/api/issues/1")),
            Just(("POST", "/repos/acme/api/issues/1/comments")),
            Just(("POST", "/repos/acme/api/labels")),
            Just(("POST", "/repos/acme/api/pulls")),
        ];
        for _ in 0..cases(64) {
            let ((m, path), body) = (routes.new_tree(&mut r).unwrap().current(), json_value().new_tree(&mut r).unwrap().current());
            let resp = sb.call("github", m, path, Some(body.clone())).await;
            assert!(resp.status < 500 || resp.status == 501, "github {m} {path} answered {} to {body}: {}", resp.status, resp.text);
        }
        // Raw bytes that are not JSON at all (invalid UTF-8 included).
        for _ in 0..cases(32) {
            let bytes = prop::collection::vec(any::<u8>(), 0..64).new_tree(&mut r).unwrap().current();
            let resp = sb
                .http
                .post(format!("{}/repos/acme/api/issues", sb.base("github")))
                .bearer_auth(&sb.token)
                .header("content-type", "application/json")
                .body(bytes.clone())
                .send()
                .await
                .unwrap();
            assert!(resp.status().as_u16() < 500, "github answered {} to bytes {bytes:?}", resp.status());
        }
        assert_eq!(sb.call("github", "GET", "/repos/acme/api", None).await.status, 200, "the sandbox still serves");
    });
}

/// The vendor's error shape for an answer that is not a success: Stripe's
/// `{error: {type, message}}`, Google's `{error: {code, message, status}}`, Linear's
/// `{errors: [{message}]}`.
fn vendor_shaped(twin: &str, status: u16, text: &str) -> bool {
    if status < 400 {
        return true;
    }
    let v: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    match twin {
        "stripe" => v["error"]["type"].is_string() && v["error"]["message"].is_string(),
        "gmail" => v["error"]["code"] == json!(status) && v["error"]["message"].is_string() && v["error"]["status"].is_string(),
        // Linear's, and GitHub's at /graphql.
        "linear" | "graphql" => v["errors"][0]["message"].is_string(),
        _ => false,
    }
}

async fn send(sb: &pome_e2e::Sandbox, method: &str, url: String, content_type: &str, body: Vec<u8>) -> (u16, String) {
    let resp = sb.http.request(method.parse().unwrap(), url).bearer_auth(&sb.token).header("content-type", content_type).body(body).send().await.unwrap();
    (resp.status().as_u16(), resp.text().await.unwrap())
}

/// A Stripe parameter name: a head, then brackets (deep or unclosed ones included).
fn stripe_key() -> impl Strategy<Value = String> {
    let head = prop_oneof![Just("metadata".to_string()), Just("expand".to_string()), Just("email".to_string()), Just("items".to_string()), "[a-z_]{1,10}", ".{0,6}"];
    let seg = prop_oneof![Just("[]".to_string()), "\\[[a-z0-9]{0,4}\\]", Just("[".to_string()), Just("]".to_string()), "\\[.{0,3}\\]"];
    (head, prop::collection::vec(seg, 0..8), 0usize..3, 0usize..80).prop_map(|(h, segs, deep, n)| {
        let mut k = h + &segs.concat();
        // Now and then far past the depth limit.
        if deep == 0 {
            k.push_str(&"[a]".repeat(n * 20));
        }
        k
    })
}

#[test]
fn stripe_form_bodies_of_any_shape_get_answers_in_stripes_shape() {
    block_on(async {
        let server = Server::start().await;
        let sb = server.sandbox(&["stripe"], None).await;
        let mut r = runner(96);
        let pairs = prop::collection::vec((stripe_key(), ".{0,20}"), 0..8);
        let route = prop_oneof![
            Just(("POST", "/v1/customers")),
            Just(("POST", "/v1/payment_intents")),
            Just(("POST", "/v1/products")),
            Just(("GET", "/v1/customers")),
            Just(("GET", "/v1/customers/search")),
            Just(("GET", "/v1/payment_intents")),
        ];
        for _ in 0..cases(96) {
            let ((method, path), fields) = (route.new_tree(&mut r).unwrap().current(), pairs.new_tree(&mut r).unwrap().current());
            let encoded: String = form_urlencoded::Serializer::new(String::new()).extend_pairs(fields.iter()).finish();
            let (status, text) = if method == "GET" {
                send(&sb, "GET", format!("{}{path}?{encoded}", sb.base("stripe")), "text/plain", Vec::new()).await
            } else {
                send(&sb, "POST", format!("{}{path}", sb.base("stripe")), "application/x-www-form-urlencoded", encoded.clone().into_bytes()).await
            };
            assert!(status < 500, "stripe {method} {path} answered {status} to {encoded:?}: {text}");
            assert!(vendor_shaped("stripe", status, &text), "stripe {method} {path} answered {status} off Stripe's shape: {text}");
        }
        let (status, _) = send(&sb, "GET", format!("{}/v1/customers", sb.base("stripe")), "text/plain", Vec::new()).await;
        assert_eq!(status, 200, "the sandbox still serves");
    });
}

/// A Gmail search query: words, operators, groups, braces, negations and quotes, nested at
/// random, sometimes far past the nesting limit.
fn gmail_query() -> impl Strategy<Value = String> {
    let atom = prop_oneof![
        "[a-z]{1,8}",
        "(from|to|subject|label|in|is|has|larger|newer_than|older_than|after|filename):[a-z0-9/]{0,8}",
        Just("OR".to_string()),
        Just("AND".to_string()),
        Just("\"".to_string()),
        Just("-".to_string()),
        ".{0,4}",
    ];
    let tree = atom.prop_recursive(6, 40, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 1..4).prop_map(|v| format!("({})", v.join(" "))),
            prop::collection::vec(inner.clone(), 1..4).prop_map(|v| format!("{{{}}}", v.join(" "))),
            inner.clone().prop_map(|v| format!("-{v}")),
            prop::collection::vec(inner, 1..4).prop_map(|v| v.join(" ")),
        ]
    });
    (tree, 0usize..4, 0usize..2_000).prop_map(|(q, deep, n)| if deep == 0 { format!("{}{q}{}", "(".repeat(n), ")".repeat(n)) } else { q })
}

/// A `fields` selection: names, parentheses, slashes and commas, nested at random.
fn gmail_fields() -> impl Strategy<Value = String> {
    let name = prop_oneof!["[a-zA-Z]{1,10}", Just("messages".to_string()), Just("id".to_string()), Just("payload".to_string()), ".{0,3}"];
    let tree = name.prop_recursive(6, 40, 4, |inner| {
        prop_oneof![
            (inner.clone(), prop::collection::vec(inner.clone(), 1..4)).prop_map(|(n, v)| format!("{n}({})", v.join(","))),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{a}/{b}")),
            prop::collection::vec(inner, 1..4).prop_map(|v| v.join(",")),
        ]
    });
    (tree, 0usize..4, 0usize..2_000).prop_map(|(f, deep, n)| if deep == 0 { format!("{}{f}{}", "a(".repeat(n), ")".repeat(n)) } else { f })
}

/// A MIME message: headers, then a random tree of multiparts (deep ones included) with
/// arbitrary text leaves, broken boundaries now and then.
fn mime_message() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![".{0,40}".prop_map(|t| format!("Content-Type: text/plain\r\n\r\n{t}\r\n")), ".{0,40}".prop_map(|t| format!("{t}\r\n"))];
    let tree = leaf.prop_recursive(8, 64, 4, |inner| {
        (prop::collection::vec(inner, 0..4), "[a-z0-9]{1,8}", any::<bool>()).prop_map(|(parts, b, close)| {
            let mut m = format!("Content-Type: multipart/mixed; boundary=\"{b}\"\r\n\r\n");
            for p in parts {
                m.push_str(&format!("--{b}\r\n{p}"));
            }
            if close {
                m.push_str(&format!("--{b}--\r\n"));
            }
            m
        })
    });
    (tree, 0usize..4, 0usize..3_000).prop_map(|(body, deep, n)| {
        let mut m = String::from("From: a@example.com\r\nTo: bob@example.com\r\nSubject: fuzz\r\n");
        if deep == 0 {
            for i in 0..n {
                m.push_str(&format!("Content-Type: multipart/mixed; boundary=\"d{i}\"\r\n\r\n--d{i}\r\n"));
            }
        }
        m.push_str(&body);
        m
    })
}

/// A batch body: parts holding requests (some of them batches), under a random boundary.
fn batch_body() -> impl Strategy<Value = (String, String)> {
    let request = prop_oneof![
        Just("GET /gmail/v1/users/me/profile HTTP/1.1\r\n".to_string()),
        Just("GET /gmail/v1/users/me/labels HTTP/1.1\r\n".to_string()),
        Just("POST /batch/gmail/v1 HTTP/1.1\r\nContent-Type: multipart/mixed; boundary=in\r\n\r\n--in\r\nContent-Type: application/http\r\n\r\nGET /gmail/v1/users/me/profile HTTP/1.1\r\n\r\n--in--".to_string()),
        Just("POST /batch HTTP/1.1\r\n".to_string()),
        ".{0,40}",
    ];
    // Boundaries RFC 2046 allows, and others a header can still carry (empty, spaces, quotes).
    ("[a-zA-Z0-9'()+_,./:=?-]{1,70}|[ -~]{0,8}", prop::collection::vec((request, any::<bool>()), 0..6)).prop_map(|(b, parts)| {
        let mut body = String::new();
        for (req, typed) in parts {
            body.push_str(&format!("--{b}\r\n"));
            if typed {
                body.push_str("Content-Type: application/http\r\n");
            }
            body.push_str(&format!("\r\n{req}\r\n"));
        }
        body.push_str(&format!("--{b}--\r\n"));
        (b, body)
    })
}

#[test]
fn gmail_queries_fields_mime_and_batches_of_any_shape_get_answers_in_googles_shape() {
    block_on(async {
        let server = Server::start().await;
        let sb = server.sandbox(&["gmail"], None).await;
        let base = sb.base("gmail");
        let mut r = runner(64);
        let pct = |s: &str| -> String { form_urlencoded::byte_serialize(s.as_bytes()).collect() };
        for _ in 0..cases(64) {
            let q = gmail_query().new_tree(&mut r).unwrap().current();
            let path = prop_oneof![Just("messages"), Just("threads"), Just("drafts")].new_tree(&mut r).unwrap().current();
            let (status, text) = send(&sb, "GET", format!("{base}/gmail/v1/users/me/{path}?q={}", pct(&q)), "text/plain", Vec::new()).await;
            assert!(status < 500 && vendor_shaped("gmail", status, &text), "gmail q={q:?} answered {status}: {text}");
        }
        for _ in 0..cases(64) {
            let f = gmail_fields().new_tree(&mut r).unwrap().current();
            let (status, text) = send(&sb, "GET", format!("{base}/gmail/v1/users/me/messages?fields={}", pct(&f)), "text/plain", Vec::new()).await;
            assert!(status < 500 && vendor_shaped("gmail", status, &text), "gmail fields={f:?} answered {status}: {text}");
        }
        use base64::Engine as _;
        for _ in 0..cases(48) {
            let m = mime_message().new_tree(&mut r).unwrap().current();
            let path = prop_oneof![Just("messages/send"), Just("messages"), Just("messages/import"), Just("drafts")].new_tree(&mut r).unwrap().current();
            let raw = base64::engine::general_purpose::URL_SAFE.encode(&m);
            let body = if path == "drafts" { json!({"message": {"raw": raw}}) } else { json!({"raw": raw}) };
            let (status, text) = send(&sb, "POST", format!("{base}/gmail/v1/users/me/{path}"), "application/json", body.to_string().into_bytes()).await;
            assert!(status < 500 && vendor_shaped("gmail", status, &text), "gmail {path} of {} bytes of MIME answered {status}: {text}", m.len());
        }
        for _ in 0..cases(48) {
            let (b, body) = batch_body().new_tree(&mut r).unwrap().current();
            let (status, text) = send(&sb, "POST", format!("{base}/batch/gmail/v1"), &format!("multipart/mixed; boundary={b}"), body.clone().into_bytes()).await;
            assert!(status < 500, "gmail batch {body:?} answered {status}: {text}");
            assert!(status == 200 || vendor_shaped("gmail", status, &text), "gmail batch answered {status} off Google's shape: {text}");
        }
        // The mailbox lists and every message in it reads.
        let (status, text) = send(&sb, "GET", format!("{base}/gmail/v1/users/me/messages?maxResults=500&includeSpamTrash=true"), "text/plain", Vec::new()).await;
        assert_eq!(status, 200, "{text}");
        let list: Value = serde_json::from_str(&text).unwrap();
        for m in list["messages"].as_array().into_iter().flatten() {
            let (status, text) = send(&sb, "GET", format!("{base}/gmail/v1/users/me/messages/{}?format=full", m["id"].as_str().unwrap()), "text/plain", Vec::new()).await;
            assert_eq!(status, 200, "{text}");
        }
    });
}

/// A GraphQL document: operations and fragments built from Linear's names, nested and spread
/// at random, sometimes broken, sometimes far past the nesting and complexity limits.
fn graphql_document() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![Just("id"), Just("title"), Just("name"), Just("__typename"), Just("nope"), Just("...F0"), Just("...F1"), Just("{"), Just("}")].prop_map(String::from);
    let sel = leaf.prop_recursive(6, 48, 4, |inner| {
        let field = prop_oneof![
            Just("viewer"), Just("issues(first: 50)"), Just("issues(first: $n)"), Just("nodes"), Just("assignee"), Just("team"), Just("teams"), Just("parent"), Just("labels"), Just("... on Query"), Just("... on Issue"),
        ];
        (field, prop::collection::vec(inner, 1..4)).prop_map(|(f, v)| format!("{f} {{ {} }}", v.join(" ")))
    });
    let fragment = |i: usize| (prop_oneof![Just("Query"), Just("Issue"), Just("User")], prop::collection::vec(sel.clone(), 1..3)).prop_map(move |(ty, v)| format!("fragment F{i} on {ty} {{ {} }}", v.join(" ")));
    (prop::collection::vec(sel.clone(), 1..4), proptest::option::of(fragment(0)), proptest::option::of(fragment(1)), 0usize..4, 0usize..60).prop_map(|(ops, f0, f1, kind, n)| {
        let mut d = format!("query Q($n: Int) {{ {} }}", ops.join(" "));
        for f in [f0, f1].into_iter().flatten() {
            d.push('\n');
            d.push_str(&f);
        }
        match kind {
            // Fragments each spreading the next twice.
            0 => {
                d = format!("query {{ ...G0 }}\n");
                for i in 0..n {
                    d.push_str(&format!("fragment G{i} on Query {{ ...G{} ...G{} }}\n", i + 1, i + 1));
                }
                d.push_str(&format!("fragment G{n} on Query {{ viewer {{ id }} }}"));
            }
            // Selections nested past every bound.
            1 => d = format!("{{ {}viewer {{ id }}{} }}", "... on Query { ".repeat(n * 10), " }".repeat(n * 10)),
            _ => {}
        }
        d
    })
}

#[test]
fn graphql_documents_of_any_shape_get_answers_in_linears_shape() {
    graphql_documents_of_any_shape_get_graphql_errors("linear");
}

/// The same documents at GitHub's `/graphql`, on the same engine with GitHub's schema and
/// node limit: the doubling fragments and the deep nesting included.
#[test]
fn graphql_documents_of_any_shape_get_answers_in_githubs_shape() {
    graphql_documents_of_any_shape_get_graphql_errors("github");
}

fn graphql_documents_of_any_shape_get_graphql_errors(twin: &str) {
    block_on(async {
        let server = Server::start().await;
        let sb = server.sandbox(&[twin], None).await;
        let url = format!("{}/graphql", sb.base(twin));
        let mut r = runner(96);
        for _ in 0..cases(96) {
            let doc = graphql_document().new_tree(&mut r).unwrap().current();
            let n = prop_oneof![Just(json!(null)), Just(json!(5)), Just(json!(250)), Just(json!("x")), Just(json!(-1))].new_tree(&mut r).unwrap().current();
            let body = json!({"query": doc, "variables": {"n": n}});
            let started = Instant::now();
            let (status, text) = send(&sb, "POST", url.clone(), "application/json", body.to_string().into_bytes()).await;
            assert!(status < 500, "{twin} answered {status} to {doc:?}: {text}");
            assert!(vendor_shaped("graphql", status, &text), "{twin} answered {status} off its shape to {doc:?}: {text}");
            assert!(started.elapsed() < Duration::from_secs(2), "{twin} answered {doc:?} within the call deadline ({:?})", started.elapsed());
        }
        let (status, text) = send(&sb, "POST", url, "application/json", json!({"query": "{ viewer { id } }"}).to_string().into_bytes()).await;
        assert_eq!(status, 200, "{text}");
    });
}

/// A JSON body nested 100,000 deep must be refused (by the twin's parser), not overflow a
/// stack; the sandbox keeps serving.
#[test]
fn deeply_nested_json_is_refused_not_a_crash() {
    block_on(async {
        let server = Server::start().await;
        let sb = server.sandbox(&["github"], None).await;
        let body = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let resp = sb
            .http
            .post(format!("{}/repos/acme/api/issues", sb.base("github")))
            .bearer_auth(&sb.token)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        assert!(resp.status().as_u16() < 500, "nested JSON answered {}", resp.status());
        let (status, _) = server.api("POST", "/v1/sandboxes", Some(json!({"twins": ["github"], "seed": {"x": serde_json::from_str::<Value>(&format!("{}{}", "[".repeat(100), "]".repeat(100))).unwrap()}}))).await;
        assert!(status == 201 || status == 422, "a deep seed answered {status}");
        let deep = format!("{{\"twins\": [\"github\"], \"seed\": {}1{}}}", "[".repeat(100_000), "]".repeat(100_000));
        let resp = server.http.post(format!("{}/v1/sandboxes", server.url)).header("x-api-key", pome_e2e::API_KEY).header("content-type", "application/json").body(deep).send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 400, "a control-plane body nested past serde's limit is a 400");
        assert_eq!(sb.call("github", "GET", "/repos/acme/api", None).await.status, 200);
    });
}

/// Headers past hyper's buffer (about 400 KB) are refused with 431 on that connection only;
/// a header value that is not UTF-8 reaches the twin as lossy text, not a failure.
#[test]
fn huge_headers_get_431_and_non_utf8_header_values_are_served() {
    block_on(async {
        let server = Server::start().await;
        let sb = server.sandbox(&["github"], None).await;
        let huge = "x".repeat(1 << 20);
        let resp = reqwest::Client::new().get(format!("{}/repos/acme/api", sb.base("github"))).bearer_auth(&sb.token).header("x-huge", huge).send().await;
        match resp {
            Ok(r) => assert_eq!(r.status().as_u16(), 431, "1 MB of headers"),
            // hyper may close the connection before the client finished writing.
            Err(e) => assert!(e.is_request() || e.is_connect() || e.is_body(), "{e}"),
        }
        let latin1 = reqwest::header::HeaderValue::from_bytes(b"caf\xe9").unwrap();
        let resp = sb.http.get(format!("{}/repos/acme/api", sb.base("github"))).bearer_auth(&sb.token).header("x-note", latin1).send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 200);
        assert_eq!(sb.call("github", "GET", "/repos/acme/api", None).await.status, 200, "the server still serves");
    });
}

/// One JSON-RPC message as a stranger might send it to an MCP door: any version, any id,
/// a known or unknown method, params of any shape (tool calls with any name and arguments).
fn jsonrpc_message() -> impl Strategy<Value = Value> {
    let method = prop_oneof![
        Just("initialize".to_string()),
        Just("tools/list".to_string()),
        Just("tools/call".to_string()),
        Just("ping".to_string()),
        Just("notifications/initialized".to_string()),
        Just("resources/list".to_string()),
        Just("prompts/get".to_string()),
        ".{0,24}",
    ];
    let tool = prop_oneof![Just("list_issues"), Just("get_issue"), Just("create_issue"), Just("list_sandboxes"), Just("get_run"), Just("create_sandbox"), Just("")];
    let params = prop_oneof![
        json_value(),
        (tool, json_value()).prop_map(|(name, arguments)| json!({"name": name, "arguments": arguments})),
        json_value().prop_map(|v| json!({"protocolVersion": v, "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "0"}})),
    ];
    let id = prop_oneof![Just(None), any::<i64>().prop_map(|n| Some(json!(n))), ".{0,12}".prop_map(|s| Some(json!(s))), json_value().prop_map(Some)];
    let version = prop_oneof![Just(Some(json!("2.0"))), Just(None), json_value().prop_map(Some)];
    (version, id, method, proptest::option::of(params)).prop_map(|(version, id, method, params)| {
        let mut m = serde_json::Map::new();
        if let Some(v) = version {
            m.insert("jsonrpc".into(), v);
        }
        if let Some(id) = id {
            m.insert("id".into(), id);
        }
        m.insert("method".into(), json!(method));
        if let Some(p) = params {
            m.insert("params".into(), p);
        }
        Value::Object(m)
    })
}

/// What an MCP door answered, as JSON-RPC messages: a JSON body, or the `data:` lines of an
/// event stream. `None` when the answer is neither.
fn jsonrpc_answers(content_type: &str, text: &str) -> Option<Vec<Value>> {
    let one = |s: &str| -> Option<Vec<Value>> {
        match serde_json::from_str::<Value>(s).ok()? {
            Value::Array(a) => Some(a),
            v => Some(vec![v]),
        }
    };
    if content_type.starts_with("text/event-stream") {
        let mut out = Vec::new();
        for data in text.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim).filter(|d| !d.is_empty()) {
            out.extend(one(data)?);
        }
        Some(out)
    } else {
        one(text)
    }
}

/// Any JSON-RPC a stranger sends an MCP door (a twin's, with the agent token; the team's,
/// with its key) — single messages, batches, bodies that are not JSON — gets a bounded
/// answer below 500, and every message in it is JSON-RPC (`result`, or `error` with an
/// integer code and a message). The doors keep serving after.
#[test]
fn mcp_json_rpc_of_any_shape_gets_a_json_rpc_answer_below_500() {
    block_on(async {
        let server = Server::start().await;
        let sb = server.sandbox(&["github", "linear"], None).await;
        let doors = [(format!("{}/mcp", sb.base("github")), sb.token.clone()), (format!("{}/mcp", sb.base("linear")), sb.token.clone()), (format!("{}/mcp", server.url), pome_e2e::API_KEY.to_string())];
        // A fixed seed: whether a run's messages reach JSON-RPC (the assertion below) must
        // not depend on the draw. Few random messages earn a `result` (1 to 7 in 128), and an
        // unseeded run now and then drew none; this seed's run earns 5. POME_FUZZ_CASES still
        // widens it.
        let mut r = TestRunner::new_with_rng(Config { cases: cases(128), failure_persistence: None, ..Config::default() }, TestRng::from_seed(RngAlgorithm::ChaCha, &[3; 32]));
        // What came back, so the run shows it reached the JSON-RPC layer and not only the
        // transport's refusals.
        let (mut results, mut errors, mut statuses) = (0, 0, std::collections::BTreeMap::<u16, u32>::new());
        let protocol = prop_oneof![Just(None), Just(Some("2025-06-18".to_string())), Just(Some("2025-03-26".to_string())), "[ -~]{0,12}".prop_map(Some)];
        for i in 0..cases(128) {
            let (url, token) = &doors[i as usize % doors.len()];
            let body = match i % 8 {
                // A batch of messages.
                0 => Value::Array((0..3).map(|_| jsonrpc_message().new_tree(&mut r).unwrap().current()).collect()).to_string().into_bytes(),
                // Bytes that are not JSON at all.
                1 => prop::collection::vec(any::<u8>(), 0..64).new_tree(&mut r).unwrap().current(),
                _ => jsonrpc_message().new_tree(&mut r).unwrap().current().to_string().into_bytes(),
            };
            let mut req = server.http.post(url).bearer_auth(token).header("content-type", "application/json").header("accept", "application/json, text/event-stream").body(body.clone());
            if let Some(v) = protocol.new_tree(&mut r).unwrap().current() {
                req = req.header("mcp-protocol-version", v);
            }
            let resp = tokio::time::timeout(Duration::from_secs(10), req.send()).await.expect("answered in bounded time").unwrap();
            let status = resp.status().as_u16();
            *statuses.entry(status).or_default() += 1;
            let content_type = resp.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
            let text = tokio::time::timeout(Duration::from_secs(10), resp.text()).await.expect("the answer ends").unwrap();
            let shown = String::from_utf8_lossy(&body);
            assert!(status < 500, "{url} answered {status} to {shown}: {text}");
            assert_ne!(status, 415, "a JSON body is the right media type: {shown} => {text}");
            if text.trim().is_empty() {
                assert!(status == 202 || status >= 400, "an empty answer is an accepted notification or a refusal ({status}) to {shown}");
                continue;
            }
            let Some(messages) = jsonrpc_answers(&content_type, &text) else {
                // Refusals before JSON-RPC (a wrong content type, a version the door does not
                // speak) are plain text from the transport; anything else must be JSON-RPC.
                assert!(status >= 400, "{url} answered {status} with neither JSON nor events to {shown}: {text}");
                continue;
            };
            for m in messages {
                let ok = m["result"].is_object() || (m["error"]["code"].is_i64() && m["error"]["message"].is_string());
                assert!(ok, "{url} answered {status} off JSON-RPC to {shown}: {m}");
                if m["result"].is_object() {
                    results += 1;
                } else {
                    errors += 1;
                }
            }
        }
        eprintln!("MCP doors answered: {statuses:?}; {results} results, {errors} errors");
        assert!(results > 0 && errors > 0, "the messages reached JSON-RPC: {statuses:?}, {results} results, {errors} errors");
        // The doors still serve: a tool call through the agent's door, and the agent's REST.
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
        let resp = server.http.post(&doors[0].0).bearer_auth(&sb.token).header("accept", "application/json, text/event-stream").header("mcp-protocol-version", "2025-06-18").json(&call).send().await.unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(sb.call("github", "GET", "/repos/acme/api", None).await.status, 200);
    });
}
