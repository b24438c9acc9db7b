"""The inline approval: it sits above the message box until the owner answers.

Typing cannot answer it. The bar never takes the focus: what the owner types keeps going to
the message box, which keeps its text and cursor. The owner moves to the bar on purpose (Tab,
or a click), and there:

- ``y`` allows once, ``n`` denies; ←/→ choose a button and Enter presses it;
- the chat-wide grant (it lasts for the rest of the chat, after a restart too) takes ``!``
  (or its button), then a confirmation: Enter on *Confirm*, no sooner than half a second later;
- Escape (or Tab) goes back to the message box, the approval still waiting and the turn going on;
- ``e`` shows the folded fields whole (and folds them again), ``d`` opens the detail view: the
  whole preview, the call's ids and the raw canonical arguments; ↑/↓ scroll the preview when the
  bar cannot show all of it.

For :attr:`ApprovalBar.GRACE` seconds after the bar appears (after the confirmation opens, and
after Tab moves here) keys and clicks on it are ignored, and the bar says so. The terminal bell rings when it appears.

What it shows is the preview the pipeline built from the canonical values the tool will receive
(:mod:`core.pipeline.preview`), laid out as the CLI lays it out (:func:`~core.pipeline.preview.layout`):
the summary, the problems, the decisive fields whole and the changes ``before → after``, always
in view, then the other fields folded to one line each. The preview's part of the bar grows with
the terminal (what the message box and the status line leave of the bottom area) and scrolls
when even that is not enough, decisive fields first.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Button, Static

from core.display import safe
from core.pipeline.approvals import Decision
from core.pipeline.preview import ActionPreview, layout, server_line, spec_preview_of, stored_preview
from tui.state import SIDE_EFFECT_MEANING, json_value
from tui.widgets.preview import line_content, one_line

if TYPE_CHECKING:
    from core.pipeline.approvals import ApprovalRequest
    from core.store import ApprovalRow


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
    preview: ActionPreview | None = None  # what will run (core.pipeline.preview); None: an old approval
    call_id: str = ""

    @property
    def shown_preview(self) -> ActionPreview:
        """The preview to show: the pipeline's, else (an approval stored before previews) the
        arguments as fields."""
        return self.preview or spec_preview_of(self.tool, json_value(self.arguments))

    @classmethod
    def of_request(cls, request: ApprovalRequest, *, display: str = "") -> ApprovalView:
        """A live request, with the preview the pipeline built."""
        return cls(
            approval_id=request.approval_id,
            tool=request.tool,
            side_effect=request.side_effect,
            arguments=request.arguments,
            via=request.via,
            reason=request.reason,
            untrusted=request.untrusted,
            display=display,
            preview=request.preview,
            call_id=request.call_id,
        )

    @classmethod
    def of_row(cls, row: ApprovalRow, *, untrusted: bool, display: str = "") -> ApprovalView:
        """An approval a reopened chat left pending, with the preview stored with it."""
        return cls(
            approval_id=row.id,
            tool=row.tool,
            side_effect=row.side_effect or "",
            arguments=json_value(row.arguments),
            via=row.via,
            reason=row.reason or "",
            untrusted=untrusted,
            display=display,
            parked=True,
            preview=stored_preview(row.preview),
            call_id=row.call_id,
        )


CHOICES = ("allow_once", "allow_chat", "deny")
CONFIRM_CHOICES = ("confirm_chat", "cancel_chat")
HINT_AWAY = "Tab: answer this approval \u00b7 what you type stays in the message box"
HINT_HERE = (
    "y allow once \u00b7 n deny \u00b7 ! allow for this chat\u2026 \u00b7 \u2190/\u2192 and Enter "
    "\u00b7 e show all \u00b7 d details \u00b7 \u2191/\u2193 scroll \u00b7 Tab or Esc: back to the message box"
)
HINT_CONFIRM = "Enter confirms \u00b7 Back (\u2192 Enter): nothing granted \u00b7 Tab or Esc: back to the message box"


def _rows(width: int, *texts: str) -> int:
    """The rows the longest of ``texts`` takes, wrapped at ``width`` as Textual wraps it."""
    return max(len(Content(text).wrap(width)) for text in texts)


class ApprovalBar(Vertical):
    can_focus = True
    GRACE: ClassVar[float] = 0.5

    DEFAULT_CSS = """
    ApprovalBar #confirm { height: auto; }
    ApprovalBar .question { color: $warning; text-style: bold; }
    ApprovalBar #approval-preview { height: auto; scrollbar-size-vertical: 1; }
    ApprovalBar #approval-details { color: $text-muted; }
    ApprovalBar #approval-details.-folded { text-wrap: nowrap; text-overflow: ellipsis; }
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
        Binding("e", "expand", "Show all fields", id="approval_expand"),
        Binding("d", "details", "Approval details", id="approval_details"),
        Binding("up", "scroll_preview(-1)", "Scroll up", show=False, id="approval_scroll_up"),
        Binding("down", "scroll_preview(1)", "Scroll down", show=False, id="approval_scroll_down"),
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
        self.expanded = False  # the folded fields shown whole (e)

    def compose(self) -> ComposeResult:
        v = self.view
        name = safe(v.display or v.tool)  # a server's name: shown as it is, never obeyed (core.display)
        preview = v.shown_preview
        title = f"\u26a0 Waiting for your approval: {name}"  # what it does, in words, is in the facts below
        if v.via:
            title += f" \u00b7 via {safe(v.via)}"
        if preview.server is not None or v.untrusted:
            title += " \u00b7 untrusted server" + (f" {safe(preview.server.server)}" if preview.server else "")
        if v.parked:
            title += " \u00b7 parked in this chat"
        yield Static(Content(title), classes="title")
        with VerticalScroll(id="approval-preview", can_focus=False):  # the bar keeps the focus (↑/↓ scroll)
            for line in layout(preview):
                if line.section in ("summary", "problem", "decisive", "change"):
                    yield Static(line_content(line), classes=f"preview-{line.section}")
            yield Static("", id="approval-details")
            # What the call is and why it asks, after what it does: the server's words are claims.
            facts = [SIDE_EFFECT_MEANING.get(v.side_effect, safe(v.side_effect)).capitalize()]
            if preview.server is not None:
                facts.append(server_line(preview.server))
            if v.reason:
                facts.append(f"asked because: {safe(v.reason)}")
            yield Static(Content(" \u00b7 ".join(facts)), classes="facts")
        # What changes (the hint, a notice) sits above the buttons: the bottom area grows upward, so
        # nothing moves under the pointer between a press and its release.
        yield Static(Content(HINT_AWAY), classes="hint", id="approval-hint")
        yield Static("", classes="notice", id="approval-notice")
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

    def on_mount(self) -> None:
        self._show_details()
        self._fit()  # sized before its first layout, and again whenever the screen's layout changes
        self.screen.screen_layout_refresh_signal.subscribe(self, lambda _: self._fit())
        self.shown_at = now()
        for button in self.query(Button):
            button.can_focus = False  # the bar holds the focus; ←/→ choose among its buttons
        self.query_one("#confirm").display = False
        self.query_one("#approval-notice").display = False
        self.set_class(True, "-grace")
        self.set_timer(self.GRACE, self._arm)
        self._show_selection()
        self.app.bell()

    # -- what it shows -------------------------------------------------------------------------
    def _show_details(self) -> None:
        """The other fields: one line each, cut to the bar's width, or whole (``e``)."""
        lines = [x for x in layout(self.view.shown_preview, expanded=True) if x.section == "detail"]
        details = self.query_one("#approval-details", Static)
        details.display = bool(lines)
        details.set_class(not self.expanded, "-folded")
        if not self.expanded:  # one line each, cut to the bar's width; how long it is, in words
            lines = [one_line(x) for x in lines]
        details.update(Content("\n").join(line_content(x) for x in lines))

    def _fit(self) -> None:
        """Let the preview take what the bottom area has left: its share of the screen less the
        message box, the status line and the bar's own title, buttons and hint."""
        preview = self.query_one("#approval-preview")
        parent = self.parent
        if not isinstance(parent, Widget) or not self.is_mounted:
            return
        # The bottom area's height at most: its max-height (tui/app.tcss: 75% of the chat column).
        outer = parent.parent
        base = outer.content_size if isinstance(outer, Widget) else self.screen.size
        limit = parent.styles.max_height
        room = int(limit.resolve(base, self.screen.size)) if limit is not None else base.height
        others = sum(w.outer_size.height for w in parent.children if w is not self and w.display)
        laid_out = self.outer_size.height > 0
        chrome = self.outer_size.height - preview.outer_size.height if laid_out else self._chrome_guess(parent)
        most = max(3, room - others - chrome)
        if preview.styles.max_height is None or preview.styles.max_height.value != most:
            preview.styles.max_height = most

    def _chrome_guess(self, parent: Widget) -> int:
        """Before the first layout: the rows the bar's border, title, buttons and hint will take,
        so the bar is laid out at its size at once (nothing under a click moves a moment later)."""
        width = max(10, parent.content_size.width - 4)  # the bar's border and padding
        title = str(self.query_one(".title", Static).render())
        cramped = any(a.has_class("-cramped") for a in self.ancestors_with_self)
        narrow = any(a.has_class("-narrow") for a in self.ancestors_with_self)
        buttons = 3 if cramped else 1 if narrow else 2
        return 2 + _rows(width, title) + buttons + _rows(width, HINT_AWAY)

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

    def action_expand(self) -> None:
        self.expanded = not self.expanded
        self._show_details()

    def action_scroll_preview(self, step: int) -> None:
        preview = self.query_one("#approval-preview", VerticalScroll)
        preview.scroll_relative(y=step, animate=False)

    def action_details(self) -> None:
        from tui.screens.approval_detail import ApprovalDetail

        v = self.view
        facts = [
            f"tool       {v.tool}" + (f" (via {v.via})" if v.via else ""),
            f"class      {v.side_effect} \u2014 {SIDE_EFFECT_MEANING.get(v.side_effect, '')}",
            f"why        {v.reason or '(no reason given)'}",
            f"approval   {v.approval_id}" + (f" \u00b7 call {v.call_id}" if v.call_id else ""),
        ]
        self.app.push_screen(ApprovalDetail(v.display or v.tool, v.shown_preview, facts, v.arguments))

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
