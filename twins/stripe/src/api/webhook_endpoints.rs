//! Events as the API lists them, and webhook endpoints.

use super::*;

pub(super) fn event_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let mut types = p.strs("types");
    if let Some(t) = p.str("type") {
        types.push(t.to_string());
    }
    let matches = |t: &str| {
        types.is_empty()
            || types.iter().any(|pat| match pat.strip_suffix('*') {
                Some(prefix) => t.starts_with(prefix),
                None => pat == t,
            })
    };
    list_of(w, call, "event", p, |e| matches(e["type"].as_str().unwrap_or("")))
}

pub(super) fn event_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    get_or_404(w, "event", &id, "event")
}

pub(super) fn we_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let url = p.req_str("url")?.to_string();
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(invalid(format!("Invalid URL: {url}. URLs must begin with http or https.")).param("url"));
    }
    let events = enabled_events(p)?.ok_or_else(|| missing("enabled_events"))?;
    let id = w.new_id("we");
    let secret = format!("whsec_{}", crate::core::base62(w.seq.wrapping_mul(0x9E37_79B9_7F4A_7C15), 32));
    let mut o = json!({
        "id": id, "object": "webhook_endpoint", "api_version": p.str("api_version"), "application": null,
        "created": w.now(), "description": null, "enabled_events": events, "livemode": false, "metadata": {},
        "secret": secret, "status": "enabled", "url": url,
    });
    p.copy(&mut o, &["description"]);
    p.metadata_into(&mut o)?;
    let o = w.insert(Some(call), o);
    Ok(o)
}

/// The endpoint's `enabled_events`, when given, each an event type Stripe sends (or `*`).
pub(super) fn enabled_events(p: &Params) -> Result<Option<Vec<String>>, StripeError> {
    let events = p.strs("enabled_events");
    if events.is_empty() {
        return Ok(None);
    }
    if let Some((i, _)) = events.iter().enumerate().find(|(_, e)| !crate::core::is_event_type(e)) {
        let param = format!("enabled_events[{i}]");
        return Err(invalid(format!("Invalid {param}: must be one of {}", crate::core::EVENT_TYPES.join(", "))).param(&param));
    }
    Ok(Some(events))
}

/// A webhook endpoint as retrieved: Stripe shows the secret only on create.
pub(super) fn we_public(mut o: Value) -> Value {
    if let Some(m) = o.as_object_mut() {
        m.remove("secret");
    }
    o
}

pub(super) fn we_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let mut out = list_of(w, call, "webhook_endpoint", p, |_| true)?;
    if let Some(items) = out["data"].as_array_mut() {
        for o in items.iter_mut() {
            *o = we_public(std::mem::take(o));
        }
    }
    Ok(out)
}

pub(super) fn we_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    get_or_404(w, "webhook_endpoint", &id, "webhook endpoint").map(we_public)
}

pub(super) fn we_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let mut probe = get_or_404(w, "webhook_endpoint", &id, "webhook endpoint")?;
    p.metadata_into(&mut probe)?;
    let events = enabled_events(p)?;
    let disabled = p.bool("disabled")?;
    Ok(we_public(w.modify(call, &id, |o| {
        p.copy(o, &["url", "description"]);
        o["metadata"] = probe["metadata"].clone();
        if let Some(events) = events {
            o["enabled_events"] = json!(events);
        }
        if let Some(d) = disabled {
            o["status"] = json!(if d { "disabled" } else { "enabled" });
        }
    })))
}

pub(super) fn we_delete(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    get_or_404(w, "webhook_endpoint", &id, "webhook endpoint")?;
    w.remove(call, &id);
    Ok(json!({"id": id, "object": "webhook_endpoint", "deleted": true}))
}
