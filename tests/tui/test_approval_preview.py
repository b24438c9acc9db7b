"""The approval bar shows what will run (issue 19 item 2, issue 23 item 3): the summary, the
decisive fields whole and the changes before -> after in view at 120x40 and at 80x24, the rest
folded (e unfolds it), a detail view with the raw canonical arguments (d), and a parked approval
reopened with the preview it was asked with. It showed four lines of raw JSON at any size, in
the model's order, so a mail whose long body came first never showed its recipient.

The assertions read the screen as the terminal shows it (tests/tui/test_layout.py ``rows_in``);
the snapshots pin the look (``pytest tests/tui/test_approval_preview.py --snapshot-update``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.chat.options import ChatOptions
from core.engine import Engine
from core.pipeline.approvals import Decision, FixedApprover
from tests.tui.conftest import SCRIPTS, make_app, opened, send, until
from tests.tui.test_layout import rows_in, squash
from tests.tui.test_snapshots import steady
from tui.screens.approval_detail import ApprovalDetail

SIZES = [(120, 40), (80, 24)]
BODY = "Dear Dana,\n\n" + "The renewal terms we discussed are attached; please sign page four. " * 80


def mail_script(folder: Path) -> Path:
    """A model that writes a long body first and the recipients last."""
    arguments = {"body": BODY, "subject": "Renewal", "to": ["ceo\ufe0f@company.example", "dana@globex.example"]}
    call = {"type": "tool_use", "id": "m1", "name": "mcp.gmail_work.send_message", "input": arguments}
    path = folder / "mail.json"
    path.write_text(json.dumps({"turns": [[call], [{"type": "text", "text": "Sent."}]]}))
    return path


async def bar_shown(pilot: Any, text: str = "go") -> Any:
    app = pilot.app
    await opened(pilot)
    await send(pilot, text)
    await until(pilot, lambda: app.approval_bar is not None and app.approvals.approver.pending(), timeout=20)
    await until(pilot, lambda: not app.approval_bar.has_class("-grace"), timeout=5)
    await pilot.pause(0.05)
    return app.approval_bar


def bar_text(app: Any) -> str:
    """The bar's text on screen, inside its border, rows joined."""
    return squash(" ".join(rows_in(app, app.approval_bar.content_region)))


@pytest.mark.parametrize("size", SIZES, ids=["120x40", "80x24"])
async def test_a_schedule_change_shows_its_target_and_before_after(engine: Engine, size: tuple[int, int]) -> None:
    app = make_app(engine, script=str(SCRIPTS / "wrapped_call.json"))
    async with app.run_test(size=size) as pilot:
        await bar_shown(pilot)
        shown = bar_text(app)
        assert "Change the schedule \u201cTeam standup\u201d: time 09:00 \u2192 10:00" in shown
        assert "Schedule: sch_1 \u2014 \u201cTeam standup\u201d, weekdays at 09:00 (UTC), active" in shown
        assert "Time: 09:00 \u2192 10:00" in shown
        assert "Allow once (y)" in shown and "Deny (n)" in shown  # the buttons never pushed out


@pytest.mark.parametrize("size", SIZES, ids=["120x40", "80x24"])
async def test_a_long_mail_shows_its_recipients_whole_before_its_body(
    engine: Engine, tmp_path: Path, size: tuple[int, int]
) -> None:
    app = make_app(engine, script=str(mail_script(tmp_path)), start_demo_servers=True)
    async with app.run_test(size=size) as pilot:
        await bar_shown(pilot)
        shown = bar_text(app)
        assert "To: ceo\\ufe0f@company.example, dana@globex.example" in shown  # whole, the selector visible
        assert "From: Sam Rivera <sam.rivera@northwind.example>" in shown  # the account it goes from
        assert "\ufe0f" not in "".join(rows_in(app, app.approval_bar.region))
        if size == (120, 40):  # room to spare: the body's folded line and the server's claims show too
            assert f"Body: [{len(BODY):,} characters, 3 lines, e shows it] Dear Dana," in shown
            assert "from the MCP server gmail_work, untrusted" in shown
            assert app.approval_bar.region.height > 12  # not four lines at any size
        assert shown.index("To:") < shown.index("Subject:") if "Subject:" in shown else True


async def test_e_unfolds_the_rest_and_d_shows_the_raw_canonical_arguments(engine: Engine, tmp_path: Path) -> None:
    app = make_app(engine, script=str(mail_script(tmp_path)))
    async with app.run_test(size=(120, 40)) as pilot:
        bar = await bar_shown(pilot)
        details = bar.query_one("#approval-details")
        folded_rows = details.outer_size.height
        assert details.has_class("-folded")
        await pilot.press("tab")
        await until(pilot, lambda: bar.has_focus)
        await pilot.press("e")
        await pilot.pause(0.05)
        assert not details.has_class("-folded") and details.outer_size.height > folded_rows
        await pilot.press("e")
        await pilot.pause(0.05)
        assert details.has_class("-folded")

        await pilot.press("d")
        await until(pilot, lambda: isinstance(app.screen, ApprovalDetail))
        raw = app.screen.query_one("#raw-json").text
        assert json.loads(raw.replace("\\ufe0f", "\ufe0f"))["to"] == [
            "ceo\ufe0f@company.example",
            "dana@globex.example",
        ]
        assert "\ufe0f" not in raw  # shown as its code, here too
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, ApprovalDetail))
        assert app.approval_bar is bar and bar.decided is None


async def test_a_parked_approval_reopened_shows_the_preview_it_was_asked_with(engine: Engine, tmp_path: Path) -> None:
    script = tmp_path / "park.json"
    call = {"type": "tool_use", "id": "p1", "name": "tool.call"}
    call["input"] = {"name": "schedule.update", "arguments": {"schedule_id": "sch_1", "time": "11:30"}}
    script.write_text(json.dumps({"turns": [[call], [{"type": "text", "text": "Moved."}]]}))
    chat = await engine.open_chat(
        None, ChatOptions(script=str(script), start_demo_servers=False), approver=FixedApprover(Decision.PARK)
    )
    try:
        await chat.send("move it")
        chat_id = chat.chat_id
    finally:
        await chat.close()
    engine.store.db["schedules"].update(1, {"title": "Daily sync"})  # renamed meanwhile, elsewhere

    app = make_app(engine, open_chat=chat_id, script=str(script))
    async with app.run_test(size=(80, 24)) as pilot:
        await opened(pilot)
        await until(pilot, lambda: app.approval_bar is not None, timeout=10)
        await pilot.pause(0.05)
        shown = bar_text(app)
        assert "parked in this chat" in shown
        assert "Change the schedule \u201cTeam standup\u201d: time 09:00 \u2192 11:30" in shown  # what was asked


# --- snapshots ----------------------------------------------------------------------------------


async def log_at_rest(pilot: Any) -> None:
    """The log under the taller bottom area has come to rest; its scrollbar, which shows how far
    it had scrolled when the bottom area grew (the log's timing, not the bar's), is left out."""
    log = pilot.app.log_view
    log.styles.scrollbar_size_vertical = 0
    seen: list[tuple[Any, ...]] = []
    while len(seen) < 4 or len(set(seen[-4:])) > 1:
        await pilot.pause(0.05)
        seen.append((log.scroll_y, log.max_scroll_y, log.size, log.virtual_size))
        if len(seen) > 100:
            raise AssertionError(f"the log never came to rest: {seen[-5:]}")


def _shot(text: str = "go") -> Any:
    async def run_before(pilot: Any) -> None:
        await bar_shown(pilot, text)
        await log_at_rest(pilot)
        await steady(pilot)

    return run_before


@pytest.mark.parametrize("size", SIZES, ids=["120x40", "80x24"])
def test_snapshot_schedule_change(snap_compare: Any, engine: Engine, size: tuple[int, int]) -> None:
    app = make_app(engine, script=str(SCRIPTS / "wrapped_call.json"))
    assert snap_compare(app, terminal_size=size, run_before=_shot())


@pytest.mark.parametrize("size", SIZES, ids=["120x40", "80x24"])
def test_snapshot_long_mail(snap_compare: Any, engine: Engine, tmp_path: Path, size: tuple[int, int]) -> None:
    app = make_app(engine, script=str(mail_script(tmp_path)))
    assert snap_compare(app, terminal_size=size, run_before=_shot())
