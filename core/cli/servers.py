"""``deferchat servers``: each MCP server's status, tool count and definition tokens (live
discovery). Exit 0 when every server is ready, 1 otherwise."""

from __future__ import annotations

import argparse
import json
from typing import Any

from core.cli.exits import EXIT_FAILED, EXIT_OK


def run(args: argparse.Namespace) -> int:
    from core.mcp.discovery import discover_servers
    from core.session import token_estimator

    if args.demo:
        from core.demo import demo_config

        source: Any = demo_config()
    else:
        source = args.mcp_config
    discovery = discover_servers(source)
    est = token_estimator()
    by_server: dict[str, list[Any]] = {}
    for t in discovery.tools:
        by_server.setdefault(t.server, []).append(t)
    rows = []
    for report in discovery.servers:
        tools = by_server.get(report.name, [])
        rows.append(
            {
                "server": report.name,
                "status": report.status,
                "tools": len(tools),
                "tokens": sum(est.definition(t) for t in tools),
                "reads": sum(1 for t in tools if t.is_read),
                "message": report.message,
            }
        )
    est.cache.flush()  # type: ignore[attr-defined]
    if args.json:
        for r in rows:
            print(json.dumps(r))
    elif not rows:
        print("no MCP servers configured (see `deferchat servers --help`)")
    else:
        print(f"{'SERVER':<24} {'STATUS':<8} {'TOOLS':>5} {'READS':>5} {'TOKENS':>7}  MESSAGE")
        for r in rows:
            print(
                f"{r['server']:<24} {r['status']:<8} {r['tools']:>5} {r['reads']:>5} {r['tokens']:>7,}  {r['message']}"
            )
    return EXIT_OK if all(r["status"] == "ready" for r in rows) else EXIT_FAILED
