"""Thinking and reasoning carried exactly as each API requires (issue 13, item 3).

Against the loopback streaming server with its API rules on (``anthropic_thinking``,
``deepseek_reasoning_content``: a request the real API refuses gets its HTTP 400), the recorded
OpenAI traffic for ``phase``, and the SDKs' own types for the shapes. Each rule is tested on its
own too, so a test that passes proves the adapter kept what the rule demands."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic.types as at
import pytest
from openai.types.responses import ResponseReasoningItem

from core import events as ev
from core.chat.stopping import PartialResponse
from core.engine import ChatOptions, Engine
from core.pipeline.approvals import Decision, FixedApprover
from core.providers import make_provider
from core.providers.base import (
    ModelRequest,
    ProviderError,
    ThinkingBlock,
    ThinkingDelta,
    thinking_of,
)
from core.providers.thinking import ThinkingSettings
from core.store import Store
from tests.provider_replay import Recording, Replay, cassette_response, collect, done, text_of, user
from tests.streaming_server import DEEPSEEK_REASONING_MESSAGE, parse_script, refusal, serve, thinking_signature

BUDGET = ThinkingSettings(anthropic_budget_tokens=2048)
WEATHER = {"name": "weather.get", "description": "Weather for a city.", "input_schema": {"type": "object"}}
THOUGHT = "The owner wants the weather in Oslo; I should call the weather tool."
AFTER = "It is sunny, so the answer is short."


def thoughts(events: list[Any]) -> str:
    return "".join(e.text for e in events if isinstance(e, ThinkingDelta))


def adapter(server: Any, wire: str, model: str, **options: Any) -> Any:
    """The real adapter for ``wire``, pointed at the loopback server."""
    return make_provider(wire, model, base_url=server.url_for(wire), env={}, **options)


async def open_chat(server: Any, wire: str, model: str, events: list[ev.Event], **options: Any) -> tuple[Engine, Any]:
    """A chat through the engine on the loopback server (settings from the test's home)."""
    engine = Engine(Store())
    session = await engine.open_chat(
        None,
        ChatOptions(provider=wire, model=model, base_url=server.url_for(wire), start_demo_servers=False, **options),
        approver=FixedApprover(Decision.ALLOW_ONCE),
        subscribers=[events.append],
    )
    return engine, session


def answered(content: list[dict[str, Any]], result: str = "sunny, 21 C") -> list[dict[str, Any]]:
    """The history after one response with a tool use: the question, the response, its result."""
    [use] = [b for b in content if b["type"] == "tool_use"]
    return [
        user("Weather in Oslo?"),
        {"role": "assistant", "content": content},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use["id"], "content": result}]},
    ]


# --- Anthropic extended thinking ---------------------------------------------------------------------


async def test_anthropic_thinking_goes_back_signed_and_in_order_through_a_tool_loop() -> None:
    script = {
        "rules": ["anthropic_thinking"],
        "responses": [
            {
                "parts": [
                    {"thinking": THOUGHT, "chunk_chars": 12},
                    {"redacted_thinking": "EmwKAhgBEgy3va3pzix/LafPsn4a"},
                    {"tool": "weather__get", "input": {"city": "Oslo"}},
                ]
            },
            {"parts": [{"thinking": AFTER}, {"text": "Sunny, 21 C."}]},
        ],
    }
    with serve(script) as server:
        p = adapter(server, "anthropic", "claude-sonnet-4-6", thinking=BUDGET)
        request = ModelRequest(
            model="claude-sonnet-4-6", system="", tools=[WEATHER], messages=[user("Weather in Oslo?")]
        )
        first = await collect(p, request)
        # streamed in pieces, then whole with its signature; the tool use after it
        assert thoughts(first) == THOUGHT and len([e for e in first if isinstance(e, ThinkingDelta)]) > 1
        blocks = [e.block for e in first if isinstance(e, ThinkingBlock)]
        assert blocks == [
            {"type": "thinking", "thinking": THOUGHT, "signature": thinking_signature(THOUGHT)},
            {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"},
        ]
        content = done(first).content
        assert [b["type"] for b in content] == ["thinking", "redacted_thinking", "tool_use"]
        assert content[:2] == blocks
        at.ThinkingBlock.model_validate(content[0])  # the SDK's own shapes
        at.RedactedThinkingBlock.model_validate(content[1])

        second = await collect(p, request.model_copy(update={"messages": answered(content)}))
        assert text_of(second) == "Sunny, 21 C." and thoughts(second) == AFTER

    sent = [r["body"] for r in server.requests]
    assert [r["outcome"] for r in server.requests] == ["completed", "completed"]  # the rule let both pass
    for body in sent:
        assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
        assert body["max_tokens"] == 4096 + 2048 > body["thinking"]["budget_tokens"]
        assert "temperature" not in body and "top_k" not in body
    assert all(r["headers"]["anthropic-beta"] == "interleaved-thinking-2025-05-14" for r in server.requests)
    echoed = sent[1]["messages"][1]["content"]
    assert echoed[:2] == blocks  # unchanged, in order, before the tool use
    assert thinking_of(content) == [(THOUGHT, False), ("", True)]


async def test_the_anthropic_rule_refuses_altered_or_missing_thinking() -> None:
    """What the rule enforces, so the test above cannot pass by accident."""
    script = {"rules": ["anthropic_thinking"], "responses": [{"parts": ["never used"]}]}
    use: dict[str, Any] = {"type": "tool_use", "id": "toolu_1", "name": "weather__get", "input": {}}
    signed: dict[str, Any] = {"type": "thinking", "thinking": THOUGHT, "signature": thinking_signature(THOUGHT)}
    with serve(script) as server:
        p = adapter(server, "anthropic", "claude-sonnet-4-6", thinking=BUDGET)
        edited = [{**signed, "thinking": THOUGHT + " (edited)"}, use]
        request = ModelRequest(model="claude-sonnet-4-6", system="", tools=[WEATHER], messages=answered(edited))
        with pytest.raises(ProviderError) as failed:
            await collect(p, request)
        assert failed.value.status == 400 and "Invalid `signature`" in failed.value.message
    assert [r["outcome"] for r in server.requests] == ["refused"]
    # with thinking on, tool uses answered without their thinking (the adapter never sends that:
    # see the next test, so the rule is read directly)
    body = {"thinking": {"type": "enabled", "budget_tokens": 2048}, "messages": answered([use])}
    assert "must start with a thinking block" in (refusal("anthropic", body, parse_script(script)) or "")
    assert refusal("anthropic", {**body, "messages": answered([signed, use])}, parse_script(script)) is None
    assert refusal("anthropic", {"messages": answered([use])}, parse_script(script)) is None  # thinking off


def test_anthropic_thinking_only_for_models_that_think_and_never_sends_reasoning_content() -> None:
    history = [
        user("hi"),
        {
            "role": "assistant",
            "content": [{"type": "reasoning_content", "text": "deepseek's"}, {"type": "text", "text": "yo"}],
        },
        user("again"),
    ]
    request = ModelRequest(model="claude-3-5-haiku-latest", system="", messages=history)
    old = make_provider("anthropic", "claude-3-5-haiku-latest", env={}, api_key="k", thinking=BUDGET)
    params, _ = old.build_params(request)  # type: ignore[attr-defined]
    assert "thinking" not in params and "extra_headers" not in params and params["max_tokens"] == 4096
    assert params["messages"][1]["content"] == [{"type": "text", "text": "yo"}]
    off = make_provider("anthropic", "claude-sonnet-4-6", env={}, api_key="k")
    assert "thinking" not in off.build_params(request.model_copy(update={"model": "claude-sonnet-4-6"}))[0]  # type: ignore[attr-defined]


async def test_a_tool_loop_begun_without_thinking_is_answered_without_it() -> None:
    """Thinking turned on mid-loop (or a turn another provider began): the API refuses thinking
    when the last assistant message's tool uses have no thinking before them, so that request
    goes without; the next turn thinks again."""
    script = {
        "rules": ["anthropic_thinking"],
        "responses": [{"parts": ["Sunny."]}, {"parts": [{"thinking": AFTER}, "Ok."]}],
    }
    unthought: list[dict[str, Any]] = [
        {"type": "text", "text": "Looking."},
        {"type": "tool_use", "id": "toolu_1", "name": "weather.get", "input": {}},
    ]
    with serve(script) as server:
        p = adapter(server, "anthropic", "claude-sonnet-4-6", thinking=BUDGET)
        history = answered(unthought)
        request = ModelRequest(model="claude-sonnet-4-6", system="", tools=[WEATHER], messages=history)
        assert text_of(await collect(p, request)) == "Sunny."
        later = [*history, {"role": "assistant", "content": [{"type": "text", "text": "Sunny."}]}, user("thanks")]
        await collect(p, request.model_copy(update={"messages": later}))
    first, second = (r["body"] for r in server.requests)
    assert "thinking" not in first and first["max_tokens"] == 4096
    assert second["thinking"]["budget_tokens"] == 2048
    assert [r["outcome"] for r in server.requests] == ["completed", "completed"]


def test_interleaved_thinking_only_where_the_model_has_it() -> None:
    request = ModelRequest(model="claude-3-7-sonnet-latest", system="", messages=[user("hi")])
    p = make_provider("anthropic", "claude-3-7-sonnet-latest", env={}, api_key="k", thinking=BUDGET)
    params, _ = p.build_params(request)  # type: ignore[attr-defined]
    assert params["thinking"]["budget_tokens"] == 2048 and "extra_headers" not in params


def test_ask_thinking_budget_overrides_the_config(home: Path) -> None:
    from core.cli import ask
    from core.cli.parser import build_parser

    (home / "config.toml").write_text("[thinking]\nanthropic_budget_tokens = 4000\nopenai_effort = 'low'\n")
    parser = build_parser()
    assert ask.settings_for(parser.parse_args(["ask", "hi"])).thinking.anthropic_budget_tokens == 4000
    off = ask.settings_for(parser.parse_args(["ask", "hi", "--thinking-budget", "0"])).thinking
    assert off.anthropic_budget_tokens == 0 and off.openai_effort == "low"
    with pytest.raises(SystemExit):
        parser.parse_args(["ask", "hi", "--thinking-budget", "100"])


def test_a_budget_below_the_apis_minimum_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1024"):
        ThinkingSettings(anthropic_budget_tokens=500)
    assert ThinkingSettings(anthropic_budget_tokens=0).anthropic_budget_tokens == 0


# --- OpenAI Responses reasoning -------------------------------------------------------------------


async def test_responses_reasoning_settings_summary_deltas_and_the_item_echoed_verbatim() -> None:
    script = [
        {"parts": [{"thinking": "Check the weather tool first.", "signature": "gAAAAenc1"}, {"tool": "weather__get"}]},
        {"parts": [{"text": "Sunny."}]},
    ]
    thinking = ThinkingSettings(openai_effort="medium", openai_summary="auto")
    with serve(script) as server:
        p = adapter(server, "openai", "gpt-5.4", thinking=thinking)
        request = ModelRequest(model="gpt-5.4", system="", tools=[WEATHER], messages=[user("Weather in Oslo?")])
        first = await collect(p, request)
        assert thoughts(first) == "Check the weather tool first."
        content = done(first).content
        [item] = [b["item"] for b in content if b["type"] == "provider_item"]
        ResponseReasoningItem.model_validate(item)
        assert (
            item["encrypted_content"] == "gAAAAenc1" and item["summary"][0]["text"] == "Check the weather tool first."
        )
        await collect(p, request.model_copy(update={"messages": answered(content)}))
    first_body, second_body = (r["body"] for r in server.requests)
    assert first_body["reasoning"] == {"effort": "medium", "summary": "auto"}
    assert first_body["include"] == ["reasoning.encrypted_content"]
    assert second_body["input"][1] == item  # the reasoning item, verbatim, before its function call
    assert second_body["input"][2]["type"] == "function_call"
    # a model that does not reason gets no reasoning settings
    plain = make_provider("openai", "gpt-4.1", env={}, api_key="k", thinking=thinking)
    assert "reasoning" not in plain.build_params(request.model_copy(update={"model": "gpt-4.1"}))[0]  # type: ignore[attr-defined]


async def test_responses_phase_of_a_recorded_message_is_resent() -> None:
    """The recorded answer (pydantic-ai, real gpt-5.4 traffic) carries ``phase: final_answer``:
    it stays on the text and goes back on the echoed assistant message."""
    last = Recording("test_openai_native_tool_search_streaming.yaml").interactions[-1]
    replay = Replay([cassette_response(last)])
    p = make_provider("openai", "gpt-5.4", env={}, api_key="k", http_client=replay.client())
    events = await collect(p, ModelRequest(model="gpt-5.4", system="", messages=[user("rate?")]))
    content = done(events).content
    assert content == [{"type": "text", "text": text_of(events), "openai": {"phase": "final_answer"}}]
    history = [user("rate?"), {"role": "assistant", "content": content}, user("thanks")]
    params, _ = p.build_params(ModelRequest(model="gpt-5.4", system="", messages=history))  # type: ignore[attr-defined]
    assert params["input"][1] == {"role": "assistant", "content": text_of(events), "phase": "final_answer"}
    # texts of two phases stay two messages, each with its own
    mixed = [
        {"type": "text", "text": "Looking it up.", "openai": {"phase": "commentary"}},
        {"type": "text", "text": "1 USD = 0.92 EUR", "openai": {"phase": "final_answer"}},
    ]
    params, _ = p.build_params(  # type: ignore[attr-defined]
        ModelRequest(model="gpt-5.4", system="", messages=[user("rate?"), {"role": "assistant", "content": mixed}])
    )
    assert [m.get("phase") for m in params["input"][1:]] == ["commentary", "final_answer"]


# --- OpenAI-compatible thinking mode (DeepSeek) ----------------------------------------------------


DEEPSEEK = {
    "rules": ["deepseek_reasoning_content"],
    "responses": [
        {"parts": [{"thinking": THOUGHT, "chunk_chars": 10}, {"tool": "weather__get", "input": {"city": "Oslo"}}]},
        {"parts": [{"thinking": AFTER}, {"text": "Sunny, 21 C."}]},
    ],
}


@pytest.mark.parametrize("streaming", [True, False])
async def test_reasoning_content_is_stored_and_sent_back_with_its_tool_calls(streaming: bool) -> None:
    with serve(DEEPSEEK) as server:
        p = adapter(server, "openai-chat", "deepseek-reasoner", streaming=streaming)
        request = ModelRequest(
            model="deepseek-reasoner", system="", tools=[WEATHER], messages=[user("Weather in Oslo?")]
        )
        first = await collect(p, request)
        assert thoughts(first) == THOUGHT
        content = done(first).content
        assert content[0] == {"type": "reasoning_content", "text": THOUGHT}
        assert [b["type"] for b in content] == ["reasoning_content", "tool_use"]
        assert [e.block for e in first if isinstance(e, ThinkingBlock)] == [content[0]]
        second = await collect(p, request.model_copy(update={"messages": answered(content)}))
        assert text_of(second) == "Sunny, 21 C."
        assert done(second).content == [
            {"type": "reasoning_content", "text": AFTER},
            {"type": "text", "text": "Sunny, 21 C."},
        ]
    assert [r["outcome"] for r in server.requests] == ["completed", "completed"]
    assistant = server.requests[1]["body"]["messages"][1]
    assert (
        assistant["reasoning_content"] == THOUGHT and assistant["tool_calls"][0]["function"]["name"] == "weather__get"
    )


async def test_the_deepseek_rule_refuses_a_tool_call_turn_without_its_reasoning() -> None:
    """What the server enforces (and the adapter did before this fix: it dropped the reasoning)."""
    with serve(DEEPSEEK) as server:
        p = adapter(server, "openai-chat", "deepseek-reasoner")
        dropped = [{"type": "tool_use", "id": "call_1", "name": "weather.get", "input": {"city": "Oslo"}}]
        request = ModelRequest(model="deepseek-reasoner", system="", tools=[WEATHER], messages=answered(dropped))
        with pytest.raises(ProviderError) as failed:
            await collect(p, request)
    assert failed.value.status == 400 and failed.value.code == "provider.bad_request"
    assert DEEPSEEK_REASONING_MESSAGE in failed.value.message
    assert server.requests[0]["outcome"] == "refused"


async def test_a_whole_chat_turn_with_a_tool_call_passes_the_deepseek_rule(home: Path) -> None:
    """The engine end to end: the turn's tool loop sends the reasoning back, the events carry
    the thinking, and the store keeps it with the tool call."""
    events: list[ev.Event] = []
    with serve(
        {
            "rules": ["deepseek_reasoning_content"],
            "responses": [
                {"parts": [{"thinking": THOUGHT}, {"tool": "chat__title", "input": {"title": "Oslo weather"}}]},
                {"parts": [{"thinking": AFTER}, {"text": "Done."}]},
            ],
        }
    ) as server:
        engine, session = await open_chat(server, "openai-chat", "deepseek-reasoner", events, strategy="active-tools")
        try:
            result = await session.send("Title this chat, then say done.")
        finally:
            await session.close()
    assert result.status == "done" and result.text == "Done.", [e for e in events if e.type == "error"]
    assert [r["outcome"] for r in server.requests] == ["completed", "completed"]
    sent = [m for m in server.requests[1]["body"]["messages"] if m["role"] == "assistant"]
    assert sent[-1]["reasoning_content"] == THOUGHT and sent[-1]["tool_calls"]
    whole = [(e.text, e.redacted) for e in events if isinstance(e, ev.ModelThinking)]
    assert whole == [(THOUGHT, False), (AFTER, False)]
    streamed = "".join(e.text for e in events if isinstance(e, ev.ModelThinkingDelta))
    assert streamed == THOUGHT + AFTER
    stored = [m.blocks for m in engine.store.messages(session.chat_id) if m.role == "assistant"]
    assert stored[0][0] == {"type": "reasoning_content", "text": THOUGHT}
    assert engine.store.events(session.chat_id, ("model.thinking",))[0]["text"] == THOUGHT


# --- a stop keeps only whole thinking ---------------------------------------------------------------


def test_a_stop_keeps_whole_thinking_blocks_and_never_half_a_thought() -> None:
    signed = {"type": "thinking", "thinking": THOUGHT, "signature": "sig"}
    use = {"type": "tool_use", "id": "toolu_1", "name": "weather.get", "input": {}}
    partial = PartialResponse(texts=["So far"], tool_uses=[use], thinking=[signed])
    assert partial.content() == [signed, {"type": "text", "text": "So far"}, use]
    # deltas of a block still streaming never reach the partial: nothing to keep, nothing unsigned sent
    assert PartialResponse(texts=[" "]).content() == []


async def test_stopped_mid_thought_the_chat_keeps_no_unsigned_thinking_and_goes_on(home: Path) -> None:
    import asyncio

    events: list[ev.Event] = []
    script = {
        "rules": ["anthropic_thinking"],
        "responses": [
            {"parts": [{"thinking": THOUGHT, "chunk_chars": 5}], "stall_after_chunks": 3},
            {"parts": [{"thinking": AFTER}, {"text": "Here."}]},
        ],
    }
    (home / "config.toml").write_text("[thinking]\nanthropic_budget_tokens = 2048\n")
    with serve(script) as server:
        engine, session = await open_chat(server, "anthropic", "claude-sonnet-4-6", events)
        try:
            turn = asyncio.create_task(session.send("think hard"))
            for _ in range(500):
                if sum(isinstance(e, ev.ModelThinkingDelta) for e in events) >= 3:
                    break
                await asyncio.sleep(0.01)
            assert session.stop()
            assert (await asyncio.wait_for(turn, 5)).status == "stopped"
            stored = [m.blocks for m in engine.store.messages(session.chat_id) if m.role == "assistant"]
            assert stored == []  # a thought without its signature is not kept
            nxt = await session.send("and now?")
        finally:
            await session.close()
    assert nxt.status == "done" and nxt.text == "Here."
    assert server.requests[1]["outcome"] == "completed"
    assert server.requests[1]["body"]["thinking"]["budget_tokens"] == 2048


# --- ask: what the headless printer shows -------------------------------------------------------------


def test_ask_prints_thinking_as_whole_json_lines_or_one_note(capsys: pytest.CaptureFixture[str]) -> None:
    from core.cli.printer import EventPrinter

    stream = [
        ev.ModelThinkingDelta(text="Let me "),
        ev.ModelThinkingDelta(text="think."),
        ev.ModelThinking(text="Let me think."),
        ev.ModelTextDelta(text="Answer."),
        ev.ModelText(text="Answer."),
    ]
    as_json = EventPrinter(True)
    for event in stream:
        as_json(event)
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["type"] for line in lines] == ["model.thinking", "model.text.delta", "model.text"]
    assert lines[0]["text"] == "Let me think." and lines[0]["redacted"] is False

    as_text = EventPrinter(False)
    for event in stream:
        as_text(event)
    out = capsys.readouterr()
    assert out.out == "Answer." and out.err == "[thinking...]\n"
