"""An MCP server over stdio of the kind some hand-rolled servers are: it
speaks 2025-06-18 and answers every method it does not know with an empty
result instead of a -32601 error, `server/discover` included. A client that
probes with discover first gets `{}` back, which is not a discover result.
Written by hand because no SDK server behaves this way: they answer
unknown methods with an error, as JSON-RPC asks."""

from __future__ import annotations

import json
import sys


def answer(rid, result: dict) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}) + "\n")
    sys.stdout.flush()


TOOL = {"name": "hello", "description": "Says hello.", "inputSchema": {"type": "object", "properties": {}}}

for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue  # notifications
    method = message.get("method")
    if method == "initialize":
        answer(
            message["id"],
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "lenient", "version": "1"},
            },
        )
    elif method == "tools/list":
        answer(message["id"], {"tools": [TOOL]})
    elif method == "tools/call":
        answer(message["id"], {"content": [{"type": "text", "text": "hello from a lenient server"}]})
    else:
        answer(message["id"], {})
