//! Stripe's parameter names for each operation the twin serves, from `src/operations.json`,
//! as a static table the twin checks requests against (`known_params.rs` in `OUT_DIR`):
//! every sandbox starts a fresh instance, and none should parse 250 KB of JSON to know
//! that `foo` is not a customer's parameter.

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
    let dir = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    std::fs::write(Path::new(&dir).join("known_params.rs"), out).expect("OUT_DIR is writable");
}
