"""The system prompt editor: the open chat's own system prompt in a text area.

Saving returns the new text (the app sets it through :class:`core.chat.prompting.ChatPrompt`);
Escape returns None and changes nothing. Before the chat's first message an edit is free; after
it the editor says what saving does: the cached prefix breaks once, and the change is recorded.
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Static, TextArea

FREE = "Before the first message: edit freely. It goes beside the agent's own instructions."
COSTLY = (
    "This chat has messages: saving a change breaks the cached prefix once (the next request pays "
    "for the whole prompt again), and the change is recorded in the chat's log."
)

HELP = "ctrl+s saves \u00b7 Escape cancels \u00b7 empty: no prompt of its own"


class SystemPromptScreen(ModalScreen[str | None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "save", "Save", id="system_prompt_save", priority=True),
        Binding("escape", "cancel", "Cancel", id="system_prompt_cancel"),
    ]

    def __init__(self, text: str, *, started: bool) -> None:
        super().__init__(classes="panel-screen")
        self.text = text
        self.started = started

    def compose(self) -> ComposeResult:
        with Vertical(classes="panel", id="system-prompt-panel"):
            yield Static(Content("This chat's system prompt"), classes="panel-title")
            yield Static(Content(COSTLY if self.started else FREE), id="system-prompt-note", classes="note")
            yield TextArea(self.text, id="system-prompt-text", soft_wrap=True, show_line_numbers=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button("Save (ctrl+s)", id="system-prompt-save", variant="warning" if self.started else "primary")
                yield Button("Cancel (Esc)", id="system-prompt-cancel")
            yield Static(Content(HELP), classes="panel-help")

    def on_mount(self) -> None:
        self.query_one(TextArea).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "system-prompt-save":
            self.action_save()
        else:
            self.action_cancel()

    def action_save(self) -> None:
        self.dismiss(self.query_one(TextArea).text)

    def action_cancel(self) -> None:
        self.dismiss(None)
