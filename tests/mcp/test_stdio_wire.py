"""`toolhost serve` on stdio at the wire, where the official SDK would hide
what matters: calls run on the thread that read them while other messages
are still read and answered, pipelined messages each get one answer, lines
too long to hold or not JSON at all, tools that ignore their deadline,
signals, and stdin that is a plain file."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

from harness import BIN, RawServer, plan, server_env, wait_until


def call(server: RawServer, name: str, arguments: dict) -> int:
    return server.request("tools/call", {"name": name, "arguments": arguments})


def taken(server: RawServer) -> None:
    """Readiness: a ping sent after a call is answered, so the server has
    read the call and is running it (pings are answered in reading order,
    and never wait for calls)."""
    ping = server.request("ping", {})
    message = server.read()
    assert message.get("id") == ping and message.get("result") == {}, message


def test_a_long_call_does_not_hold_up_other_messages(workspace):
    ws = workspace()
    server = RawServer(ws)
    try:
        server.initialize()
        long_call = call(server, "sleep", {"ms": 60_000})
        taken(server)
        started = time.monotonic()
        ping = server.request("ping", {})
        assert server.response(ping)["result"] == {}
        listed = server.request("tools/list", {})
        names = {t["name"] for t in server.response(listed)["result"]["tools"]}
        assert "sleep" in names
        echo = call(server, "echo", {"message": "meanwhile"})
        assert server.response(echo)["result"]["structuredContent"]["message"] == "meanwhile"
        assert time.monotonic() - started < 5, "answered while the long call ran"

        server.send(
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": long_call, "reason": "test"},
            }
        )
        assert_cancelled_without_a_response(server, ws, long_call)
        assert time.monotonic() - started < 10
    finally:
        server.kill()


def assert_cancelled_without_a_response(server: RawServer, ws, rid: int) -> None:
    """The tool stopped and the call was recorded, but (as the MCP spec asks
    and rmcp does) no response went out for the cancelled request."""
    assert wait_until(
        lambda: [r["status"] for r in ws.audit_records() if r.get("tool") == "sleep"] == ["cancelled"],
        timeout=5,
    ), ws.audit_records()
    ping = server.request("ping", {})
    while True:
        message = server.read()
        assert message.get("id") != rid, f"a response to a cancelled request: {message}"
        if message.get("id") == ping:
            break


def test_pipelined_messages_each_get_one_answer(workspace):
    ws = workspace()
    server = RawServer(ws)
    try:
        server.initialize()
        ids = list(range(100, 140))
        lines = []
        for rid in ids:
            if rid % 10 == 3:
                lines.append({"jsonrpc": "2.0", "id": rid, "method": "ping"})
            else:
                lines.append(
                    {
                        "jsonrpc": "2.0",
                        "id": rid,
                        "method": "tools/call",
                        "params": {"name": "echo", "arguments": {"message": f"m{rid}"}},
                    }
                )
        # One write: the readers see many lines in one read.
        assert server.proc.stdin is not None
        server.proc.stdin.write("".join(json.dumps(m) + "\n" for m in lines).encode())
        server.proc.stdin.flush()
        answers: dict[int, dict] = {}
        while len(answers) < len(ids):
            message = server.read()
            rid = message.get("id")
            assert rid not in answers, f"answered twice: {message}"
            answers[rid] = message
        for rid in ids:
            if rid % 10 == 3:
                assert answers[rid]["result"] == {}
            else:
                result = answers[rid]["result"]
                assert result["structuredContent"]["message"] == f"m{rid}"
                # The legacy shape rmcp gives peers before 2026-07-28.
                assert "resultType" not in result
    finally:
        server.kill()


def test_a_call_and_its_cancellation_in_one_write(workspace):
    ws = workspace()
    server = RawServer(ws)
    try:
        server.initialize()
        rid = 7
        messages = [
            {
                "jsonrpc": "2.0",
                "id": rid,
                "method": "tools/call",
                "params": {"name": "sleep", "arguments": {"ms": 60_000}},
            },
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid}},
        ]
        assert server.proc.stdin is not None
        server.proc.stdin.write("".join(json.dumps(m) + "\n" for m in messages).encode())
        server.proc.stdin.flush()
        assert_cancelled_without_a_response(server, ws, rid)
    finally:
        server.kill()


def test_a_tool_that_ignores_its_deadline_is_answered_without_it(workspace):
    ws = workspace(plan(["fixture"], "[policy.tools.stubborn_sleep]\ntimeout_secs = 1\n"))
    server = RawServer(ws)
    try:
        server.initialize()
        started = time.monotonic()
        rid = call(server, "stubborn_sleep", {"ms": 30_000})
        answer = server.response(rid)["result"]
        took = time.monotonic() - started
        assert answer["isError"] is True
        assert answer["_meta"]["toolhost"]["status"] == "timeout"
        assert "abandoned" in answer["content"][0]["text"]
        # The deadline (1 s) and the grace (1.5 s), not the tool's 30 s.
        assert 2.0 <= took < 10, took
        echo = call(server, "echo", {"message": "still serving"})
        assert server.response(echo)["result"]["isError"] is False
    finally:
        server.kill()


def test_lines_too_long_to_hold_and_lines_that_are_not_json(workspace):
    ws = workspace()
    server = RawServer(ws)
    try:
        server.initialize()
        # 3 MiB: more than the readers hold, less than rmcp's 16 MiB cap.
        big = "x" * (3 << 20)
        rid = call(server, "echo", {"message": big})
        answer = server.response(rid)["result"]
        assert answer["isError"] is False
        assert answer["_meta"]["toolhost"].get("truncated"), "bounded to max_output_bytes"
        # Over rmcp's cap: dropped whole, and the session goes on.
        assert server.proc.stdin is not None
        server.proc.stdin.write(b'{"jsonrpc":"2.0","id":9999,"method":"ping","pad":"' + b"y" * (17 << 20) + b'"}\n')
        server.proc.stdin.write(b"this is not json\n\n")
        server.proc.stdin.flush()
        rid = call(server, "echo", {"message": "after"})
        message = server.response(rid)
        assert message["result"]["structuredContent"]["message"] == "after"
    finally:
        server.kill()


def test_sigint_cancels_a_running_call_and_records_it(workspace):
    ws = workspace()
    server = RawServer(ws)
    try:
        server.initialize()
        rid = call(server, "sleep", {"ms": 60_000})
        taken(server)
        server.proc.send_signal(signal.SIGINT)
        assert server.wait_exit(10) == 130
        answer = server.response(rid)["result"]
        assert answer["_meta"]["toolhost"]["status"] == "cancelled"
        assert [r["status"] for r in ws.audit_records() if r.get("tool") == "sleep"] == ["cancelled"]
    finally:
        server.kill()


def test_stdin_that_is_a_plain_file(workspace):
    ws = workspace()
    requests = ws.path / "requests.jsonl"
    requests.write_text(
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "file", "version": "0"},
                },
            }
        )
        + "\n"
    )
    with open(requests, "rb") as stdin:
        out = subprocess.run(
            [str(BIN), *ws.args()],
            cwd=ws.path,
            env=server_env(),
            stdin=stdin,
            capture_output=True,
            timeout=30,
        )
    assert out.returncode == 0, out.stderr.decode()
    answers = [json.loads(line) for line in out.stdout.decode().splitlines()]
    assert answers[0]["id"] == 1
    assert answers[0]["result"]["serverInfo"]["name"] == "toolhost"

    empty = subprocess.run(
        [str(BIN), *ws.args()],
        cwd=ws.path,
        env=server_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=30,
    )
    assert empty.returncode == 0, empty.stderr.decode()
    assert empty.stdout == b""


def reader_threads(pid: int) -> int:
    tasks = Path(f"/proc/{pid}/task")
    return sum(1 for t in tasks.iterdir() if (t / "comm").read_text().strip() == "toolhost-mcp-io")


def test_stdin_keeps_a_reader_while_long_calls_run_past_the_idle_limit(workspace):
    # Readers beyond the two kept ones retire after idling 10 s, but never
    # the last idle one: with two long calls running, a third reader waits,
    # and must still be reading when the idle limit has passed.
    ws = workspace()
    server = RawServer(ws)
    try:
        server.initialize()
        first = call(server, "sleep", {"ms": 60_000})
        taken(server)
        second = call(server, "sleep", {"ms": 60_000})
        taken(server)
        # Time itself is the state here: the readers' idle limit must pass.
        time.sleep(11.5)
        started = time.monotonic()
        ping = server.request("ping", {})
        assert server.response(ping)["result"] == {}
        assert time.monotonic() - started < 3, "no reader was left on stdin"
        for rid in (first, second):
            server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid}})
        assert wait_until(
            lambda: len([r for r in ws.audit_records() if r.get("tool") == "sleep"]) == 2, timeout=5
        )
    finally:
        server.kill()


def test_a_flood_of_concurrent_calls_is_answered_without_a_thread_each(workspace):
    ws = workspace()
    server = RawServer(ws)
    try:
        server.initialize()
        ids = []
        for i in range(90):
            ids.append(call(server, "sleep", {"ms": 1500}))
            time.sleep(0.002)  # mostly one call per read: each may run directly
        # Every call read and dispatched (the ping comes after them), then
        # the readers are counted.
        ping = server.request("ping", {})
        answered = set()
        while (message := server.read()).get("id") != ping:
            assert message["result"]["isError"] is False, message
            answered.add(message["id"])
        readers = reader_threads(server.proc.pid)
        # 64 direct calls at most, plus readers left waiting on stdin.
        assert readers <= 64 + 3, readers
        while len(answered) < len(ids):
            message = server.read()
            assert message["result"]["isError"] is False, message
            answered.add(message["id"])
        assert answered == set(ids)
    finally:
        server.kill()


def test_a_call_naming_its_protocol_version_is_judged_as_rmcp_judges_it(workspace):
    ws = workspace()
    server = RawServer(ws)
    try:
        server.initialize()
        rid = server.request(
            "tools/call",
            {"name": "echo", "arguments": {"message": "x"}, "_meta": {"io.modelcontextprotocol/protocolVersion": "1999-01-01"}},
        )
        message = server.response(rid)
        assert "error" in message, message
        echo = call(server, "echo", {"message": "fine"})
        assert server.response(echo)["result"]["isError"] is False
    finally:
        server.kill()
