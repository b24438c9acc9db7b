"""The demo's dataset lives only where the demo runs: in its own file, ``demo.sqlite``.

A user's real database never receives a demo row: not when it is created, not after a turn
of a chat on a real provider (even with the demo MCP servers running), and a database that an
earlier version seeded loses those rows on upgrade and keeps the owner's own. A chat on the
demo model works on the seeded demo database; a deleted demo file is seeded again.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sqlite_utils import Database

from core.builtins.data import BUILTIN_SCHEMA, DEMO_TABLES
from core.demo import demo_db_path
from core.demo.dataset import demo_tool_database, open_demo_dataset, seed_demo_data, tool_database
from core.demo.db import connect
from core.demo.servers import implementations
from core.engine import ChatOptions, Engine
from core.pipeline.approvals import Decision, FixedApprover
from core.store import SCHEMA, Store

ROOT = Path(__file__).resolve().parents[2]
WEEKDAYS = ["mon", "tue", "wed", "thu", "fri"]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("DEFERCHAT_HOME", str(home))
    for var in ("DEFERCHAT_DEMO_DB", "ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    return home


def rows(db: Database, *, demo: bool) -> dict[str, int]:
    """Per table the built-ins seed into: how many demo (or own) rows it holds."""
    return {t: db.execute(f"select count(*) from [{t}] where demo = ?", [int(demo)]).fetchone()[0] for t in DEMO_TABLES}


def removed(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


# --- the real database ------------------------------------------------------------------------------


def test_a_new_real_database_has_the_tables_and_no_demo_rows(home):
    store = Store()  # the default location: $DEFERCHAT_HOME/deferchat.db
    assert (home / "deferchat.db").is_file()
    assert [m.name for m in BUILTIN_SCHEMA.applied(store.db)] == [
        "0001_tables",
        "0003_remove_demo_rows",
        "0004_browser_pages",
    ]
    assert {t: store.db[t].count for t in DEMO_TABLES} == dict.fromkeys(DEMO_TABLES, 0)
    assert not BUILTIN_SCHEMA.pending(Store().db)  # reopening applies nothing again
    assert not (home / "demo.sqlite").exists()  # the store never creates the demo's file


def test_an_old_database_loses_its_demo_rows_on_upgrade_and_keeps_the_owners(home):
    path = home / "deferchat.db"
    path.parent.mkdir(parents=True)
    old = Database(path)  # as an earlier version left it: 0001_tables, then 0002_demo_seed
    SCHEMA.apply(old)
    BUILTIN_SCHEMA.apply(old, stop_before="0003_remove_demo_rows")
    with old.atomic():
        seed_demo_data(old, dt.date.today())
        old["_sqlite_migrations"].insert(
            {"migration_set": BUILTIN_SCHEMA.name, "name": "0002_demo_seed", "applied_at": "2026-01-05 09:00:00+00:00"}
        )
    # The owner's own rows, and a change the owner made to the seeded standup.
    standup = next(old["schedules"].rows_where("title = 'Team standup'"))["id"]
    old["schedules"].insert(
        {"title": "Piano lesson", "time": "17:00", "days": '["wed"]', "status": "active", "demo": 0}
    )
    piano = old["schedules"].last_pk
    old["schedule_history"].insert_all(
        [
            {"schedule_id": standup, "action": "updated", "changes": "{}"},
            {"schedule_id": piano, "action": "created", "changes": "{}"},
        ]
    )
    old["tasks"].insert({"title": "File the tax return", "status": "open", "demo": 0})
    old["notes"].insert({"title": "Garden plan", "body": "Tomatoes along the fence.", "tags": '["home"]', "demo": 0})
    old["people"].insert({"name": "Ada Lovelace", "demo": 0})
    assert all(rows(old, demo=True).values())
    old.close()

    store = Store()  # the upgrade
    db = store.db
    assert [m.name for m in BUILTIN_SCHEMA.applied(db)] == [
        "0001_tables",
        "0002_demo_seed",
        "0003_remove_demo_rows",
        "0004_browser_pages",
    ]
    assert rows(db, demo=True) == dict.fromkeys(DEMO_TABLES, 0)
    assert [r["title"] for r in db["schedules"].rows] == ["Piano lesson"]
    assert [r["schedule_id"] for r in db["schedule_history"].rows] == [piano]
    assert [r["title"] for r in db["tasks"].rows] == ["File the tax return"]
    assert [r["name"] for r in db["people"].rows] == ["Ada Lovelace"]
    # The notes' full-text index followed the deletes.
    assert [r["title"] for r in db["notes"].search("tomatoes")] == ["Garden plan"]
    assert list(db["notes"].search("sourdough")) == []
    assert list(db.execute("pragma foreign_key_check")) == []


# --- the demo database ------------------------------------------------------------------------------


def test_the_demo_database_is_seeded_once_and_again_when_deleted(home):
    path = demo_db_path()
    assert path == home / "demo.sqlite"
    db = demo_tool_database()
    standup = list(db["schedules"].rows_where("title = 'Team standup'"))
    assert [(s["time"], json.loads(s["days"]), s["status"]) for s in standup] == [("09:00", WEEKDAYS, "active")]
    subs = list(db["email_subscriptions"].rows)
    assert 8 <= len(subs) <= 12 and {s["account"] for s in subs} == {"work", "personal"}
    seeded = rows(db, demo=True)
    assert all(seeded.values()) and not any(rows(db, demo=False).values())
    assert not BUILTIN_SCHEMA.pending(db)

    db["schedules"].delete_where("title = 'Team standup'")
    assert demo_tool_database() is db  # the same file stays open
    other = open_demo_dataset(path)  # another process opening it: seeded already, not again
    assert other["schedules"].count == seeded["schedules"] - 1
    other.close()

    removed(path)
    again = demo_tool_database()
    assert again is not db and path.is_file()
    assert rows(again, demo=True) == seeded
    assert again["schedules"].count_where("title = 'Team standup'") == 1


def test_processes_opening_a_new_demo_file_at_once_seed_it_once(tmp_path):
    path = tmp_path / "demo.sqlite"
    code = "import sys; from core.demo.dataset import open_demo_dataset; open_demo_dataset(sys.argv[1])"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", code, str(path)], env=env) for _ in range(4)]
    assert [p.wait(timeout=60) for p in procs] == [0, 0, 0, 0]
    db = Database(path)
    assert db["schedules"].count_where("title = 'Team standup'") == 1
    assert db["meta"].count_where("key = 'seeded:builtins'") == 1


def test_the_demo_servers_and_the_dataset_share_one_file(tmp_path):
    path = tmp_path / "demo.sqlite"
    implementations("gmail_work", connect(path), call_seconds=0)  # what a demo server does on start
    db = demo_tool_database(path)
    assert {"seeded:gmail:work", "seeded:builtins"} <= {r["key"] for r in db["meta"].rows}
    assert db["gmail_messages"].count > 0 and db["schedules"].count == 5


def test_only_the_demo_model_gets_the_demo_database(home):
    real = Store().db
    assert tool_database("demo", real) is demo_tool_database()
    for provider in ("anthropic", "openai", "openai-chat", "script"):
        assert tool_database(provider, real) is real


# --- chats ------------------------------------------------------------------------------------------


def completed(events: list[Any], name: str) -> list[Any]:
    return [e for e in events if e.type == "tool.completed" and e.name == name]


async def test_a_demo_chat_lists_the_seeded_standup_and_moves_it_in_the_demo_database(home):
    events: list[Any] = []
    engine = Engine()  # the real store at its default location
    s = await engine.open_chat(
        None,
        ChatOptions(roster="production", provider="demo", start_demo_servers=False),
        approver=FixedApprover(Decision.ALLOW_ONCE),
        subscribers=[events.append],
    )
    try:
        await s.send("list my standup")
        listed = completed(events, "schedule.list")
        assert listed and "Team standup" in json.dumps(listed[0].result)
        await s.send("move my 9am standup to 10am")
        assert completed(events, "schedule.update")
    finally:
        await s.close()
    demo = demo_tool_database()
    assert next(demo["schedules"].rows_where("title = 'Team standup'"))["time"] == "10:00"
    assert {t: engine.store.db[t].count for t in DEMO_TABLES} == dict.fromkeys(DEMO_TABLES, 0)
    assert engine.store.db["schedule_history"].count == 0


async def test_a_real_provider_chat_never_sees_demo_rows_even_with_the_demo_servers_running(home, tmp_path):
    """A chat on a real provider (the model's side replayed from a script, offline) with the demo
    MCP servers running: the servers answer from the demo file, the built-ins from the real one."""
    from core.providers.script import ScriptProvider

    demo_tool_database()  # a demo chat ran before: the demo file is seeded
    script = tmp_path / "turns.json"
    script.write_text(
        json.dumps(
            {
                "turns": [
                    [{"type": "tool_use", "id": "call_1", "name": "schedule.list", "input": {}}],
                    [
                        {
                            "type": "tool_use",
                            "id": "call_2",
                            "name": "mcp.gmail_work.search_threads",
                            "input": {"query": "invoice"},
                        }
                    ],
                    [{"type": "tool_use", "id": "call_3", "name": "people.search", "input": {"query": "Priya"}}],
                    [{"type": "text", "text": "Done."}],
                ]
            }
        )
    )
    events: list[Any] = []
    engine = Engine(provider_factory=lambda name, model, base_url, extra: ScriptProvider(script, model))
    s = await engine.open_chat(
        None,
        ChatOptions(
            roster="production", provider="anthropic", model="claude-test", strategy="wrapper", start_demo_servers=True
        ),
        approver=FixedApprover(Decision.ALLOW_ONCE),
        subscribers=[events.append],
    )
    try:
        assert s.chat().provider == "anthropic"
        result = await s.send("what is on my plate?")
    finally:
        await s.close()
    assert result.status == "done"
    listed = completed(events, "schedule.list")
    assert listed and listed[0].result["count"] == 0
    mail = completed(events, "mcp.gmail_work.search_threads")
    assert mail and "INV-2291" in json.dumps(mail[0].result)  # the demo servers did run
    people = completed(events, "people.search")
    assert people and "priya.raman@northwind.example" not in json.dumps(people[0].result)
    assert {t: engine.store.db[t].count for t in DEMO_TABLES} == dict.fromkeys(DEMO_TABLES, 0)
