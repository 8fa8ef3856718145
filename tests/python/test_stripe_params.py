"""Issue #35, Stripe "Parameters at every depth", through stripe-python: a misspelt name, a
value of the wrong type or outside its enumeration is refused wherever it is nested, with
Stripe's message and the parameter's full path, and nothing is saved."""

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


def test_a_misspelt_nested_name_is_refused_not_dropped(stripe_sandbox):
    _, s = stripe_sandbox()
    with pytest.raises(stripe.InvalidRequestError) as e:
        s.customers.create(params={"email": "ada@x.test", "address": {"lin1": "1 Main St", "city": "Paris"}})
    assert (e.value.user_message, e.value.param, e.value.code) == ("Received unknown parameter: address[lin1]", "address[lin1]", "parameter_unknown")
    assert e.value.http_status == 400
    assert s.customers.list().data == []
    with pytest.raises(stripe.InvalidRequestError) as e:
        s.payment_intents.create(params={"amount": 500, "currency": "usd", "shipping": {"name": "Ada", "address": {"line1": "1 Main St", "postcode": "75001"}}})
    assert e.value.param == "shipping[address][postcode]"
    with pytest.raises(stripe.InvalidRequestError) as e:
        s.payment_intents.create(params={"amount": 500, "currency": "usd", "payment_method_options": {"card": {"request_3ds": "any"}}})
    assert e.value.param == "payment_method_options[card][request_3ds]"
    assert s.payment_intents.list().data == []


def test_wrong_types_and_values_are_refused_with_their_paths(stripe_sandbox):
    _, s = stripe_sandbox()
    with pytest.raises(stripe.InvalidRequestError) as e:
        s.payment_intents.create(params={"amount": 500, "currency": "usd", "automatic_payment_methods": {"enabled": "sometimes"}})
    assert (e.value.user_message, e.value.param) == ("Invalid boolean: sometimes", "automatic_payment_methods[enabled]")
    with pytest.raises(stripe.InvalidRequestError) as e:
        s.payment_intents.create(params={"amount": 500, "currency": "usd", "payment_method_options": {"card": {"setup_future_usage": "always"}}})
    assert e.value.param == "payment_method_options[card][setup_future_usage]"
    assert e.value.user_message == "Invalid payment_method_options[card][setup_future_usage]: must be one of none, off_session, or on_session"
    price = s.prices.create(params={"currency": "usd", "unit_amount": 500, "product_data": {"name": "T"}})
    with pytest.raises(stripe.InvalidRequestError) as e:
        s.checkout.sessions.create(params={"mode": "payment", "success_url": "https://shop.test/ok", "line_items": [{"price": price.id, "quantity": "two"}]})
    assert (e.value.user_message, e.value.param, e.value.code) == ("Invalid integer: two", "line_items[0][quantity]", "parameter_invalid_integer")
    with pytest.raises(stripe.InvalidRequestError) as e:
        s.customers.list(params={"created": {"gte": "yesterday"}})
    assert e.value.param == "created[gte]"


def test_documented_nested_parameters_pass_and_are_kept(stripe_sandbox):
    _, s = stripe_sandbox()
    cus = s.customers.create(params={"email": "ada@x.test", "address": {"line1": "1 Main St", "city": "Paris", "country": "FR"},
                                     "shipping": {"name": "Ada", "address": {"line1": "2 Side St"}}, "metadata": {"any_key": "v"}})
    assert (cus.address.line1, cus.shipping.address.line1, cus.metadata["any_key"]) == ("1 Main St", "2 Side St", "v")
    pi = s.payment_intents.create(params={"amount": 500, "currency": "usd", "automatic_payment_methods": {"enabled": True, "allow_redirects": "never"},
                                          "payment_method_options": {"card": {"request_three_d_secure": "challenge"}}})
    assert pi.automatic_payment_methods.allow_redirects == "never"
    assert s.customers.list(params={"created": {"gte": 0}, "limit": 3}).data[0].id == cus.id


def test_a_nested_hash_missing_a_name_it_requires_is_refused(stripe_sandbox):
    _, s = stripe_sandbox()
    with pytest.raises(stripe.InvalidRequestError) as e:
        s.payment_intents.create(params={"amount": 500, "currency": "usd", "shipping": {"address": {"line1": "1 Main St"}}})
    assert (e.value.user_message, e.value.param, e.value.code) == ("Missing required param: shipping[name].", "shipping[name]", "parameter_missing")
    assert s.payment_intents.list().data == []


def test_cancel_honours_prorate_invoice_now_and_cancellation_details(stripe_sandbox):
    _, s = stripe_sandbox()
    clock = s.test_helpers.test_clocks.create(params={"frozen_time": 1767225600})
    cus = s.customers.create(params={"email": "c@x.test", "test_clock": clock.id, "payment_method": "pm_card_visa",
                                     "invoice_settings": {"default_payment_method": "pm_card_visa"}})
    price = s.prices.create(params={"currency": "usd", "unit_amount": 1500, "recurring": {"interval": "month"}, "product_data": {"name": "Pro"}})
    sub = s.subscriptions.create(params={"customer": cus.id, "items": [{"price": price.id}]})
    s.test_helpers.test_clocks.advance(clock.id, params={"frozen_time": 1768521600})
    ended = s.subscriptions.cancel(sub.id, params={"prorate": True, "invoice_now": True,
                                                   "cancellation_details": {"feedback": "too_expensive", "comment": "Over budget"}})
    assert ended.status == "canceled"
    assert (ended.cancellation_details.feedback, ended.cancellation_details.comment) == ("too_expensive", "Over budget")
    final = s.invoices.retrieve(ended.latest_invoice)
    assert (final.total, final.amount_due, final.status) == (-774, 0, "paid")
    assert s.customers.retrieve(cus.id).balance == -774


def test_a_price_given_only_unit_amount_decimal_keeps_it_and_bills_by_it(stripe_sandbox):
    _, s = stripe_sandbox()
    price = s.prices.create(params={"currency": "usd", "unit_amount_decimal": "12.5", "recurring": {"interval": "month"}, "product_data": {"name": "Seats"}})
    assert (price.unit_amount, price.unit_amount_decimal) == (None, "12.5")
    cus = s.customers.create(params={"email": "d@x.test", "payment_method": "pm_card_visa", "invoice_settings": {"default_payment_method": "pm_card_visa"}})
    sub = s.subscriptions.create(params={"customer": cus.id, "items": [{"price": price.id, "quantity": 3}], "expand": ["latest_invoice"]})
    assert (sub.status, sub.latest_invoice.amount_paid) == ("active", 38)
    with pytest.raises(stripe.InvalidRequestError) as e:
        s.prices.create(params={"currency": "usd", "unit_amount": 1250, "unit_amount_decimal": "1250", "product_data": {"name": "Both"}})
    assert e.value.code == "parameters_exclusive"


def test_a_tiered_price_bills_by_its_tiers(stripe_sandbox):
    _, s = stripe_sandbox()
    price = s.prices.create(params={"currency": "usd", "billing_scheme": "tiered", "tiers_mode": "graduated", "recurring": {"interval": "month"},
                                    "product_data": {"name": "Seats"},
                                    "tiers": [{"up_to": 5, "unit_amount": 1000}, {"up_to": "inf", "unit_amount": 800, "flat_amount": 300}]})
    assert (price.billing_scheme, price.tiers_mode, price.unit_amount) == ("tiered", "graduated", None)
    assert [t.up_to for t in price.tiers] == [5, None]
    cus = s.customers.create(params={"email": "t@x.test", "payment_method": "pm_card_visa", "invoice_settings": {"default_payment_method": "pm_card_visa"}})
    sub = s.subscriptions.create(params={"customer": cus.id, "items": [{"price": price.id, "quantity": 7}], "expand": ["latest_invoice"]})
    assert (sub.status, sub.latest_invoice.amount_paid) == ("active", 6900)  # 5 × 10.00 + 2 × 8.00 + 3.00
    with pytest.raises(stripe.InvalidRequestError) as e:
        s.prices.create(params={"currency": "usd", "billing_scheme": "tiered", "tiers_mode": "volume", "product_data": {"name": "X"},
                                "tiers": [{"up_to": 5, "unit_amount": 1000}]})
    assert e.value.param == "tiers[0][up_to]"
