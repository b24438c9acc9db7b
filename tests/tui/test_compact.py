"""Summarising the chat's history from the app: the command palette's *Summarise the chat's
history* summarises every turn but the latest (the demo, offline, from the turns' own text), the
log says so in a note, and the store keeps the turns; with only one turn there is nothing to
summarise, and the app says that instead."""

from __future__ import annotations

from typing import Any

from tests.tui.conftest import make_app, opened, send, settled, until
from tui.state import NoteItem


def notes(app: Any) -> list[str]:
    return [i.text for i in app.log_view.items if isinstance(i, NoteItem)]


async def test_the_palette_summarises_the_history_and_the_log_says_so(engine: Any) -> None:
    app = make_app(engine)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        for text in ("hello", "what can you do?", "thanks"):
            await send(pilot, text)
            await settled(pilot)
        await pilot.press("ctrl+p")
        await pilot.pause(0.2)
        await pilot.press(*"Summarise the chat")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await until(pilot, lambda: any("Summarised the first 2 turns" in n for n in notes(app)), timeout=10)
        await settled(pilot)
        chat_id = app.session.chat_id
    [row] = engine.store.summaries(chat_id)
    assert row.reason == "owner" and row.method == "extractive" and row.turns == 2
    said = [
        b["text"] for m in engine.store.messages(chat_id) if m.role == "user" for b in m.blocks if b["type"] == "text"
    ]
    assert said == ["hello", "what can you do?", "thanks"]  # the turns are kept


async def test_with_one_turn_there_is_nothing_to_summarise(engine: Any) -> None:
    app = make_app(engine)
    told: list[str] = []
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        notify = app.notify
        app.notify = lambda message, **kw: (told.append(str(message)), notify(message, **kw))  # type: ignore[method-assign,assignment,func-returns-value]
        await send(pilot, "hello")
        await settled(pilot)
        app.action_compact()
        await until(pilot, lambda: any("nothing to summarise" in t for t in told), timeout=10)
        assert engine.store.summaries(app.session.chat_id) == []


async def test_slash_compact_does_the_same(engine: Any) -> None:
    app = make_app(engine)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        for text in ("hello", "thanks"):
            await send(pilot, text)
            await settled(pilot)
        app.composer.focus()
        app.composer.text = "/compact"
        await pilot.press("enter")
        await until(pilot, lambda: any("Summarised the first turn" in n for n in notes(app)), timeout=10)
        await settled(pilot)
        assert [r.reason for r in engine.store.summaries(app.session.chat_id)] == ["owner"]
