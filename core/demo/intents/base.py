"""What an intent is: the calls made so far in the turn (:class:`Context`), the next step it
returns (:class:`Call` or :class:`Say`), and the registry the modules of this package add to,
in the order the intents are tried."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from core.demo.text import STOP, Span, needs_today, normalise, span, words
from core.demo.world import World


@dataclass(frozen=True)
class Done:
    """A call made earlier in this turn and what came back."""

    name: str  # the tool's own name (a tool.call is unwrapped)
    args: dict[str, Any]
    ok: bool
    text: str
    data: Any


@dataclass(frozen=True)
class Call:
    """Call ``tool`` (a tool's name, or the last part of one, e.g. ``send_message``; ``prefer``
    picks among several, e.g. the ``work`` mailbox). ``search`` is what to ask ``tool.search``
    for when the request does not offer the tool yet."""

    tool: str
    args: dict[str, Any]
    preface: str | None = None
    prefer: str = ""
    search: str = ""


@dataclass(frozen=True)
class Say:
    text: str


Action = Call | Say


@dataclass
class Context:
    text: str  # the owner's request, as typed (with the earlier request it answers: model.Step.follow_up)
    done: list[Done] = field(default_factory=list)
    world: World = field(default_factory=lambda: World([]))  # what the demo's data holds (core.demo.world)

    @property
    def said(self) -> str:
        return normalise(self.text)

    def last(self, tool: str) -> Done | None:
        """The latest call in this turn to ``tool`` (its name or last part)."""
        for d in reversed(self.done):
            if d.name == tool or d.name.endswith("." + tool):
                return d
        return None

    def all(self, tool: str) -> list[Done]:
        return [d for d in self.done if d.name == tool or d.name.endswith("." + tool)]

    def now(self) -> dt.datetime | None:
        """The moment ``time.now`` gave in this turn (naive, the owner's zone), or None."""
        clock = self.last("time.now")
        if clock is not None and clock.ok and isinstance(clock.data, dict) and not clock.args.get("timezone"):
            try:
                return dt.datetime.fromisoformat(str(clock.data.get("datetime"))).replace(tzinfo=None)
            except ValueError:
                return None
        return None

    def today(self) -> dt.date | None:
        clock = self.last("time.now")
        if clock is not None and clock.ok and isinstance(clock.data, dict):
            try:
                return dt.date.fromisoformat(str(clock.data.get("date")))
            except ValueError:
                return None
        return None


Step = Callable[[Context], Action | None]


@dataclass(frozen=True)
class Intent:
    name: str
    when: re.Pattern[str]
    unless: re.Pattern[str] | None
    step: Step

    def matches(self, said: str) -> bool:
        return bool(self.when.search(said)) and not (self.unless and self.unless.search(said))


REGISTRY: dict[str, Intent] = {}
"""Every intent by name; the package's ``ORDER`` says in which order they are tried."""


def intent(name: str, when: str, unless: str | None = None) -> Callable[[Step], Step]:
    def register(step: Step) -> Step:
        REGISTRY[name] = Intent(name, re.compile(when), re.compile(unless) if unless else None, step)
        return step

    return register


TODAY_FIRST = "First I'll check today's date with `time.now`."


def days_asked(ctx: Context, default_days: int = 0) -> tuple[Span | None, Action | None]:
    """The days the owner asked about, or the ``time.now`` call that must come first. With
    no day named: today and the ``default_days`` after it (None when ``default_days`` is 0)."""
    found = span(ctx.text, None)
    if found is not None:
        return found, None
    if not needs_today(ctx.text) and not default_days:
        return None, None
    today = ctx.today()
    if today is None:
        return None, Call("time.now", {}, TODAY_FIRST)
    found = span(ctx.text, today)
    if found is None and default_days:
        found = Span(today, today + dt.timedelta(days=default_days - 1), f"in the next {default_days} days")
    return found, None


def significant(text: str, noise: set[str]) -> set[str]:
    return {w for w in words(text) if w not in noise and w not in STOP and len(w) > 2}


def best_row(rows: list[dict[str, Any]], wanted: set[str], fields: tuple[str, ...]) -> dict[str, Any] | None:
    """The one row whose ``fields`` share the most words with ``wanted``; None if none shares
    any or two share the most."""
    scored = sorted(
        ((len(wanted & set(words(" ".join(str(r.get(f) or "") for f in fields)))), i) for i, r in enumerate(rows)),
        reverse=True,
    )
    if not scored or scored[0][0] == 0 or (len(scored) > 1 and scored[1][0] == scored[0][0]):
        return None
    return rows[scored[0][1]]
