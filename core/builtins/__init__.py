"""Local implementations of the configured tools (the production roster's built-ins).

A built-in is an async function ``(arguments, ctx) -> ToolResult`` registered under the
configured tool's name. The pipeline looks the name up here; a configured tool with no
implementation fails its call with ``tool.unavailable`` and a clear message.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.tools import ToolResult


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

_REGISTRY: dict[str, Builtin] = {}


def builtin(name: str) -> Callable[[Builtin], Builtin]:
    def register(fn: Builtin) -> Builtin:
        if name in _REGISTRY:
            raise ValueError(f"built-in {name} registered twice")
        _REGISTRY[name] = fn
        return fn

    return register


def get_builtin(name: str) -> Builtin | None:
    _load_all()
    return _REGISTRY.get(name)


def builtin_names() -> list[str]:
    _load_all()
    return sorted(_REGISTRY)


_loaded = False


def _load_all() -> None:
    global _loaded
    if not _loaded:
        from core.builtins import tools  # noqa: F401  (registers every built-in)

        _loaded = True
