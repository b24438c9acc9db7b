"""How deferred tools surface in each request: one class per strategy (seed 004; ADR-0123 for
the wrapper), all behind the small :class:`~core.deferral.strategies.base.Strategy` protocol.

``make_strategy`` builds one whole from the chat's pinned plan; the registry below is the only
place a strategy name meets its class.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from core.deferral.names import StrategyName
from core.deferral.strategies.active_tools import ActiveToolsStrategy, DiscoveryPool
from core.deferral.strategies.base import BaseStrategy, Strategy, Surface, SystemBuilder
from core.deferral.strategies.history import referenced_deferred_tool_names
from core.deferral.strategies.native import (
    ANTHROPIC_SEARCH_TOOLS,
    OPENAI_CLIENT_SEARCH_TOOL,
    OPENAI_SEARCH_TOOL,
    OPENAI_SEARCH_TOOLS,
    AnthropicNativeStrategy,
    AnthropicSearch,
    OpenAINativeStrategy,
    OpenAISearch,
)
from core.deferral.strategies.wrapper import WrapperStrategy
from core.roster.models import RosterPlan
from core.tools import ToolSpec

STRATEGY_CLASSES: dict[StrategyName, type[BaseStrategy]] = {
    cls.name: cls for cls in (WrapperStrategy, AnthropicNativeStrategy, OpenAINativeStrategy, ActiveToolsStrategy)
}


def make_strategy(
    name: str,
    plan: RosterPlan,
    system: str | SystemBuilder,
    specs: dict[str, ToolSpec],
    *,
    anthropic_search: str = "bm25",
    openai_search: str = "hosted",
    loaded: Iterable[str] = (),
    foreign_history: bool = False,
) -> BaseStrategy:
    """The strategy ``name`` for a pinned plan, built whole. ``system`` is the system prompt, or a
    function that builds it around the strategy's note; ``loaded`` names the tools surfaced in
    earlier sessions of the chat; ``foreign_history``: the chat ran on another provider before
    (a switch), so a native strategy declares in full the deferred tools its history calls that
    no search of its own loaded."""
    cls = STRATEGY_CLASSES.get(name)  # type: ignore[call-overload]
    if cls is None:
        raise ValueError(f"unknown strategy {name!r}")
    text = system if isinstance(system, str) else ""
    build: SystemBuilder = system if callable(system) else (lambda note: text)
    flavours: dict[type[BaseStrategy], dict[str, Any]] = {
        AnthropicNativeStrategy: {"search": anthropic_search, "foreign_history": foreign_history},
        OpenAINativeStrategy: {"search": openai_search, "foreign_history": foreign_history},
    }
    return cls(plan, specs, build, loaded, **flavours.get(cls, {}))


__all__ = [
    "ANTHROPIC_SEARCH_TOOLS",
    "OPENAI_CLIENT_SEARCH_TOOL",
    "OPENAI_SEARCH_TOOL",
    "OPENAI_SEARCH_TOOLS",
    "STRATEGY_CLASSES",
    "ActiveToolsStrategy",
    "AnthropicNativeStrategy",
    "AnthropicSearch",
    "BaseStrategy",
    "DiscoveryPool",
    "OpenAINativeStrategy",
    "OpenAISearch",
    "Strategy",
    "Surface",
    "SystemBuilder",
    "WrapperStrategy",
    "make_strategy",
    "referenced_deferred_tool_names",
]
