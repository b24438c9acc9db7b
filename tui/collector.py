"""Python's cyclic garbage collector, kept from pausing a streaming answer.

The app's heap is large (Textual, the provider SDKs, the tokenizer, a chat's widgets), and a
full collection walks all of it: measured while a 4,000-token answer streamed, a single one
stopped the event loop for 0.6 s (tests/bench/bench_streaming.py). So:

* once the app has started and its first chat is open, what startup built (modules, classes,
  the app itself) is frozen (``gc.freeze``): it lives as long as the process, and no
  collection walks it again;
* while a turn runs, automatic collection waits (``gc.disable``): a turn's garbage is bounded,
  and reference counting frees all but cycles at once;
* when the turn has ended and its events are shown, collection resumes, and the turn's
  objects are walked once, then.

Only a collector this object turned off is turned on again: a host that disabled it (a test,
a profiler) keeps it disabled. When the app ends, what it froze is unfrozen.
"""

from __future__ import annotations

import gc


class Collector:
    def __init__(self) -> None:
        self.frozen = False
        self.held = False

    def settle(self) -> None:
        """Freeze what exists now (once): the app is up and its first chat open."""
        if self.frozen:
            return
        gc.collect()
        gc.freeze()
        self.frozen = True

    def hold(self) -> None:
        """No automatic collection until :meth:`release` (a turn starts)."""
        if not self.held and gc.isenabled():
            gc.disable()
            self.held = True

    def release(self) -> None:
        """Automatic collection again (the turn has ended)."""
        if self.held:
            self.held = False
            gc.enable()

    def close(self) -> None:
        """The app ends: the collector as it was (what was frozen can be collected again, so an
        app run inside a longer process, a test's, leaves nothing behind for good)."""
        self.release()
        if self.frozen:
            self.frozen = False
            gc.unfreeze()
