"""One turn per chat at a time, across processes: the lease a running turn holds.

A row names the chat, the holder (host, PID namespace, PID and a random part, so two turns of
one process differ too), when it took the lease, when it last renewed it and when the lease
expires unless renewed (:mod:`core.store.lease`). No row: no turn runs.
"""

from __future__ import annotations

from sqlite_utils import Database

NAME = "0005_turn_leases"


def migrate(db: Database) -> None:
    db.table("turn_leases").create(
        {
            "chat_id": str,
            "owner": str,
            "acquired_at": float,
            "heartbeat_at": float,
            "expires_at": float,
        },
        pk="chat_id",
        not_null={"owner", "acquired_at", "heartbeat_at", "expires_at"},
        foreign_keys=[("chat_id", "chats", "id")],
    )
