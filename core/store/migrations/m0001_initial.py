"""The first schema: chats, plans, messages, turns, invocations, events, approvals."""

from __future__ import annotations

from sqlite_utils import Database

NAME = "0001_initial"


def migrate(db: Database) -> None:
    db.table("chats").create(
        {
            "id": str,
            "title": str,
            "created_at": float,
            "updated_at": float,
            "agent_name": str,
            "agent_version": str,
            "roster": str,
            "plan_id": str,
            "builder": str,
            "strategy": str,
            "policy": str,
            "provider": str,
            "model": str,
            "base_url": str,
            "status": str,
        },
        pk="id",
        not_null={"id", "created_at"},
    )
    db.table("plans").create({"id": str, "builder": str, "json": str, "created_at": float}, pk="id")
    db.table("messages").create(
        {
            "id": str,
            "chat_id": str,
            "parent_id": str,
            "turn_id": str,
            "role": str,
            "content": str,
            "created_at": float,
        },
        pk="id",
        foreign_keys=[("chat_id", "chats", "id")],
    )
    db.table("messages").create_index(["chat_id", "created_at"])
    db.table("turns").create(
        {
            "id": str,
            "chat_id": str,
            "user_message_id": str,
            "status": str,
            "steps": int,
            "started_at": float,
            "ended_at": float,
            "error": str,
        },
        pk="id",
        foreign_keys=[("chat_id", "chats", "id")],
    )
    db.table("turns").create_index(["chat_id", "status"])
    db.table("invocations").create(
        {
            "id": str,
            "chat_id": str,
            "turn_id": str,
            "call_id": str,
            "name": str,
            "via": str,
            "arguments": str,
            "side_effect": str,
            "pin": str,
            "status": str,
            "result": str,
            "model_result": str,
            "is_error": int,
            "error_code": str,
            "error_message": str,
            "created_at": float,
            "started_at": float,
            "finished_at": float,
        },
        pk="id",
        foreign_keys=[("chat_id", "chats", "id")],
    )
    db.table("invocations").create_index(["chat_id", "call_id"], unique=True)
    db.table("events").create(
        {
            "id": int,
            "chat_id": str,
            "turn_id": str,
            "type": str,
            "json": str,
            "created_at": float,
        },
        pk="id",
        foreign_keys=[("chat_id", "chats", "id")],
    )
    db.table("events").create_index(["chat_id", "id"])
    db.table("approvals").create(
        {
            "id": str,
            "chat_id": str,
            "turn_id": str,
            "invocation_id": str,
            "call_id": str,
            "tool": str,
            "via": str,
            "side_effect": str,
            "arguments": str,
            "reason": str,
            "status": str,
            "scope": str,
            "created_at": float,
            "decided_at": float,
        },
        pk="id",
        foreign_keys=[("chat_id", "chats", "id")],
    )
    db.table("approvals").create_index(["chat_id", "status"])
