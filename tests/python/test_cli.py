"""The `pome` command line against a running server, and `pome twin start` on its own."""

import json
import os
import re
import subprocess
import urllib.request

from conftest import API_KEY, ROOT

POME = str(ROOT / "target" / "release" / "pome")


def pome(server, *args):
    env = dict(os.environ, POME_API_URL=server.url, POME_API_KEY=API_KEY, POME_LOG="warn")
    return subprocess.run([POME, *args], capture_output=True, text=True, env=env, timeout=60)


def test_sandbox_create_list_stop_and_usage(pome_server):
    created = pome(pome_server, "sandbox", "create", "--twin", "github", "--format", "json")
    assert created.returncode == 0, created.stderr
    sb = json.loads(created.stdout)
    assert sb["id"].startswith("ses_") and sb["agent_token"]

    listed = pome(pome_server, "session", "list")  # the older spelling is an alias
    assert sb["id"] in listed.stdout

    env_format = pome(pome_server, "sandbox", "create", "--twin", "github", "--format", "env")
    assert "export POME_GITHUB_REST_URL=" in env_format.stdout
    assert "export POME_AUTH_TOKEN='tok_" in env_format.stdout, "values are quoted for the shell"
    assert "export POME_GITHUB_TOKEN='tok_" in env_format.stdout, "the twin's own declared variables come too"

    refused = pome(pome_server, "sandbox", "stop", sb["id"])
    assert refused.returncode == 2, refused
    assert "--discard" in refused.stderr

    stopped = pome(pome_server, "sandbox", "stop", sb["id"], "--discard")
    assert stopped.returncode == 0, stopped.stderr
    assert sb["id"] not in pome(pome_server, "sandbox", "list").stdout

    usage = pome(pome_server, "usage")
    assert usage.returncode == 0 and "of 1000" in usage.stdout


def test_cli_exit_codes_for_auth_and_usage_errors(pome_server):
    env = dict(os.environ, POME_API_URL=pome_server.url, POME_API_KEY="pme_not_a_key")
    bad_key = subprocess.run([POME, "usage"], capture_output=True, text=True, env=env, timeout=60)
    assert bad_key.returncode == 3, bad_key
    too_many = pome(pome_server, "sandbox", "create", "--twin", "a", "--twin", "b", "--twin", "c", "--twin", "d")
    assert too_many.returncode == 5, too_many
    assert "too_many_twins" in too_many.stderr


def test_a_local_twin_serves_at_the_root_and_records_its_tape(tmp_path):
    proc = subprocess.Popen([POME, "twin", "start", "github", "--port", "0", "--data", str(tmp_path)],
                            stdout=subprocess.PIPE, text=True, env=dict(os.environ, POME_LOG="warn"))
    try:
        url = token = None
        for line in proc.stdout:
            if m := re.match(r"github twin at (http://\S+)", line):
                url = m.group(1)
            if m := re.match(r"token: (\S+)", line):
                token = m.group(1)
            if url and token:
                break
        req = urllib.request.Request(f"{url}/repos/acme/api", headers={"Authorization": f"token {token}"})
        with urllib.request.urlopen(req) as resp:
            repo = json.load(resp)
        assert repo["full_name"] == "acme/api"
        assert repo["url"].startswith(url), "links are built from the local base URL"
        with urllib.request.urlopen(f"{url}/_pome/events") as resp:
            rows = json.load(resp)
        assert [r["path"] for r in rows] == ["/repos/acme/api"]
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_pome_checks_names_the_routes_a_twin_only_stores(tmp_path):
    """`pome checks` tells a served route from one that only keeps what it is sent (#35): the
    twins' declared surface, read from the components themselves."""
    out = subprocess.run([POME, "checks", "gmail", "--data", str(tmp_path)], capture_output=True, text=True,
                         env=dict(os.environ, POME_LOG="warn"), timeout=120)
    assert out.returncode == 0, out.stderr
    m = re.search(r"surface: (\d+) routes, (\d+) served, (\d+) shape-only", out.stdout)
    assert m, out.stdout
    total, served, shape = map(int, m.groups())
    assert total == served + shape and shape >= 15 and served > shape
    assert re.search(r"shape-only\s+\S+\s+/gmail/v1/users/\{userId\}/settings/cse/keypairs", out.stdout), out.stdout
    # A fully served route is not listed as shape-only.
    assert not re.search(r"shape-only\s+\S+\s+/gmail/v1/users/\{userId\}/messages\s", out.stdout), out.stdout


def test_pome_forks_a_sandbox_and_a_run_and_prints_the_world_at_a_row(pome_server, new_sandbox):
    """#37 on the CLI: `pome sandbox fork`, `pome state` (a world, or a diff with --from) and
    `pome runs fork`."""
    sb = new_sandbox(["github"])
    for title in ("first", "second"):
        req = urllib.request.Request(f"{sb.url('github')}/repos/acme/api/issues", data=json.dumps({"title": title}).encode(), method="POST",
                                     headers={"Authorization": f"Bearer {sb.token}", "Content-Type": "application/json"})
        urllib.request.urlopen(req).close()

    forked = pome(pome_server, "sandbox", "fork", sb.id, "--at", "github=1", "--format", "json")
    assert forked.returncode == 0, forked.stderr
    fork = json.loads(forked.stdout)
    assert fork["forked_from"] == {"sandbox_id": sb.id, "at": {"github": 1}}

    def titles(state):
        return [i["title"] for r in state["repositories"] for i in r["issues"]]

    at_one = pome(pome_server, "state", sb.id, "--at", "1")
    assert at_one.returncode == 0, at_one.stderr
    assert "first" in titles(json.loads(at_one.stdout)) and "second" not in titles(json.loads(at_one.stdout))
    in_fork = json.loads(pome(pome_server, "state", fork["id"], "--twin", "github").stdout)
    assert titles(in_fork) == titles(json.loads(at_one.stdout))

    diff = json.loads(pome(pome_server, "state", sb.id, "--from", "1", "--at", "2").stdout)
    assert diff["from"] == 1 and diff["to"] == 2
    assert [c["after"]["title"] for c in diff["diff"]] == ["second"]

    bad = pome(pome_server, "sandbox", "fork", sb.id, "--at", "github=9")
    assert bad.returncode == 5 and "a position is 0 to 2" in bad.stderr, bad
    malformed = pome(pome_server, "sandbox", "fork", sb.id, "--at", "github")
    assert malformed.returncode != 0 and "TWIN=N" in malformed.stderr, malformed

    run_id = sb.finalize()[1]["run_id"]
    from_run = pome(pome_server, "runs", "fork", run_id, "--at", "github=2", "--format", "json")
    assert from_run.returncode == 0, from_run.stderr
    assert json.loads(from_run.stdout)["forked_from"]["run_id"] == run_id
    run_state = json.loads(pome(pome_server, "state", run_id, "--at", "2").stdout)
    assert "second" in titles(run_state)
    for sid in (fork["id"], json.loads(from_run.stdout)["id"]):
        pome(pome_server, "sandbox", "stop", sid, "--discard")


def test_pome_seeds_save_keeps_a_world_at_a_row_that_new_sandboxes_start_from(pome_server, new_sandbox, tmp_path):
    """#37 on the CLI: `pome seeds save NAME --from ID --at N`, `pome seeds export`, `pome seeds list`."""
    sb = new_sandbox(["github"])
    for title in ("kept", "later"):
        req = urllib.request.Request(f"{sb.url('github')}/repos/acme/api/issues", data=json.dumps({"title": title}).encode(), method="POST",
                                     headers={"Authorization": f"Bearer {sb.token}", "Content-Type": "application/json"})
        urllib.request.urlopen(req).close()

    saved = pome(pome_server, "seeds", "save", "one-issue", "--from", sb.id, "--at", "1")
    assert saved.returncode == 0, saved.stderr
    assert "saved seed one-issue (github" in saved.stdout and "after row 1" in saved.stdout, saved.stdout
    listed = pome(pome_server, "seeds", "list")
    assert re.search(r"^one-issue\s+github$", listed.stdout, re.M), listed.stdout
    exported = json.loads(pome(pome_server, "seeds", "export", sb.id, "--twin", "github", "--at", "1").stdout)
    assert exported["_meta"]["saved_from"] == {"sandbox_id": sb.id, "twin": "github", "at": 1}

    by_name = tmp_path / "seed.json"
    by_name.write_text('"one-issue"')  # a seed file may name a saved seed
    created = pome(pome_server, "sandbox", "create", "--twin", "github", "--format", "json", "--seed", str(by_name))
    assert created.returncode == 0, created.stderr
    booted = json.loads(created.stdout)["id"]
    assert json.loads(pome(pome_server, "state", booted).stdout) == json.loads(pome(pome_server, "state", sb.id, "--at", "1").stdout)
    pome(pome_server, "sandbox", "stop", booted, "--discard")

    missing = pome(pome_server, "seeds", "save", "x", "--from", sb.id, "--at", "9")
    assert missing.returncode == 5 and "a position is 0 to 2" in missing.stderr, missing
