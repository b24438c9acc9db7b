"""The ``deferchat`` program's exit codes, and how a turn's status and a failure map to them.

0 done, 1 failed, 2 usage (a bad flag or file), 3 parked on an approval, 4 busy (a turn of the
chat runs in another process: :class:`~core.store.errors.ChatBusy`), 130 interrupted.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import TracebackType
from typing import Final

EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
EXIT_USAGE: Final = 2
EXIT_PARKED: Final = 3
EXIT_BUSY: Final = 4  # carried by the error itself (ChatBusy.exit_code)
EXIT_INTERRUPTED: Final = 130


def exit_for(status: str) -> int:
    """A turn's status as an exit code: done 0, parked 3, stopped (ctrl+c) 130, anything else 1."""
    return {"done": EXIT_OK, "parked": EXIT_PARKED, "stopped": EXIT_INTERRUPTED}.get(status, EXIT_FAILED)


def guarded(run: Callable[[], int]) -> int:
    """Run one command (or the full-screen app) and return its exit code. Nothing ends in a
    traceback:

    * an expected failure (:class:`~core.errors.UserFacingError`) is one line: exit 2 for a
      usage or configuration error, 1 for any other;
    * an environment fault (a file or device error, a database error) is one line, exit 1;
    * a reader that left stdout (``deferchat ... | head -1``) ends the program quietly, exit 0;
    * anything else is a bug: one line that says where its traceback was written, exit 1
      (``DEFERCHAT_DEBUG=1`` raises it instead).
    """
    try:
        code = int(run())
        sys.stdout.flush()  # here, not at exit: a reader that left is then seen below
        return code
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        if _stdout_is_gone():
            stdout_gone()
            return EXIT_OK
        return _failure(*sys.exc_info())
    except Exception:
        return _failure(*sys.exc_info())


def stdout_gone() -> None:
    """The reader of stdout has left: point stdout at the null device, so that no later write
    and no flush at exit fails again (Python's documented recipe for SIGPIPE)."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout has no descriptor (a test's capture): nothing to flush
        pass


def _stdout_is_gone() -> bool:
    """Whether the reader of stdout has left. Asked of the descriptor (a pipe or a socket whose
    other end is closed polls as an error or a hang-up): flushing again is no test, as the write
    that failed may have dropped what it held, and the flush then succeeds."""
    import select

    try:
        fd = sys.stdout.fileno()
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        if any(ev & (select.POLLERR | select.POLLHUP) for _, ev in poller.poll(0)):
            return True
    except (OSError, ValueError, AttributeError):  # no descriptor (a test's capture), or no poll here
        pass
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        return True
    except (OSError, ValueError):
        return False
    return False


def _say(line: str) -> None:
    import contextlib

    from core.errors import one_line

    with contextlib.suppress(OSError, ValueError):  # stderr is gone too: the exit code says it
        print(f"deferchat: {one_line(line)}", file=sys.stderr)


def _failure(kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> int:
    import os

    from core.errors import UserFacingError

    if isinstance(exc, UserFacingError):
        _say(str(exc))
        code = getattr(exc, "exit_code", None)  # an error with a code of its own: ChatBusy, 4
        return code if isinstance(code, int) else EXIT_USAGE if exc.usage else EXIT_FAILED
    if os.environ.get("DEFERCHAT_DEBUG"):
        raise exc if exc is not None else RuntimeError("no exception")
    if isinstance(exc, OSError):
        what = exc.strerror or str(exc) or type(exc).__name__
        _say(f"{what}: {exc.filename}" if exc.filename else what)
        return EXIT_FAILED
    if kind is not None and any(k.__module__ == "sqlite3" for k in kind.__mro__):
        _say(f"the database failed: {exc} (`deferchat doctor` checks it)")
        return EXIT_FAILED
    _say(f"internal error: {kind.__name__ if kind else 'error'}: {exc}{_saved(kind, exc, tb)}")
    return EXIT_FAILED


def _saved(kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> str:
    """Where the traceback of a bug was written (a file in the temporary directory), said as the
    end of its one line."""
    import tempfile
    import time
    import traceback

    try:
        fd, path = tempfile.mkstemp(prefix=f"deferchat-crash-{time.strftime('%Y%m%d-%H%M%S')}-", suffix=".txt")
        with open(fd, "w", encoding="utf-8") as f:
            f.write("".join(traceback.format_exception(kind, exc, tb)))
    except OSError:
        return ""
    return f" (the traceback is in {path}; please report it)"
