"""A streamed answer's render: it shows while the model writes; however the text arrives (token
by token, in odd-sized pieces, or all at once, which the stream shows in pieces of at most
``most`` characters, one per frame) it ends as the whole text renders at once, block for block,
margins and all; a list or table the next append leaves unchanged is kept, not mounted again;
the pieces end where blocks end."""

from __future__ import annotations

import random
from typing import Any

import pytest
from textual.app import App, ComposeResult
from textual.widgets import Static

from tests.streaming_server import markdown_answer, tokens
from tests.tui.conftest import until
from tui.state import AssistantItem
from tui.widgets.answer import AssistantMessage, PacedMarkdownStream
from tui.widgets.chat_log import ChatLog


class Host(App[None]):
    def compose(self) -> ComposeResult:
        yield ChatLog()


def shape(widget: AssistantMessage) -> list[tuple[Any, ...]]:
    """Everything the answer shows: each widget's depth, kind, text, margin and whether it is
    shown, top to bottom (cells of a table updated in place are plain Statics, so their kind
    is not compared, only what they show)."""

    def text(w: Any) -> str:
        if getattr(w, "code", None):
            return str(w.code)
        content = getattr(w, "_content", None)
        if content is not None and hasattr(content, "plain"):
            return str(content.plain)
        return str(w.render()) if isinstance(w, Static) else ""

    rows: list[tuple[Any, ...]] = []

    def walk(w: Any, depth: int) -> None:
        for child in w.children:
            kind = "cell" if isinstance(child, Static) and "cell" in child.classes else type(child).__name__
            rows.append((depth, kind, text(child), tuple(child.styles.margin), child.display))
            walk(child, depth + 1)

    walk(widget, 0)
    return rows


def pieces(text: str, how: str, rng: random.Random) -> list[str]:
    if how == "tokens":
        return tokens(text)
    if how == "whole":
        return [text]
    out, i = [], 0
    while i < len(text):  # odd sizes: cut mid-word, mid-line, mid-table
        n = rng.choice((1, 2, 7, 31, 120, 900))
        out.append(text[i : i + n])
        i += n
    return out


@pytest.mark.parametrize(("seed", "how"), [(0, "whole"), (1, "odd"), (2, "tokens"), (3, "odd"), (7, "whole")])
async def test_a_streamed_answer_ends_as_the_whole_text_renders(seed: int, how: str) -> None:
    text = markdown_answer(1200, seed=seed)
    app = Host()
    async with app.run_test(size=(110, 34)) as pilot:
        log = app.query_one(ChatLog)
        streamed, widget = await streaming(log)
        rng = random.Random(seed)
        for i, piece in enumerate(pieces(text, how, rng)):
            await log.stream(streamed, piece)
            if i % 40 == 0:
                await pilot.pause()
        await log.finish(streamed)
        widget.unfold()  # a long answer followed at its end folds its start; shown whole now
        whole = AssistantItem(text=text)
        await log.add(whole)
        await pilot.pause()
        assert isinstance(whole.widget, AssistantMessage)
        assert widget.source == whole.widget.source == text
        kinds = {row[1] for row in shape(whole.widget)}
        assert {"MarkdownH1", "MarkdownBulletList", "MarkdownOrderedList", "MarkdownTable", "MarkdownFence"} <= kinds
        assert shape(widget) == shape(whole.widget)
        margins = [b.styles.margin for b in widget.children]
        assert margins[0].top == 0 and margins[-1] == (0, 0, 0, 0)
        assert [m.bottom for m in margins[:-1]] == [1] * (len(margins) - 1)
        # and the same height on screen, line for line
        assert [b.outer_size for b in widget.children] == [b.outer_size for b in whole.widget.children]


async def streaming(log: ChatLog) -> tuple[AssistantItem, AssistantMessage]:
    item = AssistantItem(streaming=True)
    await log.add(item)
    assert isinstance(item.widget, AssistantMessage)
    return item, item.widget


async def test_streamed_text_shows_while_the_model_writes() -> None:
    app = Host()
    async with app.run_test(size=(100, 30)) as pilot:
        log = app.query_one(ChatLog)
        item, widget = await streaming(log)
        await log.stream(item, "Hello ")
        await log.stream(item, "**world**")
        # shown before the message ends, through the stream (not only by the final update)
        await until(pilot, lambda: widget.source == "Hello **world**")
        await log.finish(item)
        assert widget.source == "Hello **world**"


async def test_a_list_or_table_the_next_append_leaves_unchanged_is_kept() -> None:
    app = Host()
    async with app.run_test(size=(100, 30)) as pilot:
        _, widget = await streaming(app.query_one(ChatLog))
        await widget.append("Intro.\n\n- one\n- two\n\n")
        [_, listed] = list(widget.children)
        await widget.append("| a | b |\n|---|---|\n| 1 | 2 |\n\n")
        assert list(widget.children)[1] is listed  # the list, parsed again the same, stays
        table = list(widget.children)[2]
        await widget.append("Closing words")
        await widget.append(" of the answer.\n")
        blocks = list(widget.children)
        assert blocks[1] is listed and blocks[2] is table and len(blocks) == 4
        # a list that grows is rebuilt, as Textual does
        await widget.append("\n- three\n")
        await widget.append("- four\n")
        assert len(list(widget.children)) == 5
        await pilot.pause()
        assert "four" in " ".join(str(w.render()) for w in widget.walk_children() if isinstance(w, Static))


def test_a_burst_is_shown_in_pieces_that_end_where_blocks_end() -> None:
    stream = PacedMarkdownStream.__new__(PacedMarkdownStream)  # _take alone: no widget, no task
    stream.most = 60
    stream._pending = ["A paragraph of some words.\n\n- a list\n- of items\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"]
    first = stream._take()
    assert first.endswith("\n\n") and len(first) <= 60 and "| 1 | 2 |" not in first
    rest = "".join(stream._pending)
    assert first + rest == "A paragraph of some words.\n\n- a list\n- of items\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
    stream._pending = ["x" * 150]  # no line end: cut at most
    assert stream._take() == "x" * 60
    stream._pending = ["word " * 8 + "\n" + "y" * 200]  # a line end, no block end
    assert stream._take() == "word " * 8 + "\n"
