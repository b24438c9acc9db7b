"""``tasks.list``, ``tasks.create`` and ``tasks.complete``: the owner's to-do list (table ``tasks``)."""

from __future__ import annotations

from typing import Any, Literal
from zoneinfo import ZoneInfo

from pydantic import Field

from core.builtins import ToolContext
from core.builtins.shared import (
    Args,
    Text,
    ToolError,
    current_time,
    find_row,
    format_id,
    lookup,
    now_stamp,
    owner_zone,
    parse_date,
    tool,
    when,
    will_fail,
)
from core.pipeline.preview import ActionPreview, change, decisive, detail
from core.tools import ToolResult


class TasksListArgs(Args):
    status: Literal["open", "done", "all"] = Field("open", description="Which tasks to list.")
    due_before: str | None = Field(None, description="Only tasks due before this date, YYYY-MM-DD.")


class TasksCreateArgs(Args):
    title: Text = Field(description="What needs doing.")
    due: str | None = Field(None, description="Due date, YYYY-MM-DD.")
    notes: str | None = Field(None, description="Details worth keeping with the task.")


class TasksCompleteArgs(Args):
    task_id: Text = Field(description="Task id returned by tasks.list or tasks.create, e.g. tsk_4.")


def _task_view(row: dict[str, Any], ctx: ToolContext, tz: ZoneInfo) -> dict[str, Any]:
    today = current_time(ctx).astimezone(tz).date().isoformat()
    view = {
        "id": format_id("tasks", row["id"]),
        "title": row["title"],
        "due": row["due"],
        "status": row["status"],
        "overdue": bool(row["status"] == "open" and row["due"] and row["due"] < today),
        "notes": row["notes"],
    }
    if row["status"] == "done":
        view["completed_at"] = when(row["completed_at"], tz)
    return view


@tool("tasks.list", TasksListArgs, "List the owner's to-do items, open ones first, with due dates and ids.")
async def tasks_list(args: TasksListArgs, ctx: ToolContext) -> ToolResult:
    tz = owner_zone(ctx)
    where: list[str] = []
    params: list[Any] = []
    if args.status != "all":
        where.append("status = ?")
        params.append(args.status)
    if args.due_before is not None:
        where.append("due is not null and due < ?")
        params.append(parse_date(args.due_before, "due_before date").isoformat())
    rows = ctx.db["tasks"].rows_where(
        " and ".join(where) or None, params, order_by="status != 'open', due is null, due, id"
    )
    tasks = [_task_view(r, ctx, tz) for r in rows]
    return ToolResult.of_json(
        {"status": args.status, "due_before": args.due_before, "count": len(tasks), "tasks": tasks}
    )


def _due(args: TasksCreateArgs) -> str | None:
    return parse_date(args.due, "due date").isoformat() if args.due and args.due.strip() else None


def _describe_create(args: TasksCreateArgs, ctx: ToolContext) -> ActionPreview:
    problems: list[str] = []
    try:
        due = _due(args) or "(none)"
    except ToolError as exc:
        due, problems = args.due or "", [will_fail(str(exc))]
    return ActionPreview(
        summary=f"Add the task \u201c{args.title}\u201d to your to-do list"
        + (f", due {due}" if due != "(none)" and not problems else ""),
        fields=[
            detail("Title", args.title, argument="title"),
            detail("Due", due, argument="due"),
            detail("Notes", (args.notes or "").strip() or "(none)", argument="notes"),
        ],
        problems=problems,
    )


@tool("tasks.create", TasksCreateArgs, "Add a to-do item to the owner's task list.", preview=_describe_create)
async def tasks_create(args: TasksCreateArgs, ctx: ToolContext) -> ToolResult:
    tz = owner_zone(ctx)
    due = _due(args)
    table = ctx.db["tasks"].insert(
        {
            "title": args.title,
            "due": due,
            "notes": (args.notes or "").strip() or None,
            "status": "open",
            "created_at": now_stamp(ctx),
            "chat_id": ctx.chat_id,
            "demo": 0,
        }
    )
    view = _task_view(ctx.db["tasks"].get(table.last_pk), ctx, tz)
    return ToolResult.of_json({"created": True, **view})


def _already_done(row: dict[str, Any], tz: ZoneInfo) -> str:
    return (
        f"Task {format_id('tasks', row['id'])} ('{row['title']}') is already done "
        f"(completed {when(row['completed_at'], tz)})."
    )


def _describe_complete(args: TasksCompleteArgs, ctx: ToolContext) -> ActionPreview:
    row = lookup(
        ctx, "tasks", args.task_id, label="Task", argument="task_id", summary=f"Mark the task {args.task_id} as done"
    )
    if isinstance(row, ActionPreview):
        return row
    tz = owner_zone(ctx)
    view = _task_view(row, ctx, tz)
    facts = [f"due {view['due']}" + (" (overdue)" if view["overdue"] else "")] if view["due"] else []
    return ActionPreview(
        summary=f"Mark the task \u201c{row['title']}\u201d as done",
        fields=[
            decisive("Task", view["id"], note="; ".join([f"\u201c{row['title']}\u201d", *facts]), argument="task_id"),
            change("Status", row["status"], "done"),
        ],
        problems=[will_fail(_already_done(row, tz))] if row["status"] == "done" else [],
    )


@tool("tasks.complete", TasksCompleteArgs, "Mark a to-do item as done.", preview=_describe_complete)
async def tasks_complete(args: TasksCompleteArgs, ctx: ToolContext) -> ToolResult:
    tz = owner_zone(ctx)
    row = find_row(ctx, "tasks", args.task_id)
    if row["status"] == "done":
        raise ToolError(_already_done(row, tz))
    ctx.db["tasks"].update(row["id"], {"status": "done", "completed_at": now_stamp(ctx)})
    return ToolResult.of_json({"completed": True, **_task_view(ctx.db["tasks"].get(row["id"]), ctx, tz)})
