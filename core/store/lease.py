"""One turn per chat at a time, across processes: the turn lease.

Before a turn runs (``send``, ``resume``, a re-run), the turn loop takes the chat's lease
(:meth:`core.store.Store.turn_lease`): in one ``BEGIN IMMEDIATE`` transaction it reads the
chat's row in ``turn_leases`` and writes its own unless another holder's lease is live. A
live lease of another holder refuses the turn at once (:class:`~core.store.errors.ChatBusy`,
exit 4), or, with ``wait``, the turn waits until the lease is free. While the turn runs, an
asyncio task renews the lease every third of its time to live; the turn releases it when it
ends, however it ends (done, parked, failed, an exception, a cancellation).

A lease is free when it has expired (its holder stopped renewing it: the process died, was
killed with ``kill -9``, or its machine went away), or when its holder is a process of this
machine and PID namespace that no longer exists, which is known at once. The time to live is
:data:`DEFAULT_TTL_S` (30 s); ``$DEFERCHAT_LEASE_SECONDS`` sets it (tests, slow machines).

A holder whose event loop stalls longer than the time to live loses its lease to the next
turn; it notices at its next renewal and logs it (it cannot undo what it already wrote).

Clocks: a lease records its expiry on the wall clock and, for a holder of this machine's current
boot, on the boot clock too (:func:`core.store.ids.boot_clock`, the same for every process of the
boot). Whether a lease of this boot is live is read on the boot clock, so setting the wall clock
forward does not free a live lease (two turns at once) and setting it back does not hold a dead
one; a holder elsewhere is judged on the wall clock, the only one two machines share.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import sqlite3
import uuid
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING

from core.store.database import immediate
from core.store.errors import ChatBusy, StoreError
from core.store.ids import boot_clock, boot_id, now
from core.store.rows import TurnLeaseRow

if TYPE_CHECKING:
    from core.store.store import Store

log = logging.getLogger("deferchat.store.lease")

DEFAULT_TTL_S = 30.0
TTL_ENV = "DEFERCHAT_LEASE_SECONDS"
WAIT_POLL_S = 0.25


def lease_ttl() -> float:
    """The lease's time to live in seconds: ``$DEFERCHAT_LEASE_SECONDS``, else 30."""
    try:
        value = float(os.environ.get(TTL_ENV, ""))
    except ValueError:
        return DEFAULT_TTL_S
    return value if value > 0 else DEFAULT_TTL_S


def _pid_namespace() -> str:
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return "-"


def new_owner() -> str:
    """``host/pid-namespace/pid/random``: unique per lease, and says which process holds it."""
    return f"{socket.gethostname()}/{_pid_namespace()}/{os.getpid()}/{uuid.uuid4().hex[:8]}"


def _parts(owner: str) -> list[str]:
    return [*owner.split("/"), "", "", "", ""][:4]


def describe(owner: str) -> str:
    """``pid 123 on host h`` for an owner string."""
    host, _, pid, _ = _parts(owner)
    return f"pid {pid} on {host}" if pid else owner


def holder_is_gone(owner: str) -> bool:
    """True only when the holder is a process of this machine and PID namespace that no longer
    exists (or is a zombie): then its lease is free now. Any doubt: False (wait for expiry)."""
    host, ns, pid_text, _ = _parts(owner)
    if host != socket.gethostname() or ns != _pid_namespace() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return False  # another turn of this very process
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # it exists (another user's process)
        return False
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rsplit(")", 1)[-1].split()[0] in ("Z", "X")  # killed, not yet reaped
    except (OSError, IndexError):
        return False


def remaining(lease: TurnLeaseRow) -> float:
    """Seconds until ``lease`` expires (<= 0: expired): on the boot clock for a holder of this
    machine (its host in the owner) and its current boot, else on the wall clock."""
    boot = boot_id()
    here = _parts(lease.owner)[0] == socket.gethostname()
    if here and boot is not None and lease.boot_id == boot and lease.expires_mono is not None:
        return lease.expires_mono - boot_clock()
    return lease.expires_at - now()


class TurnLease:
    """The chat's turn lease, as an async context manager (see the module's docstring)."""

    def __init__(
        self,
        store: Store,
        chat_id: str,
        *,
        wait: bool = False,
        on_wait: Callable[[ChatBusy], None] | None = None,
        ttl: float | None = None,
    ):
        self.store = store
        self.chat_id = chat_id
        self.wait = wait
        self.on_wait = on_wait
        self.ttl = ttl if ttl is not None else lease_ttl()
        self.owner = new_owner()
        self.lost = False
        self._beat: asyncio.Task[None] | None = None

    # -- taking and giving back --------------------------------------------------------------------
    def try_acquire(self) -> ChatBusy | None:
        """Take the lease now; the refusal if another holder's lease is live."""
        self.store.require_writable()
        db = self.store.db
        try:
            with immediate(db):
                row = db.execute("select * from turn_leases where chat_id = ?", [self.chat_id])
                names = [d[0] for d in row.description]
                found = row.fetchone()
                if found is not None:
                    held = TurnLeaseRow.from_values(names, found)
                    left = remaining(held)
                    if held.owner != self.owner and left > 0 and not holder_is_gone(held.owner):
                        return ChatBusy(self.chat_id, describe(held.owner), left)
                t, mono = now(), boot_clock()
                db.execute(
                    "insert or replace into turn_leases (chat_id, owner, acquired_at, heartbeat_at, "
                    "expires_at, boot_id, expires_mono) values (?, ?, ?, ?, ?, ?, ?)",
                    [self.chat_id, self.owner, t, t, t + self.ttl, boot_id(), mono + self.ttl],
                )
        except sqlite3.Error as exc:
            raise self.store.file.fault(exc) from None
        return None

    async def acquire(self) -> None:
        busy = self.try_acquire()
        told = False
        while busy is not None:
            if not self.wait:
                raise busy
            if not told and self.on_wait is not None:
                self.on_wait(busy)
                told = True
            await asyncio.sleep(min(WAIT_POLL_S, self.ttl / 4))
            busy = self.try_acquire()
        self._beat = asyncio.get_running_loop().create_task(self._renew_forever(), name=f"turn-lease {self.chat_id}")

    def release(self) -> None:
        """Give the lease back (only our own: a lease another holder took over stays)."""
        if self._beat is not None:
            self._beat.cancel()
            self._beat = None
        with contextlib.suppress(StoreError, sqlite3.Error):  # it expires anyway
            self.store.db.execute("delete from turn_leases where chat_id = ? and owner = ?", [self.chat_id, self.owner])

    # -- renewing ----------------------------------------------------------------------------------
    def renew(self) -> bool:
        """Push the expiry out by one time to live; False when the lease is no longer ours."""
        t, mono = now(), boot_clock()
        cur = self.store.db.execute(
            "update turn_leases set heartbeat_at = ?, expires_at = ?, boot_id = ?, expires_mono = ? "
            "where chat_id = ? and owner = ?",
            [t, t + self.ttl, boot_id(), mono + self.ttl, self.chat_id, self.owner],
        )
        return cur.rowcount == 1

    async def _renew_forever(self) -> None:
        interval = max(0.05, self.ttl / 3)
        while True:
            await asyncio.sleep(interval)
            try:
                if not self.renew():
                    self.lost = True
                    log.error(
                        "the turn lease of chat %s was taken over (this process stopped renewing it for over %.0f s)",
                        self.chat_id,
                        self.ttl,
                    )
                    return
            except (StoreError, sqlite3.Error) as exc:  # try again next time; it may expire meanwhile
                log.warning("renewing the turn lease of chat %s failed: %s", self.chat_id, exc)

    # -- async with ---------------------------------------------------------------------------------
    async def __aenter__(self) -> TurnLease:
        await self.acquire()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()
