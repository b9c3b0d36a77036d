"""An MCP server on the official Python SDK that speaks MCP 2026-07-28
(`server/discover`, no `initialize`) beside the older revisions, over
stdio: the modern peer the gateway tests mount. Its tools answer an image
and audio block, and a request for input (`input_required`)."""

from __future__ import annotations

import base64

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.utilities.types import Audio, Image
from mcp_types import (
    CallToolResult,
    ElicitRequest,
    ElicitRequestFormParams,
    InputRequiredResult,
    TextContent,
)

# Bytes the tests compare with what reaches their client.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
WAV = b"RIFF$\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00\x40\x1f\x00\x00\x80\x3e\x00\x00\x02\x00\x10\x00data\x00\x00\x00\x00"

server = MCPServer("modern-peer")


@server.tool()
def media() -> list:
    """An image and a sound."""
    return ["a picture and a sound", Image(data=PNG, format="png"), Audio(data=WAV, format="wav")]


@server.tool()
def refuse() -> CallToolResult:
    """Fails, with structured data beside its message."""
    return CallToolResult(
        content=[TextContent(type="text", text="refused: the quota is spent")],
        structured_content={"reason": "quota", "retry_after_s": 30},
        is_error=True,
    )


@server.tool()
def ask(ctx: Context) -> InputRequiredResult | str:
    """Asks the caller for a name before it answers."""
    if ctx.input_responses:
        return "thanks"
    return InputRequiredResult(
        input_requests={
            "name": ElicitRequest(
                params=ElicitRequestFormParams(
                    message="What is your name?",
                    requested_schema={"type": "object", "properties": {"name": {"type": "string"}}},
                )
            )
        },
        request_state="asked-once",
    )


if __name__ == "__main__":
    server.run("stdio")
