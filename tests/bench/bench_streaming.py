"""Benchmark: stream a 4,000-token Markdown answer into the real app as fast as the server sends it.

The loopback streaming server (``tests/streaming_server.py``) answers on the OpenAI Chat
Completions wire, one token per chunk, with no delay between chunks; the app (``DeferchatApp``,
headless) reaches it through the real adapter, the engine and the event router, exactly as a
user's chat would. Prints one JSON object:

* ``tokens_per_s``: tokens rendered per second, from the message sent to the final render
  (for a naive run stopped at its limit: of what it had rendered by then, ``chars_rendered``);
* ``final_render_s``: from the message sent until the log shows the whole answer, rendered;
* ``first_text_s``: until the first words are on screen;
* ``server_send_s``: how long the server took to send the whole answer (the app's pace sets it);
* ``worst_lag_ms``: the worst event-loop lag during the stream (a probe task measures how
  late ``asyncio.sleep(0.005)`` wakes up);
* ``idle_cpu_pct``: the process's CPU time over 2 s idle after the stream, as a percentage;
* ``after_stream_collection_ms``: the collector's pause once the turn is over (it waits while a
  turn streams, then walks the turn's objects once; tui/collector.py);
* ``worst_lag_cpu_ms``: the CPU time the loop's thread spent during the worst lag (the rest of
  it is the machine's other work); ``most_cpu_in_a_sample_ms``: the most CPU time the loop's
  thread spent within any one probe sample (on an idle machine, about the worst lag plus the
  probe's 5 ms sleep);
  ``--explain`` lists the slowest loop callbacks;

for the app as it is (``streamed``) and, in the same run, for the naive way (``naive``:
re-rendering the whole Markdown on every chunk, ``markdown.update(full_text)``), and the
ratio of their times to the final render. Runs offline in a temporary DEFERCHAT_HOME.

    python tests/bench/bench_streaming.py [--tokens 4000] [--naive-limit 300] [--skip-naive]

Targets (issue 12): ``worst_lag_ms`` under 50, ``idle_cpu_pct`` near 0 (no spin), and the naive
way beaten by at least 5x. The naive run stops at ``--naive-limit`` seconds; a naive run that
did not finish reports the ratio as a lower bound (``naive.finished`` false).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

IDLE_SECONDS = 2.0
PROBE_SLEEP = 0.005
WARM_UP = "Ready."


class LagProbe:
    """How late ``asyncio.sleep(PROBE_SLEEP)`` wakes up, while it runs: every sample kept, each
    with the CPU time the loop's thread spent meanwhile (what blocked it, whatever else the
    machine was doing) and when it ended (seconds from start)."""

    def __init__(self) -> None:
        self.lags: list[float] = []
        self.cpu: list[float] = []
        self.at: list[float] = []
        self._task: asyncio.Task[None] | None = None
        self._t0 = 0.0

    async def _run(self) -> None:
        clock, cpu = time.perf_counter, time.thread_time
        while True:
            t, c = clock(), cpu()
            await asyncio.sleep(PROBE_SLEEP)
            now = clock()
            self.lags.append(now - t - PROBE_SLEEP)
            self.cpu.append(cpu() - c)
            self.at.append(now - self._t0)

    def start(self) -> None:
        self.lags, self.cpu, self.at = [], [], []
        self._t0 = time.perf_counter()
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def figures(self) -> dict[str, Any]:
        lags = sorted(self.lags) or [0.0]

        def ms(q: float) -> float:
            return round(lags[min(len(lags) - 1, int(len(lags) * q))] * 1000, 1)

        worst = max(range(len(self.lags)), key=self.lags.__getitem__) if self.lags else 0
        return {
            "worst_lag_ms": round(lags[-1] * 1000, 1),
            "lag_p50_ms": ms(0.5),
            "lag_p99_ms": ms(0.99),
            "worst_lag_cpu_ms": round(self.cpu[worst] * 1000, 1) if self.cpu else 0.0,
            "most_cpu_in_a_sample_ms": round(max(self.cpu, default=0.0) * 1000, 1),
            "worst_lag_at_s": round(self.at[worst], 2) if self.at else 0.0,
            "probe_samples": len(self.lags),
        }


class SlowCallbacks:
    """With --explain: the loop callbacks that took the most CPU time, and what they ran."""

    def __init__(self, keep: int = 8, floor: float = 0.02) -> None:
        self.keep, self.floor = keep, floor
        self.found: list[tuple[float, float, str]] = []
        self.on = False
        self._t0 = 0.0
        self._original: Any = None

    def install(self) -> None:
        import asyncio.events

        original = self._original = asyncio.events.Handle._run
        probe = self

        def run(handle: Any) -> None:
            if not probe.on:
                return original(handle)
            c = time.thread_time()
            try:
                return original(handle)
            finally:
                spent = time.thread_time() - c
                if spent > probe.floor:
                    callback = getattr(handle, "_callback", None)
                    what = repr(getattr(callback, "__self__", callback))
                    what = what.split(" coro=<")[1].split(" ")[0] if " coro=<" in what else what[:80]
                    probe.found.append((spent, time.perf_counter() - probe._t0, what))

        asyncio.events.Handle._run = run  # type: ignore[method-assign,assignment]

    def start(self) -> None:
        self.found, self._t0, self.on = [], time.perf_counter(), True

    def figures(self) -> list[dict[str, Any]]:
        self.on = False
        worst = sorted(self.found, reverse=True)[: self.keep]
        return [{"cpu_ms": round(c * 1000, 1), "at_s": round(at, 2), "what": what} for c, at, what in worst]


class CollectorPauses:
    """The longest pause of Python's cyclic collector while it is installed."""

    def __init__(self) -> None:
        import gc

        self.longest = 0.0
        self._started = 0.0
        self._gc = gc
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.longest = max(self.longest, time.perf_counter() - self._started)

    def stop(self) -> float:
        self._gc.callbacks.remove(self._callback)
        return round(self.longest * 1000, 1)


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def one_run(
    server: Any, home: Path, answer: str, limit: float, naive: bool, explain: SlowCallbacks | None = None
) -> dict[str, Any]:
    """One app: a short warm-up turn (the SDK's import and the first connection are not what is
    measured), then the long answer, measured; then 2 s idle."""
    from core.config import Settings
    from core.engine import ChatOptions, Engine
    from core.store import Store
    from tests.streaming_server import tokens as split_tokens
    from tui.app import DeferchatApp, EngineEvent
    from tui.state import AssistantItem
    from tui.widgets.answer import AssistantMessage

    mode = "naive" if naive else "streamed"
    engine = Engine(store=Store(home / f"bench-{mode}.db"), settings=Settings(), demo_delay=0)
    options = ChatOptions(
        provider="openai-chat", model="bench", base_url=server.url_for("openai-chat"), start_demo_servers=False
    )
    app = DeferchatApp(engine, options=options)
    original_write, original_absorb = AssistantMessage.write, EngineEvent.absorb

    async def naive_write(self: AssistantMessage, fragment: str) -> None:
        await self.update(self.item.text)  # the whole document, again, on every chunk

    def naive_absorb(self: EngineEvent, delta: Any) -> bool:
        return False  # every chunk a message of its own, as it came

    probe = LagProbe()
    out: dict[str, Any] = {"mode": mode}

    def answers() -> list[AssistantMessage]:
        return [
            i.widget
            for i in app.log_view.items
            if isinstance(i, AssistantItem) and isinstance(i.widget, AssistantMessage)
        ]

    def rendered(widget: AssistantMessage, text: str) -> bool:
        return (
            not app.turn_running and widget.source == text and not widget.item.streaming and not widget.lock.is_locked
        )

    try:
        async with app.run_test(size=(120, 40)) as pilot:
            while app.session is None:
                await pilot.pause(0.01)
            app.composer.text = "warm up"
            app.composer.action_send()  # not pilot.press: it waits for the app to go idle
            deadline = time.perf_counter() + 60
            while not (answers() and rendered(answers()[-1], WARM_UP)):
                if time.perf_counter() > deadline:
                    raise RuntimeError(f"the warm-up turn did not finish: {app.log_view.items!r}")
                await asyncio.sleep(0.01)
            await pilot.pause(0.2)

            if naive:
                AssistantMessage.write = naive_write  # type: ignore[method-assign]
                EngineEvent.absorb = naive_absorb  # type: ignore[method-assign]
            requests_before = len(server.requests)
            probe.start()
            if explain is not None:
                explain.start()
            cpu0 = time.process_time()
            t0 = time.perf_counter()
            app.composer.text = "write the long answer"
            app.composer.action_send()
            first_text = None
            finished = True
            while True:
                await asyncio.sleep(0.002)
                now = time.perf_counter()
                found = answers()
                widget = found[-1] if len(found) > 1 else None
                if first_text is None and widget is not None and widget.source.strip():
                    first_text = now - t0
                if widget is not None and rendered(widget, answer):
                    break
                if now - t0 > limit:
                    finished = False
                    break
                if not app.turn_running and now - t0 > 1.0 and widget is None:
                    raise RuntimeError(f"the turn ended without an answer: {app.log_view.items!r}")
            final = time.perf_counter() - t0
            cpu = time.process_time() - cpu0
            await probe.stop()
            if explain is not None:
                out["slowest_callbacks"] = explain.figures()
            AssistantMessage.write, EngineEvent.absorb = original_write, original_absorb  # type: ignore[method-assign]
            count = len(split_tokens(answer))
            shown = len(widget.source) if widget is not None else 0  # a naive run may not get there
            out.update(
                finished=finished,
                tokens=count,
                chars=len(answer),
                chars_rendered=shown,
                first_text_s=round(first_text, 3) if first_text is not None else None,
                final_render_s=round(final, 3),
                tokens_per_s=round(count * shown / len(answer) / final, 1),
                cpu_during_s=round(cpu, 2),
                **probe.figures(),
            )
            if finished:
                [*_, record] = server.wait_for(requests_before + 1, outcome=True, timeout=10)
                out["server_send_s"] = round(record["finished"] - record["received"], 3)
                out["markdown_widgets"] = len(list(widget.walk_children())) if widget is not None else 0
                # The collector resumes once the turn is over (tui/collector.py) and walks the
                # turn's objects once: that pause is after the stream, and reported on its own.
                pauses = CollectorPauses()
                deadline = time.perf_counter() + 10
                while app.collector.held and time.perf_counter() < deadline:  # noqa: ASYNC110 (polling the app)
                    await asyncio.sleep(0.01)
                await pilot.pause(0.3)  # let the last refreshes and that collection land
                out["after_stream_collection_ms"] = pauses.stop()
                wall, cpu0, rusage = time.perf_counter(), time.process_time(), cpu_seconds()
                await asyncio.sleep(IDLE_SECONDS)
                wall = time.perf_counter() - wall
                out["idle_cpu_pct"] = round((time.process_time() - cpu0) / wall * 100, 2)
                out["idle_cpu_rusage_pct"] = round((cpu_seconds() - rusage) / wall * 100, 2)
            await app.action_quit()
    finally:
        AssistantMessage.write, EngineEvent.absorb = original_write, original_absorb  # type: ignore[method-assign]
    return out


async def run(tokens: int, limit: float, skip_naive: bool, explain: bool = False) -> dict[str, Any]:
    from tests.streaming_server import markdown_answer, serve_process

    home = Path(os.environ["DEFERCHAT_HOME"])
    warm = {"parts": [{"text": WARM_UP}]}
    long = {"parts": [{"markdown": tokens, "seed": 0}], "chunk_tokens": 1, "chunk_delay": 0}
    script = home / "script.json"
    script.write_text(json.dumps({"responses": [warm, long] * 2}), encoding="utf-8")
    answer = markdown_answer(tokens, seed=0)
    # a process of its own: the server's pace is its own, and the CPU figures are the app's alone
    with serve_process(script, log=home / "server.log", timeout=limit * 2 + 300) as server:
        slow = SlowCallbacks() if explain else None
        if slow is not None:
            slow.install()
        streamed = await one_run(server, home, answer, limit, naive=False, explain=slow)
        result: dict[str, Any] = {"tokens": tokens, "wire": "openai-chat", "streamed": streamed}
        if not skip_naive:
            naive = await one_run(server, home, answer, limit, naive=True)
            result["naive"] = naive
            result["naive_over_streamed"] = round(naive["final_render_s"] / streamed["final_render_s"], 1)
            result["naive_ratio_is_lower_bound"] = not naive["finished"]
    result["targets"] = {"worst_lag_ms": "< 50", "idle_cpu_pct": "~0 (no spin)", "naive_over_streamed": ">= 5"}
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, default=4000)
    parser.add_argument(
        "--naive-limit",
        type=float,
        default=300.0,
        help="seconds after which the naive run is stopped (its ratio is then a lower bound)",
    )
    parser.add_argument("--skip-naive", action="store_true")
    parser.add_argument("--explain", action="store_true", help="also list the loop callbacks that took longest")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        os.environ["DEFERCHAT_HOME"] = home
        from tests.helpers import DEVELOPER_ENV

        for var in DEVELOPER_ENV:  # no real key or endpoint reaches the benchmark
            os.environ.pop(var, None)
        result = asyncio.run(run(args.tokens, args.naive_limit, args.skip_naive, args.explain))
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
