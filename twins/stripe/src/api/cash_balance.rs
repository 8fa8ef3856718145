//! A customer's cash balance: money the customer sent by bank transfer to the account's
//! funding instructions, held for them until it pays their invoices and payments. The test
//! helper `fund_cash_balance` stands in for the bank transfer.
//!
//! The twin's payments take cards, not `customer_balance`, so funds stay in the balance:
//! `apply_customer_balance` answers that the PaymentIntent does not accept it.

use super::*;

/// Where a customer's cash balance is kept (a cash balance has no id of its own).
fn key(cus: &str) -> String {
    format!("cashbal_{cus}")
}

fn cash_balance(w: &World, cus: &str) -> Value {
    w.get(&key(cus)).map(|mut b| {
        b.as_object_mut().map(|m| m.remove("id"));
        b
    })
    .unwrap_or_else(|| json!({"object": "cash_balance", "available": null, "customer": cus, "livemode": false, "settings": {"reconciliation_mode": "automatic", "using_merchant_default": true}}))
}

fn store(w: &mut World, call: &mut Call, cus: &str, mut b: Value) -> Value {
    let k = key(cus);
    b["id"] = json!(k);
    if w.exists(&k) {
        w.modify(call, &k, |x| *x = b);
    } else {
        w.insert_text(Some(call), "cash_balance", &k, b.to_string());
    }
    cash_balance(w, cus)
}

pub(super) fn cash_balance_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let cus = call.param("id").to_string();
    get_or_404(w, "customer", &cus, "customer")?;
    Ok(cash_balance(w, &cus))
}

pub(super) fn cash_balance_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let cus = call.param("id").to_string();
    get_or_404(w, "customer", &cus, "customer")?;
    let mut b = cash_balance(w, &cus);
    if let Some(mode) = p.get("settings").and_then(|s| s["reconciliation_mode"].as_str()) {
        match mode {
            "merchant_default" => b["settings"] = json!({"reconciliation_mode": "automatic", "using_merchant_default": true}),
            "automatic" | "manual" => b["settings"] = json!({"reconciliation_mode": mode, "using_merchant_default": false}),
            _ => return Err(invalid("Invalid settings[reconciliation_mode]: must be one of automatic, manual, or merchant_default").param("settings[reconciliation_mode]")),
        }
    }
    Ok(store(w, call, &cus, b))
}

pub(super) fn cash_txn_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let cus = call.param("id").to_string();
    get_or_404(w, "customer", &cus, "customer")?;
    list_of(w, call, "customer_cash_balance_transaction", p, |t| t["customer"] == cus.as_str())
}

pub(super) fn cash_txn_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let cus = call.param("id").to_string();
    get_or_404(w, "customer", &cus, "customer")?;
    let t = call.param("transaction");
    w.get_kind("customer_cash_balance_transaction", t).filter(|x| x["customer"] == cus.as_str()).ok_or_else(|| no_such("customer_cash_balance_transaction", t, "transaction"))
}

/// `POST /v1/test_helpers/customers/{id}/fund_cash_balance`: a bank transfer from the
/// customer arrives.
pub(super) fn fund_cash_balance(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let cus = call.param("id").to_string();
    get_or_404(w, "customer", &cus, "customer")?;
    let amount = p.req_int("amount")?;
    if amount < 1 {
        return Err(invalid("Invalid positive integer").param("amount"));
    }
    let cur = currency(p)?;
    let mut b = cash_balance(w, &cus);
    let was = b["available"][cur.as_str()].as_i64().unwrap_or(0);
    if !b["available"].is_object() {
        b["available"] = json!({});
    }
    b["available"][cur.as_str()] = json!(was + amount);
    let id = w.new_id("ccsbtxn");
    let t = json!({
        "id": id, "object": "customer_cash_balance_transaction", "created": w.now(), "currency": cur,
        "customer": cus, "ending_balance": was + amount, "funded": {"bank_transfer": {"eu_bank_transfer": if cur == "eur" { json!({"bic": "SXPYDEHH", "iban_last4": "0000", "sender_name": null}) } else { Value::Null }, "reference": p.str("reference"), "type": transfer_type(&cur)}},
        "livemode": false, "net_amount": amount, "type": "funded",
    });
    let t = w.insert(Some(call), t);
    let b = store(w, call, &cus, b);
    emit(w, call, "customer_cash_balance_transaction.created", &t, None);
    emit(w, call, "cash_balance.funds_available", &b, None);
    Ok(t)
}

/// The bank transfer a customer funds a balance in `cur` with.
fn transfer_type(cur: &str) -> &'static str {
    match cur {
        "eur" => "eu_bank_transfer",
        "gbp" => "gb_bank_transfer",
        "jpy" => "jp_bank_transfer",
        "mxn" => "mx_bank_transfer",
        _ => "us_bank_transfer",
    }
}

/// `POST /v1/customers/{id}/funding_instructions`: the bank details a customer sends money
/// to (Stripe's test account numbers).
pub(super) fn funding_instructions(w: &mut World, call: &mut Call, p: &Params) -> Res {
    // Instructions are the account's, the same each time: nothing is kept.
    let cus = call.param("id").to_string();
    get_or_404(w, "customer", &cus, "customer")?;
    let cur = currency(p)?;
    let bt = p.get("bank_transfer").ok_or_else(|| missing("bank_transfer"))?;
    let ty = bt["type"].as_str().ok_or_else(|| missing("bank_transfer[type]"))?;
    if p.str("funding_type") != Some("bank_transfer") {
        return Err(missing("funding_type"));
    }
    let (country, address) = match (ty, cur.as_str()) {
        ("us_bank_transfer", "usd") => ("US", json!({"aba": {"account_number": format!("{:012}", cus.bytes().fold(7u64, |h, b| h.wrapping_mul(31).wrapping_add(b as u64)) % 1_000_000_000_000), "bank_name": "STRIPE TEST BANK", "routing_number": "999999999"}, "supported_networks": ["ach", "domestic_wire_us"], "type": "aba"})),
        ("eu_bank_transfer", "eur") => {
            let c = bt["eu_bank_transfer"]["country"].as_str().ok_or_else(|| missing("bank_transfer[eu_bank_transfer][country]"))?;
            (c, json!({"iban": {"account_holder_name": "Stripe Technology Europe Limited", "bic": "SXPYDEHH", "country": c, "iban": format!("{c}00TEST00000000000{}", cus.len() % 10)}, "supported_networks": ["sepa"], "type": "iban"}))
        }
        ("gb_bank_transfer", "gbp") => ("GB", json!({"sort_code": {"account_holder_name": "Stripe Payments UK Ltd", "account_number": "00000000", "sort_code": "000000"}, "supported_networks": ["bacs", "fps"], "type": "sort_code"})),
        _ => return Err(invalid(format!("bank_transfer[type]={ty} does not take {cur}: us_bank_transfer takes usd, eu_bank_transfer eur, gb_bank_transfer gbp.")).param("bank_transfer[type]")),
    };
    Ok(json!({"object": "funding_instructions", "bank_transfer": {"country": country, "financial_addresses": [address], "type": ty}, "currency": cur, "funding_type": "bank_transfer", "livemode": false}))
}

/// `POST /v1/payment_intents/{id}/apply_customer_balance`: only a PaymentIntent that
/// accepts `customer_balance` can take from the cash balance, and the twin's take cards.
pub(super) fn apply_customer_balance(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    let pi = get_or_404(w, "payment_intent", &id, "payment_intent")?;
    if !pi["payment_method_types"].as_array().is_some_and(|a| a.iter().any(|t| t == "customer_balance")) {
        return Err(invalid("This PaymentIntent does not accept the customer_balance payment method type: add it to payment_method_types to apply the customer's cash balance.").code("payment_intent_invalid_parameter").param("payment_method_types"));
    }
    Err(unexpected_state(&pi, "apply_customer_balance"))
}
