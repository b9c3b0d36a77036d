"""Shared harness for the MCP client tests: the official MCP Python SDK
driving the real `toolhost serve` binary.

The binary comes from $TOOLHOST_BIN and the module libraries from
$TOOLHOST_MODULE_PATH (both default to target/debug of this checkout).
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from mcp import ClientSession, StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parents[2]


def _target(env: str, default: Path) -> Path:
    value = os.environ.get(env)
    path = Path(value) if value else default
    return path if path.is_absolute() else (ROOT / path)


BIN = _target("TOOLHOST_BIN", ROOT / "target" / "debug" / "toolhost")
MODULES = _target("TOOLHOST_MODULE_PATH", ROOT / "target" / "debug")


@pytest.fixture
def anyio_backend():
    return "asyncio"


def have_module(name: str) -> bool:
    return (MODULES / f"libtoolhost_{name}.so").is_file()


_MOUNTS: dict[str, str | None] = {}


def _mount_problem(name: str) -> str | None:
    """Why the module cannot be mounted (per `toolhost check`), or None."""
    if name not in _MOUNTS:
        with tempfile.TemporaryDirectory() as tmp:
            plan_file = Path(tmp) / "plan.toml"
            plan_file.write_text(f'[[tools]]\nmodule = "{name}"\n')
            out = subprocess.run(
                [str(BIN), "--plan", str(plan_file), "check"],
                cwd=tmp,
                env=server_env(),
                capture_output=True,
                text=True,
                timeout=60,
            )
            _MOUNTS[name] = None if out.returncode == 0 else (out.stderr + out.stdout).strip()[-500:]
    return _MOUNTS[name]


def need_module(name: str) -> None:
    """Fails the test, saying why, when a module is not built or does not
    mount: a test whose setup is broken must not pass as skipped."""
    if not have_module(name):
        pytest.fail(
            f"module '{name}' is not built ({MODULES}/libtoolhost_{name}.so is missing): "
            "build the workspace first (cargo xtask test does)"
        )
    problem = _mount_problem(name)
    if problem is not None:
        pytest.fail(f"module '{name}' does not mount: {problem}")


def plan_modules(text: str) -> list[str]:
    """The modules a plan names by `module = "…"`."""
    return re.findall(r'^\s*module\s*=\s*"([^"]+)"', text, flags=re.MULTILINE)


# toolhost keeps state (stores, tokens, kept outputs) in the user's state
# folder and trust records in the user's config folder: the servers these
# tests start get folders of this run's own, so the suite leaves nothing in
# the home folder and no record from an earlier run changes what a test sees.
_OWN = tempfile.mkdtemp(prefix="toolhost-mcp-tests-")
os.environ.setdefault("XDG_STATE_HOME", os.path.join(_OWN, "state"))
os.environ.setdefault("XDG_CONFIG_HOME", os.path.join(_OWN, "config"))


def server_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {
        "TOOLHOST_MODULE_PATH": str(MODULES),
        "RUST_LOG": os.environ.get("RUST_LOG", "info"),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/root"),
        "XDG_STATE_HOME": os.environ["XDG_STATE_HOME"],
        "XDG_CONFIG_HOME": os.environ["XDG_CONFIG_HOME"],
    }
    env.update(extra or {})
    return env


class Workspace:
    """A temp folder holding a plan (and the files tools work on)."""

    def __init__(self, path: Path, plan: str):
        self.path = path
        self.plan = path / "plan.toml"
        self.audit = path / "audit.jsonl"
        self.plan.write_text(plan)

    def audit_records(self) -> list[dict]:
        if not self.audit.exists():
            return []
        return [json.loads(line) for line in self.audit.read_text().splitlines() if line.strip()]

    def args(self, *more: str) -> list[str]:
        return ["--plan", str(self.plan), "serve", *more]


def plan(modules: list[str], extra: str = "") -> str:
    """A plan with an audit log, the given modules, and `extra` TOML after."""
    text = '[host]\ndefault_timeout_secs = 60\ncancel_grace_ms = 1500\naudit_log = "audit.jsonl"\n\n'
    for module in modules:
        text += f'[[tools]]\nmodule = "{module}"\n\n'
    return text + extra


@pytest.fixture
def workspace(tmp_path: Path):
    if not BIN.is_file():
        pytest.fail(f"{BIN} is missing: build it first (cargo build -p toolhost -p toolhost-fixture)")

    def make(text: str | None = None) -> Workspace:
        """A workspace for `text` (default: the fixture module); every module
        the plan names must be built and mount, or the test fails."""
        text = text if text is not None else plan(["fixture"])
        for module in plan_modules(text):
            need_module(module)
        return Workspace(tmp_path, text)

    return make


@asynccontextmanager
async def stdio_session(ws: Workspace, **session_args):
    """An initialized ClientSession over `toolhost serve` on stdio."""
    params = StdioServerParameters(
        command=str(BIN), args=ws.args(), env=server_env(), cwd=str(ws.path)
    )
    errlog = open(ws.path / "server.log", "a")
    try:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write, **session_args) as session:
                result = await session.initialize()
                yield session, result
    finally:
        errlog.close()


def text_of(result) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def toolhost_meta(result) -> dict:
    return (result.meta or {}).get("toolhost", {})


# --- raw processes (for what the SDK hides: stdout purity, disconnects) ---


class RawServer:
    """`toolhost serve` on stdio, spoken to with hand-written JSON lines."""

    def __init__(self, ws: Workspace, env: dict[str, str] | None = None):
        # Logs go to a file: a pipe nobody reads would stall a chatty server.
        self.log = ws.path / f"raw-server-{time.monotonic_ns()}.log"
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                [str(BIN), *ws.args()],
                cwd=ws.path,
                env=server_env(env),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
            )
        self.next_id = 1

    def stderr(self) -> str:
        """What the server logged so far."""
        return self.log.read_text(errors="replace")

    def send(self, message: dict) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def request(self, method: str, params: dict | None = None) -> int:
        rid = self.next_id
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return rid

    def read(self) -> dict:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, "the server closed stdout"
        return json.loads(line)

    def response(self, rid: int) -> dict:
        while True:
            message = self.read()
            if message.get("id") == rid and ("result" in message or "error" in message):
                return message

    def initialize(self) -> dict:
        rid = self.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw-test", "version": "0"},
            },
        )
        result = self.response(rid)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return result

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    def wait_exit(self, timeout: float) -> int | None:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


# --- processes on the machine ---


def processes_with(marker: str) -> list[int]:
    """Pids whose command line contains `marker` (this test process excluded)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # Zombies have exited; only their parent's bookkeeping is left.
        state = stat.rsplit(")", 1)[-1].split()[0] if ")" in stat else ""
        if marker in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def wait_until(predicate, timeout: float, step: float = 0.05) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(step)
    return predicate()


async def wait_until_async(predicate, timeout: float, step: float = 0.05) -> bool:
    """`wait_until` for async tests: keeps the event loop (and so the MCP
    session's own messages, such as notifications/cancelled) running."""
    import anyio

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        await anyio.sleep(step)
    return predicate()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class HttpServer:
    """`toolhost serve --http ADDR` in the background."""

    def __init__(self, ws: Workspace, addr: str, token: str | None = None, extra_env=None, extra_args=()):
        env = dict(extra_env or {})
        if token is not None:
            env["TOOLHOST_TOKEN"] = token
        self.log = open(ws.path / "http-server.log", "w+")
        self.proc = subprocess.Popen(
            [str(BIN), *ws.args("--http", addr, *extra_args)],
            cwd=ws.path,
            env=server_env(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self.log,
        )
        self.url = None
        end = time.monotonic() + 10
        while time.monotonic() < end and self.url is None:
            if self.proc.poll() is not None:
                break
            self.log.seek(0)
            match = re.search(r"at (http://\S+)", self.log.read())
            if match:
                self.url = match.group(1)
            else:
                time.sleep(0.05)

    def stderr(self) -> str:
        self.log.seek(0)
        return self.log.read()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def toolhost_version() -> str:
    out = subprocess.run([str(BIN), "--version"], capture_output=True, text=True, check=True).stdout
    return out.split()[-1]



