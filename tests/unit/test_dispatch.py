"""``auto``: the genuine provider decides, never merely the wire protocol."""

from __future__ import annotations

import pytest

from core.deferral.dispatch import (
    DEFAULT_MODEL_SUPPORT,
    Gateway,
    ModelSupportRule,
    StrategyError,
    resolve_strategy,
)

NO_ENV: dict[str, str] = {}


def resolve(provider, model, base_url=None, **kw):
    kw.setdefault("env", NO_ENV)
    return resolve_strategy(provider, model, base_url, **kw)


TABLE = [
    # genuine Anthropic, first party
    ("anthropic", "claude-sonnet-4-5", None, "anthropic", "genuine Anthropic"),
    ("anthropic", "claude-opus-4-1", "https://api.anthropic.com", "anthropic", "first-party api.anthropic.com"),
    ("anthropic", "claude-sonnet-4-6", "https://api.anthropic.com/v1/", "anthropic", "first-party"),
    # Haiku and Claude 3: genuine, but excluded by the model-support table
    ("anthropic", "claude-haiku-4-5", None, "active-tools", "tool_reference expansion"),
    ("anthropic", "claude-3-5-haiku-latest", None, "active-tools", "'*haiku*'"),
    ("anthropic", "claude-3-7-sonnet-latest", None, "active-tools", "predate the tool search tool"),
    # compat shims speak the Anthropic protocol without being Anthropic
    (
        "anthropic",
        "deepseek-chat",
        "https://api.deepseek.com/anthropic",
        "active-tools",
        "DeepSeek's Anthropic-compatible shim",
    ),
    (
        "anthropic",
        "kimi-k2",
        "https://api.moonshot.ai/anthropic",
        "active-tools",
        "Moonshot's Anthropic-compatible shim",
    ),
    (
        "anthropic",
        "claude-sonnet-4-5",
        "https://gateway.example.com/anthropic",
        "active-tools",
        "not a declared gateway",
    ),
    ("anthropic", "claude-sonnet-4-5", "http://127.0.0.1:8787", "active-tools", "a local server"),
    # genuine OpenAI on the Responses API
    ("openai", "gpt-5.4", None, "openai", "genuine OpenAI on the Responses API"),
    ("openai", "gpt-5.4-mini", "https://api.openai.com/v1", "openai", "first-party api.openai.com"),
    ("openai", "gpt-5.5", None, "openai", "no model-support row excludes gpt-5.5"),
    # ...but tool_search needs a model that has it
    ("openai", "gpt-4o", None, "active-tools", "GPT-5.4 or later"),
    ("openai", "gpt-5", None, "active-tools", "GPT-5.4 or later"),
    ("openai", "gpt-5-mini", None, "active-tools", "GPT-5.4 or later"),
    ("openai", "gpt-5.2", None, "active-tools", "GPT-5.4 or later"),
    ("openai", "o3", None, "active-tools", "GPT-5.4 or later"),
    # OpenAI-compatible third parties on the openai provider
    ("openai", "kimi-k2", "https://api.moonshot.ai/v1", "active-tools", "Moonshot, an OpenAI-compatible third party"),
    ("openai", "llama3", "http://localhost:11434/v1", "active-tools", "Ollama's default"),
    # Chat Completions: never native, not even on api.openai.com
    ("openai-chat", "gpt-5.4", None, "active-tools", "Responses-only"),
    (
        "openai-chat",
        "gpt-5.4",
        "https://api.openai.com/v1",
        "active-tools",
        "Chat Completions (openai-chat) at https://api.openai.com/v1",
    ),
    ("openai-chat", "deepseek-chat", "https://api.deepseek.com", "active-tools", "no native tool search"),
    ("openai-chat", "kimi-k2", "https://api.moonshot.ai/v1", "active-tools", "no native tool search"),
    ("openai-chat", "llama3.1", "http://localhost:11434/v1", "active-tools", "no native tool search"),
    ("openai-chat", "Qwen/Qwen3-8B", "http://localhost:8000/v1", "active-tools", "no native tool search"),
    ("openai-chat", "gguf", "http://localhost:8080/v1", "active-tools", "no native tool search"),
    # offline providers read the ADR-0123 index
    ("demo", "demo", None, "wrapper", "ADR-0123 index"),
    ("script", "script", None, "wrapper", "tool.call"),
    # anything else
    ("gemini", "gemini-2.5-pro", None, "active-tools", "no known native tool search"),
]


@pytest.mark.parametrize("provider,model,base_url,strategy,why", TABLE)
def test_dispatch_table(provider, model, base_url, strategy, why):
    resolution = resolve(provider, model, base_url)
    assert resolution.strategy == strategy
    assert why in resolution.reason


def test_every_reason_is_one_readable_line_that_names_the_outcome():
    outcome = {
        "active-tools": "using active-tools",
        "anthropic": "Anthropic's native",
        "openai": "OpenAI's native",
        "wrapper": "tool.call",
    }
    for provider, model, base_url, strategy, _ in TABLE:
        reason = resolve(provider, model, base_url).reason
        assert 40 < len(reason) < 400 and "\n" not in reason
        assert outcome[strategy] in reason


def test_declared_anthropic_gateway_takes_the_native_path():
    gw = "https://llm-gateway.corp.example/anthropic"
    assert resolve("anthropic", "claude-sonnet-4-5", gw).strategy == "active-tools"
    declared = resolve("anthropic", "claude-sonnet-4-5", gw, gateways=[gw])
    assert declared.strategy == "anthropic" and "declared gateway" in declared.reason
    # a sub-path of the declared URL is the same gateway; another path on the host is not
    assert resolve("anthropic", "claude-sonnet-4-5", gw + "/v1", gateways=[gw]).strategy == "anthropic"
    assert (
        resolve("anthropic", "claude-sonnet-4-5", "https://llm-gateway.corp.example/other", gateways=[gw]).strategy
        == "active-tools"
    )
    named = resolve("anthropic", "claude-opus-4-1", gw, gateways=[{"url": gw, "name": "corp"}])
    assert "'corp'" in named.reason
    # the model-support table still applies behind a gateway
    assert resolve("anthropic", "claude-haiku-4-5", gw, gateways=[gw]).strategy == "active-tools"


def test_a_user_declared_shim_is_trusted():
    shim = "https://api.deepseek.com/anthropic"
    assert resolve("anthropic", "deepseek-chat", shim, gateways=[Gateway(url=shim)]).strategy == "anthropic"


def test_openai_gateway_stays_on_active_tools_until_confirmed():
    gw = "https://gateway.example.com/openai/v1"
    opaque = resolve("openai", "gpt-5.4", gw, gateways=[Gateway(url=gw, provider="openai")])
    assert opaque.strategy == "active-tools" and "routes OpenAI opaquely" in opaque.reason
    confirmed = resolve("openai", "gpt-5.4", gw, gateways=[Gateway(url=gw, provider="openai", responses_api=True)])
    assert confirmed.strategy == "openai" and "confirmed" in confirmed.reason
    # an Anthropic gateway row does not make an OpenAI endpoint genuine
    assert resolve("openai", "gpt-5.4", gw, gateways=[gw]).strategy == "active-tools"


def test_user_rows_override_the_model_support_table():
    allow_haiku = [ModelSupportRule(provider="anthropic", model="claude-haiku-4-5*", native=True, note="tested")]
    r = resolve("anthropic", "claude-haiku-4-5-20251001", model_support=allow_haiku)
    assert r.strategy == "anthropic" and "'claude-haiku-4-5*' allows" in r.reason and "(tested)" in r.reason
    assert resolve("anthropic", "claude-3-5-haiku", model_support=allow_haiku).strategy == "active-tools"
    deny_opus = [{"provider": "anthropic", "model": "claude-opus-*", "native": False, "note": "flaky for us"}]
    r = resolve("anthropic", "claude-opus-4-1", model_support=deny_opus)
    assert r.strategy == "active-tools" and "flaky for us" in r.reason
    allow_4o = [{"provider": "openai", "model": "gpt-4o", "native": True}]
    assert resolve("openai", "gpt-4o", model_support=allow_4o).strategy == "openai"
    assert resolve("openai", "gpt-4o-mini", model_support=allow_4o).strategy == "active-tools"


def test_model_patterns_are_case_insensitive_globs():
    assert resolve("anthropic", "Claude-HAIKU-4-5").strategy == "active-tools"
    assert (
        resolve("anthropic", "anthropic.claude-haiku-4-5-20251001-v1:0", "https://gw", gateways=["https://gw"]).strategy
        == "active-tools"
    )
    assert any(rule.model == "*haiku*" for rule in DEFAULT_MODEL_SUPPORT)


def test_sdk_base_url_environment_variables_count():
    env = {"ANTHROPIC_BASE_URL": "https://api.deepseek.com/anthropic"}
    r = resolve("anthropic", "deepseek-chat", env=env)
    assert r.strategy == "active-tools" and "from ANTHROPIC_BASE_URL" in r.reason
    assert resolve("openai", "gpt-5.4", env={"OPENAI_BASE_URL": "http://localhost:11434/v1"}).strategy == "active-tools"
    assert resolve("openai", "gpt-5.4", env={"OPENAI_BASE_URL": "https://api.openai.com/v1"}).strategy == "openai"
    # an explicit base URL wins over the environment
    assert resolve("anthropic", "claude-sonnet-4-5", "https://api.anthropic.com", env=env).strategy == "anthropic"


def test_explicit_strategies():
    r = resolve("openai-chat", "llama3", "http://localhost:11434/v1", requested="wrapper")
    assert (r.strategy, r.reason) == ("wrapper", "strategy wrapper chosen explicitly (--strategy), not by auto")
    explicit = resolve("anthropic", "claude-sonnet-4-5", "http://127.0.0.1:9", requested="anthropic")
    assert explicit.strategy == "anthropic"
    assert resolve("script", "s", requested="active-tools").strategy == "active-tools"
    with pytest.raises(StrategyError, match="needs the anthropic provider"):
        resolve("openai-chat", "gpt-5.4", requested="anthropic")
    with pytest.raises(StrategyError, match="Responses API"):
        resolve("anthropic", "claude-sonnet-4-5", requested="openai")
    with pytest.raises(StrategyError, match="unknown strategy"):
        resolve("anthropic", "claude-sonnet-4-5", requested="magic")


# --- resolve_strategy_for: the settings the caller runs with, never the disk ---------------------


def test_resolve_strategy_for_uses_the_settings_passed_not_the_disk(tmp_path, monkeypatch):
    import core.config
    from core.config import Settings
    from core.errors import UsageError
    from core.roster.inputs import resolve_strategy_for

    gw = "https://llm-gateway.corp.example/anthropic"
    for var in ("ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("DEFERCHAT_HOME", str(home))
    # the disk says the opposite of every setting passed below
    (home / "config.toml").write_text(
        'provider = "openai"\nanthropic_gateways = []\n'
        '[[model_support]]\nprovider = "anthropic"\nmodel = "*"\nnative = false\n'
    )
    reads: list[object] = []
    real_load = core.config.load_settings
    monkeypatch.setattr(core.config, "load_settings", lambda *a: reads.append(a) or real_load(*a))

    passed = Settings(provider="anthropic", anthropic_gateways=[gw])
    strategy, reason = resolve_strategy_for("auto", None, "claude-sonnet-4-6", gw, passed)
    assert strategy == "anthropic" and "declared gateway" in reason  # gateway and default provider as passed
    undeclared = resolve_strategy_for("auto", None, "claude-sonnet-4-6", gw, Settings(provider="anthropic"))
    assert undeclared[0] == "active-tools"
    deny = Settings(model_support=[{"provider": "openai", "model": "gpt-5.4*", "native": False, "note": "ours"}])
    strategy, reason = resolve_strategy_for("auto", "openai", "gpt-5.4", None, deny)
    assert strategy == "active-tools" and "(ours)" in reason
    assert resolve_strategy_for("auto", "openai", "gpt-5.4", None, Settings())[0] == "openai"
    assert reads == []  # the disk was never read
    # explicit strategies need no settings at all; an unknown one is a usage error
    explicit = resolve_strategy_for("wrapper", "openai", "gpt-5.4", None, Settings())
    assert explicit == ("wrapper", "wrapper chosen explicitly")
    with pytest.raises(UsageError, match="unknown strategy 'magic'"):
        resolve_strategy_for("magic", "openai", "gpt-5.4", None, Settings())
