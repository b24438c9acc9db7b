"""A tiny stdio MCP server whose one write has a title and annotations of its own, for the
approval's view of a server's tool (its title and claims shown as the server's, never checked).

Run: ``python -m tests.mcp_servers.titled``.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

server = MCPServer("titled", log_level="WARNING")


@server.tool(
    title="Pay an invoice",
    description="Pay one invoice from the company account.",
    annotations=ToolAnnotations(
        title="Pay (annotations' title)",
        read_only_hint=False,
        destructive_hint=True,
        idempotent_hint=False,
        open_world_hint=True,
    ),
)
def pay_invoice(memo: str, invoice_id: str, payee_account: str, callback_url: str, amount: str) -> str:
    return f"paid {invoice_id}"


if __name__ == "__main__":
    server.run()
