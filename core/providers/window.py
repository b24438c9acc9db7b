"""A model's context window: how many tokens one request may hold, prompt and answer together.

Where it comes from, first found wins:

1. ``config.toml``: ``[models."provider:model"] context_window = N`` (the owner knows best: a
   local server started with a smaller window, a gateway that cuts it);
2. the server's model listing, when it says (``context_length``, ``max_model_len``, ...): the
   providers' listing reads a cache only, never the network (``listed`` below);
3. the provider's profile, for the models it knows (:attr:`ProviderProfile.windows`);
4. :data:`DEFAULT_WINDOW` (32,768) for a model nobody describes: a smaller server needs
   ``context_window`` in config.toml.

``max_output_tokens`` in the same config table is what each request asks the model to write at
most (``max_tokens``): the output reserve taken off the window.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from core.providers.profiles import profile_for

if TYPE_CHECKING:
    from core.config import Settings

DEFAULT_WINDOW = 32_768
"""The window of a model no config, listing or profile describes (an OpenAI-compatible server that
lists none): what most current open models hold. A server started with less (Ollama's default
``num_ctx`` is 4,096; LM Studio's 4,096 unless set) needs ``context_window`` in config.toml."""

WindowSource = Literal["config", "server", "profile", "default"]

ListedWindow = Callable[["Settings", str, str, str | None], int | None]
"""``(settings, provider, model, base_url) -> tokens | None``: the window the server's model listing
gave, from its cache (``core.providers.listing.listed_window``)."""


@dataclass(frozen=True)
class ContextWindow:
    """One model's window in tokens, the most its prompt may hold (``max_input``, where the
    provider caps the prompt below the window), its own cap on an answer, and where it came from."""

    tokens: int
    source: WindowSource
    max_input: int | None = None
    max_output: int | None = None
    output_tokens: int | None = None  # config.toml's max_output_tokens: what each request asks for

    def describe(self) -> str:
        where = {"config": "config.toml", "server": "the server's model listing", "profile": "the provider's profile"}
        return f"{self.tokens:,} tokens ({where.get(self.source, 'the default for an unknown model')})"


def default_listed() -> ListedWindow:
    """The providers' cached listings (:func:`core.providers.listing.listed_window`: the cache
    ``deferchat models`` and the model picker fill, read with no network)."""
    from core.providers.listing import listed_window

    return listed_window


def context_window(
    settings: Settings,
    provider: str,
    model: str,
    base_url: str | None = None,
    *,
    listed: ListedWindow | None = None,
) -> ContextWindow:
    """``model``'s window on ``provider`` (see the module for the order)."""
    own = settings.model_settings(provider, model)
    output = own.max_output_tokens if own is not None else None
    if own is not None and own.context_window:
        return ContextWindow(own.context_window, "config", output_tokens=output)
    if listed is not None:
        tokens = listed(settings, provider, model, base_url)
        if tokens:
            return ContextWindow(int(tokens), "server", output_tokens=output)
    profile = profile_for(provider)
    known = profile.window_of(model) if profile is not None else None
    if known is not None:
        return ContextWindow(
            known.tokens, "profile", max_input=known.max_input, max_output=known.max_output, output_tokens=output
        )
    return ContextWindow(DEFAULT_WINDOW, "default", output_tokens=output)
