"""The app as a whole: every action in the command palette, bindings with ids and a keymap
from settings, themes, the header, and quitting closes the session (its MCP servers stop)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from core import events as ev
from core.config import Settings
from core.engine import Engine
from core.store import Store
from tests.tui.conftest import make_app, opened, until
from tui.app import COMMANDS, DeferchatApp, EngineEvent
from tui.screens.whatif import WhatIfScreen
from tui.state import STRATEGY_WORDS


def test_every_binding_has_an_id_and_every_action_a_palette_command() -> None:
    actions = {a for a, _, _ in COMMANDS} | {"quit", "change_theme"}  # system commands: Quit, Theme
    for binding in DeferchatApp.BINDINGS:
        assert binding.id, f"binding {binding.key} has no id"
        if binding.system:  # Textual's own, kept (ctrl+c's quit hint when no turn runs)
            continue
        assert binding.action in actions, f"{binding.action} is not in the command palette"
    assert len({b.id for b in DeferchatApp.BINDINGS}) == len(DeferchatApp.BINDINGS)


async def test_palette_lists_and_runs_the_actions(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(110, 32)) as pilot:
        await opened(pilot)
        titles = {c.title for c in app.get_system_commands(app.screen)}
        assert {t for _, t, _ in COMMANDS} <= titles and {"Theme", "Quit"} <= titles
        await pilot.press("ctrl+p")
        await pilot.press(*"What-if")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, WhatIfScreen))


async def test_keymap_and_theme_from_settings(home: Path) -> None:
    settings = Settings(keymap={"new_chat": "f12", "toggle_roster": "f11"}, theme="nord")
    engine = Engine(store=Store(home / "deferchat.db"), settings=settings, demo_delay=0)
    app = make_app(engine)
    async with app.run_test(size=(110, 32)) as pilot:
        await opened(pilot)
        assert app.theme == "nord"
        first = app.session.chat_id
        await pilot.press("ctrl+r")  # rebound: no longer toggles
        assert app.roster.display
        await pilot.press("f11")
        assert not app.roster.display
        await pilot.press("ctrl+n")
        await pilot.pause(0.2)
        assert app.session.chat_id == first and not app._notifications
        # new_chat runs on f12: the open chat is new and unused, so it is reused (test_input.py)
        await pilot.press("f12")
        await until(pilot, lambda: any("still unused" in n.message for n in app._notifications))
        assert app.session.chat_id == first


async def test_header_shows_title_model_and_strategy_with_its_reason(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(160, 32)) as pilot:
        await opened(pilot)
        header = app.header_bar
        assert str(header.title_label.render()) == "New chat"
        assert str(header.model_label.render()) == "demo/demo-1"
        assert str(header.badge.render()).strip() == "wrapper"
        reason = app.session.plan.strategy_reason
        # in words on the header; the strategy's own reason (it cites ADR-0123) is the tooltip
        assert str(header.reason.render()) == f"offline demo \u00b7 {STRATEGY_WORDS['wrapper']}"
        assert "ADR" in reason and header.badge.tooltip == reason and header.reason.tooltip == reason
        app.post_message(
            EngineEvent(
                ev.UsageEvent(
                    input_tokens=4468, output_tokens=80, cache_read_input_tokens=1200, cache_creation_input_tokens=30
                ),
                app.generation,
            )
        )
        await until(pilot, lambda: str(header.usage.render()) != "")
        # the prompt's tokens in all (uncached + read + written), the share read from the cache
        assert str(header.usage.render()) == "\u21915,698 \u219380 cache hit 21%"


async def test_works_at_80x24(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(80, 24)) as pilot:
        await opened(pilot)
        # the roster folds into one line and the chat has the width (tests/tui/test_layout.py) ...
        assert not app.roster.display and app.log_view.region.width >= 76
        assert app.composer.region.height >= 4
        await pilot.press("ctrl+r")  # ... until its key brings the panel back
        await pilot.pause()
        assert app.roster.region.width >= 36 and app.log_view.region.width >= 40
        headings = [str(o.prompt) for o in app.roster.options.options if (o.id or "").startswith("section:")]
        assert "Defined 30/30" in headings[0] and "Indexed 17/40" in headings[1]
        # a heading fits the panel on one line
        assert len(headings[0].splitlines()[0]) < app.roster.options.region.width


async def test_quitting_closes_the_session_and_stops_its_mcp_servers(engine, tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "time": {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}
                }
            }
        )
    )
    app = make_app(engine, mcp_config=str(config))
    seen: list[str] = []
    async with app.run_test(size=(110, 32)) as pilot:
        await opened(pilot)
        session = app.session
        assert session.mcp is not None and "time" in session.server_status
        await until(pilot, lambda: "time" in app.roster.servers)
        session.subscribe(lambda e: seen.append(f"{e.type}:{getattr(e, 'status', '')}"))
        await pilot.press("ctrl+q")
    assert session.mcp is None
    assert "server.status:stopped" in seen
    assert app.return_value == 0


def test_run_app_maps_the_scripts_arguments(monkeypatch) -> None:
    import argparse

    from tui import app as app_module

    seen: dict = {}

    def fake_run(self):  # type: ignore[no-untyped-def]
        seen.update(options=self.options, chat=self.initial_chat)
        return 0

    monkeypatch.setattr(app_module.DeferchatApp, "run", fake_run)
    args = argparse.Namespace(
        open_chat="chat_x",
        tui_roster="r.json",
        tui_mcp_config="m.json",
        tui_provider="demo",
        tui_model="demo-1",
        tui_base_url=None,
        tui_strategy="active-tools",
    )
    assert app_module.run_app(args) == 0
    opts = seen["options"]
    assert seen["chat"] == "chat_x"
    assert (opts.roster, opts.mcp_config, opts.provider, opts.model, opts.strategy) == (
        "r.json",
        "m.json",
        "demo",
        "demo-1",
        "active-tools",
    )


async def test_a_chat_that_cannot_open_says_why_and_the_app_stays_usable(engine, tmp_path: Path) -> None:
    app = make_app(engine, roster=str(tmp_path / "missing.json"))
    async with app.run_test(size=(110, 32)) as pilot:
        await until(pilot, lambda: any(getattr(i, "level", "") == "error" for i in app.log_view.items))
        assert app.session is None
        note = next(i for i in app.log_view.items if getattr(i, "level", "") == "error")
        assert "missing.json" in note.text
        app.composer.text = "hello"
        await pilot.press("enter")
        await until(pilot, lambda: any("No chat is open" in n.message for n in app._notifications))
        assert app.composer.text == "hello"


async def test_switching_twice_quickly_opens_both_in_turn_and_closes_the_first(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(110, 32)) as pilot:
        await opened(pilot)
        engine.store.update_chat(app.session.chat_id, title="kept")  # not a new unused chat (those are reused)
        first = app.session
        app.open_session(None)
        app.open_session(None)
        # the chat the first switch made was left unused by the second, so it is not kept
        await until(
            pilot,
            lambda: (
                len(engine.store.chats()) == 2
                and app.session is not None
                and app.session.chat_id == engine.store.chats()[0].id
            ),
        )
        await opened(pilot)
        assert first.chat_id != app.session.chat_id
        # both switches end: the second's worker still presents the chat for a moment after
        # app.session is set (opened() may return in between), so wait for it, not assert at once
        await until(pilot, lambda: not any(w.group == "session" and not w.is_finished for w in app.workers))
