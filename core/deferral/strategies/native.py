"""The native strategies (seed 004): every pinned tool declared on every request, the deferred
ones with ``defer_loading``, plus the provider's own tool search tool. Constant array.

* ``anthropic``: Anthropic's server tool search, the BM25 or the regex variant.
* ``openai``: the Responses API's ``{"type": "tool_search"}``, hosted (OpenAI runs the search)
  or client-executed (the model writes queries and deferchat answers them with its own index).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any, ClassVar, Literal

from core.deferral.names import ANTHROPIC, OPENAI, StrategyName
from core.deferral.strategies.base import BaseStrategy, Surface, SystemBuilder
from core.deferral.strategies.history import HistoryReader
from core.roster.models import RosterPlan
from core.tools import ToolSpec

AnthropicSearch = Literal["bm25", "regex"]
OpenAISearch = Literal["hosted", "client"]

ANTHROPIC_SEARCH_TOOLS: dict[str, dict[str, Any]] = {
    "bm25": {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"},
    "regex": {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"},
}
OPENAI_SEARCH_TOOL: dict[str, Any] = {"type": "tool_search"}
# Client-executed: the model's tool_search_call carries these arguments and deferchat runs the
# search (core.deferral.search) and answers with the matching tools' definitions.
OPENAI_CLIENT_SEARCH_TOOL: dict[str, Any] = {
    "type": "tool_search",
    "execution": "client",
    "description": (
        "Search the tools that are available but not loaded yet. Give one or more short queries "
        "naming the capability you need; the matching tools are loaded and can be called next. "
        "If nothing matches, no such tool exists here: do not search again for the same thing."
    ),
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
OPENAI_SEARCH_TOOLS: dict[str, dict[str, Any]] = {"hosted": OPENAI_SEARCH_TOOL, "client": OPENAI_CLIENT_SEARCH_TOOL}


class NativeStrategy(BaseStrategy):
    """Shared by both native strategies: the array is built once and copied out per request.
    Each subclass names its provider's search tools (its flavours) and the default flavour."""

    SEARCH_TOOLS: ClassVar[dict[str, dict[str, Any]]]
    DEFAULT_SEARCH: ClassVar[str]
    LABEL: ClassVar[str]

    def __init__(
        self,
        plan: RosterPlan,
        specs: dict[str, ToolSpec],
        system: SystemBuilder,
        loaded: Iterable[str] = (),
        *,
        search: str | None = None,
        foreign_history: bool = False,
    ):
        flavour = search or self.DEFAULT_SEARCH
        if flavour not in self.SEARCH_TOOLS:
            raise ValueError(f"unknown {self.LABEL} tool search {flavour!r}: {' or '.join(self.SEARCH_TOOLS)}")
        super().__init__(plan, specs, system, loaded)
        deferred = [dict(specs[n].definition(), defer_loading=True) for n in self._deferred]
        tools = list(self._defined) + deferred
        self._tools = tools + ([copy.deepcopy(self.SEARCH_TOOLS[flavour])] if deferred else [])
        self.foreign_history = foreign_history
        self._carried: list[str] = []  # loaded in this turn before a fallback brought it here
        self._converted: Any = None  # the switched history's conversion, kept across requests
        self._reader: HistoryReader | None = None

    def surface(self, messages: list[dict[str, Any]]) -> Surface:
        tools = copy.deepcopy(self._tools)  # a caller changing what it got changes nothing later
        if not self.foreign_history:
            return Surface(self.system, tools, self._prefix_end(tools))
        if self._converted is None:
            from core.providers.portable import PortableHistory

            self._converted = PortableHistory(self.name)
        sent = self._converted.convert(messages, tools)
        loaded_elsewhere = set(self.unloaded_calls(sent)) | set(self._carried)
        for tool in tools:
            if tool.get("defer_loading") and tool.get("name") in loaded_elsewhere:
                del tool["defer_loading"]
        # for_target reads the tools' names and search tools, not defer_loading: ``sent`` is the
        # conversion for the tools as they go out too, and the request carries it
        return Surface(self.system, tools, self._prefix_end(tools), converted=(self.name, sent))

    def begin_turn(self) -> None:
        super().begin_turn()
        self._carried = []

    def carry_over(self, names: list[str]) -> None:
        """Tools another provider's search loaded earlier in this turn: the model was told it may
        call them, and this provider's search never loaded them, so they are declared in full
        (``defer_loading`` off) for the rest of the turn."""
        super().carry_over(names)
        self._carried = [n for n in dict.fromkeys([*self._carried, *names]) if n in self._deferred]
        if self._carried:
            self.foreign_history = True

    def unloaded_calls(self, sent: list[dict[str, Any]]) -> list[str]:
        """Deferred tools that the history calls although no search of this provider that the
        request carries loaded them: the chat reached them under another provider (its search,
        or ``tool.search``) before it switched here. Neither API documents a call of a deferred
        tool it never loaded, so such a tool is declared in full (``defer_loading`` off) while
        the history calls it; every other deferred tool stays deferred. ``sent`` is the history
        as converted for this provider and the request's tools (core.providers.portable)."""
        if self._reader is None:
            self._reader = HistoryReader(set(self._deferred), self._deferred_by_wire)
        referenced, loaded = self._reader.read(sent)
        return [n for n in referenced if n not in set(loaded)]

    def note(self) -> str:
        if not self._deferred:
            return ""
        return (
            f"{len(self._deferred)} more tools are available through tool search; search for a capability "
            "before saying you cannot do something."
        )


class AnthropicNativeStrategy(NativeStrategy):
    name: ClassVar[StrategyName] = ANTHROPIC
    SEARCH_TOOLS = ANTHROPIC_SEARCH_TOOLS
    DEFAULT_SEARCH = "bm25"
    LABEL = "Anthropic"


class OpenAINativeStrategy(NativeStrategy):
    name: ClassVar[StrategyName] = OPENAI
    SEARCH_TOOLS = OPENAI_SEARCH_TOOLS
    DEFAULT_SEARCH = "hosted"
    LABEL = "OpenAI"
