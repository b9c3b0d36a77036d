"""`toolhost serve` on stdio, driven by the official MCP Python SDK, on the
fixture module: the handshake, the tool list, calls, errors, progress,
cancellation, disconnects and approvals."""

from __future__ import annotations

import json
import time

import anyio
import pytest

import mcp.types as types
from harness import (
    RawServer,
    plan,
    stdio_session,
    text_of,
    toolhost_meta,
    toolhost_version,
    wait_until_async,
)

pytestmark = pytest.mark.anyio


async def test_initialize_names_the_server_and_its_version(workspace):
    ws = workspace()
    async with stdio_session(ws) as (_, init):
        assert init.server_info.name == "toolhost"
        assert init.server_info.version == toolhost_version()
        assert init.capabilities.tools is not None


async def test_tools_list_carries_schemas_and_annotations(workspace):
    ws = workspace()
    async with stdio_session(ws) as (session, _):
        tools = {t.name: t for t in (await session.list_tools()).tools}
    assert {"echo", "sleep", "write_key", "shape"} <= set(tools)

    echo = tools["echo"]
    assert echo.description.startswith("Returns the message")
    assert echo.input_schema["type"] == "object"
    assert "message" in echo.input_schema["properties"]
    assert "message" in echo.input_schema.get("required", [])
    # compute: read-only, idempotent, closed world, not destructive
    a = echo.annotations
    assert (a.read_only_hint, a.destructive_hint, a.idempotent_hint, a.open_world_hint) == (
        True,
        False,
        True,
        False,
    )
    # internal_mutation: writes, destructive, not idempotent
    w = tools["write_key"].annotations
    assert (w.read_only_hint, w.destructive_hint, w.idempotent_hint, w.open_world_hint) == (
        False,
        True,
        False,
        False,
    )
    # an output schema is listed where the tool gives one
    assert tools["shape"].output_schema["required"] == ["ok"]
    assert echo.output_schema is None


async def test_call_returns_text_and_structured_content(workspace):
    ws = workspace()
    async with stdio_session(ws) as (session, _):
        result = await session.call_tool("echo", {"message": "hi", "data": [1, 2]})
        assert not result.is_error
        assert result.structured_content == {"message": "hi", "data": [1, 2]}
        assert json.loads(text_of(result)) == {"message": "hi", "data": [1, 2]}
        assert toolhost_meta(result)["status"] == "success"

        # A string output is text only.
        huge = await session.call_tool("huge", {"bytes": 100})
        assert not huge.is_error
        assert huge.structured_content is None
        assert len(text_of(huge)) == 100

        # The output schema is kept, and checked by the client too.
        shaped = await session.call_tool("shape", {"valid": True})
        assert shaped.structured_content == {"ok": True}


async def test_validation_error_is_a_tool_error_with_its_message(workspace):
    ws = workspace()
    async with stdio_session(ws) as (session, _):
        result = await session.call_tool("echo", {"data": 1})
        assert result.is_error
        assert toolhost_meta(result)["status"] == "validation_error"
        assert "message" in text_of(result)

        unknown = await session.call_tool("ecoh", {"message": "x"})
        assert unknown.is_error
        assert "echo" in text_of(unknown), "the closest name is suggested"

        panicked = await session.call_tool("panic", {"message": "boom"})
        assert panicked.is_error
        assert toolhost_meta(panicked)["code"] == "panicked"

        broken = await session.call_tool("shape", {"valid": False})
        assert broken.is_error

        # The server is still fine.
        ok = await session.call_tool("echo", {"message": "still here"})
        assert not ok.is_error


async def test_progress_becomes_notifications(workspace):
    ws = workspace()
    seen: list[tuple[float, float | None]] = []

    async def on_progress(progress, total, message):
        seen.append((progress, total))

    async with stdio_session(ws) as (session, _):
        result = await session.call_tool("sleep", {"ms": 700}, progress_callback=on_progress)
        assert not result.is_error
    assert seen, "no progress notification arrived"
    assert all(total == 700 for _, total in seen)
    assert [p for p, _ in seen] == sorted(p for p, _ in seen)


async def test_cancelled_call_stops_the_tool(workspace):
    ws = workspace()
    async with stdio_session(ws) as (session, _):
        started = time.monotonic()
        with anyio.move_on_after(0.5) as scope:
            await session.call_tool("sleep", {"ms": 60_000})
        assert scope.cancelled_caught
        # The SDK sent notifications/cancelled; the tool stops promptly and
        # the server keeps serving.
        ok = await session.call_tool("echo", {"message": "after"})
        assert not ok.is_error
        assert await wait_until_async(
            lambda: any(r.get("tool") == "sleep" for r in ws.audit_records()), timeout=5
        ), "the cancelled call was never recorded"
        record = next(r for r in ws.audit_records() if r.get("tool") == "sleep")
        assert record["status"] == "cancelled"
        assert time.monotonic() - started < 10


async def test_approval_required_without_elicitation(workspace):
    ws = workspace(plan(["fixture"], '[policy.tools.echo]\ndecision = "ask"\n'))
    async with stdio_session(ws) as (session, _):
        result = await session.call_tool("echo", {"message": "hi"})
    assert result.is_error
    assert toolhost_meta(result)["status"] == "approval_required"
    assert "policy" in text_of(result), "the reason is given"


@pytest.mark.parametrize("answer", ["accept", "decline"])
async def test_approval_through_elicitation(workspace, answer):
    ws = workspace(plan(["fixture"], '[policy.tools.echo]\ndecision = "ask"\n'))
    asked: list[str] = []

    async def elicit(context, params):
        asked.append(params.message)
        if answer == "accept":
            return types.ElicitResult(action="accept", content={"approve": True})
        return types.ElicitResult(action="decline")

    async with stdio_session(ws, elicitation_callback=elicit) as (session, _):
        result = await session.call_tool("echo", {"message": "please"})
    assert len(asked) == 1 and "echo" in asked[0] and "please" in asked[0]
    if answer == "accept":
        assert not result.is_error, text_of(result)
        assert result.structured_content["message"] == "please"
    else:
        assert result.is_error
        assert toolhost_meta(result)["status"] in ("policy_denied", "approval_required")


def test_stdout_carries_only_protocol_messages(workspace):
    ws = workspace()
    server = RawServer(ws, env={"RUST_LOG": "debug"})
    try:
        init = server.initialize()
        assert init["result"]["serverInfo"]["name"] == "toolhost"
        rid = server.request("tools/call", {"name": "echo", "arguments": {"message": "x"}})
        assert server.response(rid)["result"]["structuredContent"]["message"] == "x"
        rid = server.request("tools/call", {"name": "echo", "arguments": {"nope": 1}})
        assert server.response(rid)["result"]["isError"] is True
        server.close_stdin()
        assert server.wait_exit(10) == 0
        assert server.proc.stdout is not None
        for line in server.proc.stdout.read().decode().splitlines():
            assert json.loads(line)["jsonrpc"] == "2.0"
        assert server.stderr(), "logs go to stderr"
    finally:
        server.kill()


def test_a_client_that_disconnects_mid_call_leaves_no_process(workspace):
    ws = workspace()
    server = RawServer(ws)
    try:
        server.initialize()
        server.request("tools/call", {"name": "sleep", "arguments": {"ms": 60_000}})
        # Readiness: a ping sent after the call is answered, so the server
        # has read the call and is running it.
        server.response(server.request("ping", {}))
        started = time.monotonic()
        server.close_stdin()
        assert server.wait_exit(10) is not None, "the server outlived its client"
        assert time.monotonic() - started < 5
        records = ws.audit_records()
        assert [r["status"] for r in records if r.get("tool") == "sleep"] == ["cancelled"]
    finally:
        server.kill()


def test_protocol_faults_are_protocol_errors(workspace):
    ws = workspace()
    server = RawServer(ws)
    try:
        server.initialize()
        rid = server.request("tools/call", {"arguments": {}})
        assert "error" in server.response(rid)
        rid = server.request("no/such/method", {})
        assert server.response(rid)["error"]["code"] == -32601
    finally:
        server.kill()
