#!/usr/bin/env python3
"""A scripted agent for tasks/cross-twin-merge-report.md: plain HTTP, Python stdlib only.

It reads the connection details `pome run` puts in its environment (DESIGN §9), merges every
open pull request whose CI is green and that has an approving review, leaves the others open,
and reports each decision in the #eng-alerts Slack channel.

    pome run --local tasks/cross-twin-merge-report.md -- python3 examples/agents/merge_and_report.py
"""

import json
import os
import sys
import urllib.request

REPO = "acme/checkout"
CHANNEL = "eng-alerts"


def call(method, url, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Authorization", "Bearer " + os.environ["POME_AUTH_TOKEN"])
    req.add_header("Accept", "application/json")
    if data is not None:
        req.add_header("Content-Type", "application/json; charset=utf-8")
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read() or b"null")


def decide(report=True):
    github = os.environ["POME_GITHUB_REST_URL"].rstrip("/")
    slack = os.environ["POME_SLACK_REST_URL"]  # ends in /api/
    for pr in call("GET", f"{github}/repos/{REPO}/pulls?state=open"):
        number, title = pr["number"], pr["title"]
        status = call("GET", f"{github}/repos/{REPO}/commits/{pr['head']['sha']}/status")
        reviews = call("GET", f"{github}/repos/{REPO}/pulls/{number}/reviews")
        green = status["state"] == "success"
        approved = any(r["state"] == "APPROVED" for r in reviews)
        if green and approved:
            call("PUT", f"{github}/repos/{REPO}/pulls/{number}/merge", {"merge_method": "merge"})
            text = f"Merged #{number}: {title} (CI green, approved)."
        else:
            why = "CI is not green" if not green else "no approving review"
            text = f"Not merging #{number}: {title} ({why})."
        print(text)
        if report:
            answer = call("POST", f"{slack}chat.postMessage", {"channel": CHANNEL, "text": text})
            if not answer.get("ok"):
                sys.exit(f"Slack refused the report: {answer}")


if __name__ == "__main__":
    decide(report=True)
