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
    let tiers = tiers_of(p)?;
    let mut unit_amount = p.int("unit_amount")?;
    let decimal = p.str("unit_amount_decimal").map(str::to_string);
    if tiers.is_some() {
        if let Some(given) = ["unit_amount", "unit_amount_decimal"].into_iter().find(|k| p.has(k)) {
            return Err(invalid(format!("You may not specify `{given}` when `billing_scheme` is `tiered`: the tiers give the amounts.")).param(given));
        }
    } else if unit_amount.is_some() && decimal.is_some() {
        return Err(invalid("You may only specify one of these parameters: unit_amount, unit_amount_decimal.").code("parameters_exclusive").param("unit_amount"));
    }
    if tiers.is_none() && unit_amount.is_none() && decimal.is_none() && p.get("custom_unit_amount").is_none() {
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
            let usage_type = r["usage_type"].as_str().unwrap_or("licensed");
            // A metered price charges for usage: reported as usage records, aggregated as
            // `aggregate_usage` says, or as events a billing meter aggregates.
            let aggregate = r["aggregate_usage"].as_str();
            let meter = r["meter"].as_str();
            if usage_type != "metered" {
                if let Some(k) = [("aggregate_usage", aggregate), ("meter", meter)].iter().find(|(_, v)| v.is_some()).map(|(k, _)| *k) {
                    return Err(invalid(format!("You may only specify `recurring[{k}]` when `recurring[usage_type]` is `metered`.")).param(&format!("recurring[{k}]")));
                }
            }
            if let Some(m) = meter {
                if !w.is_kind("billing.meter", m) {
                    return Err(no_such_ref("billing meter", m, "recurring[meter]"));
                }
                if aggregate.is_some() {
                    return Err(invalid("A price billed from a meter aggregates as its meter does: leave out `recurring[aggregate_usage]`.").param("recurring[aggregate_usage]"));
                }
            }
            let aggregate = if usage_type == "metered" && meter.is_none() { Some(aggregate.unwrap_or("sum")) } else { None };
            json!({"aggregate_usage": aggregate, "interval": interval, "interval_count": count, "meter": meter, "trial_period_days": r["trial_period_days"].as_str().and_then(|s| s.parse::<i64>().ok()), "usage_type": usage_type})
        }
        None => Value::Null,
    };
    // Plans name their own ids (the plan is this price); the API's prices do not.
    let id = match p.str("id") {
        Some(id) => id.to_string(),
        None => w.new_id("price"),
    };
    let transform = match p.get("transform_quantity") {
        Some(t) => {
            let divide_by = crate::api::int_at(&t["divide_by"], "transform_quantity[divide_by]")?.ok_or_else(|| missing("transform_quantity[divide_by]"))?;
            if divide_by < 1 {
                return Err(invalid("This value must be greater than or equal to 1.").param("transform_quantity[divide_by]"));
            }
            let round = t["round"].as_str().ok_or_else(|| missing("transform_quantity[round]"))?;
            json!({"divide_by": divide_by, "round": round})
        }
        None => Value::Null,
    };
    let mut o = json!({
        "id": id, "object": "price", "active": true, "billing_scheme": "per_unit", "created": w.now(),
        "currency": cur, "custom_unit_amount": null, "livemode": false, "lookup_key": null, "metadata": {},
        "nickname": null, "product": product, "tax_behavior": "unspecified", "tiers_mode": null,
        "transform_quantity": transform, "type": if recurring.is_null() { "one_time" } else { "recurring" },
        "recurring": recurring, "unit_amount": unit_amount, "unit_amount_decimal": decimal.or(unit_amount.map(|u| u.to_string())),
    });
    if let Some(tiers) = tiers {
        o["billing_scheme"] = json!("tiered");
        o["tiers_mode"] = json!(p.str("tiers_mode"));
        o["tiers"] = Value::Array(tiers);
    }
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

/// Tiers a price may have: far more than any real price schedule uses.
const MAX_TIERS: usize = 250;

/// `billing_scheme=tiered`'s `tiers` and `tiers_mode`, checked and written as the price keeps
/// them (`up_to: null` for the last, unbounded tier); `None` for a price per unit.
fn tiers_of(p: &Params) -> Result<Option<Vec<Value>>, StripeError> {
    if p.str("billing_scheme") != Some("tiered") {
        for k in ["tiers", "tiers_mode"] {
            if p.has(k) {
                return Err(invalid(format!("You may only specify `{k}` when `billing_scheme` is `tiered`.")).param(k));
            }
        }
        return Ok(None);
    }
    p.str("tiers_mode").ok_or_else(|| missing("tiers_mode"))?;
    let given = match p.get("tiers") {
        Some(Value::Array(a)) if !a.is_empty() => a,
        _ => return Err(missing("tiers")),
    };
    if given.len() > MAX_TIERS {
        return Err(invalid(format!("A price may have at most {MAX_TIERS} tiers.")).param("tiers"));
    }
    let mut out = Vec::with_capacity(given.len());
    let mut last_up_to = 0i64;
    for (i, t) in given.iter().enumerate() {
        let at = |k: &str| format!("tiers[{i}][{k}]");
        let up_to = match t["up_to"].as_str() {
            Some("inf") => None,
            Some(n) => match n.parse::<i64>() {
                Ok(n) if n > last_up_to => Some(n),
                _ => return Err(invalid(format!("Invalid {}: tiers' up_to must be whole numbers that increase, with `inf` last.", at("up_to"))).param(&at("up_to"))),
            },
            None => return Err(missing(&at("up_to"))),
        };
        if up_to.is_none() != (i + 1 == given.len()) {
            return Err(invalid("The last tier, and only the last, must have `up_to` set to `inf`.").param(&at("up_to")));
        }
        let mut tier = json!({"flat_amount": null, "flat_amount_decimal": null, "unit_amount": null, "unit_amount_decimal": null, "up_to": up_to});
        for kind in ["unit_amount", "flat_amount"] {
            let decimal_key = format!("{kind}_decimal");
            match (t[kind].as_str(), t[decimal_key.as_str()].as_str()) {
                (Some(_), Some(_)) => return Err(invalid(format!("You may only specify one of these parameters: {}, {}.", at(kind), at(&decimal_key))).code("parameters_exclusive").param(&at(kind))),
                (Some(n), None) => {
                    let n: i64 = n.parse().map_err(|_| invalid(format!("Invalid integer: {}", crate::core::shown(n))).param(&at(kind)))?;
                    tier[kind] = json!(n);
                    tier[decimal_key.as_str()] = json!(n.to_string());
                }
                (None, Some(d)) => {
                    scaled(d).ok_or_else(|| invalid(format!("Invalid decimal: {}", crate::core::shown(d))).param(&at(&decimal_key)))?;
                    tier[decimal_key.as_str()] = json!(d);
                }
                (None, None) => {}
            }
        }
        if tier["unit_amount_decimal"].is_null() && tier["flat_amount_decimal"].is_null() {
            return Err(invalid(format!("Each tier needs an amount: give {} or {}.", at("unit_amount"), at("flat_amount"))).param(&at("unit_amount")));
        }
        last_up_to = up_to.unwrap_or(i64::MAX);
        out.push(tier);
    }
    Ok(Some(out))
}

/// What `qty` of `price` cost, in the currency's smallest unit: `unit_amount × qty`, or for a
/// price given only as `unit_amount_decimal` (fractions of the smallest unit), the decimal
/// times the quantity; a tiered price by its tiers (`graduated`: each tier's units at its
/// rate, plus its flat amount; `volume`: all units at the rate of the tier the quantity falls
/// in, plus its flat amount). Fractions are rounded to the nearest unit, half up, once.
pub fn price_total(price: &Value, qty: i64) -> i64 {
    // `transform_quantity` bills packages: the quantity divided, rounded as it says.
    let qty = match price["transform_quantity"]["divide_by"].as_i64().filter(|d| *d > 0) {
        Some(d) if price["transform_quantity"]["round"] == "up" => (qty + d - 1).div_euclid(d),
        Some(d) => qty.div_euclid(d),
        None => qty,
    };
    if let Some(tiers) = price["tiers"].as_array().filter(|_| price["billing_scheme"] == "tiered") {
        return round_scaled(tiered_scaled(tiers, price["tiers_mode"] == "volume", qty)).unwrap_or(0);
    }
    if let Some(u) = price["unit_amount"].as_i64() {
        return u.saturating_mul(qty);
    }
    price["unit_amount_decimal"].as_str().and_then(|d| decimal_times(d, qty)).unwrap_or(0)
}

/// [`price_total`] of a tiered price, in units of 10⁻¹² (`None` on overflow).
fn tiered_scaled(tiers: &[Value], volume: bool, qty: i64) -> Option<i128> {
    let amount = |t: &Value, key: &str| t[key].as_str().and_then(scaled).unwrap_or(0);
    let cost = |t: &Value, units: i64| amount(t, "unit_amount_decimal").checked_mul(units as i128)?.checked_add(amount(t, "flat_amount_decimal"));
    if volume {
        let t = tiers.iter().find(|t| t["up_to"].as_i64().is_none_or(|u| qty <= u))?;
        return cost(t, qty);
    }
    let (mut total, mut below) = (0i128, 0i64);
    for t in tiers {
        let top = t["up_to"].as_i64().unwrap_or(i64::MAX).min(qty);
        if top <= below {
            break;
        }
        total = total.checked_add(cost(t, top - below)?)?;
        below = top;
    }
    Some(total)
}

/// A price's unit amount as a line's description shows it: the whole amount or the decimal.
pub fn unit_text(price: &Value) -> String {
    match (price["unit_amount"].as_i64(), price["unit_amount_decimal"].as_str()) {
        _ if price["billing_scheme"] == "tiered" => "tiered rates".into(),
        (Some(u), _) => u.to_string(),
        (None, Some(d)) => d.to_string(),
        _ => "0".into(),
    }
}

/// `d`, a decimal of at most 12 places (Stripe's precision) and 18 whole digits, in units of
/// 10⁻¹²; `None` when it is no such decimal.
fn scaled(d: &str) -> Option<i128> {
    let (whole, frac) = d.split_once('.').unwrap_or((d, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || whole.len() > 18 || frac.len() > 12 || !digits(whole) || !digits(frac) {
        return None;
    }
    let frac: i128 = if frac.is_empty() { 0 } else { frac.parse::<i128>().ok()? * 10i128.pow(12 - frac.len() as u32) };
    Some(whole.parse::<i128>().ok()? * 1_000_000_000_000 + frac)
}

/// A scaled amount rounded to whole units, half up.
fn round_scaled(n: Option<i128>) -> Option<i64> {
    i64::try_from((2 * n? + 1_000_000_000_000) / 2_000_000_000_000).ok()
}

/// `d` ([`scaled`]) times `qty`, rounded half up; `None` when `d` is no such decimal or the
/// product overflows.
fn decimal_times(d: &str, qty: i64) -> Option<i64> {
    round_scaled(scaled(d)?.checked_mul(qty as i128))
}
