"""``deferchat chats [list|show|export|rename|delete] [CHAT]``: the stored chats.

``chats show ID --usage`` prints the chat's cost meter instead of its transcript (one row per
model request, then the totals; ``--json``: one object, see docs/ARCHITECTURE.md)."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from core.cli import output
from core.cli.exits import EXIT_OK
from core.display import safe

if TYPE_CHECKING:
    from core.store import Store

ACTIONS = ("list", "show", "export", "rename", "delete")
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
            title = safe(r.title)  # model-written, on one line
            output.out(f"{r.id}  {r.status:<7}  {r.provider}/{r.model}  {r.strategy:<12}  {title}")
        return EXIT_OK
    if not args.chat_id:
        raise UsageError(f"chats {action} needs a chat id")
    if action in ("rename", "delete"):
        store.require_writable()  # refused at once, before the chat is even looked up
    chat = store.find_chat(args.chat_id)
    if chat is None:
        raise UsageError(f"no chat {args.chat_id!r}")
    from core.export import chat_markdown

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
