//! Subscription schedules: a subscription's future in phases. A schedule made from a
//! subscription takes over its current period as its first phase; one made with phases
//! starts its subscription at the first phase's start. As its customer's test clock moves,
//! each phase ending puts the next phase's items on the subscription (prorated as the phase
//! says), and the last one ending releases the subscription (`end_behavior=release`) or
//! cancels it (`cancel`). Releasing or canceling a schedule does that at once.

use super::*;

use crate::billing::{add_interval, now_for};

const END_BEHAVIORS: &[&str] = &["cancel", "none", "release", "renew"];

fn default_settings() -> Value {
    json!({
        "application_fee_percent": null, "automatic_tax": {"enabled": false, "liability": null}, "billing_cycle_anchor": "automatic",
        "billing_thresholds": null, "collection_method": "charge_automatically", "default_payment_method": null, "description": null,
        "invoice_settings": {"account_tax_ids": null, "days_until_due": null, "issuer": {"type": "self"}}, "on_behalf_of": null, "transfer_data": null,
    })
}

fn phase_item(price: &Value, qty: Option<i64>, metadata: Value, rates: &[Value]) -> Value {
    json!({"billing_thresholds": null, "discounts": [], "metadata": metadata, "plan": price["id"], "price": price["id"], "quantity": qty, "tax_rates": rates})
}

#[allow(clippy::too_many_arguments)]
fn phase(items: Vec<Value>, cur: &str, start: i64, end: i64, proration: &str, trial_end: Option<i64>, description: Value, metadata: Value, collection: Value, dpm: Value) -> Value {
    json!({
        "add_invoice_items": [], "application_fee_percent": null, "automatic_tax": {"enabled": false, "liability": null}, "billing_cycle_anchor": null,
        "billing_thresholds": null, "collection_method": collection, "coupon": null, "currency": cur, "default_payment_method": dpm,
        "default_tax_rates": [], "description": description, "discounts": [], "end_date": end, "invoice_settings": null, "items": items,
        "metadata": metadata, "on_behalf_of": null, "proration_behavior": proration, "start_date": start, "transfer_data": null, "trial_end": trial_end,
    })
}

/// The phases `given` (`phases[i][...]`) as the schedule keeps them, starting at `start`:
/// each phase ends at its `end_date`, or after `iterations` of its prices' interval (one
/// when neither is given), and the next starts there.
fn phases_of(w: &World, given: &[Value], start: i64) -> Result<Vec<Value>, StripeError> {
    if given.is_empty() {
        return Err(missing("phases"));
    }
    let mut out = Vec::with_capacity(given.len());
    let mut at = start;
    for (i, ph) in given.iter().enumerate() {
        let p = |k: &str| format!("phases[{i}][{k}]");
        if let Some(s) = int_at(&ph["start_date"], &p("start_date")).ok().flatten() {
            if i == 0 {
                at = s;
            } else if s != at {
                return Err(invalid(format!("The start_date of phase {i} must be the end_date of the phase before it.")).param(&p("start_date")));
            }
        }
        for k in ["coupon", "discounts", "application_fee_percent", "transfer_data", "on_behalf_of", "add_invoice_items"] {
            if ph.get(k).is_some_and(|v| v != "") {
                return Err(invalid(format!("The Stripe twin does not model `{k}` on schedule phases; set it on the subscription.")).param(&p(k)));
            }
        }
        let Some(Value::Array(items)) = ph.get("items") else { return Err(missing(&p("items"))) };
        if items.is_empty() {
            return Err(missing(&format!("{}[0][price]", p("items"))));
        }
        let mut cur: Option<String> = None;
        let mut interval: Option<(String, i64)> = None;
        let mut out_items = Vec::with_capacity(items.len());
        for (j, it) in items.iter().enumerate() {
            let at_item = |k: &str| format!("phases[{i}][items][{j}][{k}]");
            let pid = it["price"].as_str().ok_or_else(|| missing(&at_item("price")))?;
            let price = w.get_kind("price", pid).ok_or_else(|| no_such_ref("price", pid, &at_item("price")))?;
            if price["recurring"].is_null() {
                return Err(invalid("The price specified is set to `type=one_time` but this field only accepts prices with `type=recurring`.").param(&at_item("price")));
            }
            let c = price["currency"].as_str().unwrap_or("usd").to_string();
            if cur.as_ref().is_some_and(|x| *x != c) {
                return Err(invalid("All prices in a phase must have the same currency.").param(&at_item("price")));
            }
            cur = Some(c);
            let iv = (price["recurring"]["interval"].as_str().unwrap_or("month").to_string(), price["recurring"]["interval_count"].as_i64().unwrap_or(1));
            if interval.as_ref().is_some_and(|x| *x != iv) {
                return Err(invalid("All prices in a phase must have the same recurring interval.").param(&at_item("price")));
            }
            interval = Some(iv);
            let metered = price["recurring"]["usage_type"] == "metered";
            let qty = int_at(&it["quantity"], &at_item("quantity"))?;
            if metered && qty.is_some() {
                return Err(invalid("Quantity should not be specified where usage_type is `metered`. Remove quantity from the metered price.").param(&at_item("quantity")));
            }
            let rates = match it.get("tax_rates") {
                Some(Value::Array(ids)) => super::tax::tax_rates_of(w, &ids.iter().filter_map(|v| v.as_str().map(str::to_string)).collect::<Vec<_>>(), &at_item("tax_rates"))?,
                _ => Vec::new(),
            };
            out_items.push(phase_item(&price, if metered { None } else { Some(qty.unwrap_or(1)) }, metadata_at(&it["metadata"], &at_item("metadata"))?, &rates));
        }
        let (iv, count) = interval.unwrap_or(("month".into(), 1));
        let end = match (int_at(&ph["end_date"], &p("end_date"))?, int_at(&ph["iterations"], &p("iterations"))?) {
            (Some(_), Some(_)) => return Err(invalid("You may only specify one of these parameters: end_date, iterations.").code("parameters_exclusive").param(&p("end_date"))),
            (Some(e), None) => e,
            (None, Some(n)) if n >= 1 => add_interval(at, &iv, count * n),
            (None, Some(_)) => return Err(invalid("This value must be greater than or equal to 1.").param(&p("iterations"))),
            (None, None) => add_interval(at, &iv, count),
        };
        if end <= at {
            return Err(invalid("A phase's end_date must be after its start_date.").param(&p("end_date")));
        }
        let proration = ph["proration_behavior"].as_str().unwrap_or("create_prorations");
        let trial_end = match ph["trial_end"].as_str() {
            Some("now") => Some(at),
            _ => int_at(&ph["trial_end"], &p("trial_end"))?,
        }
        .or_else(|| (bool_at(&ph["trial"], &p("trial")).ok().flatten() == Some(true)).then_some(end));
        let dpm = match ph["default_payment_method"].as_str() {
            Some(pm) => {
                w.get_kind("payment_method", pm).ok_or_else(|| no_such_ref("PaymentMethod", pm, &p("default_payment_method")))?;
                json!(pm)
            }
            None => Value::Null,
        };
        let collection = ph.get("collection_method").cloned().unwrap_or(Value::Null);
        let description = ph.get("description").cloned().filter(|d| d != "").unwrap_or(Value::Null);
        out.push(phase(out_items, cur.as_deref().unwrap_or("usd"), at, end, proration, trial_end, description, metadata_at(&ph["metadata"], &p("metadata"))?, collection, dpm));
        at = end;
    }
    Ok(out)
}

/// The phase in effect at `t`, and its index.
fn phase_at(s: &Value, t: i64) -> Option<(usize, &Value)> {
    s["phases"].as_array()?.iter().enumerate().find(|(_, p)| p["start_date"].as_i64().is_some_and(|a| a <= t) && p["end_date"].as_i64().is_some_and(|e| t < e))
}

fn current_phase(s: &Value, t: i64) -> Value {
    match phase_at(s, t) {
        Some((_, p)) => json!({"end_date": p["end_date"], "start_date": p["start_date"]}),
        None => Value::Null,
    }
}

/// A form for billing's own handlers.
fn form(pairs: &[(String, String)]) -> Result<Params, StripeError> {
    Ok(Params(crate::core::nest(pairs)?))
}

/// Run billing's subscription `handler` on subscription `sub` with `pairs`, as its own route
/// would with `sub` in the path.
fn on_subscription(w: &mut World, call: &mut Call, sub: &str, pairs: &[(String, String)], handler: crate::core::Handler) -> Res {
    let params = form(pairs)?;
    let saved = std::mem::replace(&mut call.params, vec![("id".into(), sub.to_string())]);
    let out = handler(w, call, &params);
    call.params = saved;
    out
}

/// Start a schedule's subscription with phase `ph` (its customer's clock at the phase start).
fn start_subscription(w: &mut World, call: &mut Call, sched: &str, cus: &str, ph: &Value) -> Result<String, StripeError> {
    let mut f = vec![("customer".to_string(), cus.to_string())];
    for (k, it) in ph["items"].as_array().into_iter().flatten().enumerate() {
        f.push((format!("items[{k}][price]"), it["price"].as_str().unwrap_or_default().to_string()));
        if let Some(q) = it["quantity"].as_i64() {
            f.push((format!("items[{k}][quantity]"), q.to_string()));
        }
    }
    if let Some(t) = ph["trial_end"].as_i64() {
        f.push(("trial_end".into(), t.to_string()));
    }
    if let Some(pm) = ph["default_payment_method"].as_str() {
        f.push(("default_payment_method".into(), pm.to_string()));
    }
    if let Some(d) = ph["description"].as_str() {
        f.push(("description".into(), d.to_string()));
    }
    let s = crate::billing::sub_create(w, call, &form(&f)?)?;
    let sub = s["id"].as_str().unwrap_or_default().to_string();
    let sched = sched.to_string();
    w.modify(call, &sub, |s| s["schedule"] = json!(sched));
    Ok(sub)
}

pub(crate) fn schedule_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = w.new_id("sub_sched");
    let mut end_behavior = p.str("end_behavior").unwrap_or("release").to_string();
    if !END_BEHAVIORS.contains(&end_behavior.as_str()) {
        return Err(invalid(format!("Invalid end_behavior: must be one of {}", super::tax::one_of(END_BEHAVIORS))).param("end_behavior"));
    }
    let mut settings = default_settings();
    if let Some(d) = p.get("default_settings") {
        for k in ["collection_method", "description", "default_payment_method"] {
            if let Some(v) = d.get(k) {
                settings[k] = if v == "" { Value::Null } else { v.clone() };
            }
        }
    }
    if let Some(sub) = p.str("from_subscription") {
        if let Some(k) = ["customer", "phases", "start_date", "end_behavior"].into_iter().find(|k| p.has(k)) {
            return Err(invalid(format!("You cannot set `{k}` when creating a schedule from an existing subscription: update the schedule after it is created.")).param(k));
        }
        let s = w.get_kind("subscription", sub).ok_or_else(|| no_such_ref("subscription", sub, "from_subscription"))?;
        if !s["schedule"].is_null() {
            return Err(invalid(format!("You cannot migrate a subscription that is already attached to a schedule: `{}`.", s["schedule"].as_str().unwrap_or(""))).param("from_subscription"));
        }
        if ["canceled", "incomplete_expired"].contains(&s["status"].as_str().unwrap_or("")) {
            return Err(invalid("You cannot create a schedule from a subscription that has ended.").param("from_subscription"));
        }
        let items: Vec<Value> = s["items"]["data"].as_array().into_iter().flatten().map(|i| phase_item(&i["price"], i["quantity"].as_i64(), json!({}), &[])).collect();
        let (start, end) = (s["current_period_start"].as_i64().unwrap_or(0), s["current_period_end"].as_i64().unwrap_or(0));
        let ph = phase(items, s["currency"].as_str().unwrap_or("usd"), start, end, "create_prorations", s["trial_end"].as_i64().filter(|t| *t > start), s["description"].clone(), json!({}), Value::Null, s["default_payment_method"].clone());
        end_behavior = "release".into();
        settings["collection_method"] = s["collection_method"].clone();
        let cus = s["customer"].as_str().unwrap_or_default().to_string();
        let now = now_for(w, &cus);
        let mut o = json!({
            "id": id, "object": "subscription_schedule", "application": null, "canceled_at": null, "completed_at": null, "created": now,
            "current_phase": null, "customer": cus, "default_settings": settings, "end_behavior": end_behavior, "livemode": false,
            "metadata": {}, "phases": [ph], "released_at": null, "released_subscription": null, "status": "active", "subscription": sub, "test_clock": s["test_clock"],
        });
        o["current_phase"] = current_phase(&o, now);
        p.metadata_into(&mut o)?;
        let o = w.insert(Some(call), o);
        let sched = id.clone();
        let after = w.modify(call, sub, |s| s["schedule"] = json!(sched));
        emit(w, call, "customer.subscription.updated", &after, Some(json!({"schedule": null})));
        emit(w, call, "subscription_schedule.created", &o, None);
        return Ok(o);
    }
    let cus = p.req_str("customer")?.to_string();
    let c = w.get_kind("customer", &cus).ok_or_else(|| no_such_ref("customer", &cus, "customer"))?;
    let now = now_for(w, &cus);
    let start = match p.str("start_date") {
        None | Some("now") => now,
        Some(t) => t.parse::<i64>().map_err(|_| invalid(format!("Invalid integer: {}", crate::core::shown(t))).param("start_date"))?,
    };
    let given = match p.get("phases") {
        Some(Value::Array(a)) => a.clone(),
        _ => return Err(missing("phases")),
    };
    let phases = phases_of(w, &given, start)?;
    let mut o = json!({
        "id": id, "object": "subscription_schedule", "application": null, "canceled_at": null, "completed_at": null, "created": now,
        "current_phase": null, "customer": cus, "default_settings": settings, "end_behavior": end_behavior, "livemode": false,
        "metadata": {}, "phases": phases, "released_at": null, "released_subscription": null, "status": "not_started", "subscription": null, "test_clock": c["test_clock"],
    });
    p.metadata_into(&mut o)?;
    let o = w.insert(Some(call), o);
    emit(w, call, "subscription_schedule.created", &o, None);
    // A schedule that starts now (or started already) makes its subscription at once.
    if start <= now {
        begin(w, call, &id)?;
    }
    Ok(w.get(&id).unwrap_or(o))
}

/// A schedule's first phase begins: its subscription is made.
fn begin(w: &mut World, call: &mut Call, id: &str) -> Result<(), StripeError> {
    let s = w.get(id).unwrap_or_default();
    let cus = s["customer"].as_str().unwrap_or_default().to_string();
    let first = s["phases"][0].clone();
    let sub = start_subscription(w, call, id, &cus, &first)?;
    let after = w.modify(call, id, |o| {
        o["status"] = json!("active");
        o["subscription"] = json!(sub);
        o["current_phase"] = json!({"end_date": first["end_date"], "start_date": first["start_date"]});
    });
    emit(w, call, "subscription_schedule.updated", &after, Some(json!({"status": "not_started", "subscription": null})));
    Ok(())
}

fn path_schedule(w: &World, call: &Call) -> Result<(String, Value), StripeError> {
    let id = call.param("id").to_string();
    let s = w.get_kind("subscription_schedule", &id).ok_or_else(|| no_such("subscription_schedule", &id, "schedule"))?;
    Ok((id, s))
}

pub(super) fn schedule_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    path_schedule(w, call).map(|x| x.1)
}

pub(super) fn schedule_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let scheduled = p.bool("scheduled")?;
    let mut bounds = Vec::new();
    for (param, field) in [("canceled_at", "canceled_at"), ("completed_at", "completed_at"), ("released_at", "released_at")] {
        if p.get(param).is_some() {
            bounds.push(range(p, field)?);
        }
    }
    list_of(w, call, "subscription_schedule", p, |s| {
        field_is(s, "customer", p.str("customer")) && scheduled.is_none_or(|x| (s["status"] == "not_started") == x) && bounds.iter().all(|b| b(s))
    })
}

pub(super) fn schedule_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let (id, mut s) = path_schedule(w, call)?;
    let status = s["status"].as_str().unwrap_or("").to_string();
    if !["active", "not_started"].contains(&status.as_str()) {
        return Err(invalid(format!("You cannot update a subscription schedule that is {status}.")).code("subscription_schedule_unexpected_state"));
    }
    if let Some(e) = p.str("end_behavior") {
        if !END_BEHAVIORS.contains(&e) {
            return Err(invalid(format!("Invalid end_behavior: must be one of {}", super::tax::one_of(END_BEHAVIORS))).param("end_behavior"));
        }
        s["end_behavior"] = json!(e);
    }
    if let Some(d) = p.get("default_settings") {
        for k in ["collection_method", "description", "default_payment_method"] {
            if let Some(v) = d.get(k) {
                s["default_settings"][k] = if v == "" { Value::Null } else { v.clone() };
            }
        }
    }
    let cus = s["customer"].as_str().unwrap_or_default().to_string();
    let now = now_for(w, &cus);
    let mut items_changed = false;
    if let Some(Value::Array(given)) = p.get("phases") {
        // Phases already begun keep their start; the one in effect may change its items.
        let current = phase_at(&s, now).map(|(i, p)| (i, p.clone()));
        let start = s["phases"][0]["start_date"].as_i64().unwrap_or(now);
        let phases = phases_of(w, given, start)?;
        if status == "active" {
            if let Some((i, old)) = &current {
                let Some(new) = phases.get(*i).or(phases.first()) else { return Err(missing("phases")) };
                if new["start_date"] != old["start_date"] {
                    return Err(invalid("You cannot change the start_date of the phase in effect.").param("phases"));
                }
                items_changed = new["items"] != old["items"];
            }
        }
        s["phases"] = json!(phases);
    }
    p.metadata_into(&mut s)?;
    s["current_phase"] = if status == "active" { current_phase(&s, now) } else { Value::Null };
    let before = w.get(&id).unwrap_or_default();
    let after = w.modify(call, &id, |x| *x = s);
    if items_changed {
        if let (Some(sub), Some((_, ph))) = (after["subscription"].as_str().map(str::to_string), phase_at(&after, now).map(|(i, p)| (i, p.clone()))) {
            let proration = p.str("proration_behavior").unwrap_or(ph["proration_behavior"].as_str().unwrap_or("create_prorations")).to_string();
            put_items(w, call, &sub, &ph, &proration)?;
        }
    }
    emit(w, call, "subscription_schedule.updated", &after, Some(previous(&before, &after)));
    Ok(after)
}

/// Put phase `ph`'s items on subscription `sub` in place of its own, prorated as `proration`.
fn put_items(w: &mut World, call: &mut Call, sub: &str, ph: &Value, proration: &str) -> Result<(), StripeError> {
    let s = w.get(sub).unwrap_or_default();
    let mut f = vec![("proration_behavior".to_string(), proration.to_string())];
    let mut k = 0;
    for it in s["items"]["data"].as_array().into_iter().flatten() {
        f.push((format!("items[{k}][id]"), it["id"].as_str().unwrap_or_default().to_string()));
        f.push((format!("items[{k}][deleted]"), "true".into()));
        k += 1;
    }
    for it in ph["items"].as_array().into_iter().flatten() {
        f.push((format!("items[{k}][price]"), it["price"].as_str().unwrap_or_default().to_string()));
        if let Some(q) = it["quantity"].as_i64() {
            f.push((format!("items[{k}][quantity]"), q.to_string()));
        }
        k += 1;
    }
    on_subscription(w, call, sub, &f, crate::billing::sub_update).map(|_| ())
}

pub(super) fn schedule_cancel(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let (id, s) = path_schedule(w, call)?;
    let status = s["status"].as_str().unwrap_or("").to_string();
    if !["active", "not_started"].contains(&status.as_str()) {
        return Err(invalid(format!("You cannot cancel a subscription schedule that is {status}.")).code("subscription_schedule_unexpected_state"));
    }
    if let Some(sub) = s["subscription"].as_str().filter(|sub| w.get(sub).is_some_and(|x| x["status"] != "canceled")).map(str::to_string) {
        let mut f = Vec::new();
        // Stripe's defaults for a schedule: the last period invoiced and prorated.
        f.push(("invoice_now".to_string(), p.bool("invoice_now")?.unwrap_or(true).to_string()));
        f.push(("prorate".to_string(), p.bool("prorate")?.unwrap_or(true).to_string()));
        on_subscription(w, call, &sub, &f, crate::billing::sub_cancel)?;
    }
    let now = now_for(w, s["customer"].as_str().unwrap_or_default());
    let after = w.modify(call, &id, |x| {
        x["status"] = json!("canceled");
        x["canceled_at"] = json!(now);
        x["current_phase"] = Value::Null;
    });
    emit(w, call, "subscription_schedule.canceled", &after, None);
    Ok(after)
}

pub(super) fn schedule_release(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let (id, s) = path_schedule(w, call)?;
    let status = s["status"].as_str().unwrap_or("").to_string();
    if !["active", "not_started"].contains(&status.as_str()) {
        return Err(invalid(format!("You cannot release a subscription schedule that is {status}.")).code("subscription_schedule_unexpected_state"));
    }
    let keep_cancel = p.bool("preserve_cancel_date")?.unwrap_or(true);
    Ok(release(w, call, &id, keep_cancel))
}

/// Schedule `id` lets its subscription go on alone.
fn release(w: &mut World, call: &mut Call, id: &str, keep_cancel: bool) -> Value {
    let s = w.get(id).unwrap_or_default();
    let now = now_for(w, s["customer"].as_str().unwrap_or_default());
    let sub = s["subscription"].clone();
    if let Some(sid) = sub.as_str() {
        let before = w.get(sid).unwrap_or_default();
        let after = w.modify(call, sid, |x| {
            x["schedule"] = Value::Null;
            if !keep_cancel {
                x["cancel_at"] = Value::Null;
            }
        });
        emit(w, call, "customer.subscription.updated", &after, Some(previous(&before, &after)));
    }
    let after = w.modify(call, id, |x| {
        x["status"] = json!("released");
        x["released_at"] = json!(now);
        x["released_subscription"] = sub;
        x["subscription"] = Value::Null;
        x["current_phase"] = Value::Null;
    });
    emit(w, call, "subscription_schedule.released", &after, None);
    after
}

/// The earliest moment in `(from, to]` at which a schedule of `customers` must act (start,
/// or end a phase), and the schedule.
pub(crate) fn next_transition(w: &World, customers: &[String], from: i64, to: i64) -> Option<(i64, String)> {
    w.all("subscription_schedule")
        .filter(|s| s["customer"].as_str().is_some_and(|c| customers.iter().any(|x| x == c)))
        .filter_map(|s| {
            let at = match s["status"].as_str()? {
                "not_started" => s["phases"][0]["start_date"].as_i64()?,
                "active" => s["current_phase"]["end_date"].as_i64()?,
                _ => return None,
            };
            // A schedule that should have started already starts at once.
            let due = if s["status"] == "not_started" { at <= to } else { at > from && at <= to };
            due.then(|| (at.max(from), s["id"].as_str().map(str::to_string))).and_then(|(t, id)| Some((t, id?)))
        })
        .min()
}

/// Schedule `id` acts at `at` (its customer's clock is there): it starts, moves to its next
/// phase, or ends as its `end_behavior` says.
pub(crate) fn transition(w: &mut World, call: &mut Call, id: &str, at: i64) {
    let Some(s) = w.get(id) else { return };
    if s["status"] == "not_started" {
        let _ = begin(w, call, id);
        return;
    }
    let next = phase_at(&s, at).map(|(_, p)| p.clone());
    match (next, s["subscription"].as_str().map(str::to_string)) {
        (Some(ph), Some(sub)) => {
            let proration = ph["proration_behavior"].as_str().unwrap_or("create_prorations").to_string();
            let _ = put_items(w, call, &sub, &ph, &proration);
            let before = w.get(id).unwrap_or_default();
            let after = w.modify(call, id, |x| x["current_phase"] = json!({"end_date": ph["end_date"], "start_date": ph["start_date"]}));
            emit(w, call, "subscription_schedule.updated", &after, Some(previous(&before, &after)));
        }
        (_, sub) => match s["end_behavior"].as_str() {
            Some("cancel") => {
                if let Some(sub) = sub {
                    let _ = on_subscription(w, call, &sub, &[], crate::billing::sub_cancel);
                }
                let after = w.modify(call, id, |x| {
                    x["status"] = json!("completed");
                    x["completed_at"] = json!(at);
                    x["current_phase"] = Value::Null;
                });
                emit(w, call, "subscription_schedule.completed", &after, None);
            }
            _ => {
                release(w, call, id, true);
            }
        },
    }
}
