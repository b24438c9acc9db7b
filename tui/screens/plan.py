"""The plan inspector: the chat's whole pinned plan, the index region exactly as the prompt
carries it, and the plan's JSON, each through :func:`core.display.safe` (names, descriptions and
reasons can come from a server)."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static, TabbedContent, TabPane, TextArea

from core.display import safe
from core.roster.models import RosterPlan
from core.roster.report import plan_table
from tui.screens.tool import _read_only

PANES = ("tab-plan", "tab-index", "tab-json")
HELP = "1 plan \u00b7 2 index as sent \u00b7 3 JSON (or \u2190/\u2192 on the tabs) \u00b7 Escape closes"


class PlanScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "dismiss", "Close", id="close_plan"),
        *(Binding(str(n), f"pane('{pane}')", show=False, id=f"plan_{pane}") for n, pane in enumerate(PANES, 1)),
    ]

    def __init__(self, plan: RosterPlan, pinned: bool) -> None:
        super().__init__(classes="panel-screen")
        self.plan = plan
        self.pinned = pinned

    def compose(self) -> ComposeResult:
        p = self.plan
        state = "pinned" if self.pinned else "new"
        with Vertical(classes="panel"):
            yield Static(
                Content(
                    f"Plan ({state}) \u00b7 {p.builder} \u00b7 {p.candidates} candidates \u00b7 "
                    f"render {p.render_sha256[:12] or '?'}"
                ),
                classes="panel-title",
            )
            with TabbedContent(id="plan-tabs"):
                with TabPane("Plan", id="tab-plan"):
                    yield _read_only(plan_table(p), id="plan-table")
                with TabPane("Index as sent", id="tab-index"):
                    text = p.index_text or (
                        f"(strategy {p.strategy} sends no index region: deferred tools are reached by tool search)\n"
                    )
                    yield _read_only(safe(text, multiline=True), id="plan-index")
                with TabPane("JSON", id="tab-json"):
                    yield _read_only(safe(p.to_json(), multiline=True), "json", id="plan-json")
            yield Static(Content(HELP), classes="panel-help")

    def on_mount(self) -> None:
        self.call_after_refresh(self.fit)

    def on_resize(self) -> None:
        self.call_after_refresh(self.fit)

    def fit(self) -> None:
        """The plan table fitted to the pane: every reason whole, wrapped (core.roster.report)."""
        area = self.query_one("#plan-table", TextArea)
        width = area.scrollable_content_region.width - 1
        if width > 20:
            text = plan_table(self.plan, width=width)
            if text != area.text:
                area.load_text(text)

    def action_pane(self, pane: str) -> None:
        self.query_one("#plan-tabs", TabbedContent).active = pane
