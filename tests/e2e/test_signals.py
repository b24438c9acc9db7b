"""SIGTERM and SIGHUP stop a headless turn as ctrl+c does (issue 23, item 8).

They killed ``deferchat ask`` while an answer streamed: the partial answer on screen was lost and
the turn was left ``running``. Now SIGINT, SIGTERM and SIGHUP each stop the turn (the partial
answer kept and stored, the turn ``stopped``) and the command exits ``128 + the signal``: 130,
143, 129. Real processes against the loopback streaming server, signalled at random points of
the stream: before the first byte, mid-answer, mid-tool-call, with the terminal gone.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.store import Store
from tests.helpers import subprocess_env
from tests.streaming_server import markdown_answer, serve

pytestmark = pytest.mark.slow

LONG = {"parts": [{"markdown": 1500, "seed": 3}], "chunk_delay": 0.01}
SLOW_START = {"parts": [{"text": "late"}], "first_byte_delay": 20}
SIGNALS = {"SIGINT": signal.SIGINT, "SIGTERM": signal.SIGTERM, "SIGHUP": signal.SIGHUP}


def start_cli(home: Path, cwd: Path, *argv: str) -> subprocess.Popen[bytes]:
    """``deferchat ARGV`` as a process of its own, its stdout readable without blocking."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "core.cli", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=subprocess_env(home),
        cwd=str(cwd),
    )
    assert proc.stdout is not None
    os.set_blocking(proc.stdout.fileno(), False)
    return proc


def start_ask(server: Any, home: Path, cwd: Path, *extra: str) -> subprocess.Popen[bytes]:
    """``deferchat ask`` of a long answer from the loopback server's Chat Completions."""
    url = server.url_for("openai-chat")
    return start_cli(
        home,
        cwd,
        "ask",
        "--provider",
        "openai-chat",
        "--model",
        "m",
        "--base-url",
        url,
        "--roster",
        "production",
        *extra,
        "write me a long answer",
    )


def read_until(proc: subprocess.Popen[bytes], want: int, limit: float = 30) -> bytes:
    assert proc.stdout is not None
    shown = b""
    deadline = time.monotonic() + limit
    while len(shown) < want and time.monotonic() < deadline and proc.poll() is None:
        shown += proc.stdout.read() or b""
        time.sleep(0.01)
    return shown


def stopped_turn(home: Path) -> tuple[str, list[Any]]:
    store = Store(home / "deferchat.db")
    [chat] = store.chats()
    turns = store.db.execute("select status from turns where chat_id = ?", [chat.id]).fetchall()
    assert [t[0] for t in turns] == ["stopped"], turns
    return chat.id, store.messages(chat.id)


@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(name=st.sampled_from(sorted(SIGNALS)), after=st.integers(min_value=1, max_value=1500))
def test_a_signal_mid_answer_stops_the_turn_and_keeps_the_partial_answer(
    home: Path, tmp_path: Path, name: str, after: int
) -> None:
    for old in home.glob("deferchat.db*"):
        old.unlink()
    sig = SIGNALS[name]
    with serve([LONG]) as server:
        proc = start_ask(server, home, tmp_path)
        try:
            shown = read_until(proc, after)
            assert len(shown) >= after, "no streamed text on stdout"
            proc.send_signal(sig)
            rest, err = proc.communicate(timeout=20)
        finally:
            if proc.poll() is None:
                proc.kill()
        [record] = server.wait_for(1, outcome=True, timeout=5)
    assert proc.returncode == 128 + sig, (name, proc.returncode, err.decode())
    assert record["outcome"] == "client_closed"  # the stream was closed, not left to run
    assert b"[stopped: the partial answer is kept]" in err and b"Traceback" not in err
    printed = (shown + rest).decode().rstrip("\n")
    _, messages = stopped_turn(home)
    assert [m.role for m in messages] == ["user", "assistant"]
    kept = messages[1].blocks[0]["text"]
    assert kept.startswith(printed[:after]) and markdown_answer(1500, seed=3).startswith(kept)


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP"])
def test_a_signal_before_the_first_byte_stops_the_turn(home: Path, tmp_path: Path, name: str) -> None:
    sig = SIGNALS[name]
    with serve([SLOW_START]) as server:
        proc = start_ask(server, home, tmp_path)
        try:
            deadline = time.monotonic() + 30
            while not server.requests and time.monotonic() < deadline:
                time.sleep(0.02)
            assert server.requests, "the request never reached the server"
            proc.send_signal(sig)
            _, err = proc.communicate(timeout=20)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 128 + sig, err.decode()
    _, messages = stopped_turn(home)
    assert [m.role for m in messages] == ["user"]  # the owner's message is kept


def test_a_hangup_with_the_terminal_gone_still_stops_and_stores(home: Path, tmp_path: Path) -> None:
    """The window closed: stdout's reader is gone, then SIGHUP comes. Nothing crashes on the
    writes that fail, and the turn is stopped and stored."""
    with serve([LONG]) as server:
        proc = start_ask(server, home, tmp_path)
        try:
            shown = read_until(proc, 200)
            assert len(shown) >= 200
            assert proc.stdout is not None
            proc.stdout.close()
            time.sleep(0.2)
            proc.send_signal(signal.SIGHUP)
            proc.wait(timeout=20)
            err = proc.stderr.read() if proc.stderr else b""
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 128 + signal.SIGHUP, err.decode()
    assert b"Traceback" not in err
    _, messages = stopped_turn(home)
    assert messages[-1].role == "assistant" and messages[-1].blocks[0]["text"].startswith(shown.decode()[:200])


def test_a_signal_while_a_tool_runs_settles_the_call(home: Path, tmp_path: Path) -> None:
    """SIGTERM while an MCP write is in flight: the turn stops, the write is settled as
    ``tool.outcome_unknown`` (never run again), and the next request would be valid."""
    from tests.helpers import slow_write_chat

    written, _release = slow_write_chat(tmp_path, agent="sig", answer="never reached")
    proc = start_cli(
        home,
        tmp_path,
        "ask",
        "--roster",
        str(tmp_path / "roster.json"),
        "--mcp-config",
        str(tmp_path / "mcp.json"),
        "--script",
        str(tmp_path / "script.json"),
        "--approve",
        "yes",
        "write it",
    )
    try:
        deadline = time.monotonic() + 60
        while not (written.exists() and written.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert written.exists(), "the write never started"
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, err.decode()
    store = Store(home / "deferchat.db")
    [chat] = store.chats()
    [inv] = store.invocations(chat.id)
    assert (inv.status, inv.error_code) == ("unknown", "tool.outcome_unknown")
    turns = store.db.execute("select status from turns where chat_id = ?", [chat.id]).fetchall()
    assert [t[0] for t in turns] == ["stopped"]
    results = [b for m in store.messages(chat.id) if m.role == "user" for b in m.blocks if b["type"] == "tool_result"]
    assert [r["tool_use_id"] for r in results] == ["toolu_w1"]
    assert json.dumps(results[0]).count("tool.outcome_unknown") == 1
