"""The provider factory: a provider's name, model and base URL in, a ready provider out.

The engine is given a :data:`ProviderFactory` (tests pass their own); the default one builds
each provider by its profile: the offline demo model, the script provider, or an SDK adapter
with the key and the bounds on its waits (``[timeouts]``) from settings. Every adapter module is
imported only when it is built.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from core.config import Settings
from core.errors import UsageError
from core.providers import adapter_class, make_provider
from core.providers.base import Provider
from core.providers.profiles import DEMO, PROVIDER_NAMES, SCRIPT, profile_for
from core.redaction import remember_url, restore_url

ProviderFactory = Callable[[str, str, str | None, dict[str, Any]], Provider]
"""``(name, model, base_url, extra)`` -> a provider; ``extra`` holds ``script`` and ``demo_delay``."""


def settings_file() -> str:
    """Where the settings live, for messages that point a person there."""
    from core.config import settings_path

    return str(settings_path())


def can_build(settings: Settings, name: str, base_url: str | None) -> bool:
    """Whether the SDK provider ``name`` can be built with ``base_url``: it has a key (environment or
    ``[keys]``), or a base URL: ``base_url``, or one set in its SDK's own variable
    (``OPENAI_BASE_URL``...), a local server. What the factory requires, and the model picker offers."""
    profile = profile_for(name)
    env_url = os.environ.get(profile.base_url_env) if profile is not None and profile.base_url_env else None
    return bool(settings.api_key(name) or base_url or env_url)


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
        env_url = os.environ.get(profile.base_url_env) if profile.base_url_env else None
        base_url = restore_url(base_url, (settings.base_url_for(name), settings.base_url, env_url))
        if not can_build(settings, name, base_url):
            raise UsageError(f"provider {name} needs an API key: set {profile.env_var} or [keys] in {settings_file()}")
        key = settings.api_key(name)
        return make_provider(
            name,
            model,
            base_url=base_url,
            api_key=key or "not-needed",
            waits=settings.timeouts.waits_for(name),
            thinking=settings.thinking,
        )

    return make


__all__ = ["ProviderFactory", "can_build", "default_provider_factory", "settings_file"]
