"""Issue #35, Linear: what a raw GraphQL client meets past the happy path. Limits that limit
(Linear's rate limits per credential, over the sandbox's clock), no invented values, accents.
Every answer is checked against Linear's schema with graphql-core."""

from test_linear_graphql import Linear, check_response, task_seed

HEAVY = "{ teams(first: 16) { nodes { id issues(first: 250) { nodes { id title priority } } } } }"


def lower(headers):
    return {k.lower(): v for k, v in headers.items()}


def test_complexity_is_the_querys_and_runs_out_into_ratelimited(new_sandbox):
    sb = new_sandbox(["linear"], seed=task_seed("24-linear-issue-triage.seed.json"))
    gql = Linear(sb)
    status, headers, body = gql.raw("{ viewer { id name } }")
    assert status == 200, body
    h = lower(headers)
    assert h["x-complexity"] == "2"
    assert h["x-ratelimit-complexity-limit"] == "3000000" and h["x-ratelimit-requests-limit"] == "5000"
    left = int(h["x-ratelimit-complexity-remaining"])
    for n in range(400):
        status, headers, body = gql.raw(HEAVY)
        h = lower(headers)
        if status != 200:
            break
        assert 5000 < int(h["x-complexity"]) <= 10000
        now = int(h["x-ratelimit-complexity-remaining"])
        assert now < left, (now, left)
        left = now
    else:
        raise AssertionError("3,000,000 points never ran out")
    assert status == 400
    assert body["errors"][0]["extensions"]["code"] == "RATELIMITED" and body["errors"][0]["extensions"]["type"] == "ratelimited"
    assert int(h["x-ratelimit-complexity-remaining"]) < int(h["x-complexity"])
    # What is left still serves a small query, and rateLimitStatus says what the headers say.
    q = "{ rateLimitStatus { kind limits { type allowedAmount remainingAmount requestedAmount reset period } } }"
    status, headers, body = gql.raw(q)
    assert status == 200, body
    check_response(q, body["data"])
    h = lower(headers)
    s = body["data"]["rateLimitStatus"]
    assert s["kind"] == "api key"
    limits = {l["type"]: l for l in s["limits"]}
    assert limits["requestLimit"]["remainingAmount"] == float(h["x-ratelimit-requests-remaining"])
    assert limits["complexityLimit"]["remainingAmount"] == float(h["x-ratelimit-complexity-remaining"])
    assert limits["complexityLimit"]["reset"] == float(h["x-ratelimit-complexity-reset"])
    assert limits["complexityLimit"]["requestedAmount"] == float(h["x-complexity"])


def test_a_seeded_oauth_token_has_its_own_smaller_complexity_budget(new_sandbox):
    seed = task_seed("24-linear-issue-triage.seed.json")
    seed["tokens"].append({"token": "lin_oauth_seeded_app", "type": "oauth", "user": "dev@pome-twin.test"})
    sb = new_sandbox(["linear"], seed)
    status, headers, _ = Linear(sb, token="Bearer lin_oauth_seeded_app").raw("{ viewer { id } }")
    h = lower(headers)
    assert status == 200 and h["x-ratelimit-complexity-limit"] == "2000000" and h["x-ratelimit-requests-remaining"] == "4999"
    # The agent's own key has spent nothing.
    _, headers, _ = Linear(sb).raw("{ viewer { id } }")
    assert lower(headers)["x-ratelimit-requests-remaining"] == "4999"


def test_a_page_over_250_is_refused_not_clamped(new_sandbox):
    gql = Linear(new_sandbox(["linear"], seed=task_seed("24-linear-issue-triage.seed.json")))
    status, _, body = gql.raw("{ issues(first: 251) { nodes { id } } }")
    assert body["errors"][0]["extensions"]["code"] == "INVALID_INPUT", body
    assert "first must not be greater than 250" in body["errors"][0]["message"]
    assert gql("{ issues(first: 250) { nodes { id } } }")["issues"]["nodes"]
