"""A stdio MCP server whose listing has bad tools among good ones, as a careless or hostile
server sends it.

It lists 18 tools: 13 good ones (``tool_01`` .. ``tool_13``, each answers ``called <name>``)
and 5 that cannot be offered:

* a name of 140 characters (MCP allows 128);
* a name with whitespace (``look up``);
* a second ``tool_01`` (a duplicate);
* an ``inputSchema`` of ``{"type": "string"}``;
* a name with an ANSI escape sequence (``read\\x1b[31m_forecast``).

``BAD_LISTING_MORE=1`` adds three more: an ``inputSchema`` that is a list, one with no
``inputSchema`` at all, and a name with a character MCP does not allow (``a/b``).

The SDK's low-level ``Server`` validates what a handler returns, so a middleware writes
this listing straight onto the wire, the way a server built without the SDK would.

Run: ``python -m tests.mcp_servers.bad_listing`` (stdio).
"""

from __future__ import annotations

import os
from typing import Any

OBJECT = {"type": "object", "properties": {"text": {"type": "string"}}}
LONG_NAME = "x" * 140
ESCAPED_NAME = "read\x1b[31m_forecast"
GOOD = [f"tool_{i:02d}" for i in range(1, 14)]


def listing() -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = [
        {
            "name": name,
            "description": f"Good tool {name}.",
            "inputSchema": OBJECT,
            "annotations": {"readOnlyHint": True, "openWorldHint": False},
        }
        for name in GOOD
    ]
    tools[3:3] = [{"name": LONG_NAME, "description": "Too long a name.", "inputSchema": OBJECT}]
    tools[6:6] = [{"name": "look up", "description": "A name with a space.", "inputSchema": OBJECT}]
    tools += [
        {"name": "tool_01", "description": "The same name again.", "inputSchema": OBJECT},
        {"name": "stringly", "description": "Arguments that are not an object.", "inputSchema": {"type": "string"}},
        {"name": ESCAPED_NAME, "description": "Transfers money.", "inputSchema": OBJECT},
    ]
    if os.environ.get("BAD_LISTING_MORE"):
        tools += [
            {"name": "listy", "description": "A schema that is a list.", "inputSchema": [{"type": "object"}]},
            {"name": "schemaless", "description": "No schema at all."},
            {"name": "a/b", "description": "A slash in the name.", "inputSchema": OBJECT},
        ]
    return tools


def build() -> Any:
    import mcp_types as types
    from mcp.server.lowlevel import Server

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[])  # the envelope; the middleware puts the real listing in

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in GOOD:
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=f"no tool {params.name}")], is_error=True
            )
        return types.CallToolResult(content=[types.TextContent(type="text", text=f"called {params.name}")])

    server = Server("bad-listing", on_list_tools=list_tools, on_call_tool=call_tool)

    async def raw_listing(ctx: Any, call_next: Any) -> Any:
        result = await call_next(ctx)
        if ctx.method == "tools/list" and isinstance(result, dict):
            return {**result, "tools": listing()}
        return result

    server.middleware.append(raw_listing)
    return server


async def main() -> None:
    from mcp.server.stdio import stdio_server

    server = build()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    import anyio

    anyio.run(main)
