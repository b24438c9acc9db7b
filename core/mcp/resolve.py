"""Entries resolved into servers ready to start: :class:`McpServerConfig`, :class:`McpConfig`.

A resolved server keeps its fields as the file wrote them (``${TOKEN}``, unexpanded): that is
what is shown, logged and stored. The expanded values live only in
:meth:`McpServerConfig.endpoint`, which is what the client connects with, and
:meth:`McpServerConfig.redact` turns any expanded value found in a message back into its
``${VAR}``. An entry of a file the user has not approved is kept unexpanded and marked
``needs_approval``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from core.mcp.entries import OAuthEntry, ServerEntry, Transport, parse_config_document, read_config_bytes
from core.mcp.expansion import Unset, expand_tracked, redact, safe_environment

DEFAULT_START_TIMEOUT = 30.0  # seconds to spawn, shake hands and list tools
DEFAULT_CALL_TIMEOUT = 120.0  # seconds for one tool call


class Endpoint(BaseModel):
    """What the client connects with: the entry's fields with ``${VAR}`` expanded. Never shown."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    oauth_client_secret: str | None = None


class McpServerConfig(BaseModel):
    """One server, ready to start. ``error`` set: it cannot start, and says why.

    ``command``, ``args``, ``env``, ``cwd``, ``url`` and ``headers`` are as the file wrote them
    (``${VAR}`` unexpanded), safe to show, log and store. The expanded values are in
    :meth:`endpoint` only (excluded from dumps and repr). ``needs_approval`` names the file
    the user has not approved yet: such a server is never started, and nothing of it was
    expanded.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    transport: Transport
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict, description="the server's own variables, as written")
    inherited_env: dict[str, str] = Field(
        default_factory=dict, description="the safe base taken from deferchat's environment"
    )
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    timeout: float = DEFAULT_START_TIMEOUT
    call_timeout: float = DEFAULT_CALL_TIMEOUT
    source: str = ""
    always_load: bool = False  # "alwaysLoad": true: its tools are pinned in a plan
    oauth: OAuthEntry | None = Field(default=None, description='the "oauth" object as written (secret unexpanded)')
    error: str | None = None
    needs_approval: str | None = Field(default=None, description="the unapproved file this server comes from")
    live: Endpoint | None = Field(
        default=None, exclude=True, repr=False, description="expanded values, when any ${VAR} was expanded"
    )
    secrets: tuple[tuple[str, str], ...] = Field(
        default=(), exclude=True, repr=False, description="(expanded value, '${VAR}') pairs, longest first"
    )

    def endpoint(self) -> Endpoint:
        """The values to connect with (``${VAR}`` expanded). Only the transport may use them."""
        if self.live is not None:
            return self.live
        return Endpoint(
            command=self.command,
            args=self.args,
            env=self.env,
            cwd=self.cwd,
            url=self.url,
            headers=self.headers,
            oauth_client_secret=self.oauth.client_secret if self.oauth else None,
        )

    def process_env(self) -> dict[str, str]:
        """The whole environment a stdio server process gets: safe base, then its own ``env``."""
        return {**self.inherited_env, **self.endpoint().env}

    def redact(self, text: str) -> str:
        """``text`` with every value that came from ``${VAR}`` expansion put back as ``${VAR}``."""
        return redact(text, self.secrets)

    def describe(self) -> str:
        """One line for people: the command or the URL as written (never an expanded secret)."""
        if self.transport == "stdio":
            return " ".join([self.command or "", *self.args]).strip()
        return f"{self.transport} {self.url}"


class McpConfig(BaseModel):
    """Every configured server, sorted by name, and where each came from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    servers: tuple[McpServerConfig, ...] = ()
    sources: tuple[str, ...] = Field(default=(), description="files read, lowest precedence first")
    notes: tuple[str, ...] = Field(default=(), description="overrides and disabled entries, for people")

    def names(self) -> list[str]:
        return [s.name for s in self.servers]

    def get(self, name: str) -> McpServerConfig | None:
        return next((s for s in self.servers if s.name == name), None)

    def awaiting_approval(self) -> list[str]:
        """Files whose servers wait for the user's approval (:mod:`core.mcp.approval`)."""
        return sorted({s.needs_approval for s in self.servers if s.needs_approval})

    def merged(self, other: McpConfig) -> McpConfig:
        """``other`` on top of this one: its servers replace same-named ones."""
        by_name = {s.name: s for s in self.servers}
        notes = list(self.notes) + list(other.notes)
        for server in other.servers:
            if server.name in by_name:
                notes.append(f"{server.name}: {server.source} replaces {by_name[server.name].source}")
            by_name[server.name] = server
        return McpConfig(
            servers=tuple(by_name[n] for n in sorted(by_name)),
            sources=self.sources + other.sources,
            notes=tuple(notes),
        )


def resolve_entry(
    name: str,
    entry: ServerEntry,
    *,
    source: str,
    environ: Mapping[str, str] | None = None,
    start_timeout: float = DEFAULT_START_TIMEOUT,
    call_timeout: float = DEFAULT_CALL_TIMEOUT,
    needs_approval: str | None = None,
) -> McpServerConfig:
    """Expand one entry. An unset variable becomes the server's ``error``, not an exception.

    ``needs_approval`` (the unapproved file's path): nothing is expanded and nothing of the
    environment is read; the server only says what it would run.
    """
    written = {
        "command": entry.command,
        "args": tuple(entry.args),
        "env": dict(entry.env),
        "cwd": entry.cwd,
        "url": entry.url,
        "headers": dict(entry.headers),
    }
    common = {
        "name": name,
        "transport": entry.transport,
        "timeout": entry.timeout or start_timeout,
        "call_timeout": entry.call_timeout or call_timeout,
        "source": source,
        "always_load": entry.always_load,
        "oauth": entry.oauth,
    }
    if needs_approval is not None:
        return McpServerConfig(**common, **written, needs_approval=needs_approval)
    env_in = os.environ if environ is None else environ
    missing: list[str] = []
    where: list[str] = []
    secrets: dict[str, str] = {}

    def x(value: str | None, field: str) -> str | None:
        if value is None:
            return None
        try:
            return expand_tracked(value, env_in, secrets)
        except Unset as e:
            for var in e.names:
                if var not in missing:
                    missing.append(var)
            where.append(field)
            return value

    live = Endpoint(
        command=x(entry.command, "command"),
        args=tuple(x(a, f"args[{i}]") or "" for i, a in enumerate(entry.args)),
        env={k: x(v, f"env.{k}") or "" for k, v in entry.env.items()},
        cwd=x(entry.cwd, "cwd"),
        url=x(entry.url, "url"),
        headers={k: x(v, f"headers.{k}") or "" for k, v in entry.headers.items()},
        oauth_client_secret=x(entry.oauth.client_secret, "oauth.clientSecret") if entry.oauth else None,
    )
    error = None
    if missing:
        vars_ = ", ".join(missing)
        error = (
            f"environment variable{'s' if len(missing) > 1 else ''} {vars_} not set "
            f"(used in {', '.join(where)} of {source}); set it or write ${{{missing[0]}:-default}}"
        )
    same = live == Endpoint(**written, oauth_client_secret=entry.oauth.client_secret if entry.oauth else None)
    return McpServerConfig(
        **common,
        **written,
        inherited_env=safe_environment(env_in) if entry.transport == "stdio" else {},
        error=error,
        live=None if same else live,
        secrets=tuple(sorted(secrets.items(), key=lambda kv: (-len(kv[0]), kv[0]))),
    )


def config_from_dict(
    data: Any,
    *,
    source: str = "<config>",
    environ: Mapping[str, str] | None = None,
    needs_approval: str | None = None,
) -> McpConfig:
    """Parse one ``mcpServers`` document (already decoded JSON). Raises :class:`McpConfigError`.

    ``needs_approval``: the document is an unapproved file (that path); its servers are kept
    unexpanded and marked, so they are reported and never started.
    """
    parsed = parse_config_document(data, source=source)
    servers: list[McpServerConfig] = []
    notes: list[str] = []
    for name, entry in parsed.entries().items():
        if entry.disabled:
            notes.append(f"{name}: disabled in {source}")
            continue
        servers.append(resolve_entry(name, entry, source=source, environ=environ, needs_approval=needs_approval))
    servers.sort(key=lambda s: s.name)
    return McpConfig(servers=tuple(servers), sources=(source,), notes=tuple(notes))


def read_config_file(
    path: str | Path, *, environ: Mapping[str, str] | None = None, needs_approval: bool = False
) -> McpConfig:
    """Read and parse one file. Raises :class:`McpConfigError` with the path in the message."""
    p, _, data = read_config_bytes(path)
    return config_from_dict(
        data, source=str(p), environ=environ, needs_approval=str(p.resolve()) if needs_approval else None
    )
