"""The README's "Connecting agents" snippets work as written: each JSON and
TOML snippet parses, and what it names (the stdio command, or the HTTP URL
with its token header) is run against the real binary through the official
MCP Python SDK, from a folder with no plan (the built-in default plan, with
the modules found beside the binary, as an agent would start it)."""

from __future__ import annotations

import json
import os
import re
import secrets
import shlex
import subprocess
import time
import tomllib
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx2
import pytest

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from harness import BIN, ROOT, free_port, text_of

pytestmark = pytest.mark.anyio

MARKER = re.compile(r"<!-- agent-config: ([\w-]+) -->\n```(\w+)\n(.*?)\n```", re.S)

WANTED = {
    "serve-http", "claude-code-stdio", "claude-code-http", "codex-stdio", "codex-http",
    "cursor-stdio", "cursor-http", "vscode-stdio", "vscode-http", "goose-stdio", "goose-http",
}


def snippets() -> dict[str, tuple[str, str]]:
    text = (ROOT / "README.md").read_text()
    found = {name: (lang, body) for name, lang, body in MARKER.findall(text)}
    assert set(found) == WANTED, f"README agent snippets: got {sorted(found)}, want {sorted(WANTED)}"
    return found


def parse(name: str) -> dict:
    lang, body = snippets()[name]
    if lang == "json":
        return json.loads(body)
    if lang == "toml":
        return tomllib.loads(body)
    raise AssertionError(f"{name}: a {lang} snippet is not parsed here")


def server_entry(config: dict) -> dict:
    if "mcpServers" in config:
        return config["mcpServers"]["toolhost"]
    if "servers" in config:
        return config["servers"]["toolhost"]
    return config["mcp_servers"]["toolhost"]


@pytest.fixture
def agent_env(tmp_path: Path):
    """A folder with no plan in or above it (tmp), and a PATH on which
    `toolhost` is the binary under test, as an installed one would be."""
    if not BIN.is_file():
        pytest.fail(f"{BIN} is missing: cargo build --workspace")
    for module in ("filesystem", "bash", "web"):
        if not (BIN.parent / f"libtoolhost_{module}.so").is_file():
            pytest.fail(f"libtoolhost_{module}.so is missing beside {BIN}: cargo build --workspace")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "toolhost").symlink_to(BIN)
    project = tmp_path / "project"
    project.mkdir()
    (project / "hello.txt").write_text("hello from the README test\n")
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": f"{bindir}:/usr/bin:/bin", "HOME": str(home)}
    return project, env


async def use_tools(session: ClientSession) -> None:
    await session.initialize()
    names = {t.name for t in (await session.list_tools()).tools}
    assert {"read_file", "bash", "web_fetch"} <= names, names
    result = await session.call_tool("read_file", {"file_path": "hello.txt"})
    assert not result.is_error, text_of(result)
    assert "hello from the README test" in text_of(result)


@pytest.mark.parametrize("name", ["claude-code-stdio", "codex-stdio", "cursor-stdio", "vscode-stdio"])
async def test_stdio_snippet_starts_a_working_server(agent_env, name):
    project, env = agent_env
    entry = server_entry(parse(name))
    assert entry.get("type", "stdio") == "stdio"
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env=env, cwd=str(project))
    with open(project / f"{name}.log", "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await use_tools(session)


async def test_goose_and_claude_one_liners_name_the_same_command(agent_env):
    text = (ROOT / "README.md").read_text()
    assert 'goose session --with-extension "toolhost serve"' in text
    assert "claude mcp add toolhost -- toolhost serve" in text
    _, body = snippets()["goose-stdio"]
    assert re.search(r"^\s+cmd: toolhost$", body, re.M) and re.search(r"^\s+args: \[serve\]$", body, re.M)
    _, body = snippets()["goose-http"]
    assert "uri: http://127.0.0.1:8765/mcp" in body
    # The one-liner's command, run as goose would (split like a shell).
    project, env = agent_env
    command, *args = shlex.split("toolhost serve")
    params = StdioServerParameters(command=command, args=args, env=env, cwd=str(project))
    with open(project / "goose.log", "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await use_tools(session)


@asynccontextmanager
async def readme_http_server(project: Path, env: dict[str, str], token: str):
    """The README's `serve --http` command, on a free loopback port."""
    _, body = snippets()["serve-http"]
    argv = shlex.split(body.strip())
    assert argv[:3] == ["toolhost", "serve", "--http"] and argv[3] == "127.0.0.1:8765", argv
    port = free_port()
    argv[3] = f"127.0.0.1:{port}"
    log = open(project / "http.log", "w+")
    proc = subprocess.Popen(
        argv, cwd=project, env={**env, "TOOLHOST_TOKEN": token},
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
    )
    try:
        deadline = time.monotonic() + 20
        while "serving MCP over streamable HTTP" not in (log.seek(0) or log.read()):
            assert proc.poll() is None, f"the server exited: {log.read()}"
            assert time.monotonic() < deadline, "the server did not start in 20 s"
            time.sleep(0.05)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()


def resolve_headers(name: str, token: str) -> tuple[str, dict[str, str]]:
    """The URL and headers the agent would send, its placeholders filled
    the way that agent fills them (env var, or VS Code's prompt)."""
    entry = server_entry(parse(name))
    if "bearer_token_env_var" in entry:  # Codex
        assert entry["bearer_token_env_var"] == "TOOLHOST_TOKEN"
        return entry["url"], {"Authorization": f"Bearer {token}"}
    headers = {}
    for key, value in entry["headers"].items():
        for placeholder in ("${TOOLHOST_TOKEN}", "${env:TOOLHOST_TOKEN}", "${input:toolhost-token}"):
            value = value.replace(placeholder, token)
        assert "${" not in value, f"{name}: unresolved placeholder in {value}"
        headers[key] = value
    return entry["url"], headers


@pytest.mark.parametrize("name", ["claude-code-http", "codex-http", "cursor-http", "vscode-http"])
async def test_http_snippet_reaches_the_server_with_its_token(agent_env, name):
    project, env = agent_env
    token = secrets.token_hex(16)
    url, headers = resolve_headers(name, token)
    assert headers == {"Authorization": f"Bearer {token}"}, headers
    async with readme_http_server(project, env, token) as port:
        parts = urlsplit(url)
        assert parts.hostname == "127.0.0.1" and parts.port == 8765 and parts.path == "/mcp", url
        url = urlunsplit(parts._replace(netloc=f"127.0.0.1:{port}"))
        # Without the header the server refuses: the snippet's header matters.
        async with httpx2.AsyncClient() as client:
            refused = await client.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
            assert refused.status_code == 401, refused.text
        async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30)) as client:
            async with streamable_http_client(url, http_client=client) as (read, write, *_):
                async with ClientSession(read, write) as session:
                    await use_tools(session)
