"""First contact (#38 item 6): `pome doctor` against a server, and the dashboard URL that
`pome serve` prints beside the API key on first start."""

import os
import re
import socket
import subprocess
import tempfile
import urllib.request

from conftest import API_KEY, ROOT

POME = str(ROOT / "target" / "release" / "pome")


def doctor(url, key):
    env = dict(os.environ, POME_API_URL=url, POME_LOG="warn")
    env.pop("POME_API_KEY", None)
    if key is not None:
        env["POME_API_KEY"] = key
    return subprocess.run([POME, "doctor"], capture_output=True, text=True, env=env, timeout=60)


def line(out, check):
    """The line of one check: `<status>  <check>: …`."""
    found = [l for l in out.splitlines() if re.match(rf"^\S+\s+{check}:", l)]
    assert len(found) == 1, out
    return found[0]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_doctor_passes_against_a_running_server(pome_server):
    r = doctor(pome_server.url, API_KEY)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "FAIL" not in r.stdout, r.stdout
    assert line(r.stdout, "server").startswith("ok "), r.stdout
    assert line(r.stdout, "key").startswith("ok "), r.stdout
    twins = line(r.stdout, "twins")
    assert twins.startswith("ok "), r.stdout
    for name in ["github", "slack", "stripe", "gmail", "linear"]:
        assert re.search(rf"\b{name}\b", twins), twins
    assert "--deliver-to" in line(r.stdout, "webhooks"), "where webhooks go is said, not guessed"


def test_doctor_with_a_wrong_key_fails_with_the_auth_code_and_says_how_to_fix_it(pome_server):
    r = doctor(pome_server.url, "pme_not_a_key")
    assert r.returncode == 3, r.stdout + r.stderr
    assert line(r.stdout, "server").startswith("ok "), r.stdout
    key = line(r.stdout, "key")
    assert key.startswith("FAIL") and "the key is not valid on this server" in key, r.stdout
    assert re.search(r"fix: .*POME_API_KEY", r.stdout), r.stdout
    assert not line(r.stdout, "twins").startswith("ok "), r.stdout


def test_doctor_without_a_key_fails_with_the_auth_code(pome_server):
    r = doctor(pome_server.url, None)
    assert r.returncode == 3, r.stdout + r.stderr
    assert line(r.stdout, "key").startswith("FAIL"), r.stdout
    assert "set POME_API_KEY (printed by `pome serve` on first start)" in r.stdout, r.stdout


def test_doctor_with_no_server_listening_fails_with_the_orchestration_code():
    url = f"http://127.0.0.1:{free_port()}"
    r = doctor(url, API_KEY)
    assert r.returncode == 2, r.stdout + r.stderr
    server = line(r.stdout, "server")
    assert server.startswith("FAIL") and url in server, r.stdout
    assert "start it with `pome serve` or set POME_API_URL" in r.stdout, r.stdout


def test_first_start_prints_the_dashboard_url_beside_the_key_and_it_answers():
    data = tempfile.mkdtemp(prefix="pome-pytest-doctor-")
    env = dict(os.environ, POME_LOG="warn")
    env.pop("POME_API_KEY", None)  # a fresh data dir and no key: the server makes one
    proc = subprocess.Popen([POME, "serve", "--listen", "127.0.0.1:0", "--data", data],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
    try:
        listening = key = dashboard = None
        for out in proc.stdout:
            if m := re.search(r"listening on (http://\S+)", out):
                listening = m.group(1)
            if m := re.search(r"its API key \(shown once\): (\S+)", out):
                key = m.group(1)
            if m := re.match(r"\s+dashboard: (http://\S+)", out):
                dashboard = m.group(1)
                break
        assert listening and key and dashboard, (listening, key, dashboard)
        assert dashboard.startswith(listening), (listening, dashboard)
        with urllib.request.urlopen(dashboard, timeout=10) as resp:
            assert resp.status == 200
            assert "text/html" in resp.headers["content-type"]
        # The printed key then passes the doctor.
        r = doctor(listening, key)
        assert r.returncode == 0, r.stdout + r.stderr
    finally:
        proc.terminate()
        proc.wait(timeout=20)
