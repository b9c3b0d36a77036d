"""Property test of the stdio line reader with arbitrary bytes: whatever a
client writes, in whatever pieces, every request gets exactly one answer
(errors included, with its id) and no notification gets one.

Seeded and bounded for CI; `TOOLHOST_LONG_TESTS=1` runs many more and
longer transcripts (and more oversize lines)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import threading

from harness import BIN, server_env

LONG = os.environ.get("TOOLHOST_LONG_TESTS") == "1"
SEED = int(os.environ.get("TOOLHOST_PROPERTY_SEED", "20261123"))
TRANSCRIPTS = 200 if LONG else 12
LINES = 150 if LONG else 40
OVERSIZE = 17 << 20  # over the server's 16 MiB line limit

INIT = {
    "jsonrpc": "2.0",
    "id": "init",
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "prop", "version": "0"}},
}


def request(rng: random.Random, rid) -> dict:
    kind = rng.randrange(4)
    if kind == 0:
        return {"jsonrpc": "2.0", "id": rid, "method": "ping"}
    if kind == 1:
        return {"jsonrpc": "2.0", "id": rid, "method": "tools/list"}
    args = {"message": "".join(rng.choice("ab\u00e9\u4e2d\"\\ ") for _ in range(rng.randrange(12)))}
    message = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": "echo", "arguments": args}}
    if kind == 3:
        message["params"]["_meta"] = {"progressToken": rng.randrange(1000)}  # rmcp's path
    return message


def line_for(rng: random.Random, rid) -> tuple[bytes, bool]:
    """One line (no newline inside) and whether it is a request owed an
    answer with id `rid`."""
    kind = rng.randrange(10)
    text = json.dumps(request(rng, rid), ensure_ascii=False).encode()
    if kind <= 3:
        return text, True  # a plain request
    if kind == 4:
        return json.dumps({"jsonrpc": "2.0", "method": "notifications/whatever", "params": {"x": 1}}).encode(), False
    if kind == 5:
        # Invalid UTF-8 somewhere after the id.
        at = rng.randrange(text.index(b'"method"'), len(text))
        return text[:at] + bytes([rng.choice([0xFF, 0xC3, 0x80, 0xFE])]) + text[at:], True
    if kind == 6:
        return text + b" " + bytes(rng.choice(b"xyz}{]0") for _ in range(rng.randrange(1, 6))), True
    if kind == 7:
        broken = dict(request(rng, rid))
        mutation = rng.randrange(3)
        if mutation == 0:
            broken["jsonrpc"] = "1.0"
        elif mutation == 1:
            broken["params"] = rng.choice([7, "x", [1]])
        else:
            broken.pop("method")
        return json.dumps(broken).encode(), True
    if kind == 8:
        # Arbitrary bytes: nobody can tell an id; at most one answer, id-less.
        return bytes(rng.choice([b for b in range(256) if b != 0x0A]) for _ in range(rng.randrange(1, 40))), False
    # A request cut short: its id is still readable.
    return text[: rng.randrange(text.index(b'"method"'), len(text) - 1)], True


def run_transcript(rng: random.Random, ws_path, oversize: bool) -> None:
    owed: set = set()
    lines = [json.dumps(INIT).encode(), b'{"jsonrpc":"2.0","method":"notifications/initialized"}']
    for n in range(LINES):
        rid = rng.choice([n, f"s{n}"])
        text, is_request = line_for(rng, rid)
        lines.append(text)
        if is_request:
            owed.add(json.dumps(rid))
    if oversize:
        lines.append(b'{"jsonrpc":"2.0","id":"big","method":"ping","params":{"pad":"' + b"y" * OVERSIZE + b'"}}')
        owed.add(json.dumps("big"))
    stream = b"\n".join(lines) + b"\n"

    proc = subprocess.Popen(
        [str(BIN), "--plan", str(ws_path / "plan.toml"), "serve"],
        cwd=ws_path,
        env=server_env({"RUST_LOG": "warn"}),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    # Arbitrary pieces: a message may be split anywhere, or share a write.
    pieces = random.Random(rng.random())

    def write() -> None:
        assert proc.stdin is not None
        at = 0
        while at < len(stream):
            size = pieces.choice([1, 7, 64, 4096, 1 << 20])
            proc.stdin.write(stream[at : at + size])
            proc.stdin.flush()
            at += size
        proc.stdin.close()

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    assert proc.stdout is not None
    out = proc.stdout.read()  # to EOF: the server exits once stdin ends
    writer.join(timeout=60)
    assert proc.wait(timeout=60) == 0

    answers: dict[str, int] = {}
    idless = 0
    for line in out.splitlines():
        message = json.loads(line)  # stdout carries JSON-RPC only
        if "method" in message:
            continue  # the server's own notifications
        if "id" not in message or message["id"] is None:
            idless += 1
            continue
        key = json.dumps(message["id"])
        answers[key] = answers.get(key, 0) + 1
    assert answers.pop(json.dumps("init"), 0) == 1
    twice = {k: v for k, v in answers.items() if v != 1}
    assert not twice, f"answered more than once: {twice}"
    assert set(answers) == owed, f"unanswered: {owed - set(answers)}; unexpected: {set(answers) - owed}"
    # Only lines without a readable id may be answered without one.
    assert idless <= len(lines) - len(owed)


def test_every_request_gets_exactly_one_answer_whatever_the_bytes(workspace):
    ws = workspace()
    rng = random.Random(SEED)
    for n in range(TRANSCRIPTS):
        # One oversize line in CI; one in every tenth transcript when long.
        oversize = n == 0 or (LONG and n % 10 == 0)
        try:
            run_transcript(rng, ws.path, oversize)
        except AssertionError as e:
            raise AssertionError(f"transcript {n} (seed {SEED}): {e}") from e
