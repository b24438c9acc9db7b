"""The chat log: messages, streamed Markdown, tool-call rows and notes.

Every entry is backed by a plain record (:mod:`tui.state`); the log keeps all records and
mounts only a window of them, so a chat of thousands of messages opens as fast as a short
one. Scrolling to the top mounts the previous page (and, past a limit, unmounts the far
end); scrolling back down does the reverse. Live events update the record and, when its
widget is mounted, the widget.

An answer's widget lives in :mod:`tui.widgets.answer`, imported with the first answer shown
(Markdown is not needed for the app's first frame).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.widget import Widget
from textual.widgets import Collapsible, Static

from core.display import safe
from tui.state import (
    STATUSES,
    AssistantItem,
    Item,
    NoteItem,
    ThinkingItem,
    ToolItem,
    UserItem,
    pretty_json,
    tool_title,
)
from tui.welcome import welcome
from tui.widgets.entry import COPY_BINDINGS, CopyMixin
from tui.widgets.thinking import ThinkingView

if TYPE_CHECKING:
    from tui.widgets.answer import AssistantMessage


class UserMessage(CopyMixin, Static):
    """One widget per entry (the log mounts many): the label is the top border's title."""

    BINDINGS = COPY_BINDINGS

    def __init__(self, item: UserItem, **kw) -> None:
        super().__init__(Content(item.text), **kw)
        self.item = item
        self.border_title = "You"

    def copy_text(self) -> str:
        return self.item.text


class NoteRow(CopyMixin, Static):
    BINDINGS = COPY_BINDINGS

    def __init__(self, item: NoteItem, **kw) -> None:
        super().__init__(Content(safe(item.text, multiline=True)), **kw)
        self.item = item
        self.add_class(f"-{item.level}")

    def copy_text(self) -> str:
        return self.item.text


class ToolCallRow(Collapsible):
    """One tool call, collapsed to its title: status, name, the wrapper it came through."""

    BINDINGS = COPY_BINDINGS

    def __init__(self, item: ToolItem, **kw) -> None:
        self.item = item
        self._details = Static(Content(""), classes="details")
        super().__init__(self._details, title="", collapsed=True, **kw)

    def on_mount(self) -> None:
        self.refresh_from_item()

    def refresh_from_item(self) -> None:
        item = self.item
        self.title = Content(safe(tool_title(item)))  # type: ignore[assignment]
        for status in STATUSES:  # "awaiting approval" is the class -awaiting
            self.set_class(item.status == status, f"-{status.split()[0]}")
        self._details.update(Content(safe(self.details_text(), multiline=True)))

    def details_text(self) -> str:
        item = self.item
        lines = [f"call {item.call_id}"]
        if item.name and item.name != item.model_name:
            lines.append(f"the model called {item.model_name}; the pipeline ran {item.name}")
        elif item.name:
            lines.append(f"tool {item.name}")
        if item.side_effect:
            lines.append(f"side effect {item.side_effect}")
        lines.append("arguments:")
        lines.append(pretty_json(item.arguments))
        if item.result is not None:
            lines.append("result:")
            lines.append(
                clip_lines(item.result if isinstance(item.result, str) else pretty_json(item.result), RESULT_LINES)
            )
        if item.code or item.message:  # the raw code is here; the title says it in words
            lines.append(f"{item.code or 'error'}: {item.message}" if item.message else str(item.code))
        return "\n".join(lines)

    def full_text(self) -> str:
        item = self.item
        result = (
            "" if item.result is None else (item.result if isinstance(item.result, str) else pretty_json(item.result))
        )
        return f"{item.shown_name}\narguments:\n{pretty_json(item.arguments)}\nresult:\n{result}"

    def action_copy_entry(self) -> None:
        self.app.copy_to_clipboard(self.full_text())
        self.app.notify("Copied the call to the clipboard.", timeout=2)


RESULT_LINES = 30  # a row shows this much of a result; c copies all of it


def clip_lines(text: str, most: int) -> str:
    lines = text.splitlines()
    if len(lines) <= most:
        return text
    return "\n".join([*lines[:most], f"\u2026 {len(lines) - most} more lines (c copies the whole call)"])


def answer_widget(widget: Widget | None) -> AssistantMessage | None:
    """``widget`` as an answer's widget, or None. An answer's module (Markdown) is imported with
    the first answer shown: until then no widget can be one."""
    answer = sys.modules.get("tui.widgets.answer")
    return widget if answer is not None and isinstance(widget, answer.AssistantMessage) else None


def widget_for(item: Item, following: Callable[[], int | None] = lambda: None) -> Widget:
    """A new widget for ``item``; ``following`` (for an answer) gives the log's height while its
    reader follows the end (the answer folds its early blocks then), else None."""
    if isinstance(item, UserItem):
        w: Widget = UserMessage(item, classes="entry user")
    elif isinstance(item, AssistantItem):
        from tui.widgets.answer import AssistantMessage

        w = AssistantMessage(item, following, classes="entry assistant")
    elif isinstance(item, ToolItem):
        w = ToolCallRow(item, classes="entry tool")
    elif isinstance(item, ThinkingItem):
        w = ThinkingView(item, classes="entry thinking")
    else:
        assert isinstance(item, NoteItem)
        w = NoteRow(item, classes="entry note")
    item.widget = w
    return w


class ChatLog(VerticalScroll):
    """All of a chat's entries as records; a window of them mounted."""

    WINDOW: ClassVar[int] = 40  # entries mounted on open, and after jumping to the end
    PAGE: ClassVar[int] = 25  # entries mounted per step when scrolling past the window
    MAX_MOUNTED: ClassVar[int] = 120  # beyond this the far end of the window is unmounted
    EDGE: ClassVar[int] = 2  # rows from the top or bottom that count as "at the edge"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("home", "load_all_earlier", "Oldest", show=False, id="log_oldest"),
    ]

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.items: list[Item] = []
        self.start = 0  # the mounted window is items[start:end]
        self.end = 0
        self._lock = asyncio.Lock()  # one change of the window at a time
        self._earlier = Static("", id="earlier", classes="marker")
        self._later = Static("", id="later", classes="marker")
        self._hint = Static(welcome(lambda action: ""), id="empty-hint")

    def compose(self) -> ComposeResult:
        yield self._hint
        yield self._earlier
        yield self._later

    def on_mount(self) -> None:
        self.anchor()
        self._update_markers()

    def set_welcome(self, text: Content) -> None:
        """What the empty chat says (tui/welcome.py): the open chat's provider decides part of it."""
        self._hint.update(text)

    # -- the window -----------------------------------------------------------------------
    @property
    def mounted(self) -> int:
        return self.end - self.start

    @property
    def shows_tail(self) -> bool:
        return self.end == len(self.items)

    def _update_markers(self) -> None:
        self._hint.display = not self.items
        self._earlier.update(f"\u25b2 {self.start:,} earlier entries \u2014 scroll up to load them")
        self._earlier.display = self.start > 0
        later = len(self.items) - self.end
        self._later.update(f"\u25bc {later:,} later entries \u2014 scroll down to load them")
        self._later.display = later > 0

    async def _unmount(self, items: list[Item]) -> None:
        widgets = [i.widget for i in items if i.widget is not None]
        for i in items:
            i.widget = None
        if widgets:
            await self.remove_children(widgets)

    async def _mount(self, items: list[Item], **where: Widget) -> list[Widget]:
        """Mount entries for ``items`` and wait until their Markdown is parsed and mounted."""
        widgets = [widget_for(i, self._following) for i in items]
        if not widgets:
            return widgets
        await self.mount_all(widgets, **where)
        answers = [a for a in map(answer_widget, widgets) if a is not None]
        texts = [a.show(safe(a.item.text, multiline=True)) for a in answers if a.item.text]
        if texts:
            await asyncio.gather(*texts)
        return widgets

    async def load(self, items: list[Item]) -> None:
        """Show a chat: every record kept, the last ``WINDOW`` mounted."""
        async with self._lock:
            await self._unmount(self.items[self.start : self.end])
            self.items = list(items)
            self.start = self.end = 0
            await self._mount_tail()
        self.anchor()

    async def _mount_tail(self) -> None:
        """Mount the last ``WINDOW`` records in place of the window (under the lock)."""
        old = self.items[self.start : self.end]
        self.end = len(self.items)
        self.start = max(0, self.end - self.WINDOW)
        await self._unmount(old)
        await self._mount(self.items[self.start : self.end], before=self._later)
        self._update_markers()

    async def clear(self) -> None:
        await self.load([])

    async def add(self, item: Item) -> Widget | None:
        """Append a record; mount it if the window shows the end of the chat."""
        async with self._lock:
            was_tail = self.shows_tail
            self.items.append(item)
            if not was_tail:
                self._update_markers()
                return None
            self.end = len(self.items)
            (widget,) = await self._mount([item], before=self._later)
            if self.mounted > self.MAX_MOUNTED and not self._anchor_released:
                cut = self.mounted - self.MAX_MOUNTED
                gone = self.items[self.start : self.start + cut]
                self.start += cut
                await self._unmount(gone)
            self._update_markers()
            return widget

    async def show_tail(self) -> None:
        """Jump to the end of the chat (a new turn starts there)."""
        async with self._lock:
            if not self.shows_tail:
                await self._mount_tail()
        self.anchor()

    async def load_earlier(self) -> int:
        """Mount the page before the window; returns how many entries were mounted."""
        return await self._page(earlier=True)

    async def load_later(self) -> int:
        """Mount the page after the window; returns how many entries were mounted."""
        return await self._page(earlier=False)

    async def _page(self, *, earlier: bool) -> int:
        """Grow the window by a page at one end; past ``MAX_MOUNTED`` the other end gives way.
        The entry at the growing edge stays where the reader sees it."""
        async with self._lock:
            if (self.start == 0) if earlier else self.shows_tail:
                return 0
            edge = self.items[self.start if earlier else self.end - 1].widget if self.mounted else None
            offset = self._position_of(edge)
            if earlier:
                added = self.items[max(0, self.start - self.PAGE) : self.start]
                self.start -= len(added)
            else:
                added = self.items[self.end : self.end + self.PAGE]
                self.end += len(added)
            cut = max(0, self.mounted - self.MAX_MOUNTED)
            if earlier:
                gone = self.items[self.end - cut : self.end]
                self.end -= cut
            else:
                gone = self.items[self.start : self.start + cut]
                self.start += cut
            with self.app.batch_update():
                await self._mount(added, **({"after": self._earlier} if earlier else {"before": self._later}))
                await self._unmount(gone)
                self._update_markers()
            self._restore_position(edge, offset)
            return len(added)

    async def action_load_all_earlier(self) -> None:
        while await self.load_earlier():
            pass
        self.scroll_home(animate=False)

    def _position_of(self, widget: Widget | None) -> float | None:
        if widget is None or not widget.is_mounted:
            return None
        return widget.virtual_region.y - self.scroll_y

    def _restore_position(self, widget: Widget | None, offset: float | None) -> None:
        """Keep ``widget`` where it was on screen after entries were added or removed around it."""
        if widget is None or offset is None:
            return

        def restore() -> None:
            if widget.is_mounted:
                self.scroll_to(y=widget.virtual_region.y - offset, animate=False, immediate=True)

        self.call_after_refresh(restore)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if self._anchor_released and new_value < old_value:
            self.unfold()  # the reader goes up: a folded answer shows whole
        if self._lock.locked() or not self.is_mounted:
            return
        if new_value <= self.EDGE and self.start > 0 and new_value < old_value:
            self.run_worker(self.load_earlier(), group="log-window", exclusive=True)
        elif new_value >= self.max_scroll_y - self.EDGE and not self.shows_tail and new_value > old_value:
            self.run_worker(self.load_later(), group="log-window", exclusive=True)

    def _following(self) -> int | None:
        """The log's height while its reader follows the end (an answer may fold then), else None."""
        return None if self._anchor_released else self.size.height

    def unfold(self) -> None:
        """Show every folded answer whole (AssistantMessage.fold), the reader's place kept."""
        for child in self.children:
            widget = answer_widget(child)
            if widget is not None and widget.folded:
                blocks = widget.children
                first_shown = blocks[widget.folded] if widget.folded < len(blocks) else None
                offset = self._position_of(first_shown)  # where the reader sees it now
                widget.unfold()
                self._restore_position(first_shown, offset)

    # -- streaming ------------------------------------------------------------------------
    async def stream(self, item: AssistantItem, fragment: str) -> None:
        item.text += fragment
        widget = answer_widget(item.widget)
        if widget is not None and widget.is_mounted:
            await widget.write(fragment)

    async def finish(self, item: AssistantItem, text: str | None = None) -> None:
        """End a streamed message with one update from the whole text."""
        if text is not None:
            item.text = text
        item.streaming = False
        widget = answer_widget(item.widget)
        if widget is not None and widget.is_mounted:
            await widget.finish()

    def refresh_item(self, item: Item) -> None:
        widget = item.widget
        if isinstance(widget, ToolCallRow) and widget.is_mounted:
            widget.refresh_from_item()

    def last_assistant_text(self) -> str:
        for item in reversed(self.items):
            if isinstance(item, AssistantItem) and item.text:
                return item.text
        return ""
