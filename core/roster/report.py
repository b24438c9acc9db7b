"""Plain-text views of a plan: the table ``deferchat plan`` prints and the budget lines the
TUI's roster panel shows. No colour codes, so it pipes cleanly.

Names, reasons and warnings can come from an MCP server or a roster file: every one passes
:func:`core.display.safe`, so a tool name cannot redraw the table or hide a row."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING

from core.deferral.names import ACTIVE_TOOLS, WRAPPER
from core.display import safe
from core.roster.bounds import Placement

if TYPE_CHECKING:
    from core.roster.models import RosterPlan

_PLACEMENT_LABEL = {Placement.DEFINED: "defined", Placement.DEFERRED: "indexed", Placement.SKIPPED: "skipped"}


def deferred_reach(plan: RosterPlan) -> str:
    """How the model reaches the plan's deferred tools, in the words the budget lines use."""
    if plan.strategy == WRAPPER:
        return "the index and tool.call"
    return "tool.search" if plan.strategy == ACTIVE_TOOLS else "native tool search"


def budget_lines(plan: RosterPlan) -> dict[str, str]:
    caps = plan.caps
    if plan.strategy == WRAPPER:
        indexed = (
            f"Indexed {len(plan.deferred_tool_names)}/{caps['max_index_entries']} \u00b7 "
            f"{plan.index_tokens:,}/{caps['max_index_tokens']:,} tok"
        )
    else:  # no index in the prompt: deferred tools are found by search
        indexed = f"Deferred {len(plan.deferred_tool_names)} \u00b7 reached by {deferred_reach(plan)}"
    return {
        "defined": (
            f"Defined {len(plan.defined_tool_names)}/{caps['max_definitions']} \u00b7 "
            f"{plan.definition_tokens:,}/{caps['max_definition_tokens']:,} tok"
        ),
        "deferred": indexed,
        "skipped": f"Skipped {len(plan.skipped_tool_names)}",
    }


PIN_MARK = "\u2691"  # the mark of an always-load pin, in the table and the TUI's roster


def pinned_line(plan: RosterPlan) -> str | None:
    """The plan's always-load pins in one line, or None when it has none."""
    names = plan.always_load_tool_names
    if not names:
        return None
    defined = set(plan.defined_tool_names)
    over = [n for n in names if n not in defined]
    return f"Pinned {len(names)} \u00b7 ranked first, never deferred" + (
        f" \u00b7 {len(over)} over the cap" if over else ""
    )


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "\u2026"


REASON_AT_LEAST = 40  # a narrower REASON column would wrap every reason over many lines


def plan_table(plan: RosterPlan, *, reason_width: int = 90, width: int | None = None) -> str:
    """The plan as a table. ``width``: fit the table to that many columns (the TUI's plan
    inspector): every reason is shown whole, wrapped in its column, or, when the columns before
    it leave it less than :data:`REASON_AT_LEAST`, on lines of its own under the tool's name.
    Without ``width`` each reason is clipped to ``reason_width`` on the tool's one line (a
    terminal, a pipe)."""
    lines = [
        safe(
            f"builder {plan.builder} \u00b7 agent {plan.agent.get('name')}@{plan.agent.get('version')} \u00b7 "
            f"policy {plan.policy} \u00b7 strategy {plan.strategy}"
            + (f" ({plan.strategy_reason})" if plan.strategy_reason else "")
        ),
        f"{plan.candidates} candidates \u00b7 prefix ceiling {plan.prefix_ceiling:,} tok",
    ]
    b = budget_lines(plan)
    pinned = pinned_line(plan)
    lines += [b["defined"], b["deferred"], b["skipped"], *([pinned] if pinned else []), ""]
    rows = [("PLACEMENT", "NAME", "ORIGIN", "SIDE EFFECT", "TOKENS", "REASON")]
    order = {Placement.DEFINED: 0, Placement.DEFERRED: 1, Placement.SKIPPED: 2}
    deferred_pos = {n: i for i, n in enumerate(plan.deferred_tool_names)}
    tools = sorted(plan.tools, key=lambda t: (order[t.placement], deferred_pos.get(t.name, 0), t.rank))
    for t in tools:
        origin = safe(t.origin + (f":{t.server}" if t.server else ""))
        rows.append(
            (
                _PLACEMENT_LABEL[t.placement] + (f" {PIN_MARK}" if pinned and t.always_load else ""),
                safe(t.name),
                origin,
                safe(f"{t.side_effect}"),
                f"{t.tokens:,}",
                safe(t.reason) if width else _clip(safe(t.reason), reason_width),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    starts = "  ".join(" " * w for w in widths) + "  "  # where REASON starts
    in_column = width is None or width - len(starts) >= REASON_AT_LEAST
    for r in rows:
        head = "  ".join(c.ljust(widths[i]) for i, c in enumerate(r[:4])) + "  " + r[4].rjust(widths[4]) + "  "
        if width is None:
            lines.append(head + r[5])
        elif in_column:
            wrapped = textwrap.wrap(r[5], width - len(head)) or [""]
            lines += [head + wrapped[0], *(" " * len(head) + more for more in wrapped[1:])]
        else:  # the reason under the name, on lines of its own (the header's REASON too)
            indent = " " * (widths[0] + 2)
            lines.append(head.rstrip())
            lines += textwrap.wrap(r[5], width, initial_indent=indent, subsequent_indent=indent)
    if pinned:
        lines += ["", f"{PIN_MARK} always-load pin: the reason says what pins it"]
    if plan.warnings:
        lines.append("")
        lines += [f"warning: {safe(w)}" for w in plan.warnings]
    if width:  # the lines above and below the table fit too
        lines = [
            part
            for line in lines
            for part in (textwrap.wrap(line, width, subsequent_indent="  ") if len(line) > width else [line])
        ]
    return "\n".join(line.rstrip() for line in lines) + "\n"
