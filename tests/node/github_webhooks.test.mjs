// GitHub webhooks from the GitHub twin, through a real `pome serve` and a real receiver on
// loopback: Octokit (@octokit/rest 22.0.1) makes hooks and changes; every delivery that
// arrives is validated against @octokit/webhooks-schemas (7.6.1) and, for the events that
// package has no schema for (ping, push, create, delete, status), against GitHub's own
// webhook schemas in its OpenAPI description (tests/specs/github/api.github.com.json); and
// every signature is verified with @octokit/webhooks' `verify`, JSON and form bodies alike.
// Payloads with an action are also validated against GitHub's `webhook-<event>-<action>`.
//
// Run: cd tests/node && npm install && node --test github_webhooks.test.mjs
// POME_BIN names the host binary (default: target/release/pome).

import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createRequire } from "node:module";
import { Octokit } from "@octokit/rest";
import { Webhooks } from "@octokit/webhooks";
import Ajv from "ajv";
import addFormats from "ajv-formats";
import { servePome, createSandbox, ROOT } from "./server.mjs";

const pome = servePome("pme_node_github_hooks_0123456789");
const require = createRequire(import.meta.url);

// One validator for both schema sets. The community schemas use a `tsAdditionalProperties`
// annotation and GitHub's use OpenAPI's `nullable`; neither is a rule to enforce beyond
// what Ajv understands, so strict mode is off (unknown keywords are annotations).
const ajv = new Ajv({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addFormat("uri-template", true);
ajv.addSchema(require("@octokit/webhooks-schemas"), "community");
ajv.addSchema(nullableToJsonSchema(JSON.parse(readFileSync(join(ROOT, "tests", "specs", "github", "api.github.com.json"), "utf8"))), "openapi");

// OpenAPI 3.0's `nullable: true` as JSON Schema (`null` among the types), as
// tests/python/test_github_openapi.py reads the same description.
function nullableToJsonSchema(node) {
  if (Array.isArray(node)) {
    node.forEach(nullableToJsonSchema);
  } else if (node && typeof node === "object") {
    Object.values(node).forEach(nullableToJsonSchema);
    if (node.nullable) {
      delete node.nullable;
      if ("type" in node) {
        node.type = [node.type, "null"].flat();
        if (node.enum) node.enum = [...node.enum, null];
      } else {
        const inner = { ...node };
        for (const k of Object.keys(node)) delete node[k];
        node.anyOf = [inner, { type: "null" }];
      }
    } else if ("nullable" in node) {
      delete node.nullable;
    }
  }
  return node;
}

// The community schema's definition for an event and action (its event's, where the
// event has no actions), else GitHub's OpenAPI one.
function validatorFor(event, action) {
  const exact = action && ajv.getSchema(`community#/definitions/${event}$${action}`);
  if (exact) return { name: `${event}$${action}`, validate: exact };
  const community = ajv.getSchema(`community#/definitions/${event}_event`);
  if (community) return { name: `${event}_event`, validate: community };
  const openapi = ajv.getSchema(`openapi#/components/schemas/webhook-${event.replaceAll("_", "-")}`);
  assert.ok(openapi, `no schema for ${event}`);
  return { name: `webhook-${event}`, validate: openapi };
}

// Where the community schemas and GitHub's own description disagree, GitHub's decides (every
// payload is validated against both where both have a schema). These are the only community
// errors forgiven, each exactly:
// - releases: GitHub's description (since immutable releases) requires `immutable` and
//   `updated_at` on the release, which the community schema's closed `release` predates;
// - pull_request.demilestoned: the community schema wants the pull request's `milestone` to be
//   an object after it was removed; GitHub's allows null.
function knownDisagreement(event, action, e) {
  if (event === "release") return e.instancePath === "/release" && e.keyword === "additionalProperties" && ["immutable", "updated_at"].includes(e.params.additionalProperty);
  if (event === "pull_request" && action === "demilestoned") return e.instancePath === "/pull_request/milestone" && e.keyword === "type";
  return false;
}

// A webhook receiver: every request's headers and raw body, answered 200.
async function receiver() {
  const got = [];
  const server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      got.push({ path: req.url, headers: req.headers, body });
      res.writeHead(200, { "content-type": "text/plain" }).end("ok");
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return { got, base: `http://127.0.0.1:${server.address().port}`, close: () => server.close() };
}

// Waits until `pred(got)` holds (deliveries are sent after each call returns).
async function until(got, pred, what) {
  for (let i = 0; i < 200 && !pred(got); i++) await new Promise((r) => setTimeout(r, 25));
  assert.ok(pred(got), `timed out waiting for ${what}; got ${got.map((d) => d.headers["x-github-event"]).join(",")}`);
}

const SEED = {
  users: [{ login: "alice", type: "User", name: "Alice Chen" }, { login: "pome-agent", type: "User" }],
  repositories: [{
    owner: "acme", name: "api", default_branch: "main", agent_permission: "admin", required_status_checks: [], collaborators: ["alice"],
    labels: [{ name: "bug", color: "d73a4a", description: "Something is broken" }],
    milestones: [{ title: "v1" }],
    files: [{ path: "README.md", content: "# api\n" }, { path: "src/app.py", content: "x = 1\n" }],
    issues: [{ number: 1, title: "Crash on start", author: "alice" }],
  }],
};

const SECRETS = { json: "It's a Secret to Everybody", form: "form-secret" };

test("every event the twin sends validates against GitHub's webhook schemas and verifies with @octokit/webhooks", async () => {
  const rx = await receiver();
  try {
    const sb = await createSandbox(pome, { twins: ["github"], seed: SEED });
    const octokit = new Octokit({ auth: sb.agent_token, baseUrl: sb.per_twin.github.base_url, request: { retries: 0 } });
    const repo = { owner: "acme", repo: "api" };

    // Three hooks: everything as JSON with a secret, issues as a form with a secret, and
    // the organisation's push hook without one.
    const all = await octokit.rest.repos.createWebhook({ ...repo, name: "web", events: ["*"], config: { url: `${rx.base}/all`, content_type: "json", secret: SECRETS.json } });
    const form = await octokit.rest.repos.createWebhook({ ...repo, events: ["issues"], config: { url: `${rx.base}/form`, content_type: "form", secret: SECRETS.form } });
    const org = await octokit.rest.orgs.createWebhook({ org: "acme", name: "web", events: ["push"], config: { url: `${rx.base}/org`, content_type: "json" } });
    assert.equal(all.status, 201);
    assert.equal(form.data.config.content_type, "form");
    assert.equal(org.data.type, "Organization");

    // Issues, comments, labels, milestones.
    const issue = (await octokit.rest.issues.create({ ...repo, title: "Hooks", body: "first", labels: ["bug"], assignees: ["alice"], milestone: 1 })).data;
    await octokit.rest.issues.update({ ...repo, issue_number: issue.number, title: "Hooks!", state: "closed", state_reason: "completed" });
    await octokit.rest.issues.update({ ...repo, issue_number: issue.number, state: "open" });
    await octokit.rest.issues.removeLabel({ ...repo, issue_number: issue.number, name: "bug" });
    await octokit.rest.issues.lock({ ...repo, issue_number: issue.number, lock_reason: "resolved" });
    await octokit.rest.issues.unlock({ ...repo, issue_number: issue.number });
    await octokit.rest.issues.removeAssignees({ ...repo, issue_number: issue.number, assignees: ["alice"] });
    await octokit.rest.issues.update({ ...repo, issue_number: issue.number, milestone: null });
    await octokit.rest.issues.addAssignees({ ...repo, issue_number: 1, assignees: ["alice"] });
    const comment = (await octokit.rest.issues.createComment({ ...repo, issue_number: 1, body: "on it" })).data;
    await octokit.rest.issues.updateComment({ ...repo, comment_id: comment.id, body: "on it!" });
    await octokit.rest.issues.deleteComment({ ...repo, comment_id: comment.id });
    await octokit.rest.issues.createLabel({ ...repo, name: "p1", color: "b60205" });
    await octokit.rest.issues.updateLabel({ ...repo, name: "p1", new_name: "prio-1", color: "ff0000" });
    await octokit.rest.issues.deleteLabel({ ...repo, name: "prio-1" });
    const ms = (await octokit.rest.issues.createMilestone({ ...repo, title: "v2", description: "next" })).data;
    await octokit.rest.issues.updateMilestone({ ...repo, milestone_number: ms.number, state: "closed" });
    await octokit.rest.issues.updateMilestone({ ...repo, milestone_number: ms.number, state: "open" });
    await octokit.rest.issues.updateMilestone({ ...repo, milestone_number: ms.number, title: "v2.0", due_on: "2030-01-01T00:00:00Z" });
    await octokit.rest.issues.deleteMilestone({ ...repo, milestone_number: ms.number });

    // A branch, a commit, a pull request with a review, a review comment, a status and
    // checks, the merge, and the branch deleted.
    const main = (await octokit.rest.git.getRef({ ...repo, ref: "heads/main" })).data.object.sha;
    await octokit.rest.git.createRef({ ...repo, ref: "refs/heads/feature", sha: main });
    const put = (await octokit.rest.repos.createOrUpdateFileContents({ ...repo, path: "src/app.py", branch: "feature", message: "Bump x",
      content: Buffer.from("x = 2\n").toString("base64"), sha: (await octokit.rest.repos.getContent({ ...repo, path: "src/app.py" })).data.sha })).data;
    const pr = (await octokit.rest.pulls.create({ ...repo, title: "Bump x", head: "feature", base: "main", body: "Fixes #1" })).data;
    await octokit.rest.pulls.requestReviewers({ ...repo, pull_number: pr.number, reviewers: ["alice"] });
    await octokit.rest.issues.addLabels({ ...repo, issue_number: pr.number, labels: ["bug"] });
    await octokit.rest.issues.removeLabel({ ...repo, issue_number: pr.number, name: "bug" });
    await octokit.rest.issues.update({ ...repo, issue_number: pr.number, milestone: 1, assignees: ["alice"] });
    await octokit.rest.issues.update({ ...repo, issue_number: pr.number, milestone: null, assignees: [] });
    await octokit.rest.issues.lock({ ...repo, issue_number: pr.number });
    await octokit.rest.issues.unlock({ ...repo, issue_number: pr.number });
    await octokit.rest.pulls.createReview({ ...repo, pull_number: pr.number, event: "COMMENT", body: "self-check" });
    const rc = (await octokit.rest.pulls.createReviewComment({ ...repo, pull_number: pr.number, body: "why 2?", commit_id: put.commit.sha, path: "src/app.py", line: 1 })).data;
    await octokit.rest.pulls.updateReviewComment({ ...repo, comment_id: rc.id, body: "why 2??" });
    await octokit.rest.pulls.deleteReviewComment({ ...repo, comment_id: rc.id });
    await octokit.rest.pulls.update({ ...repo, pull_number: pr.number, title: "Bump x to 2" });
    await octokit.rest.pulls.removeRequestedReviewers({ ...repo, pull_number: pr.number, reviewers: ["alice"] });
    // A pending review with an inline comment: both go out when it is submitted.
    const pending = (await octokit.rest.pulls.createReview({ ...repo, pull_number: pr.number, body: "later", comments: [{ path: "src/app.py", line: 1, body: "pending note" }] })).data;
    await octokit.rest.pulls.submitReview({ ...repo, pull_number: pr.number, review_id: pending.id, event: "COMMENT" });
    await octokit.rest.pulls.updateReview({ ...repo, pull_number: pr.number, review_id: pending.id, body: "later, edited" });
    await octokit.rest.pulls.dismissReview({ ...repo, pull_number: pr.number, review_id: pending.id, message: "stale" });
    await octokit.rest.pulls.update({ ...repo, pull_number: pr.number, state: "closed" });
    await octokit.rest.pulls.update({ ...repo, pull_number: pr.number, state: "open" });
    // A new head commit: a push and a synchronize.
    const next = (await octokit.rest.repos.createOrUpdateFileContents({ ...repo, path: "src/app.py", branch: "feature", message: "Bump x again",
      content: Buffer.from("x = 3\n").toString("base64"), sha: put.content.sha })).data;
    await octokit.rest.repos.createCommitStatus({ ...repo, sha: next.commit.sha, state: "success", context: "ci/test", target_url: "https://ci.test/1" });
    const run = (await octokit.rest.checks.create({ ...repo, name: "lint", head_sha: next.commit.sha, status: "in_progress" })).data;
    await octokit.rest.checks.update({ ...repo, check_run_id: run.id, conclusion: "success", output: { title: "ok", summary: "clean" } });
    await octokit.rest.pulls.merge({ ...repo, pull_number: pr.number, merge_method: "squash" });
    await octokit.rest.git.deleteRef({ ...repo, ref: "heads/feature" });
    const rel = (await octokit.rest.repos.createRelease({ ...repo, tag_name: "v1.0.0", name: "one", body: "notes" })).data;
    await octokit.rest.repos.updateRelease({ ...repo, release_id: rel.id, body: "more notes" });
    const draft = (await octokit.rest.repos.createRelease({ ...repo, tag_name: "v1.1.0-rc1", draft: true, prerelease: true })).data;
    await octokit.rest.repos.updateRelease({ ...repo, release_id: draft.id, draft: false });
    await octokit.rest.repos.deleteRelease({ ...repo, release_id: rel.id });

    // Ping and test a hook, then redeliver one delivery.
    await octokit.rest.repos.pingWebhook({ ...repo, hook_id: all.data.id });
    await octokit.rest.repos.testPushWebhook({ ...repo, hook_id: all.data.id });
    const deliveries = (await octokit.rest.repos.listWebhookDeliveries({ ...repo, hook_id: all.data.id, per_page: 100 })).data;
    const opened = deliveries.find((d) => d.event === "issues" && d.action === "opened");
    const full = (await octokit.rest.repos.getWebhookDelivery({ ...repo, hook_id: all.data.id, delivery_id: opened.id })).data;
    assert.equal(full.request.payload.issue.title, "Hooks");
    assert.equal((await octokit.rest.repos.redeliverWebhookDelivery({ ...repo, hook_id: all.data.id, delivery_id: opened.id })).status, 202);

    const want = ["ping", "issues", "issue_comment", "pull_request", "pull_request_review", "pull_request_review_comment", "push", "create", "delete",
      "label", "milestone", "release", "check_run", "check_suite", "status"];
    const seen = (got) => new Set(got.filter((d) => d.path === "/all").map((d) => d.headers["x-github-event"]));
    await until(rx.got, (got) => want.every((e) => seen(got).has(e)) && got.filter((d) => d.headers["x-github-delivery"] === opened.guid).length === 2, "every event and the redelivery");
    // Everything is sent by the time the last call has returned and been delivered; wait
    // for the list the twin keeps to be matched by arrivals.
    const total = (await Promise.all([all, form, org].map(async (h) => (h === org
      ? await octokit.rest.orgs.listWebhookDeliveries({ org: "acme", hook_id: h.data.id, per_page: 100 })
      : await octokit.rest.repos.listWebhookDeliveries({ ...repo, hook_id: h.data.id, per_page: 100 })).data.length))).reduce((a, b) => a + b, 0);
    await until(rx.got, (got) => got.length >= total, `${total} deliveries`);
    assert.equal(rx.got.length, total);

    const verifiers = { "/all": new Webhooks({ secret: SECRETS.json }), "/form": new Webhooks({ secret: SECRETS.form }) };
    const failures = [];
    const actions = new Set();
    for (const d of rx.got) {
      const h = d.headers;
      const event = h["x-github-event"];
      assert.match(h["user-agent"], /^GitHub-Hookshot\//);
      assert.match(h["x-github-delivery"], /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      assert.ok(h["x-github-hook-id"]);
      assert.ok(["repository", "organization"].includes(h["x-github-hook-installation-target-type"]));
      let payload;
      if (d.path === "/form") {
        assert.equal(h["content-type"], "application/x-www-form-urlencoded");
        payload = JSON.parse(new URLSearchParams(d.body).get("payload"));
      } else {
        assert.equal(h["content-type"], "application/json");
        payload = JSON.parse(d.body);
      }
      if (verifiers[d.path]) {
        assert.ok(await verifiers[d.path].verify(d.body, h["x-hub-signature-256"]), `${event} to ${d.path}: the signature verifies`);
        assert.equal(await verifiers[d.path].verify(d.body + " ", h["x-hub-signature-256"]), false);
        assert.match(h["x-hub-signature"], /^sha1=[0-9a-f]{40}$/);
      } else {
        assert.equal(h["x-hub-signature-256"], undefined, "no secret, no signature");
      }
      actions.add(`${event}.${payload.action ?? ""}`);
      const { name, validate } = validatorFor(event, payload.action);
      if (!validate(payload)) {
        const errors = validate.errors.filter((x) => !knownDisagreement(event, payload.action, x));
        if (errors.length) {
          const e = errors.slice(0, 3).map((x) => `${x.instancePath} ${x.message} ${JSON.stringify(x.params)}`).join("; ");
          failures.push(`${event}.${payload.action ?? ""} (${name}): ${e}`);
        }
      }
      const gh = payload.action && ajv.getSchema(`openapi#/components/schemas/webhook-${event.replaceAll("_", "-")}-${payload.action.replaceAll("_", "-")}`);
      if (gh && !gh(payload)) {
        const e = gh.errors.slice(0, 3).map((x) => `${x.instancePath} ${x.message} ${JSON.stringify(x.params)}`).join("; ");
        failures.push(`${event}.${payload.action} (openapi): ${e}`);
      }
    }
    assert.deepEqual(failures, [], "payloads that fail their schema");
    // The validators are live: a key GitHub never sends, or a missing one, fails them.
    const sample = JSON.parse(rx.got.find((d) => d.path === "/all" && d.headers["x-github-event"] === "issues").body);
    assert.equal(validatorFor("issues", sample.action).validate({ ...sample, invented: 1 }), false);
    const push = JSON.parse(rx.got.find((d) => d.path === "/all" && d.headers["x-github-event"] === "push").body);
    assert.equal(validatorFor("push").validate({ ...push, ref: undefined }), false);
    for (const a of ["issues.opened", "issues.edited", "issues.closed", "issues.reopened", "issues.labeled", "issues.unlabeled", "issues.assigned",
      "issues.milestoned", "issue_comment.created", "issue_comment.edited", "issue_comment.deleted", "label.created", "label.edited", "label.deleted",
      "milestone.created", "milestone.closed", "milestone.deleted", "pull_request.opened", "pull_request.review_requested", "pull_request.labeled",
      "pull_request.closed", "pull_request_review.submitted", "pull_request_review_comment.created", "check_run.created", "check_run.completed",
      "check_suite.completed", "release.created", "release.published", "release.released", "issues.locked", "issues.unlocked", "issues.unassigned",
      "issues.demilestoned", "milestone.opened", "milestone.edited", "pull_request.edited", "pull_request.review_request_removed",
      "pull_request.reopened", "pull_request.synchronize", "pull_request.unlabeled", "pull_request.milestoned", "pull_request.demilestoned", "pull_request.assigned",
      "pull_request.unassigned", "pull_request.locked", "pull_request.unlocked", "pull_request_review.edited", "pull_request_review.dismissed",
      "pull_request_review_comment.edited", "pull_request_review_comment.deleted", "release.edited", "release.deleted"]) {
      assert.ok(actions.has(a), `${a} was delivered`);
    }
    // The form hook heard only issues; the organisation's only pushes.
    assert.deepEqual([...new Set(rx.got.filter((d) => d.path === "/form").map((d) => d.headers["x-github-event"]))].sort(), ["issues", "ping"]);
    assert.deepEqual([...new Set(rx.got.filter((d) => d.path === "/org").map((d) => d.headers["x-github-event"]))].sort(), ["ping", "push"]);
  } finally {
    rx.close();
  }
});
