//! `/v1/openapi.json` (#38 item 5): it is served without a key, it is OpenAPI 3.1, every
//! route the control plane mounts is in it (and nothing it describes is missing from the
//! router), and the harness's check of every answer against it catches a wrong one. Every
//! other suite's `/v1` answers are validated against it as they arrive (`harness::openapi`).

use std::collections::BTreeSet;

use pome_e2e::{Server, openapi};
use serde_json::{Value, json};

const METHODS: [&str; 5] = ["get", "post", "put", "patch", "delete"];

/// Every `(METHOD, path template)` the document describes.
fn described() -> BTreeSet<(String, String)> {
    let mut ops = BTreeSet::new();
    for (path, item) in openapi::document()["paths"].as_object().unwrap() {
        for m in METHODS {
            if item.get(m).is_some() {
                ops.insert((m.to_uppercase(), path.clone()));
            }
        }
    }
    ops
}

#[tokio::test]
async fn served_without_a_key_as_generated() {
    let server = Server::start().await;
    let r = server.http.get(format!("{}/v1/openapi.json", server.url)).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert!(r.headers()["content-type"].to_str().unwrap().starts_with("application/json"));
    let served: Value = r.json().await.unwrap();
    assert_eq!(&served, openapi::document(), "the served document is the one generated from the routes");
    // And it describes itself (checked by the harness on the way in).
    let (status, _) = server.api_as("pme_not_a_key", "GET", "/v1/openapi.json", None).await;
    assert_eq!(status, 200);
}

#[test]
fn the_document_is_openapi_3_1() {
    let doc = openapi::document();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1."), "{}", doc["openapi"]);
    assert!(doc["info"]["title"].is_string() && doc["info"]["version"].is_string());
    let schemes = doc["components"]["securitySchemes"].as_object().unwrap();
    assert_eq!(schemes["ApiKey"], json!({"type": "apiKey", "in": "header", "name": "X-API-KEY", "description": schemes["ApiKey"]["description"]}));
    assert_eq!(schemes["Bearer"]["type"], "http");
    assert_eq!(schemes["Bearer"]["scheme"], "bearer");

    let mut ids = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        assert!(path.starts_with("/v1/"), "{path} is outside /v1");
        let templated: BTreeSet<&str> = path.split('/').filter_map(|s| s.strip_prefix('{')?.strip_suffix('}')).collect();
        for m in METHODS {
            let Some(op) = item.get(m) else { continue };
            let where_ = format!("{} {path}", m.to_uppercase());
            let id = op["operationId"].as_str().unwrap_or_else(|| panic!("{where_} has no operationId"));
            assert!(ids.insert(id.to_string()), "operationId {id} is used twice");
            // Path parameters: exactly the template's, each required.
            let params = op["parameters"].as_array().cloned().unwrap_or_default();
            let in_path: BTreeSet<&str> = params.iter().filter(|p| p["in"] == "path").map(|p| p["name"].as_str().unwrap()).collect();
            assert_eq!(in_path, templated, "{where_}: path parameters");
            for p in &params {
                assert!(["path", "query", "header", "cookie"].contains(&p["in"].as_str().unwrap()), "{where_}: {p}");
                assert!(p["in"] != "path" || p["required"] == true, "{where_}: path parameter {} must be required", p["name"]);
                assert!(p["schema"].is_object() || p["schema"].is_boolean(), "{where_}: parameter {} has no schema", p["name"]);
            }
            // At least one success, and every response with a description.
            let responses = op["responses"].as_object().unwrap_or_else(|| panic!("{where_} has no responses"));
            assert!(responses.keys().any(|k| k.starts_with('2')), "{where_} describes no success");
            for (code, r) in responses {
                assert!(code == "default" || (code.len() == 3 && code.parse::<u16>().is_ok_and(|c| (100..600).contains(&c))), "{where_}: status {code}");
                assert!(r["description"].is_string(), "{where_} {code}: a response needs a description");
            }
            // Security names only declared schemes; only the document itself is public.
            let security = op["security"].as_array().cloned().unwrap_or_default();
            for req in &security {
                for name in req.as_object().unwrap().keys() {
                    assert!(schemes.contains_key(name), "{where_}: unknown security scheme {name}");
                }
            }
            assert_eq!(security.is_empty(), path == "/v1/openapi.json", "{where_}: security {security:?}");
        }
    }

    // Every `$ref` resolves, and every schema compiles as JSON Schema 2020-12 (OpenAPI 3.1's
    // dialect).
    fn refs<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(r)) = m.get("$ref") {
                    out.push(r);
                }
                m.values().for_each(|v| refs(v, out));
            }
            Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }
    let mut all = Vec::new();
    refs(doc, &mut all);
    assert!(!all.is_empty());
    for r in all {
        assert!(r.starts_with("#/") && doc.pointer(&r[1..]).is_some(), "$ref {r} resolves to nothing");
    }
    for (name, schema) in doc["components"]["schemas"].as_object().unwrap() {
        let root = json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "allOf": [schema], "components": doc["components"]});
        assert!(jsonschema::meta::is_valid(&root), "components.schemas.{name} is not a valid JSON Schema");
        jsonschema::draft202012::new(&root).unwrap_or_else(|e| panic!("components.schemas.{name} does not compile: {e}"));
    }
}

/// Described ⇒ mounted: each described operation reaches its handler (a keyed one refuses
/// a request without a key with 401, not the router's 404), and a described path answers
/// the router's "does not take that method" for every method it does not describe.
#[tokio::test]
async fn every_described_operation_is_mounted() {
    let server = Server::start().await;
    let ops = described();
    assert!(ops.len() >= 39, "{} operations described", ops.len());
    for (method, template) in &ops {
        let path = template.replace("{id}", "ses_nonexistent");
        let r = server.http.request(method.parse().unwrap(), format!("{}{path}", server.url)).send().await.unwrap();
        let want = if template == "/v1/openapi.json" { 200 } else { 401 };
        assert_eq!(r.status().as_u16(), want, "{method} {template} is described but its handler did not answer");
    }
    let paths: BTreeSet<&String> = ops.iter().map(|(_, p)| p).collect();
    for template in paths {
        let path = template.replace("{id}", "ses_nonexistent");
        for m in METHODS {
            if ops.contains(&(m.to_uppercase(), template.clone())) {
                continue;
            }
            let r = server.http.request(m.to_uppercase().parse().unwrap(), format!("{}{path}", server.url)).header("x-api-key", pome_e2e::API_KEY).send().await.unwrap();
            let status = r.status().as_u16();
            let body: Value = r.json().await.unwrap_or(Value::Null);
            assert_eq!((status, body["error"]["message"].as_str()), (404, Some("this route does not take that method")), "{m} {template} is mounted but not described");
        }
    }
}

/// Mounted ⇒ described: the control plane's routes are built in `api.rs` with `aide`'s
/// `api_route` (mounting and describing in one call); a route mounted there with plain
/// `route`, or a `/v1` route mounted anywhere else, would be served undescribed, so this
/// reads the source and names it. (The harness also fails any `/v1` answer from a route the
/// document does not have, other than the router's 404.)
#[test]
fn no_route_is_mounted_undescribed() {
    let src = pome_e2e::workspace().join("host/server/src");
    let api = std::fs::read_to_string(src.join("api.rs")).unwrap();
    for undescribed in [".route(", ".route_service(", ".nest_service(", ".merge(", ".route_with_tsr("] {
        assert!(!api.contains(undescribed), "api.rs mounts a route with `{undescribed}`, which /v1/openapi.json would not describe; use `api_route`");
    }
    let mut stack = vec![src];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") && !path.ends_with("api.rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                for needle in [".route(\"/v1", ".nest(\"/v1", ".route_service(\"/v1", ".nest_service(\"/v1"] {
                    assert!(!text.contains(needle), "{} mounts a /v1 route outside api.rs (`{needle}`), undescribed", path.display());
                }
            }
        }
    }
}

/// The harness's check is not vacuous: answers that break the document are caught.
#[test]
fn a_wrong_answer_is_caught() {
    let json = Some("application/json");
    let error = r#"{"error": {"type": "not_found", "message": "no sandbox ses_x in your team", "request_id": "req_1"}}"#;
    assert_eq!(openapi::check("GET", "/v1/sandboxes/ses_x", 404, json, error), Ok(()));
    assert_eq!(openapi::check("GET", "/v1/usage?x=1", 200, json, r#"{"sessions_used": 1, "sessions_quota": 10, "sessions_remaining": 9}"#), Ok(()));
    // A field of the wrong type, a missing one, an error type that does not exist.
    assert!(openapi::check("GET", "/v1/usage", 200, json, r#"{"sessions_used": "1", "sessions_quota": 10, "sessions_remaining": 9}"#).is_err());
    assert!(openapi::check("GET", "/v1/usage", 200, json, r#"{"sessions_used": 1, "sessions_quota": 10}"#).is_err());
    assert!(openapi::check("GET", "/v1/sandboxes/ses_x", 404, json, r#"{"error": {"type": "oops", "message": "m"}}"#).is_err());
    // A success status the operation does not have, a body in another media type.
    assert!(openapi::check("POST", "/v1/keys", 200, json, r#"{"id": "k", "key": "pme_x", "prefix": "pme_x", "object": "api_key"}"#).is_err());
    assert!(openapi::check("GET", "/v1/usage", 200, Some("text/plain"), "1").is_err());
    assert_eq!(openapi::check("GET", "/v1/runs/run_x/report", 200, Some("text/markdown; charset=utf-8"), "# Run run_x"), Ok(()));
    assert!(openapi::check("GET", "/v1/runs/run_x/report", 200, json, "{}").is_err());
    // A route that is mounted but not described answers something other than the router's 404.
    assert!(openapi::check("GET", "/v1/undescribed", 200, json, "{}").is_err());
    assert!(openapi::check("PUT", "/v1/usage", 200, json, "{}").is_err());
    assert_eq!(openapi::check("GET", "/v1/undescribed", 404, json, error), Ok(()));
    // Both spellings, and the literal segment preferred over `{id}`.
    assert_eq!(openapi::operation("GET", "/v1/sessions/ses_x").unwrap().0, "/v1/sessions/{id}");
    assert_eq!(openapi::operation("POST", "/v1/tasks/validate").unwrap().0, "/v1/tasks/validate");
    assert_eq!(openapi::operation("GET", "/v1/tasks/t1").unwrap().0, "/v1/tasks/{id}");
}
