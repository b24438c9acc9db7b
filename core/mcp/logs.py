"""Log records of the MCP client and the SDK, with expanded ``${VAR}`` values put back.

The SDK and its HTTP client log urls, headers and requests at debug level; a url may hold a
token that came from ``${VAR}`` expansion. :data:`REDACTOR` is installed on every one of those
loggers and on the client's own (:data:`log`), and each :class:`core.mcp.client.McpManager`
registers its servers' secrets with it while it lives.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

from core.mcp.config import redact

log = logging.getLogger("core.mcp.client")  # one logger for the whole client, whichever module logs

SDK_LOGGERS = ("mcp", "httpx2", "httpcore2", "httpx", "httpcore")  # they log urls, headers, requests


class Redactor(logging.Filter):
    """Puts expanded ``${VAR}`` values back as ``${VAR}`` in log records, tracebacks included.

    Installed on the client's logger and on every logger of the MCP SDK and its HTTP client
    (their debug lines quote urls). Each manager registers its servers' secrets while it lives.
    """

    def __init__(self) -> None:
        super().__init__()
        self._secrets: dict[tuple[str, str], int] = {}

    def add(self, secrets: Iterable[tuple[str, str]]) -> None:
        for pair in secrets:
            self._secrets[pair] = self._secrets.get(pair, 0) + 1

    def remove(self, secrets: Iterable[tuple[str, str]]) -> None:
        for pair in secrets:
            left = self._secrets.get(pair, 0) - 1
            if left > 0:
                self._secrets[pair] = left
            else:
                self._secrets.pop(pair, None)

    def filter(self, record: logging.LogRecord) -> bool:
        if not self._secrets:
            return True
        pairs = sorted(self._secrets, key=lambda kv: (-len(kv[0]), kv[0]))
        text = record.getMessage()
        clean = redact(text, pairs)
        if clean != text:
            record.msg, record.args = clean, ()
        if record.exc_info and not record.exc_text:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info), pairs)
        elif record.exc_text:
            record.exc_text = redact(record.exc_text, pairs)
        return True


REDACTOR = Redactor()


def guard_loggers() -> None:
    """Every logger of the SDK that exists by now (they are made at import) gets the redactor."""
    names = [n for n in list(logging.root.manager.loggerDict) if n.split(".")[0] in SDK_LOGGERS]
    for name in [log.name, *names]:
        logger = logging.getLogger(name)
        if REDACTOR not in logger.filters:
            logger.addFilter(REDACTOR)
    quiet_loggers()


def quiet_loggers() -> None:
    """No record of the SDK or the client reaches the terminal by Python's last-resort handler
    (a traceback over the app's screen): each gets a NullHandler, as a library's loggers should.
    Records still propagate to whatever handler the process configured (and to tests)."""
    for name in (log.name, *SDK_LOGGERS):
        logger = logging.getLogger(name)
        if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
            logger.addHandler(logging.NullHandler())


# --- a server's stderr, bounded on disk -------------------------------------------------------------

STDERR_LOG_BYTES = 1024 * 1024
"""How much of a server's stderr one log file holds; with the one before it, at most twice this."""

TAIL_WINDOW = 16 * 1024  # bytes read from the end of the log to quote its last characters


class StderrLog:
    """A server's stderr log (``<name>.stderr.log``), bounded on disk.

    The server writes into a pipe; a thread of this process reads it and appends to the file,
    which rotates to ``<name>.stderr.log.1`` when it passes :data:`STDERR_LOG_BYTES` (the one
    before is dropped), so a server that floods its stderr costs at most twice that on disk and
    keeps its latest lines. :meth:`tail` quotes the end, read from the end with a bounded read,
    redacted before it is cut.
    """

    def __init__(self, path: Path, max_bytes: int | None = None):
        import threading

        self.path = path
        self.rotated = path.with_name(path.name + ".1")
        self.max_bytes = max_bytes or STDERR_LOG_BYTES
        self._lock = threading.Lock()
        self._file: BinaryIO | None = None
        self._size = 0
        self._write_end: int | None = None
        self._pumps = 0  # pipes still being copied (a restart starts a new one)
        self._drained = threading.Event()  # set while no pipe is being copied
        self._drained.set()

    # -- writing ----------------------------------------------------------------------------------

    def _open(self) -> BinaryIO:
        if self._file is None:
            self._file = open(self.path, "ab")  # noqa: SIM115  (held open while the server runs)
            self._size = self._file.tell()
            if self._size >= self.max_bytes:
                self._rotate()
        assert self._file is not None
        return self._file

    def _rotate(self) -> None:
        import os

        if self._file is not None:
            self._file.close()
        os.replace(self.path, self.rotated)
        self._file = open(self.path, "ab")  # noqa: SIM115
        self._size = 0

    def write(self, data: bytes) -> None:
        """Append ``data``; rotate past the bound. Never raises (a full disk loses log lines only)."""
        with self._lock:
            try:
                out = self._open()
                out.write(data)
                out.flush()
                self._size += len(data)
                if self._size >= self.max_bytes:
                    self._rotate()
            except OSError:
                pass

    def note(self, text: str) -> None:
        """A line of deferchat's own in the log (a dropped stdout line, say)."""
        self.write(f"[deferchat] {text}\n".encode("utf-8", "replace"))

    def open_pipe(self) -> BinaryIO:
        """The write end of a pipe for a server process's stderr; a thread copies what comes out
        of it into the log until every process holding it has exited."""
        import os
        import threading

        read_fd, write_fd = os.pipe()
        self._write_end = write_fd
        with self._lock:
            self._pumps += 1
            self._drained.clear()
        threading.Thread(target=self._pump, args=(read_fd,), name=f"stderr:{self.path.name}", daemon=True).start()
        return os.fdopen(os.dup(write_fd), "wb", buffering=0)

    def close_parent_end(self) -> None:
        """Close this process's copies of the write end (the child has its own)."""
        import os

        if self._write_end is not None:
            with contextlib.suppress(OSError):
                os.close(self._write_end)
            self._write_end = None

    def _pump(self, fd: int) -> None:
        import os

        try:
            while data := os.read(fd, 65536):
                self.write(data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                os.close(fd)
            with self._lock:
                self._pumps -= 1
                if self._pumps == 0 and self._file is not None:  # every writer is gone: let the file go
                    self._file.close()
                    self._file = None
                if self._pumps == 0:
                    self._drained.set()

    def drained(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for every pipe to be copied to its end (a server that
        exited may still have its last lines in the pipe); whether they were. Blocks: call it in
        a thread."""
        return self._drained.wait(timeout)

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    # -- reading ----------------------------------------------------------------------------------

    def _end_bytes(self, window: int) -> tuple[bytes, bool]:
        """The last ``window`` bytes of the log (the rotated file's end before the current one's),
        and whether they begin where the log began (nothing before them was cut off)."""
        parts: list[bytes] = []
        whole = not self.rotated.exists()
        for path in (self.path, self.rotated):
            need = window - sum(map(len, parts))
            if need <= 0:
                break
            try:
                with open(path, "rb") as f:
                    size = f.seek(0, 2)
                    f.seek(max(0, size - need))
                    data = f.read(need)
            except OSError:
                continue
            parts.insert(0, data)
            if size > len(data):
                whole = False
                break
        return b"".join(parts), whole

    def tail(self, chars: int, secrets: Iterable[tuple[str, str]] = ()) -> tuple[str, bool]:
        """The last ``chars`` characters of the log and whether anything came before them:
        redacted before they were cut (a secret the cut falls inside is not shown in part), read
        from the end with a bounded read, never the whole file."""
        from core.redaction import clip

        data, whole = self._end_bytes(max(TAIL_WINDOW, chars * 4))
        text = data.decode("utf-8", errors="replace").strip()
        shown = clip(text, chars, secrets, keep="tail", cut_start=not whole)
        return shown, not whole or len(shown) < len(text)
