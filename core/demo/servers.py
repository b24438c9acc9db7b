"""Build a demo server: tool definitions from the production roster, behaviour from here.

The roster's ``servers`` section is the one source of truth for what each demo server
lists (name, description, input schema, annotations). This module binds each listed tool to
its implementation and refuses to build a server whose tools and implementations disagree.
The implementations' signatures mirror the schemas, so the SDK validates arguments the way
the schema says; ``tests/demo/test_demo_servers.py`` checks both agreements.

A chat runs them in its own process (:func:`in_process`), spoken to over the SDK's in-memory
transport: the same MCP messages as over stdio, without a Python process per server to start
(each spent most of a second importing the SDK). ``python -m core.demo SERVER`` runs one as a
process on stdio, as :func:`core.demo.demo_mcp_config` starts them.
"""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from functools import cache, partial
from importlib import resources
from pathlib import Path
from typing import Any

ROSTER = "production"
_OPENING = threading.Lock()  # builds in this process open and seed the demo database in turn


@cache
def roster_servers() -> dict[str, list[dict[str, Any]]]:
    """``{server: [tool, ...]}`` from the production roster, tools exactly as written there."""
    text = (resources.files("core.roster") / "rosters" / f"{ROSTER}.json").read_text(encoding="utf-8")
    return {s["name"]: s["tools"] for s in json.loads(text)["servers"]}


def implementations(server: str, conn: Any, *, call_seconds: float) -> dict[str, Any]:
    """``{tool name: function}`` for one demo server over an open demo database."""
    from core.demo import bland, gmail
    from core.demo.db import seed_once

    if server in ("bland_read", "bland_call"):
        seed_once(conn, "bland", bland.seed, reset=bland.reset)
        return bland.tool_functions(bland.Calls(conn, call_seconds), server)
    if server.startswith("gmail_"):
        account = server.removeprefix("gmail_")
        box = gmail.Mailbox(conn, account)
        seed_once(conn, f"gmail:{account}", gmail.seed(account), reset=gmail.reset(account))
        return gmail.tool_functions(box)
    raise KeyError(f"no demo server {server!r}")


def _wrap(fn: Any) -> Any:
    """Return values become text (pretty JSON) plus structured content; known failures a tool error."""
    import functools

    from mcp.server.mcpserver.exceptions import ToolError
    from mcp_types import CallToolResult, TextContent

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            value = fn(*args, **kwargs)
        except (LookupError, ValueError) as e:
            raise ToolError(str(e).strip("'\"")) from e
        text = json.dumps(value, ensure_ascii=False, indent=1)
        return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=value)

    return run


def build_server(server: str, db_path: str | Path, *, call_seconds: float = 3.0) -> Any:
    """The ``MCPServer`` for one demo server, listing exactly the roster's tools."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.tools.base import Tool
    from mcp_types import ToolAnnotations

    from core.demo.db import connect

    specs = roster_servers().get(server)
    if specs is None:
        raise KeyError(f"no demo server {server!r}; the roster has {', '.join(sorted(roster_servers()))}")
    with _OPENING:  # one at a time: on a new file, SQLite refuses a second switch to WAL at once
        conn = connect(db_path)
        impls = implementations(server, conn, call_seconds=call_seconds)
    listed = [t["name"] for t in specs]
    if sorted(listed) != sorted(impls):
        raise RuntimeError(f"{server}: roster lists {sorted(listed)} but the demo implements {sorted(impls)}")
    tools = []
    for spec in specs:
        tool = Tool.from_function(
            _wrap(impls[spec["name"]]),
            name=spec["name"],
            description=spec["description"],
            annotations=ToolAnnotations.model_validate(spec.get("annotations") or {}),
            structured_output=False,
        )
        tools.append(tool.model_copy(update={"parameters": spec.get("inputSchema", spec.get("input_schema"))}))

    @asynccontextmanager
    async def closing(_: Any) -> AsyncIterator[None]:
        try:
            yield
        finally:
            conn.close()  # the server has stopped (in a process or in this one): its database too

    return MCPServer(server, tools=tools, log_level="WARNING", lifespan=closing)


def in_process(
    servers: Iterable[str], db_path: str | Path | None = None, *, call_seconds: float | None = None
) -> dict[str, Callable[[], Any]]:
    """``{server: factory}`` for :class:`core.mcp.client.McpManager` (``in_process``): each
    factory builds that demo server on the demo database, as ``python -m core.demo`` would."""
    from core.demo import DEFAULT_CALL_SECONDS, demo_db_path

    db = Path(db_path) if db_path is not None else demo_db_path()
    seconds = DEFAULT_CALL_SECONDS if call_seconds is None else call_seconds
    return {name: partial(build_server, name, db, call_seconds=seconds) for name in servers}
