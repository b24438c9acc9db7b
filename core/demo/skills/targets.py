"""Schedules and files: a schedule paused, resumed, cancelled or moved (only the one the request
names, else the demo asks which), a new schedule, what a schedule is; a folder listed, a file
opened, a file saved.

The target comes from linking the request's words to the demo's world (:mod:`core.demo.world`)
and then to what the tools list in this turn: a write goes ahead only when exactly one listed
row is the one the request names; otherwise the demo asks which one.
"""

from __future__ import annotations

import re
from typing import Any

from core.demo import answers
from core.demo.skills.base import (
    TODAY_FIRST,
    Action,
    Call,
    Context,
    Say,
    answered,
    data,
    failed,
    named_rows,
    rows_of,
    serves,
    title_of,
)
from core.demo.text import WEEKDAYS
from core.demo.when import day_span, moments
from core.demo.world import Link

# -- schedules ------------------------------------------------------------------------------------

_VERB = {"schedule.pause": "Pausing", "schedule.resume": "Resuming", "schedule.cancel": "Cancelling"}


@serves("schedule.pause", "schedule.resume", "schedule.cancel", "schedule.update")
def schedule_write(ctx: Context) -> Action | None:
    tool = next(
        t for t in ("schedule.pause", "schedule.resume", "schedule.cancel", "schedule.update") if ctx.goal.endswith(t)
    )
    done = ctx.last(tool)
    if done is not None:
        if bad := failed(done):
            return bad
        return Say(_schedule_done(tool, data(done)))
    link = ctx.reading.best("schedule", sure=True)
    said_times = [m.when.strftime("%H:%M") for m in ctx.reading.timed()]
    listed = ctx.last("schedule.list")
    if listed is None:
        return Call("schedule.list", {"status": "all"}, "First I'll find the schedule in your list.")
    if bad := failed(listed):
        return bad
    chosen = _one_schedule(rows_of(listed), link, said_times[0] if said_times and link is None else None)
    if chosen is None:
        return Say(
            answers.schedules(data(listed)) + "\n\nWhich one do you mean? I'd rather ask than change the wrong one."
        )
    args: dict[str, Any] = {"schedule_id": chosen["id"]}
    label = f"\u201c{chosen['title']}\u201d"
    if tool == "schedule.pause" and chosen.get("status") == "paused":
        until = f" until {chosen['paused_until']}." if chosen.get("paused_until") else "."
        return Say(f"{label} is already paused{until}")
    if tool == "schedule.resume" and chosen.get("status") == "active":
        return Say(f"{label} is not paused: it already runs at {chosen.get('time')}, {chosen.get('days_text')}.")
    if tool == "schedule.update":
        changes = _changes(ctx, chosen, link)
        if not changes:
            return Say(f"What should change about {label}? For example: \u201cmove it to 10am\u201d.")
        args.update(changes)
    if tool == "schedule.pause" and re.search(r"\buntil\b", ctx.said):
        now = ctx.now()
        if now is None:
            return Call("time.now", {}, TODAY_FIRST)
        until = re.split(r"\buntil\b", ctx.said, maxsplit=1)[1]
        span = day_span(moments(until, now), now.date())
        if span is not None:
            args["until"] = span[0].isoformat()
    return Call(tool, args, f"{_VERB.get(tool, 'Changing')} {label}.", search=tool.replace(".", " "))


def _changes(ctx: Context, chosen: dict[str, Any], link: Link | None) -> dict[str, Any]:
    """What the request changes: the last time of day it names that is not the schedule's own
    ("move my 9am standup to 10am": 10:00), the weekdays it names."""
    out: dict[str, Any] = {}
    times = [m.when.strftime("%H:%M") for m in ctx.reading.timed()]
    new = [t for t in times if t != chosen.get("time")]
    if new and (len(times) >= 2 or link is not None):
        out["time"] = new[-1]
    days = _weekdays(ctx.said)
    if days and ctx.reading.repeats:
        out["days"] = days
    return out


def _weekdays(said: str) -> list[str]:
    if re.search(r"\bweekdays?\b", said):
        return WEEKDAYS[:5]
    names = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
    return [WEEKDAYS[i] for i, n in enumerate(names) if re.search(rf"\b{n}s?\b", said)]


def _one_schedule(rows: list[dict[str, Any]], link: Link | None, at: str | None) -> dict[str, Any] | None:
    if link is not None:
        named = named_rows(rows, "title", link.entity.key)
        return named[0] if len(named) == 1 else None
    timed = [r for r in rows if at and r.get("time") == at and r.get("status") != "cancelled"]
    return timed[0] if len(timed) == 1 else None


def _schedule_done(tool: str, d: dict[str, Any]) -> str:
    s = d.get("schedule") or {}
    title = s.get("title", "the schedule")
    if tool == "schedule.update":
        changed = d.get("changed") or {}
        parts = [f"{k} {v['from']} \u2192 {v['to']}" for k, v in changed.items() if isinstance(v, dict)]
        return f"Updated \u201c{title}\u201d: " + (", ".join(parts) or "nothing changed") + "."
    if tool == "schedule.pause":
        until = f" until {s['paused_until']}" if s.get("paused_until") else " until you resume it"
        return f"Paused \u201c{title}\u201d{until}."
    if tool == "schedule.resume":
        return f"Resumed \u201c{title}\u201d: next at {s.get('next_run') or s.get('time')}."
    return f"Cancelled \u201c{title}\u201d for good (it stays in the history)."


@serves("schedule.list")
def schedule_read(ctx: Context) -> Action | None:
    listed = ctx.last("schedule.list")
    link = ctx.reading.best("schedule")
    if listed is None:
        said = ctx.said.split()
        status = "all" if "all" in said or link is not None else "paused" if "paused" in said else None
        return Call("schedule.list", {"status": status} if status else {})
    if bad := failed(listed):
        return bad
    if link is None:
        return Say(answers.schedules(data(listed)))
    rows = named_rows(rows_of(listed), "title", link.entity.key)
    if not rows:
        return Say(f"You have no schedule called \u201c{link.entity.label}\u201d any more.")
    r = rows[0]
    paused = " (paused)" if r.get("status") == "paused" else ""
    upcoming = r.get("next_run") or "not planned"
    return Say(f"\u201c{r['title']}\u201d is at {r['time']}, {r['days_text']}{paused}; next {upcoming}.")


@serves("schedule.create")
def schedule_create(ctx: Context) -> Action | None:
    if end := answered(ctx, "schedule.create", _schedule_made):
        return end
    times = [m.when.strftime("%H:%M") for m in ctx.reading.timed()]
    if not times:
        return Say("At what time of day should it run? For example: \u201cevery weekday at 8am\u201d.")
    title = title_of(ctx, "schedule")
    if not title:
        return Say("What is the schedule for? For example: \u201cremind me to stretch every weekday at 8am\u201d.")
    args: dict[str, Any] = {"title": title, "time": times[0]}
    if days := _weekdays(ctx.said):
        args["days"] = days
    return Call("schedule.create", args, f"Creating the schedule \u201c{title}\u201d at {times[0]}.")


def _schedule_made(d: dict[str, Any]) -> str:
    s = d.get("schedule") or d
    return f"Created the schedule \u201c{s.get('title')}\u201d at {s.get('time')}, {s.get('days_text') or 'every day'}."


# -- files ----------------------------------------------------------------------------------------


@serves("workspace.write_file")
def write_file(ctx: Context) -> Action | None:
    if end := answered(ctx, "workspace.write_file", _file_saved):
        return end
    r = ctx.reading
    called = re.search(
        r"\b(?:called|named|titled)\s+[\"\u201c']?([^\"\u201d',.:]+?)[\"\u201d']?(?:\s+(?:with|containing|saying)\b|[,.:]|$)",
        r.text,
        re.I,
    )
    path = r.filename or (called.group(1).strip() + ".txt" if called else "")
    folder = r.best("folder", sure=True)
    if path and folder is not None and "/" not in path:
        path = f"{folder.entity.key}/{path}"
    content = re.search(
        r"\b(?:with|saying|containing|that says|with the text)\s*:?\s*(.+)\Z|:\s*(.+)\Z", r.text, re.IGNORECASE | re.S
    )
    body = (content.group(1) or content.group(2)).strip() if content else r.content
    if not path:
        return Say("What should the file be called? For example: \u201csave a file called ideas.txt with ...\u201d.")
    if not body:
        return Say(f"What should {path} say? For example: \u201csave a file called {path} with buy milk\u201d.")
    return Call("workspace.write_file", {"path": path, "content": body + "\n"}, f"Writing {path} in your workspace.")


@serves("workspace.read_file", "workspace.search")
def files(ctx: Context) -> Action | None:
    r = ctx.reading
    listed = ctx.last("workspace.search")
    opened = ctx.last("workspace.read_file")
    if opened is not None:
        if bad := failed(opened):
            return bad
        return Say(f"**{data(opened).get('path') or opened.args.get('path')}**:\n\n" + _file_text(opened.text))
    file = r.best("file")
    folder = r.best("folder", sure=True)
    opens = ctx.goal.endswith("read_file") or folder is None or (file is not None and file.score > folder.score)
    if listed is None and (r.filename or file is not None) and opens:
        path = file.entity.key if file is not None else r.filename
        return Call("workspace.read_file", {"path": path}, f"Opening {path}.")
    if ctx.goal.endswith("read_file") and listed is None and folder is None:
        return None  # no file named: not a file to open
    if listed is not None:
        if bad := failed(listed):
            return bad
        rows = [m["path"] for m in data(listed).get("matches") or []]
        where = listed.args.get("glob", "").removesuffix("/*") or "your workspace"
        if not rows:
            return Say(f"There are no files in {where}.")
        return Say("\n".join([f"{len(rows)} files in {where}:", *(f"- {row}" for row in rows)]))
    args: dict[str, Any] = {"pattern": "."}
    if folder is not None:
        args["glob"] = f"{folder.entity.key}/*"
    elif m := re.search(r"\b(?:my|the)\s+(\w+)\s+folder\b", r.said):
        return Say(f"You have no folder called {m.group(1).capitalize()} in your workspace.")
    return Call(
        "workspace.search", args, "Listing the files in " + (args.get("glob", "")[:-2] or "your workspace") + "."
    )


def _file_saved(d: dict[str, Any]) -> str:
    return f"Saved {d.get('bytes')} bytes to **{d.get('path')}** in your workspace."


def _file_text(text: str) -> str:
    lines = text.splitlines()[1:]  # the header line: "path: lines 1-4 of 4"
    return "\n".join("> " + (line.split("\t", 1)[1] if "\t" in line else line) for line in lines if line.strip())
