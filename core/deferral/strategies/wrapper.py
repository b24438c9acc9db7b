"""``wrapper`` (ADR-0123): definitions, the index region in the system prompt, and ``tool.call``.

The tools array and the prefix never change within a chat.
"""

from __future__ import annotations

from typing import Any, ClassVar

from core.deferral.names import WRAPPER, StrategyName
from core.deferral.strategies.base import BaseStrategy, Surface


class WrapperStrategy(BaseStrategy):
    name: ClassVar[StrategyName] = WRAPPER

    def surface(self, messages: list[dict[str, Any]]) -> Surface:
        system = self.system
        if self.plan.index_text:
            system = f"{system}\n\n{self.plan.index_text.rstrip()}"
        tools = list(self._defined)
        return Surface(system, tools, self._prefix_end(tools))
