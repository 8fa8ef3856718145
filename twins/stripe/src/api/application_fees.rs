//! Application fees: what the platform keeps of a destination charge
//! (`application_fee_amount` with `transfer_data[destination]`), and their refunds.

use super::*;

/// The platform's Connect application, as fees name it.
pub(super) fn application_id(w: &World) -> String {
    format!("ca_{}", w.account_id.trim_start_matches("acct_"))
}

/// The platform collects `amount` of charge `ch_id` from connected account `acct`: an
/// `application_fee` and its balance transaction. Its id.
pub(super) fn collect_fee(w: &mut World, call: &mut Call, ch_id: &str, acct: &str, amount: i64, cur: &str) -> String {
    let id = w.new_id("fee");
    let txn = balance_txn(w, call, amount, 0, cur, &id, "application_fee", None);
    let o = json!({
        "id": id, "object": "application_fee", "account": acct, "amount": amount, "amount_refunded": 0,
        "application": application_id(w), "balance_transaction": txn, "charge": ch_id, "created": w.now(), "currency": cur,
        "fee_source": {"charge": ch_id, "type": "charge"}, "livemode": false, "originating_transaction": null, "refunded": false,
        "refunds": embedded_list(&format!("/v1/application_fees/{id}/refunds"), Vec::new()),
    });
    let o = w.insert(Some(call), o);
    emit(w, call, "application_fee.created", &o, None);
    id
}

pub(super) fn fee_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    list_of(w, call, "application_fee", p, |f| field_is(f, "charge", p.str("charge")))
}

pub(super) fn fee_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    get_or_404(w, "application_fee", call.param("id"), "application fee")
}

/// Refund `amount` (all that is left when `None`) of fee `id`: a `fee_refund` and its balance
/// transaction, the fee's totals after it.
pub(super) fn refund_fee(w: &mut World, call: &mut Call, id: &str, amount: Option<i64>, p: Option<&Params>) -> Result<Value, StripeError> {
    let fee = get_or_404(w, "application_fee", id, "application fee")?;
    let total = fee["amount"].as_i64().unwrap_or(0);
    let refunded = fee["amount_refunded"].as_i64().unwrap_or(0);
    let left = total - refunded;
    if left <= 0 {
        return Err(invalid(format!("Application fee {id} has already been refunded.")).code("charge_already_refunded"));
    }
    let amount = amount.unwrap_or(left);
    if amount < 1 {
        return Err(invalid("Invalid positive integer").param("amount"));
    }
    let cur = fee["currency"].as_str().unwrap_or("usd").to_string();
    if amount > left {
        return Err(invalid(format!("Refund amount ({}) is greater than the unrefunded amount on the application fee ({}).", display(amount, &cur), display(left, &cur))).code("amount_too_large").param("amount"));
    }
    let rid = w.new_id("fr");
    let txn = balance_txn(w, call, -amount, 0, &cur, &rid, "application_fee_refund", None);
    let mut r = json!({"id": rid, "object": "fee_refund", "amount": amount, "balance_transaction": txn, "created": w.now(), "currency": cur, "fee": id, "metadata": {}});
    if let Some(p) = p {
        p.metadata_into(&mut r)?;
    }
    let r = w.insert(Some(call), r);
    let refunds = refunds_of(w, id);
    let after = w.modify(call, id, |f| {
        f["amount_refunded"] = json!(refunded + amount);
        f["refunded"] = json!(refunded + amount >= total);
        f["refunds"] = refunds;
    });
    emit(w, call, "application_fee.refunded", &after, Some(json!({"amount_refunded": refunded, "refunded": false})));
    Ok(r)
}

fn refunds_of(w: &World, fee: &str) -> Value {
    let items: Vec<Value> = w.all("fee_refund").filter(|r| r["fee"] == fee).collect();
    embedded_list(&format!("/v1/application_fees/{fee}/refunds"), items)
}

/// `POST /v1/application_fees/{id}/refund` (the older form): the fee after the refund.
pub(super) fn fee_refund_legacy(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    refund_fee(w, call, &id, p.int("amount")?, None)?;
    get_or_404(w, "application_fee", &id, "application fee")
}

pub(super) fn fee_refund_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    refund_fee(w, call, &id, p.int("amount")?, Some(p))
}

pub(super) fn fee_refund_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    get_or_404(w, "application_fee", &id, "application fee")?;
    list_of(w, call, "fee_refund", p, |r| r["fee"] == id.as_str())
}

fn path_fee_refund(w: &World, call: &Call) -> Result<Value, StripeError> {
    let fee = call.param("id");
    get_or_404(w, "application_fee", fee, "application fee")?;
    let rid = call.param("refund");
    w.get_kind("fee_refund", rid).filter(|r| r["fee"] == fee).ok_or_else(|| no_such("fee_refund", rid, "id"))
}

pub(super) fn fee_refund_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    path_fee_refund(w, call)
}

pub(super) fn fee_refund_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let mut r = path_fee_refund(w, call)?;
    let id = r["id"].as_str().unwrap_or_default().to_string();
    p.metadata_into(&mut r)?;
    let r = w.modify(call, &id, |x| *x = r);
    let fee = call.param("id").to_string();
    let refunds = refunds_of(w, &fee);
    w.modify(call, &fee, |f| f["refunds"] = refunds);
    emit(w, call, "application_fee.refund.updated", &r, None);
    Ok(r)
}
