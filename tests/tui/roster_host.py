"""A bare app around the roster panel, for tests of the panel alone."""

from __future__ import annotations

from textual.app import App, ComposeResult

from core.roster.models import RosterPlan
from tui.widgets.roster import RosterPanel


class RosterHost(App[None]):
    """Mounts a :class:`RosterPanel` showing ``plan`` (pinned), with ``marks`` if given."""

    def __init__(self, plan: RosterPlan, marks: dict[str, set[str]] | None = None) -> None:
        super().__init__()
        self.plan = plan
        self.marks = marks
        self.panel = RosterPanel()

    def compose(self) -> ComposeResult:
        yield self.panel

    def on_mount(self) -> None:
        self.panel.set_plan(self.plan, pinned=True, marks=self.marks)
