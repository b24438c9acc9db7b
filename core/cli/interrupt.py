"""ctrl+c, ``kill`` and a closed terminal in the headless commands: SIGINT, SIGTERM and SIGHUP
stop the running turn instead of killing the process.

While :func:`stop_on_signals` is in force, each of these signals calls
:meth:`ChatSession.stop`: the provider's stream is closed, the partial answer and the owner's
message are kept, the turn ends ``stopped`` and the command exits ``128 + the signal's number``
(130 for SIGINT, :data:`core.cli.exits.EXIT_INTERRUPTED`; 143 for SIGTERM; 129 for SIGHUP), as
a shell reports a process ended by that signal. A signal when no turn runs ends the command as
the signal would, but through the command's own clean-up (its MCP servers are closed): SIGINT as
KeyboardInterrupt (exit 130), SIGTERM and SIGHUP with exit 143 and 129. A second signal while
the stop is under way ends the command the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol

STOP_SIGNALS: tuple[signal.Signals, ...] = tuple(
    s for s in (signal.SIGINT, getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s is not None
)


class Stoppable(Protocol):
    def stop(self) -> bool: ...


@dataclass
class Stopper:
    """Which signal stopped the turn, if one did."""

    signum: int | None = None

    def exit_for(self, status: str) -> int:
        """The command's exit code for a turn that ended ``status``: ``128 + signum`` when a
        signal stopped it, else :func:`core.cli.exits.exit_for`."""
        from core.cli.exits import exit_for

        if status == "stopped" and self.signum is not None:
            return 128 + self.signum
        return exit_for(status)


@contextlib.asynccontextmanager
async def stop_on_signals(session: Stoppable) -> AsyncIterator[Stopper]:
    loop = asyncio.get_running_loop()
    main = asyncio.current_task()
    stopper = Stopper()
    interrupted: int | None = None

    def on_signal(signum: int) -> None:
        nonlocal interrupted
        if stopper.signum is None and session.stop():
            stopper.signum = signum
            return
        interrupted = signum  # nothing to stop, or stopping already: end the command
        if main is not None:
            main.cancel()

    previous = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    installed: list[signal.Signals] = []
    for s in STOP_SIGNALS:
        try:
            loop.add_signal_handler(s, on_signal, int(s))
            installed.append(s)
        except (NotImplementedError, RuntimeError, ValueError):  # no signals here (not the main thread)
            break
    try:
        yield stopper
    except asyncio.CancelledError:
        if interrupted == signal.SIGINT:
            raise KeyboardInterrupt from None
        if interrupted is not None:
            raise SystemExit(128 + interrupted) from None
        raise
    finally:
        for s in installed:
            loop.remove_signal_handler(s)
            with contextlib.suppress(TypeError, ValueError):
                signal.signal(s, previous[s])  # asyncio.run's own handler, for what follows
