"""``notes.search`` and ``notes.create``: the owner's notebook (table ``notes``, searched with FTS5)."""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import Field, StringConstraints

from core.builtins import ToolContext
from core.builtins.shared import Args, Text, format_id, fts_query, json_list, now_stamp, owner_zone, tool, when
from core.pipeline.preview import ActionPreview, detail
from core.tools import ToolResult


class NotesSearchArgs(Args):
    query: Text = Field(description="Words to search for.")
    tag: str | None = Field(None, description="Only notes with this tag.")
    limit: int = Field(10, ge=1, le=50, description="Maximum number of notes.")


class NotesCreateArgs(Args):
    title: Text = Field(description="Note title.")
    body: Annotated[str, StringConstraints(max_length=100_000)] = Field(description="Note text, Markdown allowed.")
    tags: list[str] | None = Field(None, description="Tags for later search.")


def _clean_tag(tag: str) -> str:
    return tag.strip().lstrip("#").strip().lower()


@tool(
    "notes.search",
    NotesSearchArgs,
    "Full-text search over the owner's notes. Returns titles, tags and a snippet around each match.",
)
async def notes_search(args: NotesSearchArgs, ctx: ToolContext) -> ToolResult:
    tz = owner_zone(ctx)
    sql = (
        "select n.id, n.title, n.tags, n.updated_at, "
        "snippet(notes_fts, -1, '**', '**', '...', 16) as snippet "
        "from notes_fts join notes n on n.id = notes_fts.rowid where notes_fts match :q"
    )
    params: dict[str, Any] = {"q": fts_query(args.query), "limit": args.limit}
    if args.tag is not None and _clean_tag(args.tag):
        sql += " and exists (select 1 from json_each(n.tags) where value = :tag)"
        params["tag"] = _clean_tag(args.tag)
    sql += " order by bm25(notes_fts), n.id limit :limit"
    notes = [
        {
            "id": format_id("notes", r["id"]),
            "title": r["title"],
            "tags": json_list(r["tags"]),
            "snippet": r["snippet"],
            "updated_at": when(r["updated_at"], tz),
        }
        for r in ctx.db.query(sql, params)
    ]
    return ToolResult.of_json({"query": args.query, "tag": params.get("tag"), "count": len(notes), "notes": notes})


def _tags(args: NotesCreateArgs) -> list[str]:
    return [t for t in dict.fromkeys(_clean_tag(t) for t in args.tags or []) if t]


def _describe_create(args: NotesCreateArgs, ctx: ToolContext) -> ActionPreview:
    same = [format_id("notes", r["id"]) for r in ctx.db["notes"].rows_where("lower(title) = lower(?)", [args.title])]
    return ActionPreview(
        summary=f"Write a new note \u201c{args.title}\u201d in your notebook",
        fields=[
            detail(
                "Title",
                args.title,
                argument="title",
                note=f"you already have a note with this title ({', '.join(same)})" if same else "",
            ),
            detail("Tags", ", ".join(_tags(args)) or "(none)", argument="tags"),
            detail("Text", args.body, argument="body", note=f"{len(args.body):,} characters"),
        ],
    )


@tool("notes.create", NotesCreateArgs, "Write a new note in the owner's notebook.", preview=_describe_create)
async def notes_create(args: NotesCreateArgs, ctx: ToolContext) -> ToolResult:
    tags = _tags(args)
    stamp = now_stamp(ctx)
    table = ctx.db["notes"].insert(
        {
            "title": args.title,
            "body": args.body,
            "tags": json.dumps(tags),
            "created_at": stamp,
            "updated_at": stamp,
            "chat_id": ctx.chat_id,
            "demo": 0,
        }
    )
    return ToolResult.of_json(
        {
            "created": True,
            "id": format_id("notes", table.last_pk),
            "title": args.title,
            "tags": tags,
            "characters": len(args.body),
            "created_at": when(stamp, owner_zone(ctx)),
        }
    )
