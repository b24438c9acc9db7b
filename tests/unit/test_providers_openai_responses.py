"""The openai (Responses API) adapter against recorded real traffic, at the wire level.

* pydantic-ai cassettes: hosted search and client-executed search; what the adapter SENDS is
  compared with the recorded request bodies (tools with defer_loading, the tool_search tool,
  echoed tool_search_call / tool_search_output items, function calls with their namespace).
* vercel-ai chunks/json: what the adapter PARSES, hosted and client-executed.
"""

from __future__ import annotations

import pytest

from core.providers.base import ModelRequest
from core.providers.openai_responses import OpenAIResponsesProvider, is_reasoning_model
from core.providers.wirenames import encode
from tests.provider_replay import (
    Recording,
    Replay,
    chunk_lines,
    collect,
    done,
    json_response,
    kinds,
    rename,
    rename_lines,
    sse,
    sse_response,
    subset,
    text_of,
    user,
    vercel_json,
)

SENT_KEYS = ("model", "instructions", "input", "tools", "include")  # stream, tool_choice, max_output_tokens aside


def provider(replay: Replay, **kw) -> OpenAIResponsesProvider:
    return OpenAIResponsesProvider("gpt-5.4", api_key="test-key", http_client=replay.client(), max_retries=0, **kw)


RENAMES = {
    "get_exchange_rate": "fx.get_exchange_rate",
    "stock_lookup": "mcp.stocks.lookup",
    "get_weather": "weather.get",
}


# --- pydantic-ai: hosted tool search ------------------------------------------------------------


@pytest.mark.parametrize("variant", ["plain", "renamed"])
async def test_hosted_search_round_trip(variant):
    rec = Recording("test_openai_native_tool_search_streaming.yaml", RENAMES if variant == "renamed" else None)
    recorded, replay = rec.requests, rec.replay()
    p = provider(replay)
    rate = rec.name("get_exchange_rate")
    tools = rec.tools(0, schema_key="parameters")
    assert tools[0] == {"type": "tool_search"}
    messages = [user("What is the current USD to EUR exchange rate?")]
    request = ModelRequest(model="gpt-5.4", system="", tools=tools, messages=messages)

    events = await collect(p, request)
    assert subset(replay.bodies[0], SENT_KEYS) == subset(recorded[0], SENT_KEYS)
    [search] = kinds(events, "server_tool_use")
    assert (search.id, search.name, search.executor) == (
        "tsc_060f468708eb0ff90069f3e2f1da248193a424897296815e56",
        "tool_search",
        "server",
    )
    assert search.input == {"paths": [encode(rate)]}
    [found] = kinds(events, "tool_search_result")
    assert (found.tool_use_id, found.references) == (search.id, [rate])
    [call] = kinds(events, "tool_use")
    assert (call.id, call.name, call.input) == (
        "call_CeXueyTqEJ1rgm84BHSwNPz8",
        rate,
        {"from_currency": "USD", "to_currency": "EUR"},
    )
    first = done(events)
    assert first.stop_reason == "tool_use"
    assert (first.usage.input_tokens, first.usage.output_tokens, first.usage.cache_read_input_tokens) == (600, 47, 0)
    assert [b["type"] for b in first.content] == ["provider_item", "provider_item", "tool_use"]
    assert [b["item"]["type"] for b in first.content[:2]] == ["tool_search_call", "tool_search_output"]

    answer = {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": call.id, "content": [{"type": "text", "text": "1 USD = 0.92 EUR"}]}
        ],
    }
    events = await collect(
        p, request.model_copy(update={"messages": [*messages, {"role": "assistant", "content": first.content}, answer]})
    )
    sent, want = replay.bodies[1], recorded[1]
    assert subset(sent, ("model", "tools", "include")) == subset(want, ("model", "tools", "include"))
    # the function call is echoed exactly as recorded (id, namespace, the model's own argument string)
    assert sent["input"][0] == want["input"][0]
    assert sent["input"][-2:] == want["input"][-2:]
    assert want["input"][-2]["namespace"] == encode(rate)
    # pydantic-ai rebuilt the search call ({"queries"}, call_id = id) and dropped the search output;
    # we echo both output items verbatim, as the API returned them.
    echoed_call, echoed_output = sent["input"][1:3]
    assert {k: echoed_call[k] for k in ("type", "id", "execution", "status")} == {
        k: want["input"][1][k] for k in ("type", "id", "execution", "status")
    }
    assert echoed_call == first.content[0]["item"] and echoed_output == first.content[1]["item"]
    assert echoed_output["type"] == "tool_search_output" and echoed_output["tools"][0]["name"] == encode(rate)
    assert text_of(events) == "1 USD = 0.92 EUR"
    assert done(events).stop_reason == "end_turn"
    # the recorded message's phase stays on its text, to be resent with it
    assert done(events).content == [{"type": "text", "text": "1 USD = 0.92 EUR", "openai": {"phase": "final_answer"}}]


# --- pydantic-ai: client-executed tool search ---------------------------------------------------


@pytest.mark.parametrize("variant", ["plain", "renamed"])
async def test_client_search_round_trip_matches_recorded_requests(variant):
    rec = Recording("test_openai_client_tool_search_streaming.yaml", RENAMES if variant == "renamed" else None)
    recorded, replay = rec.requests, rec.replay()
    p = provider(replay)
    rate = rec.name("get_exchange_rate")
    tools = rec.tools(0, schema_key="parameters")
    assert tools[0]["type"] == "tool_search" and tools[0]["execution"] == "client"
    messages = [user("What is the current exchange rate from USD to EUR?")]
    system = recorded[0]["instructions"]

    # 1: the model asks the client to search
    events = await collect(p, ModelRequest(model="gpt-5.4", system=system, tools=tools, messages=messages))
    assert subset(replay.bodies[0], SENT_KEYS) == subset(recorded[0], SENT_KEYS)
    [search] = kinds(events, "server_tool_use")
    assert (search.id, search.name, search.executor) == ("call_HoZLyVrNA5gX9RcfrRNI733g", "tool_search", "client")
    assert search.input == {
        "queries": ["exchange rate currency converter USD EUR current", "foreign exchange USD to EUR live rate"]
    }
    first = done(events)
    assert first.stop_reason == "tool_use"  # the engine owes an answer
    # 2: the engine answers with tool_reference blocks; the adapter sends a tool_search_output
    answer = {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": search.id,
                "content": [{"type": "tool_reference", "tool_name": rate}],
            }
        ],
    }
    messages = [*messages, {"role": "assistant", "content": first.content}, answer]
    events = await collect(p, ModelRequest(model="gpt-5.4", system=system, tools=tools, messages=messages))
    assert subset(replay.bodies[1], SENT_KEYS) == subset(recorded[1], SENT_KEYS)
    [call] = kinds(events, "tool_use")
    assert (call.id, call.name, call.input) == (
        "call_gkRScKqY5kWYzIi8VeJfbRp4",
        rate,
        {"from_currency": "USD", "to_currency": "EUR"},
    )
    second = done(events)
    assert second.content[0]["openai"] == {
        "id": "fc_05ed6c8b322854d8006a024b54762c8196a2c818225078288b",
        "namespace": encode(rate),
        "arguments": '{"from_currency":"USD","to_currency":"EUR"}',
    }
    # 3: the function result; the whole history matches the recorded request
    result = {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": call.id, "content": [{"type": "text", "text": "1 USD = 0.92 EUR"}]}
        ],
    }
    messages = [*messages, {"role": "assistant", "content": second.content}, result]
    events = await collect(p, ModelRequest(model="gpt-5.4", system=system, tools=tools, messages=messages))
    assert subset(replay.bodies[2], SENT_KEYS) == subset(recorded[2], SENT_KEYS)
    assert text_of(events) == "1 USD = 0.92 EUR."
    assert (done(events).stop_reason, done(events).usage.input_tokens) == ("end_turn", 477)


# --- vercel-ai: hosted search, streamed and whole ---------------------------------------------

VERCEL_TOOLS = [
    {
        "name": "get_weather",
        "description": "Get the current weather at a specific location",
        "input_schema": {"type": "object", "properties": {"location": {"type": "string"}, "unit": {"type": "string"}}},
        "defer_loading": True,
    },
    {
        "name": "search_files",
        "description": "Search through files in the workspace",
        "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}},
        "defer_loading": True,
    },
]
SF = {"location": "San Francisco, CA", "unit": "fahrenheit"}


@pytest.mark.parametrize("variant", ["plain", "renamed"])
@pytest.mark.parametrize("mode", ["chunks", "json"])
async def test_hosted_search_parsed(mode, variant):
    weather = "weather.get" if variant == "renamed" else "get_weather"
    to_wire = {"get_weather": encode(weather)} if variant == "renamed" else {}
    if mode == "chunks":
        replay = Replay([sse_response(sse(rename_lines(chunk_lines("openai-tool-search.1.chunks.txt"), to_wire)))])
        ids = ("tsc_08a14073c7135dc10069aa686296c88190bff77ad137e79d59", "call_pddfxhfOx4gY56zn4vIIEbFp")
    else:
        replay = Replay([json_response(rename(vercel_json("openai-tool-search.1.json"), to_wire))])
        ids = ("tsc_04bd69550b37ba260069aa689605cc8190bd2d9bf1199fa630", "call_ytqozXvUXG8NN1b0IODxzUaE")
    tools = [{"type": "tool_search"}, {**VERCEL_TOOLS[0], "name": weather}, VERCEL_TOOLS[1]]
    events = await collect(
        provider(replay, streaming=mode == "chunks"),
        ModelRequest(model="gpt-5.4", system="", tools=tools, messages=[user("Weather in SF?")]),
    )
    sent = replay.bodies[0]
    assert sent["tools"][0] == {"type": "tool_search"}
    assert sent["tools"][1] == {
        "type": "function",
        "name": encode(weather),
        "defer_loading": True,
        "description": VERCEL_TOOLS[0]["description"],
        "parameters": VERCEL_TOOLS[0]["input_schema"],
    }
    [search] = kinds(events, "server_tool_use")
    assert (search.id, search.executor, search.input) == (ids[0], "server", {"paths": [encode(weather)]})
    [found] = kinds(events, "tool_search_result")
    assert (found.tool_use_id, found.references) == (ids[0], [weather])
    [call] = kinds(events, "tool_use")
    assert (call.id, call.name, call.input, call.raw_name) == (ids[1], weather, SF, None)
    turn = done(events)
    assert turn.content[2]["openai"]["namespace"] == encode(weather)
    assert (turn.stop_reason, turn.usage.input_tokens, turn.usage.output_tokens) == ("tool_use", 640, 46)


# --- vercel-ai: client-executed search across two responses ------------------------------------

CLIENT_SEARCH_TOOL = {
    "type": "tool_search",
    "execution": "client",
    "description": "Search for available tools based on what the user needs.",
    "parameters": {
        "type": "object",
        "properties": {"goal": {"type": "string"}},
        "required": ["goal"],
        "additionalProperties": False,
    },
}


@pytest.mark.parametrize("mode", ["chunks", "json"])
async def test_client_search_parsed_and_answered(mode):
    if mode == "chunks":
        replay = Replay(
            [
                sse_response(sse(chunk_lines(name)))
                for name in ("openai-client-tool-search.1.chunks.txt", "openai-client-tool-search.2.chunks.txt")
            ]
        )
        ids = ("call_RWTIIVfxsJW9fecsg6fy23Dy", "call_Q7pq6EfVGRnauPLWSSYBGJ1l")
        goal = "Find a tool that can provide current weather information for San Francisco."
    else:
        replay = Replay(
            [
                json_response(vercel_json(name))
                for name in ("openai-client-tool-search.1.json", "openai-client-tool-search.2.json")
            ]
        )
        ids = ("call_AEvXZ1rvYpxHh8QZb7wGlTGH", "call_heVrRaKZEJbsRvHvaEf5BLUI")
        goal = "Find a tool to get current weather for San Francisco"
    p = provider(replay, streaming=mode == "chunks")
    tools = [*VERCEL_TOOLS, CLIENT_SEARCH_TOOL]
    messages = [user("What is the weather in San Francisco?")]
    events = await collect(p, ModelRequest(model="gpt-5.4", system="", tools=tools, messages=messages))
    assert replay.bodies[0]["tools"][2] == CLIENT_SEARCH_TOOL
    [search] = kinds(events, "server_tool_use")
    assert (search.id, search.executor, search.input) == (ids[0], "client", {"goal": goal})
    assert kinds(events, "tool_search_result") == [] and kinds(events, "tool_use") == []
    first = done(events)
    assert first.stop_reason == "tool_use"
    assert first.content == [{"type": "provider_item", "provider": "openai", "item": first.content[0]["item"]}]

    answer = {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": search.id,
                "content": [{"type": "tool_reference", "tool_name": "get_weather"}],
            }
        ],
    }
    events = await collect(
        p,
        ModelRequest(
            model="gpt-5.4",
            system="",
            tools=tools,
            messages=[*messages, {"role": "assistant", "content": first.content}, answer],
        ),
    )
    sent = replay.bodies[1]["input"]
    assert sent[1] == first.content[0]["item"]
    assert sent[2] == {
        "type": "tool_search_output",
        "call_id": ids[0],
        "execution": "client",
        "status": "completed",
        "tools": [replay.bodies[1]["tools"][0]],
    }
    [call] = kinds(events, "tool_use")
    assert (call.id, call.name, call.input) == (ids[1], "get_weather", SF)
    assert done(events).stop_reason == "tool_use"


# --- request shapes -----------------------------------------------------------------------------


def test_namespaces_and_reasoning_items_and_mixed_history():
    tools = [
        {
            "type": "namespace",
            "name": "gmail.work",
            "description": "Work mail",
            "tools": [
                {
                    "name": "mcp.gmail_work.send_message",
                    "description": "Send",
                    "defer_loading": True,
                    "input_schema": {"type": "object"},
                }
            ],
        },
        {"type": "tool_search"},
    ]
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "opaque"}
    messages = [
        user("mail bob"),
        {
            "role": "assistant",
            "content": [
                {"type": "provider_item", "provider": "openai", "item": reasoning},
                {"type": "provider_item", "provider": "other", "item": {"type": "x"}},
                {"type": "server_tool_use", "id": "srv", "name": "tool_search_tool_bm25", "input": {}},
                {"type": "text", "text": "Sending."},
                {"type": "tool_use", "id": "c1", "name": "mcp.gmail_work.send_message", "input": {"to": "bob"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": "sent"},
                {"type": "text", "text": "thanks"},
                {"type": "text", "text": "bye"},
            ],
        },
    ]
    params, _ = OpenAIResponsesProvider("gpt-5.4", api_key="k").build_params(
        ModelRequest(model="gpt-5.4", system="be brief", tools=tools, messages=messages)
    )
    assert params["tools"][0] == {
        "type": "namespace",
        "name": "gmail__work",
        "description": "Work mail",
        "tools": [
            {
                "type": "function",
                "name": "mcp__gmail_work__send_message",
                "description": "Send",
                "parameters": {"type": "object"},
                "defer_loading": True,
            }
        ],
    }
    assert params["instructions"] == "be brief" and params["include"] == ["reasoning.encrypted_content"]
    assert params["input"] == [
        {"role": "user", "content": "mail bob"},
        reasoning,
        {"role": "assistant", "content": "Sending."},
        {
            "type": "function_call",
            "call_id": "c1",
            "name": "mcp__gmail_work__send_message",
            "arguments": '{"to":"bob"}',
        },
        {"type": "function_call_output", "call_id": "c1", "output": "sent"},
        {"role": "user", "content": [{"type": "input_text", "text": "thanks"}, {"type": "input_text", "text": "bye"}]},
    ]
    plain, _ = OpenAIResponsesProvider("gpt-4.1", api_key="k").build_params(
        ModelRequest(model="gpt-4.1", system="", messages=[user("hi")])
    )
    assert "include" not in plain and "tools" not in plain


def test_reasoning_model_detection():
    assert all(map(is_reasoning_model, ["gpt-5.4", "gpt-5-mini", "o3", "o4-mini", "openai/gpt-5.4"]))
    assert not any(map(is_reasoning_model, ["gpt-4.1", "gpt-4o", "llama3"]))
