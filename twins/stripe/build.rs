//! Stripe's parameter names for each operation the twin serves, from `src/operations.json`,
//! as a static table the twin checks requests against (`known_params.rs` in `OUT_DIR`):
//! every sandbox starts a fresh instance, and none should parse 250 KB of JSON to know
//! that `foo` is not a customer's parameter. Beside it, the event types an endpoint may enable.

use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=src/operations.json");
    let text = std::fs::read_to_string("src/operations.json").expect("src/operations.json is readable");
    let ops: Vec<serde_json::Value> = serde_json::from_str(&text).expect("src/operations.json is a JSON list of operations");
    let mut rows: Vec<(String, Vec<String>)> = ops
        .iter()
        .map(|o| {
            let action = o["action"].as_str().expect("every operation names its action").to_string();
            let mut names: Vec<String> = o["parameters"]
                .as_array()
                .expect("every operation lists its parameters")
                .iter()
                .filter(|p| p["in"] != "path")
                .map(|p| p["name"].as_str().expect("every parameter has a name").to_string())
                .collect();
            names.sort();
            names.dedup();
            (action, names)
        })
        .collect();
    rows.sort();
    let mut out = String::from("/// (action, its query and body parameters), sorted by action and by name.\npub static KNOWN_PARAMS: &[(&str, &[&str])] = &[\n");
    for (action, names) in rows {
        out.push_str(&format!("    ({action:?}, &{names:?}),\n"));
    }
    out.push_str("];\n");
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
}
