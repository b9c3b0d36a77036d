"""MCP 2026-07-28, the stateless revision, served beside every earlier one on
stdio and streamable HTTP: `server/discover`, each request's `_meta`
naming its version and client, header checks, `tools/list` caching hints,
approvals as `input_required` results answered by a retry.

Two real clients: the official Python SDK (its `Client`, which discovers and
speaks 2026-07-28, and drives input-required retries through its
elicitation callback), and hand-written JSON-RPC with the exact messages
of the specification, for what the SDK hides (the wire shape, the headers,
a tampered retry)."""

from __future__ import annotations

import json
import queue
import secrets
import subprocess
import threading
from pathlib import Path

import httpx2
import mcp_types as types
import pytest

from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from test_stdio_differential import normalised

from harness import BIN, HttpServer, RawServer, free_port, plan, server_env, text_of, toolhost_meta, wait_until

pytestmark = pytest.mark.anyio

V2026 = "2026-07-28"
EVERY_VERSION = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", V2026]
ASK_ECHO = plan(["fixture"], '[policy.tools.echo]\ndecision = "ask"\n')


def meta(elicitation: bool = False) -> dict:
    """A 2026-07-28 request's `_meta`: version, client, capabilities."""
    capabilities = {"elicitation": {"form": {}}} if elicitation else {}
    return {
        "io.modelcontextprotocol/protocolVersion": V2026,
        "io.modelcontextprotocol/clientInfo": {"name": "raw-2026", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    }


def with_meta(params: dict | None = None, elicitation: bool = False) -> dict:
    return {**(params or {}), "_meta": meta(elicitation)}


# --- stdio ---


def test_stdio_discover_list_and_call_without_initialize(workspace):
    ws = workspace()
    server = RawServer(ws)
    try:
        discovered = server.response(server.request("server/discover", with_meta()))
        assert "error" not in discovered, discovered
        result = discovered["result"]
        assert result["supportedVersions"] == EVERY_VERSION
        assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "toolhost"
        assert "tools" in result["capabilities"]

        listed = server.response(server.request("tools/list", with_meta()))["result"]
        names = [t["name"] for t in listed["tools"]]
        assert names == sorted(names) and "echo" in names, names
        assert listed["ttlMs"] == 300_000 and listed["cacheScope"] == "private", listed
        assert listed["resultType"] == "complete"

        called = server.response(
            server.request("tools/call", with_meta({"name": "echo", "arguments": {"message": "stateless"}}))
        )["result"]
        assert called["resultType"] == "complete"
        assert called["structuredContent"]["message"] == "stateless"

        # A request without its `_meta` has no version and no client: refused
        # (rmcp checks every request of a stateless session), not run.
        bare = server.response(server.request("tools/call", {"name": "echo", "arguments": {"message": "x"}}))
        assert bare["error"]["code"] == -32602, bare
        assert "io.modelcontextprotocol/protocolVersion" in bare["error"]["message"]
    finally:
        server.kill()
    echoed = [r for r in ws.audit_records() if r.get("tool") == "echo"]
    assert len(echoed) == 1, "the bare call must not run"


def test_stdio_approval_is_an_input_required_round_trip(workspace):
    ws = workspace(ASK_ECHO)
    server = RawServer(ws)
    try:
        call = {"name": "echo", "arguments": {"message": "may I"}}
        first = server.response(server.request("tools/call", with_meta(call, elicitation=True)))["result"]
        assert first["resultType"] == "input_required", first
        question = first["inputRequests"]["approval"]
        assert question["method"] == "elicitation/create"
        assert "echo" in question["params"]["message"] and "may I" in question["params"]["message"]
        assert question["params"]["requestedSchema"]["required"] == ["approve"]
        state = first["requestState"]

        yes = {"approval": {"action": "accept", "content": {"approve": True}}}
        # The answer holds only for the call it was given for: other
        # arguments are asked about again, a tampered state too.
        other = dict(call, arguments={"message": "something else"}, inputResponses=yes, requestState=state)
        again = server.response(server.request("tools/call", with_meta(other, elicitation=True)))["result"]
        assert again["resultType"] == "input_required", again
        tampered = dict(call, inputResponses=yes, requestState=state[:-2] + "AA")
        again = server.response(server.request("tools/call", with_meta(tampered, elicitation=True)))["result"]
        assert again["resultType"] == "input_required", again

        no = {"approval": {"action": "decline"}}
        declined = dict(call, inputResponses=no, requestState=state)
        refused = server.response(server.request("tools/call", with_meta(declined, elicitation=True)))["result"]
        assert refused["isError"] is True and refused["_meta"]["toolhost"]["status"] == "policy_denied", refused

        retry = dict(call, inputResponses=yes, requestState=state)
        done = server.response(server.request("tools/call", with_meta(retry, elicitation=True)))["result"]
        assert done["resultType"] == "complete" and not done.get("isError"), done
        assert done["structuredContent"]["message"] == "may I"

        # A client that cannot show a form is not asked: the call needs approval.
        unasked = server.response(server.request("tools/call", with_meta(call)))["result"]
        assert unasked["isError"] is True
        assert unasked["_meta"]["toolhost"]["status"] == "approval_required", unasked
    finally:
        server.kill()
    decisions = [r["decision"] for r in ws.audit_records() if r.get("tool") == "echo"]
    # Each question is recorded as what it is (approval required), the
    # decline as a denial, and only the approved retry ran.
    assert decisions == ["approval_required"] * 3 + ["deny", "approved", "approval_required"], decisions


async def test_sdk_client_discovers_and_answers_approvals_on_stdio(workspace):
    ws = workspace(ASK_ECHO)
    asked = []

    async def elicit(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": True})

    params = StdioServerParameters(command=str(BIN), args=ws.args(), env=server_env(), cwd=str(ws.path))
    async with Client(params, mode="auto", elicitation_callback=elicit) as client:
        assert client.session.protocol_version == V2026
        listed = await client.list_tools()
        assert [t.name for t in listed.tools] == sorted(t.name for t in listed.tools)
        result = await client.call_tool("echo", {"message": "sdk 2026"})
    assert not result.is_error, text_of(result)
    assert result.structured_content["message"] == "sdk 2026"
    assert len(asked) == 1 and "echo" in asked[0]


def test_stdio_progress_and_cancellation(workspace):
    ws = workspace()
    server = RawServer(ws)
    try:
        progress = {"progressToken": "p-1"}
        call = {"name": "sleep", "arguments": {"ms": 700}, "_meta": {**meta(), **progress}}
        rid = server.request("tools/call", call)
        seen = []
        while True:
            message = server.read()
            if message.get("id") == rid:
                break
            seen.append(message)
        assert message["result"]["resultType"] == "complete", message
        reports = [m for m in seen if m.get("method") == "notifications/progress"]
        assert reports and reports[0]["params"]["progressToken"] == "p-1", seen

        long = server.request("tools/call", with_meta({"name": "sleep", "arguments": {"ms": 60_000}}))
        wait = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": long}}
        server.send(wait)
        after = server.response(server.request("tools/call", with_meta({"name": "echo", "arguments": {"message": "next"}})))
        assert after["result"]["structuredContent"]["message"] == "next"
        assert wait_until(
            lambda: any(r.get("tool") == "sleep" and r["status"] == "cancelled" for r in ws.audit_records()), timeout=10
        ), ws.audit_records()
    finally:
        server.kill()


# Well-formed calls whose answers must not depend on the revision.
CALL_CORPUS = [
    ("echo", {"message": "hello", "data": [1, {"k": None}]}),
    ("echo", {"message": 5}),  # fails validation
    ("echo", {"message": "x", "extra": True}),  # unknown field
    ("no_such_tool", {}),
    ("panic", {"message": "boom"}),
    ("echo", None),  # no arguments
    ("shape", {"kind": "object"}),  # schema violations, two at once
]


def corpus_answers(ws, stateless: bool) -> list[str]:
    server = RawServer(ws)
    try:
        if not stateless:
            server.initialize()
        answers = []
        for name, arguments in CALL_CORPUS:
            params = {"name": name} if arguments is None else {"name": name, "arguments": arguments}
            message = server.response(server.request("tools/call", with_meta(params) if stateless else params))
            result = message.get("result")
            if result is not None:
                # Only 2026-07-28 results say what kind of result they are.
                assert result.pop("resultType", "complete" if stateless else None) == ("complete" if stateless else None)
            message.pop("id")  # the handshake took one on the 2025 side
            answers.append(normalised(message))
        return answers
    finally:
        server.kill()


def test_a_call_corpus_answers_alike_on_2025_and_2026(workspace):
    ws = workspace()
    legacy = corpus_answers(ws, stateless=False)
    modern = corpus_answers(ws, stateless=True)
    differ = [(c, a, b) for c, a, b in zip(CALL_CORPUS, legacy, modern) if a != b]
    assert not differ, "\n".join(f"{c}:\n  2025 {a}\n  2026 {b}" for c, a, b in differ)


def test_stdio_older_revisions_are_unchanged(workspace):
    ws = workspace(ASK_ECHO)
    server = RawServer(ws)
    try:
        init = server.response(
            server.request(
                "initialize",
                {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "legacy", "version": "0"},
                },
            )
        )["result"]
        assert init["protocolVersion"] == "2025-11-25"
        assert "resultType" not in init
        server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        listed = server.response(server.request("tools/list", {}))["result"]
        assert "ttlMs" not in listed and "cacheScope" not in listed and "resultType" not in listed, listed
        called = server.response(server.request("tools/call", {"name": "deadline", "arguments": {}}))["result"]
        assert "resultType" not in called, called
        # Without elicitation the approval cannot be asked for, as before.
        ask = server.response(server.request("tools/call", {"name": "echo", "arguments": {"message": "m"}}))
        assert ask["result"]["_meta"]["toolhost"]["status"] == "approval_required", ask
        level = server.response(server.request("logging/setLevel", {"level": "debug"}))
        assert level.get("result") == {}, level
    finally:
        server.kill()


def test_stdio_initialize_naming_2026_negotiates_the_newest_handshake(workspace):
    ws = workspace()
    server = RawServer(ws)
    try:
        init = server.response(
            server.request(
                "initialize",
                {"protocolVersion": V2026, "capabilities": {}, "clientInfo": {"name": "x", "version": "0"}},
            )
        )["result"]
        assert init["protocolVersion"] == "2025-11-25", init
    finally:
        server.kill()


# --- HTTP ---


@pytest.fixture
def http_server(workspace):
    servers = []

    def start(text: str | None = None, extra_args=()) -> HttpServer:
        ws = workspace(text)
        token = secrets.token_hex(16)
        server = HttpServer(ws, f"127.0.0.1:{free_port()}", token=token, extra_args=extra_args)
        server.token = token
        server.ws = ws
        servers.append(server)
        assert server.url, f"the server did not start:\n{server.stderr()}"
        return server

    yield start
    for server in servers:
        server.stop()


def post(server, body: dict, headers: dict | None = None) -> httpx2.Response:
    """One POST as a 2026-07-28 client sends it: no session, the version
    and method in headers, a JSON or SSE answer."""
    sent = {
        "Authorization": f"Bearer {server.token}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": V2026,
        "Mcp-Method": body["method"],
    }
    name = (body.get("params") or {}).get("name")
    if name:
        sent["Mcp-Name"] = name
    sent.update(headers or {})
    return httpx2.post(server.url, json=body, headers=sent, timeout=30)


def answer(response: httpx2.Response) -> dict:
    """The JSON-RPC answer in a JSON body or in an SSE stream."""
    if response.headers.get("content-type", "").startswith("application/json"):
        return response.json()
    for line in response.text.splitlines():
        if line.startswith("data:") and line[5:].strip():
            message = json.loads(line[5:])
            if "result" in message or "error" in message:
                return message
    raise AssertionError(f"no answer in {response.text!r}")


def rpc(rid: int, method: str, params: dict) -> dict:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


def test_http_discover_and_call_without_a_session(http_server):
    server = http_server()
    discovered = post(server, rpc(1, "server/discover", with_meta()))
    assert discovered.status_code == 200, discovered.text
    assert "mcp-session-id" not in discovered.headers
    assert answer(discovered)["result"]["supportedVersions"] == EVERY_VERSION

    listed = answer(post(server, rpc(2, "tools/list", with_meta())))["result"]
    assert listed["ttlMs"] == 300_000 and listed["cacheScope"] == "private"

    called = post(server, rpc(3, "tools/call", with_meta({"name": "echo", "arguments": {"message": "no session"}})))
    assert called.status_code == 200 and "mcp-session-id" not in called.headers
    result = answer(called)["result"]
    assert result["resultType"] == "complete" and result["structuredContent"]["message"] == "no session"
    records = [r for r in server.ws.audit_records() if r.get("tool") == "echo"]
    assert records and records[-1]["status"] == "success"

    # What only a session has (its SSE stream, its end) is refused without
    # one, plainly, and the server serves on.
    auth = {"Authorization": f"Bearer {server.token}", "MCP-Protocol-Version": V2026}
    stream = httpx2.get(server.url, headers={**auth, "Accept": "text/event-stream"}, timeout=10)
    end = httpx2.delete(server.url, headers=auth, timeout=10)
    assert stream.status_code == 405 and end.status_code == 405, (stream.text, end.text)
    assert answer(post(server, rpc(4, "tools/list", with_meta())))["result"]["tools"]


def test_http_progress_rides_the_calls_stream_and_a_dropped_call_is_cancelled(http_server):
    server = http_server()
    body = rpc(1, "tools/call", {"name": "sleep", "arguments": {"ms": 700}, "_meta": {**meta(), "progressToken": 5}})
    streamed = post(server, body)
    assert streamed.headers["content-type"].startswith("text/event-stream"), streamed.headers
    events = [json.loads(line[5:]) for line in streamed.text.splitlines() if line.startswith("data:") and line[5:].strip()]
    assert any(e.get("method") == "notifications/progress" and e["params"]["progressToken"] == 5 for e in events), events
    assert answer(streamed)["result"]["resultType"] == "complete"

    # A 2026-07-28 client cancels by dropping its request's connection.
    long = rpc(2, "tools/call", with_meta({"name": "sleep", "arguments": {"ms": 60_000}}))
    with pytest.raises(httpx2.TimeoutException):
        httpx2.post(
            server.url,
            json=long,
            headers={
                "Authorization": f"Bearer {server.token}",
                "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": V2026,
                "Mcp-Method": "tools/call",
                "Mcp-Name": "sleep",
            },
            timeout=1.0,
        )
    assert wait_until(
        lambda: any(r.get("tool") == "sleep" and r["status"] == "cancelled" for r in server.ws.audit_records()),
        timeout=15,
    ), server.ws.audit_records()


def test_http_stateless_requests_take_no_session_place(http_server):
    server = http_server(extra_args=("--max-sessions", "1"))
    legacy = {
        "Authorization": f"Bearer {server.token}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }
    hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "l", "version": "0"}}
    first = httpx2.post(server.url, json=rpc(1, "initialize", hello), headers=legacy, timeout=30)
    assert first.status_code == 200 and "mcp-session-id" in first.headers
    full = httpx2.post(server.url, json=rpc(2, "initialize", hello), headers=legacy, timeout=30)
    assert full.status_code == 503, "the one session place is taken"
    called = post(server, rpc(3, "tools/call", with_meta({"name": "echo", "arguments": {"message": "still served"}})))
    assert called.status_code == 200, called.text
    assert answer(called)["result"]["structuredContent"]["message"] == "still served"


def test_http_headers_must_match_the_body(http_server):
    server = http_server()
    call = rpc(1, "tools/call", with_meta({"name": "echo", "arguments": {"message": "x"}}))
    for wrong in ({"Mcp-Method": "tools/list"}, {"Mcp-Name": "deadline"}, {"MCP-Protocol-Version": "2025-11-25"}):
        refused = post(server, call, wrong)
        assert refused.status_code == 400, (wrong, refused.status_code, refused.text)
        assert refused.json()["error"]["code"] == -32020, (wrong, refused.text)
    assert not [r for r in server.ws.audit_records() if r.get("tool") == "echo"], "a refused call never runs"
    assert post(server, call).status_code == 200


async def test_sdk_client_on_http_discovers_and_answers_approvals(http_server):
    server = http_server(ASK_ECHO)
    asked = []

    async def elicit(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": True})

    headers = {"Authorization": f"Bearer {server.token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=60)) as http:
        transport = streamable_http_client(server.url, http_client=http)
        async with Client(transport, mode="auto", elicitation_callback=elicit) as client:
            assert client.session.protocol_version == V2026
            result = await client.call_tool("echo", {"message": "over http"})
            plain = await client.call_tool("deadline", {})
    assert not result.is_error, text_of(result)
    assert result.structured_content["message"] == "over http"
    assert not plain.is_error and toolhost_meta(plain)["status"] == "success"
    assert len(asked) == 1


def test_http_origin_of_the_server_itself_is_accepted_foreign_refused(http_server):
    server = http_server()
    port = server.url.split(":")[2].split("/")[0]
    call = rpc(1, "tools/list", with_meta())
    for own in (f"http://127.0.0.1:{port}", f"http://localhost:{port}"):
        assert post(server, call, {"Origin": own}).status_code == 200, own
    for foreign in ("http://evil.example", f"http://evil.example:{port}", "http://127.0.0.1:1"):
        assert post(server, call, {"Origin": foreign}).status_code == 403, foreign


def test_http_legacy_session_sets_its_log_level(http_server):
    server = http_server()
    base = {
        "Authorization": f"Bearer {server.token}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }
    init = httpx2.post(
        server.url,
        json=rpc(
            1,
            "initialize",
            {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "l", "version": "0"}},
        ),
        headers=base,
        timeout=30,
    )
    session = init.headers["mcp-session-id"]
    assert answer(init)["result"]["capabilities"].get("logging") == {}
    headers = {**base, "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
    level = httpx2.post(server.url, json=rpc(2, "logging/setLevel", {"level": "warning"}), headers=headers, timeout=30)
    assert answer(level) == {"jsonrpc": "2.0", "id": 2, "result": {}}, level.text
    listed = answer(httpx2.post(server.url, json=rpc(3, "tools/list", {}), headers=headers, timeout=30))
    assert "ttlMs" not in listed["result"], "older revisions keep their shape"


# --- subscriptions/listen: tool list changes without a session ---

CHANGING_PEER = Path(__file__).resolve().parents[1] / "node" / "changing_tools.mjs"
CHANGING = f'[[tools]]\nprefix = "ch__"\n[tools.mcp]\ncommand = ["node", "{CHANGING_PEER}"]\n'
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"


def listen_params() -> dict:
    return with_meta({"notifications": {"toolsListChanged": True, "promptsListChanged": True}})


def until_answer(server: RawServer, rid: int) -> tuple[dict, list[dict]]:
    """The answer to `rid`, and the notifications read before it."""
    seen = []
    while True:
        message = server.read()
        if message.get("id") == rid and ("result" in message or "error" in message):
            return message, seen
        seen.append(message)


def test_stdio_a_listener_hears_tool_list_changes(workspace):
    ws = workspace(CHANGING)
    server = RawServer(ws)
    try:
        sub = server.request("subscriptions/listen", listen_params())
        ack = server.read()
        assert ack["method"] == "notifications/subscriptions/acknowledged", ack
        # Only the tool list changes here: prompts are not accepted.
        assert ack["params"]["notifications"] == {"toolsListChanged": True}, ack
        assert ack["params"]["_meta"][SUBSCRIPTION_ID] == sub, ack

        mutate = with_meta({"name": "ch__mutate", "arguments": {"add": "beta"}})
        answer_, seen = until_answer(server, server.request("tools/call", mutate))
        assert answer_["result"]["resultType"] == "complete", answer_
        changed = [m for m in seen if m.get("method") == "notifications/tools/list_changed"]
        while not changed:
            message = server.read()
            if message.get("method") == "notifications/tools/list_changed":
                changed.append(message)
        assert changed[0]["params"]["_meta"][SUBSCRIPTION_ID] == sub, changed
        listed = server.response(server.request("tools/list", with_meta()))["result"]
        assert "ch__beta" in [t["name"] for t in listed["tools"]], listed

        # A cancelled listener is told nothing more: the next change's
        # notification never comes before a later answer that follows it.
        server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": sub}})
        until_answer(server, server.request("tools/call", with_meta({"name": "ch__mutate", "arguments": {"remove": "beta"}})))
        assert wait_until(
            lambda: "ch__beta" not in [t["name"] for t in server.response(server.request("tools/list", with_meta()))["result"]["tools"]],
            timeout=10,
        )
        _, after = until_answer(server, server.request("tools/list", with_meta()))
        assert not [m for m in after if m.get("method") == "notifications/tools/list_changed"], after
    finally:
        server.kill()


def test_http_a_listener_hears_tool_list_changes_on_its_stream(http_server):
    server = http_server(CHANGING)
    heard: queue.Queue = queue.Queue()

    def listen() -> None:
        body = rpc(1, "subscriptions/listen", listen_params())
        sent = {
            "Authorization": f"Bearer {server.token}",
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "MCP-Protocol-Version": V2026,
            "Mcp-Method": "subscriptions/listen",
        }
        try:
            with httpx2.stream("POST", server.url, json=body, headers=sent, timeout=30) as response:
                heard.put(("status", response.status_code, response.headers.get("content-type", "")))
                for line in response.iter_lines():
                    if line.startswith("data:") and line[5:].strip():
                        heard.put(("message", json.loads(line[5:])))
        except Exception as e:  # noqa: BLE001: the main thread reports it
            heard.put(("error", repr(e)))

    threading.Thread(target=listen, daemon=True).start()
    status = heard.get(timeout=30)
    assert status[:2] == ("status", 200) and status[2].startswith("text/event-stream"), status
    kind, ack = heard.get(timeout=30)
    assert kind == "message" and ack["method"] == "notifications/subscriptions/acknowledged", ack

    called = answer(post(server, rpc(2, "tools/call", with_meta({"name": "ch__mutate", "arguments": {"add": "gamma"}}))))
    assert called["result"]["resultType"] == "complete", called
    while True:
        kind, message = heard.get(timeout=30)
        assert kind == "message", message
        if message.get("method") == "notifications/tools/list_changed":
            break
    assert message["params"]["_meta"][SUBSCRIPTION_ID] == 1, message
    listed = answer(post(server, rpc(3, "tools/list", with_meta())))["result"]
    assert "ch__gamma" in [t["name"] for t in listed["tools"]], listed
