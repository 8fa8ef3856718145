//! Text-level handling of Linear's SDL, shared by the build script (which compiles the schema
//! into tables) and the crate (whose tests compare against the whole schema).

/// The SDL without its `"""` block-string descriptions.
pub fn strip_descriptions(text: &str) -> String {
    let mut out = String::with_capacity(text.len() / 3);
    let mut rest = text;
    while let Some(i) = rest.find("\"\"\"") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 3..];
        match after.find("\"\"\"") {
            Some(j) => rest = after[j + 3..].trim_start_matches([' ', '\n', '\r', '\t']),
            None => rest = "",
        }
    }
    out.push_str(rest);
    out
}
