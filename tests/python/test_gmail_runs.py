"""Gmail tasks end to end through `pome run --local`: a scripted agent works task 22 over
plain HTTP with the environment a run gives it, the host grades it with the checks the Gmail
twin decides, and `pome replay` re-executes the tape on a fresh store byte for byte."""

import json
import os
import pathlib
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[2]
TASK = ROOT / "tests" / "tasks-compat" / "bundled" / "22-gmail-inbox-triage.md"

AGENT = r'''
import base64, json, os, sys, urllib.request
base = os.environ["POME_GMAIL_REST_URL"].rstrip("/")
tok = os.environ["POME_GMAIL_TOKEN"]
def call(method, path, body=None):
    req = urllib.request.Request(base + path, method=method, data=None if body is None else json.dumps(body).encode(),
                                 headers={"Authorization": f"Bearer {tok}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r:
        return json.load(r) if r.status != 204 else {}
found = call("GET", "/gmail/v1/users/me/messages?q=from%3Aalice%40example.com%20is%3Aunread")
mid = found["messages"][0]["id"]
full = call("GET", f"/gmail/v1/users/me/messages/{mid}?format=full")
if "no-label" not in sys.argv:
    call("POST", f"/gmail/v1/users/me/messages/{mid}/modify", {"addLabelIds": ["Label_follow_up"]})
to = "bob@example.com" if "wrong-recipient" in sys.argv else "alice@example.com"
raw = f"To: {to}\r\nSubject: Re: Production export is stuck\r\nIn-Reply-To: <support-001@example.com>\r\n\r\nThe issue is being investigated.\r\n"
call("POST", "/gmail/v1/users/me/drafts", {"message": {"raw": base64.urlsafe_b64encode(raw.encode()).decode(), "threadId": full["threadId"]}})
'''


def pome(*args, cwd, env_extra=None):
    env = dict(os.environ, POME_LOG="warn")
    env.pop("POME_API_KEY", None)
    if os.environ.get("POME_TEST_TWINS_DIR"):
        env["POME_TWINS_DIR"] = os.environ["POME_TEST_TWINS_DIR"]
    env.update(env_extra or {})
    return subprocess.run([str(ROOT / "target" / "release" / "pome"), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def run_task(tmp_path, *agent_args):
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    out = pome("run", "--local", "--data", str(tmp_path / "data"), "--runs-dir", str(tmp_path / "runs"), "-n", "1",
               str(TASK), "--", "python3", str(agent), *agent_args, cwd=tmp_path)
    runs = sorted((tmp_path / "runs" / "22-gmail-inbox-triage").glob("run_*"))
    assert runs, out.stdout + out.stderr
    verdict = json.loads((runs[-1] / "verdict.json").read_text())
    return runs[-1], {c["text"]: c["status"] for c in verdict["criteria_results"] if c["kind"] == "code"}


def test_a_good_agent_passes_every_code_criterion_and_its_tape_replays_identically(tmp_path):
    run_dir, results = run_task(tmp_path)
    assert results == {
        "Message msg_support has label Label_follow_up": "passed",
        "A draft addressed to alice@example.com exists": "passed",
    }
    replay = pome("replay", "--data", str(tmp_path / "data"), str(run_dir), cwd=tmp_path)
    assert "0 differ" in replay.stdout + replay.stderr, replay.stdout + replay.stderr


def test_an_agent_that_skips_the_label_fails_that_criterion_only(tmp_path):
    _, results = run_task(tmp_path, "no-label")
    assert results == {
        "Message msg_support has label Label_follow_up": "failed",
        "A draft addressed to alice@example.com exists": "passed",
    }


def test_an_agent_that_drafts_to_the_wrong_person_fails_the_draft_criterion(tmp_path):
    _, results = run_task(tmp_path, "wrong-recipient")
    assert results == {
        "Message msg_support has label Label_follow_up": "passed",
        "A draft addressed to alice@example.com exists": "failed",
    }
