"""ctrl+c in the headless commands: SIGINT stops the running turn instead of killing the process.

While :func:`stop_on_sigint` is in force, SIGINT calls :meth:`ChatSession.stop`: the provider's
stream is closed, the partial answer and the owner's message are kept, the turn ends
``stopped`` and the command exits 130 (:data:`core.cli.exits.EXIT_INTERRUPTED`). A SIGINT when
no turn runs interrupts as it always did (KeyboardInterrupt, exit 130).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator
from typing import Protocol


class Stoppable(Protocol):
    def stop(self) -> bool: ...


@contextlib.asynccontextmanager
async def stop_on_sigint(session: Stoppable) -> AsyncIterator[None]:
    loop = asyncio.get_running_loop()
    main = asyncio.current_task()
    interrupted = False

    def on_sigint() -> None:
        nonlocal interrupted
        if session.stop():
            return
        interrupted = True  # nothing to stop: interrupt the command, as SIGINT did before
        if main is not None:
            main.cancel()

    previous = signal.getsignal(signal.SIGINT)
    try:
        loop.add_signal_handler(signal.SIGINT, on_sigint)
        installed = True
    except (NotImplementedError, RuntimeError, ValueError):  # no signals here (not the main thread)
        installed = False
    try:
        yield
    except asyncio.CancelledError:
        if interrupted:
            raise KeyboardInterrupt from None
        raise
    finally:
        if installed:
            loop.remove_signal_handler(signal.SIGINT)
            with contextlib.suppress(TypeError, ValueError):
                signal.signal(signal.SIGINT, previous)  # asyncio.run's own handler, for what follows
