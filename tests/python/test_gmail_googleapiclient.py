"""The Gmail twin through google-api-python-client, built from the discovery document the
repository keeps (tests/specs/gmail) with its root URL pointed at the twin. Every answer is
validated against the document's schemas, so a field the client or a typed consumer would
not expect fails here."""

import base64
import copy
import io
import json
import pathlib
import urllib.error
import urllib.request
from email.message import EmailMessage

import google.oauth2.credentials
import jsonschema
import pytest
from googleapiclient.discovery import build, build_from_document
from googleapiclient.errors import HttpError
from googleapiclient.http import MediaIoBaseUpload

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOC = json.loads((ROOT / "tests" / "specs" / "gmail" / "gmail.v1.json").read_text())
SEED = json.loads((ROOT / "tests" / "tasks-compat" / "bundled" / "22-gmail-inbox-triage.seed.json").read_text())


def _methods(resource, out):
    for m in resource.get("methods", {}).values():
        out[m["id"]] = m
    for r in resource.get("resources", {}).values():
        _methods(r, out)
    return out


METHODS = _methods(DOC, {})


def _json_schema(s):
    """A discovery schema as JSON Schema: `$ref` by name, and no field the document lacks."""
    if isinstance(s, dict):
        out = {}
        for k, v in s.items():
            if k == "$ref":
                out["$ref"] = f"#/definitions/{v}"
            elif k in ("properties", "definitions"):
                out[k] = {n: _json_schema(x) for n, x in v.items()}
            elif k in ("items", "additionalProperties"):
                out[k] = _json_schema(v)
            elif k in ("format", "description", "id", "annotations", "readOnly", "enumDescriptions", "deprecated"):
                continue
            else:
                out[k] = v
        if out.get("type") == "object" and "properties" in out and "additionalProperties" not in out:
            out["additionalProperties"] = False
        return out
    return s


DEFINITIONS = {name: _json_schema(s) for name, s in DOC["schemas"].items()}


def validate(method_id, body):
    ref = METHODS[method_id].get("response", {}).get("$ref")
    if ref is None:
        assert body in ("", {}, None), f"{method_id} answers nothing, got {body!r}"
        return
    jsonschema.validate(body, {"$ref": f"#/definitions/{ref}", "definitions": DEFINITIONS})


def run(req):
    """Execute a request and validate its answer against the discovery document."""
    body = req.execute()
    validate(req.methodId, body)
    return body


def service_for(sandbox):
    doc = copy.deepcopy(DOC)
    base = sandbox.url("gmail") + "/"
    doc["rootUrl"] = base
    doc["baseUrl"] = base
    doc["mtlsRootUrl"] = base
    creds = google.oauth2.credentials.Credentials(token=sandbox.token)
    return build_from_document(doc, credentials=creds)


@pytest.fixture
def box(new_sandbox):
    sandbox = new_sandbox(["gmail"], seed=SEED)
    return sandbox, service_for(sandbox)


def raw_of(msg):
    return base64.urlsafe_b64encode(msg.as_bytes()).decode()


def headers(payload):
    return {h["name"]: h["value"] for h in payload["headers"]}


def test_send_with_attachment_and_read_it_back_in_every_format(box):
    _, gmail = box
    msg = EmailMessage()
    msg["To"] = "bob@example.com"
    msg["Subject"] = "Quarterly report"
    msg.set_content("The report is attached.")
    msg.add_alternative("<p>The report is attached.</p>", subtype="html")
    msg.add_attachment(b"%PDF-1.4 fake", maintype="application", subtype="pdf", filename="q3.pdf")
    raw_bytes = msg.as_bytes()
    sent = run(gmail.users().messages().send(userId="me", body={"raw": raw_of(msg)}))
    assert sent["labelIds"] == ["SENT"]

    full = run(gmail.users().messages().get(userId="me", id=sent["id"], format="full"))
    h = headers(full["payload"])
    for name in ("Message-ID", "Date", "MIME-Version", "From", "To", "Subject", "Content-Type"):
        assert name in h, name
    assert full["payload"]["mimeType"] == "multipart/mixed"
    alt, att = full["payload"]["parts"]
    assert alt["mimeType"] == "multipart/alternative"
    assert [p["mimeType"] for p in alt["parts"]] == ["text/plain", "text/html"]
    text = base64.urlsafe_b64decode(alt["parts"][0]["body"]["data"]).decode()
    assert text.strip() == "The report is attached."
    assert att["filename"] == "q3.pdf" and att["body"]["size"] == len(b"%PDF-1.4 fake")
    a = run(gmail.users().messages().attachments().get(userId="me", messageId=sent["id"], id=att["body"]["attachmentId"]))
    assert base64.urlsafe_b64decode(a["data"]) == b"%PDF-1.4 fake"
    assert full["snippet"] == "The report is attached."

    raw = run(gmail.users().messages().get(userId="me", id=sent["id"], format="raw"))
    assert base64.urlsafe_b64decode(raw["raw"]).endswith(raw_bytes), "the sender's bytes round-trip"

    meta = run(gmail.users().messages().get(userId="me", id=sent["id"], format="metadata", metadataHeaders=["Subject"]))
    assert meta["payload"]["headers"] == [{"name": "Subject", "value": "Quarterly report"}]
    minimal = run(gmail.users().messages().get(userId="me", id=sent["id"], format="minimal"))
    assert "payload" not in minimal and minimal["sizeEstimate"] > 0


def test_a_reply_joins_the_thread_and_the_thread_reads_in_order(box):
    _, gmail = box
    reply = EmailMessage()
    reply["To"] = "alice@example.com"
    reply["Subject"] = "Re: Production export is stuck"
    reply["In-Reply-To"] = "<support-001@example.com>"
    reply["References"] = "<support-001@example.com>"
    reply.set_content("We are investigating.")
    sent = run(gmail.users().messages().send(userId="me", body={"raw": raw_of(reply), "threadId": "thread_support"}))
    assert sent["threadId"] == "thread_support"
    thread = run(gmail.users().threads().get(userId="me", id="thread_support"))
    assert [m["id"] for m in thread["messages"]] == ["msg_support", sent["id"]]
    threads = run(gmail.users().threads().list(userId="me", q="subject:export"))
    assert threads["threads"][0]["id"] == "thread_support"


def test_labels_and_filters(box):
    _, gmail = box
    labels = run(gmail.users().labels().list(userId="me"))["labels"]
    assert {"INBOX", "SENT", "TRASH", "SPAM", "UNREAD", "Label_follow_up"} <= {l["id"] for l in labels}
    created = run(gmail.users().labels().create(userId="me", body={"name": "Escalated", "labelListVisibility": "labelShow", "messageListVisibility": "show"}))
    with pytest.raises(HttpError) as e:
        gmail.users().labels().create(userId="me", body={"name": "escalated"}).execute()
    assert e.value.resp.status == 409
    patched = run(gmail.users().labels().patch(userId="me", id=created["id"], body={"name": "Escalated/P1"}))
    assert patched["name"] == "Escalated/P1"
    run(gmail.users().messages().modify(userId="me", id="msg_support", body={"addLabelIds": [created["id"]], "removeLabelIds": ["UNREAD"]}))
    got = run(gmail.users().labels().get(userId="me", id=created["id"]))
    assert (got["messagesTotal"], got["messagesUnread"], got["threadsTotal"]) == (1, 0, 1)
    inbox = run(gmail.users().labels().get(userId="me", id="INBOX"))
    assert inbox["messagesUnread"] == 1

    f = run(gmail.users().settings().filters().create(userId="me", body={"criteria": {"from": "ci@example.com"}, "action": {"addLabelIds": [created["id"]]}}))
    assert run(gmail.users().settings().filters().get(userId="me", id=f["id"])) == f
    assert run(gmail.users().settings().filters().list(userId="me"))["filter"] == [f]
    run(gmail.users().settings().filters().delete(userId="me", id=f["id"]))
    run(gmail.users().labels().delete(userId="me", id=created["id"]))
    with pytest.raises(HttpError) as e:
        gmail.users().labels().get(userId="me", id=created["id"]).execute()
    assert e.value.resp.status == 404


def test_drafts_create_update_list_and_send(box):
    _, gmail = box
    m = EmailMessage()
    m["To"] = "alice@example.com"
    m["Subject"] = "Re: Production export is stuck"
    m.set_content("Investigating.")
    d = run(gmail.users().drafts().create(userId="me", body={"message": {"raw": raw_of(m), "threadId": "thread_support"}}))
    assert d["message"]["threadId"] == "thread_support"
    m.set_content("Still investigating.")
    d2 = run(gmail.users().drafts().update(userId="me", id=d["id"], body={"message": {"raw": raw_of(m)}}))
    assert d2["id"] == d["id"] and d2["message"]["id"] != d["message"]["id"]
    drafts = run(gmail.users().drafts().list(userId="me"))["drafts"]
    assert d["id"] in [x["id"] for x in drafts] and len(drafts) == 2
    got = run(gmail.users().drafts().get(userId="me", id=d["id"], format="full"))
    assert "DRAFT" in got["message"]["labelIds"]
    sent = run(gmail.users().drafts().send(userId="me", body={"id": d["id"]}))
    assert sent["labelIds"] == ["SENT"] and sent["threadId"] == "thread_support"
    with pytest.raises(HttpError) as e:
        gmail.users().drafts().get(userId="me", id=d["id"]).execute()
    assert e.value.resp.status == 404


def test_history_sync_sees_each_change_after_the_start_id(box):
    _, gmail = box
    start = run(gmail.users().getProfile(userId="me"))["historyId"]
    run(gmail.users().messages().modify(userId="me", id="msg_support", body={"removeLabelIds": ["UNREAD"]}))
    run(gmail.users().messages().trash(userId="me", id="msg_welcome"))
    h = run(gmail.users().history().list(userId="me", startHistoryId=start))
    kinds = [next(k for k in r if k not in ("id", "messages")) for r in h["history"]]
    assert kinds == ["labelsRemoved", "labelsAdded", "labelsRemoved"]
    assert int(h["historyId"]) > int(start)
    only = run(gmail.users().history().list(userId="me", startHistoryId=start, historyTypes="labelAdded"))
    assert len(only["history"]) == 1 and only["history"][0]["labelsAdded"][0]["labelIds"] == ["TRASH"]
    with pytest.raises(HttpError) as e:
        gmail.users().history().list(userId="me", startHistoryId="1").execute()
    assert e.value.resp.status == 404


def test_search_with_operators_paging_and_an_unknown_operator(box):
    _, gmail = box
    def ids(q, **kw):
        return [m["id"] for m in run(gmail.users().messages().list(userId="me", q=q, **kw)).get("messages", [])]
    assert ids("from:alice@example.com is:unread") == ["msg_support"]
    assert ids("has:attachment filename:log") == ["msg_build"]
    assert ids('"deterministic inbox"') == ["msg_welcome"]
    assert ids("{from:alice from:welcome} -is:unread") == ["msg_welcome"]
    assert ids("label:build OR in:sent") == ["msg_build_reply", "msg_build"]
    assert ids("after:2026/07/19 -in:drafts") == ["msg_support", "msg_build_reply", "msg_build"]
    page = run(gmail.users().messages().list(userId="me", maxResults=2))
    assert len(page["messages"]) == 2 and page["resultSizeEstimate"] == 5
    rest = run(gmail.users().messages().list(userId="me", maxResults=2, pageToken=page["nextPageToken"]))
    assert not {m["id"] for m in rest["messages"]} & {m["id"] for m in page["messages"]}
    with pytest.raises(HttpError) as e:
        gmail.users().messages().list(userId="me", q="sender:alice").execute()
    assert e.value.resp.status == 400
    err = json.loads(e.value.content)["error"]
    assert err["status"] == "INVALID_ARGUMENT" and err["errors"][0]["domain"] == "global"


def test_trash_untrash_and_thread_trash(box):
    _, gmail = box
    t = run(gmail.users().messages().trash(userId="me", id="msg_support"))
    assert "TRASH" in t["labelIds"] and "INBOX" not in t["labelIds"]
    assert "msg_support" not in [m["id"] for m in run(gmail.users().messages().list(userId="me")).get("messages", [])]
    assert "msg_support" in [m["id"] for m in run(gmail.users().messages().list(userId="me", includeSpamTrash=True))["messages"]]
    u = run(gmail.users().messages().untrash(userId="me", id="msg_support"))
    assert "INBOX" in u["labelIds"] and "TRASH" not in u["labelIds"]
    th = run(gmail.users().threads().trash(userId="me", id="thread_build"))
    assert all("TRASH" in m["labelIds"] for m in th["messages"])
    run(gmail.users().threads().delete(userId="me", id="thread_build"))
    with pytest.raises(HttpError) as e:
        gmail.users().messages().get(userId="me", id="msg_build").execute()
    assert e.value.resp.status == 404


def test_a_batch_request_serves_each_part(box):
    _, gmail = box
    answers = {}

    def cb(request_id, response, exception):
        answers[request_id] = (response, exception)

    batch = gmail.new_batch_http_request(callback=cb)
    batch.add(gmail.users().messages().get(userId="me", id="msg_support", format="minimal"), request_id="get")
    batch.add(gmail.users().messages().modify(userId="me", id="msg_support", body={"addLabelIds": ["Label_follow_up"]}), request_id="modify")
    batch.add(gmail.users().messages().get(userId="me", id="nope"), request_id="missing")
    batch.add(gmail.users().labels().list(userId="me"), request_id="labels")
    batch.execute()
    assert answers["get"][0]["id"] == "msg_support"
    validate("gmail.users.messages.get", answers["get"][0])
    assert "Label_follow_up" in answers["modify"][0]["labelIds"]
    assert isinstance(answers["missing"][1], HttpError) and answers["missing"][1].resp.status == 404
    validate("gmail.users.labels.list", answers["labels"][0])


@pytest.mark.parametrize("resumable", [False, True])
def test_media_upload_sends_and_inserts_raw_rfc822(box, resumable):
    _, gmail = box
    m = EmailMessage()
    m["To"] = "carol@example.com"
    m["Subject"] = "Uploaded"
    m.set_content("Sent through the upload path.")
    media = MediaIoBaseUpload(io.BytesIO(m.as_bytes()), mimetype="message/rfc822", resumable=resumable)
    sent = run(gmail.users().messages().send(userId="me", body={}, media_body=media))
    got = run(gmail.users().messages().get(userId="me", id=sent["id"], format="metadata"))
    assert headers(got["payload"])["Subject"] == "Uploaded"
    media = MediaIoBaseUpload(io.BytesIO(m.as_bytes()), mimetype="message/rfc822", resumable=resumable)
    ins = run(gmail.users().messages().insert(userId="me", body={"labelIds": ["INBOX", "UNREAD"]}, media_body=media))
    assert ins["labelIds"] == ["INBOX", "UNREAD"]


def test_settings_and_watch(box):
    _, gmail = box
    s = gmail.users().settings()
    assert run(s.getImap(userId="me"))["enabled"] is True
    v = run(s.updateVacation(userId="me", body={"enableAutoReply": True, "responseSubject": "Away", "responseBodyPlainText": "Back Monday"}))
    assert v["enableAutoReply"] is True and run(s.getVacation(userId="me"))["responseSubject"] == "Away"
    assert run(s.updateLanguage(userId="me", body={"displayLanguage": "fr"}))["displayLanguage"] == "fr"
    assert run(s.updatePop(userId="me", body={"accessWindow": "allMail", "disposition": "archive"}))["accessWindow"] == "allMail"
    with pytest.raises(HttpError) as e:
        s.updateAutoForwarding(userId="me", body={"enabled": True, "emailAddress": "x@example.com", "disposition": "archive"}).execute()
    assert e.value.resp.status == 400
    run(s.forwardingAddresses().create(userId="me", body={"forwardingEmail": "x@example.com"}))
    assert run(s.updateAutoForwarding(userId="me", body={"enabled": True, "emailAddress": "x@example.com", "disposition": "archive"}))["enabled"]
    alias = run(s.sendAs().create(userId="me", body={"sendAsEmail": "support@pome-twin.test", "displayName": "Support"}))
    assert alias["sendAsEmail"] == "support@pome-twin.test"
    assert len(run(s.sendAs().list(userId="me"))["sendAs"]) == 2
    run(s.delegates().create(userId="me", body={"delegateEmail": "assistant@pome-twin.test"}))
    assert run(s.delegates().list(userId="me"))["delegates"][0]["delegateEmail"] == "assistant@pome-twin.test"
    w = run(gmail.users().watch(userId="me", body={"topicName": "projects/p/topics/gmail", "labelIds": ["INBOX"]}))
    assert int(w["historyId"]) > 0
    run(gmail.users().stop(userId="me"))


def test_errors_in_googles_shape(box, new_sandbox):
    sandbox, gmail = box
    with pytest.raises(HttpError) as e:
        gmail.users().messages().get(userId="me", id="does-not-exist").execute()
    err = json.loads(e.value.content)["error"]
    assert (err["code"], err["status"], err["errors"][0]["reason"]) == (404, "NOT_FOUND", "notFound")
    with pytest.raises(HttpError) as e:
        gmail.users().messages().send(userId="me", body={"raw": raw_of(EmailMessage())}).execute()
    assert e.value.resp.status == 400
    # google-auth would try to refresh on a 401, so the wrong token goes over plain HTTP.
    req = urllib.request.Request(sandbox.url("gmail") + "/gmail/v1/users/me/profile", headers={"Authorization": "Bearer tok_wrong"})
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req)
    assert e.value.code == 401
    assert json.load(e.value)["error"]["status"] == "UNAUTHENTICATED"


def test_the_client_builds_itself_from_the_twins_discovery_endpoint(new_sandbox):
    sandbox = new_sandbox(["gmail"], seed=SEED)
    creds = google.oauth2.credentials.Credentials(token=sandbox.token)
    gmail = build("gmail", "v1", credentials=creds, static_discovery=False,
                  discoveryServiceUrl=sandbox.url("gmail") + "/discovery/v1/apis/{api}/{apiVersion}/rest")
    profile = run(gmail.users().getProfile(userId="me"))
    assert profile["emailAddress"] == "pome-agent@pome-twin.test"


def test_the_tape_names_each_action(box):
    sandbox, gmail = box
    run(gmail.users().messages().modify(userId="me", id="msg_support", body={"addLabelIds": ["Label_follow_up"]}))
    rows = sandbox.events("gmail")
    rows = rows.get("events", rows) if isinstance(rows, dict) else rows
    actions = [r.get("action") for r in rows]
    assert "messages.modify" in actions
    state = sandbox.state("gmail")
    support = next(m for m in state["mailboxes"][0]["messages"] if m["id"] == "msg_support")
    assert "Label_follow_up" in support["labelIds"]


def test_a_fields_selection_answers_only_what_was_asked(box):
    _, gmail = box
    page = gmail.users().messages().list(userId="me", q="is:unread", fields="messages(id),resultSizeEstimate").execute()
    assert page == {"messages": [{"id": "msg_support"}, {"id": "msg_build"}], "resultSizeEstimate": 2}
    msg = gmail.users().messages().get(userId="me", id="msg_support", fields="id,payload/headers").execute()
    assert set(msg) == {"id", "payload"} and set(msg["payload"]) == {"headers"}


def test_a_seeded_rate_limit_is_a_429_with_retry_after(new_sandbox):
    seed = copy.deepcopy(SEED)
    seed["faults"] = [{"type": "rateLimit", "method": "messages.list", "after": 0, "count": 1, "retryAfter": 3}]
    gmail = service_for(new_sandbox(["gmail"], seed=seed))
    with pytest.raises(HttpError) as e:
        gmail.users().messages().list(userId="me").execute()
    assert e.value.resp.status == 429 and e.value.resp["retry-after"] == "3"
    assert json.loads(e.value.content)["error"]["status"] == "RESOURCE_EXHAUSTED"
    assert run(gmail.users().messages().list(userId="me"))["resultSizeEstimate"] == 5


def test_the_gmail_mcp_server_answers_json_rpc_over_http(box):
    sandbox, _ = box

    def rpc(method, params=None, id_=1):
        msg = {"jsonrpc": "2.0", "method": method, "params": params or {}}
        if id_ is not None:
            msg["id"] = id_
        req = urllib.request.Request(sandbox.url("gmail") + "/mcp/v1", data=json.dumps(msg).encode(), method="POST",
                                     headers={"Authorization": f"Bearer {sandbox.token}", "Content-Type": "application/json",
                                              "Accept": "application/json, text/event-stream"})
        with urllib.request.urlopen(req) as r:
            return r.status, (json.load(r) if r.status == 200 else None)

    assert rpc("initialize", {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})[0] == 200
    assert rpc("notifications/initialized", id_=None)[0] == 202
    tools = rpc("tools/list")[1]["result"]["tools"]
    assert {t["name"] for t in tools} >= {"search_threads", "get_thread", "label_message", "create_draft", "apply_sensitive_thread_label"}
    _, found = rpc("tools/call", {"name": "search_threads", "arguments": {"query": "from:alice@example.com is:unread"}})
    out = found["result"]["structuredContent"]
    assert [t["id"] for t in out["threads"]] == ["thread_support"]
    jsonschema.validate(out, next(t for t in tools if t["name"] == "search_threads")["outputSchema"])
    _, labeled = rpc("tools/call", {"name": "label_message", "arguments": {"messageId": "msg_support", "labelIds": ["Label_follow_up"]}})
    assert labeled["result"]["isError"] is False
    _, draft = rpc("tools/call", {"name": "create_draft", "arguments": {"to": ["alice@example.com"], "body": "Investigating.", "replyToMessageId": "msg_support"}})
    d = draft["result"]["structuredContent"]
    jsonschema.validate(d, next(t for t in tools if t["name"] == "create_draft")["outputSchema"])
    assert d["threadId"] == "thread_support"
    state = sandbox.state("gmail")
    support = next(m for m in state["mailboxes"][0]["messages"] if m["id"] == "msg_support")
    assert "Label_follow_up" in support["labelIds"]
