"""The multi-line message box.

Enter sends; ctrl+j (or shift+enter, where the terminal sends it as its own key) starts a new
line. ↑ on the first line recalls earlier messages (this chat's first, then other chats'),
↓ on the last line goes forward again, back to what was being typed. PageUp / PageDown scroll
the chat log; Home / End do too while the box is empty (ctrl+home / ctrl+end always). The app
owns what is recalled (:meth:`Composer.set_history`, kept in :attr:`Composer.recall`) and the
queue of messages waiting for a turn to end; ↑ in an empty box takes the last queued one back.
While a completion list is open above the box (slash commands), ↑/↓, Tab, Enter and Esc are
the list's (:class:`Composer.CompletionKey`); every other key types as always.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import ClassVar

from textual import events
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.message import Message
from textual.widgets import Static, TextArea

# Terminals that send shift+enter as a key of its own (kitty's keyboard protocol, or their own
# CSI u); elsewhere shift+enter arrives as a plain Enter and would send the message.
_SHIFT_ENTER_PROGRAMS = {"kitty", "wezterm", "ghostty", "iterm.app"}


def shift_enter_works(env: Mapping[str, str] | None = None) -> bool:
    env = os.environ if env is None else env
    program = (env.get("TERM_PROGRAM") or "").lower()
    term = (env.get("TERM") or "").lower()
    return (
        program in _SHIFT_ENTER_PROGRAMS
        or "kitty" in term
        or term.startswith("foot")
        or bool(env.get("KITTY_WINDOW_ID"))
    )


def newline_hint(shift_enter: bool) -> str:
    """The new-line keys, the one this terminal surely sends first."""
    return "shift+enter or ctrl+j" if shift_enter else "ctrl+j (or shift+enter)"


def placeholder(shift_enter: bool) -> str:
    return (
        f"Message (Enter sends \u00b7 {newline_hint(shift_enter)}: new line \u00b7 \u2191 earlier messages "
        "\u00b7 / or ctrl+p: commands)"
    )


COMPLETION_KEYS = frozenset({"up", "down", "tab", "enter", "escape"})


class Composer(TextArea):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "send", "Send", id="send", show=False),
        Binding("ctrl+j,shift+enter", "newline", "New line", id="newline", show=False),
        Binding("pageup", "scroll_log('page_up')", "Scroll up", show=False, id="log_page_up"),
        Binding("pagedown", "scroll_log('page_down')", "Scroll down", show=False, id="log_page_down"),
        Binding("ctrl+home", "scroll_log('home')", "Oldest", show=False, id="log_home"),
        Binding("ctrl+end", "scroll_log('end')", "Newest", show=False, id="log_end"),
        Binding("home", "home", "Line start / oldest", show=False, id="composer_home"),
        Binding("end", "end", "Line end / newest", show=False, id="composer_end"),
    ]

    class Submitted(Message):
        def __init__(self, composer: Composer, text: str) -> None:
            super().__init__()
            self.composer = composer
            self.text = text

        @property
        def control(self) -> Composer:
            return self.composer

    class ScrollLog(Message):
        """Scroll the chat log: ``page_up``, ``page_down``, ``home`` or ``end``."""

        def __init__(self, where: str) -> None:
            super().__init__()
            self.where = where

    class TakeQueued(Message):
        """↑ in an empty box while messages are queued: take the last one back to edit."""

    class CompletionKey(Message):
        """A key the completion list above the box takes while it is open (:data:`COMPLETION_KEYS`)."""

        def __init__(self, key: str) -> None:
            super().__init__()
            self.key = key

    def __init__(self, **kw) -> None:
        super().__init__(soft_wrap=True, show_line_numbers=False, tab_behavior="focus", compact=True, **kw)
        self.shift_enter = shift_enter_works()
        self.placeholder = placeholder(self.shift_enter)
        self.recall: list[str] = []  # what ↑ recalls, newest first (TextArea's ``history`` is its undo)
        self.browsing = -1  # the recalled entry's index in ``recall``; -1: the box's own text
        self.draft = ""  # what was being typed when the recall began
        self.queued = 0  # how many messages the app holds back (↑ in an empty box takes one)
        self.completing = False  # a completion list is open above the box: it takes COMPLETION_KEYS

    def on_mount(self) -> None:
        self.cursor_blink = not self.app.is_headless

    async def _on_key(self, event: events.Key) -> None:
        if self.completing and event.key in COMPLETION_KEYS:
            # the list's, not the box's (nor the bindings': no send, no history, no focus change)
            event.prevent_default()
            event.stop()
            self.post_message(self.CompletionKey(event.key))
            return
        if event.key == "shift+enter" and not self.shift_enter:
            # The terminal sends it after all: show it first from now on.
            self.shift_enter = True
            self.placeholder = placeholder(True)
        if event.key == "enter":
            # Not inserted here: the key goes on to the bindings, where "send" (or whatever
            # the keymap gives it) acts on it. prevent_default skips TextArea's own handler;
            # bubbling clears it again for the app's binding check.
            event.prevent_default()
            return
        await super()._on_key(event)

    def action_send(self) -> None:
        text = self.text
        if not text.strip():
            return
        self.post_message(self.Submitted(self, text))
        self.clear()
        self.browsing = -1
        self.draft = ""

    def action_newline(self) -> None:
        self.insert("\n")

    # -- the text, as the app sets it -------------------------------------------------------------
    def put(self, text: str, cursor: tuple[int, int] | None = None) -> None:
        """Replace the text; the cursor at ``cursor`` (default: the end)."""
        self.text = text
        if cursor is None:
            lines = text.split("\n")
            cursor = (len(lines) - 1, len(lines[-1]))
        self.move_cursor(cursor)
        self.browsing = -1

    @property
    def cursor_offset(self) -> int:
        """The cursor as an offset into :attr:`text`."""
        row, column = self.cursor_location
        lines = self.text.split("\n")
        return sum(len(line) + 1 for line in lines[:row]) + column

    @staticmethod
    def location_of(text: str, offset: int) -> tuple[int, int]:
        """The (row, column) of an offset into ``text``."""
        lines = text[:offset].split("\n")
        return len(lines) - 1, len(lines[-1])

    def replace_span(self, start: int, end: int, insert: str, *, cursor: int | None = None) -> None:
        """Replace ``text[start:end]`` with ``insert`` (undoable, as typing is); the cursor at the
        offset ``cursor`` afterwards (default: after ``insert``)."""
        text = self.text
        self.replace(insert, self.location_of(text, start), self.location_of(text, end))
        self.move_cursor(self.location_of(self.text, start + len(insert) if cursor is None else cursor))

    # -- recalling earlier messages ---------------------------------------------------------------
    def set_history(self, entries: Sequence[str]) -> None:
        """What ↑ recalls, newest first (duplicates dropped, the first one kept)."""
        recall: list[str] = []
        for entry in entries:
            if entry.strip() and entry not in recall:
                recall.append(entry)
        self.recall = recall
        self.browsing = -1

    def remember(self, text: str) -> None:
        """A message just sent becomes the newest entry."""
        self.set_history([text, *self.recall])

    def _on_first_line(self) -> bool:
        return self.navigator.is_first_wrapped_line(self.cursor_location)

    def _on_last_line(self) -> bool:
        return self.navigator.is_last_wrapped_line(self.cursor_location)

    def action_cursor_up(self, select: bool = False) -> None:
        if not select and self._on_first_line():
            if not self.text and self.queued and self.browsing < 0:
                self.post_message(self.TakeQueued())
                return
            if self.browsing + 1 < len(self.recall):
                if self.browsing < 0:
                    self.draft = self.text
                self._recall(self.browsing + 1)
                return
        super().action_cursor_up(select)

    def action_cursor_down(self, select: bool = False) -> None:
        if not select and self.browsing >= 0 and self._on_last_line():
            self._recall(self.browsing - 1)
            return
        super().action_cursor_down(select)

    def _recall(self, index: int) -> None:
        text = self.draft if index < 0 else self.recall[index]
        browsing = index
        self.put(text)
        self.browsing = browsing

    # -- the log, from the box ------------------------------------------------------------------
    def action_scroll_log(self, where: str) -> None:
        self.post_message(self.ScrollLog(where))

    def action_home(self) -> None:
        if self.text:
            self.action_cursor_line_start()
        else:
            self.action_scroll_log("home")

    def action_end(self) -> None:
        if self.text:
            self.action_cursor_line_end()
        else:
            self.action_scroll_log("end")


class QueuedNote(Static):
    """The messages sent while a turn runs (or while the chat opens), waiting for it to end."""

    def show(self, queued: Sequence[str], *, editing: bool = False, until: str = "this turn ends") -> None:
        """The queue, sent when ``until`` (and whether the box holds the last message being edited)."""
        lines: list[str] = []
        if editing:
            lines.append(
                "\u270e editing your last message: sending it replaces that turn \u00b7 f4 again: stop editing"
            )
        if queued:
            first = " ".join(queued[0].split())
            first = first if len(first) <= 60 else first[:59] + "\u2026"
            more = f" and {len(queued) - 1} more" if len(queued) > 1 else ""
            lines.append(
                f"\u23f3 queued: \u201c{first}\u201d{more} \u2014 sent when {until} \u00b7 "
                "\u2191 in the empty box takes it back"
            )
        self.display = bool(lines)
        self.update(Content("\n".join(lines)))
