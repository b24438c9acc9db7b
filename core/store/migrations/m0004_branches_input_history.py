"""Replaced turns, and what the owner typed.

``messages.replaces``: a user message sent in the place of an earlier one (*edit last
message*, *retry* after a stop) names it. The replaced message and what followed it leave the
chat's branch, the messages the model is sent (:func:`core.store.store.branch`), and stay in the
store, like the events and invocation rows of what they ran.

``input_history``: one row per message the owner sent, per chat, for ↑ in the message box. Kept
apart from ``messages`` because the two answer different questions: the history is what the
owner typed, across chats, newest first (a queued message, or one whose turn was replaced, is
still something they typed); ``messages`` is what the model saw. The rows are filled from the
messages that started a turn, so ↑ works in old chats at once.
"""

from __future__ import annotations

from sqlite_utils import Database

NAME = "0004_branches_input_history"


def migrate(db: Database) -> None:
    db.table("messages").add_column("replaces", str)
    db.table("input_history").create(
        {"id": int, "chat_id": str, "text": str, "created_at": float},
        pk="id",
        not_null={"chat_id", "text", "created_at"},
        foreign_keys=[("chat_id", "chats", "id")],
    )
    db.table("input_history").create_index(["chat_id", "id"])
    db.execute(
        "insert into input_history (chat_id, text, created_at) "
        "select m.chat_id, json_extract(m.content, '$[0].text'), m.created_at "
        "from messages m join turns t on t.user_message_id = m.id "
        "where json_valid(m.content) and json_extract(m.content, '$[0].type') = 'text' "
        "and json_extract(m.content, '$[0].text') is not null "
        "order by m.created_at, m.rowid"
    )
