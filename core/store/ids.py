"""Row ids and the store's clocks.

:func:`now` is the wall clock every stored time comes from (``created_at``, a lease's expiry):
one seam, so a test can move it (``core.store.ids.CLOCK``). Nothing is *ordered* by it, since it
can go back (an NTP step, a restored VM): rows are read in their ``seq`` order. A lease of this
machine's current boot expires on :func:`boot_clock` instead, which no change of the wall clock
moves (:mod:`core.store.lease`).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from functools import cache

CLOCK: Callable[[], float] = time.time
"""The store's wall clock (seconds since the epoch); tests replace it to jump it."""


def _boottime() -> float:
    clock = getattr(time, "CLOCK_BOOTTIME", None)  # Linux: counts a suspend too
    return time.clock_gettime(clock) if clock is not None else time.monotonic()


BOOT_CLOCK: Callable[[], float] = _boottime
"""Seconds since this machine booted, the same for every process of the boot."""


def now() -> float:
    """Seconds since the epoch, to the microsecond (:data:`CLOCK`)."""
    return round(CLOCK(), 6)


def boot_clock() -> float:
    return BOOT_CLOCK()


@cache
def boot_id() -> str | None:
    """This boot of this machine (Linux's ``boot_id``), or None where it cannot be told: then a
    lease falls back to the wall clock."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            return f.read().strip() or None
    except OSError:
        return None


def new_id(prefix: str) -> str:
    """``prefix_`` and 16 random hex digits (``chat_…``, ``turn_…``, ``msg_…``)."""
    return f"{prefix}_{uuid.uuid4().hex[:16]}"
