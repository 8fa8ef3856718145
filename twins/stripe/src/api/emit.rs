//! Events: each change recorded as Stripe's event and delivered, signed, to every webhook
//! endpoint that listens for its type.

use super::*;

/// Record an event for a change and deliver it to every webhook endpoint listening for it.
/// The event is written straight to its stored text (its `data.object` as a diff against
/// the object's template); it is decoded only when an endpoint needs its payload.
pub fn emit(w: &mut World, call: &mut Call, kind: &str, object: &Value, previous: Option<Value>) {
    let obj_kind = object["object"].as_str().unwrap_or_default().to_string();
    let obj_id = object["id"].as_str().unwrap_or_default().to_string();
    let inner = crate::store::encode_obj(&mut w.0.templates, &obj_kind, object);
    emit_text(w, call, kind, &obj_id, obj_kind, inner, previous)
}

/// [`emit`] for the object as it is stored now: its stored text is the event's
/// `data.object`, with nothing encoded again.
pub fn emit_current(w: &mut World, call: &mut Call, kind: &str, obj_id: &str, previous: Option<Value>) {
    let Some(s) = w.objects.get(&crate::store::Id::of(obj_id)) else { return };
    let obj_kind = s.kind.to_string();
    let inner = (s.text.to_string(), s.diff);
    emit_text(w, call, kind, obj_id, obj_kind, inner, previous)
}

pub(super) fn emit_text(w: &mut World, call: &mut Call, kind: &str, obj_id: &str, obj_kind: String, inner: (String, bool), previous: Option<Value>) {
    let (inner_text, inner_diff) = inner;
    let id = w.new_id("evt");
    let endpoints: Vec<(String, String)> = if w.order.get("webhook_endpoint").is_none_or(|ids| ids.is_empty()) {
        Vec::new()
    } else {
        w.all("webhook_endpoint")
            .filter(|e| e["status"] == "enabled")
            .filter(|e| e["enabled_events"].as_array().is_some_and(|a| a.iter().any(|t| t == "*" || t == kind)))
            .map(|e| (e["url"].as_str().unwrap_or_default().to_string(), e["secret"].as_str().unwrap_or_default().to_string()))
            .collect()
    };
    let now = w.now();
    let mut text = String::with_capacity(inner_text.len() + 320);
    text.push_str("{\"id\":");
    push_str_json(&mut text, &id);
    text.push_str(",\"object\":\"event\",\"api_version\":");
    push_str_json(&mut text, crate::API_VERSION);
    text.push_str(",\"created\":");
    text.push_str(&now.to_string());
    text.push_str(",\"data\":{\"object\":");
    text.push_str(&inner_text);
    if let Some(prev) = &previous {
        text.push_str(",\"previous_attributes\":");
        text.push_str(&prev.to_string());
    }
    text.push_str("},\"livemode\":false,\"pending_webhooks\":");
    text.push_str(&endpoints.len().to_string());
    text.push_str(",\"request\":{\"id\":");
    push_str_json(&mut text, &w.current_request);
    text.push_str(",\"idempotency_key\":");
    match w.current_idempotency_key.as_deref() {
        Some(k) => push_str_json(&mut text, k),
        None => text.push_str("null"),
    }
    text.push_str("},\"type\":");
    push_str_json(&mut text, kind);
    text.push('}');
    let stored = crate::store::Stored { kind: "event".into(), text: text.into(), diff: false, inner: inner_diff.then(|| obj_kind.clone().into()) };
    // The row names the event and its object only: the same call recorded the object.
    let mut row = String::with_capacity(160);
    row.push_str("{\"id\":");
    push_str_json(&mut row, &id);
    row.push_str(",\"object\":\"event\",\"type\":");
    push_str_json(&mut row, kind);
    row.push_str(",\"data\":{\"object\":{\"id\":");
    push_str_json(&mut row, obj_id);
    row.push_str(",\"object\":");
    push_str_json(&mut row, &obj_kind);
    row.push_str("}}}");
    call.created("event", &id, &crate::store::Raw(&row));
    w.put(&id, "event", stored);
    if endpoints.is_empty() {
        return;
    }
    let ev = w.get(&id).unwrap_or_default();
    let payload = serde_json::to_string_pretty(&ev).unwrap_or_default();
    for (url, secret) in endpoints {
        let sig = sign(&secret, now, &payload);
        call.deliver(Delivery {
            url,
            method: "POST".into(),
            headers: vec![
                ("content-type".into(), "application/json; charset=utf-8".into()),
                ("user-agent".into(), "Stripe/1.0 (+https://stripe.com/docs/webhooks)".into()),
                ("stripe-signature".into(), format!("t={now},v1={sig}")),
            ],
            body: payload.clone().into_bytes(),
            event: kind.to_string(),
        });
    }
}

/// Append `s` as a JSON string (escaped as serde_json escapes it).
pub fn push_str_json(out: &mut String, s: &str) {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.push('"');
        out.push_str(s);
        out.push('"');
    } else {
        out.push_str(&serde_json::to_string(s).expect("a string serialises"));
    }
}

/// `HMAC-SHA256(secret, "t.payload")` in hex, Stripe's `v1` signature scheme.
pub fn sign(secret: &str, t: i64, payload: &str) -> String {
    use hmac::{Hmac, Mac};
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).expect("any key length");
    mac.update(format!("{t}.{payload}").as_bytes());
    mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect()
}

/// The fields of `after` that differ from `before`, with their old values.
pub(super) fn previous(before: &Value, after: &Value) -> Value {
    let mut out = serde_json::Map::new();
    if let (Some(b), Some(a)) = (before.as_object(), after.as_object()) {
        for (k, v) in b {
            if a.get(k) != Some(v) {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    Value::Object(out)
}

/// Modify an object and emit `event` with `previous_attributes`.
pub(crate) fn modify_emit(w: &mut World, call: &mut Call, id: &str, event: &str, f: impl FnOnce(&mut Value)) -> Value {
    let before = w.get(id).unwrap_or(Value::Null);
    let after = w.modify(call, id, f);
    let prev = previous(&before, &after);
    emit(w, call, event, &after, Some(prev));
    after
}
