// stripe-node 23.1.0 against the Stripe twin, through a real `pome serve`: payments, manual
// capture, declines, refunds and over-refunds, idempotent retries, and webhooks verified
// with `stripe.webhooks.constructEvent`.
//
// Run: cd tests/node && npm install && node --test stripe.test.mjs
// POME_BIN names the host binary (default: target/release/pome); POME_TEST_TWINS_DIR serves
// a twin component under development.

import { test } from "node:test";
import assert from "node:assert/strict";
import Stripe from "stripe";
import { servePome, createSandbox } from "./server.mjs";

const pome = servePome("pme_node_stripe_tests_0123456789");

// stripe-node takes a host, port and protocol but no base path; its fetch client sends each
// request to the sandbox's `/s/<id>/stripe` prefix, everything else is the client's own.
async function sandbox(seed) {
  const body = { twins: ["stripe"] };
  if (seed) body.seed = seed;
  const sb = await createSandbox(pome, body);
  const twin = new URL(sb.per_twin.stripe.base_url);
  const fetchFn = (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    return fetch(`${twin.origin}${twin.pathname}${url.pathname}${url.search}`, init);
  };
  // The sandbox's own sk_test_ key, as a merchant's backend holds one.
  const stripe = new Stripe(sb.per_twin.stripe.api_key, { httpClient: Stripe.createFetchHttpClient(fetchFn), maxNetworkRetries: 0, host: twin.hostname, port: twin.port, protocol: "http" });
  const tape = async () => (await fetch(`${twin.href}/_pome/events`, { headers: { Authorization: `Bearer ${sb.agent_token}` } })).json();
  return { stripe, tape, sb };
}

test("a payment succeeds and its charge, balance transaction and event agree", async () => {
  const { stripe } = await sandbox();
  const pi = await stripe.paymentIntents.create({ amount: 2000, currency: "usd", payment_method: "pm_card_visa", confirm: true, expand: ["latest_charge"] });
  assert.equal(pi.status, "succeeded");
  assert.equal(pi.latest_charge.amount_captured, 2000);
  const txn = await stripe.balanceTransactions.retrieve(pi.latest_charge.balance_transaction);
  assert.deepEqual([txn.fee, txn.net], [88, 1912]);
  const events = await stripe.events.list({ type: "payment_intent.succeeded" });
  assert.deepEqual(events.data.map((e) => e.data.object.id), [pi.id]);
});

test("manual capture of part of an authorization", async () => {
  const { stripe } = await sandbox();
  const pi = await stripe.paymentIntents.create({ amount: 5000, currency: "usd", payment_method: "pm_card_visa", capture_method: "manual", confirm: true });
  assert.equal(pi.status, "requires_capture");
  const done = await stripe.paymentIntents.capture(pi.id, { amount_to_capture: 1200 });
  assert.deepEqual([done.status, done.amount_received], ["succeeded", 1200]);
});

test("a decline raises StripeCardError with its decline code", async () => {
  const { stripe } = await sandbox();
  await assert.rejects(
    stripe.paymentIntents.create({ amount: 1000, currency: "usd", payment_method: "pm_card_chargeDeclinedInsufficientFunds", confirm: true }),
    (e) => e instanceof Stripe.errors.StripeCardError && e.code === "card_declined" && e.decline_code === "insufficient_funds" && e.statusCode === 402,
  );
});

test("refunds stop at the charge's amount", async () => {
  const { stripe } = await sandbox();
  const pi = await stripe.paymentIntents.create({ amount: 3000, currency: "usd", payment_method: "pm_card_visa", confirm: true });
  await stripe.refunds.create({ payment_intent: pi.id, amount: 1000 });
  await assert.rejects(stripe.refunds.create({ charge: pi.latest_charge, amount: 2500 }), (e) => e instanceof Stripe.errors.StripeInvalidRequestError && e.code === "amount_too_large");
  await stripe.refunds.create({ charge: pi.latest_charge });
  await assert.rejects(stripe.refunds.create({ charge: pi.latest_charge }), (e) => e.code === "charge_already_refunded");
});

test("an idempotent retry replays and a changed one is refused", async () => {
  const { stripe } = await sandbox();
  const a = await stripe.customers.create({ email: "a@x.test" }, { idempotencyKey: "cus-1" });
  const b = await stripe.customers.create({ email: "a@x.test" }, { idempotencyKey: "cus-1" });
  assert.equal(a.id, b.id);
  await assert.rejects(stripe.customers.create({ email: "b@x.test" }, { idempotencyKey: "cus-1" }), (e) => e instanceof Stripe.errors.StripeIdempotencyError);
  const all = [];
  for await (const c of stripe.customers.list({ limit: 1 })) all.push(c.id);
  assert.deepEqual(all, [a.id]);
});

test("webhook deliveries verify with constructEvent and the endpoint's secret", async () => {
  const { stripe, tape } = await sandbox();
  const we = await stripe.webhookEndpoints.create({ url: "https://merchant.test/hook", enabled_events: ["charge.refunded"] });
  const pi = await stripe.paymentIntents.create({ amount: 1500, currency: "usd", payment_method: "pm_card_visa", confirm: true });
  await stripe.refunds.create({ payment_intent: pi.id });
  const rows = await tape();
  const deliveries = (Array.isArray(rows) ? rows : rows.events ?? rows.data).flatMap((r) => r.deliveries ?? []);
  assert.equal(deliveries.length, 1);
  const d = deliveries[0];
  const sig = Object.fromEntries(d.headers.map(([k, v]) => [k.toLowerCase(), v]))["stripe-signature"];
  const event = stripe.webhooks.constructEvent(d.body, sig, we.secret);
  assert.equal(event.type, "charge.refunded");
  assert.throws(() => stripe.webhooks.constructEvent(d.body, sig, "whsec_wrong"));
});

test("the client runs on the sandbox's sk_test_ key", async () => {
  const { stripe, sb } = await sandbox();
  assert.match(sb.per_twin.stripe.api_key, /^sk_test_/);
  assert.ok(sb.per_twin.stripe.api_key.endsWith(sb.agent_token));
  const c = await stripe.customers.create({ email: "key@x.test" });
  assert.match(c.id, /^cus_/);
});

test("a paused trial resumes into a paid period, and a preview shows the next one", async () => {
  const { stripe } = await sandbox();
  const clock = await stripe.testHelpers.testClocks.create({ frozen_time: 1767225600 });
  const cus = await stripe.customers.create({ email: "n@x.test", test_clock: clock.id });
  const price = await stripe.prices.create({ currency: "usd", unit_amount: 2000, recurring: { interval: "month" }, product_data: { name: "Team" } });
  let sub = await stripe.subscriptions.create({ customer: cus.id, items: [{ price: price.id }], trial_period_days: 14, trial_settings: { end_behavior: { missing_payment_method: "pause" } } });
  await stripe.testHelpers.testClocks.advance(clock.id, { frozen_time: 1768500000 });
  assert.equal((await stripe.subscriptions.retrieve(sub.id)).status, "paused");
  const pm = await stripe.paymentMethods.attach("pm_card_visa", { customer: cus.id });
  await stripe.customers.update(cus.id, { invoice_settings: { default_payment_method: pm.id } });
  sub = await stripe.subscriptions.resume(sub.id, { billing_cycle_anchor: "now" });
  assert.equal(sub.status, "active");
  const seat = await stripe.prices.create({ currency: "usd", unit_amount: 500, recurring: { interval: "month" }, product_data: { name: "Seat" } });
  const item = await stripe.subscriptionItems.create({ subscription: sub.id, price: seat.id, quantity: 3 });
  assert.equal(item.quantity, 3);
  // The seats added at the start of the period are prorated for all of it, on the next invoice.
  const preview = await stripe.invoices.createPreview({ customer: cus.id, subscription: sub.id });
  assert.equal(preview.amount_due, 2000 + 3 * 500 + 3 * 500);
  const next = preview.lines.data.filter((l) => !l.proration);
  assert.equal(next[0].period.start, sub.current_period_end);
  assert.deepEqual(preview.lines.data.filter((l) => l.proration).map((l) => l.amount), [3 * 500]);
  await stripe.subscriptionItems.del(item.id, { proration_behavior: "none" });
  assert.equal((await stripe.subscriptions.retrieve(sub.id)).items.data.length, 1);
});
