//! Conversions between apollo-compiler's JSON (the executor's arguments and variables) and
//! serde_json, variant by variant (no serializer round trip).

use apollo_compiler::response::JsonValue;
use serde_json::{Map, Value};

/// Executor JSON to serde_json, variant by variant (no serializer round trip).
pub fn to_json(v: &JsonValue) -> Value {
    match v {
        JsonValue::Null => Value::Null,
        JsonValue::Bool(b) => Value::Bool(*b),
        JsonValue::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::from(i)
            } else if let Some(u) = n.as_u64() {
                Value::from(u)
            } else {
                n.as_f64().map(Value::from).unwrap_or(Value::Null)
            }
        }
        JsonValue::String(s) => Value::String(s.as_str().to_string()),
        JsonValue::Array(a) => Value::Array(a.iter().map(to_json).collect()),
        JsonValue::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.as_str().to_string(), to_json(v))).collect()),
    }
}

/// serde_json to executor JSON without taking the value.
pub fn from_json_ref(v: &Value) -> JsonValue {
    use apollo_compiler::response::serde_json_bytes::{ByteString, Map as BMap};
    match v {
        Value::Null => JsonValue::Null,
        Value::Bool(b) => JsonValue::Bool(*b),
        Value::Number(_) => from_json(v.clone()),
        Value::String(s) => JsonValue::String(ByteString::from(s.as_str())),
        Value::Array(a) => JsonValue::Array(a.iter().map(from_json_ref).collect()),
        Value::Object(m) => {
            let mut out = BMap::new();
            for (k, v) in m {
                out.insert(ByteString::from(k.as_str()), from_json_ref(v));
            }
            JsonValue::Object(out)
        }
    }
}

/// Executor JSON object to a serde_json map, without copying it first.
pub fn map_to_json(m: &apollo_compiler::response::JsonMap) -> Map<String, Value> {
    m.iter().map(|(k, v)| (k.as_str().to_string(), to_json(v))).collect()
}

/// serde_json to executor JSON, variant by variant.
pub fn from_json(v: Value) -> JsonValue {
    use apollo_compiler::response::serde_json_bytes::{ByteString, Map as BMap};
    match v {
        Value::Null => JsonValue::Null,
        Value::Bool(b) => JsonValue::Bool(b),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                JsonValue::from(i)
            } else if let Some(u) = n.as_u64() {
                JsonValue::from(u)
            } else {
                n.as_f64().map(JsonValue::from).unwrap_or(JsonValue::Null)
            }
        }
        Value::String(s) => JsonValue::String(ByteString::from(s)),
        Value::Array(a) => JsonValue::Array(a.into_iter().map(from_json).collect()),
        Value::Object(m) => {
            let mut out = BMap::new();
            for (k, v) in m {
                out.insert(ByteString::from(k), from_json(v));
            }
            JsonValue::Object(out)
        }
    }
}
