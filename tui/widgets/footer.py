"""The footer: Textual's, compact on a narrow terminal, and able to leave out the keys a narrow
terminal has no room for while the turn's own keys (Stop, Answer) are shown. What it leaves
out is in the command palette with its key, so every key stays findable."""

from __future__ import annotations

from collections.abc import Callable

from textual.app import ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey


class AppFooter(Footer):
    def __init__(self, *, spare: Callable[[], frozenset[str]] = frozenset, **kw) -> None:
        super().__init__(**kw)
        self.spare = spare  # the actions to leave out now (asked at every recompose)

    def compose(self) -> ComposeResult:
        spare = self.spare()
        for widget in super().compose():
            if isinstance(widget, FooterKey) and widget.action in spare:
                continue
            yield widget
