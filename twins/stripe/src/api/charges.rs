//! Charges: the legacy Charges API, and charges as payments leave them.

use super::*;

pub(super) fn charge_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let amount = p.req_int("amount")?;
    let cur = currency(p)?;
    check_amount(amount, &cur)?;
    let source = p.str("source").map(str::to_string);
    let cus = p.str("customer").map(str::to_string);
    let pm_id = match (&source, &cus) {
        (Some(s), _) => resolve_pm(w, call, s, "source").map_err(|e| if e.code.as_deref() == Some("token_already_used") { e } else { no_such_ref("source", s, "source") })?,
        (None, Some(c)) => {
            get_or_404(w, "customer", c, "customer")?;
            let c = w.get(c).unwrap();
            let d = c["invoice_settings"]["default_payment_method"].as_str().or(c["default_source"].as_str());
            match d {
                Some(d) => d.to_string(),
                None => return Err(invalid("Cannot charge a customer that has no active card").code("missing").param("card")),
            }
        }
        _ => return Err(invalid("Must provide source or customer.").code("parameter_missing")),
    };
    let pm = w.get(&pm_id).unwrap();
    let capture = p.bool("capture")?.unwrap_or(true);
    // `destination` is the older spelling of `transfer_data[destination]`.
    let destination = match p.get("destination") {
        Some(d) => {
            let mut m = p.0.clone();
            let dest = d.as_str().or_else(|| d["account"].as_str()).unwrap_or_default().to_string();
            m.insert("transfer_data".into(), json!({"destination": dest, "amount": d["amount"]}));
            m.remove("destination");
            destination_params(w, &Params(m), amount)?
        }
        None => destination_params(w, p, amount)?,
    };
    let mut pseudo = pi_obj("", amount, &cur, w.now());
    pseudo["id"] = Value::Null;
    pseudo["payment_method"] = json!(pm_id);
    p.copy(&mut pseudo, &["customer", "description", "receipt_email", "shipping"]);
    p.metadata_into(&mut pseudo)?;
    let details = json!({"type": "card", "card": card_details(&pm)});
    // The Charges API cannot ask the customer to authenticate: a card that requires 3-D
    // Secure is declined, as Stripe declines it (unless a SetupIntent saved a card that asks
    // only until it is set up).
    let behaviour = match behaviour_of(&pm) {
        Behaviour::ThreeDS if !(pm["card"]["last4"] == "3155" && set_up(w, &pm_id)) => Behaviour::Decline("authentication_required", "authentication_required"),
        b => b,
    };
    match behaviour {
        Behaviour::Decline(code, decline) => {
            let mut ch = charge_obj(w, &pseudo, details, "failed", false);
            ch["failure_code"] = json!(code);
            ch["failure_message"] = json!(decline_message(code, decline));
            let ch = w.insert(Some(call), ch);
            emit(w, call, "charge.failed", &ch, None);
            let mut e = StripeError::new(402, "card_error", decline_message(code, decline)).code(code).with("charge", ch["id"].clone());
            e.decline_code = Some(decline.to_string());
            Err(e)
        }
        b => {
            let mut ch = charge_obj(w, &pseudo, details, "succeeded", capture);
            let ch_id = ch["id"].as_str().unwrap().to_string();
            if capture {
                let txn = balance_txn(w, call, amount, fee_for(amount), &cur, &ch_id, "charge", None);
                ch["balance_transaction"] = json!(txn);
            }
            let ch = w.insert(Some(call), ch);
            emit(w, call, "charge.succeeded", &ch, None);
            match b {
                Behaviour::Dispute if capture => open_dispute(w, call, &ch_id),
                Behaviour::Review => open_review(w, call, &ch_id),
                Behaviour::FraudWarning if capture => early_fraud_warning(w, call, &ch_id),
                _ => {}
            }
            if let Some(d) = &destination {
                if capture {
                    settle_destination_charge(w, call, &ch_id, d, &p.get("transfer_group").cloned().unwrap_or(Value::Null));
                }
            }
            Ok(w.get(&ch_id).unwrap())
        }
    }
}

pub(super) fn charge_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    get_or_404(w, "charge", &id, "charge").map(|c| with_refunds(w, c))
}

/// A charge as rendered: its `refunds` list filled from the refunds made on it.
pub fn with_refunds(w: &World, mut c: Value) -> Value {
    let id = c["id"].as_str().unwrap_or_default().to_string();
    let refunds: Vec<Value> = w.all("refund").filter(|r| r["charge"] == id.as_str()).collect();
    c["refunds"] = json!({"object": "list", "data": refunds, "has_more": false, "total_count": refunds.len(), "url": format!("/v1/charges/{id}/refunds")});
    c
}

pub(super) fn charge_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let mut probe = get_or_404(w, "charge", &id, "charge")?;
    p.metadata_into(&mut probe)?;
    let c = modify_emit(w, call, &id, "charge.updated", |c| {
        p.copy(c, &["description", "receipt_email", "shipping", "fraud_details", "transfer_group"]);
        c["metadata"] = probe["metadata"].clone();
    });
    Ok(with_refunds(w, c))
}

pub(super) fn charge_capture(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let ch = get_or_404(w, "charge", &id, "charge")?;
    if ch["captured"] == true || ch["status"] != "succeeded" {
        return Err(invalid(format!("Charge {id} has already been captured.")).code("charge_already_captured").param("charge"));
    }
    let amount = p.int("amount")?;
    if let Some(pi_id) = ch["payment_intent"].as_str().map(str::to_string) {
        let pi = w.get(&pi_id).unwrap_or(Value::Null);
        capture_pi(w, call, &pi_id, pi, amount, p)?;
    } else {
        let total = ch["amount"].as_i64().unwrap_or(0);
        let amount = amount.unwrap_or(total);
        if amount > total {
            return Err(invalid(format!("Amount to capture ({amount}) is greater than the charge amount ({total}).")).code("amount_too_large").param("amount"));
        }
        let cur = ch["currency"].as_str().unwrap_or("usd").to_string();
        let txn = balance_txn(w, call, amount, fee_for(amount), &cur, &id, "charge", None);
        let c = w.modify(call, &id, |c| {
            c["captured"] = json!(true);
            c["amount_captured"] = json!(amount);
            c["amount_refunded"] = json!(total - amount);
            c["balance_transaction"] = json!(txn);
        });
        emit(w, call, "charge.captured", &c, Some(json!({"captured": false, "amount_captured": 0})));
    }
    Ok(with_refunds(w, w.get(&id).unwrap()))
}

pub(super) fn charge_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let mut out = list_of(w, call, "charge", p, |c| ["customer", "payment_intent", "transfer_group"].iter().all(|f| field_is(c, f, p.str(f))))?;
    if let Some(items) = out["data"].as_array_mut() {
        for c in items.iter_mut() {
            *c = with_refunds(w, std::mem::take(c));
        }
    }
    Ok(out)
}

pub(super) fn charge_search(w: &mut World, call: &mut Call, p: &Params) -> Res {
    search_of(w, call, "charge", p)
}

// ---------------------------------------------------------------------------------------
// A charge's refunds and dispute, at the charge's own paths.

/// Run `handler` with the path's charge as parameter `key` (`charge=ch_…`), as the top-level
/// route would be run with it in the body.
fn with_charge(w: &mut World, call: &mut Call, p: &Params, key: &str, handler: crate::core::Handler) -> Res {
    let ch = call.param("id").to_string();
    get_or_404(w, "charge", &ch, "charge")?;
    let mut m = p.0.clone();
    m.insert(key.into(), json!(ch));
    handler(w, call, &Params(m))
}

pub(super) fn charge_refund_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    with_charge(w, call, p, "charge", refund_create)
}

/// `POST /v1/charges/{id}/refund` (the older form): the charge, with its refunds.
pub(super) fn charge_refund_legacy(w: &mut World, call: &mut Call, p: &Params) -> Res {
    with_charge(w, call, p, "charge", refund_create)?;
    let ch = call.param("id").to_string();
    Ok(with_refunds(w, w.get(&ch).unwrap_or_default()))
}

pub(super) fn charge_refund_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let ch = call.param("id").to_string();
    get_or_404(w, "charge", &ch, "charge")?;
    list_of(w, call, "refund", p, |r| r["charge"] == ch.as_str())
}

/// The refund the path names, of the charge it names.
fn path_refund(w: &World, call: &Call) -> Result<String, StripeError> {
    let ch = call.param("id");
    get_or_404(w, "charge", ch, "charge")?;
    let re = call.param("refund");
    w.get_kind("refund", re).filter(|r| r["charge"] == ch).map(|_| re.to_string()).ok_or_else(|| no_such("refund", re, "refund"))
}

pub(super) fn charge_refund_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let re = path_refund(w, call)?;
    get_or_404(w, "refund", &re, "refund")
}

pub(super) fn charge_refund_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let re = path_refund(w, call)?;
    let saved = std::mem::replace(&mut call.params, vec![("id".into(), re)]);
    let out = refund_update(w, call, p);
    call.params = saved;
    out
}

/// The dispute of the path's charge.
fn charge_dispute_id(w: &World, call: &Call) -> Result<String, StripeError> {
    let ch = call.param("id");
    get_or_404(w, "charge", ch, "charge")?;
    w.all("dispute").find(|d| d["charge"] == ch).and_then(|d| d["id"].as_str().map(str::to_string)).ok_or_else(|| {
        StripeError::new(404, "invalid_request_error", format!("There is no dispute for this charge ({ch}).")).code("resource_missing").param("charge")
    })
}

/// Run a dispute handler on the path's charge's dispute.
fn on_dispute(w: &mut World, call: &mut Call, p: &Params, handler: crate::core::Handler) -> Res {
    let dp = charge_dispute_id(w, call)?;
    let saved = std::mem::replace(&mut call.params, vec![("id".into(), dp)]);
    let out = handler(w, call, p);
    call.params = saved;
    out
}

pub(super) fn charge_dispute_retrieve(w: &mut World, call: &mut Call, p: &Params) -> Res {
    on_dispute(w, call, p, dispute_retrieve)
}

pub(super) fn charge_dispute_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    on_dispute(w, call, p, dispute_update)
}

pub(super) fn charge_dispute_close(w: &mut World, call: &mut Call, p: &Params) -> Res {
    on_dispute(w, call, p, dispute_close)
}
