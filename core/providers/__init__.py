"""Model providers. Importing this package imports no SDK: each adapter loads its SDK on first use.

``make_provider("anthropic" | "openai" | "openai-chat", model, ...)`` builds a real provider
from its profile (:mod:`core.providers.profiles`); the offline ``demo`` and ``script``
providers, and the settings that choose among them all, are built by
:func:`core.providers.factory.default_provider_factory`.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from core.providers.profiles import SDK_PROVIDERS, ProviderProfile, profile_for

if TYPE_CHECKING:  # the request and event models live in core.providers.base (not needed to import this)
    from core.providers.base import Provider


def adapter_class(profile: ProviderProfile) -> Any:
    """The adapter class a profile names, imported now (its SDK still loads on first use)."""
    module, _, cls = profile.adapter.partition(":")
    return getattr(import_module(module), cls)


def make_provider(
    name: str,
    model: str,
    base_url: str | None = None,
    api_key: str | None = None,
    http_client: Any = None,
    **options: Any,
) -> Provider:
    """A provider for ``name``. Keys default to the profile's environment variable (e.g.
    ANTHROPIC_API_KEY); ``http_client`` is an ``httpx2.AsyncClient`` (tests pass one with a
    ``MockTransport``); ``options`` go to the adapter (``max_retries``, ``waits``: a
    :class:`~core.providers.profiles.Waits`, ``streaming``, ...)."""
    profile = profile_for(name)
    if profile is None or profile.offline:
        raise ValueError(f"unknown provider {name!r}: make_provider builds {', '.join(SDK_PROVIDERS)}")
    provider: Provider = adapter_class(profile)(
        model, base_url=base_url, api_key=api_key, http_client=http_client, **options
    )
    return provider


__all__ = ["SDK_PROVIDERS", "adapter_class", "make_provider"]
