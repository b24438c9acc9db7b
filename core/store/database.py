"""Opening the database file: fail safe, and safe when many processes start together.

:func:`open_file` checks the path before SQLite sees it (a directory, unreadable, a folder
that cannot be made), connects read-write or, where this process may only read, read-only,
reads the schema (a damaged header or a truncated file fails here), compares the recorded
migrations with the ones this version knows (a newer database is opened for reading only,
with a warning), and migrates. Each fault is a :class:`~core.store.errors.StoreError`: one
line naming the file and what to do.

Many processes may open an empty home at once. Every connection waits for locks
(``busy_timeout``); WAL is set once, when the file is not in WAL yet; the migrations run inside
one ``BEGIN IMMEDIATE`` transaction, and sqlite-utils re-reads which ones are pending inside
it, so exactly one process applies them and the others find them applied.

Integrity: ``PRAGMA quick_check`` costs about 1 ms per MB (40-70 ms on a 50 MB file), too much
for every ``plan`` and ``chats list``. It runs before the first write of a process (and before
migrating), when SQLite reports a damaged file mid-use, and in ``deferchat doctor``; a failed
check stops every write from then on.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

from sqlite_utils import Database

from core.store.errors import ELSEWHERE, StoreCorrupt, StoreError, StoreReadOnly, StoreTooNew, StoreUnusable
from core.store.migrations import OUR_SETS_PREFIX, known_migrations, migration_sets
from core.store.paths import check_path, default_db_path, read_only_why
from core.store.wal import set_wal

log = logging.getLogger("deferchat.store")

BUSY_TIMEOUT_S = 30.0
MIGRATIONS_TABLE = "_sqlite_migrations"

# SQLite's words for a damaged file (sqlite3.DatabaseError, not one of its subclasses).
_DAMAGED = ("malformed", "not a database", "disk i/o error", "database corrupt")


class StoreFile:
    """One open database and what this process may do with it.

    ``refusal`` says why writes are refused (read-only, newer), None when they are allowed.
    :meth:`require_writable` runs before every write: it raises the refusal, or the damage
    found earlier, and checks the file's integrity once per process before the first write.
    """

    def __init__(self, db: Database, path: Path | None, *, refusal: StoreError | None = None):
        self.db = db
        self.path = path
        self.refusal = refusal
        self.broken: StoreCorrupt | None = None
        self._checked = path is None  # an in-memory database cannot be damaged on disk
        self._warned = False

    @property
    def writable(self) -> bool:
        return self.refusal is None and self.broken is None

    @property
    def too_new(self) -> bool:
        return isinstance(self.refusal, StoreTooNew)

    def warn(self) -> None:
        """Say once, at the first read, that a newer database is only read (a refused write says it
        instead, so a command says one or the other)."""
        if not self._warned and isinstance(self.refusal, StoreTooNew):
            self._warned = True
            log.warning(self.refusal.warning())

    def require_writable(self) -> None:
        if self.broken is not None:
            raise self.broken
        if self.refusal is not None:
            self._warned = True
            raise self.refusal
        if not self._checked:
            self.check_integrity()
            self._checked = True

    def may_keep(self) -> bool:
        """Whether a cache (the token cache, a message's kept count) may be written: never on a file
        this process may only read, where it stays in memory and nothing is said; a damaged file
        raises, so nothing is written to it."""
        if self.refusal is not None:
            return False
        self.require_writable()
        return True

    def check_integrity(self) -> None:
        """``PRAGMA quick_check``; a damaged file is marked broken and raises :class:`StoreCorrupt`."""
        problem = quick_check(self.db)
        if problem is not None:
            self.broken = StoreCorrupt(self.path, problem)
            raise self.broken

    def fault(self, exc: sqlite3.Error) -> Exception:
        """The one-line error for an SQLite error met while reading or writing; anything that is
        not a fault of the file (a constraint, a bug) is returned as it was."""
        text = str(exc).lower()
        if (type(exc) is sqlite3.DatabaseError and any(w in text for w in _DAMAGED)) or "disk i/o error" in text:
            self.broken = StoreCorrupt(self.path, str(exc))
            return self.broken
        if "readonly database" in text or "read-only" in text:
            return StoreReadOnly(self.path, "SQLite refused to write it")
        if "database is locked" in text or "database table is locked" in text:
            return StoreError(
                self.path,
                f"{self.path} stayed locked by another process for {BUSY_TIMEOUT_S:.0f} s; "
                "close the other deferchat, or try again",
            )
        if "database or disk is full" in text:
            return StoreError(self.path, f"{self.path}: the disk is full; free some space and try again")
        if "unable to open database file" in text:
            return StoreUnusable(
                self.path, f"cannot open {self.path} any more (was it moved or deleted?); start deferchat again"
            )
        if self.too_new and isinstance(exc, sqlite3.OperationalError):  # e.g. a column a newer version dropped
            return StoreError(
                self.path,
                f"{self.path} was written by a newer deferchat and this version cannot "
                f"read it ({exc}); upgrade deferchat",
            )
        return exc


def quick_check(db: Database) -> str | None:
    """None when ``PRAGMA quick_check`` finds the file sound, else a short account of what it found."""
    try:
        rows = db.execute("PRAGMA quick_check(100)").fetchall()
    except sqlite3.DatabaseError as exc:
        return str(exc)
    return check_summary([str(r[0]) for r in rows])


def check_summary(found: list[str]) -> str | None:
    """The rows of an integrity check as one short line: None for ``ok``, else the first two
    findings and how many more there were."""
    lines = [x.strip() for row in found for x in row.splitlines() if x.strip()]
    lines = [x for x in lines if not x.startswith("*** in database")]
    if lines == ["ok"]:
        return None
    more = f" and {len(lines) - 2} more" if len(lines) > 2 else ""
    return "integrity check: " + "; ".join(lines[:2]) + more


def open_db(path: str | Path | None = None) -> Database:
    """Open (creating if needed) and migrate the database at ``path``; the faults of
    :func:`open_file` raise."""
    return open_file(path).db


def open_file(path: str | Path | None = None) -> StoreFile:
    """The database at ``path`` (default: :func:`~core.store.paths.default_db_path`), made and
    migrated when this process may write it, read-only when it may only read it."""
    if path == ":memory:":
        db = Database(memory=True)
        db.execute("PRAGMA foreign_keys = ON")
        _migrate(db)
        return StoreFile(db, None)
    p = Path(path) if path else default_db_path()
    writable = check_path(p)
    db = _probe(_connect(p, writable), p)
    unknown = _unknown_migrations(db, p)
    if unknown:
        refusal = StoreTooNew(p, unknown)
        if writable:  # read it read-only, so nothing can write it by mistake
            db.close()
            db = _probe(_connect(p, False), p)
        return StoreFile(db, p, refusal=refusal)
    if not writable:
        return StoreFile(db, p, refusal=StoreReadOnly(p, read_only_why(p) or "SQLite refused to write it"))
    store = StoreFile(db, p)
    try:
        _set_wal(db)
        db.execute("PRAGMA synchronous = NORMAL")
        if _pending(db):
            store.require_writable()  # never migrate a damaged file
            _migrate(db)
    except sqlite3.Error as exc:
        raise store.fault(exc) from None
    return store


# --- before SQLite --------------------------------------------------------------------------------


# --- SQLite ---------------------------------------------------------------------------------------


def read_only_target(p: Path) -> str:
    """The URI a read-only connection opens ``p`` by. Without a writable folder SQLite cannot
    make the WAL index (-shm); an immutable open reads the main file alone, which is right only
    when no write-ahead log holds commits the main file lacks."""
    wal = Path(f"{p}-wal")
    can_index = os.access(p.parent, os.W_OK) or Path(f"{p}-shm").exists()
    if can_index or (wal.exists() and wal.stat().st_size > 0):
        return f"file:{quote(str(p))}?mode=ro"
    return f"file:{quote(str(p))}?immutable=1"


def not_ours(p: Path, tables: set[str]) -> StoreUnusable | None:
    """The refusal of a SQLite file that is not deferchat's: it has tables but no record of
    deferchat's migrations (another program's database at the path)."""
    if tables and MIGRATIONS_TABLE not in tables:
        return StoreUnusable(
            p,
            f"{p} is not a deferchat database (it has tables but no record of deferchat's "
            f"migrations): move it out of the way, {ELSEWHERE}",
        )
    return None


def _connect(p: Path, writable: bool) -> Database:
    """A connection in autocommit mode that waits for locks rather than failing on them."""
    if writable:
        target, uri = str(p), False
    else:
        target, uri = read_only_target(p), True
    try:
        conn = sqlite3.connect(target, uri=uri, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as exc:
        raise StoreUnusable(p, f"cannot open {p} ({exc}): check its permissions, {ELSEWHERE}") from None
    conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
    db = Database(conn)
    db.execute("PRAGMA foreign_keys = ON")
    return db


def _probe(db: Database, p: Path) -> Database:
    """Read the schema: a file that is not a database, or whose first pages are damaged, fails here."""
    try:
        tables = {r[0] for r in db.execute("select name from sqlite_master where type = 'table'").fetchall()}
    except sqlite3.DatabaseError as exc:
        db.close()
        text = str(exc).lower()
        if isinstance(exc, sqlite3.OperationalError) and not any(w in text for w in _DAMAGED):
            raise StoreUnusable(
                p, f"cannot read {p} ({exc}): check its permissions and its folder's, {ELSEWHERE}"
            ) from None
        raise StoreCorrupt(p, str(exc)) from None
    foreign = not_ours(p, tables)
    if foreign is not None:
        db.close()
        raise foreign
    return db


def _applied(db: Database) -> list[tuple[str, str]]:
    if not db.table(MIGRATIONS_TABLE).exists():
        return []
    return [(r[0], r[1]) for r in db.execute(f"select migration_set, name from {MIGRATIONS_TABLE} order by rowid")]


def _unknown_migrations(db: Database, p: Path) -> list[str]:
    """``set/name`` of every recorded migration of ours that this version does not know."""
    try:
        applied = _applied(db)
    except sqlite3.DatabaseError as exc:
        db.close()
        raise StoreCorrupt(p, str(exc)) from None
    known = known_migrations()
    return [f"{s}/{n}" for s, n in applied if s.startswith(OUR_SETS_PREFIX) and (s, n) not in known]


def _pending(db: Database) -> bool:
    return any(s.pending(db) for s in migration_sets())


def _set_wal(db: Database) -> None:
    """WAL once: it is a property of the file, so a file already in WAL is left alone; a switch
    another process holds up is tried again (:func:`core.store.wal.set_wal`)."""
    # WAL + NORMAL: a commit survives a killed process (kill -9); only an OS crash or power
    # loss can drop the last commits, never corrupt the file. FULL would fsync every
    # invocation-row update, which costs milliseconds per tool call.
    set_wal(db, BUSY_TIMEOUT_S)


def _migrate(db: Database) -> None:
    """Apply the pending migrations of every set in one ``BEGIN IMMEDIATE`` transaction: the
    first process takes the write lock, the others wait for it and then find nothing pending
    (sqlite-utils reads what is applied inside the transaction; each migration nests as a
    savepoint)."""
    with immediate(db):
        for migrations in migration_sets():
            migrations.apply(db)


@contextlib.contextmanager
def immediate(db: Database) -> Iterator[Database]:
    """A write transaction that takes the write lock at its start (waiting ``busy_timeout`` for
    it), so it never fails half-way because another process wrote since it began reading."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        if db.conn.in_transaction:
            db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
