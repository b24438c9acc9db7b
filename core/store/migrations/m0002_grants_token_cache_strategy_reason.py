""" "Allow for this chat" grants, the persistent token-estimate cache, the reason a strategy was
chosen (shown with the pinned plan), and soft deletion of chats."""

from __future__ import annotations

from sqlite_utils import Database

NAME = "0002_grants_token_cache_strategy_reason"


def migrate(db: Database) -> None:
    db.table("grants").create(
        {"chat_id": str, "tool": str, "created_at": float},
        pk=("chat_id", "tool"),
        foreign_keys=[("chat_id", "chats", "id")],
    )
    db.table("token_cache").create({"key": str, "tokens": int}, pk="key")
    db.table("chats").add_column("strategy_reason", str)
    db.table("chats").add_column("deleted", int, not_null_default=0)
