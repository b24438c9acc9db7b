"""Tool activity rows: a wrapped call shows first as tool.call, then, as soon as the pipeline's
tool.requested arrives under the same call id, as the deferred tool "via tool.call"."""

from __future__ import annotations

from typing import Any

import pytest

from core import events as ev
from core.pipeline import codes
from tests.tui.conftest import SCRIPTS, make_app, opened, send, settled, until
from tui.app import EngineEvent
from tui.state import AWAITING, DONE, PENDING, RUNNING, ToolItem, tool_title
from tui.widgets.chat_log import ToolCallRow


def record_titles(app: Any) -> list[tuple[str, str]]:
    """(event type, the first row's title after the event) for every handled event."""
    seen: list[tuple[str, str]] = []
    handle = app.router.handle

    async def spy(event: Any) -> None:
        await handle(event)
        rows = [i for i in app.log_view.items if isinstance(i, ToolItem)]
        if rows:
            seen.append((event.type, tool_title(rows[0])))

    app.router.handle = spy
    return seen


async def test_tool_call_is_renamed_when_the_pipeline_speaks(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(110, 30)) as pilot:
        await opened(pilot)
        seen = record_titles(app)
        await send(pilot, "start a call to +1 555 0100 about the invoice")
        await until(pilot, lambda: app.approval_bar is not None)
        first_type, first_title = seen[0]
        assert first_type == "model.tool_use"
        assert "tool.call" in first_title and "start_call" not in first_title
        renamed_at = next(t for t, title in seen if "start_call (mcp.bland_call.start_call)" in title)
        assert renamed_at == "tool.requested"
        row = next(i for i in app.log_view.items if isinstance(i, ToolItem))
        assert (row.model_name, row.name, row.via) == ("tool.call", "mcp.bland_call.start_call", "tool.call")
        widget = row.widget
        assert isinstance(widget, ToolCallRow)
        shown = str(widget.title)
        assert "start_call (mcp.bland_call.start_call)" in shown and "via tool.call" in shown
        assert "awaiting approval" in shown


async def test_statuses_follow_the_events(engine) -> None:
    """pending -> awaiting approval -> running -> done, on one row, for a wrapped configured tool."""
    app = make_app(engine, script=str(SCRIPTS / "wrapped_call.json"))
    async with app.run_test(size=(110, 30)) as pilot:
        await opened(pilot)
        statuses: list[str] = []
        handle = app.router.handle

        async def spy(event: Any) -> None:
            await handle(event)
            rows = [i for i in app.log_view.items if isinstance(i, ToolItem)]
            if rows and (not statuses or statuses[-1] != rows[0].status):
                statuses.append(rows[0].status)

        app.router.handle = spy
        await send(pilot, "move my standup to 10")
        await until(pilot, lambda: app.approval_bar is not None)
        await pilot.press("tab")  # to the approval: typing never answers it
        await until(pilot, lambda: app.approval_bar.has_focus)
        await until(pilot, lambda: app.approval_bar.armed, timeout=3)
        await pilot.press("y")
        await settled(pilot)
        assert statuses == [PENDING, AWAITING, RUNNING, DONE]
        row = next(i for i in app.log_view.items if isinstance(i, ToolItem))
        assert row.name == "schedule.update" and row.via == "tool.call" and row.scope == "once"
        assert row.result["schedule"]["time"] == "10:00"


@pytest.mark.parametrize(
    ("kind", "status", "code"),
    [("tool.failed", "failed", "tool.execution_failed"), ("tool.denied", "denied", "tool.denied.policy")],
)
async def test_failed_and_denied_rows_say_why_and_carry_their_code_in_the_detail(
    engine, kind: str, status: str, code: str
) -> None:
    app = make_app(engine)
    async with app.run_test(size=(110, 30)) as pilot:
        await opened(pilot)
        post = lambda e: app.post_message(EngineEvent(e, app.generation))  # noqa: E731
        post(ev.ModelToolUse(id="c9", name="tool.call", input={"name": "email.unsubscribe", "arguments": {}}))
        post(ev.ToolRequested(call_id="c9", name="email.unsubscribe", via="tool.call", arguments={}))
        cls = ev.ToolFailed if kind == "tool.failed" else ev.ToolDenied
        post(cls(call_id="c9", name="email.unsubscribe", via="tool.call", code=code, message="no"))
        await until(pilot, lambda: any(isinstance(i, ToolItem) and i.status == status for i in app.log_view.items))
        row = next(i for i in app.log_view.items if isinstance(i, ToolItem))
        assert row.code == code
        assert f"{status}: {codes.describe(code)}" in str(row.widget.title) and code not in str(row.widget.title)
        assert f"{code}: no" in str(row.widget.query_one(".details").render())


async def test_rows_collapse_and_expand(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(110, 30)) as pilot:
        await opened(pilot)
        app.post_message(EngineEvent(ev.ModelToolUse(id="c1", name="time.now", input={}), app.generation))
        await until(pilot, lambda: any(isinstance(i, ToolItem) for i in app.log_view.items))
        post = lambda e: app.post_message(EngineEvent(e, app.generation))  # noqa: E731
        post(ev.ToolRequested(call_id="c1", name="time.now", arguments={}))
        post(ev.ToolCompleted(call_id="c1", name="time.now", result={"lines": list(range(100))}))
        await until(pilot, lambda: app.router.tools["c1"].status == DONE)
        row = app.router.tools["c1"].widget
        assert row.collapsed
        await pilot.click(row.query_one("CollapsibleTitle"))
        await until(pilot, lambda: not row.collapsed)
        details = str(row.query_one(".details").render())
        assert "arguments:" in details and "more lines (c copies the whole call)" in details
        row.query_one("CollapsibleTitle").focus()
        await pilot.press("c")
        assert app.clipboard.count("\n") > 100 and '"lines": [' in app.clipboard
