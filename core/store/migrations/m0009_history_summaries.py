"""A chat's history summarised (issue 22): when a chat nears its model's context window, its
oldest turns are summarised into one summary that takes their place in requests. The turns stay
in ``messages``; a row here says which of them it covers (every message of the branch up to and
including ``through_id``), the summary's text, the deferred tools those turns used (the summary
names them, so they stay reachable), and how it was made: ``model`` (the chat's own model wrote
it), ``extractive`` (made from the turns themselves: the model failed, or the chat runs offline),
``dropped`` (nothing could be made: the turns are left out, and that was said).

Numbered 0009 to leave 0007 and 0008 to the migrations written beside it; renumbered at merge if
those do not come."""

from __future__ import annotations

from sqlite_utils import Database

NAME = "0009_history_summaries"


def migrate(db: Database) -> None:
    db.table("history_summaries").create(
        {
            "id": str,
            "chat_id": str,
            "created_at": float,
            "through_id": str,
            "text": str,
            "tools": str,  # JSON list of tool names
            "turns": int,
            "messages": int,
            "tokens_before": int,
            "tokens_after": int,
            "method": str,  # model | extractive | dropped
            "reason": str,  # auto | owner
            "provider": str,
            "model": str,
            "error": str,
        },
        pk="id",
        not_null={"chat_id", "created_at", "through_id", "text", "method"},
        foreign_keys=[("chat_id", "chats", "id")],
    )
    db.table("history_summaries").create_index(["chat_id", "created_at"])
