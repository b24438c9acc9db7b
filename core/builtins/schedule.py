"""``schedule.*``: recurring schedules (a local time on chosen weekdays) and their state machine:
active, paused (until resumed, or until a date), cancelled for good. Every change is written to
``schedule_history`` in the same transaction."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Sequence
from typing import Any, Literal, get_args
from zoneinfo import ZoneInfo

from pydantic import Field

from core.builtins import ToolContext
from core.builtins.shared import (
    HHMM,
    Args,
    Day,
    Text,
    ToolError,
    current_time,
    find_row,
    format_id,
    json_list,
    like_pattern,
    now_stamp,
    owner_zone,
    parse_date,
    parse_id,
    parse_zone,
    tool,
    will_fail,
    words_of,
)
from core.pipeline.preview import ActionPreview, PreviewField, change, decisive, detail
from core.tools import ToolResult

# mon ... sun: the order days are stored and shown in (the same as core.builtins.data.WEEKDAYS).
WEEKDAYS: tuple[str, ...] = get_args(Day)


class ScheduleCreateArgs(Args):
    title: Text = Field(description="What the schedule is for, e.g. 'Team standup'.")
    time: HHMM = Field(description="Local time of day, 24-hour HH:MM.")
    days: list[Day] | None = Field(
        None, description="Weekdays it fires on, e.g. ['mon','tue','wed','thu','fri']; defaults to every day."
    )
    timezone: str | None = Field(None, description="IANA timezone; defaults to the owner's timezone.")


class ScheduleListArgs(Args):
    status: Literal["active", "paused", "cancelled", "all"] = Field("active", description="Filter by status.")
    query: str | None = Field(None, description="Only schedules whose title contains these words.")


class ScheduleUpdateArgs(Args):
    schedule_id: Text = Field(description="Identifier returned by schedule.list or schedule.create, e.g. sch_3.")
    title: str | None = Field(None, description="New title.")
    time: HHMM | None = Field(None, description="New local time of day, 24-hour HH:MM.")
    days: list[Day] | None = Field(None, description="New weekdays.")
    timezone: str | None = Field(None, description="New IANA timezone.")


class SchedulePauseArgs(Args):
    schedule_id: Text = Field(description="Identifier returned by schedule.list or schedule.create, e.g. sch_3.")
    until: str | None = Field(None, description="Resume automatically on this date, YYYY-MM-DD.")


class ScheduleIdArgs(Args):
    schedule_id: Text = Field(description="Identifier returned by schedule.list or schedule.create, e.g. sch_3.")


class ScheduleCancelArgs(Args):
    schedule_id: Text = Field(description="Identifier returned by schedule.list or schedule.create, e.g. sch_3.")
    reason: str | None = Field(None, description="Why it was cancelled, kept in history.")


def _check_hhmm(value: str, what: str = "time") -> str:
    hours, minutes = int(value[:2]), int(value[3:])
    if hours > 23 or minutes > 59:
        raise ToolError(f"Bad {what} {value!r}: use 24-hour HH:MM between 00:00 and 23:59.")
    return value


def _canonical_days(days: Sequence[str] | None) -> list[str]:
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
    return ZoneInfo(row["timezone"]) if row["timezone"] else owner_zone(ctx)


def _next_run(row: dict[str, Any], ctx: ToolContext) -> str | None:
    if row["status"] == "cancelled" or (row["status"] == "paused" and not row["paused_until"]):
        return None
    tz = _schedule_zone(row, ctx)
    now = current_time(ctx).astimezone(tz)
    first = now.date()
    if row["status"] == "paused":
        first = max(first, dt.date.fromisoformat(row["paused_until"]))
    days = set(json_list(row["days"]))
    hh, mm = int(row["time"][:2]), int(row["time"][3:])
    for offset in range(8):
        day = first + dt.timedelta(days=offset)
        moment = dt.datetime.combine(day, dt.time(hh, mm), tz)
        if WEEKDAYS[day.weekday()] in days and moment > now:
            return moment.isoformat(timespec="minutes")
    return None


def _schedule_view(row: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    days = json_list(row["days"])
    view = {
        "id": format_id("schedules", row["id"]),
        "title": row["title"],
        "time": row["time"],
        "days": days,
        "days_text": _days_text(days),
        "timezone": row["timezone"] or ctx.timezone,
        "status": row["status"],
        "next_run": _next_run(row, ctx),
    }
    if row["status"] == "paused":
        view["paused_until"] = row["paused_until"]
    if row["status"] == "cancelled":
        view["cancel_reason"] = row["cancel_reason"]
    return view


def _log_schedule(ctx: ToolContext, schedule_id: int, action: str, changes: dict[str, Any]) -> None:
    ctx.db["schedule_history"].insert(
        {
            "schedule_id": schedule_id,
            "action": action,
            "changes": json.dumps(changes),
            "chat_id": ctx.chat_id,
            "call_id": ctx.call_id,
            "at": now_stamp(ctx),
        }
    )


def _set_schedule(
    ctx: ToolContext, row: dict[str, Any], action: str, fields: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Change a schedule and record the change in its history, in one transaction.

    Returns the new row and the changes, ``{field: {"from", "to"}}`` (days as lists).
    """
    changes = {k: {"from": row[k], "to": v} for k, v in fields.items() if row[k] != v}
    if "days" in changes:
        changes["days"] = {"from": json_list(row["days"]), "to": json_list(fields["days"])}
    if changes:
        with ctx.db.atomic():
            ctx.db["schedules"].update(row["id"], {**fields, "updated_at": now_stamp(ctx)})
            _log_schedule(ctx, row["id"], action, changes)
    return ctx.db["schedules"].get(row["id"]), changes


def _pause_over(row: dict[str, Any], ctx: ToolContext) -> bool:
    """A pause with an end date that has come (the schedule resumes by itself)."""
    return (
        row["status"] == "paused"
        and bool(row["paused_until"])
        and dt.date.fromisoformat(row["paused_until"]) <= current_time(ctx).astimezone(_schedule_zone(row, ctx)).date()
    )


def _expire_pauses(ctx: ToolContext) -> None:
    """Pauses with an end date that has come resume by themselves."""
    for row in list(ctx.db["schedules"].rows_where("status = 'paused' and paused_until is not null")):
        if _pause_over(row, ctx):
            _set_schedule(ctx, row, "auto_resumed", {"status": "active", "paused_until": None})


def _schedule(ctx: ToolContext, raw: str) -> dict[str, Any]:
    """The schedule ``raw`` names; when ``raw`` is not an id, the error names likely candidates."""
    _expire_pauses(ctx)
    return _find_schedule(ctx, raw)


def _find_schedule(ctx: ToolContext, raw: str) -> dict[str, Any]:
    """:func:`_schedule` without expiring pauses (it reads only)."""
    try:
        return find_row(ctx, "schedules", raw)
    except ToolError as exc:
        if parse_id("schedules", raw) is not None or not words_of(raw):
            raise
        rows = ctx.db["schedules"].rows_where(
            " or ".join("lower(title) like ? escape '\\'" for _ in words_of(raw)),
            [like_pattern(w) for w in words_of(raw)],
            order_by="id",
        )
        matches = [
            f"{format_id('schedules', r['id'])} '{r['title']}' at {r['time']} "
            f"{_days_text(json_list(r['days']))} ({r['status']})"
            for r in rows
        ]
        if not matches:
            raise
        raise ToolError(f"{exc} Schedules whose title matches: {'; '.join(matches)}.") from None


def _check_zone_name(name: str | None) -> str | None:
    if name is None:
        return None
    parse_zone(name.strip())
    return name.strip()


# --- what a call will do, for its approval (the describe hooks beside each tool read, never write) ---


def _status_text(status: str, until: str | None) -> str:
    if status == "paused":
        return f"paused until {until}" if until else "paused until resumed"
    return status


def _in_words(row: dict[str, Any], ctx: ToolContext) -> str:
    days = _days_text(json_list(row["days"]))
    zone = row["timezone"] or ctx.timezone
    status = _status_text(row["status"], row["paused_until"])
    return f"\u201c{row['title']}\u201d, {days} at {row['time']} ({zone}), {status}"


def _target(raw: str, ctx: ToolContext) -> tuple[dict[str, Any] | None, PreviewField, list[str]]:
    """The schedule a call names as the tool will find it (a pause whose end has come is over),
    its field, and the problem when there is none."""
    try:
        row = _find_schedule(ctx, raw)
    except ToolError as exc:
        return None, decisive("Schedule", raw, note="no such schedule", argument="schedule_id"), [will_fail(str(exc))]
    if _pause_over(row, ctx):
        row = {**row, "status": "active", "paused_until": None}
    field = decisive("Schedule", format_id("schedules", row["id"]), note=_in_words(row, ctx), argument="schedule_id")
    return row, field, []


def _describe_create(args: ScheduleCreateArgs, ctx: ToolContext) -> ActionPreview:
    zone = _check_zone_name(args.timezone) or owner_zone(ctx).key
    days = _days_text(_canonical_days(args.days))
    time = _check_hhmm(args.time)
    return ActionPreview(
        summary=f"Create the schedule \u201c{args.title}\u201d: {days} at {time} ({zone})",
        fields=[
            detail("Title", args.title, argument="title"),
            detail("Time", time, argument="time"),
            detail("Days", days, argument="days"),
            detail("Timezone", zone, argument="timezone"),
        ],
    )


@tool(
    "schedule.create",
    ScheduleCreateArgs,
    "Create a recurring schedule, such as a daily standup or a weekly reminder, that fires at a local time on "
    "chosen weekdays.",
    preview=_describe_create,
)
async def schedule_create(args: ScheduleCreateArgs, ctx: ToolContext) -> ToolResult:
    zone = _check_zone_name(args.timezone) or owner_zone(ctx).key
    days = _canonical_days(args.days)
    stamp = now_stamp(ctx)
    with ctx.db.atomic():
        table = ctx.db["schedules"].insert(
            {
                "title": args.title,
                "time": _check_hhmm(args.time),
                "days": json.dumps(days),
                "timezone": zone,
                "status": "active",
                "created_at": stamp,
                "updated_at": stamp,
                "chat_id": ctx.chat_id,
                "demo": 0,
            }
        )
        _log_schedule(
            ctx, table.last_pk, "created", {"title": args.title, "time": args.time, "days": days, "timezone": zone}
        )
    result = {"created": True, **_schedule_view(ctx.db["schedules"].get(table.last_pk), ctx)}
    twins = [
        format_id("schedules", r["id"])
        for r in ctx.db["schedules"].rows_where(
            "lower(title) = lower(?) and status != 'cancelled' and id != ?", [args.title, table.last_pk]
        )
    ]
    if twins:
        result["note"] = f"Another schedule already has this title: {', '.join(twins)}."
    return ToolResult.of_json(result)


@tool(
    "schedule.list",
    ScheduleListArgs,
    "List the owner's recurring schedules with their ids, times, weekdays and whether each is active or paused.",
)
async def schedule_list(args: ScheduleListArgs, ctx: ToolContext) -> ToolResult:
    _expire_pauses(ctx)
    where: list[str] = []
    params: list[Any] = []
    if args.status != "all":
        where.append("status = ?")
        params.append(args.status)
    for word in words_of(args.query or ""):
        where.append("lower(title) like ? escape '\\'")
        params.append(like_pattern(word))
    rows = ctx.db["schedules"].rows_where(" and ".join(where) or None, params, order_by="time, id")
    schedules = [_schedule_view(r, ctx) for r in rows]
    return ToolResult.of_json(
        {"status": args.status, "query": args.query, "count": len(schedules), "schedules": schedules}
    )


def _update_fields(args: ScheduleUpdateArgs) -> dict[str, Any]:
    """The columns a schedule.update call sets, as the tool writes them."""
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
    return fields


def _label(row: dict[str, Any]) -> str:
    return f"Schedule {format_id('schedules', row['id'])} ('{row['title']}')"


def _refuse_cancelled(row: dict[str, Any], doing: str) -> None:
    if row["status"] == "cancelled":
        raise ToolError(f"{_label(row)} is cancelled and cannot be {doing}; create a new one with schedule.create.")


def _transition(ctx: ToolContext, row: dict[str, Any], action: str, fields: dict[str, Any]) -> ToolResult:
    new, _ = _set_schedule(ctx, row, action, fields)
    return ToolResult.of_json(
        {
            "id": format_id("schedules", row["id"]),
            "previous_status": row["status"],
            "schedule": _schedule_view(new, ctx),
        }
    )


_SHOWN_COLUMNS = {"title": "Title", "time": "Time", "days": "Days", "timezone": "Timezone"}


def _column_text(column: str, value: Any, ctx: ToolContext) -> str:
    if column == "days":
        return _days_text(json_list(value))
    if column == "timezone":
        return value or ctx.timezone
    return str(value)


def _describe_update(args: ScheduleUpdateArgs, ctx: ToolContext) -> ActionPreview:
    row, target, problems = _target(args.schedule_id, ctx)
    if row is None:
        return ActionPreview(summary=f"Change the schedule {args.schedule_id}", fields=[target], problems=problems)
    fields = [target]
    try:
        _refuse_cancelled(row, "changed")
        new = _update_fields(args)
    except ToolError as exc:
        return ActionPreview(
            summary=f"Change the schedule \u201c{row['title']}\u201d", fields=fields, problems=[will_fail(str(exc))]
        )
    words = []
    for column, value in new.items():
        before, after = _column_text(column, row[column], ctx), _column_text(column, value, ctx)
        same = before == after
        fields.append(change(_SHOWN_COLUMNS[column], before, after, argument=column, note="unchanged" if same else ""))
        if not same:
            words.append(f"{_SHOWN_COLUMNS[column].lower()} {before} \u2192 {after}")
    return ActionPreview(
        summary=f"Change the schedule \u201c{row['title']}\u201d: " + ("; ".join(words) or "nothing changes"),
        fields=fields,
    )


@tool(
    "schedule.update",
    ScheduleUpdateArgs,
    "Change an existing schedule's title, time, weekdays or timezone. Fields you leave out keep their values.",
    preview=_describe_update,
)
async def schedule_update(args: ScheduleUpdateArgs, ctx: ToolContext) -> ToolResult:
    row = _schedule(ctx, args.schedule_id)
    _refuse_cancelled(row, "changed")
    fields = _update_fields(args)
    new, changed = _set_schedule(ctx, row, "updated", fields)
    result = {"id": format_id("schedules", row["id"]), "changed": changed, "schedule": _schedule_view(new, ctx)}
    if not changed:
        result["note"] = "Nothing changed: the schedule already had these values."
    return ToolResult.of_json(result)


def _describe_transition(
    raw: str, ctx: ToolContext, verb: str, status: str, check: Callable[[dict[str, Any]], str | None]
) -> ActionPreview:
    """A state change of one schedule: its status before -> ``status``. ``check`` gives the pause's
    end for the row (None: none), or raises the ToolError the tool would."""
    row, target, problems = _target(raw, ctx)
    if row is None:
        return ActionPreview(summary=f"{verb} the schedule {raw}", fields=[target], problems=problems)
    summary = f"{verb} the schedule \u201c{row['title']}\u201d"
    try:
        until = check(row)
    except ToolError as exc:
        return ActionPreview(summary=summary, fields=[target], problems=[will_fail(str(exc))])
    before = _status_text(row["status"], row["paused_until"])
    now_text = _status_text(status, until)
    fields = [target, change("Status", before, now_text, argument="until" if until else None)]
    if status == "active":
        fields.append(detail("Next run", _next_run({**row, "status": "active", "paused_until": None}, ctx)))
    return ActionPreview(summary=summary, fields=fields)


def _describe_pause(args: SchedulePauseArgs, ctx: ToolContext) -> ActionPreview:
    return _describe_transition(args.schedule_id, ctx, "Pause", "paused", lambda row: _pause_until(args, row, ctx))


@tool(
    "schedule.pause",
    SchedulePauseArgs,
    "Pause a schedule so it stops firing until it is resumed, optionally until a date. The schedule and its "
    "settings are kept.",
    preview=_describe_pause,
)
async def schedule_pause(args: SchedulePauseArgs, ctx: ToolContext) -> ToolResult:
    row = _schedule(ctx, args.schedule_id)
    return _transition(ctx, row, "paused", {"status": "paused", "paused_until": _pause_until(args, row, ctx)})


def _pause_until(args: SchedulePauseArgs, row: dict[str, Any], ctx: ToolContext) -> str | None:
    """The date a schedule.pause call pauses ``row`` until (None: until resumed), or why it cannot."""
    until = None
    if args.until is not None and args.until.strip():
        until_date = parse_date(args.until, "until date")
        today = current_time(ctx).astimezone(_schedule_zone(row, ctx)).date()
        if until_date <= today:
            raise ToolError(
                f"until {until_date.isoformat()} is not in the future (today is {today.isoformat()}); "
                "leave it out to pause until resumed."
            )
        until = until_date.isoformat()
    _refuse_cancelled(row, "paused")
    if row["status"] == "paused" and until is None:
        raise ToolError(
            f"{_label(row)} is already paused"
            + (f" until {row['paused_until']}." if row["paused_until"] else " until resumed.")
        )
    return until


def _check_resume(row: dict[str, Any]) -> None:
    _refuse_cancelled(row, "resumed")
    if row["status"] == "active":
        raise ToolError(f"{_label(row)} is not paused; it is already active.")


def _describe_resume(args: ScheduleIdArgs, ctx: ToolContext) -> ActionPreview:
    return _describe_transition(args.schedule_id, ctx, "Resume", "active", _check_resume)


@tool(
    "schedule.resume",
    ScheduleIdArgs,
    "Resume a paused schedule. It fires again from its next occurrence.",
    preview=_describe_resume,
)
async def schedule_resume(args: ScheduleIdArgs, ctx: ToolContext) -> ToolResult:
    row = _schedule(ctx, args.schedule_id)
    _check_resume(row)
    return _transition(ctx, row, "resumed", {"status": "active", "paused_until": None})


def _check_cancel(row: dict[str, Any]) -> None:
    if row["status"] == "cancelled":
        raise ToolError(f"{_label(row)} is already cancelled.")


def _describe_cancel(args: ScheduleCancelArgs, ctx: ToolContext) -> ActionPreview:
    preview = _describe_transition(args.schedule_id, ctx, "Cancel for good", "cancelled", _check_cancel)
    preview.fields.append(detail("Reason", (args.reason or "").strip() or "(none)", argument="reason"))
    return preview


@tool(
    "schedule.cancel",
    ScheduleCancelArgs,
    "Cancel a schedule for good. It stops firing and is kept only in history; create a new one to bring it back.",
    preview=_describe_cancel,
)
async def schedule_cancel(args: ScheduleCancelArgs, ctx: ToolContext) -> ToolResult:
    row = _schedule(ctx, args.schedule_id)
    _check_cancel(row)
    return _transition(
        ctx,
        row,
        "cancelled",
        {
            "status": "cancelled",
            "paused_until": None,
            "cancel_reason": (args.reason or "").strip() or None,
            "cancelled_at": now_stamp(ctx),
        },
    )
