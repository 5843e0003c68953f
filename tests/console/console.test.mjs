// The gateway's console in a real browser: Debian's Chromium, headless,
// driven by playwright-core, against `recourse serve` (a tokens file, a
// SQLite journal in a temporary directory) in front of `recourse tools
// serve` (the reference tools: an export that commits and then drops its
// connection, a weather service that is down). A person logs in, sees the
// export in doubt, opens its timeline, settles it and sees the list empty;
// a tool's error message holding a script is shown as text and never runs;
// an export that needs a person's approval waits in the console's
// "Awaiting approval" list until an approver approves it in the browser,
// and the tool (a second `recourse tools serve`, without faults) counts
// exactly one write.
//
// Screenshots of each page go to docs/img/console-*.png when
// RECOURSE_UPDATE_SCREENSHOTS=1 (they hold ids and times, so a run
// without it leaves them alone). The binary is RECOURSE_BIN, else the
// first target/debug/recourse above this file; Chromium is
// RECOURSE_CHROMIUM, else /usr/bin/chromium. .ci/run installs the pinned
// playwright-core under target/ and runs this file from there; by hand:
//
//   cargo build -p recourse-cli
//   cd tests/console && npm ci && node --test

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";

import { chromium } from "playwright-core";

const LEAD = "lead-console-token-0123456789";
const OPS = "ops-console-token-0123456789";
const AGENT = "agent-console-token-0123456789";
// What a tool's error message would run, were it markup: it sets a global
// and the title, and opens a dialog.
const SCRIPT = "<script>window.__pwned = 1; document.title = 'pwned'; alert(1)</script>";
const UPDATE = process.env.RECOURSE_UPDATE_SCREENSHOTS === "1";

const here = dirname(fileURLToPath(import.meta.url));
const tmp = mkdtempSync(join(tmpdir(), "recourse-console-"));
const children = [];
let browser;
let gateway;

/** The first directory above this file holding Cargo.toml and docs/. */
function repoRoot() {
  for (let dir = here; ; dir = dirname(dir)) {
    if (existsSync(join(dir, "Cargo.toml")) && existsSync(join(dir, "docs"))) return dir;
    assert.notEqual(dir, dirname(dir), "no repository above " + here);
  }
}

function recourseBin() {
  const path = process.env.RECOURSE_BIN
    ? resolve(process.env.RECOURSE_BIN)
    : join(repoRoot(), "target", "debug", "recourse");
  assert.ok(existsSync(path), `no recourse binary at ${path}: cargo build -p recourse-cli, or set RECOURSE_BIN`);
  return path;
}

/** Starts `recourse ARGS` and resolves to the URL it prints first. */
async function start(args, env = {}) {
  const child = spawn(recourseBin(), args, {
    env: { ...process.env, RECOURSE_BACKOFF_MS: "0", XDG_STATE_HOME: tmp, ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.push(child);
  const lines = createInterface({ input: child.stdout });
  const [line] = await Promise.race([
    once(lines, "line"),
    once(child, "exit").then(([code]) => assert.fail(`recourse ${args[0]} exited ${code}`)),
  ]);
  const url = line.trim().split(" ").pop();
  assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/, line);
  return url;
}

/** POSTs `body` to the gateway's API as `token`'s caller: the record, answered `status`. */
async function call(token, body, status = 200) {
  const answer = await fetch(`${gateway}/v1/calls`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  assert.equal(answer.status, status, await answer.clone().text());
  return answer.json();
}

/** GETs `path` from the gateway's API as `token`'s caller. */
async function read(token, path) {
  const answer = await fetch(`${gateway}${path}`, { headers: { authorization: `Bearer ${token}` } });
  assert.equal(answer.status, 200, await answer.clone().text());
  return answer.json();
}

/** How many exports of `source_id` in `format` the faultless tool server committed (`exports_lookup`). */
async function exportsCommitted(source_id, format) {
  const answer = await fetch(`${writes}/api/exports/lookup`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ source_id, format }),
  });
  assert.equal(answer.status, 200, await answer.clone().text());
  const found = await answer.json();
  return found.data?.count ?? found.count;
}

async function shoot(page, name) {
  const shot = await page.screenshot({ fullPage: true });
  assert.ok(shot.length > 1000, `${name}: an empty screenshot`);
  if (UPDATE) {
    const dir = join(repoRoot(), "docs", "img");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `console-${name}.png`), shot);
  }
}

let tools;
let writes;
let exportCall;
let scriptCall;
let awaitingCall;
// The export that waits for a person: a version, so that only it is counted.
const APPROVED_EXPORT = { source_id: "inventory", version: 2, format: "csv" };

before(async () => {
  tools = await start([
    "tools", "serve", "--port", "0", "--no-declared-lookups",
    "--fault", "exports:crash_after_commit:1.0",
    "--fault", "weather:unavailable:1.0",
  ]);
  // The same tools, no fault injected: where the approved export writes.
  writes = await start(["tools", "serve", "--port", "0"]);
  const tokens = join(tmp, "tokens.json");
  writeFileSync(tokens, JSON.stringify({
    callers: [
      { name: "lead", token: LEAD, approver: true },
      { name: "ops", token: OPS, admin: true },
      { name: "agent", token: AGENT },
    ],
  }));
  chmodSync(tokens, 0o600);
  gateway = await start(["serve", "--port", "0", "--tokens", tokens, "--journal", join(tmp, "journal.db")]);

  // An export asked as "PDF": refused, repaired to "pdf", committed — and
  // its answer lost. Nothing can tell whether it took effect.
  exportCall = await call(AGENT, {
    url: `${tools}/api/exports`,
    payload: { source_id: "sales-2024", format: "PDF" },
    idempotency_key: "console-export-1",
  });
  assert.equal(exportCall.outcome, "unknown", JSON.stringify(exportCall));
  // A format the tool echoes in its error message.
  scriptCall = await call(OPS, {
    url: `${tools}/api/exports`,
    payload: { source_id: "sales-2024", format: SCRIPT },
    idempotency_key: "console-script-1",
  });
  assert.equal(scriptCall.outcome, "failed", JSON.stringify(scriptCall));
  assert.ok(scriptCall.error.message.includes(SCRIPT), scriptCall.error.message);
  // A quote that succeeds, and a weather service that stays down long enough to open its breaker.
  await call(AGENT, { url: `${tools}/api/stock/quote`, payload: { symbol: "TSLA" }, idempotency_key: "console-quote-1" });
  for (let i = 0; i < 2; i++) {
    await call(AGENT, { url: `${tools}/api/weather/current`, payload: { location: "Paris, Ile-de-France, FR" } });
  }

  // An export that needs a person's approval: held, answered 202, nothing sent.
  awaitingCall = await call(AGENT, {
    url: `${writes}/api/exports`,
    payload: APPROVED_EXPORT,
    idempotency_key: "console-approval-1",
    headers: [["X-Export-Reason", "quarterly audit"], ["Authorization", "Bearer warehouse-secret-0123"]],
    approval: { reason: "An inventory export leaves the building" },
  }, 202);
  assert.equal(awaitingCall.outcome, "awaiting_approval", JSON.stringify(awaitingCall));
  assert.equal(awaitingCall.approval.state, "pending");

  browser = await chromium.launch({
    executablePath: process.env.RECOURSE_CHROMIUM || "/usr/bin/chromium",
    // As root, Chromium's sandbox will not start.
    args: ["--no-sandbox"],
  });
});

after(async () => {
  await browser?.close();
  for (const child of children) child.kill("SIGTERM");
  await Promise.all(children.map((c) => (c.exitCode === null ? once(c, "exit") : null)));
  rmSync(tmp, { recursive: true, force: true });
});

/** A fresh page in its own context (its own cookies), failing on any script or dialog. */
async function newPage() {
  const context = await browser.newContext({ viewport: { width: 1200, height: 800 } });
  const page = await context.newPage();
  page.on("dialog", (d) => {
    d.dismiss();
    assert.fail(`a dialog opened: ${d.message()}`);
  });
  page.on("pageerror", (e) => assert.fail(`a script ran and failed: ${e}`));
  return page;
}

async function logIn(page, token) {
  await page.goto(`${gateway}/console`);
  assert.match(page.url(), /\/console\/login$/, "not signed in: the login form");
  await page.fill("#token", token);
  await Promise.all([page.waitForURL(`${gateway}/console`), page.click("button[type=submit]")]);
}

test("an approver logs in, opens the export in doubt, settles it, and sees nothing left in doubt", async () => {
  const page = await newPage();
  await page.goto(`${gateway}/console`);
  assert.match(page.url(), /\/console\/login$/);
  await shoot(page, "login");

  await page.fill("#token", LEAD);
  await Promise.all([page.waitForURL(`${gateway}/console`), page.click("button[type=submit]")]);
  assert.equal(await page.textContent("#in-doubt-count"), "1");
  const link = page.locator(`#in-doubt a[href="/console/calls/${exportCall.call_id}"]`);
  assert.equal(await link.count(), 1, "the unknown export is listed");
  const cookies = await page.context().cookies();
  const session = cookies.find((c) => c.name === "recourse_console");
  assert.ok(session.httpOnly && session.sameSite === "Strict" && session.path === "/console", JSON.stringify(session));
  await shoot(page, "in-doubt");

  await Promise.all([page.waitForURL(/\/console\/calls\//), link.click()]);
  const timeline = await page.textContent("#timeline");
  assert.match(timeline, /Attempt 1/);
  assert.match(timeline, /Attempt 2/);
  assert.match(timeline, /Correction by repair/);
  assert.match(timeline, /Changed since attempt 1: \/format: "PDF" → "pdf"/);
  assert.match(timeline, /No answer: failed_after_send/);
  assert.equal(await page.textContent("#call-state"), "unknown");
  await shoot(page, "call");

  await page.check("input[name=state][value=succeeded]");
  await page.fill("#note", "The tool's admin page lists export sales-2024-v3.pdf.");
  await Promise.all([page.waitForURL(`${gateway}/console`), page.click("#settle button[type=submit]")]);
  assert.equal(await page.textContent("#in-doubt-count"), "0");
  assert.match(await page.textContent("#in-doubt"), /Nothing is in doubt\./);
  await shoot(page, "in-doubt-empty");

  // The API says the same, to the agent whose call it was.
  const replay = await call(AGENT, {
    url: `${tools}/api/exports`,
    payload: { source_id: "sales-2024", format: "PDF" },
    idempotency_key: "console-export-1",
  });
  assert.equal(replay.replayed, true);
  assert.equal(replay.outcome, "succeeded");
  assert.deepEqual([replay.settlement.by, replay.settlement.who], ["person", "lead"]);
  await page.context().close();
});

test("a tool's message holding a script is shown as text and never runs", async () => {
  const page = await newPage();
  const blocked = [];
  page.on("console", (m) => {
    if (/Content Security Policy/i.test(m.text())) blocked.push(m.text());
  });
  await logIn(page, OPS);
  await page.goto(`${gateway}/console/calls/${scriptCall.call_id}`);
  const title = await page.title();
  assert.equal(title, "Call · recourse console");
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  assert.equal(await page.evaluate(() => document.querySelectorAll("script").length), 0);
  assert.deepEqual(blocked, [], "escaped, so the CSP had nothing to block");
  const shown = await page.textContent("#ending .message");
  assert.ok(shown.includes(SCRIPT), shown);
  await shoot(page, "script");
  await page.context().close();
});

test("the journal's size and the breakers are pages too", async () => {
  const page = await newPage();
  await logIn(page, OPS);
  await page.goto(`${gateway}/console/journal`);
  const size = await page.textContent("#size");
  assert.match(size, /succeeded\s*2/, size);
  assert.match(size, /failed\s*1/, size);
  await shoot(page, "journal");

  await page.goto(`${gateway}/console/breakers`);
  const breakers = await page.textContent("#breakers");
  assert.match(breakers, /weather\/current/, breakers);
  assert.match(breakers, /open/, breakers);
  await shoot(page, "breakers");
  await page.context().close();
});

test("an approver approves an awaiting call in the console and the tool counts one write", async () => {
  assert.equal(await exportsCommitted("inventory", "csv"), 0, "nothing is sent before approval");
  const page = await newPage();
  await logIn(page, LEAD);
  const id = awaitingCall.call_id;
  assert.equal(await page.textContent("#awaiting-count"), "1");
  const row = page.locator("#approvals tbody tr", { has: page.locator(`a[href="/console/calls/${id}"]`) });
  assert.equal(await row.count(), 1, "the awaiting export is listed");
  assert.match(await row.textContent(), /An inventory export leaves the building/);
  assert.equal(await row.locator("form").count(), 0, "the list decides nothing");

  // Its page: the approval, pending, the request shown whole, with the form bound to it.
  await Promise.all([page.waitForURL(/\/console\/calls\//), row.locator(`a[href="/console/calls/${id}"]`).first().click()]);
  assert.equal(await page.textContent("#approval-state"), "pending");
  assert.match(await page.textContent("#approval-whose"), /requester/);
  assert.match(await page.textContent("#request-target"), new RegExp(`POST ${writes}/api/exports`));
  const payload = JSON.parse(await page.textContent("#request-payload"));
  assert.deepEqual(payload, APPROVED_EXPORT, "the payload, whole");
  const headers = await page.textContent("#request-headers");
  assert.match(headers, /X-Export-Reason\s*quarterly audit/);
  assert.match(headers, /Authorization\s*\[REDACTED\]/);
  assert.doesNotMatch(await page.content(), /warehouse-secret-0123/);
  assert.equal(
    await page.getAttribute("#approval input[name=request_sha256]", "value"),
    awaitingCall.approval.request_sha256,
  );
  await shoot(page, "approval");

  await page.fill("#approval input[name=note]", "Checked with the warehouse lead.");
  // Whoever decided lands on the call's page, and sees what became of it.
  await Promise.all([page.waitForURL(`${gateway}/console/calls/${id}`), page.click("#approval button[value=approve]")]);
  assert.equal(await page.textContent("#approval-state"), "approved");
  assert.equal(await page.textContent("#approval-by"), "lead");
  await page.goto(`${gateway}/console`);
  assert.equal(await page.textContent("#awaiting-count"), "0");
  assert.match(await page.textContent("#approvals"), /No call is waiting/);

  // Dispatched once by the gateway, with exactly the approved payload.
  let done;
  for (const started = Date.now(); ; ) {
    done = await read(AGENT, `/v1/calls/${id}`);
    if (!["awaiting_approval", "in_flight"].includes(done.state)) break;
    assert.ok(Date.now() - started < 10000, JSON.stringify(done));
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(done.state, "succeeded", JSON.stringify(done));
  assert.deepEqual(done.record.attempts.map((a) => a.payload), [APPROVED_EXPORT]);
  assert.deepEqual(
    [done.record.approval.state, done.record.approval.decided_by, done.record.approval.note],
    ["approved", "lead", "Checked with the warehouse lead."],
  );
  assert.equal(await exportsCommitted("inventory", "csv"), 1, "one write");
  await page.context().close();
});
