"""Moving an open chat to another provider or model: the owner's switch, and the fallback a turn
takes when its provider keeps failing.

The pinned plan never changes (ADR-0123 decision 19: the same tools stay defined, deferred and
skipped). What a switch changes:

* the **strategy**, resolved again for the new provider from what the owner asked for when the
  chat was opened (:func:`strategy_for`): ``auto`` dispatches anew, an explicit ``wrapper`` or
  ``active-tools`` is kept, an explicit native strategy is kept only on its own provider;
* the **provider** the turn loop streams from, and the strategy it and the deferred search use;
* the **chat row** (provider, model, base URL, strategy and its reason), so a reopen runs the
  same, and ``switched`` in the chat's sources: its history may now hold another provider's
  blocks, which every request converts for its target (:mod:`core.providers.portable`);
* one ``provider.switched`` event, stored.

Fallback: a chat's ``fallback`` list (``provider:model``; its own, else ``fallback`` in
config.toml) names where a turn goes on when its provider fails with one of
:data:`FALLBACK_CODES` after the adapter's own retries. Each entry is tried at most once per turn;
the chat stays on the one that answered (the switch is recorded like the owner's).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Literal

from core.deferral.names import AUTO, STRATEGY_NAMES
from core.errors import UsageError
from core.providers.naming import Where, canonical_model, check_demo
from core.providers.profiles import PROFILES, profile_for

if TYPE_CHECKING:
    from core import events as ev
    from core.chat.session import ChatSession
    from core.config import Settings
    from core.providers.base import ProviderError

SwitchCause = Literal["owner", "fallback"]

FALLBACK_CODES: frozenset[str] = frozenset(
    {"provider.overloaded", "provider.rate_limited", "provider.server_error", "provider.timeout", "provider.connection"}
)
"""The failures a fallback answers: the provider is overloaded, rate limiting, failing on its
side, too slow or unreachable, still after the adapter's retries. A refused key, a bad request
or a malformed stream is not the provider being down, and fails the turn as before."""

_KEEP_ANYWHERE = ("wrapper", "active-tools")  # explicit strategies every provider can run


def parse_target(entry: str, settings: Settings | None = None) -> tuple[str, str]:
    """``provider:model`` (or a bare provider: its default model) as ``(provider, model)``."""
    provider, _, model = entry.strip().partition(":")
    profile = profile_for(provider)
    if profile is None:
        raise UsageError(f"fallback {entry!r}: unknown provider {provider!r} ({', '.join(PROFILES)})")
    if model:
        return provider, model
    return provider, settings.model_for(provider) if settings is not None else profile.default_model


def strategy_for(
    choice: str | None, provider: str, model: str, base_url: str | None, settings: Settings
) -> tuple[str, str]:
    """The strategy a chat runs with on ``provider``/``model``, and why. ``choice`` is what the
    owner asked for when the chat was opened (None for chats opened before it was kept: auto)."""
    from core.roster.inputs import resolve_strategy_for

    requested = choice if choice in (*STRATEGY_NAMES, AUTO) else AUTO
    if requested in STRATEGY_NAMES and requested not in _KEEP_ANYWHERE:
        profile = profile_for(provider)
        if profile is None or profile.native_strategy != requested:
            strategy, reason = resolve_strategy_for(AUTO, provider, model, base_url, settings=settings)
            return strategy, f"{reason} (the chat asked for {requested}, which {provider} cannot run)"
    return resolve_strategy_for(requested, provider, model, base_url, settings=settings)


def next_fallback(
    entries: Sequence[str], tried: Iterable[tuple[str, str]], settings: Settings | None = None
) -> tuple[str, str] | None:
    """The first fallback not tried yet in this turn, as ``(provider, model)``; None when none is left."""
    done = set(tried)
    for entry in entries:
        target = parse_target(entry, settings)
        if target not in done:
            return target
    return None


def usable_providers(settings: Settings) -> list[str]:
    """The providers a switch can reach now: the demo always; an SDK provider when its key is
    set (environment or ``[keys]``) or a base URL is configured for it (settings or its SDK's
    environment variable): what the provider factory builds. The script provider needs a file
    and is not offered."""
    from core.providers.factory import can_build

    usable = []
    for name, profile in PROFILES.items():
        if profile.offline:
            if name == "demo":
                usable.append(name)
            continue
        if can_build(settings, name, settings.base_url_for(name)):
            usable.append(name)
    return usable


def models_of(provider: str) -> list[str]:
    """The models a provider's profile lists (its default first)."""
    profile = profile_for(provider)
    if profile is None:
        return []
    return list(dict.fromkeys([profile.default_model, *profile.models]))


def owner_target(
    session: ChatSession,
    provider: str | None,
    model: str | None,
    base_url: str | None = None,
    *,
    where: Where = "picker",
) -> tuple[str, str, str | None]:
    """Where the owner's switch goes (``deferchat ask --chat``, the TUI's model picker): the
    provider named, else the one the model's name says, else the chat's own (the naming rule,
    :func:`core.providers.naming.resolve_switch`: never the demo for another model's name); what
    is not given stays as the chat has it on the same provider, and comes from the settings for
    another (its model, and its base URL when it is the configured provider). ``where`` words a
    refusal for the flags or the picker."""
    from core.providers.naming import resolve_switch

    row = session.chat()
    provider = resolve_switch(session.settings, row.provider, provider, model, where)
    same = provider == row.provider
    model = canonical_model(provider, model or (row.model if same else session.settings.model_for(provider)))
    base_url = base_url or (row.base_url if same else session.settings.base_url_for(provider))
    return provider, model, base_url


def switch_session(
    session: ChatSession,
    provider: str,
    model: str,
    base_url: str | None = None,
    *,
    cause: SwitchCause = "owner",
    reason: str = "",
) -> ev.ProviderSwitched:
    """Move ``session`` to ``provider``/``model`` (see the module's docstring); the event it emitted.
    Raises UsageError, and changes nothing, when the provider cannot be built (no key)."""
    import json

    from core import events as ev
    from core.chat.opening import search_note

    if session.make_provider is None:
        raise UsageError("this chat cannot switch providers")
    if profile_for(provider) is None:
        raise UsageError(f"unknown provider {provider!r}: {', '.join(PROFILES)}")
    check_demo(provider, model, "picker")  # the demo answers only to demo, whoever switches
    made = session.make_provider(provider, model, base_url)
    row = session.chat()
    choice = session.sources.get("strategy_choice")
    if choice is None and (row.strategy_reason or "").endswith("chosen explicitly"):
        choice = row.strategy  # opened before the choice was kept: its reason says it was explicit
    strategy, why = strategy_for(choice, provider, model, base_url, session.settings)
    why += search_note(strategy, session.tool_search)
    new = session.build_strategy(strategy, session.strategy.loaded, foreign_history=True)
    # A fallback takes over a turn under way: what a search loaded earlier in it stays callable
    # (its result told the model to call it). Between turns the new turn starts afresh anyway.
    new.carry_over(session.strategy.turn_loaded)
    before = (session.provider_name, session.provider.model)
    session.provider = made
    session.strategy, session.strategy_reason = new, why
    session.search.strategy = new
    session.turns.use(made, new, session.window_for(provider, model, base_url))
    session.sources["switched"] = True
    try:
        stored = row.sources_dict()
    except ValueError:
        stored = {}
    session.store.update_chat(
        session.chat_id,
        provider=provider,
        model=model,
        base_url=base_url,
        strategy=strategy,
        strategy_reason=why,
        sources=json.dumps({**stored, "switched": True}),
    )
    event = ev.ProviderSwitched(
        from_provider=before[0],
        from_model=before[1],
        provider=provider,
        model=model,
        base_url=base_url,
        strategy=strategy,
        strategy_reason=why,
        cause=cause,
        reason=reason,
    )
    session.emit(event)
    return event


def fall_back(session: ChatSession, turn_id: str, exc: ProviderError) -> bool:
    """The turn's provider failed with ``exc``: switch ``session`` to its next fallback that can be
    built (True), or leave it as it is (False: the turn fails as it would without fallbacks)."""
    from core import events as ev

    if exc.code not in FALLBACK_CODES or not session.fallback:
        return False
    key, tried = session.fallback_tried
    if key != turn_id:
        tried = set()
        session.fallback_tried = (turn_id, tried)
    tried.add((session.provider_name, session.provider.model))
    settings = session.settings
    while (target := next_fallback(session.fallback, tried, settings)) is not None:
        tried.add(target)
        provider, model = target
        base_url = settings.base_url_for(provider)
        try:
            switch_session(session, provider, model, base_url, cause="fallback", reason=exc.message)
        except UsageError as unusable:
            session.emit(
                ev.ErrorEvent(code="provider.fallback_unusable", message=f"fallback {provider}:{model}: {unusable}")
            )
            continue
        return True
    return False


__all__ = [
    "FALLBACK_CODES",
    "SwitchCause",
    "fall_back",
    "models_of",
    "next_fallback",
    "parse_target",
    "strategy_for",
    "switch_session",
    "usable_providers",
]
