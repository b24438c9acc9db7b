"""How the demo model sums up a tool's result for the owner.

Read by the result's shape, not by the tool's name: a result with ``events`` is a day's
agenda, ``tasks`` a to-do list, ``threads`` a mailbox, ``subscriptions`` the newsletters, and
so on, so any tool that answers in one of these shapes is summed up the same way. Anything
else gets the generic "Done" line with its first fields.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from core.demo.text import Span, day_label, parse_json

_LIMIT = 8  # rows listed before "and N more"


def _more(rows: list[Any], lines: list[str]) -> list[str]:
    if len(rows) > _LIMIT:
        lines.append(f"- \u2026 and {len(rows) - _LIMIT} more")
    return lines


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _when(value: str) -> tuple[str, str]:
    """(date, HH:MM) of an ISO date-time as the tools write it."""
    try:
        moment = dt.datetime.fromisoformat(value)
    except (TypeError, ValueError):
        return str(value), ""
    return moment.date().isoformat(), moment.strftime("%H:%M")


def moment(value: str) -> tuple[str, str]:
    """("Friday 2026-12-04", "13:00") for an ISO date-time as the tools write it."""
    day, start = _when(value)
    try:
        return day_label(dt.date.fromisoformat(day)), start
    except ValueError:
        return day, start


def events(data: dict[str, Any], span: Span | None = None) -> str:
    rows = [e for e in data.get("events") or [] if isinstance(e, dict)]
    said = span.said if span else "in that range"
    if span is not None and span.days == 1:
        said = (
            f"{span.said} ({day_label(span.first)})"
            if span.said in ("today", "tomorrow", "yesterday")
            else f"on {day_label(span.first)}"
        )
    if not rows:
        return f"Nothing on your calendar {said}."
    lines = [f"You have {_plural(len(rows), 'event')} {said}:"]
    one_day = span is not None and span.days == 1
    for e in rows[:_LIMIT]:
        day, start = _when(e.get("start", ""))
        _, end = _when(e.get("end", ""))
        when = f"{start}\u2013{end}" if one_day else f"{_short_day(day)} {start}"
        place = f" \u00b7 {e['location']}" if e.get("location") else ""
        lines.append(f"- {when} **{e.get('title', '?')}**{place}")
    return "\n".join(_more(rows, lines))


def _short_day(iso: str) -> str:
    try:
        day = dt.date.fromisoformat(iso)
    except ValueError:
        return iso
    return f"{day.strftime('%a')} {day.isoformat()}"


def tasks(data: dict[str, Any]) -> str:
    rows = [t for t in data.get("tasks") or [] if isinstance(t, dict)]
    status = data.get("status") or "open"
    kind = {"open": "open task", "done": "finished task"}.get(status, "task")
    if not rows:
        return f"You have no {kind}s."
    lines = [f"You have {_plural(len(rows), kind)}:"]
    for t in rows[:_LIMIT]:
        due = f" \u00b7 due {t['due']}" if t.get("due") else ""
        flag = (
            " (overdue)" if t.get("overdue") else (" (done)" if t.get("status") == "done" and status != "done" else "")
        )
        lines.append(f"- {t.get('title', '?')}{due}{flag}")
    return "\n".join(_more(rows, lines))


def threads(data: dict[str, Any], account: str = "") -> str:
    rows = [t for t in data.get("threads") or [] if isinstance(t, dict)]
    box = f"your {account} mail" if account else "your mail"
    if not rows:
        return f"Nothing in {box} matches `{data.get('query', '')}`."
    unread = sum(1 for t in rows if t.get("unread"))
    total = data.get("total", len(rows))
    lines = [f"In {box}: {_plural(int(total), 'thread')}" + (f", {unread} unread" if unread else "") + ":"]
    for t in rows[:_LIMIT]:
        sender = str(t.get("from", "")).split("<")[0].strip() or str(t.get("from", ""))
        mark = " \u00b7 unread" if t.get("unread") else ""
        lines.append(f"- **{t.get('subject', '(no subject)')}** from {sender}{mark}")
    return "\n".join(_more(rows, lines))


def subscriptions(data: dict[str, Any]) -> str:
    rows = [s for s in data.get("subscriptions") or [] if isinstance(s, dict)]
    if not rows:
        return "You are not subscribed to any newsletters."
    lines = [f"You get {_plural(len(rows), 'newsletter')} (busiest first):"]
    lines += [
        f"- {s.get('list', '?')} ({s.get('account', '?')}, {s.get('per_month', '?')} a month)" for s in rows[:_LIMIT]
    ]
    return "\n".join(_more(rows, lines))


def people(data: dict[str, Any]) -> str:
    rows = [p for p in data.get("people") or [] if isinstance(p, dict)]
    if not rows:
        return f"I found nobody matching \u201c{data.get('query', '')}\u201d in your contacts."
    lines = []
    for p in rows[:_LIMIT]:
        company = f" ({p['company']})" if p.get("company") else ""
        emails, phones = p.get("emails") or [p.get("email")], p.get("phones") or [p.get("phone")]
        reach = [str(x) for x in (*emails[:1], *phones[:1]) if x]
        lines.append(f"- **{p.get('name', '?')}**{company}" + (f": {', '.join(reach)}" if reach else ""))
    return "\n".join(_more(rows, lines))


def schedules(data: dict[str, Any]) -> str:
    rows = [s for s in data.get("schedules") or [] if isinstance(s, dict)]
    if not rows:
        return "You have no schedules."
    lines = [f"You have {_plural(len(rows), 'schedule')}:"]
    for s in rows[:_LIMIT]:
        paused = " (paused)" if s.get("status") == "paused" else ""
        lines.append(f"- {s.get('title', '?')} at {s.get('time', '?')}, {s.get('days_text') or s.get('days')}{paused}")
    return "\n".join(_more(rows, lines))


def notes(data: dict[str, Any]) -> str:
    rows = [n for n in data.get("notes") or [] if isinstance(n, dict)]
    if not rows:
        return f"No notes match \u201c{data.get('query', '')}\u201d."
    lines = [f"{_plural(len(rows), 'note')} match:"]
    for n in rows[:_LIMIT]:
        snippet = " ".join(str(n.get("snippet") or "").split())
        lines.append(f"- **{n.get('title', '?')}**" + (f": {snippet}" if snippet else ""))
    return "\n".join(_more(rows, lines))


def facts(data: dict[str, Any]) -> str:
    rows = [f for f in data.get("facts") or [] if isinstance(f, dict)]
    if not rows:
        return "I have nothing remembered about that."
    return "\n".join(["From what you asked me to remember:", *(f"- {f.get('fact', '?')}" for f in rows[:_LIMIT])])


def calls(data: dict[str, Any]) -> str:
    rows = [c for c in data.get("calls") or [] if isinstance(c, dict)]
    if not rows:
        return "No calls yet."
    lines = [f"{_plural(int(data.get('total', len(rows))), 'call')}, latest first:"]
    for c in rows[:_LIMIT]:
        who = c.get("recipient") or c.get("phone_number", "?")
        lines.append(f"- {who}: {c.get('status', '?')}" + (f" \u00b7 {c['summary']}" if c.get("summary") else ""))
    return "\n".join(_more(rows, lines))


def clock(data: dict[str, Any]) -> str:
    return f"It is {data.get('time')} on {data.get('weekday')}, {data.get('date')} ({data.get('timezone')})."


SHAPES: tuple[tuple[str, Callable[[dict[str, Any]], str]], ...] = (
    ("events", events),
    ("tasks", tasks),
    ("threads", threads),
    ("subscriptions", subscriptions),
    ("people", people),
    ("schedules", schedules),
    ("notes", notes),
    ("facts", facts),
    ("calls", calls),
    ("weekday", clock),
)


def by_shape(data: Any) -> str | None:
    """The summary for a result in a shape this module knows, else None."""
    if not isinstance(data, dict):
        return None
    for key, render in SHAPES:
        if key in data:
            return render(data)
    return None


def _brief(value: Any, depth: int = 0) -> str:
    """One line for a JSON value: scalars as they are, changes as from -> to, nesting shallow."""
    if isinstance(value, dict):
        if set(value) == {"from", "to"}:
            return f"{value['from']} \u2192 {value['to']}"
        if depth >= 1:
            return f"{len(value)} fields"
        return ", ".join(f"{k} {_brief(v, depth + 1)}" for k, v in list(value.items())[:5])
    if isinstance(value, list):
        if all(isinstance(v, (str, int, float)) for v in value) and len(value) <= 7:
            return ", ".join(str(v) for v in value)
        return f"{len(value)} item{'s' if len(value) != 1 else ''}"
    return str(value)


def failure(name: str, result_text: str) -> str:
    short = name.rsplit(".", 1)[-1].replace("_", " ")
    first = result_text.strip().splitlines()[0] if result_text.strip() else "no details"
    return f"I couldn't {short}: {first}"


def summarize(name: str, result_text: str, is_error: bool) -> str:
    """The answer after ``name`` returned: its error, a summary by shape, or its first fields."""
    if is_error:
        return failure(name, result_text)
    data = parse_json(result_text)
    shaped = by_shape(data)
    if shaped is not None:
        return shaped
    lines = [f"Done: `{name}` finished."]
    if isinstance(data, dict):
        for k, v in list(data.items())[:6]:
            lines.append(f"- **{k}**: {_brief(v)}")
    elif isinstance(data, list):
        lines.append(f"It returned {len(data)} item{'s' if len(data) != 1 else ''}.")
    else:
        body = "\n".join(line for line in result_text.strip().splitlines() if "EXTERNAL_UNTRUSTED" not in line)
        if body:
            lines.append(body[:400])
    return "\n".join(lines)
