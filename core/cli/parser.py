"""The argparse tree of the headless commands. Each subcommand's ``func`` is its module's ``run``.

Building the tree imports the command modules, which import nothing heavy at module level:
``deferchat --help`` and a mistyped flag answer at once.
"""

from __future__ import annotations

import argparse

from core.cli import approver, ask, chats, doctor, models, plan, resume, search, servers
from core.cli.options import add_plan_options, add_roster_options
from core.deferral.names import STRATEGY_CHOICES

PROG = "deferchat"
DESCRIPTION = (
    "A terminal chat client for agents with more tools than a prompt can carry. These are its headless commands."
)


def build_parser(description: str = DESCRIPTION) -> argparse.ArgumentParser:
    """The ``deferchat`` parser with every subcommand; ``command`` is None when none is given."""
    parser = argparse.ArgumentParser(prog=PROG, description=description)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    strategies = list(STRATEGY_CHOICES)
    approvals = list(approver.APPROVE_CHOICES)

    p = sub.add_parser("plan", help="print the roster plan: defined, indexed (deferred) and skipped tools")
    add_roster_options(p)
    add_plan_options(p)
    p.add_argument(
        "--strategy",
        choices=strategies,
        default=None,
        help="how deferred tools surface (default: wrapper, ADR-0123; auto resolves from --provider)",
    )
    p.add_argument("--provider", default=None, help="with --strategy auto: the provider to resolve for")
    p.add_argument("--model", default=None, help="with --strategy auto: the model to resolve for")
    p.add_argument("--base-url", default=None, help="with --strategy auto: the endpoint to resolve for")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.set_defaults(func=plan.run)

    p = sub.add_parser("ask", help="one headless turn (exit 0 done, 1 failed, 2 usage, 3 parked, 4 busy)")
    p.add_argument("prompt")
    add_roster_options(p)
    add_plan_options(p)
    p.add_argument("--provider", default=None, help="demo | script | anthropic | openai | openai-chat")
    p.add_argument("--model", default=None)
    p.add_argument("--base-url", default=None)
    p.add_argument("--script", default=None, metavar="FILE", help="replay model turns from FILE (provider script)")
    p.add_argument("--record", default=None, metavar="FILE", help="append each model request to FILE (JSON lines)")
    p.add_argument("--strategy", choices=strategies, default=None)
    p.add_argument("--chat", default=None, metavar="ID", help="continue this chat (its pinned plan is reused)")
    p.add_argument(
        "--wait",
        action="store_true",
        help="if a turn of this chat runs in another process, wait for it (default: exit 4 at once)",
    )
    p.add_argument(
        "--approve",
        choices=approvals,
        default=None,
        help="answer approvals: yes (allow once), no (deny), park (stop, exit 3); default: ask on a "
        "terminal, park otherwise",
    )
    p.add_argument("--json", action="store_true", help="print every event as one JSON line")
    ask.add_timeout_options(p)
    ask.add_switch_options(p)
    ask.add_system_option(p)
    ask.add_thinking_options(p)
    ask.add_attach_option(p)
    p.set_defaults(func=ask.run)

    p = sub.add_parser("resume", help="continue a chat's parked or interrupted turn")
    p.add_argument("chat")
    p.add_argument(
        "--wait",
        action="store_true",
        help="if a turn of this chat runs in another process, wait for it (default: exit 4 at once)",
    )
    p.add_argument("--approve", choices=approvals, default=None)
    p.add_argument("--script", default=None, metavar="FILE", help="the script file, if it moved")
    p.add_argument("--record", default=None, metavar="FILE")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=resume.run)

    p = sub.add_parser("chats", help="list, show, export, rename or delete chats")
    p.add_argument("action", nargs="?", choices=list(chats.ACTIONS))
    p.add_argument("chat_id", nargs="?")
    p.add_argument("--md", action="store_true", help="export: Markdown, with the tool calls")
    p.add_argument("--usage", action="store_true", help="show: the cost meter, per request and in total")
    p.add_argument("--output", "-o", default=None, metavar="FILE")
    p.add_argument("--title", default=None)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=chats.run)

    p = sub.add_parser("search", help="tool search as the model gets it (BM25 over SQLite FTS5)")
    p.add_argument("query", nargs="?")
    add_roster_options(p)
    p.add_argument("--tools", default=None, metavar="FILE.jsonl", help="search this catalog instead of a roster")
    p.add_argument("--queries", default=None, metavar="FILE.jsonl", help="batch: one {id, ranked} line per query")
    p.add_argument("--all", action="store_true", help="search every pinned tool, not only the deferred ones")
    p.add_argument("-k", type=int, default=5, help="how many results (default 5)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=search.run)

    p = sub.add_parser("servers", help="MCP servers: status, tool count and definition tokens")
    p.add_argument("--mcp-config", default=None, metavar="FILE", help="add this mcpServers file to the user's")
    p.add_argument("--demo", action="store_true", help="the embedded demo servers")
    p.add_argument(
        "--approve-project",
        default=None,
        metavar="FILE",
        help="approve this project MCP config (e.g. .mcp.json) as it is now: show what it runs, record it",
    )
    p.add_argument(
        "--login",
        default=None,
        metavar="NAME",
        help="sign in to remote server NAME (OAuth): print the address to open in a browser, wait for the sign-in",
    )
    p.add_argument("--logout", default=None, metavar="NAME", help="forget the stored sign-in of server NAME")
    p.add_argument(
        "--resources",
        action="store_true",
        help="list each server's resources, resource templates and prompts (what ask --attach and the app offer)",
    )
    p.add_argument(
        "--timeout",
        type=ask._seconds,
        default=300.0,
        metavar="S",
        help="with --login: seconds to wait for the sign-in to finish (default 300)",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=servers.run)

    p = sub.add_parser(
        "models", help="the models each provider reports (GET /models), with their context windows where listed"
    )
    models.add_options(p)
    p.set_defaults(func=models.run)

    p = sub.add_parser("doctor", help="check the store: integrity, schema version, files (exit 0 healthy, 1 not)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=doctor.run)
    return parser
