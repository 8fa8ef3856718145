"""Issue #35, Stripe "Surface": the families beyond payments and billing basics, through
stripe-python as an agent meets them: credit notes, quotes, subscription schedules, usage-based
billing (usage records, billing meters), plans, the customer portal, tax rates and tax ids,
shipping rates, files and file links, Connect (accounts, account links, transfers, application
fees), Radar (reviews, early fraud warnings, value lists), mandates and setup attempts, tokens
and top-ups. At the end, every answer of a described operation is validated against Stripe's
OpenAPI description, and each object must carry every field its schema names."""

import io
import json

import httpx
import jsonschema
import pytest
import stripe

from test_stripe_sdk import _spec

T0 = 1767225600  # 2026-01-01, a test clock's start


@pytest.fixture
def client(new_sandbox):
    sb = new_sandbox(["stripe"])
    url = sb.url("stripe")
    return sb, stripe.StripeClient(sb.token, base_addresses={"api": url, "files": url, "connect": url}, max_network_retries=0)


def _customer(s, clock=None):
    params = {"email": "c@x.test", "payment_method": "pm_card_visa", "invoice_settings": {"default_payment_method": "pm_card_visa"}}
    if clock:
        params["test_clock"] = clock
    return s.customers.create(params=params)


def _price(s, amount, interval=None):
    prod = s.products.create(params={"name": "Widget"})
    params = {"product": prod.id, "currency": "usd", "unit_amount": amount}
    if interval:
        params["recurring"] = {"interval": interval}
    return s.prices.create(params=params)


def test_credit_notes_lower_an_open_invoice_and_refund_a_paid_one(client):
    _, s = client
    cus = _customer(s)
    s.invoice_items.create(params={"customer": cus.id, "amount": 5000, "currency": "usd"})
    inv = s.invoices.create(params={"customer": cus.id, "pending_invoice_items_behavior": "include", "collection_method": "send_invoice", "days_until_due": 30})
    inv = s.invoices.finalize_invoice(inv.id)
    preview = s.credit_notes.preview(params={"invoice": inv.id, "amount": 1000})
    assert (preview.total, preview.type) == (1000, "pre_payment")
    assert [l.amount for l in s.credit_notes.preview_lines.list(params={"invoice": inv.id, "amount": 1000})] == [1000]
    cn = s.credit_notes.create(params={"invoice": inv.id, "lines": [{"type": "invoice_line_item", "invoice_line_item": inv.lines.data[0].id, "amount": 1500}], "memo": "Late"})
    assert s.invoices.retrieve(inv.id).amount_remaining == 3500
    assert s.credit_notes.update(cn.id, params={"metadata": {"ticket": "7"}}).metadata["ticket"] == "7"
    assert [l.amount for l in s.credit_notes.line_items.list(cn.id)] == [1500]
    assert s.credit_notes.void_credit_note(cn.id).status == "void"
    assert s.invoices.retrieve(inv.id).amount_remaining == 5000
    # A paid invoice: the credit is given back as a refund and a balance credit, which must
    # add up to it.
    s.invoice_items.create(params={"customer": cus.id, "amount": 8000, "currency": "usd"})
    paid = s.invoices.pay(s.invoices.create(params={"customer": cus.id, "pending_invoice_items_behavior": "include"}).id)
    with pytest.raises(stripe.InvalidRequestError) as e:
        s.credit_notes.create(params={"invoice": paid.id, "amount": 3000, "refund_amount": 1000})
    assert e.value.param == "amount"
    cn = s.credit_notes.create(params={"invoice": paid.id, "amount": 3000, "refund_amount": 2000, "credit_amount": 1000})
    assert (cn.type, s.refunds.retrieve(cn.refund).amount) == ("post_payment", 2000)
    assert s.customers.retrieve(cus.id).balance == -1000
    assert {c.id for c in s.credit_notes.list(params={"customer": cus.id})} >= {cn.id}


def test_a_quote_is_finalized_accepted_and_rendered(client):
    sb, s = client
    cus = _customer(s)
    monthly, setup = _price(s, 2000, "month"), _price(s, 5000)
    q = s.quotes.create(params={"customer": cus.id, "line_items": [{"price": monthly.id, "quantity": 2}, {"price": setup.id}]})
    assert (q.status, q.amount_total, q.computed.recurring.amount_total) == ("draft", 9000, 4000)
    assert len(s.quotes.line_items.list(q.id).data) == 2
    with pytest.raises(stripe.InvalidRequestError):
        s.quotes.accept(q.id)
    q = s.quotes.finalize_quote(q.id)
    assert q.status == "open" and q.number
    assert len(s.quotes.computed_upfront_line_items.list(q.id).data) == 2
    pdf = httpx.get(f"{sb.url('stripe')}/v1/quotes/{q.id}/pdf", headers={"Authorization": f"Bearer {sb.token}"}, timeout=10)
    assert (pdf.status_code, pdf.content[:5]) == (200, b"%PDF-")
    q = s.quotes.accept(q.id)
    assert q.status == "accepted"
    assert s.subscriptions.retrieve(q.subscription).status == "active"
    assert s.invoices.retrieve(q.invoice).amount_paid == 9000
    other = s.quotes.create(params={"customer": cus.id, "line_items": [{"price": setup.id}]})
    assert s.quotes.cancel(other.id).status == "canceled"


def test_a_schedule_moves_to_its_next_phase_on_the_test_clock(client):
    _, s = client
    clock = s.test_helpers.test_clocks.create(params={"frozen_time": T0})
    cus = _customer(s, clock.id)
    basic, pro = _price(s, 1000, "month"), _price(s, 3000, "month")
    sched = s.subscription_schedules.create(params={"customer": cus.id, "start_date": "now", "end_behavior": "release", "phases": [
        {"items": [{"price": basic.id}], "iterations": 1}, {"items": [{"price": pro.id}], "iterations": 1}]})
    assert sched.status == "active"
    s.test_helpers.test_clocks.advance(clock.id, params={"frozen_time": T0 + 31 * 86400 + 60})
    sub = s.subscriptions.retrieve(sched.subscription)
    assert sub["items"].data[0].price.id == pro.id
    assert s.subscription_schedules.update(sched.id, params={"metadata": {"plan": "pro"}}).metadata["plan"] == "pro"
    released = s.subscription_schedules.release(sched.id)
    assert (released.status, released.released_subscription) == ("released", sub.id)
    other = s.subscriptions.create(params={"customer": cus.id, "items": [{"price": basic.id}]})
    from_sub = s.subscription_schedules.create(params={"from_subscription": other.id})
    assert s.subscription_schedules.cancel(from_sub.id).status == "canceled"
    assert s.subscriptions.retrieve(other.id).status == "canceled"
    assert {x.id for x in s.subscription_schedules.list(params={"customer": cus.id})} == {sched.id, from_sub.id}


def test_usage_is_billed_from_usage_records_and_from_a_meter(client):
    _, s = client
    clock = s.test_helpers.test_clocks.create(params={"frozen_time": T0})
    cus = _customer(s, clock.id)
    prod = s.products.create(params={"name": "API"})
    per_call = s.prices.create(params={"product": prod.id, "currency": "usd", "unit_amount": 5, "recurring": {"interval": "month", "usage_type": "metered"}})
    meter = s.billing.meters.create(params={"display_name": "Tokens", "event_name": "tokens", "default_aggregation": {"formula": "sum"}})
    per_token = s.prices.create(params={"product": prod.id, "currency": "usd", "unit_amount": 2, "recurring": {"interval": "month", "usage_type": "metered", "meter": meter.id}})
    sub = s.subscriptions.create(params={"customer": cus.id, "items": [{"price": per_call.id}, {"price": per_token.id}]})
    item = sub["items"].data[0].id
    # stripe-python 12 (API basil) dropped usage records; older clients and agents still send them.
    for q, at in ((100, T0 + 10), (250, T0 + 20)):
        s.raw_request("post", f"/v1/subscription_items/{item}/usage_records", quantity=q, timestamp=at)
    for value, at in (("1000", T0 + 30), ("500", T0 + 40)):
        s.billing.meter_events.create(params={"event_name": "tokens", "payload": {"stripe_customer_id": cus.id, "value": value}, "timestamp": at})
    summary = s.deserialize(s.raw_request("get", f"/v1/subscription_items/{item}/usage_record_summaries"), api_mode="V1")
    assert summary.data[0].total_usage == 350
    summaries = s.billing.meters.event_summaries.list(meter.id, params={"customer": cus.id, "start_time": T0, "end_time": T0 + 3600})
    assert summaries.data[0].aggregated_value == 1500
    s.test_helpers.test_clocks.advance(clock.id, params={"frozen_time": T0 + 32 * 86400})
    inv = s.invoices.retrieve(s.subscriptions.retrieve(sub.id).latest_invoice)
    assert inv.amount_due == 350 * 5 + 1500 * 2
    assert s.billing.meters.deactivate(meter.id).status == "inactive"


def test_plans_portal_tax_and_shipping(client):
    _, s = client
    plan = s.plans.create(params={"id": "gold", "amount": 2000, "currency": "usd", "interval": "month", "product": {"name": "Gold"}})
    assert (plan.id, s.prices.retrieve("gold").unit_amount) == ("gold", 2000)
    assert s.plans.update("gold", params={"nickname": "Gold monthly"}).nickname == "Gold monthly"
    assert [p.id for p in s.plans.list()] == ["gold"]
    assert s.plans.delete("gold").deleted is True
    cus = _customer(s)
    conf = s.billing_portal.configurations.create(params={"features": {"invoice_history": {"enabled": True}}, "default_return_url": "https://shop.test/account"})
    session = s.billing_portal.sessions.create(params={"customer": cus.id, "configuration": conf.id})
    assert session.return_url == "https://shop.test/account" and session.url.startswith("https://billing.stripe.com/")
    with pytest.raises(stripe.InvalidRequestError) as e:
        s.billing_portal.sessions.create(params={"customer": cus.id, "configuration": conf.id, "flow_data": {"type": "payment_method_update"}})
    assert e.value.param == "flow_data[type]"
    assert s.billing_portal.configurations.update(conf.id, params={"active": False}).active is False
    rate = s.tax_rates.create(params={"display_name": "VAT", "percentage": 20, "inclusive": False, "country": "DE"})
    assert s.tax_rates.update(rate.id, params={"active": False}).active is False
    tid = s.customers.tax_ids.create(cus.id, params={"type": "eu_vat", "value": "DE123456789"})
    assert (tid.country, tid.verification.status) == ("DE", "pending")
    assert [t.id for t in s.customers.tax_ids.list(cus.id)] == [tid.id]
    assert s.customers.tax_ids.delete(cus.id, tid.id).deleted is True
    assert s.tax_codes.retrieve("txcd_99999999").name == "General - Tangible Goods"
    ship = s.shipping_rates.create(params={"display_name": "Ground", "type": "fixed_amount", "fixed_amount": {"amount": 500, "currency": "usd"}, "delivery_estimate": {"minimum": {"unit": "business_day", "value": 3}, "maximum": {"unit": "business_day", "value": 5}}})
    assert s.shipping_rates.update(ship.id, params={"active": False}).active is False
    assert [r.id for r in s.shipping_rates.list(params={"active": False})] == [ship.id]


def test_a_file_is_uploaded_and_served_at_its_link(client):
    sb, s = client
    upload = io.BytesIO(b"%PDF-1.4 receipt")
    upload.name = "receipt.pdf"
    f = s.files.create(params={"purpose": "dispute_evidence", "file": upload})
    assert (f.type, f.size, f.filename) == ("pdf", 16, "receipt.pdf")
    link = s.file_links.create(params={"file": f.id})
    assert httpx.get(link.url, timeout=10).content == b"%PDF-1.4 receipt"
    assert s.file_links.update(link.id, params={"expires_at": "now"}).expired is True
    assert httpx.get(link.url, timeout=10).status_code == 410
    assert [x.id for x in s.files.list(params={"purpose": "dispute_evidence"})] == [f.id]
    assert s.files.retrieve(f.id).links.data[0].id == link.id


def test_connect_accounts_transfers_and_application_fees(client):
    sb, s = client
    acct = s.accounts.create(params={"type": "express", "capabilities": {"card_payments": {"requested": True}, "transfers": {"requested": True}}})
    assert acct.charges_enabled is False and "external_account" in acct.requirements.currently_due
    link = s.account_links.create(params={"account": acct.id, "refresh_url": "https://shop.test/refresh", "return_url": "https://shop.test/return", "type": "account_onboarding"})
    page = httpx.get(link.url, timeout=10)
    assert (page.status_code, page.headers["location"]) == (302, "https://shop.test/return")
    acct = s.accounts.retrieve(acct.id)
    assert (acct.details_submitted, acct.charges_enabled, acct.payouts_enabled) == (True, True, True)
    assert s.accounts.login_links.create(acct.id).url.startswith("https://connect.stripe.com/express/")
    assert {c.id for c in s.accounts.capabilities.list(acct.id)} == {"card_payments", "transfers"}
    assert s.accounts.capabilities.retrieve(acct.id, "transfers").status == "active"
    assert s.accounts.external_accounts.list(acct.id).data[0].object == "bank_account"
    pi = s.payment_intents.create(params={"amount": 10000, "currency": "usd", "payment_method": "pm_card_visa", "confirm": True, "application_fee_amount": 1230, "transfer_data": {"destination": acct.id}})
    ch = s.charges.retrieve(pi.latest_charge)
    assert s.transfers.retrieve(ch.transfer).amount == 10000
    fee = s.application_fees.retrieve(ch.application_fee)
    assert (fee.amount, fee.account) == (1230, acct.id)
    fr = s.application_fees.refunds.create(fee.id, params={"amount": 230})
    assert [r.id for r in s.application_fees.refunds.list(fee.id)] == [fr.id]
    assert s.application_fees.retrieve(fee.id).amount_refunded == 230
    s.topups.create(params={"amount": 20000, "currency": "usd"})
    tr = s.transfers.create(params={"amount": 5000, "currency": "usd", "destination": acct.id})
    rev = s.transfers.reversals.create(tr.id, params={"amount": 2000})
    assert s.transfers.retrieve(tr.id).amount_reversed == 2000
    assert s.transfers.reversals.retrieve(tr.id, rev.id).amount == 2000
    custom = s.accounts.create(params={"type": "custom", "business_type": "company", "capabilities": {"transfers": {"requested": True}}})
    person = s.accounts.persons.create(custom.id, params={"first_name": "Ada", "relationship": {"representative": True}})
    assert [p.id for p in s.accounts.persons.list(custom.id, params={"relationship": {"representative": True}})] == [person.id]
    assert s.accounts.reject(custom.id, params={"reason": "fraud"}).requirements.disabled_reason == "rejected.fraud"
    with pytest.raises(stripe.InvalidRequestError) as e:
        s.transfers.create(params={"amount": 100, "currency": "usd", "destination": custom.id})
    assert e.value.code == "insufficient_capabilities_for_transfer"
    assert s.accounts.retrieve_current().id.startswith("acct_")


def test_radar_reviews_warnings_and_value_lists(client):
    _, s = client
    pi = s.payment_intents.create(params={"amount": 3000, "currency": "usd", "payment_method": "pm_card_riskLevelElevated", "confirm": True})
    assert [r.id for r in s.reviews.list()] == [pi.review]
    assert s.reviews.approve(pi.review).closed_reason == "approved"
    warned = s.payment_intents.create(params={"amount": 3000, "currency": "usd", "payment_method": "pm_card_createIssuerFraudRecord", "confirm": True})
    efw = s.radar.early_fraud_warnings.list(params={"payment_intent": warned.id}).data[0]
    assert efw.actionable is True
    s.refunds.create(params={"payment_intent": warned.id, "reason": "fraudulent"})
    assert s.radar.early_fraud_warnings.retrieve(efw.id).actionable is False
    vl = s.radar.value_lists.create(params={"alias": "blocked_emails", "name": "Blocked emails", "item_type": "email"})
    with pytest.raises(stripe.InvalidRequestError) as e:
        s.radar.value_list_items.create(params={"value_list": vl.id, "value": "not-an-email"})
    assert e.value.param == "value"
    item = s.radar.value_list_items.create(params={"value_list": vl.id, "value": "fraud@x.test"})
    assert [i.id for i in s.radar.value_list_items.list(params={"value_list": vl.id})] == [item.id]
    assert s.radar.value_lists.update(vl.id, params={"name": "Blocked"}).list_items.data[0].id == item.id
    assert s.radar.value_list_items.delete(item.id).deleted is True
    assert s.radar.value_lists.delete(vl.id).deleted is True


def test_mandates_setup_attempts_tokens_and_refunds_of_a_charge(client):
    _, s = client
    cus = s.customers.create(params={"email": "m@x.test"})
    si = s.setup_intents.create(params={"customer": cus.id, "payment_method": "pm_card_visa", "confirm": True, "mandate_data": {"customer_acceptance": {"type": "online", "online": {"ip_address": "1.2.3.4", "user_agent": "curl"}}}})
    assert s.mandates.retrieve(si.mandate).status == "active"
    assert [a.status for a in s.setup_attempts.list(params={"setup_intent": si.id})] == ["succeeded"]
    tok = s.tokens.create(params={"card": {"number": "4242424242424242", "exp_month": 12, "exp_year": 2034, "cvc": "123"}})
    assert s.tokens.retrieve(tok.id).card.last4 == "4242"
    ch = s.charges.create(params={"amount": 4000, "currency": "usd", "source": tok.id})
    with pytest.raises(stripe.InvalidRequestError) as e:
        s.charges.create(params={"amount": 4000, "currency": "usd", "source": tok.id})
    assert e.value.code == "token_already_used"
    re = s.refunds.create(params={"charge": ch.id, "amount": 1000})
    assert s.refunds.retrieve(re.id).charge == ch.id
    t = s.topups.create(params={"amount": 2500, "currency": "usd", "description": "float"})
    assert s.topups.update(t.id, params={"metadata": {"k": "v"}}).metadata["k"] == "v"
    assert [x.id for x in s.topups.list()] == [t.id]
    assert s.balance_transactions.list(params={"type": "topup"}).data[0].amount == 2500


# Fields Stripe includes only when expanded, or only where they apply (a token's other kind, a
# multi-use mandate's single-use terms, a custom credit note line's invoice line, an account's
# `company` or `individual` as its business type has one, Japanese name and address forms).
EXPAND_ONLY = {"line_items", "tiers", "currency_options", "bank_account", "card", "single_use", "invoice_line_item", "company", "individual",
               "address_kana", "address_kanji", "first_name_kana", "first_name_kanji", "last_name_kana", "last_name_kanji",
               "political_exposure", "registered_address"}

# The families this issue serves, whose objects must carry every field (the older families'
# objects are held to the schema's types and required fields above).
NEW_FAMILIES = {"credit_notes", "quotes", "subscription_schedules", "plans", "billing_portal", "tax_rates", "tax_codes", "shipping_rates",
                "files", "file_links", "accounts", "account", "account_links", "transfers", "application_fees", "radar", "reviews",
                "mandates", "setup_attempts", "tokens", "topups", "ephemeral_keys"}


def _missing_fields(doc, schema, body):
    """The fields `schema` names that `body` lacks (those Stripe includes only when expanded,
    or only for some account types, aside)."""
    while "$ref" in schema:
        schema = doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    props = schema.get("properties") or {}
    if not isinstance(body, dict) or not props:
        return []
    if body.get("object") == "list" and "data" in props:
        items = props["data"].get("items", {})
        return [m for b in body.get("data", []) for m in _missing_fields(doc, items, b)]
    if body.get("deleted"):
        return []
    return sorted(k for k in props if k not in body and k not in EXPAND_ONLY)


def test_every_answer_of_the_new_families_validates_against_stripes_openapi(client):
    sb, s = client
    # The flows above, in one sandbox (those that count what they list first).
    for t in (test_plans_portal_tax_and_shipping, test_mandates_setup_attempts_tokens_and_refunds_of_a_charge,
              test_credit_notes_lower_an_open_invoice_and_refund_a_paid_one, test_a_quote_is_finalized_accepted_and_rendered,
              test_a_schedule_moves_to_its_next_phase_on_the_test_clock, test_usage_is_billed_from_usage_records_and_from_a_meter,
              test_a_file_is_uploaded_and_served_at_its_link, test_connect_accounts_transfers_and_application_fees,
              test_radar_reviews_warnings_and_value_lists):
        t(client)
    cus = s.customers.create(params={"email": "cash@x.test"})
    s.test_helpers.customers.fund_cash_balance(cus.id, params={"amount": 5000, "currency": "eur"})
    assert s.customers.cash_balance.retrieve(cus.id).available["eur"] == 5000
    assert len(s.customers.cash_balance_transactions.list(cus.id).data) == 1
    s.customers.funding_instructions.create(cus.id, params={"currency": "eur", "funding_type": "bank_transfer", "bank_transfer": {"type": "eu_bank_transfer", "eu_bank_transfer": {"country": "DE"}}})

    doc, ops, registry = _spec()
    rows = sb.events("stripe")
    rows = rows if isinstance(rows, list) else rows.get("events", rows.get("data", []))
    failures, checked, families = [], 0, set()
    for row in rows:
        path = row["path"]
        path = path[path.index("/v1/"):] if "/v1/" in path else path
        cands = [o for o in ops if o[0] == row["method"] and o[1].match(path)]
        if not cands or row["status"] != 200:
            continue
        op = min(cands, key=lambda o: o[2])[3]
        resp = op["responses"].get("200") or op["responses"].get("default")
        content = resp.get("content", {}).get("application/json")
        if not content:
            continue
        schema = content["schema"]
        body = row["response_body"]
        body = json.loads(body) if isinstance(body, str) else body
        try:
            jsonschema.Draft4Validator(schema, registry=registry).validate(body)
            checked += 1
            families.add(path.split("/")[2])
        except jsonschema.ValidationError as e:
            failures.append(f"{row['method']} {path}: {e.message[:300]} at {list(e.absolute_path)}")
            continue
        missing = _missing_fields(doc, schema, body) if path.split("/")[2] in NEW_FAMILIES else []
        if missing:
            failures.append(f"{row['method']} {path}: lacks {missing}")
    assert checked >= 100, checked
    assert {"credit_notes", "quotes", "subscription_schedules", "plans", "billing_portal", "tax_rates", "shipping_rates", "files", "file_links",
            "accounts", "account_links", "transfers", "application_fees", "radar", "reviews", "mandates", "setup_attempts", "tokens", "topups"} <= families
    assert not failures, "\n".join(failures)
