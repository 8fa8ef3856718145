//! Credit notes: adjustments to a finalized invoice. On an open invoice a credit note lowers
//! what is due (`pre_payment`; crediting all of it settles the invoice); on a paid one
//! (`post_payment`) it is given back as any mix of a refund of the invoice's charge, a credit
//! to the customer's balance and an amount credited outside Stripe, which must add up to it.
//! Voiding one undoes what it did, but a refund, which cannot be taken back.

use super::*;

/// How a credit note's lines are embedded: the first page, as Stripe answers them.
const EMBEDDED_LINES: usize = 10;

/// A credit note as answered: its lines' first page (the note keeps them all).
pub(super) fn note_view(mut n: Value) -> Value {
    if let Some(data) = n["lines"]["data"].as_array_mut() {
        if data.len() > EMBEDDED_LINES {
            data.truncate(EMBEDDED_LINES);
            n["lines"]["has_more"] = json!(true);
        }
    }
    n
}

/// What a credit note would be for `p` (its `invoice`), not yet kept: the note (its id
/// `id`) and what it does beside itself.
struct Draft {
    note: Value,
    invoice: Value,
    pre_payment: bool,
    total: i64,
    credit: i64,
    refund: i64,
    refund_id: Option<String>,
}

fn draft(w: &World, p: &Params, id: &str) -> Result<Draft, StripeError> {
    let inv_id = p.req_str("invoice")?.to_string();
    let inv = w.get_kind("invoice", &inv_id).ok_or_else(|| no_such_ref("invoice", &inv_id, "invoice"))?;
    let status = inv["status"].as_str().unwrap_or("");
    if !["open", "paid", "uncollectible"].contains(&status) {
        return Err(invalid(format!("Credit notes can only be issued for finalized invoices that are open, paid or uncollectible; invoice {inv_id} is {status}.")).code("invoice_not_editable").param("invoice"));
    }
    let cur = inv["currency"].as_str().unwrap_or("usd").to_string();
    let inv_lines = inv["lines"]["data"].as_array().cloned().unwrap_or_default();
    // What earlier notes (not void) already credited of each invoice line.
    let mut credited: std::collections::BTreeMap<String, i64> = std::collections::BTreeMap::new();
    for n in w.all("credit_note").filter(|n| n["invoice"] == inv_id.as_str() && n["status"] == "issued") {
        for l in n["lines"]["data"].as_array().into_iter().flatten() {
            if let Some(il) = l["invoice_line_item"].as_str() {
                *credited.entry(il.to_string()).or_default() += l["amount"].as_i64().unwrap_or(0);
            }
        }
    }
    let mut lines = Vec::new();
    let mut n = 0;
    let mut line_id = || {
        n += 1;
        format!("cnli_{}{n:02}", &id[id.find('_').map_or(0, |i| i + 1)..])
    };
    match p.get("lines") {
        Some(Value::Array(given)) => {
            for (i, l) in given.iter().enumerate() {
                let at = |k: &str| format!("lines[{i}][{k}]");
                let ty = l["type"].as_str().ok_or_else(|| missing(&at("type")))?;
                let qty = int_at(&l["quantity"], &at("quantity"))?;
                let rates = match l.get("tax_rates") {
                    Some(Value::Array(ids)) => super::tax::tax_rates_of(w, &ids.iter().filter_map(|v| v.as_str().map(str::to_string)).collect::<Vec<_>>(), &at("tax_rates"))?,
                    _ => Vec::new(),
                };
                match ty {
                    "invoice_line_item" => {
                        let il = l["invoice_line_item"].as_str().ok_or_else(|| missing(&at("invoice_line_item")))?;
                        let line = inv_lines.iter().find(|x| x["id"] == il).ok_or_else(|| no_such_ref("invoice line item", il, &at("invoice_line_item")))?;
                        let line_amount = line["amount"].as_i64().unwrap_or(0);
                        let line_qty = line["quantity"].as_i64().unwrap_or(1).max(1);
                        let amount = match (int_at(&l["amount"], &at("amount"))?, qty) {
                            (Some(a), _) => a,
                            (None, Some(q)) => {
                                if q > line_qty {
                                    return Err(invalid(format!("The quantity ({q}) exceeds the invoice line item's quantity ({line_qty}).")).param(&at("quantity")));
                                }
                                line_amount * q / line_qty
                            }
                            (None, None) => line_amount,
                        };
                        let left = line_amount - credited.get(il).copied().unwrap_or(0);
                        if amount < 0 || amount > left {
                            return Err(invalid(format!("The credit note amount for line {il} ({}) exceeds what is left to credit on it ({}).", display(amount, &cur), display(left.max(0), &cur))).code("amount_too_large").param(&at("amount")));
                        }
                        *credited.entry(il.to_string()).or_default() += amount;
                        let unit = if qty.is_some() { Some(line_amount / line_qty) } else { None };
                        lines.push(note_line(&line_id(), "invoice_line_item", Some(il), amount, line["description"].clone(), qty.or(Some(line_qty)), unit.or(Some(amount)), &rates));
                    }
                    "custom_line_item" => {
                        let q = qty.unwrap_or(1);
                        let unit = int_at(&l["unit_amount"], &at("unit_amount"))?;
                        let unit = match (unit, l["unit_amount_decimal"].as_str()) {
                            (Some(u), _) => u,
                            (None, Some(d)) => d.parse::<f64>().map_err(|_| invalid(format!("Invalid decimal: {}", crate::core::shown(d))).param(&at("unit_amount_decimal")))?.round() as i64,
                            (None, None) => return Err(missing(&at("unit_amount"))),
                        };
                        let description = l["description"].as_str().ok_or_else(|| missing(&at("description")))?;
                        lines.push(note_line(&line_id(), "custom_line_item", None, unit * q, json!(description), Some(q), Some(unit), &rates));
                    }
                    other => return Err(invalid(format!("Invalid {}: must be one of custom_line_item or invoice_line_item (got {}).", at("type"), crate::core::shown(other))).param(&at("type"))),
                }
            }
        }
        Some(_) => return Err(invalid("Invalid array").param("lines")),
        None => {}
    }
    let credit = p.int("credit_amount")?.unwrap_or(0);
    let refund_amount = p.int("refund_amount")?;
    let oob = p.int("out_of_band_amount")?.unwrap_or(0);
    let refund_id = p.str("refund").map(str::to_string);
    for (k, v) in [("credit_amount", credit), ("refund_amount", refund_amount.unwrap_or(0)), ("out_of_band_amount", oob)] {
        if v < 0 {
            return Err(invalid("This value must be greater than or equal to 0.").param(k));
        }
    }
    let linked_refund = match &refund_id {
        Some(r) => {
            let re = w.get_kind("refund", r).ok_or_else(|| no_such_ref("refund", r, "refund"))?;
            if inv["charge"].is_null() || re["charge"] != inv["charge"] {
                return Err(invalid(format!("The refund {r} is not a refund of this invoice's charge.")).param("refund"));
            }
            re["amount"].as_i64().unwrap_or(0)
        }
        None => 0,
    };
    let refund = refund_amount.unwrap_or(0) + linked_refund;
    let lines_total: i64 = lines.iter().map(|l| l["amount"].as_i64().unwrap_or(0)).sum();
    let total = match (p.int("amount")?, lines.is_empty()) {
        (Some(a), true) => a,
        (Some(a), false) if a != lines_total => {
            return Err(invalid(format!("The amount ({}) must equal the sum of the lines ({}).", display(a, &cur), display(lines_total, &cur))).param("amount"));
        }
        (_, false) => lines_total,
        (None, true) if credit + refund + oob > 0 => credit + refund + oob,
        (None, true) => return Err(invalid("You must pass either `amount`, `lines`, or one of `credit_amount`, `refund_amount`, `out_of_band_amount`.").code("parameter_missing").param("amount")),
    };
    if total < 1 {
        return Err(invalid("The credit note total must be greater than zero.").param("amount"));
    }
    if lines.is_empty() {
        lines.push(note_line(&line_id(), "custom_line_item", None, total, json!("Credit"), Some(1), Some(total), &[]));
    }
    let pre_payment = status != "paid";
    if pre_payment {
        let remaining = inv["amount_remaining"].as_i64().unwrap_or(0);
        if total > remaining {
            return Err(invalid(format!("The credit note total ({}) exceeds the invoice's amount remaining ({}).", display(total, &cur), display(remaining, &cur))).code("amount_too_large").param("amount"));
        }
        if let Some(k) = [("credit_amount", credit), ("refund_amount", refund), ("out_of_band_amount", oob)].iter().find(|(_, v)| *v > 0).map(|(k, _)| *k) {
            return Err(invalid(format!("`{k}` applies only to credit notes on paid invoices: on an open invoice a credit note lowers what is due.")).param(k));
        }
    } else {
        let paid = inv["amount_paid"].as_i64().unwrap_or(0);
        let done = inv["post_payment_credit_notes_amount"].as_i64().unwrap_or(0);
        if total > paid - done {
            return Err(invalid(format!("The credit note total ({}) exceeds the amount paid on the invoice not yet credited ({}).", display(total, &cur), display((paid - done).max(0), &cur))).code("amount_too_large").param("amount"));
        }
        if credit + refund + oob != total {
            return Err(invalid(format!(
                "The sum of credit amount, refund amount and out of band amount ({}) must equal the credit note amount ({}).",
                display(credit + refund + oob, &cur),
                display(total, &cur)
            ))
            .param("amount"));
        }
        if refund_amount.unwrap_or(0) > 0 && inv["charge"].is_null() {
            return Err(invalid("This invoice was not paid with a charge: nothing can be refunded. Credit the customer's balance or credit it outside Stripe instead.").param("refund_amount"));
        }
    }
    let tax: Vec<(i64, bool, Value)> = lines.iter().flat_map(|l| l["tax_amounts"].as_array().cloned().unwrap_or_default()).map(|t| (t["amount"].as_i64().unwrap_or(0), t["inclusive"] == true, t["tax_rate"].clone())).collect();
    let exclusive: i64 = tax.iter().filter(|t| !t.1).map(|t| t.0).sum();
    let number = format!("{}-CN-{:02}", inv["number"].as_str().unwrap_or("DRAFT"), w.all("credit_note").filter(|n| n["invoice"] == inv_id.as_str()).count() + 1);
    let mut note = json!({
        "id": id, "object": "credit_note", "amount": total + exclusive, "amount_shipping": 0, "created": w.now(), "currency": cur,
        "customer": inv["customer"], "customer_balance_transaction": null, "discount_amount": 0, "discount_amounts": [], "effective_at": w.now(),
        "invoice": inv_id, "lines": {"object": "list", "data": lines, "has_more": false, "total_count": lines.len(), "url": format!("/v1/credit_notes/{id}/lines")},
        "livemode": false, "memo": p.str("memo"), "metadata": {}, "number": number, "out_of_band_amount": if oob > 0 { json!(oob) } else { Value::Null },
        "pdf": format!("https://pay.stripe.com/credit_notes/{}/test_{id}/pdf", w.account_id), "reason": p.str("reason"), "refund": refund_id,
        "shipping_cost": null, "status": "issued", "subtotal": total, "subtotal_excluding_tax": total,
        "tax_amounts": tax.iter().map(|t| json!({"amount": t.0, "inclusive": t.1, "tax_rate": t.2})).collect::<Vec<_>>(),
        "total": total + exclusive, "total_excluding_tax": total, "type": if pre_payment { "pre_payment" } else { "post_payment" }, "voided_at": null,
    });
    p.metadata_into(&mut note)?;
    Ok(Draft { note, invoice: inv, pre_payment, total, credit, refund: refund_amount.unwrap_or(0), refund_id: None })
}

#[allow(clippy::too_many_arguments)]
fn note_line(id: &str, ty: &str, invoice_line: Option<&str>, amount: i64, description: Value, qty: Option<i64>, unit: Option<i64>, rates: &[Value]) -> Value {
    let taxes = super::tax::tax_amounts(amount, rates);
    let inclusive: i64 = taxes.iter().filter(|t| t.1).map(|t| t.0).sum();
    let mut l = json!({
        "id": id, "object": "credit_note_line_item", "amount": amount, "amount_excluding_tax": amount - inclusive, "description": description,
        "discount_amount": 0, "discount_amounts": [], "livemode": false, "quantity": qty,
        "tax_amounts": taxes.iter().map(|t| json!({"amount": t.0, "inclusive": t.1, "tax_rate": t.2})).collect::<Vec<_>>(),
        "tax_rates": rates, "type": ty, "unit_amount": unit, "unit_amount_decimal": unit.map(|u| u.to_string()), "unit_amount_excluding_tax": unit.map(|u| u.to_string()),
    });
    if let Some(il) = invoice_line {
        l["invoice_line_item"] = json!(il);
    }
    l
}

pub(super) fn credit_note_create(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = w.new_id("cn");
    let mut d = draft(w, p, &id)?;
    let inv_id = d.invoice["id"].as_str().unwrap_or_default().to_string();
    let cus = d.invoice["customer"].as_str().unwrap_or_default().to_string();
    let cur = d.note["currency"].as_str().unwrap_or("usd").to_string();
    // A refund of the invoice's charge for `refund_amount`.
    if d.refund > 0 {
        let mut form = serde_json::Map::new();
        form.insert("charge".into(), d.invoice["charge"].clone());
        form.insert("amount".into(), json!(d.refund.to_string()));
        let re = refund_create(w, call, &Params(form)).map_err(|e| StripeError { param: Some("refund_amount".into()), ..e })?;
        d.refund_id = re["id"].as_str().map(str::to_string);
        d.note["refund"] = json!(d.refund_id);
    }
    if d.credit > 0 {
        let mut t = balance_transaction_object(w, &cus, -d.credit, &cur, "credit_note", Some(&inv_id));
        t["credit_note"] = json!(id);
        let t = move_balance(w, call, t);
        d.note["customer_balance_transaction"] = t["id"].clone();
    }
    let note = w.insert(Some(call), d.note);
    apply_to_invoice(w, call, &inv_id, d.pre_payment, d.total);
    emit(w, call, "credit_note.created", &note_view(note.clone()), None);
    Ok(note_view(note))
}

/// Invoice `inv` takes (or, voided, gives back: `amount` negative) a credit note of `amount`.
fn apply_to_invoice(w: &mut World, call: &mut Call, inv: &str, pre_payment: bool, amount: i64) {
    let Some(before) = w.get(inv) else { return };
    let field = if pre_payment { "pre_payment_credit_notes_amount" } else { "post_payment_credit_notes_amount" };
    let was = before[field].as_i64().unwrap_or(0);
    let remaining = before["amount_remaining"].as_i64().unwrap_or(0);
    let settles = pre_payment && amount > 0 && remaining == amount && before["status"] == "open";
    let now = crate::billing::now_for(w, before["customer"].as_str().unwrap_or_default());
    let after = w.modify(call, inv, |i| {
        i[field] = json!(was + amount);
        if pre_payment && (i["status"] == "open" || i["status"] == "uncollectible") {
            i["amount_due"] = json!(i["amount_due"].as_i64().unwrap_or(0) - amount);
            i["amount_remaining"] = json!(remaining - amount);
        }
        if settles {
            i["status"] = json!("paid");
            i["paid"] = json!(true);
            i["status_transitions"]["paid_at"] = json!(now);
        }
    });
    // The invoice's PaymentIntent asks for what is left, and nothing once it is settled.
    if let Some(pi) = after["payment_intent"].as_str().map(str::to_string) {
        if w.get(&pi).is_some_and(|o| ["requires_payment_method", "requires_confirmation", "requires_action"].contains(&o["status"].as_str().unwrap_or(""))) {
            let left = after["amount_remaining"].as_i64().unwrap_or(0);
            let pi_after = w.modify(call, &pi, |o| {
                if left > 0 {
                    o["amount"] = json!(left);
                } else {
                    o["status"] = json!("canceled");
                    o["canceled_at"] = json!(now);
                    o["cancellation_reason"] = json!("automatic");
                    o["next_action"] = Value::Null;
                }
            });
            if left <= 0 {
                emit(w, call, "payment_intent.canceled", &pi_after, None);
            }
        }
    }
    let (mut prev, _) = crate::changed_fields(&before, &after);
    prev.remove("id");
    emit(w, call, "invoice.updated", &after, Some(Value::Object(prev)));
    if settles {
        emit(w, call, "invoice.paid", &after, None);
    }
}

pub(super) fn credit_note_preview(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let inv = p.req_str("invoice")?;
    let id = format!("cn_preview_{}", &inv[inv.find('_').map_or(0, |i| i + 1)..]);
    let d = draft(w, p, &id)?;
    let _ = call;
    Ok(note_view(d.note))
}

pub(super) fn credit_note_preview_lines(w: &mut World, call: &mut Call, p: &Params) -> Res {
    // The preview's parameters, less the paging ones that are the list's own.
    let mut q = p.0.clone();
    for k in ["limit", "starting_after", "ending_before"] {
        q.remove(k);
    }
    let inv = p.req_str("invoice")?;
    let id = format!("cn_preview_{}", &inv[inv.find('_').map_or(0, |i| i + 1)..]);
    let d = draft(w, &Params(q), &id)?;
    crate::core::list_object(&call.req.path, d.note["lines"]["data"].as_array().cloned().unwrap_or_default(), p)
}

pub(super) fn credit_note_retrieve(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    get_or_404(w, "credit_note", call.param("id"), "credit_note").map(note_view)
}

pub(super) fn credit_note_lines(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let n = get_or_404(w, "credit_note", call.param("id"), "credit_note")?;
    crate::core::list_object(&call.req.path, n["lines"]["data"].as_array().cloned().unwrap_or_default(), p)
}

pub(super) fn credit_note_update(w: &mut World, call: &mut Call, p: &Params) -> Res {
    let id = call.param("id").to_string();
    let mut n = get_or_404(w, "credit_note", &id, "credit_note")?;
    p.copy(&mut n, &["memo"]);
    p.metadata_into(&mut n)?;
    let before = w.get(&id).unwrap_or_default();
    let after = w.modify(call, &id, |x| *x = n);
    emit(w, call, "credit_note.updated", &note_view(after.clone()), Some(previous(&before, &after)));
    Ok(note_view(after))
}

pub(super) fn credit_note_void(w: &mut World, call: &mut Call, _p: &Params) -> Res {
    let id = call.param("id").to_string();
    let n = get_or_404(w, "credit_note", &id, "credit_note")?;
    if n["status"] != "issued" {
        return Err(invalid(format!("The credit note {id} has already been voided.")).code("credit_note_already_voided"));
    }
    if !n["refund"].is_null() {
        return Err(invalid("A credit note with a refund cannot be voided: the refund cannot be taken back.").param("id"));
    }
    let inv = n["invoice"].as_str().unwrap_or_default().to_string();
    let pre_payment = n["type"] == "pre_payment";
    if pre_payment && w.get(&inv).is_some_and(|i| i["status"] == "paid" && i["amount_paid"].as_i64().unwrap_or(0) > 0) {
        return Err(invalid("The invoice this credit note lowered has since been paid: void it no more, issue a new credit note if needed.").param("id"));
    }
    // Balance credited is taken back.
    if let Some(t) = n["customer_balance_transaction"].as_str().and_then(|t| w.get(t)) {
        let cus = t["customer"].as_str().unwrap_or_default().to_string();
        let cur = t["currency"].as_str().unwrap_or("usd").to_string();
        let amount = -t["amount"].as_i64().unwrap_or(0);
        let mut back = balance_transaction_object(w, &cus, amount, &cur, "credit_note", Some(&inv));
        back["credit_note"] = json!(id);
        move_balance(w, call, back);
    }
    let total = n["subtotal"].as_i64().unwrap_or(0);
    let now = w.now();
    let after = w.modify(call, &id, |x| {
        x["status"] = json!("void");
        x["voided_at"] = json!(now);
    });
    // An invoice this note had settled is open again, with a PaymentIntent for what is due.
    if pre_payment && w.get(&inv).is_some_and(|i| i["status"] == "paid") {
        w.modify(call, &inv, |i| {
            i["status"] = json!("open");
            i["paid"] = json!(false);
            i["status_transitions"]["paid_at"] = Value::Null;
        });
    }
    apply_to_invoice(w, call, &inv, pre_payment, -total);
    if let Some(i) = w.get(&inv).filter(|i| i["status"] == "open") {
        let canceled = i["payment_intent"].as_str().and_then(|pi| w.get(pi)).is_none_or(|pi| pi["status"] == "canceled");
        let due = i["amount_remaining"].as_i64().unwrap_or(0);
        if canceled && due > 0 {
            let cur = i["currency"].as_str().unwrap_or("usd").to_string();
            let pi = invoice_payment_intent(w, call, &inv, due, &cur, &i["customer"], &format!("Invoice {}", i["number"].as_str().unwrap_or("")));
            w.modify(call, &inv, |i| i["payment_intent"] = json!(pi));
        }
    }
    emit(w, call, "credit_note.voided", &note_view(after.clone()), None);
    Ok(note_view(after))
}

pub(super) fn credit_note_list(w: &mut World, call: &mut Call, p: &Params) -> Res {
    list_shaped(w, call, "credit_note", p, |n| field_is(n, "customer", p.str("customer")) && field_is(n, "invoice", p.str("invoice")), Some(note_view))
}
