"""The inline approval: it sits above the message box until the owner answers.

Typing cannot answer it. The bar never takes the focus: what the owner types keeps going to
the message box, which keeps its text and cursor. The owner moves to the bar on purpose (Tab,
or a click), and there:

- ``y`` allows once, ``n`` denies; ←/→ choose a button and Enter presses it;
- the chat-wide grant (it lasts for the rest of the chat, after a restart too) takes ``!``
  (or its button), then a confirmation: Enter on *Confirm*, no sooner than half a second later;
- Escape (or Tab) goes back to the message box, the approval still waiting and the turn going on.

For :attr:`ApprovalBar.GRACE` seconds after the bar appears (after the confirmation opens, and
after Tab moves here) keys and clicks on it are ignored, and the bar says so. The terminal bell rings when it appears.
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


CHOICES = ("allow_once", "allow_chat", "deny")
CONFIRM_CHOICES = ("confirm_chat", "cancel_chat")
HINT_AWAY = "Tab: answer this approval \u00b7 what you type stays in the message box"
HINT_HERE = (
    "y allow once \u00b7 n deny \u00b7 ! allow for this chat\u2026 \u00b7 \u2190/\u2192 and Enter "
    "\u00b7 Tab or Esc: back to the message box"
)
HINT_CONFIRM = "Enter confirms \u00b7 Back (\u2192 Enter): nothing granted \u00b7 Tab or Esc: back to the message box"


class ApprovalBar(Vertical):
    can_focus = True
    GRACE: ClassVar[float] = 0.5

    DEFAULT_CSS = """
    ApprovalBar #confirm { height: auto; }
    ApprovalBar .question { color: $warning; text-style: bold; }
    ApprovalBar .hint { color: $text-muted; }
    ApprovalBar .notice { color: $warning; }
    ApprovalBar Button.-selected { text-style: bold reverse; }
    ApprovalBar.-grace Button { opacity: 60%; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "decide('allow_once')", "Allow once", id="approve_once"),
        Binding("n", "decide('deny')", "Deny", id="deny"),
        Binding("exclamation_mark", "ask_chat", "Allow for this chat\u2026", id="approve_chat"),
        Binding("left", "move(-1)", "Previous", show=False, id="approval_previous"),
        Binding("right", "move(1)", "Next", show=False, id="approval_next"),
        Binding("enter", "press", "Choose", show=False, id="approval_choose"),
        Binding("escape", "leave", "Message box", id="approval_leave"),
    ]

    class Decided(Message):
        def __init__(self, view: ApprovalView, decision: Decision) -> None:
            super().__init__()
            self.view = view
            self.decision = decision

    class Leave(Message):
        """The owner goes back to the message box (the approval keeps waiting)."""

    def __init__(self, view: ApprovalView, **kw: Any) -> None:
        super().__init__(**kw)
        self.view = view
        self.shown_at = now()
        self.decided: Decision | None = None
        self.ignored = 0  # keys and clicks that came inside a grace period
        self.confirming = False  # the chat-wide grant asks for a confirmation
        self.selected = 0  # the button Enter presses
        self.here = False  # the owner moved to the bar (it has the focus)

    def compose(self) -> ComposeResult:
        v = self.view
        name = safe(v.display or v.tool)  # a server's name: shown as it is, never obeyed (core.display)
        title = f"\u26a0 Waiting for your approval: {name}" + (f" \u00b7 via {safe(v.via)}" if v.via else "")
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
        with Horizontal(classes="choices", id="choices"):
            yield Button("Allow once (y)", id="allow_once", variant="success", compact=True)
            yield Button("Allow for this chat\u2026 (!)", id="allow_chat", variant="primary", compact=True)
            yield Button("Deny (n)", id="deny", variant="error", compact=True)
        with Vertical(id="confirm"):
            yield Static(
                Content(f"Allow {name} for the rest of this chat, without asking again, also after a restart?"),
                classes="question",
            )
            with Horizontal(classes="choices"):
                yield Button("Confirm: allow for this chat", id="confirm_chat", variant="warning", compact=True)
                yield Button("Back", id="cancel_chat", compact=True)
        yield Static(Content(HINT_AWAY), classes="hint", id="approval-hint")
        yield Static("", classes="notice", id="approval-notice")

    def on_mount(self) -> None:
        self.shown_at = now()
        for button in self.query(Button):
            button.can_focus = False  # the bar holds the focus; ←/→ choose among its buttons
        self.query_one("#confirm").display = False
        self.query_one("#approval-notice").display = False
        self.set_class(True, "-grace")
        self.set_timer(self.GRACE, self._arm)
        self._show_selection()
        self.app.bell()

    # -- state --------------------------------------------------------------------------------
    def guard(self) -> None:
        """Ignore keys and clicks for :attr:`GRACE` seconds from now: the owner just came here
        (Tab), so a key typed in the same burst answers nothing."""
        self.shown_at = now()
        self.set_class(True, "-grace")
        self.set_timer(self.GRACE, self._arm)

    def _arm(self) -> None:
        self.set_class(False, "-grace")

    @property
    def armed(self) -> bool:
        return now() - self.shown_at >= self.GRACE

    @property
    def choices(self) -> tuple[str, ...]:
        return CONFIRM_CHOICES if self.confirming else CHOICES

    def _show_selection(self) -> None:
        for i, choice in enumerate(self.choices):
            self.query_one(f"#{choice}", Button).set_class(i == self.selected and self.here, "-selected")

    def _hint(self) -> None:
        text = HINT_CONFIRM if self.confirming else HINT_HERE if self.here else HINT_AWAY
        self.query_one("#approval-hint", Static).update(Content(text))

    def on_focus(self) -> None:
        self.here = True
        self._hint()
        self._show_selection()

    def on_blur(self) -> None:
        self.here = False
        if self.confirming:  # leaving the bar closes the confirmation: nothing granted
            self._set_confirming(False)
        self._hint()
        self._show_selection()

    def _ignore(self) -> None:
        self.ignored += 1
        notice = self.query_one("#approval-notice", Static)
        what = "confirmation" if self.confirming else "approval"
        notice.update(
            Content(
                f"ignored {self.ignored} key{'s' if self.ignored != 1 else ''}: the {what} had just "
                "appeared \u2014 press again"
            )
        )
        notice.display = True

    def _set_confirming(self, confirming: bool) -> None:
        self.confirming = confirming
        self.selected = 0
        self.query_one("#choices").display = not confirming
        self.query_one("#confirm").display = confirming
        if confirming:  # a grace period of its own: "!" and Enter typed in one burst grant nothing
            self.guard()
        self._hint()
        self._show_selection()

    # -- actions ------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("decide", "ask_chat"):
            return not self.confirming  # only the confirmation's buttons act while it is open
        return True

    def action_decide(self, choice: str) -> None:
        if self.decided is not None:
            return
        if not self.armed:
            self._ignore()
            return
        if choice == Decision.ALLOW_CHAT and not self.confirming:
            self._set_confirming(True)  # never granted in one act
            return
        self.decided = Decision(choice)
        self.post_message(self.Decided(self.view, self.decided))

    def action_ask_chat(self) -> None:
        if self.decided is not None:
            return
        if not self.armed:
            self._ignore()
            return
        self._set_confirming(True)

    def action_move(self, step: int) -> None:
        self.selected = (self.selected + step) % len(self.choices)
        self._show_selection()

    def action_press(self) -> None:
        self._choose(self.choices[self.selected])

    def action_leave(self) -> None:
        if self.confirming:
            self._set_confirming(False)
        self.post_message(self.Leave())

    def _choose(self, choice: str) -> None:
        if choice == "confirm_chat":
            self.action_decide(Decision.ALLOW_CHAT.value)
        elif choice == "cancel_chat":
            self._set_confirming(False)
        elif choice == "allow_chat":
            self.action_ask_chat()
        else:
            self.action_decide(choice)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id:
            self._choose(event.button.id)
