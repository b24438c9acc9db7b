"""SIGTERM and SIGHUP end the app the way a quit does.

``kill`` (SIGTERM) and a terminal that closes (SIGHUP) used to kill the app mid-answer: the
partial answer was lost and the turn left ``running``. While the app runs, each of them calls
:meth:`tui.app.DeferchatApp.stop_and_quit`, the one way out that stops the turn as Esc does (its
partial answer kept, the turn marked stopped) and closes the chat; the app then exits with
``128 +`` the signal's number (143, 129), as a shell reports a process ended by it. A second
signal while that runs exits at once (the chat's close leaves a turn that did not end open and
resumable, as a killed process would). SIGINT stays the app's own key (ctrl+c).

A SIGHUP because the terminal closed finds it gone: every write to it fails, and Textual's
output thread dies on the first failure, after which a full queue blocks the whole app (it hung
in its shutdown, the turn stopped but the process alive). So when the terminal is gone the app's
standard streams are pointed at the null device and a dead output thread's queue is drained and
replaced by one that never blocks, before the quit: what the app still writes goes nowhere, and
it exits. That has to happen even while the event loop itself is the one blocked, so the handler
is Python's own (``signal.signal``, run in the main thread between two bytecodes, a blocked queue
included); it hands the quit to the loop (``call_soon_threadsafe``).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import queue
import signal
import sys
from collections.abc import Coroutine
from typing import Any, Protocol

QUIT_SIGNALS: tuple[signal.Signals, ...] = tuple(
    s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s is not None
)


class QuitTarget(Protocol):
    """What the signals need of the app: its one way to stop and quit, and to exit at once."""

    def stop_and_quit(self) -> Coroutine[Any, Any, None]: ...

    def exit(self, result: Any = None, return_code: int = 0, message: Any = None) -> None: ...


class QuitSignals:
    """Installs the handlers while the app runs; :attr:`signum` is the signal that ended it."""

    def __init__(self, app: QuitTarget) -> None:
        self.app = app
        self.signum: int | None = None
        self._previous: dict[signal.Signals, Any] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._quitting: asyncio.Task[None] | None = None

    def install(self) -> None:
        self._loop = asyncio.get_running_loop()
        for s in QUIT_SIGNALS:
            try:
                self._previous[s] = signal.signal(s, self._handler)
            except (ValueError, OSError):  # not the main thread, or no such signal here
                break

    def remove(self) -> None:
        for s, previous in self._previous.items():
            with contextlib.suppress(ValueError, OSError, TypeError):
                signal.signal(s, previous)
        self._previous = {}

    def _handler(self, signum: int, frame: object) -> None:
        """Python's handler, in the main thread even when the loop is blocked: free a dead
        terminal's writes at once, then hand the quit to the loop."""
        if terminal_gone():
            detach(self.app)
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self.received, signum)

    def received(self, signum: int) -> None:
        """A quit signal, in the loop: stop the turn and quit (the first), or exit at once (a second)."""
        if self.signum is not None:
            self.app.exit(128 + signum)
            return
        self.signum = signum
        self._quitting = asyncio.ensure_future(self.app.stop_and_quit())

    def exit_code(self, result: Any) -> int:
        """The app's exit code: ``128 + signum`` when a signal ended it, else its own."""
        return 128 + self.signum if self.signum is not None else int(result or 0)


def terminal_gone() -> bool:
    """Whether the app's terminal has hung up (its window closed): a zero-byte write to it fails."""
    stream = sys.__stdout__
    if stream is None:
        return True
    try:
        os.write(stream.fileno(), b"")
    except OSError as exc:
        return exc.errno in (errno.EIO, errno.ENXIO, errno.EBADF, errno.EPIPE)
    except ValueError:  # stdout has no descriptor
        return False
    return False


def detach(app: object) -> None:
    """Point the standard streams at the null device, and let a dead output thread's queue take
    what the app still writes without blocking (see the module's docstring)."""
    try:
        devnull = os.open(os.devnull, os.O_RDWR)
    except OSError:
        return
    for stream in (sys.__stdin__, sys.__stdout__, sys.__stderr__):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            os.dup2(devnull, stream.fileno())  # type: ignore[union-attr]
    os.close(devnull)
    writer = getattr(getattr(app, "_driver", None), "_writer_thread", None)
    if writer is not None and not writer.is_alive() and isinstance(getattr(writer, "_queue", None), queue.Queue):
        full = writer._queue
        writer._queue = queue.Queue()  # nobody reads it any more: unbounded, so a write never blocks
        with contextlib.suppress(queue.Empty):
            while True:  # a write blocked on the full one goes on (it notifies its not_full)
                full.get_nowait()
