"""The ``deferchat`` program's exit codes, and how a turn's status and a failure map to them.

0 done, 1 failed, 2 usage (a bad flag or file), 3 parked on an approval, 130 interrupted.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Final

EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
EXIT_USAGE: Final = 2
EXIT_PARKED: Final = 3
EXIT_INTERRUPTED: Final = 130


def exit_for(status: str) -> int:
    """A turn's status as an exit code: done 0, parked 3, stopped (ctrl+c) 130, anything else 1."""
    return {"done": EXIT_OK, "parked": EXIT_PARKED, "stopped": EXIT_INTERRUPTED}.get(status, EXIT_FAILED)


def guarded(run: Callable[[], int]) -> int:
    """Run one command (or the full-screen app) and return its exit code; an expected failure
    (:class:`~core.errors.UserFacingError`) becomes a one-line message, not a traceback."""
    try:
        return int(run())
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `deferchat ... | head`: the reader left; leave quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except Exception as exc:
        from core.errors import UserFacingError

        if isinstance(exc, UserFacingError):
            print(f"deferchat: {exc}", file=sys.stderr)
            return EXIT_USAGE if exc.usage else EXIT_FAILED
        raise
