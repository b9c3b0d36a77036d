"""A session id reaches modules with every call (in the call request, no
ABI change): each MCP HTTP session is its own, one stdio client is one, and
one CLI process or batch is one."""

from __future__ import annotations

import json
import subprocess

import httpx2

from harness import BIN, RawServer, server_env
from test_http_abuse import auth, call, open_session, rpc_messages, start


def session_seen(response) -> str:
    for message in rpc_messages(response):
        if "structuredContent" in message.get("result", {}):
            return message["result"]["structuredContent"]["session"]
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


def structured(response) -> dict:
    for message in rpc_messages(response):
        if "result" in message:
            return message["result"]
    raise AssertionError(response.text)


def test_two_http_sessions_do_not_share_files_read_or_jobs(workspace):
    ws = workspace(
        '[host]\ncancel_grace_ms = 1500\n\n[[tools]]\nmodule = "filesystem"\n'
        '[tools.config]\nallowed_read_paths = ["."]\nallowed_write_paths = ["."]\n\n[[tools]]\nmodule = "bash"\n'
    )
    (ws.path / "notes.txt").write_text("A's notes\n")
    server = start(ws)
    try:
        with httpx2.Client(timeout=30) as client:
            a = open_session(client, server.url)
            b = open_session(client, server.url)
            assert not structured(call(client, server.url, a, "read_file", {"file_path": "notes.txt"}))["isError"]
            # B never read the file: it may not overwrite it on A's read.
            denied = structured(call(client, server.url, b, "write_file", {"file_path": "notes.txt", "content": "B was here\n"}))
            assert denied["isError"] and denied["_meta"]["toolhost"]["code"] == "read_before_write", denied
            assert (ws.path / "notes.txt").read_text() == "A's notes\n"
            ok = structured(call(client, server.url, a, "write_file", {"file_path": "notes.txt", "content": "A again\n"}))
            assert not ok["isError"], ok

            started = structured(call(client, server.url, a, "bash", {"command": "sleep 30", "run_in_background": True}))
            job = started["structuredContent"]["id"]
            # B can neither read nor kill A's job, nor see it listed.
            for tool in ("bash_output", "bash_kill"):
                refused = structured(call(client, server.url, b, tool, {"id": job}))
                assert refused["isError"], refused
                assert "sleep 30" not in json.dumps(refused), "another session's command leaked"
            mine = structured(call(client, server.url, a, "bash_output", {"id": job}))
            assert not mine["isError"], mine
            killed = structured(call(client, server.url, a, "bash_kill", {"id": job}))
            assert not killed["isError"], killed
    finally:
        server.stop()
