"""A `tools/call` that takes rmcp's path (one asking for progress) is
answered exactly once when the client closes stdin while it runs: the call
is cancelled and rmcp sees the end of its input only once it has answered,
however long the plan's cancel grace (rmcp itself waits 5 s for answers at
the end of its input). And one still running when the host is stopped is
answered too."""

from __future__ import annotations

import json
import signal

from harness import RawServer, plan

# A grace longer than rmcp's own 5 s drain at the end of its input.
PLAN = plan(["fixture"]).replace("cancel_grace_ms = 1500", "cancel_grace_ms = 6500")


def answers_after_eof(server: RawServer) -> dict:
    server.close_stdin()
    assert server.proc.stdout is not None
    by_id: dict = {}
    for line in server.proc.stdout.read().splitlines():
        message = json.loads(line)
        if "result" in message or "error" in message:
            by_id.setdefault(message.get("id"), []).append(message)
    assert server.wait_exit(30) == 0, server.stderr()
    return by_id


def call_running(server: RawServer, rid: int, meta: dict | None = None) -> None:
    # A tool that ignores cancellation: it is answered when the grace ends,
    # 6.5 s after stdin closed.
    params = {"name": "stubborn_sleep", "arguments": {"ms": 30000}}
    if meta:
        params["_meta"] = meta
    server.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params})


def test_a_call_asking_for_progress_is_answered_when_stdin_closes(workspace):
    ws = workspace(PLAN)
    server = RawServer(ws)
    try:
        server.initialize()
        server.response(server.request("ping", {}))
        call_running(server, 50, {"progressToken": "p"})
        by_id = answers_after_eof(server)
        assert len(by_id.get(50, [])) == 1, (by_id, server.stderr())
    finally:
        server.kill()


def test_a_call_running_when_the_host_is_stopped_is_answered(workspace):
    ws = workspace(PLAN)
    server = RawServer(ws)
    try:
        server.initialize()
        server.response(server.request("ping", {}))
        # Through rmcp (it asks for progress), stuck past rmcp's own 2 s
        # drain at a shutdown.
        call_running(server, 70, {"progressToken": "p"})
        # Readiness: a ping sent after it is answered, so rmcp has taken
        # the call (it reads and dispatches in order).
        server.response(server.request("ping", {}))
        server.proc.send_signal(signal.SIGTERM)
        assert server.proc.stdout is not None
        by_id: dict = {}
        for line in server.proc.stdout.read().splitlines():
            message = json.loads(line)
            if "result" in message or "error" in message:
                by_id.setdefault(message.get("id"), []).append(message)
        assert len(by_id.get(70, [])) == 1, (by_id, server.stderr())
    finally:
        server.kill()
