"""``deferchat chats [list|show|export|rename|delete] [CHAT]``: the stored chats."""

from __future__ import annotations

import argparse
import json
import sys

from core.cli.exits import EXIT_OK
from core.display import safe

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
                print(json.dumps({k: getattr(r, k) for k in _LIST_KEYS}))
            return EXIT_OK
        if not rows:
            print("no chats yet: run `deferchat` or `deferchat ask PROMPT`")
        for r in rows:
            print(f"{r.id}  {r.status:<7}  {r.provider}/{r.model}  {r.strategy:<12}  {safe(r.title)}")  # model-written
        return EXIT_OK
    if not args.chat_id:
        raise UsageError(f"chats {action} needs a chat id")
    if action in ("rename", "delete"):
        store.require_writable()  # refused at once, before the chat is even looked up
    chat = store.find_chat(args.chat_id)
    if chat is None:
        raise UsageError(f"no chat {args.chat_id!r}")
    from core.export import chat_markdown

    if action in ("show", "export"):
        if action == "export" and not args.md:
            raise UsageError("chats export writes Markdown: pass --md")
        text = chat_markdown(store, chat.id)
        if args.output:
            from pathlib import Path

            Path(args.output).write_text(text, encoding="utf-8")
            print(f"wrote {args.output}", file=sys.stderr)
        else:
            sys.stdout.write(text)
        return EXIT_OK
    if action == "rename":
        if not args.title:
            raise UsageError("chats rename needs --title")
        store.update_chat(chat.id, title=args.title)
        return EXIT_OK
    if action == "delete":
        store.delete_chat(chat.id)
        print(f"deleted {chat.id}", file=sys.stderr)
        return EXIT_OK
    raise UsageError(f"unknown chats action {action!r}")
