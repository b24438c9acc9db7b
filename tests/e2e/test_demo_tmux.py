"""Three of issue 21's everyday asks in the real ``deferchat`` binary, in tmux, on a fresh home
with no key (the offline demo, the production roster, the demo MCP servers) and the demo's
clock pinned: the time in Tokyo is Tokyo's, the Documents folder lists its files, and a reply
to the Acme invoice finds the thread, asks to send from the work account to Acme's billing
address and, once allowed, says it replied. tmux runs on a private socket."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from tests.helpers import subprocess_env
from tests.tui.test_tmux_smoke import Tmux, deferchat_binary

NOW = "2026-12-02T09:30:00+00:00"  # a Wednesday morning, 18:30 in Tokyo


def _wait(tmux: Tmux, *texts: str, timeout: float = 60.0) -> str:
    """The screen once every text is on it, read with its line breaks as spaces (an answer wraps)."""
    deadline = time.monotonic() + timeout
    flat = ""
    while time.monotonic() < deadline:
        flat = " ".join(tmux.screen().split())
        if all(t in flat for t in texts):
            return flat
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {texts!r}; the screen was:\n{tmux.screen()}")


def _ask(tmux: Tmux, prompt: str) -> None:
    tmux("send-keys", "-t", "smoke", "-l", prompt)
    tmux("send-keys", "-t", "smoke", "Enter")


def test_three_everyday_asks_in_the_real_binary(tmp_path: Path) -> None:
    assert shutil.which("tmux"), "tmux is needed for this test (apt-get install tmux)"
    env = subprocess_env(tmp_path / "home", DEFERCHAT_DEMO_NOW=NOW)
    tmux = Tmux(f"deferchat-demo-{os.getpid()}", env)
    tmux("-f", os.devnull, "new-session", "-d", "-s", "smoke", "-x", "130", "-y", "45", deferchat_binary())
    try:
        _wait(tmux, "demo/demo-1", "\u2713 gmail_work")

        _ask(tmux, "what time is it in Tokyo?")
        screen = _wait(tmux, "in Tokyo (Asia/Tokyo, UTC+09:00)")
        assert "It is 18:" in screen  # Tokyo's time, not the owner's (09:30 UTC)

        _ask(tmux, "what files are in my Documents folder?")
        _wait(tmux, "files in Documents", "Passport renewal checklist.md", "Q3 budget draft.csv")

        _ask(tmux, "find the email from Acme Supplies about the overdue invoice and reply that we paid it yesterday")
        _wait(tmux, "Waiting for your approval: send_message (mcp.gmail_work.send_message)", timeout=30)
        time.sleep(0.7)  # past the grace period
        tmux("send-keys", "-t", "smoke", "Tab")  # to the approval bar, then y allows once
        _wait(tmux, "y allow once \u00b7 n deny", timeout=30)  # the bar's own hint: it has the focus now
        # it ignores keys for its grace period (0.5 s) from the moment it took the focus, which on a
        # loaded machine is later than the Tab was sent: a person reads the bar first
        time.sleep(1.0)
        tmux("send-keys", "-t", "smoke", "y")
        screen = _wait(tmux, "Replied to", "billing@acme-supplies.example", "work mail", timeout=30)
        assert "Waiting for your approval" not in screen

        assert tmux.quit(), "deferchat did not exit on ctrl+q"
    finally:
        tmux("kill-server", check=False)
