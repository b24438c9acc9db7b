"""Provider profiles: each provider's facts are declared once, and what reads them reads them.

A fact is proven used by changing it in the profile and watching the behaviour follow: a host
added to a profile makes that host genuine (for the key check and for ``auto``), the
environment variable a profile names is the one settings and the adapter read, and so on.
Nothing here reaches the network.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

import core.providers.profiles as profiles
from core.config import Keys, Settings
from core.deferral.dispatch import DEFAULT_MODEL_SUPPORT, resolve_strategy
from core.errors import UsageError
from core.providers import adapter_class, make_provider
from core.providers._common import PLACEHOLDER_KEY
from core.providers.base import ProviderError
from core.providers.factory import default_provider_factory
from core.providers.profiles import (
    ANTHROPIC,
    DEMO,
    OPENAI,
    OPENAI_CHAT,
    PROFILES,
    PROVIDER_NAMES,
    SCRIPT,
    SDK_PROVIDERS,
    ProviderProfile,
)

ROOT = Path(__file__).resolve().parents[2]
SDK = [PROFILES[name] for name in SDK_PROVIDERS]
ENV_VARS = sorted({v for p in PROFILES.values() for v in (p.env_var, p.auth_token_env, p.base_url_env) if v})


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    for var in ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("DEFERCHAT_HOME", str(tmp_path / "home"))


def with_profile(monkeypatch, profile: ProviderProfile) -> None:
    """Replace one provider's profile in the registry that settings, dispatch and the factory read."""
    monkeypatch.setattr(profiles, "PROFILES", {**profiles.PROFILES, profile.name: profile})


def moved(profile: ProviderProfile, host: str) -> ProviderProfile:
    return dataclasses.replace(profile, default_host=host, genuine_hosts=(host,))


def adapter_with(profile: ProviderProfile) -> type:
    """The profile's adapter class, with ``profile`` in place of its own."""
    return type(f"Moved{profile.name.title()}", (adapter_class(profile),), {"profile": profile})


# --- the registry --------------------------------------------------------------------------------


def test_one_profile_per_provider_in_the_order_messages_list_them():
    assert PROVIDER_NAMES == ("demo", "script", "anthropic", "openai", "openai-chat")
    assert SDK_PROVIDERS == ("anthropic", "openai", "openai-chat")
    assert [p.name for p in (DEMO, SCRIPT, ANTHROPIC, OPENAI, OPENAI_CHAT)] == list(PROVIDER_NAMES)
    for p in SDK:
        assert p.env_var and p.key_name and p.base_url_env and p.default_host in p.genuine_hosts
    assert DEMO.offline and SCRIPT.offline and not DEMO.env_var and not SCRIPT.genuine_hosts


def test_every_adapter_names_its_profile_and_takes_its_name_and_label_from_it():
    for p in SDK:
        provider = make_provider(p.name, "m", api_key="k")
        assert type(provider).profile is p
        assert (provider.name, provider.label, provider.env_var) == (p.name, p.label, p.env_var)
    assert adapter_class(SCRIPT).name == SCRIPT.name


def test_a_default_host_outside_the_genuine_hosts_is_refused():
    with pytest.raises(ValueError, match="default host"):
        dataclasses.replace(ANTHROPIC, default_host="elsewhere.example")


# --- keys: the [keys] field and the environment variable -------------------------------------------


@pytest.mark.parametrize("profile", SDK, ids=lambda p: p.name)
def test_the_environment_variable_a_profile_names_is_the_one_read(monkeypatch, profile):
    monkeypatch.setenv(profile.env_var, "sk-from-the-profile-variable")
    assert Settings().api_key(profile.name) == "sk-from-the-profile-variable"
    assert make_provider(profile.name, "m")._api_key == "sk-from-the-profile-variable"
    # rename the variable in the profile: settings and the adapter follow it
    renamed = dataclasses.replace(profile, env_var="DEFERCHAT_TEST_KEY")
    with_profile(monkeypatch, renamed)
    assert Settings().api_key(profile.name) is None
    monkeypatch.setenv("DEFERCHAT_TEST_KEY", "sk-renamed")
    assert Settings().api_key(profile.name) == "sk-renamed"
    assert adapter_with(renamed)("m")._api_key == "sk-renamed"


@pytest.mark.parametrize("profile", SDK, ids=lambda p: p.name)
def test_the_keys_field_a_profile_names_is_the_one_read(profile):
    assert profile.key_name in Keys.model_fields
    settings = Settings(keys={profile.key_name: "sk-in-config"})
    assert settings.api_key(profile.name) == "sk-in-config"
    others = [p for p in SDK if p.key_name != profile.key_name]
    assert all(settings.api_key(p.name) is None for p in others)


def test_openai_chat_borrows_openai_s_key_and_is_never_picked_by_it(monkeypatch):
    assert (OPENAI_CHAT.key_name, OPENAI_CHAT.env_var) == (OPENAI.key_name, OPENAI.env_var)
    monkeypatch.setenv(OPENAI.env_var, "sk-openai")
    assert Settings().api_key("openai-chat") == "sk-openai"
    assert Settings().default_provider() == "openai"  # the provider that owns the key
    monkeypatch.setenv(ANTHROPIC.env_var, "sk-ant")
    assert Settings().default_provider() == "anthropic"
    monkeypatch.delenv(ANTHROPIC.env_var)
    monkeypatch.delenv(OPENAI.env_var)
    assert Settings().default_provider() == DEMO.name


def test_the_anthropic_bearer_token_variable_comes_from_the_profile(monkeypatch):
    monkeypatch.setenv(ANTHROPIC.auth_token_env, "tok-1")
    assert make_provider("anthropic", "m")._auth_token == "tok-1"
    renamed = dataclasses.replace(ANTHROPIC, auth_token_env="DEFERCHAT_TEST_TOKEN")
    monkeypatch.setenv("DEFERCHAT_TEST_TOKEN", "tok-2")
    assert adapter_with(renamed)("m")._auth_token == "tok-2"


# --- genuine hosts ---------------------------------------------------------------------------------


@pytest.mark.parametrize("profile", SDK, ids=lambda p: p.name)
def test_the_hosts_in_a_profile_decide_whether_a_key_is_required(profile):
    genuine = f"https://{profile.default_host}/v1"
    with pytest.raises(ProviderError, match=profile.env_var):
        make_provider(profile.name, "m", base_url=genuine)._key()
    assert make_provider(profile.name, "m", base_url="http://127.0.0.1:9/v1")._key() == PLACEHOLDER_KEY
    # move the genuine host: the old one needs no key any more, the new one does
    cls = adapter_with(moved(profile, "llm.corp.example"))
    assert cls("m", base_url=genuine)._key() == PLACEHOLDER_KEY
    with pytest.raises(ProviderError, match="API key"):
        cls("m", base_url="https://LLM.corp.example/v1")._key()


def test_the_hosts_in_a_profile_decide_what_auto_calls_genuine(monkeypatch):
    first_party = {"anthropic": "https://api.anthropic.com", "openai": "https://api.openai.com/v1"}
    assert resolve_strategy("anthropic", "claude-sonnet-4-6", first_party["anthropic"], env={}).strategy == "anthropic"
    assert resolve_strategy("openai", "gpt-5.4", first_party["openai"], env={}).strategy == "openai"
    with_profile(monkeypatch, moved(ANTHROPIC, "llm.corp.example"))
    with_profile(monkeypatch, moved(OPENAI, "oai.corp.example"))
    moved_a = resolve_strategy("anthropic", "claude-sonnet-4-6", "https://llm.corp.example", env={})
    assert moved_a.strategy == "anthropic" and "first-party llm.corp.example" in moved_a.reason
    old_host = resolve_strategy("anthropic", "claude-sonnet-4-6", first_party["anthropic"], env={})
    assert old_host.strategy == "active-tools"
    moved_o = resolve_strategy("openai", "gpt-5.4", "https://oai.corp.example/v1", env={})
    assert moved_o.strategy == "openai" and "first-party oai.corp.example" in moved_o.reason
    assert resolve_strategy("openai", "gpt-5.4", first_party["openai"], env={}).strategy == "active-tools"


def test_the_openai_chat_adapter_reads_its_genuine_host_from_the_profile():
    genuine = make_provider("openai-chat", "gpt-5.4", base_url=f"https://{OPENAI_CHAT.default_host}/v1", api_key="k")
    local = make_provider("openai-chat", "llama3", base_url="http://localhost:11434/v1", api_key="k")
    assert (genuine.genuine, genuine.label) == (True, OPENAI_CHAT.label)
    assert (local.genuine, local.label) == (False, "OpenAI-compatible server localhost:11434")
    local_is_genuine = adapter_with(moved(OPENAI_CHAT, "localhost"))
    relabelled = local_is_genuine("llama3", base_url="http://localhost:11434/v1", api_key="k")
    assert relabelled.genuine and relabelled.label == OPENAI_CHAT.label


@pytest.mark.parametrize("profile", SDK, ids=lambda p: p.name)
def test_the_base_url_variable_a_profile_names_is_the_one_auto_reads(monkeypatch, profile):
    local = {profile.base_url_env: "http://localhost:11434/v1"}
    r = resolve_strategy(profile.name, profile.default_model, env=local)
    assert r.strategy == "active-tools" and f"from {profile.base_url_env}" in r.reason
    with_profile(monkeypatch, dataclasses.replace(profile, base_url_env="DEFERCHAT_TEST_BASE_URL"))
    assert f"from {profile.base_url_env}" not in resolve_strategy(profile.name, profile.default_model, env=local).reason
    r = resolve_strategy(profile.name, profile.default_model, env={"DEFERCHAT_TEST_BASE_URL": "http://localhost:8080"})
    assert r.strategy == "active-tools" and "from DEFERCHAT_TEST_BASE_URL" in r.reason


# --- default models and the factory ----------------------------------------------------------------


def test_default_models_come_from_the_profiles(monkeypatch):
    for p in PROFILES.values():
        assert Settings().model_for(p.name) == p.default_model
    with_profile(monkeypatch, dataclasses.replace(ANTHROPIC, default_model="claude-test-1"))
    assert Settings().model_for("anthropic") == "claude-test-1"
    assert Settings(provider="anthropic", model="mine").model_for("anthropic") == "mine"
    assert Settings().model_for("gemini") == "default"


def test_the_factory_builds_every_provider_by_its_profile(tmp_path, monkeypatch):
    make = default_provider_factory(Settings())
    demo = make("demo", DEMO.default_model, None, {})
    assert demo.name == DEMO.name and type(demo) is adapter_class(DEMO)
    script = tmp_path / "s.json"
    script.write_text('{"turns": [[{"type": "text", "text": "hi"}]]}')
    assert type(make("script", "script", None, {"script": str(script)})) is adapter_class(SCRIPT)
    with pytest.raises(UsageError, match="needs --script FILE"):
        make("script", "script", None, {})
    with pytest.raises(UsageError, match="unknown provider 'gemini': demo, script, anthropic, openai, openai-chat"):
        make("gemini", "g", None, {})
    for p in SDK:
        with pytest.raises(UsageError, match=f"set {p.env_var} or \\[keys\\]"):
            make(p.name, "m", None, {})
        assert type(make(p.name, "m", "http://127.0.0.1:9/v1", {})) is adapter_class(p)  # a local server needs no key
        monkeypatch.setenv(p.env_var, "sk-env")
        assert make(p.name, "m", None, {})._api_key == "sk-env"
        monkeypatch.delenv(p.env_var)


# --- model abilities -------------------------------------------------------------------------------


def test_the_model_support_table_is_the_profiles_rows():
    assert ANTHROPIC.model_support + OPENAI.model_support == DEFAULT_MODEL_SUPPORT
    assert all(rule.provider == p.name for p in SDK for rule in p.model_support)


@pytest.mark.parametrize(
    "profile,model,native,reasoning,thinking",
    [
        (ANTHROPIC, "claude-sonnet-4-6", True, False, True),
        (ANTHROPIC, "claude-opus-4-1-20250805", True, False, True),
        (ANTHROPIC, "claude-haiku-4-5", False, False, True),
        (ANTHROPIC, "claude-3-7-sonnet-latest", False, False, True),
        (ANTHROPIC, "claude-3-5-sonnet-latest", False, False, False),
        (OPENAI, "gpt-5.4", True, True, False),
        (OPENAI, "openai/gpt-5.4-mini", True, True, False),
        (OPENAI, "gpt-5-mini", False, True, False),
        (OPENAI, "o3", False, True, False),
        (OPENAI, "gpt-4o", False, False, False),
        (OPENAI_CHAT, "gpt-5.4", False, True, False),
        (OPENAI_CHAT, "llama3", False, False, False),
        (DEMO, "demo-1", False, False, False),
        (SCRIPT, "script", False, False, False),
    ],
)
def test_model_abilities(profile, model, native, reasoning, thinking):
    a = profile.abilities(model)
    assert (a.native_tool_search, a.tool_reference, a.reasoning, a.thinking) == (native, native, reasoning, thinking)


def test_abilities_decide_auto_and_the_responses_adapter_s_reasoning(monkeypatch):
    from core.providers.base import ModelRequest

    allow_4o = dataclasses.replace(OPENAI, model_support=(), reasoning_models=r"^gpt-4o")
    with_profile(monkeypatch, allow_4o)
    assert resolve_strategy("openai", "gpt-4o", env={}).strategy == "openai"
    request = ModelRequest(model="gpt-4o", system="", messages=[{"role": "user", "content": "hi"}])
    assert adapter_with(allow_4o)("gpt-4o", api_key="k").build_params(request)[0]["include"] == [
        "reasoning.encrypted_content"
    ]
    assert "include" not in make_provider("openai", "gpt-4o", api_key="k").build_params(request)[0]


# --- declared once ---------------------------------------------------------------------------------


def _code_strings(path: Path) -> list[str]:
    """Every string constant of a module that is not a docstring."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


def test_no_host_or_environment_variable_is_spelled_outside_the_profiles():
    facts = {h for p in PROFILES.values() for h in p.genuine_hosts} | set(ENV_VARS)
    home = ROOT / "core" / "providers" / "profiles"
    found = {}
    for path in sorted((ROOT / "core").rglob("*.py")) + sorted((ROOT / "tui").rglob("*.py")):
        for text in _code_strings(path):
            for fact in facts:
                if fact in text:
                    found.setdefault(fact, []).append(str(path.relative_to(ROOT)))
    assert set(found) == facts  # each one is spelled...
    assert {
        fact: places for fact, places in found.items() if any(not (ROOT / p).is_relative_to(home) for p in places)
    } == {}  # ...only in a profile
    assert all(len(places) == 1 for places in found.values()), found  # ...and only once
