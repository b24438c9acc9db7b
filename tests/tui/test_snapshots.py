"""Snapshots of the main states (pytest-textual-snapshot). Deterministic: a private
DEFERCHAT_HOME, fixed terminal sizes, the demo or script provider without MCP servers, no
chat ids on screen, fixed timestamps where a list shows them, cursors that do not blink,
token usage masked.

Update after a deliberate change: ``pytest tests/tui/test_snapshots.py --snapshot-update``.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

import core.store.store
from core.engine import Engine
from core.pipeline import grants
from tests.tui.conftest import SCRIPTS, make_app, opened, send, settled, until
from tui.screens.chats import ChatsScreen
from tui.screens.permissions import PermissionsScreen
from tui.screens.plan import PlanScreen
from tui.screens.tool import ToolScreen
from tui.screens.whatif import WhatIfScreen

CALL = "start a call to +1 555 0100 about the invoice"
FIXED_TIME = 1_796_000_000.0  # the chats list shows local time; TZ is UTC here


@pytest.fixture(autouse=True)
def utc(home) -> None:
    time.tzset()


async def steady(pilot: Any) -> None:
    """No blinking cursors, no toasts: the frame does not depend on timing. The token usage
    in the header is masked: it follows the prompt the engine assembles, which is not the
    TUI's to pin (test_app checks the usage display)."""
    app = pilot.app
    for widget in app.screen.query("Input, TextArea"):
        widget.cursor_blink = False
    if str(app.header_bar.usage.render()):
        app.header_bar.usage.update("\u2191#,### \u2193##")
    app.clear_notifications()
    await pilot.pause(0.05)


def shot(*steps: Callable[[Any], Awaitable[None]]) -> Callable[[Any], Awaitable[None]]:
    async def run_before(pilot: Any) -> None:
        await opened(pilot)
        for step in steps:
            await step(pilot)
        await steady(pilot)

    return run_before


async def approval_shown(pilot: Any) -> None:
    await send(pilot, CALL)
    # as the owner first sees it: the bar above the message box, which keeps the focus
    await until(pilot, lambda: pilot.app.approval_bar is not None)
    await until(pilot, lambda: not pilot.app.approval_bar.has_class("-grace"), timeout=5)


async def approved_wrapped_call(pilot: Any) -> None:
    await send(pilot, "move my standup to 10")
    await until(pilot, lambda: pilot.app.approval_bar is not None)
    await pilot.press("tab")  # to the approval: typing never answers it
    await until(pilot, lambda: pilot.app.approval_bar.has_focus)
    await until(pilot, lambda: pilot.app.approval_bar.armed, timeout=5)
    await pilot.press("y")
    await settled(pilot)


def test_new_chat(snap_compare, engine: Engine) -> None:
    assert snap_compare(make_app(engine), terminal_size=(110, 34), run_before=shot())


def test_new_chat_80x24(snap_compare, engine: Engine) -> None:
    assert snap_compare(make_app(engine), terminal_size=(80, 24), run_before=shot())


def test_inline_approval(snap_compare, engine: Engine) -> None:
    assert snap_compare(make_app(engine), terminal_size=(110, 34), run_before=shot(approval_shown))


def test_done_via_tool_call(snap_compare, engine: Engine) -> None:
    app = make_app(engine, script=str(SCRIPTS / "wrapped_call.json"))
    assert snap_compare(app, terminal_size=(110, 34), run_before=shot(approved_wrapped_call))


def test_code_block_answer(snap_compare, engine: Engine) -> None:
    async def asked(pilot: Any) -> None:
        await send(pilot, "show me")
        await settled(pilot)

    app = make_app(engine, script=str(SCRIPTS / "code_answer.json"))
    assert snap_compare(app, terminal_size=(110, 34), run_before=shot(asked))


def test_roster_filter(snap_compare, engine: Engine) -> None:
    async def filtered(pilot: Any) -> None:
        await pilot.press("ctrl+f", *"net-write")
        await until(pilot, lambda: len(pilot.app.roster.shown_names()) == 12)

    assert snap_compare(make_app(engine), terminal_size=(110, 34), run_before=shot(filtered))


def test_tool_detail(snap_compare, engine: Engine) -> None:
    async def selected(pilot: Any) -> None:
        options = pilot.app.roster.options
        options.focus()
        options.highlighted = options.get_option_index("mcp.bland_call.start_call")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(pilot.app.screen, ToolScreen))

    assert snap_compare(make_app(engine), terminal_size=(110, 34), run_before=shot(selected))


def test_plan_inspector_index_as_sent(snap_compare, engine: Engine) -> None:
    async def inspected(pilot: Any) -> None:
        await pilot.press("ctrl+g")
        await until(pilot, lambda: isinstance(pilot.app.screen, PlanScreen))
        pilot.app.screen.query_one("#plan-tabs").active = "tab-index"
        await pilot.pause(0.1)

    assert snap_compare(make_app(engine), terminal_size=(110, 34), run_before=shot(inspected))


def test_what_if_threshold(snap_compare, engine: Engine) -> None:
    async def compared(pilot: Any) -> None:
        await pilot.press("ctrl+t")
        await until(pilot, lambda: isinstance(pilot.app.screen, WhatIfScreen) and pilot.app.screen.result)
        screen = pilot.app.screen
        screen.query_one("#whatif-policy").value = "threshold"
        await until(pilot, lambda: screen.result.policy == "threshold")
        await pilot.press("ctrl+t")  # only the changed tools

    assert snap_compare(make_app(engine), terminal_size=(110, 34), run_before=shot(compared))


def test_chats_list(snap_compare, engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    # the list shows each chat's id: ids made in order, so the picture is the same on every run
    made = itertools.count(1)
    monkeypatch.setattr(core.store.store, "new_id", lambda prefix: f"{prefix}_{next(made):016x}")

    async def listed(pilot: Any) -> None:
        app = pilot.app
        await send(pilot, "show me")
        await settled(pilot)
        await pilot.press("ctrl+n")
        await until(pilot, lambda: app.session is not None and app.log_view.items == [])
        await opened(pilot)
        for n, row in enumerate(engine.store.chats()):
            engine.store.update_chat(row.id, updated_at=FIXED_TIME - 60 * n)
        await pilot.press("ctrl+o")
        await until(pilot, lambda: isinstance(app.screen, ChatsScreen))

    app = make_app(engine, script=str(SCRIPTS / "code_answer.json"))
    assert snap_compare(app, terminal_size=(110, 34), run_before=shot(listed))


def test_permissions_screen(snap_compare, engine: Engine) -> None:
    async def listed(pilot: Any) -> None:
        app = pilot.app
        chat = app.session.chat_id
        store = engine.store
        store.grant(chat, "mcp.bland_call.start_call", by="app")
        store.grant(chat, "schedule.update", by="terminal")
        grants.revoke(store, chat, ["mcp.bland_call.start_call"], by="cli")
        store.db.execute(  # fixed times: the screen shows them in local time
            "update grants set created_at = ?, revoked_at = case when revoked_at is null then null else ? end",
            [FIXED_TIME, FIXED_TIME + 120],
        )
        store.db.conn.commit()
        await pilot.press("f12")
        await until(pilot, lambda: isinstance(app.screen, PermissionsScreen) and app.screen.rows)

    assert snap_compare(make_app(engine), terminal_size=(110, 34), run_before=shot(listed))
