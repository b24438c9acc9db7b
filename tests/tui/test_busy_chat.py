"""A chat whose turn runs in another deferchat (it holds the chat's turn lease): the app says so
when it opens the chat, and a message sent there is refused with the same clear line, not run."""

from __future__ import annotations

import time

from core.engine import Engine
from tests.tui.conftest import SCRIPTS, make_app, opened, send, settled, until
from tui.state import NoteItem

ELSEWHERE = "another-host/4026531836/4242/cafe0001"


async def test_a_chat_busy_in_another_process_is_shown_and_refused(engine: Engine) -> None:
    app = make_app(engine, script=str(SCRIPTS / "code_answer.json"))
    async with app.run_test(size=(110, 32)) as pilot:
        await opened(pilot)
        await send(pilot, "show me some code")
        await settled(pilot)
        chat_id = app.session.chat_id
    store = engine.store
    store.start_turn(chat_id, None)  # another process's turn, running now
    t = time.time()
    store.db.execute(
        "insert into turn_leases (chat_id, owner, acquired_at, heartbeat_at, expires_at) values (?, ?, ?, ?, ?)",
        [chat_id, ELSEWHERE, t, t, t + 60],
    )
    count = len(store.messages(chat_id))

    app = make_app(engine, open_chat=chat_id)
    async with app.run_test(size=(110, 32)) as pilot:
        await opened(pilot)
        await until(pilot, lambda: any(isinstance(i, NoteItem) and "is busy" in i.text for i in app.log_view.items))
        note = next(i for i in app.log_view.items if isinstance(i, NoteItem) and "is busy" in i.text)
        assert "pid 4242 on another-host" in note.text and note.level == "warning"
        app.composer.focus()
        app.composer.text = "and now?"
        await pilot.press("enter")
        await until(pilot, lambda: any("is busy" in n.message for n in app._notifications))
        await until(pilot, lambda: not app.turn_running)
    assert len(store.messages(chat_id)) == count  # nothing was sent, nothing stored
