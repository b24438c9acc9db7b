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

ProviderFactory = Callable[[str, str, str | None, dict[str, Any]], Provider]
"""``(name, model, base_url, extra)`` -> a provider; ``extra`` holds ``script`` and ``demo_delay``."""


def settings_file() -> str:
    """Where the settings live, for messages that point a person there."""
    from core.config import settings_path

    return str(settings_path())


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

        key = settings.api_key(name)
        # a base URL set in the SDK's own variable (OPENAI_BASE_URL...) is one too: a local server
        env_url = os.environ.get(profile.base_url_env) if profile.base_url_env else None
        if not key and not (base_url or env_url):
            raise UsageError(f"provider {name} needs an API key: set {profile.env_var} or [keys] in {settings_file()}")
        return make_provider(
            name,
            model,
            base_url=base_url,
            api_key=key or "not-needed",
            waits=settings.timeouts.waits_for(name),
            thinking=settings.thinking,
        )

    return make


__all__ = ["ProviderFactory", "default_provider_factory", "settings_file"]
