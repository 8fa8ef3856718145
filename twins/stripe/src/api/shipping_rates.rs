//! Shipping rates: what delivery costs, offered at checkout and charged on invoices.

use super::*;

pub(super) fn shipping_rate_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let display_name = p.req_str("display_name")?.to_string();
    if p.str("type").is_some_and(|t| t != "fixed_amount") {
        return Err(invalid("Invalid type: must be fixed_amount").param("type"));
    }
    let fa = p.get("fixed_amount").ok_or_else(|| missing("fixed_amount"))?;
    let amount = int_at(&fa["amount"], "fixed_amount[amount]")?.ok_or_else(|| missing("fixed_amount[amount]"))?;
    if amount < 0 {
        return Err(invalid("This value must be greater than or equal to 0.").param("fixed_amount[amount]"));
    }
    let cur = fa["currency"].as_str().ok_or_else(|| missing("fixed_amount[currency]"))?.to_ascii_lowercase();
    if !CURRENCIES.contains(&cur.as_str()) {
        return Err(invalid(format!("Invalid currency: {cur}.")).param("fixed_amount[currency]"));
    }
    let options = currency_options(&fa["currency_options"], &cur, None)?;
    let estimate = match p.get("delivery_estimate") {
        Some(e) => delivery_estimate(e)?,
        None => Value::Null,
    };
    if let Some(tc) = p.str("tax_code") {
        if !is_tax_code(tc) {
            return Err(no_such_ref("tax_code", tc, "tax_code"));
        }
    }
    let id = w.new_id("shr");
    let mut o = json!({
        "id": id, "object": "shipping_rate", "active": true, "created": w.now(), "delivery_estimate": estimate,
        "display_name": display_name, "fixed_amount": {"amount": amount, "currency": cur}, "livemode": false,
        "metadata": {}, "tax_behavior": p.str("tax_behavior").unwrap_or("unspecified"), "tax_code": p.str("tax_code"), "type": "fixed_amount",
    });
    if !options.is_empty() {
        o["fixed_amount"]["currency_options"] = Value::Object(options);
    }
    p.metadata_into(&mut o)?;
    Ok(w.insert(Some(call), o))
}

/// `fixed_amount[currency_options]`: the amount in other currencies, each `{amount,
/// tax_behavior}`, merged over `old`.
fn currency_options(v: &Value, base: &str, old: Option<&Value>) -> Result<serde_json::Map<String, Value>, StripeError> {
    let mut out = old.and_then(Value::as_object).cloned().unwrap_or_default();
    let Some(m) = v.as_object() else { return Ok(out) };
    for (cur, opt) in m {
        let at = format!("fixed_amount[currency_options][{cur}]");
        if !CURRENCIES.contains(&cur.as_str()) || cur == base {
            return Err(invalid(format!("Invalid currency in {at}: give another currency than the rate's own.")).param(&at));
        }
        let entry = out.entry(cur.clone()).or_insert_with(|| json!({"amount": null, "tax_behavior": "unspecified"}));
        if let Some(a) = int_at(&opt["amount"], &format!("{at}[amount]"))? {
            entry["amount"] = json!(a);
        }
        if let Some(t) = opt["tax_behavior"].as_str() {
            entry["tax_behavior"] = json!(t);
        }
        if entry["amount"].is_null() {
            return Err(missing(&format!("{at}[amount]")));
        }
    }
    Ok(out)
}

/// `delivery_estimate[minimum|maximum][unit, value]`: the minimum no later than the maximum.
fn delivery_estimate(e: &Value) -> Result<Value, StripeError> {
    let mut out = json!({"maximum": null, "minimum": null});
    for end in ["minimum", "maximum"] {
        let b = &e[end];
        if b.is_null() {
            continue;
        }
        let unit = b["unit"].as_str().ok_or_else(|| missing(&format!("delivery_estimate[{end}][unit]")))?;
        let value = int_at(&b["value"], &format!("delivery_estimate[{end}][value]"))?.ok_or_else(|| missing(&format!("delivery_estimate[{end}][value]")))?;
        if value < 1 {
            return Err(invalid("This value must be greater than or equal to 1.").param(&format!("delivery_estimate[{end}][value]")));
        }
        out[end] = json!({"unit": unit, "value": value});
    }
    let hours = |b: &Value| {
        let per = match b["unit"].as_str() {
            Some("hour") => 1,
            Some("day") | Some("business_day") => 24,
            Some("week") => 168,
            _ => 720,
        };
        b["value"].as_i64().map(|v| v * per)
    };
    if let (Some(lo), Some(hi)) = (hours(&out["minimum"]), hours(&out["maximum"])) {
        if lo > hi {
            return Err(invalid("The delivery estimate's minimum must not be later than its maximum.").param("delivery_estimate[minimum]"));
        }
    }
    Ok(out)
}

pub(super) fn shipping_rate_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    get_or_404(w, "shipping_rate", call.param("id"), "shipping_rate")
}

pub(super) fn shipping_rate_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let mut o = get_or_404(w, "shipping_rate", &id, "shipping_rate")?;
    if let Some(a) = p.bool("active")? {
        o["active"] = json!(a);
    }
    if let Some(t) = p.str("tax_behavior") {
        // Stripe fixes a rate's tax behaviour once it is set.
        if o["tax_behavior"] != "unspecified" && o["tax_behavior"] != t {
            return Err(invalid("tax_behavior cannot be changed once it is set to inclusive or exclusive.").param("tax_behavior"));
        }
        o["tax_behavior"] = json!(t);
    }
    if let Some(fa) = p.get("fixed_amount") {
        let cur = o["fixed_amount"]["currency"].as_str().unwrap_or("usd").to_string();
        let options = currency_options(&fa["currency_options"], &cur, o["fixed_amount"].get("currency_options"))?;
        o["fixed_amount"]["currency_options"] = Value::Object(options);
    }
    p.metadata_into(&mut o)?;
    Ok(w.modify(call, &id, |x| *x = o))
}

pub(super) fn shipping_rate_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let active = p.bool("active")?;
    let cur = p.str("currency").map(str::to_ascii_lowercase);
    list_of(w, call, "shipping_rate", p, |o| active.is_none_or(|a| o["active"] == a) && cur.as_ref().is_none_or(|c| o["fixed_amount"]["currency"] == c.as_str()))
}
