"""``deferchat resume CHAT``: finish a chat's parked or interrupted turn (its pinned plan,
provider and script come from the chat). Exit codes as for ``ask``."""

from __future__ import annotations

import argparse

from core.cli.approver import approver_for
from core.cli.busy import check_busy
from core.cli.elicitor import elicitor_for
from core.cli.interrupt import stop_on_signals
from core.cli.options import record_file
from core.cli.printer import EventPrinter
from core.imports import bulk_import


def run(args: argparse.Namespace) -> int:
    import asyncio

    return asyncio.run(_resume(args))


async def _resume(args: argparse.Namespace) -> int:
    with bulk_import():
        from core.engine import ChatOptions, Engine

    engine = Engine()
    engine.store.require_writable()  # a turn writes: a store that cannot take it is refused before anything starts
    check_busy(engine.store, args.chat, args.wait)  # a turn of the chat runs elsewhere: exit 4 now
    session = await engine.open_chat(
        args.chat,
        ChatOptions(script=args.script, lazy_servers=True),
        approver=approver_for(args.approve),
        elicitor=elicitor_for(),
        subscribers=[EventPrinter(args.json)],
        record=record_file(args.record),
    )
    try:
        async with stop_on_signals(session) as stopper:  # ctrl+c, SIGTERM, SIGHUP stop the turn, as for ask
            result = await session.resume(wait=args.wait)
        return stopper.exit_for(result.status)
    finally:
        await session.close()
