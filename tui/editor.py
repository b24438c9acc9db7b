"""Writing a long message in the owner's own editor ($VISUAL, else $EDITOR).

The app hands the terminal over (Textual's ``App.suspend``), runs the editor on a temporary
file holding the message box's text, and takes the file's text back when the editor exits
with status 0. In headless mode (tests) there is no terminal to hand over: the editor runs
without one.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from textual.app import SuspendNotSupported


def editor_command(env: Mapping[str, str] | None = None) -> list[str] | None:
    """The editor as a command line (``code -w`` splits into two words); None when unset."""
    env = os.environ if env is None else env
    value = (env.get("VISUAL") or env.get("EDITOR") or "").strip()
    if not value:
        return None
    try:
        return shlex.split(value) or None
    except ValueError:
        return [value]


def edit_in(app: Any, command: list[str], text: str) -> tuple[str | None, str | None]:
    """Run ``command`` on a file holding ``text``: (the new text, None), or (None, why not).

    Blocking on purpose, as Textual's ``suspend`` wants it: the app is stepped aside (no input,
    no output) until the editor exits."""
    fd, name = tempfile.mkstemp(prefix="deferchat-message-", suffix=".md")
    path = Path(name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        argv = [*command, str(path)]
        try:
            try:
                with app.suspend():
                    code = subprocess.call(argv)
            except SuspendNotSupported:
                if not app.is_headless:
                    return None, "this terminal cannot be handed over to another program"
                code = subprocess.call(argv, stdin=subprocess.DEVNULL)
        except OSError as exc:
            return None, f"{command[0]}: {exc.strerror or exc}"
        if code != 0:
            return None, f"{command[0]} exited with status {code}; the message is unchanged"
        return path.read_text(encoding="utf-8"), None
    finally:
        path.unlink(missing_ok=True)
