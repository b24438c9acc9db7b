"""Opening the database: the file, its connection settings, and the migrations."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sqlite_utils import Database

from core.store.migrations import SCHEMA
from core.store.paths import default_db_path


def open_db(path: str | Path | None = None) -> Database:
    """Open (creating if needed) and migrate the database at ``path``."""
    if path == ":memory:":
        db = Database(memory=True)
    else:
        p = Path(path) if path else default_db_path()
        p.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(p), timeout=30, isolation_level=None, check_same_thread=False)
        db = Database(conn)
        db.enable_wal()
        # WAL + NORMAL: a commit survives a killed process (kill -9); only an OS crash or power
        # loss can drop the last commits, never corrupt the file. FULL would fsync every
        # invocation-row update, which costs milliseconds per tool call.
        db.execute("PRAGMA synchronous = NORMAL")
    db.execute("PRAGMA foreign_keys = ON")
    db.execute("PRAGMA busy_timeout = 30000")
    SCHEMA.apply(db)
    from core.builtins.data import BUILTIN_SCHEMA

    BUILTIN_SCHEMA.apply(db)
    return db
