"""A process killed with kill -9 while a write runs, then resumed: the write does not run twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers import slow_write_chat, subprocess_env

ROOT = Path(__file__).resolve().parents[2]


def _deferchat(*args: str) -> list[str]:
    return [sys.executable, "-c", "import sys; from tui.main import main; sys.exit(main())", *args]


def test_kill_9_mid_write_then_resume_never_runs_the_write_twice(tmp_path, home):
    env = subprocess_env(home)
    written, release = slow_write_chat(tmp_path, agent="crash", answer="I could not confirm the write.")
    common = ["--roster", str(tmp_path / "roster.json"), "--mcp-config", str(tmp_path / "mcp.json")]
    proc = subprocess.Popen(
        _deferchat(
            "ask", "write once", *common, "--script", str(tmp_path / "script.json"), "--approve", "yes", "--json"
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=tmp_path,
        start_new_session=True,
        text=True,
    )
    chat_id = None
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (written.exists() and written.read_text()):
            time.sleep(0.05)
        assert written.read_text() == "once\n", "the write never started"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # deferchat and its MCP server, mid-call
        out, _ = proc.communicate(timeout=30)
    for line in out.splitlines():
        event = json.loads(line)
        if event.get("type") == "tool.started":
            chat_id = event["chat_id"]
    assert chat_id, "the tool never started"
    release.touch()  # a re-run would return at once: it must not happen anyway

    r = subprocess.run(
        _deferchat("resume", chat_id, "--approve", "yes", "--json"),
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    events = [json.loads(x) for x in r.stdout.splitlines()]
    failed = [e for e in events if e["type"] == "tool.failed"]
    assert failed and failed[0]["code"] == "tool.outcome_unknown" and failed[0]["call_id"] == "toolu_w1"
    assert not any(e["type"] == "tool.started" for e in events)
    assert written.read_text() == "once\n"  # exactly once
    assert events[-1]["type"] in ("turn.completed", "server.status")
