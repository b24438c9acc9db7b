"""The model's thinking in the chat log: one collapsed block per thinking block.

The router (:mod:`tui.router`) makes a :class:`ThinkingItem` when ``model.thinking.delta``
events start and finishes it from ``model.thinking`` (the whole block, after the response);
the log mounts a :class:`ThinkingView` for it (:func:`tui.widgets.chat_log.widget_for`). A block is
folded to its title ("Thinking... 42 words" while it streams, "Thought for 120 words" after,
"Redacted thinking" for a block the provider encrypted); the app's key (``toggle_thinking``)
shows or hides the text of every block at once, and a click or Enter on a title toggles one.
The text is the model's: it is shown through :func:`core.display.safe`, and while it streams
the view is redrawn at most every :data:`REDRAW_EVERY` seconds, not per delta; a folded block
redraws only its title (its text is drawn when it is shown).
"""

from __future__ import annotations

from collections.abc import Iterable

from textual.content import Content
from textual.timer import Timer
from textual.widgets import Collapsible, Static

from core.display import safe
from tui.state import STOPPED, Item, ThinkingItem

__all__ = ["REDRAW_EVERY", "STOPPED", "ThinkingItem", "ThinkingView", "show_all"]

REDRAW_EVERY = 0.1  # seconds between two redraws of a block that streams, at least


class ThinkingView(Collapsible):
    """A thinking block, folded to its title unless thinking is shown."""

    DEFAULT_CSS = """
    ThinkingView { margin: 1 0 0 2; padding: 0; border: none; height: auto; background: transparent; }
    ThinkingView CollapsibleTitle { padding: 0 1; color: $text-muted; text-style: italic; }
    ThinkingView Contents { padding: 0 1 0 3; height: auto; }
    ThinkingView .thought { color: $text-muted; }
    """

    def __init__(self, item: ThinkingItem, *, classes: str | None = None) -> None:
        self.item = item
        self._body = Static(Content(""), classes="thought")
        self._timer: Timer | None = None
        self._dirty = False
        super().__init__(self._body, title="", collapsed=not item.expanded, classes=classes)

    def on_mount(self) -> None:
        self.refresh_from_item()

    def refresh_from_item(self) -> None:
        """Redraw now from the record (and stop the redraw timer once the block is whole)."""
        self._dirty = False
        item = self.item
        self.title = Content(item.title())  # type: ignore[assignment]
        if not self.collapsed:  # a folded block's text is drawn when it is shown
            self._show_text()
        if not item.streaming and self._timer is not None:
            self._timer.stop()
            self._timer = None

    def streamed(self) -> None:
        """The record grew: redraw soon, at most every :data:`REDRAW_EVERY` seconds."""
        self._dirty = True
        if self._timer is None:
            self._timer = self.set_interval(REDRAW_EVERY, self._redraw)

    def _redraw(self) -> None:
        if self._dirty or not self.item.streaming:
            self.refresh_from_item()

    def _show_text(self) -> None:
        self._body.update(Content(safe(self.item.text, multiline=True)))

    def watch_collapsed(self, collapsed: bool) -> None:
        # A watcher, not a Collapsible.Toggled handler: the widget posts Expanded and Collapsed,
        # whose handler names are their own, so an on_collapsible_toggled method never ran.
        self.item.expanded = not collapsed  # a block opened by hand stays open when it scrolls away
        if not collapsed:
            self._show_text()


def show_all(items: Iterable[Item], shown: bool) -> None:
    """Show (or fold) the text of every thinking block of the log."""
    for item in items:
        if isinstance(item, ThinkingItem):
            item.expanded = shown
            if isinstance(item.widget, ThinkingView) and item.widget.is_mounted:
                item.widget.collapsed = not shown
