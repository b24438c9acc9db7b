"""What the model picker offers: the providers usable now (a key, or a base URL; the demo
always) and their profiles' models; a typed name on the current provider or another."""

from __future__ import annotations

import pytest

from core.chat.switch import models_of, parse_target, strategy_for, usable_providers
from core.config import Settings
from core.errors import UsageError
from tui.screens.model_picker import choices, parse_typed


def test_only_providers_with_a_key_or_a_base_url_are_offered(home, monkeypatch):
    assert usable_providers(Settings()) == ["demo"]
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    assert usable_providers(Settings()) == ["demo", "anthropic"]
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")
    assert usable_providers(Settings()) == ["demo", "anthropic", "openai", "openai-chat"]
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.delenv("OPENAI_BASE_URL")
    settings = Settings(provider="openai-chat", base_url="http://127.0.0.1:8000/v1")
    assert usable_providers(settings) == ["demo", "openai-chat"]


@pytest.mark.parametrize(
    ("env", "settings"),
    [
        ({}, Settings()),
        ({"ANTHROPIC_API_KEY": "sk-ant-test"}, Settings()),
        ({"OPENAI_BASE_URL": "http://127.0.0.1:11434/v1"}, Settings()),
        ({}, Settings(provider="openai-chat", base_url="http://127.0.0.1:8000/v1")),
        ({}, Settings(base_url="http://127.0.0.1:8000/v1")),  # no provider named: the URL is no one's
    ],
)
def test_the_picker_offers_what_the_factory_builds(home, monkeypatch, env, settings):
    from core.providers.factory import default_provider_factory
    from core.providers.profiles import PROFILES, profile_for

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    make = default_provider_factory(settings)
    usable = usable_providers(settings)
    for name in PROFILES:
        if name == "script":
            continue  # needs a file: never offered
        builds = True
        try:
            make(name, profile_for(name).default_model, settings.base_url_for(name), {})
        except UsageError:
            builds = False
        assert builds == (name in usable), name


def test_each_provider_lists_its_default_model_first():
    for provider in ("anthropic", "openai", "openai-chat", "demo"):
        models = models_of(provider)
        assert models and len(models) == len(set(models))
    assert models_of("anthropic")[0] == "claude-sonnet-4-6"
    rows = choices(["demo", "anthropic"], {p: models_of(p) for p in ("demo", "anthropic")})
    assert rows[0] == ("demo", "demo-1") and ("anthropic", "claude-opus-4-6") in rows


def test_a_typed_model_names_its_provider_or_leaves_it_to_the_naming_rule():
    """``provider:model`` names both; a bare name (even with a slash or a colon, as gateways and
    Ollama write them) names no provider: core.providers.naming finds it (tests/unit/test_naming.py)."""
    assert parse_typed("openai-chat:qwen3:8b") == ("openai-chat", "qwen3:8b")
    assert parse_typed("openai/gpt-4.1") == ("", "openai/gpt-4.1")
    assert parse_typed("my-model") == ("", "my-model")
    assert parse_typed("   ") is None


def test_fallback_entries_and_strategies_resolved_for_the_new_provider():
    assert parse_target("openai:gpt-5.4") == ("openai", "gpt-5.4")
    assert parse_target("anthropic") == ("anthropic", "claude-sonnet-4-6")
    with pytest.raises(UsageError):
        parse_target("nosuch:x")
    settings = Settings()
    assert strategy_for("auto", "openai", "gpt-5.4", None, settings)[0] == "openai"
    assert strategy_for(None, "openai", "gpt-4.1", None, settings)[0] == "active-tools"
    assert strategy_for("wrapper", "anthropic", "claude-sonnet-4-6", None, settings)[0] == "wrapper"
    strategy, reason = strategy_for("anthropic", "openai-chat", "gpt-4.1", None, settings)
    assert strategy == "active-tools" and "cannot run" in reason


async def test_the_owner_switch_keeps_what_the_chat_has_and_takes_the_rest_from_settings(home):
    """A switch names a provider and a model (the picker) or less (``ask --chat``): on the chat's
    own provider the rest stays as the chat has it; another provider gets its settings' model and,
    when it is the configured provider, the configured base URL (the picker offers it for that URL,
    so the switch must build it with it)."""
    from core.chat.options import ChatOptions
    from core.chat.switch import owner_target
    from core.engine import Engine

    url = "http://127.0.0.1:8000/v1"
    engine = Engine(settings=Settings(provider="demo", model="demo-1"))
    session = await engine.open_chat(None, ChatOptions(start_demo_servers=False))
    try:
        assert owner_target(session, None, None) == ("demo", "demo-1", None)
        assert owner_target(session, "demo", "demo-2") == ("demo", "demo-2", None)
        assert owner_target(session, "openai-chat", "m") == ("openai-chat", "m", None)  # not configured
        assert owner_target(session, "anthropic", None)[1] == Settings().model_for("anthropic")
        session.settings = Settings(provider="openai-chat", base_url=url)
        assert owner_target(session, "openai-chat", "m") == ("openai-chat", "m", url)
        assert owner_target(session, "openai-chat", "m", "http://other/v1")[2] == "http://other/v1"
    finally:
        await session.close()
