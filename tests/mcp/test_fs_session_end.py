"""A session's end clears the filesystem module's records of it: the files
it read (read-before-write) and its undo history, while another session's
stay. Two HTTP sessions against the real server and the real filesystem
module; one is DELETEd. The module reports what it dropped (a debug line),
and the live session still undoes its write and writes a file it read
before, without reading it again. Readiness is that report, never a sleep."""

from __future__ import annotations

import re

import httpx2

from harness import wait_until
from test_http_abuse import auth, call, open_session, rpc_messages, start

PLAN = '[[tools]]\nmodule = "filesystem"\n'


def result_of(response) -> dict:
    for message in rpc_messages(response):
        if "result" in message:
            return message["result"]
    raise AssertionError(response.text)


def ok(response) -> dict:
    result = result_of(response)
    assert not result["isError"], result
    return result


def dropped(server, sid: str):
    """(files it read, undo entries) the module forgot when `sid` ended."""
    match = re.search(
        rf"session http-{re.escape(sid)} ended: forgot (\d+) file\(s\) it read and (\d+) undo",
        server.stderr(),
    )
    return (int(match.group(1)), int(match.group(2))) if match else None


def delete(client: httpx2.Client, url: str, sid: str) -> None:
    response = client.delete(url, headers={**auth(), "mcp-session-id": sid, "mcp-protocol-version": "2025-06-18"})
    assert response.status_code in (200, 202, 204), (response.status_code, response.text)


def test_a_session_end_clears_its_reads_and_undo_history_and_only_its(workspace, monkeypatch):
    # The module's report is a debug line.
    monkeypatch.setenv("RUST_LOG", "info,toolhost::module=debug")
    ws = workspace(PLAN)
    for name, text in [("a.txt", "A1\n"), ("b.txt", "B1\n"), ("c.txt", "C1\n"), ("a2.txt", "A\n")]:
        (ws.path / name).write_text(text)
    server = start(ws)
    try:
        with httpx2.Client(timeout=30) as client:
            a = open_session(client, server.url)
            b = open_session(client, server.url)
            # A: reads two files and replaces one (one undo entry).
            ok(call(client, server.url, a, "read_file", {"file_path": "a.txt"}, rid=3))
            ok(call(client, server.url, a, "read_file", {"file_path": "a2.txt"}, rid=4))
            ok(call(client, server.url, a, "write_file", {"file_path": "a.txt", "content": "A2\n"}, rid=5))
            # B: reads b and c, replaces b.
            ok(call(client, server.url, b, "read_file", {"file_path": "b.txt"}, rid=3))
            ok(call(client, server.url, b, "read_file", {"file_path": "c.txt"}, rid=4))
            ok(call(client, server.url, b, "write_file", {"file_path": "b.txt", "content": "B2\n"}, rid=5))

            delete(client, server.url, a)
            assert wait_until(lambda: dropped(server, a) is not None, 15), server.stderr()
            # A's records: a.txt and a2.txt read, one write undoable.
            assert dropped(server, a) == (2, 1), server.stderr()
            assert dropped(server, b) is None, "B's records went with A's session"

            # B's undo history is intact: its write is undone.
            ok(call(client, server.url, b, "undo_edit", {"file_path": "b.txt"}, rid=6))
            assert (ws.path / "b.txt").read_text() == "B1\n"
            # B's read records are intact: c.txt is written without a new read.
            ok(call(client, server.url, b, "write_file", {"file_path": "c.txt", "content": "C2\n"}, rid=7))
            assert (ws.path / "c.txt").read_text() == "C2\n"

            delete(client, server.url, b)
            assert wait_until(lambda: dropped(server, b) is not None, 15), server.stderr()
            # b.txt and c.txt read (rewrites keep them read); c's write is
            # undoable, b's was undone.
            assert dropped(server, b) == (2, 1), server.stderr()
    finally:
        server.stop()
