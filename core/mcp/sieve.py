"""The listing sieve: each ``tools/list`` answer read tool by tool before the SDK sees it.

:class:`ListingSieve` sits on the transport (:mod:`core.mcp.transport`): requests for a listing
are noted on the way out, and their answers are checked tool by tool on the way in, so one
unusable tool never costs a server its good ones.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from core.limits import MESSAGE_DEPTH, holds_marker
from core.mcp.convert import listed_tool_problem

LISTING_METHOD = "tools/list"
FALLBACK_PROTOCOL = "2025-11-25"  # what the SDK validates against before a version is agreed


@dataclasses.dataclass
class Page:
    cursor: str | None
    entries: list[tuple[Any, str | None]]  # (tool wire JSON, why it cannot be offered or None)


class ListingSieve:
    """Reads each ``tools/list`` answer tool by tool before the SDK sees it.

    The SDK validates a listing as a whole, so one tool with an unusable ``inputSchema`` would
    fail the server and lose its good tools with it. Here each tool is checked on its own
    (:func:`core.mcp.convert.listed_tool_problem`, then the SDK's own schema for a listing of
    that one tool); the SDK is handed only the tools that pass, and every tool, with its
    problem if any, is kept for :meth:`take`. A malformed envelope (no ``tools`` array, a bad
    cursor) is left alone: the SDK fails that page, as it should.

    A tool whose schemas nest deeper than deferchat reads is one of the unusable ones (it came
    through the wire with its deep parts as markers, :mod:`core.mcp.wire`); the SDK is handed
    each tool without its ``outputSchema`` (:func:`for_sdk`); and an answer to anything else
    that lost a part to its depth becomes an error for its request.
    """

    def __init__(self) -> None:
        self.version: Callable[[], str | None] = lambda: None
        self._pending: dict[Any, str | None] = {}  # request id -> cursor asked for
        self._pages: list[Page] = []

    def sent(self, item: Any) -> None:
        from mcp_types import JSONRPCRequest

        message = getattr(item, "message", None)
        if isinstance(message, JSONRPCRequest) and message.method == LISTING_METHOD:
            cursor = (message.params or {}).get("cursor")
            self._pending[message.id] = cursor if isinstance(cursor, str) else None

    def received(self, item: Any) -> Any:
        from mcp_types import JSONRPCError, JSONRPCResponse

        message = getattr(item, "message", None) if dataclasses.is_dataclass(item) else None
        if isinstance(message, JSONRPCError):
            self._pending.pop(message.id, None)
            return item
        if not isinstance(message, JSONRPCResponse):
            return item
        if message.id not in self._pending:
            if holds_marker(message.result):  # an answer nested deeper than deferchat reads
                from core.mcp.wire import refusal

                return refusal(message.id, f"it nests deeper than {MESSAGE_DEPTH} levels")
            return item
        cursor = self._pending.pop(message.id)
        result = message.result
        tools = result.get("tools")
        envelope = {k: v for k, v in result.items() if k != "tools"}
        version = self.version() or FALLBACK_PROTOCOL
        if not isinstance(tools, list) or listing_problem(version, {**envelope, "tools": []}) is not None:
            return item
        page = Page(cursor, [])
        kept: list[Any] = []
        for tool in tools:
            problem = listed_tool_problem(tool)
            if problem is None:
                sdk = listing_problem(version, {**envelope, "tools": [tool]})
                problem = None if sdk is None else f"its listing breaks the MCP schema ({sdk})"
            page.entries.append((tool, problem))
            if problem is None:
                kept.append(for_sdk(tool))
        self._pages.append(page)
        if kept == tools:
            return item
        sieved = JSONRPCResponse(jsonrpc="2.0", id=message.id, result={**result, "tools": kept})
        return dataclasses.replace(item, message=sieved)

    def take(self, cursor: str | None) -> Page | None:
        """The last page read for ``cursor``; earlier pages are dropped."""
        page = next((p for p in reversed(self._pages) if p.cursor == cursor), None)
        self._pages.clear()
        return page


def for_sdk(tool: Any) -> Any:
    """A listed tool as the SDK is given it: without its ``outputSchema``. The SDK checks each
    result against that schema itself, in the event loop with Python's ``re``, where a pattern
    that backtracks would freeze the whole process; deferchat checks it instead, bounded
    (:func:`core.pipeline.validation.schema_problem`, from :meth:`core.mcp.server.Server.call`)."""
    if isinstance(tool, dict) and "outputSchema" in tool:
        return {k: v for k, v in tool.items() if k != "outputSchema"}
    return tool


def negotiated(client: Any) -> str | None:
    try:
        return str(client.protocol_version)
    except RuntimeError:  # not connected yet (or any more)
        return None


def listing_problem(version: str, result: dict[str, Any]) -> str | None:
    """What the SDK's schema for ``tools/list`` at ``version`` finds wrong in ``result``, if anything."""
    from mcp_types import methods
    from pydantic import ValidationError

    try:
        methods.validate_server_result(LISTING_METHOD, version, result)
    except ValidationError as e:
        first = e.errors()[0]
        loc = [str(p) for p in first["loc"]]
        if loc[:1] == ["tools"]:
            loc = loc[2:]
        return f"{'.'.join(loc) or 'the tool'}: {first['msg']}"
    except (KeyError, ValueError):
        return None  # a version or method the SDK has no schema for: nothing to hold against the tool
    return None
