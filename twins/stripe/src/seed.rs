//! Seeds in Pome's shape (`api_keys`, `customers`, `products`, `prices`, `payment_intents`,
//! `charges`, `refunds`, `events`, `balances`, `failure_injection`), read strictly: an unknown
//! field or a wrong type names its JSON path. Seeded rows become Stripe objects.

use pome_twin_sdk::seed::Obj;
use pome_twin_sdk::{Value, json};

use crate::{Data, FailureRule, World, api};

const TOP: &[&str] = &[
    "_meta", "api_keys", "account_id", "customers", "products", "prices", "payment_intents", "charges", "refunds",
    "events", "balances", "failure_injection", "payment_methods", "webhook_endpoints",
];

pub fn init(seed: Option<Value>) -> Result<World, String> {
    let mut w = World(Data { account_id: "acct_default".into(), ..Data::default() });
    let Some(seed) = seed else { return Ok(w) };
    // A multi-twin seed carries the Stripe part under `stripe`.
    let seed = match seed.get("stripe") {
        Some(s) if s.is_object() => s.clone(),
        _ => seed,
    };
    let top = Obj::new(&seed, "", TOP)?;
    if let Some(a) = top.str("account_id")? {
        w.account_id = a;
    }
    for (path, k) in top.items("api_keys")? {
        let o = Obj::new(k, &path, &["key", "sid", "account_id", "livemode"])?;
        o.nonempty_str("key")?;
        if let Some(a) = o.str("account_id")? {
            if w.api_keys.is_empty() {
                w.account_id = a;
            }
        }
        w.api_keys.push(k.clone());
    }
    for (path, c) in top.items("customers")? {
        let o = Obj::new(c, &path, &["id", "account_id", "email", "name", "phone", "description", "metadata", "created", "balance", "currency"])?;
        let id = o.str("id")?.unwrap_or_else(|| w.new_id("cus"));
        let mut obj = api::customer_obj(&id, o.int("created")?.unwrap_or(1_700_000_000));
        for f in ["email", "name", "phone", "description", "currency"] {
            if let Some(v) = o.str(f)? {
                obj[f] = json!(v);
            }
        }
        obj["balance"] = json!(o.int("balance")?.unwrap_or(0));
        obj["metadata"] = metadata(&o)?;
        w.insert(None, obj);
    }
    for (path, p) in top.items("products")? {
        let o = Obj::new(p, &path, &["id", "account_id", "name", "description", "active", "metadata", "created"])?;
        let id = o.str("id")?.unwrap_or_else(|| w.new_id("prod"));
        let created = o.int("created")?.unwrap_or(1_700_000_000);
        w.insert(None, json!({
            "id": id, "object": "product", "active": o.bool("active")?.unwrap_or(true), "created": created,
            "default_price": null, "description": o.str("description")?, "images": [], "livemode": false,
            "marketing_features": [], "metadata": metadata(&o)?, "name": o.nonempty_str("name")?,
            "package_dimensions": null, "shippable": null, "statement_descriptor": null, "tax_code": null,
            "type": "service", "unit_label": null, "updated": created, "url": null,
        }));
    }
    for (path, p) in top.items("prices")? {
        let o = Obj::new(p, &path, &["id", "account_id", "product", "product_id", "unit_amount", "currency", "recurring", "interval", "active", "nickname", "lookup_key", "metadata", "created", "type"])?;
        let id = o.str("id")?.unwrap_or_else(|| w.new_id("price"));
        let product = match o.str("product")?.or(o.str("product_id")?) {
            Some(p) if w.get_kind("product", &p).is_some() => p,
            Some(p) => return Err(format!("{}: no product {p:?} in the seed", o.at("product"))),
            None => return Err(format!("{}: a price needs its product", o.at("product"))),
        };
        let interval = match o.get("recurring") {
            Some(r) => Some(Obj::new(r, &o.at("recurring"), &["interval", "interval_count"])?.one_of("interval", &["day", "week", "month", "year"], "month")?),
            None => o.str("interval")?,
        };
        let recurring = match &interval {
            Some(i) => json!({"aggregate_usage": null, "interval": i, "interval_count": 1, "meter": null, "trial_period_days": null, "usage_type": "licensed"}),
            None => Value::Null,
        };
        let amount = o.int("unit_amount")?;
        w.insert(None, json!({
            "id": id, "object": "price", "active": o.bool("active")?.unwrap_or(true), "billing_scheme": "per_unit",
            "created": o.int("created")?.unwrap_or(1_700_000_000), "currency": o.str("currency")?.unwrap_or_else(|| "usd".into()),
            "custom_unit_amount": null, "livemode": false, "lookup_key": o.str("lookup_key")?, "metadata": metadata(&o)?,
            "nickname": o.str("nickname")?, "product": product, "recurring": recurring, "tax_behavior": "unspecified",
            "tiers_mode": null, "transform_quantity": null, "type": if interval.is_some() { "recurring" } else { "one_time" },
            "unit_amount": amount, "unit_amount_decimal": amount.map(|a| a.to_string()),
        }));
    }
    for (path, p) in top.items("payment_intents")? {
        let o = Obj::new(p, &path, &[
            "id", "account_id", "amount", "currency", "status", "client_secret", "latest_charge_id", "latest_charge", "capture_method",
            "confirmation_method", "payment_method_types", "created", "updated", "captured_at", "customer", "customer_id",
            "description", "metadata", "amount_received", "payment_method", "payment_method_id", "canceled_at",
        ])?;
        let id = o.str("id")?.unwrap_or_else(|| w.new_id("pi"));
        let amount = o.positive("amount")?.ok_or_else(|| format!("{}: required", o.at("amount")))? as i64;
        let cur = o.str("currency")?.unwrap_or_else(|| "usd".into());
        let mut pi = api::pi_obj(&id, amount, &cur, o.int("created")?.unwrap_or(1_700_000_000));
        let status = o.one_of("status", &["requires_payment_method", "requires_confirmation", "requires_action", "processing", "requires_capture", "succeeded", "canceled"], "requires_payment_method")?;
        pi["status"] = json!(status);
        if let Some(s) = o.str("client_secret")? {
            pi["client_secret"] = json!(s);
        }
        pi["capture_method"] = json!(o.one_of("capture_method", &["automatic", "automatic_async", "manual"], "automatic")?);
        pi["confirmation_method"] = json!(o.one_of("confirmation_method", &["automatic", "manual"], "automatic")?);
        let types = o.strs("payment_method_types")?;
        if !types.is_empty() {
            pi["payment_method_types"] = json!(types);
        }
        pi["latest_charge"] = json!(o.str("latest_charge_id")?.or(o.str("latest_charge")?));
        pi["customer"] = json!(o.str("customer")?.or(o.str("customer_id")?));
        pi["payment_method"] = json!(o.str("payment_method")?.or(o.str("payment_method_id")?));
        pi["description"] = json!(o.str("description")?);
        pi["metadata"] = metadata(&o)?;
        pi["canceled_at"] = json!(o.int("canceled_at")?);
        let received = o.int("amount_received")?.unwrap_or(if status == "succeeded" { amount } else { 0 });
        pi["amount_received"] = json!(received);
        if status == "requires_capture" {
            pi["amount_capturable"] = json!(amount);
        }
        if status == "requires_action" && types.iter().any(|t| t == "crypto") {
            pi["next_action"] = api::crypto_next_action(&id, amount);
        }
        w.insert(None, pi);
    }
    for (path, c) in top.items("charges")? {
        let o = Obj::new(c, &path, &[
            "id", "account_id", "payment_intent_id", "payment_intent", "amount", "amount_captured", "amount_refunded", "status", "currency",
            "captured", "refunded", "created", "customer", "customer_id", "description", "metadata", "paid", "balance_transaction_id",
        ])?;
        let id = o.str("id")?.unwrap_or_else(|| w.new_id("ch"));
        let amount = o.positive("amount")?.ok_or_else(|| format!("{}: required", o.at("amount")))? as i64;
        let cur = o.str("currency")?.unwrap_or_else(|| "usd".into());
        let status = o.one_of("status", &["succeeded", "pending", "failed"], "succeeded")?;
        let captured = o.bool("captured")?.unwrap_or(status == "succeeded");
        let amount_captured = o.int("amount_captured")?.unwrap_or(if captured { amount } else { 0 });
        let refunded_amount = o.int("amount_refunded")?.unwrap_or(0);
        if refunded_amount > amount_captured.max(amount) {
            return Err(format!("{}: {refunded_amount} is more than the charge's amount", o.at("amount_refunded")));
        }
        let pi_id = o.str("payment_intent_id")?.or(o.str("payment_intent")?);
        if let Some(p) = &pi_id {
            if w.get_kind("payment_intent", p).is_none() {
                return Err(format!("{}: no payment intent {p:?} in the seed", o.at("payment_intent_id")));
            }
        }
        let created = o.int("created")?.unwrap_or(1_700_000_000);
        let pi_types = pi_id.as_ref().and_then(|p| w.get(p)).map(|p| p["payment_method_types"].clone()).unwrap_or(json!(["card"]));
        let details = if pi_types.as_array().is_some_and(|a| a.iter().any(|t| t == "crypto")) {
            json!({"type": "crypto", "crypto": {"buyer_address": null, "network": "base", "token_currency": "usdc", "transaction_hash": null}})
        } else {
            json!({"type": "card", "card": {"amount_authorized": amount, "brand": "visa", "checks": null, "country": "US", "exp_month": 12, "exp_year": 2034, "fingerprint": "twinseedcard0001", "funding": "credit", "last4": "4242", "network": "visa", "three_d_secure": null, "wallet": null}})
        };
        let mut txn = Value::Null;
        if captured && status == "succeeded" {
            let tid = w.new_id("txn");
            let fee = api::fee_for(amount_captured);
            w.insert(None, json!({
                "id": tid, "object": "balance_transaction", "amount": amount_captured, "available_on": created, "created": created,
                "currency": cur, "description": null, "exchange_rate": null, "fee": fee,
                "fee_details": [{"amount": fee, "application": null, "currency": cur, "description": "Stripe processing fees", "type": "stripe_fee"}],
                "net": amount_captured - fee, "reporting_category": "charge", "source": id, "status": "available", "type": "charge",
            }));
            txn = json!(tid);
        }
        w.insert(None, json!({
            "id": id, "object": "charge", "amount": amount, "amount_captured": amount_captured, "amount_refunded": refunded_amount,
            "application": null, "application_fee": null, "application_fee_amount": null, "balance_transaction": txn,
            "billing_details": {"address": {"city": null, "country": null, "line1": null, "line2": null, "postal_code": null, "state": null}, "email": null, "name": null, "phone": null},
            "calculated_statement_descriptor": "POME TWIN", "captured": captured, "created": created, "currency": cur,
            "customer": o.str("customer")?.or(o.str("customer_id")?), "description": o.str("description")?, "disputed": false,
            "failure_balance_transaction": null, "failure_code": null, "failure_message": null, "fraud_details": {}, "invoice": null,
            "livemode": false, "metadata": metadata(&o)?, "on_behalf_of": null,
            "outcome": {"network_status": "approved_by_network", "reason": null, "risk_level": "normal", "risk_score": 20, "seller_message": "Payment complete.", "type": "authorized"},
            "paid": o.bool("paid")?.unwrap_or(status == "succeeded"), "payment_intent": pi_id, "payment_method": null,
            "payment_method_details": details, "receipt_email": null, "receipt_number": null,
            "receipt_url": format!("https://pay.stripe.com/receipts/payment/{id}"),
            "refunded": o.bool("refunded")?.unwrap_or(refunded_amount > 0 && refunded_amount >= amount_captured),
            "refunds": {"object": "list", "data": [], "has_more": false, "total_count": 0, "url": format!("/v1/charges/{id}/refunds")},
            "review": null, "shipping": null, "source": null, "source_transfer": null, "statement_descriptor": null,
            "statement_descriptor_suffix": null, "status": status, "transfer_data": null, "transfer_group": null,
        }));
    }
    for (path, r) in top.items("refunds")? {
        let o = Obj::new(r, &path, &["id", "account_id", "charge_id", "charge", "payment_intent_id", "amount", "currency", "status", "reason", "created", "metadata", "idempotency_key"])?;
        let id = o.str("id")?.unwrap_or_else(|| w.new_id("re"));
        let ch = o.str("charge_id")?.or(o.str("charge")?).ok_or_else(|| format!("{}: a refund needs its charge", o.at("charge_id")))?;
        let ch_obj = w.get_kind("charge", &ch).ok_or_else(|| format!("{}: no charge {ch:?} in the seed", o.at("charge_id")))?;
        w.insert(None, json!({
            "id": id, "object": "refund", "amount": o.positive("amount")?.ok_or_else(|| format!("{}: required", o.at("amount")))?,
            "balance_transaction": null, "charge": ch, "created": o.int("created")?.unwrap_or(1_700_000_000),
            "currency": o.str("currency")?.unwrap_or_else(|| ch_obj["currency"].as_str().unwrap_or("usd").to_string()),
            "destination_details": null, "metadata": metadata(&o)?, "payment_intent": o.str("payment_intent_id")?.map(Value::String).unwrap_or(ch_obj["payment_intent"].clone()),
            "reason": o.str("reason")?, "receipt_number": null, "source_transfer_reversal": null,
            "status": o.one_of("status", &["succeeded", "pending", "failed", "canceled", "requires_action"], "succeeded")?, "transfer_reversal": null,
        }));
    }
    for (path, e) in top.items("events")? {
        let o = Obj::new(e, &path, &["id", "account_id", "type", "created", "data", "object"])?;
        let id = o.str("id")?.unwrap_or_else(|| w.new_id("evt"));
        w.insert(None, json!({
            "id": id, "object": "event", "api_version": crate::API_VERSION, "created": o.int("created")?.unwrap_or(1_700_000_000),
            "data": o.get("data").cloned().unwrap_or_else(|| json!({"object": o.get("object").cloned().unwrap_or(json!({}))})),
            "livemode": false, "pending_webhooks": 0, "request": {"id": null, "idempotency_key": null}, "type": o.nonempty_str("type")?,
        }));
    }
    for (path, b) in top.items("balances")? {
        let o = Obj::new(b, &path, &["account_id", "currency", "available", "pending"])?;
        let cur = o.str("currency")?.unwrap_or_else(|| "usd".into());
        let e = w.seeded_balance.entry(cur).or_default();
        e.0 += o.int("available")?.unwrap_or(0);
        e.1 += o.int("pending")?.unwrap_or(0);
    }
    for (path, we) in top.items("webhook_endpoints")? {
        let o = Obj::new(we, &path, &["id", "url", "enabled_events", "secret", "status", "created", "description", "metadata"])?;
        let id = o.str("id")?.unwrap_or_else(|| w.new_id("we"));
        let secret = o.str("secret")?.unwrap_or_else(|| format!("whsec_{}", crate::core::base62(w.seq, 32)));
        let events = o.strs("enabled_events")?;
        if let Some((i, e)) = events.iter().enumerate().find(|(_, e)| !crate::core::is_event_type(e)) {
            return Err(format!("{}[{i}]: {e:?} is not an event type Stripe sends", o.at("enabled_events")));
        }
        w.insert(None, json!({
            "id": id, "object": "webhook_endpoint", "api_version": null, "application": null,
            "created": o.int("created")?.unwrap_or(1_700_000_000), "description": o.str("description")?,
            "enabled_events": if events.is_empty() { vec!["*".to_string()] } else { events }, "livemode": false,
            "metadata": metadata(&o)?, "secret": secret, "status": o.one_of("status", &["enabled", "disabled"], "enabled")?,
            "url": o.nonempty_str("url")?,
        }));
    }
    for (path, f) in top.items("failure_injection")? {
        let o = Obj::new(f, &path, &["method", "path", "attempt", "mode", "status", "body"])?;
        let status = o.positive("status")?.ok_or_else(|| format!("{}: required", o.at("status")))?;
        if !(100..=599).contains(&status) {
            return Err(format!("{}: {status} is not an HTTP status", o.at("status")));
        }
        w.failure_injection.push(FailureRule {
            method: o.str("method")?.unwrap_or_else(|| "POST".into()).to_ascii_uppercase(),
            path: o.str("path")?.unwrap_or_default(),
            attempt: o.positive("attempt")?.map(|a| a as u32),
            mode: o.one_of("mode", &["before_handler", "after_handler"], "before_handler")?,
            status: status as u16,
            body: o.get("body").cloned(),
        });
    }
    Ok(w)
}

fn metadata(o: &Obj<'_>) -> Result<Value, String> {
    match o.get("metadata") {
        None => Ok(json!({})),
        Some(Value::Object(m)) => {
            for (k, v) in m {
                if !v.is_string() {
                    return Err(format!("{}.{k}: metadata values are strings", o.at("metadata")));
                }
            }
            Ok(Value::Object(m.clone()))
        }
        Some(_) => Err(format!("{}: expected an object of strings", o.at("metadata"))),
    }
}
