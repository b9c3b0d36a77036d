"""A `tools/call` that takes rmcp's path (one asking for progress) is
answered exactly once when the client closes stdin while it runs: the call
is cancelled and rmcp sees the end of its input only once it has answered,
however long the plan's cancel grace (rmcp itself waits 5 s for answers at
the end of its input). One still running when the host is stopped is
answered too. And a call sent right after `initialize`, followed at once by
the end of stdin, is answered before the process exits, whichever path it
took."""

from __future__ import annotations

import json
import signal
from concurrent.futures import ThreadPoolExecutor

from harness import RawServer, Workspace, plan

# A grace longer than rmcp's own 5 s drain at the end of its input.
PLAN = plan(["fixture"]).replace("cancel_grace_ms = 1500", "cancel_grace_ms = 6500")


def answers_and_exit_after_eof(server: RawServer) -> tuple[dict, int | None]:
    """Closes stdin; every answer the server wrote, by id, and its exit code."""
    server.close_stdin()
    assert server.proc.stdout is not None
    by_id: dict = {}
    for line in server.proc.stdout.read().splitlines():
        message = json.loads(line)
        if "result" in message or "error" in message:
            by_id.setdefault(message.get("id"), []).append(message)
    return by_id, server.wait_exit(30)


def answers_after_eof(server: RawServer) -> dict:
    by_id, code = answers_and_exit_after_eof(server)
    assert code == 0, server.stderr()
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


# The race below does not depend on the grace's length: a short one keeps
# the repeated case quick.
SHORT_GRACE = plan(["fixture"]).replace("cancel_grace_ms = 1500", "cancel_grace_ms = 200")

# Servers run at once: the answer was lost in about 1 run in 16 (the
# direct call's answer was counted as given before it was written, so the
# process could exit between the two).
RUNS = 12


def call_right_after_initialize_then_eof(ws: Workspace) -> tuple[list, int | None, str]:
    server = RawServer(ws)
    try:
        rid = server.request(
            "initialize",
            {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "eof", "version": "0"}},
        )
        server.response(rid)
        # No notifications/initialized: the call may reach rmcp's path or
        # the direct one, depending on how far the server got.
        call_running(server, 60)
        by_id, code = answers_and_exit_after_eof(server)
        return by_id.get(60, []), code, server.stderr()
    finally:
        server.kill()


def test_a_call_sent_right_after_initialize_is_answered_when_stdin_closes(workspace, tmp_path):
    spaces = [workspace(SHORT_GRACE)]  # checks the fixture mounts
    for i in range(1, RUNS):
        path = tmp_path / f"run{i}"
        path.mkdir()
        spaces.append(Workspace(path, SHORT_GRACE))
    with ThreadPoolExecutor(RUNS) as pool:
        outcomes = list(pool.map(call_right_after_initialize_then_eof, spaces))
    for answers, code, log in outcomes:
        assert len(answers) == 1, (answers, log)
        assert code == 0, log


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
