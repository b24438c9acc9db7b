"""Other phrasings of the asks tests/demo/test_demo_prompts.py covers: other verbs and word
orders, politeness and its absence, lower case and the typos people make, follow-ups in one
chat. Written before the demo's intent selection was made general, and kept free of per-phrase
rules: a phrasing here passes because the mechanism (tool search over the chat's own tools, the
fit of each tool's parameters with what the request names in the demo's data) reads it, not
because a pattern was added for it.

Same harness as the first set (tests/demo/harness.py): one chat, the real engine, the demo
servers, the demo's clock pinned to a Wednesday morning (2026-12-02 09:30 UTC).
"""

from __future__ import annotations

from typing import Any

import pytest

from core.chat.session import ChatSession
from tests.demo.harness import (
    DECLINE,
    SEARCH_PERSONAL,
    SEARCH_WORK,
    SEND,
    WORK_SEND,
    Case,
    check,
    contains,
    day,
    day_at,
    in_one_chat,
    row_id,
    row_id_of_thread,
    weekday,
)

PERSONAL_THREAD = "mcp.gmail_personal.get_thread"
WORK_THREAD = "mcp.gmail_work.get_thread"
START_CALL = "mcp.bland_call.start_call"

CASES: list[Case] = [
    # -- the calendar
    Case("anything on for tomorrow?", "calendar.list_events", {"start": day(1)}, ["Lunch with Marco"]),
    Case("Do I have any meetings today", "calendar.list_events", {"start": day(0)}, ["Design review"]),
    Case("whats happening on friday", "calendar.list_events", {"start": weekday(4)}, ["Dentist check-up"]),
    Case(
        "put coffee with Priya in my calendar tomorrow at 10am",
        "calendar.create_event",
        {"title": "Coffee with Priya", "start": day_at(1, "10:00")},
        ["Coffee with Priya", "10:00"],
        never=("schedule.create", "tasks.create"),
    ),
    Case("how long does the design review take?", "calendar.list_events", {}, ["1 hour"]),
    Case("where's lunch with marco", "calendar.list_events", {}, ["Café Lindt"]),
    Case("whens the quarterly planning", "calendar.list_events", {}, ["10:00"]),
    # -- the inbox and one thread
    Case(
        "check my email",
        SEARCH_PERSONAL,
        {},
        ["Invoice INV-2291", "Lease renewal for apartment 4B"],
        also=(SEARCH_WORK,),
    ),
    Case(
        "do I have new mail at work?",
        SEARCH_WORK,
        {"query": contains("is:unread")},
        ["unread"],
        never=(SEARCH_PERSONAL,),
    ),
    Case("show me the message from Marco", PERSONAL_THREAD, {}, ["bring the book"], never=(SEND,)),
    Case("what did Tom Becker write about the lease?", PERSONAL_THREAD, {}, ["January 31"]),
    # the mail from the landlord and the lease document both say it: either is the right place to look
    Case("When does my lease end?", (PERSONAL_THREAD, "workspace.read_file"), {}, ["January 31"]),
    Case("any bills I need to pay?", SEARCH_PERSONAL, {}, ["Electricity bill for November"]),
    Case(
        "don't send anything, just show me what Dana wrote",
        WORK_THREAD,
        {},
        ["updated support SLA"],
        never=(WORK_SEND, SEND),
    ),
    # -- replies, forwards and new mail
    Case(
        "pls reply to the acme invoice email and tell them it was paid on monday",
        WORK_SEND,
        {
            "to": ["billing@acme-supplies.example"],
            "reply_to_thread_id": row_id_of_thread("Invoice INV-2291 is 10 days overdue"),
            "body": contains("paid on monday"),
        },
        ["Replied"],
        never=(SEND,),
    ),
    Case(
        "send lena the flight confirmation email",
        WORK_SEND,
        {"to": ["lena.fischer@mail.example"], "subject": "Fwd: Your flight to Chicago is confirmed"},
        ["lena.fischer@mail.example"],
    ),
    Case(
        "write to Sam Okafor and let him know the build is green",
        WORK_SEND,
        {"to": ["sam.okafor@northwind.example"], "body": contains("the build is green")},
        ["Sent"],
        absent=("cc",),
    ),
    Case(
        "shoot marco an email asking whether he still has my book",
        SEND,
        {"to": ["marco@bianchi.example"], "body": contains("still ha", "book")},
        ["Sent"],
    ),
    Case("email Lena", "", {}, ["What should the email"], never=(SEND, WORK_SEND)),
    Case(
        "tell her dinner is at 7",
        SEND,
        {"to": ["lena.fischer@mail.example"], "body": contains("dinner is at 7")},
        ["Sent"],
        before=[],
    ),
    # -- newsletters
    Case("which mailing lists am I on?", "email.subscriptions", {}, ["11 newsletters"]),
    Case(
        "stop sending me the FlyCheap fare alerts",
        "email.unsubscribe",
        {"subscription_id": row_id("email.subscriptions", "list", "FlyCheap fare alerts")},
        ["unsubscribed", "FlyCheap fare alerts"],
    ),
    Case(
        "i dont want the cloud cost digest anymore",
        "email.unsubscribe",
        {"subscription_id": row_id("email.subscriptions", "list", "Cloud Cost Digest")},
        ["Cloud Cost Digest"],
    ),
    Case("unsubscribe me from a newsletter", "email.subscriptions", {}, ["Which one"], never=("email.unsubscribe",)),
    Case(
        "the cookbook one",
        "email.unsubscribe",
        {"subscription_id": row_id("email.subscriptions", "list", "Cookbook Corner")},
        ["Cookbook Corner"],
    ),
    # -- tasks
    Case("what's on my todo list?", "tasks.list", {"status": "open"}, ["Renew passport"]),
    Case("is anything overdue", "tasks.list", {}, ["Return library books"]),
    Case(
        "I returned the library books, tick that off",
        "tasks.complete",
        {"task_id": row_id("tasks.list", "title", "Return library books")},
        ["Return library books"],
    ),
    Case(
        "put call the plumber on my list for tomorrow",
        "tasks.create",
        {"title": "Call the plumber", "due": day(1)},
        ["Call the plumber"],
        never=(START_CALL,),
    ),
    Case(
        "remind me to water the garden on saturday",
        "tasks.create",
        {"title": "Water the garden", "due": weekday(5)},
        ["Water the garden"],
        never=("schedule.pause", "schedule.cancel", "schedule.update"),
    ),
    # -- contacts
    Case("who does Marco work for?", "people.search", {"query": "Marco Bianchi"}, ["Studio Bianchi"]),
    Case("give me Sam Okafor's number", "people.search", {"query": "Sam Okafor"}, ["+12025550178"]),
    Case("what's the dentist's phone number?", "people.search", {}, ["+12025550190"]),
    Case("when was Priya born", "people.get", {}, ["1986-03-14"]),
    Case("how can I contact my brother", "people.search", {"query": "Alex Rivera"}, ["Alex Rivera"]),
    # -- the time
    Case("what's the time in tokyo right now", "time.now", {"timezone": "Asia/Tokyo"}, ["It is 18:"]),
    Case("what time is it over in Sydney?", "time.now", {"timezone": "Australia/Sydney"}, ["It is 20:"]),
    Case("tell me the date", "time.now", {}, ["2026-12-02"]),
    # -- memory
    Case("do you remember how I take my coffee?", "memory.search", {}, ["oat milk flat white"]),
    Case("am I allergic to anything?", "memory.search", {}, ["penicillin"]),
    Case(
        "please remember my bike lock code is 4417",
        "memory.save",
        {"fact": contains("bike lock code is 4417")},
        ["Saved to memory"],
        never=("notes.create", "workspace.write_file"),
    ),
    # -- notes
    Case("what did I write down about sourdough?", "notes.search", {}, ["Sourdough recipe"]),
    # notes.search shows a snippet, and no tool of the roster reads a whole note: the demo says so
    Case("show me my gift ideas for Lena", "notes.search", {}, ["Gift ideas for Lena", "reads a whole note"]),
    Case(
        "jot down: ask Priya about the offsite budget",
        "notes.create",
        {"body": contains("ask Priya about the offsite budget")},
        ["Saved"],
        never=(WORK_SEND, SEND),
    ),
    # -- files
    Case("list everything in Downloads", "workspace.search", {"glob": "Downloads/*"}, ["Flight confirmation ZX81QK"]),
    Case(
        "open my lease document",
        "workspace.read_file",
        {"path": "Documents/Lease apartment 4B.txt"},
        ["January 31"],
    ),
    Case(
        "make a file packing.txt containing passport, charger",
        "workspace.write_file",
        {"path": "packing.txt", "content": "passport, charger\n"},
        ["packing.txt"],
        never=("memory.save", "notes.create"),
    ),
    # -- schedules
    Case("what time's the weekly planning?", "schedule.list", {}, ["08:30"]),
    Case(
        "put the standup on hold",
        "schedule.pause",
        {"schedule_id": row_id("schedule.list", "title", "Team standup")},
        ["Paused", "Team standup"],
    ),
    Case(
        "turn the gym schedule back on",
        "schedule.resume",
        {"schedule_id": row_id("schedule.list", "title", "Gym session")},
        ["Resumed", "Gym session"],
    ),
    Case(
        "push my weekly planning to 9:30",
        "schedule.update",
        {"schedule_id": row_id("schedule.list", "title", "Weekly planning"), "time": "09:30"},
        ["08:30 \u2192 09:30"],
    ),
    Case("cancel a schedule", "schedule.list", {}, ["Which"], never=("schedule.cancel",)),
    Case(
        "the plant watering one",
        "schedule.cancel",
        {"schedule_id": row_id("schedule.list", "title", "Water the plants")},
        ["Water the plants"],
    ),
    # -- calls
    Case(
        "ring the landlord about the radiator",
        START_CALL,
        {"phone_number": "+12025550155", "task": contains("radiator")},
        ["Call queued"],
    ),
    Case("what calls have I made lately?", "mcp.bland_read.list_calls", {}, ["Acme Supplies"]),
    Case("phone Smile Dental", "", {}, ["What should the call"], never=(START_CALL,)),
    # -- asks it must decline
    Case("what's the weather like tomorrow", "web.search", {}, ["searxng_url"]),
    Case("write me a haiku about email", "", {}, [DECLINE], never=(SEND, WORK_SEND)),
    Case("what time is it in Springfield?", "", {}, [DECLINE], never=("time.now",)),
]


def test_at_least_forty_phrasings() -> None:
    assert len(CASES) >= 40 and len({c.prompt for c in CASES}) == len(CASES)


@in_one_chat
@pytest.mark.parametrize("case", CASES, ids=[c.prompt for c in CASES])
async def test_phrasing(chat: tuple[ChatSession, list[Any]], case: Case) -> None:
    await check(chat, case)
