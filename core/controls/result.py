"""``tool.result {call_id, offset?}``: pages of a result that was cut for the model (the store
keeps every result whole)."""

from __future__ import annotations

import json
from typing import Any

from core.controls.context import ControlContext
from core.tools import ToolResult

PAGE_CHARS = 16_000


def run_tool_result(arguments: dict[str, Any], ctx: ControlContext) -> ToolResult:
    inv = ctx.store.invocation(ctx.chat_id, str(arguments.get("call_id", "")))
    if inv is None or not inv.result:
        return ToolResult.of_text(f"no stored result for call {arguments.get('call_id')}", is_error=True)
    full = ToolResult.model_validate(json.loads(inv.result)).text()
    offset = max(0, int(arguments.get("offset") or 0))
    chunk = full[offset: offset + PAGE_CHARS]
    more = f"\n[{len(full) - offset - len(chunk):,} characters remain]" if offset + len(chunk) < len(full) else ""
    return ToolResult.of_text(chunk + more)
