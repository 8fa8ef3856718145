//! Plans: the older form of recurring prices. A plan is a recurring price seen the old way
//! (Stripe keeps one object for both: a plan's id is a price id, and every recurring price
//! is listed as a plan), so the twin keeps prices and answers plans as views of them.

use super::*;

/// A recurring price as the plan it also is.
pub(super) fn plan_view(price: &Value) -> Value {
    let r = &price["recurring"];
    let mut o = json!({
        "id": price["id"], "object": "plan", "active": price["active"], "aggregate_usage": r["aggregate_usage"],
        "amount": price["unit_amount"], "amount_decimal": price["unit_amount_decimal"], "billing_scheme": price["billing_scheme"],
        "created": price["created"], "currency": price["currency"], "interval": r["interval"], "interval_count": r["interval_count"],
        "livemode": false, "metadata": price["metadata"], "meter": r["meter"], "nickname": price["nickname"], "product": price["product"],
        "tiers_mode": price["tiers_mode"], "transform_usage": price["transform_quantity"], "trial_period_days": r["trial_period_days"],
        "usage_type": r["usage_type"],
    });
    if let Some(tiers) = price.get("tiers") {
        o["tiers"] = tiers.clone();
    }
    o
}

fn as_plan(price: Value) -> Value {
    plan_view(&price)
}

fn plan_of(w: &World, id: &str) -> Result<Value, StripeError> {
    w.get_kind("price", id).filter(|p| !p["recurring"].is_null()).ok_or_else(|| no_such("plan", id, "plan"))
}

pub(super) fn plan_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let mut f = serde_json::Map::new();
    let cur = currency(p)?;
    f.insert("currency".into(), json!(cur));
    let interval = p.req_str("interval")?.to_string();
    let mut recurring = json!({"interval": interval});
    for (from, to) in [("interval_count", "interval_count"), ("usage_type", "usage_type"), ("aggregate_usage", "aggregate_usage"), ("trial_period_days", "trial_period_days"), ("meter", "meter")] {
        if let Some(v) = p.get(from) {
            recurring[to] = v.clone();
        }
    }
    f.insert("recurring".into(), recurring);
    match (p.get("product"), p.str("product")) {
        (_, Some(id)) => {
            f.insert("product".into(), json!(id));
        }
        (Some(Value::Object(data)), None) => {
            let mut data = data.clone();
            let name = data.get("name").and_then(Value::as_str).ok_or_else(|| missing("product[name]"))?.to_string();
            data.insert("name".into(), json!(name));
            f.insert("product_data".into(), Value::Object(data));
        }
        _ => return Err(missing("product")),
    }
    for (from, to) in [("amount", "unit_amount"), ("amount_decimal", "unit_amount_decimal"), ("nickname", "nickname"), ("billing_scheme", "billing_scheme"), ("tiers", "tiers"), ("tiers_mode", "tiers_mode"), ("active", "active"), ("metadata", "metadata")] {
        if let Some(v) = p.0.get(from) {
            f.insert(to.into(), v.clone());
        }
    }
    if let Some(t) = p.get("transform_usage") {
        f.insert("transform_quantity".into(), t.clone());
    }
    if p.get("amount").is_none() && p.get("amount_decimal").is_none() && p.str("billing_scheme") != Some("tiered") {
        return Err(missing("amount"));
    }
    if let Some(id) = p.str("id") {
        if w.exists(id) {
            return Err(invalid("Plan already exists.").code("resource_already_exists").param("id"));
        }
        f.insert("id".into(), json!(id));
    }
    let price = price_create(w, call, &Params(f)).map_err(|e| {
        // The price's parameter names, as the plan calls them.
        let param = e.param.as_deref().map(|x| match x {
            "unit_amount" => "amount".to_string(),
            "unit_amount_decimal" => "amount_decimal".to_string(),
            "transform_quantity" => "transform_usage".to_string(),
            "product_data" => "product".to_string(),
            x => x.strip_prefix("recurring[").and_then(|r| r.strip_suffix(']')).map(str::to_string).unwrap_or_else(|| x.replace("product_data", "product")),
        });
        StripeError { param, ..e }
    })?;
    let plan = plan_view(&price);
    emit(w, call, "plan.created", &plan, None);
    Ok(plan)
}

pub(super) fn plan_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    plan_of(w, call.param("id")).map(|p| plan_view(&p))
}

pub(super) fn plan_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let mut price = plan_of(w, &id)?;
    if let Some(prod) = p.str("product") {
        get_or_404(w, "product", prod, "product").map_err(|e| e.param("product"))?;
        price["product"] = json!(prod);
    }
    if let Some(a) = p.bool("active")? {
        price["active"] = json!(a);
    }
    if let Some(t) = p.int("trial_period_days")? {
        price["recurring"]["trial_period_days"] = json!(t);
    }
    p.copy(&mut price, &["nickname"]);
    p.metadata_into(&mut price)?;
    let before = plan_view(&w.get(&id).unwrap_or_default());
    let after = replace_emit(w, call, &id, "price.updated", price);
    let plan = plan_view(&after);
    emit(w, call, "plan.updated", &plan, Some(previous(&before, &plan)));
    Ok(plan)
}

pub(super) fn plan_delete(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    let price = plan_of(w, &id)?;
    w.remove(call, &id);
    emit(w, call, "plan.deleted", &plan_view(&price), None);
    emit(w, call, "price.deleted", &price, None);
    Ok(deleted(&id, "plan"))
}

pub(super) fn plan_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let active = p.bool("active")?;
    list_shaped(w, call, "price", p, |o| !o["recurring"].is_null() && active.is_none_or(|a| o["active"] == a) && field_is(o, "product", p.str("product")), Some(as_plan))
}
