"""`toolhost serve --http` under abuse from the same machine: requests from
foreign origins, clients without the token, idle connections past the
descriptor limit, floods of `initialize`, deleted and expired sessions; and
the SSE priming event only for clients that expect it. A real client is
served throughout."""

from __future__ import annotations

import json
import os
import re
import resource
import socket
import stat
import subprocess
import time
from pathlib import Path

import httpx2

from harness import BIN, HttpServer, free_port, plan, server_env, wait_until

LONG = os.environ.get("TOOLHOST_LONG_TESTS") == "1"

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def init_body(version: str = "2025-06-18", rid: int = 1) -> str:
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": rid,
            "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "abuse", "version": "0"}},
        }
    )


def start(ws, *flags: str, token: str | None = "tok", preexec=None) -> HttpServer:
    """A server with `flags` after `--http ADDR` (HttpServer takes none)."""
    env = {"TOOLHOST_TOKEN": token} if token else {}
    server = HttpServer.__new__(HttpServer)
    server.log = open(ws.path / "http-server.log", "w+")
    server.proc = subprocess.Popen(
        [str(BIN), *ws.args("--http", f"127.0.0.1:{free_port()}", *flags)],
        cwd=ws.path,
        env=server_env(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=server.log,
        preexec_fn=preexec,
    )
    server.url = None

    def ready() -> bool:
        server.log.seek(0)
        match = re.search(r"at (http://\S+)\s", server.log.read())
        if match:
            server.url = match.group(1)
        return server.url is not None or server.proc.poll() is not None

    assert wait_until(ready, timeout=15)
    assert server.url, server.stderr()
    return server


def auth(token: str = "tok") -> dict:
    return {**HEADERS, "Authorization": f"Bearer {token}"}


def open_session(client: httpx2.Client, url: str, version: str = "2025-06-18", token: str = "tok") -> str:
    response = client.post(url, content=init_body(version), headers=auth(token))
    assert response.status_code == 200, (response.status_code, response.text)
    sid = response.headers["mcp-session-id"]
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    h = {**auth(token), "mcp-session-id": sid, "mcp-protocol-version": version}
    assert client.post(url, content=json.dumps(note), headers=h).status_code == 202
    return sid


def call(client: httpx2.Client, url: str, sid: str, name: str, args: dict, rid: int = 2, version="2025-06-18", meta=None):
    body = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": name, "arguments": args}}
    if meta is not None:
        body["params"]["_meta"] = meta
    h = {**auth(), "mcp-session-id": sid, "mcp-protocol-version": version}
    return client.post(url, content=json.dumps(body), headers=h)


def rpc_messages(response) -> list[dict]:
    """The JSON-RPC messages of a POST's answer: one JSON body (the server's
    fast path for plain calls) or the `data:` of each SSE event."""
    if response.headers.get("content-type", "").startswith("application/json"):
        return [json.loads(response.text)]
    found = []
    for event in sse_events(response.text):
        data = "\n".join(line[5:].lstrip() for line in event.split("\n") if line.startswith("data:"))
        if data.strip():
            found.append(json.loads(data))
    return found


def sse_events(text: str) -> list[str]:
    return [e for e in text.replace("\r\n", "\n").split("\n\n") if e.strip()]


def is_priming(event: str) -> bool:
    data = [line[5:].strip() for line in event.split("\n") if line.startswith("data:")]
    return bool(data) and all(d == "" for d in data)


def echo_works(url: str) -> bool:
    with httpx2.Client(timeout=10) as client:
        sid = open_session(client, url)
        response = call(client, url, sid, "echo", {"message": "served"})
        return response.status_code == 200 and '"served"' in response.text


def test_foreign_origins_are_refused_and_allowed_ones_pass(workspace):
    ws = workspace()
    server = start(ws, "--allow-origin", "http://localhost:6274")
    try:
        with httpx2.Client(timeout=10) as client:
            evil = client.post(server.url, content=init_body(), headers={**auth(), "Origin": "http://evil.example"})
            assert evil.status_code == 403, evil.text
            ok = client.post(server.url, content=init_body(), headers={**auth(), "Origin": "http://localhost:6274"})
            assert ok.status_code == 200, ok.text
        assert echo_works(server.url), "a client without Origin (not a browser) is served"
    finally:
        server.stop()
    # With no allow-list at all, every browser origin is refused.
    server = start(ws)
    try:
        with httpx2.Client(timeout=10) as client:
            local = client.post(server.url, content=init_body(), headers={**auth(), "Origin": "http://localhost:3000"})
            assert local.status_code == 403, local.text
        assert echo_works(server.url)
    finally:
        server.stop()


def test_without_a_token_one_is_generated_into_a_private_file(workspace):
    ws = workspace()
    server = start(ws, token=None)
    try:
        match = re.search(r"wrote it to (\S+) \(mode 0600\)", server.stderr())
        assert match, server.stderr()
        token_file = Path(match.group(1))
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        token = token_file.read_text().strip()
        assert len(token) == 64
        with httpx2.Client(timeout=10) as client:
            assert client.post(server.url, content=init_body(), headers=HEADERS).status_code == 401
            assert open_session(client, server.url, token=token)
        assert ws.audit_records() == []
    finally:
        server.stop()


def test_no_auth_is_explicit_and_warned(workspace):
    ws = workspace()
    server = start(ws, "--no-auth", token=None)
    try:
        assert "WARNING: --no-auth" in server.stderr()
        with httpx2.Client(timeout=10) as client:
            assert client.post(server.url, content=init_body(), headers=HEADERS).status_code == 200
    finally:
        server.stop()


def test_the_priming_event_goes_only_to_clients_that_expect_it(workspace):
    ws = workspace()
    server = start(ws)
    try:
        with httpx2.Client(timeout=10) as client:
            for version, primed in (("2025-03-26", False), ("2025-06-18", False), ("2025-11-25", True)):
                response = client.post(server.url, content=init_body(version), headers=auth())
                assert response.status_code == 200
                events = sse_events(response.text)
                assert any(is_priming(e) for e in events) == primed, (version, events)
                assert any('"protocolVersion"' in e for e in events)
                sid = response.headers["mcp-session-id"]
                h = {**auth(), "mcp-session-id": sid, "mcp-protocol-version": version}
                note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
                client.post(server.url, content=json.dumps(note), headers=h)
                # A call that may stream (it asks for progress) answers
                # with SSE, primed as its client expects.
                answer = call(client, server.url, sid, "echo", {"message": "x"}, version=version, meta={"progressToken": 1})
                assert answer.headers["content-type"].startswith("text/event-stream"), answer.headers
                events = sse_events(answer.text)
                assert any(is_priming(e) for e in events) == primed, (version, events)
                # A plain call too.
                plain = call(client, server.url, sid, "echo", {"message": "y"}, rid=3, version=version)
                assert any(is_priming(e) for e in sse_events(plain.text)) == primed, (version, plain.text)
                assert rpc_messages(plain)[0]["result"]["structuredContent"]["message"] == "y"
    finally:
        server.stop()


def test_sessions_are_capped_and_deleting_one_ends_its_calls(workspace):
    ws = workspace()
    server = start(ws, "--max-sessions", "2")
    try:
        with httpx2.Client(timeout=30) as client:
            first = open_session(client, server.url)
            open_session(client, server.url)
            refused = client.post(server.url, content=init_body(), headers=auth())
            assert refused.status_code == 503
            assert "max_sessions" in refused.text

            # A call running in the first session stops when it is deleted.
            # write_key changes state, so its intent is on record before it
            # runs: that record is the signal that the call reached the tool.
            import threading

            answer = {}
            running = threading.Thread(
                target=lambda: answer.setdefault(
                    "r", call(httpx2.Client(timeout=30), server.url, first, "write_key", {"key": "k", "ms": 60_000})
                ),
                daemon=True,
            )
            running.start()

            def records(phase=None):
                return [r for r in ws.audit_records() if r.get("tool") == "write_key" and r.get("phase") == phase]

            assert wait_until(lambda: records("intent"), timeout=10), ws.audit_records()
            deleted_at = time.monotonic()
            h = {**auth(), "mcp-session-id": first, "mcp-protocol-version": "2025-06-18"}
            assert client.delete(server.url, headers=h).status_code in (200, 202, 204)
            assert wait_until(lambda: [r["status"] for r in records()] == ["cancelled"], timeout=4), ws.audit_records()
            # Cancel grace is 1.5 s in these plans; rmcp alone took ~5 s.
            assert time.monotonic() - deleted_at < 3.5
            # Its POST ends with no message, as rmcp's stream does for a
            # request whose session is gone.
            running.join(timeout=10)
            assert not running.is_alive()
            assert answer["r"].status_code == 200 and rpc_messages(answer["r"]) == [], answer["r"].text
            # The slot is free again.
            open_session(client, server.url)
    finally:
        server.stop()


def server_side_sockets(port: int) -> list[int]:
    """The receive-queue sizes of the established connections whose local
    end is `port` (from /proc/net/tcp)."""
    queues = []
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, state, queue = fields[1], fields[3], fields[4]
        if int(local.rsplit(":", 1)[1], 16) == port and state == "01":
            queues.append(int(queue.split(":")[1], 16))
    return queues


def unread_by_server(port: int) -> int:
    return sum(server_side_sockets(port))


def accepted_by_server(port: int) -> int:
    return len(server_side_sockets(port))


def test_initialize_calls_racing_for_the_last_places_never_pass_the_cap(workspace):
    """Forty `initialize` calls whose headers all arrive before any body,
    against a cap of three: exactly three sessions open and the rest get 503.
    (The cap was checked before the body was read and the session created
    after it, so every racer saw room and all forty opened.)"""
    ws = workspace()
    server = start(ws, "--max-sessions", "3")
    port = int(server.url.rsplit(":", 1)[1].split("/")[0])
    racers = []
    try:
        bodies = [init_body(rid=i).encode() for i in range(40)]
        for body in bodies:
            s = socket.create_connection(("127.0.0.1", port))
            head = (
                f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer tok\r\n"
                f"Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n"
            )
            s.sendall(head.encode())
            racers.append(s)
        # Readiness: the server has read every header (its side of each
        # connection has nothing left to read), so every racer is waiting
        # for its body, past the first look at the cap.
        assert wait_until(lambda: unread_by_server(port) == 0 and accepted_by_server(port) >= 40, timeout=10)
        for s, body in zip(racers, bodies):
            s.sendall(body)
        codes = []
        for s in racers:
            s.settimeout(30)
            status = s.recv(64).split(b" ", 2)
            codes.append(int(status[1]))
        assert sorted(set(codes)) == [200, 503], codes
        assert codes.count(200) == 3, codes
    finally:
        for s in racers:
            s.close()
        server.stop()


def test_idle_sessions_expire(workspace):
    ws = workspace()
    server = start(ws, "--session-idle-secs", "1")
    try:
        with httpx2.Client(timeout=10) as client:
            sid = open_session(client, server.url)
            assert call(client, server.url, sid, "echo", {"message": "x"}).status_code == 200
            # Polling with the session would keep it alive: wait for the log.
            assert wait_until(lambda: "MCP session ended" in server.stderr(), timeout=10), server.stderr()[-2000:]
            assert call(client, server.url, sid, "echo", {"message": "x"}).status_code == 404
    finally:
        server.stop()


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_idle_connections_past_the_descriptor_limit_and_an_initialize_flood(workspace):
    ws = workspace()

    def few_descriptors():
        resource.setrlimit(resource.RLIMIT_NOFILE, (96, 96))

    server = start(ws, "--header-timeout-secs", "2", "--max-connections", "1000", preexec=few_descriptors)
    idle = []
    try:
        # More idle connections than the server has descriptors.
        for _ in range(150):
            s = socket.create_connection(("127.0.0.1", int(server.url.rsplit(":", 1)[1].split("/")[0])))
            idle.append(s)
        log_before = len(server.stderr())
        cpu_before = cpu_seconds(server.proc.pid)
        time.sleep(1.0)  # a measurement window, not a wait for a state
        spent = cpu_seconds(server.proc.pid) - cpu_before
        assert spent < 0.5, f"the accept loop spun: {spent:.2f} s CPU in 1 s"
        assert len(server.stderr()) - log_before < 20_000, "the accept loop flooded its log"
        # Idle connections are closed by the header timeout; a real client is served.
        assert wait_until(lambda: echo_works(server.url), timeout=20), server.stderr()[-2000:]
        for s in idle:
            s.close()
        idle.clear()

        # A flood of initialize calls from one principal recycles its own idle
        # sessions (sessions_per_principal): every call is served, none is
        # refused, and the earliest sessions are gone.
        flood = 10_000 if LONG else 1_500
        served = 0
        with httpx2.Client(timeout=10) as client:
            for i in range(flood):
                r = client.post(server.url, content=init_body(rid=i), headers=auth())
                served += r.status_code == 200
                if i == 0:
                    first = r.headers["mcp-session-id"]
            assert served == flood, served
            assert call(client, server.url, first, "echo", {"message": "x"}).status_code == 404
        assert echo_works(server.url)
        rss_kib = int(re.search(r"VmRSS:\s+(\d+)", Path(f"/proc/{server.proc.pid}/status").read_text()).group(1))
        assert rss_kib < 100 * 1024, rss_kib
    finally:
        for s in idle:
            s.close()
        server.stop()


def trickle(host: str, port: int, request_head: bytes, drip_every: float, drips: int) -> bytes:
    """Sends `request_head` at once, then one byte of its promised body each
    `drip_every` seconds (at most `drips`); what the server answered."""
    sock = socket.create_connection((host, port), timeout=30)
    try:
        sock.sendall(request_head)
        sock.settimeout(drip_every)
        answered = b""
        for _ in range(drips):
            try:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                answered += chunk
                if b"\r\n\r\n" in answered:
                    break
            except socket.timeout:
                pass
            try:
                sock.sendall(b" ")
            except OSError:
                break
        return answered
    finally:
        sock.close()


def test_a_token_holder_trickling_a_body_is_cut_off_at_the_body_timeout(workspace):
    ws = workspace()
    server = start(ws, "--body-timeout-secs", "2")
    try:
        host, port = re.match(r"http://([^:/]+):(\d+)", server.url).groups()
        with httpx2.Client(timeout=10) as client:
            sid = open_session(client, server.url)
        heads = {
            "a new session": b"",
            "a session's request": f"Mcp-Session-Id: {sid}\r\nMCP-Protocol-Version: 2025-06-18\r\n".encode(),
        }
        for what, extra in heads.items():
            head = (
                b"POST /mcp HTTP/1.1\r\nHost: " + f"{host}:{port}".encode() + b"\r\n"
                b"Authorization: Bearer tok\r\nAccept: application/json, text/event-stream\r\n"
                b"Content-Type: application/json\r\nContent-Length: 100000\r\n" + extra + b"\r\n"
            )
            started = time.monotonic()
            # One byte every half second: the header timeout never fires,
            # the body would take 14 hours.
            answered = trickle(host, int(port), head, 0.5, 40)
            took = time.monotonic() - started
            assert answered.startswith(b"HTTP/1.1 408"), f"{what}: {answered[:300]!r} after {took:.1f}s"
            assert b"--body-timeout-secs" in answered, f"{what}: {answered!r}"
        assert echo_works(server.url)
    finally:
        server.stop()
