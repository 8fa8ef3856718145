//! Text-level handling of Linear's SDL, shared by the build script (which compiles the schema
//! into tables) and the crate (whose tests compare against the whole schema, and whose
//! lookups hash names as the tables were built).

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

/// The hash type names are found by in the tables: the length, then the bytes eight at a
/// time (a few multiplications for a name, where a byte-at-a-time hash took one per byte).
pub fn name_hash(name: &str) -> u64 {
    let mut h = (name.len() as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    for chunk in name.as_bytes().chunks(8) {
        let mut word = [0u8; 8];
        word[..chunk.len()].copy_from_slice(chunk);
        h = (h ^ u64::from_le_bytes(word)).wrapping_mul(0xff51_afd7_ed55_8ccd).rotate_left(29);
    }
    h ^ (h >> 31)
}
