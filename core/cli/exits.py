"""The ``deferchat`` program's exit codes, and how a turn's status and a failure map to them.

0 done, 1 failed, 2 usage (a bad flag or file), 3 parked on an approval, 4 busy (a turn of the
chat runs in another process: :class:`~core.store.errors.ChatBusy`), 130 interrupted (ctrl+c);
a turn stopped by SIGTERM or SIGHUP exits 143 or 129 (128 + the signal, :mod:`core.cli.interrupt`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import TracebackType
from typing import Final

from core.cli import output

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
        output.flush()  # here, not at exit: a reader that left is then seen below
        return code
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        if output.stdout_is_gone():
            output.stdout_gone()
            return EXIT_OK
        return _failure(*sys.exc_info())
    except Exception:
        return _failure(*sys.exc_info())


def _say(line: str) -> None:
    import contextlib

    from core.errors import one_line

    with contextlib.suppress(OSError, ValueError):  # stderr is gone too: the exit code says it
        output.err(f"deferchat: {one_line(line)}")


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
