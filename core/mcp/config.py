"""MCP server configuration: the ``mcpServers`` JSON that Claude Desktop and Claude Code use.

One entry per server::

    {"mcpServers": {
        "time":   {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}},
        "github": {"type": "http", "url": "https://example.invalid/mcp",
                   "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}, "timeout": 20}}}

Keys: ``command``, ``args``, ``env``, ``cwd`` (stdio); ``url``, ``headers`` (HTTP); optional
``type`` (``stdio`` | ``http`` | ``streamable-http`` | ``sse``; inferred from ``command``/``url``
when absent), ``timeout`` (seconds to start: connect, handshake and first tool listing),
``call_timeout`` (seconds per tool call) and ``disabled``. Unknown keys are ignored, so a
Claude Desktop or Claude Code file works as it is.

Where servers come from, lowest precedence first (a later source replaces a server of the
same name whole, it does not merge into it):

1. the user's file: ``$DEFERCHAT_HOME/mcp.json`` when ``DEFERCHAT_HOME`` is set, else
   ``$XDG_CONFIG_HOME/deferchat/mcp.json`` (``~/.config/deferchat/mcp.json``);
2. the project's ``.mcp.json`` in the working directory;
3. each ``--mcp-config FILE``, in the order given.

``strict`` reads only the explicit files.

``${VAR}`` and ``${VAR:-default}`` are expanded in ``command``, ``args``, ``env``, ``cwd``,
``url`` and ``headers`` (``:-`` as in the shell: the default also replaces an empty value).
A variable that is unset and has no default does not break the whole file: that one server
carries the error and is reported as failed when the session opens.

Secrets: a stdio server's environment is a small safe base taken from ours (``PATH``,
``HOME``, locale, terminal, temp dir; see :data:`SAFE_ENV_VARS`) plus its own ``env``.
Nothing else of the parent's environment reaches it, so API keys stay with deferchat unless
a server's entry names them (``"env": {"TOKEN": "${TOKEN}"}``). A resolved server keeps its
fields as the file wrote them (``${TOKEN}``, unexpanded): that is what is shown, logged and
stored. The expanded values live only in :meth:`McpServerConfig.endpoint`, which is what the
client connects with, and :meth:`McpServerConfig.redact` turns any expanded value found in a
message back into its ``${VAR}``.

Approval: the project's ``.mcp.json`` is written by whoever wrote the project, not by the
user. Its servers do not start, and nothing in it is expanded, until the user has approved
that file's exact content (:mod:`core.mcp.approval`); until then each of its servers carries
``needs_approval`` and is reported so. The user's own file and each ``--mcp-config`` the
user names on the command line are the user's own act and start as they are.

This module imports no MCP SDK: ``deferchat plan`` must stay quick.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from core.errors import UsageError

# Variables a server inherits from deferchat's environment. Nothing that can hold a secret.
SAFE_ENV_VARS: tuple[str, ...] = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TZ",
    "TMPDIR",
    # Windows needs these to start anything at all.
    "SYSTEMROOT",
    "SYSTEMDRIVE",
    "WINDIR",
    "COMSPEC",
    "PATHEXT",
    "TEMP",
    "TMP",
    "APPDATA",
    "LOCALAPPDATA",
    "USERPROFILE",
)

DEFAULT_START_TIMEOUT = 30.0  # seconds to spawn, shake hands and list tools
DEFAULT_CALL_TIMEOUT = 120.0  # seconds for one tool call

PROJECT_FILE = ".mcp.json"
USER_FILE = "mcp.json"

_SERVER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
VAR_RE = _VAR  # ``${VAR}`` / ``${VAR:-default}``: group 1 the name, group 2 the default

Transport = Literal["stdio", "http", "sse"]


class McpConfigError(UsageError, ValueError):
    """A configuration file cannot be used. The message names the file and the entry."""


# --- the boundary: one entry as written in a file ----------------------------------------------


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


# --- resolved: what the client connects to ----------------------------------------------------


class Endpoint(BaseModel):
    """What the client connects with: the entry's fields with ``${VAR}`` expanded. Never shown."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)


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
    error: str | None = None
    needs_approval: str | None = Field(default=None, description="the unapproved file this server comes from")
    live: Endpoint | None = Field(default=None, exclude=True, repr=False,
                                  description="expanded values, when any ${VAR} was expanded")
    secrets: tuple[tuple[str, str], ...] = Field(default=(), exclude=True, repr=False,
                                                 description="(expanded value, '${VAR}') pairs, longest first")

    def endpoint(self) -> Endpoint:
        """The values to connect with (``${VAR}`` expanded). Only the transport may use them."""
        if self.live is not None:
            return self.live
        return Endpoint(command=self.command, args=self.args, env=self.env, cwd=self.cwd, url=self.url,
                        headers=self.headers)

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


# --- expansion ---------------------------------------------------------------------------------


class _Unset(Exception):
    def __init__(self, names: list[str]):
        self.names = names


def expand(text: str, environ: Mapping[str, str]) -> str:
    """Expand ``${VAR}`` and ``${VAR:-default}``. Raises ``_Unset`` naming what is missing."""
    missing: list[str] = []

    def sub(m: re.Match[str]) -> str:
        name, default = m.group(1), m.group(2)
        value = environ.get(name)
        if value:
            return value
        if default is not None:
            return default
        if value is None:
            missing.append(name)
            return ""
        return value  # set but empty, no default: empty, as in the shell

    out = _VAR.sub(sub, text)
    if missing:
        raise _Unset(missing)
    return out


MIN_SECRET_LEN = 4  # shorter expanded values are not hunted for in free text (they would garble it)


def _expand_tracked(text: str, environ: Mapping[str, str], secrets: dict[str, str]) -> str:
    """:func:`expand`, noting each value taken from ``environ`` as ``secrets[value] = "${VAR}"``."""
    out = expand(text, environ)
    for m in _VAR.finditer(text):
        value = environ.get(m.group(1))
        if value and len(value) >= MIN_SECRET_LEN:
            secrets.setdefault(value, "${" + m.group(1) + "}")
    return out


def redact(text: str, secrets: Sequence[tuple[str, str]]) -> str:
    """Put each secret value found in ``text`` (as is, or percent-encoded) back as its placeholder."""
    from urllib.parse import quote, quote_plus

    for value, placeholder in secrets:
        for form in dict.fromkeys((value, quote(value, safe=""), quote(value), quote_plus(value))):
            if form:
                text = text.replace(form, placeholder)
    return text


def safe_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The part of ``environ`` a server may inherit: :data:`SAFE_ENV_VARS` and the ``LC_*``
    locale variables, shell functions dropped. Nothing else (no provider key) is inherited."""
    names = [*SAFE_ENV_VARS, *sorted(k for k in environ if k.startswith("LC_") and k not in SAFE_ENV_VARS)]
    return {k: environ[k] for k in names if k in environ and not environ[k].startswith("()")}


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
    written = {"command": entry.command, "args": tuple(entry.args), "env": dict(entry.env), "cwd": entry.cwd,
               "url": entry.url, "headers": dict(entry.headers)}
    common = {"name": name, "transport": entry.transport, "timeout": entry.timeout or start_timeout,
              "call_timeout": entry.call_timeout or call_timeout, "source": source}
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
            return _expand_tracked(value, env_in, secrets)
        except _Unset as e:
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
    )
    error = None
    if missing:
        vars_ = ", ".join(missing)
        error = (
            f"environment variable{'s' if len(missing) > 1 else ''} {vars_} not set "
            f"(used in {', '.join(where)} of {source}); set it or write ${{{missing[0]}:-default}}"
        )
    same = live == Endpoint(**written)
    return McpServerConfig(
        **common,
        **written,
        inherited_env=safe_environment(env_in) if entry.transport == "stdio" else {},
        error=error,
        live=None if same else live,
        secrets=tuple(sorted(secrets.items(), key=lambda kv: (-len(kv[0]), kv[0]))),
    )


# --- parsing -----------------------------------------------------------------------------------


def _format_validation(err: ValidationError) -> str:
    lines = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"] if p not in ("mcpServers", "servers"))
        lines.append(f"  {loc or '(top level)'}: {e['msg']}")
    return "\n".join(lines)


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


def parse_config_document(data: Any, *, source: str) -> ConfigFile:
    """The entries of one document as written (nothing expanded). Raises :class:`McpConfigError`."""
    if not isinstance(data, dict):
        raise McpConfigError(f"{source}: expected a JSON object with \"mcpServers\", got {type(data).__name__}")
    try:
        parsed = ConfigFile.model_validate(data)
    except ValidationError as err:
        raise McpConfigError(f"{source}: invalid MCP server configuration\n{_format_validation(err)}") from None
    if parsed.mcp_servers is None and parsed.servers is None:
        raise McpConfigError(f"{source}: no \"mcpServers\" object (the Claude Desktop / Claude Code format)")
    for name in parsed.entries():
        if not _SERVER_NAME.match(name):
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


def read_config_file(
    path: str | Path, *, environ: Mapping[str, str] | None = None, needs_approval: bool = False
) -> McpConfig:
    """Read and parse one file. Raises :class:`McpConfigError` with the path in the message."""
    p, _, data = read_config_bytes(path)
    return config_from_dict(data, source=str(p), environ=environ,
                            needs_approval=str(p.resolve()) if needs_approval else None)


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
