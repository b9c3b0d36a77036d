"""`toolhost serve --http` against hostile clients on loopback: a session id
used with another principal's token, a principal opening more sessions
than its quota, a flood of `initialize` from one principal, and half-sent
requests without a token. Each is bounded in count and time, and the
host's memory stays under 100 MiB."""

from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
import time
from pathlib import Path

import httpx2

from harness import plan, wait_until
from test_http_abuse import auth, init_body, open_session, rpc_messages, start

ADMIN, MALLORY, BOB = "admin-token", "mallory-token", "bob-token"
RSS_LIMIT_KIB = 100 * 1024


def principals_plan(extra_host: str = "") -> str:
    text = plan(["fixture", "bash"])
    text = text.replace("[host]\n", f"[host]\n{extra_host}", 1)
    for name, token in (("admin", ADMIN), ("mallory", MALLORY), ("bob", BOB)):
        digest = hashlib.sha256(token.encode()).hexdigest()
        text += f'[[principals]]\nname = "{name}"\ntoken_sha256 = "{digest}"\n\n'
    return text


def headers(token: str, sid: str | None = None) -> dict:
    h = {**auth(token), "mcp-protocol-version": "2025-06-18"}
    if sid:
        h["mcp-session-id"] = sid
    return h


def tool_call(client: httpx2.Client, url: str, token: str, sid: str, name: str, args: dict, rid: int = 7):
    body = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": name, "arguments": args}}
    return client.post(url, content=json.dumps(body), headers=headers(token, sid))


def list_tools(client: httpx2.Client, url: str, token: str, sid: str):
    body = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    return client.post(url, content=json.dumps(body), headers=headers(token, sid))


def sse_headers(token: str, sid: str) -> dict:
    return {**headers(token, sid), "Accept": "text/event-stream"}


def output_of(response) -> dict:
    assert response.status_code == 200, (response.status_code, response.text)
    return rpc_messages(response)[0]["result"]["structuredContent"]


def rss_kib(pid: int) -> int:
    return int(re.search(r"VmRSS:\s+(\d+)", Path(f"/proc/{pid}/status").read_text()).group(1))


def alive(client: httpx2.Client, url: str, token: str, sid: str) -> bool:
    r = tool_call(client, url, token, sid, "echo", {"message": "still here"})
    if r.status_code == 404:
        return False
    assert output_of(r)["message"] == "still here"
    return True


def test_a_stolen_session_id_is_worth_nothing_without_its_owners_token(workspace):
    ws = workspace(principals_plan())
    server = start(ws)
    try:
        with httpx2.Client(timeout=30) as client:
            sid = open_session(client, server.url, token=ADMIN)
            background = {"command": "echo admin-secret; sleep 30", "run_in_background": True}
            job = output_of(tool_call(client, server.url, ADMIN, sid, "bash", background))["id"]
            unknown = list_tools(client, server.url, MALLORY, "no-such-session")
            assert unknown.status_code == 404, unknown.text

            for token in (MALLORY, BOB, "tok"):
                # Reading admin's background job.
                read = tool_call(client, server.url, token, sid, "bash_output", {"id": job})
                assert (read.status_code, read.text) == (404, unknown.text), read.text
                # Any other request in the session, the SSE stream, and DELETE.
                listed = list_tools(client, server.url, token, sid)
                assert (listed.status_code, listed.text) == (404, unknown.text)
                with client.stream("GET", server.url, headers=sse_headers(token, sid)) as stream:
                    assert stream.status_code == 404
                    assert stream.read().decode() == unknown.text
                deleted = client.delete(server.url, headers=headers(token, sid))
                assert (deleted.status_code, deleted.text) == (404, unknown.text)
            # DELETE of a session that does not exist answers the same: a
            # stranger cannot tell a live session from a made-up id.
            made_up = client.delete(server.url, headers=headers(MALLORY, "no-such-session"))
            assert (made_up.status_code, made_up.text) == (404, unknown.text)

            # The owner's session, and its job, are intact.
            seen = []

            def owner_reads_it() -> bool:
                seen.append(output_of(tool_call(client, server.url, ADMIN, sid, "bash_output", {"id": job})))
                return "admin-secret" in json.dumps(seen)

            assert wait_until(owner_reads_it, timeout=10), seen
            assert client.delete(server.url, headers=headers(ADMIN, sid)).status_code in (200, 202, 204)
            assert not alive(client, server.url, ADMIN, sid)
    finally:
        server.stop()


def test_past_its_quota_a_principal_loses_its_least_recently_used_idle_session(workspace):
    ws = workspace(principals_plan("sessions_per_principal = 3\n"))
    server = start(ws, "--max-sessions", "8")
    try:
        with httpx2.Client(timeout=30) as client:
            a = [open_session(client, server.url, token=ADMIN) for _ in range(3)]
            b = [open_session(client, server.url, token=BOB) for _ in range(3)]
            assert alive(client, server.url, ADMIN, a[0])  # a[0] is now the most recent
            # A GET stream keeps a[2] busy: it is never taken as idle.
            stream = httpx2.Client(timeout=30)
            listening = stream.send(
                stream.build_request("GET", server.url, headers=sse_headers(ADMIN, a[2])),
                stream=True,
            )
            assert listening.status_code == 200
            a.append(open_session(client, server.url, token=ADMIN))
            assert not alive(client, server.url, ADMIN, a[1]), "the least recently used idle session ended"
            assert all(alive(client, server.url, ADMIN, s) for s in (a[0], a[2], a[3]))
            # More initialize calls recycle the principal's own idle sessions;
            # the busy one and the other principal's are untouched.
            for _ in range(10):
                a.append(open_session(client, server.url, token=ADMIN))
            assert alive(client, server.url, ADMIN, a[2])
            assert all(alive(client, server.url, BOB, s) for s in b)
            live = [s for s in a if alive(client, server.url, ADMIN, s)]
            assert len(live) == 3 and a[2] in live and a[-1] in live, live
            assert "sessions_per_principal (3) reached" in server.stderr()
            listening.close()
            stream.close()
    finally:
        server.stop()


def test_an_initialize_flood_from_one_principal_locks_no_one_out(workspace):
    ws = workspace(principals_plan("sessions_per_principal = 4\n"))
    server = start(ws, "--max-sessions", "10")
    flood = 400
    try:
        bob_client = httpx2.Client(timeout=30)
        bob = open_session(bob_client, server.url, token=BOB)
        codes: dict[int, int] = {}
        with httpx2.Client(timeout=30) as client:
            started = time.monotonic()
            for i in range(flood):
                r = client.post(server.url, content=init_body(rid=i), headers=auth(MALLORY))
                codes[r.status_code] = codes.get(r.status_code, 0) + 1
            elapsed = time.monotonic() - started
            # Every one served: the flood recycles mallory's own sessions.
            assert codes == {200: flood}, codes
            # New clients get in: another principal, and mallory's own.
            assert open_session(client, server.url, token=ADMIN)
            assert open_session(client, server.url, token=MALLORY)
            assert alive(client, server.url, BOB, bob), "another principal's session survived the flood"
        bob_client.close()
        rss = rss_kib(server.proc.pid)
        assert rss < RSS_LIMIT_KIB, rss
        print(f"{flood} initialize calls in {elapsed:.1f} s; RSS {rss} KiB")
    finally:
        server.stop()


def test_half_sent_requests_without_a_token_do_not_starve_a_token_holder(workspace):
    ws = workspace()
    server = start(ws, "--max-connections", "16")
    port = int(server.url.rsplit(":", 1)[1].split("/")[0])
    half_sent = []
    try:
        # Far more half-sent requests than --max-connections: headers begun,
        # never finished, no token.
        for _ in range(200):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: app".encode())
            half_sent.append(s)
        failures = []
        for i in range(50):
            try:
                # A new connection each time, as a client starting up makes.
                with httpx2.Client(timeout=5) as client:
                    r = client.post(server.url, content=init_body(rid=i), headers=auth())
                    if r.status_code != 200:
                        failures.append(r.status_code)
            except httpx2.HTTPError as e:
                failures.append(repr(e))
            # The attack goes on: a fresh half-sent request per attempt.
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            half_sent.append(s)
        assert failures == [], f"{len(failures)} of 50 failed: {failures[:5]}"

        # The half-sent ones were closed by the server: pushed out for newer
        # ones, the rest at their deadline (a few seconds).
        def closed(s: socket.socket) -> bool:
            s.setblocking(False)
            try:
                return s.recv(1) == b""
            except BlockingIOError:
                return False
            except OSError:
                return True

        assert wait_until(lambda: all(closed(s) for s in half_sent), timeout=15), sum(not closed(s) for s in half_sent)
        rss = rss_kib(server.proc.pid)
        assert rss < RSS_LIMIT_KIB, rss
    finally:
        for s in half_sent:
            s.close()
        server.stop()


def test_at_its_quota_with_every_session_busy_a_principal_is_refused_clearly(workspace):
    ws = workspace(principals_plan("sessions_per_principal = 2\n"))
    server = start(ws)
    streams = []
    try:
        with httpx2.Client(timeout=30) as client:
            held = [open_session(client, server.url, token=BOB) for _ in range(2)]
            for sid in held:
                listener = httpx2.Client(timeout=30)
                request = listener.build_request("GET", server.url, headers=sse_headers(BOB, sid))
                response = listener.send(request, stream=True)
                assert response.status_code == 200
                streams.append((listener, response))
            refused = client.post(server.url, content=init_body(), headers=auth(BOB))
            assert refused.status_code == 503, refused.text
            assert "sessions_per_principal" in refused.text and "bob" in refused.text
            # Other principals are not concerned; ending one of bob's sessions makes room.
            assert open_session(client, server.url, token=ADMIN)
            assert client.delete(server.url, headers=headers(BOB, held[0])).status_code in (200, 202, 204)
            assert open_session(client, server.url, token=BOB)
    finally:
        for listener, response in streams:
            response.close()
            listener.close()
        server.stop()


def test_a_request_that_opens_no_session_ends_none_of_the_principals(workspace):
    """At its quota, only an `initialize` that opens a session may end one of
    the principal's idle sessions: requests without a session id that open
    none (a stray `tools/list`, a body that is no JSON-RPC, a refused
    `initialize`) leave them all alone."""
    ws = workspace(principals_plan("sessions_per_principal = 2\n"))
    server = start(ws)
    try:
        with httpx2.Client(timeout=30) as client:
            held = [open_session(client, server.url, token=BOB) for _ in range(2)]
            strays = [
                json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}),
                "not json at all",
                json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            ]
            for body in strays * 2:
                r = client.post(server.url, content=body, headers=auth(BOB))
                assert r.status_code != 200 or "mcp-session-id" not in r.headers, r.text
            # A refused initialize (its version header contradicts its body).
            bad = {**auth(BOB), "mcp-protocol-version": "2024-11-05"}
            r = client.post(server.url, content=init_body("2025-06-18"), headers=bad)
            assert "mcp-session-id" not in r.headers, (r.status_code, r.text)
            assert all(alive(client, server.url, BOB, s) for s in held), "a stray request ended a session"
            # A real initialize still recycles the least recently used one.
            newest = open_session(client, server.url, token=BOB)
            assert alive(client, server.url, BOB, newest)
            assert [alive(client, server.url, BOB, s) for s in held].count(True) == 1
    finally:
        server.stop()
