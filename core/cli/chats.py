"""``deferchat chats [list|show|export|rename|delete|grants] [CHAT]``: the stored chats.

``chats show ID --usage`` prints the chat's cost meter instead of its transcript (one row per
model request, then the totals; ``--json``: one object, see docs/ARCHITECTURE.md).
``chats grants ID`` lists the chat's "allow for this chat" grants; ``--revoke TOOL`` (repeatable)
or ``--all`` takes them back (:mod:`core.pipeline.grants`)."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from core.cli import output
from core.cli.exits import EXIT_OK
from core.display import safe

if TYPE_CHECKING:
    from core.store import ChatRow, GrantRow, Store

ACTIONS = ("list", "show", "export", "rename", "delete", "grants")
_LIST_KEYS = ("id", "title", "provider", "model", "strategy", "status", "created_at", "updated_at")


def run(args: argparse.Namespace) -> int:
    from core.errors import UsageError
    from core.store import Store

    store = Store()
    action = args.action or "list"
    if action == "list":
        rows = store.chats()
        if args.json:
            for r in rows:
                output.data(json.dumps({k: getattr(r, k) for k in _LIST_KEYS}))
            return EXIT_OK
        if not rows:
            output.out("no chats yet: run `deferchat` or `deferchat ask PROMPT`")
        for r in rows:
            output.out(_list_line(r))
        return EXIT_OK
    if not args.chat_id:
        raise UsageError(f"chats {action} needs a chat id")
    if action in ("rename", "delete") or (action == "grants" and (args.revoke or args.all)):
        store.require_writable()  # refused at once, before the chat is even looked up
    chat = store.find_chat(args.chat_id)
    if chat is None:
        raise UsageError(f"no chat {args.chat_id!r}")
    from core.export import chat_markdown

    if action == "grants":
        return _grants(store, chat.id, revoke=args.revoke, revoke_all=args.all, as_json=args.json)
    if action == "show" and getattr(args, "usage", False):
        return _show_usage(store, chat.id, as_json=args.json)
    if action in ("show", "export"):
        if action == "export" and not args.md:
            raise UsageError("chats export writes Markdown: pass --md")
        text = chat_markdown(store, chat.id)
        if args.output:  # a file keeps the Markdown exactly as written; stdout is a terminal
            from pathlib import Path

            Path(args.output).write_text(text, encoding="utf-8")
            output.err(f"wrote {args.output}")
        else:
            output.out(text, end="")
        return EXIT_OK
    if action == "rename":
        if not args.title:
            raise UsageError("chats rename needs --title")
        store.update_chat(chat.id, title=args.title)
        return EXIT_OK
    if action == "delete":
        store.delete_chat(chat.id)
        output.err(f"deleted {chat.id}")
        return EXIT_OK
    raise UsageError(f"unknown chats action {action!r}")


def _list_line(r: ChatRow) -> str:
    """One chat of ``chats list``: every cell shown as text through the sanitiser, whatever the
    database holds there (the title is the model's; an older version or another tool may have
    written any of them, of any type SQLite keeps)."""

    def cell(value: object, width: int = 0) -> str:
        return safe(str(value)).ljust(width)

    where = f"{cell(r.provider)}/{cell(r.model)}"
    return f"{cell(r.id)}  {cell(r.status, 7)}  {where}  {cell(r.strategy, 12)}  {cell(r.title)}"


def _show_usage(store: Store, chat_id: str, *, as_json: bool) -> int:
    from core.chat.meter import COLUMNS, chat_usage, row_cells, totals_text

    usage = chat_usage(store, chat_id)
    if as_json:
        output.data(json.dumps(usage.to_json(chat_id)))
        return EXIT_OK
    rows = [COLUMNS, *(row_cells(r) for r in usage.requests)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS) - 1)]
    for row in rows:  # the last column (the breaks) is left unpadded
        cells = [c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=False))]
        output.out(safe("  ".join([*cells, row[-1]]).rstrip()))  # a break names tools: a server's words
    output.out(safe(f"total: {totals_text(usage.totals)}"))
    return EXIT_OK


def _grants(store: Store, chat_id: str, *, revoke: list[str] | None, revoke_all: bool, as_json: bool) -> int:
    """List the chat's grants, or revoke some (then list what was revoked)."""
    from core.errors import UsageError
    from core.pipeline import grants

    if revoke and revoke_all:
        raise UsageError("chats grants: pass --revoke TOOL or --all, not both")
    if revoke or revoke_all:
        active = {g.tool for g in store.grants(chat_id)}
        missing = [t for t in revoke or () if t not in active]
        if missing:
            have = ", ".join(sorted(active)) or "none"
            raise UsageError(
                f"no active grant of {safe(', '.join(missing))} in this chat (its active grants: {safe(have)})"
            )
        rows = grants.revoke(store, chat_id, None if revoke_all else revoke, by="cli")
        if as_json:
            output.data(json.dumps({"chat_id": chat_id, "revoked": [g.tool for g in rows]}))
        else:
            for g in rows:
                output.out(safe(f"revoked {g.tool}: it asks for your approval again at its next call"))
            if not rows:
                output.out("this chat has no grants to revoke")
        return EXIT_OK
    rows = grants.chat_grants(store, chat_id)
    if as_json:
        output.data(json.dumps({"chat_id": chat_id, "grants": [_grant_json(g) for g in rows]}))
        return EXIT_OK
    if not rows:
        output.out("no grants: every tool that needs approval asks for it in this chat")
        return EXIT_OK
    for g in rows:
        output.out(safe(f"{g.tool}  {grants.state(g)}"))  # a tool's name may be a server's
    return EXIT_OK


def _grant_json(g: GrantRow) -> dict[str, object]:
    return {
        "tool": g.tool,
        "active": g.active,
        "granted_at": g.created_at,
        "granted_by": g.granted_by,
        "approval_id": g.approval_id,
        "revoked_at": g.revoked_at,
        "revoked_by": g.revoked_by,
    }
