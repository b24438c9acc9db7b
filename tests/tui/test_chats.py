"""Chats: list, new, reopen (the pinned plan shown as pinned), rename, delete, export to
Markdown with the tool calls; the plan inspector and the what-if view."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from textual.widgets import DataTable, Input, Select, TextArea

from core.store import ChatRow
from tests.tui.conftest import SCRIPTS, make_app, opened, send, settled, until
from tui.screens.chats import ChatsScreen
from tui.screens.dialogs import Confirm, TextPrompt
from tui.screens.plan import PlanScreen
from tui.screens.whatif import WhatIfScreen, placement_rows


async def chats_screen(pilot) -> ChatsScreen:
    await pilot.press("ctrl+o")
    await until(pilot, lambda: isinstance(pilot.app.screen, ChatsScreen))
    return pilot.app.screen


def table_titles(screen: ChatsScreen) -> list[str]:
    table = screen.query_one(DataTable)
    return [str(table.get_row_at(i)[1]) for i in range(table.row_count)]


async def test_new_list_and_reopen_a_chat_with_its_pinned_plan(engine) -> None:
    app = make_app(engine, script=str(SCRIPTS / "code_answer.json"))
    async with app.run_test(size=(110, 32)) as pilot:
        await opened(pilot)
        first = app.session.chat_id
        assert not app.sessions.pinned and "pinned plan (new)" in str(app.roster.title.render())
        await send(pilot, "first chat")
        await settled(pilot)
        assert str(app.header_bar.title_label.render()) == "first chat"  # titled from the first message
        await pilot.press("ctrl+n")
        await until(pilot, lambda: app.session is not None and app.session.chat_id != first)
        await opened(pilot)
        assert app.log_view.items == []
        screen = await chats_screen(pilot)
        assert table_titles(screen) == ["New chat", "first chat"]
        table = screen.query_one(DataTable)
        table.move_cursor(row=1)
        await pilot.press("enter")
        await until(pilot, lambda: app.session is not None and app.session.chat_id == first)
        await opened(pilot)
        assert app.sessions.pinned
        assert "pinned plan" in str(app.roster.title.render())
        assert "pinned" in str(app.header_bar.badge.render())
        texts = [getattr(i, "text", "") for i in app.log_view.items]
        assert texts[0] == "first chat" and texts[1].startswith("Here is the **plan**")
        assert engine.store.chat(first).plan_id == app.session.chat().plan_id


async def test_rename_delete_and_export(engine, tmp_path: Path) -> None:
    app = make_app(engine, export_dir=tmp_path / "out", script=str(SCRIPTS / "wrapped_call.json"))
    async with app.run_test(size=(110, 32)) as pilot:
        await opened(pilot)
        await send(pilot, "move my standup to 10")
        await until(pilot, lambda: app.approval_bar is not None)
        await pilot.press("tab")  # to the approval: typing never answers it
        await until(pilot, lambda: app.approval_bar.has_focus)
        await until(pilot, lambda: app.approval_bar.armed, timeout=3)
        await pilot.press("y")
        await settled(pilot)
        chat_id = app.session.chat_id

        await pilot.press("f2")
        await until(pilot, lambda: isinstance(app.screen, TextPrompt))
        app.screen.query_one(Input).value = "Standup moves"
        await pilot.press("enter")
        await until(pilot, lambda: engine.store.chat(chat_id).title == "Standup moves")
        assert str(app.header_bar.title_label.render()) == "Standup moves"

        await pilot.press("ctrl+s")
        await until(pilot, lambda: isinstance(app.screen, TextPrompt))
        assert app.screen.query_one(Input).value == str(tmp_path / "out" / "standup-moves.md")
        await pilot.press("enter")
        exported = tmp_path / "out" / "standup-moves.md"
        await until(pilot, exported.exists)
        text = exported.read_text(encoding="utf-8")
        assert text.startswith("# Standup moves")
        assert "### Tool: `schedule.update` (via tool.call) \u2014 completed" in text
        assert '"time": "10:00"' in text

        screen = await chats_screen(pilot)
        await pilot.press("d")
        await until(pilot, lambda: isinstance(app.screen, Confirm))
        await pilot.press("n")  # changed my mind
        await until(pilot, lambda: app.screen is screen)
        assert engine.store.chat(chat_id) is not None
        await pilot.press("d")
        await until(pilot, lambda: isinstance(app.screen, Confirm))
        await pilot.press("y")
        await until(pilot, lambda: engine.store.chat(chat_id) is None)
        assert "Standup moves" not in table_titles(screen)
        # deleting the open chat opens a new one
        await until(pilot, lambda: app.session is not None and app.session.chat_id != chat_id)


async def test_plan_inspector_shows_the_plan_and_the_index_as_sent(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(110, 32)) as pilot:
        await opened(pilot)
        await pilot.press("ctrl+g")
        await until(pilot, lambda: isinstance(app.screen, PlanScreen))
        plan = app.session.plan
        areas = {a.id: a.text for a in app.screen.query(TextArea)}
        assert "Defined 30/30" in areas["plan-table"] and "Indexed 17/40" in areas["plan-table"]
        assert areas["plan-index"] == plan.index_text
        assert '"builder": "context-builder@13"' in areas["plan-json"]
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, PlanScreen))


async def test_what_if_plans_side_by_side_without_replanning_the_chat(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        pinned = app.session.plan
        plan_id = app.session.chat().plan_id
        await pilot.press("ctrl+t")
        await until(pilot, lambda: isinstance(app.screen, WhatIfScreen) and app.screen.result is not None)
        screen = app.screen
        assert screen.result.model_dump() == pinned.model_dump() | {"render_sha256": screen.result.render_sha256}
        screen.query_one("#whatif-policy", Select).value = "threshold"
        await until(pilot, lambda: screen.result.policy == "threshold")
        other = str(screen.query_one("#whatif-other").render())
        assert "policy threshold" in other
        changed = [r for r in placement_rows(pinned, screen.result) if r[4]]
        assert changed, "the threshold policy places the production roster differently"
        table = screen.query_one("#whatif-table", DataTable)
        assert table.row_count == len(pinned.tools)
        await pilot.press("ctrl+t")
        assert table.row_count == len(changed)
        screen.query_one("#whatif-max_definitions", Input).value = "10"
        await until(pilot, lambda: len(screen.result.defined_tool_names) <= 10)
        assert "Defined" in str(screen.query_one("#whatif-other").render())
        await pilot.press("escape")
        # the chat's own plan is untouched
        assert app.session.plan is pinned and app.session.chat().plan_id == plan_id
        assert app.roster.plan is pinned


async def test_what_if_computes_every_strategy(engine) -> None:
    from core.roster.models import STRATEGIES

    app = make_app(engine)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        await pilot.press("ctrl+t")
        await until(pilot, lambda: isinstance(app.screen, WhatIfScreen) and app.screen.result is not None)
        screen = app.screen
        for strategy in STRATEGIES:
            screen.query_one("#whatif-strategy", Select).value = strategy
            await until(pilot, lambda s=strategy: screen.result.strategy == s)
            other = str(screen.query_one("#whatif-other").render())
            assert f"strategy {strategy}" in other and "Defined" in other


class FakeChats:
    """ChatOperations without an app or a store: the chats list needs nothing else."""

    def __init__(self) -> None:
        self.rows = [
            ChatRow(id="c1", title="first", status="idle", provider="demo", model="m", strategy="wrapper"),
            ChatRow(id="c2", title="second", status="idle", provider="demo", model="m", strategy="openai"),
        ]
        self.calls: list[tuple[str, str]] = []

    def list_chats(self) -> list[ChatRow]:
        return list(self.rows)

    async def rename_chat(self, chat_id: str) -> bool:
        self.calls.append(("rename", chat_id))
        self.rows = [dataclasses.replace(r, title="renamed") if r.id == chat_id else r for r in self.rows]
        return True

    async def delete_chat(self, chat_id: str) -> bool:
        self.calls.append(("delete", chat_id))
        self.rows = [r for r in self.rows if r.id != chat_id]
        return True

    async def export_chat(self, chat_id: str) -> Path | None:
        self.calls.append(("export", chat_id))
        return None


async def test_the_chats_list_works_on_any_chat_operations() -> None:
    from textual.app import App

    chats = FakeChats()
    results: list[tuple[str, str] | None] = []

    class Host(App[None]):
        def on_mount(self) -> None:
            self.push_screen(ChatsScreen(chats, "c2"), results.append)

    app = Host()
    async with app.run_test(size=(110, 32)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, ChatsScreen))
        screen = app.screen
        assert table_titles(screen) == ["first", "second"]
        assert screen.selected() == "c2"  # the cursor starts on the open chat
        await pilot.press("r")
        await until(pilot, lambda: table_titles(screen) == ["first", "renamed"])
        await pilot.press("e")
        await until(pilot, lambda: ("export", "c2") in chats.calls)
        await pilot.press("d")
        await until(pilot, lambda: table_titles(screen) == ["first"])
        assert screen.current is None  # the open chat was the one deleted
        await pilot.press("enter")
        await until(pilot, lambda: results == [("open", "c1")])
    assert chats.calls == [("rename", "c2"), ("export", "c2"), ("delete", "c2")]
