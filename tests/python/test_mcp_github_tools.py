"""GitHub's MCP server's merged tools (issue_read, issue_write, sub_issue_write,
pull_request_read, pull_request_review_write, search_pull_requests, …) over a real MCP client
against the GitHub twin: what they answer, and what they change in the world and on the tape."""

import json
import urllib.request

from mcp.shared.exceptions import McpError
from test_mcp import run, twin

# Every sandbox here has the twin's default world: org acme, repository acme/api with issues
# #1 (open) and #2 (closed), pull request #3 (add-health-check → main, green) and milestone 1.


def text_of(r):
    return "".join(c.text for c in r.content if c.type == "text")


def issues_of(state, repo="acme/api"):
    r = next(r for r in state["repositories"] if r["full_name"] == repo)
    return {i["number"]: i for i in r["issues"]}, r


def test_issue_write_and_issue_read_change_and_show_the_world(pome_server, new_sandbox):
    sb = new_sandbox(["github"])

    async def go():
        async with twin(pome_server, sb.id, sb.token, "github") as gh:
            made = await gh.ok("issue_write", method="create", owner="acme", repo="api", title="Checkout times out",
                               body="After 30 s", labels=["bug"], assignees=["alice"], type="Bug")
            number = int(made["url"].rsplit("/", 1)[1])
            got = await gh.ok("issue_read", method="get", owner="acme", repo="api", issue_number=number)
            await gh.ok("add_issue_comment", owner="acme", repo="api", issue_number=number, body="Looking")
            comments = await gh.ok("issue_read", method="get_comments", owner="acme", repo="api", issue_number=number)
            labels = await gh.ok("issue_read", method="get_labels", owner="acme", repo="api", issue_number=number)
            closed = await gh.ok("issue_write", method="update", owner="acme", repo="api", issue_number=number,
                                 state="closed", state_reason="duplicate", duplicate_of=1)
            no_dup = await gh.call("issue_write", method="update", owner="acme", repo="api", issue_number=number,
                                   state="closed", state_reason="duplicate")
            try:
                await gh.call("issue_read", method="delete", owner="acme", repo="api", issue_number=1)
                bad_method = None
            except McpError as e:
                bad_method = e
            return made, number, got, comments, labels, closed, no_dup, bad_method

    made, number, got, comments, labels, closed, no_dup, bad_method = run(go())
    assert set(made) == {"id", "url"} and number == 4
    assert got["title"] == "Checkout times out" and got["issue_type"] == "Bug" and got["assignees"] == ["alice"]
    assert got["has_parent"] is False and got["closed_by_pull_requests"] == {"total_count": 0, "references": []}
    assert [c["body"] for c in comments] == ["Looking"]
    assert labels["totalCount"] == 1 and [l["name"] for l in labels["labels"]] == ["bug"]
    assert closed["id"] == made["id"]
    assert no_dup.isError and "duplicate_of" in text_of(no_dup)
    assert bad_method is not None and "is not one of" in str(bad_method), "the vendor's enum refuses an unknown method"
    issues, repo = issues_of(sb.state("github"))
    assert issues[4]["state"] == "closed" and issues[4]["state_reason"] == "duplicate"
    assert issues[4]["assignees"] == ["alice"] and issues[4]["labels"] == ["bug"] and issues[4]["type"] == "Bug"
    assert any(e["event"] == "marked_as_duplicate" and e["detail"] == "acme/api#1" for e in repo["events"])
    rows = [r for r in sb.events("github") if r.get("via") == "mcp"]
    assert [r["tool"] for r in rows][:2] == ["issue_write", "issue_read"]


def test_an_issue_written_over_mcp_is_the_issue_written_over_rest(pome_server, new_sandbox):
    """Grading cannot tell the door: the same issue, through issue_write or POST /issues."""
    mcp_sb, rest_sb = new_sandbox(["github"]), new_sandbox(["github"])

    async def go():
        async with twin(pome_server, mcp_sb.id, mcp_sb.token, "github") as gh:
            await gh.ok("issue_write", method="create", owner="acme", repo="api", title="Same", body="b",
                        labels=["bug", "ui"], assignees=["bob"], milestone=1)

    run(go())
    req = urllib.request.Request(f"{rest_sb.url('github')}/repos/acme/api/issues", method="POST",
                                 data=json.dumps({"title": "Same", "body": "b", "labels": ["bug", "ui"], "assignees": ["bob"], "milestone": 1}).encode(),
                                 headers={"Authorization": f"Bearer {rest_sb.token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req) as resp:
        assert resp.status == 201

    def world(sb):
        issues, repo = issues_of(sb.state("github"))
        return issues[4], repo["labels"], repo["milestones"], repo["events"]

    a, b = world(mcp_sb), world(rest_sb)
    strip = lambda i: {k: v for k, v in i.items() if k not in ("created_at", "updated_at")}
    assert strip(a[0]) == strip(b[0])
    assert [l["name"] for l in a[1]] == [l["name"] for l in b[1]]
    assert [m["open_issues"] for m in a[2]] == [m["open_issues"] for m in b[2]] == [1]
    changed = lambda sb: [c["entity"] for r in sb.events("github") if r.get("method") != "GET" for c in r.get("changes", [])]
    assert changed(mcp_sb) == changed(rest_sb)


def test_sub_issues_through_sub_issue_write(pome_server, new_sandbox):
    sb = new_sandbox(["github"])

    async def go():
        async with twin(pome_server, sb.id, sb.token, "github") as gh:
            ids = []
            for t in ("Design", "Build", "Ship"):
                made = await gh.ok("issue_write", method="create", owner="acme", repo="api", title=t)
                ids.append(int(made["id"]))
            for i in ids:
                await gh.ok("sub_issue_write", method="add", owner="acme", repo="api", issue_number=1, sub_issue_id=i)
            await gh.ok("sub_issue_write", method="reprioritize", owner="acme", repo="api", issue_number=1,
                        sub_issue_id=ids[2], before_id=ids[0])
            twice = await gh.call("sub_issue_write", method="add", owner="acme", repo="api", issue_number=2, sub_issue_id=ids[0])
            await gh.ok("sub_issue_write", method="remove", owner="acme", repo="api", issue_number=1, sub_issue_id=ids[1])
            kids = await gh.ok("issue_read", method="get_sub_issues", owner="acme", repo="api", issue_number=1)
            parent = await gh.ok("issue_read", method="get_parent", owner="acme", repo="api", issue_number=4)
            summary = await gh.ok("issue_read", method="get", owner="acme", repo="api", issue_number=1)
            return twice, kids, parent, summary

    twice, kids, parent, summary = run(go())
    assert twice.isError, "an issue has one parent unless replace_parent is set"
    assert [k["title"] for k in kids] == ["Ship", "Design"]
    assert parent["parent"]["number"] == 1 and parent["parent"]["repository"] == "acme/api"
    assert summary["sub_issues_summary"] == {"total": 2, "completed": 0, "percent_completed": 0}
    issues, _ = issues_of(sb.state("github"))
    assert issues[1]["sub_issues"] == ["acme/api#6", "acme/api#4"] and issues[4]["parent"] == "acme/api#1"


def test_a_pending_review_with_a_comment_submitted_then_its_thread_resolved(pome_server, new_sandbox):
    sb = new_sandbox(["github"])
    pr = dict(owner="acme", repo="api", pullNumber=3)

    async def go():
        async with twin(pome_server, sb.id, sb.token, "github") as gh:
            pending = await gh.call("pull_request_review_write", method="create", **pr)
            comment = await gh.call("add_comment_to_pending_review", path="src/app.py", body="Name it healthz?",
                                    subjectType="LINE", line=5, side="RIGHT", **pr)
            submitted = await gh.call("pull_request_review_write", method="submit_pending", event="COMMENT", body="One nit", **pr)
            threads = await gh.ok("pull_request_read", method="get_review_comments", **pr)
            comment_id = threads["reviewThreads"][0]["comments"][0]["id"]
            reply = await gh.ok("add_reply_to_pull_request_comment", commentId=comment_id, body="Done", **pr)
            thread = threads["reviewThreads"][0]["id"]
            resolved = await gh.call("pull_request_review_write", method="resolve_thread", threadId=thread, **pr)
            assert text_of(resolved) == "review thread resolved successfully"
            after = await gh.ok("pull_request_read", method="get_review_comments", **pr)
            reviews = await gh.ok("pull_request_read", method="get_reviews", **pr)
            diff = await gh.call("pull_request_read", method="get_diff", **pr)
            status = await gh.ok("pull_request_read", method="get_status", **pr)
            return pending, comment, submitted, threads, reply, after, reviews, diff, status

    pending, comment, submitted, threads, reply, after, reviews, diff, status = run(go())
    assert text_of(pending) == "pending pull request created"
    assert text_of(comment) == "pull request review comment successfully added to pending review"
    assert text_of(submitted) == "pending pull request review successfully submitted"
    assert threads["totalCount"] == 1 and threads["reviewThreads"][0]["isResolved"] is False
    assert set(reply) == {"id", "url"} and reply["url"].endswith(f"#discussion_r{reply['id']}")
    t = after["reviewThreads"][0]
    assert t["isResolved"] is True and [c["body"] for c in t["comments"]] == ["Name it healthz?", "Done"]
    # The submitted review, and the one GitHub wraps a lone reply in.
    assert [(r["state"], r["body"]) for r in reviews] == [("COMMENTED", "One nit"), ("COMMENTED", "")]
    assert "+def health():" in text_of(diff)
    assert status["state"] == "success"
    st = sb.state("github")
    repo = next(r for r in st["repositories"] if r["full_name"] == "acme/api")
    root = next(c for c in repo["review_comments"] if c["in_reply_to"] is None)
    assert root["resolved"] is True and root["line"] == 5


def test_search_pull_requests_list_issues_cursors_and_copilot(pome_server, new_sandbox):
    sb = new_sandbox(["github"])

    async def go():
        async with twin(pome_server, sb.id, sb.token, "github") as gh:
            prs = await gh.ok("search_pull_requests", query="health", owner="acme", repo="api", fields=["number", "title"])
            issues = await gh.ok("search_issues", query="health")
            first = await gh.ok("list_issues", owner="acme", repo="api", perPage=1, fields=["number"], orderBy="CREATED_AT", direction="ASC")
            second = await gh.ok("list_issues", owner="acme", repo="api", perPage=1, fields=["number"], orderBy="CREATED_AT",
                                 direction="ASC", after=first["pageInfo"]["endCursor"])
            assigned = await gh.ok("assign_copilot_to_issue", owner="acme", repo="api", issue_number=1)
            requested = await gh.call("request_copilot_review", owner="acme", repo="api", pullNumber=3)
            assert not requested.isError and text_of(requested) == "", "GitHub's server answers nothing"
            review = await gh.ok("pull_request_read", method="get", owner="acme", repo="api", pullNumber=3)
            return prs, issues, first, second, assigned, review

    prs, issues, first, second, assigned, review = run(go())
    assert prs["items"] == [{"number": 3, "title": "Add a health check"}]
    assert issues["total_count"] == 0, "search_issues never finds pull requests"
    assert first["issues"] == [{"number": 1}] and first["totalCount"] == 2 and first["pageInfo"]["hasNextPage"] is True
    assert second["issues"] == [{"number": 2}] and second["pageInfo"]["hasNextPage"] is False
    assert assigned["issue_number"] == 1 and assigned["message"].startswith("successfully assigned copilot to issue")
    assert [u["login"] for u in review["requested_reviewers"]] == ["Copilot"]
    issues, repo = issues_of(sb.state("github"))
    assert issues[1]["assignees"] == ["Copilot"]
    assert repo["pull_requests"][0]["requested_reviewers"] == ["Copilot"]


CI = "name: CI\non: [push, workflow_dispatch]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - run: make test\n"


def test_the_actions_and_gists_toolsets_drive_the_same_world_as_rest(pome_server, new_sandbox):
    seed = {"repositories": [{"owner": "acme", "name": "api",
                              "files": [{"path": "README.md", "content": "# api\n"}, {"path": ".github/workflows/ci.yml", "content": CI}],
                              "workflow_runs": [{"workflow": "ci.yml", "conclusion": "failure"}]}]}
    sb = new_sandbox(["github"], seed=seed)

    async def go():
        async with twin(pome_server, sb.id, sb.token, "github") as gh:
            runs = await gh.ok("actions_list", method="list_workflow_runs", owner="acme", repo="api", resource_id="ci.yml",
                               workflow_runs_filter={"status": "completed"})
            failed = runs["workflow_runs"][0]["id"]
            logs = await gh.ok("get_job_logs", owner="acme", repo="api", run_id=failed, failed_only=True, return_content=True)
            queued = await gh.ok("actions_run_trigger", method="run_workflow", owner="acme", repo="api", workflow_id="ci.yml", ref="main")
            rerun = await gh.ok("actions_run_trigger", method="rerun_failed_jobs", owner="acme", repo="api", run_id=failed)
            made = await gh.ok("create_gist", filename="triage.md", content="# triage\n", description="CI triage notes")
            listed = await gh.ok("list_gists")
            return runs, logs, queued, rerun, made, listed

    runs, logs, queued, rerun, made, listed = run(go())
    assert runs["total_count"] == 1 and runs["workflow_runs"][0]["conclusion"] == "failure"
    assert logs["failed_jobs"] == 1 and "##[error]" in logs["logs"][0]["logs_content"]
    assert queued["status_code"] == 204 and rerun["status_code"] == 201
    assert set(made) == {"id", "url"} and [g["id"] for g in listed] == [made["id"]]
    state = sb.state("github")
    wf_runs = state["repositories"][0]["workflow_runs"]
    assert [r["event"] for r in wf_runs] == ["push", "workflow_dispatch"]
    assert wf_runs[0]["run_attempt"] == 2, "re-running the failed jobs made a second attempt"
    assert [g["description"] for g in state["gists"]] == ["CI triage notes"]
    tools = [r["tool"] for r in sb.events("github") if r.get("via") == "mcp"]
    assert tools == ["actions_list", "get_job_logs", "actions_run_trigger", "actions_run_trigger", "create_gist", "list_gists"]
