"""The real ``deferchat`` binary in tmux, through the done-when flow: no API key, the
embedded default (demo provider, production roster, demo MCP servers); the roster shows 30
defined, 17 indexed, 0 skipped; ask for a call; approve inline; the tool.call row becomes
start_call via tool.call; ctrl+q quits.

tmux runs on a private socket, so the test never touches another tmux server."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers import subprocess_env

PROMPT = "start a call to +1 555 0100 about the invoice"


def deferchat_binary() -> str:
    found = Path(sys.executable).with_name("deferchat")
    return str(found) if found.exists() else (shutil.which("deferchat") or "deferchat")


class Tmux:
    """tmux on a private socket, with an explicit environment: the server's environment is
    every pane's, and a test process can carry COLUMNS/LINES (set below os.environ, e.g. by
    a terminal library) that would make the app believe the terminal is 80x24."""

    def __init__(self, socket: str, env: dict[str, str]) -> None:
        self.socket = socket
        self.env = {k: v for k, v in env.items() if k not in ("COLUMNS", "LINES", "TMUX")}

    def __call__(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=check, timeout=30, env=self.env
        )

    def screen(self) -> str:
        return self("capture-pane", "-p", "-t", "smoke").stdout

    def wait_for(self, *texts: str, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if all(t in screen for t in texts):
                return screen
            time.sleep(0.2)
        raise AssertionError(f"timed out waiting for {texts!r}; the screen was:\n{screen}")

    def wait_gone(self, text: str, timeout: float = 30.0) -> str:
        """Wait until ``text`` is off the screen (e.g. the turn's "Esc stops" once it ended)."""
        deadline = time.monotonic() + timeout
        screen = self.screen()
        while text in screen and time.monotonic() < deadline:
            time.sleep(0.2)
            screen = self.screen()
        assert text not in screen, f"{text!r} still on the screen:\n{screen}"
        return screen

    def alive(self) -> bool:
        return self("has-session", "-t", "smoke", check=False).returncode == 0

    def quit(self, timeout: float = 20.0) -> bool:
        """ctrl+q, and wait (up to ``timeout``) for the app to end; while a turn still runs the app
        asks first, and this answers *Quit and stop* (y). Whether the app exited in time."""
        self("send-keys", "-t", "smoke", "C-q")
        deadline = time.monotonic() + timeout
        answered = False
        while self.alive() and time.monotonic() < deadline:
            # the session may end between the two calls: a pane that is gone shows nothing
            shown = self("capture-pane", "-p", "-t", "smoke", check=False).stdout
            if not answered and "Quit and stop (y)" in shown:
                self("send-keys", "-t", "smoke", "y")
                answered = True
            time.sleep(0.2)
        return not self.alive()


def test_done_when_flow_in_the_real_binary(tmp_path: Path) -> None:
    assert shutil.which("tmux"), "tmux is needed for this test (apt-get install tmux)"
    tmux = Tmux(f"deferchat-smoke-{os.getpid()}", subprocess_env(tmp_path / "home"))
    tmux("-f", os.devnull, "new-session", "-d", "-s", "smoke", "-x", "120", "-y", "40", deferchat_binary())
    try:
        screen = tmux.wait_for("30 defined", "17 indexed", "0 skipped", "demo/demo-1", "\u2713 bland_call")
        assert "Defined 30/30" in screen and "wrapper" in screen

        tmux("send-keys", "-t", "smoke", "-l", PROMPT)
        tmux("send-keys", "-t", "smoke", "Enter")
        tmux.wait_for(
            "Waiting for your approval: start_call (mcp.bland_call.start_call)",
            "Allow once (y)",
            "Changes state in a remote system",
            "awaiting approval \u00b7 start_call",
        )

        time.sleep(0.7)  # past the grace period
        tmux("send-keys", "-t", "smoke", "-l", "yes")  # typed: it goes to the message box, it answers nothing
        tmux.wait_for("yes")
        tmux("send-keys", "-t", "smoke", "Tab")  # to the approval bar, then y allows once
        tmux.wait_for("y allow once \u00b7 n deny")  # the bar's own hint: it has the focus now
        time.sleep(0.7)  # past the guard that taking the focus starts: a key in the same burst answers nothing
        tmux("send-keys", "-t", "smoke", "y")
        screen = tmux.wait_for("done \u00b7 start_call (mcp.bland_call.start_call) via tool.call", timeout=30)
        assert "Waiting for your approval" not in screen  # the bar is gone
        assert "Call queued" in tmux.wait_for("Call queued", timeout=15)
        # the answer shows a moment before its turn ends (the footer's Stop goes): ctrl+q while a
        # turn runs asks first, so a person (and this test) quits once it has ended
        deadline = time.monotonic() + 15
        while "esc Stop" in tmux.screen() and time.monotonic() < deadline:
            time.sleep(0.1)

        tmux.wait_gone("Esc stops")  # the turn has ended: ctrl+q quits without asking
        tmux.quit()
        assert not tmux.alive(), "deferchat did not exit on ctrl+q"
    finally:
        tmux("kill-server", check=False)
