"""The real app against the loopback streaming server (tests/streaming_server.py): the answer is
on screen while the server is still sending it, on every wire (Chat Completions, Anthropic,
Responses); Esc and ctrl+c stop a turn at once (the server sees the connection close, the
partial answer stays, the next message is answered); ctrl+c with no turn running keeps the quit
hint; paragraphs of an answer are apart; a long answer folds its start while it streams; the
collector waits while a turn streams."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.streaming_server import markdown_answer, serve
from tests.tui.conftest import make_app, opened, send, settled, until
from tui.app import DeferchatApp
from tui.router import STOPPED_NOTE
from tui.state import AssistantItem, NoteItem, UserItem
from tui.widgets.answer import AssistantMessage

TOKENS = 400
SEED = 5
ANSWER = markdown_answer(TOKENS, seed=SEED)
SLOW = {"parts": [{"markdown": TOKENS, "seed": SEED}], "chunk_delay": 0.02}  # 8 s of sending, at least
NEXT = {"parts": [{"text": "Second answer, after the stop."}]}


def screen_text(app: DeferchatApp) -> str:
    """What the terminal shows now, as plain text (the compositor's lines)."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


def answer_widget(app: DeferchatApp) -> AssistantMessage | None:
    for item in app.log_view.items:
        if isinstance(item, AssistantItem) and isinstance(item.widget, AssistantMessage):
            return item.widget
    return None


def shown(app: DeferchatApp) -> str:
    widget = answer_widget(app)
    return widget.source if widget is not None else ""


def plain(markdown: str) -> str:
    return re.sub(r"[*`]", "", markdown)


def phrase(paragraph: int, words: int = 3) -> str:
    """The first words of one of the answer's paragraphs, as the screen shows them."""
    paragraphs = [b for b in ANSWER.split("\n\n") if b and b[0].isalpha()]
    return " ".join(plain(paragraphs[paragraph]).split()[:words])


def mid_stream(server: Any, n: int = 0) -> bool:
    """The n-th request is still being answered (the server has not sent its end)."""
    return len(server.requests) > n and "outcome" not in server.requests[n]


@pytest.mark.parametrize("wire", ["openai-chat", "anthropic", "openai"])
async def test_the_answer_is_on_screen_while_the_server_still_sends_it(engine: Any, wire: str) -> None:
    with serve([SLOW]) as server:
        app = make_app(engine, provider=wire, model="m", base_url=server.url_for(wire))
        async with app.run_test(size=(120, 40)) as pilot:
            await opened(pilot)
            await send(pilot, "write the long answer")
            first = phrase(0)
            await until(pilot, lambda: first in screen_text(app), timeout=20)
            assert mid_stream(server), "the text showed only after the stream ended"
            sent = server.requests[0].get("chunks", 0)
            assert 0 < sent < len(ANSWER.split())
            # it grows while the server goes on sending
            before = len(shown(app))
            await until(pilot, lambda: len(shown(app)) > before + 200, timeout=20)
            assert mid_stream(server)
            assert ANSWER.startswith(shown(app))
            await until(pilot, lambda: not app.turn_running, timeout=60)
            await settled(pilot)
            assert server.requests[0]["outcome"] == "completed"
            assert shown(app) == ANSWER


@pytest.mark.parametrize("key", ["escape", "ctrl+c"])
async def test_a_key_stops_the_turn_at_once_and_the_next_message_is_answered(engine: Any, key: str) -> None:
    with serve([SLOW, NEXT]) as server:
        app = make_app(engine, provider="openai-chat", model="m", base_url=server.url_for("openai-chat"))
        async with app.run_test(size=(120, 40)) as pilot:
            await opened(pilot)
            await send(pilot, "write the long answer")
            await until(pilot, lambda: len(shown(app)) > 200, timeout=20)
            assert app.turn_running and mid_stream(server)
            await pilot.press(key)
            await until(pilot, lambda: not app.turn_running, timeout=3)
            [record] = server.wait_for(1, outcome=True, timeout=5)
            assert record["outcome"] == "client_closed" and record["chunks"] < len(ANSWER.split())
            await settled(pilot)
            partial = shown(app)
            assert partial and ANSWER.startswith(partial) and len(partial) < len(ANSWER)
            notes = [i.text for i in app.log_view.items if isinstance(i, NoteItem)]
            assert STOPPED_NOTE in notes
            assert app.focused is app.composer

            # kept in the store too: the partial answer, the turn stopped
            store = engine.store
            chat_id = app.session.chat_id
            assert store.messages(chat_id)[-1].blocks == [{"type": "text", "text": partial}]
            assert store.events(chat_id, ("turn.completed",))[-1]["status"] == "stopped"

            await send(pilot, "and then?")
            await settled(pilot)
            answers = [i.text for i in app.log_view.items if isinstance(i, AssistantItem)]
            assert answers == [partial, "Second answer, after the stop."]


def conversation(app: DeferchatApp) -> list[tuple[str, str]]:
    """The log as a person reads the exchange: their messages, the answers, the stopped notes."""
    out = []
    for item in app.log_view.items:
        if isinstance(item, UserItem | AssistantItem):
            out.append((type(item).__name__, item.text))
        elif isinstance(item, NoteItem) and item.text == STOPPED_NOTE:
            out.append(("stopped", item.level))
    return out


async def test_a_reopened_chat_shows_its_stopped_turn_as_stopped(engine: Any) -> None:
    with serve([SLOW, NEXT]) as server:
        options = {"provider": "openai-chat", "model": "m", "base_url": server.url_for("openai-chat")}
        app = make_app(engine, **options)
        async with app.run_test(size=(120, 40)) as pilot:
            await opened(pilot)
            await send(pilot, "write the long answer")
            await until(pilot, lambda: len(shown(app)) > 200, timeout=20)
            await pilot.press("escape")
            await settled(pilot)
            await send(pilot, "and then?")
            await settled(pilot)
            live = conversation(app)
            chat_id = app.session.chat_id  # type: ignore[union-attr]
        assert [kind for kind, _ in live] == ["UserItem", "AssistantItem", "stopped", "UserItem", "AssistantItem"]
        again = make_app(engine, open_chat=chat_id, **options)
        async with again.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: again.session is not None and len(conversation(again)) == len(live))
            assert conversation(again) == live  # the stop said where it happened, as it was said live


async def test_ctrl_c_with_no_turn_running_keeps_the_quit_hint(engine: Any) -> None:
    app = make_app(engine)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        app.log_view.focus()
        await pilot.press("ctrl+c")
        await pilot.pause(0.1)
        assert any("to quit" in str(n.message) for n in app._notifications)
        assert not app.check_action("stop_turn", ())


async def test_escape_with_no_turn_running_still_comes_back_to_the_input(engine: Any) -> None:
    app = make_app(engine)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        app.log_view.focus()
        await pilot.press("escape")
        assert app.focused is app.composer


async def test_paragraphs_of_an_answer_are_apart(engine: Any) -> None:
    text = "First paragraph, one line.\n\nSecond paragraph, also one line.\n\n- a list item\n\nLast words."
    with serve([{"parts": [{"text": text, "chunk_chars": 7}]}]) as server:
        app = make_app(engine, provider="openai-chat", model="m", base_url=server.url_for("openai-chat"))
        async with app.run_test(size=(120, 40)) as pilot:
            await opened(pilot)
            await send(pilot, "paragraphs please")
            await settled(pilot)
            region = app.log_view.region  # the log's columns only: the roster shares the rows
            lines = [line[region.x : region.right] for line in screen_text(app).splitlines()]

            def row(words: str) -> int:
                return next(i for i, line in enumerate(lines) if words in line)

            first, second, item, last = (
                row("First paragraph"),
                row("Second paragraph"),
                row("a list item"),
                row("Last words"),
            )
            assert second - first == 2 and item - second == 2 and last - item == 2  # one blank line between
            assert not lines[first + 1].strip()


async def test_a_long_answer_folds_its_start_while_streaming_and_unfolds_where_the_reader_is(engine: Any) -> None:
    """Followed at its end, a long answer shows only its last screens (the early blocks hidden,
    the title counting them), so each append lays out a bounded screen; scrolling up shows the
    whole answer again with the block the reader was looking at where it was."""
    from tui.widgets.answer import FOLD_BLOCKS

    long_answer = markdown_answer(2500, seed=4)
    with serve([{"parts": [{"markdown": 2500, "seed": 4}], "chunk_tokens": 3}]) as server:
        app = make_app(engine, provider="openai-chat", model="m", base_url=server.url_for("openai-chat"))
        async with app.run_test(size=(120, 40)) as pilot:
            await opened(pilot)
            await send(pilot, "the long one")
            await until(pilot, lambda: (w := answer_widget(app)) is not None and w.folded > 0, timeout=30)
            widget = answer_widget(app)
            assert widget is not None and "earlier blocks folded" in str(widget.border_title)
            await until(pilot, lambda: not app.turn_running, timeout=60)
            await settled(pilot)
            assert widget.source == long_answer
            shown = [b for b in widget.children if b.display]
            assert widget.folded > 0 and len(shown) <= FOLD_BLOCKS + 8
            assert all(not b.display for b in list(widget.children)[: widget.folded])

            first_shown = list(widget.children)[widget.folded]
            before = first_shown.region.y
            app.log_view.scroll_relative(y=-3, animate=False, immediate=True)  # the reader goes up
            await pilot.pause(0.2)
            assert widget.folded == 0 and all(b.display for b in widget.children)
            assert str(widget.border_title) == "Assistant"
            assert abs(first_shown.region.y - (before + 3)) <= 1  # the same block, 3 rows lower


async def test_the_collector_waits_while_a_turn_streams_and_the_app_leaves_it_as_it_was(engine: Any) -> None:
    import gc

    from tui.controllers.turns import COLLECT_AFTER

    assert gc.isenabled()
    with serve([SLOW]) as server:
        app = make_app(engine, provider="openai-chat", model="m", base_url=server.url_for("openai-chat"))
        async with app.run_test(size=(120, 40)) as pilot:
            await opened(pilot)
            assert gc.get_freeze_count() > 0  # what startup built is frozen
            await send(pilot, "write the long answer")
            await until(pilot, lambda: len(shown(app)) > 100, timeout=20)
            assert not gc.isenabled() and app.collector.held  # no collection mid-stream
            await pilot.press("escape")
            await until(pilot, lambda: not app.turn_running, timeout=5)
            await until(pilot, lambda: gc.isenabled(), timeout=COLLECT_AFTER + 5)
            assert not app.collector.held
    assert gc.isenabled() and gc.get_freeze_count() == 0
