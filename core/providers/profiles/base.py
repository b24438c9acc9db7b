"""What a provider profile holds, and the per-model table its abilities are read from.

A :class:`ProviderProfile` is every fact deferchat knows about one provider: its name and the
label people read, where its key lives (the ``[keys]`` field and the environment variable),
its default model and host, which hosts count as the genuine provider, and what its models can
do (:class:`ModelAbilities`). Code that needs such a fact reads it from the profile; nothing
spells a host or an environment variable a second time.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict

from core.deferral.names import StrategyName

NativeProvider = Literal["anthropic", "openai"]
"""The providers with a native tool search (the rows of the model-support table name one)."""


class ModelSupportRule(BaseModel):
    """One row of the model-support table: does ``provider``'s native tool search work for models
    matching ``model`` (a case-insensitive glob)? The first matching row wins; user rows come first."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    provider: NativeProvider
    model: str
    native: bool
    note: str = ""

    def matches(self, provider: str, model: str) -> bool:
        return provider == self.provider and fnmatch.fnmatchcase(model.lower(), self.model.lower())


@dataclass(frozen=True)
class ModelAbilities:
    """What one model of one provider can do, as deferchat relies on it."""

    native_tool_search: bool
    """The provider's own tool search works for this model (``auto`` picks the native strategy)."""
    tool_reference: bool
    """A ``tool_reference`` block in a tool result is expanded into the tool's definition."""
    reasoning: bool
    """The model reasons in items whose encrypted state must travel back (OpenAI reasoning models)."""
    thinking: bool
    """The model may answer with thinking blocks that history must echo verbatim (Anthropic)."""
    interleaved_thinking: bool = False
    """The model thinks between tool calls too (Anthropic's interleaved-thinking beta)."""
    rule: ModelSupportRule | None = None
    """The model-support row that decided ``native_tool_search``, if one matched."""


@dataclass(frozen=True, kw_only=True)
class Waits:
    """How long deferchat waits on a provider, in seconds; each bound is its own
    ``provider.timeout`` (see :mod:`core.providers._common`). The defaults are ``DEFAULT_WAITS``;
    a profile may set others, ``[timeouts]`` in config.toml and the ``deferchat ask`` flags
    override both."""

    connect: float = 10.0
    """To open the connection (TCP and TLS). Handshakes take well under a second; ten leaves
    room for a slow network and a proxy without hiding a host that is down."""
    first_byte: float = 60.0
    """From sending a request to the first byte of the answer's body, in all (a server that
    trickles its headers cannot stretch it). Long enough for a provider to read a large prompt
    and start streaming; the genuine APIs open their streams with an event at once."""
    idle: float = 60.0
    """The longest silence between two pieces of a streamed answer, counted on the bytes
    (keep-alive ``ping`` events and SSE comments count as life, as they reach the socket even
    where the SDK drops them): Anthropic's streams carry ``ping`` events, and OpenAI sends a
    keep-alive event every 30 s while a model reasons without a summary, so a minute with
    nothing at all is a stall."""
    max_retry_after: float = 60.0
    """The longest ``retry-after`` honoured before a retry. A server that asks for more fails
    the request at once with ``provider.rate_limited`` saying until when."""

    def __post_init__(self) -> None:
        for name in ("connect", "first_byte", "idle"):
            if not getattr(self, name) > 0:
                raise ValueError(f"the {name} wait must be more than 0 seconds")
        if not self.max_retry_after >= 0:
            raise ValueError("max_retry_after must be 0 seconds or more")


DEFAULT_WAITS = Waits()


@dataclass(frozen=True, kw_only=True)
class ModelPrice:
    """What one model's tokens cost, in US dollars per million tokens, in Anthropic's terms:
    ``input`` is the uncached input, ``cache_read`` the input read from the prompt cache,
    ``cache_write`` the input written to it (None: not priced here; a request that has such
    tokens then has no cost, see :mod:`core.chat.meter`)."""

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None


@dataclass(frozen=True, kw_only=True)
class ModelWindow:
    """One model's context window as its provider documents it: ``tokens`` for prompt and answer
    together, ``max_input`` where the prompt is capped below that, ``max_output`` the longest answer."""

    tokens: int
    max_input: int | None = None
    max_output: int | None = None


def dated_base(model: str) -> str:
    """A dated snapshot's base alias (``claude-sonnet-4-5-20250929`` -> ``claude-sonnet-4-5``,
    ``gpt-5-2025-08-07`` -> ``gpt-5``); any other name as it is."""
    return re.sub(r"(-\d{4}-\d{2}-\d{2}|-\d{8})\Z", "", model)


def url_host(url: str) -> str:
    """The lower-case host of a base URL (a bare ``host/path`` counts as https)."""
    return (urlsplit(url if "://" in url else f"https://{url}").hostname or "").lower()


@dataclass(frozen=True, kw_only=True)
class ProviderProfile:
    """Every fact about one provider. The adapters, settings, ``auto`` dispatch and the
    provider factory read these; see :mod:`core.providers.profiles` for the registry."""

    name: str
    """The provider's name in settings, ``--provider`` and the chat row."""
    label: str
    """The name people read in messages."""
    default_model: str
    adapter: str
    """``module:Class`` of its adapter, imported only when a provider is built."""
    offline: bool = False
    """Runs in-process without a network (demo, script); ``auto`` gives it the wrapper strategy."""
    key_name: str | None = None
    """The field of ``[keys]`` that holds its API key (a provider may share another's key)."""
    env_var: str | None = None
    """The environment variable its API key is read from first."""
    auth_token_env: str | None = None
    """An environment variable holding a bearer token used when no API key is set."""
    base_url_env: str | None = None
    """The environment variable its SDK reads a base URL from when none is given."""
    default_host: str | None = None
    """The host its SDK talks to when no base URL is set."""
    default_path: str = ""
    """The path of its SDK's default base URL on that host (``/v1`` for OpenAI's)."""
    genuine_hosts: tuple[str, ...] = ()
    """Hosts that are the genuine first-party API (an unset base URL is genuine too)."""
    native_strategy: StrategyName | None = None
    """The strategy ``auto`` picks on the genuine provider when the model allows it."""
    native_search: str = ""
    """How that strategy reaches deferred tools, in words (for ``auto``'s reasons)."""
    model_support: tuple[ModelSupportRule, ...] = ()
    """The built-in rows of the model-support table for this provider."""
    reasoning_models: str | None = None
    """A regular expression searched in the model name's last path segment: the models that reason."""
    thinking_models: str | None = None
    """A regular expression searched in the model name's last path segment: the models that can think."""
    interleaved_thinking_models: str | None = None
    """The same, for the models that can think between tool calls."""
    waits: Waits = DEFAULT_WAITS
    """How long to wait on it (connect, first byte, idle gap, the retry-after cap)."""
    models: tuple[str, ...] = ()
    """Models to offer in the model picker besides the default (any other name can be typed)."""
    windows: tuple[tuple[str, ModelWindow], ...] = ()
    """``(glob, window)`` rows, first match wins: each known model's context window (matched on
    the name's last path segment, case-insensitively, so ``openai/gpt-4.1`` on a gateway is
    ``gpt-4.1``). ``[models."provider:model"]`` in config.toml and a server's listing come first
    (:mod:`core.providers.window`)."""
    prices: Mapping[str, ModelPrice] = field(default_factory=dict, compare=False)
    """Model name -> its list price (a dated snapshot is priced as its alias); a model left out
    has no price: the meter shows its tokens only. ``[prices."provider:model"]`` in config.toml
    overrides or adds rows."""
    _patterns: dict[str, re.Pattern[str]] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.default_host is not None and self.default_host not in self.genuine_hosts:
            raise ValueError(f"profile {self.name}: the default host must be one of its genuine hosts")
        for attr in ("reasoning_models", "thinking_models", "interleaved_thinking_models"):
            if (pattern := getattr(self, attr)) is not None:
                self._patterns[attr] = re.compile(pattern, re.IGNORECASE)

    @property
    def default_base_url(self) -> str | None:
        """The base URL its SDK uses when given none (None for an offline provider)."""
        return f"https://{self.default_host}{self.default_path}" if self.default_host else None

    @property
    def owns_key(self) -> bool:
        """Its key is its own (``openai-chat`` borrows ``openai``'s): a present key may pick it."""
        return self.key_name == self.name

    def is_genuine(self, base_url: str | None) -> bool:
        """True for an unset base URL or one on a genuine host of this provider."""
        if not base_url:
            return bool(self.genuine_hosts)
        return url_host(base_url) in self.genuine_hosts

    def price_of(self, model: str) -> ModelPrice | None:
        """The list price of ``model`` (or of its dated snapshot's alias), if this profile has one."""
        return self.prices.get(model) or self.prices.get(dated_base(model))

    def window_of(self, model: str) -> ModelWindow | None:
        """``model``'s documented context window, if this profile knows it."""
        name = model.rsplit("/", 1)[-1].lower()
        return next((w for pattern, w in self.windows if fnmatch.fnmatchcase(name, pattern.lower())), None)

    def support_row(self, model: str, rules: Sequence[ModelSupportRule] | None = None) -> ModelSupportRule | None:
        """The first row of ``rules`` (default: this profile's own) that speaks for ``model``."""
        table = self.model_support if rules is None else rules
        return next((rule for rule in table if rule.matches(self.name, model)), None)

    def _matches(self, attr: str, model: str) -> bool:
        pattern = self._patterns.get(attr)
        return bool(pattern and pattern.search(model.rsplit("/", 1)[-1]))

    def abilities(self, model: str, rules: Sequence[ModelSupportRule] | None = None) -> ModelAbilities:
        """What ``model`` can do here. ``rules`` is the effective model-support table (the user's
        rows first); by default this profile's own rows."""
        rule = self.support_row(model, rules) if self.native_strategy is not None else None
        native = self.native_strategy is not None and (rule is None or rule.native)
        # Both native searches load a deferred tool by expanding a tool_reference into its
        # definition (Anthropic's server does it; the OpenAI adapter does it for client searches).
        return ModelAbilities(
            native_tool_search=native,
            tool_reference=native,
            reasoning=self._matches("reasoning_models", model),
            thinking=self._matches("thinking_models", model),
            interleaved_thinking=self._matches("interleaved_thinking_models", model),
            rule=rule,
        )
