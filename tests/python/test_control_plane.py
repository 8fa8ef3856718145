"""The control plane as a script sees it: the `pome serve` binary, its API key from
POME_API_KEY, and sandboxes that count against usage until finalized."""


def test_a_sandbox_counts_against_usage_until_finalized(pome_server, new_sandbox):
    _, before = pome_server.api("GET", "/v1/usage")
    sb = new_sandbox(["github"])
    _, during = pome_server.api("GET", "/v1/usage")
    assert during["sessions_used"] == before["sessions_used"] + 1
    status, run = sb.finalize()
    assert status == 200, run
    assert run["run_id"].startswith("run_")
    _, after = pome_server.api("GET", "/v1/usage")
    assert after["sessions_used"] == before["sessions_used"]


def test_four_twins_are_too_many(pome_server):
    status, body = pome_server.api("POST", "/v1/sandboxes", {"twins": ["github", "slack", "x", "y"]})
    assert status == 422
    assert body["error"]["details"]["error"] == "too_many_twins"
