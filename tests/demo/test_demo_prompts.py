"""The requests someone types in the first minute of the demo (tests/demo/harness.py runs them:
one chat through the real engine with the demo model, the production roster and the four demo
MCP servers, one turn per prompt, approvals allowed once).

Each prompt is checked for the tool the demo reaches, the arguments it reaches it with, and
the gist of the answer.
"""

from __future__ import annotations

from typing import Any

import pytest

from core.chat.session import ChatSession
from tests.demo.harness import (
    DECLINE,
    SEARCH_WORK,
    SEND,
    WORK_SEND,
    Case,
    check,
    day,
    day_at,
    end_of_week,
    in_one_chat,
    row_id,
    row_id_of_thread,
    weekday,
)

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
    Case("what's Priya's phone number?", "people.search", {"query": "Priya Raman"}, ["+12025550143"]),
    Case("what's Lena's email address", "people.search", {"query": "Lena Fischer"}, ["lena.fischer@mail.example"]),
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


WORK_REPLY = WORK_SEND
CASES += [
    # -- the examples
    Case("what time is it in Tokyo?", "time.now", {"timezone": "Asia/Tokyo"}, ["It is 18:", "Tokyo"]),
    Case(
        "what files are in my Documents folder?",
        "workspace.search",
        {"glob": "Documents/*"},
        ["Passport renewal checklist.md", "Q3 budget draft.csv"],
        never=("calendar.list_events",),
    ),
    Case(
        "find the email from Acme Supplies about the overdue invoice and reply that we paid it yesterday",
        WORK_REPLY,
        {
            "to": ["billing@acme-supplies.example"],
            "subject": "Re: Invoice INV-2291 is 10 days overdue",
            "body": "Hello,\n\nWe paid it yesterday.\n\nBest regards",
        },
        ["Replied", "billing@acme-supplies.example", "work mail"],
        via="tool.call",
        also=(SEARCH_WORK, "mcp.gmail_work.get_thread"),
        never=(SEND,),
    ),
    Case(
        "what does the interview feedback email about Jordan Ellis say?",
        "mcp.gmail_work.get_thread",
        {},
        ["Please submit your feedback for Jordan Ellis"],
        also=(SEARCH_WORK,),
    ),
    Case(
        "remember that I prefer aisle seats on flights",
        "memory.search",
        {},
        ["already had that", "aisle seats"],
        never=("memory.save",),
    ),
    Case(
        "remind me to call mom at 6pm today",
        "calendar.create_event",
        {"title": "Call mom", "start": day_at(0, "18:00")},
        ["Call mom", "18:00"],
        never=("tasks.create",),
    ),
    Case(
        "unsubscribe me from the newsletter from Metrics Bot",
        "email.subscriptions",
        {},
        ["Metrics Bot isn't one of your newsletters"],
        never=("email.unsubscribe",),
    ),
    # -- the time elsewhere, and places it does not know
    Case("what's the time in London", "time.now", {"timezone": "Europe/London"}, ["It is 09:", "London"]),
    Case("what time is it in New York right now?", "time.now", {"timezone": "America/New_York"}, ["It is 04:"]),
    Case("what time is it in Europe/Berlin?", "time.now", {"timezone": "Europe/Berlin"}, ["It is 10:"]),
    Case("what's today's date", "time.now", {}, ["2026-12-02", "Wednesday"]),
    # -- files
    Case("show me the files in my Downloads folder", "workspace.search", {"glob": "Downloads/*"}, ["ZX81QK"]),
    Case(
        "open the passport renewal checklist",
        "workspace.read_file",
        {"path": "Documents/Passport renewal checklist.md"},
        ["Two photos"],
    ),
    Case(
        "save a file called groceries.txt with eggs, milk and bread",
        "workspace.write_file",
        {"path": "groceries.txt", "content": "eggs, milk and bread\n"},
        ["Saved", "groceries.txt"],
        never=("memory.save", "notes.create"),
    ),
    Case("read groceries.txt", "workspace.read_file", {"path": "groceries.txt"}, ["eggs, milk and bread"]),
    # -- contacts: the detail asked for
    Case("where does Sam work?", "people.search", {"query": "Sam Okafor"}, ["Northwind Labs"]),
    Case("who is Tom Becker?", "people.get", {}, ["Landlord", "Harbor Property"]),
    Case("what's my mom's phone number", "people.search", {}, ["Maria Rivera", "+12025550177"]),
    Case("when is Lena's birthday?", "people.get", {}, ["1992-11-02"]),
    Case("how do I reach my landlord by email", "people.search", {}, ["tom.becker@harborproperty.example"]),
    # -- the calendar: one event's facts
    Case("how long is the quarterly planning meeting?", "calendar.list_events", {}, ["2 hours"]),
    Case("where is the dentist check-up?", "calendar.list_events", {}, ["Smile Dental, 12 Elm Street"]),
    Case("when is dinner with Lena?", "calendar.list_events", {}, ["Tuesday 2026-12-08", "19:00"]),
    Case("what do I have tomorrow?", "calendar.list_events", {"start": day(1)}, ["Lunch with Marco"]),
    Case(
        "book a dentist appointment for Friday at 3pm",
        "calendar.create_event",
        {"start": weekday(4, "15:00")},
        ["Added", "15:00"],
    ),
    # -- schedules: one named schedule, or a question
    Case("when is my 1:1 with Priya?", "schedule.list", {}, ["14:00", "thu"]),
    Case("pause the gym session schedule", "schedule.list", {}, ["already paused"], never=("schedule.pause",)),
    Case(
        "cancel my schedule", "schedule.list", {}, ["Which one do you mean", "Team standup"], never=("schedule.cancel",)
    ),
    Case(
        "resume gym session",
        "schedule.resume",
        {"schedule_id": row_id("schedule.list", "title", "Gym session")},
        ["Resumed", "Gym session"],
        via="tool.call",
    ),
    Case(
        "cancel the plant watering schedule",
        "schedule.cancel",
        {"schedule_id": row_id("schedule.list", "title", "Water the plants")},
        ["Cancelled", "Water the plants"],
        via="tool.call",
    ),
    # -- tasks
    Case("what's overdue?", "tasks.list", {}, ["Nothing is overdue"]),  # the library books are done by now
    Case("add buy stamps to my to-do list", "tasks.create", {"title": "Buy stamps"}, ["Buy stamps"]),
    # -- mail: threads the words name, bills, forwarding
    Case("any emails from Smile Dental?", "mcp.gmail_personal.search_threads", {}, ["dental check-up"]),
    Case(
        "what bills do I have to pay?",
        "mcp.gmail_personal.search_threads",
        {"query": "bill"},
        ["Electricity bill for November", "Invoice INV-2291"],
        also=(SEARCH_WORK,),
    ),
    Case(
        "forward the flight confirmation to Lena",
        WORK_REPLY,
        {"to": ["lena.fischer@mail.example"], "subject": "Fwd: Your flight to Chicago is confirmed"},
        ["Forwarded", "lena.fischer@mail.example"],
        also=("mcp.gmail_work.get_thread", "people.search"),
    ),
    Case(
        "reply to Dana saying the renewal terms are attached",
        WORK_REPLY,
        {"to": ["dana@globex.example"], "reply_to_thread_id": row_id_of_thread("Contract renewal: Globex")},
        ["Replied", "dana@globex.example"],
    ),
    Case("reply to it", "", {}, ["Which email"], never=(WORK_REPLY, SEND)),
    Case(
        "unsubscribe me from Cookbook Corner",
        "email.unsubscribe",
        {"subscription_id": row_id("email.subscriptions", "list", "Cookbook Corner")},
        ["unsubscribed", "Cookbook Corner"],
    ),
    # -- notes and calls
    Case("what's in my sourdough recipe note?", "notes.search", {"query": "Sourdough recipe"}, ["Sourdough recipe"]),
    Case("call the dentist", "", {}, ["What should the call"], never=("mcp.bland_call.start_call",)),
    Case(
        "call the dentist about moving my check-up",
        "mcp.bland_call.start_call",
        {"phone_number": "+12025550190"},
        ["Call queued"],
        before=[],
    ),
    # -- asks it must decline
    Case("what's the weather in Paris?", "web.search", {}, ["searxng_url", DECLINE]),
    Case("write me a poem about autumn", "", {}, [DECLINE], never=(SEND, WORK_SEND, "notes.create")),
    Case("tell me a joke", "", {}, [DECLINE]),
    Case("what time is it in San Francisco?", "", {}, ["America/Los_Angeles", DECLINE], never=("time.now",)),
]


def test_at_least_eighty_prompts() -> None:
    assert len(CASES) >= 80 and len({c.prompt for c in CASES}) == len(CASES)


@in_one_chat
@pytest.mark.parametrize("case", CASES, ids=[c.prompt for c in CASES])
async def test_prompt(chat: tuple[ChatSession, list[Any]], case: Case) -> None:
    await check(chat, case)
