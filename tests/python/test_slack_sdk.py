"""The Slack twin, driven only through slack_sdk's WebClient: the work an agent does (read
channels and threads, post, reply, edit, delete, react, pin, search, DMs, channel lifecycle,
file upload, long history), the error paths as SlackApiError with Slack's codes, and every
response checked against Slack's published Web API description."""

import copy
import json
import pathlib
import urllib.request

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SPECS = ROOT / "tests" / "specs"
TASKS = ROOT / "tests" / "tasks-compat"

ENG, ALERTS, GENERAL, RANDOM, SECURITY, LEADERSHIP = (
    "C0ENG00001", "C0ENGALRT1", "C0GENERAL1", "C0RANDOM01", "C0SECURTY1", "C0LEADERS1")
AGENT, ALICE, BOB, CAROL = "U0AGENT001", "U0ALICE001", "U0BOB00001", "U0CAROL001"


def client_for(sb, token=None):
    return WebClient(token=sb.token if token is None else token,
                     base_url=sb.url("slack") + "/api/", retry_handlers=[])


@pytest.fixture
def sb(new_sandbox):
    return new_sandbox(["slack"])


@pytest.fixture
def slack(sb):
    return client_for(sb)


def slack_error(fn, *args, **kwargs):
    with pytest.raises(SlackApiError) as e:
        fn(*args, **kwargs)
    return e.value.response


# --- realistic agent work ------------------------------------------------------------------

def test_auth_test_names_the_bot(slack, sb):
    me = slack.auth_test()
    assert me["user_id"] == AGENT and me["bot_id"] == "B0AGENT0001"
    assert me["team"] == "Acme" and me["url"].startswith(sb.url("slack"))


def test_read_a_channel_and_its_thread(slack):
    channels = slack.conversations_list()["channels"]
    eng = next(c for c in channels if c["name"] == "eng")
    assert eng["id"] == ENG and eng["is_member"]
    history = slack.conversations_history(channel=ENG)["messages"]
    parent = next(m for m in history if m.get("reply_count"))
    assert parent["reply_count"] == 3
    assert parent["reply_users"] == [BOB, ALICE, CAROL]
    thread = slack.conversations_replies(channel=ENG, ts=parent["ts"])["messages"]
    assert [m["text"] for m in thread][1:] == [
        "The orders migration <https://github.com/acme/api/pull/42|#42> has to land first.",
        "Landed. Good to go :rocket:",
        "Thanks both, starting the deploy.",
    ]
    assert all(m["thread_ts"] == parent["ts"] for m in thread)
    assert thread[-1]["ts"] == parent["latest_reply"]
    # Mentions stay as Slack stores them.
    assert any("<@U0CAROL001>" in m["text"] and "<#C0ENGALRT1|eng-alerts>" in m["text"] for m in history)


def test_post_and_reply_in_a_thread(slack):
    posted = slack.chat_postMessage(channel="#eng-alerts", text="CI is green again :white_check_mark:")
    assert posted["channel"] == ALERTS
    ts = posted["ts"]
    assert len(ts) == 17 and ts[10] == "."
    reply = slack.chat_postMessage(channel=ALERTS, text="root cause: flaky network mock", thread_ts=ts)
    broadcast = slack.chat_postMessage(channel=ALERTS, text="fixed in #43", thread_ts=ts, reply_broadcast=True)
    assert reply["message"]["thread_ts"] == ts and reply["message"]["parent_user_id"] == AGENT
    history = slack.conversations_history(channel=ALERTS, limit=3)["messages"]
    assert history[0]["subtype"] == "thread_broadcast" and history[0]["ts"] == broadcast["ts"]
    parent = next(m for m in history if m["ts"] == ts)
    assert parent["reply_count"] == 2 and parent["reply_users"] == [AGENT]
    assert parent["latest_reply"] == broadcast["ts"]
    assert reply["ts"] < broadcast["ts"]


def test_update_and_delete(slack):
    ts = slack.chat_postMessage(channel=ENG, text="deploy at 3pn")["ts"]
    updated = slack.chat_update(channel=ENG, ts=ts, text="deploy at 3pm")
    assert updated["text"] == "deploy at 3pm" and updated["message"]["edited"]["user"] == AGENT
    latest = slack.conversations_history(channel=ENG, limit=1)["messages"][0]
    assert latest["text"] == "deploy at 3pm"
    slack.chat_delete(channel=ENG, ts=ts)
    assert all(m["ts"] != ts for m in slack.conversations_history(channel=ENG)["messages"])
    assert slack_error(slack.chat_delete, channel=ENG, ts=ts)["error"] == "message_not_found"
    carol = slack.conversations_history(channel=ENG, oldest="0", inclusive=True)["messages"][-1]
    assert slack_error(slack.chat_update, channel=ENG, ts=carol["ts"], text="x")["error"] == "cant_update_message"


def test_react_and_pin(slack):
    ts = slack.conversations_history(channel=ENG, limit=1)["messages"][0]["ts"]
    slack.reactions_add(channel=ENG, timestamp=ts, name="eyes")
    assert slack_error(slack.reactions_add, channel=ENG, timestamp=ts, name="eyes")["error"] == "already_reacted"
    got = slack.reactions_get(channel=ENG, timestamp=ts)
    assert {"name": "eyes", "users": [AGENT], "count": 1} in got["message"]["reactions"]
    slack.reactions_remove(channel=ENG, timestamp=ts, name="eyes")
    assert slack_error(slack.reactions_remove, channel=ENG, timestamp=ts, name="eyes")["error"] == "no_reaction"
    slack.pins_add(channel=ENG, timestamp=ts)
    pins = slack.pins_list(channel=ENG)["items"]
    assert pins[0]["message"]["ts"] == ts and pins[0]["created_by"] == AGENT
    assert slack_error(slack.pins_add, channel=ENG, timestamp=ts)["error"] == "already_pinned"
    slack.pins_remove(channel=ENG, timestamp=ts)
    assert all(p["message"]["ts"] != ts for p in slack.pins_list(channel=ENG)["items"])


def test_search_with_modifiers(slack):
    found = slack.search_messages(query="deploy in:#eng from:@carol")["messages"]
    assert found["total"] == 2
    assert {m["channel"]["name"] for m in found["matches"]} == {"eng"}
    assert all(m["permalink"].startswith(slack.base_url[:-len("/api/")]) for m in found["matches"])
    assert slack.search_messages(query="has:link")["messages"]["total"] == 1
    assert slack.search_messages(query='"starting the deploy"')["messages"]["total"] == 1
    # Private channels the agent is not in are not searched; its own private ones are.
    assert slack.search_messages(query="Q3 numbers")["messages"]["total"] == 0
    assert slack.search_messages(query="staging database")["messages"]["total"] == 1
    page = slack.search_messages(query="after:2025-12-31", count=2, page=2)["messages"]
    assert page["paging"]["page"] == 2 and len(page["matches"]) == 2
    files = slack.search_files(query="checklist")["files"]
    assert files["matches"][0]["name"] == "deploy-checklist.md"
    assert slack_error(slack.search_messages, query="")["error"] == "no_query"


def test_open_a_dm_and_talk(slack):
    existing = slack.conversations_open(users=ALICE)
    assert existing["channel"]["id"] == "D0ALICEAGT1" and existing["already_open"]
    dm = slack.conversations_open(users=[BOB], return_im=True)["channel"]
    assert dm["id"].startswith("D") and dm["is_im"] and dm["user"] == BOB
    slack.chat_postMessage(channel=dm["id"], text="hi Bob, quick question")
    assert slack.conversations_history(channel=dm["id"])["messages"][0]["text"] == "hi Bob, quick question"
    group = slack.conversations_open(users=f"{BOB},{CAROL}")["channel"]["id"]
    assert slack.conversations_info(channel=group)["channel"]["is_mpim"]
    ims = slack.users_conversations(types="im")["channels"]
    assert {c["id"] for c in ims} >= {"D0ALICEAGT1", dm["id"]}


def test_create_archive_and_unarchive_a_channel(slack):
    created = slack.conversations_create(name="release-2-3")["channel"]
    cid = created["id"]
    assert created["is_member"] and created["creator"] == AGENT and created["name"] == "release-2-3"
    assert slack_error(slack.conversations_create, name="release-2-3")["error"] == "name_taken"
    assert slack_error(slack.conversations_create, name="Release 2.3")["error"] == "invalid_name_specials"
    slack.conversations_invite(channel=cid, users=[BOB, CAROL])
    assert set(slack.conversations_members(channel=cid)["members"]) == {AGENT, BOB, CAROL}
    slack.conversations_setTopic(channel=cid, topic="Shipping v2.3")
    slack.conversations_archive(channel=cid)
    info = slack.conversations_info(channel=cid)["channel"]
    assert info["is_archived"] and info["topic"]["value"] == "Shipping v2.3"
    assert slack_error(slack.chat_postMessage, channel=cid, text="hello?")["error"] == "is_archived"
    assert slack_error(slack.conversations_archive, channel=cid)["error"] == "already_archived"
    listed = slack.conversations_list(exclude_archived=True)["channels"]
    assert cid not in {c["id"] for c in listed}
    slack.conversations_unarchive(channel=cid)
    slack.chat_postMessage(channel=cid, text="back")


def test_upload_a_file(slack, sb):
    done = slack.files_upload_v2(channel=ENG, content="rollback plan:\n1. revert #42\n",
                                 filename="rollback.md", title="Rollback plan",
                                 initial_comment="here is the plan")
    fid = done["file"]["id"]
    info = slack.files_info(file=fid)["file"]
    assert info["title"] == "Rollback plan" and info["name"] == "rollback.md"
    assert info["size"] == len("rollback plan:\n1. revert #42\n") and info["channels"] == [ENG]
    assert info["url_private"].startswith(sb.url("slack") + "/")
    req = urllib.request.Request(info["url_private"], headers={"Authorization": f"Bearer {sb.token}"})
    with urllib.request.urlopen(req) as resp:
        assert resp.read() == b"rollback plan:\n1. revert #42\n"
    shared = slack.conversations_history(channel=ENG, limit=1)["messages"][0]
    assert shared["text"] == "here is the plan" and shared["files"][0]["id"] == fid
    assert fid in {f["id"] for f in slack.files_list(channel=ENG)["files"]}
    slack.files_delete(file=fid)
    assert slack_error(slack.files_info, file=fid)["error"] == "file_not_found"


def test_scheduled_message_posts_when_due(slack):
    now = int(float(slack.chat_postMessage(channel=ENG, text="clock")["ts"]))
    sched = slack.chat_scheduleMessage(channel=ENG, text="reminder: deploy freeze", post_at=now + 2)
    listed = slack.chat_scheduledMessages_list(channel=ENG)["scheduled_messages"]
    assert [m["id"] for m in listed] == [sched["scheduled_message_id"]]
    assert slack.conversations_history(channel=ENG, limit=1)["messages"][0]["text"] == "clock"
    import time
    time.sleep(2.5)
    latest = slack.conversations_history(channel=ENG, limit=1)["messages"][0]
    assert latest["text"] == "reminder: deploy freeze" and latest["user"] == AGENT
    assert slack.chat_scheduledMessages_list()["scheduled_messages"] == []


def test_people_groups_bookmarks_reminders(slack):
    assert [u["name"] for u in slack.users_list()["members"]] == ["pome-agent", "alice", "bob", "carol", "dave"]
    assert slack.users_lookupByEmail(email="carol@acme.test")["user"]["real_name"] == "Carol Okafor"
    assert slack.users_getPresence(user=CAROL)["presence"] == "away"
    profile = slack.users_profile_set(profile={"status_text": "deploying", "status_emoji": ":rocket:"})["profile"]
    assert profile["status_text"] == "deploying"
    assert slack.users_profile_get()["profile"]["status_emoji"] == ":rocket:"
    group = slack.usergroups_create(name="On-call", handle="oncall")["usergroup"]
    slack.usergroups_users_update(usergroup=group["id"], users=[BOB, CAROL])
    assert slack.usergroups_users_list(usergroup=group["id"])["users"] == [BOB, CAROL]
    handles = {g["handle"] for g in slack.usergroups_list()["usergroups"]}
    assert handles == {"eng-team", "oncall"}
    mark = slack.bookmarks_add(channel_id=ENG, title="Dashboards", type="link", link="https://grafana.acme.test")
    slack.bookmarks_edit(channel_id=ENG, bookmark_id=mark["bookmark"]["id"], title="Grafana")
    assert [b["title"] for b in slack.bookmarks_list(channel_id=ENG)["bookmarks"]] == ["Runbook", "Grafana"]
    slack.bookmarks_remove(channel_id=ENG, bookmark_id=mark["bookmark"]["id"])
    reminder = slack.reminders_add(text="check the deploy", time="in 15 minutes")["reminder"]
    assert [r["id"] for r in slack.reminders_list()["reminders"]] == [reminder["id"]]
    slack.reminders_delete(reminder=reminder["id"])
    assert slack.team_info()["team"]["name"] == "Acme"
    assert slack.emoji_list()["emoji"]["shipit"].endswith("/emoji/shipit.png")
    snooze = slack.dnd_setSnooze(num_minutes=30)
    assert snooze["snooze_enabled"] and slack.dnd_info()["snooze_enabled"]


def test_paginate_a_long_history(new_sandbox):
    messages = [{"user": "U1", "text": f"build #{i} passed"} for i in range(250)]
    seed = {"users": [{"id": "U1", "name": "ci"}, {"id": "UBOT", "name": "pome-agent", "is_bot": True}],
            "channels": [{"id": "CBUILDS", "name": "builds", "members": ["U1", "UBOT"], "messages": messages}]}
    slack = client_for(new_sandbox(["slack"], seed=seed))
    texts, pages = [], 0
    for page in slack.conversations_history(channel="CBUILDS", limit=100):
        pages += 1
        texts += [m["text"] for m in page["messages"]]
    assert pages == 3
    assert texts == [f"build #{i} passed" for i in reversed(range(250))]
    first = slack.conversations_history(channel="CBUILDS", limit=100)
    assert first["has_more"] and first["response_metadata"]["next_cursor"]
    members, cursor = [], None
    while True:
        resp = slack.users_list(limit=1, cursor=cursor)
        members += [m["id"] for m in resp["members"]]
        cursor = resp["response_metadata"]["next_cursor"]
        if not cursor:
            break
    assert members == ["U1", "UBOT"]


@pytest.mark.filterwarnings("ignore:The top-level `text` argument is missing")
def test_error_paths_raise_slack_api_error(slack, sb):
    cases = [
        (slack.chat_postMessage, dict(channel="C0NOPE0000", text="x"), "channel_not_found"),
        (slack.chat_postMessage, dict(channel=LEADERSHIP, text="x"), "channel_not_found"),
        (slack.chat_postMessage, dict(channel=RANDOM, text="x"), "not_in_channel"),
        (slack.chat_postMessage, dict(channel=ENG, text=""), "no_text"),
        (slack.chat_postMessage, dict(channel=ENG, text="x" * 40001), "msg_too_long"),
        (slack.conversations_history, dict(channel=RANDOM), "not_in_channel"),
        (slack.conversations_history, dict(channel=ENG, cursor="bm9wZQ=="), "invalid_cursor"),
        (slack.conversations_info, dict(channel=LEADERSHIP), "channel_not_found"),
        (slack.conversations_replies, dict(channel=ENG, ts="1000000000.000001"), "thread_not_found"),
        (slack.reactions_add, dict(channel=ENG, timestamp="1000000000.000001", name="x"), "message_not_found"),
        (slack.users_info, dict(user="U0NOBODY00"), "user_not_found"),
        (slack.users_lookupByEmail, dict(email="nobody@acme.test"), "users_not_found"),
        (slack.conversations_archive, dict(channel=GENERAL), "cant_archive_general"),
        (slack.conversations_kick, dict(channel=ENG, user=AGENT), "cant_kick_self"),
    ]
    for fn, kwargs, code in cases:
        resp = slack_error(fn, **kwargs)
        assert resp.status_code == 200 and resp["ok"] is False and resp["error"] == code, (fn.__name__, kwargs)
    assert slack_error(client_for(sb, token="xoxb-not-the-token").auth_test)["error"] == "invalid_auth"
    assert slack_error(client_for(sb, token="").auth_test)["error"] == "not_authed"
    unknown = slack_error(slack.api_call, "views.open")
    assert unknown["error"] == "unknown_method" and unknown.status_code == 501


def test_token_as_a_form_field_and_form_bodies(sb):
    anonymous = WebClient(base_url=sb.url("slack") + "/api/", retry_handlers=[])
    me = anonymous.api_call("auth.test", data={"token": sb.token})
    assert me["user_id"] == AGENT
    posted = anonymous.api_call("chat.postMessage", data={"token": sb.token, "channel": "eng", "text": "via form"})
    assert posted["channel"] == ENG and posted["message"]["text"] == "via form"


def test_rate_limit_injection(new_sandbox):
    seed = json.loads(json.dumps(DEFAULT_LIKE))
    seed["rate_limits"] = [{"method": "chat.postMessage", "after": 1, "count": 1, "retry_after": 7}]
    slack = client_for(new_sandbox(["slack"], seed=seed))
    slack.chat_postMessage(channel="CALERTS", text="one")
    resp = slack_error(slack.chat_postMessage, channel="CALERTS", text="two")
    assert resp.status_code == 429 and resp["error"] == "ratelimited"
    assert resp.headers.get("retry-after", resp.headers.get("Retry-After")) == "7"
    slack.chat_postMessage(channel="CALERTS", text="three")


DEFAULT_LIKE = {
    "team": {"id": "T_VIKTORHQ", "name": "Viktor HQ", "domain": "viktor-hq"},
    "users": [{"id": "U_AGENT", "name": "pome-agent", "real_name": "Viktor Bot"},
              {"id": "U_GAGAN", "name": "gagan", "real_name": "Gagan Devagiri"}],
    "channels": [{"id": "CALERTS", "name": "eng-alerts", "members": ["U_AGENT", "U_GAGAN"]}],
}


def task_seeds():
    out = []
    for path in sorted(TASKS.rglob("*.seed.json")):
        seed = json.loads(path.read_text())
        md = path.with_name(path.name.replace(".seed.json", ".md")).read_text()
        if "slack" in seed:
            out.append(pytest.param(seed["slack"], id=path.name))
        elif 'twins: ["slack"]' in md:
            out.append(pytest.param(seed, id=path.name))
    # An empty list would make pytest skip the test; a missing task set is a failure.
    assert len(out) >= 8, f"only {len(out)} Slack task seeds under {TASKS}"
    return out


@pytest.mark.parametrize("seed", task_seeds())
def test_task_seeds_boot_and_the_agent_can_work(new_sandbox, seed):
    sb = new_sandbox(["slack"], seed=seed)
    slack = client_for(sb)
    assert slack.auth_test()["user"] == "pome-agent"
    mine = slack.users_conversations(types="public_channel,private_channel")["channels"]
    assert mine, "the agent belongs to some channel"
    target = mine[0]["id"]
    slack.conversations_history(channel=target)
    slack.chat_postMessage(channel=target, text="PR #1 successfully merged")
    state = sb.state("slack")
    texts = [m["text"] for c in state["channels"] if c["id"] == target for m in c["messages"]]
    assert "PR #1 successfully merged" in texts


def cross_twin_envelopes():
    out = [pytest.param(json.loads(p.read_text()), id=p.name)
           for p in sorted((TASKS / "cross-twin").glob("*.seed.json"))]
    assert out, f"no cross-twin seeds under {TASKS}"
    return out


@pytest.mark.parametrize("envelope", cross_twin_envelopes())
def test_cross_twin_envelopes_seed_slack_beside_github(new_sandbox, envelope):
    """The product's own cross-twin shape: one sandbox, GitHub and Slack, seeded from one
    envelope; the agent reports to #eng-alerts and only Slack's world changes."""
    sb = new_sandbox(["github", "slack"], seed=envelope)
    slack = client_for(sb)
    alerts = next(c for c in slack.conversations_list()["channels"] if c["name"] == "eng-alerts")
    slack.chat_postMessage(channel=alerts["id"], text="PR https://github.com/viktor-hq/orders-service/pull/1 successfully merged")
    texts = [m["text"] for c in sb.state("slack")["channels"] if c["name"] == "eng-alerts" for m in c["messages"]]
    assert any("pull/1" in t and "successfully merged" in t for t in texts)


def test_bad_seed_is_refused_with_its_path(pome_server):
    status, body = pome_server.api("POST", "/v1/sandboxes", {
        "twins": ["slack"], "seed": {"users": [{"id": "U1", "name": "a"}],
                                     "channels": [{"name": "x", "members": ["U2"]}]}})
    assert status == 422, body
    assert "channels[0].members[0]" in json.dumps(body)


def test_the_tape_records_actions_and_changes(slack, sb):
    slack.chat_postMessage(channel=ENG, text="on the tape")
    slack.conversations_history(channel=ENG, limit=1)
    with pytest.raises(SlackApiError):
        slack.api_call("admin.users.list")
    rows = sb.events("slack")
    post = next(r for r in rows if r["action"] == "chat.postMessage")
    assert post["state_mutation"] and post["state_delta"][0]["entity"] == "message"
    read = next(r for r in rows if r["action"] == "conversations.history")
    assert not read["state_mutation"]
    assert rows[-1]["fidelity"] == "unsupported"


# --- responses against Slack's published Web API description -------------------------------

def _load_spec():
    return json.loads((SPECS / "slack" / "slack_web_openapi_v2.json").read_text())


def _anyof_tuples(node):
    """The spec writes alternatives as `items: [A, B]` (Swagger 2.0 has no oneOf). JSON Schema
    reads that as a tuple on arrays and ignores it elsewhere, so rewrite it as `anyOf` (of the
    element, for arrays), or nothing would be checked or every array would fail."""
    if isinstance(node, list):
        return [_anyof_tuples(x) for x in node]
    if not isinstance(node, dict):
        return node
    out = {k: _anyof_tuples(v) for k, v in node.items()}
    if isinstance(out.get("items"), list):
        if out.get("type") == "array":
            out["items"] = {"anyOf": out["items"]}
        else:
            out["anyOf"] = out.pop("items")
    return out


def _validator(spec, method, status):
    from jsonschema import Draft4Validator
    ops = spec["paths"].get("/" + method)
    if not ops:
        return None
    op = ops.get("post") or ops.get("get")
    schema = op["responses"].get(status, {}).get("schema")
    if schema is None:
        return None
    schema = _anyof_tuples(copy.deepcopy(schema))
    schema["definitions"] = _anyof_tuples(spec["definitions"])
    return Draft4Validator(schema)


# Where Slack itself sends more than its frozen 2021 description allows, the twin follows
# Slack. Each entry: the method, why, and the schema complaints that reason covers. Any other
# complaint fails the test.
KNOWN_DEVIATIONS = {
    "conversations.history (error)": ("`not_in_channel` (bots reading a channel they are not in) and `invalid_cursor` "
                                       "are codes Slack returns and documents today; the 2021 enum predates them",
                                       ["'not_in_channel' is not one of", "'invalid_cursor' is not one of"]),
    "chat.postMessage (error)": ("a `thread_ts` naming no message is refused as `thread_not_found` (the code "
                                 "conversations.replies uses) rather than posted into a thread nobody can see",
                                 ["'thread_not_found' is not one of"]),
    "chat.update": ("Slack echoes `blocks` as the array it stores; the schema types it as an object",
                    ["message/blocks"]),
    "conversations.history": ("edited messages carry `edited: {user, ts}`, which objs_message omits",
                              ["'edited' was unexpected"]),
    "conversations.replies": ("the schema's thread objects list text fields only; Slack sends the whole "
                              "message (bot_id, bot_profile, blocks, reactions, pinned_to, edited, parent_user_id)",
                              ["Additional properties are not allowed"]),
}


ERROR_CASES = [
    ("chat.postMessage", {"channel": "C0NOPE0000", "text": "x"}, "channel_not_found"),
    ("chat.postMessage", {"channel": RANDOM, "text": "x"}, "not_in_channel"),
    ("chat.postMessage", {"channel": ENG, "text": ""}, "no_text"),
    ("chat.postMessage", {"channel": ENG, "text": "x", "thread_ts": "1000000000.000001"}, "thread_not_found"),
    ("chat.update", {"channel": ENG, "ts": "1000000000.000001", "text": "x"}, "message_not_found"),
    ("chat.delete", {"channel": ENG, "ts": "1000000000.000001"}, "message_not_found"),
    ("conversations.history", {"channel": "C0NOPE0000"}, "channel_not_found"),
    ("conversations.history", {"channel": RANDOM}, "not_in_channel"),
    ("conversations.history", {"channel": ENG, "cursor": "bm9wZQ=="}, "invalid_cursor"),
    ("conversations.replies", {"channel": ENG, "ts": "1000000000.000001"}, "thread_not_found"),
    ("conversations.create", {"name": "general"}, "name_taken"),
    ("conversations.create", {"name": "Not Valid"}, "invalid_name_specials"),
    ("conversations.archive", {"channel": GENERAL}, "cant_archive_general"),
    ("conversations.leave", {"channel": GENERAL}, "cant_leave_general"),
    ("conversations.kick", {"channel": ENG, "user": AGENT}, "cant_kick_self"),
    ("conversations.invite", {"channel": ENG, "users": BOB}, "already_in_channel"),
    ("conversations.join", {"channel": SECURITY}, "method_not_supported_for_channel_type"),
    ("conversations.open", {}, "users_list_not_supplied"),
    ("conversations.setTopic", {"channel": ENG, "topic": "x" * 251}, "too_long"),
    ("reactions.add", {"channel": ENG, "timestamp": "1000000000.000001", "name": "x"}, "message_not_found"),
    ("reactions.remove", {"channel": ENG, "timestamp": "1000000000.000001", "name": "x"}, "message_not_found"),
    ("pins.add", {"channel": ENG}, "no_item_specified"),
    ("users.info", {"user": "U0NOBODY00"}, "user_not_found"),
    ("users.lookupByEmail", {"email": "nobody@acme.test"}, "users_not_found"),
    ("files.info", {"file": "F0NOPE0000"}, "file_not_found"),
    ("chat.deleteScheduledMessage", {"channel": ENG, "scheduled_message_id": "Q0NOPE0000"}, "invalid_scheduled_message_id"),
    ("reminders.delete", {"reminder": "Rm0NOPE0000"}, "not_found"),
    ("reminders.add", {"text": "x", "time": "whenever"}, "cannot_parse"),
]


def test_responses_fit_slacks_published_description(sb, slack):
    spec = _load_spec()
    ts = slack.chat_postMessage(channel=ENG, text="conformance", blocks=[
        {"type": "section", "text": {"type": "mrkdwn", "text": "*conformance*"}}])["ts"]
    slack.chat_postMessage(channel=ENG, text="reply", thread_ts=ts)
    typo = slack.chat_postMessage(channel=ENG, text="conformnace")["ts"]
    slack.reactions_add(channel=ENG, timestamp=ts, name="tada")
    slack.pins_add(channel=ENG, timestamp=ts)
    created = slack.conversations_create(name="conformance")["channel"]["id"]
    upload = slack.files_upload_v2(channel=ENG, content="x,y\n1,2\n", filename="data.csv", title="Data")
    fid = upload["file"]["id"]
    group = slack.usergroups_list()["usergroups"][0]["id"]
    reminder = slack.reminders_add(text="check CI", time="in 5 minutes")["reminder"]["id"]
    calls = [
        ("auth.test", {}), ("api.test", {"foo": "bar"}), ("bots.info", {"bot": "B0AGENT0001"}),
        ("team.info", {}), ("emoji.list", {}),
        ("chat.postMessage", {"channel": ENG, "text": "hi"}),
        ("chat.update", {"channel": ENG, "ts": typo, "text": "conformance", "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": "*conformance*"}}]}),
        ("chat.getPermalink", {"channel": ENG, "message_ts": ts}),
        ("chat.meMessage", {"channel": ENG, "text": "waves"}),
        ("chat.postEphemeral", {"channel": ENG, "user": BOB, "text": "psst"}),
        ("chat.scheduleMessage", {"channel": ENG, "text": "later", "post_at": int(float(ts)) + 3600}),
        ("chat.scheduledMessages.list", {}),
        ("conversations.list", {"types": "public_channel,private_channel,im,mpim"}),
        ("conversations.info", {"channel": ENG, "include_num_members": True}),
        ("conversations.info", {"channel": "D0ALICEAGT1"}),
        ("conversations.history", {"channel": ENG}),
        ("conversations.replies", {"channel": ENG, "ts": ts}),
        ("conversations.members", {"channel": ENG}),
        ("conversations.join", {"channel": RANDOM}),
        ("conversations.invite", {"channel": created, "users": BOB}),
        ("conversations.setTopic", {"channel": created, "topic": "t"}),
        ("conversations.setPurpose", {"channel": created, "purpose": "p"}),
        ("conversations.rename", {"channel": created, "name": "conformance-2"}),
        ("conversations.kick", {"channel": created, "user": BOB}),
        ("conversations.mark", {"channel": ENG, "ts": ts}),
        ("conversations.open", {"users": CAROL}),
        ("conversations.open", {"users": CAROL, "return_im": True}),
        ("conversations.leave", {"channel": RANDOM}),
        ("conversations.archive", {"channel": created}),
        ("conversations.unarchive", {"channel": created}),
        ("reactions.get", {"channel": ENG, "timestamp": ts}),
        ("reactions.list", {}),
        ("pins.list", {"channel": ENG}),
        ("bookmarks.list", {"channel_id": ENG}),
        ("users.list", {}), ("users.info", {"user": ALICE}),
        ("users.lookupByEmail", {"email": "bob@acme.test"}),
        ("users.conversations", {}), ("users.getPresence", {"user": CAROL}),
        ("users.setPresence", {"presence": "away"}),
        ("users.profile.get", {}), ("users.profile.set", {"profile": {"status_text": "deploying"}}),
        ("usergroups.list", {"include_users": True}), ("usergroups.users.list", {"usergroup": group}),
        ("usergroups.users.update", {"usergroup": group, "users": [ALICE, BOB]}),
        ("usergroups.update", {"usergroup": group, "description": "Engineers"}),
        ("search.messages", {"query": "deploy"}), ("search.files", {"query": "data"}),
        ("search.all", {"query": "deploy"}),
        ("files.info", {"file": fid}), ("files.list", {}),
        ("reminders.list", {}), ("reminders.info", {"reminder": reminder}),
        ("dnd.info", {}), ("dnd.setSnooze", {"num_minutes": 10}), ("dnd.teamInfo", {"users": ALICE}),
        ("reactions.remove", {"channel": ENG, "timestamp": ts, "name": "tada"}),
        ("pins.remove", {"channel": ENG, "timestamp": ts}),
        ("files.delete", {"file": fid}),
        ("reminders.delete", {"reminder": reminder}),
        ("chat.delete", {"channel": ENG, "ts": ts}),
    ]
    misfits, checked = {}, set()
    for method, kwargs in calls:
        data = slack.api_call(method, json=kwargs).data
        assert data["ok"] is True, (method, data)
        v = _validator(spec, method, "200")
        if v is None:
            continue
        checked.add(method)
        errors = sorted(v.iter_errors(data), key=lambda e: list(e.path))
        if errors:
            misfits.setdefault(method, []).extend(_describe(e) for e in errors[:3])
    # Error responses must fit the method's documented failure shape (its `error` enum).
    for method, kwargs, code in ERROR_CASES:
        data = _raw_error(slack, method, kwargs)
        assert data["error"] == code, (method, kwargs, data)
        v = _validator(spec, method, "default")
        if v is not None:
            errors = list(v.iter_errors(data))
            if errors:
                misfits.setdefault(method + " (error)", []).extend(_describe(e) for e in errors[:3])
    report = "\n".join(f"{m}:\n  " + "\n  ".join(errs) for m, errs in sorted(misfits.items()))
    print(f"checked {len(checked)} methods against the spec; misfits:\n{report or '  none'}")
    assert len(checked) >= 45
    unexpected = {m: [e for e in errs if not any(k in e for k in KNOWN_DEVIATIONS.get(m, ("", []))[1])]
                  for m, errs in misfits.items()}
    unexpected = {m: e for m, e in unexpected.items() if e}
    assert not unexpected, f"responses that do not fit Slack's description:\n{report}"


def _describe(error):
    """The innermost reason of a schema error (anyOf errors otherwise just say 'not valid')."""
    from jsonschema.exceptions import best_match
    while error.context:
        error = best_match(error.context)
    return f"{'/'.join(map(str, error.absolute_path)) or '<root>'}: {error.message[:200]}"


def _raw_error(slack, method, kwargs):
    try:
        return slack.api_call(method, json=kwargs).data
    except SlackApiError as e:
        return e.response.data
