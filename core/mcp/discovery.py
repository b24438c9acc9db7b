"""One-shot live discovery for commands that do not keep a session: ``deferchat plan
--mcp-config FILE`` and ``deferchat servers``. Start every server, take its tools, stop it.

Importing this module is cheap: the client (and the MCP SDK behind it) is imported when a
discovery runs."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.mcp.config import McpConfig, McpServerConfig, load_mcp_config
from core.tools import ToolSpec

if TYPE_CHECKING:
    from core.mcp.client import EventSink
    from core.mcp.reports import Discovery


def _config(source: str | Path | Sequence[str | Path] | McpConfig | None, strict: bool) -> McpConfig:
    if isinstance(source, McpConfig):
        return source
    if source is None:
        return load_mcp_config(strict=strict)
    paths = [source] if isinstance(source, (str, Path)) else list(source)
    return load_mcp_config(paths, strict=strict)


async def discover(
    config: McpConfig | Iterable[McpServerConfig],
    *,
    on_event: EventSink | None = None,
) -> Discovery:
    """Start every server, take their tools and statuses, stop them."""
    from core.mcp.client import McpManager
    from core.mcp.reports import Discovery

    async with McpManager(config, on_event=on_event) as manager:
        return Discovery(servers=manager.servers(), tools=manager.tools(), rejected=manager.rejected())


def discover_servers(
    source: str | Path | Sequence[str | Path] | McpConfig | None,
    *,
    strict: bool = False,
    on_event: Callable[[Any], Any] | None = None,
) -> Discovery:
    """A :class:`core.mcp.reports.Discovery`: every server's report, every discovered tool, and
    every listed tool that cannot be offered (``rejected``, each with its reason).

    ``source``: ``--mcp-config`` file(s) (merged over the user's and the project's files
    unless ``strict``), an :class:`McpConfig`, or None for the user's and project's files only.
    Raises :class:`core.mcp.config.McpConfigError` for an unusable file.
    """
    return asyncio.run(discover(_config(source, strict), on_event=on_event))


def discover_once(
    source: str | Path | Sequence[str | Path] | McpConfig | None,
    *,
    strict: bool = False,
    on_event: Callable[[Any], Any] | None = None,
) -> list[ToolSpec]:
    """The discovered tools only (sorted by name); failures are reported through ``on_event``."""
    return list(discover_servers(source, strict=strict, on_event=on_event).tools)
