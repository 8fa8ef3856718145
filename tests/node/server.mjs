// A real `pome serve` for a Node suite: started on a free loopback port with a fresh data
// directory and the suite's team key, stopped when the suite ends.
// POME_BIN names the host binary (default: target/release/pome); POME_TEST_TWINS_DIR serves
// twin components under development.

import { before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

// Registers the suite's before/after hooks; `pome.base` is the server's URL once it listens.
export function servePome(apiKey) {
  const pome = { base: undefined, apiKey };
  let server;
  before(async () => {
    const bin = process.env.POME_BIN ?? join(ROOT, "target", "release", "pome");
    assert.ok(existsSync(bin), `${bin} is missing: build the host first (make build)`);
    // Webhook receivers in the suites listen on loopback, which `pome serve` allows only when told.
    const args = ["serve", "--listen", "127.0.0.1:0", "--data", mkdtempSync(join(tmpdir(), "pome-node-")), "--deliver-to", "127.0.0.1/32"];
    if (process.env.POME_TEST_TWINS_DIR) args.push("--twins-dir", process.env.POME_TEST_TWINS_DIR);
    server = spawn(bin, args, { env: { ...process.env, POME_API_KEY: apiKey, POME_LOG: "warn" }, stdio: ["ignore", "pipe", "inherit"] });
    pome.base = await new Promise((resolve, reject) => {
      let buf = "";
      server.stdout.on("data", (d) => {
        buf += d;
        const m = buf.match(/listening on (http:\/\/\S+)/);
        if (m) resolve(m[1]);
      });
      server.on("exit", () => reject(new Error("pome serve exited")));
    });
  });
  after(() => server?.kill());
  return pome;
}

// POST /v1/sandboxes with the team key; asserts it was created and answers the sandbox.
export async function createSandbox(pome, body) {
  const r = await fetch(`${pome.base}/v1/sandboxes`, { method: "POST", headers: { "X-API-KEY": pome.apiKey, "content-type": "application/json" }, body: JSON.stringify(body) });
  const sb = await r.json();
  assert.equal(r.status, 201, JSON.stringify(sb));
  return sb;
}
