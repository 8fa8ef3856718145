//! Radar: reviews of payments placed in the manual review queue, early fraud warnings from
//! card issuers, and value lists (with their items) that rules match against.
//!
//! Stripe's test cards drive the first two: `4000000000009235` (`pm_card_riskLevelElevated`)
//! succeeds with an elevated risk level and opens a review; `4000000000005423`
//! (`pm_card_createIssuerFraudRecord`) succeeds, then its issuer reports fraud. A review
//! closes when it is approved, or when the charge is refunded or disputed; a warning stops
//! being actionable once the charge is fully refunded or disputed.

use super::*;

// ---------------------------------------------------------------------------------------
// Reviews.

/// Charge `ch_id` (of PaymentIntent `pi`, if any) goes to the review queue: an open review,
/// the charge's outcome as Stripe's rule left it.
pub(super) fn open_review(w: &mut World, call: &mut Call, ch_id: &str) {
    let Some(ch) = w.get(ch_id) else { return };
    let id = w.new_id("prv");
    let r = json!({
        "id": id, "object": "review", "billing_zip": null, "charge": ch_id, "closed_reason": null, "created": w.now(),
        "ip_address": null, "ip_address_location": null, "livemode": false, "open": true, "opened_reason": "rule",
        "payment_intent": ch["payment_intent"], "reason": "rule", "session": null,
    });
    let r = w.insert(Some(call), r);
    w.modify(call, ch_id, |c| {
        c["review"] = json!(id);
        c["outcome"]["risk_level"] = json!("elevated");
        c["outcome"]["risk_score"] = json!(65);
        c["outcome"]["type"] = json!("manual_review");
        c["outcome"]["rule"] = json!("manual_review_if_elevated_risk");
        c["outcome"]["seller_message"] = json!("Stripe evaluated this payment as having elevated risk, and placed it in your manual review queue.");
    });
    if let Some(pi) = ch["payment_intent"].as_str() {
        w.modify(call, pi, |p| p["review"] = json!(id));
    }
    emit(w, call, "review.opened", &r, None);
}

/// Close charge `ch_id`'s open review, if any, for `reason`.
pub(super) fn close_review(w: &mut World, call: &mut Call, ch_id: &str, reason: &str) {
    let Some(id) = w.get(ch_id).and_then(|c| c["review"].as_str().map(str::to_string)) else { return };
    if w.get(&id).is_none_or(|r| r["open"] != true) {
        return;
    }
    let r = w.modify(call, &id, |r| {
        r["open"] = json!(false);
        r["closed_reason"] = json!(reason);
        r["reason"] = json!(reason);
    });
    emit(w, call, "review.closed", &r, None);
}

pub(super) fn review_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    // Stripe lists the reviews still open.
    list_of(w, call, "review", p, |r| r["open"] == true)
}

pub(super) fn review_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    get_or_404(w, "review", call.param("id"), "review")
}

pub(super) fn review_approve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    let r = get_or_404(w, "review", &id, "review")?;
    if r["open"] != true {
        return Err(invalid(format!("This review has already been closed ({}).", r["closed_reason"].as_str().unwrap_or("closed"))).code("review_already_closed"));
    }
    let r = w.modify(call, &id, |r| {
        r["open"] = json!(false);
        r["closed_reason"] = json!("approved");
        r["reason"] = json!("approved");
    });
    emit(w, call, "review.closed", &r, None);
    Ok(r)
}

// ---------------------------------------------------------------------------------------
// Early fraud warnings.

/// The issuer of charge `ch_id` reports it as fraud.
pub(super) fn early_fraud_warning(w: &mut World, call: &mut Call, ch_id: &str) {
    let Some(ch) = w.get(ch_id) else { return };
    let id = w.new_id("issfr");
    let o = json!({
        "id": id, "object": "radar.early_fraud_warning", "actionable": true, "charge": ch_id, "created": w.now(),
        "fraud_type": "made_with_stolen_card", "livemode": false, "payment_intent": ch["payment_intent"],
    });
    let o = w.insert(Some(call), o);
    emit(w, call, "radar.early_fraud_warning.created", &o, None);
}

/// Charge `ch_id` was fully refunded or disputed: its warnings are no longer actionable.
pub(super) fn warnings_settled(w: &mut World, call: &mut Call, ch_id: &str) {
    let ids: Vec<String> = w.all("radar.early_fraud_warning").filter(|e| e["charge"] == ch_id && e["actionable"] == true).filter_map(|e| e["id"].as_str().map(str::to_string)).collect();
    for id in ids {
        modify_emit(w, call, &id, "radar.early_fraud_warning.updated", |e| e["actionable"] = json!(false));
    }
}

pub(super) fn efw_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    list_of(w, call, "radar.early_fraud_warning", p, |e| field_is(e, "charge", p.str("charge")) && field_is(e, "payment_intent", p.str("payment_intent")))
}

pub(super) fn efw_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    get_or_404(w, "radar.early_fraud_warning", call.param("id"), "early fraud warning")
}

// ---------------------------------------------------------------------------------------
// Value lists and their items.

const ITEM_TYPES: &[&str] = &["card_bin", "card_fingerprint", "case_sensitive_string", "country", "customer_id", "email", "ip_address", "sepa_debit_fingerprint", "string", "us_bank_account_fingerprint"];

/// Who made a list or item: the account's API key.
const CREATED_BY: &str = "API";

pub(super) fn value_list_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let alias = p.req_str("alias")?.to_string();
    let name = p.req_str("name")?.to_string();
    let item_type = p.str("item_type").unwrap_or("string").to_string();
    if !ITEM_TYPES.contains(&item_type.as_str()) {
        return Err(invalid(format!("Invalid item_type: must be one of {}", super::tax::one_of(ITEM_TYPES))).param("item_type"));
    }
    alias_free(w, &alias, None)?;
    let id = w.new_id("rsl");
    let mut o = json!({
        "id": id, "object": "radar.value_list", "alias": alias, "created": w.now(), "created_by": CREATED_BY, "item_type": item_type,
        "list_items": embedded_list(&format!("/v1/radar/value_list_items?value_list={id}"), Vec::new()), "livemode": false,
        "metadata": {}, "name": name,
    });
    p.metadata_into(&mut o)?;
    Ok(w.insert(Some(call), o))
}

/// An alias names one list: letters, digits and underscores, not taken by another.
fn alias_free(w: &World, alias: &str, own: Option<&str>) -> Result<(), StripeError> {
    if alias.is_empty() || !alias.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return Err(invalid("The alias can only contain alphanumeric characters and underscores.").param("alias"));
    }
    if w.all("radar.value_list").any(|l| l["alias"] == alias && own.is_none_or(|id| l["id"] != id)) {
        return Err(invalid(format!("A value list with the alias `{alias}` already exists.")).code("resource_already_exists").param("alias"));
    }
    Ok(())
}

pub(super) fn value_list_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    get_or_404(w, "radar.value_list", call.param("id"), "value list")
}

pub(super) fn value_list_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let mut o = get_or_404(w, "radar.value_list", &id, "value list")?;
    if let Some(a) = p.str("alias") {
        alias_free(w, a, Some(&id))?;
    }
    p.copy(&mut o, &["alias", "name"]);
    p.metadata_into(&mut o)?;
    Ok(w.modify(call, &id, |x| *x = o))
}

pub(super) fn value_list_delete(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    get_or_404(w, "radar.value_list", &id, "value list")?;
    let items: Vec<String> = w.all("radar.value_list_item").filter(|i| i["value_list"] == id.as_str()).filter_map(|i| i["id"].as_str().map(str::to_string)).collect();
    for i in items {
        w.remove(call, &i);
    }
    w.remove(call, &id);
    Ok(deleted(&id, "radar.value_list"))
}

pub(super) fn value_list_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let contains = p.str("contains").map(str::to_string);
    let holding: Vec<String> = match &contains {
        Some(v) => w.all("radar.value_list_item").filter(|i| i["value"] == v.as_str()).filter_map(|i| i["value_list"].as_str().map(str::to_string)).collect(),
        None => Vec::new(),
    };
    list_of(w, call, "radar.value_list", p, |l| field_is(l, "alias", p.str("alias")) && (contains.is_none() || holding.iter().any(|h| l["id"] == h.as_str())))
}

/// Whether `value` is an item of the list's type.
fn item_fits(item_type: &str, value: &str) -> bool {
    match item_type {
        "email" => value.split_once('@').is_some_and(|(a, d)| !a.is_empty() && d.contains('.')),
        "ip_address" => value.parse::<std::net::IpAddr>().is_ok(),
        "country" => value.len() == 2 && value.bytes().all(|b| b.is_ascii_uppercase()),
        "card_bin" => value.len() == 6 && value.bytes().all(|b| b.is_ascii_digit()),
        "customer_id" => value.starts_with("cus_"),
        _ => !value.is_empty(),
    }
}

/// A list embeds its newest items.
fn refresh_items(w: &mut World, call: &mut Call, list: &str) {
    let items: Vec<Value> = w.all("radar.value_list_item").filter(|i| i["value_list"] == list).collect();
    let embedded = embedded_list(&format!("/v1/radar/value_list_items?value_list={list}"), items);
    w.modify(call, list, |l| l["list_items"] = embedded);
}

pub(super) fn value_list_item_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let value = p.req_str("value")?.to_string();
    let list_id = p.req_str("value_list")?.to_string();
    let list = w.get_kind("radar.value_list", &list_id).ok_or_else(|| no_such_ref("value list", &list_id, "value_list"))?;
    let ty = list["item_type"].as_str().unwrap_or("string");
    if !item_fits(ty, &value) {
        return Err(invalid(format!("Invalid value for a value list of item_type {ty}: {}", crate::core::shown(&value))).param("value"));
    }
    let folded = |v: &Value| if ty == "case_sensitive_string" { v.as_str().map(str::to_string) } else { v.as_str().map(str::to_lowercase) };
    let wanted = folded(&json!(value));
    if w.all("radar.value_list_item").any(|i| i["value_list"] == list_id.as_str() && folded(&i["value"]) == wanted) {
        return Err(invalid(format!("The value `{}` is already in this list.", crate::core::shown(&value))).code("resource_already_exists").param("value"));
    }
    let id = w.new_id("rsli");
    let o = json!({"id": id, "object": "radar.value_list_item", "created": w.now(), "created_by": CREATED_BY, "livemode": false, "value": value, "value_list": list_id});
    let o = w.insert(Some(call), o);
    refresh_items(w, call, &list_id);
    Ok(o)
}

pub(super) fn value_list_item_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    get_or_404(w, "radar.value_list_item", call.param("id"), "value list item")
}

pub(super) fn value_list_item_delete(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    let o = get_or_404(w, "radar.value_list_item", &id, "value list item")?;
    w.remove(call, &id);
    if let Some(list) = o["value_list"].as_str() {
        refresh_items(w, call, list);
    }
    Ok(deleted(&id, "radar.value_list_item"))
}

pub(super) fn value_list_item_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let list = p.req_str("value_list")?.to_string();
    get_or_404(w, "radar.value_list", &list, "value list").map_err(|e| e.param("value_list"))?;
    list_of(w, call, "radar.value_list_item", p, |i| i["value_list"] == list.as_str() && field_is(i, "value", p.str("value")))
}
