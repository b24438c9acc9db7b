"""MCP server configuration: the ``mcpServers`` JSON that Claude Desktop and Claude Code use.

One entry per server::

    {"mcpServers": {
        "time":   {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}},
        "github": {"type": "http", "url": "https://example.invalid/mcp",
                   "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}, "timeout": 20}}}

Keys: ``command``, ``args``, ``env``, ``cwd`` (stdio); ``url``, ``headers`` (HTTP); optional
``type`` (``stdio`` | ``http`` | ``streamable-http`` | ``sse``; inferred from ``command``/``url``
when absent), ``timeout`` (seconds to start: connect, handshake and first tool listing),
``call_timeout`` (seconds per tool call), ``disabled`` and ``alwaysLoad`` (Claude Code's key:
``true`` pins every tool of the server in a plan, ranked first and never deferred; see
:func:`always_load_servers`). Unknown keys are ignored, so a Claude Desktop or Claude Code
file works as it is.

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

This module is the config's public face: the names callers import, from the rooms that hold them,

* :mod:`core.mcp.entries`: a file as written (``ServerEntry``, ``read_config_bytes``, ``parse_config_document``);
* :mod:`core.mcp.expansion`: ``${VAR}`` expansion, secrets and their redaction, the safe environment;
* :mod:`core.mcp.resolve`: servers ready to start (``McpServerConfig``, ``McpConfig``, ``config_from_dict``);
* :mod:`core.mcp.sources`: where the files are and how they merge (``load_mcp_config``).

None of them imports the MCP SDK: ``deferchat plan`` must stay quick.
"""

from core.mcp.entries import (
    ConfigFile,
    McpConfigError,
    ServerEntry,
    Transport,
    parse_config_document,
    read_config_bytes,
)
from core.mcp.expansion import MIN_SECRET_LEN, SAFE_ENV_VARS, VAR_RE, expand, redact, safe_environment
from core.mcp.resolve import (
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_START_TIMEOUT,
    Endpoint,
    McpConfig,
    McpServerConfig,
    config_from_dict,
    read_config_file,
    resolve_entry,
)
from core.mcp.sources import PROJECT_FILE, USER_FILE, load_mcp_config, project_config_path, user_config_path


def always_load_servers(config: McpConfig) -> tuple[str, ...]:
    """The servers whose entry says ``"alwaysLoad": true``, by name: a plan pins their tools."""
    return tuple(s.name for s in config.servers if s.always_load)


__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_START_TIMEOUT",
    "MIN_SECRET_LEN",
    "PROJECT_FILE",
    "SAFE_ENV_VARS",
    "USER_FILE",
    "VAR_RE",
    "ConfigFile",
    "Endpoint",
    "McpConfig",
    "McpConfigError",
    "McpServerConfig",
    "ServerEntry",
    "Transport",
    "always_load_servers",
    "config_from_dict",
    "expand",
    "load_mcp_config",
    "parse_config_document",
    "project_config_path",
    "read_config_bytes",
    "read_config_file",
    "redact",
    "resolve_entry",
    "safe_environment",
    "user_config_path",
]
