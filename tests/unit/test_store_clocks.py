"""The store under clock jumps (issue 23, item 8).

When the wall clock went back between turns, the next request carried the history out of order:
messages were read sorted by ``created_at``. Now every ordered read uses the row's ``seq``
(migration ``0010_order_seq``), and a turn lease of this boot expires on the boot clock, which
setting the wall clock does not move. The clocks are moved through the store's seams
(``core.store.ids.CLOCK`` and ``BOOT_CLOCK``), no faketime needed.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import core.store.ids as ids
from core.store import Store
from core.store.errors import ChatBusy

T0 = 1_800_000_000.0


class Clock:
    """A wall clock a test sets; the store reads it through ``core.store.ids.CLOCK``."""

    def __init__(self, t: float = T0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(ids, "CLOCK", c)
    return c


async def test_a_clock_that_goes_back_between_turns_keeps_the_history_in_order(
    home: Path, tmp_path: Path, clock: Clock
) -> None:
    """The reported case, end to end: three turns, the clock an hour back before each of the
    last two; the third request carries the five messages in the order they were written."""
    from core.engine import ChatOptions, Engine
    from core.pipeline.approvals import Decision, FixedApprover

    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [[{"type": "text", "text": f"answer {i}"}] for i in (1, 2, 3)]}))
    record = tmp_path / "requests.jsonl"
    store = Store(tmp_path / "db.sqlite")
    session = await Engine(store).open_chat(
        None,
        ChatOptions(roster="production", script=str(script), start_demo_servers=False),
        approver=FixedApprover(Decision.DENY),
        record=str(record),
    )
    try:
        for i in (1, 2, 3):
            result = await session.send(f"question {i}")
            assert result.status == "done"
            clock.t -= 3600  # an NTP step, a restored VM: the clock goes back
    finally:
        await session.close()
    last = json.loads(record.read_text().splitlines()[-1])
    texts = [b["text"] for m in last["messages"] for b in m["content"] if b.get("type") == "text"]
    assert texts == ["question 1", "answer 1", "question 2", "answer 2", "question 3"]
    shown = [b["text"] for m in store.messages(session.chat_id) for b in m.blocks]
    assert shown == ["question 1", "answer 1", "question 2", "answer 2", "question 3", "answer 3"]


STEPS = st.lists(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False), min_size=2, max_size=12)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(jumps=STEPS)
def test_every_ordered_read_follows_the_order_of_writing_whatever_the_clock_does(
    clock: Clock, jumps: list[float]
) -> None:
    store = Store(":memory:")
    chat = store.create_chat(title="t", provider="script", model="m", strategy="wrapper")
    other = store.create_chat(title="o", provider="script", model="m", strategy="wrapper")
    written: list[str] = []
    invocations: list[str] = []
    approvals: list[str] = []
    turns: list[str] = []
    parent = None
    for i, jump in enumerate(jumps):
        clock.t = T0 + jump  # anywhere: back, forward, the same instant again
        parent = store.add_message(chat, "user", [{"type": "text", "text": str(i)}], turn_id=None, parent_id=parent)
        written.append(parent)
        store.add_message(other, "user", [{"type": "text", "text": "x"}], turn_id=None, parent_id=None)
        turn = store.start_turn(chat, parent)
        turns.append(turn)
        store.end_turn(turn, chat, "parked" if i == len(jumps) - 1 else "done")
        invocations.append(store.create_invocation(chat_id=chat, turn_id=turn, call_id=f"c{i}", name="x"))
        approvals.append(store.create_approval(chat_id=chat, turn_id=turn, call_id="same", tool="x"))
    assert [m.id for m in store.messages(chat)] == written
    assert store.last_message_id(chat) == written[-1]
    assert [r.id for r in store.invocations(chat)] == invocations
    assert [a.id for a in store.pending_approvals(chat)] == approvals
    latest = store.approval_for_call(chat, "same")
    assert latest is not None and latest.id == approvals[-1]
    open_turn = store.open_turn(chat)
    assert open_turn is not None and open_turn.id == turns[-1]
    assert [m.seq for m in store.messages(chat)] == list(range(1, len(jumps) + 1))


def test_rows_from_before_are_numbered_in_the_order_they_were_read(tmp_path: Path) -> None:
    """Migrating a database of the release before: its rows keep the order reads gave them."""
    from sqlite_utils import Database

    from core.store.migrations import SCHEMA

    path = tmp_path / "old.sqlite"
    db = Database(path)
    SCHEMA.apply(db, stop_before="0010_order_seq")
    db.execute("insert into chats (id, created_at) values ('c', 1)")
    for i, t in enumerate([5.0, 3.0, 3.0, 9.0]):
        db.execute(
            "insert into messages (id, chat_id, role, content, created_at) values (?, 'c', 'user', ?, ?)",
            [f"m{i}", json.dumps([{"type": "text", "text": str(i)}]), t],
        )
    db.conn.commit()
    db.close()
    store = Store(path)
    assert [m.id for m in store.messages("c")] == ["m1", "m2", "m0", "m3"]  # time, then rowid, as before
    store.add_message("c", "user", [{"type": "text", "text": "new"}], turn_id=None, parent_id="m3")
    assert [m.seq for m in store.messages("c")] == [1, 2, 3, 4, 5]


def test_a_database_this_process_only_reads_is_read_in_its_old_order(tmp_path: Path) -> None:
    """A read-only home from the release before is never migrated: it is read as it was (here
    the file is opened as a read-only open leaves it: the schema as found)."""
    from sqlite_utils import Database

    from core.store.migrations import SCHEMA

    path = tmp_path / "old.sqlite"
    db = Database(path)
    SCHEMA.apply(db, stop_before="0010_order_seq")
    db.execute("insert into chats (id, created_at) values ('c', 1)")
    for i, t in enumerate([2.0, 1.0]):
        db.execute(
            "insert into messages (id, chat_id, role, content, created_at) values (?, 'c', 'user', '[]', ?)",
            [f"m{i}", t],
        )
    db.conn.commit()
    store = Store(Database(path))  # not migrated
    assert [m.id for m in store.messages("c")] == ["m1", "m0"]
    assert store.last_message_id("c") == "m0"


# --- the lease: the wall clock does not decide for a holder of this boot --------------------------------


class BootClock(Clock):
    pass


@pytest.fixture
def boot(monkeypatch: pytest.MonkeyPatch) -> BootClock:
    c = BootClock(1000.0)
    monkeypatch.setattr(ids, "BOOT_CLOCK", c)
    return c


def _other_process_takes(store_path: Path, chat: str) -> ChatBusy | None:
    """Another holder (a fresh lease of its own) tries to take the chat's lease now."""
    from core.store.lease import TurnLease

    return TurnLease(Store(store_path), chat).try_acquire()


@pytest.mark.skipif(ids.boot_id() is None, reason="no boot id on this system: leases use the wall clock")
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(jump=st.floats(min_value=-1e7, max_value=1e7, allow_nan=False))
def test_a_wall_clock_jump_neither_frees_a_live_lease_nor_holds_a_dead_one(
    tmp_path: Path, clock: Clock, boot: BootClock, jump: float
) -> None:
    path = tmp_path / f"db-{abs(hash(jump))}.sqlite"
    store = Store(path)
    chat = store.create_chat(title="t", provider="demo", model="m", strategy="wrapper")

    async def scenario() -> None:
        lease = store.turn_lease(chat)
        assert lease.try_acquire() is None  # held; its renewer is not running in this test
        clock.t += jump  # the wall clock jumps anywhere
        boot.t += 1.0  # a second passes
        assert isinstance(_other_process_takes(path, chat), ChatBusy)  # still live
        assert store.busy(chat) is not None
        boot.t += lease.ttl + 1  # its holder stopped renewing: dead, whatever the wall clock says
        assert _other_process_takes(path, chat) is None

    asyncio.run(scenario())


def test_doctor_reports_a_lease_by_the_clock_that_decides(tmp_path: Path, clock: Clock, boot: BootClock) -> None:
    from core.store.health import inspect_store

    store = Store(tmp_path / "db.sqlite")
    chat = store.create_chat(title="t", provider="demo", model="m", strategy="wrapper")
    assert store.turn_lease(chat).try_acquire() is None
    clock.t -= 10_000  # the wall clock goes back: the lease does not live for hours more
    report = inspect_store(tmp_path / "db.sqlite")
    [lease] = report.turn_leases
    expected = 30.0 if ids.boot_id() is not None else 10_030.0
    assert lease.expires_in_s == pytest.approx(expected, abs=1)
