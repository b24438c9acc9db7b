"""Many deferchat processes on one store at the same moment, as real processes.

Fresh home (issue 11, item 2, last point, and the intro's "fresh-home race"): 20 ``chats list``
and 10 ``ask`` open an empty home together. Each process imports everything first and then
waits for one "go" file, so they all open the database within a few milliseconds. Before the
fix, some crashed in the first migration with ``database is locked`` and an ``ask`` lost its
message."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers import ROOT, subprocess_env

# Import the whole program, wait for the go file, then run one command: the opens coincide.
_AT_ONCE = (
    "import os, sys, time\n"
    "from tui.main import main\n"
    "import core.cli.ask, core.cli.chats, core.engine, core.store.store\n"
    "go = sys.argv[1]\n"
    "while not os.path.exists(go):\n"
    "    time.sleep(0.002)\n"
    "sys.exit(main(sys.argv[2:]))\n"
)


def start_together(home: Path, go: Path, commands: list[list[str]]) -> list[subprocess.CompletedProcess[str]]:
    env = subprocess_env(home)
    procs = [subprocess.Popen([sys.executable, "-c", _AT_ONCE, str(go), *argv], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for argv in commands]
    time.sleep(1.5)  # let every process finish its imports
    go.touch()
    done = []
    for argv, proc in zip(commands, procs, strict=True):
        out, err = proc.communicate(timeout=180)
        done.append(subprocess.CompletedProcess(argv, proc.returncode, out, err))
    return done


def test_thirty_processes_open_a_fresh_home_at_once(tmp_path: Path) -> None:
    home = tmp_path / "home"  # not even the folder exists yet
    roster = tmp_path / "tiny.json"
    roster.write_text(json.dumps({"agent": {"name": "tiny", "version": "1"}}))
    asks = [["ask", f"hello number {i}", "--provider", "demo", "--roster", str(roster), "--json"] for i in range(10)]
    results = start_together(home, tmp_path / "go", [["chats", "list"]] * 20 + asks)
    failed = [(r.args, r.returncode, r.stderr.strip().splitlines()[-1:]) for r in results if r.returncode != 0]
    assert failed == []
    assert all("Traceback" not in r.stderr for r in results)

    listed = subprocess.run([sys.executable, "-m", "tui.main", "chats", "list", "--json"], cwd=ROOT,
                            env=subprocess_env(home), capture_output=True, text=True, check=True)
    chats = [json.loads(x) for x in listed.stdout.splitlines()]
    assert sorted(c["title"] for c in chats) == sorted(f"hello number {i}" for i in range(10))
    from core.store import Store

    store = Store(home / "deferchat.db")
    for chat in chats:  # no message lost: each chat has its question and the model's answer
        roles = [(m.role, m.blocks[0].get("text", "") if m.blocks else "") for m in store.messages(chat["id"])]
        assert [r for r, _ in roles] == ["user", "assistant"] and roles[0][1] == chat["title"]
        assert chat["status"] == "idle"
    applied = store.db.execute("select migration_set, name, count(*) from _sqlite_migrations "
                               "group by migration_set, name having count(*) > 1").fetchall()
    assert applied == []  # every migration ran exactly once
