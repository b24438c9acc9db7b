"""The built-in implementations of the production roster's 27 configured tools.

Each tool is an async function registered under its configured name. Its arguments are
parsed by a pydantic model (``ARG_MODELS[name]``) whose fields are exactly the properties of
the tool's input schema in ``core/roster/rosters/production.json`` (a unit test holds the two
together). Anything the caller got wrong (an unknown id, a bad time, a path outside the
workspace, a state change that is not allowed) comes back as ``ToolResult(is_error=True)``
with a message that says what was wrong and what to do instead. Bugs are not dressed up as
tool errors: unexpected exceptions propagate to the pipeline.

State lives in the tables of :mod:`core.builtins.data`; ids are shown with a prefix
(``sch_3``, ``tsk_4``, ``per_12`` ...). Times are shown in the owner's timezone
(``ctx.timezone``) unless a row names its own.

Settings read from ``ctx.settings`` (the ``[tools]`` table of config.toml, plus what tests inject):

* ``now``: a timezone-aware ``datetime`` (or a callable returning one) that replaces the clock.
* ``http_transport``: an ``httpx`` async transport (tests pass ``httpx.MockTransport``).
* ``http_timeout`` (seconds, default 20), ``fetch_max_bytes`` (default 2 000 000),
  ``allow_private_network`` (default false: web.fetch refuses loopback/private IP literals and
  ``localhost``).
* ``searxng_url``: a SearXNG instance for web.search (none: web.search says how to set one up).
* ``ntfy_topic_url`` and optionally ``ntfy_token``: where notify.owner posts (none: queued only).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import fnmatch
import functools
import ipaddress
import json
import os
import re
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from core.builtins import Builtin, ToolContext, builtin
from core.builtins.data import ID_PREFIXES, WEEKDAYS
from core.tools import ToolResult

if TYPE_CHECKING:
    import httpx

UTC = dt.timezone.utc
WEEKDAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
USER_AGENT = "deferchat/0.1 (+https://github.com/deferchat)"


# --- the registration wrapper ------------------------------------------------------------------------


class ToolError(Exception):
    """A mistake in the call (not a bug): becomes an error result with this message."""


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


A = TypeVar("A", bound=Args)
Impl = Callable[[A, ToolContext], Awaitable[ToolResult]]

# Tool name -> the model its arguments are parsed with (one field per schema property).
ARG_MODELS: dict[str, type[Args]] = {}


def tool(name: str, model: type[A]) -> Callable[[Impl[A]], Builtin]:
    """Register the decorated function as the built-in ``name``, its arguments parsed with ``model``."""

    def register(fn: Impl[A]) -> Builtin:
        @functools.wraps(fn)
        async def run(arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
            if arguments is not None and not isinstance(arguments, dict):
                return _error(f"Invalid arguments: expected a JSON object, got {type(arguments).__name__}.")
            try:
                args = model.model_validate({} if arguments is None else arguments)
            except ValidationError as exc:
                return _error(_explain(exc, model))
            try:
                return await fn(args, ctx)
            except ToolError as exc:
                return _error(str(exc))

        ARG_MODELS[name] = model
        builtin(name)(run)
        return run

    return register


def _error(message: str) -> ToolResult:
    return ToolResult.of_text(message, is_error=True)


def _explain(exc: ValidationError, model: type[Args]) -> str:
    problems = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err.get("loc", ()))
        if err["type"] == "extra_forbidden":
            problems.append(f"unexpected argument '{where}'")
        elif err["type"] == "missing":
            problems.append(f"missing required argument '{where}'")
        else:
            got = json.dumps(err.get("input"), ensure_ascii=False, default=str)
            got = got if len(got) <= 80 else got[:77] + "..."
            problems.append(f"{where or 'arguments'}: {err['msg']} (got {got})")
    return f"Invalid arguments: {'; '.join(problems)}. This tool accepts: {', '.join(model.model_fields)}."


# Required free text: surrounding whitespace is dropped and it may not be empty.
Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
Day = Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
HHMM = Annotated[str, Field(pattern=r"^[0-2][0-9]:[0-5][0-9]$")]


# --- shared helpers ---------------------------------------------------------------------------------


def _now(ctx: ToolContext) -> dt.datetime:
    """The current moment (aware), or the clock injected through ``ctx.settings['now']``."""
    fixed = ctx.settings.get("now")
    if callable(fixed):
        fixed = fixed()
    if isinstance(fixed, str):
        fixed = dt.datetime.fromisoformat(fixed)
    if isinstance(fixed, dt.datetime):
        return fixed if fixed.tzinfo else fixed.replace(tzinfo=UTC)
    return dt.datetime.now(UTC)


def _zone(name: str, what: str = "timezone") -> ZoneInfo:
    try:
        if not name or name != name.strip():
            raise ValueError(name)
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ToolError(f"Unknown {what} {name!r}: use an IANA timezone name such as Europe/Berlin, "
                        "America/New_York or UTC.") from None


def _owner_zone(ctx: ToolContext) -> ZoneInfo:
    return _zone(ctx.timezone, "owner timezone (ctx.timezone)")


def _stamp(ctx: ToolContext) -> float:
    return round(_now(ctx).timestamp(), 6)


def _when(ts: float | None, tz: ZoneInfo) -> str | None:
    """A stored epoch time as an ISO moment in ``tz``."""
    if ts is None:
        return None
    return dt.datetime.fromtimestamp(ts, tz).isoformat(timespec="minutes")


_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _parse_date(text: str, what: str) -> dt.date:
    text = text.strip()
    try:
        if not _DATE.match(text):
            raise ValueError
        return dt.date.fromisoformat(text)
    except ValueError:
        raise ToolError(f"Bad {what} {text!r}: expected a date as YYYY-MM-DD, e.g. 2026-03-14.") from None


def _parse_moment(text: str, tz: ZoneInfo, what: str) -> tuple[dt.datetime, bool]:
    """An ISO 8601 date or date-time as an aware datetime in ``tz``, and whether it was a bare date."""
    text = text.strip()
    if _DATE.match(text):
        return dt.datetime.combine(_parse_date(text, what), dt.time(0), tz), True
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        raise ToolError(f"Bad {what} {text!r}: expected ISO 8601 such as 2026-03-14 or 2026-03-14T15:30.") from None
    return (moment.replace(tzinfo=tz) if moment.tzinfo is None else moment.astimezone(tz)), False


def _check_hhmm(value: str, what: str = "time") -> str:
    hours, minutes = int(value[:2]), int(value[3:])
    if hours > 23 or minutes > 59:
        raise ToolError(f"Bad {what} {value!r}: use 24-hour HH:MM between 00:00 and 23:59.")
    return value


def _format_id(table: str, number: int) -> str:
    return f"{ID_PREFIXES[table]}_{number}"


_NOUNS = {"schedules": "schedule", "tasks": "task", "notes": "note", "memory_facts": "memory fact",
          "people": "contact", "calendar_events": "event", "email_subscriptions": "subscription",
          "notifications": "notification"}
_LIST_TOOL = {"schedules": "schedule.list", "tasks": "tasks.list", "people": "people.search",
              "email_subscriptions": "email.subscriptions"}


def _parse_id(table: str, raw: str) -> int | None:
    match = re.fullmatch(rf"{ID_PREFIXES[table]}_(\d+)", raw.strip())
    return int(match.group(1)) if match else None


def _row(ctx: ToolContext, table: str, raw: str) -> dict[str, Any]:
    """The row ``raw`` (an id like ``sch_3``) names, or a ToolError saying why there is none."""
    noun, lister = _NOUNS[table], _LIST_TOOL.get(table, "")
    hint = f" Use {lister} to find the right id." if lister else ""
    number = _parse_id(table, raw)
    if number is None:
        other = next((t for t, p in ID_PREFIXES.items() if re.fullmatch(rf"{p}_\d+", raw.strip())), None)
        if other:
            raise ToolError(f"{raw!r} is a {_NOUNS[other]} id, not a {noun} id ({noun} ids look like "
                            f"{ID_PREFIXES[table]}_3).{hint}")
        raise ToolError(f"{raw!r} is not a {noun} id ({noun} ids look like {ID_PREFIXES[table]}_3).{hint}")
    rows = list(ctx.db[table].rows_where("id = ?", [number]))
    if not rows:
        raise ToolError(f"No {noun} with id {raw.strip()}.{hint}")
    return rows[0]


def _json_list(text: str | None) -> list[Any]:
    return json.loads(text) if text else []


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def _like(term: str) -> str:
    return "%" + term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


_STOPWORDS = frozenset("a an and are at do for i in is it me my of on or the to what when where which who with".split())


def _fts_query(text: str) -> str:
    """An FTS5 query matching any of the words (best matches first via bm25), prefixes included."""
    words = _words(text)
    meaningful = [w for w in words if w not in _STOPWORDS] or words
    if not meaningful:
        raise ToolError(f"The query {text!r} has no words to search for.")
    return " OR ".join(f'"{w}"*' for w in dict.fromkeys(meaningful))


_EMAIL = re.compile(r"^[^@\s<>]+@[^@\s<>]+\.[^@\s<>]+$")


def _check_email(value: str) -> str:
    value = value.strip()
    if not _EMAIL.match(value):
        raise ToolError(f"Bad email address {value!r}: expected something like name@example.com.")
    return value


# --- time.now ---------------------------------------------------------------------------------------


class TimeNowArgs(Args):
    timezone: str | None = None


@tool("time.now", TimeNowArgs)
async def time_now(args: TimeNowArgs, ctx: ToolContext) -> ToolResult:
    name = ctx.timezone if args.timezone is None else args.timezone.strip()
    tz = _zone(name) if args.timezone is not None else _owner_zone(ctx)
    now = _now(ctx).astimezone(tz)
    offset = now.strftime("%z")
    return ToolResult.of_json({
        "timezone": name,
        "datetime": now.isoformat(timespec="seconds"),
        "date": now.date().isoformat(),
        "time": now.strftime("%H:%M"),
        "weekday": WEEKDAY_NAMES[now.weekday()],
        "utc_offset": f"{offset[:3]}:{offset[3:]}",
        "owner_timezone": ctx.timezone,
    })


# --- memory -----------------------------------------------------------------------------------------


class MemorySearchArgs(Args):
    query: Text
    limit: int = Field(10, ge=1, le=50)


class MemorySaveArgs(Args):
    fact: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=1000)]
    topic: str | None = None


def _fact_view(row: dict[str, Any], tz: ZoneInfo) -> dict[str, Any]:
    return {"id": _format_id("memory_facts", row["id"]), "fact": row["fact"], "topic": row["topic"],
            "saved_at": _when(row["created_at"], tz)}


@tool("memory.search", MemorySearchArgs)
async def memory_search(args: MemorySearchArgs, ctx: ToolContext) -> ToolResult:
    tz = _owner_zone(ctx)
    rows = ctx.db.query(
        "select m.* from memory_facts_fts f join memory_facts m on m.id = f.rowid "
        "where memory_facts_fts match ? order by bm25(memory_facts_fts), m.id limit ?",
        [_fts_query(args.query), args.limit])
    facts = [_fact_view(r, tz) for r in rows]
    result: dict[str, Any] = {"query": args.query, "count": len(facts), "facts": facts}
    if not facts:
        result["note"] = "Nothing remembered matches. Ask the owner, and save the answer with memory.save."
    return ToolResult.of_json(result)


@tool("memory.save", MemorySaveArgs)
async def memory_save(args: MemorySaveArgs, ctx: ToolContext) -> ToolResult:
    tz = _owner_zone(ctx)
    topic = (args.topic or "").strip().lower() or None
    same = list(ctx.db["memory_facts"].rows_where("lower(fact) = lower(?)", [args.fact], limit=1))
    if same:
        return ToolResult.of_json({"saved": False, "note": "Already remembered; nothing was added.",
                                   **_fact_view(same[0], tz)})
    table = ctx.db["memory_facts"].insert({"fact": args.fact, "topic": topic, "created_at": _stamp(ctx),
                                           "chat_id": ctx.chat_id, "demo": 0})
    row = ctx.db["memory_facts"].get(table.last_pk)
    return ToolResult.of_json({"saved": True, **_fact_view(row, tz)})


# --- people -----------------------------------------------------------------------------------------


class PeopleSearchArgs(Args):
    query: Text
    limit: int = Field(10, ge=1, le=50)


class PeopleGetArgs(Args):
    person_id: Text


class PeopleUpdateArgs(Args):
    person_id: Text
    email: str | None = None
    phone: str | None = None
    birthday: str | None = None
    notes: str | None = None


_PHONE_CHARS = re.compile(r"^[+\d\s().-]+$")


def _person_summary(row: dict[str, Any]) -> dict[str, Any]:
    return {"id": _format_id("people", row["id"]), "name": row["name"], "company": row["company"],
            "email": row["email"], "phone": row["phone"], "relationship": row["relationship"]}


@tool("people.search", PeopleSearchArgs)
async def people_search(args: PeopleSearchArgs, ctx: ToolContext) -> ToolResult:
    digits = re.sub(r"\D", "", args.query)
    if _PHONE_CHARS.match(args.query) and len(digits) >= 4:
        # A phone number: compare digits only, against the primary and the other numbers.
        where = "(coalesce(phone, '') || ' ' || coalesce(other_phones, '')) like ?"
        params: list[Any] = [_like(digits)]
    else:
        haystack = ("lower(name || ' ' || coalesce(company, '') || ' ' || coalesce(email, '') || ' ' || "
                    "coalesce(other_emails, '') || ' ' || coalesce(relationship, ''))")
        terms = args.query.lower().split()
        where = " and ".join(f"{haystack} like ? escape '\\'" for _ in terms)
        params = [_like(t) for t in terms]
    rows = ctx.db["people"].rows_where(where, params, order_by="name, id", limit=args.limit)
    people = [_person_summary(r) for r in rows]
    return ToolResult.of_json({"query": args.query, "count": len(people), "people": people})


def _person_view(row: dict[str, Any], tz: ZoneInfo) -> dict[str, Any]:
    return {
        "id": _format_id("people", row["id"]), "name": row["name"], "company": row["company"],
        "emails": [e for e in [row["email"], *_json_list(row["other_emails"])] if e],
        "phones": [p for p in [row["phone"], *_json_list(row["other_phones"])] if p],
        "birthday": row["birthday"], "relationship": row["relationship"], "notes": row["notes"],
        "updated_at": _when(row["updated_at"], tz),
    }


@tool("people.get", PeopleGetArgs)
async def people_get(args: PeopleGetArgs, ctx: ToolContext) -> ToolResult:
    return ToolResult.of_json(_person_view(_row(ctx, "people", args.person_id), _owner_zone(ctx)))


def _clean_phone(value: str) -> str:
    compact = re.sub(r"[\s().-]", "", value)
    if not re.fullmatch(r"\+[1-9]\d{6,14}", compact):
        raise ToolError(f"Bad phone number {value!r}: use E.164 form, a + and 7 to 15 digits, e.g. +15550100.")
    return compact


def _clean_birthday(value: str, today: dt.date) -> str:
    value = value.strip()
    try:
        if re.fullmatch(r"--\d{2}-\d{2}", value):
            dt.date.fromisoformat("2000" + value[1:])  # a leap year, so --02-29 is fine
            return value
        born = _parse_date(value, "birthday")
    except (ValueError, ToolError):
        raise ToolError(f"Bad birthday {value!r}: use YYYY-MM-DD, or --MM-DD when the year is unknown.") from None
    if born > today:
        raise ToolError(f"Bad birthday {value!r}: it is in the future.")
    return value


@tool("people.update", PeopleUpdateArgs)
async def people_update(args: PeopleUpdateArgs, ctx: ToolContext) -> ToolResult:
    row = _row(ctx, "people", args.person_id)
    tz = _owner_zone(ctx)
    given = {k: v for k, v in args.model_dump(exclude={"person_id"}).items() if v is not None}
    if not given:
        raise ToolError("Nothing to change: pass at least one of email, phone, birthday or notes "
                        "(an empty string clears a field).")
    new: dict[str, Any] = {}
    for key, value in given.items():
        if value.strip() == "":
            new[key] = None
        elif key == "email":
            new[key] = _check_email(value)
        elif key == "phone":
            new[key] = _clean_phone(value)
        elif key == "birthday":
            new[key] = _clean_birthday(value, _now(ctx).astimezone(tz).date())
        else:
            new[key] = value.strip()
    changes = {k: {"from": row[k], "to": v} for k, v in new.items() if row[k] != v}
    if changes:
        update: dict[str, Any] = {k: c["to"] for k, c in changes.items()}
        if "email" in update:  # a secondary address promoted to primary is not kept twice
            update["other_emails"] = json.dumps([e for e in _json_list(row["other_emails"]) if e != update["email"]])
        if "phone" in update:
            update["other_phones"] = json.dumps([p for p in _json_list(row["other_phones"]) if p != update["phone"]])
        update["updated_at"] = _stamp(ctx)
        ctx.db["people"].update(row["id"], update)
    result = {"id": _format_id("people", row["id"]), "name": row["name"], "changed": changes,
              "contact": _person_view(ctx.db["people"].get(row["id"]), tz)}
    if not changes:
        result["note"] = "Nothing changed: the contact already had these values."
    return ToolResult.of_json(result)


# --- calendar ---------------------------------------------------------------------------------------


class CalendarListArgs(Args):
    start: Text
    end: str | None = None
    query: str | None = None


class CalendarCreateArgs(Args):
    title: Text
    start: Text
    duration_minutes: int = Field(30, ge=5, le=1440)
    location: str | None = None
    attendees: list[str] | None = None


def _event_bounds(row: dict[str, Any], owner: ZoneInfo) -> tuple[dt.datetime, dt.datetime]:
    tz = ZoneInfo(row["timezone"]) if row["timezone"] else owner
    start = dt.datetime.fromisoformat(row["start_local"]).replace(tzinfo=tz)
    end = (start.astimezone(UTC) + dt.timedelta(minutes=row["duration_minutes"])).astimezone(tz)
    return start, end


def _event_view(row: dict[str, Any], owner: ZoneInfo) -> dict[str, Any]:
    start, end = _event_bounds(row, owner)
    return {"id": _format_id("calendar_events", row["id"]), "title": row["title"],
            "start": start.astimezone(owner).isoformat(timespec="minutes"),
            "end": end.astimezone(owner).isoformat(timespec="minutes"),
            "duration_minutes": row["duration_minutes"], "location": row["location"],
            "attendees": _json_list(row["attendees"])}


def _events_between(ctx: ToolContext, start: dt.datetime, end: dt.datetime, owner: ZoneInfo,
                    words: list[str] | None = None) -> list[dict[str, Any]]:
    """Events overlapping [start, end), earliest first."""
    # Stored starts are local wall times; widen the SQL window by more than any UTC offset plus
    # the longest event, then compare exact moments.
    low = (start.astimezone(owner) - dt.timedelta(days=3)).strftime("%Y-%m-%dT%H:%M")
    high = (end.astimezone(owner) + dt.timedelta(days=2)).strftime("%Y-%m-%dT%H:%M")
    found = []
    for row in ctx.db["calendar_events"].rows_where("start_local >= ? and start_local < ?", [low, high]):
        ev_start, ev_end = _event_bounds(row, owner)
        title = row["title"].lower()
        if ev_start < end and ev_end > start and all(w in title for w in words or []):
            found.append((ev_start.astimezone(UTC), row["id"], row))
    return [_event_view(row, owner) for _, _, row in sorted(found, key=lambda f: (f[0], f[1]))]


@tool("calendar.list_events", CalendarListArgs)
async def calendar_list_events(args: CalendarListArgs, ctx: ToolContext) -> ToolResult:
    owner = _owner_zone(ctx)
    start, _ = _parse_moment(args.start, owner, "start")
    if args.end is None or not args.end.strip():
        end = dt.datetime.combine(start.date() + dt.timedelta(days=1), dt.time(0), owner)
    else:
        end, end_is_date = _parse_moment(args.end, owner, "end")
        if end_is_date:  # a bare end date includes that whole day
            end = dt.datetime.combine(end.date() + dt.timedelta(days=1), dt.time(0), owner)
    if end <= start:
        raise ToolError(f"The range is empty: end {end.isoformat(timespec='minutes')} is not after "
                        f"start {start.isoformat(timespec='minutes')}.")
    if end - start > dt.timedelta(days=366):
        raise ToolError("The range is longer than a year; ask for a shorter one.")
    events = _events_between(ctx, start, end, owner, _words(args.query or ""))
    return ToolResult.of_json({"start": start.isoformat(timespec="minutes"), "end": end.isoformat(timespec="minutes"),
                               "timezone": ctx.timezone, "query": args.query, "count": len(events),
                               "events": events})


@tool("calendar.create_event", CalendarCreateArgs)
async def calendar_create_event(args: CalendarCreateArgs, ctx: ToolContext) -> ToolResult:
    owner = _owner_zone(ctx)
    start, is_date = _parse_moment(args.start, owner, "start")
    if is_date:
        raise ToolError(f"start {args.start!r} has no time of day; give a date-time such as "
                        f"{args.start.strip()}T09:30.")
    attendees = list(dict.fromkeys(_check_email(a) for a in args.attendees or []))
    end = (start.astimezone(UTC) + dt.timedelta(minutes=args.duration_minutes)).astimezone(owner)
    conflicts = _events_between(ctx, start, end, owner)
    table = ctx.db["calendar_events"].insert({
        "title": args.title, "start_local": start.strftime("%Y-%m-%dT%H:%M"),
        "duration_minutes": args.duration_minutes, "timezone": ctx.timezone,
        "location": (args.location or "").strip() or None, "attendees": json.dumps(attendees),
        "created_at": _stamp(ctx), "chat_id": ctx.chat_id, "demo": 0})
    result: dict[str, Any] = {"created": True, **_event_view(ctx.db["calendar_events"].get(table.last_pk), owner),
                              "conflicts": conflicts}
    notes = []
    if conflicts:
        notes.append(f"It overlaps {len(conflicts)} existing event(s); tell the owner.")
    if start < _now(ctx):
        notes.append("It starts in the past.")
    if attendees:
        notes.append("No invitations were sent: the event is on the owner's local calendar only.")
    if notes:
        result["note"] = " ".join(notes)
    return ToolResult.of_json(result)


# --- schedules --------------------------------------------------------------------------------------


class ScheduleCreateArgs(Args):
    title: Text
    time: HHMM
    days: list[Day] | None = None
    timezone: str | None = None


class ScheduleListArgs(Args):
    status: Literal["active", "paused", "cancelled", "all"] = "active"
    query: str | None = None


class ScheduleUpdateArgs(Args):
    schedule_id: Text
    title: str | None = None
    time: HHMM | None = None
    days: list[Day] | None = None
    timezone: str | None = None


class SchedulePauseArgs(Args):
    schedule_id: Text
    until: str | None = None


class ScheduleIdArgs(Args):
    schedule_id: Text


class ScheduleCancelArgs(Args):
    schedule_id: Text
    reason: str | None = None


def _canonical_days(days: list[str] | None) -> list[str]:
    if days is None:
        return list(WEEKDAYS)
    if not days:
        raise ToolError("days is empty: name at least one weekday, or leave it out for every day.")
    return [d for d in WEEKDAYS if d in days]


def _days_text(days: list[str]) -> str:
    if days == list(WEEKDAYS):
        return "every day"
    if days == list(WEEKDAYS[:5]):
        return "weekdays"
    if days == list(WEEKDAYS[5:]):
        return "weekends"
    return ", ".join(days)


def _schedule_zone(row: dict[str, Any], ctx: ToolContext) -> ZoneInfo:
    return ZoneInfo(row["timezone"]) if row["timezone"] else _owner_zone(ctx)


def _next_run(row: dict[str, Any], ctx: ToolContext) -> str | None:
    if row["status"] == "cancelled" or (row["status"] == "paused" and not row["paused_until"]):
        return None
    tz = _schedule_zone(row, ctx)
    now = _now(ctx).astimezone(tz)
    first = now.date()
    if row["status"] == "paused":
        first = max(first, dt.date.fromisoformat(row["paused_until"]))
    days = set(_json_list(row["days"]))
    hh, mm = int(row["time"][:2]), int(row["time"][3:])
    for offset in range(8):
        day = first + dt.timedelta(days=offset)
        moment = dt.datetime.combine(day, dt.time(hh, mm), tz)
        if WEEKDAYS[day.weekday()] in days and moment > now:
            return moment.isoformat(timespec="minutes")
    return None


def _schedule_view(row: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    days = _json_list(row["days"])
    view = {"id": _format_id("schedules", row["id"]), "title": row["title"], "time": row["time"], "days": days,
            "days_text": _days_text(days), "timezone": row["timezone"] or ctx.timezone, "status": row["status"],
            "next_run": _next_run(row, ctx)}
    if row["status"] == "paused":
        view["paused_until"] = row["paused_until"]
    if row["status"] == "cancelled":
        view["cancel_reason"] = row["cancel_reason"]
    return view


def _log_schedule(ctx: ToolContext, schedule_id: int, action: str, changes: dict[str, Any]) -> None:
    ctx.db["schedule_history"].insert({"schedule_id": schedule_id, "action": action, "changes": json.dumps(changes),
                                       "chat_id": ctx.chat_id, "call_id": ctx.call_id, "at": _stamp(ctx)})


def _set_schedule(ctx: ToolContext, row: dict[str, Any], action: str,
                  fields: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Change a schedule and record the change in its history, in one transaction.

    Returns the new row and the changes, ``{field: {"from", "to"}}`` (days as lists).
    """
    changes = {k: {"from": row[k], "to": v} for k, v in fields.items() if row[k] != v}
    if "days" in changes:
        changes["days"] = {"from": _json_list(row["days"]), "to": _json_list(fields["days"])}
    if changes:
        with ctx.db.atomic():
            ctx.db["schedules"].update(row["id"], {**fields, "updated_at": _stamp(ctx)})
            _log_schedule(ctx, row["id"], action, changes)
    return ctx.db["schedules"].get(row["id"]), changes


def _expire_pauses(ctx: ToolContext) -> None:
    """Pauses with an end date that has come resume by themselves."""
    for row in list(ctx.db["schedules"].rows_where("status = 'paused' and paused_until is not null")):
        if dt.date.fromisoformat(row["paused_until"]) <= _now(ctx).astimezone(_schedule_zone(row, ctx)).date():
            _set_schedule(ctx, row, "auto_resumed", {"status": "active", "paused_until": None})


def _schedule(ctx: ToolContext, raw: str) -> dict[str, Any]:
    """The schedule ``raw`` names; when ``raw`` is not an id, the error names likely candidates."""
    _expire_pauses(ctx)
    try:
        return _row(ctx, "schedules", raw)
    except ToolError as exc:
        if _parse_id("schedules", raw) is not None or not _words(raw):
            raise
        rows = ctx.db["schedules"].rows_where(
            " or ".join("lower(title) like ? escape '\\'" for _ in _words(raw)),
            [_like(w) for w in _words(raw)], order_by="id")
        matches = [f"{_format_id('schedules', r['id'])} '{r['title']}' at {r['time']} "
                   f"{_days_text(_json_list(r['days']))} ({r['status']})" for r in rows]
        if not matches:
            raise
        raise ToolError(f"{exc} Schedules whose title matches: {'; '.join(matches)}.") from None


def _check_zone_name(name: str | None) -> str | None:
    if name is None:
        return None
    _zone(name.strip())
    return name.strip()


@tool("schedule.create", ScheduleCreateArgs)
async def schedule_create(args: ScheduleCreateArgs, ctx: ToolContext) -> ToolResult:
    zone = _check_zone_name(args.timezone) or _owner_zone(ctx).key
    days = _canonical_days(args.days)
    stamp = _stamp(ctx)
    with ctx.db.atomic():
        table = ctx.db["schedules"].insert({
            "title": args.title, "time": _check_hhmm(args.time), "days": json.dumps(days), "timezone": zone,
            "status": "active", "created_at": stamp, "updated_at": stamp, "chat_id": ctx.chat_id, "demo": 0})
        _log_schedule(ctx, table.last_pk, "created", {"title": args.title, "time": args.time, "days": days,
                                                      "timezone": zone})
    result = {"created": True, **_schedule_view(ctx.db["schedules"].get(table.last_pk), ctx)}
    twins = [_format_id("schedules", r["id"]) for r in ctx.db["schedules"].rows_where(
        "lower(title) = lower(?) and status != 'cancelled' and id != ?", [args.title, table.last_pk])]
    if twins:
        result["note"] = f"Another schedule already has this title: {', '.join(twins)}."
    return ToolResult.of_json(result)


@tool("schedule.list", ScheduleListArgs)
async def schedule_list(args: ScheduleListArgs, ctx: ToolContext) -> ToolResult:
    _expire_pauses(ctx)
    where, params = [], []
    if args.status != "all":
        where.append("status = ?")
        params.append(args.status)
    for word in _words(args.query or ""):
        where.append("lower(title) like ? escape '\\'")
        params.append(_like(word))
    rows = ctx.db["schedules"].rows_where(" and ".join(where) or None, params, order_by="time, id")
    schedules = [_schedule_view(r, ctx) for r in rows]
    return ToolResult.of_json({"status": args.status, "query": args.query, "count": len(schedules),
                               "schedules": schedules})


def _label(row: dict[str, Any]) -> str:
    return f"Schedule {_format_id('schedules', row['id'])} ('{row['title']}')"


def _refuse_cancelled(row: dict[str, Any], doing: str) -> None:
    if row["status"] == "cancelled":
        raise ToolError(f"{_label(row)} is cancelled and cannot be {doing}; create a new one with schedule.create.")


def _transition(ctx: ToolContext, row: dict[str, Any], action: str, fields: dict[str, Any]) -> ToolResult:
    new, _ = _set_schedule(ctx, row, action, fields)
    return ToolResult.of_json({"id": _format_id("schedules", row["id"]), "previous_status": row["status"],
                               "schedule": _schedule_view(new, ctx)})


@tool("schedule.update", ScheduleUpdateArgs)
async def schedule_update(args: ScheduleUpdateArgs, ctx: ToolContext) -> ToolResult:
    row = _schedule(ctx, args.schedule_id)
    _refuse_cancelled(row, "changed")
    fields: dict[str, Any] = {}
    if args.title is not None:
        if not args.title.strip():
            raise ToolError("title cannot be empty; leave it out to keep the current title.")
        fields["title"] = args.title.strip()
    if args.time is not None:
        fields["time"] = _check_hhmm(args.time)
    if args.days is not None:
        fields["days"] = json.dumps(_canonical_days(args.days))
    if args.timezone is not None:
        fields["timezone"] = _check_zone_name(args.timezone)
    if not fields:
        raise ToolError("Nothing to change: pass at least one of title, time, days or timezone.")
    new, changed = _set_schedule(ctx, row, "updated", fields)
    result = {"id": _format_id("schedules", row["id"]), "changed": changed, "schedule": _schedule_view(new, ctx)}
    if not changed:
        result["note"] = "Nothing changed: the schedule already had these values."
    return ToolResult.of_json(result)


@tool("schedule.pause", SchedulePauseArgs)
async def schedule_pause(args: SchedulePauseArgs, ctx: ToolContext) -> ToolResult:
    row = _schedule(ctx, args.schedule_id)
    until = None
    if args.until is not None and args.until.strip():
        until_date = _parse_date(args.until, "until date")
        today = _now(ctx).astimezone(_schedule_zone(row, ctx)).date()
        if until_date <= today:
            raise ToolError(f"until {until_date.isoformat()} is not in the future (today is {today.isoformat()}); "
                            "leave it out to pause until resumed.")
        until = until_date.isoformat()
    _refuse_cancelled(row, "paused")
    if row["status"] == "paused" and until is None:
        raise ToolError(f"{_label(row)} is already paused"
                        + (f" until {row['paused_until']}." if row["paused_until"] else " until resumed."))
    return _transition(ctx, row, "paused", {"status": "paused", "paused_until": until})


@tool("schedule.resume", ScheduleIdArgs)
async def schedule_resume(args: ScheduleIdArgs, ctx: ToolContext) -> ToolResult:
    row = _schedule(ctx, args.schedule_id)
    _refuse_cancelled(row, "resumed")
    if row["status"] == "active":
        raise ToolError(f"{_label(row)} is not paused; it is already active.")
    return _transition(ctx, row, "resumed", {"status": "active", "paused_until": None})


@tool("schedule.cancel", ScheduleCancelArgs)
async def schedule_cancel(args: ScheduleCancelArgs, ctx: ToolContext) -> ToolResult:
    row = _schedule(ctx, args.schedule_id)
    if row["status"] == "cancelled":
        raise ToolError(f"{_label(row)} is already cancelled.")
    return _transition(ctx, row, "cancelled", {"status": "cancelled", "paused_until": None,
                                               "cancel_reason": (args.reason or "").strip() or None,
                                               "cancelled_at": _stamp(ctx)})


# --- tasks ------------------------------------------------------------------------------------------


class TasksListArgs(Args):
    status: Literal["open", "done", "all"] = "open"
    due_before: str | None = None


class TasksCreateArgs(Args):
    title: Text
    due: str | None = None
    notes: str | None = None


class TasksCompleteArgs(Args):
    task_id: Text


def _task_view(row: dict[str, Any], ctx: ToolContext, tz: ZoneInfo) -> dict[str, Any]:
    today = _now(ctx).astimezone(tz).date().isoformat()
    view = {"id": _format_id("tasks", row["id"]), "title": row["title"], "due": row["due"], "status": row["status"],
            "overdue": bool(row["status"] == "open" and row["due"] and row["due"] < today), "notes": row["notes"]}
    if row["status"] == "done":
        view["completed_at"] = _when(row["completed_at"], tz)
    return view


@tool("tasks.list", TasksListArgs)
async def tasks_list(args: TasksListArgs, ctx: ToolContext) -> ToolResult:
    tz = _owner_zone(ctx)
    where, params = [], []
    if args.status != "all":
        where.append("status = ?")
        params.append(args.status)
    if args.due_before is not None:
        where.append("due is not null and due < ?")
        params.append(_parse_date(args.due_before, "due_before date").isoformat())
    rows = ctx.db["tasks"].rows_where(" and ".join(where) or None, params,
                                      order_by="status != 'open', due is null, due, id")
    tasks = [_task_view(r, ctx, tz) for r in rows]
    return ToolResult.of_json({"status": args.status, "due_before": args.due_before, "count": len(tasks),
                               "tasks": tasks})


@tool("tasks.create", TasksCreateArgs)
async def tasks_create(args: TasksCreateArgs, ctx: ToolContext) -> ToolResult:
    tz = _owner_zone(ctx)
    due = _parse_date(args.due, "due date").isoformat() if args.due and args.due.strip() else None
    table = ctx.db["tasks"].insert({"title": args.title, "due": due, "notes": (args.notes or "").strip() or None,
                                    "status": "open", "created_at": _stamp(ctx), "chat_id": ctx.chat_id, "demo": 0})
    view = _task_view(ctx.db["tasks"].get(table.last_pk), ctx, tz)
    return ToolResult.of_json({"created": True, **view})


@tool("tasks.complete", TasksCompleteArgs)
async def tasks_complete(args: TasksCompleteArgs, ctx: ToolContext) -> ToolResult:
    tz = _owner_zone(ctx)
    row = _row(ctx, "tasks", args.task_id)
    if row["status"] == "done":
        raise ToolError(f"Task {_format_id('tasks', row['id'])} ('{row['title']}') is already done "
                        f"(completed {_when(row['completed_at'], tz)}).")
    ctx.db["tasks"].update(row["id"], {"status": "done", "completed_at": _stamp(ctx)})
    return ToolResult.of_json({"completed": True, **_task_view(ctx.db["tasks"].get(row["id"]), ctx, tz)})


# --- notes ------------------------------------------------------------------------------------------


class NotesSearchArgs(Args):
    query: Text
    tag: str | None = None
    limit: int = Field(10, ge=1, le=50)


class NotesCreateArgs(Args):
    title: Text
    body: Annotated[str, StringConstraints(max_length=100_000)]
    tags: list[str] | None = None


def _clean_tag(tag: str) -> str:
    return tag.strip().lstrip("#").strip().lower()


@tool("notes.search", NotesSearchArgs)
async def notes_search(args: NotesSearchArgs, ctx: ToolContext) -> ToolResult:
    tz = _owner_zone(ctx)
    sql = ("select n.id, n.title, n.tags, n.updated_at, "
           "snippet(notes_fts, -1, '**', '**', '...', 16) as snippet "
           "from notes_fts join notes n on n.id = notes_fts.rowid where notes_fts match :q")
    params: dict[str, Any] = {"q": _fts_query(args.query), "limit": args.limit}
    if args.tag is not None and _clean_tag(args.tag):
        sql += " and exists (select 1 from json_each(n.tags) where value = :tag)"
        params["tag"] = _clean_tag(args.tag)
    sql += " order by bm25(notes_fts), n.id limit :limit"
    notes = [{"id": _format_id("notes", r["id"]), "title": r["title"], "tags": _json_list(r["tags"]),
              "snippet": r["snippet"], "updated_at": _when(r["updated_at"], tz)} for r in ctx.db.query(sql, params)]
    return ToolResult.of_json({"query": args.query, "tag": params.get("tag"), "count": len(notes), "notes": notes})


@tool("notes.create", NotesCreateArgs)
async def notes_create(args: NotesCreateArgs, ctx: ToolContext) -> ToolResult:
    tags = [t for t in dict.fromkeys(_clean_tag(t) for t in args.tags or []) if t]
    stamp = _stamp(ctx)
    table = ctx.db["notes"].insert({"title": args.title, "body": args.body, "tags": json.dumps(tags),
                                    "created_at": stamp, "updated_at": stamp, "chat_id": ctx.chat_id, "demo": 0})
    return ToolResult.of_json({"created": True, "id": _format_id("notes", table.last_pk), "title": args.title,
                               "tags": tags, "characters": len(args.body),
                               "created_at": _when(stamp, _owner_zone(ctx))})


# --- email subscriptions (demo data) ----------------------------------------------------------------

DEMO_MAIL_NOTE = ("Demo data: no mail account is connected; these subscriptions are the sample set kept in the "
                  "local database.")


class EmailSubscriptionsArgs(Args):
    account: Literal["work", "personal", "all"] = "all"
    min_per_month: int | None = Field(None, ge=0)


class EmailUnsubscribeArgs(Args):
    subscription_id: Text
    archive_existing: bool = False


def _unsubscribe_method(row: dict[str, Any]) -> str:
    targets = re.findall(r"<([^>]+)>", row["list_unsubscribe"] or "")
    https = next((t for t in targets if t.lower().startswith("https://")), None)
    mailto = next((t for t in targets if t.lower().startswith("mailto:")), None)
    if https and row["one_click"]:
        return f"one-click HTTPS POST (RFC 8058) to {https}"
    if https:
        return f"unsubscribe link {https}"
    if mailto:
        return f"email to {mailto[len('mailto:'):]}"
    return "none advertised"


def _subscription_view(row: dict[str, Any]) -> dict[str, Any]:
    return {"id": _format_id("email_subscriptions", row["id"]), "account": row["account"], "list": row["list_name"],
            "sender": row["sender"], "per_month": row["per_month"], "last_message_on": row["last_message_on"],
            "messages_in_inbox": row["messages_in_inbox"], "unsubscribe_method": _unsubscribe_method(row)}


@tool("email.subscriptions", EmailSubscriptionsArgs)
async def email_subscriptions(args: EmailSubscriptionsArgs, ctx: ToolContext) -> ToolResult:
    where, params = ["status = 'subscribed'"], []
    if args.account != "all":
        where.append("account = ?")
        params.append(args.account)
    if args.min_per_month is not None:
        where.append("per_month >= ?")
        params.append(args.min_per_month)
    rows = ctx.db["email_subscriptions"].rows_where(" and ".join(where), params, order_by="per_month desc, id")
    subs = [_subscription_view(r) for r in rows]
    gone = ctx.db["email_subscriptions"].count_where(
        "status = 'unsubscribed'" + (" and account = ?" if args.account != "all" else ""),
        [args.account] if args.account != "all" else [])
    return ToolResult.of_json({"source": DEMO_MAIL_NOTE, "account": args.account, "count": len(subs),
                               "subscriptions": subs, "unsubscribed_not_shown": gone})


@tool("email.unsubscribe", EmailUnsubscribeArgs)
async def email_unsubscribe(args: EmailUnsubscribeArgs, ctx: ToolContext) -> ToolResult:
    row = _row(ctx, "email_subscriptions", args.subscription_id)
    sid = _format_id("email_subscriptions", row["id"])
    if row["status"] == "unsubscribed":
        raise ToolError(f"Subscription {sid} ('{row['list_name']}') is already unsubscribed "
                        f"(since {_when(row['unsubscribed_at'], _owner_zone(ctx))}).")
    archived = (row["messages_in_inbox"] or 0) if args.archive_existing else 0
    ctx.db["email_subscriptions"].update(row["id"], {
        "status": "unsubscribed", "unsubscribed_at": _stamp(ctx), "archive_existing": int(args.archive_existing),
        "archived_messages": archived, "chat_id": ctx.chat_id})
    return ToolResult.of_json({
        "id": sid, "list": row["list_name"], "account": row["account"], "status": "unsubscribed",
        "method": _unsubscribe_method(row), "archive_existing": args.archive_existing,
        "archived_messages": archived,
        "note": DEMO_MAIL_NOTE + " No unsubscribe request was sent and no real inbox changed; the subscription "
                "is marked unsubscribed locally" + (f" and its {archived} messages marked archived." if archived
                                                    else "."),
    })


# --- web --------------------------------------------------------------------------------------------


class WebSearchArgs(Args):
    query: Text
    max_results: int = Field(5, ge=1, le=10)


class WebFetchArgs(Args):
    url: Text
    max_chars: int = Field(8000, ge=100, le=50000)


class _BlockedURL(Exception):
    pass


def _http_client(ctx: ToolContext, **kwargs: Any) -> httpx.AsyncClient:
    import httpx

    timeout = float(ctx.settings.get("http_timeout", 20.0))
    return httpx.AsyncClient(transport=ctx.settings.get("http_transport"), follow_redirects=True, max_redirects=5,
                             timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)),
                             headers={"User-Agent": USER_AGENT}, **kwargs)


def _http_failure(exc: Exception, what: str, timeout: float) -> ToolError:
    import httpx

    if isinstance(exc, httpx.TimeoutException):
        return ToolError(f"{what} timed out after {timeout:g} s.")
    if isinstance(exc, httpx.TooManyRedirects):
        return ToolError(f"{what} failed: too many redirects (more than 5).")
    return ToolError(f"{what} failed: {type(exc).__name__}: {exc}")


def _refuse_private(url: httpx.URL) -> None:
    host = (url.host or "").lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        raise _BlockedURL(f"{host} is this machine")
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return
    if ip.is_loopback or ip.is_private or ip.is_link_local or ip.is_reserved or ip.is_multicast or ip.is_unspecified:
        raise _BlockedURL(f"{host} is a private or local address")


def _decode(body: bytes, charset: str | None, content_type: str) -> str:
    encoding = charset
    if not encoding and "html" in content_type:
        meta = re.search(rb"""<meta[^>]+charset=["']?([\w-]+)""", body[:4096], re.I)
        encoding = meta.group(1).decode("ascii") if meta else None
    try:
        return body.decode(encoding or "utf-8", errors="replace")
    except LookupError:
        return body.decode("utf-8", errors="replace")


_TEXTUAL_TYPES = ("application/xml", "application/javascript", "application/x-yaml", "application/yaml",
                  "application/csv", "application/x-ndjson")


@tool("web.fetch", WebFetchArgs)
async def web_fetch(args: WebFetchArgs, ctx: ToolContext) -> ToolResult:
    import httpx

    try:
        url = httpx.URL(args.url)
    except (httpx.InvalidURL, ValueError) as exc:
        raise ToolError(f"Bad URL {args.url!r}: {exc}.") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise ToolError(f"Bad URL {args.url!r}: give an absolute http:// or https:// URL.")
    allow_private = bool(ctx.settings.get("allow_private_network", False))
    max_bytes = int(ctx.settings.get("fetch_max_bytes", 2_000_000))
    timeout = float(ctx.settings.get("http_timeout", 20.0))

    async def guard(request: httpx.Request) -> None:  # runs for the first request and every redirect
        if not allow_private:
            _refuse_private(request.url)

    body = bytearray()
    cut_bytes = False
    try:
        async with _http_client(ctx, event_hooks={"request": [guard]}) as client:
            async with client.stream("GET", url, headers={
                    "Accept": "text/html,application/xhtml+xml,application/json,text/plain;q=0.9,*/*;q=0.5"}) as resp:
                async for chunk in resp.aiter_bytes():
                    body += chunk
                    if len(body) > max_bytes:
                        del body[max_bytes:]
                        cut_bytes = True
                        break
    except _BlockedURL as exc:
        raise ToolError(f"Refused to fetch {args.url}: {exc}. web.fetch only reads the public web.") from None
    except httpx.HTTPError as exc:
        raise _http_failure(exc, f"Fetching {args.url}", timeout) from None

    content_type = resp.headers.get("content-type", "").split(";")[0].strip().lower()
    text = _decode(bytes(body), resp.charset_encoding, content_type)
    title = None
    if content_type in ("text/html", "application/xhtml+xml") or (
            not content_type and text.lstrip()[:15].lower().startswith(("<!doctype html", "<html"))):
        from core.builtins.html_text import html_to_text

        title, text = html_to_text(text)
    elif content_type == "application/json" or content_type.endswith("+json"):
        try:
            text = json.dumps(json.loads(text), ensure_ascii=False, indent=1)
        except ValueError:
            pass  # cut short or not JSON after all: give the raw text
    elif content_type and not content_type.startswith("text/") and content_type not in _TEXTUAL_TYPES:
        raise ToolError(f"{resp.url} returned {content_type} ({len(body)} bytes), which is not text; "
                        "web.fetch returns readable text only.")

    final_url = str(resp.url)
    if resp.status_code >= 400:
        excerpt = text[:500] + ("..." if len(text) > 500 else "")
        return _error(f"HTTP {resp.status_code} {resp.reason_phrase} from {final_url}."
                      + (f"\n\n{excerpt}" if excerpt.strip() else ""))
    total = len(text)
    shown = text[:args.max_chars]
    header = [f"URL: {final_url}", f"Status: {resp.status_code}", f"Content-Type: {content_type or 'unknown'}"]
    if title:
        header.append(f"Title: {title}")
    if total > args.max_chars:
        header.append(f"[Showing the first {args.max_chars} of {total} characters; the rest was cut.]")
    if cut_bytes:
        header.append(f"[The download stopped at {max_bytes} bytes; the page is longer.]")
    structured = {"url": args.url, "final_url": final_url, "status": resp.status_code, "content_type": content_type,
                  "title": title, "characters": total, "truncated": total > args.max_chars or cut_bytes}
    return ToolResult(content=[{"type": "text", "text": "\n".join(header) + "\n\n" + shown}], structured=structured)


NO_SEARCH_BACKEND = (
    "No web-search backend is configured, so web.search cannot run (deferchat has no built-in search "
    "engine offline). To enable it, point deferchat at a SearXNG instance with its JSON API turned on: set "
    "searxng_url in the [tools] table of deferchat's config.toml to its address, e.g. http://127.0.0.1:8888, "
    "and list json under search.formats in SearXNG's settings.yml. "
    "web.fetch still works for a URL you already know.")


@tool("web.search", WebSearchArgs)
async def web_search(args: WebSearchArgs, ctx: ToolContext) -> ToolResult:
    import httpx

    base = ctx.settings.get("searxng_url")
    if not base:
        return _error(NO_SEARCH_BACKEND)
    endpoint = str(base).rstrip("/") + "/search"
    timeout = float(ctx.settings.get("http_timeout", 20.0))
    try:
        async with _http_client(ctx) as client:
            resp = await client.get(endpoint, params={"q": args.query, "format": "json"},
                                    headers={"Accept": "application/json"})
    except httpx.HTTPError as exc:
        raise _http_failure(exc, f"The SearXNG search at {endpoint}", timeout) from None
    if resp.status_code == 403:
        raise ToolError(f"SearXNG at {endpoint} refused the JSON API (HTTP 403); list json under search.formats "
                        "in its settings.yml.")
    if resp.status_code >= 400:
        raise ToolError(f"SearXNG at {endpoint} answered HTTP {resp.status_code} {resp.reason_phrase}.")
    try:
        data = resp.json()
        raw_results = data.get("results") or []
    except (ValueError, AttributeError):
        raise ToolError(f"SearXNG at {endpoint} did not return JSON; is searxng_url the instance's base "
                        "address with the json format enabled?") from None
    results = [{"title": (r.get("title") or "").strip(), "url": r.get("url"),
                "snippet": (r.get("content") or "").strip(), "engine": r.get("engine")}
               for r in raw_results if isinstance(r, dict) and r.get("url")][:args.max_results]
    return ToolResult.of_json({"query": args.query, "backend": "searxng", "count": len(results),
                               "results": results})


# --- workspace --------------------------------------------------------------------------------------


class WorkspaceReadArgs(Args):
    path: Text
    offset: int = Field(1, ge=1)
    limit: int = Field(400, ge=1, le=5000)


class WorkspaceSearchArgs(Args):
    pattern: Annotated[str, StringConstraints(min_length=1, max_length=1000)]
    glob: str | None = None


class WorkspaceWriteArgs(Args):
    path: Text
    content: Annotated[str, StringConstraints(max_length=5_000_000)]
    overwrite: bool = False


_SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".mypy_cache",
                        ".pytest_cache", ".tox"})
MAX_LINE_CHARS = 2000
SEARCH_MAX_FILE_BYTES = 2_000_000
SEARCH_MAX_FILES = 10_000
SEARCH_MAX_LINES = 200
SEARCH_LINES_PER_FILE = 20


def _workspace_root(ctx: ToolContext) -> Path:
    return Path(ctx.workspace).expanduser().resolve()


def _inside(root: Path, path: Path) -> bool:
    return path == root or path.is_relative_to(root)


def _workspace_path(ctx: ToolContext, raw: str) -> tuple[Path, Path, str]:
    """``(root, resolved target, relative path)``; refuses anything that resolves outside the root."""
    root = _workspace_root(ctx)
    if "\x00" in raw:
        raise ToolError("The path contains a NUL character.")
    if raw.startswith(("/", "\\", "~")) or re.match(r"^[A-Za-z]:[\\/]", raw):
        raise ToolError(f"Path {raw!r} is absolute; give a path relative to the workspace root.")
    target = (root / raw).resolve()  # follows every symlink that exists along the way
    if not _inside(root, target):
        raise ToolError(f"Path {raw!r} is outside the workspace (it resolves to a place outside the workspace "
                        "folder, through '..' or a symbolic link); only files inside the workspace can be used.")
    return root, target, target.relative_to(root).as_posix() if target != root else "."


def _is_binary(path: Path) -> bool:
    with path.open("rb") as fh:
        return b"\x00" in fh.read(8192)


def _read_window(target: Path, rel: str, offset: int, limit: int) -> ToolResult:
    if not target.exists():
        raise ToolError(f"No file {rel!r} in the workspace. Use workspace.search to find files.")
    if target.is_dir():
        raise ToolError(f"{rel!r} is a folder, not a file. Use workspace.search with a glob to list its files.")
    if _is_binary(target):
        raise ToolError(f"{rel!r} is a binary file ({target.stat().st_size} bytes); "
                        "workspace.read_file reads text only.")
    window: list[str] = []
    total = 0
    with target.open("r", encoding="utf-8", errors="replace", newline=None) as fh:
        for total, line in enumerate(fh, start=1):
            if offset <= total < offset + limit:
                line = line.rstrip("\n")
                if len(line) > MAX_LINE_CHARS:
                    line = line[:MAX_LINE_CHARS] + f" [... line cut at {MAX_LINE_CHARS} characters]"
                window.append(f"{total:>6}\t{line}")
    if total == 0:
        return ToolResult(content=[{"type": "text", "text": f"{rel} is empty."}],
                          structured={"path": rel, "total_lines": 0, "first_line": None, "last_line": None})
    if offset > total:
        raise ToolError(f"offset {offset} is past the end of {rel!r}, which has {total} lines.")
    last = offset + len(window) - 1
    header = f"{rel}: lines {offset}-{last} of {total}"
    footer = f"\n[{total - last} more lines; call again with offset={last + 1} to read on.]" if last < total else ""
    return ToolResult(content=[{"type": "text", "text": header + "\n" + "\n".join(window) + footer}],
                      structured={"path": rel, "total_lines": total, "first_line": offset, "last_line": last})


@tool("workspace.read_file", WorkspaceReadArgs)
async def workspace_read_file(args: WorkspaceReadArgs, ctx: ToolContext) -> ToolResult:
    _, target, rel = _workspace_path(ctx, args.path)
    return await asyncio.to_thread(_read_window, target, rel, args.offset, args.limit)


def _glob_matches(rel: str, pattern: str) -> bool:
    if "/" not in pattern:
        return fnmatch.fnmatch(rel.rsplit("/", 1)[-1], pattern)
    return fnmatch.fnmatch(rel, pattern) or ("**/" in pattern and fnmatch.fnmatch(rel, pattern.replace("**/", "")))


def _search(root: Path, pattern: str, glob: str | None) -> dict[str, Any]:
    flags = 0 if any(c.isupper() for c in pattern) else re.IGNORECASE  # smart case, as in ripgrep
    try:
        regex, mode = re.compile(pattern, flags), "regex"
    except re.error:
        regex, mode = re.compile(re.escape(pattern), flags), "text"
    matches: list[dict[str, Any]] = []
    scanned = lines_found = 0
    truncated = False
    skipped: dict[str, int] = {"outside_workspace": 0, "binary": 0, "too_large": 0}
    if root.is_dir():
        for folder, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
            for name in sorted(filenames):
                path = Path(folder) / name
                rel = path.relative_to(root).as_posix()
                if glob and not _glob_matches(rel, glob):
                    continue
                real = path.resolve()
                if not _inside(root, real) or not real.is_file():
                    skipped["outside_workspace"] += 1
                    continue
                if scanned >= SEARCH_MAX_FILES or lines_found >= SEARCH_MAX_LINES:
                    truncated = True
                    break
                scanned += 1
                hit: dict[str, Any] = {"path": rel, "name_match": bool(regex.search(rel)), "lines": []}
                size = real.stat().st_size
                if size > SEARCH_MAX_FILE_BYTES:
                    skipped["too_large"] += 1
                elif _is_binary(real):
                    skipped["binary"] += 1
                else:
                    with real.open("r", encoding="utf-8", errors="replace") as fh:
                        for number, line in enumerate(fh, start=1):
                            if regex.search(line):
                                if len(hit["lines"]) < SEARCH_LINES_PER_FILE and lines_found < SEARCH_MAX_LINES:
                                    hit["lines"].append({"line": number, "text": line.rstrip("\n")[:300]})
                                    lines_found += 1
                                else:
                                    hit["more_lines"] = hit.get("more_lines", 0) + 1
                if hit["name_match"] or hit["lines"]:
                    matches.append(hit)
            if truncated:
                break
    return {"pattern": pattern, "mode": mode, "case_sensitive": not flags, "glob": glob,
            "files_scanned": scanned, "files_matched": len(matches), "matches": matches, "truncated": truncated,
            "skipped": {k: v for k, v in skipped.items() if v}}


@tool("workspace.search", WorkspaceSearchArgs)
async def workspace_search(args: WorkspaceSearchArgs, ctx: ToolContext) -> ToolResult:
    root = _workspace_root(ctx)
    if not root.is_dir():
        raise ToolError("The workspace folder does not exist yet; write a file with workspace.write_file first.")
    glob = args.glob.strip() if args.glob and args.glob.strip() else None
    return ToolResult.of_json(await asyncio.to_thread(_search, root, args.pattern, glob))


def _write(root: Path, raw: str, target: Path, rel: str, content: str, overwrite: bool) -> dict[str, Any]:
    if target == root or target.is_dir():
        raise ToolError(f"{raw!r} is a folder; give a file path.")
    existed = target.exists()
    if existed and not overwrite:
        raise ToolError(f"{rel!r} already exists; pass overwrite=true to replace it.")
    target.parent.mkdir(parents=True, exist_ok=True)
    if not _inside(root, target.parent.resolve()):  # a folder swapped for a link meanwhile
        raise ToolError(f"Path {raw!r} is outside the workspace.")
    data = content.encode("utf-8")
    if overwrite:
        # Write beside the target, then rename over it: readers never see half a file.
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    else:
        try:  # O_EXCL: a file that appeared since the check is still not replaced
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
        except FileExistsError:
            raise ToolError(f"{rel!r} already exists; pass overwrite=true to replace it.") from None
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
    return {"path": rel, "created": not existed, "replaced": existed, "bytes": len(data),
            "lines": content.count("\n") + (1 if content and not content.endswith("\n") else 0)}


@tool("workspace.write_file", WorkspaceWriteArgs)
async def workspace_write_file(args: WorkspaceWriteArgs, ctx: ToolContext) -> ToolResult:
    root, target, rel = _workspace_path(ctx, args.path)
    if args.path.endswith(("/", "\\")):
        raise ToolError(f"{args.path!r} names a folder; give a file path.")
    return ToolResult.of_json(await asyncio.to_thread(_write, root, args.path, target, rel, args.content,
                                                      args.overwrite))


# --- notify.owner -----------------------------------------------------------------------------------


class NotifyOwnerArgs(Args):
    message: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=4000)]
    priority: Literal["normal", "high"] = "normal"


@tool("notify.owner", NotifyOwnerArgs)
async def notify_owner(args: NotifyOwnerArgs, ctx: ToolContext) -> ToolResult:
    import httpx

    outbox = ctx.db["notifications"]
    # Recorded first, so a crash during delivery still leaves the message in the outbox.
    nid = outbox.insert({"message": args.message, "priority": args.priority, "status": "queued", "attempts": 0,
                         "created_at": _stamp(ctx), "chat_id": ctx.chat_id, "call_id": ctx.call_id}).last_pk
    shown = _format_id("notifications", nid)
    topic = ctx.settings.get("ntfy_topic_url")
    if not topic:
        return ToolResult.of_json({
            "id": shown, "status": "queued", "delivered": False,
            "note": "Queued in the local outbox only: no push channel is configured, so the owner's phone was "
                    "NOT notified. Set ntfy_topic_url in the [tools] table of config.toml to deliver."})
    headers = {"Priority": "high" if args.priority == "high" else "default", "Title": "deferchat"}
    token = ctx.settings.get("ntfy_token")
    if token:
        headers["Authorization"] = f"Bearer {token}"
    timeout = float(ctx.settings.get("http_timeout", 20.0))
    problem = None
    try:
        async with _http_client(ctx) as client:
            resp = await client.post(str(topic), content=args.message.encode("utf-8"), headers=headers)
        if resp.status_code >= 400:
            problem = f"ntfy answered HTTP {resp.status_code} {resp.reason_phrase}"
    except httpx.HTTPError as exc:
        problem = str(_http_failure(exc, "Posting to ntfy", timeout))
    if problem:
        outbox.update(nid, {"status": "failed", "attempts": 1, "channel": "ntfy", "last_error": problem})
        return ToolResult.of_json({
            "id": shown, "status": "failed", "delivered": False, "error": problem,
            "note": "Delivery failed; the message stays in the local outbox and the owner's phone was NOT "
                    "notified."})
    outbox.update(nid, {"status": "delivered", "attempts": 1, "channel": "ntfy", "delivered_at": _stamp(ctx)})
    return ToolResult.of_json({"id": shown, "status": "delivered", "delivered": True, "channel": "ntfy",
                               "priority": args.priority})
