"""Tables the built-in tools keep their state in (same database, own migration set).

Migrations are versioned and additive: never edit one that has been applied somewhere;
add the next number instead. Row ids are integers; the tools show them with a prefix
(``sch_3``, ``tsk_4``, ``per_12`` ...), see :data:`ID_PREFIXES`.

``0002_demo_seed`` fills a small, plausible demo dataset (a "Team standup" schedule at
09:00 on weekdays, contacts, calendar events, tasks, notes, remembered facts and newsletter
subscriptions on a work and a personal account) so the offline demo has something to work
on. Every seeded row carries ``demo = 1``. Seeded calendar events, tasks and mail dates are
placed relative to the day the database was created; seeded events and the seeded schedules
have no timezone of their own, which means "the owner's timezone, whatever it is".
"""

from __future__ import annotations

import datetime as dt
import json
import time

from sqlite_utils import Database, Migrations

BUILTIN_SCHEMA = Migrations("deferchat-builtins")

# Table name -> the prefix its ids carry outside the database.
ID_PREFIXES: dict[str, str] = {
    "schedules": "sch",
    "tasks": "tsk",
    "notes": "note",
    "memory_facts": "mem",
    "people": "per",
    "calendar_events": "evt",
    "email_subscriptions": "sub",
    "notifications": "ntf",
}

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


@BUILTIN_SCHEMA(name="0001_tables")
def _m0001(db: Database) -> None:
    # Recurring schedules. time is local HH:MM in `timezone` (NULL: the owner's timezone);
    # days is a JSON list of weekday codes. status: active | paused | cancelled.
    db["schedules"].create({
        "id": int, "title": str, "time": str, "days": str, "timezone": str, "status": str,
        "paused_until": str, "cancel_reason": str, "created_at": float, "updated_at": float,
        "cancelled_at": float, "chat_id": str, "demo": int,
    }, pk="id", not_null={"title", "time", "days", "status"}, defaults={"status": "active", "demo": 0})
    # Every change to a schedule, so a cancelled one is "kept only in history".
    db["schedule_history"].create({
        "id": int, "schedule_id": int, "action": str, "changes": str, "chat_id": str, "call_id": str,
        "at": float,
    }, pk="id", foreign_keys=[("schedule_id", "schedules", "id")])
    db["schedule_history"].create_index(["schedule_id", "id"])

    db["tasks"].create({
        "id": int, "title": str, "notes": str, "due": str, "status": str, "created_at": float,
        "completed_at": float, "chat_id": str, "demo": int,
    }, pk="id", not_null={"title", "status"}, defaults={"status": "open", "demo": 0})
    db["tasks"].create_index(["status", "due"])

    # tags: JSON list of lower-case strings.
    db["notes"].create({
        "id": int, "title": str, "body": str, "tags": str, "created_at": float, "updated_at": float,
        "chat_id": str, "demo": int,
    }, pk="id", not_null={"title"}, defaults={"body": "", "tags": "[]", "demo": 0})
    db["notes"].enable_fts(["title", "body", "tags"], create_triggers=True, tokenize="porter")

    db["memory_facts"].create({
        "id": int, "fact": str, "topic": str, "created_at": float, "chat_id": str, "demo": int,
    }, pk="id", not_null={"fact"}, defaults={"demo": 0})
    db["memory_facts"].enable_fts(["fact", "topic"], create_triggers=True, tokenize="porter")

    # email / phone are the primary ones; other_emails / other_phones are JSON lists.
    db["people"].create({
        "id": int, "name": str, "company": str, "email": str, "other_emails": str, "phone": str,
        "other_phones": str, "birthday": str, "notes": str, "relationship": str, "created_at": float,
        "updated_at": float, "demo": int,
    }, pk="id", not_null={"name"}, defaults={"other_emails": "[]", "other_phones": "[]", "demo": 0})

    # start_local: naive local "YYYY-MM-DDTHH:MM" in `timezone` (NULL: the owner's timezone).
    db["calendar_events"].create({
        "id": int, "title": str, "start_local": str, "duration_minutes": int, "timezone": str,
        "location": str, "attendees": str, "created_at": float, "chat_id": str, "demo": int,
    }, pk="id", not_null={"title", "start_local", "duration_minutes"}, defaults={"attendees": "[]", "demo": 0})
    db["calendar_events"].create_index(["start_local"])

    # status: subscribed | unsubscribed.
    db["email_subscriptions"].create({
        "id": int, "account": str, "list_name": str, "sender": str, "per_month": int,
        "last_message_on": str, "messages_in_inbox": int, "list_unsubscribe": str, "one_click": int,
        "status": str, "unsubscribed_at": float, "archive_existing": int, "archived_messages": int,
        "chat_id": str, "demo": int,
    }, pk="id", not_null={"account", "list_name", "sender", "status"},
        defaults={"status": "subscribed", "demo": 0})

    # The notify.owner outbox. status: queued (no push channel) | delivered | failed.
    db["notifications"].create({
        "id": int, "message": str, "priority": str, "status": str, "channel": str, "attempts": int,
        "last_error": str, "created_at": float, "delivered_at": float, "chat_id": str, "call_id": str,
    }, pk="id", not_null={"message", "status"}, defaults={"attempts": 0})
    db["notifications"].create_index(["status"])


@BUILTIN_SCHEMA(name="0002_demo_seed")
def _m0002(db: Database) -> None:
    seed_demo_data(db, dt.date.today())


def _with(defaults: dict[str, object], rows: list[dict[str, object]]) -> list[dict[str, object]]:
    """Each row with the defaults filled in (insert_all writes NULL for keys a row lacks)."""
    return [{**defaults, **row} for row in rows]


def seed_demo_data(db: Database, today: dt.date) -> None:
    """The offline demo's dataset, with dates placed around ``today``."""
    stamp = round(time.time(), 6)

    def day(offset: int) -> dt.date:
        return today + dt.timedelta(days=offset)

    def at(offset: int, hhmm: str) -> str:
        return f"{day(offset).isoformat()}T{hhmm}"

    weekdays = json.dumps(list(WEEKDAYS[:5]))
    db["schedules"].insert_all(_with(
        {"timezone": None, "status": "active", "created_at": stamp, "updated_at": stamp, "demo": 1},
        [
            {"title": "Team standup", "time": "09:00", "days": weekdays},
            {"title": "Weekly planning", "time": "08:30", "days": json.dumps(["mon"])},
            {"title": "1:1 with Priya", "time": "14:00", "days": json.dumps(["thu"])},
            {"title": "Water the plants", "time": "19:00", "days": json.dumps(["wed", "sun"])},
            {"title": "Gym session", "time": "07:00", "days": json.dumps(["tue", "thu", "sat"]), "status": "paused"},
        ]))

    db["people"].insert_all(_with(
        {"created_at": stamp, "updated_at": stamp, "demo": 1, "other_emails": "[]", "other_phones": "[]",
         "birthday": None, "company": None},
        [
            {"name": "Priya Raman", "company": "Northwind Labs", "email": "priya.raman@northwind.example",
             "phone": "+12025550143", "birthday": "1986-03-14", "relationship": "Manager at work",
             "notes": "Prefers async updates; 1:1 on Thursdays.",
             "other_emails": json.dumps(["priya@raman.example"])},
            {"name": "Sam Okafor", "company": "Northwind Labs", "email": "sam.okafor@northwind.example",
             "phone": "+12025550178", "relationship": "Colleague, backend team", "notes": "Runs the on-call rota."},
            {"name": "Marco Bianchi", "company": "Studio Bianchi", "email": "marco@bianchi.example",
             "phone": "+393405550112", "birthday": "--07-22", "relationship": "Friend from university",
             "notes": "Vegetarian. Owes me a book."},
            {"name": "Alice Chen", "company": "Smile Dental", "email": "frontdesk@smiledental.example",
             "phone": "+12025550190", "relationship": "Dentist", "notes": "Check-ups every six months.",
             "other_phones": json.dumps(["+12025550191"])},
            {"name": "Lena Fischer", "company": None, "email": "lena.fischer@mail.example",
             "phone": "+4915155501234", "birthday": "1992-11-02", "relationship": "Sister",
             "notes": "Lives in Hamburg; likes ceramics and trail running."},
            {"name": "Tom Becker", "company": "Becker Property", "email": "tom@beckerproperty.example",
             "phone": "+12025550155", "relationship": "Landlord", "notes": "Call for repairs, not email."},
        ]))

    db["calendar_events"].insert_all(_with(
        {"timezone": None, "created_at": stamp, "demo": 1, "location": None},
        [
            {"title": "Interview: backend candidate", "start_local": at(-1, "16:00"), "duration_minutes": 45,
             "location": "Video call", "attendees": json.dumps(["sam.okafor@northwind.example"])},
            {"title": "Design review", "start_local": at(0, "11:00"), "duration_minutes": 60, "location": "Room 4B",
             "attendees": json.dumps(["priya.raman@northwind.example", "sam.okafor@northwind.example"])},
            {"title": "Lunch with Marco", "start_local": at(1, "12:30"), "duration_minutes": 60,
             "location": "Café Lindt", "attendees": json.dumps(["marco@bianchi.example"])},
            {"title": "Dentist check-up", "start_local": at(2, "15:00"), "duration_minutes": 45,
             "location": "Smile Dental, 12 Elm Street", "attendees": "[]"},
            {"title": "Quarterly planning", "start_local": at(3, "10:00"), "duration_minutes": 120,
             "location": "Main conference room",
             "attendees": json.dumps(["priya.raman@northwind.example", "sam.okafor@northwind.example"])},
            {"title": "Dinner with Lena", "start_local": at(6, "19:00"), "duration_minutes": 150,
             "location": "Trattoria Sole", "attendees": json.dumps(["lena.fischer@mail.example"])},
        ]))

    db["tasks"].insert_all(_with(
        {"status": "open", "created_at": stamp, "completed_at": None, "demo": 1},
        [
            {"title": "Send Q3 budget draft to Priya", "due": day(1).isoformat(), "notes": "Use the finance template."},
            {"title": "Book flights for the Lisbon offsite", "due": day(7).isoformat(), "notes": "Aisle seat."},
            {"title": "Renew passport", "due": day(21).isoformat(), "notes": "Photos are in the desk drawer."},
            {"title": "Return library books", "due": day(-1).isoformat(), "notes": None},
            {"title": "Buy a present for Lena", "due": day(5).isoformat(),
             "notes": "See the gift ideas note."},
            {"title": "Call the landlord about the radiator", "due": day(-3).isoformat(), "notes": None,
             "status": "done", "completed_at": stamp},
        ]))

    db["notes"].insert_all(_with(
        {"created_at": stamp, "updated_at": stamp, "demo": 1},
        [
            {"title": "Lisbon offsite ideas", "tags": json.dumps(["travel", "work"]),
             "body": "- Half-day workshop on the roadmap\n- Team dinner in Alfama\n- Budget: 400 EUR per person"},
            {"title": "Standup format", "tags": json.dumps(["work"]),
             "body": "Fifteen minutes, round the table: yesterday, today, blockers. Parking lot at the end."},
            {"title": "Gift ideas for Lena", "tags": json.dumps(["personal", "gifts"]),
             "body": "Ceramics class voucher; trail running socks; a book about Japanese pottery."},
            {"title": "Sourdough recipe", "tags": json.dumps(["cooking"]),
             "body": "500 g flour, 350 g water, 100 g starter, 10 g salt. Bulk 5 hours, cold proof overnight."},
            {"title": "Books to read", "tags": json.dumps(["reading"]),
             "body": "The Pragmatic Programmer; Piranesi; A Psalm for the Wild-Built."},
        ]))

    db["memory_facts"].insert_all(_with(
        {"created_at": stamp, "demo": 1},
        [
            {"fact": "My coffee order is an oat milk flat white.", "topic": "food"},
            {"fact": "My dentist is Dr. Alice Chen at Smile Dental.", "topic": "health"},
            {"fact": "I am allergic to penicillin.", "topic": "health"},
            {"fact": "I prefer aisle seats on flights.", "topic": "travel"},
            {"fact": "The team standup is every weekday at 9am.", "topic": "work"},
        ]))

    def sub(account: str, name: str, sender: str, per_month: int, last: int, inbox: int, unsub: str,
            one_click: bool) -> dict[str, object]:
        return {"account": account, "list_name": name, "sender": sender, "per_month": per_month,
                "last_message_on": day(-last).isoformat(), "messages_in_inbox": inbox,
                "list_unsubscribe": unsub, "one_click": int(one_click)}

    db["email_subscriptions"].insert_all(_with(
        {"status": "subscribed", "demo": 1, "archive_existing": 0, "archived_messages": 0},
        [
            sub("work", "Engineering Leadership Weekly", "news@eng-leadership.example", 4, 2, 37,
                "<https://eng-leadership.example/unsub?u=8812>", True),
            sub("work", "Cloud Cost Digest", "digest@cloudcost.example", 8, 1, 64,
                "<https://cloudcost.example/l/unsubscribe/3391>, <mailto:leave@cloudcost.example>", True),
            sub("work", "Northwind Labs announcements", "announce@northwind.example", 6, 0, 52,
                "<mailto:announce-leave@northwind.example>", False),
            sub("work", "DataStack webinar invitations", "events@datastack.example", 12, 3, 88,
                "<https://datastack.example/prefs/unsubscribe?id=aa71>", True),
            sub("work", "SaaS Pricing Insider", "hello@pricinginsider.example", 2, 12, 9,
                "<mailto:unsubscribe@pricinginsider.example?subject=unsubscribe>", False),
            sub("personal", "ShopRight daily deals", "deals@shopright.example", 30, 0, 412,
                "<https://shopright.example/u/unsubscribe/77aa>, <mailto:u@shopright.example>", True),
            sub("personal", "Morning Brief", "brief@morningbrief.example", 22, 0, 180,
                "<https://morningbrief.example/unsubscribe?e=owner>", True),
            sub("personal", "FlyCheap fare alerts", "alerts@flycheap.example", 15, 1, 96,
                "<https://flycheap.example/alerts/stop/5521>", True),
            sub("personal", "Trail Runners Club news", "club@trailrunners.example", 3, 9, 21,
                "<mailto:club-leave@trailrunners.example>", False),
            sub("personal", "Cookbook Corner", "recipes@cookbookcorner.example", 4, 5, 30,
                "<https://cookbookcorner.example/unsubscribe/9d2f>", True),
            sub("personal", "City Library events", "events@citylibrary.example", 1, 20, 6,
                "<mailto:events-unsubscribe@citylibrary.example>", False),
        ]))
