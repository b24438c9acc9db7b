"""An assistant's answer in the chat log: Markdown, streamed in paced pieces while the model writes.

Its own module, imported when the log shows its first answer: Textual's Markdown widget and
its parser cost about 30 ms to import, which the app's first frame (an empty log) does not pay.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable

from markdown_it import MarkdownIt
from textual.await_complete import AwaitComplete
from textual.geometry import Spacing
from textual.widget import Widget
from textual.widgets import Markdown
from textual.widgets.markdown import MarkdownBlock, MarkdownFence, MarkdownStream

from core.display import safe
from tui.state import AssistantItem
from tui.widgets.entry import COPY_BINDINGS, CopyMixin

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

    def __init__(self, item: AssistantItem, following: Callable[[], int | None] = lambda: None, **kw) -> None:
        # Empty at mount: the log sets the text and awaits it (see ChatLog._mount), so it
        # knows the entry's height before it keeps the reader's place.
        super().__init__("", **kw)
        self.item = item
        self.following = following  # the log's height while its reader follows the end, else None
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
        blocks are folded; scrolling up shows them again (:meth:`~tui.widgets.chat_log.ChatLog.unfold`), with the
        reader's place kept, as the log's own window of entries does."""
        height = self.following()
        if height is None:
            return
        blocks = list(self.children)
        if len(blocks) - self.folded <= FOLD_BLOCKS:
            return
        keep_lines = int(FOLD_SCREENS * max(height, 10))
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
