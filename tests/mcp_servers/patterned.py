"""A stdio MCP server built with the SDK (``MCPServer``) whose one tool declares a ``pattern``
its author chose: ``PATTERNED_REGEX`` (default ``^(a|a)+$``, which backtracks on ``aaa...!``).

The SDK turns the ``Field(pattern=...)`` into the tool's ``inputSchema``, as any server written
with it would; pydantic's own (linear-time) engine checks it on the server's side.

Run: ``python -m tests.mcp_servers.patterned`` (stdio).
"""

from __future__ import annotations

import os
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import Field

PATTERN = os.environ.get("PATTERNED_REGEX", r"^(a|a)+$")

server = MCPServer("patterned", log_level="WARNING")


@server.tool(description="Whether a string of a's matches the server's pattern.")
def matches(s: Annotated[str, Field(pattern=PATTERN)]) -> str:
    return f"{s} matches"


if __name__ == "__main__":
    server.run()
