// Interop of `toolhost serve` with MCP clients nobody here wrote: the
// official TypeScript SDK (current 1.32, and 1.17 / 1.12, which speak
// 2025-06-18 / 2025-03-26) over stdio and streamable HTTP, the MCP
// Inspector CLI, and Claude Code's `claude mcp list` health check. Run with `node --test tests/node/` (cargo xtask test does).
//
// The binary comes from $TOOLHOST_BIN and the modules from
// $TOOLHOST_MODULE_PATH (both default to target/debug of this checkout). A
// missing binary, module or npm package fails the tests; nothing skips.

import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync, existsSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, dirname, isAbsolute } from "node:path";
import { fileURLToPath } from "node:url";
import { randomBytes } from "node:crypto";

import { serveHttp } from "./serve_http.mjs";

import * as current from "@modelcontextprotocol/sdk/client/index.js";
import * as currentStdio from "@modelcontextprotocol/sdk/client/stdio.js";
import * as currentHttp from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import * as v17 from "sdk-1-17/client/index.js";
import * as v17Stdio from "sdk-1-17/client/stdio.js";
import * as v17Http from "sdk-1-17/client/streamableHttp.js";
import * as v12 from "sdk-1-12/client/index.js";
import * as v12Stdio from "sdk-1-12/client/stdio.js";
import * as v12Http from "sdk-1-12/client/streamableHttp.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const target = (env, fallback) => {
  const value = process.env[env] || fallback;
  return isAbsolute(value) ? value : join(ROOT, value);
};
const BIN = target("TOOLHOST_BIN", "target/debug/toolhost");
const MODULES = target("TOOLHOST_MODULE_PATH", "target/debug");
const INSPECTOR = join(ROOT, "tests/node/node_modules/.bin/mcp-inspector");
const CLAUDE = join(ROOT, "tests/node/node_modules/.bin/claude");

// `protocol`: the version each SDK asks for (its LATEST_PROTOCOL_VERSION),
// which the server (up to 2025-11-25) must agree to.
const SDKS = [
  { name: "sdk 1.32", protocol: "2025-11-25", Client: current.Client, Stdio: currentStdio.StdioClientTransport, Http: currentHttp.StreamableHTTPClientTransport },
  { name: "sdk 1.17", protocol: "2025-06-18", Client: v17.Client, Stdio: v17Stdio.StdioClientTransport, Http: v17Http.StreamableHTTPClientTransport },
  { name: "sdk 1.12", protocol: "2025-03-26", Client: v12.Client, Stdio: v12Stdio.StdioClientTransport, Http: v12Http.StreamableHTTPClientTransport },
];

/** Records the protocol version the server's `initialize` answer carries,
 *  by wrapping the handler the client installs on its transport. */
function negotiated(transport) {
  const seen = { version: undefined };
  let handler;
  Object.defineProperty(transport, "onmessage", {
    configurable: true,
    get: () => handler,
    set: (h) => {
      handler =
        h &&
        ((message, extra) => {
          seen.version ??= message?.result?.protocolVersion;
          return h(message, extra);
        });
    },
  });
  return seen;
}

function workspace() {
  assert.ok(existsSync(BIN), `${BIN} is missing: build it first (cargo build -p toolhost -p toolhost-fixture)`);
  assert.ok(existsSync(join(MODULES, "libtoolhost_fixture.so")), `the fixture module is missing from ${MODULES}`);
  const dir = mkdtempSync(join(tmpdir(), "toolhost-node-"));
  const plan = join(dir, "plan.toml");
  writeFileSync(
    plan,
    '[host]\ndefault_timeout_secs = 60\ncancel_grace_ms = 1500\naudit_log = "audit.jsonl"\n\n[[tools]]\nmodule = "fixture"\n',
  );
  return { dir, plan };
}

function env(extra = {}) {
  return { PATH: process.env.PATH, HOME: process.env.HOME, TOOLHOST_MODULE_PATH: MODULES, RUST_LOG: "warn", ...extra };
}

/** `toolhost serve --http 127.0.0.1:0` with a token; resolves to { url, token, stop }. */
async function httpServer(ws) {
  const token = randomBytes(16).toString("hex");
  const args = ["--plan", ws.plan, "serve", "--http", "127.0.0.1:0"];
  const server = await serveHttp(BIN, args, { cwd: ws.dir, env: env({ TOOLHOST_TOKEN: token }) });
  return { ...server, token };
}

async function exercise(client) {
  const { tools } = await client.listTools();
  const echo = tools.find((t) => t.name === "echo");
  assert.ok(echo, "echo is listed");
  assert.equal(echo.annotations.readOnlyHint, true);
  const ok = await client.callTool({ name: "echo", arguments: { message: "from node" } });
  assert.equal(ok.isError, false);
  assert.equal(ok.structuredContent.message, "from node");
  const invalid = await client.callTool({ name: "echo", arguments: {} });
  assert.equal(invalid.isError, true);
  assert.equal(invalid._meta.toolhost.status, "validation_error");
  assert.deepEqual(await client.ping(), {});
}

for (const sdk of SDKS) {
  test(`${sdk.name} over stdio`, async () => {
    const ws = workspace();
    const transport = new sdk.Stdio({ command: BIN, args: ["--plan", ws.plan, "serve"], cwd: ws.dir, env: env(), stderr: "ignore" });
    const client = new sdk.Client({ name: `toolhost-interop ${sdk.name}`, version: "0" });
    const version = negotiated(transport);
    await client.connect(transport);
    try {
      assert.equal(client.getServerVersion().name, "toolhost");
      assert.equal(version.version, sdk.protocol, "the protocol version negotiated");
      await exercise(client);
    } finally {
      await client.close();
    }
  });

  test(`${sdk.name} over streamable HTTP`, async () => {
    const ws = workspace();
    const server = await httpServer(ws);
    const transport = new sdk.Http(new URL(server.url), {
      requestInit: { headers: { Authorization: `Bearer ${server.token}` } },
    });
    const client = new sdk.Client({ name: `toolhost-interop ${sdk.name}`, version: "0" });
    const version = negotiated(transport);
    try {
      await client.connect(transport);
      assert.equal(client.getServerVersion().name, "toolhost");
      assert.equal(version.version, sdk.protocol, "the protocol version negotiated");
      await exercise(client);
      await transport.terminateSession?.();
      await client.close();
    } finally {
      await server.stop();
    }
  });
}

test("the HTTP server refuses a client without the token", async () => {
  const ws = workspace();
  const server = await httpServer(ws);
  try {
    const client = new current.Client({ name: "no-token", version: "0" });
    await assert.rejects(client.connect(new currentHttp.StreamableHTTPClientTransport(new URL(server.url))));
    assert.ok(!existsSync(join(ws.dir, "audit.jsonl")) || readFileSync(join(ws.dir, "audit.jsonl"), "utf8") === "");
  } finally {
    await server.stop();
  }
});

function inspector(args, cwd) {
  assert.ok(existsSync(INSPECTOR), `${INSPECTOR} is missing: npm ci --prefix tests/node`);
  return new Promise((resolvePromise, reject) => {
    execFile(INSPECTOR, ["--cli", ...args], { cwd, env: { ...process.env, ...env() }, timeout: 60_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`inspector failed: ${error.message}\n${stderr}`));
      else resolvePromise(stdout);
    });
  });
}

test("MCP Inspector CLI over stdio", async () => {
  const ws = workspace();
  const target = [BIN, "--plan", ws.plan, "serve"];
  const extraEnv = ["-e", `TOOLHOST_MODULE_PATH=${MODULES}`];
  const listed = JSON.parse(await inspector([...extraEnv, ...target, "--method", "tools/list"], ws.dir));
  assert.ok(listed.tools.some((t) => t.name === "echo"));
  const called = JSON.parse(
    await inspector([...extraEnv, ...target, "--method", "tools/call", "--tool-name", "echo", "--tool-arg", "message=inspected"], ws.dir),
  );
  assert.equal(called.structuredContent.message, "inspected");
});

test("MCP Inspector CLI over streamable HTTP", async () => {
  const ws = workspace();
  const server = await httpServer(ws);
  try {
    const auth = ["--header", `Authorization: Bearer ${server.token}`];
    const listed = JSON.parse(await inspector([server.url, "--transport", "http", ...auth, "--method", "tools/list"], ws.dir));
    assert.ok(listed.tools.some((t) => t.name === "echo"));
    const called = JSON.parse(
      await inspector(
        [server.url, "--transport", "http", ...auth, "--method", "tools/call", "--tool-name", "echo", "--tool-arg", "message=inspected"],
        ws.dir,
      ),
    );
    assert.equal(called.structuredContent.message, "inspected");
  } finally {
    await server.stop();
  }
});

/** Claude Code's CLI (npm `@anthropic-ai/claude-code`, its native binary)
 *  in a home folder of its own: no login, no account, nothing sent but to
 *  the servers it checks (telemetry, error reports, update checks and other
 *  non-essential traffic off). */
function claude(args, home, cwd) {
  assert.ok(existsSync(CLAUDE), `${CLAUDE} is missing: npm ci --prefix tests/node (its postinstall links the native binary)`);
  const quiet = {
    DISABLE_TELEMETRY: "1",
    DISABLE_ERROR_REPORTING: "1",
    DISABLE_AUTOUPDATER: "1",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
  };
  return new Promise((resolvePromise, reject) => {
    execFile(CLAUDE, args, { cwd, env: { PATH: process.env.PATH, HOME: home, ...quiet }, timeout: 90_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`claude ${args.join(" ")} failed: ${error.message}\n${stdout}\n${stderr}`));
      else resolvePromise(stdout);
    });
  });
}

test("Claude Code's `claude mcp list` health check over stdio, and over HTTP with the token", async () => {
  const ws = workspace();
  const home = mkdtempSync(join(tmpdir(), "toolhost-claude-home-"));
  const server = await httpServer(ws);
  try {
    const add = (...args) => claude(["mcp", "add", "--scope", "user", ...args], home, ws.dir);
    await add("toolhost-stdio", "-e", `TOOLHOST_MODULE_PATH=${MODULES}`, "--", BIN, "--plan", ws.plan, "serve");
    await add("--transport", "http", "toolhost-http", server.url, "--header", `Authorization: Bearer ${server.token}`);
    await add("--transport", "http", "toolhost-wrong-token", server.url, "--header", "Authorization: Bearer wrong");
    const listed = await claude(["mcp", "list"], home, ws.dir);
    assert.match(listed, /toolhost-stdio: .* - ✔ Connected/, listed);
    assert.match(listed, /toolhost-http: .* \(HTTP\) - ✔ Connected/, listed);
    // The check is a real one: a wrong token fails it.
    assert.match(listed, /toolhost-wrong-token: .* - ✘ Failed to connect.*401/, listed);
  } finally {
    await server.stop();
  }
});

test("bash heartbeats keep a client's request timeout alive (sdk 1.32, resetTimeoutOnProgress)", async () => {
  const ws = workspace();
  assert.ok(existsSync(join(MODULES, "libtoolhost_bash.so")), `the bash module is missing from ${MODULES}`);
  writeFileSync(ws.plan, '[host]\ndefault_timeout_secs = 60\n\n[[tools]]\nmodule = "bash"\n');
  const transport = new currentStdio.StdioClientTransport({ command: BIN, args: ["--plan", ws.plan, "serve"], cwd: ws.dir, env: env(), stderr: "ignore" });
  const client = new current.Client({ name: "heartbeat", version: "0" });
  await client.connect(transport);
  try {
    const seen = [];
    // A 3.5 s request timeout against a 6 s command: only progress
    // notifications (which reset the timeout) let it finish.
    const result = await client.callTool({ name: "bash", arguments: { command: "sleep 6; echo finished" } }, undefined, {
      timeout: 3500,
      resetTimeoutOnProgress: true,
      onprogress: (p) => seen.push(p),
    });
    assert.equal(result.isError, false, JSON.stringify(result));
    assert.match(JSON.stringify(result.content), /finished/);
    assert.ok(seen.length >= 2, `heartbeats: ${JSON.stringify(seen)}`);
    assert.match(seen[0].message, /running for \d+ s; \d+ bytes of output/);
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i].progress > seen[i - 1].progress, "progress increases");
  } finally {
    await client.close();
  }
});
