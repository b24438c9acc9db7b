"""``calendar.list_events`` and ``calendar.create_event``: the owner's local calendar (table
``calendar_events``; starts are stored as local wall times with the zone they were made in).

(Not named ``calendar``, so it never stands in for the standard library's module.)"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any
from zoneinfo import ZoneInfo

from pydantic import Field

from core.builtins import ToolContext
from core.builtins.shared import (
    UTC,
    Args,
    Text,
    ToolError,
    check_email,
    current_time,
    format_id,
    json_list,
    now_stamp,
    owner_zone,
    parse_moment,
    tool,
    words_of,
)
from core.pipeline.preview import ActionPreview, decisive, detail
from core.tools import ToolResult


class CalendarListArgs(Args):
    start: Text = Field(description="Start of the range, ISO 8601 date or date-time.")
    end: str | None = Field(
        None, description="End of the range, ISO 8601 date or date-time; defaults to the end of the start day."
    )
    query: str | None = Field(None, description="Only events whose title contains these words.")


class CalendarCreateArgs(Args):
    title: Text = Field(description="Event title.")
    start: Text = Field(description="Start, ISO 8601 date-time in the owner's timezone.")
    duration_minutes: int = Field(30, ge=5, le=1440, description="Length in minutes.")
    location: str | None = Field(None, description="Place or meeting link.")
    attendees: list[str] | None = Field(None, description="Email addresses to invite.")


def _event_bounds(row: dict[str, Any], owner: ZoneInfo) -> tuple[dt.datetime, dt.datetime]:
    tz = ZoneInfo(row["timezone"]) if row["timezone"] else owner
    start = dt.datetime.fromisoformat(row["start_local"]).replace(tzinfo=tz)
    end = (start.astimezone(UTC) + dt.timedelta(minutes=row["duration_minutes"])).astimezone(tz)
    return start, end


def _event_view(row: dict[str, Any], owner: ZoneInfo) -> dict[str, Any]:
    start, end = _event_bounds(row, owner)
    return {
        "id": format_id("calendar_events", row["id"]),
        "title": row["title"],
        "start": start.astimezone(owner).isoformat(timespec="minutes"),
        "end": end.astimezone(owner).isoformat(timespec="minutes"),
        "duration_minutes": row["duration_minutes"],
        "location": row["location"],
        "attendees": json_list(row["attendees"]),
    }


def _events_between(
    ctx: ToolContext, start: dt.datetime, end: dt.datetime, owner: ZoneInfo, words: list[str] | None = None
) -> list[dict[str, Any]]:
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


@tool(
    "calendar.list_events",
    CalendarListArgs,
    "List events on the owner's calendar between two moments, optionally filtered by words in the title. Times "
    "are ISO 8601 in the owner's timezone.",
)
async def calendar_list_events(args: CalendarListArgs, ctx: ToolContext) -> ToolResult:
    owner = owner_zone(ctx)
    start, _ = parse_moment(args.start, owner, "start")
    if args.end is None or not args.end.strip():
        end = dt.datetime.combine(start.date() + dt.timedelta(days=1), dt.time(0), owner)
    else:
        end, end_is_date = parse_moment(args.end, owner, "end")
        if end_is_date:  # a bare end date includes that whole day
            end = dt.datetime.combine(end.date() + dt.timedelta(days=1), dt.time(0), owner)
    if end <= start:
        raise ToolError(
            f"The range is empty: end {end.isoformat(timespec='minutes')} is not after "
            f"start {start.isoformat(timespec='minutes')}."
        )
    if end - start > dt.timedelta(days=366):
        raise ToolError("The range is longer than a year; ask for a shorter one.")
    events = _events_between(ctx, start, end, owner, words_of(args.query or ""))
    return ToolResult.of_json(
        {
            "start": start.isoformat(timespec="minutes"),
            "end": end.isoformat(timespec="minutes"),
            "timezone": ctx.timezone,
            "query": args.query,
            "count": len(events),
            "events": events,
        }
    )


def _new_event(args: CalendarCreateArgs, owner: ZoneInfo) -> tuple[dt.datetime, dt.datetime, list[str]]:
    """The start, end and attendees (canonical addresses) a calendar.create_event call writes."""
    start, is_date = parse_moment(args.start, owner, "start")
    if is_date:
        raise ToolError(
            f"start {args.start!r} has no time of day; give a date-time such as {args.start.strip()}T09:30."
        )
    attendees = list(dict.fromkeys(check_email(a) for a in args.attendees or []))
    end = (start.astimezone(UTC) + dt.timedelta(minutes=args.duration_minutes)).astimezone(owner)
    return start, end, attendees


def _describe_create(args: CalendarCreateArgs, ctx: ToolContext) -> ActionPreview:
    from core.builtins.people import known_as

    owner = owner_zone(ctx)
    start, end, attendees = _new_event(args, owner)
    span = f"{start.strftime('%a %d %b %Y, %H:%M')}\u2013{end.strftime('%H:%M')} ({ctx.timezone})"
    fields = []
    if attendees:
        names = [known_as(ctx.db, "email", a) for a in attendees]
        known = "; ".join(f"{a}: {n}" for a, n in zip(attendees, names, strict=True) if n)
        fields.append(
            decisive(
                "Attendees",
                ", ".join(attendees),
                kind="email",
                argument="attendees",
                note="no invitation is sent (your local calendar only)"
                + (f"; in your contacts: {known}" if known else ""),
            )
        )
    conflicts = _events_between(ctx, start, end, owner)
    fields += [
        detail("Title", args.title, argument="title"),
        detail("When", span, argument="start"),
        detail("Duration", f"{args.duration_minutes} minutes", argument="duration_minutes"),
        detail("Location", (args.location or "").strip() or "(none)", argument="location"),
    ]
    if conflicts:
        fields.append(detail("Overlaps", "; ".join(f"\u201c{c['title']}\u201d {c['start']}" for c in conflicts)))
    return ActionPreview(summary=f"Add \u201c{args.title}\u201d to your calendar on {span}", fields=fields)


@tool(
    "calendar.create_event",
    CalendarCreateArgs,
    "Create a one-off event on the owner's calendar. For something that repeats, use schedule.create instead.",
    preview=_describe_create,
)
async def calendar_create_event(args: CalendarCreateArgs, ctx: ToolContext) -> ToolResult:
    owner = owner_zone(ctx)
    start, end, attendees = _new_event(args, owner)
    conflicts = _events_between(ctx, start, end, owner)
    table = ctx.db["calendar_events"].insert(
        {
            "title": args.title,
            "start_local": start.strftime("%Y-%m-%dT%H:%M"),
            "duration_minutes": args.duration_minutes,
            "timezone": ctx.timezone,
            "location": (args.location or "").strip() or None,
            "attendees": json.dumps(attendees),
            "created_at": now_stamp(ctx),
            "chat_id": ctx.chat_id,
            "demo": 0,
        }
    )
    result: dict[str, Any] = {
        "created": True,
        **_event_view(ctx.db["calendar_events"].get(table.last_pk), owner),
        "conflicts": conflicts,
    }
    notes = []
    if conflicts:
        notes.append(f"It overlaps {len(conflicts)} existing event(s); tell the owner.")
    if start < current_time(ctx):
        notes.append("It starts in the past.")
    if attendees:
        notes.append("No invitations were sent: the event is on the owner's local calendar only.")
    if notes:
        result["note"] = " ".join(notes)
    return ToolResult.of_json(result)
