// The official MCP TypeScript SDK (`Client` over `StdioClientTransport`) as a
// client of `recourse mcp proxy`, started as a client config starts it, in
// front of `recourse tools serve --mcp` (the built binary: RECOURSE_BIN,
// else the first target/debug/recourse above this file). The same two calls
// as the Python SDK's tests/mcp-clients/python/test_mcp_proxy.py. .ci/run
// installs the pinned SDK under target/ and runs this file from there; by
// hand:
//
//   cd tests/mcp-clients/typescript && npm ci && node --test

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const FAILURE = "io.modelcontextprotocol/toolFailure";
const CALL = "recourse/call";
const EXPORT = { source_id: "sales-2024", format: "pdf" };
// The export commits, then its connection drops before the answer.
const CRASH_AFTER_COMMIT = ["--fault", "exports:crash_after_commit:1.0"];
// Reads the export back by its inputs: there is one once the write took effect.
const VERIFY = {
  tools: {
    exports_create: {
      verify: {
        tool: "exports_lookup",
        args: { source_id: "{{payload.source_id}}", format: "{{payload.format}}" },
        expect: ["/latest exists"],
      },
    },
  },
};

const tmp = mkdtempSync(join(tmpdir(), "recourse-mcp-ts-"));
after(() => rmSync(tmp, { recursive: true, force: true }));

function recourseBin() {
  if (process.env.RECOURSE_BIN) {
    const path = resolve(process.env.RECOURSE_BIN);
    assert.ok(existsSync(path), `no recourse binary at ${path} (RECOURSE_BIN)`);
    return path;
  }
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    const path = join(dir, "target", "debug", "recourse");
    if (existsSync(path)) return path;
    assert.notEqual(dir, dirname(dir), "no target/debug/recourse: build it (cargo build -p recourse-cli) or set RECOURSE_BIN");
  }
}

/** A client connected to the proxy, with its journal at `journalPath`, in
 * front of the reference tools (`recourse tools serve --mcp ...tools`). */
async function connect(journalPath, flags, tools) {
  const bin = recourseBin();
  const upstream = [bin, "tools", "serve", "--mcp", "--port", "0", "--no-declared-lookups", ...tools];
  const transport = new StdioClientTransport({
    command: bin,
    args: ["mcp", "proxy", "--journal", journalPath, ...flags, "--", ...upstream],
    stderr: "inherit",
  });
  const client = new Client({ name: "recourse-ts-test", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

async function exports(client) {
  const read = await client.callTool({ name: "exports_lookup", arguments: EXPORT });
  assert.notEqual(read.isError, true, JSON.stringify(read));
  return read.structuredContent.count;
}

function journal(journalPath) {
  const out = execFileSync(recourseBin(), ["journal", "--journal", journalPath, "list", "--json"], {
    encoding: "utf8",
  });
  return JSON.parse(out);
}

test("a dropped write is an unknown outcome, never repeated", async () => {
  const db = join(tmp, "unknown.db");
  const client = await connect(db, [], CRASH_AFTER_COMMIT);
  try {
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(names.includes("exports_create") && names.includes("exports_lookup"), names.join(", "));

    const result = await client.callTool({ name: "exports_create", arguments: EXPORT });
    assert.equal(result.isError, true);
    // The server's own failure reaches the client whole, its own failure
    // metadata unchanged; recourse's judgement is its summary.
    const failure = result._meta[FAILURE];
    assert.equal(failure.code, "TOOL_CONNECTION_LOST");
    assert.equal(failure.retryable, false);
    const call = result._meta[CALL];
    assert.equal(call.reason, "outcome_unknown");
    assert.equal(call.class, "reliability");
    assert.equal(call.retryable, false);
    assert.equal(call.step, "do_not_repeat");
    // The server's words, then one more text block: recourse's message.
    assert.equal(result.content.length, 2);
    assert.ok(result.content[0].text.startsWith("[TOOL_CONNECTION_LOST]"), result.content[0].text);
    assert.equal(result.content[1].type, "text");
    assert.ok(result.content[1].text.startsWith("The outcome of the call is unknown"), result.content[1].text);
    assert.equal(await exports(client), 1, "one export committed, none resent");
  } finally {
    await client.close();
  }
  const entries = journal(db);
  assert.equal(entries.length, 1);
  assert.equal(entries[0].state, "unknown");
});

test("a dropped write read back ends in success", async () => {
  const db = join(tmp, "verified.db");
  const policy = join(tmp, "tools.json");
  writeFileSync(policy, JSON.stringify(VERIFY));
  const client = await connect(db, ["--tools", policy], CRASH_AFTER_COMMIT);
  try {
    const result = await client.callTool({ name: "exports_create", arguments: EXPORT });
    assert.equal(result.isError, false, JSON.stringify(result));
    assert.equal(result._meta[CALL].outcome, "succeeded");
    assert.equal(result._meta[CALL].verification, "verified");
    assert.equal(result._meta[FAILURE], undefined);
    assert.equal(await exports(client), 1);
  } finally {
    await client.close();
  }
  const entries = journal(db);
  assert.equal(entries.length, 1);
  assert.equal(entries[0].state, "succeeded");
});
