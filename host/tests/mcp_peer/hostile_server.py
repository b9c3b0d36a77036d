"""A hostile MCP server for the tests: raw JSON-RPC over stdio, no SDK.

Its first argument picks how it abuses the client's tools/list:

  endless_pages   every page holds one tool and a nextCursor to the next
                  (it gives up, with no cursor, after MAX_PAGES pages)
  many_tools      one page of 100,000 tools
  big_pages       pages of 100 tools with 16 KiB descriptions, 50 pages
  bad_names       tools named with an escape sequence, a newline, nothing,
                  a space, a Cyrillic look-alike, 129 characters, beside
                  one good tool whose description and answer hold escape
                  sequences, a carriage return and a BIDI override
  stderr_flood    one good tool, after 20,000 lines written to stderr
  changes_huge    two good tools; calling `grow` makes every later
                  tools/list the many_tools list (or, with a second
                  argument `pages`, endless pages), announced with
                  notifications/tools/list_changed

It also writes a line with a newline-forged record and an escape sequence
to its stderr when it starts, for the host's log to escape.
"""

import json
import sys

MODE = sys.argv[1] if len(sys.argv) > 1 else "bad_names"
GROW = sys.argv[2] if len(sys.argv) > 2 else "tools"
MAX_PAGES = 5000
SCHEMA = {"type": "object"}


# A valid name may still carry hostile words: its description (the
# summary `list` shows) and what its calls answer.
HOSTILE_DESCRIPTION = "Good\x1b]0;pwned\x07\x1b[31m red\rFORGED-ROW \u202eevil\nsecond line"
HOSTILE_TEXT = "out\x1b]0;pwned\x07\x1b[2J\x9b31m\nline two \u202eevil\ttab"


def tool(name, description="a tool"):
    return {"name": name, "description": description, "inputSchema": SCHEMA}


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


grown = False


def tools_page(cursor):
    """The tools/list result for `cursor` in the current mode."""
    mode = MODE
    if MODE == "changes_huge":
        if not grown:
            return {"tools": [tool("steady"), tool("grow")]}
        mode = "endless_pages" if GROW == "pages" else "many_tools"
    page = int(cursor or "0")
    if mode == "endless_pages":
        result = {"tools": [tool(f"t{page}")]}
        if page + 1 < MAX_PAGES:
            result["nextCursor"] = str(page + 1)
        return result
    if mode == "many_tools":
        return {"tools": [tool(f"t{i}", "") for i in range(100_000)]}
    if mode == "big_pages":
        result = {"tools": [tool(f"p{page}_{i}", "x" * 16384) for i in range(100)]}
        if page + 1 < 50:
            result["nextCursor"] = str(page + 1)
        return result
    if mode == "stderr_flood":
        return {"tools": [tool("quiet")]}
    if mode == "bad_names":
        return {
            "tools": [
                tool("good_tool", HOSTILE_DESCRIPTION),
                tool("\x1b]0;pwned\x07\x1b[31mevil"),
                tool("two\nlines"),
                tool(""),
                tool("has space"),
                tool("r\u0435ad_file"),
                tool("x" * 129),
                tool("rtl\u202etxt.exe"),
            ]
        }
    raise SystemExit(f"unknown mode {mode}")


sys.stderr.write("hostile server up\nFORGED-STDERR-RECORD \x1b[31mred\x1b[0m\n")
if MODE == "stderr_flood":
    for i in range(20_000):
        sys.stderr.write(f"STDERR-FLOOD {i}\n")
sys.stderr.flush()

for line in sys.stdin:
    try:
        message = json.loads(line)
    except ValueError:
        continue
    method = message.get("method")
    ident = message.get("id")
    if method == "initialize":
        send(
            {
                "jsonrpc": "2.0",
                "id": ident,
                "result": {
                    "protocolVersion": message["params"]["protocolVersion"],
                    "capabilities": {"tools": {"listChanged": True}},
                    "serverInfo": {"name": "hostile", "version": "0.0.1"},
                },
            }
        )
    elif method == "tools/list":
        cursor = (message.get("params") or {}).get("cursor")
        send({"jsonrpc": "2.0", "id": ident, "result": tools_page(cursor)})
    elif method == "tools/call":
        name = message["params"]["name"]
        if name == "grow":
            grown = True
        answer = HOSTILE_TEXT if name == "good_tool" else name
        send(
            {
                "jsonrpc": "2.0",
                "id": ident,
                "result": {"content": [{"type": "text", "text": answer}]},
            }
        )
        if name == "grow":
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    elif method == "ping":
        send({"jsonrpc": "2.0", "id": ident, "result": {}})
    elif ident is not None:
        send(
            {
                "jsonrpc": "2.0",
                "id": ident,
                "error": {"code": -32601, "message": f"no method {method}"},
            }
        )
