"""Fixtures for the TUI tests: an engine on its own store in the shared private home
(``home``, tests/conftest.py), and an
app on the embedded default (demo provider, production roster) without starting the demo
MCP servers, so tests are fast and deterministic. The tmux smoke test runs the real thing."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from core.config import Settings
from core.engine import ChatOptions, Engine
from core.store import Store
from tui.app import DeferchatApp
from tui.widgets import approval as approval_mod

SCRIPTS = Path(__file__).parent / "scripts"


@pytest.fixture
def engine(home: Path) -> Engine:
    store = Store(home / "deferchat.db")
    # The owner's own standup (sch_1), which the scripted chats move (scripts/wrapped_call.json);
    # chats on the demo model work on the demo's dataset (demo.sqlite) instead.
    store.db["schedules"].insert(
        {
            "title": "Team standup",
            "time": "09:00",
            "status": "active",
            "demo": 0,
            "days": '["mon", "tue", "wed", "thu", "fri"]',
        }
    )
    return Engine(store=store, settings=Settings(), demo_delay=0)


def make_app(
    engine: Engine, *, open_chat: str | None = None, export_dir: Path | None = None, **options: Any
) -> DeferchatApp:
    options.setdefault("start_demo_servers", False)
    return DeferchatApp(engine, options=ChatOptions(**options), open_chat=open_chat, export_dir=export_dir)


async def until(pilot: Any, condition: Callable[[], object], timeout: float = 10.0) -> None:
    """Let the app run until ``condition()`` holds (fails the test after ``timeout``)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {getattr(condition, '__name__', condition)}")
        await pilot.pause(0.02)


async def opened(pilot: Any) -> DeferchatApp:
    app = pilot.app
    await until(pilot, lambda: app.session is not None and app.roster.plan is not None)
    return app


async def send(pilot: Any, text: str) -> None:
    app = pilot.app
    app.composer.focus()
    app.composer.text = text
    await pilot.press("enter")
    await until(pilot, lambda: app.turn_running or app.approval_bar is not None or app.log_view.items)


async def settled(pilot: Any) -> None:
    """Wait for the turn to end and its events to be handled."""
    app = pilot.app
    await until(pilot, lambda: not app.turn_running)
    # The turn's worker ends before the app has handled every event it posted: drain them.
    for _ in range(3):
        await pilot.pause()
    await pilot.pause(0.05)


async def interrupted_chat(engine: Engine, text: str = "what time is it?") -> str:
    """A stored chat whose turn was cut off before the model answered (its process died): the
    owner's message and a turn left ``running``. Returns the chat's id."""
    session = await engine.open_chat(None, ChatOptions(start_demo_servers=False))
    store = engine.store
    msg = store.add_message(session.chat_id, "user", [{"type": "text", "text": text}], turn_id=None, parent_id=None)
    store.start_turn(session.chat_id, msg)
    await session.close()
    return session.chat_id


class Clock:
    """A settable clock for the approval bar's grace period."""

    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(approval_mod, "now", c)
    return c
