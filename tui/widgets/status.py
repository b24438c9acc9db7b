"""The status line above the message box: what the turn is doing ("Working… (Esc stops)", a
retry's countdown, "Stopping…"), or, while an approval waits, that it waits: said over the
turn's status, which comes back when the approval is answered."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from core.display import safe


class StatusLine(Static):
    def __init__(self, **kw) -> None:
        super().__init__("", **kw)
        self.text = ""  # the turn's status, as last set
        self.waiting: str | None = None  # the tool an approval waits for

    def say(self, text: str) -> None:
        self.text = text
        self._show()

    def waiting_for(self, tool: str | None) -> None:
        self.waiting = tool
        self._show()

    def _show(self) -> None:
        text = self.text
        if self.waiting is not None:
            text = (
                f"\u26a0 waiting for your approval: {self.waiting} \u2014 Tab to answer "
                "(what you type stays in the message box)"
            )
        self.update(Content(safe(text)))  # it names the waiting tool: a server's name
        self.display = bool(text)
