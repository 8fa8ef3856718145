//! The surface beyond payments and billing basics (#35, "Surface"): each family served with
//! its semantics, natively. The same flows run through stripe-python in
//! tests/python/test_stripe_families.py, with every answer checked against Stripe's OpenAPI
//! description.

use pome_twin_sdk::{Method, Request, Twin, Value};

use crate::World;
use crate::tests::call;

fn world() -> World {
    World::init(None).unwrap()
}

fn post(w: &mut World, path: &str, form: &[(&str, &str)]) -> Value {
    let (r, v) = call(w, Method::Post, path, form);
    assert_eq!(r.status, 200, "POST {path} {form:?}: {v}");
    v
}

fn get(w: &mut World, path: &str) -> Value {
    let (r, v) = call(w, Method::Get, path, &[]);
    assert_eq!(r.status, 200, "GET {path}: {v}");
    v
}

fn refused(w: &mut World, method: Method, path: &str, form: &[(&str, &str)]) -> Value {
    let (r, v) = call(w, method, path, form);
    assert!(r.status >= 400, "{path} {form:?} should be refused: {v}");
    v["error"].clone()
}

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

/// A customer with a card saved as its invoices' default, on `clock` if given.
fn customer(w: &mut World, clock: Option<&str>) -> String {
    let mut form = vec![("email", "c@x.test"), ("payment_method", "pm_card_visa"), ("invoice_settings[default_payment_method]", "pm_card_visa")];
    if let Some(c) = clock {
        form.push(("test_clock", c));
    }
    id(&post(w, "/v1/customers", &form))
}

fn price(w: &mut World, amount: &str, recurring: Option<&str>) -> String {
    let prod = id(&post(w, "/v1/products", &[("name", "Widget")]));
    let mut form = vec![("product", prod.as_str()), ("currency", "usd"), ("unit_amount", amount)];
    if let Some(i) = recurring {
        form.push(("recurring[interval]", i));
    }
    id(&post(w, "/v1/prices", &form))
}

#[test]
fn the_surface_serves_at_least_250_of_the_descriptions_operations_and_declares_the_pdf_shape_only() {
    let ops = crate::mcp_tools::operations();
    let newer = ["billing.meters", "billing.meter_events", "billing.meter_event_adjustments"];
    let described = ops.iter().filter(|o| !newer.iter().any(|n| o.action.starts_with(n))).count();
    assert!(described >= 250, "{described} operations of the description served");
    let surface = World::router().surface();
    let shape: Vec<&str> = surface.iter().filter(|r| r.fidelity == pome_twin_sdk::Fidelity::Shape).map(|r| r.action.as_str()).collect();
    assert!(shape.contains(&"quotes.pdf"), "{shape:?}");
}

#[test]
fn a_credit_note_lowers_an_open_invoice_settles_it_in_full_and_voiding_reopens_it() {
    let mut w = world();
    let cus = id(&post(&mut w, "/v1/customers", &[("email", "a@x.test")]));
    post(&mut w, "/v1/invoiceitems", &[("customer", &cus), ("amount", "5000"), ("currency", "usd")]);
    let inv = id(&post(&mut w, "/v1/invoices", &[("customer", &cus), ("pending_invoice_items_behavior", "include"), ("collection_method", "send_invoice"), ("days_until_due", "30")]));
    let inv_obj = post(&mut w, &format!("/v1/invoices/{inv}/finalize"), &[]);
    let line = inv_obj["lines"]["data"][0]["id"].as_str().unwrap().to_string();
    // A preview changes nothing.
    let pv = get(&mut w, &format!("/v1/credit_notes/preview?invoice={inv}&amount=1500"));
    assert_eq!((pv["total"].as_i64(), pv["type"].as_str()), (Some(1500), Some("pre_payment")));
    assert_eq!(get(&mut w, &format!("/v1/invoices/{inv}"))["amount_remaining"], 5000);
    let cn = post(&mut w, "/v1/credit_notes", &[("invoice", &inv), ("lines[0][type]", "invoice_line_item"), ("lines[0][invoice_line_item]", &line), ("lines[0][amount]", "1500"), ("reason", "order_change")]);
    assert_eq!((cn["amount"].as_i64(), cn["status"].as_str(), cn["number"].as_str()), (Some(1500), Some("issued"), Some("TWIN-0001-CN-01")));
    let i = get(&mut w, &format!("/v1/invoices/{inv}"));
    assert_eq!((i["amount_remaining"].as_i64(), i["pre_payment_credit_notes_amount"].as_i64()), (Some(3500), Some(1500)));
    // More than is left on the line is refused.
    let e = refused(&mut w, Method::Post, "/v1/credit_notes", &[("invoice", &inv), ("lines[0][type]", "invoice_line_item"), ("lines[0][invoice_line_item]", &line), ("lines[0][amount]", "4000")]);
    assert_eq!(e["param"], "lines[0][amount]");
    let full = post(&mut w, "/v1/credit_notes", &[("invoice", &inv), ("amount", "3500")]);
    let i = get(&mut w, &format!("/v1/invoices/{inv}"));
    assert_eq!((i["status"].as_str(), i["amount_remaining"].as_i64()), (Some("paid"), Some(0)));
    let lines = get(&mut w, &format!("/v1/credit_notes/{}/lines", id(&full)));
    assert_eq!(lines["data"][0]["amount"], 3500);
    let v = post(&mut w, &format!("/v1/credit_notes/{}/void", id(&full)), &[]);
    assert_eq!(v["status"], "void");
    let i = get(&mut w, &format!("/v1/invoices/{inv}"));
    assert_eq!((i["status"].as_str(), i["amount_remaining"].as_i64()), (Some("open"), Some(3500)));
    assert_eq!(get(&mut w, &format!("/v1/credit_notes?invoice={inv}"))["data"].as_array().unwrap().len(), 2);
}

#[test]
fn a_credit_note_on_a_paid_invoice_refunds_and_credits_what_it_says_and_must_add_up() {
    let mut w = world();
    let cus = customer(&mut w, None);
    post(&mut w, "/v1/invoiceitems", &[("customer", &cus), ("amount", "8000"), ("currency", "usd")]);
    let inv = id(&post(&mut w, "/v1/invoices", &[("customer", &cus), ("pending_invoice_items_behavior", "include")]));
    let paid = post(&mut w, &format!("/v1/invoices/{inv}/pay"), &[]);
    assert_eq!(paid["status"], "paid");
    let e = refused(&mut w, Method::Post, "/v1/credit_notes", &[("invoice", &inv), ("amount", "3000")]);
    assert!(e["message"].as_str().unwrap().starts_with("The sum of credit amount, refund amount and out of band amount ($0.00) must equal the credit note amount ($30.00)"), "{e}");
    let cn = post(&mut w, "/v1/credit_notes", &[("invoice", &inv), ("amount", "3000"), ("refund_amount", "2000"), ("credit_amount", "1000")]);
    assert_eq!(cn["type"], "post_payment");
    let re = get(&mut w, &format!("/v1/refunds/{}", cn["refund"].as_str().unwrap()));
    assert_eq!((re["amount"].as_i64(), re["charge"].clone()), (Some(2000), paid["charge"].clone()));
    assert_eq!(get(&mut w, &format!("/v1/customers/{cus}"))["balance"], -1000);
    assert_eq!(get(&mut w, &format!("/v1/invoices/{inv}"))["post_payment_credit_notes_amount"], 3000);
    // A refund cannot be taken back: no void.
    refused(&mut w, Method::Post, &format!("/v1/credit_notes/{}/void", id(&cn)), &[]);
}

#[test]
fn a_quote_is_drafted_finalized_and_accepted_into_a_subscription_with_its_one_time_items() {
    let mut w = world();
    let cus = customer(&mut w, None);
    let monthly = price(&mut w, "2000", Some("month"));
    let setup = price(&mut w, "5000", None);
    let q = post(&mut w, "/v1/quotes", &[("customer", &cus), ("line_items[0][price]", &monthly), ("line_items[0][quantity]", "2"), ("line_items[1][price]", &setup)]);
    assert_eq!((q["status"].as_str(), q["amount_total"].as_i64()), (Some("draft"), Some(9000)));
    assert_eq!(q["computed"]["recurring"]["amount_total"], 4000);
    assert!(q.get("line_items").is_none(), "line items come only when expanded");
    let qid = id(&q);
    let items = get(&mut w, &format!("/v1/quotes/{qid}/line_items"));
    assert_eq!(items["data"].as_array().unwrap().len(), 2);
    refused(&mut w, Method::Post, &format!("/v1/quotes/{qid}/accept"), &[]);
    let f = post(&mut w, &format!("/v1/quotes/{qid}/finalize"), &[]);
    assert_eq!((f["status"].as_str(), f["number"].as_str()), (Some("open"), Some("QT-TWIN-0001")));
    refused(&mut w, Method::Post, &format!("/v1/quotes/{qid}"), &[("description", "too late")]);
    let a = post(&mut w, &format!("/v1/quotes/{qid}/accept"), &[]);
    assert_eq!(a["status"], "accepted");
    let sub = get(&mut w, &format!("/v1/subscriptions/{}", a["subscription"].as_str().unwrap()));
    assert_eq!(sub["status"], "active");
    let inv = get(&mut w, &format!("/v1/invoices/{}", a["invoice"].as_str().unwrap()));
    assert_eq!((inv["amount_paid"].as_i64(), inv["status"].as_str()), (Some(9000), Some("paid")));
    let (r, _) = call(&mut w, Method::Get, &format!("/v1/quotes/{qid}/pdf"), &[]);
    assert_eq!(r.header("content-type"), Some("application/pdf"));
    assert!(r.body.starts_with(b"%PDF-1.4"));
}

#[test]
fn a_one_time_quote_accepted_makes_a_draft_invoice_and_a_canceled_one_cannot_be_accepted() {
    let mut w = world();
    let cus = customer(&mut w, None);
    let setup = price(&mut w, "5000", None);
    let q = id(&post(&mut w, "/v1/quotes", &[("customer", &cus), ("line_items[0][price]", &setup), ("line_items[0][quantity]", "3")]));
    post(&mut w, &format!("/v1/quotes/{q}/finalize"), &[]);
    let a = post(&mut w, &format!("/v1/quotes/{q}/accept"), &[]);
    let inv = get(&mut w, &format!("/v1/invoices/{}", a["invoice"].as_str().unwrap()));
    assert_eq!((inv["status"].as_str(), inv["total"].as_i64(), inv["quote"].as_str()), (Some("draft"), Some(15000), Some(q.as_str())));
    let q2 = id(&post(&mut w, "/v1/quotes", &[("customer", &cus), ("line_items[0][price]", &setup)]));
    post(&mut w, &format!("/v1/quotes/{q2}/cancel"), &[]);
    let e = refused(&mut w, Method::Post, &format!("/v1/quotes/{q2}/finalize"), &[]);
    assert_eq!(e["code"], "quote_unexpected_state");
}

#[test]
fn a_schedule_moves_its_subscription_to_the_next_phase_as_the_clock_passes_and_then_releases_it() {
    let mut w = world();
    let t0 = 1_767_225_600; // 2026-01-01
    let clock = id(&post(&mut w, "/v1/test_helpers/test_clocks", &[("frozen_time", &t0.to_string())]));
    let cus = customer(&mut w, Some(&clock));
    let basic = price(&mut w, "1000", Some("month"));
    let pro = price(&mut w, "3000", Some("month"));
    let s = post(&mut w, "/v1/subscription_schedules", &[
        ("customer", &cus), ("start_date", "now"), ("end_behavior", "release"),
        ("phases[0][items][0][price]", &basic), ("phases[0][iterations]", "1"),
        ("phases[1][items][0][price]", &pro), ("phases[1][iterations]", "1"),
    ]);
    assert_eq!(s["status"], "active");
    let sub = s["subscription"].as_str().unwrap().to_string();
    assert_eq!(get(&mut w, &format!("/v1/subscriptions/{sub}"))["schedule"], id(&s));
    // A month on, the second phase's price is billed.
    post(&mut w, &format!("/v1/test_helpers/test_clocks/{clock}/advance"), &[("frozen_time", &(t0 + 31 * 86_400 + 60).to_string())]);
    let sub_now = get(&mut w, &format!("/v1/subscriptions/{sub}"));
    assert_eq!(sub_now["items"]["data"][0]["price"]["id"], pro.as_str());
    let inv = get(&mut w, &format!("/v1/invoices/{}", sub_now["latest_invoice"].as_str().unwrap()));
    assert_eq!(inv["amount_paid"], 3000);
    // When the last phase ends, the subscription goes on alone.
    post(&mut w, &format!("/v1/test_helpers/test_clocks/{clock}/advance"), &[("frozen_time", &(t0 + 60 * 86_400).to_string())]);
    let s = get(&mut w, &format!("/v1/subscription_schedules/{}", id(&s)));
    assert_eq!((s["status"].as_str(), s["released_subscription"].as_str()), (Some("released"), Some(sub.as_str())));
    assert!(get(&mut w, &format!("/v1/subscriptions/{sub}"))["schedule"].is_null());
}

#[test]
fn a_schedule_from_a_subscription_takes_its_period_and_cancels_with_it() {
    let mut w = world();
    let cus = customer(&mut w, None);
    let basic = price(&mut w, "1000", Some("month"));
    let sub = id(&post(&mut w, "/v1/subscriptions", &[("customer", &cus), ("items[0][price]", &basic)]));
    let s = post(&mut w, "/v1/subscription_schedules", &[("from_subscription", &sub)]);
    assert_eq!((s["status"].as_str(), s["phases"].as_array().map(Vec::len)), (Some("active"), Some(1)));
    let e = refused(&mut w, Method::Post, "/v1/subscription_schedules", &[("from_subscription", &sub)]);
    assert_eq!(e["param"], "from_subscription");
    let c = post(&mut w, &format!("/v1/subscription_schedules/{}/cancel", id(&s)), &[]);
    assert_eq!(c["status"], "canceled");
    assert_eq!(get(&mut w, &format!("/v1/subscriptions/{sub}"))["status"], "canceled");
}

#[test]
fn metered_usage_is_invoiced_at_the_end_of_its_period_from_usage_records_and_from_a_meter() {
    let mut w = world();
    let t0 = 1_767_225_600;
    let clock = id(&post(&mut w, "/v1/test_helpers/test_clocks", &[("frozen_time", &t0.to_string())]));
    let cus = customer(&mut w, Some(&clock));
    let prod = id(&post(&mut w, "/v1/products", &[("name", "API calls")]));
    let per_call = id(&post(&mut w, "/v1/prices", &[("product", &prod), ("currency", "usd"), ("unit_amount", "5"), ("recurring[interval]", "month"), ("recurring[usage_type]", "metered")]));
    let meter = post(&mut w, "/v1/billing/meters", &[("display_name", "Tokens"), ("event_name", "tokens"), ("default_aggregation[formula]", "sum")]);
    let per_token = id(&post(&mut w, "/v1/prices", &[("product", &prod), ("currency", "usd"), ("unit_amount", "2"), ("recurring[interval]", "month"), ("recurring[usage_type]", "metered"), ("recurring[meter]", &id(&meter))]));
    let e = refused(&mut w, Method::Post, "/v1/subscriptions", &[("customer", &cus), ("items[0][price]", &per_call), ("items[0][quantity]", "3")]);
    assert_eq!(e["param"], "items[0][quantity]");
    let sub = post(&mut w, "/v1/subscriptions", &[("customer", &cus), ("items[0][price]", &per_call), ("items[1][price]", &per_token)]);
    let item = sub["items"]["data"][0]["id"].as_str().unwrap().to_string();
    assert!(sub["items"]["data"][0]["quantity"].is_null());
    for (q, at) in [("100", t0 + 10), ("250", t0 + 20)] {
        post(&mut w, &format!("/v1/subscription_items/{item}/usage_records"), &[("quantity", q), ("timestamp", &at.to_string())]);
    }
    for (v, at) in [("1000", t0 + 30), ("500", t0 + 40)] {
        post(&mut w, "/v1/billing/meter_events", &[("event_name", "tokens"), ("payload[stripe_customer_id]", &cus), ("payload[value]", v), ("timestamp", &at.to_string())]);
    }
    let s = get(&mut w, &format!("/v1/subscription_items/{item}/usage_record_summaries"));
    assert_eq!(s["data"][0]["total_usage"], 350);
    let es = get(&mut w, &format!("/v1/billing/meters/{}/event_summaries?customer={cus}&start_time={t0}&end_time={}", id(&meter), t0 + 3600));
    assert_eq!(es["data"][0]["aggregated_value"], 1500.0);
    post(&mut w, &format!("/v1/test_helpers/test_clocks/{clock}/advance"), &[("frozen_time", &(t0 + 32 * 86_400).to_string())]);
    let sub = get(&mut w, &format!("/v1/subscriptions/{}", id(&sub)));
    let inv = get(&mut w, &format!("/v1/invoices/{}", sub["latest_invoice"].as_str().unwrap()));
    // 350 calls at 5 and 1,500 tokens at 2.
    assert_eq!(inv["amount_due"], 350 * 5 + 1500 * 2, "{}", inv["lines"]);
}

#[test]
fn a_plan_is_a_recurring_price_seen_the_old_way() {
    let mut w = world();
    let p = post(&mut w, "/v1/plans", &[("id", "gold"), ("amount", "2000"), ("currency", "usd"), ("interval", "month"), ("product[name]", "Gold")]);
    assert_eq!((p["object"].as_str(), p["id"].as_str(), p["amount"].as_i64()), (Some("plan"), Some("gold"), Some(2000)));
    assert_eq!(get(&mut w, "/v1/prices/gold")["recurring"]["interval"], "month");
    assert_eq!(get(&mut w, "/v1/plans")["data"].as_array().unwrap().len(), 1);
    let e = refused(&mut w, Method::Post, "/v1/plans", &[("id", "gold"), ("amount", "2000"), ("currency", "usd"), ("interval", "month"), ("product[name]", "Gold")]);
    assert_eq!(e["code"], "resource_already_exists");
    let d = call(&mut w, Method::Delete, "/v1/plans/gold", &[]).1;
    assert_eq!(d["deleted"], true);
    refused(&mut w, Method::Get, "/v1/plans/gold", &[]);
}

#[test]
fn portal_sessions_follow_their_configuration() {
    let mut w = world();
    let cus = customer(&mut w, None);
    let e = refused(&mut w, Method::Post, "/v1/billing_portal/configurations", &[("features[subscription_update][enabled]", "true"), ("features[subscription_update][default_allowed_updates][0]", "price")]);
    assert_eq!(e["param"], "features[subscription_update][products]");
    let conf = post(&mut w, "/v1/billing_portal/configurations", &[("features[invoice_history][enabled]", "true"), ("default_return_url", "https://shop.test/account")]);
    let s = post(&mut w, "/v1/billing_portal/sessions", &[("customer", &cus), ("configuration", &id(&conf))]);
    assert_eq!(s["return_url"], "https://shop.test/account");
    assert!(s["url"].as_str().unwrap().starts_with("https://billing.stripe.com/p/session/"));
    let e = refused(&mut w, Method::Post, "/v1/billing_portal/sessions", &[("customer", &cus), ("configuration", &id(&conf)), ("flow_data[type]", "payment_method_update")]);
    assert_eq!(e["param"], "flow_data[type]");
    // With no configuration named, the account's default serves (made once).
    let d = post(&mut w, "/v1/billing_portal/sessions", &[("customer", &cus)]);
    let d2 = post(&mut w, "/v1/billing_portal/sessions", &[("customer", &cus), ("flow_data[type]", "payment_method_update")]);
    assert_eq!(d["configuration"], d2["configuration"]);
    assert_eq!(get(&mut w, "/v1/billing_portal/configurations?is_default=true")["data"].as_array().unwrap().len(), 1);
}

#[test]
fn tax_rates_and_a_customers_tax_ids() {
    let mut w = world();
    let r = post(&mut w, "/v1/tax_rates", &[("display_name", "VAT"), ("percentage", "20"), ("inclusive", "false"), ("country", "de")]);
    assert_eq!((r["percentage"].as_f64(), r["country"].as_str()), (Some(20.0), Some("DE")));
    let e = refused(&mut w, Method::Post, &format!("/v1/tax_rates/{}", id(&r)), &[("percentage", "10")]);
    assert_eq!(e["code"], "parameter_unknown");
    post(&mut w, &format!("/v1/tax_rates/{}", id(&r)), &[("active", "false")]);
    assert_eq!(get(&mut w, "/v1/tax_rates?active=true")["data"].as_array().unwrap().len(), 0);
    let cus = customer(&mut w, None);
    let t = post(&mut w, &format!("/v1/customers/{cus}/tax_ids"), &[("type", "eu_vat"), ("value", "DE123456789")]);
    assert_eq!((t["country"].as_str(), t["verification"]["status"].as_str()), (Some("DE"), Some("pending")));
    let e = refused(&mut w, Method::Post, &format!("/v1/customers/{cus}/tax_ids"), &[("type", "us_ein"), ("value", "12")]);
    assert_eq!(e["code"], "tax_id_invalid");
    assert_eq!(get(&mut w, &format!("/v1/customers/{cus}/tax_ids"))["data"].as_array().unwrap().len(), 1);
    let d = call(&mut w, Method::Delete, &format!("/v1/customers/{cus}/tax_ids/{}", id(&t)), &[]).1;
    assert_eq!(d["deleted"], true);
    assert_eq!(get(&mut w, "/v1/tax_codes/txcd_99999999")["name"], "General - Tangible Goods");
}

#[test]
fn shipping_rates_are_made_listed_and_deactivated() {
    let mut w = world();
    let r = post(&mut w, "/v1/shipping_rates", &[("display_name", "Ground"), ("fixed_amount[amount]", "500"), ("fixed_amount[currency]", "usd"), ("delivery_estimate[minimum][unit]", "business_day"), ("delivery_estimate[minimum][value]", "3"), ("delivery_estimate[maximum][unit]", "business_day"), ("delivery_estimate[maximum][value]", "5")]);
    assert_eq!(r["delivery_estimate"]["maximum"]["value"], 5);
    let e = refused(&mut w, Method::Post, "/v1/shipping_rates", &[("display_name", "Ground"), ("fixed_amount[amount]", "500"), ("fixed_amount[currency]", "usd"), ("delivery_estimate[minimum][unit]", "week"), ("delivery_estimate[minimum][value]", "2"), ("delivery_estimate[maximum][unit]", "day"), ("delivery_estimate[maximum][value]", "3")]);
    assert_eq!(e["param"], "delivery_estimate[minimum]");
    let ok = post(&mut w, "/v1/shipping_rates", &[("display_name", "Express"), ("fixed_amount[amount]", "1500"), ("fixed_amount[currency]", "usd")]);
    post(&mut w, &format!("/v1/shipping_rates/{}", id(&ok)), &[("active", "false")]);
    assert_eq!(get(&mut w, "/v1/shipping_rates?active=false")["data"][0]["id"], id(&ok));
}

/// A `multipart/form-data` upload as stripe-python sends it.
fn upload(w: &mut World, purpose: &str, name: &str, bytes: &[u8]) -> (u16, Value) {
    let b = "----pomeboundary";
    let mut body = format!("--{b}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\n{purpose}\r\n--{b}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\nContent-Type: application/octet-stream\r\n\r\n").into_bytes();
    body.extend_from_slice(bytes);
    body.extend_from_slice(format!("\r\n--{b}--\r\n").as_bytes());
    let mut req = Request::new(Method::Post, "/v1/files");
    req.headers.push(("content-type".into(), format!("multipart/form-data; boundary={b}")));
    req.body = body;
    let mut c = pome_twin_sdk::Call::new(req);
    let r = World::router().dispatch(w, &mut c);
    (r.status, r.json_body())
}

#[test]
fn a_file_is_uploaded_linked_and_served_at_its_link_until_it_expires() {
    let mut w = world();
    let (s, f) = upload(&mut w, "dispute_evidence", "receipt.pdf", b"%PDF-1.4 receipt");
    assert_eq!(s, 200, "{f}");
    assert_eq!((f["type"].as_str(), f["size"].as_i64(), f["filename"].as_str()), (Some("pdf"), Some(16), Some("receipt.pdf")));
    let (s, e) = upload(&mut w, "dispute_evidence", "notes.exe", b"MZ...");
    assert_eq!((s, e["error"]["param"].as_str()), (400, Some("file")));
    let (s, e) = upload(&mut w, "nonsense", "a.pdf", b"%PDF");
    assert_eq!((s, e["error"]["param"].as_str()), (400, Some("purpose")));
    let l = post(&mut w, "/v1/file_links", &[("file", &id(&f))]);
    assert_eq!(l["expired"], false);
    let path = l["url"].as_str().unwrap().trim_start_matches("http://twin.test").to_string();
    let (r, _) = call(&mut w, Method::Get, &path, &[]);
    assert_eq!((r.status, r.body.as_slice()), (200, b"%PDF-1.4 receipt".as_slice()));
    let l = post(&mut w, &format!("/v1/file_links/{}", id(&l)), &[("expires_at", "now")]);
    assert_eq!(l["expired"], true);
    assert_eq!(call(&mut w, Method::Get, &path, &[]).0.status, 410);
    assert_eq!(get(&mut w, &format!("/v1/files/{}", id(&f)))["links"]["data"].as_array().unwrap().len(), 1);
}

/// A custom account complete enough for its capabilities to be active.
fn connected_account(w: &mut World) -> String {
    let a = post(w, "/v1/accounts", &[
        ("type", "custom"), ("country", "US"), ("email", "shop@x.test"), ("capabilities[card_payments][requested]", "true"), ("capabilities[transfers][requested]", "true"),
        ("business_type", "individual"), ("individual[first_name]", "Jenny"), ("individual[last_name]", "Rosen"), ("individual[email]", "j@x.test"), ("individual[phone]", "0000000000"),
        ("individual[dob][day]", "1"), ("individual[dob][month]", "1"), ("individual[dob][year]", "1990"), ("individual[address][line1]", "1 Main St"), ("individual[address][city]", "SF"),
        ("individual[address][postal_code]", "94111"), ("individual[address][state]", "CA"), ("individual[ssn_last_4]", "0000"), ("business_profile[mcc]", "5734"),
        ("business_profile[url]", "https://shop.test"), ("tos_acceptance[date]", "1700000000"), ("tos_acceptance[ip]", "127.0.0.1"), ("external_account", "btok_us_verified"),
    ]);
    assert_eq!((a["charges_enabled"].as_bool(), a["capabilities"]["transfers"].as_str()), (Some(true), Some("active")), "{}", a["requirements"]);
    id(&a)
}

#[test]
fn a_custom_account_is_active_once_nothing_is_due_and_a_destination_charge_pays_it_and_the_platform() {
    let mut w = world();
    let bare = post(&mut w, "/v1/accounts", &[("type", "custom"), ("capabilities[transfers][requested]", "true")]);
    assert_eq!(bare["capabilities"]["transfers"], "inactive");
    assert!(bare["requirements"]["currently_due"].as_array().unwrap().iter().any(|f| f == "external_account"));
    let e = refused(&mut w, Method::Post, "/v1/transfers", &[("amount", "100"), ("currency", "usd"), ("destination", &id(&bare))]);
    assert_eq!(e["code"], "insufficient_capabilities_for_transfer");
    let acct = connected_account(&mut w);
    let pi = post(&mut w, "/v1/payment_intents", &[("amount", "10000"), ("currency", "usd"), ("payment_method", "pm_card_visa"), ("confirm", "true"), ("application_fee_amount", "1230"), ("transfer_data[destination]", &acct)]);
    let ch = get(&mut w, &format!("/v1/charges/{}", pi["latest_charge"].as_str().unwrap()));
    let tr = get(&mut w, &format!("/v1/transfers/{}", ch["transfer"].as_str().unwrap()));
    assert_eq!((tr["amount"].as_i64(), tr["destination"].as_str()), (Some(10000), Some(acct.as_str())));
    let fee = get(&mut w, &format!("/v1/application_fees/{}", ch["application_fee"].as_str().unwrap()));
    assert_eq!((fee["amount"].as_i64(), fee["account"].as_str()), (Some(1230), Some(acct.as_str())));
    // A refund may give the transfer and the fee back in proportion.
    let re = post(&mut w, "/v1/refunds", &[("charge", ch["id"].as_str().unwrap()), ("amount", "5000"), ("reverse_transfer", "true"), ("refund_application_fee", "true")]);
    assert!(re["transfer_reversal"].is_string());
    assert_eq!(get(&mut w, &format!("/v1/transfers/{}", id(&tr)))["amount_reversed"], 5000);
    assert_eq!(get(&mut w, &format!("/v1/application_fees/{}", id(&fee)))["amount_refunded"], 615);
    let e = refused(&mut w, Method::Post, "/v1/payment_intents", &[("amount", "1000"), ("currency", "usd"), ("application_fee_amount", "100")]);
    assert_eq!(e["param"], "application_fee_amount");
}

#[test]
fn transfers_take_available_funds_and_reversals_give_them_back() {
    let mut w = world();
    let acct = connected_account(&mut w);
    let e = refused(&mut w, Method::Post, "/v1/transfers", &[("amount", "5000"), ("currency", "usd"), ("destination", &acct)]);
    assert_eq!(e["code"], "balance_insufficient");
    post(&mut w, "/v1/topups", &[("amount", "10000"), ("currency", "usd")]);
    let tr = post(&mut w, "/v1/transfers", &[("amount", "5000"), ("currency", "usd"), ("destination", &acct), ("transfer_group", "ORDER_7")]);
    let rev = post(&mut w, &format!("/v1/transfers/{}/reversals", id(&tr)), &[("amount", "2000")]);
    assert_eq!(rev["amount"], 2000);
    let tr = get(&mut w, &format!("/v1/transfers/{}", id(&tr)));
    assert_eq!((tr["amount_reversed"].as_i64(), tr["reversals"]["data"].as_array().map(Vec::len)), (Some(2000), Some(1)));
    let e = refused(&mut w, Method::Post, &format!("/v1/transfers/{}/reversals", id(&tr)), &[("amount", "4000")]);
    assert_eq!(e["code"], "amount_too_large");
    assert_eq!(get(&mut w, "/v1/transfers?transfer_group=ORDER_7")["data"].as_array().unwrap().len(), 1);
}

#[test]
fn an_express_account_is_onboarded_on_its_account_links_page() {
    let mut w = world();
    let a = id(&post(&mut w, "/v1/accounts", &[("type", "express"), ("capabilities[card_payments][requested]", "true"), ("capabilities[transfers][requested]", "true")]));
    refused(&mut w, Method::Post, &format!("/v1/accounts/{a}/login_links"), &[]);
    let link = post(&mut w, "/v1/account_links", &[("account", &a), ("refresh_url", "https://shop.test/refresh"), ("return_url", "https://shop.test/return"), ("type", "account_onboarding")]);
    let path = link["url"].as_str().unwrap().trim_start_matches("http://twin.test").to_string();
    let mut c = pome_twin_sdk::Call::new(Request::new(Method::Get, &path));
    let r = World::router().dispatch(&mut w, &mut c);
    assert_eq!((r.status, r.header("location")), (302, Some("https://shop.test/return")));
    let acct = get(&mut w, &format!("/v1/accounts/{a}"));
    assert_eq!((acct["details_submitted"].as_bool(), acct["charges_enabled"].as_bool(), acct["payouts_enabled"].as_bool()), (Some(true), Some(true), Some(true)), "{}", acct["requirements"]);
    // A link is used once.
    let mut c = pome_twin_sdk::Call::new(Request::new(Method::Get, &path));
    assert_eq!(World::router().dispatch(&mut w, &mut c).header("location"), Some("https://shop.test/refresh"));
    assert!(post(&mut w, &format!("/v1/accounts/{a}/login_links"), &[])["url"].as_str().unwrap().starts_with("https://connect.stripe.com/express/"));
    let caps = get(&mut w, &format!("/v1/accounts/{a}/capabilities"));
    assert!(caps["data"].as_array().unwrap().iter().all(|c| c["status"] == "active"));
}

#[test]
fn persons_and_external_accounts_of_a_company_account() {
    let mut w = world();
    let a = id(&post(&mut w, "/v1/accounts", &[("type", "custom"), ("business_type", "company"), ("capabilities[transfers][requested]", "true")]));
    let p = post(&mut w, &format!("/v1/accounts/{a}/persons"), &[("first_name", "Ada"), ("relationship[representative]", "true"), ("relationship[title]", "CEO")]);
    assert_eq!(p["relationship"]["representative"], true);
    let reps = get(&mut w, &format!("/v1/accounts/{a}/people?relationship[representative]=true"));
    assert_eq!(reps["data"].as_array().unwrap().len(), 1);
    let ba = post(&mut w, &format!("/v1/accounts/{a}/external_accounts"), &[("external_account[object]", "bank_account"), ("external_account[country]", "US"), ("external_account[currency]", "usd"), ("external_account[routing_number]", "110000000"), ("external_account[account_number]", "000123456789")]);
    assert_eq!((ba["last4"].as_str(), ba["default_for_currency"].as_bool()), (Some("6789"), Some(true)));
    let card = post(&mut w, &format!("/v1/accounts/{a}/external_accounts"), &[("external_account", "tok_visa_debit")]);
    assert_eq!(card["object"], "card");
    assert_eq!(get(&mut w, &format!("/v1/accounts/{a}/external_accounts?object=card"))["data"].as_array().unwrap().len(), 1);
    let e = refused(&mut w, Method::Delete, &format!("/v1/accounts/{a}/external_accounts/{}", id(&ba)), &[]);
    assert!(e["message"].as_str().unwrap().starts_with("You cannot delete the default external account"));
    let r = post(&mut w, &format!("/v1/accounts/{a}/reject"), &[("reason", "fraud")]);
    assert_eq!(r["requirements"]["disabled_reason"], "rejected.fraud");
}

#[test]
fn an_elevated_risk_payment_is_reviewed_and_a_reported_one_warns_until_refunded() {
    let mut w = world();
    let pi = post(&mut w, "/v1/payment_intents", &[("amount", "3000"), ("currency", "usd"), ("payment_method", "pm_card_riskLevelElevated"), ("confirm", "true")]);
    assert_eq!(pi["status"], "succeeded");
    let review = pi["review"].as_str().unwrap().to_string();
    assert_eq!(get(&mut w, "/v1/reviews")["data"][0]["id"], review.as_str());
    let r = post(&mut w, &format!("/v1/reviews/{review}/approve"), &[]);
    assert_eq!((r["open"].as_bool(), r["closed_reason"].as_str()), (Some(false), Some("approved")));
    refused(&mut w, Method::Post, &format!("/v1/reviews/{review}/approve"), &[]);
    let pi = post(&mut w, "/v1/payment_intents", &[("amount", "3000"), ("currency", "usd"), ("payment_method", "pm_card_createIssuerFraudRecord"), ("confirm", "true")]);
    let efw = get(&mut w, &format!("/v1/radar/early_fraud_warnings?payment_intent={}", id(&pi)));
    assert_eq!(efw["data"][0]["actionable"], true);
    post(&mut w, "/v1/refunds", &[("payment_intent", &id(&pi)), ("reason", "fraudulent")]);
    let efw = get(&mut w, &format!("/v1/radar/early_fraud_warnings/{}", efw["data"][0]["id"].as_str().unwrap()));
    assert_eq!(efw["actionable"], false);
}

#[test]
fn value_lists_hold_items_of_their_type() {
    let mut w = world();
    let l = post(&mut w, "/v1/radar/value_lists", &[("alias", "blocked_emails"), ("name", "Blocked emails"), ("item_type", "email")]);
    refused(&mut w, Method::Post, "/v1/radar/value_lists", &[("alias", "blocked_emails"), ("name", "Again")]);
    let e = refused(&mut w, Method::Post, "/v1/radar/value_list_items", &[("value_list", &id(&l)), ("value", "not-an-email")]);
    assert_eq!(e["param"], "value");
    let item = post(&mut w, "/v1/radar/value_list_items", &[("value_list", &id(&l)), ("value", "fraud@x.test")]);
    assert_eq!(get(&mut w, &format!("/v1/radar/value_lists/{}", id(&l)))["list_items"]["data"][0]["id"], id(&item));
    assert_eq!(get(&mut w, "/v1/radar/value_lists?contains=fraud@x.test")["data"].as_array().unwrap().len(), 1);
    call(&mut w, Method::Delete, &format!("/v1/radar/value_lists/{}", id(&l)), &[]);
    refused(&mut w, Method::Get, &format!("/v1/radar/value_list_items/{}", id(&item)), &[]);
}

#[test]
fn a_setup_intent_records_its_attempts_and_its_mandate() {
    let mut w = world();
    let cus = id(&post(&mut w, "/v1/customers", &[("email", "m@x.test")]));
    let si = post(&mut w, "/v1/setup_intents", &[("customer", &cus), ("payment_method", "pm_card_visa"), ("confirm", "true"), ("mandate_data[customer_acceptance][type]", "online"), ("mandate_data[customer_acceptance][online][ip_address]", "1.2.3.4"), ("mandate_data[customer_acceptance][online][user_agent]", "curl")]);
    assert_eq!(si["status"], "succeeded");
    let m = get(&mut w, &format!("/v1/mandates/{}", si["mandate"].as_str().unwrap()));
    assert_eq!((m["status"].as_str(), m["type"].as_str()), (Some("active"), Some("multi_use")));
    let atts = get(&mut w, &format!("/v1/setup_attempts?setup_intent={}", id(&si)));
    assert_eq!(atts["data"][0]["status"], "succeeded");
    let declined = call(&mut w, Method::Post, "/v1/setup_intents", &[("payment_method", "pm_card_chargeDeclined"), ("confirm", "true")]).1;
    let si2 = declined["error"]["setup_intent"]["id"].as_str().unwrap().to_string();
    assert_eq!(get(&mut w, &format!("/v1/setup_attempts?setup_intent={si2}"))["data"][0]["status"], "failed");
}

#[test]
fn tokens_charges_refunds_topups_and_keys() {
    let mut w = world();
    let tok = post(&mut w, "/v1/tokens", &[("card[number]", "4000000000000002"), ("card[exp_month]", "12"), ("card[exp_year]", "2034"), ("card[cvc]", "123")]);
    let e = refused(&mut w, Method::Post, "/v1/charges", &[("amount", "1000"), ("currency", "usd"), ("source", &id(&tok))]);
    assert_eq!(e["decline_code"], "generic_decline");
    let e = refused(&mut w, Method::Post, "/v1/charges", &[("amount", "1000"), ("currency", "usd"), ("source", &id(&tok))]);
    assert_eq!(e["code"], "token_already_used");
    let ch = id(&post(&mut w, "/v1/charges", &[("amount", "4000"), ("currency", "usd"), ("source", "tok_visa")]));
    post(&mut w, &format!("/v1/charges/{ch}/refunds"), &[("amount", "1000")]);
    let c = post(&mut w, &format!("/v1/charges/{ch}/refund"), &[]);
    assert_eq!((c["amount_refunded"].as_i64(), c["refunded"].as_bool()), (Some(4000), Some(true)));
    assert_eq!(get(&mut w, &format!("/v1/charges/{ch}/refunds"))["data"].as_array().unwrap().len(), 2);
    let t = post(&mut w, "/v1/topups", &[("amount", "2500"), ("currency", "usd")]);
    assert_eq!(t["status"], "succeeded");
    refused(&mut w, Method::Post, &format!("/v1/topups/{}/cancel", id(&t)), &[]);
    let cus = id(&post(&mut w, "/v1/customers", &[("email", "k@x.test")]));
    let mut req = Request::new(Method::Post, "/v1/ephemeral_keys").with_form(&[("customer", &cus)]);
    req.headers.push(("stripe-version".into(), "2024-06-20".into()));
    let mut c = pome_twin_sdk::Call::new(req);
    let k = World::router().dispatch(&mut w, &mut c).json_body();
    assert!(k["secret"].as_str().unwrap().starts_with("ek_test_"), "{k}");
    refused(&mut w, Method::Post, "/v1/ephemeral_keys", &[("customer", &cus)]);
}
