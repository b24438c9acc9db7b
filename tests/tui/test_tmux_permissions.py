"""Grants in the real ``deferchat`` binary, in tmux (issue 19, item 3): a call allowed for the
rest of the chat is said in the log and marked in the roster; the permissions screen (F12)
lists it and takes it back; after a restart (``deferchat --chat ID``) the screen shows it as
revoked, and the tool asks again. The Pilot tests (tests/tui/test_permissions.py) cover the
rest: revoke all, the CLI's revoke while the app runs, a parked approval's grant."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from core.store import Store
from tests.helpers import subprocess_env
from tests.tui.test_tmux_smoke import PROMPT, Tmux, deferchat_binary

TOOL = "mcp.bland_call.start_call"
GRACE = 0.8  # past the approval bar's (and its confirmation's) 0.5 s grace period


def test_a_grant_taken_back_in_the_app_is_revoked_after_a_restart(tmp_path: Path) -> None:
    assert shutil.which("tmux"), "tmux is needed for this test (apt-get install tmux)"
    home = tmp_path / "home"
    tmux = Tmux(f"deferchat-grants-{os.getpid()}", subprocess_env(home))
    keys = lambda *k: tmux("send-keys", "-t", "smoke", *k)  # noqa: E731
    tmux("-f", os.devnull, "new-session", "-d", "-s", "smoke", "-x", "120", "-y", "40", deferchat_binary())
    try:
        tmux.wait_for("30 defined", "17 indexed", "\u2713 bland_call", timeout=90)
        keys("-l", PROMPT)
        keys("Enter")
        tmux.wait_for("Waiting for your approval: start_call", "Allow for this chat", timeout=60)
        time.sleep(GRACE)
        keys("Tab")
        tmux.wait_for("y allow once \u00b7 n deny")  # the bar's own hint: it has the focus now
        time.sleep(GRACE)  # taking the focus starts a guard of its own: a key in the same burst answers nothing
        keys("-l", "!")
        tmux.wait_for("Enter confirms")  # the confirmation is open, with its own guard
        time.sleep(GRACE)
        keys("Enter")
        screen = tmux.wait_for("is allowed for the rest of this", "\u2713 allowed", timeout=60)
        assert "Waiting for your approval" not in screen
        tmux.wait_for("Call queued", timeout=60)  # the turn's answer ...
        tmux.wait_gone("Esc stops", timeout=60)  # ... to its end: ctrl+q mid-turn would ask first
        [chat] = Store(home / "deferchat.db").chats()
        [grant] = Store(home / "deferchat.db").grants(chat.id)
        assert (grant.tool, grant.granted_by) == (TOOL, "app")

        keys("F12")
        tmux.wait_for("Permissions \u00b7 this chat's grants: 1 active, 0 revoked", TOOL, "you, in the app")
        keys("r")
        tmux.wait_for("0 active, 1 revoked", f"{TOOL}: revoked ", timeout=30)
        keys("Escape")
        screen = tmux.wait_for("is no longer allowed", timeout=30)
        assert "\u2713 allowed" not in screen  # the row is no longer marked

        tmux.quit()
        assert not tmux.alive(), "deferchat did not exit on ctrl+q"
        assert not Store(home / "deferchat.db").granted(chat.id, TOOL)

        # a restart on the same chat: the grant is listed as revoked, and the tool asks again
        tmux("-f", os.devnull, "new-session", "-d", "-s", "smoke", "-x", "120", "-y", "40",
             f"{deferchat_binary()} --chat {chat.id}")  # fmt: skip
        tmux.wait_for("pinned plan", "\u2713 bland_call", timeout=90)
        keys("F12")
        tmux.wait_for("0 active, 1 revoked", f"{TOOL}: revoked ", "(allowed ", timeout=30)
        keys("Escape")
        tmux.wait_gone("Permissions \u00b7 this chat's grants")  # the screen's own keys (a, r, q) are in the prompt
        keys("-l", PROMPT)
        keys("Enter")
        tmux.wait_for("Waiting for your approval: start_call", timeout=60)
    finally:
        tmux("kill-server", check=False)
