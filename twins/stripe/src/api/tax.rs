//! Tax: tax rates (and what they add to an invoice, in [`tax_amounts`]), a customer's tax ids,
//! and Stripe's catalogue of product tax codes.

use super::*;

// ---------------------------------------------------------------------------------------
// Tax rates.

/// The kinds of tax a rate may name.
const TAX_TYPES: &[&str] = &["amusement_tax", "communications_tax", "gst", "hst", "igst", "jct", "lease_tax", "pst", "qst", "rst", "sales_tax", "vat"];

pub(super) fn tax_rate_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let display_name = p.req_str("display_name")?.to_string();
    let inclusive = p.bool("inclusive")?.ok_or_else(|| missing("inclusive"))?;
    let pct = percentage(p)?.ok_or_else(|| missing("percentage"))?;
    let id = w.new_id("txr");
    let mut o = json!({
        "id": id, "object": "tax_rate", "active": true, "country": null, "created": w.now(), "description": null,
        "display_name": display_name, "effective_percentage": pct, "inclusive": inclusive, "jurisdiction": null,
        "jurisdiction_level": null, "livemode": false, "metadata": {}, "percentage": pct, "state": null, "tax_type": null,
    });
    tax_rate_fields(p, &mut o)?;
    let o = w.insert(Some(call), o);
    emit(w, call, "tax_rate.created", &o, None);
    Ok(o)
}

/// `percentage`: a number from 0 to 100.
fn percentage(p: &Params) -> Result<Option<f64>, StripeError> {
    let Some(s) = p.str("percentage") else { return Ok(None) };
    let v: f64 = s.parse().map_err(|_| invalid(format!("Invalid decimal: {}", crate::core::shown(s))).param("percentage"))?;
    if !(0.0..=100.0).contains(&v) {
        return Err(invalid("The percentage must be between 0 and 100.").param("percentage"));
    }
    Ok(Some(v))
}

/// What a tax rate's create and update share: the fields that may change after it is made.
fn tax_rate_fields(p: &Params, o: &mut Value) -> Result<(), StripeError> {
    if let Some(t) = p.str("tax_type") {
        if !TAX_TYPES.contains(&t) {
            return Err(invalid(format!("Invalid tax_type: must be one of {}", one_of(TAX_TYPES))).param("tax_type"));
        }
    }
    if let Some(c) = p.str("country") {
        if c.len() != 2 || !c.bytes().all(|b| b.is_ascii_alphabetic()) {
            return Err(invalid(format!("Country '{}' is unknown. Try using a 2-character alphanumeric country code instead, such as 'US', 'EG', or 'GB'. A full list of country codes is available at https://stripe.com/docs/api#country_codes", crate::core::shown(c))).param("country"));
        }
    }
    p.copy(o, &["country", "description", "display_name", "jurisdiction", "state", "tax_type"]);
    if let Some(c) = o["country"].as_str().map(str::to_ascii_uppercase) {
        o["country"] = json!(c);
    }
    if let Some(a) = p.bool("active")? {
        o["active"] = json!(a);
    }
    p.metadata_into(o)
}

/// `a, b, or c`, as Stripe's enumeration errors list values.
pub(super) fn one_of(values: &[&str]) -> String {
    match values {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{}, or {last}", rest.join(", ")),
    }
}

pub(super) fn tax_rate_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    // A rate's percentage and inclusiveness are what invoices were computed with: they are
    // no parameters of the update, which refuses them.
    let mut o = get_or_404(w, "tax_rate", &id, "tax_rate")?;
    tax_rate_fields(p, &mut o)?;
    Ok(replace_emit(w, call, &id, "tax_rate.updated", o))
}

pub(super) fn tax_rate_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    get_or_404(w, "tax_rate", call.param("id"), "tax_rate")
}

pub(super) fn tax_rate_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let active = p.bool("active")?;
    let inclusive = p.bool("inclusive")?;
    list_of(w, call, "tax_rate", p, |o| active.is_none_or(|a| o["active"] == a) && inclusive.is_none_or(|i| o["inclusive"] == i))
}

/// The tax rates `ids` name (`param` the parameter that gave them), checked as Stripe checks
/// them: each exists and is active.
pub(crate) fn tax_rates_of(w: &World, ids: &[String], param: &str) -> Result<Vec<Value>, StripeError> {
    let mut out = Vec::with_capacity(ids.len());
    for (i, id) in ids.iter().enumerate() {
        let at = format!("{param}[{i}]");
        let r = w.get_kind("tax_rate", id).ok_or_else(|| no_such_ref("tax_rate", id, &at))?;
        if r["active"] != true {
            return Err(invalid(format!("Tax rate {id} is inactive: an inactive tax rate cannot be applied.")).param(&at));
        }
        out.push(r);
    }
    if out.len() > 5 {
        return Err(invalid("You may apply at most 5 tax rates to an item.").param(param));
    }
    Ok(out)
}

/// The tax an `amount` owes under each of `rates`: `(amount, inclusive, rate id)`. An exclusive
/// rate adds its percentage of the amount; an inclusive one is the part of the amount that is
/// tax (`amount − amount / (1 + rate)`). Rounded half up to the currency's smallest unit.
pub(crate) fn tax_amounts(amount: i64, rates: &[Value]) -> Vec<(i64, bool, Value)> {
    rates
        .iter()
        .map(|r| {
            let pct = r["percentage"].as_f64().unwrap_or(0.0);
            let inclusive = r["inclusive"] == true;
            let tax = if inclusive { amount as f64 - amount as f64 / (1.0 + pct / 100.0) } else { amount as f64 * pct / 100.0 };
            ((tax + 0.5).floor() as i64, inclusive, r["id"].clone())
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// A customer's tax ids.

/// Tax id types whose numbers Stripe checks with a government service: the new id waits,
/// `pending`, for the answer.
const VERIFIED_TYPES: &[&str] = &["au_abn", "eu_vat", "gb_vat"];

/// The country a tax id type belongs to (an EU VAT number's prefix names its own).
fn tax_id_country(ty: &str, value: &str) -> Option<String> {
    match ty {
        "eu_vat" => {
            let prefix: String = value.chars().take(2).collect::<String>().to_ascii_uppercase();
            Some(if prefix == "EL" { "GR".into() } else { prefix })
        }
        "eu_oss_vat" => None,
        "gb_vat" => Some("GB".into()),
        "unknown" => None,
        t => t.split('_').next().map(str::to_ascii_uppercase),
    }
}

/// Whether `value` is shaped as a tax id of `ty` is (the formats Stripe documents for the
/// common types; others need only be non-empty).
fn tax_id_valid(ty: &str, value: &str) -> bool {
    let digits = |s: &str, n: std::ops::RangeInclusive<usize>| n.contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit());
    let v: String = value.chars().filter(|c| !c.is_whitespace()).collect();
    match ty {
        "eu_vat" => v.len() > 4 && v[..2].bytes().all(|b| b.is_ascii_alphabetic()) && v[2..].bytes().all(|b| b.is_ascii_alphanumeric()),
        "gb_vat" => v.strip_prefix("GB").is_some_and(|d| digits(d, 9..=12)),
        "us_ein" => v.len() == 10 && v.as_bytes()[2] == b'-' && digits(&v[..2], 2..=2) && digits(&v[3..], 7..=7),
        "au_abn" => digits(&v, 11..=11),
        "ca_bn" => digits(&v, 9..=9),
        "in_gst" => v.len() == 15,
        _ => !v.is_empty(),
    }
}

pub(super) fn tax_id_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let cus = call.param("id").to_string();
    get_or_404(w, "customer", &cus, "customer")?;
    let ty = p.req_str("type")?.to_string();
    let value = p.req_str("value")?.to_string();
    if !tax_id_valid(&ty, &value) {
        return Err(invalid(format!("Invalid value for {ty}.")).code("tax_id_invalid").param("value"));
    }
    if w.all("tax_id").filter(|t| t["customer"] == cus.as_str()).count() >= 25 {
        return Err(invalid("A customer can have at most 25 tax ids.").code("tax_id_limit"));
    }
    let id = w.new_id("txi");
    let verification = if VERIFIED_TYPES.contains(&ty.as_str()) { json!({"status": "pending", "verified_address": null, "verified_name": null}) } else { Value::Null };
    let o = json!({
        "id": id, "object": "tax_id", "country": tax_id_country(&ty, &value), "created": w.now(), "customer": cus,
        "livemode": false, "owner": {"account": null, "application": null, "customer": cus, "type": "customer"},
        "type": ty, "value": value, "verification": verification,
    });
    let o = w.insert(Some(call), o);
    emit(w, call, "customer.tax_id.created", &o, None);
    Ok(o)
}

/// The tax id the path names, of the customer it names.
fn customer_tax_id(w: &World, call: &Call) -> Result<Value, StripeError> {
    let cus = call.param("id");
    get_or_404(w, "customer", cus, "customer")?;
    let tid = call.param("tax_id");
    w.get_kind("tax_id", tid).filter(|t| t["customer"] == cus).ok_or_else(|| no_such("tax_id", tid, "id"))
}

pub(super) fn tax_id_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    customer_tax_id(w, call)
}

pub(super) fn tax_id_delete(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let t = customer_tax_id(w, call)?;
    let id = t["id"].as_str().unwrap_or_default().to_string();
    w.remove(call, &id);
    emit(w, call, "customer.tax_id.deleted", &t, None);
    Ok(deleted(&id, "tax_id"))
}

pub(super) fn tax_id_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let cus = call.param("id").to_string();
    get_or_404(w, "customer", &cus, "customer")?;
    list_of(w, call, "tax_id", p, |t| t["customer"] == cus.as_str())
}

// ---------------------------------------------------------------------------------------
// Tax codes: Stripe's catalogue (the most used of its product tax codes), the same for every
// account.

const TAX_CODES: &[(&str, &str, &str)] = &[
    ("txcd_00000000", "Nontaxable", "Any nontaxable good or service that is not subject to tax."),
    ("txcd_10000000", "General - Electronically Supplied Services", "A digital service provided mainly through the internet with minimal human involvement, relying on information technology."),
    ("txcd_10103000", "Software as a service (SaaS) - personal use", "Pre-written software, delivered electronically, but access remotely, for personal use."),
    ("txcd_10103001", "Software as a service (SaaS) - business use", "Pre-written software, delivered electronically, but access remotely, for business use."),
    ("txcd_10201000", "Video Games - downloaded - non subscription - with permanent rights", "Video or electronic games in the common sense, transferred electronically, with permanent rights of use."),
    ("txcd_10302000", "Digital Books - downloaded - non subscription - with permanent rights", "Works of literature transferred electronically, with permanent rights of use."),
    ("txcd_10401000", "Digital Audio Works - downloaded - non subscription - with permanent rights", "Musical works transferred electronically, with permanent rights of use."),
    ("txcd_10502000", "Online Courses - live", "Instruction provided live over the internet."),
    ("txcd_20030000", "General - Services", "General category for services. It should be used only when there is no more specific services tax code."),
    ("txcd_20060000", "Professional Services", "Professional services that are not subject to a service-specific tax levy."),
    ("txcd_30011000", "Clothing and Footwear", "General category for clothing and footwear."),
    ("txcd_30060000", "Food and Beverage", "General category for food and beverage items."),
    ("txcd_35010000", "Books - Physical", "Printed books, not including religious books or textbooks."),
    ("txcd_40060003", "Gift Card", "A stored-value card or voucher redeemable for goods or services."),
    ("txcd_92010001", "Shipping", "Charges for delivering tangible personal property to the purchaser."),
    ("txcd_99999999", "General - Tangible Goods", "A physical good that can be moved or touched. Also known as tangible personal property."),
];

fn tax_code(c: &(&str, &str, &str)) -> Value {
    json!({"id": c.0, "object": "tax_code", "description": c.2, "name": c.1})
}

pub(super) fn tax_code_list(_w: &mut World, call: &mut Call, p: &Params) -> Res {
    crate::core::list_object(&call.req.path, TAX_CODES.iter().map(tax_code).collect(), p)
}

pub(super) fn tax_code_retrieve(_w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id");
    TAX_CODES.iter().find(|c| c.0 == id).map(tax_code).ok_or_else(|| no_such("tax_code", id, "id"))
}

/// Whether `id` is a tax code of Stripe's catalogue.
pub(crate) fn is_tax_code(id: &str) -> bool {
    TAX_CODES.iter().any(|c| c.0 == id)
}
