"""A session's background jobs end with it: when an HTTP session is
DELETEd, or expires idle, every module is told (a reserved request through
the SDK), and bash stops that session's jobs while another session's live
on. Processes are watched by pid through a pidfd, which becomes readable
when the process exits: no sleeps."""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import uuid

import httpx2
import pytest

from harness import processes_with, wait_until
from test_http_abuse import auth, call, open_session, rpc_messages, start

PLAN = '[[tools]]\nmodule = "filesystem"\n[tools.config]\nallowed_read_paths = ["."]\n\n[[tools]]\nmodule = "bash"\n'
# The same, bash in a worker process: the notice reaches it through the
# worker's ordinary call path.
ISOLATED = PLAN + 'isolation = "process"\n'


def result_of(response) -> dict:
    for message in rpc_messages(response):
        if "result" in message:
            return message["result"]
    raise AssertionError(response.text)


class Job:
    """A background `sleep` a session started, found by its unique duration."""

    def __init__(self, client: httpx2.Client, url: str, sid: str):
        self.marker = f"sleep 4{uuid.uuid4().int % 10**6:06d}.5"
        started = result_of(call(client, url, sid, "bash", {"command": f"exec {self.marker}", "run_in_background": True}))
        assert not started["isError"], started
        self.id = started["structuredContent"]["id"]
        # Readiness: the shell has exec'd into the sleep.
        assert wait_until(lambda: len(processes_with(self.marker)) == 1, 15), f"{self.marker} never started"
        [self.pid] = processes_with(self.marker)
        self.fd = os.pidfd_open(self.pid)
        assert processes_with(self.marker) == [self.pid], "the pid was reused before the pidfd held it"

    def ended_within(self, timeout: float) -> bool:
        readable, _, _ = select.select([self.fd], [], [], timeout)
        return bool(readable)

    def close(self) -> None:
        os.close(self.fd)


def told_modules(server, sid: str) -> bool:
    """The host's line once every module has handled the session's end."""
    return any(
        f'session="http-{sid}"' in line and "its modules were told" in line for line in server.stderr().splitlines()
    )


def delete(client: httpx2.Client, url: str, sid: str) -> None:
    response = client.delete(url, headers={**auth(), "mcp-session-id": sid, "mcp-protocol-version": "2025-06-18"})
    assert response.status_code in (200, 202, 204), (response.status_code, response.text)


@contextlib.contextmanager
def two_sessions_with_jobs(ws, *serve_args: str):
    """A started server, an HTTP client, and sessions A and B each with a
    background job: yields (server, client, (a, job_a), (b, job_b)), and
    closes the jobs' pidfds and stops the server after."""
    server = start(ws, *serve_args)
    jobs = []
    try:
        with httpx2.Client(timeout=30) as client:
            sessions = []
            for _ in range(2):
                sid = open_session(client, server.url)
                jobs.append(Job(client, server.url, sid))
                sessions.append((sid, jobs[-1]))
            yield server, client, sessions[0], sessions[1]
    finally:
        for job in jobs:
            job.close()
        server.stop()


@pytest.mark.parametrize("plan", [PLAN, ISOLATED], ids=["in-process", "isolated"])
def test_deleting_a_session_ends_its_jobs_and_only_its(workspace, plan):
    with two_sessions_with_jobs(workspace(plan)) as (server, client, (a, job_a), (b, job_b)):
        delete(client, server.url, a)
        assert job_a.ended_within(15), f"A's job (pid {job_a.pid}) outlived A's DELETE\n{server.stderr()}"
        assert wait_until(lambda: told_modules(server, a), 15), server.stderr()
        assert not job_b.ended_within(0), "B's job ended with A's session"
        # B's session still sees and reads its job.
        out = result_of(call(client, server.url, b, "bash_output", {"id": job_b.id}, rid=5))
        assert not out["isError"], out
        assert out["structuredContent"]["running"] is True, out
        delete(client, server.url, b)
        assert job_b.ended_within(15), "B's job outlived B's DELETE"


def test_an_idle_session_that_expires_ends_its_jobs_and_only_its(workspace):
    with two_sessions_with_jobs(workspace(PLAN), "--session-idle-secs", "2") as (server, client, (a, job_a), (b, job_b)):
        # A goes quiet; B keeps its session alive with a request every
        # 0.3 s, spent waiting on A's job's pidfd.
        ended = False
        for rid in range(10, 110):
            out = result_of(call(client, server.url, b, "bash_output", {"id": job_b.id}, rid=rid))
            assert not out["isError"], out
            if job_a.ended_within(0.3):
                ended = True
                break
        assert ended, f"A's job (pid {job_a.pid}) outlived A's idle expiry\n{server.stderr()}"
        assert wait_until(lambda: told_modules(server, a), 15), server.stderr()
        assert not job_b.ended_within(0), "B's job ended with A's session"
        out = result_of(call(client, server.url, b, "bash_output", {"id": job_b.id}, rid=200))
        assert out["structuredContent"]["running"] is True, out


def test_a_crashed_worker_is_not_restarted_to_hear_of_a_session_end(workspace):
    # A CLI process is one session, ended as the process exits: an isolated
    # module whose worker crashed holds nothing of it, so no worker is
    # started (with crash backoff) just to be told.
    from harness import BIN, MODULES, server_env

    crashy = MODULES / "libtoolhost_fixture_crashy.so"
    assert crashy.is_file(), f"{crashy} is missing: build it (cargo build -p toolhost-fixture-crashy)"
    ws = workspace(f'[[tools]]\npath = "{crashy}"\nprefix = "c_"\n')
    out = subprocess.run(
        [str(BIN), "--plan", str(ws.plan), "call", "c_segfault", "{}"],
        cwd=ws.path, env=server_env(), capture_output=True, text=True, timeout=60,
    )
    assert "module_crashed" in out.stdout, (out.stdout, out.stderr)
    assert "restarted the isolated module's worker" not in out.stderr, out.stderr


def test_a_stdio_client_and_a_cli_process_end_their_session_as_they_exit(workspace):
    from harness import BIN, RawServer, server_env

    ws = workspace(PLAN)
    server = RawServer(ws)
    try:
        server.initialize()
        rid = server.request("tools/call", {"name": "bash", "arguments": {"command": "true"}})
        assert not server.response(rid)["result"]["isError"]
        server.close_stdin()
        assert server.wait_exit(30) == 0, server.stderr()
        told = f'session="proc-{server.proc.pid}-'
        assert any(told in line and "its modules were told" in line for line in server.stderr().splitlines()), server.stderr()
    finally:
        server.kill()
    out = subprocess.run(
        [str(BIN), "--plan", str(ws.plan), "call", "bash", '{"command": "true"}'],
        cwd=ws.path, env=server_env(), capture_output=True, text=True, timeout=60,
    )
    assert out.returncode == 0, out.stderr
    # Once: the host's cleanup runs on exit and on drop, the session ends once.
    told = [line for line in out.stderr.splitlines() if "its modules were told" in line]
    assert len(told) == 1 and "modules=2" in told[0] and 'session="proc-' in told[0], out.stderr
