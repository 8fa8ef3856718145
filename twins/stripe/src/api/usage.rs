//! Usage-based billing: what a metered price charges for. Usage is reported either as usage
//! records on a subscription item (the older way: `recurring[usage_type]=metered` with
//! `recurring[aggregate_usage]`), or as meter events that a billing meter aggregates for a
//! customer (`recurring[meter]`). A metered item's invoice line, made when its period ends,
//! charges the usage of that period at the price; `usage_record_summaries` and a meter's
//! `event_summaries` show the figures the invoice will use.
//!
//! Billing meters and meter events are newer than the OpenAPI description the twin's surface
//! is counted against (API 2024-06-20 has them); their parameters are checked by the twin's
//! handlers.

use super::*;

use crate::billing::now_for;

// ---------------------------------------------------------------------------------------
// What a metered item used.

/// The usage of subscription item `item` (of a subscription of customer `cus`) on a metered
/// price, over `[from, to)`: its usage records aggregated as the price says, or its meter's
/// events for the customer.
pub(crate) fn metered_quantity(w: &World, item: &str, cus: &str, price: &Value, from: i64, to: i64) -> i64 {
    if let Some(meter) = price["recurring"]["meter"].as_str() {
        return meter_total(w, meter, cus, from, to);
    }
    let records: Vec<(i64, i64)> = w.all("usage_record").filter(|r| r["subscription_item"] == item).filter_map(|r| Some((r["timestamp"].as_i64()?, r["quantity"].as_i64()?))).collect();
    aggregate(&records, price["recurring"]["aggregate_usage"].as_str().unwrap_or("sum"), from, to)
}

/// Usage records `(timestamp, quantity)` (newest first) aggregated over `[from, to)`.
fn aggregate(records: &[(i64, i64)], how: &str, from: i64, to: i64) -> i64 {
    let inside = || records.iter().filter(|(t, _)| *t >= from && *t < to);
    match how {
        "max" => inside().map(|r| r.1).max().unwrap_or(0),
        "last_during_period" => inside().max_by_key(|r| r.0).map_or(0, |r| r.1),
        "last_ever" => records.iter().filter(|(t, _)| *t < to).max_by_key(|r| r.0).map_or(0, |r| r.1),
        _ => inside().map(|r| r.1).sum(),
    }
}

// ---------------------------------------------------------------------------------------
// Usage records.

/// The subscription holding item `id`, and the item.
fn item_of(w: &World, id: &str) -> Result<(Value, Value), StripeError> {
    for s in w.all("subscription") {
        if let Some(it) = s["items"]["data"].as_array().and_then(|a| a.iter().find(|i| i["id"] == id)) {
            let it = it.clone();
            return Ok((s, it));
        }
    }
    Err(no_such("subscription_item", id, "subscription_item"))
}

pub(super) fn usage_record_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let item_id = call.param("id").to_string();
    let (sub, item) = item_of(w, &item_id)?;
    let price = &item["price"];
    if price["recurring"]["usage_type"] != "metered" {
        return Err(invalid("Usage records can only be created for subscription items on a price with `usage_type=metered`.").param("subscription_item"));
    }
    if !price["recurring"]["meter"].is_null() {
        return Err(invalid("This price is billed from a meter: report usage as meter events (`POST /v1/billing/meter_events`), not usage records.").param("subscription_item"));
    }
    let quantity = p.req_int("quantity")?;
    if quantity < 0 {
        return Err(invalid("This value must be greater than or equal to 0.").param("quantity"));
    }
    let cus = sub["customer"].as_str().unwrap_or_default().to_string();
    let now = now_for(w, &cus);
    let ts = match p.str("timestamp") {
        None | Some("now") => now,
        Some(t) => t.parse::<i64>().map_err(|_| invalid(format!("Invalid integer: {}", crate::core::shown(t))).param("timestamp"))?,
    };
    let start = sub["current_period_start"].as_i64().unwrap_or(now);
    if ts < start || ts > now + 300 {
        return Err(invalid(format!("Cannot create the usage record with this timestamp because timestamps must be after the subscription's last invoice period (or current period start time) ({start}) and not in the future.")).param("timestamp"));
    }
    let action = p.str("action").unwrap_or("increment");
    if !["increment", "set"].contains(&action) {
        return Err(invalid("Invalid action: must be one of increment or set").param("action"));
    }
    if action == "set" {
        // `set` replaces what was reported for that moment.
        let same: Vec<String> = w.all("usage_record").filter(|r| r["subscription_item"] == item_id.as_str() && r["timestamp"] == ts).filter_map(|r| r["id"].as_str().map(str::to_string)).collect();
        for id in same {
            w.remove(call, &id);
        }
    }
    let id = w.new_id("mbur");
    let o = json!({"id": id, "object": "usage_record", "livemode": false, "quantity": quantity, "subscription_item": item_id, "timestamp": ts});
    Ok(w.insert(Some(call), o))
}

pub(super) fn usage_record_summaries(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let item_id = call.param("id").to_string();
    let (sub, item) = item_of(w, &item_id)?;
    let how = item["price"]["recurring"]["aggregate_usage"].as_str().unwrap_or("sum").to_string();
    let records: Vec<(i64, i64)> = w.all("usage_record").filter(|r| r["subscription_item"] == item_id.as_str()).filter_map(|r| Some((r["timestamp"].as_i64()?, r["quantity"].as_i64()?))).collect();
    let summary = |n: usize, invoice: Value, from: i64, to: i64| {
        json!({"id": format!("sis_{}{n:03}", &item_id[3..]), "object": "usage_record_summary", "invoice": invoice, "livemode": false, "period": {"end": to, "start": from}, "subscription_item": item_id, "total_usage": aggregate(&records, &how, from, to)})
    };
    // The period under way, then each period an invoice charged, newest first.
    let (start, end) = (sub["current_period_start"].as_i64().unwrap_or(0), sub["current_period_end"].as_i64().unwrap_or(0));
    let mut out = vec![summary(0, Value::Null, start, end)];
    let mut n = 1;
    for inv in w.all("invoice").filter(|i| i["subscription"] == sub["id"]) {
        for l in inv["lines"]["data"].as_array().into_iter().flatten().filter(|l| l["subscription_item"] == item_id.as_str()) {
            let (from, to) = (l["period"]["start"].as_i64().unwrap_or(0), l["period"]["end"].as_i64().unwrap_or(0));
            if to <= start && from < to {
                out.push(summary(n, inv["id"].clone(), from, to));
                n += 1;
            }
        }
    }
    crate::core::list_object(&call.req.path, out, p)
}

// ---------------------------------------------------------------------------------------
// Billing meters.

const FORMULAS: &[&str] = &["count", "last", "sum"];

pub(super) fn meter_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let display_name = p.req_str("display_name")?.to_string();
    let event_name = p.req_str("event_name")?.to_string();
    let formula = p.get("default_aggregation").and_then(|d| d["formula"].as_str()).ok_or_else(|| missing("default_aggregation[formula]"))?.to_string();
    if !FORMULAS.contains(&formula.as_str()) {
        return Err(invalid(format!("Invalid default_aggregation[formula]: must be one of {}", super::tax::one_of(FORMULAS))).param("default_aggregation[formula]"));
    }
    if event_name.len() > 100 || event_name.is_empty() {
        return Err(invalid("The event_name must be 1 to 100 characters.").param("event_name"));
    }
    if w.all("billing.meter").any(|m| m["event_name"] == event_name.as_str() && m["status"] == "active") {
        return Err(invalid(format!("An active meter with event_name `{event_name}` already exists.")).code("resource_already_exists").param("event_name"));
    }
    let customer_key = p.get("customer_mapping").and_then(|m| m["event_payload_key"].as_str()).unwrap_or("stripe_customer_id").to_string();
    if let Some(t) = p.get("customer_mapping").and_then(|m| m["type"].as_str()) {
        if t != "by_id" {
            return Err(invalid("Invalid customer_mapping[type]: must be by_id").param("customer_mapping[type]"));
        }
    }
    let value_key = p.get("value_settings").and_then(|v| v["event_payload_key"].as_str()).unwrap_or("value").to_string();
    let window = p.str("event_time_window");
    if window.is_some_and(|x| x != "day" && x != "hour") {
        return Err(invalid("Invalid event_time_window: must be one of day or hour").param("event_time_window"));
    }
    let id = w.new_id("mtr");
    let now = w.now();
    let o = json!({
        "id": id, "object": "billing.meter", "created": now, "customer_mapping": {"event_payload_key": customer_key, "type": "by_id"},
        "default_aggregation": {"formula": formula}, "display_name": display_name, "event_name": event_name, "event_time_window": window,
        "livemode": false, "status": "active", "status_transitions": {"deactivated_at": null}, "updated": now,
        "value_settings": {"event_payload_key": value_key},
    });
    Ok(w.insert(Some(call), o))
}

pub(super) fn meter_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    if let Some(s) = p.str("status") {
        if s != "active" && s != "inactive" {
            return Err(invalid("Invalid status: must be one of active or inactive").param("status"));
        }
    }
    list_of(w, call, "billing.meter", p, |m| field_is(m, "status", p.str("status")))
}

pub(super) fn meter_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    get_or_404(w, "billing.meter", call.param("id"), "billing.meter")
}

pub(super) fn meter_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let mut m = get_or_404(w, "billing.meter", &id, "billing.meter")?;
    p.copy(&mut m, &["display_name"]);
    m["updated"] = json!(w.now());
    Ok(w.modify(call, &id, |x| *x = m))
}

fn set_status(w: &mut World, call: &mut Call, active: bool) -> Res {
    let id = call.param("id").to_string();
    let m = get_or_404(w, "billing.meter", &id, "billing.meter")?;
    let (from, to) = if active { ("inactive", "active") } else { ("active", "inactive") };
    if m["status"] != from {
        return Err(invalid(format!("This meter is already {to}.")).code("billing_meter_invalid_status"));
    }
    if active && w.all("billing.meter").any(|o| o["event_name"] == m["event_name"] && o["status"] == "active") {
        return Err(invalid(format!("An active meter with event_name `{}` already exists.", m["event_name"].as_str().unwrap_or(""))).code("resource_already_exists"));
    }
    let now = w.now();
    Ok(w.modify(call, &id, |x| {
        x["status"] = json!(to);
        x["status_transitions"]["deactivated_at"] = if active { Value::Null } else { json!(now) };
        x["updated"] = json!(now);
    }))
}

pub(super) fn meter_deactivate(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    set_status(w, call, false)
}

pub(super) fn meter_reactivate(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    set_status(w, call, true)
}

/// The meter's events for customer `cus` in `[from, to)` (not canceled), as `(timestamp,
/// value)`.
fn meter_values(w: &World, meter: &Value, cus: &str, from: i64, to: i64) -> Vec<(i64, f64)> {
    let (name, ckey, vkey) = (meter["event_name"].as_str().unwrap_or(""), meter["customer_mapping"]["event_payload_key"].as_str().unwrap_or("stripe_customer_id"), meter["value_settings"]["event_payload_key"].as_str().unwrap_or("value"));
    w.all("billing.meter_event")
        .filter(|e| e["event_name"] == name && e["payload"][ckey] == cus && e["canceled"] != true)
        .filter_map(|e| {
            let t = e["timestamp"].as_i64()?;
            let v = e["payload"][vkey].as_str().and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
            (t >= from && t < to).then_some((t, v))
        })
        .collect()
}

/// `values` aggregated by `formula`.
fn meter_aggregate(values: &[(i64, f64)], formula: &str) -> f64 {
    match formula {
        "count" => values.len() as f64,
        "last" => values.iter().max_by_key(|v| v.0).map_or(0.0, |v| v.1),
        _ => values.iter().map(|v| v.1).sum(),
    }
}

/// A meter's aggregate for a customer over `[from, to)`, in whole units (what a metered
/// price charges for).
fn meter_total(w: &World, meter: &str, cus: &str, from: i64, to: i64) -> i64 {
    let Some(m) = w.get(meter) else { return 0 };
    meter_aggregate(&meter_values(w, &m, cus, from, to), m["default_aggregation"]["formula"].as_str().unwrap_or("sum")).round() as i64
}

/// Summaries a request may ask for at once.
const MAX_SUMMARY_WINDOWS: i64 = 10_000;

pub(super) fn meter_event_summaries(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let m = get_or_404(w, "billing.meter", &id, "billing.meter")?;
    let cus = p.req_str("customer")?.to_string();
    let from = p.req_int("start_time")?;
    let to = p.req_int("end_time")?;
    if to <= from {
        return Err(invalid("end_time must be after start_time.").param("end_time"));
    }
    if from % 60 != 0 || to % 60 != 0 {
        return Err(invalid("start_time and end_time must be aligned to the minute.").param("start_time"));
    }
    let window = match p.str("value_grouping_window") {
        None => None,
        Some("hour") => Some(3600),
        Some("day") => Some(86_400),
        Some(_) => return Err(invalid("Invalid value_grouping_window: must be one of day or hour").param("value_grouping_window")),
    };
    let formula = m["default_aggregation"]["formula"].as_str().unwrap_or("sum").to_string();
    let values = meter_values(w, &m, &cus, from, to);
    let summary = |a: i64, b: i64| {
        let inside: Vec<(i64, f64)> = values.iter().copied().filter(|(t, _)| *t >= a && *t < b).collect();
        json!({"id": format!("mtrusg_{}_{a}", &id[4..]), "object": "billing.meter_event_summary", "aggregated_value": meter_aggregate(&inside, &formula), "end_time": b, "livemode": false, "meter": id, "start_time": a})
    };
    let items: Vec<Value> = match window {
        None => vec![summary(from, to)],
        Some(size) => {
            if (to - from) / size > MAX_SUMMARY_WINDOWS {
                return Err(invalid(format!("The range asks for more than {MAX_SUMMARY_WINDOWS} windows: narrow start_time and end_time.")).param("value_grouping_window"));
            }
            if from % size != 0 || to % size != 0 {
                return Err(invalid(format!("start_time and end_time must be aligned to the {} when grouping by it.", if size == 3600 { "hour" } else { "day" })).param("start_time"));
            }
            // Newest window first, as lists go.
            (0..(to - from) / size).rev().map(|k| summary(from + k * size, from + (k + 1) * size)).collect()
        }
    };
    crate::core::list_object(&call.req.path, items, p)
}

/// Identifiers a meter event must not repeat, as Stripe dedupes them (24 hours).
const IDENTIFIER_SECS: i64 = 24 * 3600;

pub(super) fn meter_event_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let event_name = p.req_str("event_name")?.to_string();
    let payload = match p.get("payload") {
        Some(Value::Object(m)) if !m.is_empty() => m.clone(),
        _ => return Err(missing("payload")),
    };
    // A customer on a test clock reports usage on the clock's time.
    let cus_key = w.all("billing.meter").find(|m| m["event_name"] == event_name.as_str()).and_then(|m| m["customer_mapping"]["event_payload_key"].as_str().map(str::to_string)).unwrap_or_else(|| "stripe_customer_id".into());
    let now = match payload.get(&cus_key).and_then(Value::as_str).filter(|c| w.is_kind("customer", c)) {
        Some(c) => now_for(w, c),
        None => w.now(),
    };
    let ts = p.int("timestamp")?.unwrap_or(now);
    if ts < now - 35 * 86_400 || ts > now + 300 {
        return Err(invalid("The timestamp must be within the past 35 days and at most 5 minutes in the future.").param("timestamp"));
    }
    // The meters this event feeds check what they read of it.
    for m in w.all("billing.meter").filter(|m| m["event_name"] == event_name.as_str() && m["status"] == "active") {
        let vkey = m["value_settings"]["event_payload_key"].as_str().unwrap_or("value");
        let ckey = m["customer_mapping"]["event_payload_key"].as_str().unwrap_or("stripe_customer_id");
        if !payload.contains_key(ckey) {
            return Err(missing(&format!("payload[{ckey}]")));
        }
        if m["default_aggregation"]["formula"] != "count" {
            let v = payload.get(vkey).and_then(Value::as_str).ok_or_else(|| missing(&format!("payload[{vkey}]")))?;
            if v.parse::<f64>().is_err() {
                return Err(invalid(format!("Invalid payload[{vkey}]: a meter's value must be a number.")).param(&format!("payload[{vkey}]")));
            }
        }
    }
    let identifier = match p.str("identifier") {
        Some(i) => {
            if w.get_kind("billing.meter_event", i).is_some_and(|e| e["created"].as_i64().is_some_and(|c| now - c < IDENTIFIER_SECS)) {
                return Err(invalid(format!("An event with identifier `{}` was already reported in the last 24 hours.", crate::core::shown(i))).code("resource_already_exists").param("identifier"));
            }
            i.to_string()
        }
        None => w.new_id("mevt"),
    };
    let o = json!({"id": identifier, "object": "billing.meter_event", "canceled": false, "created": w.now(), "event_name": event_name, "identifier": identifier, "livemode": false, "payload": payload, "timestamp": ts});
    w.insert(Some(call), o);
    Ok(json!({"object": "billing.meter_event", "created": now, "event_name": event_name, "identifier": identifier, "livemode": false, "payload": payload, "timestamp": ts}))
}

pub(super) fn meter_event_adjustment_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let event_name = p.req_str("event_name")?.to_string();
    let ty = p.str("type").unwrap_or("cancel");
    if ty != "cancel" {
        return Err(invalid("Invalid type: must be cancel").param("type"));
    }
    let ident = p.get("cancel").and_then(|c| c["identifier"].as_str()).ok_or_else(|| missing("cancel[identifier]"))?.to_string();
    let e = w.get_kind("billing.meter_event", &ident).filter(|e| e["event_name"] == event_name.as_str()).ok_or_else(|| no_such_ref("meter event", &ident, "cancel[identifier]"))?;
    if e["canceled"] == true {
        return Err(invalid(format!("The meter event `{}` has already been canceled.", crate::core::shown(&ident))).param("cancel[identifier]"));
    }
    w.modify(call, &ident, |e| e["canceled"] = json!(true));
    Ok(json!({"object": "billing.meter_event_adjustment", "cancel": {"identifier": ident}, "event_name": event_name, "livemode": false, "status": "complete", "type": "cancel"}))
}
