"""Start-up figures on the embedded default (no API key: the demo model, the production roster,
the four demo MCP servers), printed as JSON, this tree beside an earlier one in the same run.

Run: python tests/bench/bench_startup.py [--rounds 5] [--baseline 2e360ad] [--process]

For each tree and round, with a fresh ``DEFERCHAT_HOME`` and no API key in the environment:

* ``deferchat`` in a real terminal (tmux, 120x40), its screen read every 20 ms: launch to the
  first paint (the first capture that is not blank), launch to the roster reading
  "30 defined" (a plan preview, where the tree shows one while the servers start) and launch
  to the chat being open (the roster titled "pinned plan (new)": servers listed, plan
  pinned). Twice on the same home: ``fresh`` (the first launch seeds the demo database and
  the token cache) and ``again`` (the second);
* a headless open: a process that opens a new chat through the engine (``Engine().open_chat``,
  the servers started and listed, the plan pinned) and exits, timed from its launch to the
  chat being open, fresh and again as above.

Every tree's bytecode is written before it is measured (``compileall``), so each launch runs as
an installed deferchat does whatever ``PYTHONDONTWRITEBYTECODE`` says. The baseline is the
earlier commit checked out into a temporary ``git worktree`` (removed at the end), run with this
venv; ``--process`` adds this tree with ``DEFERCHAT_DEMO_SERVERS=process``
(the demo servers as processes on stdio). Rounds interleave the trees, so a busy machine slows
them alike. Figures are medians (and the range) over the rounds, in seconds.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
COLS, ROWS = 120, 40
POLL = 0.02
TIMEOUT = 60.0
ROSTER_TEXT = "30 defined"
OPEN_TEXT = "pinned plan (new)"  # the roster's title once the new chat's plan is pinned
LAUNCHES = itertools.count()

APP = "import sys; from tui.main import main; sys.argv[0] = 'deferchat'; sys.exit(main())"
OPEN = """
import asyncio, os, sys, time
from core.engine import ChatOptions, Engine
async def main():
    engine = Engine()
    session = await engine.open_chat(None, ChatOptions())
    opened = time.time()
    ready = sorted(s.server for s in session.server_status.values() if s.status == "ready")
    await session.close()
    import core
    print(opened, ",".join(ready), os.path.dirname(os.path.dirname(core.__file__)))
asyncio.run(main())
"""


@dataclass
class Variant:
    name: str
    tree: Path
    env: dict[str, str] = field(default_factory=dict)


def clean_env(tree: Path, home: Path, extra: dict[str, str]) -> dict[str, str]:
    """Ours without API keys or terminal sizes, the tree on PYTHONPATH, the home fresh."""
    drop = ("COLUMNS", "LINES", "TMUX", "DEFERCHAT_DEMO_SERVERS", "DEFERCHAT_DEMO_DB", "XDG_CONFIG_HOME")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k not in drop}
    env.update(DEFERCHAT_HOME=str(home), PYTHONPATH=str(tree), TZ="UTC", **extra)
    return env


def tmux_launch(variant: Variant, home: Path, work: Path) -> dict[str, float | None]:
    """Launch to first paint, to the roster reading "30 defined" and to the chat open, from tmux's screen."""
    socket = f"bench-startup-{os.getpid()}-{next(LAUNCHES)}"  # a server of its own: the last may still be going
    env = clean_env(variant.tree, home, variant.env)

    def tmux(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["tmux", "-L", socket, *args], capture_output=True, text=True, env=env, timeout=30)

    began = time.monotonic()
    tmux("-f", os.devnull, "new-session", "-d", "-s", "b", "-x", str(COLS), "-y", str(ROWS), "-c", str(work),
         PYTHON, "-c", APP)  # fmt: skip
    paint = roster = opened = None
    screen = ""
    try:
        while time.monotonic() - began < TIMEOUT:
            screen = tmux("capture-pane", "-p", "-t", "b").stdout
            now = time.monotonic() - began
            if paint is None and screen.strip():
                paint = now
            if roster is None and ROSTER_TEXT in screen:
                roster = now
            if OPEN_TEXT in screen:
                opened = now
                break
            time.sleep(POLL)
    finally:
        tmux("kill-server")
        gone(home)
    if opened is None:
        sys.stderr.write(f"{variant.name}: no {OPEN_TEXT!r} within {TIMEOUT:g}s; the screen was:\n{screen}\n")
    roster = roster if roster is not None else opened  # both on the screen in one capture
    return {"first_paint": paint, "roster": roster, "chat_open": opened}


def gone(home: Path, timeout: float = 20.0) -> None:
    """Wait until no process runs with this home (the app, and any demo server it started as a
    process: those get a clean environment but ``--db <home>/demo.sqlite``), so the next launch
    does not share the machine with this one's leftovers."""
    needle = str(home).encode()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(needle in seen for seen in _processes()):
        time.sleep(0.05)


def _processes() -> list[bytes]:
    """Every other process's environment and command line (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                found.append((entry / "environ").read_bytes() + b"\0" + (entry / "cmdline").read_bytes())
            except OSError:
                continue
    return found


def headless_open(variant: Variant, home: Path, work: Path) -> float | None:
    """Launch of a process to its new chat being open (servers listed, plan pinned)."""
    env = clean_env(variant.tree, home, variant.env)
    began = time.time()
    run = subprocess.run([PYTHON, "-c", OPEN], capture_output=True, text=True, env=env, cwd=work, timeout=TIMEOUT)
    gone(home)
    if run.returncode != 0:
        sys.stderr.write(f"{variant.name}: the headless open failed:\n{run.stderr[-2000:]}\n")
        return None
    opened, ready, tree = run.stdout.split()
    assert Path(tree) == variant.tree, (tree, variant.tree)  # this tree's code ran, not the installed one
    if ready != "bland_call,bland_read,gmail_personal,gmail_work":  # counted as failed, not timed
        sys.stderr.write(f"{variant.name}: the headless open had only {ready} ready:\n{run.stderr[-2000:]}\n")
        return None
    return float(opened) - began


def summary(values: list[float | None]) -> dict[str, Any]:
    got = [v for v in values if v is not None]
    if not got:
        return {"median": None, "failed": len(values)}
    out: dict[str, Any] = {
        "median": round(statistics.median(got), 3),
        "range": [round(min(got), 3), round(max(got), 3)],
    }
    if len(got) < len(values):
        out["failed"] = len(values) - len(got)
    return out


def measure(variants: list[Variant], rounds: int) -> dict[str, dict[str, dict[str, Any]]]:
    figures: dict[str, dict[str, list[float | None]]] = {v.name: {} for v in variants}
    for _ in range(rounds):
        for v in variants:
            with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
                work, home = Path(tmp) / "work", Path(tmp) / "home"
                work.mkdir()  # no .mcp.json here: no approval dialog
                for when in ("fresh", "again"):
                    for key, value in tmux_launch(v, home, work).items():
                        figures[v.name].setdefault(f"tui_{key}_{when}", []).append(value)
            with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
                work, home = Path(tmp) / "work", Path(tmp) / "home"
                work.mkdir()
                for when in ("fresh", "again"):
                    figures[v.name].setdefault(f"headless_open_{when}", []).append(headless_open(v, home, work))
    return {name: {k: summary(vals) for k, vals in f.items()} for name, f in figures.items()}


def compile_tree(tree: Path) -> None:
    """Write the tree's bytecode before it is measured. Python writes it on a module's first
    import, unless ``PYTHONDONTWRITEBYTECODE`` is set (it is on some machines, this one
    included): then a fresh worktree, or any module edited since its last compile, is compiled
    again on every launch, which is not what an installed deferchat does, and would weigh on one
    tree and not the other."""
    subprocess.run([PYTHON, "-m", "compileall", "-q", "-j", "0", "core", "tui"], cwd=tree, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--baseline", default="2e360ad", help="the earlier commit (empty: none)")
    parser.add_argument("--process", action="store_true", help="also this tree with the demo servers as processes")
    args = parser.parse_args()
    assert shutil.which("tmux"), "tmux is needed (apt-get install tmux)"
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stopped: the worktree and tmux still go
    variants = [Variant("now", REPO)]
    if args.process:
        variants.append(Variant("now_process_servers", REPO, {"DEFERCHAT_DEMO_SERVERS": "process"}))
    worktree: Path | None = None
    try:
        if args.baseline:
            worktree = Path(tempfile.mkdtemp(prefix="bench-startup-base-")) / "tree"
            subprocess.run(
                ["git", "-C", str(REPO), "worktree", "add", "--detach", str(worktree), args.baseline],
                check=True,
                capture_output=True,
            )
            variants.append(Variant(f"before ({args.baseline})", worktree))
        for v in variants:  # every tree runs from bytecode, as an installed deferchat does
            compile_tree(v.tree)
        out = {
            "machine": {"cpus": os.cpu_count(), "load_1m": round(os.getloadavg()[0], 2)},
            "rounds": args.rounds,
            "targets_s": {"tui_first_paint": 0.5, "tui_roster": 1.0},
            "figures": measure(variants, args.rounds),
            "load_1m_after": round(os.getloadavg()[0], 2),
        }
    finally:
        if worktree is not None:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(worktree)], check=False)
            shutil.rmtree(worktree.parent, ignore_errors=True)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
