// The operator page (`/ui/`) of `toolhost serve --http`, driven in headless
// Chromium (Debian's `chromium`, through playwright-core) against the real
// server and real MCP clients (the official TypeScript SDK): sign-in with a
// bad token, a non-operator and an operator; a call in flight; approvals
// approved and denied from the page; separation of duties; the audit
// search; a hostile tool input shown as text; sign-out.
//
// Screenshots go to target/test-artifacts/ui/ (or $TOOLHOST_TEST_ARTIFACTS/ui).
// A missing Chromium ($CHROMIUM, default /usr/bin/chromium), binary or
// module fails the test; nothing skips.

import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { chromium } from "playwright-core";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

import { serveHttp } from "./serve_http.mjs";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const target = (env, fallback) => {
  const value = process.env[env] || fallback;
  return isAbsolute(value) ? value : join(ROOT, value);
};
const BIN = target("TOOLHOST_BIN", "target/debug/toolhost");
const MODULES = target("TOOLHOST_MODULE_PATH", "target/debug");
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const SHOTS = join(target("TOOLHOST_TEST_ARTIFACTS", "target/test-artifacts"), "ui");

const TOKENS = { alice: "alice-" + randomBytes(8).toString("hex"), bob: "bob-" + randomBytes(8).toString("hex"), carol: "carol-" + randomBytes(8).toString("hex") };
const XSS = `<img src=x id=pwned onerror="document.title='pwned'"><script>document.title='pwned'</script>`;

function workspace() {
  assert.ok(existsSync(BIN), `${BIN} is missing: build it first (cargo build -p toolhost -p toolhost-fixture)`);
  assert.ok(existsSync(join(MODULES, "libtoolhost_fixture.so")), `the fixture module is missing from ${MODULES}`);
  assert.ok(existsSync(CHROMIUM), `Chromium is missing at ${CHROMIUM}: apt-get install -y chromium (or set $CHROMIUM)`);
  const dir = mkdtempSync(join(tmpdir(), "toolhost-ui-"));
  const sha = (t) => createHash("sha256").update(t).digest("hex");
  const principals = Object.entries(TOKENS)
    .map(([name, token]) => `[[principals]]\nname = "${name}"\ntoken_sha256 = "${sha(token)}"\n`)
    .join("\n");
  writeFileSync(
    join(dir, "plan.toml"),
    `[host]
default_timeout_secs = 60
audit_log = "audit.jsonl"

[host.ui]
operators = ["alice", "bob"]

[[tools]]
module = "fixture"

[policy.tools.echo]
decision = "ask"

[policy.tools.write_key]
decision = "ask"
effect = "irreversible"
approval = "another_principal"

${principals}`,
  );
  return dir;
}

/** `toolhost serve --http 127.0.0.1:0`; resolves to { origin, mcp, stop }. */
async function serve(dir) {
  const args = ["--plan", join(dir, "plan.toml"), "serve", "--http", "127.0.0.1:0"];
  const env = { PATH: process.env.PATH, HOME: process.env.HOME, TOOLHOST_MODULE_PATH: MODULES, RUST_LOG: "info", TOOLHOST_TOKEN: randomBytes(16).toString("hex") };
  const server = await serveHttp(BIN, args, { cwd: dir, env });
  return { ...server, mcp: server.url, origin: new URL(server.url).origin };
}

/** An MCP client (no elicitation: it cannot answer approvals) for `who`. */
async function mcpClient(server, who) {
  const transport = new StreamableHTTPClientTransport(new URL(server.mcp), {
    requestInit: { headers: { Authorization: `Bearer ${TOKENS[who]}` } },
  });
  const client = new Client({ name: `ui-test ${who}`, version: "0" });
  await client.connect(transport);
  return client;
}

/** Reloads `page` until `predicate(page)` holds (the page has no script of its own). */
async function until(page, predicate, what) {
  const deadline = Date.now() + 20_000;
  for (;;) {
    await page.goto(page.url());
    if (await predicate(page)) return;
    assert.ok(Date.now() < deadline, `timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function signIn(browser, server, who) {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${server.origin}/ui/`);
  assert.match(page.url(), /\/ui\/login$/, "without a session the page sends the browser to sign in");
  await page.fill("#token", TOKENS[who]);
  await Promise.all([page.waitForNavigation(), page.click("#sign-in")]);
  return { context, page };
}

async function shot(page, name) {
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

const status = (result) => result._meta?.toolhost?.status;

/** A call left waiting while the page acts; a failure shows where it is awaited. */
function waiting(promise) {
  promise.catch(() => {});
  return promise;
}

test("the operator page in Chromium", { timeout: 180_000 }, async () => {
  const dir = workspace();
  const server = await serve(dir);
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
  const clients = [];
  try {
    // A bad token: refused, no cookie.
    const anon = await browser.newContext();
    const login = await anon.newPage();
    await login.goto(`${server.origin}/ui/login`);
    await login.fill("#token", "not-a-token");
    const [refused] = await Promise.all([login.waitForNavigation(), login.click("#sign-in")]);
    assert.equal(refused.status(), 401);
    assert.match(await login.textContent("#problem"), /not known/);
    assert.deepEqual(await anon.cookies(), []);
    await shot(login, "01-bad-token");

    // A valid token of a principal who is no operator: 403, with why.
    const carolPage = await signIn(browser, server, "carol");
    assert.match(await carolPage.page.textContent("#message"), /'carol' may not use the operator page/);
    assert.deepEqual(await carolPage.context.cookies(), []);
    await shot(carolPage.page, "02-not-an-operator");

    // An operator: signed in, with a session cookie that is not the token.
    const alice = await signIn(browser, server, "alice");
    assert.equal(await alice.page.textContent("#me"), "alice");
    const [cookie] = await alice.context.cookies();
    assert.equal(cookie.name, "toolhost_ui");
    assert.notEqual(cookie.value, TOKENS.alice);
    assert.deepEqual([cookie.httpOnly, cookie.secure, cookie.sameSite, cookie.path], [true, true, "Strict", "/ui/"]);
    assert.ok(cookie.expires > Date.now() / 1000, "the cookie has a bounded lifetime");
    await shot(alice.page, "03-signed-in");
    // Chromium keeps the Secure cookie on http://localhost too (a
    // potentially trustworthy origin), so the page works there as well.
    const local = await browser.newContext();
    const localPage = await local.newPage();
    await localPage.goto(`${server.origin.replace("127.0.0.1", "localhost")}/ui/login`);
    await localPage.fill("#token", TOKENS.bob);
    await Promise.all([localPage.waitForNavigation(), localPage.click("#sign-in")]);
    assert.equal(await localPage.textContent("#me"), "bob");
    assert.equal((await local.cookies())[0].secure, true);
    await local.close();

    // A call in flight is listed with its tool and principal.
    const carol = await mcpClient(server, "carol");
    clients.push(carol);
    const sleeping = waiting(carol.callTool({ name: "sleep", arguments: { ms: 3000 } }));
    await until(alice.page, async (p) => (await p.locator("#in-flight td.tool", { hasText: "sleep" }).count()) === 1, "the sleep call in flight");
    assert.match(await alice.page.textContent("#in-flight"), /carol/);
    await shot(alice.page, "04-in-flight");
    assert.equal(status(await sleeping), "success");

    // A call that asks waits for the page; approved there, it runs. Its
    // hostile input is shown as text, not markup.
    const approved = waiting(carol.callTool({ name: "echo", arguments: { message: XSS } }));
    await until(alice.page, async (p) => (await p.locator("#approvals tr[data-call]").count()) === 1, "the echo approval");
    assert.equal(await alice.page.locator("#pwned").count(), 0, "the input's <img> is not an element");
    assert.ok((await alice.page.textContent("#approvals pre.input")).includes(JSON.stringify(XSS)), "the input is shown verbatim (as JSON)");
    assert.notEqual(await alice.page.title(), "pwned");
    await shot(alice.page, "05-approval-waiting-xss-escaped");
    await alice.page.click("#approvals button.approve");
    const ran = await approved;
    assert.equal(status(ran), "success", JSON.stringify(ran));
    assert.equal(ran.structuredContent.message, XSS);

    // Denied on the page: the call fails `denied`.
    const denied = waiting(carol.callTool({ name: "echo", arguments: { message: "deny me" } }));
    await until(alice.page, async (p) => (await p.locator("#approvals tr[data-call]").count()) === 1, "the second echo approval");
    await alice.page.click("#approvals button.deny");
    const refusedCall = await denied;
    assert.equal(refusedCall.isError, true);
    assert.equal(status(refusedCall), "policy_denied", JSON.stringify(refusedCall));
    assert.match(JSON.stringify(refusedCall), /"code":"denied"/);
    assert.match(JSON.stringify(refusedCall), /operator 'alice' denied/);

    // Separation of duties: alice's own irreversible call cannot be
    // approved by alice; bob can, and the audit record names both.
    const aliceMcp = await mcpClient(server, "alice");
    clients.push(aliceMcp);
    const irreversible = waiting(aliceMcp.callTool({ name: "write_key", arguments: { key: "k", ms: 1 } }));
    await until(alice.page, async (p) => (await p.locator("#approvals tr[data-call]").count()) === 1, "the write_key approval");
    const [own] = await Promise.all([alice.page.waitForNavigation(), alice.page.click("#approvals button.approve")]);
    assert.equal(own.status(), 403);
    assert.match(await alice.page.textContent("#message"), /'alice' cannot approve its own call/);
    await shot(alice.page, "06-own-approval-refused");
    const bob = await signIn(browser, server, "bob");
    assert.equal(await bob.page.locator("#approvals tr[data-call] td.tool", { hasText: "write_key" }).count(), 1);
    await bob.page.click("#approvals button.approve");
    assert.equal(status(await irreversible), "success");

    // The audit search: by tool and status, by principal, and by time.
    await bob.page.goto(`${server.origin}/ui/`);
    await bob.page.fill("#q-tool", "write_key");
    await bob.page.fill("#q-status", "success");
    await Promise.all([bob.page.waitForNavigation(), bob.page.click("#search")]);
    const rows = bob.page.locator("#audit tr:has(td)");
    assert.equal(await rows.count(), 1);
    assert.equal(await rows.locator("td.principal").textContent(), "alice");
    assert.equal(await rows.locator("td.approver").textContent(), "bob");
    await shot(bob.page, "07-audit-separation-of-duties");
    await bob.page.goto(`${server.origin}/ui/?principal=carol&status=policy_denied`);
    assert.equal(await rows.count(), 1);
    assert.equal(await rows.locator("td.tool").textContent(), "echo");
    await bob.page.goto(`${server.origin}/ui/?principal=carol`);
    assert.ok((await rows.count()) >= 3, "carol's sleep and two echo calls");
    assert.equal(await bob.page.locator("#audit td.principal", { hasNotText: "carol" }).count(), 0);
    assert.equal(await bob.page.locator("#pwned").count(), 0);
    await bob.page.goto(`${server.origin}/ui/?from=2999-01-01T00:00`);
    assert.equal(await rows.count(), 0, "nothing after the year 2999");
    await bob.page.goto(`${server.origin}/ui/?to=2000-01-01T00:00`);
    assert.equal(await rows.count(), 0, "nothing before 2000");
    await bob.page.goto(`${server.origin}/ui/?from=2000-01-01T00:00&to=2999-01-01T00:00&tool=echo`);
    assert.equal(await rows.count(), 2);
    await shot(bob.page, "08-audit-search");

    // Sign-out: the session ends on the server, the old cookie is worth nothing.
    const old = (await alice.context.cookies())[0];
    await alice.page.goto(`${server.origin}/ui/`);
    await Promise.all([alice.page.waitForNavigation(), alice.page.click("#sign-out")]);
    assert.match(alice.page.url(), /\/ui\/login$/);
    assert.deepEqual(await alice.context.cookies(), []);
    await alice.context.addCookies([old]);
    await alice.page.goto(`${server.origin}/ui/`);
    assert.match(alice.page.url(), /\/ui\/login$/, "the old session id no longer signs in");
    await shot(alice.page, "09-signed-out");
  } finally {
    for (const c of clients) await c.close().catch(() => {});
    await browser.close();
    await server.stop();
  }
});
