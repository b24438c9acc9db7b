"""MCP wire objects to deferchat's vocabulary: a listed tool to a ToolSpec, a result to a ToolResult.

Both take the wire form as plain JSON (what ``model_dump(by_alias=True, mode="json")`` of the
SDK's ``Tool`` and ``CallToolResult`` gives), so this module needs no MCP SDK and its rules are
tested on literal JSON. Text from a server (descriptions, schemas, results) is kept verbatim:
it is untrusted and the prompt assembly wraps it in its envelope, nothing here edits it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.tools import Origin, ToolResult, ToolSpec


class SkippedTool(ValueError):
    """A listed tool deferchat cannot offer (its name or schema is unusable)."""


def tool_spec(server: str, tool: Mapping[str, Any]) -> ToolSpec:
    """One listed tool as a discovered ToolSpec named ``mcp.<server>.<tool>``.

    The same rule a roster file's server tools follow (``core.roster.loader``): the side-effect
    class comes from the annotations (none means it changes the world), ``destructiveHint``
    and ``idempotentHint`` are kept as hints. Raises :class:`SkippedTool` when the tool cannot
    be offered (no name, a name with whitespace, a schema that is not an object).
    """
    from pydantic import ValidationError

    from core.roster.loader import server_tool_spec

    remote = tool.get("name")
    if not isinstance(remote, str) or not remote:
        raise SkippedTool(f"a tool of {server!r} has no name")
    wire = {k: tool[k] for k in ("name", "description", "inputSchema", "annotations") if tool.get(k) is not None}
    try:
        return server_tool_spec(server, wire, Origin.DISCOVERED)
    except (ValidationError, ValueError) as e:
        first = e.errors()[0]["msg"] if isinstance(e, ValidationError) else str(e)
        raise SkippedTool(f"{remote!r}: {first}") from None


def base64_size(data: str) -> int:
    """Bytes a base64 string decodes to, without decoding it."""
    body = "".join(data.split()).rstrip("=")
    return len(body) * 3 // 4


def content_block(block: Mapping[str, Any]) -> dict[str, Any]:
    """One MCP content block as a ToolResult block. Binary data is never kept, only its size."""
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "text": str(block.get("text", ""))}
    if kind in ("image", "audio"):
        return {"type": kind, "mime_type": block.get("mimeType", "?"), "bytes": base64_size(str(block.get("data", "")))}
    if kind == "resource_link":
        out: dict[str, Any] = {"type": "resource_link", "uri": block.get("uri")}
        for src, dst in (("name", "name"), ("title", "title"), ("mimeType", "mime_type"), ("description", "description")):
            if block.get(src) is not None:
                out[dst] = block[src]
        return out
    if kind == "resource":
        res = block.get("resource") or {}
        out = {"type": "resource", "uri": res.get("uri")}
        if res.get("mimeType") is not None:
            out["mime_type"] = res["mimeType"]
        if isinstance(res.get("text"), str):
            out["text"] = res["text"]
        elif isinstance(res.get("blob"), str):
            out["bytes"] = base64_size(res["blob"])
        return out
    return {"type": str(kind or "unknown")}


def tool_result(result: Mapping[str, Any]) -> ToolResult:
    """A ``CallToolResult`` (wire JSON) as a ToolResult; ``isError`` becomes ``is_error``."""
    blocks = [content_block(b) for b in result.get("content") or [] if isinstance(b, Mapping)]
    structured = result.get("structuredContent", result.get("structured_content"))
    return ToolResult(content=blocks, structured=structured, is_error=bool(result.get("isError", result.get("is_error"))))


def error_result(code: str, message: str) -> ToolResult:
    """A failure that happened on deferchat's side of the wire (the server never answered)."""
    return ToolResult.failure(code, message)
