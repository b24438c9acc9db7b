"""The one way the headless commands write to the terminal.

Everything ``deferchat``'s subcommands show goes through this module: :func:`out` (stdout) and
:func:`err` (stderr) pass the whole text through :func:`core.display.safe` (newlines and tabs
kept), so a model's OSC 52 clipboard write, an OSC 8 link, a BEL or a tool result's bidi
controls are shown as visible escapes wherever they come from: a transcript, ``chats show``,
a table, an error line. :func:`data` writes JSON (``--json``): data stays exact, and every
character ``safe`` would change is written as its JSON ``\\u`` escape, so the document parses
to the same value and a terminal showing it obeys nothing. :func:`ask` asks on the terminal.

stdout is treated as a terminal whatever it is connected to: ``deferchat chats export ID --md``
to stdout is sanitised like ``chats show`` (a pipe often ends at a terminal: ``| less -R``,
``| cat``), while ``--output FILE`` writes the Markdown exactly as it was written (a file is
not a terminal). Nothing else in ``core/cli/`` or ``tui/`` writes to stdout or stderr:
``tests/unit/test_terminal_output.py`` reads every module with ``ast`` to hold that.
"""

from __future__ import annotations

import functools
import os
import re
import sys

from core.display import safe


def out(text: str = "", *, end: str = "\n", flush: bool = False) -> None:
    """``text`` on stdout, display-safe (newlines and tabs kept)."""
    sys.stdout.write(safe(text, multiline=True) + end)
    if flush:
        sys.stdout.flush()


def err(text: str = "", *, end: str = "\n") -> None:
    """``text`` on stderr, display-safe (newlines and tabs kept)."""
    sys.stderr.write(safe(text, multiline=True) + end)
    sys.stderr.flush()


def data(json_text: str) -> None:
    """One JSON document and a newline on stdout, as :func:`terminal_json` writes it."""
    sys.stdout.write(terminal_json(json_text) + "\n")
    sys.stdout.flush()


def ask(prompt: str) -> str:
    """A line typed at the terminal, after ``prompt`` (display-safe)."""
    return input(safe(prompt, multiline=True))


def ask_on_stderr(prompt: str) -> str:
    """A line typed at the terminal, after ``prompt`` on stderr (display-safe), so stdout stays
    the transcript or the JSON events; EOFError when stdin has ended."""
    err(prompt, end="")
    line = sys.stdin.readline()
    if not line:
        raise EOFError
    return line.rstrip("\n")


_ASCII_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


@functools.lru_cache(maxsize=4096)
def _unsafe(ch: str) -> bool:
    return safe(ch, multiline=True) != ch


def _json_escape(ch: str) -> str:
    code = ord(ch)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def terminal_json(text: str) -> str:
    """A JSON text with every character :func:`core.display.safe` would change written as its
    ``\\u`` escape: the same JSON value, nothing a terminal obeys. (Outside strings a JSON text
    holds only its punctuation and formatting white space, which ``safe`` keeps.)"""
    if text.isascii() and not _ASCII_CONTROL.search(text):
        return text  # the common case: json.dumps escapes every other ASCII control already
    return "".join(_json_escape(ch) if _unsafe(ch) else ch for ch in text)


def flush() -> None:
    sys.stdout.flush()


def stdout_gone() -> None:
    """The reader of stdout has left: point stdout at the null device, so that no later write
    and no flush at exit fails again (Python's documented recipe for SIGPIPE)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout has no descriptor (a test's capture): nothing to flush
        pass


def streams_gone(exc: OSError) -> None:
    """A write failed: a reader that left stdout (a broken pipe) points stdout at the null
    device; a terminal that is gone (EIO, ENXIO: the window closed, SIGHUP follows) both streams.
    Anything else is raised again."""
    import errno

    if isinstance(exc, BrokenPipeError):
        stdout_gone()
        return
    if exc.errno not in (errno.EIO, errno.ENXIO):
        raise exc
    for stream in (sys.stdout, sys.stderr):
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, stream.fileno())
            os.close(devnull)
        except (OSError, ValueError):
            pass


def stdout_is_gone() -> bool:
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
