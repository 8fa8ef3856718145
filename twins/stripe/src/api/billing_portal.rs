//! The customer portal: configurations (what customers may do there) and sessions (a link
//! that signs one customer in). The portal's pages are Stripe's own; the twin makes the
//! sessions and checks them against their configuration, and serves no pages.
//!
//! An account's default configuration is the one its Dashboard settings save. A sandbox's
//! account has them saved: the first session made without a `configuration` makes the
//! default (invoice history, payment method and customer details updates on) if none exists.

use super::*;

const ALLOWED_UPDATES: &[&str] = &["address", "email", "name", "phone", "shipping", "tax_id"];
const PRORATIONS: &[&str] = &["always_invoice", "create_prorations", "none"];

fn features_default() -> Value {
    json!({
        "customer_update": {"allowed_updates": [], "enabled": false},
        "invoice_history": {"enabled": false},
        "payment_method_update": {"enabled": false},
        "subscription_cancel": {"cancellation_reason": {"enabled": false, "options": []}, "enabled": false, "mode": "at_period_end", "proration_behavior": "none"},
        "subscription_pause": {"enabled": false},
        "subscription_update": {"default_allowed_updates": [], "enabled": false, "products": [], "proration_behavior": "none"},
    })
}

fn config(id: &str, now: i64, is_default: bool) -> Value {
    json!({
        "id": id, "object": "billing_portal.configuration", "active": true, "application": null,
        "business_profile": {"headline": null, "privacy_policy_url": null, "terms_of_service_url": null}, "created": now,
        "default_return_url": null, "features": features_default(), "is_default": is_default, "livemode": false,
        "login_page": {"enabled": false, "url": null}, "metadata": {}, "updated": now,
    })
}

/// Strings of a form array (`allowed_updates[]`), each one of `allowed`.
fn enum_list(v: &Value, allowed: &[&str], at: &str) -> Result<Vec<String>, StripeError> {
    let items: Vec<String> = match v {
        Value::Array(a) => a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect(),
        Value::String(s) if s.is_empty() => Vec::new(),
        Value::String(s) => vec![s.clone()],
        _ => Vec::new(),
    };
    for (i, x) in items.iter().enumerate() {
        if !allowed.contains(&x.as_str()) {
            return Err(invalid(format!("Invalid {at}[{i}]: must be one of {}", super::tax::one_of(allowed))).param(&format!("{at}[{i}]")));
        }
    }
    Ok(items)
}

/// Merge `features[...]` into `f`, and check the whole: what is enabled has what it needs.
fn apply_features(w: &World, f: &mut Value, given: &Value) -> Result<(), StripeError> {
    if let Some(cu) = given.get("customer_update") {
        if let Some(e) = bool_at(&cu["enabled"], "features[customer_update][enabled]")? {
            f["customer_update"]["enabled"] = json!(e);
        }
        if let Some(a) = cu.get("allowed_updates") {
            f["customer_update"]["allowed_updates"] = json!(enum_list(a, ALLOWED_UPDATES, "features[customer_update][allowed_updates]")?);
        }
    }
    for k in ["invoice_history", "payment_method_update", "subscription_pause"] {
        if let Some(e) = given.get(k).map(|x| bool_at(&x["enabled"], &format!("features[{k}][enabled]"))).transpose()?.flatten() {
            f[k]["enabled"] = json!(e);
        }
    }
    if let Some(sc) = given.get("subscription_cancel") {
        let at = "features[subscription_cancel]";
        if let Some(e) = bool_at(&sc["enabled"], &format!("{at}[enabled]"))? {
            f["subscription_cancel"]["enabled"] = json!(e);
        }
        if let Some(m) = sc["mode"].as_str() {
            f["subscription_cancel"]["mode"] = json!(m);
        }
        if let Some(pb) = sc["proration_behavior"].as_str() {
            f["subscription_cancel"]["proration_behavior"] = json!(pb);
        }
        if let Some(cr) = sc.get("cancellation_reason") {
            if let Some(e) = bool_at(&cr["enabled"], &format!("{at}[cancellation_reason][enabled]"))? {
                f["subscription_cancel"]["cancellation_reason"]["enabled"] = json!(e);
            }
            if let Some(o) = cr.get("options") {
                let options = ["customer_service", "low_quality", "missing_features", "other", "switched_service", "too_complex", "too_expensive", "unused"];
                f["subscription_cancel"]["cancellation_reason"]["options"] = json!(enum_list(o, &options, &format!("{at}[cancellation_reason][options]"))?);
            }
        }
    }
    if let Some(su) = given.get("subscription_update") {
        let at = "features[subscription_update]";
        if let Some(e) = bool_at(&su["enabled"], &format!("{at}[enabled]"))? {
            f["subscription_update"]["enabled"] = json!(e);
        }
        if let Some(d) = su.get("default_allowed_updates") {
            f["subscription_update"]["default_allowed_updates"] = json!(enum_list(d, &["price", "promotion_code", "quantity"], &format!("{at}[default_allowed_updates]"))?);
        }
        if let Some(pb) = su["proration_behavior"].as_str() {
            if !PRORATIONS.contains(&pb) {
                return Err(invalid(format!("Invalid {at}[proration_behavior]: must be one of {}", super::tax::one_of(PRORATIONS))).param(&format!("{at}[proration_behavior]")));
            }
            f["subscription_update"]["proration_behavior"] = json!(pb);
        }
        match su.get("products") {
            Some(Value::Array(products)) => {
                let mut out = Vec::new();
                for (i, pr) in products.iter().enumerate() {
                    let pat = format!("{at}[products][{i}]");
                    let prod = pr["product"].as_str().ok_or_else(|| missing(&format!("{pat}[product]")))?;
                    w.get_kind("product", prod).ok_or_else(|| no_such_ref("product", prod, &format!("{pat}[product]")))?;
                    let prices: Vec<String> = pr["prices"].as_array().into_iter().flatten().filter_map(|x| x.as_str().map(str::to_string)).collect();
                    if prices.is_empty() {
                        return Err(missing(&format!("{pat}[prices]")));
                    }
                    for (j, pid) in prices.iter().enumerate() {
                        let price = w.get_kind("price", pid).ok_or_else(|| no_such_ref("price", pid, &format!("{pat}[prices][{j}]")))?;
                        if price["product"] != prod || price["recurring"].is_null() {
                            return Err(invalid(format!("The price {pid} must be a recurring price of product {prod}.")).param(&format!("{pat}[prices][{j}]")));
                        }
                    }
                    out.push(json!({"prices": prices, "product": prod}));
                }
                f["subscription_update"]["products"] = json!(out);
            }
            Some(Value::String(s)) if s.is_empty() => f["subscription_update"]["products"] = json!([]),
            _ => {}
        }
    }
    if f["customer_update"]["enabled"] == true && f["customer_update"]["allowed_updates"].as_array().is_none_or(Vec::is_empty) {
        return Err(missing("features[customer_update][allowed_updates]"));
    }
    if f["subscription_update"]["enabled"] == true {
        if f["subscription_update"]["products"].as_array().is_none_or(Vec::is_empty) {
            return Err(missing("features[subscription_update][products]"));
        }
        if f["subscription_update"]["default_allowed_updates"].as_array().is_none_or(Vec::is_empty) {
            return Err(missing("features[subscription_update][default_allowed_updates]"));
        }
    }
    Ok(())
}

fn apply(w: &World, p: &Params, c: &mut Value) -> Result<(), StripeError> {
    if let Some(bp) = p.get("business_profile").and_then(Value::as_object) {
        for (k, v) in bp {
            c["business_profile"][k.as_str()] = if v == "" { Value::Null } else { v.clone() };
        }
    }
    if let Some(f) = p.get("features") {
        let mut features = c["features"].clone();
        apply_features(w, &mut features, f)?;
        c["features"] = features;
    }
    p.copy(c, &["default_return_url"]);
    if let Some(lp) = p.get("login_page") {
        let on = bool_at(&lp["enabled"], "login_page[enabled]")?.unwrap_or(false);
        let id = c["id"].as_str().unwrap_or("").to_string();
        c["login_page"] = json!({"enabled": on, "url": if on { json!(format!("https://billing.stripe.com/p/login/test_{}", &id[4..])) } else { Value::Null }});
    }
    if let Some(a) = p.bool("active")? {
        if !a && c["is_default"] == true {
            return Err(invalid("The default configuration cannot be deactivated.").param("active"));
        }
        c["active"] = json!(a);
    }
    p.metadata_into(c)
}

pub(super) fn portal_config_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    p.get("features").ok_or_else(|| missing("features"))?;
    let id = w.new_id("bpc");
    let mut c = config(&id, w.now(), false);
    apply(w, p, &mut c)?;
    let c = w.insert(Some(call), c);
    emit(w, call, "billing_portal.configuration.created", &c, None);
    Ok(c)
}

pub(super) fn portal_config_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    get_or_404(w, "billing_portal.configuration", call.param("id"), "configuration")
}

pub(super) fn portal_config_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let mut c = get_or_404(w, "billing_portal.configuration", &id, "configuration")?;
    apply(w, p, &mut c)?;
    c["updated"] = json!(w.now());
    Ok(replace_emit(w, call, &id, "billing_portal.configuration.updated", c))
}

pub(super) fn portal_config_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let active = p.bool("active")?;
    let is_default = p.bool("is_default")?;
    list_of(w, call, "billing_portal.configuration", p, |c| active.is_none_or(|a| c["active"] == a) && is_default.is_none_or(|d| c["is_default"] == d))
}

pub(super) fn portal_session_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let cus = p.req_str("customer")?.to_string();
    get_or_404(w, "customer", &cus, "customer").map_err(|e| StripeError { status: 400, ..e.param("customer") })?;
    let conf = match p.str("configuration") {
        Some(c) => w.get_kind("billing_portal.configuration", c).ok_or_else(|| no_such_ref("configuration", c, "configuration"))?,
        None => match default_config(w) {
            Some(c) => c,
            None => {
                let id = w.new_id("bpc");
                let mut c = config(&id, w.now(), true);
                c["business_profile"]["headline"] = Value::Null;
                c["features"]["invoice_history"]["enabled"] = json!(true);
                c["features"]["payment_method_update"]["enabled"] = json!(true);
                c["features"]["customer_update"] = json!({"allowed_updates": ["email", "address", "shipping", "phone", "tax_id"], "enabled": true});
                let c = w.insert(Some(call), c);
                emit(w, call, "billing_portal.configuration.created", &c, None);
                c
            }
        },
    };
    if conf["active"] != true {
        return Err(invalid(format!("The configuration {} is not active.", conf["id"].as_str().unwrap_or(""))).param("configuration"));
    }
    let flow = match p.get("flow_data") {
        Some(f) => flow(w, &cus, &conf, f)?,
        None => Value::Null,
    };
    if let Some(o) = p.str("on_behalf_of") {
        w.get_kind("account", o).ok_or_else(|| no_such_ref("account", o, "on_behalf_of"))?;
    }
    let id = w.new_id("bps");
    let return_url = p.str("return_url").map(str::to_string).or_else(|| conf["default_return_url"].as_str().map(str::to_string));
    let s = json!({
        "id": id, "object": "billing_portal.session", "configuration": conf["id"], "created": w.now(), "customer": cus, "flow": flow,
        "livemode": false, "locale": p.str("locale"), "on_behalf_of": p.str("on_behalf_of"), "return_url": return_url,
        "url": format!("https://billing.stripe.com/p/session/test_{}", &id[4..]),
    });
    let s = w.insert(Some(call), s);
    emit(w, call, "billing_portal.session.created", &s, None);
    Ok(s)
}

/// A session's `flow_data`, checked against the customer and configuration: the flow's
/// feature is enabled, and its subscription is the customer's and live.
fn default_config(w: &World) -> Option<Value> {
    w.all("billing_portal.configuration").find(|c| c["is_default"] == true)
}

fn flow(w: &World, cus: &str, conf: &Value, f: &Value) -> Result<Value, StripeError> {
    let ty = f["type"].as_str().ok_or_else(|| missing("flow_data[type]"))?;
    let sub_of = |param: &str, sub: Option<&str>| -> Result<String, StripeError> {
        let sub = sub.ok_or_else(|| missing(param))?;
        let s = w.get_kind("subscription", sub).ok_or_else(|| no_such_ref("subscription", sub, param))?;
        if s["customer"] != cus {
            return Err(invalid(format!("The subscription {sub} does not belong to customer {cus}.")).param(param));
        }
        if ["canceled", "incomplete_expired"].contains(&s["status"].as_str().unwrap_or("")) {
            return Err(invalid(format!("The subscription {sub} has ended.")).param(param));
        }
        Ok(sub.to_string())
    };
    let feature = |k: &str| -> Result<(), StripeError> {
        if conf["features"][k]["enabled"] != true {
            return Err(invalid(format!("The `{k}` feature is not enabled in this portal configuration: enable it to use this flow.")).param("flow_data[type]"));
        }
        Ok(())
    };
    let mut out = json!({
        "after_completion": {"hosted_confirmation": null, "redirect": null, "type": "portal_homepage"},
        "subscription_cancel": null, "subscription_update": null, "subscription_update_confirm": null, "type": ty,
    });
    match ty {
        "payment_method_update" => feature("payment_method_update")?,
        "subscription_cancel" => {
            feature("subscription_cancel")?;
            let sub = sub_of("flow_data[subscription_cancel][subscription]", f["subscription_cancel"]["subscription"].as_str())?;
            out["subscription_cancel"] = json!({"retention": null, "subscription": sub});
        }
        "subscription_update" => {
            feature("subscription_update")?;
            let sub = sub_of("flow_data[subscription_update][subscription]", f["subscription_update"]["subscription"].as_str())?;
            out["subscription_update"] = json!({"subscription": sub});
        }
        "subscription_update_confirm" => {
            feature("subscription_update")?;
            let c = &f["subscription_update_confirm"];
            let sub = sub_of("flow_data[subscription_update_confirm][subscription]", c["subscription"].as_str())?;
            let items = c["items"].as_array().cloned().unwrap_or_default();
            if items.is_empty() {
                return Err(missing("flow_data[subscription_update_confirm][items]"));
            }
            out["subscription_update_confirm"] = json!({"discounts": [], "items": items, "subscription": sub});
        }
        other => return Err(invalid(format!("Invalid flow_data[type]: must be one of payment_method_update, subscription_cancel, subscription_update, or subscription_update_confirm (got {}).", crate::core::shown(other))).param("flow_data[type]")),
    }
    if let Some(ac) = f.get("after_completion") {
        let t = ac["type"].as_str().unwrap_or("portal_homepage");
        out["after_completion"]["type"] = json!(t);
        match t {
            "redirect" => {
                let url = ac["redirect"]["return_url"].as_str().ok_or_else(|| missing("flow_data[after_completion][redirect][return_url]"))?;
                out["after_completion"]["redirect"] = json!({"return_url": url});
            }
            "hosted_confirmation" => out["after_completion"]["hosted_confirmation"] = json!({"custom_message": ac["hosted_confirmation"]["custom_message"]}),
            _ => {}
        }
    }
    Ok(out)
}
