"""A layout that fits: at 80x24 nothing is cut off (the roster folds into one line, the
placeholder, the footer, tool rows and the approval show whole), at 160 columns the roster's
token counts show, the summary speaks the section headings' words under every strategy,
what-if and the roster name the pinned plan alike, the header never shows a chat that is not
open, and every bound key is in the footer or the command palette.

The assertions read the screen as the terminal shows it (the compositor's rows, cropped to a
widget's region), not a snapshot."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from textual.content import Content
from textual.geometry import Region
from textual.widgets import Button, DataTable, Footer, Select
from textual.widgets._collapsible import CollapsibleTitle
from textual.widgets._footer import FooterKey

from core import events as ev
from core.errors import UserFacingError
from core.pipeline import codes
from core.roster.report import budget_lines
from tests.helpers import production_plan
from tests.tui.conftest import SCRIPTS, make_app, opened, send, settled, until
from tui import app as app_module
from tui.app import DeferchatApp, EngineEvent
from tui.screens import whatif
from tui.screens.whatif import WhatIfScreen
from tui.state import CONTROL_WORDS, EFFECT_VERB, SIDE_EFFECT_WORDS, ToolItem
from tui.widgets import roster as roster_module
from tui.widgets.roster import summary_parts

CALL = "start a call to +1 555 0100 about the invoice"


def rows_in(app: Any, region: Region) -> list[str]:
    """The screen's text inside ``region``, row by row, as the terminal shows it."""
    strips = app.screen._compositor.render_strips()
    return [strips[y].crop(region.x, region.right).text for y in range(region.y, min(region.bottom, len(strips)))]


def squash(text: str) -> str:
    return " ".join(text.split())


def shown(app: Any, region: Region) -> str:
    return squash(" ".join(rows_in(app, region)))


def footer_shows_every_key_whole(app: Any) -> list[str]:
    """Every key the footer has is on its row in full, none under the palette key: the labels shown."""
    footer = app.query_one(Footer)
    row = shown(app, footer.region)
    labels = []
    for key in footer.query(FooterKey):
        label = f"{key.key_display} {key.description}".strip()
        assert label in row, f"the footer cuts {label!r}: {row!r}"
        labels.append(label)
    palette = [k for k in footer.query(FooterKey) if k.has_class("-command-palette")]
    assert palette, "the command palette's key is in the footer"
    for key in footer.query(FooterKey):
        if key not in palette:
            assert key.region.right <= palette[0].region.x, f"{key.description} runs under the palette key"
    return labels


def inside(inner: Region, outer: Region) -> bool:
    return outer.contains_region(inner) and inner.area > 0


async def test_at_80x24_the_roster_folds_into_a_line_and_comes_back_on_its_key(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(80, 24)) as pilot:
        await opened(pilot)
        await pilot.pause()
        screen = app.screen.region
        assert not app.roster.display and app.roster.strip.display
        assert "30 defined \u00b7 17 indexed \u00b7 0 skipped" in shown(app, app.roster.strip.region)
        assert "^r shows it" in shown(app, app.roster.strip.region)
        assert app.query_one("#main").region.width == 80  # the chat has the whole width
        # the placeholder, every word of it
        assert squash(str(app.composer.placeholder)) in shown(app, app.composer.content_region)
        labels = footer_shows_every_key_whole(app)
        assert {"^q Quit", "^n New", "^o Chats", "^r Roster", "^g Plan", "^t What-if"} <= set(labels)

        await pilot.press("ctrl+r")
        await pilot.pause()
        assert app.roster.display and not app.roster.strip.display
        assert inside(app.roster.region, screen) and app.roster.region.width >= 37
        assert "Defined 30/30" in shown(app, app.roster.region)
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert not app.roster.display and app.roster.strip.display


async def test_at_80x24_an_approval_its_row_and_the_message_box_show_whole(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(80, 24)) as pilot:
        await opened(pilot)
        await send(pilot, CALL)
        await until(pilot, lambda: app.approval_bar is not None)
        await pilot.pause(0.2)
        screen = app.screen.region
        bar = app.approval_bar
        assert bar is not None and inside(bar.region, screen)
        for name in ("allow_once", "allow_chat", "deny"):  # the confirmation's buttons show only when asked
            button = bar.query_one(f"#{name}", Button)
            assert inside(button.region, bar.region), button.id
            assert squash(str(button.label)) in shown(app, button.region)
        assert "Waiting for your approval: start_call (mcp.bland_call.start_call)" in shown(app, bar.region)
        # the message box stays, under the approval, its placeholder whole
        assert inside(app.composer.region, screen) and app.composer.region.y >= bar.region.bottom
        assert squash(str(app.composer.placeholder)) in shown(app, app.composer.content_region)
        # the status line says it all
        assert squash(str(app.status_line.render())) in shown(app, app.status_line.region)
        # the tool row's title wraps, never cut
        row = next(i for i in app.log_view.items if isinstance(i, ToolItem)).widget
        row.scroll_visible(animate=False)
        await pilot.pause()
        title = row.query_one(CollapsibleTitle)
        assert inside(title.region, screen)
        assert "awaiting approval \u00b7 start_call (mcp.bland_call.start_call) via tool.call" in shown(
            app, title.region
        )
        # a running turn's own keys join the footer, and it still fits
        labels = footer_shows_every_key_whole(app)
        assert any(label.endswith("Answer") for label in labels) and any(label.endswith("Stop") for label in labels)


async def test_a_failed_call_says_why_in_words_and_its_code_in_the_detail(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(80, 24)) as pilot:
        await opened(pilot)
        post = lambda e: app.post_message(EngineEvent(e, app.generation))  # noqa: E731
        post(ev.ModelToolUse(id="c9", name="tool.call", input={"name": "email.unsubscribe", "arguments": {}}))
        post(ev.ToolRequested(call_id="c9", name="email.unsubscribe", via="tool.call", arguments={}))
        post(
            ev.ToolDenied(
                call_id="c9",
                name="email.unsubscribe",
                via="tool.call",
                code=codes.DENIED_HARDLINE,
                message="rule no-unsubscribe-on-fridays",
            )
        )
        await until(pilot, lambda: any(isinstance(i, ToolItem) and i.code for i in app.log_view.items))
        await pilot.pause()
        row = next(i for i in app.log_view.items if isinstance(i, ToolItem)).widget
        title = shown(app, row.query_one(CollapsibleTitle).region)
        assert "denied: a hardline rule forbids it \u00b7 email.unsubscribe via tool.call" in title
        assert codes.DENIED_HARDLINE not in title
        await pilot.click(row.query_one(CollapsibleTitle))
        await until(pilot, lambda: not row.collapsed)
        await pilot.pause()
        detail = shown(app, row.query_one(".details").region)
        assert f"{codes.DENIED_HARDLINE}: rule no-unsubscribe-on-fridays" in detail


def test_every_error_code_has_words_of_its_own() -> None:
    every = {v for k, v in vars(codes).items() if k.isupper() and isinstance(v, str)}
    sentences = {code: codes.describe(code) for code in every}
    assert all(s and "tool." not in s for s in sentences.values())
    assert len(set(sentences.values())) == len(every), "one code, one sentence"
    assert codes.describe("tool.denied.something_new") == "it was refused"
    assert codes.describe("tool.something_new") == codes.describe(None) == "it failed"


_SAYS = "|".join(re.escape(w) for w in (*SIDE_EFFECT_WORDS.values(), CONTROL_WORDS, *EFFECT_VERB.values(), "control"))
LINE_ROW = re.compile(r"^ {4}\S")  # a one-line tool row: the marks' and the pin's columns, then its name
LINE_WORDS = re.compile(r"\s(?:" + _SAYS + r")\s*$")  # ... and what it does, whole, at its end

ROW_WORDS = re.compile(
    r"^\s*(?:\u2713 allowed \u00b7 )?(?:"
    + "|".join(re.escape(w) for w in (*SIDE_EFFECT_WORDS.values(), CONTROL_WORDS))
    + r")\b"
)


async def test_at_160_columns_the_rosters_rows_show_whole(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(160, 50)) as pilot:
        await opened(pilot)
        options = app.roster.options
        await until(pilot, lambda: not app.roster.compact)  # Defined folded: two lines a tool fit
        lines = rows_in(app, options.region)
        words = [line for line in lines if ROW_WORDS.match(line)]
        assert len(words) == 17, lines
        for line in words:  # what it does, then its tokens: never cut
            assert re.search(r" \u00b7 \d[\d,]* tokens?\s*$", line), f"the token count is cut: {line!r}"
        app.roster.toggle_section("defined")  # every tool listed: a line each
        await until(pilot, lambda: app.roster.compact)
        servers: set[str] = set()
        for last in (0, len(options.options) - 1):  # the top of the list, then its end (the MCP tools)
            options.highlighted = last
            options.scroll_to_highlight()
            await pilot.pause(0.1)
            lines = rows_in(app, options.scrollable_content_region)  # the rows, not the scrollbar
            rows = [line for line in lines if LINE_ROW.match(line)]
            assert rows, "no tool is on screen"
            for line in rows:  # what it does, whole, at the row's end
                assert LINE_WORDS.search(line), f"what the tool does is cut: {line!r}"
            servers |= {m for line in lines for m in re.findall(r"\b(gmail_\w+|bland_\w+) \u26a0", line)}
        assert {"gmail_personal", "gmail_work"} <= servers


async def test_at_120x40_the_deferred_tools_are_on_the_first_screen(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        await pilot.pause(0.1)
        plan = app.roster.plan
        lines = [line.strip() for line in rows_in(app, app.roster.options.region)]
        assert lines[0].startswith("\u25b8 Defined 30/30") and "Enter shows them" in lines[1]
        assert lines[2].startswith("\u25be Indexed 17/40"), lines[:3]  # under the folded Defined
        # then the deferred tools, a line each, in the plan's order, every one of them
        names = [line.split()[0] for line in lines[3:20]]
        short = [t.remote_name or t.name for t in map(plan.placement_of, plan.deferred_tool_names) if t]
        assert names == short
        assert lines[20].startswith("\u25be Skipped 0")
        assert app.roster.options.scroll_y == 0


@pytest.mark.parametrize("strategy", ["wrapper", "anthropic", "openai", "active-tools"])
def test_the_summary_speaks_the_section_headings_words(strategy: str) -> None:
    plan = production_plan(strategy=strategy)
    heading = budget_lines(plan)["deferred"]
    summary = Content.assemble(*summary_parts(plan)).plain
    word = heading.split()[0].lower()  # "indexed" (the index carries them) or "deferred"
    assert f"{len(plan.deferred_tool_names)} {word}" in summary
    if "reached by" in heading:
        assert "reached by " + heading.split("reached by ", 1)[1] in summary
    assert ("indexed" in summary) == (strategy == "wrapper")


async def test_what_if_and_the_roster_call_the_pinned_plan_alike(engine) -> None:
    assert roster_module.PINNED.lower() == whatif.PINNED.lower() == "pinned plan"
    app = make_app(engine)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        assert "pinned plan" in str(app.roster.title.render())
        await pilot.press("ctrl+t")
        await until(pilot, lambda: isinstance(app.screen, WhatIfScreen) and app.screen.result is not None)
        screen = app.screen
        assert str(screen.query_one("#whatif-pinned").render()).startswith("Pinned plan")
        labels = [str(c.label) for c in screen.query_one(DataTable).columns.values()]
        assert "pinned plan" in labels


async def test_only_changes_lists_the_tools_that_leave_the_plan_too(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        await pilot.press("ctrl+t")
        await until(pilot, lambda: isinstance(app.screen, WhatIfScreen) and app.screen.result is not None)
        screen = app.screen
        screen.query_one("#whatif-strategy", Select).value = "active-tools"
        await until(pilot, lambda: screen.result.strategy == "active-tools")
        await pilot.press("ctrl+t")  # only the changes
        table = screen.query_one(DataTable)
        await until(pilot, lambda: table.row_count > 0 and screen.only_changes)
        rows = {str(table.get_row(key)[1]): [str(c) for c in table.get_row(key)] for key in table.rows}
        assert set(rows) == {"tool.call", "tool.search"}  # indexed -> deferred is no move
        assert rows["tool.call"][2:4] == ["defined", "\u2013"] and rows["tool.call"][0] == "\u2212"  # leaves
        assert rows["tool.search"][2:4] == ["\u2013", "defined"] and rows["tool.search"][0] == "+"  # joins


@pytest.mark.parametrize("failure", [UserFacingError("the roster file is gone"), RuntimeError("disk on fire")])
async def test_the_header_clears_while_a_chat_opens_and_says_when_it_did_not(engine, failure: Exception) -> None:
    app = make_app(engine, script=str(SCRIPTS / "wrapped_call.json"))
    async with app.run_test(size=(120, 30)) as pilot:
        await opened(pilot)
        await send(pilot, "move my standup to 10")
        await until(pilot, lambda: app.approval_bar is not None)
        app.approval_bar.focus()
        await until(pilot, lambda: app.approval_bar.armed, timeout=3)
        await pilot.press("y")
        await settled(pilot)
        header = app.header_bar
        assert str(header.usage.render()) and "move my standup" in str(header.title_label.render())
        gate = asyncio.Event()

        async def opening(*args: Any, **kw: Any) -> Any:
            await gate.wait()
            raise failure

        app.engine.open_chat = opening  # type: ignore[method-assign]
        await pilot.press("ctrl+n")
        await until(pilot, lambda: "Opening a chat" in str(header.title_label.render()))
        assert [str(w.render()) for w in (header.model_label, header.badge, header.reason, header.usage)] == [""] * 4
        gate.set()
        await until(pilot, lambda: header.has_class("-failed"))
        assert str(header.title_label.render()) == "No chat open"
        assert "could not be opened" in str(header.model_label.render())
        assert str(failure) in str(header.reason.render()) and not str(header.usage.render())


async def test_every_bound_key_is_in_the_footer_or_the_palette(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(80, 24)) as pilot:
        await opened(pilot)
        palette = " ".join(f"{c.title} {c.help}" for c in app.get_system_commands(app.screen))
        in_footer = {k.action for k in app.query(FooterKey)}
        for binding in DeferchatApp.BINDINGS:
            keys = [k.strip() for k in binding.key.split(",")]
            listed = all(re.search(rf"[(, ]{re.escape(k)}[,)]", palette) for k in keys)
            assert listed or (binding.show and binding.action in in_footer), (
                f"{binding.key} ({binding.action}) is neither in the footer nor in the palette"
            )


def test_the_fold_width_is_the_one_the_palette_names() -> None:
    help_text = next(h for a, _, h in app_module.COMMANDS if a == "toggle_roster")
    assert f"below {app_module.ROSTER_FOLD_WIDTH} columns" in help_text
