"""Planner benchmark: prints JSON figures (not a timed test).

    python tests/bench/bench_plan.py [--repeat N]

* plan time for 46 (production), 500, 2,000 and 10,000 tools, cold (empty token cache)
  and warm (every estimate cached), in-process; the encoding's one-off load is reported
  on its own;
* the whole ``deferchat plan --roster production`` process, with an empty and with a warm
  persistent cache, and whether it imported Textual.

Targets (issue 2): 2,000 tools under 300 ms warm and under 2 s cold; the whole process
under 0.5 s.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from core.roster.loader import load_roster  # noqa: E402
from core.roster.models import PlanInput  # noqa: E402
from core.roster.planner import plan_roster  # noqa: E402
from core.tokens import TokenEstimator, _encoding  # noqa: E402
from core.tools import Origin, SideEffect, ToolSpec  # noqa: E402

WORDS = (
    "list search get create update delete send read write fetch sync archive label thread message "
    "calendar event contact note task file folder issue comment repo branch commit deploy invoice "
    "customer order refund ticket user team channel report metric alert"
).split()


def synthetic(n: int, seed: int = 7) -> PlanInput:
    """The production roster's configured tools plus ``n - 27`` discovered tools on servers."""
    rng = random.Random(seed)
    prod = load_roster("production")
    disc = []
    for i in range(max(0, n - len(prod.configured))):
        server = f"srv{i % max(1, n // 40):03d}"
        verb, noun = rng.choice(WORDS), rng.choice(WORDS)
        params = {
            f"{rng.choice(WORDS)}_{k}": {"type": "string", "description": " ".join(rng.choices(WORDS, k=8))}
            for k in range(rng.randint(0, 5))
        }
        disc.append(
            ToolSpec(
                name=f"mcp.{server}.{verb}_{noun}_{i}",
                origin=Origin.DISCOVERED,
                server=server,
                side_effect=rng.choice(list(SideEffect)),
                description=" ".join(rng.choices(WORDS, k=rng.randint(8, 40))).capitalize() + ". More detail follows.",
                input_schema={"type": "object", "properties": params, "required": list(params)[:1]},
            )
        )
    return PlanInput(agent=prod.agent, configured=prod.configured, discovered=tuple(disc))


def timed(fn, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t)
    return statistics.median(samples) * 1000


def process_time(home: str, repeat: int) -> tuple[float, bool]:
    cmd = [
        sys.executable,
        "-c",
        "import sys; from core.cli import main; rc = main(['plan', '--roster', 'production']);"
        "sys.stderr.write('TEXTUAL' if 'textual' in sys.modules else ''); sys.exit(rc)",
    ]
    env = dict(os.environ, DEFERCHAT_HOME=home)
    samples, textual = [], False
    for _ in range(repeat):
        t = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
        samples.append(time.perf_counter() - t)
        textual |= "TEXTUAL" in r.stderr
        if r.returncode:
            raise SystemExit(r.stderr)
    return statistics.median(samples) * 1000, textual


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    t = time.perf_counter()
    _encoding()
    encoding_ms = (time.perf_counter() - t) * 1000

    figures: dict[str, object] = {"encoding_load_ms": round(encoding_ms, 1), "plan_ms": {}}
    for n in (46, 500, 2000, 10000):
        inp = synthetic(n) if n != 46 else None
        if inp is None:
            prod = load_roster("production")
            inp = PlanInput(agent=prod.agent, configured=prod.configured, discovered=prod.discovered)
        cold = timed(lambda: plan_roster(inp, TokenEstimator()), max(1, args.repeat // 2))
        warm_est = TokenEstimator()
        plan = plan_roster(inp, warm_est)
        warm = timed(lambda: plan_roster(inp, warm_est), args.repeat)
        figures["plan_ms"][str(n)] = {  # type: ignore[index]
            "cold": round(cold, 1),
            "warm": round(warm, 1),
            "defined": len(plan.defined_tool_names),
            "deferred": len(plan.deferred_tool_names),
            "skipped": len(plan.skipped_tool_names),
        }

    with tempfile.TemporaryDirectory() as home:
        cold_proc, textual_a = process_time(home, 1)
        warm_proc, textual_b = process_time(home, args.repeat)
    figures["process_ms"] = {
        "empty_cache": round(cold_proc, 1),
        "warm_cache": round(warm_proc, 1),
        "imports_textual": textual_a or textual_b,
    }
    figures["targets"] = {"plan_2000_warm_ms": 300, "plan_2000_cold_ms": 2000, "process_ms": 500}
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
