"""The live tape stream on the wire: rows as server-sent events in order, `closed` with the run
when the sandbox is finalized, and a server that still stops at once while a stream is open
(graceful shutdown waits for connections, and a live tape never ends by itself)."""

import json
import tempfile
import threading
import time
import urllib.request

from conftest import API_KEY, start_server


def events(resp):
    """Parse server-sent events from a streaming response."""
    event, data = None, []
    for raw in resp:
        line = raw.decode().rstrip("\n")
        if line == "":
            if event:
                yield event, "".join(data)
            event, data = None, []
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip())


def test_rows_then_closed_and_shutdown_ends_open_streams():
    proc, server = start_server(tempfile.mkdtemp(prefix="pome-stream-"))
    try:
        _, sb = server.api("POST", "/v1/sandboxes", {"twins": ["github", "slack"]})
        req = urllib.request.Request(f"{server.url}/ui/stream/{sb['id']}", headers={"X-API-KEY": API_KEY})
        resp = urllib.request.urlopen(req, timeout=20)
        assert resp.headers["content-type"].startswith("text/event-stream")
        assert "default-src 'self'" in resp.headers["content-security-policy"]
        stream = events(resp)
        assert next(stream)[0] == "live"
        server.twin(sb["id"], sb["agent_token"], "github", "GET", "/user")
        server.twin(sb["id"], sb["agent_token"], "slack", "POST", "/api/auth.test", {})
        server.twin(sb["id"], sb["agent_token"], "github", "GET", "/user/repos")
        got = []
        while len(got) < 3:
            ev, data = next(stream)
            assert ev == "row", ev
            row = json.loads(data)
            got.append((row["twin"], row["seq"]))
        assert sorted(got) == [("github", 1), ("github", 2), ("slack", 1)], got
        _, fin = server.api("POST", f"/v1/sandboxes/{sb['id']}/finalize")
        ev, data = next(stream)
        assert ev == "closed" and json.loads(data) == {"reason": "finalized", "run_id": fin["run_id"]}, (ev, data)

        # Another team's key (or none) cannot read it; another sandbox id is 404.
        req = urllib.request.Request(f"{server.url}/ui/stream/ses_nope", headers={"X-API-KEY": API_KEY})
        try:
            urllib.request.urlopen(req)
            raise AssertionError("a stream of no sandbox answered")
        except urllib.error.HTTPError as e:
            assert e.code == 404

        # A stream left open does not hold the server up when it is told to stop.
        _, sb = server.api("POST", "/v1/sandboxes", {"twins": ["github"]})
        req = urllib.request.Request(f"{server.url}/ui/stream/{sb['id']}", headers={"X-API-KEY": API_KEY})
        open_stream = urllib.request.urlopen(req, timeout=30)
        reader = threading.Thread(target=lambda: [None for _ in open_stream], daemon=True)
        reader.start()
        time.sleep(0.5)
        t0 = time.time()
        proc.terminate()
        proc.wait(timeout=10)
        assert time.time() - t0 < 5
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
