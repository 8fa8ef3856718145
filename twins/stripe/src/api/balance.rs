//! The balance, balance transactions and payouts.

use super::*;

pub fn balance_of(w: &World) -> std::collections::BTreeMap<String, (i64, i64)> {
    let mut by: std::collections::BTreeMap<String, (i64, i64)> = w.seeded_balance.clone();
    for t in w.all("balance_transaction") {
        let cur = t["currency"].as_str().unwrap_or("usd").to_string();
        let e = by.entry(cur).or_default();
        if t["status"] == "available" {
            e.0 += t["net"].as_i64().unwrap_or(0);
        } else {
            e.1 += t["net"].as_i64().unwrap_or(0);
        }
    }
    if by.is_empty() {
        by.insert("usd".into(), (0, 0));
    }
    by
}

pub(super) fn balance_retrieve(w: &mut World, _call: &mut Call, _p: &Params) -> Res {
    let by = balance_of(w);
    let avail: Vec<Value> = by.iter().map(|(c, (a, _))| json!({"amount": a, "currency": c, "source_types": {"card": a}})).collect();
    let pend: Vec<Value> = by.iter().map(|(c, (_, p))| json!({"amount": p, "currency": c, "source_types": {"card": p}})).collect();
    Ok(json!({"object": "balance", "available": avail, "connect_reserved": [], "livemode": false, "pending": pend}))
}

pub(super) fn bt_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let ty = p.str("type").map(str::to_string);
    let src = p.str("source").map(str::to_string);
    let payout = p.str("payout").map(str::to_string);
    list_of(w, call, "balance_transaction", p, |t| {
        ty.as_ref().is_none_or(|x| t["type"] == x.as_str()) && src.as_ref().is_none_or(|x| t["source"] == x.as_str()) && payout.as_ref().is_none_or(|x| t["source"] == x.as_str())
    })
}

pub(super) fn bt_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    get_or_404(w, "balance_transaction", &id, "balance transaction")
}

pub(super) fn payout_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let amount = p.req_int("amount")?;
    let cur = currency(p)?;
    if amount < 1 {
        return Err(invalid("Invalid positive integer").param("amount"));
    }
    let avail = balance_of(w).get(&cur).map(|b| b.0).unwrap_or(0);
    if amount > avail {
        return Err(invalid(format!("You have insufficient funds in your Stripe account for this transfer. Your card balance is too low. You can use the /v1/balance endpoint to view your Stripe balance (for more details, see stripe.com/docs/api#balance).")).code("balance_insufficient"));
    }
    let id = w.new_id("po");
    let txn = balance_txn(w, call, -amount, 0, &cur, &id, "payout", Some("STRIPE PAYOUT"));
    let now = w.now();
    let mut po = json!({
        "id": id, "object": "payout", "amount": amount, "arrival_date": now + 2 * 86400, "automatic": false,
        "balance_transaction": txn, "created": now, "currency": cur, "description": null, "destination": "ba_twin_default",
        "failure_balance_transaction": null, "failure_code": null, "failure_message": null, "livemode": false,
        "metadata": {}, "method": p.str("method").unwrap_or("standard"), "original_payout": null,
        "reconciliation_status": "not_applicable", "reversed_by": null, "source_type": "card",
        "statement_descriptor": null, "status": "pending", "type": "bank_account",
    });
    p.copy(&mut po, &["description", "statement_descriptor"]);
    p.metadata_into(&mut po)?;
    let po = w.insert(Some(call), po);
    emit(w, call, "payout.created", &po, None);
    Ok(po)
}

pub(super) fn payout_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    list_of(w, call, "payout", p, |o| field_is(o, "status", p.str("status")) && field_is(o, "destination", p.str("destination")))
}

pub(super) fn payout_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    get_or_404(w, "payout", &id, "payout")
}

pub(super) fn payout_cancel(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    let po = get_or_404(w, "payout", &id, "payout")?;
    if po["status"] != "pending" {
        return Err(invalid(format!("Payouts can only be canceled while they are pending; this payout is {}.", po["status"].as_str().unwrap_or(""))).code("payout_not_cancelable"));
    }
    let amount = po["amount"].as_i64().unwrap_or(0);
    let cur = po["currency"].as_str().unwrap_or("usd").to_string();
    balance_txn(w, call, amount, 0, &cur, &id, "payout_cancel", Some("Payout cancellation"));
    Ok(modify_emit(w, call, &id, "payout.canceled", |p| p["status"] = json!("canceled")))
}

pub(super) fn payout_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let mut po = get_or_404(w, "payout", &id, "payout")?;
    p.metadata_into(&mut po)?;
    Ok(replace_emit(w, call, &id, "payout.updated", po))
}

/// `POST /v1/payouts/{id}/reverse`: Stripe reverses only connected accounts' payouts to US
/// bank accounts once paid; a pending payout is canceled instead. The platform's own payouts
/// (all the twin makes) answer which of those applies.
pub(super) fn payout_reverse(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    let po = get_or_404(w, "payout", &id, "payout")?;
    if po["status"] == "pending" {
        return Err(invalid("This payout is still pending: cancel it with /v1/payouts/:id/cancel instead of reversing it.").code("payout_reversal_unsupported"));
    }
    Err(invalid("At this time, you can only reverse payouts for connected accounts to US bank accounts.").code("payout_reversal_unsupported"))
}
