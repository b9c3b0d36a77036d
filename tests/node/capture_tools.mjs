// Captures the tool lists of real MCP servers from npm into
// tests/tool_search/mcp_tools.json, for the tool-search test and benchmark (whose
// labelled queries are over these definitions). Each server is started
// over stdio and asked tools/list, exactly as toolhost mounts it.
//
// Usage: install the packages named below (any folder), then
//   node tests/node/capture_tools.mjs NODE_MODULES_DIR > tests/tool_search/mcp_tools.json
// Servers that need a credential to start get a placeholder one: listing
// tools does not call the service.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { readFileSync, mkdtempSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";

const modules = process.argv[2];
if (!modules) {
  console.error("usage: node capture_tools.mjs NODE_MODULES_DIR");
  process.exit(2);
}
const scratch = mkdtempSync(join(tmpdir(), "capture-"));
const servers = [
  ["@modelcontextprotocol/server-filesystem", [scratch]],
  ["@modelcontextprotocol/server-memory", []],
  ["@modelcontextprotocol/server-everything", []],
  ["@modelcontextprotocol/server-github", [], { GITHUB_PERSONAL_ACCESS_TOKEN: "placeholder" }],
  ["@modelcontextprotocol/server-gitlab", [], { GITLAB_PERSONAL_ACCESS_TOKEN: "placeholder" }],
  ["@modelcontextprotocol/server-slack", [], { SLACK_BOT_TOKEN: "placeholder", SLACK_TEAM_ID: "T0" }],
  ["@modelcontextprotocol/server-google-maps", [], { GOOGLE_MAPS_API_KEY: "placeholder" }],
  ["@modelcontextprotocol/server-brave-search", [], { BRAVE_API_KEY: "placeholder" }],
  ["@modelcontextprotocol/server-sequential-thinking", []],
  ["@notionhq/notion-mcp-server", [], { NOTION_TOKEN: "placeholder" }],
  ["@playwright/mcp", ["--caps", "vision,pdf,devtools"]],
  ["chrome-devtools-mcp", []],
  ["mcp-server-kubernetes", []],
  ["@wonderwhy-er/desktop-commander", []],
  ["mongodb-mcp-server", []],
  ["@executeautomation/playwright-mcp-server", []],
  ["@modelcontextprotocol/server-puppeteer", []],
  ["airtable-mcp-server", [], { AIRTABLE_API_KEY: "placeholder" }],
  ["@upstash/context7-mcp", []],
  ["firecrawl-mcp", [], { FIRECRAWL_API_KEY: "fc-placeholder" }],
];

const out = { servers: [] };
for (const [name, args, env = {}] of servers) {
  const pkg = JSON.parse(readFileSync(join(modules, name, "package.json"), "utf8"));
  const bin = typeof pkg.bin === "string" ? pkg.bin : Object.values(pkg.bin)[0];
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [join(modules, name, bin), ...args],
    env: { ...process.env, ...env },
    stderr: "ignore",
  });
  const client = new Client({ name: "capture", version: "1.0.0" });
  try {
    await client.connect(transport);
    const { tools } = await client.listTools();
    out.servers.push({ package: name, version: pkg.version, tools });
    console.error(`${name}@${pkg.version}: ${tools.length} tools`);
  } catch (e) {
    console.error(`${name}: ${e.message}`);
  } finally {
    await client.close().catch(() => {});
  }
}
console.log(JSON.stringify(out, null, 1));
process.exit(0);
