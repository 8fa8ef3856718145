//! Strict seed reading. A seed is JSON a task author wrote by hand, so every mistake in it is
//! refused with the path it is at (`repositories[0].issues[2].state: "weird" is not one of
//! "open", "closed"`), and a field the twin does not know is a mistake, not something to
//! ignore: a typo like `colour` would otherwise silently seed a different world.
//!
//! ```
//! use pome_twin_sdk::{json, seed::Obj};
//!
//! let v = json!({"name": "api", "private": true});
//! let o = Obj::new(&v, "repositories[0]", &["name", "private", "topics"]).unwrap();
//! assert_eq!(o.nonempty_str("name").unwrap(), "api");
//! assert_eq!(o.bool("private").unwrap(), Some(true));
//! assert!(o.strs("topics").unwrap().is_empty());
//!
//! let bad = json!({"name": "api", "colour": 1});
//! let e = Obj::new(&bad, "repositories[0]", &["name"]).err().unwrap();
//! assert!(e.starts_with("repositories[0].colour: unknown field"));
//! ```
//!
//! A `null` reads as an absent field everywhere.

use serde_json::{Map, Value};

/// One JSON object of a seed, read at `path` (`""` for the seed itself): typed getters whose
/// errors name the field's path.
#[derive(Debug, Clone)]
pub struct Obj<'a> {
    path: String,
    map: &'a Map<String, Value>,
}

impl<'a> Obj<'a> {
    /// Read `v` as an object whose every key is one of `fields`.
    pub fn new(v: &'a Value, path: &str, fields: &[&str]) -> Result<Obj<'a>, String> {
        let Value::Object(map) = v else {
            return Err(format!("{}: expected an object, found {}", show(path), kind(v)));
        };
        let o = Obj { path: path.to_string(), map };
        if let Some(k) = map.keys().find(|k| !fields.contains(&k.as_str())) {
            return Err(format!("{}: unknown field (expected one of: {})", o.at(k), fields.join(", ")));
        }
        Ok(o)
    }

    /// Where this object is in the seed.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The path of field `key`.
    pub fn at(&self, key: &str) -> String {
        if self.path.is_empty() { key.to_string() } else { format!("{}.{key}", self.path) }
    }

    /// The raw value of `key`; `None` when absent or `null`.
    pub fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    pub fn str(&self, key: &str) -> Result<Option<String>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(format!("{}: expected a string, found {}", self.at(key), kind(other))),
        }
    }

    /// A string that must be there (it may be empty).
    pub fn req_str(&self, key: &str) -> Result<String, String> {
        self.str(key)?.ok_or_else(|| format!("{}: required string is missing", self.at(key)))
    }

    /// A string that must be there and hold more than white space: names, titles.
    pub fn nonempty_str(&self, key: &str) -> Result<String, String> {
        match self.str(key)? {
            Some(s) if !s.trim().is_empty() => Ok(s),
            _ => Err(format!("{}: required (a non-empty string)", self.at(key))),
        }
    }

    pub fn bool(&self, key: &str) -> Result<Option<bool>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(format!("{}: expected true or false, found {}", self.at(key), kind(other))),
        }
    }

    /// A boolean that is `false` when absent.
    pub fn flag(&self, key: &str) -> Result<bool, String> {
        Ok(self.bool(key)?.unwrap_or(false))
    }

    pub fn int(&self, key: &str) -> Result<Option<i64>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v.as_i64().map(Some).ok_or_else(|| format!("{}: expected an integer, found {}", self.at(key), kind(v))),
        }
    }

    /// A whole number above zero: issue numbers, counts.
    pub fn positive(&self, key: &str) -> Result<Option<u64>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v.as_u64().filter(|n| *n > 0).map(Some).ok_or_else(|| format!("{}: expected a positive integer", self.at(key))),
        }
    }

    /// An array (empty when absent).
    pub fn arr(&self, key: &str) -> Result<&'a [Value], String> {
        match self.get(key) {
            None => Ok(&[]),
            Some(Value::Array(a)) => Ok(a),
            Some(other) => Err(format!("{}: expected an array, found {}", self.at(key), kind(other))),
        }
    }

    /// An array's items, each with its path (`labels[2]`).
    pub fn items(&self, key: &str) -> Result<Vec<(String, &'a Value)>, String> {
        let path = self.at(key);
        Ok(self.arr(key)?.iter().enumerate().map(|(i, v)| (format!("{path}[{i}]"), v)).collect())
    }

    /// An array of strings (empty when absent).
    pub fn strs(&self, key: &str) -> Result<Vec<String>, String> {
        self.items(key)?
            .into_iter()
            .map(|(p, v)| v.as_str().map(String::from).ok_or_else(|| format!("{p}: expected a string, found {}", kind(v))))
            .collect()
    }

    /// One of `allowed` (any case, answered in lower case), or `default` when absent.
    pub fn one_of(&self, key: &str, allowed: &[&str], default: &str) -> Result<String, String> {
        match self.str(key)? {
            None => Ok(default.to_string()),
            Some(s) if allowed.iter().any(|a| a.eq_ignore_ascii_case(&s)) => Ok(s.to_ascii_lowercase()),
            Some(s) => Err(format!(
                "{}: {s:?} is not one of {}",
                self.at(key),
                allowed.iter().map(|a| format!("{a:?}")).collect::<Vec<_>>().join(", ")
            )),
        }
    }
}

/// A path for an error message: the seed itself is `seed`.
pub fn show(path: &str) -> &str {
    if path.is_empty() { "seed" } else { path }
}

/// What a JSON value is, for "expected …, found …".
pub fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn errors_name_the_field_and_what_was_found() {
        let v = json!({"name": 3, "tags": ["a", 1], "n": -1, "open": "yes", "state": "weird", "when": 1.5});
        let o = Obj::new(&v, "things[1]", &["name", "tags", "n", "open", "state", "when"]).unwrap();
        assert_eq!(o.str("name").unwrap_err(), "things[1].name: expected a string, found a number");
        assert_eq!(o.strs("tags").unwrap_err(), "things[1].tags[1]: expected a string, found a number");
        assert_eq!(o.positive("n").unwrap_err(), "things[1].n: expected a positive integer");
        assert_eq!(o.bool("open").unwrap_err(), "things[1].open: expected true or false, found a string");
        assert_eq!(o.one_of("state", &["open", "closed"], "open").unwrap_err(), "things[1].state: \"weird\" is not one of \"open\", \"closed\"");
        assert_eq!(o.int("when").unwrap_err(), "things[1].when: expected an integer, found a number");
        assert_eq!(o.req_str("missing").unwrap_err(), "things[1].missing: required string is missing");
        assert_eq!(o.nonempty_str("missing").unwrap_err(), "things[1].missing: required (a non-empty string)");
    }

    #[test]
    fn unknown_fields_and_non_objects_are_refused() {
        let e = Obj::new(&json!({"a": 1, "b": 2}), "", &["a"]).unwrap_err();
        assert_eq!(e, "b: unknown field (expected one of: a)");
        assert_eq!(Obj::new(&json!([]), "", &[]).unwrap_err(), "seed: expected an object, found an array");
        assert_eq!(Obj::new(&json!("x"), "team", &[]).unwrap_err(), "team: expected an object, found a string");
    }

    #[test]
    fn absent_and_null_fields_read_as_defaults() {
        let v = json!({"a": null});
        let o = Obj::new(&v, "", &["a", "b"]).unwrap();
        assert_eq!(o.str("a").unwrap(), None);
        assert!(!o.flag("b").unwrap());
        assert!(o.arr("a").unwrap().is_empty() && o.strs("b").unwrap().is_empty());
        assert_eq!(o.one_of("a", &["x"], "x").unwrap(), "x");
        assert_eq!(o.items("b").unwrap().len(), 0);
        let v = json!({"list": [{"x": 1}]});
        let o = Obj::new(&v, "top", &["list"]).unwrap();
        assert_eq!(o.items("list").unwrap()[0].0, "top.list[0]");
    }
}
