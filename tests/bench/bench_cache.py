"""Cache stability per strategy: prints JSON figures (not a timed test).

    python tests/bench/bench_cache.py

A scripted 10-turn conversation on the production roster (the offline demo model, the
built-ins and the four demo MCP servers) that needs four deferred tools: schedule.update,
schedule.pause, mcp.bland_call.start_call and email.subscriptions. For every strategy it
counts the model requests whose tools array, or whose system prefix, differs from the
request before it, and estimates tokens per request (system + tools + messages, cl100k).

Expected: wrapper and the two native strategies change neither; active-tools changes the
tools array only when a tool joins the discovery pool (a search, or a turn that starts
with history naming a deferred tool).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from core.engine import ChatOptions, Engine  # noqa: E402
from core.pipeline.approvals import Decision, FixedApprover  # noqa: E402
from core.store import Store  # noqa: E402
from core.tokens import TokenEstimator  # noqa: E402
from core.tools import canonical_json  # noqa: E402

CONVERSATION = [
    "what time is it",
    "move my 9am standup to 10am",  # deferred: schedule.update
    "list my open tasks",
    "pause the standup schedule",  # deferred: schedule.pause
    "search my work mail for invoice",
    "start a call to +1 555 0100 about the invoice",  # deferred: mcp.bland_call.start_call
    "show my newsletter subscriptions",  # deferred: email.subscriptions
    "what is on my calendar",
    "find notes about the offsite",
    "move my 10am standup to 11am",  # schedule.update again, two turns later
]
DEFERRED = {"schedule.update", "schedule.pause", "mcp.bland_call.start_call", "email.subscriptions"}


async def run(strategy: str, home: Path) -> dict:
    rec = home / f"{strategy}.jsonl"
    engine = Engine(Store(home / f"{strategy}.db"))
    session = await engine.open_chat(
        None,
        ChatOptions(roster="production", provider="demo", strategy=strategy),
        approver=FixedApprover(Decision.ALLOW_ONCE),
        record=str(rec),
    )
    reached: set[str] = set()
    session.subscribe(lambda e: reached.add(e.name) if e.type == "tool.completed" else None)
    for text in CONVERSATION:
        await session.send(text)
    await session.close()
    requests = [json.loads(line) for line in rec.read_text().splitlines()]
    est = TokenEstimator()
    tools_changed = system_changed = grew = other = 0
    prev = None
    tokens = []
    for req in requests:
        tools_json, system = canonical_json(req["tools"]), req["system"]
        if prev is not None:
            if tools_json != prev[0]:
                tools_changed += 1
                before = [t.get("name") for t in json.loads(prev[0])]
                after = [t.get("name") for t in req["tools"]]
                if after[: len(before)] == before:
                    grew += 1  # appended at the end: the cached prefix up to here still hits
                else:
                    other += 1
            system_changed += system != prev[1]
        prev = (tools_json, system)
        tokens.append(est.count(system) + est.count(tools_json) + est.count(canonical_json(req["messages"])))
    prefix = [est.count(r["system"]) + est.count(canonical_json(r["tools"])) for r in requests]
    return {
        "requests": len(requests),
        "tools_array_changes": tools_changed,
        "tools_array_appends": grew,
        "tools_array_rewrites": other,
        "system_prefix_changes": system_changed,
        "deferred_tools_reached": sorted(DEFERRED & reached),
        "tokens_per_request_mean": round(statistics.mean(tokens)),
        "prefix_tokens_first": prefix[0],
        "prefix_tokens_last": prefix[-1],
    }


async def main() -> None:
    import os

    out = {}
    with tempfile.TemporaryDirectory() as d:
        for strategy in ("wrapper", "anthropic", "openai", "active-tools"):
            home = Path(d) / strategy  # each its own demo data: a schedule the first paused is not paused for the next
            home.mkdir()
            os.environ["DEFERCHAT_HOME"] = str(home)
            out[strategy] = await run(strategy, home)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
