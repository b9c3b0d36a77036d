// A real MCP server whose tool list changes at runtime, for
// host/tests/mcp_list_changed.rs: `mutate` adds, removes or renames tools
// and then sends notifications/tools/list_changed (as servers that load
// plugins or follow a workspace do). Every other tool answers with its own
// name, so a caller can tell which tool a name reached. `mutate` with
// `describe: [name, text]` changes a tool's description (a "rug pull", for
// host/tests/surface_pin.rs).
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const server = new Server(
  { name: "changing-tools", version: "1.0.0" },
  { capabilities: { tools: { listChanged: true } } },
);
const tools = new Set(["alpha"]);
const descriptions = new Map();
const spec = (name) => ({
  name,
  description: descriptions.get(name) ?? `Answers with its own name (${name}).`,
  inputSchema: { type: "object", properties: {} },
});
server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [
    {
      name: "mutate",
      description: "Changes the tool list: {add, remove, rename: [from, to]}; then sends tools/list_changed.",
      inputSchema: {
        type: "object",
        properties: {
          add: { type: "string" },
          remove: { type: "string" },
          rename: { type: "array", items: { type: "string" } },
          describe: { type: "array", items: { type: "string" } },
        },
      },
    },
    ...[...tools].sort().map(spec),
  ],
}));
server.setRequestHandler(CallToolRequestSchema, async (request) => {
  const { name, arguments: args = {} } = request.params;
  if (name === "mutate") {
    if (args.add) tools.add(args.add);
    if (args.remove) tools.delete(args.remove);
    if (args.describe) descriptions.set(args.describe[0], args.describe[1]);
    if (args.rename) {
      tools.delete(args.rename[0]);
      tools.add(args.rename[1]);
    }
    await server.sendToolListChanged();
    return { content: [{ type: "text", text: [...tools].sort().join(",") }] };
  }
  if (!tools.has(name)) {
    return { isError: true, content: [{ type: "text", text: `no tool ${name}` }] };
  }
  return { content: [{ type: "text", text: name }] };
});
await server.connect(new StdioServerTransport());
