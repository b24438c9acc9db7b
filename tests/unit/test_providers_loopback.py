"""Each SDK adapter against a recorded response served by a real HTTP server on 127.0.0.1,
through the SDK's own HTTP client (no mock transport), with no API key configured."""

from __future__ import annotations

import json

from core.providers import make_provider
from core.providers.base import ModelRequest
from tests.provider_replay import Recording, chunk_lines, collect, done, kinds, split_sessions, sse, text_of, user
from tests.replay_server import ReplayServer

SSE = "text/event-stream"


async def test_anthropic_deferred_search_over_loopback():
    sessions = split_sessions(chunk_lines("anthropic-tool-search-deferred-bm25.chunks.txt"), "message_stop")
    with ReplayServer([(200, SSE, sse(s)) for s in sessions[:2]]) as server:
        p = make_provider("anthropic", "claude-sonnet-4-6", base_url=server.url, env={})
        tools = [
            {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"},
            {"name": "notes.read_tree", "input_schema": {"type": "object"}},
            {"name": "executeEditorOperation", "input_schema": {"type": "object"}, "defer_loading": True},
        ]
        request = ModelRequest(
            model="claude-sonnet-4-6",
            system="You edit notes.",
            tools=tools,
            messages=[user("Add 'bye'.")],
            cache_prefix_tools=1,
        )
        first = done(await collect(p, request))
        assert [b["type"] for b in first.content] == ["text", "tool_use", "server_tool_use"]
        # the recording calls readNoteTree; no tool has that wire name here, so it comes back raw
        assert first.content[1]["name"] == "readNoteTree"
        answer = {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": first.content[1]["id"], "content": "hi"}],
        }
        events = await collect(
            p,
            request.model_copy(
                update={"messages": [*request.messages, {"role": "assistant", "content": first.content}, answer]}
            ),
        )
    assert kinds(events, "tool_search_result")[0].tool_use_id == first.content[2]["id"]
    assert [r["path"] for r in server.requests] == ["/v1/messages", "/v1/messages"]
    sent = server.requests[0]["body"]
    assert sent["stream"] is True and sent["tools"][1]["name"] == "notes__read_tree"
    assert sent["tools"][1]["cache_control"] == {"type": "ephemeral"}
    assert server.requests[1]["body"]["messages"][1]["content"][2]["type"] == "server_tool_use"


async def test_openai_hosted_search_over_loopback():
    lines = chunk_lines("openai-tool-search.1.chunks.txt")
    with ReplayServer([(200, SSE, sse(lines))]) as server:
        p = make_provider("openai", "gpt-5.4", base_url=server.url + "/v1", env={})
        tools = [
            {"type": "tool_search"},
            {"name": "get_weather", "input_schema": {"type": "object"}, "defer_loading": True},
        ]
        events = await collect(p, ModelRequest(model="gpt-5.4", system="", tools=tools, messages=[user("SF?")]))
    assert server.requests[0]["path"] == "/v1/responses"
    assert server.requests[0]["body"]["tools"][0] == {"type": "tool_search"}
    assert [e.kind for e in events if e.kind in ("server_tool_use", "tool_search_result", "tool_use")] == [
        "server_tool_use",
        "tool_search_result",
        "tool_use",
    ]


async def test_openai_chat_active_tools_over_loopback():
    rec = Recording("test_tool_search_eval[openai-chat].yaml")
    with ReplayServer([(200, "application/json", json.dumps(rec.responses[0]).encode())]) as server:
        p = make_provider("openai-chat", "gpt-5.4-mini", base_url=server.url + "/v1", env={}, streaming=False)
        events = await collect(
            p,
            ModelRequest(
                model="gpt-5.4-mini",
                system="",
                tools=rec.tools(0, schema_key="parameters"),
                messages=[user("What is the current exchange rate from USD to EUR?")],
            ),
        )
    assert server.requests[0]["path"] == "/v1/chat/completions"
    assert server.requests[0]["body"]["tools"] == rec.requests[0]["tools"]
    [call] = kinds(events, "tool_use")
    assert (call.name, call.input) == ("search_tools", {"queries": ["exchange rate currency USD EUR current"]})
    assert text_of(events) == ""
