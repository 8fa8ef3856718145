//! Stripe's resources: the route table, and one module a resource family, as Stripe's API
//! reference groups them — [`balance`] (with payouts), [`charges`], [`customers`],
//! [`disputes`], [`payment_intents`] (the payment state machine), [`setup_intents`],
//! [`refunds`], [`payment_methods`], [`products`] (with prices and coupons) and
//! [`webhook_endpoints`] (with events as the API lists them). Below them, what they share:
//! [`cards`] (Stripe's test cards), [`emit`] (events and their webhook deliveries) and
//! [`shared`] (lookups, lists, searches, currencies and amounts). Each module takes the others'
//! items through this one (`use super::*`).

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

// The resources, as Stripe's API reference orders them.
mod balance;
mod charges;
mod customers;
mod disputes;
mod payment_intents;
mod setup_intents;
mod refunds;
mod payment_methods;
mod products;
mod webhook_endpoints;
// Below them, what they share.
mod cards;
mod emit;
mod shared;

pub use balance::*;
pub use charges::*;
pub use customers::*;
use disputes::*;
pub use payment_intents::*;
pub(crate) use setup_intents::*;
use refunds::*;
pub(crate) use payment_methods::*;
pub(crate) use products::*;
use webhook_endpoints::*;
pub use cards::*;
pub use emit::*;
pub use shared::*;
