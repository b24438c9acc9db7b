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
from textual.widgets import Static, TabbedContent, TabPane

from core.display import safe
from core.roster.models import RosterPlan
from core.roster.report import plan_table
from tui.screens.tool import _read_only


class PlanScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q", "dismiss", "Close", id="close_plan")]

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
            yield Static(Content("Tab switches panes \u00b7 Escape closes"), classes="panel-help")
