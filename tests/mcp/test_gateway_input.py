"""A mounted server's request for input reaches the caller who can answer
it: the npm "everything" server's elicitation (MCP 2025-11-25) and a
Python SDK server's `input_required` result (MCP 2026-07-28), mounted under
a real `toolhost serve` and called by the official Python SDK. A client
with an elicitation callback is asked and its answer reaches the server; a
client without the capability, or a plan that says `elicitation =
"decline"`, gets the request declined, with the reason returned or logged."""

from __future__ import annotations

import sys

import mcp.types as types
import pytest

from harness import stdio_session, text_of, toolhost_meta
from test_gateway_content import node_server
from test_gateway_protocol import PEER

pytestmark = pytest.mark.anyio


def input_plan(extra: str = "") -> str:
    return (
        '[host]\ndefault_timeout_secs = 60\naudit_log = "audit.jsonl"\n\n'
        f'[[tools]]\nprefix = "ev__"\n[tools.mcp]\ncommand = ["{node_server("mcp-server-everything")}"]\n{extra}\n'
        f'[[tools]]\nprefix = "py__"\n[tools.mcp]\ncommand = ["{sys.executable}", "{PEER}"]\n{extra}\n'
    )


class Answerer:
    """An elicitation callback that records each question and accepts."""

    def __init__(self, content: dict):
        self.asked: list[str] = []
        self.content = content

    async def __call__(self, context, params):
        self.asked.append(params.message)
        return types.ElicitResult(action="accept", content=self.content)


async def test_an_elicitation_reaches_a_client_that_can_answer(workspace):
    ws = workspace(input_plan())
    answerer = Answerer({"name": "Ada Lovelace"})
    async with stdio_session(ws, elicitation_callback=answerer) as (session, _):
        result = await session.call_tool("ev__trigger-elicitation-request", {})
    assert answerer.asked == ["Please provide inputs for the following fields:"], answerer.asked
    assert not result.is_error, text_of(result)
    assert "User provided the requested information" in text_of(result)
    assert "- Name: Ada Lovelace" in text_of(result)


async def test_an_input_required_result_is_answered_by_the_client(workspace):
    ws = workspace(input_plan())
    answerer = Answerer({"name": "Ada"})
    async with stdio_session(ws, elicitation_callback=answerer) as (session, _):
        result = await session.call_tool("py__ask", {})
    assert answerer.asked == ["What is your name?"], answerer.asked
    assert not result.is_error, result
    assert text_of(result) == "thanks"


async def test_without_the_capability_requests_are_declined_saying_why(workspace):
    ws = workspace(input_plan())
    async with stdio_session(ws) as (session, _):
        modern = await session.call_tool("py__ask", {})
        legacy = await session.call_tool("ev__trigger-elicitation-request", {})
    assert modern.is_error, modern
    meta = toolhost_meta(modern)
    assert meta["code"] == "input_declined", meta
    assert "did not declare the elicitation capability" in meta["details"]["declined"], meta
    # The legacy server hears `decline`; the reason is in the host's log.
    assert "User declined to provide the requested information" in text_of(legacy), text_of(legacy)
    log = (ws.path / "server.log").read_text()
    assert "declined the MCP server's request for input" in log
    assert "did not declare the elicitation capability" in log


async def test_a_plan_that_declines_asks_nobody(workspace):
    ws = workspace(input_plan('elicitation = "decline"\n'))
    answerer = Answerer({"name": "Ada"})
    async with stdio_session(ws, elicitation_callback=answerer) as (session, _):
        modern = await session.call_tool("py__ask", {})
        tools = [tool.name for tool in (await session.list_tools()).tools]
    assert answerer.asked == []
    assert modern.is_error, modern
    assert 'elicitation = "decline"' in toolhost_meta(modern)["details"]["declined"]
    # Declining, the host does not declare elicitation, so the everything
    # server does not even offer its elicitation tool.
    assert "ev__trigger-elicitation-request" not in tools
    assert "ev__get-tiny-image" in tools
