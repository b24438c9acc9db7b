"""OpenAI on the Responses API (``core.providers.openai_responses``).

Native deferral: ``defer_loading`` plus the ``tool_search`` tool (hosted, or client-executed and
answered by deferchat's own index). ``tool_search`` needs GPT-5.4 or later: the older models'
rows keep ``auto`` on active-tools. Reasoning models get their encrypted reasoning back.
"""

from __future__ import annotations

from core.deferral.names import OPENAI as OPENAI_STRATEGY
from core.providers.profiles.base import ModelSupportRule, ProviderProfile

HOST = "api.openai.com"
_GPT_5_4 = "OpenAI tool_search needs GPT-5.4 or later"
# Prices: none listed. No first-party price list was at hand when the table was made
# (2026-12-01), and a price is never guessed: the meter shows these models' tokens only until
# config.toml sets one, e.g. [prices."openai:gpt-5.4"] input = ..., output = ..., cache_read = ...

OPENAI = ProviderProfile(
    name="openai",
    label="OpenAI",
    default_model="gpt-5.4",
    adapter="core.providers.openai_responses:OpenAIResponsesProvider",
    key_name="openai",
    env_var="OPENAI_API_KEY",
    base_url_env="OPENAI_BASE_URL",
    default_host=HOST,
    default_path="/v1",
    genuine_hosts=(HOST,),
    native_strategy=OPENAI_STRATEGY,
    native_search="defer_loading + hosted tool_search",
    model_support=tuple(
        ModelSupportRule(provider="openai", model=pattern, native=False, note=_GPT_5_4)
        for pattern in ("gpt-3*", "gpt-4*", "o[0-9]*", "gpt-5", "gpt-5-*", "gpt-5.[0-3]*")
    ),
    models=("gpt-5.4", "gpt-5.4-mini", "gpt-5", "gpt-4.1"),
    reasoning_models=r"^(o\d|gpt-5|codex)",
)
