"""One tool of the plan: what it does in words and as its class's code, why it is placed where it
is, whether this chat allowed it for the rest of the chat (since when, by whom), its index entry
exactly as sent, and its input schema. Every text here can come from a server: shown through
:func:`core.display.safe`."""

from __future__ import annotations

import contextlib
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static, TextArea

from core.context.envelope import OPEN_TAG
from core.display import safe
from core.roster.models import Placement, RosterPlan
from tui.state import (
    MARK_HELP,
    SIDE_EFFECT_BADGE,
    SIDE_EFFECT_MEANING,
    effect_words,
    index_block,
    pretty_json,
    tokens_words,
)

_PLACEMENT = {Placement.DEFINED: "defined", Placement.DEFERRED: "indexed (deferred)", Placement.SKIPPED: "skipped"}


def _read_only(text: str, language: str | None = None, **kw) -> TextArea:
    area = TextArea(text, read_only=True, soft_wrap=False, show_line_numbers=False, **kw)
    if language:
        with contextlib.suppress(Exception):  # no highlighter installed: plain text is fine
            area.language = language
    return area


class ToolScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q", "dismiss", "Close", id="close_tool")]

    def __init__(self, plan: RosterPlan, name: str, marks: set[str], grant: str | None = None) -> None:
        """``grant``: the chat's active grant of the tool, in words (None: it has none)."""
        super().__init__(classes="panel-screen")
        self.plan = plan
        self.tool_name = name
        self.marks = marks
        self.grant = grant

    def compose(self) -> ComposeResult:
        t = self.plan.placement_of(self.tool_name)
        with Vertical(classes="panel"):
            if t is None:
                yield Static(Content(f"{safe(self.tool_name)} is not in this chat's plan"), classes="panel-title")
                return
            yield Static(Content(safe(t.name)), classes="panel-title")
            with VerticalScroll(classes="panel-body"):
                where = t.origin + (f" \u00b7 server {t.server}" if t.server else "")
                facts = [
                    f"does       {effect_words(t.side_effect, t.origin)}",
                    f"placement  {_PLACEMENT[t.placement]} \u00b7 {tokens_words(t.tokens)} "
                    f"(definition {tokens_words(t.definition_tokens)}) \u00b7 rank {t.rank}",
                    f"why        {t.reason}",
                    f"origin     {where}"
                    + (
                        f" \u00b7 \u26a0 untrusted (its text is sent inside an {OPEN_TAG} envelope)"
                        if t.untrusted
                        else ""
                    ),
                    f"effect     {t.side_effect} [{SIDE_EFFECT_BADGE.get(t.side_effect, '')}] "
                    f"{SIDE_EFFECT_MEANING.get(t.side_effect, '')}",
                    "this chat  " + (", ".join(MARK_HELP[m] for m in sorted(self.marks)) or "not used yet"),
                    "approval   " + (self.grant or "no grant in this chat: it asks whenever the policy asks"),
                ]
                yield Static(Content("\n".join(safe(fact) for fact in facts)), classes="facts")
                yield Static(Content("Index entry as sent"), classes="section")
                block = index_block(self.plan.index_text, t.index_entry)
                if block is not None:
                    yield _read_only(safe(block, multiline=True), classes="index-entry")
                elif t.placement is Placement.DEFERRED:
                    yield Static(
                        Content(
                            f"Strategy {self.plan.strategy} sends no index region; the model finds "
                            "this tool by tool search. Its entry text: "
                            f"{safe(t.index_entry or '(none)')}"
                        ),
                        classes="note",
                    )
                else:
                    yield Static(Content("Not indexed: it is " + _PLACEMENT[t.placement] + "."), classes="note")
                yield Static(Content("Description"), classes="section")
                yield Static(Content(safe(t.description or "(none)", multiline=True)), classes="description")
                yield Static(Content("Input schema"), classes="section")
                yield _read_only(safe(pretty_json(t.input_schema), multiline=True), "json", classes="schema")
            yield Static(Content("Escape closes"), classes="panel-help")
