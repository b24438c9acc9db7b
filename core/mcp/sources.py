"""Where MCP config files are, and how they are merged.

Lowest precedence first: the user's file, the project's ``.mcp.json`` (only once the user
has approved its exact content, :mod:`core.mcp.approval`), each ``--mcp-config FILE``. A
later source replaces a server of the same name whole.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from core.mcp.entries import read_config_bytes
from core.mcp.resolve import McpConfig, config_from_dict, read_config_file

PROJECT_FILE = ".mcp.json"
USER_FILE = "mcp.json"


def user_config_path(environ: Mapping[str, str] | None = None) -> Path:
    """``$DEFERCHAT_HOME/mcp.json``, else ``$XDG_CONFIG_HOME/deferchat/mcp.json``."""
    env = os.environ if environ is None else environ
    if env.get("DEFERCHAT_HOME"):
        return Path(env["DEFERCHAT_HOME"]).expanduser() / USER_FILE
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME") or Path.home()) / ".config")
    return Path(base).expanduser() / "deferchat" / USER_FILE


def project_config_path(cwd: str | Path | None = None) -> Path:
    """The project's ``.mcp.json`` in the working directory (it may not exist)."""
    return Path(cwd if cwd is not None else os.getcwd()) / PROJECT_FILE


def _read_project(project: Path, user_dir: Path, environ: Mapping[str, str] | None) -> McpConfig:
    """The project's file: as it is when approved (or when it sits in the user's config dir), else
    its servers marked as waiting for approval, nothing expanded."""
    from core.mcp.approval import digest, is_approved

    p, raw, data = read_config_bytes(project)
    resolved = p.resolve()
    own = resolved.parent == user_dir.resolve()  # the user's own config dir itself, not anything below it
    approved = own or is_approved(resolved, digest(raw), environ=environ)
    return config_from_dict(data, source=str(p), environ=environ, needs_approval=None if approved else str(resolved))


def _held_back(project: McpConfig, under: McpConfig) -> McpConfig:
    """An unapproved file changes nothing the user configured: its servers that would replace
    one of the user's are left out (and noted) until the file is approved."""
    taken = {s.name: s for s in under.servers}
    kept, notes = [], list(project.notes)
    for server in project.servers:
        if server.needs_approval and server.name in taken:
            notes.append(f"{server.name}: {server.source} would replace {taken[server.name].source} once approved")
        else:
            kept.append(server)
    return project.model_copy(update={"servers": tuple(kept), "notes": tuple(notes)})


def load_mcp_config(
    explicit: Sequence[str | Path] = (),
    *,
    cwd: str | Path | None = None,
    user_path: str | Path | None = None,
    strict: bool = False,
    environ: Mapping[str, str] | None = None,
) -> McpConfig:
    """Every configured server: user file < project ``.mcp.json`` < explicit files.

    Missing user and project files are skipped; a missing explicit file is an error.
    ``strict``: only the explicit files. The project's file counts only once the user has
    approved its exact content; until then its servers come back with ``needs_approval``.
    """
    config = McpConfig()
    if not strict:
        user = Path(user_path) if user_path is not None else user_config_path(environ)
        if user.is_file():
            config = config.merged(read_config_file(user, environ=environ))
        project = project_config_path(cwd)
        if project.is_file() and project.resolve() != user.resolve():
            config = config.merged(_held_back(_read_project(project, user.parent, environ), config))
    for path in explicit:
        config = config.merged(read_config_file(path, environ=environ))
    return config
