"""The built-in tools (core/builtins): every configured tool, its errors, and the roster contract."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from zoneinfo import ZoneInfo

import httpx
import jsonschema
import pytest

from core.builtins import ToolContext, builtin_names, builtin_tool, get_builtin
from core.builtins.html_text import html_to_text
from core.builtins.web import NO_SEARCH_BACKEND
from core.demo.dataset import open_demo_dataset
from core.roster.loader import load_roster
from core.roster.models import WEBSITE_PROFILE_TOOLS
from core.tools import ToolResult

BERLIN = ZoneInfo("Europe/Berlin")


# --- fixtures ---------------------------------------------------------------------------------------


@pytest.fixture
def db(tmp_path):
    """A demo database (the built-ins' tables and the demo dataset): the tools work on its rows."""
    return open_demo_dataset(tmp_path / "demo.sqlite")


@pytest.fixture
def anchor(db) -> dt.date:
    """The day the demo data was seeded around (the "Design review" is at 11:00 that day)."""
    row = next(db["calendar_events"].rows_where("title = 'Design review'"))
    return dt.date.fromisoformat(row["start_local"][:10])


@pytest.fixture
def workspace(tmp_path) -> Path:
    ws = tmp_path / "workspace"
    ws.mkdir()
    return ws


async def public_resolver(host: str, port: int) -> list[str]:
    """Every test host name resolves to one public address (no DNS in tests); web.fetch connects there."""
    return ["93.184.215.14"]


@pytest.fixture
def ctx(db, anchor, workspace) -> ToolContext:
    now = dt.datetime.combine(anchor, dt.time(8, 0), BERLIN)
    return ToolContext(
        db=db,
        chat_id="chat_test",
        call_id="call_1",
        workspace=workspace,
        timezone="Europe/Berlin",
        settings={"now": now, "resolver": public_resolver},
    )


async def call(ctx: ToolContext, name: str, **arguments) -> ToolResult:
    fn = get_builtin(name)
    assert fn is not None, name
    result = await fn(arguments, ctx)
    assert isinstance(result, ToolResult)
    return result


async def checked(ctx: ToolContext, name: str, **arguments) -> ToolResult:
    """The call as the pipeline makes it: the tool's workspace paths in their canonical form."""
    from core.builtins import workspace_bases
    from core.pipeline.policy import default_policy

    canonical = default_policy().canonical_arguments(CONFIGURED[name], arguments, workspace_bases(name, ctx.workspace))
    return await call(ctx, name, **canonical)


async def ok(ctx: ToolContext, name: str, **arguments):
    result = await call(ctx, name, **arguments)
    assert not result.is_error, result.text()
    return result.structured


async def err(ctx: ToolContext, name: str, **arguments) -> str:
    result = await call(ctx, name, **arguments)
    assert result.is_error, result.text()
    return result.text()


# --- the roster contract ----------------------------------------------------------------------------

CONFIGURED = {t.name: t for t in load_roster("production").configured}


def test_every_configured_tool_has_a_builtin_and_nothing_else():
    assert len(CONFIGURED) == 27
    assert set(builtin_names()) - set(WEBSITE_PROFILE_TOOLS) == set(CONFIGURED)  # browser.*: website profiles
    for name in CONFIGURED:
        assert get_builtin(name) is not None


@pytest.mark.parametrize("name", sorted(CONFIGURED))
async def test_every_builtin_rejects_an_unknown_argument_by_name(ctx, name):
    text = await err(ctx, name, bogus_argument=1)
    assert "unexpected argument 'bogus_argument'" in text
    for req in CONFIGURED[name].input_schema.get("required", []):
        assert f"missing required argument '{req}'" in text


# --- time.now ---------------------------------------------------------------------------------------


async def test_time_now_in_owner_and_named_timezones(ctx):
    ctx.settings["now"] = dt.datetime(2026, 3, 4, 12, 0, tzinfo=dt.timezone.utc)
    here = await ok(ctx, "time.now")
    assert (here["timezone"], here["date"], here["time"], here["weekday"], here["utc_offset"]) == (
        "Europe/Berlin",
        "2026-03-04",
        "13:00",
        "Wednesday",
        "+01:00",
    )
    there = await ok(ctx, "time.now", timezone="America/New_York")
    assert (there["time"], there["utc_offset"], there["owner_timezone"]) == ("07:00", "-05:00", "Europe/Berlin")
    assert "Unknown timezone 'Mars/Olympus'" in await err(ctx, "time.now", timezone="Mars/Olympus")
    assert "IANA" in await err(ctx, "time.now", timezone="../../etc/passwd")
    ctx.timezone = "Nowhere/Town"
    assert "owner timezone" in await err(ctx, "time.now")


async def test_time_now_without_an_injected_clock_is_the_real_time(ctx):
    ctx.settings.pop("now")
    now = await ok(ctx, "time.now", timezone="UTC")
    moment = dt.datetime.fromisoformat(now["datetime"])
    assert abs((moment - dt.datetime.now(dt.timezone.utc)).total_seconds()) < 5


# --- memory -----------------------------------------------------------------------------------------


async def test_memory_save_then_search(ctx):
    saved = await ok(ctx, "memory.save", fact="  I take the 7:40 train to work.  ", topic="Commute")
    assert saved["saved"] is True and saved["id"].startswith("mem_") and saved["topic"] == "commute"
    assert saved["fact"] == "I take the 7:40 train to work."
    found = await ok(ctx, "memory.search", query="which train do I take")
    assert found["facts"][0]["id"] == saved["id"]
    assert found["facts"][0]["saved_at"].startswith(ctx.settings["now"].date().isoformat())
    row = ctx.db["memory_facts"].get(int(saved["id"][4:]))
    assert row["chat_id"] == "chat_test"
    again = await ok(ctx, "memory.save", fact="i take the 7:40 train to work.")
    assert again["saved"] is False and again["id"] == saved["id"]


async def test_memory_search_ranks_finds_prefixes_and_limits(ctx):
    coffee = await ok(ctx, "memory.search", query="what is my coffee order")
    assert coffee["count"] == 1 and "flat white" in coffee["facts"][0]["fact"]
    health = await ok(ctx, "memory.search", query="health", limit=1)  # topics are searched too
    assert health["count"] == 1 and health["facts"][0]["topic"] == "health"
    assert (await ok(ctx, "memory.search", query="dent"))["facts"][0]["fact"].startswith("My dentist")
    nothing = await ok(ctx, "memory.search", query="submarine")
    assert nothing["count"] == 0 and "memory.save" in nothing["note"]


async def test_memory_errors(ctx):
    assert "no words" in await err(ctx, "memory.search", query="?!")
    assert "fact" in await err(ctx, "memory.save", fact="   ")
    assert "limit" in await err(ctx, "memory.search", query="x", limit=0)
    assert "at most 1000" in await err(ctx, "memory.save", fact="x" * 1001)


# --- people -----------------------------------------------------------------------------------------


async def test_people_search_by_name_company_email_and_phone(ctx):
    assert [p["name"] for p in (await ok(ctx, "people.search", query="northwind"))["people"]] == [
        "Priya Raman",
        "Sam Okafor",
    ]
    assert [p["id"] for p in (await ok(ctx, "people.search", query="priya raman"))["people"]] == ["per_1"]
    assert [p["id"] for p in (await ok(ctx, "people.search", query="raman.example"))["people"]] == ["per_1"]
    # Phone numbers match on digits, also a secondary number, whatever the formatting.
    assert [p["id"] for p in (await ok(ctx, "people.search", query="(202) 555-0191"))["people"]] == ["per_4"]
    assert [p["id"] for p in (await ok(ctx, "people.search", query="dentist"))["people"]] == ["per_4"]
    assert (await ok(ctx, "people.search", query="nobody here"))["count"] == 0
    assert len((await ok(ctx, "people.search", query="e", limit=2))["people"]) == 2


async def test_people_get_full_record_and_errors(ctx):
    priya = await ok(ctx, "people.get", person_id="per_1")
    assert priya["emails"] == ["priya.raman@northwind.example", "priya@raman.example"]
    assert priya["phones"] == ["+12025550143"] and priya["birthday"] == "1986-03-14"
    assert priya["relationship"] == "Manager at work"
    assert "No contact with id per_99" in await err(ctx, "people.get", person_id="per_99")
    assert "is a task id, not a contact id" in await err(ctx, "people.get", person_id="tsk_1")
    assert "is not a contact id" in await err(ctx, "people.get", person_id="Priya")


async def test_people_update_changes_only_given_fields_and_is_read_back(ctx):
    result = await ok(
        ctx,
        "people.update",
        person_id="per_1",
        email="priya@raman.example",
        phone="+1 (202) 555-0100",
        birthday="--03-14",
    )
    assert result["changed"]["phone"] == {"from": "+12025550143", "to": "+12025550100"}
    after = await ok(ctx, "people.get", person_id="per_1")
    # The secondary address became primary and is not listed twice; notes were left alone.
    assert after["emails"] == ["priya@raman.example"]
    assert after["phones"] == ["+12025550100"] and after["birthday"] == "--03-14"
    assert after["notes"] == "Prefers async updates; 1:1 on Thursdays."
    cleared = await ok(ctx, "people.update", person_id="per_1", notes="")
    assert cleared["changed"]["notes"]["to"] is None
    assert (await ok(ctx, "people.get", person_id="per_1"))["notes"] is None
    same = await ok(ctx, "people.update", person_id="per_1", birthday="--03-14")
    assert same["changed"] == {} and "Nothing changed" in same["note"]


async def test_people_update_validation(ctx):
    assert "Nothing to change" in await err(ctx, "people.update", person_id="per_2")
    assert "Bad email" in await err(ctx, "people.update", person_id="per_2", email="sam at northwind")
    assert "E.164" in await err(ctx, "people.update", person_id="per_2", phone="555-0100")
    assert "Bad birthday" in await err(ctx, "people.update", person_id="per_2", birthday="1990-02-30")
    assert "Bad birthday" in await err(ctx, "people.update", person_id="per_2", birthday="--13-01")
    assert "in the future" in await err(ctx, "people.update", person_id="per_2", birthday="2999-01-01")
    assert "No contact" in await err(ctx, "people.update", person_id="per_42", notes="x")
    # Nothing was written by the failed calls.
    assert (await ok(ctx, "people.get", person_id="per_2"))["emails"] == ["sam.okafor@northwind.example"]


# --- calendar ---------------------------------------------------------------------------------------


async def test_calendar_list_day_range_and_query(ctx, anchor):
    today = await ok(ctx, "calendar.list_events", start=anchor.isoformat())
    assert [e["title"] for e in today["events"]] == ["Design review"]
    assert today["events"][0]["start"] == f"{anchor.isoformat()}T11:00+{_offset(anchor)}"
    week = await ok(
        ctx, "calendar.list_events", start=anchor.isoformat(), end=(anchor + dt.timedelta(days=6)).isoformat()
    )
    assert [e["title"] for e in week["events"]] == [
        "Design review",
        "Lunch with Marco",
        "Dentist check-up",
        "Quarterly planning",
        "Dinner with Lena",
    ]
    lunch = await ok(
        ctx,
        "calendar.list_events",
        start=anchor.isoformat(),
        end=(anchor + dt.timedelta(days=6)).isoformat(),
        query="marco LUNCH",
    )
    assert [e["id"] for e in lunch["events"]] == ["evt_3"]
    # A range starting mid-event still shows the event (overlap, not start-in-range).
    mid = await ok(ctx, "calendar.list_events", start=f"{anchor.isoformat()}T11:30", end=f"{anchor.isoformat()}T11:45")
    assert [e["title"] for e in mid["events"]] == ["Design review"]


def _offset(day: dt.date) -> str:
    off = dt.datetime.combine(day, dt.time(12), BERLIN).strftime("%z")
    return f"{off[1:3]}:{off[3:]}"


async def test_calendar_seeded_events_follow_the_owner_timezone(ctx, anchor):
    ctx.timezone = "America/New_York"
    today = await ok(ctx, "calendar.list_events", start=anchor.isoformat())
    design = next(e for e in today["events"] if e["title"] == "Design review")
    assert design["start"].startswith(f"{anchor.isoformat()}T11:00-0")


async def test_calendar_create_then_list_with_conflicts(ctx, anchor):
    day = anchor + dt.timedelta(days=1)
    made = await ok(
        ctx,
        "calendar.create_event",
        title="Call with bank",
        start=f"{day.isoformat()}T13:00",
        duration_minutes=45,
        location="Phone",
        attendees=["Sam.Okafor@northwind.example"],
    )
    assert made["id"].startswith("evt_") and made["end"].startswith(f"{day.isoformat()}T13:45")
    assert [c["title"] for c in made["conflicts"]] == ["Lunch with Marco"]
    assert "No invitations were sent" in made["note"]
    listed = await ok(ctx, "calendar.list_events", start=day.isoformat())
    assert [e["title"] for e in listed["events"]] == ["Lunch with Marco", "Call with bank"]
    # A moment given with an offset is converted to the owner's time.
    utc = await ok(ctx, "calendar.create_event", title="UTC sync", start=f"{day.isoformat()}T16:00+00:00")
    assert utc["start"] == dt.datetime.combine(day, dt.time(16), dt.timezone.utc).astimezone(BERLIN).isoformat(
        timespec="minutes"
    )
    assert utc["conflicts"] == []


async def test_calendar_errors(ctx, anchor):
    assert "Bad start" in await err(ctx, "calendar.list_events", start="next tuesday")
    assert "not after" in await err(ctx, "calendar.list_events", start=f"{anchor}T10:00", end=f"{anchor}T09:00")
    assert "longer than a year" in await err(ctx, "calendar.list_events", start="2026-01-01", end="2028-01-01")
    assert "no time of day" in await err(ctx, "calendar.create_event", title="x", start=anchor.isoformat())
    assert "Bad email" in await err(
        ctx, "calendar.create_event", title="x", start=f"{anchor}T10:00", attendees=["not-an-address"]
    )
    assert "duration_minutes" in await err(
        ctx, "calendar.create_event", title="x", start=f"{anchor}T10:00", duration_minutes=2
    )
    assert ctx.db["calendar_events"].count == 6  # no failed call wrote anything


# --- schedules --------------------------------------------------------------------------------------


async def test_move_the_9am_standup_to_10am(ctx):
    listed = await ok(ctx, "schedule.list", query="standup")
    assert [(s["id"], s["time"], s["days_text"]) for s in listed["schedules"]] == [("sch_1", "09:00", "weekdays")]
    result = await ok(ctx, "schedule.update", schedule_id="sch_1", time="10:00")
    assert result["changed"] == {"time": {"from": "09:00", "to": "10:00"}}
    after = (await ok(ctx, "schedule.list", query="standup"))["schedules"][0]
    # Only the time changed; the write is what a later read sees.
    assert (after["time"], after["title"], after["days"], after["status"]) == (
        "10:00",
        "Team standup",
        ["mon", "tue", "wed", "thu", "fri"],
        "active",
    )
    history = list(ctx.db["schedule_history"].rows_where("schedule_id = 1"))
    assert [(h["action"], json.loads(h["changes"]), h["call_id"]) for h in history] == [
        ("updated", {"time": {"from": "09:00", "to": "10:00"}}, "call_1")
    ]


async def test_schedule_update_errors_and_suggestions(ctx):
    text = await err(ctx, "schedule.update", schedule_id="standup", time="10:00")
    assert "is not a schedule id" in text and "sch_1 'Team standup' at 09:00 weekdays" in text
    assert "No schedule with id sch_77" in await err(ctx, "schedule.update", schedule_id="sch_77", time="10:00")
    assert "Nothing to change" in await err(ctx, "schedule.update", schedule_id="sch_1")
    assert "Bad time '24:00'" in await err(ctx, "schedule.update", schedule_id="sch_1", time="24:00")
    assert "pattern" in await err(ctx, "schedule.update", schedule_id="sch_1", time="10am")
    assert "Unknown timezone" in await err(ctx, "schedule.update", schedule_id="sch_1", timezone="Berlin")
    assert "days is empty" in await err(ctx, "schedule.update", schedule_id="sch_1", days=[])
    assert "title cannot be empty" in await err(ctx, "schedule.update", schedule_id="sch_1", title="  ")
    assert "days.0" in await err(ctx, "schedule.update", schedule_id="sch_1", days=["monday"])
    assert ctx.db["schedules"].get(1)["time"] == "09:00"
    same = await ok(ctx, "schedule.update", schedule_id="sch_1", time="09:00")
    assert same["changed"] == {} and "Nothing changed" in same["note"]


async def test_schedule_create_and_next_run(ctx):
    ctx.settings["now"] = dt.datetime(2026, 3, 4, 9, 0, tzinfo=BERLIN)  # a Wednesday
    made = await ok(
        ctx, "schedule.create", title="Pay rent", time="08:00", days=["fri", "mon", "fri"], timezone="America/New_York"
    )
    assert made["id"] == "sch_6" and made["days"] == ["mon", "fri"] and made["timezone"] == "America/New_York"
    assert made["next_run"] == "2026-03-06T08:00-05:00"
    daily = await ok(ctx, "schedule.create", title="Stretch", time="10:30")
    assert daily["days_text"] == "every day" and daily["timezone"] == "Europe/Berlin"
    assert daily["next_run"] == "2026-03-04T10:30+01:00"
    early = await ok(ctx, "schedule.create", title="Early", time="08:59")
    assert early["next_run"] == "2026-03-05T08:59+01:00"  # today's 08:59 has passed
    twin = await ok(ctx, "schedule.create", title="team STANDUP", time="09:15", days=["sat"])
    assert "sch_1" in twin["note"]
    listed = await ok(ctx, "schedule.list", status="all")
    assert {"sch_6", "sch_7", "sch_8", "sch_9"} <= {s["id"] for s in listed["schedules"]}
    assert "Unknown timezone" in await err(ctx, "schedule.create", title="x", time="08:00", timezone="Moon/Base")
    assert "title" in await err(ctx, "schedule.create", title="", time="08:00")


async def test_schedule_list_filters(ctx):
    active = await ok(ctx, "schedule.list")
    assert [s["title"] for s in active["schedules"]] == [
        "Weekly planning",
        "Team standup",
        "1:1 with Priya",
        "Water the plants",
    ]
    paused = await ok(ctx, "schedule.list", status="paused")
    assert [(s["id"], s["next_run"]) for s in paused["schedules"]] == [("sch_5", None)]
    assert (await ok(ctx, "schedule.list", status="all"))["count"] == 5
    assert (await ok(ctx, "schedule.list", status="cancelled"))["count"] == 0
    assert "status" in await err(ctx, "schedule.list", status="stopped")


async def test_schedule_state_machine(ctx):
    paused = await ok(ctx, "schedule.pause", schedule_id="sch_1")
    assert (paused["previous_status"], paused["schedule"]["status"]) == ("active", "paused")
    assert paused["schedule"]["next_run"] is None
    assert "already paused until resumed" in await err(ctx, "schedule.pause", schedule_id="sch_1")
    resumed = await ok(ctx, "schedule.resume", schedule_id="sch_1")
    assert resumed["schedule"]["status"] == "active"
    assert "is not paused; it is already active" in await err(ctx, "schedule.resume", schedule_id="sch_1")
    cancelled = await ok(ctx, "schedule.cancel", schedule_id="sch_1", reason="team moved to async updates")
    assert cancelled["schedule"]["status"] == "cancelled"
    assert cancelled["schedule"]["cancel_reason"] == "team moved to async updates"
    assert "cannot be resumed" in await err(ctx, "schedule.resume", schedule_id="sch_1")
    assert "cannot be paused" in await err(ctx, "schedule.pause", schedule_id="sch_1")
    assert "cannot be changed" in await err(ctx, "schedule.update", schedule_id="sch_1", time="10:00")
    assert "already cancelled" in await err(ctx, "schedule.cancel", schedule_id="sch_1")
    # Cancelled schedules leave the active list but stay in history.
    assert "sch_1" not in {s["id"] for s in (await ok(ctx, "schedule.list"))["schedules"]}
    actions = [h["action"] for h in ctx.db["schedule_history"].rows_where("schedule_id = 1", order_by="id")]
    assert actions == ["paused", "resumed", "cancelled"]
    # A paused schedule can be cancelled too.
    assert (await ok(ctx, "schedule.cancel", schedule_id="sch_5"))["previous_status"] == "paused"


async def test_schedule_pause_until_resumes_by_itself(ctx, anchor):
    until = anchor + dt.timedelta(days=3)
    assert "not in the future" in await err(ctx, "schedule.pause", schedule_id="sch_2", until=anchor.isoformat())
    assert "YYYY-MM-DD" in await err(ctx, "schedule.pause", schedule_id="sch_2", until="next week")
    paused = await ok(ctx, "schedule.pause", schedule_id="sch_2", until=until.isoformat())
    assert paused["schedule"]["paused_until"] == until.isoformat()
    assert paused["schedule"]["next_run"] >= until.isoformat()
    # Pausing again with a new date moves the end of the pause.
    later = until + dt.timedelta(days=1)
    assert (await ok(ctx, "schedule.pause", schedule_id="sch_2", until=later.isoformat()))["schedule"][
        "paused_until"
    ] == later.isoformat()
    ctx.settings["now"] = dt.datetime.combine(later, dt.time(7, 0), BERLIN)
    listed = await ok(ctx, "schedule.list", query="planning")
    assert listed["schedules"][0]["status"] == "active"
    assert [h["action"] for h in ctx.db["schedule_history"].rows_where("schedule_id = 2", order_by="id")][-1] == (
        "auto_resumed"
    )


# --- tasks ------------------------------------------------------------------------------------------


async def test_tasks_list_order_and_filters(ctx, anchor):
    open_tasks = await ok(ctx, "tasks.list")
    assert [t["id"] for t in open_tasks["tasks"]] == ["tsk_4", "tsk_1", "tsk_5", "tsk_2", "tsk_3"]
    assert open_tasks["tasks"][0]["overdue"] is True and open_tasks["tasks"][1]["overdue"] is False
    soon = await ok(ctx, "tasks.list", due_before=(anchor + dt.timedelta(days=5)).isoformat())
    assert [t["id"] for t in soon["tasks"]] == ["tsk_4", "tsk_1"]
    done = await ok(ctx, "tasks.list", status="done")
    assert [t["id"] for t in done["tasks"]] == ["tsk_6"] and done["tasks"][0]["completed_at"]
    every = await ok(ctx, "tasks.list", status="all")
    assert every["count"] == 6 and every["tasks"][-1]["status"] == "done"
    assert "Bad due_before date" in await err(ctx, "tasks.list", due_before="tomorrow")


async def test_tasks_create_complete_and_read_back(ctx, anchor):
    made = await ok(ctx, "tasks.create", title="Water the balcony plants", due=anchor.isoformat(), notes="Both boxes")
    assert made["id"] == "tsk_7" and made["status"] == "open"
    assert "tsk_7" in {t["id"] for t in (await ok(ctx, "tasks.list"))["tasks"]}
    undated = await ok(ctx, "tasks.create", title="Someday: learn Portuguese")
    assert undated["due"] is None
    assert (await ok(ctx, "tasks.list"))["tasks"][-1]["id"] == undated["id"]  # undated tasks come last
    done = await ok(ctx, "tasks.complete", task_id="tsk_7")
    assert done["status"] == "done" and done["completed_at"].startswith(anchor.isoformat())
    assert "tsk_7" not in {t["id"] for t in (await ok(ctx, "tasks.list"))["tasks"]}
    assert "already done" in await err(ctx, "tasks.complete", task_id="tsk_7")
    assert "No task with id tsk_70" in await err(ctx, "tasks.complete", task_id="tsk_70")
    assert "Bad due date" in await err(ctx, "tasks.create", title="x", due="2026-13-01")


# --- notes ------------------------------------------------------------------------------------------


async def test_notes_search_with_snippets_and_tags(ctx):
    found = await ok(ctx, "notes.search", query="dinner roadmap")
    assert found["notes"][0]["title"] == "Lisbon offsite ideas" and "**" in found["notes"][0]["snippet"]
    work = await ok(ctx, "notes.search", query="standup format", tag="#Work")
    assert [n["id"] for n in work["notes"]] == ["note_2"] and work["tag"] == "work"
    assert (await ok(ctx, "notes.search", query="standup", tag="cooking"))["count"] == 0
    assert "no words" in await err(ctx, "notes.search", query="***")


async def test_notes_create_is_searchable(ctx):
    made = await ok(
        ctx,
        "notes.create",
        title="Bike service",
        body="Chain and brake pads, **before** spring.",
        tags=["Errands", " errands", "#bike", ""],
    )
    assert made["id"] == "note_6" and made["tags"] == ["errands", "bike"]
    found = await ok(ctx, "notes.search", query="brake pads", tag="bike")
    assert [n["id"] for n in found["notes"]] == ["note_6"]
    assert "title" in await err(ctx, "notes.create", title=" ", body="x")


# --- email subscriptions ----------------------------------------------------------------------------


async def test_email_subscriptions_filters(ctx):
    everything = await ok(ctx, "email.subscriptions")
    assert everything["count"] == 11 and "Demo data" in everything["source"]
    per_month = [s["per_month"] for s in everything["subscriptions"]]
    assert per_month == sorted(per_month, reverse=True)
    work = await ok(ctx, "email.subscriptions", account="work")
    assert {s["account"] for s in work["subscriptions"]} == {"work"} and work["count"] == 5
    busy = await ok(ctx, "email.subscriptions", account="personal", min_per_month=15)
    assert [s["list"] for s in busy["subscriptions"]] == [
        "ShopRight daily deals",
        "Morning Brief",
        "FlyCheap fare alerts",
    ]
    assert "min_per_month" in await err(ctx, "email.subscriptions", min_per_month=-1)
    assert "account" in await err(ctx, "email.subscriptions", account="school")


async def test_email_unsubscribe_records_and_hides(ctx):
    result = await ok(ctx, "email.unsubscribe", subscription_id="sub_6", archive_existing=True)
    assert result["status"] == "unsubscribed" and result["archived_messages"] == 412
    assert "RFC 8058" in result["method"] and "No unsubscribe request was sent" in result["note"]
    row = ctx.db["email_subscriptions"].get(6)
    assert (row["status"], row["archive_existing"], row["chat_id"]) == ("unsubscribed", 1, "chat_test")
    mailto = await ok(ctx, "email.unsubscribe", subscription_id="sub_3")
    assert mailto["archive_existing"] is False and mailto["archived_messages"] == 0
    assert mailto["method"] == "email to announce-leave@northwind.example"
    assert ctx.db["email_subscriptions"].get(3)["archive_existing"] == 0
    listed = await ok(ctx, "email.subscriptions")
    assert listed["count"] == 9 and listed["unsubscribed_not_shown"] == 2
    assert "sub_6" not in {s["id"] for s in listed["subscriptions"]}
    assert "already unsubscribed" in await err(ctx, "email.unsubscribe", subscription_id="sub_6")
    assert "No subscription with id sub_99" in await err(ctx, "email.unsubscribe", subscription_id="sub_99")


# --- web.fetch --------------------------------------------------------------------------------------

PAGE = """<!doctype html><html><head><title>Harbour &amp; Ferries</title>
<style>body{color:red}</style><script>alert("no")</script></head>
<body><nav><ul><li>Home</li><li>Timetable</li></ul></nav>
<h1>Ferry times</h1><p>The first ferry leaves at <b>06:10</b>.
It is free on Sundays.</p><pre>  Pier 1  06:10
  Pier 2  06:40</pre></body></html>"""


def _transport(handler, seen: list | None = None) -> httpx.MockTransport:
    def record(request: httpx.Request) -> httpx.Response:
        if seen is not None:
            seen.append(request)
        return handler(request)

    return httpx.MockTransport(record)


async def test_web_fetch_extracts_readable_text(ctx):
    seen: list[httpx.Request] = []
    ctx.settings["http_transport"] = _transport(
        lambda r: httpx.Response(200, text=PAGE, headers={"content-type": "text/html; charset=utf-8"}), seen
    )
    result = await call(ctx, "web.fetch", url="https://ferries.example/times")
    assert not result.is_error
    text = result.text()
    assert "Title: Harbour & Ferries" in text and "# Ferry times" in text
    assert "The first ferry leaves at 06:10. It is free on Sundays." in text
    assert "  Pier 1  06:10\n  Pier 2  06:40" in text and "- Timetable" in text
    assert "alert" not in text and "color:red" not in text
    assert result.structured["status"] == 200 and result.structured["truncated"] is False
    assert seen[0].headers["user-agent"].startswith("deferchat/")


async def test_web_fetch_follows_redirects_cuts_and_caps(ctx):
    long_text = "word " * 5000

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/old":
            return httpx.Response(301, headers={"location": "https://site.example/new"})
        return httpx.Response(200, text=long_text, headers={"content-type": "text/plain"})

    ctx.settings["http_transport"] = _transport(handler)
    result = await call(ctx, "web.fetch", url="https://site.example/old", max_chars=100)
    assert result.structured["final_url"] == "https://site.example/new"
    assert result.structured["truncated"] is True and "Showing the first 100 of 25000 characters" in result.text()
    assert result.text().endswith("word " * 20)
    ctx.settings["fetch_max_bytes"] = 1000
    capped = await call(ctx, "web.fetch", url="https://site.example/new", max_chars=50000)
    assert capped.structured["characters"] == 1000 and "stopped at 1000 bytes" in capped.text()


async def test_web_fetch_json_errors_and_binary(ctx):
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api":
            return httpx.Response(200, json={"temp": 21, "unit": "C"})
        if request.url.path == "/logo.png":
            return httpx.Response(200, content=b"\x89PNG\r\n", headers={"content-type": "image/png"})
        return httpx.Response(404, text="<h1>Not here</h1>", headers={"content-type": "text/html"})

    ctx.settings["http_transport"] = _transport(handler)
    api = await call(ctx, "web.fetch", url="https://api.example/api")
    assert json.loads(api.text().split("\n\n", 1)[1]) == {"temp": 21, "unit": "C"}
    missing = await err(ctx, "web.fetch", url="https://api.example/nope")
    assert missing.startswith("HTTP 404 Not Found from https://api.example/nope") and "# Not here" in missing
    assert "image/png" in await err(ctx, "web.fetch", url="https://api.example/logo.png")


async def test_web_fetch_refuses_bad_and_private_urls(ctx):
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.headers["host"] == "public.example":
            return httpx.Response(302, headers={"location": "http://169.254.169.254/latest/meta-data"})
        return httpx.Response(200, text="secret", headers={"content-type": "text/plain"})

    ctx.settings["http_transport"] = _transport(handler, seen)
    assert "absolute http" in await err(ctx, "web.fetch", url="ftp://files.example/x")
    assert "absolute http" in await err(ctx, "web.fetch", url="/relative/path")
    for url in (
        "http://127.0.0.1:8080/admin",
        "http://localhost/",
        "http://[::1]/",
        "http://10.1.2.3/",
        "http://192.168.0.1/",
    ):
        assert "Refused to fetch" in await err(ctx, "web.fetch", url=url), url
    assert seen == []  # none of those reached the transport
    redirected = await err(ctx, "web.fetch", url="https://public.example/")
    assert "Refused" in redirected and "169.254.169.254" in redirected
    assert [(r.headers["host"], str(r.url)) for r in seen] == [("public.example", "https://93.184.215.14/")]
    ctx.settings["allow_private_network"] = True
    assert "secret" in (await call(ctx, "web.fetch", url="http://127.0.0.1:8080/admin")).text()


async def test_web_fetch_timeout_is_an_error_result(ctx):
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("slow", request=request)

    ctx.settings["http_transport"] = _transport(handler)
    ctx.settings["http_timeout"] = 3
    assert "timed out after 3 s" in await err(ctx, "web.fetch", url="https://slow.example/")


def test_html_to_text_handles_entities_lists_and_tables():
    title, text = html_to_text(
        "<title>T</title><p>a&nbsp;&lt;b&gt;</p><table><tr><th>x</th><td>1</td></tr>"
        "<tr><th>y</th><td>2</td></tr></table><ol><li>one<li>two</ol><noscript>no</noscript>"
    )
    assert title == "T"
    assert text == "a <b>\n\n| x | 1\n| y | 2\n\n- one\n- two"


# --- web.search -------------------------------------------------------------------------------------


async def test_web_search_without_a_backend_says_how_to_configure_one(ctx):
    text = await err(ctx, "web.search", query="ferry times")
    assert text == NO_SEARCH_BACKEND and "searxng_url in the [tools] table" in text


async def test_web_search_queries_searxng(ctx):
    seen: list[httpx.Request] = []
    payload = {
        "results": [
            {
                "title": f" Result {i} ",
                "url": f"https://r{i}.example/",
                "content": f"snippet {i}",
                "engine": "duckduckgo",
            }
            for i in range(8)
        ]
        + [{"title": "no url"}]
    }
    ctx.settings["http_transport"] = _transport(lambda r: httpx.Response(200, json=payload), seen)
    ctx.settings["searxng_url"] = "http://search.local:8888/"
    found = await ok(ctx, "web.search", query="ferry times", max_results=3)
    assert found["backend"] == "searxng" and found["count"] == 3
    assert found["results"][0] == {
        "title": "Result 0",
        "url": "https://r0.example/",
        "snippet": "snippet 0",
        "engine": "duckduckgo",
    }
    request = seen[0]
    assert (request.url.host, request.url.path) == ("search.local", "/search")
    assert request.url.params["q"] == "ferry times" and request.url.params["format"] == "json"
    default = await ok(ctx, "web.search", query="ferries")
    assert default["count"] == 5


async def test_web_search_backend_errors(ctx):
    ctx.settings["searxng_url"] = "http://search.example"
    ctx.settings["http_transport"] = _transport(lambda r: httpx.Response(403, text="Forbidden"))
    assert "search.formats" in await err(ctx, "web.search", query="x")
    ctx.settings["http_transport"] = _transport(lambda r: httpx.Response(200, text="<html>not json</html>"))
    assert "did not return JSON" in await err(ctx, "web.search", query="x")
    ctx.settings["http_transport"] = _transport(lambda r: httpx.Response(502))
    assert "HTTP 502" in await err(ctx, "web.search", query="x")

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    ctx.settings["http_transport"] = _transport(refuse)
    assert "failed: ConnectError: connection refused" in await err(ctx, "web.search", query="x")


# --- notify.owner -----------------------------------------------------------------------------------


async def test_notify_owner_without_a_channel_is_only_queued(ctx):
    result = await ok(ctx, "notify.owner", message="Your 10:00 standup starts in 5 minutes.")
    assert (result["status"], result["delivered"]) == ("queued", False) and "NOT notified" in result["note"]
    row = ctx.db["notifications"].get(int(result["id"][4:]))
    assert (row["status"], row["message"], row["priority"], row["call_id"]) == (
        "queued",
        "Your 10:00 standup starts in 5 minutes.",
        "normal",
        "call_1",
    )


async def test_notify_owner_posts_to_ntfy(ctx):
    seen: list[httpx.Request] = []
    ctx.settings["http_transport"] = _transport(lambda r: httpx.Response(200, json={"id": "abc"}), seen)
    ctx.settings["ntfy_topic_url"] = "https://ntfy.example/owner-topic"
    ctx.settings["ntfy_token"] = "tk_secret"
    result = await ok(ctx, "notify.owner", message="Flight boards at gate 12.", priority="high")
    assert (result["status"], result["delivered"]) == ("delivered", True)
    request = seen[0]
    assert request.method == "POST" and str(request.url) == "https://ntfy.example/owner-topic"
    assert request.content == "Flight boards at gate 12.".encode()
    assert request.headers["priority"] == "high" and request.headers["authorization"] == "Bearer tk_secret"
    row = ctx.db["notifications"].get(int(result["id"][4:]))
    assert (row["status"], row["attempts"], row["channel"]) == ("delivered", 1, "ntfy") and row["delivered_at"]


async def test_notify_owner_reports_a_failed_delivery(ctx):
    ctx.settings["http_transport"] = _transport(lambda r: httpx.Response(500))
    ctx.settings["ntfy_topic_url"] = "https://ntfy.example/owner-topic"
    result = await ok(ctx, "notify.owner", message="Build finished.")
    assert (result["status"], result["delivered"]) == ("failed", False) and "HTTP 500" in result["error"]
    assert ctx.db["notifications"].get(int(result["id"][4:]))["status"] == "failed"
    assert "message" in await err(ctx, "notify.owner", message="  ")
    assert "priority" in await err(ctx, "notify.owner", message="x", priority="urgent")


# --- workspace --------------------------------------------------------------------------------------


async def test_workspace_write_then_read(ctx, workspace):
    made = await ok(ctx, "workspace.write_file", path="notes/2026/plan.md", content="line 1\nline 2\nline 3\n")
    assert made == {"path": "notes/2026/plan.md", "created": True, "replaced": False, "bytes": 21, "lines": 3}
    assert (workspace / "notes/2026/plan.md").read_text() == "line 1\nline 2\nline 3\n"
    read = await call(ctx, "workspace.read_file", path="notes/2026/plan.md")
    assert read.text() == "notes/2026/plan.md: lines 1-3 of 3\n     1\tline 1\n     2\tline 2\n     3\tline 3"
    assert "already exists; pass overwrite=true" in await err(
        ctx, "workspace.write_file", path="notes/2026/plan.md", content="new"
    )
    assert (workspace / "notes/2026/plan.md").read_text().startswith("line 1")
    replaced = await ok(ctx, "workspace.write_file", path="notes/2026/plan.md", content="new", overwrite=True)
    assert replaced["replaced"] is True
    assert "\tnew" in (await call(ctx, "workspace.read_file", path="./notes/2026/../2026/plan.md")).text()
    assert sorted(p.name for p in (workspace / "notes/2026").iterdir()) == ["plan.md"]  # no temp files left


async def test_workspace_read_window(ctx, workspace):
    (workspace / "log.txt").write_text("".join(f"entry {i}\n" for i in range(1, 101)) + "x" * 3000)
    window = await call(ctx, "workspace.read_file", path="log.txt", offset=10, limit=3)
    assert window.text().splitlines() == [
        "log.txt: lines 10-12 of 101",
        "    10\tentry 10",
        "    11\tentry 11",
        "    12\tentry 12",
        "[89 more lines; call again with offset=13 to read on.]",
    ]
    assert window.structured == {"path": "log.txt", "total_lines": 101, "first_line": 10, "last_line": 12}
    tail = await call(ctx, "workspace.read_file", path="log.txt", offset=101)
    assert "line cut at 2000 characters" in tail.text()
    assert "past the end" in await err(ctx, "workspace.read_file", path="log.txt", offset=500)
    assert "limit" in await err(ctx, "workspace.read_file", path="log.txt", limit=6000)
    (workspace / "empty.txt").write_text("")
    assert (await call(ctx, "workspace.read_file", path="empty.txt")).text() == "empty.txt is empty."


async def test_workspace_read_errors(ctx, workspace):
    (workspace / "folder").mkdir()
    (workspace / "blob.bin").write_bytes(b"\x00\x01\x02")
    assert "No file 'missing.txt'" in await err(ctx, "workspace.read_file", path="missing.txt")
    assert "is a folder" in await err(ctx, "workspace.read_file", path="folder")
    assert "binary file" in await err(ctx, "workspace.read_file", path="blob.bin")


@pytest.mark.parametrize(
    "path",
    [
        "../secret.txt",
        "a/../../secret.txt",
        "/etc/passwd",
        "~/secret.txt",
        "notes/../../../secret.txt",
        "\\\\server\\share",
    ],
)
async def test_workspace_refuses_paths_outside(ctx, workspace, path):
    (workspace.parent / "secret.txt").write_text("top secret")
    (workspace / "notes").mkdir()
    for name, extra in (("workspace.read_file", {}), ("workspace.write_file", {"content": "x", "overwrite": True})):
        text = await err(ctx, name, path=path, **extra)
        assert "outside the workspace" in text or "is absolute" in text, text
    assert (workspace.parent / "secret.txt").read_text() == "top secret"


async def test_workspace_refuses_symlinks_that_leave(ctx, workspace):
    outside = workspace.parent / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret")
    os.symlink(outside / "secret.txt", workspace / "link.txt")
    os.symlink(outside, workspace / "linkdir")
    (workspace / "real.txt").write_text("inside\n")
    os.symlink(workspace / "real.txt", workspace / "alias.txt")  # a link that stays inside is fine
    assert "outside the workspace" in await err(ctx, "workspace.read_file", path="link.txt")
    assert "outside the workspace" in await err(ctx, "workspace.read_file", path="linkdir/secret.txt")
    assert "outside the workspace" in await err(ctx, "workspace.write_file", path="linkdir/new.txt", content="x")
    assert "outside the workspace" in await err(
        ctx, "workspace.write_file", path="link.txt", content="x", overwrite=True
    )
    assert not (outside / "new.txt").exists() and (outside / "secret.txt").read_text() == "top secret"
    # a link that stays inside is followed by the check, and the tool opens where it leads
    assert "\tinside" in (await checked(ctx, "workspace.read_file", path="alias.txt")).text()
    assert "not the path that was checked" in await err(ctx, "workspace.read_file", path="alias.txt")
    found = await ok(ctx, "workspace.search", pattern="secret")
    assert [m["path"] for m in found["matches"]] == []
    assert found["skipped"] == {"outside_workspace": 1}


async def test_workspace_write_refuses_folders(ctx, workspace):
    (workspace / "docs").mkdir()
    assert "folder" in await err(ctx, "workspace.write_file", path="docs", content="x", overwrite=True)
    assert "folder" in await err(ctx, "workspace.write_file", path="new/", content="x")
    assert "folder" in await err(ctx, "workspace.write_file", path=".", content="x", overwrite=True)


async def test_workspace_search_regex_text_glob_and_names(ctx, workspace):
    (workspace / "docs").mkdir()
    (workspace / "docs/ferry.md").write_text("# Ferries\nFirst ferry 06:10\nlast ferry 23:40\n")
    (workspace / "docs/bus.txt").write_text("Bus 7 leaves at 06:15\n")
    (workspace / "todo(1).md").write_text("call the ferry company\n")
    (workspace / ".git").mkdir()
    (workspace / ".git/config").write_text("ferry\n")
    (workspace / "photo.jpg").write_bytes(b"\x00ferry")
    regex = await ok(ctx, "workspace.search", pattern=r"\b06:1\d")
    assert regex["mode"] == "regex"
    assert {m["path"]: [ln["line"] for ln in m["lines"]] for m in regex["matches"]} == {
        "docs/bus.txt": [1],
        "docs/ferry.md": [2],
    }
    smart = await ok(ctx, "workspace.search", pattern="ferry")  # lower case: case-insensitive
    assert {m["path"] for m in smart["matches"]} == {"docs/ferry.md", "todo(1).md"}
    assert smart["skipped"] == {"binary": 1}
    exact = await ok(ctx, "workspace.search", pattern="Ferr")  # has upper case: case-sensitive
    assert [(m["path"], [ln["line"] for ln in m["lines"]]) for m in exact["matches"]] == [("docs/ferry.md", [1])]
    plain = await ok(ctx, "workspace.search", pattern="todo(")  # not a valid regex: searched as text
    assert plain["mode"] == "text" and plain["matches"][0] == {"path": "todo(1).md", "name_match": True, "lines": []}
    globbed = await ok(ctx, "workspace.search", pattern="ferry", glob="*.md")
    assert {m["path"] for m in globbed["matches"]} == {"docs/ferry.md", "todo(1).md"}
    nested = await ok(ctx, "workspace.search", pattern="06", glob="docs/*.txt")
    assert [m["path"] for m in nested["matches"]] == ["docs/bus.txt"]
    assert (await ok(ctx, "workspace.search", pattern="no such words"))["files_matched"] == 0


async def test_workspace_search_without_a_workspace(ctx, workspace):
    workspace.rmdir()
    assert "does not exist" in await err(ctx, "workspace.search", pattern="x")
    made = await ok(ctx, "workspace.write_file", path="first.txt", content="hello")
    assert made["created"] and (workspace / "first.txt").read_text() == "hello"


# --- the schema the pipeline validates against accepts what the tools accept ---------------------------


@pytest.mark.parametrize(
    "name, arguments",
    [
        ("schedule.update", {"schedule_id": "sch_1", "time": "10:00"}),
        ("calendar.create_event", {"title": "x", "start": "2026-03-04T10:00", "attendees": ["a@b.example"]}),
        ("workspace.write_file", {"path": "a.txt", "content": "", "overwrite": True}),
        ("email.unsubscribe", {"subscription_id": "sub_1", "archive_existing": True}),
    ],
)
def test_valid_calls_pass_both_the_roster_schema_and_the_model(name, arguments):
    jsonschema.validate(arguments, CONFIGURED[name].input_schema)
    tool = builtin_tool(name)
    assert tool is not None
    tool.args.model_validate(arguments)
