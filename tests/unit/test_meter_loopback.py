"""The meter against the loopback streaming server, whose usage is measured from each request
(``"usage": "measured"``): the client-side prefix breaks agree with what the server's prompt
cache saw. A discovery under active-tools (a ``tools`` break) and a switch to another provider
(a ``switch`` break) each read nothing from the cache on the request after them; a priced model
gets a cost, an unpriced one none."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from core.chat.meter import chat_usage
from core.config import Settings
from core.engine import ChatOptions, Engine
from core.pipeline.approvals import Decision, FixedApprover
from core.providers.wirenames import readable
from core.store import Store
from tests.streaming_server import StreamingServer, measured_usage


def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"parts": ["Let me check.", {"tool": readable(name), "input": arguments}], "usage": "measured"}


ANSWER = {"parts": ["Done."], "usage": "measured"}


@pytest.fixture
def engine(home: Path, monkeypatch: pytest.MonkeyPatch) -> Engine:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-loopback")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")
    return Engine(store=Store(home / "deferchat.db"), settings=Settings(), demo_delay=0)


async def open_on(engine: Engine, server: StreamingServer, provider: str, model: str, strategy: str) -> Any:
    opts = ChatOptions(
        provider=provider,
        model=model,
        base_url=server.url_for(provider),
        strategy=strategy,
        start_demo_servers=False,
    )
    return await engine.open_chat(None, opts, approver=FixedApprover(Decision.ALLOW_ONCE))


def test_measured_usage_reads_the_unchanged_leading_pieces_from_the_cache() -> None:
    body = {"tools": [{"name": "a"}], "system": "S" * 400, "messages": [{"role": "user", "content": "hi"}]}
    first, cached = measured_usage("anthropic", body, [])
    assert first["cache_read_input_tokens"] == 0 and first["cache_creation_input_tokens"] > 0
    longer = {**body, "messages": [*body["messages"], {"role": "assistant", "content": "hello"}]}
    second, cached = measured_usage("anthropic", longer, cached)
    assert second["cache_read_input_tokens"] == first["cache_creation_input_tokens"]  # all of the first
    other_tools = {**longer, "tools": [{"name": "b"}]}
    broken, _ = measured_usage("anthropic", other_tools, cached)
    assert broken["cache_read_input_tokens"] == 0  # the prefix broke at its first piece
    chat, _ = measured_usage("openai-chat", {"messages": [{"role": "system", "content": "x"}]}, [])
    assert chat["cache_creation_input_tokens"] == 0 and chat["input_tokens"] > 0  # OpenAI reports no writes


async def test_a_discovery_under_active_tools_breaks_the_prefix_and_the_cache_agrees(engine: Engine) -> None:
    script = [
        call("tool.search", {"query": "mailing list subscriptions"}),
        call("email.subscriptions", {"account": "all"}),
        ANSWER,
        call("time.now", {}),
        ANSWER,
    ]
    with StreamingServer(script) as server:
        session = await open_on(engine, server, "openai-chat", "compat-model", "active-tools")
        try:
            assert (await session.send("which lists do I get?")).status == "done"
            assert (await session.send("and the time?")).status == "done"
        finally:
            await session.close()
        served = [r.get("usage") for r in server.requests]
    rows = chat_usage(engine.store, session.chat_id).requests
    assert [r.cache_read for r in rows] == [u["cache_read_input_tokens"] for u in served]  # the server's own
    # the search's finds join the tools array (a break), the next step keeps them (read from the
    # cache), the next turn's pool starts again from what the history names (a break again)
    assert [[c for c, _ in r.breaks] for r in rows] == [[], ["tools"], [], ["tools"], []]
    assert "+email.subscriptions" in rows[1].breaks[0][1]
    assert rows[1].cache_read == rows[3].cache_read == 0  # each broke at its first piece, the tools
    assert rows[2].cache_read > 0 and rows[4].cache_read > 0
    assert all(r.cost_usd is None for r in rows)  # no price for the compatible model: tokens only


async def test_a_switch_is_a_switch_break_and_a_priced_model_has_a_cost(engine: Engine) -> None:
    with StreamingServer([ANSWER, ANSWER, ANSWER]) as server:
        session = await open_on(engine, server, "anthropic", "claude-sonnet-4-6", "anthropic")
        try:
            await session.send("hello")
            await session.send("again")
            session.switch("openai-chat", "compat-model", server.url_for("openai-chat"))
            await session.send("and elsewhere?")
        finally:
            await session.close()
    usage = chat_usage(engine.store, session.chat_id)
    first, second, third = usage.requests
    assert (first.provider, third.provider, third.model) == ("anthropic", "openai-chat", "compat-model")
    assert first.cost_usd is not None and first.cost_usd > 0 and third.cost_usd is None
    assert second.cache_read > 0 and second.breaks == ()
    assert third.breaks == (("switch", "anthropic/claude-sonnet-4-6 -> openai-chat/compat-model"),)
    assert third.cache_read == 0  # another API's prompt: nothing of it was cached
    assert usage.totals.breaks == {"tools": 0, "system": 0, "switch": 1} and usage.totals.unpriced == 1
    assert engine.store.events(session.chat_id, ("provider.switched",))  # E's event, beside the break
