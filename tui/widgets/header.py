"""The header: chat title, provider and model, the strategy badge and the reason for it, and the
cost meter's totals for the chat (tokens, cache hit ratio, dollars when every price is known;
the usage view has them per request)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.content import Content
from textual.widgets import Static

from core.chat.meter import UsageTotals, cost_text, ratio_text, tokens_text
from core.display import safe
from core.events import PrefixBreak, UsageEvent


class ChatHeader(Horizontal):
    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.title_label = Static("deferchat", id="hdr-title")
        self.model_label = Static("", id="hdr-model")
        self.badge = Static("", id="hdr-badge")
        self.reason = Static("", id="hdr-reason")
        self._pinned = False  # the open chat reused its stored plan (the badge says so)
        self.usage = Static("", id="hdr-usage")
        self.totals = UsageTotals()
        self._breaks: list[PrefixBreak] = []  # the next usage's

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
        self._pinned = pinned
        self.show_run(provider=provider, model=model, strategy=strategy, reason=reason)
        self.show_totals(UsageTotals())

    def show_run(self, *, provider: str, model: str, strategy: str, reason: str) -> None:
        """What the open chat runs on now: at open, and after a switch (which keeps the totals)."""
        self.model_label.update(Content(safe(f"{provider}/{model}")))
        self.badge.update(Content(f" {strategy} " + ("\u00b7 pinned " if self._pinned else "")))
        self.badge.tooltip = reason
        self.reason.update(Content(safe(reason)))
        self.reason.tooltip = reason

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

    def show_totals(self, totals: UsageTotals) -> None:
        """The chat's totals so far (a reopened chat's, read back from its stored events)."""
        self.totals, self._breaks = totals, []
        self._render_usage()

    def add_break(self, event: PrefixBreak) -> None:
        self._breaks.append(event)

    def add_usage(self, event: UsageEvent) -> None:
        """One more request: its tokens, cost and the prefix breaks before it join the totals."""
        breaks, self._breaks = self._breaks, []
        self.totals.add_event(event, breaks)
        self._render_usage()

    def _render_usage(self) -> None:
        t = self.totals
        if not t.requests:
            self.usage.update("")
            self.usage.tooltip = None
            return
        text = (
            f"\u2191{tokens_text(t.input_tokens + t.cache_read + t.cache_write)} \u2193{tokens_text(t.output_tokens)}"
        )
        text += f" cache hit {ratio_text(t.hit_ratio)}"
        if t.cost_usd is not None:
            text += f" {cost_text(t.cost_usd)}" + ("+?" if t.unpriced else "")
        self.usage.update(Content(text))
        self.usage.tooltip = (
            f"{t.requests} requests; input {t.input_tokens:,} uncached + {t.cache_read:,} read from the cache "
            f"+ {t.cache_write:,} written to it; {t.prefix_breaks} prefix breaks"
            + ("; some requests have no price" if t.unpriced else "")
        )
