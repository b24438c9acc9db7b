"""A request's budget: the model's window (config.toml, the server's listing, the profile, the
default, in that order), less the answer's reserve and the prefix, held with a margin for the
server's own tokenizer that the recorded traffic justifies."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from core.config import ModelSettings, Settings
from core.context.budget import MARGIN_FIXED, Budget
from core.providers import make_provider
from core.providers.thinking import ThinkingSettings
from core.providers.window import DEFAULT_WINDOW, ContextWindow, context_window
from core.tokens import TokenEstimator
from core.tools import canonical_json

CASSETTES = Path(__file__).resolve().parents[1] / "fixtures" / "providers" / "pydantic-ai"


def recorded() -> list[tuple[str, dict[str, object], int]]:
    """(cassette, request body, input tokens the API reported for it) of every recorded request
    whose answer reports them."""
    out = []
    for path in sorted(CASSETTES.glob("*.yaml")):
        for interaction in yaml.safe_load(path.read_text())["interactions"]:
            body = interaction["request"].get("parsed_body")
            answer = interaction["response"].get("body")
            text = answer.get("string", "") if isinstance(answer, dict) else str(answer or "")
            found = re.search(r'"(?:input_tokens|prompt_tokens)":\s*(\d+)', text if isinstance(text, str) else "")
            if body and found:
                out.append((path.name, body, int(found.group(1))))
    return out


def test_the_margin_covers_the_recorded_traffic() -> None:
    est = TokenEstimator(seed={})
    cases = recorded()
    assert len(cases) >= 7  # Anthropic and OpenAI, native and client searches
    budget = Budget(ContextWindow(200_000, "profile"), 4096)
    for name, body, reported in cases:
        pieces = [body.get("tools") or [], body.get("system") or body.get("instructions") or ""]
        pieces.append(body.get("messages") or body.get("input") or [])
        ours = sum(est.count(canonical_json(p)) for p in pieces)
        assert budget.counted(ours) >= reported, (name, ours, reported)
        assert reported - ours < MARGIN_FIXED  # the fixed part is what a server adds of its own, and more


def test_the_window_comes_from_config_then_the_server_then_the_profile_then_the_default() -> None:
    settings = Settings(models={"openai-chat:qwen3": ModelSettings(context_window=16_384, max_output_tokens=1024)})
    own = context_window(settings, "openai-chat", "qwen3", "http://127.0.0.1:8000/v1")
    assert (own.tokens, own.source, own.output_tokens) == (16_384, "config", 1024)

    def listed(_settings: Settings, provider: str, model: str, base_url: str | None) -> int | None:
        return 8192 if (provider, model) == ("openai-chat", "llama") else None

    served = context_window(Settings(), "openai-chat", "llama", "http://127.0.0.1:8000/v1", listed=listed)
    assert (served.tokens, served.source) == (8192, "server")
    assert context_window(settings, "openai-chat", "qwen3", None, listed=listed).source == "config"  # config first
    assert context_window(Settings(), "openai-chat", "other", None).tokens == DEFAULT_WINDOW
    assert context_window(Settings(), "openai-chat", "other", None).source == "default"


@pytest.mark.parametrize(
    ("provider", "model", "tokens", "max_input"),
    [
        ("anthropic", "claude-sonnet-4-6", 200_000, None),
        ("anthropic", "claude-haiku-4-5-20251001", 200_000, None),
        ("anthropic", "claude-future-9", 200_000, None),  # every Claude model holds 200K
        ("openai", "gpt-4.1", 1_047_576, None),
        ("openai", "gpt-5.4", 1_050_000, 922_000),
        ("openai", "gpt-5", 400_000, 272_000),
        ("openai", "gpt-5.2-2025-12-11", 400_000, 272_000),
        ("openai-chat", "openai/gpt-4.1-mini", 1_047_576, None),  # a gateway's name: its last segment
        ("openai-chat", "deepseek-chat", DEFAULT_WINDOW, None),
    ],
)
def test_each_known_models_window_is_its_providers_documented_one(
    provider: str, model: str, tokens: int, max_input: int | None
) -> None:
    window = context_window(Settings(), provider, model)
    assert (window.tokens, window.max_input) == (tokens, max_input)


def test_the_reserve_and_the_prefix_come_off_the_window() -> None:
    budget = Budget(ContextWindow(8192, "server"), 1024)
    assert budget.room == 8192 - 1024
    assert budget.history_room(0) == int((8192 - 1024 - MARGIN_FIXED) / 1.2)
    assert budget.history_room(1000) == budget.history_room(0) - 1000
    capped = Budget(ContextWindow(400_000, "profile", max_input=272_000), 4096)
    assert capped.room == 272_000  # the prompt's own cap, below the window less the answer


def test_an_anthropic_thinking_budget_is_part_of_the_reserve() -> None:
    thinking = make_provider(
        "anthropic", "claude-sonnet-4-6", api_key="k", thinking=ThinkingSettings(anthropic_budget_tokens=4000)
    )
    assert thinking.output_reserve(4096) == 8096  # type: ignore[attr-defined]
    plain = make_provider("anthropic", "claude-sonnet-4-6", api_key="k")
    assert plain.output_reserve(4096) == 4096  # type: ignore[attr-defined]


def test_config_toml_takes_a_models_window_and_the_history_switch(tmp_path: Path) -> None:
    from core.config import load_settings

    path = tmp_path / "config.toml"
    path.write_text(
        '[models."openai-chat:qwen3"]\ncontext_window = 32768\nmax_output_tokens = 2048\n'
        "[history]\nauto_compact = false\n"
    )
    settings = load_settings(path)
    assert settings.model_settings("openai-chat", "qwen3") == ModelSettings(
        context_window=32768, max_output_tokens=2048
    )
    assert settings.history.auto_compact is False
    assert json.loads(Settings().model_dump_json())["history"] == {"auto_compact": True}


def test_the_servers_listing_is_read_from_the_providers_cache() -> None:
    from core.providers import listing
    from core.providers.window import default_listed

    assert default_listed() is listing.listed_window  # what a chat's budget is given
