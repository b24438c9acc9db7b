"""The calendar: what is on it (a day, a week, the days ahead), a fact about one event (when,
where, how long, who), and a new event (a reminder at a time of day is one)."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from core.demo import answers
from core.demo.skills.base import (
    TODAY_FIRST,
    Action,
    Call,
    Context,
    Say,
    asked_fields,
    data,
    days_asked,
    failed,
    named_rows,
    serves,
    title_of,
)
from core.demo.when import day_span, moments, time_of_day

# The everyday words for an event's fields ("how long" asks its length).
EVENT_FIELDS: dict[str, tuple[str, ...]] = {
    "duration_minutes": ("long", "length", "last", "lasts", "duration", "take"),
    "location": ("where", "where's", "place", "room", "address", "location", "venue"),
    "attendees": ("who", "who's", "attending", "coming", "invited", "guests", "with whom"),
    "start": ("when", "when's", "time", "start", "starts", "begin", "day", "date"),
}


@serves("calendar.list_events")
def calendar_read(ctx: Context) -> Action | None:
    event = ctx.reading.best("event")
    if event is not None and not ctx.reading.dated():
        return _event_fact(ctx, event.entity.key, event.entity.label)
    days, first = days_asked(ctx, default_days=7)
    if first is not None:
        return first
    assert days is not None
    listed = ctx.last("calendar.list_events")
    if listed is None:
        args = {"start": days.first.isoformat()}
        if days.days > 1:
            args["end"] = days.last.isoformat()
        return Call("calendar.list_events", args)
    if bad := failed(listed):
        return bad
    return Say(answers.events(data(listed), days))


def _event_fact(ctx: Context, title: str, label: str) -> Action:
    now = ctx.now()
    if now is None:
        return Call("time.now", {}, TODAY_FIRST)
    listed = ctx.last("calendar.list_events")
    if listed is None:
        first = now.date() - dt.timedelta(days=7)
        word = next((w for w in re.findall(r"[A-Za-z][\w-]{3,}", title)), "")
        args: dict[str, Any] = {"start": first.isoformat(), "end": (now.date() + dt.timedelta(days=30)).isoformat()}
        if word:
            args["query"] = word.lower()
        return Call("calendar.list_events", args, f"Looking for \u201c{label}\u201d on your calendar.")
    if bad := failed(listed):
        return bad
    events = named_rows(data(listed).get("events") or [], "title", title)
    if not events:
        return Say(f"\u201c{label}\u201d is not on your calendar in the weeks around today.")
    e = min(events, key=lambda e: (str(e.get("start")) < now.isoformat(), str(e.get("start"))))
    day, start = answers.moment(str(e.get("start")))
    _, end = answers.moment(str(e.get("end")))
    asked = asked_fields(ctx, {k: e.get(k) for k in EVENT_FIELDS}, EVENT_FIELDS)
    what = asked[0] if asked else "start"
    if what == "duration_minutes":
        return Say(
            f"\u201c{e['title']}\u201d lasts {_minutes(e.get('duration_minutes'))} ({start}\u2013{end} on {day})."
        )
    if what == "attendees":
        people = ", ".join(e.get("attendees") or []) or "nobody else"
        return Say(f"\u201c{e['title']}\u201d on {day} at {start}: {people}.")
    if what == "location":
        where = e.get("location") or "no place given"
        return Say(f"\u201c{e['title']}\u201d is at {where}, on {day} at {start}.")
    place = f" at {e['location']}" if e.get("location") else ""
    return Say(f"\u201c{e['title']}\u201d is on {day}, {start}\u2013{end}{place}.")


def _minutes(n: Any) -> str:
    n = int(n or 0)
    hours, minutes = divmod(n, 60)
    if hours and minutes:
        return f"{hours} h {minutes} min"
    return f"{hours} hour{'s' if hours != 1 else ''}" if hours else f"{minutes} minutes"


@serves("calendar.create_event")
def calendar_create(ctx: Context) -> Action | None:
    made = ctx.last("calendar.create_event")
    if made is not None:
        if bad := failed(made):
            return bad
        d = data(made)
        day, start = answers.moment(str(d.get("start", "")))
        if _reminder(ctx):
            return Say(
                f"I put \u201c{d.get('title')}\u201d on your calendar for {day} at {start} as your reminder "
                "(the demo has no alarms: the calendar entry is the reminder)."
            )
        note = f" {d['note']}" if d.get("note") else ""
        return Say(f"Added **{d.get('title')}** to your calendar on {day} at {start}.{note}")
    if not ctx.reading.timed():
        return None  # no time of day: not an event (a day alone is a task's due date)
    now = ctx.now()
    if now is None:
        return Call("time.now", {}, TODAY_FIRST)
    found = moments(ctx.text, now)
    at = time_of_day(found)
    if at is None:
        return None
    span = day_span(found, now.date())
    on = span[0] if span else now.date()
    if span is None and dt.datetime.combine(on, dt.time.fromisoformat(at)) < now:
        on = on + dt.timedelta(days=1)  # "at 6pm" when it is later than that: tomorrow's
    title = title_of(ctx, "event")
    if not title:
        return Say("What should the event be called? For example: \u201clunch with Marco on Friday at 1pm\u201d.")
    args: dict[str, Any] = {"title": title, "start": f"{on.isoformat()}T{at}"}
    if minutes := _duration(ctx.said):
        args["duration_minutes"] = minutes
    elif _reminder(ctx):
        args["duration_minutes"] = 15
    if ctx.reading.emails:
        args["attendees"] = list(ctx.reading.emails)
    return Call("calendar.create_event", args, f"Adding \u201c{title}\u201d to your calendar at {at}.")


def _reminder(ctx: Context) -> bool:
    return bool(re.search(r"\bremind(?:er)?\b", ctx.reading.intent, re.I))


def _duration(said: str) -> int | None:
    if m := re.search(r"\bfor (\d+)\s*(?:minutes?|mins?)\b", said):
        return int(m.group(1))
    if m := re.search(r"\bfor (\d+)\s*(?:hours?|h)\b", said):
        return int(m.group(1)) * 60
    if re.search(r"\bfor (?:an|one) hour\b", said):
        return 60
    if re.search(r"\bfor half an hour\b", said):
        return 30
    return None
