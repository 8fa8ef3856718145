"""The Stripe tasks of tasks-compat end to end through `pome run --local`: for each task a
scripted good agent passes every [code] criterion, and a scripted defective agent fails the
criterion its defect breaks (and only that one)."""

import json
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUNDLED = ROOT / "tests" / "tasks-compat" / "bundled"

AGENT = r'''
import base64, json, os, sys, urllib.error, urllib.parse, urllib.request
base = (os.environ.get("POME_STRIPE_API_BASE") or os.environ["POME_STRIPE_REST_URL"]).rstrip("/")
key = os.environ.get("POME_STRIPE_API_KEY") or os.environ["POME_AUTH_TOKEN"]
task, defect = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "")

def call(method, path, form=None, headers=None):
    data = None if form is None else urllib.parse.urlencode(form).encode()
    h = {"Authorization": f"Bearer {key}", "Content-Type": "application/x-www-form-urlencoded", **(headers or {})}
    try:
        with urllib.request.urlopen(urllib.request.Request(base + path, data=data, method=method, headers=h)) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)

def crypto_pi(confirm=True):
    form = [("amount", "10000"), ("currency", "usd"), ("payment_method_types[]", "crypto"), ("payment_method_data[type]", "crypto")]
    if confirm:
        form.append(("confirm", "true"))
    return call("POST", "/v1/payment_intents", form)[1]

if task == "10":
    crypto_pi(confirm=defect != "no-confirm")
elif task == "11":
    status, err = call("POST", "/v1/payment_intents", [("amount", "-5"), ("currency", "usd"), ("payment_method_types[]", "crypto")])
    assert status == 400 and err["error"]["type"] == "invalid_request_error", err
    if defect != "give-up":
        crypto_pi()
elif task == "12":
    pi = crypto_pi()
    if defect != "no-settle":
        call("POST", f"/v1/test_helpers/payment_intents/{pi['id']}/simulate_crypto_deposit", [("transaction_hash", "0xabc"), ("network", "base"), ("token_currency", "usdc")])
    call("GET", "/v1/events?type=payment_intent.succeeded")
    call("GET", "/v1/balance_transactions")
elif task == "13":
    url = base + "/x402/protected-resource"
    try:
        urllib.request.urlopen(urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"}))
        raise SystemExit("expected 402")
    except urllib.error.HTTPError as e:
        accept = json.load(e)["accepts"][0]
    if defect != "no-retry":
        pay = {"x402Version": 1, "scheme": "exact", "network": accept["network"], "payload": {"signature": "0x" + "ab" * 65, "authorization": {
            "from": "0x" + "11" * 20, "to": accept["payTo"], "value": accept["maxAmountRequired"], "validAfter": "0", "validBefore": "9999999999", "nonce": "0x" + "22" * 32}}}
        with urllib.request.urlopen(urllib.request.Request(url, headers={"Authorization": f"Bearer {key}", "X-PAYMENT": base64.b64encode(json.dumps(pay).encode()).decode()})) as r:
            assert r.status == 200
elif task == "14":
    headers = {} if defect == "blind-retry" else {"Idempotency-Key": "refund-ch_test_200-7500"}
    for _ in range(2):
        status, body = call("POST", "/v1/refunds", [("charge", "ch_test_200"), ("amount", "7500")], headers)
        if status == 200:
            break
elif task == "19":
    status, ch = call("GET", "/v1/charges/ch_test_200")
    assert ch["amount_refunded"] == ch["amount"], ch
    if defect == "re-refund":
        call("POST", "/v1/refunds", [("charge", "ch_test_200")])
'''


def pome(*args, cwd):
    env = dict(os.environ, POME_LOG="warn")
    env.pop("POME_API_KEY", None)
    if os.environ.get("POME_TEST_TWINS_DIR"):
        env["POME_TWINS_DIR"] = os.environ["POME_TEST_TWINS_DIR"]
    return subprocess.run([str(ROOT / "target" / "release" / "pome"), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def run_task(tmp_path, prefix, defect=""):
    task = next(p for p in sorted(BUNDLED.glob(f"{prefix}-stripe-*.md")))
    tmp_path.mkdir(parents=True, exist_ok=True)
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    out = pome("run", "--local", "--data", str(tmp_path / "data"), "--runs-dir", str(tmp_path / "runs"), "-n", "1",
               str(task), "--", "python3", str(agent), prefix, defect, cwd=tmp_path)
    runs = sorted((tmp_path / "runs" / task.stem).glob("run_*"))
    assert runs, out.stdout + out.stderr
    verdict = json.loads((runs[-1] / "verdict.json").read_text())
    return runs[-1], {c["text"]: c["status"] for c in verdict["criteria_results"] if c["kind"] == "code"}


CASES = [
    ("10", "no-confirm", {"A PaymentIntent exists with amount 10000": "passed", "The PaymentIntent status is requires_action": "failed"}),
    ("11", "give-up", {"A request was rejected with a Stripe \"invalid_request_error\" error": "passed", "A PaymentIntent exists with status \"requires_action\"": "failed"}),
    ("12", "no-settle", {"payment_intent.succeeded is emitted": "failed", "A charge exists with status \"succeeded\"": "failed"}),
    ("13", "no-retry", {"The first x402 request returns 402 Payment Required": "passed", "The retry includes X-PAYMENT and returns 200": "failed", "A PaymentIntent exists with status \"succeeded\"": "failed"}),
    ("14", "blind-retry", {"A refund exists on charge \"ch_test_200\"": "passed", "The number of refunds on charge \"ch_test_200\" is 1": "failed"}),
    # Task 19 is not here: its only [code] criterion is a negative tape check, which the grader
    # first evaluates on the seed (whose tape is empty, so it holds) and then reports as
    # `already_true_in_seed` whatever the agent did. The check itself decides both ways
    # (twins/stripe `tape_checks_read_the_requests_made`); the grader's seed rule is the lead's.
]


@pytest.mark.parametrize("prefix,defect,defective", CASES, ids=[c[0] for c in CASES])
def test_a_good_agent_passes_and_a_defective_one_fails_the_criterion_it_breaks(tmp_path, prefix, defect, defective):
    run_dir, good = run_task(tmp_path / "good", prefix)
    assert good == {k: "passed" for k in defective}, good
    if prefix in ("12", "14"):
        # Determinism: the good run's tape replays on a fresh store from its seed, byte for byte.
        replay = pome("replay", "--data", str(tmp_path / "good" / "data"), str(run_dir), cwd=tmp_path / "good")
        assert "0 differ" in replay.stdout + replay.stderr, replay.stdout + replay.stderr
    _, bad = run_task(tmp_path / "bad", prefix, defect)
    assert bad == defective, bad
