"""Issue #35, Stripe "Amounts" and "Smaller": what a stripe-python user still met, each item
through the client: PaymentIntent.update's amount checks and an authorized amount that stays
authorized, the minimum charge of each currency, `expand[]` of a property that is no
reference, an unknown `Stripe-Version`, idempotency keys kept by time rather than by count,
search's `limit`, and refunds that stay `pending` so that `refunds.cancel` can succeed."""

import pytest
import stripe


@pytest.fixture
def stripe_sandbox(new_sandbox):
    def make(**opts):
        sb = new_sandbox(["stripe"])
        url = sb.url("stripe")
        client = stripe.StripeClient(sb.token, base_addresses={"api": url, "files": url, "connect": url}, max_network_retries=0, **opts)
        return sb, client
    return make


def test_update_refuses_amounts_stripe_refuses(stripe_sandbox):
    _, s = stripe_sandbox()
    pi = s.payment_intents.create(params={"amount": 2000, "currency": "usd"})
    for bad in (-5, 0):
        with pytest.raises(stripe.InvalidRequestError) as e:
            s.payment_intents.update(pi.id, params={"amount": bad})
        assert e.value.param == "amount"
    with pytest.raises(stripe.InvalidRequestError) as e:
        s.payment_intents.update(pi.id, params={"amount": 49})
    assert (e.value.code, e.value.param) == ("amount_too_small", "amount")
    with pytest.raises(stripe.InvalidRequestError) as e:
        s.payment_intents.update(pi.id, params={"currency": "huf"})  # 20.00 Ft is under Ft175.00
    assert e.value.code == "amount_too_small"
    assert s.payment_intents.retrieve(pi.id).amount == 2000
    assert s.payment_intents.update(pi.id, params={"amount": 2500}).amount == 2500


def test_an_authorized_payment_intent_keeps_its_amount_and_amount_capturable(stripe_sandbox):
    _, s = stripe_sandbox()
    pi = s.payment_intents.create(params={"amount": 2000, "currency": "usd", "payment_method": "pm_card_visa", "capture_method": "manual", "confirm": True})
    assert (pi.status, pi.amount_capturable) == ("requires_capture", 2000)
    with pytest.raises(stripe.InvalidRequestError) as e:
        s.payment_intents.update(pi.id, params={"amount": 3000})
    assert e.value.code == "payment_intent_unexpected_state"
    assert "amount could not be updated because it has a status of requires_capture" in e.value.user_message
    again = s.payment_intents.retrieve(pi.id)
    assert (again.amount, again.amount_capturable) == (2000, 2000)
    assert s.payment_intents.update(pi.id, params={"description": "order 7"}).description == "order 7"
    assert s.payment_intents.capture(pi.id).amount_received == 2000


@pytest.mark.parametrize("currency,too_small,enough,shown", [
    ("eur", 49, 50, "€0.50 eur"),
    ("gbp", 29, 30, "£0.30 gbp"),
    ("jpy", 49, 50, "¥50 jpy"),
    ("mxn", 999, 1000, "$10.00 mxn"),
    ("hkd", 399, 400, "$4.00 hkd"),
])
def test_the_minimum_charge_is_stripes_for_each_currency(stripe_sandbox, currency, too_small, enough, shown):
    _, s = stripe_sandbox()
    with pytest.raises(stripe.InvalidRequestError) as e:
        s.payment_intents.create(params={"amount": too_small, "currency": currency})
    assert (e.value.code, e.value.param) == ("amount_too_small", "amount")
    assert e.value.user_message == f"Amount must be at least {shown}"
    assert s.payment_intents.create(params={"amount": enough, "currency": currency}).amount == enough


def test_expanding_a_property_that_is_no_reference_is_refused(stripe_sandbox):
    _, s = stripe_sandbox()
    pi = s.payment_intents.create(params={"amount": 1500, "currency": "usd", "payment_method": "pm_card_visa", "confirm": True})
    for prop in ("amount", "metadata"):
        with pytest.raises(stripe.InvalidRequestError) as e:
            s.payment_intents.retrieve(pi.id, params={"expand": [prop]})
        assert (e.value.param, e.value.user_message) == ("expand", f"This property cannot be expanded ({prop}).")
    got = s.payment_intents.retrieve(pi.id, params={"expand": ["latest_charge", "latest_charge.balance_transaction"]})
    assert got.latest_charge.balance_transaction.object == "balance_transaction"


def test_an_unknown_stripe_version_is_refused_and_released_ones_are_served(stripe_sandbox):
    _, s = stripe_sandbox(stripe_version="2099-01-01")
    with pytest.raises(stripe.InvalidRequestError) as e:
        s.customers.list()
    assert e.value.http_status == 400 and e.value.user_message == "Invalid Stripe API version: 2099-01-01"
    for version in ("2024-06-20", "2020-08-27", "2025-03-31.basil"):
        _, ok = stripe_sandbox(stripe_version=version)
        assert ok.customers.list().data == []


def test_idempotency_keys_are_not_forgotten_by_count(stripe_sandbox):
    _, s = stripe_sandbox()
    first = s.customers.create(params={"email": "first@x.test"}, options={"idempotency_key": "key-0"})
    for i in range(1, 5001):
        s.customers.create(params={"email": "c@x.test"}, options={"idempotency_key": f"key-{i}"})
    replay = s.customers.create(params={"email": "first@x.test"}, options={"idempotency_key": "key-0"})
    assert replay.id == first.id, "within 24 hours a key replays, however many came after it"
    assert replay.last_response.headers.get("idempotent-replayed") == "true"


def test_search_refuses_a_limit_out_of_range_as_lists_do(stripe_sandbox):
    _, s = stripe_sandbox()
    for limit in (0, 101):
        for call in (lambda: s.customers.list(params={"limit": limit}),
                     lambda: s.customers.search(params={"query": "email:'a@x.test'", "limit": limit})):
            with pytest.raises(stripe.InvalidRequestError) as e:
                call()
            assert e.value.param == "limit"
    assert s.customers.search(params={"query": "email:'a@x.test'", "limit": 100}).data == []


def test_a_refund_that_stays_pending_can_be_canceled(stripe_sandbox):
    _, s = stripe_sandbox()
    # Stripe's test card for asynchronous refunds: the charge succeeds, its refund is pending.
    pi = s.payment_intents.create(params={"amount": 3000, "currency": "usd", "payment_method": "pm_card_pendingRefund", "confirm": True})
    assert pi.status == "succeeded"
    refund = s.refunds.create(params={"payment_intent": pi.id})
    assert refund.status == "pending"
    canceled = s.refunds.cancel(refund.id)
    assert (canceled.status, canceled.failure_reason) == ("canceled", "merchant_request")
    assert canceled.failure_balance_transaction
    charge = s.charges.retrieve(pi.latest_charge)
    assert (charge.amount_refunded, charge.refunded) == (0, False)
    # A card refund succeeds at once, and a succeeded refund cannot be canceled.
    done = s.refunds.create(params={"payment_intent": s.payment_intents.create(params={"amount": 1000, "currency": "usd", "payment_method": "pm_card_visa", "confirm": True}).id})
    assert done.status == "succeeded"
    with pytest.raises(stripe.InvalidRequestError):
        s.refunds.cancel(done.id)
