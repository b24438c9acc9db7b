"""``deferchat doctor [--json]``: is the store healthy? The files, the integrity check
(``PRAGMA integrity_check``), the schema version (applied, pending and unknown migrations),
WAL mode and sizes, and the turns running now (their leases). It never writes. Exit 0
healthy, 1 not (each problem is one line)."""

from __future__ import annotations

import argparse

from core.cli.exits import EXIT_FAILED, EXIT_OK


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    value = float(n)
    for unit in ("KB", "MB", "GB"):
        value /= 1024
        if value < 1024 or unit == "GB":
            break
    return f"{value:.1f} {unit}"


def run(args: argparse.Namespace) -> int:
    from core.cli import output
    from core.display import safe
    from core.store.health import inspect_store

    report = inspect_store()
    if args.json:
        output.data(report.model_dump_json())
        return EXIT_OK if report.healthy else EXIT_FAILED
    db, schema = report.database, report.schema_version
    state = "writable" if report.writable else "read-only"
    if db.exists:
        where = (
            f"{safe(db.path)} ({_size(db.size_bytes)}; journal {report.journal_mode or '?'}; "
            f"WAL {_size(report.wal.size_bytes) if report.wal.exists else 'none'}; {state})"
        )
    else:
        where = f"{safe(db.path)} (not made yet)"
    lines = [("database", where), ("data dir", safe(report.data_dir)), ("integrity", safe(report.integrity))]
    if db.exists:
        lines.append(
            (
                "schema",
                f"{schema.database_version or 'none'} (this version: {schema.this_version}); "
                f"{len(schema.applied)} migrations applied",
            )
        )
        lines.append(("pending", ", ".join(schema.pending) or "none"))
        lines.append(("unknown", safe(", ".join(schema.unknown)) or "none"))
    if report.chats is not None:
        lines.append(("chats", str(report.chats)))
    for lease in report.turn_leases:
        state = f"expires in {lease.expires_in_s:.0f} s" if lease.expires_in_s > 0 else "expired"
        lines.append(("turn", f"chat {safe(lease.chat_id)} held by {safe(lease.holder)} ({state})"))
    for label, value in lines:
        output.out(f"{label:<10} {value}")
    for problem in report.problems:
        output.err(f"deferchat: {safe(problem)}")
    output.out("healthy" if report.healthy else "NOT healthy")
    return EXIT_OK if report.healthy else EXIT_FAILED
