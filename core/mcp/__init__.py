"""MCP: the client (stdio, streamable HTTP), the Claude-style ``mcpServers`` config, discovery.

Importing this package is cheap: the MCP SDK is imported only when a server is started.

* :mod:`core.mcp.config`: ``load_mcp_config``, ``config_from_dict``, ``McpConfig`` (the config's
  public face), from its rooms: :mod:`~core.mcp.entries` (a file as written),
  :mod:`~core.mcp.expansion` (``${VAR}``, secrets, the safe environment), :mod:`~core.mcp.resolve`
  (servers ready to start), :mod:`~core.mcp.sources` (which files, merged how).
* :mod:`core.mcp.client`: ``McpManager`` (one session's servers), from its rooms:
  :mod:`~core.mcp.server` (one server's lifecycle), :mod:`~core.mcp.transport` (its watched
  transport), :mod:`~core.mcp.sieve` (each listing read tool by tool), :mod:`~core.mcp.errors`,
  :mod:`~core.mcp.logs` (redacted log records), :mod:`~core.mcp.reports` (``ServerReport``, ``Discovery``).
* :mod:`core.mcp.discovery`: ``discover`` / ``discover_once`` / ``discover_servers`` for one-shot commands.
* :mod:`core.mcp.convert`: MCP wire JSON to ``ToolSpec`` / ``ToolResult``, and the rules a listed
  tool must meet (the rest are rejected with a reason, never dropped).
* :mod:`core.mcp.approval`: a project's ``.mcp.json`` starts nothing until the user approved
  its exact content: ``describe_config``, ``approve_config``, ``is_approved``.
"""
