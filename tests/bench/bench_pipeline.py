"""Pipeline overhead per call: everything except the tool itself. Prints JSON figures.

    python tests/bench/bench_pipeline.py [--calls N]

Each call goes through unwrap, resolution, jsonschema validation, classification, policy,
hardline rules, (approval and its preview,) idempotency, the invocation row and its events, on
a real SQLite store in WAL mode on disk; the tool is a no-op. Target (issue 3): under 2 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from core.pipeline.approvals import Decision, FixedApprover
from core.pipeline.pipeline import Pipeline, RunContext
from core.pipeline.policy import default_policy
from core.roster.loader import load_roster
from core.roster.models import PlanInput
from core.roster.planner import plan_roster
from core.store import Store
from core.tools import ToolResult


async def measure(calls: int, name: str, arguments: dict, via_wrapper: bool, *, described: bool = False) -> dict:
    with tempfile.TemporaryDirectory() as d:
        store = Store(Path(d) / "bench.db")
        store.db["schedules"].insert(
            {"title": "Team standup", "time": "09:00", "days": '["mon"]', "status": "active", "demo": 0}
        )
        r = load_roster("production")
        plan = plan_roster(PlanInput(agent=r.agent, configured=r.configured, discovered=r.discovered))
        chat = store.create_chat(title="bench", provider="demo", model="demo", strategy="wrapper")
        result = ToolResult.of_json({"ok": True})

        class Host:  # the pipeline's ToolHost: a no-op tool
            async def run(self, spec, args, call_id):
                return result

            def live_pin(self, name):
                return None

        class DescribingHost(Host):  # and the approval's preview, as a chat's router builds it
            def describe(self, spec, args, call_id, kinds):
                from core.builtins import ToolContext, builtin_tool

                context = ToolContext(db=store.db, chat_id=chat, call_id=call_id, workspace=Path(d))
                return builtin_tool(spec.name).describe(args, context)

        ctx = RunContext(
            chat_id=chat,
            turn_id="turn",
            store=store,
            plan=plan,
            policy=default_policy(),
            approver=FixedApprover(Decision.ALLOW_ONCE),
            tools=DescribingHost() if described else Host(),
            emit=lambda e: None,
        )
        pipe = Pipeline(ctx)
        samples = []
        for i in range(calls):
            block = (
                {
                    "type": "tool_use",
                    "id": f"c{i}",
                    "name": "tool.call",
                    "input": {"name": name, "arguments": arguments},
                }
                if via_wrapper
                else {"type": "tool_use", "id": f"c{i}", "name": name, "input": arguments}
            )
            t = time.perf_counter()
            out = await pipe.run(block)
            samples.append((time.perf_counter() - t) * 1000)
            assert out.status == "completed", out
        samples.sort()
        return {
            "calls": calls,
            "mean_ms": round(statistics.mean(samples), 3),
            "p50_ms": round(samples[len(samples) // 2], 3),
            "p95_ms": round(samples[int(len(samples) * 0.95)], 3),
        }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=500)
    a = ap.parse_args()
    figures = {
        "read_direct": asyncio.run(measure(a.calls, "mcp.gmail_work.search_threads", {"query": "from:alice"}, False)),
        "write_via_tool_call_with_approval": asyncio.run(
            measure(a.calls, "schedule.update", {"schedule_id": "sch_1", "time": "10:00"}, True)
        ),
        # the same, its approval's preview built by the built-in's hook (the schedule looked up)
        "write_via_tool_call_with_described_approval": asyncio.run(
            measure(a.calls, "schedule.update", {"schedule_id": "sch_1", "time": "10:00"}, True, described=True)
        ),
        "target_ms": 2.0,
    }
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
