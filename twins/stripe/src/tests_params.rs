//! Parameters at every depth (#35): unknown names, wrong types and bad enum values are refused
//! wherever they are nested, with Stripe's message and the full path in `param`, and nothing
//! is written; what Stripe's description allows passes.

use pome_twin_sdk::{Method, Value};

use crate::World;
use crate::tests::call;

fn world() -> World {
    <World as pome_twin_sdk::Twin>::init(None).unwrap()
}

fn refused(w: &mut World, method: Method, path: &str, form: &[(&str, &str)]) -> Value {
    let (r, v) = call(w, method, path, form);
    assert_eq!((r.status, v["error"]["type"].as_str()), (400, Some("invalid_request_error")), "{path} {form:?}: {v}");
    v["error"].clone()
}

#[test]
fn an_unknown_nested_name_is_refused_with_its_path() {
    let mut w = world();
    let e = refused(&mut w, Method::Post, "/v1/customers", &[("email", "a@x.test"), ("address[lin1]", "1 Main St")]);
    assert_eq!((e["message"].as_str(), e["param"].as_str(), e["code"].as_str()), (Some("Received unknown parameter: address[lin1]"), Some("address[lin1]"), Some("parameter_unknown")));
    let e = refused(&mut w, Method::Post, "/v1/payment_intents", &[("amount", "500"), ("currency", "usd"), ("shipping[name]", "A"), ("shipping[address][cty]", "Paris")]);
    assert_eq!(e["param"], "shipping[address][cty]");
    let e = refused(&mut w, Method::Post, "/v1/payment_intents", &[("amount", "500"), ("currency", "usd"), ("payment_method_options[card][request_3ds]", "any")]);
    assert_eq!(e["message"], "Received unknown parameter: payment_method_options[card][request_3ds]");
    // In arrays of hashes, the index is part of the path.
    let e = refused(&mut w, Method::Post, "/v1/customers", &[("tax_id_data[0][type]", "eu_vat"), ("tax_id_data[0][value]", "DE123456789"), ("tax_id_data[1][valu]", "x")]);
    assert_eq!(e["param"], "tax_id_data[1][valu]");
    // Nothing was written by any of them.
    let (_, list) = call(&mut w, Method::Get, "/v1/customers", &[]);
    assert_eq!(list["data"].as_array().map(Vec::len), Some(0));
    let (_, list) = call(&mut w, Method::Get, "/v1/payment_intents", &[]);
    assert_eq!(list["data"].as_array().map(Vec::len), Some(0));
}

#[test]
fn a_nested_value_of_the_wrong_type_is_refused_with_stripes_message() {
    let mut w = world();
    let e = refused(&mut w, Method::Post, "/v1/payment_intents", &[("amount", "500"), ("currency", "usd"), ("automatic_payment_methods[enabled]", "yes")]);
    assert_eq!((e["message"].as_str(), e["param"].as_str()), (Some("Invalid boolean: yes"), Some("automatic_payment_methods[enabled]")));
    let e = refused(
        &mut w,
        Method::Post,
        "/v1/checkout/sessions",
        &[("mode", "payment"), ("success_url", "https://shop.test/ok"), ("line_items[0][price]", "price_x"), ("line_items[0][quantity]", "two")],
    );
    assert_eq!((e["message"].as_str(), e["param"].as_str(), e["code"].as_str()), (Some("Invalid integer: two"), Some("line_items[0][quantity]"), Some("parameter_invalid_integer")));
    // A hash where a string goes, a string where a hash or an array goes.
    let e = refused(&mut w, Method::Post, "/v1/customers", &[("name[first]", "Ada")]);
    assert_eq!(e["param"], "name");
    assert!(e["message"].as_str().unwrap().starts_with("Invalid string: "), "{e}");
    let e = refused(&mut w, Method::Post, "/v1/customers", &[("shipping", "to the door")]);
    assert_eq!((e["message"].as_str(), e["param"].as_str()), (Some("Invalid hash"), Some("shipping")));
    let e = refused(&mut w, Method::Post, "/v1/payment_intents", &[("amount", "500"), ("currency", "usd"), ("payment_method_types", "card")]);
    assert_eq!((e["message"].as_str(), e["param"].as_str()), (Some("Invalid array"), Some("payment_method_types")));
    // Query parameters of a list too: `created` is an integer or a range of integers.
    let e = refused(&mut w, Method::Get, "/v1/customers?created[gte]=yesterday", &[]);
    assert_eq!((e["message"].as_str(), e["param"].as_str()), (Some("Invalid integer: yesterday"), Some("created[gte]")));
}

#[test]
fn a_nested_value_outside_its_enumeration_is_refused_naming_the_allowed_values() {
    let mut w = world();
    let e = refused(&mut w, Method::Post, "/v1/customers", &[("cash_balance[settings][reconciliation_mode]", "sometimes")]);
    assert_eq!(
        (e["message"].as_str(), e["param"].as_str()),
        (Some("Invalid cash_balance[settings][reconciliation_mode]: must be one of automatic, manual, or merchant_default"), Some("cash_balance[settings][reconciliation_mode]"))
    );
    let e = refused(&mut w, Method::Post, "/v1/payment_intents", &[("amount", "500"), ("currency", "usd"), ("payment_method_options[card][setup_future_usage]", "always")]);
    assert_eq!(
        (e["message"].as_str(), e["param"].as_str()),
        (Some("Invalid payment_method_options[card][setup_future_usage]: must be one of none, off_session, or on_session"), Some("payment_method_options[card][setup_future_usage]"))
    );
}

#[test]
fn what_stripes_description_allows_passes_at_every_depth() {
    let mut w = world();
    let (r, c) = call(
        &mut w,
        Method::Post,
        "/v1/customers",
        &[("address[line1]", "1 Main St"), ("address[city]", "Paris"), ("shipping[name]", "Ada"), ("shipping[address][line1]", "2 Side St"), ("metadata[any_key]", "v"), ("tax_id_data[0][type]", "eu_vat"), ("tax_id_data[0][value]", "DE123456789")],
    );
    assert_eq!(r.status, 200, "{c}");
    assert_eq!(c["address"]["line1"], "1 Main St");
    // Unset with an empty value; an enumeration Stripe does not hold to its values (newer
    // values pass) takes any string.
    let (r, pi) = call(
        &mut w,
        Method::Post,
        "/v1/payment_intents",
        &[("amount", "500"), ("currency", "usd"), ("description", ""), ("payment_method_options[card][request_three_d_secure]", "challenge"), ("automatic_payment_methods[enabled]", "true"), ("automatic_payment_methods[allow_redirects]", "never")],
    );
    assert_eq!(r.status, 200, "{pi}");
    let (r, list) = call(&mut w, Method::Get, "/v1/customers?created[gte]=0&limit=3", &[]);
    assert_eq!((r.status, list["data"].as_array().map(Vec::len)), (200, Some(1)));
}

#[test]
fn a_nested_hash_without_a_name_it_requires_is_refused() {
    let mut w = world();
    let e = refused(&mut w, Method::Post, "/v1/payment_intents", &[("amount", "500"), ("currency", "usd"), ("shipping[address][line1]", "1 Main St")]);
    assert_eq!((e["message"].as_str(), e["param"].as_str(), e["code"].as_str()), (Some("Missing required param: shipping[name]."), Some("shipping[name]"), Some("parameter_missing")));
    let e = refused(&mut w, Method::Post, "/v1/customers", &[("tax_id_data[0][type]", "eu_vat")]);
    assert_eq!(e["param"], "tax_id_data[0][value]");
    // Unset with an empty value, the hash needs nothing.
    let (r, pi) = call(&mut w, Method::Post, "/v1/payment_intents", &[("amount", "500"), ("currency", "usd"), ("shipping", "")]);
    assert_eq!(r.status, 200, "{pi}");
}

// Documented parameters honoured.

#[test]
fn cancel_prorates_and_invoices_now_when_asked_and_keeps_cancellation_details() {
    let (mut w, clock, cus, price) = crate::tests::billing_world(true);
    let (_, sub) = call(&mut w, Method::Post, "/v1/subscriptions", &[("customer", &cus), ("items[0][price]", &price)]);
    let sub_id = sub["id"].as_str().unwrap().to_string();
    // Half-way through January (15 of 31 days used), the plan of $15.00 is cancelled.
    call(&mut w, Method::Post, &format!("/v1/test_helpers/test_clocks/{clock}/advance"), &[("frozen_time", "1768521600")]);
    let (r, ended) = call(
        &mut w,
        Method::Delete,
        &format!("/v1/subscriptions/{sub_id}?prorate=true&invoice_now=true&cancellation_details[feedback]=too_expensive&cancellation_details[comment]=Over%20budget"),
        &[],
    );
    assert_eq!(r.status, 200, "{ended}");
    assert_eq!(ended["status"], "canceled");
    assert_eq!(ended["cancellation_details"], serde_json::json!({"comment": "Over budget", "feedback": "too_expensive", "reason": "cancellation_requested"}));
    let (_, inv) = call(&mut w, Method::Get, &format!("/v1/invoices/{}", ended["latest_invoice"].as_str().unwrap()), &[]);
    // 16 unused days of 31: a credit of $7.74, owed back through the customer's balance.
    assert_eq!((inv["total"].as_i64(), inv["amount_due"].as_i64(), inv["status"].as_str()), (Some(-774), Some(0), Some("paid")), "{inv}");
    assert_eq!(inv["lines"]["data"][0]["proration"], true);
    let (_, c) = call(&mut w, Method::Get, &format!("/v1/customers/{cus}"), &[]);
    assert_eq!(c["balance"], -774);

    // Without them, cancelling writes no invoice item and no invoice.
    let (_, sub) = call(&mut w, Method::Post, "/v1/subscriptions", &[("customer", &cus), ("items[0][price]", &price)]);
    let (_, items_before) = call(&mut w, Method::Get, "/v1/invoiceitems?limit=100", &[]);
    let (_, ended) = call(&mut w, Method::Delete, &format!("/v1/subscriptions/{}", sub["id"].as_str().unwrap()), &[]);
    assert_eq!(ended["latest_invoice"], sub["latest_invoice"]);
    let (_, items_after) = call(&mut w, Method::Get, "/v1/invoiceitems?limit=100", &[]);
    assert_eq!(items_after["data"].as_array().map(Vec::len), items_before["data"].as_array().map(Vec::len));
    // `prorate` alone leaves the credit pending as an invoice item.
    let (_, sub) = call(&mut w, Method::Post, "/v1/subscriptions", &[("customer", &cus), ("items[0][price]", &price)]);
    call(&mut w, Method::Post, &format!("/v1/test_helpers/test_clocks/{clock}/advance"), &[("frozen_time", "1768608000")]);
    call(&mut w, Method::Delete, &format!("/v1/subscriptions/{}?prorate=true", sub["id"].as_str().unwrap()), &[]);
    let (_, items) = call(&mut w, Method::Get, &format!("/v1/invoiceitems?customer={cus}&pending=true"), &[]);
    let pending: Vec<&Value> = items["data"].as_array().unwrap().iter().filter(|i| i["subscription"] == sub["id"]).collect();
    assert_eq!(pending.len(), 1, "{items}");
    assert!(pending[0]["amount"].as_i64().unwrap() < 0 && pending[0]["invoice"].is_null());
}

#[test]
fn a_price_given_only_unit_amount_decimal_keeps_it_and_charges_by_it() {
    let mut w = world();
    let (r, price) = call(&mut w, Method::Post, "/v1/prices", &[("currency", "usd"), ("unit_amount_decimal", "12.5"), ("product_data[name]", "Metered")]);
    assert_eq!(r.status, 200, "{price}");
    assert_eq!((price["unit_amount"].is_null(), price["unit_amount_decimal"].as_str()), (true, Some("12.5")));
    let (_, whole) = call(&mut w, Method::Post, "/v1/prices", &[("currency", "usd"), ("unit_amount_decimal", "1500"), ("product_data[name]", "Whole")]);
    assert_eq!((whole["unit_amount"].as_i64(), whole["unit_amount_decimal"].as_str()), (Some(1500), Some("1500")));
    let e = refused(&mut w, Method::Post, "/v1/prices", &[("currency", "usd"), ("unit_amount", "1500"), ("unit_amount_decimal", "1500"), ("product_data[name]", "Both")]);
    assert_eq!(e["code"], "parameters_exclusive");
    let e = refused(&mut w, Method::Post, "/v1/prices", &[("currency", "usd"), ("unit_amount_decimal", "1e3"), ("product_data[name]", "Odd")]);
    assert_eq!(e["param"], "unit_amount_decimal");
    // 3 × 12.5 = 37.5, rounded to 38 on the invoice item.
    let (_, cus) = call(&mut w, Method::Post, "/v1/customers", &[("email", "d@x.test")]);
    let (r, ii) = call(&mut w, Method::Post, "/v1/invoiceitems", &[("customer", cus["id"].as_str().unwrap()), ("price", price["id"].as_str().unwrap()), ("quantity", "3")]);
    assert_eq!((r.status, ii["amount"].as_i64()), (200, Some(38)), "{ii}");
}

#[test]
fn a_tiered_price_keeps_its_tiers_and_charges_by_them() {
    let mut w = world();
    let tiers = [("tiers[0][up_to]", "5"), ("tiers[0][unit_amount]", "1000"), ("tiers[1][up_to]", "inf"), ("tiers[1][unit_amount]", "800"), ("tiers[1][flat_amount]", "300")];
    let mut graduated = vec![("currency", "usd"), ("billing_scheme", "tiered"), ("tiers_mode", "graduated"), ("product_data[name]", "Seats")];
    graduated.extend_from_slice(&tiers);
    let (r, g) = call(&mut w, Method::Post, "/v1/prices", &graduated);
    assert_eq!(r.status, 200, "{g}");
    assert_eq!((g["billing_scheme"].as_str(), g["tiers_mode"].as_str(), g["unit_amount"].is_null()), (Some("tiered"), Some("graduated"), true));
    assert_eq!(g["tiers"][1], serde_json::json!({"flat_amount": 300, "flat_amount_decimal": "300", "unit_amount": 800, "unit_amount_decimal": "800", "up_to": null}));
    let mut volume = graduated.clone();
    volume[2] = ("tiers_mode", "volume");
    let (_, v) = call(&mut w, Method::Post, "/v1/prices", &volume);
    // 7 seats: graduated 5 × 10.00 + 2 × 8.00 + 3.00 = 69.00; volume 7 × 8.00 + 3.00 = 59.00.
    assert_eq!(crate::api::price_total(&g, 7), 6900);
    assert_eq!(crate::api::price_total(&v, 7), 5900);
    assert_eq!(crate::api::price_total(&v, 3), 3000);
    let (_, cus) = call(&mut w, Method::Post, "/v1/customers", &[("email", "t@x.test")]);
    let (_, ii) = call(&mut w, Method::Post, "/v1/invoiceitems", &[("customer", cus["id"].as_str().unwrap()), ("price", g["id"].as_str().unwrap()), ("quantity", "7")]);
    assert_eq!(ii["amount"], 6900, "{ii}");
    // What a tiered price cannot be.
    let e = refused(&mut w, Method::Post, "/v1/prices", &[("currency", "usd"), ("billing_scheme", "tiered"), ("tiers_mode", "volume"), ("tiers[0][up_to]", "5"), ("tiers[0][unit_amount]", "1"), ("product_data[name]", "X")]);
    assert_eq!(e["param"], "tiers[0][up_to]");
    let e = refused(&mut w, Method::Post, "/v1/prices", &[("currency", "usd"), ("billing_scheme", "tiered"), ("tiers[0][up_to]", "inf"), ("tiers[0][unit_amount]", "1"), ("product_data[name]", "X")]);
    assert_eq!((e["param"].as_str(), e["code"].as_str()), (Some("tiers_mode"), Some("parameter_missing")));
    let e = refused(&mut w, Method::Post, "/v1/prices", &[("currency", "usd"), ("unit_amount", "1"), ("tiers_mode", "volume"), ("product_data[name]", "X")]);
    assert_eq!(e["param"], "tiers_mode");
    let e = refused(&mut w, Method::Post, "/v1/prices", &[("currency", "usd"), ("billing_scheme", "tiered"), ("tiers_mode", "volume"), ("unit_amount", "5"), ("tiers[0][up_to]", "inf"), ("tiers[0][unit_amount]", "1"), ("product_data[name]", "X")]);
    assert_eq!(e["param"], "unit_amount");
}
