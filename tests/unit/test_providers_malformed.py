"""Whatever a server sends, a response the adapter cannot read ends as ``provider.stream_malformed``
saying what was wrong, never as a ``KeyError``/``AttributeError``/``IndexError``/``TypeError``
inside ``provider.failed`` (issue 11, item 1). Each case is one wire event with a field missing or
of the wrong type, between events that are right; the well-formed oddities (a usage-only chunk
with ``choices: []``, an event type the adapter does not know) stay valid."""

from __future__ import annotations

import json
from typing import Any

import pytest

from core.providers import make_provider
from core.providers.base import ModelRequest, ProviderError
from tests.provider_replay import Replay, collect, json_response, sse_response

REQUEST = ModelRequest(
    model="",
    system="",
    messages=[{"role": "user", "content": "hi"}],
    tools=[{"name": "get_weather", "input_schema": {"type": "object"}}],
)


def make(name: str, replay: Replay, **kw: Any) -> Any:
    return make_provider(
        name,
        "m",
        base_url="http://127.0.0.1:9/v1",
        api_key="sk-test-0123456789",
        http_client=replay.client(),
        max_retries=0,
        **kw,
    )


def typed_sse(*events: dict[str, Any]) -> bytes:
    return "".join(f"event: {e.get('type', 'x')}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def data_sse(*chunks: Any) -> bytes:
    return "".join(f"data: {c if isinstance(c, str) else json.dumps(c)}\n\n" for c in chunks).encode()


async def unreadable(name: str, body: bytes, **kw: Any) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        await collect(make(name, Replay([sse_response(body)]), **kw), REQUEST)
    return caught.value


# --- Anthropic ------------------------------------------------------------------------------------

MESSAGE = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "m",
    "content": [],
    "stop_reason": None,
    "stop_sequence": None,
    "usage": {"input_tokens": 3, "output_tokens": 1},
}
START = {"type": "message_start", "message": MESSAGE}
TEXT_START = {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
TEXT = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}}
STOP = {"type": "content_block_stop", "index": 0}
END = [
    {
        "type": "message_delta",
        "delta": {"stop_reason": "end_turn", "stop_sequence": None},
        "usage": {"output_tokens": 2},
    },
    {"type": "message_stop"},
]


@pytest.mark.parametrize(
    "events",
    [
        [START, {"type": "content_block_start", "index": 0}, TEXT, STOP, *END],  # no content_block
        [START, TEXT_START, {"type": "content_block_delta", "index": 0}, STOP, *END],  # no delta
        [START, TEXT_START, {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta"}}, STOP, *END],
        [
            START,
            {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t1", "input": {}}},
            STOP,
            *END,
        ],  # no name
        [{"type": "message_start"}, TEXT_START, TEXT, STOP, *END],  # no message
        [START, TEXT_START, TEXT, STOP, {"type": "message_delta"}, {"type": "message_stop"}],  # no delta, no usage
        [START, {"type": "content_block_delta", "index": 5, "delta": {"type": "text_delta", "text": "x"}}, *END],
    ],
)
async def test_anthropic_events_missing_a_field(events: list[dict[str, Any]]) -> None:
    error = await unreadable("anthropic", typed_sse(*events))
    assert (error.code, error.retryable) == ("provider.stream_malformed", True), error
    assert error.message.startswith("Anthropic sent a response deferchat could not read: ")


async def test_an_anthropic_answer_without_content_is_malformed_not_streamed() -> None:
    body = {**MESSAGE, "content": None, "stop_reason": "end_turn"}
    with pytest.raises(ProviderError) as caught:
        await collect(make("anthropic", Replay([json_response(body)]), streaming=False), REQUEST)
    assert caught.value.code == "provider.stream_malformed"


# --- Chat Completions --------------------------------------------------------------------------------


def chunk(choices: Any = None, **extra: Any) -> dict[str, Any]:
    out = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", **extra}
    if choices is not None:
        out["choices"] = choices
    return out


HELLO = chunk([{"index": 0, "delta": {"role": "assistant", "content": "Hello"}, "finish_reason": None}])
FINISH = chunk([{"index": 0, "delta": {}, "finish_reason": "stop"}])


@pytest.mark.parametrize(
    "chunks, why",
    [
        ([HELLO, chunk(), FINISH, "[DONE]"], "a chunk without `choices`"),
        (
            [HELLO, chunk(None, usage={"prompt_tokens": 1, "completion_tokens": 1}), FINISH, "[DONE]"],
            "a chunk without `choices`",
        ),
        ([HELLO, chunk("nope"), FINISH, "[DONE]"], "a chunk without `choices`"),
        ([HELLO, chunk([{"index": 0, "finish_reason": None}]), FINISH, "[DONE]"], "without a field"),  # no delta
        (
            [
                HELLO,
                chunk(
                    [{"index": 0, "delta": {"tool_calls": [{"function": {"arguments": "{"}}]}, "finish_reason": None}]
                ),
                FINISH,
                "[DONE]",
            ],
            "without a field",
        ),  # a call without index
        ([HELLO, "[1, 2]", FINISH, "[DONE]"], "could not read"),  # JSON, but not an object
        ([HELLO, "{not json", FINISH, "[DONE]"], "a chunk that is not JSON"),
    ],
)
async def test_chat_chunks_that_cannot_be_read(chunks: list[Any], why: str) -> None:
    error = await unreadable("openai-chat", data_sse(*chunks))
    assert (error.code, error.retryable) == ("provider.stream_malformed", True), error
    assert why in error.message, error.message


async def test_a_usage_only_chunk_and_an_unknown_field_are_fine() -> None:
    usage = chunk([], usage={"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9})
    odd = chunk(
        [{"index": 0, "delta": {"content": "!", "vendor_extra": {"x": 1}}, "finish_reason": None}],
        vendor_meta="ignored",
    )
    events = await collect(
        make("openai-chat", Replay([sse_response(data_sse(HELLO, odd, FINISH, usage, "[DONE]"))])), REQUEST
    )
    assert "".join(e.text for e in events if e.kind == "text_delta") == "Hello!"
    assert events[-1].usage.input_tokens == 7 and events[-1].stop_reason == "end_turn"


@pytest.mark.parametrize(
    "body",
    [
        {"id": "c", "object": "chat.completion", "created": 1, "model": "m"},  # no choices
        {"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": [{"index": 0}]},  # no message
    ],
)
async def test_a_whole_chat_answer_that_cannot_be_read(body: dict[str, Any]) -> None:
    with pytest.raises(ProviderError) as caught:
        await collect(make("openai-chat", Replay([json_response(body)]), streaming=False), REQUEST)
    assert caught.value.code == "provider.stream_malformed", caught.value


# --- Responses ---------------------------------------------------------------------------------------


def response(status: str, output: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": "r",
        "object": "response",
        "created_at": 1,
        "status": status,
        "model": "m",
        "output": output,
        "usage": {"input_tokens": 3, "output_tokens": 1, "total_tokens": 4},
    }


MSG = {
    "id": "m1",
    "type": "message",
    "role": "assistant",
    "status": "completed",
    "content": [{"type": "output_text", "text": "Hi", "annotations": []}],
}
CREATED = {"type": "response.created", "sequence_number": 0, "response": response("in_progress", [])}
DELTA = {
    "type": "response.output_text.delta",
    "sequence_number": 1,
    "item_id": "m1",
    "output_index": 0,
    "content_index": 0,
    "delta": "Hi",
}
DONE_ITEM = {"type": "response.output_item.done", "sequence_number": 2, "output_index": 0, "item": MSG}
COMPLETED = {"type": "response.completed", "sequence_number": 3, "response": response("completed", [MSG])}


@pytest.mark.parametrize(
    "events, why",
    [
        ([CREATED, {**DELTA, "delta": None}, DONE_ITEM, COMPLETED], "without its `delta`"),
        ([CREATED, DELTA, {k: v for k, v in DONE_ITEM.items() if k != "item"}, COMPLETED], "without its `item`"),
        ([CREATED, DELTA, DONE_ITEM, {"type": "response.completed", "sequence_number": 3}], "without its `response`"),
        (
            [CREATED, DELTA, DONE_ITEM, {**COMPLETED, "response": {**COMPLETED["response"], "output": None}}],
            "could not",
        ),
        (
            [
                CREATED,
                {
                    "type": "response.output_item.done",
                    "sequence_number": 2,
                    "output_index": 0,
                    "item": {"type": "function_call", "id": "fc", "arguments": "{}"},
                },
                COMPLETED,
            ],
            "without a field",
        ),
    ],
)
async def test_responses_events_that_cannot_be_read(events: list[dict[str, Any]], why: str) -> None:
    error = await unreadable("openai", typed_sse(*events))
    assert (error.code, error.retryable) == ("provider.stream_malformed", True), error
    assert why in error.message, error.message


async def test_an_event_type_the_adapter_does_not_know_is_passed_over() -> None:
    keepalive = {"type": "keepalive", "sequence_number": 2}
    future = {"type": "response.something_new", "sequence_number": 3, "payload": [1]}
    events = await collect(
        make("openai", Replay([sse_response(typed_sse(CREATED, DELTA, keepalive, future, DONE_ITEM, COMPLETED))])),
        REQUEST,
    )
    assert "".join(e.text for e in events if e.kind == "text_delta") == "Hi"
    assert events[-1].content == [{"type": "text", "text": "Hi"}]
