"""Grants a person can see and take back, in the app (issue 19, item 3).

An answer "allow for this chat" is said in the log, marks the tool's roster row and its detail;
the permissions screen (the palette's entry, its key) lists the chat's grants with the tool's
names, state, when and by whom; Enter or r takes the selected one back, a all of them after a
confirmation, through the open session (the log shows it, the store keeps a grant.revoked
event); a revoked tool asks again at its next call, a revoke from ``deferchat chats grants`` in
another process included; the revoked grant is shown as revoked after a restart. The real
binary in tmux: tests/tui/test_tmux_permissions.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.widgets import DataTable

from core.chat.options import ChatOptions
from core.pipeline.approvals import Decision, FixedApprover
from tests.helpers import deferchat
from tests.tui.conftest import Clock, make_app, opened, send, settled, until
from tui.screens.dialogs import Confirm
from tui.screens.permissions import ACTIVE, EMPTY, REVOKED, PermissionsScreen
from tui.screens.tool import ToolScreen
from tui.state import NoteItem

CALL = "start a call to +1 555 0100 about the invoice"
STANDUP = "move my 9am standup to 10am"
TOOL = "mcp.bland_call.start_call"


async def allow_for_the_chat(pilot: Any, clock: Clock) -> None:
    """Answer the waiting approval as a person does: Tab to the bar, !, then its confirmation."""
    app = pilot.app
    await until(pilot, lambda: app.approval_bar is not None)
    await until(pilot, lambda: not any(w.group == "session" and not w.is_finished for w in app.workers))
    clock.t += 1
    await pilot.press("tab")
    await until(pilot, lambda: app.approval_bar.has_focus)
    clock.t += 1  # past the guard Tab starts (a key in the same burst answers nothing)
    await pilot.press("exclamation_mark")
    clock.t += 1  # past the confirmation's own grace period
    await pilot.press("enter")
    await settled(pilot)


async def two_grants(pilot: Any, clock: Clock) -> None:
    """The call, then the standup moved, each allowed for the rest of the chat."""
    for text in (CALL, STANDUP):
        await send(pilot, text)
        await allow_for_the_chat(pilot, clock)


def notes(app: Any) -> list[str]:
    return [i.text for i in app.log_view.items if isinstance(i, NoteItem)]


def table_rows(app: Any) -> list[list[str]]:
    table = app.screen.query_one("#permissions-table", DataTable)
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


async def open_permissions(pilot: Any) -> PermissionsScreen:
    await pilot.press("f12")
    await until(pilot, lambda: isinstance(pilot.app.screen, PermissionsScreen))
    await pilot.pause(0.05)
    return pilot.app.screen


async def test_a_grant_is_said_marked_listed_and_taken_back_in_the_app(engine, clock) -> None:
    app = make_app(engine)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        chat = app.session.chat_id
        assert "\u2713 allowed" not in str(app.roster.options.get_option(TOOL).prompt)

        await send(pilot, CALL)
        await allow_for_the_chat(pilot, clock)
        [grant] = engine.store.grants(chat)
        assert (grant.tool, grant.granted_by) == (TOOL, "app")
        # the log says what the answer means, and where to take it back
        said = [n for n in notes(app) if "allowed for the rest of this chat" in n]
        assert len(said) == 1 and said[0].startswith("start_call (mcp.bland_call.start_call) is allowed")
        assert "F12 (or Permissions in ctrl+p)" in said[0]
        # the roster row and the tool's detail mark it
        assert "\u2713 allowed" in str(app.roster.options.get_option(TOOL).prompt)  # one line a tool at 120x40
        app.views.tool(TOOL)
        await until(pilot, lambda: isinstance(app.screen, ToolScreen) and app.screen.query(".facts"))
        facts = str(app.screen.query_one(".facts").render())
        assert "allowed for this chat since " in facts and "by you, in the app" in facts
        await pilot.press("escape")

        # the permissions screen lists it: the row's name, its own name, state, when, who
        screen = await open_permissions(pilot)
        [row] = table_rows(app)
        assert row[:3] == ["start_call", TOOL, ACTIVE] and row[4] == "you, in the app" and row[3]
        assert "1 active, 0 revoked" in str(screen.query_one("#permissions-title").render())
        await pilot.press("r")
        await until(pilot, lambda: table_rows(app)[0][2] == REVOKED)
        assert "0 active, 1 revoked" in str(screen.query_one("#permissions-title").render())
        assert "revoked " in str(screen.query_one("#permissions-detail").render())
        await pilot.press("escape")

        # the open session stored it and the log showed it; the row is no longer marked
        stored = [e for e in engine.store.events(chat) if e["type"] == "grant.revoked"]
        assert [(e["tool"], e["by"]) for e in stored] == [(TOOL, "app")]
        await until(pilot, lambda: any("no longer allowed for this chat" in n for n in notes(app)))
        assert "taken back by you, in the app" in next(n for n in notes(app) if "no longer allowed" in n)
        assert TOOL not in app.roster.grants
        assert "\u2713 allowed" not in str(app.roster.options.get_option(TOOL).prompt)

        # and the tool asks again at its next call
        await send(pilot, CALL)
        await until(pilot, lambda: app.approval_bar is not None)
        assert app.approval_bar.view.tool == TOOL


async def test_a_granted_tool_runs_without_asking_and_enter_takes_it_back(engine, clock) -> None:
    app = make_app(engine)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        await send(pilot, CALL)
        await allow_for_the_chat(pilot, clock)
        chat = app.session.chat_id
        await send(pilot, CALL)  # granted: it goes on without asking (no demo servers here: it fails to run)
        await settled(pilot)
        asked = [e for e in engine.store.events(chat) if e["type"] == "tool.approval_required"]
        assert app.approval_bar is None and len(asked) == 1
        runs = [i for i in app.log_view.items if getattr(i, "name", None) == TOOL]
        assert len(runs) == 2 and runs[1].scope == "chat" and runs[1].status != "denied"
        # a call under an existing grant says nothing new in the log
        assert len([n for n in notes(app) if "allowed for the rest of this chat" in n]) == 1

        await open_permissions(pilot)
        await pilot.press("enter")
        await until(pilot, lambda: table_rows(app)[0][2] == REVOKED)
        await pilot.press("enter")  # a revoked row: nothing to take back, it says so
        await until(pilot, lambda: any("already revoked" in n.message for n in app._notifications))
        assert len([e for e in engine.store.events(app.session.chat_id) if e["type"] == "grant.revoked"]) == 1


async def test_taking_back_all_grants_asks_first(engine, clock) -> None:
    app = make_app(engine)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        chat = app.session.chat_id
        await two_grants(pilot, clock)
        assert len(engine.store.grants(chat)) == 2

        await open_permissions(pilot)
        assert [r[2] for r in table_rows(app)] == [ACTIVE, ACTIVE]
        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, Confirm))
        assert "all 2 grants" in app.screen.question
        await pilot.press("enter")  # Enter alone answers no
        await until(pilot, lambda: isinstance(app.screen, PermissionsScreen))
        assert len(engine.store.grants(chat)) == 2
        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, Confirm))
        await pilot.press("y")
        await until(pilot, lambda: [r[2] for r in table_rows(app)] == [REVOKED, REVOKED])
        assert engine.store.grants(chat) == []
        await until(pilot, lambda: len([n for n in notes(app) if "no longer allowed" in n]) == 2)
        assert app.roster.grants == {}


async def test_slash_permissions_opens_the_screen(engine, clock) -> None:
    app = make_app(engine)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        await send(pilot, CALL)
        await allow_for_the_chat(pilot, clock)
        app.composer.focus()
        app.composer.text = "/permissions"
        await pilot.pause(0.05)
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, PermissionsScreen) and app.screen.rows)
        assert [r[:3] for r in table_rows(app)] == [["start_call", TOOL, ACTIVE]]
        sent = [i for i in app.log_view.items if getattr(i, "text", "") == "/permissions"]
        assert app.composer.text == "" and not sent  # run, not sent to the model
        assert app.slash_commands.find("permissions").action == "permissions"


async def test_the_palette_has_it_and_a_chat_without_grants_says_so(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(80, 24)) as pilot:
        await opened(pilot)
        commands = {c.title: c.help for c in app.get_system_commands(app.screen)}
        assert "(f12)" in commands["Permissions: this chat's grants"]
        await pilot.press("ctrl+p")
        await pilot.press(*"Permissions")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, PermissionsScreen))
        await pilot.pause(0.05)
        empty = app.screen.query_one("#permissions-empty")
        assert empty.display and str(empty.render()) == EMPTY
        assert not app.screen.query_one("#permissions-table").display


async def test_a_revoke_in_the_cli_while_the_app_runs_makes_the_next_call_ask(engine, clock, home: Path) -> None:
    app = make_app(engine)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        chat = app.session.chat_id
        await send(pilot, CALL)
        await allow_for_the_chat(pilot, clock)
        assert TOOL in app.roster.grants

        done = deferchat(home, "chats", "grants", chat, "--revoke", TOOL)  # another process, the same store
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith(f"revoked {TOOL}")

        await send(pilot, CALL)
        await until(pilot, lambda: app.approval_bar is not None)  # it asks again
        assert app.approval_bar.view.tool == TOOL
        await until(pilot, lambda: TOOL not in app.roster.grants)  # and the row is no longer marked
        await open_permissions(pilot)
        [row] = table_rows(app)
        assert row[2] == REVOKED and row[4] == "deferchat chats grants"


async def test_a_revoked_grant_is_shown_as_revoked_after_a_restart(engine, clock) -> None:
    app = make_app(engine)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        chat = app.session.chat_id
        await two_grants(pilot, clock)
        await open_permissions(pilot)
        # oldest first; a built-in's own name is the one its row shows
        assert [r[:2] for r in table_rows(app)] == [["start_call", TOOL], ["schedule.update", ""]]
        await pilot.press("r")  # the first: the call's
        # the revoked go after the active; the cursor stays on the row it took back
        await until(
            pilot,
            lambda: [(r[1] or r[0], r[2]) for r in table_rows(app)] == [("schedule.update", ACTIVE), (TOOL, REVOKED)],
        )
        assert app.screen.selected().tool == TOOL

    again = make_app(engine, open_chat=chat)
    async with again.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        await until(pilot, lambda: again.roster.grants != {})
        assert set(again.roster.grants) == {"schedule.update"}  # read from the store on open
        assert TOOL not in again.roster.grants
        await open_permissions(pilot)
        rows = {r[1] or r[0]: r for r in table_rows(again)}
        assert rows[TOOL][2] == REVOKED and rows["schedule.update"][2] == ACTIVE


async def test_a_grant_given_on_a_parked_approval_records_the_app(engine, clock) -> None:
    options = ChatOptions(start_demo_servers=False)
    session = await engine.open_chat(None, options, approver=FixedApprover(Decision.PARK))
    try:
        result = await session.send(CALL)
        assert result.status == "parked"
        chat = session.chat_id
    finally:
        await session.close()
    app = make_app(engine, open_chat=chat)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        await until(pilot, lambda: app.approval_bar is not None and app.approval_bar.view.parked)
        await allow_for_the_chat(pilot, clock)
        [grant] = engine.store.grants(chat)
        assert (grant.tool, grant.granted_by) == (TOOL, "app")
        await until(pilot, lambda: TOOL in app.roster.grants)
