"""What-if: the same candidates under another strategy, policy or caps, side by side with the
chat's pinned plan. The chat is not re-planned; ``core.roster.whatif.what_if`` computes it."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import ValidationError
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid, Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import DataTable, Input, Label, Select, Static

from core.deferral.names import STRATEGY_NAMES
from core.display import safe
from core.roster.models import POLICIES, Caps, PolicyConfig, RosterPlan
from core.roster.report import budget_lines
from core.roster.whatif import ABSENT, compare, what_if

PINNED = "Pinned plan"  # this chat's plan: the roster panel's title calls it the same
_CAP_FIELDS = ("max_definitions", "max_definition_tokens", "max_index_entries", "max_index_tokens")
_POLICY_FIELDS = ("per_server", "aggregate")
_LABELS = {
    "max_definitions": "definitions",
    "max_definition_tokens": "definition tok",
    "max_index_entries": "index entries",
    "max_index_tokens": "index tok",
    "per_server": "per server >",
    "aggregate": "aggregate >",
}


def summary(plan: RosterPlan, heading: str) -> str:
    b = budget_lines(plan)
    lines = [
        heading,
        f"strategy {plan.strategy} \u00b7 policy {plan.policy}",
        b["defined"],
        b["deferred"],
        b["skipped"],
    ]
    lines += [f"\u26a0 {safe(w)}" for w in plan.warnings]
    return "\n".join(lines)


def placement_rows(pinned: RosterPlan, other: RosterPlan) -> list[tuple[str, str, str, str, bool]]:
    """(tool, pinned placement, what-if placement, reason, changed): the what-if's tools in its
    order, then the tools that leave the plan (``core.roster.whatif.compare``)."""
    return [(c.tool, c.pinned_word, c.what_if_word, c.reason, c.changed) for c in compare(pinned, other)]


class WhatIfScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "Close", id="close_whatif"),
        Binding("ctrl+t", "toggle_changes", "Only changes", id="whatif_only_changes"),
    ]

    def __init__(self, plan: RosterPlan, estimator: Any = None) -> None:
        super().__init__(classes="panel-screen")
        self.plan = plan
        self.estimator = estimator
        self.result: RosterPlan | None = None
        self.only_changes = False
        caps = plan.caps
        policy = plan.policy_settings or {"name": plan.policy}
        self.values: dict[str, int] = {f: int(caps.get(f, Caps.model_fields[f].default)) for f in _CAP_FIELDS}
        self.values.update({f: int(policy.get(f, PolicyConfig.model_fields[f].default)) for f in _POLICY_FIELDS})

    def compose(self) -> ComposeResult:
        with Vertical(classes="panel"):
            yield Static(
                Content("What-if \u00b7 the same candidates, planned again without touching this chat"),
                classes="panel-title",
            )
            with Horizontal(id="whatif-choices"):
                yield Select(
                    [(s, s) for s in STRATEGY_NAMES],
                    value=self.plan.strategy,
                    allow_blank=False,
                    id="whatif-strategy",
                    prompt="strategy",
                )
                yield Select(
                    [(p, p) for p in POLICIES],
                    value=self.plan.policy,
                    allow_blank=False,
                    id="whatif-policy",
                    prompt="policy",
                )
            with Grid(id="whatif-numbers"):
                for f in (*_CAP_FIELDS, *_POLICY_FIELDS):
                    yield Label(_LABELS[f])
                    yield Input(str(self.values[f]), type="integer", id=f"whatif-{f}", compact=True)
            with Horizontal(id="whatif-summaries"):
                yield Static(Content(summary(self.plan, PINNED)), id="whatif-pinned")
                yield Static("", id="whatif-other")
            yield DataTable(id="whatif-table", zebra_stripes=True, cursor_type="row")
            yield Static(
                Content("ctrl+t: only the tools that join, leave or move \u00b7 Escape closes"), classes="panel-help"
            )

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("", "tool", PINNED.lower(), "what-if", "why (what-if)")
        self.recompute()

    def on_select_changed(self, event: Select.Changed) -> None:
        event.stop()
        self.recompute()

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        field = (event.input.id or "").removeprefix("whatif-")
        try:
            self.values[field] = int(event.value)
        except ValueError:
            return
        self.recompute()

    def choices(self) -> tuple[str, PolicyConfig, Caps]:
        strategy = str(self.query_one("#whatif-strategy", Select).value)
        policy = PolicyConfig.model_validate(
            {"name": str(self.query_one("#whatif-policy", Select).value), **{f: self.values[f] for f in _POLICY_FIELDS}}
        )
        caps = Caps.model_validate({f: self.values[f] for f in _CAP_FIELDS})
        return strategy, policy, caps

    def recompute(self) -> None:
        other = self.query_one("#whatif-other", Static)
        try:
            strategy, policy, caps = self.choices()
            self.result = what_if(self.plan, strategy=strategy, policy=policy, caps=caps, estimator=self.estimator)
        except (ValidationError, ValueError) as exc:
            other.update(Content(f"What-if\n{exc}"))
            return
        other.update(Content(summary(self.result, "What-if")))
        self.fill_table()

    def fill_table(self) -> None:
        if self.result is None:
            return
        table = self.query_one(DataTable)
        table.clear()
        for name, old, new, reason, changed in placement_rows(self.plan, self.result):
            if self.only_changes and not changed:
                continue
            sign = "+" if old == ABSENT else "\u2212" if new == ABSENT else "\u2260"  # joins, leaves, moves
            mark = Content.styled(sign, "bold yellow") if changed else ""
            new_cell = Content.styled(new, "bold yellow") if changed else new
            # Text, not str: a DataTable reads a str cell as markup, and a name or reason from a server is neither
            table.add_row(mark, Text(safe(name)), old, new_cell, Text(safe(reason)), key=name)

    def action_toggle_changes(self) -> None:
        self.only_changes = not self.only_changes
        self.fill_table()
