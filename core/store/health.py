"""The store's health, for ``deferchat doctor``: the files, the integrity check, the schema.

Inspecting never writes: the file is opened read-only, nothing is migrated or created, and a
fault of the file is reported, not raised. Its verdicts are the checks every other command
applies, asked of the same functions: whether the file can be used at all
(:func:`core.store.paths.path_problem`: a directory, unreadable, a hard link), whether it may
be written (:func:`core.store.paths.read_only_why`, the write-ahead log files included), whether
it is deferchat's (:func:`core.store.database.not_ours`), and how a read-only open reaches it.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from pydantic import BaseModel, Field

from core.store.database import check_summary, not_ours, read_only_target
from core.store.errors import ELSEWHERE
from core.store.migrations import OUR_SETS_PREFIX, SCHEMA_VERSION, known_migrations, migration_sets
from core.store.paths import data_dir, default_db_path, path_problem, read_only_why


class FileReport(BaseModel):
    path: str
    exists: bool
    size_bytes: int = 0


class SchemaReport(BaseModel):
    this_version: str  # the newest store migration this version knows
    database_version: str | None = None  # the newest store migration the database records
    applied: list[str] = Field(default_factory=list)  # set/name, in the order applied
    pending: list[str] = Field(default_factory=list)  # known, not applied yet: the next open applies them
    unknown: list[str] = Field(default_factory=list)  # applied by a newer deferchat


class LeaseReport(BaseModel):
    chat_id: str
    holder: str  # pid N on HOST
    expires_in_s: float  # negative: expired, free for the next turn


class HealthReport(BaseModel):
    healthy: bool
    problems: list[str] = Field(default_factory=list)  # one line each: what is wrong and what to do
    data_dir: str
    database: FileReport
    wal: FileReport
    shm: FileReport
    journal_mode: str | None = None
    writable: bool = False
    integrity: str = "not checked"  # "ok", or what PRAGMA integrity_check found
    schema_version: SchemaReport
    chats: int | None = None
    turn_leases: list[LeaseReport] = Field(default_factory=list)  # turns running now (or left by a dead process)


def _file(path: Path) -> FileReport:
    try:
        return FileReport(path=str(path), exists=path.exists(), size_bytes=path.stat().st_size if path.is_file() else 0)
    except OSError:
        return FileReport(path=str(path), exists=path.exists())


def inspect_store(path: str | Path | None = None) -> HealthReport:
    """The health of the database at ``path`` (default: the user's)."""
    p = Path(path) if path else default_db_path()
    report = HealthReport(
        healthy=False,
        data_dir=str(data_dir()),
        database=_file(p),
        wal=_file(Path(f"{p}-wal")),
        shm=_file(Path(f"{p}-shm")),
        schema_version=SchemaReport(this_version=SCHEMA_VERSION),
    )
    problems = report.problems
    unusable = path_problem(p)
    if unusable is not None:
        problems.append(str(unusable))
        return report
    if not p.exists():
        folder = p.parent
        while not folder.exists() and folder != folder.parent:
            folder = folder.parent
        report.writable = os.access(folder, os.W_OK | os.X_OK)
        if not report.writable:
            problems.append(f"cannot create {p}: {folder} is read-only; make it writable, {ELSEWHERE}")
        report.integrity = "no database yet (it is made at first use)"
        report.schema_version.pending = [f"{s.name}/{m.name}" for s in migration_sets() for m in s._migrations]
        report.healthy = not problems
        return report
    why = read_only_why(p)
    report.writable = why is None
    if why is not None:
        problems.append(
            f"{p} is read-only ({why}): chats can be read, not written; make it, its folder and its "
            "-wal and -shm files writable to chat"
        )
    try:
        conn = sqlite3.connect(read_only_target(p), uri=True, timeout=5, isolation_level=None)
    except sqlite3.Error as exc:
        problems.append(f"cannot open {p} ({exc})")
        return report
    try:
        registered = [(s.name, m.name) for s in migration_sets() for m in s._migrations]
        _inspect(conn, report, registered, known_migrations(), OUR_SETS_PREFIX)
    finally:
        conn.close()
    if report.integrity != "ok":
        problems.append(
            f"{p} is damaged ({report.integrity}); deferchat writes nothing more to it. Restore a backup "
            f"or move it out of the way (a new one is made); `sqlite3 {p} .recover` may save its rows"
        )
    if report.schema_version.unknown:
        unknown = ", ".join(report.schema_version.unknown)
        problems.append(
            f"{p} was written by a newer deferchat ({unknown}); this version only reads it. Upgrade deferchat to chat"
        )
    report.healthy = not problems
    return report


def _inspect(
    conn: sqlite3.Connection,
    report: HealthReport,
    registered: list[tuple[str, str]],
    known: set[tuple[str, str]],
    ours: str,
) -> None:
    try:
        report.journal_mode = str(conn.execute("PRAGMA journal_mode").fetchone()[0])
        rows = conn.execute("PRAGMA integrity_check(100)").fetchall()
        report.integrity = check_summary([str(r[0]) for r in rows]) or "ok"
    except sqlite3.DatabaseError as exc:
        report.integrity = str(exc)
        return
    try:
        tables = {r[0] for r in conn.execute("select name from sqlite_master where type = 'table'").fetchall()}
        foreign = not_ours(Path(report.database.path), tables)
        if foreign is not None:
            report.problems.append(str(foreign))
            return
        applied = (
            conn.execute("select migration_set, name from _sqlite_migrations order by rowid").fetchall()
            if "_sqlite_migrations" in tables
            else []
        )
        report.chats = conn.execute("select count(*) from chats where deleted = 0").fetchone()[0] if applied else None
    except sqlite3.DatabaseError as exc:
        report.problems.append(f"cannot read the schema ({exc})")
        return
    names = [(str(s), str(n)) for s, n in applied]
    schema = report.schema_version
    schema.applied = [f"{s}/{n}" for s, n in names]
    schema.unknown = [f"{s}/{n}" for s, n in names if s.startswith(ours) and (s, n) not in known]
    done = set(names)
    schema.pending = [f"{s}/{n}" for s, n in registered if (s, n) not in done]
    recorded = [n for s, n in names if s == "deferchat"]
    schema.database_version = recorded[-1] if recorded else None
    _leases(conn, report)


def _leases(conn: sqlite3.Connection, report: HealthReport) -> None:
    from core.store.lease import describe, remaining
    from core.store.rows import TurnLeaseRow

    try:
        if not conn.execute("select 1 from sqlite_master where type = 'table' and name = 'turn_leases'").fetchone():
            return
        cur = conn.execute("select * from turn_leases order by chat_id")
        names = [d[0] for d in cur.description]
        rows = [TurnLeaseRow.from_values(names, r) for r in cur.fetchall()]
    except sqlite3.DatabaseError:
        return
    report.turn_leases = [
        LeaseReport(chat_id=r.chat_id, holder=describe(r.owner), expires_in_s=round(remaining(r), 1)) for r in rows
    ]
