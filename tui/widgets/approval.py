"""The inline approval: it takes the input's place until the owner answers.

Keys (and clicks) are ignored for :attr:`ApprovalBar.GRACE` seconds after it appears, so a
sentence being typed when the request arrives cannot approve it. The terminal bell rings.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import Button, Static

from core.display import safe
from core.pipeline.approvals import Decision
from tui.state import SIDE_EFFECT_MEANING, args_preview


def now() -> float:
    """The grace period's clock (a test replaces it)."""
    return time.monotonic()


@dataclass
class ApprovalView:
    """What the bar shows: a live request, or an approval a reopened chat left pending."""

    approval_id: str
    tool: str
    side_effect: str
    arguments: Any = None
    via: str | None = None
    reason: str = ""
    untrusted: bool = False
    display: str = ""
    parked: bool = False  # True: answering resumes the chat's parked turn


class ApprovalBar(Vertical):
    can_focus = True
    GRACE: ClassVar[float] = 0.5

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "decide('allow_once')", "Allow once", id="approve_once"),
        Binding("a", "decide('allow_chat')", "Allow for this chat", id="approve_chat"),
        Binding("n", "decide('deny')", "Deny", id="deny"),
    ]

    class Decided(Message):
        def __init__(self, view: ApprovalView, decision: Decision) -> None:
            super().__init__()
            self.view = view
            self.decision = decision

    def __init__(self, view: ApprovalView, **kw) -> None:
        super().__init__(**kw)
        self.view = view
        self.shown_at = now()
        self.decided: Decision | None = None
        self.ignored = 0  # answers that came inside the grace period

    def compose(self) -> ComposeResult:
        v = self.view
        name = safe(v.display or v.tool)  # a server's name: shown as it is, never obeyed (core.display)
        title = f"\u26a0 Approve {name}" + (f" \u00b7 via {safe(v.via)}" if v.via else "")
        if v.parked:
            title += " \u00b7 parked in this chat"
        yield Static(Content(title), classes="title")
        facts = [f"[{safe(v.side_effect)}] {SIDE_EFFECT_MEANING.get(v.side_effect, '')}".rstrip()]
        if v.untrusted:
            facts.append("\u26a0 untrusted server tool")
        if v.reason:
            facts.append(safe(v.reason))
        yield Static(Content(" \u00b7 ".join(facts)), classes="facts")
        yield Static(Content(safe(args_preview(v.arguments, 600))), classes="args")
        with Horizontal(classes="choices"):
            yield Button("Allow once (y)", id="allow_once", variant="success", disabled=True, compact=True)
            yield Button("Allow for this chat (a)", id="allow_chat", variant="primary", disabled=True, compact=True)
            yield Button("Deny (n)", id="deny", variant="error", disabled=True, compact=True)

    def on_mount(self) -> None:
        self.shown_at = now()
        self.app.bell()
        self.focus()
        self.set_timer(self.GRACE, self._arm)

    def _arm(self) -> None:
        for button in self.query(Button):
            button.disabled = False

    @property
    def armed(self) -> bool:
        return now() - self.shown_at >= self.GRACE

    def action_decide(self, choice: str) -> None:
        if self.decided is not None:
            return
        if not self.armed:
            self.ignored += 1
            return
        self.decided = Decision(choice)
        self.post_message(self.Decided(self.view, self.decided))

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id:
            self.action_decide(event.button.id)
