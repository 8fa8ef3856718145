// The MCP door with the official Node MCP SDK (@modelcontextprotocol/sdk): each twin of a
// sandbox at /s/<id>/<twin>/mcp, and the control MCP at /mcp whose run_task provisions a
// sandbox for the cross-twin example, which then runs over the twins' tools alone.

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { servePome, createSandbox, ROOT } from "./server.mjs";

const KEY = "pme_node_mcp_tests_0123456789";
const pome = servePome(KEY);
const TWINS = ["github", "slack", "stripe", "gmail", "linear"];

async function connect(url, token) {
  const client = new Client({ name: "pome-node-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
  await client.connect(transport);
  return client;
}

// A tool that must succeed: its structured answer.
async function ok(client, name, args = {}) {
  const r = await client.callTool({ name, arguments: args });
  assert.ok(!r.isError, `${name} failed: ${r.content?.[0]?.text}`);
  return r.structuredContent ?? JSON.parse(r.content[0].text);
}

for (const twin of TWINS) {
  test(`the ${twin} twin lists its tools and answers a read tool over MCP`, async () => {
    const sb = await createSandbox(pome, { twins: [twin] });
    const client = await connect(sb.per_twin[twin].mcp_url, sb.agent_token);
    assert.equal(client.getServerVersion().name, `pome-${twin}`);
    const { tools } = await client.listTools();
    assert.ok(tools.length >= 10, `${tools.length} tools`);
    assert.equal(new Set(tools.map((t) => t.name)).size, tools.length, "names are unique");
    for (const t of tools) assert.equal(t.inputSchema.type, "object", t.name);
    const preferred = { github: "get_me", slack: "slack_list_channels", gmail: "list_labels" };
    const name = preferred[twin] ?? tools.find((t) => t.annotations?.readOnlyHint && !(t.inputSchema.required ?? []).length).name;
    const answer = await client.callTool({ name, arguments: {} });
    assert.ok(!answer.isError, answer.content[0].text);
    const rows = await (await fetch(`${sb.per_twin[twin].base_url}/_pome/events`, { headers: { Authorization: `Bearer ${sb.agent_token}` } })).json();
    assert.equal(rows.at(-1).via, "mcp");
    assert.equal(rows.at(-1).tool, name);
    await client.close();
  });
}

test("an unknown tool and arguments off the schema are JSON-RPC errors", async () => {
  const sb = await createSandbox(pome, { twins: ["github"] });
  const client = await connect(sb.per_twin.github.mcp_url, sb.agent_token);
  await assert.rejects(client.callTool({ name: "no_such_tool", arguments: {} }), (e) => e.code === -32602 && /no_such_tool/.test(e.message));
  await assert.rejects(client.callTool({ name: "get_issue", arguments: { owner: "o" } }), (e) => e.code === -32602 && /repo/.test(e.message));
  const rows = await (await fetch(`${sb.per_twin.github.base_url}/_pome/events`, { headers: { Authorization: `Bearer ${sb.agent_token}` } })).json();
  assert.deepEqual(rows, []);
  await client.close();
});

test("another sandbox's token cannot open a twin's MCP door", async () => {
  const a = await createSandbox(pome, { twins: ["slack"] });
  const b = await createSandbox(pome, { twins: ["slack"] });
  await assert.rejects(connect(a.per_twin.slack.mcp_url, b.agent_token), /invalid_auth/);
});

test("run_task provisions the cross-twin example and the good agent passes over MCP alone", async () => {
  const source = readFileSync(join(ROOT, "tasks", "cross-twin-merge-report.md"), "utf8");
  const seed = JSON.parse(readFileSync(join(ROOT, "tasks", "cross-twin-merge-report.seed.json"), "utf8"));
  const control = await connect(`${pome.base}/mcp`, KEY);
  const names = (await control.listTools()).tools.map((t) => t.name).sort();
  assert.deepEqual(names, ["create_sandbox", "finalize", "fork_run", "fork_sandbox", "get_run", "heartbeat", "list_runs", "list_sandboxes", "list_tasks", "run_task", "save_seed", "state_at", "stop_sandbox", "usage", "validate_task"]);

  for (const report of [true, false]) {
    const sb = await ok(control, "run_task", { source, seed });
    const gh = await connect(sb.per_twin.github.mcp_url, sb.agent_token);
    const sl = await connect(sb.per_twin.slack.mcp_url, sb.agent_token);
    const prs = JSON.parse((await gh.callTool({ name: "list_pull_requests", arguments: { owner: "acme", repo: "checkout", state: "open" } })).content[0].text);
    for (const pr of prs) {
      const status = await ok(gh, "repos_get_combined_status_for_ref", { owner: "acme", repo: "checkout", ref: pr.head.sha });
      if (status.state !== "success") continue;
      const merged = await ok(gh, "merge_pull_request", { owner: "acme", repo: "checkout", pullNumber: pr.number, merge_method: "merge" });
      assert.equal(merged.merged, true);
      if (report) await ok(sl, "slack_post_message", { channel_id: "eng-alerts", text: `Merged #${pr.number}: ${pr.title}` });
    }
    const verdict = await ok(control, "finalize", { sandbox_id: sb.sandbox_id });
    if (report) {
      assert.equal(verdict.verdict, "pass", JSON.stringify(verdict));
    } else {
      assert.equal(verdict.verdict, "fail");
      for (const r of verdict.criteria_results) assert.equal(r.status, r.twin === "slack" ? "failed" : "passed", JSON.stringify(r));
    }
    await gh.close();
    await sl.close();
  }
  await control.close();
});
