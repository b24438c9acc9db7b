"""What-if: the same candidates under another strategy, policy or caps, without touching the
chat's pinned plan. The candidates and the agent's configuration come back out of the plan
itself, so a what-if needs no server and no roster file."""

from __future__ import annotations

from dataclasses import dataclass

from core.deferral.names import WRAPPER
from core.roster.models import AgentConfig, Caps, Placement, PlanInput, PolicyConfig, Profile, RosterPlan
from core.roster.planner import plan_roster
from core.tokens import TokenEstimator
from core.tools import Origin


def candidates_of(plan: RosterPlan) -> PlanInput:
    """The planner input a plan was built from (control tools and rejected duplicates aside),
    its always-load pins included."""
    tools = [
        t
        for t in sorted(plan.tools, key=lambda t: t.rank)
        if t.origin != Origin.CONTROL.value
        and not t.rejected
        and "duplicate" not in t.reason
        and "reserved control-tool name" not in t.reason
    ]
    specs = [plan.spec_of(t.name) for t in tools]
    agent = plan.agent
    return PlanInput(
        agent=AgentConfig(
            name=str(agent.get("name", "chat")),
            version=str(agent.get("version", "1")),
            deferred=tuple(agent.get("deferred") or ()),
            controls=tuple(agent.get("controls") or ()),
            can_defer=bool(agent.get("can_defer", True)),
            always_load=tuple(agent.get("always_load") or ()),
            profile=Profile.model_validate(agent["profile"]) if agent.get("profile") else None,
        ),
        configured=tuple(s for s in specs if s is not None and s.origin is Origin.CONFIGURED),
        discovered=tuple(s for s in specs if s is not None and s.origin is not Origin.CONFIGURED),
        rejected=tuple(plan.rejected_tools()),
        always_load_servers=tuple(plan.always_load_servers),
        caps=Caps(**plan.caps),
        policy=PolicyConfig(**plan.policy_settings) if plan.policy_settings else PolicyConfig(name=plan.policy),
        strategy=plan.strategy,
        strategy_reason=plan.strategy_reason,
    )


def what_if(
    plan: RosterPlan,
    *,
    strategy: str | None = None,
    policy: PolicyConfig | None = None,
    caps: Caps | None = None,
    estimator: TokenEstimator | None = None,
) -> RosterPlan:
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


ABSENT = "\u2013"  # a tool one of the two plans does not have


def placement_word(plan: RosterPlan, placement: Placement) -> str:
    """The word a plan's sections use for a placement: a deferred tool is "indexed" where the
    index carries it (wrapper), "deferred" where a search reaches it."""
    if placement is Placement.DEFERRED:
        return "indexed" if plan.strategy == WRAPPER else "deferred"
    return placement.value


@dataclass(frozen=True)
class Change:
    """One tool, as the pinned plan and the what-if place it (None: that plan does not have it),
    with each placement in its own plan's words."""

    tool: str
    pinned: Placement | None
    what_if: Placement | None
    pinned_word: str
    what_if_word: str
    reason: str  # the what-if's reason (the pinned plan's, for a tool that leaves)

    @property
    def changed(self) -> bool:
        """It joins, leaves or moves (indexed under one strategy and deferred under another is no move)."""
        return self.pinned is not self.what_if


def compare(pinned: RosterPlan, other: RosterPlan) -> list[Change]:
    """Every tool of either plan: the what-if's in its order, then the pinned plan's tools the
    what-if does not have (a control tool another strategy does not place, for one)."""
    before = {t.name: t for t in pinned.tools}
    after = {t.name for t in other.tools}
    rows = []
    for t in sorted(other.tools, key=lambda t: t.rank):
        was = before.get(t.name)
        rows.append(
            Change(
                t.name,
                was.placement if was else None,
                t.placement,
                placement_word(pinned, was.placement) if was else ABSENT,
                placement_word(other, t.placement),
                t.reason,
            )
        )
    rows += [
        Change(
            t.name,
            t.placement,
            None,
            placement_word(pinned, t.placement),
            ABSENT,
            f"not in the what-if plan (pinned: {t.reason})",
        )
        for t in sorted(pinned.tools, key=lambda t: t.rank)
        if t.name not in after
    ]
    return rows
