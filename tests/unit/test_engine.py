"""The engine: session open and pins, the loop, park/restart/resume, replanning never,
the script and demo providers, and the headless CLI's contracts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.cli import main
from core.engine import ChatOptions, Engine
from core.pipeline import codes
from core.pipeline.approvals import Decision, FixedApprover
from core.store import Store

ROSTER = {
    "agent": {"name": "tester", "version": "7", "deferred": ["notes.erase"]},
    "configured": [
        {
            "name": "time.now",
            "description": "Current time.",
            "side_effect": "NONE",
            "input_schema": {"type": "object", "properties": {"timezone": {"type": "string"}}},
        },
        {
            "name": "notes.erase",
            "description": "Erase a note for good.",
            "side_effect": "WORKSPACE_WRITE",
            "input_schema": {"type": "object", "properties": {"note_id": {"type": "string"}}, "required": ["note_id"]},
        },
    ],
    "servers": [],
}


@pytest.fixture
def env(home, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    roster = tmp_path / "roster.json"
    roster.write_text(json.dumps(ROSTER))
    return tmp_path


def script(path: Path, turns) -> str:
    path.write_text(json.dumps({"turns": turns}))
    return str(path)


ERASE = [
    [
        {"type": "text", "text": "Erasing."},
        {
            "type": "tool_use",
            "id": "toolu_1",
            "name": "tool.call",
            "input": {"name": "notes.erase", "arguments": {"note_id": "nope_1"}},
        },
    ],
    [{"type": "text", "text": "Done."}],
]


async def open_session(env, turns, decision=Decision.ALLOW_ONCE, roster="roster.json", **kw):
    events = []
    engine = Engine(Store(env / "db.sqlite"))
    s = await engine.open_chat(
        None,
        ChatOptions(roster=str(env / roster), script=script(env / "s.json", turns), start_demo_servers=False, **kw),
        approver=FixedApprover(decision),
        subscribers=[events.append],
        record=str(env / "rec.jsonl"),
    )
    return engine, s, events


async def test_a_turn_through_tool_call_in_order_and_the_result_reaches_the_next_request(env):
    engine, s, events = await open_session(env, ERASE)
    result = await s.send("erase note nope_1")
    assert result.status == "done"
    types = [e.type for e in events if e.type != "model.text.delta"]
    assert types == [
        "plan",
        "chat.titled",
        "turn.started",
        "model.tool_use",
        "model.text",
        "usage",
        "tool.requested",
        "tool.approval_required",
        "tool.approved",
        "tool.started",
        "tool.failed",
        "model.text",
        "usage",
        "turn.completed",
    ]
    use = next(e for e in events if e.type == "model.tool_use")
    assert use.name == "tool.call" and use.id == "toolu_1"
    for e in events:
        if e.type.startswith("tool."):
            assert (e.name, e.via, e.call_id) == ("notes.erase", "tool.call", "toolu_1")
    requests = [json.loads(line) for line in (env / "rec.jsonl").read_text().splitlines()]
    assert len(requests) == 2 and set(requests[0]) >= {"system", "tools", "messages"}
    assert "notes.erase(note_id)" in requests[0]["system"]
    result_block = requests[1]["messages"][-1]["content"][0]
    assert result_block["type"] == "tool_result" and result_block["tool_use_id"] == "toolu_1"
    # requests 1 and 2 carry the same tools and the same system prefix (wrapper: cache-stable)
    assert requests[0]["tools"] == requests[1]["tools"] and requests[0]["system"] == requests[1]["system"]
    await s.close()


async def test_session_open_pins_the_plan_and_reopening_never_replans(env):
    engine, s, events = await open_session(env, ERASE)
    plan_before = s.plan.to_json()
    chat_id = s.chat_id
    await s.close()
    more = dict(
        ROSTER,
        configured=ROSTER["configured"]
        + [{"name": "extra.tool", "description": "New.", "input_schema": {"type": "object"}}],
    )
    (env / "roster.json").write_text(json.dumps(more))
    events2 = []
    s2 = await Engine(Store(env / "db.sqlite")).open_chat(chat_id, subscribers=[events2.append])
    assert s2.plan.to_json() == plan_before and "extra.tool" not in s2.plan.pinned_names()
    plan_event = next(e for e in events2 if e.type == "plan")
    assert plan_event.pinned is True
    await s2.close()


async def test_park_survives_a_restart_and_resume_allows(env):
    engine, s, events = await open_session(env, ERASE, decision=Decision.PARK)
    result = await s.send("erase note nope_1")
    assert result.status == "parked"
    chat_id = s.chat_id
    await s.close()
    # a new process: a new engine on the same database
    s2 = await Engine(Store(env / "db.sqlite")).open_chat(chat_id)
    assert s2.parked() is not None and [a.tool for a in s2.pending_approvals()] == ["notes.erase"]
    events2 = []
    s2.subscribe(events2.append)
    result = await s2.resume(FixedApprover(Decision.ALLOW_ONCE))
    assert result.status == "done"
    assert [e.type for e in events2 if e.type.startswith("tool.")] == [
        "tool.requested",
        "tool.approval_required",
        "tool.approved",
        "tool.started",
        "tool.failed",
    ]
    assert s2.parked() is None
    await s2.close()


async def test_park_then_resume_deny(env):
    engine, s, events = await open_session(env, ERASE, decision=Decision.PARK)
    await s.send("erase note nope_1")
    result = await s.resume(FixedApprover(Decision.DENY))
    assert result.status == "done"
    denied = [e for e in events if e.type == "tool.denied"]
    assert denied and denied[-1].code == codes.DENIED_APPROVAL
    await s.close()


async def test_resume_fails_with_pin_mismatch_when_the_roster_changed_the_tool(env):
    engine, s, events = await open_session(env, ERASE, decision=Decision.PARK)
    await s.send("erase note nope_1")
    chat_id = s.chat_id
    await s.close()
    changed = json.loads(json.dumps(ROSTER))
    changed["configured"][1]["description"] = "Erase a note, and all its copies."
    (env / "roster.json").write_text(json.dumps(changed))
    events2 = []
    s2 = await Engine(Store(env / "db.sqlite")).open_chat(chat_id, subscribers=[events2.append])
    await s2.resume(FixedApprover(Decision.ALLOW_ONCE))
    failed = [e for e in events2 if e.type == "tool.failed"]
    assert failed and failed[-1].code == codes.PIN_MISMATCH
    await s2.close()


async def test_sending_while_parked_closes_the_parked_turn_as_stopped_first_and_nothing_is_lost(env):
    """A chat never refuses the owner's next message (issue 19, item 4): the unfinished turn is
    closed as a stop closes one (its approval cancelled, its call answered as not run), then the
    message goes; ``resume`` is there to continue the turn instead."""
    _, s, events = await open_session(env, ERASE, decision=Decision.PARK)
    parked = await s.send("erase note nope_1")
    assert parked.status == "parked" and s.pending_approvals()
    result = await s.send("something else")
    assert result.status == "done" and s.parked() is None and not s.pending_approvals()
    store = s.store
    assert store.turn(parked.turn_id).status == "stopped"  # type: ignore[union-attr]
    inv = store.invocation(s.chat_id, "toolu_1")
    assert inv is not None and inv.status == "failed" and inv.error_code == codes.STOPPED
    assert [m.role for m in store.messages(s.chat_id)] == ["user", "assistant", "user", "user", "assistant"]
    closed = [e for e in events if e.type == "turn.completed"]
    assert [(e.turn_id, e.status) for e in closed] == [
        (parked.turn_id, "parked"),
        (parked.turn_id, "stopped"),
        (
            result.turn_id,
            "done",
        ),
    ]
    # the request for the new message answers the erase (not run) before the new text
    last = [json.loads(line) for line in (env / "rec.jsonl").read_text().splitlines()][-1]
    blocks = [b for m in last["messages"][2:] for b in m["content"]]
    assert [b["type"] for b in blocks] == ["tool_result", "text"]
    assert blocks[0]["tool_use_id"] == "toolu_1" and "was not run" in str(blocks[0]["content"])
    assert blocks[1]["text"] == "something else"
    await s.close()


async def test_provider_errors_become_events_and_keep_the_users_message(env):
    engine, s, events = await open_session(env, [])  # an empty script: the first call fails
    result = await s.send("hello")
    assert result.status == "failed"
    err = next(e for e in events if e.type == "error")
    assert err.code == "script.exhausted"
    msgs = s.store.messages(s.chat_id)
    assert msgs[0].blocks[0]["text"] == "hello"
    await s.close()


async def test_the_loop_stops_after_max_steps(env):
    loop = [[{"type": "tool_use", "id": f"t{i}", "name": "time.now", "input": {}}] for i in range(30)]
    engine, s, events = await open_session(env, loop)
    engine.settings.max_steps = 3
    result = await s.send("loop")
    assert result.status == "failed" and any(e.type == "error" and e.code == "engine.max_steps" for e in events)
    await s.close()


async def test_demo_model_moves_the_standup_through_tool_call(env):
    events = []
    engine = Engine(Store(env / "db.sqlite"))
    s = await engine.open_chat(
        None,
        ChatOptions(roster="production", provider="demo", start_demo_servers=False),
        approver=FixedApprover(Decision.ALLOW_ONCE),
        subscribers=[events.append],
    )
    assert s.plan.strategy == "wrapper"
    await s.send("move my 9am standup to 10am")
    uses = [e for e in events if e.type == "model.tool_use"]
    assert [u.name for u in uses] == ["schedule.list", "tool.call"]
    assert uses[1].input == {"name": "schedule.update", "arguments": {"schedule_id": "sch_1", "time": "10:00"}}
    done = [e for e in events if e.type == "tool.completed" and e.name == "schedule.update"]
    assert done and done[0].via == "tool.call" and done[0].call_id == uses[1].id
    from core.demo.dataset import demo_tool_database

    row = next(demo_tool_database().query("select time from schedules where id = 1"))  # the demo's dataset
    assert row["time"] == "10:00" and s.store.db["schedules"].count == 0  # never the real database
    await s.close()


def test_cli_ask_exit_codes_and_json_lines(env, capsys):
    sc = script(env / "s.json", ERASE)
    assert main(["ask", "erase it", "--roster", "roster.json", "--script", sc, "--approve", "park", "--json"]) == 3
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert lines[-1]["type"] == "turn.completed" and lines[-1]["status"] == "parked"
    chat_id = lines[-1]["chat_id"]
    assert main(["resume", chat_id, "--approve", "no", "--json"]) == 0
    out = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert any(e["type"] == "tool.denied" and e["code"] == codes.DENIED_APPROVAL for e in out)
    assert main(["ask", "x", "--roster", "roster.json", "--script", str(env / "missing.json")]) == 2
    empty = script(env / "empty.json", [])
    assert main(["ask", "x", "--roster", "roster.json", "--script", empty, "--json"]) == 1
    assert main(["chats", "list"]) == 0 and chat_id in capsys.readouterr().out
    assert main(["chats", "export", chat_id, "--md"]) == 0
    md = capsys.readouterr().out
    assert "### Tool: `notes.erase` (via tool.call) — denied · `tool.denied.approval`" in md


def test_store_migrations_from_empty_and_from_the_previous_version(tmp_path):
    from sqlite_utils import Database

    from core.store import SCHEMA, SCHEMA_VERSION, open_db

    fresh = open_db(tmp_path / "fresh.db")
    assert "sources" in fresh["chats"].columns_dict and "grants" in fresh.table_names()
    old = Database(tmp_path / "old.db")
    SCHEMA.apply(old, stop_before="0003_chat_sources")
    assert "sources" not in old["chats"].columns_dict
    old["chats"].insert({"id": "chat_old", "title": "kept", "created_at": 1.0, "status": "idle", "deleted": 0})
    old.close()
    upgraded = open_db(tmp_path / "old.db")
    assert "sources" in upgraded["chats"].columns_dict
    assert upgraded["chats"].get("chat_old")["title"] == "kept"
    applied = [m.name for m in SCHEMA.applied(upgraded)]
    assert "0003_chat_sources" in applied and applied[-1] == SCHEMA_VERSION  # and every later one
