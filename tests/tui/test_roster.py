"""The roster panel: sections with counts and budgets, per-tool facts, the filter, live marks,
server status, roster.changed, the tool detail and the toggle."""

from __future__ import annotations

from core import events as ev
from tests.tui.conftest import SCRIPTS, make_app, opened, send, settled, until
from tui.app import EngineEvent
from tui.screens.tool import ToolScreen
from tui.state import CALLED, DISCOVERED, LOADED, MARK_GLYPH


def headings(app) -> list[str]:
    return [str(o.prompt) for o in app.roster.options.options if (o.id or "").startswith("section:")]


def prompt_of(app, name: str) -> str:
    return str(app.roster.options.get_option(name).prompt)


async def test_production_roster_counts_and_budgets(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        plan = app.roster.plan
        assert (len(plan.defined_tool_names), len(plan.deferred_tool_names), len(plan.skipped_tool_names)) == (
            30,
            17,
            0,
        )
        # Defined starts folded to its heading, so the deferred tools are on the first screen
        assert headings(app) == [
            f"\u25b8 Defined 30/30 \u00b7 {plan.definition_tokens:,}/9,000 tok\n  30 tools \u00b7 Enter shows them",
            f"\u25be Indexed 17/40 \u00b7 {plan.index_tokens:,}/2,000 tok",
            "\u25be Skipped 0",
        ]
        assert app.roster.shown_names() == list(plan.deferred_tool_names)
        start = prompt_of(app, "mcp.bland_call.start_call")
        # in words: what it does and its tokens; its server, and that its text is the server's
        assert start.splitlines() == ["    start_call  bland_call \u26a0", "    sends to the internet \u00b7 42 tokens"]
        for code in ("net-write", "NETWORK_WRITE", "discovered", "tok "):
            assert code not in start
        app.roster.options.focus()
        app.roster.options.highlighted = 0  # the Defined heading: Enter shows its tools
        await pilot.press("enter")
        await until(pilot, lambda: len(app.roster.shown_names()) == 47)
        assert headings(app)[0] == f"\u25be Defined 30/30 \u00b7 {plan.definition_tokens:,}/9,000 tok"
        time_now = prompt_of(app, "time.now")
        assert time_now.splitlines()[1].strip() == "changes nothing \u00b7 93 tokens" and "\u26a0" not in time_now
        assert prompt_of(app, "tool.call").splitlines()[1].strip() == "control tool \u00b7 89 tokens"
        assert "reads your data" in prompt_of(app, "memory.search")
        assert "changes your data" in prompt_of(app, "memory.save")
        assert "contacts people" in prompt_of(app, "notify.owner")
        app.roster.options.highlighted = 0
        await pilot.press("enter")  # and folds them again
        await until(pilot, lambda: len(app.roster.shown_names()) == 17)


async def test_filter_narrows_the_list(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        await pilot.press("ctrl+f")
        assert app.roster.filter.has_focus
        await pilot.press(*"gmail_work")
        await until(pilot, lambda: len(app.roster.shown_names()) == 8)
        assert all(".gmail_work." in n for n in app.roster.shown_names())
        assert headings(app)[0].endswith("(showing 3)") and headings(app)[1].endswith("(showing 5)")
        app.roster.filter.value = "net-write untrusted"
        await until(pilot, lambda: len(app.roster.shown_names()) == 11)
        plan = app.roster.plan
        assert all(plan.placement_of(n).side_effect == "NETWORK_WRITE" for n in app.roster.shown_names())
        app.roster.filter.value = "writes bland"  # the words a person types: what it does, its server
        await until(pilot, lambda: app.roster.shown_names() == ["mcp.bland_call.start_call"])
        await pilot.press("escape")  # the filter shows every section's matches; cleared, Defined is folded again
        await until(pilot, lambda: len(app.roster.shown_names()) == 17)


async def test_called_tools_are_marked_live(engine) -> None:
    app = make_app(engine, script=str(SCRIPTS / "wrapped_call.json"))
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        assert MARK_GLYPH[CALLED] not in prompt_of(app, "schedule.update")
        await send(pilot, "move my standup to 10")
        await until(pilot, lambda: CALLED in app.roster.marks.get("schedule.update", set()))
        assert MARK_GLYPH[CALLED] in prompt_of(app, "schedule.update")
        app.roster.filter.value = "called"
        await until(pilot, lambda: app.roster.shown_names() == ["schedule.update"])


async def test_discovered_by_tool_search_is_marked_and_kept_on_reopen(engine) -> None:
    app = make_app(engine, script=str(SCRIPTS / "search_then_answer.json"), strategy="active-tools")
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        assert app.roster.plan.strategy == "active-tools"
        await send(pilot, "find me a way to phone someone")
        await settled(pilot)
        assert DISCOVERED in app.roster.marks["mcp.bland_call.start_call"]
        assert MARK_GLYPH[DISCOVERED] in prompt_of(app, "mcp.bland_call.start_call")
        chat_id = app.session.chat_id
    app = make_app(engine, open_chat=chat_id)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        assert DISCOVERED in app.roster.marks["mcp.bland_call.start_call"]


async def test_native_search_loads_servers_and_roster_changes_show(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        post = lambda e: app.post_message(EngineEvent(e, app.generation))  # noqa: E731
        post(ev.ModelToolSearch(id="s1", query="send mail", references=["mcp.gmail_work.send_message"]))
        post(ev.ServerStatus(server="gmail_work", status="ready", tools=8, message="8 tools"))
        post(ev.ServerStatus(server="bland_call", status="failed", message="exited with code 1"))
        post(ev.RosterChanged(server="gmail_work", message="server gmail_work changed its tools"))
        await until(pilot, lambda: app.roster.changed == ["gmail_work"])
        assert LOADED in app.roster.marks["mcp.gmail_work.send_message"]
        assert MARK_GLYPH[LOADED] in prompt_of(app, "mcp.gmail_work.send_message")
        servers = str(app.roster.servers_line.render())
        assert "gmail_work 8" in servers and "bland_call: exited with code 1" in servers
        changed = str(app.roster.changed_line.render())
        assert "this chat keeps its pinned plan; a new chat will pick it up" in changed
        assert app.roster.changed_line.display
        notes = [getattr(i, "text", "") for i in app.log_view.items]
        assert any("bland_call failed" in n for n in notes)


async def test_events_from_a_closed_session_are_dropped(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        app.post_message(EngineEvent(ev.ServerStatus(server="old", status="stopped"), app.generation - 1))
        await pilot.pause(0.1)
        assert "old" not in app.roster.servers


async def test_selecting_a_tool_shows_schema_index_entry_and_reason(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        options = app.roster.options
        options.focus()
        options.highlighted = options.get_option_index("mcp.bland_call.start_call")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, ToolScreen))
        text = "\n".join(str(w.render()) for w in app.screen.query("Static"))
        assert "overflow: all 30 definition slots are taken" in text
        areas = {a.classes and sorted(a.classes)[0]: a.text for a in app.screen.query("TextArea")}
        entry = app.roster.plan.placement_of("mcp.bland_call.start_call").index_entry
        assert entry in areas["index-entry"].splitlines()
        assert areas["index-entry"] in app.roster.plan.index_text
        assert '"phone_number"' in areas["schema"]
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, ToolScreen))


async def test_roster_toggles(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        assert app.roster.display
        await pilot.press("ctrl+r")
        assert not app.roster.display
        assert app.log_view.size.width > 100
        await pilot.press("ctrl+r")
        assert app.roster.display


async def test_a_live_mark_keeps_the_list_where_the_reader_left_it(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(120, 30)) as pilot:
        await opened(pilot)
        app.roster.toggle_section("defined")  # every tool listed: the list is long enough to scroll
        options = app.roster.options
        options.scroll_to(y=20, animate=False, immediate=True)
        await pilot.pause(0.05)
        before = options.scroll_y
        assert before == 20
        app.post_message(EngineEvent(ev.ToolRequested(call_id="c", name="mcp.gmail_work.send_message"), app.generation))
        await until(pilot, lambda: CALLED in app.roster.marks.get("mcp.gmail_work.send_message", set()))
        await pilot.pause(0.05)
        assert options.scroll_y == before
        assert MARK_GLYPH[CALLED] in prompt_of(app, "mcp.gmail_work.send_message")
