"""The header: chat title, provider and model, the strategy badge and how the deferred tools are
reached (in words: the strategy's reason, which cites the design, is the badge's tooltip), and
the cost meter's totals for the chat (tokens, cache hit ratio, dollars when every price is known;
the usage view has them per request).

The totals never give way: on a narrow terminal the title is cut first, then the strategy's
words and its badge go, and only then the model's name is cut (:meth:`ChatHeader.fit`)."""

from __future__ import annotations

from rich.cells import cell_len
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.content import Content
from textual.events import Resize
from textual.widgets import Static

from core.chat.meter import UsageTotals, cost_text, ratio_text, tokens_text
from core.display import safe
from core.events import PrefixBreak, UsageEvent
from tui.state import STRATEGY_WORDS

PAD = 2  # the title, model and usage labels each have one column of padding on either side
TITLE_SHARE = 0.4  # the title takes at most this share of the width while the rest fits
TITLE_MIN = 12  # the title is cut to this before the strategy gives way
DEMO = "demo"  # the offline demo provider: the header says so


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
        self._texts: dict[str, str] = {"title": "deferchat", "model": "", "badge": "", "usage": ""}

    def compose(self) -> ComposeResult:
        yield self.title_label
        yield self.model_label
        yield self.badge
        yield self.reason
        yield self.usage

    def _show(self, which: str, label: Static, text: str) -> None:
        """Set one label (already made safe) and lay the header out again for it."""
        self._texts[which] = text
        label.update(Content(text))
        self.fit()

    def set_title(self, title: str) -> None:
        self._show("title", self.title_label, safe(title or "New chat"))  # the model may have written it

    def set_chat(self, *, title: str, provider: str, model: str, strategy: str, reason: str, pinned: bool) -> None:
        self.remove_class("-failed")
        self.set_title(title)
        self._pinned = pinned
        self.show_run(provider=provider, model=model, strategy=strategy, reason=reason)
        self.show_totals(UsageTotals())

    def show_run(self, *, provider: str, model: str, strategy: str, reason: str) -> None:
        """What the open chat runs on now: at open, and after a switch (which keeps the totals).
        The words say how the deferred tools are reached; the strategy's own reason (its design
        references, why auto chose it) is the tooltip, and the plan inspector has it too."""
        words = STRATEGY_WORDS.get(strategy, f"deferred tools: strategy {strategy}")
        if provider == DEMO:
            words = f"offline demo \u00b7 {words}"
        self.badge.tooltip = reason
        self.reason.update(Content(safe(words)))
        self.reason.tooltip = reason or None
        self._show("badge", self.badge, f" {safe(strategy)} " + ("\u00b7 pinned " if self._pinned else ""))
        self._show("model", self.model_label, safe(f"{provider}/{model}"))

    def set_opening(self, what: str = "Opening a chat\u2026") -> None:
        """Another chat is opening: nothing of the previous one stays (its title, its usage)."""
        self._clear()
        self._show("title", self.title_label, what)

    def set_failed(self, why: str) -> None:
        """The chat did not open: the header says so (and why) until another one does."""
        self._clear()
        self.add_class("-failed")
        self._show("title", self.title_label, "No chat open")
        self._show("model", self.model_label, "the chat could not be opened")
        self.reason.update(Content(safe(why)))
        self.reason.tooltip = safe(why)

    def _clear(self) -> None:
        self.remove_class("-failed")
        for label in (self.model_label, self.badge, self.reason, self.usage):
            label.update("")
        self._texts.update(model="", badge="", usage="")
        self.badge.tooltip = self.reason.tooltip = self.usage.tooltip = None
        self.fit()

    # -- the width --------------------------------------------------------------------------------
    def on_resize(self, event: Resize) -> None:
        self.fit(event.size.width)

    def fit(self, width: int | None = None) -> None:
        """Lay the labels out in ``width`` columns, the totals whole whatever else gives way: the
        title is cut first (to :data:`TITLE_MIN`), then the strategy's words and its badge go,
        then the title is cut further and, last, the model's name."""
        width = width if width is not None else self.size.width
        if width <= 0:
            return
        t = self._texts
        usage = cell_len(t["usage"]) + PAD if t["usage"] else 0
        model = cell_len(t["model"]) + PAD if t["model"] else 0
        badge = cell_len(t["badge"])
        title = cell_len(t["title"]) + PAD
        room = width - usage - model
        show_badge = room - badge >= min(title, TITLE_MIN)
        if show_badge:
            room -= badge
        title_width = max(min(title, room, max(int(width * TITLE_SHARE), TITLE_MIN)), min(title, 4))
        room -= title_width
        self.badge.display = show_badge and badge > 0
        self.reason.display = show_badge and room > 8  # a few words or none
        self.title_label.styles.width = title_width
        # what is left of the model's room once the title has its part (never below nothing)
        self.model_label.styles.width = max(0, min(model, width - usage - title_width)) if model else None

    # -- the totals -------------------------------------------------------------------------------
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
            self.usage.tooltip = None
            self._show("usage", self.usage, "")
            return
        estimated = t.estimated > 0  # some counts are the meter's estimates, not the provider's: ~
        mark = "~" if estimated else ""
        text = (
            f"\u2191{mark}{tokens_text(t.input_tokens + t.cache_read + t.cache_write)} "
            f"\u2193{mark}{tokens_text(t.output_tokens)}"
        )
        text += f" cache hit {ratio_text(t.hit_ratio)}"
        if t.cost_usd is not None:
            text += f" {cost_text(t.cost_usd, estimated=estimated)}" + ("+?" if t.unpriced else "")
        self.usage.tooltip = (
            f"{t.requests} requests; input {t.input_tokens:,} uncached + {t.cache_read:,} read from the cache "
            f"+ {t.cache_write:,} written to it; {t.prefix_breaks} prefix breaks"
            + ("; some requests have no price" if t.unpriced else "")
            + (
                f"; ~ {t.estimated} of them estimated: stopped or failed before the provider counted them "
                "(the usage view shows which)"
                if estimated
                else ""
            )
        )
        self._show("usage", self.usage, text)
