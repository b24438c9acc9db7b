"""MCP wire objects to deferchat's vocabulary: a listed tool to a ToolSpec, a result to a ToolResult.

Both take the wire form as plain JSON (what ``model_dump(by_alias=True, mode="json")`` of the
SDK's ``Tool`` and ``CallToolResult`` gives), so this module needs no MCP SDK and its rules are
tested on literal JSON. Text from a server (descriptions, schemas, results) is kept verbatim:
it is untrusted and the prompt assembly wraps it in its envelope, nothing here edits it.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Mapping
from typing import Any

from core.display import is_control, safe
from core.limits import MAX_JSON_DEPTH, is_too_deep
from core.roster.models import RejectedTool
from core.tools import Origin, SideEffect, ToolResult, ToolSpec, classify_annotations, mcp_tool_name

# The MCP tool-name rule (SEP-986, spec 2025-11-25): 1-128 of A-Z a-z 0-9 _ - .
TOOL_NAME_RE = re.compile(r"[A-Za-z0-9._-]{1,128}")  # whole names only: fullmatch
MAX_TOOL_NAME = 128
SHOWN_NAME_CHARS = 48  # a rejected over-long name is shown clipped to this many characters


class SkippedTool(ValueError):
    """A listed tool deferchat cannot offer (its name or schema is unusable)."""


def visible(text: str) -> str:
    """``text`` with control and format characters (escapes, bidi overrides) as visible escapes:
    :func:`core.display.safe`, the one sanitiser, on one line."""
    return safe(text)


def shown_name(text: str) -> str:
    """``text`` safe to show (:func:`visible`) and clipped to :data:`SHOWN_NAME_CHARS`."""
    shown = visible(text)
    if len(shown) > SHOWN_NAME_CHARS:
        shown = shown[:SHOWN_NAME_CHARS] + f"\u2026({len(text)} chars)"
    return shown


def listed_tool_problem(tool: Any) -> str | None:
    """Why one ``tools/list`` entry (raw wire JSON) cannot be offered, or None if it can.

    Checked tool by tool, so one bad entry never costs a server its good ones: the name
    (MCP's SEP-986 rule; control characters and whitespace named as such), the
    ``inputSchema`` (a JSON object whose ``type`` is ``"object"``, as MCP requires) and how deep
    its schemas nest (:data:`core.limits.MAX_JSON_DEPTH`).
    """
    if not isinstance(tool, Mapping):
        return f"the listing holds a {type(tool).__name__}, not a tool object"
    name = tool.get("name")
    if not isinstance(name, str) or not name:
        return "it has no name"
    if any(is_control(ch) for ch in name):  # exactly what core.display.safe would show escaped
        return "its name contains control characters (terminal escapes, bidi overrides)"
    if any(ch.isspace() for ch in name):
        return "its name contains whitespace"
    if len(name) > MAX_TOOL_NAME:
        return f"its name is {len(name)} characters long, over MCP's limit of {MAX_TOOL_NAME}"
    if not TOOL_NAME_RE.fullmatch(name):
        return "its name has characters other than letters, digits, '_', '-' and '.' (the MCP tool-name rule)"
    if "inputSchema" not in tool:
        return "it has no inputSchema"
    schema = tool["inputSchema"]
    if not isinstance(schema, Mapping):
        kind = "null" if schema is None else type(schema).__name__
        return f"its inputSchema is a {kind}, not a JSON Schema object"
    if schema.get("type") != "object":
        return f"its inputSchema has type {schema.get('type')!r}, not 'object' (MCP requires an object schema)"
    for key in ("inputSchema", "outputSchema"):
        if key in tool and is_too_deep(tool[key]):
            return f"its {key} nests deeper than {MAX_JSON_DEPTH} levels, more than deferchat reads"
    return None


def rejected_tool(server: str, tool: Any, reason: str, *, name: str | None = None) -> RejectedTool:
    """A listed tool that is not offered, named display-safely ``mcp.<server>.<name>``."""
    raw = tool.get("name") if isinstance(tool, Mapping) else None
    if name is None:
        name = mcp_tool_name(server, shown_name(raw) if isinstance(raw, str) and raw else "(no name)")
    side_effect = SideEffect.NETWORK_WRITE  # what MCP's defaults mean for a tool without annotations
    annotations = tool.get("annotations") if isinstance(tool, Mapping) else None
    if isinstance(annotations, Mapping):
        with contextlib.suppress(TypeError, ValueError):
            side_effect, _ = classify_annotations(dict(annotations))
    return RejectedTool(name=name, server=server, reason=reason, origin=Origin.DISCOVERED, side_effect=side_effect)


def sort_listing(server: str, listing: Iterable[tuple[Any, str | None]]) -> tuple[list[ToolSpec], list[RejectedTool]]:
    """A server's whole listing, in its order, as offered tools and rejected ones.

    Each entry is ``(tool wire JSON, problem found while reading it or None)``. Every entry
    ends up in exactly one of the two lists. The first entry of a name owns it; a later one
    with the same name is rejected as a duplicate, named ``mcp.<server>.<name>#2`` (and so on)
    so that every row of a plan stays distinct.
    """
    specs: list[ToolSpec] = []
    rejected: list[RejectedTool] = []
    seen: set[str] = set()  # remote names already listed (offered or not)
    used: set[str] = set()  # names given to rows
    for tool, problem in listing:
        raw = tool.get("name") if isinstance(tool, Mapping) else None
        if isinstance(raw, str) and raw in seen:  # whatever else is wrong with it, its name is taken
            problem = f"the server lists {shown_name(raw)!r} more than once; the first one is offered"
        elif problem is None:
            problem = listed_tool_problem(tool)
        spec: ToolSpec | None = None
        if problem is None:
            try:
                spec = tool_spec(server, tool)
            except SkippedTool as e:
                problem = str(e)
        if isinstance(raw, str):
            seen.add(raw)
        if spec is not None:
            specs.append(spec)
            used.add(spec.name)
            continue
        reject = rejected_tool(server, tool, problem or "it cannot be offered")
        name, n = reject.name, 1
        while name in used:
            n += 1
            name = f"{reject.name}#{n}"
        used.add(name)
        rejected.append(reject.model_copy(update={"name": name}))
    return sorted(specs, key=lambda s: s.name), sorted(rejected, key=lambda r: r.name)


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
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise SkippedTool(f"its {where or 'listing'} is unusable: {first['msg']}") from None
    except ValueError as e:
        raise SkippedTool(str(e)) from None


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
        for src, dst in (
            ("name", "name"),
            ("title", "title"),
            ("mimeType", "mime_type"),
            ("description", "description"),
        ):
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
    return ToolResult(
        content=blocks, structured=structured, is_error=bool(result.get("isError", result.get("is_error")))
    )


def error_result(code: str, message: str) -> ToolResult:
    """A failure that happened on deferchat's side of the wire (the server never answered)."""
    return ToolResult.failure(code, message)
