"""The chat log: messages, streamed Markdown, tool-call rows and notes.

Every entry is backed by a plain record (:mod:`tui.state`); the log keeps all records and
mounts only a window of them, so a chat of thousands of messages opens as fast as a short
one. Scrolling to the top mounts the previous page (and, past a limit, unmounts the far
end); scrolling back down does the reverse. Live events update the record and, when its
widget is mounted, the widget.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import ClassVar

from markdown_it import MarkdownIt
from textual.app import ComposeResult
from textual.await_complete import AwaitComplete
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.geometry import Spacing
from textual.widget import Widget
from textual.widgets import Collapsible, Markdown, Static
from textual.widgets.markdown import MarkdownBlock, MarkdownFence, MarkdownStream

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
from tui.widgets.thinking import ThinkingView

# A frame that brings a streamed answer's new blocks costs what it lays out and paints: about
# 25-30 ms of CPU for half a screen of them (a table, a list), about 40 ms for a whole screen
# (tests/bench/bench_streaming.py, 120x40, a 2-core machine). So a fast stream is shown in
# pieces of half a screen, 20 a second, rather than a screen and a half 15 times a second.
STREAM_INTERVAL = 1 / 20  # seconds between two renders of a streamed answer, at least
STREAM_MOST = 700  # characters one render of a streamed answer takes in, at most (half a screen)
FRAME_WAIT = 1.0  # seconds a streamed answer waits, at most, for the frame that shows an append
FIRST_BLOCK_MARGIN = Spacing(0, 0, 1, 0)  # the first shown block of an answer: no margin above
LAST_BLOCK_MARGIN = Spacing(0, 0, 0, 0)  # the last: none below
FOLD_BLOCKS = 4  # an answer showing more blocks than this, its reader at its end, folds the early ones
FOLD_SCREENS = 1.0  # ... keeping at least this many screens of its end shown

COPY_BINDINGS: list[BindingType] = [Binding("c", "copy_entry", "Copy", id="copy_message")]


class CopyMixin:
    """A focusable entry; ``c`` copies what it holds (each widget class lists COPY_BINDINGS:
    Textual reads BINDINGS from widget classes only)."""

    can_focus = True

    def copy_text(self) -> str:
        raise NotImplementedError

    def action_copy_entry(self) -> None:
        text = self.copy_text()
        if text:
            self.app.copy_to_clipboard(text)  # type: ignore[attr-defined]
            self.app.notify("Copied to the clipboard.", timeout=2)  # type: ignore[attr-defined]


class UserMessage(CopyMixin, Static):
    """One widget per entry (the log mounts many): the label is the top border's title."""

    BINDINGS = COPY_BINDINGS

    def __init__(self, item: UserItem, **kw) -> None:
        super().__init__(Content(item.text), **kw)
        self.item = item
        self.border_title = "You"

    def copy_text(self) -> str:
        return self.item.text


WARM_LEXERS = ("python", "bash", "json", "javascript", "typescript")  # the code most answers show
_lexers_warmed = threading.Event()


def warm_lexers() -> None:
    """Load the highlighter's common lexers in a thread of their own, once, when the first answer
    streams: the first code block in a language otherwise loads and compiles its lexer in the
    middle of a stream (25 ms for Python, on the loop, measured)."""
    if _lexers_warmed.is_set():
        return
    _lexers_warmed.set()

    def load() -> None:
        for language in WARM_LEXERS:
            MarkdownFence.highlight("x", language)

    threading.Thread(target=load, name="warm-lexers", daemon=True).start()


def block_lines(lines: list[str], block: MarkdownBlock) -> list[str]:
    """The source lines a block was parsed from, without their line ends (a last line that
    gains its newline is the same line)."""
    start, end = block.source_range
    return [line.rstrip("\r\n") for line in lines[start:end]]


class PacedMarkdownStream(MarkdownStream):
    """Textual's ``MarkdownStream`` (fragments gathered while an append renders, then appended
    as one), paced: at most one append per ``interval``, of at most ``most`` characters, and
    one append per frame, however far behind the stream is.

    Each append lays the whole screen out again, so a model that sends a token every few
    milliseconds would otherwise pay that per token; and an append's work (parsing, mounting
    the new blocks, the next frame) grows with what it brings, so a burst (a fast provider, or
    an app that fell behind) is shown in pieces a frame can carry, not in one long pause. The
    stream waits for the frame that shows an append before ``appended`` runs (the new blocks
    have their heights then) and before the next append, also while it empties after
    ``stop``: two appends in one frame would make that frame lay out and paint both."""

    def __init__(
        self, markdown_widget: Markdown, interval: float, most: int, appended: Callable[[], None] | None = None
    ) -> None:
        super().__init__(markdown_widget)
        self.interval = interval
        self.most = most
        self.appended = appended or (lambda: None)
        self._stopping = False

    def _take(self) -> str:
        """What the next append brings: all that is pending, or at most ``most`` characters
        ending where a block ends (else a line), so a list or table is not mounted half and
        then again whole."""
        pending = "".join(self._pending)
        self._pending.clear()
        if len(pending) <= self.most:
            return pending
        cut = pending.rfind("\n\n", 0, self.most) + 2
        if cut < self.most // 4:
            cut = pending.rfind("\n", 0, self.most) + 1
            if cut < self.most // 4:
                cut = self.most
        self._pending.append(pending[cut:])
        return pending[:cut]

    async def stop(self) -> None:
        """Show what is still pending, at the same pace, then end."""
        self._stopping = True
        self._new_markup.set()
        if self._task is not None:
            await self._task
            self._task = None
        self._stopped = True

    async def _shown(self) -> None:
        """Wait for the frame that shows what was appended (not forever: an app that is
        closing may never draw it)."""
        drawn = asyncio.Event()
        if self.markdown_widget.call_after_refresh(drawn.set):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(drawn.wait(), FRAME_WAIT)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while self._pending or not self._stopping:
            if not self._pending:
                await self._new_markup.wait()
                self._new_markup.clear()
                continue
            started = loop.time()
            await self.markdown_widget.append(self._take())
            await self._shown()
            self.appended()  # the new blocks have their heights now
            await asyncio.sleep(max(0.0, self.interval - (loop.time() - started)))


class AssistantMessage(CopyMixin, Markdown):
    """Markdown, streamed through ``MarkdownStream`` while the model writes.

    The stream batches fragments that arrive faster than they render, and each append parses
    again from the start of the document's last block, so what it shows at the end is what a
    parse of the whole text shows: the message ends by parsing its last block once more, not
    by rendering the whole document again (for a long answer that re-mounts hundreds of
    widgets and freezes the app for a second or more). Only a final text that differs from
    what was streamed (the engine's joined text blocks) is set whole."""

    BINDINGS = COPY_BINDINGS

    def __init__(self, item: AssistantItem, **kw) -> None:
        # Empty at mount: the log sets the text and awaits it (see ChatLog._mount), so it
        # knows the entry's height before it keeps the reader's place.
        super().__init__("", **kw)
        self.item = item
        self.border_title = "Assistant"
        self._stream: MarkdownStream | None = None
        self.folded = 0  # leading blocks hidden (fold)
        # the last block as the last append left it: (widget, kind, source lines, their text)
        self._tail: tuple[MarkdownBlock, type[MarkdownBlock], tuple[int, int], list[str]] | None = None
        self._edges: dict[Widget, Spacing] = {}  # blocks whose margin mark_edges set, and to what

    async def write(self, fragment: str) -> None:
        """Stream ``fragment`` in (the stream gathers fragments and calls :meth:`append`)."""
        if self._stream is None:
            warm_lexers()
            self._stream = PacedMarkdownStream(self, STREAM_INTERVAL, STREAM_MOST, self._appended)
            self._stream.start()
        await self._stream.write(safe(fragment, multiline=True))

    def append(self, markdown: str) -> AwaitComplete:
        """Textual's ``Markdown.append`` (the text parsed again from the start of the last block;
        that block updated, the blocks after it mounted), except that the last block is left
        as it is when the new parse gives it back unchanged: the same kind of block over the
        same lines of the same text. Textual's own append rebuilds it every time, and for a
        list (four widgets an item) or a table that is a whole block mounted again, laid out
        and painted in the next frame, on every append of a stream."""
        parser = MarkdownIt("gfm-like") if self._parser_factory is None else self._parser_factory()
        self._markdown = self.source + markdown

        async def await_append() -> None:
            async with self.lock:
                lines = self._markdown.splitlines(keepends=True)
                start_line = self._last_parsed_line
                tokens = parser.parse("".join(lines[start_line:]))
                for token in reversed(tokens):
                    if token.map is not None and token.level == 0:
                        self._last_parsed_line = start_line + token.map[0]
                        break
                new_blocks = list(self._parse_markdown(tokens))
                for block in new_blocks:
                    start, end = block.source_range
                    block.source_range = (start + start_line, end + start_line)
                headers = any(block.name == "heading_open" for block in new_blocks)  # as MarkdownHeader
                existing = [child for child in self.children if isinstance(child, MarkdownBlock)]
                with self.app.batch_update():
                    if existing and new_blocks:
                        last, first = existing[-1], new_blocks[0]
                        if self._tail == (last, type(first), first.source_range, block_lines(lines, first)):
                            new_blocks = new_blocks[1:]  # unchanged: nothing to do
                        else:
                            last.source_range = first.source_range
                            with contextlib.suppress(IndexError):  # as Markdown.append
                                await last._update_from_block(first)
                                new_blocks = new_blocks[1:]
                    if new_blocks:
                        await self.mount_all(new_blocks)
                blocks = [child for child in self.children if isinstance(child, MarkdownBlock)]
                self._tail = None
                if blocks:
                    tail = blocks[-1]
                    self._tail = (tail, type(tail), tail.source_range, block_lines(lines, tail))
                if headers:
                    self._table_of_contents = None
                    self.post_message(Markdown.TableOfContentsUpdated(self, self.table_of_contents).set_sender(self))

        return AwaitComplete(await_append())

    async def finish(self) -> None:
        if self._stream is not None:
            await self._stream.stop()
            self._stream = None
        text = safe(self.item.text, multiline=True)
        if self.source == text:
            await self.append("")  # the last block, parsed once more now that it is whole
            self.mark_edges()
        else:
            await self.show(text)

    async def show(self, text: str) -> None:
        """Set the whole (sanitised) text at once: a message that was not streamed."""
        self.folded = 0
        self.border_title = "Assistant"
        await self.update(text)
        self.mark_edges()

    def _appended(self) -> None:
        self.fold()
        self.mark_edges()

    def mark_edges(self) -> None:
        """Every block has a blank line below it (Markdown's own margins keep paragraphs apart);
        the first and last shown blocks lose their outer margin, so the answer sits tight in its
        border. Whole margins, inline on those two blocks alone: a class (or :first-child and
        :last-child, which go stale as a stream appends) would restyle the block and every widget
        in it, each cell of a table and each item of a list, whenever an edge moves."""
        blocks = list(self.children)
        edges: dict[Widget, Spacing] = {}
        if self.folded < len(blocks):
            edges[blocks[self.folded]] = FIRST_BLOCK_MARGIN
        if blocks:
            edges[blocks[-1]] = LAST_BLOCK_MARGIN
        for block in self._edges.keys() - edges.keys():
            if block.styles.clear_rule("margin"):
                block.refresh(layout=True)
        for block, margin in edges.items():
            if self._edges.get(block) != margin:
                block.styles.margin = margin
        self._edges = edges

    def fold(self) -> None:
        """Hide (``display: none``) the early blocks of a long answer while its reader follows its
        end, keeping the last ``FOLD_SCREENS`` screens shown.

        The compositor lays out every shown widget of the screen on each append, and a long
        answer is hundreds of them (a list item is four, a table cell one): folded, an append
        costs what the tail costs, however long the answer grows. The title says how many
        blocks are folded; scrolling up shows them again (:meth:`ChatLog.unfold`), with the
        reader's place kept, as the log's own window of entries does."""
        log = self.parent
        if not isinstance(log, ChatLog) or log._anchor_released:
            return
        blocks = list(self.children)
        if len(blocks) - self.folded <= FOLD_BLOCKS:
            return
        keep_lines = int(FOLD_SCREENS * max(log.size.height, 10))
        lines, keep_from = 0, len(blocks)
        while keep_from > self.folded and lines < keep_lines:
            keep_from -= 1
            lines += blocks[keep_from].outer_size.height + 1  # a block and the blank line below it
        if keep_from - self.folded < FOLD_BLOCKS // 4:
            return  # not worth a change yet
        for block in blocks[self.folded : keep_from]:
            block.display = False
        self.folded = keep_from
        self.border_title = f"Assistant \u00b7 \u25b2 {self.folded:,} earlier blocks folded (scroll up to show them)"
        self.mark_edges()

    def unfold(self) -> None:
        """Show the folded blocks again."""
        if not self.folded:
            return
        for block in list(self.children)[: self.folded]:
            block.display = True
        self.folded = 0
        self.border_title = "Assistant"
        self.mark_edges()

    @property
    def markdown(self) -> Markdown:
        return self

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


def widget_for(item: Item) -> Widget:
    if isinstance(item, UserItem):
        w: Widget = UserMessage(item, classes="entry user")
    elif isinstance(item, AssistantItem):
        w = AssistantMessage(item, classes="entry assistant")
    elif isinstance(item, ToolItem):
        w = ToolCallRow(item, classes="entry tool")
    elif isinstance(item, ThinkingItem):
        w = ThinkingView(item, classes="entry thinking")
    else:
        assert isinstance(item, NoteItem)
        w = NoteRow(item, classes="entry note")
    item.widget = w
    return w


HINT = (
    "No messages yet. Ask for something the roster can do, e.g. \u201cstart a call to +1 555 0100 about the "
    "invoice\u201d or \u201cmove my 9am standup to 10am\u201d. The roster on the right shows which tools are "
    "defined, indexed (deferred) or skipped; ctrl+p lists every command."
)


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
        self._hint = Static(Content(HINT), id="empty-hint")

    def compose(self) -> ComposeResult:
        yield self._hint
        yield self._earlier
        yield self._later

    def on_mount(self) -> None:
        self.anchor()
        self._update_markers()

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
        widgets = [widget_for(i) for i in items]
        if not widgets:
            return widgets
        await self.mount_all(widgets, **where)
        texts = [
            w.show(safe(w.item.text, multiline=True))
            for w in widgets
            if isinstance(w, AssistantMessage) and w.item.text
        ]
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

    def unfold(self) -> None:
        """Show every folded answer whole (AssistantMessage.fold), the reader's place kept."""
        for widget in self.children:
            if isinstance(widget, AssistantMessage) and widget.folded:
                blocks = widget.children
                first_shown = blocks[widget.folded] if widget.folded < len(blocks) else None
                offset = self._position_of(first_shown)  # where the reader sees it now
                widget.unfold()
                self._restore_position(first_shown, offset)

    # -- streaming ------------------------------------------------------------------------
    async def stream(self, item: AssistantItem, fragment: str) -> None:
        item.text += fragment
        widget = item.widget
        if isinstance(widget, AssistantMessage) and widget.is_mounted:
            await widget.write(fragment)

    async def finish(self, item: AssistantItem, text: str | None = None) -> None:
        """End a streamed message with one update from the whole text."""
        if text is not None:
            item.text = text
        item.streaming = False
        widget = item.widget
        if isinstance(widget, AssistantMessage) and widget.is_mounted:
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
