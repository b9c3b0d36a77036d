"""The real modules over MCP: filesystem's read_file and grep, and bash
(including a cancelled and an abandoned command: no process may survive).
Each test skips, saying why, when its module is not built."""

from __future__ import annotations

import random
import time

import anyio
import pytest

from harness import (
    RawServer,
    plan,
    processes_with,
    stdio_session,
    text_of,
    toolhost_meta,
    wait_until,
    wait_until_async,
)

pytestmark = pytest.mark.anyio


async def test_read_file_and_grep(workspace):
    ws = workspace(plan(["filesystem"]))
    (ws.path / "notes.txt").write_text("alpha\nbeta needle\ngamma\n")
    async with stdio_session(ws) as (session, _):
        names = {t.name for t in (await session.list_tools()).tools}
        assert {"read_file", "grep"} <= names
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert tools["read_file"].annotations.read_only_hint is True
        assert "file_path" in tools["read_file"].input_schema["properties"]

        read = await session.call_tool("read_file", {"file_path": "notes.txt"})
        assert not read.is_error, text_of(read)
        assert "beta needle" in text_of(read)

        found = await session.call_tool("grep", {"pattern": "needle", "output_mode": "content"})
        assert not found.is_error, text_of(found)
        assert "needle" in text_of(found)

        missing = await session.call_tool("read_file", {"file_path": "nope.txt"})
        assert missing.is_error
        assert "nope.txt" in text_of(missing)

        invalid = await session.call_tool("read_file", {"offset": 3})
        assert invalid.is_error
        assert toolhost_meta(invalid)["status"] == "validation_error"


async def test_bash_runs_a_command(workspace):
    ws = workspace(plan(["bash"]))
    async with stdio_session(ws) as (session, _):
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert "bash" in tools
        assert tools["bash"].annotations.destructive_hint is True
        result = await session.call_tool("bash", {"command": "echo hello-from-bash"})
        assert not result.is_error, text_of(result)
        assert "hello-from-bash" in text_of(result)


def _marker() -> str:
    return f"900.{random.randrange(10**6, 10**7)}"


async def test_cancelled_bash_leaves_no_process(workspace):
    ws = workspace(plan(["bash"]))
    marker = _marker()
    async with stdio_session(ws) as (session, _):
        with anyio.move_on_after(1.0):
            await session.call_tool("bash", {"command": f"sleep {marker}; echo done"})
        assert await wait_until_async(lambda: not processes_with(f"sleep {marker}"), timeout=8), (
            f"processes survived the cancel: {processes_with(f'sleep {marker}')}"
        )
        ok = await session.call_tool("bash", {"command": "echo still-serving"})
        assert "still-serving" in text_of(ok)


def test_bash_of_a_vanished_client_leaves_no_process(workspace):
    ws = workspace(plan(["bash"]))
    marker = _marker()
    server = RawServer(ws)
    try:
        server.initialize()
        server.request("tools/call", {"name": "bash", "arguments": {"command": f"sleep {marker}; echo done"}})
        assert wait_until(lambda: bool(processes_with(f"sleep {marker}")), timeout=5), "the command never started"
        started = time.monotonic()
        server.close_stdin()
        assert server.wait_exit(10) is not None, "the server outlived its client"
        assert time.monotonic() - started < 8
        assert wait_until(lambda: not processes_with(f"sleep {marker}"), timeout=5), (
            f"processes survived the client: {processes_with(f'sleep {marker}')}"
        )
    finally:
        server.kill()
