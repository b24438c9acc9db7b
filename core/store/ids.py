"""Row ids and timestamps as the store writes them."""

from __future__ import annotations

import time
import uuid


def now() -> float:
    """Seconds since the epoch, to the microsecond."""
    return round(time.time(), 6)


def new_id(prefix: str) -> str:
    """``prefix_`` and 16 random hex digits (``chat_…``, ``turn_…``, ``msg_…``)."""
    return f"{prefix}_{uuid.uuid4().hex[:16]}"
