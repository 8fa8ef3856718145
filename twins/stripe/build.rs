//! Stripe's description of the operations the twin serves, as static tables in `OUT_DIR`:
//! every sandbox starts a fresh instance, and none should parse JSON to know that `foo` is
//! not a customer's parameter. `param_schemas.rs` (from `src/param_schemas.json`) holds every
//! operation's parameters at every depth, which `src/params.rs` checks requests against;
//! `known_params.rs` (from `src/operations.json`) the event types an endpoint may enable.

use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=src/operations.json");
    let text = std::fs::read_to_string("src/operations.json").expect("src/operations.json is readable");
    let ops: Vec<serde_json::Value> = serde_json::from_str(&text).expect("src/operations.json is a JSON list of operations");
    let mut out = String::new();
    // The event types an endpoint may enable, as Stripe's description enumerates them.
    let events = ops
        .iter()
        .find(|o| o["action"] == "webhook_endpoints.create")
        .and_then(|o| o["parameters"].as_array()?.iter().find(|p| p["name"] == "enabled_events"))
        .and_then(|p| p["enum"].as_array())
        .expect("webhook_endpoints.create enumerates its enabled_events");
    let mut events: Vec<&str> = events.iter().map(|e| e.as_str().expect("event types are strings")).collect();
    events.sort();
    out.push_str(&format!("/// The event types a webhook endpoint may enable, sorted.\npub static EVENT_TYPES: &[&str] = &{events:?};\n"));
    let dir = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    std::fs::write(Path::new(&dir).join("known_params.rs"), out).expect("OUT_DIR is writable");
    std::fs::write(Path::new(&dir).join("param_schemas.rs"), param_schemas()).expect("OUT_DIR is writable");
}

/// `src/param_schemas.json` (written by `scripts/operations.py`) as static tables: each
/// operation's parameters at every depth, as [`Shape`] nodes that refer to each other by index.
fn param_schemas() -> String {
    println!("cargo:rerun-if-changed=src/param_schemas.json");
    let text = std::fs::read_to_string("src/param_schemas.json").expect("src/param_schemas.json is readable");
    let v: serde_json::Value = serde_json::from_str(&text).expect("src/param_schemas.json is JSON");
    let nodes = v["nodes"].as_array().expect("param_schemas.json lists its nodes");
    let index = |n: &serde_json::Value| n.as_u64().expect("a node index") as u16;
    let mut out = String::from("/// Every node of the operations' parameter schemas.\npub static NODES: &[Shape] = &[\n");
    for n in nodes {
        let row = match n[0].as_str().expect("a node kind") {
            "s" => {
                let values: Vec<&str> = n[1].as_array().expect("a string's enum").iter().map(|e| e.as_str().expect("enum values are strings")).collect();
                format!("Shape::Str(&{values:?})")
            }
            "i" => "Shape::Int".into(),
            "n" => "Shape::Num".into(),
            "b" => "Shape::Bool".into(),
            "x" => "Shape::Any".into(),
            "a" => format!("Shape::Array({})", index(&n[1])),
            "u" => format!("Shape::OneOf(&{:?})", n[1].as_array().expect("alternatives").iter().map(index).collect::<Vec<_>>()),
            "o" => {
                let mut fields: Vec<(String, u16)> = n[1].as_array().expect("a hash's fields").iter().map(|f| (f[0].as_str().expect("a field name").to_string(), index(&f[1]))).collect();
                fields.sort();
                let extra = n[2].as_i64().expect("a hash's other keys");
                let extra = if extra < 0 { "None".to_string() } else { format!("Some({extra})") };
                let required: Vec<&str> = n[3].as_array().expect("a hash's required names").iter().map(|r| r.as_str().expect("a required name")).collect();
                format!("Shape::Hash(&{fields:?}, {extra}, &{required:?})")
            }
            k => panic!("unknown node kind {k} in src/param_schemas.json"),
        };
        out.push_str(&format!("    {row},\n"));
    }
    out.push_str("];\n/// (action, the node of its parameters), sorted by action.\npub static OPERATIONS: &[(&str, u16)] = &[\n");
    let ops = v["operations"].as_object().expect("param_schemas.json maps operations to nodes");
    let mut rows: Vec<(&String, u16)> = ops.iter().map(|(a, n)| (a, index(n))).collect();
    rows.sort();
    for (a, n) in rows {
        out.push_str(&format!("    ({a:?}, {n}),\n"));
    }
    out.push_str("];\n");
    out
}
