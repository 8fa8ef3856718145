//! The catalogue: products, prices and coupons.

use super::*;

pub(super) fn product_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let name = p.req_str("name")?.to_string();
    let id = match p.str("id") {
        Some(id) if w.get(id).is_some() => return Err(invalid(format!("Product already exists.")).code("resource_already_exists").param("id")),
        Some(id) => id.to_string(),
        None => w.new_id("prod"),
    };
    let now = w.now();
    let mut o = json!({
        "id": id, "object": "product", "active": true, "created": now, "default_price": null, "description": null,
        "images": [], "livemode": false, "marketing_features": [], "metadata": {}, "name": name,
        "package_dimensions": null, "shippable": null, "statement_descriptor": null, "tax_code": null,
        "type": "service", "unit_label": null, "updated": now, "url": null,
    });
    p.copy(&mut o, &["description", "images", "statement_descriptor", "unit_label", "url", "tax_code"]);
    if let Some(a) = p.bool("active")? {
        o["active"] = json!(a);
    }
    p.metadata_into(&mut o)?;
    let o = w.insert(Some(call), o);
    emit(w, call, "product.created", &o, None);
    if let Some(dp) = p.get("default_price_data").cloned() {
        let mut data = dp.as_object().cloned().unwrap_or_default();
        data.insert("product".into(), json!(id));
        let price = price_create(w, call, &Params(data))?;
        w.modify(call, &id, |o| o["default_price"] = price["id"].clone());
    }
    Ok(w.get(&id).unwrap())
}

pub(super) fn product_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let active = p.bool("active")?;
    let shippable = p.bool("shippable")?;
    let ids = p.strs("ids");
    list_of(w, call, "product", p, |o| {
        active.is_none_or(|a| o["active"] == a)
            && shippable.is_none_or(|a| o["shippable"] == a)
            && (ids.is_empty() || ids.iter().any(|id| o["id"] == id.as_str()))
            && field_is(o, "url", p.str("url"))
            && field_is(o, "type", p.str("type"))
    })
}

pub(super) fn product_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    get_or_404(w, "product", &id, "product")
}

pub(super) fn product_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let mut probe = get_or_404(w, "product", &id, "product")?;
    p.metadata_into(&mut probe)?;
    let active = p.bool("active")?;
    if let Some(dp) = p.str("default_price") {
        get_or_404(w, "price", dp, "price").map_err(|e| e.param("default_price"))?;
    }
    let now = w.now();
    Ok(modify_emit(w, call, &id, "product.updated", |o| {
        p.copy(o, &["name", "description", "images", "statement_descriptor", "unit_label", "url", "default_price"]);
        o["metadata"] = probe["metadata"].clone();
        if let Some(a) = active {
            o["active"] = json!(a);
        }
        o["updated"] = json!(now);
    }))
}

pub(super) fn product_delete(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    let o = get_or_404(w, "product", &id, "product")?;
    if w.all("price").any(|pr| pr["product"] == id.as_str()) {
        return Err(invalid("This product cannot be deleted because it has one or more user-created prices.").code("product_has_prices"));
    }
    w.remove(call, &id);
    emit(w, call, "product.deleted", &o, None);
    Ok(json!({"id": id, "object": "product", "deleted": true}))
}

pub(crate) fn price_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let cur = currency(p)?;
    let holder = lookup_key_holder(w, p, None)?;
    let product = match (p.str("product"), p.get("product_data")) {
        (Some(pr), _) => {
            get_or_404(w, "product", pr, "product").map_err(|e| e.param("product"))?;
            pr.to_string()
        }
        (None, Some(pd)) => {
            let data = pd.as_object().cloned().unwrap_or_default();
            product_create(w, call, &Params(data))?["id"].as_str().unwrap().to_string()
        }
        _ => return Err(invalid("You must specify either `product` or `product_data` when creating a price.").code("parameter_missing").param("product")),
    };
    let mut unit_amount = p.int("unit_amount")?;
    let decimal = p.str("unit_amount_decimal").map(str::to_string);
    if unit_amount.is_some() && decimal.is_some() {
        return Err(invalid("You may only specify one of these parameters: unit_amount, unit_amount_decimal.").code("parameters_exclusive").param("unit_amount"));
    }
    if unit_amount.is_none() && decimal.is_none() && p.get("custom_unit_amount").is_none() {
        return Err(missing("unit_amount"));
    }
    // A price given in fractions of the currency's unit keeps its decimal; a whole one is its
    // `unit_amount` too.
    if let Some(d) = &decimal {
        let (whole, frac) = d.split_once('.').unwrap_or((d, ""));
        if decimal_times(d, 1).is_none() {
            return Err(invalid(format!("Invalid decimal: {}", crate::core::shown(d))).param("unit_amount_decimal"));
        }
        if frac.bytes().all(|b| b == b'0') {
            unit_amount = whole.parse().ok();
        }
    }
    let recurring = match p.get("recurring") {
        Some(r) => {
            let interval = r["interval"].as_str().ok_or_else(|| missing("recurring[interval]"))?;
            if !["day", "week", "month", "year"].contains(&interval) {
                return Err(invalid("Invalid recurring[interval]: must be one of day, week, month, or year").param("recurring[interval]"));
            }
            let count: i64 = r["interval_count"].as_str().and_then(|s| s.parse().ok()).unwrap_or(1);
            json!({"aggregate_usage": null, "interval": interval, "interval_count": count, "meter": null, "trial_period_days": r["trial_period_days"].as_str().and_then(|s| s.parse::<i64>().ok()), "usage_type": r["usage_type"].as_str().unwrap_or("licensed")})
        }
        None => Value::Null,
    };
    let id = w.new_id("price");
    let mut o = json!({
        "id": id, "object": "price", "active": true, "billing_scheme": "per_unit", "created": w.now(),
        "currency": cur, "custom_unit_amount": null, "livemode": false, "lookup_key": null, "metadata": {},
        "nickname": null, "product": product, "tax_behavior": "unspecified", "tiers_mode": null,
        "transform_quantity": null, "type": if recurring.is_null() { "one_time" } else { "recurring" },
        "recurring": recurring, "unit_amount": unit_amount, "unit_amount_decimal": decimal.or(unit_amount.map(|u| u.to_string())),
    });
    p.copy(&mut o, &["nickname", "lookup_key", "tax_behavior"]);
    if let Some(a) = p.bool("active")? {
        o["active"] = json!(a);
    }
    p.metadata_into(&mut o)?;
    release_lookup_key(w, call, holder);
    let o = w.insert(Some(call), o);
    emit(w, call, "price.created", &o, None);
    Ok(o)
}

/// The other price holding the `lookup_key` asked for: an error unless
/// `transfer_lookup_key=true`, which names it to give the key up.
pub(super) fn lookup_key_holder(w: &World, p: &Params, own: Option<&str>) -> Result<Option<String>, StripeError> {
    let Some(key) = p.str("lookup_key").filter(|k| !k.is_empty()) else { return Ok(None) };
    let transfer = p.bool("transfer_lookup_key")?.unwrap_or(false);
    let Some(holder) = w.all("price").find(|o| o["lookup_key"] == key && own.is_none_or(|id| o["id"] != id)) else { return Ok(None) };
    let hid = holder["id"].as_str().unwrap_or_default().to_string();
    if !transfer {
        return Err(invalid(format!("A price (`{hid}`) already uses that lookup key.")).param("lookup_key"));
    }
    Ok(Some(hid))
}

pub(super) fn release_lookup_key(w: &mut World, call: &mut Call, holder: Option<String>) {
    if let Some(h) = holder {
        modify_emit(w, call, &h, "price.updated", |o| o["lookup_key"] = Value::Null);
    }
}

pub(super) fn price_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let product = p.str("product").map(str::to_string);
    let active = p.bool("active")?;
    let ty = p.str("type").map(str::to_string);
    let keys = p.strs("lookup_keys");
    // `recurring[interval]=month`, `recurring[usage_type]=metered`.
    let recurring: Vec<(String, String)> = p.get("recurring").and_then(Value::as_object).map(|m| m.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string()))).collect()).unwrap_or_default();
    list_of(w, call, "price", p, |o| {
        product.as_ref().is_none_or(|x| o["product"] == x.as_str())
            && active.is_none_or(|a| o["active"] == a)
            && ty.as_ref().is_none_or(|x| o["type"] == x.as_str())
            && (keys.is_empty() || keys.iter().any(|k| o["lookup_key"] == k.as_str()))
            && field_is(o, "currency", p.str("currency"))
            && recurring.iter().all(|(k, v)| o["recurring"].is_object() && o["recurring"][k] == v.as_str())
    })
}

pub(super) fn price_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    get_or_404(w, "price", &id, "price")
}

pub(super) fn price_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let mut probe = get_or_404(w, "price", &id, "price")?;
    if p.has("unit_amount") || p.has("currency") || p.has("recurring") {
        return Err(invalid("Received unknown parameter: unit_amount. Prices are immutable: create a new price instead.").param("unit_amount"));
    }
    p.metadata_into(&mut probe)?;
    let active = p.bool("active")?;
    let holder = lookup_key_holder(w, p, Some(&id))?;
    release_lookup_key(w, call, holder);
    Ok(modify_emit(w, call, &id, "price.updated", |o| {
        p.copy(o, &["nickname", "lookup_key", "tax_behavior"]);
        o["metadata"] = probe["metadata"].clone();
        if let Some(a) = active {
            o["active"] = json!(a);
        }
    }))
}

pub(super) fn coupon_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let pct = p.get("percent_off").and_then(Value::as_str).map(|s| s.parse::<f64>().map_err(|_| invalid(format!("Invalid decimal: {s}")).param("percent_off"))).transpose()?;
    let off = p.int("amount_off")?;
    if pct.is_none() == off.is_none() {
        return Err(invalid("You must pass exactly one of percent_off or amount_off.").param("percent_off"));
    }
    if let Some(x) = pct {
        if !(0.0..=100.0).contains(&x) || x == 0.0 {
            return Err(invalid("Invalid percent_off: must be greater than 0 and at most 100").param("percent_off"));
        }
    }
    let cur = if off.is_some() { Some(currency(p)?) } else { None };
    let duration = p.str("duration").unwrap_or("once");
    if !["forever", "once", "repeating"].contains(&duration) {
        return Err(invalid("Invalid duration: must be one of forever, once, or repeating").param("duration"));
    }
    let months = p.int("duration_in_months")?;
    if duration == "repeating" && months.is_none() {
        return Err(missing("duration_in_months"));
    }
    let id = match p.str("id") {
        Some(id) if w.get(id).is_some() => return Err(invalid("Coupon already exists.").code("resource_already_exists").param("id")),
        Some(id) => id.to_string(),
        None => crate::core::base62(w.seq * 7919 + 1, 8),
    };
    w.seq += 1;
    let mut o = json!({
        "id": id, "object": "coupon", "amount_off": off, "created": w.now(), "currency": cur, "duration": duration,
        "duration_in_months": months, "livemode": false, "max_redemptions": p.int("max_redemptions")?, "metadata": {},
        "name": p.str("name"), "percent_off": pct, "redeem_by": p.int("redeem_by")?, "times_redeemed": 0, "valid": true,
    });
    p.metadata_into(&mut o)?;
    let o = w.insert(Some(call), o);
    emit(w, call, "coupon.created", &o, None);
    Ok(o)
}

pub(super) fn coupon_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    list_of(w, call, "coupon", p, |_| true)
}

pub(super) fn coupon_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    get_or_404(w, "coupon", &id, "coupon")
}

pub(super) fn coupon_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let mut probe = get_or_404(w, "coupon", &id, "coupon")?;
    p.metadata_into(&mut probe)?;
    Ok(modify_emit(w, call, &id, "coupon.updated", |o| {
        p.copy(o, &["name"]);
        o["metadata"] = probe["metadata"].clone();
    }))
}

pub(super) fn coupon_delete(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    let o = get_or_404(w, "coupon", &id, "coupon")?;
    w.remove(call, &id);
    emit(w, call, "coupon.deleted", &o, None);
    Ok(json!({"id": id, "object": "coupon", "deleted": true}))
}

/// An intent's `automatic_payment_methods`: as asked, else (API versions since 2023-08-16)
/// enabled whenever no `payment_method_types` were named. Naming both is refused.
pub(super) fn automatic_payment_methods(p: &Params) -> Result<Value, StripeError> {
    let typed = !p.strs("payment_method_types").is_empty();
    match p.get("automatic_payment_methods") {
        Some(apm) if apm["enabled"] == "true" => {
            if typed {
                return Err(invalid("You may only specify one of these parameters: automatic_payment_methods, payment_method_types.").param("automatic_payment_methods"));
            }
            Ok(json!({"allow_redirects": apm["allow_redirects"].as_str().unwrap_or("always"), "enabled": true}))
        }
        Some(_) => Ok(Value::Null),
        None if typed => Ok(Value::Null),
        None => Ok(json!({"allow_redirects": "always", "enabled": true})),
    }
}

/// What `qty` of `price` cost, in the currency's smallest unit: `unit_amount × qty`, or for a
/// price given only as `unit_amount_decimal` (fractions of the smallest unit), the decimal
/// times the quantity, rounded to the nearest unit (half up).
pub fn price_total(price: &Value, qty: i64) -> i64 {
    if let Some(u) = price["unit_amount"].as_i64() {
        return u.saturating_mul(qty);
    }
    price["unit_amount_decimal"].as_str().and_then(|d| decimal_times(d, qty)).unwrap_or(0)
}

/// A price's unit amount as a line's description shows it: the whole amount or the decimal.
pub fn unit_text(price: &Value) -> String {
    match (price["unit_amount"].as_i64(), price["unit_amount_decimal"].as_str()) {
        (Some(u), _) => u.to_string(),
        (None, Some(d)) => d.to_string(),
        _ => "0".into(),
    }
}

/// `d`, a decimal of at most 12 places (Stripe's precision) and 18 whole digits, times `qty`,
/// rounded half up; `None` when `d` is no such decimal or the product overflows.
fn decimal_times(d: &str, qty: i64) -> Option<i64> {
    let (whole, frac) = d.split_once('.').unwrap_or((d, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || whole.len() > 18 || frac.len() > 12 || !digits(whole) || !digits(frac) {
        return None;
    }
    let scale = 10i128.pow(frac.len() as u32);
    let n: i128 = whole.parse::<i128>().ok()? * scale + if frac.is_empty() { 0 } else { frac.parse::<i128>().ok()? };
    let total = n.checked_mul(qty as i128)?;
    i64::try_from((2 * total + scale) / (2 * scale)).ok()
}
