"""Anthropic, the Messages API (``core.providers.anthropic``).

Native deferral: ``defer_loading`` plus Anthropic's server tool search, which answers with
``tool_reference`` blocks the API expands. Haiku cannot expand them, and Claude 3 models predate
the tool search tool: those rows keep ``auto`` on active-tools.
"""

from __future__ import annotations

from core.deferral.names import ANTHROPIC as ANTHROPIC_STRATEGY
from core.providers.profiles.base import ModelPrice, ModelSupportRule, ModelWindow, ProviderProfile

HOST = "api.anthropic.com"

# List prices, USD per million tokens: base input, output, cache hits, 5-minute cache writes (the
# adapter's cache_control is the default ephemeral, 5-minute, kind). Source: Anthropic's pricing
# page, https://platform.claude.com/docs/en/about-claude/pricing ("Model pricing"), read on
# 2026-12-01. Models not listed have no price here (tokens only) unless config.toml sets one.
_SONNET_4 = ModelPrice(input=3.0, output=15.0, cache_read=0.30, cache_write=3.75)
_OPUS_4_5 = ModelPrice(input=5.0, output=25.0, cache_read=0.50, cache_write=6.25)
_OPUS_4 = ModelPrice(input=15.0, output=75.0, cache_read=1.50, cache_write=18.75)
_HAIKU_4_5 = ModelPrice(input=1.0, output=5.0, cache_read=0.10, cache_write=1.25)
PRICES = {
    "claude-sonnet-4-6": _SONNET_4,
    "claude-sonnet-4-5": _SONNET_4,
    "claude-sonnet-4-0": _SONNET_4,
    "claude-sonnet-4": _SONNET_4,
    "claude-opus-4-6": _OPUS_4_5,
    "claude-opus-4-5": _OPUS_4_5,
    "claude-opus-4-1": _OPUS_4,
    "claude-opus-4-0": _OPUS_4,
    "claude-opus-4": _OPUS_4,
    "claude-haiku-4-5": _HAIKU_4_5,
}

# Context windows. Source: Anthropic's models overview
# (https://platform.claude.com/docs/en/about-claude/models/overview, "Context window" and "Max
# output" rows), read on 2026-12-01: 200K tokens for every current model (Opus 4.6/4.5/4.1/4,
# Sonnet 4.6/4.5/4, Haiku 4.5) and the Claude 3 family. Some Sonnet and Opus models take 1M with the
# `context-1m` beta header, which deferchat does not send: 200K is what a request without it holds.
# Max output: Opus 4.6 128K, Sonnet 4.x and Haiku 4.5 64K, Opus 4.1/4 32K.
_WINDOW_200K = 200_000
WINDOWS = (
    ("claude-opus-4-6*", ModelWindow(tokens=_WINDOW_200K, max_output=128_000)),
    ("claude-opus-4-5*", ModelWindow(tokens=_WINDOW_200K, max_output=64_000)),
    ("claude-opus-4*", ModelWindow(tokens=_WINDOW_200K, max_output=32_000)),
    ("claude-sonnet-4*", ModelWindow(tokens=_WINDOW_200K, max_output=64_000)),
    ("claude-haiku-4*", ModelWindow(tokens=_WINDOW_200K, max_output=64_000)),
    ("*", ModelWindow(tokens=_WINDOW_200K)),  # every Claude model holds 200K: a newer name too
)

ANTHROPIC = ProviderProfile(
    name="anthropic",
    label="Anthropic",
    default_model="claude-sonnet-4-6",
    adapter="core.providers.anthropic:AnthropicProvider",
    key_name="anthropic",
    env_var="ANTHROPIC_API_KEY",
    auth_token_env="ANTHROPIC_AUTH_TOKEN",
    base_url_env="ANTHROPIC_BASE_URL",
    default_host=HOST,
    genuine_hosts=(HOST,),
    native_strategy=ANTHROPIC_STRATEGY,
    native_search="defer_loading + server tool search",
    model_support=(
        ModelSupportRule(
            provider="anthropic", model="*haiku*", native=False, note="Haiku does not support tool_reference expansion"
        ),
        ModelSupportRule(
            provider="anthropic", model="*claude-3*", native=False, note="Claude 3 models predate the tool search tool"
        ),
    ),
    models=("claude-opus-4-6", "claude-sonnet-4-6", "claude-haiku-4-5"),
    # Extended thinking: Claude 3.7 Sonnet and the Claude 4 family on.
    thinking_models=r"claude-(3-7-sonnet|(opus|sonnet|haiku)-[4-9])",
    # Interleaved thinking (between tool calls): the Claude 4 family on, not Claude 3.7 Sonnet.
    interleaved_thinking_models=r"claude-(opus|sonnet|haiku)-[4-9]",
    prices=PRICES,
    windows=WINDOWS,
)
