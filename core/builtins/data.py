"""Tables the built-in tools keep their state in (same database, own migration set)."""

from __future__ import annotations

from sqlite_utils import Database, Migrations

BUILTIN_SCHEMA = Migrations("deferchat-builtins")


@BUILTIN_SCHEMA(name="0001_tables")
def _m0001(db: Database) -> None:
    db["schedules"].create({"id": str, "title": str, "time": str, "days": str, "timezone": str,
                            "status": str, "paused_until": str, "cancel_reason": str,
                            "created_at": float, "updated_at": float}, pk="id")
