"""The Stripe twin through stripe-python, the way a merchant's backend uses Stripe: payments,
manual capture, declines, 3-D Secure, refunds and over-refunds, idempotent retries, webhooks
verified with the SDK's own helper, x402. At the end, every answer the twin gave is validated
against Stripe's published OpenAPI description (tests/specs/stripe/openapi.json)."""

import base64
import json
import pathlib
import re
import urllib.error
import urllib.parse
import urllib.request

import httpx
import pytest
import stripe

import jsonschema
import referencing
from referencing.jsonschema import DRAFT4

HERE = pathlib.Path(__file__).resolve().parent
SPEC_PATH = HERE.parent / "specs" / "stripe" / "openapi.json"


@pytest.fixture
def stripe_sandbox(new_sandbox):
    def make(seed=None):
        sb = new_sandbox(["stripe"], seed=seed)
        url = sb.url("stripe")
        client = stripe.StripeClient(sb.token, base_addresses={"api": url, "files": url, "connect": url}, max_network_retries=0)
        return sb, client

    return make


def test_a_checkout_style_payment_succeeds_and_reconciles_with_events_and_balance(stripe_sandbox):
    sb, s = stripe_sandbox()
    cus = s.customers.create(params={"email": "ada@example.test", "metadata": {"tier": "gold"}})
    assert cus.id.startswith("cus_") and cus.livemode is False
    pi = s.payment_intents.create(params={"amount": 2000, "currency": "usd", "customer": cus.id, "payment_method": "pm_card_visa", "confirm": True, "expand": ["latest_charge"]})
    assert pi.status == "succeeded"
    assert pi.latest_charge.status == "succeeded"
    assert pi.amount_received == 2000
    txn = s.balance_transactions.retrieve(pi.latest_charge.balance_transaction)
    assert (txn.amount, txn.fee, txn.net) == (2000, 88, 1912)
    events = s.events.list(params={"type": "payment_intent.succeeded"})
    assert [e.data.object.id for e in events.data] == [pi.id]
    assert s.balance.retrieve().available[0].amount == 1912
    found = s.customers.search(params={"query": "email:'ada@example.test' AND metadata['tier']:'gold'"})
    assert [c.id for c in found.data] == [cus.id]


def test_manual_capture_holds_funds_and_captures_part(stripe_sandbox):
    sb, s = stripe_sandbox()
    pi = s.payment_intents.create(params={"amount": 5000, "currency": "usd", "payment_method": "pm_card_visa", "capture_method": "manual", "confirm": True})
    assert (pi.status, pi.amount_capturable) == ("requires_capture", 5000)
    with pytest.raises(stripe.InvalidRequestError):
        s.payment_intents.capture(pi.id, params={"amount_to_capture": 9000})
    pi = s.payment_intents.capture(pi.id, params={"amount_to_capture": 3000})
    assert (pi.status, pi.amount_received) == ("succeeded", 3000)


@pytest.mark.parametrize("pm,code,decline", [
    ("pm_card_chargeDeclined", "card_declined", "generic_decline"),
    ("pm_card_chargeDeclinedInsufficientFunds", "card_declined", "insufficient_funds"),
    ("pm_card_chargeDeclinedExpiredCard", "expired_card", "expired_card"),
    # The names Stripe's test-card tables give visa declines.
    ("pm_card_visa_chargeDeclinedInsufficientFunds", "card_declined", "insufficient_funds"),
    ("pm_card_visa_chargeDeclinedVelocityLimitExceeded", "card_declined", "card_velocity_exceeded"),
])
def test_declines_raise_card_error_with_the_decline_code(stripe_sandbox, pm, code, decline):
    sb, s = stripe_sandbox()
    with pytest.raises(stripe.CardError) as e:
        s.payment_intents.create(params={"amount": 1000, "currency": "usd", "payment_method": pm, "confirm": True})
    assert e.value.code == code
    assert e.value.error.decline_code == decline
    assert e.value.http_status == 402
    assert e.value.request_id.startswith("req_")
    pi = s.payment_intents.retrieve(e.value.error.payment_intent.id)
    assert pi.status == "requires_payment_method"
    assert pi.last_payment_error.decline_code == decline


def test_a_3ds_card_requires_action_until_authenticated(stripe_sandbox):
    sb, s = stripe_sandbox()
    pi = s.payment_intents.create(params={"amount": 1000, "currency": "usd", "payment_method": "pm_card_authenticationRequired", "confirm": True, "return_url": "https://shop.test/done"})
    assert pi.status == "requires_action"
    assert pi.next_action.type == "redirect_to_url"
    # Confirming again from the server does not authenticate: the customer's page does.
    assert s.payment_intents.confirm(pi.id).status == "requires_action"
    pi = s.payment_intents.retrieve(pi.id)
    page = pi.next_action.use_stripe_sdk.three_d_secure_2_source
    url = f"{sb.url('stripe')}/3d_secure_2/hosted?payment_intent={pi.id}&payment_intent_client_secret={pi.client_secret}&source={page}"
    assert httpx.post(url, data={"action": "complete"}, timeout=10).status_code == 200
    assert s.payment_intents.retrieve(pi.id).status == "succeeded"


def test_refunds_partial_then_full_then_refused(stripe_sandbox):
    sb, s = stripe_sandbox()
    pi = s.payment_intents.create(params={"amount": 20000, "currency": "usd", "payment_method": "pm_card_visa", "confirm": True})
    r1 = s.refunds.create(params={"payment_intent": pi.id, "amount": 7500})
    assert r1.status == "succeeded" and r1.charge == pi.latest_charge
    with pytest.raises(stripe.InvalidRequestError) as e:
        s.refunds.create(params={"charge": pi.latest_charge, "amount": 20000})
    assert e.value.code == "amount_too_large"
    s.refunds.create(params={"charge": pi.latest_charge})
    with pytest.raises(stripe.InvalidRequestError) as e:
        s.refunds.create(params={"charge": pi.latest_charge})
    assert e.value.code == "charge_already_refunded"
    ch = s.charges.retrieve(pi.latest_charge)
    assert (ch.amount_refunded, ch.refunded) == (20000, True)
    assert len(s.refunds.list(params={"charge": ch.id}).data) == 2


def test_idempotent_retries_replay_and_mismatches_are_refused(stripe_sandbox):
    sb, s = stripe_sandbox()
    a = s.payment_intents.create(params={"amount": 1000, "currency": "usd"}, options={"idempotency_key": "order-1"})
    b = s.payment_intents.create(params={"amount": 1000, "currency": "usd"}, options={"idempotency_key": "order-1"})
    assert a.id == b.id
    assert b.last_response.headers.get("Idempotent-Replayed") == "true"
    with pytest.raises(stripe.IdempotencyError):
        s.payment_intents.create(params={"amount": 2000, "currency": "usd"}, options={"idempotency_key": "order-1"})
    assert len(s.payment_intents.list().data) == 1


def test_lists_auto_paginate(stripe_sandbox):
    sb, s = stripe_sandbox()
    made = [s.customers.create(params={"email": f"u{i}@x.test"}).id for i in range(7)]
    page = s.customers.list(params={"limit": 3})
    assert page.has_more and len(page.data) == 3
    assert [c.id for c in page.auto_paging_iter()] == list(reversed(made))


def test_task_14_a_lost_response_retried_with_the_same_key_is_one_refund(stripe_sandbox):
    seed = json.loads((HERE.parents[0] / "tasks-compat" / "bundled" / "14-stripe-refund-retry.md").read_text().split("```json", 1)[1].split("```", 1)[0])
    sb, s = stripe_sandbox(seed)
    with pytest.raises(stripe.CardError):
        s.refunds.create(params={"charge": "ch_test_200", "amount": 7500}, options={"idempotency_key": "refund-ch_test_200"})
    r = s.refunds.create(params={"charge": "ch_test_200", "amount": 7500}, options={"idempotency_key": "refund-ch_test_200"})
    assert r.amount == 7500
    assert len(s.refunds.list(params={"charge": "ch_test_200"}).data) == 1


def test_webhooks_verify_with_the_sdk_helper(stripe_sandbox):
    sb, s = stripe_sandbox()
    we = s.webhook_endpoints.create(params={"url": "https://merchant.test/hook", "enabled_events": ["payment_intent.succeeded", "charge.refunded"]})
    pi = s.payment_intents.create(params={"amount": 1500, "currency": "usd", "payment_method": "pm_card_visa", "confirm": True})
    s.refunds.create(params={"payment_intent": pi.id})
    rows = sb.events("stripe")
    rows = rows if isinstance(rows, list) else rows.get("events", rows.get("data", []))
    deliveries = [d for r in rows for d in (r.get("deliveries") or [])]
    assert [d["event"] for d in deliveries] == ["payment_intent.succeeded", "charge.refunded"]
    for d in deliveries:
        headers = {k.lower(): v for k, v in d["headers"]}
        event = stripe.Webhook.construct_event(d["body"], headers["stripe-signature"], we.secret)
        assert event.type == d["event"]
    with pytest.raises(stripe.SignatureVerificationError):
        stripe.Webhook.construct_event(deliveries[0]["body"], dict((k.lower(), v) for k, v in deliveries[0]["headers"])["stripe-signature"], "whsec_wrong")


def test_x402_challenge_then_paid_retry(stripe_sandbox):
    sb, s = stripe_sandbox()
    url = sb.url("stripe") + "/x402/protected-resource"
    try:
        urllib.request.urlopen(urllib.request.Request(url, headers={"Authorization": f"Bearer {sb.token}"}))
        raise AssertionError("expected 402")
    except urllib.error.HTTPError as e:
        assert e.code == 402
        challenge = json.load(e)["accepts"][0]
    payment = {"x402Version": 1, "scheme": "exact", "network": challenge["network"], "payload": {"signature": "0x" + "ab" * 65, "authorization": {
        "from": "0x" + "11" * 20, "to": challenge["payTo"], "value": challenge["maxAmountRequired"], "validAfter": "0", "validBefore": "9999999999", "nonce": "0x" + "22" * 32}}}
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {sb.token}", "X-PAYMENT": base64.b64encode(json.dumps(payment).encode()).decode()})
    with urllib.request.urlopen(req) as resp:
        assert resp.status == 200
        assert resp.headers["X-PAYMENT-RESPONSE"]
    assert any(p.status == "succeeded" for p in s.payment_intents.list().data)


def _raw(sb, method, path, form=None, key=None):
    """A request outside the SDK's surface (the twin's test helpers, the retired upcoming
    invoice route), as JSON."""
    data = None if form is None else urllib.parse.urlencode(form).encode()
    req = urllib.request.Request(sb.url("stripe") + path, data=data, method=method, headers={
        "Authorization": f"Bearer {key or sb.token}", "Content-Type": "application/x-www-form-urlencoded"})
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def test_the_sandbox_hands_out_an_sk_test_key_the_sdk_uses_as_is(stripe_sandbox):
    sb, _ = stripe_sandbox()
    key = sb.body["per_twin"]["stripe"]["api_key"]
    assert key.startswith("sk_test_") and key.endswith(sb.token)
    url = sb.url("stripe")
    s = stripe.StripeClient(key, base_addresses={"api": url}, max_network_retries=0)
    assert s.customers.create(params={"email": "k@x.test"}).id.startswith("cus_")
    with pytest.raises(stripe.AuthenticationError):
        stripe.StripeClient("sk_test_" + "0" * 64, base_addresses={"api": url}, max_network_retries=0).customers.list()


def test_a_trial_without_a_card_pauses_and_resumes_paid(stripe_sandbox):
    sb, s = stripe_sandbox()
    clock = s.test_helpers.test_clocks.create(params={"frozen_time": 1767225600})
    cus = s.customers.create(params={"email": "trial@x.test", "test_clock": clock.id})
    price = s.prices.create(params={"currency": "usd", "unit_amount": 2000, "recurring": {"interval": "month"}, "product_data": {"name": "Team"}})
    sub = s.subscriptions.create(params={"customer": cus.id, "items": [{"price": price.id}], "trial_period_days": 14, "trial_settings": {"end_behavior": {"missing_payment_method": "pause"}}})
    assert sub.status == "trialing"
    with pytest.raises(stripe.InvalidRequestError):
        s.subscriptions.resume(sub.id)
    s.test_helpers.test_clocks.advance(clock.id, params={"frozen_time": 1768500000})
    assert s.subscriptions.retrieve(sub.id).status == "paused"
    pm = s.payment_methods.attach("pm_card_visa", params={"customer": cus.id})
    s.customers.update(cus.id, params={"invoice_settings": {"default_payment_method": pm.id}})
    sub = s.subscriptions.resume(sub.id, params={"billing_cycle_anchor": "now"})
    assert (sub.status, sub.current_period_start) == ("active", 1768500000)
    assert s.invoices.retrieve(sub.latest_invoice).status == "paid"
    assert [e.type for e in s.events.list(params={"type": "customer.subscription.resumed"}).data] == ["customer.subscription.resumed"]


def test_stripes_subscription_guide_default_incomplete_then_the_client_confirms_the_first_invoice(stripe_sandbox):
    # The flow of Stripe's "build a subscriptions integration" guide: the server creates the
    # subscription incomplete and hands the first invoice's PaymentIntent secret to the client.
    sb, s = stripe_sandbox()
    cus = s.customers.create(params={"email": "guide@x.test"})
    price = s.prices.create(params={"currency": "usd", "unit_amount": 1200, "recurring": {"interval": "month"}, "product_data": {"name": "Basic"}})
    sub = s.subscriptions.create(params={
        "customer": cus.id, "items": [{"price": price.id}], "payment_behavior": "default_incomplete",
        "payment_settings": {"save_default_payment_method": "on_subscription"}, "expand": ["latest_invoice.payment_intent"],
    })
    assert sub.status == "incomplete"
    pi = sub.latest_invoice.payment_intent
    assert (pi.status, pi.amount, pi.invoice) == ("requires_payment_method", 1200, sub.latest_invoice.id)
    assert pi.client_secret.startswith(pi.id + "_secret_")
    with pytest.raises(stripe.CardError) as declined:
        s.payment_intents.confirm(pi.id, params={"payment_method": "pm_card_chargeDeclined"})
    assert declined.value.code == "card_declined"
    assert s.subscriptions.retrieve(sub.id).status == "incomplete"
    pi = s.payment_intents.confirm(pi.id, params={"payment_method": "pm_card_visa"})
    assert pi.status == "succeeded"
    sub = s.subscriptions.retrieve(sub.id, params={"expand": ["latest_invoice"]})
    assert (sub.status, sub.default_payment_method, sub.latest_invoice.status) == ("active", pi.payment_method, "paid")
    assert s.events.list(params={"type": "customer.subscription.updated", "limit": 1}).data[0].data.previous_attributes["status"] == "incomplete"


def test_a_subscription_on_a_card_that_needs_authentication_waits_for_the_customer(stripe_sandbox):
    # Stripe's requires_action outcome: the first invoice's payment stops at 3-D Secure, the
    # subscription stays incomplete, and the customer's authentication (the PaymentIntent
    # confirmed) activates it.
    sb, s = stripe_sandbox()
    cus = s.customers.create(params={"email": "sca@x.test", "payment_method": "pm_card_authenticationRequired",
                                     "invoice_settings": {"default_payment_method": "pm_card_authenticationRequired"}})
    price = s.prices.create(params={"currency": "eur", "unit_amount": 900, "recurring": {"interval": "month"}, "product_data": {"name": "Plus"}})
    sub = s.subscriptions.create(params={"customer": cus.id, "items": [{"price": price.id}], "expand": ["latest_invoice.payment_intent"]})
    pi = sub.latest_invoice.payment_intent
    assert (sub.status, sub.latest_invoice.status, pi.status, pi.next_action.type) == ("incomplete", "open", "requires_action", "use_stripe_sdk")
    assert [e.data.object.id for e in s.events.list(params={"type": "invoice.payment_action_required"}).data] == [sub.latest_invoice.id]
    with pytest.raises(stripe.CardError) as waiting:
        s.invoices.pay(sub.latest_invoice.id)
    assert waiting.value.code == "invoice_payment_intent_requires_action"
    # The customer completes 3-D Secure on the page the PaymentIntent names.
    source = pi.next_action.use_stripe_sdk.three_d_secure_2_source
    url = f"{sb.url('stripe')}/3d_secure_2/hosted?payment_intent={pi.id}&payment_intent_client_secret={pi.client_secret}&source={source}"
    assert httpx.post(url, data={"action": "complete"}, timeout=10).status_code == 200
    assert s.payment_intents.retrieve(pi.id).status == "succeeded"
    sub = s.subscriptions.retrieve(sub.id, params={"expand": ["latest_invoice"]})
    assert (sub.status, sub.latest_invoice.status) == ("active", "paid")


def test_an_invoice_preview_shows_the_next_period_with_a_proposed_price(stripe_sandbox):
    sb, s = stripe_sandbox()
    cus = s.customers.create(params={"email": "pv@x.test", "payment_method": "pm_card_visa", "invoice_settings": {"default_payment_method": "pm_card_visa"}})
    pro = s.prices.create(params={"currency": "usd", "unit_amount": 1500, "recurring": {"interval": "month"}, "product_data": {"name": "Pro"}})
    lite = s.prices.create(params={"currency": "usd", "unit_amount": 900, "recurring": {"interval": "month"}, "product_data": {"name": "Lite"}})
    sub = s.subscriptions.create(params={"customer": cus.id, "items": [{"price": pro.id}]})
    s.invoice_items.create(params={"customer": cus.id, "amount": 300, "currency": "usd"})
    preview = s.invoices.create_preview(params={"customer": cus.id, "subscription": sub.id})
    assert (preview.amount_due, preview.subscription) == (1800, sub.id)
    assert preview.lines.data[0].period.start == sub.current_period_end
    change = {"items": [{"id": sub["items"].data[0].id, "price": lite.id}]}
    changed = s.invoices.create_preview(params={"customer": cus.id, "subscription": sub.id, "subscription_details": {**change, "proration_behavior": "none"}})
    assert changed.amount_due == 1200
    # Made now, at the start of the period, the change would credit the whole period at Pro and
    # charge it at Lite: the preview shows those prorations too.
    prorated = s.invoices.create_preview(params={"customer": cus.id, "subscription": sub.id, "subscription_details": change})
    assert sorted(line.amount for line in prorated.lines.data if line.proration) == [-1500, 900]
    assert prorated.amount_due == 1200 - 1500 + 900
    status, upcoming = _raw(sb, "GET", f"/v1/invoices/upcoming?customer={cus.id}")
    assert (status, upcoming["amount_due"], "id" in upcoming) == (200, 1800, False)
    assert len(s.invoices.list(params={"customer": cus.id}).data) == 1  # previews are stored nowhere


def test_a_checkout_session_completes_into_a_paid_payment_intent(stripe_sandbox):
    sb, s = stripe_sandbox()
    price = s.prices.create(params={"currency": "usd", "unit_amount": 1250, "product_data": {"name": "Mug"}})
    cs = s.checkout.sessions.create(params={"mode": "payment", "success_url": "https://shop.test/ok", "customer_email": "m@x.test", "line_items": [{"price": price.id, "quantity": 2}]})
    status, err = _raw(sb, "POST", f"/v1/test_helpers/checkout/sessions/{cs.id}/complete", [("payment_method", "pm_card_chargeDeclined")])
    assert (status, err["error"]["code"]) == (402, "card_declined")
    assert s.checkout.sessions.retrieve(cs.id).status == "open"
    status, done = _raw(sb, "POST", f"/v1/test_helpers/checkout/sessions/{cs.id}/complete")
    assert (status, done["status"], done["payment_status"]) == (200, "complete", "paid")
    pi = s.payment_intents.retrieve(done["payment_intent"])
    assert (pi.status, pi.amount) == ("succeeded", 2500)
    assert s.events.list(params={"type": "checkout.session.completed"}).data[0].data.object.id == cs.id


def test_a_checkout_session_with_an_inline_price_and_product_charges_their_total(stripe_sandbox):
    sb, s = stripe_sandbox()
    cs = s.checkout.sessions.create(params={
        "mode": "payment", "success_url": "https://shop.test/ok", "cancel_url": "https://shop.test/no",
        "line_items": [{"price_data": {"currency": "usd", "unit_amount": 500, "product_data": {"name": "T-shirt"}}, "quantity": 2}],
    })
    assert (cs.amount_total, cs.currency) == (1000, "usd")
    line = s.checkout.sessions.line_items.list(cs.id).data[0]
    assert (line.description, line.quantity, line.price.unit_amount, line.price.active) == ("T-shirt", 2, 500, False)
    with pytest.raises(stripe.InvalidRequestError) as e:
        s.checkout.sessions.create(params={"mode": "payment", "success_url": "https://shop.test/ok", "line_items": [{"price_data": {"unit_amount": 500, "product_data": {"name": "T"}}, "quantity": 1}]})
    assert e.value.param == "line_items[0][price_data][currency]"
    status, done = _raw(sb, "POST", f"/v1/test_helpers/checkout/sessions/{cs.id}/complete")
    assert (status, done["payment_status"]) == (200, "paid")
    assert s.payment_intents.retrieve(done["payment_intent"]).amount == 1000


# ---------------------------------------------------------------------------------------
# Every answer against Stripe's OpenAPI description.

def _nullable(node):
    if isinstance(node, dict):
        for v in node.values():
            _nullable(v)
        if node.pop("nullable", False):
            inner = dict(node)
            node.clear()
            node["anyOf"] = [inner, {"type": "null"}]
    elif isinstance(node, list):
        for v in node:
            _nullable(v)


def _spec():
    doc = json.loads(SPEC_PATH.read_text().replace('"#/components/', '"urn:spec#/components/'))
    _nullable(doc)
    ops = []
    for path, item in doc["paths"].items():
        for method, op in item.items():
            if isinstance(op, dict) and "responses" in op:
                rx = re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", path) + "$")
                literal = path.count("{")
                ops.append((method.upper(), rx, literal, op))
    registry = referencing.Registry().with_resource("urn:spec", referencing.Resource.from_contents(doc, default_specification=DRAFT4))
    return doc, ops, registry


def test_every_answer_validates_against_stripes_openapi(stripe_sandbox):
    sb, s = stripe_sandbox()
    cus = s.customers.create(params={"email": "v@x.test", "name": "V"})
    s.customers.update(cus.id, params={"metadata": {"a": "b"}})
    s.customers.list()
    s.customers.search(params={"query": "email:'v@x.test'"})
    pm = s.payment_methods.attach("pm_card_visa", params={"customer": cus.id})
    s.customers.update(cus.id, params={"invoice_settings": {"default_payment_method": pm.id}})
    s.payment_methods.list(params={"customer": cus.id, "type": "card"})
    pi = s.payment_intents.create(params={"amount": 3000, "currency": "usd", "customer": cus.id, "payment_method": pm.id, "confirm": True})
    s.payment_intents.retrieve(pi.id)
    s.payment_intents.list()
    s.charges.retrieve(pi.latest_charge)
    s.charges.list()
    s.refunds.create(params={"charge": pi.latest_charge, "amount": 1000})
    s.refunds.list()
    held = s.payment_intents.create(params={"amount": 3000, "currency": "usd", "payment_method": "pm_card_visa", "capture_method": "manual", "confirm": True})
    s.payment_intents.capture(held.id)
    c = s.payment_intents.create(params={"amount": 3000, "currency": "usd"})
    s.payment_intents.cancel(c.id)
    try:
        s.payment_intents.create(params={"amount": 1000, "currency": "usd", "payment_method": "pm_card_chargeDeclined", "confirm": True})
    except stripe.CardError:
        pass
    try:
        s.customers.retrieve("cus_nope")
    except stripe.InvalidRequestError:
        pass
    prod = s.products.create(params={"name": "Plan"})
    s.prices.create(params={"product": prod.id, "unit_amount": 900, "currency": "usd", "recurring": {"interval": "month"}})
    s.coupons.create(params={"percent_off": 25, "duration": "once"})
    si = s.setup_intents.create(params={"customer": cus.id, "payment_method": "pm_card_visa", "confirm": True})
    s.setup_intents.retrieve(si.id)
    s.events.list()
    s.balance.retrieve()
    s.balance_transactions.list()
    s.payouts.create(params={"amount": 100, "currency": "usd"})
    s.webhook_endpoints.create(params={"url": "https://m.test/h", "enabled_events": ["*"]})
    clock = s.test_helpers.test_clocks.create(params={"frozen_time": 1767225600})
    ccus = s.customers.create(params={"email": "c@x.test", "test_clock": clock.id, "payment_method": "pm_card_visa", "invoice_settings": {"default_payment_method": "pm_card_visa"}})
    price = s.prices.create(params={"currency": "usd", "unit_amount": 1500, "recurring": {"interval": "month"}, "product": prod.id})
    sub = s.subscriptions.create(params={"customer": ccus.id, "items": [{"price": price.id}]})
    s.subscriptions.update(sub.id, params={"cancel_at_period_end": True})
    s.test_helpers.test_clocks.advance(clock.id, params={"frozen_time": 1769904000})
    s.subscriptions.list(params={"status": "all"})
    s.invoices.list()
    s.invoice_items.create(params={"customer": ccus.id, "amount": 700, "currency": "usd"})
    inv = s.invoices.create(params={"customer": ccus.id, "pending_invoice_items_behavior": "include"})
    s.invoices.finalize_invoice(inv.id)
    s.invoices.void_invoice(inv.id)
    one_time = s.prices.create(params={"currency": "usd", "unit_amount": 500, "product": prod.id})
    cs = s.checkout.sessions.create(params={"mode": "payment", "success_url": "https://x.test/ok", "line_items": [{"price": one_time.id, "quantity": 1}]})
    s.checkout.sessions.expire(cs.id)
    s.checkout.sessions.list()
    s.payment_links.create(params={"line_items": [{"price": one_time.id, "quantity": 1}]})
    coupon = s.coupons.create(params={"amount_off": 500, "currency": "usd", "duration": "forever"})
    s.promotion_codes.create(params={"coupon": coupon.id, "code": "TWIN5"})
    disputed = s.payment_intents.create(params={"amount": 4000, "currency": "usd", "payment_method": "pm_card_createDispute", "confirm": True})
    dp = s.disputes.list().data[0]
    s.disputes.update(dp.id, params={"evidence": {"uncategorized_text": "delivered"}})
    s.payouts.list()
    # Billing beyond the basics: pause and resume, previews, invoice and item edits.
    pcus = s.customers.create(params={"email": "p@x.test"})
    paused = s.subscriptions.create(params={"customer": pcus.id, "items": [{"price": price.id}], "trial_period_days": 7, "trial_settings": {"end_behavior": {"missing_payment_method": "pause"}}})
    pclock_cus = ccus.id
    s.subscription_items.list(params={"subscription": paused.id})
    item = s.subscription_items.create(params={"subscription": paused.id, "price": price.id, "quantity": 2})
    s.subscription_items.retrieve(item.id)
    s.subscription_items.update(item.id, params={"quantity": 3})
    s.subscription_items.delete(item.id)
    s.subscriptions.search(params={"query": "status:'trialing'"})
    s.invoices.search(params={"query": "status:'paid'"})
    s.products.search(params={"query": "name:'Plan'"})
    s.prices.search(params={"query": "currency:'usd'"})
    ii = s.invoice_items.create(params={"customer": pclock_cus, "amount": 400, "currency": "usd"})
    s.invoice_items.retrieve(ii.id)
    s.invoice_items.update(ii.id, params={"description": "Setup"})
    _raw(sb, "GET", f"/v1/invoices/upcoming?customer={pclock_cus}")
    s.invoices.create_preview(params={"customer": pclock_cus})
    s.invoice_items.delete(ii.id)
    sent = s.invoices.create(params={"customer": ccus.id, "collection_method": "send_invoice", "days_until_due": 14})
    s.invoice_items.create(params={"customer": ccus.id, "amount": 900, "currency": "usd", "invoice": sent.id})
    s.invoices.update(sent.id, params={"description": "Consulting"})
    s.invoices.send_invoice(sent.id)
    s.invoices.retrieve(sent.id)
    draft = s.invoices.create(params={"customer": ccus.id})
    s.invoices.delete(draft.id)
    done = s.checkout.sessions.create(params={"mode": "payment", "success_url": "https://x.test/ok", "line_items": [{"price": one_time.id, "quantity": 2}]})
    _raw(sb, "POST", f"/v1/test_helpers/checkout/sessions/{done.id}/complete")
    s.checkout.sessions.retrieve(done.id)
    s.checkout.sessions.line_items.list(done.id)
    s.customers.delete(cus.id)

    doc, ops, registry = _spec()
    rows = sb.events("stripe")
    rows = rows if isinstance(rows, list) else rows.get("events", rows.get("data", []))
    failures, checked = [], 0
    for row in rows:
        path = row["path"]
        path = path[path.index("/v1/"):] if "/v1/" in path else path
        cands = [o for o in ops if o[0] == row["method"] and o[1].match(path)]
        if not cands:
            continue
        op = min(cands, key=lambda o: o[2])[3]
        resp = op["responses"].get(str(row["status"])) or op["responses"].get("default")
        schema = resp["content"]["application/json"]["schema"]
        body = row["response_body"]
        body = json.loads(body) if isinstance(body, str) else body
        try:
            jsonschema.Draft4Validator(schema, registry=registry).validate(body)
            checked += 1
        except jsonschema.ValidationError as e:
            failures.append(f"{row['method']} {path} {row['status']}: {e.message[:300]} at {list(e.absolute_path)}")
    assert checked >= 50
    assert not failures, "\n".join(failures)


def test_a_subscription_renews_across_three_test_clock_cycles_and_goes_past_due(stripe_sandbox):
    sb, s = stripe_sandbox()
    t0 = 1767225600  # 2026-01-01
    clock = s.test_helpers.test_clocks.create(params={"frozen_time": t0})
    cus = s.customers.create(params={"email": "sub@x.test", "test_clock": clock.id})
    pm = s.payment_methods.attach("pm_card_visa", params={"customer": cus.id})
    s.customers.update(cus.id, params={"invoice_settings": {"default_payment_method": pm.id}})
    price = s.prices.create(params={"currency": "usd", "unit_amount": 1500, "recurring": {"interval": "month"}, "product_data": {"name": "Pro"}})
    sub = s.subscriptions.create(params={"customer": cus.id, "items": [{"price": price.id}]})
    assert sub.status == "active"
    for month_start in (1769904000, 1772323200):  # Feb 1, Mar 1
        s.test_helpers.test_clocks.advance(clock.id, params={"frozen_time": month_start})
        assert s.subscriptions.retrieve(sub.id).status == "active"
    bad = s.payment_methods.attach("pm_card_chargeCustomerFail", params={"customer": cus.id})
    s.customers.update(cus.id, params={"invoice_settings": {"default_payment_method": bad.id}})
    s.test_helpers.test_clocks.advance(clock.id, params={"frozen_time": 1775001600})  # Apr 1
    sub = s.subscriptions.retrieve(sub.id)
    assert sub.status == "past_due"
    invoices = s.invoices.list(params={"subscription": sub.id})
    assert [i.status for i in invoices.data] == ["open", "paid", "paid", "paid"]
    assert [i.amount_due for i in invoices.data] == [1500] * 4
    updated = s.events.list(params={"type": "customer.subscription.updated", "limit": 1}).data[0]
    assert updated.data.previous_attributes["status"] == "active"


def test_an_upgrade_mid_month_is_prorated_onto_the_next_invoice(stripe_sandbox):
    sb, s = stripe_sandbox()
    clock = s.test_helpers.test_clocks.create(params={"frozen_time": 1767225600})  # 2026-01-01
    cus = s.customers.create(params={"email": "up@x.test", "test_clock": clock.id})
    pm = s.payment_methods.attach("pm_card_visa", params={"customer": cus.id})
    s.customers.update(cus.id, params={"invoice_settings": {"default_payment_method": pm.id}})
    pro = s.prices.create(params={"currency": "usd", "unit_amount": 1500, "recurring": {"interval": "month"}, "product_data": {"name": "Pro"}})
    premium = s.prices.create(params={"currency": "usd", "unit_amount": 3000, "recurring": {"interval": "month"}, "product_data": {"name": "Premium"}})
    sub = s.subscriptions.create(params={"customer": cus.id, "items": [{"price": pro.id}]})
    s.test_helpers.test_clocks.advance(clock.id, params={"frozen_time": 1768521600})  # 16 Jan: 16 of 31 days left
    s.subscriptions.update(sub.id, params={"items": [{"id": sub["items"].data[0].id, "price": premium.id}]})
    pending = s.invoice_items.list(params={"customer": cus.id, "pending": True})
    assert sorted((i.amount, i.proration) for i in pending.data) == [(-774, True), (1548, True)]
    s.test_helpers.test_clocks.advance(clock.id, params={"frozen_time": 1769904000})  # 1 Feb
    inv = s.invoices.retrieve(s.subscriptions.retrieve(sub.id).latest_invoice)
    assert (inv.status, inv.amount_paid) == ("paid", 3000 + 1548 - 774)
    assert sorted(line.amount for line in inv.lines.data) == [-774, 1548, 3000]
    assert s.invoice_items.list(params={"customer": cus.id, "pending": True}).data == []


def test_searches_list_filters_and_a_customers_credit_work_as_stripe_documents(stripe_sandbox):
    sb, s = stripe_sandbox()
    amy = s.customers.create(params={"email": "amy@rocketrides.io", "name": "Amy Rider", "metadata": {"tier": "gold"}})
    s.customers.create(params={"email": "bob@rocketrides.io", "name": "Bob Rider", "metadata": {"tier": "silver"}})
    # Space-separated clauses are joined by AND; `~` matches a substring.
    found = s.customers.search(params={"query": 'name~"rider" metadata["tier"]:"gold"'})
    assert [c.id for c in found.data] == [amy.id]
    with pytest.raises(stripe.InvalidRequestError, match="cannot mix AND and OR"):
        s.customers.search(params={"query": 'email:"a@b.c" AND name:"x" OR name:"y"'})

    # A credit on the customer pays toward the invoice finalized for them.
    s.customers.balance_transactions.create(amy.id, params={"amount": -700, "currency": "usd"})
    inv = s.invoices.create(params={"customer": amy.id, "collection_method": "send_invoice", "days_until_due": 30})
    s.invoice_items.create(params={"customer": amy.id, "amount": 1000, "currency": "usd", "invoice": inv.id})
    inv = s.invoices.finalize_invoice(inv.id)
    assert (inv.amount_due, inv.starting_balance, inv.ending_balance) == (300, -700, 0)
    assert s.customers.retrieve(amy.id).balance == 0

    # Lists filter by what Stripe documents, not only by customer.
    assert [i.id for i in s.invoices.list(params={"collection_method": "send_invoice"}).data] == [inv.id]
    assert s.invoices.list(params={"created": {"gt": inv.created}}).data == []
    monthly = s.prices.create(params={"currency": "usd", "unit_amount": 500, "recurring": {"interval": "month"}, "product_data": {"name": "Plan"}})
    s.prices.create(params={"currency": "usd", "unit_amount": 5000, "recurring": {"interval": "year"}, "product_data": {"name": "Plan"}})
    assert [p.id for p in s.prices.list(params={"recurring": {"interval": "month"}}).data] == [monthly.id]

    # A misspelt event type is refused, not saved to never fire.
    with pytest.raises(stripe.InvalidRequestError, match="enabled_events"):
        s.webhook_endpoints.create(params={"url": "https://m.test/h", "enabled_events": ["payment_intent.succeded"]})
