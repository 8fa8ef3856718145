"""Issue #35, Gmail: what a google-api-python-client user still met, each item through the
client: Trash and Spam listed by `labelIds`, a failed `drafts.send` that keeps its draft, the
batch methods' ids, a resumable upload whose chunk is sent twice, history past 2,000 changes,
push notifications from `users.watch` in Pub/Sub's push envelope (on the tape, and end to end
to an HTTP receiver on loopback), and the shape-only surface."""

import base64
import copy
import datetime
import http.server
import io
import json
import pathlib
import threading
import time
from email.message import EmailMessage

import google.oauth2.credentials
import google_auth_httplib2
import httplib2
import pytest
from googleapiclient.discovery import build_from_document
from googleapiclient.errors import HttpError
from googleapiclient.http import MediaIoBaseUpload

from conftest import Sandbox, serve

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOC = json.loads((ROOT / "tests" / "specs" / "gmail" / "gmail.v1.json").read_text())
SEED = json.loads((ROOT / "tests" / "tasks-compat" / "bundled" / "22-gmail-inbox-triage.seed.json").read_text())

PUSH_ENDPOINT = "https://agent.example/gmail/push"
PUBSUB = {
    "topics": ["projects/acme/topics/quiet"],
    "subscriptions": [
        {"name": "projects/acme/subscriptions/gmail-push", "topic": "projects/acme/topics/gmail",
         "pushConfig": {"pushEndpoint": PUSH_ENDPOINT}},
        {"name": "projects/acme/subscriptions/gmail-pull", "topic": "projects/acme/topics/gmail"},
    ],
}


def service_for(sandbox):
    doc = copy.deepcopy(DOC)
    base = sandbox.url("gmail") + "/"
    doc["rootUrl"] = doc["baseUrl"] = doc["mtlsRootUrl"] = base
    return build_from_document(doc, credentials=google.oauth2.credentials.Credentials(token=sandbox.token))


@pytest.fixture
def box(new_sandbox):
    def make(seed=SEED):
        sandbox = new_sandbox(["gmail"], seed=seed)
        return sandbox, service_for(sandbox)
    return make


def error_of(e):
    return json.loads(e.value.content)["error"]


def ids(listing, key="messages"):
    return [m["id"] for m in listing.get(key, [])]


def test_label_ids_trash_or_spam_lists_that_folder(box):
    _, gmail = box()
    msgs = gmail.users().messages()
    msgs.trash(userId="me", id="msg_support").execute()
    msgs.modify(userId="me", id="msg_welcome", body={"addLabelIds": ["SPAM"]}).execute()
    assert ids(msgs.list(userId="me", labelIds=["TRASH"]).execute()) == ["msg_support"]
    assert ids(msgs.list(userId="me", labelIds=["SPAM"]).execute()) == ["msg_welcome"]
    assert ids(gmail.users().threads().list(userId="me", labelIds=["TRASH"]).execute(), "threads") == ["thread_support"]
    inbox = ids(msgs.list(userId="me", labelIds=["INBOX"]).execute())
    assert "msg_support" not in inbox and "msg_welcome" not in inbox


def test_a_draft_send_that_fails_keeps_the_draft(box):
    _, gmail = box()
    drafts = gmail.users().drafts()
    before = drafts.get(userId="me", id="draft_ack", format="raw").execute()
    headerless = base64.urlsafe_b64encode(b"\r\nonly a body: the header section is empty\r\n").decode()
    with pytest.raises(HttpError) as e:
        drafts.send(userId="me", body={"id": "draft_ack", "message": {"raw": headerless}}).execute()
    assert e.value.resp.status == 400
    assert drafts.get(userId="me", id="draft_ack", format="raw").execute() == before
    assert "draft_ack" in [d["id"] for d in drafts.list(userId="me").execute()["drafts"]]
    sent = drafts.send(userId="me", body={"id": "draft_ack"}).execute()
    assert sent["labelIds"] == ["SENT"]


def test_batch_methods_limit_ids_to_a_thousand_and_refuse_malformed_ones(box):
    _, gmail = box()
    msgs = gmail.users().messages()
    many = [f"{i:016x}" for i in range(1001)]
    for method in (msgs.batchDelete, msgs.batchModify):
        with pytest.raises(HttpError) as e:
            method(userId="me", body={"ids": many, "removeLabelIds": ["UNREAD"]}).execute()
        assert (error_of(e)["code"], error_of(e)["message"]) == (400, "Number of ids cannot exceed 1000")
        with pytest.raises(HttpError) as e:
            method(userId="me", body={"ids": ["msg_support", "thread_support/1"], "removeLabelIds": ["UNREAD"]}).execute()
        assert (error_of(e)["code"], error_of(e)["message"], error_of(e)["status"]) == (400, "Invalid id value", "INVALID_ARGUMENT")
    assert "UNREAD" in msgs.get(userId="me", id="msg_support").execute()["labelIds"], "a refused batch changed nothing"
    # A well-formed id that names no message is passed over.
    msgs.batchModify(userId="me", body={"ids": ["msg_support", "18c1f2a3b4d5e6f7"], "removeLabelIds": ["UNREAD"]}).execute()
    assert "UNREAD" not in msgs.get(userId="me", id="msg_support").execute()["labelIds"]
    msgs.batchDelete(userId="me", body={"ids": ["msg_support", "18c1f2a3b4d5e6f7"]}).execute()
    with pytest.raises(HttpError) as e:
        msgs.get(userId="me", id="msg_support").execute()
    assert e.value.resp.status == 404


class LosesFirstChunkAnswer(httplib2.Http):
    """A connection that loses the answer to the first chunk of a resumable upload, so the
    client sends that chunk again, as it would after a timeout."""

    def __init__(self):
        super().__init__()
        # As googleapiclient's own connections: 308 is the upload's "resume", not a redirect.
        self.redirect_codes = self.redirect_codes - {308}
        self.lost = False

    def request(self, uri, method="GET", body=None, headers=None, **kw):
        rng = (headers or {}).get("Content-Range") or (headers or {}).get("content-range")
        if rng and rng.startswith("bytes 0-") and not self.lost:
            self.lost = True
            if hasattr(body, "read"):  # a slice of the media stream: read it once, send it twice
                body = body.read()
            super().request(uri, method, body=body, headers=headers, **kw)
        return super().request(uri, method, body=body, headers=headers, **kw)


def test_a_resumable_chunk_sent_twice_is_stored_once(box):
    sandbox, gmail = box()
    m = EmailMessage()
    m["To"] = "carol@example.com"
    m["Subject"] = "Chunked"
    m.set_content("Sent in small chunks, the first of them twice. " * 4)
    raw = m.as_bytes()
    media = MediaIoBaseUpload(io.BytesIO(raw), mimetype="message/rfc822", chunksize=64, resumable=True)
    request = gmail.users().messages().send(userId="me", body={}, media_body=media)
    lossy = LosesFirstChunkAnswer()
    http = google_auth_httplib2.AuthorizedHttp(google.oauth2.credentials.Credentials(token=sandbox.token), http=lossy)
    sent = None
    while sent is None:
        _, sent = request.next_chunk(http=http)
    assert lossy.lost, "the first chunk was sent twice"
    got = gmail.users().messages().get(userId="me", id=sent["id"], format="raw").execute()
    stored = base64.urlsafe_b64decode(got["raw"])
    assert stored.endswith(raw) and stored.count(b"Subject: Chunked") == 1


def test_history_answers_a_start_id_older_than_two_thousand_changes(box):
    _, gmail = box()
    start = gmail.users().getProfile(userId="me").execute()["historyId"]
    changes = 0
    for _ in range(30):
        batch = gmail.new_batch_http_request()
        for i in range(100):
            body = {"addLabelIds": ["STARRED"]} if changes % 2 == 0 else {"removeLabelIds": ["STARRED"]}
            batch.add(gmail.users().messages().modify(userId="me", id="msg_support", body=body))
            changes += 1
        batch.execute()
    seen, token = 0, None
    while True:
        page = gmail.users().history().list(userId="me", startHistoryId=start, maxResults=500, pageToken=token).execute()
        seen += len(page.get("history", []))
        token = page.get("nextPageToken")
        if not token:
            break
    assert seen == changes == 3000
    # Only a start id from before anything the mailbox kept is 404, as Gmail answers it.
    with pytest.raises(HttpError) as e:
        gmail.users().history().list(userId="me", startHistoryId="1").execute()
    assert e.value.resp.status == 404


def pushes(sandbox):
    rows = sandbox.events("gmail")
    rows = rows if isinstance(rows, list) else rows.get("events", rows.get("data", []))
    return [(r["action"], d) for r in rows for d in (r.get("deliveries") or [])]


def test_a_watch_pushes_gmails_notification_in_the_pubsub_envelope_until_stopped(box):
    sandbox, gmail = box(dict(SEED, pubsub=PUBSUB))
    users = gmail.users()
    watch = users.watch(userId="me", body={"topicName": "projects/acme/topics/gmail", "labelIds": ["INBOX"]}).execute()
    users.messages().modify(userId="me", id="msg_support", body={"removeLabelIds": ["UNREAD"]}).execute()
    users.messages().modify(userId="me", id="msg_build_reply", body={"addLabelIds": ["STARRED"]}).execute()  # SENT, not INBOX
    history_id = users.getProfile(userId="me").execute()["historyId"]
    out = pushes(sandbox)
    assert [a for a, _ in out] == ["messages.modify"], "one push, for the INBOX change only"
    d = out[0][1]
    assert (d["url"], d["method"]) == (PUSH_ENDPOINT, "POST")
    envelope = json.loads(d["body"])
    assert envelope["subscription"] == "projects/acme/subscriptions/gmail-push"
    message = envelope["message"]
    assert message["messageId"] == message["message_id"] and message["publishTime"] == message["publish_time"]
    note = json.loads(base64.b64decode(message["data"]))
    assert note["emailAddress"] == "pome-agent@pome-twin.test"
    assert int(note["historyId"]) < int(history_id) and int(note["historyId"]) > int(watch["historyId"])
    # The notification's history id is where a history sync picks up the change.
    h = users.history().list(userId="me", startHistoryId=watch["historyId"]).execute()
    assert any(int(r["id"]) == int(note["historyId"]) for r in h["history"])

    users.stop(userId="me").execute()
    users.messages().modify(userId="me", id="msg_support", body={"addLabelIds": ["UNREAD"]}).execute()
    assert len(pushes(sandbox)) == 1, "stop ends the pushes"


def test_a_watch_on_a_topic_the_world_lacks_is_refused_as_gmail_refuses_it(box):
    _, gmail = box(dict(SEED, pubsub=PUBSUB))
    with pytest.raises(HttpError) as e:
        gmail.users().watch(userId="me", body={"topicName": "projects/acme/topics/nowhere"}).execute()
    assert (error_of(e)["code"], error_of(e)["message"]) == (404, "Resource not found (resource=nowhere).")
    with pytest.raises(HttpError) as e:
        gmail.users().watch(userId="me", body={"topicName": "nowhere"}).execute()
    assert error_of(e)["code"] == 400


def test_the_store_only_methods_are_declared_shape_only(pome_server):
    status, body = pome_server.api("GET", "/v1/twins")
    assert status == 200
    gmail = next(t for t in body["data"] if t["name"] == "gmail")
    surface = gmail["description"]["surface"]
    shape = sorted(r["action"] for r in surface if r["fidelity"] == "shape" and r["path"].startswith("/gmail/v1/"))
    assert shape == sorted([
        "settings.sendAs.verify",
        *(f"settings.sendAs.smimeInfo.{m}" for m in ("list", "get", "insert", "delete", "setDefault")),
        *(f"settings.cse.keypairs.{m}" for m in ("list", "get", "create", "verb")),
        *(f"settings.cse.identities.{m}" for m in ("list", "get", "create", "patch", "delete")),
    ])
    served = {r["action"]: r["fidelity"] for r in surface}
    assert served["messages.send"] == served["watch"] == served["history.list"] == "semantic"


class PushReceiver:
    """A Pub/Sub push endpoint on loopback: records every POST (path, headers, body) and
    acknowledges it with 204, as a push endpoint must."""

    def __init__(self):
        received = self.received = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                received.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body})
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_for(self, n, seconds=10):
        deadline = time.monotonic() + seconds
        while len(self.received) < n and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.received

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    r = PushReceiver()
    yield r
    r.close()


@pytest.fixture(scope="module")
def delivering_server():
    """A `pome serve` of this module's own that delivers to loopback (`--deliver-to
    127.0.0.1/32`), as an operator names where a sandbox's deliveries may go: the suite's
    shared server delivers nowhere."""
    with serve("--deliver-to", "127.0.0.1/32", prefix="pome-gmail-push-") as server:
        yield server


@pytest.fixture
def push_box(delivering_server):
    def make(seed):
        status, body = delivering_server.api("POST", "/v1/sandboxes", {"twins": ["gmail"], "seed": seed})
        assert status == 201, body
        sandbox = Sandbox(delivering_server, body)
        return sandbox, service_for(sandbox)
    return make


def tape_time_ms(sandbox, action):
    """The sandbox-clock time (Unix ms) of the last tape row served by `action`."""
    rows = sandbox.events("gmail")
    rows = rows if isinstance(rows, list) else rows.get("events", rows.get("data", []))
    ts = [r["ts"] for r in rows if r["action"] == action][-1]
    return int(datetime.datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp() * 1000)


def test_pushes_reach_the_subscriptions_endpoint_over_http_until_stop(push_box, receiver):
    """End to end: the seed's push subscriptions name a receiver on loopback; a watch makes
    every matching mailbox change a POST of Pub/Sub's push envelope to each of them, which the
    receiver decodes to Gmail's {emailAddress, historyId}; users.stop ends them."""
    pubsub = {
        "topics": ["projects/acme/topics/gmail"],
        "subscriptions": [
            {"name": "projects/acme/subscriptions/agent", "topic": "projects/acme/topics/gmail",
             "pushConfig": {"pushEndpoint": receiver.url + "/agent/push?token=s3cret"}},
            {"name": "projects/acme/subscriptions/audit", "topic": "projects/acme/topics/gmail",
             "pushConfig": {"pushEndpoint": receiver.url + "/audit"}},
        ],
    }
    sandbox, gmail = push_box(dict(SEED, pubsub=pubsub))
    users = gmail.users()
    start = users.getProfile(userId="me").execute()["historyId"]
    watch = users.watch(userId="me", body={"topicName": "projects/acme/topics/gmail", "labelIds": ["INBOX"],
                                            "labelFilterBehavior": "include"}).execute()
    assert watch["historyId"] == start, "watch answers the mailbox's current history id"
    assert int(watch["expiration"]) == tape_time_ms(sandbox, "watch") + 7 * 24 * 3600 * 1000, "a week of the sandbox clock"

    # A change outside INBOX is not pushed; a new message in INBOX is, to both subscriptions.
    users.messages().modify(userId="me", id="msg_build_reply", body={"addLabelIds": ["STARRED"]}).execute()
    m = EmailMessage()
    m["From"], m["To"], m["Subject"] = "dana@example.com", "pome-agent@pome-twin.test", "Pushed"
    m.set_content("A new message lands in the inbox.")
    inserted = users.messages().insert(userId="me", body={"raw": base64.urlsafe_b64encode(m.as_bytes()).decode(),
                                                           "labelIds": ["INBOX", "UNREAD"]}).execute()
    got = receiver.wait_for(2)
    assert sorted(r["path"] for r in got) == ["/agent/push?token=s3cret", "/audit"]
    envelopes = [json.loads(r["body"]) for r in got]
    assert {e["subscription"] for e in envelopes} == {"projects/acme/subscriptions/agent", "projects/acme/subscriptions/audit"}
    for r, e in zip(got, envelopes):
        assert r["headers"]["content-type"].startswith("application/json")
        msg = e["message"]
        assert msg["messageId"].isdigit() and msg["messageId"] == msg["message_id"]
        datetime.datetime.fromisoformat(msg["publishTime"].replace("Z", "+00:00"))
        note = json.loads(base64.b64decode(msg["data"]))
        assert set(note) == {"emailAddress", "historyId"}
        assert note["emailAddress"] == "pome-agent@pome-twin.test"
    assert envelopes[0]["message"]["messageId"] == envelopes[1]["message"]["messageId"], "one publication, pushed to each subscription"
    note = json.loads(base64.b64decode(envelopes[0]["message"]["data"]))
    assert note["historyId"] == int(users.getProfile(userId="me").execute()["historyId"])
    # The client syncs from its last history id and finds the new message at the notified one.
    h = users.history().list(userId="me", startHistoryId=watch["historyId"], historyTypes=["messageAdded"]).execute()
    added = [(int(r["id"]), a["message"]["id"]) for r in h["history"] for a in r.get("messagesAdded", [])]
    assert (note["historyId"], inserted["id"]) in added

    # Each later matching change is its own notification, with a newer history id.
    users.messages().modify(userId="me", id=inserted["id"], body={"removeLabelIds": ["UNREAD"]}).execute()
    got = receiver.wait_for(4)
    later = [json.loads(base64.b64decode(json.loads(r["body"])["message"]["data"]))["historyId"] for r in got[2:]]
    assert len(later) == 2 and all(hid > note["historyId"] for hid in later)

    users.stop(userId="me").execute()
    users.messages().modify(userId="me", id=inserted["id"], body={"addLabelIds": ["UNREAD"]}).execute()
    users.messages().trash(userId="me", id="msg_support").execute()
    time.sleep(1.0)
    assert len(receiver.received) == 4, "stop ends the pushes"


def test_an_exclude_watch_pushes_every_change_but_those_on_its_labels(push_box, receiver):
    pubsub = {"subscriptions": [{"name": "projects/acme/subscriptions/agent", "topic": "projects/acme/topics/gmail",
                                 "pushConfig": {"pushEndpoint": receiver.url + "/push"}}]}
    _, gmail = push_box(dict(SEED, pubsub=pubsub))
    users = gmail.users()
    users.watch(userId="me", body={"topicName": "projects/acme/topics/gmail", "labelIds": ["SPAM"],
                                   "labelFilterBehavior": "exclude"}).execute()
    users.messages().modify(userId="me", id="msg_welcome", body={"addLabelIds": ["SPAM"]}).execute()
    time.sleep(1.0)
    assert receiver.received == [], "a change to a SPAM message is excluded"
    users.messages().modify(userId="me", id="msg_support", body={"removeLabelIds": ["UNREAD"]}).execute()
    assert len(receiver.wait_for(1)) == 1
