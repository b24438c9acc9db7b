"""The provider factory: a provider's name, model and base URL in, a ready provider out.

The engine is given a :data:`ProviderFactory` (tests pass their own); the default one builds
each provider by its profile: the offline demo model, the script provider, or an SDK adapter
with the key and the bounds on its waits (``[timeouts]``) from settings. Every adapter module is
imported only when it is built.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from core.config import Settings
from core.errors import UsageError
from core.providers import adapter_class, make_provider
from core.providers.base import Provider
from core.providers.origin import CHAT_SOURCE, DEFAULT_SOURCE, FLAG_SOURCE, Origin, env_base_url
from core.providers.profiles import DEMO, PROVIDER_NAMES, SCRIPT, profile_for
from core.redaction import remember_url, restore_url, without_userinfo

ProviderFactory = Callable[[str, str, str | None, dict[str, Any]], Provider]
"""``(name, model, base_url, extra)`` -> a provider; ``extra`` holds ``script``, ``demo_delay`` and
``flag_base_url`` (the ``--base-url`` of this run, so an error can say a URL came from it)."""


def settings_file() -> str:
    """Where the settings live, for messages that point a person there."""
    from core.config import settings_path

    return str(settings_path())


def can_build(settings: Settings, name: str, base_url: str | None) -> bool:
    """Whether the SDK provider ``name`` can be built with ``base_url``: it has a key (environment,
    ``[keys]``, or Anthropic's auth token), or a base URL: ``base_url``, or one set in its SDK's own
    variable (``OPENAI_BASE_URL``...), a local server that may need no key. What the factory
    requires, and the model picker offers."""
    profile = profile_for(name)
    if profile is None:
        return False
    return bool(settings.key_source(name) or base_url or env_base_url(profile))


def require_buildable(settings: Settings, name: str, base_url: str | None) -> None:
    """UsageError (one line, exit 2) when the SDK provider ``name`` cannot be built: no key, no base URL."""
    profile = profile_for(name)
    if profile is None or profile.offline or can_build(settings, name, base_url):
        return
    where = f"{profile.base_url_env} or --base-url" if profile.base_url_env else "--base-url"
    raise UsageError(
        f"provider {name} needs an API key: set {profile.env_var} or [keys] {profile.key_name} in "
        f"{settings_file()} (a local server that needs none: give its base URL, {where})"
    )


def origin_for(settings: Settings, name: str, base_url: str | None, flag_base_url: str | None = None) -> Origin:
    """Where provider ``name``'s base URL and key come from, for its errors: ``--base-url`` (the
    flag given to this run), ``base_url`` in config.toml, the chat's own (stored when it was
    opened or switched), the SDK's environment variable, or its default; the key's
    :meth:`~core.config.Settings.key_source`."""
    profile = profile_for(name)
    if base_url:
        bare = without_userinfo(base_url)  # a stored URL has lost its credential; the same URL all the same
        if flag_base_url and bare == without_userinfo(flag_base_url):
            source = FLAG_SOURCE
        elif bare == without_userinfo(settings.base_url_for(name)):
            source = f"base_url in {settings_file()}"
        else:
            source = CHAT_SOURCE
    elif profile is not None and env_base_url(profile):
        source = profile.base_url_env or DEFAULT_SOURCE
    else:
        source = DEFAULT_SOURCE
    return Origin(base_url=source, key=settings.key_source(name))


def default_provider_factory(settings: Settings) -> ProviderFactory:
    """The factory the engine uses unless it is given another: keys come from ``settings``."""

    def make(name: str, model: str, base_url: str | None, extra: dict[str, Any]) -> Provider:
        profile = profile_for(name)
        if profile is None:
            raise UsageError(f"unknown provider {name!r}: {', '.join(PROVIDER_NAMES)}")
        if profile is DEMO:
            demo: Provider = adapter_class(DEMO)(model, delay=float(extra.get("demo_delay", 0.0)))
            return demo
        if profile is SCRIPT:
            if not extra.get("script"):
                raise UsageError("the script provider needs --script FILE")
            script: Provider = adapter_class(SCRIPT)(extra["script"], model)
            return script

        # The chat row keeps a base URL without its credential; this process's memory, the
        # settings or the SDK's variable give it back (core.redaction).
        remember_url(base_url)
        env_url = env_base_url(profile)
        base_url = restore_url(base_url, (settings.base_url_for(name), settings.base_url, env_url))
        require_buildable(settings, name, base_url)
        return make_provider(
            name,
            model,
            # the SDK's variable read here, so the adapter knows the server it talks to (a local
            # one is no genuine host: it gets no real key, and its errors say where the URL came from)
            base_url=base_url or env_url,
            api_key=settings.api_key(name),
            waits=settings.timeouts.waits_for(name),
            thinking=settings.thinking,
            origin=origin_for(settings, name, base_url, extra.get("flag_base_url")),
        )

    return make


__all__ = [
    "ProviderFactory",
    "can_build",
    "default_provider_factory",
    "origin_for",
    "require_buildable",
    "settings_file",
]
