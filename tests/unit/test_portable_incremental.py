"""The conversion kept across requests (``core.providers.portable.PortableHistory``) is the pure
one (``for_target``) at every request of a chat that grows step by step, whatever the history
holds (every provider's blocks, switches, deferred Anthropic search results, client searches
answered with tool references): byte for byte, while the tools change under active-tools, a
compaction cuts the head of the list, the newest message is rewritten (a resume's call ids) or a
request goes to another target. And it does so at the cost of what is new: a chat that only
grows converts each message about once."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.providers.portable import PortableHistory, for_target
from tests.unit.test_portable_properties import TARGETS, chat_of, histories


def _same(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> bool:
    return json.dumps(a, ensure_ascii=False) == json.dumps(b, ensure_ascii=False)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(drawn=histories(), data=st.data())
def test_every_request_of_a_growing_chat_converts_as_the_pure_function_does(drawn: Any, data: Any) -> None:
    mode, history, anthropic_search, openai_search, _ = drawn
    chat = chat_of(mode)
    converters = {t: PortableHistory(t) for t in TARGETS}
    strategies = {t: chat.strategy(t, anthropic_search=anthropic_search, openai_search=openai_search) for t in TARGETS}
    messages: list[dict[str, Any]] = []
    start = 0
    for message in history:
        messages.append(message)
        op = data.draw(st.sampled_from(["grow", "grow", "grow", "rewrite", "cut"]))
        if op == "rewrite":  # the newest message is a new dict with the same blocks
            messages[-1] = {"role": messages[-1]["role"], "content": list(messages[-1]["content"])}
        elif op == "cut" and len(messages) - start > 2:
            start = data.draw(st.integers(start, len(messages) - 1))
        sent = messages[start:]
        target = data.draw(st.sampled_from(TARGETS))
        tools = strategies[target].surface(sent).tools
        got = converters[target].convert(sent, tools)
        want = for_target(sent, target, tools)
        assert _same(got, want), (target, op)
        assert all(a is b or a == b for a, b in zip(sent, messages[start:], strict=True))  # input untouched


def test_a_chat_that_only_grows_converts_the_whole_list_once() -> None:
    messages: list[dict[str, Any]] = []
    converter = PortableHistory("anthropic")
    for i in range(200):
        messages.append({"role": "user", "content": [{"type": "text", "text": f"question {i}"}]})
        converter.convert(messages)
        messages.append({"role": "assistant", "content": [{"type": "text", "text": f"answer {i}"}]})
        out = converter.convert(messages)
    assert converter.reconverted == 0
    assert converter.converted < 3 * len(messages)  # each message about once, not once per request
    assert _same(out, for_target(messages, "anthropic"))
    again, third = converter.convert(messages), converter.convert(messages)
    assert all(a is b for a, b in zip(again[:-1], third[:-1], strict=True))  # the frozen part's dicts are kept


def test_an_anthropic_search_answered_in_the_next_response_is_not_frozen_before_its_result() -> None:
    search = {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}
    use = {"type": "server_tool_use", "id": "srv_1", "name": "tool_search_tool_bm25", "input": {"query": "mail"}}
    result = {"type": "tool_search_tool_result", "tool_use_id": "srv_1", "content": {"tool_references": []}}
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "a", "input": {}}, use],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
        {"role": "assistant", "content": [result, {"type": "text", "text": "done"}]},
        {"role": "user", "content": [{"type": "text", "text": "next"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "sure"}]},
    ]
    converter = PortableHistory("anthropic")
    for n in range(1, len(messages) + 1):
        assert _same(converter.convert(messages[:n], [search]), for_target(messages[:n], "anthropic", [search]))
    assert converter.reconverted == 0  # the search stayed unfrozen until the response that answered it
