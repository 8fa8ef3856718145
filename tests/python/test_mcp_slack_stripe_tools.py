"""The Slack and Stripe vendor MCP tools that are more than one API call, driven with the
official `mcp` client; the world they leave is checked through the vendors' own SDKs (slack_sdk,
stripe) or the twin's state, so a tool and the API calls it stands for cannot disagree."""

import json

import pytest
from slack_sdk import WebClient

from test_mcp import run, twin

ENG, RANDOM = "C0ENG00001", "C0RANDOM01"
BOB, CAROL = "U0BOB00001", "U0CAROL001"


def slack_client(sb):
    return WebClient(token=sb.token, base_url=sb.url("slack") + "/api/", retry_handlers=[])


def text_of(result):
    return "".join(c.text for c in result.content if c.type == "text")


# --- Slack ---------------------------------------------------------------------------------

def test_slack_canvas_tools_and_the_web_api_share_one_canvas(pome_server, new_sandbox):
    sb = new_sandbox(["slack"])
    sdk = slack_client(sb)

    async def create():
        async with twin(pome_server, sb.id, sb.token, "slack") as c:
            made = await c.ok("slack_create_canvas", title="Launch plan", content="# Goals\nShip v2.\n\n## Risks\n- flaky tests")
            return made["canvas"]["canvas_id"]

    canvas = run(create())
    # The Web API sees the canvas the tool made, section by section.
    risks = sdk.canvases_sections_lookup(canvas_id=canvas, criteria={"section_types": ["h2"]})["sections"]
    assert len(risks) == 1
    sdk.canvases_edit(canvas_id=canvas, changes=[{"operation": "insert_after", "section_id": risks[0]["id"],
                                                  "document_content": {"type": "markdown", "markdown": "Owner: bob"}}])

    async def read_and_update():
        async with twin(pome_server, sb.id, sb.token, "slack") as c:
            read = (await c.ok("slack_read_canvas", canvas_id=canvas))["canvas"]
            assert "Owner: bob" in read["markdown"]
            mapping = read["section_id_mapping"]
            owner = next(s["section_id"] for s in mapping if s["markdown"] == "Owner: bob")
            title = mapping[0]["section_id"]
            updated = await c.ok("slack_update_canvas", canvas_id=canvas, sections=[
                {"edit_type": "replace", "section_id": owner, "content": "Owner: <@U0CAROL001>"},
                {"edit_type": "replace", "section_id": title, "content": "Launch plan v2"},
            ])
            stale = await c.call("slack_update_canvas", canvas_id=canvas, sections=[{"edit_type": "delete", "section_id": owner},
                                                                                  {"edit_type": "delete", "section_id": owner}])
            assert stale.isError and "canvas_editing_failed" in text_of(stale)
            return updated["canvas"]

    after = run(read_and_update())
    assert after["title"] == "Launch plan v2"
    state = sb.state("slack")
    [kept] = state["canvases"]
    assert kept["title"] == "Launch plan v2"
    assert [s["markdown"] for s in kept["sections"]] == ["# Goals", "Ship v2.", "## Risks", "Owner: <@U0CAROL001>", "- flaky tests"]
    found = sdk.canvases_sections_lookup(canvas_id=canvas, criteria={"contains_text": "U0CAROL001"})["sections"]
    assert len(found) == 1
    # A tool call and the Web API calls are taped alike.
    tools = [r for r in sb.events("slack") if r.get("via") == "mcp"]
    assert {r.get("tool") for r in tools} >= {"slack_create_canvas", "slack_read_canvas", "slack_update_canvas"}


def test_slack_create_conversation_makes_what_the_web_api_shows(pome_server, new_sandbox):
    sb = new_sandbox(["slack"])
    sdk = slack_client(sb)

    async def go():
        async with twin(pome_server, sb.id, sb.token, "slack") as c:
            ch = await c.ok("slack_create_conversation", channel_name="launch-room", user_ids=[BOB, CAROL], is_private=True)
            dm = await c.ok("slack_create_conversation", user_ids=[BOB])
            taken = await c.call("slack_create_conversation", channel_name="launch-room")
            assert taken.isError and "name_taken" in text_of(taken)
            return ch["channel"]["id"], dm["channel"]["id"]

    channel, dm = run(go())
    info = sdk.conversations_info(channel=channel)["channel"]
    assert info["name"] == "launch-room" and info["is_private"]
    assert set(sdk.conversations_members(channel=channel)["members"]) == {"U0AGENT001", BOB, CAROL}
    assert sdk.conversations_info(channel=dm)["channel"]["is_im"]


def test_slack_drafts_are_stored_and_sending_one_removes_it(pome_server, new_sandbox):
    sb = new_sandbox(["slack"])
    sdk = slack_client(sb)

    async def draft():
        async with twin(pome_server, sb.id, sb.token, "slack") as c:
            d = await c.ok("slack_send_message_draft", channel_id=ENG, message="Release notes are ready")
            again = await c.call("slack_send_message_draft", channel_id=ENG, message="second")
            assert again.isError and "draft_already_exists" in text_of(again)
            return d

    d = run(draft())
    assert d["channel_link"].endswith(f"/{ENG}")
    [kept] = sb.state("slack")["drafts"]
    assert (kept["channel"], kept["text"]) == (ENG, "Release notes are ready")
    history = sdk.conversations_history(channel=ENG)["messages"]
    assert not any(m["text"] == "Release notes are ready" for m in history), "a draft is not sent"

    async def send():
        async with twin(pome_server, sb.id, sb.token, "slack") as c:
            return await c.ok("slack_send_message", channel_id=ENG, message="Release notes are ready", draft_id=d["draft_id"])

    sent = run(send())
    assert sdk.conversations_history(channel=ENG)["messages"][0]["ts"] == sent["ts"]
    assert sb.state("slack")["drafts"] == []


def test_slack_searches_answer_from_the_world(pome_server, new_sandbox):
    sb = new_sandbox(["slack"])
    sdk = slack_client(sb)
    sdk.conversations_create(name="deploy-watch", is_private=True)
    sdk.chat_postMessage(channel="deploy-watch", text="private deploy notes")

    async def go():
        async with twin(pome_server, sb.id, sb.token, "slack") as c:
            public = await c.ok("slack_search_public", query="deploy", content_types="messages")
            both = await c.ok("slack_search_public_and_private", query="deploy", content_types="messages",
                              channel_types="private_channel", include_bots=True)
            channels = await c.ok("slack_search_channels", query="deploy", channel_types="public_channel,private_channel")
            users = await c.ok("slack_search_users", query="carol@acme")
            emoji = await c.ok("slack_search_emojis", query="ship,nothing-like-this")
            return public, both, channels, users, emoji

    public, both, channels, users, emoji = run(go())
    assert public["messages"] and all(not m["channel"]["is_private"] for m in public["messages"])
    assert [m["text"] for m in both["messages"]] == ["private deploy notes"]
    assert [c["name"] for c in channels["channels"]] == ["deploy-watch"]
    assert [u["id"] for u in users["users"]] == [CAROL]
    assert [e["name"] for e in emoji["emojis"]] == ["shipit"]


def test_slack_read_tools_take_the_vendors_defaults(pome_server, new_sandbox):
    sb = new_sandbox(["slack"])

    async def go():
        async with twin(pome_server, sb.id, sb.token, "slack") as c:
            me = await c.ok("slack_read_user_profile")
            members = await c.ok("slack_list_channel_members", channel_id=ENG, response_format="ids_only")
            with_bots = await c.ok("slack_list_channel_members", channel_id=ENG, response_format="ids_only", include_bots=True)
            return me, members, with_bots

    me, members, with_bots = run(go())
    assert me["user"]["id"] == "U0AGENT001"
    assert "U0AGENT001" not in members["members"] and "U0AGENT001" in with_bots["members"]
