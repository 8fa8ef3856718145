//! Checkout sessions, payment links and promotion codes.

use pome_twin_sdk::{Call, Router, Value, json};

use crate::World;
use crate::api::{emit, field_is};
use crate::core::{Params, Res, StripeError, invalid, list_object, missing, no_such, no_such_ref, run};

macro_rules! h {
    ($f:path) => {
        |w: &mut World, c: &mut Call| run(w, c, $f)
    };
}

pub fn routes(r: Router<World>) -> Router<World> {
    r.post("/v1/checkout/sessions", "checkout.sessions.create", h!(cs_create))
        .get("/v1/checkout/sessions", "checkout.sessions.list", h!(cs_list))
        .get("/v1/checkout/sessions/{id}", "checkout.sessions.retrieve", h!(cs_retrieve))
        .post("/v1/checkout/sessions/{id}/expire", "checkout.sessions.expire", h!(cs_expire))
        .post("/v1/test_helpers/checkout/sessions/{id}/complete", "test_helpers.checkout.sessions.complete", h!(cs_complete))
        .get("/v1/checkout/sessions/{id}/line_items", "checkout.sessions.line_items", h!(cs_lines))
        .post("/v1/payment_links", "payment_links.create", h!(pl_create))
        .get("/v1/payment_links", "payment_links.list", h!(pl_list))
        .get("/v1/payment_links/{id}", "payment_links.retrieve", h!(pl_retrieve))
        .post("/v1/payment_links/{id}", "payment_links.update", h!(pl_update))
        .get("/v1/payment_links/{id}/line_items", "payment_links.line_items", h!(pl_lines))
        .post("/v1/promotion_codes", "promotion_codes.create", h!(promo_create))
        .get("/v1/promotion_codes", "promotion_codes.list", h!(promo_list))
        .get("/v1/promotion_codes/{id}", "promotion_codes.retrieve", h!(promo_retrieve))
        .post("/v1/promotion_codes/{id}", "promotion_codes.update", h!(promo_update))
}

/// Where line items may name their price: by id only (payment links), or inline as
/// `price_data` too (checkout sessions).
#[derive(Clone, Copy, PartialEq)]
enum Prices {
    ById,
    OrInline,
}

/// Line items (`line_items[i][price]`, or `[price_data]`, + `quantity`) as Stripe's `item`
/// objects. An inline price is created as Stripe creates it: a price of its own, inactive
/// (it is not offered again), with a new product when it gives `product_data`.
fn line_items(w: &mut World, call: &mut Call, p: &Params, prices: Prices) -> Result<(Vec<Value>, String, bool), StripeError> {
    let Some(Value::Array(items)) = p.get("line_items") else { return Err(missing("line_items")) };
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut recurring = false;
    for (i, it) in items.iter().enumerate() {
        let price = match (it["price"].as_str(), it.get("price_data")) {
            (Some(pid), _) => w.get_kind("price", pid).ok_or_else(|| no_such_ref("price", pid, &format!("line_items[{i}][price]")))?,
            (None, Some(Value::Object(data))) if prices == Prices::OrInline => {
                let mut data = data.clone();
                data.insert("active".into(), json!("false"));
                crate::api::price_create(w, call, &Params(data)).map_err(|e| inline_param(e, &format!("line_items[{i}][price_data]")))?
            }
            _ => return Err(missing(&format!("line_items[{i}][price]"))),
        };
        let qty: i64 = it["quantity"].as_str().and_then(|s| s.parse().ok()).ok_or_else(|| missing(&format!("line_items[{i}][quantity]")))?;
        let amount = crate::api::price_total(&price, qty);
        cur = price["currency"].as_str().unwrap_or("usd").to_string();
        recurring |= !price["recurring"].is_null();
        let id = w.new_id("li");
        let product = price["product"].as_str().and_then(|p| w.get(p)).map(|p| p["name"].clone()).unwrap_or(Value::Null);
        out.push(json!({
            "id": id, "object": "item", "amount_discount": 0, "amount_subtotal": amount, "amount_tax": 0, "amount_total": amount,
            "currency": cur, "description": product, "price": price, "quantity": qty,
        }));
    }
    Ok((out, cur, recurring))
}

/// An error about a parameter of an inline object, named where the request gave it:
/// `currency` of `line_items[0][price_data]` is `line_items[0][price_data][currency]`. Only
/// the missing-parameter message names the parameter; any other message stays as it is.
fn inline_param(mut e: StripeError, at: &str) -> StripeError {
    if let Some(param) = e.param.take() {
        let (head, rest) = param.split_at(param.find('[').unwrap_or(param.len()));
        let full = format!("{at}[{head}]{rest}");
        if e.message == missing(&param).message {
            e.message = missing(&full).message;
        }
        e.param = Some(full);
    }
    e
}

fn cs_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let mode = p.str("mode").ok_or_else(|| missing("mode"))?.to_string();
    if !["payment", "subscription", "setup"].contains(&mode.as_str()) {
        return Err(invalid("Invalid mode: must be one of payment, setup, or subscription").param("mode"));
    }
    let (items, cur, recurring) = if mode == "setup" { (vec![], p.str("currency").unwrap_or("usd").to_string(), false) } else { line_items(w, call, p, Prices::OrInline)? };
    if mode == "payment" && recurring {
        return Err(invalid("You specified `payment` mode but passed a recurring price. Either switch to `subscription` mode or use only one-time prices.").param("line_items"));
    }
    if mode == "subscription" && !recurring {
        return Err(invalid("You must provide at least one recurring price in `subscription` mode when using prices.").param("line_items"));
    }
    if p.str("success_url").is_none() && p.str("ui_mode") != Some("embedded") {
        return Err(missing("success_url"));
    }
    if let Some(c) = p.str("customer") {
        w.get_kind("customer", c).ok_or_else(|| no_such_ref("customer", c, "customer"))?;
    }
    let total: i64 = items.iter().map(|i| i["amount_total"].as_i64().unwrap_or(0)).sum();
    let id = format!("cs_test_{}", &w.new_id("x")[2..]);
    let now = w.now();
    let mut o = json!({
        "id": id, "object": "checkout.session", "after_expiration": null, "allow_promotion_codes": null,
        "amount_subtotal": total, "amount_total": total, "automatic_tax": {"enabled": false, "liability": null, "status": null},
        "billing_address_collection": null, "cancel_url": p.str("cancel_url"), "client_reference_id": p.str("client_reference_id"),
        "consent": null, "consent_collection": null, "created": now, "currency": cur, "custom_fields": [],
        "custom_text": {"after_submit": null, "shipping_address": null, "submit": null, "terms_of_service_acceptance": null},
        "customer": p.str("customer"), "customer_creation": if p.has("customer") { Value::Null } else { json!("if_required") },
        "customer_details": null, "customer_email": p.str("customer_email"), "expires_at": now + 86400, "invoice": null,
        "invoice_creation": null, "livemode": false, "locale": null, "metadata": {}, "mode": mode,
        "payment_intent": null, "payment_link": null, "payment_method_collection": "always",
        "payment_method_options": {}, "payment_method_types": ["card"], "payment_status": if mode == "setup" { "no_payment_required" } else { "unpaid" },
        "phone_number_collection": {"enabled": false}, "recovered_from": null, "setup_intent": null, "shipping_address_collection": null,
        "shipping_cost": null, "shipping_details": null, "shipping_options": [], "status": "open", "submit_type": null,
        "subscription": null, "success_url": p.str("success_url"), "total_details": {"amount_discount": 0, "amount_shipping": 0, "amount_tax": 0},
        "ui_mode": p.str("ui_mode").unwrap_or("hosted"), "url": format!("https://checkout.stripe.com/c/pay/{id}"),
        "line_items": {"object": "list", "data": items, "has_more": false, "url": format!("/v1/checkout/sessions/{id}/line_items")},
    });
    p.metadata_into(&mut o)?;
    let mut stored = w.insert(Some(call), o);
    stored.as_object_mut().unwrap().remove("line_items");
    Ok(stored)
}

fn public(mut o: Value) -> Value {
    if let Some(m) = o.as_object_mut() {
        m.remove("line_items");
    }
    o
}

fn cs_get(w: &World, call: &Call) -> Result<(String, Value), StripeError> {
    let id = call.param("id").to_string();
    let o = w.get_kind("checkout.session", &id).ok_or_else(|| no_such("checkout.session", &id, "session"))?;
    Ok((id, o))
}

fn cs_retrieve(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let (_, o) = cs_get(w, call)?;
    Ok(if p.strs("expand").iter().any(|e| e == "line_items") { o } else { public(o) })
}

fn cs_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let email = p.get("customer_details").and_then(|d| d.get("email")).and_then(Value::as_str);
    let keep = |o: &Value| {
        ["payment_intent", "customer", "status", "subscription", "payment_link"].iter().all(|f| field_is(o, f, p.str(f)))
            && email.is_none_or(|e| o["customer_details"]["email"] == e)
    };
    crate::api::list_shaped(w, call, "checkout.session", p, keep, Some(public))
}

fn cs_expire(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let (id, o) = cs_get(w, call)?;
    if o["status"] != "open" {
        return Err(invalid(format!("Only Checkout Sessions with a status in [\"open\"] can be expired. This Checkout Session has a status of \"{}\".", o["status"].as_str().unwrap_or(""))).code("checkout_session_unexpected_state"));
    }
    let o = public(w.modify(call, &id, |o| {
        o["status"] = json!("expired");
        o["url"] = Value::Null;
    }));
    emit(w, call, "checkout.session.expired", &o, None);
    Ok(o)
}

/// Params for an internal call, as the form parser would give them.
fn form(pairs: &[(&str, String)]) -> Params {
    Params(pairs.iter().map(|(k, v)| (k.to_string(), json!(v))).collect())
}

/// The twin's stand-in for a customer paying on the hosted Checkout page (Stripe offers no
/// API for that step): `POST /v1/test_helpers/checkout/sessions/{id}/complete` with the
/// `payment_method` the customer pays with (`pm_card_visa` unless given) and their `email`.
/// A payment session runs its PaymentIntent, a subscription session starts its
/// subscription, a setup session confirms a SetupIntent; on success the session is
/// `complete` and `checkout.session.completed` is emitted. A declined card answers the
/// card error and leaves the session open, as the hosted page would.
fn cs_complete(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let (id, o) = cs_get(w, call)?;
    if o["status"] != "open" {
        return Err(invalid(format!("This Checkout Session is no longer open: its status is \"{}\".", o["status"].as_str().unwrap_or(""))).code("checkout_session_unexpected_state"));
    }
    let pm_given = p.str("payment_method").unwrap_or("pm_card_visa").to_string();
    let email = p.str("email").map(str::to_string).or_else(|| o["customer_email"].as_str().map(str::to_string));
    let mode = o["mode"].as_str().unwrap_or("payment").to_string();
    let mut customer = o["customer"].as_str().map(str::to_string);
    if customer.is_none() && (mode != "payment" || o["customer_creation"] == "always") {
        let mut pairs = Vec::new();
        if let Some(e) = &email {
            pairs.push(("email", e.clone()));
        }
        let c = crate::api::customer_create(w, call, &form(&pairs))?;
        customer = c["id"].as_str().map(str::to_string);
    }
    let (mut pi, mut sub, mut si, mut inv) = (Value::Null, Value::Null, Value::Null, Value::Null);
    match mode.as_str() {
        "payment" => {
            let mut pairs = vec![
                ("amount", o["amount_total"].as_i64().unwrap_or(0).to_string()),
                ("currency", o["currency"].as_str().unwrap_or("usd").to_string()),
                ("payment_method", pm_given),
                ("confirm", "true".into()),
            ];
            if let Some(c) = &customer {
                pairs.push(("customer", c.clone()));
            }
            let mut params = form(&pairs);
            params.0.insert("metadata".into(), o["metadata"].clone());
            // The session's payment method types, not the account's automatic ones.
            let types = if o["payment_method_types"].is_array() { o["payment_method_types"].clone() } else { json!(["card"]) };
            params.0.insert("payment_method_types".into(), types);
            let made = crate::api::create_payment_intent(w, call, &params)?;
            if made["status"] == "requires_action" {
                return Err(needs_authentication("payment_intent", made));
            }
            pi = made["id"].clone();
        }
        "subscription" => {
            let cus = customer.clone().unwrap_or_default();
            let pm = crate::api::resolve_pm(w, call, &pm_given, "payment_method")?;
            crate::api::attach(w, call, &pm, &cus)?;
            let pairs = vec![("customer", cus), ("default_payment_method", pm)];
            let items = o["line_items"]["data"].as_array().cloned().unwrap_or_default();
            let keys: Vec<(String, String)> = items
                .iter()
                .enumerate()
                .flat_map(|(i, it)| [(format!("items[{i}][price]"), it["price"]["id"].as_str().unwrap_or("").to_string()), (format!("items[{i}][quantity]"), it["quantity"].to_string())])
                .collect();
            let nested = crate::core::nest(&keys)?;
            let mut params = form(&pairs);
            params.0.extend(nested);
            let made = crate::billing::sub_create(w, call, &params)?;
            if made["status"] != "active" && made["status"] != "trialing" {
                let mut e = StripeError::new(402, "card_error", "Your card was declined.").code("card_declined");
                e.decline_code = Some("generic_decline".into());
                return Err(e);
            }
            sub = made["id"].clone();
            inv = made["latest_invoice"].clone();
        }
        _ => {
            let mut pairs = vec![("payment_method", pm_given), ("confirm", "true".into()), ("usage", "off_session".into())];
            if let Some(c) = &customer {
                pairs.push(("customer", c.clone()));
            }
            let made = crate::api::si_create(w, call, &form(&pairs))?;
            if made["status"] == "requires_action" {
                return Err(needs_authentication("setup_intent", made));
            }
            if made["status"] != "succeeded" {
                return Err(StripeError::new(402, "card_error", "Your card was declined.").code("card_declined"));
            }
            si = made["id"].clone();
        }
    }
    let o = public(w.modify(call, &id, |o| {
        o["status"] = json!("complete");
        o["payment_status"] = json!(if mode == "setup" { "no_payment_required" } else { "paid" });
        o["customer"] = json!(customer);
        o["customer_details"] = json!({"address": null, "email": email, "name": null, "phone": null, "tax_exempt": "none", "tax_ids": []});
        o["payment_intent"] = pi;
        o["subscription"] = sub;
        o["setup_intent"] = si;
        o["invoice"] = inv;
        o["url"] = Value::Null;
    }));
    emit(w, call, "checkout.session.completed", &o, None);
    Ok(o)
}

/// The helper pays as a customer who cannot authenticate: a card that requires 3-D Secure
/// leaves the session open (its intent waits in `requires_action`, on the page its
/// `next_action` names) and answers Stripe's `authentication_required` decline.
fn needs_authentication(kind: &str, intent: Value) -> StripeError {
    let mut e = StripeError::new(402, "card_error", "Your card was declined. This transaction requires authentication.").code("authentication_required").with(kind, intent);
    e.decline_code = Some("authentication_required".into());
    e
}

fn cs_lines(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let (_, o) = cs_get(w, call)?;
    list_object(&call.req.path, o["line_items"]["data"].as_array().cloned().unwrap_or_default(), p)
}

/// `after_completion`: Stripe's confirmation page (with an optional message) or a redirect.
fn after_completion(p: &Params) -> Res {
    let Some(ac) = p.get("after_completion") else {
        return Ok(json!({"hosted_confirmation": {"custom_message": null}, "type": "hosted_confirmation"}));
    };
    match ac.get("type").and_then(Value::as_str) {
        Some("redirect") => match ac.pointer("/redirect/url").and_then(Value::as_str).filter(|u| !u.is_empty()) {
            Some(url) if url.starts_with("http://") || url.starts_with("https://") => Ok(json!({"redirect": {"url": url}, "type": "redirect"})),
            Some(url) => Err(invalid(format!("Not a valid URL: {url}")).param("after_completion[redirect][url]")),
            None => Err(missing("after_completion[redirect][url]")),
        },
        Some("hosted_confirmation") => {
            let msg = ac.pointer("/hosted_confirmation/custom_message").and_then(Value::as_str);
            Ok(json!({"hosted_confirmation": {"custom_message": msg}, "type": "hosted_confirmation"}))
        }
        Some(other) => Err(invalid(format!("Invalid after_completion[type]: must be one of hosted_confirmation or redirect (got {other})")).param("after_completion[type]")),
        None => Err(missing("after_completion[type]")),
    }
}

fn pl_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let (items, cur, _) = line_items(w, call, p, Prices::ById)?;
    let after = after_completion(p)?;
    let id = w.new_id("plink");
    let mut o = json!({
        "id": id, "object": "payment_link", "active": true, "after_completion": after,
        "allow_promotion_codes": false, "application": null, "application_fee_amount": null, "application_fee_percent": null,
        "automatic_tax": {"enabled": false, "liability": null}, "billing_address_collection": "auto", "consent_collection": null,
        "currency": cur, "custom_fields": [], "custom_text": {"after_submit": null, "shipping_address": null, "submit": null, "terms_of_service_acceptance": null},
        "customer_creation": "if_required", "inactive_message": null, "invoice_creation": null, "livemode": false, "metadata": {},
        "on_behalf_of": null, "payment_intent_data": null, "payment_method_collection": "always", "payment_method_types": null,
        "phone_number_collection": {"enabled": false}, "restrictions": null, "shipping_address_collection": null, "shipping_options": [],
        "submit_type": "auto", "subscription_data": null, "tax_id_collection": {"enabled": false}, "transfer_data": null,
        "url": format!("https://buy.stripe.com/test_{}", &id[6..]),
        "line_items": {"object": "list", "data": items, "has_more": false, "url": format!("/v1/payment_links/{id}/line_items")},
    });
    p.metadata_into(&mut o)?;
    let o = w.insert(Some(call), o);
    Ok(public(o))
}

fn pl_get(w: &World, call: &Call) -> Result<(String, Value), StripeError> {
    let id = call.param("id").to_string();
    let o = w.get_kind("payment_link", &id).ok_or_else(|| no_such("payment_link", &id, "payment_link"))?;
    Ok((id, o))
}

fn pl_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let active = p.bool("active")?;
    crate::api::list_shaped(w, call, "payment_link", p, |o| active.is_none_or(|a| o["active"] == a), Some(public))
}

fn pl_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    pl_get(w, call).map(|(_, o)| public(o))
}

fn pl_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let (id, mut probe) = pl_get(w, call)?;
    p.metadata_into(&mut probe)?;
    let active = p.bool("active")?;
    Ok(public(w.modify(call, &id, |o| {
        o["metadata"] = probe["metadata"].clone();
        if let Some(a) = active {
            o["active"] = json!(a);
        }
    })))
}

fn pl_lines(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let (_, o) = pl_get(w, call)?;
    list_object(&call.req.path, o["line_items"]["data"].as_array().cloned().unwrap_or_default(), p)
}

fn promo_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let coupon = p.req_str("coupon")?.to_string();
    let c = w.get_kind("coupon", &coupon).ok_or_else(|| no_such_ref("coupon", &coupon, "coupon"))?;
    let id = w.new_id("promo");
    let code = match p.str("code") {
        Some(code) => {
            if w.all("promotion_code").any(|x| x["code"].as_str().is_some_and(|x| x.eq_ignore_ascii_case(code)) && x["active"] == true) {
                return Err(invalid(format!("An active promotion code with `code: {code}` already exists.")).code("resource_already_exists").param("code"));
            }
            code.to_string()
        }
        None => crate::core::base62(w.seq * 104729, 8).to_uppercase(),
    };
    let mut o = json!({
        "id": id, "object": "promotion_code", "active": p.bool("active")?.unwrap_or(true), "code": code, "coupon": c,
        "created": w.now(), "customer": p.str("customer"), "expires_at": p.int("expires_at")?, "livemode": false,
        "max_redemptions": p.int("max_redemptions")?, "metadata": {},
        "restrictions": {"first_time_transaction": false, "minimum_amount": null, "minimum_amount_currency": null}, "times_redeemed": 0,
    });
    p.metadata_into(&mut o)?;
    let o = w.insert(Some(call), o);
    emit(w, call, "promotion_code.created", &o, None);
    Ok(o)
}

fn promo_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let active = p.bool("active")?;
    crate::api::list_of(w, call, "promotion_code", p, |o| {
        ["code", "coupon", "customer"].iter().all(|f| field_is(o, f, p.str(f))) && active.is_none_or(|a| o["active"] == a)
    })
}

fn promo_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    w.get_kind("promotion_code", &id).ok_or_else(|| no_such("promotion_code", &id, "promotion_code"))
}

fn promo_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let mut probe = w.get_kind("promotion_code", &id).ok_or_else(|| no_such("promotion_code", &id, "promotion_code"))?;
    p.metadata_into(&mut probe)?;
    let active = p.bool("active")?;
    let o = w.modify(call, &id, |o| {
        o["metadata"] = probe["metadata"].clone();
        if let Some(a) = active {
            o["active"] = json!(a);
        }
    });
    emit(w, call, "promotion_code.updated", &o, None);
    Ok(o)
}
