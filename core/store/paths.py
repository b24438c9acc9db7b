"""Where the database lives, and whether this process may use it there. Cheap to import: no SQLite
(the settings, the demo and the app's start ask for the data folder)."""

from __future__ import annotations

import os
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


def check_path(p: Path) -> bool:
    """Whether this process may write the database at ``p``; raises a one-line
    :class:`~core.store.errors.StoreUnusable` when it cannot even read it. Makes the folder.
    Before SQLite sees the file, and without it: the full-screen app checks this before it takes
    the screen, and opens the file itself after its first frame."""
    if p.is_dir():
        raise StoreUnusable(p, f"{p} is a directory, not a database: move it out of the way, {ELSEWHERE}")
    try:
        p.parent.mkdir(parents=True, exist_ok=True)  # several processes may make it at once
    except OSError as exc:
        raise StoreUnusable(
            p, f"cannot create the folder {p.parent} ({exc.strerror}): make it yourself, {ELSEWHERE}"
        ) from None
    if not p.parent.is_dir():
        raise StoreUnusable(p, f"{p.parent} is not a folder: move it out of the way, {ELSEWHERE}")
    exists = p.exists()
    if exists and not os.access(p, os.R_OK):
        raise StoreUnusable(
            p, f"cannot read {p} (permission denied): give yourself read and write access (chmod u+rw), {ELSEWHERE}"
        )
    folder_writable = os.access(p.parent, os.W_OK | os.X_OK)
    if not exists:
        if not folder_writable:
            raise StoreUnusable(p, f"cannot create {p}: the folder is read-only; make it writable, {ELSEWHERE}")
        return True
    sidecars = [Path(f"{p}{s}") for s in ("-wal", "-shm")]
    return folder_writable and os.access(p, os.W_OK) and all(os.access(s, os.W_OK) for s in sidecars if s.exists())
