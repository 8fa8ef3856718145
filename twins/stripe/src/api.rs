//! Stripe's resources: the route table, and one module a resource family, as Stripe's API
//! reference groups them. Payments: [`balance`] (with payouts), [`topups`], [`charges`]
//! (with their refunds and dispute at the charge's paths), [`customers`] (with their balance
//! transactions) and their [`cash_balance`], [`disputes`], [`payment_intents`] (the payment
//! state machine), [`setup_intents`], [`mandates`] (with setup attempts), [`refunds`],
//! [`payment_methods`], [`tokens`] (with ephemeral keys), [`products`] (with prices and
//! coupons) and [`webhook_endpoints`] (with events as the API lists them). Billing (beside
//! `crate::billing`'s subscriptions and invoices): [`credit_notes`], [`quotes`],
//! [`subscription_schedules`], [`usage`] (usage records, billing meters and meter events),
//! [`plans`], [`billing_portal`], [`tax`] (tax rates, customer tax ids, tax codes) and
//! [`shipping_rates`]. [`files`] (with file links). Connect: [`accounts`] (capabilities,
//! external accounts, persons, login links, account links), [`transfers`] (with reversals and
//! destination charges) and [`application_fees`]. Fraud: [`radar`] (reviews, early fraud
//! warnings, value lists). Below them, what they share: [`cards`] (Stripe's test cards),
//! [`emit`] (events and their webhook deliveries) and [`shared`] (lookups, lists, searches,
//! currencies and amounts). Each module takes the others' items through this one
//! (`use super::*`).

use pome_twin_sdk::{Call, Delivery, Fidelity, Method, Router, Value, json};

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
        // Customers' own sub-resources.
        .get("/v1/customers/{id}/balance_transactions/{transaction}", "customers.balance_transactions.retrieve", h!(cbt_retrieve))
        .post("/v1/customers/{id}/balance_transactions/{transaction}", "customers.balance_transactions.update", h!(cbt_update))
        .get("/v1/customers/{id}/payment_methods/{payment_method}", "customers.payment_methods.retrieve", h!(customer_pm_retrieve))
        .get("/v1/customers/{id}/discount", "customers.discount.retrieve", h!(customer_discount_retrieve))
        .get("/v1/customers/{id}/cash_balance", "customers.cash_balance.retrieve", h!(cash_balance_retrieve))
        .post("/v1/customers/{id}/cash_balance", "customers.cash_balance.update", h!(cash_balance_update))
        .get("/v1/customers/{id}/cash_balance_transactions", "customers.cash_balance_transactions.list", h!(cash_txn_list))
        .get("/v1/customers/{id}/cash_balance_transactions/{transaction}", "customers.cash_balance_transactions.retrieve", h!(cash_txn_retrieve))
        .post("/v1/customers/{id}/funding_instructions", "customers.funding_instructions.create", h!(funding_instructions))
        .post("/v1/test_helpers/customers/{id}/fund_cash_balance", "test_helpers.customers.fund_cash_balance", h!(fund_cash_balance))
        .post("/v1/payment_intents/{id}/apply_customer_balance", "payment_intents.apply_customer_balance", h!(apply_customer_balance))
        // A charge's refunds and dispute at its own paths; the balance's history; payouts.
        .post("/v1/charges/{id}/refund", "charges.refund", h!(charge_refund_legacy))
        .get("/v1/charges/{id}/refunds", "charges.refunds.list", h!(charge_refund_list))
        .post("/v1/charges/{id}/refunds", "charges.refunds.create", h!(charge_refund_create))
        .get("/v1/charges/{id}/refunds/{refund}", "charges.refunds.retrieve", h!(charge_refund_retrieve))
        .post("/v1/charges/{id}/refunds/{refund}", "charges.refunds.update", h!(charge_refund_update))
        .get("/v1/charges/{id}/dispute", "charges.dispute.retrieve", h!(charge_dispute_retrieve))
        .post("/v1/charges/{id}/dispute", "charges.dispute.update", h!(charge_dispute_update))
        .post("/v1/charges/{id}/dispute/close", "charges.dispute.close", h!(charge_dispute_close))
        .post("/v1/test_helpers/refunds/{id}/expire", "test_helpers.refunds.expire", h!(refund_expire))
        .get("/v1/balance/history", "balance.history.list", h!(bt_list))
        .get("/v1/balance/history/{id}", "balance.history.retrieve", h!(bt_retrieve))
        .post("/v1/payouts/{id}", "payouts.update", h!(payout_update))
        .post("/v1/payouts/{id}/reverse", "payouts.reverse", h!(payout_reverse))
        .post("/v1/topups", "topups.create", h!(topup_create))
        .get("/v1/topups", "topups.list", h!(topup_list))
        .get("/v1/topups/{id}", "topups.retrieve", h!(topup_retrieve))
        .post("/v1/topups/{id}", "topups.update", h!(topup_update))
        .post("/v1/topups/{id}/cancel", "topups.cancel", h!(topup_cancel))
        .post("/v1/tokens", "tokens.create", h!(token_create))
        .get("/v1/tokens/{id}", "tokens.retrieve", h!(token_retrieve))
        .post("/v1/ephemeral_keys", "ephemeral_keys.create", h!(ephemeral_key_create))
        .delete("/v1/ephemeral_keys/{id}", "ephemeral_keys.delete", h!(ephemeral_key_delete))
        // Billing beyond subscriptions and invoices.
        .post("/v1/credit_notes", "credit_notes.create", h!(credit_note_create))
        .get("/v1/credit_notes", "credit_notes.list", h!(credit_note_list))
        .get("/v1/credit_notes/preview", "credit_notes.preview", h!(credit_note_preview))
        .get("/v1/credit_notes/preview/lines", "credit_notes.preview_lines", h!(credit_note_preview_lines))
        .get("/v1/credit_notes/{id}", "credit_notes.retrieve", h!(credit_note_retrieve))
        .post("/v1/credit_notes/{id}", "credit_notes.update", h!(credit_note_update))
        .get("/v1/credit_notes/{id}/lines", "credit_notes.lines", h!(credit_note_lines))
        .post("/v1/credit_notes/{id}/void", "credit_notes.void", h!(credit_note_void))
        .post("/v1/quotes", "quotes.create", h!(quote_create))
        .get("/v1/quotes", "quotes.list", h!(quote_list))
        .get("/v1/quotes/{id}", "quotes.retrieve", h!(quote_retrieve))
        .post("/v1/quotes/{id}", "quotes.update", h!(quote_update))
        .post("/v1/quotes/{id}/finalize", "quotes.finalize", h!(quote_finalize))
        .post("/v1/quotes/{id}/accept", "quotes.accept", h!(quote_accept))
        .post("/v1/quotes/{id}/cancel", "quotes.cancel", h!(quote_cancel))
        .get("/v1/quotes/{id}/line_items", "quotes.line_items", h!(quote_line_items))
        .get("/v1/quotes/{id}/computed_upfront_line_items", "quotes.computed_upfront_line_items", h!(quote_upfront_line_items))
        .route(Some(Method::Get), "/v1/quotes/{id}/pdf", "quotes.pdf", Fidelity::Shape, quote_pdf)
        .post("/v1/subscription_schedules", "subscription_schedules.create", h!(schedule_create))
        .get("/v1/subscription_schedules", "subscription_schedules.list", h!(schedule_list))
        .get("/v1/subscription_schedules/{id}", "subscription_schedules.retrieve", h!(schedule_retrieve))
        .post("/v1/subscription_schedules/{id}", "subscription_schedules.update", h!(schedule_update))
        .post("/v1/subscription_schedules/{id}/cancel", "subscription_schedules.cancel", h!(schedule_cancel))
        .post("/v1/subscription_schedules/{id}/release", "subscription_schedules.release", h!(schedule_release))
        .post("/v1/subscription_items/{id}/usage_records", "subscription_items.usage_records.create", h!(usage_record_create))
        .get("/v1/subscription_items/{id}/usage_record_summaries", "subscription_items.usage_record_summaries.list", h!(usage_record_summaries))
        .post("/v1/billing/meters", "billing.meters.create", h!(meter_create))
        .get("/v1/billing/meters", "billing.meters.list", h!(meter_list))
        .get("/v1/billing/meters/{id}", "billing.meters.retrieve", h!(meter_retrieve))
        .post("/v1/billing/meters/{id}", "billing.meters.update", h!(meter_update))
        .post("/v1/billing/meters/{id}/deactivate", "billing.meters.deactivate", h!(meter_deactivate))
        .post("/v1/billing/meters/{id}/reactivate", "billing.meters.reactivate", h!(meter_reactivate))
        .get("/v1/billing/meters/{id}/event_summaries", "billing.meters.event_summaries", h!(meter_event_summaries))
        .post("/v1/billing/meter_events", "billing.meter_events.create", h!(meter_event_create))
        .post("/v1/billing/meter_event_adjustments", "billing.meter_event_adjustments.create", h!(meter_event_adjustment_create))
        .post("/v1/plans", "plans.create", h!(plan_create))
        .get("/v1/plans", "plans.list", h!(plan_list))
        .get("/v1/plans/{id}", "plans.retrieve", h!(plan_retrieve))
        .post("/v1/plans/{id}", "plans.update", h!(plan_update))
        .delete("/v1/plans/{id}", "plans.delete", h!(plan_delete))
        .post("/v1/billing_portal/configurations", "billing_portal.configurations.create", h!(portal_config_create))
        .get("/v1/billing_portal/configurations", "billing_portal.configurations.list", h!(portal_config_list))
        .get("/v1/billing_portal/configurations/{id}", "billing_portal.configurations.retrieve", h!(portal_config_retrieve))
        .post("/v1/billing_portal/configurations/{id}", "billing_portal.configurations.update", h!(portal_config_update))
        .post("/v1/billing_portal/sessions", "billing_portal.sessions.create", h!(portal_session_create))
        // Tax.
        .post("/v1/tax_rates", "tax_rates.create", h!(tax_rate_create))
        .get("/v1/tax_rates", "tax_rates.list", h!(tax_rate_list))
        .get("/v1/tax_rates/{id}", "tax_rates.retrieve", h!(tax_rate_retrieve))
        .post("/v1/tax_rates/{id}", "tax_rates.update", h!(tax_rate_update))
        .post("/v1/customers/{id}/tax_ids", "customers.tax_ids.create", h!(tax_id_create))
        .get("/v1/customers/{id}/tax_ids", "customers.tax_ids.list", h!(tax_id_list))
        .get("/v1/customers/{id}/tax_ids/{tax_id}", "customers.tax_ids.retrieve", h!(tax_id_retrieve))
        .delete("/v1/customers/{id}/tax_ids/{tax_id}", "customers.tax_ids.delete", h!(tax_id_delete))
        .get("/v1/tax_codes", "tax_codes.list", h!(tax_code_list))
        .get("/v1/tax_codes/{id}", "tax_codes.retrieve", h!(tax_code_retrieve))
        // Shipping rates; files and file links.
        .post("/v1/shipping_rates", "shipping_rates.create", h!(shipping_rate_create))
        .get("/v1/shipping_rates", "shipping_rates.list", h!(shipping_rate_list))
        .get("/v1/shipping_rates/{id}", "shipping_rates.retrieve", h!(shipping_rate_retrieve))
        .post("/v1/shipping_rates/{id}", "shipping_rates.update", h!(shipping_rate_update))
        .post("/v1/files", "files.create", h!(file_create))
        .get("/v1/files", "files.list", h!(file_list))
        .get("/v1/files/{id}", "files.retrieve", h!(file_retrieve))
        .get("/v1/files/{id}/contents", "files.contents", file_contents)
        .post("/v1/file_links", "file_links.create", h!(file_link_create))
        .get("/v1/file_links", "file_links.list", h!(file_link_list))
        .get("/v1/file_links/{id}", "file_links.retrieve", h!(file_link_retrieve))
        .post("/v1/file_links/{id}", "file_links.update", h!(file_link_update))
        .get("/links/{token}", "file_links.serve", link_page)
        // Connect.
        .get("/v1/account", "account.retrieve", h!(account_self))
        .post("/v1/accounts", "accounts.create", h!(account_create))
        .get("/v1/accounts", "accounts.list", h!(account_list))
        .get("/v1/accounts/{id}", "accounts.retrieve", h!(account_retrieve))
        .post("/v1/accounts/{id}", "accounts.update", h!(account_update))
        .delete("/v1/accounts/{id}", "accounts.delete", h!(account_delete))
        .post("/v1/accounts/{id}/reject", "accounts.reject", h!(account_reject))
        .post("/v1/accounts/{id}/login_links", "accounts.login_links.create", h!(login_link_create))
        .get("/v1/accounts/{id}/capabilities", "accounts.capabilities.list", h!(capability_list))
        .get("/v1/accounts/{id}/capabilities/{capability}", "accounts.capabilities.retrieve", h!(capability_retrieve))
        .post("/v1/accounts/{id}/capabilities/{capability}", "accounts.capabilities.update", h!(capability_update))
        .get("/v1/accounts/{id}/external_accounts", "accounts.external_accounts.list", h!(external_list))
        .post("/v1/accounts/{id}/external_accounts", "accounts.external_accounts.create", h!(external_create))
        .get("/v1/accounts/{id}/external_accounts/{ext}", "accounts.external_accounts.retrieve", h!(external_retrieve))
        .post("/v1/accounts/{id}/external_accounts/{ext}", "accounts.external_accounts.update", h!(external_update))
        .delete("/v1/accounts/{id}/external_accounts/{ext}", "accounts.external_accounts.delete", h!(external_delete))
        .get("/v1/accounts/{id}/bank_accounts/{ext}", "accounts.bank_accounts.retrieve", h!(external_retrieve))
        .post("/v1/accounts/{id}/bank_accounts", "accounts.bank_accounts.create", h!(external_create))
        .post("/v1/accounts/{id}/bank_accounts/{ext}", "accounts.bank_accounts.update", h!(external_update))
        .delete("/v1/accounts/{id}/bank_accounts/{ext}", "accounts.bank_accounts.delete", h!(external_delete))
        .get("/v1/accounts/{id}/persons", "accounts.persons.list", h!(person_list))
        .post("/v1/accounts/{id}/persons", "accounts.persons.create", h!(person_create))
        .get("/v1/accounts/{id}/persons/{person}", "accounts.persons.retrieve", h!(person_retrieve))
        .post("/v1/accounts/{id}/persons/{person}", "accounts.persons.update", h!(person_update))
        .delete("/v1/accounts/{id}/persons/{person}", "accounts.persons.delete", h!(person_delete))
        .get("/v1/accounts/{id}/people", "accounts.people.list", h!(person_list))
        .post("/v1/accounts/{id}/people", "accounts.people.create", h!(person_create))
        .get("/v1/accounts/{id}/people/{person}", "accounts.people.retrieve", h!(person_retrieve))
        .post("/v1/accounts/{id}/people/{person}", "accounts.people.update", h!(person_update))
        .delete("/v1/accounts/{id}/people/{person}", "accounts.people.delete", h!(person_delete))
        .post("/v1/account_links", "account_links.create", h!(account_link_create))
        .get("/connect/onboarding/{token}", "account_links.onboarding_page", onboarding_page)
        .post("/v1/transfers", "transfers.create", h!(transfer_create))
        .get("/v1/transfers", "transfers.list", h!(transfer_list))
        .get("/v1/transfers/{id}", "transfers.retrieve", h!(transfer_retrieve))
        .post("/v1/transfers/{id}", "transfers.update", h!(transfer_update))
        .post("/v1/transfers/{id}/reversals", "transfers.reversals.create", h!(reversal_create))
        .get("/v1/transfers/{id}/reversals", "transfers.reversals.list", h!(reversal_list))
        .get("/v1/transfers/{id}/reversals/{reversal}", "transfers.reversals.retrieve", h!(reversal_retrieve))
        .post("/v1/transfers/{id}/reversals/{reversal}", "transfers.reversals.update", h!(reversal_update))
        .get("/v1/application_fees", "application_fees.list", h!(fee_list))
        .get("/v1/application_fees/{id}", "application_fees.retrieve", h!(fee_retrieve))
        .post("/v1/application_fees/{id}/refund", "application_fees.refund", h!(fee_refund_legacy))
        .post("/v1/application_fees/{id}/refunds", "application_fees.refunds.create", h!(fee_refund_create))
        .get("/v1/application_fees/{id}/refunds", "application_fees.refunds.list", h!(fee_refund_list))
        .get("/v1/application_fees/{id}/refunds/{refund}", "application_fees.refunds.retrieve", h!(fee_refund_retrieve))
        .post("/v1/application_fees/{id}/refunds/{refund}", "application_fees.refunds.update", h!(fee_refund_update))
        // Radar; mandates and setup attempts.
        .get("/v1/radar/early_fraud_warnings", "radar.early_fraud_warnings.list", h!(efw_list))
        .get("/v1/radar/early_fraud_warnings/{id}", "radar.early_fraud_warnings.retrieve", h!(efw_retrieve))
        .get("/v1/reviews", "reviews.list", h!(review_list))
        .get("/v1/reviews/{id}", "reviews.retrieve", h!(review_retrieve))
        .post("/v1/reviews/{id}/approve", "reviews.approve", h!(review_approve))
        .post("/v1/radar/value_lists", "radar.value_lists.create", h!(value_list_create))
        .get("/v1/radar/value_lists", "radar.value_lists.list", h!(value_list_list))
        .get("/v1/radar/value_lists/{id}", "radar.value_lists.retrieve", h!(value_list_retrieve))
        .post("/v1/radar/value_lists/{id}", "radar.value_lists.update", h!(value_list_update))
        .delete("/v1/radar/value_lists/{id}", "radar.value_lists.delete", h!(value_list_delete))
        .post("/v1/radar/value_list_items", "radar.value_list_items.create", h!(value_list_item_create))
        .get("/v1/radar/value_list_items", "radar.value_list_items.list", h!(value_list_item_list))
        .get("/v1/radar/value_list_items/{id}", "radar.value_list_items.retrieve", h!(value_list_item_retrieve))
        .delete("/v1/radar/value_list_items/{id}", "radar.value_list_items.delete", h!(value_list_item_delete))
        .get("/v1/mandates/{id}", "mandates.retrieve", h!(mandate_retrieve))
        .get("/v1/setup_attempts", "setup_attempts.list", h!(setup_attempt_list))
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
mod topups;
mod tokens;
mod cash_balance;
mod credit_notes;
mod quotes;
mod subscription_schedules;
mod usage;
mod plans;
mod billing_portal;
mod tax;
mod shipping_rates;
mod files;
mod accounts;
mod transfers;
mod application_fees;
mod radar;
mod mandates;
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
use topups::*;
pub(crate) use tokens::*;
use cash_balance::*;
use credit_notes::*;
use quotes::*;
pub(crate) use subscription_schedules::*;
pub(crate) use usage::*;
use plans::*;
use billing_portal::*;
pub(crate) use tax::*;
use shipping_rates::*;
pub(crate) use files::*;
pub(crate) use accounts::*;
pub(crate) use transfers::*;
use application_fees::*;
use radar::*;
pub(crate) use mandates::*;
pub use cards::*;
pub use emit::*;
pub use shared::*;
