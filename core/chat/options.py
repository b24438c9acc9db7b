"""How a chat is opened and what a turn gives back."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from core.roster.bounds import Caps, PolicyConfig

TurnStatus = Literal["done", "parked", "failed", "stopped"]  # stopped: by the owner (TurnLoop.stop)


@dataclass
class ChatOptions:
    """How to open a new chat. Everything else comes from settings."""

    roster: str | None = None
    mcp_config: str | None = None
    provider: str | None = None
    model: str | None = None
    base_url: str | None = None
    script: str | None = None
    strategy: str | None = None  # a name from core.deferral.names.STRATEGY_CHOICES
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    caps: Caps = field(default_factory=Caps)
    title: str | None = None
    start_demo_servers: bool = True
    fallback: list[str] | None = None  # "provider:model" tried in order; None: config.toml's
    # a reopened chat starts its MCP servers when first needed, not at open (core.chat.servers)
    lazy_servers: bool = False


@dataclass
class TurnResult:
    status: TurnStatus
    turn_id: str
    text: str = ""
    error: str | None = None
