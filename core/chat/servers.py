"""A chat's live MCP servers: which to start, their status, and the tools as they are now.

The user's and the project's configs, ``--mcp-config``, and the embedded demo servers for any
roster server that no config provides. The demo servers run in this process, spoken to over
the MCP SDK's in-memory transport (``DEFERCHAT_DEMO_SERVERS=process`` starts them as
processes on stdio instead); every other server is started as its config says. A server that
changes its tools is noted; the chat keeps its pinned plan (ADR-0123 decision 19), and each call
is judged by the stricter of the pinned tool and the tool as its server lists it now
(:meth:`ChatServers.listed_now`, asked by the pipeline).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core import events as ev
from core.events import EventSink
from core.roster.inputs import merge_discovered
from core.roster.loader import Roster
from core.roster.models import RejectedTool
from core.tools import Origin, ToolResult, ToolSpec

if TYPE_CHECKING:
    from core.mcp.client import McpManager
    from core.mcp.config import McpConfig
    from core.mcp.elicitation import Elicitor
    from core.mcp.server import McpEvent

DEMO_SERVERS_ENV = "DEFERCHAT_DEMO_SERVERS"  # "process": the demo servers as processes on stdio


def servers_to_start(roster: Roster, config: McpConfig, start_demo: bool) -> tuple[McpConfig, tuple[str, ...]]:
    """The servers a chat on ``roster`` starts: those ``config`` names (the user's, the project's,
    ``--mcp-config``), and, with ``start_demo``, the demo's own for every server the roster
    lists that the config does not (the embedded default). Returns the config and the demo's
    servers in it. ``deferchat servers`` lists the same set (core.cli.servers)."""
    if not start_demo:
        return config, ()
    from core.demo import DEMO_SERVERS, demo_config
    from core.mcp.config import McpConfig

    configured = {s.name for s in config.servers}
    wanted = tuple(s for s in roster.servers() if s in DEMO_SERVERS and s not in configured)
    if not wanted:
        return config, ()
    demo = McpConfig(servers=tuple(s for s in demo_config().servers if s.name in wanted))
    return demo.merged(config), wanted


class ChatServers:
    """The MCP servers one chat runs, and what they report."""

    def __init__(
        self, emit: EventSink, *, elicitor: Elicitor | None = None, tool_settings: dict[str, Any] | None = None
    ):
        self._emit = emit
        self.elicitor = elicitor  # who answers a server's request for input (core.mcp.elicitation)
        self.tool_settings = tool_settings or {}  # [tools]: allow_private_hosts for remote servers' requests
        self.manager: McpManager | None = None
        self.status: dict[str, ev.ServerStatus] = {}
        self.changed: list[str] = []
        self.always_load: tuple[str, ...] = ()  # servers whose entry pins their tools ("alwaysLoad")
        # The demo's own servers this chat started (none the owner configured), and their database:
        # their writes are described from it (core.demo.previews).
        self.demo: frozenset[str] = frozenset()
        self.demo_db: Path | None = None

    def _on_event(self, event: McpEvent) -> None:
        if isinstance(event, ev.ServerStatus):
            self.status[event.server] = event
        elif isinstance(event, ev.RosterChanged):
            self.changed.append(event.server)
            event.message = event.message or (
                f"server {event.server} changed its tools; this chat keeps its pinned plan, and a call "
                "of a changed tool is judged by the stricter of its pinned and its new description"
            )
        self._emit(event)

    async def start(self, roster: Roster, mcp_config: str | None, start_demo: bool) -> None:
        from core.mcp.config import always_load_servers, load_mcp_config

        own = load_mcp_config([mcp_config] if mcp_config else [])
        self.always_load = always_load_servers(own)  # the demo servers pin nothing
        config, wanted = servers_to_start(roster, own, start_demo)
        local: dict[str, Any] = {}
        if wanted:
            from core.demo import demo_db_path

            self.demo, self.demo_db = frozenset(wanted), demo_db_path()  # the demo's previews read its data
            if os.environ.get(DEMO_SERVERS_ENV) != "process":
                from core.demo.servers import in_process

                local = in_process(list(wanted))
        if not config.servers:
            return
        from core.mcp.client import McpManager

        self.manager = McpManager(
            config,
            on_event=self._on_event,
            in_process=local,
            tool_settings=self.tool_settings,
            elicitor=self.elicitor,
        )
        await self.manager.start()

    def live_specs(self, roster: Roster) -> dict[str, ToolSpec]:
        """Tools as they are now: the roster's configured tools, live MCP tools where a server
        answers, the roster's static server tools elsewhere."""
        live_tools = self.manager.tools() if self.manager is not None else []
        return {t.name: t for t in (*roster.configured, *merge_discovered(roster.discovered, live_tools))}

    def discovered(self, roster: Roster) -> tuple[ToolSpec, ...]:
        return tuple(t for t in self.live_specs(roster).values() if t.origin is not Origin.CONFIGURED)

    def rejected(self) -> tuple[RejectedTool, ...]:
        """Tools the live servers listed but cannot offer (bad name or schema), with reasons."""
        return tuple(self.manager.rejected()) if self.manager is not None else ()

    async def listed_now(self, spec: ToolSpec) -> tuple[bool, ToolSpec | None]:
        """How ``spec``'s server lists it now (see :meth:`McpManager.listed_now`)."""
        if self.manager is None:
            return False, None
        return await self.manager.listed_now(spec)

    async def call(self, spec: ToolSpec, arguments: dict[str, object]) -> ToolResult:
        from core.pipeline import codes

        if self.manager is None or spec.server not in {s.name for s in self.manager.servers()}:
            return ToolResult.failure(
                codes.UNAVAILABLE,
                f"{spec.name}: no MCP server {spec.server!r} is running for "
                "this chat (the roster lists it, but no configuration starts it)",
            )
        return await self.manager.call(spec, arguments)  # each server's own call_timeout applies

    async def close(self) -> None:
        if self.manager is not None:
            await self.manager.close()
            self.manager = None
