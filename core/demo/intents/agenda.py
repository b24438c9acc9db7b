"""The calendar: what is on it (a day, a week, the days ahead) and a new event."""

from __future__ import annotations

import re
from typing import Any

from core.demo import answers
from core.demo.intents.base import (
    TODAY_FIRST,
    Action,
    Call,
    Context,
    Say,
    Span,
    days_asked,
    intent,
)
from core.demo.text import EMAIL, times

_CREATE = r"\b(add|put|create|book|schedule|set up|arrange|plan|make)\b"
_EVENT_WORDS = r"\b(meeting|lunch|dinner|breakfast|coffee|appointment|event|drinks|interview|review|call with)\b"


@intent(
    "calendar.create",
    rf"{_CREATE}.*({_EVENT_WORDS}|\bcalendar\b)",
    unless=r"\b(every|each|daily|weekly|weekdays|recurring)\b|\bwhat\b|\?$",
)
def calendar_create(ctx: Context) -> Action | None:
    at = times(ctx.text)
    if not at:
        return None  # no time of day: not an event the owner described fully
    days, first = days_asked(ctx)
    if first is not None:
        return first
    made = ctx.last("calendar.create_event")
    if made is not None:
        if not made.ok:
            return Say(answers.failure(made.name, made.text))
        data = made.data if isinstance(made.data, dict) else {}
        note = f" {data['note']}" if data.get("note") else ""
        day, start = answers.moment(str(data.get("start", "")))
        return Say(f"Added **{data.get('title')}** to your calendar on {day} at {start}.{note}")
    if days is None:
        today = ctx.today()
        if today is None:
            return Call("time.now", {}, TODAY_FIRST)
        days = Span(today, today, "today")
    title = event_title(ctx.text)
    args: dict[str, Any] = {"title": title, "start": f"{days.first.isoformat()}T{at[0]}"}
    if minutes := duration(ctx.said):
        args["duration_minutes"] = minutes
    if found := EMAIL.findall(ctx.text):
        args["attendees"] = found
    return Call("calendar.create_event", args, f"Adding \u201c{title}\u201d to your calendar.")


def event_title(text: str) -> str:
    t = re.sub(r"^(?:please\s+|can you\s+|could you\s+)*", "", text.strip(), flags=re.I)
    t = re.sub(rf"^{_CREATE}\s+(?:a|an|the|my)?\s*", "", t, flags=re.I)
    t = re.sub(r"\s*\b(?:to|on|in|into)\s+(?:my|the)\s+calendar\b", "", t, flags=re.I)
    t = re.sub(r"\s*\b(?:for|lasting)\s+(?:an?|one|half an|\d+)\s*(?:hours?|minutes?|mins?|h)\b", "", t, flags=re.I)
    t = re.sub(
        r"\s*\b(?:at|from)\s+\d{1,2}(?::\d{2})?\s*(?:am|pm)?\b|\s*\b\d{1,2}(?::\d{2})?\s*(?:am|pm)\b"
        r"|\s*\bat noon\b",
        "",
        t,
        flags=re.I,
    )
    t = re.sub(
        r"\s*\b(?:on\s+|this\s+|next\s+)?(?:today|tonight|tomorrow|monday|tuesday|wednesday|thursday|friday|"
        r"saturday|sunday|\d{4}-\d{2}-\d{2})\b",
        "",
        t,
        flags=re.I,
    )
    t = re.sub(r"\s*\bwith\s+(\w)", lambda m: " with " + m.group(1).upper(), t)
    t = " ".join(t.strip(" .,!?").split())
    return (t[:1].upper() + t[1:]) if t else "New event"


def duration(said: str) -> int | None:
    if m := re.search(r"\bfor (\d+)\s*(?:minutes?|mins?)\b", said):
        return int(m.group(1))
    if m := re.search(r"\bfor (\d+)\s*(?:hours?|h)\b", said):
        return int(m.group(1)) * 60
    if re.search(r"\bfor (?:an|one) hour\b", said):
        return 60
    if re.search(r"\bfor half an hour\b", said):
        return 30
    return None


@intent(
    "calendar.read",
    r"\b(calendar|agenda|meetings?|events?|appointments?|what do i have(?! to do)|"
    r"am i (?:free|busy)|what'?s happening|on my schedule|my day look|plans? for)\b",
    unless=r"\bunsubscribe\b|\bnewsletters?\b",
)
def calendar_read(ctx: Context) -> Action | None:
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
    if not listed.ok:
        return Say(answers.failure(listed.name, listed.text))
    return Say(answers.events(listed.data if isinstance(listed.data, dict) else {}, days))
