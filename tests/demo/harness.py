"""What the demo prompt sets share: one chat through the real engine with the demo model, the
production roster and the four demo MCP servers (one turn per prompt, approvals allowed once,
the demo's clock pinned), and how a case is checked.

Each prompt is checked for the tool the demo reaches, the arguments it reaches it with, and
the gist of the answer. Dates are checked against the date ``time.now`` gave in that turn, and
ids against the rows the demo listed first, never against copies of the model's own rules.
The ``chat`` fixture (tests/demo/conftest.py) is module-scoped: one chat, one demo database per
module.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from core.chat.session import ChatSession

in_one_chat = pytest.mark.asyncio(loop_scope="module")
NOW = "2026-12-02T09:30:00+00:00"  # a Wednesday morning; the pinned clock runs on with the process,
# so a time of day in an answer is checked to the hour ("It is 18:"), never to the minute
SEND = "mcp.gmail_personal.send_message"
WORK_SEND = "mcp.gmail_work.send_message"
SEARCH_WORK = "mcp.gmail_work.search_threads"
SEARCH_PERSONAL = "mcp.gmail_personal.search_threads"
DECLINE = "real model"  # what an answer names when the demo cannot do a thing


@dataclass
class Seen:
    """One turn as the test sees it: its events and the answer's text."""

    events: list[Any]
    text: str

    def requested(self, name: str) -> list[Any]:
        return [e for e in self.events if e.type == "tool.requested" and e.name == name]

    def result_of(self, name: str) -> Any:
        done = [e for e in self.events if e.type == "tool.completed" and e.name == name]
        assert done, f"{name} did not complete; calls: {[e.name for e in self.events if e.type == 'tool.requested']}"
        result = done[-1].result
        return json.loads(result) if isinstance(result, str) else result

    def today(self) -> dt.date:
        clock = [e for e in self.events if e.type == "tool.completed" and e.name == "time.now"]
        if clock:
            return dt.date.fromisoformat(self.result_of("time.now")["date"])
        return dt.datetime.fromisoformat(NOW).date()


Expect = Callable[[Seen], Any]  # an expected argument worked out from what the turn saw


def day(offset: int) -> Expect:
    return lambda seen: (seen.today() + dt.timedelta(days=offset)).isoformat()


def weekday(number: int, at: str = "") -> Expect:
    """The next such weekday (today counts), as a date, with ``at`` as its time of day."""

    def value(seen: Seen) -> str:
        today = seen.today()
        date = (today + dt.timedelta(days=(number - today.weekday()) % 7)).isoformat()
        return f"{date}T{at}" if at else date

    return value


def day_at(offset: int, at: str) -> Expect:
    return lambda seen: f"{(seen.today() + dt.timedelta(days=offset)).isoformat()}T{at}"


def row_id_of_thread(subject: str) -> Expect:
    """The id of the thread with ``subject`` that a search in this turn listed."""

    def find(seen: Seen) -> str:
        for e in seen.events:
            if e.type == "tool.completed" and e.name.endswith(".search_threads"):
                data = json.loads(e.result) if isinstance(e.result, str) else e.result
                for t in data["threads"]:
                    if t["subject"] == subject:
                        return str(t["thread_id"])
        raise AssertionError(f"no search listed {subject!r}")

    return find


def end_of_week(seen: Seen) -> str:
    today = seen.today()
    return (today + dt.timedelta(days=6 - today.weekday())).isoformat()


def row_id(tool: str, key: str, value: str) -> Expect:
    """The id of the row ``tool`` listed in this turn whose ``key`` is ``value``."""

    def find(seen: Seen) -> str:
        data = seen.result_of(tool)
        rows = next((v for v in data.values() if isinstance(v, list)), [])
        found = [r["id"] for r in rows if r.get(key) == value]
        assert found, f"{tool} listed no row whose {key} is {value!r}"
        return found[0]

    return find


def contains(*parts: str) -> Expect:
    """Matches a string argument that contains each of ``parts`` (case-insensitive)."""

    class Contains:
        def __init__(self) -> None:
            self.parts = parts

        def __eq__(self, other: object) -> bool:
            return isinstance(other, str) and all(p.lower() in other.lower() for p in parts)

        def __repr__(self) -> str:
            return f"contains{parts!r}"

    return lambda seen: Contains()


@dataclass
class Case:
    prompt: str
    tool: str | tuple[str, ...]  # the tool the demo reaches in the end (any of several; "" for an ask it declines)
    args: dict[str, Any]  # what it is called with (values or Expect); checked as a subset ...
    gist: list[str]  # ... and these words are in the answer (case-insensitive)
    absent: tuple[str, ...] = ()  # argument names it must not have (a copied cc)
    via: str | None = None  # "tool.call" for a deferred tool on the wrapper
    before: list[str] = field(default_factory=list)  # earlier prompts in the same chat
    also: tuple[str, ...] = ()  # other tools it must have called first
    never: tuple[str, ...] = ()  # tools it must not call


async def ask(chat: tuple[ChatSession, list[Any]], prompt: str) -> Seen:
    session, events = chat
    events.clear()
    result = await session.send(prompt)
    assert result.status == "done", (prompt, result)
    return Seen(list(events), result.text)


async def check(chat: tuple[ChatSession, list[Any]], case: Case) -> None:
    """Ask ``case``'s earlier prompts, then its own, and check what the demo did."""
    for earlier in case.before:
        await ask(chat, earlier)
    seen = await ask(chat, case.prompt)
    calls = [e.name for e in seen.events if e.type == "tool.requested"]
    for name in case.never:
        assert name not in calls, (case.prompt, calls)
    if not case.tool:  # an ask it declines: no tool at all, and the answer says why
        assert not calls, (case.prompt, calls)
        for words in case.gist:
            assert words.lower() in seen.text.lower(), (case.prompt, words, seen.text)
        return
    wanted = (case.tool,) if isinstance(case.tool, str) else case.tool
    tool = next((name for name in wanted if seen.requested(name)), wanted[0])
    reached = seen.requested(tool)
    assert reached, f"{case.prompt!r} never reached {case.tool}; it called {calls}"
    call = reached[-1]
    for name in case.also:
        assert name in calls[: calls.index(tool)], (case.prompt, calls)
    if case.via is not None:
        assert call.via == case.via, (case.prompt, call.via)
    args = call.arguments
    for key, want in case.args.items():
        expected = want(seen) if callable(want) else want
        assert expected == args.get(key), (case.prompt, key, args)
    for key in case.absent:
        assert key not in args, (case.prompt, key, args)
    failed = [e for e in seen.events if e.type in ("tool.failed", "tool.denied") and e.name != "web.search"]
    assert not failed, (case.prompt, [(e.name, e.code, e.message) for e in failed])
    for words in case.gist:
        assert words.lower() in seen.text.lower(), (case.prompt, words, seen.text)
