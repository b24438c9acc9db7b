"""The store under odd files (issue 23, item 8).

``deferchat doctor`` said healthy and writable when the write-ahead log files were read-only,
and healthy for another program's SQLite file that every other command refused: its verdicts
now come from the very checks the other commands apply. Two homes whose databases were one file
under two names (a hard link) each kept a write-ahead log of their own, lost sight of each
other's writes and could damage the file: a hard link is now refused by every command with one
line, as is anything at the database's path that is not a regular file.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.store import Store
from core.store.paths import DB_NAME
from tests.unit import test_store_faults as faults
from tests.unit.test_store_faults import ASK, deferchat, one_line, run

tiny = faults.tiny  # the fixtures of the store's other file tests
permissions_bind = faults.permissions_bind


def test_read_only_write_ahead_log_files_make_doctor_say_read_only_as_ask_does(
    home: Path, tiny: str, permissions_bind: None
) -> None:
    db_path = home / DB_NAME
    keeper = sqlite3.connect(db_path)  # an open connection keeps the -wal and -shm files
    store = Store()
    chat = store.create_chat(title="hello", provider="demo", model="m", strategy="wrapper")
    store.add_message(chat, "user", [{"type": "text", "text": "hi"}], turn_id=None, parent_id=None)
    keeper.execute("select count(*) from chats").fetchone()
    sidecars = [Path(f"{db_path}-wal"), Path(f"{db_path}-shm")]
    assert all(s.exists() for s in sidecars)
    for s in sidecars:
        s.chmod(0o444)
    try:
        doctor = deferchat(home, "doctor", "--json")
        asked = deferchat(home, *ASK, tiny)
    finally:
        for s in sidecars:
            s.chmod(0o644)
        keeper.close()
    report = json.loads(doctor.stdout)
    assert doctor.returncode == 1 and not report["healthy"] and not report["writable"], doctor.stdout
    assert any("write-ahead log" in p for p in report["problems"])
    assert asked.returncode == 1
    one_line(asked.stderr, str(db_path), "is read-only")


def test_another_programs_sqlite_file_is_refused_by_doctor_as_by_every_command(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    conn = sqlite3.connect(home / DB_NAME)
    conn.execute("create table moz_places (id integer primary key, url text)")
    conn.commit()
    conn.close()
    code, _, err = run(capsys, "chats", "list")
    line = one_line(err, "is not a deferchat database")
    assert code == 1
    code, out, _ = run(capsys, "doctor", "--json")
    report = json.loads(out)
    assert code == 1 and not report["healthy"]
    assert report["problems"] == [line.removeprefix("deferchat: ")]


def _linked_homes(tmp_path: Path) -> tuple[Path, Path]:
    first, second = tmp_path / "home-a", tmp_path / "home-b"
    first.mkdir()
    second.mkdir()
    store = Store(first / DB_NAME)
    store.create_chat(title="a", provider="demo", model="m", strategy="wrapper")
    store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.db.close()
    os.link(first / DB_NAME, second / DB_NAME)
    return first, second


def test_two_homes_on_one_file_under_two_names_are_refused_with_one_line(tmp_path: Path) -> None:
    first, second = _linked_homes(tmp_path)
    before = (first / DB_NAME).read_bytes()
    for home in (first, second):
        for argv in (["chats", "list"], ["ask", "hi", "--provider", "demo", "--roster", "production"]):
            r = deferchat(home, *argv)
            assert r.returncode == 1 and r.stdout == "", (argv, r.stdout, r.stderr)
            one_line(r.stderr, str(home / DB_NAME), "hard link", "one name")
        doctor = deferchat(home, "doctor", "--json")
        report = json.loads(doctor.stdout)
        assert doctor.returncode == 1 and not report["healthy"]
        assert any("hard link" in p for p in report["problems"])
    assert (first / DB_NAME).read_bytes() == before  # nothing wrote to it
    os.unlink(second / DB_NAME)  # one name again: the home works
    assert deferchat(first, "chats", "list").returncode == 0


# --- property: doctor's verdict is the other commands' verdict, whatever lies at the path -------------

KINDS = [
    "deferchat",
    "empty",
    "directory",
    "foreign sqlite",
    "garbage",
    "truncated",
    "hard link",
    "symlink to deferchat",
    "fifo",
    "dev null",
]


def _make(kind: str, path: Path, spare: Path) -> None:
    if kind in ("deferchat", "truncated", "hard link", "symlink to deferchat"):
        store = Store(spare)
        store.create_chat(title="x", provider="demo", model="m", strategy="wrapper")
        store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        store.db.close()
        data = spare.read_bytes()
        if kind == "deferchat":
            path.write_bytes(data)
        elif kind == "truncated":
            path.write_bytes(data[: len(data) // 3])
        elif kind == "hard link":
            os.link(spare, path)
        else:
            path.symlink_to(spare)
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "directory":
        path.mkdir()
    elif kind == "foreign sqlite":
        conn = sqlite3.connect(path)
        conn.execute("create table t (x)")
        conn.commit()
        conn.close()
    elif kind == "garbage":
        path.write_bytes(os.urandom(3000))
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev null":
        path.symlink_to(os.devnull)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(KINDS))
def test_doctor_calls_healthy_exactly_what_the_other_commands_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    import uuid

    home = tmp_path / uuid.uuid4().hex[:8]
    home.mkdir()
    monkeypatch.setenv("DEFERCHAT_HOME", str(home))
    _make(kind, home / DB_NAME, tmp_path / f"spare-{uuid.uuid4().hex[:8]}.db")
    code, out, _ = run(capsys, "doctor", "--json")
    report = json.loads(out)
    listed, _, err = run(capsys, "chats", "list", "--json")
    assert report["healthy"] == (listed == 0), (kind, report["problems"], err)
    assert (code == 0) == report["healthy"]
    if not report["healthy"]:
        assert listed == 1 and len([x for x in err.splitlines() if x.strip()]) == 1, err
