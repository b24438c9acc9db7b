"""The requests someone types in the first minute of the demo, through the real engine with
the demo model, the production roster and the four demo MCP servers (one chat, one turn per
prompt, approvals allowed once).

Each prompt is checked for the tool the demo reaches, the arguments it reaches it with, and
the gist of the answer. Dates are checked against the date ``time.now`` gave in that turn, and
ids against the rows the demo listed first, never against copies of the model's own rules.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from core.chat.session import ChatSession
from core.engine import ChatOptions, Engine
from core.pipeline.approvals import Decision, FixedApprover
from core.store import Store
from tests.helpers import DEVELOPER_ENV

in_one_chat = pytest.mark.asyncio(loop_scope="module")


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
        return dt.datetime.now(dt.UTC).date()


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


def end_of_week(seen: Seen) -> str:
    today = seen.today()
    return (today + dt.timedelta(days=6 - today.weekday())).isoformat()


def row_id(tool: str, key: str, value: str) -> Expect:
    """The id of the row ``tool`` listed in this turn whose ``key`` is ``value``."""

    def find(seen: Seen) -> str:
        data = seen.result_of(tool)
        rows = next(v for v in data.values() if isinstance(v, list))
        return next(r["id"] for r in rows if r[key] == value)

    return find


@dataclass
class Case:
    prompt: str
    tool: str  # the tool the demo reaches in the end
    args: dict[str, Any]  # what it is called with (values or Expect); checked as a subset ...
    gist: list[str]  # ... and these words are in the answer (case-insensitive)
    absent: tuple[str, ...] = ()  # argument names it must not have (a copied cc)
    via: str | None = None  # "tool.call" for a deferred tool on the wrapper
    before: list[str] = field(default_factory=list)  # earlier prompts in the same chat
    also: tuple[str, ...] = ()  # other tools it must have called first
    never: tuple[str, ...] = ()  # tools it must not call


SEND = "mcp.gmail_personal.send_message"
WORK_SEND = "mcp.gmail_work.send_message"

CASES: list[Case] = [
    # -- the calendar
    Case(
        "what's on my calendar tomorrow",
        "calendar.list_events",
        {"start": day(1)},
        ["Lunch with Marco", "tomorrow"],
        absent=("end",),
        also=("time.now",),
    ),
    Case(
        "What is on my calendar?",
        "calendar.list_events",
        {"start": day(0), "end": day(6)},
        ["Design review", "Lunch with Marco", "Dinner with Lena", "next 7 days"],
    ),
    Case("can you show me my agenda for today", "calendar.list_events", {"start": day(0)}, ["Design review", "today"]),
    Case("am I free on friday?", "calendar.list_events", {"start": weekday(4)}, ["Friday"]),
    Case(
        "what meetings do I have this week",
        "calendar.list_events",
        {"start": day(0), "end": end_of_week},
        ["this week"],
    ),
    Case(
        "please add lunch with marco on friday at 1pm to my calendar",
        "calendar.create_event",
        {"title": "Lunch with Marco", "start": weekday(4, "13:00")},
        ["Added", "Lunch with Marco", "13:00"],
    ),
    # -- the inbox
    Case(
        "show my inbox",
        "mcp.gmail_personal.search_threads",
        {"query": "in:inbox"},
        ["work mail", "Invoice INV-2291", "personal mail", "Lease renewal for apartment 4B"],
        also=("mcp.gmail_work.search_threads",),
    ),
    Case(
        "any unread emails in my work inbox?",
        "mcp.gmail_work.search_threads",
        {"query": "in:inbox is:unread"},
        ["4 unread", "Security alert"],
        never=("mcp.gmail_personal.search_threads",),
    ),
    Case("search my work mail for invoice", "mcp.gmail_work.search_threads", {"query": "invoice"}, ["INV-2291"]),
    Case(
        "please read the email about the lease renewal",
        "mcp.gmail_personal.get_thread",
        {},
        ["Lease renewal for apartment 4B", "Your lease ends January 31"],
    ),
    # -- newsletters
    Case(
        "what newsletters am I subscribed to?",
        "email.subscriptions",
        {},
        ["11 newsletters", "ShopRight daily deals"],
        via="tool.call",
    ),
    Case(
        "unsubscribe me from the newsletter",
        "email.subscriptions",
        {},
        ["Which one", "ShopRight daily deals"],
        never=("email.unsubscribe",),
    ),
    Case(
        "the morning brief",
        "email.unsubscribe",
        {"subscription_id": row_id("email.subscriptions", "list", "Morning Brief")},
        ["unsubscribed", "Morning Brief"],
        before=["unsubscribe me from the newsletter"],
        via="tool.call",
    ),
    Case(
        "Unsubscribe me from ShopRight daily deals and archive the old ones",
        "email.unsubscribe",
        {"subscription_id": row_id("email.subscriptions", "list", "ShopRight daily deals"), "archive_existing": True},
        ["ShopRight daily deals", "archived its 412 messages"],
        via="tool.call",
    ),
    # -- tasks
    Case(
        "list my open tasks",
        "tasks.list",
        {"status": "open"},
        ["5 open tasks", "Send Q3 budget draft to Priya", "Renew passport", "Return library books"],
    ),
    Case("Please show me my to-do list", "tasks.list", {"status": "open"}, ["open task", "Book flights"]),
    Case(
        "what do I need to do today?",
        "tasks.list",
        {"status": "open", "due_before": day(1)},
        ["Return library books", "overdue"],
        also=("time.now",),
    ),
    Case(
        "add a task to renew my car insurance by friday",
        "tasks.create",
        {"title": "Renew my car insurance", "due": weekday(4)},
        ["Added", "Renew my car insurance"],
    ),
    Case("remind me to buy milk", "tasks.create", {"title": "Buy milk"}, ["Buy milk"], absent=("due",)),
    Case(
        "mark the library books task as done",
        "tasks.complete",
        {"task_id": row_id("tasks.list", "title", "Return library books")},
        ["Marked", "Return library books"],
    ),
    # -- an email: subject and body from the request, no copied cc
    Case(
        "send an email to sam.okafor@northwind.example saying the deploy is done",
        SEND,
        {
            "to": ["sam.okafor@northwind.example"],
            "subject": "The deploy is done",
            "body": "Hi Sam,\n\nThe deploy is done.\n\nBest regards",
        },
        ["Sent", "The deploy is done"],
        absent=("cc",),
        via="tool.call",
    ),
    Case(
        "Email Priya saying the budget draft is ready",
        WORK_SEND,
        {"to": ["priya.raman@northwind.example"], "subject": "The budget draft is ready"},
        ["Sent", "work mail"],
        absent=("cc",),
        also=("people.search",),
    ),
    Case(
        "email priya about the Q3 budget draft",
        WORK_SEND,
        {"to": ["priya.raman@northwind.example"], "subject": "The Q3 budget draft"},
        ["Sent"],
        absent=("cc",),
    ),
    Case(
        "send a message to Lena about dinner on sunday",
        SEND,
        {"to": ["lena.fischer@mail.example"], "subject": "Dinner on Sunday"},
        ["Sent", "personal mail"],
        absent=("cc",),
    ),
    Case(
        "can you email marco and ask him if he is free for lunch on friday",
        SEND,
        {
            "to": ["marco@bianchi.example"],
            "body": "Hi Marco,\n\nCould you let me know if you are free for lunch on Friday?\n\nBest regards",
        },
        ["Sent"],
        absent=("cc",),
    ),
    Case(
        "write an email to Sam Okafor saying the release moved to Thursday, cc lena.fischer@mail.example",
        WORK_SEND,
        {
            "to": ["sam.okafor@northwind.example"],
            "cc": ["lena.fischer@mail.example"],
            "subject": "The release moved to Thursday",
        },
        ["Sent"],
    ),
    Case(
        "tell sam that the deploy is done",
        WORK_SEND,
        {"to": ["sam.okafor@northwind.example"], "subject": "The deploy is done"},
        ["Sent"],
        absent=("cc",),
    ),
    Case(
        "draft an email to marco@bianchi.example with the subject Book club and say I finished the book",
        "mcp.gmail_personal.create_draft",
        {
            "to": ["marco@bianchi.example"],
            "subject": "Book club",
            "body": "Hi Marco,\n\nI finished the book.\n\nBest regards",
        },
        ["draft", "Book club"],
        never=(SEND,),
    ),
    # -- contacts, the time, memory, notes, calls, schedules
    Case("what time is it", "time.now", {}, ["It is"]),
    Case("what's Priya's phone number?", "people.search", {"query": "priya"}, ["+12025550143"]),
    Case("what's Lena's email address", "people.search", {"query": "lena"}, ["lena.fischer@mail.example"]),
    Case(
        "remember that my gym locker is number 42",
        "memory.save",
        {"fact": "My gym locker is number 42."},
        ["Saved to memory", "gym locker"],
    ),
    Case("what's my coffee order", "memory.search", {"query": "coffee order"}, ["oat milk flat white"]),
    Case("search my notes for sourdough", "notes.search", {"query": "sourdough"}, ["Sourdough recipe"]),
    Case("take a note: buy more flour and yeast", "notes.create", {"body": "Buy more flour and yeast."}, ["Saved"]),
    Case("show my recent calls", "mcp.bland_read.list_calls", {}, ["calls, latest first", "Acme Supplies"]),
    Case("list my schedules", "schedule.list", {}, ["Team standup", "Water the plants"]),
    # -- the README's and the empty chat's examples
    Case(
        "move my 9am standup to 10am",
        "schedule.update",
        {"schedule_id": "sch_1", "time": "10:00"},
        ["09:00 \u2192 10:00"],
        via="tool.call",
        also=("schedule.list",),
    ),
    Case(
        "start a call to +1 555 0100 about the invoice",
        "mcp.bland_call.start_call",
        {"phone_number": "+15550100", "task": "the invoice"},
        ["Call queued"],
        via="tool.call",
    ),
]


@pytest.fixture(scope="module")
def demo_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The shared ``home`` fixture, for the whole module: one chat serves every case."""
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DEFERCHAT_HOME", str(home))
        mp.setenv("TZ", "UTC")
        for var in DEVELOPER_ENV:
            mp.delenv(var, raising=False)
        yield home


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def chat(demo_home: Path) -> Any:
    events: list[Any] = []
    engine = Engine(Store(demo_home / "deferchat.db"))
    session = await engine.open_chat(
        None,
        ChatOptions(roster="production", provider="demo", start_demo_servers=True),
        approver=FixedApprover(Decision.ALLOW_ONCE),
        subscribers=[events.append],
    )
    assert {s.server: s.status for s in session.server_status.values()} == dict.fromkeys(
        ("bland_call", "bland_read", "gmail_personal", "gmail_work"), "ready"
    )
    yield session, events
    await session.close()


async def ask(chat: tuple[ChatSession, list[Any]], prompt: str) -> Seen:
    session, events = chat
    events.clear()
    result = await session.send(prompt)
    assert result.status == "done", (prompt, result)
    return Seen(list(events), result.text)


def test_at_least_thirty_prompts() -> None:
    assert len(CASES) >= 30 and len({c.prompt for c in CASES}) == len(CASES)


@in_one_chat
@pytest.mark.parametrize("case", CASES, ids=[c.prompt for c in CASES])
async def test_prompt(chat: tuple[ChatSession, list[Any]], case: Case) -> None:
    for earlier in case.before:
        await ask(chat, earlier)
    seen = await ask(chat, case.prompt)
    calls = [e.name for e in seen.events if e.type == "tool.requested"]
    reached = seen.requested(case.tool)
    assert reached, f"{case.prompt!r} never reached {case.tool}; it called {calls}"
    call = reached[-1]
    for name in case.also:
        assert name in calls[: calls.index(case.tool)], (case.prompt, calls)
    for name in case.never:
        assert name not in calls, (case.prompt, calls)
    if case.via is not None:
        assert call.via == case.via, (case.prompt, call.via)
    args = call.arguments
    for key, want in case.args.items():
        expected = want(seen) if callable(want) else want
        assert args.get(key) == expected, (case.prompt, key, args)
    for key in case.absent:
        assert key not in args, (case.prompt, key, args)
    failed = [e for e in seen.events if e.type in ("tool.failed", "tool.denied")]
    assert not failed, (case.prompt, [(e.name, e.code, e.message) for e in failed])
    for words in case.gist:
        assert words.lower() in seen.text.lower(), (case.prompt, words, seen.text)
