"""One-shot live discovery for commands that do not keep a session: ``deferchat plan
--mcp-config FILE`` and ``deferchat servers``. Start every server, take its tools, stop it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from core.mcp.config import McpConfig, load_mcp_config
from core.tools import ToolSpec


def _config(source: str | Path | Sequence[str | Path] | McpConfig | None, strict: bool) -> McpConfig:
    if isinstance(source, McpConfig):
        return source
    if source is None:
        return load_mcp_config(strict=strict)
    paths = [source] if isinstance(source, (str, Path)) else list(source)
    return load_mcp_config(paths, strict=strict)


def discover_servers(
    source: str | Path | Sequence[str | Path] | McpConfig | None,
    *,
    strict: bool = False,
    on_event: Callable[[Any], Any] | None = None,
) -> Any:
    """A :class:`core.mcp.client.Discovery`: every server's report, every discovered tool, and
    every listed tool that cannot be offered (``rejected``, each with its reason).

    ``source``: ``--mcp-config`` file(s) (merged over the user's and the project's files
    unless ``strict``), an :class:`McpConfig`, or None for the user's and project's files only.
    Raises :class:`core.mcp.config.McpConfigError` for an unusable file.
    """
    from core.mcp.client import discover

    return asyncio.run(discover(_config(source, strict), on_event=on_event))


def discover_once(
    source: str | Path | Sequence[str | Path] | McpConfig | None,
    *,
    strict: bool = False,
    on_event: Callable[[Any], Any] | None = None,
) -> list[ToolSpec]:
    """The discovered tools only (sorted by name); failures are reported through ``on_event``."""
    return list(discover_servers(source, strict=strict, on_event=on_event).tools)
