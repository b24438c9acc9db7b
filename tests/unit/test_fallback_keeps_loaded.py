"""A fallback in the middle of a turn keeps what the turn loaded (issue 23, item 10).

``core/chat/switch.py`` builds the strategy again for the fallback provider; the new one started
with an empty discovery pool, so a tool that ``tool.search`` loaded earlier in the turn -- whose
result told the model to call it directly -- was missing from the next request. Now the new
strategy takes over the turn's loaded tools (``carry_over``): active-tools puts them in its pool,
a native strategy declares them in full. Against the loopback server, on the real SDKs.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.config import Settings
from core.deferral.strategies import make_strategy
from core.engine import ChatOptions, Engine
from core.pipeline.approvals import Decision, FixedApprover
from core.providers import make_provider
from core.store import Store
from tests.helpers import production_plan
from tests.streaming_server import StreamingServer


def failing(status: int) -> dict[str, Any]:
    return {"status": status, "headers": {"retry-after-ms": "5"}}


def tool_names(request: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The tools a recorded request declared, by wire name (every wire's shape)."""
    out = {}
    for tool in request["body"].get("tools") or []:
        name = tool.get("name") or (tool.get("function") or {}).get("name")
        if name:
            out[name] = tool
    return out


@pytest.fixture
def env(home, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


async def _run(
    env, script: list[dict[str, Any]], *, fallback: str, strategy: str | None, model: str = "claude-sonnet-4-6"
) -> tuple[Any, Any, Any]:
    with StreamingServer(script) as server:

        def make(name: str, model: str, base_url: str | None, extra: dict[str, Any]) -> Any:
            return make_provider(name, model, base_url=server.url_for(name), api_key="test-key", max_retries=1)

        engine = Engine(Store(env / "db.sqlite"), Settings(fallback=[fallback]), provider_factory=make)
        events: list[Any] = []
        session = await engine.open_chat(
            None,
            ChatOptions(provider="anthropic", model=model, strategy=strategy, start_demo_servers=False),
            approver=FixedApprover(Decision.ALLOW_ONCE),
            subscribers=[events.append],
        )
        try:
            result = await session.send("pause my morning schedule")
        finally:
            await session.close()
        return result, server.requests, events


@pytest.mark.parametrize("fallback", ["openai:gpt-5.4", "openai-chat:gpt-4.1"])
async def test_a_tool_search_result_survives_a_fallback_mid_turn(env, fallback: str) -> None:
    script = [
        {"parts": [{"tool": "tool__search", "id": "s1", "input": {"query": "pause a schedule"}}]},
        failing(529),
        failing(529),
        {"parts": [{"text": "Done."}]},
    ]
    result, requests, events = await _run(env, script, fallback=fallback, strategy="active-tools")
    assert result.status == "done", result.error
    loaded = [n for e in events if e.type == "tool.discovered" and e.source == "search" for n in e.names]
    assert "schedule.pause" in loaded
    assert "schedule__pause" in tool_names(requests[1])  # the step after the search, on anthropic
    after = requests[-1]
    assert after["wire"] != "anthropic"
    assert "schedule__pause" in tool_names(after), sorted(tool_names(after))  # still there after the fallback


async def test_a_native_fallback_declares_the_loaded_tools_in_full(env) -> None:
    script = [
        {"parts": [{"tool": "tool__search", "id": "s1", "input": {"query": "pause a schedule"}}]},
        failing(529),
        failing(529),
        {"parts": [{"text": "Done."}]},
    ]
    # auto: Haiku runs active-tools on Anthropic (no tool_reference); auto on genuine OpenAI is
    # its native strategy, which must declare what tool.search loaded without defer_loading
    result, requests, events = await _run(
        env, script, fallback="openai:gpt-5.4", strategy=None, model="claude-haiku-4-5"
    )
    assert result.status == "done", result.error
    assert [e.strategy for e in events if e.type == "provider.switched"] == ["openai"]
    tools = tool_names(requests[-1])
    assert "schedule__pause" in tools and not tools["schedule__pause"].get("defer_loading")
    assert any(t.get("defer_loading") for t in tools.values())  # the others stay deferred


PLAN = production_plan(strategy="active-tools")
DEFERRED = PLAN.deferred_tool_names


@settings(max_examples=60, deadline=None)
@given(
    loaded=st.lists(st.sampled_from(DEFERRED), min_size=1, max_size=6, unique=True),
    target=st.sampled_from(["active-tools", "anthropic", "openai"]),  # what a fallback to a real provider runs
)
def test_every_strategy_taking_over_a_turn_keeps_its_loaded_tools_callable(loaded: list[str], target: str) -> None:
    from core.providers.wirenames import encode

    specs = {n: s for n in PLAN.pinned_names() if (s := PLAN.spec_of(n)) is not None}
    before = make_strategy("active-tools", PLAN, "system", specs)
    before.begin_turn()
    before.discover(loaded)
    assert before.turn_loaded == loaded
    after = make_strategy(target, PLAN, "system", specs, loaded=before.loaded, foreign_history=True)
    after.carry_over(before.turn_loaded)
    surface = after.surface([{"role": "user", "content": [{"type": "text", "text": "go"}]}])
    declared = {t.get("name"): t for t in surface.tools if t.get("name")}
    for name in loaded:
        tool = declared.get(name) or declared.get(encode(name))
        assert tool is not None and not tool.get("defer_loading"), (target, name)
    after.begin_turn()  # the next turn starts afresh
    if target == "active-tools":
        assert after.surface([]).tools == after.surface([]).tools[: len(PLAN.defined_tool_names)]
