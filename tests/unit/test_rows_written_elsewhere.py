"""Rows an older version or another tool wrote: a NULL where this version always writes a value
(a chat whose ``strategy`` is NULL crashed ``deferchat chats list``), or a value of another type
than the column's (SQLite keeps what it is given). Every stored chat lists, in text and in JSON,
and the store's reads hand back the field's default for such a NULL."""

from __future__ import annotations

import io
import json
import sqlite3
import time
from contextlib import redirect_stdout
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.store import Store
from core.store.rows import ChatRow, TurnRow
from tui.main import main

# the chats columns a reader formats, and what another writer may have put in them
COLUMNS = ("title", "provider", "model", "strategy", "status", "updated_at", "policy", "builder", "base_url")
ODD = st.one_of(
    st.none(),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=30),  # an escape sequence in a provider's name included
)


def write_chat(db: Path, chat_id: str, values: dict[str, object]) -> None:
    columns = ["id", "created_at", *values]
    with sqlite3.connect(db) as conn:
        conn.execute(
            f"insert into chats ({', '.join(columns)}) values ({', '.join('?' * len(columns))})",
            [chat_id, time.time(), *values.values()],
        )


def listed(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["chats", "list", *args])
    return code, out.getvalue()


def test_a_null_strategy_lists(home: Path) -> None:
    store = Store()
    write_chat(store.path, "chat_old", {"title": "from an old version", "strategy": None, "status": None})
    code, text = listed()
    assert code == 0 and "chat_old" in text and "from an old version" in text
    code, text = listed("--json")
    [row] = [json.loads(line) for line in text.splitlines()]
    assert code == 0 and row["strategy"] == "" and row["status"] == "idle"
    assert store.chat("chat_old") == ChatRow(
        id="chat_old", title="from an old version", created_at=row["created_at"], strategy="", status="idle"
    )


def test_a_null_reads_as_the_fields_default_and_a_nullable_field_stays_none() -> None:
    names = ("id", "status", "steps", "ended_at", "error")
    row = TurnRow.from_values(names, ("t1", None, None, None, None))
    assert (row.status, row.steps, row.ended_at, row.error) == ("running", 0, None, None)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(chats=st.lists(st.fixed_dictionaries({}, optional={c: ODD for c in COLUMNS}), min_size=1, max_size=4))
def test_every_stored_chat_lists_whatever_its_columns_hold(home: Path, chats: list[dict[str, object]]) -> None:
    store = Store()
    with sqlite3.connect(store.path) as conn:
        conn.execute("delete from chats")
    ids = [f"chat_{i}" for i in range(len(chats))]
    for chat_id, values in zip(ids, chats, strict=True):
        write_chat(store.path, chat_id, values)
    code, text = listed()
    assert code == 0
    lines = text.splitlines()
    assert sorted(line.split()[0] for line in lines) == ids  # one line each, never wrapped by a value
    assert "\x1b" not in text  # a stored value is shown, never obeyed
    code, text = listed("--json")
    assert code == 0 and sorted(json.loads(line)["id"] for line in text.splitlines()) == ids
