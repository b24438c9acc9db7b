"""Region A: the stable, cacheable prefix of every request, in classes with their own caps.

ADR-0079 keeps the prefix ceiling equal to the sum of the Region A class caps; ADR-0123
decision 4 adds the deferred tool index as a class of its own (40 entries, 2,000 tokens)
and raises the ceiling by exactly those 2,000 tokens, to 22,000.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RegionClass:
    name: str
    max_tokens: int
    max_items: int | None = None
    purpose: str = ""

    @property
    def item_cap(self) -> int:
        """The class's item cap; only the classes that count items have one."""
        if self.max_items is None:
            raise ValueError(f"Region A class {self.name} has no item cap")
        return self.max_items


INSTRUCTIONS = RegionClass("instructions", 2_500, purpose="operator and agent instructions")
AGENT_PROFILE = RegionClass("agent_profile", 1_500, purpose="who the agent is, the owner's name, timezone, locale")
OWNER_MEMORY = RegionClass("owner_memory", 3_000, purpose="pinned facts the owner asked to remember")
SKILLS = RegionClass("skills", 3_000, purpose="skill summaries the agent may load")
WORKSPACE = RegionClass("workspace_context", 1_000, purpose="what the workspace holds")
TOOL_DEFINITIONS = RegionClass("tool_definitions", 9_000, 30, "full tool definitions (ADR-0123 caps unchanged)")
DEFERRED_INDEX = RegionClass("deferred_tool_index", 2_000, 40, "one line per deferred tool (ADR-0123 decision 4)")

REGION_A: tuple[RegionClass, ...] = (
    INSTRUCTIONS,
    AGENT_PROFILE,
    OWNER_MEMORY,
    SKILLS,
    WORKSPACE,
    TOOL_DEFINITIONS,
    DEFERRED_INDEX,
)

# The ceiling is *defined* as the sum, so it can never drift from the classes.
PREFIX_CEILING: int = sum(c.max_tokens for c in REGION_A)

# Before ADR-0123 there was no index class: the ceiling was 20,000.
PREFIX_CEILING_BEFORE_ADR_0123: int = PREFIX_CEILING - DEFERRED_INDEX.max_tokens


def region(name: str) -> RegionClass:
    for c in REGION_A:
        if c.name == name:
            return c
    raise KeyError(name)
