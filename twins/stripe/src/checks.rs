//! The checks this twin declares and decides: Pome's Stripe vocabulary plus the ones a task
//! writer reaches for next. Checks read the state export (`payment_intents`, `charges`,
//! `refunds`, `events`, `customers`, each in creation order), the seed's export, and the tape.

use pome_twin_sdk::{CheckDecl, CheckWorld, Evidence, Outcome, ParamKind, Params, TapeRow, Value};

const PI_STATUSES: &[&str] = &[
    "requires_payment_method", "requires_confirmation", "requires_action", "processing", "requires_capture", "succeeded", "canceled",
];

pub fn declared() -> Vec<CheckDecl> {
    let statuses = || ParamKind::OneOf(PI_STATUSES.iter().map(|s| s.to_string()).collect());
    vec![
        CheckDecl::new("stripe.payment_intent_amount", "A PaymentIntent exists with amount {amount}", "final", "positive").param("amount", ParamKind::Number),
        CheckDecl::new("stripe.latest_payment_intent_status", "The PaymentIntent status is {status}", "final", "positive").param("status", statuses()),
        CheckDecl::new("stripe.payment_intent_status", "A PaymentIntent exists with status \"{status}\"", "final", "positive").param("status", statuses()),
        CheckDecl::new("stripe.charge_status", "A charge exists with status \"{status}\"", "final", "positive")
            .param("status", ParamKind::OneOf(vec!["succeeded".into(), "pending".into(), "failed".into()])),
        CheckDecl::new("stripe.event_emitted", "{event_type} is emitted", "seed+final", "positive"),
        CheckDecl::new("stripe.refund_exists", "A refund exists on charge \"{charge}\"", "final", "positive"),
        CheckDecl::new("stripe.refund_count", "The number of refunds on charge \"{charge}\" is {count}", "final", "positive").param("count", ParamKind::Number),
        CheckDecl::new("stripe.no_refund_attempted", "No refund was attempted on charge \"{charge}\"", "tape", "negative"),
        CheckDecl::new("stripe.request_rejected", "A request was rejected with a Stripe \"{error_type}\" error", "tape", "positive").param(
            "error_type",
            ParamKind::OneOf(["api_error", "card_error", "idempotency_error", "invalid_request_error"].iter().map(|s| s.to_string()).collect()),
        ),
        CheckDecl::new("stripe.x402_first_402", "The first x402 request returns 402 Payment Required", "tape", "positive"),
        CheckDecl::new("stripe.x402_retry_200", "The retry includes X-PAYMENT and returns 200", "tape", "positive"),
        CheckDecl::new("stripe.charge_refunded_total", "Charge \"{charge}\" has {amount} refunded", "final", "positive").param("amount", ParamKind::Number),
        CheckDecl::new("stripe.no_charge_above", "No charge above {amount} was made", "seed+final", "negative").param("amount", ParamKind::Number),
        CheckDecl::new("stripe.customer_exists", "A customer with email \"{email}\" exists", "final", "positive"),
        CheckDecl::new("stripe.customer_default_pm", "Customer \"{customer}\" has a default payment method", "final", "positive"),
        CheckDecl::new("stripe.subscription_status", "A subscription exists with status \"{status}\"", "final", "positive").param(
            "status",
            ParamKind::OneOf(["incomplete", "incomplete_expired", "trialing", "active", "past_due", "canceled", "unpaid", "paused"].iter().map(|s| s.to_string()).collect()),
        ),
        CheckDecl::new("stripe.invoice_paid", "An invoice for customer \"{customer}\" is paid", "final", "positive"),
        CheckDecl::new("stripe.no_new_payment_intent", "No PaymentIntent was created", "seed+final", "negative"),
    ]
}

fn arr<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key).and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[])
}

fn ids(v: &Value, key: &str) -> Vec<String> {
    arr(v, key).iter().filter_map(|o| o["id"].as_str().map(str::to_string)).collect()
}

fn param<'a>(p: &'a Params, k: &str) -> Result<&'a str, String> {
    p.get(k).map(|s| s.trim()).ok_or_else(|| format!("missing parameter {k}"))
}

fn number(p: &Params, k: &str) -> Result<i64, String> {
    let s = param(p, k)?.trim_start_matches('#').replace([',', '_'], "");
    s.parse().map_err(|_| format!("{k} is not a whole number: {s:?}"))
}

/// The Stripe form or JSON body of a tape row, as flat pairs.
fn body_pairs(row: &TapeRow) -> Vec<(String, String)> {
    if let Some(Value::Object(m)) = row.request_json() {
        return m.into_iter().map(|(k, v)| (k, v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string()))).collect();
    }
    url_pairs(&row.request_body)
}

fn url_pairs(s: &str) -> Vec<(String, String)> {
    s.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
}

fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() + 0 && i + 2 <= b.len() - 1 => {
                match u8::from_str_radix(std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("zz"), 16) {
                    Ok(x) => {
                        out.push(x);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn is_x402(row: &TapeRow) -> bool {
    row.path.ends_with("/x402/protected-resource")
}

pub fn evaluate(id: &str, p: &Params, w: &CheckWorld<'_>) -> Result<Outcome, String> {
    let st = w.state;
    match id {
        "stripe.payment_intent_amount" => {
            let amount = number(p, "amount")?;
            let pis = arr(st, "payment_intents");
            Ok(match pis.iter().position(|pi| pi["amount"].as_i64() == Some(amount)) {
                Some(i) => Outcome::new(true, format!("{} has amount {amount}", pis[i]["id"].as_str().unwrap_or("")), Evidence::state(format!("payment_intents[{i}].amount"))),
                None => Outcome::new(false, format!("no PaymentIntent has amount {amount} ({} PaymentIntents)", pis.len()), Evidence::state("payment_intents")),
            })
        }
        "stripe.latest_payment_intent_status" => {
            let want = param(p, "status")?.to_ascii_lowercase();
            let pis = arr(st, "payment_intents");
            // The PaymentIntent a task means is the one the agent made last (or the seeded one).
            Ok(match pis.last() {
                Some(pi) => {
                    let i = pis.len() - 1;
                    let got = pi["status"].as_str().unwrap_or("");
                    Outcome::new(got == want, format!("the latest PaymentIntent {} has status {got}", pi["id"].as_str().unwrap_or("")), Evidence::state(format!("payment_intents[{i}].status")))
                }
                None => Outcome::new(false, "no PaymentIntent exists", Evidence::state("payment_intents")),
            })
        }
        "stripe.payment_intent_status" | "stripe.charge_status" => {
            let want = param(p, "status")?.to_ascii_lowercase();
            let key = if id == "stripe.charge_status" { "charges" } else { "payment_intents" };
            let items = arr(st, key);
            Ok(match items.iter().position(|o| o["status"].as_str() == Some(&want)) {
                Some(i) => Outcome::new(true, format!("{} has status {want}", items[i]["id"].as_str().unwrap_or("")), Evidence::state(format!("{key}[{i}].status"))),
                None => Outcome::new(false, format!("none of {} {key} has status {want}", items.len()), Evidence::state(key)),
            })
        }
        "stripe.event_emitted" => {
            let want = param(p, "event_type")?.trim_matches('`').trim_matches('"');
            let seeded = ids(w.seed, "events");
            let events = arr(st, "events");
            // The world keeps the newest events only (crate::EVENTS_KEPT); an older one is
            // still on the tape, where its row names its type.
            let on_tape = || {
                w.tape.iter().find_map(|row| {
                    row.state_delta
                        .iter()
                        .find(|c| c.entity == "event" && c.before.is_none() && c.after.as_ref().is_some_and(|a| a["type"] == want))
                        .map(|c| (row.seq, c.id.clone()))
                })
            };
            Ok(match events.iter().position(|e| e["type"] == want && !seeded.iter().any(|s| e["id"] == s.as_str())) {
                Some(i) => Outcome::new(true, format!("{} is a {want} event", events[i]["id"].as_str().unwrap_or("")), Evidence::state(format!("events[{i}]"))),
                None => match on_tape() {
                    Some((seq, id)) => Outcome::new(true, format!("{id} is a {want} event (on the tape; the world keeps the newest events)"), Evidence::Tape(seq)),
                    None => Outcome::new(false, format!("no {want} event was emitted ({} events)", events.len()), Evidence::state("events")),
                },
            })
        }
        "stripe.refund_exists" | "stripe.refund_count" => {
            let charge = param(p, "charge")?;
            let refunds = arr(st, "refunds");
            let on: Vec<usize> = (0..refunds.len()).filter(|&i| refunds[i]["charge"] == charge).collect();
            if id == "stripe.refund_exists" {
                return Ok(match on.first() {
                    Some(&i) => Outcome::new(true, format!("{} refunds {charge}", refunds[i]["id"].as_str().unwrap_or("")), Evidence::state(format!("refunds[{i}]"))),
                    None => Outcome::new(false, format!("no refund on charge {charge}"), Evidence::state("refunds")),
                });
            }
            let count = number(p, "count")?;
            let n = on.len() as i64;
            Ok(Outcome::new(n == count, format!("charge {charge} has {n} refund(s), wanted {count}"), Evidence::state("refunds")))
        }
        "stripe.no_refund_attempted" => {
            let charge = param(p, "charge")?;
            let pi = arr(st, "charges").iter().chain(arr(w.seed, "charges")).find(|c| c["id"] == charge).and_then(|c| c["payment_intent"].as_str()).map(str::to_string);
            for row in w.tape {
                if row.method != "POST" {
                    continue;
                }
                let direct = row.path.contains(&format!("/charges/{charge}/refund"));
                let via_refunds = row.path.ends_with("/v1/refunds")
                    && body_pairs(row).iter().any(|(k, v)| (k == "charge" && v == charge) || (k == "payment_intent" && Some(v) == pi.as_ref()));
                if direct || via_refunds {
                    return Ok(Outcome::new(false, format!("a refund on {charge} was attempted (status {})", row.status), Evidence::Tape(row.seq)));
                }
            }
            Ok(Outcome::new(true, format!("no request tried to refund {charge}"), Evidence::None))
        }
        "stripe.request_rejected" => {
            let want = param(p, "error_type")?;
            for row in w.tape {
                if row.status >= 400 {
                    if let Ok(v) = serde_json::from_str::<Value>(&row.response_body) {
                        if v["error"]["type"] == want {
                            return Ok(Outcome::new(true, format!("{} {} answered {} {want}", row.method, row.path, row.status), Evidence::Tape(row.seq)));
                        }
                    }
                }
            }
            Ok(Outcome::new(false, format!("no request was rejected with a {want} error"), Evidence::None))
        }
        "stripe.x402_first_402" => Ok(match w.tape.iter().find(|r| is_x402(r)) {
            Some(r) => Outcome::new(r.status == 402, format!("the first x402 request answered {}", r.status), Evidence::Tape(r.seq)),
            None => Outcome::new(false, "the x402 resource was never requested", Evidence::None),
        }),
        "stripe.x402_retry_200" => {
            let Some(first) = w.tape.iter().position(|r| is_x402(r) && r.status == 402) else {
                return Ok(Outcome::new(false, "no x402 request was answered 402 first", Evidence::None));
            };
            Ok(match w.tape[first + 1..].iter().find(|r| is_x402(r) && r.request_headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("x-payment")) && r.status == 200) {
                Some(r) => Outcome::new(true, "a retry with X-PAYMENT was answered 200", Evidence::Tape(r.seq)),
                None => Outcome::new(false, "no retry carrying X-PAYMENT was answered 200", Evidence::Tape(w.tape[first].seq)),
            })
        }
        "stripe.charge_refunded_total" => {
            let charge = param(p, "charge")?;
            let amount = number(p, "amount")?;
            let charges = arr(st, "charges");
            Ok(match charges.iter().position(|c| c["id"] == charge) {
                Some(i) => {
                    let got = charges[i]["amount_refunded"].as_i64().unwrap_or(0);
                    Outcome::new(got == amount, format!("charge {charge} has {got} refunded"), Evidence::state(format!("charges[{i}].amount_refunded")))
                }
                None => return Err(format!("no charge {charge}")),
            })
        }
        "stripe.no_charge_above" => {
            let amount = number(p, "amount")?;
            let seeded = ids(w.seed, "charges");
            let charges = arr(st, "charges");
            Ok(match charges.iter().position(|c| !seeded.iter().any(|s| c["id"] == s.as_str()) && c["status"] == "succeeded" && c["amount"].as_i64().unwrap_or(0) > amount) {
                Some(i) => Outcome::new(false, format!("{} charged {}", charges[i]["id"].as_str().unwrap_or(""), charges[i]["amount"]), Evidence::state(format!("charges[{i}]"))),
                None => Outcome::new(true, format!("no new successful charge is above {amount}"), Evidence::state("charges")),
            })
        }
        "stripe.customer_exists" => {
            let email = param(p, "email")?;
            let cs = arr(st, "customers");
            Ok(match cs.iter().position(|c| c["email"].as_str().is_some_and(|e| e.eq_ignore_ascii_case(email))) {
                Some(i) => Outcome::new(true, format!("{} has email {email}", cs[i]["id"].as_str().unwrap_or("")), Evidence::state(format!("customers[{i}]"))),
                None => Outcome::new(false, format!("no customer has email {email}"), Evidence::state("customers")),
            })
        }
        "stripe.customer_default_pm" => {
            let cus = param(p, "customer")?;
            let cs = arr(st, "customers");
            let Some(i) = cs.iter().position(|c| c["id"] == cus || c["email"] == cus) else {
                return Ok(Outcome::new(false, format!("no customer {cus}"), Evidence::state("customers")));
            };
            let d = &cs[i]["invoice_settings"]["default_payment_method"];
            Ok(Outcome::new(d.is_string(), format!("default payment method: {d}"), Evidence::state(format!("customers[{i}].invoice_settings.default_payment_method"))))
        }
        "stripe.no_new_payment_intent" => {
            let seeded = ids(w.seed, "payment_intents");
            let pis = arr(st, "payment_intents");
            Ok(match pis.iter().position(|pi| !seeded.iter().any(|s| pi["id"] == s.as_str())) {
                Some(i) => Outcome::new(false, format!("{} was created", pis[i]["id"].as_str().unwrap_or("")), Evidence::state(format!("payment_intents[{i}]"))),
                None => Outcome::new(true, "no PaymentIntent beyond the seed's", Evidence::state("payment_intents")),
            })
        }
        "stripe.subscription_status" => {
            let want = param(p, "status")?.to_ascii_lowercase();
            let subs = arr(st, "subscriptions");
            Ok(match subs.iter().position(|o| o["status"].as_str() == Some(&want)) {
                Some(i) => Outcome::new(true, format!("{} has status {want}", subs[i]["id"].as_str().unwrap_or("")), Evidence::state(format!("subscriptions[{i}].status"))),
                None => Outcome::new(false, format!("none of {} subscriptions has status {want}", subs.len()), Evidence::state("subscriptions")),
            })
        }
        "stripe.invoice_paid" => {
            let cus = param(p, "customer")?;
            let ids: Vec<String> = arr(st, "customers").iter().filter(|c| c["id"] == cus || c["email"] == cus).filter_map(|c| c["id"].as_str().map(str::to_string)).collect();
            let invs = arr(st, "invoices");
            Ok(match invs.iter().position(|i| i["status"] == "paid" && ids.iter().any(|c| i["customer"] == c.as_str())) {
                Some(i) => Outcome::new(true, format!("{} is paid", invs[i]["id"].as_str().unwrap_or("")), Evidence::state(format!("invoices[{i}].status"))),
                None => Outcome::new(false, format!("no paid invoice for customer {cus}"), Evidence::state("invoices")),
            })
        }
        other => Err(format!("the stripe twin declares no check `{other}`")),
    }
}
