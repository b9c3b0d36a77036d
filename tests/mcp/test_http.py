"""`toolhost serve --http`: the same tools over streamable HTTP, loopback by
default, a bearer token required on every interface (generated into a 0600
file when none is given; `--no-auth` only on loopback)."""

from __future__ import annotations

import json
import secrets
import subprocess
from contextlib import asynccontextmanager

import httpx2
import pytest

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from harness import BIN, HttpServer, free_port, plan, server_env, text_of, toolhost_meta

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def http_session(url: str, token: str | None = None):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as client:
        async with streamable_http_client(url, http_client=client) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                yield session, init


@pytest.fixture
def http_server(workspace):
    servers = []

    def start(addr: str | None = None, token: str | None = None, text: str | None = None, extra_env=None) -> HttpServer:
        ws = workspace(text)
        token = token or secrets.token_hex(16)
        server = HttpServer(ws, addr or f"127.0.0.1:{free_port()}", token=token, extra_env=extra_env)
        server.token = token
        servers.append(server)
        assert server.url, f"the server did not start:\n{server.stderr()}"
        server.ws = ws
        return server

    yield start
    for server in servers:
        server.stop()


async def test_http_on_loopback_lists_and_calls(http_server):
    server = http_server()
    async with http_session(server.url, server.token) as (session, init):
        assert init.server_info.name == "toolhost"
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert tools["echo"].annotations.read_only_hint is True
        result = await session.call_tool("echo", {"message": "over http"})
        assert result.structured_content["message"] == "over http"
        invalid = await session.call_tool("echo", {})
        assert invalid.is_error
        assert toolhost_meta(invalid)["status"] == "validation_error"


async def test_http_with_a_token_refuses_requests_without_it(http_server):
    server = http_server(token="s3cret-token")
    assert "bearer token required" in server.stderr()
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"message": "sneaky"}},
    }
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    async with httpx2.AsyncClient() as client:
        for auth in (None, "Bearer wrong", "Basic s3cret-token"):
            h = dict(headers)
            if auth:
                h["Authorization"] = auth
            response = await client.post(server.url, content=json.dumps(call), headers=h)
            assert response.status_code == 401
            assert response.headers.get("www-authenticate", "").lower().startswith("bearer")
    assert server.ws.audit_records() == [], "a refused request ran something"

    with pytest.raises(BaseException):
        async with http_session(server.url) as _:
            pass

    async with http_session(server.url, token="s3cret-token") as (session, _):
        result = await session.call_tool("echo", {"message": "with token"})
        assert not result.is_error, text_of(result)
    assert [r["tool"] for r in server.ws.audit_records()] == ["echo"]


def test_http_beyond_loopback_refuses_no_auth(workspace):
    ws = workspace()
    out = subprocess.run(
        [str(BIN), *ws.args("--http", f"0.0.0.0:{free_port()}", "--no-auth")],
        cwd=ws.path,
        env=server_env(),
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode == 2
    assert "token" in out.stderr
    assert out.stdout == ""


async def test_http_beyond_loopback_with_a_token(http_server):
    server = http_server(addr=f"0.0.0.0:{free_port()}", token="tok")
    url = server.url.replace("0.0.0.0", "127.0.0.1")
    async with httpx2.AsyncClient() as client:
        response = await client.post(url, content="{}", headers={"Content-Type": "application/json"})
        assert response.status_code == 401
    async with http_session(url, token="tok") as (session, _):
        result = await session.call_tool("echo", {"message": "remote"})
        assert result.structured_content["message"] == "remote"


async def test_http_cancel_and_disconnect_stop_calls(http_server):
    import anyio

    from harness import wait_until_async

    server = http_server()
    async with http_session(server.url, server.token) as (session, _):
        with anyio.move_on_after(0.5):
            await session.call_tool("sleep", {"ms": 60_000})
        ok = await session.call_tool("echo", {"message": "after"})
        assert not ok.is_error

    # A client that goes away mid-call (its session ends) cancels the call.
    async with http_session(server.url, server.token) as (session, _):
        async with anyio.create_task_group() as tg:
            tg.start_soon(session.call_tool, "sleep", {"ms": 60_000})
            await anyio.sleep(0.5)
            tg.cancel_scope.cancel()

    def sleeps():
        return [r["status"] for r in server.ws.audit_records() if r.get("tool") == "sleep"]

    assert await wait_until_async(lambda: len(sleeps()) == 2, timeout=8), sleeps()
    assert sleeps() == ["cancelled", "cancelled"]
