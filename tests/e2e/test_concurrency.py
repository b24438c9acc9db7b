"""Many deferchat processes on one store at the same moment, as real processes: a fresh home,
and one turn per chat at a time.

Fresh home (issue 11, item 2, last point, and the intro's "fresh-home race"): 20 ``chats list``
and 10 ``ask`` open an empty home together. Each process imports everything first and then
waits for one "go" file, so they all open the database within a few milliseconds. Before the
fix, some crashed in the first migration with ``database is locked`` and an ``ask`` lost its
message."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers import ROOT, slow_write_chat, subprocess_env
from tests.streaming_server import serve

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
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _AT_ONCE, str(go), *argv],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for argv in commands
    ]
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

    listed = subprocess.run(
        [sys.executable, "-m", "tui.main", "chats", "list", "--json"],
        cwd=ROOT,
        env=subprocess_env(home),
        capture_output=True,
        text=True,
        check=True,
    )
    chats = [json.loads(x) for x in listed.stdout.splitlines()]
    assert sorted(c["title"] for c in chats) == sorted(f"hello number {i}" for i in range(10))
    from core.store import Store

    store = Store(home / "deferchat.db")
    for chat in chats:  # no message lost: each chat has its question and the model's answer
        roles = [(m.role, m.blocks[0].get("text", "") if m.blocks else "") for m in store.messages(chat["id"])]
        assert [r for r, _ in roles] == ["user", "assistant"] and roles[0][1] == chat["title"]
        assert chat["status"] == "idle"
    applied = store.db.execute(
        "select migration_set, name, count(*) from _sqlite_migrations group by migration_set, name having count(*) > 1"
    ).fetchall()
    assert applied == []  # every migration ran exactly once


# --- one turn per chat at a time (issue 11, item 2) ---------------------------------------------------

QUICK = {"parts": [{"text": "A quick answer."}]}


def slow(text: str, seconds: float) -> dict[str, object]:
    """An answer streamed over about ``seconds``: the turn holds its lease that long."""
    pieces = 20
    return {
        "parts": [{"text": " ".join([text] * pieces), "chunk_chars": len(text) + 1}],
        "chunk_delay": seconds / pieces,
    }


def run_cli(home: Path, *argv: str, timeout: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui.main", *argv],
        cwd=ROOT,
        env=subprocess_env(home, **env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def popen_cli(home: Path, *argv: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tui.main", *argv],
        cwd=ROOT,
        env=subprocess_env(home, **env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def wait_until(condition: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def busy_line(err: str) -> None:
    """One line says the chat is busy (a refusal after the chat opened follows its transcript)."""
    said = [x for x in err.splitlines() if x.startswith("deferchat: ")]
    assert len(said) == 1 and "is busy" in said[0] and "--wait" in said[0] and "Traceback" not in err, err


def texts(home: Path, chat_id: str) -> list[tuple[str, str]]:
    from core.store import Store

    return [
        (m.role, " ".join(str(b.get("text", b.get("type"))) for b in m.blocks))
        for m in Store(home / "deferchat.db").messages(chat_id)
    ]


@pytest.fixture
def model_args(tmp_path: Path) -> list[str]:
    roster = tmp_path / "tiny.json"
    roster.write_text(json.dumps({"agent": {"name": "tiny", "version": "1"}}))
    return ["--roster", str(roster), "--provider", "openai-chat", "--model", "m"]


def test_two_asks_on_one_chat_at_once_one_runs_the_other_is_busy_or_waits(
    tmp_path: Path, model_args: list[str]
) -> None:
    home = tmp_path / "home"
    # "third" streams for 10 s: long enough that the waiter, a process starting on a busy machine
    # (the suite runs in three workers on two cores), still finds its turn running
    script = [QUICK, slow("second", 4), slow("third", 10), {"parts": [{"text": "The fourth answer."}]}]
    with serve(script, timeout=300) as server:
        base = ["--base-url", server.url_for("openai-chat")]
        first = run_cli(home, "ask", "first", *model_args, *base)
        assert first.returncode == 0, first.stderr
        chat_id = json.loads(run_cli(home, "chats", "list", "--json").stdout.splitlines()[0])["id"]

        # two at the same moment: exactly one turn, one request to the model
        together = start_together(
            home, tmp_path / "go", [["ask", word, "--chat", chat_id, *base] for word in ("second", "second too")]
        )
        codes = sorted(r.returncode for r in together)
        assert codes == [0, 4], [(r.returncode, r.stderr) for r in together]
        busy_line(next(r for r in together if r.returncode == 4).stderr)
        assert len(server.requests) == 2

        # with --wait the second one waits for the first turn, then runs its own
        holder = popen_cli(home, "ask", "third", "--chat", chat_id, *base)
        wait_until(lambda: len(server.requests) == 3)
        waiter = run_cli(home, "ask", "fourth", "--chat", chat_id, "--wait", *base)
        _, held_err = holder.communicate(timeout=60)
        assert holder.returncode == 0, held_err
        assert waiter.returncode == 0 and "waiting for it to end" in waiter.stderr, waiter.stderr
        assert len(server.requests) == 4
    sent = [r["body"]["messages"][-1]["content"] for r in server.requests]
    winner = next(r.args[1] for r in together if r.returncode == 0)
    assert [str(s) for s in sent] == ["first", winner, "third", "fourth"]  # one request per turn
    history = texts(home, chat_id)
    assert [role for role, _ in history] == ["user", "assistant"] * 4  # never two answers in a row
    assert [t for role, t in history if role == "user"] == ["first", winner, "third", "fourth"]
    assert "The fourth answer." in history[-1][1]


def test_two_resumes_of_one_parked_write_run_it_once(tmp_path: Path) -> None:
    home = tmp_path / "home"
    written, release = slow_write_chat(tmp_path, agent="w", answer="Written.")
    parked = run_cli(
        home,
        "ask",
        "write once",
        "--roster",
        str(tmp_path / "roster.json"),
        "--mcp-config",
        str(tmp_path / "mcp.json"),
        "--script",
        str(tmp_path / "script.json"),
        "--approve",
        "park",
        "--json",
    )
    assert parked.returncode == 3, parked.stderr
    chat_id = json.loads(parked.stdout.splitlines()[-1])["chat_id"]

    env = subprocess_env(home)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _AT_ONCE, str(tmp_path / "go"), "resume", chat_id, "--approve", "yes", "--json"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    time.sleep(1.5)
    (tmp_path / "go").touch()
    try:
        wait_until(lambda: any(p.poll() is not None for p in procs))  # the refused one, at once
        release.touch()  # now let the write answer
        results = [(p.returncode if p.poll() is not None else p.wait(60), *p.communicate(timeout=60)) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    codes = sorted(code for code, _, _ in results)
    assert codes == [0, 4], results
    _, out, _ = next(r for r in results if r[0] == 0)
    busy_line(next(err for code, _, err in results if code == 4))
    events = [json.loads(x) for x in out.splitlines()]
    assert [e["type"] for e in events if e["type"].startswith("tool.")].count("tool.completed") == 1
    assert not any(e.get("code") == "tool.outcome_unknown" for e in events)
    assert written.read_text() == "once\n"  # exactly once
    from core.store import Store

    store = Store(home / "deferchat.db")
    results_for_call = [
        b
        for m in store.messages(chat_id)
        for b in m.blocks
        if b.get("type") == "tool_result" and b.get("tool_use_id") == "toolu_w1"
    ]
    assert len(results_for_call) == 1 and [i.status for i in store.invocations(chat_id)] == ["completed"]
    assert store.open_turn(chat_id) is None and store.lease_of(chat_id) is None


@pytest.mark.parametrize("gone", ["this machine", "another machine"])
def test_a_killed_lease_holder_frees_the_chat(gone: str, tmp_path: Path, model_args: list[str]) -> None:
    """kill -9 of the process whose turn holds the lease: on this machine the dead process is seen
    at once; a holder on another machine (its owner rewritten so) frees it when the lease expires
    (DEFERCHAT_LEASE_SECONDS=2 here); then the interrupted turn resumes as before."""
    home = tmp_path / "home"
    script = [{"parts": [{"text": "never finished"}], "first_byte_delay": "forever"}, {"parts": [{"text": "Resumed."}]}]
    with serve(script, timeout=300) as server:
        base = ["--base-url", server.url_for("openai-chat")]
        holder = popen_cli(home, "ask", "hello", *model_args, *base, DEFERCHAT_LEASE_SECONDS="2")
        try:
            wait_until(lambda: len(server.requests) == 1)
        finally:
            os.killpg(holder.pid, signal.SIGKILL)
            holder.communicate(timeout=30)
        from core.store import Store

        store = Store(home / "deferchat.db")
        [chat] = store.chats()
        lease = store.lease_of(chat.id)
        assert lease is not None and lease.owner.split("/")[2] == str(holder.pid)
        if gone == "another machine":
            conn = sqlite3.connect(home / "deferchat.db")
            # its last heartbeat just now: the 2 s lease would otherwise run out while a busy machine
            # starts the next process, and nothing would be left to refuse
            expires = time.time() + 6
            conn.execute(
                "update turn_leases set owner = 'elsewhere/1/' || ? || '/0000', expires_at = ? where chat_id = ?",
                [holder.pid, expires, chat.id],
            )
            conn.commit()
            conn.close()
            refused = run_cli(home, "resume", chat.id)
            assert refused.returncode == 4
            busy_line(refused.stderr)
            time.sleep(max(0.0, expires - time.time()) + 0.2)
        resumed = run_cli(home, "resume", chat.id)
        assert resumed.returncode == 0, resumed.stderr
        assert len(server.requests) == 2
    assert [role for role, _ in texts(home, chat.id)] == ["user", "assistant"]
    assert "Resumed." in texts(home, chat.id)[-1][1] and Store(home / "deferchat.db").lease_of(chat.id) is None
