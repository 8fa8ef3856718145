//! How objects are kept: compact JSON text, each object stored as the fields that differ
//! from its kind's template. Stripe objects are wide (a PaymentIntent has 45 fields, most of
//! them null or a constant), and a sandbox under load keeps tens of thousands of them inside
//! a 128 MiB store: a `serde_json::Value` tree costs about 3 KB per object, its text diff a
//! few hundred bytes.
//!
//! A kind's template is the first object of that kind the world stored; it never changes
//! afterwards (stored diffs depend on it), and it travels in snapshots. An object is stored
//! as a diff only when its keys start with the template's keys in the template's order, so
//! merging the diff back into the template gives the object byte for byte; any other object
//! is stored whole. An event's `data.object` is diffed against the template of its own kind.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// One stored object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stored {
    /// Its `object` field (`payment_intent`).
    pub kind: Box<str>,
    /// Compact JSON: the diff against the kind's template, or the whole object.
    pub text: Box<str>,
    /// (Every field is always written: postcard snapshots cannot skip one.)
    #[serde(default)]
    pub diff: bool,
    /// For an event: the kind of `data.object`, when that is stored as a diff.
    #[serde(default)]
    pub inner: Option<Box<str>>,
}

/// A kind's template, with each field's compact JSON rendered once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "Map<String, Value>", into = "Map<String, Value>")]
pub struct Template {
    pub map: Map<String, Value>,
    /// `"key":` and the value's text, in order.
    parts: Vec<(String, String)>,
}

impl From<Map<String, Value>> for Template {
    fn from(map: Map<String, Value>) -> Template {
        let parts = map
            .iter()
            .map(|(k, v)| (format!("{}:", serde_json::to_string(k).unwrap()), serde_json::to_string(v).unwrap()))
            .collect();
        Template { map, parts }
    }
}

impl From<Template> for Map<String, Value> {
    fn from(t: Template) -> Map<String, Value> {
        t.map
    }
}

pub type Templates = BTreeMap<String, Template>;

/// The fields of `obj` that differ from `t`, if `obj` starts with the template's keys.
fn diff_of(t: &Template, obj: &Map<String, Value>) -> Option<Map<String, Value>> {
    if obj.len() < t.map.len() || !obj.keys().zip(t.map.keys()).all(|(a, b)| a == b) {
        return None;
    }
    let mut out = Map::new();
    let mut tv = t.map.values();
    for (k, v) in obj {
        if tv.next().is_none_or(|tv| tv != v) {
            out.insert(k.clone(), v.clone());
        }
    }
    Some(out)
}

/// Encode `obj` (an object of `kind`), learning the kind's template if it has none yet.
pub fn encode_obj(templates: &mut Templates, kind: &str, obj: &Value) -> (String, bool) {
    let Value::Object(m) = obj else { return (obj.to_string(), false) };
    let t = templates.entry(kind.to_string()).or_insert_with(|| Template::from(m.clone()));
    match diff_of(t, m) {
        Some(d) => (serde_json::to_string(&d).unwrap(), true),
        None => (obj.to_string(), false),
    }
}

pub fn encode(templates: &mut Templates, obj: &Value) -> Stored {
    let kind = obj["object"].as_str().unwrap_or_default().to_string();
    if kind == "event" {
        if let Some(inner_kind) = obj["data"]["object"]["object"].as_str().filter(|k| *k != "event").map(str::to_string) {
            let (inner_text, inner_diff) = encode_obj(templates, &inner_kind, &obj["data"]["object"]);
            if inner_diff {
                // The event with `data.object` swapped for its diff (a placeholder of the
                // same key keeps the event's field order).
                let mut ev = obj.clone();
                ev["data"]["object"] = Value::Null;
                let mut text = ev.to_string();
                let hole = "\"object\":null";
                let at = text.find("\"data\":{").map(|d| d + 8).filter(|d| text[*d..].starts_with(hole));
                if let Some(at) = at {
                    text.replace_range(at..at + hole.len(), &format!("\"object\":{inner_text}"));
                    return Stored { kind: kind.into(), text: text.into(), diff: false, inner: Some(inner_kind.into()) };
                }
            }
        }
        return Stored { kind: kind.into(), text: obj.to_string().into(), diff: false, inner: None };
    }
    let (text, diff) = encode_obj(templates, &kind, obj);
    Stored { kind: kind.into(), text: text.into(), diff, inner: None }
}

/// A JSON object's fields as raw text, in order, borrowed from the input.
struct RawPairs<'a>(Vec<(&'a str, &'a RawValue)>);

impl<'de: 'a, 'a> Deserialize<'de> for RawPairs<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = RawPairs<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<RawPairs<'de>, A::Error> {
                let mut out = Vec::with_capacity(m.size_hint().unwrap_or(8));
                while let Some((k, v)) = m.next_entry::<&'de str, &'de RawValue>()? {
                    out.push((k, v));
                }
                Ok(RawPairs(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// Write the object a diff stands for: the template's fields with the diff's values in
/// their places, then the diff's fields the template lacks.
fn merge_into(out: &mut String, t: &Template, diff: &str) {
    let pairs: RawPairs = serde_json::from_str(diff).expect("a stored diff is a JSON object");
    let mut used = vec![false; pairs.0.len()];
    out.push('{');
    for (i, (k, v)) in t.parts.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(k);
        let key = &k[1..k.len() - 2];
        match pairs.0.iter().position(|(pk, _)| *pk == key) {
            Some(j) => {
                used[j] = true;
                out.push_str(pairs.0[j].1.get());
            }
            None => out.push_str(v),
        }
    }
    for (j, (k, v)) in pairs.0.iter().enumerate() {
        if !used[j] {
            if out.len() > 1 {
                out.push(',');
            }
            out.push_str(&serde_json::to_string(k).unwrap());
            out.push(':');
            out.push_str(v.get());
        }
    }
    out.push('}');
}

/// Append the object's compact JSON to `out`.
pub fn render_into(out: &mut String, templates: &Templates, s: &Stored) {
    if s.diff {
        if let Some(t) = templates.get(&*s.kind) {
            return merge_into(out, t, &s.text);
        }
    }
    if let Some(inner) = s.inner.as_deref().and_then(|k| templates.get(k)) {
        // An event: expand `data.object` in place.
        let at = s.text.find("\"data\":{\"object\":").map(|d| d + 17);
        if let Some(at) = at {
            let rest = &s.text[at..];
            let mut de = serde_json::Deserializer::from_str(rest);
            let raw: &RawValue = <&RawValue>::deserialize(&mut de).expect("a stored event's data.object is JSON");
            let len = raw.get().len();
            out.push_str(&s.text[..at]);
            merge_into(out, inner, raw.get());
            out.push_str(&rest[len..]);
            return;
        }
    }
    out.push_str(&s.text);
}

pub fn render(templates: &Templates, s: &Stored) -> String {
    let mut out = String::with_capacity(s.text.len() * 3);
    render_into(&mut out, templates, s);
    out
}

pub fn decode(templates: &Templates, s: &Stored) -> Value {
    serde_json::from_str(&render(templates, s)).expect("a stored object is JSON")
}
