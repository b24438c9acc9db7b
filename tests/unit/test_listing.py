"""Models come from the server (core.providers.listing, deferchat models): what loopback
OpenAI-compatible and Anthropic-shaped servers list, with each model's window where the server
says it; the cache per base URL (fresh for the picker, read without network by listed_window);
the profile's names, marked, when the server is down, slow, refuses the key or answers a page."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.cli.entry import main as cli_main
from core.config import Settings, load_settings
from core.providers import listing as listing_module
from core.providers.listing import (
    LISTING_SECONDS,
    ListedModel,
    cache_path,
    list_models,
    listed_window,
    models_from,
    window_of,
)
from tests.helpers import ROOT, subprocess_env
from tests.streaming_server import serve

TWO = [{"id": "loopback-small", "max_model_len": 8192}, {"id": "loopback-large", "context_length": 32768}]
SCRIPT = {"responses": [{"parts": [{"text": "hi"}]}], "repeat": True, "models": TWO}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(
    "item,window",
    [
        ({"id": "m", "max_model_len": 8192}, 8192),  # vLLM
        ({"id": "m", "meta": {"n_ctx_train": 131072, "n_vocab": 1}}, 131072),  # llama.cpp's server
        ({"id": "m", "meta": {"n_ctx": 4096, "n_ctx_train": 131072}}, 4096),  # the window it runs with first
        ({"id": "m", "context_length": 200000, "top_provider": {"context_length": 100000}}, 200000),  # OpenRouter
        ({"id": "m", "top_provider": {"context_length": 100000}}, 100000),
        ({"id": "m", "max_context_length": 32768}, 32768),  # Mistral, LM Studio's API
        ({"id": "m", "context_window": 131072}, 131072),  # Groq
        ({"id": "m", "max_input_tokens": 200000, "max_tokens": 64000}, 200000),  # Anthropic
        ({"id": "llama3.2:latest", "object": "model", "owned_by": "library"}, None),  # Ollama lists none
        ({"id": "m", "context_length": "8192"}, None),  # not a number
        ({"id": "m", "context_length": True}, None),
        ({"id": "m", "context_length": -1, "max_context_length": 2048.0}, 2048),
    ],
)
def test_the_window_each_server_lists(item, window):
    assert window_of(item) == window


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=5),
    max_leaves=20,
)
KEYS = st.sampled_from(["id", "display_name", "context_length", "max_model_len", "meta", "n_ctx", "max_input_tokens"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.dictionaries(KEYS | st.text(max_size=8), JSON, max_size=6), max_size=8))
def test_any_listing_reads_as_clean_models_or_none(items):
    """Whatever a server puts in its items: no exception; every id is printable text of at most
    200 characters, listed once; every window a positive whole number."""
    models = models_from(items)
    assert len({m.id for m in models}) == len(models)
    for m in models:
        assert isinstance(m.id, str) and m.id.isprintable() and 0 < len(m.id) <= 200
        assert m.context_window is None or (isinstance(m.context_window, int) and m.context_window > 0)
        assert m.name is None or m.name.isprintable()


def test_hostile_ids_are_dropped():
    items = [{"id": "\x1b[31mred"}, {"id": "evil\u202egnp"}, {"id": "x" * 201}, {"id": 7}, {"id": " ok "}]
    assert models_from(items) == (ListedModel("ok"),)


async def test_an_openai_compatible_server_lists_its_models_with_their_windows(home):
    with serve(SCRIPT) as server:
        url = server.url_for("openai-chat")
        listing = await list_models(Settings(), "openai-chat", url, flag_base_url=url)
        assert [(m.id, m.context_window) for m in listing.models] == [
            ("loopback-large", 32768),
            ("loopback-small", 8192),
        ]
        assert (listing.source, listing.problem, listing.base_url) == ("server", None, url)
        assert listing.base_url_source == "base URL from --base-url"
        sent = server.requests[0]
        assert (sent["method"], sent["path"], sent["headers"]["authorization"]) == (
            "GET",
            "/v1/models",
            "Bearer deferchat-no-key",  # a server that needs no key gets none of the user's
        )
        # fresh in the cache: the picker's next listing asks nobody; a refresh asks again
        again = await list_models(Settings(), "openai", url)
        assert again.source == "cache" and again.models == listing.models and len(server.requests) == 1
        await list_models(Settings(), "openai-chat", url, refresh=True)
        assert len(server.requests) == 2
    # the cache holds the listing, never a key or a password
    text = cache_path().read_text()
    assert "loopback-small" in text and "deferchat-no-key" not in text


async def test_an_anthropic_shaped_server_lists_its_models(home, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-LISTING-1234")
    models = [
        {"id": "claude-opus-4-6", "display_name": "Claude Opus 4.6", "max_input_tokens": 200000},
        {"id": "claude-haiku-4-5", "display_name": "Claude Haiku 4.5", "max_input_tokens": 200000},
    ]
    with serve({"responses": [], "models": models}) as server:
        listing = await list_models(Settings(), "anthropic", server.url_for("anthropic"))
        headers = server.requests[0]["headers"]
    assert listing.source == "server"
    assert [(m.id, m.context_window, m.name) for m in listing.models] == [
        ("claude-opus-4-6", 200000, "Claude Opus 4.6"),
        ("claude-haiku-4-5", 200000, "Claude Haiku 4.5"),
    ]  # Anthropic's own order: newest first
    assert "anthropic-version" in headers


async def test_listed_window_reads_only_the_cache(home):
    settings = Settings(provider="openai-chat", base_url="http://127.0.0.1:1/v1", model="loopback-small")
    assert listed_window(settings, "openai-chat", "loopback-small", None) is None  # never listed
    with serve(SCRIPT) as server:
        url = server.url_for("openai-chat")
        settings = Settings(provider="openai-chat", base_url=url, model="loopback-small")
        await list_models(settings, "openai-chat")
    # the server is gone: the windows are still known, and nothing reached out for them
    assert listed_window(settings, "openai-chat", "loopback-small", None) == 8192
    assert listed_window(settings, "openai", "loopback-large", url) == 32768
    assert listed_window(settings, "openai-chat", "loopback-unknown", None) is None
    assert listed_window(settings, "anthropic", "loopback-small", url) is None  # another API's listing
    assert listed_window(settings, "demo", "demo-1", None) is None


async def test_a_server_that_is_down_gives_the_profiles_names_marked(home):
    url = f"http://127.0.0.1:{free_port()}/v1"
    started = time.monotonic()
    listing = await list_models(Settings(), "openai-chat", url, flag_base_url=url)
    assert time.monotonic() - started < 3
    assert listing.source == "profile" and listing.from_profile
    assert listing.models[0] == ListedModel("gpt-5.4") and all(m.context_window is None for m in listing.models)
    assert listing.problem is not None and f"GET {url}/models, base URL from --base-url" in listing.problem
    assert "connection refused" in listing.problem
    assert not cache_path().exists()


async def test_a_server_that_never_answers_is_bounded(home):
    with serve({"responses": [], "models": TWO, "models_delay": 30}) as server:
        started = time.monotonic()
        listing = await list_models(Settings(), "openai-chat", server.url_for("openai-chat"))
        elapsed = time.monotonic() - started
    assert elapsed < LISTING_SECONDS + 1 and listing.from_profile
    assert f"did not list its models within {LISTING_SECONDS:g} s" in (listing.problem or "")


@pytest.mark.parametrize(
    "script,expected",
    [
        ({"responses": [], "models": TWO, "unsupported": {"models": "html"}}, "an HTML page"),
        ({"responses": [], "models": TWO, "api_key": "sk-right-0000000"}, "deferchat sent the key from OPENAI_API_KEY"),
        ({"responses": []}, "(HTTP 404)"),
        ({"responses": [], "models": TWO, "unsupported": {"models": "close"}}, "closed the connection"),
    ],
)
async def test_a_server_that_cannot_be_listed(home, monkeypatch, script, expected):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-wrong-key-5555")
    with serve(script) as server:
        listing = await list_models(Settings(), "openai-chat", server.url_for("openai-chat"))
    assert listing.from_profile and expected in (listing.problem or "")
    assert "sk-test-wrong-key-5555" not in (listing.problem or "") and "5555" not in (listing.problem or "")


async def test_no_key_and_no_base_url_asks_nobody(home):
    listing = await list_models(Settings(), "anthropic")
    assert listing.from_profile and "no key for Anthropic" in (listing.problem or "")
    demo = await list_models(Settings(), "demo")
    assert (demo.source, demo.problem, [m.id for m in demo.models]) == ("profile", None, ["demo-1"])


# --- deferchat models ------------------------------------------------------------------------------


def test_deferchat_models_lists_the_loopback_servers(home, monkeypatch, capsys):
    with serve(SCRIPT) as server:
        url = server.url_for("openai-chat")
        assert cli_main(["models", "--provider", "openai-chat", "--base-url", url]) == 0
        out = capsys.readouterr().out.splitlines()
        assert out[0] == f"openai-chat \u00b7 {url} (base URL from --base-url) \u00b7 listed by the server"
        assert out[1].split() == ["loopback-large", "32,768-token", "window"]
        assert out[2].split() == ["loopback-small", "8,192-token", "window"]
        # every usable provider: the SDKs' variables point both APIs at the server
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        assert cli_main(["models", "--json"]) == 0
        listed = json.loads(capsys.readouterr().out)["providers"]
    assert [p["provider"] for p in listed] == ["demo", "anthropic", "openai", "openai-chat"]
    for p in listed[1:]:
        assert p["source"] == "server" and p["problem"] is None
        assert {m["id"]: m["context_window"] for m in p["models"]} == {"loopback-small": 8192, "loopback-large": 32768}
    assert listed[2]["base_url_source"] == "base URL from OPENAI_BASE_URL"


def test_deferchat_models_with_the_server_down_marks_the_profiles_names(home, capsys):
    url = f"http://127.0.0.1:{free_port()}/v1"
    assert cli_main(["models", "--provider", "openai-chat", "--base-url", url]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(
        f"openai-chat \u00b7 {url} (base URL from --base-url) \u00b7 not listed, the profile's names:"
    )
    assert "connection refused" in out[0]
    assert all(line.endswith("(profile)") for line in out[1:]) and out[1].split()[0] == "gpt-5.4"


def test_deferchat_models_refuses_a_base_url_without_a_provider(home, capsys):
    assert cli_main(["models", "--base-url", "http://127.0.0.1:9/v1"]) == 2
    err = capsys.readouterr().err
    assert "--base-url needs the API its server speaks" in err and "--provider openai-chat" in err
    assert cli_main(["models", "--provider", "nope"]) == 2


def test_deferchat_models_the_real_binary_with_the_server_down(home):
    """The command as a person runs it, from a fresh home, the server down: the profile's names,
    marked, exit 1, well within the listing's bound."""
    url = f"http://127.0.0.1:{free_port()}/v1"
    started = time.monotonic()
    run = subprocess.run(
        [sys.executable, "-m", "core.cli", "models", "--provider", "openai-chat", "--base-url", url, "--json"],
        capture_output=True,
        text=True,
        timeout=30,
        env=subprocess_env(home),
        cwd=ROOT,
    )
    elapsed = time.monotonic() - started
    assert run.returncode == 1, run.stderr
    (listed,) = json.loads(run.stdout)["providers"]
    assert listed["source"] == "profile" and "connection refused" in listed["problem"]
    assert elapsed < 10  # Python's start on a loaded machine included; the listing's own part is timed above


def test_the_cache_survives_a_broken_file(home):
    path = cache_path()
    path.write_text("{not json")
    assert listing_module.read_cache() == {}
    assert asyncio.run(list_models(load_settings(), "demo")).source == "profile"
