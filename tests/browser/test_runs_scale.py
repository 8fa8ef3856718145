"""The runs list with 10,000 stored runs: each page answers in under 100 ms (DESIGN's
performance floor for the dashboard), and paging walks every run exactly once. The runs are
written straight into the server's SQLite file while it is stopped, then the real server
serves them."""

import json
import os
import sqlite3
import tempfile
import time
import urllib.request

from conftest import API_KEY, start_server

N = 10_000


def start(data):
    return start_server(data)


def stop(proc):
    proc.terminate()
    proc.wait(timeout=20)


def timed_get(server, path):
    req = urllib.request.Request(server.url + path, headers={"X-API-KEY": API_KEY})
    t0 = time.perf_counter()
    with urllib.request.urlopen(req) as resp:
        body = json.load(resp)
    return (time.perf_counter() - t0) * 1000, body


def test_ten_thousand_runs_page_under_100ms():
    data = tempfile.mkdtemp(prefix="pome-runs-scale-")
    proc, _ = start(data)
    stop(proc)
    db = sqlite3.connect(os.path.join(data, "pome.db"))
    (team,) = db.execute("SELECT team_id FROM api_keys LIMIT 1").fetchone()
    rows = []
    for i in range(N):
        verdict = ["pass", "fail", "incomplete", None][i % 4]
        created = f"2026-11-{1 + i // 1000:02d}T{(i // 60) % 24:02d}:{i % 60:02d}:00.{i % 1000:03d}Z"
        body = json.dumps({"id": f"run_scale_{i:05d}", "object": "run", "session_id": f"ses_scale_{i:05d}", "twins": ["github"],
                           "verdict": verdict, "per_twin": {}})
        rows.append((f"run_scale_{i:05d}", team, f"ses_scale_{i:05d}", f"task_{i % 20}", f"grp_{i % 500}", "agent", "1",
                     '["github"]', verdict, created, body))
    db.executemany("INSERT INTO runs (id, team_id, session_id, task_id, group_id, agent_id, agent_version, twins, verdict, created_at, body)"
                   " VALUES (?,?,?,?,?,?,?,?,?,?,?)", rows)
    db.commit()
    db.close()

    proc, server = start(data)
    try:
        timed_get(server, "/v1/runs?limit=1")  # warm the connection and the statement cache
        times = {}
        for name, path in [("first page", "/v1/runs?limit=50"), ("by task", "/v1/runs?limit=50&task=task_7"),
                           ("by verdict", "/v1/runs?limit=50&verdict=fail"), ("by group", "/v1/runs?limit=50&group_id=grp_42"),
                           ("default page", "/v1/runs")]:
            ms, body = min((timed_get(server, path) for _ in range(5)), key=lambda x: x[0])
            times[name] = ms
            assert body["data"], name
        # Deep pages cost the same as the first.
        seen, after, deep = [], "", []
        while True:
            ms, page = timed_get(server, f"/v1/runs?limit=1000&starting_after={after}" if after else "/v1/runs?limit=1000")
            deep.append(ms)
            seen += [r["id"] for r in page["data"]]
            if not page["has_more"]:
                assert page["next_cursor"] is None
                break
            after = page["next_cursor"]
        assert len(seen) == N and len(set(seen)) == N
        times["1,000-run pages (slowest)"] = max(deep)
        print("\nruns list over 10,000 runs (ms):", {k: round(v, 1) for k, v in times.items()})
        for name, ms in times.items():
            limit = 100 if "1,000" not in name else 250
            assert ms < limit, (name, ms)
    finally:
        stop(proc)
