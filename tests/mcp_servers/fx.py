"""A tiny stdio MCP server listing exactly the tools of the pydantic-ai tool-search cassettes.

``get_weather``, ``get_exchange_rate`` and ``stock_lookup`` have the cassettes' descriptions and
input schemas, byte for byte, and answer what the cassettes' client answered ("1 USD = 0.92
EUR", "Stock AAPL: $150.00"). Served through a roster as ``mcp.fx.<tool>``, a recorded
conversation can run end to end through deferchat and the requests deferchat sends can be
compared with the ones the recording's client sent.

Run: ``python -m tests.mcp_servers.fx`` (stdio). ``FX_TOOLS=a,b`` lists only those tools (a
recording's client offered a subset).
"""

from __future__ import annotations

import os
from typing import Any

TOOLS: list[dict[str, Any]] = [
    {
        "name": "get_weather",
        "description": "Get the current weather for a city.",
        "input_schema": {
            "additionalProperties": False,
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
            "type": "object",
        },
    },
    {
        "name": "get_exchange_rate",
        "description": "Look up the current exchange rate between two currencies.",
        "input_schema": {
            "additionalProperties": False,
            "properties": {"from_currency": {"type": "string"}, "to_currency": {"type": "string"}},
            "required": ["from_currency", "to_currency"],
            "type": "object",
        },
    },
    {
        "name": "stock_lookup",
        "description": "Look up stock price by ticker symbol.",
        "input_schema": {
            "additionalProperties": False,
            "properties": {"symbol": {"type": "string"}},
            "required": ["symbol"],
            "type": "object",
        },
    },
]
READ_ONLY = {"read_only_hint": True, "open_world_hint": True}


def answer(name: str, args: dict[str, Any]) -> str:
    if name == "get_weather":
        return f"Sunny, 21 C in {args.get('city')}"
    if name == "get_exchange_rate":
        rates = {("USD", "EUR"): "0.92"}
        pair = (str(args.get("from_currency")).upper(), str(args.get("to_currency")).upper())
        if pair not in rates:
            raise ValueError(f"no rate for {pair[0]}/{pair[1]}")
        return f"1 {pair[0]} = {rates[pair]} {pair[1]}"
    if name == "stock_lookup":
        return f"Stock {args.get('symbol')}: $150.00"
    raise ValueError(f"unknown tool {name}")


def build() -> Any:
    import mcp_types as types
    from mcp.server.lowlevel import Server

    wanted = [n for n in os.environ.get("FX_TOOLS", "").split(",") if n]
    listed = [t for t in TOOLS if not wanted or t["name"] in wanted]

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[types.Tool(**t, annotations=types.ToolAnnotations(**READ_ONLY)) for t in listed]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            text, error = answer(params.name, dict(params.arguments or {})), False
        except ValueError as exc:
            text, error = str(exc), True
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=error)

    return Server("fx", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    from mcp.server.stdio import stdio_server

    server = build()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    import anyio

    anyio.run(main)
