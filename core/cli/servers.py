"""``deferchat servers``: each MCP server's status, tool count and definition tokens (live
discovery), what it offers (its capabilities), its sign-in state, and every tool a server listed
but deferchat does not offer, with its reason. Exit 0 when every server is ready, 1 otherwise.

``--login NAME`` signs in to a remote server that asks for it (OAuth, :mod:`core.mcp.oauth`): it
prints the authorization page's URL, waits (``--timeout``, default 300 s) for the browser to come
back to the loopback redirect, and reports the server. It never opens a browser itself. Tokens
that still work are used without asking. ``--logout NAME`` forgets the stored sign-in.

A server from a project file the user has not approved is not started: it is shown
``needs_approval``, with what that file would run. ``--approve-project FILE`` approves the
file's exact content (and prints what it approved); a later edit asks again.

Every name, message and reason in the table passes :func:`core.display.safe` (the JSON lines
are data and stay exact).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from core.cli.exits import EXIT_FAILED, EXIT_OK
from core.display import safe


def run(args: argparse.Namespace) -> int:
    if getattr(args, "approve_project", None):
        return approve(args.approve_project)
    if getattr(args, "logout", None):
        return logout(args.logout)
    if getattr(args, "login", None):
        import asyncio

        return asyncio.run(login(args))
    if getattr(args, "resources", False):
        import asyncio

        return asyncio.run(list_offers(args))
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
                "auth": report.auth,
                "capabilities": report.capabilities,
                "skipped": [{"name": r.name, "reason": r.reason} for r in report.skipped],
            }
        )
    est.flush()
    if args.json:
        for r in rows:
            print(json.dumps(r))
    elif not rows:
        print("no MCP servers configured (see `deferchat servers --help`)")
    else:
        width = max(8, *(len(r["status"]) for r in rows))
        print(
            f"{'SERVER':<24} {'STATUS':<{width}} {'SIGN-IN':<13} {'TOOLS':>5} {'READS':>5} {'TOKENS':>7}  "
            f"{'OFFERS':<24} MESSAGE"
        )
        for r in rows:
            offers = ",".join(r["capabilities"]) or "-"
            print(
                f"{safe(r['server']):<24} {safe(r['status']):<{width}} {AUTH_WORDS[r['auth']]:<13} {r['tools']:>5} "
                f"{r['reads']:>5} {r['tokens']:>7,}  {safe(offers):<24} {safe(r['message'])}"
            )
            for s in r["skipped"]:
                print(f"{'':<24} skipped {safe(s['name'])}: {safe(s['reason'])}")
        _describe_pending(sorted({r.needs_approval for r in discovery.servers if r.needs_approval}))
    return EXIT_OK if all(r["status"] == "ready" for r in rows) else EXIT_FAILED


AUTH_WORDS = {"none": "-", "signed_in": "signed in", "needs_sign_in": "needs sign-in"}


class PrintedSignIn:
    """The headless sign-in: the authorization page's URL printed, never a browser opened."""

    def __init__(self, timeout: float):
        self.timeout = timeout

    async def show_sign_in(self, server: str, url: str) -> None:
        print(
            f"To sign in to {safe(server)}, open this address in a browser:\n\n  {safe(url)}\n\n"
            f"Waiting up to {self.timeout:g} s for the sign-in to finish (ctrl+c stops)...",
            flush=True,
        )


def _remote(name: str, source: Any) -> Any:
    """The configured remote server ``name``, or a UsageError saying why it cannot sign in."""
    from core.errors import UsageError
    from core.mcp.config import load_mcp_config

    config = load_mcp_config([source] if source else [])
    server = config.get(name)
    if server is None:
        known = ", ".join(config.names()) or "none"
        raise UsageError(f"no MCP server {name!r} is configured (configured: {known})")
    return server


async def login(args: argparse.Namespace) -> int:
    """Sign in to one remote server: print the URL, wait for the redirect, report the server."""
    from core.config import load_settings
    from core.mcp.client import McpManager
    from core.mcp.config import McpConfig
    from core.mcp.oauth.flow import SignIn

    server = _remote(args.login, args.mcp_config)
    timeout = float(args.timeout)
    manager = McpManager(McpConfig(servers=(server,)), tool_settings=load_settings().tools.model_dump())
    try:
        report = await manager.sign_in(server.name, SignIn(PrintedSignIn(timeout), timeout=timeout))
    finally:
        await manager.close()
    if report.status == "ready":
        if report.auth != "signed_in":
            print(f"{safe(server.name)}: connected (it asked for no sign-in); {safe(report.message)}")
        elif report.message.startswith("signed in; "):
            print(f"{safe(server.name)}: {safe(report.message)}")
        else:
            print(f"{safe(server.name)}: already signed in; {safe(report.message)} (--logout first to sign in anew)")
        return EXIT_OK
    print(f"deferchat: MCP server {safe(server.name)}: {safe(report.message)}", file=sys.stderr)
    return EXIT_FAILED


async def list_offers(args: argparse.Namespace) -> int:
    """Each ready server's resources, resource templates and prompts."""
    from core.config import load_settings
    from core.mcp.client import McpManager
    from core.mcp.config import load_mcp_config

    config = load_mcp_config([args.mcp_config] if args.mcp_config else [])
    async with McpManager(config, tool_settings=load_settings().tools.model_dump()) as manager:
        resources = await manager.resources()
        prompts = await manager.prompts()
        reports = manager.servers()
    if args.json:
        for r in resources:
            print(json.dumps({"kind": "template" if r.template else "resource", **r.model_dump(exclude={"template"})}))
        for p in prompts:
            print(json.dumps({"kind": "prompt", **p.model_dump()}))
    else:
        for report in reports:
            mine = [r for r in resources if r.server == report.name]
            theirs = [p for p in prompts if p.server == report.name]
            print(f"{safe(report.name)} ({safe(report.status)}): {len(mine)} resources, {len(theirs)} prompts")
            for r in mine:
                kind = "template" if r.template else "resource"
                print(
                    f"  {kind:<9} {safe(r.uri)}  {safe(r.label)}"
                    + (f": {safe(r.description, max_len=80)}" if r.description else "")
                )
            for p in theirs:
                args_ = " ".join(f"{a.name}{'' if a.required else '?'}" for a in p.arguments)
                print(
                    f"  prompt    {safe(p.command)} {safe(args_)}"
                    + (f": {safe(p.description, max_len=80)}" if p.description else "")
                )
    return EXIT_OK if all(r.status == "ready" for r in reports) else EXIT_FAILED


def logout(name: str) -> int:
    """Forget the stored sign-in of server ``name`` (its tokens and its registration)."""
    from core.mcp.oauth.flow import logout as forget
    from core.mcp.oauth.tokens import tokens_path

    if forget(name):
        print(
            f"signed out of {safe(name)}: its tokens are removed from {tokens_path()}. The server may keep the "
            "grant itself until it expires; revoke it on the server's site to end it there too."
        )
    else:
        print(f"{safe(name)}: no stored sign-in to remove")
    return EXIT_OK


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
