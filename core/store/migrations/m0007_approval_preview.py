"""What an approval showed the person (issue 19 item 2, issue 23 item 3): the action's preview,
built by the pipeline from the canonical values the tool will run with, stored as JSON with the
approval so that a parked approval answered later, in this process or another, shows the same.
NULL for approvals made before it existed (they show their arguments as they are)."""

from __future__ import annotations

from sqlite_utils import Database

NAME = "0007_approval_preview"


def migrate(db: Database) -> None:
    db.table("approvals").add_column("preview", str)
