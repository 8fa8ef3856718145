//! Linear's filters (`IssueFilter` and its siblings), over any entity type: comparators on
//! scalar fields, nested filters on relations, `some`/`every`/`none`/`length` on
//! collections, and `and`/`or` at every level.

use serde_json::Value;

use crate::exec::{field_value, find_typed, singular};
use crate::gql;
use crate::model::{Entity, Inner};

const COMPARATORS: &[&str] = &[
    "eq", "neq", "in", "nin", "lt", "lte", "gt", "gte", "contains", "containsIgnoreCase", "containsIgnoreCaseAndAccent",
    "notContains", "notContainsIgnoreCase", "startsWith", "startsWithIgnoreCase", "notStartsWith", "endsWith", "notEndsWith",
    "null", "eqIgnoreCase", "neqIgnoreCase",
];

fn is_comparator(f: &Value) -> bool {
    f.as_object().is_some_and(|m| !m.is_empty() && m.keys().all(|k| COMPARATORS.contains(&k.as_str()) || k == "and" || k == "or"))
}

/// A filter that constrains nothing: null, or objects and lists holding only such filters
/// (`{assignee: {email: {}}}`, what a document sends when its variables are left out).
fn vacuous(f: &Value) -> bool {
    match f {
        Value::Null => true,
        Value::Object(m) => m.values().all(vacuous),
        Value::Array(a) => !a.is_empty() && a.iter().all(vacuous),
        _ => false,
    }
}

/// Whether a filter holds anything written as a duration (`-P1W`): only those are rewritten.
pub fn has_duration(f: &Value) -> bool {
    match f {
        Value::String(s) => s.starts_with('P') || s.starts_with("-P"),
        Value::Array(a) => a.iter().any(has_duration),
        Value::Object(m) => m.values().any(has_duration),
        _ => false,
    }
}

/// `filter` over entities of type `ty` with each relative date on a `DateTime` or
/// `TimelessDate` field made absolute at `now`, so it compares with the stored values; done
/// once per request, before any entity is tested. Strings on other fields stay as written.
pub fn absolute_dates(ty: &str, filter: &Value, now: chrono::DateTime<chrono::Utc>) -> Value {
    let Some(m) = filter.as_object() else { return filter.clone() };
    let mut out = serde_json::Map::new();
    for (k, f) in m {
        let v = match k.as_str() {
            "and" | "or" => match f.as_array() {
                Some(a) => Value::Array(a.iter().map(|x| absolute_dates(ty, x, now)).collect()),
                None => f.clone(),
            },
            _ => {
                let def = crate::tables::field(ty, k).filter(|_| gql::is_object(ty));
                let named = def.map(|d| d.ty).unwrap_or("");
                match named {
                    "DateTime" | "TimelessDate" => dates_in(f, now, named == "TimelessDate"),
                    _ if gql::is_connection(named) || def.is_some_and(|d| d.list) => {
                        let node = gql::connection_node(named).unwrap_or_else(|| named.to_string());
                        match f.as_object() {
                            Some(ops) => Value::Object(
                                ops.iter()
                                    .map(|(op, sub)| {
                                        let sub = match op.as_str() {
                                            "some" | "every" | "none" => absolute_dates(&node, sub, now),
                                            "length" => sub.clone(),
                                            "and" | "or" => absolute_dates(ty, &serde_json::json!({ k.clone(): sub.clone() }), now)[k.as_str()].clone(),
                                            _ => absolute_dates(&node, &serde_json::json!({ op.clone(): sub.clone() }), now)[op.as_str()].clone(),
                                        };
                                        (op.clone(), sub)
                                    })
                                    .collect(),
                            ),
                            None => f.clone(),
                        }
                    }
                    _ if gql::is_composite(named) => absolute_dates(named, f, now),
                    _ => f.clone(),
                }
            }
        };
        out.insert(k.clone(), v);
    }
    Value::Object(out)
}

/// A comparator's operands with durations made dates.
fn dates_in(f: &Value, now: chrono::DateTime<chrono::Utc>, date_only: bool) -> Value {
    match f {
        Value::String(s) => crate::dates::relative(now, s, date_only).map_or_else(|| f.clone(), Value::String),
        Value::Array(a) => Value::Array(a.iter().map(|x| dates_in(x, now, date_only)).collect()),
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), dates_in(v, now, date_only))).collect()),
        _ => f.clone(),
    }
}

/// A filter compiled for one entity type, once per connection: each key's field looked up in
/// the schema once rather than once per entity, and a relation's nested filter tested once
/// per related entity (fifty issues of one team test the team once). It answers exactly what
/// [`matches`] answers: every part it does not specialise is handed to [`matches`]'s own
/// code.
pub enum Compiled<'f> {
    True,
    All(Vec<Compiled<'f>>),
    Any(Vec<Compiled<'f>>),
    /// A scalar field against its comparators.
    Scalar { name: &'f str, f: &'f Value },
    /// A relation (`assignee: {…}`) through its foreign key, memoised by related id.
    Relation { name: &'f str, fk: String, f: &'f Value, seen: std::cell::RefCell<std::collections::BTreeMap<String, bool>> },
    /// Anything else (collections): [`field`] itself.
    Field { name: &'f str, f: &'f Value },
}

impl<'f> Compiled<'f> {
    pub fn new(ty: &str, filter: &'f Value) -> Compiled<'f> {
        let Some(m) = filter.as_object() else { return Compiled::True };
        let mut all = Vec::new();
        for (k, f) in m {
            if vacuous(f) {
                continue;
            }
            all.push(match k.as_str() {
                "and" => match f.as_array() {
                    Some(a) => Compiled::All(a.iter().map(|x| Compiled::new(ty, x)).collect()),
                    None => Compiled::True,
                },
                "or" => match f.as_array() {
                    Some(a) if !a.is_empty() => Compiled::Any(a.iter().map(|x| Compiled::new(ty, x)).collect()),
                    _ => Compiled::True,
                },
                name => {
                    let def = crate::tables::field(ty, name).filter(|_| gql::is_object(ty));
                    let named = def.map(|f| f.ty).unwrap_or("");
                    if !gql::is_composite(named) {
                        Compiled::Scalar { name, f }
                    } else if gql::is_connection(named) || def.is_some_and(|f| f.list) {
                        Compiled::Field { name, f }
                    } else {
                        Compiled::Relation { name, fk: format!("{name}Id"), f, seen: Default::default() }
                    }
                }
            });
        }
        Compiled::All(all)
    }

    pub fn test(&self, w: &Inner, base: &str, ty: &str, id: &str, e: &Entity) -> bool {
        match self {
            Compiled::True => true,
            Compiled::All(a) => a.iter().all(|c| c.test(w, base, ty, id, e)),
            Compiled::Any(a) => a.iter().any(|c| c.test(w, base, ty, id, e)),
            Compiled::Scalar { name, f } => compare(&field_value(w, base, ty, id, e, name).unwrap_or(Value::Null), f),
            Compiled::Field { name, f } => field(w, base, ty, id, e, name, f),
            Compiled::Relation { name, fk, f, seen } => {
                // The answer depends only on the related entity (and the world, which a
                // filter does not change).
                let Some(rid) = crate::model::field(e, fk).and_then(Value::as_str) else { return field(w, base, ty, id, e, name, f) };
                if let Some(hit) = seen.borrow().get(rid) {
                    return *hit;
                }
                let ok = field(w, base, ty, id, e, name, f);
                seen.borrow_mut().insert(rid.to_string(), ok);
                ok
            }
        }
    }
}

pub fn matches(w: &Inner, base: &str, ty: &str, id: &str, e: &Entity, filter: &Value) -> bool {
    matches_but(w, base, ty, id, e, filter, None)
}

/// [`matches`], ignoring key `skip` of the filter object.
fn matches_but(w: &Inner, base: &str, ty: &str, id: &str, e: &Entity, filter: &Value, skip: Option<&str>) -> bool {
    let Some(m) = filter.as_object() else { return true };
    for (k, f) in m {
        if vacuous(f) || skip == Some(k.as_str()) {
            continue;
        }
        let ok = match k.as_str() {
            "and" => f.as_array().is_none_or(|a| a.iter().all(|x| matches(w, base, ty, id, e, x))),
            "or" => f.as_array().is_none_or(|a| a.is_empty() || a.iter().any(|x| matches(w, base, ty, id, e, x))),
            _ => field(w, base, ty, id, e, k, f),
        };
        if !ok {
            return false;
        }
    }
    true
}

fn field(w: &Inner, base: &str, ty: &str, id: &str, e: &Entity, name: &str, f: &Value) -> bool {
    let def = crate::tables::field(ty, name).filter(|_| gql::is_object(ty));
    let named = def.map(|f| f.ty).unwrap_or("");
    if !gql::is_composite(named) {
        let v = field_value(w, base, ty, id, e, name).unwrap_or(Value::Null);
        return compare(&v, f);
    }
    if gql::is_connection(named) || def.is_some_and(|f| f.list) {
        let node = gql::connection_node(named).unwrap_or_else(|| named.to_string());
        let members = collection(w, ty, id, e, name, &node);
        let test = |sub: &Value| -> Vec<bool> {
            members.iter().map(|(t, cid)| w.get(t, cid).is_some_and(|c| matches(w, base, t, cid, c, sub))).collect()
        };
        let Some(m) = f.as_object() else { return true };
        for (k, sub) in m {
            let ok = match k.as_str() {
                "some" => test(sub).iter().any(|b| *b),
                "every" => test(sub).iter().all(|b| *b),
                "none" => !test(sub).iter().any(|b| *b),
                "length" => compare(&serde_json::json!(members.len()), sub),
                "and" => sub.as_array().is_none_or(|a| a.iter().all(|x| field(w, base, ty, id, e, name, x))),
                "or" => sub.as_array().is_none_or(|a| a.iter().any(|x| field(w, base, ty, id, e, name, x))),
                // A field of the collection's members directly: some member must match it.
                _ => test(&serde_json::json!({ k.clone(): sub.clone() })).iter().any(|b| *b),
            };
            if !ok {
                return false;
            }
        }
        return true;
    }
    // A relation: `assignee: {email: {eq: …}}`, `assignee: {null: true}`.
    let rid = e.get(&format!("{name}Id")).and_then(Value::as_str);
    let related = rid.and_then(|rid| find_typed(w, named, rid).map(|t| (t, rid.to_string())));
    let Some(m) = f.as_object() else { return true };
    if let Some(null) = m.get("null").and_then(Value::as_bool) {
        if related.is_none() != null {
            return false;
        }
    }
    if m.keys().all(|k| k == "null") {
        return true;
    }
    match related {
        Some((t, rid)) => {
            let rid = if t == "Issue" { w.issue_id(&rid).unwrap_or(rid) } else { rid };
            w.get(&t, &rid).is_some_and(|r| matches_but(w, base, &t, &rid, r, f, Some("null")))
        }
        None => false,
    }
}

fn collection(w: &Inner, ty: &str, id: &str, e: &Entity, name: &str, node: &str) -> Vec<(String, String)> {
    if let Some(ids) = e.get(&format!("{}Ids", singular(name))).and_then(Value::as_array) {
        return ids.iter().filter_map(Value::as_str).filter_map(|i| find_typed(w, node, i).map(|t| (t, i.to_string()))).collect();
    }
    let fk = match (ty, name) {
        ("Issue" | "Comment" | "IssueLabel", "children") => "parentId".to_string(),
        _ => format!("{}Id", crate::exec::lcfirst(ty)),
    };
    let mut out = Vec::new();
    for t in gql::possible_types(node) {
        for (cid, c) in w.all(&t) {
            if c.get(&fk).and_then(Value::as_str) == Some(id) {
                out.push((t.clone(), cid.clone()));
            }
        }
    }
    out
}

fn num(v: &Value) -> Option<f64> {
    v.as_f64()
}

fn ord(a: &Value, b: &Value) -> Option<std::cmp::Ordering> {
    match (num(a), num(b)) {
        (Some(x), Some(y)) => x.partial_cmp(&y),
        _ => match (a.as_str(), b.as_str()) {
            (Some(x), Some(y)) => Some(x.cmp(y)),
            _ => None,
        },
    }
}

fn eq(a: &Value, b: &Value) -> bool {
    match (num(a), num(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// A scalar comparator (`{eq: …}`, `{in: […]}`, `{containsIgnoreCase: …}`, `{null: true}`).
pub fn compare(v: &Value, f: &Value) -> bool {
    if !is_comparator(f) {
        // A bare value compares for equality.
        return f.as_object().is_some_and(|m| m.is_empty()) || eq(v, f);
    }
    let m = f.as_object().expect("comparators are objects");
    let s = v.as_str().unwrap_or("");
    let lowered = std::cell::OnceCell::new();
    let lower = || lowered.get_or_init(|| s.to_lowercase()).as_str();
    m.iter().all(|(op, x)| {
        let xs = x.as_str().unwrap_or("");
        match op.as_str() {
            "eq" => eq(v, x),
            "neq" => !eq(v, x),
            "in" => x.as_array().is_some_and(|a| a.iter().any(|y| eq(v, y))),
            "nin" => x.as_array().is_none_or(|a| !a.iter().any(|y| eq(v, y))),
            "lt" => ord(v, x) == Some(std::cmp::Ordering::Less),
            "lte" => matches!(ord(v, x), Some(std::cmp::Ordering::Less | std::cmp::Ordering::Equal)),
            "gt" => ord(v, x) == Some(std::cmp::Ordering::Greater),
            "gte" => matches!(ord(v, x), Some(std::cmp::Ordering::Greater | std::cmp::Ordering::Equal)),
            "contains" => v.is_string() && s.contains(xs),
            "containsIgnoreCase" => v.is_string() && lower().contains(&xs.to_lowercase()),
            "containsIgnoreCaseAndAccent" => v.is_string() && fold(s).contains(&fold(xs)),
            "notContains" => !s.contains(xs),
            "notContainsIgnoreCase" => !lower().contains(&xs.to_lowercase()),
            "startsWith" => v.is_string() && s.starts_with(xs),
            "startsWithIgnoreCase" => v.is_string() && lower().starts_with(&xs.to_lowercase()),
            "notStartsWith" => !s.starts_with(xs),
            "endsWith" => v.is_string() && s.ends_with(xs),
            "notEndsWith" => !s.ends_with(xs),
            "eqIgnoreCase" => v.is_string() && lower() == xs.to_lowercase(),
            "neqIgnoreCase" => lower() != xs.to_lowercase(),
            "null" => x.as_bool().is_none_or(|n| v.is_null() == n),
            "and" => x.as_array().is_none_or(|a| a.iter().all(|y| compare(v, y))),
            "or" => x.as_array().is_none_or(|a| a.iter().any(|y| compare(v, y))),
            _ => true,
        }
    })
}

/// `s` lower-cased with its diacritics dropped (`É` → `e`, `ß` → `ss`), for Linear's
/// `containsIgnoreCaseAndAccent`: Latin letters with accents (Latin-1 and Latin Extended-A)
/// by table, and combining marks (U+0300–U+036F, as decomposed text carries them) dropped.
pub fn fold(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars().flat_map(char::to_lowercase) {
        let base = match c {
            '\u{300}'..='\u{36f}' => continue,
            'ß' => {
                out.push_str("ss");
                continue;
            }
            'æ' => {
                out.push_str("ae");
                continue;
            }
            'œ' => {
                out.push_str("oe");
                continue;
            }
            'à'..='å' | 'ā' | 'ă' | 'ą' => 'a',
            'ç' | 'ć' | 'ĉ' | 'ċ' | 'č' => 'c',
            'ď' | 'đ' => 'd',
            'è'..='ë' | 'ē' | 'ĕ' | 'ė' | 'ę' | 'ě' => 'e',
            'ĝ' | 'ğ' | 'ġ' | 'ģ' => 'g',
            'ĥ' | 'ħ' => 'h',
            'ì'..='ï' | 'ĩ' | 'ī' | 'ĭ' | 'į' | 'ı' => 'i',
            'ĵ' => 'j',
            'ķ' => 'k',
            'ĺ' | 'ļ' | 'ľ' | 'ŀ' | 'ł' => 'l',
            'ñ' | 'ń' | 'ņ' | 'ň' => 'n',
            'ò'..='ö' | 'ø' | 'ō' | 'ŏ' | 'ő' => 'o',
            'ŕ' | 'ŗ' | 'ř' => 'r',
            'ś' | 'ŝ' | 'ş' | 'š' => 's',
            'ţ' | 'ť' | 'ŧ' => 't',
            'ù'..='ü' | 'ũ' | 'ū' | 'ŭ' | 'ů' | 'ű' | 'ų' => 'u',
            'ŵ' => 'w',
            'ý' | 'ÿ' | 'ŷ' => 'y',
            'ź' | 'ż' | 'ž' => 'z',
            c => c,
        };
        out.push(base);
    }
    out
}
