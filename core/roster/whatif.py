"""What-if: the same candidates under another strategy, policy or caps, without touching the
chat's pinned plan. The candidates and the agent's configuration come back out of the plan
itself, so a what-if needs no server and no roster file."""

from __future__ import annotations

from core.roster.models import AgentConfig, Caps, PlanInput, PolicyConfig, RosterPlan
from core.roster.planner import plan_roster
from core.tokens import TokenEstimator
from core.tools import Origin


def candidates_of(plan: RosterPlan) -> PlanInput:
    """The planner input a plan was built from (control tools and rejected duplicates aside)."""
    tools = [t for t in sorted(plan.tools, key=lambda t: t.rank) if t.origin != Origin.CONTROL.value
             and not t.rejected and "duplicate" not in t.reason and "reserved control-tool name" not in t.reason]
    specs = [plan.spec_of(t.name) for t in tools]
    agent = plan.agent
    return PlanInput(
        agent=AgentConfig(name=str(agent.get("name", "chat")), version=str(agent.get("version", "1")),
                          deferred=tuple(agent.get("deferred") or ()), controls=tuple(agent.get("controls") or ()),
                          can_defer=bool(agent.get("can_defer", True))),
        configured=tuple(s for s in specs if s is not None and s.origin is Origin.CONFIGURED),
        discovered=tuple(s for s in specs if s is not None and s.origin is not Origin.CONFIGURED),
        rejected=tuple(plan.rejected_tools()),
        caps=Caps(**plan.caps),
        policy=PolicyConfig(**plan.policy_settings) if plan.policy_settings else PolicyConfig(name=plan.policy),
        strategy=plan.strategy,
        strategy_reason=plan.strategy_reason,
    )


def what_if(plan: RosterPlan, *, strategy: str | None = None, policy: PolicyConfig | None = None,
            caps: Caps | None = None, estimator: TokenEstimator | None = None) -> RosterPlan:
    inp = candidates_of(plan)
    update: dict = {}
    if strategy is not None and strategy != inp.strategy:
        update["strategy"] = strategy
        update["strategy_reason"] = f"what-if: {strategy} instead of {plan.strategy}"
    if policy is not None:
        update["policy"] = policy
    if caps is not None:
        update["caps"] = caps
    return plan_roster(inp.model_copy(update=update), estimator)
