"""An MCP server on the official Python SDK, over stdio, whose one tool
answers the W3C trace context its request carried in `_meta`: the peer the
telemetry tests mount to see that toolhost passes `traceparent` on."""

from __future__ import annotations

import json
import os

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("trace-peer")


@server.tool()
def trace_context(ctx: Context) -> str:
    """The request's `_meta.traceparent` and `_meta.tracestate`, as JSON."""
    params = ctx.request_context.params or {}
    meta = dict(params.get("_meta") or {})
    return json.dumps({"traceparent": meta.get("traceparent"), "tracestate": meta.get("tracestate")})


@server.tool()
def exit_now() -> str:
    """Ends this server's process at once (a crash, for the restart count)."""
    os._exit(3)


if __name__ == "__main__":
    server.run()
