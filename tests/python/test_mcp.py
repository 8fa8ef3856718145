"""The MCP door, driven with the official Python MCP SDK (`mcp`): every twin of a sandbox as an
MCP server at `/s/<id>/<twin>/mcp` (agent token), and the team's control MCP at `/mcp`
(`pme_` key) whose `run_task` provisions a sandbox for a task.

The cross-twin example (tasks/cross-twin-merge-report.md) runs entirely over MCP: run_task →
GitHub tools merge the green pull request → a Slack tool posts the decision → finalize."""

import asyncio
import json
import pathlib
import re
import urllib.error
import urllib.request

import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import McpError

from conftest import API_KEY, ROOT

TWINS = ["github", "slack", "stripe", "gmail", "linear"]
TASK = ROOT / "tasks" / "cross-twin-merge-report.md"
SEED = ROOT / "tasks" / "cross-twin-merge-report.seed.json"


def run(coro):
    return asyncio.run(coro)


class Mcp:
    """One MCP client session over Streamable HTTP with a bearer credential."""

    def __init__(self, url, token):
        self.url, self.token = url, token

    async def __aenter__(self):
        self.http = httpx.AsyncClient(headers={"Authorization": f"Bearer {self.token}"}, timeout=60)
        self.transport = streamable_http_client(self.url, http_client=self.http)
        read, write, _ = await self.transport.__aenter__()
        self.session_cm = ClientSession(read, write)
        self.session = await self.session_cm.__aenter__()
        self.init = await self.session.initialize()
        return self

    async def __aexit__(self, *exc):
        await self.session_cm.__aexit__(*exc)
        await self.transport.__aexit__(*exc)
        await self.http.aclose()

    # The tool's name is positional-only: a tool may take an argument called `name`.
    async def call(self, tool, /, **args):
        return await self.session.call_tool(tool, args)

    async def ok(self, tool, /, **args):
        """Call a tool that must succeed; its structured answer (or parsed text)."""
        r = await self.call(tool, **args)
        text = "".join(c.text for c in r.content if c.type == "text")
        assert not r.isError, f"{tool} failed: {text}"
        return r.structuredContent if r.structuredContent is not None else json.loads(text)


def control(server):
    return Mcp(f"{server.url}/mcp", API_KEY)


def twin(server, sandbox_id, token, name):
    return Mcp(f"{server.url}/s/{sandbox_id}/{name}/mcp", token)


def rpc(url, token, body, raw=False, version="2025-06-18"):
    """One raw JSON-RPC POST: (status, parsed body), or the body's bytes with `raw`."""
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if version:
        headers["MCP-Protocol-Version"] = version
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST", headers=headers)
    if raw:
        with urllib.request.urlopen(req) as resp:
            return resp.status, resp.read()
    try:
        with urllib.request.urlopen(req) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            return e.code, json.loads(raw)
        except ValueError:
            return e.code, raw.decode(errors="replace")


def described_tools(server, name):
    status, twins = server.api("GET", "/v1/twins")
    assert status == 200
    (d,) = [t["description"] for t in twins["data"] if t["name"] == name]
    d = json.loads(d) if isinstance(d, str) else d
    return d.get("tools", [])


# --- every twin -------------------------------------------------------------------------------

@pytest.mark.parametrize("name", TWINS)
def test_each_twin_lists_its_declared_tools_with_their_schemas(pome_server, new_sandbox, name):
    sb = new_sandbox([name])
    assert sb.body["per_twin"][name]["mcp_url"] == f"{sb.url(name)}/mcp"
    assert sb.body["agent_env"][f"POME_{name.upper()}_MCP_URL"] == f"{sb.url(name)}/mcp"

    async def go():
        async with twin(pome_server, sb.id, sb.token, name) as c:
            assert c.init.serverInfo.name == f"pome-{name}"
            assert c.init.protocolVersion == "2025-11-25"
            return (await c.session.list_tools()).tools

    tools = run(go())
    names = [t.name for t in tools]
    assert len(names) == len(set(names)), "tool names are unique"
    assert len(tools) >= 10, names
    by_name = {t.name: t for t in tools}
    for decl in described_tools(pome_server, name):
        t = by_name[decl["name"]]
        assert t.inputSchema == decl["input_schema"] or not decl["input_schema"], decl["name"]
        assert t.annotations.readOnlyHint == decl.get("read_only", False), decl["name"]


def test_vendor_tool_names_are_served(pome_server, new_sandbox):
    want = {
        "github": {"get_me", "get_issue", "list_issues", "create_issue", "update_issue", "add_issue_comment", "search_issues",
                   "get_pull_request", "list_pull_requests", "create_pull_request", "merge_pull_request", "get_pull_request_files",
                   "update_pull_request_branch", "list_branches", "list_commits", "get_commit", "get_file_contents", "search_repositories", "search_code",
                   "create_branch", "create_or_update_file", "push_files", "get_pull_request_status"},
        "slack": {"slack_list_channels", "slack_post_message", "slack_reply_to_thread", "slack_add_reaction", "slack_get_channel_history",
                  "slack_get_thread_replies", "slack_get_users", "slack_get_user_profile"},
        "gmail": {"create_draft", "list_drafts", "get_thread", "get_message", "search_threads", "label_thread", "unlabel_thread",
                  "label_message", "unlabel_message", "list_labels", "create_label", "apply_sensitive_thread_label", "apply_sensitive_message_label"},
    }
    for name, names in want.items():
        sb = new_sandbox([name])

        async def go():
            async with twin(pome_server, sb.id, sb.token, name) as c:
                return {t.name for t in (await c.session.list_tools()).tools}

        served = run(go())
        assert names <= served, f"{name} lacks {names - served}"


@pytest.mark.parametrize("name", TWINS)
def test_a_read_tool_on_every_twin_answers_the_apis_json_and_is_taped_as_mcp(pome_server, new_sandbox, name):
    sb = new_sandbox([name])
    preferred = {"github": ("get_me", {}), "slack": ("slack_list_channels", {}), "gmail": ("list_labels", {})}

    async def go():
        async with twin(pome_server, sb.id, sb.token, name) as c:
            tools = (await c.session.list_tools()).tools
            if name in preferred:
                tool, args = preferred[name]
            else:
                # The first read tool that needs no argument.
                tool = next(t.name for t in tools if t.annotations.readOnlyHint and not t.inputSchema.get("required"))
                args = {}
            r = await c.call(tool, **args)
            return tool, r

    tool, r = run(go())
    text = "".join(c.text for c in r.content if c.type == "text")
    assert not r.isError, text
    assert r.structuredContent == json.loads(text) or not isinstance(json.loads(text), dict)
    rows = sb.events(name)
    assert rows[-1]["via"] == "mcp" and rows[-1]["tool"] == tool, rows[-1]
    assert rows[-1]["status"] < 400


# A tool call with a protocol version header goes the door's fast path (host/server/src/mcp/
# fast.rs); without one, rmcp answers it (its default version). Both must write the same bytes.
SAME_BOTH_WAYS = {
    "github": [("get_issue", {"owner": "acme", "repo": "api", "issue_number": 1}), ("list_issues", {"owner": "acme", "repo": "api"}),
               ("get_label", {"owner": "acme", "repo": "api", "name": "no-such-label"})],
    "slack": [("slack_list_channels", {}), ("slack_get_channel_history", {"channel_id": "C_NOPE"})],
    "stripe": [("list_customers", {}), ("retrieve_balance", {}), ("cancel_subscription", {"subscription": "sub_missing"})],
    "linear": [("list_teams", {}), ("get_issue", {"id": "NOPE-1"})],
}


@pytest.mark.parametrize("name", sorted(SAME_BOTH_WAYS))
def test_the_fast_path_and_rmcp_write_the_same_answer(pome_server, new_sandbox, name):
    sb = new_sandbox([name])
    url = f"{sb.url(name)}/mcp"
    for n, (tool, args) in enumerate(SAME_BOTH_WAYS[name]):
        body = {"jsonrpc": "2.0", "id": f"call-{n}", "method": "tools/call", "params": {"name": tool, "arguments": args}}
        # Stripe names each request in its errors (`request_log_url`): the one part that differs.
        per_call = lambda answer: (answer[0], re.sub(rb"req_[0-9A-Za-z]+", b"req_", answer[1]))
        fast = per_call(rpc(url, sb.token, body, raw=True, version="2025-11-25"))
        slow = per_call(rpc(url, sb.token, body, raw=True, version=None))
        assert fast == slow, f"{tool}: {fast[1][:300]!r} != {slow[1][:300]!r}"
        assert json.loads(fast[1])["result"]["content"], fast
    rows = [r for r in sb.events(name) if r.get("via") == "mcp"]
    assert len(rows) == 2 * len(SAME_BOTH_WAYS[name]), "each call reached the twin once, either way"
    # Everything but when and how fast (Linear's rate-limit headers count down per call, and
    # Stripe's error bodies name the request).
    def recorded(row):
        kept = {k: v for k, v in row.items() if k not in ("seq", "ts", "request_id", "latency_ms", "response_headers")}
        return re.sub(r"req_[0-9A-Za-z]+", "req_", json.dumps(kept, sort_keys=True))
    for a, b in zip(rows[::2], rows[1::2]):
        assert recorded(a) == recorded(b)


def test_an_api_error_is_a_tool_result_with_the_apis_own_error(pome_server, new_sandbox):
    seed = json.loads(SEED.read_text())
    sb = new_sandbox(["github", "slack"], seed=seed)

    async def go():
        async with twin(pome_server, sb.id, sb.token, "github") as gh, twin(pome_server, sb.id, sb.token, "slack") as sl:
            missing = await gh.call("get_issue", owner="acme", repo="checkout", issue_number=999)
            refused = await sl.call("slack_post_message", channel_id="no-such-channel", text="hi")
            return missing, refused

    missing, refused = run(go())
    assert missing.isError and missing.structuredContent["message"] == "Not Found"
    assert refused.isError and refused.structuredContent == {"ok": False, "error": "channel_not_found"} | {
        k: v for k, v in refused.structuredContent.items() if k not in ("ok", "error")}


# --- bad input --------------------------------------------------------------------------------

def test_protocol_errors_are_json_rpc_errors_and_nothing_is_recorded(pome_server, new_sandbox):
    seed = json.loads(SEED.read_text())["github"]
    sb = new_sandbox(["github"], seed=seed)
    before = len(sb.events("github"))

    async def go():
        async with twin(pome_server, sb.id, sb.token, "github") as c:
            errors = []
            for tool, args in [("no_such_tool", {}), ("get_issue", {"owner": "acme", "repo": "checkout", "issue_number": "seven"}),
                               ("get_issue", {"owner": "acme"})]:
                with pytest.raises(McpError) as e:
                    await c.call(tool, **args)
                errors.append(e.value.error)
            return errors

    unknown, wrong_type, missing = run(go())
    assert unknown.code == -32602 and "no_such_tool" in unknown.message
    assert wrong_type.code == -32602 and "issue_number" in wrong_type.message
    assert missing.code == -32602 and "repo" in missing.message
    assert len(sb.events("github")) == before, "no request reached the twin"


def test_a_huge_argument_is_refused_before_it_reaches_the_twin(pome_server, new_sandbox):
    sb = new_sandbox(["github"])
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "create_issue", "arguments": {"owner": "o", "repo": "r", "title": "x" * (17 << 20)}}}
    status, answer = rpc(f"{sb.url('github')}/mcp", sb.token, body)
    assert status == 413, (status, str(answer)[:200])
    assert sb.events("github") == []


def test_another_sandboxs_token_and_a_closed_sandbox_are_refused(pome_server, new_sandbox):
    a, b = new_sandbox(["github"]), new_sandbox(["github"])
    ping = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    status, answer = rpc(f"{a.url('github')}/mcp", b.token, ping)
    assert status == 401 and answer["error"]["type"] == "invalid_auth", answer
    assert rpc(f"{a.url('github')}/mcp", a.token, ping)[0] == 200

    status, _ = a.finalize()
    assert status == 200
    status, answer = rpc(f"{a.url('github')}/mcp", a.token, ping)
    assert status == 410 and answer["error"]["type"] == "session_expired", answer
    assert a.events  # the tombstone answers like the REST door: a 410, not a 404


# --- the control MCP and the cross-twin example -----------------------------------------------

def test_the_control_mcp_needs_the_team_key(pome_server):
    status, answer = rpc(f"{pome_server.url}/mcp", "pme_not_a_key_of_this_server", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert status == 401 and answer["error"]["type"] == "invalid_auth"

    async def go():
        async with control(pome_server) as c:
            return {t.name for t in (await c.session.list_tools()).tools}

    assert run(go()) == {"run_task", "list_tasks", "validate_task", "create_sandbox", "list_sandboxes", "heartbeat",
                         "finalize", "stop_sandbox", "get_run", "list_runs", "usage", "fork_sandbox", "fork_run", "state_at", "save_seed"}


async def merge_and_report(server, sandbox, report=True):
    """The scripted agent of the cross-twin example, over the twins' MCP servers only."""
    sid, token = sandbox["sandbox_id"], sandbox["agent_token"]
    async with twin(server, sid, token, "github") as gh, twin(server, sid, token, "slack") as sl:
        prs = (await gh.call("list_pull_requests", owner="acme", repo="checkout", state="open"))
        prs = json.loads(prs.content[0].text)
        for pr in prs:
            n = pr["number"]
            status = await gh.ok("get_pull_request_status", owner="acme", repo="checkout", pullNumber=n)
            reviews = json.loads((await gh.call("get_pull_request_reviews", owner="acme", repo="checkout", pullNumber=n)).content[0].text)
            if status["state"] == "success" and any(r["state"] == "APPROVED" for r in reviews):
                merged = await gh.ok("merge_pull_request", owner="acme", repo="checkout", pullNumber=n, merge_method="merge")
                assert merged["merged"] is True
                text = f"Merged #{n}: {pr['title']}"
            else:
                text = f"Not merging #{n}: {pr['title']}"
            if report:
                posted = await sl.ok("slack_post_message", channel_id="eng-alerts", text=text)
                assert posted["ok"] is True


def test_an_agent_changes_code_with_github_mcp_servers_own_tools(pome_server, new_sandbox):
    """create_branch → create_or_update_file → push_files → create_pull_request →
    get_pull_request_status: the tools GitHub's MCP server composes from several REST calls."""
    sb = new_sandbox(["github"])

    async def go():
        async with twin(pome_server, sb.id, sb.token, "github") as gh:
            ref = await gh.ok("create_branch", owner="acme", repo="api", branch="docs")
            assert ref["ref"] == "refs/heads/docs"
            put = await gh.ok("create_or_update_file", owner="acme", repo="api", path="docs/intro.md", content="# Intro\n",
                              message="Add intro", branch="docs")
            assert put["content"]["path"] == "docs/intro.md"
            pushed = await gh.ok("push_files", owner="acme", repo="api", branch="docs", message="Two more",
                                 files=[{"path": "docs/a.md", "content": "a"}, {"path": "docs/b.md", "content": "b"}])
            assert pushed["object"]["sha"] != ref["object"]["sha"]
            # GitHub's server answers a created pull request as {id, url} (its MinimalResponse).
            pr = await gh.ok("create_pull_request", owner="acme", repo="api", title="Docs", head="docs", base="main")
            pr["number"] = int(pr["url"].rsplit("/", 1)[1])
            files = await gh.call("get_pull_request_files", owner="acme", repo="api", pullNumber=pr["number"])
            assert sorted(f["filename"] for f in json.loads(files.content[0].text)) == ["docs/a.md", "docs/b.md", "docs/intro.md"]
            status = await gh.ok("get_pull_request_status", owner="acme", repo="api", pullNumber=pr["number"])
            assert status["sha"] == pushed["object"]["sha"] and status["state"] == "pending"
            missing = await gh.call("push_files", owner="acme", repo="api", branch="nope", message="m", files=[{"path": "x", "content": "x"}])
            assert missing.isError and "nope" in missing.content[0].text

    run(go())
    rows = [r for r in sb.events("github") if r.get("via") == "mcp"]
    assert [r["tool"] for r in rows][:3] == ["create_branch", "create_or_update_file", "push_files"]


def test_the_cross_twin_example_runs_entirely_over_mcp(pome_server):
    source, seed = TASK.read_text(), json.loads(SEED.read_text())

    async def go(report):
        async with control(pome_server) as c:
            checked = await c.ok("validate_task", source=source, seed=seed)
            assert checked["valid"] is True, checked
            sandbox = await c.ok("run_task", source=source, seed=seed, agent_id="mcp-test")
            assert sandbox["twins"] == ["github", "slack"]
            assert "#eng-alerts" in sandbox["task"]["prompt"]
            for name in ("github", "slack"):
                assert sandbox["per_twin"][name]["mcp_url"].endswith(f"/s/{sandbox['sandbox_id']}/{name}/mcp")
            listed = await c.ok("list_sandboxes")
            assert sandbox["sandbox_id"] in [s["id"] for s in listed["data"]]
            await c.ok("heartbeat", sandbox_id=sandbox["sandbox_id"])
            await merge_and_report(pome_server, sandbox, report=report)
            verdict = await c.ok("finalize", sandbox_id=sandbox["sandbox_id"])
            run_ = await c.ok("get_run", run_id=verdict["run_id"])
            return sandbox, verdict, run_

    _, good, run_good = run(go(report=True))
    assert good["verdict"] == "pass" and good["score"] == 100, good
    assert all(r["evidence"] is not None for r in good["criteria_results"])
    mcp_rows = [r for t in run_good["per_twin"].values() for r in t["tape"] if r.get("via") == "mcp"]
    assert {r["tool"] for r in mcp_rows} >= {"merge_pull_request", "slack_post_message"}

    _, bad, _ = run(go(report=False))
    assert bad["verdict"] == "fail", bad
    for r in bad["criteria_results"]:
        assert r["status"] == ("failed" if r["twin"] == "slack" else "passed"), r


def test_a_rest_agent_and_an_mcp_agent_doing_the_same_work_grade_the_same(pome_server):
    source, seed = TASK.read_text(), json.loads(SEED.read_text())

    async def by_mcp():
        async with control(pome_server) as c:
            sandbox = await c.ok("run_task", source=source, seed=seed)
            await merge_and_report(pome_server, sandbox)
            return await c.ok("finalize", sandbox_id=sandbox["sandbox_id"])

    mcp_verdict = run(by_mcp())

    status, task = pome_server.api("POST", "/v1/tasks", {"id": "cross-twin-rest", "source": source, "seed": seed})
    assert status == 201, task
    status, sb = pome_server.api("POST", "/v1/sandboxes", {"task_id": "cross-twin-rest"})
    assert status == 201, sb

    def call(method, url, body=None):
        req = urllib.request.Request(url, data=None if body is None else json.dumps(body).encode(), method=method,
                                     headers={"Authorization": f"Bearer {sb['agent_token']}", "Content-Type": "application/json"})
        with urllib.request.urlopen(req) as resp:
            return json.load(resp)

    gh, sl = sb["per_twin"]["github"]["api_url"], sb["per_twin"]["slack"]["api_url"]
    for pr in call("GET", f"{gh}/repos/acme/checkout/pulls?state=open"):
        call("GET", f"{gh}/repos/acme/checkout/commits/{pr['head']['sha']}/status")
        call("GET", f"{gh}/repos/acme/checkout/pulls/{pr['number']}/reviews")
        call("PUT", f"{gh}/repos/acme/checkout/pulls/{pr['number']}/merge", {"merge_method": "merge"})
        call("POST", f"{sl}chat.postMessage", {"channel": "eng-alerts", "text": f"Merged #{pr['number']}: {pr['title']}"})
    status, rest_verdict = pome_server.api("POST", f"/v1/sandboxes/{sb['id']}/finalize")
    assert status == 200

    def graded(v):
        return [(r["criterion"] if "criterion" in r else r.get("text"), r["status"]) for r in v["criteria_results"]]

    assert rest_verdict["verdict"] == mcp_verdict["verdict"] == "pass"
    assert graded(rest_verdict) == graded(mcp_verdict)


def test_stop_sandbox_refuses_an_ungraded_sandbox_as_the_rest_door_does(pome_server):
    async def go():
        async with control(pome_server) as c:
            sb = await c.ok("create_sandbox", twins=["slack"])
            refused = await c.call("stop_sandbox", sandbox_id=sb["id"])
            assert refused.isError
            err = refused.structuredContent
            assert err["status"] == 409 and err["error"]["details"]["reason"] == "ungraded_session", err
            stopped = await c.ok("stop_sandbox", sandbox_id=sb["id"], confirm_discard=err["error"]["details"]["discard_token"])
            assert stopped["discarded"] is True
            gone = await c.call("heartbeat", sandbox_id=sb["id"])
            assert gone.isError and gone.structuredContent["status"] == 410
            usage = await c.ok("usage")
            assert set(usage) == {"sessions_used", "sessions_quota", "sessions_remaining"}
            runs = await c.ok("list_runs", limit=5)
            assert runs["object"] == "list"
            tasks = await c.ok("list_tasks")
            assert tasks["object"] == "list"
            with pytest.raises(McpError) as e:
                await c.call("list_runs", verdict="maybe")
            assert e.value.error.code == -32602

    run(go())


def test_mcp_config_prints_a_ready_client_configuration(pome_server, new_sandbox):
    import os
    import subprocess
    sb = new_sandbox(["github", "slack"])
    binary = os.environ.get("POME_BIN") or str(ROOT / "target" / "release" / "pome")
    out = subprocess.run([binary, "mcp-config", sb.id, "--control"], capture_output=True, text=True, check=True,
                         env=dict(os.environ, POME_API_URL=pome_server.url, POME_API_KEY=API_KEY)).stdout
    servers = json.loads(out)["mcpServers"]
    assert servers["pome-github"] == {"type": "http", "url": f"{sb.url('github')}/mcp", "headers": {"Authorization": f"Bearer {sb.token}"}}
    assert servers["pome-slack"]["url"] == f"{sb.url('slack')}/mcp"
    assert servers["pome"]["url"] == f"{pome_server.url}/mcp"

    async def go():
        # The configuration works as written: its URL and header open the twin's server.
        async with Mcp(servers["pome-slack"]["url"], servers["pome-slack"]["headers"]["Authorization"].removeprefix("Bearer ")) as c:
            return await c.ok("slack_list_channels")

    assert run(go())["ok"] is True


def test_the_control_mcp_forks_a_sandbox_and_a_run_and_reads_the_world_at_a_row(pome_server):
    """#37: fork_sandbox, fork_run and state_at take the operations' own request types, whose
    names match the REST door's."""
    async def go():
        async with control(pome_server) as c:
            tools = {t.name: t for t in (await c.session.list_tools()).tools}
            assert set(tools["fork_sandbox"].inputSchema["properties"]) == {"sandbox_id", "at", "agent_id", "agent_version", "group_id", "task_id"}
            assert tools["state_at"].annotations.readOnlyHint is True
            sb = await c.ok("create_sandbox", twins=["slack"])
            slack = twin(pome_server, sb["id"], sb["agent_token"], "slack")
            async with slack as s:
                for text in ("first", "second"):
                    await s.ok("slack_post_message", channel_id="eng-alerts", text=text)
            after_one = await c.ok("state_at", sandbox_id=sb["id"], at=1)
            now = await c.ok("state_at", sandbox_id=sb["id"])
            assert "first" in json.dumps(after_one) and "second" not in json.dumps(after_one)
            assert "second" in json.dumps(now)

            fork = await c.ok("fork_sandbox", sandbox_id=sb["id"], at={"slack": 1})
            assert fork["forked_from"] == {"sandbox_id": sb["id"], "at": {"slack": 1}}
            assert await c.ok("state_at", sandbox_id=fork["id"]) == after_one

            fin = await c.ok("finalize", sandbox_id=sb["id"])
            from_run = await c.ok("fork_run", run_id=fin["run_id"], at={"slack": 2})
            assert from_run["forked_from"]["run_id"] == fin["run_id"]
            assert await c.ok("state_at", run_id=fin["run_id"], at=1) == after_one

            refused = await c.call("fork_sandbox", sandbox_id=sb["id"])
            assert refused.isError and refused.structuredContent["status"] == 410, refused.structuredContent
            with pytest.raises(McpError) as e:
                await c.call("fork_sandbox", sandbox_id=fork["id"], when="now")
            assert e.value.error.code == -32602, "an argument off the schema reaches nothing"
            for sid in (fork["id"], from_run["id"]):
                await c.ok("finalize", sandbox_id=sid)

    run(go())


def test_the_control_mcp_saves_a_world_at_a_row_as_a_named_seed_that_boots_it(pome_server):
    """#37: save_seed writes a sandbox's or a run's world after a row as a named seed."""
    async def go():
        async with control(pome_server) as c:
            tools = {t.name: t for t in (await c.session.list_tools()).tools}
            assert set(tools["save_seed"].inputSchema["properties"]) == {"name", "sandbox_id", "run_id", "twin", "at"}
            assert tools["save_seed"].inputSchema["required"] == ["name"]
            sb = await c.ok("create_sandbox", twins=["slack"])
            async with twin(pome_server, sb["id"], sb["agent_token"], "slack") as s:
                for text in ("kept", "not yet"):
                    await s.ok("slack_post_message", channel_id="eng-alerts", text=text)
            after_one = await c.ok("state_at", sandbox_id=sb["id"], at=1)

            saved = await c.ok("save_seed", name="one-message", sandbox_id=sb["id"], at=1)
            assert saved["name"] == "one-message" and saved["twin"] == "slack"
            assert saved["saved_from"] == {"sandbox_id": sb["id"], "twin": "slack", "at": 1}
            booted = await c.ok("create_sandbox", twins=["slack"], seed="one-message")
            assert await c.ok("state_at", sandbox_id=booted["id"]) == after_one

            fin = await c.ok("finalize", sandbox_id=sb["id"])
            from_run = await c.ok("save_seed", name="whole-run", run_id=fin["run_id"])
            assert from_run["saved_from"]["at"] == 2

            refused = await c.call("save_seed", name="x", sandbox_id=sb["id"], run_id=fin["run_id"])
            assert refused.isError and refused.structuredContent["status"] == 422, refused.structuredContent
            await c.ok("finalize", sandbox_id=booted["id"])

    run(go())
