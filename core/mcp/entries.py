"""One MCP config file as written: read once, validated, nothing expanded.

:func:`read_config_bytes` reads a file (its exact bytes are what an approval hashes) and
:func:`parse_config_document` validates its ``mcpServers`` (or VS Code's ``servers``) entries
into :class:`ServerEntry` objects. A file that cannot be used raises :class:`McpConfigError`,
one line naming the file and the entry.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from core.errors import UsageError

_SERVER_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")  # whole names only: fullmatch

Transport = Literal["stdio", "http", "sse"]


class OAuthEntry(BaseModel):
    """A remote server's ``"oauth"`` object, as written (Claude Code's keys): a client registered
    with the server's authorization server ahead of time, and the scopes to ask for. Without it a
    remote server that asks for sign-in is signed in to with dynamic client registration."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    client_id: str | None = Field(default=None, alias="clientId")
    client_secret: str | None = Field(default=None, alias="clientSecret", description="may be ${VAR}")
    scopes: list[str] | None = Field(default=None, description="a list, or one space-separated string")
    callback_port: int | None = Field(
        default=None,
        alias="callbackPort",
        ge=1,
        le=65535,
        description="the loopback port the client was registered with",
    )

    @field_validator("scopes", mode="before")
    @classmethod
    def _split(cls, v: Any) -> Any:
        return v.split() if isinstance(v, str) else v

    @field_validator("client_id", "client_secret")
    @classmethod
    def _not_blank_text(cls, v: str | None) -> str | None:
        if v is not None and not v.strip():
            raise ValueError("must not be empty")
        return v

    @model_validator(mode="after")
    def _secret_needs_id(self) -> OAuthEntry:
        if self.client_secret is not None and self.client_id is None:
            raise ValueError("'clientSecret' needs the 'clientId' it belongs to")
        return self


class McpConfigError(UsageError, ValueError):
    """A configuration file cannot be used. The message names the file and the entry."""


class ServerEntry(BaseModel):
    """One ``mcpServers`` entry exactly as a file writes it (before ``${VAR}`` expansion)."""

    model_config = ConfigDict(extra="ignore")

    type: Literal["stdio", "http", "streamable-http", "streamableHttp", "sse"] | None = None
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    timeout: float | None = Field(default=None, gt=0, description="seconds to start")
    call_timeout: float | None = Field(default=None, gt=0, description="seconds per tool call")
    disabled: bool = False
    # Claude Code's key: every tool of this server is pinned (ranked first, never deferred).
    always_load: bool = Field(default=False, alias="alwaysLoad")
    # A remote server's sign-in (core.mcp.oauth): a pre-registered client and the scopes.
    oauth: OAuthEntry | None = None

    @field_validator("command", "url")
    @classmethod
    def _not_blank(cls, v: str | None) -> str | None:
        if v is not None and not v.strip():
            raise ValueError("must not be empty")
        return v

    @model_validator(mode="after")
    def _one_transport(self) -> ServerEntry:
        if self.command is not None and self.url is not None:
            raise ValueError("give either 'command' (a local server) or 'url' (a remote one), not both")
        kind = self.transport
        if kind == "stdio" and self.command is None:
            raise ValueError("a stdio server needs 'command'" if self.type else "give 'command' or 'url'")
        if kind != "stdio" and self.url is None:
            raise ValueError(f"a {self.type} server needs 'url'")
        if kind == "stdio" and self.oauth is not None:
            raise ValueError("'oauth' is for a remote server (one with 'url'); a local server does not sign in")
        return self

    @property
    def transport(self) -> Transport:
        if self.type in ("http", "streamable-http", "streamableHttp"):
            return "http"
        if self.type == "sse":
            return "sse"
        if self.type == "stdio":
            return "stdio"
        return "http" if self.url is not None else "stdio"


class ConfigFile(BaseModel):
    """A whole file. ``mcpServers`` (Claude) or ``servers`` (VS Code) hold the entries."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    mcp_servers: dict[str, ServerEntry] | None = Field(default=None, alias="mcpServers")
    servers: dict[str, ServerEntry] | None = None

    def entries(self) -> dict[str, ServerEntry]:
        return dict(self.mcp_servers if self.mcp_servers is not None else (self.servers or {}))


def _format_validation(err: ValidationError) -> str:
    lines = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"] if p not in ("mcpServers", "servers"))
        lines.append(f"  {loc or '(top level)'}: {e['msg']}")
    return "\n".join(lines)


def parse_config_document(data: Any, *, source: str) -> ConfigFile:
    """The entries of one document as written (nothing expanded). Raises :class:`McpConfigError`."""
    if not isinstance(data, dict):
        raise McpConfigError(f'{source}: expected a JSON object with "mcpServers", got {type(data).__name__}')
    try:
        parsed = ConfigFile.model_validate(data)
    except ValidationError as err:
        raise McpConfigError(f"{source}: invalid MCP server configuration\n{_format_validation(err)}") from None
    if parsed.mcp_servers is None and parsed.servers is None:
        raise McpConfigError(f'{source}: no "mcpServers" object (the Claude Desktop / Claude Code format)')
    for name in parsed.entries():
        if not _SERVER_NAME.fullmatch(name):
            raise McpConfigError(
                f"{source}: server name {name!r} cannot be used: tools are named mcp.<server>.<tool>, "
                "so a server name is 1-64 letters, digits, '_' or '-'"
            )
    return parsed


def read_config_bytes(path: str | Path) -> tuple[Path, bytes, Any]:
    """One file read once: its path, its exact bytes (what an approval hashes) and its JSON."""
    p = Path(path).expanduser()
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise McpConfigError(f"{p}: no such MCP config file") from None
    except IsADirectoryError:
        raise McpConfigError(f"{p}: is a directory, not an MCP config file") from None
    except OSError as e:
        raise McpConfigError(f"{p}: cannot read: {e.strerror or e}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise McpConfigError(f"{p}: not UTF-8 text (byte {e.start}); save it as UTF-8 JSON") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise McpConfigError(f"{p}: not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})") from None
    return p, raw, data
