//! Customers and their balance transactions.

use super::*;

pub(crate) fn customer_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = w.new_id("cus");
    let mut c = customer_obj(&id, w.now());
    p.copy(&mut c, &["email", "name", "phone", "description", "address", "shipping", "preferred_locales"]);
    full_addresses(&mut c);
    if let Some(b) = p.int("balance")? {
        c["balance"] = json!(b);
    }
    p.metadata_into(&mut c)?;
    if let Some(tc) = p.str("test_clock") {
        if w.get_kind("test_helpers.test_clock", tc).is_none() {
            return Err(no_such_ref("test_clock", tc, "test_clock"));
        }
        c["test_clock"] = json!(tc);
    }
    let asked = crate::billing::discount_params(w, p, None, &[])?;
    let mut c = w.insert(Some(call), c);
    if let Some(pm) = p.str("payment_method") {
        attach(w, call, pm, &id)?;
    }
    if let Some(d) = p.get("invoice_settings").and_then(|v| v["default_payment_method"].as_str()).map(str::to_string) {
        let pm = resolve_pm(w, call, &d, "invoice_settings[default_payment_method]")?;
        w.modify(call, &id, |c| c["invoice_settings"]["default_payment_method"] = json!(pm));
    }
    if let Some(r) = asked.as_ref().and_then(|l| l.first()) {
        let now = crate::billing::now_for(w, &id);
        let d = crate::billing::redeem(w, call, r, &id, None, None, now);
        c = w.modify(call, &id, |c| c["discount"] = d);
    }
    emit(w, call, "customer.created", &c, None);
    Ok(w.get(&id).unwrap_or(c))
}

pub fn customer_obj(id: &str, created: i64) -> Value {
    json!({
        "id": id, "object": "customer", "address": null, "balance": 0, "created": created,
        "currency": null, "default_source": null, "delinquent": false, "description": null,
        "discount": null, "email": null, "invoice_prefix": format!("{}", &id[id.len() - 8..].to_uppercase()),
        "invoice_settings": {"custom_fields": null, "default_payment_method": null, "footer": null, "rendering_options": null},
        "livemode": false, "metadata": {}, "name": null, "next_invoice_sequence": 1, "phone": null,
        "preferred_locales": [], "shipping": null, "tax_exempt": "none", "test_clock": null,
    })
}

pub(super) fn customer_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    match w.get(&id) {
        Some(c) if c["object"] == "customer" => Ok(c.clone()),
        _ => match w.0.tombstones_contains(&id) {
            true => Ok(json!({"id": id, "object": "customer", "deleted": true})),
            false => Err(no_such("customer", &id, "id")),
        },
    }
}

/// An address hash as Stripe answers it: sent whole, it replaces the old one, so every
/// field not sent is null.
pub(super) fn full_address(a: &Value) -> Value {
    let mut out = json!({"city": null, "country": null, "line1": null, "line2": null, "postal_code": null, "state": null});
    for k in ["city", "country", "line1", "line2", "postal_code", "state"] {
        if let Some(v) = a.get(k).filter(|v| !v.is_null() && *v != "") {
            out[k] = v.clone();
        }
    }
    out
}

/// A customer's `address` and `shipping` hashes with all their fields.
pub(super) fn full_addresses(c: &mut Value) {
    if c["address"].is_object() {
        c["address"] = full_address(&c["address"]);
    }
    if c["shipping"].is_object() {
        let s = c["shipping"].clone();
        c["shipping"] = json!({"address": full_address(&s["address"]), "name": s["name"], "phone": s["phone"]});
    }
}

pub(super) fn customer_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    get_or_404(w, "customer", &id, "customer")?;
    let mut probe = w.get(&id).unwrap();
    p.metadata_into(&mut probe)?;
    let dpm = match p.get("invoice_settings").and_then(|v| v["default_payment_method"].as_str()) {
        Some(pm) => {
            let pm_obj = w.get_kind("payment_method", pm).ok_or_else(|| no_such_ref("PaymentMethod", pm, "invoice_settings[default_payment_method]"))?;
            if pm_obj["customer"] != id.as_str() {
                return Err(invalid(format!("The customer does not have a payment method with the ID {pm}. The payment method must be attached to the customer.")).param("invoice_settings[default_payment_method]"));
            }
            Some(pm.to_string())
        }
        None => None,
    };
    let old = probe["discount"].clone();
    let discount = match crate::billing::discount_params(w, p, Some(&id), &[])?.as_ref().and_then(|l| l.first()) {
        Some(r) => {
            let now = crate::billing::now_for(w, &id);
            let d = crate::billing::redeem(w, call, r, &id, None, None, now);
            if old.is_object() {
                emit(w, call, "customer.discount.deleted", &crate::billing::deleted_discount(&old), None);
            }
            Some(d)
        }
        None => None,
    };
    let c = modify_emit(w, call, &id, "customer.updated", |c| {
        if let Some(d) = discount {
            c["discount"] = d;
        }
        p.copy(c, &["email", "name", "phone", "description", "address", "shipping"]);
        full_addresses(c);
        c["metadata"] = probe["metadata"].clone();
        if let Some(pm) = dpm {
            c["invoice_settings"]["default_payment_method"] = json!(pm);
        }
        if let Ok(Some(b)) = p.int("balance") {
            c["balance"] = json!(b);
        }
    });
    Ok(c)
}

pub(super) fn customer_delete(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    let c = get_or_404(w, "customer", &id, "customer")?;
    crate::billing::end_customer_subscriptions(w, call, &id);
    w.remove(call, &id);
    w.0.tombstone(&id);
    emit(w, call, "customer.deleted", &c, None);
    Ok(json!({"id": id, "object": "customer", "deleted": true}))
}

pub(super) fn customer_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    list_of(w, call, "customer", p, |c| field_is(c, "email", p.str("email")) && field_is(c, "test_clock", p.str("test_clock")))
}

pub(super) fn customer_search(w: &mut World, call: &mut Call, p: &Params) -> Res {
    search_of(w, call, "customer", p)
}

pub(super) fn cbt_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let cus = call.param("id").to_string();
    get_or_404(w, "customer", &cus, "customer")?;
    let amount = p.req_int("amount")?;
    let cur = currency(p)?;
    let mut t = balance_transaction_object(w, &cus, amount, &cur, "adjustment", None);
    p.copy(&mut t, &["description"]);
    p.metadata_into(&mut t)?;
    Ok(move_balance(w, call, t))
}

/// A customer balance transaction moving `cus`'s balance by `amount`, not yet kept.
pub(crate) fn balance_transaction_object(w: &mut World, cus: &str, amount: i64, cur: &str, kind: &str, invoice: Option<&str>) -> Value {
    let id = w.new_id("cbtxn");
    let old = w.get(cus).map_or(0, |c| c["balance"].as_i64().unwrap_or(0));
    json!({
        "id": id, "object": "customer_balance_transaction", "amount": amount, "created": w.now(),
        "credit_note": null, "currency": cur, "customer": cus, "description": null,
        "ending_balance": old + amount, "invoice": invoice, "livemode": false, "metadata": {}, "type": kind,
    })
}

/// Keep balance transaction `t` and move its customer's balance to its ending balance.
pub(crate) fn move_balance(w: &mut World, call: &mut Call, t: Value) -> Value {
    let t = w.insert(Some(call), t);
    let (cus, cur, balance) = (t["customer"].as_str().unwrap_or_default().to_string(), t["currency"].clone(), t["ending_balance"].clone());
    modify_emit(w, call, &cus, "customer.updated", |c| {
        c["balance"] = balance;
        if c["currency"].is_null() {
            c["currency"] = cur;
        }
    });
    t
}

pub(super) fn cbt_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let cus = call.param("id").to_string();
    get_or_404(w, "customer", &cus, "customer")?;
    list_of(w, call, "customer_balance_transaction", p, |t| t["customer"] == cus.as_str())
}

/// The customer balance transaction the path names, of the customer it names.
fn path_cbt(w: &World, call: &Call) -> Result<Value, StripeError> {
    let cus = call.param("id");
    get_or_404(w, "customer", cus, "customer")?;
    let t = call.param("transaction");
    w.get_kind("customer_balance_transaction", t).filter(|x| x["customer"] == cus).ok_or_else(|| no_such("customer_balance_transaction", t, "transaction"))
}

pub(super) fn cbt_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    path_cbt(w, call)
}

pub(super) fn cbt_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let mut t = path_cbt(w, call)?;
    let id = t["id"].as_str().unwrap_or_default().to_string();
    p.copy(&mut t, &["description"]);
    p.metadata_into(&mut t)?;
    Ok(w.modify(call, &id, |x| *x = t))
}

pub(super) fn customer_pm_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let cus = call.param("id").to_string();
    get_or_404(w, "customer", &cus, "customer")?;
    let pm = call.param("payment_method");
    w.get_kind("payment_method", pm).filter(|o| o["customer"] == cus.as_str()).ok_or_else(|| no_such("PaymentMethod", pm, "payment_method"))
}

pub(super) fn customer_discount_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let cus = call.param("id").to_string();
    let c = get_or_404(w, "customer", &cus, "customer")?;
    if c["discount"].is_object() {
        return Ok(c["discount"].clone());
    }
    Err(StripeError::new(404, "invalid_request_error", format!("No active discount for customer: {cus}")).code("resource_missing"))
}
