"""Each twin's MCP door lists the vendor's own MCP tools: the same names, the same input
schemas and the same read-only hints as the vendor's server (tests/specs/mcp), so that an agent
configured for the real server works against a sandbox by changing its URL.

A vendor tool the twin does not serve is named in NOT_SERVED with the reason; everything else
in the vendor's listing must be served exactly."""

import asyncio
import json

import pytest

from conftest import ROOT
from test_mcp import twin

SPECS = ROOT / "tests" / "specs" / "mcp"


def vendor_tools(name):
    """The surface an agent configured for the vendor's hosted server sees."""
    def load(file):
        return json.loads((SPECS / file).read_text())["tools"]

    if name == "github":
        # https://api.githubcopilot.com/mcp/ serves the default toolsets; the twin serves the
        # `actions` and `gists` toolsets (`--toolsets=…,actions,gists`) too.
        return [t for t in load("github.json") if t.get("inDefaultToolsets") or {"actions", "gists"} & set(t.get("toolsets", []))]
    if name == "stripe":
        # The agent toolkit's per-resource tools, and mcp.stripe.com's generic ones; where a
        # name is in both (create_refund, search_stripe_documentation) the toolkit's schema.
        local = load("stripe.json")
        names = {t["name"] for t in local}
        return local + [t for t in load("stripe-remote.json") if t["name"] not in names]
    if name == "slack":
        return load("slack-official.json")
    return load(f"{name}.json")


NO_DIFFS = ("Linear's 88.3.0 schema has a `diff` query but no list of diffs and no mutation that makes, comments on, "
            "reviews, resolves or merges one: a sandbox's world cannot hold a diff")

# Vendor tools a twin leaves out, each with the reason.
NOT_SERVED = {
    "github": {},
    "slack": {},
    "stripe": {
        "stripe_implementation_planner": "Stripe's own guided-planning service (decision trees and integration guides it writes); "
        "not API behaviour, and a sandbox has nothing honest to answer with",
        "manage_stripe_accounts": "a link to the Stripe Dashboard's session settings; a sandbox has one seeded account and no Dashboard",
    },
    "linear": {
        **{name: NO_DIFFS for name in ["get_diff", "list_diffs", "get_diff_threads", "save_diff_comment", "resolve_diff_thread",
                                       "delete_diff_comment", "submit_diff_review", "merge_diff"]},
        "search_documentation": "searches Linear's public documentation site, which is not part of a workspace or its API",
    },
    "gmail": {},
}


@pytest.mark.parametrize("name", ["github", "slack", "stripe", "linear", "gmail"])
def test_the_vendors_tools_are_listed_with_the_vendors_schemas(pome_server, new_sandbox, name):
    sb = new_sandbox([name])

    async def go():
        async with twin(pome_server, sb.id, sb.token, name) as c:
            return (await c.session.list_tools()).tools

    served = {t.name: t for t in asyncio.run(go())}
    missing, differ = [], []
    for v in vendor_tools(name):
        if v["name"] in NOT_SERVED[name]:
            assert v["name"] not in served, f"{v['name']} is served; take it out of NOT_SERVED"
            continue
        t = served.get(v["name"])
        if t is None:
            missing.append(v["name"])
        elif t.inputSchema != v["inputSchema"] or bool(t.annotations and t.annotations.readOnlyHint) != v["readOnly"]:
            differ.append(v["name"])
    assert not missing, f"{name} does not list {missing}"
    assert not differ, f"{name} lists these with another input schema or read-only hint than the vendor's: {differ}"
    vendor = {v["name"] for v in vendor_tools(name)}
    assert set(NOT_SERVED[name]) <= vendor, "NOT_SERVED names only the vendor's tools"
