"""The roster panel: sections with counts and budgets, per-tool facts, the filter, live marks,
server status, roster.changed, the tool detail and the toggle."""

from __future__ import annotations

from textual.geometry import Region

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
    async with app.run_test(size=(160, 50)) as pilot:  # room for two lines a tool, Defined folded
        await opened(pilot)
        plan = app.roster.plan
        assert (len(plan.defined_tool_names), len(plan.deferred_tool_names), len(plan.skipped_tool_names)) == (
            30,
            17,
            0,
        )
        # Defined is folded to its heading and count, so the deferred tools are on the first screen
        await until(pilot, lambda: not app.roster.compact)
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
        # 47 tools in two lines each do not fit: a line each, what they do at the row's end
        assert app.roster.compact
        assert prompt_of(app, "time.now").split() == ["time.now", "changes", "nothing"]
        assert prompt_of(app, "tool.call").split() == ["tool.call", "control", "tool"]
        assert prompt_of(app, "memory.search").endswith("reads your data")
        assert prompt_of(app, "memory.save").endswith("changes your data")
        assert prompt_of(app, "notify.owner").endswith("contacts people")
        # a wide panel has room for every row's words (a narrower one says them in a word)
        assert prompt_of(app, "mcp.bland_call.start_call").split()[:3] == ["start_call", "bland_call", "\u26a0"]
        assert prompt_of(app, "mcp.bland_call.start_call").endswith(" sends to the internet")
        app.roster.options.highlighted = 0
        await pilot.press("enter")  # and folds them again
        await until(pilot, lambda: len(app.roster.shown_names()) == 17)
        await until(pilot, lambda: not app.roster.compact)


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


# -- the first screen: every deferred tool in view, sections the person folds -------------------
DEMO_SERVERS = {"bland_call": 1, "bland_read": 2, "gmail_personal": 8, "gmail_work": 8}


def row_region(app, option_id: str) -> Region:
    """Where the list draws an option's row on screen: the list's content region, from the
    option's first line (as the list laid it out) less the scroll, its height in lines."""
    options = app.roster.options
    index = options.get_option_index(option_id)
    area = options.scrollable_content_region
    top = area.y + options._index_to_line[index] - round(options.scroll_y)
    return Region(area.x, top, area.width, options._heights[index])


def in_view(app, option_id: str) -> bool:
    """The row is drawn whole inside the list's visible area, inside the panel, on the screen."""
    row = row_region(app, option_id)
    visible = app.roster.options.scrollable_content_region
    return (
        row.area > 0
        and visible.contains_region(row)
        and app.roster.region.contains_region(row)
        and app.screen.region.contains_region(row)
    )


async def demo_servers_ready(app, pilot) -> None:
    """The first screen as the demo shows it: its four servers ready on the MCP line (posted as
    the engine posts them; the tests do not start the servers)."""
    for server, tools in DEMO_SERVERS.items():
        status = ev.ServerStatus(server=server, status="ready", tools=tools, message=f"{tools} tools")
        app.post_message(EngineEvent(status, app.generation))
    await until(pilot, lambda: set(app.roster.servers) == set(DEMO_SERVERS))
    await pilot.pause(0.1)


async def test_at_120x40_every_deferred_tool_is_in_view_without_scrolling(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        await demo_servers_ready(app, pilot)
        plan = app.roster.plan
        assert app.roster.servers_line.display and app.roster.servers_line.region.height >= 1
        assert app.roster.options.scroll_y == 0
        out = [n for n in plan.deferred_tool_names if not in_view(app, n)]
        assert not out, f"deferred tools below the fold: {out}"
        # Defined says what it holds, folded; the sections under it are in view too
        assert app.roster.folded() == {"defined"}
        assert "30 tools" in headings(app)[0]
        for key in ("defined", "deferred", "skipped"):
            assert in_view(app, f"section:{key}")
        # a line each, what it does at the row's end, in words (no codes)
        start = prompt_of(app, "mcp.bland_call.start_call")
        assert "\n" not in start and start.split()[:3] == ["start_call", "bland_call", "\u26a0"]
        assert start.split()[-1] == "sends" and "NETWORK" not in start and "net-write" not in start
        # the roster-changed notice takes rows from the list: the tools stay in view
        app.post_message(EngineEvent(ev.RosterChanged(server="gmail_work", message="changed"), app.generation))
        await until(pilot, lambda: app.roster.changed_line.display)
        await pilot.pause(0.1)
        assert all(in_view(app, n) for n in plan.deferred_tool_names)


async def test_a_granted_and_a_discovered_tool_stay_marked_on_one_line_rows(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        await demo_servers_ready(app, pilot)
        assert app.roster.compact
        app.roster.set_grants({"mcp.bland_call.start_call": "allowed for this chat"})
        app.post_message(EngineEvent(ev.ToolDiscovered(names=["mcp.gmail_work.send_message"]), app.generation))
        await until(pilot, lambda: DISCOVERED in app.roster.marks.get("mcp.gmail_work.send_message", set()))
        await pilot.pause(0.05)
        assert "\u2713 allowed" in prompt_of(app, "mcp.bland_call.start_call")
        assert prompt_of(app, "mcp.gmail_work.send_message").startswith(f" {MARK_GLYPH[DISCOVERED]}")
        assert all(in_view(app, n) for n in app.roster.plan.deferred_tool_names)
        # and every row is one line still: the grant takes the room of what it does, not a line
        assert all(
            app.roster.options._heights[app.roster.options.get_option_index(n)] == 1 for n in app.roster.shown_names()
        )


async def test_sections_fold_and_show_by_key(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        options = app.roster.options
        options.focus()
        options.highlighted = options.get_option_index("mcp.gmail_work.send_draft")
        await pilot.press("left")  # folds the section the cursor is in; the cursor goes to its heading
        await until(pilot, lambda: app.roster.folded() == {"defined", "deferred"})
        assert options.highlighted_option.id == "section:deferred"
        assert app.roster.shown_names() == []
        # a folded section says how many it holds: nothing leaves the roster silently
        assert headings(app)[1].splitlines()[1].strip() == "17 tools \u00b7 Enter shows them"
        await pilot.press("right")
        await until(pilot, lambda: app.roster.folded() == {"defined"})
        assert len(app.roster.shown_names()) == 17
        await pilot.press("up")  # the Defined heading
        assert options.highlighted_option.id == "section:defined"
        await pilot.press("enter")
        await until(pilot, lambda: not app.roster.folded())
        assert len(app.roster.shown_names()) == 47
        await pilot.press("left")
        await until(pilot, lambda: app.roster.folded() == {"defined"})
        # in the filter box the arrows move its cursor: nothing folds
        await pilot.press("ctrl+f")
        await pilot.press("x", "left")
        assert app.roster.filter.cursor_position == 0 and app.roster.folded() == {"defined"}


async def test_sections_fold_and_show_by_click(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        await pilot.pause(0.1)
        options = app.roster.options

        async def click(key: str) -> None:
            row = row_region(app, f"section:{key}")
            await pilot.click(options, offset=(row.x - options.region.x + 2, row.y - options.region.y))

        await click("defined")
        await until(pilot, lambda: not app.roster.folded())
        await click("deferred")
        await until(pilot, lambda: app.roster.folded() == {"deferred"})
        assert not set(app.roster.shown_names()) & set(app.roster.plan.deferred_tool_names)
        assert len(app.roster.shown_names()) == 30
        await click("deferred")
        await until(pilot, lambda: not app.roster.folded())


async def test_the_persons_folds_hold_across_a_new_chat_a_switch_and_a_resize(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        app.roster.toggle_section("skipped")  # the person folds a section: their folds hold from now on
        app.roster.toggle_section("defined")
        assert app.roster.folded() == {"skipped"}
        first = app.session.chat_id
        await send(pilot, "hello")  # a used chat: ctrl+n opens another (an unused one is kept)
        await settled(pilot)
        await pilot.press("ctrl+n")  # a new chat: the roster is reset, planned and shown again
        await until(pilot, lambda: app.session is not None and app.session.chat_id != first)
        await opened(pilot)
        assert app.roster.folded() == {"skipped"} and len(app.roster.shown_names()) == 47
        app.roster.set_strategy("active-tools", "switched to a provider without an index")
        await pilot.pause()
        assert app.roster.folded() == {"skipped"} and len(app.roster.shown_names()) == 47
        await pilot.resize_terminal(160, 60)
        await pilot.pause(0.2)
        assert app.roster.folded() == {"skipped"}


async def test_the_default_follows_what_the_list_holds(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        await pilot.pause(0.1)
        assert app.roster.folded() == {"defined"} and app.roster.compact
        await pilot.resize_terminal(130, 60)  # every section fits, a line a tool: nothing folded
        await until(pilot, lambda: not app.roster.folded())
        assert app.roster.compact and all(in_view(app, t.name) for t in app.roster.plan.tools)
        await pilot.resize_terminal(160, 50)  # Defined folded, the deferred tools in two lines each
        await until(pilot, lambda: app.roster.folded() == {"defined"} and not app.roster.compact)
        assert all(in_view(app, n) for n in app.roster.plan.deferred_tool_names)
        assert all(
            app.roster.options._heights[app.roster.options.get_option_index(n)] == 2 for n in app.roster.shown_names()
        )
