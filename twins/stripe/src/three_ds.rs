//! The customer's 3-D Secure step: Stripe's test-mode authentication page, served under the
//! twin. A PaymentIntent or SetupIntent whose card requires 3-D Secure waits in
//! `requires_action` until the customer answers this page; confirming again from the server
//! starts a new attempt that waits as well, so no agent can skip authentication.
//!
//! `next_action` names the page: `redirect_to_url.url` when the confirmation gave a
//! `return_url`, otherwise `use_stripe_sdk.three_d_secure_2_source` is the attempt the same
//! page takes as `source`. `GET {PAGE}?payment_intent=…&payment_intent_client_secret=…&source=…`
//! (or `setup_intent=…&setup_intent_client_secret=…`) shows the page; `POST` to the same URL
//! with `action=complete` or `action=fail` answers it as the customer's buttons do, then
//! redirects to the `return_url` with `redirect_status` as Stripe does (or shows the outcome).
//! The client secret admits the customer; an attempt that is no longer current is refused.

use pome_twin_sdk::{Call, Request, Response, Value, json};

use crate::World;
use crate::api::emit;

/// Where the page is served, under the twin's base URL.
pub const PAGE: &str = "/3d_secure_2/hosted";

/// What `payment_method_details.card.three_d_secure` records of a completed challenge (the
/// fields of the API version the twin speaks).
pub fn authenticated_details() -> Value {
    json!({"authentication_flow": "challenge", "result": "authenticated", "result_reason": null, "version": "2.2.0"})
}

/// The [`World::authenticated`](crate::Data::authenticated) entry of a PaymentIntent's method.
pub fn authenticated_key(intent: &str, pm: &str) -> String {
    format!("{intent} {pm}")
}

/// The page's URL for one attempt (`source`) on the intent `id` of `kind`.
fn page_url(req: &Request, account: &str, kind: &str, id: &str, secret: &str, source: &str) -> String {
    format!("{}?merchant={account}&{kind}={id}&{kind}_client_secret={secret}&source={source}", req.url(PAGE))
}

/// The `next_action` of an intent waiting for its customer to authenticate (attempt `source`).
pub fn next_action(req: &Request, account: &str, kind: &str, id: &str, secret: &str, source: &str, return_url: Option<&str>) -> Value {
    match return_url {
        Some(u) => json!({"type": "redirect_to_url", "redirect_to_url": {"return_url": u, "url": page_url(req, account, kind, id, secret, source)}}),
        None => json!({"type": "use_stripe_sdk", "use_stripe_sdk": {
            "type": "stripe_3ds2_fingerprint", "directory_server_name": "visa", "merchant": account,
            "server_transaction_id": source, "three_d_secure_2_source": source,
        }}),
    }
}

/// The attempt an intent's `next_action` waits on.
fn current_source(next_action: &Value) -> Option<String> {
    if let Some(s) = next_action["use_stripe_sdk"]["three_d_secure_2_source"].as_str() {
        return Some(s.to_string());
    }
    let url = next_action["redirect_to_url"]["url"].as_str()?;
    let query = url.split_once('?')?.1;
    query.split('&').find_map(|kv| kv.strip_prefix("source=")).map(str::to_string)
}

/// An intent the page was opened for, found and admitted.
struct Attempt {
    kind: &'static str,
    id: String,
    obj: Value,
}

/// The page's answer when it cannot serve the link: a plain page with the reason.
fn refused(status: u16, message: &str) -> Response {
    html(status, "3D Secure 2 Test Page", &format!("<p>{}</p>", escape(message)))
}

/// The intent the request's link names, if its client secret and attempt are current.
fn attempt(w: &World, pairs: &[(String, String)]) -> Result<Attempt, Response> {
    let arg = |k: &str| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    let (kind, id) = match (arg("payment_intent"), arg("setup_intent")) {
        (Some(id), None) => ("payment_intent", id),
        (None, Some(id)) => ("setup_intent", id),
        _ => return Err(refused(400, "This link names no PaymentIntent or SetupIntent to authenticate.")),
    };
    let secret = arg(&format!("{kind}_client_secret")).unwrap_or("");
    // A wrong secret reads as an unknown intent: the page must not confirm that one exists.
    let obj = w.get_kind(kind, id).filter(|o| !secret.is_empty() && o["client_secret"] == secret);
    let Some(obj) = obj else {
        return Err(refused(404, "No such authentication: the link is not valid."));
    };
    if obj["status"] != "requires_action" || current_source(&obj["next_action"]).is_none_or(|s| Some(s.as_str()) != arg("source")) {
        return Err(refused(400, "This authentication is no longer pending: it was completed, failed, or replaced by a newer attempt."));
    }
    Ok(Attempt { kind, id: id.to_string(), obj })
}

/// `GET` the page: what is being paid or saved, and the customer's two buttons.
pub fn show(w: &mut World, call: &mut Call) -> Response {
    let pairs = call.req.query_pairs();
    let a = match attempt(w, &pairs) {
        Ok(a) => a,
        Err(r) => return r,
    };
    let what = match a.kind {
        "payment_intent" => format!(
            "A payment of {} {} ({}) asks you to authenticate.",
            a.obj["amount"].as_i64().unwrap_or(0),
            a.obj["currency"].as_str().unwrap_or("").to_uppercase(),
            a.id
        ),
        _ => format!("Saving a card ({}) asks you to authenticate.", a.id),
    };
    let hidden: String = pairs
        .iter()
        .filter(|(k, _)| k != "action")
        .map(|(k, v)| format!("<input type=\"hidden\" name=\"{}\" value=\"{}\">", escape(k), escape(v)))
        .collect();
    let form = |action: &str, label: &str| {
        format!("<form method=\"post\" action=\"{}\">{hidden}<input type=\"hidden\" name=\"action\" value=\"{action}\"><button type=\"submit\">{label}</button></form>", escape(&call.req.url(PAGE)))
    };
    let body = format!(
        "<p>{}</p><p>This is a test-mode page: choose how the customer's bank answers.</p>{}{}",
        escape(&what),
        form("complete", "Complete"),
        form("fail", "Fail")
    );
    html(200, "3D Secure 2 Test Page", &body)
}

/// `POST` the page: the customer completes (`action=complete`) or fails (`action=fail`) it.
pub fn answer(w: &mut World, call: &mut Call) -> Response {
    let mut pairs = call.req.query_pairs();
    pairs.extend(call.req.form_pairs());
    let a = match attempt(w, &pairs) {
        Ok(a) => a,
        Err(r) => return r,
    };
    // The customer's answer is a request of its own: its events name it, not the last API call.
    let request_id = crate::core::next_request_id(w);
    let complete = match pairs.iter().rev().find(|(k, _)| k == "action").map(|(_, v)| v.as_str()) {
        Some("complete") => true,
        Some("fail") => false,
        _ => return refused(400, "Choose action=complete or action=fail."),
    };
    let return_url = a.obj["next_action"]["redirect_to_url"]["return_url"].as_str().map(str::to_string);
    let secret = a.obj["client_secret"].as_str().unwrap_or("").to_string();
    let pm = a.obj["payment_method"].as_str().unwrap_or("").to_string();
    let status = match (a.kind, complete) {
        ("payment_intent", true) => complete_payment(w, call, &a, &pm),
        ("payment_intent", false) => fail_payment(w, call, &a),
        (_, true) => crate::api::si_succeed(w, call, &a.id, &pm)["status"].as_str().unwrap_or("").to_string(),
        (_, false) => fail_setup(w, call, &a),
    };
    let redirect_status = if complete { "succeeded" } else { "failed" };
    let r = match return_url {
        Some(u) => {
            let sep = if u.contains('?') { '&' } else { '?' };
            let to = format!("{u}{sep}{kind}={id}&{kind}_client_secret={secret}&redirect_status={redirect_status}", kind = a.kind, id = a.id);
            Response::empty(302).with_header("location", to)
        }
        None => html(200, "3D Secure 2 Test Page", &format!("<p>Authentication {}. {} is now {}.</p>", if complete { "completed" } else { "failed" }, escape(&a.id), escape(&status))),
    };
    r.with_header("request-id", request_id)
}

/// The customer authenticated: the PaymentIntent goes on as its confirmation would have
/// (`requires_capture`, `succeeded`), or to `requires_confirmation` when its server confirms
/// it (`confirmation_method: manual`). Its new status.
fn complete_payment(w: &mut World, call: &mut Call, a: &Attempt, pm: &str) -> String {
    w.0.authenticated.insert(authenticated_key(&a.id, pm));
    if a.obj["confirmation_method"] == "manual" {
        let pi = w.modify(call, &a.id, |pi| {
            pi["status"] = json!("requires_confirmation");
            pi["next_action"] = Value::Null;
        });
        return pi["status"].as_str().unwrap_or("").to_string();
    }
    let none = crate::core::Params(serde_json::Map::new());
    match crate::api::confirm_payment_intent(w, call, &a.id, &none) {
        Ok(text) => serde_json::from_str::<Value>(&text).map(|pi| pi["status"].as_str().unwrap_or("").to_string()).unwrap_or_default(),
        // The authenticated card still declined: the PaymentIntent records it.
        Err(_) => w.get(&a.id).map(|pi| pi["status"].as_str().unwrap_or("").to_string()).unwrap_or_default(),
    }
}

/// The customer failed authentication: Stripe's `payment_intent_authentication_failure`,
/// and the PaymentIntent asks for a payment method again.
fn fail_payment(w: &mut World, call: &mut Call, a: &Attempt) -> String {
    let pm = a.obj["payment_method"].as_str().and_then(|id| w.get(id)).unwrap_or(Value::Null);
    let err = json!({
        "code": "payment_intent_authentication_failure",
        "doc_url": "https://stripe.com/docs/error-codes/payment-intent-authentication-failure",
        "message": "The provided PaymentMethod has failed authentication. You can provide payment_method_data or a new PaymentMethod to attempt to fulfill this PaymentIntent again.",
        "payment_method": pm, "type": "invalid_request_error",
    });
    let pi = w.modify(call, &a.id, |pi| {
        pi["status"] = json!("requires_payment_method");
        pi["last_payment_error"] = err;
        pi["payment_method"] = Value::Null;
        pi["next_action"] = Value::Null;
    });
    emit(w, call, "payment_intent.payment_failed", &pi, None);
    if let Some(inv) = pi["invoice"].as_str() {
        crate::billing::invoice_payment_failed(w, call, inv);
    }
    "requires_payment_method".into()
}

/// The customer failed authentication while saving a card: Stripe's
/// `setup_intent_authentication_failure`.
fn fail_setup(w: &mut World, call: &mut Call, a: &Attempt) -> String {
    let pm = a.obj["payment_method"].as_str().and_then(|id| w.get(id)).unwrap_or(Value::Null);
    let err = json!({
        "code": "setup_intent_authentication_failure",
        "doc_url": "https://stripe.com/docs/error-codes/setup-intent-authentication-failure",
        "message": "The latest attempt to set up the payment method has failed because authentication failed.",
        "payment_method": pm, "type": "invalid_request_error",
    });
    crate::api::attempt_outcome(w, call, &a.id, "failed", err.clone());
    if let Some(m) = a.obj["mandate"].as_str().filter(|m| w.exists(m)) {
        w.modify(call, m, |o| o["status"] = json!("inactive"));
    }
    let si = w.modify(call, &a.id, |si| {
        si["status"] = json!("requires_payment_method");
        si["mandate"] = Value::Null;
        si["last_setup_error"] = err;
        si["payment_method"] = Value::Null;
        si["next_action"] = Value::Null;
    });
    emit(w, call, "setup_intent.setup_failed", &si, None);
    "requires_payment_method".into()
}

fn html(status: u16, title: &str, body: &str) -> Response {
    let page = format!("<!doctype html><html><head><meta charset=\"utf-8\"><title>{t}</title></head><body><h1>{t}</h1>{body}</body></html>", t = escape(title));
    let mut r = Response::empty(status).with_header("content-type", "text/html; charset=utf-8");
    r.body = page.into_bytes();
    r
}

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}
