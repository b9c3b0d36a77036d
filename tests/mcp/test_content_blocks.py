"""Content blocks reach MCP clients (#18 item 3): read_file on an image
answers with MCP image content (`type: image`, `mimeType`, base64 `data`),
through the official Python SDK over stdio. The PNG is generated here."""

from __future__ import annotations

import base64
import struct
import zlib

import pytest

from harness import plan, stdio_session, text_of

pytestmark = pytest.mark.anyio


def png(width: int, height: int) -> bytes:
    """A valid RGB PNG with a gradient, written with zlib (no image library)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    rows = b"".join(
        b"\x00" + b"".join(bytes((x * 4 % 256, y * 5 % 256, (x + y) % 256)) for x in range(width))
        for y in range(height)
    )
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


async def test_read_file_on_a_png_answers_mcp_image_content(workspace):
    ws = workspace(plan(["filesystem"]))
    picture = png(64, 48)
    (ws.path / "picture.png").write_bytes(picture)
    async with stdio_session(ws) as (session, _):
        result = await session.call_tool("read_file", {"file_path": "picture.png"})
        assert not result.is_error, text_of(result)
        images = [block for block in result.content if block.type == "image"]
        assert len(images) == 1, result.content
        assert images[0].mime_type == "image/png"
        # Small enough to be sent as it is: the very bytes of the file.
        assert base64.b64decode(images[0].data) == picture

        # A text file still answers text only.
        (ws.path / "notes.txt").write_text("plain\n")
        text = await session.call_tool("read_file", {"file_path": "notes.txt"})
        assert not text.is_error
        assert all(block.type == "text" for block in text.content), text.content
