"""Benchmark: a 3,000-turn chat against a server holding an 8,192-token context window.

The loopback streaming server (``tests/streaming_server.py``, its own process) speaks Chat
Completions and holds the window as vLLM does: it counts each request with a tokenizer of its own
(a tenth more than cl100k, and each message's framing) and refuses a request whose prompt and
``max_tokens`` pass 8,192 tokens with HTTP 400 and vLLM's message. deferchat is told the window
(``[models."openai-chat:window-model"] context_window = 8192``, ``max_output_tokens = 512``) and
runs ``--turns`` turns of ~45 tokens each (a question, a short answer) on a small roster. Prints
one JSON object: the turns run and how many failed, the requests sent and refused, the largest
request the server counted (prompt + ``max_tokens``) against the window, the compactions by
method, the summary requests, and the client's CPU per turn (median, and the median of the turns
that compacted).

    python tests/bench/bench_window.py [--turns 3000] [--window 8192]

Target (issue 22): every request within the window, compaction shown, no request refused.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.bench.bench_long_chat import answer, question  # noqa: E402

MODEL = "window-model"
ROSTER = {
    "agent": {"name": "window", "version": "1", "deferred": []},
    "configured": [
        {
            "name": "notes.read",
            "description": "Read a note.",
            "side_effect": "WORKSPACE_READ",
            "input_schema": {"type": "object", "properties": {"note_id": {"type": "string"}}, "required": ["note_id"]},
        }
    ],
    "servers": [],
}


async def run(turns: int, window: int, base_url: str, tmp: Path) -> dict[str, Any]:
    from core import events as ev
    from core.config import ModelSettings, Settings
    from core.engine import ChatOptions, Engine
    from core.store import Store

    roster = tmp / "roster.json"
    roster.write_text(json.dumps(ROSTER))
    settings = Settings(models={f"openai-chat:{MODEL}": ModelSettings(context_window=window, max_output_tokens=512)})
    engine = Engine(store=Store(tmp / "window.db"), settings=settings)
    seen: list[Any] = []
    opts = ChatOptions(
        provider="openai-chat", model=MODEL, base_url=base_url, roster=str(roster), start_demo_servers=False
    )
    session = await engine.open_chat(None, opts, subscribers=[seen.append])
    cpu: list[float] = []
    compacting: list[float] = []
    failed = 0
    try:
        for i in range(turns):
            before = len(seen)
            start = time.process_time()
            result = await session.send(question(i))
            spent = time.process_time() - start
            failed += result.status != "done"
            (compacting if any(isinstance(e, ev.HistoryCompacted) for e in seen[before:]) else cpu).append(spent)
    finally:
        await session.close()
    done = [e for e in seen if isinstance(e, ev.HistoryCompacted)]
    usage = engine.store.events(session.chat_id, ("usage",))
    return {
        "turns": turns,
        "failed_turns": failed,
        "compactions": len(done),
        "compactions_by_method": {m: sum(1 for e in done if e.method == m) for m in ("model", "extractive", "dropped")},
        "summary_requests": sum(1 for u in usage if u.get("purpose") == "summary"),
        "last_compaction": done[-1].message if done else None,
        "turn_cpu_ms": round(statistics.median(cpu) * 1000, 1) if cpu else None,
        "compacting_turn_cpu_ms": round(statistics.median(compacting) * 1000, 1) if compacting else None,
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--turns", type=int, default=3000)
    p.add_argument("--window", type=int, default=8192)
    args = p.parse_args()
    from tests.streaming_server import read_log, serve_process

    with tempfile.TemporaryDirectory(prefix="deferchat-bench-window-") as name:
        tmp = Path(name)
        os.environ["DEFERCHAT_HOME"] = str(tmp)
        script = tmp / "script.json"
        reply = {"parts": [answer(7)]}
        script.write_text(json.dumps({"responses": [reply], "repeat": True, "context_window": args.window}))
        log = tmp / "server.jsonl"
        with serve_process(script, log=log, timeout=3600) as server:
            out = asyncio.run(run(args.turns, args.window, server.url_for("openai-chat"), tmp))
        requests = read_log(log)
    largest = max(r["prompt_tokens"] + (r["body"].get("max_tokens") or 0) for r in requests)
    out.update(
        window=args.window,
        requests=len(requests),
        refused=sum(1 for r in requests if r.get("outcome") == "refused"),
        largest_request_tokens=largest,
        load_average=os.getloadavg(),
    )
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
