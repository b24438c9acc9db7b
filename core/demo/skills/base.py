"""What a skill is: how the demo model uses one tool once it has chosen it (:mod:`core.demo.choose`).

A skill gets the request as read (:class:`core.demo.reading.Reading`), the tool chosen (``goal``)
and the calls made so far in the turn (:class:`Context`), and returns the next step: a
:class:`Call` (the goal itself, or what must come first: ``time.now`` before "tomorrow", a list
before an id, a contact's record before their address) or the :class:`Say` that ends the turn,
or None when the goal cannot serve this request after all (the model tries the next candidate).

Skills read arguments only from the request and the data: an id from the row a list returned
for the entity the request names, a date from the request's words read against ``time.now``, an
address from the contact's record. A write whose target the request and the data do not
identify beyond doubt asks which one; nothing falls back to a first row.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from core.demo import answers
from core.demo.reading import Reading, read
from core.demo.text import Span, find_items, normalise, sentence, words
from core.demo.when import day_span, moments
from core.demo.world import World, terms
from core.providers.profiles import KEY_VARIABLES

REAL_MODEL = f"a real model (set {KEY_VARIABLES} and start deferchat again)"
"""What the demo names when a request needs more than it can do (the key variables as the
profiles name them)."""


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
    goal: str = ""  # the tool the model chose for the request (core.demo.choose)
    offered: frozenset[str] = frozenset()  # the names of the tools the request offers
    _read: dict[dt.datetime | None, Reading] = field(default_factory=dict, repr=False)

    @property
    def reading(self) -> Reading:
        """The request as read (its dates against ``time.now``'s answer once it came)."""
        now = self.now()
        if now not in self._read:
            self._read[now] = read(self.text, self.world, now)
        return self._read[now]

    @property
    def said(self) -> str:
        return self.reading.said

    def last(self, tool: str) -> Done | None:
        """The latest call in this turn to ``tool`` (its name or last part)."""
        for d in reversed(self.done):
            if d.name == tool or d.name.endswith("." + tool):
                return d
        return None

    def all(self, tool: str) -> list[Done]:
        return [d for d in self.done if d.name == tool or d.name.endswith("." + tool)]

    def offers(self, tool: str) -> bool:
        return any(t == tool or t.endswith("." + tool) for t in self.offered)

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
        now = self.now()
        return now.date() if now is not None else None


Skill = Callable[[Context], Action | None]

SKILLS: dict[str, Skill] = {}
"""Each tool's skill, by the tool's full name (``calendar.list_events``) or, for a server's tool,
its own name (``send_message``: the same on every mailbox)."""


def serves(*tools: str) -> Callable[[Skill], Skill]:
    def register(skill: Skill) -> Skill:
        for tool in tools:
            SKILLS[tool] = skill
        return skill

    return register


def skill_for(name: str) -> Skill | None:
    return SKILLS.get(name) or SKILLS.get(name.rsplit(".", 1)[-1])


TODAY_FIRST = "First I'll check today's date with `time.now`."


def data(done: Done | None) -> dict[str, Any]:
    return done.data if done is not None and isinstance(done.data, dict) else {}


def failed(done: Done | None) -> Say | None:
    """The failure to report when ``done`` failed (a turn never presses on past one)."""
    return Say(answers.failure(done.name, done.text)) if done is not None and not done.ok else None


def answered(ctx: Context, tool: str, say: Callable[[dict[str, Any]], str]) -> Action | None:
    """The end of the turn once ``tool`` answered in it: its failure, or ``say`` of what it
    returned; None while it has not been called."""
    done = ctx.last(tool)
    if done is None:
        return None
    return failed(done) or Say(say(data(done)))


def days_asked(ctx: Context, default_days: int = 0) -> tuple[Span | None, Action | None]:
    """The days the owner asked about, or the ``time.now`` call that must come first. With
    no day named: today and the ``default_days`` after it (None when ``default_days`` is 0)."""
    if not ctx.reading.dated() and not default_days:
        return None, None
    now = ctx.now()
    if now is None:
        return None, Call("time.now", {}, TODAY_FIRST)
    found = day_span(moments(ctx.text, now), now.date())
    if found is not None:
        return Span(*found), None
    if default_days:
        today = now.date()
        return Span(today, today + dt.timedelta(days=default_days - 1), f"in the next {default_days} days"), None
    return None, None


def undated(text: str, now: dt.datetime | None = None) -> str:
    """``text`` (normalised) with its date and time expressions cut out: what a title is made of."""
    said = normalise(text)
    for m in sorted(moments(said, now or dt.datetime(2000, 1, 3, 12)), key=lambda m: -m.start):
        said = said[: m.start] + " " + said[m.end :]
    return said


_POLITE = r"^(?:(?:please|pls|can you|could you|would you|will you|kindly)\s+)*"
_PLACES = ("list", "calendar", "agenda", "diary", "schedule", "notebook", "tasks", "to-do list", "todo list")
_REPEATS = (
    r"\b(?:every|each|on)\s+(?:day|weekday|weekdays|morning|evening|night|week|"
    r"(?:mon|tues|wednes|thurs|fri|satur|sun)days?)\b|\b(?:daily|weekly|monthly|on weekdays)\b"
)


def title_of(ctx: Context, kind: str) -> str:
    """The title of a thing the request asks to make: the content it gives ("remind me to *buy
    milk*"), else its words without the verb that asked and the kind it named ("add a task to"),
    where it goes ("on my list", "in my calendar"), its dates and how often (a title says what,
    never when)."""
    from core.demo.reading import KIND_WORDS

    r = ctx.reading
    said = undated(r.content or r.text, ctx.now())
    said = re.sub(_REPEATS, " ", said)
    said = re.sub(_POLITE, "", " ".join(said.split()))
    kinds = "|".join(
        re.escape(w) for w in sorted({*KIND_WORDS.get(kind, ()), "reminder", "item"}, key=len, reverse=True)
    )
    if not r.content:  # the verb that asked, and what it asked for: "add a task to", "put", "set up a reminder to"
        said = re.sub(
            rf"^[a-z'-]+(?:\s+(?:up|down|in|out|on))?\s+(?:(?:a|an|the|my|new|recurring|one-off)\s+)*"
            rf"(?:(?:{kinds})\b\s*(?:(?:to|for|called|named)\b)?\s*:?\s*)?",
            "",
            said,
        )
    places = "|".join(re.escape(w) for w in sorted({*_PLACES, *KIND_WORDS.get(kind, ())}, key=len, reverse=True))
    said = re.sub(rf"\s*\b(?:to|on|in|into|onto)\s+(?:my|the)\s+(?:{places})(?:\s+list)?\b", "", said)
    said = re.sub(r"\s*\b(?:for|lasting)\s+(?:an?|one|half an|\d+)\s*(?:hours?|minutes?|mins?|h)\b", "", said)
    said = re.sub(r"^(?:to|for|about)\s+", "", said.strip(" .,!?:"))
    while (cut := re.sub(r"\s+\b(?:at|on|by|for|from|due|before|and|to)\s*\Z", "", said)) != said:
        said = cut
    said = re.sub(r"\bwith\s+(\w)", lambda m: "with " + m.group(1).upper(), said.strip(" .,!?:"))
    return sentence(said).rstrip(".") if said else ""


def significant(text: str, noise: set[str]) -> set[str]:
    return {w for w in words(text) if w not in noise and len(w) > 2}


def named_rows(rows: list[dict[str, Any]], key: str, label: str) -> list[dict[str, Any]]:
    """The rows whose ``key`` is the entity's ``label`` (what a list returned for what the request named)."""
    return [r for r in rows if str(r.get(key, "")).strip().lower() == label.strip().lower()]


def rows_of(done: Done | None) -> list[dict[str, Any]]:
    return find_items(done.data) if done is not None and done.ok else []


def asked_fields(ctx: Context, record: dict[str, Any], vocabulary: dict[str, tuple[str, ...]]) -> list[str]:
    """The fields of ``record`` the request asks about: a field whose name, or one of its
    everyday words in ``vocabulary`` ("born" for ``birthday``), is in the request; in the
    request's order."""
    said = terms(ctx.reading.intent)
    found: list[tuple[int, str]] = []
    for name in record:
        names = {*terms(name.replace("_", " ")), *(t for w in vocabulary.get(name, ()) for t in terms(w))}
        places = [i for i, t in enumerate(said) if t in names]
        if places:
            found.append((places[0], name))
    return [name for _, name in sorted(found)]
