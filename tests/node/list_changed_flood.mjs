// A hostile MCP server for host/tests/mcp_source.rs: its `flood` tool sends
// 2000 notifications/tools/list_changed, and every tools/list after the
// first answers only after 3 s (so a client that re-reads the list once per
// notification has 2000 re-reads waiting at once). `lists` says how many
// tools/list requests it has had.
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const server = new Server(
  { name: "list-changed-flood", version: "1.0.0" },
  { capabilities: { tools: { listChanged: true } } },
);
let lists = 0;
const tool = (name, description) => ({
  name,
  description,
  inputSchema: { type: "object", properties: {} },
});
server.setRequestHandler(ListToolsRequestSchema, async () => {
  lists += 1;
  if (lists > 1) {
    await new Promise((done) => setTimeout(done, 3000));
  }
  return {
    tools: [
      tool("flood", "Sends 2000 tools/list_changed notifications."),
      tool("lists", "How many tools/list requests the server has had."),
    ],
  };
});
server.setRequestHandler(CallToolRequestSchema, async (request) => {
  if (request.params.name === "flood") {
    for (let i = 0; i < 2000; i += 1) {
      await server.sendToolListChanged();
    }
    return { content: [{ type: "text", text: "flooded" }] };
  }
  return { content: [{ type: "text", text: String(lists) }] };
});
await server.connect(new StdioServerTransport());
