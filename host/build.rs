//! Embeds the first-party twins (built by `make twins` for wasm32-wasip2) into the `pome`
//! binary, so a single file serves them with no other setup. Missing twins are not an error
//! here: the binary then says at start-up which twins it lacks and how to build them.

use std::path::PathBuf;

const TWINS: &[&str] = &["github", "slack", "stripe", "gmail", "linear"];

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let dir = std::env::var("POME_TWIN_WASM_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| manifest.join("../target/wasm32-wasip2/release"));
    println!("cargo:rerun-if-env-changed=POME_TWIN_WASM_DIR");
    let mut code = String::from("/// First-party twins embedded at build time: (name, component bytes).\npub static EMBEDDED: &[(&str, &[u8])] = &[\n");
    for twin in TWINS {
        let path = dir.join(format!("twin_{twin}.wasm"));
        println!("cargo:rerun-if-changed={}", path.display());
        if path.exists() {
            let path = path.canonicalize().unwrap();
            code.push_str(&format!("    ({twin:?}, include_bytes!({:?})),\n", path.display().to_string()));
        }
    }
    code.push_str("];\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("embedded_twins.rs");
    std::fs::write(out, code).unwrap();
}
