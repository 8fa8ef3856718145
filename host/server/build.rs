//! Embeds the first-party twins (built by `make twins` for wasm32-wasip2) into the `pome`
//! binary, so a single file serves them with no other setup. The twins are discovered, not
//! listed: every crate under `twins/` whose library is a `cdylib` is one, and its component
//! is `<target>/wasm32-wasip2/release/<crate name with _>.wasm`. A twin that is not built is
//! not an error here: the binary serves the others and `pome serve` logs which it has.

use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let twins_dir = manifest.join("../../twins");
    let wasm_dir = std::env::var("POME_TWIN_WASM_DIR").map(PathBuf::from).unwrap_or_else(|_| {
        // Respect CARGO_TARGET_DIR so a build into another target directory embeds the
        // twins built there.
        let target = std::env::var("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|_| manifest.join("../../target"));
        target.join("wasm32-wasip2/release")
    });
    println!("cargo:rerun-if-env-changed=POME_TWIN_WASM_DIR");
    println!("cargo:rerun-if-env-changed=CARGO_TARGET_DIR");
    println!("cargo:rerun-if-changed={}", twins_dir.display());
    let mut code = String::from("/// First-party twins embedded at build time: (crate, component bytes).\npub static EMBEDDED: &[(&str, &[u8])] = &[\n");
    for krate in twin_crates(&twins_dir) {
        let path = wasm_dir.join(format!("{}.wasm", krate.replace('-', "_")));
        println!("cargo:rerun-if-changed={}", path.display());
        if path.exists() {
            let path = path.canonicalize().unwrap();
            code.push_str(&format!("    ({krate:?}, include_bytes!({:?})),\n", path.display().to_string()));
        }
    }
    code.push_str("];\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("embedded_twins.rs");
    std::fs::write(out, code).unwrap();
}

/// Package names of the crates under `dir` that build a `cdylib`, sorted.
fn twin_crates(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let Ok(manifest) = std::fs::read_to_string(entry.path().join("Cargo.toml")) else { continue };
        if !manifest.contains("cdylib") {
            continue;
        }
        let name = manifest
            .lines()
            .filter_map(|l| l.trim().strip_prefix("name"))
            .filter_map(|l| l.trim().strip_prefix('='))
            .map(|v| v.trim().trim_matches('"').to_string())
            .next();
        out.extend(name);
    }
    out.sort();
    out
}
