"""The ``deferchat`` command: the TUI by default, and headless subcommands.

Subcommands import only what they use; ``plan``, ``ask`` and ``search`` never import Textual.
Exit codes: 0 done, 1 failed, 2 usage, 3 parked on an approval.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_PARKED = 0, 1, 2, 3


# --- plan -----------------------------------------------------------------------------------------


def _add_roster_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--roster", default=None, metavar="NAME|FILE",
                   help="a named roster (production) or a roster JSON file (default: production)")
    p.add_argument("--mcp-config", default=None, metavar="FILE",
                   help="an mcpServers JSON file; its servers are discovered live and merged")


def _add_plan_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--policy", choices=["overflow", "threshold"], default=None,
                   help="which tools are deferred (default: overflow, ADR-0123)")
    p.add_argument("--per-server", type=int, default=None, metavar="N",
                   help="threshold policy: a server with more than N MCP tools defers them (default 10)")
    p.add_argument("--aggregate", type=int, default=None, metavar="N",
                   help="threshold policy: more than N MCP tools in all defers every one (default 30)")
    p.add_argument("--max-definitions", type=int, default=None, metavar="N", help="definition cap (default 30)")
    p.add_argument("--max-definition-tokens", type=int, default=None, metavar="N",
                   help="definition token cap (default 9000)")
    p.add_argument("--max-index-entries", type=int, default=None, metavar="N", help="index entry cap (default 40)")
    p.add_argument("--max-index-tokens", type=int, default=None, metavar="N", help="index token cap (default 2000)")


def _caps_from(args: argparse.Namespace) -> Any:
    from core.roster.models import Caps

    fields = {k: getattr(args, k) for k in ("max_definitions", "max_definition_tokens",
                                             "max_index_entries", "max_index_tokens")
              if getattr(args, k, None) is not None}
    return Caps(**fields)


def _policy_from(args: argparse.Namespace) -> Any:
    from core.roster.models import PolicyConfig

    fields: dict[str, Any] = {}
    if args.policy:
        fields["name"] = args.policy
    if args.per_server is not None:
        fields["per_server"] = args.per_server
    if args.aggregate is not None:
        fields["aggregate"] = args.aggregate
    return PolicyConfig(**fields)


def cmd_plan(args: argparse.Namespace) -> int:
    from core.session import build_plan_input, resolve_strategy_for
    from core.roster.planner import plan_roster

    strategy, reason = resolve_strategy_for(args.strategy or "wrapper", args.provider, args.model, args.base_url)
    inp = build_plan_input(roster=args.roster, mcp_config=args.mcp_config, caps=_caps_from(args),
                           policy=_policy_from(args), strategy=strategy, strategy_reason=reason,
                           on_event=_stderr_server_status)
    from core.session import token_estimator

    estimator = token_estimator()
    plan = plan_roster(inp, estimator)
    estimator.cache.flush()  # type: ignore[attr-defined]
    if args.json:
        sys.stdout.write(plan.to_json() + "\n")
    else:
        from core.roster.report import plan_table

        sys.stdout.write(plan_table(plan))
    return EXIT_OK


def _stderr_server_status(event: Any) -> None:
    if getattr(event, "type", "") == "server.status" and event.status == "failed":
        print(f"deferchat: MCP server {event.server} failed: {event.message}", file=sys.stderr)


# --- parser ---------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="deferchat",
        description="A terminal chat client for agents with more tools than a prompt can carry. "
                    "With no subcommand it opens the full-screen chat.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("plan", help="print the roster plan: defined, indexed (deferred) and skipped tools")
    _add_roster_options(p)
    _add_plan_options(p)
    p.add_argument("--strategy", choices=["wrapper", "anthropic", "openai", "active-tools", "auto"], default=None,
                   help="how deferred tools surface (default: wrapper, ADR-0123; auto resolves from --provider)")
    p.add_argument("--provider", default=None, help="with --strategy auto: the provider to resolve for")
    p.add_argument("--model", default=None, help="with --strategy auto: the model to resolve for")
    p.add_argument("--base-url", default=None, help="with --strategy auto: the endpoint to resolve for")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.set_defaults(func=cmd_plan)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors and 0 on --help
        return int(exc.code or 0)
    if args.command is None:
        from core.app_entry import run_tui

        return run_tui(args)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a clear message, not a traceback, for expected failures
        from core.errors import UserFacingError

        if isinstance(exc, UserFacingError):
            print(f"deferchat: {exc}", file=sys.stderr)
            return EXIT_USAGE if exc.usage else EXIT_FAILED
        raise


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
