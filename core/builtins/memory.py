"""``memory.search`` and ``memory.save``: facts the owner asked to be remembered (table ``memory_facts``,
searched with FTS5)."""

from __future__ import annotations

from typing import Annotated, Any
from zoneinfo import ZoneInfo

from pydantic import Field, StringConstraints

from core.builtins import ToolContext
from core.builtins.shared import Args, Text, format_id, fts_query, now_stamp, owner_zone, tool, when
from core.pipeline.preview import ActionPreview, detail
from core.tools import ToolResult


class MemorySearchArgs(Args):
    query: Text = Field(description="Words to look for, e.g. 'dentist' or 'coffee order'.")
    limit: int = Field(10, ge=1, le=50, description="Maximum number of facts to return.")


class MemorySaveArgs(Args):
    fact: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=1000)] = Field(
        description="The fact to remember, as one self-contained sentence."
    )
    topic: str | None = Field(None, description="Short topic used to group facts, e.g. 'health' or 'travel'.")


def _fact_view(row: dict[str, Any], tz: ZoneInfo) -> dict[str, Any]:
    return {
        "id": format_id("memory_facts", row["id"]),
        "fact": row["fact"],
        "topic": row["topic"],
        "saved_at": when(row["created_at"], tz),
    }


@tool(
    "memory.search",
    MemorySearchArgs,
    "Search the facts the owner asked you to remember (preferences, routines, people, plans). Returns the best "
    "matches with when each was saved. Check memory before asking the owner something they may already have told "
    "you.",
)
async def memory_search(args: MemorySearchArgs, ctx: ToolContext) -> ToolResult:
    tz = owner_zone(ctx)
    rows = ctx.db.query(
        "select m.* from memory_facts_fts f join memory_facts m on m.id = f.rowid "
        "where memory_facts_fts match ? order by bm25(memory_facts_fts), m.id limit ?",
        [fts_query(args.query), args.limit],
    )
    facts = [_fact_view(r, tz) for r in rows]
    result: dict[str, Any] = {"query": args.query, "count": len(facts), "facts": facts}
    if not facts:
        result["note"] = "Nothing remembered matches. Ask the owner, and save the answer with memory.save."
    return ToolResult.of_json(result)


def _topic(args: MemorySaveArgs) -> str | None:
    return (args.topic or "").strip().lower() or None


def _same_fact(args: MemorySaveArgs, ctx: ToolContext) -> list[dict[str, Any]]:
    return list(ctx.db["memory_facts"].rows_where("lower(fact) = lower(?)", [args.fact], limit=1))


def _describe_save(args: MemorySaveArgs, ctx: ToolContext) -> ActionPreview:
    same = _same_fact(args, ctx)
    note = f"already remembered as {format_id('memory_facts', same[0]['id'])}: nothing will be added" if same else ""
    return ActionPreview(
        summary=f"Remember for future chats: \u201c{args.fact}\u201d",
        fields=[detail("Fact", args.fact, argument="fact", note=note), detail("Topic", _topic(args), argument="topic")],
    )


@tool(
    "memory.save",
    MemorySaveArgs,
    "Remember a fact about the owner for future conversations. Save only what the owner said or clearly "
    "confirmed; one fact per call, in the owner's own terms.",
    preview=_describe_save,
)
async def memory_save(args: MemorySaveArgs, ctx: ToolContext) -> ToolResult:
    tz = owner_zone(ctx)
    topic = _topic(args)
    same = _same_fact(args, ctx)
    if same:
        return ToolResult.of_json(
            {"saved": False, "note": "Already remembered; nothing was added.", **_fact_view(same[0], tz)}
        )
    table = ctx.db["memory_facts"].insert(
        {"fact": args.fact, "topic": topic, "created_at": now_stamp(ctx), "chat_id": ctx.chat_id, "demo": 0}
    )
    row = ctx.db["memory_facts"].get(table.last_pk)
    return ToolResult.of_json({"saved": True, **_fact_view(row, tz)})
