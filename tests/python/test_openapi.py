"""`/v1/openapi.json`: served without a key, a valid OpenAPI 3.1 document (by
openapi-spec-validator), and the check every `Server.api` answer goes through catches a
wrong answer."""

import json
import urllib.request

from openapi_spec_validator import validate

import openapi_check


def test_served_without_a_key_and_valid_openapi_3_1(pome_server):
    with urllib.request.urlopen(f"{pome_server.url}/v1/openapi.json") as resp:
        assert resp.status == 200
        assert resp.headers["content-type"].startswith("application/json")
        doc = json.load(resp)
    assert doc["openapi"].startswith("3.1.")
    validate(doc)  # raises, naming the problem, on an invalid document
    ops = {(m, p) for p, item in doc["paths"].items() for m in item if m in ("get", "post", "put", "patch", "delete")}
    # Both spellings of the sandbox routes, and the rest of the control plane.
    for m, p in [("post", "/v1/sandboxes"), ("post", "/v1/sessions"), ("get", "/v1/sessions/{id}/state"),
                 ("post", "/v1/sandboxes/{id}/finalize"), ("get", "/v1/runs"), ("get", "/v1/runs/{id}/report"),
                 ("delete", "/v1/keys/{id}"), ("post", "/v1/tasks/validate"), ("get", "/v1/twins")]:
        assert (m, p) in ops, (m, p)


def test_answers_are_checked_against_it(pome_server):
    # A real answer fits; the same answer broken does not.
    status, usage = pome_server.api("GET", "/v1/usage")
    assert status == 200
    doc = openapi_check.document(pome_server.url)
    assert openapi_check.problem(doc, "GET", "/v1/usage", 200, "application/json", json.dumps(usage)) is None
    broken = dict(usage, sessions_used="many")
    assert openapi_check.problem(doc, "GET", "/v1/usage", 200, "application/json", json.dumps(broken))
    assert openapi_check.problem(doc, "POST", "/v1/keys", 200, "application/json", "{}")
    assert openapi_check.problem(doc, "GET", "/v1/undescribed", 200, "application/json", "{}")
    status, err = pome_server.api("GET", "/v1/runs/run_nonexistent")
    assert status == 404 and err["error"]["type"] == "not_found"
