"""The engine and the native strategies' searches, with a provider that yields normalized events.

* A client-executed search (OpenAI ``tool_search`` with ``execution: client``) is answered with
  our own index and the loop goes on; after a park it is answered on resume.
* A search's query is known for the whole turn (the deferred case: its result opens the next
  response), and after a restart from the history that was sent.
* The search flavour comes from settings, is pinned per chat, and never changes the tools array
  across steps or turns (every flavour of both native strategies).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import ValidationError

from core.config import Settings
from core.controls.search import search_label, search_queries
from core.deferral.strategies import OPENAI_CLIENT_SEARCH_TOOL, make_strategy
from core.engine import ChatOptions, Engine
from core.pipeline.approvals import Decision, FixedApprover
from core.providers.base import (
    ModelRequest,
    ResponseDone,
    ServerToolUse,
    TextDelta,
    ToolSearchResult,
    ToolUse,
)
from core.providers.openai_responses import pending_client_searches
from core.roster.loader import load_roster
from core.store import Store
from tests.helpers import production_plan
from tests.provider_replay import cassette

DEFINED = ("time.now",)
DEFERRED = ("tasks.create", "tasks.list", "schedule.update")


@pytest.fixture
def env(home, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    production = {t.name: t for t in load_roster("production").configured}
    configured = [
        {
            "name": n,
            "description": production[n].description,
            "input_schema": production[n].input_schema,
            "side_effect": production[n].side_effect.name,
        }
        for n in DEFINED + DEFERRED
    ]
    (tmp_path / "roster.json").write_text(
        json.dumps({"agent": {"name": "t", "version": "1", "deferred": list(DEFERRED)}, "configured": configured})
    )
    return tmp_path


class FakeProvider:
    """Yields scripted normalized events, one list per request, and keeps the requests."""

    def __init__(self, name: str, responses: list[list[Any]]):
        self.name, self.model = name, "fake-1"
        self.responses = responses
        self.requests: list[ModelRequest] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[Any]:
        self.requests.append(request.model_copy(deep=True))
        for item in self.responses.pop(0):
            yield item

    def pending_client_searches(self, content: list[dict[str, Any]]) -> list[ServerToolUse]:
        """As the adapter it stands in for reads a stored response (only OpenAI's has any)."""
        return pending_client_searches(content) if self.name == "openai" else []


def engine_for(env, provider: FakeProvider, **settings: Any) -> Engine:
    return Engine(Store(env / "db.sqlite"), Settings(**settings), provider_factory=lambda *a: provider)


async def open_chat(engine: Engine, provider: str, strategy: str, decision=Decision.ALLOW_ONCE):
    events: list[Any] = []
    s = await engine.open_chat(
        None,
        ChatOptions(roster="roster.json", provider=provider, strategy=strategy, start_demo_servers=False),
        approver=FixedApprover(decision),
        subscribers=[events.append],
    )
    return s, events


def client_search(call_id: str, arguments: dict[str, Any]) -> tuple[ServerToolUse, dict[str, Any]]:
    item = {
        "type": "tool_search_call",
        "id": f"tsc_{call_id}",
        "call_id": call_id,
        "execution": "client",
        "status": "completed",
        "arguments": arguments,
    }
    return (
        ServerToolUse(id=call_id, name="tool_search", input=arguments, executor="client"),
        {"type": "provider_item", "provider": "openai", "item": item},
    )


def call(call_id: str, name: str, args: dict[str, Any]) -> tuple[ToolUse, dict[str, Any]]:
    return ToolUse(id=call_id, name=name, input=args), {"type": "tool_use", "id": call_id, "name": name, "input": args}


def reply(*pairs: tuple[Any, dict[str, Any] | None], stop: str = "tool_use") -> list[Any]:
    return [e for e, _ in pairs if e is not None] + [
        ResponseDone(stop_reason=stop, content=[b for _, b in pairs if b is not None])
    ]


def text(t: str) -> list[Any]:
    return [TextDelta(text=t), ResponseDone(stop_reason="end_turn", content=[{"type": "text", "text": t}])]


def of(events: list[Any], kind: str) -> list[Any]:
    return [e for e in events if e.type == kind]


# --- client-executed searches ------------------------------------------------------------------


async def test_a_client_executed_search_is_answered_with_tool_references_and_the_turn_goes_on(env):
    provider = FakeProvider(
        "openai",
        [
            reply(client_search("call_s1", {"queries": ["add a task", "todo item"]})),
            reply(call("call_t1", "tasks.create", {"title": "buy milk"})),
            text("Added."),
        ],
    )
    s, events = await open_chat(engine_for(env, provider, openai_tool_search="client"), "openai", "openai")
    result = await s.send("remind me to buy milk")
    assert result.status == "done" and result.text == "Added."
    asked, answered = of(events, "model.tool_search")
    assert (asked.id, asked.executor, asked.references) == ("call_s1", "client", [])
    assert (answered.id, answered.executor, answered.query) == ("call_s1", "client", "add a task | todo item")
    assert answered.references[0] == "tasks.create" and set(answered.references) <= set(DEFERRED)
    assert "tasks.create" in s.strategy.loaded
    # request 2 answers the search with tool_reference blocks, after the echoed search call
    second = provider.requests[1].messages
    assert second[1]["content"][0]["item"]["call_id"] == "call_s1"
    assert second[2] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "call_s1",
                "content": [{"type": "tool_reference", "tool_name": n} for n in answered.references],
            }
        ],
    }
    assert [e.name for e in of(events, "tool.completed")] == ["tasks.create"]
    # the injected client tool_search never changes
    assert provider.requests[0].tools[-1] == OPENAI_CLIENT_SEARCH_TOOL
    assert len({json.dumps(r.tools) for r in provider.requests}) == 1


async def test_a_search_beside_a_parked_call_is_answered_on_resume_after_a_restart(env):
    provider = FakeProvider(
        "openai",
        [
            reply(
                client_search("call_s1", {"queries": ["list tasks"]}), call("call_t1", "tasks.create", {"title": "x"})
            ),
        ],
    )
    s, events = await open_chat(
        engine_for(env, provider, openai_tool_search="client"), "openai", "openai", Decision.PARK
    )
    assert (await s.send("add x")).status == "parked"
    assert not of(events, "model.tool_search")[1:], "nothing is answered while the turn is parked"
    chat_id = s.chat_id
    await s.close()

    provider2 = FakeProvider("openai", [text("Done.")])
    events2: list[Any] = []
    s2 = await engine_for(env, provider2).open_chat(chat_id, subscribers=[events2.append])
    result = await s2.resume(FixedApprover(Decision.ALLOW_ONCE))
    assert result.status == "done"
    [answered] = of(events2, "model.tool_search")
    assert answered.id == "call_s1" and answered.query == "list tasks" and "tasks.list" in answered.references
    answers = provider2.requests[0].messages[-1]["content"]
    assert [(b["type"], b["tool_use_id"]) for b in answers] == [("tool_result", "call_s1"), ("tool_result", "call_t1")]
    # the chat kept its pinned flavour although this engine's settings say hosted
    assert provider2.requests[0].tools == provider.requests[0].tools
    assert provider2.requests[0].tools[-1]["execution"] == "client"


# --- the search's query lasts the whole turn ----------------------------------------------------


def deferred_case_first() -> list[Any]:
    """A client call and a server search in one response; the result will open the next one."""
    srv = ServerToolUse(id="srvtoolu_1", name="tool_search_tool_bm25", input={"query": "task list"})
    return reply(
        call("toolu_1", "time.now", {}),
        (
            srv,
            {
                "type": "server_tool_use",
                "id": "srvtoolu_1",
                "name": "tool_search_tool_bm25",
                "input": {"query": "task list"},
            },
        ),
    )


def deferred_case_second() -> list[Any]:
    result = {
        "type": "tool_search_tool_result",
        "tool_use_id": "srvtoolu_1",
        "content": {
            "type": "tool_search_tool_search_result",
            "tool_references": [{"type": "tool_reference", "tool_name": "tasks.list"}],
        },
    }
    return reply(
        (ToolSearchResult(tool_use_id="srvtoolu_1", references=["tasks.list"]), result),
        (TextDelta(text="Listing."), {"type": "text", "text": "Listing."}),
        stop="end_turn",
    )


async def test_the_query_of_a_search_whose_result_opens_the_next_response_is_kept(env):
    provider = FakeProvider("anthropic", [deferred_case_first(), deferred_case_second()])
    s, events = await open_chat(engine_for(env, provider), "anthropic", "anthropic")
    assert (await s.send("what is on my list?")).status == "done"
    asked, found = of(events, "model.tool_search")
    assert (asked.query, found.query, found.references) == ("task list", "task list", ["tasks.list"])
    echoed = provider.requests[1].messages[1]["content"]
    assert [b["type"] for b in echoed] == ["tool_use", "server_tool_use"]


async def test_after_a_restart_the_query_is_found_in_the_history_sent(env):
    first = deferred_case_first()
    first[0] = ToolUse(id="toolu_1", name="tasks.create", input={"title": "x"})  # a write: parks
    first[-1].content[0] = {"type": "tool_use", "id": "toolu_1", "name": "tasks.create", "input": {"title": "x"}}
    provider = FakeProvider("anthropic", [first])
    s, _ = await open_chat(engine_for(env, provider), "anthropic", "anthropic", Decision.PARK)
    assert (await s.send("add x, then list")).status == "parked"
    provider2 = FakeProvider("anthropic", [deferred_case_second()])
    events: list[Any] = []
    s2 = await engine_for(env, provider2).open_chat(s.chat_id, subscribers=[events.append])
    assert (await s2.resume(FixedApprover(Decision.ALLOW_ONCE))).status == "done"
    [found] = of(events, "model.tool_search")
    assert (found.query, found.references) == ("task list", ["tasks.list"])


# --- flavours: settings, pinning, a constant tools array ----------------------------------------


def specs_of(plan):
    return {n: plan.spec_of(n) for n in plan.pinned_names()}


@pytest.mark.parametrize(
    "strategy, flavour, search_type",
    [
        ("anthropic", {"anthropic_search": "bm25"}, "tool_search_tool_bm25_20251119"),
        ("anthropic", {"anthropic_search": "regex"}, "tool_search_tool_regex_20251119"),
        ("openai", {"openai_search": "hosted"}, "tool_search"),
        ("openai", {"openai_search": "client"}, "tool_search"),
    ],
)
def test_every_native_flavour_keeps_the_tools_array_byte_identical(strategy, flavour, search_type):
    p = production_plan(strategy=strategy)
    s = make_strategy(strategy, p, "BASE", specs_of(p), **flavour)
    first = json.dumps(s.surface([]).tools)
    tools = json.loads(first)
    assert tools[-1]["type"] == search_type
    assert ("execution" in tools[-1]) is (flavour.get("openai_search") == "client")
    assert [t["name"] for t in tools if t.get("defer_loading")] == p.deferred_tool_names
    tools[-1]["mutated"] = True  # a caller changing what it got changes nothing later
    history = [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "a", "name": p.deferred_tool_names[0], "input": {}}],
        }
    ]
    for step in range(3):
        s.discover(p.deferred_tool_names[step : step + 2])
        assert json.dumps(s.surface(history).tools) == first
        s.begin_turn()
        assert json.dumps(s.surface([]).tools) == first


def test_the_client_search_tool_has_the_shape_openai_accepted():
    [recorded] = [
        t
        for t in cassette("test_openai_client_tool_search_streaming.yaml")[0]["request"]["parsed_body"]["tools"]
        if t["type"] == "tool_search"
    ]
    assert set(OPENAI_CLIENT_SEARCH_TOOL) == set(recorded)
    assert OPENAI_CLIENT_SEARCH_TOOL["execution"] == "client"
    ours, theirs = OPENAI_CLIENT_SEARCH_TOOL["parameters"], recorded["parameters"]
    assert (ours["type"], ours["required"], ours["additionalProperties"]) == (
        theirs["type"],
        theirs["required"],
        theirs["additionalProperties"],
    )
    assert {k: v["type"] for k, v in ours["properties"].items()} == {
        k: v["type"] for k, v in theirs["properties"].items()
    }


def test_unknown_flavours_are_refused():
    p = production_plan(strategy="openai")
    with pytest.raises(ValueError, match="hosted or client"):
        make_strategy("openai", p, "", specs_of(p), openai_search="server")
    with pytest.raises(ValueError, match="bm25 or regex"):
        make_strategy("anthropic", p, "", specs_of(p), anthropic_search="vector")
    with pytest.raises(ValidationError):
        Settings(anthropic_tool_search="vector")


async def test_the_flavour_comes_from_settings_and_stays_pinned_to_the_chat(env):
    provider = FakeProvider("anthropic", [text("One."), text("Two.")])
    s, _ = await open_chat(engine_for(env, provider, anthropic_tool_search="regex"), "anthropic", "anthropic")
    await s.send("one")
    await s.close()
    s2 = await engine_for(env, provider, anthropic_tool_search="bm25").open_chat(s.chat_id)
    await s2.send("two")
    first, second = provider.requests
    assert first.tools[-1]["type"] == "tool_search_tool_regex_20251119"
    assert json.dumps(second.tools) == json.dumps(first.tools) and second.system == first.system


async def test_a_chat_opened_before_flavours_existed_keeps_the_old_defaults(env):
    provider = FakeProvider("openai", [text("One."), text("Two.")])
    s, _ = await open_chat(engine_for(env, provider), "openai", "openai")
    await s.send("one")
    sources = s.chat().sources_dict()
    sources.pop("tool_search")
    s.store.update_chat(s.chat_id, sources=json.dumps(sources))
    s2 = await engine_for(env, provider, openai_tool_search="client").open_chat(s.chat_id)
    await s2.send("two")
    assert provider.requests[1].tools == provider.requests[0].tools and provider.requests[1].tools[-1] == {
        "type": "tool_search"
    }


# --- reading a search call's arguments ------------------------------------------------------------


@pytest.mark.parametrize(
    "arguments, queries, label",
    [
        ({"queries": ["a b", " ", "c"]}, ["a b", "c"], "a b | c"),
        ({"paths": ["mcp__fx__rate"]}, ["mcp__fx__rate"], "mcp__fx__rate"),
        ({"query": "weather", "limit": 5}, ["weather"], "weather"),
        ({"pattern": "weather|forecast", "limit": 10}, ["weather|forecast"], "weather|forecast"),
        ({"goal": "Find a weather tool."}, ["Find a weather tool."], "Find a weather tool."),
        ({"limit": 3}, [], '{"limit": 3}'),
        (None, [], ""),
    ],
)
def test_search_arguments_in_every_recorded_shape(arguments, queries, label):
    assert search_queries(arguments) == queries and search_label(arguments) == label


def test_pending_client_searches_are_read_from_a_stored_response():
    _, block = client_search("call_9", {"queries": ["x"]})
    hosted = {
        "type": "provider_item",
        "provider": "openai",
        "item": {"type": "tool_search_call", "id": "tsc_2", "call_id": None, "execution": "server"},
    }
    [found] = pending_client_searches([{"type": "text", "text": "hm"}, hosted, block])
    assert (found.id, found.input, found.executor) == ("call_9", {"queries": ["x"]}, "client")
