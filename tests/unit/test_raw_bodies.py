"""The body an adapter joins from kept JSON and posts through the SDK's client
(``core.providers.raw``) is, byte for byte, the body the SDK's own method sends for the same
request, and goes with the same headers: on every wire (Anthropic Messages, OpenAI Responses,
Chat Completions), streamed and not, for every shape the adapters make (a system prompt or none,
tools or none, Anthropic thinking, OpenAI reasoning, OpenAI's own Chat Completions or a compatible
server), over histories of every provider's blocks (the engine's, as ``test_portable_properties``
draws them). Both bodies are captured on the loopback server, as they came off the socket.

And the adapter reuses what it made: a chat that grows converts each history message once."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.providers import make_provider
from core.providers.base import ModelRequest
from core.providers.portable import PortableHistory, for_target
from core.providers.thinking import ThinkingSettings
from tests.streaming_server import StreamingServer
from tests.unit.test_portable_properties import TARGETS, chat_of, histories

MODELS = {
    "anthropic": ("claude-sonnet-4-6", "claude-haiku-3"),
    "openai": ("gpt-5.4", "gpt-4.1"),
    "openai-chat": ("gpt-5.4", "local-model"),
}
# Headers that differ between two requests of one client whatever it sends
VOLATILE = {"content-length"}


@pytest.fixture(scope="module")
def server() -> Iterator[StreamingServer]:
    with StreamingServer({"responses": [{"parts": ["ok"]}], "repeat": True}, timeout=600) as s:
        yield s


def adapter(server: StreamingServer, wire: str, model: str, *, raw: bool, streaming: bool, think: bool) -> Any:
    thinking = (
        ThinkingSettings(anthropic_budget_tokens=2048, openai_effort="low", openai_summary="auto") if think else None
    )
    provider = make_provider(
        wire,
        model,
        base_url=server.url_for(wire),
        api_key="sk-loopback",
        streaming=streaming,
        raw_bodies=raw,
        thinking=thinking,
        max_retries=0,
    )
    return provider


async def _send(provider: Any, request: ModelRequest) -> None:
    async for _ in provider.stream(request):
        pass


def sent_both_ways(
    server: StreamingServer, wire: str, request: ModelRequest, *, streaming: bool, think: bool, genuine: bool = False
) -> tuple[tuple[bytes, dict[str, str]], tuple[bytes, dict[str, str]]]:
    """(the SDK method's body and headers, the raw route's) for one request."""
    out = []
    for raw in (False, True):
        provider = adapter(server, wire, request.model, raw=raw, streaming=streaming, think=think)
        if genuine:
            provider.genuine = True  # OpenAI's own Chat Completions: max_completion_tokens, reasoning_effort
        before = len(server.raw_bodies)
        asyncio.run(_send(provider, request))
        assert len(server.raw_bodies) == before + 1
        headers = {k: v for k, v in server.requests[-1]["headers"].items() if k not in VOLATILE}
        out.append((server.raw_bodies[-1], headers))
    return out[0], out[1]


def request_for(
    mode: str, history: list[dict[str, Any]], target: str, model: str, system: str, search: str, flavour: str
) -> ModelRequest:
    chat = chat_of(mode)
    surface = chat.strategy(target, anthropic_search=search, openai_search=flavour).surface(history)
    messages = for_target(history, target, surface.tools)
    return ModelRequest(
        model=model,
        system=system,
        tools=surface.tools,
        messages=messages,
        cache_prefix_tools=surface.cache_prefix_tools,
    )


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
@given(drawn=histories(), data=st.data())
def test_the_raw_body_is_the_sdks_own_byte_for_byte(server: StreamingServer, drawn: Any, data: Any) -> None:
    mode, history, search, flavour, _ = drawn
    target = data.draw(st.sampled_from(TARGETS))
    model = data.draw(st.sampled_from(MODELS[target]))
    system = data.draw(st.sampled_from(["", "You are helpful.", 'Systém: ünïcode \u2028 and "quotes"']))
    streaming = data.draw(st.booleans())
    think = data.draw(st.booleans())
    genuine = target == "openai-chat" and data.draw(st.booleans())
    request = request_for(mode, history, target, model, system, search, flavour)
    if data.draw(st.booleans()):  # no tools at all
        request = request.model_copy(update={"tools": [], "cache_prefix_tools": None})
    (sdk_body, sdk_headers), (raw_body, raw_headers) = sent_both_ways(
        server, target, request, streaming=streaming, think=think, genuine=genuine
    )
    assert raw_body == sdk_body
    assert raw_headers == sdk_headers


@pytest.mark.parametrize("wire", TARGETS)
@pytest.mark.parametrize("streaming", [True, False])
def test_a_plain_chat_goes_byte_for_byte_on_every_wire(server: StreamingServer, wire: str, streaming: bool) -> None:
    messages = []
    for i in range(5):
        messages.append({"role": "user", "content": [{"type": "text", "text": f"question {i} \u00e9\u4e2d\U0001f600"}]})
        messages.append({"role": "assistant", "content": [{"type": "text", "text": f"answer {i}"}]})
    messages.append({"role": "user", "content": [{"type": "text", "text": "and now?"}]})
    request = ModelRequest(model=MODELS[wire][0], system="Be brief.", messages=messages)
    (sdk_body, sdk_headers), (raw_body, raw_headers) = sent_both_ways(
        server, wire, request, streaming=streaming, think=False
    )
    assert raw_body == sdk_body and raw_headers == sdk_headers
    assert b"question 4" in raw_body


@pytest.mark.parametrize("wire", TARGETS)
async def test_a_growing_chat_converts_each_message_once(server: StreamingServer, wire: str) -> None:
    provider = adapter(server, wire, MODELS[wire][1], raw=True, streaming=True, think=False)
    messages: list[dict[str, Any]] = []
    for i in range(30):
        messages.append({"role": "user", "content": [{"type": "text", "text": f"question {i}"}]})
        # as the turn loop builds it: the history's own dicts (a validated model would copy them)
        request = ModelRequest.model_construct(model=MODELS[wire][1], system="s", messages=list(messages))
        await _send(provider, request)
        messages.append({"role": "assistant", "content": [{"type": "text", "text": f"answer {i}"}]})
    assert provider._history.stepped == len(messages) - 1  # each message once, not once per request


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
@given(drawn=histories(), data=st.data())
def test_a_growing_chat_sends_the_sdks_bytes_at_every_request(server: StreamingServer, drawn: Any, data: Any) -> None:
    """The same two adapters for a whole chat, request after request, as the turn loop uses them:
    what each kept from the last request (items, texts, the joined prefix) never changes a byte."""
    mode, history, search, flavour, _ = drawn
    target = data.draw(st.sampled_from(TARGETS))
    model = MODELS[target][0]
    think = data.draw(st.booleans())
    cuts = data.draw(st.lists(st.booleans(), min_size=len(history), max_size=len(history)))

    async def chat() -> None:
        raw = adapter(server, target, model, raw=True, streaming=True, think=think)
        sdk = adapter(server, target, model, raw=False, streaming=True, think=think)
        strategy = chat_of(mode).strategy(target, anthropic_search=search, openai_search=flavour)
        converter = PortableHistory(target)
        sent: list[dict[str, Any]] = []
        start = 0
        for message, cut in zip(history, cuts, strict=True):
            sent.append(message)
            if cut and len(sent) - start > 2:
                start += 1  # the head of the view moves (a compaction)
            surface = strategy.surface(sent[start:])
            request = ModelRequest.model_construct(  # as the turn loop builds it: the conversion's own dicts
                model=model,
                system="s",
                tools=surface.tools,
                messages=converter.convert(sent[start:], surface.tools),
                cache_prefix_tools=surface.cache_prefix_tools,
            )
            bodies = []
            for provider in (sdk, raw):
                await _send(provider, request)
                bodies.append(server.raw_bodies[-1])
            assert bodies[1] == bodies[0]

    asyncio.run(chat())
