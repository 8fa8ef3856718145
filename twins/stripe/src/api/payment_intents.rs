//! PaymentIntents: the payment state machine (confirmation, 3-D Secure, declines, capture,
//! cancellation) and the charges and balance transactions a payment writes.

use super::*;

pub fn pi_obj(id: &str, amount: i64, cur: &str, created: i64) -> Value {
    PaymentIntent::new(id, amount, cur, created).value()
}

pub(super) fn pi_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    Ok(crate::core::raw(create_pi(w, call, p)?))
}

/// `POST /v1/payment_intents`: the new (and with `confirm`, confirmed) PaymentIntent's text.
pub(super) fn create_pi(w: &mut World, call: &mut Call, p: &Params) -> Result<String, StripeError> {
    let amount = p.req_int("amount")?;
    let cur = currency(p)?;
    check_amount(amount, &cur)?;
    let capture = p.str("capture_method").unwrap_or("automatic");
    if !["automatic", "automatic_async", "manual"].contains(&capture) {
        return Err(invalid(format!("Invalid capture_method: must be one of automatic, automatic_async, or manual")).param("capture_method"));
    }
    let conf_method = p.str("confirmation_method").unwrap_or("automatic");
    if !["automatic", "manual"].contains(&conf_method) {
        return Err(invalid("Invalid confirmation_method: must be one of automatic or manual").param("confirmation_method"));
    }
    let mut types = p.strs("payment_method_types");
    if types.is_empty() {
        if let Some(t) = p.get("payment_method_data").and_then(|d| d["type"].as_str()) {
            types.push(t.to_string());
        } else {
            types.push("card".into());
        }
    }
    for t in &types {
        if t != "card" && t != "crypto" && t != "link" && t != "us_bank_account" {
            return Err(invalid(format!("The payment method type provided: {t} is invalid. Please ensure the provided type is activated in your dashboard (https://dashboard.stripe.com/account/payments/settings) and your account is enabled for any preview features that you are trying to use.")).param("payment_method_types"));
        }
    }
    if types.iter().any(|t| t == "crypto") && cur != "usd" {
        return Err(invalid(format!("The currency provided ({cur}) is invalid for one or more payment method types on this PaymentIntent. The payment method type `crypto` supports: usd.")).param("currency"));
    }
    if let Some(c) = p.str("customer") {
        if !w.is_kind("customer", c) {
            return Err(no_such_ref("customer", c, "customer"));
        }
    }
    let id = w.new_id("pi");
    let mut pi = PaymentIntent::new(&id, amount, &cur, w.now());
    pi.capture_method = capture.to_string();
    pi.confirmation_method = conf_method.to_string();
    pi.payment_method_types = Value::Array(types.into_iter().map(Value::String).collect());
    for (name, field) in [
        ("customer", &mut pi.customer),
        ("description", &mut pi.description),
        ("receipt_email", &mut pi.receipt_email),
        ("setup_future_usage", &mut pi.setup_future_usage),
        ("shipping", &mut pi.shipping),
        ("statement_descriptor", &mut pi.statement_descriptor),
        ("statement_descriptor_suffix", &mut pi.statement_descriptor_suffix),
        ("transfer_group", &mut pi.transfer_group),
        ("payment_method_options", &mut pi.payment_method_options),
    ] {
        p.copy_into(name, field);
    }
    pi.automatic_payment_methods = automatic_payment_methods(p)?;
    // A destination charge (Connect): checked here, settled when the charge is captured.
    if let Some(d) = destination_params(w, p, amount)? {
        pi.transfer_data = d.transfer_data;
        pi.application_fee_amount = d.application_fee_amount;
        pi.on_behalf_of = d.on_behalf_of;
    }
    p.metadata_of(&mut pi.metadata)?;
    let pm = match p.str("payment_method") {
        Some(pm) => Some(resolve_pm(w, call, pm, "payment_method")?),
        None => match p.get("payment_method_data") {
            Some(d) => {
                let pm = pm_from_data(w, d, "payment_method_data[")?;
                let pm = w.insert(Some(call), pm);
                Some(pm["id"].as_str().unwrap().to_string())
            }
            None => None,
        },
    };
    if let Some(pm) = pm {
        pi.payment_method = Value::String(pm);
        pi.status = "requires_confirmation".into();
    }
    let c = pi.cut();
    w.insert_cut(Some(call), "payment_intent", &id, &c);
    emit_current(w, call, "payment_intent.created", &id, None);
    if p.bool("confirm")? == Some(true) {
        return confirm_with(w, call, &id, pi, c, p);
    }
    Ok(c.text)
}

pub(super) fn pi_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    get_or_404(w, "payment_intent", &id, "payment_intent")
}

pub(super) fn pi_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let cus = p.str("customer").map(str::to_string);
    list_of(w, call, "payment_intent", p, |o| cus.as_ref().is_none_or(|c| o["customer"] == c.as_str()))
}

pub(super) fn pi_search(w: &mut World, call: &mut Call, p: &Params) -> Res {
    search_of(w, call, "payment_intent", p)
}

pub(super) fn unexpected_state(pi: &Value, action: &str) -> StripeError {
    let status = pi["status"].as_str().unwrap_or("");
    invalid(format!("This PaymentIntent's {action} could not be performed because it has a status of {status}."))
        .code("payment_intent_unexpected_state")
        .with("payment_intent", pi.clone())
}

pub(super) fn pi_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let pi = get_or_404(w, "payment_intent", &id, "payment_intent")?;
    let status = pi["status"].as_str().unwrap_or("").to_string();
    if ["succeeded", "canceled", "processing"].contains(&status.as_str()) && (p.has("amount") || p.has("currency") || p.has("payment_method")) {
        return Err(invalid(format!("You cannot update this PaymentIntent because it has a status of {status}. You can only update a PaymentIntent with one of the following statuses: requires_payment_method, requires_confirmation, requires_action.")).code("payment_intent_unexpected_state"));
    }
    // An authorized PaymentIntent keeps what was authorized: its amount (and so
    // `amount_capturable`) changes only by capture or incremental authorization.
    if status == "requires_capture" {
        if let Some(field) = ["amount", "currency", "payment_method", "payment_method_types"].into_iter().find(|f| p.has(f)) {
            return Err(invalid(format!(
                "This PaymentIntent's {field} could not be updated because it has a status of requires_capture. You may only update the {field} of a PaymentIntent with one of the following statuses: requires_payment_method, requires_confirmation, requires_action."
            ))
            .code("payment_intent_unexpected_state")
            .param(field));
        }
    }
    let amount = p.int("amount")?;
    let cur = if p.has("currency") { Some(currency(p)?) } else { None };
    if amount.is_some() || cur.is_some() {
        let a = amount.unwrap_or_else(|| pi["amount"].as_i64().unwrap_or(0));
        check_amount(a, cur.as_deref().unwrap_or_else(|| pi["currency"].as_str().unwrap_or("usd")))?;
    }
    let pm = match p.str("payment_method") {
        Some(pm) => Some(resolve_pm(w, call, pm, "payment_method")?),
        None => None,
    };
    let mut probe = pi.clone();
    p.metadata_into(&mut probe)?;
    let pi = w.modify(call, &id, |pi| {
        if let Some(a) = amount {
            pi["amount"] = json!(a);
        }
        if let Some(c) = cur {
            pi["currency"] = json!(c);
        }
        p.copy(pi, &["customer", "description", "receipt_email", "setup_future_usage", "shipping", "statement_descriptor"]);
        pi["metadata"] = probe["metadata"].clone();
        if let Some(pm) = pm {
            pi["payment_method"] = json!(pm);
            if pi["status"] == "requires_payment_method" {
                pi["status"] = json!("requires_confirmation");
            }
        }
    });
    Ok(pi)
}

pub(super) fn pi_confirm(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    if !w.is_kind("payment_intent", &id) {
        return Err(no_such("payment_intent", &id, "id"));
    }
    Ok(crate::core::raw(confirm_payment_intent(w, call, &id, p)?))
}

/// Confirm the stored PaymentIntent `id` with `p`, as `POST /v1/payment_intents/{id}/confirm`
/// does (an invoice's collection attempt goes through here too); its new text.
pub fn confirm_payment_intent(w: &mut World, call: &mut Call, id: &str, p: &Params) -> Result<String, StripeError> {
    let pi = PaymentIntent::parse(&w.render(id).expect("a stored PaymentIntent"));
    let c = pi.cut();
    confirm_with(w, call, id, pi, c, p)
}

/// The PaymentIntent an invoice is finalized with: the amount due, awaiting a payment method,
/// `invoice` naming it. Paying the invoice confirms it; confirming it pays the invoice.
pub fn invoice_payment_intent(w: &mut World, call: &mut Call, invoice: &str, amount: i64, cur: &str, customer: &Value, description: &str) -> String {
    let id = w.new_id("pi");
    let mut pi = PaymentIntent::new(&id, amount, cur, w.now());
    pi.customer = customer.clone();
    pi.description = Value::String(description.to_string());
    pi.invoice = Value::String(invoice.to_string());
    pi.payment_method_types = json!(["card"]);
    w.insert_cut(Some(call), "payment_intent", &id, &pi.cut());
    emit_current(w, call, "payment_intent.created", &id, None);
    id
}

/// The card error a payment with the stored card `pm_id` would meet off session, if any: what
/// a charge attempt would answer, without attempting it.
pub fn off_session_refusal(w: &World, pm_id: &str) -> Option<StripeError> {
    let pm = w.get(pm_id)?;
    let (code, decline, message) = match behaviour_of(&pm) {
        Behaviour::Decline(code, decline) => (code, decline, decline_message(code, decline)),
        Behaviour::ThreeDS if !set_up(w, pm_id) => ("authentication_required", "authentication_required", "Your card was declined. This transaction requires authentication."),
        _ => return None,
    };
    let mut e = StripeError::new(402, "card_error", message).code(code).with("payment_method", pm);
    e.decline_code = Some(decline.to_string());
    Some(e)
}

/// Confirm the PaymentIntent `pi` (stored now as `text`): attach the payment method given,
/// then run it by its behaviour. Answers the PaymentIntent's text.
pub(super) fn confirm_with(w: &mut World, call: &mut Call, id: &str, mut pi: PaymentIntent, before: Cut, p: &Params) -> Result<String, StripeError> {
    let status = pi.status.clone();
    if !["requires_payment_method", "requires_confirmation", "requires_action"].contains(&status.as_str()) {
        return Err(invalid(format!(
            "This PaymentIntent's payment_method could not be updated because it has a status of {status}. You may only update the payment_method of a PaymentIntent with one of the following statuses: requires_payment_method, requires_confirmation, requires_action."
        ))
        .code("payment_intent_unexpected_state")
        .with("payment_intent", pi.value()));
    }
    let mut pm_id = pi.payment_method.as_str().map(str::to_string);
    if let Some(pm) = p.str("payment_method") {
        if p.str("payment_method") != pi.payment_method.as_str() {
            pm_id = Some(resolve_pm(w, call, pm, "payment_method")?);
        }
    } else if let Some(d) = p.get("payment_method_data").filter(|_| pm_id.is_none() || status != "requires_action") {
        if !(pi.payment_method.is_string() && p.has("payment_method_data") && status == "requires_confirmation" && d == &json!(null)) {
            let pm = pm_from_data(w, d, "payment_method_data[")?;
            let pm = w.insert(Some(call), pm);
            pm_id = Some(pm["id"].as_str().unwrap().to_string());
        }
    }
    let types: Vec<String> = pi.payment_method_types.as_array().map(|a| a.iter().filter_map(|v| v.as_str().map(String::from)).collect()).unwrap_or_default();
    if pm_id.is_none() && types == ["crypto"] {
        // A crypto-only PaymentIntent confirms into deposit mode without a card.
        let pm = crypto_pm(w);
        let pm = w.insert(Some(call), pm);
        pm_id = Some(pm["id"].as_str().unwrap().to_string());
    }
    let Some(pm_id) = pm_id else {
        return Err(invalid("You cannot confirm this PaymentIntent because it's missing a payment method. You can either update the PaymentIntent with a payment method and then confirm it again, or confirm it again directly with a payment method.")
            .code("payment_intent_unexpected_state")
            .with("payment_intent", pi.value()));
    };
    let pm: PmView = serde_json::from_str(&w.render(&pm_id).unwrap()).expect("a stored payment method is an object");
    let pm_type = pm.ty.clone().unwrap_or_else(|| "card".into());
    if !types.contains(&pm_type) && !pi.automatic_payment_methods["enabled"].as_bool().unwrap_or(false) {
        return Err(invalid(format!("The PaymentMethod provided ({pm_type}) is not allowed for this PaymentIntent. Please attach a PaymentMethod of one of the following types: {}. Alternatively, update the allowed payment_method_types for this PaymentIntent to include \"{pm_type}\".", types.join(", "))).param("payment_method"));
    }
    if let (Some(pc), Some(ic)) = (pm.customer.as_str(), pi.customer.as_str()) {
        if pc != ic {
            return Err(invalid(format!("The provided PaymentMethod belongs to a different Customer ({pc}) than this PaymentIntent ({ic}).")).param("payment_method"));
        }
    }
    let off_session = p.bool("off_session")?.unwrap_or(false);
    let return_url = p.str("return_url").map(str::to_string);
    // Methods resolved above may have been stored since `pi` was read, but `pi` itself has not.
    let pmo = p.get("payment_method_options");
    let after = if pi.payment_method.as_str() == Some(pm_id.as_str()) && pi.last_payment_error.is_null() && pmo.is_none() {
        before
    } else {
        pi.payment_method = Value::String(pm_id.clone());
        pi.last_payment_error = Value::Null;
        if let Some(md) = pmo {
            pi.payment_method_options = md.clone();
        }
        let after = pi.cut();
        w.update_cut(call, "payment_intent", id, &before, &after);
        after
    };
    if pm_type == "crypto" {
        let pi = w.modify(call, id, |pi| {
            pi["status"] = json!("requires_action");
            pi["next_action"] = crypto_next_action(pi["id"].as_str().unwrap_or(""), pi["amount"].as_i64().unwrap_or(0));
        });
        emit(w, call, "payment_intent.requires_action", &pi, None);
        return Ok(pi.to_string());
    }
    let (last4, brand) = pm.card.as_ref().map_or(("", ""), |c| (c.last4.as_str().unwrap_or(""), c.brand.as_str().unwrap_or("")));
    // The customer completed 3-D Secure for this method on the test page: this confirmation
    // (theirs, or the server's for manual confirmation) charges it without asking again.
    let authenticated = w.0.authenticated.remove(&crate::three_ds::authenticated_key(id, &pm_id));
    match behaviour(last4, brand) {
        // Confirming again while the customer has not authenticated (from the server, in
        // `requires_action`) starts a new attempt that waits for them too: 3-D Secure happens
        // on its page (`next_action`), never by confirming twice.
        Behaviour::ThreeDS if !authenticated && !(off_session && last4 == "3155" && set_up(w, &pm_id)) => {
            // Billing's own attempt on an invoice waits for the customer to authenticate
            // (Stripe's `requires_action` outcome); any other payment off session is declined.
            let invoice = pi.invoice.as_str().map(str::to_string);
            if off_session && invoice.is_none() {
                let pm = w.get(&pm_id).unwrap();
                return fail_payment(w, call, id, &pm, "authentication_required", "authentication_required", "Your card was declined. This transaction requires authentication.").map(|v| v.to_string());
            }
            let source = w.new_id("payatt");
            let secret = pi.client_secret.as_str().unwrap_or("").to_string();
            let next_action = crate::three_ds::next_action(&call.req, &w.account_id, "payment_intent", id, &secret, &source, return_url.as_deref());
            let pi = w.modify(call, id, |pi| {
                pi["status"] = json!("requires_action");
                pi["next_action"] = next_action;
            });
            emit(w, call, "payment_intent.requires_action", &pi, None);
            if let Some(inv) = invoice {
                crate::billing::invoice_payment_action_required(w, call, &inv);
            }
            Ok(pi.to_string())
        }
        Behaviour::Decline(code, decline) => {
            let pm = w.get(&pm_id).unwrap();
            fail_payment(w, call, id, &pm, code, decline, decline_message(code, decline)).map(|v| v.to_string())
        }
        b => {
            let mut details = match &pm.card {
                Some(c) => serde_json::to_string(&c.details()).expect("card details serialise"),
                None => json!({"type": "card", "card": card_details(&Value::Null)}).to_string(),
            };
            if authenticated {
                let mut d: Value = parse(&details);
                d["card"]["three_d_secure"] = crate::three_ds::authenticated_details();
                details = d.to_string();
            }
            succeed_with(w, call, id, pi, after, &details, b)
        }
    }
}

pub(super) fn card_details(pm: &Value) -> Value {
    let c = &pm["card"];
    json!({
        "amount_authorized": null, "brand": c["brand"], "checks": c["checks"], "country": c["country"],
        "exp_month": c["exp_month"], "exp_year": c["exp_year"], "fingerprint": c["fingerprint"],
        "funding": c["funding"], "last4": c["last4"], "network": c["brand"], "three_d_secure": null, "wallet": null,
    })
}

pub fn crypto_next_action(pi_id: &str, amount: i64) -> Value {
    let addr = deposit_address(pi_id);
    json!({
        "type": "crypto_display_details",
        "crypto_display_details": {
            "deposit_addresses": {
                "base": {"address": addr, "supported_tokens": [{"token_currency": "usdc", "token_contract_address": "0x036CbD53842c5426634e7929540c2f12f4BBAaD6"}]},
            },
            "amount": amount,
        }
    })
}

/// A deterministic 0x address for a PaymentIntent's crypto deposits.
pub fn deposit_address(pi_id: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut out = String::from("0x");
    for round in 0..3u64 {
        for b in pi_id.bytes() {
            h ^= b as u64 ^ round;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        out.push_str(&format!("{h:016x}"));
    }
    out.truncate(42);
    out
}

/// A charge for a PaymentIntent's attempt.
pub(super) fn charge_obj(w: &mut World, pi: &Value, details: Value, status: &str, captured: bool) -> Value {
    let id = w.new_id("ch");
    let details = details.to_string();
    let from = ChargeFrom {
        amount: pi["amount"].as_i64().unwrap_or(0),
        currency: &pi["currency"],
        customer: &pi["customer"],
        description: &pi["description"],
        metadata: &pi["metadata"],
        receipt_email: &pi["receipt_email"],
        shipping: &pi["shipping"],
        payment_intent: &pi["id"],
        payment_method: &pi["payment_method"],
    };
    serde_json::to_value(Charge::new(id, &from, &details, status, captured, w.now())).expect("a charge serialises")
}

pub fn fee_for(amount: i64) -> i64 {
    (amount * 29 + 500) / 1000 + 30
}

/// A balance transaction for money moving (charges positive, refunds negative).
pub fn balance_txn(w: &mut World, call: &mut Call, amount: i64, fee: i64, cur: &str, source: &str, ty: &str, description: Option<&str>) -> String {
    let id = w.new_id("txn");
    let now = w.now();
    let fee_details = if fee != 0 {
        vec![FeeDetail { amount: fee, application: Value::Null, currency: cur, description: "Stripe processing fees", ty: "stripe_fee" }]
    } else {
        Vec::new()
    };
    let t = BalanceTransaction {
        id: &id,
        object: "balance_transaction",
        amount,
        available_on: now,
        created: now,
        currency: cur,
        description,
        exchange_rate: Value::Null,
        fee,
        fee_details,
        net: amount - fee,
        reporting_category: match ty {
            "payment" | "charge" => "charge",
            "payout" => "payout",
            "refund" => "refund",
            "adjustment" => "dispute",
            other => other,
        },
        source,
        status: "available",
        ty,
    };
    w.insert_cut(Some(call), "balance_transaction", &id, &Cut::of(&t));
    id
}

pub(super) fn succeed(w: &mut World, call: &mut Call, id: &str, details: Value, b: Behaviour) -> Res {
    let pi = PaymentIntent::parse(&w.render(id).unwrap());
    let c = pi.cut();
    succeed_with(w, call, id, pi, c, &details.to_string(), b).map(|t| parse(&t))
}

/// [`succeed`] for the PaymentIntent `pi` (stored now as `text`), with the charge's
/// `payment_method_details` as compact JSON; the PaymentIntent's new text.
pub(super) fn succeed_with(w: &mut World, call: &mut Call, id: &str, mut pi: PaymentIntent, before: Cut, details: &str, b: Behaviour) -> Result<String, StripeError> {
    let manual = pi.capture_method == "manual";
    let amount = pi.amount;
    let cur = pi.currency.clone();
    let ch_id = w.new_id("ch");
    let mut txn = None;
    if !manual {
        txn = Some(balance_txn(w, call, amount, fee_for(amount), &cur, &ch_id, "charge", pi.description.as_str()));
    }
    {
        let currency = Value::String(cur.clone());
        let pi_id = Value::String(pi.id.clone());
        let from = ChargeFrom {
            amount,
            currency: &currency,
            customer: &pi.customer,
            description: &pi.description,
            metadata: &pi.metadata,
            receipt_email: &pi.receipt_email,
            shipping: &pi.shipping,
            payment_intent: &pi_id,
            payment_method: &pi.payment_method,
        };
        let mut ch = Charge::new(ch_id.clone(), &from, details, "succeeded", !manual, w.now());
        ch.balance_transaction = txn;
        w.insert_cut(Some(call), "charge", &ch_id, &Cut::of(&ch));
    }
    pi.latest_charge = Value::String(ch_id.clone());
    pi.next_action = Value::Null;
    if manual {
        pi.status = "requires_capture".into();
        pi.amount_capturable = amount;
    } else {
        pi.status = "succeeded".into();
        pi.amount_received = amount;
    }
    let after = pi.cut();
    w.update_cut(call, "payment_intent", id, &before, &after);
    emit_current(w, call, "charge.succeeded", &ch_id, None);
    if manual {
        emit_current(w, call, "payment_intent.amount_capturable_updated", id, None);
    } else {
        emit_current(w, call, "payment_intent.succeeded", id, None);
    }
    // A payment set up for future usage saves its payment method to the customer.
    if let (Some(cus), Some(pm)) = (pi.customer.as_str(), pi.payment_method.as_str()) {
        if ["off_session", "on_session"].contains(&pi.setup_future_usage.as_str().unwrap_or("")) && w.get(pm).is_some_and(|o| o["customer"].is_null()) {
            let pm_obj = w.modify(call, pm, |o| o["customer"] = json!(cus));
            emit(w, call, "payment_method.attached", &pm_obj, None);
        }
    }
    // What the test card does after it is charged: a dispute, a review, a fraud warning.
    match b {
        Behaviour::Dispute if !manual => open_dispute(w, call, &ch_id),
        Behaviour::Review => open_review(w, call, &ch_id),
        Behaviour::FraudWarning if !manual => early_fraud_warning(w, call, &ch_id),
        _ => {}
    }
    if !manual && !(pi.transfer_data.is_null() && pi.application_fee_amount.is_null() && pi.on_behalf_of.is_null()) {
        let d = Destination { transfer_data: pi.transfer_data.clone(), application_fee_amount: pi.application_fee_amount.clone(), on_behalf_of: pi.on_behalf_of.clone() };
        settle_destination_charge(w, call, &ch_id, &d, &pi.transfer_group);
    }
    if let (false, Some(inv)) = (manual, pi.invoice.as_str()) {
        crate::billing::invoice_payment_succeeded(w, call, inv, &ch_id, pi.payment_method.as_str());
        // The invoice's own changes do not touch the PaymentIntent: its text stands.
    }
    // A review names itself on the PaymentIntent.
    if b == Behaviour::Review {
        return Ok(w.render(id).unwrap_or(after.text));
    }
    Ok(after.text)
}

pub(super) fn fail_payment(w: &mut World, call: &mut Call, id: &str, pm: &Value, code: &str, decline: &str, message: &str) -> Res {
    let pi = w.get(id).unwrap();
    let details = json!({"type": "card", "card": card_details(pm)});
    let mut ch = charge_obj(w, &pi, details, "failed", false);
    ch["failure_code"] = json!(code);
    ch["failure_message"] = json!(message);
    ch["outcome"] = json!({"network_status": "declined_by_network", "reason": decline, "risk_level": "normal", "risk_score": 20, "seller_message": "The bank did not return any further details with this decline.", "type": "issuer_declined"});
    let ch = w.insert(Some(call), ch);
    let ch_id = ch["id"].as_str().unwrap().to_string();
    let err = json!({
        "charge": ch_id, "code": code, "decline_code": decline,
        "doc_url": format!("https://stripe.com/docs/error-codes/{}", code.replace('_', "-")),
        "message": message, "payment_method": pm, "type": "card_error",
    });
    let pi = w.modify(call, id, |pi| {
        pi["status"] = json!("requires_payment_method");
        pi["last_payment_error"] = err;
        pi["latest_charge"] = json!(ch_id);
        pi["payment_method"] = Value::Null;
        pi["next_action"] = Value::Null;
    });
    emit(w, call, "charge.failed", &ch, None);
    emit(w, call, "payment_intent.payment_failed", &pi, None);
    if let Some(inv) = pi["invoice"].as_str() {
        crate::billing::invoice_payment_failed(w, call, inv);
    }
    let mut e = StripeError::new(402, "card_error", message).code(code).with("charge", json!(ch_id)).with("payment_intent", pi).with("payment_method", pm.clone());
    e.decline_code = Some(decline.to_string());
    Err(e)
}

pub(super) fn open_dispute(w: &mut World, call: &mut Call, ch_id: &str) {
    let ch = w.get(ch_id).unwrap();
    let amount = ch["amount"].as_i64().unwrap_or(0);
    let cur = ch["currency"].as_str().unwrap_or("usd").to_string();
    let id = w.new_id("dp");
    let txn = balance_txn(w, call, -amount, 1500, &cur, &id, "adjustment", Some(&format!("Chargeback withdrawal for {ch_id}")));
    let txn_obj = w.get(&txn).unwrap();
    let now = w.now();
    let dp = json!({
        "id": id, "object": "dispute", "amount": amount, "balance_transactions": [txn_obj], "charge": ch_id,
        "created": now, "currency": cur,
        "evidence": {"access_activity_log": null, "billing_address": null, "cancellation_policy": null, "cancellation_policy_disclosure": null, "cancellation_rebuttal": null, "customer_communication": null, "customer_email_address": null, "customer_name": null, "customer_purchase_ip": null, "customer_signature": null, "duplicate_charge_documentation": null, "duplicate_charge_explanation": null, "duplicate_charge_id": null, "product_description": null, "receipt": null, "refund_policy": null, "refund_policy_disclosure": null, "refund_refusal_explanation": null, "service_date": null, "service_documentation": null, "shipping_address": null, "shipping_carrier": null, "shipping_date": null, "shipping_documentation": null, "shipping_tracking_number": null, "uncategorized_file": null, "uncategorized_text": null},
        "evidence_details": {"due_by": now + 7 * 86400, "has_evidence": false, "past_due": false, "submission_count": 0},
        "is_charge_refundable": false, "livemode": false, "metadata": {}, "payment_intent": ch["payment_intent"],
        "reason": "fraudulent", "status": "needs_response",
    });
    let dp = w.insert(Some(call), dp);
    let ch = w.modify(call, ch_id, |c| c["disputed"] = json!(true));
    emit(w, call, "charge.dispute.created", &dp, None);
    let _ = ch;
}

pub(super) fn pi_capture(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let pi = get_or_404(w, "payment_intent", &id, "payment_intent")?;
    capture_pi(w, call, &id, pi, p.int("amount_to_capture")?, p)
}

pub(super) fn capture_pi(w: &mut World, call: &mut Call, id: &str, pi: Value, amount: Option<i64>, p: &Params) -> Res {
    if pi["status"] != "requires_capture" {
        return Err(unexpected_state(&pi, "capture"));
    }
    let capturable = pi["amount_capturable"].as_i64().unwrap_or(0);
    let amount = amount.unwrap_or(capturable);
    if amount > capturable {
        return Err(invalid(format!("The amount to capture ({amount}) is greater than the amount capturable ({capturable}).")).code("amount_too_large").param("amount_to_capture"));
    }
    if amount < 1 {
        return Err(invalid("This value must be greater than or equal to 1.").param("amount_to_capture"));
    }
    let ch_id = pi["latest_charge"].as_str().unwrap_or_default().to_string();
    let cur = pi["currency"].as_str().unwrap_or("usd").to_string();
    let txn = balance_txn(w, call, amount, fee_for(amount), &cur, &ch_id, "charge", pi["description"].as_str());
    let released = capturable - amount;
    let ch = w.modify(call, &ch_id, |c| {
        c["captured"] = json!(true);
        c["amount_captured"] = json!(amount);
        c["balance_transaction"] = json!(txn);
        if released > 0 {
            c["amount_refunded"] = json!(released);
        }
    });
    let pi = w.modify(call, id, |pi| {
        pi["status"] = json!("succeeded");
        pi["amount_received"] = json!(amount);
        pi["amount_capturable"] = json!(0);
        p.copy(pi, &["statement_descriptor", "statement_descriptor_suffix"]);
        if let Some(md) = p.get("metadata").and_then(Value::as_object) {
            for (k, v) in md {
                pi["metadata"][k] = v.clone();
            }
        }
    });
    emit(w, call, "charge.captured", &ch, Some(json!({"amount_captured": 0, "captured": false})));
    emit(w, call, "payment_intent.succeeded", &pi, None);
    if !(pi["transfer_data"].is_null() && pi["application_fee_amount"].is_null() && pi["on_behalf_of"].is_null()) {
        let d = Destination { transfer_data: pi["transfer_data"].clone(), application_fee_amount: pi["application_fee_amount"].clone(), on_behalf_of: pi["on_behalf_of"].clone() };
        settle_destination_charge(w, call, &ch_id, &d, &pi["transfer_group"]);
    }
    // The test card's after-effects that wait for the money to move.
    match behaviour_of(&w.get(pi["payment_method"].as_str().unwrap_or_default()).unwrap_or_default()) {
        Behaviour::Dispute => open_dispute(w, call, &ch_id),
        Behaviour::FraudWarning => early_fraud_warning(w, call, &ch_id),
        _ => {}
    }
    if let Some(inv) = pi["invoice"].as_str() {
        crate::billing::invoice_payment_succeeded(w, call, inv, &ch_id, pi["payment_method"].as_str());
    }
    Ok(pi)
}

pub(super) fn pi_cancel(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let pi = get_or_404(w, "payment_intent", &id, "payment_intent")?;
    let status = pi["status"].as_str().unwrap_or("");
    if !["requires_payment_method", "requires_capture", "requires_confirmation", "requires_action", "processing"].contains(&status) {
        return Err(invalid(format!("You cannot cancel this PaymentIntent because it has a status of {status}. Only a PaymentIntent with one of the following statuses may be canceled: requires_payment_method, requires_capture, requires_confirmation, requires_action, processing.")).code("payment_intent_unexpected_state").with("payment_intent", pi));
    }
    if pi["invoice"].is_string() {
        return Err(invalid("You cannot cancel this PaymentIntent because it was created by an invoice. Void the invoice instead.").code("payment_intent_unexpected_state").with("payment_intent", pi));
    }
    let reason = p.str("cancellation_reason").map(str::to_string);
    if let Some(r) = &reason {
        if !["duplicate", "fraudulent", "requested_by_customer", "abandoned"].contains(&r.as_str()) {
            return Err(invalid("Invalid cancellation_reason: must be one of duplicate, fraudulent, requested_by_customer, or abandoned").param("cancellation_reason"));
        }
    }
    if status == "requires_capture" {
        // Releasing an authorization refunds the held amount on the charge.
        if let Some(ch) = pi["latest_charge"].as_str() {
            let amount = pi["amount_capturable"].as_i64().unwrap_or(0);
            w.modify(call, ch, |c| {
                c["amount_refunded"] = json!(amount);
                c["refunded"] = json!(true);
            });
        }
    }
    let now = w.now();
    let pi = w.modify(call, &id, |pi| {
        pi["status"] = json!("canceled");
        pi["canceled_at"] = json!(now);
        pi["cancellation_reason"] = reason.map(Value::String).unwrap_or(Value::Null);
        pi["amount_capturable"] = json!(0);
        pi["next_action"] = Value::Null;
    });
    emit(w, call, "payment_intent.canceled", &pi, None);
    Ok(pi)
}

pub(super) fn pi_increment(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let pi = get_or_404(w, "payment_intent", &id, "payment_intent")?;
    if pi["status"] != "requires_capture" {
        return Err(unexpected_state(&pi, "increment_authorization"));
    }
    let amount = p.req_int("amount")?;
    let old = pi["amount"].as_i64().unwrap_or(0);
    if amount < old {
        return Err(invalid("The amount must be greater than or equal to the current amount.").param("amount"));
    }
    let ch = pi["latest_charge"].as_str().unwrap_or_default().to_string();
    w.modify(call, &ch, |c| c["amount"] = json!(amount));
    let pi = w.modify(call, &id, |pi| {
        pi["amount"] = json!(amount);
        pi["amount_capturable"] = json!(amount);
    });
    emit(w, call, "payment_intent.amount_capturable_updated", &pi, None);
    Ok(pi)
}

/// Test helper: a crypto deposit arrives for a PaymentIntent waiting in deposit mode.
pub(super) fn pi_crypto_deposit(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let pi = get_or_404(w, "payment_intent", &id, "payment_intent")?;
    settle_crypto(w, call, &id, pi, p.str("transaction_hash"), p.str("buyer_address"), p.str("network").unwrap_or("base"), p.str("token_currency").unwrap_or("usdc"))
}

pub fn settle_crypto(w: &mut World, call: &mut Call, id: &str, pi: Value, tx: Option<&str>, buyer: Option<&str>, network: &str, token: &str) -> Res {
    if pi["status"] != "requires_action" || pi["next_action"]["type"] != "crypto_display_details" {
        return Err(invalid(format!(
            "This PaymentIntent is not awaiting a crypto deposit (status {}). Confirm it with a crypto payment method first.",
            pi["status"].as_str().unwrap_or("")
        ))
        .code("payment_intent_unexpected_state")
        .with("payment_intent", pi));
    }
    let details = json!({"type": "crypto", "crypto": {"buyer_address": buyer, "network": network, "token_currency": token, "transaction_hash": tx}});
    succeed(w, call, id, details, Behaviour::Succeed)
}
