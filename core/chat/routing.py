"""Where a tool call goes once the pipeline has judged it: a control tool, a built-in, or the
chat's MCP server. The pipeline sees only :class:`ToolHost`: run a tool, and say what a tool's
pin is now."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from core.chat.servers import ChatServers
from core.controls import CONTROL_TOOLS, ControlContext
from core.pipeline import codes
from core.tools import Origin, ToolResult, ToolSpec

TOOL_TIMEOUT_SECONDS = 120.0


class ToolRouter:
    """Runs one chat's tools. ``live`` is what the tools are now (for the pin check on resume)."""

    def __init__(
        self,
        *,
        chat_id: str,
        specs: Mapping[str, ToolSpec],
        live: Mapping[str, ToolSpec],
        controls: ControlContext,
        servers: ChatServers,
        builtin_db: Callable[[], Any],
        workspace: Path,
        timezone: str,
        tool_settings: dict[str, Any],
    ):
        self.chat_id = chat_id
        self.specs = specs
        self.live = live
        self.controls = controls
        self.servers = servers
        self._builtin_db = builtin_db
        self.workspace = workspace
        self.timezone = timezone
        self.tool_settings = tool_settings

    async def ready(self) -> None:
        """Every tool's server started, so :meth:`live_pin` reads what each tool is now (a parked
        call's pin check, in a chat whose servers start lazily: core.chat.servers)."""
        await self.servers.start_all()

    def live_pin(self, name: str) -> str | None:
        """The pin of ``name`` as it is now; control tools are built in and never change."""
        spec = self.live.get(name)
        if spec is None and (pinned := self.specs.get(name)) is not None and pinned.origin is Origin.CONTROL:
            spec = pinned
        return spec.content_hash() if spec else None

    async def run(self, spec: ToolSpec, arguments: dict[str, Any], call_id: str) -> ToolResult:
        if spec.origin is Origin.CONTROL:
            control = CONTROL_TOOLS.get(spec.name)
            if control is None:
                return ToolResult.failure(codes.UNAVAILABLE, f"{spec.name} has no implementation")
            return control(arguments, self.controls)
        if spec.origin is Origin.CONFIGURED:
            return await self._builtin(spec, arguments, call_id)
        return await self.servers.call(spec, arguments)

    async def _builtin(self, spec: ToolSpec, arguments: dict[str, Any], call_id: str) -> ToolResult:
        from core.builtins import ToolContext, get_builtin

        fn = get_builtin(spec.name)
        if fn is None:
            return ToolResult.failure(
                codes.UNAVAILABLE,
                f"{spec.name} has no implementation in this deferchat; it is listed by the roster but cannot run here",
            )
        ctx = ToolContext(
            db=self._builtin_db(),
            chat_id=self.chat_id,
            call_id=call_id,
            workspace=self.workspace,
            timezone=self.timezone,
            settings=self.tool_settings,
        )
        return await asyncio.wait_for(fn(arguments, ctx), TOOL_TIMEOUT_SECONDS)
