//! Quotes: a priced offer that is drafted, finalized (numbered, sent), then accepted or
//! canceled. Accepting one makes what it quoted: a draft invoice for one-time items, or a
//! subscription for recurring ones (its first invoice carrying the one-time items), or a
//! subscription schedule when the quote starts on a later `effective_date`.
//!
//! A quote keeps its line items beside it (`line_items`, answered only when expanded, as
//! Stripe answers them). The PDF is a plain rendering of the quote, not Stripe's layout
//! (declared shape-only).

use pome_twin_sdk::Response;

use super::*;

/// How long a quote stays open by default: 30 days, as Stripe's account default.
const DEFAULT_EXPIRY_SECS: i64 = 30 * 86_400;

/// Line items a quote may have: Stripe's limit.
const MAX_LINES: usize = 20;

/// A quote as answered: without its line items unless they were asked for (`expand`).
fn view(mut q: Value, p: &Params) -> Value {
    let expand = p.strs("expand");
    if !expand.iter().any(|e| e == "line_items") {
        q.as_object_mut().map(|m| m.remove("line_items"));
    }
    if !expand.iter().any(|e| e == "computed.upfront.line_items") {
        q["computed"]["upfront"].as_object_mut().map(|m| m.remove("line_items"));
    }
    q
}

fn public(q: Value) -> Value {
    let mut q = q;
    q.as_object_mut().map(|m| m.remove("line_items"));
    q["computed"]["upfront"].as_object_mut().map(|m| m.remove("line_items"));
    q
}

/// Parameters Stripe takes on quotes that the twin does not model: refused, so an agent
/// never believes them applied.
fn refuse_unmodelled(p: &Params) -> Result<(), StripeError> {
    for k in ["application_fee_amount", "application_fee_percent", "transfer_data", "on_behalf_of", "discounts"] {
        if p.get(k).is_some() {
            return Err(invalid(format!("The Stripe twin does not model `{k}` on quotes; apply it to the invoice or subscription the accepted quote makes.")).param(k));
        }
    }
    if p.get("automatic_tax").is_some_and(|a| a["enabled"] == "true") {
        return Err(invalid("Stripe Tax is not enabled on this account: automatic tax cannot be calculated. Use tax rates (`default_tax_rates`, `line_items[][tax_rates]`) instead.").param("automatic_tax[enabled]"));
    }
    Ok(())
}

/// `line_items` as the quote's `item`s: each a price (or inline `price_data`) and quantity,
/// keeping the items of `old` named by `id`.
fn line_items(w: &mut World, call: &mut Call, given: &[Value], old: &[Value], default_rates: &[Value]) -> Result<Vec<Value>, StripeError> {
    if given.len() > MAX_LINES {
        return Err(invalid(format!("A quote may have at most {MAX_LINES} line items.")).param("line_items"));
    }
    let mut out = Vec::with_capacity(given.len());
    for (i, it) in given.iter().enumerate() {
        let at = |k: &str| format!("line_items[{i}][{k}]");
        let kept = match it["id"].as_str() {
            Some(li) => Some(old.iter().find(|o| o["id"] == li).cloned().ok_or_else(|| no_such_ref("line item", li, &at("id")))?),
            None => None,
        };
        let price = match (it["price"].as_str(), it.get("price_data"), &kept) {
            (Some(pid), _, _) => w.get_kind("price", pid).ok_or_else(|| no_such_ref("price", pid, &at("price")))?,
            (None, Some(Value::Object(data)), _) => {
                let mut data = data.clone();
                data.insert("active".into(), json!("false"));
                price_create(w, call, &Params(data)).map_err(|e| nested_error(e, &at("price_data")))?
            }
            (None, _, Some(k)) => k["price"].clone(),
            _ => return Err(missing(&at("price"))),
        };
        if price["active"] == false && it["price"].is_string() {
            return Err(invalid(format!("The price {} is not active and cannot be quoted.", price["id"].as_str().unwrap_or(""))).param(&at("price")));
        }
        let qty = int_at(&it["quantity"], &at("quantity"))?.or(kept.as_ref().and_then(|k| k["quantity"].as_i64())).unwrap_or(1);
        if qty < 1 {
            return Err(invalid("This value must be greater than or equal to 1.").param(&at("quantity")));
        }
        let rates = match it.get("tax_rates") {
            Some(Value::Array(ids)) => super::tax::tax_rates_of(w, &ids.iter().filter_map(|v| v.as_str().map(str::to_string)).collect::<Vec<_>>(), &at("tax_rates"))?,
            _ => default_rates.to_vec(),
        };
        let id = kept.as_ref().and_then(|k| k["id"].as_str().map(str::to_string)).unwrap_or_else(|| w.new_id("li"));
        out.push(item(&id, &price, qty, &rates, w));
    }
    Ok(out)
}

/// An error of an inline hash's own parameters (`recurring[interval]`), named where the
/// request put them (`line_items[0][price_data][recurring][interval]`).
fn nested_error(e: StripeError, prefix: &str) -> StripeError {
    let param = e.param.as_deref().map(|x| match x.split_once('[') {
        Some((head, rest)) => format!("{prefix}[{head}][{rest}"),
        None => format!("{prefix}[{x}]"),
    });
    StripeError { param, ..e }
}

/// A quote's line item: `qty` of `price`, with the tax its rates add.
fn item(id: &str, price: &Value, qty: i64, rates: &[Value], w: &World) -> Value {
    let subtotal = price_total(price, qty);
    let taxes = super::tax::tax_amounts(subtotal, rates);
    let exclusive: i64 = taxes.iter().filter(|t| !t.1).map(|t| t.0).sum();
    let tax: i64 = taxes.iter().map(|t| t.0).sum();
    let name = price["product"].as_str().and_then(|p| w.get(p)).and_then(|p| p["name"].as_str().map(str::to_string)).unwrap_or_default();
    json!({
        "id": id, "object": "item", "amount_discount": 0, "amount_subtotal": subtotal, "amount_tax": tax, "amount_total": subtotal + exclusive,
        "currency": price["currency"], "description": name, "discounts": [], "price": price, "quantity": qty,
        "taxes": taxes.iter().zip(rates).map(|(t, r)| json!({"amount": t.0, "rate": r, "taxability_reason": null, "taxable_amount": subtotal})).collect::<Vec<_>>(),
    })
}

/// Totals of `items`: (subtotal, tax, total).
fn totals(items: &[&Value]) -> (i64, i64, i64) {
    let sub: i64 = items.iter().map(|i| i["amount_subtotal"].as_i64().unwrap_or(0)).sum();
    let tax: i64 = items.iter().map(|i| i["amount_tax"].as_i64().unwrap_or(0)).sum();
    let total: i64 = items.iter().map(|i| i["amount_total"].as_i64().unwrap_or(0)).sum();
    (sub, tax, total)
}

/// Set a quote's currency, totals and `computed` from its line items. Prices must share a
/// currency, and recurring ones an interval.
fn compute(q: &mut Value) -> Result<(), StripeError> {
    let items: Vec<Value> = q["line_items"]["data"].as_array().cloned().unwrap_or_default();
    let cur = items.first().and_then(|i| i["currency"].as_str()).map(str::to_string);
    if items.iter().any(|i| i["currency"].as_str() != cur.as_deref()) {
        return Err(invalid("All prices on a quote must be in the same currency.").param("line_items"));
    }
    let recurring: Vec<&Value> = items.iter().filter(|i| i["price"]["type"] == "recurring").collect();
    if let Some(first) = recurring.first() {
        let r = &first["price"]["recurring"];
        if recurring.iter().any(|i| i["price"]["recurring"]["interval"] != r["interval"] || i["price"]["recurring"]["interval_count"] != r["interval_count"]) {
            return Err(invalid("All recurring prices on a quote must have the same billing interval.").param("line_items"));
        }
    }
    let all: Vec<&Value> = items.iter().collect();
    let (sub, tax, total) = totals(&all);
    let details = |tax: i64| json!({"amount_discount": 0, "amount_shipping": 0, "amount_tax": tax});
    q["currency"] = json!(cur);
    q["amount_subtotal"] = json!(sub);
    q["amount_total"] = json!(total);
    q["total_details"] = details(tax);
    q["computed"]["upfront"] = json!({"amount_subtotal": sub, "amount_total": total, "line_items": {"object": "list", "data": items, "has_more": false, "url": format!("/v1/quotes/{}/computed_upfront_line_items", q["id"].as_str().unwrap_or(""))}, "total_details": details(tax)});
    q["computed"]["recurring"] = match recurring.first() {
        Some(first) => {
            let (rs, rt, rtotal) = totals(&recurring);
            json!({"amount_subtotal": rs, "amount_total": rtotal, "interval": first["price"]["recurring"]["interval"], "interval_count": first["price"]["recurring"]["interval_count"], "total_details": details(rt)})
        }
        None => Value::Null,
    };
    Ok(())
}

/// The fields a create and an update share.
fn apply(w: &mut World, call: &mut Call, p: &Params, q: &mut Value) -> Result<(), StripeError> {
    refuse_unmodelled(p)?;
    if let Some(c) = p.str("customer") {
        let cus = w.get_kind("customer", c).ok_or_else(|| no_such_ref("customer", c, "customer"))?;
        q["customer"] = json!(c);
        q["test_clock"] = cus["test_clock"].clone();
    }
    p.copy(q, &["description", "header", "footer"]);
    if let Some(m) = p.str("collection_method") {
        q["collection_method"] = json!(m);
    }
    if let Some(d) = p.get("invoice_settings") {
        q["invoice_settings"]["days_until_due"] = json!(int_at(&d["days_until_due"], "invoice_settings[days_until_due]")?);
    }
    if q["collection_method"] == "send_invoice" && q["invoice_settings"]["days_until_due"].is_null() {
        return Err(invalid("Quotes with collection_method=send_invoice need invoice_settings[days_until_due].").code("parameter_missing").param("invoice_settings[days_until_due]"));
    }
    if let Some(t) = p.int("expires_at")? {
        if t <= w.now() {
            return Err(invalid("The quote's expires_at must be in the future.").param("expires_at"));
        }
        q["expires_at"] = json!(t);
    }
    if let Some(sd) = p.get("subscription_data") {
        q["subscription_data"]["description"] = sd.get("description").map_or(q["subscription_data"]["description"].clone(), |v| if v == "" { Value::Null } else { v.clone() });
        if let Some(e) = sd.get("effective_date") {
            q["subscription_data"]["effective_date"] = match e.as_str() {
                Some("current_period_end") => return Err(invalid("effective_date=current_period_end applies only to quotes that update a subscription, which the Stripe twin does not model.").param("subscription_data[effective_date]")),
                Some("") | None => Value::Null,
                Some(_) => json!(int_at(e, "subscription_data[effective_date]")?),
            };
        }
        if sd.get("trial_period_days").is_some() {
            q["subscription_data"]["trial_period_days"] = json!(int_at(&sd["trial_period_days"], "subscription_data[trial_period_days]")?);
        }
    }
    let rates = match p.get("default_tax_rates") {
        Some(Value::Array(ids)) => {
            let r = super::tax::tax_rates_of(w, &ids.iter().filter_map(|v| v.as_str().map(str::to_string)).collect::<Vec<_>>(), "default_tax_rates")?;
            q["default_tax_rates"] = json!(r.iter().map(|r| r["id"].clone()).collect::<Vec<_>>());
            Some(r)
        }
        Some(Value::String(s)) if s.is_empty() => {
            q["default_tax_rates"] = json!([]);
            Some(Vec::new())
        }
        _ => None,
    };
    if let Some(Value::Array(given)) = p.get("line_items") {
        let old = q["line_items"]["data"].as_array().cloned().unwrap_or_default();
        let defaults = match rates {
            Some(r) => r,
            None => q["default_tax_rates"].as_array().into_iter().flatten().filter_map(|id| id.as_str().and_then(|id| w.get(id))).collect(),
        };
        let items = line_items(w, call, given, &old, &defaults)?;
        q["line_items"] = json!({"object": "list", "data": items, "has_more": false, "url": format!("/v1/quotes/{}/line_items", q["id"].as_str().unwrap_or(""))});
    }
    p.metadata_into(q)?;
    compute(q)
}

pub(super) fn quote_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = w.new_id("qt");
    let now = w.now();
    let mut q = json!({
        "id": id, "object": "quote", "amount_subtotal": 0, "amount_total": 0, "application": null, "application_fee_amount": null,
        "application_fee_percent": null, "automatic_tax": {"enabled": false, "liability": null, "status": null}, "collection_method": "charge_automatically",
        "computed": {"recurring": null, "upfront": {"amount_subtotal": 0, "amount_total": 0, "total_details": {"amount_discount": 0, "amount_shipping": 0, "amount_tax": 0}}},
        "created": now, "currency": null, "customer": null, "default_tax_rates": [], "description": null, "discounts": [],
        "expires_at": now + DEFAULT_EXPIRY_SECS, "footer": null, "from_quote": null, "header": null, "invoice": null,
        "invoice_settings": {"days_until_due": null, "issuer": {"type": "self"}},
        "line_items": {"object": "list", "data": [], "has_more": false, "url": format!("/v1/quotes/{id}/line_items")},
        "livemode": false, "metadata": {}, "number": null, "on_behalf_of": null, "status": "draft",
        "status_transitions": {"accepted_at": null, "canceled_at": null, "finalized_at": null}, "subscription": null,
        "subscription_data": {"description": null, "effective_date": null, "metadata": null, "trial_period_days": null},
        "subscription_schedule": null, "test_clock": null, "total_details": {"amount_discount": 0, "amount_shipping": 0, "amount_tax": 0}, "transfer_data": null,
    });
    // `from_quote`: a copy of another quote (a revision names it so).
    if let Some(f) = p.get("from_quote") {
        let src = f["quote"].as_str().ok_or_else(|| missing("from_quote[quote]"))?;
        let o = w.get_kind("quote", src).ok_or_else(|| no_such_ref("quote", src, "from_quote[quote]"))?;
        let revision = bool_at(&f["is_revision"], "from_quote[is_revision]")?.unwrap_or(false);
        if revision && o["status"] != "open" {
            return Err(invalid("Only an open quote can be revised.").param("from_quote[quote]"));
        }
        for k in ["collection_method", "customer", "default_tax_rates", "description", "footer", "header", "invoice_settings", "metadata", "subscription_data", "test_clock"] {
            q[k] = o[k].clone();
        }
        let items: Vec<Value> = o["line_items"]["data"].as_array().into_iter().flatten().map(|i| {
            let mut i = i.clone();
            i["id"] = json!(w.new_id("li"));
            i
        }).collect();
        q["line_items"]["data"] = json!(items);
        q["from_quote"] = json!({"is_revision": revision, "quote": src});
    }
    if p.get("test_clock").is_some() && p.get("customer").is_none() && q["customer"].is_null() {
        let tc = p.str("test_clock").unwrap_or_default();
        w.get_kind("test_helpers.test_clock", tc).ok_or_else(|| no_such_ref("test_clock", tc, "test_clock"))?;
        q["test_clock"] = json!(tc);
    }
    apply(w, call, p, &mut q)?;
    let q = w.insert(Some(call), q);
    emit(w, call, "quote.created", &public(q.clone()), None);
    Ok(view(q, p))
}

fn path_quote(w: &World, call: &Call) -> Result<(String, Value), StripeError> {
    let id = call.param("id").to_string();
    let q = w.get_kind("quote", &id).ok_or_else(|| no_such("quote", &id, "quote"))?;
    Ok((id, q))
}

pub(super) fn quote_retrieve(w: &mut World, call: &mut Call, p: &Params) -> Res {
    Ok(view(path_quote(w, call)?.1, p))
}

pub(super) fn quote_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let (id, mut q) = path_quote(w, call)?;
    if q["status"] != "draft" {
        return Err(invalid(format!("You can only update a quote while it is a draft; this quote is {}.", q["status"].as_str().unwrap_or(""))).code("quote_unexpected_state"));
    }
    apply(w, call, p, &mut q)?;
    let q = w.modify(call, &id, |x| *x = q);
    Ok(view(q, p))
}

pub(super) fn quote_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    list_shaped(w, call, "quote", p, |q| field_is(q, "customer", p.str("customer")) && field_is(q, "status", p.str("status")) && field_is(q, "test_clock", p.str("test_clock")), Some(public))
}

/// Now for a quote: its test clock's time when it has one.
fn quote_now(w: &World, q: &Value) -> i64 {
    match q["customer"].as_str() {
        Some(c) => crate::billing::now_for(w, c),
        None => q["test_clock"].as_str().and_then(|tc| w.get(tc)).and_then(|tc| tc["frozen_time"].as_i64()).unwrap_or_else(|| w.now()),
    }
}

pub(super) fn quote_finalize(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let (id, q) = path_quote(w, call)?;
    if q["status"] != "draft" {
        return Err(invalid(format!("Only a draft quote can be finalized; this quote is {}.", q["status"].as_str().unwrap_or(""))).code("quote_unexpected_state"));
    }
    if q["customer"].is_null() {
        return Err(invalid("A quote needs a customer before it can be finalized.").code("quote_missing_customer").param("customer"));
    }
    if q["line_items"]["data"].as_array().is_none_or(Vec::is_empty) {
        return Err(invalid("A quote needs at least one line item before it can be finalized.").param("line_items"));
    }
    let now = quote_now(w, &q);
    if let Some(t) = p.int("expires_at")? {
        if t <= now {
            return Err(invalid("The quote's expires_at must be in the future.").param("expires_at"));
        }
    }
    if p.int("expires_at")?.is_none() && q["expires_at"].as_i64().is_some_and(|t| t <= now) {
        return Err(invalid("This quote's expires_at has passed: set a later one to finalize it.").param("expires_at"));
    }
    let n = w.all("quote").filter(|x| x["number"].is_string()).count() + 1;
    let expires = p.int("expires_at")?;
    let q = w.modify(call, &id, |x| {
        x["status"] = json!("open");
        x["number"] = json!(format!("QT-TWIN-{n:04}"));
        x["status_transitions"]["finalized_at"] = json!(now);
        if let Some(t) = expires {
            x["expires_at"] = json!(t);
        }
    });
    emit(w, call, "quote.finalized", &public(q.clone()), None);
    Ok(view(q, p))
}

pub(super) fn quote_cancel(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let (id, q) = path_quote(w, call)?;
    if q["status"] != "draft" && q["status"] != "open" {
        return Err(invalid(format!("Only a draft or open quote can be canceled; this quote is {}.", q["status"].as_str().unwrap_or(""))).code("quote_unexpected_state"));
    }
    let now = quote_now(w, &q);
    let q = w.modify(call, &id, |x| {
        x["status"] = json!("canceled");
        x["status_transitions"]["canceled_at"] = json!(now);
    });
    emit(w, call, "quote.canceled", &public(q.clone()), None);
    Ok(view(q, p))
}

/// A handler's parameters as form pairs (what billing's own handlers take).
fn form(pairs: &[(String, String)]) -> Result<Params, StripeError> {
    Ok(Params(crate::core::nest(pairs)?))
}

pub(super) fn quote_accept(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let (id, q) = path_quote(w, call)?;
    if q["status"] != "open" {
        return Err(invalid(format!("Only an open (finalized) quote can be accepted; this quote is {}.", q["status"].as_str().unwrap_or(""))).code("quote_unexpected_state"));
    }
    let now = quote_now(w, &q);
    if q["expires_at"].as_i64().is_some_and(|t| t <= now) {
        return Err(invalid("This quote has expired and can no longer be accepted.").code("quote_expired"));
    }
    let cus = q["customer"].as_str().unwrap_or_default().to_string();
    let items: Vec<Value> = q["line_items"]["data"].as_array().cloned().unwrap_or_default();
    let (recurring, one_time): (Vec<&Value>, Vec<&Value>) = items.iter().partition(|i| i["price"]["type"] == "recurring");
    let rates_of = |i: &Value| -> Vec<String> { i["taxes"].as_array().into_iter().flatten().filter_map(|t| t["rate"]["id"].as_str().map(str::to_string)).collect() };
    let method = q["collection_method"].as_str().unwrap_or("charge_automatically").to_string();
    let days = q["invoice_settings"]["days_until_due"].as_i64();
    let mut invoice = Value::Null;
    let mut subscription = Value::Null;
    let mut schedule = Value::Null;
    let effective = q["subscription_data"]["effective_date"].as_i64().filter(|t| *t > now);
    if recurring.is_empty() {
        // One-time items: invoice items on a draft invoice of their own.
        let inv = crate::billing::inv_create(w, call, &{
            let mut f = vec![("customer".to_string(), cus.clone()), ("collection_method".into(), method.clone()), ("pending_invoice_items_behavior".into(), "exclude".into())];
            if let Some(d) = days.filter(|_| method == "send_invoice") {
                f.push(("days_until_due".into(), d.to_string()));
            }
            form(&f)?
        })?;
        let inv_id = inv["id"].as_str().unwrap_or_default().to_string();
        for it in &one_time {
            let mut f = vec![("customer".to_string(), cus.clone()), ("price".into(), it["price"]["id"].as_str().unwrap_or_default().to_string()), ("quantity".into(), it["quantity"].to_string()), ("invoice".into(), inv_id.clone())];
            for (k, r) in rates_of(it).into_iter().enumerate() {
                f.push((format!("tax_rates[{k}]"), r));
            }
            crate::billing::ii_create(w, call, &form(&f)?)?;
        }
        let id2 = id.clone();
        w.modify(call, &inv_id, |i| i["quote"] = json!(id2));
        invoice = json!(inv_id);
    } else {
        let mut f = vec![("customer".to_string(), cus.clone()), ("collection_method".into(), method.clone())];
        if let Some(d) = days.filter(|_| method == "send_invoice") {
            f.push(("days_until_due".into(), d.to_string()));
        }
        for (k, it) in recurring.iter().enumerate() {
            f.push((format!("items[{k}][price]"), it["price"]["id"].as_str().unwrap_or_default().to_string()));
            f.push((format!("items[{k}][quantity]"), it["quantity"].to_string()));
        }
        for (k, it) in one_time.iter().enumerate() {
            f.push((format!("add_invoice_items[{k}][price]"), it["price"]["id"].as_str().unwrap_or_default().to_string()));
            f.push((format!("add_invoice_items[{k}][quantity]"), it["quantity"].to_string()));
        }
        if let Some(d) = q["subscription_data"]["description"].as_str() {
            f.push(("description".into(), d.to_string()));
        }
        if let Some(t) = q["subscription_data"]["trial_period_days"].as_i64() {
            f.push(("trial_period_days".into(), t.to_string()));
        }
        match effective {
            Some(start) => {
                let mut sf = vec![("customer".to_string(), cus.clone()), ("start_date".into(), start.to_string())];
                for (k, it) in recurring.iter().enumerate() {
                    sf.push((format!("phases[0][items][{k}][price]"), it["price"]["id"].as_str().unwrap_or_default().to_string()));
                    sf.push((format!("phases[0][items][{k}][quantity]"), it["quantity"].to_string()));
                }
                sf.push(("phases[0][iterations]".into(), "1".into()));
                sf.push(("end_behavior".into(), "release".into()));
                let s = super::subscription_schedules::schedule_create(w, call, &form(&sf)?)?;
                schedule = s["id"].clone();
            }
            None => {
                let s = crate::billing::sub_create(w, call, &form(&f)?)?;
                invoice = s["latest_invoice"].clone();
                subscription = s["id"].clone();
            }
        }
    }
    let q = w.modify(call, &id, |x| {
        x["status"] = json!("accepted");
        x["status_transitions"]["accepted_at"] = json!(now);
        x["invoice"] = invoice;
        x["subscription"] = subscription;
        x["subscription_schedule"] = schedule;
    });
    emit(w, call, "quote.accepted", &public(q.clone()), None);
    Ok(view(q, p))
}

pub(super) fn quote_line_items(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let (_, q) = path_quote(w, call)?;
    crate::core::list_object(&call.req.path, q["line_items"]["data"].as_array().cloned().unwrap_or_default(), p)
}

pub(super) fn quote_upfront_line_items(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let (_, q) = path_quote(w, call)?;
    crate::core::list_object(&call.req.path, q["line_items"]["data"].as_array().cloned().unwrap_or_default(), p)
}

/// `GET /v1/quotes/{id}/pdf`: the finalized quote as a one-page PDF (number, customer, lines,
/// total): a plain rendering, not Stripe's layout.
pub fn quote_pdf(w: &mut World, call: &mut Call) -> Response {
    let id = call.param("id").to_string();
    let q = match w.get_kind("quote", &id) {
        Some(q) => q,
        None => return crate::core::error_response(&no_such("quote", &id, "quote"), &w.current_request),
    };
    if q["status"] == "draft" {
        return crate::core::error_response(&invalid("A draft quote has no PDF: finalize it first.").code("quote_unexpected_state"), &w.current_request);
    }
    let cur = q["currency"].as_str().unwrap_or("usd").to_string();
    let mut text = vec![format!("Quote {}", q["number"].as_str().unwrap_or("")), format!("Customer {}", q["customer"].as_str().unwrap_or(""))];
    for it in q["line_items"]["data"].as_array().into_iter().flatten() {
        text.push(format!("{} x {}  {}", it["quantity"], it["description"].as_str().unwrap_or(""), display(it["amount_total"].as_i64().unwrap_or(0), &cur)));
    }
    text.push(format!("Total {}", display(q["amount_total"].as_i64().unwrap_or(0), &cur)));
    let mut r = Response::empty(200).with_header("content-type", "application/pdf");
    r.body = pdf(&text);
    r
}

/// A minimal one-page PDF showing `lines` of text.
fn pdf(lines: &[String]) -> Vec<u8> {
    let esc = |s: &str| s.replace('\\', "\\\\").replace('(', "\\(").replace(')', "\\)");
    let mut content = String::from("BT /F1 12 Tf 72 720 Td 16 TL\n");
    for l in lines {
        content.push_str(&format!("({}) Tj T*\n", esc(&l.chars().filter(|c| c.is_ascii() && !c.is_ascii_control()).collect::<String>())));
    }
    content.push_str("ET");
    let objects = [
        "<< /Type /Catalog /Pages 2 0 R >>".to_string(),
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_string(),
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>".to_string(),
        format!("<< /Length {} >>\nstream\n{content}\nendstream", content.len()),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_string(),
    ];
    let mut out = String::from("%PDF-1.4\n");
    let mut offsets = Vec::new();
    for (i, o) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.push_str(&format!("{} 0 obj\n{o}\nendobj\n", i + 1));
    }
    let xref = out.len();
    out.push_str(&format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1));
    for o in offsets {
        out.push_str(&format!("{o:010} 00000 n \n"));
    }
    out.push_str(&format!("trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n", objects.len() + 1));
    out.into_bytes()
}
