//! What the resources share: lookups by id, lists and searches of a kind (with `created`
//! ranges), currencies, and Stripe's minimum amounts.

use super::*;

pub(super) fn get_or_404(w: &World, kind: &str, id: &str, label: &str) -> Res {
    w.get_kind(kind, id).ok_or_else(|| no_such(label, id, "id"))
}

/// List objects of a kind, newest first, after a filter, with `created[gt]`-style bounds.
pub(crate) fn list_of(w: &World, call: &Call, kind: &str, p: &Params, keep: impl Fn(&Value) -> bool) -> Res {
    list_shaped(w, call, kind, p, keep, None)
}

/// [`list_of`], each listed object reshaped by `shape` (a Checkout session without its line
/// items). Besides `created`, the range filters an operation takes (`due_date`,
/// `arrival_date`, `current_period_end`) bound their own fields.
pub(crate) fn list_shaped(w: &World, call: &Call, kind: &str, p: &Params, keep: impl Fn(&Value) -> bool, shape: Option<fn(Value) -> Value>) -> Res {
    // With nothing to filter by, a page is cut from the ids and written from the stored
    // text: no object is decoded. (Charges and endpoints are reshaped after listing.)
    let paging_only = p.0.keys().all(|k| ["limit", "starting_after", "ending_before", "expand"].contains(&k.as_str()));
    if paging_only && call.params.is_empty() && shape.is_none() && kind != "charge" && kind != "webhook_endpoint" {
        return crate::core::list_ids(w, &call.req.path, w.ids(kind).collect(), p);
    }
    let mut bounds = Vec::new();
    for field in ["created", "due_date", "arrival_date", "current_period_end", "current_period_start"] {
        if p.get(field).is_some() {
            bounds.push(range(p, field)?);
        }
    }
    let items: Vec<Value> = w.all(kind).filter(|o| keep(o) && bounds.iter().all(|b| b(o))).map(|o| match shape {
        Some(f) => f(o),
        None => o,
    }).collect();
    crate::core::list_object(&call.req.path, items, p)
}

/// A range filter on the integer field `field`: an exact value, or `[gt]`, `[gte]`, `[lt]`,
/// `[lte]` bounds.
pub(super) fn range(p: &Params, field: &str) -> Result<Box<dyn Fn(&Value) -> bool>, StripeError> {
    let mut b: Vec<(String, i64)> = Vec::new();
    match p.get(field) {
        Some(Value::Object(m)) => {
            for (k, v) in m {
                if !["gt", "gte", "lt", "lte"].contains(&k.as_str()) {
                    return Err(invalid(format!("Received unknown parameter: {field}[{k}]")).code("parameter_unknown").param(&format!("{field}[{k}]")));
                }
                let n = v.as_str().and_then(|s| s.parse::<i64>().ok()).ok_or_else(|| invalid("Invalid integer").param(&format!("{field}[{k}]")))?;
                b.push((k.clone(), n));
            }
        }
        Some(Value::String(s)) => b.push(("eq".into(), s.parse().map_err(|_| invalid(format!("Invalid integer: {s}")).param(field))?)),
        _ => {}
    }
    let field = field.to_string();
    Ok(Box::new(move |o: &Value| {
        let Some(c) = o[&field].as_i64() else { return false };
        b.iter().all(|(k, n)| match k.as_str() {
            "gt" => c > *n,
            "gte" => c >= *n,
            "lt" => c < *n,
            "lte" => c <= *n,
            _ => c == *n,
        })
    }))
}

/// Whether `o[field]` is `want` (an id, a status), when the request filters by it: a field
/// holding an expanded object compares by its id.
pub(crate) fn field_is(o: &Value, field: &str, want: Option<&str>) -> bool {
    let Some(want) = want else { return true };
    let v = &o[field];
    if v.is_object() { v["id"] == want } else { *v == want }
}

pub(super) fn product_search(w: &mut World, call: &mut Call, p: &Params) -> Res {
    search_of(w, call, "product", p)
}

pub(super) fn price_search(w: &mut World, call: &mut Call, p: &Params) -> Res {
    search_of(w, call, "price", p)
}

pub(crate) fn search_of(w: &World, call: &Call, kind: &str, p: &Params) -> Res {
    let q = p.req_str("query")?.to_string();
    let mut items = Vec::new();
    for o in w.all(kind) {
        if search_matches(&q, &o)? {
            items.push(o);
        }
    }
    search_object(&call.req.path, items, p)
}

pub fn currency(p: &Params) -> Result<String, StripeError> {
    let c = p.req_str("currency")?.to_ascii_lowercase();
    if !CURRENCIES.contains(&c.as_str()) {
        return Err(invalid(format!("Invalid currency: {c}. Stripe currently supports these currencies: {}", CURRENCIES.join(", "))).param("currency"));
    }
    Ok(c)
}

/// The currencies Stripe accepts for a charge, in the order its error lists them.
pub const CURRENCIES: &[&str] = &[
    "usd", "aed", "afn", "all", "amd", "ang", "aoa", "ars", "aud", "awg", "azn", "bam", "bbd", "bdt", "bgn", "bhd", "bif", "bmd", "bnd", "bob", "brl",
    "bsd", "bwp", "byn", "bzd", "cad", "cdf", "chf", "clp", "cny", "cop", "crc", "cve", "czk", "djf", "dkk", "dop", "dzd", "egp", "etb", "eur", "fjd",
    "fkp", "gbp", "gel", "gip", "gmd", "gnf", "gtq", "gyd", "hkd", "hnl", "htg", "huf", "idr", "ils", "inr", "isk", "jmd", "jod", "jpy", "kes", "kgs",
    "khr", "kmf", "krw", "kwd", "kyd", "kzt", "lak", "lbp", "lkr", "lrd", "lsl", "mad", "mdl", "mga", "mkd", "mmk", "mnt", "mop", "mur", "mvr", "mwk",
    "mxn", "myr", "mzn", "nad", "ngn", "nio", "nok", "npr", "nzd", "omr", "pab", "pen", "pgk", "php", "pkr", "pln", "pyg", "qar", "ron", "rsd", "rub",
    "rwf", "sar", "sbd", "scr", "sek", "sgd", "shp", "sle", "sos", "srd", "std", "szl", "thb", "tjs", "tnd", "top", "try", "ttd", "twd", "tzs", "uah",
    "ugx", "uyu", "uzs", "vnd", "vuv", "wst", "xaf", "xcd", "xof", "xpf", "yer", "zar", "zmw",
];

pub const ZERO_DECIMAL: &[&str] = &["bif", "clp", "djf", "gnf", "jpy", "kmf", "krw", "mga", "pyg", "rwf", "ugx", "vnd", "vuv", "xaf", "xof", "xpf"];

/// Stripe's minimum charge amounts (docs.stripe.com/currencies, "Minimum and maximum charge
/// amounts"), in the currency's minor unit, with the symbol its error shows. Other currencies
/// have a minimum that follows the exchange rate to $0.50; a twin has no rates, so only
/// "at least 1" applies to them.
pub(super) const MINIMUM_CHARGE: &[(&str, i64, &str)] = &[
    ("aed", 200, "AED "), ("aud", 50, "$"), ("bgn", 100, "лв"), ("brl", 50, "R$"), ("cad", 50, "$"), ("chf", 50, "CHF "),
    ("czk", 1500, "Kč"), ("dkk", 250, "kr."), ("eur", 50, "€"), ("gbp", 30, "£"), ("hkd", 400, "$"), ("huf", 17500, "Ft"),
    ("inr", 50, "₹"), ("jpy", 50, "¥"), ("mxn", 1000, "$"), ("myr", 200, "RM "), ("nok", 300, "kr"), ("nzd", 50, "$"),
    ("pln", 200, "zł"), ("ron", 200, "lei "), ("sek", 300, "kr"), ("sgd", 50, "$"), ("thb", 1000, "฿"), ("usd", 50, "$"),
];

/// Stripe's checks on a charge amount: positive, at least the currency's minimum, at most
/// Stripe's maximum.
pub(super) fn check_amount(amount: i64, cur: &str) -> Result<(), StripeError> {
    if amount < 1 {
        return Err(invalid("This value must be greater than or equal to 1.").param("amount"));
    }
    if let Ok(i) = MINIMUM_CHARGE.binary_search_by(|(c, _, _)| (*c).cmp(cur)) {
        let (_, min, symbol) = MINIMUM_CHARGE[i];
        if amount < min {
            let shown = if ZERO_DECIMAL.contains(&cur) { min.to_string() } else { format!("{}.{:02}", min / 100, min % 100) };
            return Err(invalid(format!("Amount must be at least {symbol}{shown} {cur}")).code("amount_too_small").param("amount"));
        }
    }
    if amount > 99_999_999 {
        return Err(invalid("Amount must be no more than $999,999.99").code("amount_too_large").param("amount"));
    }
    Ok(())
}

pub(super) fn display(amount: i64, cur: &str) -> String {
    if ZERO_DECIMAL.contains(&cur) {
        format!("{amount} {cur}")
    } else {
        format!("${}.{:02}", amount / 100, amount % 100)
    }
}

/// What a DELETE answers: `{id, object, deleted: true}`.
pub(super) fn deleted(id: &str, object: &str) -> Value {
    json!({"id": id, "object": object, "deleted": true})
}

/// Store `after` as object `id`'s new state and emit `event` with the fields it changed as
/// `previous_attributes`.
pub(super) fn replace_emit(w: &mut World, call: &mut Call, id: &str, event: &str, after: Value) -> Value {
    modify_emit(w, call, id, event, |o| *o = after)
}

/// A list Stripe embeds in an object (a credit note's lines, a transfer's reversals): the
/// first page of `items`, with the URL that pages through them all.
pub(super) fn embedded_list(url: &str, items: Vec<Value>) -> Value {
    let total = items.len();
    let has_more = total > 10;
    let data: Vec<Value> = items.into_iter().take(10).collect();
    json!({"object": "list", "data": data, "has_more": has_more, "total_count": total, "url": url})
}

/// A nested form value as a whole number (`items[0][quantity]=3`): `None` when absent, Stripe's
/// `Invalid integer` when malformed.
pub(crate) fn int_at(v: &Value, param: &str) -> Result<Option<i64>, StripeError> {
    match v {
        Value::Null => Ok(None),
        Value::String(s) if s.is_empty() => Ok(None),
        Value::String(s) => s.parse().map(Some).map_err(|_| invalid(format!("Invalid integer: {}", crate::core::shown(s))).param(param)),
        Value::Number(n) => Ok(n.as_i64()),
        _ => Err(invalid(format!("Invalid integer: {param}")).param(param)),
    }
}

/// A nested form value as a boolean (`capabilities[transfers][requested]=true`).
pub(crate) fn bool_at(v: &Value, param: &str) -> Result<Option<bool>, StripeError> {
    match v.as_str() {
        None | Some("") => Ok(v.as_bool()),
        Some("true") => Ok(Some(true)),
        Some("false") => Ok(Some(false)),
        Some(s) => Err(invalid(format!("Invalid boolean: {}", crate::core::shown(s))).param(param)),
    }
}

/// `metadata` of a nested hash (`line_items[0][metadata]`) applied as the top-level one is.
pub(crate) fn metadata_at(v: &Value, param: &str) -> Result<Value, StripeError> {
    let mut holder = json!({"metadata": {}});
    if !v.is_null() {
        let mut m = serde_json::Map::new();
        m.insert("metadata".into(), v.clone());
        Params(m).metadata_into(&mut holder).map_err(|mut e| {
            e.param = e.param.map(|p| p.replacen("metadata", param, 1));
            e
        })?;
    }
    Ok(holder["metadata"].take())
}
