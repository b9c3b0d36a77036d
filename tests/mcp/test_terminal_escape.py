"""What a mounted MCP server wrote, shown to a person on a real terminal:
`list`, `describe`, `check` and `call` under a pseudo-terminal, against the
hostile server of host/tests/mcp_peer (tool names that are escape
sequences and newlines, a description and an answer holding an OSC title
sequence, SGR colours, a clear-screen, a C1 CSI, a carriage return and a
BIDI override). Nothing raw reaches the terminal: the snapshots in
snapshots/terminal/ show each as a visible escape. Off a terminal the
JSON stays exact.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from harness import BIN, ROOT
from test_terminal import env, normalise, on_pty, snapshot, trust_here

SERVER = ROOT / "host" / "tests" / "mcp_peer" / "hostile_server.py"

# The raw sequences the server sends; none may reach the terminal.
RAW = ["\x1b", "\x07", "\x9b", "\u202e", "\rFORGED-ROW"]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    if not BIN.is_file():
        pytest.fail(f"{BIN} is missing: build it first (cargo build --workspace)")
    if not SERVER.is_file():
        pytest.fail(f"{SERVER} is missing")
    command = json.dumps(["python3", str(SERVER), "bad_names"])
    (tmp_path / "toolhost.toml").write_text(
        f'[host]\ndefault_timeout_secs = 30\n\n[[tools]]\nprefix = "h_"\n[tools.mcp]\ncommand = {command}\n'
    )
    trust_here(tmp_path, monkeypatch)
    return tmp_path


CASES = {
    # name: (args, expected exit code)
    "hostile_list": (["list"], 0),
    "hostile_describe": (["describe", "h_good_tool"], 0),
    "hostile_call": (["call", "h_good_tool", "{}"], 0),
    "hostile_check": (["check"], 0),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_text_is_escaped_on_a_terminal(project: Path, name: str):
    args, want_code = CASES[name]
    # NO_COLOR: any escape on the terminal is the server's, not ours.
    out, code, stderr = on_pty(args, project, env(NO_COLOR="1"), stderr_on_pty=False)
    assert code == want_code, out + stderr
    for raw in RAW:
        assert raw not in out, f"{raw!r} reached the terminal: {out!r}"
        assert raw not in stderr, f"{raw!r} reached stderr: {stderr!r}"
    got = normalise(out)
    # The check report names the checkout's paths and the module path the
    # run was given: keep the snapshot portable.
    got = got.replace(str(ROOT), "<ROOT>").replace(str(project), "<PROJECT>")
    got = "\n".join(line for line in got.split("\n") if not line.startswith("module_path:"))
    snapshot(name, got)


def test_hostile_list_is_one_row_per_tool(project: Path):
    out, code, _ = on_pty(["list"], project, env(NO_COLOR="1"), stderr_on_pty=False)
    assert code == 0, out
    rows = [line for line in out.replace("\r\n", "\n").splitlines() if line]
    assert len(rows) == 2 and rows[1].startswith("h_good_tool"), rows


def test_off_a_terminal_the_json_is_exact(project: Path):
    for args in (["list", "--json"], ["describe", "h_good_tool"], ["call", "h_good_tool", "{}"]):
        out = subprocess.run(
            [str(BIN), *args], cwd=project, env=env(), capture_output=True, text=True, timeout=60
        )
        assert out.returncode == 0, out.stderr
        value = json.loads(out.stdout)
        text = json.dumps(value)
        if args[0] == "list":
            assert "\u202eevil" in value[0]["summary"], value
        elif args[0] == "describe":
            assert "\x1b]0;pwned\x07" in value["description"], value
        else:
            assert value["output"].startswith("out\x1b]0;pwned\x07\x1b[2J\x9b31m\n"), text
