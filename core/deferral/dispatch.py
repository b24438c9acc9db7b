"""``auto``: which deferral strategy a provider, model and base URL can really carry.

This mirrors the seed's ``resolveDeferralStrategy``: the strategy must never claim a surface
the request will not actually hit, so the question is always *which genuine provider
answers*, never merely *which wire protocol is spoken*.

* Genuine Anthropic (first-party ``api.anthropic.com`` or an unset base URL, or a gateway the
  user declares) -> ``anthropic``, unless the model-support table says the model cannot
  expand ``tool_reference`` blocks (Haiku is one row of that table).
* Genuine OpenAI on the Responses API (provider ``openai``, ``api.openai.com`` or unset) ->
  ``openai``, again subject to the table.
* Everything else -> ``active-tools``: ``openai-chat``, compat shims that speak a genuine
  provider's protocol without its tool search (DeepSeek's ``/anthropic``, Moonshot), local
  servers (Ollama, vLLM, llama.cpp) and unknown gateways.
* The offline ``demo`` and ``script`` providers read the ADR-0123 index -> ``wrapper``.

Every :class:`Resolution` carries a sentence a person can read (``plan``, ``ask --json`` and
the UI show it).
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict

Strategy = Literal["wrapper", "anthropic", "openai", "active-tools"]
STRATEGIES: tuple[str, ...] = ("wrapper", "anthropic", "openai", "active-tools")
OFFLINE_PROVIDERS = frozenset({"demo", "script"})

ANTHROPIC_HOST = "api.anthropic.com"
OPENAI_HOST = "api.openai.com"
BASE_URL_ENV = {"anthropic": "ANTHROPIC_BASE_URL", "openai": "OPENAI_BASE_URL", "openai-chat": "OPENAI_BASE_URL"}

# Hosts and ports that are known not to be the genuine provider, only to name them in reasons.
_KNOWN_COMPAT = (
    ("deepseek.com", "DeepSeek"),
    ("moonshot.ai", "Moonshot"),
    ("moonshot.cn", "Moonshot"),
    ("openrouter.ai", "OpenRouter"),
    ("groq.com", "Groq"),
    ("together.xyz", "Together"),
    ("fireworks.ai", "Fireworks"),
    ("mistral.ai", "Mistral"),
    ("x.ai", "xAI"),
)
_KNOWN_LOCAL_PORTS = {11434: "Ollama", 8000: "vLLM", 8080: "llama.cpp", 1234: "LM Studio"}


class Resolution(BaseModel):
    model_config = ConfigDict(frozen=True)

    strategy: Strategy
    reason: str


class ModelSupportRule(BaseModel):
    """One row of the model-support table: does ``provider``'s native tool search work for models
    matching ``model`` (a case-insensitive glob)? The first matching row wins; user rows come first."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    provider: Literal["anthropic", "openai"]
    model: str
    native: bool
    note: str = ""

    def matches(self, provider: str, model: str) -> bool:
        return provider == self.provider and fnmatch.fnmatchcase(model.lower(), self.model.lower())


_GPT_5_4 = "OpenAI tool_search needs GPT-5.4 or later"
DEFAULT_MODEL_SUPPORT: tuple[ModelSupportRule, ...] = (
    ModelSupportRule(provider="anthropic", model="*haiku*", native=False,
                     note="Haiku does not support tool_reference expansion"),
    ModelSupportRule(provider="anthropic", model="*claude-3*", native=False,
                     note="Claude 3 models predate the tool search tool"),
    *(ModelSupportRule(provider="openai", model=pattern, native=False, note=_GPT_5_4)
      for pattern in ("gpt-3*", "gpt-4*", "o[0-9]*", "gpt-5", "gpt-5-*", "gpt-5.[0-3]*")),
)


class Gateway(BaseModel):
    """A base URL the user declares to front a genuine provider.

    An Anthropic gateway takes the native path (Anthropic has a single surface). An OpenAI
    gateway routes opaquely, so it stays on ``active-tools`` until the user confirms it
    forwards the Responses API untouched (``responses_api=True``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str
    provider: Literal["anthropic", "openai"] = "anthropic"
    responses_api: bool = False
    name: str = ""


class StrategyError(ValueError):
    """An explicitly chosen strategy that the provider's adapter cannot send."""


def support_rules(overrides: Iterable[ModelSupportRule | Mapping[str, object]] | None = None
                  ) -> tuple[ModelSupportRule, ...]:
    """The effective table: the user's rows (which win) followed by the defaults."""
    user = tuple(r if isinstance(r, ModelSupportRule) else ModelSupportRule.model_validate(r)
                 for r in (overrides or ()))
    return user + DEFAULT_MODEL_SUPPORT


def model_support(provider: str, model: str, rules: Sequence[ModelSupportRule]) -> ModelSupportRule | None:
    """The first row that speaks for this model, or None (native search assumed to work)."""
    return next((rule for rule in rules if rule.matches(provider, model)), None)


def _normalize_url(url: str) -> tuple[str, int | None, str]:
    parts = urlsplit(url if "://" in url else f"https://{url}")
    host = (parts.hostname or "").lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    return host, port, parts.path.rstrip("/")


def as_gateway(entry: Gateway | str | Mapping[str, object]) -> Gateway:
    """A gateway row from config: a bare string is an Anthropic gateway URL."""
    if isinstance(entry, Gateway):
        return entry
    return Gateway(url=entry) if isinstance(entry, str) else Gateway.model_validate(entry)


def _match_gateway(base_url: str, gateways: Iterable[Gateway | str | Mapping[str, object]]) -> Gateway | None:
    host, port, path = _normalize_url(base_url)
    for gw in map(as_gateway, gateways):
        g_host, g_port, g_path = _normalize_url(gw.url)
        if g_host == host and g_port == port and (path == g_path or path.startswith(g_path + "/")):
            return gw
    return None


def describe_endpoint(base_url: str) -> str:
    """A short name for a non-genuine endpoint, for reasons: "DeepSeek's Anthropic-compatible shim"."""
    host, port, path = _normalize_url(base_url)
    vendor = next((name for suffix, name in _KNOWN_COMPAT if host == suffix or host.endswith("." + suffix)), None)
    if vendor is not None:
        if path.endswith("/anthropic"):
            return f"{vendor}'s Anthropic-compatible shim"
        return f"{vendor}, an OpenAI-compatible third party"
    if host in ("localhost", "127.0.0.1", "::1", "0.0.0.0"):
        if port in _KNOWN_LOCAL_PORTS:
            return f"a local server (port {port}, {_KNOWN_LOCAL_PORTS[port]}'s default)"
        return "a local server"
    return f"{host or base_url}, which is not a declared gateway"


def _native(provider: str, model: str, rules: Sequence[ModelSupportRule], surface: str) -> Resolution:
    """Genuine provider reached: the model-support table has the last word."""
    rule = model_support(provider, model, rules)
    if rule is not None and not rule.native:
        note = f" ({rule.note})" if rule.note else ""
        return Resolution(strategy="active-tools",
                          reason=f"{surface}, but model {model} is excluded from native tool search by the "
                                 f"model-support row '{rule.model}'{note}; using active-tools")
    label = "Anthropic" if provider == "anthropic" else "OpenAI"
    search = ("defer_loading + server tool search" if provider == "anthropic"
              else "defer_loading + hosted tool_search")
    if rule is None:
        why = f"no model-support row excludes {model}"
    else:
        why = f"the model-support row '{rule.model}' allows {model}" + (f" ({rule.note})" if rule.note else "")
    return Resolution(strategy=provider,  # type: ignore[arg-type]
                      reason=f"{surface}; {why}, so deferred tools use {label}'s native {search}")


def resolve_strategy(
    provider: str,
    model: str,
    base_url: str | None = None,
    *,
    gateways: Iterable[Gateway | str | Mapping[str, object]] = (),
    model_support: Iterable[ModelSupportRule | Mapping[str, object]] | None = None,
    requested: str = "auto",
    env: Mapping[str, str] | None = None,
) -> Resolution:
    """Resolve ``requested`` (``auto`` or an explicit strategy) for one provider, model and base URL.

    ``base_url`` None means the SDK default, unless the SDK's own environment variable
    (``ANTHROPIC_BASE_URL``, ``OPENAI_BASE_URL``) points it elsewhere; ``env`` defaults to
    ``os.environ``. ``gateways`` are base URLs (or :class:`Gateway` rows) the user declares.
    """
    if requested != "auto":
        return _explicit(provider, requested)
    if provider in OFFLINE_PROVIDERS:
        return Resolution(strategy="wrapper",
                          reason=f"the offline {provider} provider reads the ADR-0123 index; "
                                 "deferred tools are reached through tool.call")
    rules = support_rules(model_support)
    env = os.environ if env is None else env
    source = ""
    if not base_url and provider in BASE_URL_ENV and env.get(BASE_URL_ENV[provider]):
        base_url = env[BASE_URL_ENV[provider]]
        source = f" (from {BASE_URL_ENV[provider]})"

    if provider == "anthropic":
        if not base_url:
            return _native("anthropic", model, rules, "genuine Anthropic (first-party API, default base URL)")
        host, _, _ = _normalize_url(base_url)
        if host == ANTHROPIC_HOST:
            return _native("anthropic", model, rules, f"genuine Anthropic (first-party {host}){source}")
        gw = _match_gateway(base_url, gateways)
        if gw is not None and gw.provider == "anthropic":
            name = f" '{gw.name}'" if gw.name else ""
            return _native("anthropic", model, rules, f"genuine Anthropic through the declared gateway{name} {base_url}")
        return Resolution(strategy="active-tools",
                          reason=f"base URL {base_url}{source} is {describe_endpoint(base_url)}: it speaks the "
                                 "Anthropic protocol but is not genuine Anthropic, so tool_reference expansion "
                                 "cannot be relied on; using active-tools")

    if provider == "openai":
        if not base_url or _normalize_url(base_url)[0] == OPENAI_HOST:
            where = f"first-party {OPENAI_HOST}{source}" if base_url else "first-party API, default base URL"
            return _native("openai", model, rules, f"genuine OpenAI on the Responses API ({where})")
        gw = _match_gateway(base_url, gateways)
        if gw is not None and gw.provider == "openai":
            if gw.responses_api:
                return _native("openai", model, rules,
                               f"genuine OpenAI through the declared gateway {base_url}, confirmed to forward the "
                               "Responses API")
            return Resolution(strategy="active-tools",
                              reason=f"the declared gateway {base_url} routes OpenAI opaquely and is not confirmed "
                                     "to forward the Responses API (declare responses_api to confirm); "
                                     "using active-tools")
        return Resolution(strategy="active-tools",
                          reason=f"base URL {base_url}{source} is {describe_endpoint(base_url)}: tool_search and "
                                 "defer_loading exist only on genuine OpenAI's Responses API; using active-tools")

    if provider == "openai-chat":
        where = f" at {base_url}{source}" if base_url else ""
        return Resolution(strategy="active-tools",
                          reason=f"Chat Completions (openai-chat){where} has no native tool search (tool_search and defer_loading "
                                 "are Responses-only); using active-tools")

    return Resolution(strategy="active-tools",
                      reason=f"provider {provider!r} offers no known native tool search; using active-tools")


def _explicit(provider: str, requested: str) -> Resolution:
    if requested not in STRATEGIES:
        raise StrategyError(f"unknown strategy {requested!r}: choose one of auto, {', '.join(STRATEGIES)}")
    if requested == "anthropic" and provider in ("openai", "openai-chat"):
        raise StrategyError(f"strategy anthropic needs the anthropic provider; {provider} cannot send "
                            "defer_loading and the Anthropic tool search tool")
    if requested == "openai" and provider in ("anthropic", "openai-chat"):
        raise StrategyError(f"strategy openai needs the openai provider (Responses API); {provider} cannot send "
                            "tool_search")
    return Resolution(strategy=requested,  # type: ignore[arg-type]
                      reason=f"strategy {requested} chosen explicitly (--strategy), not by auto")


__all__ = [
    "DEFAULT_MODEL_SUPPORT",
    "Gateway",
    "ModelSupportRule",
    "Resolution",
    "STRATEGIES",
    "StrategyError",
    "as_gateway",
    "describe_endpoint",
    "model_support",
    "resolve_strategy",
    "support_rules",
]
