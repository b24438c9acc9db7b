"""The demo's SQLite file (``demo.sqlite``): one connection per process, schema and seed once.

The demo servers keep their mail and calls here, and the built-in tools of a chat on the
demo model keep theirs here too (:mod:`core.demo.dataset`). Several processes may open a new
file at the same moment: each waits for the others' locks, WAL is set once (and a switch
another process holds up is tried again), and the schema and each seed run inside one
``BEGIN IMMEDIATE`` transaction, so exactly one of them seeds and the rest wait and see.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS calls (
    id TEXT PRIMARY KEY, phone_number TEXT NOT NULL, task TEXT NOT NULL, first_sentence TEXT,
    voice TEXT NOT NULL, max_duration_minutes INTEGER NOT NULL, started_at REAL NOT NULL,
    completes_at REAL NOT NULL, final_status TEXT NOT NULL, duration_seconds INTEGER NOT NULL,
    recipient TEXT NOT NULL, summary TEXT NOT NULL, transcript TEXT NOT NULL, variables TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS gmail_labels (
    account TEXT NOT NULL, name TEXT NOT NULL, type TEXT NOT NULL, PRIMARY KEY (account, name));
CREATE TABLE IF NOT EXISTS gmail_threads (
    id TEXT PRIMARY KEY, account TEXT NOT NULL, labels TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS gmail_messages (
    id TEXT PRIMARY KEY, thread_id TEXT NOT NULL, account TEXT NOT NULL, sender TEXT NOT NULL,
    recipients TEXT NOT NULL, cc TEXT NOT NULL, subject TEXT NOT NULL, body TEXT NOT NULL,
    date REAL NOT NULL);
CREATE TABLE IF NOT EXISTS gmail_drafts (
    id TEXT PRIMARY KEY, account TEXT NOT NULL, thread_id TEXT NOT NULL, message_id TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS gmail_messages_thread ON gmail_messages (thread_id);
"""


BUSY_TIMEOUT_S = 15.0


def connect(path: str | Path) -> sqlite3.Connection:
    """Open (creating) the demo database: autocommit mode, waiting rather than failing on locks
    (the busy timeout is set first), WAL set once (:func:`core.store.wal.set_wal`: another demo
    server opening the new file at the same moment is waited for, as the main store does)."""
    from core.store.wal import set_wal

    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(p, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
    set_wal(conn, BUSY_TIMEOUT_S)
    return conn


DATASET_VERSION = 2
"""The version of the demo's data (mail, calls, the built-ins' dataset). Raise it whenever any of
it changes: a demo file seeded with an older version has that part wiped and seeded again the
next time it is opened (``2``: one name per person and business across every table)."""


def seed_once(
    conn: sqlite3.Connection,
    key: str,
    seed: Callable[[sqlite3.Connection, float], None],
    *,
    prepare: Callable[[], None] | None = None,
    reset: Callable[[sqlite3.Connection], None] | None = None,
) -> bool:
    """Create the schema and run ``seed(conn, now)`` unless ``key`` was seeded with this
    :data:`DATASET_VERSION`. True if it ran. Seeded with an older version (or before versions
    were kept), ``reset(conn)`` first removes that part of the demo's rows.

    ``prepare()`` runs first, every time, in the same transaction (the built-in tools' own
    migrations, for :mod:`core.demo.dataset`)."""
    from core.demo import demo_time

    mark = f"seeded:{key}"
    conn.execute("BEGIN IMMEDIATE")
    try:
        for statement in filter(str.strip, SCHEMA.split(";")):  # executescript would COMMIT
            conn.execute(statement)
        if prepare is not None:
            prepare()
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (mark,)).fetchone()
        current = row is not None and str(row[0]).startswith(f"v{DATASET_VERSION} ")
        if not current:
            if row is not None and reset is not None:
                reset(conn)
            now = demo_time()
            seed(conn, now)
            conn.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (mark, f"v{DATASET_VERSION} {iso(now)}")
            )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return not current


def iso(ts: float) -> str:
    """A timestamp as ISO 8601 UTC with a Z, to the second."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str) -> float:
    """ISO 8601 (``2026-11-30``, ``2026-11-30T09:00:00Z``, with an offset) or ``YYYY/MM/DD`` to a timestamp."""
    value = text.strip().replace("/", "-")
    dt = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def loads(text: str) -> Any:
    return json.loads(text)
