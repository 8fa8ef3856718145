//! A state diff: every path where a twin's final state differs from its seed state, in the
//! same path syntax as grading evidence (`repositories[0].pull_requests[0].merged`), so a run
//! shows what the agent changed next to the verdict that judged it.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// One path that differs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    pub path: String,
    pub before: Value,
    pub after: Value,
}

/// At most this many entries per twin; a run that rewrote the world says so rather than
/// carrying a diff bigger than its states.
pub const MAX_ENTRIES: usize = 500;

/// `[{path, before, after}]`: objects compared by key, arrays by position; an absent side is
/// null.
pub fn state_diff(before: &Value, after: &Value) -> Vec<Change> {
    let mut out = Vec::new();
    walk("", before, after, &mut out);
    if out.len() > MAX_ENTRIES {
        let n = out.len();
        out.truncate(MAX_ENTRIES);
        out.push(Change { path: "…".into(), before: Value::Null, after: json!(format!("{} more changes", n - MAX_ENTRIES)) });
    }
    out
}

fn join(base: &str, key: &str) -> String {
    let plain = !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    match (base.is_empty(), plain) {
        (true, true) => key.to_string(),
        (false, true) => format!("{base}.{key}"),
        (_, false) => format!("{base}[{}]", json!(key)),
    }
}

fn walk(path: &str, a: &Value, b: &Value, out: &mut Vec<Change>) {
    if a == b || out.len() > MAX_ENTRIES {
        return;
    }
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, va) in x {
                walk(&join(path, k), va, y.get(k).unwrap_or(&Value::Null), out);
            }
            for (k, vb) in y.iter().filter(|(k, _)| !x.contains_key(*k)) {
                walk(&join(path, k), &Value::Null, vb, out);
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            for i in 0..x.len().max(y.len()) {
                walk(&format!("{path}[{i}]"), x.get(i).unwrap_or(&Value::Null), y.get(i).unwrap_or(&Value::Null), out);
            }
        }
        _ => out.push(Change { path: if path.is_empty() { "$".into() } else { path.to_string() }, before: a.clone(), after: b.clone() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_what_changed() {
        let a = json!({"repositories": [{"labels": ["bug"], "merged": false}], "x": 1, "files": {}});
        let b = json!({"repositories": [{"labels": ["bug", "p1"], "merged": true}], "x": 1, "files": {"a.md": "hi"}});
        let d: Vec<Value> = state_diff(&a, &b).into_iter().map(|c| serde_json::to_value(c).unwrap()).collect();
        assert_eq!(d, vec![
            json!({"path": "repositories[0].labels[1]", "before": null, "after": "p1"}),
            json!({"path": "repositories[0].merged", "before": false, "after": true}),
            json!({"path": "files[\"a.md\"]", "before": null, "after": "hi"}),
        ]);
        assert!(state_diff(&a, &a).is_empty());
    }
}
