"""What every entry of the chat log shares: it takes the focus, and ``c`` copies what it holds."""

from __future__ import annotations

from textual.binding import Binding, BindingType

COPY_BINDINGS: list[BindingType] = [Binding("c", "copy_entry", "Copy", id="copy_message")]


class CopyMixin:
    """A focusable entry; ``c`` copies what it holds (each widget class lists COPY_BINDINGS:
    Textual reads BINDINGS from widget classes only)."""

    can_focus = True

    def copy_text(self) -> str:
        raise NotImplementedError

    def action_copy_entry(self) -> None:
        text = self.copy_text()
        if text:
            self.app.copy_to_clipboard(text)  # type: ignore[attr-defined]
            self.app.notify("Copied to the clipboard.", timeout=2)  # type: ignore[attr-defined]
