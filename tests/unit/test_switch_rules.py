"""The API rules (tests/api_rules.py) hold for real recorded traffic and catch broken requests;
and the history conversion (core.providers.portable) is what makes a foreign history pass them.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from core.providers import make_provider
from core.providers.base import ModelRequest
from core.providers.openai_responses import _Reader
from core.providers.portable import for_target
from core.providers.wirenames import WireNames
from tests import api_rules
from tests.provider_replay import PYDANTIC, cassette, vercel_json

RECORDED = [
    (path.name, n, i["request"]["parsed_body"], i["request"]["uri"])
    for path in sorted(PYDANTIC.glob("*.yaml"))
    for n, i in enumerate(cassette(path.name))
]


def wire_of(uri: str) -> str:
    return "anthropic" if "anthropic" in uri else "openai" if "/responses" in uri else "openai-chat"


@pytest.mark.parametrize(("name", "n", "body", "uri"), RECORDED, ids=[f"{r[0]}#{r[1]}" for r in RECORDED])
def test_real_recorded_requests_pass_their_apis_rules(name, n, body, uri):
    assert api_rules.check(wire_of(uri), body) == []


def recorded(name: str, n: int) -> dict[str, Any]:
    return copy.deepcopy(next(r[2] for r in RECORDED if r[0] == name and r[1] == n))


ANTHROPIC_SEARCH = "test_anthropic_native_tool_search_streaming.yaml"
OPENAI_CLIENT = "test_openai_client_tool_search_streaming.yaml"
CHAT = "test_tool_search_eval[openai-chat].yaml"


def _drop_result(body):
    body["messages"][2]["content"] = [{"type": "text", "text": "no result"}]


def _foreign_block(body):
    body["messages"][1]["content"].append({"type": "provider_item", "provider": "openai", "item": {}})


def _undeclared_tool(body):
    body["tools"] = [t for t in body["tools"] if t.get("name") != "get_exchange_rate"]


def _illegal_name(body):
    body["tools"][0]["name"] = "tasks.create"


def _orphan_search_result(body):
    del body["messages"][1]["content"][1]  # the server_tool_use, keeping its result


def _thinking_without_signature(body):
    body["messages"][1]["content"].insert(0, {"type": "thinking", "thinking": "hmm"})


def _openai_output_without_call(body):
    del body["input"][3]


def _openai_call_without_output(body):
    del body["input"][4]


def _openai_anthropic_block(body):
    body["input"].append({"type": "server_tool_use", "id": "srvtoolu_1", "name": "x", "input": {}})


def _openai_search_without_tool(body):
    body["tools"] = [t for t in body["tools"] if t.get("type") != "tool_search"]


def _openai_reasoning_alone(body):
    body["input"].insert(5, {"type": "reasoning", "id": "rs_1", "summary": []})


def _chat_unanswered(body):
    del body["messages"][2]


def _chat_defer_loading(body):
    body["tools"][0]["function"]["defer_loading"] = True


def _chat_provider_tool(body):
    body["tools"].append({"type": "tool_search"})


def _chat_foreign_key(body):
    body["messages"][1]["provider_item"] = {}


BROKEN = [
    ("anthropic", ANTHROPIC_SEARCH, 1, _drop_result),
    ("anthropic", ANTHROPIC_SEARCH, 1, _foreign_block),
    ("anthropic", ANTHROPIC_SEARCH, 1, _undeclared_tool),
    ("anthropic", ANTHROPIC_SEARCH, 1, _illegal_name),
    ("anthropic", ANTHROPIC_SEARCH, 1, _orphan_search_result),
    ("anthropic", ANTHROPIC_SEARCH, 1, _thinking_without_signature),
    ("openai", OPENAI_CLIENT, 2, _openai_output_without_call),
    ("openai", OPENAI_CLIENT, 2, _openai_call_without_output),
    ("openai", OPENAI_CLIENT, 2, _openai_anthropic_block),
    ("openai", OPENAI_CLIENT, 2, _openai_search_without_tool),
    ("openai", OPENAI_CLIENT, 2, _openai_reasoning_alone),
    ("openai-chat", CHAT, 2, _chat_unanswered),
    ("openai-chat", CHAT, 2, _chat_defer_loading),
    ("openai-chat", CHAT, 2, _chat_provider_tool),
    ("openai-chat", CHAT, 2, _chat_foreign_key),
]


@pytest.mark.parametrize(("wire", "name", "n", "breaks"), BROKEN, ids=[b[3].__name__ for b in BROKEN])
def test_a_broken_request_fails_its_apis_rules(wire, name, n, breaks):
    body = recorded(name, n)
    assert api_rules.check(wire, body) == []
    breaks(body)
    assert api_rules.check(wire, body) != []


# --- the conversion, on a history no single provider wrote --------------------------------------


def foreign_history() -> list[dict[str, Any]]:
    """An OpenAI client search and its answer, the call it loaded, then an Anthropic turn with a
    thinking block and a DeepSeek-style reasoning_content block (engine shape)."""
    names = WireNames(["get_weather", "search_files"])
    reader = _Reader(names)
    first = [b for item in vercel_json("openai-client-tool-search.1.json")["output"] for b in reader.read(item)[1]]
    second = [b for item in vercel_json("openai-client-tool-search.2.json")["output"] for b in reader.read(item)[1]]
    search_id = first[0]["item"]["call_id"]
    call = second[0]
    return [
        {"role": "user", "content": [{"type": "text", "text": "Weather in SF?"}]},
        {"role": "assistant", "content": first},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": search_id, "content": [
            {"type": "tool_reference", "tool_name": "get_weather"}]}]},
        {"role": "assistant", "content": second},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": "61F"}]},
        {"role": "assistant", "content": [
            {"type": "reasoning_content", "text": "the user wants a summary"},
            {"type": "thinking", "thinking": "summarise", "signature": "c2ln"},
            {"type": "text", "text": "It is 61F."},
        ]},
        {"role": "user", "content": [{"type": "text", "text": "Thanks"}]},
    ]  # fmt: skip


def tools_for(target: str) -> list[dict[str, Any]]:
    weather = {"name": "get_weather", "description": "weather", "input_schema": {"type": "object"}}
    if target == "openai-chat":
        return [weather]
    if target == "openai":
        return [{**weather, "defer_loading": False}, {"type": "tool_search", "execution": "client"}]
    return [weather]


@pytest.mark.parametrize("target", ["anthropic", "openai", "openai-chat"])
def test_a_foreign_history_is_converted_into_what_the_target_accepts(target):
    history = foreign_history()
    before = json.dumps(history)
    tools = tools_for(target)
    provider = make_provider(target, "m", api_key="k")
    converted = for_target(history, target, tools)
    params, _ = provider.build_params(ModelRequest(model="m", system="s", tools=tools, messages=converted))  # type: ignore[attr-defined]
    assert api_rules.check(target, params) == []
    assert json.dumps(history) == before  # pure: the stored history is not touched
    kinds = {b["type"] for m in converted for b in m["content"]}
    assert {"text", "tool_use", "tool_result"} <= kinds
    assert ("thinking" in kinds) == (target == "anthropic")
    assert ("reasoning_content" in kinds) == (target == "openai-chat")
    assert ("provider_item" in kinds) == (target == "openai")


def test_without_the_conversion_the_anthropic_request_breaks_the_rules():
    provider = make_provider("anthropic", "m", api_key="k")
    raw = foreign_history()
    params, _ = provider.build_params(ModelRequest(model="m", system="s", tools=tools_for("anthropic"), messages=raw))  # type: ignore[attr-defined]
    problems = api_rules.check("anthropic", params)
    # the answer to OpenAI's client search, whose call Anthropic never sees
    assert any("which the previous message did not call" in p for p in problems)
    assert any("two user messages in a row" in p for p in problems)


SEARCH_TOOL = {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}


def deferred_case() -> list[dict[str, Any]]:
    """Anthropic's deferred case: a response with a client tool_use and a server search whose
    result is to open the next response (engine shape, as the adapter stores it)."""
    return [
        {"role": "user", "content": [{"type": "text", "text": "Weather and files?"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"location": "SF"}},
                {"type": "server_tool_use", "id": "srvtoolu_1", "name": SEARCH_TOOL["name"], "input": {"query": "f"}},
            ],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "61F"}]},
    ]  # fmt: skip


def anthropic_body(messages: list[dict[str, Any]]) -> dict[str, Any]:
    tools = [{"name": "get_weather", "description": "w", "input_schema": {"type": "object"}}, SEARCH_TOOL]
    provider = make_provider("anthropic", "m", api_key="k")
    converted = for_target(messages, "anthropic", tools)
    params, _ = provider.build_params(ModelRequest(model="m", system="s", tools=tools, messages=converted))  # type: ignore[attr-defined]
    return params


def test_a_server_search_waiting_for_the_next_response_is_kept_while_it_can_still_come():
    body = anthropic_body(deferred_case())
    assert api_rules.check("anthropic", body) == []
    assert any(b["type"] == "server_tool_use" for b in body["messages"][1]["content"])


def test_a_server_search_whose_response_a_fallback_gave_is_dropped_on_the_way_back():
    history = [
        *deferred_case(),
        {"role": "assistant", "content": [{"type": "text", "text": "It is 61F (from the fallback)."}]},
        {"role": "user", "content": [{"type": "text", "text": "Thanks"}]},
    ]
    raw = make_provider("anthropic", "m", api_key="k")
    tools = [{"name": "get_weather", "description": "w", "input_schema": {"type": "object"}}, SEARCH_TOOL]
    unconverted, _ = raw.build_params(ModelRequest(model="m", system="s", tools=tools, messages=history))  # type: ignore[attr-defined]
    assert any("has no tool_search_tool_result" in p for p in api_rules.check("anthropic", unconverted))
    body = anthropic_body(history)
    assert api_rules.check("anthropic", body) == []
    assert not any(b["type"] == "server_tool_use" for m in body["messages"] for b in m["content"])
