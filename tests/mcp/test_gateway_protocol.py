"""Mounted servers are spoken to in the newest revision they support: the
npm "everything" server (TypeScript SDK, newest 2025-11-25) and a Python
SDK server that speaks 2026-07-28, each mounted under a real toolhost.
`toolhost check` names the revision negotiated; calls through the 2026
connection answer their blocks unchanged; a 2026 request for input
(`input_required`) ends the call `input_declined`, saying what was asked."""

from __future__ import annotations

import base64
import subprocess
import sys
from pathlib import Path

import pytest

from harness import BIN, stdio_session, server_env, toolhost_meta
from test_gateway_content import node_server

pytestmark = pytest.mark.anyio

PEER = Path(__file__).resolve().parent / "peers" / "modern_server.py"


def modern_plan() -> str:
    return (
        '[host]\ndefault_timeout_secs = 60\naudit_log = "audit.jsonl"\n\n'
        f'[[tools]]\nprefix = "py__"\n[tools.mcp]\ncommand = ["{sys.executable}", "{PEER}"]\n'
    )


def negotiated(ws) -> str:
    """The revision `toolhost check` reports for the plan's one server."""
    out = subprocess.run(
        [str(BIN), "--plan", str(ws.plan), "check"],
        cwd=ws.path,
        env=server_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    lines = [line.split("protocol:", 1)[1].strip() for line in out.stdout.splitlines() if "protocol:" in line]
    assert len(lines) == 1, out.stdout
    return lines[0]


def test_a_2025_server_is_spoken_to_in_2025_11_25(workspace):
    ws = workspace(
        '[[tools]]\nprefix = "ev__"\n[tools.mcp]\n'
        f'command = ["{node_server("mcp-server-everything")}"]\n'
    )
    assert negotiated(ws) == "2025-11-25"


def test_a_2026_server_is_spoken_to_in_2026_07_28(workspace):
    ws = workspace(modern_plan())
    assert negotiated(ws) == "2026-07-28"


async def test_blocks_cross_a_2026_connection_unchanged(workspace):
    sys.path.insert(0, str(PEER.parent))
    import modern_server

    ws = workspace(modern_plan())
    async with stdio_session(ws) as (session, _):
        result = await session.call_tool("py__media", {})
        assert not result.is_error, result
        assert [block.type for block in result.content] == ["text", "image", "audio"], result.content
        assert result.content[0].text == "a picture and a sound"
        assert result.content[1].mime_type == "image/png"
        assert base64.b64decode(result.content[1].data) == modern_server.PNG
        assert result.content[2].mime_type == "audio/wav"
        assert base64.b64decode(result.content[2].data) == modern_server.WAV


async def test_a_2026_request_for_input_is_declined_saying_what_was_asked(workspace):
    ws = workspace(modern_plan())
    async with stdio_session(ws) as (session, _):
        result = await session.call_tool("py__ask", {})
        assert result.is_error, result
        meta = toolhost_meta(result)
        assert meta["code"] == "input_declined", meta
        assert meta["details"]["input_requests"] == [
            {"key": "name", "method": "elicitation/create", "message": "What is your name?"}
        ], meta
        assert "declined" in result.content[0].text


async def test_a_failure_keeps_its_structured_content(workspace):
    ws = workspace(modern_plan())
    async with stdio_session(ws) as (session, _):
        result = await session.call_tool("py__refuse", {})
    assert result.is_error, result
    assert [(block.type, block.text) for block in result.content] == [("text", "refused: the quota is spent")]
    assert result.structured_content == {"reason": "quota", "retry_after_s": 30}
    assert toolhost_meta(result)["code"] == "tool_error"


LENIENT = Path(__file__).resolve().parent / "peers" / "lenient_server.py"


async def test_a_stdio_server_answering_discover_with_an_empty_result_is_started_again_with_initialize(workspace):
    ws = workspace(
        '[host]\ndefault_timeout_secs = 60\naudit_log = "audit.jsonl"\n\n'
        f'[[tools]]\nprefix = "le__"\n[tools.mcp]\ncommand = ["{sys.executable}", "{LENIENT}"]\n'
    )
    assert negotiated(ws) == "2025-06-18"
    async with stdio_session(ws) as (session, _):
        result = await session.call_tool("le__hello", {})
        assert not result.is_error, result
        assert result.content[0].text == "hello from a lenient server", result
