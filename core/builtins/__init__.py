"""Local implementations of the configured tools (the production roster's built-ins).

A built-in is an async function ``(arguments, ctx) -> ToolResult`` registered under the
configured tool's name, with its description and the pydantic model its arguments are parsed
with; the tool's input schema is generated from that model (:mod:`core.builtins.schema`). A
built-in that changes something has a describe hook beside it: what a call will do, in words,
with the ids it names resolved (``describe``: the approval's preview, core.pipeline.preview). The
pipeline looks the name up here; a configured tool with no implementation fails its call with
``tool.unavailable`` and a clear message. The roster loader takes a configured tool's
description and input schema from here when the roster entry gives none.

One module per domain registers its tools (:func:`_load_all` names them); they are imported on
the first look-up, not when this package is.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.tools import ToolResult

if TYPE_CHECKING:
    from pydantic import BaseModel

    from core.pipeline.canonical import PathBase
    from core.pipeline.preview import ActionPreview


@dataclass
class ToolContext:
    """What a built-in may use: the database, the chat it runs in, the owner's workspace."""

    db: Any  # sqlite_utils.Database
    chat_id: str
    call_id: str
    workspace: Path
    timezone: str = "UTC"
    settings: dict[str, Any] = field(default_factory=dict)


Builtin = Callable[[dict[str, Any], ToolContext], Awaitable[ToolResult]]
Describe = Callable[[dict[str, Any], ToolContext], "ActionPreview"]


@dataclass(frozen=True)
class BuiltinTool:
    """One registered built-in: its implementation, its description and its argument model."""

    name: str
    description: str
    args: type[BaseModel]
    run: Builtin
    # What a call will do, in words, read from the same arguments and database (never writes).
    describe: Describe | None = None

    @property
    def paths(self) -> tuple[str, ...]:
        """The arguments that are paths in the owner's workspace (typed ``WorkspacePath``)."""
        from core.builtins.shared import IN_WORKSPACE

        return tuple(
            name for name, info in self.args.model_fields.items() if any(m is IN_WORKSPACE for m in info.metadata)
        )

    @property
    def input_schema(self) -> dict[str, Any]:
        """The JSON Schema the tool is offered with, generated from :attr:`args` (a fresh copy)."""
        from core.builtins.schema import input_schema

        return input_schema(self.args)


_REGISTRY: dict[str, BuiltinTool] = {}


def register(tool: BuiltinTool) -> None:
    if tool.name in _REGISTRY:
        raise ValueError(f"built-in {tool.name} registered twice")
    _REGISTRY[tool.name] = tool


def builtin_tool(name: str) -> BuiltinTool | None:
    _load_all()
    return _REGISTRY.get(name)


def workspace_bases(name: str, workspace: Path) -> dict[str, PathBase]:
    """The arguments of the built-in ``name`` that are paths in the owner's workspace, each with
    the folder it resolves in (none for a tool that takes no such path)."""
    tool = builtin_tool(name)
    if tool is None or not tool.paths:
        return {}
    from core.pipeline.canonical import PathBase

    base = PathBase.of(workspace)
    return dict.fromkeys(tool.paths, base)


def get_builtin(name: str) -> Builtin | None:
    tool = builtin_tool(name)
    return tool.run if tool else None


def builtin_names() -> list[str]:
    _load_all()
    return sorted(_REGISTRY)


_loaded = False


def _load_all() -> None:
    global _loaded
    if not _loaded:
        # One module per domain; each registers its built-ins when it is imported.
        from core.builtins import (  # noqa: F401
            browser,
            calendar_events,
            clock,
            mail,
            memory,
            notes,
            notify,
            people,
            schedule,
            tasks,
            web,
            workspace,
        )

        _loaded = True
