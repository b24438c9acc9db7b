"""The demo servers run as processes (``DEFERCHAT_DEMO_SERVERS=process``) open the demo database
together on a fresh home: each opening waits for the others (the busy timeout before anything
else), WAL is set once, and exactly one seeds. Proven with real processes that open the same new
file at the same moment, round after round (before the fix, some failed with "database is
locked" at ``PRAGMA journal_mode = WAL``)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core.demo import DEMO_SERVERS
from tests.helpers import ROOT, subprocess_env

ROUNDS = 10
STEP = 0.5  # seconds between rounds: room for the slowest opening and seed on a loaded machine


@pytest.mark.slow
def test_demo_servers_open_a_new_demo_database_at_the_same_moment(tmp_path: Path) -> None:
    # each demo server twice, and the chat's own process's opening, all at once
    who = [*DEMO_SERVERS, *DEMO_SERVERS, "dataset"]
    start = time.time() + 8.0  # past every process's imports and its first opening
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.demo.open_together", str(tmp_path), w, str(start), str(STEP), str(ROUNDS)],
            cwd=ROOT,
            env=subprocess_env(tmp_path / "home"),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for w in who
    ]
    outputs = [p.communicate(timeout=120)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), outputs
    failures = [line for out in outputs for line in out.splitlines() if not line.startswith("ok ")]
    assert failures == []
    assert all(out.splitlines() == [f"ok {n}" for n in range(ROUNDS)] for out in outputs), outputs
    for n in range(ROUNDS):
        with sqlite3.connect(tmp_path / f"round-{n}" / "demo.sqlite") as conn:
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            seeds = conn.execute("select key from meta where key like 'seeded:%' order by key").fetchall()
            assert len(seeds) == len({s for (s,) in seeds})  # each seed once
            assert conn.execute("select count(*) from gmail_messages").fetchone()[0] > 0
