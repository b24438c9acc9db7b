"""Where a chat's tools came from (roster file or name, ``--mcp-config`` path, script), so a
reopened chat starts the same servers and a resume can check its pins against them."""

from __future__ import annotations

from sqlite_utils import Database

NAME = "0003_chat_sources"


def migrate(db: Database) -> None:
    db.table("chats").add_column("sources", str)
