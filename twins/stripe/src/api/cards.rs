//! Stripe's test cards and how each behaves when charged, the payment methods and tokens
//! named after them (`pm_card_visa`, `tok_chargeDeclined`).

use super::*;

/// How a test card behaves when charged.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Behaviour {
    Succeed,
    Decline(&'static str, &'static str),
    ThreeDS,
    Dispute,
    /// Succeeds with an elevated risk level, into the review queue (Radar).
    Review,
    /// Succeeds, then its issuer reports fraud: an early fraud warning (Radar).
    FraudWarning,
}

/// (number, brand, name in pm_card_* / tok_*, behaviour)
pub const CARDS: &[(&str, &str, &str, Behaviour)] = &[
    ("4242424242424242", "visa", "visa", Behaviour::Succeed),
    ("4000056655665556", "visa", "visa_debit", Behaviour::Succeed),
    ("5555555555554444", "mastercard", "mastercard", Behaviour::Succeed),
    ("378282246310005", "amex", "amex", Behaviour::Succeed),
    ("6011111111111117", "discover", "discover", Behaviour::Succeed),
    ("4000000000000002", "visa", "chargeDeclined", Behaviour::Decline("card_declined", "generic_decline")),
    ("4000000000009995", "visa", "chargeDeclinedInsufficientFunds", Behaviour::Decline("card_declined", "insufficient_funds")),
    ("4000000000009987", "visa", "chargeDeclinedLostCard", Behaviour::Decline("card_declined", "lost_card")),
    ("4000000000009979", "visa", "chargeDeclinedStolenCard", Behaviour::Decline("card_declined", "stolen_card")),
    ("4000000000000069", "visa", "chargeDeclinedExpiredCard", Behaviour::Decline("expired_card", "expired_card")),
    ("4000000000000127", "visa", "chargeDeclinedIncorrectCvc", Behaviour::Decline("incorrect_cvc", "incorrect_cvc")),
    ("4000000000000119", "visa", "chargeDeclinedProcessingError", Behaviour::Decline("processing_error", "processing_error")),
    // Attaches to a customer fine; every charge on it is declined.
    ("4000000000000341", "visa", "chargeCustomerFail", Behaviour::Decline("card_declined", "generic_decline")),
    ("4000000000006975", "visa", "chargeDeclinedVelocityLimitExceeded", Behaviour::Decline("card_declined", "card_velocity_exceeded")),
    ("4100000000000019", "visa", "chargeDeclinedFraudulent", Behaviour::Decline("card_declined", "fraudulent")),
    // "Authenticate unless set up": once a SetupIntent saved it, off-session payments pass.
    ("4000002500003155", "visa", "authenticationRequiredOnSetup", Behaviour::ThreeDS),
    // "Always authenticate".
    ("4000002760003184", "visa", "authenticationRequired", Behaviour::ThreeDS),
    ("4000000000003220", "visa", "threeDSecure2Required", Behaviour::ThreeDS),
    ("4000000000000259", "visa", "createDispute", Behaviour::Dispute),
    ("4000000000009235", "visa", "riskLevelElevated", Behaviour::Review),
    ("4000000000005423", "visa", "createIssuerFraudRecord", Behaviour::FraudWarning),
    // Highest risk: Radar's default rules block it.
    ("4000000000004954", "visa", "riskLevelHighest", Behaviour::Decline("card_declined", "fraudulent")),
    // Stripe's other name for the always-blocked card above.
    ("4100000000000019", "visa", "radarBlock", Behaviour::Decline("card_declined", "fraudulent")),
    // Charges succeed; a refund of one stays `pending` (Stripe: "Asynchronous refund").
    ("4000000000007726", "visa", "pendingRefund", Behaviour::Succeed),
];

/// Whether a refund of a charge paid with `details` (its `payment_method_details`) starts
/// `pending` rather than `succeeded`: bank debits, whose refunds travel back by bank
/// transfer over days, and the test card Stripe keeps for asynchronous refunds.
pub(super) fn refund_starts_pending(details: &Value) -> bool {
    match details["type"].as_str() {
        Some("us_bank_account") => true,
        Some("card") => details["card"]["last4"] == "7726" && details["card"]["brand"] == "visa",
        _ => false,
    }
}

/// The test card a test token or payment method names: `pm_card_chargeDeclined` and the
/// `pm_card_visa_chargeDeclined…` forms Stripe's tables give for visa cards alike.
pub(super) fn test_card(name: &str) -> Option<&'static (&'static str, &'static str, &'static str, Behaviour)> {
    let find = |n: &str| CARDS.iter().find(|c| c.2.eq_ignore_ascii_case(n));
    find(name).or_else(|| name.strip_prefix("visa_").and_then(find).filter(|c| c.1 == "visa"))
}

pub(super) fn decline_message(code: &str, decline: &str) -> &'static str {
    match (code, decline) {
        ("authentication_required", _) => "Your card was declined. This transaction requires authentication.",
        ("card_declined", "insufficient_funds") => "Your card has insufficient funds.",
        ("card_declined", "card_velocity_exceeded") => "Your card was declined for making repeated attempts too frequently or exceeding its amount limit.",
        ("card_declined", _) => "Your card was declined.",
        ("expired_card", _) => "Your card has expired.",
        ("incorrect_cvc", _) => "Your card's security code is incorrect.",
        ("processing_error", _) => "An error occurred while processing your card. Try again in a little bit.",
        _ => "Your card was declined.",
    }
}

pub fn behaviour_of(pm: &Value) -> Behaviour {
    behaviour(pm["card"]["last4"].as_str().unwrap_or(""), pm["card"]["brand"].as_str().unwrap_or(""))
}

/// How the test card ending in `last4` of `brand` behaves.
pub fn behaviour(last4: &str, brand: &str) -> Behaviour {
    CARDS
        .iter()
        .find(|(n, b, _, _)| n.ends_with(last4) && *b == brand && !last4.is_empty())
        .map(|c| c.3)
        .unwrap_or(Behaviour::Succeed)
}

pub(super) fn card_pm(w: &mut World, number: &str, brand: &str, exp_month: i64, exp_year: i64) -> Value {
    let id = w.new_id("pm");
    serde_json::to_value(CardPaymentMethod::new(id, number, brand, exp_month, exp_year, w.now())).expect("a payment method serialises")
}

/// A new card payment method for a test card, stored and recorded; its id.
pub(super) fn insert_card_pm(w: &mut World, call: &mut Call, number: &str, brand: &str) -> String {
    let id = w.new_id("pm");
    let c = Cut::of(&CardPaymentMethod::new(id.clone(), number, brand, 12, 2034, w.now()));
    w.insert_cut(Some(call), "payment_method", &id, &c);
    id
}

pub(super) fn crypto_pm(w: &mut World) -> Value {
    let id = w.new_id("pm");
    json!({
        "id": id, "object": "payment_method", "allow_redisplay": "unspecified",
        "billing_details": {"address": {"city": null, "country": null, "line1": null, "line2": null, "postal_code": null, "state": null}, "email": null, "name": null, "phone": null},
        "created": w.now(), "crypto": {}, "customer": null, "livemode": false, "metadata": {}, "type": "crypto",
    })
}

pub(super) fn luhn(n: &str) -> bool {
    let mut sum = 0;
    for (i, c) in n.bytes().rev().enumerate() {
        let mut d = (c - b'0') as u32;
        if i % 2 == 1 {
            d *= 2;
            if d > 9 {
                d -= 9;
            }
        }
        sum += d;
    }
    sum % 10 == 0
}

/// A payment method from `payment_method_data`-style parameters (`type`, `card[...]`).
pub(super) fn pm_from_data(w: &mut World, data: &Value, prefix: &str) -> Result<Value, StripeError> {
    let ty = data["type"].as_str().ok_or_else(|| missing(&format!("{prefix}type")))?;
    let mut pm = match ty {
        "card" => {
            let card = &data["card"];
            if let Some(tok) = card["token"].as_str() {
                let name = tok.strip_prefix("tok_").ok_or_else(|| invalid(format!("No such token: '{tok}'")).code("resource_missing").param(&format!("{prefix}card[token]")))?;
                let (num, brand) = test_card(name)
                    .map(|c| (c.0, c.1))
                    .ok_or_else(|| invalid(format!("No such token: '{tok}'")).code("resource_missing").param(&format!("{prefix}card[token]")))?;
                card_pm(w, num, brand, 12, 2034)
            } else {
                let number: String = card["number"].as_str().ok_or_else(|| missing(&format!("{prefix}card[number]")))?.chars().filter(|c| !c.is_whitespace() && *c != '-').collect();
                if number.len() < 12 || !number.bytes().all(|b| b.is_ascii_digit()) || !luhn(&number) {
                    let mut e = StripeError::new(402, "card_error", "Your card number is incorrect.").code("incorrect_number").param(&format!("{prefix}card[number]"));
                    e.status = 402;
                    return Err(e);
                }
                let exp_month: i64 = card["exp_month"].as_str().and_then(|s| s.parse().ok()).ok_or_else(|| missing(&format!("{prefix}card[exp_month]")))?;
                let exp_year: i64 = card["exp_year"].as_str().and_then(|s| s.parse().ok()).ok_or_else(|| missing(&format!("{prefix}card[exp_year]")))?;
                let exp_year = if exp_year < 100 { 2000 + exp_year } else { exp_year };
                if !(1..=12).contains(&exp_month) {
                    return Err(StripeError::new(402, "card_error", "Your card's expiration month is invalid.").code("invalid_expiry_month").param(&format!("{prefix}card[exp_month]")));
                }
                let now_year = 1970 + w.now() / 31_557_600;
                if exp_year < now_year {
                    return Err(StripeError::new(402, "card_error", "Your card's expiration year is invalid.").code("invalid_expiry_year").param(&format!("{prefix}card[exp_year]")));
                }
                let brand = CARDS.iter().find(|c| c.0 == number).map(|c| c.1).unwrap_or(match number.as_bytes()[0] {
                    b'4' => "visa",
                    b'5' => "mastercard",
                    b'3' => "amex",
                    _ => "unknown",
                });
                card_pm(w, &number, brand, exp_month, exp_year)
            }
        }
        "crypto" => crypto_pm(w),
        other => {
            return Err(invalid(format!("The payment method type `{other}` is not supported by the Stripe twin; use `card` or `crypto`.")).param(&format!("{prefix}type")));
        }
    };
    if let Some(bd) = data.get("billing_details").and_then(Value::as_object) {
        for (k, v) in bd {
            pm["billing_details"][k] = v.clone();
        }
    }
    if let Some(md) = data.get("metadata").and_then(Value::as_object) {
        pm["metadata"] = Value::Object(md.clone());
    }
    Ok(pm)
}

/// Whether a SetupIntent saved this payment method for later (off-session) payments.
pub(super) fn set_up(w: &World, pm_id: &str) -> bool {
    w.all("setup_intent").any(|si| si["status"] == "succeeded" && si["payment_method"] == pm_id)
}

/// A payment method id as given to an endpoint: a stored `pm_…`, or a test token
/// (`pm_card_visa`), which yields a new payment method like Stripe does.
pub(crate) fn resolve_pm(w: &mut World, call: &mut Call, id: &str, param: &str) -> Result<String, StripeError> {
    if w.is_kind("payment_method", id) {
        return Ok(id.to_string());
    }
    if let Some(made) = w.test_pms.get(id) {
        return Ok(made.clone());
    }
    if let Some(name) = id.strip_prefix("pm_card_").or_else(|| id.strip_prefix("tok_")) {
        if let Some(c) = test_card(name) {
            let pm = insert_card_pm(w, call, c.0, c.1);
            w.test_pms.insert(id.to_string(), pm.clone());
            return Ok(pm);
        }
    }
    // A card token made by `POST /v1/tokens`, used once.
    if let Some(made) = pm_from_token(w, call, id, param) {
        let pm = made?;
        w.test_pms.insert(id.to_string(), pm.clone());
        return Ok(pm);
    }
    // `id` is the path's own object (a 404); any other name is a parameter (a 400).
    Err(if param == "id" { no_such("PaymentMethod", id, param) } else { no_such_ref("PaymentMethod", id, param) })
}
