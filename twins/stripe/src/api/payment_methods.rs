//! PaymentMethods: created, attached to and detached from customers.

use super::*;

pub(super) fn pm_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let mut data = Value::Object(p.0.clone());
    if data["type"].is_null() {
        return Err(missing("type"));
    }
    if let Some(tok) = p.get("card").and_then(|c| c.as_str()).map(str::to_string) {
        data["card"] = json!({"token": tok});
    }
    let mut pm = pm_from_data(w, &data, "")?;
    p.metadata_into(&mut pm)?;
    let pm = w.insert(Some(call), pm);
    Ok(pm)
}

pub(super) fn pm_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    if id.starts_with("pm_card_") {
        let id = resolve_pm(w, call, &id, "id")?;
        return Ok(w.get(&id).unwrap());
    }
    get_or_404(w, "payment_method", &id, "PaymentMethod")
}

pub(super) fn pm_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let mut probe = get_or_404(w, "payment_method", &id, "PaymentMethod")?;
    p.metadata_into(&mut probe)?;
    let pm = modify_emit(w, call, &id, "payment_method.updated", |pm| {
        pm["metadata"] = probe["metadata"].clone();
        if let Some(bd) = p.get("billing_details").and_then(Value::as_object) {
            for (k, v) in bd {
                pm["billing_details"][k] = v.clone();
            }
        }
        if let Some(card) = p.get("card").and_then(Value::as_object) {
            for k in ["exp_month", "exp_year"] {
                if let Some(n) = card.get(k).and_then(Value::as_str).and_then(|s| s.parse::<i64>().ok()) {
                    pm["card"][k] = json!(n);
                }
            }
        }
    });
    Ok(pm)
}

pub(crate) fn attach(w: &mut World, call: &mut Call, pm: &str, cus: &str) -> Res {
    let id = resolve_pm(w, call, pm, "payment_method")?;
    get_or_404(w, "customer", cus, "customer")?;
    let cur = w.get(&id).unwrap()["customer"].clone();
    if !cur.is_null() && cur != cus {
        return Err(invalid("The payment method you provided has already been attached to a customer.").code("payment_method_unexpected_state").param("payment_method"));
    }
    let pm_obj = w.get(&id).unwrap();
    if pm_obj["type"] == "card" && pm_obj["card"]["last4"] != "0341" {
        if let Behaviour::Decline(code, decline) = behaviour_of(&pm_obj) {
            let mut e = StripeError::new(402, "card_error", decline_message(code, decline)).code(code).param("");
            e.param = None;
            e.decline_code = Some(decline.to_string());
            return Err(e);
        }
    }
    let pm = w.modify(call, &id, |pm| pm["customer"] = json!(cus));
    emit(w, call, "payment_method.attached", &pm, None);
    Ok(pm)
}

pub(super) fn pm_attach(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let cus = p.req_str("customer")?.to_string();
    attach(w, call, &id, &cus)
}

pub(super) fn pm_detach(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    let pm = get_or_404(w, "payment_method", &id, "PaymentMethod")?;
    if pm["customer"].is_null() {
        return Err(invalid("The payment method you provided is not attached to a customer so detachment is impossible.").code("payment_method_unexpected_state").param("payment_method"));
    }
    let cus = pm["customer"].as_str().unwrap_or_default().to_string();
    let pm = w.modify(call, &id, |pm| pm["customer"] = Value::Null);
    if w.get(&cus).is_some_and(|c| c["invoice_settings"]["default_payment_method"] == id.as_str()) {
        w.modify(call, &cus, |c| c["invoice_settings"]["default_payment_method"] = Value::Null);
    }
    emit(w, call, "payment_method.detached", &pm, Some(json!({"customer": cus})));
    Ok(pm)
}

pub(super) fn pm_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let cus = p.str("customer").map(str::to_string);
    let ty = p.str("type").map(str::to_string);
    if let Some(c) = &cus {
        get_or_404(w, "customer", c, "customer")?;
    }
    list_of(w, call, "payment_method", p, |pm| {
        cus.as_ref().is_none_or(|c| pm["customer"] == c.as_str()) && ty.as_ref().is_none_or(|t| pm["type"] == t.as_str())
    })
}

pub(super) fn customer_pm_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let cus = call.param("id").to_string();
    get_or_404(w, "customer", &cus, "customer")?;
    let ty = p.str("type").map(str::to_string);
    list_of(w, call, "payment_method", p, |pm| pm["customer"] == cus.as_str() && ty.as_ref().is_none_or(|t| pm["type"] == t.as_str()))
}
