"""Settings: one TOML file, environment variables, and defaults that work offline.

``$DEFERCHAT_HOME/config.toml`` if DEFERCHAT_HOME is set, else
``$XDG_CONFIG_HOME/deferchat/config.toml`` (default ``~/.config/deferchat/config.toml``)::

    provider = "anthropic"            # demo | anthropic | openai | openai-chat
    model = "claude-sonnet-4-6"
    base_url = "https://gateway.example/anthropic"
    strategy = "auto"                 # wrapper | anthropic | openai | active-tools | auto
    roster = "production"
    timezone = "Europe/Berlin"
    workspace = "~/deferchat-workspace"
    theme = "textual-dark"
    anthropic_gateways = ["https://gateway.example/anthropic"]
    anthropic_tool_search = "bm25"    # bm25 | regex: the server tool search the anthropic strategy injects
    openai_tool_search = "hosted"     # hosted | client: who runs the openai strategy's tool_search
    fallback = ["openai:gpt-5.4"]     # provider:model to continue on when the provider keeps failing
    [[model_support]]                 # rows that win over the built-in table
    provider = "anthropic"
    model = "*haiku-5*"
    native = true
    [thinking]                        # how much the models think (nothing set: each API's default)
    anthropic_budget_tokens = 4000    # Anthropic extended thinking, interleaved with tools (0: off; >= 1024)
    openai_effort = "medium"          # OpenAI reasoning effort: none | minimal | low | medium | high | xhigh | max
    openai_summary = "auto"           # OpenAI reasoning summaries to show: auto | concise | detailed
    [keys]                            # prefer the environment; never written anywhere else
    anthropic = "sk-ant-..."
    [keymap]                          # the TUI's key bindings by id (see the command palette)
    new_chat = "ctrl+shift+n"
    [tools]
    searxng_url = "http://127.0.0.1:8888"
    ntfy_topic_url = "https://ntfy.sh/my-topic"
    [timeouts]                        # seconds; each provider's defaults are in its profile
    connect = 10                      # to connect
    first_byte = 60                   # from the request to the answer's first byte (openai-chat: 300)
    idle = 60                         # the longest silence inside an answer
    max_retry_after = 60              # a longer retry-after fails at once, saying until when
    [timeouts.openai-chat]            # one provider's own: anthropic | openai | openai-chat
    first_byte = 600
    system_prompt = "Answer briefly."  # a new chat's own system prompt (beside the agent's)
    [prices."openai:gpt-5.4"]         # your price for a model, USD per million tokens (over
    input = 2.5                       # its profile's row; a field left out keeps the profile's)
    output = 15.0
    cache_read = 0.25
    [models."openai-chat:qwen3"]      # one model's context window, over the server's listing and
    context_window = 32768            # the profile (tokens, prompt and answer together)
    max_output_tokens = 2048          # the longest answer a request asks for (default 4096)
    [history]
    auto_compact = true               # summarise the oldest turns as the chat nears the window

README.md (*Every key of config.toml*) lists every key with its meaning and default;
tests/unit/test_readme_config_keys.py holds that list equal to what this module accepts. Where a
provider and a model are named (``provider``, ``model``, ``base_url``, the flags, the picker),
one rule decides what runs: :mod:`core.providers.naming`.

API keys come from the provider's environment variable first (ANTHROPIC_API_KEY,
OPENAI_API_KEY: each provider's profile in :mod:`core.providers.profiles` names it), then
``[keys]``. They are held in memory only: never stored in the database, events or logs.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, NonNegativeFloat, PositiveFloat, SecretStr, model_validator

from core.errors import parse_toml_model, read_text
from core.providers.profiles import DEFAULT_WAITS, DEMO, PROFILES, SDK_PROVIDERS, Waits, profile_for
from core.providers.thinking import ThinkingSettings

DEMO_PROVIDER = DEMO.name  # what runs with no key anywhere


def config_dir() -> Path:
    home = os.environ.get("DEFERCHAT_HOME")
    if home:
        return Path(home).expanduser()
    xdg = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(xdg) / "deferchat"


class Keys(BaseModel):
    """``[keys]``: one field per profile ``key_name`` (``openai-chat`` shares ``openai``)."""

    model_config = ConfigDict(extra="forbid")
    anthropic: SecretStr | None = None
    openai: SecretStr | None = None


class ToolSettings(BaseModel):
    """``[tools]``: what the built-in tools read (``ctx.settings`` is this table). A key not
    declared here is refused, so a misspelt one is an error, not a setting silently ignored."""

    model_config = ConfigDict(extra="forbid")
    searxng_url: str | None = None
    ntfy_topic_url: str | None = None
    ntfy_token: str | None = None
    # Private hosts a network tool may reach on purpose (a home server): names, addresses or
    # networks such as "nas.home", "192.168.1.20", "192.168.1.0/24". Empty by default.
    allow_private_hosts: list[str] = Field(default_factory=list)
    allow_private_network: bool = False
    http_timeout: PositiveFloat = 20.0
    fetch_max_bytes: int = Field(2_000_000, ge=1)


class WaitSettings(BaseModel):
    """Bounds on the waits for a provider, in seconds (see :class:`~core.providers.profiles.Waits`);
    a bound left out keeps the one below it."""

    model_config = ConfigDict(extra="forbid")
    connect: PositiveFloat | None = None
    first_byte: PositiveFloat | None = None
    idle: PositiveFloat | None = None
    max_retry_after: NonNegativeFloat | None = None

    def over(self, waits: Waits) -> Waits:
        """``waits`` with the bounds set here in their place."""
        return replace(waits, **self.model_dump(include=set(WaitSettings.model_fields), exclude_none=True))


class TimeoutSettings(WaitSettings):
    """``[timeouts]``: bounds for every provider, and ``[timeouts.<provider>]`` tables for one. For
    a provider, its own table wins over the shared bounds, which win over its profile's."""

    providers: dict[str, WaitSettings] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _provider_tables(cls, data: Any) -> Any:
        """``[timeouts.anthropic]`` and friends: the sub-tables named after a provider."""
        if isinstance(data, dict) and "providers" not in data:
            data = dict(data)
            data["providers"] = {name: data.pop(name) for name in SDK_PROVIDERS if name in data}
        return data

    def waits_for(self, provider: str) -> Waits:
        """The bounds ``provider`` runs with."""
        profile = profile_for(provider)
        waits = self.over(profile.waits if profile else DEFAULT_WAITS)
        own = self.providers.get(provider)
        return own.over(waits) if own else waits

    def overridden(self, **bounds: float | None) -> TimeoutSettings:
        """These settings with ``bounds`` (None: unset) in force for every provider, as the
        ``deferchat ask`` flags are: they win over the shared bounds and each provider's table."""
        given = {k: v for k, v in bounds.items() if v is not None}
        providers = {name: table.model_copy(update=dict.fromkeys(given)) for name, table in self.providers.items()}
        return self.model_copy(update={**given, "providers": providers})


class PriceSettings(BaseModel):
    """``[prices."provider:model"]``: USD per million tokens, over the profile's row for the model
    (a field left out keeps the profile's; with no profile row, a token kind left unpriced
    leaves a request that has such tokens without a cost: see :mod:`core.chat.meter`)."""

    model_config = ConfigDict(extra="forbid")
    input: NonNegativeFloat | None = None
    output: NonNegativeFloat | None = None
    cache_read: NonNegativeFloat | None = None
    cache_write: NonNegativeFloat | None = None


class ModelSettings(BaseModel):
    """``[models."provider:model"]``: what the owner knows of one model, over its profile and the
    server's listing (:mod:`core.providers.window`)."""

    model_config = ConfigDict(extra="forbid")
    context_window: int | None = Field(None, ge=1024)
    """Tokens one request may hold, prompt and answer together."""
    max_output_tokens: int | None = Field(None, ge=1)
    """The longest answer each request asks for (its ``max_tokens``; default 4,096)."""


class HistorySettings(BaseModel):
    """``[history]``: what happens as a chat nears its model's context window."""

    model_config = ConfigDict(extra="forbid")
    auto_compact: bool = True
    """Summarise the oldest turns into one summary when the history nears the window (False:
    the oldest turns are left out of requests, and that is said; ``/compact`` still summarises)."""


def check_fallback(entry: str) -> str:
    """``entry``, a fallback model (``provider:model`` or a bare provider), when it names a known
    provider; ValueError otherwise. What ``fallback`` in config.toml and ``--fallback`` accept."""
    provider, _, model = entry.partition(":")
    if profile_for(provider) is None:
        raise ValueError(f"fallback {entry!r}: expected provider:model, provider one of {', '.join(PROFILES)}")
    from core.providers.naming import is_demo_model

    if provider == DEMO_PROVIDER and not is_demo_model(model or None):
        raise ValueError(f"fallback {entry!r}: the offline demo answers only to demo, not to {model!r}")
    return entry


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    provider: str | None = None
    model: str | None = None
    base_url: str | None = None
    strategy: str = "auto"
    roster: str = "production"
    policy_file: str | None = None
    timezone: str | None = None
    workspace: str | None = None
    theme: str = "textual-dark"
    owner_name: str = "the owner"
    max_steps: int = Field(12, ge=1, le=100)
    anthropic_gateways: list[Any] = Field(default_factory=list)
    # The native strategies' search flavour. A chat pins the flavour it was opened with, so the
    # tools array (and the server blocks in its history) never change under it.
    anthropic_tool_search: Literal["bm25", "regex"] = "bm25"
    openai_tool_search: Literal["hosted", "client"] = "hosted"
    model_support: list[dict[str, Any]] = Field(default_factory=list)
    # Fallback models, "provider:model" (or a bare provider: its default model), tried in order
    # when the chat's provider keeps failing after its retries (core.chat.switch).
    fallback: list[str] = Field(default_factory=list)
    keys: Keys = Field(default_factory=Keys)
    keymap: dict[str, str] = Field(default_factory=dict, description="TUI binding id -> keys, e.g. new_chat")
    tools: ToolSettings = Field(default_factory=ToolSettings)
    timeouts: TimeoutSettings = Field(default_factory=TimeoutSettings)
    thinking: ThinkingSettings = Field(default_factory=ThinkingSettings)
    # A new chat's own system prompt (beside the agent's instructions); --system or the TUI's
    # editor sets another. A chat keeps the one it opened with when this changes.
    system_prompt: str | None = None
    prices: dict[str, PriceSettings] = Field(default_factory=dict, description='"provider:model" -> its price')
    models: dict[str, ModelSettings] = Field(default_factory=dict, description='"provider:model" -> its window')
    history: HistorySettings = Field(default_factory=HistorySettings)

    @model_validator(mode="after")
    def _fallback_names_a_provider(self) -> Settings:
        for entry in self.fallback:
            check_fallback(entry)
        return self

    def api_key(self, provider: str) -> str | None:
        """The provider's key: its profile's environment variable, else its ``[keys]`` field."""
        profile = profile_for(provider)
        if profile is None:
            return None
        if profile.env_var and os.environ.get(profile.env_var):
            return os.environ[profile.env_var]
        secret = getattr(self.keys, profile.key_name, None) if profile.key_name else None
        return secret.get_secret_value() if secret else None

    def key_source(self, provider: str) -> str | None:
        """Where the key :meth:`api_key` (or an Anthropic auth token) comes from, by name: the
        environment variable, ``[keys] <field> in <config.toml>``, or None when there is none."""
        profile = profile_for(provider)
        if profile is None:
            return None
        if profile.env_var and os.environ.get(profile.env_var):
            return profile.env_var
        if profile.key_name and getattr(self.keys, profile.key_name, None):
            return f"[keys] {profile.key_name} in {settings_path()}"
        if profile.auth_token_env and os.environ.get(profile.auth_token_env):
            return profile.auth_token_env
        return None

    def configured_provider(self) -> str | None:
        """The provider config.toml names: ``provider``, else the one ``model``'s name says
        (:mod:`core.providers.naming`); None when it names neither."""
        if self.provider:
            return self.provider
        if self.model:
            from core.providers.naming import provider_for_name

            return provider_for_name(self, self.model, base_url_set=bool(self.base_url))
        return None

    def default_provider(self) -> str:
        """The configured provider; otherwise the first whose own key is present; otherwise demo."""
        if configured := self.configured_provider():
            return configured
        for profile in PROFILES.values():
            if profile.owns_key and self.api_key(profile.name):
                return profile.name
        return DEMO_PROVIDER

    def model_for(self, provider: str) -> str:
        """config.toml's ``model`` when it is ``provider``'s (see :meth:`configured_provider`),
        else the provider's default model."""
        if self.model and self.configured_provider() == provider:
            return self.model
        profile = profile_for(provider)
        return profile.default_model if profile else "default"

    def base_url_for(self, provider: str) -> str | None:
        """The base URL configured for ``provider``: ``base_url``, when it is the configured provider."""
        return self.base_url if self.base_url and provider == self.configured_provider() else None

    def model_settings(self, provider: str, model: str) -> ModelSettings | None:
        """``[models."provider:model"]`` for this model, if config.toml has it."""
        return self.models.get(f"{provider}:{model}")

    def owner_timezone(self) -> str:
        if self.timezone:
            return self.timezone
        tz = os.environ.get("TZ")
        return tz if tz and "/" in tz else "UTC"

    def workspace_path(self) -> Path:
        if self.workspace:
            return Path(self.workspace).expanduser()
        from core.store import data_dir

        return data_dir() / "workspace"


def settings_path() -> Path:
    return config_dir() / "config.toml"


def load_settings(path: str | Path | None = None) -> Settings:
    p = Path(path) if path else settings_path()
    if not p.exists():
        return Settings()
    return parse_toml_model(read_text(p, str(p)), Settings, str(p))
