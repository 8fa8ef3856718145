//! SetupIntents: saving a payment method for later, with 3-D Secure when the card asks.

use super::*;

pub(crate) fn si_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    if let Some(c) = p.str("customer") {
        get_or_404(w, "customer", c, "customer").map_err(|e| e.param("customer"))?;
    }
    let usage = p.str("usage").unwrap_or("off_session");
    if !["off_session", "on_session"].contains(&usage) {
        return Err(invalid("Invalid usage: must be one of off_session or on_session").param("usage"));
    }
    let apm = automatic_payment_methods(p)?;
    let id = w.new_id("seti");
    let now = w.now();
    let mut o = json!({
        "id": id, "object": "setup_intent", "application": null, "automatic_payment_methods": apm,
        "cancellation_reason": null, "client_secret": format!("{id}_secret_{}", crate::core::base62(now as u64, 10)),
        "created": now, "customer": null, "description": null, "flow_directions": null, "last_setup_error": null,
        "latest_attempt": null, "livemode": false, "mandate": null, "metadata": {}, "next_action": null,
        "on_behalf_of": null, "payment_method": null, "payment_method_options": {},
        "payment_method_types": ["card"], "single_use_mandate": null, "status": "requires_payment_method", "usage": usage,
    });
    p.copy(&mut o, &["customer", "description"]);
    let types = p.strs("payment_method_types");
    if !types.is_empty() {
        o["payment_method_types"] = json!(types);
    }
    p.metadata_into(&mut o)?;
    if let Some(pm) = p.str("payment_method") {
        let pm = resolve_pm(w, call, pm, "payment_method")?;
        o["payment_method"] = json!(pm);
        o["status"] = json!("requires_confirmation");
    }
    let o = w.insert(Some(call), o);
    emit(w, call, "setup_intent.created", &o, None);
    if p.bool("confirm")? == Some(true) {
        return si_do_confirm(w, call, &id, p);
    }
    Ok(o)
}

pub(super) fn si_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    list_of(w, call, "setup_intent", p, |o| field_is(o, "customer", p.str("customer")) && field_is(o, "payment_method", p.str("payment_method")))
}

pub(super) fn si_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    get_or_404(w, "setup_intent", &id, "setup_intent")
}

pub(super) fn si_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let mut probe = get_or_404(w, "setup_intent", &id, "setup_intent")?;
    p.metadata_into(&mut probe)?;
    let pm = match p.str("payment_method") {
        Some(pm) => Some(resolve_pm(w, call, pm, "payment_method")?),
        None => None,
    };
    Ok(w.modify(call, &id, |o| {
        p.copy(o, &["customer", "description"]);
        o["metadata"] = probe["metadata"].clone();
        if let Some(pm) = pm {
            o["payment_method"] = json!(pm);
            o["status"] = json!("requires_confirmation");
        }
    }))
}

pub(super) fn si_confirm(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    get_or_404(w, "setup_intent", &id, "setup_intent")?;
    si_do_confirm(w, call, &id, p)
}

pub(super) fn si_do_confirm(w: &mut World, call: &mut Call, id: &str, p: &Params) -> Res {
    let si = w.get(id).unwrap();
    let status = si["status"].as_str().unwrap_or("").to_string();
    if !["requires_payment_method", "requires_confirmation", "requires_action"].contains(&status.as_str()) {
        return Err(invalid(format!("You cannot confirm this SetupIntent because it has a status of {status}.")).code("setup_intent_unexpected_state").with("setup_intent", si));
    }
    let pm_id = match p.str("payment_method") {
        Some(pm) => resolve_pm(w, call, pm, "payment_method")?,
        None => match si["payment_method"].as_str() {
            Some(pm) => pm.to_string(),
            None => {
                return Err(invalid("You cannot confirm this SetupIntent because it's missing a payment method.").code("setup_intent_unexpected_state").with("setup_intent", si));
            }
        },
    };
    let pm = w.get(&pm_id).unwrap();
    // Each confirmation is an attempt; a customer's acceptance of a mandate makes one.
    let acceptance = acceptance_of(p)?;
    let attempt = attempt_begin(w, call, &si, &pm_id);
    let mandate = acceptance.map(|a| mandate_for(w, call, &pm_id, &a));
    w.modify(call, id, |o| {
        o["latest_attempt"] = json!(attempt);
        if let Some(m) = &mandate {
            o["mandate"] = json!(m);
        }
    });
    match behaviour_of(&pm) {
        Behaviour::Decline(code, decline) => {
            let msg = decline_message(code, decline);
            let err = json!({"code": code, "decline_code": decline, "message": msg, "payment_method": pm, "type": "card_error"});
            attempt_outcome(w, call, id, "failed", err.clone());
            if let Some(m) = &mandate {
                w.modify(call, m, |o| o["status"] = json!("inactive"));
            }
            let si = w.modify(call, id, |o| {
                o["status"] = json!("requires_payment_method");
                o["last_setup_error"] = err;
                o["payment_method"] = Value::Null;
                o["mandate"] = Value::Null;
            });
            emit(w, call, "setup_intent.setup_failed", &si, None);
            let mut e = StripeError::new(402, "card_error", msg).code(code).with("setup_intent", si);
            e.decline_code = Some(decline.to_string());
            Err(e)
        }
        // Every card that asks for 3-D Secure asks for it when it is set up, and confirming
        // again (in `requires_action`) starts a new attempt: the customer's step happens on
        // the test page ([`crate::three_ds`]), which completes the SetupIntent.
        Behaviour::ThreeDS => {
            let source = w.new_id("payatt");
            let secret = si["client_secret"].as_str().unwrap_or("").to_string();
            let next_action = crate::three_ds::next_action(&call.req, &w.account_id, "setup_intent", id, &secret, &source, p.str("return_url"));
            let si = w.modify(call, id, |o| {
                o["status"] = json!("requires_action");
                o["payment_method"] = json!(pm_id);
                o["last_setup_error"] = Value::Null;
                o["next_action"] = next_action;
            });
            attempt_outcome(w, call, id, "requires_action", Value::Null);
            if let Some(m) = &mandate {
                w.modify(call, m, |o| o["status"] = json!("pending"));
            }
            emit(w, call, "setup_intent.requires_action", &si, None);
            Ok(si)
        }
        _ => Ok(si_succeed(w, call, id, &pm_id)),
    }
}

/// The SetupIntent `id` has saved `pm_id`: attached to its customer, `succeeded`.
pub(crate) fn si_succeed(w: &mut World, call: &mut Call, id: &str, pm_id: &str) -> Value {
    let si = w.get(id).unwrap_or_default();
    if let Some(c) = si["customer"].as_str() {
        if w.get(pm_id).is_some_and(|pm| pm["customer"].is_null()) {
            let pm = w.modify(call, pm_id, |pm| pm["customer"] = json!(c));
            emit(w, call, "payment_method.attached", &pm, None);
        }
    }
    attempt_outcome(w, call, id, "succeeded", Value::Null);
    if let Some(m) = si["mandate"].as_str().filter(|m| w.get(m).is_some_and(|o| o["status"] != "active")) {
        let m = w.modify(call, m, |o| o["status"] = json!("active"));
        emit(w, call, "mandate.updated", &m, None);
    }
    let si = w.modify(call, id, |o| {
        o["status"] = json!("succeeded");
        o["payment_method"] = json!(pm_id);
        o["next_action"] = Value::Null;
        o["last_setup_error"] = Value::Null;
    });
    emit(w, call, "setup_intent.succeeded", &si, None);
    si
}

pub(super) fn si_cancel(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let si = get_or_404(w, "setup_intent", &id, "setup_intent")?;
    if let Some(r) = p.str("cancellation_reason") {
        if !["abandoned", "duplicate", "requested_by_customer"].contains(&r) {
            return Err(invalid("Invalid cancellation_reason: must be one of abandoned, duplicate, or requested_by_customer").param("cancellation_reason"));
        }
    }
    if si["status"] == "succeeded" || si["status"] == "canceled" {
        return Err(invalid(format!("You cannot cancel this SetupIntent because it has a status of {}.", si["status"].as_str().unwrap_or(""))).code("setup_intent_unexpected_state").with("setup_intent", si));
    }
    let reason = p.str("cancellation_reason").map(str::to_string);
    let si = w.modify(call, &id, |o| {
        o["status"] = json!("canceled");
        o["cancellation_reason"] = reason.map(Value::String).unwrap_or(Value::Null);
    });
    emit(w, call, "setup_intent.canceled", &si, None);
    Ok(si)
}
