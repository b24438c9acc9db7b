"""The one rule for naming a provider and a model: nothing named runs elsewhere.

Every way a person names where a chat runs goes through here: the flags (``deferchat ask`` and
the app's ``--provider``/``--model``/``--base-url``), ``config.toml`` (``provider``, ``model``,
``base_url``), the model picker and ``ask --chat ID --model M`` (a switch).

* A **provider named** (``--provider``, ``provider:model`` typed, ``provider`` in config.toml)
  is used as it is, with the model named beside it or the provider's default.
* A **model named alone** says its provider when its name does (:func:`family_of`):
  ``claude-…`` is Anthropic's; ``gpt-…`` (not the open-weights ``gpt-oss``), ``o1…``, ``o3…``,
  ``o4…`` are OpenAI's, on ``openai`` (the Responses API) when an OpenAI key is set, else on
  ``openai-chat`` when only a base URL is (a local or compatible server), else on ``openai``
  (which then asks for the key); ``demo`` (or ``demo-…``) is the demo's. A provider named at the same
  level or below of the same vendor is kept (``provider = "openai-chat"`` in config.toml with
  ``--model gpt-4.1``). A name that says nothing (``llama3.2``, ``openai/gpt-4.1`` on a gateway)
  runs on the provider named below it (config.toml's, the chat's own); with none, it stops with
  one usage line naming the choices (exit 2).
* **The demo answers only to demo**: it is never chosen for a model named elsewhere, and
  ``--provider demo`` with another model's name is refused.
* Nothing named at all: ``config.toml``'s provider, else the first provider whose own key is
  set, else the offline demo. A base URL with no provider or model named is refused (which API
  does it speak?); so is ``openai-chat`` on a server that is not OpenAI with no model named (no
  compatible server serves OpenAI's default model).

The settings' own reading of config.toml (:meth:`core.config.Settings.configured_provider`,
``model_for``, ``base_url_for``) follows the same rule. Importing this module imports no SDK.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from core.errors import UsageError
from core.providers.origin import env_base_url
from core.providers.profiles import DEMO, OPENAI, OPENAI_CHAT, PROFILES, profile_for

if TYPE_CHECKING:
    from core.config import Settings

Family = Literal["anthropic", "openai", "demo"]
Where = Literal["flags", "config", "picker"]

FAMILIES: dict[Family, tuple[str, ...]] = {
    "anthropic": ("anthropic",),
    "openai": ("openai", "openai-chat"),
    "demo": ("demo",),
}
"""Each vendor a model's name can say, and its providers (the first is the default)."""

_OPENAI_NAME = re.compile(r"^(gpt-|chatgpt-|o[134](-|$))")
_OPEN_WEIGHTS = re.compile(r"^gpt-oss")  # OpenAI's open-weights models: served by Ollama, vLLM, ...
COMPATIBLE = "an OpenAI-compatible server: Ollama, vLLM, LM Studio, llama.cpp, OpenRouter, DeepSeek..."


def choices(where: Where, model: str = "MODEL") -> str:
    """The providers a person can name, written the way ``where`` names one."""
    if where == "config":
        return f'provider = "openai-chat" ({COMPATIBLE}), "anthropic" or "openai"'
    if where == "picker":
        return f"openai-chat:{model} ({COMPATIBLE}), anthropic:{model} or openai:{model}"
    return f"--provider openai-chat ({COMPATIBLE}), --provider anthropic or --provider openai"


def family_of(model: str) -> Family | None:
    """The vendor ``model``'s name says, or None when it says none (see the module)."""
    name = model.strip().lower()
    if not name or "/" in name or ":" in name:  # a gateway's or a local server's own naming
        return None
    if name.startswith("claude-"):
        return "anthropic"
    if _OPENAI_NAME.match(name) and not _OPEN_WEIGHTS.match(name):
        return "openai"
    if is_demo_model(name):
        return "demo"
    return None


def is_demo_model(model: str | None) -> bool:
    """``demo`` and the demo's own names (``demo-1``, any ``demo-…``); None: its default."""
    return model is None or model == "demo" or model.startswith("demo-") or model in DEMO.models


def provider_for_name(
    settings: Settings, model: str, *, base_url_set: bool = False, prefer: str | None = None
) -> str | None:
    """The provider ``model``'s name says (None: it says none). ``prefer`` is a provider named
    below (config.toml's, the chat's): kept when it is of the name's vendor. ``base_url_set``: a
    base URL is given for this run (an OpenAI model then goes to ``openai-chat`` without a key)."""
    family = family_of(model)
    if family is None:
        return None
    providers = FAMILIES[family]
    if prefer in providers:
        return prefer
    if family == "openai":
        if settings.api_key(OPENAI.name):
            return OPENAI.name
        if base_url_set or env_base_url(OPENAI):
            return OPENAI_CHAT.name
    return providers[0]


def _what(model: str, where: Where, config: str) -> str:
    if where == "config":
        return f'model = "{model}" in {config}'
    if where == "picker":
        return f"{model!r}"
    return f"--model {model}"


def ambiguous(model: str, where: Where, config: str = "config.toml") -> UsageError:
    """The one line for a model whose name says no provider, with none named below it."""
    return UsageError(
        f"{_what(model, where, config)} does not say which provider serves it: name it, {choices(where, model)}"
    )


def check_demo(provider: str, model: str | None, where: Where = "flags", config: str = "config.toml") -> None:
    """The demo answers only to demo: refuse ``provider`` demo with another model's name."""
    if provider == DEMO.name and not is_demo_model(model):
        assert model is not None
        raise UsageError(
            f"the offline demo answers only to demo (its model is {DEMO.default_model}), not to {model!r}: "
            f"name the provider that serves it, {choices(where, model)}"
        )


def canonical_model(provider: str, model: str) -> str:
    """``demo`` names the demo's own model."""
    return DEMO.default_model if provider == DEMO.name and model == "demo" else model


def check_known(provider: str, where: Where = "flags", config: str = "config.toml") -> None:
    if profile_for(provider) is None:
        what = f'provider = "{provider}" in {config}' if where == "config" else f"provider {provider!r}"
        raise UsageError(f"unknown {what}: one of {', '.join(PROFILES)}")


@dataclass(frozen=True)
class Target:
    """Where a new chat runs: its provider, model and base URL (None: the SDK's variable or default)."""

    provider: str
    model: str
    base_url: str | None


def resolve_new(
    settings: Settings,
    provider: str | None,
    model: str | None,
    base_url: str | None,
    *,
    script: bool = False,
) -> Target:
    """Where a new chat with these flags runs (None: not given), config.toml below them (see the
    module). Raises UsageError with one line when the names do not say it."""
    from core.config import settings_path

    config = str(settings_path())
    below = settings.configured_provider()
    model_where: Where | None = "flags" if model else None
    if provider:
        check_known(provider)
        chosen = provider
    elif script:
        chosen = "script"
    elif model:
        found = provider_for_name(settings, model, base_url_set=bool(base_url), prefer=below)
        if found is None and below is None:
            raise ambiguous(model, "flags")
        chosen = found or below or ""
    elif settings.provider:
        check_known(settings.provider, "config", config)
        chosen = settings.provider
    elif settings.model:
        if below is None:
            raise ambiguous(settings.model, "config", config)
        chosen = below
    elif base_url or settings.base_url:
        flag = "--base-url" if base_url else f"base_url in {config}"
        raise UsageError(f"{flag} does not say which API the server speaks: name its provider, {choices('flags')}")
    else:
        chosen = settings.default_provider()
    if model is None and settings.model and below == chosen:
        model, model_where = settings.model, "config"
    if chosen == "script":
        model = model or "script"
    check_demo(chosen, model, model_where or "flags", config)
    url = base_url or settings.base_url_for(chosen)
    if model is None and chosen == OPENAI_CHAT.name and not OPENAI_CHAT.is_genuine(url or env_base_url(OPENAI)):
        raise UsageError(
            "name the model the OpenAI-compatible server serves: --model NAME (or model = ... in config.toml); "
            "`deferchat models --provider openai-chat` lists what it has"
        )
    return Target(chosen, canonical_model(chosen, model or settings.model_for(chosen)), url)


def resolve_switch(
    settings: Settings, current: str, provider: str | None, model: str | None, where: Where = "picker"
) -> str:
    """The provider an owner's switch goes to (the picker, ``ask --chat ID --model M``): the one
    named, else the one the model's name says, else the chat's own; never the demo (or another
    offline provider) for another model's name."""
    if provider:
        check_known(provider, where)
        check_demo(provider, model, where)
        return provider
    if not model:
        return current
    found = provider_for_name(settings, model, prefer=current)
    if found is not None:
        return found
    profile = profile_for(current)
    if profile is None or profile.offline:
        raise ambiguous(model, where)
    return current


__all__ = [
    "COMPATIBLE",
    "FAMILIES",
    "Target",
    "ambiguous",
    "canonical_model",
    "check_demo",
    "choices",
    "family_of",
    "is_demo_model",
    "provider_for_name",
    "resolve_new",
    "resolve_switch",
]
