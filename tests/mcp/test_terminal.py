"""Output for people: `call`, `batch` and `list` under a real pseudo-terminal,
compared with the snapshots in snapshots/terminal/ (durations normalised,
escape codes shown as <ESC>). Off a terminal the JSON must stay as it was.

Regenerate the snapshots after a deliberate change with
`UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest tests/mcp/test_terminal.py`.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import time
from pathlib import Path

import pytest

from harness import BIN, MODULES

SNAPSHOTS = Path(__file__).parent / "snapshots" / "terminal"

PLAN = '[host]\ndefault_timeout_secs = 30\n\n[[tools]]\nmodule = "fixture"\n'


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    if not BIN.is_file():
        pytest.fail(f"{BIN} is missing: build it first (cargo build --workspace)")
    if not (MODULES / "libtoolhost_fixture.so").is_file():
        pytest.fail(f"the fixture module is missing from {MODULES}: cargo build --workspace")
    (tmp_path / "toolhost.toml").write_text(PLAN)
    trust_here(tmp_path, monkeypatch)
    return tmp_path


def trust_here(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A discovered plan runs only once trusted: trusts `folder`'s plan, with
    the trust record and the state kept in that folder."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(folder / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(folder / "state"))
    trusted = subprocess.run([str(BIN), "trust"], cwd=folder, env=env(), capture_output=True, text=True)
    if trusted.returncode != 0:
        pytest.fail(f"toolhost trust failed: {trusted.stderr}")


def env(**extra: str) -> dict[str, str]:
    base = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/root"),
        "TOOLHOST_MODULE_PATH": str(MODULES),
        "TERM": "xterm-256color",
    }
    for key in ("XDG_CONFIG_HOME", "XDG_STATE_HOME"):
        if key in os.environ:
            base[key] = os.environ[key]
    base.update(extra)
    return base


def on_pty(args: list[str], cwd: Path, environ: dict[str, str], stderr_on_pty: bool = True):
    """Runs toolhost with stdout (and stderr) on a fresh pty; returns what
    the terminal received, the exit code and, if stderr was a pipe, stderr."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [str(BIN), *args],
        cwd=cwd,
        env=environ,
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=slave if stderr_on_pty else subprocess.PIPE,
    )
    os.close(slave)
    chunks = []
    deadline = time.monotonic() + 60
    while True:
        ready, _, _ = select.select([master], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            proc.kill()
            pytest.fail(f"toolhost {args} did not finish in 60 s; got {b''.join(chunks)!r}")
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: every writer of the pty is gone
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    code = proc.wait(timeout=30)
    return b"".join(chunks).decode(), code, stderr


def normalise(text: str) -> str:
    text = text.replace("\r\n", "\n")
    text = re.sub(r"\d+\.\d+ ms", "<N> ms", text)
    text = re.sub(r'"duration_ms": [0-9.e+-]+', '"duration_ms": <N>', text)
    text = re.sub(r"(\r\[\d+/\d+\] calls finished)+", "<progress>", text)
    return text.replace("\x1b", "<ESC>")


def snapshot(name: str, got: str) -> None:
    file = SNAPSHOTS / f"{name}.txt"
    if os.environ.get("UPDATE_SNAPSHOTS"):
        file.write_text(got)
        return
    if not file.exists():
        pytest.fail(f"no snapshot {file}; create it with UPDATE_SNAPSHOTS=1")
    assert got == file.read_text(), f"{name} differs from {file}:\n{got}"


CASES = {
    # name: (args, extra env, expected exit code)
    "call_success_colour": (["call", "echo", '{"message": "hello"}'], {}, 0),
    "call_success_no_color": (["call", "echo", '{"message": "hello"}'], {"NO_COLOR": "1"}, 0),
    "call_failure_no_color": (["call", "echo", '{"mesage": "typo"}'], {"NO_COLOR": "1"}, 1),
    "call_json_on_terminal": (["call", "echo", '{"message": "hello"}', "--json"], {"NO_COLOR": "1"}, 0),
    "batch_no_color": (["batch", "calls.jsonl"], {"NO_COLOR": "1"}, 1),
    "list_colour": (["list"], {}, 0),
    "list_no_color": (["list"], {"NO_COLOR": "1"}, 0),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_terminal_output_matches_its_snapshot(project: Path, name: str):
    (project / "calls.jsonl").write_text(
        '{"name": "echo", "input": {"message": "one"}}\n'
        "not json\n"
        '{"name": "echo", "input": {"message": "two"}}\n'
    )
    args, extra, want_code = CASES[name]
    out, code, _ = on_pty(args, project, env(**extra))
    assert code == want_code, out
    snapshot(name, normalise(out))


def test_off_a_terminal_the_json_is_unchanged(project: Path):
    out = subprocess.run(
        [str(BIN), "call", "echo", '{"message": "hello"}'],
        cwd=project, env=env(), capture_output=True, text=True, timeout=60,
    )
    assert out.returncode == 0, out.stderr
    # One compact JSON line, no escape codes, the ToolResult as before.
    assert out.stdout.count("\n") == 1 and "\x1b" not in out.stdout
    result = json.loads(out.stdout)
    assert result["status"] == "success" and result["output"]["message"] == "hello"


def test_log_colour_only_on_a_terminal_and_never_with_no_color(project: Path):
    bad = project / "bad.toml"
    bad.write_text('[[tools]]\nmodule = "fixture"\nconfig = {}\n[[tools]]\nmodule = "no-such-module"\n')
    args = ["--plan", str(bad), "check"]
    # stderr on the terminal: coloured log lines.
    out, code, _ = on_pty(args, project, env(RUST_LOG="info"))
    assert code == 1 and "\x1b[" in out, out
    # stderr on the terminal with NO_COLOR: plain.
    out, code, _ = on_pty(args, project, env(RUST_LOG="info", NO_COLOR="1"))
    assert code == 1 and "INFO" in out and "\x1b" not in out, out
    # stdout on a terminal, stderr a pipe: the logs stay plain.
    _, code, stderr = on_pty(args, project, env(RUST_LOG="info"), stderr_on_pty=False)
    assert code == 1 and "INFO" in stderr and "\x1b" not in stderr, stderr
