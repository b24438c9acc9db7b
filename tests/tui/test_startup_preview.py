"""The roster before a chat is open: a new chat shows a plan preview while its servers start
(planned from the roster's recorded listings) and the pinned plan replaces it; a reopened chat
shows its own stored plan, never a preview."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from core.engine import ChatOptions, Engine
from core.roster.models import Caps, RosterPlan
from tests.tui.conftest import make_app, until
from tui.widgets.roster import PINNED, PREVIEW


class Gate:
    """Holds the engine's open_chat until released (as slow servers would); ``on_enter`` runs
    when the open begins. ``Gate(engine, held=False)`` only watches."""

    def __init__(self, engine: Engine, *, on_enter: Any = None, held: bool = True) -> None:
        self.release = asyncio.Event()
        if not held:
            self.release.set()
        self.entered = False
        self.opened = False
        real = engine.open_chat

        async def open_chat(*args: Any, **kw: Any) -> Any:
            self.entered = True
            if on_enter is not None:
                on_enter()
            await self.release.wait()
            session = await real(*args, **kw)
            self.opened = True
            return session

        engine.open_chat = open_chat  # type: ignore[method-assign]


def watch_plans(app: Any) -> list[tuple[RosterPlan, bool, bool]]:
    seen: list[tuple[RosterPlan, bool, bool]] = []
    real = app.roster.set_plan

    def set_plan(plan: RosterPlan, *, pinned: bool, marks: Any = None, preview: bool = False) -> None:
        seen.append((plan, pinned, preview))
        real(plan, pinned=pinned, marks=marks, preview=preview)

    app.roster.set_plan = set_plan
    return seen


def title(app: Any) -> str:
    return str(app.roster.title.render())


async def test_a_new_chat_shows_the_preview_before_it_opens_then_its_pinned_plan(engine: Engine) -> None:
    gate = Gate(engine)
    app = make_app(engine)
    async with app.run_test(size=(140, 40)) as pilot:
        await until(pilot, lambda: gate.entered and app.roster.plan is not None)
        assert not gate.opened and app.session is None
        assert PREVIEW in title(app) and "(new)" not in title(app)
        preview = app.roster.plan
        assert preview is not None and f"{len(preview.defined_tool_names)} defined" in str(app.roster.summary.render())
        gate.release.set()
        await until(pilot, lambda: app.session is not None and f"{PINNED} (new)" in title(app))
        assert PREVIEW not in title(app)
        assert app.session is not None and app.session.plan is not None
        assert app.roster.plan == app.session.plan
        # no servers started here: the roster's listings are the live ones, the preview was the plan
        assert preview.to_json() == app.session.plan.to_json()
        assert not [n for n in app.log_view.items if "preview changed" in getattr(n, "text", "")]


async def test_a_reopened_chat_shows_its_stored_plan_never_a_preview(engine: Engine) -> None:
    # a chat pinned with another plan than a new chat would get (fewer definitions)
    session = await engine.open_chat(None, ChatOptions(start_demo_servers=False, caps=Caps(max_definitions=5)))
    stored = session.plan
    chat_id = session.chat_id
    await session.close()
    assert stored is not None
    fresh = engine.preview_plan(ChatOptions(start_demo_servers=False))
    assert fresh.to_json() != stored.to_json(), "the test needs a different plan"

    gate = Gate(engine)
    app = make_app(engine, open_chat=chat_id)
    seen = watch_plans(app)
    async with app.run_test(size=(140, 40)) as pilot:
        await until(pilot, lambda: gate.entered and app.roster.plan is not None)
        assert not gate.opened
        assert app.roster.plan is not None and app.roster.plan.to_json() == stored.to_json()
        assert PINNED in title(app) and PREVIEW not in title(app) and "(new)" not in title(app)
        gate.release.set()
        await until(pilot, lambda: app.session is not None and gate.opened and len(seen) >= 2)
        await pilot.pause(0.1)
        assert app.roster.plan is not None and app.roster.plan.to_json() == stored.to_json()
    assert seen and all(pinned and not preview for _, pinned, preview in seen)
    assert all(plan.to_json() == stored.to_json() for plan, _, _ in seen)


async def test_the_open_waits_for_a_quick_preview_so_the_roster_comes_first(engine: Engine) -> None:
    """The preview runs before the open's own work (which would otherwise hold the loop and the
    GIL while the preview waits): the roster is set before the open begins, also when the
    preview takes a moment (here 0.1 s, as importing the planner takes on a first launch)."""
    real_preview = engine.preview_plan

    def preview_plan(*args: Any, **kw: Any) -> RosterPlan:
        time.sleep(0.1)  # a thread
        return real_preview(*args, **kw)

    engine.preview_plan = preview_plan  # type: ignore[method-assign]
    app = make_app(engine)
    seen = watch_plans(app)
    at_open: list[list[bool]] = []  # which plans (preview or not) were set when the open began
    Gate(engine, on_enter=lambda: at_open.append([preview for *_, preview in seen]), held=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await until(pilot, lambda: app.session is not None and len(seen) >= 2)
    assert at_open == [[True]], at_open
    assert [preview for *_, preview in seen] == [True, False]


async def test_a_slow_preview_does_not_hold_the_open(engine: Engine, monkeypatch: Any) -> None:
    """A preview that takes long (a tokenizer to load, a big roster) goes on beside the open:
    the open starts after PREVIEW_FIRST at most, and the preview is dropped once the chat is open."""
    import tui.controllers.sessions as sessions_module

    monkeypatch.setattr(sessions_module, "PREVIEW_FIRST", 0.2)
    real_preview = engine.preview_plan
    released = False

    def slow_preview(*args: Any, **kw: Any) -> RosterPlan:
        deadline = time.monotonic() + 5.0
        while not released and time.monotonic() < deadline:  # a thread: held until the test ends it
            time.sleep(0.01)
        return real_preview(*args, **kw)

    engine.preview_plan = slow_preview  # type: ignore[method-assign]
    gate = Gate(engine)
    app = make_app(engine)
    seen = watch_plans(app)
    try:
        async with app.run_test(size=(140, 40)) as pilot:
            started = time.monotonic()
            await until(pilot, lambda: gate.entered)
            assert time.monotonic() - started < 2.0  # not the preview's five seconds
            assert not seen  # the preview has not come
            gate.release.set()
            await until(pilot, lambda: app.session is not None and f"{PINNED} (new)" in title(app))
            released = True
            await pilot.pause(0.2)
            assert PREVIEW not in title(app)  # a preview that comes after the open is not shown
    finally:
        released = True
    assert seen and not any(preview for _, _, preview in seen)


async def test_servers_the_preview_marked_starting_that_the_chat_does_not_run_leave_the_roster(
    engine: Engine,
) -> None:
    """The preview marks the roster's servers as starting; a chat that starts none of them (here
    the demo servers are off) shows no server as starting once it is open."""
    gate = Gate(engine)
    app = make_app(engine)  # start_demo_servers=False
    async with app.run_test(size=(140, 40)) as pilot:
        await until(pilot, lambda: gate.entered and app.roster.plan is not None)
        assert app.roster.servers and all(s == "starting" for s, _, _ in app.roster.servers.values())
        assert app.roster.servers_line.display
        gate.release.set()
        await until(pilot, lambda: app.session is not None and f"{PINNED} (new)" in title(app))
        assert app.session is not None and not app.session.server_status
        assert app.roster.servers == {} and not app.roster.servers_line.display
