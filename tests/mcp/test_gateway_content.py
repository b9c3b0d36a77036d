"""What a mounted MCP server answers reaches the caller unchanged: the npm
"everything" server and the reference filesystem server, mounted as
`[tools.mcp]` sources under a real `toolhost serve`, called by the official
Python SDK. An image arrives as an image with the server's very bytes, a
resource_link as a resource_link, an embedded resource as a resource,
`read_text_file`'s text as text, structuredContent as the server sent it,
and a failure still marked isError."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from harness import ROOT, stdio_session, text_of, toolhost_meta

pytestmark = pytest.mark.anyio

NODE_BIN = ROOT / "tests" / "node" / "node_modules" / ".bin"
EVERYTHING_DIST = ROOT / "tests" / "node" / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist"


def node_server(name: str) -> Path:
    """A pinned npm server's command; the test fails (never skips) without it."""
    path = NODE_BIN / name
    if not path.exists():
        pytest.fail(f"{path} is missing: run `npm ci --prefix tests/node --no-audit --no-fund`")
    return path


def gateway_plan(files: Path) -> str:
    return (
        '[host]\ndefault_timeout_secs = 60\naudit_log = "audit.jsonl"\n\n'
        f'[[tools]]\nprefix = "ev__"\n[tools.mcp]\ncommand = ["{node_server("mcp-server-everything")}"]\n\n'
        f'[[tools]]\nprefix = "fs__"\n[tools.mcp]\ncommand = ["{node_server("mcp-server-filesystem")}", "{files}"]\n'
    )


def tiny_image() -> str:
    """The base64 PNG the everything server's get-tiny-image answers, read
    from its own source so the test compares the server's very bytes."""
    source = (EVERYTHING_DIST / "tools" / "get-tiny-image.js").read_text()
    start = source.index('MCP_TINY_IMAGE = "') + len('MCP_TINY_IMAGE = "')
    return source[start : source.index('"', start)]


@pytest.fixture
def gateway(workspace, tmp_path):
    files = tmp_path / "files"
    files.mkdir()
    (files / "notes.txt").write_text("hello from the filesystem server\nsecond line\n")
    return workspace(gateway_plan(files.resolve())), files.resolve()


async def test_an_image_arrives_as_an_image_with_the_same_bytes(gateway):
    ws, _ = gateway
    async with stdio_session(ws) as (session, _):
        result = await session.call_tool("ev__get-tiny-image", {})
        assert not result.is_error, text_of(result)
        kinds = [block.type for block in result.content]
        assert kinds == ["text", "image", "text"], result.content
        image = result.content[1]
        assert image.mime_type == "image/png"
        assert base64.b64decode(image.data) == base64.b64decode(tiny_image())
        assert result.content[0].text == "Here's the image you requested:"
        assert result.content[2].text == "The image above is the MCP logo."


async def test_resource_links_arrive_as_resource_links(gateway):
    ws, _ = gateway
    async with stdio_session(ws) as (session, _):
        result = await session.call_tool("ev__get-resource-links", {"count": 2})
        assert not result.is_error, text_of(result)
        assert [block.type for block in result.content] == ["text", "resource_link", "resource_link"], result.content
        links = result.content[1:]
        assert [str(link.uri) for link in links] == [
            "demo://resource/dynamic/blob/1",
            "demo://resource/dynamic/text/2",
        ], links
        assert links[0].name == "Blob Resource 1"
        assert links[1].mime_type == "text/plain"
        assert links[1].description == "Resource 2: plaintext resource"


async def test_an_embedded_resource_arrives_as_a_resource(gateway):
    ws, _ = gateway
    async with stdio_session(ws) as (session, _):
        result = await session.call_tool("ev__get-resource-reference", {"resourceType": "Text", "resourceId": 2})
        assert not result.is_error, text_of(result)
        embedded = [block for block in result.content if block.type == "resource"]
        assert len(embedded) == 1, result.content
        assert str(embedded[0].resource.uri) == "demo://resource/dynamic/text/2"
        assert embedded[0].resource.text, embedded[0]


async def test_structured_content_arrives_as_the_server_sent_it(gateway):
    ws, _ = gateway
    async with stdio_session(ws) as (session, _):
        result = await session.call_tool("ev__get-structured-content", {"location": "New York"})
        assert not result.is_error, text_of(result)
        assert result.structured_content == {"temperature": 33, "conditions": "Cloudy", "humidity": 82}
        # The text block stays the server's own (compact JSON), not a
        # pretty-printed copy of the structured content.
        assert [block.type for block in result.content] == ["text"]
        assert result.content[0].text == '{"temperature":33,"conditions":"Cloudy","humidity":82}'


async def test_read_text_file_answers_the_files_text(gateway):
    ws, files = gateway
    async with stdio_session(ws) as (session, _):
        result = await session.call_tool("fs__read_text_file", {"path": str(files / "notes.txt")})
        assert not result.is_error, text_of(result)
        assert [block.type for block in result.content] == ["text"], result.content
        assert result.content[0].text == "hello from the filesystem server\nsecond line\n"
        assert result.structured_content == {"content": "hello from the filesystem server\nsecond line\n"}


async def test_a_failure_stays_is_error_with_the_servers_message(gateway):
    ws, files = gateway
    async with stdio_session(ws) as (session, _):
        result = await session.call_tool("fs__read_text_file", {"path": str(files / "missing.txt")})
        assert result.is_error, result
        assert [block.type for block in result.content] == ["text"], result.content
        assert "missing.txt" in result.content[0].text
        assert "ENOENT" in result.content[0].text or "no such file" in result.content[0].text.lower()
        meta = toolhost_meta(result)
        assert meta["status"] == "error" and meta["code"] == "tool_error", meta


async def test_a_text_block_over_the_output_limit_keeps_head_and_tail_and_says_so(gateway):
    ws, files = gateway
    big = "HEAD\n" + "x" * 99 + "\n"
    (files / "big.txt").write_text(big + "line\n" * 60_000 + "TAIL\n")
    async with stdio_session(ws) as (session, _):
        result = await session.call_tool("fs__read_text_file", {"path": str(files / "big.txt")})
        assert not result.is_error, result
        text = result.content[0].text
        assert text.startswith("HEAD\n") and text.endswith("TAIL\n"), text[:100]
        assert "bytes cut from the middle" in text
        assert len(text) < 110_000, len(text)
        # The structured copy is over the limit too: the bounded output
        # stands in for it, never the whole file.
        assert len(json.dumps(result.structured_content)) < 110_000
        truncated = toolhost_meta(result)["truncated"]
        assert truncated["original_bytes"] > truncated["kept_bytes"], truncated
