//! 3-D Secure cannot be skipped (#35): an intent whose card requires authentication waits in
//! `requires_action` until the customer answers the test page its `next_action` names;
//! confirming again from the server starts a new attempt; the Charges API declines such cards.

use pome_twin_sdk::{Method, Response, Value};

use crate::World;
use crate::tests::call;

fn world() -> World {
    <World as pome_twin_sdk::Twin>::init(None).unwrap()
}

fn post(w: &mut World, path: &str, form: &[(&str, &str)]) -> (u16, Value) {
    let (r, v) = call(w, Method::Post, path, form);
    (r.status, v)
}

/// The test page's URL (path and query, under the twin) for an intent's current attempt.
pub fn page_of(intent: &Value) -> String {
    let na = &intent["next_action"];
    if let Some(url) = na["redirect_to_url"]["url"].as_str() {
        return url.strip_prefix("http://twin.test").expect("the page is under the twin").to_string();
    }
    let kind = intent["object"].as_str().unwrap();
    let source = na["use_stripe_sdk"]["three_d_secure_2_source"].as_str().expect("an attempt to authenticate");
    format!("/3d_secure_2/hosted?{kind}={}&{kind}_client_secret={}&source={source}", intent["id"].as_str().unwrap(), intent["client_secret"].as_str().unwrap())
}

/// The customer answers the page: `complete` or `fail`.
pub fn authenticate(w: &mut World, intent: &Value, action: &str) -> Response {
    call(w, Method::Post, &page_of(intent), &[("action", action)]).0
}

fn pi_with(w: &mut World, extra: &[(&str, &str)]) -> Value {
    let mut form = vec![("amount", "1000"), ("currency", "usd"), ("payment_method", "pm_card_authenticationRequired"), ("confirm", "true")];
    form.extend_from_slice(extra);
    let (s, pi) = post(w, "/v1/payment_intents", &form);
    assert_eq!((s, pi["status"].as_str()), (200, Some("requires_action")), "{pi}");
    pi
}

#[test]
fn confirming_again_from_the_server_does_not_skip_3ds() {
    let mut w = world();
    let pi = pi_with(&mut w, &[]);
    let id = pi["id"].as_str().unwrap().to_string();
    let (s, again) = post(&mut w, &format!("/v1/payment_intents/{id}/confirm"), &[]);
    assert_eq!((s, again["status"].as_str(), again["next_action"]["type"].as_str()), (200, Some("requires_action"), Some("use_stripe_sdk")), "{again}");
    assert!(again["latest_charge"].is_null(), "no charge before the customer authenticates");
    // A new attempt: the old one's page is refused.
    assert_ne!(again["next_action"]["use_stripe_sdk"]["three_d_secure_2_source"], pi["next_action"]["use_stripe_sdk"]["three_d_secure_2_source"]);
    assert_eq!(authenticate(&mut w, &pi, "complete").status, 400);
    let (_, still) = call(&mut w, Method::Get, &format!("/v1/payment_intents/{id}"), &[]);
    assert_eq!(still["status"], "requires_action");
    // The current attempt, completed, charges the card, recording the authentication.
    let r = authenticate(&mut w, &again, "complete");
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let (_, done) = call(&mut w, Method::Get, &format!("/v1/payment_intents/{id}?expand[]=latest_charge"), &[]);
    assert_eq!(done["status"], "succeeded");
    assert_eq!(done["latest_charge"]["payment_method_details"]["card"]["three_d_secure"]["result"], "authenticated");
    assert!(done["next_action"].is_null());
    // The page is spent.
    assert_eq!(authenticate(&mut w, &again, "complete").status, 400);
}

#[test]
fn the_page_redirects_to_the_return_url_with_redirect_status() {
    let mut w = world();
    let pi = pi_with(&mut w, &[("return_url", "https://shop.test/done?order=7"), ("capture_method", "manual")]);
    let id = pi["id"].as_str().unwrap().to_string();
    assert_eq!(pi["next_action"]["type"], "redirect_to_url");
    let url = pi["next_action"]["redirect_to_url"]["url"].as_str().unwrap();
    assert!(url.starts_with("http://twin.test/3d_secure_2/hosted?"), "{url}");
    // The page shows both buttons to the customer, without any API key.
    let mut req = pome_twin_sdk::Request::new(Method::Get, &page_of(&pi));
    req.auth = pome_twin_sdk::Auth::Missing;
    assert!(<World as pome_twin_sdk::Twin>::serves_without_auth(&req));
    let (page, _) = call(&mut w, Method::Get, &page_of(&pi), &[]);
    let text = String::from_utf8_lossy(&page.body).to_string();
    assert_eq!(page.status, 200);
    assert!(text.contains("value=\"complete\"") && text.contains("value=\"fail\""), "{text}");
    let r = authenticate(&mut w, &pi, "complete");
    assert_eq!(r.status, 302);
    let secret = pi["client_secret"].as_str().unwrap();
    assert_eq!(r.header("location"), Some(format!("https://shop.test/done?order=7&payment_intent={id}&payment_intent_client_secret={secret}&redirect_status=succeeded").as_str()));
    let (_, done) = call(&mut w, Method::Get, &format!("/v1/payment_intents/{id}"), &[]);
    assert_eq!((done["status"].as_str(), done["amount_capturable"].as_i64()), (Some("requires_capture"), Some(1000)));
}

#[test]
fn failing_the_page_records_the_authentication_failure_and_asks_for_a_new_method() {
    let mut w = world();
    let pi = pi_with(&mut w, &[("return_url", "https://shop.test/done")]);
    let id = pi["id"].as_str().unwrap().to_string();
    let r = authenticate(&mut w, &pi, "fail");
    assert_eq!(r.status, 302);
    assert!(r.header("location").unwrap().ends_with("&redirect_status=failed"));
    let (_, pi) = call(&mut w, Method::Get, &format!("/v1/payment_intents/{id}"), &[]);
    assert_eq!((pi["status"].as_str(), pi["payment_method"].is_null()), (Some("requires_payment_method"), true));
    let e = &pi["last_payment_error"];
    assert_eq!((e["type"].as_str(), e["code"].as_str()), (Some("invalid_request_error"), Some("payment_intent_authentication_failure")));
    assert_eq!(e["payment_method"]["card"]["last4"], "3184");
    let (_, ev) = call(&mut w, Method::Get, "/v1/events?type=payment_intent.payment_failed", &[]);
    assert_eq!(ev["data"][0]["data"]["object"]["id"], id.as_str());
    // A new method that needs no authentication pays it.
    let (s, pi) = post(&mut w, &format!("/v1/payment_intents/{id}/confirm"), &[("payment_method", "pm_card_visa")]);
    assert_eq!((s, pi["status"].as_str()), (200, Some("succeeded")), "{pi}");
}

#[test]
fn a_link_with_a_wrong_client_secret_or_no_action_is_refused_and_changes_nothing() {
    let mut w = world();
    let pi = pi_with(&mut w, &[]);
    let id = pi["id"].as_str().unwrap();
    let page = page_of(&pi);
    let forged = page.replace("_secret_", "_secret_x");
    assert_eq!(call(&mut w, Method::Post, &forged, &[("action", "complete")]).0.status, 404);
    assert_eq!(call(&mut w, Method::Post, &page, &[("action", "maybe")]).0.status, 400);
    assert_eq!(call(&mut w, Method::Get, "/3d_secure_2/hosted", &[]).0.status, 400);
    let (_, still) = call(&mut w, Method::Get, &format!("/v1/payment_intents/{id}"), &[]);
    assert_eq!(still["status"], "requires_action");
}

#[test]
fn manual_confirmation_waits_for_the_server_after_the_customer_authenticates() {
    let mut w = world();
    let pi = pi_with(&mut w, &[("confirmation_method", "manual")]);
    let id = pi["id"].as_str().unwrap().to_string();
    assert_eq!(authenticate(&mut w, &pi, "complete").status, 200);
    let (_, pi) = call(&mut w, Method::Get, &format!("/v1/payment_intents/{id}"), &[]);
    assert_eq!(pi["status"], "requires_confirmation");
    let (s, pi) = post(&mut w, &format!("/v1/payment_intents/{id}/confirm"), &[]);
    assert_eq!((s, pi["status"].as_str()), (200, Some("succeeded")), "{pi}");
}

#[test]
fn a_setup_intent_waits_for_the_page_too() {
    let mut w = world();
    let (_, si) = post(&mut w, "/v1/setup_intents", &[("payment_method", "pm_card_authenticationRequired"), ("confirm", "true")]);
    assert_eq!(si["status"], "requires_action");
    let id = si["id"].as_str().unwrap().to_string();
    let (_, again) = post(&mut w, &format!("/v1/setup_intents/{id}/confirm"), &[]);
    assert_eq!(again["status"], "requires_action", "confirming again does not skip authentication");
    assert_eq!(authenticate(&mut w, &again, "fail").status, 200);
    let (_, si) = call(&mut w, Method::Get, &format!("/v1/setup_intents/{id}"), &[]);
    assert_eq!((si["status"].as_str(), si["last_setup_error"]["code"].as_str()), (Some("requires_payment_method"), Some("setup_intent_authentication_failure")));
    let (_, si) = post(&mut w, &format!("/v1/setup_intents/{id}/confirm"), &[("payment_method", "pm_card_authenticationRequired")]);
    assert_eq!(authenticate(&mut w, &si, "complete").status, 200);
    let (_, si) = call(&mut w, Method::Get, &format!("/v1/setup_intents/{id}"), &[]);
    assert_eq!(si["status"], "succeeded");
}

#[test]
fn charges_with_cards_that_require_3ds_are_declined_authentication_required() {
    let mut w = world();
    for source in ["tok_threeDSecure2Required", "pm_card_authenticationRequired", "tok_authenticationRequiredOnSetup"] {
        let (s, e) = post(&mut w, "/v1/charges", &[("amount", "1000"), ("currency", "usd"), ("source", source)]);
        assert_eq!(s, 402, "{source}: {e}");
        let err = &e["error"];
        assert_eq!((err["type"].as_str(), err["code"].as_str(), err["decline_code"].as_str()), (Some("card_error"), Some("authentication_required"), Some("authentication_required")), "{source}");
        assert_eq!(err["message"], "Your card was declined. This transaction requires authentication.");
        let (_, ch) = call(&mut w, Method::Get, &format!("/v1/charges/{}", err["charge"].as_str().unwrap()), &[]);
        assert_eq!((ch["status"].as_str(), ch["failure_code"].as_str()), (Some("failed"), Some("authentication_required")));
    }
    let (_, bal) = call(&mut w, Method::Get, "/v1/balance", &[]);
    assert_eq!(bal["available"][0]["amount"], 0);
}

#[test]
fn the_checkout_helper_does_not_pay_with_a_card_that_requires_3ds() {
    let mut w = world();
    let (_, price) = post(&mut w, "/v1/prices", &[("currency", "usd"), ("unit_amount", "2500"), ("product_data[name]", "Book")]);
    let (_, cs) = post(&mut w, "/v1/checkout/sessions", &[("mode", "payment"), ("success_url", "https://shop.test/ok"), ("line_items[0][price]", price["id"].as_str().unwrap()), ("line_items[0][quantity]", "1")]);
    let cs_id = cs["id"].as_str().unwrap().to_string();
    let (s, e) = post(&mut w, &format!("/v1/test_helpers/checkout/sessions/{cs_id}/complete"), &[("payment_method", "pm_card_authenticationRequired")]);
    assert_eq!((s, e["error"]["code"].as_str(), e["error"]["decline_code"].as_str()), (402, Some("authentication_required"), Some("authentication_required")), "{e}");
    assert_eq!(e["error"]["payment_intent"]["status"], "requires_action");
    let (_, cs) = call(&mut w, Method::Get, &format!("/v1/checkout/sessions/{cs_id}"), &[]);
    assert_eq!((cs["status"].as_str(), cs["payment_status"].as_str()), (Some("open"), Some("unpaid")));
    let (s, e) = post(&mut w, "/v1/checkout/sessions", &[("mode", "setup"), ("currency", "usd"), ("success_url", "https://shop.test/ok")]);
    assert_eq!(s, 200, "{e}");
    let (s, e) = post(&mut w, &format!("/v1/test_helpers/checkout/sessions/{}/complete", e["id"].as_str().unwrap()), &[("payment_method", "pm_card_threeDSecure2Required")]);
    assert_eq!((s, e["error"]["code"].as_str(), e["error"]["setup_intent"]["status"].as_str()), (402, Some("authentication_required"), Some("requires_action")), "{e}");
}
