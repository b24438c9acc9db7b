"""The header: chat title, provider and model, the strategy badge and the reason for it."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.content import Content
from textual.widgets import Static

from core.display import safe


class ChatHeader(Horizontal):
    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.title_label = Static("deferchat", id="hdr-title")
        self.model_label = Static("", id="hdr-model")
        self.badge = Static("", id="hdr-badge")
        self.reason = Static("", id="hdr-reason")
        self.usage = Static("", id="hdr-usage")

    def compose(self) -> ComposeResult:
        yield self.title_label
        yield self.model_label
        yield self.badge
        yield self.reason
        yield self.usage

    def set_title(self, title: str) -> None:
        self.title_label.update(Content(safe(title or "New chat")))  # the model may have written it

    def set_chat(self, *, title: str, provider: str, model: str, strategy: str, reason: str, pinned: bool) -> None:
        self.remove_class("-failed")
        self.set_title(title)
        self.model_label.update(Content(f"{provider}/{model}"))
        self.badge.update(Content(f" {strategy} " + ("\u00b7 pinned " if pinned else "")))
        self.badge.tooltip = reason
        self.reason.update(Content(reason))
        self.reason.tooltip = reason
        self.usage.update("")

    def set_opening(self, what: str = "Opening a chat\u2026") -> None:
        """Another chat is opening: nothing of the previous one stays (its title, its usage)."""
        self._clear()
        self.title_label.update(Content(what))

    def set_failed(self, why: str) -> None:
        """The chat did not open: the header says so (and why) until another one does."""
        self._clear()
        self.add_class("-failed")
        self.title_label.update(Content("No chat open"))
        self.model_label.update(Content("the chat could not be opened"))
        self.reason.update(Content(safe(why)))
        self.reason.tooltip = safe(why)

    def _clear(self) -> None:
        self.remove_class("-failed")
        for label in (self.model_label, self.badge, self.reason, self.usage):
            label.update("")
        self.badge.tooltip = self.reason.tooltip = None

    def set_usage(self, input_tokens: int, output_tokens: int, cache_read: int, cache_write: int) -> None:
        text = f"\u2191{input_tokens:,} \u2193{output_tokens:,}"
        if cache_read or cache_write:
            text += f" cache r{cache_read:,}/w{cache_write:,}"
        self.usage.update(Content(text))
