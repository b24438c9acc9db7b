"""``deferchat plan``: the roster plan, as a table or as the JSON contract.

Plans without a chat and without a model: no provider SDK, no MCP SDK unless ``--mcp-config``
asks for live discovery.
"""

from __future__ import annotations

import argparse
import sys

from core.cli.exits import EXIT_OK
from core.cli.options import caps_from, policy_from
from core.cli.printer import server_failures_to_stderr
from core.deferral.names import AUTO, WRAPPER


def run(args: argparse.Namespace) -> int:
    from core.config import Settings, load_settings
    from core.roster.inputs import build_plan_input, resolve_strategy_for, token_estimator
    from core.roster.planner import plan_roster

    requested = args.strategy or WRAPPER
    settings = load_settings() if requested == AUTO else Settings()  # only auto reads the settings
    provider, model, base_url = args.provider, args.model, args.base_url
    if requested == AUTO:  # resolved for where a chat with these flags would run: the naming rule
        from core.providers.naming import resolve_new

        target = resolve_new(settings, provider, model, base_url)
        provider, model, base_url = target.provider, target.model, target.base_url
    strategy, reason = resolve_strategy_for(requested, provider, model, base_url, settings)
    inp = build_plan_input(
        roster=args.roster,
        mcp_config=args.mcp_config,
        caps=caps_from(args),
        policy=policy_from(args),
        strategy=strategy,
        strategy_reason=reason,
        on_event=server_failures_to_stderr,
    )
    estimator = token_estimator()
    plan = plan_roster(inp, estimator)
    estimator.flush()
    if args.json:
        sys.stdout.write(plan.to_json() + "\n")
    else:
        from core.roster.report import plan_table

        sys.stdout.write(plan_table(plan))
    return EXIT_OK
