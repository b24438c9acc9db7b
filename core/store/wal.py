"""Write-ahead logging, set once on a file that many processes may open at the same moment.

``PRAGMA journal_mode = WAL`` needs the file to itself for an instant, and SQLite does not call
the busy handler for that lock: a second process switching a new file at the same time fails at
once with "database is locked", whatever its ``busy_timeout``. :func:`set_wal` reads the mode
first (a file already in WAL is left alone; that read does wait for locks) and, while another
process holds the file, tries the switch again with a short backoff, until the connection's own
bound. Used by the main store (:mod:`core.store.database`) and the demo's file
(:mod:`core.demo.db`).
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any, Protocol


class Executes(Protocol):
    """A connection: :class:`sqlite3.Connection`, or sqlite-utils' ``Database``."""

    def execute(self, sql: str, /) -> Any: ...


def _busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def set_wal(conn: Executes, timeout: float) -> None:
    """Put the file in WAL unless it is, waiting up to ``timeout`` seconds for other processes."""
    deadline = time.monotonic() + timeout
    pause = 0.002
    while True:
        try:
            if str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal":
                return
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if not _busy(exc) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.05)
