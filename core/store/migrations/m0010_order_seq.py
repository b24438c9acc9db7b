"""Order by a sequence that cannot go back, not by the wall clock.

A chat's messages, turns, invocations and approvals were read in ``created_at`` (``started_at``)
order: when the clock went back between two turns (an NTP step, a suspended laptop, a VM
restored), the next request carried the history out of order. Each of these tables gets a
``seq``, the row's place in its chat (the next one is the chat's largest plus one, taken in the
insert's own statement: :func:`core.store.store._insert`), and every ordered read uses it. Rows
from before are numbered in the order they were read until now (time, then rowid). Events are
ordered by their integer id already.

``turn_leases`` gets ``boot_id`` and ``expires_mono``: a lease held by a process of this boot
of this machine expires on the monotonic clock, which a change of the wall clock does not move
(:mod:`core.store.lease`).
"""

from __future__ import annotations

from sqlite_utils import Database

NAME = "0010_order_seq"

ORDERED = {
    "messages": "created_at, rowid",
    "turns": "started_at, rowid",
    "invocations": "created_at, rowid",
    "approvals": "created_at, rowid",
}


def migrate(db: Database) -> None:
    for table, order in ORDERED.items():
        db.table(table).add_column("seq", int)
        rows = db.execute(f"select rowid, chat_id from [{table}] order by chat_id, {order}").fetchall()
        numbered: list[tuple[int, int]] = []
        place: dict[str, int] = {}
        for rowid, chat_id in rows:
            place[chat_id] = place.get(chat_id, 0) + 1
            numbered.append((place[chat_id], rowid))
        db.conn.executemany(f"update [{table}] set seq = ? where rowid = ?", numbered)
        db.table(table).create_index(["chat_id", "seq"], unique=True)
    db.table("turn_leases").add_column("boot_id", str)
    db.table("turn_leases").add_column("expires_mono", float)
