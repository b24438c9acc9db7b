"""The usage view: the cost meter of the open chat, one row per model request (tokens, cache hit
ratio, cost when the model has a price, the prefix breaks before it; a stopped, broken-off or
refused request says so, and its estimated counts are marked ~), with the totals above.
Read back from the chat's stored events (:func:`core.chat.meter.chat_usage`)."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from core.chat.meter import COLUMNS, ChatUsage, row_cells, totals_text
from core.display import safe

HIT_RATIO_NOTE = (
    "hit = cache read / (input + cache read + cache write): the share of the prompt read from the "
    "provider's cache. cost - : no price for the model (set one in config.toml [prices])."
)
ESTIMATED_NOTE = (
    "~ : an estimate. The request was stopped or broke off before the provider counted it, so its "
    "tokens are counted here from the request and the partial answer (the provider's own count "
    "where part of it came); a request the provider refused (its HTTP status in #) billed nothing."
)


class UsageScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q", "dismiss", "Close", id="close_usage")]

    def __init__(self, usage: ChatUsage) -> None:
        super().__init__(classes="panel-screen")
        self.usage = usage

    def compose(self) -> ComposeResult:
        with Vertical(classes="panel"):
            yield Static(Content(safe(f"Usage \u00b7 {totals_text(self.usage.totals)}")), classes="panel-title")
            if not self.usage.requests:
                yield Static(Content("No model request yet in this chat."), id="usage-empty", classes="note")
            table: DataTable[Text] = DataTable(id="usage-table", zebra_stripes=True, cursor_type="row")
            yield table
            yield Static(Content(HIT_RATIO_NOTE), classes="note")
            if self.usage.totals.estimated or any(r.http_status for r in self.usage.requests):
                yield Static(Content(ESTIMATED_NOTE), id="usage-estimated", classes="note")
            yield Static(Content("\u2191\u2193 move \u00b7 Escape closes"), classes="panel-help")

    def on_mount(self) -> None:
        table = self.query_one("#usage-table", DataTable)
        table.add_columns(*COLUMNS)
        for r in self.usage.requests:  # a break's detail names tools: a server's words, never markup
            table.add_row(*(Text(safe(cell)) for cell in row_cells(r)), key=str(r.n))
        table.focus()
