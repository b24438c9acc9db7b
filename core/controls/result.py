"""``tool.result {call_id, offset?}``: pages of a result that was cut for the model (the store
keeps every result whole).

A page is the model's text as much as the result it comes from: it travels in the envelope of
the tool that made it (:func:`core.tools.result_envelope_source`: an MCP server's, a device's,
``web.<host>`` for a fetched page), so a page cut from the middle of an untrusted result is
fenced all the same and a forged end marker in it stays escaped. The page names that source
(``ToolResult.envelope_source``) and the pipeline fences it, after any cut of its own, so the
envelope always closes. A page and its note fit within what the pipeline hands the model
(``MAX_MODEL_RESULT_CHARS``), so by default a page is never cut again on its way.
"""

from __future__ import annotations

import json
from typing import Any

from core.controls.context import ControlContext
from core.tools import ToolResult, result_envelope_source

PAGE_CHARS = 15_000  # the pipeline passes 16,000 characters: a page and its note fit

UNKNOWN_SOURCE = "unknown"  # a stored result whose tool is not pinned here: untrusted, to be safe


def run_tool_result(arguments: dict[str, Any], ctx: ControlContext) -> ToolResult:
    inv = ctx.store.invocation(ctx.chat_id, str(arguments.get("call_id", "")))
    if inv is None or not inv.result:
        return ToolResult.of_text(f"no stored result for call {arguments.get('call_id')}", is_error=True)
    stored = ToolResult.model_validate(json.loads(inv.result))
    full = stored.text()
    offset = max(0, int(arguments.get("offset") or 0))
    chunk = full[offset : offset + PAGE_CHARS]
    more = f"\n[{len(full) - offset - len(chunk):,} characters remain]" if offset + len(chunk) < len(full) else ""
    spec = ctx.specs.get(inv.name)
    source = result_envelope_source(spec, stored) if spec is not None else stored.envelope_source or UNKNOWN_SOURCE
    return ToolResult(content=[{"type": "text", "text": chunk + more}], envelope_source=source)
