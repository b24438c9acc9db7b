"""A chat's own system prompt (issue 13): set when the chat opens (config.toml's
``system_prompt``, or ``--system``) and editable later. NULL in chats made before it existed:
they keep the prefix they were sent with (no chat prompt)."""

from __future__ import annotations

from sqlite_utils import Database

NAME = "0006_chat_system_prompt"


def migrate(db: Database) -> None:
    db.table("chats").add_column("system_prompt", str)
