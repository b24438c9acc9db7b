"""The multi-line input: Enter sends, shift+enter or ctrl+j starts a new line."""

from __future__ import annotations

from typing import ClassVar

from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import TextArea


class Composer(TextArea):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "send", "Send", id="send", show=False),
        Binding("shift+enter,ctrl+j", "newline", "New line", id="newline", show=False),
    ]

    class Submitted(Message):
        def __init__(self, composer: Composer, text: str) -> None:
            super().__init__()
            self.composer = composer
            self.text = text

        @property
        def control(self) -> Composer:
            return self.composer

    def __init__(self, **kw) -> None:
        super().__init__(soft_wrap=True, show_line_numbers=False, tab_behavior="focus", compact=True, **kw)
        self.placeholder = "Message (Enter sends \u00b7 shift+enter or ctrl+j: new line \u00b7 ctrl+p: commands)"

    def on_mount(self) -> None:
        self.cursor_blink = not self.app.is_headless

    async def _on_key(self, event: events.Key) -> None:
        if event.key == "enter":
            # Not inserted here: the key goes on to the bindings, where "send" (or whatever
            # the keymap gives it) acts on it. prevent_default skips TextArea's own handler;
            # bubbling clears it again for the app's binding check.
            event.prevent_default()
            return
        await super()._on_key(event)

    def action_send(self) -> None:
        text = self.text
        if not text.strip():
            return
        self.post_message(self.Submitted(self, text))
        self.clear()

    def action_newline(self) -> None:
        self.insert("\n")
