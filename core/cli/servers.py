"""``deferchat servers``: each MCP server's status, tool count and definition tokens (live
discovery), and every tool a server listed but deferchat does not offer, with its reason.
Exit 0 when every server is ready, 1 otherwise.

A server from a project file the user has not approved is not started: it is shown
``needs_approval``, with what that file would run. ``--approve-project FILE`` approves the
file's exact content (and prints what it approved); a later edit asks again.

Every name, message and reason in the table passes :func:`core.display.safe` (the JSON lines
are data and stay exact).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from core.cli import output
from core.cli.exits import EXIT_FAILED, EXIT_OK
from core.display import safe


def run(args: argparse.Namespace) -> int:
    if getattr(args, "approve_project", None):
        return approve(args.approve_project)
    from core.mcp.discovery import discover_servers
    from core.roster.inputs import token_estimator

    if args.demo:
        from core.demo import demo_config

        source: Any = demo_config()
    else:
        source = args.mcp_config
    discovery = discover_servers(source)
    est = token_estimator()
    by_server: dict[str, list[Any]] = {}
    for t in discovery.tools:
        by_server.setdefault(t.server or "", []).append(t)
    rows: list[dict[str, Any]] = []
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
                "skipped": [{"name": r.name, "reason": r.reason} for r in report.skipped],
            }
        )
    est.flush()
    if args.json:
        for r in rows:
            output.data(json.dumps(r))
    elif not rows:
        output.out("no MCP servers configured (see `deferchat servers --help`)")
    else:
        width = max(8, *(len(r["status"]) for r in rows))
        output.out(f"{'SERVER':<24} {'STATUS':<{width}} {'TOOLS':>5} {'READS':>5} {'TOKENS':>7}  MESSAGE")
        for r in rows:
            output.out(
                f"{safe(r['server']):<24} {safe(r['status']):<{width}} {r['tools']:>5} {r['reads']:>5} "
                f"{r['tokens']:>7,}  {safe(r['message'])}"
            )
            for s in r["skipped"]:
                output.out(f"{'':<24} skipped {safe(s['name'])}: {safe(s['reason'])}")
        _describe_pending(sorted({r.needs_approval for r in discovery.servers if r.needs_approval}))
    return EXIT_OK if all(r["status"] == "ready" for r in rows) else EXIT_FAILED


def _describe_pending(files: list[str]) -> None:
    """What each unapproved file would run, so the user can decide before approving it."""
    from core.mcp.approval import describe_config
    from core.mcp.config import McpConfigError

    for file in files:
        output.out()
        try:
            output.out("\n".join(safe(line) for line in describe_config(file).lines()))
        except McpConfigError as exc:  # it changed or went away since it was read
            output.out(safe(f"{file}: {exc}"))


def approve(file: str) -> int:
    """Approve ``file``'s current content: print what it runs, then record the approval."""
    from core.mcp.approval import approve_config, describe_config

    summary = describe_config(file)
    approved = approve_config(file, sha256=summary.sha256)  # refused if it changed in between
    lines = approved.lines()
    output.out("\n".join(safe(line) for line in lines[:-1]))
    output.out(
        f"approved {safe(approved.path)} (sha256 {approved.sha256[:16]}): its servers start from now on; "
        "a later edit to the file asks again"
    )
    return EXIT_OK
