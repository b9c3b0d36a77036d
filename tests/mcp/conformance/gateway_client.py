"""The MCP client the conformance suite's client scenarios drive: toolhost's
gateway, mounting the scenario's server (the URL the suite appends to the
command line) as `[tools.mcp] url` and calling the tool the scenario is
about with `toolhost call`, as an agent behind the gateway would.

Run by test_conformance.py as `python gateway_client.py <server-url>`, with
MCP_CONFORMANCE_SCENARIO naming the scenario and TOOLHOST_BIN the binary."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

# The call each scenario is about (none: mounting the server, which
# initializes and lists its tools, is the whole scenario).
CALLS = {
    "tools_call": ("add_numbers", {"a": 2, "b": 3}),
    "elicitation-sep1034-client-defaults": ("test_client_elicitation_defaults", {}),
    "sse-retry": ("test_reconnection", {}),
}


def main() -> int:
    url = sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    binary = os.environ["TOOLHOST_BIN"]
    with tempfile.TemporaryDirectory(prefix="toolhost-conformance-client-") as tmp:
        plan = Path(tmp) / "plan.toml"
        plan.write_text(f"[[tools]]\n[tools.mcp]\nurl = {json.dumps(url)}\n")
        tool, arguments = CALLS.get(scenario, (None, None))
        command = [binary, "--plan", str(plan)]
        command += ["call", tool, json.dumps(arguments)] if tool else ["check"]
        done = subprocess.run(command, cwd=tmp, capture_output=True, text=True, timeout=120)
        sys.stdout.write(done.stdout)
        sys.stderr.write(done.stderr)
        return done.returncode


if __name__ == "__main__":
    sys.exit(main())
