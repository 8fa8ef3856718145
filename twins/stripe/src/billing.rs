//! Billing: test clocks, subscriptions, invoices and invoice items. Time moves for a
//! customer only through its test clock (`advance`), which renews subscriptions period by
//! period: each renewal invoices and charges the default payment method; a failed charge
//! makes the subscription `past_due`, a cancel-at-period-end ends it.

use pome_twin_sdk::{Call, Router, Value, json};

use crate::World;
use crate::api::{self, emit, field_is};
use crate::core::{Params, Res, StripeError, invalid, list_object, missing, no_such, no_such_ref, run};

macro_rules! h {
    ($f:path) => {
        |w: &mut World, c: &mut Call| run(w, c, $f)
    };
}

pub fn routes(r: Router<World>) -> Router<World> {
    r.post("/v1/test_helpers/test_clocks", "test_helpers.test_clocks.create", h!(clock_create))
        .get("/v1/test_helpers/test_clocks", "test_helpers.test_clocks.list", h!(clock_list))
        .get("/v1/test_helpers/test_clocks/{id}", "test_helpers.test_clocks.retrieve", h!(clock_retrieve))
        .delete("/v1/test_helpers/test_clocks/{id}", "test_helpers.test_clocks.delete", h!(clock_delete))
        .post("/v1/test_helpers/test_clocks/{id}/advance", "test_helpers.test_clocks.advance", h!(clock_advance))
        .post("/v1/subscriptions", "subscriptions.create", h!(sub_create))
        .get("/v1/subscriptions", "subscriptions.list", h!(sub_list))
        .get("/v1/subscriptions/search", "subscriptions.search", h!(sub_search))
        .get("/v1/subscriptions/{id}", "subscriptions.retrieve", h!(sub_retrieve))
        .post("/v1/subscriptions/{id}", "subscriptions.update", h!(sub_update))
        .delete("/v1/subscriptions/{id}", "subscriptions.cancel", h!(sub_cancel))
        .post("/v1/subscriptions/{id}/resume", "subscriptions.resume", h!(sub_resume))
        .delete("/v1/subscriptions/{id}/discount", "subscriptions.delete_discount", h!(sub_discount_delete))
        .delete("/v1/customers/{id}/discount", "customers.delete_discount", h!(customer_discount_delete))
        .get("/v1/invoices/upcoming", "invoices.upcoming", h!(inv_upcoming))
        .get("/v1/invoices/search", "invoices.search", h!(inv_search))
        .post("/v1/invoices/create_preview", "invoices.create_preview", h!(inv_create_preview))
        .get("/v1/subscription_items", "subscription_items.list", h!(si_list))
        .post("/v1/subscription_items", "subscription_items.create", h!(sitem_create))
        .get("/v1/subscription_items/{id}", "subscription_items.retrieve", h!(sitem_retrieve))
        .post("/v1/subscription_items/{id}", "subscription_items.update", h!(sitem_update))
        .delete("/v1/subscription_items/{id}", "subscription_items.delete", h!(sitem_delete))
        .get("/v1/invoiceitems/{id}", "invoiceitems.retrieve", h!(ii_retrieve))
        .post("/v1/invoiceitems/{id}", "invoiceitems.update", h!(ii_update))
        .delete("/v1/invoiceitems/{id}", "invoiceitems.delete", h!(ii_delete))
        .post("/v1/invoices/{id}", "invoices.update", h!(inv_update))
        .delete("/v1/invoices/{id}", "invoices.delete", h!(inv_delete))
        .post("/v1/invoices/{id}/send", "invoices.send", h!(inv_send))
        .post("/v1/invoiceitems", "invoiceitems.create", h!(ii_create))
        .get("/v1/invoiceitems", "invoiceitems.list", h!(ii_list))
        .post("/v1/invoices", "invoices.create", h!(inv_create))
        .get("/v1/invoices", "invoices.list", h!(inv_list))
        .get("/v1/invoices/{id}", "invoices.retrieve", h!(inv_retrieve))
        .post("/v1/invoices/{id}/finalize", "invoices.finalize", h!(inv_finalize))
        .post("/v1/invoices/{id}/pay", "invoices.pay", h!(inv_pay))
        .post("/v1/invoices/{id}/void", "invoices.void", h!(inv_void))
        .post("/v1/invoices/{id}/mark_uncollectible", "invoices.mark_uncollectible", h!(inv_uncollectible))
        .get("/v1/invoices/{id}/lines", "invoices.lines", h!(inv_lines))
}

// ---------------------------------------------------------------------------------------
// Calendar arithmetic (UTC), for billing periods.

fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719468;
    let era = if z >= 0 { z } else { z - 146096 } / 146097;
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// `t` plus `count` intervals; months clamp to the month's last day like Stripe's anchors.
pub fn add_interval(t: i64, interval: &str, count: i64) -> i64 {
    match interval {
        "day" => t + 86400 * count,
        "week" => t + 7 * 86400 * count,
        _ => {
            let months = if interval == "year" { 12 * count } else { count };
            let days = t.div_euclid(86400);
            let secs = t.rem_euclid(86400);
            let (y, m, d) = civil_from_days(days);
            let total = y * 12 + (m - 1) + months;
            let (ny, nm) = (total.div_euclid(12), total.rem_euclid(12) + 1);
            let next_first = if nm == 12 { days_from_civil(ny + 1, 1, 1) } else { days_from_civil(ny, nm + 1, 1) };
            let last = next_first - days_from_civil(ny, nm, 1);
            days_from_civil(ny, nm, d.min(last)) * 86400 + secs
        }
    }
}

/// Steps one test clock advance takes at most (renewals and schedule phases): a daily
/// subscription advanced by years takes about a thousand.
const MAX_CLOCK_STEPS: usize = 100_000;

/// Now for a customer: its test clock's frozen time, or the sandbox's clock.
pub fn now_for(w: &World, customer: &str) -> i64 {
    w.get(customer)
        .and_then(|c| c["test_clock"].as_str().map(str::to_string))
        .and_then(|tc| w.get(&tc))
        .and_then(|tc| tc["frozen_time"].as_i64())
        .unwrap_or_else(|| w.now())
}

// ---------------------------------------------------------------------------------------
// Test clocks.

fn clock_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let t = p.req_int("frozen_time")?;
    let id = w.new_id("clock");
    let o = json!({
        "id": id, "object": "test_helpers.test_clock", "created": w.now(), "deletes_after": t + 30 * 86400,
        "frozen_time": t, "livemode": false, "name": p.str("name"), "status": "ready",
    });
    Ok(w.insert(Some(call), o))
}

fn clock_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    crate::api::list_of(w, call, "test_helpers.test_clock", p, |_| true)
}

fn clock_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    w.get_kind("test_helpers.test_clock", &id).ok_or_else(|| no_such("test_clock", &id, "test_clock"))
}

fn clock_delete(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    w.get_kind("test_helpers.test_clock", &id).ok_or_else(|| no_such("test_clock", &id, "test_clock"))?;
    w.remove(call, &id);
    Ok(json!({"id": id, "object": "test_helpers.test_clock", "deleted": true}))
}

fn clock_advance(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let clock = w.get_kind("test_helpers.test_clock", &id).ok_or_else(|| no_such("test_clock", &id, "test_clock"))?;
    let t = p.req_int("frozen_time")?;
    let from = clock["frozen_time"].as_i64().unwrap_or(0);
    if t <= from {
        return Err(invalid(format!("The test clock's frozen_time must be after its current frozen_time ({from}).")).param("frozen_time"));
    }
    let customers: Vec<String> = w.all("customer").filter(|c| c["test_clock"] == id.as_str()).filter_map(|c| c["id"].as_str().map(str::to_string)).collect();
    let subs: Vec<String> = w
        .order
        .get("subscription")
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|s| w.get(s).is_some_and(|s| s["customer"].as_str().is_some_and(|c| customers.iter().any(|x| x == c))))
        .collect();
    // Three days before a trial ends, Stripe tells the subscription's listeners.
    for sub_id in &subs {
        let Some(sub) = w.get(sub_id) else { continue };
        let Some(notice) = sub["trial_end"].as_i64().map(|e| e - 3 * 86_400) else { continue };
        if sub["status"] == "trialing" && from < notice && notice <= t {
            emit(w, call, "customer.subscription.trial_will_end", &sub, None);
        }
    }
    // A subscription whose first invoice stays unpaid for 23 hours expires, and the invoice
    // is voided.
    for sub_id in &subs {
        let Some(sub) = w.get(sub_id) else { continue };
        let expires = sub["created"].as_i64().unwrap_or(0) + 23 * 3600;
        if sub["status"] != "incomplete" || expires > t {
            continue;
        }
        if let Some(inv) = sub["latest_invoice"].as_str().filter(|i| w.get(i).is_some_and(|i| i["status"] == "open")) {
            w.modify(call, &id, |c| c["frozen_time"] = json!(expires));
            close_unpaid(w, call, inv, Unpaid::Void);
        }
        let after = w.modify(call, sub_id, |s| {
            s["status"] = json!("incomplete_expired");
            s["ended_at"] = json!(expires);
        });
        emit(w, call, "customer.subscription.updated", &after, Some(json!({"status": "incomplete", "ended_at": null})));
    }
    // Step period by period so each renewal happens at its own time; a subscription
    // schedule acting at the same moment (a phase ending where a period does) acts first,
    // so the renewal invoices the new phase. Subscriptions a schedule starts renew too.
    for _ in 0..MAX_CLOCK_STEPS {
        let renewal = w
            .all("subscription")
            .filter(|o| o["customer"].as_str().is_some_and(|c| customers.iter().any(|x| x == c)))
            .filter_map(|o| {
                let live = ["trialing", "active", "past_due"].contains(&o["status"].as_str().unwrap_or(""));
                let end = o["current_period_end"].as_i64()?;
                let id = o["id"].as_str()?.to_string();
                (live && end <= t).then_some((end, id))
            })
            .min();
        let scheduled = api::next_transition(w, &customers, from, t);
        match (renewal, scheduled) {
            (r, Some((at, sched))) if r.as_ref().is_none_or(|(end, _)| at <= *end) => {
                w.modify(call, &id, |c| c["frozen_time"] = json!(at));
                api::transition(w, call, &sched, at);
            }
            (Some((end, sub)), _) => {
                w.modify(call, &id, |c| c["frozen_time"] = json!(end));
                renew(w, call, &sub, end);
            }
            (None, None) => break,
            (None, Some(_)) => unreachable!("a scheduled step without a renewal is the first arm"),
        }
    }
    let clock = w.modify(call, &id, |c| {
        c["frozen_time"] = json!(t);
        c["status"] = json!("ready");
    });
    emit(w, call, "test_helpers.test_clock.ready", &clock, None);
    Ok(clock)
}

// ---------------------------------------------------------------------------------------
// Subscriptions.

fn price_of(w: &World, id: &str, param: &str) -> Result<Value, StripeError> {
    let p = w.get_kind("price", id).ok_or_else(|| no_such_ref("price", id, param))?;
    if p["recurring"].is_null() {
        return Err(invalid(format!("The price specified is set to `type=one_time` but this field only accepts prices with `type=recurring`.")).param(param));
    }
    Ok(p)
}

fn sub_item(w: &mut World, sub: &str, price: &Value, qty: i64, created: i64) -> Value {
    let id = w.new_id("si");
    let mut item = json!({
        "id": id, "object": "subscription_item", "billing_thresholds": null, "created": created, "discounts": [],
        "metadata": {}, "plan": null, "price": price, "quantity": qty, "subscription": sub, "tax_rates": [],
    });
    // A metered price charges for usage: its item has no quantity.
    if metered(price) {
        item.as_object_mut().expect("an item is a hash").remove("quantity");
    }
    item
}

/// Whether `price` charges for usage (`recurring[usage_type]=metered`).
fn metered(price: &Value) -> bool {
    price["recurring"]["usage_type"] == "metered"
}

/// A subscription's metered items charge, at the end of each period, for that period's usage:
/// the line's quantity, and the period it covers.
fn usage_line_quantity(w: &World, item: &Value, cus: &str, usage_from: Option<i64>, to: i64) -> i64 {
    match usage_from {
        Some(from) => api::metered_quantity(w, item["id"].as_str().unwrap_or_default(), cus, &item["price"], from, to),
        None => 0,
    }
}

fn items_list(sub: &str, items: Vec<Value>) -> Value {
    json!({"object": "list", "data": items, "has_more": false, "total_count": items.len(), "url": format!("/v1/subscription_items?subscription={sub}")})
}

pub(crate) fn sub_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let cus = p.req_str("customer")?.to_string();
    w.get_kind("customer", &cus).ok_or_else(|| no_such_ref("customer", &cus, "customer"))?;
    let items = match p.get("items") {
        Some(Value::Array(a)) if !a.is_empty() => a.clone(),
        _ => return Err(missing("items")),
    };
    let mut prices = Vec::new();
    for (i, it) in items.iter().enumerate() {
        let pid = it["price"].as_str().ok_or_else(|| missing(&format!("items[{i}][price]")))?;
        let price = price_of(w, pid, &format!("items[{i}][price]"))?;
        let qty: i64 = it["quantity"].as_str().and_then(|s| s.parse().ok()).unwrap_or(1);
        if metered(&price) && it.get("quantity").is_some() {
            return Err(invalid("Quantity should not be specified where usage_type is `metered`. Remove quantity from the metered price.").param(&format!("items[{i}][quantity]")));
        }
        prices.push((price, qty));
    }
    // `add_invoice_items`: one-time prices the first invoice charges besides the period.
    let mut extra = Vec::new();
    if let Some(Value::Array(adds)) = p.get("add_invoice_items") {
        for (i, it) in adds.iter().enumerate() {
            let at = |k: &str| format!("add_invoice_items[{i}][{k}]");
            let pid = it["price"].as_str().ok_or_else(|| missing(&at("price")))?;
            let price = w.get_kind("price", pid).ok_or_else(|| no_such_ref("price", pid, &at("price")))?;
            if !price["recurring"].is_null() {
                return Err(invalid("The price specified is set to `type=recurring` but this field only accepts prices with `type=one_time`.").param(&at("price")));
            }
            let qty = api::int_at(&it["quantity"], &at("quantity"))?.unwrap_or(1);
            extra.push((price, qty));
        }
    }
    let cur = prices[0].0["currency"].as_str().unwrap_or("usd").to_string();
    if prices.iter().any(|(p, _)| p["currency"] != cur.as_str() || p["recurring"]["interval"] != prices[0].0["recurring"]["interval"]) {
        return Err(invalid("All prices on a subscription must have the same currency and recurring interval.").param("items"));
    }
    let dpm = match p.str("default_payment_method") {
        Some(pm) => {
            w.get_kind("payment_method", pm).ok_or_else(|| no_such_ref("PaymentMethod", pm, "default_payment_method"))?;
            Some(pm.to_string())
        }
        None => None,
    };
    let method = p.str("collection_method").unwrap_or("charge_automatically").to_string();
    if !["charge_automatically", "send_invoice"].contains(&method.as_str()) {
        return Err(invalid("Invalid collection_method: must be one of charge_automatically or send_invoice").param("collection_method"));
    }
    let days = p.int("days_until_due")?;
    if method == "send_invoice" && days.is_none() {
        return Err(invalid("Missing required param: days_until_due.").code("parameter_missing").param("days_until_due"));
    }
    if method == "charge_automatically" && days.is_some() {
        return Err(invalid("You may only specify `days_until_due` when `collection_method` is `send_invoice`.").param("days_until_due"));
    }
    let behavior = p.str("payment_behavior").unwrap_or("allow_incomplete").to_string();
    match behavior.as_str() {
        "allow_incomplete" | "default_incomplete" | "error_if_incomplete" => {}
        "pending_if_incomplete" => return Err(invalid("`pending_if_incomplete` is only used with updates and cannot be passed when creating a subscription.").param("payment_behavior")),
        _ => return Err(invalid("Invalid payment_behavior: must be one of allow_incomplete, default_incomplete, error_if_incomplete, or pending_if_incomplete").param("payment_behavior")),
    }
    let save_pm = match p.get("payment_settings").map(|s| &s["save_default_payment_method"]) {
        Some(Value::String(v)) if v == "on_subscription" || v == "off" => v.clone(),
        Some(Value::String(_)) => return Err(invalid("Invalid payment_settings[save_default_payment_method]: must be one of off or on_subscription").param("payment_settings[save_default_payment_method]")),
        _ => "off".to_string(),
    };
    let now = now_for(w, &cus);
    let trial_days = p.int("trial_period_days")?;
    let trial_end = match (p.int("trial_end")?, trial_days) {
        (Some(t), _) => Some(t),
        (None, Some(d)) if d > 0 => Some(now + d * 86400),
        _ => None,
    };
    let id = w.new_id("sub");
    let mut sub_items = Vec::new();
    for (price, qty) in &prices {
        let it = sub_item(w, &id, price, *qty, now);
        sub_items.push(it);
    }
    let interval = prices[0].0["recurring"]["interval"].as_str().unwrap_or("month").to_string();
    let count = prices[0].0["recurring"]["interval_count"].as_i64().unwrap_or(1);
    let period_end = trial_end.unwrap_or_else(|| add_interval(now, &interval, count));
    // `error_if_incomplete`: a first payment that cannot succeed is refused before anything
    // is made, as Stripe makes no subscription then.
    let first_due: i64 = prices.iter().map(|(p, q)| api::price_total(p, *q)).sum();
    if behavior == "error_if_incomplete" && method == "charge_automatically" && trial_end.is_none() && first_due > 0 {
        let pm = dpm.clone().or_else(|| customer_payment_method(w, &cus));
        match pm {
            None => return Err(invalid("This customer has no attached payment source or default payment method. Please consider adding a default payment method. For more information, visit https://stripe.com/docs/billing/subscriptions/payment-methods-setting#payment-method-priority.").code("resource_missing")),
            Some(pm) => {
                if let Some(e) = api::off_session_refusal(w, &pm) {
                    return Err(e);
                }
            }
        }
    }
    let mut sub = json!({
        "id": id, "object": "subscription", "application": null, "application_fee_percent": null,
        "automatic_tax": {"enabled": false, "liability": null}, "billing_cycle_anchor": trial_end.unwrap_or(now),
        "billing_thresholds": null, "cancel_at": null, "cancel_at_period_end": false, "canceled_at": null,
        "cancellation_details": {"comment": null, "feedback": null, "reason": null}, "collection_method": method,
        "created": now, "currency": cur, "current_period_end": period_end, "current_period_start": now, "customer": cus,
        "days_until_due": days, "default_payment_method": dpm, "default_source": null, "default_tax_rates": [],
        "description": null, "discount": null, "discounts": [], "ended_at": null, "items": items_list(&id, sub_items),
        "latest_invoice": null, "livemode": false, "metadata": {}, "next_pending_invoice_item_invoice": null,
        "on_behalf_of": null, "pause_collection": null, "payment_settings": {"payment_method_options": null, "payment_method_types": null, "save_default_payment_method": save_pm},
        "pending_invoice_item_interval": null, "pending_setup_intent": null, "pending_update": null, "schedule": null,
        "start_date": now, "status": if trial_end.is_some() { "trialing" } else { "incomplete" }, "test_clock": w.get(&cus).unwrap()["test_clock"].clone(),
        "transfer_data": null, "trial_end": trial_end, "trial_settings": {"end_behavior": {"missing_payment_method": "create_invoice"}},
        "trial_start": trial_end.map(|_| now),
    });
    p.copy(&mut sub, &["description"]);
    if let Some(c) = p.bool("cancel_at_period_end")? {
        sub["cancel_at_period_end"] = json!(c);
    }
    if let Some(b) = p.get("trial_settings").and_then(|t| t["end_behavior"]["missing_payment_method"].as_str()) {
        if !["create_invoice", "pause", "cancel"].contains(&b) {
            return Err(invalid("Invalid trial_settings[end_behavior][missing_payment_method]: must be one of cancel, create_invoice, or pause").param("trial_settings[end_behavior][missing_payment_method]"));
        }
        sub["trial_settings"]["end_behavior"]["missing_payment_method"] = json!(b);
    }
    p.metadata_into(&mut sub)?;
    if let Some(list) = discount_params(w, p, Some(&cus), &[])? {
        let ds: Vec<Value> = list.iter().map(|r| redeem(w, call, r, &cus, Some(&id), None, now)).collect();
        sub["discount"] = ds.first().cloned().unwrap_or(Value::Null);
        sub["discounts"] = json!(ds.iter().map(|d| d["id"].clone()).collect::<Vec<_>>());
    }
    let sub = w.insert(Some(call), sub);
    emit(w, call, "customer.subscription.created", &sub, None);
    for (price, qty) in extra {
        let iid = w.new_id("ii");
        let ii = json!({
            "id": iid, "object": "invoiceitem", "amount": api::price_total(&price, qty), "currency": price["currency"], "customer": cus, "date": now,
            "description": w.get(price["product"].as_str().unwrap_or_default()).map(|p| p["name"].clone()).unwrap_or(Value::Null), "discountable": true,
            "discounts": [], "invoice": null, "livemode": false, "metadata": {}, "period": {"end": now, "start": now}, "price": price, "proration": false,
            "quantity": qty, "subscription": id, "tax_rates": [], "test_clock": sub["test_clock"], "unit_amount": price["unit_amount"], "unit_amount_decimal": price["unit_amount_decimal"],
        });
        let ii = w.insert(Some(call), ii);
        emit(w, call, "invoiceitem.created", &ii, None);
    }
    // `default_incomplete` leaves the first invoice's PaymentIntent for the customer to
    // confirm; the others charge the default payment method now.
    let attempt = behavior != "default_incomplete";
    let (inv, paid) = invoice_period(w, call, &id, now, period_end, trial_end.is_some(), "subscription_create", attempt, None);
    let status = match (trial_end.is_some(), paid) {
        (true, _) => "trialing",
        (false, true) => "active",
        (false, false) => "incomplete",
    };
    let sub = w.modify(call, &id, |s| {
        s["latest_invoice"] = json!(inv);
        s["status"] = json!(status);
    });
    Ok(sub)
}

/// Invoice one period of a subscription and try to pay it; returns (invoice id, paid).
/// `usage_from`: where the period that ends at `start` began, whose usage metered items
/// charge (`None` when no period ends: a new subscription's).
#[allow(clippy::too_many_arguments)]
fn invoice_period(w: &mut World, call: &mut Call, sub_id: &str, start: i64, end: i64, trial: bool, reason: &str, attempt: bool, usage_from: Option<i64>) -> (String, bool) {
    let sub = w.get(sub_id).unwrap();
    let cus = sub["customer"].as_str().unwrap_or_default().to_string();
    let cur = sub["currency"].as_str().unwrap_or("usd").to_string();
    let inv_id = w.new_id("in");
    let mut lines = Vec::new();
    for it in sub["items"]["data"].as_array().cloned().unwrap_or_default() {
        let used = metered(&it["price"]);
        let qty = if used { usage_line_quantity(w, &it, &cus, usage_from, start) } else { it["quantity"].as_i64().unwrap_or(1) };
        let (start, end) = if used { (usage_from.unwrap_or(start), start) } else { (start, end) };
        let amount = if trial { 0 } else { api::price_total(&it["price"], qty) };
        let lid = w.new_id("il");
        let desc = format!("{qty} × {} (at {})", it["price"]["product"].as_str().unwrap_or(""), api::unit_text(&it["price"]));
        lines.push(json!({
            "id": lid, "object": "line_item", "amount": amount, "currency": cur, "description": if trial { format!("Trial period for {}", it["price"]["product"].as_str().unwrap_or("")) } else { desc },
            "discount_amounts": [], "discountable": true, "discounts": [], "invoice": inv_id, "livemode": false, "metadata": {},
            "period": {"end": end, "start": start}, "price": it["price"], "proration": false, "proration_details": {"credited_items": null},
            "quantity": qty, "subscription": sub_id, "subscription_item": it["id"], "tax_amounts": [], "tax_rates": [], "type": "subscription",
        }));
    }
    // Pending invoice items (prorations among them) go on the subscription's next invoice.
    lines.extend(take_pending_items(w, call, &cus, Some(sub_id), &inv_id));
    let mut inv = new_invoice(w, &inv_id, &cus, &cur, lines, Some(sub_id), reason, start, end);
    // A subscription that sends its invoices makes them due `days_until_due` days on.
    let send = sub["collection_method"] == "send_invoice";
    if send {
        inv["collection_method"] = json!("send_invoice");
        let created = inv["created"].as_i64().unwrap_or(start);
        inv["due_date"] = json!(created + sub["days_until_due"].as_i64().unwrap_or(0) * 86_400);
    }
    let discs = inherited_discounts(w, &cus, Some(sub_id), start);
    set_discounts(&mut inv, &discs);
    let inv = w.insert(Some(call), inv);
    emit(w, call, "invoice.created", &inv, None);
    let paused = sub["pause_collection"]["behavior"].as_str().map(str::to_string);
    match paused.as_deref() {
        // An invoice to send is finalized and left open for the customer to pay; only a
        // zero one is settled at once. The subscription does not wait for it.
        None if send => {
            let inv = finalize(w, call, &inv_id);
            if inv["amount_due"].as_i64().unwrap_or(0) == 0 {
                pay(w, call, &inv_id, None);
            }
            (inv_id, true)
        }
        None => {
            let inv = finalize(w, call, &inv_id);
            let paid = if attempt || inv["amount_due"].as_i64().unwrap_or(0) == 0 { pay(w, call, &inv_id, None) } else { false };
            (inv_id, paid)
        }
        // Collection paused: the invoice is made, then kept as a draft, voided or written
        // off as the pause says, and the subscription stays as it is.
        Some(behavior) => {
            if behavior != "keep_as_draft" {
                finalize(w, call, &inv_id);
                close_unpaid(w, call, &inv_id, if behavior == "void" { Unpaid::Void } else { Unpaid::Uncollectible });
            }
            (inv_id, true)
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn new_invoice(w: &mut World, id: &str, cus: &str, cur: &str, lines: Vec<Value>, sub: Option<&str>, reason: &str, start: i64, end: i64) -> Value {
    let total: i64 = lines.iter().map(|l| l["amount"].as_i64().unwrap_or(0)).sum();
    let now = now_for(w, cus);
    let c = w.get(cus).unwrap_or(Value::Null);
    json!({
        "id": id, "object": "invoice", "account_country": "US", "account_name": "Pome Twin", "account_tax_ids": null,
        "amount_due": total, "amount_paid": 0, "amount_remaining": total, "amount_shipping": 0, "application": null,
        "application_fee_amount": null, "attempt_count": 0, "attempted": false, "auto_advance": true,
        "automatic_tax": {"enabled": false, "liability": null, "status": null}, "billing_reason": reason, "charge": null,
        "collection_method": "charge_automatically", "created": now, "currency": cur, "custom_fields": null, "customer": cus,
        "customer_address": null, "customer_email": c["email"], "customer_name": c["name"], "customer_phone": c["phone"],
        "customer_shipping": null, "customer_tax_exempt": "none", "customer_tax_ids": [], "default_payment_method": null,
        "default_source": null, "default_tax_rates": [], "description": null, "discount": null, "discounts": [], "due_date": null,
        "effective_at": null, "ending_balance": null, "footer": null, "from_invoice": null, "hosted_invoice_url": null,
        "invoice_pdf": null, "last_finalization_error": null, "latest_revision": null,
        "lines": {"object": "list", "data": lines, "has_more": false, "total_count": lines.len(), "url": format!("/v1/invoices/{id}/lines")},
        "livemode": false, "metadata": {}, "next_payment_attempt": null, "number": null, "on_behalf_of": null, "paid": false,
        "paid_out_of_band": false, "payment_intent": null,
        "payment_settings": {"default_mandate": null, "payment_method_options": null, "payment_method_types": null},
        "period_end": end, "period_start": start, "post_payment_credit_notes_amount": 0, "pre_payment_credit_notes_amount": 0,
        "quote": null, "receipt_number": null, "rendering": null, "shipping_cost": null, "shipping_details": null,
        "starting_balance": 0, "statement_descriptor": null, "status": "draft",
        "status_transitions": {"finalized_at": null, "marked_uncollectible_at": null, "paid_at": null, "voided_at": null},
        "subscription": sub, "subtotal": total, "subtotal_excluding_tax": total, "tax": null, "test_clock": c["test_clock"],
        "total": total, "total_discount_amounts": [], "total_excluding_tax": total, "total_tax_amounts": [], "transfer_data": null,
        "webhooks_delivered_at": null,
    })
}

/// How much of a customer's balance an invoice of `total` takes when it is finalized: all of
/// a debit (a positive balance is owed, and added to what is due), and as much of a credit
/// (negative) as the total uses. Signed as it changes what is due.
fn balance_applied(balance: i64, total: i64) -> i64 {
    if balance > 0 { balance } else { -(-balance).min(total.max(0)) }
}

fn finalize(w: &mut World, call: &mut Call, id: &str) -> Value {
    let draft = w.get(id).unwrap();
    let cus = draft["customer"].as_str().unwrap_or_default().to_string();
    let now = now_for(w, &cus);
    let n = w.all("invoice").filter(|i| i["number"].is_string()).count() + 1;
    // The customer's balance in the invoice's currency is applied: a credit lowers what is
    // due, a debit raises it, and a balance transaction records the move.
    let customer = w.get(&cus).unwrap_or(Value::Null);
    let cur = draft["currency"].as_str().unwrap_or("usd").to_string();
    let balance = if customer["currency"].is_null() || customer["currency"] == cur.as_str() { customer["balance"].as_i64().unwrap_or(0) } else { 0 };
    let applied = balance_applied(balance, draft["total"].as_i64().unwrap_or(0));
    if applied != 0 {
        let t = api::balance_transaction_object(w, &cus, -applied, &cur, "applied_to_invoice", Some(id));
        api::move_balance(w, call, t);
    }
    // Stripe finalizes an invoice with a PaymentIntent for what is due: paying the invoice
    // confirms it, and confirming it (a customer paying on session) pays the invoice.
    let mut due = draft["amount_due"].as_i64().unwrap_or(0) + applied;
    // A negative total (a downgrade's credit) is owed back: it goes to the customer's balance.
    let credited = due.min(0);
    if credited < 0 {
        let t = api::balance_transaction_object(w, &cus, credited, &cur, "applied_to_invoice", Some(id));
        api::move_balance(w, call, t);
        due = 0;
    }
    let pi = if due > 0 {
        let description = match draft["billing_reason"].as_str() {
            Some("subscription_create") => "Subscription creation".to_string(),
            Some("subscription_cycle" | "subscription_update") => "Subscription update".to_string(),
            _ => format!("Invoice TWIN-{n:04}"),
        };
        Value::String(api::invoice_payment_intent(w, call, id, due, &cur, &draft["customer"], &description))
    } else {
        Value::Null
    };
    let inv = w.modify(call, id, |i| {
        i["amount_due"] = json!(due);
        i["payment_intent"] = pi;
        i["amount_remaining"] = json!(due);
        i["starting_balance"] = json!(balance);
        i["ending_balance"] = json!(balance - applied + credited);
        i["status"] = json!("open");
        i["number"] = json!(format!("TWIN-{n:04}"));
        i["status_transitions"]["finalized_at"] = json!(now);
        i["effective_at"] = json!(now);
        i["hosted_invoice_url"] = json!(format!("https://invoice.stripe.com/i/{id}"));
    });
    emit(w, call, "invoice.finalized", &inv, None);
    inv
}

/// Collect an open invoice: confirm its PaymentIntent off session with `pm`, else the
/// subscription's or the customer's default payment method. Whether it is paid now.
fn pay(w: &mut World, call: &mut Call, id: &str, pm: Option<&str>) -> bool {
    let inv = w.get(id).unwrap();
    let cus = inv["customer"].as_str().unwrap_or_default().to_string();
    let now = now_for(w, &cus);
    if inv["amount_remaining"].as_i64().unwrap_or(0) == 0 {
        mark_paid(w, call, id, Value::Null);
        return true;
    }
    let pm = pm.map(str::to_string).or_else(|| match inv["subscription"].as_str().and_then(|s| w.get(s)) {
        Some(sub) => payment_method_for(w, &sub),
        None => customer_payment_method(w, &cus),
    });
    // A PaymentIntent waiting for its customer to authenticate this method is not tried again.
    if let (Some(pm), Some(pi)) = (&pm, inv["payment_intent"].as_str().and_then(|p| w.get(p))) {
        if pi["status"] == "requires_action" && pi["payment_method"].as_str() == Some(pm.as_str()) {
            return false;
        }
    }
    // Set before the attempt, so a failure's `invoice.payment_failed` carries the retry time;
    // a success clears it.
    w.modify(call, id, |i| i["next_payment_attempt"] = json!(now + 3 * 86400));
    match pm {
        Some(pm) => {
            let pi = match inv["payment_intent"].as_str() {
                Some(pi) => pi.to_string(),
                // An invoice finalized before invoices had PaymentIntents (a restored world).
                None => {
                    let due = inv["amount_remaining"].as_i64().unwrap_or(0);
                    let pi = api::invoice_payment_intent(w, call, id, due, inv["currency"].as_str().unwrap_or("usd"), &inv["customer"], &format!("Invoice {}", inv["number"].as_str().unwrap_or("")));
                    w.modify(call, id, |i| i["payment_intent"] = json!(pi));
                    pi
                }
            };
            let mut form = serde_json::Map::new();
            form.insert("payment_method".into(), json!(pm));
            form.insert("off_session".into(), json!("true"));
            // Success and failure reach the invoice through the PaymentIntent's own hooks; a
            // PaymentIntent left waiting for authentication leaves the invoice open.
            api::confirm_payment_intent(w, call, &pi, &Params(form)).is_ok() && w.get(id).is_some_and(|i| i["status"] == "paid")
        }
        None => {
            invoice_payment_failed(w, call, id);
            false
        }
    }
}

/// Invoice `id` paid now, with `charge` (none when nothing was due).
fn mark_paid(w: &mut World, call: &mut Call, id: &str, charge: Value) {
    let cus = w.get(id).and_then(|i| i["customer"].as_str().map(str::to_string)).unwrap_or_default();
    let now = now_for(w, &cus);
    let inv = w.modify(call, id, |i| {
        i["status"] = json!("paid");
        i["paid"] = json!(true);
        i["amount_paid"] = i["amount_remaining"].clone();
        i["amount_remaining"] = json!(0);
        i["attempted"] = json!(true);
        i["charge"] = charge;
        i["next_payment_attempt"] = Value::Null;
        i["status_transitions"]["paid_at"] = json!(now);
    });
    emit(w, call, "invoice.paid", &inv, None);
    emit(w, call, "invoice.payment_succeeded", &inv, None);
}

/// The invoice's PaymentIntent succeeded with `charge` (paid by the twin's collection or
/// confirmed by the customer): the invoice is paid, and a subscription waiting on it as its
/// latest invoice becomes active, keeping the payment method if its settings say so.
pub(crate) fn invoice_payment_succeeded(w: &mut World, call: &mut Call, id: &str, charge: &str, pm: Option<&str>) {
    let Some(inv) = w.get(id) else { return };
    if inv["status"] == "paid" {
        return;
    }
    mark_paid(w, call, id, json!(charge));
    let Some(sub_id) = inv["subscription"].as_str() else { return };
    let Some(sub) = w.get(sub_id) else { return };
    // While a subscription is being made or renewed, its latest invoice is not yet this one,
    // and the caller sets its status.
    if sub["latest_invoice"] != id || !["incomplete", "past_due", "unpaid"].contains(&sub["status"].as_str().unwrap_or("")) {
        return;
    }
    let save = sub["payment_settings"]["save_default_payment_method"] == "on_subscription" && pm.is_some();
    let after = w.modify(call, sub_id, |s| {
        s["status"] = json!("active");
        if save {
            s["default_payment_method"] = json!(pm);
        }
    });
    let (prev, _) = crate::changed_fields(&sub, &after);
    emit(w, call, "customer.subscription.updated", &after, Some(Value::Object(prev)));
}

/// An attempt to pay invoice `id` failed (declined, or nothing to charge).
pub(crate) fn invoice_payment_failed(w: &mut World, call: &mut Call, id: &str) {
    let inv = w.modify(call, id, |i| {
        i["attempted"] = json!(true);
        let n = i["attempt_count"].as_i64().unwrap_or(0);
        i["attempt_count"] = json!(n + 1);
        i["last_finalization_error"] = Value::Null;
    });
    emit(w, call, "invoice.payment_failed", &inv, None);
}

/// An attempt to pay invoice `id` stopped at its PaymentIntent, which waits for the customer
/// to authenticate: the attempt failed, and Stripe says what would complete it.
pub(crate) fn invoice_payment_action_required(w: &mut World, call: &mut Call, id: &str) {
    invoice_payment_failed(w, call, id);
    let inv = w.get(id).unwrap();
    emit(w, call, "invoice.payment_action_required", &inv, None);
}

/// Roll a subscription into its next period at `at`: end it if it cancels at period end,
/// else invoice the new period; a failed payment makes it past_due.
fn renew(w: &mut World, call: &mut Call, sub_id: &str, at: i64) {
    let sub = w.get(sub_id).unwrap();
    if sub["cancel_at_period_end"] == true {
        end_subscription(w, call, sub_id, at, None);
        return;
    }
    if sub["status"] == "trialing" && payment_method_for(w, &sub).is_none() {
        // A trial ending with no way to pay does what the subscription's trial settings say.
        match sub["trial_settings"]["end_behavior"]["missing_payment_method"].as_str() {
            Some("pause") => {
                let s = w.modify(call, sub_id, |s| s["status"] = json!("paused"));
                emit(w, call, "customer.subscription.paused", &s, None);
                emit(w, call, "customer.subscription.updated", &s, Some(json!({"status": "trialing"})));
                return;
            }
            Some("cancel") => {
                end_subscription(w, call, sub_id, at, Some("cancellation_requested"));
                return;
            }
            _ => {}
        }
    }
    if sub["pause_collection"]["resumes_at"].as_i64().is_some_and(|r| r <= at) {
        let s = w.modify(call, sub_id, |s| s["pause_collection"] = Value::Null);
        emit(w, call, "customer.subscription.updated", &s, Some(json!({"pause_collection": sub["pause_collection"]})));
    }
    end_discounts(w, call, sub_id, at);
    let (interval, count) = interval_of(&sub);
    let end = add_interval(at, &interval, count);
    w.modify(call, sub_id, |s| {
        s["current_period_start"] = json!(at);
        s["current_period_end"] = json!(end);
    });
    let (inv, paid) = invoice_period(w, call, sub_id, at, end, false, "subscription_cycle", true, sub["current_period_start"].as_i64());
    let status = if paid { "active" } else { "past_due" };
    let before = sub.clone();
    let after = w.modify(call, sub_id, |s| {
        s["latest_invoice"] = json!(inv);
        s["status"] = json!(status);
    });
    let mut prev = serde_json::Map::new();
    for k in ["current_period_start", "current_period_end", "discount", "discounts", "latest_invoice", "status"] {
        if before[k] != after[k] {
            prev.insert(k.into(), before[k].clone());
        }
    }
    emit(w, call, "customer.subscription.updated", &after, Some(Value::Object(prev)));
}

/// A subscription's repeating discounts whose months are over at `at` leave it, each with
/// its `customer.discount.deleted`.
fn end_discounts(w: &mut World, call: &mut Call, sub_id: &str, at: i64) {
    let Some(sub) = w.get(sub_id) else { return };
    let ds: Vec<Value> = sub["discounts"].as_array().map(|a| a.iter().filter_map(|d| d.as_str().and_then(|d| w.get(d))).collect()).unwrap_or_default();
    let (ended, kept): (Vec<Value>, Vec<Value>) = ds.into_iter().partition(|d| d["end"].as_i64().is_some_and(|e| e <= at));
    if ended.is_empty() {
        return;
    }
    w.modify(call, sub_id, |s| {
        s["discount"] = kept.first().cloned().unwrap_or(Value::Null);
        s["discounts"] = json!(kept.iter().map(|d| d["id"].clone()).collect::<Vec<_>>());
    });
    for d in &ended {
        emit(w, call, "customer.discount.deleted", &deleted_discount(d), None);
    }
}

/// A subscription's billing interval (from its first item's price).
fn interval_of(sub: &Value) -> (String, i64) {
    let price = &sub["items"]["data"][0]["price"];
    (price["recurring"]["interval"].as_str().unwrap_or("month").to_string(), price["recurring"]["interval_count"].as_i64().unwrap_or(1))
}

/// The payment method a subscription's invoices are charged to: its own default, else its
/// customer's invoice default.
fn payment_method_for(w: &World, sub: &Value) -> Option<String> {
    sub["default_payment_method"].as_str().map(str::to_string).or_else(|| customer_payment_method(w, sub["customer"].as_str()?))
}

/// The payment method a customer's invoices are charged to when nothing closer names one.
fn customer_payment_method(w: &World, cus: &str) -> Option<String> {
    w.get(cus).and_then(|c| c["invoice_settings"]["default_payment_method"].as_str().map(str::to_string))
}

/// `POST /v1/subscriptions/{id}/resume`: a paused subscription starts a new period now
/// (or keeps its anchor with `billing_cycle_anchor=unchanged`), invoiced and charged at once.
fn sub_resume(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let sub = w.get_kind("subscription", &id).ok_or_else(|| no_such("subscription", &id, "subscription"))?;
    if sub["status"] != "paused" {
        let st = sub["status"].as_str().unwrap_or("");
        return Err(invalid(format!("Subscription {id} has status {st}; only a paused subscription can be resumed.")).code("subscription_not_paused"));
    }
    let anchor = p.str("billing_cycle_anchor").unwrap_or("now");
    if !["now", "unchanged"].contains(&anchor) {
        return Err(invalid("Invalid billing_cycle_anchor: must be one of now or unchanged").param("billing_cycle_anchor"));
    }
    proration_behavior(p.str("proration_behavior"), "proration_behavior")?;
    let now = now_for(w, sub["customer"].as_str().unwrap_or_default());
    let (interval, count) = interval_of(&sub);
    let (start, end) = if anchor == "now" {
        (now, add_interval(now, &interval, count))
    } else {
        let mut end = sub["current_period_end"].as_i64().unwrap_or(now);
        while end <= now {
            end = add_interval(end, &interval, count);
        }
        (now, end)
    };
    w.modify(call, &id, |s| {
        s["current_period_start"] = json!(start);
        s["current_period_end"] = json!(end);
        if anchor == "now" {
            s["billing_cycle_anchor"] = json!(now);
        }
    });
    let (inv, paid) = invoice_period(w, call, &id, start, end, false, "subscription_update", true, None);
    let status = if paid { "active" } else { "past_due" };
    let after = w.modify(call, &id, |s| {
        s["latest_invoice"] = json!(inv);
        s["status"] = json!(status);
    });
    emit(w, call, "customer.subscription.resumed", &after, None);
    let (before, _) = crate::changed_fields(&sub, &after);
    let mut prev = before;
    prev.remove("id");
    emit(w, call, "customer.subscription.updated", &after, Some(Value::Object(prev)));
    Ok(after)
}

/// The invoice a customer's next billing would make, stored nowhere: the subscription's next
/// period (with proposed item changes) and the customer's pending invoice items.
fn preview(w: &World, call: &Call, p: &Params, items_param: Option<&Value>, with_id: bool) -> Res {
    let sub_id = p.str("subscription").map(str::to_string);
    let sub = match &sub_id {
        Some(s) => Some(w.get_kind("subscription", s).ok_or_else(|| no_such_ref("subscription", s, "subscription"))?),
        None => None,
    };
    let cus = match (p.str("customer"), &sub) {
        (Some(c), _) => c.to_string(),
        (None, Some(s)) => s["customer"].as_str().unwrap_or_default().to_string(),
        (None, None) => return Err(invalid("Missing required param: customer. Provide a customer or a subscription.").code("parameter_missing").param("customer")),
    };
    let c = w.get_kind("customer", &cus).ok_or_else(|| no_such_ref("customer", &cus, "customer"))?;
    // Named by its customer alone, the preview is of the customer's live subscription.
    let (sub_id, sub) = match sub {
        Some(s) => (sub_id, Some(s)),
        None => match w.all("subscription").find(|s| s["customer"] == cus.as_str() && ["active", "trialing", "past_due"].contains(&s["status"].as_str().unwrap_or(""))) {
            Some(s) => (s["id"].as_str().map(str::to_string), Some(s)),
            None => (None, None),
        },
    };
    if let Some(s) = &sub {
        if s["customer"] != cus.as_str() {
            return Err(invalid(format!("The subscription {} does not belong to customer {cus}.", s["id"].as_str().unwrap_or(""))).param("subscription"));
        }
        if s["status"] == "canceled" {
            return Err(StripeError::new(404, "invalid_request_error", format!("No upcoming invoices for customer: {cus}")).code("invoice_upcoming_none"));
        }
    }
    let now = now_for(w, &cus);
    let mut lines = Vec::new();
    let mut start = now;
    let mut cur = None;
    if let Some(s) = &sub {
        // The subscription's items, with the changes the preview proposes.
        let mut items: Vec<(Value, Value, i64)> = s["items"]["data"].as_array().into_iter().flatten().map(|i| (i["id"].clone(), i["price"].clone(), i["quantity"].as_i64().unwrap_or(1))).collect();
        if let Some(Value::Array(changes)) = items_param {
            for (i, ch) in changes.iter().enumerate() {
                let price = match ch["price"].as_str() {
                    Some(pid) => Some(price_of(w, pid, &format!("subscription_items[{i}][price]"))?),
                    None => None,
                };
                let qty = ch["quantity"].as_str().and_then(|q| q.parse::<i64>().ok());
                match ch["id"].as_str() {
                    Some(si) => {
                        let Some(pos) = items.iter().position(|x| x.0 == si) else { return Err(no_such_ref("subscription_item", si, &format!("subscription_items[{i}][id]"))) };
                        if ch["deleted"] == "true" {
                            items.remove(pos);
                            continue;
                        }
                        if let Some(pr) = price {
                            items[pos].1 = pr;
                        }
                        if let Some(q) = qty {
                            items[pos].2 = q;
                        }
                    }
                    None => items.push((Value::Null, price.ok_or_else(|| missing(&format!("subscription_items[{i}][price]")))?, qty.unwrap_or(1))),
                }
            }
        }
        if items_param.is_some() {
            // The prorations the proposed change would make come due on this invoice too.
            let details = p.get("subscription_details").filter(|_| with_id);
            let (behavior, param, date) = match details {
                Some(d) => (d["proration_behavior"].as_str(), "subscription_details[proration_behavior]", d["proration_date"].as_str().and_then(|t| t.parse().ok())),
                None => (p.str("subscription_proration_behavior"), "subscription_proration_behavior", p.int("subscription_proration_date")?),
            };
            if proration_behavior(behavior, param)? != "none" {
                for (n, mut ii) in prorations(w, s, &held_items(s), &items, date.unwrap_or(now)).into_iter().enumerate() {
                    ii["id"] = json!(format!("ii_tmp_{n}"));
                    let mut line = line_of_item(&ii, "");
                    line.as_object_mut().unwrap().remove("invoice");
                    lines.push(line);
                }
            }
        }
        let (interval, count) = interval_of(s);
        start = s["current_period_end"].as_i64().unwrap_or(now);
        let end = add_interval(start, &interval, count);
        let canceling = s["cancel_at_period_end"] == true;
        if !canceling {
            for (i, (si, price, qty)) in items.iter().enumerate() {
                let unit = api::unit_text(price);
                cur = price["currency"].as_str().map(str::to_string);
                // A metered item charges for what was used in the period under way, so far.
                let (qty, period) = if metered(price) {
                    let from = s["current_period_start"].as_i64().unwrap_or(start);
                    (usage_line_quantity(w, &json!({"id": si, "price": price}), &cus, Some(from), now.max(from) + 1), json!({"end": start, "start": from}))
                } else {
                    (*qty, json!({"end": end, "start": start}))
                };
                lines.push(json!({
                    "id": format!("il_tmp_{}{i}", &s["id"].as_str().unwrap_or("")[4..]), "object": "line_item", "amount": api::price_total(price, qty),
                    "currency": price["currency"], "description": format!("{qty} × {} (at {unit})", price["product"].as_str().unwrap_or("")),
                    "discount_amounts": [], "discountable": true, "discounts": [], "livemode": false, "metadata": {},
                    "period": period, "price": price, "proration": false, "proration_details": {"credited_items": null},
                    "quantity": qty, "subscription": s["id"], "subscription_item": si, "tax_amounts": [], "tax_rates": [], "type": "subscription",
                }));
            }
        }
    }
    for ii in w.all("invoiceitem").filter(|i| pending_for(i, &cus, sub_id.as_deref())) {
        cur = cur.or_else(|| ii["currency"].as_str().map(str::to_string));
        let mut line = line_of_item(&ii, "");
        line.as_object_mut().unwrap().remove("invoice");
        lines.push(line);
    }
    if lines.is_empty() {
        return Err(StripeError::new(404, "invalid_request_error", format!("No upcoming invoices for customer: {cus}")).code("invoice_upcoming_none"));
    }
    let cur = cur.unwrap_or_else(|| "usd".into());
    let total: i64 = lines.iter().map(|l| l["amount"].as_i64().unwrap_or(0)).sum();
    let mut inv = json!({
        "object": "invoice", "account_country": "US", "account_name": "Pome Twin", "account_tax_ids": null,
        "amount_due": total, "amount_paid": 0, "amount_remaining": total, "amount_shipping": 0, "application": null,
        "application_fee_amount": null, "attempt_count": 0, "attempted": false, "auto_advance": false,
        "automatic_tax": {"enabled": false, "liability": null, "status": null}, "billing_reason": if sub.is_some() { "upcoming" } else { "manual" }, "charge": null,
        "collection_method": "charge_automatically", "created": start, "currency": cur, "custom_fields": null, "customer": cus,
        "customer_address": null, "customer_email": c["email"], "customer_name": c["name"], "customer_phone": c["phone"],
        "customer_shipping": null, "customer_tax_exempt": "none", "customer_tax_ids": [], "default_payment_method": null,
        "default_source": null, "default_tax_rates": [], "description": null, "discount": null, "discounts": [], "due_date": null,
        "effective_at": null, "ending_balance": null, "footer": null, "from_invoice": null, "hosted_invoice_url": null,
        "invoice_pdf": null, "last_finalization_error": null, "latest_revision": null,
        "lines": {"object": "list", "data": lines, "has_more": false, "total_count": lines.len(), "url": "/v1/invoices/upcoming/lines"},
        "livemode": false, "metadata": {}, "next_payment_attempt": start, "number": null, "on_behalf_of": null, "paid": false,
        "paid_out_of_band": false, "payment_intent": null,
        "payment_settings": {"default_mandate": null, "payment_method_options": null, "payment_method_types": null},
        "period_end": start, "period_start": sub.as_ref().and_then(|s| s["current_period_start"].as_i64()).unwrap_or(start),
        "post_payment_credit_notes_amount": 0, "pre_payment_credit_notes_amount": 0,
        "quote": null, "receipt_number": null, "rendering": null, "shipping_cost": null, "shipping_details": null,
        "starting_balance": c["balance"], "statement_descriptor": null, "status": "draft",
        "status_transitions": {"finalized_at": null, "marked_uncollectible_at": null, "paid_at": null, "voided_at": null},
        "subscription": sub_id, "subtotal": total, "subtotal_excluding_tax": total, "tax": null, "test_clock": c["test_clock"],
        "total": total, "total_discount_amounts": [], "total_excluding_tax": total, "total_tax_amounts": [], "transfer_data": null,
        "webhooks_delivered_at": null,
    });
    let discs = inherited_discounts(w, &cus, sub_id.as_deref(), start);
    set_discounts(&mut inv, &discs);
    if sub.as_ref().is_some_and(|s| s["collection_method"] == "send_invoice") {
        // A subscription that sends its invoices will not try to charge this one.
        inv["collection_method"] = json!("send_invoice");
        inv["next_payment_attempt"] = Value::Null;
    }
    if with_id {
        // Previews answered by create_preview carry an id Stripe marks as not retrievable.
        let key = sub_id.as_deref().unwrap_or(&cus);
        inv.as_object_mut().unwrap().insert("id".into(), json!(format!("upcoming_in_{}", &key[key.find('_').map_or(0, |i| i + 1)..])));
        inv["lines"]["url"] = json!("/v1/invoices/upcoming_in/lines");
    }
    let _ = call;
    Ok(inv)
}

fn inv_search(w: &mut World, call: &mut Call, p: &Params) -> Res {
    api::search_of(w, call, "invoice", p)
}

fn inv_upcoming(w: &mut World, call: &mut Call, p: &Params) -> Res {
    preview(w, call, p, p.get("subscription_items"), false)
}

fn inv_create_preview(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let items = p.get("subscription_details").map(|d| &d["items"]).filter(|v| !v.is_null());
    preview(w, call, p, items, true)
}

fn sub_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    w.get_kind("subscription", &id).ok_or_else(|| no_such("subscription", &id, "id"))
}

fn sub_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let price = p.str("price");
    crate::api::list_of(w, call, "subscription", p, |s| {
        field_is(s, "customer", p.str("customer"))
            && field_is(s, "collection_method", p.str("collection_method"))
            && field_is(s, "test_clock", p.str("test_clock"))
            && match p.str("status") {
                // Canceled subscriptions are listed only when asked for.
                None => s["status"] != "canceled",
                Some("all") => true,
                Some(st) => s["status"] == st,
            }
            && price.is_none_or(|pr| s["items"]["data"].as_array().is_some_and(|a| a.iter().any(|i| i["price"]["id"] == pr)))
    })
}

fn sub_search(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let q = p.req_str("query")?.to_string();
    let mut items = Vec::new();
    for o in w.all("subscription") {
        if crate::core::search_matches(&q, &o)? {
            items.push(o.clone());
        }
    }
    crate::core::search_object(&call.req.path, items, p)
}

/// One subscription item as prorations see it: (item id, price, quantity).
type Held = (Value, Value, i64);

const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/// `15 Jan 2026`, as Stripe writes a proration's date.
fn day_text(t: i64) -> String {
    let (y, m, d) = civil_from_days(t.div_euclid(86_400));
    format!("{d} {} {y}", MONTHS[(m - 1) as usize])
}

/// How a change of items is prorated, from `proration_behavior` (default `create_prorations`).
fn proration_behavior(v: Option<&str>, param: &str) -> Result<String, StripeError> {
    match v.unwrap_or("create_prorations") {
        b @ ("always_invoice" | "create_prorations" | "none") => Ok(b.to_string()),
        _ => Err(invalid("Invalid proration_behavior: must be one of always_invoice, create_prorations, or none").param(param)),
    }
}

/// The invoice items (not yet stored: no id) that changing a subscription's items from `old`
/// to `new` at `at` makes: for each item changed, a credit for the unused rest of the period
/// at what it was, and a charge for the rest at what it becomes, in proportion to the time
/// left. A trial, or a moment outside the period, prorates nothing.
fn prorations(w: &World, sub: &Value, old: &[Held], new: &[Held], at: i64) -> Vec<Value> {
    let (start, end) = (sub["current_period_start"].as_i64().unwrap_or(at), sub["current_period_end"].as_i64().unwrap_or(at));
    if sub["status"] == "trialing" || end <= start || at >= end || at < start {
        return Vec::new();
    }
    let share = |amount: i64| -> i64 {
        let num = amount as i128 * (end - at) as i128;
        let den = (end - start) as i128;
        ((2 * num + den) / (2 * den)) as i64
    };
    let name = |price: &Value| {
        let product = price["product"].as_str().unwrap_or("");
        w.get(product).and_then(|p| p["name"].as_str().map(str::to_string)).unwrap_or_else(|| product.to_string())
    };
    let item = |amount: i64, description: String, held: &Held| {
        json!({
            "id": null, "object": "invoiceitem", "amount": amount, "currency": held.1["currency"], "customer": sub["customer"], "date": at, "description": description,
            "discountable": false, "discounts": [], "invoice": null, "livemode": false, "metadata": {},
            "period": {"end": end, "start": at}, "price": held.1, "proration": true, "quantity": held.2,
            "subscription": sub["id"], "subscription_item": held.0, "tax_rates": [], "test_clock": sub["test_clock"],
            "unit_amount": held.1["unit_amount"], "unit_amount_decimal": held.1["unit_amount_decimal"].as_str().map(str::to_string).or(held.1["unit_amount"].as_i64().map(|u| u.to_string())),
        })
    };
    let day = day_text(at);
    let same = |a: &Held, b: &Held| a.1["id"] == b.1["id"] && a.2 == b.2;
    let mut out = Vec::new();
    for was in old {
        if new.iter().any(|n| n.0 == was.0 && same(n, was)) {
            continue;
        }
        let amount = share(api::price_total(&was.1, was.2));
        out.push(item(-amount, format!("Unused time on {} × {} after {day}", was.2, name(&was.1)), was));
    }
    for is in new {
        if old.iter().any(|o| o.0 == is.0 && same(o, is)) {
            continue;
        }
        let amount = share(api::price_total(&is.1, is.2));
        out.push(item(amount, format!("Remaining time on {} × {} after {day}", is.2, name(&is.1)), is));
    }
    out
}

fn held_items(sub: &Value) -> Vec<Held> {
    sub["items"]["data"].as_array().into_iter().flatten().map(|i| (i["id"].clone(), i["price"].clone(), i["quantity"].as_i64().unwrap_or(1))).collect()
}

/// Whether invoice item `ii` waits for the next invoice of customer `cus` made for `sub`: it is
/// on no invoice yet, and belongs to no other subscription.
fn pending_for(ii: &Value, cus: &str, sub: Option<&str>) -> bool {
    ii["customer"] == cus && ii["invoice"].is_null() && (ii["subscription"].is_null() || ii["subscription"].as_str() == sub)
}

/// The customer's invoice items pending for `sub` ([`pending_for`]), taken onto invoice `inv`
/// as lines.
fn take_pending_items(w: &mut World, call: &mut Call, cus: &str, sub: Option<&str>, inv: &str) -> Vec<Value> {
    let pending: Vec<Value> = w.all("invoiceitem").filter(|i| pending_for(i, cus, sub)).collect();
    let mut lines = Vec::new();
    for ii in pending {
        let id = ii["id"].as_str().unwrap_or_default().to_string();
        let ii = w.modify(call, &id, |i| i["invoice"] = json!(inv));
        lines.push(line_of_item(&ii, inv));
    }
    lines
}

pub(crate) fn sub_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let mut sub = w.get_kind("subscription", &id).ok_or_else(|| no_such("subscription", &id, "id"))?;
    if sub["status"] == "canceled" {
        return Err(invalid("A canceled subscription can only update its cancellation_details and metadata.").code("resource_missing"));
    }
    let before = sub.clone();
    let proration = proration_behavior(p.str("proration_behavior"), "proration_behavior")?;
    let cus = sub["customer"].as_str().unwrap_or_default().to_string();
    let at = match p.int("proration_date")? {
        Some(t) => t,
        None => now_for(w, &cus),
    };
    p.metadata_into(&mut sub)?;
    if let Some(c) = p.bool("cancel_at_period_end")? {
        sub["cancel_at_period_end"] = json!(c);
        sub["cancel_at"] = if c { sub["current_period_end"].clone() } else { Value::Null };
    }
    if let Some(pm) = p.str("default_payment_method") {
        w.get_kind("payment_method", pm).ok_or_else(|| no_such_ref("PaymentMethod", pm, "default_payment_method"))?;
        sub["default_payment_method"] = json!(pm);
    }
    p.copy(&mut sub, &["description"]);
    // Read raw: an empty value, which `Params::get` treats as absent, clears it (how the
    // SDKs send `pause_collection=""`).
    match p.0.get("pause_collection") {
        Some(Value::String(s)) if s.is_empty() => sub["pause_collection"] = Value::Null,
        Some(Value::Object(pc)) => {
            let behavior = pc.get("behavior").and_then(Value::as_str).ok_or_else(|| missing("pause_collection[behavior]"))?;
            if !["keep_as_draft", "mark_uncollectible", "void"].contains(&behavior) {
                return Err(invalid(format!("Invalid pause_collection[behavior]: must be one of keep_as_draft, mark_uncollectible, or void")).param("pause_collection[behavior]"));
            }
            let resumes_at = match pc.get("resumes_at").and_then(Value::as_str) {
                Some(r) => Some(r.parse::<i64>().map_err(|_| invalid(format!("Invalid integer: {r}")).param("pause_collection[resumes_at]"))?),
                None => None,
            };
            sub["pause_collection"] = json!({"behavior": behavior, "resumes_at": resumes_at});
        }
        Some(_) => return Err(invalid("Invalid pause_collection: must be an object or an empty string").param("pause_collection")),
        None => {}
    }
    if let Some(Value::Array(items)) = p.get("items") {
        for (i, it) in items.iter().enumerate() {
            let price = match it["price"].as_str() {
                Some(pid) => Some(price_of(w, pid, &format!("items[{i}][price]"))?),
                None => None,
            };
            let qty = it["quantity"].as_str().and_then(|s| s.parse::<i64>().ok());
            let data = sub["items"]["data"].as_array_mut().unwrap();
            match it["id"].as_str() {
                Some(si) => {
                    let Some(existing) = data.iter_mut().find(|x| x["id"] == si) else {
                        return Err(no_such_ref("subscription_item", si, &format!("items[{i}][id]")));
                    };
                    if it["deleted"] == "true" {
                        let si = si.to_string();
                        data.retain(|x| x["id"] != si.as_str());
                        continue;
                    }
                    if let Some(pr) = price {
                        existing["price"] = pr;
                    }
                    if let Some(q) = qty {
                        existing["quantity"] = json!(q);
                    }
                }
                None => {
                    let pr = price.ok_or_else(|| missing(&format!("items[{i}][price]")))?;
                    let created = sub["created"].as_i64().unwrap_or(0);
                    let item = sub_item(w, &id, &pr, qty.unwrap_or(1), created);
                    sub["items"]["data"].as_array_mut().unwrap().push(item);
                }
            }
        }
        let n = sub["items"]["data"].as_array().map(Vec::len).unwrap_or(0);
        sub["items"]["total_count"] = json!(n);
    }
    let made = if proration == "none" { Vec::new() } else { prorations(w, &before, &held_items(&before), &held_items(&sub), at) };
    let current: Vec<String> = sub["discounts"].as_array().map(|a| a.iter().filter_map(|d| d.as_str().map(str::to_string)).collect()).unwrap_or_default();
    if let Some(list) = discount_params(w, p, Some(&cus), &current)? {
        let now = now_for(w, &cus);
        let ds: Vec<Value> = list.iter().map(|r| redeem(w, call, r, &cus, Some(&id), None, now)).collect();
        for old in current.iter().filter(|o| !ds.iter().any(|d| d["id"] == o.as_str())) {
            if let Some(d) = w.get(old) {
                emit(w, call, "customer.discount.deleted", &deleted_discount(&d), None);
            }
        }
        sub["discount"] = ds.first().cloned().unwrap_or(Value::Null);
        sub["discounts"] = json!(ds.iter().map(|d| d["id"].clone()).collect::<Vec<_>>());
    }
    let after = w.modify(call, &id, |s| *s = sub);
    let mut prev = serde_json::Map::new();
    for (k, v) in before.as_object().unwrap() {
        if after[k] != *v {
            prev.insert(k.clone(), v.clone());
        }
    }
    emit(w, call, "customer.subscription.updated", &after, Some(Value::Object(prev)));
    // Prorations wait as invoice items for the next invoice, or with `always_invoice` are
    // invoiced and collected at once.
    for mut ii in made {
        ii["id"] = json!(w.new_id("ii"));
        let ii = w.insert(Some(call), ii);
        emit(w, call, "invoiceitem.created", &ii, None);
    }
    if proration == "always_invoice" && w.all("invoiceitem").any(|i| i["subscription"] == id.as_str() && i["invoice"].is_null()) {
        let inv_id = w.new_id("in");
        let lines = take_pending_items(w, call, &cus, Some(&id), &inv_id);
        let cur = after["currency"].as_str().unwrap_or("usd").to_string();
        let end = after["current_period_end"].as_i64().unwrap_or(at);
        let inv = new_invoice(w, &inv_id, &cus, &cur, lines, Some(&id), "subscription_update", at, end);
        let inv = w.insert(Some(call), inv);
        emit(w, call, "invoice.created", &inv, None);
        finalize(w, call, &inv_id);
        pay(w, call, &inv_id, None);
        return Ok(w.modify(call, &id, |s| s["latest_invoice"] = json!(inv_id)));
    }
    Ok(after)
}

/// `DELETE /v1/subscriptions/{id}`: end it now. `prorate` credits the unused rest of the
/// period as invoice items; `invoice_now` invoices what is pending for it (those credits
/// among them) on a final invoice, collected at once (a credit goes to the customer's
/// balance); `cancellation_details` (`comment`, `feedback`) is kept on the subscription.
pub(crate) fn sub_cancel(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let sub = w.get_kind("subscription", &id).ok_or_else(|| no_such("subscription", &id, "id"))?;
    if sub["status"] == "canceled" {
        return Err(invalid(format!("No such subscription: '{id}'. It has been canceled.")).code("resource_missing"));
    }
    let invoice_now = p.bool("invoice_now")?.unwrap_or(false);
    let prorate = p.bool("prorate")?.unwrap_or(false);
    let cus = sub["customer"].as_str().unwrap_or_default().to_string();
    let now = now_for(w, &cus);
    if let Some(d) = p.get("cancellation_details").and_then(Value::as_object) {
        let (comment, feedback) = (d.get("comment").cloned(), d.get("feedback").cloned());
        let blank = |v: Value| if v == "" { Value::Null } else { v };
        w.modify(call, &id, |s| {
            if let Some(c) = comment {
                s["cancellation_details"]["comment"] = blank(c);
            }
            if let Some(f) = feedback {
                s["cancellation_details"]["feedback"] = blank(f);
            }
        });
    }
    if prorate {
        let sub = w.get(&id).unwrap_or(sub);
        for mut ii in prorations(w, &sub, &held_items(&sub), &[], now) {
            ii["id"] = json!(w.new_id("ii"));
            let ii = w.insert(Some(call), ii);
            emit(w, call, "invoiceitem.created", &ii, None);
        }
    }
    let ended = end_subscription(w, call, &id, now, Some("cancellation_requested"));
    if invoice_now && w.all("invoiceitem").any(|i| i["subscription"] == id.as_str() && i["invoice"].is_null()) {
        let inv_id = w.new_id("in");
        let lines = take_pending_items(w, call, &cus, Some(&id), &inv_id);
        let cur = ended["currency"].as_str().unwrap_or("usd").to_string();
        let inv = new_invoice(w, &inv_id, &cus, &cur, lines, Some(&id), "subscription_update", now, now);
        let inv = w.insert(Some(call), inv);
        emit(w, call, "invoice.created", &inv, None);
        finalize(w, call, &inv_id);
        pay(w, call, &inv_id, None);
        return Ok(w.modify(call, &id, |s| s["latest_invoice"] = json!(inv_id)));
    }
    Ok(ended)
}

/// End subscription `id` at `at` (canceled, with its `customer.subscription.deleted`),
/// with the cancellation reason when one was asked for.
fn end_subscription(w: &mut World, call: &mut Call, id: &str, at: i64, reason: Option<&str>) -> Value {
    let s = w.modify(call, id, |s| {
        s["status"] = json!("canceled");
        s["canceled_at"] = json!(at);
        s["ended_at"] = json!(at);
        if let Some(r) = reason {
            s["cancellation_details"]["reason"] = json!(r);
        }
    });
    emit(w, call, "customer.subscription.deleted", &s, None);
    s
}

/// A deleted customer's subscriptions end with it, as Stripe cancels them at once.
pub(crate) fn end_customer_subscriptions(w: &mut World, call: &mut Call, customer: &str) {
    let live: Vec<String> = w
        .all("subscription")
        .filter(|s| s["customer"] == customer && !matches!(s["status"].as_str(), Some("canceled" | "incomplete_expired")))
        .filter_map(|s| s["id"].as_str().map(str::to_string))
        .collect();
    let now = now_for(w, customer);
    for id in live {
        end_subscription(w, call, &id, now, Some("cancellation_requested"));
    }
}

/// `DELETE /v1/subscriptions/{id}/discount`: the subscription's discounts end; its next
/// invoices take the customer's, if any.
fn sub_discount_delete(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    let sub = w.get_kind("subscription", &id).ok_or_else(|| no_such("subscription", &id, "subscription"))?;
    let ds: Vec<Value> = sub["discounts"].as_array().map(|a| a.iter().filter_map(|d| d.as_str().and_then(|d| w.get(d))).collect()).unwrap_or_default();
    let first = ds.first().cloned().ok_or_else(|| StripeError::new(404, "invalid_request_error", format!("No active discount for subscription: {id}")).code("resource_missing"))?;
    for d in &ds {
        emit(w, call, "customer.discount.deleted", &deleted_discount(d), None);
    }
    let after = w.modify(call, &id, |s| {
        s["discount"] = Value::Null;
        s["discounts"] = json!([]);
    });
    emit(w, call, "customer.subscription.updated", &after, Some(json!({"discount": sub["discount"], "discounts": sub["discounts"]})));
    Ok(deleted_discount(&first))
}

/// `DELETE /v1/customers/{id}/discount`.
fn customer_discount_delete(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    let c = w.get_kind("customer", &id).ok_or_else(|| no_such("customer", &id, "customer"))?;
    if !c["discount"].is_object() {
        return Err(StripeError::new(404, "invalid_request_error", format!("No active discount for customer: {id}")).code("resource_missing"));
    }
    let gone = deleted_discount(&c["discount"]);
    w.modify(call, &id, |c| c["discount"] = Value::Null);
    emit(w, call, "customer.discount.deleted", &gone, None);
    Ok(gone)
}

/// The subscription holding item `id`, and the item.
fn sitem_find(w: &World, id: &str) -> Result<(String, Value), StripeError> {
    for s in w.all("subscription") {
        if let Some(it) = s["items"]["data"].as_array().and_then(|a| a.iter().find(|i| i["id"] == id)) {
            return Ok((s["id"].as_str().unwrap_or_default().to_string(), it.clone()));
        }
    }
    Err(no_such("subscription_item", id, "id"))
}

/// Change a subscription's items through its update, so events, totals and prorations follow
/// one path (prorated as the item request asks).
fn via_update(w: &mut World, call: &mut Call, sub: &str, item: Vec<(String, String)>, p: &Params) -> Res {
    let mut pairs: Vec<(String, String)> = item.into_iter().map(|(k, v)| (format!("items[0][{k}]"), v)).collect();
    for k in ["proration_behavior", "proration_date"] {
        if let Some(v) = p.str(k) {
            pairs.push((k.to_string(), v.to_string()));
        }
    }
    let params = Params(crate::core::nest(&pairs)?);
    let saved = std::mem::replace(&mut call.params, vec![("id".into(), sub.to_string())]);
    let out = sub_update(w, call, &params);
    call.params = saved;
    out
}

fn sitem_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let sub = p.req_str("subscription")?.to_string();
    w.get_kind("subscription", &sub).ok_or_else(|| no_such_ref("subscription", &sub, "subscription"))?;
    let price = p.req_str("price")?.to_string();
    let mut item = vec![("price".to_string(), price)];
    if let Some(q) = p.int("quantity")? {
        item.push(("quantity".into(), q.to_string()));
    }
    let after = via_update(w, call, &sub, item, p)?;
    Ok(after["items"]["data"].as_array().and_then(|a| a.last()).cloned().unwrap_or(Value::Null))
}

fn sitem_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    Ok(sitem_find(w, call.param("id"))?.1)
}

fn sitem_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let (sub, _) = sitem_find(w, &id)?;
    let mut item = vec![("id".to_string(), id.clone())];
    if let Some(pr) = p.str("price") {
        item.push(("price".into(), pr.to_string()));
    }
    if let Some(q) = p.int("quantity")? {
        item.push(("quantity".into(), q.to_string()));
    }
    via_update(w, call, &sub, item, p)?;
    Ok(sitem_find(w, &id)?.1)
}

fn sitem_delete(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let (sub, _) = sitem_find(w, &id)?;
    let s = w.get(&sub).unwrap_or_default();
    if s["items"]["data"].as_array().map_or(0, Vec::len) <= 1 {
        return Err(invalid("A subscription must have at least one active plan. To cancel a subscription, please use the cancel API endpoint on /v1/subscriptions.").param("id"));
    }
    via_update(w, call, &sub, vec![("id".into(), id.clone()), ("deleted".into(), "true".into())], p)?;
    Ok(json!({"id": id, "object": "subscription_item", "deleted": true}))
}

fn si_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let sub = p.req_str("subscription")?.to_string();
    let s = w.get_kind("subscription", &sub).ok_or_else(|| no_such_ref("subscription", &sub, "subscription"))?;
    let items = s["items"]["data"].as_array().cloned().unwrap_or_default();
    list_object(&call.req.path, items, p)
}

// ---------------------------------------------------------------------------------------
// Discounts: a coupon or promotion code redeemed onto a customer, a subscription or an
// invoice. Invoices take their own discounts, else their subscription's, else their
// customer's, and take off what the coupon gives line by line.

/// A discount a request asks for: a coupon or promotion code to redeem (checked), or a
/// discount the object already has (`discounts[i][discount]`).
pub(crate) enum Redeem {
    New(Value, Option<String>),
    Existing(Value),
}

/// Check that a coupon (or promotion code, and its coupon) can be redeemed now, for `cus`.
fn redeemable(w: &World, coupon: Option<&str>, promo: Option<&str>, cus: Option<&str>, param: &str) -> Result<Redeem, StripeError> {
    let now = w.now();
    let (coupon_id, promo_id, coupon_param) = match (coupon, promo) {
        (_, Some(pid)) => {
            let pc = w.get_kind("promotion_code", pid).ok_or_else(|| no_such_ref("promotion_code", pid, param))?;
            let spent = pc["max_redemptions"].as_i64().is_some_and(|m| pc["times_redeemed"].as_i64().unwrap_or(0) >= m);
            if pc["active"] != true || spent || pc["expires_at"].as_i64().is_some_and(|t| t <= now) {
                return Err(invalid(format!("This promotion code cannot be redeemed because it is inactive: {}.", pc["code"].as_str().unwrap_or(pid))).param(param));
            }
            if let Some(only) = pc["customer"].as_str() {
                if cus != Some(only) {
                    return Err(invalid(format!("This promotion code cannot be redeemed by this customer: {}.", pc["code"].as_str().unwrap_or(pid))).param(param));
                }
            }
            (pc["coupon"]["id"].as_str().unwrap_or_default().to_string(), Some(pid.to_string()), param)
        }
        (Some(c), None) => (c.to_string(), None, param),
        (None, None) => return Err(missing(param)),
    };
    let c = w.get_kind("coupon", &coupon_id).ok_or_else(|| no_such_ref("coupon", &coupon_id, coupon_param))?;
    let spent = c["max_redemptions"].as_i64().is_some_and(|m| c["times_redeemed"].as_i64().unwrap_or(0) >= m);
    if c["valid"] != true || spent || c["redeem_by"].as_i64().is_some_and(|t| t <= now) {
        return Err(invalid(format!("Coupon expired: {coupon_id}")).code("coupon_expired").param(coupon_param));
    }
    Ok(Redeem::New(c, promo_id))
}

/// The discounts a request asks for: `discounts[]` (an empty value asks for none), or the
/// legacy `coupon` / `promotion_code`; `None` when it names none. `current` are the ids of
/// the discounts the object has now, which `discounts[i][discount]` may keep.
pub(crate) fn discount_params(w: &World, p: &Params, cus: Option<&str>, current: &[String]) -> Result<Option<Vec<Redeem>>, StripeError> {
    let mut out = Vec::new();
    match p.0.get("discounts") {
        Some(Value::String(s)) if s.is_empty() => return Ok(Some(out)),
        Some(Value::Array(list)) => {
            for (i, d) in list.iter().enumerate() {
                if let Some(di) = d["discount"].as_str() {
                    let found = current.iter().any(|x| x == di).then(|| w.get_kind("discount", di)).flatten();
                    out.push(Redeem::Existing(found.ok_or_else(|| no_such_ref("discount", di, &format!("discounts[{i}][discount]")))?));
                    continue;
                }
                let (key, param) = if d["promotion_code"].is_string() { ("promotion_code", format!("discounts[{i}][promotion_code]")) } else { ("coupon", format!("discounts[{i}][coupon]")) };
                let (c, pc) = if key == "coupon" { (d["coupon"].as_str(), None) } else { (None, d["promotion_code"].as_str()) };
                out.push(redeemable(w, c, pc, cus, &param)?);
            }
            return Ok(Some(out));
        }
        Some(_) => return Err(invalid("Invalid array").param("discounts")),
        None => {}
    }
    if let Some(pc) = p.str("promotion_code") {
        out.push(redeemable(w, None, Some(pc), cus, "promotion_code")?);
    } else if let Some(c) = p.str("coupon") {
        out.push(redeemable(w, Some(c), None, cus, "coupon")?);
    } else {
        return Ok(None);
    }
    Ok(Some(out))
}

/// Redeem a checked coupon or promotion code into a discount on the customer and, when
/// given, subscription or invoice, starting at `start`: the coupon (and code) count a
/// redemption, a coupon spent to its `max_redemptions` is no longer valid.
pub(crate) fn redeem(w: &mut World, call: &mut Call, r: &Redeem, cus: &str, sub: Option<&str>, inv: Option<&str>, start: i64) -> Value {
    let (coupon, promo) = match r {
        Redeem::Existing(d) => return d.clone(),
        Redeem::New(c, p) => (c["id"].as_str().unwrap_or_default().to_string(), p.clone()),
    };
    let c = w.modify(call, &coupon, |c| {
        let n = c["times_redeemed"].as_i64().unwrap_or(0) + 1;
        c["times_redeemed"] = json!(n);
        if c["max_redemptions"].as_i64().is_some_and(|m| n >= m) {
            c["valid"] = json!(false);
        }
    });
    if let Some(pc) = &promo {
        w.modify(call, pc, |o| {
            o["times_redeemed"] = json!(o["times_redeemed"].as_i64().unwrap_or(0) + 1);
            o["coupon"] = c.clone();
        });
    }
    let end = match (c["duration"].as_str(), c["duration_in_months"].as_i64()) {
        (Some("repeating"), Some(m)) => Some(add_interval(start, "month", m)),
        _ => None,
    };
    let id = w.new_id("di");
    let d = json!({
        "id": id, "object": "discount", "checkout_session": null, "coupon": c, "customer": cus, "end": end,
        "invoice": inv, "invoice_item": null, "promotion_code": promo, "start": start, "subscription": sub, "subscription_item": null,
    });
    let d = w.insert(Some(call), d);
    if inv.is_none() {
        emit(w, call, "customer.discount.created", &d, None);
    }
    d
}

/// A removed discount, as `DELETE .../discount` answers and `customer.discount.deleted` carries.
pub(crate) fn deleted_discount(d: &Value) -> Value {
    let mut d = d.clone();
    if let Some(m) = d.as_object_mut() {
        m.remove("end");
        m.insert("deleted".into(), json!(true));
    }
    d
}

/// The discounts a customer's invoice at `at` takes from its subscription, else from the
/// customer: those not ended, and a `once` coupon only until an invoice took something off.
fn inherited_discounts(w: &World, cus: &str, sub: Option<&str>, at: i64) -> Vec<Value> {
    let from_sub: Vec<Value> = sub
        .and_then(|s| w.get(s))
        .and_then(|s| s["discounts"].as_array().map(|a| a.iter().filter_map(|d| d.as_str().and_then(|d| w.get(d))).collect()))
        .unwrap_or_default();
    let all = if from_sub.is_empty() { w.get(cus).map(|c| c["discount"].clone()).filter(|d| d.is_object()).into_iter().collect() } else { from_sub };
    all.into_iter()
        .filter(|d| d["end"].as_i64().is_none_or(|e| at < e))
        .filter(|d| d["coupon"]["duration"] != "once" || !discount_used(w, d["id"].as_str().unwrap_or_default()))
        .collect()
}

/// Whether an invoice already took something off with discount `id`.
fn discount_used(w: &World, id: &str) -> bool {
    w.all("invoice").any(|i| i["total_discount_amounts"].as_array().is_some_and(|a| a.iter().any(|t| t["discount"] == id && t["amount"].as_i64().unwrap_or(0) > 0)))
}

/// The discount objects an invoice names in its `discounts`.
fn discounts_of(w: &World, inv: &Value) -> Vec<Value> {
    inv["discounts"].as_array().map(|a| a.iter().filter_map(|d| d.as_str().and_then(|d| w.get(d))).collect()).unwrap_or_default()
}

/// Put discounts on an invoice (`discount`, `discounts`) and total it with them.
fn set_discounts(i: &mut Value, discs: &[Value]) {
    i["discount"] = discs.first().cloned().unwrap_or(Value::Null);
    i["discounts"] = json!(discs.iter().map(|d| d["id"].clone()).collect::<Vec<_>>());
    retotal(i, discs);
}

/// `amount` split over `weights` in proportion, the cents left by rounding down going to
/// the first lines.
fn spread(amount: i64, weights: &[i64]) -> Vec<i64> {
    let sum: i64 = weights.iter().sum();
    if sum <= 0 {
        return vec![0; weights.len()];
    }
    let mut out: Vec<i64> = weights.iter().map(|x| amount * x / sum).collect();
    let mut left = amount - out.iter().sum::<i64>();
    for (o, x) in out.iter_mut().zip(weights) {
        if left == 0 {
            break;
        }
        if *x > *o {
            *o += 1;
            left -= 1;
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// Invoice items and invoices.

pub(crate) fn ii_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let cus = p.req_str("customer")?.to_string();
    w.get_kind("customer", &cus).ok_or_else(|| no_such_ref("customer", &cus, "customer"))?;
    let (amount, cur, price) = match p.str("price") {
        Some(pid) => {
            let pr = w.get_kind("price", pid).ok_or_else(|| no_such_ref("price", pid, "price"))?;
            let q = p.int("quantity")?.unwrap_or(1);
            (api::price_total(&pr, q), pr["currency"].as_str().unwrap_or("usd").to_string(), pr)
        }
        None => (p.req_int("amount")?, api::currency(p)?, Value::Null),
    };
    let target = match p.str("invoice") {
        Some(inv_id) => {
            let inv = w.get_kind("invoice", inv_id).ok_or_else(|| no_such_ref("invoice", inv_id, "invoice"))?;
            if inv["status"] != "draft" {
                return Err(invalid(format!("You can only add invoice items to draft invoices. The invoice {inv_id} has status {}.", inv["status"].as_str().unwrap_or(""))).code("invoice_not_editable").param("invoice"));
            }
            if inv["customer"] != cus.as_str() {
                return Err(invalid(format!("The invoice {inv_id} belongs to a different customer.")).param("invoice"));
            }
            if inv["currency"] != cur.as_str() && inv["lines"]["total_count"].as_i64().unwrap_or(0) > 0 {
                return Err(invalid(format!("The currency of the invoice item ({cur}) must match the invoice's ({}).", inv["currency"].as_str().unwrap_or(""))).param("currency"));
            }
            Some(inv_id.to_string())
        }
        None => None,
    };
    let id = w.new_id("ii");
    let now = now_for(w, &cus);
    let mut o = json!({
        "id": id, "object": "invoiceitem", "amount": amount, "currency": cur, "customer": cus, "date": now,
        "description": p.str("description"), "discountable": true, "discounts": [], "invoice": p.str("invoice"), "livemode": false,
        "metadata": {}, "period": {"end": now, "start": now}, "price": price, "proration": false,
        "quantity": p.int("quantity")?.unwrap_or(1), "subscription": null, "tax_rates": [], "test_clock": null, "unit_amount": null,
        "unit_amount_decimal": null,
    });
    p.metadata_into(&mut o)?;
    let o = w.insert(Some(call), o);
    emit(w, call, "invoiceitem.created", &o, None);
    if let Some(inv_id) = target {
        // A draft invoice named by the item takes it as a line, and its totals follow.
        let line = line_of_item(&o, &inv_id);
        let discs = discounts_of(w, &w.get(&inv_id).unwrap_or_default());
        let inv = w.modify(call, &inv_id, |i| {
            if let Some(lines) = i["lines"]["data"].as_array_mut() {
                lines.push(line);
            }
            let n = i["lines"]["data"].as_array().map_or(0, Vec::len);
            i["lines"]["total_count"] = json!(n);
            i["currency"] = o["currency"].clone();
            retotal(i, &discs);
        });
        emit(w, call, "invoice.updated", &inv, None);
    }
    Ok(o)
}

fn ii_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let pending = p.bool("pending")?;
    crate::api::list_of(w, call, "invoiceitem", p, |o| {
        field_is(o, "customer", p.str("customer")) && field_is(o, "invoice", p.str("invoice")) && pending.is_none_or(|x| o["invoice"].is_null() == x)
    })
}

/// An invoice item as a line of invoice `inv`.
fn line_of_item(ii: &Value, inv: &str) -> Value {
    json!({
        "id": format!("il_{}", &ii["id"].as_str().unwrap_or("")[3..]), "object": "line_item", "amount": ii["amount"], "currency": ii["currency"],
        "description": ii["description"], "discount_amounts": [], "discountable": true, "discounts": [], "invoice": inv,
        "invoice_item": ii["id"], "livemode": false, "metadata": ii["metadata"], "period": ii["period"], "price": ii["price"],
        "proration": ii["proration"], "proration_details": {"credited_items": null}, "quantity": ii["quantity"], "subscription": ii["subscription"],
        "tax_amounts": [], "tax_rates": [], "type": "invoiceitem",
    })
}

/// A draft invoice's totals from its lines and discounts: a `percent_off` takes its share
/// of each line (rounded half up), an `amount_off` in the invoice's currency up to the
/// subtotal, spread over the lines; each discount works on what the ones before it left.
fn retotal(i: &mut Value, discs: &[Value]) {
    let cur = i["currency"].as_str().unwrap_or("usd").to_string();
    let Some(lines) = i["lines"]["data"].as_array_mut() else { return };
    let subtotal: i64 = lines.iter().map(|l| l["amount"].as_i64().unwrap_or(0)).sum();
    let mut left: Vec<i64> = lines.iter().map(|l| l["amount"].as_i64().unwrap_or(0).max(0)).collect();
    let mut per_line: Vec<Vec<Value>> = vec![Vec::new(); lines.len()];
    let mut totals = Vec::new();
    let mut off = 0;
    for d in discs {
        let c = &d["coupon"];
        let offs: Vec<i64> = match (c["percent_off"].as_f64(), c["amount_off"].as_i64()) {
            (Some(pct), _) => {
                let bp = (pct * 100.0).round() as i64;
                left.iter().map(|a| (a * bp + 5_000) / 10_000).collect()
            }
            (None, Some(amount)) if c["currency"] == cur.as_str() => spread(amount.min(left.iter().sum()), &left),
            _ => vec![0; left.len()],
        };
        for (k, o) in offs.iter().enumerate() {
            left[k] -= o;
            per_line[k].push(json!({"amount": o, "discount": d["id"]}));
        }
        let sum: i64 = offs.iter().sum();
        off += sum;
        totals.push(json!({"amount": sum, "discount": d["id"]}));
    }
    let ids: Vec<Value> = discs.iter().map(|d| d["id"].clone()).collect();
    for (l, amounts) in lines.iter_mut().zip(per_line) {
        l["discount_amounts"] = json!(amounts);
        l["discounts"] = json!(ids);
    }
    i["total_discount_amounts"] = json!(totals);
    for k in ["subtotal", "subtotal_excluding_tax"] {
        i[k] = json!(subtotal);
    }
    for k in ["amount_due", "amount_remaining", "total", "total_excluding_tax"] {
        i[k] = json!(subtotal - off);
    }
}

pub(crate) fn inv_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let cus = p.req_str("customer")?.to_string();
    w.get_kind("customer", &cus).ok_or_else(|| no_such_ref("customer", &cus, "customer"))?;
    let asked = discount_params(w, p, Some(&cus), &[])?;
    // Since API version 2022-08-01 pending invoice items stay out unless asked for.
    let behavior = p.str("pending_invoice_items_behavior").unwrap_or("exclude");
    if !["exclude", "include", "include_and_require"].contains(&behavior) {
        return Err(invalid("Invalid pending_invoice_items_behavior: must be one of exclude, include, or include_and_require").param("pending_invoice_items_behavior"));
    }
    let pending: Vec<Value> = if behavior == "exclude" {
        Vec::new()
    } else {
        w.all("invoiceitem").filter(|i| i["customer"] == cus.as_str() && i["invoice"].is_null()).collect()
    };
    if behavior == "include_and_require" && pending.is_empty() {
        return Err(invalid(format!("Nothing to invoice for customer {cus}")).code("invoice_no_customer_line_items").param("pending_invoice_items_behavior"));
    }
    let id = w.new_id("in");
    let cur = pending.first().and_then(|i| i["currency"].as_str()).unwrap_or("usd").to_string();
    let lines: Vec<Value> = pending.iter().rev().map(|ii| line_of_item(ii, &id)).collect();
    let now = now_for(w, &cus);
    let method = p.str("collection_method").unwrap_or("charge_automatically").to_string();
    if !["charge_automatically", "send_invoice"].contains(&method.as_str()) {
        return Err(invalid(format!("Invalid collection_method: must be one of charge_automatically or send_invoice")).param("collection_method"));
    }
    let days = p.int("days_until_due")?;
    let due_date = p.int("due_date")?;
    if method == "send_invoice" && days.is_none() && due_date.is_none() {
        return Err(invalid("Missing required param: days_until_due. Invoices with collection_method=send_invoice need days_until_due or due_date.").code("parameter_missing").param("days_until_due"));
    }
    if method == "charge_automatically" && (days.is_some() || due_date.is_some()) {
        return Err(invalid("Invoices with collection_method=charge_automatically cannot have days_until_due or due_date.").param(if days.is_some() { "days_until_due" } else { "due_date" }));
    }
    let mut inv = new_invoice(w, &id, &cus, &cur, lines, None, "manual", now, now);
    inv["collection_method"] = json!(method);
    if let Some(d) = due_date.or(days.map(|d| now + d * 86_400)) {
        inv["due_date"] = json!(d);
    }
    p.copy(&mut inv, &["description", "footer"]);
    if let Some(a) = p.bool("auto_advance")? {
        inv["auto_advance"] = json!(a);
    }
    p.metadata_into(&mut inv)?;
    let discs: Vec<Value> = match &asked {
        Some(list) => list.iter().map(|r| redeem(w, call, r, &cus, None, Some(&id), now)).collect(),
        None => inherited_discounts(w, &cus, None, now),
    };
    set_discounts(&mut inv, &discs);
    let inv = w.insert(Some(call), inv);
    for ii in pending {
        let iid = ii["id"].as_str().unwrap_or_default().to_string();
        w.modify(call, &iid, |x| x["invoice"] = json!(id));
    }
    emit(w, call, "invoice.created", &inv, None);
    Ok(inv)
}

fn ii_get(w: &World, call: &Call) -> Result<(String, Value), StripeError> {
    let id = call.param("id").to_string();
    let o = w.get_kind("invoiceitem", &id).ok_or_else(|| no_such("invoiceitem", &id, "id"))?;
    Ok((id, o))
}

fn ii_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    Ok(ii_get(w, call)?.1)
}

/// An invoice item may change while it is pending or on a draft invoice, whose line follows.
fn ii_editable(w: &World, ii: &Value) -> Result<Option<String>, StripeError> {
    match ii["invoice"].as_str() {
        None => Ok(None),
        Some(inv) => match w.get(inv) {
            Some(i) if i["status"] == "draft" => Ok(Some(inv.to_string())),
            _ => Err(invalid(format!("The invoice item {} is on an invoice that is no longer a draft and cannot be changed.", ii["id"].as_str().unwrap_or(""))).code("invoice_not_editable")),
        },
    }
}

fn ii_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let (id, ii) = ii_get(w, call)?;
    let on = ii_editable(w, &ii)?;
    let amount = p.int("amount")?;
    let qty = p.int("quantity")?;
    let mut probe = ii.clone();
    p.metadata_into(&mut probe)?;
    let o = w.modify(call, &id, |o| {
        if let Some(a) = amount {
            o["amount"] = json!(a);
        }
        if let Some(q) = qty {
            o["quantity"] = json!(q);
            if o["price"]["unit_amount"].is_i64() || o["price"]["unit_amount_decimal"].is_string() {
                o["amount"] = json!(api::price_total(&o["price"], q));
            }
        }
        p.copy(o, &["description"]);
        o["metadata"] = probe["metadata"].clone();
    });
    if let Some(inv) = on {
        let line = line_of_item(&o, &inv);
        let discs = discounts_of(w, &w.get(&inv).unwrap_or_default());
        w.modify(call, &inv, |i| {
            if let Some(l) = i["lines"]["data"].as_array_mut().and_then(|a| a.iter_mut().find(|l| l["invoice_item"] == id.as_str())) {
                *l = line;
            }
            retotal(i, &discs);
        });
    }
    emit(w, call, "invoiceitem.updated", &o, None);
    Ok(o)
}

fn ii_delete(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let (id, ii) = ii_get(w, call)?;
    if let Some(inv) = ii_editable(w, &ii)? {
        let discs = discounts_of(w, &w.get(&inv).unwrap_or_default());
        w.modify(call, &inv, |i| {
            if let Some(a) = i["lines"]["data"].as_array_mut() {
                a.retain(|l| l["invoice_item"] != id.as_str());
            }
            let n = i["lines"]["data"].as_array().map_or(0, Vec::len);
            i["lines"]["total_count"] = json!(n);
            retotal(i, &discs);
        });
    }
    w.remove(call, &id);
    emit(w, call, "invoiceitem.deleted", &ii, None);
    Ok(json!({"id": id, "object": "invoiceitem", "deleted": true}))
}

fn inv_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let (id, inv) = inv_get(w, call)?;
    let draft = inv["status"] == "draft";
    let draft_only = ["collection_method", "days_until_due", "due_date", "auto_advance", "footer", "default_payment_method", "discounts"];
    if let Some(k) = draft_only.iter().find(|k| p.has(k)).filter(|_| !draft) {
        return Err(invalid(format!("You can only update {k} on a draft invoice.")).code("invoice_not_editable").param(k));
    }
    if ["void", "paid"].contains(&inv["status"].as_str().unwrap_or("")) && p.has("description") {
        return Err(invalid("This invoice can no longer be changed.").code("invoice_not_editable"));
    }
    if let Some(pm) = p.str("default_payment_method") {
        w.get_kind("payment_method", pm).ok_or_else(|| no_such_ref("PaymentMethod", pm, "default_payment_method"))?;
    }
    let method = p.str("collection_method").map(str::to_string);
    if let Some(m) = &method {
        if !["charge_automatically", "send_invoice"].contains(&m.as_str()) {
            return Err(invalid("Invalid collection_method: must be one of charge_automatically or send_invoice").param("collection_method"));
        }
    }
    let days = p.int("days_until_due")?;
    let due = p.int("due_date")?;
    let auto = p.bool("auto_advance")?;
    let created = inv["created"].as_i64().unwrap_or(0);
    let mut probe = inv.clone();
    p.metadata_into(&mut probe)?;
    let cus = inv["customer"].as_str().unwrap_or_default().to_string();
    let current: Vec<String> = inv["discounts"].as_array().map(|a| a.iter().filter_map(|d| d.as_str().map(str::to_string)).collect()).unwrap_or_default();
    let discs: Option<Vec<Value>> = match discount_params(w, p, Some(&cus), &current)? {
        Some(list) => {
            let now = now_for(w, &cus);
            Some(list.iter().map(|r| redeem(w, call, r, &cus, None, Some(&id), now)).collect())
        }
        None => None,
    };
    let before = inv.clone();
    let after = w.modify(call, &id, |i| {
        if let Some(d) = &discs {
            set_discounts(i, d);
        }
        if let Some(m) = method {
            i["collection_method"] = json!(m);
        }
        if let Some(d) = due.or(days.map(|d| created + d * 86_400)) {
            i["due_date"] = json!(d);
        }
        if let Some(a) = auto {
            i["auto_advance"] = json!(a);
        }
        p.copy(i, &["description", "footer", "default_payment_method"]);
        i["metadata"] = probe["metadata"].clone();
    });
    let (mut prev, _) = crate::changed_fields(&before, &after);
    prev.remove("id");
    emit(w, call, "invoice.updated", &after, Some(Value::Object(prev)));
    Ok(after)
}

fn inv_delete(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let (id, inv) = inv_get(w, call)?;
    if inv["status"] != "draft" {
        return Err(invalid("You can only delete draft invoices.").code("invoice_not_editable"));
    }
    // Its pending items go back to waiting for the next invoice.
    let items: Vec<String> = w.all("invoiceitem").filter(|i| i["invoice"] == id.as_str()).filter_map(|i| i["id"].as_str().map(str::to_string)).collect();
    for ii in items {
        w.modify(call, &ii, |o| o["invoice"] = Value::Null);
    }
    w.remove(call, &id);
    emit(w, call, "invoice.deleted", &inv, None);
    Ok(json!({"id": id, "object": "invoice", "deleted": true}))
}

fn inv_send(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let (id, inv) = inv_get(w, call)?;
    if inv["collection_method"] != "send_invoice" {
        return Err(invalid("You can only manually send an invoice if its collection method is 'send_invoice'.").code("invoice_not_editable"));
    }
    let id = if inv["status"] == "draft" { finalize(w, call, &id)["id"].as_str().unwrap_or(&id).to_string() } else { id };
    let inv = w.get(&id).unwrap_or(inv);
    if inv["status"] != "open" {
        return Err(invalid(format!("You can only send an open invoice; this one is {}.", inv["status"].as_str().unwrap_or(""))).code("invoice_not_editable"));
    }
    emit(w, call, "invoice.sent", &inv, None);
    Ok(inv)
}

fn inv_get(w: &World, call: &Call) -> Result<(String, Value), StripeError> {
    let id = call.param("id").to_string();
    let inv = w.get_kind("invoice", &id).ok_or_else(|| no_such("invoice", &id, "invoice"))?;
    Ok((id, inv))
}

fn inv_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    inv_get(w, call).map(|x| x.1)
}

fn inv_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    crate::api::list_of(w, call, "invoice", p, |i| {
        ["customer", "subscription", "status", "collection_method"].iter().all(|f| field_is(i, f, p.str(f)))
    })
}

fn inv_lines(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let (_, inv) = inv_get(w, call)?;
    list_object(&call.req.path, inv["lines"]["data"].as_array().cloned().unwrap_or_default(), p)
}

fn inv_finalize(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let (id, inv) = inv_get(w, call)?;
    if inv["status"] != "draft" {
        return Err(invalid(format!("This invoice is already finalized, you can't re-finalize a non-draft invoice.")).code("invoice_not_editable"));
    }
    let inv = finalize(w, call, &id);
    // Nothing left to pay (a credit covered it): paid as it is finalized.
    if inv["amount_due"] == 0 {
        pay(w, call, &id, None);
        return Ok(w.get(&id).unwrap_or(inv));
    }
    Ok(inv)
}

fn inv_pay(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let (id, inv) = inv_get(w, call)?;
    match inv["status"].as_str() {
        Some("paid") => return Err(invalid("Invoice is already paid").code("invoice_already_paid")),
        Some("void") | Some("uncollectible") if p.bool("paid_out_of_band")? != Some(true) && inv["status"] == "void" => {
            return Err(invalid("This invoice has been voided and can no longer be paid.").code("invoice_not_editable"));
        }
        Some("draft") => {
            finalize(w, call, &id);
        }
        _ => {}
    }
    if p.bool("paid_out_of_band")? == Some(true) {
        let now = now_for(w, inv["customer"].as_str().unwrap_or_default());
        let inv = w.modify(call, &id, |i| {
            i["status"] = json!("paid");
            i["paid"] = json!(true);
            i["paid_out_of_band"] = json!(true);
            i["amount_remaining"] = json!(0);
            i["status_transitions"]["paid_at"] = json!(now);
        });
        emit(w, call, "invoice.paid", &inv, None);
        return Ok(inv);
    }
    // `payment_method` pays this invoice only; it changes no default.
    let pm = match p.str("payment_method") {
        Some(pm) => Some(api::resolve_pm(w, call, pm, "payment_method")?),
        None => None,
    };
    if pay(w, call, &id, pm.as_deref()) {
        Ok(w.get(&id).unwrap())
    } else {
        let inv = w.get(&id).unwrap();
        let pi = inv["payment_intent"].as_str().and_then(|pi| w.get(pi));
        if pi.as_ref().is_some_and(|pi| pi["status"] == "requires_action") {
            return Err(StripeError::new(402, "card_error", "This payment requires additional user action before it can be completed successfully. Payment can be completed using the PaymentIntent associated with the invoice. For more details see: https://stripe.com/docs/billing/subscriptions/overview#requires-action")
                .code("invoice_payment_intent_requires_action")
                .with("invoice", inv));
        }
        // The card's own error, as the attempt on the invoice's PaymentIntent met it.
        let last = pi.map(|pi| pi["last_payment_error"].clone()).unwrap_or(Value::Null);
        let code = last["code"].as_str().unwrap_or("card_declined").to_string();
        let message = last["message"].as_str().unwrap_or("Your card was declined.").to_string();
        let mut e = StripeError::new(402, "card_error", message).code(&code);
        e.decline_code = Some(last["decline_code"].as_str().unwrap_or("generic_decline").to_string());
        Err(e.with("invoice", inv))
    }
}

/// How an invoice ends without being paid.
#[derive(Clone, Copy)]
enum Unpaid {
    Void,
    Uncollectible,
}

/// End invoice `id` unpaid, at its customer's time, with its event.
fn close_unpaid(w: &mut World, call: &mut Call, id: &str, how: Unpaid) -> Value {
    let (status, at, event) = match how {
        Unpaid::Void => ("void", "voided_at", "invoice.voided"),
        Unpaid::Uncollectible => ("uncollectible", "marked_uncollectible_at", "invoice.marked_uncollectible"),
    };
    let before = w.get(id).unwrap();
    let cus = before["customer"].as_str().unwrap_or_default().to_string();
    let now = now_for(w, &cus);
    // A voided invoice gives back the balance it took.
    let took = before["starting_balance"].as_i64().unwrap_or(0) - before["ending_balance"].as_i64().unwrap_or(0);
    if matches!(how, Unpaid::Void) && took != 0 {
        let cur = before["currency"].as_str().unwrap_or("usd").to_string();
        let t = api::balance_transaction_object(w, &cus, took, &cur, "unapplied_from_invoice", Some(id));
        api::move_balance(w, call, t);
    }
    let inv = w.modify(call, id, |i| {
        i["status"] = json!(status);
        i["status_transitions"][at] = json!(now);
    });
    emit(w, call, event, &inv, None);
    // A voided invoice can no longer be paid: its PaymentIntent is canceled with it.
    if let (Unpaid::Void, Some(pi)) = (how, inv["payment_intent"].as_str()) {
        if w.get(pi).is_some_and(|o| !["succeeded", "canceled", "processing"].contains(&o["status"].as_str().unwrap_or(""))) {
            let now = w.now();
            let pi = w.modify(call, pi, |o| {
                o["status"] = json!("canceled");
                o["canceled_at"] = json!(now);
                o["cancellation_reason"] = json!("void_invoice");
                o["next_action"] = Value::Null;
            });
            emit(w, call, "payment_intent.canceled", &pi, None);
        }
    }
    inv
}

fn inv_void(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let (id, inv) = inv_get(w, call)?;
    if inv["status"] != "open" && inv["status"] != "uncollectible" {
        return Err(invalid(format!("You can only void an open or uncollectible invoice; this one is {}.", inv["status"].as_str().unwrap_or(""))).code("invoice_not_editable"));
    }
    Ok(close_unpaid(w, call, &id, Unpaid::Void))
}

fn inv_uncollectible(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let (id, inv) = inv_get(w, call)?;
    if inv["status"] != "open" {
        return Err(invalid("You can only mark an open invoice as uncollectible.").code("invoice_not_editable"));
    }
    Ok(close_unpaid(w, call, &id, Unpaid::Uncollectible))
}
