"""Benchmark: what a headless ``deferchat ask --chat ID`` costs as a process, beside the SDK alone.

In a fresh ``DEFERCHAT_HOME`` with no API key, for each target a chat is made with one
``deferchat ask`` and given 50 turns of history (written straight into the store), then each
round runs, as separate processes, one after the other:

* ``ask``: ``deferchat ask --chat ID "..."`` on that chat (the installed entry point,
  ``tui.main``, with this tree on ``PYTHONPATH``);
* for a loopback provider (the streaming server, ``tests/streaming_server.py``, its own process,
  answering at once): ``import``: ``python -c "import openai"`` (or ``anthropic``), and
  ``raw_sdk``: a process that sends the body the last ``ask`` sent (read back from the server's
  log) with that SDK's own async client and reads the stream to its end.

Targets: ``demo`` (the offline demo model, the embedded roster and its demo servers: ``ask`` a
question it answers without a tool, ``ask_calling_a_server_tool`` one it answers with a demo
server's tool, which starts that server and so imports the MCP SDK),
``openai-chat`` and ``anthropic`` (loopback). Prints one JSON object: per target and process,
the median (and range) of its process time (user + system CPU of the child, from ``wait4``)
and of its wall time, in seconds, and ``ask_over_raw_sdk`` (process time). Every tree's bytecode
is written first (``compileall``), as ``bench_startup.py`` does.

    python tests/bench/bench_ask.py [--rounds 7] [--targets demo,openai-chat,anthropic]

Targets (issue 22): ``ask`` on an existing chat under 1.0 s of process time, and within 1.3x a
raw-SDK process sending the same request.
"""

from __future__ import annotations

import argparse
import json
import os
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

from tests.bench.bench_long_chat import ANSWER, fill, question  # noqa: E402

PYTHON = sys.executable
TARGETS = ("demo", "openai-chat", "anthropic")
MODELS = {"openai-chat": "bench-compat-model", "anthropic": "claude-sonnet-4-6"}
SDK = {"openai-chat": "openai", "anthropic": "anthropic"}
HISTORY_TURNS = 50
ENTRY = "import sys; from tui.main import main; sys.argv[0] = 'deferchat'; sys.exit(main())"
RAW = """
import asyncio, json, sys
wire, base_url, path = sys.argv[1:4]
body = json.load(open(path, encoding="utf-8"))
async def main():
    if wire == "anthropic":
        import anthropic
        client = anthropic.AsyncAnthropic(base_url=base_url, api_key="sk-ant-bench", max_retries=0)
        stream = await client.messages.create(**body)
    else:
        import openai
        client = openai.AsyncOpenAI(base_url=base_url, api_key="sk-bench", max_retries=0)
        stream = await client.chat.completions.create(**body)
    async for _ in stream:
        pass
    await client.close()
asyncio.run(main())
"""


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(process seconds, wall seconds, stderr) of one child run to its end; it must succeed."""
    start = time.perf_counter()
    child = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert child.stderr is not None
    err = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"{cmd[:4]}... failed ({child.returncode}):\n{err[-3000:]}")
    return usage.ru_utime + usage.ru_stime, wall, err


def environment(home: Path) -> dict[str, str]:
    drop = ("DEFERCHAT_DEMO_SERVERS", "DEFERCHAT_DEMO_DB", "XDG_CONFIG_HOME")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k not in drop}
    env.update(DEFERCHAT_HOME=str(home), PYTHONPATH=str(ROOT), TZ="UTC")
    return env


def new_chat(env: dict[str, str], flags: list[str]) -> str:
    _, _, err = timed([PYTHON, "-c", ENTRY, "ask", *flags, question(0)], env)
    marker = [line for line in err.splitlines() if line.startswith("[chat ")]
    assert marker, err
    return marker[-1].removeprefix("[chat ").rstrip("]")


def with_history(home: Path, chat_id: str) -> None:
    os.environ["DEFERCHAT_HOME"] = str(home)
    from core.store import Store

    store = Store(home / "deferchat.db")
    fill(store, chat_id, HISTORY_TURNS)
    store.db.close()


def last_body(log: Path) -> dict[str, Any]:
    from tests.bench.bench_long_chat import last_body as read

    return read(log)


def figures(samples: list[tuple[float, float]]) -> dict[str, Any]:
    cpu = [c for c, _ in samples]
    wall = [w for _, w in samples]
    return {
        "process_s": round(statistics.median(cpu), 3),
        "process_s_range": [round(min(cpu), 3), round(max(cpu), 3)],
        "wall_s": round(statistics.median(wall), 3),
    }


def run_target(target: str, rounds: int, tmp: Path) -> dict[str, Any]:
    home = tmp / f"home-{target}"
    home.mkdir()
    env = environment(home)
    samples: dict[str, list[tuple[float, float]]] = {"ask": []}
    if target == "demo":
        chat_id = new_chat(env, [])
        with_history(home, chat_id)
        samples["ask_calling_a_server_tool"] = []
        for _ in range(rounds):
            # a question the demo answers without a tool, and one it answers with a demo server's tool
            cpu, wall, _ = timed([PYTHON, "-c", ENTRY, "ask", "--chat", chat_id, "thanks, that is all"], env)
            samples["ask"].append((cpu, wall))
            cpu, wall, _ = timed([PYTHON, "-c", ENTRY, "ask", "--chat", chat_id, "any calls today?"], env)
            samples["ask_calling_a_server_tool"].append((cpu, wall))
        return {name: figures(s) for name, s in samples.items()}
    from tests.streaming_server import serve_process

    script = tmp / "script.json"
    script.write_text(json.dumps({"responses": [{"parts": [ANSWER]}], "repeat": True}))
    log = tmp / f"{target}.jsonl"
    samples.update(raw_sdk=[], sdk_import=[])
    with serve_process(script, log=log, timeout=3600) as server:
        url = server.url_for(target)
        chat_id = new_chat(env, ["--provider", target, "--model", MODELS[target], "--base-url", url])
        with_history(home, chat_id)
        body_file = tmp / f"{target}-body.json"
        for i in range(rounds):
            cpu, wall, _ = timed([PYTHON, "-c", ENTRY, "ask", "--chat", chat_id, question(100 + i)], env)
            samples["ask"].append((cpu, wall))
            body_file.write_text(json.dumps(last_body(log)), encoding="utf-8")
            cpu, wall, _ = timed([PYTHON, "-c", RAW, target, url, str(body_file)], env)
            samples["raw_sdk"].append((cpu, wall))
            cpu, wall, _ = timed([PYTHON, "-c", f"import {SDK[target]}"], env)
            samples["sdk_import"].append((cpu, wall))
    out = {name: figures(s) for name, s in samples.items()}
    out["ask_over_raw_sdk"] = round(out["ask"]["process_s"] / out["raw_sdk"]["process_s"], 2)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--targets", default=",".join(TARGETS))
    args = p.parse_args()
    subprocess.run([PYTHON, "-m", "compileall", "-q", "-j", "0", "core", "tui"], cwd=ROOT, check=True)
    out: dict[str, Any] = {"rounds": args.rounds, "history_turns": HISTORY_TURNS, "targets": {}}
    with tempfile.TemporaryDirectory(prefix="deferchat-bench-ask-") as tmp:
        for target in args.targets.split(","):
            out["targets"][target] = run_target(target, args.rounds, Path(tmp))
            print(f"{target}: {out['targets'][target]}", file=sys.stderr)
    out["load_average"] = os.getloadavg()
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
