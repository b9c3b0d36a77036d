"""A session id reaches modules with every call (in the call request, no
ABI change): each MCP HTTP session is its own, one stdio client is one, and
one CLI process or batch is one."""

from __future__ import annotations

import json
import subprocess

import httpx2

from harness import BIN, RawServer, server_env
from test_http_abuse import auth, call, open_session, start


def session_seen(response) -> str:
    for line in response.text.splitlines():
        if line.startswith("data:") and '"structuredContent"' in line:
            return json.loads(line[5:])["result"]["structuredContent"]["session"]
    raise AssertionError(response.text)


def test_each_http_session_is_its_own(workspace):
    ws = workspace()
    server = start(ws)
    try:
        with httpx2.Client(timeout=10) as client:
            a = open_session(client, server.url)
            b = open_session(client, server.url)
            a1 = session_seen(call(client, server.url, a, "echo", {"message": "session"}))
            a2 = session_seen(call(client, server.url, a, "echo", {"message": "session"}, rid=3))
            b1 = session_seen(call(client, server.url, b, "echo", {"message": "session"}))
        assert a1 == a2 == f"http-{a}"
        assert b1 == f"http-{b}"
        assert a1 != b1
    finally:
        server.stop()


def test_a_stdio_client_and_a_cli_process_are_one_session_each(workspace):
    ws = workspace()
    server = RawServer(ws)
    try:
        server.initialize()
        seen = set()
        for _ in range(3):
            rid = server.request("tools/call", {"name": "echo", "arguments": {"message": "session"}})
            seen.add(server.response(rid)["result"]["structuredContent"]["session"])
        assert len(seen) == 1 and next(iter(seen)).startswith(f"proc-{server.proc.pid}-"), seen
    finally:
        server.kill()

    def cli(*args: str, stdin: str | None = None) -> list[dict]:
        out = subprocess.run(
            [str(BIN), "--plan", str(ws.plan), *args],
            cwd=ws.path, env=server_env(), input=stdin, capture_output=True, text=True, timeout=60,
        )
        assert out.returncode == 0, out.stderr
        return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]

    one = cli("call", "echo", '{"message": "session"}')[0]["output"]["session"]
    two = cli("call", "echo", '{"message": "session"}')[0]["output"]["session"]
    assert one != two, "two CLI processes are two sessions"
    line = json.dumps({"name": "echo", "input": {"message": "session"}})
    batch = {r["output"]["session"] for r in cli("batch", "-", stdin=f"{line}\n{line}\n")}
    assert len(batch) == 1, batch
