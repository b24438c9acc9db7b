"""What bounds a plan and which way it defers (:class:`Caps`, :class:`PolicyConfig`), and the
three places a tool can land (:class:`Placement`).

Apart from the plan's own models (:mod:`core.roster.models`, which re-exports them): a chat's
options and the roster panel need these before the app's first frame, the plan's models not.
"""

from __future__ import annotations

from enum import Enum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from core.context.regions import DEFERRED_INDEX, TOOL_DEFINITIONS


class Placement(str, Enum):
    DEFINED = "defined"
    DEFERRED = "deferred"
    SKIPPED = "skipped"


class Caps(BaseModel):
    """How much the prompt may carry. Defaults are ADR-0123's (unchanged by it)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_definitions: int = Field(TOOL_DEFINITIONS.item_cap, ge=0)
    max_definition_tokens: int = Field(TOOL_DEFINITIONS.max_tokens, ge=0)
    max_index_entries: int = Field(DEFERRED_INDEX.item_cap, ge=0)
    max_index_tokens: int = Field(DEFERRED_INDEX.max_tokens, ge=0)


class PolicyConfig(BaseModel):
    """Which tools are deferred. ``overflow`` is ADR-0123; ``threshold`` is pickDeferredMcpTools."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: Literal["overflow", "threshold"] = "overflow"
    per_server: int = Field(10, ge=0, description="a server with more MCP tools than this defers them")
    aggregate: int = Field(30, ge=0, description="more MCP tools than this in all defers every one")
