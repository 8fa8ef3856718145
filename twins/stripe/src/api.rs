//! Stripe's resources: customers, payment methods, the PaymentIntent state machine, charges,
//! refunds, disputes, balance, payouts, catalogue objects, setup intents, events and webhook
//! endpoints.

use pome_twin_sdk::{Call, Delivery, Router, Value, json};

use crate::World;
use crate::store::Cut;
use crate::typed::{BalanceTransaction, CardPaymentMethod, Charge, ChargeFrom, FeeDetail, PaymentIntent, PmView};
use crate::core::{Params, Res, StripeError, invalid, missing, no_such, no_such_ref, run, search_matches, search_object};

macro_rules! h {
    ($f:path) => {
        |w: &mut World, c: &mut Call| run(w, c, $f)
    };
}

pub const TOOL_ALIASES: &[(&str, &str)] = &[
    ("create_customer", "customers.create"),
    ("retrieve_customer", "customers.retrieve"),
    ("list_customers", "customers.list"),
    ("create_payment_intent", "payment_intents.create"),
    ("retrieve_payment_intent", "payment_intents.retrieve"),
    ("confirm_payment_intent", "payment_intents.confirm"),
    ("capture_payment_intent", "payment_intents.capture"),
    ("cancel_payment_intent", "payment_intents.cancel"),
    ("list_payment_intents", "payment_intents.list"),
    ("retrieve_charge", "charges.retrieve"),
    ("list_charges", "charges.list"),
    ("create_refund", "refunds.create"),
    ("retrieve_refund", "refunds.retrieve"),
    ("list_refunds", "refunds.list"),
    ("list_events", "events.list"),
    ("retrieve_balance", "balance.retrieve"),
    ("list_balance_transactions", "balance_transactions.list"),
];

pub fn routes(r: Router<World>) -> Router<World> {
    crate::mcp_tools::routes(crate::commerce::routes(crate::billing::routes(r)))
        .post("/v1/customers", "customers.create", h!(customer_create))
        .get("/v1/customers", "customers.list", h!(customer_list))
        .get("/v1/customers/search", "customers.search", h!(customer_search))
        .get("/v1/customers/{id}", "customers.retrieve", h!(customer_retrieve))
        .post("/v1/customers/{id}", "customers.update", h!(customer_update))
        .delete("/v1/customers/{id}", "customers.delete", h!(customer_delete))
        .post("/v1/customers/{id}/balance_transactions", "customers.balance_transactions.create", h!(cbt_create))
        .get("/v1/customers/{id}/balance_transactions", "customers.balance_transactions.list", h!(cbt_list))
        .get("/v1/customers/{id}/payment_methods", "customers.payment_methods.list", h!(customer_pm_list))
        .post("/v1/payment_methods", "payment_methods.create", h!(pm_create))
        .get("/v1/payment_methods", "payment_methods.list", h!(pm_list))
        .get("/v1/payment_methods/{id}", "payment_methods.retrieve", h!(pm_retrieve))
        .post("/v1/payment_methods/{id}", "payment_methods.update", h!(pm_update))
        .post("/v1/payment_methods/{id}/attach", "payment_methods.attach", h!(pm_attach))
        .post("/v1/payment_methods/{id}/detach", "payment_methods.detach", h!(pm_detach))
        .post("/v1/payment_intents", "payment_intents.create", h!(pi_create))
        .get("/v1/payment_intents", "payment_intents.list", h!(pi_list))
        .get("/v1/payment_intents/search", "payment_intents.search", h!(pi_search))
        .get("/v1/payment_intents/{id}", "payment_intents.retrieve", h!(pi_retrieve))
        .post("/v1/payment_intents/{id}", "payment_intents.update", h!(pi_update))
        .post("/v1/payment_intents/{id}/confirm", "payment_intents.confirm", h!(pi_confirm))
        .post("/v1/payment_intents/{id}/capture", "payment_intents.capture", h!(pi_capture))
        .post("/v1/payment_intents/{id}/cancel", "payment_intents.cancel", h!(pi_cancel))
        .post("/v1/payment_intents/{id}/increment_authorization", "payment_intents.increment_authorization", h!(pi_increment))
        .post("/v1/test_helpers/payment_intents/{id}/simulate_crypto_deposit", "test_helpers.payment_intents.simulate_crypto_deposit", h!(pi_crypto_deposit))
        .post("/v1/charges", "charges.create", h!(charge_create))
        .get("/v1/charges", "charges.list", h!(charge_list))
        .get("/v1/charges/search", "charges.search", h!(charge_search))
        .get("/v1/charges/{id}", "charges.retrieve", h!(charge_retrieve))
        .post("/v1/charges/{id}", "charges.update", h!(charge_update))
        .post("/v1/charges/{id}/capture", "charges.capture", h!(charge_capture))
        .post("/v1/refunds", "refunds.create", h!(refund_create))
        .get("/v1/refunds", "refunds.list", h!(refund_list))
        .get("/v1/refunds/{id}", "refunds.retrieve", h!(refund_retrieve))
        .post("/v1/refunds/{id}", "refunds.update", h!(refund_update))
        .post("/v1/refunds/{id}/cancel", "refunds.cancel", h!(refund_cancel))
        .get("/v1/disputes", "disputes.list", h!(dispute_list))
        .get("/v1/disputes/{id}", "disputes.retrieve", h!(dispute_retrieve))
        .post("/v1/disputes/{id}", "disputes.update", h!(dispute_update))
        .post("/v1/disputes/{id}/close", "disputes.close", h!(dispute_close))
        .get("/v1/balance", "balance.retrieve", h!(balance_retrieve))
        .get("/v1/balance_transactions", "balance_transactions.list", h!(bt_list))
        .get("/v1/balance_transactions/{id}", "balance_transactions.retrieve", h!(bt_retrieve))
        .post("/v1/payouts", "payouts.create", h!(payout_create))
        .get("/v1/payouts", "payouts.list", h!(payout_list))
        .get("/v1/payouts/{id}", "payouts.retrieve", h!(payout_retrieve))
        .post("/v1/payouts/{id}/cancel", "payouts.cancel", h!(payout_cancel))
        .post("/v1/products", "products.create", h!(product_create))
        .get("/v1/products", "products.list", h!(product_list))
        .get("/v1/products/search", "products.search", h!(product_search))
        .get("/v1/products/{id}", "products.retrieve", h!(product_retrieve))
        .post("/v1/products/{id}", "products.update", h!(product_update))
        .delete("/v1/products/{id}", "products.delete", h!(product_delete))
        .post("/v1/prices", "prices.create", h!(price_create))
        .get("/v1/prices", "prices.list", h!(price_list))
        .get("/v1/prices/search", "prices.search", h!(price_search))
        .get("/v1/prices/{id}", "prices.retrieve", h!(price_retrieve))
        .post("/v1/prices/{id}", "prices.update", h!(price_update))
        .post("/v1/coupons", "coupons.create", h!(coupon_create))
        .get("/v1/coupons", "coupons.list", h!(coupon_list))
        .get("/v1/coupons/{id}", "coupons.retrieve", h!(coupon_retrieve))
        .post("/v1/coupons/{id}", "coupons.update", h!(coupon_update))
        .delete("/v1/coupons/{id}", "coupons.delete", h!(coupon_delete))
        .post("/v1/setup_intents", "setup_intents.create", h!(si_create))
        .get("/v1/setup_intents", "setup_intents.list", h!(si_list))
        .get("/v1/setup_intents/{id}", "setup_intents.retrieve", h!(si_retrieve))
        .post("/v1/setup_intents/{id}", "setup_intents.update", h!(si_update))
        .post("/v1/setup_intents/{id}/confirm", "setup_intents.confirm", h!(si_confirm))
        .post("/v1/setup_intents/{id}/cancel", "setup_intents.cancel", h!(si_cancel))
        .get("/v1/events", "events.list", h!(event_list))
        .get("/v1/events/{id}", "events.retrieve", h!(event_retrieve))
        .post("/v1/webhook_endpoints", "webhook_endpoints.create", h!(we_create))
        .get("/v1/webhook_endpoints", "webhook_endpoints.list", h!(we_list))
        .get("/v1/webhook_endpoints/{id}", "webhook_endpoints.retrieve", h!(we_retrieve))
        .post("/v1/webhook_endpoints/{id}", "webhook_endpoints.update", h!(we_update))
        .delete("/v1/webhook_endpoints/{id}", "webhook_endpoints.delete", h!(we_delete))
        .get("/x402/protected-resource", "x402.protected_resource", crate::x402::protected_resource)
        .get(crate::three_ds::PAGE, "three_d_secure.page", crate::three_ds::show)
        .post(crate::three_ds::PAGE, "three_d_secure.answer", crate::three_ds::answer)
}

/// Create (and with `confirm`, run) a PaymentIntent, as `POST /v1/payment_intents` does.
pub fn create_payment_intent(w: &mut World, call: &mut Call, p: &Params) -> Res {
    create_pi(w, call, p).map(|text| parse(&text))
}

/// The twin's own JSON text as a `Value`.
fn parse(text: &str) -> Value {
    serde_json::from_str(text).expect("the twin writes JSON")
}

// ---------------------------------------------------------------------------------------
// Shared helpers.

fn get_or_404(w: &World, kind: &str, id: &str, label: &str) -> Res {
    w.get_kind(kind, id).ok_or_else(|| no_such(label, id, "id"))
}

/// List objects of a kind, newest first, after a filter, with `created[gt]`-style bounds.
pub(crate) fn list_of(w: &World, call: &Call, kind: &str, p: &Params, keep: impl Fn(&Value) -> bool) -> Res {
    list_shaped(w, call, kind, p, keep, None)
}

/// [`list_of`], each listed object reshaped by `shape` (a Checkout session without its line
/// items). Besides `created`, the range filters an operation takes (`due_date`,
/// `arrival_date`, `current_period_end`) bound their own fields.
pub(crate) fn list_shaped(w: &World, call: &Call, kind: &str, p: &Params, keep: impl Fn(&Value) -> bool, shape: Option<fn(Value) -> Value>) -> Res {
    // With nothing to filter by, a page is cut from the ids and written from the stored
    // text: no object is decoded. (Charges and endpoints are reshaped after listing.)
    let paging_only = p.0.keys().all(|k| ["limit", "starting_after", "ending_before", "expand"].contains(&k.as_str()));
    if paging_only && call.params.is_empty() && shape.is_none() && kind != "charge" && kind != "webhook_endpoint" {
        return crate::core::list_ids(w, &call.req.path, w.ids(kind).collect(), p);
    }
    let mut bounds = Vec::new();
    for field in ["created", "due_date", "arrival_date", "current_period_end", "current_period_start"] {
        if p.get(field).is_some() {
            bounds.push(range(p, field)?);
        }
    }
    let items: Vec<Value> = w.all(kind).filter(|o| keep(o) && bounds.iter().all(|b| b(o))).map(|o| match shape {
        Some(f) => f(o),
        None => o,
    }).collect();
    crate::core::list_object(&call.req.path, items, p)
}

/// A range filter on the integer field `field`: an exact value, or `[gt]`, `[gte]`, `[lt]`,
/// `[lte]` bounds.
fn range(p: &Params, field: &str) -> Result<Box<dyn Fn(&Value) -> bool>, StripeError> {
    let mut b: Vec<(String, i64)> = Vec::new();
    match p.get(field) {
        Some(Value::Object(m)) => {
            for (k, v) in m {
                if !["gt", "gte", "lt", "lte"].contains(&k.as_str()) {
                    return Err(invalid(format!("Received unknown parameter: {field}[{k}]")).code("parameter_unknown").param(&format!("{field}[{k}]")));
                }
                let n = v.as_str().and_then(|s| s.parse::<i64>().ok()).ok_or_else(|| invalid("Invalid integer").param(&format!("{field}[{k}]")))?;
                b.push((k.clone(), n));
            }
        }
        Some(Value::String(s)) => b.push(("eq".into(), s.parse().map_err(|_| invalid(format!("Invalid integer: {s}")).param(field))?)),
        _ => {}
    }
    let field = field.to_string();
    Ok(Box::new(move |o: &Value| {
        let Some(c) = o[&field].as_i64() else { return false };
        b.iter().all(|(k, n)| match k.as_str() {
            "gt" => c > *n,
            "gte" => c >= *n,
            "lt" => c < *n,
            "lte" => c <= *n,
            _ => c == *n,
        })
    }))
}

/// Whether `o[field]` is `want` (an id, a status), when the request filters by it: a field
/// holding an expanded object compares by its id.
pub(crate) fn field_is(o: &Value, field: &str, want: Option<&str>) -> bool {
    let Some(want) = want else { return true };
    let v = &o[field];
    if v.is_object() { v["id"] == want } else { *v == want }
}

fn product_search(w: &mut World, call: &mut Call, p: &Params) -> Res {
    search_of(w, call, "product", p)
}

fn price_search(w: &mut World, call: &mut Call, p: &Params) -> Res {
    search_of(w, call, "price", p)
}

pub(crate) fn search_of(w: &World, call: &Call, kind: &str, p: &Params) -> Res {
    let q = p.req_str("query")?.to_string();
    let mut items = Vec::new();
    for o in w.all(kind) {
        if search_matches(&q, &o)? {
            items.push(o);
        }
    }
    search_object(&call.req.path, items, p)
}

pub fn currency(p: &Params) -> Result<String, StripeError> {
    let c = p.req_str("currency")?.to_ascii_lowercase();
    if !CURRENCIES.contains(&c.as_str()) {
        return Err(invalid(format!("Invalid currency: {c}. Stripe currently supports these currencies: {}", CURRENCIES.join(", "))).param("currency"));
    }
    Ok(c)
}

/// The currencies Stripe accepts for a charge, in the order its error lists them.
pub const CURRENCIES: &[&str] = &[
    "usd", "aed", "afn", "all", "amd", "ang", "aoa", "ars", "aud", "awg", "azn", "bam", "bbd", "bdt", "bgn", "bhd", "bif", "bmd", "bnd", "bob", "brl",
    "bsd", "bwp", "byn", "bzd", "cad", "cdf", "chf", "clp", "cny", "cop", "crc", "cve", "czk", "djf", "dkk", "dop", "dzd", "egp", "etb", "eur", "fjd",
    "fkp", "gbp", "gel", "gip", "gmd", "gnf", "gtq", "gyd", "hkd", "hnl", "htg", "huf", "idr", "ils", "inr", "isk", "jmd", "jod", "jpy", "kes", "kgs",
    "khr", "kmf", "krw", "kwd", "kyd", "kzt", "lak", "lbp", "lkr", "lrd", "lsl", "mad", "mdl", "mga", "mkd", "mmk", "mnt", "mop", "mur", "mvr", "mwk",
    "mxn", "myr", "mzn", "nad", "ngn", "nio", "nok", "npr", "nzd", "omr", "pab", "pen", "pgk", "php", "pkr", "pln", "pyg", "qar", "ron", "rsd", "rub",
    "rwf", "sar", "sbd", "scr", "sek", "sgd", "shp", "sle", "sos", "srd", "std", "szl", "thb", "tjs", "tnd", "top", "try", "ttd", "twd", "tzs", "uah",
    "ugx", "uyu", "uzs", "vnd", "vuv", "wst", "xaf", "xcd", "xof", "xpf", "yer", "zar", "zmw",
];

pub const ZERO_DECIMAL: &[&str] = &["bif", "clp", "djf", "gnf", "jpy", "kmf", "krw", "mga", "pyg", "rwf", "ugx", "vnd", "vuv", "xaf", "xof", "xpf"];

/// Stripe's minimum charge amounts (docs.stripe.com/currencies, "Minimum and maximum charge
/// amounts"), in the currency's minor unit, with the symbol its error shows. Other currencies
/// have a minimum that follows the exchange rate to $0.50; a twin has no rates, so only
/// "at least 1" applies to them.
const MINIMUM_CHARGE: &[(&str, i64, &str)] = &[
    ("aed", 200, "AED "), ("aud", 50, "$"), ("bgn", 100, "лв"), ("brl", 50, "R$"), ("cad", 50, "$"), ("chf", 50, "CHF "),
    ("czk", 1500, "Kč"), ("dkk", 250, "kr."), ("eur", 50, "€"), ("gbp", 30, "£"), ("hkd", 400, "$"), ("huf", 17500, "Ft"),
    ("inr", 50, "₹"), ("jpy", 50, "¥"), ("mxn", 1000, "$"), ("myr", 200, "RM "), ("nok", 300, "kr"), ("nzd", 50, "$"),
    ("pln", 200, "zł"), ("ron", 200, "lei "), ("sek", 300, "kr"), ("sgd", 50, "$"), ("thb", 1000, "฿"), ("usd", 50, "$"),
];

/// Stripe's checks on a charge amount: positive, at least the currency's minimum, at most
/// Stripe's maximum.
fn check_amount(amount: i64, cur: &str) -> Result<(), StripeError> {
    if amount < 1 {
        return Err(invalid("This value must be greater than or equal to 1.").param("amount"));
    }
    if let Ok(i) = MINIMUM_CHARGE.binary_search_by(|(c, _, _)| (*c).cmp(cur)) {
        let (_, min, symbol) = MINIMUM_CHARGE[i];
        if amount < min {
            let shown = if ZERO_DECIMAL.contains(&cur) { min.to_string() } else { format!("{}.{:02}", min / 100, min % 100) };
            return Err(invalid(format!("Amount must be at least {symbol}{shown} {cur}")).code("amount_too_small").param("amount"));
        }
    }
    if amount > 99_999_999 {
        return Err(invalid("Amount must be no more than $999,999.99").code("amount_too_large").param("amount"));
    }
    Ok(())
}

fn display(amount: i64, cur: &str) -> String {
    if ZERO_DECIMAL.contains(&cur) {
        format!("{amount} {cur}")
    } else {
        format!("${}.{:02}", amount / 100, amount % 100)
    }
}

// ---------------------------------------------------------------------------------------
// Events and webhooks.

/// Record an event for a change and deliver it to every webhook endpoint listening for it.
/// The event is written straight to its stored text (its `data.object` as a diff against
/// the object's template); it is decoded only when an endpoint needs its payload.
pub fn emit(w: &mut World, call: &mut Call, kind: &str, object: &Value, previous: Option<Value>) {
    let obj_kind = object["object"].as_str().unwrap_or_default().to_string();
    let obj_id = object["id"].as_str().unwrap_or_default().to_string();
    let inner = crate::store::encode_obj(&mut w.0.templates, &obj_kind, object);
    emit_text(w, call, kind, &obj_id, obj_kind, inner, previous)
}

/// [`emit`] for the object as it is stored now: its stored text is the event's
/// `data.object`, with nothing encoded again.
pub fn emit_current(w: &mut World, call: &mut Call, kind: &str, obj_id: &str, previous: Option<Value>) {
    let Some(s) = w.objects.get(&crate::store::Id::of(obj_id)) else { return };
    let obj_kind = s.kind.to_string();
    let inner = (s.text.to_string(), s.diff);
    emit_text(w, call, kind, obj_id, obj_kind, inner, previous)
}

fn emit_text(w: &mut World, call: &mut Call, kind: &str, obj_id: &str, obj_kind: String, inner: (String, bool), previous: Option<Value>) {
    let (inner_text, inner_diff) = inner;
    let id = w.new_id("evt");
    let endpoints: Vec<(String, String)> = if w.order.get("webhook_endpoint").is_none_or(|ids| ids.is_empty()) {
        Vec::new()
    } else {
        w.all("webhook_endpoint")
            .filter(|e| e["status"] == "enabled")
            .filter(|e| e["enabled_events"].as_array().is_some_and(|a| a.iter().any(|t| t == "*" || t == kind)))
            .map(|e| (e["url"].as_str().unwrap_or_default().to_string(), e["secret"].as_str().unwrap_or_default().to_string()))
            .collect()
    };
    let now = w.now();
    let mut text = String::with_capacity(inner_text.len() + 320);
    text.push_str("{\"id\":");
    push_str_json(&mut text, &id);
    text.push_str(",\"object\":\"event\",\"api_version\":");
    push_str_json(&mut text, crate::API_VERSION);
    text.push_str(",\"created\":");
    text.push_str(&now.to_string());
    text.push_str(",\"data\":{\"object\":");
    text.push_str(&inner_text);
    if let Some(prev) = &previous {
        text.push_str(",\"previous_attributes\":");
        text.push_str(&prev.to_string());
    }
    text.push_str("},\"livemode\":false,\"pending_webhooks\":");
    text.push_str(&endpoints.len().to_string());
    text.push_str(",\"request\":{\"id\":");
    push_str_json(&mut text, &w.current_request);
    text.push_str(",\"idempotency_key\":");
    match w.current_idempotency_key.as_deref() {
        Some(k) => push_str_json(&mut text, k),
        None => text.push_str("null"),
    }
    text.push_str("},\"type\":");
    push_str_json(&mut text, kind);
    text.push('}');
    let stored = crate::store::Stored { kind: "event".into(), text: text.into(), diff: false, inner: inner_diff.then(|| obj_kind.clone().into()) };
    // The row names the event and its object only: the same call recorded the object.
    let mut row = String::with_capacity(160);
    row.push_str("{\"id\":");
    push_str_json(&mut row, &id);
    row.push_str(",\"object\":\"event\",\"type\":");
    push_str_json(&mut row, kind);
    row.push_str(",\"data\":{\"object\":{\"id\":");
    push_str_json(&mut row, obj_id);
    row.push_str(",\"object\":");
    push_str_json(&mut row, &obj_kind);
    row.push_str("}}}");
    call.created("event", &id, &crate::store::Raw(&row));
    w.put(&id, "event", stored);
    if endpoints.is_empty() {
        return;
    }
    let ev = w.get(&id).unwrap_or_default();
    let payload = serde_json::to_string_pretty(&ev).unwrap_or_default();
    for (url, secret) in endpoints {
        let sig = sign(&secret, now, &payload);
        call.deliver(Delivery {
            url,
            method: "POST".into(),
            headers: vec![
                ("content-type".into(), "application/json; charset=utf-8".into()),
                ("user-agent".into(), "Stripe/1.0 (+https://stripe.com/docs/webhooks)".into()),
                ("stripe-signature".into(), format!("t={now},v1={sig}")),
            ],
            body: payload.clone().into_bytes(),
            event: kind.to_string(),
        });
    }
}

/// Append `s` as a JSON string (escaped as serde_json escapes it).
pub fn push_str_json(out: &mut String, s: &str) {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.push('"');
        out.push_str(s);
        out.push('"');
    } else {
        out.push_str(&serde_json::to_string(s).expect("a string serialises"));
    }
}

/// `HMAC-SHA256(secret, "t.payload")` in hex, Stripe's `v1` signature scheme.
pub fn sign(secret: &str, t: i64, payload: &str) -> String {
    use hmac::{Hmac, Mac};
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).expect("any key length");
    mac.update(format!("{t}.{payload}").as_bytes());
    mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect()
}

/// The fields of `after` that differ from `before`, with their old values.
fn previous(before: &Value, after: &Value) -> Value {
    let mut out = serde_json::Map::new();
    if let (Some(b), Some(a)) = (before.as_object(), after.as_object()) {
        for (k, v) in b {
            if a.get(k) != Some(v) {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    Value::Object(out)
}

/// Modify an object and emit `event` with `previous_attributes`.
pub(crate) fn modify_emit(w: &mut World, call: &mut Call, id: &str, event: &str, f: impl FnOnce(&mut Value)) -> Value {
    let before = w.get(id).unwrap_or(Value::Null);
    let after = w.modify(call, id, f);
    let prev = previous(&before, &after);
    emit(w, call, event, &after, Some(prev));
    after
}

// ---------------------------------------------------------------------------------------
// Customers.

pub(crate) fn customer_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = w.new_id("cus");
    let mut c = customer_obj(&id, w.now());
    p.copy(&mut c, &["email", "name", "phone", "description", "address", "shipping", "preferred_locales"]);
    full_addresses(&mut c);
    if let Some(b) = p.int("balance")? {
        c["balance"] = json!(b);
    }
    p.metadata_into(&mut c)?;
    if let Some(tc) = p.str("test_clock") {
        if w.get_kind("test_helpers.test_clock", tc).is_none() {
            return Err(no_such_ref("test_clock", tc, "test_clock"));
        }
        c["test_clock"] = json!(tc);
    }
    let asked = crate::billing::discount_params(w, p, None, &[])?;
    let mut c = w.insert(Some(call), c);
    if let Some(pm) = p.str("payment_method") {
        attach(w, call, pm, &id)?;
    }
    if let Some(d) = p.get("invoice_settings").and_then(|v| v["default_payment_method"].as_str()).map(str::to_string) {
        let pm = resolve_pm(w, call, &d, "invoice_settings[default_payment_method]")?;
        w.modify(call, &id, |c| c["invoice_settings"]["default_payment_method"] = json!(pm));
    }
    if let Some(r) = asked.as_ref().and_then(|l| l.first()) {
        let now = crate::billing::now_for(w, &id);
        let d = crate::billing::redeem(w, call, r, &id, None, None, now);
        c = w.modify(call, &id, |c| c["discount"] = d);
    }
    emit(w, call, "customer.created", &c, None);
    Ok(w.get(&id).unwrap_or(c))
}

pub fn customer_obj(id: &str, created: i64) -> Value {
    json!({
        "id": id, "object": "customer", "address": null, "balance": 0, "created": created,
        "currency": null, "default_source": null, "delinquent": false, "description": null,
        "discount": null, "email": null, "invoice_prefix": format!("{}", &id[id.len() - 8..].to_uppercase()),
        "invoice_settings": {"custom_fields": null, "default_payment_method": null, "footer": null, "rendering_options": null},
        "livemode": false, "metadata": {}, "name": null, "next_invoice_sequence": 1, "phone": null,
        "preferred_locales": [], "shipping": null, "tax_exempt": "none", "test_clock": null,
    })
}

fn customer_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    match w.get(&id) {
        Some(c) if c["object"] == "customer" => Ok(c.clone()),
        _ => match w.0.tombstones_contains(&id) {
            true => Ok(json!({"id": id, "object": "customer", "deleted": true})),
            false => Err(no_such("customer", &id, "id")),
        },
    }
}

/// An address hash as Stripe answers it: sent whole, it replaces the old one, so every
/// field not sent is null.
fn full_address(a: &Value) -> Value {
    let mut out = json!({"city": null, "country": null, "line1": null, "line2": null, "postal_code": null, "state": null});
    for k in ["city", "country", "line1", "line2", "postal_code", "state"] {
        if let Some(v) = a.get(k).filter(|v| !v.is_null() && *v != "") {
            out[k] = v.clone();
        }
    }
    out
}

/// A customer's `address` and `shipping` hashes with all their fields.
fn full_addresses(c: &mut Value) {
    if c["address"].is_object() {
        c["address"] = full_address(&c["address"]);
    }
    if c["shipping"].is_object() {
        let s = c["shipping"].clone();
        c["shipping"] = json!({"address": full_address(&s["address"]), "name": s["name"], "phone": s["phone"]});
    }
}

fn customer_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    get_or_404(w, "customer", &id, "customer")?;
    let mut probe = w.get(&id).unwrap();
    p.metadata_into(&mut probe)?;
    let dpm = match p.get("invoice_settings").and_then(|v| v["default_payment_method"].as_str()) {
        Some(pm) => {
            let pm_obj = w.get_kind("payment_method", pm).ok_or_else(|| no_such_ref("PaymentMethod", pm, "invoice_settings[default_payment_method]"))?;
            if pm_obj["customer"] != id.as_str() {
                return Err(invalid(format!("The customer does not have a payment method with the ID {pm}. The payment method must be attached to the customer.")).param("invoice_settings[default_payment_method]"));
            }
            Some(pm.to_string())
        }
        None => None,
    };
    let old = probe["discount"].clone();
    let discount = match crate::billing::discount_params(w, p, Some(&id), &[])?.as_ref().and_then(|l| l.first()) {
        Some(r) => {
            let now = crate::billing::now_for(w, &id);
            let d = crate::billing::redeem(w, call, r, &id, None, None, now);
            if old.is_object() {
                emit(w, call, "customer.discount.deleted", &crate::billing::deleted_discount(&old), None);
            }
            Some(d)
        }
        None => None,
    };
    let c = modify_emit(w, call, &id, "customer.updated", |c| {
        if let Some(d) = discount {
            c["discount"] = d;
        }
        p.copy(c, &["email", "name", "phone", "description", "address", "shipping"]);
        full_addresses(c);
        c["metadata"] = probe["metadata"].clone();
        if let Some(pm) = dpm {
            c["invoice_settings"]["default_payment_method"] = json!(pm);
        }
        if let Ok(Some(b)) = p.int("balance") {
            c["balance"] = json!(b);
        }
    });
    Ok(c)
}

fn customer_delete(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    let c = get_or_404(w, "customer", &id, "customer")?;
    crate::billing::end_customer_subscriptions(w, call, &id);
    w.remove(call, &id);
    w.0.tombstone(&id);
    emit(w, call, "customer.deleted", &c, None);
    Ok(json!({"id": id, "object": "customer", "deleted": true}))
}

fn customer_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    list_of(w, call, "customer", p, |c| field_is(c, "email", p.str("email")) && field_is(c, "test_clock", p.str("test_clock")))
}

fn customer_search(w: &mut World, call: &mut Call, p: &Params) -> Res {
    search_of(w, call, "customer", p)
}

fn cbt_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let cus = call.param("id").to_string();
    get_or_404(w, "customer", &cus, "customer")?;
    let amount = p.req_int("amount")?;
    let cur = currency(p)?;
    let mut t = balance_transaction_object(w, &cus, amount, &cur, "adjustment", None);
    p.copy(&mut t, &["description"]);
    p.metadata_into(&mut t)?;
    Ok(move_balance(w, call, t))
}

/// A customer balance transaction moving `cus`'s balance by `amount`, not yet kept.
pub(crate) fn balance_transaction_object(w: &mut World, cus: &str, amount: i64, cur: &str, kind: &str, invoice: Option<&str>) -> Value {
    let id = w.new_id("cbtxn");
    let old = w.get(cus).map_or(0, |c| c["balance"].as_i64().unwrap_or(0));
    json!({
        "id": id, "object": "customer_balance_transaction", "amount": amount, "created": w.now(),
        "credit_note": null, "currency": cur, "customer": cus, "description": null,
        "ending_balance": old + amount, "invoice": invoice, "livemode": false, "metadata": {}, "type": kind,
    })
}

/// Keep balance transaction `t` and move its customer's balance to its ending balance.
pub(crate) fn move_balance(w: &mut World, call: &mut Call, t: Value) -> Value {
    let t = w.insert(Some(call), t);
    let (cus, cur, balance) = (t["customer"].as_str().unwrap_or_default().to_string(), t["currency"].clone(), t["ending_balance"].clone());
    modify_emit(w, call, &cus, "customer.updated", |c| {
        c["balance"] = balance;
        if c["currency"].is_null() {
            c["currency"] = cur;
        }
    });
    t
}

fn cbt_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let cus = call.param("id").to_string();
    get_or_404(w, "customer", &cus, "customer")?;
    list_of(w, call, "customer_balance_transaction", p, |t| t["customer"] == cus.as_str())
}

// ---------------------------------------------------------------------------------------
// Test cards.

/// How a test card behaves when charged.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Behaviour {
    Succeed,
    Decline(&'static str, &'static str),
    ThreeDS,
    Dispute,
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
    // Charges succeed; a refund of one stays `pending` (Stripe: "Asynchronous refund").
    ("4000000000007726", "visa", "pendingRefund", Behaviour::Succeed),
];

/// Whether a refund of a charge paid with `details` (its `payment_method_details`) starts
/// `pending` rather than `succeeded`: bank debits, whose refunds travel back by bank
/// transfer over days, and the test card Stripe keeps for asynchronous refunds.
fn refund_starts_pending(details: &Value) -> bool {
    match details["type"].as_str() {
        Some("us_bank_account") => true,
        Some("card") => details["card"]["last4"] == "7726" && details["card"]["brand"] == "visa",
        _ => false,
    }
}

/// The test card a test token or payment method names: `pm_card_chargeDeclined` and the
/// `pm_card_visa_chargeDeclined…` forms Stripe's tables give for visa cards alike.
fn test_card(name: &str) -> Option<&'static (&'static str, &'static str, &'static str, Behaviour)> {
    let find = |n: &str| CARDS.iter().find(|c| c.2.eq_ignore_ascii_case(n));
    find(name).or_else(|| name.strip_prefix("visa_").and_then(find).filter(|c| c.1 == "visa"))
}

fn decline_message(code: &str, decline: &str) -> &'static str {
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

fn card_pm(w: &mut World, number: &str, brand: &str, exp_month: i64, exp_year: i64) -> Value {
    let id = w.new_id("pm");
    serde_json::to_value(CardPaymentMethod::new(id, number, brand, exp_month, exp_year, w.now())).expect("a payment method serialises")
}

/// A new card payment method for a test card, stored and recorded; its id.
fn insert_card_pm(w: &mut World, call: &mut Call, number: &str, brand: &str) -> String {
    let id = w.new_id("pm");
    let c = Cut::of(&CardPaymentMethod::new(id.clone(), number, brand, 12, 2034, w.now()));
    w.insert_cut(Some(call), "payment_method", &id, &c);
    id
}

fn crypto_pm(w: &mut World) -> Value {
    let id = w.new_id("pm");
    json!({
        "id": id, "object": "payment_method", "allow_redisplay": "unspecified",
        "billing_details": {"address": {"city": null, "country": null, "line1": null, "line2": null, "postal_code": null, "state": null}, "email": null, "name": null, "phone": null},
        "created": w.now(), "crypto": {}, "customer": null, "livemode": false, "metadata": {}, "type": "crypto",
    })
}

fn luhn(n: &str) -> bool {
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
fn pm_from_data(w: &mut World, data: &Value, prefix: &str) -> Result<Value, StripeError> {
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
fn set_up(w: &World, pm_id: &str) -> bool {
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
    // `id` is the path's own object (a 404); any other name is a parameter (a 400).
    Err(if param == "id" { no_such("PaymentMethod", id, param) } else { no_such_ref("PaymentMethod", id, param) })
}

// ---------------------------------------------------------------------------------------
// PaymentMethods.

fn pm_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let mut data = Value::Object(p.0.clone());
    if data["type"].is_null() {
        return Err(missing("type"));
    }
    if let Some(tok) = p.get("card").and_then(|c| c.as_str()).map(str::to_string) {
        data["card"] = json!({"token": tok});
    }
    let mut pm = pm_from_data(w, &data, "")?;
    p.metadata_into(&mut pm)?;
    let pm = w.insert(Some(call), pm);
    Ok(pm)
}

fn pm_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    if id.starts_with("pm_card_") {
        let id = resolve_pm(w, call, &id, "id")?;
        return Ok(w.get(&id).unwrap());
    }
    get_or_404(w, "payment_method", &id, "PaymentMethod")
}

fn pm_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let mut probe = get_or_404(w, "payment_method", &id, "PaymentMethod")?;
    p.metadata_into(&mut probe)?;
    let pm = modify_emit(w, call, &id, "payment_method.updated", |pm| {
        pm["metadata"] = probe["metadata"].clone();
        if let Some(bd) = p.get("billing_details").and_then(Value::as_object) {
            for (k, v) in bd {
                pm["billing_details"][k] = v.clone();
            }
        }
        if let Some(card) = p.get("card").and_then(Value::as_object) {
            for k in ["exp_month", "exp_year"] {
                if let Some(n) = card.get(k).and_then(Value::as_str).and_then(|s| s.parse::<i64>().ok()) {
                    pm["card"][k] = json!(n);
                }
            }
        }
    });
    Ok(pm)
}

pub(crate) fn attach(w: &mut World, call: &mut Call, pm: &str, cus: &str) -> Res {
    let id = resolve_pm(w, call, pm, "payment_method")?;
    get_or_404(w, "customer", cus, "customer")?;
    let cur = w.get(&id).unwrap()["customer"].clone();
    if !cur.is_null() && cur != cus {
        return Err(invalid("The payment method you provided has already been attached to a customer.").code("payment_method_unexpected_state").param("payment_method"));
    }
    let pm_obj = w.get(&id).unwrap();
    if pm_obj["type"] == "card" && pm_obj["card"]["last4"] != "0341" {
        if let Behaviour::Decline(code, decline) = behaviour_of(&pm_obj) {
            let mut e = StripeError::new(402, "card_error", decline_message(code, decline)).code(code).param("");
            e.param = None;
            e.decline_code = Some(decline.to_string());
            return Err(e);
        }
    }
    let pm = w.modify(call, &id, |pm| pm["customer"] = json!(cus));
    emit(w, call, "payment_method.attached", &pm, None);
    Ok(pm)
}

fn pm_attach(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let cus = p.req_str("customer")?.to_string();
    attach(w, call, &id, &cus)
}

fn pm_detach(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    let pm = get_or_404(w, "payment_method", &id, "PaymentMethod")?;
    if pm["customer"].is_null() {
        return Err(invalid("The payment method you provided is not attached to a customer so detachment is impossible.").code("payment_method_unexpected_state").param("payment_method"));
    }
    let cus = pm["customer"].as_str().unwrap_or_default().to_string();
    let pm = w.modify(call, &id, |pm| pm["customer"] = Value::Null);
    if w.get(&cus).is_some_and(|c| c["invoice_settings"]["default_payment_method"] == id.as_str()) {
        w.modify(call, &cus, |c| c["invoice_settings"]["default_payment_method"] = Value::Null);
    }
    emit(w, call, "payment_method.detached", &pm, Some(json!({"customer": cus})));
    Ok(pm)
}

fn pm_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let cus = p.str("customer").map(str::to_string);
    let ty = p.str("type").map(str::to_string);
    if let Some(c) = &cus {
        get_or_404(w, "customer", c, "customer")?;
    }
    list_of(w, call, "payment_method", p, |pm| {
        cus.as_ref().is_none_or(|c| pm["customer"] == c.as_str()) && ty.as_ref().is_none_or(|t| pm["type"] == t.as_str())
    })
}

fn customer_pm_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let cus = call.param("id").to_string();
    get_or_404(w, "customer", &cus, "customer")?;
    let ty = p.str("type").map(str::to_string);
    list_of(w, call, "payment_method", p, |pm| pm["customer"] == cus.as_str() && ty.as_ref().is_none_or(|t| pm["type"] == t.as_str()))
}

// ---------------------------------------------------------------------------------------
// PaymentIntents.

pub fn pi_obj(id: &str, amount: i64, cur: &str, created: i64) -> Value {
    PaymentIntent::new(id, amount, cur, created).value()
}

fn pi_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    Ok(crate::core::raw(create_pi(w, call, p)?))
}

/// `POST /v1/payment_intents`: the new (and with `confirm`, confirmed) PaymentIntent's text.
fn create_pi(w: &mut World, call: &mut Call, p: &Params) -> Result<String, StripeError> {
    let amount = p.req_int("amount")?;
    let cur = currency(p)?;
    check_amount(amount, &cur)?;
    let capture = p.str("capture_method").unwrap_or("automatic");
    if !["automatic", "automatic_async", "manual"].contains(&capture) {
        return Err(invalid(format!("Invalid capture_method: must be one of automatic, automatic_async, or manual")).param("capture_method"));
    }
    let conf_method = p.str("confirmation_method").unwrap_or("automatic");
    if !["automatic", "manual"].contains(&conf_method) {
        return Err(invalid("Invalid confirmation_method: must be one of automatic or manual").param("confirmation_method"));
    }
    let mut types = p.strs("payment_method_types");
    if types.is_empty() {
        if let Some(t) = p.get("payment_method_data").and_then(|d| d["type"].as_str()) {
            types.push(t.to_string());
        } else {
            types.push("card".into());
        }
    }
    for t in &types {
        if t != "card" && t != "crypto" && t != "link" && t != "us_bank_account" {
            return Err(invalid(format!("The payment method type provided: {t} is invalid. Please ensure the provided type is activated in your dashboard (https://dashboard.stripe.com/account/payments/settings) and your account is enabled for any preview features that you are trying to use.")).param("payment_method_types"));
        }
    }
    if types.iter().any(|t| t == "crypto") && cur != "usd" {
        return Err(invalid(format!("The currency provided ({cur}) is invalid for one or more payment method types on this PaymentIntent. The payment method type `crypto` supports: usd.")).param("currency"));
    }
    if let Some(c) = p.str("customer") {
        if !w.is_kind("customer", c) {
            return Err(no_such_ref("customer", c, "customer"));
        }
    }
    let id = w.new_id("pi");
    let mut pi = PaymentIntent::new(&id, amount, &cur, w.now());
    pi.capture_method = capture.to_string();
    pi.confirmation_method = conf_method.to_string();
    pi.payment_method_types = Value::Array(types.into_iter().map(Value::String).collect());
    for (name, field) in [
        ("customer", &mut pi.customer),
        ("description", &mut pi.description),
        ("receipt_email", &mut pi.receipt_email),
        ("setup_future_usage", &mut pi.setup_future_usage),
        ("shipping", &mut pi.shipping),
        ("statement_descriptor", &mut pi.statement_descriptor),
        ("statement_descriptor_suffix", &mut pi.statement_descriptor_suffix),
        ("transfer_group", &mut pi.transfer_group),
        ("payment_method_options", &mut pi.payment_method_options),
    ] {
        p.copy_into(name, field);
    }
    pi.automatic_payment_methods = automatic_payment_methods(p)?;
    p.metadata_of(&mut pi.metadata)?;
    let pm = match p.str("payment_method") {
        Some(pm) => Some(resolve_pm(w, call, pm, "payment_method")?),
        None => match p.get("payment_method_data") {
            Some(d) => {
                let pm = pm_from_data(w, d, "payment_method_data[")?;
                let pm = w.insert(Some(call), pm);
                Some(pm["id"].as_str().unwrap().to_string())
            }
            None => None,
        },
    };
    if let Some(pm) = pm {
        pi.payment_method = Value::String(pm);
        pi.status = "requires_confirmation".into();
    }
    let c = pi.cut();
    w.insert_cut(Some(call), "payment_intent", &id, &c);
    emit_current(w, call, "payment_intent.created", &id, None);
    if p.bool("confirm")? == Some(true) {
        return confirm_with(w, call, &id, pi, c, p);
    }
    Ok(c.text)
}

fn pi_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    get_or_404(w, "payment_intent", &id, "payment_intent")
}

fn pi_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let cus = p.str("customer").map(str::to_string);
    list_of(w, call, "payment_intent", p, |o| cus.as_ref().is_none_or(|c| o["customer"] == c.as_str()))
}

fn pi_search(w: &mut World, call: &mut Call, p: &Params) -> Res {
    search_of(w, call, "payment_intent", p)
}

fn unexpected_state(pi: &Value, action: &str) -> StripeError {
    let status = pi["status"].as_str().unwrap_or("");
    invalid(format!("This PaymentIntent's {action} could not be performed because it has a status of {status}."))
        .code("payment_intent_unexpected_state")
        .with("payment_intent", pi.clone())
}

fn pi_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let pi = get_or_404(w, "payment_intent", &id, "payment_intent")?;
    let status = pi["status"].as_str().unwrap_or("").to_string();
    if ["succeeded", "canceled", "processing"].contains(&status.as_str()) && (p.has("amount") || p.has("currency") || p.has("payment_method")) {
        return Err(invalid(format!("You cannot update this PaymentIntent because it has a status of {status}. You can only update a PaymentIntent with one of the following statuses: requires_payment_method, requires_confirmation, requires_action.")).code("payment_intent_unexpected_state"));
    }
    // An authorized PaymentIntent keeps what was authorized: its amount (and so
    // `amount_capturable`) changes only by capture or incremental authorization.
    if status == "requires_capture" {
        if let Some(field) = ["amount", "currency", "payment_method", "payment_method_types"].into_iter().find(|f| p.has(f)) {
            return Err(invalid(format!(
                "This PaymentIntent's {field} could not be updated because it has a status of requires_capture. You may only update the {field} of a PaymentIntent with one of the following statuses: requires_payment_method, requires_confirmation, requires_action."
            ))
            .code("payment_intent_unexpected_state")
            .param(field));
        }
    }
    let amount = p.int("amount")?;
    let cur = if p.has("currency") { Some(currency(p)?) } else { None };
    if amount.is_some() || cur.is_some() {
        let a = amount.unwrap_or_else(|| pi["amount"].as_i64().unwrap_or(0));
        check_amount(a, cur.as_deref().unwrap_or_else(|| pi["currency"].as_str().unwrap_or("usd")))?;
    }
    let pm = match p.str("payment_method") {
        Some(pm) => Some(resolve_pm(w, call, pm, "payment_method")?),
        None => None,
    };
    let mut probe = pi.clone();
    p.metadata_into(&mut probe)?;
    let pi = w.modify(call, &id, |pi| {
        if let Some(a) = amount {
            pi["amount"] = json!(a);
        }
        if let Some(c) = cur {
            pi["currency"] = json!(c);
        }
        p.copy(pi, &["customer", "description", "receipt_email", "setup_future_usage", "shipping", "statement_descriptor"]);
        pi["metadata"] = probe["metadata"].clone();
        if let Some(pm) = pm {
            pi["payment_method"] = json!(pm);
            if pi["status"] == "requires_payment_method" {
                pi["status"] = json!("requires_confirmation");
            }
        }
    });
    Ok(pi)
}

fn pi_confirm(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    if !w.is_kind("payment_intent", &id) {
        return Err(no_such("payment_intent", &id, "id"));
    }
    Ok(crate::core::raw(confirm_payment_intent(w, call, &id, p)?))
}

/// Confirm the stored PaymentIntent `id` with `p`, as `POST /v1/payment_intents/{id}/confirm`
/// does (an invoice's collection attempt goes through here too); its new text.
pub fn confirm_payment_intent(w: &mut World, call: &mut Call, id: &str, p: &Params) -> Result<String, StripeError> {
    let pi = PaymentIntent::parse(&w.render(id).expect("a stored PaymentIntent"));
    let c = pi.cut();
    confirm_with(w, call, id, pi, c, p)
}

/// The PaymentIntent an invoice is finalized with: the amount due, awaiting a payment method,
/// `invoice` naming it. Paying the invoice confirms it; confirming it pays the invoice.
pub fn invoice_payment_intent(w: &mut World, call: &mut Call, invoice: &str, amount: i64, cur: &str, customer: &Value, description: &str) -> String {
    let id = w.new_id("pi");
    let mut pi = PaymentIntent::new(&id, amount, cur, w.now());
    pi.customer = customer.clone();
    pi.description = Value::String(description.to_string());
    pi.invoice = Value::String(invoice.to_string());
    pi.payment_method_types = json!(["card"]);
    w.insert_cut(Some(call), "payment_intent", &id, &pi.cut());
    emit_current(w, call, "payment_intent.created", &id, None);
    id
}

/// The card error a payment with the stored card `pm_id` would meet off session, if any: what
/// a charge attempt would answer, without attempting it.
pub fn off_session_refusal(w: &World, pm_id: &str) -> Option<StripeError> {
    let pm = w.get(pm_id)?;
    let (code, decline, message) = match behaviour_of(&pm) {
        Behaviour::Decline(code, decline) => (code, decline, decline_message(code, decline)),
        Behaviour::ThreeDS if !set_up(w, pm_id) => ("authentication_required", "authentication_required", "Your card was declined. This transaction requires authentication."),
        _ => return None,
    };
    let mut e = StripeError::new(402, "card_error", message).code(code).with("payment_method", pm);
    e.decline_code = Some(decline.to_string());
    Some(e)
}

/// Confirm the PaymentIntent `pi` (stored now as `text`): attach the payment method given,
/// then run it by its behaviour. Answers the PaymentIntent's text.
fn confirm_with(w: &mut World, call: &mut Call, id: &str, mut pi: PaymentIntent, before: Cut, p: &Params) -> Result<String, StripeError> {
    let status = pi.status.clone();
    if !["requires_payment_method", "requires_confirmation", "requires_action"].contains(&status.as_str()) {
        return Err(invalid(format!(
            "This PaymentIntent's payment_method could not be updated because it has a status of {status}. You may only update the payment_method of a PaymentIntent with one of the following statuses: requires_payment_method, requires_confirmation, requires_action."
        ))
        .code("payment_intent_unexpected_state")
        .with("payment_intent", pi.value()));
    }
    let mut pm_id = pi.payment_method.as_str().map(str::to_string);
    if let Some(pm) = p.str("payment_method") {
        if p.str("payment_method") != pi.payment_method.as_str() {
            pm_id = Some(resolve_pm(w, call, pm, "payment_method")?);
        }
    } else if let Some(d) = p.get("payment_method_data").filter(|_| pm_id.is_none() || status != "requires_action") {
        if !(pi.payment_method.is_string() && p.has("payment_method_data") && status == "requires_confirmation" && d == &json!(null)) {
            let pm = pm_from_data(w, d, "payment_method_data[")?;
            let pm = w.insert(Some(call), pm);
            pm_id = Some(pm["id"].as_str().unwrap().to_string());
        }
    }
    let types: Vec<String> = pi.payment_method_types.as_array().map(|a| a.iter().filter_map(|v| v.as_str().map(String::from)).collect()).unwrap_or_default();
    if pm_id.is_none() && types == ["crypto"] {
        // A crypto-only PaymentIntent confirms into deposit mode without a card.
        let pm = crypto_pm(w);
        let pm = w.insert(Some(call), pm);
        pm_id = Some(pm["id"].as_str().unwrap().to_string());
    }
    let Some(pm_id) = pm_id else {
        return Err(invalid("You cannot confirm this PaymentIntent because it's missing a payment method. You can either update the PaymentIntent with a payment method and then confirm it again, or confirm it again directly with a payment method.")
            .code("payment_intent_unexpected_state")
            .with("payment_intent", pi.value()));
    };
    let pm: PmView = serde_json::from_str(&w.render(&pm_id).unwrap()).expect("a stored payment method is an object");
    let pm_type = pm.ty.clone().unwrap_or_else(|| "card".into());
    if !types.contains(&pm_type) && !pi.automatic_payment_methods["enabled"].as_bool().unwrap_or(false) {
        return Err(invalid(format!("The PaymentMethod provided ({pm_type}) is not allowed for this PaymentIntent. Please attach a PaymentMethod of one of the following types: {}. Alternatively, update the allowed payment_method_types for this PaymentIntent to include \"{pm_type}\".", types.join(", "))).param("payment_method"));
    }
    if let (Some(pc), Some(ic)) = (pm.customer.as_str(), pi.customer.as_str()) {
        if pc != ic {
            return Err(invalid(format!("The provided PaymentMethod belongs to a different Customer ({pc}) than this PaymentIntent ({ic}).")).param("payment_method"));
        }
    }
    let off_session = p.bool("off_session")?.unwrap_or(false);
    let return_url = p.str("return_url").map(str::to_string);
    // Methods resolved above may have been stored since `pi` was read, but `pi` itself has not.
    let pmo = p.get("payment_method_options");
    let after = if pi.payment_method.as_str() == Some(pm_id.as_str()) && pi.last_payment_error.is_null() && pmo.is_none() {
        before
    } else {
        pi.payment_method = Value::String(pm_id.clone());
        pi.last_payment_error = Value::Null;
        if let Some(md) = pmo {
            pi.payment_method_options = md.clone();
        }
        let after = pi.cut();
        w.update_cut(call, "payment_intent", id, &before, &after);
        after
    };
    if pm_type == "crypto" {
        let pi = w.modify(call, id, |pi| {
            pi["status"] = json!("requires_action");
            pi["next_action"] = crypto_next_action(pi["id"].as_str().unwrap_or(""), pi["amount"].as_i64().unwrap_or(0));
        });
        emit(w, call, "payment_intent.requires_action", &pi, None);
        return Ok(pi.to_string());
    }
    let (last4, brand) = pm.card.as_ref().map_or(("", ""), |c| (c.last4.as_str().unwrap_or(""), c.brand.as_str().unwrap_or("")));
    // The customer completed 3-D Secure for this method on the test page: this confirmation
    // (theirs, or the server's for manual confirmation) charges it without asking again.
    let authenticated = w.0.authenticated.remove(&crate::three_ds::authenticated_key(id, &pm_id));
    match behaviour(last4, brand) {
        // Confirming again while the customer has not authenticated (from the server, in
        // `requires_action`) starts a new attempt that waits for them too: 3-D Secure happens
        // on its page (`next_action`), never by confirming twice.
        Behaviour::ThreeDS if !authenticated && !(off_session && last4 == "3155" && set_up(w, &pm_id)) => {
            // Billing's own attempt on an invoice waits for the customer to authenticate
            // (Stripe's `requires_action` outcome); any other payment off session is declined.
            let invoice = pi.invoice.as_str().map(str::to_string);
            if off_session && invoice.is_none() {
                let pm = w.get(&pm_id).unwrap();
                return fail_payment(w, call, id, &pm, "authentication_required", "authentication_required", "Your card was declined. This transaction requires authentication.").map(|v| v.to_string());
            }
            let source = w.new_id("payatt");
            let secret = pi.client_secret.as_str().unwrap_or("").to_string();
            let next_action = crate::three_ds::next_action(&call.req, &w.account_id, "payment_intent", id, &secret, &source, return_url.as_deref());
            let pi = w.modify(call, id, |pi| {
                pi["status"] = json!("requires_action");
                pi["next_action"] = next_action;
            });
            emit(w, call, "payment_intent.requires_action", &pi, None);
            if let Some(inv) = invoice {
                crate::billing::invoice_payment_action_required(w, call, &inv);
            }
            Ok(pi.to_string())
        }
        Behaviour::Decline(code, decline) => {
            let pm = w.get(&pm_id).unwrap();
            fail_payment(w, call, id, &pm, code, decline, decline_message(code, decline)).map(|v| v.to_string())
        }
        b => {
            let mut details = match &pm.card {
                Some(c) => serde_json::to_string(&c.details()).expect("card details serialise"),
                None => json!({"type": "card", "card": card_details(&Value::Null)}).to_string(),
            };
            if authenticated {
                let mut d: Value = parse(&details);
                d["card"]["three_d_secure"] = crate::three_ds::authenticated_details();
                details = d.to_string();
            }
            succeed_with(w, call, id, pi, after, &details, b == Behaviour::Dispute)
        }
    }
}

fn card_details(pm: &Value) -> Value {
    let c = &pm["card"];
    json!({
        "amount_authorized": null, "brand": c["brand"], "checks": c["checks"], "country": c["country"],
        "exp_month": c["exp_month"], "exp_year": c["exp_year"], "fingerprint": c["fingerprint"],
        "funding": c["funding"], "last4": c["last4"], "network": c["brand"], "three_d_secure": null, "wallet": null,
    })
}

pub fn crypto_next_action(pi_id: &str, amount: i64) -> Value {
    let addr = deposit_address(pi_id);
    json!({
        "type": "crypto_display_details",
        "crypto_display_details": {
            "deposit_addresses": {
                "base": {"address": addr, "supported_tokens": [{"token_currency": "usdc", "token_contract_address": "0x036CbD53842c5426634e7929540c2f12f4BBAaD6"}]},
            },
            "amount": amount,
        }
    })
}

/// A deterministic 0x address for a PaymentIntent's crypto deposits.
pub fn deposit_address(pi_id: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut out = String::from("0x");
    for round in 0..3u64 {
        for b in pi_id.bytes() {
            h ^= b as u64 ^ round;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        out.push_str(&format!("{h:016x}"));
    }
    out.truncate(42);
    out
}

/// A charge for a PaymentIntent's attempt.
fn charge_obj(w: &mut World, pi: &Value, details: Value, status: &str, captured: bool) -> Value {
    let id = w.new_id("ch");
    let details = details.to_string();
    let from = ChargeFrom {
        amount: pi["amount"].as_i64().unwrap_or(0),
        currency: &pi["currency"],
        customer: &pi["customer"],
        description: &pi["description"],
        metadata: &pi["metadata"],
        receipt_email: &pi["receipt_email"],
        shipping: &pi["shipping"],
        payment_intent: &pi["id"],
        payment_method: &pi["payment_method"],
    };
    serde_json::to_value(Charge::new(id, &from, &details, status, captured, w.now())).expect("a charge serialises")
}

pub fn fee_for(amount: i64) -> i64 {
    (amount * 29 + 500) / 1000 + 30
}

/// A balance transaction for money moving (charges positive, refunds negative).
pub fn balance_txn(w: &mut World, call: &mut Call, amount: i64, fee: i64, cur: &str, source: &str, ty: &str, description: Option<&str>) -> String {
    let id = w.new_id("txn");
    let now = w.now();
    let fee_details = if fee != 0 {
        vec![FeeDetail { amount: fee, application: Value::Null, currency: cur, description: "Stripe processing fees", ty: "stripe_fee" }]
    } else {
        Vec::new()
    };
    let t = BalanceTransaction {
        id: &id,
        object: "balance_transaction",
        amount,
        available_on: now,
        created: now,
        currency: cur,
        description,
        exchange_rate: Value::Null,
        fee,
        fee_details,
        net: amount - fee,
        reporting_category: match ty {
            "payment" | "charge" => "charge",
            "payout" => "payout",
            "refund" => "refund",
            "adjustment" => "dispute",
            other => other,
        },
        source,
        status: "available",
        ty,
    };
    w.insert_cut(Some(call), "balance_transaction", &id, &Cut::of(&t));
    id
}

fn succeed(w: &mut World, call: &mut Call, id: &str, details: Value, dispute: bool) -> Res {
    let pi = PaymentIntent::parse(&w.render(id).unwrap());
    let c = pi.cut();
    succeed_with(w, call, id, pi, c, &details.to_string(), dispute).map(|t| parse(&t))
}

/// [`succeed`] for the PaymentIntent `pi` (stored now as `text`), with the charge's
/// `payment_method_details` as compact JSON; the PaymentIntent's new text.
fn succeed_with(w: &mut World, call: &mut Call, id: &str, mut pi: PaymentIntent, before: Cut, details: &str, dispute: bool) -> Result<String, StripeError> {
    let manual = pi.capture_method == "manual";
    let amount = pi.amount;
    let cur = pi.currency.clone();
    let ch_id = w.new_id("ch");
    let mut txn = None;
    if !manual {
        txn = Some(balance_txn(w, call, amount, fee_for(amount), &cur, &ch_id, "charge", pi.description.as_str()));
    }
    {
        let currency = Value::String(cur.clone());
        let pi_id = Value::String(pi.id.clone());
        let from = ChargeFrom {
            amount,
            currency: &currency,
            customer: &pi.customer,
            description: &pi.description,
            metadata: &pi.metadata,
            receipt_email: &pi.receipt_email,
            shipping: &pi.shipping,
            payment_intent: &pi_id,
            payment_method: &pi.payment_method,
        };
        let mut ch = Charge::new(ch_id.clone(), &from, details, "succeeded", !manual, w.now());
        ch.balance_transaction = txn;
        w.insert_cut(Some(call), "charge", &ch_id, &Cut::of(&ch));
    }
    pi.latest_charge = Value::String(ch_id.clone());
    pi.next_action = Value::Null;
    if manual {
        pi.status = "requires_capture".into();
        pi.amount_capturable = amount;
    } else {
        pi.status = "succeeded".into();
        pi.amount_received = amount;
    }
    let after = pi.cut();
    w.update_cut(call, "payment_intent", id, &before, &after);
    emit_current(w, call, "charge.succeeded", &ch_id, None);
    if manual {
        emit_current(w, call, "payment_intent.amount_capturable_updated", id, None);
    } else {
        emit_current(w, call, "payment_intent.succeeded", id, None);
    }
    // A payment set up for future usage saves its payment method to the customer.
    if let (Some(cus), Some(pm)) = (pi.customer.as_str(), pi.payment_method.as_str()) {
        if ["off_session", "on_session"].contains(&pi.setup_future_usage.as_str().unwrap_or("")) && w.get(pm).is_some_and(|o| o["customer"].is_null()) {
            let pm_obj = w.modify(call, pm, |o| o["customer"] = json!(cus));
            emit(w, call, "payment_method.attached", &pm_obj, None);
        }
    }
    if dispute && !manual {
        open_dispute(w, call, &ch_id);
    }
    if let (false, Some(inv)) = (manual, pi.invoice.as_str()) {
        crate::billing::invoice_payment_succeeded(w, call, inv, &ch_id, pi.payment_method.as_str());
        // The invoice's own changes do not touch the PaymentIntent: its text stands.
    }
    Ok(after.text)
}

fn fail_payment(w: &mut World, call: &mut Call, id: &str, pm: &Value, code: &str, decline: &str, message: &str) -> Res {
    let pi = w.get(id).unwrap();
    let details = json!({"type": "card", "card": card_details(pm)});
    let mut ch = charge_obj(w, &pi, details, "failed", false);
    ch["failure_code"] = json!(code);
    ch["failure_message"] = json!(message);
    ch["outcome"] = json!({"network_status": "declined_by_network", "reason": decline, "risk_level": "normal", "risk_score": 20, "seller_message": "The bank did not return any further details with this decline.", "type": "issuer_declined"});
    let ch = w.insert(Some(call), ch);
    let ch_id = ch["id"].as_str().unwrap().to_string();
    let err = json!({
        "charge": ch_id, "code": code, "decline_code": decline,
        "doc_url": format!("https://stripe.com/docs/error-codes/{}", code.replace('_', "-")),
        "message": message, "payment_method": pm, "type": "card_error",
    });
    let pi = w.modify(call, id, |pi| {
        pi["status"] = json!("requires_payment_method");
        pi["last_payment_error"] = err;
        pi["latest_charge"] = json!(ch_id);
        pi["payment_method"] = Value::Null;
        pi["next_action"] = Value::Null;
    });
    emit(w, call, "charge.failed", &ch, None);
    emit(w, call, "payment_intent.payment_failed", &pi, None);
    if let Some(inv) = pi["invoice"].as_str() {
        crate::billing::invoice_payment_failed(w, call, inv);
    }
    let mut e = StripeError::new(402, "card_error", message).code(code).with("charge", json!(ch_id)).with("payment_intent", pi).with("payment_method", pm.clone());
    e.decline_code = Some(decline.to_string());
    Err(e)
}

fn open_dispute(w: &mut World, call: &mut Call, ch_id: &str) {
    let ch = w.get(ch_id).unwrap();
    let amount = ch["amount"].as_i64().unwrap_or(0);
    let cur = ch["currency"].as_str().unwrap_or("usd").to_string();
    let id = w.new_id("dp");
    let txn = balance_txn(w, call, -amount, 1500, &cur, &id, "adjustment", Some(&format!("Chargeback withdrawal for {ch_id}")));
    let txn_obj = w.get(&txn).unwrap();
    let now = w.now();
    let dp = json!({
        "id": id, "object": "dispute", "amount": amount, "balance_transactions": [txn_obj], "charge": ch_id,
        "created": now, "currency": cur,
        "evidence": {"access_activity_log": null, "billing_address": null, "cancellation_policy": null, "cancellation_policy_disclosure": null, "cancellation_rebuttal": null, "customer_communication": null, "customer_email_address": null, "customer_name": null, "customer_purchase_ip": null, "customer_signature": null, "duplicate_charge_documentation": null, "duplicate_charge_explanation": null, "duplicate_charge_id": null, "product_description": null, "receipt": null, "refund_policy": null, "refund_policy_disclosure": null, "refund_refusal_explanation": null, "service_date": null, "service_documentation": null, "shipping_address": null, "shipping_carrier": null, "shipping_date": null, "shipping_documentation": null, "shipping_tracking_number": null, "uncategorized_file": null, "uncategorized_text": null},
        "evidence_details": {"due_by": now + 7 * 86400, "has_evidence": false, "past_due": false, "submission_count": 0},
        "is_charge_refundable": false, "livemode": false, "metadata": {}, "payment_intent": ch["payment_intent"],
        "reason": "fraudulent", "status": "needs_response",
    });
    let dp = w.insert(Some(call), dp);
    let ch = w.modify(call, ch_id, |c| c["disputed"] = json!(true));
    emit(w, call, "charge.dispute.created", &dp, None);
    let _ = ch;
}

fn pi_capture(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let pi = get_or_404(w, "payment_intent", &id, "payment_intent")?;
    capture_pi(w, call, &id, pi, p.int("amount_to_capture")?, p)
}

fn capture_pi(w: &mut World, call: &mut Call, id: &str, pi: Value, amount: Option<i64>, p: &Params) -> Res {
    if pi["status"] != "requires_capture" {
        return Err(unexpected_state(&pi, "capture"));
    }
    let capturable = pi["amount_capturable"].as_i64().unwrap_or(0);
    let amount = amount.unwrap_or(capturable);
    if amount > capturable {
        return Err(invalid(format!("The amount to capture ({amount}) is greater than the amount capturable ({capturable}).")).code("amount_too_large").param("amount_to_capture"));
    }
    if amount < 1 {
        return Err(invalid("This value must be greater than or equal to 1.").param("amount_to_capture"));
    }
    let ch_id = pi["latest_charge"].as_str().unwrap_or_default().to_string();
    let cur = pi["currency"].as_str().unwrap_or("usd").to_string();
    let txn = balance_txn(w, call, amount, fee_for(amount), &cur, &ch_id, "charge", pi["description"].as_str());
    let released = capturable - amount;
    let ch = w.modify(call, &ch_id, |c| {
        c["captured"] = json!(true);
        c["amount_captured"] = json!(amount);
        c["balance_transaction"] = json!(txn);
        if released > 0 {
            c["amount_refunded"] = json!(released);
        }
    });
    let pi = w.modify(call, id, |pi| {
        pi["status"] = json!("succeeded");
        pi["amount_received"] = json!(amount);
        pi["amount_capturable"] = json!(0);
        p.copy(pi, &["statement_descriptor", "statement_descriptor_suffix"]);
        if let Some(md) = p.get("metadata").and_then(Value::as_object) {
            for (k, v) in md {
                pi["metadata"][k] = v.clone();
            }
        }
    });
    emit(w, call, "charge.captured", &ch, Some(json!({"amount_captured": 0, "captured": false})));
    emit(w, call, "payment_intent.succeeded", &pi, None);
    if let Some(inv) = pi["invoice"].as_str() {
        crate::billing::invoice_payment_succeeded(w, call, inv, &ch_id, pi["payment_method"].as_str());
    }
    Ok(pi)
}

fn pi_cancel(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let pi = get_or_404(w, "payment_intent", &id, "payment_intent")?;
    let status = pi["status"].as_str().unwrap_or("");
    if !["requires_payment_method", "requires_capture", "requires_confirmation", "requires_action", "processing"].contains(&status) {
        return Err(invalid(format!("You cannot cancel this PaymentIntent because it has a status of {status}. Only a PaymentIntent with one of the following statuses may be canceled: requires_payment_method, requires_capture, requires_confirmation, requires_action, processing.")).code("payment_intent_unexpected_state").with("payment_intent", pi));
    }
    if pi["invoice"].is_string() {
        return Err(invalid("You cannot cancel this PaymentIntent because it was created by an invoice. Void the invoice instead.").code("payment_intent_unexpected_state").with("payment_intent", pi));
    }
    let reason = p.str("cancellation_reason").map(str::to_string);
    if let Some(r) = &reason {
        if !["duplicate", "fraudulent", "requested_by_customer", "abandoned"].contains(&r.as_str()) {
            return Err(invalid("Invalid cancellation_reason: must be one of duplicate, fraudulent, requested_by_customer, or abandoned").param("cancellation_reason"));
        }
    }
    if status == "requires_capture" {
        // Releasing an authorization refunds the held amount on the charge.
        if let Some(ch) = pi["latest_charge"].as_str() {
            let amount = pi["amount_capturable"].as_i64().unwrap_or(0);
            w.modify(call, ch, |c| {
                c["amount_refunded"] = json!(amount);
                c["refunded"] = json!(true);
            });
        }
    }
    let now = w.now();
    let pi = w.modify(call, &id, |pi| {
        pi["status"] = json!("canceled");
        pi["canceled_at"] = json!(now);
        pi["cancellation_reason"] = reason.map(Value::String).unwrap_or(Value::Null);
        pi["amount_capturable"] = json!(0);
        pi["next_action"] = Value::Null;
    });
    emit(w, call, "payment_intent.canceled", &pi, None);
    Ok(pi)
}

fn pi_increment(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let pi = get_or_404(w, "payment_intent", &id, "payment_intent")?;
    if pi["status"] != "requires_capture" {
        return Err(unexpected_state(&pi, "increment_authorization"));
    }
    let amount = p.req_int("amount")?;
    let old = pi["amount"].as_i64().unwrap_or(0);
    if amount < old {
        return Err(invalid("The amount must be greater than or equal to the current amount.").param("amount"));
    }
    let ch = pi["latest_charge"].as_str().unwrap_or_default().to_string();
    w.modify(call, &ch, |c| c["amount"] = json!(amount));
    let pi = w.modify(call, &id, |pi| {
        pi["amount"] = json!(amount);
        pi["amount_capturable"] = json!(amount);
    });
    emit(w, call, "payment_intent.amount_capturable_updated", &pi, None);
    Ok(pi)
}

/// Test helper: a crypto deposit arrives for a PaymentIntent waiting in deposit mode.
fn pi_crypto_deposit(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let pi = get_or_404(w, "payment_intent", &id, "payment_intent")?;
    settle_crypto(w, call, &id, pi, p.str("transaction_hash"), p.str("buyer_address"), p.str("network").unwrap_or("base"), p.str("token_currency").unwrap_or("usdc"))
}

pub fn settle_crypto(w: &mut World, call: &mut Call, id: &str, pi: Value, tx: Option<&str>, buyer: Option<&str>, network: &str, token: &str) -> Res {
    if pi["status"] != "requires_action" || pi["next_action"]["type"] != "crypto_display_details" {
        return Err(invalid(format!(
            "This PaymentIntent is not awaiting a crypto deposit (status {}). Confirm it with a crypto payment method first.",
            pi["status"].as_str().unwrap_or("")
        ))
        .code("payment_intent_unexpected_state")
        .with("payment_intent", pi));
    }
    let details = json!({"type": "crypto", "crypto": {"buyer_address": buyer, "network": network, "token_currency": token, "transaction_hash": tx}});
    succeed(w, call, id, details, false)
}

// ---------------------------------------------------------------------------------------
// Charges.

fn charge_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let amount = p.req_int("amount")?;
    let cur = currency(p)?;
    check_amount(amount, &cur)?;
    let source = p.str("source").map(str::to_string);
    let cus = p.str("customer").map(str::to_string);
    let pm_id = match (&source, &cus) {
        (Some(s), _) => resolve_pm(w, call, s, "source").map_err(|_| no_such_ref("source", s, "source"))?,
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
            if b == Behaviour::Dispute && capture {
                open_dispute(w, call, &ch_id);
            }
            Ok(w.get(&ch_id).unwrap())
        }
    }
}

fn charge_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
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

fn charge_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let mut probe = get_or_404(w, "charge", &id, "charge")?;
    p.metadata_into(&mut probe)?;
    let c = modify_emit(w, call, &id, "charge.updated", |c| {
        p.copy(c, &["description", "receipt_email", "shipping", "fraud_details", "transfer_group"]);
        c["metadata"] = probe["metadata"].clone();
    });
    Ok(with_refunds(w, c))
}

fn charge_capture(w: &mut World, call: &mut Call, p: &Params) -> Res {
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

fn charge_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let mut out = list_of(w, call, "charge", p, |c| ["customer", "payment_intent", "transfer_group"].iter().all(|f| field_is(c, f, p.str(f))))?;
    if let Some(items) = out["data"].as_array_mut() {
        for c in items.iter_mut() {
            *c = with_refunds(w, std::mem::take(c));
        }
    }
    Ok(out)
}

fn charge_search(w: &mut World, call: &mut Call, p: &Params) -> Res {
    search_of(w, call, "charge", p)
}

// ---------------------------------------------------------------------------------------
// Refunds.

fn refund_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
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
    Ok(re)
}

fn refund_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    get_or_404(w, "refund", &id, "refund")
}

fn refund_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let mut probe = get_or_404(w, "refund", &id, "refund")?;
    p.metadata_into(&mut probe)?;
    Ok(modify_emit(w, call, &id, "refund.updated", |r| r["metadata"] = probe["metadata"].clone()))
}

fn refund_cancel(w: &mut World, call: &mut Call, _p: &Params) -> Res {
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

fn refund_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    list_of(w, call, "refund", p, |r| ["charge", "payment_intent"].iter().all(|f| field_is(r, f, p.str(f))))
}

// ---------------------------------------------------------------------------------------
// Disputes.

fn dispute_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    list_of(w, call, "dispute", p, |d| field_is(d, "charge", p.str("charge")) && field_is(d, "payment_intent", p.str("payment_intent")))
}

fn dispute_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    get_or_404(w, "dispute", &id, "dispute")
}

fn dispute_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let mut d = get_or_404(w, "dispute", &id, "dispute")?;
    if d["status"] != "needs_response" && d["status"] != "warning_needs_response" {
        return Err(invalid(format!("This dispute is already closed or under review (status {}).", d["status"].as_str().unwrap_or(""))).code("dispute_already_closed"));
    }
    p.metadata_into(&mut d)?;
    let submit = p.bool("submit")?.unwrap_or(true);
    let ev = p.get("evidence").cloned();
    let out = modify_emit(w, call, &id, "charge.dispute.updated", |x| {
        x["metadata"] = d["metadata"].clone();
        if let Some(Value::Object(e)) = &ev {
            for (k, v) in e {
                x["evidence"][k] = v.clone();
            }
            x["evidence_details"]["has_evidence"] = json!(true);
        }
        if submit {
            x["status"] = json!("under_review");
            let n = x["evidence_details"]["submission_count"].as_i64().unwrap_or(0);
            x["evidence_details"]["submission_count"] = json!(n + 1);
        }
    });
    // Stripe's test mode decides a submitted dispute by its evidence: `winning_evidence` wins
    // it (the charge's amount and the dispute fee come back), `losing_evidence` loses it.
    let verdict = ev.as_ref().and_then(|e| e["uncategorized_text"].as_str()).filter(|_| submit);
    match verdict {
        Some("winning_evidence") => {
            let (amount, cur, ch) = (out["amount"].as_i64().unwrap_or(0), out["currency"].as_str().unwrap_or("usd").to_string(), out["charge"].as_str().unwrap_or("").to_string());
            let txn = balance_txn(w, call, amount, -1500, &cur, &id, "adjustment", Some(&format!("Chargeback reversal for {ch}")));
            let txn = w.get(&txn).unwrap_or(Value::Null);
            let won = w.modify(call, &id, |x| {
                x["status"] = json!("won");
                if let Some(list) = x["balance_transactions"].as_array_mut() {
                    list.push(txn);
                }
            });
            emit(w, call, "charge.dispute.funds_reinstated", &won, None);
            emit(w, call, "charge.dispute.closed", &won, None);
            Ok(won)
        }
        Some("losing_evidence") => {
            let lost = w.modify(call, &id, |x| x["status"] = json!("lost"));
            emit(w, call, "charge.dispute.closed", &lost, None);
            Ok(lost)
        }
        _ => Ok(out),
    }
}

fn dispute_close(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    let d = get_or_404(w, "dispute", &id, "dispute")?;
    if d["status"] == "lost" || d["status"] == "won" {
        return Err(invalid("This dispute is already closed.").code("dispute_already_closed"));
    }
    let out = w.modify(call, &id, |x| x["status"] = json!("lost"));
    emit(w, call, "charge.dispute.closed", &out, None);
    Ok(out)
}

// ---------------------------------------------------------------------------------------
// Balance and payouts.

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

fn balance_retrieve(w: &mut World, _call: &mut Call, _p: &Params) -> Res {
    let by = balance_of(w);
    let avail: Vec<Value> = by.iter().map(|(c, (a, _))| json!({"amount": a, "currency": c, "source_types": {"card": a}})).collect();
    let pend: Vec<Value> = by.iter().map(|(c, (_, p))| json!({"amount": p, "currency": c, "source_types": {"card": p}})).collect();
    Ok(json!({"object": "balance", "available": avail, "connect_reserved": [], "livemode": false, "pending": pend}))
}

fn bt_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let ty = p.str("type").map(str::to_string);
    let src = p.str("source").map(str::to_string);
    let payout = p.str("payout").map(str::to_string);
    list_of(w, call, "balance_transaction", p, |t| {
        ty.as_ref().is_none_or(|x| t["type"] == x.as_str()) && src.as_ref().is_none_or(|x| t["source"] == x.as_str()) && payout.as_ref().is_none_or(|x| t["source"] == x.as_str())
    })
}

fn bt_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    get_or_404(w, "balance_transaction", &id, "balance transaction")
}

fn payout_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
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

fn payout_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    list_of(w, call, "payout", p, |o| field_is(o, "status", p.str("status")) && field_is(o, "destination", p.str("destination")))
}

fn payout_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    get_or_404(w, "payout", &id, "payout")
}

fn payout_cancel(w: &mut World, call: &mut Call, _p: &Params) -> Res {
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

// ---------------------------------------------------------------------------------------
// Products, prices, coupons.

fn product_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let name = p.req_str("name")?.to_string();
    let id = match p.str("id") {
        Some(id) if w.get(id).is_some() => return Err(invalid(format!("Product already exists.")).code("resource_already_exists").param("id")),
        Some(id) => id.to_string(),
        None => w.new_id("prod"),
    };
    let now = w.now();
    let mut o = json!({
        "id": id, "object": "product", "active": true, "created": now, "default_price": null, "description": null,
        "images": [], "livemode": false, "marketing_features": [], "metadata": {}, "name": name,
        "package_dimensions": null, "shippable": null, "statement_descriptor": null, "tax_code": null,
        "type": "service", "unit_label": null, "updated": now, "url": null,
    });
    p.copy(&mut o, &["description", "images", "statement_descriptor", "unit_label", "url", "tax_code"]);
    if let Some(a) = p.bool("active")? {
        o["active"] = json!(a);
    }
    p.metadata_into(&mut o)?;
    let o = w.insert(Some(call), o);
    emit(w, call, "product.created", &o, None);
    if let Some(dp) = p.get("default_price_data").cloned() {
        let mut data = dp.as_object().cloned().unwrap_or_default();
        data.insert("product".into(), json!(id));
        let price = price_create(w, call, &Params(data))?;
        w.modify(call, &id, |o| o["default_price"] = price["id"].clone());
    }
    Ok(w.get(&id).unwrap())
}

fn product_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let active = p.bool("active")?;
    let shippable = p.bool("shippable")?;
    let ids = p.strs("ids");
    list_of(w, call, "product", p, |o| {
        active.is_none_or(|a| o["active"] == a)
            && shippable.is_none_or(|a| o["shippable"] == a)
            && (ids.is_empty() || ids.iter().any(|id| o["id"] == id.as_str()))
            && field_is(o, "url", p.str("url"))
            && field_is(o, "type", p.str("type"))
    })
}

fn product_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    get_or_404(w, "product", &id, "product")
}

fn product_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let mut probe = get_or_404(w, "product", &id, "product")?;
    p.metadata_into(&mut probe)?;
    let active = p.bool("active")?;
    if let Some(dp) = p.str("default_price") {
        get_or_404(w, "price", dp, "price").map_err(|e| e.param("default_price"))?;
    }
    let now = w.now();
    Ok(modify_emit(w, call, &id, "product.updated", |o| {
        p.copy(o, &["name", "description", "images", "statement_descriptor", "unit_label", "url", "default_price"]);
        o["metadata"] = probe["metadata"].clone();
        if let Some(a) = active {
            o["active"] = json!(a);
        }
        o["updated"] = json!(now);
    }))
}

fn product_delete(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    let o = get_or_404(w, "product", &id, "product")?;
    if w.all("price").any(|pr| pr["product"] == id.as_str()) {
        return Err(invalid("This product cannot be deleted because it has one or more user-created prices.").code("product_has_prices"));
    }
    w.remove(call, &id);
    emit(w, call, "product.deleted", &o, None);
    Ok(json!({"id": id, "object": "product", "deleted": true}))
}

pub(crate) fn price_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let cur = currency(p)?;
    let holder = lookup_key_holder(w, p, None)?;
    let product = match (p.str("product"), p.get("product_data")) {
        (Some(pr), _) => {
            get_or_404(w, "product", pr, "product").map_err(|e| e.param("product"))?;
            pr.to_string()
        }
        (None, Some(pd)) => {
            let data = pd.as_object().cloned().unwrap_or_default();
            product_create(w, call, &Params(data))?["id"].as_str().unwrap().to_string()
        }
        _ => return Err(invalid("You must specify either `product` or `product_data` when creating a price.").code("parameter_missing").param("product")),
    };
    let unit_amount = p.int("unit_amount")?;
    if unit_amount.is_none() && p.str("unit_amount_decimal").is_none() && p.get("custom_unit_amount").is_none() {
        return Err(missing("unit_amount"));
    }
    let recurring = match p.get("recurring") {
        Some(r) => {
            let interval = r["interval"].as_str().ok_or_else(|| missing("recurring[interval]"))?;
            if !["day", "week", "month", "year"].contains(&interval) {
                return Err(invalid("Invalid recurring[interval]: must be one of day, week, month, or year").param("recurring[interval]"));
            }
            let count: i64 = r["interval_count"].as_str().and_then(|s| s.parse().ok()).unwrap_or(1);
            json!({"aggregate_usage": null, "interval": interval, "interval_count": count, "meter": null, "trial_period_days": r["trial_period_days"].as_str().and_then(|s| s.parse::<i64>().ok()), "usage_type": r["usage_type"].as_str().unwrap_or("licensed")})
        }
        None => Value::Null,
    };
    let id = w.new_id("price");
    let mut o = json!({
        "id": id, "object": "price", "active": true, "billing_scheme": "per_unit", "created": w.now(),
        "currency": cur, "custom_unit_amount": null, "livemode": false, "lookup_key": null, "metadata": {},
        "nickname": null, "product": product, "tax_behavior": "unspecified", "tiers_mode": null,
        "transform_quantity": null, "type": if recurring.is_null() { "one_time" } else { "recurring" },
        "recurring": recurring, "unit_amount": unit_amount, "unit_amount_decimal": unit_amount.map(|u| u.to_string()),
    });
    p.copy(&mut o, &["nickname", "lookup_key", "tax_behavior"]);
    if let Some(a) = p.bool("active")? {
        o["active"] = json!(a);
    }
    p.metadata_into(&mut o)?;
    release_lookup_key(w, call, holder);
    let o = w.insert(Some(call), o);
    emit(w, call, "price.created", &o, None);
    Ok(o)
}

/// The other price holding the `lookup_key` asked for: an error unless
/// `transfer_lookup_key=true`, which names it to give the key up.
fn lookup_key_holder(w: &World, p: &Params, own: Option<&str>) -> Result<Option<String>, StripeError> {
    let Some(key) = p.str("lookup_key").filter(|k| !k.is_empty()) else { return Ok(None) };
    let transfer = p.bool("transfer_lookup_key")?.unwrap_or(false);
    let Some(holder) = w.all("price").find(|o| o["lookup_key"] == key && own.is_none_or(|id| o["id"] != id)) else { return Ok(None) };
    let hid = holder["id"].as_str().unwrap_or_default().to_string();
    if !transfer {
        return Err(invalid(format!("A price (`{hid}`) already uses that lookup key.")).param("lookup_key"));
    }
    Ok(Some(hid))
}

fn release_lookup_key(w: &mut World, call: &mut Call, holder: Option<String>) {
    if let Some(h) = holder {
        modify_emit(w, call, &h, "price.updated", |o| o["lookup_key"] = Value::Null);
    }
}

fn price_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let product = p.str("product").map(str::to_string);
    let active = p.bool("active")?;
    let ty = p.str("type").map(str::to_string);
    let keys = p.strs("lookup_keys");
    // `recurring[interval]=month`, `recurring[usage_type]=metered`.
    let recurring: Vec<(String, String)> = p.get("recurring").and_then(Value::as_object).map(|m| m.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string()))).collect()).unwrap_or_default();
    list_of(w, call, "price", p, |o| {
        product.as_ref().is_none_or(|x| o["product"] == x.as_str())
            && active.is_none_or(|a| o["active"] == a)
            && ty.as_ref().is_none_or(|x| o["type"] == x.as_str())
            && (keys.is_empty() || keys.iter().any(|k| o["lookup_key"] == k.as_str()))
            && field_is(o, "currency", p.str("currency"))
            && recurring.iter().all(|(k, v)| o["recurring"].is_object() && o["recurring"][k] == v.as_str())
    })
}

fn price_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    get_or_404(w, "price", &id, "price")
}

fn price_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let mut probe = get_or_404(w, "price", &id, "price")?;
    if p.has("unit_amount") || p.has("currency") || p.has("recurring") {
        return Err(invalid("Received unknown parameter: unit_amount. Prices are immutable: create a new price instead.").param("unit_amount"));
    }
    p.metadata_into(&mut probe)?;
    let active = p.bool("active")?;
    let holder = lookup_key_holder(w, p, Some(&id))?;
    release_lookup_key(w, call, holder);
    Ok(modify_emit(w, call, &id, "price.updated", |o| {
        p.copy(o, &["nickname", "lookup_key", "tax_behavior"]);
        o["metadata"] = probe["metadata"].clone();
        if let Some(a) = active {
            o["active"] = json!(a);
        }
    }))
}

fn coupon_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let pct = p.get("percent_off").and_then(Value::as_str).map(|s| s.parse::<f64>().map_err(|_| invalid(format!("Invalid decimal: {s}")).param("percent_off"))).transpose()?;
    let off = p.int("amount_off")?;
    if pct.is_none() == off.is_none() {
        return Err(invalid("You must pass exactly one of percent_off or amount_off.").param("percent_off"));
    }
    if let Some(x) = pct {
        if !(0.0..=100.0).contains(&x) || x == 0.0 {
            return Err(invalid("Invalid percent_off: must be greater than 0 and at most 100").param("percent_off"));
        }
    }
    let cur = if off.is_some() { Some(currency(p)?) } else { None };
    let duration = p.str("duration").unwrap_or("once");
    if !["forever", "once", "repeating"].contains(&duration) {
        return Err(invalid("Invalid duration: must be one of forever, once, or repeating").param("duration"));
    }
    let months = p.int("duration_in_months")?;
    if duration == "repeating" && months.is_none() {
        return Err(missing("duration_in_months"));
    }
    let id = match p.str("id") {
        Some(id) if w.get(id).is_some() => return Err(invalid("Coupon already exists.").code("resource_already_exists").param("id")),
        Some(id) => id.to_string(),
        None => crate::core::base62(w.seq * 7919 + 1, 8),
    };
    w.seq += 1;
    let mut o = json!({
        "id": id, "object": "coupon", "amount_off": off, "created": w.now(), "currency": cur, "duration": duration,
        "duration_in_months": months, "livemode": false, "max_redemptions": p.int("max_redemptions")?, "metadata": {},
        "name": p.str("name"), "percent_off": pct, "redeem_by": p.int("redeem_by")?, "times_redeemed": 0, "valid": true,
    });
    p.metadata_into(&mut o)?;
    let o = w.insert(Some(call), o);
    emit(w, call, "coupon.created", &o, None);
    Ok(o)
}

fn coupon_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    list_of(w, call, "coupon", p, |_| true)
}

fn coupon_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    get_or_404(w, "coupon", &id, "coupon")
}

fn coupon_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let mut probe = get_or_404(w, "coupon", &id, "coupon")?;
    p.metadata_into(&mut probe)?;
    Ok(modify_emit(w, call, &id, "coupon.updated", |o| {
        p.copy(o, &["name"]);
        o["metadata"] = probe["metadata"].clone();
    }))
}

fn coupon_delete(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    let o = get_or_404(w, "coupon", &id, "coupon")?;
    w.remove(call, &id);
    emit(w, call, "coupon.deleted", &o, None);
    Ok(json!({"id": id, "object": "coupon", "deleted": true}))
}

/// An intent's `automatic_payment_methods`: as asked, else (API versions since 2023-08-16)
/// enabled whenever no `payment_method_types` were named. Naming both is refused.
fn automatic_payment_methods(p: &Params) -> Result<Value, StripeError> {
    let typed = !p.strs("payment_method_types").is_empty();
    match p.get("automatic_payment_methods") {
        Some(apm) if apm["enabled"] == "true" => {
            if typed {
                return Err(invalid("You may only specify one of these parameters: automatic_payment_methods, payment_method_types.").param("automatic_payment_methods"));
            }
            Ok(json!({"allow_redirects": apm["allow_redirects"].as_str().unwrap_or("always"), "enabled": true}))
        }
        Some(_) => Ok(Value::Null),
        None if typed => Ok(Value::Null),
        None => Ok(json!({"allow_redirects": "always", "enabled": true})),
    }
}

// ---------------------------------------------------------------------------------------
// SetupIntents.

pub(crate) fn si_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    if let Some(c) = p.str("customer") {
        get_or_404(w, "customer", c, "customer").map_err(|e| e.param("customer"))?;
    }
    let usage = p.str("usage").unwrap_or("off_session");
    if !["off_session", "on_session"].contains(&usage) {
        return Err(invalid("Invalid usage: must be one of off_session or on_session").param("usage"));
    }
    let apm = automatic_payment_methods(p)?;
    let id = w.new_id("seti");
    let now = w.now();
    let mut o = json!({
        "id": id, "object": "setup_intent", "application": null, "automatic_payment_methods": apm,
        "cancellation_reason": null, "client_secret": format!("{id}_secret_{}", crate::core::base62(now as u64, 10)),
        "created": now, "customer": null, "description": null, "flow_directions": null, "last_setup_error": null,
        "latest_attempt": null, "livemode": false, "mandate": null, "metadata": {}, "next_action": null,
        "on_behalf_of": null, "payment_method": null, "payment_method_options": {},
        "payment_method_types": ["card"], "single_use_mandate": null, "status": "requires_payment_method", "usage": usage,
    });
    p.copy(&mut o, &["customer", "description"]);
    let types = p.strs("payment_method_types");
    if !types.is_empty() {
        o["payment_method_types"] = json!(types);
    }
    p.metadata_into(&mut o)?;
    if let Some(pm) = p.str("payment_method") {
        let pm = resolve_pm(w, call, pm, "payment_method")?;
        o["payment_method"] = json!(pm);
        o["status"] = json!("requires_confirmation");
    }
    let o = w.insert(Some(call), o);
    emit(w, call, "setup_intent.created", &o, None);
    if p.bool("confirm")? == Some(true) {
        return si_do_confirm(w, call, &id, p);
    }
    Ok(o)
}

fn si_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    list_of(w, call, "setup_intent", p, |o| field_is(o, "customer", p.str("customer")) && field_is(o, "payment_method", p.str("payment_method")))
}

fn si_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    get_or_404(w, "setup_intent", &id, "setup_intent")
}

fn si_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let mut probe = get_or_404(w, "setup_intent", &id, "setup_intent")?;
    p.metadata_into(&mut probe)?;
    let pm = match p.str("payment_method") {
        Some(pm) => Some(resolve_pm(w, call, pm, "payment_method")?),
        None => None,
    };
    Ok(w.modify(call, &id, |o| {
        p.copy(o, &["customer", "description"]);
        o["metadata"] = probe["metadata"].clone();
        if let Some(pm) = pm {
            o["payment_method"] = json!(pm);
            o["status"] = json!("requires_confirmation");
        }
    }))
}

fn si_confirm(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    get_or_404(w, "setup_intent", &id, "setup_intent")?;
    si_do_confirm(w, call, &id, p)
}

fn si_do_confirm(w: &mut World, call: &mut Call, id: &str, p: &Params) -> Res {
    let si = w.get(id).unwrap();
    let status = si["status"].as_str().unwrap_or("").to_string();
    if !["requires_payment_method", "requires_confirmation", "requires_action"].contains(&status.as_str()) {
        return Err(invalid(format!("You cannot confirm this SetupIntent because it has a status of {status}.")).code("setup_intent_unexpected_state").with("setup_intent", si));
    }
    let pm_id = match p.str("payment_method") {
        Some(pm) => resolve_pm(w, call, pm, "payment_method")?,
        None => match si["payment_method"].as_str() {
            Some(pm) => pm.to_string(),
            None => {
                return Err(invalid("You cannot confirm this SetupIntent because it's missing a payment method.").code("setup_intent_unexpected_state").with("setup_intent", si));
            }
        },
    };
    let pm = w.get(&pm_id).unwrap();
    match behaviour_of(&pm) {
        Behaviour::Decline(code, decline) => {
            let msg = decline_message(code, decline);
            let err = json!({"code": code, "decline_code": decline, "message": msg, "payment_method": pm, "type": "card_error"});
            let si = w.modify(call, id, |o| {
                o["status"] = json!("requires_payment_method");
                o["last_setup_error"] = err;
                o["payment_method"] = Value::Null;
            });
            emit(w, call, "setup_intent.setup_failed", &si, None);
            let mut e = StripeError::new(402, "card_error", msg).code(code).with("setup_intent", si);
            e.decline_code = Some(decline.to_string());
            Err(e)
        }
        // Every card that asks for 3-D Secure asks for it when it is set up, and confirming
        // again (in `requires_action`) starts a new attempt: the customer's step happens on
        // the test page ([`crate::three_ds`]), which completes the SetupIntent.
        Behaviour::ThreeDS => {
            let source = w.new_id("payatt");
            let secret = si["client_secret"].as_str().unwrap_or("").to_string();
            let next_action = crate::three_ds::next_action(&call.req, &w.account_id, "setup_intent", id, &secret, &source, p.str("return_url"));
            let si = w.modify(call, id, |o| {
                o["status"] = json!("requires_action");
                o["payment_method"] = json!(pm_id);
                o["last_setup_error"] = Value::Null;
                o["next_action"] = next_action;
            });
            emit(w, call, "setup_intent.requires_action", &si, None);
            Ok(si)
        }
        _ => Ok(si_succeed(w, call, id, &pm_id)),
    }
}

/// The SetupIntent `id` has saved `pm_id`: attached to its customer, `succeeded`.
pub(crate) fn si_succeed(w: &mut World, call: &mut Call, id: &str, pm_id: &str) -> Value {
    let si = w.get(id).unwrap_or_default();
    if let Some(c) = si["customer"].as_str() {
        if w.get(pm_id).is_some_and(|pm| pm["customer"].is_null()) {
            let pm = w.modify(call, pm_id, |pm| pm["customer"] = json!(c));
            emit(w, call, "payment_method.attached", &pm, None);
        }
    }
    let si = w.modify(call, id, |o| {
        o["status"] = json!("succeeded");
        o["payment_method"] = json!(pm_id);
        o["next_action"] = Value::Null;
        o["last_setup_error"] = Value::Null;
    });
    emit(w, call, "setup_intent.succeeded", &si, None);
    si
}

fn si_cancel(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let si = get_or_404(w, "setup_intent", &id, "setup_intent")?;
    if let Some(r) = p.str("cancellation_reason") {
        if !["abandoned", "duplicate", "requested_by_customer"].contains(&r) {
            return Err(invalid("Invalid cancellation_reason: must be one of abandoned, duplicate, or requested_by_customer").param("cancellation_reason"));
        }
    }
    if si["status"] == "succeeded" || si["status"] == "canceled" {
        return Err(invalid(format!("You cannot cancel this SetupIntent because it has a status of {}.", si["status"].as_str().unwrap_or(""))).code("setup_intent_unexpected_state").with("setup_intent", si));
    }
    let reason = p.str("cancellation_reason").map(str::to_string);
    let si = w.modify(call, &id, |o| {
        o["status"] = json!("canceled");
        o["cancellation_reason"] = reason.map(Value::String).unwrap_or(Value::Null);
    });
    emit(w, call, "setup_intent.canceled", &si, None);
    Ok(si)
}

// ---------------------------------------------------------------------------------------
// Events and webhook endpoints.

fn event_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let mut types = p.strs("types");
    if let Some(t) = p.str("type") {
        types.push(t.to_string());
    }
    let matches = |t: &str| {
        types.is_empty()
            || types.iter().any(|pat| match pat.strip_suffix('*') {
                Some(prefix) => t.starts_with(prefix),
                None => pat == t,
            })
    };
    list_of(w, call, "event", p, |e| matches(e["type"].as_str().unwrap_or("")))
}

fn event_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    get_or_404(w, "event", &id, "event")
}

fn we_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let url = p.req_str("url")?.to_string();
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(invalid(format!("Invalid URL: {url}. URLs must begin with http or https.")).param("url"));
    }
    let events = enabled_events(p)?.ok_or_else(|| missing("enabled_events"))?;
    let id = w.new_id("we");
    let secret = format!("whsec_{}", crate::core::base62(w.seq.wrapping_mul(0x9E37_79B9_7F4A_7C15), 32));
    let mut o = json!({
        "id": id, "object": "webhook_endpoint", "api_version": p.str("api_version"), "application": null,
        "created": w.now(), "description": null, "enabled_events": events, "livemode": false, "metadata": {},
        "secret": secret, "status": "enabled", "url": url,
    });
    p.copy(&mut o, &["description"]);
    p.metadata_into(&mut o)?;
    let o = w.insert(Some(call), o);
    Ok(o)
}

/// The endpoint's `enabled_events`, when given, each an event type Stripe sends (or `*`).
fn enabled_events(p: &Params) -> Result<Option<Vec<String>>, StripeError> {
    let events = p.strs("enabled_events");
    if events.is_empty() {
        return Ok(None);
    }
    if let Some((i, _)) = events.iter().enumerate().find(|(_, e)| !crate::core::is_event_type(e)) {
        let param = format!("enabled_events[{i}]");
        return Err(invalid(format!("Invalid {param}: must be one of {}", crate::core::EVENT_TYPES.join(", "))).param(&param));
    }
    Ok(Some(events))
}

/// A webhook endpoint as retrieved: Stripe shows the secret only on create.
fn we_public(mut o: Value) -> Value {
    if let Some(m) = o.as_object_mut() {
        m.remove("secret");
    }
    o
}

fn we_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let mut out = list_of(w, call, "webhook_endpoint", p, |_| true)?;
    if let Some(items) = out["data"].as_array_mut() {
        for o in items.iter_mut() {
            *o = we_public(std::mem::take(o));
        }
    }
    Ok(out)
}

fn we_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    get_or_404(w, "webhook_endpoint", &id, "webhook endpoint").map(we_public)
}

fn we_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let mut probe = get_or_404(w, "webhook_endpoint", &id, "webhook endpoint")?;
    p.metadata_into(&mut probe)?;
    let events = enabled_events(p)?;
    let disabled = p.bool("disabled")?;
    Ok(we_public(w.modify(call, &id, |o| {
        p.copy(o, &["url", "description"]);
        o["metadata"] = probe["metadata"].clone();
        if let Some(events) = events {
            o["enabled_events"] = json!(events);
        }
        if let Some(d) = disabled {
            o["status"] = json!(if d { "disabled" } else { "enabled" });
        }
    })))
}

fn we_delete(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    get_or_404(w, "webhook_endpoint", &id, "webhook endpoint")?;
    w.remove(call, &id);
    Ok(json!({"id": id, "object": "webhook_endpoint", "deleted": true}))
}
