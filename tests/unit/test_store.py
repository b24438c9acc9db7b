"""The store package: one migration per file under the names databases in the wild recorded,
typed rows from every read, and a package that costs nothing to import."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from sqlite_utils import Database

from core.store import (
    SCHEMA,
    SCHEMA_VERSION,
    ApprovalRow,
    ChatRow,
    InvocationRow,
    MessageRow,
    Store,
    TurnRow,
    open_db,
)
from core.store.migrations import MODULES
from tests.helpers import ROOT

# Recorded in _sqlite_migrations by every database made so far: they can never change.
SHIPPED = ["0001_initial", "0002_grants_token_cache_strategy_reason", "0003_chat_sources"]


def test_each_migration_is_its_own_module_registered_in_order_under_its_shipped_name() -> None:
    names = [m.NAME for m in MODULES]
    assert names[: len(SHIPPED)] == SHIPPED
    assert [m.name for m in SCHEMA._migrations] == names and SCHEMA.name == "deferchat"
    for module in MODULES:
        stem = Path(module.__file__ or "").stem
        assert stem.startswith("m" + module.NAME[:4]) and callable(module.migrate)
    assert names[-1] == SCHEMA_VERSION
    folder = Path(MODULES[0].__file__ or "").parent
    assert sorted(p.stem for p in folder.glob("m[0-9]*.py")) == [Path(m.__file__ or "").stem for m in MODULES]


def test_a_database_of_the_old_single_file_store_upgrades_without_rerunning_anything(tmp_path: Path) -> None:
    old = Database(tmp_path / "old.db")
    SCHEMA.apply(old, stop_before="0003_chat_sources")  # as a release before chat sources left it
    old["chats"].insert({"id": "chat_old", "title": "kept", "created_at": 1.0, "status": "idle", "deleted": 0})
    old.close()
    db = open_db(tmp_path / "old.db")
    assert [m.name for m in SCHEMA.applied(db)][: len(SHIPPED)] == SHIPPED
    row = Store(db).chat("chat_old")
    assert row is not None and (row.id, row.title, row.status, row.sources) == ("chat_old", "kept", "idle", None)


def test_reads_return_typed_rows(tmp_path: Path) -> None:
    store = Store(tmp_path / "db.sqlite")
    chat_id = store.create_chat(title="t", provider="demo", model="m", strategy="wrapper", sources='{"a": 1}')
    msg = store.add_message(chat_id, "user", [{"type": "text", "text": "hi"}], turn_id=None, parent_id=None)
    turn = store.start_turn(chat_id, msg)
    store.set_message_turn(msg, turn)
    inv = store.create_invocation(
        chat_id=chat_id, turn_id=turn, call_id="c1", name="notes.create", arguments={"title": "x"}
    )
    store.create_approval(
        chat_id=chat_id, turn_id=turn, invocation_id=inv, call_id="c1", tool="notes.create", arguments={"title": "x"}
    )

    chat = store.chat(chat_id)
    assert isinstance(chat, ChatRow) and (chat.title, chat.status, chat.provider) == ("t", "running", "demo")
    assert chat.sources_dict() == {"a": 1} and store.find_chat(chat_id[:8]) == chat
    assert store.chats() == [chat]
    (message,) = store.messages(chat_id)
    assert isinstance(message, MessageRow) and message.blocks == [{"type": "text", "text": "hi"}]
    assert message.turn_id == turn
    open_turn = store.open_turn(chat_id)
    assert isinstance(open_turn, TurnRow) and (open_turn.id, open_turn.status) == (turn, "running")
    row = store.invocation(chat_id, "c1")
    assert isinstance(row, InvocationRow) and json.loads(row.arguments or "") == {"title": "x"}
    assert store.invocation_by_id(inv) == row and store.invocations(chat_id) == [row]
    (pending,) = store.pending_approvals(chat_id)
    assert isinstance(pending, ApprovalRow) and pending.tool == "notes.create" and pending.status == "pending"
    assert store.approval(pending.id) == pending == store.approval_for_call(chat_id, "c1")
    with pytest.raises(AttributeError):
        chat.title = "changed"  # type: ignore[misc]  # rows are frozen


def test_a_column_a_newer_version_added_is_ignored_by_the_rows(tmp_path: Path) -> None:
    store = Store(tmp_path / "db.sqlite")
    chat_id = store.create_chat(title="t", provider="demo", model="m", strategy="wrapper")
    store.db.execute("alter table chats add column colour text")
    store.db.execute("update chats set colour = 'blue'")
    row = store.chat(chat_id)
    assert row is not None and row.title == "t" and "colour" not in row.to_dict()


def test_importing_the_store_package_loads_no_sqlite_library() -> None:
    code = (
        "import sys, core.store; from core.store import data_dir; data_dir(); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('sqlite_utils', 'sqlite3')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]"
