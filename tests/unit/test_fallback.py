"""Fallback models: when the chat's provider keeps failing after the SDK's retries (here the
loopback server answers 529 or 503 until they give up), the turn goes on on the next fallback,
with the history converted for its API; with no fallback the turn fails as before."""

from __future__ import annotations

from typing import Any

import pytest

from core.config import Settings
from core.engine import ChatOptions, Engine
from core.errors import UsageError
from core.pipeline.approvals import Decision, FixedApprover
from core.providers import make_provider
from core.providers.profiles import Waits
from core.store import Store
from tests import api_rules
from tests.streaming_server import StreamingServer

ROSTER = "production"


def failing(status: int) -> dict[str, Any]:
    return {"status": status, "headers": {"retry-after-ms": "5"}}


def answer(text: str) -> dict[str, Any]:
    return {"parts": [{"text": text}]}


def factory(server: StreamingServer, unusable: tuple[str, ...] = (), waits: Waits | None = None) -> Any:
    def make(name: str, model: str, base_url: str | None, extra: dict[str, Any]) -> Any:
        if name in unusable:
            raise UsageError(f"provider {name} needs an API key")
        bounds = {"waits": waits} if waits else {}
        return make_provider(name, model, base_url=server.url_for(name), api_key="test-key", max_retries=1, **bounds)

    return make


async def open_chat(env, server, settings: Settings, *, fallback: list[str] | None = None, unusable=(), waits=None):
    events: list[Any] = []
    engine = Engine(Store(env / "db.sqlite"), settings, provider_factory=factory(server, unusable, waits))
    session = await engine.open_chat(
        None,
        ChatOptions(provider="anthropic", model="claude-sonnet-4-6", fallback=fallback, start_demo_servers=False),
        approver=FixedApprover(Decision.ALLOW_ONCE),
        subscribers=[events.append],
    )
    return engine, session, events


@pytest.fixture
def env(home, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("status", [529, 503])
async def test_a_provider_that_keeps_failing_hands_the_turn_to_the_fallback(env, status):
    with StreamingServer([failing(status), failing(status), answer("Hello from the fallback.")]) as server:
        engine, session, events = await open_chat(env, server, Settings(fallback=["openai:gpt-5.4"]))
        result = await session.send("Hi")
        assert result.status == "done" and result.text == "Hello from the fallback."
        wires = [r["wire"] for r in server.requests]
        assert wires == ["anthropic", "anthropic", "openai"]  # one try, one retry, then the fallback
        kinds = [e.type for e in events]
        assert "provider.retrying" in kinds
        error = next(e for e in events if e.type == "error")
        switched = next(e for e in events if e.type == "provider.switched")
        assert kinds.index("error") < kinds.index("provider.switched") < kinds.index("model.text")
        assert error.code == {529: "provider.overloaded", 503: "provider.server_error"}[status]
        assert (switched.from_provider, switched.provider, switched.model) == ("anthropic", "openai", "gpt-5.4")
        assert switched.cause == "fallback" and switched.strategy == "openai" and "HTTP" in switched.reason
        assert api_rules.check("openai", server.requests[-1]["body"]) == []
        row = session.chat()
        assert (row.provider, row.model, row.strategy) == ("openai", "gpt-5.4", "openai")
        stored = engine.store.events(session.chat_id, ("provider.switched",))
        assert [e["cause"] for e in stored] == ["fallback"]
        await session.close()


async def test_a_provider_that_does_not_answer_in_time_hands_the_turn_to_the_fallback(env):
    script = [{"parts": [{"text": "too late"}], "first_byte_delay": 3}, answer("On time.")]
    with StreamingServer(script) as server:
        _, session, events = await open_chat(
            env, server, Settings(fallback=["openai-chat:gpt-4.1"]), waits=Waits(first_byte=0.3)
        )
        result = await session.send("Hi")
        assert result.status == "done" and result.text == "On time."
        assert [e.code for e in events if e.type == "error"] == ["provider.timeout"]
        assert [e.provider for e in events if e.type == "provider.switched"] == ["openai-chat"]
        await session.close()


async def test_a_request_the_provider_refuses_is_not_a_reason_to_fall_back(env):
    with StreamingServer([{"status": 400}]) as server:
        _, session, events = await open_chat(env, server, Settings(fallback=["openai:gpt-5.4"]))
        result = await session.send("Hi")
        assert result.status == "failed"
        assert [e.code for e in events if e.type == "error"] == ["provider.bad_request"]
        assert not [e for e in events if e.type == "provider.switched"]
        await session.close()


async def test_without_a_fallback_the_turn_fails_as_before(env):
    with StreamingServer([failing(529), failing(529)]) as server:
        _, session, events = await open_chat(env, server, Settings())
        result = await session.send("Hi")
        assert result.status == "failed"
        assert [r["wire"] for r in server.requests] == ["anthropic", "anthropic"]
        assert not [e for e in events if e.type == "provider.switched"]
        assert session.chat().provider == "anthropic"
        await session.close()


async def test_a_chat_names_its_own_fallbacks_over_the_config_and_skips_an_unusable_one(env):
    script = [failing(529), failing(529), answer("From the compatible endpoint.")]
    with StreamingServer(script) as server:
        engine, session, events = await open_chat(
            env,
            server,
            Settings(fallback=["openai:gpt-5.4"]),
            fallback=["openai:gpt-5.4-mini", "openai-chat:gpt-4.1"],
            unusable=("openai",),
        )
        result = await session.send("Hi")
        assert result.status == "done"
        assert [r["wire"] for r in server.requests] == ["anthropic", "anthropic", "openai-chat"]
        codes = [e.code for e in events if e.type == "error"]
        assert codes == ["provider.overloaded", "provider.fallback_unusable"]
        assert api_rules.check("openai-chat", server.requests[-1]["body"]) == []
        await session.close()
        again = await engine.open_chat(session.chat_id)
        assert again.fallback == ["openai:gpt-5.4-mini", "openai-chat:gpt-4.1"]  # kept in the chat's sources
        await again.close()


async def test_every_fallback_failing_fails_the_turn_once_each_was_tried(env):
    script = [failing(529), failing(529), failing(503), failing(503)]
    with StreamingServer(script) as server:
        _, session, events = await open_chat(env, server, Settings(fallback=["openai:gpt-5.4", "anthropic"]))
        result = await session.send("Hi")
        assert result.status == "failed"
        # anthropic (the chat's own model) is not tried again in the same turn
        assert [r["wire"] for r in server.requests] == ["anthropic", "anthropic", "openai", "openai"]
        assert [e.cause for e in events if e.type == "provider.switched"] == ["fallback"]
        await session.close()


def test_a_fallback_must_name_a_known_provider():
    with pytest.raises(ValueError, match="fallback"):
        Settings(fallback=["nosuch:model"])
