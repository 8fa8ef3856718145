//! Refunds of charges and PaymentIntents.

use super::*;

pub(super) fn refund_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let ch_id = match (p.str("charge"), p.str("payment_intent")) {
        (Some(c), _) => {
            get_or_404(w, "charge", c, "charge").map_err(|e| e.param("charge"))?;
            c.to_string()
        }
        (None, Some(pi)) => {
            let pi_obj = get_or_404(w, "payment_intent", pi, "payment_intent").map_err(|e| e.param("payment_intent"))?;
            match pi_obj["latest_charge"].as_str() {
                Some(c) if pi_obj["status"] == "succeeded" => c.to_string(),
                _ => {
                    return Err(invalid(format!("This PaymentIntent ({pi}) does not have a successful charge to refund.")).code("charge_not_refundable").param("payment_intent"));
                }
            }
        }
        (None, None) => return Err(invalid("One of the following params should be provided for this request: payment_intent or charge.").code("parameter_missing")),
    };
    let ch = w.get(&ch_id).unwrap();
    if ch["status"] != "succeeded" || ch["captured"] != true {
        return Err(invalid(format!("Charge {ch_id} cannot be refunded because it has not been captured or has failed.")).code("charge_not_refundable").param("charge"));
    }
    if ch["disputed"] == true && w.all("dispute").any(|d| d["charge"] == ch_id.as_str() && d["is_charge_refundable"] == false) {
        return Err(invalid(format!("Charge {ch_id} has been charged back; cannot issue a refund.")).code("charge_disputed").param("charge"));
    }
    // A partial capture counts the amount it released as refunded: what is left to refund
    // is the charge's amount less everything refunded.
    let charged = ch["amount"].as_i64().unwrap_or(0);
    let refunded = ch["amount_refunded"].as_i64().unwrap_or(0);
    let remaining = charged - refunded;
    let cur = ch["currency"].as_str().unwrap_or("usd").to_string();
    if remaining <= 0 {
        return Err(invalid(format!("Charge {ch_id} has already been refunded.")).code("charge_already_refunded").param("charge"));
    }
    let amount = p.int("amount")?.unwrap_or(remaining);
    if amount < 1 {
        return Err(invalid("Invalid positive integer").param("amount"));
    }
    if amount > remaining {
        return Err(invalid(format!(
            "Refund amount ({}) is greater than unrefunded amount on charge ({})",
            display(amount, &cur),
            display(remaining, &cur)
        ))
        .code("amount_too_large")
        .param("amount"));
    }
    let reason = p.str("reason").map(str::to_string);
    if let Some(r) = &reason {
        if !["duplicate", "fraudulent", "requested_by_customer"].contains(&r.as_str()) {
            return Err(invalid("Invalid reason: must be one of duplicate, fraudulent, or requested_by_customer").param("reason"));
        }
    }
    let id = w.new_id("re");
    let txn = balance_txn(w, call, -amount, 0, &cur, &id, "refund", None);
    let status = if refund_starts_pending(&ch["payment_method_details"]) { "pending" } else { "succeeded" };
    let mut re = json!({
        "id": id, "object": "refund", "amount": amount, "balance_transaction": txn, "charge": ch_id,
        "created": w.now(), "currency": cur, "destination_details": null, "metadata": {},
        "payment_intent": ch["payment_intent"], "reason": reason, "receipt_number": null,
        "source_transfer_reversal": null, "status": status, "transfer_reversal": null,
    });
    p.metadata_into(&mut re)?;
    let re = w.insert(Some(call), re);
    let ch = w.modify(call, &ch_id, |c| {
        c["amount_refunded"] = json!(refunded + amount);
        c["refunded"] = json!(refunded + amount >= charged);
    });
    let ch = with_refunds(w, ch);
    emit(w, call, "charge.refunded", &ch, Some(json!({"amount_refunded": refunded, "refunded": false})));
    emit(w, call, "refund.created", &re, None);
    // A destination charge gives back its transfer and fee in proportion, when asked.
    let share = |whole: i64| if charged > 0 { (whole as i128 * amount as i128 / charged as i128) as i64 } else { 0 };
    let mut re = re;
    if p.bool("reverse_transfer")? == Some(true) {
        let tr = ch["transfer"].as_str().map(str::to_string).ok_or_else(|| invalid("This charge has no transfer to reverse: `reverse_transfer` applies to destination charges.").param("reverse_transfer"))?;
        let whole = w.get(&tr).map_or(0, |t| t["amount"].as_i64().unwrap_or(0));
        if let Some(trr) = reverse_transfer_for(w, call, &tr, share(whole), &id) {
            re = w.modify(call, &id, |r| r["transfer_reversal"] = json!(trr));
        }
    }
    if p.bool("refund_application_fee")? == Some(true) {
        if let Some(fee) = ch["application_fee"].as_str().map(str::to_string) {
            let whole = w.get(&fee).map_or(0, |f| f["amount"].as_i64().unwrap_or(0));
            let left = w.get(&fee).map_or(0, |f| whole - f["amount_refunded"].as_i64().unwrap_or(0));
            let part = share(whole).min(left);
            if part > 0 {
                refund_fee(w, call, &fee, Some(part), None)?;
            }
        }
    }
    // A charge refunded in full closes its review and settles its fraud warnings.
    if refunded + amount >= charged {
        close_review(w, call, &ch_id, if reason.as_deref() == Some("fraudulent") { "refunded_as_fraud" } else { "refunded" });
        warnings_settled(w, call, &ch_id);
    }
    Ok(re)
}

pub(super) fn refund_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    get_or_404(w, "refund", &id, "refund")
}

pub(super) fn refund_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let mut probe = get_or_404(w, "refund", &id, "refund")?;
    p.metadata_into(&mut probe)?;
    Ok(modify_emit(w, call, &id, "refund.updated", |r| r["metadata"] = probe["metadata"].clone()))
}

pub(super) fn refund_cancel(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    let re = get_or_404(w, "refund", &id, "refund")?;
    if re["status"] != "requires_action" && re["status"] != "pending" {
        return Err(invalid(format!("Can't cancel a refund that is in status {}.", re["status"].as_str().unwrap_or(""))).code("refund_cancel_unsupported"));
    }
    // The money comes back: a `refund_failure` balance transaction, and the charge counts it
    // unrefunded again.
    let amount = re["amount"].as_i64().unwrap_or(0);
    let cur = re["currency"].as_str().unwrap_or("usd").to_string();
    let back = balance_txn(w, call, amount, 0, &cur, &id, "refund_failure", None);
    if let Some(ch_id) = re["charge"].as_str().filter(|c| w.is_kind("charge", c)).map(str::to_string) {
        w.modify(call, &ch_id, |c| {
            let left = c["amount_refunded"].as_i64().unwrap_or(0) - amount;
            c["amount_refunded"] = json!(left.max(0));
            c["refunded"] = json!(false);
        });
    }
    Ok(modify_emit(w, call, &id, "refund.updated", |r| {
        r["status"] = json!("canceled");
        r["failure_reason"] = json!("merchant_request");
        r["failure_balance_transaction"] = json!(back);
    }))
}

pub(super) fn refund_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    list_of(w, call, "refund", p, |r| ["charge", "payment_intent"].iter().all(|f| field_is(r, f, p.str(f))))
}

/// `POST /v1/test_helpers/refunds/{id}/expire`: a refund waiting for the customer
/// (`requires_action`) expires. The twin's refunds never wait for a customer, so every refund
/// answers that it cannot.
pub(super) fn refund_expire(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    let re = get_or_404(w, "refund", &id, "refund")?;
    Err(invalid(format!("Only a refund with status requires_action can be expired; this refund is {}.", re["status"].as_str().unwrap_or(""))).code("refund_expire_unsupported"))
}
