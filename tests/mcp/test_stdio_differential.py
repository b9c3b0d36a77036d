"""The stdio fast path for `tools/call` is the same server as rmcp's path:
one transcript (good calls, every kind of broken line, notifications,
reused ids) is fed to a server with the fast path and to one with it off
(`TOOLHOST_MCP_STDIO_DIRECT=off`: every call through rmcp's handler), and
their answers must be equal. Only what must differ between two processes
is normalised: durations, this process's session id, and the numbers in
host-made call ids (they follow arrival order, which timing decides)."""

from __future__ import annotations

import json
import re

from harness import RawServer

INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "differential", "version": "0"}}


def call(rid, name: str, arguments=None, **extra) -> bytes:
    params = {"name": name, **extra}
    if arguments is not None:
        params["arguments"] = arguments
    message = {"jsonrpc": "2.0", "method": "tools/call", "params": params}
    if rid is not ...:
        message["id"] = rid
    return json.dumps(message).encode()


NO_ID = "no id"  # an error for a line whose id is unknown
LATER = "later"  # answered after lines that follow it

# Lines sent in this order after the handshake, each with the answer to wait
# for before the next (so each request is the last line of its read, the
# only place the fast path takes a call): its id, NO_ID, LATER, or None (no
# answer: a ping then shows the line was read and ignored).
CORPUS: list[tuple[bytes, str | None]] = [
    (call(1, "echo", {"message": "hello"}), "1"),
    (call("s-2", "echo", {"message": "a string id"}), '"s-2"'),
    (call(0, "echo", {"message": "id zero"}), "0"),
    (call(-4, "echo", {"message": "a negative id"}), "-4"),
    (call(5, "echo", {"message": 5}), "5"),  # fails validation
    (call(6, "echo", {"message": "x", "extra": True}), "6"),  # unknown field
    (call(7, "no_such_tool", {}), "7"),
    (call(8, "panic", {"message": "boom"}), "8"),
    (call(9, "echo"), "9"),  # no arguments
    (call(10, "echo", [1, 2]), "10"),  # arguments not an object
    (b'{"jsonrpc":"2.0","id":11,"method":"tools/call","params":"no"}', "11"),
    (b'{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"arguments":{}}}', "12"),  # no name
    (b'{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"echo","arguments":{"message":"\xff"}}}', "13"),
    (call(14, "echo", {"message": "then trailing bytes"}) + b" trailing", "14"),
    (b"not json at all", NO_ID),
    (b'{"jsonrpc":"1.0","id":16,"method":"tools/call","params":{"name":"echo","arguments":{"message":"v1"}}}', "16"),
    (b"[" + call(17, "echo", {"message": "in a batch"}) + b"]", NO_ID),
    (call(18, "echo", {"message": "crlf"}) + b"\r", "18"),
    (b"\xef\xbb\xbf" + call(19, "echo", {"message": "bom"}), "19"),
    (call(..., "echo", {"message": "a notification named tools/call"}), None),
    (b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":999}}', None),
    (b'{"jsonrpc":"2.0","method":"notifications/bogus","params":7}', None),
    (b"", None),
    (b"   ", None),
    (call(22, "huge", {"bytes": 300000}), "22"),
    (call(23, "echo", {"message": "progress"}, _meta={"progressToken": "t"}), "23"),
    (b'{"jsonrpc":"2.0","id":24,"method":"tools/list"}', "24"),
    (call(25, "echo", {"message": "x" * 100}) + b" " * 10, "25"),
    (
        b'{"jsonrpc":"2.0","id":26,"method":"tools/call","params":{"name":"echo","arguments":{"message":"pad"},"pad":"'
        + b"y" * (17 << 20)
        + b'"}}',
        "26",
    ),
    (call(27.5, "echo", {"message": "a fractional id"}), NO_ID),
    (call(None, "echo", {"message": "a null id"}), NO_ID),
    (call(28, "sleep", {"ms": 600}), LATER),  # still running when 28 comes again
    (b'{"jsonrpc":"2.0","id":28,"method":"ping"}', "28"),
    (call(29, "echo", {"message": "last, unterminated"}), LATER),
]


def key_of(message: dict) -> str:
    if "id" in message:
        return json.dumps(message["id"])
    if "method" in message:
        return f"notification {message['method']}"
    return NO_ID


def normalised(message: dict) -> str:
    text = json.dumps(message, sort_keys=True)
    text = re.sub(r'"duration_ms": [0-9.e+-]+', '"duration_ms": 0', text)
    # Host-made call ids number calls as they reach the pipeline: which of
    # two concurrent calls gets the lower number is a matter of timing.
    text = re.sub(r'"tool_call_id": "call-\d+"', '"tool_call_id": "call-N"', text)
    # A large output is kept under a fresh handle each time it is produced.
    text = re.sub(r"toolhost://output/[0-9a-f]+", "toolhost://output/ID", text)
    text = re.sub(r"kept until \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", "kept until T", text)
    text = re.sub(r"output of call-\d+", "output of call-N", text)
    return re.sub(r"proc-\d+-[0-9a-f]+", "proc-SESSION", text)


def run(workspace, direct: bool) -> dict:
    ws = workspace()
    server = RawServer(ws, env=None if direct else {"TOOLHOST_MCP_STDIO_DIRECT": "off"})
    server.next_id = 1000  # the handshake's ids stay clear of the corpus's
    try:
        rid = server.request("initialize", INIT)
        server.response(rid)
        server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        # A ping answered: rmcp has taken `initialized` (direct calls are on).
        server.response(server.request("ping", {}))
        assert server.proc.stdin is not None and server.proc.stdout is not None
        answers: dict = {}

        def take(message: dict) -> str:
            key = key_of(message)
            answers.setdefault(key, []).append(normalised(message))
            return key

        def read_until(wanted: str) -> None:
            while take(server.read()) != wanted:
                pass

        for i, (line, wait) in enumerate(CORPUS):
            last = i == len(CORPUS) - 1
            server.proc.stdin.write(line if last else line + b"\n")
            server.proc.stdin.flush()
            if wait is None:
                server.send({"jsonrpc": "2.0", "id": f"sync-{i}", "method": "ping"})
                read_until(json.dumps(f"sync-{i}"))
            elif wait != LATER:
                read_until(wait)
        server.close_stdin()
        for line in server.proc.stdout.read().splitlines():
            take(json.loads(line))
        assert server.wait_exit(30) == 0, server.stderr()
        return {key: sorted(found) for key, found in answers.items()}
    finally:
        server.kill()


def test_the_fast_path_and_rmcps_path_answer_the_corpus_alike(workspace):
    fast = run(workspace, direct=True)
    rmcp = run(workspace, direct=False)
    assert fast.keys() == rmcp.keys(), (sorted(fast.keys() ^ rmcp.keys()), fast, rmcp)
    differ = {key: (fast[key], rmcp[key]) for key in fast if fast[key] != rmcp[key]}
    assert not differ, "\n".join(f"{k}:\n  fast {a}\n  rmcp {b}" for k, (a, b) in differ.items())
    # And the corpus exercised what it claims: every request answered once
    # (28 twice: the refusal of the reused id and the call's own answer),
    # no notification answered.
    for rid in [1, "s-2", 0, -4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 16, 18, 19, 22, 23, 24, 25, 26, 29]:
        assert len(fast.get(json.dumps(rid), [])) == 1, (rid, fast.get(json.dumps(rid)))
    assert len(fast[json.dumps(28)]) == 2, fast[json.dumps(28)]
    # The garbage line, the batch, the fractional and the null id: one
    # error each, without an id; the notifications: nothing.
    assert len(fast[NO_ID]) == 4, fast[NO_ID]
    assert [k for k in fast if k.startswith("notification")] == [], fast.keys()


def test_meta_means_the_same_on_both_paths(workspace):
    """What `_meta` carries is the call's, whichever path runs it: the same
    idempotency key twice runs the side effect once (the second answer is
    the first one replayed, and audited as a replay), and the request
    context reaches the audit."""
    for direct in (True, False):
        ws = workspace()
        server = RawServer(ws, env=None if direct else {"TOOLHOST_MCP_STDIO_DIRECT": "off"})
        try:
            server.initialize()
            # A ping answered: rmcp has taken `initialized` (direct calls are on).
            server.response(server.request("ping", {}))
            # One workspace folder (and store) for both runs: a key each.
            key = f"once-{direct}"
            meta = {"idempotency_key": key, "run_id": "run-7"}
            answers = [
                server.response(server.request("tools/call", {"name": "write_key", "arguments": {"key": "k", "ms": 1}, "_meta": meta}))
                for _ in range(2)
            ]
            first, again = (a["result"]["structuredContent"] for a in answers)
            assert again == first, (direct, "the second call ran again", first, again)
            done = [r for r in ws.audit_records() if r.get("idempotency_key") == key and r.get("status") == "success"]
            assert [bool(r.get("replayed")) for r in done] == [False, True], (direct, done)
            for record in done:
                assert record.get("tool") == "write_key", (direct, record)
                assert record.get("context", {}).get("run_id") == "run-7", (direct, record)
        finally:
            server.kill()
