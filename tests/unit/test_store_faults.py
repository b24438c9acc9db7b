"""A store that fails safe (issue 11, item 3): every fault of the database file is one line that
names the file and what to do, exit 1, never a traceback, for every command; a read-only or
newer database is still read; nothing is written to a damaged, read-only or newer one.

The faults are real files: a directory in the database's place, a truncated file, an
overwritten header, corrupted pages, permissions (as root, the commands run without the
capabilities that bypass them), a migration row from a newer version."""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import random
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from core.cli.entry import main
from core.store import Store
from core.store.database import StoreFile, open_file
from core.store.errors import StoreCorrupt, StoreReadOnly, StoreTooNew, StoreUnusable
from tests.helpers import subprocess_env

ASK = ["ask", "hello", "--provider", "demo", "--roster"]


@pytest.fixture
def tiny(tmp_path: Path) -> str:
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps({"agent": {"name": "tiny", "version": "1"}}))
    return str(path)


@pytest.fixture
def db(home: Path) -> Path:
    """A home with one chat in its database, closed as a finished process leaves it (its
    write-ahead log checkpointed into the file)."""
    store = Store()
    chat = store.create_chat(title="hello", provider="demo", model="demo-1", strategy="wrapper")
    store.add_message(chat, "user", [{"type": "text", "text": "hello"}], turn_id=None, parent_id=None)
    store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.db.close()
    return home / "deferchat.db"


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def one_line(err: str, *words: str) -> str:
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("deferchat: ") and "Traceback" not in err
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# --- the file is not usable at all ----------------------------------------------------------------


def test_a_directory_in_the_databases_place_is_one_line_for_every_command(
    home: Path, tiny: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (home / "deferchat.db").mkdir()
    for argv in (["chats", "list"], [*ASK, tiny], ["plan", "--roster", tiny, "--json"]):
        code, out, err = run(capsys, *argv)
        assert code == 1 and out == ""
        one_line(err, str(home / "deferchat.db"), "is a directory", "DEFERCHAT_HOME")
    code, out, err = run(capsys, "doctor")
    assert code == 1 and "is a directory" in err


@pytest.mark.parametrize("damage", ["truncated", "header", "not_sqlite"])
def test_a_damaged_file_is_one_line_for_every_command_and_is_left_as_it_was(
    damage: str, db: Path, tiny: str, capsys: pytest.CaptureFixture[str]
) -> None:
    size = db.stat().st_size
    with db.open("r+b") as f:
        if damage == "truncated":
            f.truncate(size // 2)
        elif damage == "header":
            f.write(b"\x00" * 16)  # "SQLite format 3\0" gone
        else:
            f.write(b"these are notes, not a database\n" * 200)
    before = digest(db)
    for argv in (["chats", "list"], ["chats", "list", "--json"], [*ASK, tiny], ["plan", "--roster", tiny]):
        code, out, err = run(capsys, *argv)
        assert code == 1 and out == "", argv
        one_line(err, str(db), "is damaged", "deferchat doctor")
    assert digest(db) == before
    code, out, err = run(capsys, "doctor", "--json")
    report = json.loads(out)
    assert code == 1 and not report["healthy"] and report["integrity"] != "ok"


def corrupt_pages(path: Path) -> None:
    """Scribble over pages in the middle of the file: its header and schema stay readable."""
    size, noise = path.stat().st_size, random.Random(7)
    with path.open("r+b") as f:
        for offset in range(4096 * 12, size - 4096, 4096 * 5):
            f.seek(offset + 64)
            f.write(noise.randbytes(512))


def test_corrupted_pages_stop_every_write_and_ask_exits_non_zero(
    home: Path, tiny: str, capsys: pytest.CaptureFixture[str]
) -> None:
    store = Store()
    for i in range(60):  # enough rows that the chats and their messages span many pages
        chat = store.create_chat(title=f"chat {i}", provider="demo", model="m", strategy="wrapper")
        for _ in range(4):
            store.add_message(chat, "user", [{"type": "text", "text": "x" * 400}], turn_id=None, parent_id=None)
    store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.db.close()
    db = home / "deferchat.db"
    corrupt_pages(db)
    before = digest(db)
    code, out, err = run(capsys, *ASK, tiny)
    assert code == 1
    one_line(err, str(db), "is damaged", "deferchat doctor")
    assert digest(db) == before  # not one row was written into it
    code, out, err = run(capsys, "doctor")
    assert code == 1 and "NOT healthy" in out and "is damaged" in err


def test_sqlite_reporting_damage_mid_use_marks_the_store_broken(tmp_path: Path) -> None:
    store = Store(tmp_path / "db.sqlite")
    chat = store.create_chat(title="t", provider="demo", model="m", strategy="wrapper")
    err = store.file.fault(sqlite3.DatabaseError("database disk image is malformed"))
    assert isinstance(err, StoreCorrupt) and not store.writable
    with pytest.raises(StoreCorrupt, match="is damaged"):
        store.add_message(chat, "user", [], turn_id=None, parent_id=None)
    assert [m.id for m in store.messages(chat)] == []  # reads still go on where SQLite can


# --- permissions ------------------------------------------------------------------------------------


def _drop_file_capabilities() -> None:
    """As root, drop CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH before exec: permissions bind."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def deferchat(home: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """The real program, as a user whom file permissions bind."""
    preexec: Callable[[], None] | None = _drop_file_capabilities if os.geteuid() == 0 else None
    return subprocess.run(
        [sys.executable, "-m", "tui.main", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env=subprocess_env(home),
        preexec_fn=preexec,
    )


@pytest.fixture
def permissions_bind(home: Path) -> None:
    probe = home / "probe"
    probe.write_text("x")
    probe.chmod(0o400)
    r = subprocess.run(
        [sys.executable, "-c", f"open({str(probe)!r}, 'a')"],
        capture_output=True,
        preexec_fn=_drop_file_capabilities if os.geteuid() == 0 else None,
    )
    probe.chmod(0o600)
    probe.unlink()
    if r.returncode == 0:
        pytest.skip("file permissions do not bind here (no way to drop the capabilities that bypass them)")


@pytest.mark.parametrize("what", ["home", "file"])
def test_a_read_only_database_is_read_and_refuses_to_write(
    what: str, db: Path, tiny: str, permissions_bind: None
) -> None:
    home = db.parent
    before = digest(db)
    target = home if what == "home" else db
    mode = target.stat().st_mode
    target.chmod(0o555 if what == "home" else 0o444)
    try:
        listed = deferchat(home, "chats", "list", "--json")
        asked = deferchat(home, *ASK, tiny)
        doctor = deferchat(home, "doctor", "--json")
    finally:
        target.chmod(mode)
    assert listed.returncode == 0, listed.stderr
    assert [json.loads(x)["title"] for x in listed.stdout.splitlines()] == ["hello"]
    assert asked.returncode == 1 and asked.stdout == ""
    one_line(asked.stderr, str(db), "is read-only", "make it writable")
    assert digest(db) == before
    report = json.loads(doctor.stdout)
    assert doctor.returncode == 1 and not report["writable"] and report["integrity"] == "ok"


def test_an_unreadable_database_and_an_uncreatable_home_are_one_line(
    db: Path, tiny: str, tmp_path: Path, permissions_bind: None
) -> None:
    db.chmod(0o000)
    try:
        r = deferchat(db.parent, "chats", "list")
    finally:
        db.chmod(0o600)
    assert r.returncode == 1
    one_line(r.stderr, str(db), "cannot read", "chmod u+rw")

    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    r = deferchat(locked / "home", *ASK, tiny)
    locked.chmod(0o755)
    assert r.returncode == 1
    one_line(r.stderr, str(locked / "home"), "cannot create")


# --- a database from a newer version ------------------------------------------------------------------


def record_newer(db: Path, *, not_null_column: bool = False) -> None:
    conn = sqlite3.connect(db)
    conn.execute(
        "insert into _sqlite_migrations (migration_set, name, applied_at) values ('deferchat', "
        "'0999_from_the_future', '2030-01-01 00:00:00+00:00')"
    )
    if not_null_column:  # what the newer version's migration did: old writers would fail mid-turn
        conn.execute("alter table messages add column weight_from_the_future integer not null default 0")
        conn.execute("create table future (x text not null)")
    conn.commit()
    conn.close()


def test_a_newer_database_is_read_with_a_warning_and_refused_for_writing(db: Path, tiny: str) -> None:
    record_newer(db, not_null_column=True)
    before = digest(db)
    home = db.parent
    listed = deferchat(home, "chats", "list")
    assert listed.returncode == 0 and "hello" in listed.stdout
    one_line(listed.stderr, "warning", str(db), "newer deferchat", "0999_from_the_future")
    chat_id = listed.stdout.split()[0]
    for argv in (
        [*ASK, tiny],
        ["ask", "again", "--chat", chat_id],
        ["resume", chat_id],
        ["chats", "rename", chat_id, "--title", "x"],
        ["chats", "delete", chat_id],
    ):
        r = deferchat(home, *argv)
        assert r.returncode == 1 and r.stdout == "", argv
        one_line(r.stderr, str(db), "newer deferchat", "deferchat/0999_from_the_future", "Upgrade")
    assert digest(db) == before  # no chat row, no message, no migration of ours
    shown = deferchat(home, "chats", "show", chat_id)
    assert shown.returncode == 0 and "## You" in shown.stdout
    doctor = deferchat(home, "doctor", "--json")
    report = json.loads(doctor.stdout)
    assert doctor.returncode == 1 and report["schema_version"]["unknown"] == ["deferchat/0999_from_the_future"]


def test_a_retired_migration_is_known_not_newer(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    conn = sqlite3.connect(db)  # databases that ran the old demo seed keep its record (core.builtins.data)
    conn.execute(
        "insert into _sqlite_migrations (migration_set, name, applied_at) values "
        "('deferchat-builtins', '0002_demo_seed', '2026-01-05 09:00:00+00:00')"
    )
    conn.commit()
    conn.close()
    assert open_file(db).writable
    code, out, err = run(capsys, "doctor", "--json")
    assert code == 0 and json.loads(out)["healthy"], err


# --- the store's own checks ---------------------------------------------------------------------------


def test_each_refusal_is_raised_before_any_write(tmp_path: Path) -> None:
    store = Store(tmp_path / "db.sqlite")
    store.file.refusal = StoreTooNew(store.path, ["deferchat/0999_x"])
    with pytest.raises(StoreTooNew):
        store.create_chat(title="t")
    store.file.refusal = StoreReadOnly(store.path, "the file is read-only")
    with pytest.raises(StoreReadOnly):
        store.update_chat("chat_x", title="t")
    assert store.chats() == []
    store.token_cache["k"] = 3
    store.token_cache.flush()  # a cache: kept in memory, nothing written, nothing raised
    assert store.db.execute("select count(*) from token_cache").fetchone()[0] == 0


def test_a_foreign_sqlite_file_is_not_migrated(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("create table chats (x)")
    conn.commit()
    conn.close()
    with pytest.raises(StoreUnusable, match="not a deferchat database"):
        open_file(path)


def test_doctor_on_a_healthy_store(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "doctor", "--json")
    report = json.loads(out)
    assert code == 0 and report["healthy"] and report["problems"] == [] and err == ""
    assert report["integrity"] == "ok" and report["journal_mode"] == "wal" and report["chats"] == 1
    assert report["database"]["path"] == str(db) and report["database"]["size_bytes"] > 0
    schema = report["schema_version"]
    assert schema["database_version"] == schema["this_version"] and schema["pending"] == []
    assert "deferchat/0001_initial" in schema["applied"] and schema["unknown"] == []
    code, out, err = run(capsys, "doctor")
    assert code == 0 and out.rstrip().endswith("healthy") and "integrity  ok" in out


def test_store_file_checks_integrity_once_before_the_first_write(tmp_path: Path) -> None:
    open_file(tmp_path / "db.sqlite").db.close()  # made and migrated (checked before migrating)
    file = open_file(tmp_path / "db.sqlite")
    assert isinstance(file, StoreFile) and file.writable
    calls: list[str] = []
    original = file.check_integrity
    file.check_integrity = lambda: (calls.append("check"), original())[1]  # type: ignore[method-assign]
    store = Store(file)
    chat = store.create_chat(title="t")
    store.update_chat(chat, title="u")
    assert calls == ["check"]
