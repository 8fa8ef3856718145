"""pytest plugin (loaded through the `pytest11` entry point): a task file run as a test.

    @pytest.mark.pome_task("tasks/cross-twin-merge-report.md")
    def test_merge_and_report(pome_sandbox):
        gh = Github(base_url=pome_sandbox.twins["github"].api_url, auth=Auth.Token(pome_sandbox.agent_token))
        ...   # the test body is the agent

The `pome_sandbox` fixture creates the sandbox from the marker's task (its seed from the
`<stem>.seed.json` beside it); once the body returns, the sandbox is finalized and the test
fails, naming each failing criterion and its reason, unless the verdict is `pass`. A test
whose body raises fails with its own error; its sandbox is finalized all the same, so the run
is recorded and the slot freed. `@pytest.mark.pome_twins("github", seed=...)` gives a sandbox
without a task (nothing to grade; it is finalized at teardown).

The server and key come from `--pome-api-url`/`--pome-api-key`, else `POME_API_URL` and
`POME_API_KEY`, as for the CLI.
"""

from __future__ import annotations

import pathlib
from collections.abc import Iterator
from typing import Any

import pytest

from .client import Client, OpenSandbox
from .errors import PomeError

_OPEN = pytest.StashKey[OpenSandbox]()
_GRADED = pytest.StashKey[bool]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("pome", "pome sandboxes")
    group.addoption("--pome-api-url", default=None,
                    help="the pome server (default: POME_API_URL, else http://127.0.0.1:8080)")
    group.addoption("--pome-api-key", default=None, help="the team's API key (default: POME_API_KEY)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "pome_task(path, *, group_id=None, agent_id=None, agent_version=None): run the task file as this test: "
        "the pome_sandbox fixture boots from it, and the test fails unless its verdict is pass. A relative "
        "path is taken from the test file's directory, else from the rootdir.")
    config.addinivalue_line(
        "markers", "pome_twins(*twins, seed=None): the twins (and seed) of the pome_sandbox fixture, without a task")


@pytest.fixture(scope="session")
def pome_client(pytestconfig: pytest.Config) -> Iterator[Client]:
    """A `pome.Client` for the session's server and key."""
    try:
        client = Client(pytestconfig.getoption("pome_api_url"), pytestconfig.getoption("pome_api_key"))
    except PomeError as e:
        pytest.fail(f"pome: {e}", pytrace=False)
    with client:
        yield client


def _task_path(item: pytest.Item, path: Any) -> pathlib.Path:
    p = pathlib.Path(path)
    if p.is_absolute():
        return p
    beside = item.path.parent / p
    return beside if beside.exists() else item.config.rootpath / p


@pytest.fixture
def pome_sandbox(request: pytest.FixtureRequest, pome_client: Client) -> Iterator[OpenSandbox]:
    """An open sandbox (`.agent_token`, `.twins[name].api_url`, `.env`) from the test's
    `pome_task` or `pome_twins` marker."""
    item = request.node
    task = item.get_closest_marker("pome_task")
    twins = item.get_closest_marker("pome_twins")
    if task is not None:
        if len(task.args) != 1:
            pytest.fail("pome: @pytest.mark.pome_task takes one task file path", pytrace=False)
        sb = pome_client.sandbox(task=_task_path(item, task.args[0]), **task.kwargs)
    elif twins is not None:
        sb = pome_client.sandbox(list(twins.args), **twins.kwargs)
    else:
        pytest.fail("pome: the pome_sandbox fixture needs @pytest.mark.pome_task(path) or "
                    "@pytest.mark.pome_twins(*twins)", pytrace=False)
    with sb:
        item.stash[_OPEN] = sb
        item.stash[_GRADED] = task is not None
        yield sb
        # Leaving the block finalizes the sandbox, unless the test's call already did.


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    # A body that raises fails with its own error (the yield raises it); the fixture's
    # teardown then finalizes without judging.
    result = yield
    sb = item.stash.get(_OPEN, None)
    if sb is not None and item.stash.get(_GRADED, False):
        done = sb.finalize()
        item.user_properties.append(("pome_run_id", done.run_id))
        if done.verdict != "pass":
            pytest.fail(explain(sb), pytrace=False)
    return result


def explain(sb: OpenSandbox) -> str:
    """Why a graded sandbox did not pass: the verdict, then each criterion that kept it from
    passing with its reason."""
    done = sb.finalized
    assert done is not None
    task = sb.sandbox.task_id or "(no task)"
    score = "no score" if done.score is None else f"score {done.score}"
    lines = [f"pome: task {task}: verdict {done.verdict} ({score}, threshold {done.pass_threshold}), run {done.run_id}"]
    for c in done.criteria_results:
        if c.status in ("failed", "errored", "unmatched"):
            lines.append(f"  {c.status}: [{c.index}] {c.text}: {c.reason}")
    return "\n".join(lines)
