"""Benchmark: what one turn costs the client as the chat grows, on each wire, beside the raw SDK.

For each wire (``anthropic``: Messages; ``openai``: Responses; ``openai-chat``: Chat Completions)
and each history length (10 / 100 / 300 / 1,000 / 3,000 turns by default), a child process opens
a chat whose store already holds that many turns (a question and an answer each, ~35 tokens a
turn, written straight into the store), reopens it as ``deferchat ask --chat`` would, runs one
turn to warm up, then ``--rounds`` turns, each against the loopback streaming server
(``tests/streaming_server.py``, its own process, answering at once). Per turn it measures the
client's CPU (``time.process_time``: every thread of the process: the engine, the store, the
adapter, the SDK) and, in the same round, the **raw SDK** sending the very body that turn sent
(read back from the server's log) with its own ``create(**body)`` and reading the stream to its
end: what the SDK alone costs for that JSON. Prints one JSON object::

    {"turns": [10, 100, ...], "rounds": 7,
     "wires": {"anthropic": {"10": {"turn_cpu_ms": ..., "raw_sdk_cpu_ms": ..., "body_kb": ...,
                                    "rss_mb": ...}, ...},
               ...},
     "ratios": {"anthropic": {"turn_1000_over_10": ..., "turn_over_raw_sdk_1000": ...}, ...}}

``turn_cpu_ms`` and ``raw_sdk_cpu_ms`` are medians over the rounds; ``rss_mb`` is the child's
resident memory after its rounds (``rss_peak_mb`` its peak). The models get a context window
large enough that no history here is summarised (``[models."provider:model"]`` in the settings,
where this tree knows that key), so the figures are the per-turn cost alone.

    python tests/bench/bench_long_chat.py [--turns 10,100,300,1000,3000] [--wires anthropic,openai,openai-chat]
                                          [--rounds 7]

Targets (issue 22): at 1,000 turns a turn costs within 1.5x of the same chat at 10 turns, and
less than the raw SDK's own request CPU for the same body. Ratios come from one run; other work
on the machine slows every figure alike, so check ``uptime`` and rerun when it is busy.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

WIRES = ("anthropic", "openai", "openai-chat")
MODELS = {"anthropic": "claude-sonnet-4-6", "openai": "gpt-5.4", "openai-chat": "bench-compat-model"}
DEFAULT_TURNS = (10, 100, 300, 1000, 3000)
ANSWER = "Noted: the figures for that week are in the second sheet, under the totals."
_WORDS = [
    "north",
    "river",
    "ledger",
    "quarter",
    "invoice",
    "garden",
    "harbour",
    "signal",
    "meadow",
    "lantern",
    "copper",
]


def question(i: int) -> str:
    w = _WORDS
    return f"Turn {i}: what changed in the {w[i % 11]} {w[(i * 7) % 11]} report since {w[(i * 3) % 11]}?"


def answer(i: int) -> str:
    return f"For turn {i}, the {_WORDS[(i * 5) % 11]} totals moved a little; nothing else changed."


def fill(store: Any, chat_id: str, turns: int) -> None:
    """``turns`` question-and-answer pairs written straight into the store, one transaction."""
    from core.store.ids import new_id

    rows = []
    parent = None
    t = time.time() - turns * 2
    for i in range(turns):
        for role, text in (("user", question(i)), ("assistant", answer(i))):
            msg_id = new_id("msg")
            content = json.dumps([{"type": "text", "text": text}], ensure_ascii=False, separators=(",", ":"))
            rows.append((msg_id, chat_id, parent, None, role, content, t))
            parent, t = msg_id, t + 0.5
    with store.db.conn:
        store.db.conn.executemany(
            "insert into messages (id, chat_id, parent_id, turn_id, role, content, created_at) "
            "values (?, ?, ?, ?, ?, ?, ?)",
            rows,
        )


def settings_for(wire: str) -> Any:
    from core.config import Settings

    fields: dict[str, Any] = {}
    if "models" in Settings.model_fields:  # a tree that reads each model's window from config.toml
        fields["models"] = {f"{wire}:{MODELS[wire]}": {"context_window": 4_000_000}}
    return Settings(**fields)


def last_body(log: Path) -> dict[str, Any]:
    last = None
    with log.open(encoding="utf-8") as f:
        for line in f:
            if line.startswith('{"kind": "request"'):
                last = line
    assert last is not None, "the server logged no request"
    body: dict[str, Any] = json.loads(last)["body"]
    return body


def raw_client(wire: str, base_url: str) -> Any:
    """The raw SDK's client, made once and kept (as the adapter keeps its own)."""
    if wire == "anthropic":
        import anthropic

        return anthropic.AsyncAnthropic(base_url=base_url, api_key="sk-ant-bench", max_retries=0)
    import openai

    return openai.AsyncOpenAI(base_url=base_url, api_key="sk-bench", max_retries=0)


async def raw_sdk(wire: str, client: Any, body: dict[str, Any]) -> float:
    """CPU seconds the raw SDK spends sending ``body`` (its own create) and reading the stream."""
    start = time.process_time()
    if wire == "anthropic":
        stream = await client.messages.create(**body)
    else:
        make = client.responses.create if wire == "openai" else client.chat.completions.create
        stream = await make(**body)
    async for _ in stream:
        pass
    return time.process_time() - start


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return round(pages * os.sysconf("SC_PAGE_SIZE") / 2**20, 1)


async def one(wire: str, turns: int, rounds: int, base_url: str, log: Path) -> dict[str, Any]:
    """One wire at one length, in this (child) process."""
    from core.engine import ChatOptions, Engine
    from core.pipeline.approvals import Decision, FixedApprover
    from core.store import Store

    engine = Engine(store=Store(Path(os.environ["DEFERCHAT_HOME"]) / "bench.db"), settings=settings_for(wire))
    opts = ChatOptions(provider=wire, model=MODELS[wire], base_url=base_url, start_demo_servers=False)
    session = await engine.open_chat(None, opts, approver=FixedApprover(Decision.ALLOW_ONCE))
    chat_id = session.chat_id
    await session.close()
    fill(engine.store, chat_id, turns)
    session = await engine.open_chat(chat_id, ChatOptions(), approver=FixedApprover(Decision.ALLOW_ONCE))
    ours: list[float] = []
    raw: list[float] = []
    size = 0
    client = raw_client(wire, base_url)
    try:
        for i in range(rounds + 1):
            start = time.process_time()
            result = await session.send(question(turns + i))
            spent = time.process_time() - start
            assert result.status == "done", result
            body = last_body(log)
            size = len(json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode())
            raw_spent = await raw_sdk(wire, client, body)
            if i:  # the first is the warm-up
                ours.append(spent)
                raw.append(raw_spent)
    finally:
        await session.close()
        await client.close()
    return {
        "turn_cpu_ms": round(statistics.median(ours) * 1000, 1),
        "turn_cpu_ms_range": [round(min(ours) * 1000, 1), round(max(ours) * 1000, 1)],
        "raw_sdk_cpu_ms": round(statistics.median(raw) * 1000, 1),
        "body_kb": round(size / 1024, 1),
        "rss_mb": rss_mb(),
        "rss_peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def child(args: argparse.Namespace) -> int:
    figures = asyncio.run(one(args.wire, args.one, args.rounds, args.base_url, Path(args.log)))
    print(json.dumps(figures))
    return 0


def parent(args: argparse.Namespace) -> int:
    from tests.streaming_server import serve_process

    turns = [int(t) for t in args.turns.split(",")]
    wires = [w for w in args.wires.split(",") if w]
    out: dict[str, Any] = {"turns": turns, "rounds": args.rounds, "wires": {}, "ratios": {}}
    with tempfile.TemporaryDirectory(prefix="deferchat-bench-long-") as tmp:
        script = Path(tmp) / "script.json"
        script.write_text(json.dumps({"responses": [{"parts": [ANSWER]}], "repeat": True}))
        for wire in wires:
            out["wires"][wire] = {}
            for n in turns:
                log = Path(tmp) / f"{wire}-{n}.jsonl"
                home = Path(tmp) / f"home-{wire}-{n}"
                home.mkdir()
                with serve_process(script, log=log, timeout=3600) as server:
                    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
                    env.update(
                        DEFERCHAT_HOME=str(home),
                        PYTHONPATH=str(ROOT),
                        ANTHROPIC_API_KEY="sk-ant-bench",
                        OPENAI_API_KEY="sk-bench",
                        TZ="UTC",
                    )
                    cmd = [sys.executable, __file__, "--one", str(n), "--wire", wire, "--rounds", str(args.rounds)]
                    cmd += ["--base-url", server.url_for(wire), "--log", str(log)]
                    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3600)
                if done.returncode != 0:
                    raise SystemExit(f"{wire} at {n} turns failed:\n{done.stderr[-3000:]}")
                out["wires"][wire][str(n)] = json.loads(done.stdout.strip().splitlines()[-1])
                print(f"{wire} {n}: {out['wires'][wire][str(n)]}", file=sys.stderr)
            figures = out["wires"][wire]
            ratios: dict[str, float] = {}
            if "10" in figures:
                for n in turns:
                    if n != 10:
                        ratios[f"turn_{n}_over_10"] = round(
                            figures[str(n)]["turn_cpu_ms"] / figures["10"]["turn_cpu_ms"], 2
                        )
            for n in turns:
                ratios[f"turn_over_raw_sdk_{n}"] = round(
                    figures[str(n)]["turn_cpu_ms"] / max(figures[str(n)]["raw_sdk_cpu_ms"], 0.001), 2
                )
            out["ratios"][wire] = ratios
    out["load_average"] = os.getloadavg()
    print(json.dumps(out, indent=1))
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--turns", default=",".join(map(str, DEFAULT_TURNS)))
    p.add_argument("--wires", default=",".join(WIRES))
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--one", type=int, help=argparse.SUPPRESS)  # the child: one length
    p.add_argument("--wire", help=argparse.SUPPRESS)
    p.add_argument("--base-url", help=argparse.SUPPRESS)
    p.add_argument("--log", help=argparse.SUPPRESS)
    args = p.parse_args()
    return child(args) if args.one is not None else parent(args)


if __name__ == "__main__":
    sys.exit(main())
