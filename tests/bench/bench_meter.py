"""Benchmark: the cost meter's figures for a 10-turn chat under each deferral strategy.

Each strategy's chat runs through the real engine, adapter and SDK against the loopback
streaming server (``tests/streaming_server.py``), on the wire that strategy is for:

* ``wrapper`` (the ADR-0123 index and ``tool.call``) and ``anthropic`` (native search) on the
  Anthropic Messages wire, as ``claude-sonnet-4-6`` (priced in the Anthropic profile);
* ``openai`` (native search) on the Responses wire, as ``gpt-5.4`` (no price: tokens only);
* ``active-tools`` on the Chat Completions wire, as a model no profile prices.

The server's usage is ``"measured"``: counted from each request (four characters a token), with
a prompt cache as the APIs keep one (the leading pieces of the prompt equal to the previous
request's are read from the cache; Anthropic writes the rest). The chat: ten turns; turns 2, 5
and 8 call a defined tool (``time.now``) and then answer; turn 3 reaches a deferred tool the
strategy's way where the scripted server can (``tool.call`` under the wrapper, ``tool.search``
then the tool under active-tools; the native strategies search on the provider's server, which
the loopback server does not run, so their turn 3 calls the defined tool); ``--system-edit N``
edits the chat's system prompt before turn N (a ``system`` prefix break). Prints one JSON
object, per strategy: requests, tokens (input uncached, output, cache read, cache write), the
cache hit ratio, cost when priced, and the prefix breaks by cause, read back from the stored
events exactly as ``deferchat chats show ID --usage --json`` reads them.

    python tests/bench/bench_meter.py [--turns 10] [--system-edit 6] [--strategy wrapper ...]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

RUNS: dict[str, dict[str, str]] = {  # strategy -> provider, model (the wire is the provider's)
    "wrapper": {"provider": "anthropic", "model": "claude-sonnet-4-6"},
    "anthropic": {"provider": "anthropic", "model": "claude-sonnet-4-6"},
    "openai": {"provider": "openai", "model": "gpt-5.4"},
    "active-tools": {"provider": "openai-chat", "model": "bench-compat"},
}
TOOL_TURNS = (2, 5, 8)
DEFERRED_TURN = 3
DEFERRED = "email.subscriptions"


def _call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    from core.providers.wirenames import readable

    return {"parts": ["Let me check.", {"tool": readable(name), "input": arguments}], "usage": "measured"}


def _answer(turn: int) -> dict[str, Any]:
    return {"parts": [f"Here is the answer to question {turn}, in a sentence or two."], "usage": "measured"}


def script(strategy: str, turns: int) -> list[dict[str, Any]]:
    """The server's responses, in order, for a ``turns``-turn chat under ``strategy``."""
    responses: list[dict[str, Any]] = []
    for turn in range(1, turns + 1):
        if turn == DEFERRED_TURN and strategy == "wrapper":
            responses.append(_call("tool.call", {"name": DEFERRED, "arguments": {"account": "all"}}))
        elif turn == DEFERRED_TURN and strategy == "active-tools":
            responses.append(_call("tool.search", {"query": "mailing list subscriptions"}))
            responses.append(_call(DEFERRED, {"account": "all"}))
        elif turn in TOOL_TURNS or turn == DEFERRED_TURN:
            responses.append(_call("time.now", {}))
        responses.append(_answer(turn))
    return responses


async def run_chat(strategy: str, home: Path, turns: int, system_edit: int) -> dict[str, Any]:
    from core.chat.meter import chat_usage
    from core.config import Settings
    from core.engine import ChatOptions, Engine
    from core.pipeline.approvals import Decision, FixedApprover
    from core.store import Store
    from tests.streaming_server import StreamingServer

    run = RUNS[strategy]
    with StreamingServer(script(strategy, turns)) as server:
        engine = Engine(store=Store(home / f"bench-{strategy}.db"), settings=Settings(), demo_delay=0)
        options = ChatOptions(
            provider=run["provider"],
            model=run["model"],
            base_url=server.url_for(run["provider"]),
            strategy=strategy,
            start_demo_servers=False,
        )
        session = await engine.open_chat(None, options, approver=FixedApprover(Decision.ALLOW_ONCE))
        statuses = []
        try:
            for turn in range(1, turns + 1):
                if turn == system_edit:
                    session.prompt.set(f"From now on, answer in at most {turn} sentences.")
                result = await session.send(f"Question {turn}: what should I know about today?")
                statuses.append(result.status)
        finally:
            await session.close()
        usage = chat_usage(engine.store, session.chat_id)
    totals = usage.totals.to_json()
    return {
        "provider": run["provider"],
        "model": run["model"],
        "turns": turns,
        "turn_status": sorted(set(statuses)),
        "requests": totals["requests"],
        "tokens": {
            "input": totals["input_tokens"],
            "output": totals["output_tokens"],
            "cache_read": totals["cache_read_input_tokens"],
            "cache_write": totals["cache_creation_input_tokens"],
        },
        "cache_hits": sum(1 for r in usage.requests if r.cache_read),
        "cache_hit_ratio": round(totals["cache_hit_ratio"] or 0.0, 4),
        "cost_usd": None if totals["cost_usd"] is None else round(totals["cost_usd"], 6),
        "unpriced_requests": totals["unpriced_requests"],
        "prefix_breaks": totals["prefix_breaks"],
        "break_details": [f"#{r.n} {c}: {d}" for r in usage.requests for c, d in r.breaks],
    }


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {"turns": args.turns, "system_edit_before_turn": args.system_edit or None}
    with tempfile.TemporaryDirectory(prefix="deferchat-bench-meter-") as tmp:
        home = Path(tmp)
        os.environ["DEFERCHAT_HOME"] = str(home)
        os.environ.setdefault("ANTHROPIC_API_KEY", "sk-ant-loopback")  # the loopback server takes any key
        os.environ.setdefault("OPENAI_API_KEY", "sk-loopback")
        out["strategies"] = {s: await run_chat(s, home, args.turns, args.system_edit) for s in args.strategy}
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--turns", type=int, default=10)
    p.add_argument("--system-edit", type=int, default=0, metavar="N", help="edit the system prompt before turn N")
    p.add_argument("--strategy", nargs="+", choices=list(RUNS), default=list(RUNS))
    args = p.parse_args(argv)
    print(json.dumps(asyncio.run(main_async(args)), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
