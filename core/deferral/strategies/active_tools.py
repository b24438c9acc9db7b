"""``active-tools`` (seed 004): the base tools (definitions + ``tool.search``) plus this turn's
discovery pool.

The pool only grows within a turn and starts empty each turn. Every step it is seeded with the
deferred tools that the messages actually sent still reference (the cross-turn trap), so the
history never names a tool absent from the array.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

from core.deferral.names import ACTIVE_TOOLS, StrategyName
from core.deferral.strategies.base import BaseStrategy, Surface, SystemBuilder
from core.deferral.strategies.history import HistoryReader
from core.roster.models import RosterPlan
from core.tools import ToolSpec


class DiscoveryPool:
    """The per-turn set of discovered deferred tools; ``discover`` is monotonic within a turn."""

    def __init__(self, deferred: set[str]):
        self.deferred = deferred
        self.names: list[str] = []

    def discover(self, names: Iterable[str]) -> list[str]:
        added = [n for n in dict.fromkeys(names) if n in self.deferred and n not in self.names]
        self.names.extend(added)
        return added


class ActiveToolsStrategy(BaseStrategy):
    name: ClassVar[StrategyName] = ACTIVE_TOOLS

    def __init__(self, plan: RosterPlan, specs: dict[str, ToolSpec], system: SystemBuilder, loaded: Iterable[str] = ()):
        super().__init__(plan, specs, system, loaded)
        self.pool = DiscoveryPool(set(self._deferred))
        self._reader = HistoryReader(self.pool.deferred, self._deferred_by_wire)

    def begin_turn(self) -> None:
        super().begin_turn()
        self.pool = DiscoveryPool(set(self._deferred))

    def seed(self, messages: list[dict[str, Any]]) -> list[str]:
        """Add every deferred tool the sent history references (the cross-turn fix), and every
        one a native search in it loaded (a chat that switched here from a native strategy)."""
        used, loaded = self._reader.read(messages)  # each message read once, however long the chat
        return self.pool.discover(used + loaded)

    def discover(self, names: list[str]) -> list[str]:
        added = self.pool.discover(names)
        self._mark_loaded(names)
        self._note_turn(names)
        return added

    def surface(self, messages: list[dict[str, Any]]) -> Surface:
        seeded = self.seed(messages)  # once per step: the loop asks for one surface per request
        base = list(self._defined)
        tools = base + [self.specs[n].definition() for n in self.pool.names]
        return Surface(self.system, tools, self._prefix_end(base), seeded=seeded)

    def note(self) -> str:
        if not self._deferred:
            return ""
        return (
            f"{len(self._deferred)} more tools are available but not loaded. Use tool.search to find and load "
            "the ones you need; they can be called directly from the next step."
        )
