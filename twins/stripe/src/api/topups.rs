//! Top-ups: money added to the platform's balance from its bank account. In test mode a
//! top-up from the account's default bank account succeeds at once: its `topup` balance
//! transaction is available, and transfers and payouts can spend it.

use super::*;

pub(super) fn topup_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let amount = p.req_int("amount")?;
    let cur = currency(p)?;
    if amount < 1 {
        return Err(invalid("Invalid positive integer").param("amount"));
    }
    if amount > 99_999_999 {
        return Err(invalid("Amount must be no more than $999,999.99").code("amount_too_large").param("amount"));
    }
    if let Some(src) = p.str("source") {
        return Err(no_such_ref("source", src, "source"));
    }
    let id = w.new_id("tu");
    let txn = balance_txn(w, call, amount, 0, &cur, &id, "topup", p.str("description"));
    let now = w.now();
    let mut o = json!({
        "id": id, "object": "topup", "amount": amount, "balance_transaction": txn, "created": now, "currency": cur,
        "description": p.str("description"), "expected_availability_date": now, "failure_code": null, "failure_message": null,
        "livemode": false, "metadata": {}, "source": null, "statement_descriptor": p.str("statement_descriptor"),
        "status": "succeeded", "transfer_group": p.str("transfer_group"),
    });
    p.metadata_into(&mut o)?;
    let o = w.insert(Some(call), o);
    emit(w, call, "topup.created", &o, None);
    emit(w, call, "topup.succeeded", &o, None);
    Ok(o)
}

pub(super) fn topup_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    get_or_404(w, "topup", call.param("id"), "topup")
}

pub(super) fn topup_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let mut o = get_or_404(w, "topup", &id, "topup")?;
    p.copy(&mut o, &["description"]);
    p.metadata_into(&mut o)?;
    Ok(w.modify(call, &id, |x| *x = o))
}

pub(super) fn topup_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    if let Some(s) = p.str("status") {
        if !["canceled", "failed", "pending", "succeeded"].contains(&s) {
            return Err(invalid("Invalid status: must be one of canceled, failed, pending, or succeeded").param("status"));
        }
    }
    let amount = if p.get("amount").is_some() { Some(range(p, "amount")?) } else { None };
    list_of(w, call, "topup", p, |o| field_is(o, "status", p.str("status")) && amount.as_ref().is_none_or(|b| b(o)))
}

pub(super) fn topup_cancel(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    let o = get_or_404(w, "topup", &id, "topup")?;
    if o["status"] != "pending" {
        return Err(invalid(format!("Only a pending top-up can be canceled; this top-up is {}.", o["status"].as_str().unwrap_or(""))).code("topup_cannot_be_canceled"));
    }
    let after = w.modify(call, &id, |x| x["status"] = json!("canceled"));
    emit(w, call, "topup.canceled", &after, None);
    Ok(after)
}
