"""``deferchat ask PROMPT``: one headless turn, in a new chat or continuing ``--chat ID``.

A continued chat whose last turn is parked or interrupted finishes that turn first; the new
prompt is sent only if it ends done. Exit codes: 0 done, 1 failed, 3 parked.
"""

from __future__ import annotations

import argparse
import sys

from core.cli.approver import approver_for
from core.cli.exits import exit_for
from core.cli.options import caps_from, policy_from
from core.cli.printer import EventPrinter


def run(args: argparse.Namespace) -> int:
    import asyncio

    return asyncio.run(_ask(args))


async def _ask(args: argparse.Namespace) -> int:
    from core.engine import ChatOptions, Engine

    engine = Engine()
    printer = EventPrinter(args.json)
    opts = ChatOptions(
        roster=args.roster,
        mcp_config=args.mcp_config,
        provider=args.provider,
        model=args.model,
        base_url=args.base_url,
        script=args.script,
        strategy=args.strategy,
        policy=policy_from(args),
        caps=caps_from(args),
    )
    session = await engine.open_chat(
        args.chat, opts, approver=approver_for(args.approve), subscribers=[printer], record=args.record
    )
    try:
        if args.chat and session.parked() is not None:
            result = await session.resume()
            if result.status != "done":
                return exit_for(result.status)
        result = await session.send(args.prompt)
        if not args.json:
            print(f"[chat {session.chat_id}]", file=sys.stderr)
        return exit_for(result.status)
    finally:
        await session.close()
