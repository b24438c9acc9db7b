"""Pins in real chats: a chat keeps the plan it pinned (ADR-0123 decision 19) whatever the roster
says later, a plan of the previous builder reopens as current, and a real MCP server whose
mcpServers entry says ``"alwaysLoad": true`` has its tools pinned, in a chat and in
``deferchat plan``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from core.engine import ChatOptions, Engine
from core.roster.models import BUILDER, WEBSITE_PROFILE_TOOLS, RosterPlan
from core.roster.planner import plan_is_current
from core.store import Store
from tests.helpers import subprocess_env

ROOT = Path(__file__).resolve().parents[2]
PREVIOUS = "context-builder@12"
ROSTER = {
    "agent": {"name": "site", "version": "3"},
    "configured": [
        {"name": "time.now", "side_effect": "NONE"},
        {"name": "notes.search", "side_effect": "WORKSPACE_READ"},
    ],
}
SCRIPT = {"turns": [[{"type": "text", "text": "Hello."}]]}


def fx_config(folder: Path) -> Path:
    """The fx test server (three tools) with alwaysLoad, and a roster that knows nothing of it."""
    path = folder / "mcp.json"
    entry = {"command": sys.executable, "args": ["-m", "tests.mcp_servers.fx"], "env": {"PYTHONPATH": str(ROOT)}}
    path.write_text(json.dumps({"mcpServers": {"fx": {**entry, "alwaysLoad": True}}}))
    return path


async def _open(store: Path, folder: Path, chat_id: str | None = None, mcp_config: Path | None = None):
    events: list = []
    engine = Engine(Store(store))
    opts = ChatOptions(
        roster=str(folder / "roster.json"),
        script=str(folder / "script.json"),
        start_demo_servers=False,
        mcp_config=str(mcp_config) if mcp_config else None,
    )
    session = await engine.open_chat(chat_id, opts if chat_id is None else None, subscribers=[events.append])
    return session, events


def _write(folder: Path, roster: dict) -> None:
    (folder / "roster.json").write_text(json.dumps(roster))
    (folder / "script.json").write_text(json.dumps(SCRIPT))


def _plan_event(events: list):
    return next(e for e in events if e.type == "plan")


async def test_a_plan_of_the_previous_builder_reopens_as_current_and_is_never_replanned(home, tmp_path):
    _write(tmp_path, ROSTER)
    db = tmp_path / "db.sqlite"
    s, _ = await _open(db, tmp_path)
    chat_id, plan_id = s.chat_id, s.chat().plan_id
    await s.close()
    # The chat's stored plan as the previous builder wrote it: its builder string, and no pin keys.
    store = Store(db)
    stored = json.loads(store.plan_json(plan_id))
    assert stored["builder"] == BUILDER and "always_load_tool_names" not in stored
    stored["builder"] = PREVIOUS
    store.db.execute(
        "update plans set json = ?, builder = ? where id = ?", [json.dumps(stored, indent=2), PREVIOUS, plan_id]
    )
    store.db.conn.commit()
    # Since then the roster binds the agent to a website and pins a tool: the chat keeps its plan.
    _write(
        tmp_path,
        {
            **ROSTER,
            "agent": {
                **ROSTER["agent"],
                "always_load": ["notes.search"],
                "profile": {"kind": "website", "url": "https://ferries.example"},
            },
        },
    )
    s2, events = await _open(db, tmp_path, chat_id)
    assert s2.plan.builder == PREVIOUS and plan_is_current(s2.plan)
    assert not [e for e in events if e.type == "error" and getattr(e, "code", "") == "plan.not_current"]
    plan = _plan_event(events)
    assert plan.pinned is True and plan.builder == PREVIOUS and plan.always_load_tool_names == []
    assert not set(WEBSITE_PROFILE_TOOLS) & set(s2.plan.pinned_names())
    assert (await s2.send("hi")).status == "done"
    await s2.close()


async def test_a_pinned_chat_keeps_its_pins_when_the_roster_drops_them(home, tmp_path):
    site = {**ROSTER, "agent": {**ROSTER["agent"], "profile": {"kind": "website", "url": "https://ferries.example"}}}
    _write(tmp_path, site)
    db = tmp_path / "db.sqlite"
    s, events = await _open(db, tmp_path)
    assert _plan_event(events).always_load_tool_names == list(WEBSITE_PROFILE_TOOLS)
    assert s.plan.defined_tool_names[:3] == list(WEBSITE_PROFILE_TOOLS)  # nothing deferred: no tool.call
    chat_id, before = s.chat_id, s.plan.to_json()
    await s.close()
    _write(tmp_path, ROSTER)  # the profile is gone from the roster
    s2, events = await _open(db, tmp_path, chat_id)
    assert s2.plan.to_json() == before and plan_is_current(s2.plan)
    assert _plan_event(events).always_load_tool_names == list(WEBSITE_PROFILE_TOOLS)
    await s2.close()


async def test_a_chat_pins_every_tool_of_an_always_load_server(home, tmp_path):
    _write(tmp_path, ROSTER)
    s, events = await _open(tmp_path / "db.sqlite", tmp_path, mcp_config=fx_config(tmp_path))
    fx = ["mcp.fx.get_exchange_rate", "mcp.fx.get_weather", "mcp.fx.stock_lookup"]
    assert s.plan.always_load_tool_names == fx and s.plan.always_load_servers == ["fx"]
    assert s.plan.defined_tool_names[:3] == fx  # before the roster's own built-ins
    assert _plan_event(events).always_load_tool_names == fx
    await s.close()


def test_deferchat_plan_pins_an_always_load_server_it_discovers(home, tmp_path):
    _write(tmp_path, ROSTER)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tui.main",
            "plan",
            "--roster",
            str(tmp_path / "roster.json"),
            "--mcp-config",
            str(fx_config(tmp_path)),
            "--json",
        ],
        env=subprocess_env(home),
        cwd=tmp_path,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    plan = RosterPlan.model_validate_json(proc.stdout)
    assert plan.always_load_servers == ["fx"] and len(plan.always_load_tool_names) == 3
    for name in plan.always_load_tool_names:
        row = plan.placement_of(name)
        assert row is not None and row.always_load == "alwaysLoad in server fx's mcpServers entry"
