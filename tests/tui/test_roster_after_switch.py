"""After a switch of provider the roster panel says how the pinned plan's deferred tools are
reached now, in the same words as a chat opened under that strategy, and keeps its marks."""

from __future__ import annotations

from core.roster.models import AgentConfig, Caps, PlanInput, RosterPlan
from core.roster.planner import plan_roster
from core.tokens import TokenEstimator
from tests.helpers import configured, discovered
from tests.tui.roster_host import RosterHost
from tui.widgets.roster import summary_parts


def _plan(strategy: str) -> RosterPlan:
    inp = PlanInput(
        agent=AgentConfig(),
        configured=(configured("local.read"),),
        discovered=tuple(discovered("crm", f"t{i}") for i in range(6)),
        caps=Caps(max_definitions=3),
        strategy=strategy,
    )
    return plan_roster(inp, TokenEstimator())


def _words(plan: RosterPlan) -> str:
    return "".join(p if isinstance(p, str) else p[0] for p in summary_parts(plan))


async def test_the_summary_follows_the_strategy_the_chat_runs_now():
    wrapper = _plan("wrapper")
    assert wrapper.deferred_tool_names, "the test needs deferred tools"
    app = RosterHost(wrapper, marks={"mcp.crm.t5": {"loaded"}})
    async with app.run_test(size=(110, 40)) as pilot:
        assert "indexed" in str(app.panel.summary.render())
        for strategy in ("active-tools", "anthropic", "wrapper"):
            app.panel.set_strategy(strategy, "switched")
            await pilot.pause()
            shown = str(app.panel.summary.render())
            # the words of a chat opened under that strategy, the pinned plan's counts
            assert shown == _words(wrapper.model_copy(update={"strategy": strategy})), strategy
            assert (strategy == "wrapper") == ("indexed" in shown)
            assert app.panel.plan is not None
            # the pinned plan's placement never moves
            assert app.panel.plan.deferred_tool_names == wrapper.deferred_tool_names
            assert app.panel.plan.defined_tool_names == wrapper.defined_tool_names
            assert app.panel.marks == {"mcp.crm.t5": {"loaded"}}
        app.panel.set_strategy("active-tools")
        assert "5 deferred, reached by tool.search" in str(app.panel.summary.render())
