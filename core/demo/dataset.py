"""The demo's dataset for the built-in tools, and the database a chat's built-ins work on.

A chat on the demo model (provider ``demo``) runs its built-in tools (schedules, contacts,
calendar, tasks, notes, memory, mail subscriptions ...) on the demo database, the same
``demo.sqlite`` the demo MCP servers keep their mail and calls in
(:func:`core.demo.demo_db_path`). Any other chat runs them on the user's real database,
which never receives a demo row, even while the demo MCP servers run.

The demo database gets the built-in tools' own migrations (:data:`BUILTIN_SCHEMA`) and, once,
the dataset below: a "Team standup" schedule at 09:00 on weekdays, contacts, calendar events,
tasks, notes, remembered facts and newsletter subscriptions on a work and a personal account.
Every seeded row carries ``demo = 1``. Dates are placed around the day the file was seeded;
seeded events and schedules have no timezone of their own ("the owner's, whatever it is").

Deleting ``demo.sqlite`` (with its ``-wal`` and ``-shm`` companions) removes all of the demo's
data. It comes back fresh on next use: a demo server seeds its mail or calls when it starts,
and a chat on the demo model seeds this dataset on its first built-in call.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
from pathlib import Path

from sqlite_utils import Database

from core.builtins.data import BUILTIN_SCHEMA, DEMO_TABLES, WEEKDAYS
from core.demo import demo_time
from core.demo.db import connect, seed_once

DEMO_PROVIDER = "demo"  # the chats whose built-ins work on the demo database
SEED_KEY = "builtins"  # the dataset's mark in the demo file's ``meta`` table

# One open demo database per path and file, so a deleted (or replaced) file is opened and
# seeded again instead of being written through a handle to the unlinked one.
_open: dict[Path, tuple[Database, tuple[int, int]]] = {}
_KEEP = 8  # paths kept open (tests open one per temporary home); a dropped one closes when unused


def tool_database(provider: str, real: Database) -> Database:
    """The database a chat's built-in tools run on: the demo's for the demo model, else ``real``."""
    return demo_tool_database() if provider == DEMO_PROVIDER else real


def tool_workspace(provider: str, real: Path) -> Path:
    """The folder a chat's workspace tools work in: the demo's own (seeded with a few documents)
    for the demo model, else the owner's ``real`` workspace, which never receives a demo file."""
    return demo_workspace() if provider == DEMO_PROVIDER else real


def tool_settings(provider: str, settings: dict[str, object]) -> dict[str, object]:
    """The built-ins' settings for a chat: the demo model's tools read the demo's clock
    (:func:`core.demo.demo_clock`) when ``$DEFERCHAT_DEMO_NOW`` pins it, as its data does."""
    from core.demo import NOW_ENV, demo_clock

    if provider == DEMO_PROVIDER and os.environ.get(NOW_ENV) and "now" not in settings:
        return {**settings, "now": demo_clock}
    return settings


WORKSPACE_FILES: dict[str, str] = {
    "Documents/Q3 budget draft.csv": "item,amount_usd\nCloud hosting,41200\nContractors,18500\nTravel (Lisbon offsite),"
    "6000\nSoftware licences,9300\n",
    "Documents/Lisbon offsite agenda.md": "# Lisbon offsite\n\n- Day 1: roadmap review, hiring plan\n- Day 2: "
    "customer panel, team dinner in Alfama\n- Budget: 400 EUR per person\n",
    "Documents/Passport renewal checklist.md": "# Passport renewal\n\n- [ ] Two photos (in the desk drawer)\n"
    "- [ ] Old passport\n- [ ] Form DS-82, signed\n- [ ] Fee: 130 USD\n",
    "Documents/Lease apartment 4B.txt": "Lease for apartment 4B, Harbor Property (landlord: Tom Becker).\n"
    "Term ends January 31. Rent 2,050 USD per month; renewal offered at 2,150 USD.\n",
    "Downloads/Flight confirmation ZX81QK.txt": "FlyRight confirmation ZX81QK\nSam Rivera, seat 14C\n"
    "Departs Tuesday 07:05 to Chicago.\n",
    "Projects/onboarding-flow.md": "# Onboarding flow\n\nOpen question from the design review: one signup "
    "screen or three?\n",
}
"""The demo's workspace: a few documents the workspace tools find ("what's in my Documents folder?")."""
_WORKSPACE_MARK = ".deferchat-demo"


def demo_workspace(path: str | Path | None = None) -> Path:
    """The demo's workspace folder (``demo-workspace`` beside ``demo.sqlite`` unless ``path``),
    its documents written when it is new or was seeded by an older dataset version."""
    from core.demo import demo_db_path
    from core.demo.db import DATASET_VERSION

    root = Path(path) if path is not None else demo_db_path().parent / "demo-workspace"
    mark = root / _WORKSPACE_MARK
    try:
        if mark.read_text(encoding="utf-8").strip() == str(DATASET_VERSION):
            return root
    except OSError:
        pass
    for rel, text in WORKSPACE_FILES.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    mark.write_text(f"{DATASET_VERSION}\n", encoding="utf-8")
    return root


def demo_tool_database(path: str | Path | None = None) -> Database:
    """The demo database (``demo.sqlite`` unless ``path``), migrated and seeded, opened once per
    process and opened (and seeded) again when the file was deleted or replaced."""
    from core.demo import demo_db_path

    p = Path(path) if path is not None else demo_db_path()
    key = p.absolute()
    cached = _open.get(key)
    if cached is not None and _identity(p) == cached[1]:
        return cached[0]
    db = open_demo_dataset(p)
    identity = _identity(p)
    assert identity is not None  # it was just created
    _open.pop(key, None)
    _open[key] = (db, identity)
    while len(_open) > _KEEP:
        _open.pop(next(iter(_open)))
    return db


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino


def open_demo_dataset(path: str | Path) -> Database:
    """Open (creating) a demo database file: the built-ins' migrations, then the dataset unless
    the file already has it. Safe when several processes open a new file at once."""
    conn = connect(path)
    conn.execute("PRAGMA foreign_keys = ON")  # as the real store has it
    db = Database(conn)

    def seed(_conn: sqlite3.Connection, now: float) -> None:
        seed_demo_data(db, dt.date.fromtimestamp(now))

    def reset(_conn: sqlite3.Connection) -> None:  # an older dataset: every row of the demo's tables goes
        for table in ("schedule_history", *DEMO_TABLES, "notifications"):
            db.execute(f"delete from [{table}]")

    seed_once(conn, SEED_KEY, seed, prepare=lambda: BUILTIN_SCHEMA.apply(db), reset=reset)
    return db


def _with(defaults: dict[str, object], rows: list[dict[str, object]]) -> list[dict[str, object]]:
    """Each row with the defaults filled in (insert_all writes NULL for keys a row lacks)."""
    return [{**defaults, **row} for row in rows]


def seed_demo_data(db: Database, today: dt.date) -> None:
    """The demo's dataset, with dates placed around ``today``, into ``db`` (which has the
    built-ins' tables). Only ever called on a demo database."""
    stamp = round(demo_time(), 6)

    def day(offset: int) -> dt.date:
        return today + dt.timedelta(days=offset)

    def at(offset: int, hhmm: str) -> str:
        return f"{day(offset).isoformat()}T{hhmm}"

    weekdays = json.dumps(list(WEEKDAYS[:5]))
    db.table("schedules").insert_all(
        _with(
            {"timezone": None, "status": "active", "created_at": stamp, "updated_at": stamp, "demo": 1},
            [
                {"title": "Team standup", "time": "09:00", "days": weekdays},
                {"title": "Weekly planning", "time": "08:30", "days": json.dumps(["mon"])},
                {"title": "1:1 with Priya", "time": "14:00", "days": json.dumps(["thu"])},
                {"title": "Water the plants", "time": "19:00", "days": json.dumps(["wed", "sun"])},
                {
                    "title": "Gym session",
                    "time": "07:00",
                    "days": json.dumps(["tue", "thu", "sat"]),
                    "status": "paused",
                },
            ],
        )
    )

    db.table("people").insert_all(
        _with(
            {
                "created_at": stamp,
                "updated_at": stamp,
                "demo": 1,
                "other_emails": "[]",
                "other_phones": "[]",
                "birthday": None,
                "company": None,
            },
            [
                {
                    "name": "Priya Raman",
                    "company": "Northwind Labs",
                    "email": "priya.raman@northwind.example",
                    "phone": "+12025550143",
                    "birthday": "1986-03-14",
                    "relationship": "Manager at work",
                    "notes": "Prefers async updates; 1:1 on Thursdays.",
                    "other_emails": json.dumps(["priya@raman.example"]),
                },
                {
                    "name": "Sam Okafor",
                    "company": "Northwind Labs",
                    "email": "sam.okafor@northwind.example",
                    "phone": "+12025550178",
                    "relationship": "Colleague, backend team",
                    "notes": "Runs the on-call rota.",
                },
                {
                    "name": "Marco Bianchi",
                    "company": "Studio Bianchi",
                    "email": "marco@bianchi.example",
                    "phone": "+393405550112",
                    "birthday": "--07-22",
                    "relationship": "Friend from university",
                    "notes": "Vegetarian. Owes me a book.",
                },
                {
                    "name": "Alice Chen",
                    "company": "Smile Dental",
                    "email": "frontdesk@smiledental.example",
                    "phone": "+12025550190",
                    "relationship": "Dentist",
                    "notes": "Check-ups every six months.",
                    "other_phones": json.dumps(["+12025550191"]),
                },
                {
                    "name": "Lena Fischer",
                    "company": None,
                    "email": "lena.fischer@mail.example",
                    "phone": "+4915155501234",
                    "birthday": "1992-11-02",
                    "relationship": "Sister",
                    "notes": "Lives in Hamburg; likes ceramics and trail running.",
                },
                {
                    "name": "Tom Becker",
                    "company": "Harbor Property",
                    "email": "tom.becker@harborproperty.example",
                    "phone": "+12025550155",
                    "relationship": "Landlord",
                    "notes": "Call for repairs, not email.",
                },
                {
                    "name": "Alex Rivera",
                    "company": None,
                    "email": "alex.rivera@mail.example",
                    "phone": "+12025550166",
                    "relationship": "Brother",
                    "notes": "Organising Mom's birthday dinner.",
                },
                {
                    "name": "Maria Rivera",
                    "company": None,
                    "email": "maria.rivera@mail.example",
                    "phone": "+12025550177",
                    "birthday": "1958-12-12",
                    "relationship": "Mom",
                    "notes": "Likes chocolate cake.",
                },
            ],
        )
    )

    db.table("calendar_events").insert_all(
        _with(
            {"timezone": None, "created_at": stamp, "demo": 1, "location": None},
            [
                {
                    "title": "Interview: Jordan Ellis",
                    "start_local": at(-1, "16:00"),
                    "duration_minutes": 45,
                    "location": "Video call",
                    "attendees": json.dumps(["sam.okafor@northwind.example"]),
                },
                {
                    "title": "Design review",
                    "start_local": at(0, "11:00"),
                    "duration_minutes": 60,
                    "location": "Room 4B",
                    "attendees": json.dumps(["priya.raman@northwind.example", "sam.okafor@northwind.example"]),
                },
                {
                    "title": "Lunch with Marco",
                    "start_local": at(1, "12:30"),
                    "duration_minutes": 60,
                    "location": "Café Lindt",
                    "attendees": json.dumps(["marco@bianchi.example"]),
                },
                {
                    "title": "Dentist check-up",
                    "start_local": at(2, "15:00"),
                    "duration_minutes": 45,
                    "location": "Smile Dental, 12 Elm Street",
                    "attendees": "[]",
                },
                {
                    "title": "Quarterly planning",
                    "start_local": at(3, "10:00"),
                    "duration_minutes": 120,
                    "location": "Main conference room",
                    "attendees": json.dumps(["priya.raman@northwind.example", "sam.okafor@northwind.example"]),
                },
                {
                    "title": "Dinner with Lena",
                    "start_local": at(6, "19:00"),
                    "duration_minutes": 150,
                    "location": "Trattoria Sole",
                    "attendees": json.dumps(["lena.fischer@mail.example"]),
                },
            ],
        )
    )

    db.table("tasks").insert_all(
        _with(
            {"status": "open", "created_at": stamp, "completed_at": None, "demo": 1},
            [
                {
                    "title": "Send Q3 budget draft to Priya",
                    "due": day(1).isoformat(),
                    "notes": "Use the finance template.",
                },
                {"title": "Book flights for the Lisbon offsite", "due": day(7).isoformat(), "notes": "Aisle seat."},
                {"title": "Renew passport", "due": day(21).isoformat(), "notes": "Photos are in the desk drawer."},
                {"title": "Return library books", "due": day(-1).isoformat(), "notes": None},
                {"title": "Buy a present for Lena", "due": day(5).isoformat(), "notes": "See the gift ideas note."},
                {
                    "title": "Call the landlord about the radiator",
                    "due": day(-3).isoformat(),
                    "notes": None,
                    "status": "done",
                    "completed_at": stamp,
                },
            ],
        )
    )

    db.table("notes").insert_all(
        _with(
            {"created_at": stamp, "updated_at": stamp, "demo": 1},
            [
                {
                    "title": "Lisbon offsite ideas",
                    "tags": json.dumps(["travel", "work"]),
                    "body": "- Half-day workshop on the roadmap\n- Team dinner in Alfama\n- Budget: 400 EUR per person",
                },
                {
                    "title": "Standup format",
                    "tags": json.dumps(["work"]),
                    "body": "Fifteen minutes, round the table: yesterday, today, blockers. Parking lot at the end.",
                },
                {
                    "title": "Gift ideas for Lena",
                    "tags": json.dumps(["personal", "gifts"]),
                    "body": "Ceramics class voucher; trail running socks; a book about Japanese pottery.",
                },
                {
                    "title": "Sourdough recipe",
                    "tags": json.dumps(["cooking"]),
                    "body": "500 g flour, 350 g water, 100 g starter, 10 g salt. Bulk 5 hours, cold proof overnight.",
                },
                {
                    "title": "Books to read",
                    "tags": json.dumps(["reading"]),
                    "body": "The Pragmatic Programmer; Piranesi; A Psalm for the Wild-Built.",
                },
            ],
        )
    )

    db.table("memory_facts").insert_all(
        _with(
            {"created_at": stamp, "demo": 1},
            [
                {"fact": "My coffee order is an oat milk flat white.", "topic": "food"},
                {"fact": "My dentist is Dr. Alice Chen at Smile Dental.", "topic": "health"},
                {"fact": "I am allergic to penicillin.", "topic": "health"},
                {"fact": "I prefer aisle seats on flights.", "topic": "travel"},
                {"fact": "The team standup is every weekday at 9am.", "topic": "work"},
            ],
        )
    )

    def sub(
        account: str, name: str, sender: str, per_month: int, last: int, inbox: int, unsub: str, one_click: bool
    ) -> dict[str, object]:
        return {
            "account": account,
            "list_name": name,
            "sender": sender,
            "per_month": per_month,
            "last_message_on": day(-last).isoformat(),
            "messages_in_inbox": inbox,
            "list_unsubscribe": unsub,
            "one_click": int(one_click),
        }

    db.table("email_subscriptions").insert_all(
        _with(
            {"status": "subscribed", "demo": 1, "archive_existing": 0, "archived_messages": 0},
            [
                sub(
                    "work",
                    "Engineering Leadership Weekly",
                    "news@eng-leadership.example",
                    4,
                    2,
                    37,
                    "<https://eng-leadership.example/unsub?u=8812>",
                    True,
                ),
                sub(
                    "work",
                    "Cloud Cost Digest",
                    "digest@cloudcost.example",
                    8,
                    1,
                    64,
                    "<https://cloudcost.example/l/unsubscribe/3391>, <mailto:leave@cloudcost.example>",
                    True,
                ),
                sub(
                    "work",
                    "Northwind Labs announcements",
                    "announce@northwind.example",
                    6,
                    0,
                    52,
                    "<mailto:announce-leave@northwind.example>",
                    False,
                ),
                sub(
                    "work",
                    "DataStack webinar invitations",
                    "events@datastack.example",
                    12,
                    3,
                    88,
                    "<https://datastack.example/prefs/unsubscribe?id=aa71>",
                    True,
                ),
                sub(
                    "work",
                    "SaaS Pricing Insider",
                    "hello@pricinginsider.example",
                    2,
                    12,
                    9,
                    "<mailto:unsubscribe@pricinginsider.example?subject=unsubscribe>",
                    False,
                ),
                sub(
                    "personal",
                    "ShopRight daily deals",
                    "deals@shopright.example",
                    30,
                    0,
                    412,
                    "<https://shopright.example/u/unsubscribe/77aa>, <mailto:u@shopright.example>",
                    True,
                ),
                sub(
                    "personal",
                    "Morning Brief",
                    "brief@morningbrief.example",
                    22,
                    0,
                    180,
                    "<https://morningbrief.example/unsubscribe?e=owner>",
                    True,
                ),
                sub(
                    "personal",
                    "FlyCheap fare alerts",
                    "alerts@flycheap.example",
                    15,
                    1,
                    96,
                    "<https://flycheap.example/alerts/stop/5521>",
                    True,
                ),
                sub(
                    "personal",
                    "Trail Runners Club news",
                    "club@trailrunners.example",
                    3,
                    9,
                    21,
                    "<mailto:club-leave@trailrunners.example>",
                    False,
                ),
                sub(
                    "personal",
                    "Cookbook Corner",
                    "recipes@cookbookcorner.example",
                    4,
                    5,
                    30,
                    "<https://cookbookcorner.example/unsubscribe/9d2f>",
                    True,
                ),
                sub(
                    "personal",
                    "City Library events",
                    "events@citylibrary.example",
                    1,
                    20,
                    6,
                    "<mailto:events-unsubscribe@citylibrary.example>",
                    False,
                ),
            ],
        )
    )
