//! Mandates (the customer's permission to charge a saved payment method later) and setup
//! attempts (each confirmation of a SetupIntent, as it ended).
//!
//! A SetupIntent confirmed with `mandate_data[customer_acceptance]` that succeeds makes a
//! multi-use mandate for its payment method, named by the SetupIntent's `mandate`. Every
//! confirmation makes a setup attempt, named by `latest_attempt`, whose status follows the
//! attempt: `requires_action` while the customer authenticates, then `succeeded` or `failed`.

use super::*;

/// A confirmation of SetupIntent `si` with payment method `pm` begins: its setup attempt.
pub(crate) fn attempt_begin(w: &mut World, call: &mut Call, si: &Value, pm: &str) -> String {
    let id = w.new_id("setatt");
    let pm_obj = w.get(pm).unwrap_or_default();
    let ty = pm_obj["type"].as_str().unwrap_or("card").to_string();
    let mut details = json!({"type": ty});
    if ty == "card" {
        details["card"] = json!({"brand": pm_obj["card"]["brand"], "checks": null, "country": pm_obj["card"]["country"], "exp_month": pm_obj["card"]["exp_month"], "exp_year": pm_obj["card"]["exp_year"], "fingerprint": pm_obj["card"]["fingerprint"], "funding": pm_obj["card"]["funding"], "last4": pm_obj["card"]["last4"], "network": pm_obj["card"]["brand"], "three_d_secure": null, "wallet": null});
    } else {
        details[ty.as_str()] = json!({});
    }
    let o = json!({
        "id": id, "object": "setup_attempt", "application": null, "attach_to_self": false, "created": w.now(),
        "customer": si["customer"], "flow_directions": si["flow_directions"], "livemode": false, "on_behalf_of": si["on_behalf_of"],
        "payment_method": pm, "payment_method_details": details, "setup_error": null, "setup_intent": si["id"], "status": "processing",
        "usage": si["usage"],
    });
    w.insert(Some(call), o);
    id
}

/// SetupIntent `si`'s latest attempt ended as `status`, with `error` when it failed.
pub(crate) fn attempt_outcome(w: &mut World, call: &mut Call, si: &str, status: &str, error: Value) {
    let Some(att) = w.get(si).and_then(|s| s["latest_attempt"].as_str().map(str::to_string)) else { return };
    if !w.is_kind("setup_attempt", &att) {
        return;
    }
    w.modify(call, &att, |a| {
        a["status"] = json!(status);
        a["setup_error"] = error;
    });
}

/// A SetupIntent confirmed with `mandate_data` succeeded with `pm`: the customer's
/// acceptance becomes a multi-use mandate. Its id.
pub(crate) fn mandate_for(w: &mut World, call: &mut Call, pm: &str, acceptance: &Value) -> String {
    let id = w.new_id("mandate");
    let now = w.now();
    let ty = acceptance["type"].as_str().unwrap_or("online").to_string();
    let mut ca = json!({"accepted_at": acceptance["accepted_at"].as_str().and_then(|t| t.parse::<i64>().ok()).unwrap_or(now), "type": ty});
    if ty == "online" {
        ca["online"] = json!({"ip_address": acceptance["online"]["ip_address"], "user_agent": acceptance["online"]["user_agent"]});
    } else {
        ca["offline"] = json!({});
    }
    let pm_type = w.get(pm).and_then(|p| p["type"].as_str().map(str::to_string)).unwrap_or_else(|| "card".into());
    let mut details = json!({"type": pm_type});
    details[pm_type.as_str()] = json!({});
    let o = json!({
        "id": id, "object": "mandate", "customer_acceptance": ca, "livemode": false, "multi_use": {}, "payment_method": pm,
        "payment_method_details": details, "status": "active", "type": "multi_use",
    });
    w.insert(Some(call), o);
    id
}

/// What `mandate_data[customer_acceptance]` says, checked: an online acceptance names the
/// customer's IP address and user agent.
pub(crate) fn acceptance_of(p: &Params) -> Result<Option<Value>, StripeError> {
    let Some(ca) = p.get("mandate_data").map(|m| m["customer_acceptance"].clone()).filter(|c| !c.is_null()) else { return Ok(None) };
    let ty = ca["type"].as_str().ok_or_else(|| missing("mandate_data[customer_acceptance][type]"))?;
    if ty == "online" {
        for k in ["ip_address", "user_agent"] {
            if ca["online"][k].as_str().is_none_or(str::is_empty) {
                return Err(missing(&format!("mandate_data[customer_acceptance][online][{k}]")));
            }
        }
    }
    Ok(Some(ca))
}

pub(super) fn mandate_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    get_or_404(w, "mandate", call.param("id"), "mandate")
}

pub(super) fn setup_attempt_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let si = p.req_str("setup_intent")?.to_string();
    get_or_404(w, "setup_intent", &si, "setup_intent").map_err(|e| StripeError { status: 400, ..e.param("setup_intent") })?;
    list_of(w, call, "setup_attempt", p, |a| a["setup_intent"] == si.as_str())
}
