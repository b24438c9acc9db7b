"""A stdio MCP server that reports what it was started with: one tool, ``environment``,
answers ``{"env": {...its whole environment...}, "argv": [...its arguments...]}`` as JSON
text. A test starts it through deferchat and sees exactly what reached the process.

Run: ``python -m tests.mcp_servers.env_report [ARGS...]`` (stdio).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any


def build() -> Any:
    import mcp_types as types
    from mcp.server.lowlevel import Server

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name="environment",
                    description="What this process was started with: environment and arguments.",
                    input_schema={"type": "object", "properties": {}},
                    annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
                )
            ]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        report = json.dumps({"env": dict(os.environ), "argv": sys.argv[1:]})
        return types.CallToolResult(content=[types.TextContent(type="text", text=report)])

    return Server("env-report", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    from mcp.server.stdio import stdio_server

    server = build()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    import anyio

    anyio.run(main)
