"""The roster panel marks always-load pins, its filter finds them, its summary and legend count
and explain them, and the tool screen gives the reason; a plan without pins shows none of it."""

from __future__ import annotations

from textual.widgets import Static

from core.roster.models import AgentConfig, PlanInput, RosterPlan
from core.roster.planner import plan_roster
from core.roster.report import PIN_MARK
from core.tokens import TokenEstimator
from tests.helpers import configured, discovered
from tests.tui.roster_host import RosterHost
from tui.screens.tool import ToolScreen
from tui.widgets.roster import legend, summary_parts, tool_prompt, tool_words


def _plan(*always_load: str) -> RosterPlan:
    inp = PlanInput(
        agent=AgentConfig(always_load=always_load),
        configured=(configured("local.read"), configured("local.write")),
        discovered=(discovered("crm", "find"), discovered("crm", "update")),
    )
    return plan_roster(inp, TokenEstimator())


def test_the_pin_mark_takes_the_gap_before_the_name_and_only_on_pins():
    plan = _plan("mcp.crm.*")
    pinned, plain = plan.placement_of("mcp.crm.update"), plan.placement_of("local.read")
    assert pinned is not None and plain is not None
    assert f"{PIN_MARK}update" in str(tool_prompt(pinned, set())) and PIN_MARK not in str(tool_prompt(plain, set()))
    assert len(str(tool_prompt(pinned, set()))) == len(str(tool_prompt(pinned, set())).replace(PIN_MARK, " "))
    assert "pinned" in tool_words(pinned, set()) and "pinned" not in tool_words(plain, set())
    assert f"{PIN_MARK} 2 pinned" in "".join(p if isinstance(p, str) else p[0] for p in summary_parts(plan))
    assert f"{PIN_MARK}pinned" in str(legend(plan)) and PIN_MARK not in str(legend(_plan()))
    assert "pinned" not in "".join(p if isinstance(p, str) else p[0] for p in summary_parts(_plan()))


async def test_the_panel_shows_pins_first_and_the_tool_screen_says_why():
    plan = _plan("mcp.crm.update")
    app = RosterHost(plan)
    async with app.run_test(size=(110, 40)) as pilot:
        names = app.panel.shown_names()
        assert names[0] == "mcp.crm.update"  # defined first (nothing is deferred, so no tool.call)
        assert PIN_MARK in str(app.panel.options.get_option("mcp.crm.update").prompt)
        assert f"{PIN_MARK}pinned" in str(app.panel.legend.render())
        app.panel.filter.value = "pinned"
        await pilot.pause()
        assert app.panel.shown_names() == ["mcp.crm.update"]
        app.push_screen(ToolScreen(plan, "mcp.crm.update", set()))
        await pilot.pause()
        facts = "\n".join(str(s.render()) for s in app.screen.query(Static))
        assert "pinned by always_load mcp.crm.update in agent chat; ranked first, never deferred" in facts
