"""The turn lease (issue 11, item 2): one turn per chat at a time, across processes. Here the
lease itself; ``tests/e2e/test_concurrency.py`` runs it with real processes."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core.store import Store
from core.store.errors import ChatBusy
from core.store.lease import TurnLease, describe, holder_is_gone, new_owner


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "db.sqlite")


@pytest.fixture
def chat(store: Store) -> str:
    return store.create_chat(title="t", provider="demo", model="m", strategy="wrapper")


def plant(store: Store, chat: str, owner: str, expires_in: float) -> None:
    """A lease as another holder left it."""
    t = time.time()
    store.db.execute(
        "insert or replace into turn_leases (chat_id, owner, acquired_at, heartbeat_at, expires_at) "
        "values (?, ?, ?, ?, ?)",
        [chat, owner, t, t, t + expires_in],
    )


ELSEWHERE = "another-host/4026531836/4242/cafe0001"  # a holder on another machine


async def test_a_held_lease_refuses_a_second_turn_and_is_given_back(store: Store, chat: str) -> None:
    async with store.turn_lease(chat) as lease:
        row = store.lease_of(chat)
        assert row is not None and row.owner == lease.owner and row.expires_at > time.time()
        with pytest.raises(ChatBusy) as refused:
            async with store.turn_lease(chat):  # another turn, even of this process
                pass
        assert refused.value.exit_code == 4 and f"pid {os.getpid()}" in str(refused.value)
        assert store.busy(chat) is not None
    assert store.lease_of(chat) is None and store.busy(chat) is None


async def test_the_lease_is_given_back_on_an_exception_and_on_cancellation(store: Store, chat: str) -> None:
    with pytest.raises(RuntimeError):
        async with store.turn_lease(chat):
            raise RuntimeError("the turn failed")
    assert store.lease_of(chat) is None

    entered = asyncio.Event()

    async def turn() -> None:
        async with store.turn_lease(chat):
            entered.set()
            await asyncio.sleep(60)

    task = asyncio.create_task(turn())
    await entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert store.lease_of(chat) is None


async def test_wait_takes_the_lease_when_the_holder_gives_it_back(store: Store, chat: str) -> None:
    told: list[ChatBusy] = []
    order: list[str] = []

    async def first() -> None:
        async with store.turn_lease(chat):
            order.append("first in")
            await asyncio.sleep(0.5)
            order.append("first out")

    async def second() -> None:
        await asyncio.sleep(0.05)
        async with store.turn_lease(chat, wait=True, on_wait=told.append):
            order.append("second in")

    await asyncio.gather(first(), second())
    assert order == ["first in", "first out", "second in"] and len(told) == 1


async def test_a_lease_is_renewed_while_the_turn_runs(store: Store, chat: str) -> None:
    lease = TurnLease(store, chat, ttl=0.3)
    async with lease:
        first = store.lease_of(chat)
        await asyncio.sleep(0.7)  # longer than its time to live: renewed meanwhile
        later = store.lease_of(chat)
        assert first is not None and later is not None and later.expires_at > first.expires_at
        assert later.expires_at > time.time() and store.busy(chat) is not None and not lease.lost


async def test_an_expired_lease_is_taken_over(store: Store, chat: str) -> None:
    plant(store, chat, ELSEWHERE, expires_in=0.4)
    busy = store.busy(chat)
    assert busy is not None and "pid 4242 on another-host" in str(busy)
    with pytest.raises(ChatBusy):
        async with store.turn_lease(chat):
            pass
    await asyncio.sleep(0.5)
    async with store.turn_lease(chat) as lease:
        row = store.lease_of(chat)
        assert row is not None and row.owner == lease.owner


async def test_a_holder_that_lost_its_lease_notices_and_leaves_the_new_one_alone(store: Store, chat: str) -> None:
    lease = TurnLease(store, chat, ttl=0.3)
    async with lease:
        plant(store, chat, ELSEWHERE, expires_in=30)  # as if it took over after we stalled
        await asyncio.sleep(0.35)
        assert lease.lost
    row = store.lease_of(chat)
    assert row is not None and row.owner == ELSEWHERE  # release deletes only its own lease


def test_a_dead_process_of_this_machine_holds_nothing(store: Store, chat: str) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    mine = new_owner()
    host, ns, _, _ = mine.split("/")
    dead = f"{host}/{ns}/{proc.pid}/dead0001"
    assert holder_is_gone(dead) and not holder_is_gone(mine)
    assert not holder_is_gone(ELSEWHERE) and not holder_is_gone(f"{host}/other-namespace/{proc.pid}/x")
    plant(store, chat, dead, expires_in=30)
    assert store.busy(chat) is None  # free at once: no need to wait for its expiry
    assert describe(dead) == f"pid {proc.pid} on {socket.gethostname()}"


def test_a_killed_process_not_yet_reaped_holds_nothing(store: Store) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        host, ns, _, _ = new_owner().split("/")
        owner = f"{host}/{ns}/{proc.pid}/zomb0001"
        assert not holder_is_gone(owner)
        proc.kill()
        deadline = time.monotonic() + 10
        while not holder_is_gone(owner) and time.monotonic() < deadline:  # a zombie until waited for
            time.sleep(0.02)
        assert holder_is_gone(owner)
    finally:
        proc.wait()


async def test_a_chat_whose_turn_runs_cannot_be_deleted(store: Store, chat: str) -> None:
    async with store.turn_lease(chat):
        with pytest.raises(ChatBusy):
            store.delete_chat(chat)
    store.delete_chat(chat)
    assert store.chat(chat) is None


async def test_the_ttl_comes_from_the_environment(store: Store, chat: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEFERCHAT_LEASE_SECONDS", "2.5")
    async with store.turn_lease(chat):
        row = store.lease_of(chat)
        assert row is not None and row.expires_at - row.acquired_at == pytest.approx(2.5)


def test_doctor_lists_the_turns_running_now(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from core.cli.entry import main

    store = Store()
    chat = store.create_chat(title="t", provider="demo", model="m", strategy="wrapper")
    plant(store, chat, ELSEWHERE, expires_in=20)
    assert main(["doctor", "--json"]) == 0
    [lease] = json.loads(capsys.readouterr().out)["turn_leases"]
    assert lease["chat_id"] == chat and lease["holder"] == "pid 4242 on another-host"
    assert 15 < lease["expires_in_s"] <= 20
