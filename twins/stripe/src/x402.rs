//! x402: a resource paid for with a stablecoin transfer. The first request gets `402 Payment
//! Required` with a challenge whose `payTo` is the crypto deposit address of a PaymentIntent
//! the twin opens for it; a retry carrying a valid `X-PAYMENT` (base64 JSON, the `exact`
//! scheme's signed authorization) settles that PaymentIntent and gets `200`.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use pome_twin_sdk::{Call, Response, Value, json};

use crate::World;
use crate::api;
use crate::core::base62;

/// $1.00 in USDC's 6-decimal atomic units.
pub const PRICE_CENTS: i64 = 100;
pub const PRICE_ATOMIC: &str = "1000000";
pub const NETWORK: &str = "base-sepolia";
pub const ASSET: &str = "0x036CbD53842c5426634e7929540c2f12f4BBAaD6";

fn headers(w: &World, r: Response) -> Response {
    r.with_header("request-id", format!("req_{}", base62(w.request_seq.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 8, 14)))
}

fn challenge(w: &World, call: &Call, pi: &Value, error: &str) -> Response {
    let body = json!({
        "x402Version": 1,
        "error": error,
        "accepts": [{
            "scheme": "exact",
            "network": NETWORK,
            "maxAmountRequired": PRICE_ATOMIC,
            "resource": call.req.url("/x402/protected-resource"),
            "description": "Access to the protected resource",
            "mimeType": "application/json",
            "payTo": api::deposit_address(pi["id"].as_str().unwrap_or("")),
            "maxTimeoutSeconds": 300,
            "asset": ASSET,
            "extra": {"name": "USDC", "version": "2", "payment_intent": pi["id"]},
        }],
    });
    headers(w, Response::json(402, &body))
}

/// The PaymentIntent waiting for this resource's payment, opened on first need.
fn pending(w: &mut World, call: &mut Call) -> Value {
    if let Some(pi) = w.all("payment_intent").find(|p| p["metadata"]["x402"] == "true" && p["status"] == "requires_action") {
        return pi;
    }
    let id = w.new_id("pi");
    let mut pi = api::pi_obj(&id, PRICE_CENTS, "usd", w.now());
    pi["payment_method_types"] = json!(["crypto"]);
    pi["description"] = json!("x402 payment for /x402/protected-resource");
    pi["metadata"] = json!({"x402": "true"});
    pi["status"] = json!("requires_action");
    pi["next_action"] = api::crypto_next_action(&id, PRICE_CENTS);
    let pi = w.insert(Some(call), pi);
    api::emit(w, call, "payment_intent.created", &pi, None);
    api::emit(w, call, "payment_intent.requires_action", &pi, None);
    pi
}

pub fn protected_resource(w: &mut World, call: &mut Call) -> Response {
    w.request_seq += 1;
    let header = call.req.header("x-payment").map(str::to_string);
    let pi = pending(w, call);
    let Some(header) = header else {
        return challenge(w, call, &pi, "X-PAYMENT header is required");
    };
    let payment: Value = match STANDARD.decode(header.trim()).ok().and_then(|b| serde_json::from_slice(&b).ok()) {
        Some(v) => v,
        None => return challenge(w, call, &pi, "X-PAYMENT is not base64-encoded JSON"),
    };
    let auth = &payment["payload"]["authorization"];
    let pay_to = api::deposit_address(pi["id"].as_str().unwrap_or(""));
    let problem = if payment["x402Version"].as_i64() != Some(1) {
        Some("x402Version must be 1".to_string())
    } else if payment["scheme"] != "exact" {
        Some("scheme must be \"exact\"".to_string())
    } else if payment["network"] != NETWORK {
        Some(format!("network must be \"{NETWORK}\""))
    } else if !auth["to"].as_str().is_some_and(|t| t.eq_ignore_ascii_case(&pay_to)) {
        Some(format!("payload.authorization.to must be the payTo address {pay_to}"))
    } else if auth["value"].as_str().and_then(|v| v.parse::<u128>().ok()).is_none_or(|v| v < PRICE_ATOMIC.parse::<u128>().unwrap()) {
        Some(format!("payload.authorization.value must be at least {PRICE_ATOMIC}"))
    } else if payment["payload"]["signature"].as_str().is_none_or(str::is_empty) {
        Some("payload.signature is required".to_string())
    } else {
        None
    };
    if let Some(p) = problem {
        return challenge(w, call, &pi, &format!("Invalid payment: {p}"));
    }
    let payer = auth["from"].as_str().unwrap_or("").to_string();
    let nonce = auth["nonce"].as_str().unwrap_or("").to_string();
    let tx = format!("0x{}", api::deposit_address(&format!("{nonce}{payer}")).trim_start_matches("0x"));
    let id = pi["id"].as_str().unwrap_or("").to_string();
    if let Err(e) = api::settle_crypto(w, call, &id, pi, Some(&tx), Some(&payer), "base", "usdc") {
        return headers(w, Response::json(e.status, &e.body("req_x402")));
    }
    let receipt = json!({"success": true, "transaction": tx, "network": NETWORK, "payer": payer});
    let encoded = STANDARD.encode(receipt.to_string());
    let body = json!({"data": "The protected resource.", "payment_intent": id, "paid": true});
    headers(w, Response::json(200, &body).with_header("x-payment-response", encoded))
}
