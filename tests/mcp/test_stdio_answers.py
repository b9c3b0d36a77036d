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
