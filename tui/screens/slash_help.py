"""/help: every slash command, its arguments, what it does and the keys of the palette entry it
mirrors. A server's prompt (its name and description are the server's words) is shown through
:func:`core.display.safe`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from core.display import safe

HOW = (
    "Type / in the message box: the list completes as you type (\u2191\u2193 move, Tab completes, Enter runs, "
    "Esc closes). //text sends \u201c/text\u201d as a message. A line that names no command is sent as typed "
    "after you press Enter a second time."
)


class SlashHelp(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q", "dismiss", "Close", id="close_slash_help")]

    def __init__(self, rows: Sequence[tuple[str, str, str, str]]) -> None:
        """``rows``: (usage, description, keys, why it is unavailable now)."""
        super().__init__(classes="panel-screen")
        self.rows = list(rows)

    def compose(self) -> ComposeResult:
        with Vertical(classes="panel"):
            yield Static(Content("Slash commands"), classes="panel-title")
            table: DataTable[Text] = DataTable(id="slash-table", zebra_stripes=True, cursor_type="row")
            yield table
            yield Static(Content(HOW), classes="note")
            yield Static(Content("\u2191\u2193 move \u00b7 Escape closes"), classes="panel-help")

    def on_mount(self) -> None:
        table = self.query_one("#slash-table", DataTable)
        table.add_columns("command", "what it does", "keys")
        for usage, description, keys, unavailable in self.rows:
            what = description + (f" (not now: {unavailable})" if unavailable else "")
            table.add_row(Text(safe(usage)), Text(safe(what)), Text(keys))
        table.focus()
