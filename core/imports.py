"""Bulk imports with the cyclic garbage collector paused.

Importing a package makes objects that live as long as the process: modules, classes, functions,
pydantic's schemas and validators. CPython's cyclic collector runs every 700 new container
objects and walks them again and again while an import goes on, and frees nothing: about a
quarter of a headless ``deferchat ask``'s process time went there (issue 22). Around a bulk
import (the entry point's own, the command's engine, a provider SDK on its first request, the MCP
SDK when a server starts, Textual when the app starts) :func:`bulk_import` pauses collection, and
when the outermost one ends it moves everything alive to the collector's permanent generation
(``gc.freeze``), where later collections never walk it: a turn's collections then walk the turn's
own objects only. Garbage made during the import (a few cycles) is never freed; that is the trade.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_was_enabled = False  # whether collection was on when the outermost bulk import began


@contextmanager
def bulk_import() -> Iterator[None]:
    """Collection paused while the block imports; what is alive frozen after the outermost block
    (nested blocks, and blocks in other threads, share the outermost one's pause)."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                gc.freeze()
                if _was_enabled:
                    gc.enable()
