//! Method arguments. Slack takes every argument from the query string, a form body or a JSON
//! body alike, and clients mix the forms: slack_sdk sends lists comma-joined and objects as
//! JSON strings in forms, but real arrays and booleans in JSON bodies. These readers accept
//! each spelling.

use serde_json::{Map, Value};

use crate::{SlackError, fail};

pub struct Args(pub Map<String, Value>);

/// The text fields of a `multipart/form-data` body (curl's `-F`), which Slack accepts for any
/// method. File parts are skipped: the current upload flow sends bytes elsewhere.
pub fn multipart_fields(content_type: &str, body: &[u8]) -> Option<Map<String, Value>> {
    if !content_type.to_ascii_lowercase().starts_with("multipart/form-data") {
        return None;
    }
    let boundary = content_type.split(';').map(str::trim).find_map(|p| p.strip_prefix("boundary="))?;
    let delim = format!("--{}", boundary.trim_matches('"'));
    let text = String::from_utf8_lossy(body);
    let mut out = Map::new();
    for part in text.split(delim.as_str()).skip(1) {
        if part.starts_with("--") {
            break;
        }
        let Some((head, value)) = part.split_once("\r\n\r\n") else { continue };
        let name = head
            .split(';')
            .map(str::trim)
            .find_map(|p| p.strip_prefix("name="))
            .map(|n| n.split(['\r', '\n']).next().unwrap_or(n).trim_matches('"').to_string());
        let Some(name) = name else { continue };
        if head.contains("filename=") {
            continue;
        }
        let value = value.strip_suffix("\r\n").unwrap_or(value);
        out.insert(name, Value::String(value.to_string()));
    }
    Some(out)
}

impl Args {
    /// A scalar argument as a string; absent, null and empty are all `None`.
    pub fn str(&self, key: &str) -> Option<String> {
        match self.0.get(key)? {
            Value::String(s) if s.is_empty() => None,
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            Value::Null => None,
            other => Some(other.to_string()),
        }
    }

    /// A required argument; `code` is the error Slack gives when it is missing.
    pub fn req(&self, key: &str, code: &str) -> Result<String, SlackError> {
        self.str(key).ok_or_else(|| fail(code))
    }

    pub fn bool(&self, key: &str) -> Option<bool> {
        match self.0.get(key)? {
            Value::Bool(b) => Some(*b),
            Value::Number(n) => Some(n.as_i64() != Some(0)),
            Value::String(s) => match s.to_ascii_lowercase().as_str() {
                "true" | "1" | "yes" => Some(true),
                "false" | "0" | "no" | "" => Some(false),
                _ => None,
            },
            _ => None,
        }
    }

    pub fn flag(&self, key: &str) -> bool {
        self.bool(key).unwrap_or(false)
    }

    pub fn int(&self, key: &str) -> Option<i64> {
        match self.0.get(key)? {
            Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)),
            Value::String(s) => {
                let s = s.trim();
                s.parse::<i64>().ok().or_else(|| s.parse::<f64>().ok().map(|f| f as i64))
            }
            _ => None,
        }
    }

    /// A list: a JSON array, or a comma-separated string.
    pub fn list(&self, key: &str) -> Vec<String> {
        match self.0.get(key) {
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(|v| match v {
                    Value::String(s) => Some(s.trim().to_string()),
                    Value::Null => None,
                    other => Some(other.to_string()),
                })
                .filter(|s| !s.is_empty())
                .collect(),
            Some(Value::String(s)) => {
                let t = s.trim();
                if t.starts_with('[')
                    && let Ok(Value::Array(a)) = serde_json::from_str::<Value>(t) {
                        return Args(Map::from_iter([(key.to_string(), Value::Array(a))])).list(key);
                    }
                t.split(',').map(|x| x.trim().to_string()).filter(|x| !x.is_empty()).collect()
            }
            _ => Vec::new(),
        }
    }

    /// A structured argument: a JSON value, or a string holding JSON. `Err(())` when it is a
    /// string that does not parse.
    pub fn json(&self, key: &str) -> Result<Option<Value>, ()> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
            Some(Value::String(s)) => serde_json::from_str(s).map(Some).map_err(|_| ()),
            Some(v) => Ok(Some(v.clone())),
        }
    }

    /// `limit` with Slack's default and cap; 0 or junk means the default.
    pub fn limit(&self, default: usize, max: usize) -> usize {
        match self.int("limit") {
            Some(n) if n > 0 => (n as usize).min(max),
            _ => default,
        }
    }
}

/// Opaque cursors like Slack's (`base64("kind:position")`).
pub fn cursor(kind: &str, pos: impl std::fmt::Display) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(format!("{kind}:{pos}"))
}

/// The position a `cursor` argument names, `None` without one, `invalid_cursor` when it is not
/// one of this method's cursors.
pub fn read_cursor(a: &Args, kind: &str) -> Result<Option<String>, SlackError> {
    use base64::Engine as _;
    let Some(c) = a.str("cursor") else { return Ok(None) };
    let raw = base64::engine::general_purpose::STANDARD.decode(c.trim()).map_err(|_| fail("invalid_cursor"))?;
    let text = String::from_utf8(raw).map_err(|_| fail("invalid_cursor"))?;
    let pos = text.strip_prefix(kind).and_then(|r| r.strip_prefix(':')).ok_or_else(|| fail("invalid_cursor"))?;
    Ok(Some(pos.to_string()))
}

/// Offset-cursor pagination over a complete list: the page and the `next_cursor` (empty on
/// the last page), the way Slack's list methods answer.
pub fn paginate<T>(items: Vec<T>, a: &Args, kind: &str, default: usize, max: usize) -> Result<(Vec<T>, String), SlackError> {
    let start = match read_cursor(a, kind)? {
        None => 0,
        Some(p) => p.parse::<usize>().map_err(|_| fail("invalid_cursor"))?,
    };
    if start > items.len() {
        return Err(fail("invalid_cursor"));
    }
    let limit = a.limit(default, max);
    let end = (start + limit).min(items.len());
    let next = if end < items.len() { cursor(kind, end) } else { String::new() };
    Ok((items.into_iter().skip(start).take(end - start).collect(), next))
}
