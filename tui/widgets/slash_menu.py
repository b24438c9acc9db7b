"""The completion list above the message box while a slash command is typed.

It never takes the focus: the owner keeps typing in the box, which filters the list. The box
hands it ↑/↓ (move), Tab (complete) and Enter (take), and Esc closes it
(:mod:`tui.controllers.slash` decides what each does).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from textual.content import Content
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from core.display import safe


@dataclass(frozen=True)
class Entry:
    """One row: what Tab puts in the box, and how the row reads."""

    fill: str  # the box's text once taken, e.g. "/model " or "/resume chat_1"
    label: str  # "/model [PROVIDER:MODEL]"
    description: str = ""
    keys: str = ""  # the palette's keys for the same action
    unavailable: str = ""  # why it cannot run now


@dataclass(frozen=True)
class WordOffer:
    """What a room offers for the word at the cursor: the rows, and what taking one does
    (``take(index)``, the row's index in ``entries``; the room edits the box itself)."""

    entries: list[Entry]
    take: Callable[[int], object]


class SlashMenu(OptionList):
    DEFAULT_CSS = """
    SlashMenu {
        height: auto; max-height: 9; border: none; padding: 0 1; background: $panel;
        text-wrap: nowrap; text-overflow: ellipsis; scrollbar-size-vertical: 1;
    }
    """

    can_focus = False

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.entries: list[Entry] = []
        self.display = False

    def show(self, entries: Sequence[Entry], *, highlight: bool) -> None:
        """The rows; the first highlighted when ``highlight`` (else none until ↑/↓)."""
        self.entries = list(entries)
        width = max((len(e.label) for e in entries), default=0)
        self.set_options([Option(self._row(e, width)) for e in entries])
        self.highlighted = 0 if highlight and entries else None
        self.display = bool(entries)

    def hide(self) -> None:
        self.entries = []
        self.clear_options()
        self.display = False

    @staticmethod
    def _row(entry: Entry, width: int) -> Content:
        # a server's prompt names and descriptions are the server's words: shown, never obeyed
        label = safe(entry.label).ljust(min(width, 26))
        if entry.unavailable:
            return Content.styled(f"{label}  {safe(entry.description)} \u2014 {safe(entry.unavailable)}", "dim")
        text = f"{label}  {safe(entry.description)}"
        row = Content(text + (f"  {entry.keys}" if entry.keys else "")).stylize("bold", 0, len(label))
        return row.stylize("dim", len(text)) if entry.keys else row

    def move(self, step: int) -> None:
        if not self.entries:
            return
        if self.highlighted is None:
            self.highlighted = 0 if step > 0 else len(self.entries) - 1
        else:
            self.highlighted = (self.highlighted + step) % len(self.entries)

    @property
    def chosen(self) -> Entry | None:
        at = self.highlighted
        return self.entries[at] if at is not None and 0 <= at < len(self.entries) else None
