"""The full-screen app opens its database after its first frame (SQLite and its library are not
on the way to the first paint), so a database SQLite refuses is found with the app on the screen.
The real binary in tmux: the app ends, the terminal is given back, and the failure is the same one
line (``deferchat: ...``) and exit code as a failure found before the app drew, with the file left
as it was. A home whose folder cannot hold a database is still refused before the app draws.

tmux runs on a private socket."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from tests.helpers import subprocess_env
from tests.tui.test_tmux_smoke import Tmux, deferchat_binary

NOT_A_DATABASE = b"this is a text file, not an SQLite database\n" * 40


def run_in_tmux(home: Path, tag: str) -> tuple[int, str]:
    """Run the app until it ends; its exit code and what the terminal shows afterwards."""
    assert shutil.which("tmux"), "tmux is needed for this test (apt-get install tmux)"
    tmux = Tmux(f"deferchat-start-{tag}-{os.getpid()}", subprocess_env(home))
    done = home.parent / f"{tag}.code"
    command = f"{deferchat_binary()}; echo $? > {done}; sleep 60"
    tmux("-f", os.devnull, "new-session", "-d", "-s", "smoke", "-x", "100", "-y", "30", command)
    try:
        deadline = time.monotonic() + 60
        while not done.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert done.exists(), f"the app did not end; the screen was:\n{tmux.screen()}"
        time.sleep(0.2)
        return int(done.read_text().strip()), tmux.screen()
    finally:
        tmux("kill-server", check=False)


def one_line(screen: str) -> str:
    """The screen's text as one line (tmux wraps a long line at the pane's width)."""
    return "".join(line for line in screen.splitlines() if line.strip())


def test_a_database_sqlite_refuses_ends_the_app_with_one_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    db = home / "deferchat.db"
    db.write_bytes(NOT_A_DATABASE)
    code, screen = run_in_tmux(home, "damaged")
    text = one_line(screen)
    assert code == 1, screen
    assert text.startswith("deferchat: ") and str(db) in text and "damaged" in text, screen
    assert "Traceback" not in screen and "not a database" in text, screen
    assert text.count("deferchat: ") == 1, screen
    assert db.read_bytes() == NOT_A_DATABASE  # nothing written to it, nothing moved


@pytest.mark.parametrize("shape", ["a file", "a directory"])
def test_a_home_that_cannot_hold_the_database_is_refused_before_the_app_draws(tmp_path: Path, shape: str) -> None:
    home = tmp_path / "home"
    if shape == "a file":
        home.write_text("")
    else:
        (home / "deferchat.db").mkdir(parents=True)
    code, screen = run_in_tmux(home, shape.replace(" ", "-"))
    text = one_line(screen)
    assert code in (1, 2), screen
    assert text.startswith("deferchat: ") and "Traceback" not in screen, screen
