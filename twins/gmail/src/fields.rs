//! Partial responses: Google's `fields` parameter (`messages(id,threadId),nextPageToken`,
//! `payload/headers`), applied to every successful JSON answer.

use std::cell::RefCell;
use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::limits::MAX_FIELDS_DEPTH;

/// A selection: field name → its own sub-selection (`None`: the whole field).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Sel(pub BTreeMap<String, Option<Sel>>);

thread_local! {
    static CURRENT: RefCell<Option<Sel>> = const { RefCell::new(None) };
}

/// Remember the selection of the request being served (`None` clears it).
pub fn set(fields: Option<&str>) -> Result<(), String> {
    let sel = match fields.map(str::trim).filter(|f| !f.is_empty()) {
        Some(f) => Some(parse(f)?),
        None => None,
    };
    CURRENT.with(|c| *c.borrow_mut() = sel);
    Ok(())
}

/// The answer cut down to the current selection, if there is one.
pub fn apply_current(v: &Value) -> Option<Value> {
    CURRENT.with(|c| c.borrow().as_ref().map(|s| apply(v, s)))
}

pub fn parse(s: &str) -> Result<Sel, String> {
    let cs: Vec<char> = s.chars().collect();
    let mut i = 0;
    let sel = list(&cs, &mut i, 0)?;
    if i != cs.len() {
        return Err(format!("Invalid field selection {s}"));
    }
    Ok(sel)
}

/// Levels below the top are counted ([`MAX_FIELDS_DEPTH`] at most): each recurses.
fn list(cs: &[char], i: &mut usize, depth: usize) -> Result<Sel, String> {
    let mut out = Sel::default();
    loop {
        let (name, sub) = path(cs, i, depth)?;
        merge(&mut out, name, sub);
        match cs.get(*i) {
            Some(',') => *i += 1,
            _ => return Ok(out),
        }
    }
}

fn path(cs: &[char], i: &mut usize, depth: usize) -> Result<(String, Option<Sel>), String> {
    if depth > MAX_FIELDS_DEPTH {
        return Err(format!("Invalid field selection: nested more than {MAX_FIELDS_DEPTH} levels deep"));
    }
    let start = *i;
    while *i < cs.len() && !matches!(cs[*i], ',' | '(' | ')' | '/') {
        *i += 1;
    }
    let name: String = cs[start..*i].iter().collect::<String>().trim().to_string();
    if name.is_empty() {
        return Err("Invalid field selection".into());
    }
    match cs.get(*i) {
        Some('/') => {
            *i += 1;
            let (child, sub) = path(cs, i, depth + 1)?;
            let mut s = Sel::default();
            merge(&mut s, child, sub);
            Ok((name, Some(s)))
        }
        Some('(') => {
            *i += 1;
            let s = list(cs, i, depth + 1)?;
            if cs.get(*i) != Some(&')') {
                return Err("Invalid field selection: unbalanced parentheses".into());
            }
            *i += 1;
            Ok((name, Some(s)))
        }
        _ => Ok((name, None)),
    }
}

fn merge(into: &mut Sel, name: String, sub: Option<Sel>) {
    match (into.0.get_mut(&name), sub) {
        (Some(None), _) => {}
        (Some(slot @ Some(_)), None) => *slot = None,
        (Some(Some(have)), Some(more)) => {
            for (k, v) in more.0 {
                merge(have, k, v);
            }
        }
        (None, sub) => {
            into.0.insert(name, sub);
        }
    }
}

pub fn apply(v: &Value, sel: &Sel) -> Value {
    match v {
        Value::Array(a) => Value::Array(a.iter().map(|x| apply(x, sel)).collect()),
        Value::Object(o) => {
            let mut out = Map::new();
            for (k, x) in o {
                match sel.0.get(k) {
                    Some(None) => {
                        out.insert(k.clone(), x.clone());
                    }
                    Some(Some(sub)) => {
                        out.insert(k.clone(), apply(x, sub));
                    }
                    None => {}
                }
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selections_cut_objects_and_every_element_of_lists() {
        let v = json!({"messages": [{"id": "a", "threadId": "t", "x": 1}], "nextPageToken": "n", "resultSizeEstimate": 3});
        assert_eq!(apply(&v, &parse("messages(id),nextPageToken").unwrap()), json!({"messages": [{"id": "a"}], "nextPageToken": "n"}));
        let m = json!({"id": "a", "payload": {"headers": [{"name": "To", "value": "b"}], "body": {"size": 1}}});
        assert_eq!(apply(&m, &parse("id,payload/headers").unwrap()), json!({"id": "a", "payload": {"headers": [{"name": "To", "value": "b"}]}}));
        assert!(parse("messages(id").is_err());
    }
}
