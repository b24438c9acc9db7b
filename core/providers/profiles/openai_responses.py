"""OpenAI on the Responses API (``core.providers.openai_responses``).

Native deferral: ``defer_loading`` plus the ``tool_search`` tool (hosted, or client-executed and
answered by deferchat's own index). ``tool_search`` needs GPT-5.4 or later: the older models'
rows keep ``auto`` on active-tools. Reasoning models get their encrypted reasoning back.
"""

from __future__ import annotations

from core.deferral.names import OPENAI as OPENAI_STRATEGY
from core.providers.profiles.base import ModelSupportRule, ModelWindow, ProviderProfile

HOST = "api.openai.com"
_GPT_5_4 = "OpenAI tool_search needs GPT-5.4 or later"
# Prices: none listed. No first-party price list was at hand when the table was made
# (2026-12-01), and a price is never guessed: the meter shows these models' tokens only until
# config.toml sets one, e.g. [prices."openai:gpt-5.4"] input = ..., output = ..., cache_read = ...

# Context windows. Source: OpenAI's model pages (https://platform.openai.com/docs/models/<model>,
# "Context window" and "Max output tokens"), as the Vercel AI Gateway's model listings mirror them,
# read on 2026-12-01. GPT-5.4: 1,050,000 (of which at most 922K prompt, 128K output); GPT-5 to
# GPT-5.3: 400,000 (272K prompt, 128K output); GPT-4.1 family: 1,047,576 (32,768 output); GPT-4o:
# 128,000 (16,384 output); o1/o3/o4-mini: 200,000 (100,000 output); GPT-3.5 Turbo: 16,385.
WINDOWS = (
    ("gpt-5.4*", ModelWindow(tokens=1_050_000, max_input=922_000, max_output=128_000)),
    ("gpt-5*", ModelWindow(tokens=400_000, max_input=272_000, max_output=128_000)),
    ("gpt-4.1*", ModelWindow(tokens=1_047_576, max_output=32_768)),
    ("gpt-4o*", ModelWindow(tokens=128_000, max_output=16_384)),
    ("o[134]*", ModelWindow(tokens=200_000, max_output=100_000)),
    ("gpt-3.5-turbo*", ModelWindow(tokens=16_385, max_output=4_096)),
)
# On the Responses API every current OpenAI model holds at least 128K: a newer name gets that.
RESPONSES_WINDOWS = (*WINDOWS, ("*", ModelWindow(tokens=128_000)))

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
    windows=RESPONSES_WINDOWS,
)
