"""Take the README's dashboard screenshots with headless Chromium against the real server:
`python tests/browser/screenshots.py` (after `cargo build --release -p pome`) writes
docs/dashboard-*.png."""

import pathlib
import re
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import conftest  # noqa: E402
from conftest import Browser, Server  # noqa: E402

OUT = conftest.ROOT / "docs"


def main():
    gen = conftest.server.__wrapped__()
    server = next(gen)
    OUT.mkdir(exist_ok=True)
    server.put_task("triage", "triage")
    server.put_task("unmatched", "unmatched", with_seed=False)
    # A few trial groups of the task, so Runs has something to show.
    for g in range(3):
        for i in range(3):
            _, sb = server.api("POST", "/v1/sandboxes", {"task_id": "triage", "group_id": f"grp_nightly_{g + 1}", "agent_id": "triage-bot", "agent_version": f"0.{g + 1}"})
            if i <= g:
                server.twin(sb["id"], sb["agent_token"], "github", "POST", "/repos/acme/api/issues/1/labels", {"labels": ["bug"]})
                server.twin(sb["id"], sb["agent_token"], "github", "POST", "/repos/acme/api/issues/1/assignees", {"assignees": ["alice"]})
            server.api("POST", f"/v1/sandboxes/{sb['id']}/finalize")
            time.sleep(0.05)
    b = Browser(server, 1280, 860)
    try:
        b.sign_in()
        b.visible("#start-form")
        b.js("document.querySelector('article.twin details').open = true")
        shot(b, "dashboard-twins.png")
        # A two-twin sandbox with a scripted agent at work.
        _, sb = server.api("POST", "/v1/sandboxes", {"twins": ["github", "slack"]})
        b.go("#/sandbox/" + sb["id"])
        b.text_in("#live-text", "live")
        t = sb["agent_token"]
        for method, path, body in [("GET", "/repos/acme/api/issues?state=open", None), ("GET", "/repos/acme/api/labels", None),
                                   ("POST", "/repos/acme/api/issues", {"title": "Checkout returns 500", "body": "<script>alert(1)</script> see https://evil.example"}),
                                   ("POST", "/repos/acme/api/issues/1/labels", {"labels": ["bug"]}), ("GET", "/repos/acme/api/traffic/views", None)]:
            server.twin(sb["id"], t, "github", method, path, body)
        for method, path, body in [("POST", "/api/conversations.list", {}), ("POST", "/api/chat.postMessage", {"channel": "C0GENERAL", "text": "Triaged issue #1 as a bug"})]:
            server.twin(sb["id"], t, "slack", method, path, body)
        b.el("section.tape[data-twin=slack] .trow[data-seq='2']")
        b.click("section.tape[data-twin=github] .trow[data-seq='3']")
        shot(b, "dashboard-live-tape.png")
        b.go("#/sandboxes")
        b.el("tr[data-sandbox]")
        shot(b, "dashboard-sandboxes.png")
        # A failed run, its criteria and evidence.
        _, sb = server.api("POST", "/v1/sandboxes", {"task_id": "triage"})
        server.twin(sb["id"], sb["agent_token"], "github", "GET", "/repos/acme/api/issues/1")
        server.twin(sb["id"], sb["agent_token"], "github", "POST", "/repos/acme/api/issues/1/labels", {"labels": ["feature"]})
        server.twin(sb["id"], sb["agent_token"], "github", "GET", "/repos/acme/api/traffic/popular/paths")
        _, fin = server.api("POST", f"/v1/sandboxes/{sb['id']}/finalize")
        b.go(f"#/run/{fin['run_id']}/tape/github/3")
        b.el("section.tape .trow.selected")
        b.js("window.scrollTo(0, 0)")
        shot(b, "dashboard-run.png")
        b.go("#/runs?task=triage")
        b.el("svg.plot")
        shot(b, "dashboard-runs.png")
        b.go("#/task/unmatched")
        b.el("tr.unmatched")
        shot(b, "dashboard-task.png")
    finally:
        b.quit()
    p = Browser(server, 390, 844)
    try:
        p.sign_in()
        p.visible("#start-form")
        p.go(f"#/run/{fin['run_id']}")
        p.el("tr.crit")
        shot(p, "dashboard-phone.png")
    finally:
        p.quit()
        try:
            next(gen)
        except StopIteration:
            pass


def shot(b, name):
    time.sleep(0.4)
    b.d.save_screenshot(str(OUT / name))
    print("wrote", OUT / name)


if __name__ == "__main__":
    main()
