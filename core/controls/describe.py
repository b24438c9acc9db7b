"""``tool.describe {name}``: a deferred tool's full definition before calling it."""

from __future__ import annotations

from typing import Any

from core.context import envelope
from core.controls.context import ControlContext
from core.pipeline import codes
from core.tools import Origin, ToolResult


def run_tool_describe(arguments: dict[str, Any], ctx: ControlContext) -> ToolResult:
    from core.pipeline.pipeline import schema_for_model

    target = ctx.specs.get(str(arguments.get("name", "")))
    if target is None or target.origin is Origin.CONTROL:
        return ToolResult.of_text(
            f"{codes.NOT_OFFERED}: {arguments.get('name')} is not offered in this chat", is_error=True
        )
    description = envelope.fence(target.description, target.envelope_source)
    text = f"{target.name} ({target.side_effect.value})\n{description}\nInput schema:\n"
    return ToolResult.of_text(text + schema_for_model(target))
