"""The planner's boundary types: what goes in (agent, caps, policy) and the plan that comes out."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from core.deferral.names import STRATEGY_NAMES, WRAPPER
from core.roster.bounds import Caps, Placement, PolicyConfig
from core.tools import Origin, SideEffect, ToolSpec

BUILDER = "context-builder@13"
# Builders whose plans this builder accepts as current when they render the same bytes
# (ADR-0123 decision 19: an @11 plan defers nothing and renders exactly as @12 would; @13 adds
# always-load pins, which rank first, and renders a pin-free @12 plan byte for byte).
COMPATIBLE_BUILDERS = ("context-builder@11", "context-builder@12")

# ADR-0130: a chat bound to a website profile pins these three, ranked first, never deferred.
WEBSITE_PROFILE_TOOLS = ("browser.navigate", "browser.observe", "browser.act")

POLICIES = ("overflow", "threshold")
STRATEGIES = STRATEGY_NAMES  # the concrete strategies a plan may name (core.deferral.names)

# Reasons of tools that never became candidates (a server listed them unusable) start so.
REJECTED_REASON_PREFIX = "skipped: rejected at discovery: "


class Profile(BaseModel):
    """What a chat is bound to. ``website`` (ADR-0130): the chat works on one site, so the
    browser tools are pinned; ``url`` is where it starts."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["website"]
    url: str = Field(pattern=r"^https?://[^\s/]+", description="the site's absolute http(s) address")

    @property
    def pinned_tools(self) -> tuple[str, ...]:
        return WEBSITE_PROFILE_TOOLS


def always_load_matches(pattern: str, name: str) -> bool:
    """An ``always_load`` entry names one tool exactly, or every tool under a prefix
    (``mcp.<server>.*``)."""
    if pattern.endswith(".*"):
        return name.startswith(pattern[:-1])
    return name == pattern


class AgentConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = "chat"
    version: str = "1"
    deferred: tuple[str, ...] = ()
    # Tools never deferred and ranked first: exact names, or ``mcp.<server>.*`` for a whole server.
    always_load: tuple[str, ...] = ()
    # A chat profile; a website profile pins the browser tools (ADR-0130).
    profile: Profile | None = None
    # Optional control tools this agent always carries (tool.describe, tool.result, chat.title).
    controls: tuple[str, ...] = ()
    # An agent without the deferral control tool defers nothing (ADR-0123 decision 16).
    can_defer: bool = True
    instructions: str = ""


class RejectedTool(BaseModel):
    """A tool a server listed that cannot be a candidate (an unusable name or schema).

    It still reaches the plan, as a skipped row with its reason: nothing leaves the roster
    silently. ``name`` is display-safe (control characters escaped, over-long names clipped,
    a repeated listing numbered) and never a usable tool name.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    server: str | None = None
    reason: str = Field(description="why it is not offered, without the 'skipped: ' prefix")
    origin: Origin = Origin.DISCOVERED
    side_effect: SideEffect = SideEffect.NETWORK_WRITE


class PlanInput(BaseModel):
    """Everything a plan depends on. Same input, same bytes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    agent: AgentConfig = Field(default_factory=AgentConfig)
    configured: tuple[ToolSpec, ...] = ()
    discovered: tuple[ToolSpec, ...] = ()
    rejected: tuple[RejectedTool, ...] = ()
    # Servers whose ``mcpServers`` entry says ``"alwaysLoad": true``: every tool of theirs is pinned.
    always_load_servers: tuple[str, ...] = ()
    caps: Caps = Field(default_factory=Caps)
    policy: PolicyConfig = Field(default_factory=PolicyConfig)
    strategy: str = WRAPPER
    strategy_reason: str = ""

    @model_validator(mode="after")
    def _strategy_known(self) -> PlanInput:
        if self.strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {self.strategy!r}; expected one of {', '.join(STRATEGIES)}")
        return self


class ToolPlacement(BaseModel):
    """One candidate's fate, with the reason a person can read."""

    model_config = ConfigDict(extra="forbid")

    name: str
    origin: str
    server: str | None
    side_effect: str
    placement: Placement
    reason: str
    tokens: int = Field(description="definition tokens if defined or skipped, index-entry tokens if deferred")
    definition_tokens: int
    rank: int = Field(description="position in the ranking, 0-based (control tools first)")
    untrusted: bool
    description: str
    input_schema: dict[str, Any]
    index_entry: str | None = None
    scopes: list[str] = Field(default_factory=list)
    requires_approval: bool | None = None
    hints: dict[str, bool] = Field(default_factory=dict)
    remote_name: str | None = None
    # The server's title for its tool; absent from the JSON when it has none (plans read as before).
    title: str | None = Field(None, exclude_if=lambda v: v is None)
    pin: str = Field(description="content hash of the spec: the run's pin for this tool")
    # Always-load: what pins it (ranked first, never deferred); absent from the JSON when not pinned.
    always_load: str | None = Field(None, exclude_if=lambda v: v is None)

    @property
    def rejected(self) -> bool:
        """A tool a server listed unusable: it has no spec, only its reason."""
        return self.placement is Placement.SKIPPED and self.reason.startswith(REJECTED_REASON_PREFIX)


class RosterPlan(BaseModel):
    """The plan. Field order is the JSON contract's order (ARCHITECTURE.md)."""

    model_config = ConfigDict(extra="forbid")

    builder: str
    policy: str
    strategy: str
    strategy_reason: str = ""
    caps: dict[str, int]
    candidates: int
    defined_tool_names: list[str]
    deferred_tool_names: list[str]
    skipped_tool_names: list[str]
    definition_tokens: int
    index_tokens: int
    index_entries: list[str]
    index_text: str
    tools: list[ToolPlacement]
    agent: dict[str, Any]
    control_tool_names: list[str] = Field(default_factory=list)
    policy_settings: dict[str, Any] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)
    prefix_ceiling: int = 0
    render_sha256: str = ""
    # Always-load pins, in rank order, and the servers pinned whole by their mcpServers entry.
    # Both are left out of the JSON while empty, so a plan without pins reads as before.
    always_load_tool_names: list[str] = Field(default_factory=list, exclude_if=lambda v: not v)
    always_load_servers: list[str] = Field(default_factory=list, exclude_if=lambda v: not v)

    def to_json(self) -> str:
        return self.model_dump_json(indent=2)

    def placement_of(self, name: str) -> ToolPlacement | None:
        for t in self.tools:
            if t.name == name:
                return t
        return None

    def spec_of(self, name: str) -> ToolSpec | None:
        t = self.placement_of(name)
        return None if t is None or t.rejected else spec_from_placement(t)

    def rejected_tools(self) -> list[RejectedTool]:
        """The tools servers listed unusable, as the planner got them (for a what-if)."""
        return [
            RejectedTool(
                name=t.name,
                server=t.server,
                reason=t.reason[len(REJECTED_REASON_PREFIX) :],
                origin=Origin(t.origin),
                side_effect=SideEffect(t.side_effect),
            )
            for t in self.tools
            if t.rejected
        ]

    def pinned_names(self) -> list[str]:
        """Defined and deferred tools: the run's tool pins (decision 2)."""
        return [t.name for t in self.tools if t.placement is not Placement.SKIPPED]


def spec_from_placement(t: ToolPlacement) -> ToolSpec:
    return ToolSpec(
        name=t.name,
        description=t.description,
        input_schema=t.input_schema,
        origin=Origin(t.origin),
        server=t.server,
        side_effect=SideEffect(t.side_effect),
        scopes=tuple(t.scopes),
        requires_approval=t.requires_approval,
        hints=t.hints,
        remote_name=t.remote_name,
        title=t.title,
    )
