"""The Python client (clients/python, installed into the test venv by `make test-python`)
against the real `pome serve`: the sync and async clients and their typed answers, the
`with pome.sandbox(...)` block with PyGithub and slack_sdk pointed at `sb.twins[...]`, errors
typed by the envelope's `type`, and the pytest plugin running a task file as a test that
passes and one that fails (in a pytest of its own, through `pytester`)."""

import asyncio
import json
import shutil

import httpx
import pytest
from github import Auth, Github
from slack_sdk import WebClient

import pome
from conftest import API_KEY, ROOT, serve

pytest_plugins = ["pytester"]

TASK = ROOT / "tasks" / "cross-twin-merge-report.md"
SEED = json.loads((ROOT / "tasks" / "cross-twin-merge-report.seed.json").read_text())


@pytest.fixture
def client(pome_server):
    with pome.Client(pome_server.url, API_KEY) as c:
        yield c


def merge_and_report(sb, report=True):
    """The agent of tasks/cross-twin-merge-report.md, through the vendors' own clients."""
    gh = Github(base_url=sb.twins["github"].api_url, auth=Auth.Token(sb.agent_token), retry=None,
                seconds_between_requests=0, seconds_between_writes=0)
    pr = gh.get_repo("acme/checkout").get_pull(7)
    assert pr.merge(merge_method="merge").merged
    if report:
        slack = WebClient(token=sb.agent_token, base_url=sb.twins["slack"].api_url, retry_handlers=[])
        assert slack.chat_postMessage(channel="eng-alerts", text=f"Merged #7: {pr.title}")["ok"]


# -- the sync client -----------------------------------------------------------------------

def test_sandbox_lifecycle_in_typed_answers(client):
    before = client.usage()
    assert isinstance(before, pome.Usage) and before.sessions_quota == 1000
    sb = client.create_sandbox(["github", "slack"], agent_id="py-client", agent_version="1")
    assert sb.id.startswith("ses_") and sb.session_id == sb.id and sb.state == "open"
    assert sb.twins == ["github", "slack"] and sb.primary_twin == "github" and sb.agent_id == "py-client"
    assert sb.per_twin["slack"].api_url.endswith(f"/s/{sb.id}/slack/api/")
    assert sb.agent_env["POME_AUTH_TOKEN"] == sb.agent_token
    assert sb.expires_at.tzinfo is not None and sb.created_at <= sb.idle_expires_at
    assert client.usage().sessions_used == before.sessions_used + 1

    assert client.get_sandbox(sb.id).agent_token == sb.agent_token
    listed = {s.id: s for s in client.list_sandboxes()}
    assert listed[sb.id].agent_token is None and listed[sb.id].per_twin["github"].api_url == sb.per_twin["github"].api_url
    beat = client.heartbeat(sb.id)
    assert isinstance(beat, pome.Heartbeat) and beat.idle_expires_at >= sb.created_at

    # Stopping an ungraded sandbox is refused with the token that confirms it.
    with pytest.raises(pome.ConflictError) as refused:
        client.stop_sandbox(sb.id)
    assert refused.value.status == 409 and refused.value.details["reason"] == "ungraded_session"
    gone = client.stop_sandbox(sb.id, confirm_discard=refused.value.details["discard_token"])
    assert gone == pome.Discarded(id=sb.id, session_id=sb.id, state="closed", discarded=True)
    with pytest.raises(pome.SessionExpiredError) as closed:
        client.heartbeat(sb.id)
    assert closed.value.status == 410 and closed.value.details["reason"] == "discarded"
    assert client.usage().sessions_used == before.sessions_used


def test_runs_tasks_seeds_and_twins(client):
    assert "github" in {t.name for t in client.list_twins()}
    client.put_seed("py-client-two-users", "github", {"users": [{"login": "ada", "type": "User"}]})
    assert pome.Seed(name="py-client-two-users", twin="github") in client.list_seeds()

    task = client.upload_task(TASK)
    assert (task.id, task.twins, task.class_, task.unbound) == ("cross-twin-merge-report", ["github", "slack"], "conformance", 0)
    assert [c.binding for c in task.criteria][0] == "github.pull_state" and task.version
    assert client.get_task(task.id).source == TASK.read_text()
    assert task.id in {t.id for t in client.list_tasks()}
    checked = client.validate_task("# No criteria\n\n## Prompt\n\nnothing\n")
    assert isinstance(checked, pome.TaskValidation) and not checked.valid and checked.errors

    # A sandbox from the stored task, finalized untouched: graded, and failing.
    sb = client.create_sandbox(task_id=task.id, group_id="py-client-runs", agent_version="py-client-v1")
    done = client.finalize(sb.id)
    assert (done.verdict, done.score, done.pass_threshold, done.tape_rows) == ("fail", 25, 100, 0)
    assert [c.status for c in done.criteria_results] == ["failed", "passed", "failed", "failed"]
    assert client.finalize(sb.id).run_id == done.run_id  # finalizing again answers the same run
    run = client.get_run(done.run_id)
    assert run.task == pome.TaskRef(id=task.id, version=task.version, title=task.title, pass_threshold=100)
    assert [c.text for c in run.failures][0] == "Pull request #7 in `acme/checkout` is merged"
    assert run.per_twin["github"].initial_state["repositories"][0]["name"] == "checkout"
    assert "FAIL" in client.run_report(done.run_id)

    # A sandbox from a named seed, finalized after one call: ungraded, with its tape.
    sb = client.create_sandbox("github", seed="py-client-two-users", group_id="py-client-runs")
    ada = httpx.get(sb.per_twin["github"].api_url + "/users/ada", headers={"Authorization": f"Bearer {sb.agent_token}"})
    assert ada.status_code == 200 and ada.json()["login"] == "ada"
    second = client.finalize(sb.id)
    assert second.verdict is None and second.tape_rows == 1
    tape = client.get_run(second.run_id).per_twin["github"].tape
    assert (tape[0].method, tape[0].path, tape[0].status, tape[0].fidelity) == ("GET", "/users/ada", 200, "semantic")

    page = client.list_runs(group_id="py-client-runs", limit=1)
    assert [r.id for r in page.data] == [second.run_id] and page.has_more and page.next_cursor == second.run_id
    assert [r.id for r in client.iter_runs(group_id="py-client-runs", page_size=1)] == [second.run_id, done.run_id]
    assert [r.verdict for r in client.iter_runs(group_id="py-client-runs", verdict="fail")] == ["fail"]
    graded = list(client.iter_runs(agent_version="py-client-v1"))
    assert [r.id for r in graded] == [done.run_id], "listed by the agent version recorded on the run"
    assert graded[0].score == 25 and [c["status"] for c in graded[0].criteria] == ["failed", "passed", "failed", "failed"]


def test_keys(client, pome_server):
    new = client.create_key()
    assert new.key.startswith("pme_") and new.key.startswith(new.prefix) and new.id.startswith("key_")
    listed = {k.id: k for k in client.list_keys()}
    assert listed[new.id].prefix == new.prefix and listed[new.id].revoked_at is None
    with pome.Client(pome_server.url, new.key) as other:
        assert other.usage().sessions_quota == 1000
        client.revoke_key(new.id)
        with pytest.raises(pome.InvalidAuthError):
            other.usage()
    assert client.list_keys() and new.id not in {k.id for k in client.list_keys() if k.revoked_at is None}


# -- configuration and errors ---------------------------------------------------------------

def test_configured_from_the_environment_like_the_cli(pome_server, monkeypatch):
    monkeypatch.setenv("POME_API_URL", pome_server.url + "/")
    monkeypatch.setenv("POME_API_KEY", API_KEY)
    with pome.Client() as c:
        assert c.api_url == pome_server.url and c.usage().sessions_quota == 1000
    monkeypatch.delenv("POME_API_KEY")
    with pytest.raises(pome.ConfigurationError, match="POME_API_KEY"):
        pome.Client()
    monkeypatch.delenv("POME_API_URL")
    # Nothing listens on port 9 (discard) here: the CLI's message, typed.
    with pome.Client("http://127.0.0.1:9", API_KEY) as c, pytest.raises(pome.APIConnectionError, match="POME_API_URL"):
        c.usage()


def test_errors_are_typed_by_the_envelope(client, pome_server):
    with pytest.raises(pome.NotFoundError) as missing:
        client.get_sandbox("ses_000000000000000000000000")
    e = missing.value
    assert isinstance(e, pome.APIError) and (e.status, e.type) == (404, "not_found") and e.request_id.startswith("req_")
    assert "no sandbox" in e.message and "HTTP 404" in str(e)

    with pytest.raises(pome.ValidationFailedError) as too_many:
        client.create_sandbox(["github", "slack", "stripe", "gmail"])
    assert too_many.value.status == 422
    assert too_many.value.details == {"error": "too_many_twins", "max": 3, "requested": 4}

    with pome.Client(pome_server.url, "pme_not_a_key_of_this_server_0000") as stranger:
        with pytest.raises(pome.InvalidAuthError) as denied:
            stranger.list_runs()
    assert denied.value.status == 401 and denied.value.type == "invalid_auth"


# -- the async client -----------------------------------------------------------------------

def test_async_client(pome_server):
    async def scenario():
        async with pome.AsyncClient(pome_server.url, API_KEY) as client:
            used = (await client.usage()).sessions_used
            async with client.sandbox(["slack"], seed={"slack": SEED["slack"]}, agent_id="async") as sb:
                assert (await client.usage()).sessions_used == used + 1
                async with httpx.AsyncClient() as http:
                    r = await http.post(sb.twins["slack"].api_url + "chat.postMessage",
                                        headers={"Authorization": f"Bearer {sb.agent_token}"},
                                        json={"channel": "eng-alerts", "text": "async hello"})
                    assert r.json()["ok"], r.text
                assert [row["action"] for row in await sb.events("slack")] == ["chat.postMessage"]
                assert (await sb.heartbeat()).id == sb.id
            assert (await client.usage()).sessions_used == used
            assert sb.run.agent_id == "async" and sb.run.verdict is None
            texts = [m["text"] for c in sb.run.per_twin["slack"].final_state["channels"] for m in c.get("messages", [])]
            assert "async hello" in texts
            with pytest.raises(pome.SessionExpiredError):
                await client.get_sandbox(sb.id)
            with pytest.raises(pome.ValidationFailedError):
                await client.create_sandbox(["github", "github"])
            listed = [r.id async for r in client.iter_runs(page_size=2)]
            assert sb.run.id in listed

    asyncio.run(scenario())


# -- the `with` block ----------------------------------------------------------------------

def test_with_block_hands_over_twins_and_leaves_the_run(pome_server, monkeypatch):
    monkeypatch.setenv("POME_API_URL", pome_server.url)
    monkeypatch.setenv("POME_API_KEY", API_KEY)
    with pome.sandbox(["github", "slack"], seed=SEED) as sb:
        assert set(sb.twins) == {"github", "slack"} and sb.env["POME_GITHUB_TOKEN"] == sb.agent_token
        merge_and_report(sb)
        assert sb.state("github")["repositories"][0]["pull_requests"][0]["merged"] is True
        assert sb.run is None
    run = sb.run
    assert isinstance(run, pome.Run) and run.session_id == sb.id and run.verdict is None
    assert "pulls.merge" in [row.action for row in run.per_twin["github"].tape]
    assert [row.action for row in run.per_twin["slack"].tape] == ["chat.postMessage"]

    # From the task: the same agent passes it.
    with pome.sandbox(task=TASK) as sb:
        merge_and_report(sb)
    assert sb.run.verdict == "pass" and sb.run.score == 100 and sb.run.task.id == "cross-twin-merge-report"
    assert sb.finalized.verdict == "pass" and sb.run.failures == []


def test_with_block_finalizes_when_the_block_raises(client):
    with pytest.raises(RuntimeError, match="the agent crashed"):
        with client.sandbox(["github"]) as sb:
            raise RuntimeError("the agent crashed")
    assert sb.run is not None and sb.run.session_id == sb.id
    with pytest.raises(pome.SessionExpiredError):
        client.get_sandbox(sb.id)


# -- branch and rewind (#37) ------------------------------------------------------------------

def github_calls(sb, *calls):
    """Each (method, path, body) against the sandbox's GitHub twin, with the agent token."""
    for method, path, body in calls:
        r = httpx.request(method, sb.twins["github"].api_url + path, json=body,
                          headers={"Authorization": f"Bearer {sb.agent_token}"})
        assert r.status_code < 300, r.text


def test_fork_a_sandbox_at_a_row_and_read_the_world_after_any_row(client):
    with client.sandbox(["github"], seed={"github": SEED["github"]}, agent_id="rewinder") as sb:
        assert sb.sandbox.forked_from is None
        github_calls(sb, ("GET", "/repos/acme/checkout", None),
                     ("PUT", "/repos/acme/checkout/pulls/7/merge", {"merge_method": "merge"}),
                     ("POST", "/repos/acme/checkout/issues", {"title": "after the merge"}))
        seeded, merged = sb.state("github", at=0), sb.state("github", at=2)
        assert client.sandbox_state(sb.id, "github", at=2) == merged
        assert client.sandbox_state(sb.id, at=0) == seeded  # the primary twin by default
        assert seeded["repositories"][0]["pull_requests"][0]["merged"] is False
        assert merged["repositories"][0]["pull_requests"][0]["merged"] is True
        assert client.sandbox_state(sb.id, "github") == sb.state("github")  # now

        d = client.sandbox_diff(sb.id, "github", from_=1, to=2)
        assert isinstance(d, pome.Diff) and (d.object, d.twin, d.from_, d.to) == ("diff", "github", 1, 2)
        assert d.diff and all(isinstance(c, pome.Change) for c in d.diff)
        assert any(c.path.endswith("merged") and (c.before, c.after) == (False, True) for c in d.diff), d.paths
        assert sb.diff("github", from_=2, to=2).diff == []
        assert sb.diff("github").to == 3  # default: from the seed to now

        # The fork: a sandbox of its own whose world is the parent's after row 2.
        with sb.fork(at={"github": 2}, agent_id="branch") as alt:
            assert alt.id != sb.id and alt.agent_token != sb.agent_token
            assert alt.sandbox.forked_from == pome.ForkedFrom(sandbox_id=sb.id, run_id=None, at={"github": 2})
            assert alt.sandbox.agent_id == "branch" and alt.twins["github"].api_url.endswith(f"/s/{alt.id}/github")
            assert alt.state("github") == merged
            assert [row.get("inherited", False) for row in alt.events("github")] == [True, True]
            github_calls(alt, ("POST", "/repos/acme/checkout/issues", {"title": "on the branch"}))
        assert alt.run.forked_from.sandbox_id == sb.id and alt.run.agent_id == "branch"
        tape = alt.run.per_twin["github"].tape
        assert [(r.method, r.inherited) for r in tape] == [("GET", True), ("PUT", True), ("POST", False)]
        assert sb.state("github", at=3) != alt.run.per_twin["github"].final_state  # the branches differ

        # A position past the tape: refused, typed.
        with pytest.raises(pome.ValidationFailedError) as past:
            client.fork_sandbox(sb.id, at={"github": 99})
        assert past.value.status == 422
        with pytest.raises(pome.ValidationFailedError):
            sb.state("github", at=99)
        with pytest.raises(pome.NotFoundError):
            client.sandbox_state(sb.id, "stripe")

    run = sb.run
    assert run.forked_from is None and not any(r.inherited for r in run.per_twin["github"].tape)
    assert isinstance(run.per_twin["github"].seed, str) and run.per_twin["github"].seed

    # A finished run, forked after its first row; read and diffed like a sandbox.
    forked = client.fork_run(run.id, at={"github": 1}, group_id="py-client-forks")
    assert isinstance(forked, pome.Sandbox) and forked.group_id == "py-client-forks"
    assert forked.forked_from == pome.ForkedFrom(sandbox_id=run.session_id, run_id=run.id, at={"github": 1})
    assert client.sandbox_state(forked.id, "github") == client.run_state(run.id, "github", at=1)
    assert client.run_state(run.id, "github") == run.per_twin["github"].final_state
    rd = client.run_diff(run.id, "github", from_=0, to=2)
    assert (rd.from_, rd.to) == (0, 2) and any(c.path.endswith("merged") for c in rd.diff)
    assert client.discard(forked.id).discarded
    with pytest.raises(pome.ValidationFailedError):
        client.fork_run(run.id, at={"github": 4})

    # After the block, `sb.fork()` forks the run (at its end by default).
    with sb.fork() as again:
        assert again.sandbox.forked_from.run_id == run.id and again.sandbox.forked_from.at == {"github": 3}
        assert again.state("github") == run.per_twin["github"].final_state
        again.discard()


def test_a_world_after_a_row_saved_as_a_named_seed_boots_that_world(client):
    with client.sandbox(["github"], seed={"github": SEED["github"]}) as sb:
        github_calls(sb, ("PUT", "/repos/acme/checkout/pulls/7/merge", {"merge_method": "merge"}),
                     ("POST", "/repos/acme/checkout/issues", {"title": "later"}))
        doc = client.sandbox_seed(sb.id, "github", at=1)
        assert doc["_meta"]["saved_from"] == {"sandbox_id": sb.id, "twin": "github", "at": 1}
        saved = client.put_seed("merged-checkout", "github", doc)
        assert (saved.name, saved.twin) == ("merged-checkout", "github")
        assert "merged-checkout" in [s.name for s in client.list_seeds()]
        with client.sandbox(["github"], seed={"github": "merged-checkout"}) as again:
            assert again.state("github") == sb.state("github", at=1)
            again.discard()
    assert client.run_seed(sb.run.id, "github")["_meta"]["saved_from"]["at"] == 2


def test_async_fork_and_state(pome_server):
    async def scenario():
        async with pome.AsyncClient(pome_server.url, API_KEY) as client:
            async with client.sandbox(["github"], seed={"github": SEED["github"]}) as sb:
                github_calls(sb, ("PUT", "/repos/acme/checkout/pulls/7/merge", {"merge_method": "merge"}))
                assert (await sb.state("github", at=0))["repositories"][0]["pull_requests"][0]["merged"] is False
                assert (await client.sandbox_diff(sb.id, "github")).to == 1
                async with await sb.fork(at={"github": 0}) as alt:
                    assert alt.sandbox.forked_from.at == {"github": 0}
                    assert await alt.state("github") == await client.sandbox_state(sb.id, "github", at=0)
            assert alt.run.forked_from.sandbox_id == sb.id and alt.run.per_twin["github"].tape == []
            forked = await client.fork_run(sb.run.id)
            assert forked.forked_from.at == {"github": 1}
            assert (await client.run_diff(sb.run.id, "github")).to == 1
            await client.discard(forked.id)

    asyncio.run(scenario())


def test_a_rebuild_past_the_teams_limit_is_rate_limited():
    """A team rebuilds `--team-rebuilds` worlds at once (2 by default; here 1, on a server of
    its own, so the race is not close); forks fired together past that are answered 429,
    typed, with when to retry."""
    with serve("--team-rebuilds", "1", "--quota", "1000") as server:
        async def scenario():
            async with pome.AsyncClient(server.url, API_KEY) as client:
                async with client.sandbox(["github"], seed={"github": SEED["github"]}) as sb:
                    github_calls(sb, *[("POST", "/repos/acme/checkout/issues", {"title": f"issue {i}"}) for i in range(5)])
                    out = await asyncio.gather(*[client.fork_sandbox(sb.id, at={"github": n % 6}) for n in range(12)],
                                               return_exceptions=True)
                    for made in out:
                        if isinstance(made, pome.Sandbox):
                            await client.discard(made.id)
                    limited = [e for e in out if isinstance(e, pome.RateLimitedError)]
                    assert limited and all(isinstance(r, (pome.Sandbox, pome.RateLimitedError)) for r in out), out
                    e = limited[0]
                    assert (e.status, e.type) == (429, "rate_limited") and e.retry_after and e.retry_after > 0

        asyncio.run(scenario())


# -- the pytest plugin ---------------------------------------------------------------------

AGENT_TESTS = '''
import pytest
from github import Auth, Github
from slack_sdk import WebClient


def agent(sb, report):
    gh = Github(base_url=sb.twins["github"].api_url, auth=Auth.Token(sb.agent_token), retry=None,
                seconds_between_requests=0, seconds_between_writes=0)
    gh.get_repo("acme/checkout").get_pull(7).merge()
    if report:
        WebClient(token=sb.agent_token, base_url=sb.twins["slack"].api_url).chat_postMessage(
            channel="eng-alerts", text="Merged #7: Fix rounding in tax calculation")


@pytest.mark.pome_task("tasks/cross-twin-merge-report.md", agent_id="plugin-test")
def test_merges_and_reports(pome_sandbox):
    agent(pome_sandbox, report=True)


@pytest.mark.pome_task("tasks/cross-twin-merge-report.md", agent_id="plugin-test")
def test_merges_silently(pome_sandbox):
    agent(pome_sandbox, report=False)
'''


def test_plugin_runs_a_task_file_as_a_test(pytester, pome_server, monkeypatch, client):
    (pytester.path / "tasks").mkdir()
    for name in ("cross-twin-merge-report.md", "cross-twin-merge-report.seed.json"):
        shutil.copy(ROOT / "tasks" / name, pytester.path / "tasks" / name)
    pytester.makepyfile(test_agent=AGENT_TESTS)
    monkeypatch.setenv("POME_API_URL", pome_server.url)
    monkeypatch.setenv("POME_API_KEY", API_KEY)
    used = client.usage().sessions_used

    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rf")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    failed = out[out.index("_ test_merges_silently _"):]
    assert "pome: task cross-twin-merge-report: verdict fail (score 50, threshold 100), run run_" in failed
    assert 'failed: [3] A message in "eng-alerts" contains "#7": no message in #eng-alerts contains "#7"' in failed
    assert 'failed: [4] A message in "eng-alerts" contains "merged"' in failed
    assert "[1] Pull request #7" not in failed  # it passed

    # Both runs are stored, graded, and no sandbox was left open.
    runs = [r for r in client.iter_runs(task="cross-twin-merge-report") if r.agent_id == "plugin-test"]
    assert sorted(r.verdict for r in runs) == ["fail", "pass"]
    assert client.usage().sessions_used == used


def test_plugin_options_and_a_body_that_raises(pytester, pome_server, monkeypatch, client):
    pytester.makepyfile(test_twins='''
import pytest

@pytest.mark.pome_twins("github")
def test_crashes(pome_sandbox):
    assert pome_sandbox.twins["github"].api_url.endswith("/github")
    raise RuntimeError("agent crashed on purpose")

def test_needs_a_marker(pome_sandbox):
    pass
''')
    # The server from options alone: the environment names a server that is not there.
    monkeypatch.setenv("POME_API_URL", "http://127.0.0.1:9")
    monkeypatch.delenv("POME_API_KEY", raising=False)
    used = client.usage().sessions_used
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--pome-api-url={pome_server.url}",
                                           f"--pome-api-key={API_KEY}")
    result.assert_outcomes(failed=1, errors=1)
    out = result.stdout.str()
    assert "RuntimeError: agent crashed on purpose" in out
    assert "needs @pytest.mark.pome_task(path) or @pytest.mark.pome_twins(*twins)" in out
    assert client.usage().sessions_used == used  # the crashed test's sandbox was finalized
