"""Switching a chat's provider mid-chat, in every direction among Anthropic (native search),
OpenAI Responses (native search) and an OpenAI-compatible endpoint (active-tools, tool.search).

The first leg is real recorded traffic where a native search loaded the deferred tool
(``tests/fixtures/providers/vercel-ai``: Anthropic BM25 and OpenAI hosted tool search, each
followed by a call of ``get_weather``), or, for the compatible endpoint, the loopback streaming
server with the model calling ``tool.search`` and then the tool. The chat then switches and the
second leg runs on the loopback server (``tests/streaming_server.py``), whose request log holds
every body the SDK sent. Each of them must pass the target API's rules (``tests/api_rules.py``),
and switching back must send the first provider's own blocks again.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from core.config import Settings
from core.engine import ChatOptions, Engine
from core.errors import UsageError
from core.pipeline.approvals import Decision, FixedApprover
from core.providers import make_provider
from core.roster.loader import load_roster
from core.store import Store
from tests import api_rules
from tests.provider_replay import Replay, chunk_lines, sse, sse_response, vercel_json
from tests.streaming_server import StreamingServer, parse_response, render

MODELS = {"anthropic": "claude-sonnet-4-6", "openai": "gpt-5.4", "openai-chat": "gpt-4.1"}
STRATEGY = {"anthropic": "anthropic", "openai": "openai", "openai-chat": "active-tools"}
RECORDED = {  # the first leg's recorded response: a native search, then a call of get_weather
    "anthropic": "anthropic-tool-search-bm25.1.chunks.txt",
    "openai": "openai-tool-search.1.chunks.txt",
}
SURFACES = tuple(MODELS)
DIRECTIONS = [(a, b) for a in SURFACES for b in SURFACES if a != b]


def weather_schema() -> dict[str, Any]:
    tools = vercel_json("openai-client-tool-search.1.json")["tools"]
    return next(t["parameters"] for t in tools if t.get("name") == "get_weather")


@pytest.fixture
def env(home, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    production = {t.name: t for t in load_roster("production").configured}

    def configured(name: str) -> dict[str, Any]:
        t = production[name]
        return {
            "name": name,
            "description": t.description,
            "input_schema": t.input_schema,
            "side_effect": t.side_effect.name,
        }

    tools = [
        configured("time.now"),
        configured("tasks.create"),
        {
            "name": "get_weather",
            "description": "Get the current weather at a specific location",
            "input_schema": weather_schema(),
            "side_effect": "NONE",
        },
        {
            "name": "search_files",
            "description": "Search through files in the workspace",
            "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
            "side_effect": "NONE",
        },
    ]
    deferred = ["get_weather", "search_files", "tasks.create"]
    roster = {"agent": {"name": "t", "version": "1", "deferred": deferred}, "configured": tools}
    (tmp_path / "roster.json").write_text(json.dumps(roster))
    return tmp_path


def text_sse(wire: str, text: str) -> bytes:
    return b"".join(f.data for f in render(wire, parse_response("t", {"parts": [{"text": text}]})))


class Providers:
    """The provider factory: a provider's first requests may be served from recordings (a
    ``Replay``); everything else goes to the loopback server on that provider's wire."""

    def __init__(self, server: StreamingServer):
        self.server = server
        self.recorded: dict[str, list[bytes]] = {}
        self.replays: dict[str, Replay] = {}

    def __call__(self, name: str, model: str, base_url: str | None, extra: dict[str, Any]) -> Any:
        queued = self.recorded.pop(name, None)
        if queued:
            replay = self.replays[name] = Replay(sse_response(body) for body in queued)
            return make_provider(name, model, api_key="test-key", http_client=replay.client(), max_retries=0)
        return make_provider(name, model, base_url=self.server.url_for(name), api_key="test-key", max_retries=0)


def tool(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"parts": [{"tool": name, "input": args}]}


def answer(text: str) -> dict[str, Any]:
    return {"parts": [{"text": text}]}


def wire_bodies(server: StreamingServer, since: int = 0) -> list[tuple[str, dict[str, Any]]]:
    return [(r["wire"], r["body"]) for r in server.requests[since:]]


def assert_accepted(bodies: list[tuple[str, dict[str, Any]]]) -> None:
    assert bodies
    for wire, body in bodies:
        assert api_rules.check(wire, body) == [], (wire, json.dumps(body)[:3000])


async def first_leg(env, server: StreamingServer, first: str, events: list[Any]):
    providers = Providers(server)
    if first in RECORDED:
        providers.recorded[first] = [sse(chunk_lines(RECORDED[first])), text_sse(first, "Sunny, 18 degrees.")]
    else:  # active-tools: the model searches with tool.search, then calls what it loaded
        server.push(
            tool("tool__search", {"query": "current weather at a location"}),
            tool("get_weather", {"location": "San Francisco, CA", "unit": "celsius"}),
            answer("Sunny, 18 degrees."),
        )
    engine = Engine(Store(env / "db.sqlite"), Settings(), provider_factory=providers)
    session = await engine.open_chat(
        None,
        ChatOptions(roster="roster.json", provider=first, model=MODELS[first], start_demo_servers=False),
        approver=FixedApprover(Decision.ALLOW_ONCE),
        subscribers=[events.append],
    )
    assert session.strategy.name == STRATEGY[first]
    result = await session.send("What is the weather in San Francisco?")
    assert result.status == "done", result
    calls = [e for e in events if e.type == "tool.requested"]
    assert [c.name for c in calls][-1] == "get_weather"  # the deferred tool, reached through a search
    searches = [e for e in events if e.type == "model.tool_search" and e.references]
    assert any("get_weather" in e.references for e in searches)
    if first in RECORDED:
        assert_accepted([(first, b) for b in providers.replays[first].bodies])
    return engine, session, providers


@pytest.mark.parametrize(("first", "then"), DIRECTIONS, ids=[f"{a}-to-{b}" for a, b in DIRECTIONS])
async def test_a_switch_mid_chat_sends_only_what_the_target_api_accepts(env, first, then):
    events: list[Any] = []
    with StreamingServer([]) as server:
        engine, session, _ = await first_leg(env, server, first, events)
        plan_before = engine.store.plan_json(session.chat().plan_id or "")
        stored_before = [m.content for m in engine.store.messages(session.chat_id)]
        since = len(server.requests)

        switched = session.switch(then, MODELS[then])

        assert (switched.from_provider, switched.provider, switched.model) == (first, then, MODELS[then])
        assert switched.strategy == STRATEGY[then] and switched.cause == "owner"
        server.push(tool("get_weather", {"location": "Oslo", "unit": "celsius"}), answer("Rain in Oslo."))
        result = await session.send("And in Oslo?")
        assert result.status == "done" and result.text == "Rain in Oslo."
        second_leg = wire_bodies(server, since)
        assert {w for w, _ in second_leg} == {then}
        assert_accepted(second_leg)
        last = second_leg[-1][1]
        declared = {t.get("name") or (t.get("function") or {}).get("name"): t for t in last.get("tools") or []}
        # the tool the old provider's search loaded stays reachable: declared in full where the
        # new provider's own search never loaded it, in the pool under active-tools
        assert "get_weather" in declared and not declared["get_weather"].get("defer_loading")
        if then != "openai-chat":  # native: the rest stay deferred
            assert declared["search_files"]["defer_loading"] is True

        # the plan stays pinned; the chat row and the event record the switch
        row = session.chat()
        assert engine.store.plan_json(row.plan_id or "") == plan_before
        assert (row.provider, row.model, row.strategy) == (then, MODELS[then], STRATEGY[then])
        stored = engine.store.events(session.chat_id, ("provider.switched",))
        assert [(e["from_provider"], e["provider"]) for e in stored] == [(first, then)]
        # the stored history was not rewritten by the conversion
        assert [m.content for m in engine.store.messages(session.chat_id)][: len(stored_before)] == stored_before

        # back to the first provider: its own blocks are sent again, and still accepted
        since = len(server.requests)
        session.switch(first, MODELS[first])
        server.push(answer("Both done."))
        assert (await session.send("Thanks")).status == "done"
        back = wire_bodies(server, since)
        assert_accepted(back)
        sent = json.dumps(back[-1][1])
        if first == "anthropic":
            assert '"server_tool_use"' in sent and '"tool_search_tool_result"' in sent
        elif first == "openai":
            assert '"tool_search_call"' in sent and '"tool_search_output"' in sent
        await session.close()


async def test_reopening_a_switched_chat_runs_its_current_provider_and_strategy(env):
    events: list[Any] = []
    with StreamingServer([]) as server:
        engine, session, _ = await first_leg(env, server, "anthropic", events)
        session.switch("openai-chat", MODELS["openai-chat"])
        await session.close()
        again = await engine.open_chat(session.chat_id, approver=FixedApprover(Decision.ALLOW_ONCE))
        assert again.provider.name == "openai-chat" and again.strategy.name == "active-tools"
        assert again.plan_event(pinned=True).strategy == "active-tools"
        assert again.plan.strategy == "anthropic"  # the pinned plan itself is untouched
        since = len(server.requests)
        server.push(answer("Still here."))
        assert (await again.send("Hello again")).status == "done"
        assert_accepted(wire_bodies(server, since))
        await again.close()


async def test_a_switch_is_refused_while_a_turn_is_parked(env):
    with StreamingServer([]) as server:
        # tasks.create writes: the model finds it with tool.search, calls it, and the turn parks
        server.push(tool("tool__search", {"query": "create a task"}), tool("tasks__create", {"title": "milk"}))
        engine = Engine(Store(env / "db.sqlite"), Settings(), provider_factory=Providers(server))
        session = await engine.open_chat(
            None,
            ChatOptions(roster="roster.json", provider="openai-chat", model="gpt-4.1", start_demo_servers=False),
            approver=FixedApprover(Decision.PARK),
        )
        assert (await session.send("Add a task")).status == "parked"
        with pytest.raises(UsageError, match="unfinished turn"):
            session.switch("anthropic", MODELS["anthropic"])
        assert session.chat().provider == "openai-chat" and session.provider.name == "openai-chat"
        await session.close()


async def test_an_unusable_provider_changes_nothing(env):
    def factory(name: str, model: str, base_url: str | None, extra: dict[str, Any]) -> Any:
        if name == "anthropic":
            raise UsageError("provider anthropic needs an API key")
        return make_provider(name, model, base_url="http://127.0.0.1:9/v1", api_key="k", max_retries=0)

    engine = Engine(Store(env / "db.sqlite"), Settings(), provider_factory=factory)
    session = await engine.open_chat(
        None,
        ChatOptions(roster="roster.json", provider="openai-chat", model="gpt-4.1", start_demo_servers=False),
    )
    with pytest.raises(UsageError, match="API key"):
        session.switch("anthropic", MODELS["anthropic"])
    assert session.provider.name == "openai-chat" and session.strategy.name == "active-tools"
    assert session.chat().provider == "openai-chat"
    assert engine.store.events(session.chat_id, ("provider.switched",)) == []
    await session.close()


NATIVE_DIRECTIONS = [(a, b) for a, b in DIRECTIONS if b in RECORDED]


@pytest.mark.parametrize(("first", "then"), NATIVE_DIRECTIONS, ids=[f"{a}-to-{b}" for a, b in NATIVE_DIRECTIONS])
async def test_a_switched_chats_history_is_converted_once_per_request(env, first, then, monkeypatch):
    # the native strategy converts the switched history to find the calls no search of its own
    # loaded; the request carries that conversion, equal to a fresh one for the tools it sends
    import core.providers.portable

    convert = core.providers.portable.PortableHistory.convert
    calls: list[str] = []

    def counted(self, messages, tools=()):
        calls.append(self.target)
        return convert(self, messages, tools)

    monkeypatch.setattr(core.providers.portable.PortableHistory, "convert", counted)
    events: list[Any] = []
    with StreamingServer([]) as server:
        _, session, _ = await first_leg(env, server, first, events)
        session.switch(then, MODELS[then])
        loop = session.turns
        build, fit = loop._request, loop.compaction.fit
        views: list[list[dict[str, Any]]] = []
        requests: list[tuple[list[dict[str, Any]], Any]] = []

        async def fitted(*args, **kwargs):
            views.append(await fit(*args, **kwargs))
            return views[-1]

        async def request():
            made = await build()
            requests.append((views[-1], made))
            return made

        monkeypatch.setattr(loop.compaction, "fit", fitted)
        monkeypatch.setattr(loop, "_request", request)
        calls.clear()
        server.push(tool("get_weather", {"location": "Oslo", "unit": "celsius"}), answer("Rain in Oslo."))
        assert (await session.send("And in Oslo?")).status == "done"
        assert len(requests) == 2 and calls == [then] * len(requests)
        for sent, made in requests:
            assert json.dumps(made.messages) == json.dumps(core.providers.portable.for_target(sent, then, made.tools))
        await session.close()
