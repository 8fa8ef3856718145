"""Linear's own MCP tools (mcp.linear.app's names and schemas) on the Linear twin's MCP door,
driven with the official `mcp` client: each write must change the world as the GraphQL API
would, checked afterwards over GraphQL, and each call is a tape row naming its tool."""

import json
import pathlib
import urllib.request

from test_mcp import run, twin

ROOT = pathlib.Path(__file__).resolve().parents[2]
SEED = ROOT / "tests" / "tasks-compat" / "bundled" / "24-linear-issue-triage.seed.json"


def seed():
    s = json.loads(SEED.read_text())
    return s.get("linear", s)


async def ok(c, tool, **args):
    """A tool call that must succeed: its structured answer. (Linear's tools take `name`, which
    `Mcp.ok` would take for the tool's own.)"""
    r = await c.session.call_tool(tool, args)
    assert not r.isError, f"{tool} failed: {r.content[0].text}"
    return r.structuredContent


def graphql(sb, query, variables=None):
    body = json.dumps({"query": query, "variables": variables or {}}).encode()
    req = urllib.request.Request(sb.url("linear") + "/graphql", data=body, method="POST",
                                 headers={"Authorization": sb.token, "Content-Type": "application/json"})
    with urllib.request.urlopen(req) as resp:
        out = json.load(resp)
    assert "errors" not in out, out
    return out["data"]


def test_save_issue_creates_then_updates_by_names_and_list_issues_filters(pome_server, new_sandbox):
    sb = new_sandbox(["linear"], seed=seed())

    async def go():
        async with twin(pome_server, sb.id, sb.token, "linear") as c:
            created = await ok(c, "save_issue", title="Checkout fails on Safari", team="Engineering", assignee="me",
                                 state="Todo", labels=["Agent"], priority=1, description="Repro: open checkout")
            updated = await ok(c, "save_issue", id=created["identifier"], state="started", assignee="dev@pome-twin.test",
                                 patch=[{"op": "append", "text": " in Safari 17"}], dueDate="2026-08-01")
            mine = await ok(c, "list_issues", assignee="dev@pome-twin.test", state="In Progress")
            urgent = await ok(c, "list_issues", team="ENG", priority=1, label="agent", fields=["title", "status"])
            missing = await c.call("save_issue", title="No team")
            return created, updated, mine, urgent, missing

    created, updated, mine, urgent, missing = run(go())
    assert created["identifier"] == "ENG-3" and created["status"] == "Todo" and created["labels"] == ["Agent"]
    assert created["priority"] == {"value": 1, "name": "Urgent"}
    assert updated["status"] == "In Progress" and updated["statusType"] == "started"
    assert [i["identifier"] for i in mine["issues"]] == ["ENG-3"]
    assert urgent["issues"] == [{"id": created["id"], "title": "Checkout fails on Safari", "status": "In Progress"}]
    assert missing.isError and "team" in missing.content[0].text

    issue = graphql(sb, '{ issue(id: "ENG-3") { title description dueDate priority state { name } assignee { email } labels { nodes { name } } } }')["issue"]
    assert issue == {"title": "Checkout fails on Safari", "description": "Repro: open checkout in Safari 17", "dueDate": "2026-08-01",
                     "priority": 1, "state": {"name": "In Progress"}, "assignee": {"email": "dev@pome-twin.test"},
                     "labels": {"nodes": [{"name": "Agent"}]}}
    rows = [r for r in sb.events("linear") if r.get("via") == "mcp"]
    assert [r["tool"] for r in rows] == ["save_issue", "save_issue", "list_issues", "list_issues", "save_issue"]
    assert [r["action"] for r in rows[:2]] == ["issueCreate", "issueUpdate"]
    assert rows[0]["state_mutation"] and rows[0]["state_delta"] and rows[1]["state_delta"] and not rows[2]["state_delta"]


def test_comments_threads_and_deletes(pome_server, new_sandbox):
    sb = new_sandbox(["linear"], seed=seed())

    async def go():
        async with twin(pome_server, sb.id, sb.token, "linear") as c:
            top = await ok(c, "save_comment", issueId="ENG-1", body="Looking into it")
            reply = await ok(c, "save_comment", parentId=top["id"], body="Found the cause")
            await ok(c, "save_comment", id=top["id"], body="Looking into it now")
            listed = await ok(c, "list_comments", issueId="ENG-1")
            await ok(c, "delete_comment", id=reply["id"])
            both = await c.call("list_comments", issueId="ENG-1", projectId="x")
            return top, reply, listed, both

    top, reply, listed, both = run(go())
    assert reply["parentId"] == top["id"]
    assert {c["body"] for c in listed["comments"]} == {"Looking into it now", "Found the cause", "Please prioritize this backlog item."}
    assert both.isError
    comments = graphql(sb, '{ issue(id: "ENG-1") { comments { nodes { id body parent { id } } } } }')["issue"]["comments"]["nodes"]
    assert sorted(c["body"] for c in comments) == ["Looking into it now", "Please prioritize this backlog item."]


def test_projects_milestones_initiatives_and_status_updates(pome_server, new_sandbox):
    sb = new_sandbox(["linear"], seed=seed())

    async def go():
        async with twin(pome_server, sb.id, sb.token, "linear") as c:
            project = await ok(c, "save_project", name="Billing v2", addTeams=["ENG"], summary="New billing", lead="me")
            milestone = await ok(c, "save_milestone", project="Billing v2", name="Private beta", targetDate="2026-09-15")
            await ok(c, "save_milestone", project=project["id"], id="Private beta", description="Ten customers")
            milestones = await ok(c, "list_milestones", project="Billing v2")
            await ok(c, "save_issue", id="ENG-2", project="Billing v2", milestone="Private beta")
            initiative = await ok(c, "save_initiative", name="Revenue 2026", owner="me", status="Active")
            await ok(c, "save_project", id="Billing v2", addInitiatives=["Revenue 2026"])
            got = await ok(c, "get_initiative", query="Revenue 2026", includeProjects=True)
            update = await ok(c, "save_status_update", type="project", project="Billing v2", body="On track so far", health="onTrack")
            updates = await ok(c, "get_status_updates", type="project", project="Billing v2")
            return project, milestone, milestones, initiative, got, update, updates

    project, milestone, milestones, initiative, got, update, updates = run(go())
    assert [m["name"] for m in milestones["milestones"]] == ["Private beta"]
    assert got["projects"] == [{"id": project["id"], "name": "Billing v2"}]
    assert [u["id"] for u in updates["statusUpdates"]] == [update["id"]]

    d = graphql(sb, """query($p: String!, $m: String!, $i: String!) {
        project(id: $p) { name description lead { id } teams { nodes { key } } }
        projectMilestone(id: $m) { name description targetDate project { id } }
        initiative(id: $i) { name status owner { id } }
        issue(id: "ENG-2") { project { id } projectMilestone { id } }
        projectUpdates { nodes { id body health project { id } } } }""",
                {"p": project["id"], "m": milestone["id"], "i": initiative["id"]})
    assert d["project"]["name"] == "Billing v2" and d["project"]["description"] == "New billing" and d["project"]["teams"]["nodes"] == [{"key": "ENG"}]
    assert d["projectMilestone"] == {"name": "Private beta", "description": "Ten customers", "targetDate": "2026-09-15", "project": {"id": project["id"]}}
    assert d["initiative"]["name"] == "Revenue 2026" and d["initiative"]["status"] == "Active" and d["initiative"]["owner"]["id"] == d["project"]["lead"]["id"]
    assert d["issue"] == {"project": {"id": project["id"]}, "projectMilestone": {"id": milestone["id"]}}
    assert d["projectUpdates"]["nodes"] == [{"id": update["id"], "body": "On track so far", "health": "onTrack", "project": {"id": project["id"]}}]
    actions = [r["action"] for r in sb.events("linear") if r.get("via") == "mcp"]
    assert actions[:2] == ["projectCreate", "projectMilestoneCreate"] and "initiativeCreate" in actions and "projectUpdateCreate" in actions


def test_attachment_upload_flow_puts_bytes_to_the_signed_url_then_links_the_asset(pome_server, new_sandbox):
    sb = new_sandbox(["linear"], seed=seed())
    data = b"\x89PNG fake screenshot"

    async def prepare():
        async with twin(pome_server, sb.id, sb.token, "linear") as c:
            return await ok(c, "prepare_attachment_upload", issue="ENG-2", filename="shot.png", contentType="image/png", size=len(data))

    prepared = run(prepare())
    up = prepared["uploadRequest"]
    assert up["headers"]["x-goog-content-length-range"] == f"{len(data)},{len(data)}"
    # As the tool's description says: PUT the raw bytes with the signed headers, outside MCP
    # and without the agent token.
    req = urllib.request.Request(up["url"], data=data, method=up["method"], headers=up["headers"])
    with urllib.request.urlopen(req) as resp:
        assert resp.status == 200

    async def link():
        async with twin(pome_server, sb.id, sb.token, "linear") as c:
            return await ok(c, "create_attachment_from_upload", issue="ENG-2", assetUrl=prepared["assetUrl"], title="Screenshot")

    attachment = run(link())
    nodes = graphql(sb, '{ issue(id: "ENG-2") { attachments { nodes { id title url } } } }')["issue"]["attachments"]["nodes"]
    assert nodes == [{"id": attachment["id"], "title": "Screenshot", "url": prepared["assetUrl"]}]
    actions = [r["action"] for r in sb.events("linear")]
    assert "fileUpload" in actions and "fileUpload.put" in actions and "attachmentCreate" in actions
