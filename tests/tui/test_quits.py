"""Quits that lose nothing (issue 19, item 4), with Pilot: ctrl+q while a turn runs or an
approval waits asks first (stay, or quit and stop); a quit stops the turn as Esc does; a chat
reopened with an unfinished turn takes Enter and f5 at once. The real binary: test_tmux_quits.py."""

from __future__ import annotations

from typing import Any

from core.pipeline import codes
from tests.streaming_server import serve
from tests.tui.conftest import make_app, opened, send, settled, until
from tui.app import DeferchatApp
from tui.controllers.approvals import UNFINISHED
from tui.screens.dialogs import Confirm
from tui.state import AssistantItem, NoteItem, UserItem

CALL = "move my standup to 10"  # the demo model asks for an approval


def users(app: DeferchatApp) -> list[str]:
    return [i.text for i in app.log_view.items if isinstance(i, UserItem)]


def turns(engine: Any, chat_id: str) -> list[str]:
    rows = engine.store.db.execute("select status from turns where chat_id = ? order by started_at", [chat_id])
    return [status for (status,) in rows.fetchall()]


async def test_quit_while_an_approval_waits_asks_then_stops_the_turn_and_the_chat_goes_on(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(110, 32)) as pilot:
        await opened(pilot)
        await send(pilot, CALL)
        await until(pilot, lambda: app.approval_bar is not None)
        chat_id = app.session.chat_id  # type: ignore[union-attr]
        await pilot.press("ctrl+q")
        await until(pilot, lambda: isinstance(app.screen, Confirm))
        assert "waits for your approval" in app.screen.question and app.screen.no == "Stay"
        await pilot.press("enter")  # Stay has the focus: Enter alone quits nothing
        await until(pilot, lambda: not isinstance(app.screen, Confirm))
        assert app.is_running and app.turn_running and app.approval_bar is not None
        await pilot.press("ctrl+q")
        await until(pilot, lambda: isinstance(app.screen, Confirm))
        await pilot.press("y")
        await until(pilot, lambda: not app.is_running)
    assert app.return_value == 0
    assert turns(engine, chat_id) == ["stopped"]
    rows = engine.store.db.execute("select status from approvals where chat_id = ?", [chat_id]).fetchall()
    assert [status for (status,) in rows] == ["cancelled"]
    inv = engine.store.invocations(chat_id)[-1]  # the write it waited to approve: never run
    assert (inv.name, inv.status, inv.error_code) == ("schedule.update", "failed", codes.STOPPED)

    app = make_app(engine, open_chat=chat_id)  # reopened: no approval, and the next message goes at once
    async with app.run_test(size=(110, 32)) as pilot:
        await opened(pilot)
        assert app.approval_bar is None
        await send(pilot, "what time is it")
        await settled(pilot)
        assert users(app) == [CALL, "what time is it"]
    assert turns(engine, chat_id) == ["stopped", "done"]


async def test_ctrl_q_twice_quits_and_with_no_turn_it_does_not_ask(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(110, 32)) as pilot:
        await opened(pilot)
        await send(pilot, CALL)
        await until(pilot, lambda: app.approval_bar is not None)
        await pilot.press("ctrl+q")
        await until(pilot, lambda: isinstance(app.screen, Confirm))
        await pilot.press("ctrl+q")
        await until(pilot, lambda: not app.is_running)
    app = make_app(engine)
    async with app.run_test(size=(110, 32)) as pilot:
        await opened(pilot)
        await pilot.press("ctrl+q")
        await until(pilot, lambda: not app.is_running)
    assert app.return_value == 0


async def test_stop_and_quit_keeps_the_partial_answer_mid_stream(engine) -> None:
    """The one method for "stop the turn and quit" (a signal handler calls it too)."""
    script = [{"parts": [{"text": "word " * 400, "chunk_chars": 5}], "chunk_delay": 0.02}]
    with serve(script) as server:
        app = make_app(engine, provider="openai-chat", model="m", base_url=server.url_for("openai-chat"))
        async with app.run_test(size=(110, 32)) as pilot:
            await opened(pilot)
            chat_id = app.session.chat_id  # type: ignore[union-attr]
            await send(pilot, "go on and on")
            await until(pilot, lambda: any(isinstance(i, AssistantItem) and i.text for i in app.log_view.items))
            await app.stop_and_quit()
            await until(pilot, lambda: not app.is_running)
    assert turns(engine, chat_id) == ["stopped"]
    [answer] = [m for m in engine.store.messages(chat_id) if m.role == "assistant"]
    kept = answer.blocks[0]["text"]
    assert kept.startswith("word word") and len(kept) < len("word " * 400)


async def test_a_reopened_chat_with_an_unfinished_turn_takes_a_message_at_once(engine) -> None:
    session = await engine.open_chat(None, make_app(engine).options)
    store = engine.store
    msg = store.add_message(
        session.chat_id, "user", [{"type": "text", "text": "what time is it?"}], turn_id=None, parent_id=None
    )
    store.start_turn(session.chat_id, msg)  # the process died before the model answered
    await session.close()

    app = make_app(engine, open_chat=session.chat_id)
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(pilot)
        await until(pilot, lambda: any(isinstance(i, NoteItem) and i.text == UNFINISHED for i in app.log_view.items))
        await send(pilot, "what time is it now?")
        await settled(pilot)
        assert app.session is not None and app.session.parked() is None
        assert users(app)[-1] == "what time is it now?"
        assert any(isinstance(i, AssistantItem) and i.text.startswith("It is ") for i in app.log_view.items)
    assert turns(engine, session.chat_id) == ["stopped", "done"]


async def test_f5_resumes_a_reopened_chats_unfinished_turn(engine) -> None:
    session = await engine.open_chat(None, make_app(engine).options)
    store = engine.store
    msg = store.add_message(
        session.chat_id, "user", [{"type": "text", "text": "what time is it?"}], turn_id=None, parent_id=None
    )
    store.start_turn(session.chat_id, msg)
    await session.close()

    app = make_app(engine, open_chat=session.chat_id)
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(pilot)
        await until(pilot, lambda: any(isinstance(i, NoteItem) and i.text == UNFINISHED for i in app.log_view.items))
        await pilot.press("f5")
        await until(pilot, lambda: app.session is not None and app.session.parked() is None)
        await settled(pilot)
        assert any(isinstance(i, AssistantItem) and i.text.startswith("It is ") for i in app.log_view.items)
    assert turns(engine, session.chat_id) == ["done"]
