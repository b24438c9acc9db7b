"""The openai-chat (Chat Completions) adapter against recorded real traffic, at the wire level.

The pydantic-ai ``test_tool_search_eval[openai-chat]`` cassette is the active-tools shape: a
client-side search tool, a tools array that grows with what was discovered, and queries for
which no tool exists. It is replayed as recorded (non-streaming) and, re-chunked, streamed.
"""

from __future__ import annotations

import json

import pytest

from core.providers.base import ModelRequest, ProviderError
from core.providers.openai_chat import OpenAIChatProvider
from core.providers.wirenames import encode
from tests.provider_replay import (
    Recording,
    Replay,
    collect,
    done,
    json_response,
    kinds,
    sse_response,
    subset,
    text_of,
)

SENT_KEYS = ("model", "messages", "tools")  # stream, tool_choice and the token limit aside
EVAL = "test_tool_search_eval[openai-chat].yaml"
RENAMES = {
    "search_tools": "tool.search",
    "get_exchange_rate": "fx.get_exchange_rate",
    "stock_lookup": "mcp.stocks.lookup",
    "get_weather": "weather.get",
}


def chat_sse(chunks: list[dict]) -> bytes:
    return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks).encode() + b"data: [DONE]\n\n"


def rechunk(completion: dict) -> list[dict]:
    """A recorded chat.completion as the chunks a streaming server sends for it."""
    base = {
        "id": completion["id"],
        "object": "chat.completion.chunk",
        "created": completion["created"],
        "model": completion["model"],
    }
    choice = completion["choices"][0]
    message = choice["message"]
    chunks = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]}]
    if message.get("content"):
        text = message["content"]
        for part in (text[: len(text) // 2], text[len(text) // 2 :]):
            chunks.append({**base, "choices": [{"index": 0, "delta": {"content": part}, "finish_reason": None}]})
    for i, call in enumerate(message.get("tool_calls") or []):
        args = call["function"]["arguments"]
        chunks.append(
            {
                **base,
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": None,
                        "delta": {
                            "tool_calls": [
                                {
                                    "index": i,
                                    "id": call["id"],
                                    "type": "function",
                                    "function": {"name": call["function"]["name"], "arguments": args[:5]},
                                }
                            ]
                        },
                    }
                ],
            }
        )
        chunks.append(
            {
                **base,
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": None,
                        "delta": {"tool_calls": [{"index": i, "function": {"arguments": args[5:]}}]},
                    }
                ],
            }
        )
    chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]})
    chunks.append({**base, "choices": [], "usage": completion["usage"]})
    return chunks


@pytest.mark.parametrize("variant", ["plain", "renamed"])
@pytest.mark.parametrize("streaming", [False, True], ids=["recorded", "rechunked"])
async def test_active_tools_eval_conversations(streaming, variant):
    rec = Recording(EVAL, RENAMES if variant == "renamed" else None)
    recorded, responses = rec.requests, rec.responses
    replay = Replay([sse_response(chat_sse(rechunk(r))) for r in responses]) if streaming else rec.replay()
    p = OpenAIChatProvider(
        "gpt-5.4-mini", api_key="test-key", http_client=replay.client(), max_retries=0, streaming=streaming
    )

    conversations, messages, previous = 0, [], None
    for step, body in enumerate(recorded):
        if len(body["messages"]) == 1:  # a new question
            conversations += 1
            messages = [{"role": "user", "content": [{"type": "text", "text": body["messages"][0]["content"]}]}]
        else:  # our own echo, then the tool answers the recording gave
            tail = len(body["messages"])
            while body["messages"][tail - 1]["role"] == "tool":
                tail -= 1
            answers = body["messages"][tail:]
            assert answers, "each follow-up answers the previous turn's tool call"
            messages = [
                *messages,
                {"role": "assistant", "content": previous.content},
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": a["tool_call_id"],
                            "content": [{"type": "text", "text": a["content"]}],
                        }
                        for a in answers
                    ],
                },
            ]
        # active-tools: the strategy decides the array per step; the adapter must send it as given
        tools = rec.tools(step, schema_key="parameters")
        events = await collect(p, ModelRequest(model=body["model"], system="", tools=tools, messages=messages))
        assert subset(replay.bodies[step], SENT_KEYS) == subset(body, SENT_KEYS), f"request {step}"
        previous = done(events)
        choice = responses[step]["choices"][0]
        calls = kinds(events, "tool_use")
        assert [(c.id, c.name, c.input) for c in calls] == [
            (t["id"], rec.internal_view(t)["function"]["name"], json.loads(t["function"]["arguments"]))
            for t in choice["message"].get("tool_calls") or []
        ]
        assert text_of(events) == (choice["message"]["content"] or "")
        assert previous.stop_reason == {"tool_calls": "tool_use", "stop": "end_turn"}[choice["finish_reason"]]
        usage = responses[step]["usage"]
        assert (previous.usage.input_tokens, previous.usage.output_tokens) == (
            usage["prompt_tokens"],
            usage["completion_tokens"],
        )
    assert conversations == 4
    assert text_of(events).startswith("I can help plan it, but I can't directly book flights")  # no tool exists
    first_call = recorded[1]["messages"][1]["tool_calls"][0]["function"]
    assert first_call["name"] == encode(rec.name("search_tools"))


def test_history_and_tools_on_the_chat_wire():
    request = ModelRequest(
        model="llama3",
        system="You are terse.",
        tools=[
            {
                "name": "mcp.weather.get",
                "description": "Weather",
                "input_schema": {"type": "object"},
                "defer_loading": True,
            },
        ],
        messages=[
            {"role": "user", "content": "Weather in Paris?"},
            {
                "role": "assistant",
                "content": [
                    {"type": "provider_item", "provider": "openai", "item": {"type": "reasoning"}},
                    {"type": "server_tool_use", "id": "s", "name": "tool_search_tool_bm25", "input": {}},
                    {"type": "text", "text": "Checking."},
                    {"type": "tool_use", "id": "c1", "name": "mcp.weather.get", "input": {"city": "Paris"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "c1",
                        "content": [{"type": "text", "text": "18C"}, {"type": "tool_reference", "tool_name": "x.y"}],
                    },
                    {"type": "text", "text": "and tomorrow?"},
                ],
            },
        ],
    )
    params, _ = OpenAIChatProvider("llama3", base_url="http://localhost:11434/v1").build_params(request)
    assert params["tools"] == [
        {
            "type": "function",
            "function": {"name": "mcp__weather__get", "description": "Weather", "parameters": {"type": "object"}},
        }
    ]
    assert params["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "mcp__weather__get", "arguments": '{"city":"Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "18C\n[tool loaded: x.y]"},
        {"role": "user", "content": "and tomorrow?"},
    ]
    assert params["max_tokens"] == 4096 and "max_completion_tokens" not in params
    assert params["stream_options"] == {"include_usage": True}
    genuine, _ = OpenAIChatProvider("gpt-5.4", api_key="k").build_params(request)
    assert genuine["max_completion_tokens"] == 4096 and "max_tokens" not in genuine


async def test_provider_tools_are_refused_not_dropped():
    replay = Replay([])
    p = OpenAIChatProvider("llama3", base_url="http://localhost:11434/v1", http_client=replay.client())
    with pytest.raises(ProviderError) as err:
        await collect(
            p,
            ModelRequest(
                model="llama3", system="", tools=[{"type": "tool_search"}], messages=[{"role": "user", "content": "hi"}]
            ),
        )
    assert err.value.code == "provider.unsupported_tool" and replay.requests == []


def _chunk(delta: dict, finish: str | None = None) -> dict:
    return {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "llama3",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


async def test_local_server_without_key_streams_tool_calls_and_deepseek_cache_usage():
    chunks = [
        _chunk({"role": "assistant", "content": "On it."}),
        _chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "mcp__weather__get", "arguments": ""},
                    }
                ]
            }
        ),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city":'}}]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"Paris"}'}}]}),
        _chunk({}, "stop"),  # Ollama says "stop" even when it called a tool
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "llama3",
            "choices": [],
            "usage": {
                "prompt_tokens": 100,
                "completion_tokens": 9,
                "total_tokens": 109,
                "prompt_cache_hit_tokens": 80,
                "prompt_cache_miss_tokens": 20,
            },
        },
    ]
    replay = Replay([sse_response(chat_sse(chunks))])
    p = OpenAIChatProvider("llama3", base_url="http://localhost:11434/v1", http_client=replay.client(), env={})
    events = await collect(
        p,
        ModelRequest(
            model="llama3",
            system="",
            messages=[{"role": "user", "content": "hi"}],
            tools=[{"name": "mcp.weather.get", "input_schema": {"type": "object"}}],
        ),
    )
    request = replay.requests[0]
    assert str(request.url) == "http://localhost:11434/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer deferchat-no-key"
    assert text_of(events) == "On it."
    [call] = kinds(events, "tool_use")
    assert (call.id, call.name, call.input) == ("call_1", "mcp.weather.get", {"city": "Paris"})
    turn = done(events)
    assert turn.stop_reason == "tool_use"
    assert turn.content == [
        {"type": "text", "text": "On it."},
        {"type": "tool_use", "id": "call_1", "name": "mcp.weather.get", "input": {"city": "Paris"}},
    ]
    assert (turn.usage.input_tokens, turn.usage.cache_read_input_tokens, turn.usage.output_tokens) == (20, 80, 9)


async def test_invalid_argument_json_reaches_the_pipeline_raw():
    body = {
        "id": "c",
        "object": "chat.completion",
        "created": 1,
        "model": "llama3",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_9",
                            "type": "function",
                            "function": {"name": "mcp__weather__get", "arguments": '{"city": Par'},
                        },
                        {"id": "", "type": "function", "function": {"name": "mcp__weather__get", "arguments": ""}},
                    ],
                },
            }
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
    }
    replay = Replay([json_response(body)])
    p = OpenAIChatProvider("llama3", base_url="http://localhost:8080/v1", http_client=replay.client(), streaming=False)
    events = await collect(
        p,
        ModelRequest(
            model="llama3",
            system="",
            messages=[{"role": "user", "content": "hi"}],
            tools=[{"name": "mcp.weather.get", "input_schema": {"type": "object"}}],
        ),
    )
    call, second = kinds(events, "tool_use")
    assert call.input == '{"city": Par'  # the pipeline answers tool.arguments_invalid
    # a server that sent no id and no arguments: the turn loop gives the call an id (CallIds), once
    assert (second.id, second.input) == ("", {})
    params, _ = p.build_params(
        ModelRequest(model="llama3", system="", messages=[{"role": "assistant", "content": done(events).content}])
    )
    assert params["messages"][0]["tool_calls"][0]["function"]["arguments"] == '{"city": Par'
