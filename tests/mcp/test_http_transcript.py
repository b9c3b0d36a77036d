"""One transcript of raw HTTP requests (successes, tool errors, invalid
params, an unknown tool, an oversize body, a wrong protocol version header,
a deleted session, an approval the client can and cannot be asked for, …)
goes to a server twice, in two folders: the JSON-RPC messages of every
answer, its HTTP status, and the audit records must be the same both times
(the server's answers depend on the request, not on timing), an approval
is asked for by elicitation, and calls whose client cancels them or hangs
up still end and are recorded."""

from __future__ import annotations

import contextlib
import json
import re
import threading
from pathlib import Path

import httpx2

from harness import HttpServer, Workspace, free_port, need_module, plan

TOKEN = "differential-token"
BASE = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
PLAN = plan(["fixture"], '[policy.tools.deadline]\ndecision = "ask"\n')

# Fields that differ between any two runs of the same call.
VOLATILE = {"duration_ms", "ts_unix_ms", "prev_sha256", "seq", "slept_ms", "start_us", "end_us"}


# Text that differs between any two runs: a large output's handle, its
# expiry, and call ids.
VOLATILE_TEXT = [
    (re.compile(r"toolhost://output/[0-9a-f]+"), "toolhost://output/ID"),
    (re.compile(r"kept until \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"), "kept until T"),
    (re.compile(r"output of call-\d+"), "output of call-N"),
    # Host-made call ids number calls as they reach the pipeline.
    (re.compile(r"^call-\d+$"), "call-N"),
]


def scrub(value):
    if isinstance(value, str):
        for pattern, replacement in VOLATILE_TEXT:
            value = pattern.sub(replacement, value)
        return value
    if isinstance(value, dict) and value.get("type") == "text" and isinstance(value.get("text"), str):
        try:
            inner = json.loads(value["text"])
        except ValueError:
            inner = None
        if isinstance(inner, dict):
            return {**scrub({k: v for k, v in value.items() if k != "text"}), "text": scrub(inner)}
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    return value


def messages(response: httpx2.Response) -> list[dict] | str:
    """The JSON-RPC messages of an answer, whatever its framing; plain text
    refusals as their text."""
    kind = response.headers.get("content-type", "")
    if kind.startswith("application/json"):
        return [scrub(json.loads(response.text))]
    if kind.startswith("text/event-stream"):
        found = []
        for event in response.text.replace("\r\n", "\n").split("\n\n"):
            data = "\n".join(line[5:].lstrip() for line in event.split("\n") if line.startswith("data:"))
            if data.strip():
                found.append(scrub(json.loads(data)))
        return found
    return response.text


class Peer:
    """A raw streamable-HTTP client that records what it was answered."""

    def __init__(self, url: str):
        self.url = url
        self.client = httpx2.Client(timeout=30)
        self.answers: list[tuple[str, int, object]] = []
        self.kinds: dict[str, str] = {}

    def post(self, step: str, body, session: str | None = None, version: str | None = "2025-06-18", **headers):
        h = {**BASE, "Authorization": f"Bearer {TOKEN}", **headers}
        if session:
            h["mcp-session-id"] = session
        if version:
            h["mcp-protocol-version"] = version
        content = body if isinstance(body, (bytes, str)) else json.dumps(body)
        # A connection of its own: the server may close one whose body a
        # refusal left unread, and a reused one would then fail at random.
        h["Connection"] = "close"
        response = self.client.post(self.url, content=content, headers=h)
        self.answers.append((step, response.status_code, messages(response)))
        self.kinds[step] = response.headers.get("content-type", "")
        return response

    def initialize(self, step: str, capabilities: dict | None = None) -> str:
        body = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": capabilities or {},
                "clientInfo": {"name": "differential", "version": "0"},
            },
        }
        response = self.post(step, body, version=None)
        assert response.status_code == 200, response.text
        session = response.headers["mcp-session-id"]
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert self.post(f"{step}: initialized", note, session).status_code == 202
        return session


def call(rid, name, arguments=None, meta=None):
    params = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments
    if meta is not None:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


def transcript(peer: Peer) -> None:
    s = peer.initialize("initialize")
    peer.post("echo", call(1, "echo", {"message": "hello"}), s)
    peer.post("echo, string id", call("a-b", "echo", {"message": "string id"}), s)
    peer.post("echo, id 0 and no version header", call(0, "echo", {"message": "v"}), s, version=None)
    peer.post("echo, 2025-03-26 header", call(2, "echo", {"message": "old"}), s, version="2025-03-26")
    peer.post("echo with request context", call(3, "echo", {"message": "ctx"}, {"run_id": "r-1", "toolhost/agent": "a"}), s)
    peer.post("bad request context", call(4, "echo", {"message": "ctx"}, {"run_id": ""}), s)
    peer.post("tool error: schema violation", call(5, "echo", {}), s)
    peer.post("tool error: wrong type", call(6, "echo", {"message": 7}), s)
    peer.post("tool error: unknown field", call(7, "echo", {"message": "m", "extra": 1}), s)
    peer.post("tool error: panic", call(8, "panic", {"message": "boom"}), s)
    peer.post("tool error: broken output schema", call(9, "shape", {"valid": False}), s)
    peer.post("large output, truncated", call(10, "huge", {"bytes": 300_000}), s)
    peer.post("unknown tool", call(11, "no_such_tool", {}), s)
    peer.post("no arguments", call(12, "echo"), s)
    peer.post("invalid params: no name", {"jsonrpc": "2.0", "id": 13, "method": "tools/call", "params": {"arguments": {}}}, s)
    peer.post("invalid params: not an object", {"jsonrpc": "2.0", "id": 14, "method": "tools/call", "params": 7}, s)
    peer.post("invalid params: arguments not an object", call(15, "echo", [1, 2]), s)
    peer.post("not JSON", b"{not json", s)
    peer.post("JSON-RPC 1.0", {"jsonrpc": "1.0", "id": 16, "method": "tools/call", "params": {"name": "echo"}}, s)
    peer.post("a batch", [call(17, "echo", {"message": "batched"})], s)
    peer.post("unknown method", {"jsonrpc": "2.0", "id": 18, "method": "tools/nope", "params": {}}, s)
    peer.post("oversize body", json.dumps(call(19, "echo", {"message": "x" * (5 << 20)})), s)
    peer.post("wrong protocol version header", call(20, "echo", {"message": "v"}), s, version="1999-01-01")
    peer.post("unknown session", call(21, "echo", {"message": "who"}), "no-such-session")
    peer.post("Accept without SSE", call(22, "echo", {"message": "a"}), s, Accept="application/json")
    peer.post("text content type", call(23, "echo", {"message": "t"}), s, **{"Content-Type": "text/plain"})
    peer.post("foreign Origin", call(24, "echo", {"message": "o"}), s, Origin="http://evil.example")
    peer.post("progress token", call(25, "sleep", {"ms": 1}, {"progressToken": "p"}), s)
    peer.post("idempotent write, first", call(26, "write_key", {"key": "k", "ms": 1}, {"idempotency_key": "i-1"}), s)
    peer.post("idempotent write, replayed", call(27, "write_key", {"key": "k", "ms": 1}, {"idempotency_key": "i-1"}), s)
    peer.post("ask, client cannot be asked", call(33, "deadline", {}), s)
    peer.post("tools/list", {"jsonrpc": "2.0", "id": 28, "method": "tools/list"}, s)
    peer.post("ping", {"jsonrpc": "2.0", "id": 29, "method": "ping"}, s)
    peer.post("cancel of an unknown request", {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 999}}, s)
    deleted = peer.client.delete(peer.url, headers={"Authorization": f"Bearer {TOKEN}", "mcp-session-id": s})
    peer.answers.append(("DELETE", deleted.status_code, deleted.text))
    peer.post("call in a deleted session", call(30, "echo", {"message": "gone"}), s)

    # A client that declared elicitation is asked before deadline runs:
    # such calls keep rmcp's stream on both servers. It declines.
    e = peer.initialize("initialize, with elicitation", {"elicitation": {}})
    peer.answers.append(("elicited call", *elicited_call(peer, e)))
    peer.post("echo in the elicitation session", call(32, "echo", {"message": "still fast"}), e)


def elicited_call(peer: Peer, session: str) -> tuple[int, list]:
    """Calls deadline, answers the approval question with "decline", and
    returns the status and the messages of the call's stream."""
    h = {**BASE, "Authorization": f"Bearer {TOKEN}", "mcp-session-id": session, "mcp-protocol-version": "2025-06-18"}
    seen: list[dict] = []
    with httpx2.Client(timeout=30) as client:
        with client.stream("POST", peer.url, content=json.dumps(call(31, "deadline", {})), headers=h) as r:
            status = r.status_code
            data: list[str] = []
            for line in r.iter_lines():
                if line.startswith("data:"):
                    data.append(line[5:].lstrip())
                    continue
                if line or not "".join(data).strip():
                    data = [] if not line else data
                    continue
                message = json.loads("\n".join(data))
                data = []
                seen.append(message)
                if message.get("method") == "elicitation/create":
                    answer = {"jsonrpc": "2.0", "id": message["id"], "result": {"action": "decline"}}
                    threading.Thread(
                        target=lambda: peer.client.post(peer.url, content=json.dumps(answer), headers=h), daemon=True
                    ).start()
                if message.get("id") == 31:
                    break
    # The elicitation's message and request id are the server's own.
    return status, [scrub({k: v for k, v in m.items() if k != "id"} if "method" in m else m) for m in seen]


def run(tmp_path: Path, name: str) -> tuple[Peer, list[dict]]:
    folder = tmp_path / name
    folder.mkdir()
    ws = Workspace(folder, PLAN)
    server = HttpServer(ws, f"127.0.0.1:{free_port()}", token=TOKEN)
    try:
        assert server.url, server.stderr()
        peer = Peer(server.url)
        transcript(peer)
        peer.client.close()
    finally:
        server.stop()
    # The genesis (host, pid, start) differs per run: compared by where it stands.
    records = [
        scrub({k: (True if k == "genesis" else v) for k, v in r.items() if k != "call_id"}) for r in ws.audit_records()
    ]
    return peer, records


def test_the_transcript_is_answered_alike_twice(tmp_path):
    need_module("fixture")
    first, first_audit = run(tmp_path, "first")
    second, second_audit = run(tmp_path, "second")
    assert len(first.answers) == len(second.answers)
    for (step, status, answer), (_, status_again, answer_again) in zip(first.answers, second.answers):
        assert (step, status, answer) == (step, status_again, answer_again)
    assert first_audit == second_audit
    assert any(r.get("status") == "approval_required" for r in first_audit)
    elicited = dict((s, a) for s, _, a in first.answers)["elicited call"]
    assert any(m.get("method") == "elicitation/create" for m in elicited), elicited


def test_calls_keep_their_session_alive_and_idle_ones_expire(workspace):
    """A session busy with calls stays (calls are activity), and expires
    once they stop."""
    import time

    from harness import wait_until
    from test_http_abuse import call, open_session, rpc_messages, start

    ws = workspace()
    server = start(ws, "--session-idle-secs", "2")
    try:
        with httpx2.Client(timeout=10) as client:
            sid = open_session(client, server.url)
            end = time.monotonic() + 5  # two and a half idle periods of calls
            rid = 10
            while time.monotonic() < end:
                rid += 1
                answer = call(client, server.url, sid, "echo", {"message": "busy"}, rid=rid)
                assert answer.status_code == 200, (rid, answer.status_code, answer.text)
                assert rpc_messages(answer)[0]["result"]["structuredContent"]["message"] == "busy"

            def expired() -> bool:
                return call(client, server.url, sid, "echo", {"message": "late"}, rid=rid + 1).status_code == 404

            # Each probe is itself activity: probe only after an idle period.
            assert wait_until(lambda: time.sleep(2.5) or expired(), timeout=15)
    finally:
        server.stop()


@contextlib.contextmanager
def write_key_session(tmp_path: Path, name: str):
    """A server in its own folder and an initialized session on it; the
    records helper reads write_key's audit records, all or of one phase."""
    folder = tmp_path / name
    folder.mkdir()
    ws = Workspace(folder, plan(["fixture"]))
    server = HttpServer(ws, f"127.0.0.1:{free_port()}", token=TOKEN)
    try:
        assert server.url, server.stderr()
        peer = Peer(server.url)
        session = peer.initialize("initialize")

        def records(phase=None):
            return [r["status"] for r in ws.audit_records() if r.get("tool") == "write_key" and r.get("phase") == phase]

        yield ws, server, peer, session, records
    finally:
        server.stop()


def cancelled_call(tmp_path: Path, name: str) -> tuple[int, list, list[str], str]:
    """A write_key call cancelled by its client once its intent is on
    record: the POST's status and messages, the call's records, and how the
    answer was framed."""
    from harness import wait_until

    with write_key_session(tmp_path, name) as (ws, server, peer, s, records):
        answer = {}
        running = threading.Thread(
            target=lambda: answer.setdefault("r", peer.post("call", call(5, "write_key", {"key": "k", "ms": 60_000}), s)),
            daemon=True,
        )
        running.start()

        assert wait_until(lambda: records("intent"), timeout=10), ws.audit_records()
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5, "reason": "enough"}}
        assert peer.post("cancel", cancel, s).status_code == 202
        assert wait_until(lambda: records() == ["cancelled"], timeout=10), ws.audit_records()
        running.join(timeout=10)
        assert not running.is_alive(), "the cancelled call's POST was never answered"
        # The session lives on.
        assert peer.post("after", call(6, "echo", {"message": "after"}), s).status_code == 200
        response = answer["r"]
        return response.status_code, messages(response), records(), response.headers.get("content-type", "")


def test_a_call_its_client_cancels_is_recorded_and_not_answered(tmp_path):
    need_module("fixture")
    # No message for a request its client cancelled.
    assert cancelled_call(tmp_path, "cancelled")[:3] == (200, [], ["cancelled"])


def abandoned_call(tmp_path: Path, name: str) -> list[str]:
    """The records of a write_key call whose client hung up mid-call (its
    session still open)."""
    import socket
    from urllib.parse import urlparse

    from harness import wait_until

    with write_key_session(tmp_path, name) as (ws, server, peer, s, records):
        url = urlparse(server.url)
        body = json.dumps(call(5, "write_key", {"key": "k", "ms": 1500}))
        head = (
            f"POST {url.path} HTTP/1.1\r\nHost: {url.netloc}\r\nAuthorization: Bearer {TOKEN}\r\n"
            f"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            f"mcp-session-id: {s}\r\nmcp-protocol-version: 2025-06-18\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        with socket.create_connection((url.hostname, url.port)) as raw:
            raw.sendall(head.encode() + body.encode())
            assert wait_until(lambda: records("intent"), timeout=10), ws.audit_records()
        # The client is gone; the call runs to its end and is recorded.
        assert wait_until(lambda: records(), timeout=15), ws.audit_records()
        return records()


def test_a_call_whose_client_hangs_up_still_ends_and_is_recorded(tmp_path):
    need_module("fixture")
    assert abandoned_call(tmp_path, "abandoned") == ["success"]
