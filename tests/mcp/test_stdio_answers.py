"""`toolhost serve` on stdio keeps its protocol stream to itself and answers
every request exactly once: a module that prints to stdout (while mounting
or while running a call) lands in the log, never between JSON-RPC
messages."""

from __future__ import annotations

import json

from harness import RawServer, plan


def read_all_json(server: RawServer, until_id: int) -> list[dict]:
    """Every line up to the answer to `until_id`; each one must be JSON."""
    assert server.proc.stdout is not None
    seen = []
    while True:
        line = server.proc.stdout.readline()
        assert line, "the server closed stdout"
        seen.append(json.loads(line))  # a printed line would fail here
        if seen[-1].get("id") == until_id and ("result" in seen[-1] or "error" in seen[-1]):
            return seen


def test_a_module_printing_to_stdout_does_not_reach_the_protocol_stream(workspace):
    ws = workspace(plan([], '[[tools]]\nmodule = "fixture"\n[tools.config]\nprint_on_mount = "PRINTED-AT-MOUNT"\n'))
    server = RawServer(ws)
    try:
        server.initialize()
        rid = server.request("tools/call", {"name": "echo", "arguments": {"message": "stdout:PRINTED-IN-CALL"}})
        answers = read_all_json(server, rid)
        assert answers[-1]["result"]["isError"] is False
        # And through rmcp's path (a call asking for progress) as well.
        rid = server.request(
            "tools/call",
            {"name": "echo", "arguments": {"message": "stdout:PRINTED-VIA-RMCP"}, "_meta": {"progressToken": 1}},
        )
        assert read_all_json(server, rid)[-1]["result"]["isError"] is False
        server.close_stdin()
        assert server.wait_exit(10) == 0
        log = server.stderr()
        for text in ("PRINTED-AT-MOUNT", "PRINTED-IN-CALL", "PRINTED-VIA-RMCP"):
            assert text in log, f"{text} should have gone to stderr"
    finally:
        server.kill()


def test_every_broken_request_is_answered_once_with_its_id(workspace):
    ws = workspace()
    server = RawServer(ws)
    try:
        server.initialize()
        # A ping answered means rmcp has taken `initialized`, so the calls
        # below run on the direct path (rmcp's path at the end of stdin is
        # test_stdio_eof.py's).
        server.response(server.request("ping", {}))
        assert server.proc.stdin is not None
        cases = {
            101: (b'{"jsonrpc":"2.0","id":101,"method":"tools/call","params":{"name":"echo","arguments":{"message":"\xff"}}}', -32700),
            102: (b'{"jsonrpc":"2.0","id":102,"method":"ping"} trailing', -32700),
            103: (b'{"jsonrpc":"2.0","id":103,"method":"ping","pad":"' + b"y" * (40 << 20) + b'"}', -32600),
            104: (b'{"jsonrpc":"1.0","id":104,"method":"ping"}', -32600),
            105: (b'{"jsonrpc":"2.0","id":105,"method":"tools/call","params":"no"}', -32600),
        }
        # A reused id: the first call is still running when the second comes.
        server.proc.stdin.write(b'{"jsonrpc":"2.0","id":106,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":3000}}}\n')
        server.proc.stdin.flush()
        for text, _ in cases.values():
            server.proc.stdin.write(text + b"\n")
        server.proc.stdin.write(b'{"jsonrpc":"2.0","id":106,"method":"ping"}\n')
        server.proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/bogus","params":7}\n')
        server.proc.stdin.flush()
        server.close_stdin()
        assert server.proc.stdout is not None
        answers = [json.loads(line) for line in server.proc.stdout.read().splitlines()]
        by_id: dict = {}
        for answer in answers:
            by_id.setdefault(answer.get("id"), []).append(answer)
        for rid, (_, code) in cases.items():
            got = by_id.get(rid, [])
            assert len(got) == 1, (rid, got)
            assert got[0]["error"]["code"] == code, got
        assert "16777216" in by_id[103][0]["error"]["message"], "names the limit"
        # 106: the refusal of the reused id, and the first call's own answer.
        reused = by_id.get(106, [])
        assert len(reused) == 2, reused
        assert any("already used" in a.get("error", {}).get("message", "") for a in reused)
        assert None not in by_id, f"nothing here is unreadable: {by_id.get(None)}"
    finally:
        server.kill()
