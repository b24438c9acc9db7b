"""Where the database lives, and whether this process may use it there. Cheap to import: no SQLite
(the settings, the demo and the app's start ask for the data folder)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from core.store.errors import ELSEWHERE, StoreUnusable

DB_NAME = "deferchat.db"


def data_dir() -> Path:
    """``$DEFERCHAT_HOME`` if set, else ``$XDG_DATA_HOME/deferchat`` (``~/.local/share/deferchat``)."""
    home = os.environ.get("DEFERCHAT_HOME")
    if home:
        return Path(home).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(xdg) / "deferchat"


def default_db_path() -> Path:
    return data_dir() / DB_NAME


def path_problem(p: Path) -> StoreUnusable | None:
    """Why no command may use the database at ``p`` at all, if one cannot: a directory in its
    place, a folder that is a file, a file it cannot read, something that is not a regular file
    (a pipe would hang the open, ``/dev/null`` would swallow every write), or one file under
    several names (a hard link). Looks only: nothing is made (``deferchat doctor`` asks the same)."""
    if p.is_dir():
        return StoreUnusable(p, f"{p} is a directory, not a database: move it out of the way, {ELSEWHERE}")
    if p.parent.exists() and not p.parent.is_dir():
        return StoreUnusable(p, f"{p.parent} is not a folder: move it out of the way, {ELSEWHERE}")
    if not p.exists():
        return None
    if not os.access(p, os.R_OK):
        return StoreUnusable(
            p, f"cannot read {p} (permission denied): give yourself read and write access (chmod u+rw), {ELSEWHERE}"
        )
    try:
        info = os.stat(p)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return StoreUnusable(
            p,
            f"{p} is not a regular file (a pipe, a socket or a device): a database must be a file; move it out "
            f"of the way, {ELSEWHERE}",
        )
    links = info.st_nlink
    if links > 1:
        # SQLite names the write-ahead log after the name it was opened by: two names, two logs
        # for one file, so each home misses the other's writes and the file can be damaged.
        return StoreUnusable(
            p,
            f"{p} is one file under {links} names (a hard link): two deferchat homes would each keep their own "
            f"write-ahead log of it, miss each other's writes and can damage it. Give it one name (remove the "
            f"other link, or replace this one with a copy), {ELSEWHERE}",
        )
    return None


def read_only_why(p: Path) -> str | None:
    """Why this process may only read the existing database at ``p`` (None: it may write it):
    the file, its folder, or its write-ahead log files (``-wal``, ``-shm``) are read-only."""
    if not os.access(p, os.W_OK):
        return "the file is read-only"
    if not os.access(p.parent, os.W_OK | os.X_OK):
        return f"its folder {p.parent} is read-only"
    sidecars = [Path(f"{p}{s}") for s in ("-wal", "-shm")]
    if not all(os.access(s, os.W_OK) for s in sidecars if s.exists()):
        return "its write-ahead log files are read-only"
    return None


def check_path(p: Path) -> bool:
    """Whether this process may write the database at ``p``; raises a one-line
    :class:`~core.store.errors.StoreUnusable` when it cannot use it at all (:func:`path_problem`).
    Makes the folder. Before SQLite sees the file, and without it: the full-screen app checks
    this before it takes the screen, and opens the file itself after its first frame."""
    problem = path_problem(p)
    if problem is not None:
        raise problem
    try:
        p.parent.mkdir(parents=True, exist_ok=True)  # several processes may make it at once
    except OSError as exc:
        raise StoreUnusable(
            p, f"cannot create the folder {p.parent} ({exc.strerror}): make it yourself, {ELSEWHERE}"
        ) from None
    if not p.parent.is_dir():
        raise StoreUnusable(p, f"{p.parent} is not a folder: move it out of the way, {ELSEWHERE}")
    if not p.exists():
        if not os.access(p.parent, os.W_OK | os.X_OK):
            raise StoreUnusable(p, f"cannot create {p}: the folder is read-only; make it writable, {ELSEWHERE}")
        return True
    return read_only_why(p) is None
