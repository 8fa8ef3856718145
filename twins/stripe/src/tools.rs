//! The MCP tools of Stripe's own agent toolkit (`@stripe/agent-toolkit`, served at
//! mcp.stripe.com), with its tool names and argument names, each mapped onto the twin's REST
//! route. An agent configured for Stripe's MCP server works against the twin by changing the
//! URL. Arguments go as Stripe's nested-bracket forms; where the toolkit's argument is not
//! the API's field (`create_payment_link`'s `price` is `line_items[0][price]`), `rename`
//! says so, and fixed fields add what the toolkit adds itself (`create_invoice` sends
//! `collection_method=send_invoice`).
//!
//! `search_stripe_documentation` is not declared: the twin has no documentation to search.

use std::collections::BTreeMap;

use pome_twin_sdk::{ToolBody, ToolDecl, Value, json};

fn limit() -> Value {
    json!({"type": "integer", "minimum": 1, "maximum": 100, "description": "A limit on the number of objects to be returned. Limit can range between 1 and 100."})
}

fn string(d: &str) -> Value {
    json!({"type": "string", "description": d})
}

fn int(d: &str) -> Value {
    json!({"type": "integer", "description": d})
}

fn schema(props: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": props, "required": required, "additionalProperties": false})
}

struct T {
    name: &'static str,
    description: &'static str,
    method: &'static str,
    path: &'static str,
    schema: Value,
    rename: &'static [(&'static str, &'static str)],
    fixed: Value,
}

impl T {
    fn decl(self) -> ToolDecl {
        let read_only = self.method == "GET";
        ToolDecl {
            name: self.name.into(),
            description: self.description.into(),
            input_schema: self.schema,
            method: self.method.into(),
            path: self.path.into(),
            body: if read_only { ToolBody::Query } else { ToolBody::Form },
            rename: self.rename.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect::<BTreeMap<_, _>>(),
            fixed: match self.fixed {
                Value::Object(m) => m,
                _ => Default::default(),
            },
            read_only,
        }
    }
}

pub fn declared() -> Vec<ToolDecl> {
    let none = Value::Null;
    vec![
        T {
            name: "create_customer",
            description: "This tool will create a customer in Stripe.",
            method: "POST",
            path: "/v1/customers",
            schema: schema(json!({"name": string("The name of the customer"), "email": string("The email of the customer")}), &["name"]),
            rename: &[],
            fixed: none.clone(),
        },
        T {
            name: "list_customers",
            description: "This tool will fetch a list of Customers from Stripe.",
            method: "GET",
            path: "/v1/customers",
            schema: schema(json!({"limit": limit(), "email": string("A case-sensitive filter on the list based on the customer's email field.")}), &[]),
            rename: &[],
            fixed: none.clone(),
        },
        T {
            name: "create_product",
            description: "This tool will create a product in Stripe.",
            method: "POST",
            path: "/v1/products",
            schema: schema(json!({"name": string("The name of the product."), "description": string("The description of the product.")}), &["name"]),
            rename: &[],
            fixed: none.clone(),
        },
        T {
            name: "list_products",
            description: "This tool will fetch a list of Products from Stripe.",
            method: "GET",
            path: "/v1/products",
            schema: schema(json!({"limit": limit()}), &[]),
            rename: &[],
            fixed: none.clone(),
        },
        T {
            name: "create_price",
            description: "This tool will create a price in Stripe. If a product has not already been specified, a product should be created first.",
            method: "POST",
            path: "/v1/prices",
            schema: schema(
                json!({"product": string("The ID of the product to create the price for."), "unit_amount": int("The unit amount of the price in cents."), "currency": string("The currency of the price.")}),
                &["product", "unit_amount", "currency"],
            ),
            rename: &[],
            fixed: none.clone(),
        },
        T {
            name: "list_prices",
            description: "This tool will fetch a list of Prices from Stripe.",
            method: "GET",
            path: "/v1/prices",
            schema: schema(json!({"product": string("The ID of the product to list prices for."), "limit": limit()}), &[]),
            rename: &[],
            fixed: none.clone(),
        },
        T {
            name: "create_payment_link",
            description: "This tool will create a payment link in Stripe.",
            method: "POST",
            path: "/v1/payment_links",
            schema: schema(
                json!({"price": string("The ID of the price to create the payment link for."), "quantity": int("The quantity of the product to include.")}),
                &["price", "quantity"],
            ),
            rename: &[("price", "line_items[0][price]"), ("quantity", "line_items[0][quantity]")],
            fixed: none.clone(),
        },
        T {
            name: "create_invoice",
            description: "This tool will create an invoice in Stripe.",
            method: "POST",
            path: "/v1/invoices",
            schema: schema(
                json!({"customer": string("The ID of the customer to create the invoice for."), "days_until_due": int("The number of days until the invoice is due.")}),
                &["customer"],
            ),
            rename: &[],
            fixed: json!({"collection_method": "send_invoice"}),
        },
        T {
            name: "list_invoices",
            description: "This tool will fetch a list of Invoices from Stripe.",
            method: "GET",
            path: "/v1/invoices",
            schema: schema(json!({"customer": string("The ID of the customer to list invoices for."), "limit": limit()}), &[]),
            rename: &[],
            fixed: none.clone(),
        },
        T {
            name: "create_invoice_item",
            description: "This tool will create an invoice item in Stripe.",
            method: "POST",
            path: "/v1/invoiceitems",
            schema: schema(
                json!({"customer": string("The ID of the customer to create the invoice item for."), "price": string("The ID of the price for the item."), "invoice": string("The ID of the invoice to create the item for.")}),
                &["customer", "price", "invoice"],
            ),
            rename: &[],
            fixed: none.clone(),
        },
        T {
            name: "finalize_invoice",
            description: "This tool will finalize an invoice in Stripe.",
            method: "POST",
            path: "/v1/invoices/{invoice}/finalize",
            schema: schema(json!({"invoice": string("The ID of the invoice to finalize.")}), &["invoice"]),
            rename: &[],
            fixed: none.clone(),
        },
        T {
            name: "retrieve_balance",
            description: "This tool will retrieve the balance from Stripe. It takes no input.",
            method: "GET",
            path: "/v1/balance",
            schema: schema(json!({}), &[]),
            rename: &[],
            fixed: none.clone(),
        },
        T {
            name: "create_refund",
            description: "This tool will refund a payment intent in Stripe.",
            method: "POST",
            path: "/v1/refunds",
            schema: schema(
                json!({"payment_intent": string("The ID of the PaymentIntent to refund."), "amount": int("The amount to refund in cents.")}),
                &["payment_intent"],
            ),
            rename: &[],
            fixed: none.clone(),
        },
        T {
            name: "list_payment_intents",
            description: "This tool will list payment intents in Stripe.",
            method: "GET",
            path: "/v1/payment_intents",
            schema: schema(json!({"customer": string("The ID of the customer to list payment intents for."), "limit": limit()}), &[]),
            rename: &[],
            fixed: none.clone(),
        },
        T {
            name: "list_subscriptions",
            description: "This tool will list all subscriptions in Stripe.",
            method: "GET",
            path: "/v1/subscriptions",
            schema: schema(
                json!({
                    "customer": string("The ID of the customer to list subscriptions for."),
                    "price": string("The ID of the price to list subscriptions for."),
                    "status": {"type": "string", "enum": ["active", "past_due", "unpaid", "canceled", "incomplete", "incomplete_expired", "trialing", "all"], "description": "The status of the subscriptions to retrieve."},
                    "limit": limit(),
                }),
                &[],
            ),
            rename: &[],
            fixed: none.clone(),
        },
        T {
            name: "cancel_subscription",
            description: "This tool will cancel a subscription in Stripe.",
            method: "DELETE",
            path: "/v1/subscriptions/{subscription}",
            schema: schema(json!({"subscription": string("The ID of the subscription to cancel.")}), &["subscription"]),
            rename: &[],
            fixed: none.clone(),
        },
        T {
            name: "update_subscription",
            description: "This tool will update an existing subscription in Stripe.",
            method: "POST",
            path: "/v1/subscriptions/{subscription}",
            schema: schema(
                json!({
                    "subscription": string("The ID of the subscription to update."),
                    "proration_behavior": {"type": "string", "enum": ["create_prorations", "none", "always_invoice", "none_implicit"], "description": "Determines how to handle prorations when the subscription items change."},
                    "items": {"type": "array", "description": "A list of subscription items to update, add, or remove.", "items": {"type": "object", "properties": {
                        "id": string("The ID of the subscription item to modify."),
                        "price": string("The ID of the price to switch to."),
                        "quantity": {"type": "integer", "minimum": 1, "description": "The quantity of the subscription item."},
                        "deleted": {"type": "boolean", "description": "Whether to delete this subscription item."},
                    }}},
                }),
                &["subscription"],
            ),
            rename: &[],
            fixed: none.clone(),
        },
        T {
            name: "list_coupons",
            description: "This tool will fetch a list of Coupons from Stripe.",
            method: "GET",
            path: "/v1/coupons",
            schema: schema(json!({"limit": limit()}), &[]),
            rename: &[],
            fixed: none.clone(),
        },
        T {
            name: "create_coupon",
            description: "This tool will create a coupon in Stripe.",
            method: "POST",
            path: "/v1/coupons",
            schema: schema(
                json!({
                    "name": string("Name of the coupon displayed to customers on invoices or receipts"),
                    "percent_off": {"type": "number", "minimum": 0, "maximum": 100, "description": "A positive float larger than 0, and smaller or equal to 100, that represents the discount the coupon will apply (required if amount_off is not passed)"},
                    "amount_off": int("A positive integer representing the amount to subtract from an invoice total (required if percent_off is not passed)"),
                    "currency": string("Three-letter ISO code for the currency of the amount_off parameter (required if amount_off is passed)."),
                    "duration": {"type": "string", "enum": ["once", "repeating", "forever"], "description": "How long the discount will last. Defaults to \"once\""},
                    "duration_in_months": int("The number of months the discount will last if duration is repeating"),
                }),
                &["name"],
            ),
            rename: &[],
            fixed: none.clone(),
        },
        T {
            name: "list_disputes",
            description: "This tool will fetch a list of disputes in Stripe.",
            method: "GET",
            path: "/v1/disputes",
            schema: schema(
                json!({"charge": string("Only return disputes associated to the charge specified by this charge ID."), "payment_intent": string("Only return disputes associated to the PaymentIntent specified by this PaymentIntent ID."), "limit": limit()}),
                &[],
            ),
            rename: &[],
            fixed: none.clone(),
        },
        T {
            name: "update_dispute",
            description: "When you receive a dispute, contacting your customer is always the best first step. If that doesn't work, you can submit evidence to help resolve the dispute in your favor. This tool helps.",
            method: "POST",
            path: "/v1/disputes/{dispute}",
            schema: schema(
                json!({
                    "dispute": string("The ID of the dispute to update"),
                    "evidence": {"type": "object", "description": "Evidence to upload, to respond to a dispute.", "properties": {
                        "cancellation_policy_disclosure": {"type": "string", "maxLength": 20000},
                        "duplicate_charge_explanation": {"type": "string", "maxLength": 20000},
                        "uncategorized_text": {"type": "string", "maxLength": 20000},
                    }},
                    "submit": {"type": "boolean", "description": "Whether to immediately submit evidence to the bank. If false, evidence is staged on the dispute."},
                }),
                &["dispute"],
            ),
            rename: &[],
            fixed: none,
        },
    ]
    .into_iter()
    .map(T::decl)
    .collect()
}
