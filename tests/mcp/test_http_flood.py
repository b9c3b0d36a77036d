"""While 10,000 `initialize` calls flood `toolhost serve --http`, after
more idle connections than it has descriptors were opened, a real client
(the official Python SDK) that connected before the flood is served: it
lists the tools and calls one *during* the flood, not after it. The flood
is one principal's: it recycles that principal's own idle sessions
(`sessions_per_principal`), so every call is served and the real client,
whose open SSE stream keeps its session busy, keeps it."""

from __future__ import annotations

import re
import socket
import threading
import time
from pathlib import Path

import anyio
import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from harness import wait_until_async
from test_http_abuse import auth, init_body, start

FLOOD = 10_000
FLOODERS = 2


async def served_during(url: str, flood_started, counts: dict) -> tuple[str, int]:
    """A real client connects, then (the flood under way) lists the tools
    and calls one; returns its answer and how many flood requests had been
    sent by then."""
    async with httpx2.AsyncClient(headers={"Authorization": "Bearer tok"}, timeout=httpx2.Timeout(60)) as client:
        async with streamable_http_client(url, http_client=client) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                flood_started()
                # Readiness: the flood is under way.
                assert await wait_until_async(lambda: counts["sent"] >= 200, 60), counts
                tools = await session.list_tools()
                assert "echo" in {t.name for t in tools.tools}
                result = await session.call_tool("echo", {"message": "served mid-flood"})
                assert not result.is_error, result
                return result.structured_content["message"], counts["sent"]


def test_a_real_client_is_served_during_an_initialize_flood_past_the_descriptor_limit(workspace):
    import resource

    ws = workspace()

    def few_descriptors():
        resource.setrlimit(resource.RLIMIT_NOFILE, (96, 96))

    server = start(ws, "--header-timeout-secs", "2", "--max-connections", "1000", preexec=few_descriptors)
    port = int(server.url.rsplit(":", 1)[1].split("/")[0])
    idle = []
    counts = {"sent": 0, "refused": 0, "ok": 0, "failed": 0}
    lock = threading.Lock()

    def flood(n: int, first: int) -> None:
        with httpx2.Client(timeout=30) as client:
            for i in range(n):
                try:
                    r = client.post(server.url, content=init_body(rid=first + i), headers=auth())
                    outcome = "refused" if r.status_code == 503 else "ok" if r.status_code == 200 else "failed"
                except httpx2.HTTPError:
                    outcome = "failed"
                with lock:
                    counts["sent"] += 1
                    counts[outcome] += 1

    flooders = [
        threading.Thread(target=flood, args=(FLOOD // FLOODERS, k * FLOOD), daemon=True) for k in range(FLOODERS)
    ]
    try:
        # More idle connections than the server has descriptors, left open:
        # the header timeout must close them.
        for _ in range(150):
            idle.append(socket.create_connection(("127.0.0.1", port)))
        started = time.monotonic()

        def flood_started() -> None:
            for t in flooders:
                t.start()

        message, during = anyio.run(served_during, server.url, flood_started, counts)
        assert message == "served mid-flood"
        assert during < FLOOD, f"the client was served only once the flood was over ({counts})"
        for t in flooders:
            t.join(timeout=300)
        elapsed = time.monotonic() - started
        assert counts["sent"] == FLOOD, counts
        # Every call served (none refused, none dropped): the principal's
        # oldest idle sessions made room.
        assert counts["ok"] == FLOOD and counts["failed"] == 0, counts
        rss_kib = int(re.search(r"VmRSS:\s+(\d+)", Path(f"/proc/{server.proc.pid}/status").read_text()).group(1))
        assert rss_kib < 100 * 1024, rss_kib
        print(f"flood of {FLOOD} initialize: {elapsed:.1f} s; the client was served after {during}; RSS {rss_kib} KiB")
    finally:
        for s in idle:
            s.close()
        server.stop()
