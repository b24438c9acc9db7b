"""Model providers. Importing this package imports no SDK: each adapter loads its SDK on first use.

``make_provider("anthropic" | "openai" | "openai-chat", model, ...)`` builds a real provider;
the offline ``demo`` and ``script`` providers live in their own modules.
"""

from __future__ import annotations

from typing import Any

from core.providers.base import ModelRequest, Provider, ProviderError, ProviderEvent

SDK_PROVIDERS = ("anthropic", "openai", "openai-chat")


def make_provider(name: str, model: str, base_url: str | None = None, api_key: str | None = None,
                  http_client: Any = None, **options: Any) -> Provider:
    """A provider for ``name``. Keys default to ANTHROPIC_API_KEY / OPENAI_API_KEY; ``http_client``
    is an ``httpx2.AsyncClient`` (tests pass one with a ``MockTransport``); ``options`` go to the
    adapter (``max_retries``, ``timeout``, ``streaming``, ...)."""
    kwargs = {"base_url": base_url, "api_key": api_key, "http_client": http_client, **options}
    if name == "anthropic":
        from core.providers.anthropic import AnthropicProvider

        return AnthropicProvider(model, **kwargs)
    if name == "openai":
        from core.providers.openai_responses import OpenAIResponsesProvider

        return OpenAIResponsesProvider(model, **kwargs)
    if name == "openai-chat":
        from core.providers.openai_chat import OpenAIChatProvider

        return OpenAIChatProvider(model, **kwargs)
    raise ValueError(f"unknown provider {name!r}: make_provider builds {', '.join(SDK_PROVIDERS)}")


__all__ = ["ModelRequest", "Provider", "ProviderError", "ProviderEvent", "SDK_PROVIDERS", "make_provider"]
