"""Anthropic, the Messages API (``core.providers.anthropic``).

Native deferral: ``defer_loading`` plus Anthropic's server tool search, which answers with
``tool_reference`` blocks the API expands. Haiku cannot expand them, and Claude 3 models predate
the tool search tool: those rows keep ``auto`` on active-tools.
"""

from __future__ import annotations

from core.deferral.names import ANTHROPIC as ANTHROPIC_STRATEGY
from core.providers.profiles.base import ModelSupportRule, ProviderProfile

HOST = "api.anthropic.com"

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
    # Extended thinking: Claude 3.7 Sonnet and the Claude 4 family on.
    thinking_models=r"claude-(3-7-sonnet|(opus|sonnet|haiku)-[4-9])",
)
