//! Parameters at every depth (#35): each request's parameters are checked against Stripe's
//! description of its operation before the handler runs, as Stripe checks them. A name the
//! operation does not have, at any level (`address[lin1]`), a value of the wrong type
//! (`Invalid integer`, `Invalid boolean`, `Invalid hash`, `Invalid array`), a value outside
//! an enumeration and a nested hash without a name it requires are refused with Stripe's
//! message and the parameter's full path in `param`: an agent must never believe a misspelt
//! field was saved.
//!
//! An empty value is Stripe's way to unset a field; it is left to the handler. Routes Stripe
//! does not describe (the twin's own test helpers) are not checked. The schemas are static
//! tables made at build time from `src/param_schemas.json` (`scripts/operations.py`).

use pome_twin_sdk::Value;

use crate::core::{StripeError, invalid, shown};

/// What a parameter may hold, as Stripe's OpenAPI description says.
#[derive(Debug)]
pub enum Shape {
    /// A string; when the list is not empty, one of its values.
    Str(&'static [&'static str]),
    Int,
    /// A decimal string or a float.
    Num,
    Bool,
    /// A hash: its known names (sorted), the node of any other key when any key is allowed
    /// (`metadata`), and the names it must have (below the top level: handlers check theirs).
    Hash(&'static [(&'static str, u16)], Option<u16>, &'static [&'static str]),
    Array(u16),
    /// Any one of these.
    OneOf(&'static [u16]),
    /// Not described further.
    Any,
}

mod schemas {
    use super::Shape;
    include!(concat!(env!("OUT_DIR"), "/param_schemas.rs"));
}

/// Check a request's parameters for the operation `action`; the first refusal.
pub fn check(action: Option<&str>, params: &serde_json::Map<String, Value>) -> Result<(), StripeError> {
    let Some(action) = action else { return Ok(()) };
    let Ok(at) = schemas::OPERATIONS.binary_search_by(|(a, _)| (*a).cmp(action)) else { return Ok(()) };
    let Shape::Hash(fields, ..) = &schemas::NODES[schemas::OPERATIONS[at].1 as usize] else { return Ok(()) };
    // `expand` is read by the pipeline itself (it may come in a POST's query too).
    for (k, v) in params.iter().filter(|(k, _)| *k != "expand") {
        match field(fields, k) {
            Some(n) => value(n, v, &Path::Top(k))?,
            None => return Err(unknown(&Path::Top(k))),
        }
    }
    Ok(())
}

/// Where a value sits: its parameter and the keys and indexes below it (`items[0][price]`),
/// written out only for an error, so a valid request builds no path.
enum Path<'a> {
    Top(&'a str),
    Key(&'a Path<'a>, &'a str),
    Index(&'a Path<'a>, usize),
}

impl Path<'_> {
    /// The path as Stripe's `param` names it, cut at [`shown`]'s length.
    fn text(&self) -> String {
        fn write(p: &Path<'_>, out: &mut String) {
            match p {
                Path::Top(name) => out.push_str(name),
                Path::Key(up, k) => {
                    write(up, out);
                    out.push('[');
                    out.push_str(k);
                    out.push(']');
                }
                Path::Index(up, i) => {
                    write(up, out);
                    out.push_str(&format!("[{i}]"));
                }
            }
        }
        let mut out = String::new();
        write(self, &mut out);
        shown(&out)
    }
}

fn field(fields: &[(&str, u16)], name: &str) -> Option<u16> {
    fields.binary_search_by(|(f, _)| (*f).cmp(name)).ok().map(|i| fields[i].1)
}

fn unknown(path: &Path<'_>) -> StripeError {
    let path = path.text();
    invalid(format!("Received unknown parameter: {path}")).code("parameter_unknown").param(&path)
}

/// Check `v`, the parameter at `path`, against node `n`.
fn value(n: u16, v: &Value, path: &Path<'_>) -> Result<(), StripeError> {
    if matches!(v, Value::String(s) if s.is_empty()) {
        return Ok(());
    }
    match &schemas::NODES[n as usize] {
        Shape::Any => Ok(()),
        Shape::Str(values) => match v {
            Value::String(s) if values.is_empty() || values.contains(&s.as_str()) => Ok(()),
            Value::String(_) => Err(invalid(format!("Invalid {}: must be one of {}", path.text(), one_of(values))).param(&path.text())),
            other => Err(invalid(format!("Invalid string: {}", inspect(other))).param(&path.text())),
        },
        Shape::Int => match v {
            Value::String(s) if s.parse::<i64>().is_ok() => Ok(()),
            Value::Number(x) if x.is_i64() => Ok(()),
            other => Err(invalid(format!("Invalid integer: {}", inspect(other))).code("parameter_invalid_integer").param(&path.text())),
        },
        Shape::Num => match v {
            Value::String(s) if s.parse::<f64>().is_ok_and(f64::is_finite) => Ok(()),
            Value::Number(_) => Ok(()),
            other => Err(invalid(format!("Invalid decimal: {}", inspect(other))).param(&path.text())),
        },
        Shape::Bool => match v {
            Value::String(s) if s == "true" || s == "false" => Ok(()),
            Value::Bool(_) => Ok(()),
            other => Err(invalid(format!("Invalid boolean: {}", inspect(other))).param(&path.text())),
        },
        Shape::Array(item) => match v {
            Value::Array(items) => {
                for (i, it) in items.iter().enumerate() {
                    value(*item, it, &Path::Index(path, i))?;
                }
                Ok(())
            }
            _ => Err(invalid("Invalid array").param(&path.text())),
        },
        Shape::Hash(fields, extra, required) => match v {
            Value::Object(m) => {
                for (k, v) in m {
                    let at = Path::Key(path, k);
                    match field(fields, k).or(*extra) {
                        Some(n) => value(n, v, &at)?,
                        None => return Err(unknown(&at)),
                    }
                }
                if let Some(r) = required.iter().find(|r| !m.contains_key(**r)) {
                    return Err(crate::core::missing(&Path::Key(path, r).text()));
                }
                Ok(())
            }
            // Keys `0`, `1`, … read as an array (`metadata[0]=a`): any-key hashes take them.
            Value::Array(items) if extra.is_some() => {
                for (i, it) in items.iter().enumerate() {
                    value(extra.expect("matched"), it, &Path::Index(path, i))?;
                }
                Ok(())
            }
            _ => Err(invalid("Invalid hash").param(&path.text())),
        },
        Shape::OneOf(alts) => {
            // None fits: the refusal of the alternative shaped like the value, and of those
            // the one that went deepest, says best what is wrong.
            let mut best: Option<((bool, usize), StripeError)> = None;
            for a in alts.iter() {
                match value(*a, v, path) {
                    Ok(()) => return Ok(()),
                    Err(e) => {
                        let rank = (fits(*a, v), e.param.as_ref().map_or(0, String::len));
                        if best.as_ref().is_none_or(|(r, _)| rank > *r) {
                            best = Some((rank, e));
                        }
                    }
                }
            }
            Err(best.expect("a union has alternatives").1)
        }
    }
}

/// Whether node `n` is of the value's own kind (a hash for a hash, an array for an array, a
/// scalar for a string).
fn fits(n: u16, v: &Value) -> bool {
    matches!(
        (&schemas::NODES[n as usize], v),
        (Shape::Hash(..), Value::Object(_)) | (Shape::Array(_), Value::Array(_)) | (Shape::Str(_) | Shape::Int | Shape::Num | Shape::Bool, Value::String(_))
    )
}

/// Stripe's list of allowed values: `a`, `a or b`, `a, b, or c`.
fn one_of(values: &[&str]) -> String {
    match values {
        [] => String::new(),
        [a] => a.to_string(),
        [a, b] => format!("{a} or {b}"),
        [rest @ .., last] => format!("{}, or {last}", rest.join(", ")),
    }
}

/// A value as an error repeats it, cut short: Stripe shows what it received.
fn inspect(v: &Value) -> String {
    let text = match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    shown(&text)
}
