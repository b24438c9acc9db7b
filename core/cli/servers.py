"""``deferchat servers``: each MCP server's status, tool count and definition tokens (live
discovery), and every tool a server listed but deferchat does not offer, with its reason.
Exit 0 when every server is ready, 1 otherwise.

With no flag it lists what the full-screen app runs: the servers of the user's and the
project's files, and the offline demo's own servers for the roster's servers no file names,
marked ``(demo)`` (``"demo": true`` in ``--json``). ``--demo`` lists the demo's alone.

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

from core.cli.exits import EXIT_FAILED, EXIT_OK
from core.display import safe


def run(args: argparse.Namespace) -> int:
    if getattr(args, "approve_project", None):
        return approve(args.approve_project)
    from core.mcp.discovery import discover_servers
    from core.roster.inputs import token_estimator

    demo: tuple[str, ...] = ()
    if args.demo:
        from core.demo import DEMO_SERVERS, demo_config

        source: Any = demo_config()
        demo = DEMO_SERVERS
    else:
        source, demo = as_the_app_runs(args.mcp_config)
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
                "demo": report.name in demo,
            }
        )
    est.flush()
    rows.sort(key=lambda r: r["demo"])  # the user's own servers first
    if args.json:
        for r in rows:
            print(json.dumps(r))
    elif not rows:
        print("no MCP servers configured (see `deferchat servers --help`)")
    else:
        width = max(8, *(len(r["status"]) for r in rows))
        print(f"{'SERVER':<24} {'STATUS':<{width}} {'TOOLS':>5} {'READS':>5} {'TOKENS':>7}  MESSAGE")
        for r in rows:
            name = safe(r["server"]) + (" (demo)" if r["demo"] else "")
            print(
                f"{name:<24} {safe(r['status']):<{width}} {r['tools']:>5} {r['reads']:>5} "
                f"{r['tokens']:>7,}  {safe(r['message'])}"
            )
            for s in r["skipped"]:
                print(f"{'':<24} skipped {safe(s['name'])}: {safe(s['reason'])}")
        if any(r["demo"] for r in rows) and not args.demo:
            print(
                "\n(demo): the offline demo's own server, which the app runs for its roster while no "
                "config of yours names a server of that name"
            )
        _describe_pending(sorted({r.needs_approval for r in discovery.servers if r.needs_approval}))
    return EXIT_OK if all(r["status"] == "ready" for r in rows) else EXIT_FAILED


def as_the_app_runs(mcp_config: str | None) -> tuple[Any, tuple[str, ...]]:
    """The servers the full-screen app's new chat starts (core.chat.servers.servers_to_start):
    the user's and the project's files (and ``mcp_config``), plus the demo's own for the
    roster's servers no file names. Returns the config and the demo's servers in it."""
    from core.chat.servers import servers_to_start
    from core.config import load_settings
    from core.mcp.config import load_mcp_config
    from core.roster.loader import load_roster

    own = load_mcp_config([mcp_config] if mcp_config else [])
    return servers_to_start(load_roster(load_settings().roster), own, start_demo=True)


def _describe_pending(files: list[str]) -> None:
    """What each unapproved file would run, so the user can decide before approving it."""
    from core.mcp.approval import describe_config
    from core.mcp.config import McpConfigError

    for file in files:
        print()
        try:
            print("\n".join(safe(line) for line in describe_config(file).lines()))
        except McpConfigError as exc:  # it changed or went away since it was read
            print(safe(f"{file}: {exc}"))


def approve(file: str) -> int:
    """Approve ``file``'s current content: print what it runs, then record the approval."""
    from core.mcp.approval import approve_config, describe_config

    summary = describe_config(file)
    approved = approve_config(file, sha256=summary.sha256)  # refused if it changed in between
    lines = approved.lines()
    print("\n".join(safe(line) for line in lines[:-1]))
    print(
        f"approved {safe(approved.path)} (sha256 {approved.sha256[:16]}): its servers start from now on; "
        "a later edit to the file asks again"
    )
    return EXIT_OK
