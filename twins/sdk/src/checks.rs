//! Small readers for deciding checks over a world's JSON export (see [`crate::Twin::evaluate_check`]):
//! checks read JSON, never a twin's own types, because runs are regraded offline from stored
//! state. And [`golden`], the driver of a twin's golden-file test.

use crate::Value;

/// The items of a JSON array, or none when it is anything else.
pub fn arr(v: &Value) -> &[Value] {
    v.as_array().map(Vec::as_slice).unwrap_or(&[])
}

/// The strings of a JSON array, skipping anything else.
pub fn strings(v: &Value) -> Vec<String> {
    arr(v).iter().filter_map(|x| x.as_str().map(String::from)).collect()
}

/// Whether `hay` contains `needle`, ignoring case: how criteria quote text.
pub fn contains_text(hay: &str, needle: &str) -> bool {
    hay.to_lowercase().contains(&needle.to_lowercase())
}

/// Golden files: each holds, for one task, its seeded world, worlds after an agent worked on
/// it, and the decision expected for each criterion in each world (`outcomes[]`: `sentence`,
/// `world`, `holds`, `reason`, `evidence`, or `error`). A twin's test runs them through its
/// own checks, so a change in how a check decides is a test failure.
pub mod golden {
    use std::path::Path;

    use crate::{CheckWorld, Evidence, Twin, Value};

    /// How many files and outcomes were decided, and how many of those held.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct Tally {
        pub files: usize,
        pub decided: usize,
        pub held: usize,
    }

    /// Decide every outcome of every golden file in `dir` with `T`'s checks, panicking at the
    /// first that differs from the file.
    pub fn assert_decided_as_recorded<T: Twin>(dir: &Path) -> Tally {
        let mut files: Vec<_> = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())).map(|e| e.unwrap().path()).collect();
        files.sort();
        let checks = T::checks();
        let mut tally = Tally { files: files.len(), decided: 0, held: 0 };
        for f in &files {
            let g: Value = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
            for o in g["outcomes"].as_array().unwrap_or_else(|| panic!("{}: no outcomes", f.display())) {
                let sentence = o["sentence"].as_str().unwrap();
                let decl = checks.iter().find(|c| c.fits(sentence)).unwrap_or_else(|| panic!("{}: {sentence:?} fits no check", f.display()));
                let world = CheckWorld { seed: &g["seed"], state: &g[o["world"].as_str().unwrap()], tape: &[] };
                let got = T::evaluate_check(&decl.id, &decl.bind(sentence).unwrap(), &world);
                let at = format!("{} ({} world): {sentence:?}", f.display(), o["world"]);
                match got {
                    Ok(got) => {
                        assert!(o["error"].is_null(), "{at}: the recorded decision is an error ({}), the twin decided {got:?}", o["error"]);
                        assert_eq!(got.holds, o["holds"].as_bool().unwrap(), "{at}: {}", got.reason);
                        assert_eq!(got.reason, o["reason"].as_str().unwrap(), "{at}");
                        assert_eq!(got.evidence, Evidence::state(o["evidence"].as_str().unwrap()), "{at}");
                        tally.held += got.holds as usize;
                    }
                    Err(e) => assert!(!o["error"].is_null(), "{at}: the twin errored ({e}), the recorded decision is {o}"),
                }
                tally.decided += 1;
            }
        }
        tally
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json;

    #[test]
    fn readers_forgive_what_is_not_there() {
        assert!(arr(&json!(null)).is_empty());
        assert_eq!(strings(&json!(["a", 1, "b"])), ["a", "b"]);
        assert!(contains_text("Fix the Login bug", "login"));
    }
}
