"""A chat's live MCP servers: which to start, their status, and the tools as they are now.

The user's and the project's configs, ``--mcp-config``, and the embedded demo servers for any
roster server that no config provides. The demo servers run in this process, spoken to over
the MCP SDK's in-memory transport (``DEFERCHAT_DEMO_SERVERS=process`` starts them as
processes on stdio instead); every other server is started as its config says. A server that
changes its tools is noted; the chat keeps its pinned plan (ADR-0123 decision 19), and each call
is judged by the stricter of the pinned tool and the tool as its server lists it now
(:meth:`ChatServers.listed_now`, asked by the pipeline).

A new chat starts every server (its plan needs their listings). A chat reopened with its pinned
plan may start them *lazily* (``deferchat ask --chat`` and ``resume``: ``ChatOptions.lazy_servers``):
nothing is started, and the MCP SDK not even imported, until one of a server's tools is called
(:meth:`ChatServers.call` starts that server first, and the call waits for it; a start that fails
is that call's error) or their listings are needed (:meth:`ChatServers.start_all`: a parked call's
pin check). Until then the tools as they are now (:attr:`ChatServers.live`) are the roster's own.
"""

from __future__ import annotations

import asyncio
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
        self.live: dict[str, ToolSpec] = {}  # the tools as they are now, kept up to date as servers start
        self._roster: Roster | None = None
        # (mcp_config, start_demo) while the servers wait to start when first needed (see the module)
        self._lazy: tuple[str | None, bool] | None = None
        self._configuring = asyncio.Lock()

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

    async def start(self, roster: Roster, mcp_config: str | None, start_demo: bool, *, lazy: bool = False) -> None:
        """Configure the chat's servers and start them all; ``lazy``: remember what to start and
        start nothing (no config read, no MCP SDK) until a call or a listing needs a server."""
        self._roster = roster
        if lazy:
            self._lazy = (mcp_config, start_demo)
            self._refresh()
            return
        await self._configure(roster, mcp_config, start_demo)
        if self.manager is not None:
            await self.manager.start()
        self._refresh()

    async def _configure(self, roster: Roster, mcp_config: str | None, start_demo: bool) -> None:
        """The chat's servers configured in a manager (none started): the configs, then the demo's."""
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

    async def _configured(self) -> McpManager | None:
        """The manager, configured now if the servers were to start lazily (once: concurrent
        callers wait for the first)."""
        if self._lazy is not None and self._roster is not None:
            async with self._configuring:
                if self._lazy is not None:
                    mcp_config, start_demo = self._lazy
                    await self._configure(self._roster, mcp_config, start_demo)
                    self._lazy = None
        return self.manager

    def _refresh(self) -> None:
        if self._roster is not None:
            self.live.clear()
            self.live.update(self.live_specs(self._roster))

    async def start_all(self) -> None:
        """Start every server not started yet (their listings are needed now)."""
        manager = await self._configured()
        if manager is not None:
            await manager.start()
            self._refresh()

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
        """How ``spec``'s server lists it now (see :meth:`McpManager.listed_now`). In a chat whose
        servers start lazily the tool's server is started first: the call about to be judged
        needs it anyway, and a re-listing must be seen before the first call, not after it. A
        server that fails to start cannot tell (the call then reports why)."""
        manager = await self._configured()
        if manager is None:
            return False, None
        names = {s.name for s in manager.servers()}
        if spec.server is not None and spec.server in names and not manager.started(spec.server):
            try:
                await manager.start([spec.server])
            except Exception:  # the call's own start reports the failure
                return False, None
            self._refresh()
        return await manager.listed_now(spec)

    async def call(self, spec: ToolSpec, arguments: dict[str, object]) -> ToolResult:
        from core.pipeline import codes

        manager = await self._configured()
        if manager is None or spec.server not in {s.name for s in manager.servers()}:
            return ToolResult.failure(
                codes.UNAVAILABLE,
                f"{spec.name}: no MCP server {spec.server!r} is running for "
                "this chat (the roster lists it, but no configuration starts it)",
            )
        if spec.server is not None and not manager.started(spec.server):
            await manager.start([spec.server])  # a lazily started chat: the call waits for its server
            self._refresh()
        return await manager.call(spec, arguments)  # each server's own call_timeout applies

    async def close(self) -> None:
        if self.manager is not None:
            await self.manager.close()
            self.manager = None
