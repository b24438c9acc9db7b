"""Provider profiles: every fact about a provider in one place, one module per provider.

* ``anthropic``: the Messages API; native search with ``tool_reference`` expansion; thinking.
* ``openai``: the Responses API; native ``tool_search`` (GPT-5.4 on); reasoning items.
* ``openai-chat``: Chat Completions, OpenAI itself or any compatible server; no native search.
* ``demo``: the offline demo model; reads the ADR-0123 index.
* ``script``: replays a file of model turns; reads the ADR-0123 index.

Settings (keys, default models), the adapters (key, label, genuine host), ``auto`` dispatch
(genuine hosts, base URL variables, the model-support table) and the provider factory all read
these. Importing this package imports no SDK.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from core.providers.profiles.anthropic import ANTHROPIC
from core.providers.profiles.base import (
    DEFAULT_WAITS,
    ModelAbilities,
    ModelPrice,
    ModelSupportRule,
    ModelWindow,
    NativeProvider,
    ProviderProfile,
    Waits,
    url_host,
)
from core.providers.profiles.demo import DEMO
from core.providers.profiles.openai_chat import COMPAT_VENDORS, LOCAL_HOSTS, LOCAL_SERVER_PORTS, OPENAI_CHAT
from core.providers.profiles.openai_responses import OPENAI
from core.providers.profiles.script import SCRIPT

PROFILES: Mapping[str, ProviderProfile] = MappingProxyType(
    {p.name: p for p in (DEMO, SCRIPT, ANTHROPIC, OPENAI, OPENAI_CHAT)}
)
"""Every provider by name, in the order messages list them."""

PROVIDER_NAMES: tuple[str, ...] = tuple(PROFILES)
SDK_PROVIDERS: tuple[str, ...] = tuple(name for name, p in PROFILES.items() if not p.offline)
"""The providers built on an official SDK (``make_provider`` builds them)."""


def profile_for(name: str) -> ProviderProfile | None:
    """The profile of provider ``name``, or None for a provider deferchat does not know."""
    return PROFILES.get(name)


KEY_VARIABLES: str = " or ".join(p.env_var for p in (ANTHROPIC, OPENAI) if p.env_var)
"""The environment variables that reach a real model, joined by "or" as a person reads them,
from the Anthropic and OpenAI profiles: the first screen and the demo name them from here."""


def model_support_table() -> tuple[ModelSupportRule, ...]:
    """The built-in model-support table: every profile's own rows, in registry order."""
    return tuple(rule for p in PROFILES.values() for rule in p.model_support)


DEFAULT_MODEL_SUPPORT: tuple[ModelSupportRule, ...] = model_support_table()


__all__ = [
    "ANTHROPIC",
    "COMPAT_VENDORS",
    "DEFAULT_MODEL_SUPPORT",
    "DEFAULT_WAITS",
    "DEMO",
    "KEY_VARIABLES",
    "LOCAL_HOSTS",
    "LOCAL_SERVER_PORTS",
    "OPENAI",
    "OPENAI_CHAT",
    "PROFILES",
    "PROVIDER_NAMES",
    "SCRIPT",
    "SDK_PROVIDERS",
    "ModelAbilities",
    "ModelPrice",
    "ModelSupportRule",
    "ModelWindow",
    "NativeProvider",
    "ProviderProfile",
    "Waits",
    "model_support_table",
    "profile_for",
    "url_host",
]
