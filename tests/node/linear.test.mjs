// @linear/sdk 88.3.0 against the Linear twin, through a real `pome serve`:
// `new LinearClient({ apiKey, apiUrl })` with the sandbox's api_url, as an agent would.
//
// Run: cd tests/node && npm install && node --test linear.test.mjs
// POME_BIN names the host binary (default: target/release/pome); POME_TEST_TWINS_DIR serves
// a twin component under development.

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createServer } from "node:http";
import { LinearClient, AuthenticationLinearError, InvalidInputLinearError } from "@linear/sdk";
import { LinearWebhookClient, LINEAR_WEBHOOK_SIGNATURE_HEADER } from "@linear/sdk/webhooks";
import { ROOT, servePome, createSandbox } from "./server.mjs";

const pome = servePome("pme_node_linear_tests_0123456789");
const TASKS = join(ROOT, "tests", "tasks-compat", "bundled");

async function sandbox(seed) {
  const body = { twins: ["linear"] };
  if (seed) body.seed = seed;
  const sb = await createSandbox(pome, body);
  const apiUrl = sb.per_twin.linear.api_url;
  return {
    sb,
    apiUrl,
    client: new LinearClient({ apiKey: sb.agent_token, apiUrl }),
    state: async () => (await fetch(`${sb.per_twin.linear.state_url}`, { headers: { Authorization: `Bearer ${sb.agent_token}` } })).json(),
  };
}

const taskSeed = (name) => JSON.parse(readFileSync(join(TASKS, name), "utf8"));

test("triage: filter, state, label, assignee, estimate and a comment", async () => {
  const { client, state } = await sandbox(taskSeed("24-linear-issue-triage.seed.json"));
  const me = await client.viewer;
  assert.equal(me.email, "admin@pome-twin.test");
  const teams = await client.teams();
  const eng = teams.nodes.find((t) => t.key === "ENG");
  const backlog = await client.issues({ filter: { team: { key: { eq: "ENG" } }, state: { type: { eq: "backlog" } } } });
  assert.equal(backlog.nodes.length, 1);
  const issue = backlog.nodes[0];
  assert.equal(issue.title, "Triage inbox for agent eval");
  assert.equal(issue.identifier, "ENG-1");
  const states = await eng.states();
  const progress = states.nodes.find((s) => s.name === "In Progress");
  const labels = await client.issueLabels({ filter: { name: { eq: "Agent" } } });
  const users = await client.users();
  const dev = users.nodes.find((u) => u.email === "dev@pome-twin.test");
  const res = await client.updateIssue(issue.id, { stateId: progress.id, assigneeId: me.id, estimate: 3, labelIds: [labels.nodes[0].id], priority: 1 });
  assert.equal(res.success, true);
  assert.ok(res.lastSyncId > 0);
  const updated = await res.issue;
  assert.equal((await updated.state).name, "In Progress");
  assert.equal((await updated.assignee).id, me.id);
  assert.equal(updated.estimate, 3);
  assert.equal(updated.priorityLabel, "Urgent");
  const c = await client.createComment({ issueId: "ENG-1", body: "Triaging this now." });
  assert.equal(c.success, true);
  const comment = await c.comment;
  assert.equal((await comment.issue).identifier, "ENG-1");
  assert.equal((await comment.user).id, me.id);
  const comments = await (await client.issue("ENG-1")).comments();
  assert.equal(comments.nodes.length, 2);
  const world = await state();
  assert.equal(world.entities.Issue.issue_backlog.stateId, progress.id);
  assert.notEqual(dev, undefined);
});

test("threaded comments: a reply carries its parent", async () => {
  const { client } = await sandbox(taskSeed("25-linear-comment-label-triage.seed.json"));
  const [issue] = (await client.issues({ filter: { title: { eq: "Needs comment and label triage" } } })).nodes;
  const [root] = (await issue.comments()).nodes;
  const reply = await (await client.createComment({ issueId: issue.id, parentId: root.id, body: "On it." })).comment;
  assert.equal((await reply.parent).id, root.id);
  // (The SDK's `comment.children()` sends no comment id, so it is not usable against Linear either.)
  const children = await client.comments({ filter: { parent: { id: { eq: root.id } } } });
  assert.deepEqual(children.nodes.map((n) => n.id), [reply.id]);
  const label = await (await client.createIssueLabel({ name: "Needs triage", teamId: (await issue.team).id })).issueLabel;
  await client.updateIssue(issue.id, { addedLabelIds: [label.id], estimate: 2 });
  const names = (await (await client.issue(issue.id)).labels()).nodes.map((l) => l.name).sort();
  assert.deepEqual(names, ["Agent", "Needs triage"]);
});

test("pagination: fetchNext walks every page once", async () => {
  const { client } = await sandbox(taskSeed("26-github-linear-handoff.seed.json").linear);
  const team = (await client.teams()).nodes[0];
  for (let i = 0; i < 7; i++) await client.createIssue({ teamId: team.id, title: `Issue ${i}` });
  const page = await client.issues({ first: 3 });
  let seen = page.nodes.length;
  let guard = 0;
  while (page.pageInfo.hasNextPage && guard++ < 10) {
    const more = await page.fetchNext();
    seen = more.nodes.length;
  }
  assert.equal(seen, 7);
  const ids = new Set(page.nodes.map((n) => n.identifier));
  assert.equal(ids.size, 7);
});

test("sub-issues and relations", async () => {
  const { client } = await sandbox(taskSeed("24-linear-issue-triage.seed.json"));
  const parent = await client.issue("ENG-1");
  const team = await parent.team;
  const child = await (await client.createIssue({ teamId: team.id, title: "Child task", parentId: parent.id })).issue;
  assert.equal(child.identifier, "ENG-3");
  assert.equal((await child.parent).id, parent.id);
  assert.deepEqual((await parent.children()).nodes.map((n) => n.id), [child.id]);
  const rel = await client.createIssueRelation({ issueId: child.id, relatedIssueId: "ENG-2", type: "blocks" });
  assert.equal(rel.success, true);
  const relations = await child.relations();
  assert.equal((await relations.nodes[0].relatedIssue).identifier, "ENG-2");
});

test("projects and cycles", async () => {
  const { client } = await sandbox(taskSeed("24-linear-issue-triage.seed.json"));
  const team = (await client.teams()).nodes[0];
  const project = await (await client.createProject({ name: "Apollo", teamIds: [team.id], description: "Launch" })).project;
  assert.equal(project.name, "Apollo");
  const cycle = await (await client.createCycle({ teamId: team.id, startsAt: new Date("2026-07-20"), endsAt: new Date("2026-08-03") })).cycle;
  assert.equal(cycle.number, 1);
  await client.updateIssue("ENG-2", { projectId: project.id, cycleId: cycle.id });
  assert.deepEqual((await project.issues()).nodes.map((i) => i.identifier), ["ENG-2"]);
  assert.deepEqual((await cycle.issues()).nodes.map((i) => i.identifier), ["ENG-2"]);
  const upd = await client.createProjectUpdate({ projectId: project.id, body: "On track", health: "onTrack" });
  assert.equal(upd.success, true);
  assert.equal((await project.projectUpdates()).nodes.length, 1);
});

test("label groups, due dates, slug ids and milestones read as Linear's", async () => {
  const { client } = await sandbox(taskSeed("24-linear-issue-triage.seed.json"));
  const team = (await client.teams()).nodes[0];
  const group = await (await client.createIssueLabel({ name: "Kind", isGroup: true, teamId: team.id })).issueLabel;
  const defect = await (await client.createIssueLabel({ name: "Defect", parentId: group.id, teamId: team.id })).issueLabel;
  const chore = await (await client.createIssueLabel({ name: "Chore", parentId: group.id, teamId: team.id })).issueLabel;
  await assert.rejects(() => client.createIssue({ teamId: team.id, title: "Both", labelIds: [defect.id, chore.id] }), (e) => e instanceof InvalidInputLinearError);
  const issue = await (await client.createIssue({ teamId: team.id, title: "Dated", dueDate: "2026-12-05T18:00:00Z", labelIds: [defect.id] })).issue;
  assert.equal(issue.dueDate, "2026-12-05");
  const project = await (await client.createProject({ name: "Apollo", teamIds: [team.id] })).project;
  assert.match(project.slugId, /^[0-9a-f]{12}$/);
  assert.ok(project.url.endsWith(`/project/apollo-${project.slugId}`), project.url);
  assert.equal((await client.project(project.slugId)).id, project.id);
  const milestone = await (await client.createProjectMilestone({ projectId: project.id, name: "Beta" })).projectMilestone;
  assert.equal(milestone.status, "next");
});

test("errors are typed as the SDK types Linear's", async () => {
  const { client, apiUrl } = await sandbox(taskSeed("24-linear-issue-triage.seed.json"));
  const bad = new LinearClient({ apiKey: "lin_api_wrong", apiUrl });
  await assert.rejects(() => bad.viewer, (e) => e instanceof AuthenticationLinearError);
  await assert.rejects(() => client.issue("does-not-exist"), (e) => e instanceof InvalidInputLinearError);
  await assert.rejects(() => client.client.rawRequest("{ issues { nodes { nope } } }"), (e) => e.type === "GraphqlError" && e.errors.some((x) => /Cannot query field "nope" on type "Issue"/.test(x.message)));
});

test("webhooks: signed deliveries verify with the SDK's webhook client", async () => {
  const received = [];
  const hook = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks) });
      res.end("ok");
    });
  });
  await new Promise((r) => hook.listen(0, "127.0.0.1", r));
  try {
    const { client } = await sandbox(taskSeed("24-linear-issue-triage.seed.json"));
    const url = `http://127.0.0.1:${hook.address().port}/linear`;
    const created = await client.createWebhook({ url, resourceTypes: ["Issue", "Comment"], secret: "whsec_test", allPublicTeams: true });
    assert.equal(created.success, true);
    await client.updateIssue("ENG-2", { priority: 1 });
    for (let i = 0; i < 50 && received.length === 0; i++) await new Promise((r) => setTimeout(r, 100));
    assert.equal(received.length, 1);
    const [d] = received;
    assert.equal(d.headers["linear-event"], "Issue");
    assert.ok(d.headers["linear-delivery"]);
    const verifier = new LinearWebhookClient("whsec_test");
    const payload = verifier.parseData(d.body, d.headers[LINEAR_WEBHOOK_SIGNATURE_HEADER]);
    assert.equal(payload.type, "Issue");
    assert.equal(payload.action, "update");
    assert.equal(payload.data.identifier, "ENG-2");
    assert.equal(payload.updatedFrom.priority, 3);
    assert.throws(() => new LinearWebhookClient("wrong").parseData(d.body, d.headers[LINEAR_WEBHOOK_SIGNATURE_HEADER]));
  } finally {
    hook.close();
  }
});
