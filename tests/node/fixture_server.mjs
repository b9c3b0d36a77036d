// An MCP server (the official TypeScript SDK) that offers the tool
// definitions one real npm server listed when they were captured
// (tests/tool_search/mcp_tools.json, by tests/node/capture_tools.mjs),
// so tests and benchmarks can mount hundreds of real definitions without
// the services behind them. A call answers with the tool's name.
//
// Usage: node fixture_server.mjs PACKAGE
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { readFileSync } from "node:fs";

const wanted = process.argv[2];
const fixture = JSON.parse(
  readFileSync(new URL("../tool_search/mcp_tools.json", import.meta.url), "utf8"),
);
const entry = fixture.servers.find((s) => s.package === wanted);
if (!entry) {
  console.error(`no captured server ${wanted} in tests/tool_search/mcp_tools.json`);
  process.exit(2);
}
const server = new Server(
  { name: `${entry.package} (captured ${entry.version})`, version: "1.0.0" },
  { capabilities: { tools: {} } },
);
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: entry.tools }));
server.setRequestHandler(CallToolRequestSchema, async (request) => ({
  content: [{ type: "text", text: request.params.name }],
}));
await server.connect(new StdioServerTransport());
