"""What every deferral strategy is: a small protocol, and the state all four share.

A strategy turns a chat's pinned plan into what one model request carries (the tools array,
the system prompt, where the cacheable prefix ends). It is built whole, once per chat, from
the plan, the pinned specs, the system prompt and the tools already loaded in earlier
sessions; nothing patches it afterwards.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from core.deferral.names import StrategyName
from core.deferral.strategies.history import by_wire_name
from core.roster.models import RosterPlan
from core.tools import ToolSpec


@dataclass
class Surface:
    """What one request carries."""

    system: str
    tools: list[dict[str, Any]]
    cache_prefix_tools: int | None  # index of the last tool in the cacheable prefix
    # active-tools: deferred tools this step added to the pool because the sent history names them.
    seeded: list[str] = field(default_factory=list)
    # (target, messages): the sent history as core.providers.portable.for_target converted it for
    # ``target`` and these tools, when the strategy already did (a native strategy reading a
    # switched chat's history); a request to that target carries these messages.
    converted: tuple[str, list[dict[str, Any]]] | None = None


class Strategy(Protocol):
    """One way for the model to reach deferred tools."""

    name: ClassVar[StrategyName]

    @property
    def loaded(self) -> list[str]:
        """Deferred tools surfaced so far in this chat (searched, discovered, native-loaded), for the UI."""
        ...

    def begin_turn(self) -> None:
        """A new turn starts (active-tools empties its discovery pool)."""
        ...

    def surface(self, messages: list[dict[str, Any]]) -> Surface:
        """What the next request carries, given the history that will be sent with it."""
        ...

    def discover(self, names: list[str]) -> list[str]:
        """A search found ``names``; returns the ones that joined the tools array (active-tools)."""
        ...

    @property
    def turn_loaded(self) -> list[str]:
        """Deferred tools a search loaded in the turn under way (the model was told to call them)."""
        ...

    def carry_over(self, names: list[str]) -> None:
        """This strategy takes over a turn another one began (a fallback mid-turn): ``names``,
        loaded earlier in the turn, stay callable in its requests for the rest of the turn."""
        ...


SystemBuilder = Callable[[str], str]
"""Builds the chat's system prompt around a strategy's note (its line in Region A)."""


class BaseStrategy:
    """The state every strategy shares: the plan's defined definitions, its deferred names, and
    the tools loaded so far."""

    name: ClassVar[StrategyName]

    def __init__(self, plan: RosterPlan, specs: dict[str, ToolSpec], system: SystemBuilder, loaded: Iterable[str] = ()):
        self.plan = plan
        self.specs = specs
        self._defined = [specs[n].definition() for n in plan.defined_tool_names if n in specs]
        self._deferred = [n for n in plan.deferred_tool_names if n in specs]
        self._system = system
        self._loaded: list[str] = []
        self._turn_loaded: list[str] = []  # loaded by a search since the turn began
        self._mark_loaded(loaded)

    # -- the protocol's shared half ---------------------------------------------------------------
    @property
    def system(self) -> str:
        """The system prompt around the strategy's note, built for each request: the note is the
        chat's constant, but the chat's own prompt may be edited (:mod:`core.chat.prompting`)."""
        return self._system(self.note())

    @property
    def loaded(self) -> list[str]:
        return list(self._loaded)

    @property
    def turn_loaded(self) -> list[str]:
        return list(self._turn_loaded)

    def begin_turn(self) -> None:
        self._turn_loaded = []

    def discover(self, names: list[str]) -> list[str]:
        self._mark_loaded(names)
        self._note_turn(names)
        return []

    def carry_over(self, names: list[str]) -> None:
        self.discover(names)

    def note(self) -> str:
        """The strategy's line in Region A (constant for the chat); none by default."""
        return ""

    def surface(self, messages: list[dict[str, Any]]) -> Surface:
        """What the next request carries; each strategy says."""
        raise NotImplementedError

    # -- helpers -------------------------------------------------------------------------------
    @functools.cached_property
    def _deferred_by_wire(self) -> dict[str, str]:
        """The deferred tools under their wire forms, built on first use, once for the chat."""
        return by_wire_name(set(self._deferred))

    def _note_turn(self, names: Iterable[str]) -> None:
        for n in names:
            if n in self.specs and n not in self._turn_loaded:
                self._turn_loaded.append(n)

    def _mark_loaded(self, names: Iterable[str]) -> None:
        for n in names:
            if n in self.specs and n not in self._loaded:
                self._loaded.append(n)

    @staticmethod
    def _prefix_end(tools: list[dict[str, Any]]) -> int | None:
        return len(tools) - 1 if tools else None
