"""Issue #35, Stripe "3-D Secure cannot be skipped", through stripe-python: a PaymentIntent
whose card requires authentication stays in `requires_action` however often the server
confirms it, until the customer answers the test page its `next_action` names (Complete or
Fail); the Charges API declines such cards with `authentication_required`."""

import urllib.parse

import httpx
import pytest
import stripe


@pytest.fixture
def stripe_sandbox(new_sandbox):
    def make():
        sb = new_sandbox(["stripe"])
        url = sb.url("stripe")
        client = stripe.StripeClient(sb.token, base_addresses={"api": url, "files": url, "connect": url}, max_network_retries=0)
        return sb, client
    return make


def page_of(sb, intent):
    """The test page's URL for an intent's current attempt: `redirect_to_url.url`, or the same
    page named by `use_stripe_sdk.three_d_secure_2_source`."""
    na = intent.next_action
    if na.type == "redirect_to_url":
        return na.redirect_to_url.url
    kind = intent.object
    query = urllib.parse.urlencode({kind: intent.id, f"{kind}_client_secret": intent.client_secret, "source": na.use_stripe_sdk.three_d_secure_2_source})
    return f"{sb.url('stripe')}/3d_secure_2/hosted?{query}"


def answer(url, action):
    """The customer's browser: no API key, the button's form posted to the page."""
    return httpx.post(url, data={"action": action}, follow_redirects=False, timeout=10)


def test_confirming_again_keeps_requires_action_until_the_customer_completes_the_page(stripe_sandbox):
    sb, s = stripe_sandbox()
    pi = s.payment_intents.create(params={"amount": 1000, "currency": "usd", "payment_method": "pm_card_authenticationRequired",
                                          "confirm": True, "return_url": "https://shop.test/done"})
    assert (pi.status, pi.next_action.type) == ("requires_action", "redirect_to_url")
    again = s.payment_intents.confirm(pi.id, params={"return_url": "https://shop.test/done"})
    assert again.status == "requires_action" and again.latest_charge is None
    # The first attempt's link is spent once a new attempt starts.
    assert answer(pi.next_action.redirect_to_url.url, "complete").status_code == 400
    url = again.next_action.redirect_to_url.url
    page = httpx.get(url, timeout=10)
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert 'value="complete"' in page.text and 'value="fail"' in page.text
    done = answer(url, "complete")
    assert done.status_code == 302
    back = urllib.parse.urlsplit(done.headers["location"])
    assert back.netloc == "shop.test"
    assert dict(urllib.parse.parse_qsl(back.query)) == {"payment_intent": pi.id, "payment_intent_client_secret": pi.client_secret, "redirect_status": "succeeded"}
    pi = s.payment_intents.retrieve(pi.id, params={"expand": ["latest_charge"]})
    assert pi.status == "succeeded" and pi.next_action is None
    assert pi.latest_charge.payment_method_details.card.three_d_secure.result == "authenticated"
    assert [e.type for e in s.events.list(params={"type": "payment_intent.succeeded"}).data] == ["payment_intent.succeeded"]


def test_failing_the_page_leaves_the_intent_asking_for_a_new_payment_method(stripe_sandbox):
    sb, s = stripe_sandbox()
    pi = s.payment_intents.create(params={"amount": 1500, "currency": "eur", "payment_method": "pm_card_threeDSecure2Required", "confirm": True})
    assert (pi.status, pi.next_action.type) == ("requires_action", "use_stripe_sdk")
    r = answer(page_of(sb, pi), "fail")
    assert r.status_code == 200
    pi = s.payment_intents.retrieve(pi.id)
    assert (pi.status, pi.payment_method) == ("requires_payment_method", None)
    assert pi.last_payment_error.code == "payment_intent_authentication_failure"
    assert pi.last_payment_error.type == "invalid_request_error"
    assert pi.last_payment_error.payment_method.card.last4 == "3220"
    assert s.payment_intents.confirm(pi.id, params={"payment_method": "pm_card_visa"}).status == "succeeded"


def test_manual_capture_after_authentication_holds_the_amount(stripe_sandbox):
    sb, s = stripe_sandbox()
    pi = s.payment_intents.create(params={"amount": 4200, "currency": "usd", "payment_method": "pm_card_authenticationRequired",
                                          "capture_method": "manual", "confirm": True})
    assert answer(page_of(sb, pi), "complete").status_code == 200
    pi = s.payment_intents.retrieve(pi.id)
    assert (pi.status, pi.amount_capturable) == ("requires_capture", 4200)
    assert s.payment_intents.capture(pi.id).status == "succeeded"


def test_a_forged_client_secret_is_refused(stripe_sandbox):
    sb, s = stripe_sandbox()
    pi = s.payment_intents.create(params={"amount": 1000, "currency": "usd", "payment_method": "pm_card_authenticationRequired", "confirm": True})
    url = page_of(sb, pi).replace("_secret_", "_secret_forged")
    assert answer(url, "complete").status_code == 404
    assert s.payment_intents.retrieve(pi.id).status == "requires_action"


@pytest.mark.parametrize("source", ["tok_threeDSecure2Required", "tok_authenticationRequired", "pm_card_authenticationRequired"])
def test_charges_with_a_card_that_requires_3ds_are_declined(stripe_sandbox, source):
    sb, s = stripe_sandbox()
    with pytest.raises(stripe.CardError) as e:
        s.charges.create(params={"amount": 1000, "currency": "usd", "source": source})
    assert e.value.http_status == 402
    assert (e.value.code, e.value.error.decline_code) == ("authentication_required", "authentication_required")
    assert e.value.user_message == "Your card was declined. This transaction requires authentication."
    ch = s.charges.retrieve(e.value.error.charge)
    assert (ch.status, ch.failure_code, ch.paid) == ("failed", "authentication_required", False)


def test_a_setup_intent_is_saved_only_once_the_customer_completes_the_page(stripe_sandbox):
    sb, s = stripe_sandbox()
    cus = s.customers.create(params={"email": "sca@x.test"})
    si = s.setup_intents.create(params={"customer": cus.id, "payment_method": "pm_card_authenticationRequiredOnSetup", "confirm": True})
    assert si.status == "requires_action"
    si = s.setup_intents.confirm(si.id)
    assert si.status == "requires_action"
    assert answer(page_of(sb, si), "complete").status_code == 200
    si = s.setup_intents.retrieve(si.id)
    assert si.status == "succeeded"
    # Set up, the card pays off session without the customer.
    pi = s.payment_intents.create(params={"amount": 700, "currency": "usd", "customer": cus.id, "payment_method": si.payment_method, "confirm": True, "off_session": True})
    assert pi.status == "succeeded"


def test_the_checkout_helper_cannot_pay_with_a_card_that_requires_3ds(stripe_sandbox):
    sb, s = stripe_sandbox()
    price = s.prices.create(params={"currency": "usd", "unit_amount": 1250, "product_data": {"name": "Mug"}})
    cs = s.checkout.sessions.create(params={"mode": "payment", "success_url": "https://shop.test/ok", "line_items": [{"price": price.id, "quantity": 1}]})
    r = httpx.post(f"{sb.url('stripe')}/v1/test_helpers/checkout/sessions/{cs.id}/complete", data={"payment_method": "pm_card_authenticationRequired"},
                   headers={"Authorization": f"Bearer {sb.token}"}, timeout=10)
    assert r.status_code == 402
    err = r.json()["error"]
    assert (err["type"], err["code"], err["decline_code"], err["payment_intent"]["status"]) == ("card_error", "authentication_required", "authentication_required", "requires_action")
    cs = s.checkout.sessions.retrieve(cs.id)
    assert (cs.status, cs.payment_status) == ("open", "unpaid")
