"""Issue #35, Stripe "Surface": an operation the twin does not serve answers Stripe's own 404
for an unknown request URL, so stripe-python raises InvalidRequestError (a 501 was a server
error the client could retry) and the message names the operation as not served by the twin."""

import pytest
import stripe


def test_an_unserved_operation_answers_stripes_unknown_url_404(new_sandbox):
    sb = new_sandbox(["stripe"])
    s = stripe.StripeClient(sb.token, base_addresses={"api": sb.url("stripe")}, max_network_retries=0)
    with pytest.raises(stripe.InvalidRequestError) as e:
        s.issuing.cards.list()
    assert e.value.http_status == 404
    assert e.value.user_message.startswith("Unrecognized request URL (GET: /v1/issuing/cards).")
    assert "not served by the Stripe twin" in e.value.user_message
