"""Tables the built-in tools keep their state in (same database, own migration set).

Migrations are versioned and additive: never edit one that has been applied somewhere;
add the next number instead. Row ids are integers; the tools show them with a prefix
(``sch_3``, ``tsk_4``, ``per_12`` ...), see :data:`ID_PREFIXES`.

Every table has a ``demo`` column (0 for rows the tools write). Demo rows (``demo = 1``)
live only in the demo's own database, seeded by :mod:`core.demo.dataset`; a user's real
database never holds any. These migrations run on the demo database too (before its seed).

History of the set, because one migration is no longer in it:

- ``0001_tables``: the tables.
- ``0002_demo_seed`` (removed): earlier versions seeded the offline demo's dataset (a "Team
  standup" schedule, contacts, events, tasks, notes, facts, newsletter subscriptions) into
  *every* database, real ones included. It is gone from the set, so a new database never
  runs it. A database that ran it keeps its record in ``_sqlite_migrations``; sqlite-utils
  only applies the registered names that are not recorded, so the missing name is harmless.
- ``0003_remove_demo_rows``: deletes what ``0002_demo_seed`` wrote (every row with
  ``demo = 1``) from a database that ran it, and the history of changes made to those
  seeded schedules. The owner's own rows (``demo = 0``) are kept. A seeded row the owner
  edited is still a demo row and goes too. On a new database it deletes nothing.
- ``0004_browser_pages``: the browser tools' current page, one row per chat (see
  :mod:`core.builtins.browser`). Earlier versions made this table on first use, its column
  types inferred from the first row written and without a ``demo`` column; a database that
  has it that way keeps its rows, gains ``demo`` (0) and gets the declared types and
  constraints (sqlite-utils' ``transform``, which copies the rows into the new table).
"""

from __future__ import annotations

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
    db.table("schedules").create(
        {
            "id": int,
            "title": str,
            "time": str,
            "days": str,
            "timezone": str,
            "status": str,
            "paused_until": str,
            "cancel_reason": str,
            "created_at": float,
            "updated_at": float,
            "cancelled_at": float,
            "chat_id": str,
            "demo": int,
        },
        pk="id",
        not_null={"title", "time", "days", "status"},
        defaults={"status": "active", "demo": 0},
    )
    # Every change to a schedule, so a cancelled one is "kept only in history".
    db.table("schedule_history").create(
        {
            "id": int,
            "schedule_id": int,
            "action": str,
            "changes": str,
            "chat_id": str,
            "call_id": str,
            "at": float,
        },
        pk="id",
        foreign_keys=[("schedule_id", "schedules", "id")],
    )
    db.table("schedule_history").create_index(["schedule_id", "id"])

    db.table("tasks").create(
        {
            "id": int,
            "title": str,
            "notes": str,
            "due": str,
            "status": str,
            "created_at": float,
            "completed_at": float,
            "chat_id": str,
            "demo": int,
        },
        pk="id",
        not_null={"title", "status"},
        defaults={"status": "open", "demo": 0},
    )
    db.table("tasks").create_index(["status", "due"])

    # tags: JSON list of lower-case strings.
    db.table("notes").create(
        {
            "id": int,
            "title": str,
            "body": str,
            "tags": str,
            "created_at": float,
            "updated_at": float,
            "chat_id": str,
            "demo": int,
        },
        pk="id",
        not_null={"title"},
        defaults={"body": "", "tags": "[]", "demo": 0},
    )
    db.table("notes").enable_fts(["title", "body", "tags"], create_triggers=True, tokenize="porter")

    db.table("memory_facts").create(
        {
            "id": int,
            "fact": str,
            "topic": str,
            "created_at": float,
            "chat_id": str,
            "demo": int,
        },
        pk="id",
        not_null={"fact"},
        defaults={"demo": 0},
    )
    db.table("memory_facts").enable_fts(["fact", "topic"], create_triggers=True, tokenize="porter")

    # email / phone are the primary ones; other_emails / other_phones are JSON lists.
    db.table("people").create(
        {
            "id": int,
            "name": str,
            "company": str,
            "email": str,
            "other_emails": str,
            "phone": str,
            "other_phones": str,
            "birthday": str,
            "notes": str,
            "relationship": str,
            "created_at": float,
            "updated_at": float,
            "demo": int,
        },
        pk="id",
        not_null={"name"},
        defaults={"other_emails": "[]", "other_phones": "[]", "demo": 0},
    )

    # start_local: naive local "YYYY-MM-DDTHH:MM" in `timezone` (NULL: the owner's timezone).
    db.table("calendar_events").create(
        {
            "id": int,
            "title": str,
            "start_local": str,
            "duration_minutes": int,
            "timezone": str,
            "location": str,
            "attendees": str,
            "created_at": float,
            "chat_id": str,
            "demo": int,
        },
        pk="id",
        not_null={"title", "start_local", "duration_minutes"},
        defaults={"attendees": "[]", "demo": 0},
    )
    db.table("calendar_events").create_index(["start_local"])

    # status: subscribed | unsubscribed.
    db.table("email_subscriptions").create(
        {
            "id": int,
            "account": str,
            "list_name": str,
            "sender": str,
            "per_month": int,
            "last_message_on": str,
            "messages_in_inbox": int,
            "list_unsubscribe": str,
            "one_click": int,
            "status": str,
            "unsubscribed_at": float,
            "archive_existing": int,
            "archived_messages": int,
            "chat_id": str,
            "demo": int,
        },
        pk="id",
        not_null={"account", "list_name", "sender", "status"},
        defaults={"status": "subscribed", "demo": 0},
    )

    # The notify.owner outbox. status: queued (no push channel) | delivered | failed.
    db.table("notifications").create(
        {
            "id": int,
            "message": str,
            "priority": str,
            "status": str,
            "channel": str,
            "attempts": int,
            "last_error": str,
            "created_at": float,
            "delivered_at": float,
            "chat_id": str,
            "call_id": str,
        },
        pk="id",
        not_null={"message", "status"},
        defaults={"attempts": 0},
    )
    db.table("notifications").create_index(["status"])


# What 0002_demo_seed wrote into, in the order its rows can be deleted.
DEMO_TABLES = ("schedules", "people", "calendar_events", "tasks", "notes", "memory_facts", "email_subscriptions")


@BUILTIN_SCHEMA(name="0003_remove_demo_rows")
def _m0003(db: Database) -> None:
    # History rows point at their schedule (a foreign key): the seeded schedules' go first.
    db.execute("delete from schedule_history where schedule_id in (select id from schedules where demo = 1)")
    for table in DEMO_TABLES:
        db.execute(f"delete from [{table}] where demo = 1")


# What browser._save writes: the CurrentPage's fields (links and forms as JSON, cut_bytes 0/1),
# the call that opened the page and when.
BROWSER_PAGES: dict[str, type] = {
    "chat_id": str,
    "url": str,
    "status": int,
    "reason_phrase": str,
    "content_type": str,
    "title": str,
    "text": str,
    "links": str,
    "forms": str,
    "cut_bytes": int,
    "call_id": str,
    "at": float,
    "demo": int,
}
_BROWSER_NOT_NULL = {"url", "status", "text", "links", "forms", "cut_bytes"}


@BUILTIN_SCHEMA(name="0004_browser_pages")
def _m0004(db: Database) -> None:
    table = db.table("browser_pages")
    if not table.exists():
        table.create(BROWSER_PAGES, pk="chat_id", not_null=_BROWSER_NOT_NULL, defaults={"demo": 0})
        return
    # Made by an earlier version's first-use upsert: add what it lacks, then the declared shape.
    have = table.columns_dict
    for name, kind in BROWSER_PAGES.items():
        if name not in have:
            table.add_column(name, kind, not_null_default=0 if name == "demo" else None)
    table.transform(
        types=BROWSER_PAGES,
        pk="chat_id",
        # demo's NOT NULL only filled the old rows with 0: it is nullable as in every table
        not_null={**dict.fromkeys(_BROWSER_NOT_NULL, True), "demo": False},
        defaults={"demo": 0},
        column_order=list(BROWSER_PAGES),
    )
