"""A tiny stdio MCP server whose one write can be caught in the middle.

``slow_write(line)`` appends ``line`` to the file named by ``SLOW_WRITE_FILE`` (flushed and
fsynced, so it is on disk the moment the call is in flight), then waits until the file named
by ``SLOW_WRITE_RELEASE`` exists or ``SLOW_WRITE_SECONDS`` (default 30) have passed. A test
can therefore kill -9 deferchat (or this server) while the write is known to have happened
and the call is known not to have answered.

For the client's own tests it also has:

* ``register_tool(name)``: adds a tool at run time and sends ``notifications/tools/list_changed``
  (to a 2026-era ``subscriptions/listen`` stream and, on earlier protocol versions, directly);
* ``request_headers()``: the HTTP headers of the request (run with ``--http PORT``).

Run: ``python -m tests.mcp_servers.slow_write`` (stdio) or ``... --http PORT`` (streamable HTTP
on 127.0.0.1).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ToolAnnotations

server = MCPServer("slow-write", log_level="WARNING")


@server.tool(
    description="Append one line to the test file, then wait until released (or the time limit passes).",
    annotations=ToolAnnotations(
        read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
    ),
)
async def slow_write(line: str) -> str:
    import anyio

    target = os.environ.get("SLOW_WRITE_FILE")
    if not target:
        raise ValueError("SLOW_WRITE_FILE is not set")
    with open(target, "a", encoding="utf-8") as f:
        f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno())
    release = os.environ.get("SLOW_WRITE_RELEASE")
    deadline = time.monotonic() + float(os.environ.get("SLOW_WRITE_SECONDS", "30"))
    while time.monotonic() < deadline:
        if release and Path(release).exists():
            return f"wrote {line!r}; released"
        await anyio.sleep(0.05)
    return f"wrote {line!r}; not released within the time limit"


@server.tool(
    description="Add a tool named NAME to this server at run time (the tool list changes).",
    annotations=ToolAnnotations(read_only_hint=False, open_world_hint=False),
)
async def register_tool(name: str, ctx: Context) -> str:
    def added() -> str:
        return f"{name} was called"

    server.add_tool(added, name=name, description=f"A tool added at run time: {name}.")
    if ctx.protocol_version == "2026-07-28":
        await ctx.notify_tools_changed()
    else:
        await ctx.session.send_tool_list_changed()
    return f"added {name}"


@server.tool(
    description="The HTTP headers of this request (empty on stdio).",
    annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
)
def request_headers(ctx: Context) -> dict[str, str]:
    return {k.lower(): v for k, v in (ctx.headers or {}).items()}


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
