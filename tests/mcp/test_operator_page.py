"""The operator page's HTTP rules on a real `toolhost serve --http`: no
session → sign-in, a non-operator → 403, a state-changing form without its
CSRF token or from another origin → 403, the session cookie is no MCP
credential, no operators → no page; and an approval that waits for either
side: the MCP client's elicitation answer or the page's, whichever comes
first. (The page itself is driven in Chromium by
tests/node/operator_page.test.mjs.)"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import subprocess
from pathlib import Path

import httpx2
import pytest
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client

from harness import BIN, plan, server_env, toolhost_meta
from test_http_abuse import start

pytestmark = pytest.mark.anyio

TOKENS = {"alice": "alice-token-1", "carol": "carol-token-1"}


def ui_plan(operators: str = '["alice"]') -> str:
    text = plan(["fixture"], '[policy.tools.echo]\ndecision = "ask"\n\n')
    text = text.replace("[host]\n", "[host.ui]\noperators = " + operators + "\n\n[host]\n", 1)
    for name, token in TOKENS.items():
        digest = hashlib.sha256(token.encode()).hexdigest()
        text += f'[[principals]]\nname = "{name}"\ntoken_sha256 = "{digest}"\n\n'
    return text


def origin(server) -> str:
    return server.url.removesuffix("/mcp")


def sign_in(client: httpx2.Client, server, who: str) -> httpx2.Response:
    return client.post(f"{origin(server)}/ui/login", data={"token": TOKENS[who]})


def csrf_of(page: str) -> str:
    return re.search(r'name="csrf" value="([0-9a-f]+)"', page).group(1)


def test_the_page_s_http_rules(workspace):
    server = start(workspace(ui_plan()))
    base = origin(server)
    try:
        with httpx2.Client(timeout=30, follow_redirects=False) as client:
            # No session: sign in first; forms are refused.
            r = client.get(f"{base}/ui/")
            assert (r.status_code, r.headers["location"]) == (303, "/ui/login")
            assert client.post(f"{base}/ui/logout", data={"csrf": "x"}).status_code == 401
            # A bad token, and a principal who is no operator.
            r = client.post(f"{base}/ui/login", data={"token": "wrong"})
            assert r.status_code == 401 and "set-cookie" not in r.headers
            r = sign_in(client, server, "carol")
            assert r.status_code == 403 and "set-cookie" not in r.headers
            assert "&#39;carol&#39; may not use the operator page" in r.text
            # An operator: a cookie with a random id, never the token.
            r = sign_in(client, server, "alice")
            assert r.status_code == 303, r.text
            cookie = r.headers["set-cookie"]
            for attribute in ("HttpOnly", "SameSite=Strict", "Path=/ui/", "Secure", "Max-Age="):
                assert attribute in cookie, cookie
            assert TOKENS["alice"] not in cookie
            session = re.match(r"toolhost_ui=([0-9a-f]{64});", cookie).group(1)
            jar = {"Cookie": f"toolhost_ui={session}"}
            page = client.get(f"{base}/ui/", headers=jar)
            assert page.status_code == 200
            assert "script-src" not in page.headers["content-security-policy"]
            assert page.headers["content-security-policy"].startswith("default-src 'none'")
            # State-changing forms need the session's CSRF token and no foreign origin.
            assert client.post(f"{base}/ui/logout", headers=jar).status_code == 403
            assert client.post(f"{base}/ui/logout", headers=jar, data={"csrf": "0" * 64}).status_code == 403
            foreign = {**jar, "Origin": "http://evil.example"}
            csrf = csrf_of(page.text)
            assert client.post(f"{base}/ui/logout", headers=foreign, data={"csrf": csrf}).status_code == 403
            assert client.get(f"{base}/ui/", headers=jar).status_code == 200, "the session survived"
            # The cookie is no MCP credential. (Its own connection: the server
            # closes one whose refused body it did not read.)
            init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
            with httpx2.Client(timeout=30) as mcp:
                assert mcp.post(server.url, json=init, headers=jar).status_code == 401
            # Sign-out ends the session on the server.
            r = client.post(f"{base}/ui/logout", headers=jar, data={"csrf": csrf})
            assert r.status_code == 303 and "Max-Age=0" in r.headers["set-cookie"]
            assert client.get(f"{base}/ui/", headers=jar).status_code == 303
    finally:
        server.stop()


def test_without_operators_there_is_no_page(workspace):
    server = start(workspace(ui_plan("[]")))
    try:
        with httpx2.Client(timeout=30, follow_redirects=False) as client:
            assert client.get(f"{origin(server)}/ui/").status_code == 401
            authorized = {"Authorization": "Bearer tok"}
            assert client.get(f"{origin(server)}/ui/", headers=authorized).status_code == 404
    finally:
        server.stop()


@pytest.mark.parametrize("first", ["client", "page"])
async def test_an_approval_waits_for_the_client_or_the_page(workspace, first):
    server = start(workspace(ui_plan()))
    base = origin(server)
    # The cookie is `Secure`: httpx keeps it from plain http, so it is sent by hand.
    with httpx2.Client(timeout=30, follow_redirects=False) as client:
        r = sign_in(client, server, "alice")
    assert r.status_code == 303, r.text
    jar = {"Cookie": r.headers["set-cookie"].split(";")[0]}
    page = httpx2.AsyncClient(timeout=30, follow_redirects=False, headers=jar)
    listed = asyncio.Event()

    async def approvals() -> list[str]:
        html = (await page.get(f"{base}/ui/")).text
        return re.findall(r'action="(/ui/approvals/\d+)"', html)

    async def elicit(context, params):
        # The question is on the page while the client is asked.
        while not await approvals():
            await asyncio.sleep(0.05)
        listed.set()
        if first == "client":
            return types.ElicitResult(action="accept", content={"approve": True})
        await asyncio.Event().wait()  # this client never answers

    try:
        headers = {"Authorization": f"Bearer {TOKENS['carol']}"}
        async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=60)) as http:
            async with streamable_http_client(server.url, http_client=http) as (read, write):
                async with ClientSession(read, write, elicitation_callback=elicit) as session:
                    await session.initialize()
                    call = asyncio.create_task(session.call_tool("echo", {"message": "either"}))
                    await asyncio.wait_for(listed.wait(), 20)
                    if first == "page":
                        [action] = await approvals()
                        csrf = csrf_of((await page.get(f"{base}/ui/")).text)
                        r = await page.post(f"{base}{action}", data={"csrf": csrf, "decision": "approve"})
                        assert r.status_code == 303, r.text
                    result = await asyncio.wait_for(call, 20)
        assert not result.is_error, result
        assert toolhost_meta(result)["status"] == "success"
        assert await approvals() == [], "answered, the approval left the page"
        records = [r for r in server_audit(server) if r.get("tool") == "echo" and r.get("status") == "success"]
        assert records[-1]["approved_by"] == ("approver" if first == "client" else "operator_page")
        assert records[-1]["approver"] == ("carol" if first == "client" else "alice")
    finally:
        await page.aclose()
        server.stop()


def server_audit(server) -> list[dict]:
    path = Path(server.log.name).parent / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


SEPARATED = '[policy.tools.echo]\ndecision = "ask"\napproval = "another_principal"\n\n'


async def test_a_separated_tool_is_not_approved_by_its_caller(workspace):
    """`approval = "another_principal"` with no page served: the caller's own
    client is never asked, `--yes` does not count, and the answer says who
    must approve."""
    ws = workspace(ui_plan("[]").replace('[policy.tools.echo]\ndecision = "ask"\n\n', SEPARATED))
    server = start(ws)
    asked: list[str] = []

    async def elicit(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": True})

    try:
        headers = {"Authorization": f"Bearer {TOKENS['alice']}"}
        async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=60)) as http:
            async with streamable_http_client(server.url, http_client=http) as (read, write):
                async with ClientSession(read, write, elicitation_callback=elicit) as session:
                    await session.initialize()
                    result = await session.call_tool("echo", {"message": "mine"})
    finally:
        server.stop()
    assert asked == [], "the caller's own client was asked"
    assert toolhost_meta(result)["status"] == "approval_required", result
    assert "another principal than 'alice'" in result.content[0].text
    cli = subprocess.run(
        [str(BIN), "--plan", str(ws.plan), "call", "--yes", "echo", '{"message": "cli"}'],
        capture_output=True,
        text=True,
        env=server_env(),
        timeout=60,
    )
    assert cli.returncode == 1, cli.stderr
    assert json.loads(cli.stdout)["status"] == "approval_required"
