"""`pome run` over a suite (issue #38, items 1 and 3): several task files and directories,
several trials each, run in parallel with progress, summarised in one table, reported as
JUnit and JSON for CI, with an exit code that says whether every task passed."""

import json
import os
import pty
import select
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

from conftest import ROOT

POME = str(ROOT / "target" / "release" / "pome")
# Compiled twins are cached here across tests, as `make run` caches them.
DATA = str(ROOT / "target" / "pome-test-suites")
# Passes the cross-twin example; does nothing (and so fails) on every other task.
AGENT = ["sh", "-c", 'if [ "$POME_TASK_ID" = cross-twin-merge-report ]; then exec python3 examples/agents/merge_and_report.py; fi']


def task_files(*dirs):
    return sorted(p for d in dirs for p in (ROOT / d).rglob("*.md") if p.name.lower() != "readme.md")


def pome_run(tmp_path, *args, agent=AGENT, **kw):
    env = dict(os.environ, POME_LOG="warn")
    env.pop("POME_API_KEY", None)
    argv = [POME, "run", "--local", "--data", DATA, "--runs-dir", str(tmp_path / "runs"), *args, "--", *agent]
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900, **kw)


def test_a_suite_of_every_task_runs_three_trials_each_four_at_a_time_and_reports_for_ci(tmp_path):
    files = task_files("tasks", "tests/tasks-compat")
    assert len(files) >= 30, files
    junit, report = tmp_path / "out" / "junit.xml", tmp_path / "out" / "suite.json"
    out = pome_run(tmp_path, "tasks", "tests/tasks-compat", "-n", "3", "-j", "4", "--agent-version", "v1",
                   "--report", f"junit={junit}", "--report", f"json={report}")
    assert out.returncode == 1, f"some tasks fail, none errors\n{out.stdout}\n{out.stderr}"

    # Not a terminal: one plain line per trial as it ends, numbered against the whole suite.
    total = 3 * len(files)
    assert f"pome: {len(files)} tasks, {total} trials, 4 at a time" in out.stderr, out.stderr
    progress = [line for line in out.stderr.splitlines() if line.startswith("[")]
    assert len(progress) == total, out.stderr
    assert progress[-1].startswith(f"[{total}/{total}] "), progress[-1]
    assert sum("cross-twin-merge-report  trial" in line and "  pass  score 100" in line for line in progress) == 3, out.stderr

    # The table: a row per task, then the suite's line.
    rows = out.stdout.splitlines()
    assert rows[0].split()[:3] == ["task", "trials", "pass"], out.stdout
    assert len(rows) == len(files) + 2, out.stdout
    row = next(r for r in rows if r.startswith("cross-twin-merge-report "))
    assert "3/3 100% (44%–100%)" in row and "1.00 (k=3)" in row, row

    # JSON: the table as data, with every trial's run directory.
    data = json.loads(report.read_text())
    met, passed = sum(t["met"] for t in data["tasks"]), sum(t["passed"] for t in data["tasks"])
    assert (data["trials"], data["passed"], data["failed"], data["errored"]) == (total, passed, total - passed, 0)
    assert passed < total / 2, "a do-nothing agent fails most tasks"
    assert rows[-1].startswith(f"{met} of {len(files)} tasks passed every trial; {total} trials: {passed} passed, {total - passed} failed, 0 errored; "), rows[-1]
    assert data["agent_version"] == "v1" and data["ok"] is False and data["jobs"] == 4
    assert [t["task"] for t in data["tasks"]] == [f.stem for f in files]
    by_task = {t["task"]: t for t in data["tasks"]}
    good = by_task["cross-twin-merge-report"]
    assert (good["trials"], good["passed"], good["met"]) == (3, 3, True)
    assert good["pass_rate"]["low"] > 0.43 and good["pass_rate"]["high"] == 1.0
    for t in data["tasks"]:
        assert t["trials"] == 3 and t["errored"] == 0, t
        assert len({r["run_id"] for r in t["runs"]}) == 3
        groups = {json.loads((ROOT / r["dir"] / "meta.json").read_text())["group_id"] for r in t["runs"]}
        assert groups == {t["group_id"]}, "a task's trials are one trial group"
        for r in t["runs"]:
            assert (ROOT / r["dir"] / "verdict.json").exists(), r
        assert len(list((tmp_path / "runs" / t["task"]).glob("run_*"))) == 3
    missed = by_task["01-bug-happy-path"]["most_missed"]
    assert missed and missed[0]["missed"] == 3 and missed[0]["of"] == 3, missed

    # JUnit: a test case per task, a failure per failed trial with reasons and evidence.
    suite = ET.parse(junit).getroot()
    assert suite.tag == "testsuites" and suite.get("errors") == "0"
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert set(cases) == set(by_task)
    assert cases["cross-twin-merge-report"].findall("failure") == []
    failing = cases["01-bug-happy-path"].findall("failure")
    assert len(failing) == 3, ET.tostring(cases["01-bug-happy-path"])
    assert failing[0].get("message").startswith("trial 1 of 3: fail, score "), failing[0].get("message")
    assert "failed #" in failing[0].text and "run run_" in failing[0].text, failing[0].text
    assert any("evidence: " in f.text for c in cases.values() for f in c.findall("failure"))
    assert int(suite.get("failures")) == total - passed


def test_a_suite_where_every_trial_passes_exits_zero_and_its_junit_has_no_failure(tmp_path):
    junit = tmp_path / "junit.xml"
    out = pome_run(tmp_path, "tasks/cross-twin-merge-report.md", "-n", "2", "--report", f"junit={junit}")
    assert out.returncode == 0, out.stdout + out.stderr
    root = ET.parse(junit).getroot()
    assert root.get("failures") == "0" and root.get("tests") == "1"
    assert "pass rate 2/2 (100%" in ET.tostring(root, encoding="unicode")


def test_on_a_terminal_progress_is_drawn_live_a_line_per_task_and_an_overall_bar(tmp_path):
    leader, follower = pty.openpty()
    env = dict(os.environ, POME_LOG="warn", TERM="xterm-256color", COLUMNS="160")
    env.pop("POME_API_KEY", None)
    argv = [POME, "run", "--local", "--data", DATA, "--runs-dir", str(tmp_path / "runs"), "-n", "2", "-j", "2",
            "tasks", "tests/tasks-compat/bundled/01-bug-happy-path.md", "--", *AGENT]
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=follower, text=True)
    os.close(follower)
    drawn = b""
    while True:
        ready, _, _ = select.select([leader], [], [], 120)
        if not ready:
            break
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed: the run ended
            break
        if not chunk:
            break
        drawn += chunk
    table = proc.stdout.read()
    assert proc.wait(timeout=120) == 1, table
    text = drawn.decode("utf-8", "replace")
    assert "\x1b[" in text, "drawn in place with terminal escapes"
    assert "cross-twin-merge-report" in text and "01-bug-happy-path" in text, text
    assert "4/4 trials" in text and "left" in text and "elapsed" in text, text
    assert "✓ 2  ✗ 0" in text, "a task's line counts its passes and failures"
    assert "[1/4]" not in text, "no plain lines on a terminal"
    assert "cross-twin-merge-report" in table and "2 trials" not in table.splitlines()[0]


def test_what_a_suite_cannot_run_is_refused_before_any_trial_starts(tmp_path):
    broken = tmp_path / "tasks"
    (broken / "more").mkdir(parents=True)
    (broken / "fine.md").write_text((ROOT / "tasks/cross-twin-merge-report.md").read_text())
    (broken / "more" / "broken.md").write_text("# no sections at all\n")
    out = pome_run(tmp_path, str(broken))
    assert out.returncode == 5, out
    assert "broken.md" in out.stderr, out.stderr
    assert not (tmp_path / "runs").exists(), "nothing ran"

    (broken / "more" / "broken.md").unlink()
    (broken / "more" / "fine.md").write_text((ROOT / "tasks/cross-twin-merge-report.md").read_text())
    out = pome_run(tmp_path, str(broken))
    assert out.returncode == 5 and "are both task `fine`" in out.stderr, out.stderr

    out = pome_run(tmp_path, str(tmp_path / "nothing-here"))
    assert out.returncode == 5 and "no such task file or directory" in out.stderr, out.stderr

    out = pome_run(tmp_path, "tasks", "-j", "0")
    assert out.returncode == 5 and "-j 0" in out.stderr, out.stderr

    out = pome_run(tmp_path, "tasks", "--report", "xml=r.xml")
    assert out.returncode != 0 and "the kinds are junit and json" in out.stderr, out.stderr
    assert not (tmp_path / "runs").exists()


def test_ctrl_c_stops_every_running_agent_group_and_starts_nothing_more(tmp_path):
    pids = tmp_path / "pids"
    # The agent's own child is what must not outlive the suite: it records its pid and waits.
    agent = ["sh", "-c", f'sleep 120 & echo $! >> {pids}; wait']
    report = tmp_path / "suite.json"
    env = dict(os.environ, POME_LOG="warn")
    env.pop("POME_API_KEY", None)
    argv = [POME, "run", "--local", "--data", DATA, "--runs-dir", str(tmp_path / "runs"), "-n", "2", "-j", "2",
            "--report", f"json={report}", "tasks", "tests/tasks-compat/bundled/01-bug-happy-path.md", "--", *agent]
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    import signal
    import time
    deadline = time.monotonic() + 120
    while not (pids.exists() and len(pids.read_text().split()) == 2):
        assert time.monotonic() < deadline and proc.poll() is None, "two agents never started"
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, out + err
    assert "interrupted" in err, err

    def alive(pid):
        # A zombie (killed, not yet reaped by whoever inherited it) is not running.
        try:
            return (Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]) != "Z"
        except FileNotFoundError:
            return False
    assert not any(alive(int(p)) for p in pids.read_text().split()), "every agent's process group was stopped"
    assert len(pids.read_text().split()) == 2, "nothing more started after Ctrl-C"

    data = json.loads(report.read_text())
    assert (data["trials"], data["passed"], data["errored"]) == (4, 0, 4), data
    assert all("interrupted" in r["error"] for t in data["tasks"] for r in t["runs"]), data
    runs = tmp_path / "runs"
    assert not list(runs.rglob("meta.json")), "an interrupted trial is not a run"
