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

import os
from collections.abc import Iterable, Mapping, Sequence
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict

from core.deferral.names import ACTIVE_TOOLS, AUTO, STRATEGY_NAMES, WRAPPER, StrategyName
from core.providers.profiles import (
    COMPAT_VENDORS,
    DEFAULT_MODEL_SUPPORT,
    LOCAL_HOSTS,
    LOCAL_SERVER_PORTS,
    ModelSupportRule,
    NativeProvider,
    ProviderProfile,
    model_support_table,
    profile_for,
    url_host,
)


class Resolution(BaseModel):
    model_config = ConfigDict(frozen=True)

    strategy: StrategyName
    reason: str


class Gateway(BaseModel):
    """A base URL the user declares to front a genuine provider.

    An Anthropic gateway takes the native path (Anthropic has a single surface). An OpenAI
    gateway routes opaquely, so it stays on ``active-tools`` until the user confirms it
    forwards the Responses API untouched (``responses_api=True``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str
    provider: NativeProvider = "anthropic"
    responses_api: bool = False
    name: str = ""


class StrategyError(ValueError):
    """An explicitly chosen strategy that the provider's adapter cannot send."""


def support_rules(
    overrides: Iterable[ModelSupportRule | Mapping[str, object]] | None = None,
) -> tuple[ModelSupportRule, ...]:
    """The effective table: the user's rows (which win) followed by every profile's own rows."""
    user = tuple(
        r if isinstance(r, ModelSupportRule) else ModelSupportRule.model_validate(r) for r in (overrides or ())
    )
    return user + model_support_table()


def model_support(provider: str, model: str, rules: Sequence[ModelSupportRule]) -> ModelSupportRule | None:
    """The first row that speaks for this model, or None (native search assumed to work)."""
    return next((rule for rule in rules if rule.matches(provider, model)), None)


def _normalize_url(url: str) -> tuple[str, int | None, str]:
    parts = urlsplit(url if "://" in url else f"https://{url}")
    try:
        port = parts.port
    except ValueError:
        port = None
    return url_host(url), port, parts.path.rstrip("/")


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
    vendor = next((name for suffix, name in COMPAT_VENDORS if host == suffix or host.endswith("." + suffix)), None)
    if vendor is not None:
        if path.endswith("/anthropic"):
            return f"{vendor}'s Anthropic-compatible shim"
        return f"{vendor}, an OpenAI-compatible third party"
    if host in LOCAL_HOSTS:
        if port in LOCAL_SERVER_PORTS:
            return f"a local server (port {port}, {LOCAL_SERVER_PORTS[port]}'s default)"
        return "a local server"
    return f"{host or base_url}, which is not a declared gateway"


def _native(profile: ProviderProfile, model: str, rules: Sequence[ModelSupportRule], surface: str) -> Resolution:
    """Genuine provider reached: the model-support table has the last word."""
    assert profile.native_strategy is not None
    abilities = profile.abilities(model, rules)
    rule = abilities.rule
    if not abilities.native_tool_search:
        assert rule is not None
        note = f" ({rule.note})" if rule.note else ""
        return Resolution(
            strategy=ACTIVE_TOOLS,
            reason=f"{surface}, but model {model} is excluded from native tool search by the "
            f"model-support row '{rule.model}'{note}; using active-tools",
        )
    if rule is None:
        why = f"no model-support row excludes {model}"
    else:
        why = f"the model-support row '{rule.model}' allows {model}" + (f" ({rule.note})" if rule.note else "")
    return Resolution(
        strategy=profile.native_strategy,
        reason=f"{surface}; {why}, so deferred tools use {profile.label}'s native {profile.native_search}",
    )


def resolve_strategy(
    provider: str,
    model: str,
    base_url: str | None = None,
    *,
    gateways: Iterable[Gateway | str | Mapping[str, object]] = (),
    model_support: Iterable[ModelSupportRule | Mapping[str, object]] | None = None,
    requested: str = AUTO,
    env: Mapping[str, str] | None = None,
) -> Resolution:
    """Resolve ``requested`` (``auto`` or an explicit strategy) for one provider, model and base URL.

    ``base_url`` None means the SDK default, unless the SDK's own environment variable (the
    profile's ``base_url_env``, e.g. ``ANTHROPIC_BASE_URL``) points it elsewhere; ``env``
    defaults to ``os.environ``. ``gateways`` are base URLs (or :class:`Gateway` rows) the user
    declares.
    """
    profile = profile_for(provider)
    if requested != AUTO:
        return _explicit(provider, profile, requested)
    if profile is not None and profile.offline:
        return Resolution(
            strategy=WRAPPER,
            reason=f"the offline {provider} provider reads the ADR-0123 index; "
            "deferred tools are reached through tool.call",
        )
    if profile is None:
        return Resolution(
            strategy=ACTIVE_TOOLS,
            reason=f"provider {provider!r} offers no known native tool search; using active-tools",
        )
    rules = support_rules(model_support)
    env = os.environ if env is None else env
    source = ""
    if not base_url and profile.base_url_env and env.get(profile.base_url_env):
        base_url = env[profile.base_url_env]
        source = f" (from {profile.base_url_env})"
    from core.redaction import without_userinfo

    base_url = without_userinfo(base_url)  # matched and quoted in reasons: never its credential

    if profile.native_strategy is None:  # openai-chat: the vendor's genuine host changes nothing
        where = f" at {base_url}{source}" if base_url else ""
        return Resolution(
            strategy=ACTIVE_TOOLS,
            reason=f"Chat Completions ({provider}){where} has no native tool search (tool_search and "
            "defer_loading are Responses-only); using active-tools",
        )
    if profile.native_strategy == "anthropic":
        return _anthropic(profile, model, base_url, source, gateways, rules)
    return _openai(profile, model, base_url, source, gateways, rules)


def _anthropic(
    profile: ProviderProfile,
    model: str,
    base_url: str | None,
    source: str,
    gateways: Iterable[Gateway | str | Mapping[str, object]],
    rules: Sequence[ModelSupportRule],
) -> Resolution:
    """Anthropic has one surface: its own host, or any gateway the user declares in front of it."""
    if not base_url:
        return _native(profile, model, rules, f"genuine {profile.label} (first-party API, default base URL)")
    if profile.is_genuine(base_url):
        return _native(profile, model, rules, f"genuine {profile.label} (first-party {url_host(base_url)}){source}")
    gw = _match_gateway(base_url, gateways)
    if gw is not None and gw.provider == profile.name:
        name = f" '{gw.name}'" if gw.name else ""
        return _native(profile, model, rules, f"genuine {profile.label} through the declared gateway{name} {base_url}")
    return Resolution(
        strategy=ACTIVE_TOOLS,
        reason=f"base URL {base_url}{source} is {describe_endpoint(base_url)}: it speaks the "
        f"{profile.label} protocol but is not genuine {profile.label}, so tool_reference "
        "expansion cannot be relied on; using active-tools",
    )


def _openai(
    profile: ProviderProfile,
    model: str,
    base_url: str | None,
    source: str,
    gateways: Iterable[Gateway | str | Mapping[str, object]],
    rules: Sequence[ModelSupportRule],
) -> Resolution:
    """OpenAI's native search exists only on the Responses API: a gateway must be confirmed to forward it."""
    if profile.is_genuine(base_url):
        where = f"first-party {profile.default_host}{source}" if base_url else "first-party API, default base URL"
        return _native(profile, model, rules, f"genuine {profile.label} on the Responses API ({where})")
    assert base_url is not None
    gw = _match_gateway(base_url, gateways)
    if gw is not None and gw.provider == profile.name:
        if gw.responses_api:
            return _native(
                profile,
                model,
                rules,
                f"genuine {profile.label} through the declared gateway {base_url}, confirmed to forward "
                "the Responses API",
            )
        return Resolution(
            strategy=ACTIVE_TOOLS,
            reason=f"the declared gateway {base_url} routes {profile.label} opaquely and is not "
            "confirmed to forward the Responses API (declare responses_api to confirm); "
            "using active-tools",
        )
    return Resolution(
        strategy=ACTIVE_TOOLS,
        reason=f"base URL {base_url}{source} is {describe_endpoint(base_url)}: tool_search and "
        f"defer_loading exist only on genuine {profile.label}'s Responses API; using active-tools",
    )


# What an explicit native strategy needs, for the message that refuses it.
_NEEDS = {
    "anthropic": "strategy anthropic needs the anthropic provider; {provider} cannot send defer_loading and the "
    "Anthropic tool search tool",
    "openai": "strategy openai needs the openai provider (Responses API); {provider} cannot send tool_search",
}


def _explicit(provider: str, profile: ProviderProfile | None, requested: str) -> Resolution:
    if requested not in STRATEGY_NAMES:
        raise StrategyError(f"unknown strategy {requested!r}: choose one of {AUTO}, {', '.join(STRATEGY_NAMES)}")
    # An SDK adapter sends only its own native search; the offline providers emulate either.
    if requested in _NEEDS and profile is not None and not profile.offline and profile.native_strategy != requested:
        raise StrategyError(_NEEDS[requested].format(provider=provider))
    return Resolution(
        strategy=requested,  # checked against STRATEGY_NAMES above
        reason=f"strategy {requested} chosen explicitly (--strategy), not by auto",
    )


__all__ = [
    "DEFAULT_MODEL_SUPPORT",
    "Gateway",
    "ModelSupportRule",
    "Resolution",
    "StrategyError",
    "as_gateway",
    "describe_endpoint",
    "model_support",
    "resolve_strategy",
    "support_rules",
]
