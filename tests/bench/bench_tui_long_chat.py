"""Benchmark: open a 2,000-message chat in the TUI and scroll back through it.

Prints one JSON object: the time to open the chat (engine reopen, history to log records,
the window of entries mounted), the time to load each older page while scrolling up, the
time to jump back to the end, and how many entries stay mounted. Runs headless and offline
(demo provider, no MCP servers) in a temporary DEFERCHAT_HOME.

    python -m tests.bench.bench_tui_long_chat [--messages 2000] [--pages 5] [--full]

``--full`` also times mounting every entry at once (what the window avoids).
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


def assistant_text(n: int) -> str:
    text = f"Answer {n}: the **plan** keeps `tool.call` defined and indexes the rest."
    if n % 10 == 1:
        text += "\n\n```python\ndef plan(tools):\n    return sorted(tools)\n```\n"
    if n % 10 == 3:
        text += "\n\n- defined first\n- then the index\n- skipped last"
    return text


async def run(messages: int, pages: int, full: bool) -> dict:
    from core.config import Settings
    from core.engine import ChatOptions, Engine
    from core.store import Store
    from tui.app import DeferchatApp
    from tui.widgets.chat_log import ChatLog

    home = Path(os.environ["DEFERCHAT_HOME"])
    engine = Engine(store=Store(home / "deferchat.db"), settings=Settings(), demo_delay=0)
    opts = ChatOptions(start_demo_servers=False)
    session = await engine.open_chat(None, opts)
    await session.close()
    store = engine.store
    with store.db.atomic():
        for n in range(messages):
            role = "user" if n % 2 == 0 else "assistant"
            text = f"Question {n}: what is deferred and why?" if role == "user" else assistant_text(n)
            store.add_message(session.chat_id, role, [{"type": "text", "text": text}], turn_id=None, parent_id=None)

    async def until(pilot, cond, timeout=120.0) -> None:
        end = time.perf_counter() + timeout
        while not cond():
            if time.perf_counter() > end:
                raise TimeoutError
            await pilot.pause(0.001)

    out: dict = {
        "messages": messages,
        "window": ChatLog.WINDOW,
        "page": ChatLog.PAGE,
        "max_mounted": ChatLog.MAX_MOUNTED,
    }
    app = DeferchatApp(engine, options=opts, open_chat=session.chat_id)
    t0 = time.perf_counter()
    async with app.run_test(size=(120, 40)) as pilot:
        log = app.log_view
        await until(pilot, lambda: len(log.items) == messages and log.mounted and not log._lock.locked())
        await pilot.pause()
        out["open_s"] = round(time.perf_counter() - t0, 3)
        out["mounted_after_open"] = len(log.query(".entry"))
        page_times = []
        for _ in range(pages):
            before = log.start
            t = time.perf_counter()
            log.scroll_home(animate=False, immediate=True)
            await until(pilot, lambda b=before: log.start < b and not log._lock.locked())
            await pilot.pause()
            page_times.append(time.perf_counter() - t)
        out["load_earlier_page_s"] = {
            "median": round(statistics.median(page_times), 3),
            "max": round(max(page_times), 3),
            "all": [round(x, 3) for x in page_times],
        }
        out["mounted_after_scrolling"] = len(log.query(".entry"))
        t = time.perf_counter()
        await log.show_tail()
        await pilot.pause()
        out["jump_to_end_s"] = round(time.perf_counter() - t, 3)
        if full:
            from tui.widgets.chat_log import widget_for

            t = time.perf_counter()
            await log.mount_all([widget_for(i) for i in log.items[: log.start]], after=log.query_one("#earlier"))
            await pilot.pause()
            out["mount_everything_s"] = round(time.perf_counter() - t, 3)
        await app.action_quit()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--pages", type=int, default=5)
    parser.add_argument("--full", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        os.environ["DEFERCHAT_HOME"] = home
        result = asyncio.run(run(args.messages, args.pages, args.full))
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
