"""The loopback streaming server (tests/streaming_server.py), proven against the official SDKs'
stream parsers and the recorded traffic, then used to drive deferchat's own adapters
(``make_provider``) through timing and faults: deltas spread over time, tool calls, usage,
HTTP errors with retry-after, stalls, cut and truncated streams, malformed chunks."""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from core.providers import make_provider
from core.providers.base import ModelRequest, ProviderError, ResponseDone, Retrying, TextDelta, ToolUse, Usage
from core.providers.profiles import Waits
from core.providers.wirenames import encode
from tests.provider_replay import VERCEL, cassette
from tests.streaming_server import (
    WIRES,
    StreamingServer,
    markdown_answer,
    parse_script,
    read_log,
    render,
    serve,
    serve_process,
    split_text,
    tokens,
)

ROOT = Path(__file__).resolve().parents[2]
TOOL = "weather.get"
WIRE_TOOL = encode(TOOL)
TOOLS = [
    {
        "name": TOOL,
        "description": "The weather in a city.",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    }
]
SENTENCE = "The quick brown fox jumps over the lazy dog and keeps on running past the old red barn"


def request(text: str = "hello", tools: list[dict[str, Any]] | None = None) -> ModelRequest:
    return ModelRequest(
        model="test-model",
        system="You are terse.",
        tools=TOOLS if tools is None else tools,
        messages=[{"role": "user", "content": [{"type": "text", "text": text}]}],
    )


_clients: list[httpx2.AsyncClient] = []


@pytest.fixture(autouse=True)
async def _close_clients() -> AsyncIterator[None]:
    """Each adapter gets an HTTP client of the test's own, closed while its event loop runs."""
    yield
    while _clients:
        await _clients.pop().aclose()


def provider(server: Any, wire: str, **options: Any) -> Any:
    """``make_provider`` for ``wire`` pointed at the server: no key, no retries unless asked."""
    options.setdefault("max_retries", 0)
    _clients.append(client := httpx2.AsyncClient())
    return make_provider(wire, "test-model", base_url=server.url_for(wire), env={}, http_client=client, **options)


async def timed(p: Any, req: ModelRequest) -> tuple[list[tuple[float, Any]], BaseException | None]:
    """Every event with the time it arrived, and the error that ended the stream, if any."""
    events: list[tuple[float, Any]] = []
    try:
        async for event in p.stream(req):
            events.append((time.time(), event))
    except ProviderError as exc:
        return events, exc
    return events, None


def bounded(seconds: float, **waits: float) -> Waits:
    """Every wait bounded by ``seconds`` (``waits`` sets some apart)."""
    return Waits(**{"connect": seconds, "first_byte": seconds, "idle": seconds, **waits})


def deltas(events: list[tuple[float, Any]]) -> list[tuple[float, str]]:
    return [(t, e.text) for t, e in events if isinstance(e, TextDelta)]


# --- the script and the text ---------------------------------------------------------------------


@pytest.mark.parametrize("text", [SENTENCE, "  leading and trailing  \n", "line one\n\nline two\n- item", "", "x"])
def test_text_is_cut_without_losing_a_character(text: str) -> None:
    assert "".join(tokens(text)) == text
    for n in (1, 3):
        assert "".join(split_text(text, chunk_tokens=n)) == text
        assert "".join(split_text(text, chunk_chars=n)) == text
    assert all(len(p) == 4 for p in split_text(SENTENCE, chunk_chars=4)[:-1])
    assert split_text("a b  c", chunk_tokens=1) == ["a", " b", "  c"]


def test_markdown_answer_is_long_varied_and_deterministic() -> None:
    answer = markdown_answer(4000)
    count = len(tokens(answer))
    assert 4000 <= count < 4400
    lines = answer.splitlines()
    assert lines[0].startswith("# ")
    assert sum(line.startswith("## ") for line in lines) >= 10
    assert any(line.startswith("- ") for line in lines) and any(line.startswith("1. ") for line in lines)
    assert any(line.startswith("|---") for line in lines)  # a table's separator row
    assert answer.count("```") % 2 == 0 and "```python" in answer and "```bash" in answer
    assert answer.count("\n\n") > 60  # paragraphs, not one block
    assert markdown_answer(4000) == answer and markdown_answer(4000, seed=1) != answer
    assert len(tokens(markdown_answer(300))) < 500


@pytest.mark.parametrize(
    "bad, why",
    [
        ([{"parts": ["x"], "stall_after_chunk": 3}], "unknown key"),  # a misspelt fault must not silently vanish
        ([{"parts": [{"text": "x", "chunk": 3}]}], "unknown key"),
        ([{"parts": [{"tool": ""}]}], "non-empty"),
        ([{"chunk_delay": -1}], "seconds"),
        ([{"chunk_delay": "forever"}], "forever"),
        ([{"malformed": "weird"}], "malformed"),
        ([{"usage": {"tokens": 3}}], "unknown key"),
        ({"responses": [], "loop": True}, "unknown key"),
    ],
)
def test_script_mistakes_are_refused(bad: Any, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        parse_script(bad)


def _types(lines: list[str]) -> list[str]:
    """Event types with runs collapsed (delta, delta, delta -> delta)."""
    out: list[str] = []
    for line in lines:
        kind = json.loads(line)["type"]
        if not out or out[-1] != kind:
            out.append(kind)
    return out


def _sse_payloads(frames: list[Any]) -> list[str]:
    return [line[6:] for f in frames for line in f.data.decode().splitlines() if line.startswith("data: ")]


def test_anthropic_events_follow_the_recorded_stream() -> None:
    recorded_body = cassette("test_anthropic_native_tool_search_streaming.yaml")[0]["response"]["body"]["string"]
    recorded = [line[6:] for line in recorded_body.splitlines() if line.startswith("data: ")]
    ours = _sse_payloads(
        render(
            "anthropic",
            parse_script([{"parts": ["Let me look.", {"tool": "get_exchange_rate", "input": {"a": "USD"}}]}]).responses[
                0
            ],
        )
    )
    # the recording: text, server search, its result, text, tool_use; ours: text, tool_use
    assert _types(ours) == [
        "message_start",
        "content_block_start",
        "ping",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert set(_types(ours)) == set(_types(recorded))
    by_type: dict[str, dict[str, Any]] = {}
    for line in recorded:
        by_type.setdefault(json.loads(line)["type"], json.loads(line))
    for line in ours:
        event = json.loads(line)
        assert set(event) == set(by_type[event["type"]]), event["type"]
    message = json.loads(ours[0])["message"]
    assert set(message) <= set(by_type["message_start"]["message"])
    assert set(json.loads(ours[-2])["usage"]) <= set(by_type["message_delta"]["usage"])


def test_responses_events_follow_the_recorded_streams() -> None:
    text_body = cassette("test_openai_native_tool_search_streaming.yaml")[-1]["response"]["body"]["string"]
    recorded = [line[6:] for line in text_body.splitlines() if line.startswith("data: ")]
    recorded += (VERCEL / "openai-tool-search.1.chunks.txt").read_text().splitlines()
    script = parse_script([{"parts": ["1 USD = 0.92 EUR", {"tool": "get_weather", "input": {"location": "SF"}}]}])
    ours = _sse_payloads(render("openai", script.responses[0]))
    assert _types(ours) == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    by_type: dict[str, dict[str, Any]] = {}
    for line in recorded:
        if line.strip():
            by_type.setdefault(json.loads(line)["type"], json.loads(line))
    optional = {"obfuscation"}  # a padding field the API adds to deltas
    for number, line in enumerate(ours):
        event = json.loads(line)
        assert event["sequence_number"] == number
        assert set(event) == set(by_type[event["type"]]) - optional, event["type"]
    done_items = [json.loads(line)["item"] for line in ours if json.loads(line)["type"] == "response.output_item.done"]
    assert [i["type"] for i in done_items] == ["message", "function_call"]
    recorded_items = {
        e["item"]["type"]: e["item"]
        for e in (json.loads(x) for x in recorded if x.strip())
        if e["type"] == "response.output_item.done"
    }
    for item in done_items:
        assert set(item) <= set(recorded_items[item["type"]]), item["type"]
    assert set(json.loads(ours[-1])["response"]) <= set(by_type["response.completed"]["response"])
    assert json.loads(ours[-1])["response"]["usage"]["total_tokens"] > 0


def test_chat_chunks_are_data_lines_ending_with_done() -> None:
    script = parse_script([{"parts": ["Hi there", {"tool": "get_weather", "input": {"q": 1}}]}])
    frames = render("openai-chat", script.responses[0], include_usage=True)
    raw = b"".join(f.data for f in frames).decode()
    assert "event:" not in raw and raw.endswith("data: [DONE]\n\n")
    chunks = [json.loads(p) for p in _sse_payloads(frames) if p != "[DONE]"]
    assert all(c["object"] == "chat.completion.chunk" and "usage" in c for c in chunks)
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["prompt_tokens"] == 100
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    first_call = next(c for c in chunks if c["choices"] and "tool_calls" in c["choices"][0]["delta"])
    assert first_call["choices"][0]["delta"]["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": ""}
    without_usage = render("openai-chat", script.responses[0], include_usage=False)
    assert all("usage" not in json.loads(p) for p in _sse_payloads(without_usage) if p != "[DONE]")


# --- the official SDKs read it -------------------------------------------------------------------------


async def _sdk_text(wire: str, server: StreamingServer) -> tuple[list[tuple[float, str]], Any]:
    """(timed text deltas, final object) through the SDK's own streaming helper."""
    out: list[tuple[float, str]] = []
    messages: Any = [{"role": "user", "content": "hi"}]
    if wire == "anthropic":
        async with (
            anthropic.AsyncAnthropic(base_url=server.url_for(wire), api_key="x", max_retries=0) as a,
            a.messages.stream(model="claude-test", max_tokens=64, messages=messages) as stream,
        ):
            async for text in stream.text_stream:
                out.append((time.time(), text))
            return out, await stream.get_final_message()
    async with openai.AsyncOpenAI(base_url=server.url_for(wire), api_key="x", max_retries=0) as o:
        if wire == "openai-chat":
            async with o.chat.completions.stream(
                model="gpt-test", messages=messages, stream_options={"include_usage": True}
            ) as chat:
                async for event in chat:
                    if event.type == "content.delta" and event.delta:
                        out.append((time.time(), event.delta))
                return out, await chat.get_final_completion()
        async with o.responses.stream(model="gpt-test", input="hi") as responses:
            async for item in responses:
                if item.type == "response.output_text.delta":
                    out.append((time.time(), item.delta))
            return out, await responses.get_final_response()


@pytest.mark.parametrize("wire", WIRES)
async def test_sdk_reads_text_spread_over_time(wire: str) -> None:
    with serve([{"parts": ["warm-up"]}, {"parts": [SENTENCE], "chunk_delay": 0.02}]) as server:
        await _sdk_text(wire, server)  # the first use of an SDK in a process pays for its imports
        got, _ = await _sdk_text(wire, server)
    assert "".join(t for _, t in got) == SENTENCE
    assert len(got) == len(tokens(SENTENCE)) == 18
    span = got[-1][0] - got[0][0]
    assert 0.25 < span < 2.0  # 17 gaps of 20 ms: the text trickled in, it did not arrive at once
    assert server.requests[1]["body"]["stream"] is True and server.requests[1]["outcome"] == "completed"
    assert server.requests[1]["last_chunk"] - server.requests[1]["first_chunk"] >= 0.3  # 17 x 20 ms, server side


USAGE = {"input_tokens": 321, "output_tokens": 45, "cache_read_input_tokens": 7}


def _final_tool_and_usage(wire: str, final: Any) -> tuple[str, Any, tuple[int, int, int]]:
    if wire == "anthropic":
        block = final.content[-1]
        u = final.usage
        return block.name, block.input, (u.input_tokens, u.output_tokens, u.cache_read_input_tokens)
    if wire == "openai-chat":
        call = final.choices[0].message.tool_calls[0]
        u = final.usage
        return (
            call.function.name,
            json.loads(call.function.arguments),
            (u.prompt_tokens, u.completion_tokens, u.prompt_tokens_details.cached_tokens),
        )
    item = final.output[-1]
    u = final.usage
    return (
        item.name,
        json.loads(item.arguments),
        (u.input_tokens, u.output_tokens, u.input_tokens_details.cached_tokens),
    )


@pytest.mark.parametrize("wire", WIRES)
async def test_sdk_accumulates_tool_call_and_usage(wire: str) -> None:
    tool_input = {"city": "Oslo", "days": [1, 2], "note": 'ünïcode "quoted"'}
    with serve(
        [{"parts": ["Checking.", {"tool": "get_weather", "input": tool_input}], "usage": USAGE, "args_chunk_chars": 3}]
    ) as server:
        _, final = await _sdk_text(wire, server)
    name, args, usage = _final_tool_and_usage(wire, final)
    assert (name, args) == ("get_weather", tool_input)
    # Anthropic counts uncached input apart; OpenAI's prompt includes the cached tokens
    assert usage == ((321, 45, 7) if wire == "anthropic" else (328, 45, 7))
    assert server.requests[0]["chunks"] > 10  # the arguments came in 3-character pieces


@pytest.mark.parametrize("wire", WIRES)
async def test_sdk_reads_non_streamed_answers(wire: str) -> None:
    with serve([{"parts": ["All at once.", {"tool": "get_weather", "input": {"city": "Rome"}}]}]) as server:
        messages: Any = [{"role": "user", "content": "hi"}]
        if wire == "anthropic":
            async with anthropic.AsyncAnthropic(base_url=server.url_for(wire), api_key="x", max_retries=0) as a:
                message: Any = await a.messages.create(model="m", max_tokens=10, messages=messages)
            assert [b.type for b in message.content] == ["text", "tool_use"]
            assert message.content[1].input == {"city": "Rome"} and message.stop_reason == "tool_use"
        else:
            async with openai.AsyncOpenAI(base_url=server.url_for(wire), api_key="x", max_retries=0) as o:
                if wire == "openai-chat":
                    completion = await o.chat.completions.create(model="m", messages=messages)
                    assert completion.choices[0].message.content == "All at once."
                    assert completion.choices[0].finish_reason == "tool_calls"
                else:
                    response = await o.responses.create(model="m", input="hi")
                    assert response.output_text == "All at once."
                    assert response.output[1].type == "function_call"
    assert server.requests[0]["body"].get("stream") in (None, False)
    assert server.requests[0]["outcome"] == "completed"


@pytest.mark.parametrize("wire", WIRES)
async def test_sdk_gets_the_scripted_429_and_its_retry_after(wire: str) -> None:
    with (
        serve([{"status": 429, "retry_after": 7, "headers": {"x-extra": "yes"}}]) as server,
        pytest.raises((anthropic.RateLimitError, openai.RateLimitError)) as caught,
    ):
        await _sdk_text(wire, server)
    response = caught.value.response  # type: ignore[attr-defined]  # both SDKs' errors carry it
    assert response.status_code == 429
    assert response.headers["retry-after"] == "7" and response.headers["x-extra"] == "yes"
    body = response.json()
    assert body["error"]["type"] == ("rate_limit_error" if wire == "anthropic" else "requests")
    assert server.requests[0]["outcome"] == "status"


@pytest.mark.slow
@pytest.mark.parametrize("wire", ["anthropic", "openai-chat"])
async def test_sdk_waits_the_retry_after_it_was_sent(wire: str) -> None:
    with serve([{"status": 429, "retry_after": 0.6}, {"parts": ["after the wait"]}]) as server:
        p = provider(server, wire, max_retries=1)
        events, error = await timed(p, request())
    assert error is None and "".join(t for _, t in deltas(events)) == "after the wait"
    first, second = server.requests
    assert second["received"] - first["received"] >= 0.55  # the SDK waited as told


# --- deferchat's adapters ------------------------------------------------------------------------------


@pytest.mark.parametrize("wire", WIRES)
async def test_adapter_streams_deltas_over_time_then_the_tool_call(wire: str) -> None:
    answer = markdown_answer(60)
    with serve(
        [
            {"parts": ["warm-up"]},
            {
                "parts": [answer, {"tool": WIRE_TOOL, "input": {"city": "Oslo"}}],
                "chunk_delay": 0.01,
                "chunk_tokens": 2,
                "usage": {"input_tokens": 50, "output_tokens": 70},
            },
        ]
    ) as server:
        p = provider(server, wire)
        await timed(p, request("warm-up"))  # the first use of an SDK in a process pays for its imports
        events, error = await timed(p, request("What is the weather in Oslo?"))
    assert error is None
    text = deltas(events)
    assert "".join(t for _, t in text) == answer
    assert len(text) == len(split_text(answer, chunk_tokens=2)) > 25
    span = text[-1][0] - text[0][0]
    assert span > 0.2  # roughly the scripted len(text) * 10 ms
    assert text[0][0] < server.requests[1]["last_chunk"]  # the first words arrived while the server still sent
    [call] = [e for _, e in events if isinstance(e, ToolUse)]
    assert (call.name, call.input, call.raw_name) == (TOOL, {"city": "Oslo"}, None)
    usage = [e for _, e in events if isinstance(e, Usage)][-1]  # the last: the whole response's
    assert (usage.input_tokens, usage.output_tokens) == (50, 70)
    done = events[-1][1]
    assert isinstance(done, ResponseDone) and done.stop_reason == "tool_use"
    assert [b["type"] for b in done.content][-1] == "tool_use"
    sent = server.requests[1]
    assert sent["wire"] == wire and sent["body"]["model"] == "test-model" and sent["body"]["stream"] is True
    assert WIRE_TOOL in json.dumps(sent["body"]["tools"]) and "What is the weather in Oslo?" in json.dumps(sent["body"])


@pytest.mark.parametrize("wire", WIRES)
async def test_adapter_reads_a_plain_answer_and_its_stop_reason(wire: str) -> None:
    with serve([{"parts": ["Short."], "stop_reason": "max_tokens"}, {"parts": ["Done."]}]) as server:
        p = provider(server, wire)
        cut_short, _ = await timed(p, request(tools=[]))
        whole, _ = await timed(p, request(tools=[]))
    assert cut_short[-1][1].stop_reason == "max_tokens"
    assert whole[-1][1].stop_reason == "end_turn" and whole[-1][1].content == [{"type": "text", "text": "Done."}]
    assert len(server.requests) == 2  # one connection kept alive, two requests


@pytest.mark.parametrize("wire", WIRES)
async def test_a_mid_stream_stall_times_out_a_client_with_a_short_timeout(wire: str) -> None:
    with serve([{"parts": [SENTENCE], "stall_after_chunks": 2, "stall_seconds": "forever"}]) as server:
        started = time.time()
        events, error = await timed(provider(server, wire, waits=bounded(0.4)), request())
        elapsed = time.time() - started
        [record] = server.wait_for(1, outcome=True, timeout=5)
    assert isinstance(error, ProviderError) and error.code == "provider.timeout" and error.retryable
    assert "".join(t for _, t in deltas(events)) == "The quick"  # the two chunks before the stall
    assert 0.35 < elapsed < 3.0
    assert record["outcome"] == "client_closed" and record["chunks"] == 2  # the client hung up during the stall


@pytest.mark.parametrize("wire", WIRES)
async def test_a_stall_before_the_headers_times_out_too(wire: str) -> None:
    with serve([{"parts": ["never"], "first_byte_delay": "forever"}]) as server:
        events, error = await timed(provider(server, wire, waits=bounded(0.3)), request())
    assert isinstance(error, ProviderError) and error.code == "provider.timeout"
    assert events == [] and "first_byte" not in server.requests[0]


async def test_a_stall_is_a_stall_and_the_stream_then_goes_on() -> None:
    script = [{"parts": [SENTENCE], "stall_after_chunks": 3, "stall_seconds": 0.6, "first_byte_delay": 0.3}]
    with serve(script) as server:
        started = time.time()
        events, error = await timed(provider(server, "anthropic"), request())
    assert error is None
    times = [t for t, _ in deltas(events)]
    assert times[0] - started >= 0.28  # first_byte_delay held back the headers
    gaps = [b - a for a, b in itertools.pairwise(times)]
    # the long gap is the one after the third chunk (loose: a loaded machine may deliver the third one late)
    assert gaps[2] >= 0.3 and gaps[2] == max(gaps)
    assert times[3] - started >= 0.85  # 0.3 s before the headers + 0.6 s stall, less timer slack
    assert server.requests[0]["outcome"] == "completed"


@pytest.mark.parametrize("wire", WIRES)
async def test_a_cut_stream_is_a_provider_error(wire: str) -> None:
    with serve([{"parts": [SENTENCE], "cut_after_chunks": 4}]) as server:
        events, error = await timed(provider(server, wire), request())
    assert isinstance(error, ProviderError) and error.retryable
    assert error.code in ("provider.connection", "provider.stream_incomplete"), error.code
    assert len(deltas(events)) == 4 and not any(isinstance(e, ResponseDone) for _, e in events)
    assert server.requests[0]["outcome"] == "cut"


@pytest.mark.parametrize("wire", WIRES)
async def test_a_stream_that_ends_without_its_closing_events_is_incomplete(wire: str) -> None:
    with serve([{"parts": [SENTENCE], "end_after_chunks": 3}]) as server:
        events, error = await timed(provider(server, wire), request())
    assert isinstance(error, ProviderError) and error.code == "provider.stream_incomplete"
    assert len(deltas(events)) == 3 and server.requests[0]["outcome"] == "ended_early"


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize(
    "status, code", [(429, "provider.rate_limited"), (500, "provider.server_error"), (529, "provider.overloaded")]
)
async def test_http_errors_become_provider_errors(wire: str, status: int, code: str) -> None:
    with serve([{"status": status, "retry_after": 1}]) as server:
        _, error = await timed(provider(server, wire), request())
    assert isinstance(error, ProviderError) and (error.code, error.status, error.retryable) == (code, status, True)
    assert server.requests[0]["outcome"] == "status"


@pytest.mark.parametrize(
    "wire, code",
    [
        ("anthropic", "provider.overloaded"),
        ("openai-chat", "provider.server_error"),
        ("openai", "provider.server_error"),
    ],
)
async def test_an_error_event_inside_the_stream_is_a_provider_error(wire: str, code: str) -> None:
    with serve([{"parts": [SENTENCE], "error_after_chunks": 2, "error_status": 529}]) as server:
        events, error = await timed(provider(server, wire), request())
    assert isinstance(error, ProviderError) and error.code == code, error
    assert len(deltas(events)) == 2 and server.requests[0]["outcome"] == "error_event"


@pytest.mark.parametrize("wire", WIRES)
async def test_invalid_json_in_a_chunk_is_a_malformed_stream(wire: str) -> None:
    with serve([{"parts": [SENTENCE], "malformed": "invalid_json", "malformed_after_chunks": 2}]) as server:
        events, error = await timed(provider(server, wire), request())
    assert isinstance(error, ProviderError) and error.code == "provider.stream_malformed", error
    assert len(deltas(events)) == 2


@pytest.mark.parametrize(
    "wire, kind, why",
    [
        ("openai-chat", "no_choices", "a chunk without `choices`"),  # was TypeError inside provider.failed
        ("anthropic", "missing_field", "AttributeError"),  # a content_block_delta without `delta`
        ("openai", "missing_field", "delta"),  # an output_text.delta without its `delta`
    ],
)
async def test_a_chunk_missing_a_field_is_a_malformed_stream(wire: str, kind: str, why: str) -> None:
    with serve([{"parts": [SENTENCE], "malformed": kind, "malformed_after_chunks": 2}]) as server:
        events, error = await timed(provider(server, wire), request())
    assert len(deltas(events)) == 2
    assert isinstance(error, ProviderError) and (error.code, error.retryable) == ("provider.stream_malformed", True), (
        error
    )
    assert "sent a response deferchat could not read" in error.message and why in error.message


@pytest.mark.parametrize("wire", WIRES)
async def test_a_usage_only_chunk_with_empty_choices_is_no_fault(wire: str) -> None:
    """The closing usage chunk of Chat Completions has ``choices: []``: it is read, not refused."""
    with serve([{"parts": ["Fine."], "usage": {"input_tokens": 9, "output_tokens": 2}}]) as server:
        events, error = await timed(provider(server, wire), request(tools=[]))
    assert error is None and events[-1][1].usage.output_tokens == 2
    if wire == "openai-chat":
        assert server.requests[0]["body"]["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize("wire", WIRES)
async def test_a_retry_after_beyond_the_cap_fails_at_once_saying_until_when(wire: str) -> None:
    with serve([{"status": 429, "retry_after": 3600}] * 3) as server:
        p = provider(server, wire, max_retries=2)  # the SDK's default
        started = time.time()
        events, error = await asyncio.wait_for(timed(p, request()), 10)
        elapsed = time.time() - started
    assert isinstance(error, ProviderError) and (error.code, error.status) == ("provider.rate_limited", 429)
    assert "rate limited until " in error.message and "(retry-after 3600 s)" in error.message, error.message
    assert "60 s" in error.message  # the cap it went past
    assert events == [] and len(server.requests) == 1  # no retry, no sleep
    assert elapsed < 2.0


async def test_the_retry_after_cap_is_the_waits_own() -> None:
    with serve([{"status": 503, "retry_after": 2}, {"parts": ["never sent"]}]) as server:
        p = provider(server, "openai-chat", max_retries=2, waits=Waits(max_retry_after=1))
        events, error = await timed(p, request())
    assert isinstance(error, ProviderError) and (error.code, error.status) == ("provider.server_error", 503)
    assert "(retry-after 2 s)" in error.message and "longer than the 1 s" in error.message
    assert events == [] and len(server.requests) == 1


@pytest.mark.slow
@pytest.mark.parametrize("wire", WIRES)
async def test_a_retry_after_within_the_cap_is_waited_out_and_announced(wire: str) -> None:
    with serve([{"status": 429, "retry_after": 1}, {"parts": ["after the wait"]}]) as server:
        p = provider(server, wire, max_retries=2)
        events, error = await timed(p, request())
    assert error is None and "".join(t for _, t in deltas(events)) == "after the wait"
    first_at, retrying = events[0]
    assert retrying == Retrying(seconds=1.0, attempt=1, reason="rate limited (HTTP 429)", status=429)
    assert not any(isinstance(e, Retrying) for _, e in events[1:])
    first, second = server.requests
    assert (first["outcome"], second["outcome"]) == ("status", "completed")
    assert second["received"] - first["received"] >= 0.95  # the wait announced is the wait taken
    assert second["received"] - first_at >= 0.95  # and it was announced before it began


async def test_retries_without_a_retry_after_use_the_sdks_backoff() -> None:
    with serve([{"status": 500}, {"status": 529}, {"parts": ["third time"]}]) as server:
        p = provider(server, "anthropic", max_retries=2)
        events, error = await timed(p, request())
    assert error is None and "".join(t for _, t in deltas(events)) == "third time"
    waits = [e for _, e in events if isinstance(e, Retrying)]
    assert [(w.attempt, w.reason) for w in waits] == [(1, "server error (HTTP 500)"), (2, "overloaded (HTTP 529)")]
    # the SDK's INITIAL_RETRY_DELAY (0.5 s) doubling, less up to a quarter of jitter
    assert 0.375 <= waits[0].seconds <= 0.5 and 0.75 <= waits[1].seconds <= 1.0
    times = [r["received"] for r in server.requests]
    assert times[1] - times[0] >= 0.37 and times[2] - times[1] >= 0.74


async def test_a_retry_is_never_made_once_the_answer_has_begun() -> None:
    with serve([{"parts": [SENTENCE], "error_after_chunks": 2, "error_status": 529}, {"parts": ["no"]}]) as server:
        events, error = await timed(provider(server, "anthropic", max_retries=2), request())
    assert isinstance(error, ProviderError) and error.code == "provider.overloaded"
    assert len(server.requests) == 1 and not any(isinstance(e, Retrying) for _, e in events)


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize(
    "fault, code, outcome",
    [
        ({"cut_after_chunks": 0}, "provider.connection", "cut"),
        ({"malformed": "invalid_json"}, "provider.stream_malformed", "completed"),
    ],
)
async def test_non_streamed_answers_can_be_cut_or_malformed(
    wire: str, fault: dict[str, Any], code: str, outcome: str
) -> None:
    with serve([{"parts": [SENTENCE], **fault}]) as server:
        events, error = await timed(provider(server, wire, streaming=False), request())
    assert isinstance(error, ProviderError) and error.code == code and events == []
    assert server.requests[0]["body"].get("stream") in (None, False) and server.requests[0]["outcome"] == outcome


async def test_a_non_streamed_answer_can_stall_between_headers_and_body() -> None:
    with serve([{"parts": [SENTENCE], "stall_after_chunks": 0}]) as server:
        _, error = await timed(provider(server, "openai-chat", streaming=False, waits=bounded(0.3)), request())
        [record] = server.wait_for(1, outcome=True, timeout=5)
    assert isinstance(error, ProviderError) and error.code == "provider.timeout"
    assert record["outcome"] == "client_closed" and "stalled" in record


# --- the server itself -------------------------------------------------------------------------------------


async def test_requests_are_recorded_and_an_exhausted_script_says_so() -> None:
    with serve([{"parts": ["one"]}]) as server:
        p = provider(server, "openai-chat")
        await timed(p, request("first"))
        _, error = await timed(p, request("second"))
    assert isinstance(error, ProviderError) and error.status == 500
    assert "no scripted response left for request 2" in error.message
    first, second = server.requests
    assert [first["n"], second["n"]] == [1, 2] and first["path"] == "/v1/chat/completions"
    assert first["body"]["messages"][-1] == {"role": "user", "content": "first"}
    assert first["body"]["stream_options"] == {"include_usage": True}
    assert first["headers"]["content-type"] == "application/json"
    assert (first["outcome"], second["outcome"]) == ("completed", "exhausted")


async def test_repeat_and_push() -> None:
    with serve({"responses": [{"parts": ["a"]}, {"parts": ["b"]}], "repeat": True}) as server:
        p = provider(server, "anthropic")
        texts = ["".join(t for _, t in deltas((await timed(p, request()))[0])) for _ in range(5)]
    assert texts == ["a", "b", "a", "b", "a"]
    with serve([{"parts": ["first"]}]) as server:
        server.push({"parts": ["pushed"]})
        p = provider(server, "anthropic")
        texts = ["".join(t for _, t in deltas((await timed(p, request()))[0])) for _ in range(2)]
    assert texts == ["first", "pushed"]


async def test_the_server_sees_a_client_that_closes_the_stream() -> None:
    with serve([{"parts": [SENTENCE], "chunk_delay": 0.03}]) as server:
        async with (
            anthropic.AsyncAnthropic(base_url=server.url_for("anthropic"), api_key="x", max_retries=0) as a,
            a.messages.stream(model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}]) as s,
        ):
            seen = 0
            async for _ in s.text_stream:
                seen += 1
                if seen == 3:
                    break
        [record] = server.wait_for(1, outcome=True, timeout=5)
    assert record["outcome"] == "client_closed" and 3 <= record["chunks"] < 18


def test_unknown_routes_get_a_404_and_the_server_stops_by_itself() -> None:
    with serve([], timeout=0.3) as server:
        with socket.create_connection(("127.0.0.1", server.port), timeout=2) as conn:
            conn.sendall(b"GET /v1/models HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
            reply = conn.recv(4096)
        assert reply.startswith(b"HTTP/1.1 404 ")
        server._done.wait(3)
        assert server.timed_out
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", server.port), timeout=1).close()
    assert server.base_url.startswith("http://127.0.0.1:")


@pytest.mark.slow
async def test_subprocess_mode_prints_its_port_and_logs_every_request(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"parts": [{"markdown": 200}], "chunk_tokens": 5}, {"status": 529}]))
    log = tmp_path / "requests.jsonl"
    with serve_process(script, log=log, timeout=30) as child:
        p = provider(child, "openai")
        events, error = await timed(p, request("from a child process"))
        _, second = await timed(p, request("again"))
        records = child.wait_for(2, outcome=True)
    assert error is None and "".join(t for _, t in deltas(events)) == markdown_answer(200)
    assert isinstance(second, ProviderError) and second.code == "provider.overloaded"
    assert [r["path"] for r in records] == ["/v1/responses", "/v1/responses"]
    assert records[0]["body"]["input"][-1]["content"] == "from a child process"
    assert [r["outcome"] for r in records] == ["completed", "status"] and records[0]["chunks"] > 30
    assert read_log(log) == records


def test_subprocess_mode_refuses_a_bad_script(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"parts": ["x"], "stall_afterchunks": 1}]))
    done = subprocess.run(
        [sys.executable, "-m", "tests.streaming_server", "--port", "0", "--script", str(bad)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2 and "stall_afterchunks" in done.stderr and done.stdout == ""
