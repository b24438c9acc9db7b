"""Signing in to a remote MCP server from the real ``deferchat`` app, in tmux: the roster says the
loopback OAuth server (``tests.mcp_servers.oauth_server``) needs sign-in, the servers screen (from
the palette) signs in, the app opens "the browser" (``BROWSER`` is a script that follows the
authorization page to the loopback redirect, as a person's browser would), and the server is
ready with its tools planned. tmux runs on a private socket; nothing leaves 127.0.0.1."""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import time
from pathlib import Path

from tests.helpers import subprocess_env
from tests.mcp.oauth_helpers import oauth_server
from tests.tui.test_tmux_smoke import Tmux, deferchat_binary

FOLLOW = """#!/bin/sh
# the person's browser: open the page, follow its redirect back to deferchat's listener
exec {python} -c 'import sys, httpx; httpx.get(sys.argv[1], follow_redirects=True, timeout=20)' "$1" >/dev/null 2>&1
"""


def roster_text(screen: str) -> str:
    """The roster panel's words (right of its border on each line), its wrapped lines joined."""
    return " ".join(" ".join(line.rpartition("\u258f")[2].split()) for line in screen.splitlines() if "\u258f" in line)


def test_signing_in_from_the_app(tmp_path: Path) -> None:
    assert shutil.which("tmux"), "tmux is needed for this test (apt-get install tmux)"
    home = tmp_path / "home"
    home.mkdir()
    browser = tmp_path / "browser.sh"
    browser.write_text(FOLLOW.format(python=sys.executable))
    browser.chmod(0o755)
    with oauth_server() as server:
        (home / "mcp.json").write_text(json.dumps({"mcpServers": {"remote": {"url": server.url, "timeout": 20}}}))
        tmux = Tmux(f"deferchat-oauth-{os.getpid()}", subprocess_env(home, BROWSER=str(browser)))
        tmux("-f", os.devnull, "new-session", "-d", "-s", "smoke", "-x", "120", "-y", "40", deferchat_binary())
        try:
            tmux.wait_for("remote needs sign-in", timeout=60)
            tmux("send-keys", "-t", "smoke", "C-p")
            time.sleep(0.5)
            tmux("send-keys", "-t", "smoke", "-l", "MCP servers")
            time.sleep(0.5)
            tmux("send-keys", "-t", "smoke", "Enter")
            tmux.wait_for("needs sign-in", "Sign in", timeout=20)
            tmux("send-keys", "-t", "smoke", "Enter")  # the first button has the focus: Sign in
            deadline = time.monotonic() + 60
            while "\u2713 remote 2" not in roster_text(tmux.screen()):
                assert time.monotonic() < deadline, tmux.screen()
                time.sleep(0.2)
            tmux("send-keys", "-t", "smoke", "C-q")
            deadline = time.monotonic() + 20
            while tmux.alive() and time.monotonic() < deadline:
                time.sleep(0.2)
        finally:
            tmux("kill-server", check=False)
        state = server.state()
        assert state["authorizations"] == 1 and state["exchanges"] == 1
    tokens = home / "mcp-oauth.json"
    assert stat.S_IMODE(tokens.stat().st_mode) == 0o600
    assert "access_token" in json.loads(tokens.read_text())["servers"]["remote"]["tokens"]
