"""A stored message's content, made safe to read back.

What the store holds was written by this version, an older one, or by hand, and a turn is
resumed from it: a chat must never be stuck on what one message holds. :func:`well_formed`
turns any stored content into a list of content blocks (see :mod:`core.providers.base`) that
the turn loop, the strategies and every adapter can read: each block a dict with a string
``type``, and each known type with its fields of the right type. Nothing a provider needs
echoed (``provider_item``, Anthropic's ``thinking``) is dropped; a block that cannot be read
is.
"""

from __future__ import annotations

import json
from typing import Any

_IDS = {
    "tool_use": "id",
    "server_tool_use": "id",
    "tool_result": "tool_use_id",
    "tool_search_tool_result": "tool_use_id",
}


def well_formed(content: Any) -> list[dict[str, Any]]:
    """``content`` as a list of readable blocks (a bare string is one text block)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return []
    out: list[dict[str, Any]] = []
    for block in content:
        fixed = _block(block)
        if fixed is not None:
            out.append(fixed)
    return out


def _block(block: Any) -> dict[str, Any] | None:
    if not isinstance(block, dict) or not isinstance(block.get("type"), str):
        return None
    kind = block["type"]
    if kind == "text":
        return block if isinstance(block.get("text"), str) else None
    key = _IDS.get(kind)
    if key is None:
        return block
    fixed = dict(block)
    if not isinstance(fixed.get(key), str):
        fixed[key] = ""
    if kind in ("tool_use", "server_tool_use") and not isinstance(fixed.get("name"), str):
        fixed["name"] = ""
    if kind == "tool_result":
        result = fixed.get("content", "")
        if not isinstance(result, (str, list)):
            fixed["content"] = json.dumps(result, ensure_ascii=False)
        elif isinstance(result, list):
            fixed["content"] = [
                b if _readable(b) else {"type": "text", "text": json.dumps(b, ensure_ascii=False)} for b in result
            ]
    return fixed


def _readable(block: Any) -> bool:
    return (
        isinstance(block, dict)
        and isinstance(block.get("type"), str)
        and (block["type"] != "text" or isinstance(block.get("text"), str))
    )
