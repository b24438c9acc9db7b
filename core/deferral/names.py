"""The names of the deferral strategies, declared once.

Everything that names a strategy (the planner's input check, ``auto`` dispatch, the CLI's
``--strategy`` choices, the strategy classes) imports these; nothing spells the list again.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

StrategyName = Literal["wrapper", "anthropic", "openai", "active-tools"]
"""A concrete strategy: how the model reaches a deferred tool."""

AUTO: Final = "auto"

STRATEGY_NAMES: Final[tuple[StrategyName, ...]] = get_args(StrategyName)
"""The concrete strategies, in the order the docs and the CLI list them."""

STRATEGY_CHOICES: Final[tuple[str, ...]] = (*STRATEGY_NAMES, AUTO)
"""What a user may ask for: a concrete strategy, or ``auto`` (dispatch on provider and model)."""

WRAPPER: Final[StrategyName] = "wrapper"
ANTHROPIC: Final[StrategyName] = "anthropic"
OPENAI: Final[StrategyName] = "openai"
ACTIVE_TOOLS: Final[StrategyName] = "active-tools"
