"""The Slack and Stripe vendor MCP tools that are more than one API call, driven with the
official `mcp` client; the world they leave is checked through the vendors' own SDKs (slack_sdk,
stripe) or the twin's state, so a tool and the API calls it stands for cannot disagree."""

import json

from slack_sdk import WebClient

from test_mcp import run, twin

ENG, RANDOM = "C0ENG00001", "C0RANDOM01"
BOB, CAROL = "U0BOB00001", "U0CAROL001"


def slack_client(sb):
    return WebClient(token=sb.token, base_url=sb.url("slack") + "/api/", retry_handlers=[])


def text_of(result):
    return "".join(c.text for c in result.content if c.type == "text")


async def ok_with(c, tool, args):
    """`c.ok` for a tool whose own arguments include `name`."""
    r = await c.session.call_tool(tool, args)
    assert not r.isError, f"{tool} failed: {text_of(r)}"
    return json.loads(text_of(r))


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


# --- Stripe --------------------------------------------------------------------------------

def stripe_client(sb):
    import stripe

    url = sb.url("stripe")
    return stripe.StripeClient(sb.token, base_addresses={"api": url, "files": url, "connect": url}, max_network_retries=0)


def test_stripe_generic_tools_find_describe_and_run_the_twins_operations(pome_server, new_sandbox):
    sb = new_sandbox(["stripe"])
    sdk = stripe_client(sb)

    async def go():
        async with twin(pome_server, sb.id, sb.token, "stripe") as c:
            [account] = (await c.ok("list_available_accounts_or_orgs"))["accounts"]
            on = {"stripe_context": account["stripe_context"], "livemode": account["livemode"]}
            found = await c.ok("stripe_api_search", intent="create", resource="customer", **on)
            op = found["results"][0]["stripe_api_operation_id"]
            details = await c.ok("stripe_api_details", stripe_api_operation_id=op, **on)
            made = await c.ok("stripe_api_write", stripe_api_operation_id=op,
                              parameters={"name": "Ada", "email": "ada@example.com", "metadata": {"tier": "gold"}}, **on)
            read = await c.ok("stripe_api_read", stripe_api_operation_id="GetCustomersCustomer", parameters={"customer": made["id"]}, **on)
            wrong = await c.call("stripe_api_read", stripe_api_operation_id="GetCustomers", parameters={}, stripe_context="acct_elsewhere", livemode=False)
            live = await c.call("get_stripe_account_info", stripe_context=account["stripe_context"], livemode=True)
            return op, details, made, read, wrong, live

    op, details, made, read, wrong, live = run(go())
    assert op == "PostCustomers"
    assert {"name", "email", "metadata"} <= {p["name"] for p in details["parameters"]}
    # The customer the tool made is the API's customer.
    cus = sdk.customers.retrieve(made["id"])
    assert (cus.name, cus.email, cus.metadata["tier"]) == ("Ada", "ada@example.com", "gold")
    assert read["id"] == made["id"]
    assert wrong.isError and "stripe_context" in text_of(wrong)
    assert live.isError and "livemode" in text_of(live)
    # The write is taped as a customer created, like the REST call.
    rows = [r for r in sb.events("stripe") if r.get("via") == "mcp" and r.get("tool") == "stripe_api_write"]
    assert [r["action"] for r in rows] == ["customers.create"]
    assert any(ch["entity"] == "customer" and ch["id"] == made["id"] for ch in rows[0]["state_delta"])


def test_stripe_toolkit_tools_honour_their_arguments(pome_server, new_sandbox):
    sb = new_sandbox(["stripe"])
    sdk = stripe_client(sb)
    product = sdk.products.create(params={"name": "Tee"})
    price = sdk.prices.create(params={"product": product.id, "unit_amount": 1500, "currency": "usd"})

    async def go():
        async with twin(pome_server, sb.id, sb.token, "stripe") as c:
            link = await c.ok("create_payment_link", price=price.id, quantity=2, redirect_url="https://shop.test/thanks")
            coupon = await ok_with(c, "create_coupon", {"name": "Spring", "amount_off": 500})
            docs = await c.ok("search_stripe_documentation", question="How do I create a payment link?", language="node")
            fb = await c.ok("send_stripe_mcp_feedback", sentiment="positive", quote="search found it", context="an agent selling tees", source="agent")
            return link, coupon, docs, fb

    link, coupon, docs, fb = run(go())
    got = sdk.payment_links.retrieve(link["id"])
    assert got.after_completion.type == "redirect" and got.after_completion.redirect.url == "https://shop.test/thanks"
    assert sdk.payment_links.line_items.list(link["id"]).data[0].quantity == 2
    # The toolkit's default currency (USD) when the agent names none.
    assert sdk.coupons.retrieve(coupon["id"]).currency == "usd"
    assert docs[0]["url"] == "https://docs.stripe.com/api/payment_links/create"
    assert "stripe.paymentLinks.create(" in docs[0]["content"]
    [kept] = sb.state("stripe")["mcp_feedbacks"]
    assert (kept["id"], kept["quote"], kept["source"]) == (fb["id"], "search found it", "agent")
