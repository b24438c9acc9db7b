"""An approval in full, for the person who wants every word and for developers: the whole
preview (every field unfolded), the call's tool, class, ids and why it asks, and the arguments
the tool will receive as canonical JSON. Everything here can come from the model or a server:
shown through :func:`core.display.safe`."""

from __future__ import annotations

import json
from typing import Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static, TextArea

from core.display import safe
from core.pipeline.preview import ActionPreview, layout
from tui.widgets.preview import line_content


class ApprovalDetail(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,d", "dismiss", "Close", id="close_approval_detail")]

    def __init__(self, name: str, preview: ActionPreview, facts: list[str], arguments: Any) -> None:
        super().__init__(classes="panel-screen")
        self.tool_name = name
        self.preview = preview
        self.facts = facts
        self.arguments = arguments

    def compose(self) -> ComposeResult:
        with Vertical(classes="panel"):
            yield Static(Content(f"Approval: {safe(self.tool_name)}"), classes="panel-title")
            with VerticalScroll(classes="panel-body"):
                for line in layout(self.preview, expanded=True):
                    yield Static(line_content(line), classes=f"preview-{line.section}")
                yield Static(Content("\n".join(safe(fact) for fact in self.facts)), classes="facts")
                yield Static(Content("The arguments the tool receives (canonical JSON)"), classes="section")
                raw = json.dumps(self.arguments, ensure_ascii=False, indent=2, sort_keys=True)
                yield TextArea(
                    safe(raw, multiline=True), read_only=True, soft_wrap=True, show_line_numbers=False, id="raw-json"
                )
            yield Static(Content("Esc, q or d: back to the approval"), classes="panel-help")
