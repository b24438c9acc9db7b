"""Where a tool call goes once the pipeline has judged it: a control tool, a built-in, or the
chat's MCP server. The pipeline sees only :class:`ToolHost`: run a tool, and say what a tool's
pin is now; and :class:`~core.pipeline.pipeline.ToolDescriber`: say what a call will do, for its
approval (a built-in's describe hook, a demo server's, the owner's contacts for the addresses and
phone numbers a server's tool is given)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.chat.servers import ChatServers
from core.controls import CONTROL_TOOLS, ControlContext
from core.pipeline import codes
from core.pipeline.preview import ActionPreview, PreviewField, spec_preview
from core.tools import Origin, ToolResult, ToolSpec

if TYPE_CHECKING:
    from core.pipeline.canonical import PathBase

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
        self.changes_told: dict[str, str | None] = {}  # what the person was told of each changed tool

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

    async def listed_now(self, spec: ToolSpec) -> tuple[bool, ToolSpec | None]:
        """How an MCP tool's server lists it now (the pipeline judges a call by the stricter of
        that and the pin); built-in and control tools never change under a chat."""
        if spec.origin is not Origin.DISCOVERED:
            return False, None
        return await self.servers.listed_now(spec)

    def path_bases(self, spec: ToolSpec) -> dict[str, PathBase]:
        """The arguments of ``spec`` that are paths in the owner's workspace (built-ins only: an
        MCP server resolves its paths where it runs, which this process cannot know)."""
        if spec.origin is not Origin.CONFIGURED:
            return {}
        from core.builtins import workspace_bases

        return workspace_bases(spec.name, self.workspace)

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
        from core.builtins import get_builtin

        fn = get_builtin(spec.name)
        if fn is None:
            return ToolResult.failure(codes.UNAVAILABLE, _no_builtin(spec.name))
        return await asyncio.wait_for(fn(arguments, self._context(call_id)), TOOL_TIMEOUT_SECONDS)

    def _context(self, call_id: str) -> Any:
        from core.builtins import ToolContext

        return ToolContext(
            db=self._builtin_db(),
            chat_id=self.chat_id,
            call_id=call_id,
            workspace=self.workspace,
            timezone=self.timezone,
            settings=self.tool_settings,
        )

    # -- what a call will do, for its approval -----------------------------------------------------
    def describe(
        self, spec: ToolSpec, arguments: dict[str, Any], call_id: str, kinds: Mapping[str, str]
    ) -> ActionPreview:
        if spec.origin is Origin.CONFIGURED:
            from core.builtins import builtin_tool

            tool = builtin_tool(spec.name)
            if tool is None or tool.describe is None:
                generic = spec_preview(spec, arguments, kinds=kinds)
                if tool is None:
                    generic.problems.append(f"{_no_builtin(spec.name)}. The call will fail.")
                return generic
            return tool.describe(arguments, self._context(call_id))
        described: ActionPreview | None = None
        if spec.origin is Origin.DISCOVERED and spec.server in self.servers.demo and self.servers.demo_db:
            from core.demo.previews import describe

            described = describe(spec.server or "", spec.remote_name or "", arguments, self.servers.demo_db)
        return self._contacts(described or spec_preview(spec, arguments, kinds=kinds), kinds)

    def _contacts(self, preview: ActionPreview, kinds: Mapping[str, str]) -> ActionPreview:
        """The owner's contacts named beside the addresses and phone numbers a server's tool is
        given (``dana@globex.example: Dana Whitfield (Globex)``, or that one is not a contact)."""
        db = None
        fields: list[PreviewField] = []
        for f in preview.fields:
            kind = kinds.get(f.argument or "") or f.kind
            if f.argument is not None and kind in ("email", "phone") and f.value != "(nobody)":
                db = db if db is not None else self._builtin_db()
                values = [v for v in f.value.split(", ") if v] if kind == "email" else [f.value]
                f = f.model_copy(update={"note": "; ".join(x for x in (_whom(db, kind, values), f.note) if x)})
            fields.append(f)
        return preview.model_copy(update={"fields": fields})


def _whom(db: Any, kind: str, values: list[str]) -> str:
    """Who the values are in the owner's contacts, in words, the unknown ones named."""
    from core.builtins.people import known_as

    names = [(v, known_as(db, kind, v)) for v in values]
    if len(names) == 1:
        return f"in your contacts: {names[0][1]}" if names[0][1] else "not in your contacts"
    known = [f"{v}: {n}" for v, n in names if n]
    unknown = [v for v, n in names if not n]
    if not known:
        return "none of them in your contacts"
    return "; ".join([*known, *([f"not in your contacts: {', '.join(unknown)}"] if unknown else [])])


def _no_builtin(name: str) -> str:
    return f"{name} has no implementation in this deferchat; it is listed by the roster but cannot run here"
