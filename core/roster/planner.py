"""The roster planner (ADR-0123): which candidates get a definition, an index entry, or neither.

Pure and deterministic: the same :class:`PlanInput` always gives a byte-identical plan.

Ranking (decision 13): configured tools first, in first-occurrence order; then discovered
and device tools, reads (NONE, WORKSPACE_READ, NETWORK_READ) before tools that change the
world, ties broken by server or device, then by name. *Always-load pins* (the agent's
``always_load``, a server's ``"alwaysLoad": true``, a website profile's browser tools,
ADR-0130) come before every other candidate, in that same order among themselves.

Placement:

1. *Deferrals by policy.* ``overflow`` (ADR-0123): the agent's configured deferrals
   (decision 18). ``threshold`` (seed 004, pickDeferredMcpTools): every MCP tool of a server
   with more than ``per_server`` MCP tools, or every MCP tool once they exceed
   ``aggregate`` in all; built-in (configured) tools are never deferred. A pinned tool is
   never deferred by policy, under either (a configured deferral of it is a warning).
2. *Definitions*, in rank order, first fit: a tool is defined while a slot and enough of
   the token budget remain. When anything is deferred, the strategy's control tool
   (``tool.call`` on the wrapper) takes a definition slot first (decision 15). Pins come
   first, so they are defined unless the pins alone exceed the caps, which do not change
   (decision 19): the pins past the caps overflow like any tool, with the reason "pinned,
   over the cap", and the plan warns.
3. *Index*: every candidate without a definition becomes an index entry, pins over the cap
   first, then policy deferrals, then the rest of the overflow in rank order (decision 15),
   while the index has room (40
   entries, 2,000 tokens). Only the wrapper carries the index in the prompt, so only it is
   bound by the index caps; the native and active-tools strategies reach deferred tools
   by search.
4. What fits in neither is *skipped* and named in ``skipped_tool_names`` (decisions 14, 16,
   17). Nothing leaves the roster silently: every candidate has a placement and a reason.
5. Tools a server listed unusable (``PlanInput.rejected``: a bad name or schema) were never
   candidates; they are appended as skipped rows with their reasons, after everything else.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from core.context.regions import PREFIX_CEILING
from core.deferral.names import WRAPPER
from core.roster import index as idx
from core.roster.controls import CONTROL_NAMES, CONTROL_TOOLS, OPTIONAL_CONTROLS, STRATEGY_CONTROL
from core.roster.models import (
    BUILDER,
    COMPATIBLE_BUILDERS,
    REJECTED_REASON_PREFIX,
    Caps,
    Placement,
    PlanInput,
    RejectedTool,
    RosterPlan,
    ToolPlacement,
    always_load_matches,
)
from core.tokens import TokenEstimator
from core.tools import Origin, ToolSpec, canonical_json

INDEX_STRATEGIES = frozenset({WRAPPER})


@dataclass
class _Cand:
    spec: ToolSpec
    rank: int
    def_tokens: int
    entry: str
    entry_source: str | None
    entry_tokens: int
    placement: Placement | None = None
    reason: str = ""
    always_load: str | None = None  # what pins it, when something does


@dataclass
class _State:
    defined: list[_Cand] = field(default_factory=list)
    deferred: list[_Cand] = field(default_factory=list)
    skipped: list[_Cand] = field(default_factory=list)


def rank_key(spec: ToolSpec) -> tuple[int, str, str]:
    """Decision 13's order for discovered and device tools."""
    return (0 if spec.is_read else 1, spec.server or "", spec.name)


def ranked_candidates(
    configured: tuple[ToolSpec, ...], discovered: tuple[ToolSpec, ...]
) -> tuple[list[ToolSpec], list[tuple[ToolSpec, str]]]:
    """Configured tools in first-occurrence order, then discovered tools by :func:`rank_key`.

    Returns the ranked candidates and the rejects (duplicate or reserved names), each with
    its reason, so that even those are recorded rather than dropped.
    """
    seen: set[str] = set()
    ranked: list[ToolSpec] = []
    rejects: list[tuple[ToolSpec, str]] = []
    for specs, duplicate in (
        (configured, "skipped: duplicate of an earlier configured tool"),
        (sorted(discovered, key=rank_key), "skipped: duplicate name (a configured or earlier tool has it)"),
    ):
        for spec in specs:
            if spec.name in CONTROL_NAMES:
                rejects.append((spec, f"skipped: {spec.name} is a reserved control-tool name"))
            elif spec.name in seen:
                rejects.append((spec, duplicate))
            else:
                seen.add(spec.name)
                ranked.append(spec)
    return ranked, rejects


def always_load_pins(inp: PlanInput, ranked: list[ToolSpec]) -> tuple[dict[str, str], list[str]]:
    """The pinned candidates, each with what pins it (the first that does: the profile, the
    agent's ``always_load``, the server's ``alwaysLoad``), and warnings about pins that name
    no candidate."""
    pins: dict[str, str] = {}
    warnings: list[str] = []
    names = [s.name for s in ranked]
    agent = inp.agent
    if agent.profile is not None:
        for name in agent.profile.pinned_tools:
            if name in pins or name in names:
                pins.setdefault(name, f"the chat's {agent.profile.kind} profile (ADR-0130)")
            else:
                warnings.append(f"the {agent.profile.kind} profile pins {name}, which is not a candidate")
    for entry in agent.always_load:
        matched = [n for n in names if always_load_matches(entry, n)]
        if not matched:
            warnings.append(f"agent {agent.name} always loads {entry}, which names no candidate")
        for name in matched:
            pins.setdefault(name, f"always_load {entry} in agent {agent.name}")
    servers = set(inp.always_load_servers)
    for s in ranked:
        if s.server in servers and s.origin is Origin.DISCOVERED:
            pins.setdefault(s.name, f"alwaysLoad in server {s.server}'s mcpServers entry")
    offered = {s.server for s in ranked if s.origin is Origin.DISCOVERED}
    warnings += [f"server {server} is alwaysLoad, but it offers no candidate" for server in sorted(servers - offered)]
    return pins, warnings


def policy_deferrals(
    inp: PlanInput, ranked: list[ToolSpec], pins: dict[str, str] | None = None
) -> tuple[dict[str, str], list[str]]:
    """Names deferred by policy (with their reasons), and warnings about the configuration.
    A pinned name is never deferred by policy."""
    warnings: list[str] = []
    reasons: dict[str, str] = {}
    pins = pins or {}
    names = {s.name for s in ranked}
    if not inp.agent.can_defer:
        if inp.agent.deferred:
            warnings.append(
                f"agent {inp.agent.name} has no tool.call, so its configured deferrals compete "
                "for definitions like any other tool (decision 16: it defers nothing)"
            )
        return reasons, warnings
    if inp.policy.name == "overflow":
        for name in inp.agent.deferred:
            if name in pins:
                warnings.append(f"agent {inp.agent.name} defers {name}, which is pinned ({pins[name]}): the pin wins")
            elif name in names:
                reasons.setdefault(name, "deferred: the agent's configuration defers it (ADR-0123 decision 18)")
            else:
                warnings.append(f"agent {inp.agent.name} defers {name}, which is not a candidate")
        return reasons, warnings

    # threshold: pickDeferredMcpTools
    if inp.agent.deferred:
        warnings.append("policy threshold ignores the agent's configured deferrals: built-in tools are never deferred")
    mcp = [s for s in ranked if s.origin in (Origin.DISCOVERED, Origin.DEVICE)]
    per_server = Counter(s.server for s in mcp)
    deferrable = [s for s in mcp if s.name not in pins]  # pins count towards the thresholds
    if len(mcp) > inp.policy.aggregate:
        for s in deferrable:
            reasons[s.name] = (
                f"deferred: {len(mcp)} MCP tools in all exceed the aggregate threshold of {inp.policy.aggregate}"
            )
    else:
        for s in deferrable:
            if per_server[s.server] > inp.policy.per_server:
                reasons[s.name] = (
                    f"deferred: server {s.server} offers {per_server[s.server]} MCP tools, "
                    f"over the per-server threshold of {inp.policy.per_server}"
                )
    return reasons, warnings


def _deferrable(inp: PlanInput, spec: ToolSpec) -> bool:
    if not inp.agent.can_defer:
        return False
    if inp.policy.name == "threshold":
        return spec.origin in (Origin.DISCOVERED, Origin.DEVICE)
    return True


def plan_roster(inp: PlanInput, estimator: TokenEstimator | None = None) -> RosterPlan:
    est = estimator or TokenEstimator()
    caps = inp.caps
    ranked, rejects = ranked_candidates(inp.configured, inp.discovered)
    pins, warnings = always_load_pins(inp, ranked)
    if pins:  # pinned tools rank first, in their own order
        ranked = [s for s in ranked if s.name in pins] + [s for s in ranked if s.name not in pins]
    deferral_reasons, policy_warnings = policy_deferrals(inp, ranked, pins)
    warnings += policy_warnings

    def cand(spec: ToolSpec, rank: int) -> _Cand:
        entry = idx.entry_text(spec)
        tokens = est.definition(spec)
        return _Cand(spec, rank, tokens, entry, spec.envelope_source, est.entry(entry), always_load=pins.get(spec.name))

    # Optional controls the agent carries always take the first slots.
    optional = [CONTROL_TOOLS[n] for n in sorted(set(inp.agent.controls) & OPTIONAL_CONTROLS)]
    for name in sorted(set(inp.agent.controls) - OPTIONAL_CONTROLS):
        warnings.append(f"agent asks for control tool {name}, which is not an optional control")
    control_name = STRATEGY_CONTROL[inp.strategy] if inp.agent.can_defer else None
    control = CONTROL_TOOLS[control_name] if control_name else None

    n_fixed = len(optional) + (1 if control else 0)
    cands = [cand(s, n_fixed + i) for i, s in enumerate(ranked)]
    fixed_optional = [cand(s, i) for i, s in enumerate(optional)]
    control_cand = cand(control, len(optional)) if control else None

    uses_index = inp.strategy in INDEX_STRATEGIES
    header_tokens = sum(est.line(line) for line in idx.HEADER_LINES)

    def attempt(with_control: bool) -> _State:
        st = _State()
        slots = caps.max_definitions
        budget = caps.max_definition_tokens
        for c in fixed_optional + ([control_cand] if with_control and control_cand else []):
            if slots > 0 and c.def_tokens <= budget:
                slots -= 1
                budget -= c.def_tokens
                c.placement, c.reason = Placement.DEFINED, "defined: control tool"
                st.defined.append(c)
            else:
                c.placement, c.reason = Placement.SKIPPED, "skipped: the definition caps leave no room for it"
                st.skipped.append(c)
        if with_control and control_cand is not None and control_cand.placement is Placement.DEFINED:
            control_cand.reason = (
                f"defined: control tool; the plan defers tools, so {control_cand.spec.name} "
                "takes a definition slot (ADR-0123 decisions 11, 15)"
            )
        policy_deferred: list[_Cand] = []
        overflow: list[_Cand] = []
        for c in cands:
            pinned = f"pinned, over the cap ({c.always_load}): " if c.always_load else ""
            if c.spec.name in deferral_reasons:
                c.reason = deferral_reasons[c.spec.name]
                policy_deferred.append(c)
            elif slots <= 0:
                c.reason = f"overflow: {pinned}all {caps.max_definitions} definition slots are taken"
                overflow.append(c)
            elif c.def_tokens > budget:
                c.reason = (
                    f"overflow: {pinned}its {c.def_tokens}-token definition exceeds the "
                    f"{budget} tokens left of {caps.max_definition_tokens}"
                )
                overflow.append(c)
            else:
                slots -= 1
                budget -= c.def_tokens
                c.placement = Placement.DEFINED
                slot = f"slot {caps.max_definitions - slots} of {caps.max_definitions}"
                c.reason = (
                    f"defined: pinned by {c.always_load}; ranked first, never deferred; {slot}"
                    if c.always_load
                    else f"defined: {slot}"
                    + (
                        ", a read ranked ahead of writes"
                        if c.spec.origin is not Origin.CONFIGURED and c.spec.is_read
                        else ""
                    )
                )
                st.defined.append(c)

        # Index: policy deferrals first, then the overflow in rank order (decision 15).
        entries = 0
        tokens = header_tokens
        last_source: str | None = "\0none"
        # Deferring needs a way to reach the tool: the control tool, defined, or a native search.
        reachable = (control_cand is None and inp.agent.can_defer) or (
            with_control and control_cand is not None and control_cand.placement is Placement.DEFINED
        )
        # Pins over the cap take the index's room first (they rank first).
        pinned_over = [c for c in overflow if c.always_load]
        for c in pinned_over + policy_deferred + [c for c in overflow if not c.always_load]:
            if not reachable or not _deferrable(inp, c.spec):
                c.placement = Placement.SKIPPED
                c.reason = _no_deferral_reason(inp, c)
                st.skipped.append(c)
                continue
            if not uses_index:
                c.placement = Placement.DEFERRED
                st.deferred.append(c)
                continue
            extra = c.entry_tokens
            if c.entry_source is not None and c.entry_source != last_source:
                extra += _envelope_tokens(est, c.entry_source)
            if entries >= caps.max_index_entries:
                c.placement = Placement.SKIPPED
                c.reason = (
                    f"skipped: {c.reason.split(': ', 1)[-1]}, and the index is full ({caps.max_index_entries} entries)"
                )
                st.skipped.append(c)
            elif tokens + extra > caps.max_index_tokens:
                c.placement = Placement.SKIPPED
                c.reason = (
                    f"skipped: {c.reason.split(': ', 1)[-1]}, and its index entry does not fit the "
                    f"{caps.max_index_tokens}-token index"
                )
                st.skipped.append(c)
            else:
                entries += 1
                tokens += extra
                last_source = c.entry_source
                c.placement = Placement.DEFERRED
                st.deferred.append(c)
        return st

    # The control tool is needed when, without it, some deferrable candidate has no definition.
    without = attempt(False)
    needs_control = control_cand is not None and any(
        c.placement is not Placement.DEFINED and _deferrable(inp, c.spec) for c in cands
    )
    st = attempt(True) if needs_control else without
    if needs_control and not st.deferred:
        # The control tool only earns its slot while something is deferred (decision 11).
        st = attempt(False)
    control_defined = any(c is control_cand for c in st.defined)

    tool_rows: list[tuple[_Cand, Placement, str]] = [
        (c, c.placement or Placement.SKIPPED, c.reason) for c in fixed_optional
    ]
    if control_cand is not None and control_defined:
        tool_rows.append((control_cand, Placement.DEFINED, control_cand.reason))
    for c in cands:
        assert c.placement is not None
        tool_rows.append((c, c.placement, c.reason))

    deferred_sorted = st.deferred  # already in index order
    entries = [(c.entry, c.entry_source) for c in deferred_sorted]
    index_lines = idx.render(entries) if uses_index else []
    index_text = "".join(line + "\n" for line in index_lines)
    index_tokens = sum(est.line(line) for line in index_lines)

    tools = [_placement_row(c, p, r) for c, p, r in tool_rows]
    for spec, reason in rejects:
        c = cand(spec, len(tools))
        tools.append(_placement_row(c, Placement.SKIPPED, reason))
    rejected = sorted(inp.rejected, key=lambda r: (r.server or "", r.name))
    tools += [_rejected_row(r, len(tools) + i) for i, r in enumerate(rejected)]

    defined = [c for c, p, _ in tool_rows if p is Placement.DEFINED]
    warnings += _over_the_cap_warnings(caps, [c for c in cands if c.always_load])
    skipped_names = [t.name for t in tools if t.placement is Placement.SKIPPED]
    plan = RosterPlan(
        builder=BUILDER,
        policy=inp.policy.name,
        strategy=inp.strategy,
        strategy_reason=inp.strategy_reason,
        caps=inp.caps.model_dump(),
        candidates=len(inp.configured) + len(inp.discovered),
        defined_tool_names=[c.spec.name for c in defined],
        deferred_tool_names=[c.spec.name for c in deferred_sorted],
        skipped_tool_names=skipped_names,
        definition_tokens=sum(c.def_tokens for c in defined),
        index_tokens=index_tokens,
        index_entries=[c.entry for c in deferred_sorted],
        index_text=index_text,
        tools=tools,
        agent=_agent_record(inp),
        control_tool_names=[c.spec.name for c in defined if c.spec.origin is Origin.CONTROL],
        policy_settings=inp.policy.model_dump(),
        warnings=warnings,
        prefix_ceiling=PREFIX_CEILING,
        always_load_tool_names=[c.spec.name for c in cands if c.always_load],
        always_load_servers=sorted(set(inp.always_load_servers)),
    )
    plan.render_sha256 = render_sha256(plan)
    return plan


def _agent_record(inp: PlanInput) -> dict[str, Any]:
    """The agent as the plan records it; its pins and profile only when it has them, so a plan
    without pins reads as before."""
    a = inp.agent
    record: dict[str, Any] = {
        "name": a.name,
        "version": a.version,
        "deferred": list(a.deferred),
        "controls": list(a.controls),
        "can_defer": a.can_defer,
    }
    if a.always_load:
        record["always_load"] = list(a.always_load)
    if a.profile is not None:
        record["profile"] = a.profile.model_dump()
    return record


def _over_the_cap_warnings(caps: Caps, pinned: list[_Cand]) -> list[str]:
    """When the pins alone exceed the definition caps: what became of the pins that did not fit."""
    over = [c for c in pinned if c.placement is not Placement.DEFINED]
    if not over:
        return []
    deferred = [c.spec.name for c in over if c.placement is Placement.DEFERRED]
    skipped = [c.spec.name for c in over if c.placement is Placement.SKIPPED]
    fate = "; ".join(
        part
        for part in (
            f"deferred: {', '.join(deferred)}" if deferred else "",
            f"skipped: {', '.join(skipped)}" if skipped else "",
        )
        if part
    )
    return [
        f"{len(pinned)} pinned tools exceed the definition caps ({caps.max_definitions} definitions, "
        f"{caps.max_definition_tokens:,} tokens): {len(pinned) - len(over)} are defined and "
        f"{len(over)} are pinned, over the cap ({fate}); each says so in its reason"
    ]


def _no_deferral_reason(inp: PlanInput, c: _Cand) -> str:
    why = c.reason.split(": ", 1)[-1]
    if not inp.agent.can_defer:
        return f"skipped: {why}, and agent {inp.agent.name} has no tool.call, so it defers nothing (decision 16)"
    if inp.policy.name == "threshold" and not _deferrable(inp, c.spec):
        return f"skipped: {why}, and policy threshold never defers built-in tools"
    return f"skipped: {why}, and no definition slot is left for the deferral control tool"


def _envelope_tokens(est: TokenEstimator, source: str) -> int:
    from core.context import envelope

    opened, closed = envelope.markers(source)  # ids are 12 digits: every id costs the same
    return est.line(opened) + est.line(closed)


def _placement_row(c: _Cand, placement: Placement, reason: str) -> ToolPlacement:
    s = c.spec
    # Built from validated specs, so validating again would only cost time (2,000-tool rosters).
    return ToolPlacement.model_construct(
        name=s.name,
        origin=s.origin.value,
        server=s.server,
        side_effect=s.side_effect.value,
        placement=placement,
        reason=reason,
        tokens=c.entry_tokens if placement is Placement.DEFERRED else c.def_tokens,
        definition_tokens=c.def_tokens,
        rank=c.rank,
        untrusted=s.untrusted,
        description=s.description,
        input_schema=s.input_schema,
        index_entry=c.entry,
        scopes=list(s.scopes),
        requires_approval=s.requires_approval,
        hints=dict(s.hints),
        remote_name=s.remote_name,
        title=s.title,
        pin=s.content_hash(),
        always_load=c.always_load,
    )


def _rejected_row(r: RejectedTool, rank: int) -> ToolPlacement:
    """A tool a server listed unusable: skipped, with its reason, and no spec behind it."""
    return ToolPlacement.model_construct(
        name=r.name,
        origin=r.origin.value,
        server=r.server,
        side_effect=r.side_effect.value,
        placement=Placement.SKIPPED,
        reason=REJECTED_REASON_PREFIX + r.reason,
        tokens=0,
        definition_tokens=0,
        rank=rank,
        untrusted=True,
        description="",
        input_schema={},
        index_entry=None,
        scopes=[],
        requires_approval=None,
        hints={},
        remote_name=None,
        pin="",
    )


def render_prefix(plan: RosterPlan) -> str:
    """The bytes this plan puts in every request's tool region: definitions, then the index."""
    defined = [plan.spec_of(n) for n in plan.defined_tool_names]
    return canonical_json([s.definition() for s in defined if s is not None]) + "\n" + plan.index_text


def render_sha256(plan: RosterPlan) -> str:
    return hashlib.sha256(render_prefix(plan).encode()).hexdigest()


def plan_is_current(stored: RosterPlan) -> bool:
    """Decision 19: a plan from this builder is current; one from a compatible older builder
    is current when this builder renders it to the same bytes it recorded."""
    if stored.builder == BUILDER:
        return True
    if stored.builder in COMPATIBLE_BUILDERS:
        return bool(stored.render_sha256) and render_sha256(stored) == stored.render_sha256
    return False
