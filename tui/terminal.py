"""What the app tells the terminal itself, outside the screen: its title, and a desktop
notification where the terminal can show one.

An approval that waits is worth a glance from another window: the app sets the terminal's
title (OSC 2) and, on a terminal known to turn them into desktop notifications, sends OSC 9
(iTerm2, kitty, WezTerm, Ghostty, foot) and/or OSC 777 (VTE terminals such as GNOME Terminal,
rxvt-unicode, foot, WezTerm, Ghostty). Unknown terminals get the title only: an OSC they do
not know is dropped by most, but not by all. ``DEFERCHAT_NOTIFY`` overrides the choice:
``osc9``, ``osc777``, ``both`` or ``off``.

The sequences go through Textual's driver (``App._driver.write``, the same writer Textual uses
for OSC 52 clipboard copies): they are queued between frames, so they never split one. Text
put into a sequence is cleaned of control characters first: a tool's name comes from an MCP
server, and must not be able to end the sequence and write to the terminal. Every sequence is
also recorded in :attr:`TerminalSignals.sent`, which is all that happens in headless mode (tests).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from core.display import safe

OSC, BEL = "\x1b]", "\x07"
PUSH_TITLE, POP_TITLE = "\x1b[22;0t", "\x1b[23;0t"  # xterm's title stack: restore the owner's title on exit

CHANNELS = ("osc9", "osc777")
_OSC9_PROGRAMS = {"iterm.app", "wezterm", "ghostty", "kitty"}
_OSC777_PROGRAMS = {"wezterm", "ghostty"}


def clean(text: str, limit: int = 200) -> str:
    """One line of printable text: white space (newlines, tabs, line separators) runs become one
    space and every other character :func:`core.display.safe` changes (ESC, BEL, C1 codes, bidi
    controls) its visible escape, so nothing in ``text`` can end an OSC sequence or start another."""
    out = safe(re.sub(r"\s+", " ", text)).strip()
    return out[:limit]


def notification_channels(env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """Which desktop-notification sequences this terminal shows, from its environment."""
    env = os.environ if env is None else env
    forced = (env.get("DEFERCHAT_NOTIFY") or "").strip().lower()
    if forced in ("off", "none", "0", "no"):
        return ()
    if forced == "both":
        return CHANNELS
    if forced in CHANNELS:
        return (forced,)
    program = (env.get("TERM_PROGRAM") or "").lower()
    term = (env.get("TERM") or "").lower()
    found: list[str] = []
    if program in _OSC9_PROGRAMS or "kitty" in term or env.get("KITTY_WINDOW_ID") or term.startswith("foot"):
        found.append("osc9")
    if (
        program in _OSC777_PROGRAMS
        or env.get("VTE_VERSION")
        or term.startswith("rxvt-unicode")
        or term.startswith("foot")
    ):
        found.append("osc777")
    return tuple(found)


def title_sequence(title: str) -> str:
    return f"{OSC}2;{clean(title)}{BEL}"


def notification_sequences(title: str, body: str, channels: tuple[str, ...]) -> list[str]:
    """OSC 9 carries one message; OSC 777 a title and a body (``;`` separates its fields)."""
    out: list[str] = []
    if "osc9" in channels:
        out.append(f"{OSC}9;{clean(f'{title}: {body}')}{BEL}")
    if "osc777" in channels:
        out.append(f"{OSC}777;notify;{clean(title).replace(';', ',')};{clean(body).replace(';', ',')}{BEL}")
    return out


class TerminalSignals:
    """The title and notifications of one app. ``sent`` records every sequence, in order."""

    def __init__(self, app: Any, env: Mapping[str, str] | None = None) -> None:
        self.app = app
        self.channels = notification_channels(env)
        self.sent: list[str] = []
        self._pushed = False
        self.title: str | None = None

    def _write(self, data: str) -> None:
        self.sent.append(data)
        driver = getattr(self.app, "_driver", None)
        if driver is not None and not self.app.is_headless:
            driver.write(data)

    def set_title(self, title: str) -> None:
        if title == self.title:
            return
        if not self._pushed:  # keep the owner's title, to give it back on exit
            self._pushed = True
            self._write(PUSH_TITLE)
        self.title = title
        self._write(title_sequence(title))

    def notify(self, title: str, body: str) -> None:
        for seq in notification_sequences(title, body, self.channels):
            self._write(seq)

    def restore(self) -> None:
        """Give the terminal its title back (terminals without a title stack keep ours)."""
        if self._pushed:
            self._pushed = False
            self.title = None
            self._write(POP_TITLE)
