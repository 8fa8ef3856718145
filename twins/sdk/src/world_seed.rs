//! A world written as a seed (contract 0.3.0's `export-seed`):
//! `{"_meta": {"twin": …, "twin_version": …}, "_world": <the world's serde form>}`.
//!
//! It boots exactly the world it was written from, every counter and index included, which a
//! twin's hand-written seed vocabulary rarely can express. Unlike a snapshot it is JSON: people
//! can read and edit it, and it keeps loading across twin versions as long as the world's
//! fields do (a field added with a serde default reads as its default). Every twin gets it
//! from [`crate::Twin::export_seed`]'s default; `init` recognises it before the twin's own seed
//! reader sees the seed.

use serde_json::Value;

use crate::Twin;

/// The key that marks a seed as a written world.
pub const WORLD: &str = "_world";

/// `world` as a seed document.
pub fn write<T: Twin>(world: &T) -> Result<String, String> {
    let meta = serde_json::json!({"twin": T::NAME, "twin_version": T::VERSION});
    // Written straight to text: a large world as a `Value` first would double its memory.
    let body = serde_json::to_string(world).map_err(|e| format!("the {} world cannot be written as JSON: {e}", T::NAME))?;
    Ok(format!("{{\"_meta\":{meta},\"{WORLD}\":{body}}}"))
}

/// The world a seed document holds, when `seed` is one (`None`: an ordinary seed, for the
/// twin's own reader). Errors name the path in the seed.
pub fn read<T: Twin>(seed: &Value) -> Option<Result<T, String>> {
    let doc = seed.as_object()?;
    let world = doc.get(WORLD)?;
    Some((|| {
        if let Some(k) = doc.keys().find(|k| *k != WORLD && *k != "_meta") {
            return Err(format!("{k}: unknown field (a seed holding `{WORLD}` holds only `_meta` besides it)"));
        }
        if let Some(twin) = doc.get("_meta").and_then(|m| m.get("twin")).and_then(Value::as_str)
            && twin != T::NAME
        {
            return Err(format!("_meta.twin: this seed holds a world of the `{twin}` twin, not of `{}`", T::NAME));
        }
        serde_path_to_error::deserialize(world).map_err(|e| {
            let at = e.path().to_string();
            let at = if at == "." { WORLD.to_string() } else { format!("{WORLD}.{at}") };
            format!("{at}: {}", e.into_inner())
        })
    })())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Call, HostError, Response, Router};
    use serde::{Deserialize, Serialize};
    use std::collections::BTreeMap;
    use std::sync::OnceLock;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Shelf {
        next_id: u64,
        books: BTreeMap<u64, String>,
        #[serde(default)]
        added_later: Vec<String>,
    }

    impl Twin for Shelf {
        const NAME: &'static str = "shelf";
        const VERSION: &'static str = "1.0.0";
        fn init(_seed: Option<Value>) -> Result<Self, String> {
            Ok(Shelf { next_id: 1, books: BTreeMap::new(), added_later: Vec::new() })
        }
        fn router() -> &'static Router<Self> {
            static R: OnceLock<Router<Shelf>> = OnceLock::new();
            R.get_or_init(Router::new)
        }
        fn unsupported(_: &Call) -> Response {
            Response::empty(501)
        }
        fn auth_error(_: &Call) -> Response {
            Response::empty(401)
        }
        fn host_error(_: &HostError) -> Response {
            Response::empty(500)
        }
    }

    #[test]
    fn a_written_world_reads_back_as_the_same_world_counters_included() {
        let world = Shelf { next_id: 7, books: [(3, "Dune".into()), (5, "Emma".into())].into(), added_later: vec![] };
        let doc: Value = serde_json::from_str(&write(&world).unwrap()).unwrap();
        assert_eq!(doc["_meta"], serde_json::json!({"twin": "shelf", "twin_version": "1.0.0"}));
        assert_eq!(read::<Shelf>(&doc).unwrap().unwrap(), world);
    }

    #[test]
    fn an_ordinary_seed_is_left_to_the_twin() {
        assert!(read::<Shelf>(&serde_json::json!({"books": []})).is_none());
        assert!(read::<Shelf>(&serde_json::json!([1])).is_none());
    }

    #[test]
    fn a_field_added_since_reads_as_its_default_and_mistakes_name_their_path() {
        let old = serde_json::json!({"_world": {"next_id": 2, "books": {"1": "Dune"}}});
        assert_eq!(read::<Shelf>(&old).unwrap().unwrap().added_later, Vec::<String>::new());
        let bad = serde_json::json!({"_world": {"next_id": "two", "books": {}}});
        let e = read::<Shelf>(&bad).unwrap().unwrap_err();
        assert!(e.starts_with("_world.next_id: invalid type"), "{e}");
        let other = serde_json::json!({"_meta": {"twin": "github"}, "_world": {}});
        assert!(read::<Shelf>(&other).unwrap().unwrap_err().contains("`github` twin"));
        let extra = serde_json::json!({"_world": {}, "repos": []});
        assert!(read::<Shelf>(&extra).unwrap().unwrap_err().starts_with("repos: unknown field"));
    }
}
