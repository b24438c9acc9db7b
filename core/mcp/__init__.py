"""MCP: the client (stdio, streamable HTTP), the Claude-style ``mcpServers`` config, discovery.

Importing this package is cheap: the MCP SDK is imported only when a server is started.

* :mod:`core.mcp.config`: ``load_mcp_config``, ``config_from_dict``, ``McpConfig``.
* :mod:`core.mcp.client`: ``McpManager`` (one session's servers), ``discover``.
* :mod:`core.mcp.discovery`: ``discover_once`` / ``discover_servers`` for one-shot commands.
* :mod:`core.mcp.convert`: MCP wire JSON to ``ToolSpec`` / ``ToolResult``, and the rules a listed
  tool must meet (the rest are rejected with a reason, never dropped).
* :mod:`core.mcp.approval`: a project's ``.mcp.json`` starts nothing until the user approved
  its exact content: ``describe_config``, ``approve_config``, ``is_approved``.
"""
