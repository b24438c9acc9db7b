"""Strategy surfaces, and the active-tools cross-turn trap (seed 004), reproduced."""

from __future__ import annotations

import json

import pytest

from core.deferral import strategies
from core.deferral.strategies import make_strategy, referenced_deferred_tool_names
from core.engine import ChatOptions, Engine
from core.pipeline.approvals import Decision, FixedApprover
from core.store import Store
from tests.helpers import production_plan


def specs_of(plan):
    return {n: plan.spec_of(n) for n in plan.pinned_names()}


def names(tools):
    return [t.get("name", t.get("type")) for t in tools]


def test_wrapper_surface_is_definitions_plus_the_index_in_the_system_prompt():
    p = production_plan()
    s = make_strategy("wrapper", p, "BASE", specs_of(p))
    surf = s.surface([])
    assert names(surf.tools) == p.defined_tool_names and surf.system.startswith("BASE\n\n## Deferred tools")
    assert p.index_text.rstrip() in surf.system and surf.cache_prefix_tools == 29


@pytest.mark.parametrize(
    "strategy, search", [("anthropic", "tool_search_tool_bm25_20251119"), ("openai", "tool_search")]
)
def test_native_surfaces_declare_every_deferred_tool_with_defer_loading_and_inject_the_search(strategy, search):
    p = production_plan(strategy=strategy)
    s = make_strategy(strategy, p, "BASE", specs_of(p))
    surf = s.surface([])
    deferred = [t for t in surf.tools if t.get("defer_loading")]
    assert [t["name"] for t in deferred] == p.deferred_tool_names
    assert surf.tools[-1]["type"] == search and "tool.call" not in names(surf.tools)
    assert "Deferred tools" not in surf.system
    # byte-identical across steps whatever the history holds
    later = s.surface(
        [{"role": "assistant", "content": [{"type": "tool_use", "id": "x", "name": deferred[0]["name"], "input": {}}]}]
    )
    assert json.dumps(later.tools) == json.dumps(surf.tools)


def test_active_tools_pool_is_per_turn_monotonic_and_seeded_from_sent_history():
    p = production_plan(strategy="active-tools")
    s = make_strategy("active-tools", p, "BASE", specs_of(p))
    base = names(s.surface([]).tools)
    assert "tool.search" in base and not set(base) & set(p.deferred_tool_names)
    s.discover(["schedule.update", "not.a.tool"])
    s.discover(["schedule.update"])
    assert names(s.surface([]).tools) == base + ["schedule.update"]
    s.begin_turn()
    assert names(s.surface([]).tools) == base  # a fresh, empty pool
    history = [
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "a", "name": "schedule.pause", "input": {}},
                {"type": "tool_use", "id": "b", "name": "time.now", "input": {}},
            ],
        }
    ]
    assert referenced_deferred_tool_names(history, set(p.deferred_tool_names)) == ["schedule.pause"]
    assert names(s.surface(history).tools) == base + ["schedule.pause"]


def every_history_reference_is_declared(requests):
    for req in requests:
        declared = set(names(req["tools"]))
        for m in req["messages"]:
            for b in m["content"]:
                if b.get("type") == "tool_use":
                    assert b["name"] in declared, f"history names {b['name']}, absent from the tools array"


async def run_two_turns(tmp_path):
    rec = tmp_path / "rec.jsonl"
    engine = Engine(Store(tmp_path / "db.sqlite"))
    s = await engine.open_chat(
        None,
        ChatOptions(roster="production", provider="demo", strategy="active-tools", start_demo_servers=False),
        approver=FixedApprover(Decision.ALLOW_ONCE),
        record=str(rec),
    )
    await s.send("move my 9am standup to 10am")  # discovers schedule.update through tool.search
    await s.send("list my open tasks")  # a new turn: the pool starts empty
    await s.close()
    return [json.loads(line) for line in rec.read_text().splitlines()]


async def test_cross_turn_trap_history_never_names_a_tool_missing_from_the_array(tmp_path, home):
    requests = await run_two_turns(tmp_path)
    called = [b["name"] for r in requests for m in r["messages"] for b in m["content"] if b.get("type") == "tool_use"]
    assert "schedule.update" in called  # the deferred tool really was discovered and used
    turn2_first = next(r for r in requests if r["messages"][-1]["content"][0].get("text") == "list my open tasks")
    assert "schedule.update" in names(turn2_first["tools"])
    every_history_reference_is_declared(requests)


async def test_without_the_seeding_the_trap_is_real(tmp_path, monkeypatch, home):
    monkeypatch.setattr(strategies.ActiveToolsStrategy, "seed", lambda self, messages: [])
    requests = await run_two_turns(tmp_path)
    with pytest.raises(AssertionError, match="absent from the tools array"):
        every_history_reference_is_declared(requests)
