//! Connect: the platform's own account, the connected accounts it creates (with their
//! capabilities, external accounts, persons and login links), and account links, whose
//! onboarding page the twin serves as the account holder's step.
//!
//! What an account still needs is computed, as Stripe computes it, from what it holds:
//! `requirements.currently_due` names each missing field, and its requested capabilities are
//! `active` (charges and payouts enabled) only once nothing is due. A custom account is
//! completed through the API; an Express or Standard account by its holder on the onboarding
//! page an account link opens (`GET` the link's URL: the page fills Stripe's test data,
//! then redirects to `return_url`; a used or expired link redirects to `refresh_url`).

use super::*;

/// Where account links' onboarding pages are served, under the twin's base URL.
pub const ONBOARDING: &str = "/connect/onboarding/";

/// How long an account link stays usable, as Stripe keeps it.
const LINK_SECS: i64 = 300;

const ACCOUNT_TYPES: &[&str] = &["custom", "express", "standard"];

/// Capabilities an account may request.
const CAPABILITIES: &[&str] = &[
    "acss_debit_payments", "affirm_payments", "afterpay_clearpay_payments", "au_becs_debit_payments", "bacs_debit_payments",
    "bancontact_payments", "bank_transfer_payments", "blik_payments", "boleto_payments", "card_issuing", "card_payments",
    "cartes_bancaires_payments", "cashapp_payments", "eps_payments", "fpx_payments", "giropay_payments", "grabpay_payments",
    "ideal_payments", "india_international_payments", "jcb_payments", "klarna_payments", "konbini_payments", "legacy_payments",
    "link_payments", "oxxo_payments", "p24_payments", "paynow_payments", "promptpay_payments", "sepa_debit_payments",
    "sofort_payments", "tax_reporting_us_1099_k", "tax_reporting_us_1099_misc", "transfers", "treasury", "us_bank_account_ach_payments",
];

fn address_null() -> Value {
    json!({"city": null, "country": null, "line1": null, "line2": null, "postal_code": null, "state": null})
}

fn no_requirements() -> Value {
    json!({"alternatives": [], "current_deadline": null, "currently_due": [], "disabled_reason": null, "errors": [], "eventually_due": [], "past_due": [], "pending_verification": []})
}

/// The platform's own account (`GET /v1/account`): a Standard account, fully onboarded.
fn platform(w: &World) -> Value {
    json!({
        "id": w.account_id, "object": "account",
        "business_profile": {"annual_revenue": null, "estimated_worker_count": null, "mcc": "5734", "name": "Pome Twin", "product_description": null, "support_address": null, "support_email": null, "support_phone": null, "support_url": null, "url": null},
        "business_type": "company", "capabilities": {"card_payments": "active", "transfers": "active"}, "charges_enabled": true,
        "controller": {"type": "account"}, "country": "US", "created": 1_577_836_800, "default_currency": "usd", "details_submitted": true,
        "email": null, "external_accounts": {"object": "list", "data": [], "has_more": false, "total_count": 0, "url": format!("/v1/accounts/{}/external_accounts", w.account_id)},
        "future_requirements": no_requirements(), "metadata": {}, "payouts_enabled": true, "requirements": no_requirements(),
        "settings": settings("Pome Twin"), "tos_acceptance": {"date": 1_577_836_800, "ip": null, "user_agent": null}, "type": "standard",
    })
}

fn settings(name: &str) -> Value {
    json!({
        "bacs_debit_payments": {},
        "branding": {"icon": null, "logo": null, "primary_color": null, "secondary_color": null},
        "card_issuing": {"tos_acceptance": {"date": null, "ip": null}},
        "card_payments": {"decline_on": {"avs_failure": false, "cvc_failure": false}, "statement_descriptor_prefix": null, "statement_descriptor_prefix_kana": null, "statement_descriptor_prefix_kanji": null},
        "dashboard": {"display_name": name, "timezone": "Etc/UTC"},
        "invoices": {"default_account_tax_ids": null},
        "payments": {"statement_descriptor": null, "statement_descriptor_kana": null, "statement_descriptor_kanji": null},
        "payouts": {"debit_negative_balances": true, "schedule": {"delay_days": 2, "interval": "daily"}, "statement_descriptor": null},
        "sepa_debit_payments": {},
    })
}

pub(super) fn account_self(w: &mut World, _call: &mut Call, _p: &Params) -> Res {
    Ok(platform(w))
}

/// A connected account the path names (`id`); the platform's own answers as `GET /v1/account`.
fn path_account(w: &World, call: &Call) -> Result<(String, Value), StripeError> {
    let id = call.param("id").to_string();
    let a = w.get_kind("account", &id).ok_or_else(|| no_such("account", &id, "account"))?;
    Ok((id, a))
}

pub(super) fn account_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let ty = match (p.str("type"), p.get("controller")) {
        (Some(t), _) => t.to_string(),
        // The newer way to say who owns what: a platform that collects requirements and
        // bears losses makes a custom account; a Stripe dashboard makes it express/standard.
        (None, Some(c)) => match c["stripe_dashboard"]["type"].as_str() {
            Some("express") => "express".into(),
            Some("full") => "standard".into(),
            _ if c["requirement_collection"] == "application" => "custom".into(),
            _ => "standard".into(),
        },
        (None, None) => return Err(invalid("You must provide a value for type or controller when creating an account.").code("parameter_missing").param("type")),
    };
    if !ACCOUNT_TYPES.contains(&ty.as_str()) {
        return Err(invalid("Invalid type: must be one of custom, express, or standard").param("type"));
    }
    let country = p.str("country").unwrap_or("US").to_ascii_uppercase();
    if country.len() != 2 {
        return Err(invalid(format!("Country '{country}' is unknown.")).param("country"));
    }
    if ty != "standard" && p.get("capabilities").is_none() {
        return Err(invalid(format!("You must request at least one capability (`capabilities[card_payments][requested]=true` or `capabilities[transfers][requested]=true`) when creating a {ty} account.")).code("parameter_missing").param("capabilities"));
    }
    let id = w.new_id("acct");
    let now = w.now();
    let mut a = json!({
        "id": id, "object": "account",
        "business_profile": {"annual_revenue": null, "estimated_worker_count": null, "mcc": null, "name": null, "product_description": null, "support_address": null, "support_email": null, "support_phone": null, "support_url": null, "url": null},
        "business_type": null, "capabilities": {}, "charges_enabled": false,
        "controller": if ty == "standard" { json!({"is_controller": true, "type": "account"}) } else { json!({"is_controller": true, "type": "application"}) },
        "country": country, "created": now, "default_currency": default_currency(&country), "details_submitted": false, "email": null,
        "external_accounts": embedded_list(&format!("/v1/accounts/{id}/external_accounts"), Vec::new()),
        "future_requirements": no_requirements(), "metadata": {}, "payouts_enabled": false, "requirements": no_requirements(),
        "settings": settings(""), "tos_acceptance": {"date": null, "ip": null, "user_agent": null}, "type": ty,
    });
    a["settings"]["dashboard"]["display_name"] = Value::Null;
    apply_account_params(w, p, &mut a)?;
    let mut requested: Vec<String> = requested_capabilities(p)?.into_iter().filter(|(_, r)| *r).map(|(c, _)| c).collect();
    if ty == "standard" && requested.is_empty() {
        requested = vec!["card_payments".into(), "transfers".into()];
    }
    w.insert(Some(call), a);
    for c in &requested {
        let key = cap_key(&id, c);
        let cap = json!({"id": c, "object": "capability", "account": id, "future_requirements": cap_requirements(&[]), "requested": true, "requested_at": now, "requirements": cap_requirements(&[]), "status": "inactive"});
        w.insert_text(Some(call), "capability", &key, cap.to_string());
    }
    if let Some(ext) = p.get("external_account") {
        add_external_account(w, call, &id, ext, "external_account")?;
    }
    let a = settle(w, call, &id, false);
    Ok(a)
}

/// An account's default currency in its country (the few Stripe documents most).
fn default_currency(country: &str) -> &'static str {
    match country {
        "GB" => "gbp",
        "CA" => "cad",
        "AU" => "aud",
        "JP" => "jpy",
        "CH" => "chf",
        "IN" => "inr",
        "AT" | "BE" | "DE" | "ES" | "FI" | "FR" | "IE" | "IT" | "NL" | "PT" => "eur",
        _ => "usd",
    }
}

/// `capabilities[<name>][requested]`: (name, requested) for each capability named.
fn requested_capabilities(p: &Params) -> Result<Vec<(String, bool)>, StripeError> {
    let mut out = Vec::new();
    if let Some(m) = p.get("capabilities").and_then(Value::as_object) {
        for (name, v) in m {
            if !CAPABILITIES.contains(&name.as_str()) {
                return Err(invalid(format!("Received unknown parameter: capabilities[{name}]")).code("parameter_unknown").param(&format!("capabilities[{name}]")));
            }
            if let Some(r) = bool_at(&v["requested"], &format!("capabilities[{name}][requested]"))? {
                out.push((name.clone(), r));
            }
        }
    }
    Ok(out)
}

/// Where an account's capability is kept: capabilities are named, not identified, so each
/// account's are kept under its id.
fn cap_key(acct: &str, name: &str) -> String {
    format!("{acct}/{name}")
}

fn cap_requirements(due: &[String]) -> Value {
    json!({"alternatives": [], "current_deadline": null, "currently_due": due, "disabled_reason": if due.is_empty() { Value::Null } else { json!("requirements.past_due") }, "errors": [], "eventually_due": due, "past_due": due, "pending_verification": []})
}

/// Merge a create's or update's parameters into account `a`.
fn apply_account_params(w: &World, p: &Params, a: &mut Value) -> Result<(), StripeError> {
    if let Some(bt) = p.str("business_type") {
        a["business_type"] = json!(bt);
    }
    p.copy(a, &["email", "default_currency"]);
    if let Some(bp) = p.get("business_profile").and_then(Value::as_object) {
        for (k, v) in bp {
            a["business_profile"][k.as_str()] = if k == "support_address" { merge_address(&a["business_profile"][k.as_str()], v) } else { blank_null(v) };
        }
    }
    for who in ["company", "individual"] {
        if let Some(v) = p.get(who).and_then(Value::as_object) {
            if a[who].is_null() {
                a[who] = if who == "company" { blank_company() } else { individual(a) };
            }
            merge_holder(&mut a[who], v, who)?;
        }
    }
    if let Some(t) = p.get("tos_acceptance").and_then(Value::as_object) {
        for (k, v) in t {
            let v = if k == "date" { json!(int_at(v, "tos_acceptance[date]")?) } else { blank_null(v) };
            a["tos_acceptance"][k.as_str()] = v;
        }
    }
    if let Some(s) = p.get("settings") {
        merge_settings(&mut a["settings"], s, "settings")?;
    }
    p.metadata_into(a)?;
    let _ = w;
    Ok(())
}

fn blank_null(v: &Value) -> Value {
    if v == "" { Value::Null } else { v.clone() }
}

fn merge_address(old: &Value, v: &Value) -> Value {
    let mut out = if old.is_object() { old.clone() } else { address_null() };
    if let Some(m) = v.as_object() {
        for (k, x) in m {
            out[k.as_str()] = blank_null(x);
        }
    }
    out
}

/// Settings hashes, merged key by key (integers where Stripe's are).
fn merge_settings(into: &mut Value, v: &Value, at: &str) -> Result<(), StripeError> {
    let Some(m) = v.as_object() else { return Ok(()) };
    for (k, x) in m {
        let here = format!("{at}[{k}]");
        if x.is_object() {
            if !into[k.as_str()].is_object() {
                into[k.as_str()] = json!({});
            }
            merge_settings(&mut into[k.as_str()], x, &here)?;
        } else if ["delay_days", "monthly_anchor", "date"].contains(&k.as_str()) && x.as_str().is_some_and(|s| s.bytes().all(|b| b.is_ascii_digit()) && !s.is_empty()) {
            into[k.as_str()] = json!(int_at(x, &here)?);
        } else if let Some(b) = x.as_str().filter(|s| *s == "true" || *s == "false") {
            into[k.as_str()] = json!(b == "true");
        } else {
            into[k.as_str()] = blank_null(x);
        }
    }
    Ok(())
}

fn blank_company() -> Value {
    json!({
        "address": address_null(), "directors_provided": false, "executives_provided": false, "name": null, "owners_provided": false,
        "phone": null, "structure": null, "tax_id_provided": false, "vat_id_provided": false,
        "verification": {"document": {"back": null, "details": null, "details_code": null, "front": null}},
    })
}

/// Fields of a company or individual hash: secrets become `*_provided` flags, numbers
/// numbers, nested hashes merge.
fn merge_holder(into: &mut Value, v: &serde_json::Map<String, Value>, who: &str) -> Result<(), StripeError> {
    for (k, x) in v {
        let at = format!("{who}[{k}]");
        match k.as_str() {
            "tax_id" => into["tax_id_provided"] = json!(x != ""),
            "vat_id" => into["vat_id_provided"] = json!(x != ""),
            "id_number" => into["id_number_provided"] = json!(x != ""),
            "id_number_secondary" => into["id_number_secondary_provided"] = json!(x != ""),
            "ssn_last_4" => into["ssn_last_4_provided"] = json!(x != ""),
            "address" | "registered_address" | "address_kana" | "address_kanji" => into[k.as_str()] = merge_address(&into[k.as_str()], x),
            "dob" => {
                let mut d = json!({"day": null, "month": null, "year": null});
                for part in ["day", "month", "year"] {
                    d[part] = json!(int_at(&x[part], &format!("{at}[{part}]"))?);
                }
                into["dob"] = d;
            }
            "directors_provided" | "executives_provided" | "owners_provided" => into[k.as_str()] = json!(bool_at(x, &at)?.unwrap_or(false)),
            "metadata" => into["metadata"] = metadata_at(x, &at)?,
            "relationship" => {
                if let Some(m) = x.as_object() {
                    for (rk, rv) in m {
                        let rat = format!("{at}[{rk}]");
                        into["relationship"][rk.as_str()] = match rk.as_str() {
                            "percent_ownership" => match rv.as_str().filter(|s| !s.is_empty()) {
                                Some(s) => json!(s.parse::<f64>().map_err(|_| invalid(format!("Invalid decimal: {}", crate::core::shown(s))).param(&rat))?),
                                None => Value::Null,
                            },
                            "title" => blank_null(rv),
                            _ => json!(bool_at(rv, &rat)?),
                        };
                    }
                }
            }
            "verification" | "ownership_declaration" => {
                let mut cur = into[k.as_str()].clone();
                if !cur.is_object() {
                    cur = json!({});
                }
                merge_settings(&mut cur, x, &at)?;
                into[k.as_str()] = cur;
            }
            _ => into[k.as_str()] = blank_null(x),
        }
    }
    Ok(())
}

/// An individual account holder: a person of the account (Stripe gives it an id of its own).
fn individual(a: &Value) -> Value {
    let acct = a["id"].as_str().unwrap_or("");
    let mut p = blank_person(acct, a["created"].as_i64().unwrap_or(0));
    p.as_object_mut().expect("a person is a hash").insert("id".into(), json!(format!("person_{}", &acct[acct.find('_').map_or(0, |i| i + 1)..])));
    p
}

/// A person with nothing known yet.
fn blank_person(acct: &str, created: i64) -> Value {
    json!({
        "account": acct, "address": address_null(), "created": created, "dob": {"day": null, "month": null, "year": null},
        "email": null, "first_name": null, "full_name_aliases": [], "future_requirements": person_requirements(&[]), "gender": null,
        "id_number_provided": false, "id_number_secondary_provided": false, "last_name": null, "maiden_name": null, "metadata": {},
        "nationality": null, "object": "person", "phone": null,
        "relationship": {"director": false, "executive": false, "owner": false, "percent_ownership": null, "representative": false, "title": null},
        "requirements": person_requirements(&[]), "ssn_last_4_provided": false,
        "verification": {"additional_document": {"back": null, "details": null, "details_code": null, "front": null}, "details": null, "details_code": null, "document": {"back": null, "details": null, "details_code": null, "front": null}, "status": "unverified"},
    })
}

fn person_requirements(due: &[String]) -> Value {
    json!({"alternatives": [], "currently_due": due, "errors": [], "eventually_due": due, "past_due": due, "pending_verification": []})
}

/// What a person (or an individual account holder) still lacks, as `prefix.field` names.
fn person_due(p: &Value, prefix: &str, us: bool) -> Vec<String> {
    let mut due = Vec::new();
    for f in ["first_name", "last_name", "email", "phone"] {
        if p[f].is_null() {
            due.push(format!("{prefix}.{f}"));
        }
    }
    for f in ["day", "month", "year"] {
        if p["dob"][f].is_null() {
            due.push(format!("{prefix}.dob.{f}"));
        }
    }
    for f in ["city", "line1", "postal_code", "state"] {
        if p["address"][f].is_null() {
            due.push(format!("{prefix}.address.{f}"));
        }
    }
    if us && p["ssn_last_4_provided"] != true && p["id_number_provided"] != true {
        due.push(format!("{prefix}.ssn_last_4"));
    }
    due
}

/// What account `a` still needs before its capabilities can be active.
fn account_due(w: &World, a: &Value) -> Vec<String> {
    if a["requirements"]["disabled_reason"].as_str().is_some_and(|r| r.starts_with("rejected.")) {
        return Vec::new();
    }
    let id = a["id"].as_str().unwrap_or_default();
    let us = a["country"] == "US";
    let mut due = Vec::new();
    match a["business_type"].as_str() {
        None => due.push("business_type".to_string()),
        Some("individual") => due.extend(person_due(&a["individual"], "individual", us)),
        Some(_) => {
            let c = &a["company"];
            for f in ["name", "phone"] {
                if c[f].is_null() {
                    due.push(format!("company.{f}"));
                }
            }
            for f in ["city", "line1", "postal_code", "state"] {
                if c["address"][f].is_null() {
                    due.push(format!("company.address.{f}"));
                }
            }
            if c["tax_id_provided"] != true {
                due.push("company.tax_id".into());
            }
            match w.all("person").find(|p| p["account"] == id && p["relationship"]["representative"] == true) {
                Some(rep) => due.extend(person_due(&rep, &format!("person_{}", rep["id"].as_str().unwrap_or("")), us).into_iter().map(|f| f.replacen("person_person_", "person_", 1))),
                None => due.push("representative.first_name".into()),
            }
            if c["owners_provided"] != true {
                due.push("owners.first_name".into());
            }
        }
    }
    for f in ["mcc", "url"] {
        if a["business_profile"][f].is_null() && !(f == "url" && !a["business_profile"]["product_description"].is_null()) {
            due.push(format!("business_profile.{f}"));
        }
    }
    if !w.all("bank_account").chain(w.all("card")).any(|e| e["account"] == id) {
        due.push("external_account".into());
    }
    if a["tos_acceptance"]["date"].is_null() {
        due.push("tos_acceptance.date".into());
    }
    if a["tos_acceptance"]["ip"].is_null() {
        due.push("tos_acceptance.ip".into());
    }
    due.sort();
    due
}

/// Bring account `id` in line with what it holds: its requirements, its capabilities'
/// statuses, charges and payouts, its embedded external accounts. Emits `account.updated`
/// (and `capability.updated` for each capability that changed) when `announce`.
fn settle(w: &mut World, call: &mut Call, id: &str, announce: bool) -> Value {
    let before = w.get(id).unwrap_or_default();
    settle_since(w, call, id, announce.then_some(before))
}

/// [`settle`], announcing what changed since `since` (the account before the request) when
/// given.
fn settle_since(w: &mut World, call: &mut Call, id: &str, since: Option<Value>) -> Value {
    let mut a = w.get(id).unwrap_or_default();
    let rejected = a["requirements"]["disabled_reason"].as_str().is_some_and(|r| r.starts_with("rejected."));
    // Express and Standard accounts are completed by their holder, on the onboarding page.
    let hosted = a["type"] != "custom" && a["details_submitted"] != true;
    let due = account_due(w, &a);
    let blocked = rejected || hosted || !due.is_empty();
    let reason = if rejected {
        a["requirements"]["disabled_reason"].clone()
    } else if blocked {
        json!("requirements.past_due")
    } else {
        Value::Null
    };
    a["requirements"] = json!({"alternatives": [], "current_deadline": null, "currently_due": due, "disabled_reason": reason, "errors": [], "eventually_due": due, "past_due": due, "pending_verification": []});
    let status = if blocked { "inactive" } else { "active" };
    let mut caps = serde_json::Map::new();
    let keys: Vec<String> = w.ids("capability").filter(|k| k.starts_with(&format!("{id}/"))).cloned().collect();
    let mut changed_caps = Vec::new();
    for key in keys.iter().rev() {
        let Some(cap) = w.get(key) else { continue };
        let name = cap["id"].as_str().unwrap_or_default().to_string();
        let st = if cap["requested"] == true { status } else { "inactive" };
        if cap["requested"] == true {
            caps.insert(name.clone(), json!(st));
        }
        let cap_due: Vec<String> = if cap["requested"] == true && !rejected { due.clone() } else { Vec::new() };
        let after = w.modify(call, key, |c| {
            c["status"] = json!(if c["requested"] == true { st } else { "unrequested" });
            c["requirements"] = cap_requirements(&cap_due);
        });
        if after != cap {
            changed_caps.push(after);
        }
    }
    a["capabilities"] = Value::Object(caps);
    a["charges_enabled"] = json!(a["capabilities"]["card_payments"] == "active");
    a["payouts_enabled"] = json!(!blocked && (a["capabilities"]["transfers"] == "active" || a["capabilities"]["card_payments"] == "active"));
    if a["type"] == "custom" {
        a["details_submitted"] = json!(!blocked);
    }
    let externals: Vec<Value> = w.all("bank_account").chain(w.all("card")).filter(|e| e["account"] == id).collect();
    a["external_accounts"] = embedded_list(&format!("/v1/accounts/{id}/external_accounts"), externals);
    let after = w.modify(call, id, |x| *x = a);
    if let Some(before) = since {
        let prev = previous(&before, &after);
        if prev.as_object().is_some_and(|m| !m.is_empty()) {
            emit(w, call, "account.updated", &after, Some(prev));
        }
        for c in changed_caps {
            emit(w, call, "capability.updated", &c, None);
        }
    }
    after
}

pub(super) fn account_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    if call.param("id") == w.account_id {
        return Ok(platform(w));
    }
    path_account(w, call).map(|x| x.1)
}

pub(super) fn account_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let (id, mut a) = path_account(w, call)?;
    let old = a.clone();
    // A Standard account's holder owns its details: the platform may set little of it.
    if a["type"] == "standard" {
        if let Some(k) = ["business_type", "company", "individual", "tos_acceptance", "email"].into_iter().find(|k| p.has(k)) {
            return Err(invalid(format!("This application does not have the required permissions for this field on account '{id}': {k} can only be updated by the account holder.")).param(k));
        }
    }
    apply_account_params(w, p, &mut a)?;
    w.modify(call, &id, |x| *x = a);
    for (name, requested) in requested_capabilities(p)? {
        set_capability(w, call, &id, &name, requested);
    }
    if let Some(ext) = p.get("external_account") {
        add_external_account(w, call, &id, ext, "external_account")?;
    }
    Ok(settle_since(w, call, &id, Some(old)))
}

/// Request or unrequest capability `name` of account `id`.
fn set_capability(w: &mut World, call: &mut Call, id: &str, name: &str, requested: bool) {
    let key = cap_key(id, name);
    let now = w.now();
    if w.exists(&key) {
        w.modify(call, &key, |c| {
            if c["requested"] != requested {
                c["requested"] = json!(requested);
                c["requested_at"] = if requested { json!(now) } else { Value::Null };
            }
        });
    } else if requested {
        let cap = json!({"id": name, "object": "capability", "account": id, "future_requirements": cap_requirements(&[]), "requested": true, "requested_at": now, "requirements": cap_requirements(&[]), "status": "inactive"});
        w.insert_text(Some(call), "capability", &key, cap.to_string());
    }
}

pub(super) fn account_delete(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let (id, _) = path_account(w, call)?;
    let mut gone: Vec<String> = w.all("person").chain(w.all("bank_account")).chain(w.all("card")).filter(|o| o["account"] == id.as_str()).filter_map(|o| o["id"].as_str().map(str::to_string)).collect();
    gone.extend(w.ids("capability").filter(|k| k.starts_with(&format!("{id}/"))).cloned());
    for g in gone {
        w.remove(call, &g);
    }
    w.remove(call, &id);
    Ok(deleted(&id, "account"))
}

pub(super) fn account_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    list_of(w, call, "account", p, |_| true)
}

pub(super) fn account_reject(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let (id, a) = path_account(w, call)?;
    let reason = p.req_str("reason")?.to_string();
    if !["fraud", "terms_of_service", "other"].contains(&reason.as_str()) {
        return Err(invalid(format!("Invalid reason: must be one of fraud, terms_of_service, or other")).param("reason"));
    }
    if a["type"] == "standard" {
        return Err(invalid("Standard accounts cannot be rejected by the platform; they can only be disconnected.").param("account"));
    }
    if a["requirements"]["disabled_reason"].as_str().is_some_and(|r| r.starts_with("rejected.")) {
        return Err(invalid(format!("The account {id} has already been rejected.")).code("account_invalid"));
    }
    w.modify(call, &id, |a| a["requirements"]["disabled_reason"] = json!(format!("rejected.{reason}")));
    Ok(settle(w, call, &id, true))
}

pub(super) fn login_link_create(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let (id, a) = path_account(w, call)?;
    if a["type"] != "express" {
        return Err(invalid("Cannot create a login link for an account that is not an Express account.").param("account"));
    }
    if a["details_submitted"] != true {
        return Err(invalid("Cannot create a login link for an account that has not completed onboarding.").param("account"));
    }
    let token = crate::core::base62(w.seq.wrapping_mul(0x9E37_79B9_7F4A_7C15), 12);
    w.seq += 1;
    Ok(json!({"object": "login_link", "created": w.now(), "url": format!("https://connect.stripe.com/express/{id}/{token}")}))
}

// ---------------------------------------------------------------------------------------
// Capabilities.

fn capability_view(w: &World, acct: &str, name: &str) -> Result<Value, StripeError> {
    if !CAPABILITIES.contains(&name) {
        return Err(no_such("capability", name, "capability"));
    }
    Ok(w.get(&cap_key(acct, name)).unwrap_or_else(|| {
        json!({"id": name, "object": "capability", "account": acct, "future_requirements": cap_requirements(&[]), "requested": false, "requested_at": null, "requirements": cap_requirements(&[]), "status": "unrequested"})
    }))
}

pub(super) fn capability_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let (id, _) = path_account(w, call)?;
    let mut caps: Vec<Value> = w.ids("capability").filter(|k| k.starts_with(&format!("{id}/"))).filter_map(|k| w.get(k)).collect();
    caps.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
    let mut out = crate::core::list_object(&call.req.path, caps, p)?;
    out["has_more"] = json!(false);
    Ok(out)
}

pub(super) fn capability_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let (id, _) = path_account(w, call)?;
    capability_view(w, &id, call.param("capability"))
}

pub(super) fn capability_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let (id, _) = path_account(w, call)?;
    let name = call.param("capability").to_string();
    capability_view(w, &id, &name)?;
    if let Some(r) = p.bool("requested")? {
        set_capability(w, call, &id, &name, r);
        settle(w, call, &id, true);
    }
    capability_view(w, &id, &name)
}

// ---------------------------------------------------------------------------------------
// External accounts (bank accounts and debit cards that receive payouts).

/// Stripe's test bank account numbers: the routing number and the last four digits each
/// yields.
fn bank_account(w: &mut World, acct: &str, cur: &str, country: &str, number: &str, routing: Option<&str>, holder: (&Value, &Value)) -> Value {
    let id = w.new_id("ba");
    let last4: String = number.chars().rev().take(4).collect::<Vec<_>>().into_iter().rev().collect();
    json!({
        "id": id, "object": "bank_account", "account": acct, "account_holder_name": holder.0, "account_holder_type": holder.1,
        "account_type": null, "available_payout_methods": ["standard"], "bank_name": "STRIPE TEST BANK", "country": country,
        "currency": cur, "default_for_currency": false, "fingerprint": crate::core::base62(number.bytes().fold(11u64, |h, b| h.wrapping_mul(31).wrapping_add(b as u64)), 16),
        "future_requirements": {"currently_due": [], "errors": [], "past_due": [], "pending_verification": []}, "last4": last4, "metadata": {},
        "requirements": {"currently_due": [], "errors": [], "past_due": [], "pending_verification": []}, "routing_number": routing.unwrap_or("110000000"), "status": "new",
    })
}

fn debit_card(w: &mut World, acct: &str, cur: &str, brand: &str, last4: &str) -> Value {
    let id = w.new_id("card");
    json!({
        "id": id, "object": "card", "account": acct, "address_city": null, "address_country": null, "address_line1": null,
        "address_line1_check": null, "address_line2": null, "address_state": null, "address_zip": null, "address_zip_check": null,
        "available_payout_methods": ["standard", "instant"], "brand": brand, "country": "US", "currency": cur, "cvc_check": null,
        "default_for_currency": false, "dynamic_last4": null, "exp_month": 12, "exp_year": 2034, "fingerprint": crate::core::base62(last4.bytes().fold(13u64, |h, b| h.wrapping_mul(31).wrapping_add(b as u64)), 16),
        "funding": "debit", "last4": last4, "metadata": {}, "name": null, "status": null, "tokenization_method": null,
    })
}

/// Add an external account given as a token (`btok_…`, `tok_visa_debit`, a stored token) or
/// a hash (`object=bank_account`, `country`, `currency`, `account_number`, …).
fn add_external_account(w: &mut World, call: &mut Call, acct: &str, ext: &Value, param: &str) -> Result<Value, StripeError> {
    let a = w.get(acct).unwrap_or_default();
    let cur_default = a["default_currency"].as_str().unwrap_or("usd").to_string();
    let country_default = a["country"].as_str().unwrap_or("US").to_string();
    let null = Value::Null;
    let mut o = match ext {
        Value::String(tok) => {
            if let Some(t) = w.get_kind("token", tok) {
                if t["used"] == true {
                    return Err(invalid(format!("You cannot use a Stripe token more than once: {tok}.")).code("token_already_used").param(param));
                }
                w.modify(call, tok, |t| t["used"] = json!(true));
                match t["type"].as_str() {
                    Some("bank_account") => {
                        let b = &t["bank_account"];
                        let mut o = bank_account(w, acct, b["currency"].as_str().unwrap_or(&cur_default), b["country"].as_str().unwrap_or(&country_default), b["last4"].as_str().unwrap_or("6789"), b["routing_number"].as_str(), (&b["account_holder_name"], &b["account_holder_type"]));
                        o["fingerprint"] = b["fingerprint"].clone();
                        o
                    }
                    _ => {
                        let c = &t["card"];
                        if c["funding"] != "debit" {
                            return Err(invalid("Only debit cards can receive payouts: this card's funding is not debit.").code("invalid_card_type").param(param));
                        }
                        debit_card(w, acct, &cur_default, c["brand"].as_str().unwrap_or("Visa"), c["last4"].as_str().unwrap_or("0000"))
                    }
                }
            } else if tok.starts_with("btok_") {
                bank_account(w, acct, &cur_default, &country_default, "000123456789", None, (&null, &null))
            } else if let Some(brand) = tok.strip_prefix("tok_").and_then(|t| t.strip_suffix("_debit")) {
                let (brand, last4) = match brand {
                    "visa" => ("Visa", "5556"),
                    "mastercard" => ("MasterCard", "8210"),
                    _ => return Err(no_such_ref("token", tok, param)),
                };
                debit_card(w, acct, &cur_default, brand, last4)
            } else {
                return Err(no_such_ref("token", tok, param));
            }
        }
        Value::Object(m) => {
            let at = |k: &str| format!("{param}[{k}]");
            match m.get("object").and_then(Value::as_str) {
                Some("bank_account") => {
                    let number = m.get("account_number").and_then(Value::as_str).ok_or_else(|| missing(&at("account_number")))?;
                    if number.len() < 4 || !number.bytes().all(|b| b.is_ascii_digit()) {
                        return Err(invalid("Invalid account number: it must contain only digits.").code("account_number_invalid").param(&at("account_number")));
                    }
                    let country = m.get("country").and_then(Value::as_str).ok_or_else(|| missing(&at("country")))?.to_ascii_uppercase();
                    let cur = m.get("currency").and_then(Value::as_str).unwrap_or(&cur_default).to_ascii_lowercase();
                    let routing = m.get("routing_number").and_then(Value::as_str);
                    if country == "US" && routing.is_none_or(|r| r.len() != 9) {
                        return Err(invalid("Routing number must have 9 digits").code("routing_number_invalid").param(&at("routing_number")));
                    }
                    let holder = (m.get("account_holder_name").cloned().unwrap_or(Value::Null), m.get("account_holder_type").cloned().unwrap_or(Value::Null));
                    bank_account(w, acct, &cur, &country, number, routing, (&holder.0, &holder.1))
                }
                Some("card") => {
                    let number = m.get("number").and_then(Value::as_str).ok_or_else(|| missing(&at("number")))?;
                    if !luhn(number) {
                        return Err(StripeError::new(402, "card_error", "Your card number is incorrect.").code("incorrect_number").param(&at("number")));
                    }
                    let brand = if number.starts_with('5') { "MasterCard" } else { "Visa" };
                    let last4 = &number[number.len().saturating_sub(4)..];
                    debit_card(w, acct, &cur_default, brand, last4)
                }
                _ => return Err(missing(&at("object"))),
            }
        }
        _ => return Err(invalid("Invalid external_account: give a token or a hash.").param(param)),
    };
    let cur = o["currency"].as_str().unwrap_or("usd").to_string();
    let first_in_currency = !w.all("bank_account").chain(w.all("card")).any(|e| e["account"] == acct && e["currency"] == cur.as_str());
    o["default_for_currency"] = json!(first_in_currency);
    let o = w.insert(Some(call), o);
    emit(w, call, "account.external_account.created", &o, None);
    Ok(o)
}

/// The external account the path names (`ext`), of the account it names; only bank
/// accounts when the path is `bank_accounts`.
fn path_external(w: &World, call: &Call) -> Result<(String, Value), StripeError> {
    let (acct, _) = path_account(w, call)?;
    let eid = call.param("ext");
    let banks_only = call.req.path.contains("/bank_accounts/");
    let o = w
        .get(eid)
        .filter(|o| o["account"] == acct.as_str() && (o["object"] == "bank_account" || (!banks_only && o["object"] == "card")))
        .ok_or_else(|| no_such("external account", eid, "id"))?;
    Ok((eid.to_string(), o))
}

pub(super) fn external_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let (acct, _) = path_account(w, call)?;
    // `bank_account` is the older name of the same parameter.
    let param = if p.has("external_account") || !p.has("bank_account") { "external_account" } else { "bank_account" };
    let ext = p.get(param).ok_or_else(|| missing("external_account"))?.clone();
    let mut o = add_external_account(w, call, &acct, &ext, param)?;
    let id = o["id"].as_str().unwrap_or_default().to_string();
    if p.bool("default_for_currency")? == Some(true) {
        o = make_default(w, call, &acct, &id);
    }
    if p.has("metadata") {
        let mut x = o.clone();
        p.metadata_into(&mut x)?;
        o = w.modify(call, &id, |y| *y = x);
    }
    settle(w, call, &acct, true);
    Ok(o)
}

/// Make external account `id` its currency's default, and no other.
fn make_default(w: &mut World, call: &mut Call, acct: &str, id: &str) -> Value {
    let cur = w.get(id).map(|o| o["currency"].clone()).unwrap_or_default();
    let others: Vec<String> = w.all("bank_account").chain(w.all("card")).filter(|e| e["account"] == acct && e["currency"] == cur && e["id"] != id && e["default_for_currency"] == true).filter_map(|e| e["id"].as_str().map(str::to_string)).collect();
    for o in others {
        w.modify(call, &o, |e| e["default_for_currency"] = json!(false));
    }
    w.modify(call, id, |e| e["default_for_currency"] = json!(true))
}

pub(super) fn external_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    path_external(w, call).map(|x| x.1)
}

pub(super) fn external_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let (id, mut o) = path_external(w, call)?;
    let acct = o["account"].as_str().unwrap_or_default().to_string();
    let fields: &[&str] = if o["object"] == "bank_account" {
        &["account_holder_name", "account_holder_type", "account_type"]
    } else {
        &["address_city", "address_country", "address_line1", "address_line2", "address_state", "address_zip", "name"]
    };
    p.copy(&mut o, fields);
    for k in ["exp_month", "exp_year"] {
        if let Some(v) = p.int(k)? {
            o[k] = json!(v);
        }
    }
    p.metadata_into(&mut o)?;
    let mut o = w.modify(call, &id, |x| *x = o);
    if p.bool("default_for_currency")? == Some(true) {
        o = make_default(w, call, &acct, &id);
    }
    emit(w, call, "account.external_account.updated", &o, None);
    settle(w, call, &acct, true);
    Ok(o)
}

pub(super) fn external_delete(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let (id, o) = path_external(w, call)?;
    let acct = o["account"].as_str().unwrap_or_default().to_string();
    let same_currency = w.all("bank_account").chain(w.all("card")).filter(|e| e["account"] == acct.as_str() && e["currency"] == o["currency"]).count();
    if o["default_for_currency"] == true && same_currency > 1 {
        return Err(invalid("You cannot delete the default external account for your default currency. Please make another external account the default using the `default_for_currency` param, and then delete this one.").param("id"));
    }
    w.remove(call, &id);
    emit(w, call, "account.external_account.deleted", &o, None);
    settle(w, call, &acct, true);
    Ok(json!({"id": id, "object": o["object"], "currency": o["currency"], "deleted": true}))
}

pub(super) fn external_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let (acct, _) = path_account(w, call)?;
    let banks_only = call.req.path.ends_with("/bank_accounts");
    let object = p.str("object").map(str::to_string);
    if let Some(o) = &object {
        if o != "bank_account" && o != "card" {
            return Err(invalid("Invalid object: must be one of bank_account or card").param("object"));
        }
    }
    let mut items: Vec<Value> = w.all("bank_account").collect();
    if !banks_only {
        items.extend(w.all("card"));
        items.sort_by_key(|o| std::cmp::Reverse(o["id"].as_str().map(|s| s[s.len().saturating_sub(12)..].to_string())));
    }
    let items: Vec<Value> = items.into_iter().filter(|e| e["account"] == acct.as_str() && object.as_ref().is_none_or(|o| e["object"] == o.as_str())).collect();
    crate::core::list_object(&call.req.path, items, p)
}

// ---------------------------------------------------------------------------------------
// Persons.

fn path_person(w: &World, call: &Call) -> Result<(String, Value), StripeError> {
    let (acct, _) = path_account(w, call)?;
    let pid = call.param("person");
    let o = w.get_kind("person", pid).filter(|o| o["account"] == acct.as_str()).ok_or_else(|| no_such("person", pid, "person"))?;
    Ok((pid.to_string(), o))
}

/// A person's requirements and verification as what they hold makes them.
fn settle_person(p: &mut Value, us: bool) {
    let due = person_due(p, "", us).into_iter().map(|f| f.trim_start_matches('.').to_string()).collect::<Vec<_>>();
    p["requirements"] = person_requirements(&due);
    p["verification"]["status"] = json!(if due.is_empty() { "verified" } else { "unverified" });
}

pub(super) fn person_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let (acct, a) = path_account(w, call)?;
    if a["business_type"] == "individual" {
        return Err(invalid("Persons can only be added to accounts whose business_type is company, government_entity or non_profit; an individual's details go in `individual`.").param("account"));
    }
    let id = w.new_id("person");
    let mut o = blank_person(&acct, w.now());
    o.as_object_mut().expect("a person is a hash").insert("id".into(), json!(id));
    merge_holder(&mut o, &p.0, "person").map_err(|e| {
        let fixed = e.param.clone().map(|x| x.trim_start_matches("person[").replacen(']', "", 1));
        StripeError { param: fixed, ..e }
    })?;
    settle_person(&mut o, a["country"] == "US");
    let o = w.insert(Some(call), o);
    emit(w, call, "person.created", &o, None);
    settle(w, call, &acct, true);
    Ok(o)
}

pub(super) fn person_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    path_person(w, call).map(|x| x.1)
}

pub(super) fn person_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let (id, mut o) = path_person(w, call)?;
    let acct = o["account"].as_str().unwrap_or_default().to_string();
    merge_holder(&mut o, &p.0, "person").map_err(|e| {
        let fixed = e.param.clone().map(|x| x.trim_start_matches("person[").replacen(']', "", 1));
        StripeError { param: fixed, ..e }
    })?;
    let us = w.get(&acct).is_some_and(|a| a["country"] == "US");
    settle_person(&mut o, us);
    let o = replace_emit(w, call, &id, "person.updated", o);
    settle(w, call, &acct, true);
    Ok(o)
}

pub(super) fn person_delete(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let (id, o) = path_person(w, call)?;
    let acct = o["account"].as_str().unwrap_or_default().to_string();
    w.remove(call, &id);
    emit(w, call, "person.deleted", &o, None);
    settle(w, call, &acct, true);
    Ok(deleted(&id, "person"))
}

pub(super) fn person_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let (acct, _) = path_account(w, call)?;
    let mut wanted = Vec::new();
    if let Some(m) = p.get("relationship").and_then(Value::as_object) {
        for (k, v) in m {
            if let Some(b) = bool_at(v, &format!("relationship[{k}]"))? {
                wanted.push((k.clone(), b));
            }
        }
    }
    list_of(w, call, "person", p, |o| o["account"] == acct.as_str() && wanted.iter().all(|(k, b)| o["relationship"][k.as_str()] == *b))
}

// ---------------------------------------------------------------------------------------
// Account links and the onboarding page.

pub(super) fn account_link_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let acct = p.req_str("account")?.to_string();
    let a = w.get_kind("account", &acct).ok_or_else(|| no_such_ref("account", &acct, "account"))?;
    let ty = p.req_str("type")?.to_string();
    if !["account_onboarding", "account_update"].contains(&ty.as_str()) {
        return Err(invalid("Invalid type: must be one of account_onboarding or account_update").param("type"));
    }
    if ty == "account_update" && a["type"] != "custom" {
        return Err(invalid("You cannot create `account_update` type Account Links for accounts that are not custom accounts.").param("type"));
    }
    let refresh = p.str("refresh_url").map(str::to_string);
    let ret = p.str("return_url").map(str::to_string);
    for (k, v) in [("refresh_url", &refresh), ("return_url", &ret)] {
        if let Some(u) = v {
            if !(u.starts_with("https://") || u.starts_with("http://")) {
                return Err(invalid(format!("Not a valid URL: {}", crate::core::shown(u))).code("url_invalid").param(k));
            }
        }
    }
    let token = w.new_id("acctlink");
    let now = w.now();
    let url = call.req.url(&format!("{ONBOARDING}{token}"));
    let link = json!({"id": token, "object": "account_link", "account": acct, "created": now, "expires_at": now + LINK_SECS, "refresh_url": refresh, "return_url": ret, "type": ty, "url": url, "used": false});
    w.insert(Some(call), link);
    Ok(json!({"object": "account_link", "created": now, "expires_at": now + LINK_SECS, "url": url}))
}

/// `GET {ONBOARDING}{token}`: the account holder finishes onboarding with Stripe's test data
/// and is sent to `return_url`; a used or expired link sends them to `refresh_url`.
pub fn onboarding_page(w: &mut World, call: &mut Call) -> pome_twin_sdk::Response {
    let token = call.req.path.rsplit('/').next().unwrap_or_default().to_string();
    let Some(link) = w.get_kind("account_link", &token) else {
        return pome_twin_sdk::Response::json(404, &json!({"error": {"message": "This account link does not exist.", "type": "invalid_request_error"}}));
    };
    let redirect = |to: &Value| {
        let mut r = pome_twin_sdk::Response::empty(302);
        if let Some(u) = to.as_str() {
            r = r.with_header("location", u);
        }
        r
    };
    if link["used"] == true || link["expires_at"].as_i64().is_some_and(|t| t <= w.now()) {
        return redirect(&link["refresh_url"]);
    }
    w.modify(call, &token, |l| l["used"] = json!(true));
    let acct = link["account"].as_str().unwrap_or_default().to_string();
    if w.is_kind("account", &acct) && link["type"] == "account_onboarding" {
        complete_onboarding(w, call, &acct);
    }
    redirect(&link["return_url"])
}

/// What the holder enters on the onboarding page: Stripe's test data for every field still
/// due, a test bank account, the terms accepted.
fn complete_onboarding(w: &mut World, call: &mut Call, acct: &str) {
    let Some(mut a) = w.get(acct) else { return };
    let now = w.now();
    if a["business_type"].is_null() {
        a["business_type"] = json!("individual");
    }
    let test_person = |p: &mut Value| {
        for (k, v) in [("first_name", "Jenny"), ("last_name", "Rosen"), ("email", "jenny.rosen@example.com"), ("phone", "0000000000")] {
            if p[k].is_null() {
                p[k] = json!(v);
            }
        }
        p["dob"] = json!({"day": 1, "month": 1, "year": 1901});
        p["address"] = json!({"city": "San Francisco", "country": "US", "line1": "address_full_match", "line2": null, "postal_code": "94111", "state": "CA"});
        p["ssn_last_4_provided"] = json!(true);
        p["id_number_provided"] = json!(true);
    };
    if a["business_type"] == "individual" {
        if a["individual"].is_null() {
            a["individual"] = individual(&a);
        }
        test_person(&mut a["individual"]);
        settle_person(&mut a["individual"], true);
    } else {
        if a["company"].is_null() {
            a["company"] = blank_company();
        }
        let c = &mut a["company"];
        if c["name"].is_null() {
            c["name"] = json!("Test Company");
        }
        c["phone"] = json!("0000000000");
        c["address"] = json!({"city": "San Francisco", "country": "US", "line1": "address_full_match", "line2": null, "postal_code": "94111", "state": "CA"});
        c["tax_id_provided"] = json!(true);
        c["owners_provided"] = json!(true);
    }
    for (k, v) in [("mcc", "5734"), ("url", "https://accessible.stripe.com")] {
        if a["business_profile"][k].is_null() {
            a["business_profile"][k] = json!(v);
        }
    }
    a["tos_acceptance"] = json!({"date": now, "ip": "127.0.0.1", "user_agent": null});
    a["details_submitted"] = json!(true);
    w.modify(call, acct, |x| *x = a.clone());
    if a["business_type"] != "individual" && !w.all("person").any(|p| p["account"] == acct && p["relationship"]["representative"] == true) {
        let id = w.new_id("person");
        let mut p = blank_person(acct, now);
        p.as_object_mut().expect("a person is a hash").insert("id".into(), json!(id));
        test_person(&mut p);
        p["relationship"]["representative"] = json!(true);
        p["relationship"]["executive"] = json!(true);
        settle_person(&mut p, true);
        let p = w.insert(Some(call), p);
        emit(w, call, "person.created", &p, None);
    }
    if !w.all("bank_account").chain(w.all("card")).any(|e| e["account"] == acct) {
        let _ = add_external_account(w, call, acct, &json!("btok_us_verified"), "external_account");
    }
    settle(w, call, acct, true);
}
