//! Tokens (a card or bank account, tokenized once and used once) and ephemeral keys (short
//! lived keys a mobile SDK uses for one customer).
//!
//! A card token behaves as the test card its number is: charged as a `source`, or made
//! into a payment method (`payment_method_data[card][token]`, `payment_method=tok_…`).

use super::*;

pub(super) fn token_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = w.new_id("tok");
    let now = w.now();
    let mut o = json!({"id": id, "object": "token", "client_ip": null, "created": now, "livemode": false, "used": false});
    if let Some(card) = p.get("card") {
        let c = match card {
            Value::String(pm) => {
                // A saved card of a customer, tokenized again (Connect's cloning).
                let pm_obj = w.get_kind("payment_method", pm).ok_or_else(|| no_such_ref("PaymentMethod", pm, "card"))?;
                json!({"number_last4": pm_obj["card"]["last4"], "brand": pm_obj["card"]["brand"], "exp_month": pm_obj["card"]["exp_month"], "exp_year": pm_obj["card"]["exp_year"], "funding": pm_obj["card"]["funding"]})
            }
            _ => {
                let pm = pm_from_data(w, &json!({"type": "card", "card": card}), "")?;
                json!({"number_last4": pm["card"]["last4"], "brand": pm["card"]["brand"], "exp_month": pm["card"]["exp_month"], "exp_year": pm["card"]["exp_year"], "funding": pm["card"]["funding"], "fingerprint": pm["card"]["fingerprint"]})
            }
        };
        let brand = match c["brand"].as_str().unwrap_or("visa") {
            "visa" => "Visa",
            "mastercard" => "MasterCard",
            "amex" => "American Express",
            "discover" => "Discover",
            other => other,
        }
        .to_string();
        let card_id = w.new_id("card");
        let funding = if c["funding"].is_null() { json!("credit") } else { c["funding"].clone() };
        o["type"] = json!("card");
        o["card"] = json!({
            "id": card_id, "object": "card", "address_city": null, "address_country": null, "address_line1": null, "address_line1_check": null,
            "address_line2": null, "address_state": null, "address_zip": null, "address_zip_check": null, "brand": brand, "country": "US",
            "cvc_check": if card.get("cvc").is_some() { json!("unchecked") } else { Value::Null }, "dynamic_last4": null,
            "exp_month": c["exp_month"], "exp_year": c["exp_year"], "fingerprint": c["fingerprint"], "funding": funding,
            "last4": c["number_last4"], "metadata": {}, "name": card.get("name").cloned().unwrap_or(Value::Null), "tokenization_method": null, "wallet": null,
        });
    } else if let Some(b) = p.get("bank_account") {
        let number = b["account_number"].as_str().ok_or_else(|| missing("bank_account[account_number]"))?;
        let country = b["country"].as_str().ok_or_else(|| missing("bank_account[country]"))?.to_ascii_uppercase();
        let cur = b["currency"].as_str().unwrap_or("usd").to_ascii_lowercase();
        if country == "US" && b["routing_number"].as_str().is_none_or(|r| r.len() != 9) {
            return Err(invalid("Routing number must have 9 digits").code("routing_number_invalid").param("bank_account[routing_number]"));
        }
        let last4: String = number.chars().rev().take(4).collect::<Vec<_>>().into_iter().rev().collect();
        o["type"] = json!("bank_account");
        o["bank_account"] = json!({
            "id": w.new_id("ba"), "object": "bank_account", "account_holder_name": b["account_holder_name"], "account_holder_type": b["account_holder_type"],
            "account_type": null, "bank_name": "STRIPE TEST BANK", "country": country, "currency": cur,
            "fingerprint": crate::core::base62(number.bytes().fold(11u64, |h, x| h.wrapping_mul(31).wrapping_add(x as u64)), 16),
            "last4": last4, "routing_number": b["routing_number"].as_str().unwrap_or("110000000"), "status": "new",
        });
    } else if p.get("pii").is_some() {
        o["type"] = json!("pii");
    } else if p.get("cvc_update").is_some() {
        o["type"] = json!("cvc_update");
    } else if p.get("account").is_some() {
        o["type"] = json!("account");
    } else if p.get("person").is_some() {
        o["type"] = json!("person");
    } else {
        return Err(invalid("You must supply either a card, customer, PII data, bank account, or account legal entity to create a token.").code("parameter_missing"));
    }
    Ok(w.insert(Some(call), o))
}

pub(super) fn token_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    get_or_404(w, "token", call.param("id"), "token")
}

/// A stored card token, used once, as a card payment method: the test card its number
/// was. `None` when `id` is no card token.
pub(crate) fn pm_from_token(w: &mut World, call: &mut Call, id: &str, param: &str) -> Option<Result<String, StripeError>> {
    let t = w.get_kind("token", id).filter(|t| t["type"] == "card")?;
    if t["used"] == true {
        return Some(Err(invalid(format!("You cannot use a Stripe token more than once: {id}.")).code("token_already_used").param(param)));
    }
    w.modify(call, id, |t| t["used"] = json!(true));
    let last4 = t["card"]["last4"].as_str().unwrap_or("4242").to_string();
    let brand = t["card"]["brand"].as_str().unwrap_or("Visa").to_ascii_lowercase().replace("american express", "amex");
    let number = CARDS.iter().find(|c| c.0.ends_with(&last4) && c.1 == brand).map_or_else(|| format!("424242424242{last4}"), |c| c.0.to_string());
    let brand = CARDS.iter().find(|c| c.0 == number).map_or(brand.clone(), |c| c.1.to_string());
    let pm = insert_card_pm(w, call, &number, &brand);
    Some(Ok(pm))
}

// ---------------------------------------------------------------------------------------
// Ephemeral keys.

/// How long an ephemeral key lasts.
const EPHEMERAL_SECS: i64 = 3600;

pub(super) fn ephemeral_key_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    if call.req.header("stripe-version").is_none() {
        return Err(invalid("Stripe-Version header is required when creating an ephemeral key: use the API version of the mobile SDK that will use it."));
    }
    let (ty, target) = match (p.str("customer"), p.str("issuing_card"), p.str("verification_session"), p.str("nonce")) {
        (Some(c), _, _, _) => {
            get_or_404(w, "customer", c, "customer").map_err(|e| StripeError { status: 400, ..e.param("customer") })?;
            ("customer", c.to_string())
        }
        (None, Some(ic), _, _) => return Err(no_such_ref("issuing card", ic, "issuing_card")),
        (None, None, Some(vs), _) => return Err(no_such_ref("verification session", vs, "verification_session")),
        (None, None, None, Some(_)) => return Err(invalid("A nonce is used with an issuing card: give `issuing_card` too.").param("issuing_card")),
        _ => return Err(invalid("You must pass one of `customer`, `issuing_card`, `nonce` or `verification_session`.").code("parameter_missing").param("customer")),
    };
    let id = w.new_id("ephkey");
    let now = w.now();
    let secret = format!("ek_test_{}", crate::core::base62(w.seq.wrapping_mul(0x9E37_79B9_7F4A_7C15), 22));
    let o = json!({"id": id, "object": "ephemeral_key", "associated_objects": [{"id": target, "type": ty}], "created": now, "expires": now + EPHEMERAL_SECS, "livemode": false, "secret": secret});
    Ok(w.insert(Some(call), o))
}

pub(super) fn ephemeral_key_delete(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    let k = get_or_404(w, "ephemeral_key", &id, "ephemeral_key")?;
    let now = w.now();
    if k["expires"].as_i64().is_some_and(|e| e <= now) {
        return Err(invalid(format!("The ephemeral key {id} has already expired.")).code("resource_missing"));
    }
    let mut out = w.modify(call, &id, |k| k["expires"] = json!(now));
    out.as_object_mut().map(|m| m.remove("secret"));
    Ok(out)
}
