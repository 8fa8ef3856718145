"""Every response the GitHub twin gives, checked against GitHub's published OpenAPI
description (`tests/specs/github/api.github.com.json`, from @octokit/openapi).

One sandbox is driven over plain HTTP through (nearly) every implemented operation, success
and error paths alike; then every row of its tape is validated against the schema the
description gives for that operation and status. The test lists every operation whose
response fails its schema."""

import base64
import json
import pathlib
import urllib.error
import urllib.request

import pytest

import jsonschema
import referencing
from referencing.jsonschema import DRAFT4

HERE = pathlib.Path(__file__).resolve().parent
SPEC_PATH = HERE.parent / "specs" / "github" / "api.github.com.json"

# Actions whose names are not `operationId` with `/` → `.` and `-` → `_`.
ALIASES = {
    "repos.get_content_root": "repos/get-content",
    "git.get_refs": None,  # legacy GET /git/refs/{ref}: answers a ref or a list; not in the description
    "git.list_refs": None,  # GET /git/refs: not in the description
    "meta.root": "meta/root",
    "rate_limit.get": "rate-limit/get",
    "gists.get_raw_file": None,
    "actions.get_artifact_file": None,  # where artifact downloads redirect: a zip
    "actions.get_run_logs_file": None,  # where run logs redirect: a zip
    "repos.download_release_asset_file": None,  # where browser_download_url points (github.com): the file
    "actions.get_job_logs_file": None,  # where job logs redirect: text  # a gist file's raw_url (gist.githubusercontent.com on GitHub): text, not in the description
}


def _nullable_to_jsonschema(node):
    """OpenAPI 3.0 `nullable: true` → JSON Schema `null` in the type (recursively)."""
    if isinstance(node, dict):
        for v in node.values():
            _nullable_to_jsonschema(v)
        if node.pop("nullable", False):
            if "type" in node:
                node["type"] = [node["type"], "null"]
                if "enum" in node:
                    node["enum"] = list(node["enum"]) + [None]
            else:
                inner = dict(node)
                node.clear()
                node["anyOf"] = [inner, {"type": "null"}]
    elif isinstance(node, list):
        for v in node:
            _nullable_to_jsonschema(v)


@pytest.fixture(scope="module")
def spec():
    raw = SPEC_PATH.read_text()
    doc = json.loads(raw.replace('"#/components/', '"urn:spec#/components/'))
    _nullable_to_jsonschema(doc)
    ops = {}
    for path, item in doc["paths"].items():
        for method, op in item.items():
            if isinstance(op, dict) and "operationId" in op:
                ops[op["operationId"]] = (method.upper(), path, op)
    registry = referencing.Registry().with_resource("urn:spec", referencing.Resource.from_contents(doc, default_specification=DRAFT4))
    return doc, ops, registry


def _response_schema(doc, op, status):
    resp = op.get("responses", {}).get(str(status))
    if resp is None:
        return None
    if "$ref" in resp:
        name = resp["$ref"].rsplit("/", 1)[-1]
        resp = doc["components"]["responses"][name]
    content = resp.get("content", {})
    media = content.get("application/json") or next(iter(content.values()), None)
    return None if media is None else media.get("schema")


class Client:
    def __init__(self, sb):
        self.base = sb.url("github")
        self.token = sb.token

    def __call__(self, method, path, body=None, expect=None):
        data = None
        headers = {"Authorization": f"token {self.token}", "Accept": "application/vnd.github+json"}
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(self.base + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req) as resp:
                status, raw = resp.status, resp.read()
        except urllib.error.HTTPError as e:
            status, raw = e.code, e.read()
        out = json.loads(raw) if raw else None
        if expect is not None:
            assert status == expect, (method, path, status, out)
        return out

    def upload(self, path, data, content_type, expect):
        """A raw body, as clients send a release asset to its `upload_url`."""
        headers = {"Authorization": f"token {self.token}", "Content-Type": content_type}
        req = urllib.request.Request(self.base + path, data=data, method="POST", headers=headers)
        try:
            with urllib.request.urlopen(req) as resp:
                status, raw = resp.status, resp.read()
        except urllib.error.HTTPError as e:
            status, raw = e.code, e.read()
        assert status == expect, (path, status, raw[:300])
        return json.loads(raw)


SEED = {
    "users": [
        {"login": "acme", "type": "Organization", "name": "ACME", "company": "ACME Corp", "location": "Lisbon"},
        {"login": "alice", "name": "Alice", "email": "alice@acme.test", "location": "Porto"},
        {"login": "bob", "name": "Bob"},
        {"login": "pome-agent", "name": "Pome Agent"},
    ],
    "repositories": [{
        "owner": "acme", "name": "api", "description": "ACME API",
        "collaborators": ["alice", "bob", {"login": "pome-agent", "permission": "admin"}],
        "required_status_checks": ["ci"],
        "labels": [{"name": "bug", "color": "d73a4a", "description": "broken"}],
        "milestones": [{"title": "v1", "due_on": "2030-01-01T00:00:00Z"}],
        "files": [
            {"path": "README.md", "content": "# api\n"},
            {"path": "src/app.py", "content": "x = 1\n"},
            {"path": "src/app.py", "branch": "feature", "content": "x = 2\n"},
            {"path": ".github/workflows/ci.yml", "content": "name: CI\non: [push, workflow_dispatch]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n      - run: make test\n"},
        ],
        "workflow_runs": [{"workflow": "ci.yml", "conclusion": "failure", "artifacts": [{"name": "report", "files": {"report.txt": "1 failed\n"}}]},
                          {"workflow": "ci.yml", "branch": "feature", "conclusion": "failure"}],
        "issues": [{"number": 1, "title": "Bug", "body": "it broke @bob", "author": "bob", "labels": ["bug"], "assignees": ["alice"], "milestone": "v1",
                    "comments": [{"author": "alice", "body": "seen"}]}],
        "pull_requests": [{"number": 2, "title": "Feature", "body": "adds", "head": "feature", "author": "alice",
                           "reviews": [{"author": "bob", "state": "APPROVED", "body": "ok"}],
                           "statuses": [{"context": "ci", "state": "success"}]}],
        "releases": [{"tag_name": "v0.1.0", "name": "zero"}],
    }],
    "gists": [{"owner": "alice", "description": "notes", "public": True, "files": {"notes.md": "# notes\n"},
               "comments": [{"author": "bob", "body": "nice"}]}],
}


def drive(c):
    """Call every implemented operation at least once, with a few error paths."""
    R = "/repos/acme/api"
    c("GET", "/user", expect=200)
    c("GET", "/users/alice", expect=200)
    c("GET", "/users/nobody-here", expect=404)
    c("GET", "/user/repos", expect=200)
    c("GET", "/users/alice/repos", expect=200)
    c("GET", "/orgs/acme/repos", expect=200)
    org = c("GET", "/orgs/acme", expect=200)
    # An organisation's public profile as its seed wrote it; what it never set is absent.
    assert (org["company"], org["location"], "email" in org) == ("ACME Corp", "Lisbon", False), org
    assert c("GET", "/users/alice", expect=200)["location"] == "Porto"
    assert c("GET", "/users/bob", expect=200)["location"] is None
    c("GET", "/rate_limit", expect=200)
    c("GET", R, expect=200)
    c("GET", "/repos/acme/missing", expect=404)
    c("POST", "/user/repos", {"name": "scratch", "auto_init": True, "description": "tmp"}, expect=201)
    c("POST", "/user/repos", {"name": "scratch"}, expect=422)
    c("PATCH", "/repos/pome-agent/scratch", {"description": "updated", "has_issues": True}, expect=200)
    c("POST", "/orgs/acme/repos", {"name": "tools"}, expect=201)
    c("POST", f"{R}/forks", {}, expect=202)
    c("DELETE", "/repos/pome-agent/scratch", expect=204)
    c("GET", f"{R}/topics", expect=200)
    c("GET", f"{R}/languages", expect=200)
    c("GET", f"{R}/contributors", expect=200)
    c("GET", f"{R}/collaborators", expect=200)
    c("GET", f"{R}/collaborators/alice", expect=204)
    c("GET", f"{R}/collaborators/alice/permission", expect=200)
    c("PUT", f"{R}/collaborators/bob", {"permission": "triage"}, expect=204)
    c("DELETE", f"{R}/collaborators/bob", expect=204)
    c("PUT", f"{R}/collaborators/bob", {"permission": "push"}, expect=201)
    # issues
    c("GET", f"{R}/issues?state=all&per_page=1", expect=200)
    c("GET", "/issues", expect=200)
    c("GET", "/user/issues", expect=200)
    issue = c("POST", f"{R}/issues", {"title": "New", "body": "b", "labels": ["bug"], "assignees": ["alice"], "milestone": 1}, expect=201)
    n = issue["number"]
    c("POST", f"{R}/issues", {"body": "no title"}, expect=422)
    c("GET", f"{R}/issues/{n}", expect=200)
    c("GET", f"{R}/issues/999", expect=404)
    c("PATCH", f"{R}/issues/{n}", {"title": "Renamed", "state": "closed", "state_reason": "not_planned"}, expect=200)
    c("PUT", f"{R}/issues/{n}/lock", {"lock_reason": "resolved"}, expect=204)
    c("DELETE", f"{R}/issues/{n}/lock", expect=204)
    comment = c("POST", f"{R}/issues/1/comments", {"body": "on it"}, expect=201)
    c("GET", f"{R}/issues/1/comments", expect=200)
    c("GET", f"{R}/issues/comments", expect=200)
    c("GET", f"{R}/issues/comments/{comment['id']}", expect=200)
    c("PATCH", f"{R}/issues/comments/{comment['id']}", {"body": "edited"}, expect=200)
    reaction = c("POST", f"{R}/issues/comments/{comment['id']}/reactions", {"content": "heart"}, expect=201)
    c("GET", f"{R}/issues/comments/{comment['id']}/reactions", expect=200)
    c("DELETE", f"{R}/issues/comments/{comment['id']}/reactions/{reaction['id']}", expect=204)
    c("DELETE", f"{R}/issues/comments/{comment['id']}", expect=204)
    reaction = c("POST", f"{R}/issues/1/reactions", {"content": "+1"}, expect=201)
    c("GET", f"{R}/issues/1/reactions", expect=200)
    c("DELETE", f"{R}/issues/1/reactions/{reaction['id']}", expect=204)
    c("GET", f"{R}/labels", expect=200)
    c("POST", f"{R}/labels", {"name": "p1", "color": "b60205", "description": "urgent"}, expect=201)
    c("POST", f"{R}/labels", {"name": "p1", "color": "b60205"}, expect=422)
    c("GET", f"{R}/labels/p1", expect=200)
    c("PATCH", f"{R}/labels/p1", {"new_name": "prio-1", "color": "ff0000"}, expect=200)
    c("GET", f"{R}/issues/1/labels", expect=200)
    c("POST", f"{R}/issues/1/labels", {"labels": ["prio-1"]}, expect=200)
    c("PUT", f"{R}/issues/1/labels", {"labels": ["bug", "prio-1"]}, expect=200)
    c("DELETE", f"{R}/issues/1/labels/prio-1", expect=200)
    c("DELETE", f"{R}/issues/1/labels/prio-1", expect=404)
    c("DELETE", f"{R}/issues/{n}/labels", expect=204)
    c("DELETE", f"{R}/labels/prio-1", expect=204)
    c("GET", f"{R}/assignees", expect=200)
    c("GET", f"{R}/assignees/alice", expect=204)
    c("POST", f"{R}/issues/1/assignees", {"assignees": ["bob"]}, expect=201)
    c("DELETE", f"{R}/issues/1/assignees", {"assignees": ["bob"]}, expect=200)
    c("GET", f"{R}/milestones", expect=200)
    ms = c("POST", f"{R}/milestones", {"title": "v2", "description": "next"}, expect=201)
    c("GET", f"{R}/milestones/{ms['number']}", expect=200)
    c("PATCH", f"{R}/milestones/{ms['number']}", {"state": "closed"}, expect=200)
    c("DELETE", f"{R}/milestones/{ms['number']}", expect=204)
    events = c("GET", f"{R}/issues/1/events", expect=200)
    c("GET", f"{R}/issues/events", expect=200)
    c("GET", f"{R}/issues/events/{events[0]['id']}", expect=200)
    c("GET", f"{R}/issues/1/timeline", expect=200)
    # sub-issues, and the fields every issue carries for them
    c("POST", f"{R}/issues/1/sub_issues", {"sub_issue_id": issue["id"]}, expect=201)
    subs = c("GET", f"{R}/issues/1/sub_issues", expect=200)
    assert subs[0]["repository"]["full_name"] == "acme/api"
    c("GET", f"{R}/issues/{n}/parent", expect=200)
    parent = c("GET", f"{R}/issues/1", expect=200)
    assert parent["sub_issues_summary"] == {"total": 1, "completed": 1, "percent_completed": 100}
    child = c("GET", f"{R}/issues/{n}", expect=200)
    assert child["parent_issue_url"].endswith("/repos/acme/api/issues/1") and child["pinned_comment"] is None
    assert child["issue_dependencies_summary"] == {"blocked_by": 0, "blocking": 0, "total_blocked_by": 0, "total_blocking": 0}
    assert "type" in child
    # code
    c("GET", f"{R}/contents", expect=200)
    c("GET", f"{R}/contents/src", expect=200)
    readme = c("GET", f"{R}/contents/README.md", expect=200)
    c("GET", f"{R}/contents/nope.md", expect=404)
    c("GET", f"{R}/readme", expect=200)
    main = c("GET", f"{R}/git/ref/heads/main", expect=200)
    c("GET", f"{R}/git/matching-refs/heads", expect=200)
    c("GET", f"{R}/git/refs", expect=200)
    c("GET", f"{R}/git/refs/heads/main", expect=200)
    c("POST", f"{R}/git/refs", {"ref": "refs/heads/work", "sha": main["object"]["sha"]}, expect=201)
    put = c("PUT", f"{R}/contents/docs/a.md", {"message": "add", "content": base64.b64encode(b"a\n").decode(), "branch": "work"}, expect=201)
    c("PUT", f"{R}/contents/docs/a.md", {"message": "edit", "content": base64.b64encode(b"b\n").decode(), "branch": "work", "sha": "0" * 40}, expect=409)
    put = c("PUT", f"{R}/contents/docs/a.md", {"message": "edit", "content": base64.b64encode(b"b\n").decode(), "branch": "work", "sha": put["content"]["sha"]}, expect=200)
    c("DELETE", f"{R}/contents/README.md", {"message": "rm", "sha": readme["sha"], "branch": "work"}, expect=200)
    c("GET", f"{R}/branches", expect=200)
    c("GET", f"{R}/branches/main", expect=200)
    c("GET", f"{R}/tags", expect=200)
    c("GET", f"{R}/commits?sha=work", expect=200)
    c("GET", f"{R}/commits/work", expect=200)
    c("GET", f"{R}/compare/main...work", expect=200)
    blob = c("POST", f"{R}/git/blobs", {"content": "hi", "encoding": "utf-8"}, expect=201)
    c("GET", f"{R}/git/blobs/{blob['sha']}", expect=200)
    head = c("GET", f"{R}/git/commits/{main['object']['sha']}", expect=200)
    tree = c("POST", f"{R}/git/trees", {"base_tree": head["tree"]["sha"], "tree": [{"path": "x/y.txt", "mode": "100644", "type": "blob", "sha": blob["sha"]}]}, expect=201)
    c("GET", f"{R}/git/trees/{tree['sha']}?recursive=1", expect=200)
    commit = c("POST", f"{R}/git/commits", {"message": "m", "tree": tree["sha"], "parents": [main["object"]["sha"]]}, expect=201)
    c("PATCH", f"{R}/git/refs/heads/feature", {"sha": commit["sha"]}, expect=422)
    c("POST", f"{R}/git/refs", {"ref": "refs/heads/tmp", "sha": commit["sha"]}, expect=201)
    c("PATCH", f"{R}/git/refs/heads/tmp", {"sha": main["object"]["sha"], "force": True}, expect=200)
    c("DELETE", f"{R}/git/refs/heads/tmp", expect=204)
    tag = c("POST", f"{R}/git/tags", {"tag": "v9", "message": "nine", "object": commit["sha"], "type": "commit"}, expect=201)
    c("GET", f"{R}/git/tags/{tag['sha']}", expect=200)
    # pull requests
    c("GET", f"{R}/pulls", expect=200)
    pr = c("POST", f"{R}/pulls", {"title": "Work", "head": "work", "base": "main", "body": "docs"}, expect=201)
    c("POST", f"{R}/pulls", {"title": "Work", "head": "work", "base": "main"}, expect=422)
    p = pr["number"]
    c("GET", f"{R}/pulls/{p}", expect=200)
    c("PATCH", f"{R}/pulls/{p}", {"title": "Work (docs)"}, expect=200)
    c("GET", f"{R}/pulls/{p}/files", expect=200)
    c("GET", f"{R}/pulls/{p}/commits", expect=200)
    c("GET", f"{R}/pulls/{p}/merge", expect=404)
    c("POST", f"{R}/pulls/{p}/requested_reviewers", {"reviewers": ["alice"]}, expect=201)
    c("GET", f"{R}/pulls/{p}/requested_reviewers", expect=200)
    c("DELETE", f"{R}/pulls/{p}/requested_reviewers", {"reviewers": ["alice"]}, expect=200)
    c("GET", f"{R}/pulls/2/reviews", expect=200)
    pending = c("POST", f"{R}/pulls/2/reviews", {"body": "draft"}, expect=200)
    c("GET", f"{R}/pulls/2/reviews/{pending['id']}", expect=200)
    c("PUT", f"{R}/pulls/2/reviews/{pending['id']}", {"body": "draft 2"}, expect=200)
    c("DELETE", f"{R}/pulls/2/reviews/{pending['id']}", expect=200)
    rv = c("POST", f"{R}/pulls/2/reviews", {"body": "see inline", "event": "COMMENT",
                                           "comments": [{"path": "src/app.py", "line": 1, "body": "why 2?"}]}, expect=200)
    pending = c("POST", f"{R}/pulls/2/reviews", {"body": "later"}, expect=200)
    c("POST", f"{R}/pulls/2/reviews/{pending['id']}/events", {"event": "APPROVE"}, expect=200)
    c("PUT", f"{R}/pulls/2/reviews/{pending['id']}/dismissals", {"message": "stale"}, expect=200)
    c("POST", f"{R}/pulls/{p}/reviews", {"event": "APPROVE"}, expect=422)
    comments = c("GET", f"{R}/pulls/2/comments", expect=200)
    pr2 = c("GET", f"{R}/pulls/2", expect=200)
    rc = c("POST", f"{R}/pulls/2/comments", {"body": "nit", "commit_id": pr2["head"]["sha"], "path": "src/app.py", "line": 1}, expect=201)
    c("POST", f"{R}/pulls/2/comments/{comments[0]['id']}/replies", {"body": "because"}, expect=201)
    c("GET", f"{R}/pulls/comments", expect=200)
    c("GET", f"{R}/pulls/comments/{rc['id']}", expect=200)
    c("PATCH", f"{R}/pulls/comments/{rc['id']}", {"body": "nit!"}, expect=200)
    # The pull request's timeline holds its commits, its reviews, its threads on the diff
    # outside a review, and the issues that mention it (each validated below with the rest).
    c("POST", f"{R}/issues/1/comments", {"body": "the fix is in #2."}, expect=201)
    timeline = c("GET", f"{R}/issues/2/timeline?per_page=100", expect=200)
    kinds = {e["event"] for e in timeline}
    assert {"committed", "cross-referenced", "line-commented", "reviewed"} <= kinds, kinds
    threads = [[x["id"] for x in e["comments"]] for e in timeline if e["event"] == "line-commented"]
    assert [rc["id"]] in threads and any(len(t) == 2 and t[0] == comments[0]["id"] for t in threads), threads
    mention = next(e for e in timeline if e["event"] == "cross-referenced")
    assert (mention["source"]["issue"]["number"], mention["actor"]["login"]) == (1, rc["user"]["login"]), mention
    c("DELETE", f"{R}/pulls/comments/{rc['id']}", expect=204)
    # statuses and checks
    sha = pr["head"]["sha"]
    c("POST", f"{R}/statuses/{sha}", {"state": "success", "context": "ci", "description": "ok", "target_url": "https://ci.test/1"}, expect=201)
    c("POST", f"{R}/statuses/{sha}", {"state": "bogus"}, expect=422)
    c("GET", f"{R}/commits/{sha}/statuses", expect=200)
    c("GET", f"{R}/commits/{sha}/status", expect=200)
    run = c("POST", f"{R}/check-runs", {"name": "lint", "head_sha": sha, "status": "in_progress"}, expect=201)
    c("GET", f"{R}/check-runs/{run['id']}", expect=200)
    c("PATCH", f"{R}/check-runs/{run['id']}", {"conclusion": "success", "output": {"title": "ok", "summary": "clean"}}, expect=200)
    c("GET", f"{R}/commits/{sha}/check-runs", expect=200)
    c("GET", f"{R}/commits/{sha}/check-suites", expect=200)
    c("PUT", f"{R}/pulls/{p}/merge", {"sha": "0" * 40}, expect=409)
    c("PUT", f"{R}/pulls/2/update-branch", {}, expect=422)
    c("PUT", f"{R}/pulls/{p}/merge", {"merge_method": "merge"}, expect=200)
    c("PUT", f"{R}/pulls/2/update-branch", {}, expect=202)
    c("GET", f"{R}/pulls/{p}/merge", expect=204)
    # releases
    c("GET", f"{R}/releases", expect=200)
    rel = c("POST", f"{R}/releases", {"tag_name": "v1.0.0", "name": "one", "body": "notes"}, expect=201)
    c("POST", f"{R}/releases", {"tag_name": "v1.0.0"}, expect=422)
    c("GET", f"{R}/releases/latest", expect=200)
    c("GET", f"{R}/releases/tags/v1.0.0", expect=200)
    c("GET", f"{R}/releases/{rel['id']}", expect=200)
    c("PATCH", f"{R}/releases/{rel['id']}", {"body": "more notes"}, expect=200)
    up = rel["upload_url"].split("{")[0][len(c.base):]
    asset = c.upload(f"{up}?name=tool.tar.gz&label=Linux", b"\x1f\x8b binary", "application/gzip", expect=201)
    c.upload(f"{up}?name=tool.tar.gz", b"again", "application/gzip", expect=422)
    c.upload(up, b"no name", "text/plain", expect=422)
    c("GET", f"{R}/releases/{rel['id']}/assets", expect=200)
    c("GET", f"{R}/releases/{rel['id']}", expect=200)
    c("GET", f"{R}/releases/assets/{asset['id']}", expect=200)
    c("PATCH", f"{R}/releases/assets/{asset['id']}", {"name": "tool-linux.tar.gz", "label": "Linux x64"}, expect=200)
    c("DELETE", f"{R}/releases/assets/{asset['id']}", expect=204)
    c("GET", f"{R}/releases/assets/{asset['id']}", expect=404)
    c("DELETE", f"{R}/releases/{rel['id']}", expect=204)
    # search
    c("GET", "/search/issues?q=repo:acme/api+is:open+label:bug", expect=200)
    c("GET", "/search/issues", expect=422)
    c("GET", "/search/repositories?q=acme", expect=200)
    c("GET", "/search/code?q=x+repo:acme/api", expect=200)
    c("GET", "/search/users?q=alice", expect=200)
    c("GET", "/search/commits?q=add+repo:acme/api", expect=200)
    c("PUT", f"{R}/topics", {"names": ["api", "orders"]}, expect=200)
    c("PATCH", R, {"description": "ACME API service", "delete_branch_on_merge": True}, expect=200)
    # Security features: an admin sees them (GitHub's defaults for the visibility) and
    # switches them; a feature GitHub does not have, or a status it does not know, is refused.
    before = c("GET", R, expect=200)["security_and_analysis"]
    assert before["dependabot_security_updates"] == {"status": "disabled"}, before
    after = c("PATCH", R, {"security_and_analysis": {"dependabot_security_updates": {"status": "enabled"}}}, expect=200)
    assert after["security_and_analysis"]["dependabot_security_updates"] == {"status": "enabled"}, after
    c("PATCH", R, {"security_and_analysis": {"telepathy": {"status": "enabled"}}}, expect=422)
    c("PATCH", R, {"security_and_analysis": {"secret_scanning": {"status": "maybe"}}}, expect=422)
    c("PATCH", R, {"squash_merge_commit_title": "PR_TITLE", "squash_merge_commit_message": "PR_BODY",
                   "merge_commit_title": "PR_TITLE", "merge_commit_message": "BLANK"}, expect=200)
    c("PATCH", R, {"merge_commit_title": "MERGE_MESSAGE", "merge_commit_message": "PR_BODY"}, expect=422)
    c("GET", f"{R}/branches/main/protection", expect=200)
    c("GET", f"{R}/branches/main/protection/required_status_checks", expect=200)
    c("GET", f"{R}/branches/work/protection", expect=404)
    BP = f"{R}/branches/main/protection"
    c("PUT", BP, {"required_status_checks": {"strict": True, "contexts": ["ci"]}, "enforce_admins": True,
                  "required_pull_request_reviews": {"required_approving_review_count": 1, "dismiss_stale_reviews": True,
                                                    "dismissal_restrictions": {"users": ["alice"], "teams": []}},
                  "restrictions": {"users": ["alice"], "teams": [], "apps": []}, "required_linear_history": True}, expect=200)
    c("PUT", BP, {"enforce_admins": True}, expect=422)
    c("GET", BP, expect=200)
    c("PATCH", f"{BP}/required_status_checks", {"strict": False}, expect=200)
    c("GET", f"{BP}/required_status_checks/contexts", expect=200)
    c("POST", f"{BP}/required_status_checks/contexts", {"contexts": ["lint"]}, expect=200)
    c("PUT", f"{BP}/required_status_checks/contexts", {"contexts": ["ci", "lint"]}, expect=200)
    c("DELETE", f"{BP}/required_status_checks/contexts", {"contexts": ["lint"]}, expect=200)
    c("GET", f"{BP}/enforce_admins", expect=200)
    c("DELETE", f"{BP}/enforce_admins", expect=204)
    c("POST", f"{BP}/enforce_admins", expect=200)
    c("GET", f"{BP}/required_signatures", expect=200)
    c("POST", f"{BP}/required_signatures", expect=200)
    c("DELETE", f"{BP}/required_signatures", expect=204)
    c("GET", f"{BP}/required_pull_request_reviews", expect=200)
    c("PATCH", f"{BP}/required_pull_request_reviews", {"required_approving_review_count": 2}, expect=200)
    c("PATCH", f"{BP}/required_pull_request_reviews", {"required_approving_review_count": 9}, expect=422)
    c("GET", f"{BP}/restrictions", expect=200)
    c("GET", f"{BP}/restrictions/users", expect=200)
    c("POST", f"{BP}/restrictions/users", {"users": ["bob"]}, expect=200)
    c("PUT", f"{BP}/restrictions/users", {"users": ["alice"]}, expect=200)
    c("DELETE", f"{BP}/restrictions/users", {"users": ["alice"]}, expect=200)
    c("GET", f"{BP}/restrictions/teams", expect=200)
    c("PUT", f"{BP}/restrictions/teams", {"teams": []}, expect=200)
    c("POST", f"{BP}/restrictions/teams", {"teams": ["nope"]}, expect=422)
    c("GET", f"{BP}/restrictions/apps", expect=200)
    c("POST", f"{BP}/restrictions/apps", {"apps": ["octoapp"]}, expect=422)
    c("DELETE", f"{BP}/restrictions", expect=204)
    c("DELETE", f"{BP}/required_pull_request_reviews", expect=204)
    c("DELETE", f"{BP}/required_status_checks", expect=204)
    c("DELETE", BP, expect=204)
    c("GET", BP, expect=404)
    c("PUT", BP, {"required_status_checks": {"strict": False, "contexts": ["ci"]}, "enforce_admins": None,
                  "required_pull_request_reviews": None, "restrictions": None}, expect=200)
    c("GET", f"{R}/actions/runs", expect=200)
    # Actions
    c("GET", f"{R}/actions/workflows", expect=200)
    wf = c("GET", f"{R}/actions/workflows/ci.yml", expect=200)
    c("GET", f"{R}/actions/workflows/none.yml", expect=404)
    c("PUT", f"{R}/actions/workflows/{wf['id']}/disable", expect=204)
    c("PUT", f"{R}/actions/workflows/{wf['id']}/enable", expect=204)
    c("POST", f"{R}/actions/workflows/ci.yml/dispatches", {"ref": "main"}, expect=204)
    dispatched = c("POST", f"{R}/actions/workflows/ci.yml/dispatches", {"ref": "main", "return_run_details": True}, expect=200)
    c("POST", f"{R}/actions/workflows/ci.yml/dispatches", {"ref": "nope"}, expect=422)
    c("GET", f"{R}/actions/workflows/ci.yml/runs", expect=200)
    failed, other = c("GET", f"{R}/actions/runs?status=failure", expect=200)["workflow_runs"][:2]
    c("GET", f"{R}/actions/runs/{failed['id']}", expect=200)
    jobs = c("GET", f"{R}/actions/runs/{failed['id']}/jobs", expect=200)
    c("GET", f"{R}/actions/jobs/{jobs['jobs'][0]['id']}", expect=200)
    c("GET", f"{R}/actions/runs/{failed['id']}/artifacts", expect=200)
    c("GET", f"{R}/actions/runs/{failed['id']}/timing", expect=200)
    c("DELETE", f"{R}/actions/runs/{dispatched['workflow_run_id']}/logs", expect=403)
    c("DELETE", f"{R}/actions/runs/{failed['id']}/logs", expect=204)
    arts = c("GET", f"{R}/actions/artifacts", expect=200)
    c("GET", f"{R}/actions/artifacts/{arts['artifacts'][0]['id']}", expect=200)
    c("POST", f"{R}/actions/runs/{other['id']}/rerun-failed-jobs", expect=201)
    c("POST", f"{R}/actions/jobs/{jobs['jobs'][0]['id']}/rerun", expect=201)
    c("POST", f"{R}/actions/jobs/{jobs['jobs'][0]['id']}/rerun", expect=403)
    c("GET", f"{R}/actions/runs/{failed['id']}/attempts/1", expect=200)
    c("GET", f"{R}/actions/runs/{failed['id']}/attempts/2/jobs", expect=200)
    c("GET", f"{R}/actions/runs/{failed['id']}/attempts/9/jobs", expect=404)
    c("POST", f"{R}/actions/runs/{dispatched['workflow_run_id']}/cancel", expect=202)
    c("POST", f"{R}/actions/runs/{dispatched['workflow_run_id']}/cancel", expect=409)
    c("POST", f"{R}/actions/runs/{dispatched['workflow_run_id']}/rerun", expect=201)
    c("DELETE", f"{R}/actions/artifacts/{arts['artifacts'][0]['id']}", expect=204)
    c("DELETE", f"{R}/actions/runs/{dispatched['workflow_run_id']}", expect=204)
    c("GET", "/orgs/acme/members", expect=200)
    c("GET", "/orgs/acme/members/alice", expect=204)
    c("GET", "/user/orgs", expect=200)
    c("GET", "/users/alice/orgs", expect=200)
    c("GET", f"{R}/commits/{sha}/pulls", expect=200)
    c("GET", f"{R}/pulls/2/reviews/{rv['id']}/comments", expect=200)
    c("POST", f"{R}/git/refs", {"ref": "refs/heads/side", "sha": main["object"]["sha"]}, expect=201)
    c("PUT", f"{R}/contents/side.txt", {"message": "side", "content": base64.b64encode(b"s\n").decode(), "branch": "side"}, expect=201)
    c("POST", f"{R}/merges", {"base": "main", "head": "side"}, expect=201)
    c("POST", f"{R}/merges", {"base": "main", "head": "side"}, expect=204)
    c("GET", f"{R}/pulls/{p}", expect=200)
    # webhooks (repository and organisation)
    hook = c("POST", f"{R}/hooks", {"name": "web", "events": ["issues", "push"], "config": {"url": "https://hooks.test/gh", "content_type": "json", "secret": "s"}}, expect=201)
    c("POST", f"{R}/hooks", {"config": {"url": "https://hooks.test/gh2"}, "events": ["bogus"]}, expect=422)
    h = hook["id"]
    c("GET", f"{R}/hooks", expect=200)
    c("GET", f"{R}/hooks/{h}", expect=200)
    c("GET", f"{R}/hooks/999999", expect=404)
    c("PATCH", f"{R}/hooks/{h}", {"add_events": ["label"], "active": True}, expect=200)
    c("GET", f"{R}/hooks/{h}/config", expect=200)
    c("PATCH", f"{R}/hooks/{h}/config", {"content_type": "form"}, expect=200)
    c("POST", f"{R}/issues", {"title": "Hooked"}, expect=201)
    c("POST", f"{R}/hooks/{h}/pings", expect=204)
    c("POST", f"{R}/hooks/{h}/tests", expect=204)
    deliveries = c("GET", f"{R}/hooks/{h}/deliveries", expect=200)
    c("GET", f"{R}/hooks/{h}/deliveries/{deliveries[0]['id']}", expect=200)
    c("POST", f"{R}/hooks/{h}/deliveries/{deliveries[0]['id']}/attempts", expect=202)
    org_hook = c("POST", "/orgs/acme/hooks", {"name": "web", "events": ["push"], "config": {"url": "https://hooks.test/org", "content_type": "json"}}, expect=201)
    o = org_hook["id"]
    c("GET", "/orgs/acme/hooks", expect=200)
    c("GET", f"/orgs/acme/hooks/{o}", expect=200)
    c("PATCH", f"/orgs/acme/hooks/{o}", {"events": ["push", "issues"]}, expect=200)
    c("GET", f"/orgs/acme/hooks/{o}/config", expect=200)
    c("PATCH", f"/orgs/acme/hooks/{o}/config", {"insecure_ssl": "0"}, expect=200)
    c("POST", f"/orgs/acme/hooks/{o}/pings", expect=204)
    org_deliveries = c("GET", f"/orgs/acme/hooks/{o}/deliveries", expect=200)
    c("GET", f"/orgs/acme/hooks/{o}/deliveries/{org_deliveries[0]['id']}", expect=200)
    c("POST", f"/orgs/acme/hooks/{o}/deliveries/{org_deliveries[0]['id']}/attempts", expect=202)
    c("DELETE", f"/orgs/acme/hooks/{o}", expect=204)
    c("DELETE", f"{R}/hooks/{h}", expect=204)
    # teams and their repositories
    c("POST", "/orgs/acme/teams", {"name": "Platform", "description": "infra", "privacy": "closed", "repo_names": ["api"]}, expect=201)
    c("POST", "/orgs/acme/teams", {"name": "Platform"}, expect=422)
    c("GET", "/orgs/acme/teams", expect=200)
    c("GET", "/orgs/acme/teams/platform", expect=200)
    c("GET", "/orgs/acme/teams/nope", expect=404)
    c("PATCH", "/orgs/acme/teams/platform", {"description": "infrastructure"}, expect=200)
    c("PUT", "/orgs/acme/teams/platform/memberships/alice", {"role": "maintainer"}, expect=200)
    c("PUT", "/orgs/acme/teams/platform/memberships/alice", {"role": "owner"}, expect=422)
    c("GET", "/orgs/acme/teams/platform/memberships/alice", expect=200)
    c("GET", "/orgs/acme/teams/platform/memberships/bob", expect=404)
    c("GET", "/orgs/acme/teams/platform/members", expect=200)
    c("PUT", "/orgs/acme/teams/platform/repos/acme/api", {"permission": "maintain"}, expect=204)
    c("GET", "/orgs/acme/teams/platform/repos", expect=200)
    c("GET", "/orgs/acme/teams/platform/repos/acme/api", expect=204)
    c("GET", f"{R}/teams", expect=200)
    c("GET", "/user/teams", expect=200)
    c("DELETE", "/orgs/acme/teams/platform/memberships/alice", expect=204)
    c("DELETE", "/orgs/acme/teams/platform/repos/acme/api", expect=204)
    c("DELETE", "/orgs/acme/teams/platform", expect=204)
    c("GET", f"{R}/pages", expect=501)

    # gists
    gist = c("POST", "/gists", {"description": "mine", "public": False, "files": {"a.py": {"content": "x = 1\n"}, "b.txt": {"content": "b\n"}}}, expect=201)
    c("POST", "/gists", {"files": {}}, expect=422)
    g = gist["id"]
    c("GET", "/gists", expect=200)
    c("GET", "/gists/public", expect=200)
    c("GET", "/users/alice/gists", expect=200)
    c("GET", f"/gists/{g}", expect=200)
    c("GET", "/gists/0000", expect=404)
    c("PATCH", f"/gists/{g}", {"description": "renamed", "files": {"a.py": {"filename": "main.py", "content": "x = 2\n"}, "b.txt": None}}, expect=200)
    c("GET", f"/gists/{g}/commits", expect=200)
    c("GET", f"/gists/{g}/{gist['history'][0]['version']}", expect=200)
    alices = c("GET", "/users/alice/gists", expect=200)[0]["id"]
    c("POST", f"/gists/{alices}/forks", expect=201)
    c("GET", f"/gists/{alices}/forks", expect=200)
    c("GET", f"/gists/{alices}", expect=200)
    c("GET", f"/gists/{alices}/star", expect=404)
    c("PUT", f"/gists/{alices}/star", expect=204)
    c("GET", f"/gists/{alices}/star", expect=204)
    c("GET", "/gists/starred", expect=200)
    c("DELETE", f"/gists/{alices}/star", expect=204)
    gc = c("POST", f"/gists/{alices}/comments", {"body": "thanks"}, expect=201)
    c("GET", f"/gists/{alices}/comments", expect=200)
    c("GET", f"/gists/{alices}/comments/{gc['id']}", expect=200)
    c("PATCH", f"/gists/{alices}/comments/{gc['id']}", {"body": "thanks!"}, expect=200)
    c("DELETE", f"/gists/{alices}/comments/{gc['id']}", expect=204)
    c("DELETE", f"/gists/{g}", expect=204)


def test_every_response_matches_githubs_openapi_description(new_sandbox, spec):
    doc, ops, registry = spec
    sb = new_sandbox(["github"], seed=SEED)
    drive(Client(sb))
    failures, checked, unchecked = [], set(), set()
    for row in sb.events("github"):
        action = row.get("action")
        if not action or row["fidelity"] == "unsupported":
            continue
        op_id = ALIASES.get(action, action.replace(".", "/").replace("_", "-"))
        if op_id is None or op_id not in ops:
            unchecked.add(action)
            continue
        schema = _response_schema(doc, ops[op_id][2], row["status"])
        if schema is None or not row["response_body"]:
            unchecked.add(f"{action} {row['status']}")
            continue
        body = json.loads(row["response_body"])
        validator = jsonschema.Draft4Validator(schema, registry=registry)
        errors = sorted(validator.iter_errors(body), key=lambda e: list(e.absolute_path))
        # GitHub's description types some error answers as `oneOf` two error schemas that a
        # plain `{message, documentation_url}` satisfies both of; real GitHub answers fail
        # that the same way, so it is not counted against the twin.
        errors = [e for e in errors if not (e.validator == "oneOf" and "is valid under each of" in e.message and row["status"] >= 400)]
        checked.add(action)
        if errors:
            e = errors[0]
            where = "/".join(str(p) for p in e.absolute_path)
            failures.append(f"{op_id} {row['method']} {row['path']} {row['status']}: at /{where}: {e.message[:200]}")
    print(f"\nchecked {len(checked)} operations; no schema for: {sorted(unchecked)}")
    assert len(checked) >= 90, sorted(checked)
    assert not failures, "responses that fail GitHub's schema:\n" + "\n".join(failures)
