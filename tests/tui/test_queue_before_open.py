"""A message sent before the chat is open (issue 19, item 1): queued, shown as queued, sent once
the chat opens, exactly once; one that cannot be sent (the open failed) goes back to the box
with the reason. The real binary in tmux: typed and sent the moment the roster shows its
counts, it is answered once."""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from core.errors import UserFacingError
from tests.helpers import subprocess_env
from tests.tui.conftest import make_app, settled, until
from tests.tui.test_tmux_smoke import Tmux, deferchat_binary
from tui.app import DeferchatApp
from tui.state import AssistantItem, UserItem

ASK = "what time is it"


def users(app: DeferchatApp) -> list[str]:
    return [i.text for i in app.log_view.items if isinstance(i, UserItem)]


def answers(app: DeferchatApp) -> list[str]:
    return [i.text for i in app.log_view.items if isinstance(i, AssistantItem)]


def held_open(app: DeferchatApp, failure: BaseException | None = None) -> asyncio.Event:
    """The chat's open waits for the returned event (then fails with ``failure``, if given)."""
    gate = asyncio.Event()
    real = app.engine.open_chat

    async def opening(*args: Any, **kw: Any) -> Any:
        await gate.wait()
        if failure is not None:
            raise failure
        return await real(*args, **kw)

    app.engine.open_chat = opening  # type: ignore[method-assign]
    return gate


async def type_and_send(pilot: Any, text: str) -> None:
    app = pilot.app
    app.composer.focus()
    app.composer.text = text
    await pilot.press("enter")
    await pilot.pause()


async def test_sent_while_the_chat_opens_it_is_queued_then_sent_once(engine) -> None:
    app = make_app(engine)
    gate = held_open(app)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.roster.plan is not None)  # the preview's counts are shown
        assert app.session is None
        await type_and_send(pilot, ASK)
        await type_and_send(pilot, "and thank you")
        assert app.composer.text == "" and app.drafts.queued == [ASK, "and thank you"]
        note = str(app.queued_note.render())
        assert app.queued_note.display and "sent when the chat is open" in note and ASK in note
        gate.set()
        await until(pilot, lambda: len(users(app)) == 2 and not app.drafts.queued, timeout=20)
        await settled(pilot)
        assert users(app) == [ASK, "and thank you"]  # each once, in order
        assert len([a for a in answers(app) if a.startswith("It is ")]) == 1
        assert not app.drafts.queued and not app.queued_note.display
        stored = [m for m in engine.store.messages(app.session.chat_id) if m.role == "user"]
        assert [b["text"] for m in stored for b in m.blocks if b.get("type") == "text"] == [ASK, "and thank you"]


@pytest.mark.parametrize(
    "failure", [UserFacingError("the roster file is not valid JSON"), RuntimeError("the servers fell over")]
)
async def test_a_message_the_open_could_not_take_comes_back_with_the_reason(engine, failure) -> None:
    app = make_app(engine)
    gate = held_open(app, failure)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.roster.plan is not None)
        app.composer.focus()
        await type_and_send(pilot, ASK)
        app.composer.text = "half a thought"  # typed meanwhile: kept too
        gate.set()
        await until(pilot, lambda: not app.opening)
        await until(pilot, lambda: app.composer.text == f"half a thought\n\n{ASK}")
        said = " ".join(n.message for n in app._notifications)
        assert "did not open" in said and str(failure) in said and "back in the box" in said
        assert not app.drafts.queued and not app.queued_note.display and not users(app)


def test_before_the_first_frame_asks_for_the_chat_a_message_still_queues(engine) -> None:
    app = make_app(engine)
    assert app.opening  # the first chat is asked for once the first frame is drawn


def test_sent_the_moment_the_roster_shows_counts_it_is_answered_once(tmp_path: Path) -> None:
    assert shutil.which("tmux"), "tmux is needed for this test (apt-get install tmux)"
    home = tmp_path / "home"
    # the demo's servers as processes: the open takes long enough after the preview to type in
    env = subprocess_env(home, DEFERCHAT_DEMO_SERVERS="process")
    tmux = Tmux(f"deferchat-early-{os.getpid()}", env)
    tmux("-f", os.devnull, "new-session", "-d", "-s", "smoke", "-x", "120", "-y", "40", deferchat_binary())
    try:
        tmux.wait_for("30 defined", "17 indexed")
        tmux("send-keys", "-t", "smoke", "-l", ASK)
        tmux("send-keys", "-t", "smoke", "Enter")
        # sent before the chat is open (its servers are still starting): queued, and shown so
        tmux.wait_for("queued: \u201cwhat time is it\u201d", "sent when the chat is open", timeout=10)
        tmux.wait_for("It is ", timeout=60)
        time.sleep(1.0)  # a second answer would have come by now
        screen = tmux.screen()
        assert screen.count("It is ") == 1, screen
        assert screen.count("\u2594You\u2594") == 1, screen  # one message of the owner's
    finally:
        tmux("kill-server", check=False)
    from core.store import Store

    store = Store(home / "deferchat.db")
    [chat] = store.chats()
    texts = [(m.role, b["text"]) for m in store.messages(chat.id) for b in m.blocks if b.get("type") == "text"]
    assert [t for role, t in texts if role == "user"] == [ASK]
    assert len([t for role, t in texts if role == "assistant" and t.startswith("It is ")]) == 1
