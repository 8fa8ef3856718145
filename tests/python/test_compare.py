"""`pome compare` end to end: `pome run` records trials of one task under two agent versions
against a real `pome serve` (v1 triages the issue fully and passes, v2 forgets the assignee
and fails), then `pome compare` contrasts them by agent version, by trial group and by run
directory, and every door gives the same numbers."""

import json
import os
import pathlib
import re
import shutil
import subprocess

import pytest

from conftest import API_KEY, ROOT, serve

TASKS = ROOT / "tests" / "browser" / "tasks"
TRIALS = 3

# The agent: label issue #1 `bug`, and (unless told to forget) assign it to alice.
AGENT = r'''
import json, os, sys, urllib.request
base = os.environ["POME_GITHUB_REST_URL"].rstrip("/")
token = os.environ["POME_AUTH_TOKEN"]
def call(path, body):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    urllib.request.urlopen(req).read()
call("/repos/acme/api/issues/1/labels", {"labels": ["bug"]})
if "forget-assignee" not in sys.argv:
    call("/repos/acme/api/issues/1/assignees", {"assignees": ["alice"]})
'''

LABELLED = "Issue #1 in `acme/api` has the `bug` label applied"
ASSIGNED = "Issue #1 in `acme/api` is assigned to `alice`"


def pome(*args, server, cwd):
    env = dict(os.environ, POME_LOG="warn", POME_API_URL=server.url, POME_API_KEY=API_KEY)
    binary = pathlib.Path(os.environ.get("POME_BIN") or ROOT / "target" / "release" / "pome")
    return subprocess.run([str(binary), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A server holding TRIALS runs of v1 (passing) and TRIALS of v2 (failing), each version in
    a runs directory of its own; yields (server, work dir, {version: group id})."""
    work = tmp_path_factory.mktemp("compare")
    shutil.copy(TASKS / "triage.md", work / "triage.md")
    shutil.copy(TASKS / "triage.seed.json", work / "triage.seed.json")
    (work / "agent.py").write_text(AGENT)
    with serve("--quota", "50") as server:
        groups = {}
        for version, extra, expect in [("v1", [], 0), ("v2", ["forget-assignee"], 1)]:
            r = pome("run", "triage.md", "-n", str(TRIALS), "--agent-version", version, "--runs-dir", f"runs-{version}",
                     "--", "python3", "agent.py", *extra, server=server, cwd=work)
            assert r.returncode == expect, r.stdout + r.stderr
            groups[version] = re.search(r"\b(grp_\S+)", r.stdout).group(1)
        yield server, work, groups


def test_two_agent_versions_compare_with_rates_the_difference_and_the_criterion_that_changed(recorded):
    server, work, _ = recorded
    r = pome("compare", "version:v1", "version:v2", server=server, cwd=work)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    row = next(line for line in out.splitlines() if line.startswith("triage "))
    # 3/3 → Wilson [44, 100]; 0/3 → [0, 56]; Newcombe's difference −100 [−100, −21].
    assert re.fullmatch(r"triage\s+3/3 100% \[44–100\]\s+0/3 0% \[0–56\]\s+-100 pts \[-100, -21\]\s+beyond noise", row), out
    assert "triage: criteria that changed most (A → B)" in out
    changed = out.split("criteria that changed most (A → B)\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert changed == [f"   -100 pts  3/3 → 0/3  {ASSIGNED}"], "only the assignee criterion changed outcome: " + out
    assert LABELLED not in out, "a criterion both versions pass did not change"
    assert out.rstrip().splitlines()[-1] == "1 of 1 task differs beyond noise: 1 worse (triage)"

    # The machine form: the same numbers, unrounded.
    j = json.loads(pome("compare", "--json", "version:v1", "version:v2", server=server, cwd=work).stdout)
    assert (j["a"], j["b"]) == ({"label": "version:v1", "trials": TRIALS}, {"label": "version:v2", "trials": TRIALS})
    t = j["tasks"][0]
    assert (t["task"], t["a"]["passed"], t["a"]["trials"], t["b"]["passed"]) == ("triage", 3, 3, 0)
    assert t["difference"]["delta"] == -1.0 and t["difference"]["beyond_noise"] is True
    assert abs(t["difference"]["high"] - -0.2059232824597783) < 1e-9
    assert [(c["text"], c["change"]) for c in t["criteria"]] == [(ASSIGNED, -1.0)]
    assert j["summary"]["worse"] == ["triage"] and j["summary"]["better"] == []


def test_fail_on_regression_exits_1_only_when_b_is_worse_beyond_noise(recorded):
    server, work, _ = recorded
    assert pome("compare", "--fail-on-regression", "version:v1", "version:v2", server=server, cwd=work).returncode == 1
    better = pome("compare", "--fail-on-regression", "version:v2", "version:v1", server=server, cwd=work)
    assert better.returncode == 0, better.stderr
    assert better.stdout.rstrip().splitlines()[-1] == "1 of 1 task differs beyond noise: 1 better (triage)"
    same = pome("compare", "--fail-on-regression", "v1", "v1", server=server, cwd=work)
    assert same.returncode == 0
    assert same.stdout.rstrip().splitlines()[-1] == "no difference beyond noise (1 task compared)"
    assert "criteria that changed most" not in same.stdout


def test_trial_groups_compare_by_id_bare_or_prefixed(recorded):
    server, work, groups = recorded
    bare = pome("compare", groups["v1"], groups["v2"], server=server, cwd=work)
    assert bare.returncode == 0, bare.stderr
    assert f"A group:{groups['v1']}" in bare.stdout and f"B group:{groups['v2']}" in bare.stdout
    prefixed = pome("compare", f"group:{groups['v1']}", f"group:{groups['v2']}", server=server, cwd=work)
    by_version = pome("compare", "version:v1", "version:v2", server=server, cwd=work)
    # The same rows but for the header naming the sides (and the column widths it sets).
    strip = lambda out: [" ".join(line.split()) for line in out.splitlines() if not line.startswith("task ")]
    assert strip(bare.stdout) == strip(prefixed.stdout) == strip(by_version.stdout), "one group per version: the same comparison"


def test_run_directories_compare_offline_like_the_server_runs(recorded):
    server, work, _ = recorded
    runs_v1 = list((work / "runs-v1" / "triage").iterdir())
    assert len(runs_v1) == TRIALS and all((d / "meta.json").exists() and (d / "verdict.json").exists() for d in runs_v1)
    # No server is needed: the directories hold the verdicts.
    env_free = dict(os.environ, POME_LOG="warn")
    env_free.pop("POME_API_KEY", None)
    binary = pathlib.Path(os.environ.get("POME_BIN") or ROOT / "target" / "release" / "pome")
    r = subprocess.run([str(binary), "compare", "--json", "runs-v1", "dir:runs-v2"], cwd=work, env=env_free, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    by_dir = json.loads(r.stdout)
    by_version = json.loads(pome("compare", "--json", "version:v1", "version:v2", server=server, cwd=work).stdout)
    assert (by_dir["a"]["label"], by_dir["b"]["label"]) == ("dir:runs-v1", "dir:runs-v2")
    assert by_dir["tasks"] == by_version["tasks"] and by_dir["summary"] == by_version["summary"]
    # One run directory alone is a side of one trial.
    one = json.loads(subprocess.run([str(binary), "compare", "--json", str(runs_v1[0]), "runs-v2"], cwd=work, env=env_free, capture_output=True, text=True, timeout=60).stdout)
    assert (one["tasks"][0]["a"]["passed"], one["tasks"][0]["a"]["trials"]) == (1, 1)


def test_a_side_that_names_nothing_is_a_usage_error_naming_it(recorded):
    server, work, _ = recorded
    r = pome("compare", "version:v1", "version:nobody", server=server, cwd=work)
    assert r.returncode == 5 and "version:nobody has no graded runs" in r.stderr, r.stderr
    r = pome("compare", "version:v1", "version:v2", "--task", "other", server=server, cwd=work)
    assert r.returncode == 5 and "has no graded runs of other" in r.stderr, r.stderr
