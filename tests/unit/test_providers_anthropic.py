"""The anthropic adapter against recorded real traffic (tests/fixtures/providers), at the wire level.

* pydantic-ai cassettes: what the adapter SENDS must equal the recorded request a correct client
  sent (model, max_tokens, tools with defer_loading and the server tool search tool, echoed
  server blocks, tool_reference results), and ``ResponseDone.content`` must be exactly the
  assistant content that the next recorded request echoes.
* vercel-ai chunks/json: what the adapter PARSES (server search, tool_reference expansion, the
  deferred-result case where the search result opens the next response).

The ``renamed`` variants rename the recorded tools to internal dotted names (``weather.get``)
throughout the recording, proving the wire-name mapping in both directions.
"""

from __future__ import annotations

import json

import pytest

from core.providers.anthropic import AnthropicProvider, cache_breakpoint
from core.providers.base import ModelRequest
from core.providers.wirenames import encode
from tests.provider_replay import (
    Recording,
    Replay,
    chunk_lines,
    collect,
    done,
    json_response,
    kinds,
    rename_lines,
    split_sessions,
    sse,
    sse_response,
    subset,
    text_of,
    user,
    vercel_json,
)

pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")

SENT_KEYS = ("model", "max_tokens", "system", "tools", "messages")  # stream / tool_choice are transport details


def provider(replay: Replay, **kw) -> AnthropicProvider:
    return AnthropicProvider("claude-sonnet-4-5", api_key="test-key", http_client=replay.client(), max_retries=0, **kw)


# --- pydantic-ai: native BM25 search, streamed, with the follow-up request ---------------------


@pytest.mark.parametrize("variant", ["plain", "renamed"])
async def test_native_search_streaming_sends_what_pydantic_ai_sent(variant):
    rec = Recording(
        "test_anthropic_native_tool_search_streaming.yaml",
        {"get_exchange_rate": "fx.get_exchange_rate", "stock_lookup": "mcp.stocks.lookup"}
        if variant == "renamed"
        else None,
    )
    replay = rec.replay()
    p = provider(replay, cache=False)  # pydantic-ai sent no cache_control; uncached, we send what it sent
    rate = rec.name("get_exchange_rate")
    tools = rec.tools(0, schema_key="input_schema")
    assert [t.get("defer_loading") for t in tools] == [True, True, None]
    messages = [user("What is the current USD to EUR exchange rate?")]
    request = ModelRequest(model="claude-sonnet-4-6", system="", tools=tools, messages=messages)
    events = await collect(p, request)

    assert subset(replay.bodies[0], SENT_KEYS) == subset(rec.requests[0], SENT_KEYS)
    [search] = kinds(events, "server_tool_use")
    assert (search.id, search.name, search.executor) == (
        "srvtoolu_01S5swZdBmTzLDVzwcT5LbHp",
        "tool_search_tool_bm25",
        "server",
    )
    assert search.input == {"query": "USD EUR exchange rate currency conversion"}
    [found] = kinds(events, "tool_search_result")
    assert found.tool_use_id == search.id and found.references == [rate]
    [call] = kinds(events, "tool_use")
    assert (call.id, call.name, call.input, call.raw_name) == (
        "toolu_01EFn5wTNBYA8Reni8rbmnHT",
        rate,
        {"from_currency": "USD", "to_currency": "EUR"},
        None,
    )
    assert text_of(events) == (
        "Let me search for a tool that can provide current exchange rate information."
        "I found the right tool! Let me fetch the current USD to EUR exchange rate for you."
    )
    first = done(events)
    assert first.stop_reason == "tool_use"
    assert (first.usage.input_tokens, first.usage.output_tokens) == (1591, 175)
    # The assistant turn, in engine shape, is exactly what the recorded follow-up echoes.
    assert first.content == rec.internal_view(rec.requests[1]["messages"][1]["content"])

    tool_result = rec.internal_view(rec.requests[1]["messages"][2])
    follow_up = request.model_copy(
        update={"messages": [*messages, {"role": "assistant", "content": first.content}, tool_result]}
    )
    events = await collect(p, follow_up)
    assert subset(replay.bodies[1], SENT_KEYS) == subset(rec.requests[1], SENT_KEYS)
    assert text_of(events).startswith("The current exchange rate is **1 USD = 0.92 EUR**.")
    assert done(events).stop_reason == "end_turn"
    assert (done(events).usage.input_tokens, done(events).usage.output_tokens) == (1007, 59)


# --- pydantic-ai: client-side search (a function tool answering with tool_reference blocks) -----


@pytest.mark.parametrize("variant", ["plain", "renamed"])
async def test_custom_callable_round_trip_sends_tool_references(variant):
    rec = Recording(
        "test_anthropic_custom_callable_round_trip.yaml",
        {
            "search_tools": "tool.search",
            "get_exchange_rate": "fx.get_exchange_rate",
            "get_weather": "weather.get",
            "stock_lookup": "mcp.stocks.lookup",
        }
        if variant == "renamed"
        else None,
    )
    replay = rec.replay()
    p = provider(replay, streaming=False, cache=False)  # non-streaming and uncached, as recorded
    tools = rec.tools(0, schema_key="input_schema")
    rate = rec.name("get_exchange_rate")

    messages = [user("What is the USD to EUR exchange rate?")]
    for step in range(len(rec.requests)):
        request = ModelRequest(model="claude-sonnet-4-5", system="", tools=tools, messages=messages)
        events = await collect(p, request)
        assert subset(replay.bodies[step], SENT_KEYS) == subset(rec.requests[step], SENT_KEYS), f"request {step}"
        turn = done(events)
        if step < len(rec.requests) - 1:
            # our echo is the recorded next request's assistant message; the engine's answer is its user message
            assistant, answer = rec.requests[step + 1]["messages"][-2:]
            assert turn.content == rec.internal_view(assistant["content"])
            messages = [*messages, {"role": "assistant", "content": turn.content}, rec.internal_view(answer)]
        if step == 0:
            [call] = kinds(events, "tool_use")
            assert call.name == rec.name("search_tools")
            assert call.input == {
                "queries": ["currency exchange rate USD EUR", "exchange rate converter", "foreign exchange"]
            }
            # the search answer carries tool_reference blocks (internal names) inside a tool_result
            assert messages[-1]["content"][0]["content"] == [{"tool_name": rate, "type": "tool_reference"}]
        if step == 1:
            [call] = kinds(events, "tool_use")
            assert (call.name, call.input) == (rate, {"from_currency": "USD", "to_currency": "EUR"})
        if step == 2:
            assert turn.stop_reason == "end_turn"
            assert text_of(events).startswith("The current exchange rate is **1 USD = 0.92 EUR**.")
    wire_ref = replay.bodies[1]["messages"][2]["content"][0]["content"][0]
    assert wire_ref == {"type": "tool_reference", "tool_name": encode(rate)}


# --- vercel-ai: server search then a client call in one response -------------------------------

SEARCH_FACTS = {
    "bm25": dict(
        chunks="anthropic-tool-search-bm25.1.chunks.txt",
        json="anthropic-tool-search-bm25.1.json",
        search_tool={"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"},
        found="get_weather",
        streamed=dict(
            search=("srvtoolu_01Gj33J3YUAAxF9TWRAThxtu", {"query": "weather forecast current conditions"}),
            call=("toolu_019nRrfqqXcU5NPTUSYfEMAY", {"location": "San Francisco, CA"}),
            texts=[
                "I'll search for a weather-related tool to help you get the weather information for San Francisco.",
                "Great! I found a weather tool. Let me get the current weather for San Francisco.",
            ],
            usage=(1630, 158),
            answer=("The current weather in San Francisco, CA is:", (1040, 41)),
        ),
        whole=dict(
            search=("srvtoolu_011Jcb838xqvZyWwDt7bWqAz", {"query": "weather current conditions San Francisco"}),
            call=("toolu_01PFQG18bVLaXcEaCxTZtX4G", {"location": "San Francisco, CA"}),
            texts=[
                "I'll search for a weather-related tool to help you get the current weather in San Francisco.",
                "Great! I found a weather tool. Let me get the current weather in San Francisco for you.",
            ],
            usage=(1631, 161),
        ),
    ),
    "regex": dict(
        chunks="anthropic-tool-search-regex.1.chunks.txt",
        json="anthropic-tool-search-regex.1.json",
        search_tool={"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"},
        found="get_temp_data",
        streamed=dict(
            search=(
                "srvtoolu_01TFsKhwiJYqVMitK2XGtH87",
                {"pattern": "weather|SF|San Francisco|forecast|temperature|climate", "limit": 10},
            ),
            call=("toolu_01UmPwkecewaEpMupy2ywk8b", {"location": "San Francisco, CA"}),
            texts=["Great! I found a weather tool. Let me get the current weather data for San Francisco."],
            usage=(1681, 163),
            answer=("Here's the current weather data for San Francisco:", (1071, 67)),
        ),
        whole=dict(
            search=(
                "srvtoolu_01SACvPAnp6ucMJsstB5qb3f",
                {"pattern": "weather|SF|San Francisco|forecast|temperature|climate", "limit": 10},
            ),
            call=("toolu_01X4r989CAhzqnFqDJn1gVvp", {"location": "San Francisco, CA", "unit": "fahrenheit"}),
            texts=[
                "I found a tool to get temperature data! Let me use it to get the weather information "
                "for San Francisco."
            ],
            usage=(1676, 184),
        ),
    ),
}


def weather_tools(facts: dict, internal: str) -> list[dict]:
    return [
        facts["search_tool"],
        {
            "name": "get_time",
            "description": "Get the current time",
            "input_schema": {"type": "object"},
            "defer_loading": True,
        },
        {
            "name": internal,
            "description": "Get weather data for a location",
            "input_schema": {"type": "object", "properties": {"location": {"type": "string"}}},
            "defer_loading": True,
        },
    ]


def check_search_turn(events, facts: dict, mode: str, internal: str, search_name: str) -> None:
    want = facts[mode]
    [search] = kinds(events, "server_tool_use")
    assert (search.id, search.name, search.input) == (want["search"][0], search_name, want["search"][1])
    [found] = kinds(events, "tool_search_result")
    assert (found.tool_use_id, found.references) == (want["search"][0], [internal])
    [call] = kinds(events, "tool_use")
    assert (call.id, call.name, call.input, call.raw_name) == (want["call"][0], internal, want["call"][1], None)
    turn = done(events)
    assert turn.stop_reason == "tool_use"
    assert (turn.usage.input_tokens, turn.usage.output_tokens) == want["usage"]
    assert [b["text"] for b in turn.content if b["type"] == "text"] == want["texts"]
    assert text_of(events) == "".join(want["texts"])
    # search call, its result and the client call, in order, internal names inside the result
    order = [b["type"] for b in turn.content if b["type"] != "text"]
    assert order == ["server_tool_use", "tool_search_tool_result", "tool_use"]
    result = next(b for b in turn.content if b["type"] == "tool_search_tool_result")
    assert result["content"]["tool_references"] == [{"type": "tool_reference", "tool_name": internal}]


@pytest.mark.parametrize("variant", ["plain", "renamed"])
@pytest.mark.parametrize("kind", ["bm25", "regex"])
async def test_search_then_call_streamed_and_echoed(kind, variant):
    facts = SEARCH_FACTS[kind]
    internal = "weather.current_conditions" if variant == "renamed" else facts["found"]
    to_wire = {facts["found"]: encode(internal)} if variant == "renamed" else {}
    sessions = split_sessions(rename_lines(chunk_lines(facts["chunks"]), to_wire), "message_stop")
    replay = Replay(sse_response(sse(s)) for s in sessions)
    p = provider(replay)
    messages = [user("What is the weather in San Francisco?")]
    request = ModelRequest(
        model="claude-sonnet-4-5", system="", tools=weather_tools(facts, internal), messages=messages
    )
    events = await collect(p, request)
    check_search_turn(events, facts, "streamed", internal, facts["search_tool"]["name"])

    sent_tools = replay.bodies[0]["tools"]
    assert sent_tools[0] == facts["search_tool"]
    assert sent_tools[2]["name"] == encode(internal) and sent_tools[2]["defer_loading"] is True

    turn = done(events)
    call = kinds(events, "tool_use")[0]
    answer = {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": call.id,
                "content": [{"type": "text", "text": "64°F, partly cloudy"}],
            }
        ],
    }
    events = await collect(
        p, request.model_copy(update={"messages": [*messages, {"role": "assistant", "content": turn.content}, answer]})
    )
    echoed = replay.bodies[1]["messages"][1]
    assert echoed["role"] == "assistant"
    search_id, search_input = facts["streamed"]["search"]
    assert [b for b in echoed["content"] if b["type"] != "text"] == [
        {"type": "server_tool_use", "id": search_id, "name": facts["search_tool"]["name"], "input": search_input},
        {
            "type": "tool_search_tool_result",
            "tool_use_id": search_id,
            "content": {
                "type": "tool_search_tool_search_result",
                "tool_references": [{"type": "tool_reference", "tool_name": encode(internal)}],
            },
        },
        {"type": "tool_use", "id": call.id, "name": encode(internal), "input": call.input},
    ]
    # a tool_result in wire form is the engine's block as is, plus the history cache breakpoint
    marked = {**answer["content"][0], "cache_control": {"type": "ephemeral"}}
    assert replay.bodies[1]["messages"][2] == {"role": "user", "content": [marked]}
    assert all("cache_control" not in b for m in replay.bodies[1]["messages"][:2] for b in m["content"])
    start, usage = facts["streamed"]["answer"]
    assert text_of(events).startswith(start)
    assert done(events).stop_reason == "end_turn"
    assert (done(events).usage.input_tokens, done(events).usage.output_tokens) == usage


@pytest.mark.parametrize("kind", ["bm25", "regex"])
async def test_search_then_call_whole_response(kind):
    facts = SEARCH_FACTS[kind]
    replay = Replay([json_response(vercel_json(facts["json"]))])
    p = provider(replay, streaming=False)
    request = ModelRequest(
        model="claude-sonnet-4-5",
        system="",
        tools=weather_tools(facts, facts["found"]),
        messages=[user("What is the weather in San Francisco?")],
    )
    check_search_turn(await collect(p, request), facts, "whole", facts["found"], facts["search_tool"]["name"])


# --- vercel-ai: the deferred-result case --------------------------------------------------------

DEFERRED = {
    "bm25": dict(
        chunks="anthropic-tool-search-deferred-bm25.chunks.txt",
        json="anthropic-tool-search-deferred-bm25.2.json",
        search_tool={"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"},
        read_id="toolu_01U8pzAHj2vNdPCA2Kf8JjeN",
        search=("srvtoolu_01FjZe9o4YXXJjGxLmfj44Rf", {"query": "add bullet point insert text editor", "limit": 5}),
        refs=["executeEditorOperation"],
        edit_id="toolu_01QoRrvXNv6w4vZSyo9cnxP2",
        usages=[(879, 177), (1398, 213)],
        whole=(
            "srvtoolu_01Daym2FbLXTL2hg6bVwCcoj",
            ["executeEditorOperation"],
            "toolu_019oFKxH7xzoKZtBX1mBGHeJ",
            (1398, 213),
        ),
    ),
    "regex": dict(
        chunks="anthropic-tool-search-deferred-regex.chunks.txt",
        json="anthropic-tool-search-deferred-regex.2.json",
        search_tool={"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"},
        read_id="toolu_01WPkY6CkyJnFsaCqY7SZ9FX",
        search=("srvtoolu_01H4HgrFsi9xizPtvnx1Tm7D", {"pattern": "add|insert|bullet|create", "limit": 10}),
        refs=["readNoteTree", "executeEditorOperation"],
        edit_id="toolu_01UFHf8D27JBYu9FmrcjJk1p",
        usages=[(904, 175), (1519, 211)],
        whole=(
            "srvtoolu_01WD1PoedV47LMZdJrsVNZtM",
            ["readNoteTree", "executeEditorOperation"],
            "toolu_01Vif37vPguXdx5yxixnpvpM",
            (1520, 203),
        ),
    ),
}
NOTE_ID = "d10aa585-982b-4bd9-984e-420f9b3717f7"


def note_tools(facts: dict, read: str, edit: str) -> list[dict]:
    return [
        facts["search_tool"],
        {"name": read, "description": "Read a note's tree", "input_schema": {"type": "object"}},
        {"name": edit, "description": "Edit a note", "input_schema": {"type": "object"}, "defer_loading": True},
    ]


@pytest.mark.parametrize("variant", ["plain", "renamed"])
@pytest.mark.parametrize("kind", ["bm25", "regex"])
async def test_deferred_search_result_opens_the_next_response(kind, variant):
    facts = DEFERRED[kind]
    read, edit = (
        ("notes.read_tree", "notes.execute_editor_operation")
        if variant == "renamed"
        else ("readNoteTree", "executeEditorOperation")
    )
    to_wire = {"readNoteTree": encode(read), "executeEditorOperation": encode(edit)} if variant == "renamed" else {}
    internal = {"readNoteTree": read, "executeEditorOperation": edit}
    sessions = split_sessions(rename_lines(chunk_lines(facts["chunks"]), to_wire), "message_stop")
    assert len(sessions) == 3
    replay = Replay(sse_response(sse(s)) for s in sessions)
    p = provider(replay)
    messages = [user("Add a bullet point 'bye' after 'hi' in my note.")]
    request = ModelRequest(model="claude-sonnet-4-5", system="", tools=note_tools(facts, read, edit), messages=messages)

    # 1: a client tool_use and a server_tool_use in one turn; no search result yet
    events = await collect(p, request)
    first = done(events)
    [read_call] = kinds(events, "tool_use")
    assert (read_call.id, read_call.name, read_call.input) == (facts["read_id"], read, {"noteId": NOTE_ID})
    [search] = kinds(events, "server_tool_use")
    assert (search.id, search.input) == facts["search"]
    assert kinds(events, "tool_search_result") == []
    assert [b["type"] for b in first.content] == ["text", "tool_use", "server_tool_use"]
    assert (first.stop_reason, (first.usage.input_tokens, first.usage.output_tokens)) == (
        "tool_use",
        facts["usages"][0],
    )

    # 2: history echoes the server block without its result; the result opens this response
    tree = {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": read_call.id,
                "content": [{"type": "text", "text": '[{"type": "bulletedListItem", "text": "hi"}]'}],
            }
        ],
    }
    messages = [*messages, {"role": "assistant", "content": first.content}, tree]
    events = await collect(p, request.model_copy(update={"messages": messages}))
    echoed = replay.bodies[1]["messages"][1]["content"]
    assert [b["type"] for b in echoed] == ["text", "tool_use", "server_tool_use"]
    assert echoed[1]["name"] == encode(read)
    assert echoed[2] == {
        "type": "server_tool_use",
        "id": facts["search"][0],
        "name": facts["search_tool"]["name"],
        "input": facts["search"][1],
    }
    second = done(events)
    non_text = [e.kind for e in events if e.kind not in ("text_delta", "usage", "done")]
    assert non_text == ["tool_search_result", "tool_use"]
    [found] = kinds(events, "tool_search_result")
    assert found.tool_use_id == facts["search"][0]  # answers the server_tool_use of the previous response
    assert found.references == [internal[r] for r in facts["refs"]]
    [edit_call] = kinds(events, "tool_use")
    assert (edit_call.id, edit_call.name) == (facts["edit_id"], edit)
    assert edit_call.input["noteId"] == NOTE_ID and edit_call.input["operations"][0]["text"] == "bye"
    assert second.content[0]["type"] == "tool_search_tool_result"
    assert (second.usage.input_tokens, second.usage.output_tokens) == facts["usages"][1]

    # 3: both turns echoed; the second opens with the search result, in wire names
    done_edit = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": edit_call.id, "content": [{"type": "text", "text": "ok"}]}],
    }
    messages = [*messages, {"role": "assistant", "content": second.content}, done_edit]
    events = await collect(p, request.model_copy(update={"messages": messages}))
    sent = replay.bodies[2]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user", "assistant", "user"]
    assert sent[3]["content"][0] == {
        "type": "tool_search_tool_result",
        "tool_use_id": facts["search"][0],
        "content": {
            "type": "tool_search_tool_search_result",
            "tool_references": [{"type": "tool_reference", "tool_name": encode(internal[r])} for r in facts["refs"]],
        },
    }
    assert sent[3]["content"][-1]["name"] == encode(edit)
    assert done(events).stop_reason == "end_turn"
    assert text_of(events).startswith("Great! I")


@pytest.mark.parametrize("kind", ["bm25", "regex"])
async def test_deferred_search_result_whole_response(kind):
    facts = DEFERRED[kind]
    search_id, refs, edit_id, usage = facts["whole"]
    replay = Replay([json_response(vercel_json(facts["json"]))])
    p = provider(replay, streaming=False)
    request = ModelRequest(
        model="claude-sonnet-4-5",
        system="",
        messages=[user("Add 'bye'.")],
        tools=note_tools(facts, "readNoteTree", "executeEditorOperation"),
    )
    events = await collect(p, request)
    assert [e.kind for e in events if e.kind not in ("text_delta", "usage", "done")] == [
        "tool_search_result",
        "tool_use",
    ]
    [found] = kinds(events, "tool_search_result")
    assert (found.tool_use_id, found.references) == (search_id, refs)
    [call] = kinds(events, "tool_use")
    assert (call.id, call.name) == (edit_id, "executeEditorOperation")
    turn = done(events)
    assert [b["type"] for b in turn.content] == ["tool_search_tool_result", "text", "tool_use"]
    assert (turn.usage.input_tokens, turn.usage.output_tokens) == usage


# --- prompt caching and usage -------------------------------------------------------------------


def test_cache_breakpoint_skips_deferred_tools():
    tools = [
        {"name": "a"},
        {"name": "b"},
        {"name": "c", "defer_loading": True},
        {"name": "d", "defer_loading": True},
        {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"},
    ]
    assert cache_breakpoint(tools, 4) == 4
    assert cache_breakpoint(tools, 3) == 1
    assert cache_breakpoint(tools, 99) == 4
    assert cache_breakpoint(tools, None) is None
    assert cache_breakpoint([{"name": "x", "defer_loading": True}], 0) is None


async def test_cache_control_on_system_and_stable_prefix():
    facts = SEARCH_FACTS["bm25"]
    sessions = split_sessions(chunk_lines(facts["chunks"]), "message_stop")
    replay = Replay([sse_response(sse(sessions[0]))])
    tools = [
        {"name": "note", "description": "Take a note", "input_schema": {"type": "object"}},
        *weather_tools(facts, "get_weather"),
    ]
    request = ModelRequest(
        model="claude-sonnet-4-5",
        system="You are deferchat.",
        tools=tools,
        messages=[user("Weather?")],
        cache_prefix_tools=len(tools) - 1,
    )
    await collect(provider(replay), request)
    sent = replay.bodies[0]
    assert sent["system"] == [{"type": "text", "text": "You are deferchat.", "cache_control": {"type": "ephemeral"}}]
    marked = [i for i, t in enumerate(sent["tools"]) if "cache_control" in t]
    assert marked == [1]  # the search tool: the deferred tools after it are not rendered into the prefix
    assert sent["tools"][1] == {**facts["search_tool"], "cache_control": {"type": "ephemeral"}}
    assert sent["messages"][-1]["content"][-1] == {
        "type": "text",
        "text": "Weather?",
        "cache_control": {"type": "ephemeral"},
    }
    assert request.messages[-1]["content"][-1] == {"type": "text", "text": "Weather?"}  # history itself untouched
    params, _ = AnthropicProvider("m", api_key="k", cache=False).build_params(request)
    assert params["system"] == "You are deferchat." and all("cache_control" not in t for t in params["tools"])
    assert "cache_control" not in params["messages"][-1]["content"][-1]


def test_history_breakpoint_lands_on_the_last_cacheable_block():
    messages = [
        user("a"),
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "t", "name": "x.y", "input": {}},
                {"type": "redacted_thinking", "data": "..."},
            ],
        },
    ]
    params, _ = AnthropicProvider("m", api_key="k").build_params(ModelRequest(model="m", system="", messages=messages))
    assert params["messages"][0]["content"][0] == {"type": "text", "text": "a"}
    assert params["messages"][1]["content"] == [
        {"type": "tool_use", "id": "t", "name": "x__y", "input": {}, "cache_control": {"type": "ephemeral"}},
        {"type": "redacted_thinking", "data": "..."},
    ]


async def test_usage_reports_cache_reads_and_writes():
    lines = split_sessions(chunk_lines(SEARCH_FACTS["bm25"]["chunks"]), "message_stop")[0]
    patched = []
    for line in lines:  # the recorded traffic had a cold cache; give it a warm one
        event = json.loads(line)
        if event["type"] == "message_start":
            event["message"]["usage"].update(cache_read_input_tokens=1200, cache_creation_input_tokens=300)
        if event["type"] == "message_delta":
            event["usage"].update(cache_read_input_tokens=1200, cache_creation_input_tokens=300)
        patched.append(json.dumps(event))
    replay = Replay([sse_response(sse(patched))])
    events = await collect(
        provider(replay),
        ModelRequest(
            model="m", system="", messages=[user("hi")], tools=weather_tools(SEARCH_FACTS["bm25"], "get_weather")
        ),
    )
    [early, usage] = kinds(events, "usage")  # message_start's (so far: a server search adds more), then the whole
    assert (early.input_tokens, early.cache_read_input_tokens, early.cache_creation_input_tokens) == (699, 1200, 300)
    assert usage.model_dump() == {
        "kind": "usage",
        "input_tokens": 1630,
        "output_tokens": 158,
        "cache_read_input_tokens": 1200,
        "cache_creation_input_tokens": 300,
    }
    assert done(events).usage == usage


def test_history_blocks_of_other_providers_are_not_sent():
    request = ModelRequest(
        model="m",
        system="",
        tools=[],
        messages=[
            user("hi"),
            {
                "role": "assistant",
                "content": [
                    {"type": "provider_item", "provider": "openai", "item": {"type": "reasoning"}},
                    {"type": "text", "text": "hello"},
                    {"type": "tool_use", "id": "t1", "name": "mcp.mail.send", "input": {}, "openai": {"id": "fc_1"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "is_error": True,
                        "content": [
                            {"type": "text", "text": "denied"},
                            {"type": "image", "mime_type": "image/png", "bytes": 3},
                            {"type": "resource_link", "uri": "file:///a.txt", "name": "a"},
                        ],
                    }
                ],
            },
        ],
    )
    params, _ = AnthropicProvider("m", api_key="k", cache=False).build_params(request)
    assert params["messages"][1] == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "hello"},
            {"type": "tool_use", "id": "t1", "name": "mcp__mail__send", "input": {}},
        ],
    }
    assert params["messages"][2]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "t1",
        "is_error": True,
        "content": [
            {"type": "text", "text": "denied"},
            {"type": "text", "text": "[image image/png, 3 bytes]"},
            {"type": "text", "text": "[resource link a: file:///a.txt]"},
        ],
    }


async def test_an_invented_tool_name_is_reported_raw():
    lines = split_sessions(
        rename_lines(chunk_lines(SEARCH_FACTS["bm25"]["chunks"]), {"get_weather": "get__forecast"}), "message_stop"
    )[0]
    replay = Replay([sse_response(sse(lines))])
    events = await collect(
        provider(replay),
        ModelRequest(
            model="m", system="", messages=[user("hi")], tools=weather_tools(SEARCH_FACTS["bm25"], "get_weather")
        ),
    )
    [call] = kinds(events, "tool_use")
    assert (call.name, call.raw_name) == ("get.forecast", "get__forecast")
