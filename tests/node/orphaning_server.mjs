// A real MCP server for host/tests/mcp_source_reaper.rs whose `orphan` tool
// starts `sleep` in a new session (setsid, via `detached`), so the child
// leaves the server's process group, and answers with the child's pid.
// Killing the server's group does not reach it; only a subreaper (or a
// cgroup) around the server does.
import { spawn } from "node:child_process";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const server = new Server({ name: "orphaning", version: "1.0.0" }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [
    {
      name: "orphan",
      description: "Starts `sleep 300` in its own session; answers its pid.",
      inputSchema: { type: "object", properties: {} },
    },
    {
      name: "die",
      description: "Exits the server at once (a crash), leaving its children behind.",
      inputSchema: { type: "object", properties: {} },
    },
  ],
}));
server.setRequestHandler(CallToolRequestSchema, async (request) => {
  if (request.params.name === "die") {
    process.exit(3);
  }
  const child = spawn("sleep", ["300"], { detached: true, stdio: "ignore" });
  child.unref();
  return { content: [{ type: "text", text: String(child.pid) }] };
});
await server.connect(new StdioServerTransport());
