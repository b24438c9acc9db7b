"""Grants a person can see and take back: who gave each "Allow for this chat" grant (the app or
the terminal's prompt), the approval it answered, and when and by whom it was revoked. A revoked
grant keeps its row (``revoked_at`` set), so the chat still shows it as revoked after a
restart; granting the tool again makes the row active again."""

from __future__ import annotations

from sqlite_utils import Database

NAME = "0008_grant_history"


def migrate(db: Database) -> None:
    grants = db.table("grants")
    grants.add_column("granted_by", str)
    grants.add_column("approval_id", str)
    grants.add_column("revoked_at", float)
    grants.add_column("revoked_by", str)
