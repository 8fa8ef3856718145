//! Typed forms of the objects a card payment writes: the PaymentIntent, the card
//! PaymentMethod a test token yields, the charge, its card details and the balance
//! transaction. A payment is the twin's hottest write (create + confirm stores four objects
//! and three events and reports them all on the tape); building each as a `serde_json::Value`
//! map and diffing maps cost most of its time. These structs serialise straight to the same
//! compact text, field for field in Stripe's order, so the answer, the stored text and the
//! tape rows are written once each. Free-form fields (metadata, shipping, …) stay `Value`.

use pome_twin_sdk::Value;
use serde_json::value::RawValue;
use serde::{Deserialize, Serialize};

use crate::store::{Cut, Raw};

/// `billing_details` of a new payment method or charge: all empty.
const EMPTY_BILLING: &str = r#"{"address":{"city":null,"country":null,"line1":null,"line2":null,"postal_code":null,"state":null},"email":null,"name":null,"phone":null}"#;
/// `card.checks` of a test card.
const UNCHECKED: &str = r#"{"address_line1_check":null,"address_postal_code_check":null,"cvc_check":"unchecked"}"#;

/// A PaymentIntent, every field Stripe returns, in Stripe's order. `deny_unknown_fields`:
/// every PaymentIntent the twin stores is built from [`PaymentIntent::new`], so a field this
/// struct lacks is a bug to hear about, not data to drop.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PaymentIntent {
    pub id: String,
    pub object: String,
    pub amount: i64,
    pub amount_capturable: i64,
    pub amount_details: Value,
    pub amount_received: i64,
    pub application: Value,
    pub application_fee_amount: Value,
    pub automatic_payment_methods: Value,
    pub canceled_at: Value,
    pub cancellation_reason: Value,
    pub capture_method: String,
    pub client_secret: Value,
    pub confirmation_method: String,
    pub created: i64,
    pub currency: String,
    pub customer: Value,
    pub description: Value,
    pub invoice: Value,
    pub last_payment_error: Value,
    pub latest_charge: Value,
    pub livemode: bool,
    pub metadata: Value,
    pub next_action: Value,
    pub on_behalf_of: Value,
    pub payment_method: Value,
    pub payment_method_configuration_details: Value,
    pub payment_method_options: Value,
    pub payment_method_types: Value,
    pub processing: Value,
    pub receipt_email: Value,
    pub review: Value,
    pub setup_future_usage: Value,
    pub shipping: Value,
    pub source: Value,
    pub statement_descriptor: Value,
    pub statement_descriptor_suffix: Value,
    pub status: String,
    pub transfer_data: Value,
    pub transfer_group: Value,
}

impl PaymentIntent {
    /// A new PaymentIntent awaiting a payment method.
    pub fn new(id: &str, amount: i64, cur: &str, created: i64) -> PaymentIntent {
        let mut tip = serde_json::Map::new();
        tip.insert("tip".into(), Value::Object(serde_json::Map::new()));
        PaymentIntent {
            id: id.to_string(),
            object: "payment_intent".into(),
            amount,
            amount_capturable: 0,
            amount_details: Value::Object(tip),
            amount_received: 0,
            application: Value::Null,
            application_fee_amount: Value::Null,
            automatic_payment_methods: Value::Null,
            canceled_at: Value::Null,
            cancellation_reason: Value::Null,
            capture_method: "automatic".into(),
            client_secret: Value::String(format!("{id}_secret_{}", crate::core::base62(created as u64, 10))),
            confirmation_method: "automatic".into(),
            created,
            currency: cur.to_string(),
            customer: Value::Null,
            description: Value::Null,
            invoice: Value::Null,
            last_payment_error: Value::Null,
            latest_charge: Value::Null,
            livemode: false,
            metadata: Value::Object(serde_json::Map::new()),
            next_action: Value::Null,
            on_behalf_of: Value::Null,
            payment_method: Value::Null,
            payment_method_configuration_details: Value::Null,
            payment_method_options: Value::Object(serde_json::Map::new()),
            payment_method_types: Value::Array(vec![Value::String("card".into())]),
            processing: Value::Null,
            receipt_email: Value::Null,
            review: Value::Null,
            setup_future_usage: Value::Null,
            shipping: Value::Null,
            source: Value::Null,
            statement_descriptor: Value::Null,
            statement_descriptor_suffix: Value::Null,
            status: "requires_payment_method".into(),
            transfer_data: Value::Null,
            transfer_group: Value::Null,
        }
    }

    /// Its compact JSON, cut into fields.
    pub fn cut(&self) -> Cut {
        Cut::of(self)
    }

    /// As a `Value` (errors that carry the PaymentIntent).
    pub fn value(&self) -> Value {
        serde_json::to_value(self).expect("a PaymentIntent serialises")
    }

    /// Read a stored PaymentIntent's text.
    pub fn parse(text: &str) -> PaymentIntent {
        serde_json::from_str(text).unwrap_or_else(|e| panic!("a stored PaymentIntent has the fields PaymentIntent::new gives: {e}"))
    }
}

/// A card PaymentMethod as a test card number yields it.
#[derive(Serialize)]
pub struct CardPaymentMethod<'a> {
    pub id: String,
    pub object: &'static str,
    pub allow_redisplay: &'static str,
    pub billing_details: Raw<'static>,
    pub card: Card<'a>,
    pub created: i64,
    pub customer: Value,
    pub livemode: bool,
    pub metadata: Raw<'static>,
    #[serde(rename = "type")]
    pub ty: &'static str,
}

#[derive(Serialize)]
pub struct Card<'a> {
    pub brand: &'a str,
    pub checks: Raw<'static>,
    pub country: &'static str,
    pub display_brand: &'a str,
    pub exp_month: i64,
    pub exp_year: i64,
    pub fingerprint: String,
    pub funding: &'static str,
    pub generated_from: Value,
    pub last4: &'a str,
    pub networks: Networks<'a>,
    pub three_d_secure_usage: Raw<'static>,
    pub wallet: Value,
}

#[derive(Serialize)]
pub struct Networks<'a> {
    pub available: [&'a str; 1],
    pub preferred: Value,
}

impl<'a> CardPaymentMethod<'a> {
    pub fn new(id: String, number: &'a str, brand: &'a str, exp_month: i64, exp_year: i64, created: i64) -> CardPaymentMethod<'a> {
        CardPaymentMethod {
            id,
            object: "payment_method",
            allow_redisplay: "unspecified",
            billing_details: Raw(EMPTY_BILLING),
            card: Card {
                brand,
                checks: Raw(UNCHECKED),
                country: "US",
                display_brand: brand,
                exp_month,
                exp_year,
                fingerprint: crate::core::base62(number.bytes().fold(7u64, |a, b| a.wrapping_mul(31).wrapping_add(b as u64)), 16),
                funding: "credit",
                generated_from: Value::Null,
                last4: &number[number.len() - 4..],
                networks: Networks { available: [brand], preferred: Value::Null },
                three_d_secure_usage: Raw(r#"{"supported":true}"#),
                wallet: Value::Null,
            },
            created,
            customer: Value::Null,
            livemode: false,
            metadata: Raw("{}"),
            ty: "card",
        }
    }
}

/// What a charge needs of a stored payment method: its type, owner and card.
#[derive(Deserialize)]
pub struct PmView {
    #[serde(rename = "type", default)]
    pub ty: Option<String>,
    #[serde(default)]
    pub customer: Value,
    #[serde(default)]
    pub card: Option<CardView>,
}

#[derive(Deserialize)]
pub struct CardView {
    #[serde(default)]
    pub brand: Value,
    /// Copied into the charge as it is.
    #[serde(default = "null_raw")]
    pub checks: Box<RawValue>,
    #[serde(default)]
    pub country: Value,
    #[serde(default)]
    pub exp_month: Value,
    #[serde(default)]
    pub exp_year: Value,
    #[serde(default)]
    pub fingerprint: Value,
    #[serde(default)]
    pub funding: Value,
    #[serde(default)]
    pub last4: Value,
}

fn null_raw() -> Box<RawValue> {
    RawValue::from_string("null".into()).expect("null is JSON")
}

/// `payment_method_details.card` of a charge.
#[derive(Serialize)]
pub struct CardDetails<'a> {
    pub amount_authorized: Value,
    pub brand: &'a Value,
    pub checks: &'a RawValue,
    pub country: &'a Value,
    pub exp_month: &'a Value,
    pub exp_year: &'a Value,
    pub fingerprint: &'a Value,
    pub funding: &'a Value,
    pub last4: &'a Value,
    pub network: &'a Value,
    pub three_d_secure: Value,
    pub wallet: Value,
}

#[derive(Serialize)]
pub struct CardPaymentDetails<'a> {
    #[serde(rename = "type")]
    pub ty: &'static str,
    pub card: CardDetails<'a>,
}

impl CardView {
    pub fn details(&self) -> CardPaymentDetails<'_> {
        CardPaymentDetails {
            ty: "card",
            card: CardDetails {
                amount_authorized: Value::Null,
                brand: &self.brand,
                checks: &self.checks,
                country: &self.country,
                exp_month: &self.exp_month,
                exp_year: &self.exp_year,
                fingerprint: &self.fingerprint,
                funding: &self.funding,
                last4: &self.last4,
                network: &self.brand,
                three_d_secure: Value::Null,
                wallet: Value::Null,
            },
        }
    }
}

/// What a charge copies from the PaymentIntent (or the parameters) it is made for.
pub struct ChargeFrom<'a> {
    pub amount: i64,
    pub currency: &'a Value,
    pub customer: &'a Value,
    pub description: &'a Value,
    pub metadata: &'a Value,
    pub receipt_email: &'a Value,
    pub shipping: &'a Value,
    pub payment_intent: &'a Value,
    pub payment_method: &'a Value,
}

/// A charge.
#[derive(Serialize)]
pub struct Charge<'a> {
    pub id: String,
    pub object: &'static str,
    pub amount: i64,
    pub amount_captured: i64,
    pub amount_refunded: i64,
    pub application: Value,
    pub application_fee: Value,
    pub application_fee_amount: Value,
    pub balance_transaction: Option<String>,
    pub billing_details: Raw<'static>,
    pub calculated_statement_descriptor: &'static str,
    pub captured: bool,
    pub created: i64,
    pub currency: &'a Value,
    pub customer: &'a Value,
    pub description: &'a Value,
    pub disputed: bool,
    pub failure_balance_transaction: Value,
    pub failure_code: Value,
    pub failure_message: Value,
    pub fraud_details: Raw<'static>,
    pub invoice: Value,
    pub livemode: bool,
    pub metadata: &'a Value,
    pub on_behalf_of: Value,
    pub outcome: Outcome,
    pub paid: bool,
    pub payment_intent: &'a Value,
    pub payment_method: &'a Value,
    pub payment_method_details: Raw<'a>,
    pub receipt_email: &'a Value,
    pub receipt_number: Value,
    pub receipt_url: String,
    pub refunded: bool,
    pub refunds: Refunds,
    pub review: Value,
    pub shipping: &'a Value,
    pub source: Value,
    pub source_transfer: Value,
    pub statement_descriptor: Value,
    pub statement_descriptor_suffix: Value,
    pub status: &'a str,
    pub transfer_data: Value,
    pub transfer_group: Value,
}

#[derive(Serialize)]
pub struct Outcome {
    pub network_status: &'static str,
    pub reason: Option<&'static str>,
    pub risk_level: &'static str,
    pub risk_score: i64,
    pub seller_message: &'static str,
    #[serde(rename = "type")]
    pub ty: &'static str,
}

#[derive(Serialize)]
pub struct Refunds {
    pub object: &'static str,
    pub data: [(); 0],
    pub has_more: bool,
    pub total_count: i64,
    pub url: String,
}

impl<'a> Charge<'a> {
    /// A charge for an attempt of `from`, with `details` (compact JSON) as its
    /// `payment_method_details`.
    pub fn new(id: String, from: &ChargeFrom<'a>, details: &'a str, status: &'a str, captured: bool, created: i64) -> Charge<'a> {
        let captured = captured && status == "succeeded";
        Charge {
            amount: from.amount,
            object: "charge",
            amount_captured: if captured { from.amount } else { 0 },
            amount_refunded: 0,
            application: Value::Null,
            application_fee: Value::Null,
            application_fee_amount: Value::Null,
            balance_transaction: None,
            billing_details: Raw(EMPTY_BILLING),
            calculated_statement_descriptor: "POME TWIN",
            captured,
            created,
            currency: from.currency,
            customer: from.customer,
            description: from.description,
            disputed: false,
            failure_balance_transaction: Value::Null,
            failure_code: Value::Null,
            failure_message: Value::Null,
            fraud_details: Raw("{}"),
            invoice: Value::Null,
            livemode: false,
            metadata: from.metadata,
            on_behalf_of: Value::Null,
            outcome: Outcome {
                network_status: "approved_by_network",
                reason: None,
                risk_level: "normal",
                risk_score: 20,
                seller_message: "Payment complete.",
                ty: "authorized",
            },
            paid: status == "succeeded",
            payment_intent: from.payment_intent,
            payment_method: from.payment_method,
            payment_method_details: Raw(details),
            receipt_email: from.receipt_email,
            receipt_number: Value::Null,
            receipt_url: format!("https://pay.stripe.com/receipts/payment/{id}"),
            refunded: false,
            refunds: Refunds { object: "list", data: [], has_more: false, total_count: 0, url: format!("/v1/charges/{id}/refunds") },
            review: Value::Null,
            shipping: from.shipping,
            source: Value::Null,
            source_transfer: Value::Null,
            statement_descriptor: Value::Null,
            statement_descriptor_suffix: Value::Null,
            status,
            transfer_data: Value::Null,
            transfer_group: Value::Null,
            id,
        }
    }
}

/// A balance transaction.
#[derive(Serialize)]
pub struct BalanceTransaction<'a> {
    pub id: &'a str,
    pub object: &'static str,
    pub amount: i64,
    pub available_on: i64,
    pub created: i64,
    pub currency: &'a str,
    pub description: Option<&'a str>,
    pub exchange_rate: Value,
    pub fee: i64,
    pub fee_details: Vec<FeeDetail<'a>>,
    pub net: i64,
    pub reporting_category: &'a str,
    pub source: &'a str,
    pub status: &'static str,
    #[serde(rename = "type")]
    pub ty: &'a str,
}

#[derive(Serialize)]
pub struct FeeDetail<'a> {
    pub amount: i64,
    pub application: Value,
    pub currency: &'a str,
    pub description: &'static str,
    #[serde(rename = "type")]
    pub ty: &'static str,
}
