"""The one naming rule (core.providers.naming): every way a person names a provider and a model
(flags, the environment, config.toml, the picker, ``--model`` alone) x a known or unknown model
name x a key or none, with what runs or the one line that stops it. Each row is what the
closing note's table says; the same rule serves ``deferchat ask``, the app's launch flags
(``tui.main._preflight``), config.toml and the picker."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.chat.options import ChatOptions
from core.chat.switch import owner_target
from core.cli.entry import main as cli_main
from core.config import load_settings
from core.engine import Engine
from core.errors import UsageError

URL = "http://127.0.0.1:8000/v1"
KEY = "sk-test-naming-0123456789"

# (id, environment, config.toml, --provider, --model, --base-url) -> what runs, or the refusal
# what runs: (provider, model, base URL the adapter is given, where that URL came from)
Runs = tuple[str, str, str | None, str]
ROWS: list[tuple[str, dict[str, str], str, str | None, str | None, str | None, Runs | str]] = [
    # --- flags: a provider named
    (
        "flags known key",
        {"ANTHROPIC_API_KEY": KEY},
        "",
        "anthropic",
        "claude-sonnet-4-6",
        None,
        ("anthropic", "claude-sonnet-4-6", None, "default"),
    ),
    ("flags known no key", {}, "", "anthropic", "claude-sonnet-4-6", None, "provider anthropic needs an API key"),
    ("flags unknown no key", {}, "", "openai-chat", "llama3.2", URL, ("openai-chat", "llama3.2", URL, "--base-url")),
    (
        "flags unknown key",
        {"OPENAI_API_KEY": KEY},
        "",
        "openai-chat",
        "llama3.2",
        URL,
        ("openai-chat", "llama3.2", URL, "--base-url"),
    ),
    (
        "flags openai known key",
        {"OPENAI_API_KEY": KEY},
        "",
        "openai",
        "gpt-5.4",
        None,
        ("openai", "gpt-5.4", None, "default"),
    ),
    ("flags demo named", {}, "", "demo", None, None, ("demo", "demo-1", None, "")),
    ("flags demo with another's model", {}, "", "demo", "gpt-4.1", None, "the offline demo answers only to demo"),
    (
        "flags demo with another's model, key",
        {"OPENAI_API_KEY": KEY},
        "",
        "demo",
        "gpt-4.1",
        None,
        "the offline demo answers only to demo",
    ),
    ("flags unknown provider", {}, "", "nope", "m", None, "unknown provider 'nope'"),
    ("flags compatible server, no model", {}, "", "openai-chat", None, URL, "name the model the OpenAI-compatible"),
    # --- --model alone
    ("model alone gpt key", {"OPENAI_API_KEY": KEY}, "", None, "gpt-4.1", None, ("openai", "gpt-4.1", None, "default")),
    ("model alone gpt no key", {}, "", None, "gpt-4.1", None, "provider openai needs an API key"),
    ("model alone gpt base URL no key", {}, "", None, "gpt-4.1", URL, ("openai-chat", "gpt-4.1", URL, "--base-url")),
    ("model alone o3 key", {"OPENAI_API_KEY": KEY}, "", None, "o3-mini", None, ("openai", "o3-mini", None, "default")),
    (
        "model alone claude key",
        {"ANTHROPIC_API_KEY": KEY},
        "",
        None,
        "claude-opus-4-6",
        None,
        ("anthropic", "claude-opus-4-6", None, "default"),
    ),
    ("model alone claude no key", {}, "", None, "claude-opus-4-6", None, "provider anthropic needs an API key"),
    ("model alone unknown no key", {}, "", None, "llama3.2", None, "--model llama3.2 does not say which provider"),
    (
        "model alone unknown key",
        {"OPENAI_API_KEY": KEY, "ANTHROPIC_API_KEY": KEY},
        "",
        None,
        "llama3.2",
        None,
        "--model llama3.2 does not say which provider",
    ),
    ("model alone open weights", {"OPENAI_API_KEY": KEY}, "", None, "gpt-oss-20b", None, "does not say which provider"),
    (
        "model alone gateway name",
        {"OPENAI_API_KEY": KEY},
        "",
        None,
        "openai/gpt-4.1",
        None,
        "does not say which provider",
    ),
    ("model alone unknown base URL", {}, "", None, "llama3.2", URL, "does not say which provider"),
    ("model alone demo", {}, "", None, "demo", None, ("demo", "demo-1", None, "")),
    ("base URL alone", {}, "", None, None, URL, "--base-url does not say which API the server speaks"),
    # --- the environment
    (
        "env anthropic key",
        {"ANTHROPIC_API_KEY": KEY},
        "",
        None,
        None,
        None,
        ("anthropic", "claude-sonnet-4-6", None, "default"),
    ),
    ("env openai key", {"OPENAI_API_KEY": KEY}, "", None, None, None, ("openai", "gpt-5.4", None, "default")),
    ("env nothing", {}, "", None, None, None, ("demo", "demo-1", None, "")),
    ("env base URL, nothing named", {"OPENAI_BASE_URL": URL}, "", None, None, None, ("demo", "demo-1", None, "")),
    (
        "env base URL gpt no key",
        {"OPENAI_BASE_URL": URL},
        "",
        None,
        "gpt-4.1",
        None,
        ("openai-chat", "gpt-4.1", URL, "OPENAI_BASE_URL"),
    ),
    (
        "env base URL unknown no key",
        {"OPENAI_BASE_URL": URL},
        "",
        "openai-chat",
        "llama3.2",
        None,
        ("openai-chat", "llama3.2", URL, "OPENAI_BASE_URL"),
    ),
    ("env base URL unknown alone", {"OPENAI_BASE_URL": URL}, "", None, "llama3.2", None, "does not say which provider"),
    (
        "env anthropic base URL",
        {"ANTHROPIC_BASE_URL": "http://127.0.0.1:8001"},
        "",
        "anthropic",
        "claude-sonnet-4-6",
        None,
        ("anthropic", "claude-sonnet-4-6", "http://127.0.0.1:8001", "ANTHROPIC_BASE_URL"),
    ),
    # --- config.toml
    (
        "config compatible server",
        {},
        f'provider = "openai-chat"\nbase_url = "{URL}"\nmodel = "llama3.2"',
        None,
        None,
        None,
        ("openai-chat", "llama3.2", URL, "base_url in"),
    ),
    (
        "config provider + unknown --model",
        {},
        f'provider = "openai-chat"\nbase_url = "{URL}"\nmodel = "llama3.2"',
        None,
        "qwen3",
        None,
        ("openai-chat", "qwen3", URL, "base_url in"),
    ),
    (
        "config provider + gpt --model",
        {},
        f'provider = "openai-chat"\nbase_url = "{URL}"',
        None,
        "gpt-4.1",
        None,
        ("openai-chat", "gpt-4.1", URL, "base_url in"),
    ),
    (
        "config provider + claude --model no key",
        {},
        f'provider = "openai-chat"\nbase_url = "{URL}"',
        None,
        "claude-sonnet-4-6",
        None,
        "provider anthropic needs an API key",
    ),
    (
        "config provider, no model",
        {},
        f'provider = "openai-chat"\nbase_url = "{URL}"',
        None,
        None,
        None,
        "name the model the OpenAI-compatible",
    ),
    ("config model alone unknown", {}, 'model = "llama3.2"', None, None, None, 'model = "llama3.2" in'),
    (
        "config model alone claude key",
        {"ANTHROPIC_API_KEY": KEY},
        'model = "claude-haiku-4-5"',
        None,
        None,
        None,
        ("anthropic", "claude-haiku-4-5", None, "default"),
    ),
    (
        "config model alone claude, other provider flag",
        {"ANTHROPIC_API_KEY": KEY, "OPENAI_API_KEY": KEY},
        'model = "claude-haiku-4-5"',
        "openai",
        None,
        None,
        ("openai", "gpt-5.4", None, "default"),
    ),
    (
        "config gpt + base URL no key",
        {},
        f'model = "gpt-4.1"\nbase_url = "{URL}"',
        None,
        None,
        None,
        ("openai-chat", "gpt-4.1", URL, "base_url in"),
    ),
    ("config base URL alone", {}, f'base_url = "{URL}"', None, None, None, "base_url in"),
    (
        "config demo with another's model",
        {},
        'provider = "demo"\nmodel = "gpt-4.1"',
        None,
        None,
        None,
        "the offline demo answers only to demo",
    ),
    (
        "config key in [keys]",
        {},
        f'provider = "anthropic"\n[keys]\nanthropic = "{KEY}"',
        None,
        None,
        None,
        ("anthropic", "claude-sonnet-4-6", None, "default"),
    ),
    ("config provider no key", {}, 'provider = "anthropic"', None, None, None, "provider anthropic needs an API key"),
    ("config unknown provider", {}, 'provider = "nope"', None, None, None, 'unknown provider = "nope"'),
]


def _setup(home: Path, monkeypatch: pytest.MonkeyPatch, env: dict[str, str], config: str) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    if config:
        (home / "config.toml").write_text(config + "\n")


@pytest.mark.parametrize(
    "env,config,provider,model,base_url,expected", [row[1:] for row in ROWS], ids=[row[0] for row in ROWS]
)
def test_each_way_of_naming_a_provider_and_a_model(home, monkeypatch, env, config, provider, model, base_url, expected):
    _setup(home, monkeypatch, env, config)
    try:
        engine = Engine(settings=load_settings())
        opts = ChatOptions(provider=provider, model=model, base_url=base_url)
        name, chosen, url = engine.resolve_provider(opts)
        made = engine.provider_factory(name, chosen, url, {"flag_base_url": base_url})
    except UsageError as exc:
        assert isinstance(expected, str), f"refused: {exc}"
        assert expected in str(exc) and "\n" not in str(exc)
        return
    assert not isinstance(expected, str), f"ran {name}/{chosen} at {url}; expected the refusal {expected!r}"
    want_provider, want_model, want_url, want_source = expected
    assert (name, chosen) == (want_provider, want_model)
    assert getattr(made, "base_url", None) == want_url  # what the adapter talks to (the SDK's variable read)
    if want_source:
        assert made.origin.base_url.startswith(want_source)  # type: ignore[attr-defined]


# --- the picker and ask --chat ID --model: a switch of an open chat ------------------------------------

PICKER_ROWS: list[tuple[str, dict[str, str], str, str | None, str, tuple[str, str] | str]] = [
    # (id, env, config, provider typed or picked, model, what the chat runs on after, or the refusal)
    ("picker known key", {"OPENAI_API_KEY": KEY}, "", None, "gpt-4.1", ("openai", "gpt-4.1")),
    ("picker known no key", {}, "", None, "gpt-4.1", "provider openai needs an API key"),
    ("picker claude key", {"ANTHROPIC_API_KEY": KEY}, "", None, "claude-haiku-4-5", ("anthropic", "claude-haiku-4-5")),
    ("picker unknown on the demo", {}, "", None, "llama3.2", "openai-chat:llama3.2"),
    ("picker unknown on the demo, key", {"OPENAI_API_KEY": KEY}, "", None, "llama3.2", "does not say which provider"),
    ("picker demo with another's model", {}, "", "demo", "gpt-4.1", "the offline demo answers only to demo"),
    (
        "picker provider:model no key",
        {},
        f'provider = "openai-chat"\nbase_url = "{URL}"\nmodel = "m"',
        "openai-chat",
        "llama3.2",
        ("openai-chat", "llama3.2"),
    ),
    ("picker provider:model key", {"OPENAI_API_KEY": KEY}, "", "openai-chat", "gpt-4.1", ("openai-chat", "gpt-4.1")),
]


@pytest.mark.parametrize(
    "env,config,provider,model,expected", [row[1:] for row in PICKER_ROWS], ids=[row[0] for row in PICKER_ROWS]
)
async def test_each_way_of_naming_a_switch(home, monkeypatch, env, config, provider, model, expected):
    _setup(home, monkeypatch, env, config)
    engine = Engine(settings=load_settings())
    session = await engine.open_chat(None, ChatOptions(provider="demo", start_demo_servers=False))
    try:
        try:
            session.switch(*owner_target(session, provider, model))
        except UsageError as exc:
            assert isinstance(expected, str), f"refused: {exc}"
            assert expected in str(exc) and "\n" not in str(exc)
            assert (session.provider_name, session.chat().model) == ("demo", "demo-1")  # nothing changed
            return
        assert not isinstance(expected, str), f"switched to {session.provider_name}; expected {expected!r}"
        assert (session.provider_name, session.provider.model) == expected
        assert (session.chat().provider, session.chat().model) == expected
    finally:
        await session.close()


async def test_a_name_that_says_nothing_stays_on_the_chats_own_provider(home):
    """On a chat that runs on a real provider, a bare name is that provider's (the chat names it)."""
    (home / "config.toml").write_text(f'provider = "openai-chat"\nbase_url = "{URL}"\nmodel = "m"\n')
    engine = Engine(settings=load_settings())
    session = await engine.open_chat(None, ChatOptions(start_demo_servers=False))
    try:
        assert session.provider_name == "openai-chat"
        assert owner_target(session, None, "qwen3") == ("openai-chat", "qwen3", URL)
    finally:
        await session.close()


# --- deferchat ask and the app, as a person runs them ------------------------------------------------------


def test_ask_with_a_model_alone_never_answers_from_the_demo(home, capsys):
    """The issue's example: `deferchat ask hi --model gpt-4.1` with no key and no --provider answered
    from the offline demo, exited 0 and listed the chat as demo/gpt-4.1. Now: one line, exit 2,
    no chat."""
    assert cli_main(["ask", "hi", "--model", "gpt-4.1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("deferchat: provider openai needs an API key") and "\n" not in err
    assert cli_main(["ask", "hi", "--model", "llama3.2"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--model llama3.2 does not say which provider serves it" in err and "--provider openai-chat" in err
    assert cli_main(["chats", "list", "--json"]) == 0
    assert capsys.readouterr().out == ""  # no chat was made


def test_ask_with_demo_runs_the_demo(home, capsys):
    assert cli_main(["ask", "hi", "--model", "demo", "--json"]) == 0
    capsys.readouterr()
    assert cli_main(["chats", "list", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["provider"], r["model"]) for r in rows] == [("demo", "demo-1")]


@pytest.mark.parametrize(
    "flags,expected",
    [
        (["--model", "gpt-4.1"], "provider openai needs an API key"),
        (["--model", "llama3.2"], "--model llama3.2 does not say which provider"),
        (["--provider", "demo", "--model", "claude-opus-4-6"], "the offline demo answers only to demo"),
    ],
)
def test_the_apps_launch_flags_follow_the_same_rule(home, capsys, flags, expected):
    """``deferchat --model gpt-4.1`` refuses before the app takes the screen: one line, exit 2."""
    from tui.main import main as app_main

    assert app_main(flags) == 2
    err = capsys.readouterr().err.strip()
    assert expected in err and err.count("\n") == 0


def test_plan_resolves_auto_for_where_the_names_say(home, capsys):
    """``deferchat plan --strategy auto --model gpt-5.4`` plans for OpenAI, not for the demo."""
    assert cli_main(["plan", "--strategy", "auto", "--model", "gpt-5.4", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["strategy"] == "openai"
    assert cli_main(["plan", "--strategy", "auto", "--model", "llama3.2", "--json"]) == 2
    assert "does not say which provider" in capsys.readouterr().err
