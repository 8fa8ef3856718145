"""Fixtures for client-library tests: a real `pome serve` process on a real socket, and
sandboxes created through its control plane. Tests then talk to twins only through the
official client libraries (PyGithub, slack_sdk, ...)."""

import contextlib
import json
import os
import pathlib
import re
import subprocess
import tempfile
import urllib.request

import pytest

import openapi_check

ROOT = pathlib.Path(__file__).resolve().parents[2]
API_KEY = "pme_python_client_tests"


class Sandbox:
    def __init__(self, server, body):
        self.server = server
        self.body = body
        self.id = body["id"]
        self.token = body["agent_token"]

    def url(self, twin):
        """The twin's base URL: `http://HOST/s/<id>/<twin>` (no trailing slash)."""
        return f"{self.server.url}/s/{self.id}/{twin}"

    def _get(self, twin, what):
        req = urllib.request.Request(f"{self.url(twin)}/_pome/{what}", headers={"Authorization": f"Bearer {self.token}"})
        with urllib.request.urlopen(req) as resp:
            return json.load(resp)

    def events(self, twin):
        """The twin's tape rows."""
        return self._get(twin, "events")

    def state(self, twin):
        """The twin's whole world as JSON."""
        return self._get(twin, "state")

    def finalize(self):
        return self.server.api("POST", f"/v1/sandboxes/{self.id}/finalize")


class Server:
    def __init__(self, url):
        self.url = url
        openapi_check.SERVERS.add(url)

    def api(self, method, path, body=None):
        """A control-plane call with the suite's key; its answer is checked against the
        server's `/v1/openapi.json` (openapi_check.py) before the test sees it."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"{self.url}{path}", data=data, method=method,
                                     headers={"X-API-KEY": API_KEY, "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req) as resp:
                status, content_type, text = resp.status, resp.headers.get("content-type"), resp.read().decode()
        except urllib.error.HTTPError as e:
            status, content_type, text = e.code, e.headers.get("content-type"), e.read().decode()
        openapi_check.check_answer(self.url, method, path, status, content_type, text)
        return status, json.loads(text)


@contextlib.contextmanager
def serve(*args, prefix="pome-pytest-"):
    """A `pome serve` of its own on a free port and a fresh data directory, with `args`
    besides; yields a Server once it listens, and stops it after."""
    # POME_BIN: a host built elsewhere (an engineer's own target dir).
    binary = pathlib.Path(os.environ.get("POME_BIN") or ROOT / "target" / "release" / "pome")
    assert binary.exists(), f"{binary} is missing: run `make test` (it builds the host first)"
    data = tempfile.mkdtemp(prefix=prefix)
    env = dict(os.environ, POME_API_KEY=API_KEY, POME_LOG="warn")
    proc = subprocess.Popen(
        [str(binary), "serve", "--listen", "127.0.0.1:0", "--data", data, *args]
        # A twin author serves a component under development without rebuilding the host.
        + (["--twins-dir", os.environ["POME_TEST_TWINS_DIR"]] if os.environ.get("POME_TEST_TWINS_DIR") else []),
        stdout=subprocess.PIPE, stderr=None, env=env, text=True,
    )
    url = None
    for line in proc.stdout:
        m = re.search(r"listening on (http://\S+)", line)
        if m:
            url = m.group(1)
            break
    assert url, "pome serve did not start"
    try:
        yield Server(url)
    finally:
        proc.terminate()
        proc.wait(timeout=20)


@pytest.fixture(scope="session", autouse=True)
def _openapi_checked_httpx():
    """`/v1` answers that reach the Python client (clients/python, on httpx) are checked
    against /v1/openapi.json too, as `Server.api`'s are."""
    with pytest.MonkeyPatch.context() as mp:
        openapi_check.check_httpx(mp)
        yield


@pytest.fixture(scope="session")
def pome_server():
    with serve("--quota", "1000", "--max-stores", "1200") as server:
        yield server


@pytest.fixture
def new_sandbox(pome_server):
    """Factory: `new_sandbox(["github"], seed=None)` creates a sandbox and returns a Sandbox."""

    def create(twins, seed=None):
        body = {"twins": twins}
        if seed is not None:
            body["seed"] = seed
        status, resp = pome_server.api("POST", "/v1/sandboxes", body)
        assert status == 201, resp
        return Sandbox(pome_server, resp)

    return create
