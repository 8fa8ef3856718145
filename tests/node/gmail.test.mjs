// @googleapis/gmail 22.0.1 against the Gmail twin, through a real `pome serve`:
// `gmail({ version: "v1", rootUrl, auth })` with the sandbox's api_url and the agent token as
// an OAuth access token, as an agent would.
//
// Run: cd tests/node && npm install && node --test gmail.test.mjs
// POME_BIN names the host binary (default: target/release/pome); POME_TEST_TWINS_DIR serves
// a twin component under development.

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { gmail, auth } from "@googleapis/gmail";
import { ROOT, servePome, createSandbox } from "./server.mjs";

const pome = servePome("pme_node_gmail_tests_0123456789");
const SEED = JSON.parse(readFileSync(join(ROOT, "tests", "tasks-compat", "bundled", "22-gmail-inbox-triage.seed.json"), "utf8"));

async function sandbox(seed = SEED) {
  const sb = await createSandbox(pome, { twins: ["gmail"], seed });
  const oauth = new auth.OAuth2();
  oauth.setCredentials({ access_token: sb.agent_token });
  // googleapis-common resolves each method's absolute path against rootUrl with
  // `new URL(path, rootUrl)`, which keeps only rootUrl's origin: the `/s/<id>/gmail` prefix
  // is lost; and media uploads go to the built-in https://gmail.googleapis.com/upload/...
  // whatever rootUrl says. The client takes a fetch implementation, so this one sends each
  // request to the twin's origin and prefix; everything else (paths, query, bodies,
  // multipart uploads) is the client's own.
  const twin = new URL(sb.per_twin.gmail.base_url);
  const prefix = twin.pathname;
  const fetchImplementation = (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    url.protocol = twin.protocol;
    url.host = twin.host;
    if (!url.pathname.startsWith(prefix)) url.pathname = prefix + url.pathname;
    return fetch(input instanceof Request ? new Request(url, input) : url, init && { ...init, duplex: "half" });
  };
  return { sb, client: gmail({ version: "v1", rootUrl: sb.per_twin.gmail.api_url, auth: oauth, fetchImplementation }) };
}

const b64url = (s) => Buffer.from(s).toString("base64url");
const unb64 = (s) => Buffer.from(s, "base64url");
const headerMap = (payload) => Object.fromEntries(payload.headers.map((h) => [h.name, h.value]));

const WITH_ATTACHMENT = [
  "To: bob@example.com",
  "Subject: Build log",
  'Content-Type: multipart/mixed; boundary="xyz"',
  "",
  "--xyz",
  "Content-Type: text/plain; charset=UTF-8",
  "",
  "Log attached.",
  "--xyz",
  'Content-Type: text/plain; name="build.log"',
  'Content-Disposition: attachment; filename="build.log"',
  "Content-Transfer-Encoding: base64",
  "",
  Buffer.from("step=test FAILED\n").toString("base64"),
  "--xyz--",
  "",
].join("\r\n");

test("send with an attachment, then read it in every format", async () => {
  const { client } = await sandbox();
  const sent = (await client.users.messages.send({ userId: "me", requestBody: { raw: b64url(WITH_ATTACHMENT) } })).data;
  assert.deepEqual(sent.labelIds, ["SENT"]);
  const full = (await client.users.messages.get({ userId: "me", id: sent.id, format: "full" })).data;
  const h = headerMap(full.payload);
  for (const name of ["Message-ID", "Date", "MIME-Version", "From", "To", "Subject"]) assert.ok(name in h, name);
  assert.equal(full.payload.parts[1].filename, "build.log");
  const att = (await client.users.messages.attachments.get({ userId: "me", messageId: sent.id, id: full.payload.parts[1].body.attachmentId })).data;
  assert.equal(unb64(att.data).toString(), "step=test FAILED\n");
  const raw = (await client.users.messages.get({ userId: "me", id: sent.id, format: "raw" })).data;
  assert.ok(unb64(raw.raw).toString().endsWith(WITH_ATTACHMENT));
  const meta = (await client.users.messages.get({ userId: "me", id: sent.id, format: "metadata", metadataHeaders: ["To", "Subject"] })).data;
  assert.equal(meta.payload.headers.length, 2);
  const min = (await client.users.messages.get({ userId: "me", id: sent.id, format: "minimal" })).data;
  assert.equal(min.payload, undefined);
});

test("a reply threads, labels apply, a draft is created and left unsent", async () => {
  const { client } = await sandbox();
  const found = (await client.users.messages.list({ userId: "me", q: "from:alice@example.com is:unread" })).data;
  assert.deepEqual(found.messages.map((m) => m.id), ["msg_support"]);
  const mod = (await client.users.messages.modify({ userId: "me", id: "msg_support", requestBody: { addLabelIds: ["Label_follow_up"] } })).data;
  assert.ok(mod.labelIds.includes("Label_follow_up"));
  const reply = "To: alice@example.com\r\nSubject: Re: Production export is stuck\r\nIn-Reply-To: <support-001@example.com>\r\nReferences: <support-001@example.com>\r\n\r\nThe issue is being investigated.\r\n";
  const d = (await client.users.drafts.create({ userId: "me", requestBody: { message: { raw: b64url(reply), threadId: "thread_support" } } })).data;
  assert.equal(d.message.threadId, "thread_support");
  const drafts = (await client.users.drafts.list({ userId: "me" })).data.drafts;
  assert.equal(drafts.length, 2);
  const thread = (await client.users.threads.get({ userId: "me", id: "thread_support", format: "minimal" })).data;
  assert.equal(thread.messages.length, 2);
  const label = (await client.users.labels.get({ userId: "me", id: "Label_follow_up" })).data;
  assert.equal(label.messagesTotal, 1);
});

test("history, trash and a media upload", async () => {
  const { client } = await sandbox();
  const start = (await client.users.getProfile({ userId: "me" })).data.historyId;
  await client.users.messages.trash({ userId: "me", id: "msg_welcome" });
  const up = (await client.users.messages.send({ userId: "me", requestBody: {}, media: { mimeType: "message/rfc822", body: "To: carol@example.com\r\nSubject: Via upload\r\n\r\nUploaded.\r\n" } })).data;
  const h = (await client.users.history.list({ userId: "me", startHistoryId: start })).data;
  assert.ok(h.history.some((r) => r.messagesAdded?.[0].message.id === up.id));
  assert.ok(h.history.some((r) => r.labelsAdded?.[0].labelIds.includes("TRASH")));
  const got = (await client.users.messages.get({ userId: "me", id: up.id, format: "metadata" })).data;
  assert.equal(headerMap(got.payload).Subject, "Via upload");
});

test("errors come back in Google's shape", async () => {
  const { client } = await sandbox();
  await assert.rejects(client.users.messages.get({ userId: "me", id: "missing" }), (e) => {
    assert.equal(e.status ?? e.code, 404);
    assert.equal(e.response.data.error.status, "NOT_FOUND");
    return true;
  });
  await assert.rejects(client.users.messages.list({ userId: "me", q: "sender:alice" }), (e) => e.response.status === 400);
  await assert.rejects(client.users.labels.create({ userId: "me", requestBody: { name: "Follow Up" } }), (e) => e.response.status === 409);
});
