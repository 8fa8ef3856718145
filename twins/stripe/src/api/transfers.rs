//! Transfers to connected accounts, and their reversals. A transfer takes the amount from the
//! platform's available balance (a `transfer` balance transaction); a reversal gives it back
//! (`transfer_refund`).

use super::*;

pub(super) fn transfer_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let amount = p.req_int("amount")?;
    let cur = currency(p)?;
    if amount < 1 {
        return Err(invalid("Invalid positive integer").param("amount"));
    }
    let dest = p.req_str("destination")?.to_string();
    let acct = w.get_kind("account", &dest).ok_or_else(|| invalid(format!("No such destination: '{dest}'")).code("resource_missing").param("destination"))?;
    transfers_allowed(&acct, "destination")?;
    // Funds tied to a charge (`source_transaction`) move with it; others come from what is
    // available now.
    let source = match p.str("source_transaction") {
        Some(ch) => {
            let c = w.get_kind("charge", ch).ok_or_else(|| no_such_ref("charge", ch, "source_transaction"))?;
            if c["currency"] != cur.as_str() {
                return Err(invalid(format!("The currency of source_transaction's balance transaction ({}) must be the same as the transfer currency ({cur}).", c["currency"].as_str().unwrap_or(""))).param("currency"));
            }
            if amount > c["amount"].as_i64().unwrap_or(0) - c["amount_refunded"].as_i64().unwrap_or(0) {
                return Err(invalid("Transfer amount exceeds the available amount of the source transaction.").code("amount_too_large").param("amount"));
            }
            Some(ch.to_string())
        }
        None => {
            let avail = balance_of(w).get(&cur).map_or(0, |b| b.0);
            if amount > avail {
                return Err(insufficient_funds());
            }
            None
        }
    };
    let id = w.new_id("tr");
    let txn = balance_txn(w, call, -amount, 0, &cur, &id, "transfer", p.str("description"));
    let payment = w.new_id("py");
    let mut o = json!({
        "id": id, "object": "transfer", "amount": amount, "amount_reversed": 0, "balance_transaction": txn,
        "created": w.now(), "currency": cur, "description": p.str("description"), "destination": dest,
        "destination_payment": payment, "livemode": false, "metadata": {},
        "reversals": embedded_list(&format!("/v1/transfers/{id}/reversals"), Vec::new()), "reversed": false,
        "source_transaction": source, "source_type": p.str("source_type").unwrap_or("card"), "transfer_group": p.str("transfer_group"),
    });
    p.metadata_into(&mut o)?;
    let o = w.insert(Some(call), o);
    emit(w, call, "transfer.created", &o, None);
    Ok(o)
}

/// Stripe's refusal of a transfer the available balance cannot cover.
pub(super) fn insufficient_funds() -> StripeError {
    invalid("You have insufficient available funds in your Stripe account. Try adding funds directly to your available balance by creating Charges using the 4000000000000077 test card. See: https://stripe.com/docs/testing#available-balance").code("balance_insufficient")
}

/// A connected account may receive transfers once its `transfers` capability is active.
pub(super) fn transfers_allowed(acct: &Value, param: &str) -> Result<(), StripeError> {
    if acct["capabilities"]["transfers"] != "active" && acct["capabilities"]["legacy_payments"] != "active" {
        return Err(invalid("Your destination account needs to have at least one of the following capabilities enabled: transfers, crypto_transfers, legacy_payments")
            .code("insufficient_capabilities_for_transfer")
            .param(param));
    }
    Ok(())
}

/// A transfer's `reversals` as it embeds them: the first page of its reversals, newest first.
fn reversals_of(w: &World, id: &str) -> Value {
    let reversals: Vec<Value> = w.all("transfer_reversal").filter(|r| r["transfer"] == id).collect();
    embedded_list(&format!("/v1/transfers/{id}/reversals"), reversals)
}

pub(super) fn transfer_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    get_or_404(w, "transfer", call.param("id"), "transfer")
}

pub(super) fn transfer_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let mut o = get_or_404(w, "transfer", &id, "transfer")?;
    p.copy(&mut o, &["description"]);
    p.metadata_into(&mut o)?;
    Ok(replace_emit(w, call, &id, "transfer.updated", o))
}

pub(super) fn transfer_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    list_of(w, call, "transfer", p, |t| field_is(t, "destination", p.str("destination")) && field_is(t, "transfer_group", p.str("transfer_group")))
}

pub(super) fn reversal_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let tid = call.param("id").to_string();
    let t = get_or_404(w, "transfer", &tid, "transfer")?;
    let total = t["amount"].as_i64().unwrap_or(0);
    let reversed = t["amount_reversed"].as_i64().unwrap_or(0);
    let left = total - reversed;
    if left <= 0 {
        return Err(invalid(format!("Transfer {tid} has already been fully reversed.")).code("transfer_already_reversed"));
    }
    let amount = p.int("amount")?.unwrap_or(left);
    if amount < 1 {
        return Err(invalid("Invalid positive integer").param("amount"));
    }
    if amount > left {
        let cur = t["currency"].as_str().unwrap_or("usd");
        return Err(invalid(format!("The reversal amount ({}) is greater than the amount left to reverse on transfer {tid} ({}).", display(amount, cur), display(left, cur))).code("amount_too_large").param("amount"));
    }
    let cur = t["currency"].as_str().unwrap_or("usd").to_string();
    let id = w.new_id("trr");
    let txn = balance_txn(w, call, amount, 0, &cur, &id, "transfer_refund", p.str("description"));
    let mut r = json!({
        "id": id, "object": "transfer_reversal", "amount": amount, "balance_transaction": txn, "created": w.now(),
        "currency": cur, "destination_payment_refund": w.new_id("pyr"), "metadata": {}, "source_refund": null, "transfer": tid,
    });
    p.metadata_into(&mut r)?;
    let r = w.insert(Some(call), r);
    let reversals = reversals_of(w, &tid);
    let after = w.modify(call, &tid, |t| {
        t["amount_reversed"] = json!(reversed + amount);
        t["reversed"] = json!(reversed + amount >= total);
        t["reversals"] = reversals;
    });
    emit(w, call, "transfer.reversed", &after, Some(json!({"amount_reversed": reversed, "reversed": false})));
    Ok(r)
}

/// The reversal the path names, of the transfer it names.
fn path_reversal(w: &World, call: &Call) -> Result<Value, StripeError> {
    let tid = call.param("id");
    get_or_404(w, "transfer", tid, "transfer")?;
    let rid = call.param("reversal");
    w.get_kind("transfer_reversal", rid).filter(|r| r["transfer"] == tid).ok_or_else(|| no_such("transfer_reversal", rid, "id"))
}

pub(super) fn reversal_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    path_reversal(w, call)
}

pub(super) fn reversal_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let mut r = path_reversal(w, call)?;
    let id = r["id"].as_str().unwrap_or_default().to_string();
    p.metadata_into(&mut r)?;
    let r = w.modify(call, &id, |x| *x = r);
    // The transfer embeds its reversals as they are.
    let tid = call.param("id").to_string();
    let reversals = reversals_of(w, &tid);
    w.modify(call, &tid, |t| t["reversals"] = reversals);
    Ok(r)
}

pub(super) fn reversal_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let tid = call.param("id").to_string();
    get_or_404(w, "transfer", &tid, "transfer")?;
    list_of(w, call, "transfer_reversal", p, |r| r["transfer"] == tid.as_str())
}

// ---------------------------------------------------------------------------------------
// Destination charges.

/// What a payment's Connect parameters ask for: the charge goes to a connected account.
pub(crate) struct Destination {
    /// `transfer_data` as the PaymentIntent and charge keep it (`{amount, destination}`).
    pub transfer_data: Value,
    pub application_fee_amount: Value,
    pub on_behalf_of: Value,
}

/// Check a payment's `transfer_data`, `application_fee_amount` and `on_behalf_of` against
/// `amount`: the destination exists and may receive transfers, and a fee needs one. `None`
/// when the payment names none of them.
pub(crate) fn destination_params(w: &World, p: &Params, amount: i64) -> Result<Option<Destination>, StripeError> {
    let (td, fee, obo) = (p.get("transfer_data"), p.int("application_fee_amount")?, p.str("on_behalf_of"));
    if td.is_none() && fee.is_none() && obo.is_none() {
        return Ok(None);
    }
    let mut transfer_data = Value::Null;
    if let Some(td) = td {
        let dest = td["destination"].as_str().ok_or_else(|| missing("transfer_data[destination]"))?;
        let acct = w.get_kind("account", dest).ok_or_else(|| invalid(format!("No such destination: '{dest}'")).code("resource_missing").param("transfer_data[destination]"))?;
        transfers_allowed(&acct, "transfer_data[destination]")?;
        let part = int_at(&td["amount"], "transfer_data[amount]")?;
        if let Some(a) = part {
            if a < 1 || a > amount {
                return Err(invalid("The transfer amount must be a positive integer no greater than the payment's amount.").param("transfer_data[amount]"));
            }
            if fee.is_some() {
                return Err(invalid("You may only specify one of these parameters: application_fee_amount, transfer_data[amount].").code("parameters_exclusive").param("application_fee_amount"));
            }
        }
        // `amount` is there only when a part of the payment is transferred.
        transfer_data = match part {
            Some(a) => json!({"amount": a, "destination": dest}),
            None => json!({"destination": dest}),
        };
    }
    if let Some(o) = obo {
        w.get_kind("account", o).ok_or_else(|| no_such_ref("account", o, "on_behalf_of"))?;
    }
    if let Some(f) = fee {
        if transfer_data.is_null() {
            return Err(invalid("Can only apply an application_fee_amount when the PaymentIntent is attempting a direct payment (using an OAuth key or Stripe-Account header) or destination payment (using `transfer_data[destination]`).").param("application_fee_amount"));
        }
        if f < 0 || f > amount {
            return Err(invalid("The application fee amount must be between 0 and the payment's amount.").param("application_fee_amount"));
        }
    }
    Ok(Some(Destination { transfer_data, application_fee_amount: fee.map_or(Value::Null, |f| json!(f)), on_behalf_of: obo.map_or(Value::Null, |o| json!(o)) }))
}

/// Destination charge `ch_id` (`amount` captured, of a payment that named `transfer_data`)
/// settles: the destination receives a transfer of the amount (or `transfer_data[amount]`)
/// from the charge, and the platform collects its application fee from the destination.
pub(crate) fn settle_destination_charge(w: &mut World, call: &mut Call, ch_id: &str, d: &Destination, transfer_group: &Value) {
    let Some(ch) = w.get(ch_id) else { return };
    let cur = ch["currency"].as_str().unwrap_or("usd").to_string();
    let captured = ch["amount_captured"].as_i64().unwrap_or(0);
    let mut transfer = Value::Null;
    let mut fee_id = Value::Null;
    if let Some(dest) = d.transfer_data["destination"].as_str() {
        let amount = d.transfer_data["amount"].as_i64().unwrap_or(captured).min(captured);
        let id = w.new_id("tr");
        let txn = balance_txn(w, call, -amount, 0, &cur, &id, "transfer", None);
        let payment = w.new_id("py");
        let t = json!({
            "id": id, "object": "transfer", "amount": amount, "amount_reversed": 0, "balance_transaction": txn,
            "created": w.now(), "currency": cur, "description": null, "destination": dest, "destination_payment": payment,
            "livemode": false, "metadata": {}, "reversals": embedded_list(&format!("/v1/transfers/{id}/reversals"), Vec::new()),
            "reversed": false, "source_transaction": ch_id, "source_type": "card", "transfer_group": transfer_group,
        });
        let t = w.insert(Some(call), t);
        emit(w, call, "transfer.created", &t, None);
        transfer = json!(id);
        if let Some(f) = d.application_fee_amount.as_i64().filter(|f| *f > 0) {
            fee_id = json!(collect_fee(w, call, ch_id, dest, f, &cur));
        }
    }
    let (td, fee_amount, obo) = (d.transfer_data.clone(), d.application_fee_amount.clone(), d.on_behalf_of.clone());
    let group = transfer_group.clone();
    w.modify(call, ch_id, |c| {
        c["transfer_data"] = td;
        c["application_fee_amount"] = fee_amount;
        c["application_fee"] = fee_id;
        c["on_behalf_of"] = obo;
        c["transfer"] = transfer;
        c["transfer_group"] = group;
    });
}

/// Reverse `amount` of transfer `tr` because refund `refund` gave the charge's money back:
/// the reversal's id, or `None` when nothing is left to reverse.
pub(super) fn reverse_transfer_for(w: &mut World, call: &mut Call, tr: &str, amount: i64, refund: &str) -> Option<String> {
    let t = w.get(tr)?;
    let total = t["amount"].as_i64().unwrap_or(0);
    let reversed = t["amount_reversed"].as_i64().unwrap_or(0);
    let amount = amount.min(total - reversed);
    if amount <= 0 {
        return None;
    }
    let cur = t["currency"].as_str().unwrap_or("usd").to_string();
    let id = w.new_id("trr");
    let txn = balance_txn(w, call, amount, 0, &cur, &id, "transfer_refund", None);
    let r = json!({
        "id": id, "object": "transfer_reversal", "amount": amount, "balance_transaction": txn, "created": w.now(),
        "currency": cur, "destination_payment_refund": w.new_id("pyr"), "metadata": {}, "source_refund": refund, "transfer": tr,
    });
    w.insert(Some(call), r);
    let reversals = reversals_of(w, tr);
    let after = w.modify(call, tr, |t| {
        t["amount_reversed"] = json!(reversed + amount);
        t["reversed"] = json!(reversed + amount >= total);
        t["reversals"] = reversals;
    });
    emit(w, call, "transfer.reversed", &after, Some(json!({"amount_reversed": reversed, "reversed": false})));
    Some(id)
}
