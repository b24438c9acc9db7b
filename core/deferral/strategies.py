"""How deferred tools surface in each request (seed 004; ADR-0123 for the wrapper).

* ``wrapper``: definitions + the index region in the system prompt + ``tool.call``. The
  tools array and the prefix never change.
* ``anthropic``: every pinned tool declared on every request, deferred ones with
  ``defer_loading``, plus Anthropic's server tool search. Constant array.
* ``openai``: the same on the Responses API with ``{"type": "tool_search"}`` (hosted: OpenAI runs
  the search) or, with ``openai_search="client"``, ``{"type": "tool_search", "execution":
  "client", ...}``: the model writes queries and deferchat answers them with its own index.
* ``active-tools``: the base tools (definitions + ``tool.search``) plus this turn's discovery
  pool. The pool only grows within a turn and is seeded, every step, with the deferred tools
  that the messages actually sent still reference (the cross-turn trap), so history never
  names a tool absent from the array.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from core.roster.models import RosterPlan
from core.tools import ToolSpec

ANTHROPIC_SEARCH_TOOLS = {
    "bm25": {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"},
    "regex": {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"},
}
OPENAI_SEARCH_TOOL = {"type": "tool_search"}
# Client-executed: the model's tool_search_call carries these arguments and deferchat runs the
# search (core.deferral.search) and answers with the matching tools' definitions.
OPENAI_CLIENT_SEARCH_TOOL = {
    "type": "tool_search",
    "execution": "client",
    "description": ("Search the tools that are available but not loaded yet. Give one or more short queries "
                    "naming the capability you need; the matching tools are loaded and can be called next. "
                    "If nothing matches, no such tool exists here: do not search again for the same thing."),
    "parameters": {
        "type": "object",
        "properties": {
            "queries": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Search queries, a few words each; the results of all queries are combined.",
            },
        },
        "required": ["queries"],
        "additionalProperties": False,
    },
}
OPENAI_SEARCH_TOOLS = {"hosted": OPENAI_SEARCH_TOOL, "client": OPENAI_CLIENT_SEARCH_TOOL}


@dataclass
class Surface:
    system: str
    tools: list[dict[str, Any]]
    cache_prefix_tools: int | None  # index of the last tool in the cacheable prefix


def referenced_deferred_tool_names(messages: list[dict[str, Any]], deferred: set[str]) -> list[str]:
    """Deferred tools named by tool-call parts of ``messages`` (the ones actually sent, after
    compaction), in order of first appearance."""
    seen: dict[str, None] = {}
    for m in messages:
        if m.get("role") != "assistant" or not isinstance(m.get("content"), list):
            continue
        for block in m["content"]:
            if block.get("type") == "tool_use" and block.get("name") in deferred:
                seen.setdefault(block["name"], None)
    return list(seen)


class DiscoveryPool:
    """The per-turn set of discovered deferred tools; ``discover`` is monotonic within a turn."""

    def __init__(self, deferred: set[str]):
        self.deferred = deferred
        self.names: list[str] = []

    def discover(self, names: list[str]) -> list[str]:
        added = [n for n in names if n in self.deferred and n not in self.names]
        self.names.extend(added)
        return added


@dataclass
class Strategy:
    name: str
    plan: RosterPlan
    base_system: str
    specs: dict[str, ToolSpec]
    anthropic_search: str = "bm25"  # bm25 | regex: which Anthropic tool search tool is injected
    openai_search: str = "hosted"  # hosted | client: who runs OpenAI's tool_search
    # Names surfaced so far in this chat (searched, discovered or native-loaded), for the UI.
    loaded: list[str] = field(default_factory=list)
    pool: DiscoveryPool | None = None

    def __post_init__(self) -> None:
        self._defined = [self.specs[n].definition() for n in self.plan.defined_tool_names if n in self.specs]
        self._deferred = [n for n in self.plan.deferred_tool_names if n in self.specs]
        if self.name == "active-tools":
            self.pool = DiscoveryPool(set(self._deferred))

    # -- per turn / per step -------------------------------------------------------------------
    def begin_turn(self) -> None:
        """The discovery pool is created fresh per turn and starts empty (seed 004)."""
        if self.pool is not None:
            self.pool = DiscoveryPool(set(self._deferred))

    def seed(self, messages: list[dict[str, Any]]) -> list[str]:
        """active-tools: add every deferred tool the sent history references (cross-turn fix)."""
        if self.pool is None:
            return []
        return self.pool.discover(referenced_deferred_tool_names(messages, self.pool.deferred))

    def discover(self, names: list[str]) -> list[str]:
        """A search found these tools: active-tools adds them to the pool; all strategies note them."""
        added = self.pool.discover(names) if self.pool is not None else []
        for n in names:
            if n in self.specs and n not in self.loaded:
                self.loaded.append(n)
        return added

    def surface(self, messages: list[dict[str, Any]]) -> Surface:
        system = self.base_system
        if self.name == "wrapper":
            tools = list(self._defined)
            if self.plan.index_text:
                system = f"{system}\n\n{self.plan.index_text.rstrip()}"
            return Surface(system, tools, len(tools) - 1 if tools else None)
        if self.name in ("anthropic", "openai"):
            deferred = [dict(self.specs[n].definition(), defer_loading=True) for n in self._deferred]
            tools = list(self._defined) + deferred
            if deferred:
                tools.append(self.search_tool())
            return Surface(system, tools, len(tools) - 1 if tools else None)
        # active-tools
        assert self.pool is not None
        self.seed(messages)
        base = list(self._defined)
        tools = base + [self.specs[n].definition() for n in self.pool.names]
        return Surface(system, tools, len(base) - 1 if base else None)

    def search_tool(self) -> dict[str, Any]:
        """The provider's tool search tool a native strategy injects (a fresh copy)."""
        source = (ANTHROPIC_SEARCH_TOOLS[self.anthropic_search] if self.name == "anthropic"
                  else OPENAI_SEARCH_TOOLS[self.openai_search])
        return copy.deepcopy(source)

    def note(self) -> str:
        """The strategy's line in Region A (constant for the chat)."""
        n = len(self._deferred)
        if not n:
            return ""
        if self.name == "active-tools":
            return (f"{n} more tools are available but not loaded. Use tool.search to find and load the "
                    "ones you need; they can be called directly from the next step.")
        if self.name in ("anthropic", "openai"):
            return (f"{n} more tools are available through tool search; search for a capability before "
                    "saying you cannot do something.")
        return ""


def make_strategy(name: str, plan: RosterPlan, base_system: str, specs: dict[str, ToolSpec], **kw: Any) -> Strategy:
    if name not in ("wrapper", "anthropic", "openai", "active-tools"):
        raise ValueError(f"unknown strategy {name!r}")
    if kw.get("anthropic_search", "bm25") not in ANTHROPIC_SEARCH_TOOLS:
        raise ValueError(f"unknown Anthropic tool search {kw['anthropic_search']!r}: bm25 or regex")
    if kw.get("openai_search", "hosted") not in OPENAI_SEARCH_TOOLS:
        raise ValueError(f"unknown OpenAI tool search {kw['openai_search']!r}: hosted or client")
    return Strategy(name=name, plan=plan, base_system=base_system, specs=specs, **kw)
